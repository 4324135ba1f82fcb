/* LoRA key layouts: see lora_names.h. Every lookup works on "underscore keys": a name with
 * its trailing weight suffix dropped and every '.' turned into '_', which makes kohya's
 * lora_unet_input_blocks_1_1_proj_in and LDM's input_blocks.1.1.proj_in.weight meet. */
#include "models/lora_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/model_loader.h"
#include "io/name_index.h"

struct sdc_lora_targets {
    sdc_name_index index; /* underscore key -> loader index */
    char *pool;           /* the keys */
};

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static bool starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- parts -------------------------------------------------------------------------- */

sdc_lora_part sdc_lora_split_name(const char *name, char *module, size_t n, const char **what) {
    static const struct {
        const char *suffix;
        sdc_lora_part part;
    } parts[] = {
        {".lora_down.weight", SDC_LORA_PART_DOWN},
        {".lora_up.weight", SDC_LORA_PART_UP},
        {".lora_mid.weight", SDC_LORA_PART_MID},
        {".lora_A.default.weight", SDC_LORA_PART_DOWN},
        {".lora_B.default.weight", SDC_LORA_PART_UP},
        {".lora_A.weight", SDC_LORA_PART_DOWN},
        {".lora_B.weight", SDC_LORA_PART_UP},
        {".lora_linear_layer.down.weight", SDC_LORA_PART_DOWN}, /* diffusers attn processors */
        {".lora_linear_layer.up.weight", SDC_LORA_PART_UP},
        {"_lora.down.weight", SDC_LORA_PART_DOWN},
        {"_lora.up.weight", SDC_LORA_PART_UP},
        {".lora.down.weight", SDC_LORA_PART_DOWN},
        {".lora.up.weight", SDC_LORA_PART_UP},
        {".alpha", SDC_LORA_PART_ALPHA},
        {".scale", SDC_LORA_PART_SCALE},
    };
    static const struct {
        const char *token;
        const char *what;
    } unsupported[] = {
        {".hada_", "LoHa (LyCORIS)"},
        {".lokr_", "LoKr (LyCORIS)"},
        {".dora_scale", "DoRA"},
        {".diff_b", "a full bias difference"},
        {".diff", "a full weight difference"},
        {".oft_", "OFT"},
        {".lora_up.bias", "a LoRA bias"},
        {".lora_B.bias", "a LoRA bias"},
    };
    *what = NULL;
    module[0] = 0;
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
        if (strstr(name, unsupported[i].token)) {
            *what = unsupported[i].what;
            return SDC_LORA_PART_UNSUPPORTED;
        }
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        if (!ends_with(name, parts[i].suffix)) continue;
        size_t len = strlen(name) - strlen(parts[i].suffix);
        if (len == 0 || len >= n) return SDC_LORA_PART_UNKNOWN;
        memcpy(module, name, len);
        module[len] = 0;
        return parts[i].part;
    }
    return SDC_LORA_PART_UNKNOWN;
}

/* ---- the model's weights by underscore key -------------------------------------------- */

/* dst = underscore key of src (n bytes); false if it does not fit. */
static bool underscore(const char *src, char *dst, size_t n) {
    size_t len = strlen(src);
    if (len >= n) return false;
    for (size_t i = 0; i <= len; i++) dst[i] = src[i] == '.' ? '_' : src[i];
    return true;
}

sdc_status sdc_lora_targets_build(sdc_loader *l, sdc_lora_targets **out) {
    *out = NULL;
    sdc_lora_targets *tg = calloc(1, sizeof *tg);
    int n = sdc_loader_tensor_count(l);
    if (tg) tg->pool = malloc((size_t)n * SDC_MAX_NAME + 1);
    if (!tg || !tg->pool || sdc_name_index_init(&tg->index, (size_t)n + 1)) {
        sdc_lora_targets_free(tg);
        return sdc_fail(SDC_ERR_NO_MEMORY, "lora: out of memory");
    }
    for (int i = 0; i < n; i++) {
        const sdc_tensor *t = sdc_loader_tensor_at(l, i);
        char *key = tg->pool + (size_t)i * SDC_MAX_NAME;
        size_t len = strlen(t->name);
        /* matmul and conv weights: ".weight", and OpenCLIP's stacked "in_proj_weight" */
        if (ends_with(t->name, ".weight"))
            len -= 7;
        else if (ends_with(t->name, "_weight"))
            len -= 7;
        else
            continue;
        memcpy(key, t->name, len);
        key[len] = 0;
        underscore(key, key, SDC_MAX_NAME);
        if (sdc_name_index_insert(&tg->index, key, i) == -2) {
            sdc_lora_targets_free(tg);
            return sdc_fail(SDC_ERR_NO_MEMORY, "lora: out of memory");
        }
    }
    *out = tg;
    return SDC_OK;
}

void sdc_lora_targets_free(sdc_lora_targets *tg) {
    if (!tg) return;
    sdc_name_index_free(&tg->index);
    free(tg->pool);
    free(tg);
}

static int find_key(const sdc_lora_targets *tg, const char *prefix, const char *rest) {
    char key[2 * SDC_MAX_NAME];
    if ((size_t)snprintf(key, sizeof key, "%s%s", prefix, rest) >= sizeof key) return -1;
    underscore(key, key, sizeof key);
    return sdc_name_index_find(&tg->index, key);
}

/* ---- text encoders ------------------------------------------------------------------- */

enum { COMP_UNET, COMP_TE, COMP_TE2 };

/* HF CLIP "text_model_encoder_layers_N_<x>" -> OpenCLIP "transformer_resblocks_N_<y>" (and
 * the in_proj third for q/k/v). False when the name is no encoder layer projection. */
static bool hf_to_openclip(const char *rest, char *out, size_t n, int *third) {
    static const struct {
        const char *hf, *oc;
        int third;
    } map[] = {
        {"self_attn_q_proj", "attn_in_proj", 0},
        {"self_attn_k_proj", "attn_in_proj", 1},
        {"self_attn_v_proj", "attn_in_proj", 2},
        {"self_attn_out_proj", "attn_out_proj", -1},
        {"mlp_fc1", "mlp_c_fc", -1},
        {"mlp_fc2", "mlp_c_proj", -1},
    };
    int layer, used = 0;
    if (sscanf(rest, "text_model_encoder_layers_%d_%n", &layer, &used) != 1 || used == 0)
        return false;
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(rest + used, map[i].hf) == 0) {
            snprintf(out, n, "transformer_resblocks_%d_%s", layer, map[i].oc);
            *third = map[i].third;
            return true;
        }
    return false;
}

static bool resolve_te(const sdc_lora_targets *tg, int comp, const char *rest, int *index,
                       int *third) {
    static const char *te1[] = {
        "cond_stage_model.transformer.", "text_encoders.clip_l.transformer.",
        "conditioner.embedders.0.transformer.", "cond_stage_model.model.", NULL};
    static const char *te2[] = {"conditioner.embedders.1.model.",
                                "conditioner.embedders.1.transformer.",
                                "text_encoders.clip_g.transformer.", NULL};
    const char **prefixes = comp == COMP_TE2 ? te2 : te1;
    /* diffusers' old attention-processor spelling of CLIP projections */
    static const char *proc[][2] = {{"_self_attn_to_q", "_self_attn_q_proj"},
                                    {"_self_attn_to_k", "_self_attn_k_proj"},
                                    {"_self_attn_to_v", "_self_attn_v_proj"},
                                    {"_self_attn_to_out_0", "_self_attn_out_proj"}};
    char hf[SDC_MAX_NAME];
    for (size_t i = 0; i < sizeof proc / sizeof *proc; i++)
        if (ends_with(rest, proc[i][0]) &&
            strlen(rest) - strlen(proc[i][0]) + strlen(proc[i][1]) < sizeof hf) {
            snprintf(hf, sizeof hf, "%.*s%s", (int)(strlen(rest) - strlen(proc[i][0])), rest,
                     proc[i][1]);
            rest = hf;
            break;
        }
    char oc[SDC_MAX_NAME];
    int oc_third = -1;
    bool has_oc = hf_to_openclip(rest, oc, sizeof oc, &oc_third);
    for (int p = 0; prefixes[p]; p++) {
        int i = find_key(tg, prefixes[p], rest);
        if (i >= 0) {
            *index = i, *third = -1;
            return true;
        }
        if (has_oc && (i = find_key(tg, prefixes[p], oc)) >= 0) {
            *index = i, *third = oc_third;
            return true;
        }
    }
    return false;
}

/* ---- UNet: diffusers block names -> LDM ----------------------------------------------- */

/* A resnet's inner names (conv1 -> in_layers.2, ...), underscore spelling. */
static const char *resnet_part(const char *r) {
    static const char *map[][2] = {
        {"conv1", "in_layers_2"},          {"conv2", "out_layers_3"},
        {"time_emb_proj", "emb_layers_1"}, {"conv_shortcut", "skip_connection"},
        {"norm1", "in_layers_0"},          {"norm2", "out_layers_0"},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(r, map[i][0]) == 0) return map[i][1];
    return NULL;
}

/* LDM spellings (up to 2) of a diffusers UNet module in underscore form; 0 if unknown. */
static int diffusers_to_ldm(const char *d, char out[2][SDC_MAX_NAME]) {
    static const char *fixed[][2] = {
        {"conv_in", "input_blocks_0_0"},
        {"conv_out", "out_2"},
        {"conv_norm_out", "out_0"},
        {"time_embedding_linear_1", "time_embed_0"},
        {"time_embedding_linear_2", "time_embed_2"},
        {"add_embedding_linear_1", "label_emb_0_0"},
        {"add_embedding_linear_2", "label_emb_0_2"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (strcmp(d, fixed[i][0]) == 0) {
            snprintf(out[0], SDC_MAX_NAME, "%s", fixed[i][1]);
            return 1;
        }
    int b, j, used = 0;
    char kind[16];
    const size_t S = SDC_MAX_NAME;
    bool down = starts_with(d, "down_blocks_"), up = starts_with(d, "up_blocks_");
    if (down || up) {
        const char *p = d + (down ? 12 : 10);
        if (sscanf(p, "%d_%15[a-z]_%d_%n", &b, kind, &j, &used) != 3 || used == 0) return 0;
        const char *rest = p + used;
        int base = down ? 1 + 3 * b + j : 3 * b + j;
        if (strcmp(kind, "attentions") == 0) {
            snprintf(out[0], S, "%s_%d_1_%s", down ? "input_blocks" : "output_blocks", base, rest);
            return 1;
        }
        if (strcmp(kind, "resnets") == 0) {
            const char *r = resnet_part(rest);
            if (!r) return 0;
            snprintf(out[0], S, "%s_%d_0_%s", down ? "input_blocks" : "output_blocks", base, r);
            return 1;
        }
        if (down && strcmp(kind, "downsamplers") == 0 && j == 0 && strcmp(rest, "conv") == 0) {
            snprintf(out[0], S, "input_blocks_%d_0_op", 3 * (b + 1));
            return 1;
        }
        if (up && strcmp(kind, "upsamplers") == 0 && j == 0 && strcmp(rest, "conv") == 0) {
            /* the upsampler follows the resnet, and the attention where the level has one */
            snprintf(out[0], S, "output_blocks_%d_1_conv", 3 * b + 2);
            snprintf(out[1], S, "output_blocks_%d_2_conv", 3 * b + 2);
            return 2;
        }
        return 0;
    }
    if (starts_with(d, "mid_block_")) {
        const char *p = d + 10;
        if (sscanf(p, "%15[a-z]_%d_%n", kind, &j, &used) != 2 || used == 0) return 0;
        if (strcmp(kind, "attentions") == 0 && j == 0) {
            snprintf(out[0], S, "middle_block_1_%s", p + used);
            return 1;
        }
        const char *r = strcmp(kind, "resnets") == 0 && j < 2 ? resnet_part(p + used) : NULL;
        if (!r) return 0;
        snprintf(out[0], S, "middle_block_%d_%s", 2 * j, r);
        return 1;
    }
    return 0;
}

static bool resolve_unet(const sdc_lora_targets *tg, const char *rest, int *index) {
    const char *prefix = "model.diffusion_model.";
    if ((*index = find_key(tg, prefix, rest)) >= 0) return true;
    char ldm[2][SDC_MAX_NAME];
    int n = diffusers_to_ldm(rest, ldm);
    for (int k = 0; k < n; k++)
        if ((*index = find_key(tg, prefix, ldm[k])) >= 0) return true;
    return false;
}

/* ---- modules ------------------------------------------------------------------------- */

/* Drops diffusers attention-processor spellings: ".processor", "to_q_lora" -> "to_q",
 * "to_out_lora" -> "to_out_0" (on the underscore form). */
static void drop_processor(char *s) {
    char *p;
    while ((p = strstr(s, "_processor")) != NULL) memmove(p, p + 10, strlen(p + 10) + 1);
    if (ends_with(s, "_to_out_lora"))
        strcpy(s + strlen(s) - 4, "0");
    else if (ends_with(s, "_lora") && (ends_with(s, "_to_q_lora") || ends_with(s, "_to_k_lora") ||
                                       ends_with(s, "_to_v_lora")))
        s[strlen(s) - 5] = 0;
}

bool sdc_lora_targets_resolve(const sdc_lora_targets *tg, const char *module, int *index,
                              int *third, char *why, size_t why_size) {
    static const struct {
        const char *prefix;
        int comp;
    } comps[] = {
        {"lora_unet_", COMP_UNET},
        {"lora_te1_", COMP_TE},
        {"lora_te2_", COMP_TE2},
        {"lora_te_", COMP_TE},
        {"unet.", COMP_UNET},
        {"text_encoder_2.", COMP_TE2},
        {"text_encoder.", COMP_TE},
        {"model.diffusion_model.", COMP_UNET},
        {"diffusion_model.", COMP_UNET},
        {"lora.unet.", COMP_UNET},
        {"lora.text_encoder.", COMP_TE},
    };
    *index = -1, *third = -1;
    const char *m = module;
    if (starts_with(m, "base_model.model.")) m += 17; /* PEFT's wrapper */
    for (size_t c = 0; c < sizeof comps / sizeof *comps; c++) {
        if (!starts_with(m, comps[c].prefix)) continue;
        char rest[SDC_MAX_NAME];
        if (!underscore(m + strlen(comps[c].prefix), rest, sizeof rest)) break;
        drop_processor(rest);
        bool ok = comps[c].comp == COMP_UNET ? resolve_unet(tg, rest, index)
                                             : resolve_te(tg, comps[c].comp, rest, index, third);
        if (!ok)
            snprintf(why, why_size, "no %s weight '%s' in the model",
                     comps[c].comp == COMP_UNET  ? "UNet"
                     : comps[c].comp == COMP_TE2 ? "second text encoder"
                                                 : "text encoder",
                     rest);
        return ok;
    }
    snprintf(why, why_size,
             "unknown key layout (expected lora_unet_, lora_te_, lora_te1_, "
             "lora_te2_, unet., text_encoder. or text_encoder_2.)");
    return false;
}
