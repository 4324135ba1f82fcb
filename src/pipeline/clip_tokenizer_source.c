/* Finding the CLIP tokenizer: flag, GGUF keys, next to the model, Hugging Face cache, Python
 * packages (see the header for the order). */
#include "pipeline/clip_tokenizer_source.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/log.h"
#include "io/gguf.h"
#include "io/model_loader.h"

typedef struct {
    char buf[6000];
    size_t n;
} tried_list;

static void tried_add(tried_list *t, const char *what) {
    if (t->n >= sizeof t->buf - 8) return;
    int w = snprintf(t->buf + t->n, sizeof t->buf - t->n, "%s%s", t->n ? "; " : "", what);
    if (w < 0) return;
    t->n = (size_t)w < sizeof t->buf - t->n ? t->n + (size_t)w : sizeof t->buf - 1;
    if (t->n >= sizeof t->buf - 8) strcpy(t->buf + sizeof t->buf - 5, "...");
}

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Loads a file found implicitly; a failure is a warning (it may be another tokenizer). */
static int try_file(const char *path, sdc_clip_tokenizer **out) {
    if (!is_file(path)) return 0;
    if (sdc_clip_tokenizer_load(path, out) == SDC_OK) {
        SDC_LOGI("clip tokenizer: %s", path);
        return 1;
    }
    SDC_LOGW("clip tokenizer: skipping %s: %s", path, sdc_last_error());
    return 0;
}

/* A folder's vocab.json (+ merges.txt), tokenizer.json, merges.txt or OpenAI .gz. */
static int try_dir(const char *dir, tried_list *tried, sdc_clip_tokenizer **out) {
    tried_add(tried, dir);
    if (!is_dir(dir)) return 0;
    static const char *const names[] = {"vocab.json", "tokenizer.json", "merges.txt",
                                        "bpe_simple_vocab_16e6.txt.gz"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, names[k]);
        if (try_file(p, out)) return 1;
    }
    return 0;
}

static int try_glob(const char *pattern, const char *sub, tried_list *tried,
                    sdc_clip_tokenizer **out) {
    char pat[4400];
    snprintf(pat, sizeof pat, "%s%s", pattern, sub);
    tried_add(tried, pat);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0) return 0;
    int ok = 0;
    for (size_t i = 0; i < g.gl_pathc && !ok; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s%s", g.gl_pathv[i], sub);
        if (is_dir(p)) {
            tried_list dummy = {.n = 0};
            ok = try_dir(p, &dummy, out);
        } else {
            ok = try_file(p, out);
        }
    }
    globfree(&g);
    return ok;
}

static const sdc_gguf_kv *str_kv(const struct sdc_loader *l, const char *key) {
    const sdc_gguf_kv *kv = l ? sdc_loader_find_kv(l, key, NULL) : NULL;
    return kv && kv->type == SDC_GGUF_STRING ? kv : NULL;
}

static int from_gguf(const struct sdc_loader *l, int which, tried_list *tried,
                     sdc_clip_tokenizer **out, sdc_status *err) {
    const char *mk[2] = {which ? SDC_GGUF_CLIP_G_MERGES : SDC_GGUF_CLIP_L_MERGES,
                         SDC_GGUF_CLIP_MERGES};
    const char *vk[2] = {which ? SDC_GGUF_CLIP_G_VOCAB : SDC_GGUF_CLIP_L_VOCAB,
                         SDC_GGUF_CLIP_VOCAB};
    char what[256];
    snprintf(what, sizeof what, "GGUF keys %s, %s", mk[0], mk[1]);
    tried_add(tried, what);
    for (int k = 0; k < 2; k++) {
        const sdc_gguf_kv *m = str_kv(l, mk[k]);
        if (!m) continue;
        const sdc_gguf_kv *v = str_kv(l, vk[k]);
        *err = sdc_clip_tokenizer_load_memory(v ? v->str : NULL, v ? (size_t)v->str_len : 0, m->str,
                                              (size_t)m->str_len, out);
        if (*err) {
            *err = sdc_fail_prefix(*err, "GGUF key %s: ", mk[k]);
            return 1;
        }
        SDC_LOGI("clip tokenizer: embedded in the GGUF (%s)", mk[k]);
        return 1;
    }
    return 0;
}

/* Folder of the model file and its parent. */
static void model_dirs(const char *model_path, char *dir, char *parent, size_t size) {
    size_t dsize = size - 8; /* room for the parent's "/.." */
    const char *slash = strrchr(model_path, '/');
    if (slash)
        snprintf(dir, size, "%.*s", slash == model_path ? 1 : (int)(slash - model_path),
                 model_path);
    else
        snprintf(dir, size, ".");
    const char *ps = strrchr(dir, '/');
    if (!strcmp(dir, "/"))
        snprintf(parent, size, "/");
    else if (!strcmp(dir, ".") || !strcmp(dir, ".."))
        snprintf(parent, size, "%.*s/..", (int)dsize, dir);
    else if (ps)
        snprintf(parent, size, "%.*s", ps == dir ? 1 : (int)(ps - dir), dir);
    else
        snprintf(parent, size, ".");
}

static int near_model(const char *model_path, int which, tried_list *tried,
                      sdc_clip_tokenizer **out) {
    char dir[4096], parent[4096], p[4200];
    model_dirs(model_path, dir, parent, sizeof dir);
    const char *bases[2] = {dir, parent};
    for (int b = 0; b < 2; b++) {
        if (b == 1 && !strcmp(parent, dir)) break;
        if (which) {
            snprintf(p, sizeof p, "%s/tokenizer_2", bases[b]);
            if (try_dir(p, tried, out)) return 1;
        }
        if (try_dir(bases[b], tried, out)) return 1;
        snprintf(p, sizeof p, "%s/tokenizer", bases[b]);
        if (try_dir(p, tried, out)) return 1;
    }
    return 0;
}

static int hf_cache(int which, tried_list *tried, sdc_clip_tokenizer **out) {
    char hub[4096];
    const char *e;
    if ((e = getenv("HF_HUB_CACHE")) && *e)
        snprintf(hub, sizeof hub, "%s", e);
    else if ((e = getenv("HF_HOME")) && *e)
        snprintf(hub, sizeof hub, "%s/hub", e);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e)
        snprintf(hub, sizeof hub, "%s/huggingface/hub", e);
    else if ((e = getenv("HOME")) && *e)
        snprintf(hub, sizeof hub, "%s/.cache/huggingface/hub", e);
    else
        return 0;
    /* {repo, sub folder}: the ViT-L ones first for which = 0, the OpenCLIP ones for 1 */
    static const char *const vit_l[][2] = {
        {"openai--clip-vit-large-patch14", ""},
        {"stable-diffusion-v1-5--stable-diffusion-v1-5", "/tokenizer"},
        {"runwayml--stable-diffusion-v1-5", "/tokenizer"},
        {"stabilityai--stable-diffusion-xl-base-1.0", "/tokenizer"},
    };
    static const char *const open_clip[][2] = {
        {"laion--CLIP-ViT-bigG-14-laion2B-39B-b160k", ""},
        {"stabilityai--stable-diffusion-xl-base-1.0", "/tokenizer_2"},
        {"laion--CLIP-ViT-H-14-laion2B-s32B-b79K", ""},
        {"stabilityai--stable-diffusion-2-1", "/tokenizer"},
    };
    for (int pass = 0; pass < 2; pass++) {
        const char *const(*list)[2] = (pass == 0) == (which == 0) ? vit_l : open_clip;
        for (int i = 0; i < 4; i++) {
            char pat[4400];
            snprintf(pat, sizeof pat, "%s/models--%s/snapshots/*", hub, list[i][0]);
            if (try_glob(pat, list[i][1], tried, out)) return 1;
        }
    }
    return 0;
}

static int python_packages(tried_list *tried, sdc_clip_tokenizer **out) {
    const char *home = getenv("HOME"), *venv = getenv("VIRTUAL_ENV"),
               *conda = getenv("CONDA_PREFIX");
    char roots[6][1024];
    int nr = 0;
    if (venv && *venv && strlen(venv) < 900) snprintf(roots[nr++], sizeof roots[0], "%s", venv);
    if (conda && *conda && strlen(conda) < 900) snprintf(roots[nr++], sizeof roots[0], "%s", conda);
    if (home && *home && strlen(home) < 900) {
        snprintf(roots[nr++], sizeof roots[0], "%s/.local", home);
        snprintf(roots[nr++], sizeof roots[0], "%s/.pyenv/versions/*", home);
    }
    snprintf(roots[nr++], sizeof roots[0], "/usr/local");
    snprintf(roots[nr++], sizeof roots[0], "/usr");
    static const char *const pk[] = {"site-packages", "dist-packages"};
    static const char *const mod[] = {"open_clip", "clip"};
    for (int r = 0; r < nr; r++)
        for (int p = 0; p < 2; p++)
            for (int m = 0; m < 2; m++) {
                char pat[4400];
                snprintf(pat, sizeof pat, "%.1000s/lib/python3*/%s/%s/bpe_simple_vocab_16e6.txt.gz",
                         roots[r], pk[p], mod[m]);
                if (try_glob(pat, "", tried, out)) return 1;
            }
    return 0;
}

sdc_status sdc_load_clip_tokenizer(const struct sdc_loader *l, const char *model_path,
                                   const char *explicit_path, int which, sdc_clip_tokenizer **out) {
    if (!out) return sdc_fail(SDC_ERR_INVALID_ARG, "clip tokenizer: no output");
    *out = NULL;
    if (explicit_path && *explicit_path) {
        sdc_status st = sdc_clip_tokenizer_load(explicit_path, out);
        return st ? sdc_fail_prefix(st, "--clip-tokenizer: ") : SDC_OK;
    }
    tried_list *tried = calloc(1, sizeof *tried);
    if (!tried) return sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer");
    sdc_status err = SDC_OK;
    int found = from_gguf(l, which, tried, out, &err);
    if (!found && model_path && *model_path) found = near_model(model_path, which, tried, out);
    if (!found) found = hf_cache(which, tried, out);
    if (!found) found = python_packages(tried, out);
    if (found) {
        free(tried);
        return err;
    }
    /* the advice first: the list of places may be long */
    err = sdc_fail(SDC_ERR_IO,
                   "no CLIP tokenizer (%s) found for %s. Pass --clip-tokenizer PATH: a folder "
                   "with vocab.json + merges.txt (or tokenizer.json), e.g. the files of "
                   "openai/clip-vit-large-patch14 on Hugging Face (the tokenizer/ folder of a "
                   "Stable Diffusion diffusers repository holds the same), or the "
                   "bpe_simple_vocab_16e6.txt.gz that `pip install open-clip-torch` installs; "
                   "a GGUF written by -M convert carries it. Looked in: %s",
                   which ? "OpenCLIP ViT-H/bigG" : "ViT-L/14",
                   model_path && *model_path ? model_path : "(no model file)", tried->buf);
    free(tried);
    return err;
}

/* Whether t's vocabulary is exactly the one its merges build. */
static int vocab_from_merges(const sdc_clip_tokenizer *t, const char *merges, size_t mn) {
    sdc_clip_tokenizer *b = NULL;
    if (sdc_clip_tokenizer_load_memory(NULL, 0, merges, mn, &b) != SDC_OK) return 0;
    int same = sdc_clip_tokenizer_vocab_size(b) == sdc_clip_tokenizer_vocab_size(t);
    for (int32_t i = 0; same && i < sdc_clip_tokenizer_vocab_size(t); i++)
        same = !strcmp(sdc_clip_tokenizer_token(b, i), sdc_clip_tokenizer_token(t, i));
    sdc_clip_tokenizer_free(b);
    return same;
}

sdc_status sdc_clip_tokenizer_write_gguf(const sdc_clip_tokenizer *t, int which,
                                         struct sdc_gguf_writer *w) {
    char *merges = NULL;
    size_t mn = 0;
    sdc_status st = sdc_clip_tokenizer_merges_text(t, &merges, &mn);
    if (st) return st;
    st = sdc_gguf_set_strn(w, which ? SDC_GGUF_CLIP_G_MERGES : SDC_GGUF_CLIP_L_MERGES, merges, mn);
    if (!st && !vocab_from_merges(t, merges, mn)) {
        cJSON *o = cJSON_CreateObject();
        for (int32_t i = 0; o && i < sdc_clip_tokenizer_vocab_size(t); i++)
            if (!cJSON_AddNumberToObject(o, sdc_clip_tokenizer_token(t, i), (double)i)) {
                cJSON_Delete(o);
                o = NULL;
            }
        char *js = o ? cJSON_PrintUnformatted(o) : NULL;
        st = js ? sdc_gguf_set_str(w, which ? SDC_GGUF_CLIP_G_VOCAB : SDC_GGUF_CLIP_L_VOCAB, js)
                : sdc_fail(SDC_ERR_NO_MEMORY, "clip tokenizer: vocab.json for the GGUF");
        free(js);
        cJSON_Delete(o);
    }
    free(merges);
    return st;
}
