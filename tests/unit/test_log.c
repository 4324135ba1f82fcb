/* Logging (level filter, callback, long messages, threads) and the peak-RSS probe. */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "core/log.h"
#include "test_util.h"

typedef struct sink {
    pthread_mutex_t lock;
    int count[4];
    char last[4096];
    sdc_log_level last_level;
    void *user_seen;
} sink;

static void on_log(sdc_log_level level, const char *msg, void *user) {
    sink *s = user;
    pthread_mutex_lock(&s->lock);
    if (level >= SDC_LOG_DEBUG && level <= SDC_LOG_ERROR) s->count[level]++;
    snprintf(s->last, sizeof s->last, "%s", msg);
    s->last_level = level;
    s->user_seen = user;
    pthread_mutex_unlock(&s->lock);
}

static void *log_many(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++) sdc_log(SDC_LOG_INFO, "thread message %d", i);
    return NULL;
}

static void test_log(void) {
    sink s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    sdc_set_log_callback(on_log, &s);

    /* default level: WARN and ERROR only */
    CHECK(!sdc_log_enabled(SDC_LOG_INFO) && sdc_log_enabled(SDC_LOG_WARN), "default level");
    sdc_log(SDC_LOG_DEBUG, "d");
    sdc_log(SDC_LOG_INFO, "i");
    sdc_log(SDC_LOG_WARN, "w %d", 1);
    sdc_log(SDC_LOG_ERROR, "e %s", "x");
    CHECK(s.count[0] == 0 && s.count[1] == 0 && s.count[2] == 1 && s.count[3] == 1,
          "default filter: counts %d %d %d %d", s.count[0], s.count[1], s.count[2], s.count[3]);
    CHECK(!strcmp(s.last, "e x") && s.last_level == SDC_LOG_ERROR && s.user_seen == &s,
          "last message '%s'", s.last);

    sdc_set_log_level(SDC_LOG_DEBUG);
    SDC_LOGD("debug %.2f", 1.5);
    CHECK(s.count[0] == 1 && !strcmp(s.last, "debug 1.50"), "debug after set_level: '%s'", s.last);
    sdc_set_log_level(SDC_LOG_ERROR);
    SDC_LOGW("hidden");
    CHECK(s.count[2] == 1, "warning must be filtered at ERROR level");

    /* a message longer than the internal stack buffer arrives whole */
    sdc_set_log_level(SDC_LOG_INFO);
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sdc_log(SDC_LOG_INFO, "<%s>", big);
    size_t n = strlen(s.last);
    CHECK(n == sizeof big + 1 && s.last[0] == '<' && s.last[n - 1] == '>',
          "long message length %zu, expected %zu", n, sizeof big + 1);

    /* concurrent logging: every message delivered once */
    memset(s.count, 0, sizeof s.count);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, log_many, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    CHECK(s.count[SDC_LOG_INFO] == 4000, "threads: %d of 4000 messages", s.count[SDC_LOG_INFO]);
    printf("log: level filter, long message (%zu chars), 4 threads x 1000 messages -> %d\n", n,
           s.count[SDC_LOG_INFO]);

    /* removing the callback returns to the stderr sink; the old one gets nothing more.
     * The message is at a level that passes the filter, so only the sink decides; stderr
     * is caught in a file to see that the message arrived there instead. */
    sdc_set_log_callback(NULL, NULL);
    int before = s.count[SDC_LOG_ERROR];
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/test_log_stderr.txt", SDC_BINARY_DIR);
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = fopen(tmp, "w+");
    CHECK(cap && saved >= 0, "cannot capture stderr in %s", tmp);
    if (cap && saved >= 0) {
        dup2(fileno(cap), 2);
        sdc_log(SDC_LOG_ERROR, "after removal %d", 42);
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        char got[256] = {0};
        rewind(cap);
        size_t len = fread(got, 1, sizeof got - 1, cap);
        got[len] = '\0';
        CHECK(s.count[SDC_LOG_ERROR] == before, "removed callback still called ('%s')", s.last);
        CHECK(strstr(got, "after removal 42") != NULL, "stderr sink got '%s'", got);
        printf("after sdc_set_log_callback(NULL): callback calls +%d, stderr got '%.*s'\n",
               s.count[SDC_LOG_ERROR] - before, (int)strcspn(got, "\n"), got);
    }
    if (cap) fclose(cap);
    remove(tmp);
    sdc_set_log_level(SDC_LOG_WARN);
    pthread_mutex_destroy(&s.lock);
}

static void test_peak_rss(void) {
    size_t before = sdc_peak_rss_bytes();
    CHECK(before > 0, "peak RSS unknown");
    const size_t touch = 64u << 20;
    volatile uint8_t *p = malloc(touch);
    for (size_t i = 0; p && i < touch; i += 4096) p[i] = (uint8_t)i;
    size_t after = sdc_peak_rss_bytes();
    free((void *)p);
    /* the peak must have grown by at least most of what we touched */
    CHECK(after >= before + touch - (8u << 20), "peak RSS %zu -> %zu after touching %zu bytes",
          before, after, touch);
    printf("peak RSS: %.1f MiB -> %.1f MiB after touching 64 MiB\n", before / 1048576.0,
           after / 1048576.0);
}

int main(void) {
    test_log();
    test_peak_rss();
    TEST_MAIN_END();
}
