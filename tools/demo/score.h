/* The demo model's quality check (issue 14, docs/demo.md): the caption grammar of the demo
 * data (tools/demo/make_data.py), its held-back prompts, and a scorer that reads a picture
 * with plain image analysis, never by comparing it with earlier outputs:
 *   background   the median colour of the 2-px border ring, nearest palette colour;
 *   shape pixels  pixels closer to the shape's colour than to the background's (the shape's
 *                 colour found first from pixels far from the background), largest
 *                 4-connected component;
 *   shape colour the median shape pixel, nearest palette colour;
 *   shape        triangle when the outline widens from top to bottom (width at 3/4 of the
 *                height well above the width at 1/4), else square or circle by the fill ratio
 *                of the bounding box (1.0 vs 0.785);
 *   position     the centroid (triangle: the centre of its bounding box, as the spec places
 *                it), nearest of the five positions;
 *   size         the half-extent the area gives for the shape found, nearest of 9/14/20 px. */
#ifndef SDC_TOOLS_DEMO_SCORE_H
#define SDC_TOOLS_DEMO_SCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEMO_N_COLOURS 8
#define DEMO_N_SHAPES  3
#define DEMO_N_SIZES   3
#define DEMO_N_POS     5

enum { DEMO_SMALL = 0, DEMO_MEDIUM = 1, DEMO_LARGE = 2 };
enum { DEMO_LEFT = 0, DEMO_RIGHT = 1, DEMO_TOP = 2, DEMO_BOTTOM = 3, DEMO_CENTRE = 4 };

/* One single-shape scene: indices in the spec's orders (red=0..purple=7; circle=0, square=1,
 * triangle=2). */
typedef struct demo_spec {
    int colour, shape, bg, size, pos;
} demo_spec;

extern const char *const demo_colour_names[DEMO_N_COLOURS];
extern const uint8_t demo_palette[DEMO_N_COLOURS][3];
extern const char *const demo_shape_names[DEMO_N_SHAPES];

/* True for the (shape colour, shape, background) triples never shown in training. */
bool demo_held_back(int colour, int shape, int bg);

/* Parses "a [small |large ]COLOUR SHAPE[ POSITION] on a COLOUR background" (no position or
 * "in the centre": centre). Returns false for anything else. */
bool demo_parse_caption(const char *text, demo_spec *out);
/* The caption of s; a centred shape gets no position words. Returns buf. */
char *demo_caption(const demo_spec *s, char *buf, size_t size);

/* Every scene of a split (held-back or training triples x sizes x positions, in that order;
 * 240 held back, 2280 for training) into out (room for max), returns the count. */
int demo_split_specs(bool held_back, demo_spec *out, int max);
/* n scenes spread evenly over a split (every total/n-th), returns how many (<= n). */
int demo_pick_specs(bool held_back, int n, demo_spec *out);

/* PSNR in dB of two RGB pictures of n bytes each from their summed squared error. */
double demo_psnr(double sum_sq, double n_bytes);

/* What the scorer read from one picture. */
typedef struct demo_reading {
    demo_spec found;
    int area;           /* shape pixels (0: no shape found) */
    double fill;        /* area / bounding box area */
    double widen;       /* outline width at 1/4 of the height over the width at 3/4 */
    double cx, cy;      /* the centre used for the position, pixels */
    double half_extent; /* from the area */
    bool ok[5];         /* shape colour, background, shape, position, size right */
} demo_reading;

enum { DEMO_ATTR_COLOUR, DEMO_ATTR_BG, DEMO_ATTR_SHAPE, DEMO_ATTR_POS, DEMO_ATTR_SIZE };
extern const char *const demo_attr_names[5];

/* Reads an RGB picture (row-major, 3 bytes a pixel, any size: positions and sizes scale with
 * the width/height over 64) and compares it with want. Returns false only for a picture it
 * cannot read (NULL, smaller than 8x8). */
bool demo_score_image(const uint8_t *rgb, int width, int height, const demo_spec *want,
                      demo_reading *out);

/* Counts per attribute over many pictures. */
typedef struct demo_tally {
    int n;
    int right[5];
    int csb; /* shape colour, background and shape all right: the criterion */
    int all; /* all five */
} demo_tally;

void demo_tally_add(demo_tally *t, const demo_reading *r);
/* Percent right of attribute a (0..4), or of csb (5) / all (6). */
double demo_tally_percent(const demo_tally *t, int a);
/* One line: "n=240 colour 100.0% background 100.0% shape 99.6% ... csb 99.6% all 98.8%". */
char *demo_tally_line(const demo_tally *t, char *buf, size_t size);

#endif
