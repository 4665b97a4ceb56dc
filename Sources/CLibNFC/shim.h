#ifndef VLOGGER_CLIBNFC_SHIM_H
#define VLOGGER_CLIBNFC_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <nfc/nfc.h>
#endif
