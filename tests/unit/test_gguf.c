/* GGUF reader and writer: ggml-written golden files (every KV with its type and value,
 * every tensor's shape, offset and bytes against quant_expected.safetensors), the
 * alignment-64 pair, a writer round trip with every KV type, byte-identical re-writing
 * of the golden files, and a battery of corrupted files built byte by byte here. */
#include "test_util.h"

#include "core/fp16.h"
#include "io/gguf.h"
#include "io/safetensors.h"

#include <stdint.h>

static int contains(const char *s, const char *sub) {
    return strstr(s ? s : "", sub) != NULL;
}

static uint8_t *read_all(const char *path, size_t *size) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    *size = fread(b, 1, (size_t)n, fp);
    fclose(fp);
    return b;
}

/* ---- expected KVs of the quant golden files (from the golden README) ------------------- */

typedef struct exp_kv {
    const char *key;
    sdc_gguf_vtype type, arr_type;
    const char *str; /* STRING */
    uint64_t u;      /* unsigned scalars, bool */
    int64_t i;       /* signed scalars */
    uint64_t bits;   /* f32/f64 bit pattern */
    const void *arr; /* numeric arrays */
    const char *const *strs;
    uint64_t n;
} exp_kv;

static const uint8_t a_u8[] = {0, 1, 2, 255};
static const int8_t a_i8[] = {-128, -1, 0, 127};
static const uint16_t a_u16[] = {0, 65535, 1234};
static const int16_t a_i16[] = {-32768, 32767, -2};
static const uint32_t a_u32[] = {0, 4294967295u, 7};
static const int32_t a_i32[] = {1, -2, 3, -4, 2147483647, -2147483647 - 1};
static const uint64_t a_u64[] = {0, 18446744073709551615ull, 42};
static const int64_t a_i64[] = {INT64_MIN, INT64_MAX, -5};
static const float a_f32[] = {0.5f, -1.25f, 1e-3f, 65504.0f};
static const double a_f64[] = {0.1, -2.5, 1e300};
static const uint8_t a_bool[] = {1, 0, 1};
static const char *const a_str[] = {"a", "bc", "", "\xc3\xbcn\xc3\xaf \xe2\x9c\x93", "<unk>"};

static void check_golden_kvs(const sdc_gguf_file *f, const char *matrix, uint32_t rows,
                             uint32_t cols) {
    const exp_kv ex[] = {
        {.key = "general.architecture", .type = SDC_GGUF_STRING, .str = "golden"},
        {.key = "general.name", .type = SDC_GGUF_STRING, .str = "ggml quantizer golden data"},
        {.key = "golden.matrix", .type = SDC_GGUF_STRING, .str = matrix},
        {.key = "golden.rows", .type = SDC_GGUF_U32, .u = rows},
        {.key = "golden.cols", .type = SDC_GGUF_U32, .u = cols},
        {.key = "golden.u8", .type = SDC_GGUF_U8, .u = 200},
        {.key = "golden.i8", .type = SDC_GGUF_I8, .i = -100},
        {.key = "golden.u16", .type = SDC_GGUF_U16, .u = 60000},
        {.key = "golden.i16", .type = SDC_GGUF_I16, .i = -30000},
        {.key = "golden.u32", .type = SDC_GGUF_U32, .u = 4000000000u},
        {.key = "golden.i32", .type = SDC_GGUF_I32, .i = -2000000000},
        {.key = "golden.u64", .type = SDC_GGUF_U64, .u = 18000000000000000000ull},
        {.key = "golden.i64", .type = SDC_GGUF_I64, .i = -9000000000000000000ll},
        {.key = "golden.f32", .type = SDC_GGUF_F32, .bits = 0x40490FDBu},
        {.key = "golden.f64", .type = SDC_GGUF_F64, .bits = 0x4005BF0A8B145769ull},
        {.key = "golden.bool_true", .type = SDC_GGUF_BOOL, .u = 1},
        {.key = "golden.bool_false", .type = SDC_GGUF_BOOL},
        {.key = "golden.string",
         .type = SDC_GGUF_STRING,
         .str = "h\xc3\xa9llo, w\xc3\xb6rld \xe2\x9c\x93"},
        {.key = "golden.string_empty", .type = SDC_GGUF_STRING, .str = ""},
        {.key = "golden.arr_u8",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_U8,
         .arr = a_u8,
         .n = 4},
        {.key = "golden.arr_i8",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_I8,
         .arr = a_i8,
         .n = 4},
        {.key = "golden.arr_u16",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_U16,
         .arr = a_u16,
         .n = 3},
        {.key = "golden.arr_i16",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_I16,
         .arr = a_i16,
         .n = 3},
        {.key = "golden.arr_u32",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_U32,
         .arr = a_u32,
         .n = 3},
        {.key = "golden.arr_i32",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_I32,
         .arr = a_i32,
         .n = 6},
        {.key = "golden.arr_u64",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_U64,
         .arr = a_u64,
         .n = 3},
        {.key = "golden.arr_i64",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_I64,
         .arr = a_i64,
         .n = 3},
        {.key = "golden.arr_f32",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_F32,
         .arr = a_f32,
         .n = 4},
        {.key = "golden.arr_f64",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_F64,
         .arr = a_f64,
         .n = 3},
        {.key = "golden.arr_bool",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_BOOL,
         .arr = a_bool,
         .n = 3},
        {.key = "golden.arr_i32_empty",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_I32,
         .arr = a_i32,
         .n = 0},
        {.key = "golden.arr_str",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_STRING,
         .strs = a_str,
         .n = 5},
        {.key = "golden.arr_str_empty",
         .type = SDC_GGUF_ARRAY,
         .arr_type = SDC_GGUF_STRING,
         .strs = a_str,
         .n = 0},
    };
    const int n_ex = (int)(sizeof ex / sizeof ex[0]);
    CHECK(sdc_gguf_kv_count(f) == n_ex, "%s: %d KVs, expected %d", matrix, sdc_gguf_kv_count(f),
          n_ex);
    int n_ok = 0;
    for (int i = 0; i < n_ex && i < sdc_gguf_kv_count(f); i++) {
        const sdc_gguf_kv *kv = sdc_gguf_kv_at(f, i);
        const exp_kv *e = &ex[i];
        int ok = strcmp(kv->key, e->key) == 0 && kv->type == e->type;
        if (ok) switch (e->type) {
            case SDC_GGUF_STRING:
                ok = kv->str_len == strlen(e->str) && !strcmp(kv->str, e->str);
                break;
            case SDC_GGUF_U8:
                ok = kv->v.u8 == e->u;
                break;
            case SDC_GGUF_U16:
                ok = kv->v.u16 == e->u;
                break;
            case SDC_GGUF_U32:
                ok = kv->v.u32 == e->u;
                break;
            case SDC_GGUF_U64:
                ok = kv->v.u64 == e->u;
                break;
            case SDC_GGUF_BOOL:
                ok = kv->v.b == (e->u != 0);
                break;
            case SDC_GGUF_I8:
                ok = kv->v.i8 == e->i;
                break;
            case SDC_GGUF_I16:
                ok = kv->v.i16 == e->i;
                break;
            case SDC_GGUF_I32:
                ok = kv->v.i32 == e->i;
                break;
            case SDC_GGUF_I64:
                ok = kv->v.i64 == e->i;
                break;
            case SDC_GGUF_F32:
                ok = sdc_f32_bits(kv->v.f32) == (uint32_t)e->bits;
                break;
            case SDC_GGUF_F64: {
                uint64_t b;
                memcpy(&b, &kv->v.f64, 8);
                ok = b == e->bits;
                break;
            }
            case SDC_GGUF_ARRAY:
                ok = kv->arr_type == e->arr_type && kv->arr_n == e->n;
                if (ok && e->arr_type == SDC_GGUF_STRING) {
                    for (uint64_t j = 0; j < e->n; j++)
                        ok = ok && kv->arr_str_len[j] == strlen(e->strs[j]) &&
                             !strcmp(kv->arr_str[j], e->strs[j]);
                } else if (ok) {
                    ok = e->n == 0 ||
                         !memcmp(kv->arr, e->arr, e->n * sdc_gguf_vtype_size(e->arr_type));
                }
                break;
            default:
                ok = 0;
            }
        CHECK(ok, "%s: KV %d: got '%s' (%s), expected '%s' (%s) with the README's value", matrix, i,
              kv->key, sdc_gguf_vtype_name(kv->type), e->key, sdc_gguf_vtype_name(e->type));
        n_ok += ok;
    }
    /* typed getters and lookup by key */
    uint32_t u32 = 0;
    int64_t i64 = 0;
    const char *s = NULL;
    float f32 = 0;
    bool b = false;
    CHECK(sdc_gguf_get_u32(f, "golden.rows", &u32) == SDC_OK && u32 == rows, "get_u32 rows");
    CHECK(sdc_gguf_get_int(f, "golden.i8", &i64) == SDC_OK && i64 == -100, "get_int i8");
    CHECK(sdc_gguf_get_int(f, "golden.u32", &i64) == SDC_OK && i64 == 4000000000ll, "get_int u32");
    CHECK(sdc_gguf_get_int(f, "golden.u64", &i64) != SDC_OK &&
              contains(sdc_last_error(), "does not fit"),
          "get_int of a u64 above int64: %s", sdc_last_error());
    CHECK(sdc_gguf_get_str(f, "general.architecture", &s) == SDC_OK && !strcmp(s, "golden"),
          "get_str");
    CHECK(sdc_gguf_get_f32(f, "golden.f32", &f32) == SDC_OK && f32 == 3.14159274f, "get_f32");
    CHECK(sdc_gguf_get_bool(f, "golden.bool_true", &b) == SDC_OK && b, "get_bool");
    CHECK(sdc_gguf_get_u32(f, "golden.i32", &u32) == SDC_ERR_FORMAT &&
              contains(sdc_last_error(), "'golden.i32' has type i32, expected u32"),
          "type mismatch message: %s", sdc_last_error());
    CHECK(sdc_gguf_get_u32(f, "golden.nope", &u32) == SDC_ERR_FORMAT &&
              contains(sdc_last_error(), "'golden.nope' not found"),
          "missing key message: %s", sdc_last_error());
    uint64_t n = 0;
    const void *data = NULL;
    CHECK(sdc_gguf_get_arr(f, "golden.arr_str", SDC_GGUF_STRING, &n, &data) == SDC_OK && n == 5 &&
              !strcmp(((const char *const *)data)[4], "<unk>"),
          "get_arr strings");
    CHECK(sdc_gguf_get_arr(f, "golden.arr_str", SDC_GGUF_I32, &n, &data) == SDC_ERR_FORMAT &&
              contains(sdc_last_error(), "array of str"),
          "get_arr type mismatch: %s", sdc_last_error());
    CHECK(sdc_gguf_find_kv(f, "golden.arr_f64") == sdc_gguf_kv_at(f, 28), "find_kv");
    printf("%s: %d/%d KVs match the README (keys, types, values, order)\n", matrix, n_ok, n_ex);
}

/* README table: ggml type id and bytes per row for m4x256 (cols 256); m3x512 doubles it. */
static const struct {
    const char *name;
    int id;
    size_t row_bytes_256;
} k_qt[] = {
    {"q4_0", 2, 144},  {"q4_1", 3, 160},  {"q5_0", 6, 176},  {"q5_1", 7, 192},
    {"q8_0", 8, 272},  {"q2_K", 10, 84},  {"q3_K", 11, 110}, {"q4_K", 12, 144},
    {"q5_K", 13, 176}, {"q6_K", 14, 210}, {"f16", 1, 512},   {"bf16", 30, 512},
};

static void test_quant_golden(const char *file, const char *matrix, int rows, int cols,
                              size_t file_size, size_t data_offset_expected,
                              const sdc_st_file *expected) {
    sdc_gguf_file *f = NULL;
    sdc_status st = sdc_gguf_open(file, &f);
    CHECK(st == SDC_OK, "open %s: %s", file, sdc_last_error());
    if (st) return;
    CHECK(sdc_gguf_version(f) == 3 && sdc_gguf_alignment(f) == 32, "%s: version/alignment", matrix);
    if (data_offset_expected)
        CHECK(sdc_gguf_data_offset(f) == data_offset_expected,
              "%s: data section at %zu, expected %zu", matrix, sdc_gguf_data_offset(f),
              data_offset_expected);
    check_golden_kvs(f, matrix, (uint32_t)rows, (uint32_t)cols);

    /* tensor list: names, types, shapes, offsets computed from the README's row sizes */
    CHECK(sdc_gguf_tensor_count(f) == 26, "%s: %d tensors", matrix, sdc_gguf_tensor_count(f));
    uint64_t off = 0;
    int n_bytes_ok = 0, n_checked = 0;
    char name[64], ename[96];
    for (int i = 0; i < 26 && i < sdc_gguf_tensor_count(f); i++) {
        const sdc_gguf_tensor *t = sdc_gguf_tensor_at(f, i);
        int id, n_dims = 2;
        size_t row_bytes;
        if (i == 0) {
            snprintf(name, sizeof name, "src");
            id = 0, row_bytes = (size_t)cols * 4;
        } else if (i == 1) {
            snprintf(name, sizeof name, "imatrix");
            id = 0, row_bytes = (size_t)cols * 4, n_dims = 1;
        } else {
            int q = (i - 2) / 2;
            snprintf(name, sizeof name, "%s.%s", k_qt[q].name, (i % 2) ? "imatrix" : "plain");
            id = k_qt[q].id;
            row_bytes = k_qt[q].row_bytes_256 * (size_t)cols / 256;
        }
        int64_t erows = n_dims == 1 ? 1 : rows;
        size_t nbytes = row_bytes * (size_t)erows;
        int ok = !strcmp(t->name, name) && (int)t->type == id && t->n_dims == n_dims &&
                 t->ne[0] == cols && t->ne[1] == erows && t->ne[2] == 1 && t->ne[3] == 1 &&
                 t->offset == off && t->nbytes == nbytes;
        CHECK(ok,
              "%s: tensor %d is '%s' type %d n_dims %d ne [%lld,%lld] offset %llu nbytes %zu; "
              "expected '%s' type %d n_dims %d ne [%d,%lld] offset %llu nbytes %zu",
              matrix, i, t->name, (int)t->type, t->n_dims, (long long)t->ne[0], (long long)t->ne[1],
              (unsigned long long)t->offset, t->nbytes, name, id, n_dims, cols, (long long)erows,
              (unsigned long long)off, nbytes);
        CHECK((const uint8_t *)t->data - (const uint8_t *)sdc_gguf_tensor_at(f, 0)->data ==
                  (ptrdiff_t)t->offset,
              "%s: '%s' data pointer", matrix, name);
        CHECK(sdc_gguf_find_tensor(f, name) == t, "find_tensor '%s'", name);
        off += (nbytes + 31) / 32 * 32;

        /* bytes against quant_expected.safetensors */
        if (i == 0)
            snprintf(ename, sizeof ename, "%s.src", matrix);
        else if (i == 1)
            snprintf(ename, sizeof ename, "%s.imatrix", matrix);
        else
            snprintf(ename, sizeof ename, "%s.%s.q", matrix, name);
        const sdc_st_tensor *e = sdc_st_find(expected, ename);
        CHECK(e != NULL, "expected tensor '%s' missing", ename);
        if (e) {
            int same = e->nbytes == t->nbytes && !memcmp(e->data, t->data, t->nbytes);
            CHECK(same, "%s: tensor '%s' bytes differ from '%s'", matrix, name, ename);
            n_bytes_ok += same;
            n_checked++;
        }
    }
    CHECK(sdc_gguf_data_offset(f) + off == file_size, "%s: data end %llu, file size %zu", matrix,
          (unsigned long long)(sdc_gguf_data_offset(f) + off), file_size);
    printf("%s: 26 tensors (names, types, shapes, offsets) checked, %d/%d byte-identical to "
           "quant_expected.safetensors, data section at %zu\n",
           matrix, n_bytes_ok, n_checked, sdc_gguf_data_offset(f));

    /* Re-writing every KV and tensor with our writer gives ggml's file byte for byte. */
    sdc_gguf_writer *w = NULL;
    sdc_gguf_writer_create(&w);
    for (int i = 0; i < sdc_gguf_kv_count(f); i++) sdc_gguf_set_kv(w, sdc_gguf_kv_at(f, i));
    for (int i = 0; i < sdc_gguf_tensor_count(f); i++) {
        const sdc_gguf_tensor *t = sdc_gguf_tensor_at(f, i);
        sdc_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data);
    }
    void *img = NULL;
    size_t img_size = 0;
    st = sdc_gguf_write_memory(w, &img, &img_size);
    size_t gsize = 0;
    uint8_t *golden = read_all(file, &gsize);
    CHECK(st == SDC_OK && golden && img_size == gsize && !memcmp(img, golden, gsize),
          "%s: re-written file differs from ggml's (%zu vs %zu bytes)", matrix, img_size, gsize);
    printf("%s: re-written by our writer: %zu bytes, %s ggml's file\n", matrix, img_size,
           golden && img_size == gsize && !memcmp(img, golden, gsize) ? "identical to"
                                                                      : "DIFFERS from");
    free(golden);
    free(img);
    sdc_gguf_writer_free(w);
    sdc_gguf_close(f);
}

static void test_align64(const sdc_st_file *expected) {
    sdc_gguf_file *f = NULL;
    sdc_status st = sdc_gguf_open(GOLDEN("gguf/align64.gguf"), &f);
    CHECK(st == SDC_OK, "open align64.gguf: %s", sdc_last_error());
    if (st) return;
    uint32_t al = 0;
    CHECK(sdc_gguf_alignment(f) == 64 && sdc_gguf_get_u32(f, "general.alignment", &al) == SDC_OK &&
              al == 64,
          "align64: alignment %u", sdc_gguf_alignment(f));
    CHECK(sdc_gguf_data_offset(f) == 384, "align64: data section at %zu, expected 384",
          sdc_gguf_data_offset(f));
    CHECK(sdc_gguf_kv_count(f) == 3 && !strcmp(sdc_gguf_kv_at(f, 0)->key, "general.architecture") &&
              sdc_gguf_kv_at(f, 2)->type == SDC_GGUF_STRING,
          "align64: KVs");
    CHECK(sdc_gguf_tensor_count(f) == 4, "align64: 4 tensors");
    const sdc_gguf_tensor *t3 = sdc_gguf_find_tensor(f, "t3d");
    const sdc_gguf_tensor *q8 = sdc_gguf_find_tensor(f, "q8_0.vec");
    const sdc_gguf_tensor *i32 = sdc_gguf_find_tensor(f, "i32");
    const sdc_gguf_tensor *f16 = sdc_gguf_find_tensor(f, "f16");
    CHECK(t3 && q8 && i32 && f16, "align64: tensor names");
    if (!(t3 && q8 && i32 && f16)) {
        sdc_gguf_close(f);
        return;
    }
    CHECK(t3->type == SDC_TYPE_F32 && t3->n_dims == 3 && t3->ne[0] == 7 && t3->ne[1] == 3 &&
              t3->ne[2] == 2 && t3->offset == 0,
          "t3d info");
    int bad = 0;
    for (int i2 = 0; i2 < 2; i2++)
        for (int i1 = 0; i1 < 3; i1++)
            for (int i0 = 0; i0 < 7; i0++) {
                float v;
                memcpy(&v, (const float *)t3->data + (i2 * 3 + i1) * 7 + i0, 4);
                bad += v != (float)(i0 + 10 * i1 + 100 * i2);
            }
    CHECK(bad == 0, "t3d values: %d wrong", bad);
    CHECK(q8->type == SDC_TYPE_Q8_0 && q8->n_dims == 1 && q8->ne[0] == 64 && q8->offset == 192 &&
              q8->nbytes == 68,
          "q8_0.vec info");
    const sdc_st_tensor *e = sdc_st_find(expected, "m4x256.q8_0.plain.q");
    CHECK(e && !memcmp(e->data, q8->data, 68), "q8_0.vec = first 68 bytes of m4x256.q8_0.plain.q");
    const int32_t iv[5] = {1, -2, 3, -4, 2147483647};
    CHECK(i32->type == SDC_TYPE_I32 && i32->ne[0] == 5 && i32->offset == 320 &&
              !memcmp(i32->data, iv, 20),
          "i32 tensor");
    const float fv[6] = {0.5f, -1.0f, 65504.0f, 1e-4f, -0.0f, 3.14159265f};
    int fbad = 0;
    for (int i = 0; i < 6; i++) {
        uint16_t h;
        memcpy(&h, (const uint8_t *)f16->data + 2 * i, 2);
        fbad += h != sdc_f32_to_fp16(fv[i]);
    }
    CHECK(f16->type == SDC_TYPE_F16 && f16->n_dims == 2 && f16->ne[0] == 3 && f16->ne[1] == 2 &&
              f16->offset == 384 && fbad == 0,
          "f16 tensor (%d wrong values)", fbad);
    printf("align64.gguf: alignment 64, data at 384, 4 tensors with the README's values\n");
    sdc_gguf_close(f);

    st = sdc_gguf_open(GOLDEN("gguf/align64_bad_offsets.gguf"), &f);
    const char *msg = sdc_last_error();
    CHECK(st == SDC_ERR_FORMAT && !f, "align64_bad_offsets.gguf must be rejected");
    CHECK(contains(msg, "'i32'") && contains(msg, "288") && contains(msg, "320") &&
              contains(msg, "64") && contains(msg, "align64_bad_offsets.gguf"),
          "bad offsets message: %s", msg);
    printf("align64_bad_offsets.gguf rejected: %s\n", msg);
    sdc_gguf_close(f);
}

/* ---- writer round trip ---------------------------------------------------------------- */

typedef struct gen_ctx {
    int calls;
} gen_ctx;

/* Produces the q8_0 tensor's bytes at write time: a recognisable pattern. */
static sdc_status gen_bytes(void *user, const char *name, void *dst, size_t nbytes) {
    gen_ctx *g = user;
    g->calls++;
    for (size_t i = 0; i < nbytes; i++) ((uint8_t *)dst)[i] = (uint8_t)(i * 7 + 3);
    return strcmp(name, "blk.q8") == 0 ? SDC_OK : SDC_ERR_INTERNAL;
}

static void test_roundtrip(void) {
    sdc_gguf_writer *w = NULL;
    CHECK(sdc_gguf_writer_create(&w) == SDC_OK, "writer create");
    const char *const strs[] = {"alpha", "", "\xe2\x9c\x93 check"};
    sdc_gguf_set_str(w, "general.architecture", "test");
    sdc_gguf_set_u8(w, "t.u8", 250);
    sdc_gguf_set_i8(w, "t.i8", -7);
    sdc_gguf_set_u16(w, "t.u16", 65000);
    sdc_gguf_set_i16(w, "t.i16", -32000);
    sdc_gguf_set_u32(w, "t.u32", 123456789u);
    sdc_gguf_set_i32(w, "t.i32", -123456789);
    sdc_gguf_set_u64(w, "t.u64", 0xfedcba9876543210ull);
    sdc_gguf_set_i64(w, "t.i64", -0x123456789abcdefll);
    sdc_gguf_set_f32(w, "t.f32", -1.5e-7f);
    sdc_gguf_set_f64(w, "t.f64", 1.0 / 3.0);
    sdc_gguf_set_bool(w, "t.bool", true);
    sdc_gguf_set_strn(w, "t.nul", "a\0b", 3);
    sdc_gguf_set_str(w, "t.replace", "old");
    sdc_gguf_set_arr(w, "t.a_u8", SDC_GGUF_U8, a_u8, 4);
    sdc_gguf_set_arr(w, "t.a_i8", SDC_GGUF_I8, a_i8, 4);
    sdc_gguf_set_arr(w, "t.a_u16", SDC_GGUF_U16, a_u16, 3);
    sdc_gguf_set_arr(w, "t.a_i16", SDC_GGUF_I16, a_i16, 3);
    sdc_gguf_set_arr(w, "t.a_u32", SDC_GGUF_U32, a_u32, 3);
    sdc_gguf_set_arr(w, "t.a_i32", SDC_GGUF_I32, a_i32, 6);
    sdc_gguf_set_arr(w, "t.a_u64", SDC_GGUF_U64, a_u64, 3);
    sdc_gguf_set_arr(w, "t.a_i64", SDC_GGUF_I64, a_i64, 3);
    sdc_gguf_set_arr(w, "t.a_f32", SDC_GGUF_F32, a_f32, 4);
    sdc_gguf_set_arr(w, "t.a_f64", SDC_GGUF_F64, a_f64, 3);
    sdc_gguf_set_arr(w, "t.a_bool", SDC_GGUF_BOOL, a_bool, 3);
    sdc_gguf_set_arr(w, "t.a_empty", SDC_GGUF_F32, NULL, 0);
    sdc_gguf_set_arr_str(w, "t.a_str", strs, 3);
    sdc_gguf_set_str(w, "t.replace", "new value"); /* replaces in place */
    CHECK(sdc_gguf_set_alignment(w, 64) == SDC_OK, "set alignment 64");
    CHECK(sdc_gguf_set_alignment(w, 48) == SDC_ERR_INVALID_ARG, "alignment 48 refused");
    CHECK(sdc_gguf_set_i32(w, "general.alignment", 64) == SDC_ERR_INVALID_ARG,
          "general.alignment as i32 refused");
    const int n_kv = 28;

    float wf[3 * 5];
    for (int i = 0; i < 15; i++) wf[i] = (float)i * 0.25f - 1.0f;
    uint16_t wh[2 * 3 * 4];
    for (int i = 0; i < 24; i++) wh[i] = sdc_f32_to_fp16((float)i - 11.5f);
    int32_t wi[3] = {-1, 0, 1 << 30};
    const int64_t ne_f[2] = {5, 3}, ne_h[3] = {4, 3, 2}, ne_i[1] = {3}, ne_q[2] = {64, 2};
    gen_ctx g = {0};
    CHECK(sdc_gguf_add_tensor(w, "blk.f32", SDC_TYPE_F32, 2, ne_f, wf) == SDC_OK, "add f32");
    CHECK(sdc_gguf_add_tensor_fn(w, "blk.q8", SDC_TYPE_Q8_0, 2, ne_q, gen_bytes, &g) == SDC_OK,
          "add q8 via callback");
    CHECK(sdc_gguf_add_tensor(w, "blk.f16", SDC_TYPE_F16, 3, ne_h, wh) == SDC_OK, "add f16");
    CHECK(sdc_gguf_add_tensor(w, "blk.i32", SDC_TYPE_I32, 1, ne_i, wi) == SDC_OK, "add i32");
    CHECK(sdc_gguf_add_tensor(w, "blk.i32", SDC_TYPE_I32, 1, ne_i, wi) == SDC_ERR_INVALID_ARG &&
              contains(sdc_last_error(), "twice"),
          "duplicate tensor refused");
    const int64_t ne_bad[1] = {33};
    CHECK(sdc_gguf_add_tensor(w, "bad", SDC_TYPE_Q8_0, 1, ne_bad, wi) == SDC_ERR_INVALID_ARG &&
              contains(sdc_last_error(), "block size"),
          "q8_0 with 33 columns refused");
    CHECK(sdc_gguf_add_tensor(w, "bad", (sdc_type)4, 1, ne_i, wi) == SDC_ERR_INVALID_ARG,
          "unknown type refused");

    char path[512];
    snprintf(path, sizeof path, "%s/test_gguf_roundtrip.gguf", SDC_BINARY_DIR);
    sdc_status st = sdc_gguf_write_file(w, path);
    CHECK(st == SDC_OK, "write file: %s", sdc_last_error());
    void *mem = NULL;
    size_t mem_size = 0;
    CHECK(sdc_gguf_write_memory(w, &mem, &mem_size) == SDC_OK, "write memory");
    CHECK(g.calls == 2, "callback called once per write (%d)", g.calls);
    size_t fsize = 0;
    uint8_t *fbytes = read_all(path, &fsize);
    CHECK(fbytes && fsize == mem_size && !memcmp(fbytes, mem, fsize),
          "file and memory outputs are identical");
    free(fbytes);
    free(mem);
    sdc_gguf_writer_free(w);

    sdc_gguf_file *f = NULL;
    st = sdc_gguf_open(path, &f);
    CHECK(st == SDC_OK, "read back: %s", sdc_last_error());
    if (st) return;
    CHECK(sdc_gguf_kv_count(f) == n_kv, "%d KVs read back, expected %d", sdc_gguf_kv_count(f),
          n_kv);
    CHECK(sdc_gguf_alignment(f) == 64 && sdc_gguf_data_offset(f) % 64 == 0, "alignment 64");
    int ok = 1;
    uint8_t u8;
    int8_t i8;
    uint16_t u16;
    int16_t i16;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f32;
    double f64;
    bool b;
    const char *s;
    ok &= !sdc_gguf_get_u8(f, "t.u8", &u8) && u8 == 250;
    ok &= !sdc_gguf_get_i8(f, "t.i8", &i8) && i8 == -7;
    ok &= !sdc_gguf_get_u16(f, "t.u16", &u16) && u16 == 65000;
    ok &= !sdc_gguf_get_i16(f, "t.i16", &i16) && i16 == -32000;
    ok &= !sdc_gguf_get_u32(f, "t.u32", &u32) && u32 == 123456789u;
    ok &= !sdc_gguf_get_i32(f, "t.i32", &i32) && i32 == -123456789;
    ok &= !sdc_gguf_get_u64(f, "t.u64", &u64) && u64 == 0xfedcba9876543210ull;
    ok &= !sdc_gguf_get_i64(f, "t.i64", &i64) && i64 == -0x123456789abcdefll;
    ok &= !sdc_gguf_get_f32(f, "t.f32", &f32) && f32 == -1.5e-7f;
    ok &= !sdc_gguf_get_f64(f, "t.f64", &f64) && f64 == 1.0 / 3.0;
    ok &= !sdc_gguf_get_bool(f, "t.bool", &b) && b;
    ok &= !sdc_gguf_get_str(f, "general.architecture", &s) && !strcmp(s, "test");
    CHECK(ok, "scalar KVs read back with their values");
    const sdc_gguf_kv *kv = sdc_gguf_find_kv(f, "t.nul");
    CHECK(kv && kv->str_len == 3 && !memcmp(kv->str, "a\0b", 3), "string with a NUL byte");
    kv = sdc_gguf_find_kv(f, "t.replace");
    CHECK(kv && !strcmp(kv->str, "new value") && kv == sdc_gguf_kv_at(f, 13),
          "replaced key keeps its position");
    CHECK(!strcmp(sdc_gguf_kv_at(f, n_kv - 1)->key, "general.alignment"), "alignment key last");
    struct {
        const char *key;
        sdc_gguf_vtype t;
        const void *v;
        uint64_t n;
    } arrs[] = {
        {"t.a_u8", SDC_GGUF_U8, a_u8, 4},       {"t.a_i8", SDC_GGUF_I8, a_i8, 4},
        {"t.a_u16", SDC_GGUF_U16, a_u16, 3},    {"t.a_i16", SDC_GGUF_I16, a_i16, 3},
        {"t.a_u32", SDC_GGUF_U32, a_u32, 3},    {"t.a_i32", SDC_GGUF_I32, a_i32, 6},
        {"t.a_u64", SDC_GGUF_U64, a_u64, 3},    {"t.a_i64", SDC_GGUF_I64, a_i64, 3},
        {"t.a_f32", SDC_GGUF_F32, a_f32, 4},    {"t.a_f64", SDC_GGUF_F64, a_f64, 3},
        {"t.a_bool", SDC_GGUF_BOOL, a_bool, 3}, {"t.a_empty", SDC_GGUF_F32, a_f32, 0},
    };
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
        uint64_t n = 0;
        const void *d = NULL;
        st = sdc_gguf_get_arr(f, arrs[i].key, arrs[i].t, &n, &d);
        CHECK(st == SDC_OK && n == arrs[i].n &&
                  (n == 0 || !memcmp(d, arrs[i].v, n * sdc_gguf_vtype_size(arrs[i].t))),
              "array '%s' read back", arrs[i].key);
    }
    uint64_t n = 0;
    const void *d = NULL;
    st = sdc_gguf_get_arr(f, "t.a_str", SDC_GGUF_STRING, &n, &d);
    const char *const *rs = d;
    CHECK(st == SDC_OK && n == 3 && !strcmp(rs[0], strs[0]) && !strcmp(rs[1], "") &&
              !strcmp(rs[2], strs[2]),
          "string array read back");

    CHECK(sdc_gguf_tensor_count(f) == 4, "4 tensors read back");
    const sdc_gguf_tensor *t;
    t = sdc_gguf_tensor_at(f, 0);
    CHECK(t && !strcmp(t->name, "blk.f32") && t->type == SDC_TYPE_F32 && t->n_dims == 2 &&
              t->ne[0] == 5 && t->ne[1] == 3 && t->nbytes == 60 && !memcmp(t->data, wf, 60),
          "f32 tensor round trip");
    t = sdc_gguf_tensor_at(f, 1);
    int qok = t && !strcmp(t->name, "blk.q8") && t->type == SDC_TYPE_Q8_0 && t->nbytes == 136 &&
              t->offset == 64;
    for (size_t i = 0; qok && i < 136; i++)
        qok = ((const uint8_t *)t->data)[i] == (uint8_t)(i * 7 + 3);
    CHECK(qok, "q8_0 tensor written from the callback");
    t = sdc_gguf_tensor_at(f, 2);
    CHECK(t && t->type == SDC_TYPE_F16 && t->n_dims == 3 && t->ne[2] == 2 && t->offset == 256 &&
              !memcmp(t->data, wh, sizeof wh),
          "f16 3-D tensor round trip (offset %llu)", t ? (unsigned long long)t->offset : 0ull);
    t = sdc_gguf_tensor_at(f, 3);
    CHECK(t && t->type == SDC_TYPE_I32 && t->offset == 320 && !memcmp(t->data, wi, 12),
          "i32 tensor round trip");
    for (int i = 0; i < sdc_gguf_tensor_count(f); i++)
        CHECK((uintptr_t)sdc_gguf_tensor_at(f, i)->data % 64 == 0,
              "tensor %d data 64-aligned in the mapping", i);
    printf("round trip: %d KVs of all 13 value types and 4 tensors (one streamed from a callback) "
           "read back equal, alignment 64\n",
           n_kv);
    sdc_gguf_close(f);
    remove(path);

    /* a failing callback aborts the write and removes the partial file */
    sdc_gguf_writer_create(&w);
    sdc_gguf_add_tensor_fn(w, "other", SDC_TYPE_Q8_0, 2, ne_q, gen_bytes, &g);
    st = sdc_gguf_write_file(w, path);
    FILE *fp = fopen(path, "rb");
    CHECK(st != SDC_OK && contains(sdc_last_error(), "'other'") && !fp, "failing callback: %s",
          sdc_last_error());
    if (fp) fclose(fp);
    sdc_gguf_writer_free(w);
}

/* ---- corrupted files built byte by byte ----------------------------------------------- */

typedef struct bb {
    uint8_t p[2048];
    size_t n;
} bb;
static size_t b_put(bb *b, const void *v, size_t k) {
    size_t at = b->n;
    memcpy(b->p + b->n, v, k);
    b->n += k;
    return at;
}
static size_t b_u32(bb *b, uint32_t v) {
    return b_put(b, &v, 4);
}
static size_t b_u64(bb *b, uint64_t v) {
    return b_put(b, &v, 8);
}
static size_t b_str(bb *b, const char *s) {
    size_t at = b_u64(b, strlen(s));
    b_put(b, s, strlen(s));
    return at;
}

/* Positions of the fields that the battery patches. */
typedef struct layout {
    size_t version, n_tensors, n_kv, kv0_keylen, kv0_type, kv0_strlen, kv1_key, kv1_elem, kv1_n,
        kv2_val, kv3_n, kv4_type, kv4_val, t0_name, t0_ndims, t0_ne0, t0_ne1, t0_type, t1_name,
        t1_ne0, t1_type, t1_offset, data_start, data_end;
} layout;

/* `w_ne` (NULL: [8, 2]) replaces the shape of tensor 'w' (its data stays 64 bytes). */
static void build_base_ne(bb *b, layout *L, int w_dims, const uint64_t *w_ne) {
    memset(b, 0, sizeof *b);
    b_put(b, "GGUF", 4);
    L->version = b_u32(b, 3);
    L->n_tensors = b_u64(b, 2);
    L->n_kv = b_u64(b, 5);
    L->kv0_keylen = b_str(b, "a.str");
    L->kv0_type = b_u32(b, SDC_GGUF_STRING);
    L->kv0_strlen = b_str(b, "hi");
    L->kv1_key = b_str(b, "a.arr") + 8;
    b_u32(b, SDC_GGUF_ARRAY);
    L->kv1_elem = b_u32(b, SDC_GGUF_U16);
    L->kv1_n = b_u64(b, 3);
    uint16_t a[3] = {1, 2, 3};
    b_put(b, a, 6);
    b_str(b, "a.bool");
    b_u32(b, SDC_GGUF_BOOL);
    uint8_t one = 1;
    L->kv2_val = b_put(b, &one, 1);
    b_str(b, "a.strs");
    b_u32(b, SDC_GGUF_ARRAY);
    b_u32(b, SDC_GGUF_STRING);
    L->kv3_n = b_u64(b, 2);
    b_str(b, "x");
    b_str(b, "yz");
    b_str(b, "general.alignment");
    L->kv4_type = b_u32(b, SDC_GGUF_U32);
    L->kv4_val = b_u32(b, 32);
    L->t0_name = b_str(b, "w") + 8;
    static const uint64_t def_ne[2] = {8, 2};
    if (!w_ne) w_dims = 2, w_ne = def_ne;
    L->t0_ndims = b_u32(b, (uint32_t)w_dims);
    L->t0_ne0 = b_u64(b, w_ne[0]);
    L->t0_ne1 = b->n;
    for (int d = 1; d < w_dims; d++) b_u64(b, w_ne[d]);
    L->t0_type = b_u32(b, SDC_TYPE_F32);
    b_u64(b, 0);
    L->t1_name = b_str(b, "q") + 8;
    b_u32(b, 1);
    L->t1_ne0 = b_u64(b, 32);
    L->t1_type = b_u32(b, SDC_TYPE_Q8_0);
    L->t1_offset = b_u64(b, 64);
    while (b->n % 32) b->p[b->n++] = 0;
    L->data_start = b->n;
    for (int i = 0; i < 64 + 34; i++) b->p[b->n++] = (uint8_t)i;
    L->data_end = b->n;
    while (b->n % 32) b->p[b->n++] = 0;
}

static void build_base(bb *b, layout *L) {
    build_base_ne(b, L, 0, NULL);
}

static void patch32(bb *b, size_t at, uint32_t v) {
    memcpy(b->p + at, &v, 4);
}
static void patch64(bb *b, size_t at, uint64_t v) {
    memcpy(b->p + at, &v, 8);
}

static int n_rejected;

static void expect_reject(const char *what, const bb *b, size_t size, const char *w1,
                          const char *w2) {
    sdc_gguf_file *f = NULL;
    sdc_status st = sdc_gguf_open_memory(b->p, size, "bad.gguf", &f);
    const char *msg = sdc_last_error();
    CHECK(st == SDC_ERR_FORMAT && !f, "%s: accepted (status %d)", what, (int)st);
    CHECK(contains(msg, "bad.gguf") && contains(msg, w1) && contains(msg, w2 ? w2 : ""),
          "%s: message lacks '%s'/'%s': %s", what, w1, w2 ? w2 : "", msg);
    printf("  rejected %-32s -> %s\n", what, msg);
    n_rejected++;
    sdc_gguf_close(f);
}

static void test_corrupt(void) {
    bb base, b;
    layout L;
    build_base(&base, &L);
    sdc_gguf_file *f = NULL;
    CHECK(sdc_gguf_open_memory(base.p, base.n, "base.gguf", &f) == SDC_OK,
          "hand-built base file parses: %s", sdc_last_error());
    if (f) {
        const sdc_gguf_tensor *q = sdc_gguf_find_tensor(f, "q");
        CHECK(q && q->nbytes == 34 && ((const uint8_t *)q->data)[0] == 64, "base: tensor q data");
        sdc_gguf_close(f);
    }

    /* every truncation before the end of the last tensor's bytes fails; cutting only the
     * final padding leaves a valid file */
    int n_fail = 0, n_msg = 0;
    for (size_t cut = 0; cut < base.n; cut++) {
        sdc_status st = sdc_gguf_open_memory(base.p, cut, "cut.gguf", &f);
        const char *msg = sdc_last_error();
        if (cut < L.data_end) {
            CHECK(st == SDC_ERR_FORMAT, "truncated at %zu accepted", cut);
            n_fail += st == SDC_ERR_FORMAT;
            int good = contains(msg, "cut.gguf") &&
                       (contains(msg, "truncated") || contains(msg, "bad magic") ||
                        contains(msg, "impossible"));
            CHECK(good, "truncated at %zu: unclear message: %s", cut, msg);
            n_msg += good;
        } else {
            CHECK(st == SDC_OK, "cut in the final padding at %zu rejected: %s", cut, msg);
        }
        sdc_gguf_close(f);
        f = NULL;
    }
    printf("truncations: %d cuts rejected (%d with a 'truncated'-style message), %zu cuts in "
           "the final padding accepted\n",
           n_fail, n_msg, base.n - L.data_end);

#define MUT(what, stmt, w1, w2)                                                                    \
    do {                                                                                           \
        b = base;                                                                                  \
        stmt;                                                                                      \
        expect_reject(what, &b, b.n, w1, w2);                                                      \
    } while (0)

    MUT("bad magic", memcpy(b.p, "GGUX", 4), "bad magic", NULL);
    MUT("version 1", patch32(&b, L.version, 1), "version 1", NULL);
    MUT("version 4", patch32(&b, L.version, 4), "version 4", NULL);
    MUT("big-endian version", patch32(&b, L.version, 0x03000000u), "big-endian", NULL);
    MUT("huge tensor count", patch64(&b, L.n_tensors, 1ull << 40), "tensor count", "impossible");
    MUT("huge KV count", patch64(&b, L.n_kv, 1ull << 40), "KV count", "impossible");
    MUT("KV count too large", patch64(&b, L.n_kv, 6), "tensor 0", "limit");
    MUT("tensor count too large", patch64(&b, L.n_tensors, 3), "tensor 2", "empty tensor name");
    MUT("empty key", patch64(&b, L.kv0_keylen, 0), "KV 0", "empty key");
    MUT("huge key length", patch64(&b, L.kv0_keylen, 1ull << 20), "key length", "limit");
    MUT("bad value type", patch32(&b, L.kv0_type, 13), "'a.str'", "unknown value type 13");
    MUT("huge string length", patch64(&b, L.kv0_strlen, 1ull << 62), "'a.str'", "past the end");
    MUT("nested array", patch32(&b, L.kv1_elem, SDC_GGUF_ARRAY), "'a.arr'", "nested");
    MUT("bad array element type", patch32(&b, L.kv1_elem, 77), "'a.arr'", "element type 77");
    MUT("huge array", patch64(&b, L.kv1_n, 1ull << 62), "'a.arr'", "cannot fit");
    MUT("bool value 2", b.p[L.kv2_val] = 2, "'a.bool'", "neither 0 nor 1");
    MUT("huge string array", patch64(&b, L.kv3_n, 1ull << 61), "'a.strs'", "cannot fit");
    MUT("duplicate key", memcpy(b.p + L.kv1_key, "a.str", 5), "duplicate key 'a.str'", NULL);
    MUT("alignment not u32", patch32(&b, L.kv4_type, SDC_GGUF_I32), "general.alignment",
        "expected u32");
    MUT("alignment 0", patch32(&b, L.kv4_val, 0), "general.alignment", "power of two");
    MUT("alignment 2^17", patch32(&b, L.kv4_val, 1u << 17), "general.alignment", "up to 65536");
    MUT("alignment 48", patch32(&b, L.kv4_val, 48), "general.alignment", "power of two");
    MUT("alignment 128", patch32(&b, L.kv4_val, 128), "'q'", "not a multiple of the alignment 128");
    MUT("n_dims 5", patch32(&b, L.t0_ndims, 5), "tensor 'w'", "n_dims 5");
    MUT("type id 4 (removed)", patch32(&b, L.t0_type, 4), "tensor 'w'", "unknown type id 4");
    MUT("type id 99", patch32(&b, L.t0_type, 99), "tensor 'w'", "unknown type id 99");
    MUT("ne0 not a block multiple", patch64(&b, L.t1_ne0, 33), "tensor 'q'", "block size");
    MUT("shape overflow", (patch64(&b, L.t0_ne0, 1ull << 40), patch64(&b, L.t0_ne1, 1ull << 40)),
        "tensor 'w'", "overflow");
    MUT("dimension over int64", patch64(&b, L.t0_ne1, 1ull << 63), "tensor 'w'", "too large");
    MUT("offset not aligned", patch64(&b, L.t1_offset, 48), "'q'", "not a multiple");
    MUT("offset outside", patch64(&b, L.t1_offset, 96), "'q'", "outside the data section");
    MUT("offset far outside", patch64(&b, L.t1_offset, 1ull << 63), "'q'", "outside");
    MUT("overlapping tensors", patch64(&b, L.t1_offset, 32), "overlaps tensor", "'w'");
    MUT("tensor too big for the data", patch64(&b, L.t0_ne1, 8), "'w'", "outside");
    MUT("duplicate tensor name", b.p[L.t1_name] = 'w', "'w'", "duplicate name");
    MUT("empty file", b.n = 0, "bad magic", NULL);
#undef MUT
    /* zero elements, but the other dims multiply past int64: still rejected, so that
     * element counts computed in any order cannot overflow */
    const uint64_t zero_ne[3] = {1ull << 40, 1ull << 40, 0};
    build_base_ne(&b, &L, 3, zero_ne);
    expect_reject("zero dim, others overflow", &b, b.n, "tensor 'w'", "overflows");
    CHECK(sdc_gguf_open("/nonexistent/x.gguf", &f) == SDC_ERR_IO &&
              contains(sdc_last_error(), "/nonexistent/x.gguf"),
          "missing file");
    printf("corrupted files: %d rejected with the expected message\n", n_rejected);
}

int main(void) {
    sdc_st_file *expected = NULL;
    sdc_status st = sdc_st_open(GOLDEN("gguf/quant_expected.safetensors"), &expected);
    CHECK(st == SDC_OK, "open quant_expected.safetensors: %s", sdc_last_error());
    if (!st) {
        test_quant_golden(GOLDEN("gguf/quant_m4x256.gguf"), "m4x256", 4, 256, 29440, 2688,
                          expected);
        test_quant_golden(GOLDEN("gguf/quant_m3x512.gguf"), "m3x512", 3, 512, 43264, 0, expected);
        test_align64(expected);
        sdc_st_close(expected);
    }
    test_roundtrip();
    test_corrupt();
    TEST_MAIN_END();
}
