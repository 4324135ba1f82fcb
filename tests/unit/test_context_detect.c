/* Family detection end to end: a checkpoint of each known-but-not-implemented family
 * (names and shapes from tests/data/registry/<family>.txt, written as a sparse F16
 * safetensors file so that real shapes cost no disk) is refused by sdc_context_create
 * with "<family> checkpoint detected; <family> is not supported yet"; a file of no
 * known family lists what was looked for. */
#include <string.h>
#include <unistd.h>

#include "sdc.h"
#include "test_util.h"

#define MAX_T 4096

/* Writes the list as safetensors; returns the tensor count (0 on failure). */
static int write_list(const char *list, const char *out) {
    FILE *f = fopen(list, "r");
    if (!f) return 0;
    static char header[1 << 20];
    size_t hn = 0;
    unsigned long long off = 0;
    int count = 0;
    char line[1024];
    hn += (size_t)snprintf(header + hn, sizeof header - hn, "{");
    while (fgets(line, sizeof line, f) && hn < sizeof header - 2048) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char name[512];
        int used = 0;
        if (sscanf(line, "%511s%n", name, &used) != 1) continue;
        unsigned long long numel = 1, d;
        char dims[256] = "";
        size_t dn = 0;
        const char *p = line + used;
        int n;
        while (sscanf(p, "%llu%n", &d, &n) == 1) {
            numel *= d;
            dn += (size_t)snprintf(dims + dn, sizeof dims - dn, "%s%llu", dn ? "," : "", d);
            p += n;
        }
        hn += (size_t)snprintf(header + hn, sizeof header - hn,
                               "%s\"%s\":{\"dtype\":\"F16\",\"shape\":[%s],\"data_offsets\":[%llu,"
                               "%llu]}",
                               count ? "," : "", name, dims, off, off + numel * 2);
        off += numel * 2;
        count++;
    }
    fclose(f);
    hn += (size_t)snprintf(header + hn, sizeof header - hn, "}");
    while (hn % 8) header[hn++] = ' ';
    FILE *o = fopen(out, "wb");
    if (!o) return 0;
    unsigned long long h = hn;
    int ok = fwrite(&h, 8, 1, o) == 1 && fwrite(header, 1, hn, o) == hn;
    fclose(o);
    /* the data: a hole (reads as zeros) */
    ok = ok && truncate(out, (off_t)(8 + hn + off)) == 0;
    return ok ? count : 0;
}

static void expect(const char *family_file, const char *name, const char *needle) {
    char list[512], out[512];
    snprintf(list, sizeof list, "%s/tests/data/registry/%s.txt", SDC_SOURCE_DIR, family_file);
    snprintf(out, sizeof out, "%s/detect_%s.safetensors", SDC_BINARY_DIR, family_file);
    int n = write_list(list, out);
    CHECK(n > 0, "%s: list written", family_file);
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.model_path = out;
    sdc_context *ctx = NULL;
    sdc_status s = sdc_context_create(&cp, &ctx);
    const char *msg = sdc_last_error();
    printf("%-12s %4d tensors: %.160s\n", family_file, n, msg);
    char want[256];
    if (!name) { /* implemented: the family loads, and says what is wrong with it (needle:
                  * the part it names, NULL for the diffusion model) */
        const char *part = needle ? needle : "model.diffusion_model.";
        CHECK((s == SDC_ERR_FORMAT || (needle && s == SDC_ERR_INVALID_ARG)) && !ctx &&
                  strstr(msg, part),
              "%s: loads and names the partial key list's missing or odd part, %s (%s)",
              family_file, part, sdc_status_string(s));
        remove(out);
        return;
    }
    CHECK(s == SDC_ERR_UNSUPPORTED && !ctx, "%s: refused as unsupported (%s)", family_file,
          sdc_status_string(s));
    if (name)
        snprintf(want, sizeof want, "%s checkpoint detected; %s is not supported yet", name, name);
    else
        snprintf(want, sizeof want, "%s", needle);
    CHECK(strstr(msg, want) != NULL, "%s: message has '%s'", family_file, want);
    sdc_context_free(ctx);
    remove(out);
}

int main(void) {
    expect("sd1", NULL, NULL);  /* implemented */
    expect("sd2", NULL, NULL);  /* implemented */
    expect("sdxl", NULL, NULL); /* implemented */
    expect("sd3", "SD3.x", NULL);
    expect("flux", "Flux", NULL);
    expect("chroma", "Chroma", NULL);
    expect("flux2", "Flux.2", NULL);
    expect("qwen_image", NULL, "first_stage_model."); /* implemented; the list has no Wan VAE */
    expect("z_image", "Z-Image", NULL);
    expect("wan", "Wan 2.x", NULL); /* 5-D Conv3d weights load, folded */
    /* the T5 alone: no diffusion model of any family */
    char out[512];
    snprintf(out, sizeof out, "%s/detect_t5only.safetensors", SDC_BINARY_DIR);
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.model_path = GOLDEN("minit2i/minit2i_a_t5_f32.safetensors");
    sdc_context *ctx = NULL;
    sdc_status s = sdc_context_create(&cp, &ctx);
    printf("t5 only: %.200s...\n", sdc_last_error());
    CHECK(s == SDC_ERR_UNSUPPORTED && strstr(sdc_last_error(), "no known model family") &&
              strstr(sdc_last_error(), "MiniT2I") && strstr(sdc_last_error(), "SDXL"),
          "unknown file: the message lists what was looked for");
    TEST_MAIN_END();
}
