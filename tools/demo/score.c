/* The demo scorer: see score.h. Thresholds come from the spec's geometry, not from any
 * model output: fill ratios 1.0 (square) and pi/4 (circle) split at 0.89; a triangle's
 * width at 1/4 of its height is 1/3 of the width at 3/4, a circle's or square's equal, split
 * at 0.6; sizes split at the midpoints of 9, 14 and 20 px. */
#include "score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const demo_colour_names[DEMO_N_COLOURS] = {"red",   "green", "blue",   "yellow",
                                                       "white", "black", "orange", "purple"};
const uint8_t demo_palette[DEMO_N_COLOURS][3] = {
    {220, 40, 40},   {40, 170, 60}, {40, 80, 220},  {240, 220, 40},
    {245, 245, 245}, {15, 15, 15},  {245, 140, 30}, {140, 60, 190},
};
const char *const demo_shape_names[DEMO_N_SHAPES] = {"circle", "square", "triangle"};
const char *const demo_attr_names[5] = {"colour", "background", "shape", "position", "size"};

static const char *const size_words[DEMO_N_SIZES] = {"small", "", "large"};
static const double size_px[DEMO_N_SIZES] = {9, 14, 20};
static const char *const pos_words[DEMO_N_POS] = {"on the left", "on the right", "at the top",
                                                  "at the bottom", "in the centre"};
static const double pos_xy[DEMO_N_POS][2] = {{20, 32}, {44, 32}, {32, 20}, {32, 44}, {32, 32}};

bool demo_held_back(int colour, int shape, int bg) {
    return colour != bg && (7 * colour + 3 * shape + 5 * bg) % 11 == 0;
}

/* ---- captions ---- */

/* Index of the word list entry that s starts with (followed by a space or the end), -1 if
 * none; *s moves past it and one space. */
static int take_word(const char **s, const char *const *words, int n) {
    for (int i = 0; i < n; i++) {
        size_t len = strlen(words[i]);
        if (len && !strncmp(*s, words[i], len) && ((*s)[len] == ' ' || (*s)[len] == '\0')) {
            *s += len + ((*s)[len] == ' ');
            return i;
        }
    }
    return -1;
}

static bool take(const char **s, const char *lit) {
    size_t len = strlen(lit);
    if (strncmp(*s, lit, len)) return false;
    *s += len;
    return true;
}

bool demo_parse_caption(const char *text, demo_spec *out) {
    if (!text || !out) return false;
    const char *s = text;
    demo_spec d = {.size = DEMO_MEDIUM, .pos = DEMO_CENTRE};
    if (!take(&s, "a ")) return false;
    int k = take_word(&s, size_words, DEMO_N_SIZES);
    if (k >= 0) d.size = k;
    if ((d.colour = take_word(&s, demo_colour_names, DEMO_N_COLOURS)) < 0) return false;
    if ((d.shape = take_word(&s, demo_shape_names, DEMO_N_SHAPES)) < 0) return false;
    /* "on the left" and "on a COLOUR background" share "on ": try the positions first */
    k = take_word(&s, pos_words, DEMO_N_POS);
    if (k >= 0) d.pos = k;
    if (!take(&s, "on a ")) return false;
    if ((d.bg = take_word(&s, demo_colour_names, DEMO_N_COLOURS)) < 0) return false;
    if (strcmp(s, "background") || d.bg == d.colour) return false;
    *out = d;
    return true;
}

char *demo_caption(const demo_spec *s, char *buf, size_t size) {
    snprintf(buf, size, "a %s%s%s %s%s%s on a %s background", size_words[s->size],
             s->size == DEMO_MEDIUM ? "" : " ", demo_colour_names[s->colour],
             demo_shape_names[s->shape], s->pos == DEMO_CENTRE ? "" : " ",
             s->pos == DEMO_CENTRE ? "" : pos_words[s->pos], demo_colour_names[s->bg]);
    return buf;
}

int demo_split_specs(bool held_back, demo_spec *out, int max) {
    int n = 0;
    for (int c = 0; c < DEMO_N_COLOURS; c++)
        for (int sh = 0; sh < DEMO_N_SHAPES; sh++)
            for (int b = 0; b < DEMO_N_COLOURS; b++) {
                if (c == b || demo_held_back(c, sh, b) != held_back) continue;
                for (int z = 0; z < DEMO_N_SIZES; z++)
                    for (int p = 0; p < DEMO_N_POS; p++) {
                        if (out && n < max) out[n] = (demo_spec){c, sh, b, z, p};
                        n++;
                    }
            }
    return out && n > max ? max : n;
}

int demo_pick_specs(bool held_back, int n, demo_spec *out) {
    int total = demo_split_specs(held_back, NULL, 0);
    demo_spec *all = malloc((size_t)total * sizeof *all);
    if (!all || n <= 0) {
        free(all);
        return 0;
    }
    demo_split_specs(held_back, all, total);
    if (n > total) n = total;
    for (int i = 0; i < n; i++) out[i] = all[(long)i * total / n];
    free(all);
    return n;
}

double demo_psnr(double sum_sq, double n_bytes) {
    if (n_bytes <= 0) return 0;
    double mse = sum_sq / n_bytes;
    return mse > 0 ? 10.0 * log10(255.0 * 255.0 / mse) : INFINITY;
}

/* ---- colours ---- */

static double dist2(const double a[3], const double b[3]) {
    double d0 = a[0] - b[0], d1 = a[1] - b[1], d2 = a[2] - b[2];
    return d0 * d0 + d1 * d1 + d2 * d2;
}

static double pixel_dist2(const uint8_t *p, const double c[3]) {
    double q[3] = {p[0], p[1], p[2]};
    return dist2(q, c);
}

static int nearest_palette(const double c[3]) {
    int best = 0;
    double bd = INFINITY;
    for (int i = 0; i < DEMO_N_COLOURS; i++) {
        double q[3] = {demo_palette[i][0], demo_palette[i][1], demo_palette[i][2]};
        double d = dist2(c, q);
        if (d < bd) bd = d, best = i;
    }
    return best;
}

/* Per-channel median of the pixels whose mask byte is set (histograms: exact, no sort). */
static bool median_colour(const uint8_t *rgb, const uint8_t *mask, int n, double out[3]) {
    int hist[3][256] = {{0}};
    int count = 0;
    for (int i = 0; i < n; i++) {
        if (!mask[i]) continue;
        for (int c = 0; c < 3; c++) hist[c][rgb[3 * i + c]]++;
        count++;
    }
    if (!count) return false;
    for (int c = 0; c < 3; c++) {
        int acc = 0, v = 0;
        while (v < 255 && (acc += hist[c][v]) * 2 < count) v++;
        out[c] = v;
    }
    return true;
}

/* ---- regions ---- */

/* Keeps only the largest 4-connected component of mask (in place); returns its size. */
static int largest_component(uint8_t *mask, int w, int h) {
    int n = w * h;
    int *label = calloc((size_t)n, sizeof *label), *stack = malloc((size_t)n * sizeof *stack);
    int best = 0, best_size = 0, next = 0;
    if (!label || !stack) {
        free(label);
        free(stack);
        return 0;
    }
    for (int s = 0; s < n; s++) {
        if (!mask[s] || label[s]) continue;
        int top = 0, size = 0;
        label[s] = ++next;
        stack[top++] = s;
        while (top) {
            int i = stack[--top], x = i % w, y = i / w;
            size++;
            int nb[4] = {x > 0 ? i - 1 : -1, x < w - 1 ? i + 1 : -1, y > 0 ? i - w : -1,
                         y < h - 1 ? i + w : -1};
            for (int k = 0; k < 4; k++)
                if (nb[k] >= 0 && mask[nb[k]] && !label[nb[k]]) {
                    label[nb[k]] = next;
                    stack[top++] = nb[k];
                }
        }
        if (size > best_size) best_size = size, best = next;
    }
    for (int i = 0; i < n; i++) mask[i] = label[i] == best && best;
    free(label);
    free(stack);
    return best_size;
}

/* Morphological opening of mask by a (2r+1)^2 square (erode, then dilate): removes every
 * part thinner than 2r+1 pixels (a one-pixel line or spur along an edge) and keeps the
 * body. tmp holds w*h bytes. */
static void open_mask(uint8_t *mask, uint8_t *tmp, int w, int h, int r) {
    for (int pass = 0; pass < 2; pass++) { /* 0: erode mask -> tmp; 1: dilate tmp -> mask */
        const uint8_t *src = pass ? tmp : mask;
        uint8_t *dst = pass ? mask : tmp;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int any = 0, all = 1;
                for (int dy = -r; dy <= r; dy++)
                    for (int dx = -r; dx <= r; dx++) {
                        int yy = y + dy, xx = x + dx;
                        int v = yy >= 0 && yy < h && xx >= 0 && xx < w && src[yy * w + xx];
                        any |= v, all &= v;
                    }
                dst[y * w + x] = (uint8_t)(pass ? any : all);
            }
    }
}

/* Mean width (set pixels per row) of the rows around fraction f of the box's height. */
static double width_at(const uint8_t *mask, int w, int y0, int y1, double f) {
    int bh = y1 - y0 + 1, yc = y0 + (int)floor(f * bh), rows = 0;
    double sum = 0;
    for (int y = yc - 1; y <= yc + 1; y++) {
        if (y < y0 || y > y1) continue;
        int c = 0;
        for (int x = 0; x < w; x++) c += mask[y * w + x];
        sum += c;
        rows++;
    }
    return rows ? sum / rows : 0;
}

/* Geometry of the set pixels: the shape, its centre and half-extent. */
static void read_geometry(const uint8_t *mask, int w, int h, double scale, demo_reading *r) {
    int x0 = w, x1 = -1, y0 = h, y1 = -1, area = 0;
    double sx = 0, sy = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            if (!mask[y * w + x]) continue;
            area++;
            sx += x + 0.5, sy += y + 0.5;
            if (x < x0) x0 = x;
            if (x > x1) x1 = x;
            if (y < y0) y0 = y;
            if (y > y1) y1 = y;
        }
    r->area = area;
    if (!area) return;
    r->fill = (double)area / ((double)(x1 - x0 + 1) * (y1 - y0 + 1));
    double top = width_at(mask, w, y0, y1, 0.25), bottom = width_at(mask, w, y0, y1, 0.75);
    r->widen = bottom > 0 ? top / bottom : 1;
    int shape = r->widen < 0.6 ? 2 : r->fill > 0.89 ? 1 : 0;
    r->found.shape = shape;
    if (shape == 2) { /* the spec's triangle centre: its bounding box's */
        r->cx = 0.5 * (x0 + x1 + 1), r->cy = 0.5 * (y0 + y1 + 1);
    } else {
        r->cx = sx / area, r->cy = sy / area;
    }
    double a = area / (scale * scale); /* in 64x64 pixels */
    r->half_extent = shape == 0 ? sqrt(a / M_PI) : shape == 1 ? 0.5 * sqrt(a) : sqrt(0.5 * a);
    double small_medium = 0.5 * (size_px[0] + size_px[1]),
           medium_large = 0.5 * (size_px[1] + size_px[2]);
    r->found.size = r->half_extent < small_medium   ? DEMO_SMALL
                    : r->half_extent < medium_large ? DEMO_MEDIUM
                                                    : DEMO_LARGE;
    double best = INFINITY;
    for (int p = 0; p < DEMO_N_POS; p++) {
        double dx = r->cx / scale - pos_xy[p][0], dy = r->cy / scale - pos_xy[p][1];
        if (dx * dx + dy * dy < best) best = dx * dx + dy * dy, r->found.pos = p;
    }
}

bool demo_score_image(const uint8_t *rgb, int w, int h, const demo_spec *want, demo_reading *out) {
    if (!rgb || !out || w < 8 || h < 8) return false;
    memset(out, 0, sizeof *out);
    out->found = (demo_spec){-1, -1, -1, -1, -1};
    int n = w * h;
    uint8_t *mask = malloc((size_t)n);
    if (!mask) return false;
    /* background: the 2-px border ring */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) mask[y * w + x] = x < 2 || y < 2 || x >= w - 2 || y >= h - 2;
    double bg[3], fg[3];
    median_colour(rgb, mask, n, bg);
    out->found.bg = nearest_palette(bg);
    /* shape colour from the pixels clearly off the background (60 ~ 3/4 of the closest
     * palette pair, orange-yellow at 81) */
    for (int i = 0; i < n; i++) mask[i] = pixel_dist2(rgb + 3 * i, bg) > 60.0 * 60.0;
    if (largest_component(mask, w, h) > 0 && median_colour(rgb, mask, n, fg)) {
        out->found.colour = nearest_palette(fg);
        /* the outline: every pixel nearer the shape's colour than the background's, less
         * one-pixel lines and spurs (a square with a stray row of pixels along its top
         * edge has a bounding box too wide for its area); the whole region if the
         * opening leaves nothing */
        const double scale = 0.5 * (w + h) / 64.0;
        for (int i = 0; i < n; i++)
            mask[i] = pixel_dist2(rgb + 3 * i, fg) < pixel_dist2(rgb + 3 * i, bg);
        largest_component(mask, w, h);
        uint8_t *opened = malloc((size_t)n * 2);
        if (opened) {
            memcpy(opened, mask, (size_t)n);
            open_mask(opened, opened + n, w, h, scale < 1.5 ? 1 : (int)lround(scale));
            if (largest_component(opened, w, h) > 0) memcpy(mask, opened, (size_t)n);
            free(opened);
        }
        read_geometry(mask, w, h, scale, out);
    }
    free(mask);
    if (want) {
        out->ok[DEMO_ATTR_COLOUR] = out->found.colour == want->colour;
        out->ok[DEMO_ATTR_BG] = out->found.bg == want->bg;
        out->ok[DEMO_ATTR_SHAPE] = out->area > 0 && out->found.shape == want->shape;
        out->ok[DEMO_ATTR_POS] = out->area > 0 && out->found.pos == want->pos;
        out->ok[DEMO_ATTR_SIZE] = out->area > 0 && out->found.size == want->size;
    }
    return true;
}

/* ---- tallies ---- */

void demo_tally_add(demo_tally *t, const demo_reading *r) {
    t->n++;
    bool all = true;
    for (int a = 0; a < 5; a++) {
        t->right[a] += r->ok[a];
        all &= r->ok[a];
    }
    t->csb += r->ok[DEMO_ATTR_COLOUR] && r->ok[DEMO_ATTR_BG] && r->ok[DEMO_ATTR_SHAPE];
    t->all += all;
}

double demo_tally_percent(const demo_tally *t, int a) {
    if (!t->n) return 0;
    int k = a < 5 ? t->right[a] : a == 5 ? t->csb : t->all;
    return 100.0 * k / t->n;
}

char *demo_tally_line(const demo_tally *t, char *buf, size_t size) {
    snprintf(buf, size,
             "n=%d colour %.1f%% background %.1f%% shape %.1f%% position %.1f%% size %.1f%% | "
             "colour+background+shape %.1f%% all five %.1f%%",
             t->n, demo_tally_percent(t, 0), demo_tally_percent(t, 1), demo_tally_percent(t, 2),
             demo_tally_percent(t, 3), demo_tally_percent(t, 4), demo_tally_percent(t, 5),
             demo_tally_percent(t, 6));
    return buf;
}
