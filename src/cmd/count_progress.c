// Progress of a long feature pass (count_progress.h).
#include <stdio.h>
#include <unistd.h>
#include "cmd/count_progress.h"
#include "cmd/log.h"

void count_progress_init(CountProgress *p, const char *label) {
    p->label = label;
    p->tty = progress_on_terminal(2);
    p->last_tenth = 0;
}

void count_progress(void *ctx, long done, long total) {
    CountProgress *p = ctx;
    if (total < COUNT_PROGRESS_MIN) return;
    if (p->tty) {
        fprintf(stderr, "\r%s: %ld/%ld images", p->label, done, total);
        if (done == total) fputc('\n', stderr);
        progress_set_open(done == total ? NULL : stderr);   // a message meanwhile starts a line of its own
    } else {
        int tenth = (int)(done * 10 / total);
        if (tenth > p->last_tenth) {
            fprintf(stderr, "%s: %ld/%ld images\n", p->label, done, total);
            p->last_tenth = tenth;
        }
    }
    fflush(stderr);
}
