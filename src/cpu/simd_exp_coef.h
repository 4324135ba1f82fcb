/* The constants of the SIMD e^x (sdc_exp256, sdc_exp512_softmax, sdc_exp_f32x4): x = n ln2 + r
 * with n = round(x log2 e), ln2 in two parts so r keeps full precision, then e^r = 1 + r +
 * r^2 (P5 + P4 r + ... + P0 r^5) on |r| <= ln2 / 2 (Cephes' expf coefficients). Every variant
 * evaluates them in the same order, so their lanes agree bit for bit. */
#ifndef SDC_CPU_SIMD_EXP_COEF_H
#define SDC_CPU_SIMD_EXP_COEF_H

#define SDC_EXP_LOG2E  1.44269504088896341f
#define SDC_EXP_LN2_HI 0.693359375f
#define SDC_EXP_LN2_LO -2.12194440e-4f
#define SDC_EXP_P0     1.9875691500e-4f
#define SDC_EXP_P1     1.3981999507e-3f
#define SDC_EXP_P2     8.3334519073e-3f
#define SDC_EXP_P3     4.1665795894e-2f
#define SDC_EXP_P4     1.6666665459e-1f
#define SDC_EXP_P5     5.0000001201e-1f
/* below this, e^x is under 2^-126: the softmax variants clamp here */
#define SDC_EXP_MIN_ARG -87.3f

#endif
