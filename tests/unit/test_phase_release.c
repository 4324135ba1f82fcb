/* Mapped weight pages follow the phases (the default of --params-backend): on the golden tiny
 * MiniT2I (F32 files, used in place from the mapping), while sampling the diffusion model's
 * file is resident and the text encoder's is not; once its phase is over the diffusion
 * model's pages are gone too, unless `--params-backend diffusion=cpu` asked to keep them.
 * Residency is read from /proc/self/smaps (the Rss of the mappings of each file), so the
 * test is skipped where that file does not exist. Releasing never changes a result: the two
 * runs' images (two per run: the second samples after the first one's release) are equal. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gen_common.h"
#include "sdc.h"
#include "test_util.h"

#define DIT SDC_GOLDEN_DIR "/minit2i/minit2i_a_dit_f32.safetensors"
#define T5  SDC_GOLDEN_DIR "/minit2i/minit2i_a_t5_f32.safetensors"

/* Resident KiB of every mapping of `path` (-1: no smaps). */
static long file_rss_kib(const char *path) {
    char real[PATH_MAX];
    if (!realpath(path, real)) return -1;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[PATH_MAX + 128];
    long total = 0;
    bool in = false;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char perms[8];
        int name_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &a, &b, perms, &name_at) == 3 &&
            name_at > 0) {
            char *name = line + name_at;
            name[strcspn(name, "\n")] = '\0';
            in = !strcmp(name, real);
            continue;
        }
        long kib;
        if (in && sscanf(line, "Rss: %ld kB", &kib) == 1) total += kib;
    }
    fclose(f);
    return total;
}

typedef struct probe {
    long dit_max, t5_max; /* the largest residency seen in a sampling step */
} probe;

static void on_progress(int step, int steps, double seconds, void *user) {
    (void)step, (void)steps, (void)seconds;
    probe *pr = user;
    long d = file_rss_kib(DIT), t = file_rss_kib(T5);
    if (d > pr->dit_max) pr->dit_max = d;
    if (t > pr->t5_max) pr->t5_max = t;
}

/* One context, one generation of two images; residency during sampling and after. */
static sdc_image *run(const char *params_backend, probe *pr, long *dit_after) {
    sdc_context_params cp;
    t_golden_context_params(&cp);
    cp.params_backend = params_backend;
    sdc_context *ctx = NULL;
    sdc_status s = sdc_context_create(&cp, &ctx);
    CHECK(s == SDC_OK, "context (%s): %s", params_backend ? params_backend : "default",
          sdc_last_error());
    if (s != SDC_OK) return NULL;
    sdc_generate_params p;
    t_lighthouse_params(&p, 64, 48, 3, 2);
    p.progress = on_progress;
    p.progress_user = pr;
    pr->dit_max = pr->t5_max = 0;
    sdc_image *img = NULL;
    int n = 0;
    s = sdc_generate_image(ctx, &p, &img, &n);
    CHECK(s == SDC_OK && n == 2, "generate: %s", sdc_last_error());
    *dit_after = file_rss_kib(DIT);
    sdc_context_free(ctx);
    return s == SDC_OK ? img : NULL;
}

int main(void) {
    if (file_rss_kib(DIT) < 0) {
        printf("SKIP: no /proc/self/smaps or no %s\n", DIT);
        return 0;
    }
    struct stat st;
    CHECK(stat(DIT, &st) == 0, "%s: not found", DIT);
    long dit_kib = (long)(st.st_size / 1024);
    probe def = {0}, kept = {0};
    long def_after = 0, kept_after = 0;
    sdc_image *a = run(NULL, &def, &def_after);
    sdc_image *b = run("diffusion=cpu", &kept, &kept_after);
    printf("DiT file %ld KiB; default: while sampling DiT %ld KiB, T5 %ld KiB resident, after "
           "the generation DiT %ld KiB\n",
           dit_kib, def.dit_max, def.t5_max, def_after);
    printf("diffusion=cpu: while sampling DiT %ld KiB, after the generation %ld KiB\n",
           kept.dit_max, kept_after);
    /* the kept run's residency while sampling is what the DiT's weights occupy (about 86% of
     * the file: the rest is converted on load or not read); pages only partly inside a
     * tensor may stay, so "released" means under a tenth of that */
    long used = kept.dit_max;
    CHECK(used >= dit_kib / 2, "diffusion=cpu: DiT resident while sampling (%ld KiB)", used);
    CHECK(def.dit_max >= used * 9 / 10, "default: DiT resident while sampling (%ld KiB)",
          def.dit_max);
    CHECK(def.t5_max <= used / 10, "default: T5 released before sampling (%ld KiB)", def.t5_max);
    CHECK(def_after <= used / 10, "default: DiT released after its phase (%ld KiB)", def_after);
    CHECK(kept_after >= used * 9 / 10, "diffusion=cpu: DiT kept resident (%ld KiB)", kept_after);
    if (a && b) {
        long diff = 0;
        for (int i = 0; i < 2; i++)
            for (size_t j = 0; j < (size_t)64 * 48 * 3; j++) diff += a[i].data[j] != b[i].data[j];
        printf("images, released vs kept: %ld of %d values differ\n", diff, 2 * 64 * 48 * 3);
        CHECK(diff == 0, "releasing pages changed %ld values", diff);
    }
    sdc_free_images(a, 2);
    sdc_free_images(b, 2);
    TEST_MAIN_END();
}
