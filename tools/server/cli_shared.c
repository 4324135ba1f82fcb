/* Compiles the CLI's flag parser into the server, so both programs read the model and
 * generation flags with one piece of code (tools/cli stays untouched). */
#include "cli_shared.h"

#include "../cli/args.c"

size_t sdc_srv_sampler_count(void) {
    return COUNT_OF(k_samplers);
}
const char *sdc_srv_sampler_name(size_t i) {
    return i < COUNT_OF(k_samplers) ? k_samplers[i] : NULL;
}
size_t sdc_srv_scheduler_count(void) {
    return COUNT_OF(k_schedulers);
}
const char *sdc_srv_scheduler_name(size_t i) {
    return i < COUNT_OF(k_schedulers) ? k_schedulers[i] : NULL;
}
