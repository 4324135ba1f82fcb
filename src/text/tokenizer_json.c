/* Hugging Face tokenizer.json loader (Unigram models): vocabulary, added tokens, normalizer,
 * pre-tokenizer and post-processor. Anything the encoder cannot reproduce exactly is
 * refused with a message naming it, rather than tokenised differently. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_internal.h"
#include "text/utf8.h"

static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int jbool(const cJSON *o, const char *key, int dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return dflt;
}

/* ---- base64 (the Precompiled charsmap) ---- */

static int b64_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

static sdc_status b64_decode(const char *s, uint8_t **out, size_t *out_len, const char *label) {
    size_t n = strlen(s);
    uint8_t *buf = malloc(n / 4 * 3 + 4);
    if (!buf) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: charsmap", label);
    uint32_t acc = 0;
    int bits = 0;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '=') break;
        int v = b64_value(s[i]);
        if (v < 0) {
            free(buf);
            return sdc_fail(SDC_ERR_FORMAT, "%s: precompiled_charsmap is not base64", label);
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[len++] = (uint8_t)(acc >> bits);
        }
    }
    *out = buf;
    *out_len = len;
    return SDC_OK;
}

/* ---- normalizer ---- */

static sdc_status add_norm(sdc_tokenizer *t, sdc_tok_norm_step step, const char *label) {
    if (t->n_norm >= 64) return sdc_fail(SDC_ERR_FORMAT, "%s: too many normalizers", label);
    sdc_tok_norm_step *p = realloc(t->norm, (size_t)(t->n_norm + 1) * sizeof *p);
    if (!p) {
        free(step.pattern);
        free(step.content);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: normalizer", label);
    }
    t->norm = p;
    t->norm[t->n_norm++] = step;
    return SDC_OK;
}

static char *dup_str(const char *s, size_t *len) {
    *len = strlen(s);
    char *p = malloc(*len + 1);
    if (p) memcpy(p, s, *len + 1);
    return p;
}

/* Regex patterns: only a literal unit (one character, or an escaped one) repeated
 * ("X{n,}", "X{n}", "X{n,m}", "X+") or a plain literal, which is all T5 converters emit. */
static int parse_regex(const char *re, sdc_tok_norm_step *r) {
    const char *p = re;
    char unit[8];
    size_t ulen;
    if (*p == '\\') {
        p++;
        if (!*p) return 0;
        if (*p == 's' || *p == 'd' || *p == 'w' || *p == 'S' || *p == 'D' || *p == 'W') return 0;
        unit[0] = *p == 't' ? '\t' : *p == 'n' ? '\n' : *p;
        ulen = 1;
        p++;
    } else {
        if (strchr(".[](){}*+?|^$", *p) || !*p) return 0;
        int32_t cp;
        ulen = sdc_utf8_decode(p, strlen(p), &cp);
        if (cp < 0) return 0;
        memcpy(unit, p, ulen);
        p += ulen;
    }
    int lo = 0, hi = 0;
    if (*p == '+') {
        lo = 1, p++;
    } else if (*p == '{') {
        char *end;
        long a = strtol(p + 1, &end, 10);
        if (end == p + 1 || a < 1 || a > 1000) return 0;
        lo = (int)a;
        if (*end == '}') {
            hi = lo;
        } else if (*end == ',' && end[1] == '}') {
            hi = 0;
            end++;
        } else if (*end == ',') {
            long b = strtol(end + 1, &end, 10);
            if (b < a || b > 1000 || *end != '}') return 0;
            hi = (int)b;
        } else {
            return 0;
        }
        p = end + 1;
    } else if (*p == 0) {
        lo = 0;
    } else {
        return 0;
    }
    if (*p) return 0;
    r->pattern = malloc(ulen + 1);
    if (!r->pattern) return 0;
    memcpy(r->pattern, unit, ulen);
    r->pattern[ulen] = 0;
    r->pattern_len = ulen;
    r->min_repeat = lo;
    r->max_repeat = hi;
    return 1;
}

static sdc_status load_normalizer(sdc_tokenizer *t, const cJSON *n, const char *label, int depth) {
    if (!n || cJSON_IsNull(n)) return SDC_OK;
    if (depth > 8) return sdc_fail(SDC_ERR_FORMAT, "%s: normalizer nesting too deep", label);
    const char *type = jstr(n, "type");
    if (!type) return sdc_fail(SDC_ERR_FORMAT, "%s: normalizer without type", label);
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(n, "normalizers");
        if (!cJSON_IsArray(list))
            return sdc_fail(SDC_ERR_FORMAT, "%s: Sequence normalizer without list", label);
        const cJSON *c;
        cJSON_ArrayForEach(c, list) {
            sdc_status st = load_normalizer(t, c, label, depth + 1);
            if (st) return st;
        }
        return SDC_OK;
    }
    sdc_tok_norm_step step = {0};
    if (!strcmp(type, "Precompiled")) {
        const cJSON *cm = cJSON_GetObjectItemCaseSensitive(n, "precompiled_charsmap");
        if (cJSON_IsNull(cm)) return SDC_OK; /* identity normalisation */
        const char *b64 = jstr(n, "precompiled_charsmap");
        if (!b64) return sdc_fail(SDC_ERR_FORMAT, "%s: Precompiled without charsmap", label);
        if (t->charsmap)
            return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: more than one Precompiled normalizer", label);
        uint8_t *raw = NULL;
        size_t raw_len = 0;
        sdc_status st = b64_decode(b64, &raw, &raw_len, label);
        if (st) return st;
        if (raw_len == 0) { /* an empty map normalises nothing */
            free(raw);
            return SDC_OK;
        }
        st = sdc_charsmap_parse(raw, raw_len, label, &t->charsmap);
        free(raw);
        if (st) return st;
        step.kind = SDC_NORM_PRECOMPILED;
        return add_norm(t, step, label);
    }
    if (!strcmp(type, "Replace")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(n, "pattern");
        const char *content = jstr(n, "content");
        if (!pat || !content) return sdc_fail(SDC_ERR_FORMAT, "%s: Replace incomplete", label);
        step.kind = SDC_NORM_REPLACE;
        const char *lit = jstr(pat, "String");
        const char *re = jstr(pat, "Regex");
        if (lit && *lit) {
            step.pattern = dup_str(lit, &step.pattern_len);
        } else if (re) {
            if (!parse_regex(re, &step))
                return sdc_fail(SDC_ERR_UNSUPPORTED,
                                "%s: Replace regex \"%s\" is not supported (only a repeated "
                                "character such as \" {2,}\")",
                                label, re);
        } else {
            return sdc_fail(SDC_ERR_FORMAT, "%s: Replace pattern is neither String nor Regex",
                            label);
        }
        step.content = dup_str(content, &step.content_len);
        if (!step.pattern || !step.content) {
            free(step.pattern);
            free(step.content);
            return sdc_fail(SDC_ERR_NO_MEMORY, "%s: Replace", label);
        }
        return add_norm(t, step, label);
    }
    if (!strcmp(type, "Strip")) {
        step.kind = SDC_NORM_STRIP;
        step.strip_left = jbool(n, "strip_left", 1);
        step.strip_right = jbool(n, "strip_right", 1);
        return add_norm(t, step, label);
    }
    if (!strcmp(type, "Prepend")) {
        const char *p = jstr(n, "prepend");
        if (!p) return sdc_fail(SDC_ERR_FORMAT, "%s: Prepend without text", label);
        step.kind = SDC_NORM_PREPEND;
        step.content = dup_str(p, &step.content_len);
        if (!step.content) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: Prepend", label);
        return add_norm(t, step, label);
    }
    return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: normalizer \"%s\" is not supported", label, type);
}

/* ---- pre-tokenizer ---- */

static sdc_status add_pre(sdc_tokenizer *t, sdc_tok_pre_step step, const char *label) {
    if (t->n_pre >= 64) return sdc_fail(SDC_ERR_FORMAT, "%s: too many pre-tokenizers", label);
    sdc_tok_pre_step *p = realloc(t->pre, (size_t)(t->n_pre + 1) * sizeof *p);
    if (!p) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: pre-tokenizer", label);
    t->pre = p;
    t->pre[t->n_pre++] = step;
    return SDC_OK;
}

static sdc_status load_pre(sdc_tokenizer *t, const cJSON *n, const char *label, int depth) {
    if (!n || cJSON_IsNull(n)) return SDC_OK;
    if (depth > 8) return sdc_fail(SDC_ERR_FORMAT, "%s: pre-tokenizer nesting too deep", label);
    const char *type = jstr(n, "type");
    if (!type) return sdc_fail(SDC_ERR_FORMAT, "%s: pre_tokenizer without type", label);
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(n, "pretokenizers");
        if (!cJSON_IsArray(list))
            return sdc_fail(SDC_ERR_FORMAT, "%s: Sequence pre_tokenizer without list", label);
        const cJSON *c;
        cJSON_ArrayForEach(c, list) {
            sdc_status st = load_pre(t, c, label, depth + 1);
            if (st) return st;
        }
        return SDC_OK;
    }
    sdc_tok_pre_step step = {0};
    if (!strcmp(type, "WhitespaceSplit")) {
        step.kind = SDC_PRE_WHITESPACE_SPLIT;
        return add_pre(t, step, label);
    }
    if (!strcmp(type, "Metaspace")) {
        step.kind = SDC_PRE_METASPACE;
        const char *rep = jstr(n, "replacement");
        if (!rep) rep = "\xE2\x96\x81";
        int32_t cp;
        size_t rlen = strlen(rep);
        if (rlen == 0 || sdc_utf8_decode(rep, rlen, &cp) != rlen || cp < 0)
            return sdc_fail(SDC_ERR_FORMAT, "%s: Metaspace replacement must be one character",
                            label);
        memcpy(step.replacement, rep, rlen);
        step.replacement_len = rlen;
        const char *scheme = jstr(n, "prepend_scheme");
        if (scheme) {
            if (!strcmp(scheme, "always"))
                step.prepend = SDC_PREPEND_ALWAYS;
            else if (!strcmp(scheme, "first"))
                step.prepend = SDC_PREPEND_FIRST;
            else if (!strcmp(scheme, "never"))
                step.prepend = SDC_PREPEND_NEVER;
            else
                return sdc_fail(SDC_ERR_FORMAT, "%s: Metaspace prepend_scheme \"%s\"", label,
                                scheme);
        } else {
            /* older files: add_prefix_space (default true) */
            step.prepend = jbool(n, "add_prefix_space", 1) ? SDC_PREPEND_ALWAYS : SDC_PREPEND_NEVER;
        }
        step.split = jbool(n, "split", 1);
        return add_pre(t, step, label);
    }
    return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: pre_tokenizer \"%s\" is not supported", label, type);
}

/* ---- post-processor ---- */

static sdc_status load_post(sdc_tokenizer *t, const cJSON *n, const char *label) {
    if (!n || cJSON_IsNull(n)) return SDC_OK;
    const char *type = jstr(n, "type");
    if (!type) return sdc_fail(SDC_ERR_FORMAT, "%s: post_processor without type", label);
    if (strcmp(type, "TemplateProcessing") != 0)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: post_processor \"%s\" is not supported", label,
                        type);
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(n, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(n, "special_tokens");
    if (!cJSON_IsArray(single))
        return sdc_fail(SDC_ERR_FORMAT, "%s: TemplateProcessing without single", label);
    int seen_a = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, single) {
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(item, "Sequence");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(item, "SpecialToken");
        if (seq) {
            if (seen_a)
                return sdc_fail(SDC_ERR_FORMAT, "%s: template has the sequence twice", label);
            seen_a = 1;
            continue;
        }
        const char *name = sp ? jstr(sp, "id") : NULL;
        if (!name) return sdc_fail(SDC_ERR_FORMAT, "%s: template item not understood", label);
        const cJSON *def = cJSON_GetObjectItemCaseSensitive(specials, name);
        const cJSON *ids = def ? cJSON_GetObjectItemCaseSensitive(def, "ids") : NULL;
        if (!cJSON_IsArray(ids))
            return sdc_fail(SDC_ERR_FORMAT, "%s: template special token \"%s\" is not defined",
                            label, name);
        const cJSON *idv;
        cJSON_ArrayForEach(idv, ids) {
            if (!cJSON_IsNumber(idv) || idv->valuedouble < 0 || idv->valuedouble >= t->n_pieces)
                return sdc_fail(SDC_ERR_FORMAT, "%s: template id of \"%s\" out of range", label,
                                name);
            int32_t id = (int32_t)idv->valuedouble;
            int *cnt = seen_a ? &t->n_suffix : &t->n_prefix;
            int32_t *dst = seen_a ? t->suffix_ids : t->prefix_ids;
            if (*cnt >= SDC_TOK_MAX_TEMPLATE)
                return sdc_fail(SDC_ERR_FORMAT, "%s: template too long", label);
            dst[(*cnt)++] = id;
        }
    }
    if (!seen_a) return sdc_fail(SDC_ERR_FORMAT, "%s: template lacks $A", label);
    return SDC_OK;
}

/* ---- model + added tokens ---- */

static sdc_status load_model(const cJSON *root, const char *label, sdc_tokenizer **out) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const char *type = jstr(model, "type");
    if (!type) return sdc_fail(SDC_ERR_FORMAT, "%s: no model.type (not a tokenizer.json?)", label);
    if (strcmp(type, "Unigram") != 0)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: model type \"%s\" (only Unigram is supported)",
                        label, type);
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsArray(vocab)) return sdc_fail(SDC_ERR_FORMAT, "%s: model.vocab missing", label);
    int n = cJSON_GetArraySize(vocab);
    if (n <= 0) return sdc_fail(SDC_ERR_FORMAT, "%s: empty vocabulary", label);
    sdc_tokenizer *t = sdc_tok_alloc(n);
    if (!t) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: vocabulary of %d", label, n);
    t->style = SDC_TOK_STYLE_HF;
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        const cJSON *p = cJSON_GetArrayItem(e, 0), *s = cJSON_GetArrayItem(e, 1);
        if (!cJSON_IsArray(e) || !cJSON_IsString(p) || !cJSON_IsNumber(s)) {
            sdc_tokenizer_free(t);
            return sdc_fail(SDC_ERR_FORMAT, "%s: vocab entry %d is not [piece, score]", label, i);
        }
        sdc_status st = sdc_tok_set_piece(t, i, p->valuestring, strlen(p->valuestring),
                                          s->valuedouble, SDC_PIECE_NORMAL);
        if (st) {
            sdc_tokenizer_free(t);
            return st;
        }
        i++;
    }
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_id");
    if (cJSON_IsNumber(unk)) {
        if (unk->valuedouble < 0 || unk->valuedouble >= n) {
            sdc_tokenizer_free(t);
            return sdc_fail(SDC_ERR_FORMAT, "%s: unk_id out of range", label);
        }
        t->unk_id = (int32_t)unk->valuedouble;
        t->types[t->unk_id] = SDC_PIECE_UNKNOWN;
    }
    t->byte_fallback = jbool(model, "byte_fallback", 0);
    *out = t;
    return SDC_OK;
}

static sdc_status load_added(sdc_tokenizer *t, const cJSON *root, const char *label) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!list || cJSON_IsNull(list)) return SDC_OK;
    if (!cJSON_IsArray(list)) return sdc_fail(SDC_ERR_FORMAT, "%s: added_tokens", label);
    const cJSON *a;
    cJSON_ArrayForEach(a, list) {
        const cJSON *idv = cJSON_GetObjectItemCaseSensitive(a, "id");
        const char *content = jstr(a, "content");
        if (!cJSON_IsNumber(idv) || !content)
            return sdc_fail(SDC_ERR_FORMAT, "%s: added token without id/content", label);
        if (idv->valuedouble < 0 || idv->valuedouble >= t->n_pieces)
            return sdc_fail(SDC_ERR_UNSUPPORTED,
                            "%s: added token \"%.40s\" id is outside the model vocabulary", label,
                            content);
        int32_t id = (int32_t)idv->valuedouble;
        if (jbool(a, "special", 0) && t->types[id] == SDC_PIECE_NORMAL)
            t->types[id] = SDC_PIECE_CONTROL;
        sdc_status st = sdc_tok_add_added(t, content, strlen(content), id, jbool(a, "lstrip", 0),
                                          jbool(a, "rstrip", 0));
        if (st) return st;
    }
    return SDC_OK;
}

sdc_status sdc_tokenizer_load_json(const char *data, size_t size, const char *label,
                                   sdc_tokenizer **out) {
    *out = NULL;
    if (!label) label = "tokenizer.json";
    cJSON *root = cJSON_ParseWithLength(data, size);
    if (!root) return sdc_fail(SDC_ERR_FORMAT, "%s: not valid JSON", label);
    sdc_tokenizer *t = NULL;
    sdc_status st = load_model(root, label, &t);
    if (!st) st = load_added(t, root, label);
    if (!st)
        st = load_normalizer(t, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), label, 0);
    if (!st) st = load_pre(t, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), label, 0);
    if (!st) st = load_post(t, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), label);
    if (!st) {
        t->eos_id = sdc_tok_find_piece(t, "</s>");
        t->pad_id = sdc_tok_find_piece(t, "<pad>");
        const cJSON *padding = cJSON_GetObjectItemCaseSensitive(root, "padding");
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(padding, "pad_id");
        if (cJSON_IsNumber(pid) && pid->valuedouble >= 0 && pid->valuedouble < t->n_pieces)
            t->pad_id = (int32_t)pid->valuedouble;
        st = sdc_tok_finish(t, label);
    }
    cJSON_Delete(root);
    if (st) {
        sdc_tokenizer_free(t);
        return st;
    }
    *out = t;
    return SDC_OK;
}
