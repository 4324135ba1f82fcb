#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SDC_ERR_MAX 8192

static _Thread_local char g_error[SDC_ERR_MAX];

sdc_status sdc_fail(sdc_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
    return code;
}

sdc_status sdc_fail_prefix(sdc_status code, const char *fmt, ...) {
    char prefix[SDC_ERR_MAX], old[SDC_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, g_error, sizeof old);
    size_t np = strlen(prefix), no = strlen(old);
    if (np + no >= SDC_ERR_MAX) no = SDC_ERR_MAX - 1 - np;
    memcpy(g_error, prefix, np);
    memcpy(g_error + np, old, no);
    g_error[np + no] = '\0';
    return code;
}

void sdc_clear_error(void) {
    g_error[0] = '\0';
}

const char *sdc_last_error(void) {
    return g_error;
}

const char *sdc_status_string(sdc_status s) {
    switch (s) {
    case SDC_OK:
        return "ok";
    case SDC_ERR_INVALID_ARG:
        return "invalid argument";
    case SDC_ERR_IO:
        return "i/o error";
    case SDC_ERR_FORMAT:
        return "malformed file";
    case SDC_ERR_NO_MEMORY:
        return "out of memory";
    case SDC_ERR_UNSUPPORTED:
        return "unsupported";
    case SDC_ERR_CANCELLED:
        return "cancelled";
    case SDC_ERR_INTERNAL:
        return "internal error";
    }
    return "unknown status";
}

const char *sdc_version(void) {
    return SDC_VERSION_STRING;
}
