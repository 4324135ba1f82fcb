#include <stdio.h>
#include <string.h>

#include "sdc.h"

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--version")) {
            printf("sdc %s\n", sdc_version());
            return 0;
        }
    }
    fprintf(stderr, "usage: sdc --version\n");
    return 1;
}
