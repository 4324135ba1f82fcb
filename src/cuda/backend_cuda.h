/* The CUDA backend (built with -DSDC_CUDA=ON): devices cuda0.. join the device registry
 * with their memory; each backend instance runs graphs on one GPU with one stream. */
#ifndef SDC_CUDA_BACKEND_CUDA_H
#define SDC_CUDA_BACKEND_CUDA_H

#include "placement/devices.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*sdc_cuda_register_fn)(const sdc_device *d, const sdc_device_ops *ops, void *user);
/* Registers every visible GPU through reg (the registry's own entry); no GPU or no driver:
 * registers nothing. */
void sdc_cuda_add_devices(sdc_cuda_register_fn reg);
/* A backend on GPU `ordinal`, or NULL with the error recorded. */
sdc_backend *sdc_backend_cuda_create(int ordinal);

#ifdef __cplusplus
}
#endif

#endif
