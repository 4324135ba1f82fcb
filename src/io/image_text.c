/* UTF-8 encoding and decoding for image metadata (EXIF UTF-16, PNG Latin-1 text). */
#include "io/image.h"

uint32_t sdc_utf8_next(const unsigned char *s, size_t len, size_t *pos) {
    static const uint32_t min_of[4] = {0, 0x80, 0x800, 0x10000}; /* no overlong forms */
    size_t i = *pos;
    unsigned c = s[i];
    *pos = i + 1;
    if (c < 0x80) return c;
    int extra = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 0;
    if (!extra || len - i - 1 < (size_t)extra) return 0xFFFD;
    uint32_t cp = c & (0x3Fu >> extra);
    for (int k = 1; k <= extra; k++) {
        if ((s[i + k] & 0xC0) != 0x80) return 0xFFFD;
        cp = cp << 6 | (s[i + k] & 0x3F);
    }
    *pos = i + 1 + (size_t)extra;
    if (cp < min_of[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0xFFFD;
    return cp;
}

size_t sdc_utf8_prefix(const char *s, size_t len, size_t max) {
    if (len <= max) return len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    return n;
}

size_t sdc_utf8_put(uint32_t cp, char *buf) {
    if (cp < 0x80) {
        buf[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        buf[0] = (char)(0xC0 | cp >> 6);
        buf[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        buf[0] = (char)(0xE0 | cp >> 12);
        buf[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        buf[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    buf[0] = (char)(0xF0 | cp >> 18);
    buf[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    buf[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    buf[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
