/* The device registry: every device a module can be placed on (--list-devices,
 * --backend, --max-vram). By default one device "cpu" with all threads; --cpu-devices N
 * (sdc_set_cpu_devices) replaces it with cpu0..cpu{N-1}, each with its share of the
 * threads and of the memory, so that placement and splits can be exercised on any
 * machine. Accelerators (CUDA, later) join through sdc_devices_register.
 *
 * Device pointers stay valid for the life of the process (entries live in a static
 * table), but their contents change when the CPU devices are re-created; re-create them
 * before creating contexts, never while one runs. */
#ifndef SDC_PLACEMENT_DEVICES_H
#define SDC_PLACEMENT_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"
#include "sdc.h"

#define SDC_MAX_CPU_DEVICES   64
#define SDC_MAX_OTHER_DEVICES 16
#define SDC_MAX_DEVICES       (SDC_MAX_CPU_DEVICES + SDC_MAX_OTHER_DEVICES)

typedef enum sdc_device_kind {
    SDC_DEVICE_CPU = 0,   /* host memory, runs on the CPU backend */
    SDC_DEVICE_ACCEL = 1, /* its own memory (a GPU) */
} sdc_device_kind;

typedef struct sdc_device sdc_device;

/* What an accelerator backend registers: the hooks the registry needs from it. */
typedef struct sdc_device_ops {
    /* a backend running on this device (n_threads: host threads it may use, <= 0 any) */
    sdc_backend *(*create_backend)(const sdc_device *d, int n_threads);
    /* free memory now, in bytes (a negative --max-vram spares from it); NULL = unknown */
    uint64_t (*free_bytes)(const sdc_device *d);
} sdc_device_ops;

struct sdc_device {
    int index; /* position in the registry */
    sdc_device_kind kind;
    char name[32];             /* "cpu", "cpu0", "cuda0": what --backend accepts */
    char registry[16];         /* family name that selects its first device: "cpu", "cuda" */
    char description[384];     /* --list-devices text, includes the memory */
    int n_threads;             /* CPU: worker threads of its backend */
    uint64_t total_bytes;      /* memory for budgeting (CPU: its share of the RAM) */
    uint64_t budget_bytes;     /* --max-vram, 0 = none */
    const sdc_device_ops *ops; /* NULL for CPU devices */
    void *user;                /* the registering backend's own data */
};

/* Number of devices and device i (NULL when out of range). */
int sdc_devices_count(void);
const sdc_device *sdc_devices_get(int index);
/* The device a name selects, as --backend resolves it: case-insensitive exact name, then
 * a registry name ("cpu", "cuda": its first device), "gpu" (first accelerator), then a
 * prefix that matches exactly one device. NULL (and a message naming the valid devices
 * via sdc_fail) when nothing or more than one matches. */
const sdc_device *sdc_devices_find(const char *name);
/* Where modules go when nothing is said: the first accelerator, else the first CPU
 * device ("cpu", or "cpu0" with --cpu-devices). */
const sdc_device *sdc_devices_default(void);
/* "cpu0, cpu1" into buf (for error messages). */
void sdc_devices_list_names(char *buf, size_t size);

/* A backend on device d with the device's thread share (CPU); NULL when out of memory.
 * The _threads form overrides the share (n_threads <= 0: the share). */
sdc_backend *sdc_device_create_backend(const sdc_device *d);
sdc_backend *sdc_device_create_backend_threads(const sdc_device *d, int n_threads);

/* Budgets from sd.cpp's --max-vram syntax: "6" (every device), "cpu0=4,cpu1=2.5",
 * "all=4,cpu1=2" (all= / default= / *= set the value for devices not named); GiB, 2^30
 * bytes; 0 = no budget; negative = free memory minus that many GiB (devices that report
 * free memory; CPU devices get no budget, as in sd.cpp). A named device beats the
 * default whatever the order; a later entry for the same device wins. Replaces every
 * budget (NULL or "" clears them); on error nothing changes. Re-creating the CPU devices
 * clears their budgets, so apply budgets after sdc_set_cpu_devices. */
sdc_status sdc_devices_apply_max_vram(const char *spec);

/* Hook for a future accelerator backend: appends a device after the CPU devices and
 * returns its index, or -1 (with sdc_fail) when the table is full or the name is taken.
 * `d` gives kind, name, registry, description, total_bytes; index and budget are set
 * here. The registration survives sdc_set_cpu_devices. */
int sdc_devices_register(const sdc_device *d, const sdc_device_ops *ops, void *user);
/* Removes every registered accelerator (tests). */
void sdc_devices_unregister_all(void);
/* Back to the default single "cpu" device, budgets cleared, real thread count (tests). */
void sdc_devices_reset(void);
/* Tests: pretend the host has n hardware threads (<= 0: the real count) when the CPU
 * devices are next (re-)created, so thread shares can be checked on a small machine. */
void sdc_devices_set_host_threads(int n);

#endif
