// metrics.csv and the progress line.
#include "cmd/log.h"
#include "io/files.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "cmd/streams.h"
#include "io/files.h"
#include "io/json.h"

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void format_duration(double s, char *buf, size_t n) {
    if (!(s >= 0) || s > 1e8) { snprintf(buf, n, "--"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

void format_figure(double v, int decimals, char *buf, size_t n) {
    int d = decimals < 0 ? 0 : decimals;
    if (v > 0 && v < 0.5 * pow(10.0, -d)) {   // rounds to 0 at d decimals: two significant digits
        while (d < 15 && v < pow(10.0, -d)) d++;   // the first significant digit is the d-th decimal
        d += 1;
    }
    snprintf(buf, n, "%.*f", d, v);
}

void format_time_ms(double ms, char *buf, size_t n) {
    static const struct { const char *unit; double per_ms; } units[] = {{"s", 1e-3}, {"ms", 1}, {"us", 1e3}, {"ns", 1e6}};
    // The largest unit in which the time reads at least 1 as printed: 999.999 ms is "1.00 s", not
    // "1000.00 ms", and 995 ms "995.00 ms", not "0.99 s" (0.995 is a double just below it, which "%.2f"
    // rounds down: a threshold of 0.995 took the unit and then printed below 1 in it). 0 in ms; below 0
    // (a clock stepped back) as 0, never "-0.00 ms"; not a number or infinite (a time over no steps):
    // "unknown", not "nan ms" or "inf s". Beyond the decimals a figure holds, significant digits: a
    // thousand years and more in s ("%.2f" gave 30 digits, cut short by the buffer: another number),
    // below 10^-15 ns (a denormal) in ns ("%.16f" read 0).
    int u = 1;
    char figure[32];
    if (isnan(ms) || isinf(ms)) { snprintf(buf, n, "unknown"); return; }
    if (!(ms > 0)) ms = 0;
    if (ms >= 3.2e13) { snprintf(buf, n, "%.3g s", ms * 1e-3); return; }
    if (ms > 0 && ms < 1e-21) { snprintf(buf, n, "%.2g ns", ms * 1e6); return; }
    if (ms > 0)
        for (u = 0; u < 3; u++) {
            snprintf(figure, sizeof figure, "%.2f", ms * units[u].per_ms);
            if (figure[0] != '0') break;   // "0.99" and below: the next unit
        }
    format_figure(ms * units[u].per_ms, 2, figure, sizeof figure);
    snprintf(buf, n, "%s %s", figure, units[u].unit);
}

// Keeps the header and the whole rows (ending in a newline: a row cut short by a kill or by hand is
// dropped, not continued by the next one) whose step <= keep; returns the kept text (malloc'd) or NULL.
// The step a metrics row begins with, in *step: 1, or 0 when the line is no row.
static int row_step(const char *line, long *step) {
    char *end;
    *step = strtol(line, &end, 10);
    return end != line && *end == ',';
}

static char *kept_rows(FILE *f, long keep) {
    size_t cap = 4096, len = 0;
    char *out = malloc(cap), line[1024];
    if (!out) return NULL;
    out[0] = 0;
    int first = 1;
    while (fgets(line, sizeof line, f)) {
        int keep_line = first ? strncmp(line, "step,", 5) == 0 : 0;
        long step;
        if (!first) keep_line = row_step(line, &step) && step <= keep;
        first = 0;
        size_t l = strlen(line);
        if (!keep_line || l == 0 || line[l - 1] != '\n') continue;
        if (len + l + 1 > cap) {
            cap = 2 * (len + l + 1);
            char *bigger = realloc(out, cap);
            if (!bigger) { free(out); return NULL; }
            out = bigger;
        }
        memcpy(out + len, line, l + 1);
        len += l;
    }
    return out;
}

long metrics_last_step(const char *path) {
    char err[256];
    FILE *f = file_open_regular(path, "r", err, sizeof err);
    if (!f) return -1;
    char line[1024];
    long last = -1;
    int first = 1;
    while (fgets(line, sizeof line, f)) {
        size_t l = strlen(line);
        if (l == 0 || line[l - 1] != '\n') continue;   // a cut row is no row (kept_rows drops it)
        if (first) { first = 0; if (strncmp(line, "step,", 5)) break; continue; }
        long step;
        if (row_step(line, &step) && step > last) last = step;
    }
    fclose(f);
    return last;
}

FILE *metrics_open(const char *path, long keep_until_step, char *err, size_t errlen) {
    return metrics_open_header(path, keep_until_step, METRICS_HEADER, err, errlen);
}

FILE *metrics_open_header(const char *path, long keep_until_step, const char *header, char *err, size_t errlen) {
    char *kept = NULL;
    if (keep_until_step >= 0) {   // a FIFO at the name is refused, not waited on (file_open_regular)
        FILE *old = file_open_regular(path, "r", err, errlen);
        if (!old && errno != ENOENT) return NULL;
        if (old) { kept = kept_rows(old, keep_until_step); fclose(old); }
    }
    // The kept rows replace the file atomically (a temporary file, then rename): rewriting it in
    // place lost every row past the failure point when the rewrite failed (a full disk, a file-size
    // limit) or was killed, rows the checkpoint had already passed.
    if (kept && file_write_atomic(path, kept, strlen(kept), err, errlen)) { free(kept); return NULL; }
    free(kept);
    struct stat st;
    int made = lstat(path, &st) != 0;   // a new file: removed again when its header cannot be written
    // Read as well (metrics_rejoin_run: the rows of a file deleted meanwhile are read back from it).
    FILE *f = file_open_regular(path, "a+", err, errlen);
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    if (ftell(f) == 0) fprintf(f, "%s\n", header);
    if (fflush(f) != 0) {
        char reason[128];
        snprintf(err, errlen, "%s: write failed: %s", path, file_reason(errno, reason, sizeof reason));
        fclose(f);
        // An empty metrics.csv left in a run folder made it hold a run and kept the folder of a failed run.
        if (made) unlink(path);
        return NULL;
    }
    return f;
}

// One field, "," and text, appended to row (n bytes) at *len; a row that would not fit is cut (512
// bytes hold the widest: ten numbers of at most 24 characters).
static void put_field(char *row, size_t n, size_t *len, const char *text) {
    int k = snprintf(row + *len, n - *len, ",%s", text);
    *len = k < 0 || (size_t)k >= n - *len ? n - 1 : *len + (size_t)k;
}

static void field(char *row, size_t n, size_t *len, double v, const char *fmt) {
    char buf[40] = "";
    if (isfinite(v)) snprintf(buf, sizeof buf, fmt, v);
    put_field(row, n, len, buf);
}

// The shortest "%.Ng" that reads back as v (as Python's repr): the values a user compares between
// runs (the epoch, the learning rate, the losses, val_psnr / val_top1) come back from the file exactly, so two
// runs that are bitwise the same read the same and two that are not read apart ("%.6f" showed 0.000012
// for a loss of 1.2345e-5, and one digit of a fourth of a loss of 0.0003 when the runs differed there).
static void field_exact(char *row, size_t n, size_t *len, double v) {
    char buf[40] = "";
    if (isfinite(v)) json_double_text(v, buf, sizeof buf);   // as config.json and the checkpoints write numbers
    put_field(row, n, len, buf);
}

int metrics_write(FILE *f, const MetricsRow *r) {
    char row[512];
    size_t len = (size_t)snprintf(row, sizeof row, "%ld", r->step);
    field_exact(row, sizeof row, &len, r->epoch);   // 4 decimals wrote one value for the steps of 1/10000 of an epoch
    field_exact(row, sizeof row, &len, r->lr);
    field_exact(row, sizeof row, &len, r->loss);
    field_exact(row, sizeof row, &len, r->val_loss);
    field_exact(row, sizeof row, &len, r->val_psnr);
    field(row, sizeof row, &len, r->img_per_s, "%.2f");
    field(row, sizeof row, &len, r->elapsed_s, "%.2f");
    for (int i = 0; i < r->nextra && i < 2; i++) field_exact(row, sizeof row, &len, r->extra[i]);
    if (len + 1 >= sizeof row) len = sizeof row - 2;
    row[len++] = '\n';
    // The row goes whole or not at all: a full disk took its first bytes and left the log ending in a
    // cut row (a loss of 0.7675567 read back from 0.76755672693...) that nothing repaired before a
    // --resume; the file is cut back to where the row began (docs/interface.md, section 1).
    if (fflush(f) != 0) return -1;
    int fd = fileno(f);
    off_t at = lseek(fd, 0, SEEK_END);
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, row + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    if (done == len) return 0;
    int e = done < len && errno ? errno : EIO;
    if (at >= 0 && ftruncate(fd, at) != 0) { /* the cut row stays: nothing more can be done here */ }
    errno = e;
    return -1;
}

int metrics_write_run(FILE *f, const MetricsRow *r, const char *run_dir, char *err, size_t errlen) {
    errno = 0;
    if (!metrics_write(f, r)) return 0;
    char reason[128];
    snprintf(err, errlen, "%s/metrics.csv: write failed: %s", run_dir,
             errno ? file_reason(errno, reason, sizeof reason) : "I/O error");
    return -1;
}

// The whole text of the open file fd (its size at the look: rows are written by this process alone), in
// *text (malloc'd; *len bytes); 0, or errno.
static int read_back(int fd, off_t size, char **text, size_t *len) {
    char *buf = malloc((size_t)size + 1);
    if (!buf) return ENOMEM;
    size_t done = 0;
    while (done < (size_t)size) {
        ssize_t r = pread(fd, buf + done, (size_t)size - done, (off_t)done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { int e = r < 0 ? errno : EIO; free(buf); return e; }
        done += (size_t)r;
    }
    *text = buf;
    *len = done;
    return 0;
}

int metrics_rejoin_run(FILE **f, const char *run_dir, char *err, size_t errlen) {
    char path[4200], reason[4200];
    snprintf(path, sizeof path, "%s/metrics.csv", run_dir);
    struct stat mine, at, now;
    if (fflush(*f) != 0 || fstat(fileno(*f), &mine) != 0) return 0;   // the row's write says what failed
    int gone = lstat(path, &at) != 0;
    if (gone && errno != ENOENT) {
        snprintf(err, errlen, "%s: %s", path, file_reason(errno, reason, sizeof reason));
        return -1;
    }
    if (!gone) {
        // A link to nothing, a folder, a FIFO: the start of a run refuses them so (file_open_regular), and
        // nothing may be written over them.
        if (stat(path, &now) != 0) {
            snprintf(err, errlen, "%s: %s (put at its name during the run)", path,
                     file_path_reason(path, errno, reason, sizeof reason));
            return -1;
        }
        if (!S_ISREG(now.st_mode)) {
            snprintf(err, errlen, "%s: not a regular file (put at its name during the run)", path);
            return -1;
        }
        if (now.st_dev == mine.st_dev && now.st_ino == mine.st_ino) return 0;
    }
    // The rows went on into the file held open, which no one would see again: it is written again whole
    // from that file's own bytes (the header and every row since step 0, a resume's earlier ones too,
    // byte for byte as written), atomically, and the rows go on into the new one.
    const char *what = gone ? "deleted or moved away" : "replaced by another file";
    char *text = NULL;
    size_t len = 0;
    int e = read_back(fileno(*f), mine.st_size, &text, &len);
    if (e) {
        snprintf(err, errlen, "%s: %s during the run, and its rows could not be read back to write it again: %s",
                 path, what, file_reason(e, reason, sizeof reason));
        return -1;
    }
    char why[4400];
    // Where the name was free at the look, the file is published without replacing what was put there
    // since (a FIFO, a link, a folder, another file): a rename over it took the user's FIFO or link away.
    file_test_gate("VITMAE_FAULT_HOLD_BEFORE_METRICS_REWRITE");   // tests: something put at the name
    int rc = gone ? file_write_new_atomic(path, text, len, why, sizeof why)
                  : file_write_atomic(path, text, len, why, sizeof why);
    if (rc && gone && errno && lstat(path, &at) == 0) {   // taken meanwhile: looked at again, as at the look
        if (stat(path, &now) != 0 || !S_ISREG(now.st_mode)) {
            snprintf(err, errlen, "%s: not a regular file (put at its name during the run)", path);
            free(text);
            return -1;
        }
        what = "replaced by another file";
        rc = file_write_atomic(path, text, len, why, sizeof why);
    }
    free(text);
    FILE *g = rc ? NULL : file_open_regular(path, "a+", why, sizeof why);
    if (!g) {
        snprintf(err, errlen, "%s (metrics.csv was %s during the run; writing it again from the run's rows failed)", why,
                 what);
        return -1;
    }
    fclose(*f);
    *f = g;
    snprintf(err, errlen, "%s was %s during the run; written again from the run's rows", path, what);
    return 1;
}

void history_add(History *h, double step, double loss, double lr, double val_loss, double val_extra, const double *more) {
    if (h->n >= h->cap || h->nval >= h->cap) {
        int cap = h->cap ? 2 * h->cap : 256;
        double **arrs[8] = {&h->step, &h->loss, &h->lr, &h->val_step, &h->val_loss, &h->val_extra, &h->val_more[0], &h->val_more[1]};
        for (int i = 0; i < 8; i++) {
            double *p = realloc(*arrs[i], (size_t)cap * sizeof **arrs[i]);
            if (!p) return;
            *arrs[i] = p;
        }
        h->cap = cap;
    }
    // The step-0 row has an lr and no loss (no step has run): the lr curve starts there, the loss
    // curve at the first logged step (a NaN point is not drawn; docs/interface.md, "vitmae train").
    if (isfinite(loss) || isfinite(lr)) { h->step[h->n] = step; h->loss[h->n] = loss; h->lr[h->n] = lr; h->n++; }
    if (isfinite(val_loss)) {
        h->val_step[h->nval] = step; h->val_loss[h->nval] = val_loss; h->val_extra[h->nval] = val_extra;
        for (int i = 0; i < 2; i++) h->val_more[i][h->nval] = more ? more[i] : NAN;
        h->nval++;
    }
}

void history_load(History *h, const char *path) {
    char err[64];   // not said: a history that cannot be read starts empty
    FILE *f = file_open_regular(path, "r", err, sizeof err);
    if (!f) return;
    char line[1024];
    if (!fgets(line, sizeof line, f)) { fclose(f); return; }
    while (fgets(line, sizeof line, f)) {
        double v[10];   // step, epoch, lr, loss, val_loss, val_psnr | val_top1, img_per_s, elapsed_s[, EMA's two]
        int nf = 0;
        char *p = line;
        for (; nf < 10; nf++) {
            char *end;
            v[nf] = strtod(p, &end);
            if (end == p) v[nf] = NAN;
            p = strchr(end, ',');
            if (!p) { nf++; break; }
            p++;
        }
        for (int i = nf; i < 10; i++) v[i] = NAN;
        if (nf >= 5) history_add(h, v[0], v[3], v[2], v[4], v[5], v + 8);
    }
    fclose(f);
}

void history_free(History *h) {
    free(h->step); free(h->loss); free(h->lr); free(h->val_step); free(h->val_loss); free(h->val_extra);
    free(h->val_more[0]); free(h->val_more[1]);
    memset(h, 0, sizeof *h);
}

int progress_on_terminal(int fd) {
    // tcgetsid succeeds only on the calling process's controlling terminal. mpirun gives each rank a
    // terminal of its own (a pty whose output it copies to its stdout, a log file as often as not), which
    // isatty alone takes for the user's: `mpirun ... > log` filled the log with \r bars.
    return isatty(fd) && tcgetsid(fd) != (pid_t)-1;
}

void progress_init(Progress *p, FILE *out, long step_start, long total, long log_every) {
    memset(p, 0, sizeof *p);
    p->tty = progress_on_terminal(fileno(out));
    p->total = total;
    p->log_every = log_every > 0 ? log_every : 1;
    p->t_start = p->t_session = now_seconds();
    p->step_start = step_start;
}

void progress_restart(Progress *p) {
    p->t_start = now_seconds();
    p->t_first = 0;
}

double progress_eta(Progress *p, long step, double now) {
    // The first step pays for warm caches and first decodes: the ETA uses the pace after it, once
    // there is one (the first ETA is the first step's time per step).
    if (p->t_first == 0) { p->t_first = now; p->step_first = step; }
    long done = step - p->step_start, done_after = step - p->step_first;
    return done_after > 0 ? (now - p->t_first) / done_after * (p->total - step)
         : done > 0 ? (now - p->t_start) / done * (p->total - step) : NAN;
}

enum { TERMINAL_MAX_COLUMNS = 10000 };

int terminal_columns(int fd) {
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col < TERMINAL_MAX_COLUMNS ? ws.ws_col : TERMINAL_MAX_COLUMNS;
    const char *c = getenv("COLUMNS");
    char *end = NULL;
    long v = c && *c >= '0' && *c <= '9' ? strtol(c, &end, 10) : 0;
    return end && !*end && v >= 1 && v <= TERMINAL_MAX_COLUMNS ? (int)v : 80;
}

int progress_line(char *buf, size_t n, int cols, long step, long total, double loss, double lr, double imgs_per_s,
                  const char *eta) {
    if (n == 0) return 0;
    // The whole text, then a short one (step, loss, ETA) for narrow terminals.
    char text[2][200];
    int tl[2];
    tl[0] = snprintf(text[0], sizeof text[0], "%ld/%ld loss %.4f lr %.2e %.0f img/s ETA %s", step, total, loss, lr,
                     imgs_per_s, eta);
    tl[1] = snprintf(text[1], sizeof text[1], "%ld/%ld loss %.4f ETA %s", step, total, loss, eta);
    for (int i = 0; i < 2; i++) tl[i] = tl[i] < 0 ? 0 : tl[i] >= (int)sizeof text[i] ? (int)sizeof text[i] - 1 : tl[i];
    int room = cols - 1;                          // never the last column
    if (room > (int)n - 1) room = (int)n - 1;
    if (room < 0) room = 0;
    for (int i = 0; i < 2; i++) {
        int width = room - tl[i] - 3;             // "[" bar "] " text
        if (width > 24) width = 24;
        if (width < 5) continue;                  // no room for a bar worth the name
        int fill = total > 0 ? (int)((double)step / total * width) : 0;
        int k = 0;
        buf[k++] = '[';
        for (int b = 0; b < width; b++) buf[k++] = b < fill ? '#' : '.';
        buf[k++] = ']';
        buf[k++] = ' ';
        memcpy(buf + k, text[i], (size_t)tl[i]);
        k += tl[i];
        buf[k] = 0;
        return k;
    }
    int i = tl[0] <= room ? 0 : 1, k = tl[i] < room ? tl[i] : room;   // the text alone, cut to fit
    memcpy(buf, text[i], (size_t)k);
    buf[k] = 0;
    return k;
}

void progress_update(Progress *p, FILE *out, long step, double loss, double lr, double imgs_per_s) {
    double now = now_seconds(), elapsed = p->elapsed_before + (now - p->t_session);
    double eta = progress_eta(p, step, now);
    char eta_s[32], el_s[32];
    format_duration(eta, eta_s, sizeof eta_s);
    format_duration(elapsed, el_s, sizeof el_s);
    if (p->tty) {
        // Fitted to the terminal's width, read at each draw (it may be resized): a line wider than the
        // terminal wraps, and each \r then returns to the wrapped part, leaving a line per step.
        char line[TERMINAL_MAX_COLUMNS + 1];
        int len = progress_line(line, sizeof line, terminal_columns(fileno(out)), step, p->total, loss, lr,
                                imgs_per_s, eta_s);
        int blank = progress_open() == out && p->drawn_len > len ? p->drawn_len - len : 0;   // what the last line leaves
        fprintf(out, "\r%s%*s", line, blank, "");
        fflush(out);
        cli_stream_check(out);
        progress_set_open(out);
        p->drawn_len = len;
    } else if (step % p->log_every == 0 || step == p->total) {
        fprintf(out, "step %ld/%ld loss %.4f lr %.3e %.1f img/s elapsed %s ETA %s\n", step, p->total,
                loss, lr, imgs_per_s, el_s, eta_s);
        fflush(out);
        cli_stream_check(out);
    }
}

void progress_message(Progress *p, FILE *out, const char *fmt, ...) {
    if (p->tty) progress_break_line(out);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(out);
    cli_stream_check(out);
}

void progress_end(Progress *p, FILE *out) {
    if (p->tty) progress_break_line(out);
    fflush(out);
    cli_stream_check(out);
}
