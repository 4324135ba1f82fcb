/* diffusers folders through sdc_loader (io/diffusers_names.c). Data: tests/data/ckpt/
 * diffusers (a tiny random SD 1.x-shaped UNet + VAE written by diffusers' save_pretrained,
 * the UNet as the fp16 variant, the CLIP text encoder as a torch.save pytorch_model.bin)
 * and diffusers_ldm.safetensors: the same weights under their LDM names, as diffusers'
 * own convert_ldm_unet_checkpoint / convert_ldm_vae_checkpoint map them (see
 * tests/golden/gen_ckpt_cases.py); the same for a tiny SDXL-shaped folder (sdxl/,
 * sdxl_ldm.safetensors). Every tensor of a folder must appear under its LDM name with
 * identical bytes. */
#include "io/diffusers_names.h"
#include "io/model_loader.h"
#include "test_util.h"

#include <sys/stat.h>
#include <unistd.h>

#define DATA(name) SDC_SOURCE_DIR "/tests/data/ckpt/" name

/* Every tensor of the folder under its LDM name, bytes identical to the LDM file's. */
static sdc_loader *compare_folder(const char *folder, const char *ldm) {
    sdc_loader *got = NULL, *ref = NULL;
    sdc_loader_create(&got);
    sdc_loader_create(&ref);
    sdc_status s = sdc_loader_add_file(got, folder, NULL);
    CHECK(s == SDC_OK, "folder: %s", sdc_last_error());
    CHECK(sdc_loader_add_file(ref, ldm, NULL) == SDC_OK, "ref: %s", sdc_last_error());
    int n = sdc_loader_tensor_count(got), nref = sdc_loader_tensor_count(ref);
    CHECK(n == nref && n > 600, "folder has %d tensors, the LDM file %d", n, nref);
    int bad = 0, per[3] = {0};
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        const sdc_tensor *t = sdc_loader_tensor_at(got, i);
        const sdc_tensor *r = sdc_loader_find(ref, t->name);
        bool same = r && t->type == r->type;
        for (int d = 0; same && d < SDC_MAX_DIMS; d++) same = t->ne[d] == r->ne[d];
        size_t nb = sdc_tensor_nbytes(t);
        same = same && nb == sdc_tensor_nbytes(r) && memcmp(t->data, r->data, nb) == 0;
        CHECK(same, "tensor '%s' %s", t->name, r ? "differs from the LDM file" : "has no LDM twin");
        bad += !same;
        bytes += nb;
        per[strncmp(t->name, "model.diffusion_model.", 22) == 0 ? 0
            : strncmp(t->name, "first_stage_model.", 18) == 0   ? 1
                                                                : 2]++;
    }
    printf("%s: %d tensors (unet %d, vae %d, text encoders %d), %zu bytes compared with the "
           "LDM-named file, %d differ\n",
           folder, n, per[0], per[1], per[2], bytes, bad);
    sdc_loader_free(ref);
    return got;
}

static void check_folder(void) {
    sdc_loader *got = compare_folder(DATA("diffusers"), DATA("diffusers_ldm.safetensors"));
    CHECK(sdc_loader_find(got, "cond_stage_model.transformer.text_model.final_layer_norm.weight"),
          "text encoder under cond_stage_model.transformer.");
    CHECK(sdc_loader_file_format(got, 2) == SDC_FORMAT_CKPT, "text_encoder/pytorch_model.bin");
    const char *tok = sdc_loader_tokenizer_dir(got, 0);
    CHECK(tok && strstr(tok, "diffusers/tokenizer") && !strstr(tok, "tokenizer_2"),
          "tokenizer dir: %s", tok ? tok : "(null)");
    CHECK(sdc_loader_tokenizer_dir(got, 1) == NULL, "no tokenizer_2");
    sdc_loader_free(got);
}

/* SDXL: 3 levels with attention in 1-2, add_embedding -> label_emb, two text encoders
 * (the second with its projection) under conditioner.embedders.0/1. */
static void check_sdxl(void) {
    sdc_loader *got = compare_folder(DATA("sdxl"), DATA("sdxl_ldm.safetensors"));
    CHECK(sdc_loader_find(got, "model.diffusion_model.label_emb.0.0.weight") != NULL, "label_emb");
    CHECK(sdc_loader_find(got, "conditioner.embedders.1.transformer.text_projection.weight"),
          "text_projection of text_encoder_2");
    const char *t0 = sdc_loader_tokenizer_dir(got, 0), *t1 = sdc_loader_tokenizer_dir(got, 1);
    CHECK(t0 && t1 && strstr(t0, "sdxl/tokenizer") && strstr(t1, "sdxl/tokenizer_2"),
          "tokenizer dirs: %s %s", t0 ? t0 : "(null)", t1 ? t1 : "(null)");
    sdc_loader_free(got);
}

static void check_hint(void) {
    size_t len;
    unsigned char *js = t_read_file(DATA("diffusers/unet/config.json"), &len);
    CHECK(js != NULL, "read unet config");
    if (!js) return;
    sdc_unet_layout_hint h, d;
    sdc_unet_layout_hint_default(&d);
    memset(&h, 0x55, sizeof h);
    h.vae_levels = 4;
    CHECK(sdc_unet_layout_hint_from_config((const char *)js, len, "config.json", &h) == SDC_OK,
          "hint: %s", sdc_last_error());
    bool same = h.n_levels == 4 && h.mid_attn && !h.sdxl;
    for (int i = 0; i < 4; i++)
        same = same && h.layers_per_block[i] == 2 && h.down_attn[i] == d.down_attn[i] &&
               h.up_attn[i] == d.up_attn[i];
    CHECK(same, "the SD 1.x config gives the SD 1.x layout");
    CHECK(sdc_unet_layout_hint_from_config("[1]", 3, "bad.json", &h) != SDC_OK &&
              strstr(sdc_last_error(), "bad.json"),
          "a bad config is refused: %s", sdc_last_error());
    free(js);
}

/* Names outside the layout have no LDM name; SDXL's layout (3 levels, attention in
 * levels 1-2, text_time embedding) as its single-file checkpoints name the tensors. */
static void check_names(void) {
    char out[SDC_MAX_NAME];
    static const char *const unmapped[] = {
        "down_blocks.3.attentions.0.norm.weight",   /* SD 1.x level 3 has no attention */
        "down_blocks.3.downsamplers.0.conv.weight", /* nor a downsampler */
        "up_blocks.3.upsamplers.0.conv.weight",
        "down_blocks.0.resnets.2.conv1.weight",
        "class_embedding.linear_1.weight",
        "down_blocks.0.resnets.0.bogus.weight",
        "down_blocks.99999999999.resnets.0.conv1.weight"};
    for (size_t i = 0; i < sizeof unmapped / sizeof unmapped[0]; i++)
        CHECK(!sdc_diffusers_to_ldm("unet", unmapped[i], NULL, out, sizeof out),
              "unet '%s' mapped to '%s'", unmapped[i], out);
    CHECK(!sdc_diffusers_to_ldm("vae", "encoder.foo.weight", NULL, out, sizeof out), "vae foo");
    CHECK(!sdc_diffusers_to_ldm("scheduler", "x", NULL, out, sizeof out), "unknown component");
    CHECK(!sdc_diffusers_to_ldm("unet", "conv_in.weight", NULL, out, 8), "too small a buffer");
    /* transformers 5 saves CLIPTextModel without "text_model.", older versions with it */
    CHECK(sdc_diffusers_to_ldm("text_encoder", "embeddings.token_embedding.weight", NULL, out,
                               sizeof out) &&
              !strcmp(out,
                      "cond_stage_model.transformer.text_model.embeddings.token_embedding.weight"),
          "transformers 5 text encoder name: %s", out);
    CHECK(!sdc_diffusers_to_ldm("text_encoder", "logit_scale", NULL, out, sizeof out),
          "unknown text encoder tensor");

    sdc_unet_layout_hint x;
    sdc_unet_layout_hint_default(&x);
    x.n_levels = 3;
    for (int i = 0; i < 3; i++) {
        x.down_attn[i] = i > 0;
        x.up_attn[i] = i < 2;
    }
    x.sdxl = true;
    static const char *const pairs[][3] = {
        {"unet", "add_embedding.linear_1.weight", "model.diffusion_model.label_emb.0.0.weight"},
        {"unet", "add_embedding.linear_2.bias", "model.diffusion_model.label_emb.0.2.bias"},
        {"unet", "down_blocks.1.attentions.1.transformer_blocks.9.attn2.to_k.weight",
         "model.diffusion_model.input_blocks.5.1.transformer_blocks.9.attn2.to_k.weight"},
        {"unet", "down_blocks.1.downsamplers.0.conv.weight",
         "model.diffusion_model.input_blocks.6.0.op.weight"},
        {"unet", "down_blocks.2.resnets.0.conv_shortcut.weight",
         "model.diffusion_model.input_blocks.7.0.skip_connection.weight"},
        {"unet", "up_blocks.0.upsamplers.0.conv.weight",
         "model.diffusion_model.output_blocks.2.2.conv.weight"},
        {"unet", "up_blocks.1.upsamplers.0.conv.bias",
         "model.diffusion_model.output_blocks.5.2.conv.bias"},
        {"unet", "up_blocks.2.resnets.2.time_emb_proj.weight",
         "model.diffusion_model.output_blocks.8.0.emb_layers.1.weight"},
        {"unet", "mid_block.attentions.0.proj_out.weight",
         "model.diffusion_model.middle_block.1.proj_out.weight"},
        {"unet", "mid_block.resnets.1.norm2.weight",
         "model.diffusion_model.middle_block.2.out_layers.0.weight"},
        {"text_encoder", "text_model.encoder.layers.0.mlp.fc1.weight",
         "conditioner.embedders.0.transformer.text_model.encoder.layers.0.mlp.fc1.weight"},
        {"text_encoder_2", "text_projection.weight",
         "conditioner.embedders.1.transformer.text_projection.weight"},
        {"vae", "decoder.up_blocks.0.upsamplers.0.conv.weight",
         "first_stage_model.decoder.up.3.upsample.conv.weight"},
        {"vae", "encoder.mid_block.attentions.0.to_out.0.bias",
         "first_stage_model.encoder.mid.attn_1.proj_out.bias"},
        {"vae", "decoder.mid_block.attentions.0.query.weight",
         "first_stage_model.decoder.mid.attn_1.q.weight"},
    };
    int wrong = 0;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        bool ok = sdc_diffusers_to_ldm(pairs[i][0], pairs[i][1], &x, out, sizeof out);
        CHECK(ok && strcmp(out, pairs[i][2]) == 0, "%s '%s' -> '%s', expected '%s'", pairs[i][0],
              pairs[i][1], ok ? out : "(none)", pairs[i][2]);
        wrong += !(ok && strcmp(out, pairs[i][2]) == 0);
    }
    printf("SDXL layout: %zu names checked, %d wrong\n", sizeof pairs / sizeof pairs[0], wrong);
}

/* A folder whose second component has no weights: refused, nothing stays loaded. */
static void check_all_or_nothing(void) {
    char dir[] = "/tmp/sdc_diffusers_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/model_index.json", dir);
    FILE *f = fopen(a, "w");
    fputs("{}", f);
    fclose(f);
    snprintf(a, sizeof a, "%s/unet", dir);
    CHECK(symlink(SDC_SOURCE_DIR "/tests/data/ckpt/diffusers/unet", a) == 0, "symlink");
    snprintf(b, sizeof b, "%s/vae", dir);
    mkdir(b, 0700);
    sdc_loader *l = NULL;
    sdc_loader_create(&l);
    sdc_status s = sdc_loader_add_file(l, dir, NULL);
    CHECK(s != SDC_OK && strstr(sdc_last_error(), "/vae: no weights file"), "empty vae/: %s",
          sdc_last_error());
    CHECK(sdc_loader_file_count(l) == 0 && sdc_loader_tensor_count(l) == 0 &&
              !sdc_loader_find(l, "model.diffusion_model.conv_in.weight") &&
              !sdc_loader_find(l, "model.diffusion_model.input_blocks.0.0.weight"),
          "the unet loaded before the failure was dropped (%d files)", sdc_loader_file_count(l));
    /* the loader still works after the rollback */
    CHECK(sdc_loader_add_file(l, DATA("diffusers"), NULL) == SDC_OK, "reload: %s",
          sdc_last_error());
    CHECK(sdc_loader_find(l, "model.diffusion_model.input_blocks.0.0.weight") != NULL,
          "reload finds conv_in");
    CHECK(sdc_loader_add_file(l, DATA("diffusers"), "x.") != SDC_OK, "a folder with a prefix");
    sdc_loader_free(l);
    printf("all or nothing: a folder with an empty vae/ left the loader empty\n");
    rmdir(b);
    unlink(a);
    snprintf(a, sizeof a, "%s/model_index.json", dir);
    unlink(a);
    rmdir(dir);
}

int main(void) {
    check_folder();
    check_sdxl();
    check_hint();
    check_names();
    check_all_or_nothing();
    TEST_MAIN_END();
}
