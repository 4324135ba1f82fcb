/* Sampling progress bar on stderr: "  |=========>          | 7/20 - 0.52s/it". */
#ifndef SDC_CLI_PROGRESS_H
#define SDC_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct sdc_cli_progress {
    FILE *out;
    bool interactive;     /* redraw in place (a terminal) or print each finished bar once */
    double image_seconds; /* sum of step times of the current image */
    double total_seconds; /* sum of all step times */
    int total_steps;      /* steps reported so far, all images */
} sdc_cli_progress;

void sdc_cli_progress_init(sdc_cli_progress *p, FILE *out);
/* Matches sdc_progress_fn; `user` is a sdc_cli_progress. */
void sdc_cli_progress_step(int step, int steps, double step_seconds, void *user);
/* Formats the bar into buf (no newline). */
void sdc_cli_progress_format(char *buf, size_t size, int step, int steps, double seconds_per_step);

#endif
