/* sd.cpp's prompt handling for CLIP conditioners: lora tags, A1111 attention, chunks of 77
 * tokens with weights, textual-inversion embeddings, output weighting. */
#include "text/clip_prompt.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "io/gguf.h"
#include "io/safetensors.h"

static char *dup_n(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* std::stof: strtof over the whole string; no number or out of range is a failure. */
static int parse_stof(const char *s, float *out) {
    char *end = NULL;
    errno = 0;
    float v = strtof(s, &end);
    if (end == s || errno == ERANGE) return 0;
    *out = v;
    return 1;
}

/* ---- <lora:name:weight> ---- */

void sdc_prompt_loras_free(sdc_prompt_lora *l, int n) {
    for (int i = 0; l && i < n; i++) free(l[i].name);
    free(l);
}

/* Matches <lora:([^:>]+):([^>]+)> at s[0..]: returns the tag length or 0. */
static size_t match_lora(const char *s, size_t *name_len, size_t *mul_off, size_t *mul_len) {
    if (strncmp(s, "<lora:", 6)) return 0;
    size_t i = 6;
    while (s[i] && s[i] != ':' && s[i] != '>') i++;
    if (i == 6 || s[i] != ':') return 0;
    *name_len = i - 6;
    size_t j = ++i;
    while (s[j] && s[j] != '>') j++;
    if (j == i || s[j] != '>') return 0;
    *mul_off = i;
    *mul_len = j - i;
    return j + 1;
}

/* Adds (or sums into) the lora `name` (nl bytes); 0 when out of memory. */
static int add_lora(sdc_prompt_lora **l, int *n, int *cap, const char *name, size_t nl, float w) {
    int high = nl >= 12 && !strncmp(name, "|high_noise|", 12);
    if (high) {
        name += 12;
        nl -= 12;
    }
    for (int k = 0; k < *n; k++)
        if ((*l)[k].high_noise == high && strlen((*l)[k].name) == nl &&
            !memcmp((*l)[k].name, name, nl)) {
            (*l)[k].weight += w;
            return 1;
        }
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 4;
        sdc_prompt_lora *p = realloc(*l, (size_t)c * sizeof *p);
        if (!p) return 0;
        *l = p;
        *cap = c;
    }
    char *nm = dup_n(name, nl);
    if (!nm) return 0;
    (*l)[*n] = (sdc_prompt_lora){nm, w, high};
    (*n)++;
    return 1;
}

sdc_status sdc_prompt_extract_loras(const char *prompt, char **clean, sdc_prompt_lora **loras,
                                    int *n_loras) {
    if (!prompt || !clean || !loras || !n_loras)
        return sdc_fail(SDC_ERR_INVALID_ARG, "prompt: no prompt given");
    *clean = NULL;
    *loras = NULL;
    *n_loras = 0;
    size_t len = strlen(prompt), o = 0;
    char *txt = malloc(len + 1);
    sdc_prompt_lora *l = NULL;
    int n = 0, cap = 0, ok = txt != NULL;
    for (size_t i = 0; ok && i < len;) {
        size_t nl = 0, mo = 0, ml = 0;
        size_t tag = prompt[i] == '<' ? match_lora(prompt + i, &nl, &mo, &ml) : 0;
        if (!tag) {
            txt[o++] = prompt[i++];
            continue;
        }
        char *mul = dup_n(prompt + i + mo, ml);
        float w = 0;
        ok = mul != NULL;
        if (ok && parse_stof(mul, &w)) ok = add_lora(&l, &n, &cap, prompt + i + 6, nl, w);
        free(mul);
        i += tag;
    }
    if (!ok) {
        free(txt);
        sdc_prompt_loras_free(l, n);
        return sdc_fail(SDC_ERR_NO_MEMORY, "prompt: lora tags of a %zu-byte prompt", len);
    }
    txt[o] = 0;
    *clean = txt;
    *loras = l;
    *n_loras = n;
    return SDC_OK;
}

/* ---- A1111 attention ---- */

void sdc_weighted_text_free(sdc_weighted_text *p, int n) {
    for (int i = 0; p && i < n; i++) free(p[i].text);
    free(p);
}

typedef struct {
    sdc_weighted_text *v;
    int n, cap;
} parts_vec;

static int parts_push(parts_vec *r, const char *s, size_t n, float w) {
    if (r->n == r->cap) {
        int c = r->cap ? 2 * r->cap : 16;
        sdc_weighted_text *p = realloc(r->v, (size_t)c * sizeof *p);
        if (!p) return 0;
        r->v = p;
        r->cap = c;
    }
    char *t = dup_n(s, n);
    if (!t) return 0;
    r->v[r->n++] = (sdc_weighted_text){t, w};
    return 1;
}

static int is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Length of ":([+-]?[.\d]+)\)" at s, 0 if none; the number's span in *w, *wn. */
static size_t match_weight(const char *s, const char **w, size_t *wn) {
    if (s[0] != ':') return 0;
    size_t i = 1;
    if (s[i] == '+' || s[i] == '-') i++;
    size_t d = i;
    while (s[i] == '.' || (s[i] >= '0' && s[i] <= '9')) i++;
    if (i == d || s[i] != ')') return 0;
    *w = s + 1;
    *wn = i - 1;
    return i + 1;
}

static void multiply_range(parts_vec *r, int from, float m) {
    for (int p = from; p < r->n; p++) r->v[p].weight *= m;
}

/* sd.cpp's re_attention, one token at a time from the start of the remaining text (the
 * regex always matches there; a fresh search start counts as a word boundary for \bBREAK). */
static sdc_status parse_tokens(const char *s, parts_vec *r, int **round, int **square, int *nr,
                               int *ns) {
    const float round_mul = 1.1f, square_mul = 1 / 1.1f;
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        char c = s[i];
        const char *w = NULL;
        size_t wn = 0, tl;
        if (c == '\\') {
            char d = s[i + 1];
            tl = d == '(' || d == ')' || d == '[' || d == ']' || d == '\\' ? 2 : 1;
            /* only "\(" is unescaped; the others keep their backslash */
            if (!(tl == 2 && d == '(' ? parts_push(r, s + i + 1, 1, 1.0f)
                                      : parts_push(r, s + i, tl, 1.0f)))
                return SDC_ERR_NO_MEMORY;
        } else if (c == '(' || c == '[') {
            tl = 1;
            if (c == '(')
                (*round)[(*nr)++] = r->n;
            else
                (*square)[(*ns)++] = r->n;
        } else if (c == ':' && (tl = match_weight(s + i, &w, &wn)) != 0) {
            if (*nr) {
                char buf[64];
                float v = 0;
                snprintf(buf, sizeof buf, "%.*s", (int)(wn < 63 ? wn : 63), w);
                if (wn >= 63 || !parse_stof(buf, &v))
                    return sdc_fail(SDC_ERR_INVALID_ARG,
                                    "prompt: attention weight '%.*s' at byte %zu is not a float",
                                    (int)(wn > 40 ? 40 : wn), w, i + 1);
                multiply_range(r, (*round)[--(*nr)], v);
            }
        } else if (c == ')' && *nr) {
            tl = 1;
            multiply_range(r, (*round)[--(*nr)], round_mul);
        } else if (c == ']' && *ns) {
            tl = 1;
            multiply_range(r, (*square)[--(*ns)], square_mul);
        } else if (c == 'B' && !strncmp(s + i, "BREAK", 5) && !is_word_char(s[i + 5])) {
            tl = 5;
            if (!parts_push(r, "BREAK", 5, -1.0f)) return SDC_ERR_NO_MEMORY;
        } else if (c == ')' || c == ']' || c == ':' || c == 'B') {
            tl = 1;
            if (!parts_push(r, s + i, 1, 1.0f)) return SDC_ERR_NO_MEMORY;
        } else {
            tl = strcspn(s + i, "\\()[]:B");
            if (!parts_push(r, s + i, tl, 1.0f)) return SDC_ERR_NO_MEMORY;
        }
        i += tl;
    }
    return SDC_OK;
}

sdc_status sdc_prompt_parse_attention(const char *prompt, sdc_weighted_text **parts, int *n) {
    if (!prompt || !parts || !n) return sdc_fail(SDC_ERR_INVALID_ARG, "prompt: no prompt given");
    *parts = NULL;
    *n = 0;
    size_t len = strlen(prompt);
    parts_vec r = {0};
    int *round = malloc((len + 1) * sizeof *round), *square = malloc((len + 1) * sizeof *square);
    int nr = 0, ns = 0;
    sdc_status st =
        round && square ? parse_tokens(prompt, &r, &round, &square, &nr, &ns) : SDC_ERR_NO_MEMORY;
    if (!st) {
        for (int k = 0; k < nr; k++) multiply_range(&r, round[k], 1.1f);
        for (int k = 0; k < ns; k++) multiply_range(&r, square[k], 1 / 1.1f);
        if (r.n == 0 && !parts_push(&r, "", 0, 1.0f)) st = SDC_ERR_NO_MEMORY;
    }
    /* join neighbours of equal weight (one pass: group lengths, then one copy per group) */
    int m = 0;
    for (int i = 0; !st && i < r.n;) {
        int j = i + 1;
        size_t tot = strlen(r.v[i].text);
        while (j < r.n && r.v[j].weight == r.v[i].weight) tot += strlen(r.v[j++].text);
        char *t = j > i + 1 ? malloc(tot + 1) : r.v[i].text;
        if (!t) {
            st = SDC_ERR_NO_MEMORY;
            break;
        }
        if (j > i + 1) {
            size_t o = 0;
            for (int k = i; k < j; k++) {
                size_t l = strlen(r.v[k].text);
                memcpy(t + o, r.v[k].text, l);
                o += l;
                free(r.v[k].text);
                r.v[k].text = NULL;
            }
            t[o] = 0;
        }
        float w = r.v[i].weight;
        r.v[i].text = NULL;
        r.v[m++] = (sdc_weighted_text){t, w};
        i = j;
    }
    if (!st) r.n = m;
    free(round);
    free(square);
    if (st) {
        sdc_weighted_text_free(r.v, r.n);
        return st == SDC_ERR_NO_MEMORY ? sdc_fail(st, "prompt: attention of %zu bytes", len) : st;
    }
    *parts = r.v;
    *n = r.n;
    return SDC_OK;
}

/* ---- 77-token chunks ---- */

void sdc_clip_tokens_free(sdc_clip_tokens *t) {
    if (!t) return;
    free(t->ids);
    free(t->weights);
    memset(t, 0, sizeof *t);
}

typedef struct {
    int32_t *id;
    float *w;
    size_t n, cap;
} tok_vec;

static int tok_push(tok_vec *v, int32_t id, float w) {
    if (v->n == v->cap) {
        size_t c = v->cap ? 2 * v->cap : 128;
        int32_t *a = realloc(v->id, c * sizeof *a);
        if (!a) return 0;
        v->id = a;
        float *b = realloc(v->w, c * sizeof *b);
        if (!b) return 0;
        v->w = b;
        v->cap = c;
    }
    v->id[v->n] = id;
    v->w[v->n++] = w;
    return 1;
}

/* The parts' tokens and weights, BREAK padding, embeddings expanded (sd.cpp tokenize()). */
static sdc_status prompt_token_list(const sdc_clip_tokenizer *t, const sdc_weighted_text *parts,
                                    int n_parts, const sdc_clip_embedding *embd, int n_embd,
                                    tok_vec *v) {
    const char **names = n_embd ? calloc((size_t)n_embd, sizeof *names) : NULL;
    int32_t *first = n_embd ? calloc((size_t)n_embd, sizeof *first) : NULL;
    if (n_embd && (!names || !first)) {
        free(names);
        free(first);
        return sdc_fail(SDC_ERR_NO_MEMORY, "prompt: embeddings");
    }
    int64_t next = sdc_clip_tokenizer_vocab_size(t);
    for (int k = 0; k < n_embd; k++) {
        names[k] = embd[k].name;
        first[k] = (int32_t)next;
        next += embd[k].n_vectors;
    }
    sdc_status st = next > INT32_MAX
                        ? sdc_fail(SDC_ERR_INVALID_ARG, "prompt: too many embedding vectors")
                        : SDC_OK;
    int32_t eos = sdc_clip_tokenizer_eos(t);
    for (int p = 0; !st && p < n_parts; p++) {
        float w = parts[p].weight;
        if (w == -1.0f && !strcmp(parts[p].text, "BREAK")) {
            size_t pad = (75 - v->n % 75) % 75;
            for (size_t i = 0; i < pad && !st; i++)
                if (!tok_push(v, eos, 1.0f)) st = SDC_ERR_NO_MEMORY;
            continue;
        }
        int32_t *ids = NULL;
        int n = 0;
        st = sdc_clip_tokenize_ex(t, parts[p].text, strlen(parts[p].text), names, n_embd, &ids, &n);
        for (int i = 0; !st && i < n; i++) {
            if (ids[i] >= 0) {
                if (!tok_push(v, ids[i], w)) st = SDC_ERR_NO_MEMORY;
                continue;
            }
            int k = -ids[i] - 1;
            for (int j = 0; j < embd[k].n_vectors && !st; j++)
                if (!tok_push(v, first[k] + j, w)) st = SDC_ERR_NO_MEMORY;
        }
        free(ids);
    }
    free(names);
    free(first);
    if (st == SDC_ERR_NO_MEMORY) return sdc_fail(st, "prompt: token list");
    if (!st && v->n > (size_t)INT32_MAX / 2)
        return sdc_fail(SDC_ERR_INVALID_ARG, "prompt: too long");
    return st;
}

sdc_status sdc_clip_prompt_tokens(const sdc_clip_tokenizer *t, const char *prompt, int32_t pad_id,
                                  const sdc_clip_embedding *embd, int n_embd,
                                  sdc_clip_tokens *out) {
    if (!t || !prompt || !out || n_embd < 0 || (n_embd && !embd))
        return sdc_fail(SDC_ERR_INVALID_ARG, "prompt tokens: bad arguments");
    memset(out, 0, sizeof *out);
    sdc_weighted_text *parts = NULL;
    int n_parts = 0;
    sdc_status st = sdc_prompt_parse_attention(prompt, &parts, &n_parts);
    if (st) return st;
    tok_vec v = {0};
    st = prompt_token_list(t, parts, n_parts, embd, n_embd, &v);
    sdc_weighted_text_free(parts, n_parts);
    if (st) {
        free(v.id);
        free(v.w);
        return st;
    }
    const size_t per = SDC_CLIP_CHUNK - 2;
    size_t chunks = v.n <= per ? 1 : (v.n + per - 1) / per;
    out->ids = malloc(chunks * SDC_CLIP_CHUNK * sizeof *out->ids);
    out->weights = malloc(chunks * SDC_CLIP_CHUNK * sizeof *out->weights);
    if (!out->ids || !out->weights) {
        free(v.id);
        free(v.w);
        sdc_clip_tokens_free(out);
        return sdc_fail(SDC_ERR_NO_MEMORY, "prompt tokens: %zu chunks", chunks);
    }
    for (size_t c = 0; c < chunks; c++) {
        int32_t *id = out->ids + c * SDC_CLIP_CHUNK;
        float *w = out->weights + c * SDC_CLIP_CHUNK;
        size_t off = c * per, take = v.n - off < per ? v.n - off : per, k = 0;
        id[k] = sdc_clip_tokenizer_bos(t);
        w[k++] = 1.0f;
        for (size_t i = 0; i < take; i++, k++) {
            id[k] = v.id[off + i];
            w[k] = v.w[off + i];
        }
        id[k] = sdc_clip_tokenizer_eos(t);
        w[k++] = 1.0f;
        for (; k < SDC_CLIP_CHUNK; k++) {
            id[k] = pad_id;
            w[k] = 1.0f;
        }
    }
    out->n_chunks = (int)chunks;
    out->n_tokens = (int)v.n;
    free(v.id);
    free(v.w);
    return SDC_OK;
}

int sdc_clip_chunk_zero_after_eos(int32_t *chunk_ids, int n, int32_t eos, int32_t pad) {
    int i = 0;
    while (i < n && chunk_ids[i] != eos) i++;
    for (int k = i + 1; k < n; k++) chunk_ids[k] = pad;
    return i < n ? i : n - 1;
}

void sdc_clip_apply_weights(float *hidden, int n, int dim, const float *weights) {
    int all_one = 1;
    for (int i = 0; i < n; i++) all_one &= weights[i] == 1.0f;
    if (all_one || n <= 0 || dim <= 0) return;
    size_t total = (size_t)n * (size_t)dim;
    double sum = 0;
    for (size_t i = 0; i < total; i++) sum += (double)hidden[i];
    float old_mean = (float)(sum / (double)total);
    sum = 0;
    for (int i = 0; i < n; i++) {
        float *row = hidden + (size_t)i * (size_t)dim;
        for (int d = 0; d < dim; d++) {
            row[d] *= weights[i];
            sum += (double)row[d];
        }
    }
    float new_mean = (float)(sum / (double)total);
    if (isfinite(old_mean) && isfinite(new_mean) && new_mean != 0.0f) {
        float scale = old_mean / new_mean;
        for (size_t i = 0; i < total; i++) hidden[i] *= scale;
    }
}

/* ---- textual inversion ---- */

void sdc_clip_embeddings_free(sdc_clip_embedding *e, int n) {
    for (int i = 0; e && i < n; i++) {
        free(e[i].name);
        free(e[i].data);
    }
    free(e);
}

static sdc_status embedding_bad(const char *path, int dim, const char *key) {
    if (key)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: textual-inversion embedding has no tensor '%s' of width %d", path, key,
                        dim);
    return sdc_fail(SDC_ERR_FORMAT,
                    "%s: textual-inversion embedding has no tensor of width %d (the text "
                    "encoder's); is it for another model?",
                    path, dim);
}

/* The same choice of tensor in a GGUF (ne[0] innermost), any type with a to_float. */
static sdc_status embedding_from_gguf(const char *path, int dim, const char *key,
                                      sdc_clip_embedding *e) {
    sdc_gguf_file *f = NULL;
    sdc_status st = sdc_gguf_open(path, &f);
    if (st) return st;
    const sdc_gguf_tensor *best = NULL;
    if (key) {
        best = sdc_gguf_find_tensor(f, key);
    } else {
        for (int i = 0; i < sdc_gguf_tensor_count(f); i++) {
            const sdc_gguf_tensor *x = sdc_gguf_tensor_at(f, i);
            if (x->ne[0] == dim && (!best || strcmp(x->name, best->name) > 0)) best = x;
        }
    }
    int64_t numel = 1;
    for (int d = 0; best && d < SDC_GGUF_MAX_DIMS; d++) numel *= best->ne[d];
    const sdc_type_traits *tr = best ? sdc_type_get(best->type) : NULL;
    if (!best || best->ne[0] != dim || numel <= 0 || numel / dim > 1 << 16 || !tr ||
        !tr->to_float || numel % tr->block_size) {
        sdc_gguf_close(f);
        return embedding_bad(path, dim, key);
    }
    e->n_vectors = (int)(numel / dim);
    e->dim = dim;
    e->data = malloc((size_t)numel * sizeof *e->data);
    if (e->data) tr->to_float(best->data, e->data, numel);
    sdc_gguf_close(f);
    return e->data ? SDC_OK : sdc_fail(SDC_ERR_NO_MEMORY, "%s", path);
}

/* The tensor of an embedding file: `key`, else the last by name with innermost size dim. */
static sdc_status embedding_from_file(const char *path, int dim, const char *key,
                                      sdc_clip_embedding *e) {
    sdc_st_file *f = NULL;
    sdc_status st = sdc_st_open(path, &f);
    if (st) return st;
    const sdc_st_tensor *best = NULL;
    if (key) {
        best = sdc_st_find(f, key);
    } else {
        for (int i = 0; i < sdc_st_count(f); i++) {
            const sdc_st_tensor *x = sdc_st_at(f, i);
            if (x->ndim >= 1 && x->shape[x->ndim - 1] == dim &&
                (!best || strcmp(x->name, best->name) > 0))
                best = x;
        }
    }
    int64_t numel = best ? sdc_st_numel(best) : 0;
    if (!best || best->ndim < 1 || best->shape[best->ndim - 1] != dim || numel <= 0 ||
        numel / dim > 1 << 16) {
        sdc_st_close(f);
        return embedding_bad(path, dim, key);
    }
    e->n_vectors = (int)(numel / dim);
    e->dim = dim;
    e->data = malloc((size_t)numel * sizeof *e->data);
    st = e->data ? sdc_st_to_f32(best, e->data) : sdc_fail(SDC_ERR_NO_MEMORY, "%s", path);
    sdc_st_close(f);
    if (st) return sdc_fail_prefix(st, "%s: ", path);
    return SDC_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of dir with a textual-inversion extension as "stem\0ext" strings, sorted by stem. */
static sdc_status list_embedding_files(const char *dir, char ***names, int *n) {
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return sdc_fail(SDC_ERR_IO, "--embd-dir %s: cannot open the directory", dir);
    char **v = NULL;
    int cnt = 0, cap = 0;
    struct dirent *de;
    sdc_status st = SDC_OK;
    while ((de = readdir(d)) != NULL) {
        const char *dot = strrchr(de->d_name, '.');
        if (!dot || dot == de->d_name ||
            (strcmp(dot, ".safetensors") && strcmp(dot, ".pt") && strcmp(dot, ".ckpt") &&
             strcmp(dot, ".gguf")))
            continue;
        if (cnt == cap) {
            cap = cap ? 2 * cap : 16;
            char **p = realloc(v, (size_t)cap * sizeof *p);
            if (!p) {
                st = sdc_fail(SDC_ERR_NO_MEMORY, "--embd-dir %s", dir);
                break;
            }
            v = p;
        }
        if (!(v[cnt] = dup_n(de->d_name, strlen(de->d_name)))) {
            st = sdc_fail(SDC_ERR_NO_MEMORY, "--embd-dir %s", dir);
            break;
        }
        cnt++;
    }
    closedir(d);
    if (st) {
        for (int i = 0; i < cnt; i++) free(v[i]);
        free(v);
        return st;
    }
    /* "stem\0ext": std::map order of the stems, not of the file names ("a b.pt" < "a.pt") */
    for (int i = 0; i < cnt; i++) *strrchr(v[i], '.') = 0;
    if (cnt > 1) qsort(v, (size_t)cnt, sizeof *v, cmp_str);
    *names = v;
    *n = cnt;
    return SDC_OK;
}

sdc_status sdc_clip_embeddings_load(const char *dir, const char *prompt, int dim, const char *key,
                                    sdc_clip_embedding **out, int *n) {
    if (!out || !n || dim <= 0) return sdc_fail(SDC_ERR_INVALID_ARG, "embeddings: bad arguments");
    *out = NULL;
    *n = 0;
    if (!dir || !*dir) return SDC_OK;
    char *np = NULL, **files = NULL;
    size_t npl = 0;
    int nf = 0, cnt = 0;
    sdc_clip_embedding *e = NULL;
    sdc_status st =
        sdc_clip_normalize(prompt ? prompt : "", prompt ? strlen(prompt) : 0, &np, &npl);
    if (!st) st = list_embedding_files(dir, &files, &nf);
    if (!st && nf) {
        e = calloc((size_t)nf, sizeof *e);
        if (!e) st = sdc_fail(SDC_ERR_NO_MEMORY, "embeddings");
    }
    for (int i = 0; !st && i < nf; i++) {
        const char *stem = files[i], *ext = files[i] + strlen(files[i]) + 1;
        char *name = NULL;
        size_t nl = 0;
        st = sdc_clip_normalize(stem, strlen(stem), &name, &nl);
        if (st) break;
        if (!nl || !strstr(np, name)) {
            free(name);
            continue;
        }
        char path[4300];
        snprintf(path, sizeof path, "%s/%s.%s", dir, stem, ext);
        if (strcmp(ext, "safetensors") && strcmp(ext, "gguf")) {
            SDC_LOGW("%s: textual-inversion embeddings in .%s files are not supported; '%s' stays "
                     "plain text (convert it to .safetensors)",
                     path, ext, stem);
            free(name);
            continue;
        }
        /* names equal once lower-cased: the later file wins, as in sd.cpp's map */
        int k = 0;
        while (k < cnt && strcmp(e[k].name, name)) k++;
        sdc_clip_embedding x = {name, 0, 0, NULL};
        st = !strcmp(ext, "gguf") ? embedding_from_gguf(path, dim, key, &x)
                                  : embedding_from_file(path, dim, key, &x);
        if (st) {
            free(name);
            free(x.data);
            break;
        }
        if (k < cnt) {
            free(e[k].name);
            free(e[k].data);
        } else {
            cnt++;
        }
        e[k] = x;
        SDC_LOGI("textual inversion '%s': %d vector(s) of %d from %s", name, x.n_vectors, dim,
                 path);
    }
    for (int i = 0; i < nf; i++) free(files[i]);
    free(files);
    free(np);
    if (st) {
        sdc_clip_embeddings_free(e, cnt);
        return st;
    }
    if (!cnt) {
        free(e);
        e = NULL;
    }
    *out = e;
    *n = cnt;
    return SDC_OK;
}
