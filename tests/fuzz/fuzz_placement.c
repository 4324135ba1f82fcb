/* Fuzzes the placement parsers: the input is split at the first two newlines into
 * --backend, --params-backend and --max-vram values, on 3 CPU devices; the first byte's
 * low bits pick the shorthands. Every placement that parses must name real devices. */
#include "placement/devices.h"
#include "placement/placement.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int once;
    if (!once) {
        sdc_set_log_level(SDC_LOG_ERROR); /* the parsers warn about odd but valid input */
        sdc_set_cpu_devices(3);
        once = 1;
    }
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    unsigned flags = size ? data[0] : 0;
    char *backend = text, *params = NULL, *vram = NULL;
    char *nl = strchr(backend, '\n');
    if (nl) {
        *nl = 0;
        params = nl + 1;
        nl = strchr(params, '\n');
        if (nl) {
            *nl = 0;
            vram = nl + 1;
        }
    }
    sdc_placement pl;
    sdc_status s = sdc_placement_parse_specs(backend, params, flags & 1, flags & 2, flags & 4, &pl);
    if (s == SDC_OK || s == SDC_ERR_UNSUPPORTED) {
        int n = sdc_devices_count();
        for (int m = 0; m < SDC_MODULE_COUNT; m++) {
            const sdc_module_place *p = &pl.module[m];
            if (p->n_devices < 1 || p->n_devices > SDC_MAX_SPLIT) abort();
            for (int i = 0; i < p->n_devices; i++)
                if (p->device[i] < 0 || p->device[i] >= n) abort();
            if (p->params == SDC_PARAMS_DISK ? p->params_device != -1
                                             : (p->params_device < 0 || p->params_device >= n))
                abort();
        }
        char line[256];
        sdc_placement_describe(&pl, line, sizeof line);
    }
    if (vram) sdc_devices_apply_max_vram(vram);
    free(text);
    return 0;
}
