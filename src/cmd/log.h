// Training logs: RUN/metrics.csv rows and the progress line (a one-line bar with ETA on a TTY,
// plain lines every --log-every steps otherwise).
#ifndef VITMAE_LOG_H
#define VITMAE_LOG_H
#include <stdio.h>
#include "cmd/streams.h"

#define METRICS_HEADER "step,epoch,lr,loss,val_loss,val_psnr,img_per_s,elapsed_s"

typedef struct {
    long step; double epoch; double lr, loss, val_loss, val_psnr, img_per_s, elapsed_s;  // NaN: empty field
    int nextra; double extra[2];   // columns after elapsed_s (finetune --model-ema's ema_val_loss, ema_val_top1)
} MetricsRow;

// Opens path for appending rows. When keep_until_step >= 0 (a resumed run), rows of the file with
// step > keep_until_step (written after the checkpoint we resume from) are dropped first, so the
// file reads as if the run had never stopped. Writes the header when the file is new or empty.
FILE *metrics_open(const char *path, long keep_until_step, char *err, size_t errlen);
// The largest step of a run's metrics.csv rows at path (whole rows under a run's header); -1 when
// there is none, or the file is missing or not a run's.
long metrics_last_step(const char *path);
// The same with another header (`vitmae finetune` writes FINETUNE_METRICS_HEADER; its rows carry
// val_top1 in MetricsRow.val_psnr, the sixth column).
#define FINETUNE_METRICS_HEADER "step,epoch,lr,loss,val_loss,val_top1,img_per_s,elapsed_s"
// With --model-ema: the moving average's validation after them (MetricsRow.extra).
#define FINETUNE_METRICS_EMA_HEADER FINETUNE_METRICS_HEADER ",ema_val_loss,ema_val_top1"
FILE *metrics_open_header(const char *path, long keep_until_step, const char *header, char *err, size_t errlen);
int   metrics_write(FILE *f, const MetricsRow *r);   // flushed; 0 ok, -1 on a write error
// The same, a failure said in err as "RUN/metrics.csv: write failed: REASON".
int   metrics_write_run(FILE *f, const MetricsRow *r, const char *run_dir, char *err, size_t errlen);
// Before a row of a run (*f: RUN/metrics.csv as metrics_open opened it): whether *f is still the file at
// that name (docs/data.md, "Run folders"). 0: it is. 1: the file was deleted or moved away, or another
// regular file put at its name, during the run: metrics.csv is written again whole from the rows *f
// holds (temporary file, rename), *f is then that file, and err says it for a warning ("RUN/metrics.csv
// was deleted or moved away during the run; written again from the run's rows"). -1 with err: something
// not a regular file is at the name ("RUN/metrics.csv: not a regular file (put at its name during the
// run)"), also one put there between the look and the rewrite (a file gone at the look is published
// without replacing anything: io/files.h, file_write_new_atomic), or the file could not be written again.
int   metrics_rejoin_run(FILE **f, const char *run_dir, char *err, size_t errlen);

// The rows behind RUN/curves.png, kept in memory and reloaded from metrics.csv on resume
// (cmd/train_out.c, cmd/finetune.c): every logged training loss and learning rate, every validation
// loss and the sixth column beside it (val_psnr for train, val_top1 for finetune).
typedef struct {
    double *step, *loss, *lr, *val_step, *val_loss, *val_extra;
    double *val_more[2];   // at each validation, the row's columns after elapsed_s (MetricsRow.extra): NaN where none
    int n, nval, cap;
} History;

// Appends a logged row: the training columns when loss or lr is finite (loss NaN in the step-0 row),
// the validation ones when val_loss is. Out of memory drops the row (the curves are a picture;
// metrics.csv holds the data).
// more: the row's extra columns (finetune --model-ema's ema_val_loss, ema_val_top1), or NULL for none.
void history_add(History *h, double step, double loss, double lr, double val_loss, double val_extra, const double *more);
// Appends the rows of a metrics.csv (either header, with or without the EMA columns); a missing file adds nothing.
void history_load(History *h, const char *path);
void history_free(History *h);

typedef struct {
    int tty;            // 1: redraw one line with \r; 0: a plain line every log_every steps
    long total, log_every;
    double t_start;     // seconds (monotonic) when the run (or resume) began; progress_restart moves it
    double t_session;   // when progress_init ran: the elapsed shown counts from it (not moved by a restart,
                        // which is the ETA's alone), as the caller's session clock for metrics.csv does
    long step_start;    // step at t_start, for the rate
    double t_first;     // when the first step after t_start finished (0: not yet)
    long step_first;    // its step
    int drawn_len;      // characters of the line last drawn (the next one blanks what it leaves)
    double elapsed_before;   // the run's training time before this session (a resumed run's), set by
                             // the caller: the elapsed shown is the run's, as metrics.csv's elapsed_s
} Progress;

double now_seconds(void);   // monotonic clock
void progress_init(Progress *p, FILE *out, long step_start, long total, long log_every);
// Called after each step; prints when due. imgs_per_s is the recent throughput.
// Restarts the clock the ETA is measured with (call it right before the first step).
void progress_restart(Progress *p);
void progress_update(Progress *p, FILE *out, long step, double loss, double lr, double imgs_per_s);
// Seconds left after `step` finished at time `now` (what progress_update prints): the pace of the
// steps after the first one once there are any, else the first step's; NaN before any step.
// Records the first step's time on its first call after progress_init/progress_restart.
double progress_eta(Progress *p, long step, double now);
// 1 when fd is the user's terminal: a terminal that is this process's controlling one. Progress is
// redrawn with \r only there (train, finetune; embed's and probe's counts on stderr).
int progress_on_terminal(int fd);
// The terminal's width on fd: the terminal's own (TIOCGWINSZ), else COLUMNS when it is a whole number
// from 1 to 10000, else 80.
int terminal_columns(int fd);
// The progress bar's line for a terminal `cols` wide, in at most cols - 1 characters (a line that
// reached the last column would wrap on some terminals, and each redraw with \r would then leave a
// line behind): "[####....] step/total loss L lr LR N img/s ETA T", the bar narrowed (24 at most) or left
// out to fit, the lr and img/s left out before it, and the text cut when even that is too long. Returns
// its length.
int progress_line(char *buf, size_t n, int cols, long step, long total, double loss, double lr, double imgs_per_s,
                  const char *eta);
void progress_message(Progress *p, FILE *out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void progress_end(Progress *p, FILE *out);
// "1h02m", "3m05s", "12s"
void format_duration(double seconds, char *buf, size_t n);
// v with `decimals` decimals ("%.*f"), except that a value above 0 that would print as 0 gets the
// decimals its first two significant digits need: 0.22 MB is "0.22" at 0 decimals, 0.031 ms "0.031"
// at 1, never "0" or "0.0" beside a count that says something was there.
void format_figure(double v, int decimals, char *buf, size_t n);
// A time given in ms as PyTorch's benchmark timer prints one: two decimals in the unit its size calls
// for, "230.00 ns", "31.00 us", "160.26 ms", "2.50 s" (a wait of 0.23 us read "0.00023 ms"); 0 is
// "0.00 ms", and a time above 0 never reads 0 (format_figure).
void format_time_ms(double ms, char *buf, size_t n);
#endif
