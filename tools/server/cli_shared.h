/* What the server shares with sdc: the flag parser (tools/common/args.h; model flags and
 * generation defaults are spelled as for sdc) and the library's sampler/scheduler names. */
#ifndef SDC_SERVER_CLI_SHARED_H
#define SDC_SERVER_CLI_SHARED_H

#include <stddef.h>

#include "args.h"

size_t sdc_srv_sampler_count(void);
const char *sdc_srv_sampler_name(size_t i);
size_t sdc_srv_scheduler_count(void);
const char *sdc_srv_scheduler_name(size_t i);

#endif
