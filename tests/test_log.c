// metrics.csv: header, row format, empty fields for NaN, truncation of rows past a resumed step.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "cmd/log.h"

static char *slurp(const char *path) {
    static char buf[8192];
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

int main(void) {
    char path[600], err[256];
    snprintf(path, sizeof path, "%s/metrics.csv", check_tmpdir());
    FILE *f = metrics_open(path, -1, err, sizeof err);
    CHECK(f != NULL, "open: %s", err);
    MetricsRow r = {10, 0.5, 1e-3, 0.25, NAN, NAN, 100.0, 2.0, 0, {0, 0}};
    CHECK(metrics_write(f, &r) == 0, "write row");
    r.step = 20; r.val_loss = 0.2; r.val_psnr = 15.5;
    metrics_write(f, &r);
    r.step = 30;
    metrics_write(f, &r);
    fclose(f);
    char *s = slurp(path);
    CHECK(!strncmp(s, METRICS_HEADER "\n", strlen(METRICS_HEADER) + 1), "header first: %s", s);
    CHECK(strstr(s, "\n10,0.5,0.001,0.25,,,100.00,2.00\n"), "row with empty val fields: %s", s);
    CHECK(strstr(s, "\n20,0.5,0.001,0.25,0.2,15.5,100.00,2.00\n"), "row with val: %s", s);

    // Resume from step 20: the row for step 30 goes, a new row for 30 follows.
    f = metrics_open(path, 20, err, sizeof err);
    CHECK(f != NULL, "reopen: %s", err);
    r.step = 30; r.loss = 0.125;
    metrics_write(f, &r);
    fclose(f);
    s = slurp(path);
    int headers = 0, rows30 = 0;
    for (char *p = s; (p = strstr(p, "step,")); p++) headers++;
    for (char *p = s; (p = strstr(p, "\n30,")); p++) rows30++;
    CHECK(headers == 1, "one header after resume (%d)", headers);
    CHECK(rows30 == 1 && strstr(s, "\n30,0.5,0.001,0.125,"), "stale row dropped, new one kept: %s", s);
    // The row of the resumed step itself stays (its checkpoint holds that step's weights), as do the
    // rows before it: exactly the rows with step <= the resumed step.
    CHECK(strstr(s, "\n10,0.5,") && strstr(s, "\n20,0.5,0.001,0.25,0.2,"),
          "rows up to and including the resumed step kept: %s", s);

    // The rows come back for the curves of a resumed run: 3 training rows, 2 with validation.
    History h = {0};
    history_load(&h, path);
    CHECK(h.n == 3 && h.nval == 2, "history rows %d / %d", h.n, h.nval);
    if (h.n == 3 && h.nval == 2) {
        CHECK(h.step[0] == 10 && h.loss[0] == 0.25 && h.lr[0] == 1e-3 && h.step[2] == 30 && h.loss[2] == 0.125,
              "training rows: step %g loss %g lr %g; step %g loss %g", h.step[0], h.loss[0], h.lr[0], h.step[2], h.loss[2]);
        CHECK(h.val_step[0] == 20 && h.val_loss[0] == 0.2 && h.val_extra[0] == 15.5 && h.val_step[1] == 30,
              "validation rows: step %g loss %g psnr %g", h.val_step[0], h.val_loss[0], h.val_extra[0]);
    }
    history_free(&h);

    // A new run's step-0 row has the first step's lr and no loss (docs/interface.md, "vitmae train":
    // where the lr curve starts): the lr curve of curves.png starts at step 0 and the loss curve at
    // the first logged step. The row was dropped, and the lr curve began at step 10 (--log-every).
    snprintf(path, sizeof path, "%s/zero.csv", check_tmpdir());
    f = metrics_open(path, -1, err, sizeof err);
    CHECK(f != NULL, "open: %s", err);
    MetricsRow z0 = {0, 0, 2e-4, NAN, NAN, NAN, NAN, 0, 0, {0, 0}}, z10 = {10, 0.5, 2e-3, 0.75, NAN, NAN, 100.0, 1.0, 0, {0, 0}};
    metrics_write(f, &z0);
    metrics_write(f, &z10);
    fclose(f);
    History z = {0};
    history_load(&z, path);
    CHECK(z.n == 2 && z.nval == 0, "step-0 row of lr alone: history rows %d / %d (%s)", z.n, z.nval, slurp(path));
    if (z.n == 2)
        CHECK(z.step[0] == 0 && z.lr[0] == 2e-4 && isnan(z.loss[0]) && z.step[1] == 10 && z.loss[1] == 0.75,
              "the lr curve from step 0, the loss curve from step 10: step %g lr %g loss %g", z.step[0], z.lr[0],
              z.loss[0]);
    history_free(&z);

    // finetune --model-ema's two columns after elapsed_s (MetricsRow.extra): written as the others, empty
    // when NaN, and read back beside each validation (NaN in a file without them: the history above).
    snprintf(path, sizeof path, "%s/ema.csv", check_tmpdir());
    f = metrics_open_header(path, -1, FINETUNE_METRICS_EMA_HEADER, err, sizeof err);
    CHECK(f != NULL, "open: %s", err);
    MetricsRow e0 = {0, 0, 2e-4, NAN, 2.5, 0.125, NAN, 0, 2, {2.25, 0.375}};
    MetricsRow e5 = {5, 0.5, 2e-3, 0.75, NAN, NAN, 100.0, 1.0, 2, {NAN, NAN}};
    MetricsRow e9 = {9, 0.9, 1e-3, 0.5, 1.5, 0.5, 100.0, 1.5, 2, {1.0 / 3, 0.625}};
    metrics_write(f, &e0);
    metrics_write(f, &e5);
    metrics_write(f, &e9);
    fclose(f);
    s = slurp(path);
    CHECK(!strcmp(s, FINETUNE_METRICS_EMA_HEADER "\n0,0,0.0002,,2.5,0.125,,0.00,2.25,0.375\n5,0.5,0.002,0.75,,,100.00,1.00,,\n"
                     "9,0.9,0.001,0.5,1.5,0.5,100.00,1.50,0.3333333333333333,0.625\n"), "the EMA columns: %s", s);
    History eh = {0};
    history_load(&eh, path);
    CHECK(eh.nval == 2 && eh.val_more[0][0] == 2.25 && eh.val_more[1][0] == 0.375 && eh.val_more[0][1] == 1.0 / 3 &&
          eh.val_more[1][1] == 0.625 && eh.val_extra[1] == 0.5, "the EMA columns read back (%d validations)", eh.nval);
    history_free(&eh);
    History none = {0};
    history_load(&none, path);
    history_add(&none, 12, 0.5, 1e-3, 1.25, 0.75, NULL);
    CHECK(none.nval == 3 && isnan(none.val_more[0][2]) && isnan(none.val_more[1][2]), "a row without them: NaN");
    history_free(&none);

    // The values a user compares between runs read back exactly, as Python's float() of the field
    // ("%.6f" wrote 0.000012 for a loss of 1.2345678901234567e-5): the shortest digits that do.
    snprintf(path, sizeof path, "%s/exact.csv", check_tmpdir());
    f = metrics_open(path, -1, err, sizeof err);
    CHECK(f != NULL, "open: %s", err);
    MetricsRow x = {40, 0.5, 1.0 / 3, 1.2345678901234567e-5, (double)0.1f, 12.345678901234567, 1.0, 1.0, 0, {0, 0}};
    metrics_write(f, &x);
    fclose(f);
    s = slurp(path);
    CHECK(strstr(s, "\n40,0.5,0.3333333333333333,1.2345678901234568e-05,0.10000000149011612,12.345678901234567,"),
          "the shortest digits that read back: %s", s);
    History e = {0};
    history_load(&e, path);
    CHECK(e.n == 1 && e.nval == 1 && e.lr[0] == x.lr && e.loss[0] == x.loss && e.val_loss[0] == x.val_loss &&
          e.val_extra[0] == x.val_psnr, "read back exactly: %s", s);
    history_free(&e);

    // The epoch too: steps of 64 images through an epoch of 2,000,000 are 0.000032 epochs apart, and
    // "%.4f" wrote the same value on rows that are not (1.0000 for steps 31250 and 31251).
    snprintf(path, sizeof path, "%s/epoch.csv", check_tmpdir());
    f = metrics_open(path, -1, err, sizeof err);
    CHECK(f != NULL, "open: %s", err);
    double epochs[3];
    for (int k = 0; k < 3; k++) {
        long step = 31250 + k;
        epochs[k] = (double)step * 64 / 2000000;
        MetricsRow er = {step, epochs[k], 1e-4, 0.5, NAN, NAN, 1.0, 1.0, 0, {0, 0}};
        metrics_write(f, &er);
    }
    fclose(f);
    s = slurp(path);
    char *row = strchr(s, '\n');
    int exact = 1;
    for (int k = 0; k < 3 && row; k++) {
        char *comma = strchr(row + 1, ',');
        exact &= comma && strtod(comma + 1, NULL) == epochs[k];
        row = strchr(row + 1, '\n');
    }
    CHECK(exact, "each row's epoch reads back as its own value: %s", s);

    // A whole epoch is written in its digits: "%.1g" of 80 is "8e+01", and a run of 8 images at batch 64
    // wrote 32, 64, 8e+01, 96, 1.6e+02 down the column (docs/interface.md, section 5, metrics.csv).
    snprintf(path, sizeof path, "%s/whole.csv", check_tmpdir());
    f = metrics_open(path, -1, err, sizeof err);
    CHECK(f != NULL, "open: %s", err);
    MetricsRow w = {10, 80, 1e-5, 2, 100, 1e15, 1.0, 1.0, 0, {0, 0}};
    metrics_write(f, &w);
    fclose(f);
    s = slurp(path);
    CHECK(strstr(s, "\n10,80,1e-05,2,100,1000000000000000,"), "whole numbers in their digits: %s", s);

    char d[32];
    format_duration(3725, d, sizeof d);
    CHECK(!strcmp(d, "1h02m"), "duration %s", d);
    format_duration(185, d, sizeof d);
    CHECK(!strcmp(d, "3m05s"), "duration %s", d);
    // Figures above 0 never print as 0: two significant digits where the decimals asked for would round
    // them away ("from the cache (0 MB)" of 0.22 MB, "(0 ms per step)" of a 0.03 ms wait).
    const struct { double v; int dec; const char *want; } figs[] = {
        {0.0, 0, "0"}, {0.22, 0, "0.22"}, {0.45, 0, "0.45"}, {0.6, 0, "1"}, {2048.0, 0, "2048"}, {0.031, 1, "0.031"},
        {0.4, 1, "0.4"}, {0.049, 1, "0.049"}, {160.26, 1, "160.3"}, {0.0000123, 0, "0.000012"}, {0.0996, 0, "0.100"},
    };
    for (size_t k = 0; k < sizeof figs / sizeof figs[0]; k++) {
        format_figure(figs[k].v, figs[k].dec, d, sizeof d);
        CHECK(!strcmp(d, figs[k].want), "format_figure(%g, %d): %s, want %s", figs[k].v, figs[k].dec, d, figs[k].want);
    }

    // Times as PyTorch's benchmark timer prints them: two decimals in the unit the size calls for (the
    // wait per step of a run that hardly waited read "0.00023 ms").
    const struct { double ms; const char *want; } times[] = {
        {0.00023, "230.00 ns"}, {0.0000005, "0.50 ns"}, {0.031, "31.00 us"}, {0.4, "400.00 us"}, {0.99999, "1.00 ms"},
        {160.264, "160.26 ms"}, {994.0, "994.00 ms"}, {999.999, "1.00 s"}, {2500.0, "2.50 s"}, {0.0, "0.00 ms"},
        {3e-9, "0.0030 ns"},
        // At a unit's edge the unit is the one the printed figure reads at least 1 in: 995 ms is the
        // double just below 0.995 s, which prints "0.99" (it read "0.99 s").
        {995.0, "995.00 ms"}, {0.995, "995.00 us"}, {999.995, "1.00 s"}, {0.000995, "995.00 ns"},
        // What no clock gives, said sanely: not a number or infinite (a time over 0 steps) "unknown", not
        // "nan ms" or "inf s"; below 0 (a clock stepped back) and -0 as 0, not "-5.00 ms" or "-0.00 ms"; a
        // thousand years and more in significant digits (%.2f's 30 digits were cut short: another
        // number), and a denormal too ("0.0000000000000000 ns").
        {NAN, "unknown"}, {INFINITY, "unknown"}, {-INFINITY, "unknown"}, {-5.0, "0.00 ms"}, {-0.0, "0.00 ms"},
        {3.2e13, "3.2e+10 s"}, {1e300, "1e+297 s"}, {3.19e13, "31900000000.00 s"}, {5e-320, "5e-314 ns"},
        {1e-21, "0.0000000000000010 ns"},
    };
    for (size_t k = 0; k < sizeof times / sizeof times[0]; k++) {
        format_time_ms(times[k].ms, d, sizeof d);
        CHECK(!strcmp(d, times[k].want), "format_time_ms(%g): %s, want %s", times[k].ms, d, times[k].want);
    }

    // The ETA: a run of 100 steps whose first step took 10 s (start-up decodes) and the others 0.1 s.
    Progress p;
    progress_init(&p, stdout, 0, 100, 1);
    p.t_start = 1000.0;
    double eta1 = progress_eta(&p, 1, 1010.0);
    CHECK_CLOSE(eta1, 10.0 * 99, 1e-9, 0, "first ETA from the first step's time");
    double eta11 = progress_eta(&p, 11, 1011.0);
    CHECK_CLOSE(eta11, 0.1 * 89, 1e-9, 0, "later ETA from the pace after the first step, not 10 s a step");
    // A resumed run (step_start 40): the first step after the resume plays the same part.
    progress_init(&p, stdout, 40, 100, 1);
    p.t_start = 0.0;
    progress_eta(&p, 41, 5.0);
    CHECK_CLOSE(progress_eta(&p, 51, 6.0), 0.1 * 49, 1e-9, 0, "resumed ETA");
    // The log line's elapsed counts from progress_init, as metrics.csv's elapsed_s counts the session:
    // progress_restart, which train calls after step 0's validation so that the ETA counts steps only,
    // restarted the elapsed too ('step 20/20 ... elapsed 0s' beside a row of 2.46 s, that validation).
    FILE *lf = tmpfile();
    CHECK(lf != NULL, "tmpfile");
    if (lf) {
        progress_init(&p, lf, 0, 10, 5);
        struct timespec wait = {0, 700000000};
        nanosleep(&wait, NULL);   // step 0's validation
        progress_restart(&p);
        progress_update(&p, lf, 5, 0.5, 1e-3, 10);
        char got[256] = "";
        rewind(lf);
        if (!fgets(got, sizeof got, lf)) got[0] = 0;
        fclose(lf);
        CHECK(strstr(got, " elapsed 1s ETA ") != NULL, "elapsed from progress_init, not the restart: %s", got);
    }

    // The terminal progress line fits cols - 1 (a wider one wrapped, and each \r redraw left a line):
    // a long run on 80 columns was 85 characters.
    char line[512];
    int len = progress_line(line, sizeof line, 80, 999999, 1000000, 0.1234, 1.5e-4, 1234, "27h46m");
    CHECK(len == (int)strlen(line) && len <= 79 && line[0] == '[', "80 columns, a long run: %d: %s", len, line);
    CHECK(strstr(line, "999999/1000000 loss 0.1234 lr 1.50e-04 1234 img/s ETA 27h46m") != NULL, "whole text: %s", line);
    len = progress_line(line, sizeof line, 200, 5, 10, 0.5, 1e-3, 10, "1s");
    CHECK(len <= 199 && !strncmp(line, "[############............] 5/10 ", 32), "wide: the 24-wide bar: %s", line);
    len = progress_line(line, sizeof line, 40, 5, 10, 0.5, 1e-3, 10, "1s");
    CHECK(len <= 39 && line[0] == '[' && strstr(line, "] 5/10 loss 0.5000 ETA 1s"), "40 columns: short text: %s", line);
    for (int cols = 0; cols <= 90; cols++) {
        len = progress_line(line, sizeof line, cols, 999999, 1000000, 0.1234, 1.5e-4, 1234, "27h46m");
        CHECK(len == (int)strlen(line) && len <= (cols > 0 ? cols - 1 : 0), "%d columns: %d", cols, len);
    }
    CHECK(progress_line(line, 8, 80, 5, 10, 0.5, 1e-3, 10, "1s") <= 7, "a small buffer");
    // The width: the terminal's, else COLUMNS when a whole number 1..10000, else 80.
    int fd = open("/dev/null", O_WRONLY);
    const char *cases[][2] = {{"50", "50"}, {"", "80"}, {"junk", "80"}, {"0", "80"}, {"-5", "80"}, {"99999999999", "80"},
                              {"12x", "80"}, {" 30", "80"}, {"10000", "10000"}, {"10001", "80"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("COLUMNS", cases[i][0], 1);
        CHECK(terminal_columns(fd) == atoi(cases[i][1]), "COLUMNS='%s': %d", cases[i][0], terminal_columns(fd));
    }
    unsetenv("COLUMNS");
    CHECK(terminal_columns(fd) == 80, "no COLUMNS, not a terminal: 80");
    close(fd);
    return check_done();
}
