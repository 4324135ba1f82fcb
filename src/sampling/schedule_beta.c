/* Inverse of the regularised incomplete beta function I_x(a,b), evaluated exactly the
 * way sd.cpp's beta scheduler does: the CDF by a modified-Lentz continued fraction
 * (Numerical Recipes' betacf, eps 3e-7, using the symmetry I_x(a,b) = 1 - I_{1-x}(b,a)
 * past the mean), inverted by 30 Newton steps from x = 0.5 clamped into (0,1). */
#include "sampling/schedule_tables.h"

#include <math.h>

static double log_beta_fn(double a, double b) {
    return lgamma(a) + lgamma(b) - lgamma(a + b);
}

static double guard_tiny(double v) {
    return fabs(v) < 1e-30 ? 1e-30 : v;
}

static double incbeta_cf(double x, double a, double b) {
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    const double qab = a + b, qap = a + 1.0, qam = a - 1.0;
    double c = 1.0;
    double d = 1.0 / guard_tiny(1.0 - qab * x / qap);
    double h = d;
    for (int m = 1; m <= 200; m++) {
        const int m2 = 2 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard_tiny(1.0 + aa * d);
        c = guard_tiny(1.0 + aa / c);
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard_tiny(1.0 + aa * d);
        c = guard_tiny(1.0 + aa / c);
        const double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < 3.0e-7) break;
    }
    return exp(a * log(x) + b * log(1.0 - x) - log_beta_fn(a, b)) / a * h;
}

static double beta_cdf(double x, double a, double b) {
    if (x == 0.0) return 0.0;
    if (x == 1.0) return 1.0;
    if (x < (a + 1.0) / (a + b + 2.0)) return incbeta_cf(x, a, b);
    return 1.0 - incbeta_cf(1.0 - x, b, a);
}

double sdc_beta_ppf(double u, double a, double b) {
    double x = 0.5;
    for (int i = 0; i < 30; i++) {
        const double f = beta_cdf(x, a, b) - u;
        if (fabs(f) < 1e-10) break;
        const double pdf = exp((a - 1.0) * log(x) + (b - 1.0) * log(1.0 - x) - log_beta_fn(a, b));
        x -= f / pdf;
        if (x <= 0.0) x = 1e-10;
        if (x >= 1.0) x = 1.0 - 1e-10;
    }
    return x;
}
