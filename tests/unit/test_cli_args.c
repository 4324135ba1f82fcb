/* Flag parsing of the sdc program: defaults, every flag, every error path, output names.
 * The expected values come from sd-cli's documented behaviour (examples/cli/main.cpp and
 * examples/common/common.cpp of stable-diffusion.cpp), written out by hand here. */
#include <math.h>

#include "args.h"
#include "progress.h"
#include "test_util.h"

#define MAXARGS 64

/* Splits a command line on '|' (so values may contain spaces) and parses it. */
static sdc_cli_parse_result parse_line(sdc_cli_args *a, const char *line) {
    static char buf[4096];
    char *argv[MAXARGS];
    int argc = 0;
    argv[argc++] = "sdc";
    snprintf(buf, sizeof buf, "%s", line);
    if (*buf) {
        for (char *p = buf;;) {
            argv[argc++] = p;
            char *bar = strchr(p, '|');
            if (!bar) break;
            *bar = '\0';
            p = bar + 1;
        }
    }
    return sdc_cli_parse(a, SDC_CLI_PROGRAM_SDC, argc, argv);
}

static void test_defaults(void) {
    sdc_cli_args a;
    sdc_cli_parse_result r = parse_line(&a, "-m|model.safetensors");
    CHECK(r == SDC_CLI_PARSE_RUN, "minimal command: %s", a.error);
    CHECK(a.mode == SDC_CLI_MODE_IMG_GEN, "mode default");
    CHECK(!strcmp(a.ctx.model_path, "model.safetensors"), "model path");
    CHECK(a.gen.steps == 20, "steps default %d", a.gen.steps);
    CHECK(a.gen.cfg_scale == 7.0f, "cfg default %g", a.gen.cfg_scale);
    CHECK(a.gen.width == 512 && a.gen.height == 512, "size default %dx%d", a.gen.width,
          a.gen.height);
    CHECK(a.gen.seed == 42, "seed default");
    CHECK(!strcmp(a.gen.rng, "cuda"), "rng default %s", a.gen.rng);
    CHECK(a.gen.sampler_rng == NULL && a.gen.sampling_method == NULL && a.gen.scheduler == NULL,
          "sampler defaults");
    CHECK(isnan(a.gen.eta) && isnan(a.ctx.flow_shift), "eta/flow-shift default unset (NAN)");
    CHECK(a.gen.batch_count == 1 && a.ctx.n_threads == -1 && a.ctx.weight_type == -1,
          "batch/threads/type");
    CHECK(!strcmp(a.output_path, "output.png"), "output default %s", a.output_path);
    CHECK(!strcmp(a.gen.prompt, "") && !strcmp(a.gen.negative_prompt, ""), "prompts default empty");
    CHECK(!a.verbose && !a.help && !a.version && !a.list_devices, "flags default off");
    sdc_cli_args_free(&a);

    r = parse_line(&a, "-M|convert|--t5xxl|t5.safetensors");
    CHECK(r == SDC_CLI_PARSE_RUN && a.mode == SDC_CLI_MODE_CONVERT, "convert mode: %s", a.error);
    CHECK(!strcmp(a.output_path, "output.gguf"), "convert output default %s", a.output_path);
    sdc_cli_args_free(&a);
}

static void test_all_flags(void) {
    sdc_cli_args a;
    const char *line =
        "-M|img_gen|--diffusion-model|dit.st|--t5xxl|t5.st|--t5-tokenizer|tok.json|-t|3|"
        "--type|q4_K|--tensor-type-rules|^vae=f16|--tensor-type-rules|model=q8_0|--backend|cpu|"
        "-p|a red car, sunset|-n|blurry|-W|64|-H|128|--steps|4|--cfg-scale|6.5|-s|-1|"
        "--sampling-method|dpm++2m|--scheduler|normal|--rng|cpu|--sampler-rng|std_default|"
        "--eta|0.5|--flow-shift|3|--sigmas|[1.0, 0.5 ,0]|-b|3|-o|out/x.png|--output-begin-idx|5|"
        "--imat-out|i.dat|--imat-in|a.dat|--imat-in|b.dat|--convert-name|-v";
    sdc_cli_parse_result r = parse_line(&a, line);
    CHECK(r == SDC_CLI_PARSE_RUN, "all flags: %s", a.error);
    CHECK(!strcmp(a.ctx.diffusion_model_path, "dit.st") && !strcmp(a.ctx.t5xxl_path, "t5.st") &&
              !strcmp(a.ctx.t5_tokenizer_path, "tok.json") && a.ctx.model_path == NULL,
          "model paths");
    CHECK(a.ctx.n_threads == 3, "threads %d", a.ctx.n_threads);
    CHECK(a.ctx.weight_type == 12, "q4_K id %d", a.ctx.weight_type);
    CHECK(a.ctx.tensor_type_rules && !strcmp(a.ctx.tensor_type_rules, "^vae=f16,model=q8_0"),
          "rules joined: %s", a.ctx.tensor_type_rules);
    CHECK(a.ctx.backend && !strcmp(a.ctx.backend, "cpu"), "backend");
    CHECK(!strcmp(a.gen.prompt, "a red car, sunset") && !strcmp(a.gen.negative_prompt, "blurry"),
          "prompts");
    CHECK(a.gen.width == 64 && a.gen.height == 128 && a.gen.steps == 4, "size/steps");
    CHECK(a.gen.cfg_scale == 6.5f && a.gen.seed == -1, "cfg %g seed %lld", a.gen.cfg_scale,
          (long long)a.gen.seed);
    CHECK(!strcmp(a.gen.sampling_method, "dpm++2m"), "sampler");
    CHECK(!strcmp(a.gen.scheduler, "discrete"), "normal is an alias of discrete: %s",
          a.gen.scheduler);
    CHECK(!strcmp(a.gen.rng, "cpu") && !strcmp(a.gen.sampler_rng, "std_default"), "rngs");
    CHECK(a.gen.eta == 0.5f && a.ctx.flow_shift == 3.0f, "eta/flow shift");
    CHECK(a.n_sigmas == 3 && a.sigmas[0] == 1.0f && a.sigmas[1] == 0.5f && a.sigmas[2] == 0.0f,
          "sigmas parsed: n=%d", a.n_sigmas);
    CHECK(a.gen.batch_count == 3 && !strcmp(a.output_path, "out/x.png") && a.output_begin_idx == 5,
          "batch/output");
    CHECK(!strcmp(a.imat_out, "i.dat") && a.n_imat_in == 2 && !strcmp(a.imat_in[1], "b.dat"),
          "imatrix files");
    CHECK(a.convert_name && a.verbose, "bool flags");

    /* to the library's structs */
    sdc_context_params cp;
    sdc_generate_params gp;
    sdc_cli_to_context_params(&a, &cp);
    sdc_cli_to_generate_params(&a, &gp);
    CHECK(cp.diffusion_model_path == a.ctx.diffusion_model_path &&
              cp.t5xxl_path == a.ctx.t5xxl_path &&
              cp.t5_tokenizer_path == a.ctx.t5_tokenizer_path && cp.n_threads == 3 &&
              cp.weight_type == 12 && cp.model_path == NULL,
          "context params");
    /* --sigmas 1,0.5,0 sets the step count to 2 (sd-cli overrides --steps the same way) */
    CHECK(gp.n_sigmas == 3 && gp.sigmas == a.sigmas, "custom sigmas passed on");
    CHECK(gp.width == 64 && gp.height == 128 && gp.steps == 2 && gp.cfg_scale == 6.5f &&
              gp.seed == -1 && gp.batch_count == 3 && gp.eta == 0.5f &&
              !strcmp(gp.sampling_method, "dpm++2m") && !strcmp(gp.rng, "cpu") &&
              !strcmp(gp.sampler_rng, "std_default") && !strcmp(gp.prompt, a.gen.prompt),
          "generate params");
    sdc_cli_args_free(&a);

    /* long forms, --name=value, every weight type name */
    r = parse_line(&a, "--model=m|--prompt|x|--negative-prompt|y|--width=8|--height|16|"
                       "--seed|9223372036854775807|--batch-count|2|--output|o|--threads|0|"
                       "--verbose|--mode|img_gen");
    CHECK(r == SDC_CLI_PARSE_RUN, "long forms: %s", a.error);
    CHECK(!strcmp(a.ctx.model_path, "m") && a.gen.width == 8 && a.gen.height == 16 &&
              a.gen.seed == INT64_MAX && a.gen.batch_count == 2 && a.ctx.n_threads == 0,
          "long form values");
    sdc_cli_args_free(&a);

    static const struct {
        const char *name;
        int id;
    } types[] = {{"f32", 0},   {"f16", 1},   {"bf16", 30}, {"q8_0", 8},  {"q5_0", 6},
                 {"q5_1", 7},  {"q4_0", 2},  {"q4_1", 3},  {"q4_K", 12}, {"q5_K", 13},
                 {"q6_K", 14}, {"q3_K", 11}, {"q2_K", 10}, {"Q4_k", 12}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char l[128];
        snprintf(l, sizeof l, "-m|m|--type|%s", types[i].name);
        r = parse_line(&a, l);
        CHECK(r == SDC_CLI_PARSE_RUN && a.ctx.weight_type == types[i].id, "--type %s -> %d (%s)",
              types[i].name, a.ctx.weight_type, a.error);
        sdc_cli_args_free(&a);
    }
    /* a value that looks like an option is still a value */
    r = parse_line(&a, "-m|m|-p|--steps|-n|-x");
    CHECK(r == SDC_CLI_PARSE_RUN && !strcmp(a.gen.prompt, "--steps") &&
              !strcmp(a.gen.negative_prompt, "-x"),
          "option-like values: %s", a.error);
    sdc_cli_args_free(&a);
    /* later flags override earlier ones */
    r = parse_line(&a, "-m|m|--steps|3|--steps|5");
    CHECK(r == SDC_CLI_PARSE_RUN && a.gen.steps == 5, "last value wins: %d", a.gen.steps);
    sdc_cli_args_free(&a);
}

static void test_help_version(void) {
    sdc_cli_args a;
    CHECK(parse_line(&a, "--help") == SDC_CLI_PARSE_EXIT && a.help, "--help");
    sdc_cli_args_free(&a);
    CHECK(parse_line(&a, "-h") == SDC_CLI_PARSE_EXIT && a.help, "-h");
    sdc_cli_args_free(&a);
    CHECK(parse_line(&a, "--steps|0|-h") == SDC_CLI_PARSE_EXIT && a.help,
          "-h wins over later validation");
    sdc_cli_args_free(&a);
    CHECK(parse_line(&a, "--version") == SDC_CLI_PARSE_EXIT && a.version, "--version");
    sdc_cli_args_free(&a);
    CHECK(parse_line(&a, "--list-devices") == SDC_CLI_PARSE_RUN && a.list_devices,
          "--list-devices needs no model");
    sdc_cli_args_free(&a);
}

/* Each bad command must fail with a one-line message containing `needle`. */
static void test_errors(void) {
    static const struct {
        const char *line, *needle;
    } bad[] = {
        {"", "no model"},
        {"-p|cat", "no model"},
        {"-m|m|--bogus", "unknown option '--bogus'"},
        {"-m|m|-x", "unknown option '-x'"},
        {"-m|m|stray", "unexpected argument 'stray'"},
        {"-m|m|-", "unexpected argument '-'"},
        {"-m", "needs a value"},
        {"-m|m|--steps", "'--steps' needs a value"},
        {"-m|m|-o", "'-o' needs a value"},
        {"-m|m|--steps|abc", "'abc' is not an integer"},
        {"-m|m|--steps|12x", "is not an integer"},
        {"-m|m|--steps|", "is not an integer"},
        {"-m|m|--steps|2.5", "is not an integer"},
        {"-m|m|--steps|0", "--steps must be at least 1"},
        {"-m|m|--steps|-3", "--steps must be at least 1"},
        {"-m|m|--steps|99999999999", "out of range"},
        {"-m|m|-W|0", "--width must be a positive multiple of 8"},
        {"-m|m|-W|-64", "--width must be"},
        {"-m|m|-W|100", "--width must be a positive multiple of 8"},
        {"-m|m|-H|63", "--height must be a positive multiple of 8"},
        {"-m|m|-H|32768", "--height must be"},
        {"-m|m|-W|abc", "is not an integer"},
        {"-m|m|-b|0", "--batch-count must be at least 1"},
        {"-m|m|-b|-1", "--batch-count must be at least 1"},
        {"-m|m|--cfg-scale|x", "'x' is not a number"},
        {"-m|m|--cfg-scale|inf", "out of range"},
        {"-m|m|--cfg-scale|nan", "out of range"},
        {"-m|m|--cfg-scale|1e99", "out of range"},
        {"-m|m|--eta|", "is not a number"},
        {"-m|m|-s|x", "is not an integer"},
        {"-m|m|-s|99999999999999999999", "out of range"},
        {"-m|m|--rng|philox", "unknown RNG 'philox'"},
        {"-m|m|--sampler-rng|gpu", "unknown RNG 'gpu'"},
        {"-m|m|--type|q9_0", "unknown weight type 'q9_0'"},
        {"-m|m|--type|iq2_xs", "unknown weight type"},
        {"-m|m|--sampling-method|euler_x", "unknown sampling method 'euler_x'"},
        {"-m|m|--scheduler|fast", "unknown scheduler 'fast'"},
        {"-m|m|-M|paint", "unknown mode 'paint'"},
        {"-m|m|-M|vid_gen", "not supported"},
        {"-M|convert", "convert mode needs an input model"},
        {"-m|m|-o|out.webp", "webp output is not supported yet"},
        {"-m|m|-o|out.avi", "avi output is not supported yet"},
        {"-m|m|-o|", "path is empty"},
        {"-m|m|--sigmas|,,", "no sigma values"},
        {"-m|m|--sigmas|1,x,0", "'x' is not a number"},
        {"-m|m|--verbose=yes", "does not take a value"},
        {"-m|m|--output-begin-idx|-2", "must not be negative"},
        {"-m|m|-t|many", "is not an integer"},
    };
    int n = (int)(sizeof bad / sizeof bad[0]), ok = 0;
    for (int i = 0; i < n; i++) {
        sdc_cli_args a;
        sdc_cli_parse_result r = parse_line(&a, bad[i].line);
        bool good = r == SDC_CLI_PARSE_ERROR && strstr(a.error, bad[i].needle) &&
                    !strchr(a.error, '\n') && a.error[0];
        CHECK(good, "'%s': result %d, message '%s', expected '%s'", bad[i].line, (int)r, a.error,
              bad[i].needle);
        ok += good;
        sdc_cli_args_free(&a);
    }
    printf("error cases: %d/%d rejected with the expected one-line message\n", ok, n);
}

static void check_name(const char *output, int begin, int index, int count, const char *want) {
    sdc_cli_args a;
    sdc_cli_args_init(&a, SDC_CLI_PROGRAM_SDC);
    a.output_path = output;
    a.output_begin_idx = begin;
    char *got = sdc_cli_output_name(&a, index, count);
    CHECK(got && !strcmp(got, want), "-o '%s' begin %d image %d/%d: '%s', expected '%s'", output,
          begin, index, count, got ? got : "(null)", want);
    free(got);
}

static void test_output_names(void) {
    /* sd-cli: one image keeps the name; several get _<index> before the extension,
     * counting from --output-begin-idx (default 0); %d patterns take the index. */
    check_name("output.png", -1, 0, 1, "output.png");
    check_name("output.png", -1, 0, 3, "output_0.png");
    check_name("output.png", -1, 2, 3, "output_2.png");
    check_name("output.png", 1, 2, 3, "output_3.png");
    check_name("dir.v2/img.PNG", -1, 1, 2, "dir.v2/img_1.PNG");
    check_name("out", -1, 0, 1, "out.png");
    check_name("out", -1, 1, 2, "out_1.png");
    check_name("dir.v2/out", -1, 0, 1, "dir.v2/out.png");
    check_name("out.bmp", -1, 0, 1, "out.bmp.png");
    check_name(".png", -1, 0, 1, ".png.png");
    check_name("frame_%d.png", -1, 0, 1, "frame_0.png");
    check_name("frame_%03d.png", -1, 7, 9, "frame_007.png");
    check_name("frame_%3d.png", 10, 2, 9, "frame_ 12.png");
    check_name("f%d_%d", -1, 4, 5, "f4_4.png");
    check_name("100%%_%d.png", -1, 1, 2, "100%_1.png");
    check_name("100%%.png", -1, 1, 2, "100%%_1.png"); /* no specifier: kept as typed */
    check_name("a%s.png", -1, 0, 2, "a%s_0.png");
    /* widest specifiers (3 digits); a 4-digit width is left as typed */
    char want[2100];
    snprintf(want, sizeof want, "%999d_%099d_%%0999d.png", 42, 42);
    check_name("%999d_%099d_%0999d.png", 42, 0, 1, want); /* 4 digits: not a specifier */
}

/* bar = 40 cells: `filled` '=' then '>' (unless full) then spaces */
static void check_bar(int step, int steps, double sec, int filled, const char *tail) {
    char want[160], bar[41], got[160];
    for (int i = 0; i < 40; i++) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
    bar[40] = '\0';
    snprintf(want, sizeof want, "  |%s|%s", bar, tail);
    sdc_cli_progress_format(got, sizeof got, step, steps, sec);
    CHECK(!strcmp(got, want), "bar %d/%d:\n got '%s'\nwant '%s'", step, steps, got, want);
}

static void test_progress(void) {
    check_bar(0, 4, 0.0, 0, " 0/4 - 0.00s/it");
    check_bar(1, 4, 1.234, 10, " 1/4 - 1.23s/it");
    check_bar(7, 20, 0.5, 14, " 7/20 - 0.50s/it");
    check_bar(4, 4, 12.0, 40, " 4/4 - 12.00s/it");
    check_bar(3, 3, 0.005, 40, " 3/3 - 0.01s/it");

    /* not a terminal: only the finished bar of each image is printed, one line each */
    FILE *f = tmpfile();
    sdc_cli_progress p;
    sdc_cli_progress_init(&p, f);
    p.interactive = false;
    for (int img = 0; img < 2; img++)
        for (int s = 1; s <= 3; s++) sdc_cli_progress_step(s, 3, 0.25 * (img + 1), &p);
    char buf[512] = {0};
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += buf[i] == '\n';
    CHECK(lines == 2 && strstr(buf, "3/3 - 0.25s/it\n") && strstr(buf, "3/3 - 0.50s/it\n"),
          "non-tty output: '%s'", buf);
    CHECK(p.total_steps == 6 && fabs(p.total_seconds - 2.25) < 1e-12, "totals %d %g", p.total_steps,
          p.total_seconds);
}

int main(void) {
    test_progress();
    test_defaults();
    test_all_flags();
    test_help_version();
    test_errors();
    test_output_names();
    TEST_MAIN_END();
}
