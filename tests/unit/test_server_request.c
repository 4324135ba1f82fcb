/* sdc-server request parsing (tools/server/request.c, base64.c): RFC 4648 base64 test
 * vectors, each API family's fields against the values written into the request, the
 * A1111 label tables, sd_cpp_extra_args, multipart edits, image resizing against a
 * double-precision bilinear reference, the 400 cases, and issue 15's rules (prompt limit,
 * the model's size step, stream refused, OpenAI RGBA masks against 255 - alpha). */
#include "test_util.h"

#include <stdint.h>

#include "base64.h"
#include "png_encode.h"
#include "request.h"

static sdc_srv_defaults g_d;

static int parse(sdc_srv_api api, const char *body, sdc_srv_request *r, char *err) {
    return sdc_srv_parse_json(api, body, strlen(body), &g_d, r, err, 256);
}

/* A PNG of w x h with pixel (x, y, c) = (x * 40 + y * 25 + c * 60) % 256, via our encoder. */
static uint8_t *make_png(int w, int h, size_t *size, uint8_t **pixels) {
    uint8_t *px = malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                px[(y * w + x) * 3 + c] = (uint8_t)((x * 40 + y * 25 + c * 60) % 256);
    sdc_image img = {(uint32_t)w, (uint32_t)h, 3, px, 0};
    uint8_t *png = sdc_srv_png_encode(&img, "Steps: 1", size);
    *pixels = px;
    return png;
}

static void test_base64(void) {
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const coded[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                        "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    int bad = 0;
    for (int i = 0; i < 7; i++) {
        char *e = sdc_srv_base64_encode((const uint8_t *)plain[i], strlen(plain[i]));
        size_t n = 0;
        uint8_t *d = sdc_srv_base64_decode(coded[i], strlen(coded[i]), &n);
        if (!e || strcmp(e, coded[i]) || !d || n != strlen(plain[i]) || memcmp(d, plain[i], n))
            bad++;
        free(e);
        free(d);
    }
    CHECK(bad == 0, "RFC 4648 vectors: %d of 7 wrong", bad);
    size_t n = 0;
    uint8_t *d = sdc_srv_base64_decode("data:image/png;base64,Zm9v\nYmE", 30, &n);
    CHECK(d && n == 5 && !memcmp(d, "fooba", 5), "data URL, newline, no padding");
    free(d);
    d = sdc_srv_base64_decode("Zm9v!", 5, &n);
    CHECK(!d, "a stray '!' is rejected");
    d = sdc_srv_base64_decode("Zg==Zg", 6, &n);
    CHECK(!d, "data after padding is rejected");
    d = sdc_srv_base64_decode("Z", 1, &n);
    CHECK(!d, "a lone sextet is rejected");
    printf("base64: 7 RFC 4648 vectors and 4 edge cases compared\n");
}

static void test_sdcpp(void) {
    sdc_srv_request r;
    char err[256];
    int rc =
        parse(SDC_SRV_API_SDCPP,
              "{\"prompt\":\"a cat\",\"negative_prompt\":\"blur\",\"width\":64,\"height\":32,"
              "\"seed\":-7,\"batch_count\":3,\"strength\":0.5,\"sample_params\":{\"scheduler\":"
              "\"normal\",\"sample_method\":\"dpm++2m\",\"sample_steps\":9,\"eta\":0.25,"
              "\"guidance\":{\"txt_cfg\":3.5}}}",
              &r, err);
    CHECK(rc == 0, "sdcpp basic: %d %s", rc, err);
    CHECK(!strcmp(r.prompt, "a cat") && !strcmp(r.negative_prompt, "blur"), "prompts");
    CHECK(r.width == 64 && r.height == 32 && r.seed == -7 && r.batch_count == 3,
          "sizes/seed/batch");
    CHECK(r.steps == 9 && r.cfg_scale == 3.5f && r.eta == 0.25f && r.strength == 0.5f,
          "sampling numbers");
    CHECK(!strcmp(r.sampler, "dpm++2m") && !strcmp(r.scheduler, "discrete"), "names: %s %s",
          r.sampler, r.scheduler);
    sdc_srv_request_free(&r);

    rc = parse(SDC_SRV_API_SDCPP,
               "{\"sample_params\":{\"sample_steps\":9,\"custom_sigmas\":[1,0.5,0]}}", &r, err);
    CHECK(rc == 0 && r.n_sigmas == 3 && r.sigmas[1] == 0.5f && r.steps == 2,
          "custom sigmas set the steps: %d %s", rc, err);
    sdc_srv_request_free(&r);

    rc = parse(SDC_SRV_API_SDCPP, "{}", &r, err);
    CHECK(rc == 0 && r.width == g_d.width && r.steps == g_d.steps && r.seed == g_d.seed &&
              r.cfg_scale == g_d.cfg_scale && isnan(r.eta),
          "empty object takes the server defaults");
    sdc_srv_request_free(&r);

    static const char *const bad[] = {
        "",
        "{",
        "[]",
        "{\"width\":\"64\"}",
        "{\"width\":64.5}",
        "{\"width\":70}",
        "{\"width\":0}",
        "{\"height\":8192}",
        "{\"seed\":\"1\"}",
        "{\"sample_params\":{\"sample_steps\":0}}",
        "{\"sample_params\":{\"sample_steps\":151}}",
        "{\"sample_params\":{\"sample_method\":\"nope\"}}",
        "{\"sample_params\":[]}",
        "{\"sample_params\":{\"custom_sigmas\":[1]}}",
        "{\"sample_params\":{\"custom_sigmas\":[1,\"0\"]}}",
        "{\"sample_params\":{\"custom_sigmas\":{}}}",
        "{\"batch_count\":9}",
        "{\"strength\":0}",
        "{\"strength\":1.5}",
        "{\"lora\":[{\"path\":\"x\"}]}",
        "{\"hires\":{\"enabled\":true}}",
        "{\"output_format\":\"webp\"}",
        "{\"init_image\":\"@@@\"}",
        "{\"init_image\":\"Zm9vYmFy\"}",
        "{\"mask_image\":\"Zm9vYmFy\"}",
        "{\"prompt\":\"x<sd_cpp_extra_args>{}</sd_cpp_extra_args>\"}",
    };
    int wrong = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = parse(SDC_SRV_API_SDCPP, bad[i], &r, err);
        if (rc != 400 || !err[0]) {
            wrong++;
            fprintf(stderr, "  expected 400 for %s, got %d\n", bad[i], rc);
        }
        sdc_srv_request_free(&r);
    }
    CHECK(wrong == 0, "%d of %zu invalid sdcpp bodies not refused", wrong,
          sizeof bad / sizeof bad[0]);
    printf("sdcpp: fields, defaults and %zu invalid bodies checked\n", sizeof bad / sizeof bad[0]);
}

static void test_openai_and_extra(void) {
    sdc_srv_request r;
    char err[256];
    int rc = parse(SDC_SRV_API_OPENAI_GENERATE,
                   "{\"prompt\":\"a <sd_cpp_extra_args>{\\\"seed\\\":5,\\\"sample_params\\\":"
                   "{\\\"sample_steps\\\":3}}</sd_cpp_extra_args>cat\",\"n\":2,\"size\":\"48x64\","
                   "\"model\":\"whatever\",\"quality\":\"hd\"}",
                   &r, err);
    CHECK(rc == 0, "openai generate: %d %s", rc, err);
    CHECK(!strcmp(r.prompt, "a cat") && r.seed == 5 && r.steps == 3,
          "extra args applied, cut: '%s'", r.prompt);
    CHECK(r.batch_count == 2 && r.width == 48 && r.height == 64, "n and size");
    sdc_srv_request_free(&r);
    static const char *const bad[] = {
        "{\"n\":1}",
        "{\"prompt\":1}",
        "{\"prompt\":\"a\",\"size\":\"48*64\"}",
        "{\"prompt\":\"a\",\"size\":\"x64\"}",
        "{\"prompt\":\"a\",\"output_format\":\"jpeg\"}",
        "{\"prompt\":\"a\",\"response_format\":\"url\"}",
        "{\"prompt\":\"a\",\"n\":0}",
        "{\"prompt\":\"a<sd_cpp_extra_args>{\"}",
        "{\"prompt\":\"a<sd_cpp_extra_args>{bad}</sd_cpp_extra_args>\"}",
    };
    int wrong = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = parse(SDC_SRV_API_OPENAI_GENERATE, bad[i], &r, err);
        if (rc != 400) {
            wrong++;
            fprintf(stderr, "  expected 400 for %s, got %d\n", bad[i], rc);
        }
        sdc_srv_request_free(&r);
    }
    CHECK(wrong == 0, "%d invalid OpenAI bodies not refused", wrong);
}

static void test_sdapi_names(void) {
    const char *sched = NULL;
    CHECK(!strcmp(sdc_srv_sampler_from_label("Euler a", &sched), "euler_a"), "Euler a");
    CHECK(!strcmp(sdc_srv_sampler_from_label("k_dpmpp_2m", &sched), "dpm++2m"), "k_dpmpp_2m");
    sched = NULL;
    CHECK(!strcmp(sdc_srv_sampler_from_label("DPM++ 2M Karras", &sched), "dpm++2m") && sched &&
              !strcmp(sched, "karras"),
          "DPM++ 2M Karras");
    CHECK(!strcmp(sdc_srv_sampler_from_label("DDIM", NULL), "ddim_trailing"), "DDIM");
    CHECK(sdc_srv_sampler_from_label("nope", NULL) == NULL, "unknown sampler");
    CHECK(!strcmp(sdc_srv_scheduler_from_label("SGM Uniform"), "sgm_uniform"), "SGM Uniform");
    CHECK(!strcmp(sdc_srv_scheduler_from_label("Automatic"), ""), "Automatic");
    CHECK(!strcmp(sdc_srv_scheduler_from_label("Align Your Steps"), "ays"), "AYS");
    CHECK(sdc_srv_scheduler_from_label("nope") == NULL, "unknown scheduler");

    sdc_srv_request r;
    char err[256];
    int rc =
        parse(SDC_SRV_API_SDAPI_TXT2IMG,
              "{\"prompt\":\"p\",\"negative_prompt\":\"n\",\"width\":48,\"height\":32,\"steps\":2,"
              "\"cfg_scale\":4.5,\"seed\":9,\"batch_size\":2,\"n_iter\":3,\"sampler_name\":"
              "\"DPM++ 2M Karras\",\"scheduler\":\"Automatic\",\"denoising_strength\":0.3}",
              &r, err);
    CHECK(rc == 0 && r.batch_count == 6 && r.steps == 2 && r.cfg_scale == 4.5f && r.seed == 9 &&
              r.width == 48 && !strcmp(r.sampler, "dpm++2m") && !strcmp(r.scheduler, "karras") &&
              r.strength == g_d.strength,
          "sdapi txt2img fields (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDAPI_TXT2IMG, "{\"prompt\":\"\"}", &r, err);
    CHECK(rc == 400, "sdapi: empty prompt refused");
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDAPI_TXT2IMG, "{\"prompt\":\"a\",\"enable_hr\":true}", &r, err);
    CHECK(rc == 400, "sdapi: highres fix refused");
    sdc_srv_request_free(&r);
}

/* Issue 11: the sampler and scheduler names A1111 clients send, mapped as sd.cpp's server
 * (examples/server/routes_sdapi.cpp) and A1111's modules/sd_schedulers.py define them;
 * names sdc lacks are a 400 that lists the known ones; clip skip and the checkpoint of
 * override_settings. */
static void test_sdapi_sd(void) {
    static const struct {
        const char *label, *sampler, *scheduler; /* scheduler NULL: the label names none */
    } samplers[] = {
        {"Euler a", "euler_a", NULL},
        {"euler A", "euler_a", NULL},
        {"k_euler_a", "euler_a", NULL},
        {"Euler", "euler", NULL},
        {"Heun", "heun", NULL},
        {"DPM2", "dpm2", NULL},
        {"DPM++ 2S a", "dpm++2s_a", NULL},
        {"DPM++ 2M", "dpm++2m", NULL},
        {"DPM++ 2M Karras", "dpm++2m", "karras"},
        {"dpm++_2m_karras", "dpm++2m", "karras"},
        {"DPM++ 2M SDE", "dpm++2m_sde", NULL},
        {"DPM++ 2M SDE Karras", "dpm++2m_sde", "karras"},
        {"DPM++ 2M SDE Exponential", "dpm++2m_sde", "exponential"},
        {"DPM++ 2M SDE GPU", "dpm++2m_sde_bt", NULL},
        {"LCM", "lcm", NULL},
        {"DDIM", "ddim_trailing", NULL},
        {"LMS", "lms", NULL},
        {"LMS Karras", "lms", "karras"},
        {"k_euler_cfg_pp", "euler_cfg_pp", NULL},
        {"euler_a_cfg_pp", "euler_a_cfg_pp", NULL},
        {"res multistep", "res_multistep", NULL},
        {"dpm++2m", "dpm++2m", NULL}, /* sd.cpp's own names pass as they are */
    };
    int wrong = 0;
    for (size_t i = 0; i < sizeof samplers / sizeof samplers[0]; i++) {
        const char *sched = NULL;
        const char *got = sdc_srv_sampler_from_label(samplers[i].label, &sched);
        bool ok = got && !strcmp(got, samplers[i].sampler) &&
                  (samplers[i].scheduler ? sched && !strcmp(sched, samplers[i].scheduler)
                                         : sched == NULL);
        if (!ok) {
            wrong++;
            fprintf(stderr, "  sampler '%s' -> %s / %s\n", samplers[i].label, got ? got : "NULL",
                    sched ? sched : "NULL");
        }
    }
    CHECK(wrong == 0, "%d of %zu A1111 sampler labels mapped wrongly", wrong,
          sizeof samplers / sizeof samplers[0]);
    static const char *const no_sampler[] = {"DPM++ SDE", "UniPC",        "PLMS",    "DPM2 a",
                                             "DPM fast",  "DPM adaptive", "Restart", ""};
    wrong = 0;
    for (size_t i = 0; i < sizeof no_sampler / sizeof no_sampler[0]; i++)
        if (sdc_srv_sampler_from_label(no_sampler[i], NULL)) wrong++;
    CHECK(wrong == 0, "%d samplers sdc lacks were mapped to another", wrong);
    static const struct {
        const char *label, *name;
    } scheds[] = {
        {"Automatic", ""},
        {"Uniform", "discrete"},
        {"Normal", "discrete"},
        {"normal", "discrete"},
        {"Karras", "karras"},
        {"Exponential", "exponential"},
        {"SGM Uniform", "sgm_uniform"},
        {"sgm_uniform", "sgm_uniform"},
        {"Simple", "simple"},
        {"DDIM", "simple"},
        {"Beta", "beta"},
        {"KL Optimal", "kl_optimal"},
        {"Align Your Steps", "ays"},
        {"Align Your Steps GITS", "gits"},
        {"lcm", "lcm"},
    };
    wrong = 0;
    for (size_t i = 0; i < sizeof scheds / sizeof scheds[0]; i++) {
        const char *got = sdc_srv_scheduler_from_label(scheds[i].label);
        if (!got || strcmp(got, scheds[i].name)) {
            wrong++;
            fprintf(stderr, "  scheduler '%s' -> %s\n", scheds[i].label, got ? got : "NULL");
        }
    }
    CHECK(wrong == 0, "%d of %zu A1111 scheduler labels mapped wrongly", wrong,
          sizeof scheds / sizeof scheds[0]);
    CHECK(!sdc_srv_scheduler_from_label("Turbo") &&
              !sdc_srv_scheduler_from_label("Polyexponential"),
          "schedulers sdc lacks are unknown");
    /* every listed label maps to a name the library knows */
    const char *label, *name, *sched;
    size_t n_labels = 0;
    wrong = 0;
    for (; sdc_srv_sampler_label(n_labels, &label, &name, &sched); n_labels++) {
        const char *s2 = NULL, *got = sdc_srv_sampler_from_label(label, &s2);
        if (!got || strcmp(got, name)) wrong++;
    }
    for (size_t k = 0; sdc_srv_scheduler_label(k, &label, &name); k++, n_labels++) {
        const char *got = sdc_srv_scheduler_from_label(label);
        if (!got || strcmp(got, name)) wrong++;
    }
    CHECK(wrong == 0, "%d of %zu listed labels do not map to their entry", wrong, n_labels);

    /* unknown names: 400 naming the value and listing the known names */
    sdc_srv_request r;
    char err[1024];
    const char *body = "{\"prompt\":\"p\",\"sampler_name\":\"UniPC\"}";
    int rc = sdc_srv_parse_json(SDC_SRV_API_SDAPI_TXT2IMG, body, strlen(body), &g_d, &r, err,
                                sizeof err);
    CHECK(rc == 400 && strstr(err, "'UniPC'") && strstr(err, "euler_a") && strstr(err, "lms"),
          "unknown sampler: 400 with the known list (%d: %s)", rc, err);
    sdc_srv_request_free(&r);
    body = "{\"prompt\":\"p\",\"scheduler\":\"Turbo\"}";
    rc = sdc_srv_parse_json(SDC_SRV_API_SDAPI_TXT2IMG, body, strlen(body), &g_d, &r, err,
                            sizeof err);
    CHECK(rc == 400 && strstr(err, "'Turbo'") && strstr(err, "karras") &&
              strstr(err, "sgm_uniform"),
          "unknown scheduler: 400 with the known list (%d: %s)", rc, err);
    sdc_srv_request_free(&r);
    body = "{\"prompt\":\"p\",\"sample_params\":{\"sample_method\":\"Euler a\"}}";
    rc = sdc_srv_parse_json(SDC_SRV_API_SDCPP, body, strlen(body), &g_d, &r, err, sizeof err);
    CHECK(rc == 400 && strstr(err, "euler_a"), "sdcpp takes sd.cpp names only (%d: %s)", rc, err);
    sdc_srv_request_free(&r);

    /* "Scheduler" field wins over the label's; "Automatic" keeps the label's */
    rc = parse(SDC_SRV_API_SDAPI_TXT2IMG,
               "{\"prompt\":\"p\",\"sampler_name\":\"DPM++ 2M Karras\",\"scheduler\":\"SGM "
               "Uniform\"}",
               &r, err);
    CHECK(rc == 0 && !strcmp(r.sampler, "dpm++2m") && !strcmp(r.scheduler, "sgm_uniform"),
          "explicit scheduler beats the label's (%s %s)", r.sampler, r.scheduler);
    sdc_srv_request_free(&r);

    /* clip skip: the field, and override_settings.CLIP_stop_at_last_layers (wins) */
    rc = parse(SDC_SRV_API_SDAPI_TXT2IMG, "{\"prompt\":\"p\",\"clip_skip\":2}", &r, err);
    CHECK(rc == 0 && r.clip_skip == 2 && r.checkpoint[0] == '\0' && r.model_slot == 0,
          "clip_skip 2 (%d)", r.clip_skip);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDAPI_IMG2IMG,
               "{\"prompt\":\"p\",\"clip_skip\":3,\"init_images\":[\"iVBORw0KGgo=\"]}", &r, err);
    CHECK(rc == 400, "img2img: a broken init image is still refused (%d)", rc);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDAPI_TXT2IMG,
               "{\"prompt\":\"p\",\"clip_skip\":3,\"override_settings\":{\"CLIP_stop_at_last_"
               "layers\":2,\"sd_model_checkpoint\":\"sd1.safetensors [0123abcd]\",\"sd_vae\":"
               "\"Automatic\"},\"override_settings_restore_afterwards\":true}",
               &r, err);
    CHECK(rc == 0 && r.clip_skip == 2 && !strcmp(r.checkpoint, "sd1.safetensors [0123abcd]") &&
              r.model_slot == 0,
          "override_settings: clip skip %d, checkpoint '%s' (%s)", r.clip_skip, r.checkpoint, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDAPI_TXT2IMG,
               "{\"prompt\":\"p\",\"override_settings\":{\"sd_model_checkpoint\":5}}", &r, err);
    CHECK(rc == 400, "override_settings: a non-string checkpoint is refused (%d)", rc);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDAPI_TXT2IMG, "{\"prompt\":\"p\",\"override_settings\":[]}", &r, err);
    CHECK(rc == 400, "override_settings must be an object (%d)", rc);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDAPI_TXT2IMG, "{\"prompt\":\"p\",\"clip_skip\":99}", &r, err);
    CHECK(rc == 400, "clip_skip out of range refused (%d)", rc);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDCPP, "{\"prompt\":\"p\",\"clip_skip\":2}", &r, err);
    CHECK(rc == 0 && r.clip_skip == 2, "sdcpp clip_skip (%d)", r.clip_skip);
    sdc_srv_request_free(&r);
    /* LoRA tags stay in the prompt: the library applies them with --lora-model-dir */
    rc = parse(SDC_SRV_API_SDAPI_TXT2IMG, "{\"prompt\":\"a cat <lora:style:0.8>\"}", &r, err);
    CHECK(rc == 0 && !strcmp(r.prompt, "a cat <lora:style:0.8>"), "LoRA tag passes through");
    sdc_srv_request_free(&r);
    printf("sdapi SD names: %zu sampler and %zu scheduler labels, %zu listed labels, clip skip, "
           "override_settings checked\n",
           sizeof samplers / sizeof samplers[0], sizeof scheds / sizeof scheds[0], n_labels);
}

/* img2img: the init image is resized to the requested size; compare to a bilinear
 * reference in double precision (half-pixel centres, edge clamped). */
static void test_images(void) {
    size_t png_n = 0;
    uint8_t *px = NULL;
    uint8_t *png = make_png(5, 3, &png_n, &px);
    char *b64 = sdc_srv_base64_encode(png, png_n);
    size_t body_cap = strlen(b64) * 2 + 256;
    char *body = malloc(body_cap);
    snprintf(
        body, body_cap,
        "{\"prompt\":\"p\",\"init_images\":[\"%s\"],\"mask\":\"%s\",\"inpainting_mask_invert\":"
        "true,\"denoising_strength\":1.7,\"width\":16,\"height\":8}",
        b64, b64);
    sdc_srv_request r;
    char err[256];
    int rc = parse(SDC_SRV_API_SDAPI_IMG2IMG, body, &r, err);
    CHECK(rc == 0, "sdapi img2img: %d %s", rc, err);
    double max_err = 0, max_mask_err = 0;
    if (rc == 0) {
        CHECK(r.init_w == 16 && r.init_h == 8 && r.mask_w == 16 && r.mask_h == 8,
              "resized to 16x8");
        CHECK(r.strength == 1.0f, "denoising_strength clamped to 1 (got %g)", (double)r.strength);
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 16; x++)
                for (int c = 0; c < 3; c++) {
                    double fy = fmax(0, (y + 0.5) * 3 / 8 - 0.5),
                           fx = fmax(0, (x + 0.5) * 5 / 16 - 0.5);
                    int y0 = (int)fy, x0 = (int)fx, y1 = y0 + 1 < 3 ? y0 + 1 : 2,
                        x1 = x0 + 1 < 5 ? x0 + 1 : 4;
                    double wy = fy - y0, wx = fx - x0;
#define P(yy, xx) ((double)px[((yy)*5 + (xx)) * 3 + c])
                    double ref = (P(y0, x0) * (1 - wx) + P(y0, x1) * wx) * (1 - wy) +
                                 (P(y1, x0) * (1 - wx) + P(y1, x1) * wx) * wy;
#undef P
                    double got = r.init_rgb[(y * 16 + x) * 3 + c];
                    double mgot = r.mask_rgb[(y * 16 + x) * 3 + c];
                    max_err = fmax(max_err, fabs(got - ref));
                    max_mask_err = fmax(max_mask_err, fabs(mgot - (255 - got)));
                }
        CHECK(max_err <= 0.5 + 1e-9, "resize max error %g > 0.5 (rounding)", max_err);
        CHECK(max_mask_err == 0, "inverted mask: max error %g", max_mask_err);
    }
    printf("img2img resize 5x3 -> 16x8: max error vs bilinear reference %g, inverted mask %g\n",
           max_err, max_mask_err);
    sdc_srv_request_free(&r);

    /* without a size the init image's own size (snapped to 8) is used */
    snprintf(body, body_cap, "{\"prompt\":\"p\",\"image\":\"data:image/png;base64,%s\"}", b64);
    rc = parse(SDC_SRV_API_OPENAI_EDIT, body, &r, err);
    CHECK(rc == 400, "a 5x3 image snaps to 0x0: refused (%d %s)", rc, err);
    sdc_srv_request_free(&r);

    /* multipart: raw PNG bytes as files, text fields */
    const char *head =
        "--B0\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\na dog\r\n"
        "--B0\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\n2\r\n"
        "--B0\r\nContent-Disposition: form-data; name=\"size\"\r\n\r\n32x16\r\n"
        "--B0\r\nContent-Disposition: form-data; name=\"image[]\"; filename=\"a.png\"\r\n"
        "Content-Type: image/png\r\n\r\n";
    const char *tail = "\r\n--B0--\r\n";
    size_t mlen = strlen(head) + png_n + strlen(tail);
    char *mp = malloc(mlen);
    memcpy(mp, head, strlen(head));
    memcpy(mp + strlen(head), png, png_n);
    memcpy(mp + strlen(head) + png_n, tail, strlen(tail));
    rc = sdc_srv_parse_edit_multipart("multipart/form-data; boundary=\"B0\"", mp, mlen, &g_d, &r,
                                      err, sizeof err);
    CHECK(rc == 0 && !strcmp(r.prompt, "a dog") && r.batch_count == 2 && r.width == 32 &&
              r.height == 16 && r.init_w == 32 && r.init_h == 16 && !r.mask_rgb,
          "multipart edit (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    rc = sdc_srv_parse_edit_multipart("multipart/form-data; boundary=B0", mp, mlen - 10, &g_d, &r,
                                      err, sizeof err);
    CHECK(rc == 400, "truncated multipart refused");
    sdc_srv_request_free(&r);
    rc = sdc_srv_parse_edit_multipart("multipart/form-data", mp, mlen, &g_d, &r, err, sizeof err);
    CHECK(rc == 400, "multipart without boundary refused");
    sdc_srv_request_free(&r);
    free(mp);
    free(body);
    free(b64);
    free(png);
    free(px);
}

/* A w x h PNG; channels 4: RGB (x * 7 + c * 50) % 256 and alpha alpha_of(x, y). */
static uint8_t *make_rgba_png(int w, int h, int (*alpha_of)(int, int), size_t *size) {
    uint8_t *px = malloc((size_t)w * h * 4);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            for (int c = 0; c < 3; c++) px[(y * w + x) * 4 + c] = (uint8_t)((x * 7 + c * 50) % 256);
            px[(y * w + x) * 4 + 3] = (uint8_t)alpha_of(x, y);
        }
    sdc_image img = {(uint32_t)w, (uint32_t)h, 4, px, 0};
    void *out = NULL;
    if (sdc_image_encode(&img, SDC_IMAGE_PNG, 0, NULL, &out, size) != SDC_OK) out = NULL;
    free(px);
    return out;
}

static int alpha_ramp(int x, int y) {
    return x < 16 ? 0 : (x * 8 + y) % 256; /* left: transparent (edit); right: a ramp */
}
static int alpha_opaque(int x, int y) {
    (void)x, (void)y;
    return 255;
}

/* Mask pixels that differ from the OpenAI rule: 255 - alpha on every channel. */
static int mask_mismatches(const sdc_srv_request *r, int (*alpha_of)(int, int)) {
    if (!r->mask_rgb) return -1;
    int bad = 0;
    for (int y = 0; y < r->mask_h; y++)
        for (int x = 0; x < r->mask_w; x++)
            for (int c = 0; c < 3; c++)
                bad += r->mask_rgb[((size_t)y * r->mask_w + x) * 3 + c] != 255 - alpha_of(x, y);
    return bad;
}

/* One multipart edit body: prompt, an image file and optionally a mask file. */
static char *multipart(const uint8_t *img, size_t img_n, const uint8_t *mask, size_t mask_n,
                       const char *extra_field, size_t *len) {
    char head[512];
    snprintf(head, sizeof head,
             "--B1\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\na dog\r\n%s"
             "--B1\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\n"
             "Content-Type: image/png\r\n\r\n",
             extra_field ? extra_field : "");
    const char *mhead = "\r\n--B1\r\nContent-Disposition: form-data; name=\"mask\"; "
                        "filename=\"m.png\"\r\nContent-Type: image/png\r\n\r\n";
    const char *tail = "\r\n--B1--\r\n";
    size_t n = strlen(head) + img_n + (mask ? strlen(mhead) + mask_n : 0) + strlen(tail);
    char *b = malloc(n), *p = b;
    memcpy(p, head, strlen(head)), p += strlen(head);
    memcpy(p, img, img_n), p += img_n;
    if (mask)
        memcpy(p, mhead, strlen(mhead)), p += strlen(mhead), memcpy(p, mask, mask_n), p += mask_n;
    memcpy(p, tail, strlen(tail));
    *len = n;
    return b;
}

/* The rules of issue 15: prompt length, the model's size step at submit, stream refused,
 * OpenAI's RGBA masks (transparent = edit). */
static void test_issue15_rules(void) {
    sdc_srv_request r;
    char err[256];
    /* prompt length: SDC_SRV_MAX_PROMPT_BYTES passes, one byte more is a 400 naming it */
    size_t n = SDC_SRV_MAX_PROMPT_BYTES;
    char *body = malloc(n + 64);
    for (int extra = 0; extra <= 1; extra++) {
        for (int neg = 0; neg <= 1; neg++) {
            int k = snprintf(body, 64,
                             neg ? "{\"prompt\":\"a\",\"negative_prompt\":\"" : "{\"prompt\":\"");
            memset(body + k, 'a', n + (size_t)extra);
            strcpy(body + k + n + (size_t)extra, "\"}");
            int rc = parse(SDC_SRV_API_SDCPP, body, &r, err);
            if (extra)
                CHECK(rc == 400 && strstr(err, "65536"),
                      "%s of %zu bytes: 400 naming the limit (%d %s)",
                      neg ? "negative prompt" : "prompt", n + 1, rc, err);
            else
                CHECK(rc == 0, "%s of %zu bytes accepted (%d %s)",
                      neg ? "negative prompt" : "prompt", n, rc, err);
            sdc_srv_request_free(&r);
        }
    }
    free(body);
    /* the model's size step: 520 = 8 * 65 passes the 8 rule, not MiniT2I's 16 */
    g_d.size_step = 16;
    int rc = parse(SDC_SRV_API_SDCPP, "{\"width\":520,\"height\":512}", &r, err);
    CHECK(rc == 400 && strstr(err, "multiple of 16"), "width 520 with size step 16: 400 (%d %s)",
          rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDAPI_TXT2IMG, "{\"prompt\":\"a\",\"width\":512,\"height\":520}", &r,
               err);
    CHECK(rc == 400 && strstr(err, "multiple of 16"), "A1111 height 520: 400 (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDCPP, "{\"width\":528,\"height\":512}", &r, err);
    CHECK(rc == 0 && r.width == 528, "width 528 with size step 16 accepted (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    g_d.size_step = 8;
    rc = parse(SDC_SRV_API_SDCPP, "{\"width\":520,\"height\":512}", &r, err);
    CHECK(rc == 0, "width 520 with size step 8 accepted (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    /* stream */
    rc = parse(SDC_SRV_API_OPENAI_GENERATE, "{\"prompt\":\"a\",\"stream\":true}", &r, err);
    CHECK(rc == 400 && strstr(err, "'stream'"), "stream true: 400 (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_OPENAI_GENERATE, "{\"prompt\":\"a\",\"stream\":false}", &r, err);
    CHECK(rc == 0, "stream false accepted (%d %s)", rc, err);
    sdc_srv_request_free(&r);

    /* RGBA masks, 32x16: alpha 0 on the left half must become 255 (edit) */
    size_t img_n = 0, mask_n = 0, len = 0;
    uint8_t *px = NULL;
    uint8_t *img = make_png(32, 16, &img_n, &px);
    uint8_t *mask = make_rgba_png(32, 16, alpha_ramp, &mask_n);
    CHECK(img && mask, "test PNGs encoded");
    if (!img || !mask) return;
    char *mp = multipart(img, img_n, mask, mask_n, NULL, &len);
    rc = sdc_srv_parse_edit_multipart("multipart/form-data; boundary=B1", mp, len, &g_d, &r, err,
                                      sizeof err);
    int bad = rc == 0 ? mask_mismatches(&r, alpha_ramp) : -2;
    CHECK(bad == 0, "multipart RGBA mask = 255 - alpha: %d of %d values differ (%d %s)", bad,
          32 * 16 * 3, rc, err);
    sdc_srv_request_free(&r);
    free(mp);
    /* stream in a multipart edit */
    mp = multipart(img, img_n, mask, mask_n,
                   "--B1\r\nContent-Disposition: form-data; name=\"stream\"\r\n\r\ntrue\r\n", &len);
    rc = sdc_srv_parse_edit_multipart("multipart/form-data; boundary=B1", mp, len, &g_d, &r, err,
                                      sizeof err);
    CHECK(rc == 400 && strstr(err, "'stream'"), "multipart stream=true: 400 (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    free(mp);
    /* no mask: the image's own transparency is the mask */
    mp = multipart(mask, mask_n, NULL, 0, NULL, &len);
    rc = sdc_srv_parse_edit_multipart("multipart/form-data; boundary=B1", mp, len, &g_d, &r, err,
                                      sizeof err);
    bad = rc == 0 ? mask_mismatches(&r, alpha_ramp) : -2;
    CHECK(bad == 0 && r.init_rgb, "RGBA image without mask: mask from its alpha, %d differ (%d %s)",
          bad, rc, err);
    sdc_srv_request_free(&r);
    free(mp);
    /* an opaque RGBA image without mask: no mask at all (a plain img2img) */
    uint8_t *opaque = make_rgba_png(32, 16, alpha_opaque, &mask_n);
    mp = multipart(opaque, mask_n, NULL, 0, NULL, &len);
    rc = sdc_srv_parse_edit_multipart("multipart/form-data; boundary=B1", mp, len, &g_d, &r, err,
                                      sizeof err);
    CHECK(rc == 0 && !r.mask_rgb, "opaque RGBA image without mask: no mask (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    free(mp);
    free(opaque);
    /* JSON edit, base64 mask */
    char *ib = sdc_srv_base64_encode(img, img_n), *mb = sdc_srv_base64_encode(mask, mask_n);
    size_t jn = strlen(ib) + strlen(mb) + 64;
    char *json = malloc(jn);
    snprintf(json, jn, "{\"prompt\":\"a\",\"image\":\"%s\",\"mask\":\"%s\"}", ib, mb);
    rc = parse(SDC_SRV_API_OPENAI_EDIT, json, &r, err);
    bad = rc == 0 ? mask_mismatches(&r, alpha_ramp) : -2;
    CHECK(bad == 0, "JSON edit RGBA mask = 255 - alpha: %d differ (%d %s)", bad, rc, err);
    sdc_srv_request_free(&r);
    free(json);
    free(ib);
    free(mb);
    free(img);
    free(mask);
    free(px);
    printf("issue 15 rules: prompt limit %d, size step 16, stream, RGBA masks (multipart, "
           "JSON, image alpha) compared with 255 - alpha\n",
           SDC_SRV_MAX_PROMPT_BYTES);
}

int main(void) {
    sdc_srv_defaults_init(&g_d);
    g_d.width = 64;
    g_d.height = 64;
    g_d.steps = 4;
    g_d.seed = 11;
    test_base64();
    test_sdcpp();
    test_openai_and_extra();
    test_sdapi_names();
    test_sdapi_sd();
    test_images();
    test_issue15_rules();
    TEST_MAIN_END();
}
