/* The server's name tables are the library's enumerations (include/sdc.h). */
#include "cli_shared.h"

size_t sdc_srv_sampler_count(void) {
    return (size_t)sdc_sampler_count();
}
const char *sdc_srv_sampler_name(size_t i) {
    return sdc_sampler_name((int)i);
}
size_t sdc_srv_scheduler_count(void) {
    return (size_t)sdc_scheduler_count();
}
const char *sdc_srv_scheduler_name(size_t i) {
    return sdc_scheduler_name((int)i);
}
