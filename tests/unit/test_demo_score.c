/* The demo scorer (tools/demo/score.c) against ground truth it did not make: every held-back
 * caption rendered by the data generator (tools/demo/make_data.py, through
 * tests/golden/gen_demo_truth.py), nominal and with the training jitter. It must read them
 * right, still read them under pixel noise, and reject them against wrong captions. Also the
 * caption grammar and the held-back set against the spec's rule. */
#include <math.h>

#include "score.h"
#include "test_util.h"

#include "sdc.h"

#define ATLAS   SDC_SOURCE_DIR "/tests/data/demo/heldback_truth.png"
#define CAPTION SDC_SOURCE_DIR "/tests/data/demo/heldback_truth.txt"
#define COLS    24
#define MAX     1024

static char caps[MAX][128];

static int read_captions(void) {
    FILE *f = fopen(CAPTION, "r");
    int n = 0;
    if (!f) return 0;
    while (n < MAX && fgets(caps[n], sizeof caps[n], f)) {
        caps[n][strcspn(caps[n], "\n")] = '\0';
        if (caps[n][0]) n++;
    }
    fclose(f);
    return n;
}

/* Tile i of the atlas into tile (64x64 RGB), with uniform noise of +-amp added (0: none). */
static void get_tile(const sdc_image *atlas, int i, int amp, unsigned long long *rng,
                     uint8_t *tile) {
    int r = i / COLS, c = i % COLS;
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++)
            for (int ch = 0; ch < 3; ch++) {
                int v = atlas->data[((size_t)(r * 64 + y) * atlas->width + c * 64 + x) * 3 + ch];
                if (amp) v += (int)lround(amp * t_randf(rng));
                tile[(y * 64 + x) * 3 + ch] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
}

/* Scores tiles [first, first+n) against caption perm(i); returns the tally. */
static demo_tally score_range(const sdc_image *atlas, int first, int n, int amp, bool shuffle) {
    demo_tally t = {0};
    unsigned long long rng = 0x9e3779b97f4a7c15ULL;
    uint8_t tile[64 * 64 * 3];
    for (int k = 0; k < n; k++) {
        int i = first + k, j = shuffle ? first + (int)(((long)k * 97 + 13) % n) : i;
        demo_spec want;
        if (!demo_parse_caption(caps[j], &want)) {
            CHECK(0, "caption %d '%s' does not parse", j, caps[j]);
            continue;
        }
        get_tile(atlas, i, amp, &rng, tile);
        demo_reading r;
        CHECK(demo_score_image(tile, 64, 64, &want, &r), "tile %d not scored", i);
        demo_tally_add(&t, &r);
        if (!shuffle && !amp && !(r.ok[0] && r.ok[1] && r.ok[2] && r.ok[3] && r.ok[4]))
            printf("  misread tile %d '%s': fill %.2f widen %.2f area %d centre %.1f,%.1f\n", i,
                   caps[j], r.fill, r.widen, r.area, r.cx, r.cy);
    }
    return t;
}

static void test_grammar(void) {
    demo_spec s, all[300];
    int n = demo_split_specs(true, all, 300), n_train = demo_split_specs(false, NULL, 0);
    /* the spec's rule restated: (7c + 3s + 5b) % 11 == 0, c != b; x 3 sizes x 5 positions */
    int triples = 0;
    for (int c = 0; c < 8; c++)
        for (int sh = 0; sh < 3; sh++)
            for (int b = 0; b < 8; b++) triples += c != b && (7 * c + 3 * sh + 5 * b) % 11 == 0;
    printf("held-back scenes %d (triples %d), training scenes %d\n", n, triples, n_train);
    CHECK(n == triples * 15 && n_train == (8 * 7 * 3 - triples) * 15, "split sizes %d %d", n,
          n_train);
    int round_trip = 0;
    for (int i = 0; i < n; i++) {
        char buf[128];
        demo_caption(&all[i], buf, sizeof buf);
        round_trip += demo_parse_caption(buf, &s) && !memcmp(&s, &all[i], sizeof s);
    }
    CHECK(round_trip == n, "caption round trip %d of %d", round_trip, n);
    CHECK(demo_parse_caption("a large purple triangle at the bottom on a red background", &s) &&
              s.colour == 7 && s.shape == 2 && s.bg == 0 && s.size == DEMO_LARGE &&
              s.pos == DEMO_BOTTOM,
          "parse of a full caption");
    CHECK(demo_parse_caption("a green square in the centre on a white background", &s) &&
              s.pos == DEMO_CENTRE && s.size == DEMO_MEDIUM,
          "'in the centre' is the centre");
    CHECK(!demo_parse_caption("a red circle on a red background", &s), "same colours refused");
    CHECK(!demo_parse_caption("a red circle and a blue square on a yellow background", &s),
          "two shapes are not scored");
    CHECK(!demo_parse_caption("a red circle on a blue and white striped background", &s),
          "stripes are not scored");
    CHECK(!demo_parse_caption("a red circle on a blue backgroundx", &s), "trailing text refused");
}

/* A 64x64 red-on-blue picture of one shape (0 circle, 1 square, 2 triangle; half-extent
 * 14 at the centre) plus `extra`: 1 one-pixel spurs (a row along the top edge 4 px wider
 * each side, a 3-px column above it, a dotted row above that, a 5-px line out of the
 * right side), 2 a solid 5-px bar along the top, 5 px wider each side. */
static void draw_shape(int shape, int extra, uint8_t *rgb) {
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++) {
            const double dx = x + 0.5 - 32, dy = y + 0.5 - 32;
            bool in = shape == 0   ? dx * dx + dy * dy <= 14.0 * 14
                      : shape == 1 ? fabs(dx) <= 14.5 && fabs(dy) <= 14.5
                                   : fabs(dy) <= 14 && fabs(dx) <= 0.5 * (dy + 14) + 0.5;
            if (extra == 1)
                in |= (y == 17 && x >= 13 && x <= 50) || (x == 40 && y >= 14 && y < 17) ||
                      (y == 12 && x >= 16 && x <= 48 && x % 3 == 0) ||
                      (y == 32 && x >= 32 && x <= 51);
            if (extra == 2) in |= y >= 13 && y <= 17 && x >= 13 && x <= 51;
            const uint8_t *c = demo_palette[in ? 0 : 2];
            memcpy(rgb + 3 * (y * 64 + x), c, 3);
        }
}

/* The outline ignores parts thinner than 3 px (stray rows and spurs along an edge), not
 * thick ones. */
static void test_spurs(void) {
    static uint8_t rgb[64 * 64 * 3];
    for (int shape = 0; shape < 3; shape++) {
        demo_spec want = {0, shape, 2, DEMO_MEDIUM, DEMO_CENTRE};
        demo_reading r;
        draw_shape(shape, 1, rgb);
        CHECK(demo_score_image(rgb, 64, 64, &want, &r) && r.ok[DEMO_ATTR_SHAPE] &&
                  r.ok[DEMO_ATTR_SIZE] && r.ok[DEMO_ATTR_POS],
              "%s with one-pixel spurs read as %s (fill %.2f widen %.2f)", demo_shape_names[shape],
              r.found.shape >= 0 ? demo_shape_names[r.found.shape] : "-", r.fill, r.widen);
    }
    demo_spec sq = {0, 1, 2, DEMO_MEDIUM, DEMO_CENTRE};
    demo_reading r;
    draw_shape(1, 2, rgb); /* fill (841 + 195) / (39 * 34) = 0.78: not a square any more */
    CHECK(demo_score_image(rgb, 64, 64, &sq, &r) && !r.ok[DEMO_ATTR_SHAPE],
          "square with a 5-px bar still read as a square (fill %.2f)", r.fill);
}

int main(void) {
    test_grammar();
    test_spurs();
    int n = read_captions();
    sdc_image atlas = {0};
    if (sdc_image_load(ATLAS, &atlas) != SDC_OK) {
        CHECK(0, "%s", sdc_last_error());
        TEST_MAIN_END();
    }
    int half = n / 2;
    CHECK(half == demo_split_specs(true, NULL, 0) + 48, /* + "in the centre" spelled out */
          "%d captions per half", half);
    char line[512];
    const char *names[4] = {"nominal", "jittered", "nominal + noise +-40", "jittered, shuffled"};
    demo_tally t[4] = {
        score_range(&atlas, 0, half, 0, false), score_range(&atlas, half, half, 0, false),
        score_range(&atlas, 0, half, 40, false), score_range(&atlas, half, half, 0, true)};
    for (int k = 0; k < 4; k++) printf("%-22s %s\n", names[k], demo_tally_line(&t[k], line, 512));
    /* the truth is flat colour: every attribute must be read right (measured 100%) */
    for (int a = 0; a < 7; a++) {
        CHECK(demo_tally_percent(&t[0], a) == 100.0, "nominal: %.1f%%",
              demo_tally_percent(&t[0], a));
        CHECK(demo_tally_percent(&t[1], a) == 100.0, "jitter: %.1f%%",
              demo_tally_percent(&t[1], a));
    }
    /* noise: measured 100% at uniform +-40 (99.0% csb with jitter + Gaussian sigma 25) */
    CHECK(demo_tally_percent(&t[2], 5) >= 97.0, "noise: csb %.1f%%", demo_tally_percent(&t[2], 5));
    /* wrong captions: measured 0% csb, shape ~30% (a third by chance) */
    CHECK(demo_tally_percent(&t[3], 5) <= 10.0, "shuffled: csb %.1f%%",
          demo_tally_percent(&t[3], 5));
    sdc_image_free(&atlas);
    TEST_MAIN_END();
}
