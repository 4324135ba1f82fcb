/* Monotonic wall clock in seconds, for timings and progress. */
#ifndef SDC_CORE_CLOCK_H
#define SDC_CORE_CLOCK_H

#include <time.h>

static inline double sdc_now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
