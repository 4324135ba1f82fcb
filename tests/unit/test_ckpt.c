/* PyTorch checkpoint reader (io/zip.c, io/pickle.c, io/ckpt.c) through sdc_loader.
 * Data: tests/data/ckpt, made by tests/golden/gen_ckpt_cases.py with torch.save; each
 * loadable .ckpt has a .safetensors twin of the same tensors written by the safetensors
 * package (the independent reference), compared here byte for byte after both went
 * through the loader. The malicious and malformed files must be refused with messages
 * naming the file and what was wrong (for globals: the global). legacy.pt is the same
 * tensors in the pre-1.6 torch.save stream format. */
#include "io/ckpt.h"
#include "io/model_loader.h"
#include "test_util.h"

#define DATA(name) SDC_SOURCE_DIR "/tests/data/ckpt/" name

/* Every tensor of `got` appears in `ref` with the same type, shape and bytes. */
static void compare_loaders(const char *what, sdc_loader *got, sdc_loader *ref) {
    int n = sdc_loader_tensor_count(got), nref = sdc_loader_tensor_count(ref);
    CHECK(n == nref, "%s: %d tensors, reference has %d", what, n, nref);
    int bad = 0;
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        const sdc_tensor *t = sdc_loader_tensor_at(got, i);
        const sdc_tensor *r = sdc_loader_find(ref, t->name);
        if (!r) {
            CHECK(0, "%s: tensor '%s' is not in the reference", what, t->name);
            bad++;
            continue;
        }
        bool same = t->type == r->type;
        for (int d = 0; d < SDC_MAX_DIMS; d++) same = same && t->ne[d] == r->ne[d];
        size_t nb = sdc_tensor_nbytes(t);
        same = same && nb == sdc_tensor_nbytes(r) && (nb == 0 || memcmp(t->data, r->data, nb) == 0);
        CHECK(same,
              "%s: tensor '%s' differs (type %d/%d, ne [%lld,%lld,%lld,%lld] vs [%lld,%lld,"
              "%lld,%lld])",
              what, t->name, (int)t->type, (int)r->type, (long long)t->ne[0], (long long)t->ne[1],
              (long long)t->ne[2], (long long)t->ne[3], (long long)r->ne[0], (long long)r->ne[1],
              (long long)r->ne[2], (long long)r->ne[3]);
        bad += !same;
        bytes += nb;
    }
    printf("%s: %d tensors, %zu bytes compared with the torch-written safetensors, %d differ\n",
           what, n, bytes, bad);
}

static void check_same(const char *ckpt, const char *ref) {
    sdc_loader *a = NULL, *b = NULL;
    CHECK(sdc_loader_create(&a) == SDC_OK && sdc_loader_create(&b) == SDC_OK, "create");
    sdc_status s = sdc_loader_add_file(a, ckpt, NULL);
    CHECK(s == SDC_OK, "%s: %s", ckpt, sdc_last_error());
    CHECK(sdc_loader_add_file(b, ref, NULL) == SDC_OK, "%s: %s", ref, sdc_last_error());
    if (s == SDC_OK) {
        CHECK(sdc_loader_file_format(a, 0) == SDC_FORMAT_CKPT, "%s: format", ckpt);
        CHECK(sdc_loader_file_ckpt(a, 0) != NULL, "%s: the checkpoint is kept", ckpt);
        compare_loaders(ckpt, a, b);
    }
    sdc_loader_free(a);
    sdc_loader_free(b);
}

/* The same through sdc_loader_add_memory, with a prefix. */
static void check_memory(void) {
    size_t size;
    unsigned char *img = t_read_file(DATA("basic.ckpt"), &size);
    CHECK(img != NULL, "read basic.ckpt");
    if (!img) return;
    sdc_loader *l = NULL;
    sdc_loader_create(&l);
    CHECK(sdc_loader_add_memory(l, img, size, "basic.ckpt", "p.") == SDC_OK, "memory: %s",
          sdc_last_error());
    const sdc_tensor *t = sdc_loader_find(l, "p.w_f32");
    CHECK(t && t->type == SDC_TYPE_F32 && t->ne[0] == 5 && t->ne[1] == 3,
          "memory: p.w_f32 [5,3] F32");
    /* contiguous data of a stored entry is used in place: it lies inside the image */
    CHECK(t && (const unsigned char *)t->data >= img && (const unsigned char *)t->data < img + size,
          "memory: p.w_f32 is served from the file image");
    const sdc_tensor *tr = sdc_loader_find(l, "p.transposed");
    CHECK(tr && ((const unsigned char *)tr->data < img ||
                 (const unsigned char *)tr->data >= img + size),
          "memory: p.transposed is a copy");
    sdc_loader_free(l);

    sdc_ckpt_file *f = NULL;
    CHECK(sdc_ckpt_open_memory(img, size, "basic.ckpt", &f) == SDC_OK, "ckpt open: %s",
          sdc_last_error());
    if (f) {
        int in = 0, copied = 0;
        for (int i = 0; i < sdc_ckpt_count(f); i++) {
            const char *nm = sdc_ckpt_at(f, i)->name;
            bool strided = !strcmp(nm, "transposed") || !strcmp(nm, "strided");
            CHECK(sdc_ckpt_in_file(f, i) == !strided, "ckpt: '%s' in place: %d", nm,
                  sdc_ckpt_in_file(f, i));
            in += sdc_ckpt_in_file(f, i);
            copied += !sdc_ckpt_in_file(f, i);
        }
        printf("basic.ckpt: %d tensors in place, %d copied (the strided views)\n", in, copied);
        sdc_ckpt_close(f);
    }
    free(img);
}

static void check_nested_ints(void) {
    sdc_ckpt_file *f = NULL;
    CHECK(sdc_ckpt_open(DATA("nested.ckpt"), &f) == SDC_OK, "nested: %s", sdc_last_error());
    if (!f) return;
    int64_t v = 0;
    CHECK(sdc_ckpt_int(f, "global_step", &v) && v == 5, "nested: global_step %lld", (long long)v);
    CHECK(sdc_ckpt_int(f, "epoch", &v) && v == 1, "nested: epoch %lld", (long long)v);
    CHECK(!sdc_ckpt_int(f, "hparams", &v), "nested: hparams is not an int");
    CHECK(sdc_ckpt_find(f, "lin.weight") != NULL, "nested: state_dict keys keep their names");
    CHECK(sdc_ckpt_find(f, "ema.w") != NULL, "nested: other dicts prefix their keys");
    sdc_ckpt_close(f);
}

/* A refused file: the loader stays as it was and the message names file and cause. */
static void check_refused(const char *file, const char *needle) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/data/ckpt/%s", SDC_SOURCE_DIR, file);
    sdc_loader *l = NULL;
    sdc_loader_create(&l);
    sdc_status s = sdc_loader_add_file(l, path, NULL);
    const char *msg = sdc_last_error();
    CHECK(s != SDC_OK, "%s: accepted", file);
    CHECK(strstr(msg, file) != NULL, "%s: message does not name the file: %s", file, msg);
    CHECK(strstr(msg, needle) != NULL, "%s: message lacks '%s': %s", file, needle, msg);
    CHECK(sdc_loader_tensor_count(l) == 0 && sdc_loader_file_count(l) == 0,
          "%s: the loader changed", file);
    printf("refused %s: %s\n", file, msg);
    sdc_loader_free(l);
}

/* Damaged images (truncations, byte flips everywhere) are refused or loaded, never
 * crash (ASan/UBSan builds check the memory accesses). */
static void check_damage(const char *path) {
    size_t size;
    unsigned char *img = t_read_file(path, &size);
    if (!img) return;
    unsigned char *buf = malloc(size);
    int ok = 0, refused = 0;
    for (size_t cut = 0; cut < size; cut += 37) {
        sdc_ckpt_file *f = NULL;
        if (sdc_ckpt_open_memory(img, cut, "cut", &f) == SDC_OK) {
            ok++;
            sdc_ckpt_close(f);
        } else {
            refused++;
        }
    }
    CHECK(ok == 0, "truncated images accepted: %d", ok);
    unsigned long long seed = 42;
    int flips_ok = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(buf, img, size);
        for (int k = 0; k < 3; k++) {
            size_t at = (size_t)((t_randf(&seed) + 1) * 0.5 * (double)size) % size;
            buf[at] ^= (unsigned char)(1u << (it % 8));
        }
        sdc_ckpt_file *f = NULL;
        if (sdc_ckpt_open_memory(buf, size, "flip", &f) == SDC_OK) {
            flips_ok++;
            for (int i = 0; i < sdc_ckpt_count(f); i++) {
                const sdc_st_tensor *t = sdc_ckpt_at(f, i);
                volatile unsigned char acc = 0;
                for (size_t b = 0; b < t->nbytes; b++) acc ^= ((const unsigned char *)t->data)[b];
                (void)acc;
            }
            sdc_ckpt_close(f);
        }
    }
    printf("damage to %s: %d truncations refused; 3000 images with 3 flipped bits: %d loaded, %d "
           "refused\n",
           path, refused, flips_ok, 3000 - flips_ok);
    free(buf);
    free(img);
}

/* Format detection: zips and pickles are checkpoints, but a safetensors header length
 * whose first bytes look like a pickle's PROTO opcode (0x280 = "80 02 00 ...") stays
 * safetensors. */
static void check_detect(void) {
    unsigned char st[16] = {0x80, 0x02, 0, 0, 0, 0, 0, 0, '{'};
    unsigned char legacy[16] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20};
    unsigned char zip[16] = {'P', 'K', 3, 4, 0, 0, 8, 8, 0};
    CHECK(sdc_detect_format(st, 9) == SDC_FORMAT_SAFETENSORS, "safetensors with header 0x280");
    CHECK(sdc_detect_format(legacy, 10) == SDC_FORMAT_CKPT, "legacy torch.save");
    CHECK(sdc_detect_format(zip, 9) == SDC_FORMAT_CKPT, "zip");
}

int main(void) {
    check_detect();
    check_same(DATA("basic.ckpt"), DATA("basic.safetensors"));
    check_same(DATA("proto4.ckpt"), DATA("basic.safetensors"));
    check_same(DATA("deflate.ckpt"), DATA("basic.safetensors"));
    check_same(DATA("zip64.ckpt"), DATA("basic.safetensors"));
    check_same(DATA("legacy.pt"), DATA("basic.safetensors"));
    check_same(DATA("nested.ckpt"), DATA("nested.safetensors"));
    check_memory();
    check_nested_ints();

    check_refused("evil_os_system.ckpt", "'os.system'");
    check_refused("evil_builtins_eval.ckpt", "'builtins.eval'");
    check_refused("evil_builtin_exec.ckpt", "'__builtin__.exec'");
    check_refused("evil_lightning.ckpt",
                  "'pytorch_lightning.callbacks.model_checkpoint.ModelCheckpoint'");
    check_refused("bad_storage_bounds.ckpt", "outside its storage");
    check_refused("bad_storage_offset.ckpt", "outside its storage");
    check_refused("bad_missing_storage.ckpt", "not in the archive");
    check_refused("bad_expanded.ckpt", "expanded");
    check_refused("bad_memo.ckpt", "memo");
    check_refused("bad_deep.ckpt", "nested deeper than 16");
    check_refused("bad_string_len.ckpt", "string runs past the end");
    check_refused("bad_long.ckpt", "wider than 64 bits");
    check_refused("bad_zip_count.ckpt", "claims 60000 entries");
    check_damage(DATA("basic.ckpt"));
    check_damage(DATA("legacy.pt"));
    TEST_MAIN_END();
}
