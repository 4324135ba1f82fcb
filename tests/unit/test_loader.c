/* Model loader: safetensors and GGUF files (written here) under prefixes into one map;
 * types kept or converted, ne reversed from PyTorch order, strides, alignment copies,
 * duplicate names across files, GGUF metadata, the golden quant file as is, and lookups
 * in a file with thousands of tensors. */
#include "test_util.h"

#include "core/fp16.h"
#include "io/model_loader.h"

#include <stdint.h>

static int contains(const char *s, const char *sub) {
    return strstr(s ? s : "", sub) != NULL;
}

/* ---- a tiny safetensors writer for the test ------------------------------------------- */

typedef struct st_entry {
    const char *name, *dtype;
    int ndim;
    int64_t shape[6];
    const void *data;
    size_t nbytes;
} st_entry;

/* Writes entries to path; spaces after the JSON make the data section start at an
 * address that is 1 mod 4 when `misalign`, else a multiple of 4. */
static void write_st(const char *path, const st_entry *e, int n, int misalign) {
    size_t cap = 256 + (size_t)n * 160, jl = 0, off = 0;
    char *json = malloc(cap + 8);
    jl += (size_t)snprintf(json + jl, cap - jl, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < n; i++) {
        jl += (size_t)snprintf(json + jl, cap - jl, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                               e[i].name, e[i].dtype);
        for (int d = 0; d < e[i].ndim; d++)
            jl += (size_t)snprintf(json + jl, cap - jl, "%s%lld", d ? "," : "",
                                   (long long)e[i].shape[d]);
        jl += (size_t)snprintf(json + jl, cap - jl, "],\"data_offsets\":[%zu,%zu]}", off,
                               off + e[i].nbytes);
        off += e[i].nbytes;
    }
    jl += (size_t)snprintf(json + jl, cap - jl, "}");
    while ((8 + jl) % 4 != (misalign ? 1u : 0u)) json[jl++] = ' ';
    FILE *fp = fopen(path, "wb");
    uint64_t hl = jl;
    fwrite(&hl, 8, 1, fp);
    fwrite(json, 1, jl, fp);
    for (int i = 0; i < n; i++) fwrite(e[i].data, 1, e[i].nbytes, fp);
    fclose(fp);
    free(json);
}

static void tmp_path(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/test_loader_%s", SDC_BINARY_DIR, name);
}

/* ---- main scenario -------------------------------------------------------------------- */

static float f32v[2 * 3 * 4];
static uint16_t f16v[5], bf16v[5];
static double f64v[6];
static int64_t i64v[4] = {-3, 0, 7, 2000000000};
static uint8_t u8v[3] = {0, 128, 255}, boolv[3] = {1, 0, 5};
static int32_t i32v[3] = {-5, 6, 1 << 30};
static float scalarv = 42.0f;

static void check_tensor(const sdc_loader *l, const char *name, sdc_type type, int64_t ne0,
                         int64_t ne1, int64_t ne2, int64_t ne3) {
    const sdc_tensor *t = sdc_loader_find(l, name);
    CHECK(t != NULL, "tensor '%s' missing", name);
    if (!t) return;
    CHECK(t->type == type, "'%s': type %s, expected %s", name, sdc_type_name(t->type),
          sdc_type_name(type));
    CHECK(t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2 && t->ne[3] == ne3,
          "'%s': ne [%lld,%lld,%lld,%lld], expected [%lld,%lld,%lld,%lld]", name,
          (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
          (long long)ne0, (long long)ne1, (long long)ne2, (long long)ne3);
    /* contiguous strides computed from the README-style block table, not by the code */
    const sdc_type_traits *tr = sdc_type_get(type);
    size_t nb1 = (size_t)(ne0 / tr->block_size) * tr->block_bytes;
    CHECK(t->nb[0] == tr->block_bytes && t->nb[1] == nb1 && t->nb[2] == nb1 * (size_t)ne1 &&
              t->nb[3] == nb1 * (size_t)ne1 * (size_t)ne2,
          "'%s': strides", name);
    CHECK(t->flags == SDC_TENSOR_PARAM && t->op == SDC_OP_NONE && t->view_src == NULL,
          "'%s': a weight leaf", name);
    CHECK(((uintptr_t)t->data & 3) == 0 || sdc_tensor_nelements(t) == 0,
          "'%s': data not 4-byte aligned", name);
}

static void test_mixed(void) {
    for (int i = 0; i < 24; i++) f32v[i] = (float)i * 0.5f - 3.0f;
    const float hv[5] = {0.5f, -2.0f, 1024.0f, 0.0f, -0.125f};
    for (int i = 0; i < 5; i++) {
        f16v[i] = sdc_f32_to_fp16(hv[i]);
        bf16v[i] = sdc_f32_to_bf16(hv[i]);
    }
    for (int i = 0; i < 6; i++) f64v[i] = 1.0 / (i + 1);

    /* misaligned data section: F32/I32 data must be copied to aligned memory */
    const st_entry se[] = {
        {"w.f32", "F32", 3, {2, 3, 4}, f32v, sizeof f32v},
        {"w.f16", "F16", 1, {5}, f16v, sizeof f16v},
        {"w.bf16", "BF16", 2, {5, 1}, bf16v, sizeof bf16v},
        {"w.f64", "F64", 2, {2, 3}, f64v, sizeof f64v},
        {"w.i64", "I64", 1, {4}, i64v, sizeof i64v},
        {"w.u8", "U8", 1, {3}, u8v, sizeof u8v},
        {"w.bool", "BOOL", 1, {3}, boolv, sizeof boolv},
        {"w.i32", "I32", 1, {3}, i32v, sizeof i32v},
        {"w.5d", "F32", 6, {1, 1, 2, 3, 2, 2}, f32v, sizeof f32v},
        {"w.scalar", "F32", 0, {0}, &scalarv, 4},
        {"w.empty64", "F64", 2, {0, 3}, &scalarv, 0},
    };
    const int n_se = (int)(sizeof se / sizeof se[0]);
    char st_path[512], gg_path[512], gg2_path[512];
    tmp_path(st_path, sizeof st_path, "a.safetensors");
    write_st(st_path, se, n_se, 1);

    /* a GGUF with a quantised tensor, f32, f64, i64 and some metadata */
    sdc_gguf_writer *w = NULL;
    sdc_gguf_writer_create(&w);
    const char *const toks[] = {"<s>", "hello", "world"};
    sdc_gguf_set_str(w, "general.architecture", "t5");
    sdc_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3);
    uint8_t q8[2 * 34];
    for (int i = 0; i < 68; i++) q8[i] = (uint8_t)(i * 5 + 1);
    const int64_t ne_q[2] = {32, 2}, ne_f[2] = {4, 6}, ne_d[1] = {6}, ne_i[1] = {4};
    sdc_gguf_add_tensor(w, "enc.q", SDC_TYPE_Q8_0, 2, ne_q, q8);
    sdc_gguf_add_tensor(w, "enc.f", SDC_TYPE_F32, 2, ne_f, f32v);
    sdc_gguf_add_tensor(w, "enc.d", SDC_TYPE_F64, 1, ne_d, f64v);
    sdc_gguf_add_tensor(w, "enc.i", SDC_TYPE_I64, 1, ne_i, i64v);
    tmp_path(gg_path, sizeof gg_path, "b.gguf");
    CHECK(sdc_gguf_write_file(w, gg_path) == SDC_OK, "write gguf: %s", sdc_last_error());
    sdc_gguf_writer_free(w);

    sdc_loader *l = NULL;
    CHECK(sdc_loader_create(&l) == SDC_OK, "create");
    sdc_status st = sdc_loader_add_file(l, st_path, "model.diffusion_model.");
    CHECK(st == SDC_OK, "add safetensors: %s", sdc_last_error());
    st = sdc_loader_add_file(l, gg_path, "text_encoders.t5xxl.transformer.");
    CHECK(st == SDC_OK, "add gguf: %s", sdc_last_error());
    CHECK(sdc_loader_tensor_count(l) == n_se + 4, "count %d", sdc_loader_tensor_count(l));
    CHECK(sdc_loader_file_count(l) == 2 && sdc_loader_file_format(l, 0) == SDC_FORMAT_SAFETENSORS &&
              sdc_loader_file_format(l, 1) == SDC_FORMAT_GGUF,
          "formats detected by magic");

    const sdc_st_tensor *raw = sdc_st_find(sdc_loader_file_st(l, 0), "w.f32");
    CHECK(raw && ((uintptr_t)raw->data & 3) != 0, "test premise: mapped F32 data is misaligned");
    const char *P = "model.diffusion_model.";
    char nm[128];
#define NM(s) (snprintf(nm, sizeof nm, "%s%s", P, s), nm)
    check_tensor(l, NM("w.f32"), SDC_TYPE_F32, 4, 3, 2, 1);
    check_tensor(l, NM("w.f16"), SDC_TYPE_F16, 5, 1, 1, 1);
    check_tensor(l, NM("w.bf16"), SDC_TYPE_BF16, 1, 5, 1, 1);
    check_tensor(l, NM("w.f64"), SDC_TYPE_F32, 3, 2, 1, 1);
    check_tensor(l, NM("w.i64"), SDC_TYPE_I32, 4, 1, 1, 1);
    check_tensor(l, NM("w.u8"), SDC_TYPE_I32, 3, 1, 1, 1);
    check_tensor(l, NM("w.bool"), SDC_TYPE_I32, 3, 1, 1, 1);
    check_tensor(l, NM("w.i32"), SDC_TYPE_I32, 3, 1, 1, 1);
    check_tensor(l, NM("w.5d"), SDC_TYPE_F32, 2, 2, 3, 2);
    check_tensor(l, NM("w.scalar"), SDC_TYPE_F32, 1, 1, 1, 1);
    check_tensor(l, NM("w.empty64"), SDC_TYPE_F32, 3, 0, 1, 1);
    P = "text_encoders.t5xxl.transformer.";
    check_tensor(l, NM("enc.q"), SDC_TYPE_Q8_0, 32, 2, 1, 1);
    check_tensor(l, NM("enc.f"), SDC_TYPE_F32, 4, 6, 1, 1);
    check_tensor(l, NM("enc.d"), SDC_TYPE_F32, 6, 1, 1, 1);
    check_tensor(l, NM("enc.i"), SDC_TYPE_I32, 4, 1, 1, 1);

    /* values: element (i0,i1,i2) of ne order = PyTorch [i2][i1][i0] */
    double max_err = 0;
    const sdc_tensor *t = sdc_loader_find(l, "model.diffusion_model.w.f32");
    int bad = 0;
    for (int i2 = 0; t && i2 < 2; i2++)
        for (int i1 = 0; i1 < 3; i1++)
            for (int i0 = 0; i0 < 4; i0++) {
                float v = *(const float *)sdc_tensor_ptr(t, i0, i1, i2, 0);
                bad += v != f32v[(i2 * 3 + i1) * 4 + i0];
            }
    CHECK(bad == 0, "w.f32 element order (%d wrong)", bad);
    t = sdc_loader_find(l, "model.diffusion_model.w.f16");
    for (int i = 0; t && i < 5; i++)
        bad += sdc_fp16_to_f32(((const uint16_t *)t->data)[i]) != hv[i];
    t = sdc_loader_find(l, "model.diffusion_model.w.bf16");
    for (int i = 0; t && i < 5; i++)
        bad += sdc_bf16_to_f32(((const uint16_t *)t->data)[i]) != hv[i];
    CHECK(bad == 0, "f16/bf16 kept as is (%d wrong)", bad);
    const char *f64names[2] = {"model.diffusion_model.w.f64",
                               "text_encoders.t5xxl.transformer.enc.d"};
    for (int k = 0; k < 2; k++) {
        t = sdc_loader_find(l, f64names[k]);
        for (int i = 0; t && i < 6; i++) {
            double d = fabs((double)((const float *)t->data)[i] - f64v[i]);
            if (d > max_err) max_err = d;
            CHECK(d <= 1e-7 * fabs(f64v[i]), "%s[%d] = %g, expected %g", f64names[k], i,
                  ((const float *)t->data)[i], f64v[i]);
        }
    }
    const char *i64names[2] = {"model.diffusion_model.w.i64",
                               "text_encoders.t5xxl.transformer.enc.i"};
    for (int k = 0; k < 2; k++) {
        t = sdc_loader_find(l, i64names[k]);
        for (int i = 0; t && i < 4; i++)
            CHECK(((const int32_t *)t->data)[i] == i64v[i], "%s[%d]", i64names[k], i);
    }
    t = sdc_loader_find(l, "model.diffusion_model.w.u8");
    CHECK(t && ((const int32_t *)t->data)[1] == 128 && ((const int32_t *)t->data)[2] == 255,
          "u8 -> i32");
    t = sdc_loader_find(l, "model.diffusion_model.w.bool");
    CHECK(t && ((const int32_t *)t->data)[0] == 1 && ((const int32_t *)t->data)[1] == 0 &&
              ((const int32_t *)t->data)[2] == 1,
          "bool -> i32 0/1");
    t = sdc_loader_find(l, "model.diffusion_model.w.scalar");
    CHECK(t && *(const float *)t->data == 42.0f, "scalar");
    t = sdc_loader_find(l, "text_encoders.t5xxl.transformer.enc.q");
    CHECK(t && !memcmp(t->data, q8, 68) && sdc_loader_tensor_file(l, t) == 1,
          "q8_0 bytes as written, from file 1");
    CHECK(sdc_loader_find(l, "w.f32") == NULL, "unprefixed name is absent");

    /* metadata */
    int fi = -1;
    const sdc_gguf_kv *kv = sdc_loader_find_kv(l, "tokenizer.ggml.tokens", &fi);
    CHECK(kv && fi == 1 && kv->arr_n == 3 && !strcmp(kv->arr_str[1], "hello"),
          "GGUF tokenizer metadata through the loader");
    CHECK(!strcmp(sdc_st_metadata(sdc_loader_file_st(l, 0), "format"), "pt"),
          "safetensors metadata through the loader");
    CHECK(!strcmp(sdc_loader_file_prefix(l, 1), "text_encoders.t5xxl.transformer.") &&
              !strcmp(sdc_loader_file_path(l, 0), st_path),
          "file prefix/path");
    printf("mixed: %d tensors from safetensors + GGUF under two prefixes; f64->f32 max abs error "
           "%.3g, integers -> i32 exact\n",
           sdc_loader_tensor_count(l), max_err);

    /* the same GGUF again under the same prefix: duplicate names name both files */
    int before = sdc_loader_tensor_count(l);
    st = sdc_loader_add_file(l, gg_path, "text_encoders.t5xxl.transformer.");
    CHECK(st == SDC_ERR_FORMAT && contains(sdc_last_error(), "in both") &&
              contains(sdc_last_error(), "enc.q") && contains(sdc_last_error(), gg_path),
          "duplicate across files: %s", sdc_last_error());
    printf("duplicate rejected: %s\n", sdc_last_error());
    CHECK(sdc_loader_tensor_count(l) == before && sdc_loader_file_count(l) == 2,
          "failed add leaves the loader unchanged");
    /* a safetensors file with a name the GGUF already brought */
    char dup_path[512];
    tmp_path(dup_path, sizeof dup_path, "dup.safetensors");
    st_entry de = {"enc.f", "F32", 1, {1}, &scalarv, 4};
    write_st(dup_path, &de, 1, 0);
    st = sdc_loader_add_file(l, dup_path, "text_encoders.t5xxl.transformer.");
    CHECK(st == SDC_ERR_FORMAT && contains(sdc_last_error(), gg_path) &&
              contains(sdc_last_error(), dup_path) &&
              contains(sdc_last_error(), "'text_encoders.t5xxl.transformer.enc.f'"),
          "duplicate across two files: %s", sdc_last_error());
    printf("duplicate rejected: %s\n", sdc_last_error());
    remove(dup_path);
    /* under another prefix it is fine */
    st = sdc_loader_add_file(l, gg_path, "cond_stage_model.");
    CHECK(st == SDC_OK && sdc_loader_find(l, "cond_stage_model.enc.f"), "same file, new prefix");

    /* name too long with the prefix */
    char longp[126];
    memset(longp, 'p', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    st = sdc_loader_add_file(l, gg_path, longp);
    CHECK(st != SDC_OK && contains(sdc_last_error(), "longer than"), "long name: %s",
          sdc_last_error());

    /* an I64 value beyond i32 */
    int64_t big[2] = {1, 1ll << 40};
    st_entry be = {"big", "I64", 1, {2}, big, sizeof big};
    tmp_path(gg2_path, sizeof gg2_path, "big.safetensors");
    write_st(gg2_path, &be, 1, 0);
    st = sdc_loader_add_file(l, gg2_path, NULL);
    CHECK(st == SDC_ERR_FORMAT && contains(sdc_last_error(), "'big'") &&
              contains(sdc_last_error(), "does not fit"),
          "i64 out of range: %s", sdc_last_error());
    CHECK(sdc_loader_find(l, "big") == NULL, "nothing of the failed file added");

    /* not a model file */
    FILE *fp = fopen(gg2_path, "wb");
    fputs("PK\x03\x04 zip", fp);
    fclose(fp);
    st = sdc_loader_add_file(l, gg2_path, NULL);
    /* a zip is read as a PyTorch checkpoint (io/ckpt.c): this one has no directory */
    CHECK(st == SDC_ERR_FORMAT && contains(sdc_last_error(), "zip"), "zip: %s", sdc_last_error());
    fp = fopen(gg2_path, "wb");
    fputs("hello world, not a model", fp);
    fclose(fp);
    st = sdc_loader_add_file(l, gg2_path, NULL);
    CHECK(st == SDC_ERR_FORMAT && contains(sdc_last_error(), "not a safetensors or GGUF"),
          "text file: %s", sdc_last_error());
    st = sdc_loader_add_file(l, "/nonexistent/model.gguf", NULL);
    CHECK(st == SDC_ERR_IO && contains(sdc_last_error(), "/nonexistent/model.gguf"), "missing");
    /* a corrupted file keeps the reader's message (file and tensor) */
    uint8_t hdr[64] = {0};
    const char *js = "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    uint64_t hl = strlen(js);
    memcpy(hdr, &hl, 8);
    memcpy(hdr + 8, js, hl);
    st = sdc_loader_add_memory(l, hdr, 8 + hl + 4, "short.safetensors", NULL);
    CHECK(st == SDC_ERR_FORMAT && contains(sdc_last_error(), "short.safetensors") &&
              contains(sdc_last_error(), "'x'"),
          "truncated file: %s", sdc_last_error());

    sdc_loader_free(l);
    remove(st_path);
    remove(gg_path);
    remove(gg2_path);
}

/* ---- golden GGUF as is, and a file with thousands of tensors --------------------------- */

static void test_golden_and_many(void) {
    sdc_loader *l = NULL;
    sdc_loader_create(&l);
    sdc_status st = sdc_loader_add_file(l, GOLDEN("gguf/quant_m4x256.gguf"), NULL);
    CHECK(st == SDC_OK, "golden gguf: %s", sdc_last_error());
    const sdc_gguf_file *g = sdc_loader_file_gguf(l, 0);
    int same = 0;
    for (int i = 0; g && i < sdc_gguf_tensor_count(g); i++) {
        const sdc_gguf_tensor *gt = sdc_gguf_tensor_at(g, i);
        const sdc_tensor *t = sdc_loader_find(l, gt->name);
        same += t && t->data == gt->data && (int)t->type == (int)gt->type &&
                t->ne[0] == gt->ne[0] && t->ne[1] == gt->ne[1] &&
                sdc_tensor_nbytes(t) == gt->nbytes;
    }
    CHECK(g && same == 26, "golden: %d/26 tensors map the file in place with the same type/shape",
          same);
    const sdc_tensor *q = sdc_loader_find(l, "q4_K.imatrix");
    CHECK(q && q->type == SDC_TYPE_Q4_K && q->ne[0] == 256 && q->ne[1] == 4 && q->nb[1] == 144,
          "q4_K tensor kept quantised");
    printf("golden quant_m4x256.gguf: %d/26 tensors mapped in place\n", same);
    sdc_loader_free(l);

    /* 5000 tensors: every one found by name, absent names not found */
    enum { N = 5000 };
    st_entry *e = calloc(N, sizeof *e);
    char(*names)[24] = calloc(N, sizeof *names);
    float *vals = calloc(N, sizeof *vals);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "blk.%d.w", i);
        vals[i] = (float)i;
        e[i] = (st_entry){names[i], "F32", 1, {1}, &vals[i], 4};
    }
    char path[512];
    tmp_path(path, sizeof path, "many.safetensors");
    write_st(path, e, N, 0);
    sdc_loader_create(&l);
    st = sdc_loader_add_file(l, path, "first_stage_model.");
    CHECK(st == SDC_OK, "many: %s", sdc_last_error());
    int found = 0;
    char nm[64];
    for (int i = 0; i < N; i++) {
        snprintf(nm, sizeof nm, "first_stage_model.blk.%d.w", i);
        const sdc_tensor *t = sdc_loader_find(l, nm);
        found += t && *(const float *)t->data == (float)i && sdc_loader_tensor_file(l, t) == 0;
    }
    snprintf(nm, sizeof nm, "first_stage_model.blk.%d.w", N);
    CHECK(found == N && !sdc_loader_find(l, nm) && !sdc_loader_find(l, "blk.0.w"),
          "many: %d/%d found", found, N);
    printf("many: %d/%d tensors found by name with their values\n", found, N);
    sdc_loader_free(l);
    remove(path);
    free(e);
    free(names);
    free(vals);
}

int main(void) {
    test_mixed();
    test_golden_and_many();
    TEST_MAIN_END();
}
