/* sdc-server reference images and Qwen-Image-Layered's layer count (tools/server/request.c,
 * request_refs.c) as sd.cpp's server takes them: sdcpp `ref_images` / `qwen_image_layers`
 * (also inside sd_cpp_extra_args), A1111 `extra_images`, OpenAI edit `image[]` (JSON and
 * multipart). Decoded pixels against the encoded ones, resizes against sdc_image_resize,
 * the A1111 size taken from the first image, and the 400 cases (each names its field):
 * bad base64, undecodable images, wrong types, too many images, too many pixels. */
#include "test_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>

#include "base64.h"
#include "png_encode.h"
#include "request.h"

static sdc_srv_defaults g_d;

typedef struct test_img {
    int w, h;
    uint8_t *px;
    char *b64;
} test_img;

/* A w x h RGB PNG (pattern from k; uniform when k < 0) as base64. */
static test_img make_img(int w, int h, int k) {
    test_img t = {w, h, calloc((size_t)w * h * 3, 1), NULL};
    for (size_t i = 0; k >= 0 && i < (size_t)w * h * 3; i++) t.px[i] = (uint8_t)((i * 7 + k) % 251);
    sdc_image img = {(uint32_t)w, (uint32_t)h, 3, t.px, 0};
    size_t n = 0;
    uint8_t *png = sdc_srv_png_encode(&img, NULL, &n);
    t.b64 = png ? sdc_srv_base64_encode(png, n) : NULL;
    free(png);
    return t;
}

static void free_img(test_img *t) {
    free(t->px);
    free(t->b64);
}

/* printf into a malloc'd string */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    char *s = malloc((size_t)n + 1);
    va_start(ap, f);
    vsnprintf(s, (size_t)n + 1, f, ap);
    va_end(ap);
    return s;
}

static int parse(sdc_srv_api api, char *body, sdc_srv_request *r, char *err) {
    int rc = sdc_srv_parse_json(api, body, strlen(body), &g_d, r, err, 256);
    free(body);
    return rc;
}

static bool ref_is(const sdc_srv_request *r, int i, const test_img *t) {
    return i < r->n_refs && r->refs[i].w == t->w && r->refs[i].h == t->h &&
           !memcmp(r->refs[i].rgb, t->px, (size_t)t->w * t->h * 3);
}

/* ref i equals t resized to w x h by sdc_image_resize */
static bool ref_resized(const sdc_srv_request *r, int i, const test_img *t, int w, int h) {
    sdc_image in = {(uint32_t)t->w, (uint32_t)t->h, 3, t->px, 0}, out = {0};
    if (i >= r->n_refs || sdc_image_resize(&in, w, h, &out) != SDC_OK) return false;
    bool same = r->refs[i].w == w && r->refs[i].h == h &&
                !memcmp(r->refs[i].rgb, out.data, (size_t)w * h * 3);
    sdc_image_free(&out);
    return same;
}

static void test_sdcpp(const test_img *a, const test_img *b) {
    sdc_srv_request r;
    char err[256];
    int rc = parse(SDC_SRV_API_SDCPP,
                   fmt("{\"ref_images\":[\"%s\",\"data:image/png;base64,%s\"],"
                       "\"qwen_image_layers\":5}",
                       a->b64, b->b64),
                   &r, err);
    CHECK(rc == 0 && r.n_refs == 2 && ref_is(&r, 0, a) && ref_is(&r, 1, b) &&
              r.qwen_image_layers == 5 && !r.refs_from_edit,
          "sdcpp ref_images at their own sizes, layers 5 (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDCPP,
               fmt("{\"width\":32,\"height\":16,\"ref_images\":[\"%s\",\"%s\"]}", a->b64, b->b64),
               &r, err);
    CHECK(rc == 0 && ref_resized(&r, 0, a, 32, 16) && ref_resized(&r, 1, b, 32, 16),
          "sdcpp with width/height: refs cropped and resized to 32x16 (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDCPP, fmt("{\"ref_images\":null,\"auto_resize_ref_image\":true}"), &r,
               err);
    CHECK(rc == 0 && r.n_refs == 0 && r.qwen_image_layers == g_d.qwen_image_layers,
          "null: no refs, the default layer count %d (%d %s)", g_d.qwen_image_layers, rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_OPENAI_GENERATE,
               fmt("{\"prompt\":\"a<sd_cpp_extra_args>{\\\"ref_images\\\":[\\\"%s\\\"],"
                   "\\\"qwen_image_layers\\\":0}</sd_cpp_extra_args>\"}",
                   b->b64),
               &r, err);
    CHECK(rc == 0 && r.n_refs == 1 && ref_is(&r, 0, b) && r.qwen_image_layers == 0 &&
              !strcmp(r.prompt, "a"),
          "OpenAI generate with sd_cpp_extra_args ref_images (%d %s)", rc, err);
    sdc_srv_request_free(&r);
}

/* sd.cpp's per-request guidance and reference options: parsed (defaults NAN / off, nulls
 * as sd.cpp's defaults JSON sends them), and the reference flags appended to the server's
 * --ref-image-args in sd-cli's order. */
static void test_ref_options(void) {
    sdc_srv_request r;
    char err[256];
    int rc = parse(SDC_SRV_API_SDCPP, fmt("{\"prompt\":\"p\"}"), &r, err);
    CHECK(rc == 0 && isnan(r.img_cfg) && isnan(r.guidance) && isnan(r.flow_shift) &&
              !r.no_ref_resize && !r.increase_ref_index,
          "defaults: unset (%d %s)", rc, err);
    char *args = sdc_srv_request_ref_args(NULL, &r), *args2 = sdc_srv_request_ref_args("qwen", &r);
    CHECK(!args && args2 && !strcmp(args2, "qwen"), "no options: the server's args as they are");
    free(args);
    free(args2);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDCPP,
               fmt("{\"auto_resize_ref_image\":false,\"increase_ref_index\":true,"
                   "\"sample_params\":{\"flow_shift\":2.5,\"eta\":null,\"guidance\":{\"txt_cfg\":3,"
                   "\"img_cfg\":1.6,\"distilled_guidance\":4,\"slg\":{\"layers\":[7,8,9],"
                   "\"layer_start\":0.01,\"layer_end\":0.2,\"scale\":0}}}}"),
               &r, err);
    CHECK(rc == 0 && r.img_cfg == 1.6f && r.guidance == 4.0f && r.flow_shift == 2.5f &&
              r.cfg_scale == 3.0f && r.no_ref_resize && r.increase_ref_index,
          "sample_params.guidance img_cfg/distilled_guidance, flow_shift, both flags (%d %s)", rc,
          err);
    args = sdc_srv_request_ref_args("qwen,vlm_size=448", &r);
    args2 = sdc_srv_request_ref_args(NULL, &r);
    CHECK(args && !strcmp(args, "qwen,vlm_size=448,resize_before_vae=0,ref_index_mode=increase"),
          "flags after the server's args: %s", args ? args : "(null)");
    CHECK(args2 && !strcmp(args2, "resize_before_vae=0,ref_index_mode=increase"), "flags alone: %s",
          args2 ? args2 : "(null)");
    free(args);
    free(args2);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_OPENAI_GENERATE,
               fmt("{\"prompt\":\"a<sd_cpp_extra_args>{\\\"increase_ref_index\\\":true,"
                   "\\\"sample_params\\\":{\\\"guidance\\\":{\\\"img_cfg\\\":2}}}"
                   "</sd_cpp_extra_args>\"}"),
               &r, err);
    args = rc == 0 ? sdc_srv_request_ref_args("", &r) : NULL;
    CHECK(rc == 0 && r.img_cfg == 2.0f && !r.no_ref_resize && args &&
              !strcmp(args, "ref_index_mode=increase"),
          "OpenAI with sd_cpp_extra_args: img_cfg 2, increase only (%d %s %s)", rc, err,
          args ? args : "(null)");
    free(args);
    sdc_srv_request_free(&r);
}

static void test_sdapi(const test_img *a, const test_img *b) {
    sdc_srv_request r;
    char err[256];
    int rc =
        parse(SDC_SRV_API_SDAPI_TXT2IMG,
              fmt("{\"prompt\":\"p\",\"extra_images\":[\"%s\",\"%s\"]}", a->b64, b->b64), &r, err);
    CHECK(rc == 0 && r.width == a->w && r.height == a->h && ref_is(&r, 0, a) &&
              ref_resized(&r, 1, b, a->w, a->h) && !r.refs_from_edit,
          "txt2img extra_images without a size: the first sets %dx%d, the rest resized (%d %s)",
          a->w, a->h, rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDAPI_IMG2IMG,
               fmt("{\"prompt\":\"p\",\"init_images\":[\"%s\"],\"width\":16,\"height\":16,"
                   "\"extra_images\":[\"%s\"]}",
                   a->b64, b->b64),
               &r, err);
    CHECK(rc == 0 && r.n_refs == 1 && ref_resized(&r, 0, b, 16, 16) && r.init_w == 16,
          "img2img extra_images resized to the request's 16x16 (%d %s)", rc, err);
    sdc_srv_request_free(&r);
}

/* One multipart edit: prompt and the given image parts (raw bytes) */
static char *multipart(const test_img *const *imgs, int n, size_t *len) {
    size_t cap = 4096, at = 0;
    for (int i = 0; i < n; i++) cap += strlen(imgs[i]->b64);
    char *b = malloc(cap);
    at += (size_t)snprintf(b, cap,
                           "--B2\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\n"
                           "x\r\n");
    for (int i = 0; i < n; i++) {
        at += (size_t)snprintf(b + at, cap - at,
                               "--B2\r\nContent-Disposition: form-data; name=\"image[]\"; "
                               "filename=\"%d.png\"\r\n\r\n",
                               i);
        size_t m = 0;
        uint8_t *raw = sdc_srv_base64_decode(imgs[i]->b64, strlen(imgs[i]->b64), &m);
        if (!raw) { /* not base64: sent as it is (the undecodable case) */
            m = strlen(imgs[i]->b64);
            memcpy(b + at, imgs[i]->b64, m);
        } else {
            memcpy(b + at, raw, m);
        }
        free(raw);
        at += m;
        at += (size_t)snprintf(b + at, cap - at, "\r\n");
    }
    at += (size_t)snprintf(b + at, cap - at, "--B2--\r\n");
    *len = at;
    return b;
}

static void test_openai_edit(const test_img *a, const test_img *b) {
    sdc_srv_request r;
    char err[256];
    int rc = parse(SDC_SRV_API_OPENAI_EDIT,
                   fmt("{\"prompt\":\"p\",\"image\":[\"%s\",\"%s\"]}", a->b64, b->b64), &r, err);
    CHECK(rc == 0 && r.init_w == a->w && r.init_h == a->h && r.n_refs == 1 && ref_is(&r, 0, b) &&
              r.refs_from_edit,
          "JSON edit: the first image is the init image (and refs[0] at run time), the second "
          "a ref (%d %s)",
          rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_OPENAI_EDIT,
               fmt("{\"prompt\":\"p\",\"size\":\"16x32\",\"image\":\"%s\"}", b->b64), &r, err);
    CHECK(rc == 0 && r.n_refs == 0 && r.init_w == 16 && r.init_h == 32 && r.refs_from_edit,
          "JSON edit of one image with a size: the init image at it, no other ref (%d %s)", rc,
          err);
    sdc_srv_request_free(&r);
    rc = parse(
        SDC_SRV_API_OPENAI_EDIT,
        fmt("{\"prompt\":\"p\",\"size\":\"16x32\",\"image\":[\"%s\",\"%s\"]}", a->b64, b->b64), &r,
        err);
    CHECK(rc == 0 && r.n_refs == 1 && ref_resized(&r, 0, b, 16, 32),
          "JSON edit with a size: the second image resized to it (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_OPENAI_EDIT,
               fmt("{\"prompt\":\"p<sd_cpp_extra_args>{\\\"ref_images\\\":[\\\"%s\\\"]}"
                   "</sd_cpp_extra_args>\",\"image\":\"%s\"}",
                   b->b64, a->b64),
               &r, err);
    CHECK(rc == 0 && r.n_refs == 1 && ref_is(&r, 0, b) && !r.refs_from_edit && r.init_w == a->w,
          "JSON edit with named ref_images: those are the refs, kept on every model (%d %s)", rc,
          err);
    sdc_srv_request_free(&r);
    const test_img *both[] = {a, b};
    size_t len = 0;
    char *mp = multipart(both, 2, &len);
    rc = sdc_srv_parse_edit_multipart("multipart/form-data; boundary=B2", mp, len, &g_d, &r, err,
                                      sizeof err);
    CHECK(rc == 0 && r.n_refs == 1 && ref_is(&r, 0, b) && r.refs_from_edit && r.init_w == a->w,
          "multipart edit: two image[] files, the first the init image (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    free(mp);
}

typedef struct bad_case {
    sdc_srv_api api;
    char *body;
    const char *expect; /* in the message */
} bad_case;

static void test_refusals(const test_img *a) {
    char nine[4096 * 2] = "";
    for (int i = 0; i < 9; i++) strcat(nine, i ? ",\"x\"" : "\"x\"");
    bad_case cases[] = {
        {SDC_SRV_API_SDCPP, fmt("{\"ref_images\":\"x\"}"), "'ref_images' must be an array"},
        {SDC_SRV_API_SDCPP, fmt("{\"ref_images\":[1]}"), "'ref_images'[0] must be a base64"},
        {SDC_SRV_API_SDCPP, fmt("{\"ref_images\":[\"@@@\"]}"), "'ref_images'[0] is not valid"},
        {SDC_SRV_API_SDCPP, fmt("{\"ref_images\":[\"%s\",\"Zm9vYmFy\"]}", a->b64),
         "'ref_images'[1] is not a readable PNG or JPEG"},
        {SDC_SRV_API_SDCPP, fmt("{\"ref_images\":[%s]}", nine), "at most 8"},
        {SDC_SRV_API_SDCPP,
         fmt("{\"width\":4096,\"height\":4096,\"ref_images\":[\"%s\",\"%s\",\"%s\"]}", a->b64,
             a->b64, a->b64),
         "3 reference images at 4096x4096 are more than"},
        {SDC_SRV_API_SDCPP, fmt("{\"qwen_image_layers\":-1}"), "'qwen_image_layers' is out of"},
        {SDC_SRV_API_SDCPP, fmt("{\"qwen_image_layers\":65}"), "'qwen_image_layers' is out of"},
        {SDC_SRV_API_SDCPP, fmt("{\"qwen_image_layers\":\"3\"}"), "'qwen_image_layers' must"},
        {SDC_SRV_API_SDCPP, fmt("{\"auto_resize_ref_image\":\"no\"}"),
         "'auto_resize_ref_image' must be a boolean"},
        {SDC_SRV_API_SDCPP, fmt("{\"increase_ref_index\":[]}"), "'increase_ref_index' must be"},
        {SDC_SRV_API_SDCPP, fmt("{\"sample_params\":{\"flow_shift\":0}}"),
         "flow_shift must be > 0"},
        {SDC_SRV_API_SDCPP, fmt("{\"sample_params\":{\"flow_shift\":\"3\"}}"),
         "'flow_shift' must be a finite number"},
        {SDC_SRV_API_SDCPP, fmt("{\"sample_params\":{\"guidance\":{\"img_cfg\":-1}}}"),
         "img_cfg must be >= 0"},
        {SDC_SRV_API_SDCPP, fmt("{\"sample_params\":{\"guidance\":{\"slg\":{\"scale\":2}}}}"),
         "skip-layer guidance"},
        {SDC_SRV_API_SDAPI_TXT2IMG, fmt("{\"prompt\":\"p\",\"extra_images\":{}}"),
         "'extra_images' must be an array"},
        {SDC_SRV_API_SDAPI_TXT2IMG,
         fmt("{\"prompt\":\"p\",\"extra_images\":[\"%s\",\"@\"]}", a->b64),
         "'extra_images'[1] is not valid base64"},
        {SDC_SRV_API_SDAPI_IMG2IMG,
         fmt("{\"prompt\":\"p\",\"init_images\":[\"%s\"],\"extra_images\":[\"Zm9v\"]}", a->b64),
         "'extra_images'[0] is not a readable"},
        {SDC_SRV_API_OPENAI_EDIT,
         fmt("{\"prompt\":\"p\",\"image\":[\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\","
             "\"%s\"]}",
             a->b64, a->b64, a->b64, a->b64, a->b64, a->b64, a->b64, a->b64, a->b64),
         "'image'[8]: at most 8 images"},
        {SDC_SRV_API_OPENAI_EDIT, fmt("{\"prompt\":\"p\",\"image\":[\"%s\",5]}", a->b64),
         "'image'[1] must be a base64 string"},
        {SDC_SRV_API_OPENAI_EDIT, fmt("{\"prompt\":\"p\",\"image\":[\"%s\",\"Zm9vYmFy\"]}", a->b64),
         "'image'[1] is not a readable"},
    };
    int wrong = 0, n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        sdc_srv_request r;
        char err[256] = "";
        int rc = parse(cases[i].api, cases[i].body, &r, err);
        if (rc != 400 || !strstr(err, cases[i].expect)) {
            wrong++;
            fprintf(stderr, "  case %d: expected 400 with \"%s\", got %d \"%s\"\n", i,
                    cases[i].expect, rc, err);
        }
        sdc_srv_request_free(&r);
    }
    CHECK(wrong == 0, "%d of %d invalid reference requests not refused as expected", wrong, n);
    /* multipart: the second file is not an image */
    test_img junk = {0, 0, NULL, "not an image"};
    const test_img *pair[] = {a, &junk};
    size_t len = 0;
    char *mp = multipart(pair, 2, &len);
    sdc_srv_request r;
    char err[256] = "";
    int rc = sdc_srv_parse_edit_multipart("multipart/form-data; boundary=B2", mp, len, &g_d, &r,
                                          err, sizeof err);
    CHECK(rc == 400 && strstr(err, "'image'[1]"), "multipart: a broken second image (%d %s)", rc,
          err);
    sdc_srv_request_free(&r);
    free(mp);
    printf("refusals: %d JSON bodies and a multipart one, each naming its field\n", n);
}

/* The pixel limits: one image over 4096 x 4096, and three that are over 2 x 4096^2 together. */
static void test_pixel_limits(void) {
    test_img big = make_img(4097, 4096, -1), part = make_img(4096, 3000, -1);
    sdc_srv_request r;
    char err[256] = "";
    int rc = parse(SDC_SRV_API_SDCPP, fmt("{\"ref_images\":[\"%s\"]}", big.b64), &r, err);
    CHECK(rc == 400 && strstr(err, "'ref_images'[0] is 4097x4096"), "one image too large (%d %s)",
          rc, err);
    sdc_srv_request_free(&r);
    rc = parse(SDC_SRV_API_SDCPP,
               fmt("{\"ref_images\":[\"%s\",\"%s\",\"%s\"]}", part.b64, part.b64, part.b64), &r,
               err);
    CHECK(rc == 400 && strstr(err, "'ref_images'[2]: the reference images have more than"),
          "three images too large together (%d %s)", rc, err);
    sdc_srv_request_free(&r);
    printf("pixel limits: %d per image, %d together\n", SDC_SRV_MAX_REF_PIXELS,
           SDC_SRV_MAX_REF_TOTAL_PIXELS);
    free_img(&big);
    free_img(&part);
}

int main(void) {
    sdc_srv_defaults_init(&g_d);
    g_d.width = 64;
    g_d.height = 64;
    g_d.steps = 4;
    test_img a = make_img(40, 24, 1), b = make_img(20, 12, 2);
    test_sdcpp(&a, &b);
    test_ref_options();
    test_sdapi(&a, &b);
    test_openai_edit(&a, &b);
    test_refusals(&a);
    test_pixel_limits();
    free_img(&a);
    free_img(&b);
    TEST_MAIN_END();
}
