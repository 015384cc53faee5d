// "embed: 1280/60000 images" on stderr while features are computed (features.h's FeaturesProgress):
// on a TTY one line redrawn after every batch, otherwise a line at every tenth of the work. Quiet
// for fewer than COUNT_PROGRESS_MIN images.
#ifndef VITMAE_COUNT_PROGRESS_H
#define VITMAE_COUNT_PROGRESS_H

enum { COUNT_PROGRESS_MIN = 5000 };

typedef struct {
    const char *label;   // "embed", "probe train", ...
    int tty;             // stderr is a terminal
    int last_tenth;      // last tenth printed (plain lines)
} CountProgress;

void count_progress_init(CountProgress *p, const char *label);
void count_progress(void *ctx, long done, long total);   // ctx: CountProgress *
#endif
