/* Module placement: which device runs each module of a model family and where its
 * weights live, from sd.cpp's --backend / --params-backend syntax and its three
 * shorthands (--clip-on-cpu, --vae-on-cpu, --offload-to-cpu). docs/devices.md has the
 * syntax and the module/alias table. */
#ifndef SDC_PLACEMENT_PLACEMENT_H
#define SDC_PLACEMENT_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "sdc.h"

/* most devices one module may be split across ("diffusion=cpu0&cpu1") */
#define SDC_MAX_SPLIT 8

/* sd.cpp's modules, in its naming */
typedef enum sdc_module {
    SDC_MODULE_TE = 0,      /* text encoders and conditioners: CLIP, T5, LLM */
    SDC_MODULE_DIFFUSION,   /* UNet, DiT, MMDiT, ... */
    SDC_MODULE_VAE,         /* first stage: VAE or TAE */
    SDC_MODULE_CLIP_VISION, /* CLIP vision encoder */
    SDC_MODULE_CONTROL_NET, /* ControlNet */
    SDC_MODULE_PHOTOMAKER,  /* PhotoMaker ID encoder (+ its LoRA) */
    SDC_MODULE_UPSCALER,    /* ESRGAN */
    SDC_MODULE_DETECTOR,    /* ADetailer YOLO detector */
    SDC_MODULE_COUNT
} sdc_module;

#define SDC_MODULE_BIT(m) (1u << (m))

/* Where a module's weights live between uses. */
typedef enum sdc_params_location {
    SDC_PARAMS_DEVICE = 0, /* on the device that runs the module (default) */
    SDC_PARAMS_CPU = 1,    /* in host RAM (another CPU device's memory), used from there */
    SDC_PARAMS_DISK = 2,   /* read from the file for each phase, released after it */
} sdc_params_location;

typedef struct sdc_module_place {
    int device[SDC_MAX_SPLIT]; /* registry indices (placement/devices.h); [0] = main device */
    int n_devices;             /* > 1: split across the listed devices (a&b) */
    sdc_params_location params;
    bool params_given; /* --params-backend named it (else the pipeline's default applies) */
    /* device whose memory holds the weights: device[0] for _DEVICE, the named CPU device
     * for _CPU, -1 for _DISK */
    int params_device;
} sdc_module_place;

typedef struct sdc_placement {
    sdc_module_place module[SDC_MODULE_COUNT];
} sdc_placement;

/* Fills `out` from p->backend, p->params_backend and the shorthands (applied first, as
 * sd.cpp's CLI prepends them, so explicit entries override them). Nothing given: every
 * module on sdc_devices_default(), weights on it. Errors name the bad piece and list the
 * valid module or device names. A module split across several devices (te, diffusion)
 * keeps its list, main device first (placement/split.h runs it). Reads only the fields that
 * fit in p->struct_size. */
sdc_status sdc_placement_parse(const sdc_context_params *p, sdc_placement *out);
/* The same from the raw values. */
sdc_status sdc_placement_parse_specs(const char *backend, const char *params_backend,
                                     bool clip_on_cpu, bool vae_on_cpu, bool offload_to_cpu,
                                     sdc_placement *out);

/* sd.cpp's canonical name: "te", "diffusion", "vae", "clip_vision", "controlnet", ... */
const char *sdc_module_name(sdc_module m);
/* The module a name or alias selects (case-insensitive, '-' and '_' ignored), or -1. */
int sdc_module_from_name(const char *name);
/* Its accepted names, separated by ", " (canonical first, as written after
 * normalisation: "clipvision" for clip_vision). */
const char *sdc_module_aliases(sdc_module m);
/* Whether sd.cpp can split the module across devices (diffusion, te); others given a
 * device list run on its first device. */
bool sdc_module_splittable(sdc_module m);

/* One log line: "te=cpu0 diffusion=cpu1 vae=cpu0 (params: te=disk)". Shows te,
 * diffusion and vae, and any other module placed off the default. */
void sdc_placement_describe(const sdc_placement *pl, char *buf, size_t size);
/* The same for the modules in `mask` (SDC_MODULE_BIT(m) | ...) only. */
void sdc_placement_describe_modules(const sdc_placement *pl, unsigned mask, char *buf, size_t size);

#endif
