#ifndef VLOGGER_CSQLITE_SHIM_H
#define VLOGGER_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro Swift cannot import: bind copies of the data. */
static inline int vlogger_bind_text(sqlite3_stmt *s, int i, const char *text, int n) {
    return sqlite3_bind_text(s, i, text, n, SQLITE_TRANSIENT);
}
static inline int vlogger_bind_blob(sqlite3_stmt *s, int i, const void *data, int n) {
    return sqlite3_bind_blob(s, i, data, n, SQLITE_TRANSIENT);
}
#endif
