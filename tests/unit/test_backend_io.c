/* Device-aware tensors: buffers, sdc_backend_tensor_set/get with offsets and bounds,
 * zero-copy inputs on the CPU, reads from a (fake) device that the host cannot
 * dereference, buffer ownership of loader weights vs graph intermediates, and
 * supports_op refusing node types the CPU kernels do not handle. */
#include <stdint.h>

#include "core/backend.h"
#include "core/buffer.h"
#include "core/ops.h"
#include "io/model_loader.h"
#include "pipeline/convert.h"
#include "pipeline/imatrix.h"
#include "test_util.h"

static bool contains(const char *s, const char *sub) {
    return s && strstr(s, sub) != NULL;
}

/* ---- a fake device: memory the host must not touch directly (host_memory false) ---- */

typedef struct fake_dev {
    int sets, gets;
} fake_dev;

static const char *fake_name(const sdc_backend *b) {
    (void)b;
    return "fake";
}
static sdc_status fake_alloc(sdc_backend *b, size_t size, void **ptr) {
    (void)b;
    *ptr = malloc(size);
    return *ptr ? SDC_OK : SDC_ERR_NO_MEMORY;
}
static void fake_release(sdc_backend *b, void *ptr) {
    (void)b;
    free(ptr);
}
static sdc_status fake_set(sdc_backend *b, sdc_tensor *t, const void *src, size_t off, size_t n) {
    ((fake_dev *)b->impl)->sets++;
    memcpy((char *)t->data + off, src, n);
    return SDC_OK;
}
static sdc_status fake_get(sdc_backend *b, const sdc_tensor *t, void *dst, size_t off, size_t n) {
    ((fake_dev *)b->impl)->gets++;
    memcpy(dst, (const char *)t->data + off, n);
    return SDC_OK;
}
static const sdc_backend_iface g_fake_iface = {
    .name = fake_name,
    .alloc = fake_alloc,
    .release = fake_release,
    .tensor_set = fake_set,
    .tensor_get = fake_get,
    .host_memory = false,
};

/* y = (x + b) * x, b broadcast over rows: an independent double reference */
static void reference(const float *x, const float *b, int64_t n0, int64_t n1, double *y) {
    for (int64_t r = 0; r < n1; r++)
        for (int64_t i = 0; i < n0; i++) {
            double xv = x[r * n0 + i];
            y[r * n0 + i] = (xv + (double)b[i]) * xv;
        }
}

/* Inputs written in two pieces at offsets after sdc_backend_graph_alloc, output read back
 * in two pieces; intermediates tagged with the CPU's scratch buffer. */
static void test_set_get_offsets(sdc_backend *be) {
    enum { N0 = 24, N1 = 5 };
    unsigned long long seed = 7;
    float x[N0 * N1], b[N0], y[N0 * N1];
    double ref[N0 * N1];
    for (int i = 0; i < N0 * N1; i++) x[i] = t_randf(&seed);
    for (int i = 0; i < N0; i++) b[i] = t_randf(&seed);
    reference(x, b, N0, N1, ref);

    sdc_graph *g = sdc_graph_create();
    int64_t ne[2] = {N0, N1};
    sdc_tensor *xt = sdc_graph_input(g, SDC_TYPE_F32, 2, ne);
    sdc_tensor *bt = sdc_graph_input_1d(g, SDC_TYPE_F32, N0);
    sdc_tensor *sum = sdc_add(g, xt, bt);
    sdc_tensor *yt = sdc_mul(g, sum, xt);
    sdc_tensor *view = sdc_reshape_2d(g, yt, N0 * N1, 1);
    sdc_tensor *out = sdc_scale(g, view, 1.0f, 0.0f);
    sdc_graph_mark_output(g, yt);
    sdc_graph_mark_output(g, out);
    CHECK(sdc_graph_status(g) == SDC_OK, "build: %s", sdc_graph_error(g));

    /* before allocation nothing can be written */
    sdc_status s = sdc_backend_tensor_set(be, xt, x, 0, sizeof x);
    CHECK(s == SDC_ERR_INVALID_ARG && contains(sdc_last_error(), "no memory yet"),
          "set before alloc refused: %s", sdc_last_error());

    CHECK(sdc_backend_graph_alloc(be, g) == SDC_OK, "alloc: %s", sdc_last_error());
    CHECK(xt->buffer && xt->buffer->backend == be && xt->buffer->usage == SDC_BUFFER_SCRATCH,
          "planned input lives in the backend's scratch buffer");
    CHECK(sum->buffer == xt->buffer && yt->buffer == xt->buffer, "intermediates too");
    CHECK(view->buffer == yt->buffer && view->data == yt->data, "a view shares its owner's buffer");
    CHECK(sdc_tensor_is_host(yt), "CPU scratch is host memory");
    size_t half = (size_t)N0 * 2 * sizeof(float); /* rows 0-1, then rows 2-4 */
    s = sdc_backend_tensor_set(be, xt, x, 0, half);
    if (s == SDC_OK)
        s = sdc_backend_tensor_set(be, xt, (const char *)x + half, half, sizeof x - half);
    if (s == SDC_OK) s = sdc_backend_tensor_set(be, bt, b, 0, sizeof b);
    CHECK(s == SDC_OK, "set: %s", sdc_last_error());
    CHECK(sdc_backend_compute(be, g, NULL, NULL) == SDC_OK, "compute: %s", sdc_last_error());

    memset(y, 0, sizeof y);
    size_t tail = 3 * sizeof(float);
    s = sdc_backend_tensor_get(be, yt, y, 0, sizeof y - tail);
    if (s == SDC_OK)
        s = sdc_backend_tensor_get(be, yt, (char *)y + sizeof y - tail, sizeof y - tail, tail);
    CHECK(s == SDC_OK, "get: %s", sdc_last_error());
    double err = 0;
    for (int i = 0; i < N0 * N1; i++) err = fmax(err, fabs((double)y[i] - ref[i]));
    /* one f32 add and one f32 multiply: a few ulps of values below 4 */
    CHECK(err < 4e-6, "y = (x+b)*x set/get in pieces vs double reference: max abs error %.3g", err);
    printf("set/get with offsets: %d values, max abs error %.3g vs double reference\n", N0 * N1,
           err);
    float o[N0 * N1];
    s = sdc_backend_tensor_get(be, out, o, 0, sizeof o);
    CHECK(s == SDC_OK && memcmp(o, y, sizeof o) == 0, "second output equals the first");

    /* bounds */
    s = sdc_backend_tensor_set(be, xt, x, 4, sizeof x);
    CHECK(s == SDC_ERR_INVALID_ARG && contains(sdc_last_error(), "outside tensor") &&
              contains(sdc_last_error(), "[24,5,1,1]"),
          "set past the end refused: %s", sdc_last_error());
    s = sdc_backend_tensor_get(be, yt, y, sizeof y + 4, 0);
    CHECK(s == SDC_ERR_INVALID_ARG && contains(sdc_last_error(), "outside tensor"),
          "offset past the end refused: %s", sdc_last_error());
    s = sdc_backend_tensor_get(be, yt, y, SIZE_MAX - 2, 8);
    CHECK(s == SDC_ERR_INVALID_ARG, "overflowing offset refused: %s", sdc_last_error());
    s = sdc_backend_tensor_get(be, yt, y, sizeof y, 0);
    CHECK(s == SDC_OK, "empty read at the end is fine: %s", sdc_last_error());
    sdc_graph_free(g);
}

/* sdc_backend_set_inputs on the CPU computes from the caller's arrays in place. */
static void test_zero_copy(sdc_backend *be) {
    enum { N0 = 16, N1 = 3 };
    unsigned long long seed = 11;
    float x[N0 * N1], b[N0], y[N0 * N1];
    double ref[N0 * N1];
    for (int i = 0; i < N0 * N1; i++) x[i] = t_randf(&seed);
    for (int i = 0; i < N0; i++) b[i] = t_randf(&seed);
    reference(x, b, N0, N1, ref);
    sdc_graph *g = sdc_graph_create();
    int64_t ne[2] = {N0, N1};
    sdc_tensor *xt = sdc_graph_input(g, SDC_TYPE_F32, 2, ne);
    sdc_tensor *bt = sdc_graph_input_1d(g, SDC_TYPE_F32, N0);
    sdc_tensor *yt = sdc_mul(g, sdc_add(g, xt, bt), xt);
    sdc_graph_mark_output(g, yt);
    sdc_input_data bad[] = {{xt, x, sizeof x - 4}};
    sdc_status s = sdc_backend_set_inputs(be, g, bad, 1);
    CHECK(s == SDC_ERR_INVALID_ARG && contains(sdc_last_error(), "given"),
          "a wrong input size is refused: %s", sdc_last_error());
    sdc_input_data in[] = {{xt, x, sizeof x}, {bt, b, sizeof b}};
    s = sdc_backend_set_inputs(be, g, in, 2);
    CHECK(s == SDC_OK, "set_inputs: %s", sdc_last_error());
    CHECK(xt->data == (void *)x && bt->data == (void *)b && !xt->buffer,
          "CPU inputs use the host arrays in place (no copy)");
    CHECK(sdc_backend_compute(be, g, NULL, NULL) == SDC_OK, "compute: %s", sdc_last_error());
    const void *p;
    void *tmp;
    s = sdc_tensor_map_read(yt, &p, &tmp);
    CHECK(s == SDC_OK && p == yt->data && !tmp, "mapped read of CPU scratch is in place");
    double err = 0;
    memcpy(y, p, sizeof y);
    for (int i = 0; i < N0 * N1; i++) err = fmax(err, fabs((double)y[i] - ref[i]));
    CHECK(err < 4e-6, "zero-copy inputs: max abs error %.3g", err);
    printf("zero-copy inputs: max abs error %.3g vs double reference\n", err);
    sdc_graph_free(g);
}

/* A tensor on a device the host cannot read: get/set go through that backend, another
 * backend is refused, map_read copies, sdc_tensor_copy moves data between devices. */
static void test_device_tensor(sdc_backend *cpu0, sdc_backend *cpu1) {
    fake_dev dev = {0};
    sdc_backend fake = {&g_fake_iface, &dev};
    sdc_buffer *buf;
    CHECK(sdc_buffer_alloc(&fake, 256, SDC_BUFFER_WEIGHTS, &buf) == SDC_OK, "fake alloc");
    sdc_tensor t = {.type = SDC_TYPE_F32, .ne = {8, 2, 1, 1}};
    sdc_tensor_set_contiguous_strides(&t);
    snprintf(t.name, sizeof t.name, "dev.weight");
    CHECK(sdc_buffer_place(buf, &t, 64) == SDC_OK, "place at 64");
    sdc_tensor big = t;
    big.ne[1] = 100;
    sdc_tensor_set_contiguous_strides(&big);
    sdc_status s = sdc_buffer_place(buf, &big, 64);
    CHECK(s != SDC_OK && contains(sdc_last_error(), "does not fit"), "oversized place refused: %s",
          sdc_last_error());
    CHECK(!sdc_tensor_is_host(&t), "a fake-device tensor is not host memory");
    float v[16], w[16];
    for (int i = 0; i < 16; i++) v[i] = (float)i * 0.5f - 3.0f;
    s = sdc_backend_tensor_set(&fake, &t, v, 0, sizeof v);
    CHECK(s == SDC_OK && dev.sets == 1, "set through the owning backend");
    s = sdc_backend_tensor_get(cpu0, &t, w, 0, sizeof w);
    CHECK(s == SDC_ERR_INVALID_ARG && contains(sdc_last_error(), "fake") &&
              contains(sdc_last_error(), "not cpu"),
          "another backend may not read it: %s", sdc_last_error());
    const void *p;
    void *tmp;
    s = sdc_tensor_map_read(&t, &p, &tmp);
    CHECK(s == SDC_OK && tmp && p == tmp && dev.gets == 1 && memcmp(p, v, sizeof v) == 0,
          "map_read copies a device tensor through its backend");
    free(tmp);
    s = sdc_tensor_read(&t, w, 8 * sizeof(float), 8 * sizeof(float));
    CHECK(s == SDC_OK && memcmp(w, v + 8, 8 * sizeof(float)) == 0, "read at an offset");

    /* a second graph on cpu1 takes the device tensor as its input */
    sdc_graph *g = sdc_graph_create();
    int64_t ne[2] = {8, 2};
    sdc_tensor *in = sdc_graph_input(g, SDC_TYPE_F32, 2, ne);
    sdc_tensor *y = sdc_scale(g, in, 2.0f, 1.0f);
    sdc_graph_mark_output(g, y);
    CHECK(sdc_backend_graph_alloc(cpu1, g) == SDC_OK, "alloc on cpu1: %s", sdc_last_error());
    s = sdc_tensor_copy(&t, in);
    CHECK(s == SDC_OK, "copy device -> cpu1: %s", sdc_last_error());
    CHECK(sdc_backend_compute(cpu1, g, NULL, NULL) == SDC_OK, "compute: %s", sdc_last_error());
    /* cpu0 may read cpu1's scratch: both are host memory */
    s = sdc_backend_tensor_get(cpu0, y, w, 0, sizeof w);
    int exact = s == SDC_OK;
    for (int i = 0; i < 16 && exact; i++) exact = w[i] == v[i] * 2.0f + 1.0f;
    CHECK(exact, "device tensor -> cpu1 graph -> read by cpu0: exact (%s)", sdc_last_error());
    /* and back onto the device, staged through the host */
    sdc_tensor t2 = t;
    CHECK(sdc_buffer_place(buf, &t2, 128) == SDC_OK, "second device tensor");
    s = sdc_tensor_copy(y, &t2);
    CHECK(s == SDC_OK && dev.sets == 2, "copy cpu1 -> device");
    s = sdc_tensor_copy(&t, &t2); /* device -> device */
    CHECK(s == SDC_OK && dev.sets == 3, "copy device -> device staged");
    s = sdc_tensor_read(&t2, w, 0, sizeof w);
    CHECK(s == SDC_OK && memcmp(w, v, sizeof v) == 0, "device copy equals the source");
    printf("fake device: %d sets, %d gets through its backend; cross-backend copies exact\n",
           dev.sets, dev.gets);
    sdc_graph_free(g);
    sdc_buffer_free(buf);
}

/* The imatrix eval callback reads a matmul's activations where they live: through the
 * fake device's backend, never by dereferencing device memory. */
static void test_imatrix_reads_device(void) {
    enum { K = 6, R = 3 };
    fake_dev dev = {0};
    sdc_backend fake = {&g_fake_iface, &dev};
    sdc_buffer *buf;
    CHECK(sdc_buffer_alloc(&fake, 4096, SDC_BUFFER_SCRATCH, &buf) == SDC_OK, "fake alloc");
    sdc_tensor w = {.type = SDC_TYPE_F32, .ne = {K, 2, 1, 1}, .flags = SDC_TENSOR_PARAM};
    sdc_tensor x = {.type = SDC_TYPE_F32, .ne = {K, R, 1, 1}};
    sdc_tensor y = {.type = SDC_TYPE_F32, .ne = {2, R, 1, 1}, .op = SDC_OP_MATMUL};
    sdc_tensor_set_contiguous_strides(&w);
    sdc_tensor_set_contiguous_strides(&x);
    sdc_tensor_set_contiguous_strides(&y);
    snprintf(w.name, sizeof w.name, "model.blk.w");
    y.src[0] = &w, y.src[1] = &x;
    float wd[2 * K] = {0};
    w.data = wd;
    float xv[K * R];
    unsigned long long seed = 5;
    for (int i = 0; i < K * R; i++) xv[i] = t_randf(&seed) * 3.0f;
    CHECK(sdc_buffer_place(buf, &x, 256) == SDC_OK, "x on the device");
    CHECK(sdc_backend_tensor_set(&fake, &x, xv, 0, sizeof xv) == SDC_OK, "x written");
    sdc_imatrix *im = NULL;
    CHECK(sdc_imatrix_create(&im) == SDC_OK, "imatrix");
    bool want = sdc_imatrix_eval_cb(&y, true, im);
    int gets = dev.gets;
    bool go_on = want && sdc_imatrix_eval_cb(&y, false, im);
    CHECK(want && go_on && dev.gets == gets + 1, "observed once, x read through the device (%d)",
          dev.gets - gets);
    float vals[K];
    int e = sdc_imatrix_find(im, "model.blk.w");
    CHECK(e >= 0 && sdc_imatrix_values(im, e, vals), "entry collected");
    double err = 0;
    for (int j = 0; j < K && e >= 0; j++) {
        double ref = 0;
        for (int r = 0; r < R; r++) ref += (double)xv[r * K + j] * xv[r * K + j];
        ref /= R; /* mean of x^2 per column, times one call */
        err = fmax(err, fabs(vals[j] - ref) / ref);
    }
    CHECK(err < 1e-6, "imatrix values from device activations vs double: rel error %.3g", err);
    printf("imatrix from a device tensor: %d columns, max rel error %.3g\n", K, err);
    sdc_imatrix_free(im);
    sdc_buffer_free(buf);
}

/* Loader weights belong to host buffers: used in place (host-mapped image) or converted
 * (weights); conversions on load move a tensor into a weights buffer of its own. */
static void test_loader_buffers(void) {
    const char *json = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                       "\"d\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[16,32]},"
                       "\"w\":{\"dtype\":\"F32\",\"shape\":[2,32],\"data_offsets\":[32,288]}}";
    size_t hl = strlen(json);
    size_t padded = (8 + hl + 7) / 8 * 8 - 8;
    size_t size = 8 + padded + 288;
    uint8_t *img = aligned_alloc(64, (size + 63) / 64 * 64);
    memset(img, ' ', 8 + padded);
    for (int i = 0; i < 8; i++) img[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    memcpy(img + 8, json, hl);
    uint8_t *data = img + 8 + padded;
    float a[4] = {1.5f, -2.0f, 0.25f, 8.0f};
    double d[2] = {0.125, -3.0};
    memcpy(data, a, sizeof a);
    memcpy(data + 16, d, sizeof d);
    for (int i = 0; i < 64; i++) {
        float x = (float)i / 8.0f - 4.0f;
        memcpy(data + 32 + 4 * i, &x, 4);
    }
    sdc_loader *l = NULL;
    CHECK(sdc_loader_create(&l) == SDC_OK, "loader");
    sdc_status s = sdc_loader_add_memory(l, img, size, "mem.safetensors", "p.");
    CHECK(s == SDC_OK, "add: %s", sdc_last_error());
    sdc_tensor *ta = sdc_loader_find(l, "p.a"), *td = sdc_loader_find(l, "p.d"),
               *tw = sdc_loader_find(l, "p.w");
    CHECK(ta && td && tw, "tensors found");
    if (!ta || !td || !tw) goto done;
    const sdc_buffer *ba = ta->buffer, *bd = td->buffer;
    CHECK(ba && !ba->backend && ba->usage == SDC_BUFFER_HOST_MAPPED &&
              (uint8_t *)ta->data >= (uint8_t *)ba->base &&
              (uint8_t *)ta->data + 16 <= (uint8_t *)ba->base + ba->size,
          "an F32 tensor is used in place: host-mapped buffer around its data");
    CHECK(tw->buffer == ba, "tensors of one file share its image buffer");
    CHECK(bd && !bd->backend && bd->usage == SDC_BUFFER_WEIGHTS && bd->owns_base &&
              (uint8_t *)td->data >= (uint8_t *)bd->base,
          "an F64 tensor converted to F32 lives in the loader's weights buffer");
    CHECK(td->type == SDC_TYPE_F32 && ((float *)td->data)[1] == -3.0f, "converted value");
    s = sdc_backend_tensor_set(NULL, ta, a, 0, 4);
    CHECK(s == SDC_ERR_INVALID_ARG && contains(sdc_last_error(), "read-only"),
          "writing into a file image is refused: %s", sdc_last_error());
    float got[4];
    s = sdc_tensor_read(ta, got, 0, sizeof got);
    CHECK(s == SDC_OK && memcmp(got, a, sizeof a) == 0, "host weight read");

    sdc_converted_weights *cw = NULL;
    s = sdc_convert_loaded_weights(l, SDC_TYPE_F16, "^p\\.w$=f16", NULL, 1, NULL, &cw);
    CHECK(s == SDC_OK, "convert: %s", sdc_last_error());
    CHECK(tw->type == SDC_TYPE_F16 && tw->buffer && tw->buffer != ba &&
              tw->buffer->usage == SDC_BUFFER_WEIGHTS && !tw->buffer->backend &&
              tw->data == tw->buffer->base && tw->buffer->size >= sdc_tensor_nbytes(tw),
          "a weight converted on load owns a host weights buffer");
    printf("loader buffers: in place '%s', converted '%s', on-load conversion '%s'\n",
           sdc_buffer_usage_name(ba->usage), sdc_buffer_usage_name(bd->usage),
           sdc_buffer_usage_name(tw->buffer->usage));
    sdc_converted_weights_free(cw);
done:
    sdc_loader_free(l);
    free(img);
}

/* Nodes whose types the kernels do not read are refused, naming the node, op and types. */
static void test_supports_types(sdc_backend *be) {
    sdc_graph *g = sdc_graph_create();
    int64_t wne[2] = {32, 4}, xne[2] = {32, 3};
    sdc_tensor *w = sdc_graph_input(g, SDC_TYPE_F32, 2, wne);
    sdc_tensor *x = sdc_graph_input(g, SDC_TYPE_F32, 2, xne);
    sdc_tensor *ok = sdc_matmul(g, w, x);
    char why[128];
    CHECK(sdc_backend_supports_op(be, ok, why, sizeof why), "f32 matmul supported");
    /* hand-made nodes skip the builders' checks, as a future builder bug would */
    sdc_tensor *xh = sdc_graph_input(g, SDC_TYPE_F16, 2, xne);
    int64_t one[2] = {4, 3};
    sdc_tensor *bad = sdc_graph_node(g, SDC_OP_MATMUL, SDC_TYPE_F32, 2, one);
    bad->src[0] = w, bad->src[1] = xh;
    sdc_tensor_set_name(bad, "bad.matmul");
    CHECK(!sdc_backend_supports_op(be, bad, why, sizeof why) && contains(why, "x must be f32"),
          "matmul with f16 x refused: %s", why);
    sdc_tensor *bad_add = sdc_graph_node(g, SDC_OP_ADD, SDC_TYPE_F16, 2, xne);
    bad_add->src[0] = x, bad_add->src[1] = x;
    CHECK(!sdc_backend_supports_op(be, bad_add, why, sizeof why) && contains(why, "dst"),
          "add into f16 refused: %s", why);
    sdc_tensor *q = sdc_graph_input(g, SDC_TYPE_Q8_0, 2, xne);
    sdc_tensor *bad_cpy = sdc_graph_node(g, SDC_OP_CPY, SDC_TYPE_F16, 2, xne);
    bad_cpy->src[0] = q;
    CHECK(!sdc_backend_supports_op(be, bad_cpy, why, sizeof why), "cpy q8_0 -> f16 refused: %s",
          why);
    sdc_graph_mark_output(g, bad);
    sdc_status s = sdc_backend_compute(be, g, NULL, NULL);
    const char *msg = sdc_last_error();
    CHECK(s == SDC_ERR_UNSUPPORTED && contains(msg, "bad.matmul") && contains(msg, "matmul") &&
              contains(msg, "src1 f16"),
          "compute refuses the graph naming node, op and types: %s", msg);
    printf("refused: %s\n", msg);
    sdc_graph_free(g);
}

int main(void) {
    sdc_backend *cpu0 = sdc_backend_cpu_create(2), *cpu1 = sdc_backend_cpu_create(1);
    CHECK(cpu0 && cpu1, "backends");
    if (!cpu0 || !cpu1) TEST_MAIN_END();
    test_set_get_offsets(cpu0);
    test_zero_copy(cpu0);
    test_device_tensor(cpu0, cpu1);
    test_imatrix_reads_device();
    test_loader_buffers();
    test_supports_types(cpu0);
    sdc_backend_free(cpu0);
    sdc_backend_free(cpu1);
    TEST_MAIN_END();
}
