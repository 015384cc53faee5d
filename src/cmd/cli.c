// Flag parsing for every command: numbers are checked in full (no trailing junk, no overflow)
// and against the flag's range before any work starts.
#include "cmd/cli.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <wchar.h>
#include <sys/stat.h>
#include "dist/dist.h"
#include "io/files.h"
#include "io/json.h"
#include "kernels/cpu.h"

static int quiet_ranks = 0;
void cli_quiet_ranks(int on) { quiet_ranks = on; }
static int one_process = 0;
void cli_one_process(int on) { one_process = on; }
int cli_one_process_refused(const char *command) {
    if (!one_process || dist_size() <= 1) return 0;
    cli_error(command, "runs in one process; under mpirun only train, finetune and bench use several (run it "
              "without mpirun)");
    return 1;
}

// While deferring (cli_defer), the first message waits here for cli_agree.
static int deferring = 0;
static char pending[8400];
void cli_defer(int on) { deferring = on && dist_active(); }

// The rule of put_line below, a character at a time (cli.h).
size_t cli_escape_at(const char *text, char out[9], size_t *used) {
    return text_escape_at(text, out, used);
}

// The columns a terminal gives the printable character p[0 .. used): wcwidth's in the C.UTF-8 locale
// (an East Asian wide character, 日, takes 2; a combining mark 0), 1 where that locale is missing or
// wcwidth does not know the character. The main thread's alone (cli_pad's callers print).
static long char_columns(const char *p, size_t used) {
    static locale_t utf8;
    static int tried;
    if (used == 1) return 1;
    if (!tried) { tried = 1; utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0); }
    if (!utf8) return 1;
    locale_t was = uselocale(utf8);
    wchar_t wc;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    int w = mbrtowc(&wc, p, used, &st) == used ? wcwidth(wc) : -1;
    uselocale(was);
    return w >= 0 ? w : 1;
}

int cli_pad(const char *text, int width) {
    long cols = 0;
    for (const char *p = text; *p;) {
        char e[9];
        size_t used, n = cli_escape_at(p, e, &used);
        cols += n ? (long)n : char_columns(p, used);
        p += used;
    }
    return cols < width ? (int)(width - cols) : 0;
}

// prefix + line + "\n" with line's control characters written out (\n, \t, \r, \xHH; a C1 control,
// U+0080..U+009F, as its two bytes \xc2\xHH: a terminal takes U+009B as ESC [), so that a file name
// holding a newline or a terminal escape stays inside its one line, and a backslash
// as \\, so that the line reads back one way (a name holding "\n" itself is not one holding a
// newline; embed's FEATS.txt writes names by the same rule, cli_escape_at); written with
// one call, so that lines of several processes sharing stderr do not interleave. A line of any length
// is written whole (classify's line of --top 1000 classes is longer than any fixed buffer); only when
// memory runs out is it cut to the buffer on the stack.
static void put_line(FILE *f, const char *prefix, const char *line) {
    char stack[4 * 8400 + 64], *out = stack;
    size_t cap = strlen(prefix) + 4 * strlen(line) + 16;
    if (cap > sizeof stack && !(out = malloc(cap))) out = stack;
    if (out == stack) cap = sizeof stack;
    size_t n = (size_t)snprintf(out, cap, "%s", prefix);
    for (const char *p = line; *p && n + 12 < cap;) {
        size_t used, e = cli_escape_at(p, out + n, &used);
        if (e) n += e;
        else { memcpy(out + n, p, used); n += used; }
        p += used;
    }
    out[n++] = '\n';
    out[n] = 0;
    progress_break_line(f);   // a line of its own, not after a progress bar on the terminal
    // Standard output's lines before it go first: where both streams go to one file or pipe (`> log
    // 2>&1`), stdout's buffer held classify's results back past the failures said after them.
    if (f == stderr) fflush(stdout);
    fputs(out, f);
    if (out != stack) free(out);
    cli_stream_check(f);
}

static void print_line(const char *line) {
    char prefix[32];
    put_line(stderr, cli_stderr_prefix(prefix, sizeof prefix), line);
}

// put_line of a formatted line.
static void put_formatted(FILE *f, const char *prefix, const char *fmt, va_list ap) {
    char line[8400], *whole = NULL;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    if (n >= (int)sizeof line && (whole = malloc((size_t)n + 1))) vsnprintf(whole, (size_t)n + 1, fmt, again);
    va_end(again);
    put_line(f, prefix, whole ? whole : line);
    free(whole);
}

int cli_hidden_file(const char *path) {
    const char *slash = strrchr(path, '/');
    return (slash ? slash[1] : path[0]) == '.';
}

void cli_out(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    put_formatted(stdout, "", fmt, ap);
    va_end(ap);
}

FILE *cli_line_open(CliLine *l) {
    l->text = NULL;
    l->len = 0;
    l->f = open_memstream(&l->text, &l->len);
    return l->f;
}

int cli_line_out(CliLine *l) {
    int bad = !l->f || fclose(l->f) || !l->text;
    l->f = NULL;
    if (!bad) cli_out("%s", l->text);
    free(l->text);
    l->text = NULL;
    return bad ? -1 : 0;
}

void cli_message(const char *fmt, ...) {
    char prefix[32];
    va_list ap;
    va_start(ap, fmt);
    put_formatted(stderr, cli_stderr_prefix(prefix, sizeof prefix), fmt, ap);
    va_end(ap);
}

void cli_hold(CliHeld *h, const char *what, const char *fmt, ...) {
    char *why = NULL, *line = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&why, fmt, ap);
    va_end(ap);
    if (n < 0) why = NULL;
    if (why && (what ? asprintf(&line, "%s: %s", what, why) : asprintf(&line, "%s", why)) < 0) line = NULL;
    free(why);
    if (line && h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 16;
        char **lines = realloc(h->lines, (size_t)cap * sizeof *lines);
        if (lines) { h->lines = lines; h->cap = cap; }
    }
    if (line && h->n < h->cap) { h->lines[h->n++] = line; return; }
    if (line) cli_message("%s", line);   // no room to keep it: said now rather than lost
    else cli_error(what, "(a message lost: out of memory)");
    free(line);
}

void cli_held_say(CliHeld *h) {
    for (int i = 0; i < h->n; i++) { cli_message("%s", h->lines[i]); free(h->lines[i]); }
    h->n = 0;
}

void cli_hold_hidden_classes(CliHeld *h, const char *dir, char *const *names, int n) {
    for (int c = 0; c < n; c++)
        if (names[c][0] == '.') cli_hold(h, NULL, "warning: %s/%s: " HIDDEN_CLASS_WARNING, dir, names[c]);
}

// 1 when name is a first-level folder of ds's root that the scan met again (a link to the root, to a
// class's folder or into one): it holds a class's images, counted under the class (docs/interface.md,
// section 2, "Finding files"). The scan's own mark, not a second look at the folders that could
// disagree with it.
static int met_again(const Dataset *ds, const char *name) {
    for (int k = 0; k < ds->nmet_again; k++)
        if (!strcmp(ds->met_again[k], name)) return 1;
    return 0;
}

int cli_class_folder_note(const char *root, const char *name, const Dataset *ds, char *buf, size_t n) {
    char path[4096];
    struct stat st;
    buf[0] = 0;
    int len = snprintf(path, sizeof path, "%s/%s", root, name);
    if (!(len > 0 && (size_t)len < sizeof path && stat(path, &st) == 0 && S_ISDIR(st.st_mode))) return 0;
    if (met_again(ds, name)) {
        snprintf(buf, n, " (" CLASS_LINK_NOTE ")", path);
        return 0;
    }
    snprintf(buf, n, " (%s holds no usable image)", path);
    return 1;
}

int cli_unused_class_folder(const char *root, const char *name, const Dataset *ds) {
    if (name[0] == '.') return 0;
    for (int c = 0; c < ds->nclasses; c++)
        if (!strcmp(ds->class_names[c], name)) return 0;
    if (met_again(ds, name)) return 0;
    char path[4096];
    struct stat st;
    int len = snprintf(path, sizeof path, "%s/%s", root, name);
    if (!(len > 0 && (size_t)len < sizeof path && stat(path, &st) == 0 && S_ISDIR(st.st_mode))) return 0;
    // A folder the scan could not read (no permission: `cannot read folder`) is among its skipped files:
    // what it holds is not known, and "holds no usable image" would be a guess said as a fact.
    for (int k = 0; k < ds->nskipped; k++)
        if (!strcmp(ds->skipped[k].path, path)) return 0;
    return 1;
}

void cli_unused_class_folder_note(const char *root, const Dataset *ds, char *buf, size_t len) {
    buf[0] = 0;
    DIR *d = opendir(root);
    if (!d) return;   // a note only: the refusal stands without it
    char first[256] = "";
    for (struct dirent *e; (e = readdir(d));)
        if ((!first[0] || strcmp(e->d_name, first) < 0) && cli_unused_class_folder(root, e->d_name, ds))
            snprintf(first, sizeof first, "%s", e->d_name);
    closedir(d);
    if (first[0]) cli_class_folder_note(root, first, ds, buf, len);
}

void cli_unread(CliUnread *u, CliHeld *h, const char *path, const char *reason) {
    if (u->named >= CLI_UNREAD_NAMED) { u->more++; return; }
    u->named++;
    const char *say = u->skipped ? "skipped " : "";
    if (h) cli_hold(h, NULL, "%s%s: %s", say, path, reason);
    else cli_message("%s%s: %s", say, path, reason);
}

void cli_unread_keep(CliUnread *u, long at, int counted, const char *what, const char *why) {
    if (counted && u->named + u->kept_counted >= CLI_UNREAD_NAMED) {
        // Full: the line takes the place of the last kept one placed after it, or is one more.
        int last = -1;
        for (int i = 0; i < u->nkept; i++)
            if (u->kept[i].counted) last = i;
        u->more++;
        if (last < 0 || u->kept[last].at <= at) return;
        free(u->kept[last].line);
        memmove(u->kept + last, u->kept + last + 1, (size_t)(u->nkept - last - 1) * sizeof *u->kept);
        u->nkept--;
        u->kept_counted--;
    }
    char *line = NULL;
    const char *say = counted && u->skipped ? "skipped " : "";   // a scan's skipped file, as cli_unread says it
    if ((what ? asprintf(&line, "%s%s: %s", say, what, why) : asprintf(&line, "%s", why)) < 0) line = NULL;
    if (line && u->nkept == u->capkept) {
        int cap = u->capkept ? 2 * u->capkept : 16;
        CliUnreadLine *k = realloc(u->kept, (size_t)cap * sizeof *k);
        if (k) { u->kept = k; u->capkept = cap; }
    }
    if (!line || u->nkept == u->capkept) {   // no room to keep it: said now rather than lost
        if (line) cli_message("%s", line);
        else cli_error(what, "(a message lost: out of memory)");
        free(line);
        u->named += counted;
        return;
    }
    int i = u->nkept;
    while (i > 0 && u->kept[i - 1].at > at) i--;   // after the lines of its place kept before it
    memmove(u->kept + i + 1, u->kept + i, (size_t)(u->nkept - i) * sizeof *u->kept);
    u->kept[i] = (CliUnreadLine){at, counted, line};
    u->nkept++;
    u->kept_counted += counted;
}

void cli_unread_reach(CliUnread *u, long at) {
    int i = 0;
    for (; i < u->nkept && u->kept[i].at < at; i++) {
        cli_message("%s", u->kept[i].line);
        free(u->kept[i].line);
        u->named += u->kept[i].counted;
        u->kept_counted -= u->kept[i].counted;
    }
    if (i == 0) return;   // nothing said (and kept may be NULL: memmove takes no null pointer)
    memmove(u->kept, u->kept + i, (size_t)(u->nkept - i) * sizeof *u->kept);
    u->nkept -= i;
}

void cli_unread_item(CliUnread *u, long i, const char *path, const char *reason) {
    cli_unread_reach(u, CLI_AT_ITEM(i));
    cli_unread_keep(u, CLI_AT_ITEM(i), 1, path, reason);
    cli_unread_reach(u, CLI_AT_ITEM(i) + 1);
}

void cli_unread_free(CliUnread *u) {
    for (int i = 0; i < u->nkept; i++) free(u->kept[i].line);
    free(u->kept);
    u->kept = NULL;
    u->nkept = u->capkept = u->kept_counted = 0;
}

void cli_unread_end(CliUnread *u, CliHeld *h) {
    cli_unread_reach(u, LONG_MAX);
    cli_unread_free(u);
    if (!u->more) return;
    char line[96];
    if (u->skipped) snprintf(line, sizeof line, "... and %d more skipped (vitmae data lists them)", u->more);
    else snprintf(line, sizeof line, "... and %d more input%s that cannot be read", u->more, u->more == 1 ? "" : "s");
    if (h) cli_hold(h, NULL, "%s", line);
    else cli_message("%s", line);
    u->named = u->more = 0;
}

void cli_hidden_skipped(CliHeld *h, const char *prefix, const Dataset *ds) {
    int hidden = 0, first = -1;
    for (int i = 0; i < ds->nskipped; i++)
        if (cli_hidden_file(ds->skipped[i].path) && !hidden++) first = i;
    if (!hidden) return;
    const char *s = hidden == 1 ? "" : "s", *es = hidden == 1 ? "es" : "";
    const DataSkip *sk = &ds->skipped[first];
    if (h) cli_hold(h, NULL, "%s" HIDDEN_FILES_SKIPPED, prefix, hidden, s, es, sk->path, sk->reason);
    else cli_out("%s" HIDDEN_FILES_SKIPPED, prefix, hidden, s, es, sk->path, sk->reason);
}

void cli_hold_skipped(CliHeld *h, const Dataset *ds) {
    CliUnread u = {.skipped = 1};
    for (int i = 0; i < ds->nskipped; i++)   // the hidden ones one line for them all, below
        if (!cli_hidden_file(ds->skipped[i].path)) cli_unread(&u, h, ds->skipped[i].path, ds->skipped[i].reason);
    cli_unread_end(&u, h);
    cli_hidden_skipped(h, "warning: skipped ", ds);
}

void cli_unread_keep_skipped(CliUnread *u, long before, const Dataset *ds) {
    for (int i = 0; i < ds->nskipped; i++)   // each among the folder's images, in its scan order
        if (!cli_hidden_file(ds->skipped[i].path))
            cli_unread_keep(u, CLI_AT_BEFORE(before + ds->skipped[i].items), 1, ds->skipped[i].path, ds->skipped[i].reason);
    CliHeld hidden = {0};   // the hidden ones' line, after the folder's others
    cli_hidden_skipped(&hidden, "warning: skipped ", ds);
    for (int i = 0; i < hidden.n; i++) cli_unread_keep(u, CLI_AT_BEFORE(before + ds->n), 0, NULL, hidden.lines[i]);
    cli_held_free(&hidden);
}

void cli_held_free(CliHeld *h) {
    for (int i = 0; i < h->n; i++) free(h->lines[i]);
    free(h->lines);
    memset(h, 0, sizeof *h);
}

void cli_error(const char *what, const char *fmt, ...) {
    if (dist_rank() > 0 && quiet_ranks && !deferring) return;
    char line[8400];
    size_t at = what ? (size_t)snprintf(line, sizeof line, "%s: ", what) : 0;
    if (at >= sizeof line) at = sizeof line - 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + at, sizeof line - at, fmt, ap);
    va_end(ap);
    if (deferring) { if (!pending[0]) snprintf(pending, sizeof pending, "%s", line); return; }
    print_line(line);
}

int cli_report(const char *what, const char *why, int code) {
    cli_error(what, "%s", why);
    return code;
}

int cli_model_flags_refused(const char *cmd, const char *flag, const char *why) {
    char what[64];
    snprintf(what, sizeof what, "%s%s%s", cmd, flag ? " " : "", flag ? flag : "");
    cli_error(what, "%s", why);
    return 2;
}

int cli_mask_ratio_refused(const char *cmd, int given, const char *ckpt_path, const char *why) {
    char what[64];
    snprintf(what, sizeof what, "%s --mask-ratio", cmd);
    if (given) cli_error(what, "%s", why);
    else cli_error(ckpt_path, "its config's mask_ratio %s; give --mask-ratio R", why);
    return given ? 2 : 1;
}

int cli_agree(int rc) {
    int rc0 = rc, any = rc;
    if (dist_active()) {
        dist_bcast(&rc0, sizeof rc0, 0);
        any = dist_max_int(rc);
    }
    if (rc && pending[0] && (dist_rank() == 0 || rc0 == 0)) print_line(pending);
    pending[0] = 0;
    return rc0 ? rc0 : any;
}

volatile sig_atomic_t cli_stdout_lossy = 0;

int cli_stdout_done(const char *what, int rc) {
    errno = 0;
    int e = fflush(stdout) ? (errno ? errno : -1) : ferror(stdout) ? -1 : 0;
    if (e == -1 && cli_stdout_errno()) e = cli_stdout_errno();   // an earlier flush's reason (cli_flush_stdout)
    cli_stream_check(stdout);
    if (!e || cli_stdout_lossy || cli_stream_gone(1)) return rc;
    char why[128];
    if (e > 0) cli_error(what, "standard output: %s", file_reason(e, why, sizeof why));
    else cli_error(what, "standard output: a write to it failed");
    return rc ? rc : 1;
}

Flag *cli_flag(Flag *flags, int nflags, const char *name) {
    for (int i = 0; i < nflags; i++)
        if (strcmp(flags[i].name, name) == 0) return &flags[i];
    return NULL;
}

void cli_clean_path(char *p) {
    char *w = p;
    for (const char *r = p; *r;) {
        if (*r == '/') {
            if (w == p || w[-1] != '/') *w++ = '/';
            r++;
        } else if (w > p && w[-1] == '/' && r[0] == '.' && (r[1] == '/' || !r[1])) {
            r++;   // a "." component after the first: names nothing
        } else {
            *w++ = *r++;
        }
    }
    while (w > p + 1 && w[-1] == '/') w--;
    *w = 0;
}

static int choice_ok(const char *choices, const char *v) {
    size_t n = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return 1;
        p += len + (e ? 1 : 0);
        if (!e) break;
    }
    return 0;
}

// A number as a user writes one: it starts with a digit, a sign or a point (strtod and strtoll would
// also skip leading spaces, and strtod read hexadecimal "0x10").
static int plain_number(const char *v) {
    return (isdigit((unsigned char)v[0]) || v[0] == '-' || v[0] == '+' || v[0] == '.') && !strpbrk(v, "xX");
}

// A flag's bound (a double in the table) as the whole number it allows: compared as a double, a value
// just past a large bound (9007199254740993 against 2^53) would round onto it and pass.
static long long whole_bound(double b, int upper) {
    b = upper ? floor(b) : ceil(b);
    return b >= 0x1p63 ? LLONG_MAX : b <= -0x1p63 ? LLONG_MIN : (long long)b;
}

static int set_value(const char *command, Flag *f, const char *v) {
    char what[128], word[UTF8_CLIP_SIZE];
    snprintf(what, sizeof what, "%s %s", command, f->name);
    char *end = NULL;
    errno = 0;
    switch (f->type) {
    case FLAG_INT:
    case FLAG_LONG: {
        long long x = strtoll(v, &end, 10);
        if (*v && !*end && errno == ERANGE && plain_number(v)) {   // a whole number past every bound, not "not an integer"
            cli_error(what, "%s is out of range [%.0f, %.0f]", utf8_clip(word, v), f->min, f->max);
            return CLI_USAGE;
        }
        if (!*v || *end || errno || !plain_number(v)) {
            cli_error(what, "'%s' is not an integer in [%.0f, %.0f]", utf8_clip(word, v), f->min, f->max);
            return CLI_USAGE;
        }
        if (x < whole_bound(f->min, 0) || x > whole_bound(f->max, 1)) {
            cli_error(what, "%lld is out of range [%.0f, %.0f]", x, f->min, f->max);
            return CLI_USAGE;
        }
        if (f->type == FLAG_INT) *(int *)f->dst = (int)x; else *(long *)f->dst = (long)x;
        return CLI_OK;
    }
    case FLAG_FLOAT:
    case FLAG_DOUBLE: {   // FLAG_DOUBLE: kept as read, where a float's rounding would change the result
        double x = strtod(v, &end);
        // Underflow is a number: 1e-400 reads as 0 (and 1e-310 as itself), as Python's float() reads them;
        // strtod says ERANGE for both. Overflow is infinite, refused below.
        if (errno == ERANGE && fabs(x) <= DBL_MIN) errno = 0;
        if (!*v || *end || errno || !isfinite(x) || !plain_number(v)) {
            cli_error(what, "'%s' is not a number in [%g, %g]", utf8_clip(word, v), f->min, f->max);
            return CLI_USAGE;
        }
        if (x < f->min || x > f->max) {
            cli_error(what, "%s is out of range [%g, %g]", utf8_clip(word, v), f->min, f->max);   // as written: 1.0000001 is not "1"
            return CLI_USAGE;
        }
        if (x == 0) x = 0;   // -0 is 0: it was echoed "lr -0.000e+00" and kept as -0 in metrics.csv and the state
        if (f->type == FLAG_DOUBLE) *(double *)f->dst = x;
        else *(float *)f->dst = (float)x;
        return CLI_OK;
    }
    case FLAG_STR:
    case FLAG_PATH:
    case FLAG_FILE:
        if (!*v) { cli_error(what, "empty value"); return CLI_USAGE; }
        const char *last = strrchr(v, '/');   // `feats.npy/.` names the folder as `feats.npy/` does
        if (f->type == FLAG_FILE && last && (!last[1] || !strcmp(last, "/.") || !strcmp(last, "/.."))) {   // `--out feats.npy/` wrote the file feats.npy
            cli_error(what, "'%s' ends in '%s', a folder: a file name goes here, such as %s", utf8_clip(word, v), last,
                      f->metavar);
            return CLI_USAGE;
        }
        if (f->type != FLAG_STR) cli_clean_path((char *)v);   // v points into argv, which is ours to change
        *(const char **)f->dst = v;
        return CLI_OK;
    case FLAG_CHOICE:
        if (!choice_ok(f->choices, v)) { cli_error(what, "'%s' is not one of %s", utf8_clip(word, v), f->choices); return CLI_USAGE; }
        *(const char **)f->dst = v;
        return CLI_OK;
    case FLAG_BOOL:
        break;
    }
    return CLI_USAGE;
}

// The width of the flag column of a --help: an entry of up to 25 characters, then two spaces or more
// before its description (docs/interface.md, section 1).
#define CLI_USAGE_COLUMN 26

void cli_print_usage(const char *command, const char *synopsis, const Flag *flags, int nflags) {
    printf("usage: vitmae %s %s\n", command, synopsis);
    if (nflags) printf("\nflags:\n");
    for (int i = 0; i < nflags; i++) {
        const Flag *f = &flags[i];
        char left[64];
        if (f->type == FLAG_BOOL) snprintf(left, sizeof left, "%s", f->name);
        else if (f->type == FLAG_CHOICE) snprintf(left, sizeof left, "%s %s", f->name, f->metavar ? f->metavar : f->choices);
        else snprintf(left, sizeof left, "%s %s", f->name, f->metavar ? f->metavar : "VALUE");
        // The accepted values close each line, so users (and tests/cli_flags.sh) can see them.
        char range[96] = "";
        if (f->type == FLAG_INT || f->type == FLAG_LONG) snprintf(range, sizeof range, " (integer %.0f to %.0f)", f->min, f->max);
        else if (f->type == FLAG_FLOAT || f->type == FLAG_DOUBLE) snprintf(range, sizeof range, " (number %g to %g)", f->min, f->max);
        else if (f->type == FLAG_CHOICE && f->metavar) snprintf(range, sizeof range, " (one of %s)", f->choices);
        // An entry too wide for the column (a choice such as --colormap's) leaves its description
        // on the next line, at the column, so that every description starts where the others do.
        if (strlen(left) > CLI_USAGE_COLUMN - 1) printf("  %s\n  %-*s %s%s\n", left, CLI_USAGE_COLUMN, "", f->help ? f->help : "", range);
        else printf("  %-*s %s%s\n", CLI_USAGE_COLUMN, left, f->help ? f->help : "", range);
    }
}

// utf8_clip of the len bytes at s (a flag's name before its '='): it shows none past the first
// UTF8_CLIP_MAX, so a copy of one more than those is enough for it to cut there and mark "...".
static const char *clip_n(char out[UTF8_CLIP_SIZE], const char *s, size_t len) {
    char head[UTF8_CLIP_MAX + 2];
    if (len >= sizeof head) len = sizeof head - 1;
    memcpy(head, s, len);
    head[len] = 0;
    return utf8_clip(out, head);
}

// 1 when v is "--help" or one of the flags (with or without "=value").
static int is_flag_of(Flag *flags, int nflags, const char *v) {
    if (strncmp(v, "--", 2)) return 0;
    size_t len = strcspn(v, "=");
    if (len == 6 && !strncmp(v, "--help", 6)) return 1;
    for (int i = 0; i < nflags; i++)
        if (strlen(flags[i].name) == len && !strncmp(flags[i].name, v, len)) return 1;
    return 0;
}

// Edits (insert, delete, replace a byte, swap two neighbours: --hlep is one from --help) from the len
// bytes at a to the flag name b, each part of either edited once; names are short. Three rows of the
// table: d[i][j] for i - 2, i - 1 and i.
static int edit_distance(const char *a, size_t len, const char *b) {
    int rows[3][64], nb = (int)strlen(b);
    if (nb >= 64) return 1 << 20;
    for (int j = 0; j <= nb; j++) rows[0][j] = j;
    for (size_t i = 1; i <= len; i++) {
        int *cur = rows[i % 3], *up = rows[(i - 1) % 3], *up2 = rows[(i + 1) % 3];
        cur[0] = (int)i;
        for (int j = 1; j <= nb; j++) {
            int best = up[j - 1] + (a[i - 1] != b[j - 1]);
            if (up[j] + 1 < best) best = up[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && up2[j - 2] + 1 < best)
                best = up2[j - 2] + 1;
            cur[j] = best;
        }
    }
    return rows[len % 3][nb];
}

// 1 when name begins with the len bytes at a, a word of 3 letters or more (letters: its own, past a
// leading "--"): a hint names every such name, as one of them would be an arbitrary pick.
static int word_begins(const char *name, const char *a, size_t len, int letters) {
    return letters >= 3 && !strncmp(name, a, len);
}

// The k-th candidate of a hint: the nflags flags' names, then the NULL-ended words; NULL past the last.
static const char *candidate(const Flag *flags, int nflags, const char *const *words, int k) {
    return k < nflags ? flags[k].name : words[k - nflags];
}

// The names a mistyped word (the len bytes at a: an unknown flag, command or top-level request) was
// likely meant to be, as git and argparse suggest one, in buf: the candidates the word begins, its 3
// letters or more past a leading "--" (--warm: --warmup-steps; --dec: "--dec-dim, --dec-depth or
// --dec-heads", in the table's order, rather than one picked of them), else the nearest by edits when
// at most 2 and fewer than half the word's letters (--topk: --top; --hlep: --help; trian: train). A word
// of one dash is taken as the long flag it misspells, its dash doubled (-hlep: --help, as --hlep; -steps:
// --steps): the dash missing would else be one of the 2 edits, and a hint for one spelling only. 0 when
// none is close, buf "" (docs/interface.md, section 1). A name equal to skip (non-NULL) is no candidate.
static int skipped(const char *name, const char *skip) { return skip && !strcmp(name, skip); }
static int closest_names(const Flag *flags, int nflags, const char *const *words, const char *skip,
                         const char *a, size_t len, char *buf, size_t n) {
    const char *best = NULL, *name;
    char dashed[52];
    buf[0] = 0;
    if (len > 48) return 0;
    if (len >= 2 && a[0] == '-' && a[1] != '-') {
        dashed[0] = '-';
        memcpy(dashed + 1, a, len);
        a = dashed;
        len++;
    }
    int best_d = 1 << 20, letters = (int)len - (!strncmp(a, "--", 2) ? 2 : 0), begun = 0;
    for (int k = 0; (name = candidate(flags, nflags, words, k)); k++) {
        if (skipped(name, skip)) continue;
        int d = edit_distance(a, len, name);
        if (d <= 2 && 2 * d < letters && d < best_d) { best = name; best_d = d; }
        begun += word_begins(name, a, len, letters);
    }
    if (!begun) {   // every name as near as the nearest, in the table's order (--atch: --batch or --patch)
        if (!best) return 0;
        int ties = 0;
        for (int k = 0; (name = candidate(flags, nflags, words, k)); k++)
            ties += !skipped(name, skip) && edit_distance(a, len, name) == best_d;
        for (int k = 0, said = 0; (name = candidate(flags, nflags, words, k)); k++) {
            if (skipped(name, skip) || edit_distance(a, len, name) != best_d) continue;
            size_t at = strlen(buf);
            snprintf(buf + at, n - at, "%s%s", said == 0 ? "" : said == ties - 1 ? " or " : ", ", name);
            said++;
        }
        return 1;
    }
    for (int k = 0, said = 0; (name = candidate(flags, nflags, words, k)); k++) {
        if (skipped(name, skip) || !word_begins(name, a, len, letters)) continue;
        size_t at = strlen(buf);
        snprintf(buf + at, n - at, "%s%s", said == 0 ? "" : said == begun - 1 ? " or " : ", ", name);
        said++;
    }
    return 1;
}

// A command's flags but skip (NULL: none), then --help: every command's, though no entry of its table.
static int closest_flags(const Flag *flags, int nflags, const char *skip, const char *a, size_t len,
                         char *buf, size_t n) {
    static const char *const help[] = {"--help", NULL};
    return closest_names(flags, nflags, help, skip, a, len, buf, n);
}

int cli_closest_words(const char *const *words, const char *word, char *buf, size_t n) {
    return closest_names(NULL, 0, words, NULL, word, strlen(word), buf, n);
}

// --ckpt (or -ckpt, a long flag of one dash: docs/interface.md, section 1), the other commands' way to a
// checkpoint, given to train, where it was "did you mean --ckpt-every?" (a number of steps, refused
// next): train's two ways to a checkpoint are named instead. 1 when said.
static int train_ckpt_refused(const char *command, const char *a, size_t len) {
    while (len > 0 && *a == '-') { a++; len--; }
    if (strcmp(command, "train") || len != 4 || strncmp(a, "ckpt", 4)) return 0;
    cli_error(command, "unknown flag '--ckpt' (train starts from a checkpoint's weights with --init CHECKPOINT, or "
              "continues its run with --resume RUN; see vitmae train --help)");
    return 1;
}

int cli_parse(const char *command, const char *synopsis, Flag *flags, int nflags,
              int argc, char **argv, char **positional, int max_positional, int *npositional) {
    int np = 0;
    int only_positional = 0;
    char word[UTF8_CLIP_SIZE];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_positional && strcmp(a, "--") == 0) { only_positional = 1; continue; }
        if (!only_positional && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            cli_default_sigpipe();   // the usage is no work to save (cmd/streams.h)
            cli_print_usage(command, synopsis, flags, nflags);
            return CLI_HELP;
        }
        if (!only_positional && a[0] == '-' && a[1] == '-' && a[2]) {
            const char *eq = strchr(a, '=');
            size_t len = eq ? (size_t)(eq - a) : strlen(a);
            Flag *f = NULL;
            for (int k = 0; k < nflags && !f; k++)
                if (strlen(flags[k].name) == len && !strncmp(flags[k].name, a, len)) f = &flags[k];
            // --help=1 was "unknown flag '--help' (did you mean --help? ...)": said as a flag that takes none.
            if (!f && len == 6 && !strncmp(a, "--help", 6)) {
                cli_error(command, "flag --help takes no value");
                return CLI_USAGE;
            }
            if (!f && train_ckpt_refused(command, a, len)) return CLI_USAGE;
            if (!f) {
                char near[512];
                if (closest_flags(flags, nflags, NULL, a, len, near, sizeof near))
                    cli_error(command, "unknown flag '%s' (did you mean %s? see vitmae %s --help)", clip_n(word, a, len), near, command);
                else cli_error(command, "unknown flag '%s' (see vitmae %s --help)", clip_n(word, a, len), command);
                return CLI_USAGE;
            }
            const char *name = f->name;
            f->seen = 1;
            if (f->type == FLAG_BOOL) {
                if (eq) { cli_error(command, "flag %s takes no value", name); return CLI_USAGE; }
                *(int *)f->dst = 1;
                continue;
            }
            const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) { cli_error(command, "flag %s needs a value", name); return CLI_USAGE; }
            // "--out --force": the value left out, the next flag taken as a folder named "--force" (and
            // --force not given). Refused so too: a word of two dashes that is no flag of the command, as
            // argparse refuses it (`--out --overwrit`, a misspelt --overwrite, made a run folder named
            // --overwrit), and one of one dash near a flag (-force), as the positional words take it
            // (below). A name may begin with '-' (--data -x, near no flag); one refused here is written
            // --out=--force or --out ./--force. The word echoed clipped as any other (docs/interface.md,
            // section 1); the hint, which the user copies, names it whole or, when cut, as NAME, and never
            // the flag being filled (`--data --dat`: a misspelt --data after --data is no mistake of it).
            const char *what = NULL;
            char near[512], said[600];
            if (!eq && (is_flag_of(flags, nflags, v) || !strcmp(v, "-h"))) what = "is a flag";
            else if (!eq && !strcmp(v, "--")) what = "ends the flags";
            else if (!eq && v[0] == '-' && v[1] && closest_flags(flags, nflags, name, v, strcspn(v, "="), near, sizeof near)) {
                snprintf(said, sizeof said, "looks like a flag (did you mean %s?)", near);
                what = said;
            } else if (!eq && v[0] == '-' && v[1] == '-') what = "looks like a flag";
            if (what) {
                const char *w = utf8_clip(word, v), *named = strcmp(w, v) ? "NAME" : w;
                if (f->type == FLAG_PATH || f->type == FLAG_FILE)
                    cli_error(command, "flag %s needs a value (the next argument, %s, %s; a path so named is "
                              "written %s=%s or %s ./%s)", name, w, what, name, named, name, named);
                else cli_error(command, "flag %s needs a value (the next argument, %s, %s)", name, w, what);
                return CLI_USAGE;
            }
            int rc = set_value(command, f, v);
            if (rc != CLI_OK) return rc;
            continue;
        }
        // A long flag with one dash (-steps, -hlep): refused with the hint its two-dash spelling gets, not
        // taken for an argument; a word of one dash near no flag (-x) stays one (docs/interface.md, section 1).
        if (!only_positional && a[0] == '-' && a[1] && a[1] != '-') {
            size_t len = strcspn(a, "=");
            if (train_ckpt_refused(command, a, len)) return CLI_USAGE;   // -ckpt, read as --ckpt
            char near[512];
            int close = closest_flags(flags, nflags, NULL, a, len, near, sizeof near);
            if (close) {
                cli_error(command, "unknown flag '%s' (did you mean %s? see vitmae %s --help)", clip_n(word, a, len), near, command);
                return CLI_USAGE;
            }
        }
        if (np >= max_positional) {
            // `vitmae train photos/`: the images given as reconstruct and embed take them; a command that
            // reads its images from --data says so (docs/interface.md, section 1).
            const char *w = utf8_clip(word, a);   // a word not taken, not a file named
            if (!max_positional && cli_flag(flags, nflags, "--data"))
                cli_error(command, "unexpected argument '%s' (the folder of images goes with --data DIR)", w);
            else if (!max_positional && cli_flag(flags, nflags, "--train"))
                cli_error(command, "unexpected argument '%s' (the folders of images go with --train DIR and --test DIR)", w);
            else cli_error(command, max_positional ? "too many arguments ('%s')" : "unexpected argument '%s'", w);
            return CLI_USAGE;
        }
        if (!*a) {   // `vitmae info ""` said "vitmae: : No such file or directory"
            cli_error(command, "an empty argument where a path goes");
            return CLI_USAGE;
        }
        cli_clean_path(argv[i]);
        positional[np++] = argv[i];
    }
    if (npositional) *npositional = np;
    return CLI_OK;
}

ViewSpec cli_view(float crop_pct, const char *interp) {
    ViewSpec v = {augment_fraction(crop_pct), IMAGE_BILINEAR};
    augment_interp_parse(interp, &v.filter);
    return v;
}

void cli_view_text(char *buf, size_t n, const char *prefix, ViewSpec v, int size) {
    const char *cubic = v.filter == IMAGE_BICUBIC ? "bicubic" : "";
    if (v.crop_pct >= 1.0) snprintf(buf, n, "%s%s", *cubic ? prefix : "", cubic);
    else snprintf(buf, n, "%scrop-pct %g (shorter side %ld, centre %d)%s%s", prefix, v.crop_pct,
                  image_view_scale(size, v.crop_pct), size, *cubic ? ", " : "", cubic);
}

int cli_start_threads(const char *cmd, int threads) {
    char err[512];
    if (cpu_start_threads(threads, err, sizeof err)) { cli_error(cmd, "%s", err); return 1; }
    int cpus = cpu_usable_cpus(), n = omp_get_max_threads();
    if (threads > cpus)   // a typo (--threads 4096 on 2 cores: 40 times the time), as train's header says it
        cli_message("warning: --threads %d is more than the %d CPU%s this process may use: slower, the same results",
                    threads, cpus, cpus == 1 ? "" : "s");
    // ... and a count from the environment, which the user may not know is set (docs/interface.md, "Threads"):
    // without --threads only a value of OMP_NUM_THREADS that libgomp takes gives more than the CPUs.
    else if (threads <= 0 && n > cpus && cpu_omp_threads_taken(getenv("OMP_NUM_THREADS")))
        cli_message("warning: OMP_NUM_THREADS=%.24s asks for %d threads, more than the %d CPU%s this process may use: "
                    "slower, the same results (--threads T overrides it)", getenv("OMP_NUM_THREADS"), n, cpus,
                    cpus == 1 ? "" : "s");
    return 0;
}
