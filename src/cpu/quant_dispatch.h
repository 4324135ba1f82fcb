/* Registers the CPU's fast quantiser variants with src/core (core/quant_simd.h). */
#ifndef SDC_CPU_QUANT_DISPATCH_H
#define SDC_CPU_QUANT_DISPATCH_H

/* Idempotent and cheap: called where CPU work starts (backend creation, weight
 * conversion, context creation, ISA changes). Until it is called the quantisers run
 * their scalar code, which gives the same results. */
void sdc_cpu_quant_init(void);

#endif
