#include "base64.h"

#include <stdlib.h>
#include <string.h>

static const char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *sdc_srv_base64_encode(const uint8_t *data, size_t n) {
    if (n > (SIZE_MAX / 4) * 3 - 3) return NULL;
    size_t out_len = (n + 2) / 3 * 4;
    char *out = malloc(out_len + 1);
    if (!out) return NULL;
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8 | data[i + 2];
        out[o++] = k_alphabet[v >> 18];
        out[o++] = k_alphabet[(v >> 12) & 63];
        out[o++] = k_alphabet[(v >> 6) & 63];
        out[o++] = k_alphabet[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)data[i] << 16 | (i + 1 < n ? (uint32_t)data[i + 1] << 8 : 0);
        out[o++] = k_alphabet[v >> 18];
        out[o++] = k_alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < n ? k_alphabet[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    return out;
}

static int sextet(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62; /* '-' and '_': the URL-safe spelling */
    if (c == '/' || c == '_') return 63;
    return -1;
}

uint8_t *sdc_srv_base64_decode(const char *text, size_t n, size_t *out_n) {
    *out_n = 0;
    /* data URLs: "data:image/png;base64,AAAA" */
    if (n >= 5 && !strncmp(text, "data:", 5)) {
        const char *comma = memchr(text, ',', n);
        if (!comma) return NULL;
        size_t skip = (size_t)(comma + 1 - text);
        text += skip;
        n -= skip;
    }
    uint8_t *out = malloc(n / 4 * 3 + 3);
    if (!out) return NULL;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    int pad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = sextet(c);
        if (v < 0 || pad) { /* stray character, or data after padding */
            free(out);
            return NULL;
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (bits >= 6 || pad > 2) { /* a lone sextet cannot end a valid encoding */
        free(out);
        return NULL;
    }
    *out_n = o;
    return out;
}
