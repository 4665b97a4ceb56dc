// Small facts about the host and the build that Swift's Glibc module does not expose.
#include <stddef.h>
#include <sys/timex.h>

// What a build was made from: deploy/commit.sh writes vlogger_commit.h beside this file (not in git) with
//   #define VLOGGER_COMMIT "<sha>"
// before quickstart, install and the Debian package build. A header, not -Xcc -DVLOGGER_COMMIT=…: a flag on the
// command line changes every compile command, so each new commit would rebuild every dependency; the header
// rebuilds only what imports this module. (A C macro can carry a string into the Swift build, which SwiftPM's
// Swift settings cannot.)
#if __has_include("vlogger_commit.h")
#include "vlogger_commit.h"
#endif
#ifndef VLOGGER_COMMIT
#define VLOGGER_COMMIT "unknown"
#endif

static inline const char *vlogger_build_commit(void) { return VLOGGER_COMMIT; }

// The kernel's clock discipline state (adjtimex(2), read only: modes = 0): 1 synchronised, 0 not
// (STA_UNSYNC set or TIME_ERROR), -1 the call failed (errno says why).
static inline int vlogger_clock_synchronized(void) {
    struct timex t = {0};
    int state = ntp_adjtime(&t);
    if (state < 0) return -1;
    return (t.status & STA_UNSYNC) || state == TIME_ERROR ? 0 : 1;
}

// A new pseudo-terminal: returns the master's descriptor and writes the slave's path (e.g. /dev/pts/7) into
// `name`; -1 on failure (errno says why). posix_openpt, grantpt, unlockpt and ptsname are XSI, which Swift's
// Glibc module leaves out (CHost.c defines it with _GNU_SOURCE). The FEIG reader emulator and the serial
// tests use it.
int vlogger_open_pty(char *name, size_t size);

// ioctl(2) with a pointer argument: Swift cannot call the variadic ioctl. The PN5180 driver's spidev and GPIO
// character device requests use it.
#include <sys/ioctl.h>
static inline int vlogger_ioctl(int fd, unsigned long request, void *argument) {
    return ioctl(fd, request, argument);
}

// The kernel ABI the PN5180 driver lays out by hand (LinuxPN5180Pins), as this machine's kernel headers define it,
// for the tests to compare: writes `count` (at most 20) values into `out`, in the order of CHost.c.
void vlogger_kernel_abi(unsigned long *out, int count);
