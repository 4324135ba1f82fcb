#include "pipeline/quant_rules.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_TENSOR_ELEMENTS 4096

typedef struct rule {
    regex_t re;
    char *pattern;
    sdc_type type;
} rule;

struct sdc_quant_rules {
    rule *r;
    int n;
};

bool sdc_quant_type_is_target(int type) {
    switch (type) {
    case SDC_TYPE_F32:
    case SDC_TYPE_F16:
    case SDC_TYPE_BF16:
    case SDC_TYPE_Q4_0:
    case SDC_TYPE_Q4_1:
    case SDC_TYPE_Q5_0:
    case SDC_TYPE_Q5_1:
    case SDC_TYPE_Q8_0:
    case SDC_TYPE_Q2_K:
    case SDC_TYPE_Q3_K:
    case SDC_TYPE_Q4_K:
    case SDC_TYPE_Q5_K:
    case SDC_TYPE_Q6_K:
        return true;
    default:
        return false;
    }
}

void sdc_quant_rules_free(sdc_quant_rules *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        regfree(&r->r[i].re);
        free(r->r[i].pattern);
    }
    free(r->r);
    free(r);
}

int sdc_quant_rules_count(const sdc_quant_rules *r) {
    return r ? r->n : 0;
}

sdc_status sdc_quant_rules_parse(const char *spec, sdc_quant_rules **out) {
    *out = NULL;
    sdc_quant_rules *r = calloc(1, sizeof *r);
    if (!r) return sdc_fail(SDC_ERR_NO_MEMORY, "tensor type rules: out of memory");
    const char *p = spec ? spec : "";
    sdc_status s = SDC_OK;
    while (*p && s == SDC_OK) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len) {
            char *item = malloc(len + 1);
            rule *grown = realloc(r->r, sizeof *grown * (size_t)(r->n + 1));
            if (!item || !grown) {
                free(item);
                if (grown) r->r = grown;
                s = sdc_fail(SDC_ERR_NO_MEMORY, "tensor type rules: out of memory");
                break;
            }
            r->r = grown;
            memcpy(item, p, len);
            item[len] = '\0';
            /* the type follows the last '=' so patterns may contain '=' */
            char *eq = strrchr(item, '=');
            int type = eq ? sdc_type_from_name(eq + 1) : -1;
            if (!eq || eq == item) {
                s = sdc_fail(SDC_ERR_INVALID_ARG,
                             "--tensor-type-rules: '%s' is not of the form regex=type", item);
            } else if (!sdc_quant_type_is_target(type)) {
                s = sdc_fail(SDC_ERR_INVALID_ARG,
                             "--tensor-type-rules: '%s': unknown or unsupported type '%s'", item,
                             eq + 1);
            } else {
                *eq = '\0';
                rule *ru = &r->r[r->n];
                int rc = regcomp(&ru->re, item, REG_EXTENDED | REG_NOSUB);
                if (rc != 0) {
                    char msg[128];
                    regerror(rc, &ru->re, msg, sizeof msg);
                    s = sdc_fail(SDC_ERR_INVALID_ARG, "--tensor-type-rules: bad regex '%s': %s",
                                 item, msg);
                } else {
                    ru->pattern = item;
                    ru->type = (sdc_type)type;
                    r->n++;
                    item = NULL;
                }
            }
            free(item);
        }
        p += len;
        if (*p == ',') p++;
    }
    if (s != SDC_OK) {
        sdc_quant_rules_free(r);
        return s;
    }
    *out = r;
    return SDC_OK;
}

/* `part` appears in name as whole dot-separated components. */
static bool has_component(const char *name, const char *part) {
    size_t n = strlen(part);
    for (const char *p = strstr(name, part); p; p = strstr(p + 1, part)) {
        bool start = p == name || p[-1] == '.';
        bool end = p[n] == '\0' || p[n] == '.';
        if (start && end) return true;
    }
    return false;
}

/* Inputs and outputs of the network: small, and errors there reach every token. */
static bool is_io_embedding(const char *name) {
    static const char *const parts[] = {"img_embedder", "t_embedder", "pooled_embedder",
                                        "final_layer", "pos_embed"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (has_component(name, parts[i])) return true;
    return false;
}

static sdc_type k_fallback(sdc_type t) {
    switch (t) {
    case SDC_TYPE_Q2_K:
    case SDC_TYPE_Q3_K:
        return SDC_TYPE_Q4_0;
    case SDC_TYPE_Q4_K:
        return SDC_TYPE_Q5_0;
    case SDC_TYPE_Q5_K:
        return SDC_TYPE_Q5_1;
    case SDC_TYPE_Q6_K:
        return SDC_TYPE_Q8_0;
    default:
        return t;
    }
}

static bool is_float_type(sdc_type t) {
    const sdc_type_traits *tr = sdc_type_get(t);
    return tr && tr->to_float != NULL;
}

sdc_type sdc_quant_pick_type(const sdc_quant_rules *rules, const char *name, int n_dims,
                             const int64_t *ne, sdc_type stored, int wanted) {
    int target = wanted;
    bool explicit_rule = false;
    for (int i = 0; rules && i < rules->n; i++) {
        if (regexec(&rules->r[i].re, name, 0, NULL, 0) == 0) {
            target = rules->r[i].type;
            explicit_rule = true;
            break;
        }
    }
    if (target < 0 || (sdc_type)target == stored || !is_float_type(stored)) return stored;
    int64_t rows = 1, numel = ne[0];
    for (int i = 1; i < n_dims; i++) rows *= ne[i], numel *= ne[i];
    if (rows <= 1) return stored;
    if (!explicit_rule && (numel < SMALL_TENSOR_ELEMENTS || is_io_embedding(name))) return stored;
    sdc_type t = (sdc_type)target;
    const sdc_type_traits *tr = sdc_type_get(t);
    if (!tr || !tr->from_float) return stored;
    if (ne[0] % tr->block_size != 0) {
        t = k_fallback(t);
        if (ne[0] % sdc_type_get(t)->block_size != 0) return stored;
    }
    return t;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !memcmp(s + a - b, suffix, b);
}

sdc_type sdc_quant_pick_type_sdcpp(const sdc_quant_rules *rules, const char *name,
                                   const int64_t *ne, sdc_type stored, int wanted) {
    int target = wanted;
    for (int i = 0; rules && i < rules->n; i++) {
        if (regexec(&rules->r[i].re, name, 0, NULL, 0) == 0) {
            target = rules->r[i].type;
            break;
        }
    }
    if (target < 0 || (sdc_type)target == stored || !is_float_type(stored)) return stored;
    if (!ne[0] || !ne[1] || !ne[2] || !ne[3]) return stored; /* empty: nothing to convert */
    const sdc_type_traits *tr = sdc_type_get((sdc_type)target);
    if (!tr || !tr->from_float) return stored;
    if (tr->is_quantized && ne[0] % tr->block_size != 0) return stored;
    static const char *const suffixes[] = {".bias", ".scale", ".weight_scale"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
        if (ends_with(name, suffixes[i])) return stored;
    /* sd.cpp's markers of the Flux, MMDiT and UNet input/output layers, and embeddings */
    static const char *const parts[] = {
        "img_in.",           "txt_in.",     "time_in.",    "vector_in.",  "guidance_in.",
        "final_layer.",      "x_embedder.", "t_embedder.", "y_embedder.", "pos_embed",
        "context_embedder.", "time_embed.", "label_emb.",  "embedding"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(name, parts[i])) return stored;
    return (sdc_type)target;
}

bool sdc_quant_sdcpp_unused(const char *name) {
    static const char *const unused[] = {
        "betas",
        "alphas_cumprod_prev",
        "sqrt_alphas_cumprod",
        "sqrt_one_minus_alphas_cumprod",
        "log_one_minus_alphas_cumprod",
        "sqrt_recip_alphas_cumprod",
        "sqrt_recipm1_alphas_cumprod",
        "posterior_variance",
        "posterior_log_variance_clipped",
        "posterior_mean_coef1",
        "posterior_mean_coef2",
        "cond_stage_model.transformer.text_model.embeddings.position_ids",
        "cond_stage_model.1.model.text_model.embeddings.position_ids",
        "cond_stage_model.transformer.vision_model.embeddings.position_ids",
        "cond_stage_model.model.logit_scale",
        "conditioner.embedders.0.transformer.text_model.embeddings.position_ids",
        "conditioner.embedders.0.model.logit_scale",
        "conditioner.embedders.1.model.logit_scale",
        "model.diffusion_model.time_embedding.cond_proj.weight",
        "unet.time_embedding.cond_proj.weight",
        "model_ema.decay",
        "model_ema.num_updates",
        "model_ema.diffusion_model",
        "embedding_manager",
        "denoiser.sigmas",
        "text_encoders.t5xxl.transformer.encoder.embed_tokens.weight",
        "ztsnr",
        "edm_vpred.sigma_min",
        "text_encoders.llm.output.weight",
        "text_encoders.llm.lm_head.",
    };
    for (size_t i = 0; i < sizeof unused / sizeof unused[0]; i++)
        if (!strncmp(name, unused[i], strlen(unused[i]))) return true;
    return false;
}
