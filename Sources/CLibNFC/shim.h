#ifndef VLOGGER_CLIBNFC_SHIM_H
#define VLOGGER_CLIBNFC_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <nfc/nfc.h>

/* nfc_connstring is a char[1024]; these helpers keep that array out of Swift. */

/* Lists up to `max` devices into `out` (max × NFC_BUFSIZE_CONNSTRING bytes, each NUL-terminated). */
static inline int vlogger_nfc_list_devices(nfc_context *context, char *out, size_t max) {
    return (int)nfc_list_devices(context, (nfc_connstring *)out, max);
}

/* Opens a device by connection string, or the first device when `connstring` is NULL. */
static inline nfc_device *vlogger_nfc_open(nfc_context *context, const char *connstring) {
    if (connstring == NULL) return nfc_open(context, NULL);
    nfc_connstring cs;
    strncpy(cs, connstring, sizeof cs - 1);
    cs[sizeof cs - 1] = '\0';
    return nfc_open(context, cs);
}

static inline size_t vlogger_nfc_connstring_size(void) { return NFC_BUFSIZE_CONNSTRING; }
#endif
