/* sdc: Stable Diffusion in C. The public API; the only header users include. */
#ifndef SDC_H
#define SDC_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SDC_BUILDING)
#define SDC_API __attribute__((visibility("default")))
#else
#define SDC_API
#endif

typedef enum sdc_status {
    SDC_OK = 0,
    SDC_ERR_INVALID_ARG = 1, /* a caller passed something impossible */
    SDC_ERR_IO = 2,          /* open/read/write/mmap failed */
    SDC_ERR_FORMAT = 3,      /* a file or request is malformed */
    SDC_ERR_NO_MEMORY = 4,
    SDC_ERR_UNSUPPORTED = 5, /* valid, but not implemented / not on this device */
    SDC_ERR_CANCELLED = 6,
    SDC_ERR_INTERNAL = 7,
} sdc_status;

/* Library version, e.g. "0.1.0". */
SDC_API const char *sdc_version(void);
/* Short name of a status code. */
SDC_API const char *sdc_status_string(sdc_status s);
/* Message of the last failure on the calling thread ("" if none). */
SDC_API const char *sdc_last_error(void);

/* Devices: one line per device, "name\tdescription". */
SDC_API int sdc_device_count(void);
SDC_API sdc_status sdc_device_info(int index, char *name, size_t name_size, char *desc,
                                   size_t desc_size);

#ifdef __cplusplus
}
#endif
#endif
