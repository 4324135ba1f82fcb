/* sdc-server's Redis queue entry format (tools/server/queue_pack.c): requests with random
 * fields (prompts, init/mask images, custom sigmas, reference images, layer counts, the
 * guidance options, NULL parts) packed and unpacked are equal field by field to the
 * original; every truncation, a trailing byte, a wrong magic and impossible sizes are
 * refused; a request without references or options packs in the first format (no optional
 * section), one with options only in the third. */
#include "test_util.h"

#include <math.h>
#include <stdint.h>

#include "queue.h"

static unsigned long long g_seed = 12345;

static int rnd(int n) {
    return (int)(t_randf(&g_seed) * 0.5f * (float)n + 0.5f * (float)n) % n;
}

static char *rnd_str(int n) {
    char *s = malloc((size_t)n + 1);
    for (int i = 0; i < n; i++) s[i] = (char)(1 + rnd(255)); /* any byte but NUL */
    s[n] = 0;
    return s;
}

static void make_request(sdc_srv_request *r, int variant) {
    sdc_srv_request_clear(r);
    if (variant % 6 == 5) { /* the guidance options, some of them */
        r->img_cfg = variant % 4 ? 1.0f + t_randf(&g_seed) : NAN;
        r->guidance = variant % 5 ? 3.5f : NAN;
        r->flow_shift = variant % 7 ? 2.0f + t_randf(&g_seed) : NAN;
        r->no_ref_resize = variant % 2;
        r->increase_ref_index = variant % 3 == 2;
    }
    r->width = 8 * (1 + rnd(64));
    r->height = 8 * (1 + rnd(64));
    r->steps = 1 + rnd(150);
    r->batch_count = 1 + rnd(8);
    r->cfg_scale = t_randf(&g_seed) * 10.0f;
    r->strength = 0.5f + 0.5f * t_randf(&g_seed);
    r->eta = variant % 2 ? NAN : t_randf(&g_seed);
    r->seed = (int64_t)rnd(1 << 30) * (variant % 3 ? -1 : 1) * 12345;
    snprintf(r->sampler, sizeof r->sampler, "%s", variant % 2 ? "euler_a" : "");
    snprintf(r->scheduler, sizeof r->scheduler, "%s", variant % 3 ? "karras" : "");
    r->prompt = rnd_str(rnd(300));
    r->negative_prompt = variant % 4 ? rnd_str(rnd(50)) : NULL;
    r->size_given = variant % 2;
    if (variant % 3 == 1) {
        r->init_w = r->width;
        r->init_h = r->height;
        size_t n = (size_t)r->init_w * r->init_h * 3;
        r->init_rgb = malloc(n);
        for (size_t i = 0; i < n; i++) r->init_rgb[i] = (uint8_t)rnd(256);
        if (variant % 2) {
            r->mask_w = r->init_w;
            r->mask_h = r->init_h;
            r->mask_rgb = malloc(n);
            for (size_t i = 0; i < n; i++) r->mask_rgb[i] = (uint8_t)rnd(256);
        }
    }
    r->qwen_image_layers = variant % 7 == 3 ? rnd(65) : 3;
    if (variant % 4 == 1) { /* 1..3 references of their own sizes */
        r->n_refs = 1 + rnd(3);
        r->refs = calloc((size_t)r->n_refs, sizeof *r->refs);
        for (int i = 0; i < r->n_refs; i++) {
            sdc_srv_image *ref = &r->refs[i];
            ref->w = 1 + rnd(40);
            ref->h = 1 + rnd(40);
            size_t n = (size_t)ref->w * ref->h * 3;
            ref->rgb = malloc(n);
            for (size_t k = 0; k < n; k++) ref->rgb[k] = (uint8_t)rnd(256);
        }
        r->refs_from_edit = variant % 3 == 0;
    }
    if (variant % 5 == 2) {
        r->n_sigmas = 2 + rnd(20);
        r->sigmas = malloc(sizeof(float) * (size_t)r->n_sigmas);
        for (int i = 0; i < r->n_sigmas; i++) r->sigmas[i] = t_randf(&g_seed) * 14.0f;
    }
}

static bool same_f(float a, float b) {
    return (isnan(a) && isnan(b)) || a == b;
}

static bool same_str(const char *a, const char *b) {
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool same_bytes(const void *a, const void *b, size_t n) {
    return (!a && !b) || (a && b && !memcmp(a, b, n));
}

static bool same_refs(const sdc_srv_request *a, const sdc_srv_request *b) {
    if (a->n_refs != b->n_refs || a->refs_from_edit != b->refs_from_edit ||
        a->qwen_image_layers != b->qwen_image_layers)
        return false;
    for (int i = 0; i < a->n_refs; i++)
        if (a->refs[i].w != b->refs[i].w || a->refs[i].h != b->refs[i].h ||
            !same_bytes(a->refs[i].rgb, b->refs[i].rgb, (size_t)a->refs[i].w * a->refs[i].h * 3))
            return false;
    return true;
}

static bool equal(const sdc_srv_request *a, const sdc_srv_request *b) {
    return same_refs(a, b) && same_f(a->img_cfg, b->img_cfg) && same_f(a->guidance, b->guidance) &&
           same_f(a->flow_shift, b->flow_shift) && a->no_ref_resize == b->no_ref_resize &&
           a->increase_ref_index == b->increase_ref_index && a->width == b->width &&
           a->height == b->height && a->steps == b->steps && a->batch_count == b->batch_count &&
           same_f(a->cfg_scale, b->cfg_scale) && same_f(a->strength, b->strength) &&
           same_f(a->eta, b->eta) && a->seed == b->seed && !strcmp(a->sampler, b->sampler) &&
           !strcmp(a->scheduler, b->scheduler) && same_str(a->prompt, b->prompt) &&
           same_str(a->negative_prompt, b->negative_prompt) && a->size_given == b->size_given &&
           a->init_w == b->init_w && a->init_h == b->init_h &&
           same_bytes(a->init_rgb, b->init_rgb, (size_t)a->init_w * a->init_h * 3) &&
           a->mask_w == b->mask_w && a->mask_h == b->mask_h &&
           same_bytes(a->mask_rgb, b->mask_rgb, (size_t)a->mask_w * a->mask_h * 3) &&
           a->n_sigmas == b->n_sigmas &&
           same_bytes(a->sigmas, b->sigmas, sizeof(float) * (size_t)a->n_sigmas);
}

/* The optional section of a packed request: where its tag starts, or 0 when it has none. */
static size_t refs_section(const uint8_t *buf, size_t n) {
    for (size_t i = n >= 4 ? n - 4 : 0; i > 5; i--)
        if (!memcmp(buf + i, "REF1", 4)) return i;
    return 0;
}

/* Where the options section's tag starts, or 0. */
static size_t opts_section(const uint8_t *buf, size_t n) {
    return n >= 24 && !memcmp(buf + n - 24, "OPT1", 4) ? n - 24 : 0;
}

/* Broken option sections: a wrong tag, unknown flags, an infinite or huge value; and the
 * third format's magic on an entry without the section. Returns how many were accepted. */
static int broken_opts_accepted(void) {
    sdc_srv_request r, back;
    sdc_srv_request_clear(&r);
    r.width = r.height = 64;
    r.steps = r.batch_count = 1;
    r.qwen_image_layers = 3;
    r.prompt = rnd_str(5);
    r.img_cfg = 1.5f;
    size_t n = 0;
    uint8_t *buf = sdc_srv_request_pack(&r, &n);
    size_t at = buf ? opts_section(buf, n) : 0;
    int accepted = 0;
    CHECK(at > 0 && !memcmp(buf, "SDCQ3", 5), "options alone: the third format, section last");
    CHECK(at > 0 && sdc_srv_request_unpack(buf, n, &back) && back.img_cfg == 1.5f &&
              isnan(back.flow_shift) && !back.no_ref_resize,
          "the options section reads back");
    sdc_srv_request_free(&back);
    float inf = INFINITY, huge = 1e7f;
    int64_t flags[] = {4, -1};
    for (int e = 0; at && e < 5; e++) {
        uint8_t *copy = malloc(n);
        memcpy(copy, buf, n);
        if (e == 0) copy[at] = 'X';
        if (e == 1) memcpy(copy + at + 4, &inf, sizeof inf);
        if (e == 2) memcpy(copy + at + 12, &huge, sizeof huge);
        if (e >= 3) memcpy(copy + at + 16, &flags[e - 3], sizeof(int64_t));
        if (sdc_srv_request_unpack(copy, n, &back)) accepted++;
        sdc_srv_request_free(&back);
        free(copy);
    }
    if (at) { /* SDCQ3 without its section; SDCQ2 with one too many */
        if (sdc_srv_request_unpack(buf, at, &back)) accepted++;
        sdc_srv_request_free(&back);
        buf[4] = '2';
        if (sdc_srv_request_unpack(buf, n, &back)) accepted++;
        sdc_srv_request_free(&back);
    }
    free(buf);
    sdc_srv_request_free(&r);
    return accepted;
}

/* Broken optional sections: a wrong tag, too many references, a layer count out of range,
 * a reference size that disagrees with its bytes. Returns how many were accepted. */
static int broken_refs_accepted(void) {
    sdc_srv_request r, back;
    sdc_srv_request_clear(&r);
    r.width = r.height = 64;
    r.steps = r.batch_count = 1;
    r.prompt = rnd_str(5);
    r.qwen_image_layers = 2;
    r.n_refs = 1;
    r.refs = calloc(1, sizeof *r.refs);
    r.refs[0] = (sdc_srv_image){calloc(6 * 4 * 3, 1), 6, 4};
    size_t n = 0;
    uint8_t *buf = sdc_srv_request_pack(&r, &n);
    size_t at = buf ? refs_section(buf, n) : 0;
    int accepted = 0;
    CHECK(at > 0, "a request with a reference has the optional section");
    /* offsets in the section: tag 0, layers 4, from_edit 12, count 20, w 28, h 36 */
    static const struct {
        size_t off;
        int64_t value;
    } edits[] = {{4, -1}, {4, 65}, {12, 2}, {20, 9}, {20, -1}, {28, 7}, {36, 0}, {28, 1 << 20}};
    for (size_t e = 0; at && e < sizeof edits / sizeof edits[0]; e++) {
        uint8_t *copy = malloc(n);
        memcpy(copy, buf, n);
        memcpy(copy + at + edits[e].off, &edits[e].value, sizeof(int64_t));
        if (sdc_srv_request_unpack(copy, n, &back)) accepted++;
        sdc_srv_request_free(&back);
        if (e == 0) { /* and a wrong tag */
            copy[at] = 'X';
            memcpy(copy + at + 4, buf + at + 4, 8);
            if (sdc_srv_request_unpack(copy, n, &back)) accepted++;
            sdc_srv_request_free(&back);
        }
        free(copy);
    }
    free(buf);
    sdc_srv_request_free(&r);
    return accepted;
}

int main(void) {
    int mismatched = 0, accepted_broken = 0, cases = 60, with_refs = 0, plain_sections = 0;
    int with_opts = 0, opts_missing = 0;
    size_t largest = 0;
    for (int v = 0; v < cases; v++) {
        sdc_srv_request r, back;
        make_request(&r, v);
        size_t n = 0;
        uint8_t *buf = sdc_srv_request_pack(&r, &n);
        if (n > largest) largest = n;
        bool opts = !isnan(r.img_cfg) || !isnan(r.guidance) || !isnan(r.flow_shift) ||
                    r.no_ref_resize || r.increase_ref_index;
        bool plain = !r.n_refs && !r.refs_from_edit && r.qwen_image_layers == 3 && !opts;
        with_opts += opts;
        if (buf && opts && !opts_section(buf, n)) opts_missing++;
        with_refs += r.n_refs > 0;
        if (buf && plain && refs_section(buf, n)) plain_sections++;
        if (!buf || !sdc_srv_request_unpack(buf, n, &back) || !equal(&r, &back)) mismatched++;
        sdc_srv_request_free(&back);
        /* every strict prefix is refused (a few per case, and all for small ones) */
        int step = n > 400 ? (int)(n / 97) : 1;
        for (size_t cut = 0; buf && cut < n; cut += (size_t)step) {
            if (sdc_srv_request_unpack(buf, cut, &back)) accepted_broken++;
            sdc_srv_request_free(&back);
        }
        if (buf) {
            uint8_t *longer = malloc(n + 1);
            memcpy(longer, buf, n);
            longer[n] = 0;
            if (sdc_srv_request_unpack(longer, n + 1, &back)) accepted_broken++;
            sdc_srv_request_free(&back);
            longer[0] ^= 1; /* magic */
            if (sdc_srv_request_unpack(longer, n, &back)) accepted_broken++;
            sdc_srv_request_free(&back);
            memcpy(longer, buf, n);
            int64_t huge = (int64_t)1 << 40; /* width field */
            memcpy(longer + 5, &huge, sizeof huge);
            if (sdc_srv_request_unpack(longer, n, &back)) accepted_broken++;
            sdc_srv_request_free(&back);
            free(longer);
        }
        free(buf);
        sdc_srv_request_free(&r);
    }
    int refs_broken = broken_refs_accepted(), opts_broken = broken_opts_accepted();
    printf("options: %d requests with them, %d without their section, %d broken option "
           "sections accepted\n",
           with_opts, opts_missing, opts_broken);
    CHECK(with_opts > 0 && opts_missing == 0, "requests with options carry their section");
    CHECK(opts_broken == 0, "broken option sections refused");
    printf("pack/unpack: %d requests (%d with references; largest %zu bytes), %d differ after "
           "the round trip, %d broken buffers accepted, %d broken reference sections accepted, "
           "%d plain requests with a reference section\n",
           cases, with_refs, largest, mismatched, accepted_broken, refs_broken, plain_sections);
    CHECK(refs_broken == 0, "broken reference sections refused");
    CHECK(plain_sections == 0, "requests without references pack in the first format");
    CHECK(mismatched == 0, "every request equals its round trip");
    CHECK(accepted_broken == 0, "truncated, extended, wrong-magic and oversized buffers refused");
    TEST_MAIN_END();
}
