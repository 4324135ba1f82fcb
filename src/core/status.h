/* Status codes and the per-thread error message: every fallible internal function
 * returns sdc_status and, on failure, leaves a message saying what and where. */
#ifndef SDC_CORE_STATUS_H
#define SDC_CORE_STATUS_H

#include "sdc.h"

#if defined(__GNUC__)
#define SDC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SDC_PRINTF(a, b)
#endif

/* Sets the thread's last error message and returns `code` so callers can write
 * `return sdc_fail(SDC_ERR_FORMAT, "%s: bad header", path);`. */
sdc_status sdc_fail(sdc_status code, const char *fmt, ...) SDC_PRINTF(2, 3);

/* Prepends context ("file.gguf: ") to the current message, keeping the code. */
sdc_status sdc_fail_prefix(sdc_status code, const char *fmt, ...) SDC_PRINTF(2, 3);

void sdc_clear_error(void);

#endif
