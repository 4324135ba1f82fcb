#include "io/file_map.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

sdc_status sdc_map_file(const char *path, void **data, size_t *size) {
    *data = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sdc_fail(SDC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return sdc_fail(SDC_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size > 0) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            return sdc_fail(SDC_ERR_IO, "%s: mmap failed: %s", path, strerror(e));
        }
        *data = m;
        *size = (size_t)sb.st_size;
    }
    close(fd);
    return SDC_OK;
}

void sdc_unmap_file(void *data, size_t size) {
    if (data) munmap(data, size);
}
