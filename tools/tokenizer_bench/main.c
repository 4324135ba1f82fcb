/* Tokenizer throughput: encodes a long prompt (and a long run of unknown characters) many
 * times with a given tokenizer file and prints MB/s and tokens/s.
 * Usage: sdc-tokenizer_bench TOKENIZER_FILE [REPEATS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "text/tokenizer.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench(const sdc_tokenizer *t, const char *name, const char *text, int reps) {
    size_t len = strlen(text);
    sdc_tokens out = {0};
    long tokens = 0;
    double t0 = now();
    for (int i = 0; i < reps; i++) {
        if (sdc_tokenizer_encode(t, text, len, 0, &out) != SDC_OK) {
            fprintf(stderr, "%s\n", sdc_last_error());
            return;
        }
        tokens += out.n;
    }
    double dt = now() - t0;
    sdc_tokens_free(&out);
    printf("%-28s %7zu bytes x %d: %8.2f MB/s %10.0f tokens/s %8.1f us/encode\n", name, len, reps,
           (double)len * reps / dt / 1e6, (double)tokens / dt, dt / reps * 1e6);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TOKENIZER_FILE [REPEATS]\n", argv[0]);
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 200;
    sdc_tokenizer *t = NULL;
    double t0 = now();
    if (sdc_tokenizer_load(argv[1], &t) != SDC_OK) {
        fprintf(stderr, "%s\n", sdc_last_error());
        return 1;
    }
    printf("load %s: %.1f ms, %d pieces\n", argv[1], (now() - t0) * 1e3,
           sdc_tokenizer_vocab_size(t));
    static const char *const words[] = {"a",         "photograph", "of",     "an",
                                        "astronaut", "riding",     "horse,", "highly",
                                        "detailed,", "8k",         "ＵＨＤ", "café"};
    size_t cap = 64 * 1024;
    char *prompt = malloc(cap), *unk = malloc(cap);
    size_t n = 0;
    for (int i = 0; n + 16 < cap; i++) {
        const char *w = words[(i * 7) % 12];
        size_t l = strlen(w);
        memcpy(prompt + n, w, l);
        n += l;
        prompt[n++] = ' ';
    }
    prompt[n] = 0;
    n = 0;
    while (n + 4 < cap) memcpy(unk + n, "\xE2\x98\x83", 3), n += 3; /* ☃ */
    unk[n] = 0;
    char short_prompt[] = "a photograph of an astronaut riding a horse, highly detailed, 8k";
    bench(t, "short prompt", short_prompt, reps * 100);
    bench(t, "64 KB prompt", prompt, reps);
    bench(t, "64 KB unknown run", unk, reps);
    free(prompt);
    free(unk);
    sdc_tokenizer_free(t);
    return 0;
}
