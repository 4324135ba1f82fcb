/* Lookups over the generated tables (binary search) and NFC (UAX #15: full canonical
 * decomposition, canonical ordering, canonical composition; Hangul by arithmetic). */
#include "text/clip_unicode.h"

#include <stdlib.h>

static int in_ranges(const uint32_t (*r)[2], int n, int32_t cp) {
    int lo = 0, hi = n - 1;
    uint32_t c = (uint32_t)cp;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c < r[mid][0])
            hi = mid - 1;
        else if (c > r[mid][1])
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

int sdc_ucd_is_letter(int32_t cp) {
    if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    return cp >= 0 && in_ranges(sdc_ucd_letters, sdc_ucd_letters_n, cp);
}

int sdc_ucd_is_number(int32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return cp >= 0 && in_ranges(sdc_ucd_numbers, sdc_ucd_numbers_n, cp);
}

int sdc_ucd_to_lower(int32_t cp, int32_t out[2]) {
    if (cp < 0x80) {
        out[0] = cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
        return 1;
    }
    if (cp == 0x130) { /* the one unconditional multi-character lower case */
        out[0] = 'i';
        out[1] = 0x307;
        return 2;
    }
    int lo = 0, hi = sdc_ucd_lower_n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        uint32_t c = sdc_ucd_lower[mid][0];
        if ((uint32_t)cp < c)
            hi = mid - 1;
        else if ((uint32_t)cp > c)
            lo = mid + 1;
        else {
            out[0] = (int32_t)sdc_ucd_lower[mid][1];
            return 1;
        }
    }
    out[0] = cp;
    return 1;
}

static int ccc_of(int32_t cp) {
    if (cp < 0x300) return 0;
    int lo = 0, hi = sdc_ucd_ccc_n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if ((uint32_t)cp < sdc_ucd_ccc[mid][0])
            hi = mid - 1;
        else if ((uint32_t)cp > sdc_ucd_ccc[mid][1])
            lo = mid + 1;
        else
            return (int)sdc_ucd_ccc[mid][2];
    }
    return 0;
}

static const uint32_t *decomp_of(int32_t cp) {
    if (cp < 0xC0) return NULL;
    int lo = 0, hi = sdc_ucd_decomp_n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if ((uint32_t)cp < sdc_ucd_decomp[mid][0])
            hi = mid - 1;
        else if ((uint32_t)cp > sdc_ucd_decomp[mid][0])
            lo = mid + 1;
        else
            return sdc_ucd_decomp[mid];
    }
    return NULL;
}

enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7 };
enum { LCOUNT = 19, VCOUNT = 21, TCOUNT = 28, NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT };

/* The primary composite of (a, b), or -1. */
static int32_t compose(int32_t a, int32_t b) {
    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE &&
        b < TBASE + TCOUNT)
        return a + (b - TBASE);
    int lo = 0, hi = sdc_ucd_comp_n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const uint32_t *e = sdc_ucd_comp[mid];
        if ((uint32_t)a < e[0] || ((uint32_t)a == e[0] && (uint32_t)b < e[1]))
            hi = mid - 1;
        else if ((uint32_t)a > e[0] || (uint32_t)b > e[1])
            lo = mid + 1;
        else
            return (int32_t)e[2];
    }
    return -1;
}

size_t sdc_ucd_nfc(const int32_t *in, size_t n, int32_t *out) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t c = in[i];
        const uint32_t *d;
        if (c >= SBASE && c < SBASE + SCOUNT) {
            int32_t s = c - SBASE;
            out[m++] = LBASE + s / NCOUNT;
            out[m++] = VBASE + (s % NCOUNT) / TCOUNT;
            if (s % TCOUNT) out[m++] = TBASE + s % TCOUNT;
        } else if ((d = decomp_of(c)) != NULL) {
            for (uint32_t k = 0; k < d[1]; k++) out[m++] = (int32_t)d[2 + k];
        } else {
            out[m++] = c;
        }
    }
    /* canonical ordering: stable insertion sort of each run of non-starters */
    for (size_t i = 1; i < m; i++) {
        int k = ccc_of(out[i]);
        if (!k) continue;
        size_t j = i;
        int32_t c = out[i];
        while (j > 0 && ccc_of(out[j - 1]) > k) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = c;
    }
    /* canonical composition */
    if (m == 0) return 0;
    size_t starter = 0, w = 1;
    int starter_valid = ccc_of(out[0]) == 0;
    int last_ccc = starter_valid ? 0 : 256;
    for (size_t i = 1; i < m; i++) {
        int32_t c = out[i];
        int k = ccc_of(c);
        if (starter_valid && (last_ccc < k || (last_ccc == 0 && w == starter + 1))) {
            int32_t p = compose(out[starter], c);
            if (p >= 0) {
                out[starter] = p;
                continue;
            }
        }
        if (k == 0) {
            starter = w;
            starter_valid = 1;
            last_ccc = 0;
        } else {
            last_ccc = k;
        }
        out[w++] = c;
    }
    return w;
}
