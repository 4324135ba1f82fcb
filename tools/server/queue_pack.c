/* A job request as bytes: the "req" field of its Redis stream entry (queue_redis.c).
 * Host byte order: the nodes of one queue run on machines of one endianness. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "queue.h"

/* ---- request <-> bytes ---- */

/* Reference images and the layer count follow the fields of the first format ("SDCQ1")
 * in a section of the second ("SDCQ2"); the guidance options (img_cfg, distilled guidance,
 * flow shift, the reference flags) in one more section of the third ("SDCQ3"), after the
 * references. Each is used only when its fields differ from the defaults: plain entries
 * stay readable by nodes that predate them (a rolling upgrade loses no plain job), and
 * the magic says which sections must follow (so no prefix of an entry is another valid
 * entry). */
#define MAGIC_1       "SDCQ1"
#define MAGIC_2       "SDCQ2"
#define MAGIC_3       "SDCQ3"
#define REFS_TAG      "REF1"
#define OPTS_TAG      "OPT1"
#define PACK_LAYERS_0 3 /* the library's qwen_image_layers default */

static bool has_opts(const sdc_srv_request *r) {
    return !isnan(r->img_cfg) || !isnan(r->guidance) || !isnan(r->flow_shift) || r->no_ref_resize ||
           r->increase_ref_index;
}

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    bool bad;
} wbuf;

static void w_put(wbuf *b, const void *src, size_t n) {
    if (b->bad) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->bad = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void w_i64(wbuf *b, int64_t v) {
    w_put(b, &v, sizeof v);
}
static void w_f32(wbuf *b, float v) {
    w_put(b, &v, sizeof v);
}
/* bytes with a length; -1 for NULL */
static void w_bytes(wbuf *b, const void *p, int64_t n) {
    w_i64(b, p ? n : -1);
    if (p && n > 0) w_put(b, p, (size_t)n);
}

uint8_t *sdc_srv_request_pack(const sdc_srv_request *r, size_t *size) {
    wbuf b = {0};
    bool opts = has_opts(r);
    bool refs = opts || r->n_refs > 0 || r->refs_from_edit || r->qwen_image_layers != PACK_LAYERS_0;
    w_put(&b, opts ? MAGIC_3 : refs ? MAGIC_2 : MAGIC_1, 5);
    const int64_t ints[] = {r->width,  r->height, r->steps,  r->batch_count, r->seed,
                            r->init_w, r->init_h, r->mask_w, r->mask_h,      r->size_given};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) w_i64(&b, ints[i]);
    w_f32(&b, r->cfg_scale);
    w_f32(&b, r->strength);
    w_f32(&b, r->eta);
    w_bytes(&b, r->sampler, (int64_t)sizeof r->sampler);
    w_bytes(&b, r->scheduler, (int64_t)sizeof r->scheduler);
    w_bytes(&b, r->prompt, r->prompt ? (int64_t)strlen(r->prompt) : 0);
    w_bytes(&b, r->negative_prompt, r->negative_prompt ? (int64_t)strlen(r->negative_prompt) : 0);
    w_bytes(&b, r->init_rgb, (int64_t)r->init_w * r->init_h * 3);
    w_bytes(&b, r->mask_rgb, (int64_t)r->mask_w * r->mask_h * 3);
    w_bytes(&b, r->sigmas, (int64_t)r->n_sigmas * (int64_t)sizeof(float));
    w_i64(&b, r->clip_skip);
    if (refs) {
        w_put(&b, REFS_TAG, 4);
        w_i64(&b, r->qwen_image_layers);
        w_i64(&b, r->refs_from_edit);
        w_i64(&b, r->n_refs);
        for (int i = 0; i < r->n_refs; i++) {
            const sdc_srv_image *ref = &r->refs[i];
            w_i64(&b, ref->w);
            w_i64(&b, ref->h);
            w_bytes(&b, ref->rgb, (int64_t)ref->w * ref->h * 3);
        }
    }
    if (opts) {
        w_put(&b, OPTS_TAG, 4);
        w_f32(&b, r->img_cfg);
        w_f32(&b, r->guidance);
        w_f32(&b, r->flow_shift);
        w_i64(&b, (r->no_ref_resize ? 1 : 0) | (r->increase_ref_index ? 2 : 0));
    }
    if (b.bad) {
        free(b.p);
        return NULL;
    }
    *size = b.n;
    return b.p;
}

typedef struct rbuf {
    const uint8_t *p;
    size_t n, at;
    bool bad;
} rbuf;

static void r_get(rbuf *b, void *dst, size_t n) {
    if (b->bad || b->n - b->at < n) {
        b->bad = true;
        memset(dst, 0, n);
        return;
    }
    memcpy(dst, b->p + b->at, n);
    b->at += n;
}
static int64_t r_i64(rbuf *b) {
    int64_t v;
    r_get(b, &v, sizeof v);
    return v;
}
/* a copy with a NUL after it (NULL when it was NULL); *len its length */
static uint8_t *r_bytes(rbuf *b, int64_t *len) {
    int64_t n = r_i64(b);
    *len = n;
    if (b->bad || n < 0) return NULL;
    if ((uint64_t)n > b->n - b->at) {
        b->bad = true;
        return NULL;
    }
    uint8_t *p = malloc((size_t)n + 1);
    if (!p) {
        b->bad = true;
        return NULL;
    }
    r_get(b, p, (size_t)n);
    p[n] = 0;
    return p;
}

/* The optional section (see REFS_TAG), checked against the parser's limits. */
static void r_refs(rbuf *b, sdc_srv_request *r) {
    char tag[4];
    r_get(b, tag, 4);
    int64_t layers = r_i64(b), from_edit = r_i64(b), n = r_i64(b);
    if (b->bad || memcmp(tag, REFS_TAG, 4) || layers < 0 || layers > SDC_SRV_MAX_QWEN_LAYERS ||
        (from_edit != 0 && from_edit != 1) || n < 0 || n > SDC_SRV_MAX_REF_IMAGES) {
        b->bad = true;
        return;
    }
    r->qwen_image_layers = (int)layers;
    r->refs_from_edit = from_edit != 0;
    r->refs = n ? calloc((size_t)n, sizeof *r->refs) : NULL;
    if (n && !r->refs) {
        b->bad = true;
        return;
    }
    int64_t total = 0;
    for (int i = 0; i < (int)n && !b->bad; i++) {
        int64_t w = r_i64(b), h = r_i64(b), len = 0;
        if (w < 1 || h < 1 || w > 65536 || h > 65536 || w * h > SDC_SRV_MAX_REF_PIXELS ||
            (total += w * h) > SDC_SRV_MAX_REF_TOTAL_PIXELS) {
            b->bad = true;
            break;
        }
        uint8_t *rgb = r_bytes(b, &len);
        r->refs[r->n_refs++] = (sdc_srv_image){rgb, (int)w, (int)h};
        if (!rgb || len != w * h * 3) b->bad = true;
    }
}

/* The guidance section (see OPTS_TAG): each value NAN (unset) or finite as the parser
 * takes it. */
static void r_opts(rbuf *b, sdc_srv_request *r) {
    char tag[4];
    r_get(b, tag, 4);
    float v[3];
    for (int i = 0; i < 3; i++) r_get(b, &v[i], sizeof(float));
    int64_t flags = r_i64(b);
    if (b->bad || memcmp(tag, OPTS_TAG, 4) || flags < 0 || flags > 3) {
        b->bad = true;
        return;
    }
    for (int i = 0; i < 3; i++)
        if (!isnan(v[i]) && !(fabsf(v[i]) <= 1e6f)) b->bad = true;
    r->img_cfg = v[0];
    r->guidance = v[1];
    r->flow_shift = v[2];
    r->no_ref_resize = flags & 1;
    r->increase_ref_index = (flags & 2) != 0;
}

bool sdc_srv_request_unpack(const uint8_t *buf, size_t size, sdc_srv_request *r) {
    sdc_srv_request_clear(r);
    rbuf b = {buf, size, 0, false};
    char magic[5];
    r_get(&b, magic, 5);
    bool v3 = !b.bad && !memcmp(magic, MAGIC_3, 5);
    bool v2 = v3 || (!b.bad && !memcmp(magic, MAGIC_2, 5));
    if (b.bad || (!v2 && memcmp(magic, MAGIC_1, 5))) return false;
    int64_t ints[10];
    for (int i = 0; i < 10; i++) ints[i] = r_i64(&b);
    const int64_t side = 1 << 16;
    for (int i = 0; i < 10; i++)
        if (i != 4 && (ints[i] < 0 || ints[i] > side)) b.bad = true;
    r->width = (int)ints[0];
    r->height = (int)ints[1];
    r->steps = (int)ints[2];
    r->batch_count = (int)ints[3];
    r->seed = ints[4];
    r->init_w = (int)ints[5];
    r->init_h = (int)ints[6];
    r->mask_w = (int)ints[7];
    r->mask_h = (int)ints[8];
    r->size_given = ints[9] != 0;
    r_get(&b, &r->cfg_scale, sizeof(float));
    r_get(&b, &r->strength, sizeof(float));
    r_get(&b, &r->eta, sizeof(float));
    int64_t n = 0;
    uint8_t *s = r_bytes(&b, &n);
    if (s && n == (int64_t)sizeof r->sampler) memcpy(r->sampler, s, sizeof r->sampler);
    free(s);
    s = r_bytes(&b, &n);
    if (s && n == (int64_t)sizeof r->scheduler) memcpy(r->scheduler, s, sizeof r->scheduler);
    free(s);
    r->sampler[sizeof r->sampler - 1] = r->scheduler[sizeof r->scheduler - 1] = '\0';
    r->prompt = (char *)r_bytes(&b, &n);
    r->negative_prompt = (char *)r_bytes(&b, &n);
    r->init_rgb = r_bytes(&b, &n);
    if (r->init_rgb && n != (int64_t)r->init_w * r->init_h * 3) b.bad = true;
    r->mask_rgb = r_bytes(&b, &n);
    if (r->mask_rgb && n != (int64_t)r->mask_w * r->mask_h * 3) b.bad = true;
    uint8_t *sig = r_bytes(&b, &n);
    r->sigmas = (float *)sig;
    r->n_sigmas = sig ? (int)(n / (int64_t)sizeof(float)) : 0;
    int64_t clip_skip = r_i64(&b);
    if (clip_skip < -1 || clip_skip > 48) b.bad = true;
    r->clip_skip = (int)clip_skip;
    r->qwen_image_layers = PACK_LAYERS_0;
    if (v2) r_refs(&b, r);
    if (v3) r_opts(&b, r);
    if (b.bad || b.at != b.n) {
        sdc_srv_request_free(r);
        return false;
    }
    return true;
}
