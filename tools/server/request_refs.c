#include "request_refs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "sdc.h"

static int fail(char *err, size_t err_size, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t err_size, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err_size) vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return status;
}

void sdc_srv_refs_free(sdc_srv_request *r) {
    for (int i = 0; i < r->n_refs; i++) free(r->refs[i].rgb);
    free(r->refs);
    r->refs = NULL;
    r->n_refs = 0;
}

static int64_t ref_pixels(const sdc_srv_request *r) {
    int64_t sum = 0;
    for (int i = 0; i < r->n_refs; i++) sum += (int64_t)r->refs[i].w * r->refs[i].h;
    return sum;
}

int sdc_srv_ref_add(sdc_srv_request *r, const char *label, const void *data, size_t n,
                    bool is_base64, char *err, size_t err_size) {
    if (r->n_refs >= SDC_SRV_MAX_REF_IMAGES)
        return fail(err, err_size, 400, "%s: at most %d reference images are accepted", label,
                    SDC_SRV_MAX_REF_IMAGES);
    size_t bytes_n = n;
    uint8_t *bytes = NULL;
    if (is_base64) {
        bytes = sdc_srv_base64_decode(data, n, &bytes_n);
        if (!bytes)
            return fail(err, err_size, 400, "%s is not valid base64 (or a base64 data URL)", label);
        data = bytes;
    }
    sdc_image img = {0};
    sdc_status st = sdc_image_decode(data, bytes_n, label, &img);
    free(bytes);
    if (st == SDC_ERR_NO_MEMORY)
        return fail(err, err_size, 500, "out of memory decoding %s", label);
    if (st != SDC_OK)
        return fail(err, err_size, 400, "%s is not a readable PNG or JPEG image: %s", label,
                    sdc_last_error());
    int64_t px = (int64_t)img.width * img.height;
    int status = 0;
    if (px > SDC_SRV_MAX_REF_PIXELS) {
        status =
            fail(err, err_size, 400, "%s is %ux%u; a reference image may have at most %d pixels",
                 label, img.width, img.height, SDC_SRV_MAX_REF_PIXELS);
    } else if (ref_pixels(r) + px > SDC_SRV_MAX_REF_TOTAL_PIXELS) {
        status =
            fail(err, err_size, 400, "%s: the reference images have more than %d pixels together",
                 label, SDC_SRV_MAX_REF_TOTAL_PIXELS);
    } else {
        sdc_srv_image *more = realloc(r->refs, (size_t)(r->n_refs + 1) * sizeof *more);
        if (!more) {
            status = fail(err, err_size, 500, "out of memory");
        } else {
            r->refs = more;
            r->refs[r->n_refs++] = (sdc_srv_image){img.data, (int)img.width, (int)img.height};
            return 0;
        }
    }
    sdc_image_free(&img);
    return status;
}

int sdc_srv_refs_from_json(sdc_srv_request *r, const cJSON *obj, const char *field, char *err,
                           size_t err_size) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!v) return 0;
    sdc_srv_refs_free(r);
    if (cJSON_IsNull(v)) return 0;
    if (!cJSON_IsArray(v))
        return fail(err, err_size, 400, "'%s' must be an array of base64 images", field);
    int n = cJSON_GetArraySize(v);
    if (n > SDC_SRV_MAX_REF_IMAGES)
        return fail(err, err_size, 400, "'%s' has %d images; at most %d are accepted", field, n,
                    SDC_SRV_MAX_REF_IMAGES);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        char label[80];
        snprintf(label, sizeof label, "'%s'[%d]", field, i++);
        if (!cJSON_IsString(e))
            return fail(err, err_size, 400, "%s must be a base64 string", label);
        int rc =
            sdc_srv_ref_add(r, label, e->valuestring, strlen(e->valuestring), true, err, err_size);
        if (rc) return rc;
    }
    return 0;
}

int sdc_srv_refs_fit(sdc_srv_request *r, int w, int h, char *err, size_t err_size) {
    /* small references resized to a large output count too */
    if ((int64_t)r->n_refs * w * h > SDC_SRV_MAX_REF_TOTAL_PIXELS)
        return fail(err, err_size, 400,
                    "%d reference images at %dx%d are more than %d pixels together", r->n_refs, w,
                    h, SDC_SRV_MAX_REF_TOTAL_PIXELS);
    for (int i = 0; i < r->n_refs; i++) {
        sdc_srv_image *ref = &r->refs[i];
        if (ref->w == w && ref->h == h) continue;
        sdc_image in = {(uint32_t)ref->w, (uint32_t)ref->h, 3, ref->rgb, 0}, out = {0};
        sdc_status st = sdc_image_resize(&in, w, h, &out);
        if (st != SDC_OK)
            return fail(err, err_size, st == SDC_ERR_NO_MEMORY ? 500 : 400,
                        "reference image %d: cannot resize it to %dx%d: %s", i, w, h,
                        sdc_last_error());
        free(ref->rgb);
        *ref = (sdc_srv_image){out.data, (int)out.width, (int)out.height};
    }
    return 0;
}
