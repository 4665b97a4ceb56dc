// pcsc-lite (Debian libpcsclite-dev); pkg-config libpcsclite adds -I/usr/include/PCSC.
#include <winscard.h>
#include <wintypes.h>
#include <pcsclite.h>
