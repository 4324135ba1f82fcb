/* safetensors reader: a valid file with every dtype written here byte by byte, a battery
 * of corrupted headers (each must fail with a message naming the problem), truncation
 * at every length, and the golden torch randn file. */
#include "test_util.h"

#include "core/fp16.h"
#include "io/safetensors.h"

#include <stdint.h>

/* Builds header-length + header + data into a malloc'ed image. */
static uint8_t *build(const char *json, const void *data, size_t data_size, size_t *size) {
    size_t n = strlen(json);
    *size = 8 + n + data_size;
    uint8_t *img = malloc(*size + 1);
    for (int i = 0; i < 8; i++) img[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(img + 8, json, n);
    if (data_size) memcpy(img + 8 + n, data, data_size);
    return img;
}

static int contains(const char *s, const char *sub) {
    return strstr(s ? s : "", sub) != NULL;
}

/* Expects the image to be rejected with a message containing every `want` (NULL = nothing more). */
static void expect_fail_img(const char *what, const uint8_t *img, size_t size, const char *want1,
                            const char *want2) {
    sdc_st_file *f = NULL;
    sdc_status st = sdc_st_open_memory(img, size, "bad.safetensors", &f);
    const char *msg = sdc_last_error();
    CHECK(st == SDC_ERR_FORMAT && f == NULL, "%s: expected SDC_ERR_FORMAT, got %d", what, (int)st);
    CHECK(contains(msg, "bad.safetensors"), "%s: message lacks the file name: %s", what, msg);
    const char *w1 = want1 ? want1 : "", *w2 = want2 ? want2 : "";
    CHECK(contains(msg, w1), "%s: message lacks '%s': %s", what, w1, msg);
    CHECK(contains(msg, w2), "%s: message lacks '%s': %s", what, w2, msg);
    printf("  rejected %-34s -> %s\n", what, msg);
    sdc_st_close(f);
}

static void expect_fail(const char *what, const char *json, size_t data_size, const char *want1,
                        const char *want2) {
    uint8_t *zeros = calloc(data_size + 1, 1);
    size_t size;
    uint8_t *img = build(json, zeros, data_size, &size);
    expect_fail_img(what, img, size, want1, want2);
    free(img);
    free(zeros);
}

/* ---- valid file with every dtype ------------------------------------------------------ */

static void put_u16(uint8_t *p, uint16_t v) {
    memcpy(p, &v, 2);
}

static void test_valid(void) {
    /* Values exactly representable in every dtype they are stored as. */
    const double vals[4] = {1.5, -2.0, 0.25, 3.0};
    const double ivals[3] = {-7, 0, 100};
    uint8_t data[256];
    memset(data, 0xee, sizeof data);
    size_t off = 0;
    struct {
        const char *name, *dtype;
        size_t begin, end;
        int64_t numel;
        const double *ref;
    } ent[16];
    int ne = 0;
#define ADD(nm, dt, bytes, cnt, r)                                                                 \
    do {                                                                                           \
        ent[ne].name = nm;                                                                         \
        ent[ne].dtype = dt;                                                                        \
        ent[ne].begin = off;                                                                       \
        ent[ne].end = off + (bytes);                                                               \
        ent[ne].numel = cnt;                                                                       \
        ent[ne].ref = r;                                                                           \
        off += (bytes);                                                                            \
        ne++;                                                                                      \
    } while (0)

    for (int i = 0; i < 4; i++) {
        double v = vals[i];
        memcpy(data + off + 8 * i, &v, 8);
    }
    ADD("f64", "F64", 32, 4, vals);
    for (int i = 0; i < 4; i++) {
        float v = (float)vals[i];
        memcpy(data + off + 4 * i, &v, 4);
    }
    ADD("f32", "F32", 16, 4, vals);
    for (int i = 0; i < 4; i++) put_u16(data + off + 2 * i, sdc_f32_to_fp16((float)vals[i]));
    ADD("f16", "F16", 8, 4, vals);
    for (int i = 0; i < 4; i++) put_u16(data + off + 2 * i, sdc_f32_to_bf16((float)vals[i]));
    ADD("bf16", "BF16", 8, 4, vals);
    for (int i = 0; i < 3; i++) {
        int64_t v = (int64_t)ivals[i];
        memcpy(data + off + 8 * i, &v, 8);
    }
    ADD("i64", "I64", 24, 3, ivals);
    for (int i = 0; i < 3; i++) {
        int32_t v = (int32_t)ivals[i];
        memcpy(data + off + 4 * i, &v, 4);
    }
    ADD("i32", "I32", 12, 3, ivals);
    for (int i = 0; i < 3; i++) {
        int16_t v = (int16_t)ivals[i];
        memcpy(data + off + 2 * i, &v, 2);
    }
    ADD("i16", "I16", 6, 3, ivals);
    for (int i = 0; i < 3; i++) {
        int8_t v = (int8_t)ivals[i];
        memcpy(data + off + i, &v, 1);
    }
    ADD("i8", "I8", 3, 3, ivals);
    static const double uvals[3] = {0, 200, 255}, bvals[3] = {1, 0, 1};
    for (int i = 0; i < 3; i++) data[off + i] = (uint8_t)uvals[i];
    ADD("u8", "U8", 3, 3, uvals);
    data[off] = 1;
    data[off + 1] = 0;
    data[off + 2] = 7; /* nonzero bytes are true */
    ADD("bool", "BOOL", 3, 3, bvals);
    static const double u16vals[3] = {0, 40000, 65535};
    for (int i = 0; i < 3; i++) put_u16(data + off + 2 * i, (uint16_t)u16vals[i]);
    ADD("u16", "U16", 6, 3, u16vals);
    static const double u32vals[3] = {0, 3000000000.0, 16777216};
    for (int i = 0; i < 3; i++) {
        uint32_t v = (uint32_t)u32vals[i];
        memcpy(data + off + 4 * i, &v, 4);
    }
    ADD("u32", "U32", 12, 3, u32vals);
    static const double u64vals[3] = {1, 1099511627776.0, 5};
    for (int i = 0; i < 3; i++) {
        uint64_t v = (uint64_t)u64vals[i];
        memcpy(data + off + 8 * i, &v, 8);
    }
    ADD("u64", "U64", 24, 3, u64vals);
#undef ADD
    size_t data_size = off;

    /* Header lists the tensors in reverse order with odd shapes and escapes. */
    char json[4096];
    size_t jl = 0;
    jl += (size_t)snprintf(json + jl, sizeof json - jl,
                           " { \"__metadata__\" : {\"format\":\"pt\",\"esc\":\"a\\\"b\\\\c\\/\\n"
                           "\\u00e9\\ud83d\\ude00\"},\n"
                           "\"zero\\u0041\": {\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":"
                           "[0,0], \"extra\": [1, {\"x\": null}, -2.5e3, true]}");
    for (int i = ne - 1; i >= 0; i--) {
        const char *shape = ent[i].numel == 4 ? "[2,2]" : "[3]";
        if (i == 1) shape = "[1,4,1]";
        jl += (size_t)snprintf(json + jl, sizeof json - jl,
                               ",\"%s\":{\"data_offsets\":[%zu,%zu],\"shape\":%s,\"dtype\":\"%s\"}",
                               ent[i].name, ent[i].begin, ent[i].end, shape, ent[i].dtype);
    }
    jl += (size_t)snprintf(json + jl, sizeof json - jl, "}   ");
    size_t size;
    uint8_t *img = build(json, data, data_size, &size);

    /* Through a real file, as the loader uses it. */
    char path[512];
    snprintf(path, sizeof path, "%s/test_safetensors_valid.safetensors", SDC_BINARY_DIR);
    FILE *fp = fopen(path, "wb");
    fwrite(img, 1, size, fp);
    fclose(fp);
    sdc_st_file *f = NULL;
    sdc_status st = sdc_st_open(path, &f);
    CHECK(st == SDC_OK, "open valid file: %s", sdc_last_error());
    if (st != SDC_OK) {
        free(img);
        return;
    }
    CHECK(sdc_st_count(f) == ne + 1, "count %d, expected %d", sdc_st_count(f), ne + 1);
    CHECK(strcmp(sdc_st_path(f), path) == 0, "path");
    CHECK(contains(sdc_st_metadata(f, "format"), "pt"), "metadata format");
    const char *esc = sdc_st_metadata(f, "esc");
    CHECK(esc && strcmp(esc, "a\"b\\c/\n\xc3\xa9\xf0\x9f\x98\x80") == 0, "escaped metadata: %s",
          esc ? esc : "(null)");
    CHECK(sdc_st_metadata(f, "missing") == NULL, "missing metadata key");
    CHECK(sdc_st_find(f, "nope") == NULL, "find of an absent name");

    const sdc_st_tensor *z = sdc_st_find(f, "zeroA");
    CHECK(z && z->ndim == 2 && z->shape[0] == 0 && z->shape[1] == 3 && z->nbytes == 0,
          "zero-size tensor with \\u0041 in its name");

    /* Iteration is in data-offset order: the zero-size tensor (offset 0) sorts first
     * among equals by header position, then f64 .. u64. */
    double max_err = 0;
    uintptr_t prev_addr = 0;
    for (int k = 0; k < sdc_st_count(f); k++) {
        const sdc_st_tensor *t = sdc_st_at(f, k);
        CHECK((uintptr_t)t->data >= prev_addr, "iteration not in offset order at %d ('%s')", k,
              t->name);
        prev_addr = (uintptr_t)t->data;
    }
    CHECK(sdc_st_at(f, 0) == z, "zero-size tensor at offset 0 comes first");
    CHECK(sdc_st_at(f, -1) == NULL && sdc_st_at(f, ne + 1) == NULL, "at() out of range");
    for (int i = 0; i < ne; i++) {
        const sdc_st_tensor *t = sdc_st_find(f, ent[i].name);
        CHECK(t != NULL, "tensor '%s' missing", ent[i].name);
        if (!t) continue;
        CHECK(strcmp(sdc_st_dtype_name(t->dtype), ent[i].dtype) == 0, "'%s' dtype %s", ent[i].name,
              sdc_st_dtype_name(t->dtype));
        CHECK(sdc_st_numel(t) == ent[i].numel, "'%s' numel", ent[i].name);
        CHECK(t->nbytes == ent[i].end - ent[i].begin, "'%s' nbytes", ent[i].name);
        CHECK(sdc_st_at(f, i + 1) == t, "'%s' is at position %d in offset order", ent[i].name,
              i + 1);
        float out[8];
        CHECK(sdc_st_to_f32(t, out) == SDC_OK, "to_f32 '%s'", ent[i].name);
        for (int j = 0; j < ent[i].numel; j++) {
            double d = fabs((double)out[j] - ent[i].ref[j]);
            if (d > max_err) max_err = d;
            CHECK(d == 0, "'%s'[%d] = %g, expected %g", ent[i].name, j, out[j], ent[i].ref[j]);
        }
    }
    const sdc_st_tensor *t1 = sdc_st_find(f, "f32");
    CHECK(t1 && t1->ndim == 3 && t1->shape[0] == 1 && t1->shape[1] == 4 && t1->shape[2] == 1,
          "shape [1,4,1]");
    CHECK(sdc_st_dtype_to_type(SDC_ST_F16) == SDC_TYPE_F16 &&
              sdc_st_dtype_to_type(SDC_ST_BF16) == SDC_TYPE_BF16 &&
              sdc_st_dtype_to_type(SDC_ST_U8) == -1,
          "dtype to type");
    CHECK(sdc_st_dtype_size(SDC_ST_BF16) == 2 && sdc_st_dtype_size(SDC_ST_U64) == 8, "sizes");
    printf("valid file: %d tensors, 13 dtypes converted to f32, max abs error %g\n",
           sdc_st_count(f), max_err);
    sdc_st_close(f);

    /* The same image from memory parses the same way. */
    st = sdc_st_open_memory(img, size, "mem", &f);
    CHECK(st == SDC_OK && sdc_st_count(f) == ne + 1, "open_memory of the valid image");
    sdc_st_close(f);

    /* Truncation at every length must fail cleanly with a message for the region cut. */
    size_t hdr_end = 8 + strlen(json);
    int n_trunc = 0, n_ok_msg = 0;
    for (size_t cut = 0; cut < size; cut++) {
        sdc_st_file *g = NULL;
        st = sdc_st_open_memory(img, cut, "cut.safetensors", &g);
        const char *msg = sdc_last_error();
        CHECK(st == SDC_ERR_FORMAT && g == NULL, "truncated at %zu accepted", cut);
        const char *want = cut < 8 ? "too small" : cut < hdr_end ? "past the end" : "outside";
        if (contains(msg, want) && contains(msg, "cut.safetensors"))
            n_ok_msg++;
        else
            CHECK(0, "truncated at %zu: message lacks '%s': %s", cut, want, msg);
        sdc_st_close(g);
        n_trunc++;
    }
    printf("truncations: %d lengths rejected, %d with the expected message\n", n_trunc, n_ok_msg);
    remove(path);
    free(img);
}

/* ---- corrupted headers ---------------------------------------------------------------- */

static void test_corrupt(void) {
    const char *ok_entry = "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
    char buf[512];

    /* header length field */
    uint8_t img[64] = {0};
    memset(img, 0xff, 8);
    expect_fail_img("header length 2^64-1", img, sizeof img, "header length", "100 MB");
    uint64_t n = 200u * 1024 * 1024;
    for (int i = 0; i < 8; i++) img[i] = (uint8_t)(n >> (8 * i));
    expect_fail_img("header length 200 MB", img, sizeof img, "100 MB", NULL);
    n = 57;
    for (int i = 0; i < 8; i++) img[i] = (uint8_t)(n >> (8 * i));
    expect_fail_img("header length past the end", img, sizeof img, "past the end", NULL);
    memset(img, 0, 8);
    expect_fail_img("header length 0", img, sizeof img, "too small", NULL);
    expect_fail_img("empty file", img, 0, "too small", NULL);

    /* JSON syntax */
    expect_fail("not an object", "[1,2]", 0, "not a JSON object", NULL);
    expect_fail("garbage", "\x01\x02garbage", 0, "not a JSON object", NULL);
    expect_fail("unterminated object", "{\"a\":{\"dtype\":\"F32\"", 0, "header ends", NULL);
    expect_fail("missing colon", "{\"a\" {}}", 0, "expected ':'", NULL);
    expect_fail("missing comma", "{\"a\":{\"dtype\":\"F32\" \"shape\":[]}}", 0, "expected '}'",
                NULL);
    expect_fail("trailing comma", "{\"a\":{\"dtype\":\"F32\",}}", 0, "expected a string", NULL);
    expect_fail("unterminated string", "{\"abc", 0, "unterminated string", NULL);
    expect_fail("bad escape", "{\"a\\qb\":{}}", 0, "bad escape", NULL);
    expect_fail("bad \\u escape", "{\"a\\u12G4\":{}}", 0, "\\u escape", NULL);
    expect_fail("lone surrogate", "{\"a\\ud800x\":{}}", 0, "surrogate", NULL);
    expect_fail("\\u0000 in a name", "{\"a\\u0000\":{}}", 0, "\\u0000", NULL);
    expect_fail("control char", "{\"a\tb\":{}}", 0, "control character", NULL);
    expect_fail("trailing data", "{} x", 0, "trailing", NULL);
    expect_fail("two objects", "{}{}", 0, "trailing", NULL);
    expect_fail("bad literal in unknown key",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0],\"x\":nul}}", 0,
                "unexpected character", "'a'");
    expect_fail("deep nesting in unknown key",
                "{\"a\":{\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                "[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
                "]]]]]]]]]]]]]]]]}}",
                0, "too deep", NULL);
    expect_fail("tensor entry not an object", "{\"a\":[1]}", 0, "'a'", "not an object");
    expect_fail("metadata value not a string", "{\"__metadata__\":{\"k\":1}}", 0, "'k'",
                "not a string");
    expect_fail("metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, "twice", NULL);
    expect_fail("metadata key twice", "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "'k'",
                "twice");

    /* entries */
    expect_fail("missing dtype", "{\"t\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'t'",
                "missing 'dtype'");
    expect_fail("missing shape", "{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "'t'",
                "missing 'shape'");
    expect_fail("missing offsets", "{\"t\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "'t'",
                "missing 'data_offsets'");
    expect_fail(
        "dtype twice",
        "{\"t\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
        "'t'", "twice");
    expect_fail("unknown dtype", "{\"t\":{\"dtype\":\"F8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
                1, "'t'", "unknown dtype 'F8'");
    expect_fail("dtype not a string", "{\"t\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}",
                4, "'t'", "expected a string");
    expect_fail("negative dim",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,4]}}", 4, "'t'",
                "negative shape dimension");
    expect_fail("fractional dim",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "'t'",
                "not an integer");
    expect_fail(
        "dim over 64 bits",
        "{\"t\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}", 4,
        "'t'", "64 bits");
    expect_fail("shape product overflow",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                "\"data_offsets\":[0,4]}}",
                4, "'t'", "overflows");
    expect_fail("zero dim, others overflow",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,0],"
                "\"data_offsets\":[0,0]}}",
                0, "'t'", "overflows");
    expect_fail("byte size overflow",
                "{\"t\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],"
                "\"data_offsets\":[0,4]}}",
                4, "'t'", "overflows");
    expect_fail("nine dims",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}",
                4, "'t'", "more than 8 dimensions");
    expect_fail("shape not an array",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", 4, "'t'",
                "expected '['");
    expect_fail("three offsets",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, "'t'",
                "exactly two");
    expect_fail("one offset", "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 8,
                "'t'", "expected ','");
    expect_fail("negative offset",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 8, "'t'",
                "negative data offset");
    expect_fail("offsets outside",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 8, "'t'",
                "outside the data section");
    expect_fail("offsets far outside",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[9223372036854775800,"
                "9223372036854775804]}}",
                8, "'t'", "outside the data section");
    expect_fail("end before begin",
                "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8, "'t'",
                "end before");
    expect_fail("size mismatch", "{\"t\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,8]}}",
                8, "'t'", "size mismatch");
    snprintf(buf, sizeof buf,
             "{%s,\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", ok_entry);
    expect_fail("overlap", buf, 12, "'b'", "overlap tensor 'a'");
    snprintf(buf, sizeof buf, "{\"b\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[2,4]},%s}",
             ok_entry);
    expect_fail("overlap inside", buf, 8, "overlap", "'a'");
    snprintf(buf, sizeof buf, "{%s,\"c\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
             ok_entry);
    expect_fail("exact same range", buf, 8, "overlap", NULL);
    snprintf(buf, sizeof buf,
             "{%s,\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", ok_entry);
    expect_fail("duplicate name", buf, 16, "'a'", "duplicate");

    /* Still valid: gaps between tensors, empty header object, zero-size tensors. */
    sdc_st_file *f = NULL;
    size_t size;
    uint8_t zeros[32] = {0};
    snprintf(buf, sizeof buf,
             "{%s,\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]},"
             "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
             ok_entry);
    uint8_t *im = build(buf, zeros, 16, &size);
    CHECK(sdc_st_open_memory(im, size, "gap", &f) == SDC_OK && sdc_st_count(f) == 3,
          "gap + zero-size tensor inside another accepted: %s", sdc_last_error());
    sdc_st_close(f);
    free(im);
    im = build("{}", NULL, 0, &size);
    CHECK(sdc_st_open_memory(im, size, "empty", &f) == SDC_OK && sdc_st_count(f) == 0,
          "empty header accepted");
    sdc_st_close(f);
    free(im);

    CHECK(sdc_st_open("/nonexistent/x.safetensors", &f) == SDC_ERR_IO &&
              contains(sdc_last_error(), "/nonexistent/x.safetensors"),
          "missing file: %s", sdc_last_error());
}

/* ---- golden ------------------------------------------------------------------------- */

static void test_golden(void) {
    sdc_st_file *f = NULL;
    sdc_status st = sdc_st_open(GOLDEN("rng/cpu_randn.safetensors"), &f);
    CHECK(st == SDC_OK, "open golden: %s", sdc_last_error());
    if (st) return;
    const sdc_st_tensor *t = sdc_st_find(f, "seed42_7");
    CHECK(t && t->dtype == SDC_ST_F32 && t->ndim == 1 && t->shape[0] == 7, "seed42_7 shape [7]");
    if (t) {
        float v[7];
        sdc_st_to_f32(t, v);
        double err = fabs((double)v[0] - 0.33669037);
        CHECK(err <= 1e-7, "seed42_7[0] = %.9g, torch anchor 0.33669037", v[0]);
        printf("golden cpu_randn: %d tensors, seed42_7[0]=%.8f (anchor 0.33669037, err %.2g)\n",
               sdc_st_count(f), v[0], err);
    }
    CHECK(contains(sdc_st_metadata(f, "cpu_capability"), "AVX2"), "golden metadata");
    sdc_st_close(f);
}

int main(void) {
    test_valid();
    test_corrupt();
    test_golden();
    TEST_MAIN_END();
}
