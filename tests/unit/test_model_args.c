/* --model-args: sd.cpp's keys read (qwen_image_zero_cond_t and its strict bools; the Chroma
 * keys checked and ignored), sd.cpp's list syntax (',' or ';', spaces trimmed, empty items
 * skipped), and the errors sdc gives where sd.cpp only warns. End to end the key is checked by
 * test_qwen_edit_sdcpp's e2m case (sd.cpp's 2511 image from the unmarked DiT). */
#include "test_util.h"

#include "pipeline/model_args.h"

static bool zero_cond(const char *args, bool *ok) {
    sdc_model_args m;
    memset(&m, 0x5a, sizeof m);
    *ok = sdc_model_args_parse(args, &m) == SDC_OK;
    return m.qwen_image_zero_cond_t;
}

int main(void) {
    static const struct {
        const char *args;
        bool on;
    } good[] = {
        {NULL, false},
        {"", false},
        {"qwen_image_zero_cond_t=true", true},
        {" qwen_image_zero_cond_t = ON ;", true},
        {"qwen_image_zero_cond_t=1,qwen_image_zero_cond_t=no", true}, /* only switches it on */
        {"qwen_image_zero_cond_t=off", false},
        {"chroma_use_dit_mask=false,chroma_use_t5_mask=yes,chroma_t5_mask_pad=1", false},
        {",,qwen_image_zero_cond_t=Yes,", true},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        bool ok = false, on = zero_cond(good[i].args, &ok);
        CHECK(ok && on == good[i].on, "'%s': ok %d zero_cond_t %d (%s)",
              good[i].args ? good[i].args : "(null)", ok, on, sdc_last_error());
    }
    static const struct {
        const char *args, *msg;
    } bad[] = {
        {"qwen_image_zero_cond_t=maybe", "invalid value 'maybe' for 'qwen_image_zero_cond_t'"},
        {"qwen_image_zero_cond_t", "'qwen_image_zero_cond_t' is not key=value"},
        {"zero_cond_t=true", "unknown key 'zero_cond_t'"},
        {"chroma_t5_mask_pad=two", "invalid value 'two' for 'chroma_t5_mask_pad'"},
        {"chroma_use_dit_mask=2", "invalid value '2' for 'chroma_use_dit_mask'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bool ok = true;
        zero_cond(bad[i].args, &ok);
        CHECK(!ok && strstr(sdc_last_error(), bad[i].msg) &&
                  strstr(sdc_last_error(), "--model-args"),
              "'%s' refused naming it: %s", bad[i].args, sdc_last_error());
    }
    printf("model args: %zu lists read, %zu refused\n", sizeof good / sizeof good[0],
           sizeof bad / sizeof bad[0]);
    TEST_MAIN_END();
}
