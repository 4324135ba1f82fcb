#include "core/types.h"

#include <ctype.h>
#include <string.h>

#include "core/quant.h"

static void f32_to_f32_row(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}
static void f32_from_f32_row(const float *src, void *dst, int64_t n, const float *importance) {
    (void)importance;
    memcpy(dst, src, (size_t)n * sizeof(float));
}

#define QT(id, nm, bs, bb, fn) [id] = {nm, bs, bb, true, sdc_dequant_##fn, sdc_quant_##fn}

static const sdc_type_traits g_traits[SDC_TYPE_COUNT] = {
    [SDC_TYPE_F32] = {"f32", 1, 4, false, f32_to_f32_row, f32_from_f32_row},
    [SDC_TYPE_F16] = {"f16", 1, 2, false, sdc_f16_to_f32_row, sdc_f32_to_f16_row},
    [SDC_TYPE_BF16] = {"bf16", 1, 2, false, sdc_bf16_to_f32_row, sdc_f32_to_bf16_row},
    QT(SDC_TYPE_Q4_0, "q4_0", 32, 18, q4_0),
    QT(SDC_TYPE_Q4_1, "q4_1", 32, 20, q4_1),
    QT(SDC_TYPE_Q5_0, "q5_0", 32, 22, q5_0),
    QT(SDC_TYPE_Q5_1, "q5_1", 32, 24, q5_1),
    QT(SDC_TYPE_Q8_0, "q8_0", 32, 34, q8_0),
    QT(SDC_TYPE_Q8_1, "q8_1", 32, 36, q8_1),
    QT(SDC_TYPE_Q2_K, "q2_K", 256, 84, q2_K),
    QT(SDC_TYPE_Q3_K, "q3_K", 256, 110, q3_K),
    QT(SDC_TYPE_Q4_K, "q4_K", 256, 144, q4_K),
    QT(SDC_TYPE_Q5_K, "q5_K", 256, 176, q5_K),
    QT(SDC_TYPE_Q6_K, "q6_K", 256, 210, q6_K),
    QT(SDC_TYPE_Q8_K, "q8_K", 256, 292, q8_K),
    [SDC_TYPE_I8] = {"i8", 1, 1, false, NULL, NULL},
    [SDC_TYPE_I16] = {"i16", 1, 2, false, NULL, NULL},
    [SDC_TYPE_I32] = {"i32", 1, 4, false, NULL, NULL},
    [SDC_TYPE_I64] = {"i64", 1, 8, false, NULL, NULL},
    [SDC_TYPE_F64] = {"f64", 1, 8, false, NULL, NULL},
};

const sdc_type_traits *sdc_type_get(int type) {
    if (type < 0 || type >= SDC_TYPE_COUNT || !g_traits[type].name) return NULL;
    return &g_traits[type];
}

const char *sdc_type_name(int type) {
    const sdc_type_traits *t = sdc_type_get(type);
    return t ? t->name : "unknown";
}

int sdc_type_from_name(const char *name) {
    for (int i = 0; i < SDC_TYPE_COUNT; i++) {
        if (!g_traits[i].name) continue;
        const char *a = g_traits[i].name, *b = name;
        while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return i;
    }
    return -1;
}

size_t sdc_type_row_bytes(sdc_type type, int64_t n) {
    const sdc_type_traits *t = sdc_type_get(type);
    if (!t || n < 0 || n % t->block_size) return 0;
    return (size_t)(n / t->block_size) * t->block_bytes;
}
