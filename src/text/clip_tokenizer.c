/* CLIP BPE tokenizer: vocabulary + merges (from vocab.json/merges.txt, tokenizer.json, the
 * OpenAI .txt.gz, or merges alone) and the HF CLIPTokenizerFast encode. */
#include "text/clip_tokenizer.h"
#include "text/bpe_heap.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "text/clip_unicode.h"
#include "text/utf8.h"

#define MAX_FILE  ((size_t)256 << 20)
#define MAX_VOCAB (1 << 24)

typedef struct {
    uint32_t *slot; /* id + 1, 0 = empty */
    uint32_t mask;
} str_map;

typedef struct {
    uint64_t *key; /* (a << 32 | b) + 1, 0 = empty */
    int32_t *rank, *id;
    uint32_t mask;
} pair_map;

struct sdc_clip_tokenizer {
    int32_t n_vocab;
    char **tok;
    uint32_t *tok_len;
    str_map vocab;
    int32_t n_merges;
    int32_t (*merge)[2]; /* the pair of each rank */
    pair_map merges;
    int32_t bos, eos;
    int32_t byte_id[256], byte_id_w[256]; /* "c" and "c</w>" of each byte's character */
    int sdcpp; /* sd.cpp's byte-wise normaliser and ASCII split classes */
};

/* ---- GPT-2 byte characters ---- */

static void byte_chars(int32_t cp[256]) {
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        cp[b] = printable ? b : 256 + n++;
    }
}

/* The 256 byte characters in bytes_to_unicode order (printable ranges first). */
static void byte_order(int order[256]) {
    int k = 0;
    for (int b = '!'; b <= '~'; b++) order[k++] = b;
    for (int b = 0xA1; b <= 0xAC; b++) order[k++] = b;
    for (int b = 0xAE; b <= 0xFF; b++) order[k++] = b;
    for (int b = 0; b < 256; b++)
        if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) order[k++] = b;
}

static size_t put_utf8(char *o, int32_t c) {
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* ---- hash maps ---- */

static uint32_t hash_bytes(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static int32_t vocab_find(const sdc_clip_tokenizer *t, const char *s, size_t n) {
    if (!t->vocab.slot) return -1;
    for (uint32_t i = hash_bytes(s, n) & t->vocab.mask;; i = (i + 1) & t->vocab.mask) {
        uint32_t v = t->vocab.slot[i];
        if (!v) return -1;
        int32_t id = (int32_t)v - 1;
        if (t->tok_len[id] == n && !memcmp(t->tok[id], s, n)) return id;
    }
}

static uint32_t pow2_above(uint64_t n) {
    uint32_t c = 16;
    while (c < 2 * n) c *= 2;
    return c;
}

static sdc_status vocab_index(sdc_clip_tokenizer *t, const char *label) {
    uint32_t cap = pow2_above((uint64_t)t->n_vocab);
    t->vocab.slot = calloc(cap, sizeof *t->vocab.slot);
    if (!t->vocab.slot) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: vocabulary index", label);
    t->vocab.mask = cap - 1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (!t->tok[id])
            return sdc_fail(SDC_ERR_FORMAT, "%s: vocabulary has no token with id %d", label, id);
        if (vocab_find(t, t->tok[id], t->tok_len[id]) >= 0)
            return sdc_fail(SDC_ERR_FORMAT, "%s: token \"%.64s\" appears twice", label, t->tok[id]);
        uint32_t i = hash_bytes(t->tok[id], t->tok_len[id]) & t->vocab.mask;
        while (t->vocab.slot[i]) i = (i + 1) & t->vocab.mask;
        t->vocab.slot[i] = (uint32_t)id + 1;
    }
    return SDC_OK;
}

static uint32_t hash_pair(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (uint32_t)k;
}

/* Rank of the merge (a, b), or -1; *id gets the merged token. */
static int32_t merge_rank(const sdc_clip_tokenizer *t, int32_t a, int32_t b, int32_t *id) {
    uint64_t k = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    const pair_map *m = &t->merges;
    for (uint32_t i = hash_pair(k) & m->mask;; i = (i + 1) & m->mask) {
        if (!m->key[i]) return -1;
        if (m->key[i] == k) {
            *id = m->id[i];
            return m->rank[i];
        }
    }
}

static int set_token(sdc_clip_tokenizer *t, int32_t id, const char *s, size_t n) {
    t->tok[id] = malloc(n + 1);
    if (!t->tok[id]) return 0;
    memcpy(t->tok[id], s, n);
    t->tok[id][n] = 0;
    t->tok_len[id] = (uint32_t)n;
    return 1;
}

static sdc_status alloc_vocab(sdc_clip_tokenizer *t, int32_t n, const char *label) {
    t->n_vocab = n;
    t->tok = calloc((size_t)n, sizeof *t->tok);
    t->tok_len = calloc((size_t)n, sizeof *t->tok_len);
    if (!t->tok || !t->tok_len) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: vocabulary", label);
    return SDC_OK;
}

void sdc_clip_tokenizer_free(sdc_clip_tokenizer *t) {
    if (!t) return;
    if (t->tok)
        for (int32_t i = 0; i < t->n_vocab; i++) free(t->tok[i]);
    free(t->tok);
    free(t->tok_len);
    free(t->vocab.slot);
    free(t->merge);
    free(t->merges.key);
    free(t->merges.rank);
    free(t->merges.id);
    free(t);
}

/* ---- merges text ---- */

typedef struct {
    const char *a, *b;
    size_t na, nb;
} merge_line;

/* Splits merges text into "a b" lines: a first "#version" line and empty lines are skipped,
 * (OpenAI's clip and sd.cpp skip line 1 whatever it holds), at most SDC_CLIP_MAX_MERGES are kept;
 * any other line must be two non-empty parts. */
static sdc_status parse_merges(const char *s, size_t len, const char *label, merge_line **out,
                               int32_t *n_out) {
    *out = NULL;
    *n_out = 0;
    size_t cap = 1024;
    int32_t n = 0;
    merge_line *m = malloc(cap * sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: merges", label);
    size_t pos = 0;
    int line_no = 0;
    if (len >= 3 && (uint8_t)s[0] == 0xEF && (uint8_t)s[1] == 0xBB && (uint8_t)s[2] == 0xBF)
        pos = 3;
    while (pos < len && n < SDC_CLIP_MAX_MERGES) {
        const char *nl = memchr(s + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - s) : len;
        size_t e = end;
        if (e > pos && s[e - 1] == '\r') e--;
        line_no++;
        const char *l = s + pos;
        size_t ln = e - pos;
        pos = end + 1;
        /* the header: "#version: 0.2" (HF), "\"bpe_simple_vocab_16e6.txt#version: 0.2" (OpenAI) */
        if (ln == 0 || (line_no == 1 && memmem(l, ln, "#version", 8))) continue;
        const char *sp = memchr(l, ' ', ln);
        if (!sp || sp == l || sp == l + ln - 1 || memchr(sp + 1, ' ', (size_t)(l + ln - sp - 1)) ||
            memchr(l, 0, ln)) {
            free(m);
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: merges line %d is not two tokens separated by one space: "
                            "\"%.*s\"",
                            label, line_no, (int)(ln > 60 ? 60 : ln), l);
        }
        if ((size_t)n == cap) {
            cap *= 2;
            merge_line *p = realloc(m, cap * sizeof *m);
            if (!p) {
                free(m);
                return sdc_fail(SDC_ERR_NO_MEMORY, "%s: merges", label);
            }
            m = p;
        }
        m[n].a = l;
        m[n].na = (size_t)(sp - l);
        m[n].b = sp + 1;
        m[n].nb = (size_t)(l + ln - sp - 1);
        n++;
    }
    *out = m;
    *n_out = n;
    return SDC_OK;
}

/* sd.cpp / OpenAI clip: bytes, bytes + "</w>", one token per merge, then the two specials. */
static sdc_status vocab_from_merges(sdc_clip_tokenizer *t, const merge_line *m, int32_t n,
                                    const char *label) {
    sdc_status st = alloc_vocab(t, 512 + n + 2, label);
    if (st) return st;
    int32_t cp[256];
    int order[256];
    byte_chars(cp);
    byte_order(order);
    for (int k = 0; k < 256; k++) {
        char buf[16];
        size_t l = put_utf8(buf, cp[order[k]]);
        if (!set_token(t, k, buf, l)) return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
        memcpy(buf + l, "</w>", 4);
        if (!set_token(t, 256 + k, buf, l + 4)) return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
    }
    for (int32_t i = 0; i < n; i++) {
        char *p = malloc(m[i].na + m[i].nb + 1);
        if (!p) return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
        memcpy(p, m[i].a, m[i].na);
        memcpy(p + m[i].na, m[i].b, m[i].nb);
        p[m[i].na + m[i].nb] = 0;
        t->tok[512 + i] = p;
        t->tok_len[512 + i] = (uint32_t)(m[i].na + m[i].nb);
    }
    if (!set_token(t, 512 + n, "<|startoftext|>", 15) ||
        !set_token(t, 513 + n, "<|endoftext|>", 13))
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
    return SDC_OK;
}

static sdc_status vocab_from_json(sdc_clip_tokenizer *t, const cJSON *obj, const cJSON *added,
                                  const char *label) {
    if (!cJSON_IsObject(obj))
        return sdc_fail(SDC_ERR_FORMAT, "%s: vocabulary is not a JSON object", label);
    int32_t max_id = -1;
    for (int pass = 0; pass < 2; pass++) {
        const cJSON *src[2] = {obj, added};
        for (int k = 0; k < 2; k++) {
            const cJSON *it;
            cJSON_ArrayForEach(it, src[k]) {
                const char *s = k == 0 ? it->string : NULL;
                const cJSON *idv = it;
                if (k == 1) {
                    const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
                    idv = cJSON_GetObjectItemCaseSensitive(it, "id");
                    s = cJSON_IsString(c) ? c->valuestring : NULL;
                }
                if (!s || !cJSON_IsNumber(idv) || idv->valuedouble < 0 ||
                    idv->valuedouble >= MAX_VOCAB ||
                    idv->valuedouble != (double)(int)idv->valuedouble)
                    return sdc_fail(SDC_ERR_FORMAT,
                                    "%s: vocabulary entry \"%.64s\" has no valid id", label,
                                    s ? s : "?");
                int32_t id = (int32_t)idv->valuedouble;
                if (pass == 0) {
                    if (id > max_id) max_id = id;
                    continue;
                }
                if (t->tok[id]) {
                    if (k == 1 && !strcmp(t->tok[id], s)) continue; /* added token also in vocab */
                    return sdc_fail(SDC_ERR_FORMAT, "%s: id %d given to \"%.64s\" and \"%.64s\"",
                                    label, id, t->tok[id], s);
                }
                if (!set_token(t, id, s, strlen(s)))
                    return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
            }
        }
        if (pass == 0) {
            if (max_id < 0) return sdc_fail(SDC_ERR_FORMAT, "%s: empty vocabulary", label);
            sdc_status st = alloc_vocab(t, max_id + 1, label);
            if (st) return st;
        }
    }
    return SDC_OK;
}

static sdc_status index_merges(sdc_clip_tokenizer *t, const merge_line *m, int32_t n,
                               const char *label) {
    t->n_merges = n;
    uint32_t cap = pow2_above((uint64_t)n);
    t->merge = malloc((size_t)(n ? n : 1) * sizeof *t->merge);
    t->merges.key = calloc(cap, sizeof *t->merges.key);
    t->merges.rank = malloc(cap * sizeof *t->merges.rank);
    t->merges.id = malloc(cap * sizeof *t->merges.id);
    if (!t->merge || !t->merges.key || !t->merges.rank || !t->merges.id)
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: merges", label);
    t->merges.mask = cap - 1;
    char *buf = NULL;
    size_t buf_cap = 0;
    for (int32_t r = 0; r < n; r++) {
        int32_t a = vocab_find(t, m[r].a, m[r].na), b = vocab_find(t, m[r].b, m[r].nb);
        size_t nn = m[r].na + m[r].nb;
        if (nn > buf_cap) {
            char *p = realloc(buf, nn + 64);
            if (!p) {
                free(buf);
                return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
            }
            buf = p;
            buf_cap = nn + 64;
        }
        memcpy(buf, m[r].a, m[r].na);
        memcpy(buf + m[r].na, m[r].b, m[r].nb);
        int32_t ab = vocab_find(t, buf, nn);
        if (a < 0 || b < 0 || ab < 0) {
            free(buf);
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: merge %d \"%.*s %.*s\" uses a token the vocabulary lacks", label,
                            r + 1, (int)(m[r].na > 40 ? 40 : m[r].na), m[r].a,
                            (int)(m[r].nb > 40 ? 40 : m[r].nb), m[r].b);
        }
        t->merge[r][0] = a;
        t->merge[r][1] = b;
        uint64_t k = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
        uint32_t i = hash_pair(k) & t->merges.mask;
        while (t->merges.key[i] && t->merges.key[i] != k) i = (i + 1) & t->merges.mask;
        if (t->merges.key[i]) continue; /* a repeated merge keeps its first rank */
        t->merges.key[i] = k;
        t->merges.rank[i] = r;
        t->merges.id[i] = ab;
    }
    free(buf);
    return SDC_OK;
}

/* Specials and the byte symbols once vocabulary and merges are in. */
static sdc_status finish(sdc_clip_tokenizer *t, const char *label) {
    t->bos = vocab_find(t, "<|startoftext|>", 15);
    t->eos = vocab_find(t, "<|endoftext|>", 13);
    if (t->bos < 0 || t->eos < 0)
        return sdc_fail(SDC_ERR_FORMAT, "%s: vocabulary lacks <|startoftext|> or <|endoftext|>",
                        label);
    int32_t cp[256];
    byte_chars(cp);
    for (int b = 0; b < 256; b++) {
        char buf[16];
        size_t l = put_utf8(buf, cp[b]);
        t->byte_id[b] = vocab_find(t, buf, l);
        memcpy(buf + l, "</w>", 4);
        t->byte_id_w[b] = vocab_find(t, buf, l + 4);
    }
    return SDC_OK;
}

/* vocab: a cJSON object (NULL: built from the merges); added: tokenizer.json added_tokens. */
static sdc_status build(const cJSON *vocab, const cJSON *added, const char *merges, size_t mlen,
                        const char *label, sdc_clip_tokenizer **out) {
    *out = NULL;
    merge_line *m = NULL;
    int32_t n = 0;
    sdc_status st = parse_merges(merges, mlen, label, &m, &n);
    if (st) return st;
    sdc_clip_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        free(m);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
    }
    st = vocab ? vocab_from_json(t, vocab, added, label) : vocab_from_merges(t, m, n, label);
    if (!st) st = vocab_index(t, label);
    if (!st) st = index_merges(t, m, n, label);
    if (!st) st = finish(t, label);
    free(m);
    if (st) {
        sdc_clip_tokenizer_free(t);
        return st;
    }
    *out = t;
    return SDC_OK;
}

sdc_status sdc_clip_tokenizer_load_memory(const char *vocab_json, size_t vocab_len,
                                          const char *merges, size_t merges_len,
                                          sdc_clip_tokenizer **out) {
    if (!out || !merges) return sdc_fail(SDC_ERR_INVALID_ARG, "clip tokenizer: no merges given");
    *out = NULL;
    if (!vocab_json || !vocab_len)
        return build(NULL, NULL, merges, merges_len, "clip tokenizer (memory)", out);
    cJSON *v = cJSON_ParseWithLength(vocab_json, vocab_len);
    if (!v) return sdc_fail(SDC_ERR_FORMAT, "clip tokenizer (memory): vocab.json is not JSON");
    sdc_status st = build(v, NULL, merges, merges_len, "clip tokenizer (memory)", out);
    cJSON_Delete(v);
    return st;
}

/* ---- files ---- */

static sdc_status read_all(const char *path, char **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return sdc_fail(SDC_ERR_IO, "%s: cannot open", path);
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_FILE) {
        fclose(f);
        return sdc_fail(SDC_ERR_IO, "%s: not a regular file of at most 256 MiB", path);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    if (got != n) {
        free(buf);
        return sdc_fail(SDC_ERR_IO, "%s: short read", path);
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return SDC_OK;
}

/* gzip file to memory, at most MAX_FILE bytes decompressed. */
static sdc_status read_gz(const char *path, char **data, size_t *size) {
    *data = NULL;
    *size = 0;
    gzFile g = gzopen(path, "rb");
    if (!g) return sdc_fail(SDC_ERR_IO, "%s: cannot open", path);
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        gzclose(g);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s", path);
    }
    for (;;) {
        if (n == cap) {
            if (cap >= MAX_FILE) {
                free(buf);
                gzclose(g);
                return sdc_fail(SDC_ERR_FORMAT, "%s: more than 256 MiB once decompressed", path);
            }
            char *p = realloc(buf, cap * 2 + 1);
            if (!p) {
                free(buf);
                gzclose(g);
                return sdc_fail(SDC_ERR_NO_MEMORY, "%s", path);
            }
            buf = p;
            cap *= 2;
        }
        int r = gzread(g, buf + n, (unsigned)(cap - n));
        if (r < 0) {
            int err = 0;
            const char *msg = gzerror(g, &err);
            sdc_status s = sdc_fail(SDC_ERR_FORMAT, "%s: gzip error: %s", path, msg ? msg : "?");
            free(buf);
            gzclose(g);
            return s;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    /* a truncated stream reads to its end and leaves Z_BUF_ERROR ("unexpected end of file") */
    int err = 0;
    const char *msg = gzerror(g, &err);
    sdc_status s = err == Z_OK ? SDC_OK
                               : sdc_fail(SDC_ERR_FORMAT, "%s: truncated or corrupt gzip data (%s)",
                                          path, msg ? msg : "?");
    gzclose(g);
    if (s) {
        free(buf);
        return s;
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return SDC_OK;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static sdc_status load_json_file(const char *path, const char *data, size_t size,
                                 sdc_clip_tokenizer **out) {
    cJSON *j = cJSON_ParseWithLength(data, size);
    if (!j) return sdc_fail(SDC_ERR_FORMAT, "%s: not valid JSON", path);
    sdc_status st;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (cJSON_IsObject(model)) { /* tokenizer.json */
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
        const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
        const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
        if (cJSON_IsString(type) && strcmp(type->valuestring, "BPE")) {
            st = sdc_fail(SDC_ERR_FORMAT, "%s: model type %s, expected BPE (a CLIP tokenizer)",
                          path, type->valuestring);
        } else if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges)) {
            st = sdc_fail(SDC_ERR_FORMAT, "%s: model.vocab / model.merges missing", path);
        } else {
            /* merges as "a b" strings or ["a", "b"] pairs: rebuild the text form */
            size_t cap = 0;
            int ok = 1;
            const cJSON *it;
            cJSON_ArrayForEach(it, merges) {
                if (cJSON_IsString(it))
                    cap += strlen(it->valuestring) + 1;
                else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 &&
                         cJSON_IsString(cJSON_GetArrayItem(it, 0)) &&
                         cJSON_IsString(cJSON_GetArrayItem(it, 1)))
                    cap += strlen(cJSON_GetArrayItem(it, 0)->valuestring) +
                           strlen(cJSON_GetArrayItem(it, 1)->valuestring) + 2;
                else
                    ok = 0;
            }
            char *txt = ok ? malloc(cap + 1) : NULL;
            if (!ok) {
                st = sdc_fail(SDC_ERR_FORMAT, "%s: model.merges holds a non-merge entry", path);
            } else if (!txt) {
                st = sdc_fail(SDC_ERR_NO_MEMORY, "%s", path);
            } else {
                size_t p = 0;
                cJSON_ArrayForEach(it, merges) {
                    p += cJSON_IsString(it)
                             ? (size_t)sprintf(txt + p, "%s\n", it->valuestring)
                             : (size_t)sprintf(txt + p, "%s %s\n",
                                               cJSON_GetArrayItem(it, 0)->valuestring,
                                               cJSON_GetArrayItem(it, 1)->valuestring);
                }
                const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_tokens");
                st = build(vocab, cJSON_IsArray(added) ? added : NULL, txt, p, path, out);
                free(txt);
            }
        }
    } else { /* vocab.json: merges.txt must sit beside it */
        char mpath[4200];
        const char *slash = strrchr(path, '/');
        snprintf(mpath, sizeof mpath, "%.*smerges.txt", slash ? (int)(slash - path + 1) : 0, path);
        char *m = NULL;
        size_t mn = 0;
        st = is_file(mpath) ? read_all(mpath, &m, &mn)
                            : sdc_fail(SDC_ERR_IO, "%s: no merges.txt beside it (%s)", path, mpath);
        if (!st) st = build(j, NULL, m, mn, path, out);
        free(m);
    }
    cJSON_Delete(j);
    return st;
}

static sdc_status load_file(const char *path, sdc_clip_tokenizer **out) {
    char *data = NULL;
    size_t size = 0;
    FILE *f = fopen(path, "rb");
    int gz = 0;
    if (f) {
        unsigned char magic[2] = {0, 0};
        gz = fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
        fclose(f);
    }
    sdc_status st = gz ? read_gz(path, &data, &size) : read_all(path, &data, &size);
    if (st) return st;
    size_t i = 0;
    while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (!gz && i < size && data[i] == '{')
        st = load_json_file(path, data + i, size - i, out);
    else
        st = build(NULL, NULL, data, size, path, out);
    free(data);
    return st;
}

sdc_status sdc_clip_tokenizer_load(const char *path, sdc_clip_tokenizer **out) {
    if (!path || !*path || !out) return sdc_fail(SDC_ERR_INVALID_ARG, "clip tokenizer: no path");
    *out = NULL;
    if (!is_dir(path)) {
        if (!is_file(path)) return sdc_fail(SDC_ERR_IO, "%s: no such tokenizer file", path);
        return load_file(path, out);
    }
    static const char *const names[] = {"vocab.json", "tokenizer.json", "merges.txt",
                                        "bpe_simple_vocab_16e6.txt.gz"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", path, names[k]);
        if (is_file(p)) return load_file(p, out);
    }
    return sdc_fail(SDC_ERR_IO,
                    "%s: holds none of vocab.json (+ merges.txt), tokenizer.json, merges.txt, "
                    "bpe_simple_vocab_16e6.txt.gz",
                    path);
}

void sdc_clip_tokenizer_set_sdcpp_compat(sdc_clip_tokenizer *t, int on) {
    t->sdcpp = on != 0;
}

int32_t sdc_clip_tokenizer_bos(const sdc_clip_tokenizer *t) {
    return t->bos;
}
int32_t sdc_clip_tokenizer_eos(const sdc_clip_tokenizer *t) {
    return t->eos;
}
int32_t sdc_clip_tokenizer_vocab_size(const sdc_clip_tokenizer *t) {
    return t->n_vocab;
}

const char *sdc_clip_tokenizer_token(const sdc_clip_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? t->tok[id] : NULL;
}

sdc_status sdc_clip_tokenizer_merges_text(const sdc_clip_tokenizer *t, char **text, size_t *len) {
    size_t cap = 16;
    for (int32_t r = 0; r < t->n_merges; r++)
        cap += t->tok_len[t->merge[r][0]] + t->tok_len[t->merge[r][1]] + 2;
    char *s = malloc(cap);
    if (!s) return sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer: merges text");
    size_t p = (size_t)sprintf(s, "#version: 0.2\n");
    for (int32_t r = 0; r < t->n_merges; r++) {
        int32_t a = t->merge[r][0], b = t->merge[r][1];
        memcpy(s + p, t->tok[a], t->tok_len[a]);
        p += t->tok_len[a];
        s[p++] = ' ';
        memcpy(s + p, t->tok[b], t->tok_len[b]);
        p += t->tok_len[b];
        s[p++] = '\n';
    }
    s[p] = 0;
    *text = s;
    *len = p;
    return SDC_OK;
}

/* ---- encode ---- */

typedef struct {
    int32_t *v;
    size_t n, cap;
} ivec;

static int ivec_push(ivec *a, int32_t x) {
    if (a->n == a->cap) {
        size_t c = a->cap ? a->cap * 2 : 64;
        int32_t *p = realloc(a->v, c * sizeof *p);
        if (!p) return 0;
        a->v = p;
        a->cap = c;
    }
    a->v[a->n++] = x;
    return 1;
}

/* HF's normalizer: NFC, White_Space runs to ' ', per-character lower case. *out malloc'd. */
static sdc_status normalize(const char *s, size_t len, int32_t **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (len > ((size_t)1 << 28))
        return sdc_fail(SDC_ERR_INVALID_ARG, "clip tokenizer: text too long");
    int32_t *cps = malloc((len + 1) * sizeof *cps);
    if (!cps) return sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer: text of %zu bytes", len);
    size_t n = 0;
    int ascii = 1;
    for (size_t i = 0; i < len;) {
        int32_t c;
        size_t l = sdc_utf8_decode(s + i, len - i, &c);
        if (c < 0) c = 0xFFFD;
        if (c >= 0x80) ascii = 0;
        cps[n++] = c;
        i += l;
    }
    if (!ascii) {
        int32_t *d = malloc((4 * n + 1) * sizeof *d);
        if (!d) {
            free(cps);
            return sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer: normalising %zu bytes", len);
        }
        n = sdc_ucd_nfc(cps, n, d);
        free(cps);
        cps = d;
    }
    /* whitespace collapse shrinks; lower case grows by at most one per U+0130 */
    size_t extra = 0;
    for (size_t i = 0; i < n; i++) extra += cps[i] == 0x130;
    int32_t *o = malloc((n + extra + 1) * sizeof *o);
    if (!o) {
        free(cps);
        return sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer: normalising %zu bytes", len);
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (sdc_unicode_is_whitespace(cps[i])) {
            if (i == 0 || !sdc_unicode_is_whitespace(cps[i - 1])) o[m++] = ' ';
            continue;
        }
        int32_t lo[2];
        int k = sdc_ucd_to_lower(cps[i], lo);
        for (int j = 0; j < k; j++) o[m++] = lo[j];
    }
    free(cps);
    *out = o;
    *n_out = m;
    return SDC_OK;
}

/* sd.cpp's normaliser, on bytes: runs of ASCII whitespace to one ' ', stripped, ASCII lower
 * case. Each byte becomes one "code point" 0..255. */
static sdc_status normalize_sdcpp(const char *s, size_t len, int32_t **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    int32_t *o = malloc((len + 1) * sizeof *o);
    if (!o) return sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer: text of %zu bytes", len);
    size_t m = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c == ' ' || (c >= '\t' && c <= '\r')) {
            if (m && o[m - 1] != ' ') o[m++] = ' ';
            continue;
        }
        o[m++] = c >= 'A' && c <= 'Z' ? c + 32 : c;
    }
    if (m && o[m - 1] == ' ') m--;
    *out = o;
    *n_out = m;
    return SDC_OK;
}

/* BPE of one word (its UTF-8 bytes): lowest rank first, leftmost among equal ranks (HF). */
static int bpe_word(const sdc_clip_tokenizer *t, const uint8_t *w, int n, ivec *out) {
    int32_t *id = malloc((size_t)n * 3 * sizeof *id);
    merge_cand *heap = malloc((size_t)(2 * n + 1) * sizeof *heap);
    if (!id || !heap) {
        free(id);
        free(heap);
        return 0;
    }
    int32_t *prev = id + n, *next = id + 2 * n;
    for (int i = 0; i < n; i++) {
        id[i] = i == n - 1 ? t->byte_id_w[w[i]] : t->byte_id[w[i]];
        if (id[i] < 0) id[i] = t->eos; /* not in the vocabulary: HF's unk, <|endoftext|> */
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
    }
    int hn = 0;
    for (int i = 0; i + 1 < n; i++) {
        merge_cand c = {0, i, id[i], id[i + 1], 0};
        if ((c.rank = merge_rank(t, c.a, c.b, &c.id)) >= 0) heap_push(heap, &hn, c);
    }
    while (hn > 0) {
        merge_cand c = heap_pop(heap, &hn);
        int p = c.pos, q = next[p];
        if (id[p] != c.a || q < 0 || id[q] != c.b) continue; /* stale */
        id[p] = c.id;
        next[p] = next[q];
        if (next[q] >= 0) prev[next[q]] = p;
        id[q] = -1;
        /* each merge removes a symbol and adds at most two pairs: the heap stays < 2n */
        merge_cand d;
        if (prev[p] >= 0) {
            d = (merge_cand){0, prev[p], id[prev[p]], id[p], 0};
            if ((d.rank = merge_rank(t, d.a, d.b, &d.id)) >= 0) heap_push(heap, &hn, d);
        }
        if (next[p] >= 0) {
            d = (merge_cand){0, p, id[p], id[next[p]], 0};
            if ((d.rank = merge_rank(t, d.a, d.b, &d.id)) >= 0) heap_push(heap, &hn, d);
        }
    }
    int ok = 1;
    for (int i = 0; i >= 0 && ok; i = next[i]) ok = ivec_push(out, id[i]);
    free(id);
    free(heap);
    return ok;
}

/* The split regex's classes: 0 whitespace, 1 letter, 2 number, 3 other. sd.cpp's std::regex
 * works on bytes with the C locale's ASCII classes (its "code points" here are bytes). */
static int split_class(int sdcpp, int32_t c) {
    if (sdcpp) {
        if (c == ' ' || (c >= '\t' && c <= '\r')) return 0;
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return 1;
        return c >= '0' && c <= '9' ? 2 : 3;
    }
    if (sdc_unicode_is_whitespace(c)) return 0;
    if (sdc_ucd_is_letter(c)) return 1;
    return sdc_ucd_is_number(c) ? 2 : 3;
}

/* Length of the contraction at s[0..n) ('s 't 're 've 'm 'll 'd), 0 if none. */
static size_t contraction(const int32_t *s, size_t n) {
    if (n < 2 || s[0] != '\'') return 0;
    int32_t a = s[1], b = n > 2 ? s[2] : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* The CLIP split regex over s[0..n), then byte-level BPE of each piece. */
static int encode_segment(const sdc_clip_tokenizer *t, const int32_t *s, size_t n, ivec *out,
                          uint8_t **buf, size_t *buf_cap) {
    size_t i = 0;
    while (i < n) {
        size_t l;
        int k = split_class(t->sdcpp, s[i]);
        if ((l = contraction(s + i, n - i)) != 0) {
        } else if (k == 1 || k == 3) { /* runs of letters, runs of others */
            l = 1;
            while (i + l < n && split_class(t->sdcpp, s[i + l]) == k) l++;
        } else if (k == 2) {
            l = 1;
        } else {
            i++; /* whitespace: not matched, dropped */
            continue;
        }
        if (l * 4 > *buf_cap) {
            uint8_t *p = realloc(*buf, l * 4 + 16);
            if (!p) return 0;
            *buf = p;
            *buf_cap = l * 4 + 16;
        }
        size_t nb = 0;
        for (size_t j = 0; j < l; j++) {
            if (t->sdcpp)
                (*buf)[nb++] = (uint8_t)s[i + j];
            else
                nb += put_utf8((char *)*buf + nb, s[i + j]);
        }
        if (nb > (size_t)1 << 30 || !bpe_word(t, *buf, (int)nb, out)) return 0;
        i += l;
    }
    return 1;
}

sdc_status sdc_clip_tokenize_ex(const sdc_clip_tokenizer *t, const char *text, size_t len,
                                const char *const *extra, int n_extra, int32_t **ids, int *n) {
    if (!t || !ids || !n || (!text && len) || n_extra < 0 || (n_extra && !extra))
        return sdc_fail(SDC_ERR_INVALID_ARG, "clip tokenizer: bad arguments");
    *ids = NULL;
    *n = 0;
    int n_spec = 2 + n_extra;
    int32_t **spec = calloc((size_t)n_spec, sizeof *spec);
    size_t *spec_n = calloc((size_t)n_spec, sizeof *spec_n);
    int32_t *cps = NULL;
    size_t ncp = 0;
    ivec out = {0};
    uint8_t *buf = NULL;
    size_t buf_cap = 0;
    sdc_status st = spec && spec_n ? SDC_OK : sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer");
    for (int k = 0; k < n_spec && !st; k++) {
        const char *s = k == 0 ? "<|startoftext|>" : k == 1 ? "<|endoftext|>" : extra[k - 2];
        if (!s) s = "";
        st = t->sdcpp ? normalize_sdcpp(s, strlen(s), &spec[k], &spec_n[k])
                      : normalize(s, strlen(s), &spec[k], &spec_n[k]);
    }
    if (!st)
        st = t->sdcpp ? normalize_sdcpp(text ? text : "", len, &cps, &ncp)
                      : normalize(text ? text : "", len, &cps, &ncp);
    size_t pos = 0;
    while (!st && pos < ncp) {
        /* earliest special match; ties go to the first in the list */
        size_t best = ncp;
        int which = -1;
        for (int k = 0; k < n_spec; k++) {
            size_t m = spec_n[k];
            if (!m || m > ncp - pos) continue;
            for (size_t p = pos; p + m <= ncp && p < best; p++)
                if (cps[p] == spec[k][0] && !memcmp(cps + p, spec[k], m * sizeof *cps)) {
                    best = p;
                    which = k;
                    break;
                }
        }
        if (!encode_segment(t, cps + pos, best - pos, &out, &buf, &buf_cap)) {
            st = sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer: encoding");
            break;
        }
        if (which < 0) break;
        int32_t v = which == 0 ? t->bos : which == 1 ? t->eos : -(which - 1);
        if (!ivec_push(&out, v)) st = sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer: encoding");
        pos = best + spec_n[which];
    }
    if (!st && out.n > (size_t)1 << 30)
        st = sdc_fail(SDC_ERR_INVALID_ARG, "clip tokenizer: too many tokens");
    for (int k = 0; spec && k < n_spec; k++) free(spec[k]);
    free(spec);
    free(spec_n);
    free(cps);
    free(buf);
    if (st) {
        free(out.v);
        return st;
    }
    *ids = out.v;
    *n = (int)out.n;
    return SDC_OK;
}

sdc_status sdc_clip_tokenize(const sdc_clip_tokenizer *t, const char *text, int32_t **ids, int *n) {
    return sdc_clip_tokenize_ex(t, text, text ? strlen(text) : 0, NULL, 0, ids, n);
}

sdc_status sdc_clip_normalize(const char *text, size_t len, char **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    int32_t *cps = NULL;
    size_t n = 0;
    sdc_status st = normalize(text ? text : "", text ? len : 0, &cps, &n);
    if (st) return st;
    char *o = malloc(4 * n + 1);
    if (!o) {
        free(cps);
        return sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer: normalising");
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) m += put_utf8(o + m, cps[i]);
    o[m] = 0;
    free(cps);
    *out = o;
    *out_len = m;
    return SDC_OK;
}
