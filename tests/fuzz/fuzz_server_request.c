/* Fuzzes sdc-server's request parsing (tools/server/request.c): the first byte picks the
 * API family (JSON bodies of sdcpp, OpenAI generate/edit, A1111 txt2img/img2img, or an
 * OpenAI multipart edit), the rest is the body. Also checks base64 round trips. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    unsigned pick = data[0] % 6;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;

    sdc_srv_defaults d;
    sdc_srv_defaults_init(&d);
    d.max_side = 256; /* keeps resizes of decoded images small */
    sdc_srv_request r;
    char err[256];
    int rc;
    if (pick == 5) {
        rc = sdc_srv_parse_edit_multipart("multipart/form-data; boundary=XyZ", body, len, &d, &r,
                                          err, sizeof err);
    } else {
        rc = sdc_srv_parse_json((sdc_srv_api)pick, body, len, &d, &r, err, sizeof err);
    }
    if (rc == 0) {
        /* a parsed request is always within the limits */
        if (r.width < 8 || r.width > d.max_side || r.height < 8 || r.height > d.max_side ||
            r.steps < 1 || r.steps > d.max_steps || r.batch_count < 1 ||
            r.batch_count > d.max_batch || !r.prompt || !r.negative_prompt)
            abort();
        if (r.init_rgb && (r.init_w != r.width || r.init_h != r.height)) abort();
        if (r.mask_rgb && (!r.init_rgb || r.mask_w != r.width || r.mask_h != r.height)) abort();
        /* references: within their limits, whole */
        if (r.n_refs < 0 || r.n_refs > SDC_SRV_MAX_REF_IMAGES || (r.n_refs && !r.refs) ||
            r.qwen_image_layers < 0 || r.qwen_image_layers > SDC_SRV_MAX_QWEN_LAYERS)
            abort();
        int64_t total = 0;
        for (int i = 0; i < r.n_refs; i++) {
            int64_t px = (int64_t)r.refs[i].w * r.refs[i].h;
            if (!r.refs[i].rgb || r.refs[i].w < 1 || r.refs[i].h < 1 || px > SDC_SRV_MAX_REF_PIXELS)
                abort();
            total += px;
        }
        if (total > SDC_SRV_MAX_REF_TOTAL_PIXELS) abort();
    } else if (rc != 400 && rc != 500) {
        abort();
    }
    sdc_srv_request_free(&r);

    /* base64: encode then decode gives the bytes back */
    char *enc = sdc_srv_base64_encode(data, size);
    if (enc) {
        size_t n = 0;
        uint8_t *dec = sdc_srv_base64_decode(enc, strlen(enc), &n);
        if (!dec || n != size || memcmp(dec, data, size)) abort();
        free(dec);
        free(enc);
    }
    size_t n = 0;
    free(sdc_srv_base64_decode(body, len, &n));
    return 0;
}
