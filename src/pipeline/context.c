/* Context creation: open the component files into one name map (sd.cpp's internal
 * prefixes), detect the family from tensor names and shapes, let the family load its
 * modules, and create the backends the modules run on. */
#include "pipeline/context.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/threadpool.h"
#include "core/types.h"
#include "cpu/quant_dispatch.h"
#include "io/model_loader.h"
#include "pipeline/convert.h"
#include "pipeline/model_args.h"
#include "pipeline/registry.h"
#include "placement/autofit.h"
#include "placement/devices.h"
#include "placement/split.h"
#include "sampling/defaults.h"
#include "sampling/samplers.h"
#include "sampling/schedulers.h"

#define PREFIX_DIT "model.diffusion_model."
#define PREFIX_T5  "text_encoders.t5xxl.transformer."
/* component files by flag; the family picks them before the -m file's own */
#define PREFIX_CLIP_L "text_encoders.clip_l.transformer."
#define PREFIX_CLIP_G "text_encoders.clip_g.transformer."
#define PREFIX_VAE    "vae."
#define PREFIX_TAESD  "tae."
#define PREFIX_LLM    "text_encoders.llm."

void sdc_context_params_init(sdc_context_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->n_threads = -1;
    p->weight_type = -1;
    p->flow_shift = NAN;
    p->vae_tile_overlap = NAN;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static sdc_status add_file(sdc_context *ctx, const char *path, const char *prefix, char *name,
                           size_t name_size) {
    struct stat st;
    if (stat(path, &st) != 0) return sdc_fail(SDC_ERR_IO, "%s: no such file", path);
    sdc_status s = sdc_loader_add_file(ctx->weights, path, prefix);
    if (s == SDC_OK && name) snprintf(name, name_size, "%s", base_name(path));
    return s;
}

/* A caller built against an older sdc.h passes a shorter struct: copy what it has and
 * leave the newer fields at their defaults. */
static sdc_status copy_params(const sdc_context_params *in, sdc_context_params *out) {
    sdc_context_params_init(out);
    size_t n = in->struct_size;
    if (n < offsetof(sdc_context_params, clip_l_path) || n > sizeof *out)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "context parameters: struct_size %zu is not one this library knows "
                        "(call sdc_context_params_init)",
                        in->struct_size);
    memcpy(out, in, n);
    out->struct_size = sizeof *out;
    return SDC_OK;
}

/* Files whose family does not use them would be silently ignored: refuse instead. */
static sdc_status check_unused_components(const sdc_context_params *p, const sdc_family_desc *d) {
    const struct {
        const char *path, *flag;
        sdc_role role;
    } parts[] = {
        {p->clip_l_path, "--clip_l", SDC_ROLE_CLIP_L},
        {p->clip_g_path, "--clip_g", SDC_ROLE_CLIP_G},
        {p->clip_vision_path, "--clip_vision", SDC_ROLE_CLIP_VISION},
        {p->llm_path, "--llm", SDC_ROLE_LLM},
        {p->llm_vision_path, "--llm_vision", SDC_ROLE_LLM_VISION},
        {p->vae_path, "--vae", SDC_ROLE_VAE},
        {p->taesd_path, "--taesd", SDC_ROLE_TAESD},
        {p->control_net_path, "--control-net", SDC_ROLE_COUNT},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!parts[i].path) continue;
        bool used = false;
        for (int c = 0; c < d->n_components; c++) used |= d->components[c].role == parts[i].role;
        if (!used)
            return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: %s does not use this component (%s)",
                            parts[i].flag, d->name, parts[i].path);
    }
    return SDC_OK;
}

/* Options that are hints where the family or device makes them moot get one warning;
 * those that would change the picture are refused. */
static sdc_status check_options(const sdc_context_params *p, const sdc_family_desc *d,
                                const sdc_module_place *diffusion_place) {
    const char *fam = d->name;
    bool pixel = d->first_stage == SDC_FIRST_STAGE_NONE;
    if (p->prediction && *p->prediction) {
        sdc_prediction want;
        sdc_status s = sdc_prediction_from_name(p->prediction, &want);
        if (s != SDC_OK) return s;
        sdc_family_defaults def;
        sdc_registry_defaults(d, NULL, &def);
        bool unet = d->family == SDC_FAMILY_SD1 || d->family == SDC_FAMILY_SD2 ||
                    d->family == SDC_FAMILY_SDXL; /* fine-tunes change it: sd.cpp allows any */
        if (want != def.prediction && !unet)
            return sdc_fail(SDC_ERR_UNSUPPORTED,
                            "--prediction %s: %s is a %s model; another prediction type would "
                            "give a wrong image",
                            p->prediction, fam, sdc_prediction_name(def.prediction));
    }
    bool has_clip = false;
    for (int c = 0; c < d->n_components; c++) has_clip |= d->components[c].role == SDC_ROLE_CLIP_L;
    if (p->embeddings_dir && !has_clip)
        SDC_LOGW("--embd-dir: textual-inversion embeddings do not apply to %s (no CLIP text "
                 "encoder); ignored",
                 fam);
    if ((p->lora_model_dir || p->lora_apply_mode) && !has_clip)
        SDC_LOGW("--lora-model-dir: LoRA is not supported for %s yet; the folder is not read", fam);
    if (p->vae_on_cpu && pixel)
        SDC_LOGW("--vae-on-cpu: %s works in pixel space and has no VAE; ignored", fam);
    if (p->vae_tiling && pixel)
        SDC_LOGW("--vae-tiling: %s works in pixel space and has no VAE; ignored", fam);
    if (pixel && (p->vae_tile_size || p->vae_relative_tile_size || isfinite(p->vae_tile_overlap)))
        SDC_LOGW("--vae-tile-*: %s works in pixel space and has no VAE; ignored", fam);
    if (pixel && p->taesd_preview_only)
        SDC_LOGW("--taesd-preview-only: %s works in pixel space and has no TAESD; ignored", fam);
    if (p->diffusion_flash_attn)
        SDC_LOGW("--diffusion-fa: attention is always fused (flash-style) here; nothing to "
                 "switch on");
    if (p->offload_to_cpu && sdc_devices_get(diffusion_place->device[0]) &&
        sdc_devices_get(diffusion_place->device[0])->kind == SDC_DEVICE_CPU)
        SDC_LOGW("--offload-to-cpu: the model already runs on the CPU, its weights stay in "
                 "RAM; nothing to offload");
    return SDC_OK;
}

static sdc_status open_files(sdc_context *ctx, const sdc_context_params *p) {
    sdc_status s = sdc_loader_create(&ctx->weights);
    if (s != SDC_OK) return s;
    if (p->model_path &&
        (s = add_file(ctx, p->model_path, "", ctx->model_name, sizeof ctx->model_name)) != SDC_OK)
        return s;
    if (p->diffusion_model_path &&
        (s = add_file(ctx, p->diffusion_model_path, PREFIX_DIT, ctx->diffusion_model_name,
                      sizeof ctx->diffusion_model_name)) != SDC_OK)
        return s;
    ctx->weight_type = p->weight_type;
    ctx->t5_file = -1;
    if (p->t5xxl_path) {
        if ((s = add_file(ctx, p->t5xxl_path, PREFIX_T5, ctx->t5xxl_name,
                          sizeof ctx->t5xxl_name)) != SDC_OK)
            return s;
        ctx->t5_file = sdc_loader_file_count(ctx->weights) - 1;
    }
    const struct {
        const char *path, *prefix;
    } more[] = {{p->clip_l_path, PREFIX_CLIP_L}, {p->clip_g_path, PREFIX_CLIP_G},
                {p->llm_path, PREFIX_LLM},       {p->llm_vision_path, PREFIX_LLM "visual."},
                {p->vae_path, PREFIX_VAE},       {p->taesd_path, PREFIX_TAESD}};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        if (more[i].path && (s = add_file(ctx, more[i].path, more[i].prefix, NULL, 0)) != SDC_OK)
            return s;
    return SDC_OK;
}

/* Which family the weights are (the registry: tensor names and shapes), refusing
 * families this build cannot run and missing required components. */
static sdc_status detect_family(sdc_context *ctx) {
    char why[6144];
    sdc_detect_info info;
    const sdc_family_desc *d = sdc_registry_detect_loader(ctx->weights, &info, why, sizeof why);
    if (!d) return sdc_registry_fail_unsupported(NULL, why);
    ctx->family_desc = d;
    ctx->family = d->family;
    if (!d->implemented || !sdc_family_loader(d->family))
        return sdc_registry_fail_unsupported(d, NULL);
    const sdc_component_desc *missing = sdc_registry_missing_loader(d, ctx->weights);
    if (missing) return sdc_registry_fail_missing(d, missing);
    return SDC_OK;
}

/* "f16 x 64, f32 x 21" over the loaded tensors. */
static void weight_types_line(const sdc_loader *l, char *buf, size_t size) {
    int counts[64] = {0};
    for (int i = 0; i < sdc_loader_tensor_count(l); i++) {
        int t = (int)sdc_loader_tensor_at(l, i)->type;
        if (t >= 0 && t < 64) counts[t]++;
    }
    size_t n = 0;
    buf[0] = '\0';
    for (int t = 0; t < 64 && n < size; t++)
        if (counts[t])
            n += (size_t)snprintf(buf + n, size - n, "%s%s x %d", n ? ", " : "", sdc_type_name(t),
                                  counts[t]);
}

static void log_loaded(sdc_context *ctx) {
    char files[768] = "", types[256], place[256];
    size_t n = 0;
    for (int i = 0; i < sdc_loader_file_count(ctx->weights) && n < sizeof files; i++)
        n += (size_t)snprintf(files + n, sizeof files - n, "%s%s", n ? ", " : "",
                              base_name(sdc_loader_file_path(ctx->weights, i)));
    weight_types_line(ctx->weights, types, sizeof types);
    sdc_placement_describe(&ctx->placement, place, sizeof place);
    int len = snprintf(ctx->description, sizeof ctx->description, "%s: %s; weights %s; %s",
                       ctx->family_desc->name, files, types, place);
    /* the auto-fit plan, if any, as far as it fits */
    if (ctx->autofit_plan[0] && len > 0 && (size_t)len + 2 < sizeof ctx->description) {
        size_t n = (size_t)len, room = sizeof ctx->description - n - 2;
        memcpy(ctx->description + n, "; ", 2);
        size_t k = strlen(ctx->autofit_plan);
        if (k > room - 1) k = room - 1;
        memcpy(ctx->description + n + 2, ctx->autofit_plan, k);
        ctx->description[n + 2 + k] = '\0';
    }
    SDC_LOGI("%s", ctx->m.summary);
}

const char *sdc_context_describe(const sdc_context *ctx) {
    return ctx ? ctx->description : "";
}

int sdc_context_size_multiple(const sdc_context *ctx) {
    if (!ctx) return 0;
    return ctx->m.diffusion.size_multiple > 0 ? ctx->m.diffusion.size_multiple : 1;
}

sdc_ref_use sdc_context_ref_use(const sdc_context *ctx) {
    if (!ctx || ctx->m.diffusion.ref_size_multiple <= 0) return SDC_REFS_NONE;
    /* latent frames (Layered) refuse -i: the layers are made from the reference */
    return ctx->m.diffusion.latent_frames ? SDC_REFS_ONLY : SDC_REFS_WITH_INIT;
}

static int clamp_threads(int n) {
    int cores = sdc_cpu_count();
    if (n <= 0) return sdc_cpu_physical_cores(); /* SMT siblings only add contention */
    if (n > cores) {
        SDC_LOGW("-t %d: this machine has %d CPUs; using %d threads", n, cores, cores);
        return cores;
    }
    return n;
}

/* sd.cpp's internal prefixes of each module's weights. */
static const char *const k_module_prefixes[SDC_MODULE_COUNT][4] = {
    [SDC_MODULE_TE] = {"text_encoders.", "cond_stage_model.", "conditioner.", NULL},
    [SDC_MODULE_DIFFUSION] = {"model.diffusion_model.", NULL},
    [SDC_MODULE_VAE] = {"first_stage_model.", "vae.", "tae.", NULL},
    [SDC_MODULE_CLIP_VISION] = {"clip_vision.", NULL},
    [SDC_MODULE_CONTROL_NET] = {"control_model.", NULL},
};

bool sdc_module_owns_tensor(sdc_module m, const char *name) {
    if ((int)m < 0 || m >= SDC_MODULE_COUNT) return false;
    for (int i = 0; i < 4 && k_module_prefixes[m][i]; i++)
        if (!strncmp(name, k_module_prefixes[m][i], strlen(k_module_prefixes[m][i]))) return true;
    return false;
}

void sdc_context_end_phase(sdc_context *ctx, sdc_module m) {
    const sdc_module_place *pl = &ctx->placement.module[m];
    /* asked for a device or host RAM: the weights stay resident for the next generation;
     * by default each module's mapped file pages go when its phase ends (the phases never
     * overlap, so peak RSS is the largest phase, not the sum; the pages come back from the
     * page cache, ~0.3 s per GiB); converted weights stay; "disk": converted ones go too */
    if (pl->params_given && pl->params != SDC_PARAMS_DISK) return;
    for (int i = 0; i < sdc_loader_tensor_count(ctx->weights); i++) {
        sdc_tensor *t = sdc_loader_tensor_at(ctx->weights, i);
        if (!sdc_module_owns_tensor(m, t->name)) continue;
        if (!sdc_converted_weights_release(ctx->converted, t))
            sdc_loader_release_tensor_pages(ctx->weights, t);
    }
}

/* --type conversions of "disk" modules go to the spill file. */
static bool tensor_on_disk(const char *name, void *user) {
    const sdc_placement *pl = user;
    for (int m = 0; m < SDC_MODULE_COUNT; m++)
        if (pl->module[m].params == SDC_PARAMS_DISK && sdc_module_owns_tensor(m, name)) return true;
    return false;
}

/* --auto-fit: the plan from each module's weight bytes (as stored) and every registry
 * device's room; compute reserve per module: a quarter of its weights, at most sd.cpp's
 * figures (2 GiB for te and diffusion, 1 GiB for the VAE). */
static sdc_status auto_fit(sdc_context *ctx, const sdc_context_params *p) {
    if (p->backend || p->params_backend || p->clip_on_cpu || p->vae_on_cpu || p->offload_to_cpu)
        SDC_LOGW("--auto-fit is on: --backend, --params-backend, --clip-on-cpu, --vae-on-cpu "
                 "and --offload-to-cpu are ignored");
    sdc_autofit_component comps[SDC_MODULE_COUNT];
    int nc = 0;
    for (int m = 0; m < SDC_MODULE_COUNT; m++) {
        uint64_t bytes = 0;
        for (int i = 0; i < sdc_loader_tensor_count(ctx->weights); i++) {
            const sdc_tensor *t = sdc_loader_tensor_at(ctx->weights, i);
            if (sdc_module_owns_tensor(m, t->name)) bytes += sdc_tensor_nbytes(t);
        }
        if (!bytes && m > SDC_MODULE_VAE) continue;
        uint64_t cap = (uint64_t)(m == SDC_MODULE_VAE ? 1 : 2) << 30;
        comps[nc++] = (sdc_autofit_component){m, bytes, bytes / 4 < cap ? bytes / 4 : cap};
    }
    sdc_autofit_device devs[SDC_MAX_DEVICES];
    int nd = sdc_devices_count(), cpu_index = -1;
    for (int i = 0; i < nd && i < SDC_MAX_DEVICES; i++) {
        const sdc_device *d = sdc_devices_get(i);
        uint64_t free_b = d->ops && d->ops->free_bytes ? d->ops->free_bytes(d) : d->total_bytes;
        devs[i] =
            (sdc_autofit_device){d->index, d->name, d->kind == SDC_DEVICE_CPU, free_b,
                                 d->budget_bytes ? (double)d->budget_bytes / 1073741824.0 : 0.0};
        if (cpu_index < 0 && d->kind == SDC_DEVICE_CPU) cpu_index = d->index;
    }
    sdc_autofit_plan plan;
    sdc_status s = sdc_autofit_make_plan(comps, nc, devs, nd, cpu_index, &plan);
    if (s != SDC_OK) return s;
    ctx->placement = plan.placement;
    snprintf(ctx->autofit_plan, sizeof ctx->autofit_plan, "%s", plan.text);
    if (plan.n_on_cpu)
        SDC_LOGW("%s", plan.text);
    else
        SDC_LOGI("%s", plan.text);
    return SDC_OK;
}

/* The backend of a device, created on first use; -t sets the threads of a lone device. */
static sdc_status backend_for(sdc_context *ctx, int device, int n_threads, sdc_backend **out) {
    const sdc_device *d = sdc_devices_get(device);
    if (!d) return sdc_fail(SDC_ERR_INTERNAL, "placement: no device %d", device);
    for (int i = 0; i < ctx->n_backends; i++)
        if (ctx->backend_device[i] == device) {
            *out = ctx->backends[i];
            return SDC_OK;
        }
    if (ctx->n_backends == SDC_CTX_MAX_BACKENDS)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "placement: more than %d devices in use",
                        SDC_CTX_MAX_BACKENDS);
    sdc_backend *be = sdc_devices_count() == 1 && n_threads > 0
                          ? sdc_device_create_backend_threads(d, n_threads)
                          : sdc_device_create_backend(d);
    if (!be) return sdc_fail(SDC_ERR_NO_MEMORY, "cannot create a backend on %s", d->name);
    ctx->backend_device[ctx->n_backends] = device;
    ctx->backends[ctx->n_backends++] = be;
    *out = be;
    return SDC_OK;
}

/* A module split across devices (a&b) runs on a split backend over theirs; it is owned
 * with the others (device -1: never shared). */
static sdc_status split_backend_for(sdc_context *ctx, sdc_module m, int n_threads,
                                    sdc_backend **out) {
    const sdc_module_place *pl = &ctx->placement.module[m];
    sdc_backend *kids[SDC_MAX_SPLIT];
    for (int i = 0; i < pl->n_devices; i++) {
        sdc_status s = backend_for(ctx, pl->device[i], n_threads, &kids[i]);
        if (s != SDC_OK) return s;
    }
    if (ctx->n_backends == SDC_CTX_MAX_BACKENDS)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "placement: more than %d backends in use",
                        SDC_CTX_MAX_BACKENDS);
    sdc_backend *be = sdc_split_backend_create(sdc_module_name(m), kids, pl->device, pl->n_devices);
    if (!be) return sdc_fail_prefix(SDC_ERR_UNSUPPORTED, "placement: ");
    ctx->backend_device[ctx->n_backends] = -1;
    ctx->backends[ctx->n_backends++] = be;
    *out = be;
    return SDC_OK;
}

static sdc_status create_backends(sdc_context *ctx, int n_threads) {
    const sdc_module mods[3] = {SDC_MODULE_TE, SDC_MODULE_DIFFUSION, SDC_MODULE_VAE};
    sdc_stage_env *envs[3] = {&ctx->env_cond, &ctx->env_diffusion, &ctx->env_first_stage};
    for (int i = 0; i < 3; i++) {
        const sdc_module_place *pl = &ctx->placement.module[mods[i]];
        sdc_status s = pl->n_devices > 1
                           ? split_backend_for(ctx, mods[i], n_threads, &envs[i]->backend)
                           : backend_for(ctx, pl->device[0], n_threads, &envs[i]->backend);
        if (s != SDC_OK) return s;
    }
    sdc_context_sync_envs(ctx);
    return SDC_OK;
}

/* --split-mode on the modules that are split (the others have nothing to slice). */
static sdc_status apply_split_mode(sdc_context *ctx, const char *spec) {
    sdc_split_mode modes[SDC_MODULE_COUNT];
    sdc_status s = sdc_split_mode_parse(spec, modes);
    if (s != SDC_OK) return s;
    sdc_split_backend_set_mode(ctx->env_cond.backend, modes[SDC_MODULE_TE]);
    sdc_split_backend_set_mode(ctx->env_diffusion.backend, modes[SDC_MODULE_DIFFUSION]);
    return SDC_OK;
}

void sdc_context_sync_envs(sdc_context *ctx) {
    sdc_stage_env *envs[] = {&ctx->env_cond, &ctx->env_diffusion, &ctx->env_first_stage};
    for (int i = 0; i < 3; i++) {
        envs[i]->eval_cb = ctx->eval_cb;
        envs[i]->eval_user = ctx->eval_user;
    }
}

sdc_status sdc_context_create(const sdc_context_params *params, sdc_context **out) {
    if (!out) return sdc_fail(SDC_ERR_INVALID_ARG, "context: NULL output");
    *out = NULL;
    if (!params) return sdc_fail(SDC_ERR_INVALID_ARG, "context: NULL parameters");
    sdc_cpu_quant_init(); /* weights are dequantised while loading, before the backend exists */
    sdc_context_params p;
    sdc_status s = copy_params(params, &p);
    if (s != SDC_OK) return s;
    sdc_demo_model demo; /* -m demo: the shipped model's files (demo_model.c) */
    if (sdc_is_demo_model_name(p.model_path)) {
        if ((s = sdc_demo_model_find(p.model_path, &demo)) != SDC_OK) return s;
        bool pair = demo.diffusion_model_path[0] != '\0';
        p.model_path = pair ? NULL : demo.model_path;
        if (pair) p.diffusion_model_path = demo.diffusion_model_path;
        if (pair && !p.t5xxl_path) p.t5xxl_path = demo.t5xxl_path;
    }
    if (!p.model_path && !p.diffusion_model_path)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "no model given: pass -m (full checkpoint) or --diffusion-model");
    sdc_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return sdc_fail(SDC_ERR_NO_MEMORY, "context: out of memory");
    int threads_asked = p.n_threads;
    ctx->n_threads = clamp_threads(p.n_threads);
    p.n_threads = ctx->n_threads;
    if (p.max_vram && *p.max_vram && (s = sdc_devices_apply_max_vram(p.max_vram)) != SDC_OK)
        goto fail;
    if (!p.auto_fit && (s = sdc_placement_parse(&p, &ctx->placement)) != SDC_OK) goto fail;
    ctx->flow_shift = p.flow_shift;
    sdc_model_args margs;
    if ((s = sdc_model_args_parse(p.model_args, &margs)) != SDC_OK) goto fail;
    if ((s = open_files(ctx, &p)) != SDC_OK) goto fail;
    if ((s = detect_family(ctx)) != SDC_OK) goto fail;
    if (p.auto_fit && (s = auto_fit(ctx, &p)) != SDC_OK) goto fail;
    sdc_family_load_fn load = sdc_family_loader(ctx->family);
    if ((s = check_unused_components(&p, ctx->family_desc)) != SDC_OK ||
        (s = check_options(&p, ctx->family_desc, &ctx->placement.module[SDC_MODULE_DIFFUSION])) !=
            SDC_OK)
        goto fail;
    sdc_convert_spill spill = {tensor_on_disk, &ctx->placement};
    /* --type / --tensor-type-rules: the loaded weights are converted into our own memory,
     * dropping each source tensor's file pages once read (release_pages only ever drops
     * file-mapped pages, never converted data) */
    if ((s = sdc_convert_loaded_weights(ctx->weights, p.weight_type, p.tensor_type_rules, p.imatrix,
                                        p.n_threads, &spill, &ctx->converted)) != SDC_OK)
        goto fail;
    if (margs.qwen_image_zero_cond_t && ctx->family != SDC_FAMILY_QWEN_IMAGE)
        SDC_LOGW("--model-args: qwen_image_zero_cond_t applies to Qwen-Image, not %s; ignored",
                 sdc_model_family_name(ctx->family));
    sdc_family_load_args la = {
        .weights = ctx->weights, .params = &p, .model_args = &margs, .t5_file = ctx->t5_file};
    if ((s = load(&la, &ctx->m)) != SDC_OK) goto fail;
    if ((s = create_backends(ctx, threads_asked > 0 ? ctx->n_threads : -1)) != SDC_OK) goto fail;
    if ((s = apply_split_mode(ctx, p.split_mode)) != SDC_OK) goto fail;
    log_loaded(ctx);
    *out = ctx;
    return SDC_OK;
fail:
    sdc_context_free(ctx);
    return s;
}

void sdc_context_free(sdc_context *ctx) {
    if (!ctx) return;
    /* newest first: a split backend's buffers come from the device backends before it */
    for (int i = ctx->n_backends - 1; i >= 0; i--) sdc_backend_free(ctx->backends[i]);
    if (ctx->m.free_state) ctx->m.free_state(ctx->m.state);
    sdc_loader_free(ctx->weights);
    sdc_converted_weights_free(ctx->converted);
    free(ctx);
}

void sdc_cancel(sdc_context *ctx) {
    if (ctx) atomic_store(&ctx->cancel, 1);
}

const char *sdc_context_model_name(const sdc_context *ctx) {
    return ctx ? ctx->model_name : "";
}
const char *sdc_context_diffusion_model_name(const sdc_context *ctx) {
    return ctx ? ctx->diffusion_model_name : "";
}
const char *sdc_context_t5xxl_name(const sdc_context *ctx) {
    return ctx ? ctx->t5xxl_name : "";
}

int sdc_context_weight_type(const sdc_context *ctx) {
    return ctx ? ctx->weight_type : -1;
}
float sdc_context_flow_shift(const sdc_context *ctx) {
    return ctx ? ctx->flow_shift : NAN;
}

const char *sdc_context_sampler_name(const sdc_context *ctx, const sdc_generate_params *p) {
    if (p && p->sampling_method && *p->sampling_method) return p->sampling_method;
    return sdc_sample_method_name(
        sdc_default_sample_method(ctx ? ctx->family : SDC_FAMILY_MINIT2I));
}

const char *sdc_context_scheduler_name(const sdc_context *ctx, const sdc_generate_params *p) {
    if (p && p->scheduler && *p->scheduler) return p->scheduler;
    sdc_model_family f = ctx ? ctx->family : SDC_FAMILY_MINIT2I;
    sdc_sample_method m = sdc_default_sample_method(f);
    if (p && p->sampling_method) sdc_sample_method_from_name(p->sampling_method, &m);
    sdc_prediction pred = ctx ? ctx->m.diffusion.prediction : SDC_PRED_MINIT2I_FLOW;
    return sdc_sched_name(sdc_default_scheduler(f, pred, m));
}
