/* PNG writer and reader. The reference is libpng itself, used directly here: files
 * written by sdc_save_png are decoded with libpng's simplified API and their tEXt chunk
 * read with png_get_text; files of every colour type are written by libpng here and
 * read back with sdc_png_read; broken files must fail with a clear status. */
#include <png.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

#include "io/image.h"
#include "test_util.h"

static char g_dir[256];

static void path_in_tmp(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", g_dir, name);
}

static uint8_t *random_bytes(size_t n, unsigned long long seed) {
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        p[i] = (uint8_t)(seed >> 24);
    }
    return p;
}

static size_t file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n > 0 ? (size_t)n : 0;
}

static uint8_t *read_all(const char *path, size_t *n) {
    *n = file_size(path);
    FILE *f = fopen(path, "rb");
    uint8_t *buf = malloc(*n ? *n : 1);
    if (f) {
        if (fread(buf, 1, *n, f) != *n) *n = 0;
        fclose(f);
    }
    return buf;
}

static void write_all(const char *path, const uint8_t *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

/* The text of the first tEXt/zTXt/iTXt chunk with `key`, via libpng (NULL if none). */
static char *libpng_text(const char *path, const char *key, int *n_texts) {
    *n_texts = -1;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    char *result = NULL;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(f);
        return NULL;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    png_textp texts = NULL;
    int n = png_get_text(png, info, &texts, NULL);
    *n_texts = n;
    for (int i = 0; i < n; i++)
        if (!strcmp(texts[i].key, key)) result = strdup(texts[i].text);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    return result;
}

/* Decodes with libpng's simplified API as 8-bit RGB (independent of sdc_png_read). */
static uint8_t *libpng_decode_rgb(const char *path, int *w, int *h) {
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&img, path)) return NULL;
    img.format = PNG_FORMAT_RGB;
    uint8_t *buf = malloc(PNG_IMAGE_SIZE(img));
    if (!png_image_finish_read(&img, NULL, buf, 0, NULL)) {
        free(buf);
        png_image_free(&img);
        return NULL;
    }
    *w = (int)img.width;
    *h = (int)img.height;
    return buf;
}

static void test_roundtrip(void) {
    const int w = 37, h = 23;
    uint8_t *px = random_bytes((size_t)w * h * 3, 99);
    sdc_image img = {w, h, 3, px, 42};
    const char *text = "a cat, \"quoted\" – ünïcode ✓\nNegative prompt: dog\nSteps: 20, Seed: 42";
    char path[512];
    path_in_tmp(path, sizeof path, "roundtrip.png");
    sdc_status st = sdc_save_png(path, &img, text);
    CHECK(st == SDC_OK, "sdc_save_png: %s", sdc_last_error());

    int n_texts;
    char *got_text = libpng_text(path, "parameters", &n_texts);
    CHECK(got_text && !strcmp(got_text, text), "tEXt parameters read back by libpng: '%s'",
          got_text ? got_text : "(none)");
    CHECK(n_texts == 1, "text chunks: %d, expected 1", n_texts);
    printf("roundtrip: tEXt 'parameters' (%zu bytes) %s\n", strlen(text),
           got_text && !strcmp(got_text, text) ? "identical" : "DIFFERENT");
    free(got_text);

    int rw = 0, rh = 0;
    uint8_t *ref = libpng_decode_rgb(path, &rw, &rh);
    CHECK(ref && rw == w && rh == h, "libpng decode %dx%d", rw, rh);
    uint8_t *rgb = NULL;
    int sw = 0, sh = 0;
    st = sdc_png_read(path, &rgb, &sw, &sh);
    CHECK(st == SDC_OK && sw == w && sh == h, "sdc_png_read: %s (%dx%d)", sdc_last_error(), sw, sh);
    int max_lib = 0, max_sdc = 0;
    for (size_t i = 0; ref && rgb && i < (size_t)w * h * 3; i++) {
        int d1 = abs((int)ref[i] - px[i]), d2 = abs((int)rgb[i] - px[i]);
        if (d1 > max_lib) max_lib = d1;
        if (d2 > max_sdc) max_sdc = d2;
    }
    CHECK(max_lib == 0 && max_sdc == 0, "pixels differ: libpng %d, sdc_png_read %d", max_lib,
          max_sdc);
    printf("roundtrip %dx%d RGB: max |diff| libpng decode %d, sdc_png_read %d\n", w, h, max_lib,
           max_sdc);
    free(ref);
    free(rgb);

    /* without parameters: no text chunk at all */
    path_in_tmp(path, sizeof path, "notext.png");
    CHECK(sdc_save_png(path, &img, NULL) == SDC_OK, "save without text: %s", sdc_last_error());
    got_text = libpng_text(path, "parameters", &n_texts);
    CHECK(!got_text && n_texts == 0, "no text expected, got %d chunks", n_texts);
    free(got_text);
    free(px);
}

/* Writes a PNG with libpng: rows of `depth`-bit samples as given (packed for < 8). */
static int libpng_write(const char *path, int w, int h, int depth, int color, int interlace,
                        uint8_t *const *rows, const png_color *palette, int n_palette,
                        const uint8_t *trans, int n_trans, png_color_16 *trans_color) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        return 0;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, depth, color, interlace, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (palette) png_set_PLTE(png, info, palette, n_palette);
    if (trans && color == PNG_COLOR_TYPE_PALETTE) png_set_tRNS(png, info, trans, n_trans, NULL);
    if (trans && color != PNG_COLOR_TYPE_PALETTE) png_set_tRNS(png, info, NULL, 0, trans_color);
    png_write_info(png, info);
    png_write_image(png, (png_bytepp)rows);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    fclose(f);
    return 1;
}

typedef struct layout_case {
    const char *name;
    int depth, color, interlace;
} layout_case;

/* Builds raw rows for the case and the RGB the reader must return. */
static void make_case(const layout_case *c, int w, int h, uint8_t **rows, uint8_t *expect,
                      png_color *pal, int *n_pal, unsigned long long seed) {
    int channels = c->color == PNG_COLOR_TYPE_GRAY         ? 1
                   : c->color == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                   : c->color == PNG_COLOR_TYPE_RGB        ? 3
                   : c->color == PNG_COLOR_TYPE_RGBA       ? 4
                                                           : 1;
    *n_pal = 0;
    if (c->color == PNG_COLOR_TYPE_PALETTE) {
        *n_pal = 1 << c->depth;
        uint8_t *r = random_bytes((size_t)*n_pal * 3, seed + 7);
        for (int i = 0; i < *n_pal; i++) pal[i] = (png_color){r[3 * i], r[3 * i + 1], r[3 * i + 2]};
        free(r);
    }
    for (int y = 0; y < h; y++) {
        size_t row_bytes = ((size_t)w * channels * c->depth + 7) / 8;
        uint8_t *src = random_bytes(row_bytes, seed + (unsigned long long)y * 31);
        memcpy(rows[y], src, row_bytes);
        free(src);
        for (int x = 0; x < w; x++) {
            uint8_t *e = expect + ((size_t)y * w + x) * 3;
            if (c->depth < 8) {
                int per_byte = 8 / c->depth, shift = 8 - c->depth * (x % per_byte + 1);
                int v = (rows[y][x / per_byte] >> shift) & ((1 << c->depth) - 1);
                if (c->color == PNG_COLOR_TYPE_PALETTE) {
                    e[0] = pal[v].red, e[1] = pal[v].green, e[2] = pal[v].blue;
                } else {
                    uint8_t g = (uint8_t)(v * 255 / ((1 << c->depth) - 1)); /* bit replication */
                    e[0] = e[1] = e[2] = g;
                }
                continue;
            }
            int bps = c->depth / 8; /* bytes per sample; 16-bit keeps the high byte */
            const uint8_t *s = rows[y] + (size_t)x * channels * bps;
            if (c->color == PNG_COLOR_TYPE_PALETTE) {
                int v = s[0] % (*n_pal ? *n_pal : 1);
                rows[y][x] = (uint8_t)v;
                e[0] = pal[v].red, e[1] = pal[v].green, e[2] = pal[v].blue;
            } else if (channels <= 2) {
                e[0] = e[1] = e[2] = s[0];
            } else {
                e[0] = s[0], e[1] = s[bps], e[2] = s[2 * bps];
            }
        }
    }
}

static void test_layouts(void) {
    static const layout_case cases[] = {
        {"gray8", 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE},
        {"gray1", 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE},
        {"gray4", 4, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE},
        {"gray16", 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE},
        {"gray_alpha8", 8, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_INTERLACE_NONE},
        {"rgb8", 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE},
        {"rgb16", 16, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE},
        {"rgba8", 8, PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE},
        {"rgba16", 16, PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE},
        {"palette8", 8, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE},
        {"palette2", 2, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE},
        {"rgb8_adam7", 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7},
        {"palette4_adam7_trns", 4, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_ADAM7},
        {"gray8_trns", 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE},
        {"gray2_trns", 2, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE},
        {"rgb8_trns", 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE},
    };
    const int w = 19, h = 13;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const layout_case *c = &cases[k];
        uint8_t *rows[13];
        for (int y = 0; y < h; y++) rows[y] = calloc((size_t)w * 8, 1);
        uint8_t *expect = malloc((size_t)w * h * 3);
        png_color pal[256];
        int n_pal;
        make_case(c, w, h, rows, expect, pal, &n_pal, 1000 + k);
        uint8_t trans[16] = {0, 128, 255, 7};
        bool with_trns = strstr(c->name, "trns") != NULL;
        png_color_16 trans_color = {0, 1, 2, 3, 1}; /* gray 1 / RGB (1,2,3) is transparent */
        char path[512];
        path_in_tmp(path, sizeof path, "layout.png");
        int ok = libpng_write(path, w, h, c->depth, c->color, c->interlace, rows,
                              n_pal ? pal : NULL, n_pal, with_trns ? trans : NULL,
                              with_trns ? 4 : 0, with_trns ? &trans_color : NULL);
        CHECK(ok, "%s: libpng could not write the test file", c->name);
        uint8_t *rgb = NULL;
        int rw = 0, rh = 0;
        sdc_status st = sdc_png_read(path, &rgb, &rw, &rh);
        CHECK(st == SDC_OK && rw == w && rh == h, "%s: sdc_png_read: %s", c->name,
              sdc_last_error());
        int maxd = 0;
        for (size_t i = 0; rgb && i < (size_t)w * h * 3; i++) {
            int d = abs((int)rgb[i] - expect[i]);
            if (d > maxd) maxd = d;
        }
        CHECK(rgb && maxd == 0, "%s: max |diff| %d", c->name, maxd);
        printf("layout %-20s %dx%d -> RGB: max |diff| %d\n", c->name, w, h, maxd);
        free(rgb);
        free(expect);
        for (int y = 0; y < h; y++) free(rows[y]);
    }
}

static void expect_fail(const char *what, const char *path, sdc_status want, const char *needle) {
    uint8_t *rgb = (uint8_t *)1;
    int w = -1, h = -1;
    sdc_status st = sdc_png_read(path, &rgb, &w, &h);
    const char *msg = sdc_last_error();
    CHECK(st == want, "%s: status %d (%s), expected %d", what, (int)st, msg, (int)want);
    CHECK(rgb == NULL && w == 0 && h == 0, "%s: outputs not cleared", what);
    CHECK(strstr(msg, path) != NULL, "%s: message does not name the file: %s", what, msg);
    CHECK(!needle || strstr(msg, needle), "%s: message lacks '%s': %s", what, needle, msg);
    printf("bad file %-22s -> %s: %s\n", what, sdc_status_string(st), msg);
}

/* Recomputes a chunk's CRC after the test edited its data. */
static void fix_crc(uint8_t *chunk_len_pos) {
    uint32_t len = (uint32_t)chunk_len_pos[0] << 24 | chunk_len_pos[1] << 16 |
                   chunk_len_pos[2] << 8 | chunk_len_pos[3];
    uint32_t crc = 0xFFFFFFFFu; /* CRC-32 (ISO 3309), bit by bit */
    for (uint32_t i = 0; i < len + 4; i++) {
        crc ^= chunk_len_pos[4 + i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    crc ^= 0xFFFFFFFFu;
    uint8_t *p = chunk_len_pos + 8 + len;
    p[0] = (uint8_t)(crc >> 24), p[1] = (uint8_t)(crc >> 16), p[2] = (uint8_t)(crc >> 8),
    p[3] = (uint8_t)crc;
}

static void test_bad_files(void) {
    char good[512], bad[512];
    path_in_tmp(good, sizeof good, "good.png");
    path_in_tmp(bad, sizeof bad, "bad.png");
    uint8_t *px = random_bytes(64 * 64 * 3, 5);
    sdc_image img = {64, 64, 3, px, 0};
    CHECK(sdc_save_png(good, &img, "x") == SDC_OK, "save: %s", sdc_last_error());
    size_t n;
    uint8_t *data = read_all(good, &n);

    path_in_tmp(bad, sizeof bad, "does_not_exist.png");
    expect_fail("missing file", bad, SDC_ERR_IO, NULL);

    path_in_tmp(bad, sizeof bad, "bad.png");
    write_all(bad, (const uint8_t *)"", 0);
    expect_fail("empty file", bad, SDC_ERR_FORMAT, "not a PNG");
    write_all(bad, (const uint8_t *)"hello, this is text\n", 20);
    expect_fail("text file", bad, SDC_ERR_FORMAT, "not a PNG");
    write_all(bad, data, 8);
    expect_fail("signature only", bad, SDC_ERR_FORMAT, "truncated");
    write_all(bad, data, n / 2);
    expect_fail("truncated in IDAT", bad, SDC_ERR_FORMAT, NULL);

    uint8_t *copy = malloc(n);
    memcpy(copy, data, n);
    copy[8 + 8 + 2] ^= 0x40; /* IHDR width byte, CRC left stale */
    write_all(bad, copy, n);
    expect_fail("IHDR CRC mismatch", bad, SDC_ERR_FORMAT, NULL);

    memcpy(copy, data, n);
    copy[16] = 0x7f; /* width 2^31-ish with a valid CRC: over the size limit */
    fix_crc(copy + 8);
    write_all(bad, copy, n);
    expect_fail("huge width", bad, SDC_ERR_FORMAT, NULL);

    memcpy(copy, data, n);
    copy[8 + 8 + 9] = 5; /* colour type 5 does not exist */
    fix_crc(copy + 8);
    write_all(bad, copy, n);
    expect_fail("bad colour type", bad, SDC_ERR_FORMAT, NULL);

    /* corrupt the zlib stream inside IDAT and fix the CRC: the inflater must complain */
    memcpy(copy, data, n);
    size_t pos = 8;
    while (pos + 8 <= n && memcmp(copy + pos + 4, "IDAT", 4)) {
        uint32_t len =
            (uint32_t)copy[pos] << 24 | copy[pos + 1] << 16 | copy[pos + 2] << 8 | copy[pos + 3];
        pos += 12 + len;
    }
    CHECK(pos + 8 <= n, "no IDAT found");
    if (pos + 8 <= n) {
        uint32_t len =
            (uint32_t)copy[pos] << 24 | copy[pos + 1] << 16 | copy[pos + 2] << 8 | copy[pos + 3];
        for (uint32_t i = 2; i < len; i += 3) copy[pos + 8 + i] ^= 0xA5;
        fix_crc(copy + pos);
        write_all(bad, copy, n);
        expect_fail("corrupt IDAT data", bad, SDC_ERR_FORMAT, NULL);
    }

    /* the memory reader with the intact file works */
    uint8_t *rgb = NULL;
    int w, h;
    CHECK(sdc_png_read_memory(data, n, "mem", &rgb, &w, &h) == SDC_OK && w == 64 && h == 64,
          "read from memory: %s", sdc_last_error());
    free(rgb);
    free(copy);
    free(data);
    free(px);
}

static void test_bad_writes(void) {
    uint8_t px[8 * 8 * 4] = {0};
    char path[512];
    path_in_tmp(path, sizeof path, "w.png");
    sdc_image img = {8, 8, 3, px, 0};
    sdc_image bad = img;
    CHECK(sdc_save_png(path, NULL, NULL) == SDC_ERR_INVALID_ARG, "NULL image accepted");
    bad.data = NULL;
    CHECK(sdc_save_png(path, &bad, NULL) == SDC_ERR_INVALID_ARG, "NULL data accepted");
    bad = img, bad.channels = 2;
    CHECK(sdc_save_png(path, &bad, NULL) == SDC_ERR_INVALID_ARG, "2 channels accepted");
    bad = img, bad.width = 0;
    CHECK(sdc_save_png(path, &bad, NULL) == SDC_ERR_INVALID_ARG, "width 0 accepted");
    bad = img, bad.height = SDC_PNG_MAX_SIDE + 1;
    CHECK(sdc_save_png(path, &bad, NULL) == SDC_ERR_INVALID_ARG, "huge height accepted");
    CHECK(sdc_save_png("", &img, NULL) == SDC_ERR_INVALID_ARG, "empty path accepted");
    path_in_tmp(path, sizeof path, "no/such/dir/w.png");
    sdc_status st = sdc_save_png(path, &img, NULL);
    CHECK(st == SDC_ERR_IO && strstr(sdc_last_error(), path), "missing folder: %d %s", (int)st,
          sdc_last_error());
    printf("write into missing folder -> %s: %s\n", sdc_status_string(st), sdc_last_error());

    /* gray and RGBA images are written as such */
    for (int i = 0; i < 8 * 8 * 4; i++) px[i] = (uint8_t)(i * 7);
    img.channels = 4;
    path_in_tmp(path, sizeof path, "rgba.png");
    CHECK(sdc_save_png(path, &img, NULL) == SDC_OK, "RGBA save: %s", sdc_last_error());
    uint8_t *rgb = NULL;
    int w, h, maxd = 0;
    CHECK(sdc_png_read(path, &rgb, &w, &h) == SDC_OK, "RGBA read: %s", sdc_last_error());
    for (int i = 0; rgb && i < 64; i++)
        for (int c = 0; c < 3; c++) {
            int d = abs((int)rgb[i * 3 + c] - px[i * 4 + c]);
            if (d > maxd) maxd = d;
        }
    CHECK(rgb && maxd == 0, "RGBA -> RGB max |diff| %d", maxd);
    free(rgb);
}

static long peak_rss_kb(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* A tEXt chunk right after IHDR whose length (1.75 GiB) runs past the end of the file:
 * libpng would allocate the declared length before noticing, so the reader must refuse
 * the file from the chunk walk, naming the chunk, and peak RSS must not move. */
static void test_chunk_past_end(void) {
    char good[512], bad[512];
    path_in_tmp(good, sizeof good, "good_small.png");
    path_in_tmp(bad, sizeof bad, "chunk_past_end.png");
    uint8_t px[4 * 3 * 3] = {0};
    sdc_image img = {4, 3, 3, px, 0};
    CHECK(sdc_save_png(good, &img, NULL) == SDC_OK, "save: %s", sdc_last_error());
    size_t n;
    uint8_t *data = read_all(good, &n);
    const size_t after_ihdr = 8 + 8 + 13 + 4;
    const uint32_t claimed = 0x70000000u;
    uint8_t *copy = malloc(n + 12);
    memcpy(copy, data, after_ihdr);
    uint8_t *c = copy + after_ihdr;
    c[0] = (uint8_t)(claimed >> 24), c[1] = (uint8_t)(claimed >> 16);
    c[2] = (uint8_t)(claimed >> 8), c[3] = (uint8_t)claimed;
    memcpy(c + 4, "tEXt", 4);
    memcpy(c + 8, "parameters", 4); /* a few bytes of the claimed text, then the real rest */
    memcpy(c + 12, data + after_ihdr, n - after_ihdr);
    size_t bad_n = n + 12;
    write_all(bad, copy, bad_n);

    long before = peak_rss_kb();
    expect_fail("chunk past end of file", bad, SDC_ERR_FORMAT, "runs past the end");
    CHECK(strstr(sdc_last_error(), "tEXt") != NULL, "message does not name the chunk: %s",
          sdc_last_error());
    uint8_t *rgb = NULL;
    int w = -1, h = -1;
    sdc_status st = sdc_png_read_memory(copy, bad_n, "mem", &rgb, &w, &h);
    CHECK(st == SDC_ERR_FORMAT && strstr(sdc_last_error(), "runs past the end") && !rgb,
          "memory reader: status %d: %s", (int)st, sdc_last_error());
    free(rgb);
    long grown_mb = (peak_rss_kb() - before) / 1024;
    /* the claimed size is 1792 MB; the two reads need a few kB */
    CHECK(grown_mb < 64, "peak RSS grew by %ld MB while refusing a %u-byte chunk", grown_mb,
          claimed);
    printf("chunk of %u bytes past the end (file %zu bytes): peak RSS grew by %ld MB\n", claimed,
           bad_n, grown_mb);
    free(copy);
    free(data);
}

/* The sd-cli PNGs of the golden set: our reader must agree with libpng's own decoder. */
static void test_golden_pngs(void) {
    int files = 0, maxd = 0;
    for (int k = 1; k <= 12; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/a%02d.png", GOLDEN("minit2i/png"), k);
        if (access(path, R_OK) != 0) {
            CHECK(0, "golden PNG missing: %s", path);
            continue;
        }
        int rw, rh, sw, sh;
        uint8_t *ref = libpng_decode_rgb(path, &rw, &rh);
        uint8_t *rgb = NULL;
        sdc_status st = sdc_png_read(path, &rgb, &sw, &sh);
        CHECK(ref && st == SDC_OK && rw == sw && rh == sh, "%s: %s", path, sdc_last_error());
        for (size_t i = 0; ref && rgb && i < (size_t)rw * rh * 3; i++) {
            int d = abs((int)ref[i] - rgb[i]);
            if (d > maxd) maxd = d;
        }
        free(ref);
        free(rgb);
        files++;
    }
    CHECK(files == 12, "golden PNGs read: %d, expected 12 (a01..a12.png)", files);
    CHECK(maxd == 0, "golden PNGs: max |diff| %d", maxd);
    printf("golden sd-cli PNGs read: %d files, max |diff| vs libpng simplified API %d\n", files,
           maxd);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s/test_png_tmp", SDC_BINARY_DIR);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot create %s\n", g_dir);
    test_roundtrip();
    test_layouts();
    test_bad_files();
    test_bad_writes();
    test_chunk_past_end();
    test_golden_pngs();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_dir);
    TEST_MAIN_END();
}
