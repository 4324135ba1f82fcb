/* Base64 (RFC 4648, standard alphabet) for image payloads of the server. */
#ifndef SDC_SERVER_BASE64_H
#define SDC_SERVER_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Encodes n bytes; returns a malloc'd NUL-terminated string or NULL (out of memory). */
char *sdc_srv_base64_encode(const uint8_t *data, size_t n);

/* Decodes text (n chars). A "data:...;base64," prefix, whitespace and missing '='
 * padding are accepted; any other stray character is an error. Returns a malloc'd
 * buffer (size in *out_n) or NULL when the text is not base64 or memory is short. */
uint8_t *sdc_srv_base64_decode(const char *text, size_t n, size_t *out_n);

#endif
