/* Reference bytes for -M convert without --imat-in: sd.cpp's convert passes an importance
 * vector of ones to ggml_quantize_chunk, so ggml takes its weighted search
 * (quantize_row_<t>_impl) instead of the _ref quantiser.
 *
 * This program is compiled against ggml's own ggml-quants.c (ggml-org/ggml d99724f2, the
 * commit of the golden gguf/ files; it is not part of sdc) by gen_sdconvert_uniform.sh.
 * It reads raw float32 matrices (rows cols file) and writes, per type, ggml's quantised
 * bytes with all-ones importances to OUT_DIR/<matrix>.<type>.bin, or with the importances
 * of IMP.f32 (cols floats) when given, to OUT_DIR/<matrix>.<type>.imp.bin (the generator
 * checks those against the golden imatrix bytes: this build is ggml's oracle). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-quants.h"

/* ggml.c references these backend functions; the quantisers never reach them. */
void ggml_backend_tensor_set(void *t, const void *d, size_t o, size_t n) {
    (void)t, (void)d, (void)o, (void)n;
    abort();
}
void ggml_backend_tensor_memset(void *t, unsigned char v, size_t o, size_t n) {
    (void)t, (void)v, (void)o, (void)n;
    abort();
}
int ggml_backend_buffer_get_usage(void *b) {
    (void)b;
    abort();
}

typedef size_t (*qfn)(const float *, void *, int64_t, int64_t, const float *);

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: %s NAME ROWS COLS IN.f32 OUT_DIR [IMP.f32]\n", argv[0]);
        return 2;
    }
    const char *name = argv[1], *dir = argv[5];
    int64_t rows = atoll(argv[2]), cols = atoll(argv[3]);
    float *x = malloc(sizeof *x * (size_t)(rows * cols));
    float *ones = malloc(sizeof *ones * (size_t)cols);
    unsigned char *q = malloc((size_t)(rows * cols) * 2);
    FILE *f = fopen(argv[4], "rb");
    if (!f || fread(x, sizeof *x, (size_t)(rows * cols), f) != (size_t)(rows * cols)) return 1;
    fclose(f);
    for (int64_t i = 0; i < cols; i++) ones[i] = 1.0f;
    if (argc == 7) {
        FILE *fi = fopen(argv[6], "rb");
        if (!fi || fread(ones, sizeof *ones, (size_t)cols, fi) != (size_t)cols) return 1;
        fclose(fi);
    }
    static const struct {
        const char *name;
        qfn fn;
    } types[] = {{"q4_0", quantize_q4_0}, {"q4_1", quantize_q4_1}, {"q5_0", quantize_q5_0},
                 {"q5_1", quantize_q5_1}, {"q8_0", quantize_q8_0}, {"q2_K", quantize_q2_K},
                 {"q3_K", quantize_q3_K}, {"q4_K", quantize_q4_K}, {"q5_K", quantize_q5_K},
                 {"q6_K", quantize_q6_K}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        if (types[t].name[2] == '_' && types[t].name[3] == 'K' && cols % 256) continue;
        size_t n = types[t].fn(x, q, rows, cols, ones);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.%s%s.bin", dir, name, types[t].name,
                 argc == 7 ? ".imp" : "");
        FILE *o = fopen(path, "wb");
        if (!o || fwrite(q, 1, n, o) != n) return 1;
        fclose(o);
    }
    return 0;
}
