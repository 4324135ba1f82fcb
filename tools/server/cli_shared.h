/* The pieces of the CLI that the server shares: its flag parser (model and default
 * generation flags are spelled as for `sdc`) and its sampler/scheduler name tables. */
#ifndef SDC_SERVER_CLI_SHARED_H
#define SDC_SERVER_CLI_SHARED_H

#include <stddef.h>

#include "../cli/args.h"

size_t sdc_srv_sampler_count(void);
const char *sdc_srv_sampler_name(size_t i);
size_t sdc_srv_scheduler_count(void);
const char *sdc_srv_scheduler_name(size_t i);

#endif
