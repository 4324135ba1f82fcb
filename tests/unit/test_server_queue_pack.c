/* sdc-server's Redis queue entry format (tools/server/queue_pack.c): requests with random
 * fields (prompts, init/mask images, custom sigmas, NULL parts) packed and unpacked are
 * equal field by field to the original; every truncation, a trailing byte, a wrong magic
 * and impossible sizes are refused. */
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
    memset(r, 0, sizeof *r);
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

static bool equal(const sdc_srv_request *a, const sdc_srv_request *b) {
    return a->width == b->width && a->height == b->height && a->steps == b->steps &&
           a->batch_count == b->batch_count && same_f(a->cfg_scale, b->cfg_scale) &&
           same_f(a->strength, b->strength) && same_f(a->eta, b->eta) && a->seed == b->seed &&
           !strcmp(a->sampler, b->sampler) && !strcmp(a->scheduler, b->scheduler) &&
           same_str(a->prompt, b->prompt) && same_str(a->negative_prompt, b->negative_prompt) &&
           a->size_given == b->size_given && a->init_w == b->init_w && a->init_h == b->init_h &&
           same_bytes(a->init_rgb, b->init_rgb, (size_t)a->init_w * a->init_h * 3) &&
           a->mask_w == b->mask_w && a->mask_h == b->mask_h &&
           same_bytes(a->mask_rgb, b->mask_rgb, (size_t)a->mask_w * a->mask_h * 3) &&
           a->n_sigmas == b->n_sigmas &&
           same_bytes(a->sigmas, b->sigmas, sizeof(float) * (size_t)a->n_sigmas);
}

int main(void) {
    int mismatched = 0, accepted_broken = 0, cases = 60;
    size_t largest = 0;
    for (int v = 0; v < cases; v++) {
        sdc_srv_request r, back;
        make_request(&r, v);
        size_t n = 0;
        uint8_t *buf = sdc_srv_request_pack(&r, &n);
        if (n > largest) largest = n;
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
    printf("pack/unpack: %d requests (largest %zu bytes), %d differ after the round trip, %d "
           "broken buffers accepted\n",
           cases, largest, mismatched, accepted_broken);
    CHECK(mismatched == 0, "every request equals its round trip");
    CHECK(accepted_broken == 0, "truncated, extended, wrong-magic and oversized buffers refused");
    TEST_MAIN_END();
}
