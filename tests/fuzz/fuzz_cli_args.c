/* Fuzzes the flag parser of sdc and sdc-server (tools/common/args.c): the first byte picks
 * the program, the rest is split at newlines into argv. Parsed arguments are also turned
 * into the library's parameters and output names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 4096) return 0;
    char *buf = malloc(size);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    /* --prompt-file reads the file it names; keep the fuzzer off devices and /proc */
    if (strstr(buf, "-file") && strchr(buf, '/')) {
        free(buf);
        return 0;
    }
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    argv[argc++] = "sdc";
    for (char *p = buf; argc < MAX_ARGS;) {
        argv[argc++] = p;
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = '\0';
        p = nl + 1;
    }
    argv[argc] = NULL;
    sdc_cli_program prog = (data[0] & 1) ? SDC_CLI_PROGRAM_SERVER : SDC_CLI_PROGRAM_SDC;
    sdc_cli_args a;
    if (sdc_cli_parse(&a, prog, argc, argv) == SDC_CLI_PARSE_RUN) {
        sdc_context_params cp;
        sdc_generate_params gp;
        sdc_cli_to_context_params(&a, &cp);
        sdc_cli_to_generate_params(&a, &gp);
        for (int i = 0; i < 3; i++) free(sdc_cli_output_name(&a, i, 3));
    } else if (!a.error[0] && !a.help && !a.version) {
        abort(); /* a refusal always says why */
    }
    sdc_cli_args_free(&a);
    free(buf);
    return 0;
}
