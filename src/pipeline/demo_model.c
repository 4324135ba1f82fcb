/* `-m demo`: finding the demo model the repository ships (docs/demo.md). The folder holds
 * a MiniT2I and its T5 as safetensors (tokenizer.json next to the T5), or one GGUF with both
 * and the tokenizer; the first folder of the search order that has either wins. */
#include "sdc.h"

#include "core/status.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SDC_DEMO_SOURCE_DIR
#define SDC_DEMO_SOURCE_DIR ""
#endif
#ifndef SDC_DEMO_INSTALL_DIR
#define SDC_DEMO_INSTALL_DIR ""
#endif

/* What the demo was trained for (tools/demo/README.md reports them). */
#define DEMO_SIDE    64
#define DEMO_STEPS   20
#define DEMO_CFG     4.0f
#define DEMO_SAMPLER "euler"

static bool is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool sdc_is_demo_model_name(const char *path) {
    return path && !strcmp(path, "demo") && !is_file(path);
}

/* The first of names that exists in dir, written to out; false if none. */
static bool first_file(const char *dir, const char *const *names, char *out, size_t size) {
    for (int i = 0; names[i]; i++) {
        int n = snprintf(out, size, "%s/%s", dir, names[i]);
        if (n > 0 && (size_t)n < size && is_file(out)) return true;
    }
    out[0] = '\0';
    return false;
}

/* A single .gguf in dir (the first by name), written to out. */
static bool any_gguf(const char *dir, char *out, size_t size) {
    DIR *d = opendir(dir);
    if (!d) return false;
    char best[256] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 5 && len < sizeof best && !strcmp(e->d_name + len - 5, ".gguf") &&
            (!best[0] || strcmp(e->d_name, best) < 0))
            memcpy(best, e->d_name, len + 1);
    }
    closedir(d);
    int n = best[0] ? snprintf(out, size, "%s/%s", dir, best) : -1;
    return n > 0 && (size_t)n < size && is_file(out);
}

/* Fills out from dir when it holds the demo model. */
static bool try_dir(const char *dir, sdc_demo_model *out) {
    static const char *const dit[] = {"minit2i.safetensors", "demo.safetensors",
                                      "diffusion_model.safetensors", "dit.safetensors", NULL};
    static const char *const t5[] = {"t5.safetensors", "t5/model.safetensors",
                                     "text_encoder/model.safetensors", NULL};
    if (!dir || !*dir || strlen(dir) >= sizeof out->dir || !is_dir(dir)) return false;
    bool pair = first_file(dir, dit, out->diffusion_model_path, sizeof out->diffusion_model_path) &&
                first_file(dir, t5, out->t5xxl_path, sizeof out->t5xxl_path);
    if (!pair) out->diffusion_model_path[0] = out->t5xxl_path[0] = '\0';
    if (!any_gguf(dir, out->model_path, sizeof out->model_path)) out->model_path[0] = '\0';
    if (!pair && !out->model_path[0]) return false;
    snprintf(out->dir, sizeof out->dir, "%s", dir);
    return true;
}

/* Folder of the running executable ("" if unknown). */
static void exe_dir(char *out, size_t size) {
    ssize_t n = readlink("/proc/self/exe", out, size - 1);
    out[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(out, '/');
    if (slash)
        *slash = '\0';
    else
        out[0] = '\0';
}

sdc_status sdc_demo_model_find(const char *name, sdc_demo_model *out) {
    if (!out) return sdc_fail(SDC_ERR_INVALID_ARG, "demo model: NULL output");
    memset(out, 0, sizeof *out);
    out->width = out->height = DEMO_SIDE;
    out->steps = DEMO_STEPS;
    out->cfg_scale = DEMO_CFG;
    out->sampling_method = DEMO_SAMPLER;
    char exe[1024], up1[1100], up2[1100];
    exe_dir(exe, sizeof exe);
    snprintf(up1, sizeof up1, "%s%s", exe, exe[0] ? "/../models/demo" : "");
    snprintf(up2, sizeof up2, "%s%s", exe, exe[0] ? "/../share/sdc/demo" : "");
    const char *env = getenv("SDC_DEMO_DIR");
    const char *places[] = {name && strcmp(name, "demo") ? name : "demo",
                            env,
                            up1,
                            up2,
                            SDC_DEMO_SOURCE_DIR,
                            SDC_DEMO_INSTALL_DIR};
    const char *what[] = {"the path given",         "$SDC_DEMO_DIR",   "next to the executable",
                          "next to the executable", "the source tree", "the install prefix"};
    char searched[2048] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        if (!places[i] || !*places[i]) continue;
        if (try_dir(places[i], out)) return SDC_OK;
        int n = snprintf(searched + used, sizeof searched - used, "%s%s (%s)", used ? ", " : "",
                         places[i], what[i]);
        if (n > 0 && used + (size_t)n < sizeof searched) used += (size_t)n;
    }
    return sdc_fail(SDC_ERR_IO,
                    "-m demo: the demo model (models/demo/: minit2i.safetensors + t5.safetensors, "
                    "or a .gguf) is in none of: %s; set SDC_DEMO_DIR to its folder",
                    searched);
}
