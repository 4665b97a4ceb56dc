/* Baseline for the ingest benchmark: the same rows into the same schema with sqlite3 prepared statements,
   committed in transactions of BATCH rows as vlogger's store writer commits them, opened with the same flags
   (read-write, create, no mutex; extended result codes; 5 s busy timeout), WAL and synchronous=FULL.
   Usage: ingest N BATCH PATH (PATH made by `store-bench schema`). Prints readings per second.
   Like vlogger, it starts from binary values made before the clock starts (UID as a 64-bit number, block
   bytes, decoded numbers) and formats the printed UID and the decoded-values JSON inside the timed loop. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void check(int rc, sqlite3 *db, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE) { fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db)); exit(2); }
}

typedef struct { long long time; unsigned long long uid; unsigned char data[8]; double temperature, humidity; } row;

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: ingest N BATCH PATH\n"); return 2; }
    long n = atol(argv[1]), batch = atol(argv[2]);
    if (batch < 1) batch = 1;
    row *rows = malloc(sizeof(row) * (size_t)n);
    for (long i = 0; i < n; i++) {
        int t = 2150 + (int)(i % 300);
        rows[i].time = 1763800000000LL + i;
        rows[i].uid = 0xE008000000000000ULL | (unsigned long long)(0x4200 + i % 64);
        unsigned char d[8] = { (unsigned char)t, (unsigned char)(t >> 8), 0xC2, 0x01, 0x42, 0x37, 0x00, (unsigned char)i };
        memcpy(rows[i].data, d, 8);
        rows[i].temperature = t / 100.0;
        rows[i].humidity = 45;
    }
    sqlite3 *db;
    check(sqlite3_open_v2(argv[3], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, 0), db, "open");
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, 5000);
    check(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", 0, 0, 0), db, "pragma");
    sqlite3_stmt *st;
    check(sqlite3_prepare_v2(db, "INSERT INTO readings(time, gateway, uid, block, count, data, security, decoded, reader, location, asset_id) VALUES(?,?,?,?,?,?,?,?,?,?,?)", -1, &st, 0), db, "prepare");
    const unsigned char sec = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    char uid[17], decoded[80];
    for (long i = 0; i < n; i++) {
        if (i % batch == 0) check(sqlite3_exec(db, "BEGIN IMMEDIATE", 0, 0, 0), db, "begin");
        snprintf(uid, sizeof uid, "%016llX", rows[i].uid);
        snprintf(decoded, sizeof decoded, "{\"temperature\":%.15g,\"humidity\":%.15g}", rows[i].temperature, rows[i].humidity);
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, rows[i].time);
        sqlite3_bind_text(st, 2, "gw-bench", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, uid, 16, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 4, 0xF8);
        sqlite3_bind_int(st, 5, 1);
        sqlite3_bind_blob(st, 6, rows[i].data, 8, SQLITE_TRANSIENT);
        sqlite3_bind_blob(st, 7, &sec, 1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 8, decoded, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 9, "dock-1", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 10, "dock-door-1", -1, SQLITE_STATIC);
        sqlite3_bind_null(st, 11);  /* asset_id: the benchmark's tags are not in a register */
        check(sqlite3_step(st), db, "insert");
        if (i % batch == batch - 1 || i == n - 1) check(sqlite3_exec(db, "COMMIT", 0, 0, 0), db, "commit");
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    printf("%.0f\n", (double)n / s);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(rows);
    return 0;
}
