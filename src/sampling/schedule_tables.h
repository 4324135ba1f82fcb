/* Tabulated schedules (internal to src/sampling). */
#ifndef SDC_SAMPLING_SCHEDULE_TABLES_H
#define SDC_SAMPLING_SCHEDULE_TABLES_H

/* Align-Your-Steps reference levels, 10 steps: SD1.5, SDXL, SVD. */
extern const float sdc_ays_levels[3][11];
/* GITS (coefficient 1.20) sigmas for 2..20 steps; writes steps+1 values, returns their
 * count, 0 if steps is outside 2..20. */
int sdc_gits_row(int steps, float *out);

/* Regularised incomplete beta inverse as sd.cpp computes it (Newton on a Lentz
 * continued fraction, 30 iterations). */
double sdc_beta_ppf(double u, double a, double b);

#endif
