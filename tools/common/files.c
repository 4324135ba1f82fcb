/* Files named on the command line: input checks before anything is loaded, and output
 * names as sd-cli derives them from -o. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"

/* Extension of the last path component, with the dot ("" if none). */
static const char *path_extension(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return (dot && dot != base) ? dot : "";
}

/* ---- input files ---- */

static bool check_file(const char *opt, const char *path, char *err, size_t n) {
    if (!path) return true;
    struct stat st;
    if (!*path) {
        snprintf(err, n, "%s: empty file name", opt);
        return false;
    }
    if (stat(path, &st) != 0) {
        snprintf(err, n, "%s: cannot open '%s': %s", opt, path, strerror(errno));
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        /* --model also takes a diffusers folder (the library reads model_index.json's
         * components) */
        char idx[4096];
        if (strcmp(opt, "--model") == 0 &&
            (size_t)snprintf(idx, sizeof idx, "%s/model_index.json", path) < sizeof idx &&
            access(idx, R_OK) == 0)
            return true;
        snprintf(err, n, "%s: '%s' is a directory, not a file", opt, path);
        return false;
    }
    if (access(path, R_OK) != 0) {
        snprintf(err, n, "%s: cannot read '%s': %s", opt, path, strerror(errno));
        return false;
    }
    return true;
}

bool sdc_cli_check_inputs(const sdc_cli_args *a, char *err, size_t err_size) {
    const sdc_context_params *c = &a->ctx;
    const struct {
        const char *opt, *path;
    } files[] = {
        {"--model", c->model_path},
        {"--diffusion-model", c->diffusion_model_path},
        {"--t5xxl", c->t5xxl_path},
        {"--clip_l", c->clip_l_path},
        {"--clip_g", c->clip_g_path},
        {"--vae", c->vae_path},
        {"--upscale-model", c->upscale_model_path},
        {"--t5-tokenizer", c->t5_tokenizer_path},
        {"--init-img", a->init_img_path},
        {"--mask", a->mask_path},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!check_file(files[i].opt, files[i].path, err, err_size)) return false;
    for (int i = 0; i < a->n_imat_in; i++)
        if (!check_file("--imat-in", a->imat_in[i], err, err_size)) return false;
    for (int i = 0; i < a->n_ref_images; i++)
        if (!check_file("--ref-image", a->ref_images[i], err, err_size)) return false;
    return true;
}

/* ---- output names ---- */

/* Length of a "%d" / "%3d" / "%03d" specifier at s (s[0] == '%'), 0 if there is none. */
static size_t index_spec_len(const char *s) {
    size_t k = 1;
    while (k <= 3 && s[k] >= '0' && s[k] <= '9') k++;
    return s[k] == 'd' ? k + 1 : 0;
}

static bool has_index_spec(const char *s) {
    for (; *s; s++) {
        if (*s != '%') continue;
        if (s[1] == '%') {
            s++;
            continue;
        }
        if (index_spec_len(s)) return true;
    }
    return false;
}

/* Replaces every index specifier by `index` and "%%" by "%", as sd-cli does. */
static char *expand_index(const char *pattern, int index) {
    size_t cap = strlen(pattern) + 64, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (const char *s = pattern; *s;) {
        char piece[1024]; /* a width has at most 3 digits: "%999d" fits */
        size_t spec = s[0] == '%' ? index_spec_len(s) : 0;
        size_t n;
        if (s[0] == '%' && s[1] == '%') {
            piece[0] = '%', n = 1, s += 2;
        } else if (spec) {
            int width = 0;
            bool zero = s[1] == '0';
            for (size_t k = 1; k + 1 < spec; k++) width = width * 10 + (s[k] - '0');
            n = (size_t)snprintf(piece, sizeof piece, zero ? "%0*d" : "%*d", width, index);
            s += spec;
        } else {
            piece[0] = *s++, n = 1;
        }
        if (len + n + 1 > cap) {
            while (len + n + 1 > cap) cap *= 2;
            char *grown = realloc(out, cap);
            if (!grown) {
                free(out);
                return NULL;
            }
            out = grown;
        }
        memcpy(out + len, piece, n);
        len += n;
    }
    out[len] = '\0';
    return out;
}

char *sdc_cli_output_name(const sdc_cli_args *a, int index, int count) {
    const char *path = a->output_path ? a->output_path : "output.png";
    int first = a->output_begin_idx < 0 ? 0 : a->output_begin_idx;
    const char *ext = path_extension(path);
    bool is_image = !strcasecmp(ext, ".png") || !strcasecmp(ext, ".jpg") ||
                    !strcasecmp(ext, ".jpeg") || !strcasecmp(ext, ".jpe");
    /* base = path without a known image extension; unknown ones get ".png" appended */
    size_t base_len = strlen(path) - (is_image ? strlen(ext) : 0);
    const char *suffix = is_image ? ext : ".png";

    char *joined = malloc(base_len + 32 + strlen(suffix));
    if (!joined) return NULL;
    memcpy(joined, path, base_len);
    size_t len = base_len;
    bool pattern = has_index_spec(path);
    if (!pattern && count > 1) len += (size_t)sprintf(joined + len, "_%d", first + index);
    strcpy(joined + len, suffix);
    if (!pattern) return joined;
    char *expanded = expand_index(joined, first + index);
    free(joined);
    return expanded;
}
