#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One lock serialises sink changes and deliveries, so messages from worker threads
 * never interleave and a sink is never called after it was replaced. */
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static sdc_log_fn g_log_fn;
static void *g_log_user;
static atomic_int g_log_min = SDC_LOG_WARN;

static const char *level_prefix(sdc_log_level level) {
    switch (level) {
    case SDC_LOG_DEBUG:
        return "debug: ";
    case SDC_LOG_INFO:
        return "";
    case SDC_LOG_WARN:
        return "warning: ";
    case SDC_LOG_ERROR:
        return "error: ";
    }
    return "";
}

static void default_sink(sdc_log_level level, const char *msg) {
    size_t n = strlen(msg);
    const char *nl = (n > 0 && msg[n - 1] == '\n') ? "" : "\n";
    fprintf(stderr, "sdc: %s%s%s", level_prefix(level), msg, nl);
}

void sdc_set_log_callback(sdc_log_fn fn, void *user) {
    pthread_mutex_lock(&g_log_lock);
    g_log_fn = fn;
    g_log_user = fn ? user : NULL;
    pthread_mutex_unlock(&g_log_lock);
}

void sdc_set_log_level(sdc_log_level min_level) {
    if (min_level < SDC_LOG_DEBUG) min_level = SDC_LOG_DEBUG;
    if (min_level > SDC_LOG_ERROR) min_level = SDC_LOG_ERROR;
    atomic_store(&g_log_min, (int)min_level);
}

bool sdc_log_enabled(sdc_log_level level) {
    return (int)level >= atomic_load(&g_log_min);
}

void sdc_log(sdc_log_level level, const char *fmt, ...) {
    if (!sdc_log_enabled(level)) return;

    char small[512];
    char *msg = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof small) {
        /* long message: format again into a buffer of the right size */
        char *big = malloc((size_t)n + 1);
        if (big) {
            va_start(ap, fmt);
            vsnprintf(big, (size_t)n + 1, fmt, ap);
            va_end(ap);
            msg = big;
        }
    }

    pthread_mutex_lock(&g_log_lock);
    if (g_log_fn)
        g_log_fn(level, msg, g_log_user);
    else
        default_sink(level, msg);
    pthread_mutex_unlock(&g_log_lock);

    if (msg != small) free(msg);
}
