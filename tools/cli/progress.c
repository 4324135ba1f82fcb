#include "progress.h"

#include <string.h>
#include <unistd.h>

#define BAR_WIDTH 40

void sdc_cli_progress_init(sdc_cli_progress *p, FILE *out) {
    memset(p, 0, sizeof *p);
    p->out = out;
    p->interactive = isatty(fileno(out)) != 0;
}

void sdc_cli_progress_format(char *buf, size_t size, int step, int steps, double seconds_per_step) {
    char bar[BAR_WIDTH + 1];
    int filled = steps > 0 ? (int)((long long)BAR_WIDTH * step / steps) : BAR_WIDTH;
    if (filled < 0) filled = 0;
    if (filled > BAR_WIDTH) filled = BAR_WIDTH;
    for (int i = 0; i < BAR_WIDTH; i++)
        bar[i] = i < filled ? '=' : (i == filled && step < steps ? '>' : ' ');
    bar[BAR_WIDTH] = '\0';
    snprintf(buf, size, "  |%s| %d/%d - %.2fs/it", bar, step, steps, seconds_per_step);
}

void sdc_cli_progress_step(int step, int steps, double step_seconds, void *user) {
    sdc_cli_progress *p = user;
    if (step <= 1) p->image_seconds = 0; /* a new image of the batch starts */
    p->image_seconds += step_seconds;
    p->total_seconds += step_seconds;
    p->total_steps++;
    bool last = step >= steps;
    /* without a terminal, \r redraws would pile up in logs: print finished bars only */
    if (!p->interactive && !last) return;
    char line[160];
    sdc_cli_progress_format(line, sizeof line, step, steps,
                            step > 0 ? p->image_seconds / step : 0.0);
    fprintf(p->out, "%s%s%s", p->interactive ? "\r" : "", line, last ? "\n" : "");
    fflush(p->out);
}
