/* Every sd-cli flag through sdc's parser, driven by tests/data/sdcli_flags.tsv (derived
 * from sd.cpp's examples/common/common.cpp and examples/cli/main.cpp): each spelling is
 * known, takes its value the way sd-cli does (short/long, --x=v, value kind, joined
 * repeats), and answers with its documented status: works (no message), error (one line
 * naming the flag), warning (a note naming the flag), or passed to the library (the
 * library's parameters change). sdc and sdc-server are both checked. */
#include <unistd.h>

#include "args.h"
#include "test_util.h"

#define MAXARGS 16

typedef struct row {
    char lng[64], shrt[8], group[16], sdkind[16], joined[4], value[16], test[128], quiet[32];
    char status[16], decided[16], expect[16], scope[8];
} row;

static row g_rows[256];
static int g_n;
static char g_txt[256]; /* a prompt file */

static bool load_rows(void) {
    FILE *f = fopen(SDC_SOURCE_DIR "/tests/data/sdcli_flags.tsv", "r");
    if (!f) return false;
    char line[2048];
    bool header = true;
    while (fgets(line, sizeof line, f) && g_n < 256) {
        if (line[0] == '#') continue;
        if (header) { /* column names */
            header = false;
            continue;
        }
        line[strcspn(line, "\r\n")] = '\0';
        char *col[13];
        int nc = 0;
        for (char *p = line; nc < 13;) {
            col[nc++] = p;
            char *tab = strchr(p, '\t');
            if (!tab) break;
            *tab = '\0';
            p = tab + 1;
        }
        if (nc < 13) continue;
        row *r = &g_rows[g_n++];
        snprintf(r->lng, sizeof r->lng, "%.*s", (int)sizeof r->lng - 1, col[0]);
        snprintf(r->shrt, sizeof r->shrt, "%.*s", (int)sizeof r->shrt - 1, col[1]);
        snprintf(r->group, sizeof r->group, "%.*s", (int)sizeof r->group - 1, col[2]);
        snprintf(r->sdkind, sizeof r->sdkind, "%.*s", (int)sizeof r->sdkind - 1, col[3]);
        snprintf(r->joined, sizeof r->joined, "%.*s", (int)sizeof r->joined - 1, col[4]);
        snprintf(r->value, sizeof r->value, "%.*s", (int)sizeof r->value - 1, col[5]);
        snprintf(r->test, sizeof r->test, "%.*s", (int)sizeof r->test - 1, col[6]);
        snprintf(r->quiet, sizeof r->quiet, "%.*s", (int)sizeof r->quiet - 1, col[7]);
        snprintf(r->status, sizeof r->status, "%.*s", (int)sizeof r->status - 1, col[8]);
        snprintf(r->decided, sizeof r->decided, "%.*s", (int)sizeof r->decided - 1, col[9]);
        snprintf(r->expect, sizeof r->expect, "%.*s", (int)sizeof r->expect - 1, col[10]);
        snprintf(r->scope, sizeof r->scope, "%.*s", (int)sizeof r->scope - 1, col[11]);
    }
    fclose(f);
    return g_n > 0;
}

/* The parser opens only --prompt-file's files; other @names become plain strings. */
static const char *test_value(const row *r) {
    if (!strcmp(r->test, "@TXT")) return g_txt;
    return r->test[0] == '@' ? r->test + 1 : r->test;
}

static sdc_cli_parse_result parse_v(sdc_cli_args *a, sdc_cli_program prog, int n,
                                    const char *const *args) {
    char *argv[MAXARGS];
    int argc = 0;
    argv[argc++] = "sdc";
    argv[argc++] = "-m";
    argv[argc++] = "m.gguf";
    for (int i = 0; i < n && argc < MAXARGS; i++) argv[argc++] = (char *)args[i];
    return sdc_cli_parse(a, prog, argc, argv);
}

static bool has_value(const row *r) {
    return strcmp(r->value, "none") != 0;
}

static int notes_naming(const sdc_cli_args *a, const char *flag) {
    int n = 0;
    size_t len = strlen(flag);
    for (int i = 0; i < a->n_notes; i++)
        n += !strncmp(a->notes[i], flag, len) && a->notes[i][len] == ':';
    return n;
}

/* One spelling with one value: the outcome must be the row's documented status. */
static bool check_outcome(const row *r, sdc_cli_program prog, const char *spelling,
                          const char *value, bool eq_form) {
    sdc_cli_args a;
    char joined[256];
    const char *args[2];
    int n = 0;
    if (has_value(r) && eq_form) {
        snprintf(joined, sizeof joined, "%s=%s", spelling, value);
        args[n++] = joined;
    } else {
        args[n++] = spelling;
        if (has_value(r)) args[n++] = value;
    }
    sdc_cli_parse_result res = parse_v(&a, prog, n, args);
    bool ok;
    const char *what = r->status;
    bool server_refuses = prog == SDC_CLI_PROGRAM_SERVER && !strcmp(r->scope, "cli");
    if (server_refuses) {
        what = "refused by sdc-server";
        ok = res == SDC_CLI_PARSE_ERROR && strstr(a.error, "not used by sdc-server");
    } else if (!strcmp(r->lng, "--help") || !strcmp(r->lng, "--version")) {
        ok = res == SDC_CLI_PARSE_EXIT && (a.help || a.version);
    } else if (!strcmp(r->status, "error")) {
        size_t len = strlen(r->lng);
        ok = res == SDC_CLI_PARSE_ERROR && !strncmp(a.error, r->lng, len) && a.error[len] == ':' &&
             !strchr(a.error, '\n');
    } else if (!strcmp(r->status, "warning")) {
        ok = res == SDC_CLI_PARSE_RUN && notes_naming(&a, r->lng) == 1 && a.n_notes == 1;
    } else {
        ok = res == SDC_CLI_PARSE_RUN && a.n_notes == 0 &&
             sdc_cli_flag_count(&a, spelling) >= 1; /* -m is given too */
    }
    CHECK(ok, "%s '%s %s'%s: expected %s, got result %d, error '%s', %d notes%s%s",
          prog == SDC_CLI_PROGRAM_SERVER ? "sdc-server" : "sdc", spelling,
          has_value(r) ? value : "", eq_form ? " (as --x=v)" : "", what, (int)res, a.error,
          a.n_notes, a.n_notes ? ": " : "", a.n_notes ? a.notes[0] : "");
    sdc_cli_args_free(&a);
    return ok;
}

/* Bad values are refused as sd-cli refuses them (a number that is not one, a name that
 * is not in the list, a value for a flag without one). */
static int check_bad_value(const row *r) { /* 1: refused, 0: not applicable or wrong */
    const char *bad = NULL, *needle = NULL;
    if (!strcmp(r->value, "int") || !strcmp(r->value, "seed"))
        bad = "many", needle = "is not an integer";
    else if (!strcmp(r->value, "float"))
        bad = "lots", needle = "is not a number";
    else if (!strcmp(r->value, "name"))
        bad = "no_such_name", needle = "unknown";
    else if (!strcmp(r->value, "sizes"))
        bad = "axb", needle = "is not a number";
    else if (!strcmp(r->lng, "--skip-layers") || !strcmp(r->lng, "--high-noise-skip-layers"))
        bad = "7,8", needle = "expected a list";
    else if (!strcmp(r->lng, "--prompt-file") || !strcmp(r->lng, "--negative-prompt-file"))
        bad = "/nonexistent/prompt.txt", needle = "cannot open";
    if (!bad) return 0;
    sdc_cli_args a;
    const char *args[2] = {r->lng, bad};
    sdc_cli_parse_result res = parse_v(&a, SDC_CLI_PROGRAM_SDC, 2, args);
    bool ok = res == SDC_CLI_PARSE_ERROR && strstr(a.error, needle) && strstr(a.error, r->lng);
    CHECK(ok, "'%s %s': expected an error with '%s', got %d '%s'", r->lng, bad, needle, (int)res,
          a.error);
    sdc_cli_args_free(&a);
    return ok;
}

/* Repeats: joined with ',' where sd-cli joins them, else the last one counts. */
static int check_repeat(const row *r) {
    if (!has_value(r) || !strcmp(r->lng, "--imat-in") || !strcmp(r->lng, "--model")) return 0;
    const char *v = test_value(r);
    sdc_cli_args a;
    const char *args[4] = {r->lng, v, r->lng, v};
    sdc_cli_parse_result res = parse_v(&a, SDC_CLI_PROGRAM_SDC, 4, args);
    char want[300];
    snprintf(want, sizeof want, !strcmp(r->joined, ",") ? "%s,%s" : "%s", v, v);
    const char *got = sdc_cli_flag_value(&a, r->lng);
    bool file = !strcmp(r->test, "@TXT"); /* the value kept is the file's text */
    bool ok = res != SDC_CLI_PARSE_EXIT && sdc_cli_flag_count(&a, r->lng) == 2 &&
              (file || (got && !strcmp(got, want)));
    CHECK(ok, "'%s' twice: count %d, value '%s', expected '%s' (%s)", r->lng,
          sdc_cli_flag_count(&a, r->lng), got ? got : "(null)", want, a.error);
    sdc_cli_args_free(&a);
    return ok;
}

/* A flag passed to the library must change the library's parameters. */
static int check_passed_on(const row *r) {
    if (strcmp(r->decided, "library") != 0) return 0;
    sdc_cli_args base, a;
    parse_v(&base, SDC_CLI_PROGRAM_SDC, 0, NULL);
    const char *args[2] = {r->lng, test_value(r)};
    parse_v(&a, SDC_CLI_PROGRAM_SDC, has_value(r) ? 2 : 1, args);
    sdc_context_params c0, c1;
    sdc_generate_params g0, g1;
    sdc_cli_to_context_params(&base, &c0);
    sdc_cli_to_context_params(&a, &c1);
    sdc_cli_to_generate_params(&base, &g0);
    sdc_cli_to_generate_params(&a, &g1);
    c0.model_path = c1.model_path = NULL; /* the same text, in two parses */
    bool changed = memcmp(&c0, &c1, sizeof c0) != 0 || memcmp(&g0, &g1, sizeof g0) != 0;
    if (!strcmp(r->lng, "--cpu-devices")) /* for sdc_set_cpu_devices, before any context */
        changed = a.cpu_devices == atoi(test_value(r)) && base.cpu_devices == 0;
    CHECK(changed, "%s: the library's parameters did not change", r->lng);
    sdc_cli_args_free(&base);
    sdc_cli_args_free(&a);
    return changed;
}

static void test_table(void) {
    CHECK(load_rows(), "cannot read tests/data/sdcli_flags.tsv");
    int sdcli = 0, shorts = 0, outcomes = 0, bad = 0, repeats = 0, passed = 0, quiet = 0;
    int by_status[5] = {0};
    static const char *const statuses[5] = {"works", "note", "lib", "error", "warning"};
    for (int i = 0; i < g_n; i++) {
        const row *r = &g_rows[i];
        bool own = !strcmp(r->group, "own");
        sdcli += !own;
        for (int s = 0; s < 5; s++) by_status[s] += !own && !strcmp(r->status, statuses[s]);
        CHECK(sdc_cli_is_known_flag(r->lng), "%s is unknown", r->lng);
        bool has_short = strcmp(r->shrt, "-") != 0;
        if (has_short) {
            CHECK(sdc_cli_is_known_flag(r->shrt), "%s (%s) is unknown", r->shrt, r->lng);
            shorts++;
        }
        const char *v = test_value(r);
        for (int prog = 1; prog <= 2; prog++) {
            outcomes += check_outcome(r, (sdc_cli_program)prog, r->lng, v, false);
            if (has_short) outcomes += check_outcome(r, (sdc_cli_program)prog, r->shrt, v, false);
            if (has_value(r)) outcomes += check_outcome(r, (sdc_cli_program)prog, r->lng, v, true);
        }
        if (strcmp(r->quiet, "-") != 0) {
            sdc_cli_args a;
            const char *args[2] = {r->lng, r->quiet};
            sdc_cli_parse_result res = parse_v(&a, SDC_CLI_PROGRAM_SDC, 2, args);
            bool ok = res == SDC_CLI_PARSE_RUN && a.n_notes == 0;
            CHECK(ok, "'%s %s' (the default) must pass quietly: %d '%s' %d notes", r->lng, r->quiet,
                  (int)res, a.error, a.n_notes);
            quiet += ok;
            sdc_cli_args_free(&a);
        }
        bad += check_bad_value(r);
        repeats += check_repeat(r);
        passed += check_passed_on(r);
    }
    CHECK(sdcli == 163, "the table lists %d sd-cli flags, sd.cpp has 163", sdcli);
    CHECK(sdc_cli_sdcli_flag_count() == sdcli, "the parser knows %d sd-cli flags, the data %d",
          sdc_cli_sdcli_flag_count(), sdcli);
    printf("%d sd-cli flags (%d short spellings) + %d of sdc's own: all known\n", sdcli, shorts,
           g_n - sdcli);
    printf("status: works %d, works with note %d, library decides %d, error %d, warning %d\n",
           by_status[0], by_status[1], by_status[2], by_status[3], by_status[4]);
    printf("outcomes as documented: %d spellings x programs; quiet defaults %d; bad values "
           "refused %d; repeats %d; passed to the library %d\n",
           outcomes, quiet, bad, repeats, passed);
}

/* Value details written out by hand from sd-cli's option table. */
static void test_details(void) {
    sdc_cli_args a;
    const char *alias[] = {"--qwen2vl", "q.gguf", "--qwen2vl_vision", "v.gguf", "--tae", "t.st"};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 6, alias) == SDC_CLI_PARSE_RUN, "aliases: %s", a.error);
    CHECK(a.ctx.llm_path && !strcmp(a.ctx.llm_path, "q.gguf") && a.ctx.llm_vision_path &&
              !strcmp(a.ctx.llm_vision_path, "v.gguf") && a.ctx.taesd_path &&
              !strcmp(a.ctx.taesd_path, "t.st"),
          "--qwen2vl = --llm, --qwen2vl_vision = --llm_vision, --tae = --taesd");
    sdc_cli_args_free(&a);

    const char *joins[] = {"--backend",  "te=cpu", "--backend",  "diffusion=cpu",
                           "--max-vram", "cpu=2",  "--max-vram", "cpu=3"};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 8, joins) == SDC_CLI_PARSE_RUN, "joins: %s", a.error);
    CHECK(a.ctx.backend && !strcmp(a.ctx.backend, "te=cpu,diffusion=cpu"), "--backend joined: %s",
          a.ctx.backend ? a.ctx.backend : "(null)");
    CHECK(a.ctx.max_vram && !strcmp(a.ctx.max_vram, "cpu=3"), "--max-vram: the last counts");
    sdc_cli_args_free(&a);

    const char *bools[] = {"--clip-on-cpu", "--vae-on-cpu",   "--offload-to-cpu",
                           "--vae-tiling",  "--diffusion-fa", "--disable-image-metadata"};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 6, bools) == SDC_CLI_PARSE_RUN, "bools: %s", a.error);
    CHECK(a.ctx.clip_on_cpu && a.ctx.vae_on_cpu && a.ctx.offload_to_cpu && a.ctx.vae_tiling &&
              a.ctx.diffusion_flash_attn && a.no_metadata,
          "bool flags reach their fields");
    sdc_cli_args_free(&a);

    const char *nums[] = {"--clip-skip",  "2", "--guidance",   "3.5", "--img-cfg-scale",    "1.5",
                          "--flow-shift", "3", "--prediction", "v",   "--preview-interval", "4"};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 12, nums) == SDC_CLI_PARSE_RUN, "nums: %s", a.error);
    CHECK(a.gen.clip_skip == 2 && a.gen.guidance == 3.5f && a.gen.img_cfg_scale == 1.5f &&
              a.ctx.flow_shift == 3.0f && a.ctx.prediction && !strcmp(a.ctx.prediction, "v") &&
              a.gen.preview_interval == 4,
          "values reach the library's fields");
    sdc_cli_args_free(&a);

    /* the reference flags join --ref-image-args after it, in sd-cli's order */
    const char *refs[] = {"--increase-ref-index", "--ref-image-args", "qwen",
                          "--disable-auto-resize-ref-image"};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 4, refs) == SDC_CLI_PARSE_RUN, "refs: %s", a.error);
    CHECK(a.gen.ref_image_args &&
              !strcmp(a.gen.ref_image_args, "qwen,resize_before_vae=0,ref_index_mode=increase"),
          "reference flags joined: %s", a.gen.ref_image_args ? a.gen.ref_image_args : "(null)");
    sdc_cli_args_free(&a);
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 1, refs) == SDC_CLI_PARSE_RUN && a.gen.ref_image_args &&
              !strcmp(a.gen.ref_image_args, "ref_index_mode=increase"),
          "--increase-ref-index alone: %s", a.gen.ref_image_args ? a.gen.ref_image_args : "(null)");
    sdc_cli_args_free(&a);

    /* --prompt-file reads the whole file as sd-cli does; the later of -p/--prompt-file wins */
    const char *pf[] = {"-p", "typed", "--prompt-file", g_txt, "--negative-prompt-file", g_txt};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 6, pf) == SDC_CLI_PARSE_RUN, "prompt file: %s", a.error);
    CHECK(!strcmp(a.gen.prompt, "a cat\nfrom a file\n") &&
              !strcmp(a.gen.negative_prompt, a.gen.prompt),
          "prompt from file: '%s'", a.gen.prompt);
    sdc_cli_args_free(&a);
    const char *pf2[] = {"--prompt-file", g_txt, "-p", "typed"};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 4, pf2) == SDC_CLI_PARSE_RUN &&
              !strcmp(a.gen.prompt, "typed"),
          "-p after --prompt-file wins");
    sdc_cli_args_free(&a);

    /* values that need no answer, and ones that do */
    const char *quiet[] = {"--slg-scale", "0", "--video-frames", "1", "--vae-format", "auto"};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 6, quiet) == SDC_CLI_PARSE_RUN && a.n_notes == 0,
          "neutral values pass quietly: %s", a.error);
    sdc_cli_args_free(&a);
    const char *lora[] = {"-p", "a <lora:style:0.8> cat"};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 2, lora) == SDC_CLI_PARSE_ERROR &&
              strstr(a.error, "LoRA is not supported yet"),
          "<lora:...> in the prompt: %s", a.error);
    sdc_cli_args_free(&a);
    const char *modes[] = {"-M", "vid_gen"};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 2, modes) == SDC_CLI_PARSE_ERROR &&
              strstr(a.error, "not supported yet"),
          "-M vid_gen: %s", a.error);
    sdc_cli_args_free(&a);
    char *up[] = {"sdc", "-M", "upscale", "--upscale-model", "x4.pth", "-i", "in.png"};
    CHECK(sdc_cli_parse(&a, SDC_CLI_PROGRAM_SDC, 7, up) == SDC_CLI_PARSE_RUN &&
              a.mode == SDC_CLI_MODE_UPSCALE && a.upscale_repeats == 1 &&
              a.upscale_tile_size == 128,
          "-M upscale needs no diffusion model: %s", a.error);
    sdc_cli_args_free(&a);
    CHECK(sdc_cli_parse(&a, SDC_CLI_PROGRAM_SDC, 5, up) == SDC_CLI_PARSE_ERROR &&
              strstr(a.error, "-i/--init-img"),
          "-M upscale without -i: %s", a.error);
    sdc_cli_args_free(&a);
    CHECK(sdc_cli_parse(&a, SDC_CLI_PROGRAM_SDC, 3, up) == SDC_CLI_PARSE_ERROR &&
              strstr(a.error, "--upscale-model"),
          "-M upscale without --upscale-model: %s", a.error);
    sdc_cli_args_free(&a);
    char *meta[] = {"sdc", "-M", "metadata", "--image", "x.png"};
    CHECK(sdc_cli_parse(&a, SDC_CLI_PROGRAM_SDC, 5, meta) == SDC_CLI_PARSE_RUN &&
              a.mode == SDC_CLI_MODE_METADATA && !strcmp(a.image_path, "x.png"),
          "-M metadata needs no model: %s", a.error);
    sdc_cli_args_free(&a);
    char *meta_raw[] = {"sdc", "-M", "metadata", "--image", "x.png", "--metadata-raw", "--hires"};
    CHECK(sdc_cli_parse(&a, SDC_CLI_PROGRAM_SDC, 7, meta_raw) == SDC_CLI_PARSE_RUN &&
              a.n_notes == 1 && !strncmp(a.notes[0], "--metadata-raw:", 15),
          "-M metadata: its own hints are answered, generation flags are not: %s", a.error);
    sdc_cli_args_free(&a);
    char *meta_bad[] = {"sdc", "-M", "metadata"};
    CHECK(sdc_cli_parse(&a, SDC_CLI_PROGRAM_SDC, 3, meta_bad) == SDC_CLI_PARSE_ERROR &&
              strstr(a.error, "--image"),
          "-M metadata without --image: %s", a.error);
    sdc_cli_args_free(&a);
    /* several warnings: one note each, in table order */
    const char *warns[] = {"--mmap", "--fa", "--canny"};
    CHECK(parse_v(&a, SDC_CLI_PROGRAM_SDC, 3, warns) == SDC_CLI_PARSE_RUN && a.n_notes == 3,
          "three warnings: %d", a.n_notes);
    sdc_cli_args_free(&a);
}

/* Defaults come from the library's *_init, not from copies in the parser. */
static void test_defaults_are_the_librarys(void) {
    sdc_cli_args a;
    sdc_cli_args_init(&a, SDC_CLI_PROGRAM_SDC);
    sdc_context_params c;
    sdc_generate_params g;
    sdc_context_params_init(&c);
    sdc_generate_params_init(&g);
    CHECK(!memcmp(&a.ctx, &c, sizeof c), "context defaults differ from sdc_context_params_init");
    CHECK(!memcmp(&a.gen, &g, sizeof g),
          "generation defaults differ from sdc_generate_params_init");
    sdc_cli_args_free(&a);
    /* names: every library sampler/scheduler/type is accepted */
    int n = 0;
    for (int i = 0; i < sdc_sampler_count(); i++) n += sdc_cli_is_sampler_name(sdc_sampler_name(i));
    for (int i = 0; i < sdc_scheduler_count(); i++)
        n += sdc_cli_is_scheduler_name(sdc_scheduler_name(i));
    CHECK(n == sdc_sampler_count() + sdc_scheduler_count(), "library names accepted: %d", n);
    printf("defaults equal the library's; %d sampler + %d scheduler names from the library\n",
           sdc_sampler_count(), sdc_scheduler_count());
}

/* docs/cli.md's table has a row for every flag, with the documented status. */
static void test_docs(void) {
    FILE *f = fopen(SDC_SOURCE_DIR "/docs/cli.md", "rb");
    CHECK(f != NULL, "cannot read docs/cli.md");
    if (!f) return;
    static char doc[1 << 18];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = '\0';
    static const struct {
        const char *status, *words;
    } words[] = {{"works", "| works"},
                 {"note", "| works (see note)"},
                 {"lib", "| library decides"},
                 {"error", "| **error**: not yet"},
                 {"warning", "| warning: ignored"}};
    int rows = 0;
    for (int i = 0; i < g_n; i++) {
        const row *r = &g_rows[i];
        char key[80];
        snprintf(key, sizeof key, "`%.63s` |", r->lng);
        const char *at = strstr(doc, key);
        const char *eol = at ? strchr(at, '\n') : NULL;
        const char *want = NULL;
        for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
            if (!strcmp(r->status, words[w].status)) want = words[w].words;
        const char *st = at && want ? strstr(at, want) : NULL;
        bool ok = at && want && st && (!eol || st < eol);
        CHECK(ok, "docs/cli.md: no row for %s with status '%s'", r->lng, r->status);
        rows += ok;
    }
    printf("docs/cli.md: %d/%d flags in the table with their status\n", rows, g_n);
}

int main(void) {
    snprintf(g_txt, sizeof g_txt, "%s/sdc_test_prompt_%d.txt", P_tmpdir, (int)getpid());
    FILE *f = fopen(g_txt, "wb");
    CHECK(f != NULL, "cannot write %s", g_txt);
    if (f) {
        fputs("a cat\nfrom a file\n", f);
        fclose(f);
    }
    test_table();
    test_details();
    test_defaults_are_the_librarys();
    test_docs();
    remove(g_txt);
    TEST_MAIN_END();
}
