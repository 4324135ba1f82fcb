#include "io/spill.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct sdc_spill {
    unsigned char *base;
    size_t capacity, used;
};

static int open_unlinked(const char *dir) {
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
#endif
    char path[4096];
    snprintf(path, sizeof path, "%s/sdc-spill-XXXXXX", dir);
    int fd2 = mkstemp(path);
    if (fd2 >= 0) unlink(path);
    return fd2;
}

sdc_status sdc_spill_create(size_t capacity, sdc_spill **out) {
    *out = NULL;
    const char *dirs[] = {getenv("SDC_SPILL_DIR"), getenv("TMPDIR"), "/var/tmp", "/tmp"};
    int fd = -1;
    const char *used = NULL;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && fd < 0; i++)
        if (dirs[i] && *dirs[i]) fd = open_unlinked(used = dirs[i]);
    if (fd < 0)
        return sdc_fail(SDC_ERR_IO, "params on disk: cannot create a temporary file (%s)",
                        strerror(errno));
    size_t cap = capacity ? capacity : 1;
    if (ftruncate(fd, (off_t)cap) != 0) {
        int e = errno;
        close(fd);
        return sdc_fail(SDC_ERR_IO, "params on disk: cannot size a %zu-byte file in %s (%s)", cap,
                        used, strerror(e));
    }
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd); /* the mapping keeps the file */
    if (p == MAP_FAILED)
        return sdc_fail(SDC_ERR_IO, "params on disk: cannot map %zu bytes (%s)", cap,
                        strerror(errno));
    sdc_spill *s = calloc(1, sizeof *s);
    if (!s) {
        munmap(p, cap);
        return sdc_fail(SDC_ERR_NO_MEMORY, "params on disk: out of memory");
    }
    s->base = p;
    s->capacity = cap;
    *out = s;
    return SDC_OK;
}

void sdc_spill_free(sdc_spill *s) {
    if (!s) return;
    munmap(s->base, s->capacity);
    free(s);
}

void *sdc_spill_alloc(sdc_spill *s, size_t bytes) {
    size_t at = (s->used + 63) & ~(size_t)63;
    if (at > s->capacity || bytes > s->capacity - at) return NULL;
    s->used = at + bytes;
    return s->base + at;
}

void sdc_spill_release(sdc_spill *s, const void *p, size_t bytes) {
    if (!s || !sdc_spill_contains(s, p)) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

int sdc_spill_contains(const sdc_spill *s, const void *p) {
    return s && (const unsigned char *)p >= s->base &&
           (const unsigned char *)p < s->base + s->capacity;
}
