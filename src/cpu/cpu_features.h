/* Run-time SIMD detection. SDC_CPU_ISA=scalar|avx|avx2|avx512 caps what is used
 * (tests run every path this CPU can run). */
#ifndef SDC_CPU_FEATURES_H
#define SDC_CPU_FEATURES_H

typedef enum sdc_isa {
    SDC_ISA_SCALAR = 0,
    SDC_ISA_NEON = 1,
    SDC_ISA_AVX = 2,    /* AVX without FMA */
    SDC_ISA_AVX2 = 3,   /* AVX2 + FMA + F16C */
    SDC_ISA_AVX512 = 4, /* AVX-512 F/BW/VL/DQ + the above */
} sdc_isa;

/* Best level this CPU supports. */
sdc_isa sdc_cpu_isa_supported(void);
/* Level in use: supported, capped by SDC_CPU_ISA or sdc_cpu_set_isa(). */
sdc_isa sdc_cpu_isa(void);
/* Caps the level (for tests); returns the level now in use. */
sdc_isa sdc_cpu_set_isa(sdc_isa cap);
const char *sdc_isa_name(sdc_isa isa);

#endif
