/* Internal logging: library code reports progress and oddities through sdc_log; the
 * application chooses where messages go (sdc_set_log_callback) and how many it wants
 * (sdc_set_log_level). */
#ifndef SDC_CORE_LOG_H
#define SDC_CORE_LOG_H

#include <stdbool.h>

#include "core/status.h"
#include "sdc.h"

/* Formats a message (no trailing newline needed) and hands it to the current sink if
 * `level` is at or above the minimum level. Safe to call from any thread. */
void sdc_log(sdc_log_level level, const char *fmt, ...) SDC_PRINTF(2, 3);

/* True if a message of this level would be delivered (skip costly formatting if not). */
bool sdc_log_enabled(sdc_log_level level);

#define SDC_LOGD(...) sdc_log(SDC_LOG_DEBUG, __VA_ARGS__)
#define SDC_LOGI(...) sdc_log(SDC_LOG_INFO, __VA_ARGS__)
#define SDC_LOGW(...) sdc_log(SDC_LOG_WARN, __VA_ARGS__)
#define SDC_LOGE(...) sdc_log(SDC_LOG_ERROR, __VA_ARGS__)

#endif
