/* key=value lists: see kv_list.h. */
#include "pipeline/kv_list.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/status.h"

static void trim_copy(char *dst, size_t n, const char *s, size_t len) {
    while (len && isspace((unsigned char)*s)) s++, len--;
    while (len && isspace((unsigned char)s[len - 1])) len--;
    if (len >= n) len = n - 1;
    memcpy(dst, s, len);
    dst[len] = '\0';
}

sdc_status sdc_kv_split(const char *flag, const char *args, sdc_kv *items, int max, int *count) {
    int n = 0;
    const char *s = args;
    while (*s) {
        size_t len = strcspn(s, ",;");
        char item[160];
        if (len >= sizeof item)
            return sdc_fail(SDC_ERR_INVALID_ARG, "%s: item '%.40s...' too long", flag, s);
        trim_copy(item, sizeof item, s, len);
        s += len + (s[len] != '\0');
        if (!item[0]) continue;
        const char *eq = strchr(item, '=');
        if (!eq) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: '%s' is not key=value", flag, item);
        if (n == max) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: more than %d items", flag, max);
        if ((size_t)(eq - item) >= sizeof items[n].key || strlen(eq + 1) >= sizeof items[n].value)
            return sdc_fail(SDC_ERR_INVALID_ARG, "%s: item '%s' too long", flag, item);
        trim_copy(items[n].key, sizeof items[n].key, item, (size_t)(eq - item));
        trim_copy(items[n].value, sizeof items[n].value, eq + 1, strlen(eq + 1));
        n++;
    }
    *count = n;
    return SDC_OK;
}

bool sdc_kv_bool(const char *v, bool *out) {
    static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) return *out = true, true;
        if (!strcasecmp(v, no[i])) return *out = false, true;
    }
    return false;
}

bool sdc_kv_int(const char *v, int *out) {
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < INT_MIN || x > INT_MAX) return false;
    *out = (int)x;
    return true;
}
