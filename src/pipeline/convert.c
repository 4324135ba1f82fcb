/* -M convert: every tensor of the input files (under their sd.cpp name prefixes) is
 * written to one GGUF or safetensors file, converted to the type the rules pick
 * (pipeline/quant_rules.h), one tensor at a time: the source stays mmapped and its pages
 * are dropped as we go, the output is produced by the writer's per-tensor callback, and
 * each tensor's rows are quantised by all threads. */
#include "core/clock.h"
#include "pipeline/convert.h"

#include "io/spill.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/log.h"
#include "cpu/quant_dispatch.h"
#include "io/gguf.h"
#include "core/buffer.h"
#include "io/model_loader.h"
#include "io/safetensors_writer.h"
#include "pipeline/clip_tokenizer_source.h"
#include "pipeline/imatrix.h"
#include "pipeline/quant_rules.h"
#include "pipeline/qwen2_tokenizer_source.h"
#include "pipeline/tokenizer_export.h"

/* drop source pages after this many bytes read from a file */
#define RELEASE_EVERY (64u << 20)

/* ---- row conversion ---- */

typedef struct rows_job {
    const sdc_tensor *w;
    sdc_type dst_type;
    char *dst;
    size_t dst_row;
    const float *importance;
    int64_t rows;
    sdc_status status[64];
} rows_job;

static void convert_rows(void *arg, int ith, int nth) {
    rows_job *j = arg;
    const sdc_tensor *w = j->w;
    int64_t n0 = w->ne[0];
    int64_t r0 = j->rows * ith / nth, r1 = j->rows * (ith + 1) / nth;
    const sdc_type_traits *src = sdc_type_get(w->type), *dst = sdc_type_get(j->dst_type);
    float *buf = NULL;
    if (w->type != j->dst_type && w->type != SDC_TYPE_F32) {
        buf = malloc((size_t)n0 * sizeof *buf);
        if (!buf) {
            if (ith < 64) j->status[ith] = SDC_ERR_NO_MEMORY;
            return;
        }
    }
    for (int64_t r = r0; r < r1; r++) {
        const char *s = (const char *)w->data + (size_t)r * w->nb[1];
        char *d = j->dst + (size_t)r * j->dst_row;
        if (w->type == j->dst_type) {
            memcpy(d, s, j->dst_row);
            continue;
        }
        const float *x = (const float *)s;
        if (buf) {
            src->to_float(s, buf, n0);
            x = buf;
        }
        dst->from_float(x, d, n0, j->importance);
    }
    free(buf);
}

sdc_status sdc_convert_tensor_data(const sdc_tensor *w, sdc_type dst_type, void *dst,
                                   const float *importance, sdc_threadpool *pool) {
    sdc_cpu_quant_init(); /* the SIMD quantisers (same bytes, faster) */
    const sdc_type_traits *src = sdc_type_get(w->type), *dt = sdc_type_get(dst_type);
    if (!src || !dt || (w->type != dst_type && (!src->to_float || !dt->from_float)))
        return sdc_fail(SDC_ERR_UNSUPPORTED, "tensor '%s': cannot convert %s to %s", w->name,
                        sdc_type_name(w->type), sdc_type_name(dst_type));
    if (!sdc_tensor_is_contiguous(w))
        return sdc_fail(SDC_ERR_INTERNAL, "tensor '%s' is not contiguous", w->name);
    size_t row = sdc_type_row_bytes(dst_type, w->ne[0]);
    if (!row)
        return sdc_fail(SDC_ERR_INVALID_ARG, "tensor '%s': rows of %lld do not fit %s blocks",
                        w->name, (long long)w->ne[0], sdc_type_name(dst_type));
    rows_job j = {w, dst_type, dst, row, importance, sdc_tensor_nrows(w), {0}};
    /* one thread for small tensors: not worth waking the pool */
    if (pool && sdc_tensor_nelements(w) >= (1 << 16))
        sdc_threadpool_run(pool, convert_rows, &j);
    else
        convert_rows(&j, 0, 1);
    for (int i = 0; i < 64; i++)
        if (j.status[i] != SDC_OK)
            return sdc_fail(j.status[i], "tensor '%s': out of memory", w->name);
    return SDC_OK;
}

float *sdc_convert_importance(const sdc_imatrix *im, const char *name, int64_t ne0) {
    int i = sdc_imatrix_find(im, name);
    if (i < 0) return NULL;
    if (sdc_imatrix_nval(im, i) != ne0) {
        SDC_LOGW("imatrix: '%s' has %lld values but the weight has %lld columns; not used", name,
                 (long long)sdc_imatrix_nval(im, i), (long long)ne0);
        return NULL;
    }
    float *v = malloc((size_t)ne0 * sizeof *v);
    if (v && !sdc_imatrix_values(im, i, v)) {
        free(v);
        v = NULL;
    }
    return v;
}

static bool quantised_needs_importance(sdc_type t) {
    return sdc_type_get(t)->is_quantized && t != SDC_TYPE_Q8_0;
}

/* The importances for a quantised tensor: the imatrix entry, else all ones, as sd.cpp
 * passes them. Ones are not the same as none: ggml (and we) then take the weighted
 * search (w = sqrt(sigma2 + x^2)) instead of the plain quantiser, so both tools write
 * the same bytes. *from_imatrix says which it was. NULL only when out of memory or the
 * type takes no importances. */
static float *importance_or_ones(const sdc_imatrix *im, const sdc_tensor *t, sdc_type to,
                                 bool *from_imatrix) {
    *from_imatrix = false;
    if (!quantised_needs_importance(to)) return NULL;
    float *v = im ? sdc_convert_importance(im, t->name, t->ne[0]) : NULL;
    if (v) {
        *from_imatrix = true;
        return v;
    }
    v = malloc((size_t)(t->ne[0] > 0 ? t->ne[0] : 1) * sizeof *v);
    for (int64_t i = 0; v && i < t->ne[0]; i++) v[i] = 1.0f;
    return v;
}

/* ---- conversion on load ---- */

static bool has_prefix(const sdc_loader *l, const char *prefix) {
    size_t n = strlen(prefix);
    for (int i = 0; i < sdc_loader_tensor_count(l); i++)
        if (!strncmp(sdc_loader_tensor_at(l, i)->name, prefix, n)) return true;
    return false;
}

/* SD 1.x / 2.x / XL weights (LDM UNet, LDM VAE, CLIP / OpenCLIP conditioners): these are
 * converted as sd.cpp converts them (its type rule, its dropped tensors, CLIP tokenizer
 * embedded). Other models (MiniT2I, T5) keep our rules (pipeline/quant_rules.h). */
static bool is_sd_family(const sdc_loader *l) {
    static const char *const markers[] = {"model.diffusion_model.input_blocks.",
                                          "first_stage_model.",
                                          "cond_stage_model.",
                                          "conditioner.embedders.",
                                          "text_encoders.clip_l.",
                                          "text_encoders.clip_g.",
                                          "vae.decoder.",
                                          "vae.encoder."};
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++)
        if (has_prefix(l, markers[i])) return true;
    return false;
}

static int tensor_dims(const sdc_tensor *t);

/* The type t is converted to: sd.cpp's rule for the SD families, else ours. */
static sdc_type pick_type(bool sd_family, const sdc_quant_rules *rules, const sdc_tensor *t,
                          int n_dims, int type) {
    return sd_family ? sdc_quant_pick_type_sdcpp(rules, t->name, t->ne, t->type, type)
                     : sdc_quant_pick_type(rules, t->name, n_dims, t->ne, t->type, type);
}

struct sdc_converted_weights {
    sdc_buffer **data; /* per converted tensor: its host weights buffer, or for a spilled one
                        * a host-mapped buffer describing its part of the spill file */
    int n;
    sdc_spill *spill; /* conversions of "disk" modules, NULL if none */
};

void sdc_converted_weights_free(sdc_converted_weights *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) sdc_buffer_free(c->data[i]);
    free(c->data);
    sdc_spill_free(c->spill);
    free(c);
}

bool sdc_converted_weights_release(sdc_converted_weights *c, const sdc_tensor *t) {
    if (!c || !sdc_spill_contains(c->spill, t->data)) return false;
    sdc_spill_release(c->spill, t->data, sdc_tensor_nbytes(t));
    return true;
}

static size_t converted_bytes(const sdc_tensor *t, sdc_type to) {
    return sdc_type_row_bytes(to, t->ne[0]) * (size_t)sdc_tensor_nrows(t);
}

static int tensor_dims(const sdc_tensor *t) {
    int nd = 1;
    for (int d = 1; d < SDC_MAX_DIMS; d++)
        if (t->ne[d] != 1) nd = d + 1; /* an empty dim counts */
    return nd;
}

/* The spill file for every conversion that `to_spill` sends to disk. */
static sdc_status make_spill(sdc_loader *l, bool sd, const sdc_quant_rules *rules, int type,
                             const sdc_convert_spill *sp, sdc_spill **out) {
    *out = NULL;
    if (!sp || !sp->to_spill) return SDC_OK;
    size_t total = 0;
    for (int i = 0; i < sdc_loader_tensor_count(l); i++) {
        sdc_tensor *t = sdc_loader_tensor_at(l, i);
        sdc_type to = pick_type(sd, rules, t, tensor_dims(t), type);
        if (to != t->type && sp->to_spill(t->name, sp->user))
            total += (converted_bytes(t, to) + 63) & ~(size_t)63;
    }
    return total ? sdc_spill_create(total, out) : SDC_OK;
}

sdc_status sdc_convert_loaded_weights(sdc_loader *l, int type, const char *rules_spec,
                                      const sdc_imatrix *im, int n_threads,
                                      const sdc_convert_spill *spill,
                                      sdc_converted_weights **owned) {
    *owned = NULL;
    if (type < 0 && (!rules_spec || !*rules_spec)) return SDC_OK;
    if (type >= 0 && !sdc_quant_type_is_target(type))
        return sdc_fail(SDC_ERR_INVALID_ARG, "--type: %s is not a weight type",
                        sdc_type_name(type));
    sdc_quant_rules *rules;
    sdc_status s = sdc_quant_rules_parse(rules_spec, &rules);
    if (s != SDC_OK) return s;
    int n = sdc_loader_tensor_count(l);
    sdc_converted_weights *c = calloc(1, sizeof *c);
    if (c) c->data = calloc((size_t)n + 1, sizeof *c->data);
    sdc_threadpool *pool = sdc_threadpool_create(n_threads);
    if (!c || !c->data || !pool) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "--type: out of memory");
        goto done;
    }
    /* the SD families take sd.cpp's rule here too: --type on load gives the types (and the
     * image) of a file converted with the same --type */
    bool sd = is_sd_family(l);
    if ((s = make_spill(l, sd, rules, type, spill, &c->spill)) != SDC_OK) goto done;
    int converted = 0, with_imatrix = 0, spilled = 0;
    for (int i = 0; i < n && s == SDC_OK; i++) {
        sdc_tensor *t = sdc_loader_tensor_at(l, i);
        sdc_type to = pick_type(sd, rules, t, tensor_dims(t), type);
        if (to == t->type) continue;
        size_t bytes = converted_bytes(t, to);
        bool to_disk = c->spill && spill->to_spill(t->name, spill->user);
        sdc_buffer *buf = NULL;
        void *d = NULL;
        if (to_disk) {
            /* the spill owns its file mapping: the buffer only describes this tensor's part */
            d = sdc_spill_alloc(c->spill, bytes);
            if (d && sdc_buffer_wrap(NULL, d, bytes, SDC_BUFFER_HOST_MAPPED, &buf) != SDC_OK)
                d = NULL;
        } else if (sdc_buffer_alloc(NULL, bytes, SDC_BUFFER_WEIGHTS, &buf) == SDC_OK) {
            d = buf->base;
        }
        if (!d) {
            s = sdc_fail(SDC_ERR_NO_MEMORY, "--type: out of memory converting '%s'", t->name);
            break;
        }
        bool from_im;
        float *imp = importance_or_ones(im, t, to, &from_im);
        with_imatrix += from_im;
        s = quantised_needs_importance(to) && !imp
                ? sdc_fail(SDC_ERR_NO_MEMORY, "--type: out of memory converting '%s'", t->name)
                : sdc_convert_tensor_data(t, to, d, imp, pool);
        free(imp);
        if (s != SDC_OK) {
            sdc_buffer_free(buf); /* a spill wrapper: only the description */
            break;
        }
        c->data[c->n++] = buf;
        if (to_disk) {
            spilled++;
            sdc_spill_release(c->spill, d, bytes); /* written: not needed until its phase */
        }
        sdc_loader_release_tensor_pages(l, t); /* the source is read: drop its pages */
        t->type = to;
        t->data = d;
        t->buffer = buf;
        sdc_tensor_set_contiguous_strides(t);
        converted++;
    }
    if (s == SDC_OK)
        SDC_LOGI("converted %d of %d weights on load (%d with importances, %d kept on disk)",
                 converted, n, with_imatrix, spilled);
done:
    sdc_threadpool_free(pool);
    sdc_quant_rules_free(rules);
    if (s != SDC_OK) {
        sdc_converted_weights_free(c);
        return s;
    }
    *owned = c;
    return SDC_OK;
}

/* ---- -M convert ---- */

void sdc_convert_params_init(sdc_convert_params *p) {
    memset(p, 0, sizeof *p);
    p->type = -1;
    p->n_threads = -1;
}

typedef struct out_tensor {
    sdc_tensor *src;
    sdc_type type;
    int n_dims;
    const char *source_dtype;
    int file;
} out_tensor;

typedef struct convert_state {
    sdc_loader *l;
    out_tensor *t;
    int n;
    const sdc_imatrix *im;
    sdc_threadpool *pool;
    size_t since_release[16];
    int next; /* index of the tensor the writer asks for next */
    int with_imatrix;
    bool sd_family; /* sd.cpp's rules (is_sd_family) */
    double t0;
} convert_state;

static sdc_status produce(convert_state *cs, int i, void *dst, size_t nbytes) {
    out_tensor *o = &cs->t[i];
    size_t want = sdc_type_row_bytes(o->type, o->src->ne[0]) * (size_t)sdc_tensor_nrows(o->src);
    if (want != nbytes)
        return sdc_fail(SDC_ERR_INTERNAL, "tensor '%s': %zu bytes expected, writer has %zu",
                        o->src->name, want, nbytes);
    bool from_im;
    float *imp = importance_or_ones(cs->im, o->src, o->type, &from_im);
    cs->with_imatrix += from_im;
    sdc_status s =
        quantised_needs_importance(o->type) && !imp
            ? sdc_fail(SDC_ERR_NO_MEMORY, "convert: out of memory for '%s'", o->src->name)
            : sdc_convert_tensor_data(o->src, o->type, dst, imp, cs->pool);
    free(imp);
    if (o->file >= 0 && o->file < 16) {
        cs->since_release[o->file] += sdc_tensor_nbytes(o->src);
        if (cs->since_release[o->file] >= RELEASE_EVERY || i == cs->n - 1) {
            sdc_loader_release_pages(cs->l, o->file);
            cs->since_release[o->file] = 0;
        }
    }
    if (i % 64 == 63 || i == cs->n - 1)
        SDC_LOGI("convert: %d/%d tensors, %.1fs", i + 1, cs->n, sdc_now_seconds() - cs->t0);
    return s;
}

static sdc_status gguf_fill(void *user, const char *name, void *dst, size_t nbytes) {
    convert_state *cs = user;
    int i = cs->next++;
    if (i >= cs->n || strcmp(name, cs->t[i].src->name))
        return sdc_fail(SDC_ERR_INTERNAL, "convert: writer asked for '%s' out of order", name);
    return produce(cs, i, dst, nbytes);
}

static sdc_status st_fill(void *user, int index, void *dst, size_t nbytes) {
    convert_state *cs = user;
    if (index < 0 || index >= cs->n) return sdc_fail(SDC_ERR_INTERNAL, "convert: bad index");
    return produce(cs, index, dst, nbytes);
}

/* t's name as its file stores it (without the file's prefix). */
static const char *bare_name(const sdc_loader *l, const sdc_tensor *t) {
    int f = sdc_loader_tensor_file(l, t);
    const char *prefix = f >= 0 ? sdc_loader_file_prefix(l, f) : NULL;
    size_t plen = prefix ? strlen(prefix) : 0;
    return plen && !strncmp(t->name, prefix, plen) ? t->name + plen : t->name;
}

/* Embeds the CLIP tokenizer(s) the SD family's conditioner reads (which 0: SD1/SD2's encoder
 * and SDXL's clip_l, 1: SDXL's clip_g), found as generation finds them. None found: a
 * warning, the GGUF then needs --clip-tokenizer; an explicit path that fails: the error. */
static sdc_status export_clip_tokenizers(const sdc_loader *l, const sdc_convert_params *p,
                                         sdc_gguf_writer *w) {
    static const char *const enc0[] = {"cond_stage_model.", "conditioner.embedders.0.",
                                       "text_encoders.clip_l."};
    static const char *const enc1[] = {"conditioner.embedders.1.", "text_encoders.clip_g."};
    bool want[2] = {false, false};
    for (int i = 0; i < 3; i++) want[0] = want[0] || has_prefix(l, enc0[i]);
    for (int i = 0; i < 2; i++) want[1] = want[1] || has_prefix(l, enc1[i]);
    bool explicit_path = p->clip_tokenizer_path && *p->clip_tokenizer_path;
    for (int which = 0; which < 2; which++) {
        if (!want[which]) continue;
        const char *near = which == 0 && p->clip_l_path   ? p->clip_l_path
                           : which == 1 && p->clip_g_path ? p->clip_g_path
                           : p->model_path                ? p->model_path
                                                          : p->diffusion_model_path;
        sdc_clip_tokenizer *tok = NULL;
        sdc_status s = sdc_load_clip_tokenizer(l, near, p->clip_tokenizer_path, which, &tok);
        if (s != SDC_OK) {
            if (explicit_path) return s;
            SDC_LOGW("convert: no CLIP tokenizer found (%s); the GGUF will need --clip-tokenizer",
                     sdc_last_error());
            sdc_clear_error();
            continue;
        }
        s = sdc_clip_tokenizer_write_gguf(tok, which, w);
        sdc_clip_tokenizer_free(tok);
        if (s != SDC_OK) return s;
        SDC_LOGI("convert: CLIP tokenizer embedded (%s)", which ? "clip_g" : "clip_l");
    }
    return SDC_OK;
}

/* The tensor as its file declares it: dimension count and dtype spelling. */
static void source_info(const sdc_loader *l, const sdc_tensor *t, out_tensor *o) {
    int f = sdc_loader_tensor_file(l, t);
    o->file = f;
    o->n_dims = 1;
    for (int d = 1; d < SDC_MAX_DIMS; d++)
        if (t->ne[d] != 1) o->n_dims = d + 1;
    o->source_dtype = sdc_type_name(t->type);
    if (f < 0) return;
    const char *prefix = sdc_loader_file_prefix(l, f);
    size_t plen = prefix ? strlen(prefix) : 0;
    const char *bare = strncmp(t->name, prefix ? prefix : "", plen) ? t->name : t->name + plen;
    const sdc_gguf_file *g = sdc_loader_file_gguf(l, f);
    const sdc_st_file *st = sdc_loader_file_st(l, f);
    if (g) {
        const sdc_gguf_tensor *gt = sdc_gguf_find_tensor(g, bare);
        if (gt) o->n_dims = gt->n_dims, o->source_dtype = sdc_type_name(gt->type);
    } else if (st) {
        const sdc_st_tensor *s = sdc_st_find(st, bare);
        if (s && s->ndim <= SDC_MAX_DIMS) {
            o->n_dims = s->ndim > 0 ? s->ndim : 1;
            o->source_dtype = sdc_st_dtype_name(s->dtype);
        }
    }
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcasecmp(s + a - b, suffix);
}

static int st_dtype_of(sdc_type t) {
    switch (t) {
    case SDC_TYPE_F32:
        return SDC_ST_F32;
    case SDC_TYPE_F16:
        return SDC_ST_F16;
    case SDC_TYPE_BF16:
        return SDC_ST_BF16;
    case SDC_TYPE_I32:
        return SDC_ST_I32;
    default:
        return -1;
    }
}

static sdc_status write_safetensors(convert_state *cs, const sdc_convert_params *p,
                                    const char *path) {
    sdc_st_writer *w;
    sdc_status s = sdc_st_writer_create(&w);
    if (s != SDC_OK) return s;
    for (int i = 0; i < cs->n && s == SDC_OK; i++) {
        out_tensor *o = &cs->t[i];
        int dt = st_dtype_of(o->type);
        if (dt < 0) {
            s = sdc_fail(SDC_ERR_INVALID_ARG,
                         "%s: tensor '%s' would be %s, which safetensors cannot hold: write a "
                         ".gguf file for quantised types",
                         p->output_path, o->src->name, sdc_type_name(o->type));
            break;
        }
        int64_t shape[SDC_MAX_DIMS];
        for (int d = 0; d < o->n_dims; d++) shape[d] = o->src->ne[o->n_dims - 1 - d];
        s = sdc_st_writer_add(w, o->src->name, (sdc_st_dtype)dt, o->n_dims, shape, NULL);
    }
    if (s == SDC_OK) s = sdc_st_writer_set_metadata(w, "format", "pt");
    if (s == SDC_OK) s = sdc_st_writer_write(w, path, st_fill, cs);
    sdc_st_writer_free(w);
    return s;
}

/* A Qwen2.5-VL language model among the inputs (HF / ComfyUI names, or llama.cpp's). */
static bool has_qwen_llm(const sdc_loader *l) {
    static const char *const names[] = {"text_encoders.llm.model.embed_tokens.weight",
                                        "text_encoders.llm.token_embd.weight",
                                        "model.embed_tokens.weight", "token_embd.weight"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (sdc_loader_find(l, names[i])) return true;
    return false;
}

/* Embeds the Qwen2 tokenizer with a Qwen2.5-VL LLM, in llama.cpp's keys (so that the GGUF
 * needs no tokenizer files). Not found: a warning; an explicit path that fails: the error. */
static sdc_status export_qwen2_tokenizer(const sdc_loader *l, const sdc_convert_params *p,
                                         sdc_gguf_writer *w) {
    if (!has_qwen_llm(l)) return SDC_OK;
    sdc_qwen2_tokenizer *tok = NULL;
    sdc_status s = sdc_load_qwen2_tokenizer(l, p->llm_path ? p->llm_path : p->model_path,
                                            p->llm_tokenizer_path, &tok);
    if (s != SDC_OK) {
        if (p->llm_tokenizer_path && *p->llm_tokenizer_path) return s;
        SDC_LOGW("convert: no Qwen2 tokenizer found (%s); the GGUF will need --llm-tokenizer",
                 sdc_last_error());
        return SDC_OK;
    }
    s = sdc_qwen2_tokenizer_write_gguf(tok, w);
    if (s == SDC_OK)
        SDC_LOGI("convert: Qwen2 tokenizer embedded (%d tokens)",
                 sdc_qwen2_tokenizer_vocab_size(tok));
    sdc_qwen2_tokenizer_free(tok);
    return s;
}

static sdc_status write_gguf(convert_state *cs, const sdc_convert_params *p,
                             const char *const *files, int n_files, const char *path) {
    sdc_gguf_writer *w;
    sdc_status s = sdc_gguf_writer_create(&w);
    if (s != SDC_OK) return s;
    const char **dtypes = malloc(sizeof *dtypes * (size_t)(cs->n + 1));
    if (!dtypes) s = sdc_fail(SDC_ERR_NO_MEMORY, "convert: out of memory");
    for (int i = 0; s == SDC_OK && i < cs->n; i++) dtypes[i] = cs->t[i].source_dtype;
    /* provenance: which files, which stored types, what was asked */
    if (s == SDC_OK) s = sdc_gguf_set_u32(w, "general.quantization_version", 2);
    char tool[64];
    snprintf(tool, sizeof tool, "sdc %s", sdc_version());
    if (s == SDC_OK) s = sdc_gguf_set_str(w, "sdc.convert.tool", tool);
    if (s == SDC_OK)
        s = sdc_gguf_set_str(w, "sdc.convert.type", p->type >= 0 ? sdc_type_name(p->type) : "");
    if (s == SDC_OK && p->tensor_type_rules)
        s = sdc_gguf_set_str(w, "sdc.convert.tensor_type_rules", p->tensor_type_rules);
    if (s == SDC_OK) s = sdc_gguf_set_arr_str(w, "sdc.source.files", files, (uint64_t)n_files);
    if (s == SDC_OK) s = sdc_gguf_set_arr_str(w, "sdc.source.types", dtypes, (uint64_t)cs->n);
    if (s == SDC_OK && p->imatrix)
        s = sdc_gguf_set_u32(w, "sdc.imatrix.entries",
                             (uint32_t)sdc_imatrix_entry_count(p->imatrix));
    if (s == SDC_OK)
        s = sdc_export_t5_tokenizer(cs->l, p->t5xxl_path ? p->t5xxl_path : p->model_path,
                                    p->t5_tokenizer_path, w);
    if (s == SDC_OK && cs->sd_family) s = export_clip_tokenizers(cs->l, p, w);
    if (s == SDC_OK) s = export_qwen2_tokenizer(cs->l, p, w);
    for (int i = 0; i < cs->n && s == SDC_OK; i++) {
        out_tensor *o = &cs->t[i];
        s = sdc_gguf_add_tensor_fn(w, o->src->name, o->type, o->n_dims, o->src->ne, gguf_fill, cs);
    }
    if (s == SDC_OK) s = sdc_gguf_write_file(w, path);
    free(dtypes);
    sdc_gguf_writer_free(w);
    return s;
}

sdc_status sdc_convert(const sdc_convert_params *p) {
    if (!p || !p->output_path || !*p->output_path)
        return sdc_fail(SDC_ERR_INVALID_ARG, "convert: no output path (-o)");
    if (p->type >= 0 && !sdc_quant_type_is_target(p->type))
        return sdc_fail(SDC_ERR_INVALID_ARG, "convert: --type %s is not supported",
                        sdc_type_name(p->type));
    static const char *const prefixes[] = {"",
                                           "model.diffusion_model.",
                                           "text_encoders.t5xxl.transformer.",
                                           "text_encoders.clip_l.transformer.",
                                           "text_encoders.clip_g.transformer.",
                                           "vae.",
                                           "text_encoders.llm."};
    const char *paths[] = {p->model_path,  p->diffusion_model_path, p->t5xxl_path,
                           p->clip_l_path, p->clip_g_path,          p->vae_path,
                           p->llm_path};
    const char *files[7];
    char file_desc[7][600];
    int n_files = 0;
    sdc_loader *l = NULL;
    sdc_quant_rules *rules = NULL;
    convert_state cs = {0};
    sdc_status s = sdc_loader_create(&l);
    for (int i = 0; i < 7 && s == SDC_OK; i++) {
        if (!paths[i] || !*paths[i]) continue;
        s = sdc_loader_add_file(l, paths[i], prefixes[i]);
        snprintf(file_desc[n_files], sizeof file_desc[0], "%s%s%s", prefixes[i],
                 *prefixes[i] ? "=" : "", paths[i]);
        files[n_files] = file_desc[n_files];
        n_files++;
    }
    if (s == SDC_OK && n_files == 0)
        s = sdc_fail(SDC_ERR_INVALID_ARG,
                     "convert: no input: pass -m, --diffusion-model, --t5xxl, --clip_l, --clip_g, "
                     "--vae or --llm");
    if (s == SDC_OK && p->convert_name)
        SDC_LOGI("--convert-name: names are kept as stored (MiniT2I and T5 already carry "
                 "sd.cpp's; SD checkpoints' LDM names, diffusers folders mapped to them, are ones "
                 "sd.cpp maps at load)");
    if (s == SDC_OK) s = sdc_quant_rules_parse(p->tensor_type_rules, &rules);
    if (s != SDC_OK) goto done;
    cs.l = l;
    cs.im = p->imatrix;
    cs.n = sdc_loader_tensor_count(l);
    cs.t = calloc((size_t)cs.n + 1, sizeof *cs.t);
    cs.pool = sdc_threadpool_create(p->n_threads);
    cs.t0 = sdc_now_seconds();
    if (!cs.t || !cs.pool) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "convert: out of memory");
        goto done;
    }
    cs.sd_family = is_sd_family(l);
    int changed = 0, kept = 0, total = cs.n;
    for (int i = 0; i < total; i++) {
        out_tensor *o = &cs.t[kept];
        o->src = sdc_loader_tensor_at(l, i);
        if (cs.sd_family && sdc_quant_sdcpp_unused(bare_name(l, o->src))) continue;
        source_info(l, o->src, o);
        o->type = pick_type(cs.sd_family, rules, o->src, o->n_dims, p->type);
        changed += o->type != o->src->type;
        kept++;
    }
    cs.n = kept;
    SDC_LOGI("convert: %d tensors from %d file(s), %d converted, %d dropped as sd.cpp does%s", kept,
             n_files, changed, total - kept,
             cs.sd_family ? " (SD family: sd.cpp's type rule)" : "");
    /* write beside the target and rename at the end: a failed run leaves no partial file,
     * and an input given as output is never truncated while it is mapped */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.part", p->output_path);
    if (ends_with(p->output_path, ".safetensors"))
        s = write_safetensors(&cs, p, tmp);
    else
        s = write_gguf(&cs, p, files, n_files, tmp);
    if (s == SDC_OK && rename(tmp, p->output_path) != 0)
        s = sdc_fail(SDC_ERR_IO, "%s: cannot rename %s: %s", p->output_path, tmp, strerror(errno));
    if (s != SDC_OK) remove(tmp);
    if (s == SDC_OK)
        SDC_LOGI("convert: wrote %s in %.2fs (%d tensors quantised with importances)",
                 p->output_path, sdc_now_seconds() - cs.t0, cs.with_imatrix);
done:
    sdc_threadpool_free(cs.pool);
    free(cs.t);
    sdc_quant_rules_free(rules);
    sdc_loader_free(l);
    return s;
}
