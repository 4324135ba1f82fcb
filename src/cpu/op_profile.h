/* Time per op kind (and, with SDC_PROFILE=2, per op and operand shapes) over a CPU
 * backend's life, printed when it is freed. */
#ifndef SDC_CPU_OP_PROFILE_H
#define SDC_CPU_OP_PROFILE_H

#include "core/tensor.h"

typedef struct sdc_op_profile sdc_op_profile;

/* NULL unless SDC_PROFILE is 1 or 2 */
sdc_op_profile *sdc_op_profile_from_env(void);
void sdc_op_profile_add(sdc_op_profile *p, const sdc_tensor *node, double seconds);
/* prints the tables to stderr and frees p (NULL: nothing) */
void sdc_op_profile_print_free(sdc_op_profile *p);

#endif
