/* SHA-256 (FIPS 180-4), for A1111's model hashes in /sdapi/v1/sd-models. */
#ifndef SDC_SERVER_SHA256_H
#define SDC_SERVER_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Writes the digest of data[0..n) as 64 lower-case hex digits and a NUL into hex. */
void sdc_srv_sha256_hex(const void *data, size_t n, char hex[65]);

#endif
