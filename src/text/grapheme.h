/* Extended grapheme clusters (UAX #29, rules GB3-GB13; not the Unicode 15.1 conjunct rule
 * GB9c). HF's Precompiled normalizer applies the charsmap per cluster, so emulating it
 * needs the same segmentation. */
#ifndef SDC_TEXT_GRAPHEME_H
#define SDC_TEXT_GRAPHEME_H

#include <stddef.h>
#include <stdint.h>

typedef enum sdc_gcb {
    SDC_GCB_OTHER,
    SDC_GCB_CR,
    SDC_GCB_LF,
    SDC_GCB_CONTROL,
    SDC_GCB_EXTEND,
    SDC_GCB_ZWJ,
    SDC_GCB_RI,
    SDC_GCB_PREPEND,
    SDC_GCB_SPACING_MARK,
    SDC_GCB_L,
    SDC_GCB_V,
    SDC_GCB_T,
    SDC_GCB_LV,
    SDC_GCB_LVT,
} sdc_gcb;

typedef struct sdc_gcb_range {
    uint32_t lo, hi;
    uint8_t value; /* sdc_gcb | 16 when Extended_Pictographic */
} sdc_gcb_range;

extern const sdc_gcb_range sdc_gcb_ranges[];
extern const int sdc_gcb_n_ranges;

/* Byte length of the grapheme cluster starting at s (valid UTF-8, len > 0). */
size_t sdc_grapheme_next(const char *s, size_t len);

#endif
