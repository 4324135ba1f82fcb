/* --ref-image-args: sd.cpp's presets (its RefImageParams table, model.hpp at 97d29908, copied
 * here as expected values field by field) and key=value overrides, sd.cpp's order (the first
 * preset= picks the preset, then every key, then the first vlm_size), and the errors sdc gives
 * where sd.cpp only warns. */
#include "test_util.h"

#include "pipeline/ref_image_args.h"

static sdc_ref_image_opts parse_ok(const char *args, const char *preset) {
    sdc_ref_image_opts o;
    memset(&o, 0x5a, sizeof o);
    sdc_status s = sdc_ref_image_opts_parse(args, preset, &o);
    CHECK(s == SDC_OK, "parse '%s' (preset %s): %s", args ? args : "(null)",
          preset ? preset : "(null)", sdc_last_error());
    return o;
}

static void presets(void) {
    sdc_ref_image_opts q = parse_ok(NULL, "qwen");
    CHECK(q.pass_to_vlm && q.pass_to_dit && q.ref_index == SDC_REF_INDEX_INCREASE &&
              !q.force_ref_timestep_zero && q.resize_before_vae && q.vae_input_max_pixels == -1 &&
              !q.resize_vae_to_target && q.vlm_resize_mode == SDC_VLM_RESIZE_AREA &&
              q.vlm_min_size == -1 && q.vlm_max_size == -1,
          "qwen preset");
    sdc_ref_image_opts l = parse_ok("", "qwen_layered");
    CHECK(l.pass_to_vlm && l.ref_index == SDC_REF_INDEX_DECREASE, "qwen_layered preset");
    sdc_ref_image_opts d = parse_ok(NULL, NULL);
    CHECK(!d.pass_to_vlm && d.pass_to_dit && d.ref_index == SDC_REF_INDEX_FIXED &&
              d.resize_before_vae && d.vlm_resize_mode == SDC_VLM_RESIZE_AREA,
          "default (RefImageParams' own defaults)");
    sdc_ref_image_opts m = parse_ok("preset=mage_flow", "qwen");
    CHECK(m.resize_vae_to_target && m.vlm_resize_mode == SDC_VLM_RESIZE_LONGEST_SIDE &&
              m.vlm_max_size == 384 && m.vlm_min_size == -1,
          "mage_flow preset picked by preset=");
    sdc_ref_image_opts k = parse_ok("preset=krea2_edit", "qwen");
    CHECK(k.vlm_min_size == 768 && k.vlm_max_size == 768, "krea2_edit preset");
    sdc_ref_image_opts c = parse_ok("preset=cosmos_reference", "qwen");
    CHECK(!c.resize_before_vae && !c.pass_to_vlm && c.vlm_resize_mode == SDC_VLM_RESIZE_NONE,
          "cosmos_reference preset");
    /* "preset=default": RefImageParams' defaults, as sd.cpp's lookup falls through */
    sdc_ref_image_opts dd = parse_ok("preset=default", "qwen");
    CHECK(!dd.pass_to_vlm && dd.ref_index == SDC_REF_INDEX_FIXED, "preset=default");
}

static void overrides(void) {
    /* keys before the preset still apply after it; separators ',' and ';'; spaces trimmed;
     * sd.cpp's bool spellings in any case */
    sdc_ref_image_opts o =
        parse_ok(" pass_to_vlm = OFF ; ref_index_mode=fixed, preset=qwen_layered,"
                 "resize_before_vae=No,vae_input_max_pixels=40000,vlm_resize_mode=longest_side,"
                 "vlm_min_size=100,vlm_max_size=200,pass_to_dit=yes,,",
                 "qwen");
    CHECK(!o.pass_to_vlm && o.pass_to_dit && o.ref_index == SDC_REF_INDEX_FIXED &&
              !o.resize_before_vae && o.vae_input_max_pixels == 40000 &&
              o.vlm_resize_mode == SDC_VLM_RESIZE_LONGEST_SIDE && o.vlm_min_size == 100 &&
              o.vlm_max_size == 200,
          "overrides");
    /* later keys win; vlm_size (the first one) is applied last and sets both bounds */
    sdc_ref_image_opts v = parse_ok(
        "vlm_size=448,vlm_max_size=1,ref_index_mode=decrease,ref_index_mode=increase,vlm_size=9",
        "qwen");
    CHECK(v.vlm_min_size == 448 && v.vlm_max_size == 448 && v.ref_index == SDC_REF_INDEX_INCREASE,
          "order: vlm_size %d/%d", v.vlm_min_size, v.vlm_max_size);
    /* only the first preset= counts */
    sdc_ref_image_opts p2 = parse_ok("preset=flux2,preset=qwen", "qwen_layered");
    CHECK(!p2.pass_to_vlm && p2.vlm_resize_mode == SDC_VLM_RESIZE_NONE, "first preset wins");
    sdc_ref_image_opts t = parse_ok("force_ref_timestep_zero=1", "qwen");
    CHECK(t.force_ref_timestep_zero, "force_ref_timestep_zero parsed (warned: Krea2 only)");
}

static void errors(void) {
    static const char *bad[] = {
        "pass_to_vlm",       /* not key=value */
        "colour=red",        /* unknown key */
        "pass_to_dit=maybe", /* not a bool */
        "vlm_size=12x",      /* not an int */
        "vlm_max_size=",     /* empty int */
        "vae_input_max_pixels=99999999999",
        "ref_index_mode=upward", /* not a mode */
        "vlm_resize_mode=AREA",  /* sd.cpp's names are lower case */
        "preset=qwen_edit",      /* no such preset */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sdc_ref_image_opts o;
        sdc_status s = sdc_ref_image_opts_parse(bad[i], "qwen", &o);
        printf("  '%s': %s\n", bad[i], s == SDC_OK ? "accepted" : sdc_last_error());
        CHECK(s == SDC_ERR_INVALID_ARG, "'%s' must be refused", bad[i]);
    }
    char longv[300];
    memset(longv, 'a', sizeof longv);
    memcpy(longv, "preset=", 7);
    longv[sizeof longv - 1] = '\0';
    sdc_ref_image_opts o;
    CHECK(sdc_ref_image_opts_parse(longv, "qwen", &o) == SDC_ERR_INVALID_ARG, "long item");
}

int main(void) {
    presets();
    overrides();
    errors();
    TEST_MAIN_END();
}
