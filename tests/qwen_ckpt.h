/* What the Qwen-Image tests against sd.cpp share: finding the random-weight checkpoints
 * (never stored, skipped without them), the LLM linked beside a stand-in tokenizer (the family
 * reads tokenizer/ next to the --llm file), and the case list an environment variable picks. */
#ifndef SDC_TESTS_QWEN_CKPT_H
#define SDC_TESTS_QWEN_CKPT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir/file into buf; false (and says so) when absent. */
static inline bool qwen_find_ckpt(const char *dir, const char *file, char *buf, size_t n) {
    struct stat st;
    snprintf(buf, n, "%s/%s", dir, file);
    if (stat(buf, &st) == 0) return true;
    printf("missing %s\n", buf);
    return false;
}

/* BINARY_DIR/subdir holding links to llm (llm.safetensors, into out) and tokdir (tokenizer). */
static inline bool qwen_llm_with_tokenizer(const char *subdir, const char *tokdir, const char *llm,
                                           char *out, size_t n) {
    char dir[512], tok[600];
    snprintf(dir, sizeof dir, "%s/%s", SDC_BINARY_DIR, subdir);
    snprintf(out, n, "%s/llm.safetensors", dir);
    snprintf(tok, sizeof tok, "%s/tokenizer", dir);
    mkdir(dir, 0755);
    unlink(out);
    unlink(tok);
    if (symlink(llm, out) != 0 || symlink(tokdir, tok) != 0) {
        printf("cannot link the LLM and tokenizer into %s\n", dir);
        return false;
    }
    return true;
}

/* Whether case id is in $env ("a1,a2", "all"; deflt when unset). */
static inline bool qwen_case_wanted(const char *env, const char *deflt, const char *id) {
    const char *list = getenv(env);
    if (!list) list = deflt;
    if (!strcmp(list, "all")) return true;
    size_t k = strlen(id);
    for (const char *p = list; (p = strstr(p, id)) != NULL; p += k)
        if ((p == list || p[-1] == ',') && (p[k] == ',' || p[k] == '\0')) return true;
    return false;
}

#endif
