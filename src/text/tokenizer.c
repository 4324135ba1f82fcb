/* Tokenizer core: vocabulary bookkeeping, added-token splitting, the two normalisation
 * styles (sentencepiece's own, HF's step lists) and the unigram Viterbi. */
#include "text/tokenizer_internal.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/grapheme.h"
#include "text/utf8.h"

/* sentencepiece / HF: an unknown character costs this much below the lowest piece score. */
#define UNK_PENALTY 10.0

static const char kSpaceSymbol[] = "\xE2\x96\x81"; /* U+2581 */

/* ---- growable byte buffer -------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_free(sbuf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- vocabulary ------------------------------------------------------------------------ */

sdc_tokenizer *sdc_tok_alloc(int32_t n_pieces) {
    sdc_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->n_pieces = n_pieces;
    size_t n = n_pieces > 0 ? (size_t)n_pieces : 1;
    t->pieces = calloc(n, sizeof *t->pieces);
    t->piece_lens = calloc(n, sizeof *t->piece_lens);
    t->scores = calloc(n, sizeof *t->scores);
    t->types = calloc(n, sizeof *t->types);
    t->unk_id = t->eos_id = t->pad_id = -1;
    t->add_dummy_prefix = t->remove_extra_ws = t->escape_ws = 1;
    if (!t->pieces || !t->piece_lens || !t->scores || !t->types) {
        sdc_tokenizer_free(t);
        return NULL;
    }
    return t;
}

sdc_status sdc_tok_set_piece(sdc_tokenizer *t, int32_t i, const char *s, size_t len, double score,
                             int type) {
    if (i < 0 || i >= t->n_pieces) return sdc_fail(SDC_ERR_INTERNAL, "tokenizer: piece index");
    if (len > 0xFFFFFF) return sdc_fail(SDC_ERR_FORMAT, "tokenizer: piece %d is too long", i);
    char *p = malloc(len + 1);
    if (!p) return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: piece");
    memcpy(p, s, len);
    p[len] = 0;
    free(t->pieces[i]);
    t->pieces[i] = p;
    t->piece_lens[i] = (uint32_t)len;
    t->scores[i] = score;
    t->types[i] =
        (uint8_t)(type >= SDC_PIECE_NORMAL && type <= SDC_PIECE_BYTE ? type : SDC_PIECE_NORMAL);
    return SDC_OK;
}

sdc_status sdc_tok_finish(sdc_tokenizer *t, const char *label) {
    size_t total = 0;
    for (int32_t i = 0; i < t->n_pieces; i++) {
        if (!t->pieces[i]) return sdc_fail(SDC_ERR_FORMAT, "%s: piece %d is missing", label, i);
        total += t->piece_lens[i];
    }
    sdc_status st = sdc_piece_trie_init(&t->trie, total);
    if (st) return st;
    double lo = DBL_MAX, hi = -DBL_MAX, lo_all = DBL_MAX;
    for (int32_t i = 0; i < t->n_pieces; i++) {
        if (t->piece_lens[i] == 0) continue; /* an empty piece can never match */
        st = sdc_piece_trie_add(&t->trie, t->pieces[i], t->piece_lens[i], i);
        if (st) return st;
        if (t->scores[i] < lo_all) lo_all = t->scores[i];
        if (t->types[i] == SDC_PIECE_NORMAL) {
            if (t->scores[i] < lo) lo = t->scores[i];
            if (t->scores[i] > hi) hi = t->scores[i];
        }
        if (t->types[i] == SDC_PIECE_USER_DEFINED) t->has_user_defined = 1;
    }
    /* sentencepiece takes the range over normal pieces; HF over the whole vocabulary. */
    if (t->style == SDC_TOK_STYLE_HF) lo = lo_all;
    t->min_score = lo == DBL_MAX ? 0 : lo;
    t->max_score = hi == -DBL_MAX ? 0 : hi;
    if (t->unk_id >= t->n_pieces || t->eos_id >= t->n_pieces || t->pad_id >= t->n_pieces)
        return sdc_fail(SDC_ERR_FORMAT, "%s: special token id out of range (vocabulary of %d)",
                        label, t->n_pieces);
    return SDC_OK;
}

sdc_status sdc_tok_add_added(sdc_tokenizer *t, const char *s, size_t len, int32_t id, int lstrip,
                             int rstrip) {
    if (len == 0) return SDC_OK; /* an empty added token matches nothing */
    sdc_tok_added *a = realloc(t->added, (size_t)(t->n_added + 1) * sizeof *a);
    if (!a) return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: added tokens");
    t->added = a;
    a = &t->added[t->n_added];
    a->text = malloc(len + 1);
    if (!a->text) return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: added tokens");
    memcpy(a->text, s, len);
    a->text[len] = 0;
    a->len = len;
    a->id = id;
    a->lstrip = lstrip;
    a->rstrip = rstrip;
    t->n_added++;
    return SDC_OK;
}

int32_t sdc_tok_find_piece(const sdc_tokenizer *t, const char *s) {
    size_t len = strlen(s);
    for (int32_t i = 0; i < t->n_pieces; i++)
        if (t->pieces[i] && t->piece_lens[i] == len && memcmp(t->pieces[i], s, len) == 0) return i;
    return -1;
}

int32_t sdc_tok_lookup(const sdc_tokenizer *t, const char *s, size_t len) {
    if (!t->trie.node_id || len == 0) return -1;
    int32_t node = 0;
    for (size_t i = 0; i < len && node >= 0; i++)
        node = sdc_piece_trie_child(&t->trie, node, (uint8_t)s[i]);
    return node >= 0 ? t->trie.node_id[node] : -1;
}

void sdc_tokenizer_free(sdc_tokenizer *t) {
    if (!t) return;
    for (int32_t i = 0; i < t->n_pieces && t->pieces; i++) free(t->pieces[i]);
    free(t->pieces);
    free(t->piece_lens);
    free(t->scores);
    free(t->types);
    sdc_piece_trie_free(&t->trie);
    sdc_charsmap_free(t->charsmap);
    for (int i = 0; i < t->n_norm; i++) {
        free(t->norm[i].pattern);
        free(t->norm[i].content);
    }
    free(t->norm);
    free(t->pre);
    for (int i = 0; i < t->n_added; i++) free(t->added[i].text);
    free(t->added);
    free(t);
}

int32_t sdc_tokenizer_vocab_size(const sdc_tokenizer *t) {
    return t->n_pieces;
}
const char *sdc_tokenizer_piece(const sdc_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_pieces ? t->pieces[id] : NULL;
}
int32_t sdc_tokenizer_pad_id(const sdc_tokenizer *t) {
    return t->pad_id;
}
int32_t sdc_tokenizer_eos_id(const sdc_tokenizer *t) {
    return t->eos_id;
}
int32_t sdc_tokenizer_unk_id(const sdc_tokenizer *t) {
    return t->unk_id;
}
int32_t sdc_tokenizer_num_special_added(const sdc_tokenizer *t) {
    return t->n_prefix + t->n_suffix;
}

/* ---- token output ---------------------------------------------------------------------- */

void sdc_tokens_free(sdc_tokens *o) {
    if (!o) return;
    if (o->pieces)
        for (int32_t i = 0; i < o->n; i++) free(o->pieces[i]);
    free(o->pieces);
    free(o->ids);
    memset(o, 0, sizeof *o);
}

typedef struct emitter {
    sdc_tokens *out;
    int want_pieces;
    int32_t fuse_from; /* an <unk> may merge only with an <unk> at index >= fuse_from */
    int32_t prev_unk;  /* index of the last token when it is a model <unk>, else -1 */
    size_t prev_unk_len, prev_unk_cap; /* its piece string's length and allocation */
} emitter;

static sdc_status emit(emitter *e, int32_t id, const char *s, size_t len) {
    sdc_tokens *o = e->out;
    if (o->n == o->cap) {
        int32_t cap = o->cap ? o->cap * 2 : 32;
        int32_t *ids = realloc(o->ids, (size_t)cap * sizeof *ids);
        if (!ids) return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: output");
        o->ids = ids;
        if (e->want_pieces) {
            char **p = realloc(o->pieces, (size_t)cap * sizeof *p);
            if (!p) return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: output");
            o->pieces = p;
        }
        o->cap = cap;
    }
    if (e->want_pieces) {
        char *p = malloc(len + 1);
        if (!p) return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: output");
        memcpy(p, s, len);
        p[len] = 0;
        o->pieces[o->n] = p;
    }
    o->ids[o->n++] = id;
    e->prev_unk = -1;
    return SDC_OK;
}

/* Appends surface text to the previous <unk> (runs of unknown characters are one token). */
static sdc_status extend_unk(emitter *e, const char *s, size_t len) {
    if (!e->want_pieces) return SDC_OK;
    char **slot = &e->out->pieces[e->prev_unk];
    size_t old = e->prev_unk_len;
    if (old + len + 1 > e->prev_unk_cap) { /* geometric growth: long unknown runs stay linear */
        size_t cap = 2 * (old + len + 1);
        char *p = realloc(*slot, cap);
        if (!p) return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: output");
        *slot = p;
        e->prev_unk_cap = cap;
    }
    memcpy(*slot + old, s, len);
    (*slot)[old + len] = 0;
    e->prev_unk_len = old + len;
    return SDC_OK;
}

/* An unknown span: byte pieces when the model falls back to bytes and has them all,
 * otherwise one <unk> (merged with a directly preceding one). */
static sdc_status emit_unknown(const sdc_tokenizer *t, emitter *e, const char *s, size_t len) {
    if (t->byte_fallback) {
        int32_t ids[4];
        int all = len <= 4;
        for (size_t i = 0; all && i < len; i++) {
            char name[8];
            snprintf(name, sizeof name, "<0x%02X>", (uint8_t)s[i]);
            ids[i] = sdc_tok_lookup(t, name, 6);
            if (ids[i] < 0) all = 0;
        }
        if (all) {
            for (size_t i = 0; i < len; i++) {
                sdc_status st = emit(e, ids[i], t->pieces[ids[i]], t->piece_lens[ids[i]]);
                if (st) return st;
            }
            return SDC_OK;
        }
    }
    if (e->prev_unk >= 0 && e->prev_unk >= e->fuse_from) return extend_unk(e, s, len);
    sdc_status st = emit(e, t->unk_id, s, len);
    e->prev_unk = e->out->n - 1;
    e->prev_unk_len = len;
    e->prev_unk_cap = len + 1;
    return st;
}

/* ---- unigram Viterbi ------------------------------------------------------------------- */

static int piece_matchable(int type) {
    return type == SDC_PIECE_NORMAL || type == SDC_PIECE_USER_DEFINED;
}

/* Best segmentation of s[0..n) (maximum total score; a character no piece covers on its own
 * is an unknown costing min_score - 10), emitted left to right. */
static sdc_status viterbi(const sdc_tokenizer *t, const char *s, size_t n, emitter *e) {
    if (n == 0) return SDC_OK;
    double *score = malloc((n + 1) * sizeof *score);
    int64_t *start = malloc((n + 1) * sizeof *start);
    int32_t *id = malloc((n + 1) * sizeof *id);
    if (!score || !start || !id) {
        free(score), free(start), free(id);
        return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: lattice of %zu bytes", n);
    }
    for (size_t i = 0; i <= n; i++) score[i] = 0, start[i] = -1, id[i] = -1;
    const double unk_score =
        t->f32_scores ? (double)(float)(t->min_score - UNK_PENALTY) : t->min_score - UNK_PENALTY;
    sdc_status st = SDC_OK;
    for (size_t pos = 0; pos < n;) {
        size_t mblen = sdc_utf8_lead_len((uint8_t)s[pos]);
        if (mblen > n - pos) mblen = n - pos;
        const double base = score[pos];
        int has_single = 0;
        int32_t node = 0;
        for (size_t k = pos; k < n; k++) {
            node = sdc_piece_trie_child(&t->trie, node, (uint8_t)s[k]);
            if (node < 0) break;
            int32_t pid = t->trie.node_id[node];
            if (pid < 0 || !piece_matchable(t->types[pid])) continue;
            size_t len = k + 1 - pos;
            double sc = t->scores[pid];
            if (t->types[pid] == SDC_PIECE_USER_DEFINED) /* always preferred */
                sc = (t->f32_scores ? (double)((float)len * (float)t->max_score)
                                    : (double)len * t->max_score) -
                     0.1;
            /* sentencepiece compares the double sum with the float it stored before,
             * then stores the sum rounded to float: ties are decided by that rounding */
            double cand = sc + base;
            if (start[k + 1] < 0 || cand > score[k + 1]) {
                score[k + 1] = t->f32_scores ? (double)(float)cand : cand;
                start[k + 1] = (int64_t)pos;
                id[k + 1] = pid;
            }
            if (len == mblen) has_single = 1;
        }
        if (!has_single) {
            double cand = t->f32_scores ? (double)(float)(unk_score + base) : unk_score + base;
            size_t end = pos + mblen;
            if (start[end] < 0 || cand > score[end]) {
                score[end] = cand;
                start[end] = (int64_t)pos;
                id[end] = -2; /* unknown */
            }
        }
        pos += mblen;
    }
    /* Backtrack into `start` reused as a forward chain: next[begin] = end. */
    size_t *next = malloc((n + 1) * sizeof *next);
    if (!next) {
        st = sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: lattice");
        goto done;
    }
    for (size_t end = n; end > 0;) {
        size_t b = (size_t)start[end];
        next[b] = end;
        end = b;
    }
    for (size_t b = 0; b < n && !st;) {
        size_t end = next[b];
        int32_t pid = id[end];
        if (pid == -2) {
            if (t->unk_id < 0)
                st = sdc_fail(SDC_ERR_FORMAT,
                              "tokenizer: text has a character outside the vocabulary and the "
                              "model defines no unknown token");
            else
                st = emit_unknown(t, e, s + b, end - b);
        } else {
            st = emit(e, pid, t->pieces[pid], t->piece_lens[pid]);
        }
        b = end;
    }
    free(next);
done:
    free(score), free(start), free(id);
    return st;
}

/* ---- sentencepiece normaliser ---------------------------------------------------------- */

/* One normalisation unit at s: a user-defined piece (kept as is), else the longest charsmap
 * rule, else one UTF-8 character (a malformed byte reads as U+FFFD). */
static size_t spm_norm_prefix(const sdc_tokenizer *t, const char *s, size_t len, const char **rep,
                              size_t *rep_len) {
    if (t->has_user_defined) {
        size_t best = 0;
        int32_t node = 0;
        for (size_t k = 0; k < len; k++) {
            node = sdc_piece_trie_child(&t->trie, node, (uint8_t)s[k]);
            if (node < 0) break;
            int32_t pid = t->trie.node_id[node];
            if (pid >= 0 && t->types[pid] == SDC_PIECE_USER_DEFINED) best = k + 1;
        }
        if (best) {
            *rep = s;
            *rep_len = best;
            return best;
        }
    }
    if (t->charsmap) {
        size_t used = sdc_charsmap_match(t->charsmap, s, len, rep, rep_len);
        if (used) return used;
    }
    int32_t cp;
    size_t n = sdc_utf8_decode(s, len, &cp);
    if (cp < 0) {
        *rep = "\xEF\xBF\xBD";
        *rep_len = 3;
        return 1;
    }
    *rep = s;
    *rep_len = n;
    return n;
}

static void spm_normalize(const sdc_tokenizer *t, const char *s, size_t len, sbuf *out) {
    size_t pos = 0;
    const char *rep;
    size_t rep_len;
    if (t->remove_extra_ws) {
        while (pos < len) {
            size_t used = spm_norm_prefix(t, s + pos, len - pos, &rep, &rep_len);
            if (!(rep_len == 1 && rep[0] == ' ')) break;
            pos += used;
        }
    }
    if (pos == len) return;
    const char *space = t->escape_ws ? kSpaceSymbol : " ";
    size_t space_len = t->escape_ws ? 3 : 1;
    if (t->add_dummy_prefix) sb_put(out, space, space_len);
    int prev_space = t->remove_extra_ws;
    while (pos < len) {
        size_t used = spm_norm_prefix(t, s + pos, len - pos, &rep, &rep_len);
        if (prev_space)
            while (rep_len > 0 && rep[0] == ' ') rep++, rep_len--;
        if (rep_len > 0) {
            for (size_t i = 0; i < rep_len; i++) {
                if (rep[i] == ' ')
                    sb_put(out, space, space_len);
                else
                    sb_put(out, rep + i, 1);
            }
            prev_space = rep[rep_len - 1] == ' ';
        }
        pos += used;
        if (!t->remove_extra_ws) prev_space = 0;
    }
    if (t->remove_extra_ws)
        while (out->n >= space_len && memcmp(out->p + out->n - space_len, space, space_len) == 0)
            out->n -= space_len;
}

/* ---- HF normalizer and pre-tokenizer steps --------------------------------------------- */

/* Rust strings are valid UTF-8: malformed bytes become U+FFFD before anything else. */
static void hf_sanitize(const char *s, size_t len, sbuf *out) {
    for (size_t pos = 0; pos < len;) {
        int32_t cp;
        size_t n = sdc_utf8_decode(s + pos, len - pos, &cp);
        if (cp < 0)
            sb_put(out, "\xEF\xBF\xBD", 3);
        else
            sb_put(out, s + pos, n);
        pos += n;
    }
}

/* HF's Precompiled normalizer works per extended grapheme cluster: a cluster shorter than
 * 6 bytes whose bytes start with a rule is replaced whole by the shortest such rule (the
 * rest of the cluster is dropped, e.g. a second combining accent); otherwise each
 * character is looked up on its own. sentencepiece instead takes the longest rule at every
 * position; the two agree on ordinary text. */
static void hf_precompiled(const sdc_charsmap *cm, const sbuf *in, sbuf *out) {
    const char *rep;
    size_t rep_len;
    for (size_t pos = 0; pos < in->n;) {
        size_t glen = sdc_grapheme_next(in->p + pos, in->n - pos);
        if (glen < 6 && sdc_charsmap_match_shortest(cm, in->p + pos, glen, &rep, &rep_len)) {
            sb_put(out, rep, rep_len);
            pos += glen;
            continue;
        }
        for (size_t end = pos + glen; pos < end;) {
            int32_t cp;
            size_t n = sdc_utf8_decode(in->p + pos, end - pos, &cp);
            if (sdc_charsmap_match_shortest(cm, in->p + pos, n, &rep, &rep_len) == n)
                sb_put(out, rep, rep_len);
            else
                sb_put(out, in->p + pos, n);
            pos += n;
        }
    }
}

static void hf_replace(const sdc_tok_norm_step *r, const sbuf *in, sbuf *out) {
    for (size_t pos = 0; pos < in->n;) {
        size_t reps = 0, at = pos;
        while (at + r->pattern_len <= in->n &&
               memcmp(in->p + at, r->pattern, r->pattern_len) == 0) {
            reps++;
            at += r->pattern_len;
            if (r->min_repeat == 0 || (r->max_repeat && reps == (size_t)r->max_repeat)) break;
        }
        size_t need = r->min_repeat ? (size_t)r->min_repeat : 1;
        if (reps >= need) {
            sb_put(out, r->content, r->content_len);
            pos = at;
        } else {
            sb_put(out, in->p + pos, 1);
            pos++;
        }
    }
}

static int hf_ws_at(const char *s, size_t len, size_t *n) {
    int32_t cp;
    *n = sdc_utf8_decode(s, len, &cp);
    return cp >= 0 && sdc_unicode_is_whitespace(cp);
}

static void hf_strip(const sdc_tok_norm_step *r, const sbuf *in, sbuf *out) {
    size_t b = 0, e = in->n, n;
    if (r->strip_left)
        while (b < e && hf_ws_at(in->p + b, e - b, &n)) b += n;
    if (r->strip_right) {
        /* find the end of the last non-whitespace character */
        size_t last = b;
        for (size_t pos = b; pos < e;) {
            int ws = hf_ws_at(in->p + pos, e - pos, &n);
            pos += n;
            if (!ws) last = pos;
        }
        e = last;
    }
    if (e > b) sb_put(out, in->p + b, e - b);
}

typedef struct word {
    size_t off, len; /* into the words buffer */
    int at_origin;   /* starts where the text segment starts (Metaspace "first") */
} word;

typedef struct wordlist {
    sbuf buf;
    word *w;
    int n, cap;
    int oom;
} wordlist;

static void wl_add(wordlist *l, const char *s, size_t len, int at_origin) {
    if (len == 0 || l->oom) return;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        word *w = realloc(l->w, (size_t)cap * sizeof *w);
        if (!w) {
            l->oom = 1;
            return;
        }
        l->w = w;
        l->cap = cap;
    }
    size_t off = l->buf.n;
    sb_put(&l->buf, s, len);
    l->w[l->n++] = (word){off, len, at_origin};
}

static void wl_free(wordlist *l) {
    sb_free(&l->buf);
    free(l->w);
    memset(l, 0, sizeof *l);
}

static void pre_whitespace_split(const wordlist *in, wordlist *out) {
    for (int i = 0; i < in->n; i++) {
        const char *s = in->buf.p + in->w[i].off;
        size_t len = in->w[i].len, pos = 0, n;
        while (pos < len) {
            while (pos < len && hf_ws_at(s + pos, len - pos, &n)) pos += n;
            size_t b = pos;
            while (pos < len && !hf_ws_at(s + pos, len - pos, &n)) pos += n;
            wl_add(out, s + b, pos - b, in->w[i].at_origin && b == 0);
        }
    }
}

static void pre_metaspace(const sdc_tok_pre_step *m, const wordlist *in, wordlist *out) {
    sbuf tmp = {0};
    for (int i = 0; i < in->n; i++) {
        const char *s = in->buf.p + in->w[i].off;
        size_t len = in->w[i].len;
        tmp.n = 0;
        for (size_t k = 0; k < len; k++) {
            if (s[k] == ' ')
                sb_put(&tmp, m->replacement, m->replacement_len);
            else
                sb_put(&tmp, s + k, 1);
        }
        int starts =
            tmp.n >= m->replacement_len && memcmp(tmp.p, m->replacement, m->replacement_len) == 0;
        int prepend = !starts && (m->prepend == SDC_PREPEND_ALWAYS ||
                                  (m->prepend == SDC_PREPEND_FIRST && in->w[i].at_origin));
        if (prepend) {
            sbuf p2 = {0};
            sb_put(&p2, m->replacement, m->replacement_len);
            sb_put(&p2, tmp.p, tmp.n);
            sb_free(&tmp);
            tmp = p2;
        }
        if (tmp.oom) break;
        if (!m->split) {
            wl_add(out, tmp.p, tmp.n, in->w[i].at_origin);
            continue;
        }
        /* split before every replacement character, keeping it with what follows */
        size_t b = 0;
        for (size_t k = 1; k + m->replacement_len <= tmp.n; k++) {
            if (memcmp(tmp.p + k, m->replacement, m->replacement_len) == 0) {
                wl_add(out, tmp.p + b, k - b, in->w[i].at_origin && b == 0);
                b = k;
            }
        }
        wl_add(out, tmp.p + b, tmp.n - b, in->w[i].at_origin && b == 0);
    }
    if (tmp.oom) out->oom = 1;
    sb_free(&tmp);
}

/* ---- encode ---------------------------------------------------------------------------- */

static sdc_status encode_segment(const sdc_tokenizer *t, const char *s, size_t len, int at_origin,
                                 emitter *e) {
    sdc_status st = SDC_OK;
    e->fuse_from = e->out->n;
    e->prev_unk = -1;
    if (t->style == SDC_TOK_STYLE_SPM) {
        sbuf norm = {0};
        spm_normalize(t, s, len, &norm);
        if (norm.oom)
            st = sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: normalised text");
        else
            st = viterbi(t, norm.p, norm.n, e);
        sb_free(&norm);
        return st;
    }
    sbuf a = {0}, b = {0};
    hf_sanitize(s, len, &a);
    for (int i = 0; i < t->n_norm && !a.oom && !b.oom; i++) {
        const sdc_tok_norm_step *r = &t->norm[i];
        b.n = 0;
        switch (r->kind) {
        case SDC_NORM_PRECOMPILED:
            hf_precompiled(t->charsmap, &a, &b);
            break;
        case SDC_NORM_REPLACE:
            hf_replace(r, &a, &b);
            break;
        case SDC_NORM_STRIP:
            hf_strip(r, &a, &b);
            break;
        case SDC_NORM_PREPEND:
            if (a.n) sb_put(&b, r->content, r->content_len);
            sb_put(&b, a.p, a.n);
            break;
        }
        sbuf tmp = a;
        a = b;
        b = tmp;
    }
    wordlist w = {0};
    wl_add(&w, a.p, a.n, at_origin);
    if (a.oom || b.oom) w.oom = 1;
    sb_free(&a);
    sb_free(&b);
    for (int i = 0; i < t->n_pre && !w.oom; i++) {
        wordlist next = {0};
        if (t->pre[i].kind == SDC_PRE_WHITESPACE_SPLIT)
            pre_whitespace_split(&w, &next);
        else
            pre_metaspace(&t->pre[i], &w, &next);
        if (next.buf.oom) next.oom = 1;
        wl_free(&w);
        w = next;
    }
    if (w.oom) st = sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: words");
    for (int i = 0; i < w.n && !st; i++) {
        e->fuse_from = e->out->n; /* HF merges unknowns within a word only */
        e->prev_unk = -1;
        st = viterbi(t, w.buf.p + w.w[i].off, w.w[i].len, e);
    }
    wl_free(&w);
    return st;
}

/* Longest added token starting at s (HF matches them leftmost-longest). */
static const sdc_tok_added *match_added(const sdc_tokenizer *t, const char *s, size_t len) {
    const sdc_tok_added *best = NULL;
    for (int i = 0; i < t->n_added; i++) {
        const sdc_tok_added *a = &t->added[i];
        if (a->len <= len && (!best || a->len > best->len) && memcmp(s, a->text, a->len) == 0)
            best = a;
    }
    return best;
}

static int is_ascii_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

sdc_status sdc_tokenizer_encode(const sdc_tokenizer *t, const char *text, size_t len, int flags,
                                sdc_tokens *out) {
    if (!t || !out || (!text && len))
        return sdc_fail(SDC_ERR_INVALID_ARG, "tokenizer: encode without tokenizer or text");
    sdc_tokens_free(out);
    emitter e = {out, (flags & SDC_TOK_WANT_PIECES) != 0, 0, -1, 0, 0};
    sdc_status st = SDC_OK;
    int add_special = (flags & SDC_TOK_ADD_SPECIAL) != 0;
    for (int i = 0; add_special && i < t->n_prefix && !st; i++)
        st = emit(&e, t->prefix_ids[i], t->pieces[t->prefix_ids[i]],
                  t->piece_lens[t->prefix_ids[i]]);
    size_t seg = 0, pos = 0;
    int match = !(flags & SDC_TOK_NO_SPECIAL) && t->n_added > 0;
    while (match && pos < len && !st) {
        const sdc_tok_added *a = match_added(t, text + pos, len - pos);
        if (!a) {
            pos++;
            continue;
        }
        size_t seg_end = pos;
        if (a->lstrip)
            while (seg_end > seg && is_ascii_space(text[seg_end - 1])) seg_end--;
        st = encode_segment(t, text + seg, seg_end - seg, seg == 0, &e);
        if (!st) st = emit(&e, a->id, a->text, a->len);
        pos += a->len;
        if (a->rstrip)
            while (pos < len && is_ascii_space(text[pos])) pos++;
        seg = pos;
    }
    if (!st) st = encode_segment(t, text + seg, len - seg, seg == 0, &e);
    for (int i = 0; add_special && i < t->n_suffix && !st; i++)
        st = emit(&e, t->suffix_ids[i], t->pieces[t->suffix_ids[i]],
                  t->piece_lens[t->suffix_ids[i]]);
    if (st) sdc_tokens_free(out);
    return st;
}

sdc_status sdc_tokenizer_encode_t5(const sdc_tokenizer *t, const char *text, int32_t max_length,
                                   int32_t *ids, float *mask, int32_t *n_real) {
    return sdc_tokenizer_encode_t5_ex(t, text, max_length, ids, mask, n_real, NULL);
}

sdc_status sdc_tokenizer_encode_t5_ex(const sdc_tokenizer *t, const char *text, int32_t max_length,
                                      int32_t *ids, float *mask, int32_t *n_real,
                                      int32_t *n_dropped) {
    if (!t || !ids || max_length <= 0)
        return sdc_fail(SDC_ERR_INVALID_ARG, "tokenizer: encode_t5 needs max_length > 0");
    sdc_tokens tk = {0};
    sdc_status st = sdc_tokenizer_encode(t, text ? text : "", text ? strlen(text) : 0, 0, &tk);
    if (st) return st;
    int32_t room = max_length - t->n_prefix - t->n_suffix;
    if (room < 0) room = 0;
    int32_t keep = tk.n < room ? tk.n : room, n = 0;
    for (int i = 0; i < t->n_prefix && n < max_length; i++) ids[n++] = t->prefix_ids[i];
    for (int i = 0; i < keep; i++) ids[n++] = tk.ids[i];
    for (int i = 0; i < t->n_suffix && n < max_length; i++) ids[n++] = t->suffix_ids[i];
    int32_t pad = t->pad_id >= 0 ? t->pad_id : 0;
    for (int32_t i = 0; i < max_length; i++) {
        if (i >= n) ids[i] = pad;
        if (mask) mask[i] = i < n ? 1.0f : 0.0f;
    }
    if (n_real) *n_real = n;
    if (n_dropped) *n_dropped = tk.n - keep;
    sdc_tokens_free(&tk);
    return SDC_OK;
}
