#include "text/grapheme.h"

#include "text/utf8.h"

static uint8_t gcb_value(int32_t cp) {
    int lo = 0, hi = sdc_gcb_n_ranges - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if ((uint32_t)cp < sdc_gcb_ranges[mid].lo)
            hi = mid - 1;
        else if ((uint32_t)cp > sdc_gcb_ranges[mid].hi)
            lo = mid + 1;
        else
            return sdc_gcb_ranges[mid].value;
    }
    return SDC_GCB_OTHER;
}

/* Whether there is no break between a character of class `a` and one of class `b`;
 * `pict_zwj` says the text so far ends in ExtPict Extend* ZWJ, `ri_odd` that it ends in an
 * odd number of regional indicators. */
static int joins(int a, int b, int b_pict, int pict_zwj, int ri_odd) {
    if (a == SDC_GCB_CR && b == SDC_GCB_LF) return 1;                         /* GB3 */
    if (a == SDC_GCB_CR || a == SDC_GCB_LF || a == SDC_GCB_CONTROL) return 0; /* GB4 */
    if (b == SDC_GCB_CR || b == SDC_GCB_LF || b == SDC_GCB_CONTROL) return 0; /* GB5 */
    if (a == SDC_GCB_L && (b == SDC_GCB_L || b == SDC_GCB_V || b == SDC_GCB_LV || b == SDC_GCB_LVT))
        return 1; /* GB6 */
    if ((a == SDC_GCB_LV || a == SDC_GCB_V) && (b == SDC_GCB_V || b == SDC_GCB_T))
        return 1;                                                         /* GB7 */
    if ((a == SDC_GCB_LVT || a == SDC_GCB_T) && b == SDC_GCB_T) return 1; /* GB8 */
    if (b == SDC_GCB_EXTEND || b == SDC_GCB_ZWJ) return 1;                /* GB9 */
    if (b == SDC_GCB_SPACING_MARK) return 1;                              /* GB9a */
    if (a == SDC_GCB_PREPEND) return 1;                                   /* GB9b */
    if (a == SDC_GCB_ZWJ && b_pict && pict_zwj) return 1;                 /* GB11 */
    if (a == SDC_GCB_RI && b == SDC_GCB_RI && ri_odd) return 1;           /* GB12/13 */
    return 0;
}

size_t sdc_grapheme_next(const char *s, size_t len) {
    int32_t cp;
    size_t pos = sdc_utf8_decode(s, len, &cp);
    uint8_t v = gcb_value(cp < 0 ? 0xFFFD : cp);
    int cls = v & 15, pict = (v & 16) != 0;
    int in_pict = pict; /* ExtPict Extend* so far */
    int pict_zwj = 0;
    int ri_count = cls == SDC_GCB_RI;
    while (pos < len) {
        size_t n = sdc_utf8_decode(s + pos, len - pos, &cp);
        uint8_t w = gcb_value(cp < 0 ? 0xFFFD : cp);
        int b = w & 15, b_pict = (w & 16) != 0;
        if (!joins(cls, b, b_pict, pict_zwj, ri_count % 2 == 1)) break;
        pict_zwj = in_pict && b == SDC_GCB_ZWJ;
        in_pict = (in_pict && b == SDC_GCB_EXTEND) || b_pict;
        ri_count = b == SDC_GCB_RI ? ri_count + 1 : 0;
        cls = b;
        pos += n;
    }
    return pos;
}
