// The module's code is the inline functions in include/CHost.h; SwiftPM needs one source file.
#include "CHost.h"
