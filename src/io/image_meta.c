/* The generation parameters stored in image files, found without decoding pixels:
 * PNG tEXt / zTXt / iTXt chunks with keyword "parameters" (A1111, sd.cpp, ComfyUI
 * exports), JPEG EXIF UserComment (A1111, via piexif) or a COM segment that starts
 * with "parameters\0" (sd.cpp). Every length is checked against the data. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/image.h"

/* Decompressed text chunks may not grow beyond this (compression bombs). */
#define TEXT_MAX (4u << 20)

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int utf8_valid(const uint8_t *s, size_t n) {
    for (size_t pos = 0; pos < n;) {
        size_t at = pos;
        uint32_t cp = sdc_utf8_next(s, n, &pos);
        /* a real U+FFFD is 3 bytes; the replacement for a bad byte consumes one */
        if (cp == 0xFFFD && pos - at != 3) return 0;
    }
    return 1;
}

/* Copies text (n bytes, cut at the first NUL, trailing NULs dropped) as a C string; bytes
 * that are not UTF-8 are read as Latin-1, the encoding of PNG tEXt. */
static sdc_status text_copy(const uint8_t *s, size_t n, const char *label, char **out) {
    const uint8_t *nul = memchr(s, 0, n);
    if (nul) n = (size_t)(nul - s);
    int latin1 = !utf8_valid(s, n);
    char *t = malloc(n * (latin1 ? 2 : 1) + 1);
    if (!t) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes of text", label, n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (latin1)
            k += sdc_utf8_put(s[i], t + k);
        else
            t[k++] = (char)s[i];
    }
    t[k] = 0;
    *out = t;
    return SDC_OK;
}

static sdc_status inflate_text(const uint8_t *z, size_t n, const char *label, char **out) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK)
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: cannot start zlib", label);
    size_t cap = n * 4 + 256 < TEXT_MAX ? n * 4 + 256 : TEXT_MAX;
    uint8_t *buf = malloc(cap);
    int rc = Z_OK;
    zs.next_in = (Bytef *)z;
    zs.avail_in = (uInt)n;
    while (buf) {
        zs.next_out = buf + zs.total_out;
        zs.avail_out = (uInt)(cap - zs.total_out);
        rc = inflate(&zs, Z_FINISH);
        if (rc == Z_STREAM_END || (rc != Z_OK && rc != Z_BUF_ERROR) || zs.avail_out) break;
        if (cap >= TEXT_MAX) break; /* full at the limit */
        size_t ncap = cap * 2 < TEXT_MAX ? cap * 2 : TEXT_MAX;
        uint8_t *grown = realloc(buf, ncap);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap = ncap;
    }
    size_t got = zs.total_out;
    inflateEnd(&zs);
    if (!buf) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory inflating text", label);
    sdc_status st = SDC_OK;
    if (rc != Z_STREAM_END)
        st = sdc_fail(SDC_ERR_FORMAT, "%s: compressed \"parameters\" text is %s", label,
                      got >= TEXT_MAX ? "larger than 4 MiB" : "corrupt");
    else
        st = text_copy(buf, got, label, out);
    free(buf);
    return st;
}

/* One "parameters" text chunk; NULL *out if the chunk is of another keyword. */
static sdc_status png_text_chunk(const char *type, const uint8_t *d, size_t n, const char *label,
                                 char **out) {
    static const char key[] = "parameters";
    if (n < sizeof key || memcmp(d, key, sizeof key)) return SDC_OK;
    d += sizeof key, n -= sizeof key;
    if (!memcmp(type, "tEXt", 4)) return text_copy(d, n, label, out);
    if (!memcmp(type, "zTXt", 4)) {
        if (n < 1 || d[0] != 0)
            return sdc_fail(SDC_ERR_FORMAT, "%s: zTXt \"parameters\": unknown compression", label);
        return inflate_text(d + 1, n - 1, label, out);
    }
    /* iTXt: compression flag, method, language tag\0, translated keyword\0, text */
    if (n < 2) return sdc_fail(SDC_ERR_FORMAT, "%s: iTXt \"parameters\" is truncated", label);
    int compressed = d[0];
    if (compressed > 1 || (compressed && d[1] != 0))
        return sdc_fail(SDC_ERR_FORMAT, "%s: iTXt \"parameters\": unknown compression", label);
    size_t pos = 2;
    for (int field = 0; field < 2; field++) {
        const uint8_t *nul = memchr(d + pos, 0, n - pos);
        if (!nul) return sdc_fail(SDC_ERR_FORMAT, "%s: iTXt \"parameters\" is truncated", label);
        pos = (size_t)(nul - d) + 1;
    }
    return compressed ? inflate_text(d + pos, n - pos, label, out)
                      : text_copy(d + pos, n - pos, label, out);
}

sdc_status sdc_png_find_parameters(const uint8_t *data, size_t size, const char *label,
                                   char **text) {
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    *text = NULL;
    if (size < 8 || memcmp(data, sig, 8))
        return sdc_fail(SDC_ERR_FORMAT, "%s: not a PNG file (bad signature)", label);
    size_t pos = 8;
    while (pos < size) {
        if (size - pos < 12)
            return sdc_fail(SDC_ERR_FORMAT, "%s: invalid PNG: truncated chunk at offset %zu", label,
                            pos);
        uint32_t len = be32(data + pos);
        const char *type = (const char *)data + pos + 4;
        if (len > size - pos - 12)
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: invalid PNG: chunk of %u bytes at offset %zu runs past the end "
                            "of the file (%zu bytes)",
                            label, len, pos, size);
        if (!memcmp(type, "IEND", 4)) return SDC_OK;
        if (!memcmp(type, "tEXt", 4) || !memcmp(type, "zTXt", 4) || !memcmp(type, "iTXt", 4)) {
            sdc_status st = png_text_chunk(type, data + pos + 8, len, label, text);
            if (st != SDC_OK || *text) return st;
        }
        pos += 12 + (size_t)len;
    }
    return sdc_fail(SDC_ERR_FORMAT, "%s: invalid PNG: no IEND chunk", label);
}

/* ---- JPEG ---- */

typedef struct tiff {
    const uint8_t *p;
    size_t n;
    int big; /* "MM" byte order */
} tiff;

static uint32_t tiff16(const tiff *t, size_t at) {
    const uint8_t *q = t->p + at;
    return t->big ? (uint32_t)q[0] << 8 | q[1] : (uint32_t)q[1] << 8 | q[0];
}

static uint32_t tiff32(const tiff *t, size_t at) {
    return t->big ? tiff16(t, at) << 16 | tiff16(t, at + 2)
                  : tiff16(t, at + 2) << 16 | tiff16(t, at);
}

/* Finds `tag` in the IFD at `ifd`; returns the entry's offset, 0 if absent or damaged. */
static size_t tiff_find(const tiff *t, uint32_t ifd, uint32_t tag) {
    if (ifd < 8 || ifd > t->n || t->n - ifd < 2) return 0;
    uint32_t count = tiff16(t, ifd);
    if ((t->n - ifd - 2) / 12 < count) return 0;
    for (uint32_t i = 0; i < count; i++) {
        size_t e = ifd + 2 + (size_t)i * 12;
        if (tiff16(t, e) == tag) return e;
    }
    return 0;
}

/* UTF-16 of `big` byte order to UTF-8 (unpaired surrogates become U+FFFD). */
static sdc_status utf16_to_utf8(const uint8_t *s, size_t n, int big, const char *label,
                                char **out) {
    n &= ~(size_t)1;
    char *t = malloc(n / 2 * 3 + 1);
    if (!t) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: cannot allocate text", label);
    size_t k = 0;
    for (size_t i = 0; i < n; i += 2) {
        uint32_t u = big ? (uint32_t)s[i] << 8 | s[i + 1] : (uint32_t)s[i + 1] << 8 | s[i];
        if (u == 0) break;
        if (u >= 0xD800 && u <= 0xDBFF && i + 3 < n) {
            uint32_t v =
                big ? (uint32_t)s[i + 2] << 8 | s[i + 3] : (uint32_t)s[i + 3] << 8 | s[i + 2];
            if (v >= 0xDC00 && v <= 0xDFFF) {
                u = 0x10000 + ((u - 0xD800) << 10) + (v - 0xDC00);
                i += 2;
            }
        }
        if (u >= 0xD800 && u <= 0xDFFF) u = 0xFFFD;
        k += sdc_utf8_put(u, t + k);
    }
    t[k] = 0;
    *out = t;
    return SDC_OK;
}

/* EXIF UserComment: an 8-byte character code, then the text. piexif (A1111) writes
 * UNICODE as UTF-16BE whatever the TIFF byte order; others follow the TIFF order. A
 * byte-order mark decides; without one, the side holding the zero high bytes of
 * Latin text does, then the TIFF order. */
static sdc_status user_comment_text(const tiff *t, const uint8_t *c, size_t n, const char *label,
                                    char **out) {
    if (n < 8) return SDC_OK;
    const uint8_t *s = c + 8;
    size_t m = n - 8;
    if (!memcmp(c, "UNICODE\0", 8)) {
        int big = t->big;
        if (m >= 2 && ((s[0] == 0xFE && s[1] == 0xFF) || (s[0] == 0xFF && s[1] == 0xFE))) {
            big = s[0] == 0xFE;
            s += 2, m -= 2;
        } else {
            size_t zero_even = 0, zero_odd = 0;
            for (size_t i = 0; i + 1 < m; i += 2) zero_even += !s[i], zero_odd += !s[i + 1];
            if (zero_even != zero_odd) big = zero_even > zero_odd;
        }
        return utf16_to_utf8(s, m, big, label, out);
    }
    if (!memcmp(c, "ASCII\0\0\0", 8) || !memcmp(c, "\0\0\0\0\0\0\0\0", 8))
        return text_copy(s, m, label, out);
    return SDC_OK; /* JIS or unknown: not text we can read */
}

/* APP1 "Exif\0\0" payload: IFD0 -> Exif IFD (0x8769) -> UserComment (0x9286). */
static sdc_status exif_parameters(const uint8_t *p, size_t n, const char *label, char **out) {
    if (n < 6 + 8 || memcmp(p, "Exif\0\0", 6)) return SDC_OK;
    tiff t = {p + 6, n - 6, 0};
    if (!memcmp(t.p, "MM", 2))
        t.big = 1;
    else if (memcmp(t.p, "II", 2))
        return SDC_OK;
    if (tiff16(&t, 2) != 42) return SDC_OK;
    size_t e = tiff_find(&t, tiff32(&t, 4), 0x8769);
    if (!e) return SDC_OK;
    e = tiff_find(&t, tiff32(&t, e + 8), 0x9286);
    if (!e) return SDC_OK;
    uint32_t type = tiff16(&t, e + 2), count = tiff32(&t, e + 4);
    if (type != 7 && type != 2 && type != 1) return SDC_OK;
    size_t at = count <= 4 ? e + 8 : tiff32(&t, e + 8);
    if (at > t.n || count > t.n - at) return SDC_OK; /* damaged EXIF: ignore it, as readers do */
    return user_comment_text(&t, t.p + at, count, label, out);
}

sdc_status sdc_jpeg_find_parameters(const uint8_t *data, size_t size, const char *label,
                                    char **text) {
    *text = NULL;
    if (size < 3 || data[0] != 0xFF || data[1] != 0xD8)
        return sdc_fail(SDC_ERR_FORMAT, "%s: not a JPEG file (bad signature)", label);
    char *comment = NULL; /* COM "parameters" */
    size_t pos = 2;
    sdc_status st = SDC_OK;
    for (;;) {
        while (pos < size && data[pos] != 0xFF) pos++; /* stray bytes: skip, as decoders do */
        while (pos < size && data[pos] == 0xFF) pos++; /* fill bytes */
        if (pos >= size) {
            st = sdc_fail(SDC_ERR_FORMAT, "%s: invalid JPEG: ends before the image data", label);
            break;
        }
        uint8_t m = data[pos++];
        if (m == 0xD9 || m == 0xDA) break; /* EOI, or SOS: metadata comes before the scans */
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue; /* markers without a length */
        if (size - pos < 2 || ((size_t)data[pos] << 8 | data[pos + 1]) < 2 ||
            ((size_t)data[pos] << 8 | data[pos + 1]) > size - pos) {
            st = sdc_fail(SDC_ERR_FORMAT,
                          "%s: invalid JPEG: segment 0x%02X at offset %zu runs past the end of "
                          "the file (%zu bytes)",
                          label, m, pos - 2, size);
            break;
        }
        size_t len = (size_t)data[pos] << 8 | data[pos + 1];
        const uint8_t *p = data + pos + 2;
        size_t n = len - 2;
        pos += len;
        if (m == 0xE1 && !*text) {
            if ((st = exif_parameters(p, n, label, text)) != SDC_OK) break;
        } else if (m == 0xFE && !comment && n > 11 && !memcmp(p, "parameters\0", 11)) {
            if ((st = text_copy(p + 11, n - 11, label, &comment)) != SDC_OK) break;
        }
    }
    if (st != SDC_OK) {
        free(*text);
        *text = NULL;
        free(comment);
        return st;
    }
    /* both present (our files): the longer, as each is cut to one 64 KiB segment */
    if (comment && (!*text || strlen(comment) > strlen(*text))) {
        free(*text);
        *text = comment;
    } else {
        free(comment);
    }
    return SDC_OK;
}
