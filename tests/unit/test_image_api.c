/* The public image API (sdc_image_* in sdc.h) against independent references:
 * - JPEG decoding against Pillow's decodes of Pillow-written files (baseline 4:2:0 and
 *   4:4:4, progressive, gray, Adobe CMYK; tests/golden/gen_image_refs.py);
 * - JPEG encoding: PSNR of our encode+decode against Pillow's at the same quality;
 * - "parameters" text: our PNG/JPEG round trips, and files written by Pillow (tEXt,
 *   zTXt, iTXt, EXIF UserComment in A1111's UTF-16, sd.cpp's COM segment);
 * - resizing against a double-precision area-average reference (and Pillow's BOX filter
 *   in linear light for integer ratios);
 * - every truncation of a small JPEG, and damaged headers, refused with a message. */
#include "test_util.h"

#include <stdint.h>

#include "sdc.h"

#define DATA(name) SDC_SOURCE_DIR "/tests/data/images/" name
#define TMP(name)  SDC_BINARY_DIR "/test_image_api_" name

/* the texts gen_image_refs.py stores */
static const char PARAMS_ASCII[] = "a cat\nNegative prompt: dog\nSteps: 4, Sampler: euler, CFG "
                                   "scale: 6, Seed: 42, Size: 48x40";
static const char PARAMS_UNICODE[] = "un chat caf\xc3\xa9 \xe7\x8c\xab \xf0\x9f\x90\xb1\nSteps: 4, "
                                     "Seed: 7";

static int load(const char *path, sdc_image *img) {
    sdc_status st = sdc_image_load(path, img);
    CHECK(st == SDC_OK, "load %s: %s", path, sdc_last_error());
    return st == SDC_OK;
}

typedef struct diff {
    int max;
    long count;
} diff;

static diff compare(const sdc_image *a, const sdc_image *b) {
    diff d = {0, 0};
    size_t n = (size_t)a->width * a->height * a->channels;
    for (size_t i = 0; i < n; i++) {
        int e = abs((int)a->data[i] - (int)b->data[i]);
        if (e > d.max) d.max = e;
        d.count += e != 0;
    }
    return d;
}

static double psnr(const sdc_image *a, const sdc_image *b) {
    size_t n = (size_t)a->width * a->height * a->channels;
    double se = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)a->data[i] - (double)b->data[i];
        se += e * e;
    }
    return se == 0 ? INFINITY : 10 * log10(255.0 * 255.0 / (se / (double)n));
}

/* Our decoder against Pillow's on the same files: both run libjpeg's integer IDCT and
 * fancy upsampling, so they agree exactly (measured: 0 bytes differ). CMYK -> RGB is
 * computed by each on its own; on these pixels the roundings agree too. */
static void test_decode_vs_pillow(void) {
    static const struct {
        const char *name;
        int max_diff;
    } cases[] = {{"q90", 0}, {"q95_444", 0}, {"progressive", 0}, {"gray", 0}, {"cmyk", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char jpg[512], ref[512];
        snprintf(jpg, sizeof jpg, DATA("%s.jpg"), cases[i].name);
        snprintf(ref, sizeof ref, DATA("%s.pillow.png"), cases[i].name);
        sdc_image a = {0}, b = {0};
        if (load(jpg, &a) && load(ref, &b)) {
            CHECK(a.width == b.width && a.height == b.height && a.channels == 3,
                  "%s: %ux%ux%u, Pillow %ux%u", cases[i].name, a.width, a.height, a.channels,
                  b.width, b.height);
            if (a.width == b.width && a.height == b.height) {
                diff d = compare(&a, &b);
                printf("decode %-12s %ux%u vs Pillow: max |diff| %d, %ld of %u bytes differ "
                       "(bound %d)\n",
                       cases[i].name, a.width, a.height, d.max, d.count, a.width * a.height * 3,
                       cases[i].max_diff);
                CHECK(d.max <= cases[i].max_diff, "%s: max diff %d > %d", cases[i].name, d.max,
                      cases[i].max_diff);
            }
        }
        sdc_image_free(&a);
        sdc_image_free(&b);
        CHECK(a.data == NULL && a.width == 0, "sdc_image_free did not zero the image");
    }
}

/* Encode with ours, decode with ours, PSNR against the source; Pillow's file at the same
 * quality and subsampling is the yardstick. */
static void test_encode_psnr(void) {
    sdc_image src = {0};
    if (!load(DATA("src.png"), &src)) return;
    static const struct {
        int quality;
        const char *pillow;
    } cases[] = {{90, "q90"}, {95, "q95_444"}};
    for (int i = 0; i < 2; i++) {
        void *enc = NULL;
        size_t n = 0;
        sdc_status st = sdc_image_encode(&src, SDC_IMAGE_JPEG, cases[i].quality, NULL, &enc, &n);
        CHECK(st == SDC_OK && enc && n > 0, "encode q%d: %s", cases[i].quality, sdc_last_error());
        sdc_image dec = {0}, ref = {0};
        char path[512];
        snprintf(path, sizeof path, DATA("%s.pillow.png"), cases[i].pillow);
        if (st == SDC_OK && load(path, &ref)) {
            st = sdc_image_decode(enc, n, "ours", &dec);
            CHECK(st == SDC_OK && dec.width == src.width && dec.height == src.height,
                  "decode our q%d: %s", cases[i].quality, sdc_last_error());
            if (st == SDC_OK) {
                double ours = psnr(&dec, &src), theirs = psnr(&ref, &src);
                printf("encode q%d: %zu bytes, PSNR %.2f dB; Pillow's %s.jpg %.2f dB\n",
                       cases[i].quality, n, ours, cases[i].pillow, theirs);
                /* measured: equal to Pillow's to 0.01 dB (the same libjpeg quantisation
                 * tables and subsampling) */
                CHECK(ours > theirs - 0.1, "q%d: PSNR %.2f dB, Pillow %.2f dB", cases[i].quality,
                      ours, theirs);
            }
        }
        sdc_image_free(&dec);
        sdc_image_free(&ref);
        free(enc);
    }
    /* gray input stays gray (decoded as R = G = B) */
    sdc_image gray = {src.width, src.height, 1, malloc((size_t)src.width * src.height), 0};
    for (uint32_t i = 0; i < src.width * src.height; i++) gray.data[i] = src.data[3 * i + 1];
    void *enc = NULL;
    size_t n = 0;
    sdc_status st = sdc_image_encode(&gray, SDC_IMAGE_JPEG, 0, NULL, &enc, &n);
    sdc_image dec = {0};
    if (st == SDC_OK) st = sdc_image_decode(enc, n, "gray", &dec);
    CHECK(st == SDC_OK, "gray JPEG: %s", sdc_last_error());
    if (st == SDC_OK) {
        int maxd = 0, rgb_equal = 1;
        for (uint32_t i = 0; i < src.width * src.height; i++) {
            int d = abs((int)dec.data[3 * i] - gray.data[i]);
            if (d > maxd) maxd = d;
            rgb_equal &=
                dec.data[3 * i] == dec.data[3 * i + 1] && dec.data[3 * i] == dec.data[3 * i + 2];
        }
        printf("gray JPEG q90 round trip: max |diff| %d, R=G=B %s\n", maxd,
               rgb_equal ? "yes" : "no");
        CHECK(rgb_equal && maxd <= 16, "gray round trip: max diff %d, R=G=B %d", maxd, rgb_equal);
    }
    free(enc);
    free(gray.data);
    sdc_image_free(&dec);
    /* RGBA (Qwen-Image-Layered's layers) as sd.cpp's stb writer does it: the same bytes as
     * the RGB channels alone, whatever the alpha */
    sdc_image rgba = {src.width, src.height, 4, malloc((size_t)src.width * src.height * 4), 0};
    for (uint32_t i = 0; i < src.width * src.height; i++) {
        memcpy(rgba.data + 4 * i, src.data + 3 * i, 3);
        rgba.data[4 * i + 3] = (uint8_t)(i * 7);
    }
    void *e3 = NULL, *e4 = NULL;
    size_t n3 = 0, n4 = 0;
    st = sdc_image_encode(&src, SDC_IMAGE_JPEG, 85, NULL, &e3, &n3);
    sdc_status st4 = sdc_image_encode(&rgba, SDC_IMAGE_JPEG, 85, NULL, &e4, &n4);
    CHECK(st == SDC_OK && st4 == SDC_OK && n3 == n4 && !memcmp(e3, e4, n3),
          "RGBA JPEG = its RGB channels' JPEG (%zu / %zu bytes): %s", n4, n3, sdc_last_error());
    free(e3);
    free(e4);
    free(rgba.data);
    sdc_image_free(&src);
}

/* Expected EXIF UserComment of a text: "UNICODE\0" and UTF-16BE (written here by a
 * separate, simple converter). */
static size_t utf16be_comment(const char *s, uint8_t *out) {
    memcpy(out, "UNICODE\0", 8);
    size_t n = 8;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        if (*p < 0x80)
            cp = *p++;
        else if (*p < 0xE0)
            cp = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F), p += 2;
        else if (*p < 0xF0)
            cp = (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F),
            p += 3;
        else
            cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
                 (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F),
            p += 4;
        uint16_t u[2];
        int k = 0;
        if (cp >= 0x10000) {
            u[k++] = (uint16_t)(0xD800 + ((cp - 0x10000) >> 10));
            u[k++] = (uint16_t)(0xDC00 + ((cp - 0x10000) & 0x3FF));
        } else {
            u[k++] = (uint16_t)cp;
        }
        for (int j = 0; j < k; j++) out[n++] = (uint8_t)(u[j] >> 8), out[n++] = (uint8_t)u[j];
    }
    return n;
}

static const uint8_t *find_bytes(const uint8_t *hay, size_t n, const void *needle, size_t m) {
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(hay + i, needle, m)) return hay + i;
    return NULL;
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
    *n = b ? fread(b, 1, (size_t)len, f) : 0;
    fclose(f);
    return b;
}

static void check_params(const char *path, const char *want, const char *what) {
    char *text = (char *)1;
    sdc_status st = sdc_image_read_parameters(path, &text);
    CHECK(st == SDC_OK, "%s: read parameters: %s", what, sdc_last_error());
    if (st != SDC_OK) return;
    if (!want) {
        CHECK(text == NULL, "%s: expected no parameters, got '%s'", what, text ? text : "");
        printf("parameters %-28s none, as expected\n", what);
    } else {
        CHECK(text && !strcmp(text, want), "%s: parameters '%s', expected '%s'", what,
              text ? text : "(none)", want);
        printf("parameters %-28s %zu bytes %s\n", what, text ? strlen(text) : 0,
               text && !strcmp(text, want) ? "match" : "DIFFER");
    }
    free(text);
}

static void test_parameters(void) {
    /* files written by Pillow */
    check_params(DATA("src.png"), PARAMS_ASCII, "Pillow PNG tEXt");
    check_params(DATA("meta_ztxt.png"), PARAMS_ASCII, "Pillow PNG zTXt");
    check_params(DATA("meta_itxt.png"), PARAMS_UNICODE, "Pillow PNG iTXt (compressed)");
    check_params(DATA("meta_none.png"), NULL, "Pillow PNG without text");
    check_params(DATA("meta_exif.jpg"), PARAMS_UNICODE, "Pillow JPEG EXIF UserComment");
    check_params(DATA("meta_com.jpg"), PARAMS_ASCII, "Pillow JPEG COM (sd.cpp)");
    check_params(DATA("q90.jpg"), NULL, "Pillow JPEG without text");

    /* our own files, both formats, ASCII and non-ASCII text */
    sdc_image img = {0};
    if (!load(DATA("meta_none.png"), &img)) return;
    const char *texts[2] = {PARAMS_ASCII, PARAMS_UNICODE};
    const char *paths[4] = {TMP("a.png"), TMP("u.png"), TMP("a.JPG"), TMP("u.jpeg")};
    for (int i = 0; i < 4; i++) {
        const char *text = texts[i % 2];
        sdc_status st = sdc_image_save(paths[i], &img, text, 90);
        CHECK(st == SDC_OK, "save %s: %s", paths[i], sdc_last_error());
        check_params(paths[i], text, paths[i] + strlen(SDC_BINARY_DIR) + 1);
        size_t n = 0;
        uint8_t *b = read_all(paths[i], &n);
        int jpeg = i >= 2;
        CHECK(b && n > 8 && (jpeg ? b[0] == 0xFF && b[1] == 0xD8 : b[0] == 0x89 && b[1] == 'P'),
              "%s: not a %s file", paths[i], jpeg ? "JPEG" : "PNG");
        if (b && jpeg) {
            /* where other readers look: EXIF UserComment bytes and sd.cpp's COM layout */
            uint8_t want[1024];
            size_t m = utf16be_comment(text, want);
            CHECK(find_bytes(b, n, want, m) != NULL, "%s: no UTF-16BE UserComment", paths[i]);
            uint8_t com[1024] = "parameters";
            size_t k = strlen(text);
            memcpy(com + 11, text, k + 1);
            CHECK(find_bytes(b, n, com, 11 + k + 1) != NULL, "%s: no COM 'parameters\\0...'",
                  paths[i]);
            sdc_image dec = {0};
            CHECK(sdc_image_decode(b, n, paths[i], &dec) == SDC_OK && dec.width == img.width,
                  "%s: decode: %s", paths[i], sdc_last_error());
            sdc_image_free(&dec);
        }
        free(b);
        remove(paths[i]);
    }
    /* no text written: none read back */
    sdc_status st = sdc_image_save(TMP("n.jpg"), &img, NULL, 0);
    CHECK(st == SDC_OK, "save without text: %s", sdc_last_error());
    check_params(TMP("n.jpg"), NULL, "ours, JPEG without text");
    remove(TMP("n.jpg"));
    /* text longer than one JPEG segment is cut at a code point, not refused */
    size_t big = 70000;
    char *longtext = malloc(big + 1);
    for (size_t i = 0; i < big; i++) longtext[i] = (char)('a' + i % 26);
    longtext[big] = 0;
    st = sdc_image_save(TMP("long.jpg"), &img, longtext, 90);
    char *got = NULL;
    if (st == SDC_OK) st = sdc_image_read_parameters(TMP("long.jpg"), &got);
    CHECK(st == SDC_OK && got && strlen(got) > 30000 && !strncmp(got, longtext, strlen(got)),
          "70000-byte text: %s, read %zu bytes", sdc_last_error(), got ? strlen(got) : 0);
    /* the COM copy (UTF-8, 65521 bytes) is longer than the UTF-16 EXIF one (32737) */
    CHECK(got && strlen(got) == 65533 - 12, "70000-byte text: %zu bytes read back",
          got ? strlen(got) : 0);
    printf("70000-byte text in JPEG: %zu bytes read back (one 64 KiB segment)\n",
           got ? strlen(got) : 0);
    free(got);
    free(longtext);
    remove(TMP("long.jpg"));
    sdc_image_free(&img);
}

/* ---- resize ---- */

static double lin(int v) {
    double c = v / 255.0;
    return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

static int srgb8(double v) {
    v = v < 0 ? 0 : v > 1 ? 1 : v;
    v = v <= 0.0031308 ? v * 12.92 : 1.055 * pow(v, 1 / 2.4) - 0.055;
    return (int)floor(v * 255.0 + 0.5);
}

/* Area average in linear light of the crop (cx, cy, cw, ch), straight from the
 * definition: each target pixel's footprint, intersected with every source pixel. */
static void resize_ref(const sdc_image *in, int cx, int cy, int cw, int ch, int w, int h,
                       uint8_t *out) {
    double sx = (double)cw / w, sy = (double)ch / h;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                double acc = 0;
                for (int j = 0; j < ch; j++) {
                    double oy = fmin(j + 1, (y + 1) * sy) - fmax(j, y * sy);
                    if (oy <= 0) continue;
                    for (int i = 0; i < cw; i++) {
                        double ox = fmin(i + 1, (x + 1) * sx) - fmax(i, x * sx);
                        if (ox <= 0) continue;
                        acc += ox * oy *
                               lin(in->data[((size_t)(cy + j) * in->width + cx + i) * 3 + c]);
                    }
                }
                out[((size_t)y * w + x) * 3 + c] = (uint8_t)srgb8(acc / (sx * sy));
            }
}

static void test_resize(void) {
    sdc_image src = {0};
    if (!load(DATA("resize_src.png"), &src)) return; /* 64x48 */
    /* target size, and the crop sd-cli takes first (centred, target aspect ratio) */
    static const struct {
        int w, h, cx, cy, cw, ch;
    } cases[] = {
        {32, 24, 0, 0, 64, 48},  {16, 12, 0, 0, 64, 48},  {37, 29, 1, 0, 61, 48},
        {96, 72, 0, 0, 64, 48},  {131, 97, 0, 0, 64, 47}, {20, 20, 8, 0, 48, 48},
        {24, 40, 18, 0, 28, 48}, {64, 20, 0, 14, 64, 20}, {7, 5, 0, 1, 64, 45},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int w = cases[k].w, h = cases[k].h;
        sdc_image out = {0};
        sdc_status st = sdc_image_resize(&src, w, h, &out);
        CHECK(st == SDC_OK && (int)out.width == w && (int)out.height == h && out.channels == 3,
              "resize to %dx%d: %s", w, h, sdc_last_error());
        if (st != SDC_OK) continue;
        sdc_image ref = {(uint32_t)w, (uint32_t)h, 3, malloc((size_t)w * h * 3), 0};
        resize_ref(&src, cases[k].cx, cases[k].cy, cases[k].cw, cases[k].ch, w, h, ref.data);
        diff d = compare(&out, &ref);
        printf("resize 64x48 -> %3dx%-3d (crop %dx%d+%d+%d) vs double area average: max |diff| "
               "%d, %ld of %d bytes differ\n",
               w, h, cases[k].cw, cases[k].ch, cases[k].cx, cases[k].cy, d.max, d.count, w * h * 3);
        /* float sums vs double: a value at a rounding boundary may land one step off */
        CHECK(d.max <= 1 && d.count * 100 <= (long)w * h * 3, "resize %dx%d: max %d, %ld differ", w,
              h, d.max, d.count);
        free(ref.data);
        sdc_image_free(&out);
    }
    /* Pillow's BOX filter in linear light equals the area average for integer ratios */
    static const char *pillow[2][2] = {{"resize_32x24.pillow.png", "32"},
                                       {"resize_16x12.pillow.png", "16"}};
    for (int k = 0; k < 2; k++) {
        char path[512];
        snprintf(path, sizeof path, DATA("%s"), pillow[k][0]);
        sdc_image ref = {0}, out = {0};
        if (!load(path, &ref)) continue;
        sdc_status st = sdc_image_resize(&src, (int)ref.width, (int)ref.height, &out);
        CHECK(st == SDC_OK, "resize: %s", sdc_last_error());
        if (st == SDC_OK) {
            diff d = compare(&out, &ref);
            printf("resize 64x48 -> %ux%u vs Pillow BOX in linear light: max |diff| %d, %ld of %u "
                   "bytes differ\n",
                   ref.width, ref.height, d.max, d.count, ref.width * ref.height * 3);
            CHECK(d.max <= 1 && d.count * 100 <= (long)ref.width * ref.height * 3,
                  "vs Pillow: max %d, %ld differ", d.max, d.count);
        }
        sdc_image_free(&ref);
        sdc_image_free(&out);
    }
    /* same size: an exact copy; bad sizes refused */
    sdc_image out = {0};
    CHECK(sdc_image_resize(&src, 64, 48, &out) == SDC_OK && compare(&out, &src).max == 0,
          "same-size resize is not a copy");
    sdc_image_free(&out);
    CHECK(sdc_image_resize(&src, 0, 10, &out) == SDC_ERR_INVALID_ARG && !out.data,
          "width 0 accepted");
    CHECK(sdc_image_resize(&src, 10, 100000, &out) == SDC_ERR_INVALID_ARG, "height 1e5 accepted");
    CHECK(sdc_image_resize(NULL, 10, 10, &out) == SDC_ERR_INVALID_ARG, "NULL input accepted");
    sdc_image_free(&src);
}

/* ---- damaged input ---- */

static void test_truncated_and_corrupt(void) {
    size_t n = 0;
    uint8_t *jpg = read_all(DATA("small.jpg"), &n);
    CHECK(jpg && n > 100, "read small.jpg");
    if (!jpg) return;
    sdc_image img = {0};
    CHECK(sdc_image_decode(jpg, n, "small.jpg", &img) == SDC_OK && img.width == 8, "small.jpg: %s",
          sdc_last_error());
    sdc_image_free(&img);
    long refused = 0, wrong_code = 0, no_msg = 0;
    char sample[3][256] = {"", "", ""};
    for (size_t len = 0; len < n; len++) {
        uint8_t *cut = malloc(len ? len : 1); /* exact size: ASan sees any overread */
        memcpy(cut, jpg, len);
        sdc_status st = sdc_image_decode(cut, len, "cut.jpg", &img);
        if (st != SDC_OK) refused++;
        if (st != SDC_ERR_FORMAT) wrong_code++;
        if (!strstr(sdc_last_error(), "cut.jpg")) no_msg++;
        int slot = len < 3 ? -1 : len < n / 2 ? 0 : len < n - 2 ? 1 : 2;
        if (slot >= 0) snprintf(sample[slot], sizeof sample[slot], "%s", sdc_last_error());
        CHECK(img.data == NULL, "truncated to %zu: image data returned", len);
        sdc_image_free(&img);
        free(cut);
    }
    printf("truncations of small.jpg (%zu bytes): %ld of %zu refused, %ld with another code, "
           "%ld without the label\n  e.g. '%s'\n       '%s'\n       '%s'\n",
           n, refused, n, wrong_code, no_msg, sample[0], sample[1], sample[2]);
    CHECK(refused == (long)n && wrong_code == 0 && no_msg == 0,
          "truncations: %ld of %zu refused, %ld wrong code, %ld no message", refused, n, wrong_code,
          no_msg);

    /* damaged headers: find SOF0 (FFC0: len, precision, height, width) */
    const uint8_t *sof = find_bytes(jpg, n, "\xFF\xC0", 2);
    CHECK(sof != NULL, "small.jpg has no SOF0");
    if (sof) {
        size_t at = (size_t)(sof - jpg);
        uint8_t *bad = malloc(n);
        struct {
            const char *what;
            uint8_t h0, h1, w0, w1;
            const char *expect;
        } hdr[] = {{"width 0", 0, 8, 0, 0, ""},
                   {"60000x60000", 0xEA, 0x60, 0xEA, 0x60, "exceeds"},
                   {"10000x10000", 0x27, 0x10, 0x27, 0x10, "exceeds"}};
        for (int k = 0; k < 3; k++) {
            memcpy(bad, jpg, n);
            bad[at + 5] = hdr[k].h0, bad[at + 6] = hdr[k].h1;
            bad[at + 7] = hdr[k].w0, bad[at + 8] = hdr[k].w1;
            sdc_status st = sdc_image_decode(bad, n, "bad.jpg", &img);
            printf("header %-12s -> %s: %s\n", hdr[k].what, sdc_status_string(st),
                   sdc_last_error());
            CHECK(st == SDC_ERR_FORMAT && strstr(sdc_last_error(), hdr[k].expect) && !img.data,
                  "%s: %s", hdr[k].what, sdc_last_error());
        }
        /* an EOI in the middle of the scan data */
        memcpy(bad, jpg, n);
        bad[n - 40] = 0xFF, bad[n - 39] = 0xD9;
        sdc_status st = sdc_image_decode(bad, n, "eoi.jpg", &img);
        printf("early EOI -> %s: %s\n", sdc_status_string(st), sdc_last_error());
        CHECK(st == SDC_ERR_FORMAT && !img.data, "early EOI accepted");
        free(bad);
    }
    /* neither PNG nor JPEG */
    sdc_status st = sdc_image_decode("GIF89a........", 14, "x.gif", &img);
    CHECK(st == SDC_ERR_FORMAT && strstr(sdc_last_error(), "not a PNG or JPEG"), "GIF: %s",
          sdc_last_error());
    st = sdc_image_load(TMP("missing.png"), &img);
    CHECK(st == SDC_ERR_IO && strstr(sdc_last_error(), "missing.png"), "missing file: %s",
          sdc_last_error());
    char *text = NULL;
    st = sdc_image_read_parameters(DATA("../tokenizer_stress_cases.json"), &text);
    CHECK(st == SDC_ERR_FORMAT && !text, "read_parameters of JSON: %s", sdc_last_error());
    /* a PNG whose text chunk runs past the end */
    size_t pn = 0;
    uint8_t *png = read_all(DATA("src.png"), &pn);
    if (png) {
        FILE *f = fopen(TMP("cut.png"), "wb");
        fwrite(png, 1, 60, f);
        fclose(f);
        st = sdc_image_read_parameters(TMP("cut.png"), &text);
        printf("PNG cut at 60 bytes, read_parameters -> %s: %s\n", sdc_status_string(st),
               sdc_last_error());
        CHECK(st == SDC_ERR_FORMAT && !text, "cut PNG parameters: %s", sdc_last_error());
        remove(TMP("cut.png"));
        free(png);
    }
    free(jpg);
}

static void test_bad_arguments(void) {
    uint8_t px[12] = {0};
    sdc_image img = {2, 2, 3, px, 0};
    void *out = NULL;
    size_t n = 0;
    CHECK(sdc_image_encode(NULL, SDC_IMAGE_PNG, 0, NULL, &out, &n) == SDC_ERR_INVALID_ARG,
          "NULL image encoded");
    sdc_image two = img;
    two.channels = 2;
    CHECK(sdc_image_encode(&two, SDC_IMAGE_JPEG, 0, NULL, &out, &n) == SDC_ERR_INVALID_ARG,
          "2 channels encoded");
    CHECK(sdc_image_encode(&img, (sdc_image_format)7, 0, NULL, &out, &n) == SDC_ERR_INVALID_ARG,
          "format 7 accepted");
    CHECK(out == NULL && n == 0, "failed encode left output");
    CHECK(sdc_image_save("", &img, NULL, 0) == SDC_ERR_INVALID_ARG, "empty path accepted");
    CHECK(sdc_image_save(SDC_BINARY_DIR "/no/such/dir/x.jpg", &img, NULL, 0) == SDC_ERR_IO,
          "unwritable path: %s", sdc_last_error());
    /* quality out of range is clamped, not refused */
    CHECK(sdc_image_encode(&img, SDC_IMAGE_JPEG, 1000, NULL, &out, &n) == SDC_OK && n > 0,
          "quality 1000: %s", sdc_last_error());
    free(out);
    sdc_image_free(NULL);
}

int main(void) {
    test_decode_vs_pillow();
    test_encode_psnr();
    test_parameters();
    test_resize();
    test_truncated_and_corrupt();
    test_bad_arguments();
    TEST_MAIN_END();
}
