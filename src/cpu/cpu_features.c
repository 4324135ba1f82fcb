#include "cpu/cpu_features.h"
#include "cpu/quant_dispatch.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(SDC_HAVE_X86)
#include <cpuid.h>

static unsigned long long xgetbv0(void) {
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static sdc_isa detect(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return SDC_ISA_SCALAR;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return SDC_ISA_SCALAR;
    unsigned long long xcr0 = xgetbv0();
    if ((xcr0 & 6) != 6) return SDC_ISA_SCALAR; /* OS does not save YMM state */
    sdc_isa isa = SDC_ISA_AVX;
    if (__get_cpuid_max(0, NULL) < 7) return isa;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b >> 5) & 1;
    if (avx2 && fma && f16c) isa = SDC_ISA_AVX2;
    int avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
    if (isa == SDC_ISA_AVX2 && avx512 && (xcr0 & 0xe6) == 0xe6) isa = SDC_ISA_AVX512;
    return isa;
}
#elif defined(__aarch64__)
/* ASIMD is baseline on AArch64 and the *_neon.c kernels use no optional extension (no
 * FP16 arithmetic, no dotprod), so there is nothing to probe with getauxval. */
static sdc_isa detect(void) {
    return SDC_ISA_NEON;
}
#else
static sdc_isa detect(void) {
    return SDC_ISA_SCALAR;
}
#endif

static _Atomic int g_supported = -1;
static _Atomic int g_cap = -1;

sdc_isa sdc_cpu_isa_supported(void) {
    int s = atomic_load(&g_supported);
    if (s < 0) {
        s = (int)detect();
        atomic_store(&g_supported, s);
    }
    return (sdc_isa)s;
}

static int env_cap(void) {
    const char *e = getenv("SDC_CPU_ISA");
    if (!e) return SDC_ISA_AVX512;
    if (!strcmp(e, "scalar")) return SDC_ISA_SCALAR;
    if (!strcmp(e, "neon")) return SDC_ISA_NEON;
    if (!strcmp(e, "avx")) return SDC_ISA_AVX;
    if (!strcmp(e, "avx2")) return SDC_ISA_AVX2;
    return SDC_ISA_AVX512;
}

sdc_isa sdc_cpu_isa(void) {
    int cap = atomic_load(&g_cap);
    if (cap < 0) {
        cap = env_cap();
        atomic_store(&g_cap, cap);
    }
    sdc_isa s = sdc_cpu_isa_supported();
    return (int)s < cap ? s : (sdc_isa)cap;
}

sdc_isa sdc_cpu_set_isa(sdc_isa cap) {
    atomic_store(&g_cap, (int)cap);
    sdc_cpu_quant_init(); /* tests that pick a level get its quantisers too */
    return sdc_cpu_isa();
}

const char *sdc_isa_name(sdc_isa isa) {
    switch (isa) {
    case SDC_ISA_SCALAR:
        return "scalar";
    case SDC_ISA_NEON:
        return "neon";
    case SDC_ISA_AVX:
        return "avx";
    case SDC_ISA_AVX2:
        return "avx2+fma+f16c";
    case SDC_ISA_AVX512:
        return "avx512";
    }
    return "?";
}
