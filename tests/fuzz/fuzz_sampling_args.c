/* Fuzzes the text inputs of src/sampling: --sigmas parsing and the name lookups, and
 * runs a short euler sampling on any schedule that parses. */
#include "sampling/samplers.h"
#include "sampling/schedulers.h"

#include <stdlib.h>
#include <string.h>

static sdc_status identity_x0(void *u, const float *x, float s, float *d, float *un, int64_t n) {
    (void)u, (void)s, (void)un;
    for (int64_t i = 0; i < n; i++) d[i] = 0.5f * x[i];
    return SDC_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    float sig[64];
    int count = 0;
    if (sdc_parse_sigmas(text, sig, 64, &count) == SDC_OK) {
        sdc_sampler_params p;
        sdc_sampler_params_init(&p);
        p.method = SDC_SAMPLE_EULER;
        float x[8] = {1, -1, 2, -2, 3, -3, 4, -4};
        sdc_sample(&p, sig, count, identity_x0, NULL, x, 8);
        sdc_sigmas_apply_strength(sig, count, 0.5f);
    }
    sdc_sample_method m;
    sdc_scheduler s;
    sdc_rng_type r;
    sdc_prediction pr;
    sdc_sample_method_from_name(text, &m);
    sdc_scheduler_from_name(text, &s);
    sdc_rng_type_from_name(text, &r);
    sdc_prediction_from_name(text, &pr);
    free(text);
    return 0;
}
