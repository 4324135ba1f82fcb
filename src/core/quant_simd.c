/* The registered provider of the fast quantiser variants (see quant_simd.h). */
#include "core/quant_simd.h"

#include <stdatomic.h>
#include <stddef.h>

static _Atomic(sdc_quant_simd_provider) g_provider;

void sdc_quant_simd_set_provider(sdc_quant_simd_provider provider) {
    atomic_store(&g_provider, provider);
}

const sdc_quant_simd *sdc_quant_simd_active(void) {
    sdc_quant_simd_provider p = atomic_load(&g_provider);
    return p ? p() : NULL;
}
