/* Qwen2 byte-level BPE: vocabulary, merges and added tokens from tokenizer.json, vocab.json +
 * merges.txt or merges alone, and the Hugging Face encode (see qwen2_tokenizer.h). */
#include "text/qwen2_tokenizer.h"
#include "text/bpe_heap.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/clip_unicode.h"
#include "text/utf8.h"

#define MAX_FILE   ((size_t)256 << 20)
#define MAX_VOCAB  (1 << 24)
#define MAX_ADDED  4096
#define MAX_MERGES (1 << 22)

/* sd.cpp's Qwen2Tokenizer special tokens, in its order: the ids after the merges. Qwen2.5's
 * own files list the first 22 of them in the same order. */
static const char *const SDCPP_SPECIALS[] = {
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "<|boi_token|>",
    "<|bor_token|>",
    "<|eor_token|>",
    "<|bot_token|>",
    "<|tms_token|>",
};
#define N_SDCPP_SPECIALS ((int)(sizeof SDCPP_SPECIALS / sizeof *SDCPP_SPECIALS))

typedef struct {
    char *s;
    size_t n;
    int32_t id;
    int normalized; /* matched in the NFC'd text (HF "normalized": true) */
} added_token;

struct sdc_qwen2_tokenizer {
    int32_t n_vocab;
    char **tok; /* [n_vocab], NULL for ids without a token */
    uint32_t *tok_len;
    uint32_t *slot; /* vocabulary hash: id + 1, 0 = empty */
    uint32_t mask;
    int32_t n_merges;
    int32_t (*merge)[2];
    uint64_t *mkey; /* merge hash: (a << 32 | b) + 1, 0 = empty */
    int32_t *mrank, *mid;
    uint32_t mmask;
    int32_t byte_id[256];
    added_token *added;
    int n_added;
    int ignore_merges; /* HF BPE: a word that is a token is taken whole */
    int nfc;           /* the normalizer is NFC (else none) */
};

/* ---- GPT-2 byte characters ---- */

static int byte_printable(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

static void byte_chars(int32_t cp[256]) {
    int n = 0;
    for (int b = 0; b < 256; b++) cp[b] = byte_printable(b) ? b : 256 + n++;
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

/* ---- vocabulary and merge maps ---- */

static uint32_t hash_bytes(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static uint32_t hash_pair(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (uint32_t)k;
}

static uint32_t pow2_above(uint64_t n) {
    uint32_t c = 16;
    while (c < 2 * n) c *= 2;
    return c;
}

static int32_t vocab_find(const sdc_qwen2_tokenizer *t, const char *s, size_t n) {
    if (!t->slot) return -1;
    for (uint32_t i = hash_bytes(s, n) & t->mask;; i = (i + 1) & t->mask) {
        uint32_t v = t->slot[i];
        if (!v) return -1;
        int32_t id = (int32_t)v - 1;
        if (t->tok_len[id] == n && !memcmp(t->tok[id], s, n)) return id;
    }
}

static int32_t merge_rank(const sdc_qwen2_tokenizer *t, int32_t a, int32_t b, int32_t *id) {
    uint64_t k = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    for (uint32_t i = hash_pair(k) & t->mmask;; i = (i + 1) & t->mmask) {
        if (!t->mkey[i]) return -1;
        if (t->mkey[i] == k) {
            *id = t->mid[i];
            return t->mrank[i];
        }
    }
}

static sdc_status alloc_vocab(sdc_qwen2_tokenizer *t, int32_t n, const char *label) {
    t->n_vocab = n;
    t->tok = calloc((size_t)n, sizeof *t->tok);
    t->tok_len = calloc((size_t)n, sizeof *t->tok_len);
    if (!t->tok || !t->tok_len) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: vocabulary", label);
    return SDC_OK;
}

/* Sets token `id` (a new string, or the same string again for an added token also in the
 * vocabulary); a different string for a taken id is an error. */
static sdc_status set_token(sdc_qwen2_tokenizer *t, int32_t id, const char *s, size_t n,
                            const char *label) {
    if (t->tok[id]) {
        if (t->tok_len[id] == n && !memcmp(t->tok[id], s, n)) return SDC_OK;
        return sdc_fail(SDC_ERR_FORMAT, "%s: id %d given to \"%.64s\" and \"%.*s\"", label, id,
                        t->tok[id], (int)(n > 64 ? 64 : n), s);
    }
    if (!n || memchr(s, 0, n))
        return sdc_fail(SDC_ERR_FORMAT, "%s: token %d is empty or holds a NUL", label, id);
    t->tok[id] = malloc(n + 1);
    if (!t->tok[id]) return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
    memcpy(t->tok[id], s, n);
    t->tok[id][n] = 0;
    t->tok_len[id] = (uint32_t)n;
    return SDC_OK;
}

static sdc_status vocab_index(sdc_qwen2_tokenizer *t, const char *label) {
    uint32_t cap = pow2_above((uint64_t)t->n_vocab);
    t->slot = calloc(cap, sizeof *t->slot);
    if (!t->slot) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: vocabulary index", label);
    t->mask = cap - 1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (!t->tok[id]) continue; /* a hole in the ids: never produced */
        if (vocab_find(t, t->tok[id], t->tok_len[id]) >= 0)
            return sdc_fail(SDC_ERR_FORMAT, "%s: token \"%.64s\" appears twice", label, t->tok[id]);
        uint32_t i = hash_bytes(t->tok[id], t->tok_len[id]) & t->mask;
        while (t->slot[i]) i = (i + 1) & t->mask;
        t->slot[i] = (uint32_t)id + 1;
    }
    return SDC_OK;
}

void sdc_qwen2_tokenizer_free(sdc_qwen2_tokenizer *t) {
    if (!t) return;
    if (t->tok)
        for (int32_t i = 0; i < t->n_vocab; i++) free(t->tok[i]);
    free(t->tok);
    free(t->tok_len);
    free(t->slot);
    free(t->merge);
    free(t->mkey);
    free(t->mrank);
    free(t->mid);
    for (int i = 0; i < t->n_added; i++) free(t->added[i].s);
    free(t->added);
    free(t);
}

/* ---- merges ---- */

typedef struct {
    const char *a, *b;
    size_t na, nb;
} merge_line;

typedef struct {
    merge_line *m;
    int32_t n, cap;
} merge_list;

static int merge_push(merge_list *l, const char *a, size_t na, const char *b, size_t nb) {
    if (l->n == l->cap) {
        int32_t c = l->cap ? l->cap * 2 : 1024;
        merge_line *p = realloc(l->m, (size_t)c * sizeof *p);
        if (!p) return 0;
        l->m = p;
        l->cap = c;
    }
    l->m[l->n++] = (merge_line){a, b, na, nb};
    return 1;
}

/* merges.txt: "a b" lines; a first "#version" line and empty lines are skipped (sd.cpp reads
 * every line as a merge: its embedded data has no header). */
static sdc_status parse_merges(const char *s, size_t len, const char *label, merge_list *out) {
    size_t pos = 0;
    int line_no = 0;
    if (len >= 3 && (uint8_t)s[0] == 0xEF && (uint8_t)s[1] == 0xBB && (uint8_t)s[2] == 0xBF)
        pos = 3;
    while (pos < len) {
        const char *nl = memchr(s + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - s) : len, e = end;
        if (e > pos && s[e - 1] == '\r') e--;
        line_no++;
        const char *l = s + pos;
        size_t ln = e - pos;
        pos = end + 1;
        if (ln == 0 || (line_no == 1 && ln >= 8 && !memcmp(l, "#version", 8))) continue;
        const char *sp = memchr(l, ' ', ln);
        if (!sp || sp == l || sp == l + ln - 1 || memchr(sp + 1, ' ', (size_t)(l + ln - sp - 1)))
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: merges line %d is not two tokens separated by one space: "
                            "\"%.*s\"",
                            label, line_no, (int)(ln > 60 ? 60 : ln), l);
        if (out->n >= MAX_MERGES)
            return sdc_fail(SDC_ERR_FORMAT, "%s: more than %d merges", label, MAX_MERGES);
        if (!merge_push(out, l, (size_t)(sp - l), sp + 1, (size_t)(l + ln - sp - 1)))
            return sdc_fail(SDC_ERR_NO_MEMORY, "%s: merges", label);
    }
    return SDC_OK;
}

static sdc_status index_merges(sdc_qwen2_tokenizer *t, const merge_list *ml, const char *label) {
    int32_t n = ml->n;
    t->n_merges = n;
    uint32_t cap = pow2_above((uint64_t)n);
    t->merge = malloc((size_t)(n ? n : 1) * sizeof *t->merge);
    t->mkey = calloc(cap, sizeof *t->mkey);
    t->mrank = malloc(cap * sizeof *t->mrank);
    t->mid = malloc(cap * sizeof *t->mid);
    if (!t->merge || !t->mkey || !t->mrank || !t->mid)
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: merges", label);
    t->mmask = cap - 1;
    char *buf = NULL;
    size_t buf_cap = 0;
    for (int32_t r = 0; r < n; r++) {
        const merge_line *m = &ml->m[r];
        size_t nn = m->na + m->nb;
        if (nn > buf_cap) {
            char *p = realloc(buf, nn + 64);
            if (!p) {
                free(buf);
                return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
            }
            buf = p;
            buf_cap = nn + 64;
        }
        memcpy(buf, m->a, m->na);
        memcpy(buf + m->na, m->b, m->nb);
        int32_t a = vocab_find(t, m->a, m->na), b = vocab_find(t, m->b, m->nb);
        int32_t ab = vocab_find(t, buf, nn);
        if (a < 0 || b < 0 || ab < 0) {
            free(buf);
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: merge %d \"%.*s %.*s\" uses a token the vocabulary lacks", label,
                            r + 1, (int)(m->na > 40 ? 40 : m->na), m->a,
                            (int)(m->nb > 40 ? 40 : m->nb), m->b);
        }
        t->merge[r][0] = a;
        t->merge[r][1] = b;
        uint64_t k = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
        uint32_t i = hash_pair(k) & t->mmask;
        while (t->mkey[i] && t->mkey[i] != k) i = (i + 1) & t->mmask;
        if (t->mkey[i]) continue; /* a repeated merge keeps its first rank (HF) */
        t->mkey[i] = k;
        t->mrank[i] = r;
        t->mid[i] = ab;
    }
    free(buf);
    return SDC_OK;
}

/* ---- added tokens ---- */

static sdc_status add_added(sdc_qwen2_tokenizer *t, const char *s, int32_t id, int normalized,
                            const char *label) {
    if (t->n_added >= MAX_ADDED)
        return sdc_fail(SDC_ERR_FORMAT, "%s: more than %d added tokens", label, MAX_ADDED);
    size_t n = strlen(s);
    if (!n) return sdc_fail(SDC_ERR_FORMAT, "%s: an added token is empty", label);
    if (!t->added) t->added = calloc(MAX_ADDED, sizeof *t->added);
    char *c = t->added ? malloc(n + 1) : NULL;
    if (!c) return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
    memcpy(c, s, n + 1);
    t->added[t->n_added++] = (added_token){c, n, id, normalized};
    return SDC_OK;
}

/* Byte symbols and a check that every added token has its id. */
static sdc_status finish(sdc_qwen2_tokenizer *t, const char *label) {
    int32_t cp[256];
    byte_chars(cp);
    for (int b = 0; b < 256; b++) {
        char buf[8];
        t->byte_id[b] = vocab_find(t, buf, put_utf8(buf, cp[b]));
    }
    for (int i = 0; i < t->n_added; i++)
        if (vocab_find(t, t->added[i].s, t->added[i].n) != t->added[i].id)
            return sdc_fail(SDC_ERR_FORMAT, "%s: added token \"%.64s\" is not token %d", label,
                            t->added[i].s, t->added[i].id);
    return SDC_OK;
}

/* ---- builders ---- */

/* sd.cpp: bytes in bytes_to_unicode order, one token per merge, then its specials. */
static sdc_status vocab_from_merges(sdc_qwen2_tokenizer *t, const merge_list *ml,
                                    const char *label) {
    sdc_status st = alloc_vocab(t, 256 + ml->n + N_SDCPP_SPECIALS, label);
    if (st) return st;
    int32_t cp[256];
    byte_chars(cp);
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0; b < 256 && !st; b++)
            if (byte_printable(b) == !pass) {
                char buf[8];
                st = set_token(t, k++, buf, put_utf8(buf, cp[b]), label);
            }
    char *buf = NULL;
    for (int32_t i = 0; i < ml->n && !st; i++) {
        const merge_line *m = &ml->m[i];
        char *p = realloc(buf, m->na + m->nb + 1);
        if (!p) {
            st = sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
            break;
        }
        buf = p;
        memcpy(buf, m->a, m->na);
        memcpy(buf + m->na, m->b, m->nb);
        /* the same product twice is an error (vocab_index): sd.cpp's map would keep the
         * later id for encoding, an ambiguous vocabulary */
        st = set_token(t, 256 + i, buf, m->na + m->nb, label);
    }
    free(buf);
    for (int i = 0; i < N_SDCPP_SPECIALS && !st; i++) {
        int32_t id = 256 + ml->n + i;
        st = set_token(t, id, SDCPP_SPECIALS[i], strlen(SDCPP_SPECIALS[i]), label);
        if (!st) st = add_added(t, SDCPP_SPECIALS[i], id, 0, label);
    }
    return st;
}

static int json_id(const cJSON *v, int32_t *id) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble >= MAX_VOCAB ||
        v->valuedouble != (double)(int32_t)v->valuedouble)
        return 0;
    *id = (int32_t)v->valuedouble;
    return 1;
}

/* One added token of tokenizer.json's added_tokens or tokenizer_config.json's
 * added_tokens_decoder: its content and "normalized" flag. */
static sdc_status read_added(const cJSON *it, int32_t id, const char *label, const char **s,
                             int *normalized) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
    if (!cJSON_IsString(c))
        return sdc_fail(SDC_ERR_FORMAT, "%s: added token %d has no content", label, id);
    static const char *const unsupported[] = {"lstrip", "rstrip", "single_word"};
    for (int k = 0; k < 3; k++)
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, unsupported[k])))
            return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: added token \"%.64s\" sets %s (unsupported)",
                            label, c->valuestring, unsupported[k]);
    *s = c->valuestring;
    /* absent: HF's AddedToken default, normalized unless special */
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(it, "normalized");
    *normalized =
        nf ? cJSON_IsTrue(nf) : !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special"));
    return SDC_OK;
}

/* vocab: a JSON object token -> id. added: tokenizer.json added_tokens (array), or
 * tokenizer_config.json added_tokens_decoder (object id -> {content}), or NULL: sd.cpp's
 * specials after the vocabulary. */
static sdc_status vocab_from_json(sdc_qwen2_tokenizer *t, const cJSON *vocab, const cJSON *added,
                                  const char *label) {
    if (!cJSON_IsObject(vocab))
        return sdc_fail(SDC_ERR_FORMAT, "%s: vocabulary is not a JSON object", label);
    int32_t max_id = -1, id;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) {
        if (!json_id(it, &id))
            return sdc_fail(SDC_ERR_FORMAT, "%s: vocabulary entry \"%.64s\" has no valid id", label,
                            it->string ? it->string : "?");
        if (id > max_id) max_id = id;
    }
    if (max_id < 0) return sdc_fail(SDC_ERR_FORMAT, "%s: empty vocabulary", label);
    int32_t n_added = 0;
    cJSON_ArrayForEach(it, added) {
        id = -1;
        if (cJSON_IsArray(added)
                ? !json_id(cJSON_GetObjectItemCaseSensitive(it, "id"), &id)
                : (!it->string || sscanf(it->string, "%d", &id) != 1 || id < 0 || id >= MAX_VOCAB))
            return sdc_fail(SDC_ERR_FORMAT, "%s: an added token has no valid id", label);
        if (id > max_id) max_id = id;
        n_added++;
    }
    if (!added) max_id += N_SDCPP_SPECIALS;
    sdc_status st = alloc_vocab(t, max_id + 1, label);
    cJSON_ArrayForEach(it, vocab) {
        if (st) break;
        json_id(it, &id);
        st = set_token(t, id, it->string, strlen(it->string), label);
    }
    if (!added) {
        for (int i = 0; i < N_SDCPP_SPECIALS && !st; i++) {
            id = max_id - N_SDCPP_SPECIALS + 1 + i;
            st = set_token(t, id, SDCPP_SPECIALS[i], strlen(SDCPP_SPECIALS[i]), label);
            if (!st) st = add_added(t, SDCPP_SPECIALS[i], id, 0, label);
        }
        return st;
    }
    cJSON_ArrayForEach(it, added) {
        if (st) break;
        if (cJSON_IsArray(added))
            json_id(cJSON_GetObjectItemCaseSensitive(it, "id"), &id);
        else
            sscanf(it->string, "%d", &id);
        const char *s = NULL;
        int normalized = 0;
        st = read_added(it, id, label, &s, &normalized);
        if (!st) st = set_token(t, id, s, strlen(s), label);
        if (!st) st = add_added(t, s, id, normalized, label);
    }
    return st;
}

/* vocab NULL: built from the merges. */
static sdc_status build(const cJSON *vocab, const cJSON *added, const merge_list *ml, int nfc,
                        int ignore_merges, const char *label, sdc_qwen2_tokenizer **out) {
    *out = NULL;
    sdc_qwen2_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
    t->nfc = nfc;
    t->ignore_merges = ignore_merges;
    sdc_status st =
        vocab ? vocab_from_json(t, vocab, added, label) : vocab_from_merges(t, ml, label);
    if (!st) st = vocab_index(t, label);
    if (!st) st = index_merges(t, ml, label);
    if (!st) st = finish(t, label);
    if (st) {
        sdc_qwen2_tokenizer_free(t);
        return st;
    }
    *out = t;
    return SDC_OK;
}

static const char QWEN2_REGEX[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{"
                                  "N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                                  "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* The pipeline must be what we implement: normalizer NFC or none; a Split with the Qwen2
 * regex, Isolated, and a ByteLevel without its own regex or a prefix space. Anything else is
 * refused rather than tokenized differently. */
static sdc_status check_pipeline(const cJSON *j, const char *label, int *nfc) {
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(j, "normalizer");
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(norm, "type");
    *nfc = 0;
    if (cJSON_IsString(ty)) {
        if (strcmp(ty->valuestring, "NFC"))
            return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: normalizer %s (Qwen2 uses NFC)", label,
                            ty->valuestring);
        *nfc = 1;
    } else if (norm && !cJSON_IsNull(norm)) {
        return sdc_fail(SDC_ERR_FORMAT, "%s: normalizer has no type", label);
    }
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(pre, "pretokenizers");
    int found = 0, n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : cJSON_IsObject(pre);
    for (int k = 0; k < n; k++) {
        const cJSON *it = cJSON_IsArray(list) ? cJSON_GetArrayItem(list, k) : pre;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "type");
        if (!cJSON_IsString(t)) continue;
        if (!strcmp(t->valuestring, "Split")) {
            const cJSON *pat = cJSON_GetObjectItemCaseSensitive(it, "pattern");
            const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
            const cJSON *beh = cJSON_GetObjectItemCaseSensitive(it, "behavior");
            if (!cJSON_IsString(re) || strcmp(re->valuestring, QWEN2_REGEX))
                return sdc_fail(SDC_ERR_UNSUPPORTED,
                                "%s: the pre-tokenizer's split pattern is not Qwen2's", label);
            if ((beh && (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Isolated"))) ||
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "invert")))
                return sdc_fail(SDC_ERR_UNSUPPORTED,
                                "%s: the pre-tokenizer's split is not Isolated (Qwen2's)", label);
            found = 1;
        } else if (!strcmp(t->valuestring, "ByteLevel") &&
                   (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "use_regex")) ||
                    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "add_prefix_space")))) {
            return sdc_fail(SDC_ERR_UNSUPPORTED,
                            "%s: ByteLevel with its own (GPT-2) regex or a prefix space is not "
                            "Qwen2's",
                            label);
        }
    }
    if (!found)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "%s: no pre-tokenizer Split with Qwen2's regex (not a Qwen2 tokenizer)",
                        label);
    return SDC_OK;
}

sdc_status sdc_qwen2_tokenizer_load_json(const char *data, size_t len, const char *label,
                                         sdc_qwen2_tokenizer **out) {
    if (!out || !data) return sdc_fail(SDC_ERR_INVALID_ARG, "qwen2 tokenizer: no data");
    *out = NULL;
    if (!label) label = "qwen2 tokenizer.json";
    cJSON *j = cJSON_ParseWithLength(data, len);
    if (!j) return sdc_fail(SDC_ERR_FORMAT, "%s: not valid JSON", label);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_tokens");
    merge_list ml = {0};
    int nfc = 0;
    sdc_status st = SDC_OK;
    if (!cJSON_IsObject(model) || (cJSON_IsString(type) && strcmp(type->valuestring, "BPE")))
        st = sdc_fail(SDC_ERR_FORMAT, "%s: model is not BPE", label);
    else if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges))
        st = sdc_fail(SDC_ERR_FORMAT, "%s: model.vocab / model.merges missing", label);
    else if (added && !cJSON_IsArray(added))
        st = sdc_fail(SDC_ERR_FORMAT, "%s: added_tokens is not an array", label);
    else
        st = check_pipeline(j, label, &nfc);
    const cJSON *it;
    cJSON_ArrayForEach(it, merges) {
        if (st) break;
        const char *a, *b;
        size_t na, nb;
        if (cJSON_IsString(it)) { /* "a b" */
            a = it->valuestring;
            const char *sp = strchr(a, ' ');
            if (!sp || sp == a || !sp[1] || strchr(sp + 1, ' ')) {
                st = sdc_fail(SDC_ERR_FORMAT, "%s: merge \"%.60s\" is not two tokens", label, a);
                break;
            }
            na = (size_t)(sp - a);
            b = sp + 1;
            nb = strlen(b);
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(it, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(it, 1))) { /* ["a", "b"] */
            a = cJSON_GetArrayItem(it, 0)->valuestring;
            b = cJSON_GetArrayItem(it, 1)->valuestring;
            na = strlen(a);
            nb = strlen(b);
        } else {
            st = sdc_fail(SDC_ERR_FORMAT, "%s: model.merges holds a non-merge entry", label);
            break;
        }
        if (ml.n >= MAX_MERGES)
            st = sdc_fail(SDC_ERR_FORMAT, "%s: more than %d merges", label, MAX_MERGES);
        else if (!merge_push(&ml, a, na, b, nb))
            st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: merges", label);
    }
    if (!st) {
        int ignore = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"));
        const cJSON *none = cJSON_CreateArray();
        st = none ? build(vocab, added ? added : none, &ml, nfc, ignore, label, out)
                  : sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
        cJSON_Delete((cJSON *)none);
    }
    free(ml.m);
    cJSON_Delete(j);
    return st;
}

sdc_status sdc_qwen2_tokenizer_load_memory(const char *vocab_json, size_t vocab_len,
                                           const char *merges, size_t merges_len,
                                           sdc_qwen2_tokenizer **out) {
    const char *label = "qwen2 tokenizer (memory)";
    if (!out || !merges) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: no merges given", label);
    *out = NULL;
    merge_list ml = {0};
    sdc_status st = parse_merges(merges, merges_len, label, &ml);
    cJSON *v = NULL;
    if (!st && vocab_json && vocab_len) {
        v = cJSON_ParseWithLength(vocab_json, vocab_len);
        if (!v) st = sdc_fail(SDC_ERR_FORMAT, "%s: vocab.json is not JSON", label);
    }
    if (!st) st = build(v, NULL, &ml, 1, 0, label, out);
    cJSON_Delete(v);
    free(ml.m);
    return st;
}

/* llama.cpp's token types (gguf-py's TokenType): CONTROL and USER_DEFINED tokens are the
 * added tokens matched literally, UNUSED ones are padding ids with no token. */
enum { TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5 };

static sdc_status lists_to_json(const char *const *tokens, const int32_t *types, int32_t n,
                                const char *label, cJSON *vocab, cJSON *added) {
    for (int32_t i = 0; i < n; i++) {
        const int32_t ty = types ? types[i] : 1;
        if (ty == TT_UNUSED) continue;
        if (!tokens[i] || !tokens[i][0])
            return sdc_fail(SDC_ERR_FORMAT, "%s: token %d is empty", label, i);
        cJSON *it = NULL;
        if (ty == TT_CONTROL || ty == TT_USER_DEFINED) {
            it = cJSON_CreateObject();
            if (it && cJSON_AddNumberToObject(it, "id", i) &&
                cJSON_AddStringToObject(it, "content", tokens[i]) &&
                cJSON_AddFalseToObject(it, "normalized") && cJSON_AddItemToArray(added, it))
                continue;
        } else {
            it = cJSON_CreateNumber(i);
            if (it && cJSON_AddItemToObject(vocab, tokens[i], it)) continue;
        }
        cJSON_Delete(it);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
    }
    return SDC_OK;
}

sdc_status sdc_qwen2_tokenizer_load_lists(const char *const *tokens, const int32_t *types,
                                          int32_t n_tokens, const char *const *merges,
                                          int32_t n_merges, const char *label,
                                          sdc_qwen2_tokenizer **out) {
    if (!out || !tokens || !merges || n_tokens <= 0 || n_merges < 0)
        return sdc_fail(SDC_ERR_INVALID_ARG, "qwen2 tokenizer lists: nothing given");
    *out = NULL;
    if (!label) label = "qwen2 tokenizer (lists)";
    if (n_tokens >= MAX_VOCAB || n_merges >= MAX_MERGES)
        return sdc_fail(SDC_ERR_FORMAT, "%s: %d tokens, %d merges: too many", label, n_tokens,
                        n_merges);
    merge_list ml = {0};
    sdc_status st = SDC_OK;
    for (int32_t i = 0; i < n_merges && !st; i++) {
        const char *a = merges[i], *sp = a ? strchr(a, ' ') : NULL;
        if (!sp || sp == a || !sp[1] || strchr(sp + 1, ' '))
            st = sdc_fail(SDC_ERR_FORMAT, "%s: merge %d \"%.60s\" is not two tokens", label, i,
                          a ? a : "");
        else if (!merge_push(&ml, a, (size_t)(sp - a), sp + 1, strlen(sp + 1)))
            st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: merges", label);
    }
    cJSON *vocab = cJSON_CreateObject(), *added = cJSON_CreateArray();
    if (!st && (!vocab || !added)) st = sdc_fail(SDC_ERR_NO_MEMORY, "%s", label);
    if (!st) st = lists_to_json(tokens, types, n_tokens, label, vocab, added);
    if (!st) st = build(vocab, added, &ml, 1, 0, label, out);
    cJSON_Delete(vocab);
    cJSON_Delete(added);
    free(ml.m);
    return st;
}

/* True for an added token (matched literally): what load_lists reads as CONTROL. */
bool sdc_qwen2_tokenizer_is_added(const sdc_qwen2_tokenizer *t, int32_t id) {
    for (int i = 0; t && i < t->n_added; i++)
        if (t->added[i].id == id) return true;
    return false;
}

/* ---- files ---- */

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

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

/* dir/name of a file's folder. */
static void sibling(char *out, size_t cap, const char *path, const char *name) {
    const char *slash = strrchr(path, '/');
    snprintf(out, cap, "%.*s%s", slash ? (int)(slash - path + 1) : 0, path, name);
}

/* vocab.json + merges.txt beside it (+ tokenizer_config.json's added_tokens_decoder). */
static sdc_status load_vocab_json(const char *path, const char *data, size_t size,
                                  sdc_qwen2_tokenizer **out) {
    cJSON *v = cJSON_ParseWithLength(data, size), *cfg = NULL;
    if (!v) return sdc_fail(SDC_ERR_FORMAT, "%s: not valid JSON", path);
    char mpath[4200], cpath[4200];
    sibling(mpath, sizeof mpath, path, "merges.txt");
    sibling(cpath, sizeof cpath, path, "tokenizer_config.json");
    char *m = NULL, *c = NULL;
    size_t mn = 0, cn = 0;
    merge_list ml = {0};
    sdc_status st = is_file(mpath)
                        ? read_all(mpath, &m, &mn)
                        : sdc_fail(SDC_ERR_IO, "%s: no merges.txt beside it (%s)", path, mpath);
    if (!st) st = parse_merges(m, mn, mpath, &ml);
    const cJSON *added = NULL;
    if (!st && is_file(cpath) && !(st = read_all(cpath, &c, &cn))) {
        cfg = cJSON_ParseWithLength(c, cn);
        if (!cfg) st = sdc_fail(SDC_ERR_FORMAT, "%s: not valid JSON", cpath);
        added = cJSON_GetObjectItemCaseSensitive(cfg, "added_tokens_decoder");
        if (added && !cJSON_IsObject(added))
            st = sdc_fail(SDC_ERR_FORMAT, "%s: added_tokens_decoder is not an object", cpath);
    }
    if (!st) st = build(v, added, &ml, 1, 0, path, out);
    free(ml.m);
    free(m);
    free(c);
    cJSON_Delete(cfg);
    cJSON_Delete(v);
    return st;
}

static sdc_status load_file(const char *path, sdc_qwen2_tokenizer **out) {
    char *data = NULL;
    size_t size = 0;
    sdc_status st = read_all(path, &data, &size);
    if (st) return st;
    size_t i = 0;
    while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (i < size && data[i] == '{') {
        /* tokenizer.json has a "model"; vocab.json is a flat object */
        cJSON *j = cJSON_ParseWithLength(data + i, size - i);
        int is_tok = j && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "model"));
        cJSON_Delete(j);
        st = is_tok ? sdc_qwen2_tokenizer_load_json(data + i, size - i, path, out)
                    : load_vocab_json(path, data + i, size - i, out);
    } else {
        merge_list ml = {0};
        st = parse_merges(data, size, path, &ml);
        if (!st) st = build(NULL, NULL, &ml, 1, 0, path, out);
        free(ml.m);
    }
    free(data);
    return st;
}

sdc_status sdc_qwen2_tokenizer_load(const char *path, sdc_qwen2_tokenizer **out) {
    if (!path || !*path || !out) return sdc_fail(SDC_ERR_INVALID_ARG, "qwen2 tokenizer: no path");
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) return sdc_fail(SDC_ERR_IO, "%s: no such tokenizer file", path);
    if (!S_ISDIR(sb.st_mode)) return load_file(path, out);
    static const char *const names[] = {"tokenizer.json", "vocab.json", "merges.txt"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", path, names[k]);
        if (is_file(p)) return load_file(p, out);
    }
    return sdc_fail(SDC_ERR_IO,
                    "%s: holds none of tokenizer.json, vocab.json (+ merges.txt), "
                    "merges.txt",
                    path);
}

int32_t sdc_qwen2_tokenizer_vocab_size(const sdc_qwen2_tokenizer *t) {
    return t->n_vocab;
}

const char *sdc_qwen2_tokenizer_token(const sdc_qwen2_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? t->tok[id] : NULL;
}

int32_t sdc_qwen2_tokenizer_find(const sdc_qwen2_tokenizer *t, const char *token) {
    return token ? vocab_find(t, token, strlen(token)) : -1;
}

int32_t sdc_qwen2_tokenizer_n_merges(const sdc_qwen2_tokenizer *t) {
    return t->n_merges;
}

sdc_status sdc_qwen2_tokenizer_merges_text(const sdc_qwen2_tokenizer *t, char **text, size_t *len) {
    size_t cap = 16;
    for (int32_t r = 0; r < t->n_merges; r++)
        cap += t->tok_len[t->merge[r][0]] + t->tok_len[t->merge[r][1]] + 2;
    char *s = malloc(cap);
    if (!s) return sdc_fail(SDC_ERR_NO_MEMORY, "qwen2 tokenizer: merges text");
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

/* ---- the split regex ---- */

static int is_crlf(int32_t c) {
    return c == '\r' || c == '\n';
}

/* [^\s\p{L}\p{N}] */
static int is_other(int32_t c) {
    return !sdc_unicode_is_whitespace(c) && !sdc_ucd_is_letter(c) && !sdc_ucd_is_number(c);
}

/* Case-insensitive match of one ASCII letter (Oniguruma's case folding: U+017F long s folds
 * to s, U+212A Kelvin to k; no other character folds to s t r e v m l d). */
static int ci(int32_t c, char lower) {
    return c == lower || c == lower - 32 || (lower == 's' && c == 0x17F);
}

size_t sdc_qwen2_split_len(const int32_t *s, size_t n, size_t i) {
    int32_t c = s[i];
    /* (?i:'s|'t|'re|'ve|'m|'ll|'d) */
    if (c == '\'' && i + 1 < n) {
        int32_t a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
        if (ci(a, 's') || ci(a, 't') || ci(a, 'm') || ci(a, 'd')) return 2;
        if ((ci(a, 'r') && ci(b, 'e')) || (ci(a, 'v') && ci(b, 'e')) || (ci(a, 'l') && ci(b, 'l')))
            return 3;
    }
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    size_t j = i;
    if (!sdc_ucd_is_letter(c) && !is_crlf(c) && !sdc_ucd_is_number(c) && i + 1 < n &&
        sdc_ucd_is_letter(s[i + 1]))
        j = i + 1;
    if (sdc_ucd_is_letter(s[j])) {
        while (j < n && sdc_ucd_is_letter(s[j])) j++;
        return j - i;
    }
    /* \p{N} */
    if (sdc_ucd_is_number(c)) return 1;
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    j = i + (c == ' ');
    if (j < n && is_other(s[j])) {
        while (j < n && is_other(s[j])) j++;
        while (j < n && is_crlf(s[j])) j++;
        return j - i;
    }
    /* c is whitespace here: the run s[i..e) */
    size_t e = i;
    while (e < n && sdc_unicode_is_whitespace(s[e])) e++;
    if (e == i) return 1; /* unreachable: every class is covered above */
    /* \s*[\r\n]+: up to the run's last CR/LF */
    for (size_t p = e; p > i; p--)
        if (is_crlf(s[p - 1])) return p - i;
    /* \s+(?!\S): the run, less its last character when a non-space follows */
    if (e == n || e - i == 1) return e - i; /* \s+ for a single space before a non-space */
    return e - 1 - i;
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

static void push_pair(const sdc_qwen2_tokenizer *t, merge_cand *heap, int *hn, int pos, int32_t a,
                      int32_t b) {
    merge_cand c = {0, pos, a, b, 0};
    if ((c.rank = merge_rank(t, a, b, &c.id)) >= 0) heap_push(heap, hn, c);
}

/* BPE of one piece (its UTF-8 bytes). HF: a byte without a token is dropped (no unk). */
static int bpe_word(const sdc_qwen2_tokenizer *t, const uint8_t *w, int n, ivec *out, char *chars) {
    if (t->ignore_merges) { /* the whole piece when it is a token */
        int32_t cp[256];
        byte_chars(cp);
        size_t m = 0;
        for (int i = 0; i < n; i++) m += put_utf8(chars + m, cp[w[i]]);
        int32_t id = vocab_find(t, chars, m);
        if (id >= 0) return ivec_push(out, id);
    }
    int32_t *id = malloc((size_t)n * 3 * sizeof *id);
    merge_cand *heap = malloc((size_t)(2 * n + 1) * sizeof *heap);
    if (!id || !heap) {
        free(id);
        free(heap);
        return 0;
    }
    int32_t *prev = id + n, *next = id + 2 * n;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (t->byte_id[w[i]] < 0) continue;
        id[k] = t->byte_id[w[i]];
        prev[k] = k - 1;
        next[k] = -1;
        if (k) next[k - 1] = k;
        k++;
    }
    int hn = 0;
    for (int i = 0; i + 1 < k; i++) push_pair(t, heap, &hn, i, id[i], id[i + 1]);
    while (hn > 0) {
        merge_cand c = heap_pop(heap, &hn);
        int p = c.pos, q = next[p];
        if (id[p] != c.a || q < 0 || id[q] != c.b) continue; /* stale */
        id[p] = c.id;
        next[p] = next[q];
        if (next[q] >= 0) prev[next[q]] = p;
        id[q] = -1;
        /* each merge removes a symbol and adds at most two pairs: the heap stays < 2n */
        if (prev[p] >= 0) push_pair(t, heap, &hn, prev[p], id[prev[p]], id[p]);
        if (next[p] >= 0) push_pair(t, heap, &hn, p, id[p], id[next[p]]);
    }
    int ok = 1;
    for (int i = k ? 0 : -1; i >= 0 && ok; i = next[i]) ok = ivec_push(out, id[i]);
    free(id);
    free(heap);
    return ok;
}

/* Earliest, then longest, added token (normalized ones only when `normalized`) in
 * s[0..n); *len = its length, returns its index or -1. */
static int find_added(const sdc_qwen2_tokenizer *t, const char *s, size_t n, int normalized,
                      size_t *at, size_t *len) {
    for (size_t p = 0; p < n; p++) {
        int best = -1;
        for (int k = 0; k < t->n_added; k++) {
            const added_token *a = &t->added[k];
            if (a->normalized != normalized || a->n > n - p || a->s[0] != s[p] ||
                memcmp(a->s, s + p, a->n))
                continue;
            if (best < 0 || a->n > t->added[best].n) best = k;
        }
        if (best >= 0) {
            *at = p;
            *len = t->added[best].n;
            return best;
        }
    }
    return -1;
}

typedef struct {
    int32_t *cp, *nfc;
    size_t cap;
    char *bytes, *chars;
    size_t bcap;
} scratch;

/* NFC, then pieces and their BPE, of text that holds no (non-normalized) added token. The
 * normalized added tokens are matched in the NFC'd text. */
static int encode_plain(const sdc_qwen2_tokenizer *t, const char *s, size_t len, ivec *out,
                        scratch *w) {
    if (len + 1 > w->cap) {
        size_t c = len + 64;
        int32_t *a = realloc(w->cp, c * sizeof *a), *b = a ? realloc(w->nfc, 4 * c * sizeof *b) : 0;
        if (a) w->cp = a;
        if (!b) return 0;
        w->nfc = b;
        w->cap = c;
    }
    size_t n = 0;
    int ascii = 1;
    for (size_t i = 0; i < len;) {
        int32_t c;
        size_t l = sdc_utf8_decode(s + i, len - i, &c);
        if (c < 0) c = 0xFFFD; /* Rust strings are valid UTF-8 */
        ascii &= c < 0x80;
        w->cp[n++] = c;
        i += l;
    }
    const int32_t *cp = w->cp;
    if (t->nfc && !ascii) {
        n = sdc_ucd_nfc(w->cp, n, w->nfc);
        cp = w->nfc;
    }
    if (4 * n + 16 > w->bcap) {
        size_t c = 4 * n + 64;
        char *a = realloc(w->bytes, c), *b = a ? realloc(w->chars, 2 * c) : NULL;
        if (a) w->bytes = a;
        if (!b) return 0;
        w->chars = b;
        w->bcap = c;
    }
    /* back to UTF-8 once, for the normalized added tokens and the byte-level pieces */
    size_t *off = malloc((n + 1) * sizeof *off);
    if (!off) return 0;
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        off[i] = nb;
        nb += put_utf8(w->bytes + nb, cp[i]);
    }
    off[n] = nb;
    int ok = 1;
    size_t i = 0;
    while (i < n && ok) {
        size_t at = nb, alen = 0;
        int k = find_added(t, w->bytes + off[i], nb - off[i], 1, &at, &alen);
        size_t stop = n;
        if (k >= 0) {
            at += off[i];
            stop = i;
            while (off[stop] < at) stop++;
            if (off[stop] != at) k = -1, stop = n; /* inside a code point: cannot happen */
        }
        while (i < stop && ok) {
            size_t l = sdc_qwen2_split_len(cp, stop, i);
            size_t b0 = off[i], b1 = off[i + l];
            ok = b1 - b0 < ((size_t)1 << 30) &&
                 bpe_word(t, (const uint8_t *)w->bytes + b0, (int)(b1 - b0), out, w->chars);
            i += l;
        }
        if (k < 0 || !ok) break;
        ok = ivec_push(out, t->added[k].id);
        while (i < n && off[i] < at + alen) i++;
    }
    free(off);
    return ok;
}

sdc_status sdc_qwen2_tokenize(const sdc_qwen2_tokenizer *t, const char *text, size_t len,
                              int32_t **ids, int *n) {
    if (!t || !ids || !n || (!text && len))
        return sdc_fail(SDC_ERR_INVALID_ARG, "qwen2 tokenizer: bad arguments");
    *ids = NULL;
    *n = 0;
    if (len > ((size_t)1 << 28))
        return sdc_fail(SDC_ERR_INVALID_ARG, "qwen2 tokenizer: text of %zu bytes is too long", len);
    ivec out = {0};
    scratch w = {0};
    int ok = 1;
    size_t pos = 0;
    while (ok && pos < len) {
        size_t at = len - pos, alen = 0;
        int k = find_added(t, text + pos, len - pos, 0, &at, &alen);
        ok = encode_plain(t, text + pos, k >= 0 ? at : len - pos, &out, &w);
        if (k < 0 || !ok) break;
        ok = ivec_push(&out, t->added[k].id);
        pos += at + alen;
    }
    free(w.cp);
    free(w.nfc);
    free(w.bytes);
    free(w.chars);
    if (!ok || out.n > ((size_t)1 << 30)) {
        free(out.v);
        return sdc_fail(SDC_ERR_NO_MEMORY, "qwen2 tokenizer: encoding %zu bytes", len);
    }
    *ids = out.v;
    *n = (int)out.n;
    return SDC_OK;
}

sdc_status sdc_qwen_image_prompt_tokens(const sdc_qwen2_tokenizer *t, const char *prompt,
                                        int32_t **ids, int *n, int *n_drop) {
    if (!t || !ids || !n) return sdc_fail(SDC_ERR_INVALID_ARG, "qwen-image prompt: bad arguments");
    *ids = NULL;
    *n = 0;
    if (!prompt) prompt = "";
    size_t pl = strlen(SDC_QWEN_IMAGE_PROMPT_PREFIX), ul = strlen(prompt),
           sl = strlen(SDC_QWEN_IMAGE_PROMPT_SUFFIX);
    char *s = malloc(pl + ul + sl + 1);
    if (!s) return sdc_fail(SDC_ERR_NO_MEMORY, "qwen-image prompt: %zu bytes", ul);
    memcpy(s, SDC_QWEN_IMAGE_PROMPT_PREFIX, pl);
    memcpy(s + pl, prompt, ul);
    memcpy(s + pl + ul, SDC_QWEN_IMAGE_PROMPT_SUFFIX, sl + 1);
    sdc_status st = sdc_qwen2_tokenize(t, s, pl + ul + sl, ids, n);
    free(s);
    if (st) return st;
    if (*n <= SDC_QWEN_IMAGE_DROP_TOKENS) {
        int got = *n;
        free(*ids);
        *ids = NULL;
        *n = 0;
        return sdc_fail(SDC_ERR_FORMAT,
                        "qwen-image prompt: the templated prompt is %d tokens, not more than the "
                        "%d template tokens dropped (a tokenizer without Qwen2's special tokens?)",
                        got, SDC_QWEN_IMAGE_DROP_TOKENS);
    }
    if (n_drop) *n_drop = SDC_QWEN_IMAGE_DROP_TOKENS;
    return SDC_OK;
}
