/* Usage text: the flags a program uses, by sd-cli's sections, then those it accepts only
 * for sd-cli command lines (refused or ignored, with the reason when given). */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "flag_table.h"

/* The name lists behind the words TYPES, SAMPLERS and SCHEDULERS in help texts. */
static void print_names(FILE *f, const char *word) {
    if (!strcmp(word, "TYPES")) {
        for (int i = 0; i < sdc_weight_type_count(); i++)
            fprintf(f, "%s%s", i ? ", " : "", sdc_weight_type_name(i));
    } else if (!strcmp(word, "SAMPLERS")) {
        for (int i = 0; i < sdc_sampler_count(); i++)
            fprintf(f, "%s%s", i ? ", " : "", sdc_sampler_name(i));
    } else {
        for (int i = 0; i < sdc_scheduler_count(); i++)
            fprintf(f, "%s%s", i ? ", " : "", sdc_scheduler_name(i));
    }
}

static void print_help_text(FILE *f, const char *text) {
    static const char *const words[] = {"TYPES", "SAMPLERS", "SCHEDULERS"};
    for (const char *t = text; *t;) {
        bool done = false;
        for (int w = 0; w < 3 && !done; w++) {
            size_t n = strlen(words[w]);
            if (!strncmp(t, words[w], n)) {
                print_names(f, words[w]);
                t += n;
                done = true;
            }
        }
        if (!done) fputc(*t++, f);
    }
    fputc('\n', f);
}

static void print_option(FILE *f, const sdc_cli_opt *o) {
    char names[80];
    snprintf(names, sizeof names, "%s%s%s%s%s", o->short_name ? o->short_name : "",
             o->short_name ? ", " : "    ", o->long_name, o->kind != K_BOOL ? " " : "",
             o->kind != K_BOOL && o->value_name ? o->value_name : "");
    fprintf(f, "  %-34s ", names);
    print_help_text(f, o->text);
}

/* Names of the accepted-only flags of one status, wrapped at about 100 columns. */
static void print_name_list(FILE *f, int scope, sdc_cli_status st) {
    int col = 2;
    fprintf(f, " ");
    for (int k = 0; k < sdc_cli_opt_count; k++) {
        const sdc_cli_opt *o = &sdc_cli_opts[k];
        if (o->status != st || !(o->scope & scope)) continue;
        int n = (int)strlen(o->long_name) + 1;
        if (col + n > 100) {
            fprintf(f, "\n ");
            col = 2;
        }
        fprintf(f, " %s", o->long_name);
        col += n;
    }
    fprintf(f, "\n");
}

void sdc_cli_print_usage(FILE *f, sdc_cli_program program) {
    bool server = program == SDC_CLI_PROGRAM_SERVER;
    int scope = server ? P_SRV : P_CLI;
    const char *prog = server ? "sdc-server" : "sdc";
    if (!server) {
        fprintf(f, "sdc %s: Stable Diffusion in C\n", sdc_version());
        fprintf(f, "Usage: %s [options]\n", prog);
        fprintf(f,
                "Example: %s --diffusion-model dit.safetensors --t5xxl t5.safetensors "
                "-p \"a cat\" -W 64 -H 64 --steps 4 -o cat.png\n",
                prog);
    }
    static const char *const sections[] = {"Program", "Context (models, devices)", "Generation",
                                           "sdc's own"};
    for (int g = G_CLI; g <= G_OWN; g++) {
        bool any = false;
        for (int k = 0; k < sdc_cli_opt_count; k++) {
            const sdc_cli_opt *o = &sdc_cli_opts[k];
            if ((int)o->group != g || !(o->scope & scope) || o->status == ST_ERROR ||
                o->status == ST_WARN)
                continue;
            if (!any) fprintf(f, "\n%s%s:\n", sections[g], server ? " (as for sdc)" : "");
            any = true;
            print_option(f, o);
        }
    }
    fprintf(f, "\nLong options also take --name=value. Accepted for sd-cli command lines, "
               "but not supported yet (an error, since the image would differ):\n");
    print_name_list(f, scope, ST_ERROR);
    fprintf(f, "Accepted and ignored with a warning (hints that do not apply yet):\n");
    print_name_list(f, scope, ST_WARN);
    fprintf(f, "Flags the library decides per model (it says when one does not apply) are "
               "listed above; docs/cli.md has the table of all flags.\n");
}
