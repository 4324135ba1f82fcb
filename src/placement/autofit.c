/* --auto-fit planning (autofit.h has the rules). */
#include "placement/autofit.h"

#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "placement/split.h"

#define GIB 1073741824.0

uint64_t sdc_autofit_capacity(const sdc_autofit_device *d) {
    double free_b = (double)d->free_bytes, c;
    if (d->max_vram_gib > 0)
        c = d->max_vram_gib * GIB < free_b ? d->max_vram_gib * GIB : free_b;
    else if (d->max_vram_gib < 0)
        c = free_b + d->max_vram_gib * GIB;
    else
        c = free_b - (double)SDC_AUTOFIT_MARGIN;
    return c <= 0 ? 0 : (uint64_t)c;
}

/* "4.00 GiB" above a GiB, else the split module's units */
static const char *bytes_str(uint64_t b, char *buf, size_t size) {
    if (b < (uint64_t)1 << 30) return sdc_split_bytes_str(b, buf, size);
    snprintf(buf, size, "%.2f GiB", (double)b / GIB);
    return buf;
}

static void place_one(sdc_module_place *pl, int device, sdc_params_location params) {
    memset(pl, 0, sizeof *pl);
    pl->device[0] = device;
    pl->n_devices = 1;
    pl->params = params;
    pl->params_given = params == SDC_PARAMS_DISK;
    pl->params_device = params == SDC_PARAMS_DISK ? -1 : device;
}

/* comps sorted by weight bytes, largest first (ties: input order) */
static void order_by_size(const sdc_autofit_component *c, int n, int *order) {
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && c[order[j]].params_bytes > c[order[j - 1]].params_bytes; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

static uint64_t max_u64(uint64_t a, uint64_t b) {
    return a > b ? a : b;
}

/* Rule 1: everything resident; false when a component fits nowhere. */
static bool plan_resident(const sdc_autofit_component *c, const int *order, int n, const int *tg,
                          int n_tg, const uint64_t *cap, int *where) {
    uint64_t used[SDC_MAX_DEVICES] = {0}, reserve[SDC_MAX_DEVICES] = {0};
    for (int k = 0; k < n; k++) {
        const sdc_autofit_component *ci = &c[order[k]];
        where[order[k]] = -1;
        if (!ci->params_bytes) continue;
        int best = -1;
        for (int t = 0; t < n_tg; t++) {
            uint64_t need = used[t] + ci->params_bytes + max_u64(reserve[t], ci->reserve_bytes);
            if (need > cap[tg[t]]) continue;
            if (best < 0 || cap[tg[t]] - used[t] > cap[tg[best]] - used[best]) best = t;
        }
        if (best < 0) return false;
        used[best] += ci->params_bytes;
        reserve[best] = max_u64(reserve[best], ci->reserve_bytes);
        where[order[k]] = best;
    }
    return true;
}

sdc_status sdc_autofit_make_plan(const sdc_autofit_component *comps, int n_comps,
                                 const sdc_autofit_device *devs, int n_devs, int cpu_index,
                                 sdc_autofit_plan *out) {
    memset(out, 0, sizeof *out);
    if (n_devs <= 0) return sdc_fail(SDC_ERR_INVALID_ARG, "--auto-fit: no devices to plan for");
    if (n_devs > SDC_MAX_DEVICES || n_comps > SDC_MODULE_COUNT || n_comps < 0)
        return sdc_fail(SDC_ERR_INVALID_ARG, "--auto-fit: %d devices / %d components: too many",
                        n_devs, n_comps);
    int tg[SDC_MAX_DEVICES], n_tg = 0;
    bool any_accel = false;
    for (int d = 0; d < n_devs; d++) {
        out->capacity[d] = sdc_autofit_capacity(&devs[d]);
        any_accel |= !devs[d].cpu;
    }
    for (int d = 0; d < n_devs; d++)
        if (!any_accel || !devs[d].cpu) tg[n_tg++] = d;
    for (int m = 0; m < SDC_MODULE_COUNT; m++)
        place_one(&out->placement.module[m], devs[tg[0]].index, SDC_PARAMS_DEVICE);

    int order[SDC_MODULE_COUNT], where[SDC_MODULE_COUNT];
    order_by_size(comps, n_comps, order);
    if (plan_resident(comps, order, n_comps, tg, n_tg, out->capacity, where)) {
        for (int i = 0; i < n_comps; i++)
            if (where[i] >= 0)
                place_one(&out->placement.module[comps[i].module], devs[tg[where[i]]].index,
                          SDC_PARAMS_DEVICE);
    } else {
        out->time_share = true;
        for (int k = 0; k < n_comps; k++) {
            const sdc_autofit_component *ci = &comps[order[k]];
            sdc_module_place *pl = &out->placement.module[ci->module];
            if (!ci->params_bytes) continue;
            int best = -1;
            uint64_t room = 0;
            for (int t = 0; t < n_tg; t++) {
                uint64_t cap = out->capacity[tg[t]];
                if (ci->params_bytes + ci->reserve_bytes > cap) continue;
                if (best < 0 || cap > out->capacity[tg[best]]) best = t;
            }
            int n_split = n_tg < SDC_MAX_SPLIT ? n_tg : SDC_MAX_SPLIT;
            for (int t = 0; t < n_split; t++) {
                uint64_t cap = out->capacity[tg[t]];
                room += cap > ci->reserve_bytes ? cap - ci->reserve_bytes : 0;
            }
            if (best >= 0) {
                place_one(pl, devs[tg[best]].index, SDC_PARAMS_DISK);
            } else if (sdc_module_splittable(ci->module) && n_split > 1 &&
                       ci->params_bytes <= room) {
                place_one(pl, devs[tg[0]].index, SDC_PARAMS_DISK);
                for (int t = 0; t < n_split; t++) pl->device[t] = devs[tg[t]].index;
                pl->n_devices = n_split;
            } else {
                place_one(pl, cpu_index, SDC_PARAMS_DEVICE);
                out->n_on_cpu++;
            }
        }
    }
    /* the text: every listed component with its size and where it went */
    size_t n = (size_t)snprintf(out->text, sizeof out->text, "auto-fit plan (%s):",
                                out->time_share ? "time-share: weights loaded per phase, freed "
                                                  "after"
                                                : "resident");
    for (int i = 0; i < n_comps && n < sizeof out->text; i++) {
        const sdc_autofit_component *ci = &comps[i];
        const sdc_module_place *pl = &out->placement.module[ci->module];
        char sz[32];
        if (!ci->params_bytes) continue;
        n += (size_t)snprintf(out->text + n, sizeof out->text - n,
                              " %s=", sdc_module_name(ci->module));
        for (int k = 0; k < pl->n_devices && n < sizeof out->text; k++) {
            const char *name = "?";
            for (int d = 0; d < n_devs; d++)
                if (devs[d].index == pl->device[k]) name = devs[d].name;
            n += (size_t)snprintf(out->text + n, sizeof out->text - n, "%s%s", k ? "&" : "", name);
        }
        if (n < sizeof out->text)
            n += (size_t)snprintf(out->text + n, sizeof out->text - n, " (%s%s)",
                                  bytes_str(ci->params_bytes, sz, sizeof sz),
                                  pl->params == SDC_PARAMS_DISK ? ", disk" : "");
    }
    if (out->n_on_cpu && n < sizeof out->text)
        snprintf(out->text + n, sizeof out->text - n,
                 "; warning: %d component(s) fit no device and run on the CPU", out->n_on_cpu);
    return SDC_OK;
}
