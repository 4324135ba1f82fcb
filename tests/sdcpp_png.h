/* What the end-to-end tests against sd.cpp's PNGs share: runs.json field readers and the
 * per-pixel comparison with one of sd-cli's images. */
#ifndef SDC_TESTS_SDCPP_PNG_H
#define SDC_TESTS_SDCPP_PNG_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "io/image.h"
#include "sdc.h"
#include "test_util.h"

/* A reduced random checkpoint of one kind (tests/golden/make_sd_reduced.py: "sd2", "sdxl",
 * "sd1inpaint", ...) in $SDC_SD_REDUCED_DIR (default BUILD/sd_reduced): found, or generated
 * there (never a half-written file); false if neither. */
static inline bool sdcpp_reduced_checkpoint(const char *kind, const char *file, char *path,
                                            size_t n) {
    const char *dir = getenv("SDC_SD_REDUCED_DIR");
    char def[512];
    snprintf(def, sizeof def, "%s/sd_reduced", SDC_BINARY_DIR);
    if (!dir) dir = def;
    snprintf(path, n, "%s/%s", dir, file);
    struct stat st;
    if (stat(path, &st) == 0) return true;
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && python3 '%s/tests/golden/make_sd_reduced.py' %s '%s.part' "
             ">/dev/null && mv '%s.part' '%s'",
             dir, SDC_SOURCE_DIR, kind, path, path, path);
    printf("generating %s: %s\n", path, cmd);
    fflush(stdout);
    if (system(cmd) != 0 || stat(path, &st) != 0) {
        printf("could not generate %s (needs python3 with numpy)\n", path);
        return false;
    }
    return true;
}

static inline const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}
static inline double jnum(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* The generation settings every runs.json entry records (sd-cli's -p -n -W -H --steps
 * --cfg-scale -s --sampling-method; --img-cfg-scale and --ref-image-args where it has
 * "img_cfg" / "ref_image_args") into p, after
 * sdc_generate_params_init. */
static inline void sdcpp_params_from_run(const cJSON *run, sdc_generate_params *p) {
    sdc_generate_params_init(p);
    p->prompt = jstr(run, "prompt");
    p->negative_prompt = jstr(run, "negative_prompt");
    p->width = (int)jnum(run, "W");
    p->height = (int)jnum(run, "H");
    p->steps = (int)jnum(run, "steps");
    p->cfg_scale = (float)jnum(run, "cfg");
    p->seed = (int64_t)jnum(run, "seed");
    p->sampling_method = jstr(run, "sampler");
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(run, "img_cfg")))
        p->img_cfg_scale = (float)jnum(run, "img_cfg");
    p->ref_image_args = jstr(run, "ref_image_args");
}

/* tol: max per-pixel difference allowed (3, the bar, unless runs.json gives a
 * measured "max_tol" for a known gap); mean_tol: 0 = not checked */
static inline void compare(const char *id, const sdc_image *img, const char *png, int tol,
                           double mean_tol) {
    uint8_t *ref = NULL;
    int rw = 0, rh = 0;
    CHECK(sdc_png_read(png, &ref, &rw, &rh) == SDC_OK, "read %s", png);
    if (!ref) return;
    CHECK(rw == (int)img->width && rh == (int)img->height, "%s: %ux%u, sd.cpp's is %dx%d", id,
          img->width, img->height, rw, rh);
    if (rw == (int)img->width && rh == (int)img->height) {
        int maxd = 0;
        long total = (long)rw * rh * 3, over1 = 0;
        double sum = 0;
        for (long i = 0; i < total; i++) {
            int d = abs((int)img->data[i] - (int)ref[i]);
            if (d > maxd) maxd = d;
            over1 += d > 1;
            sum += d;
        }
        printf("%s %dx%d: max |diff| %d/255 (tolerance %d), mean %.3f, %.3f%% differ by > 1\n", id,
               rw, rh, maxd, tol, sum / total, 100.0 * over1 / total);
        CHECK(maxd <= tol, "%s: max pixel difference %d > %d", id, maxd, tol);
        CHECK(mean_tol <= 0 || sum / total <= mean_tol, "%s: mean difference %.3f > %.3f", id,
              sum / total, mean_tol);
    }
    free(ref);
}

#endif
