/* Module placement from sd.cpp's assignment syntax: comma-separated entries, each
 * "MODULE=DEVICE" or a bare "DEVICE" (the default for every module not named);
 * all= / default= / *= also set the default. A module's own entry beats the default
 * whatever the order; a later entry for the same key replaces an earlier one. */
#include "placement/placement.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/status.h"
#include "placement/devices.h"

typedef struct module_info {
    const char *name;
    const char *aliases; /* normalised spellings (lower case, no '-' or '_'), ", "-separated */
} module_info;

/* sd.cpp's table (docs/backend.md), in sdc_module order */
static const module_info k_modules[SDC_MODULE_COUNT] = {
    [SDC_MODULE_TE] = {"te", "te, clip, text, textencoder, textencoders, conditioner, cond, llm, "
                             "t5, t5xxl"},
    [SDC_MODULE_DIFFUSION] = {"diffusion", "diffusion, model, unet, dit"},
    [SDC_MODULE_VAE] = {"vae", "vae, firststage, autoencoder, tae"},
    [SDC_MODULE_CLIP_VISION] = {"clip_vision", "clipvision, vision"},
    [SDC_MODULE_CONTROL_NET] = {"controlnet", "controlnet, control"},
    [SDC_MODULE_PHOTOMAKER] = {"photomaker", "photomaker, photomakerid, pmid, photo"},
    [SDC_MODULE_UPSCALER] = {"upscaler", "upscaler, esrgan, hires"},
    [SDC_MODULE_DETECTOR] = {"detector", "detector, adetailer, yolo"},
};

const char *sdc_module_name(sdc_module m) {
    return m >= 0 && m < SDC_MODULE_COUNT ? k_modules[m].name : "unknown";
}

const char *sdc_module_aliases(sdc_module m) {
    return m >= 0 && m < SDC_MODULE_COUNT ? k_modules[m].aliases : "";
}

bool sdc_module_splittable(sdc_module m) {
    return m == SDC_MODULE_DIFFUSION || m == SDC_MODULE_TE;
}

int sdc_module_from_name(const char *name) {
    char norm[64];
    size_t n = 0;
    for (const char *c = name ? name : ""; *c; c++) {
        if (*c == '-' || *c == '_') continue;
        if (n + 1 >= sizeof norm) return -1;
        norm[n++] = (char)tolower((unsigned char)*c);
    }
    norm[n] = 0;
    if (!n) return -1;
    for (int m = 0; m < SDC_MODULE_COUNT; m++) {
        /* whole-word match inside the alias list */
        for (const char *a = k_modules[m].aliases; *a;) {
            size_t len = strcspn(a, ",");
            if (len == n && !strncmp(a, norm, n)) return m;
            a += len;
            while (*a == ',' || *a == ' ') a++;
        }
    }
    return -1;
}

static void module_list(char *buf, size_t size) {
    size_t len = 0;
    buf[0] = 0;
    for (int m = 0; m < SDC_MODULE_COUNT && len < size; m++) {
        int w = snprintf(buf + len, size - len, "%s%s (%s)", m ? "; " : "", k_modules[m].name,
                         k_modules[m].aliases);
        if (w < 0) break;
        len += (size_t)w;
    }
}

/* ---- parsing ---- */

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

static bool is_default_key(const char *k) {
    return !strcasecmp(k, "all") || !strcasecmp(k, "default") || !strcmp(k, "*");
}

/* the value tokens that mean "the default device" */
static bool is_default_device(const char *v) {
    return !*v || !strcasecmp(v, "auto") || !strcasecmp(v, "default");
}

/* The final value per key of one spec: pointers into the caller's copy. */
typedef struct assignment {
    const char *def;                          /* NULL = not given */
    const char *module[SDC_MODULE_COUNT];     /* NULL = follows def */
    const char *module_key[SDC_MODULE_COUNT]; /* the spelling used, for messages */
} assignment;

static sdc_status parse_assignment(const char *flag, char *spec, assignment *a) {
    memset(a, 0, sizeof *a);
    for (char *save = NULL, *tok = strtok_r(spec, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *part = trim(tok);
        if (!*part) continue;
        char *eq = strchr(part, '=');
        if (!eq) {
            a->def = part;
            continue;
        }
        *eq = 0;
        char *key = trim(part), *val = trim(eq + 1);
        if (!*key || !*val)
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "%s: '%s=%s' is malformed (expected MODULE=DEVICE or DEVICE)", flag,
                            key, val);
        if (is_default_key(key)) {
            a->def = val;
            continue;
        }
        int m = sdc_module_from_name(key);
        if (m < 0) {
            char mods[768];
            module_list(mods, sizeof mods);
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "%s: unknown module '%s' in '%s=%s'; modules: %s; all=, default= or "
                            "*= set every module",
                            flag, key, key, val, mods);
        }
        a->module[m] = val;
        a->module_key[m] = key;
    }
    return SDC_OK;
}

/* one device token of a --backend value */
static sdc_status runtime_device(const char *flag, const char *what, const char *tok, bool in_list,
                                 int *index) {
    if (!strcasecmp(tok, "disk"))
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "%s: %s: 'disk' is only valid for --params-backend (where weights "
                        "live), not for where a module runs",
                        flag, what);
    if (is_default_device(tok)) {
        if (in_list)
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "%s: %s: '%s' (the default device) cannot be part of a device list",
                            flag, what, *tok ? tok : "(empty)");
        *index = sdc_devices_default()->index;
        return SDC_OK;
    }
    const sdc_device *d = sdc_devices_find(tok);
    if (!d) return sdc_fail_prefix(SDC_ERR_INVALID_ARG, "%s: %s: ", flag, what);
    *index = d->index;
    return SDC_OK;
}

/* A --backend value ("cpu0" or "cpu0&cpu1") into place->device[]. */
static sdc_status resolve_runtime(const char *flag, const char *what, const char *value,
                                  sdc_module m, bool named, sdc_module_place *place) {
    char buf[256];
    if (strlen(value) >= sizeof buf)
        return sdc_fail(SDC_ERR_INVALID_ARG, "%s: %s: device list too long", flag, what);
    snprintf(buf, sizeof buf, "%s", value);
    bool list = strchr(buf, '&') != NULL;
    place->n_devices = 0;
    for (char *save = NULL, *tok = strtok_r(buf, "&", &save); tok;
         tok = strtok_r(NULL, "&", &save)) {
        char *t = trim(tok);
        if (list && !*t) continue;
        int idx = 0;
        sdc_status s = runtime_device(flag, what, t, list, &idx);
        if (s != SDC_OK) return s;
        bool seen = false; /* "a&a" is one device */
        for (int i = 0; i < place->n_devices; i++) seen |= place->device[i] == idx;
        if (seen) continue;
        if (place->n_devices == SDC_MAX_SPLIT)
            return sdc_fail(SDC_ERR_INVALID_ARG, "%s: %s: more than %d devices", flag, what,
                            SDC_MAX_SPLIT);
        place->device[place->n_devices++] = idx;
    }
    if (!place->n_devices)
        return sdc_fail(SDC_ERR_INVALID_ARG, "%s: %s: empty device list '%s'", flag, what, value);
    if (place->n_devices > 1 && !sdc_module_splittable(m)) {
        /* as sd.cpp: modules without a layer split run on the first device */
        if (named)
            SDC_LOGW("%s: %s cannot be split across devices; it runs on %s", flag,
                     sdc_module_name(m), sdc_devices_get(place->device[0])->name);
        place->n_devices = 1;
    }
    return SDC_OK;
}

/* A --params-backend value ("cpu", "disk", a device) into place->params. */
static sdc_status resolve_params(const char *flag, const char *what, const char *value,
                                 sdc_module_place *place) {
    if (strchr(value, '&'))
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "%s: %s: '%s': device lists are only for --backend (weights live in one "
                        "place)",
                        flag, what, value);
    if (!strcasecmp(value, "disk")) {
        place->params = SDC_PARAMS_DISK;
        place->params_device = -1;
        return SDC_OK;
    }
    const sdc_device *d =
        is_default_device(value) ? sdc_devices_default() : sdc_devices_find(value);
    if (!d) return sdc_fail_prefix(SDC_ERR_INVALID_ARG, "%s: %s: ", flag, what);
    if (d->index == place->device[0]) {
        place->params = SDC_PARAMS_DEVICE;
    } else if (d->kind == SDC_DEVICE_CPU) {
        place->params = SDC_PARAMS_CPU;
    } else {
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "%s: %s: weights on %s while the module runs on %s is not supported "
                        "(use the module's own device, cpu or disk)",
                        flag, what, d->name, sdc_devices_get(place->device[0])->name);
    }
    place->params_device = d->index;
    return SDC_OK;
}

/* "vae=cpu,te=cpu," + spec: the shorthands go first so that explicit entries win */
static char *with_prefix(const char *p1, const char *p2, const char *spec) {
    size_t n = strlen(p1) + strlen(p2) + (spec ? strlen(spec) : 0) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s%s", p1, p2, spec ? spec : "");
    return s;
}

sdc_status sdc_placement_parse_specs(const char *backend, const char *params_backend,
                                     bool clip_on_cpu, bool vae_on_cpu, bool offload_to_cpu,
                                     sdc_placement *out) {
    memset(out, 0, sizeof *out);
    char *rt = with_prefix(vae_on_cpu ? "vae=cpu," : "", clip_on_cpu ? "te=cpu," : "", backend);
    char *pa = with_prefix(offload_to_cpu ? "*=cpu," : "", "", params_backend);
    sdc_status s = SDC_OK;
    if (!rt || !pa) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "placement: out of memory");
        goto done;
    }
    assignment ra, pas;
    if ((s = parse_assignment("--backend", rt, &ra)) != SDC_OK) goto done;
    if ((s = parse_assignment("--params-backend", pa, &pas)) != SDC_OK) goto done;
    for (int m = 0; m < SDC_MODULE_COUNT; m++) {
        sdc_module_place *pl = &out->module[m];
        char what[96] = "";
        const char *v = ra.module[m] ? ra.module[m] : ra.def;
        if (ra.module[m])
            snprintf(what, sizeof what, "'%s=%s'", ra.module_key[m], v);
        else if (v)
            snprintf(what, sizeof what, "'%s'", v);
        if (v) {
            if ((s = resolve_runtime("--backend", what, v, (sdc_module)m, ra.module[m] != NULL,
                                     pl)) != SDC_OK)
                goto done;
        } else {
            pl->device[0] = sdc_devices_default()->index;
            pl->n_devices = 1;
        }
        pl->params = SDC_PARAMS_DEVICE;
        pl->params_device = pl->device[0];
        v = pas.module[m] ? pas.module[m] : pas.def;
        if (pas.module[m])
            snprintf(what, sizeof what, "'%s=%s'", pas.module_key[m], v);
        else if (v)
            snprintf(what, sizeof what, "'%s'", v);
        pl->params_given = v != NULL;
        if (v && (s = resolve_params("--params-backend", what, v, pl)) != SDC_OK) goto done;
    }
done:
    free(rt);
    free(pa);
    return s;
}

/* whether field f lies inside the caller's struct (an older header may lack it) */
#define HAS_FIELD(p, f) ((p)->struct_size >= offsetof(sdc_context_params, f) + sizeof(p)->f)

sdc_status sdc_placement_parse(const sdc_context_params *p, sdc_placement *out) {
    if (!p || !out) return sdc_fail(SDC_ERR_INVALID_ARG, "placement: NULL argument");
    const char *backend = HAS_FIELD(p, backend) ? p->backend : NULL;
    const char *params = HAS_FIELD(p, params_backend) ? p->params_backend : NULL;
    bool clip = HAS_FIELD(p, clip_on_cpu) && p->clip_on_cpu;
    bool vae = HAS_FIELD(p, vae_on_cpu) && p->vae_on_cpu;
    bool offload = HAS_FIELD(p, offload_to_cpu) && p->offload_to_cpu;
    return sdc_placement_parse_specs(backend, params, clip, vae, offload, out);
}

/* ---- description ---- */

static const char *dev_name(int index) {
    const sdc_device *d = sdc_devices_get(index);
    return d ? d->name : "?";
}

static void append(char *buf, size_t size, size_t *len, const char *fmt, const char *a,
                   const char *b) {
    if (*len >= size) return;
    int w = snprintf(buf + *len, size - *len, fmt, a, b);
    if (w > 0) *len += (size_t)w;
    if (*len >= size) *len = size; /* truncated */
}

void sdc_placement_describe_modules(const sdc_placement *pl, unsigned mask, char *buf,
                                    size_t size) {
    if (!size) return;
    buf[0] = 0;
    size_t len = 0;
    for (int m = 0; m < SDC_MODULE_COUNT; m++) {
        if (!(mask & SDC_MODULE_BIT(m))) continue;
        const sdc_module_place *p = &pl->module[m];
        append(buf, size, &len, "%s%s=", len ? " " : "", k_modules[m].name);
        for (int i = 0; i < p->n_devices; i++)
            append(buf, size, &len, "%s%s", i ? "&" : "", dev_name(p->device[i]));
    }
    bool any = false;
    for (int m = 0; m < SDC_MODULE_COUNT; m++) {
        const sdc_module_place *p = &pl->module[m];
        if (!(mask & SDC_MODULE_BIT(m)) || p->params == SDC_PARAMS_DEVICE) continue;
        append(buf, size, &len, "%s%s=", any ? ", " : " (params: ", k_modules[m].name);
        append(buf, size, &len, "%s%s",
               p->params == SDC_PARAMS_DISK ? "disk" : dev_name(p->params_device), "");
        any = true;
    }
    if (any) append(buf, size, &len, "%s%s", ")", "");
}

void sdc_placement_describe(const sdc_placement *pl, char *buf, size_t size) {
    unsigned mask = SDC_MODULE_BIT(SDC_MODULE_TE) | SDC_MODULE_BIT(SDC_MODULE_DIFFUSION) |
                    SDC_MODULE_BIT(SDC_MODULE_VAE);
    const sdc_device *def = sdc_devices_default();
    for (int m = 0; m < SDC_MODULE_COUNT; m++) {
        const sdc_module_place *p = &pl->module[m];
        if (p->n_devices != 1 || p->device[0] != def->index || p->params != SDC_PARAMS_DEVICE)
            mask |= SDC_MODULE_BIT(m);
    }
    sdc_placement_describe_modules(pl, mask, buf, size);
}
