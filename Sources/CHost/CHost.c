// Most of the module is the inline functions in include/CHost.h; what needs feature macros that would change
// the system headers Swift's Glibc module was built with lives here.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "CHost.h"

int vlogger_open_pty(char *name, size_t size) {
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return -1;
    const char *slave = NULL;
    if (grantpt(master) != 0 || unlockpt(master) != 0 || (slave = ptsname(master)) == NULL || strlen(slave) + 1 > size) {
        close(master);
        return -1;
    }
    memcpy(name, slave, strlen(slave) + 1);
    return master;
}
