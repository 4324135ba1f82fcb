/* LoRA state: see lora.h. Every weight of the loader owns a slot whose link (core/lora_link.h)
 * its `lora` field points at from creation on; a LoRA file becomes one adapter per module
 * (F32 host tensors, the scale folded into `up`), appended to its target's slot. Merging
 * writes W + sum(up @ down) into a buffer of ours; undoing points the tensor back at the
 * data it was loaded with. */
#include "models/lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/backend.h"
#include "core/buffer.h"
#include "core/ops.h"
#include "core/log.h"
#include "core/lora_link.h"
#include "core/types.h"
#include "io/model_loader.h"
#include "io/name_index.h"
#include "models/lora_names.h"
#include "models/weights.h"

typedef struct slot {
    sdc_lora_link link;
    sdc_lora_adapter *ad;
    int n, cap;
    sdc_tensor *t;
    void *orig_data; /* as loaded */
    struct sdc_buffer *orig_buffer;
    struct sdc_buffer *merged; /* our copy with the adapters added, or NULL */
} slot;

struct sdc_lora_state {
    sdc_loader *l;
    sdc_lora_targets *tg;
    slot *slots;
    int n_slots;
    sdc_tensor **owned; /* adapter tensors (header + data in one allocation) */
    int n_owned, cap_owned;
    /* the active set, for the no-op check */
    char *dir;
    char **names;
    float *mults;
    int n_active;
    sdc_lora_mode mode;
    sdc_lora_stats stats;
    int n_threads; /* for merging; <= 0: all cores */
    float *work;   /* merge_slot's F32 copy of a weight */
    size_t work_cap;
};

sdc_status sdc_lora_mode_from_name(const char *name, sdc_lora_mode *out) {
    static const char *names[] = {"auto", "immediately", "at_runtime"};
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *out = (sdc_lora_mode)i;
            return SDC_OK;
        }
    return sdc_fail(SDC_ERR_INVALID_ARG,
                    "unknown LoRA apply mode '%s' (auto, immediately or at_runtime)",
                    name ? name : "(null)");
}

const char *sdc_lora_mode_name(sdc_lora_mode mode) {
    return mode == SDC_LORA_IMMEDIATELY  ? "immediately"
           : mode == SDC_LORA_AT_RUNTIME ? "at_runtime"
                                         : "auto";
}

/* ---- state ----------------------------------------------------------------------------- */

sdc_status sdc_lora_state_create(sdc_loader *weights, sdc_lora_state **out) {
    *out = NULL;
    if (!weights) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_lora_state_create: no weights");
    sdc_lora_state *st = calloc(1, sizeof *st);
    int n = sdc_loader_tensor_count(weights);
    if (st) st->slots = calloc((size_t)n + 1, sizeof *st->slots);
    if (!st || !st->slots) {
        free(st);
        return sdc_fail(SDC_ERR_NO_MEMORY, "lora: out of memory");
    }
    sdc_status s = sdc_lora_targets_build(weights, &st->tg);
    if (s != SDC_OK) {
        free(st->slots);
        free(st);
        return s;
    }
    st->l = weights;
    st->n_slots = n;
    for (int i = 0; i < n; i++) {
        slot *sl = &st->slots[i];
        sl->t = sdc_loader_tensor_at(weights, i);
        sl->orig_data = sl->t->data;
        sl->orig_buffer = sl->t->buffer;
        sl->t->lora = &sl->link;
    }
    *out = st;
    return SDC_OK;
}

/* Undoes every LoRA: loaded data back, links empty, adapters freed. */
static void clear_all(sdc_lora_state *st) {
    for (int i = 0; i < st->n_slots; i++) {
        slot *sl = &st->slots[i];
        if (sl->merged) {
            sl->t->data = sl->orig_data;
            sl->t->buffer = sl->orig_buffer;
            sdc_buffer_free(sl->merged);
            sl->merged = NULL;
        }
        free(sl->ad);
        sl->ad = NULL;
        sl->n = sl->cap = 0;
        memset(&sl->link, 0, sizeof sl->link);
    }
    for (int i = 0; i < st->n_owned; i++) free(st->owned[i]);
    st->n_owned = 0;
    for (int i = 0; i < st->n_active; i++) free(st->names[i]);
    free(st->names), free(st->mults), free(st->dir);
    st->names = NULL, st->mults = NULL, st->dir = NULL;
    st->n_active = 0;
    memset(&st->stats, 0, sizeof st->stats);
}

void sdc_lora_state_free(sdc_lora_state *st) {
    if (!st) return;
    clear_all(st);
    for (int i = 0; i < st->n_slots; i++) st->slots[i].t->lora = NULL;
    free(st->slots);
    free(st->owned);
    sdc_lora_targets_free(st->tg);
    free(st);
}

void sdc_lora_set_threads(sdc_lora_state *st, int n_threads) {
    st->n_threads = n_threads;
}

sdc_lora_stats sdc_lora_get_stats(const sdc_lora_state *st) {
    return st->stats;
}

/* ---- adapters from one LoRA module ------------------------------------------------------ */

/* A zeroed F32 host weight of shape ne, owned by the state. */
static sdc_tensor *new_weight(sdc_lora_state *st, const int64_t *ne, const char *name,
                              const char *what) {
    if (st->n_owned == st->cap_owned) {
        int cap = st->cap_owned ? 2 * st->cap_owned : 256;
        sdc_tensor **o = realloc(st->owned, (size_t)cap * sizeof *o);
        if (!o) return NULL;
        st->owned = o, st->cap_owned = cap;
    }
    size_t count = (size_t)(ne[0] * ne[1] * ne[2] * ne[3]);
    size_t head = (sizeof(sdc_tensor) + 63) / 64 * 64;
    sdc_tensor *t = calloc(1, head + count * sizeof(float) + 1);
    if (!t) return NULL;
    t->type = SDC_TYPE_F32;
    for (int i = 0; i < 4; i++) t->ne[i] = ne[i];
    sdc_tensor_set_contiguous_strides(t);
    t->data = (char *)t + head;
    t->flags = SDC_TENSOR_PARAM;
    t->index = -1;
    t->plan_offset = -1;
    t->last_use = -1;
    snprintf(t->name, sizeof t->name, "lora(%.90s).%s", name, what);
    st->owned[st->n_owned++] = t;
    return t;
}

typedef struct group {
    const char *module;
    sdc_tensor *part[5]; /* by sdc_lora_part: down, up, mid, alpha, scale */
} group;

static bool is_4d(const sdc_tensor *t) {
    return t->ne[2] != 1 || t->ne[3] != 1;
}

static const char *pt_shape(const sdc_tensor *t, char *buf, size_t n) {
    /* PyTorch order, as users see it in their files */
    if (is_4d(t))
        snprintf(buf, n, "[%lld,%lld,%lld,%lld]", (long long)t->ne[3], (long long)t->ne[2],
                 (long long)t->ne[1], (long long)t->ne[0]);
    else
        snprintf(buf, n, "[%lld,%lld]", (long long)t->ne[1], (long long)t->ne[0]);
    return buf;
}

/* One float from a 1-element tensor (alpha, scale). */
static sdc_status scalar(const sdc_tensor *t, const char *path, float *out) {
    if (sdc_tensor_nelements(t) != 1)
        return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s' should hold one value", path, t->name);
    sdc_status s = sdc_weight_to_f32(t, out);
    return s == SDC_OK ? SDC_OK : sdc_fail_prefix(s, "%s: ", path);
}

/* The adapter of module g on weight T (row third `third` of a stacked in_proj, or -1). */
static sdc_status build_adapter(sdc_lora_state *st, const group *g, const sdc_tensor *T, int third,
                                float mult, const char *path, sdc_lora_adapter *out) {
    const sdc_tensor *dn = g->part[SDC_LORA_PART_DOWN], *up = g->part[SDC_LORA_PART_UP];
    const sdc_tensor *mid = g->part[SDC_LORA_PART_MID];
    char b1[64], b2[64], b3[64];
    bool conv = is_4d(T);
    int64_t R = is_4d(dn) ? dn->ne[3] : dn->ne[1];
    int64_t Kd = R ? sdc_tensor_nelements(dn) / R : 0;
    int64_t Ru = is_4d(up) ? up->ne[2] : up->ne[0], Nu = is_4d(up) ? up->ne[3] : up->ne[1];
    int64_t N = conv ? T->ne[3] : T->ne[1], K = conv ? T->ne[0] * T->ne[1] * T->ne[2] : T->ne[0];
    int64_t rows = N, row0 = 0;
    if (third >= 0) {
        if (conv || N % 3)
            return sdc_fail(SDC_ERR_FORMAT, "%s: '%s': '%s' %s is no stacked q/k/v projection",
                            path, g->module, T->name, pt_shape(T, b1, sizeof b1));
        rows = N / 3, row0 = third * rows;
    }
    if (R <= 0 || (is_4d(up) && (up->ne[0] != 1 || up->ne[1] != 1)))
        return sdc_fail(SDC_ERR_FORMAT, "%s: '%s': lora_down %s / lora_up %s are not LoRA shapes",
                        path, g->module, pt_shape(dn, b1, sizeof b1), pt_shape(up, b2, sizeof b2));
    if (mid) {
        if (!conv || mid->ne[2] != R || mid->ne[3] != Ru || mid->ne[0] != T->ne[0] ||
            mid->ne[1] != T->ne[1] || Kd != T->ne[2])
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: '%s': lora_down %s, lora_mid %s, lora_up %s do not fit '%s' %s",
                            path, g->module, pt_shape(dn, b1, sizeof b1),
                            pt_shape(mid, b2, sizeof b2), pt_shape(up, b3, sizeof b3), T->name,
                            pt_shape(T, (char[64]){0}, 64));
    } else if (Ru != R) {
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: '%s': rank mismatch: lora_down %s has rank %lld, "
                        "lora_up %s rank %lld",
                        path, g->module, pt_shape(dn, b1, sizeof b1), (long long)R,
                        pt_shape(up, b2, sizeof b2), (long long)Ru);
    }
    bool kernel_ok = !conv || !is_4d(dn)
                         ? Kd == K
                         : dn->ne[0] == T->ne[0] && dn->ne[1] == T->ne[1] && dn->ne[2] == T->ne[2];
    if (Nu != rows || (!mid && !kernel_ok))
        return sdc_fail(
            SDC_ERR_FORMAT, "%s: '%s': shape mismatch: lora_down %s, lora_up %s for '%s' %s%s",
            path, g->module, pt_shape(dn, b1, sizeof b1), pt_shape(up, b2, sizeof b2), T->name,
            pt_shape(T, b3, sizeof b3), third >= 0 ? " (one third: q, k or v)" : "");
    float scale = 1.0f, v;
    sdc_status s;
    if (g->part[SDC_LORA_PART_SCALE]) {
        if ((s = scalar(g->part[SDC_LORA_PART_SCALE], path, &v))) return s;
        scale = v;
    } else if (g->part[SDC_LORA_PART_ALPHA]) {
        if ((s = scalar(g->part[SDC_LORA_PART_ALPHA], path, &v))) return s;
        scale = v / (float)R;
    }
    scale *= mult;

    int64_t ne_d[4] = {Kd, R, 1, 1}, ne_u[4] = {Ru, N, 1, 1};
    if (conv) {
        int64_t kw = mid ? 1 : T->ne[0], kh = mid ? 1 : T->ne[1];
        ne_d[0] = kw, ne_d[1] = kh, ne_d[2] = T->ne[2], ne_d[3] = R;
        ne_u[0] = 1, ne_u[1] = 1, ne_u[2] = Ru, ne_u[3] = N;
    }
    sdc_tensor *D = new_weight(st, ne_d, g->module, "down");
    sdc_tensor *U = D ? new_weight(st, ne_u, g->module, "up") : NULL;
    sdc_tensor *M = NULL;
    if (U && mid) M = new_weight(st, mid->ne, g->module, "mid");
    float *upf = U ? malloc((size_t)(Ru * rows) * sizeof *upf + 1) : NULL;
    if (!D || !U || (mid && !M) || !upf) {
        free(upf);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    s = sdc_weight_to_f32(dn, D->data);
    if (s == SDC_OK && M) s = sdc_weight_to_f32(mid, M->data);
    if (s == SDC_OK) s = sdc_weight_to_f32(up, upf);
    if (s != SDC_OK) {
        free(upf);
        return sdc_fail_prefix(s, "%s: ", path);
    }
    /* up row n (the target's output n = row0 + n) holds Ru values; other rows stay zero */
    float *u = U->data;
    for (int64_t n = 0; n < rows; n++)
        for (int64_t r = 0; r < Ru; r++) u[(row0 + n) * Ru + r] = upf[n * Ru + r] * scale;
    free(upf);
    *out = (sdc_lora_adapter){.down = D, .mid = M, .up = U, .merged = false};
    return SDC_OK;
}

static sdc_status add_adapter(slot *sl, const sdc_lora_adapter *a) {
    if (sl->n == sl->cap) {
        int cap = sl->cap ? 2 * sl->cap : 2;
        sdc_lora_adapter *p = realloc(sl->ad, (size_t)cap * sizeof *p);
        if (!p) return sdc_fail(SDC_ERR_NO_MEMORY, "lora: out of memory");
        sl->ad = p, sl->cap = cap;
    }
    sl->ad[sl->n++] = *a;
    return SDC_OK;
}

/* ---- one LoRA file ---------------------------------------------------------------------- */

/* Groups the file's tensors by module; errors name the file and the key. */
static sdc_status group_tensors(const sdc_loader *ll, const char *path, group *gs, char *pool,
                                sdc_name_index *ix, int *n_groups) {
    static const char *part_names[] = {"lora_down", "lora_up", "lora_mid", "alpha", "scale"};
    int n = sdc_loader_tensor_count(ll);
    *n_groups = 0;
    for (int i = 0; i < n; i++) {
        sdc_tensor *t = sdc_loader_tensor_at(ll, i);
        char *module = pool + (size_t)i * SDC_MAX_NAME;
        const char *what;
        sdc_lora_part part = sdc_lora_split_name(t->name, module, SDC_MAX_NAME, &what);
        if (part == SDC_LORA_PART_UNSUPPORTED)
            return sdc_fail(SDC_ERR_UNSUPPORTED,
                            "%s: tensor '%s': %s is not supported (LoRA and LoCon only)", path,
                            t->name, what);
        if (part == SDC_LORA_PART_UNKNOWN)
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: tensor '%s': unknown LoRA key layout (expected "
                            "<module>.lora_down/lora_up/lora_A/lora_B.weight or .alpha)",
                            path, t->name);
        int k = sdc_name_index_insert(ix, module, *n_groups);
        if (k == -2) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", path);
        if (k == -1) {
            k = (*n_groups)++;
            memset(&gs[k], 0, sizeof gs[k]);
            gs[k].module = module;
        }
        if (gs[k].part[part])
            return sdc_fail(SDC_ERR_FORMAT, "%s: '%s' has two %s tensors ('%s' and '%s')", path,
                            module, part_names[part], gs[k].part[part]->name, t->name);
        if (part != SDC_LORA_PART_ALPHA && part != SDC_LORA_PART_SCALE &&
            !sdc_type_get(t->type)->to_float)
            return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s' has type %s", path, t->name,
                            sdc_type_name(t->type));
        gs[k].part[part] = t;
    }
    for (int k = 0; k < *n_groups; k++) {
        const group *g = &gs[k];
        if (!g->part[SDC_LORA_PART_DOWN] || !g->part[SDC_LORA_PART_UP])
            return sdc_fail(SDC_ERR_FORMAT, "%s: '%s' has %s but no %s", path, g->module,
                            g->part[SDC_LORA_PART_DOWN] ? "lora_down (lora_A)"
                            : g->part[SDC_LORA_PART_UP] ? "lora_up (lora_B)"
                                                        : "alpha/scale/mid",
                            g->part[SDC_LORA_PART_DOWN] ? "lora_up (lora_B)"
                                                        : "lora_down (lora_A)");
    }
    return SDC_OK;
}

static sdc_status load_lora(sdc_lora_state *st, const char *path, float mult) {
    sdc_loader *ll = NULL;
    sdc_status s = sdc_loader_create(&ll);
    if (s == SDC_OK) s = sdc_loader_add_file(ll, path, NULL);
    if (s != SDC_OK) {
        sdc_loader_free(ll);
        return s;
    }
    int n = sdc_loader_tensor_count(ll);
    group *gs = calloc((size_t)n + 1, sizeof *gs);
    char *pool = malloc((size_t)n * SDC_MAX_NAME + 1);
    sdc_name_index ix = {0};
    if (!gs || !pool || sdc_name_index_init(&ix, (size_t)n + 1)) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", path);
        goto done;
    }
    int n_groups = 0, touched = 0;
    if ((s = group_tensors(ll, path, gs, pool, &ix, &n_groups))) goto done;
    if (n_groups == 0) {
        s = sdc_fail(SDC_ERR_FORMAT, "%s: no LoRA tensors in the file", path);
        goto done;
    }
    for (int k = 0; k < n_groups; k++) {
        int index, third;
        char why[2 * SDC_MAX_NAME];
        if (!sdc_lora_targets_resolve(st->tg, gs[k].module, &index, &third, why, sizeof why)) {
            s = sdc_fail(SDC_ERR_FORMAT, "%s: '%s': %s", path, gs[k].module, why);
            goto done;
        }
        slot *sl = &st->slots[index];
        sdc_lora_adapter a;
        if ((s = build_adapter(st, &gs[k], sl->t, third, mult, path, &a))) goto done;
        if ((s = add_adapter(sl, &a))) goto done;
        touched++;
    }
    SDC_LOGI("lora: %s (x%g): %d model weights updated", path, mult, touched);
done:
    sdc_name_index_free(&ix);
    free(pool);
    free(gs);
    sdc_loader_free(ll);
    return s;
}

/* ---- merging ---------------------------------------------------------------------------- */

/* Adapter i's down side as a [R][K] matrix in the weight's flat order (K = Cin*KH*KW for
 * convs): the down weight itself, or for Tucker sum_b mid[r][b][h][w] * down[b][c]. */
static float *down_matrix(const sdc_tensor *T, const sdc_lora_adapter *a, int64_t R, int64_t K) {
    float *m = calloc((size_t)(R * K) + 1, sizeof *m);
    if (!m) return NULL;
    if (!a->mid) {
        memcpy(m, a->down->data, (size_t)(R * K) * sizeof *m);
        return m;
    }
    int64_t hw_n = T->ne[0] * T->ne[1], cin = T->ne[2], Rd = a->down->ne[3];
    const float *mid = a->mid->data, *down = a->down->data;
    for (int64_t r = 0; r < R; r++)
        for (int64_t b = 0; b < Rd; b++)
            for (int64_t c = 0; c < cin; c++) {
                float dbc = down[b * cin + c];
                for (int64_t hw = 0; hw < hw_n; hw++)
                    m[r * K + c * hw_n + hw] += mid[(r * Rd + b) * hw_n + hw] * dbc;
            }
    return m;
}

/* A contiguous F32 host leaf of shape [n0, n1] over data. */
static void leaf_2d(sdc_tensor *t, void *data, int64_t n0, int64_t n1) {
    memset(t, 0, sizeof *t);
    t->type = SDC_TYPE_F32;
    t->ne[0] = n0, t->ne[1] = n1, t->ne[2] = t->ne[3] = 1;
    sdc_tensor_set_contiguous_strides(t);
    t->data = data;
    t->flags = SDC_TENSOR_PARAM;
    t->index = -1, t->plan_offset = -1, t->last_use = -1;
}

/* w (N rows of K, the weight's flat order) += every adapter's up @ (mid) @ down, as one
 * graph on the CPU backend (its GEMM and threads: a full SD1 LoRA merges in seconds):
 * matmul(down^T [R,K], up [R,N]) is [K,N], the weight's layout. */
static sdc_status add_deltas(sdc_backend *be, const slot *sl, float *w, int64_t N, int64_t K) {
    const sdc_tensor *T = sl->t;
    sdc_tensor *hdr = calloc((size_t)(2 * sl->n + 1), sizeof *hdr);
    float **dt = calloc((size_t)sl->n + 1, sizeof *dt);
    sdc_graph *g = sdc_graph_create();
    sdc_status s = hdr && dt && g ? SDC_OK : sdc_fail(SDC_ERR_NO_MEMORY, "lora: out of memory");
    sdc_tensor base;
    leaf_2d(&base, w, K, N);
    sdc_tensor *acc = &base;
    for (int i = 0; i < sl->n && s == SDC_OK; i++) {
        const sdc_lora_adapter *a = &sl->ad[i];
        int64_t R = a->up->ne[is_4d(T) ? 2 : 0];
        float *m = down_matrix(T, a, R, K);
        dt[i] = malloc((size_t)(R * K) * sizeof(float) + 1);
        if (!m || !dt[i]) {
            free(m);
            s = sdc_fail(SDC_ERR_NO_MEMORY, "lora: out of memory");
            break;
        }
        for (int64_t r = 0; r < R; r++)
            for (int64_t k = 0; k < K; k++) dt[i][k * R + r] = m[r * K + k];
        free(m);
        leaf_2d(&hdr[2 * i], dt[i], R, K);
        leaf_2d(&hdr[2 * i + 1], a->up->data, R, N);
        acc = sdc_add(g, acc, sdc_matmul(g, &hdr[2 * i], &hdr[2 * i + 1]));
    }
    if (s == SDC_OK) {
        sdc_graph_mark_output(g, acc);
        s = sdc_graph_status(g);
        if (s != SDC_OK) s = sdc_fail(s, "lora: merging '%s': %s", T->name, sdc_graph_error(g));
    }
    if (s == SDC_OK) s = sdc_backend_compute(be, g, NULL, NULL);
    if (s == SDC_OK) s = sdc_backend_tensor_get(be, acc, w, 0, (size_t)(K * N) * sizeof(float));
    for (int i = 0; dt && i < sl->n; i++) free(dt[i]);
    sdc_graph_free(g);
    free(dt), free(hdr);
    return s;
}

/* Merges the slot's adapters into a copy of the weight in its own type. False (no error)
 * when this weight cannot be merged here: then its adapters run at run time. */
/* A work array of n floats, kept across weights (fresh pages for every weight cost more
 * than the arithmetic). */
static float *work_floats(sdc_lora_state *st, int64_t n) {
    if ((size_t)n > st->work_cap) {
        free(st->work);
        st->work = malloc((size_t)n * sizeof(float));
        st->work_cap = st->work ? (size_t)n : 0;
    }
    return st->work;
}

static sdc_status merge_slot(sdc_lora_state *st, sdc_backend *be, slot *sl, bool *merged) {
    sdc_tensor *T = sl->t;
    const sdc_type_traits *tr = sdc_type_get(T->type);
    *merged = false;
    if (!tr || !tr->to_float || !tr->from_float || !sdc_tensor_is_host(T) ||
        !sdc_tensor_is_contiguous(T))
        return SDC_OK;
    int64_t total = sdc_tensor_nelements(T);
    bool conv = is_4d(T);
    int64_t N = conv ? T->ne[3] : T->ne[1], K = total / N;
    float *w = work_floats(st, total + 1);
    if (!w) return sdc_fail(SDC_ERR_NO_MEMORY, "lora: '%s': out of memory", T->name);
    tr->to_float(sl->orig_data, w, total);
    sdc_status s = add_deltas(be, sl, w, N, K);
    sdc_buffer *buf = NULL;
    if (s == SDC_OK) s = sdc_buffer_alloc(NULL, sdc_tensor_nbytes(T), SDC_BUFFER_WEIGHTS, &buf);
    if (s == SDC_OK) {
        tr->from_float(w, buf->base, total, NULL);
        T->data = buf->base;
        T->buffer = buf;
        sl->merged = buf;
        sl->link.merged_data = buf->base;
        sl->link.pristine_data = sl->orig_data;
        sl->link.pristine_buffer = sl->orig_buffer;
        for (int i = 0; i < sl->n; i++) sl->ad[i].merged = true;
        *merged = true;
    }
    return s;
}

/* ---- the active set --------------------------------------------------------------------- */

static bool ends_with_ext(const char *s) {
    static const char *ext[] = {".safetensors", ".gguf", ".ckpt", ".pt", ".pth"};
    size_t n = strlen(s);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        size_t e = strlen(ext[i]);
        if (n > e && strcmp(s + n - e, ext[i]) == 0) return true;
    }
    return false;
}

static bool is_file(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* DIR/name.safetensors (or .ckpt, .gguf, or name as given when it has an extension). */
static sdc_status lora_path(const char *dir, const char *name, char *out, size_t n) {
    if (!name || !*name || name[0] == '/' || strcmp(name, "..") == 0 ||
        strncmp(name, "../", 3) == 0 || strstr(name, "/../") ||
        (strlen(name) >= 3 && strcmp(name + strlen(name) - 3, "/..") == 0))
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "lora name '%s': must be a file name in the LoRA "
                        "folder (no '..', no leading '/')",
                        name ? name : "");
    const char *d = dir && *dir ? dir : ".";
    static const char *ext[] = {".safetensors", ".ckpt", ".gguf"};
    if (ends_with_ext(name)) {
        snprintf(out, n, "%s/%s", d, name);
        if (is_file(out)) return SDC_OK;
    }
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        if ((size_t)snprintf(out, n, "%s/%s%s", d, name, ext[i]) >= n) break;
        if (is_file(out)) return SDC_OK;
    }
    return sdc_fail(SDC_ERR_IO, "lora '%s': no %s/%s.safetensors (nor .ckpt, .gguf)", name, d,
                    name);
}

static bool same_set(const sdc_lora_state *st, const char *dir, const sdc_lora_request *loras,
                     int n, sdc_lora_mode mode) {
    if (n != st->n_active || mode != st->mode) return false;
    if (n == 0) return true;
    if (strcmp(dir ? dir : "", st->dir ? st->dir : "") != 0) return false;
    for (int i = 0; i < n; i++)
        if (strcmp(loras[i].name, st->names[i]) != 0 || loras[i].multiplier != st->mults[i])
            return false;
    return true;
}

static sdc_status remember_set(sdc_lora_state *st, const char *dir, const sdc_lora_request *loras,
                               int n, sdc_lora_mode mode) {
    st->mode = mode;
    if (n == 0) return SDC_OK;
    st->names = calloc((size_t)n, sizeof *st->names);
    st->mults = calloc((size_t)n, sizeof *st->mults);
    st->dir = strdup(dir ? dir : "");
    if (!st->names || !st->mults || !st->dir) return sdc_fail(SDC_ERR_NO_MEMORY, "lora: oom");
    for (int i = 0; i < n; i++) {
        st->names[i] = strdup(loras[i].name);
        st->mults[i] = loras[i].multiplier;
        st->n_active = i + 1;
        if (!st->names[i]) return sdc_fail(SDC_ERR_NO_MEMORY, "lora: out of memory");
    }
    return SDC_OK;
}

static sdc_lora_mode resolve_mode(const sdc_lora_state *st, sdc_lora_mode mode) {
    if (mode != SDC_LORA_AUTO) return mode;
    for (int i = 0; i < st->n_slots; i++) {
        const sdc_type_traits *tr = sdc_type_get(st->slots[i].t->type);
        if (tr && tr->is_quantized) return SDC_LORA_AT_RUNTIME;
    }
    return SDC_LORA_IMMEDIATELY;
}

static sdc_status apply_all(sdc_lora_state *st, const char *dir, const sdc_lora_request *loras,
                            int n, sdc_lora_mode mode) {
    char path[4096];
    sdc_status s;
    for (int i = 0; i < n; i++) {
        if (!isfinite(loras[i].multiplier))
            return sdc_fail(SDC_ERR_INVALID_ARG, "lora '%s': multiplier is not finite",
                            loras[i].name);
        if ((s = lora_path(dir, loras[i].name, path, sizeof path))) return s;
        if (loras[i].multiplier == 0.0f) { /* <lora:x:0> switches a LoRA off */
            SDC_LOGI("lora: %s: multiplier 0, not applied", path);
            continue;
        }
        if ((s = load_lora(st, path, loras[i].multiplier))) return s;
    }
    sdc_lora_mode used = resolve_mode(st, mode);
    sdc_lora_stats stats = {.n_loras = n, .mode = used};
    sdc_backend *be = NULL;
    if (n && used == SDC_LORA_IMMEDIATELY && !(be = sdc_backend_cpu_create(st->n_threads)))
        return sdc_fail(SDC_ERR_NO_MEMORY, "lora: cannot start the CPU backend");
    for (int i = 0; i < st->n_slots; i++) {
        slot *sl = &st->slots[i];
        if (sl->n == 0) continue;
        bool merged = false;
        if (be && (s = merge_slot(st, be, sl, &merged))) {
            sdc_backend_free(be);
            free(st->work);
            st->work = NULL, st->work_cap = 0;
            return s;
        }
        sl->link.adapters = sl->ad;
        sl->link.n = sl->n;
        stats.n_targets++;
        stats.n_merged += merged;
        stats.n_runtime += !merged;
    }
    sdc_backend_free(be);
    free(st->work);
    st->work = NULL, st->work_cap = 0;
    st->stats = stats;
    if (n)
        SDC_LOGI("lora: %d LoRA(s) on %d weights: %d merged, %d at run time (mode %s)", n,
                 stats.n_targets, stats.n_merged, stats.n_runtime, sdc_lora_mode_name(used));
    return SDC_OK;
}

sdc_status sdc_lora_set_active(sdc_lora_state *st, const char *dir, const sdc_lora_request *loras,
                               int n, sdc_lora_mode mode) {
    if (!st || n < 0 || (n > 0 && !loras))
        return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_lora_set_active: bad arguments");
    for (int i = 0; i < n; i++)
        if (!loras[i].name) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_lora_set_active: no name");
    if (same_set(st, dir, loras, n, mode)) return SDC_OK;
    clear_all(st);
    sdc_status s = apply_all(st, dir, loras, n, mode);
    if (s == SDC_OK) s = remember_set(st, dir, loras, n, mode);
    if (s != SDC_OK) clear_all(st);
    return s;
}
