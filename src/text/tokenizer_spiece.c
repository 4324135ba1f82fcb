/* spiece.model (sentencepiece ModelProto, protobuf wire format) and GGUF-array loaders.
 * Fields read: ModelProto.pieces = 1 {piece = 1, score = 2 (float), type = 3},
 * trainer_spec = 2 {model_type = 3, treat_whitespace_as_suffix = 24, byte_fallback = 35},
 * normalizer_spec = 3 {name = 1, precompiled_charsmap = 2, add_dummy_prefix = 3,
 * remove_extra_whitespaces = 4, escape_whitespaces = 5}. Both loaders then follow T5's
 * convention: control and unknown pieces are matched literally in the text, and `</s>` is
 * appended. */
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_internal.h"

/* ---- protobuf wire format ---- */

typedef struct pb {
    const uint8_t *p, *end;
} pb;

typedef struct pb_field {
    uint32_t num;
    int wire;
    uint64_t varint;     /* wire 0 */
    uint32_t fixed32;    /* wire 5 */
    const uint8_t *data; /* wire 2 */
    size_t len;
} pb_field;

static int pb_varint(pb *b, uint64_t *v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end) return 0;
        uint8_t c = *b->p++;
        r |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return 1;
        }
    }
    return 0;
}

/* Reads the next field; returns 1 on success, 0 at the end, -1 when malformed. */
static int pb_next(pb *b, pb_field *f) {
    if (b->p >= b->end) return 0;
    uint64_t key;
    if (!pb_varint(b, &key)) return -1;
    f->num = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    if (f->num == 0 || key >> 32) return -1;
    switch (f->wire) {
    case 0:
        return pb_varint(b, &f->varint) ? 1 : -1;
    case 1:
        if (b->end - b->p < 8) return -1;
        b->p += 8;
        return 1;
    case 2: {
        uint64_t len;
        if (!pb_varint(b, &len) || len > (uint64_t)(b->end - b->p)) return -1;
        f->data = b->p;
        f->len = (size_t)len;
        b->p += len;
        return 1;
    }
    case 5:
        if (b->end - b->p < 4) return -1;
        f->fixed32 = (uint32_t)b->p[0] | (uint32_t)b->p[1] << 8 | (uint32_t)b->p[2] << 16 |
                     (uint32_t)b->p[3] << 24;
        b->p += 4;
        return 1;
    default:
        return -1; /* groups are not used by sentencepiece */
    }
}

static float f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* T5 convention shared by spiece.model and GGUF arrays. */
static sdc_status t5_conventions(sdc_tokenizer *t, int add_eos) {
    for (int32_t i = 0; i < t->n_pieces; i++) {
        if ((t->types[i] == SDC_PIECE_CONTROL || t->types[i] == SDC_PIECE_UNKNOWN) &&
            t->piece_lens[i] > 0) {
            sdc_status st = sdc_tok_add_added(t, t->pieces[i], t->piece_lens[i], i, 0, 0);
            if (st) return st;
        }
    }
    if (add_eos && t->eos_id >= 0) t->suffix_ids[t->n_suffix++] = t->eos_id;
    return SDC_OK;
}

static sdc_status read_normalizer_spec(sdc_tokenizer *t, const pb_field *f, const char *label) {
    pb b = {f->data, f->data + f->len};
    pb_field g;
    int r;
    while ((r = pb_next(&b, &g)) == 1) {
        if (g.num == 2 && g.wire == 2 && g.len > 0) {
            sdc_charsmap_free(t->charsmap);
            t->charsmap = NULL;
            sdc_status st = sdc_charsmap_parse(g.data, g.len, label, &t->charsmap);
            if (st) return st;
        } else if (g.wire == 0 && g.num >= 3 && g.num <= 5) {
            int v = g.varint != 0;
            if (g.num == 3) t->add_dummy_prefix = v;
            if (g.num == 4) t->remove_extra_ws = v;
            if (g.num == 5) t->escape_ws = v;
        }
    }
    return r < 0 ? sdc_fail(SDC_ERR_FORMAT, "%s: malformed normalizer_spec", label) : SDC_OK;
}

static sdc_status read_trainer_spec(sdc_tokenizer *t, const pb_field *f, const char *label) {
    pb b = {f->data, f->data + f->len};
    pb_field g;
    int r;
    while ((r = pb_next(&b, &g)) == 1) {
        if (g.wire != 0) continue;
        if (g.num == 3 && g.varint != 1)
            return sdc_fail(SDC_ERR_UNSUPPORTED,
                            "%s: sentencepiece model type %llu (only UNIGRAM = 1 is supported)",
                            label, (unsigned long long)g.varint);
        if (g.num == 24 && g.varint)
            return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: treat_whitespace_as_suffix is not supported",
                            label);
        if (g.num == 35) t->byte_fallback = g.varint != 0;
    }
    return r < 0 ? sdc_fail(SDC_ERR_FORMAT, "%s: malformed trainer_spec", label) : SDC_OK;
}

sdc_status sdc_tokenizer_load_spiece(const uint8_t *data, size_t size, const char *label,
                                     sdc_tokenizer **out) {
    *out = NULL;
    if (!label) label = "spiece.model";
    pb b = {data, data + size};
    pb_field f;
    int r;
    int32_t n = 0;
    while ((r = pb_next(&b, &f)) == 1)
        if (f.num == 1 && f.wire == 2) {
            if (n == INT32_MAX) return sdc_fail(SDC_ERR_FORMAT, "%s: too many pieces", label);
            n++;
        }
    if (r < 0)
        return sdc_fail(SDC_ERR_FORMAT, "%s: not a sentencepiece model (bad protobuf)", label);
    if (n == 0)
        return sdc_fail(SDC_ERR_FORMAT, "%s: no pieces (not a sentencepiece model?)", label);
    sdc_tokenizer *t = sdc_tok_alloc(n);
    if (!t) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: %d pieces", label, n);
    t->style = SDC_TOK_STYLE_SPM;
    t->f32_scores = 1;
    sdc_status st = SDC_OK;
    int32_t i = 0;
    b = (pb){data, data + size};
    while (!st && pb_next(&b, &f) == 1) {
        if (f.num == 1 && f.wire == 2) {
            pb pb2 = {f.data, f.data + f.len};
            pb_field g;
            const uint8_t *s = NULL;
            size_t slen = 0;
            float score = 0;
            int type = SDC_PIECE_NORMAL;
            while ((r = pb_next(&pb2, &g)) == 1) {
                if (g.num == 1 && g.wire == 2) s = g.data, slen = g.len;
                if (g.num == 2 && g.wire == 5) score = f32_from_bits(g.fixed32);
                if (g.num == 3 && g.wire == 0) type = (int)(g.varint & 0xFF);
            }
            if (r < 0 || !s) {
                st = sdc_fail(SDC_ERR_FORMAT, "%s: piece %d is malformed", label, i);
                break;
            }
            if (score != score) score = -1e30f; /* a NaN score would poison the lattice */
            st = sdc_tok_set_piece(t, i, (const char *)s, slen, score, type);
            if (!st && t->types[i] == SDC_PIECE_UNKNOWN && t->unk_id < 0) t->unk_id = i;
            i++;
        } else if (f.num == 2 && f.wire == 2) {
            st = read_trainer_spec(t, &f, label);
        } else if (f.num == 3 && f.wire == 2) {
            st = read_normalizer_spec(t, &f, label);
        }
    }
    if (!st) {
        t->eos_id = sdc_tok_find_piece(t, "</s>");
        t->pad_id = sdc_tok_find_piece(t, "<pad>");
        st = sdc_tok_finish(t, label);
    }
    if (!st) st = t5_conventions(t, 1);
    if (st) {
        sdc_tokenizer_free(t);
        return st;
    }
    *out = t;
    return SDC_OK;
}

void sdc_tokenizer_arrays_init(sdc_tokenizer_arrays *a) {
    memset(a, 0, sizeof *a);
    a->add_dummy_prefix = a->remove_extra_whitespaces = a->escape_whitespaces = 1;
    a->unk_id = a->eos_id = a->pad_id = -1;
    a->add_eos = 1;
}

sdc_status sdc_tokenizer_from_arrays(const sdc_tokenizer_arrays *a, sdc_tokenizer **out) {
    *out = NULL;
    const char *label = "GGUF tokenizer";
    if (!a || a->n_pieces <= 0 || !a->pieces)
        return sdc_fail(SDC_ERR_INVALID_ARG, "%s: no pieces", label);
    sdc_tokenizer *t = sdc_tok_alloc(a->n_pieces);
    if (!t) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: %d pieces", label, a->n_pieces);
    t->style = SDC_TOK_STYLE_SPM;
    t->f32_scores = 1;
    t->add_dummy_prefix = a->add_dummy_prefix != 0;
    t->remove_extra_ws = a->remove_extra_whitespaces != 0;
    t->escape_ws = a->escape_whitespaces != 0;
    sdc_status st = SDC_OK;
    for (int32_t i = 0; i < a->n_pieces && !st; i++) {
        const char *s = a->pieces[i] ? a->pieces[i] : "";
        size_t len = a->piece_lens ? a->piece_lens[i] : strlen(s);
        float score = a->scores ? a->scores[i] : 0.0f;
        if (score != score) score = -1e30f;
        int type = a->types ? a->types[i] : SDC_PIECE_NORMAL;
        st = sdc_tok_set_piece(t, i, s, len, score, type);
    }
    if (!st && a->charsmap && a->charsmap_size)
        st = sdc_charsmap_parse(a->charsmap, a->charsmap_size, label, &t->charsmap);
    if (!st) {
        t->unk_id = a->unk_id;
        if (t->unk_id < 0)
            for (int32_t i = 0; i < t->n_pieces; i++)
                if (t->types[i] == SDC_PIECE_UNKNOWN) {
                    t->unk_id = i;
                    break;
                }
        t->eos_id = a->eos_id >= 0 ? a->eos_id : sdc_tok_find_piece(t, "</s>");
        t->pad_id = a->pad_id >= 0 ? a->pad_id : sdc_tok_find_piece(t, "<pad>");
        st = sdc_tok_finish(t, label);
    }
    if (!st) st = t5_conventions(t, a->add_eos);
    if (st) {
        sdc_tokenizer_free(t);
        return st;
    }
    *out = t;
    return SDC_OK;
}
