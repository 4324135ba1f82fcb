/* Small UTF-8 helpers for the tokenizer. */
#ifndef SDC_TEXT_UTF8_H
#define SDC_TEXT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes one code point from s[0..len) (len > 0). Returns its byte length and sets *cp;
 * on a malformed, overlong, surrogate or out-of-range sequence returns 1 with *cp = -1. */
size_t sdc_utf8_decode(const char *s, size_t len, int32_t *cp);
/* Byte length sentencepiece assumes from a lead byte (1 for stray continuation bytes). */
size_t sdc_utf8_lead_len(uint8_t c);
/* Unicode White_Space (Rust's char::is_whitespace). */
int sdc_unicode_is_whitespace(int32_t cp);

#endif
