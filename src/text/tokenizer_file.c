/* Loading a tokenizer from a path, and finding the one that belongs to a T5 weights file
 * (HF repos keep tokenizer.json / spiece.model next to the weights, in a tokenizer/
 * subfolder, or one level up when the weights sit in a text_encoder folder). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/tokenizer.h"

#define MAX_TOKENIZER_FILE ((size_t)1 << 30)

static sdc_status read_file(const char *path, uint8_t **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return sdc_fail(SDC_ERR_IO, "%s: cannot open tokenizer file", path);
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) ||
        (size_t)st.st_size > MAX_TOKENIZER_FILE) {
        fclose(f);
        return sdc_fail(SDC_ERR_IO, "%s: not a regular tokenizer file of at most 1 GiB", path);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    if (got != n) {
        free(buf);
        return sdc_fail(SDC_ERR_IO, "%s: short read", path);
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return SDC_OK;
}

sdc_status sdc_tokenizer_load(const char *path, sdc_tokenizer **out) {
    if (!path || !out) return sdc_fail(SDC_ERR_INVALID_ARG, "tokenizer: no path");
    *out = NULL;
    uint8_t *data = NULL;
    size_t size = 0;
    sdc_status st = read_file(path, &data, &size);
    if (st) return st;
    size_t i = 0;
    if (size >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF) i = 3; /* BOM */
    while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (i < size && data[i] == '{')
        st = sdc_tokenizer_load_json((const char *)data + i, size - i, path, out);
    else
        st = sdc_tokenizer_load_spiece(data, size, path, out);
    free(data);
    return st;
}

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

sdc_status sdc_tokenizer_find_for_weights(const char *weights_path, const char *override_path,
                                          char *out_path, size_t out_size) {
    if (!out_path || out_size == 0) return sdc_fail(SDC_ERR_INVALID_ARG, "tokenizer: no buffer");
    out_path[0] = 0;
    if (override_path && *override_path) {
        if (!is_file(override_path))
            return sdc_fail(SDC_ERR_IO, "--t5-tokenizer %s: no such file", override_path);
        if (strlen(override_path) >= out_size)
            return sdc_fail(SDC_ERR_INVALID_ARG, "tokenizer: path too long");
        strcpy(out_path, override_path);
        return SDC_OK;
    }
    if (!weights_path) weights_path = "";
    /* folder of the weights, then its parent */
    char dir[4096], parent[4096];
    const char *slash = strrchr(weights_path, '/');
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - weights_path), weights_path);
    else
        snprintf(dir, sizeof dir, ".");
    if (dir[0] == 0) snprintf(dir, sizeof dir, "/");
    const char *pslash = strrchr(dir, '/');
    if (!strcmp(dir, ".") || !strcmp(dir, "/"))
        snprintf(parent, sizeof parent, "%s", !strcmp(dir, ".") ? ".." : "/");
    else if (pslash)
        snprintf(parent, sizeof parent, "%.*s", pslash == dir ? 1 : (int)(pslash - dir), dir);
    else
        snprintf(parent, sizeof parent, ".");
    const char *dirs[4] = {dir, NULL, parent, NULL};
    char sub1[4200], sub2[4200];
    snprintf(sub1, sizeof sub1, "%s/tokenizer", dir);
    snprintf(sub2, sizeof sub2, "%s/tokenizer", parent);
    dirs[1] = sub1;
    dirs[3] = sub2;
    static const char *const names[2] = {"tokenizer.json", "spiece.model"};
    char tried[8 * 4300];
    size_t tl = 0;
    tried[0] = 0;
    for (int d = 0; d < 4; d++) {
        if (d == 2 && !strcmp(parent, dir)) continue;
        for (int k = 0; k < 2; k++) {
            char cand[4400];
            snprintf(cand, sizeof cand, "%s/%s", dirs[d], names[k]);
            if (is_file(cand)) {
                if (strlen(cand) >= out_size)
                    return sdc_fail(SDC_ERR_INVALID_ARG, "tokenizer: path too long");
                strcpy(out_path, cand);
                return SDC_OK;
            }
            int w = snprintf(tried + tl, sizeof tried - tl, "%s%s", tl ? ", " : "", cand);
            if (w > 0 && (size_t)w < sizeof tried - tl) tl += (size_t)w;
        }
    }
    return sdc_fail(SDC_ERR_IO,
                    "no T5 tokenizer found for %s; looked for %s. Pass --t5-tokenizer PATH "
                    "(tokenizer.json or spiece.model, e.g. from the google/flan-t5-large "
                    "repository on Hugging Face)",
                    weights_path, tried);
}

sdc_status sdc_tokenizer_load_for_weights(const char *weights_path, const char *override_path,
                                          sdc_tokenizer **out) {
    char path[4400];
    sdc_status st = sdc_tokenizer_find_for_weights(weights_path, override_path, path, sizeof path);
    if (st) return st;
    return sdc_tokenizer_load(path, out);
}
