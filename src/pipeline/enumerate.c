/* Public name tables: samplers, schedulers and weight types, from the modules that own
 * them, so the CLI, the server and bindings never keep copies. */
#include <stddef.h>

#include "core/types.h"
#include "sampling/samplers.h"
#include "sampling/schedulers.h"
#include "sdc.h"

int sdc_sampler_count(void) {
    return SDC_SAMPLE_COUNT;
}
const char *sdc_sampler_name(int index) {
    return index >= 0 && index < SDC_SAMPLE_COUNT ? sdc_sample_method_name(index) : NULL;
}
int sdc_scheduler_count(void) {
    return SDC_SCHED_COUNT;
}
const char *sdc_scheduler_name(int index) {
    return index >= 0 && index < SDC_SCHED_COUNT ? sdc_sched_name((sdc_scheduler)index) : NULL;
}

/* The types --type accepts, in sd-cli's order of its help text. */
static const int k_weight_types[] = {
    SDC_TYPE_F32,  SDC_TYPE_F16,  SDC_TYPE_BF16, SDC_TYPE_Q8_0, SDC_TYPE_Q5_0,
    SDC_TYPE_Q5_1, SDC_TYPE_Q4_0, SDC_TYPE_Q4_1, SDC_TYPE_Q6_K, SDC_TYPE_Q5_K,
    SDC_TYPE_Q4_K, SDC_TYPE_Q3_K, SDC_TYPE_Q2_K,
};
#define N_WEIGHT_TYPES ((int)(sizeof k_weight_types / sizeof k_weight_types[0]))

int sdc_weight_type_count(void) {
    return N_WEIGHT_TYPES;
}
const char *sdc_weight_type_name(int index) {
    return index >= 0 && index < N_WEIGHT_TYPES ? sdc_type_name(k_weight_types[index]) : NULL;
}
int sdc_weight_type_id(int index) {
    return index >= 0 && index < N_WEIGHT_TYPES ? k_weight_types[index] : -1;
}
int sdc_weight_type_from_name(const char *name) {
    int t = name ? sdc_type_from_name(name) : -1;
    for (int i = 0; i < N_WEIGHT_TYPES; i++)
        if (k_weight_types[i] == t) return t;
    return -1;
}
