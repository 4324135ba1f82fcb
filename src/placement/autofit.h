/* --auto-fit: a module placement derived from the weight sizes and the devices' memory
 * budgets instead of --backend / --params-backend (docs/devices.md, "--auto-fit").
 *
 * A pure function over plain inputs (no registry calls), so plans can be checked for
 * synthetic device lists; pipeline/context.c feeds it the registry and the loaded files. */
#ifndef SDC_PLACEMENT_AUTOFIT_H
#define SDC_PLACEMENT_AUTOFIT_H

#include <stdbool.h>
#include <stdint.h>

#include "placement/devices.h"
#include "placement/placement.h"

/* margin kept free on a device without a --max-vram budget */
#define SDC_AUTOFIT_MARGIN ((uint64_t)512 << 20)

typedef struct sdc_autofit_component {
    sdc_module module;
    uint64_t params_bytes;  /* its weights; 0 = absent */
    uint64_t reserve_bytes; /* compute scratch it needs next to its weights */
} sdc_autofit_component;

typedef struct sdc_autofit_device {
    int index;        /* registry index, copied into the placement */
    const char *name; /* "cpu0", "cuda0" (for the plan text) */
    bool cpu;         /* host device: a target only when there is no accelerator */
    uint64_t free_bytes;
    /* --max-vram for it: > 0 caps at that many GiB (never above free), < 0 leaves that
     * many GiB free, 0 = free minus SDC_AUTOFIT_MARGIN */
    double max_vram_gib;
} sdc_autofit_device;

typedef struct sdc_autofit_plan {
    sdc_placement placement;
    bool time_share;                    /* weights loaded per phase and freed after (params disk) */
    int n_on_cpu;                       /* components that fit nowhere and fell back to the CPU */
    uint64_t capacity[SDC_MAX_DEVICES]; /* per input device: the room the plan used */
    char text[512]; /* "auto-fit plan (resident): diffusion=cpu0 (4.6 MiB) ..." */
} sdc_autofit_plan;

/* What device d offers to the plan, in bytes (the rule of max_vram_gib above, >= 0). */
uint64_t sdc_autofit_capacity(const sdc_autofit_device *d);

/* The plan for comps[0..n_comps) over devs[0..n_devs) (registry order). Targets are the
 * accelerators, or every device when there are none; `cpu_index` (a registry index) runs
 * what fits nowhere. Rules:
 *  1. resident: components, largest first, each to the target with the most room left
 *     where its weights plus the largest reserve among that target's components fit;
 *  2. if any does not fit, time-share: each component alone to the target with the largest
 *     capacity that holds weights + reserve, params disk; one too large for every target
 *     and splittable (te, diffusion) is split over all targets (registry order, at most
 *     SDC_MAX_SPLIT) when its
 *     weights fit in the sum of (capacity - reserve); otherwise it runs on cpu_index with
 *     its weights there (a warning in the text).
 * Absent components (0 bytes) and modules not listed go to the first target.
 * Errors: no devices, more devices than the plan holds. */
sdc_status sdc_autofit_make_plan(const sdc_autofit_component *comps, int n_comps,
                                 const sdc_autofit_device *devs, int n_devs, int cpu_index,
                                 sdc_autofit_plan *out);

#endif
