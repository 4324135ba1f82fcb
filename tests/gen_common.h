/* Pieces the end-to-end generation tests share: a log sink that collects lines (so a
 * test can check what the library said), and the one request they all run. */
#ifndef SDC_TESTS_GEN_COMMON_H
#define SDC_TESTS_GEN_COMMON_H

#include <stdio.h>
#include <string.h>

#include "sdc.h"

static char g_log[16384] __attribute__((unused));

static inline void capture(sdc_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    size_t n = strlen(g_log);
    snprintf(g_log + n, sizeof g_log - n, "%s\n", msg);
}

/* Context parameters for the golden tiny MiniT2I (set A, F32) and its tokenizer. */
static inline void t_golden_context_params(sdc_context_params *cp) {
    sdc_context_params_init(cp);
    cp->diffusion_model_path = SDC_GOLDEN_DIR "/minit2i/minit2i_a_dit_f32.safetensors";
    cp->t5xxl_path = SDC_GOLDEN_DIR "/minit2i/minit2i_a_t5_f32.safetensors";
    cp->t5_tokenizer_path = SDC_GOLDEN_DIR "/tokenizer/tokenizer.json";
}

/* "a lighthouse at dusk", w x h, `steps` euler steps at CFG 5, seed 11, cpu rng, `batch`
 * images (the second one runs after the text encoder's phase ended). */
static inline void t_lighthouse_params(sdc_generate_params *p, int w, int h, int steps, int batch) {
    sdc_generate_params_init(p);
    p->prompt = "a lighthouse at dusk";
    p->width = w;
    p->height = h;
    p->steps = steps;
    p->cfg_scale = 5;
    p->seed = 11;
    p->rng = "cpu";
    p->batch_count = batch;
}

#endif
