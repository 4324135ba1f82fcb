/* diffusers names -> LDM names, and loading a diffusers folder: see diffusers_names.h
 * and sdc_loader_add_diffusers_folder in model_loader.h.
 *
 * UNet facts (from diffusers' LDM converter): LDM numbers the down path's modules
 * input_blocks.0 (conv_in), then per level i its layers_per_block[i] res blocks (each
 * input_blocks.k.0, its attention .1) and, except on the last level, a downsampler
 * (input_blocks.k.0.op). output_blocks count the up path the same way with
 * layers_per_block+1 res blocks per level; a level's upsampler sits in its last
 * output block after the res block and attention (.2.conv, or .1.conv without
 * attention). Res block parts are renamed (norm1 -> in_layers.0, ...), attention
 * (SpatialTransformer) parts keep their names. */
#include "io/diffusers_names.h"

#include "io/model_loader.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void sdc_unet_layout_hint_default(sdc_unet_layout_hint *h) {
    memset(h, 0, sizeof *h);
    h->n_levels = 4;
    for (int i = 0; i < 4; i++) {
        h->layers_per_block[i] = 2;
        h->down_attn[i] = i < 3;
        h->up_attn[i] = i > 0;
    }
    h->mid_attn = true;
    h->vae_levels = 4;
}

sdc_status sdc_unet_layout_hint_from_config(const char *json, size_t len, const char *label,
                                            sdc_unet_layout_hint *h) {
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return sdc_fail(SDC_ERR_FORMAT, "%s: not a JSON object", label);
    }
    sdc_status st = SDC_OK;
    const cJSON *down = cJSON_GetObjectItemCaseSensitive(root, "down_block_types");
    const cJSON *up = cJSON_GetObjectItemCaseSensitive(root, "up_block_types");
    const cJSON *lpb = cJSON_GetObjectItemCaseSensitive(root, "layers_per_block");
    const cJSON *mid = cJSON_GetObjectItemCaseSensitive(root, "mid_block_type");
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(root, "addition_embed_type");
    int n = cJSON_GetArraySize(down);
    if (!cJSON_IsArray(down) || !cJSON_IsArray(up) || n < 1 || n > SDC_UNET_MAX_LEVELS ||
        cJSON_GetArraySize(up) != n) {
        st = sdc_fail(SDC_ERR_FORMAT,
                      "%s: down_block_types/up_block_types missing, of different lengths or "
                      "longer than %d",
                      label, SDC_UNET_MAX_LEVELS);
        goto done;
    }
    h->n_levels = n;
    for (int i = 0; i < n; i++) {
        const cJSON *d = cJSON_GetArrayItem(down, i), *u = cJSON_GetArrayItem(up, i);
        if (!cJSON_IsString(d) || !cJSON_IsString(u)) {
            st = sdc_fail(SDC_ERR_FORMAT, "%s: block type %d is not a string", label, i);
            goto done;
        }
        h->down_attn[i] = strstr(d->valuestring, "CrossAttn") != NULL ||
                          strstr(d->valuestring, "AttnDown") != NULL;
        h->up_attn[i] =
            strstr(u->valuestring, "CrossAttn") != NULL || strstr(u->valuestring, "AttnUp") != NULL;
        const cJSON *l = cJSON_IsArray(lpb) ? cJSON_GetArrayItem(lpb, i) : lpb;
        if (!cJSON_IsNumber(l) || l->valuedouble < 1 || l->valuedouble > 16) {
            st = sdc_fail(SDC_ERR_FORMAT, "%s: layers_per_block missing or out of range", label);
            goto done;
        }
        h->layers_per_block[i] = (int)l->valuedouble;
    }
    h->mid_attn = !cJSON_IsString(mid) || strstr(mid->valuestring, "CrossAttn") != NULL;
    if (cJSON_IsString(mid) && strcmp(mid->valuestring, "UNetMidBlock2D") == 0) h->mid_attn = false;
    h->sdxl = cJSON_IsString(add) && strcmp(add->valuestring, "text_time") == 0;
done:
    cJSON_Delete(root);
    return st;
}

/* ---- name mapping --------------------------------------------------------------------- */

/* If s starts with lit followed by a number and '.', *idx gets the number and *rest what
 * follows the dot. */
static bool take(const char *s, const char *lit, int *idx, const char **rest) {
    size_t l = strlen(lit);
    if (strncmp(s, lit, l) != 0) return false;
    s += l;
    if (*s < '0' || *s > '9') return false;
    long v = 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s++ - '0');
        if (v > 10000) return false;
    }
    if (*s != '.') return false;
    *idx = (int)v;
    *rest = s + 1;
    return true;
}

static bool starts(const char *s, const char *lit, const char **rest) {
    size_t l = strlen(lit);
    if (strncmp(s, lit, l) != 0) return false;
    *rest = s + l;
    return true;
}

static bool put(char *out, size_t n, const char *fmt, ...) SDC_PRINTF(3, 4);
static bool put(char *out, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    return r >= 0 && (size_t)r < n;
}

/* UNet res block part: diffusers ResnetBlock2D -> LDM ResBlock. */
static const char *unet_resnet_part(const char *rest, const char **tail) {
    static const struct {
        const char *d, *l;
    } k[] = {{"norm1.", "in_layers.0."},          {"conv1.", "in_layers.2."},
             {"time_emb_proj.", "emb_layers.1."}, {"norm2.", "out_layers.0."},
             {"conv2.", "out_layers.3."},         {"conv_shortcut.", "skip_connection."}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (starts(rest, k[i].d, tail)) return k[i].l;
    return NULL;
}

#define UNET "model.diffusion_model."

static bool unet_name(const char *name, const sdc_unet_layout_hint *h, char *out, size_t n) {
    const char *r, *t;
    int i, j;
    static const struct {
        const char *d, *l;
    } fixed[] = {{"conv_in.", "input_blocks.0.0."},
                 {"time_embedding.linear_1.", "time_embed.0."},
                 {"time_embedding.linear_2.", "time_embed.2."},
                 {"time_embedding.cond_proj.", "time_embedding.cond_proj."}, /* LCM */
                 {"add_embedding.linear_1.", "label_emb.0.0."},
                 {"add_embedding.linear_2.", "label_emb.0.2."},
                 {"conv_norm_out.", "out.0."},
                 {"conv_out.", "out.2."}};
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
        if (starts(name, fixed[k].d, &r)) return put(out, n, UNET "%s%s", fixed[k].l, r);
    if (take(name, "down_blocks.", &i, &r) && i < h->n_levels) {
        int base = 1;
        for (int k = 0; k < i; k++) base += h->layers_per_block[k] + 1;
        int lpb = h->layers_per_block[i];
        if (take(r, "resnets.", &j, &t) && j < lpb) {
            const char *part = unet_resnet_part(t, &t);
            return part && put(out, n, UNET "input_blocks.%d.0.%s%s", base + j, part, t);
        }
        if (take(r, "attentions.", &j, &t) && j < lpb && h->down_attn[i])
            return put(out, n, UNET "input_blocks.%d.1.%s", base + j, t);
        if (starts(r, "downsamplers.0.conv.", &t) && i + 1 < h->n_levels)
            return put(out, n, UNET "input_blocks.%d.0.op.%s", base + lpb, t);
        return false;
    }
    if (take(name, "up_blocks.", &i, &r) && i < h->n_levels) {
        int base = 0, L = h->n_levels;
        for (int k = 0; k < i; k++) base += h->layers_per_block[L - 1 - k] + 1;
        int nres = h->layers_per_block[L - 1 - i] + 1;
        if (take(r, "resnets.", &j, &t) && j < nres) {
            const char *part = unet_resnet_part(t, &t);
            return part && put(out, n, UNET "output_blocks.%d.0.%s%s", base + j, part, t);
        }
        if (take(r, "attentions.", &j, &t) && j < nres && h->up_attn[i])
            return put(out, n, UNET "output_blocks.%d.1.%s", base + j, t);
        if (starts(r, "upsamplers.0.conv.", &t) && i + 1 < L)
            return put(out, n, UNET "output_blocks.%d.%d.conv.%s", base + nres - 1,
                       h->up_attn[i] ? 2 : 1, t);
        return false;
    }
    if (starts(name, "mid_block.", &r)) {
        if (take(r, "resnets.", &j, &t) && j < 2) {
            const char *part = unet_resnet_part(t, &t);
            int k = j == 0 ? 0 : (h->mid_attn ? 2 : 1);
            return part && put(out, n, UNET "middle_block.%d.%s%s", k, part, t);
        }
        if (h->mid_attn && starts(r, "attentions.0.", &t))
            return put(out, n, UNET "middle_block.1.%s", t);
    }
    return false;
}

#define VAE "first_stage_model."

/* VAE res block part (only the shortcut differs) and mid attention parts. */
static bool vae_resnet(const char *t, char *buf, size_t n) {
    const char *r;
    if (starts(t, "conv_shortcut.", &r)) return put(buf, n, "nin_shortcut.%s", r);
    static const char *const same[] = {"norm1.", "conv1.", "norm2.", "conv2."};
    for (size_t i = 0; i < 4; i++)
        if (starts(t, same[i], &r)) return put(buf, n, "%s", t);
    return false;
}

static bool vae_attn(const char *t, char *buf, size_t n) {
    static const struct {
        const char *d, *l;
    } k[] = {{"group_norm.", "norm."},   {"to_q.", "q."},  {"to_k.", "k."}, {"to_v.", "v."},
             {"to_out.0.", "proj_out."}, {"query.", "q."}, {"key.", "k."},  {"value.", "v."},
             {"proj_attn.", "proj_out."}};
    const char *r;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (starts(t, k[i].d, &r)) return put(buf, n, "%s%s", k[i].l, r);
    return false;
}

static bool vae_mid(const char *side, const char *r, char *out, size_t n) {
    const char *t;
    int j;
    char part[128];
    if (take(r, "resnets.", &j, &t) && j < 2)
        return vae_resnet(t, part, sizeof part) &&
               put(out, n, VAE "%s.mid.block_%d.%s", side, j + 1, part);
    if (starts(r, "attentions.0.", &t))
        return vae_attn(t, part, sizeof part) && put(out, n, VAE "%s.mid.attn_1.%s", side, part);
    return false;
}

static bool vae_name(const char *name, const sdc_unet_layout_hint *h, char *out, size_t n) {
    const char *r, *t;
    int i, j;
    char part[128];
    static const char *const same[] = {"encoder.conv_in.", "encoder.conv_out.",
                                       "decoder.conv_in.", "decoder.conv_out.",
                                       "quant_conv.",      "post_quant_conv."};
    for (size_t k = 0; k < sizeof same / sizeof same[0]; k++)
        if (starts(name, same[k], &r)) return put(out, n, VAE "%s", name);
    if (starts(name, "encoder.conv_norm_out.", &r))
        return put(out, n, VAE "encoder.norm_out.%s", r);
    if (starts(name, "decoder.conv_norm_out.", &r))
        return put(out, n, VAE "decoder.norm_out.%s", r);
    if (starts(name, "encoder.mid_block.", &r)) return vae_mid("encoder", r, out, n);
    if (starts(name, "decoder.mid_block.", &r)) return vae_mid("decoder", r, out, n);
    int L = h->vae_levels;
    if (take(name, "encoder.down_blocks.", &i, &r) && i < L) {
        if (take(r, "resnets.", &j, &t))
            return vae_resnet(t, part, sizeof part) &&
                   put(out, n, VAE "encoder.down.%d.block.%d.%s", i, j, part);
        if (starts(r, "downsamplers.0.conv.", &t))
            return put(out, n, VAE "encoder.down.%d.downsample.conv.%s", i, t);
        return false;
    }
    if (take(name, "decoder.up_blocks.", &i, &r) && i < L) {
        if (take(r, "resnets.", &j, &t))
            return vae_resnet(t, part, sizeof part) &&
                   put(out, n, VAE "decoder.up.%d.block.%d.%s", L - 1 - i, j, part);
        if (starts(r, "upsamplers.0.conv.", &t))
            return put(out, n, VAE "decoder.up.%d.upsample.conv.%s", L - 1 - i, t);
    }
    return false;
}

bool sdc_diffusers_to_ldm(const char *comp, const char *name, const sdc_unet_layout_hint *hint,
                          char *out, size_t n) {
    sdc_unet_layout_hint def;
    if (!hint) {
        sdc_unet_layout_hint_default(&def);
        hint = &def;
    }
    if (!comp || !name || !out || !n) return false;
    if (strcmp(comp, "unet") == 0) return unet_name(name, hint, out, n);
    if (strcmp(comp, "vae") == 0) return vae_name(name, hint, out, n);
    bool te1 = strcmp(comp, "text_encoder") == 0, te2 = strcmp(comp, "text_encoder_2") == 0;
    if (!te1 && !te2) return false;
    /* HF CLIPTextModel(WithProjection) layout, kept as it is under the LDM prefix;
     * transformers 5 writes the text model's tensors without their "text_model." */
    const char *prefix = te2          ? "conditioner.embedders.1.transformer."
                         : hint->sdxl ? "conditioner.embedders.0.transformer."
                                      : "cond_stage_model.transformer.";
    if (strncmp(name, "text_model.", 11) == 0 || strncmp(name, "text_projection.", 16) == 0)
        return put(out, n, "%s%s", prefix, name);
    static const char *const k_inner[] = {"embeddings.", "encoder.", "final_layer_norm."};
    for (size_t i = 0; i < 3; i++)
        if (strncmp(name, k_inner[i], strlen(k_inner[i])) == 0)
            return put(out, n, "%stext_model.%s", prefix, name);
    return false;
}

/* ---- a diffusers folder ---------------------------------------------------------------- */

typedef struct rename_ctx {
    const char *comp;
    const sdc_unet_layout_hint *hint;
} rename_ctx;

static bool rename_cb(void *ctx, const char *name, char *out, size_t n) {
    const rename_ctx *c = ctx;
    return sdc_diffusers_to_ldm(c->comp, name, c->hint, out, n);
}

static bool path_is(const char *path, bool dir) {
    struct stat sb;
    return stat(path, &sb) == 0 && (dir ? S_ISDIR(sb.st_mode) : S_ISREG(sb.st_mode));
}

/* A small text file (configs), NUL-terminated; NULL with *st set on failure. */
static char *read_text(const char *path, size_t *len, sdc_status *st) {
    FILE *f = fopen(path, "rb");
    *st = SDC_OK;
    if (!f) {
        *st = sdc_fail(SDC_ERR_IO, "%s: cannot open", path);
        return NULL;
    }
    char *buf = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size < 0 || size > (4 << 20) || fseek(f, 0, SEEK_SET) != 0) {
        *st = sdc_fail(SDC_ERR_IO, "%s: unreadable or larger than 4 MB", path);
    } else if (!(buf = malloc((size_t)size + 1))) {
        *st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", path);
    } else if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        buf = NULL;
        *st = sdc_fail(SDC_ERR_IO, "%s: read failed", path);
    } else {
        buf[size] = '\0';
        *len = (size_t)size;
    }
    fclose(f);
    return buf;
}

/* The folder's component layout: unet/config.json (UNet blocks, SDXL's text_time
 * embedding), vae/config.json (its levels), text_encoder_2/ (SDXL). */
static sdc_status read_layout(const char *dir, sdc_unet_layout_hint *h) {
    char path[4096];
    sdc_status st = SDC_OK;
    size_t len;
    sdc_unet_layout_hint_default(h);
    snprintf(path, sizeof path, "%s/unet/config.json", dir);
    if (path_is(path, false)) {
        char *js = read_text(path, &len, &st);
        if (js) st = sdc_unet_layout_hint_from_config(js, len, path, h);
        free(js);
        if (st) return st;
    }
    snprintf(path, sizeof path, "%s/vae/config.json", dir);
    if (path_is(path, false)) {
        char *js = read_text(path, &len, &st);
        if (!js) return st;
        cJSON *root = cJSON_ParseWithLength(js, len);
        const cJSON *boc = cJSON_GetObjectItemCaseSensitive(root, "block_out_channels");
        int n = cJSON_GetArraySize(boc);
        if (cJSON_IsArray(boc) && n >= 1 && n <= SDC_UNET_MAX_LEVELS)
            h->vae_levels = n;
        else
            st = sdc_fail(SDC_ERR_FORMAT, "%s: block_out_channels missing or bad", path);
        cJSON_Delete(root);
        free(js);
        if (st) return st;
    }
    snprintf(path, sizeof path, "%s/text_encoder_2", dir);
    if (path_is(path, true)) h->sdxl = true;
    return SDC_OK;
}

/* The weights file of component folder `sub` (full precision first, then the fp16
 * variant, then torch .bin checkpoints); false with *st set if there is none. */
static bool find_weights(const char *sub, char *path, size_t n, sdc_status *st) {
    static const char *const k_files[] = {"diffusion_pytorch_model.safetensors",
                                          "model.safetensors",
                                          "diffusion_pytorch_model.fp16.safetensors",
                                          "model.fp16.safetensors",
                                          "diffusion_pytorch_model.bin",
                                          "pytorch_model.bin",
                                          "diffusion_pytorch_model.fp16.bin",
                                          "pytorch_model.fp16.bin"};
    for (size_t i = 0; i < sizeof k_files / sizeof k_files[0]; i++) {
        if ((size_t)snprintf(path, n, "%s/%s", sub, k_files[i]) >= n) break;
        if (path_is(path, false)) return true;
    }
    bool sharded = false;
    static const char *const k_index[] = {"diffusion_pytorch_model.safetensors.index.json",
                                          "model.safetensors.index.json"};
    for (size_t i = 0; i < 2; i++)
        if ((size_t)snprintf(path, n, "%s/%s", sub, k_index[i]) < n && path_is(path, false))
            sharded = true;
    *st = sdc_fail(sharded ? SDC_ERR_UNSUPPORTED : SDC_ERR_IO,
                   sharded ? "%s: sharded weights (*.safetensors.index.json) are not supported: "
                             "merge the shards into one file"
                           : "%s: no weights file (diffusion_pytorch_model[.fp16].safetensors, "
                             "model[.fp16].safetensors or pytorch_model.bin)",
                   sub);
    return false;
}

sdc_status sdc_loader_add_diffusers_folder(sdc_loader *l, const char *dir) {
    char path[4096], sub[4096];
    sdc_status st = SDC_OK;
    size_t len;
    if ((size_t)snprintf(path, sizeof path, "%s/model_index.json", dir) >= sizeof path - 64)
        return sdc_fail(SDC_ERR_INVALID_ARG, "%s: path too long", dir);
    if (!path_is(path, false))
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: a folder without model_index.json is not a diffusers "
                        "model folder",
                        dir);
    char *js = read_text(path, &len, &st);
    if (!js) return st;
    cJSON *index = cJSON_ParseWithLength(js, len);
    bool ok = cJSON_IsObject(index);
    cJSON_Delete(index);
    free(js);
    if (!ok) return sdc_fail(SDC_ERR_FORMAT, "%s: not a JSON object", path);

    sdc_unet_layout_hint hint;
    if ((st = read_layout(dir, &hint))) return st;
    static const char *const k_comps[] = {"unet", "vae", "text_encoder", "text_encoder_2"};
    int n0 = sdc_loader_file_count(l);
    int added = 0;
    for (size_t c = 0; c < sizeof k_comps / sizeof k_comps[0]; c++) {
        snprintf(sub, sizeof sub, "%s/%s", dir, k_comps[c]);
        if (!path_is(sub, true)) continue;
        if (!find_weights(sub, path, sizeof path, &st)) goto fail;
        rename_ctx ctx = {k_comps[c], &hint};
        if ((st = sdc_loader_add_file_renamed(l, path, rename_cb, &ctx))) goto fail;
        added++;
    }
    if (!added) {
        st = sdc_fail(SDC_ERR_FORMAT, "%s: no unet/, vae/ or text_encoder/ folder with weights",
                      dir);
        goto fail;
    }
    static const char *const k_tok[] = {"tokenizer", "tokenizer_2"};
    for (int i = 0; i < 2; i++) {
        snprintf(sub, sizeof sub, "%s/%s", dir, k_tok[i]);
        if ((st = sdc_loader_set_tokenizer_dir(l, i, path_is(sub, true) ? sub : NULL))) goto fail;
    }
    return SDC_OK;
fail:
    sdc_loader_truncate(l, n0);
    return st;
}
