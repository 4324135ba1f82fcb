/* The layer split's partitioner: contiguous block ranges sized by the devices' budgets. */
#include "placement/split.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *sdc_split_bytes_str(uint64_t b, char *buf, size_t size) {
    if (b < 1024)
        snprintf(buf, size, "%llu bytes", (unsigned long long)b);
    else if (b < 1024 * 1024)
        snprintf(buf, size, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, size, "%.2f MiB", (double)b / (1024.0 * 1024.0));
    return buf;
}

/* Fills first[] greedily: each device takes blocks while they fit its cap and, when
 * `targets` is given, while the block's middle lies before the device's cumulative target.
 * Returns the number of blocks placed. */
static int fill(const uint64_t *w, int n, const uint64_t *cap, const double *targets, int n_dev,
                int *first) {
    int i = 0;
    double done = 0; /* bytes of blocks before block i */
    for (int d = 0; d < n_dev; d++) {
        first[d] = i;
        uint64_t have = 0;
        while (i < n) {
            if (targets && d < n_dev - 1 && done + 0.5 * (double)w[i] >= targets[d]) break;
            if (have + w[i] > cap[d]) break;
            have += w[i];
            done += (double)w[i];
            i++;
        }
    }
    first[n_dev] = i;
    return i;
}

sdc_status sdc_split_partition(const uint64_t *block_bytes, int n_blocks, uint64_t main_bytes,
                               const uint64_t *budget, const uint64_t *headroom, int n_dev,
                               int *first) {
    if (n_dev < 1 || n_dev > SDC_MAX_SPLIT || n_blocks < 0)
        return sdc_fail(SDC_ERR_INVALID_ARG, "split: %d devices, %d blocks", n_dev, n_blocks);
    uint64_t cap[SDC_MAX_SPLIT], total_cap = 0, total = 0;
    for (int d = 0; d < n_dev; d++) {
        uint64_t reserve = headroom[d] + (d == 0 ? main_bytes : 0);
        if (d == 0 && budget[0] < reserve) {
            char a[32], b[32], c[32];
            return sdc_fail(SDC_ERR_NO_MEMORY,
                            "split: the main device's budget (%s) cannot hold the weights outside "
                            "the blocks (%s) and the compute headroom (%s)",
                            sdc_split_bytes_str(budget[0], a, sizeof a),
                            sdc_split_bytes_str(main_bytes, b, sizeof b),
                            sdc_split_bytes_str(headroom[0], c, sizeof c));
        }
        cap[d] = budget[d] > reserve ? budget[d] - reserve : 0;
        total_cap += cap[d];
    }
    for (int i = 0; i < n_blocks; i++) total += block_bytes[i];
    char a[32], b[32];
    if (total > total_cap)
        return sdc_fail(SDC_ERR_NO_MEMORY,
                        "split: %d blocks of %s do not fit: the %d devices' budgets leave %s "
                        "after the compute headroom and the main device's other weights",
                        n_blocks, sdc_split_bytes_str(total, a, sizeof a), n_dev,
                        sdc_split_bytes_str(total_cap, b, sizeof b));
    double targets[SDC_MAX_SPLIT], acc = 0;
    for (int d = 0; d < n_dev; d++) {
        acc += (double)cap[d];
        targets[d] = total_cap ? (double)total * acc / (double)total_cap : 0;
    }
    if (fill(block_bytes, n_blocks, cap, targets, n_dev, first) == n_blocks) return SDC_OK;
    /* the proportional ranges overflow a device (blocks are indivisible): fill by cap */
    int placed = fill(block_bytes, n_blocks, cap, NULL, n_dev, first);
    if (placed == n_blocks) return SDC_OK;
    return sdc_fail(SDC_ERR_NO_MEMORY,
                    "split: block %d (%s) and the %d after it fit on no device: the budgets "
                    "hold %s in all but not in contiguous ranges",
                    placed, sdc_split_bytes_str(block_bytes[placed], a, sizeof a),
                    n_blocks - placed - 1, sdc_split_bytes_str(total_cap, b, sizeof b));
}

/* "layer" / "row" (case and surrounding spaces ignored) */
static int mode_from(const char *v, size_t n) {
    while (n && isspace((unsigned char)*v)) v++, n--;
    while (n && isspace((unsigned char)v[n - 1])) n--;
    if (n == 5 && !strncasecmp(v, "layer", 5)) return SDC_SPLIT_LAYER;
    if (n == 3 && !strncasecmp(v, "row", 3)) return SDC_SPLIT_ROW;
    return -1;
}

sdc_status sdc_split_mode_parse(const char *spec, sdc_split_mode *modes) {
    int def = SDC_SPLIT_LAYER, own[SDC_MODULE_COUNT];
    for (int m = 0; m < SDC_MODULE_COUNT; m++) own[m] = -1;
    for (const char *p = spec ? spec : ""; *p;) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        char key[64] = "";
        int mode = eq ? mode_from(eq + 1, len - (size_t)(eq - p) - 1) : mode_from(p, len);
        bool blank = strspn(p, " \t") >= len;
        if (!blank && mode < 0)
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "--split-mode '%.*s': the mode must be layer or row (or "
                            "MODULE=layer|row)",
                            (int)len, p);
        if (!blank && eq) {
            size_t kn = (size_t)(eq - p);
            while (kn && isspace((unsigned char)*p)) p++, kn--;
            snprintf(key, sizeof key, "%.*s", (int)kn, p);
            for (size_t k = strlen(key); k && isspace((unsigned char)key[k - 1]); k--)
                key[k - 1] = 0;
            int m = sdc_module_from_name(key);
            bool all = !strcasecmp(key, "all") || !strcasecmp(key, "default") || !strcmp(key, "*");
            if (m < 0 && !all)
                return sdc_fail(SDC_ERR_INVALID_ARG, "--split-mode: unknown module '%s'", key);
            if (all)
                def = mode;
            else
                own[m] = mode;
        } else if (!blank) {
            def = mode;
        }
        p += len;
        if (*p == ',') p++;
    }
    for (int m = 0; m < SDC_MODULE_COUNT; m++)
        modes[m] = (sdc_split_mode)(own[m] >= 0 ? own[m] : def);
    return SDC_OK;
}
