/* Zip reader: see zip.h. Layout facts (APPNOTE 6.3): the end-of-central-directory
 * record (EOCD, 22 bytes + comment) at the end; for Zip64 a locator just before it
 * points at the Zip64 EOCD; central directory headers (46 bytes + name + extra +
 * comment) give each entry's sizes and local header offset; the local header (30 bytes
 * + name + extra) precedes the data. */
#include "io/zip.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define ZIP_MAX_ENTRIES   (1 << 20)
#define ZIP_MAX_COMMENT   65535
#define ZIP_MAX_NAME      4096
#define ZIP_INFLATE_RATIO 1100 /* deflate cannot compress more than ~1032:1 */

typedef struct zent {
    sdc_zip_entry e;
    uint8_t *inflated;
} zent;

struct sdc_zip {
    char *label;
    const uint8_t *img;
    size_t size;
    zent *ents;
    int n;
    char *names; /* arena of NUL-terminated names */
};

static uint16_t rd16(const uint8_t *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) {
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* true when [off, off+len) lies inside a buffer of `size` bytes */
static bool inside(uint64_t off, uint64_t len, uint64_t size) {
    return off <= size && len <= size - off;
}

/* Reads the Zip64 extended information extra field (id 1): the fields present are those
 * whose 32-bit value in the header is 0xffffffff, in the order size, comp size, offset. */
static sdc_status zip64_extra(const sdc_zip *z, const uint8_t *ex, size_t exlen, uint64_t *size,
                              uint64_t *csize, uint64_t *off, const char *name) {
    size_t p = 0;
    while (p + 4 <= exlen) {
        uint16_t id = rd16(ex + p), len = rd16(ex + p + 2);
        if (p + 4 + len > exlen) break;
        if (id == 1) {
            const uint8_t *d = ex + p + 4;
            size_t q = 0;
            uint64_t *fields[3] = {size, csize, off};
            for (int i = 0; i < 3; i++) {
                if (*fields[i] != 0xffffffffu) continue;
                if (q + 8 > len)
                    return sdc_fail(SDC_ERR_FORMAT, "%s: zip entry '%s': truncated Zip64 field",
                                    z->label, name);
                *fields[i] = rd64(d + q);
                q += 8;
            }
            return SDC_OK;
        }
        p += 4 + (size_t)len;
    }
    if (*size == 0xffffffffu || *csize == 0xffffffffu || *off == 0xffffffffu)
        return sdc_fail(SDC_ERR_FORMAT, "%s: zip entry '%s': Zip64 sizes without a Zip64 field",
                        z->label, name);
    return SDC_OK;
}

/* Finds the central directory: its offset, size and entry count. */
static sdc_status find_directory(const sdc_zip *z, uint64_t *cd_off, uint64_t *cd_size,
                                 uint64_t *count) {
    const uint8_t *img = z->img;
    size_t size = z->size;
    if (size < 22)
        return sdc_fail(SDC_ERR_FORMAT, "%s: zip archive too short (%zu bytes)", z->label, size);
    size_t lo = size - 22 > ZIP_MAX_COMMENT ? size - 22 - ZIP_MAX_COMMENT : 0;
    size_t eocd = (size_t)-1;
    for (size_t p = size - 22 + 1; p-- > lo;) {
        if (rd32(img + p) == 0x06054b50u && p + 22 + rd16(img + p + 20) == size) {
            eocd = p;
            break;
        }
    }
    if (eocd == (size_t)-1)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: zip end-of-central-directory record not found (truncated file?)",
                        z->label);
    const uint8_t *e = img + eocd;
    if (rd16(e + 4) != 0 || rd16(e + 6) != 0)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: multi-disk zip archives are not supported",
                        z->label);
    *count = rd16(e + 10);
    *cd_size = rd32(e + 12);
    *cd_off = rd32(e + 16);
    if (*count == 0xffff || *cd_size == 0xffffffffu || *cd_off == 0xffffffffu) {
        if (eocd < 20 || rd32(img + eocd - 20) != 0x07064b50u)
            return sdc_fail(SDC_ERR_FORMAT, "%s: Zip64 archive without a Zip64 locator", z->label);
        uint64_t z64 = rd64(img + eocd - 20 + 8);
        if (!inside(z64, 56, eocd - 20) || rd32(img + z64) != 0x06064b50u)
            return sdc_fail(SDC_ERR_FORMAT, "%s: bad Zip64 end-of-central-directory offset",
                            z->label);
        *count = rd64(img + z64 + 32);
        *cd_size = rd64(img + z64 + 40);
        *cd_off = rd64(img + z64 + 48);
    }
    if (!inside(*cd_off, *cd_size, eocd))
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: zip central directory (offset %llu, %llu bytes) outside the file",
                        z->label, (unsigned long long)*cd_off, (unsigned long long)*cd_size);
    if (*count > ZIP_MAX_ENTRIES || *count > *cd_size / 46)
        return sdc_fail(SDC_ERR_FORMAT, "%s: zip directory claims %llu entries in %llu bytes",
                        z->label, (unsigned long long)*count, (unsigned long long)*cd_size);
    return SDC_OK;
}

/* One central directory header at *pos: fills the entry, advances *pos. */
static sdc_status read_entry(sdc_zip *z, uint64_t *pos, uint64_t cd_end, char **name_arena,
                             zent *out) {
    const uint8_t *img = z->img;
    uint64_t p = *pos;
    if (!inside(p, 46, cd_end) || rd32(img + p) != 0x02014b50u)
        return sdc_fail(SDC_ERR_FORMAT, "%s: bad zip central directory header at byte %llu",
                        z->label, (unsigned long long)p);
    const uint8_t *h = img + p;
    uint16_t flags = rd16(h + 8), method = rd16(h + 10);
    uint16_t nlen = rd16(h + 28), xlen = rd16(h + 30), clen = rd16(h + 32);
    if (!inside(p + 46, (uint64_t)nlen + xlen + clen, cd_end))
        return sdc_fail(SDC_ERR_FORMAT, "%s: zip central directory header at byte %llu overruns",
                        z->label, (unsigned long long)p);
    if (nlen == 0 || nlen > ZIP_MAX_NAME)
        return sdc_fail(SDC_ERR_FORMAT, "%s: zip entry name of %u bytes at byte %llu", z->label,
                        nlen, (unsigned long long)p);
    char *name = *name_arena;
    memcpy(name, h + 46, nlen);
    name[nlen] = '\0';
    if (memchr(name, '\0', nlen))
        return sdc_fail(SDC_ERR_FORMAT, "%s: zip entry name with a NUL byte", z->label);
    *name_arena += nlen + 1;
    uint64_t csize = rd32(h + 20), size = rd32(h + 24), loff = rd32(h + 42);
    sdc_status st = zip64_extra(z, h + 46 + nlen, xlen, &size, &csize, &loff, name);
    if (st) return st;
    if (flags & 1)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: zip entry '%s' is encrypted", z->label, name);
    if (method != 0 && method != 8)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "%s: zip entry '%s': compression method %u (only stored and deflate)",
                        z->label, name, method);
    if (method == 0 && csize != size)
        return sdc_fail(SDC_ERR_FORMAT, "%s: stored zip entry '%s' has sizes %llu and %llu",
                        z->label, name, (unsigned long long)csize, (unsigned long long)size);
    /* the local header: only its name and extra lengths matter (torch pads with extra) */
    if (!inside(loff, 30, z->size) || rd32(img + loff) != 0x04034b50u)
        return sdc_fail(SDC_ERR_FORMAT, "%s: zip entry '%s': bad local header offset %llu",
                        z->label, name, (unsigned long long)loff);
    uint64_t data = loff + 30 + rd16(img + loff + 26) + rd16(img + loff + 28);
    if (!inside(data, csize, z->size))
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: zip entry '%s': %llu bytes at offset %llu run past the end of the "
                        "file (%zu bytes)",
                        z->label, name, (unsigned long long)csize, (unsigned long long)data,
                        z->size);
    out->e.name = name;
    out->e.method = method;
    out->e.comp_size = csize;
    out->e.size = size;
    out->e.crc32 = rd32(h + 16);
    out->e.raw = img + data;
    *pos = p + 46 + nlen + xlen + clen;
    return SDC_OK;
}

sdc_status sdc_zip_open(const uint8_t *image, size_t size, const char *label, sdc_zip **out) {
    *out = NULL;
    sdc_zip *z = calloc(1, sizeof *z);
    if (!z || !(z->label = strdup(label ? label : "<zip>"))) {
        free(z);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label ? label : "<zip>");
    }
    z->img = image;
    z->size = size;
    uint64_t cd_off = 0, cd_size = 0, count = 0;
    sdc_status st = find_directory(z, &cd_off, &cd_size, &count);
    if (st) goto fail;
    /* names are at most the directory's size in total, plus one NUL each */
    z->ents = calloc((size_t)count + 1, sizeof *z->ents);
    z->names = malloc((size_t)cd_size + (size_t)count + 1);
    if (!z->ents || !z->names) {
        st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", z->label);
        goto fail;
    }
    char *arena = z->names;
    uint64_t pos = cd_off;
    for (uint64_t i = 0; i < count; i++) {
        if ((st = read_entry(z, &pos, cd_off + cd_size, &arena, &z->ents[i]))) goto fail;
        z->n++;
    }
    *out = z;
    return SDC_OK;
fail:
    sdc_zip_close(z);
    return st;
}

void sdc_zip_close(sdc_zip *z) {
    if (!z) return;
    for (int i = 0; i < z->n; i++) free(z->ents[i].inflated);
    free(z->ents);
    free(z->names);
    free(z->label);
    free(z);
}

int sdc_zip_count(const sdc_zip *z) {
    return z->n;
}
const sdc_zip_entry *sdc_zip_at(const sdc_zip *z, int i) {
    return i >= 0 && i < z->n ? &z->ents[i].e : NULL;
}
const sdc_zip_entry *sdc_zip_find(const sdc_zip *z, const char *name) {
    for (int i = 0; i < z->n; i++)
        if (strcmp(z->ents[i].e.name, name) == 0) return &z->ents[i].e;
    return NULL;
}

static uint32_t crc_of(const uint8_t *p, uint64_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    while (n) {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)c;
}

static sdc_status inflate_entry(sdc_zip *z, zent *ze, uint64_t max_size) {
    const sdc_zip_entry *e = &ze->e;
    if (e->size > max_size || e->size / ZIP_INFLATE_RATIO > e->comp_size ||
        e->size > (uint64_t)SIZE_MAX - 1 || e->comp_size > (1ull << 31) || e->size > (1ull << 31))
        return sdc_fail(SDC_ERR_FORMAT, "%s: zip entry '%s': %llu bytes deflated to %llu refused",
                        z->label, e->name, (unsigned long long)e->size,
                        (unsigned long long)e->comp_size);
    uint8_t *buf = malloc((size_t)e->size + 1);
    if (!buf) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", z->label);
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -15) != Z_OK) {
        free(buf);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: zlib init failed", z->label);
    }
    s.next_in = (Bytef *)e->raw;
    s.avail_in = (uInt)e->comp_size;
    s.next_out = buf;
    s.avail_out = (uInt)e->size + 1; /* one spare byte shows data longer than declared */
    int r = inflate(&s, Z_FINISH);
    uint64_t got = s.total_out;
    inflateEnd(&s);
    if (r != Z_STREAM_END || got != e->size) {
        free(buf);
        return sdc_fail(SDC_ERR_FORMAT, "%s: zip entry '%s': corrupt deflate data", z->label,
                        e->name);
    }
    if (crc_of(buf, got) != e->crc32) {
        free(buf);
        return sdc_fail(SDC_ERR_FORMAT, "%s: zip entry '%s': CRC-32 mismatch", z->label, e->name);
    }
    ze->inflated = buf;
    return SDC_OK;
}

sdc_status sdc_zip_data(sdc_zip *z, const sdc_zip_entry *e, uint64_t max_size, bool verify_crc,
                        const uint8_t **data) {
    *data = NULL;
    zent *ze = (zent *)e; /* e is the first member of a zent of ours */
    if (e->method == 0) {
        if (e->size > max_size)
            return sdc_fail(SDC_ERR_FORMAT, "%s: zip entry '%s' is too large (%llu bytes)",
                            z->label, e->name, (unsigned long long)e->size);
        if (verify_crc && crc_of(e->raw, e->size) != e->crc32)
            return sdc_fail(SDC_ERR_FORMAT, "%s: zip entry '%s': CRC-32 mismatch", z->label,
                            e->name);
        *data = e->raw;
        return SDC_OK;
    }
    if (!ze->inflated) {
        sdc_status st = inflate_entry(z, ze, max_size);
        if (st) return st;
    }
    *data = ze->inflated;
    return SDC_OK;
}
