// `vitmae attention --ckpt FILE|RUN [flags] INPUT...`: the encoder's attention drawn over each image.
// For every image: the evaluation view runs through the encoder (every patch, or the visible ones
// with --mask-ratio), the chosen maps are computed by src/viz/attnmap.c, and the command draws
//   DIR/<stem>.attn.png          a montage: a row per layer shown (a tile per head and the mean),
//                                or, one map per layer, a grid of layers (src/viz/overlay.h); each
//                                tile labelled, with its colour bar
//   DIR/<stem>/<map>.png         one overlay per map over the photo at --display size (tEXt: mode,
//                                layer, head, min, max, colour_scale, ...; weights = ema with --ema)
//   DIR/<stem>.attn.npy          --raw: float32 [depth, heads, T, T], every layer's softmax attention
//   DIR/<stem>.attn-mask.npy     --raw, masked: uint8 [gh, gw], 1 = removed (not reconstruct's .mask.npy)
//   DIR/<stem>/<map>.npy         --raw: float32 [gh, gw], the map's raw values (NaN = masked patch)
//   DIR/index.html               links to everything written by this run, with each map's range, and
//                                names the inputs it drew nothing of, with why
// Colours follow --normalize (src/viz/attnmap.h, attn_map_scale): by default 0 .. the largest value
// in the layer, so a colour never claims more than the weight it stands for; every bar is labelled
// with its scale's ends and marks uniform attention (attn_uniform_level: 1/T, less for rollout).
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>
#include "viz/attnmap.h"
#include "io/checkpoint.h"
#include "io/classifier_ckpt.h"
#include "io/json.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/output.h"
#include "data/dataset.h"
#include "viz/overlay.h"
#include "viz/text.h"
#include "data/image.h"
#include "core/model.h"
#include "core/encoder.h"
#include "io/files.h"
#include "io/json.h"
#include "io/npy.h"
#include "infer/infer.h"
#include "infer/recon.h"
#include "core/rng.h"
#include "viz/viz.h"
#include "core/masking.h"
#include "kernels/cpu.h"

typedef enum { MODE_CLS, MODE_PATCH, MODE_ROLLOUT } Mode;
typedef enum { NORM_LAYER = ATTN_SCALE_LAYER, NORM_MAP = ATTN_SCALE_MAP, NORM_NONE = ATTN_SCALE_NONE } Normalize;
static const char *const NORMALIZE_NAMES[] = {"layer", "map", "none"};

// What to compute and draw, resolved against the checkpoint.
typedef struct {
    Mode mode;
    int layer_first, layer_last;   // layers shown (inclusive)
    int *heads;                    // [nspec] tile specs per layer: head index, ATTN_HEAD_MEAN or ATTN_HEAD_MAX
    int nspec;
    int has_query, qx, qy;         // query patch in grid coordinates
    int cmap, bilinear, scale;     // scale > 0: photos drawn K times their size (else display/tile)
    int display, tile;             // longest side of an overlay / of a montage tile (overlay.h)
    Normalize normalize;
    float alpha;
    const int *keep;               // [K] visible patches, ascending
    int K;
    const uint8_t *removed;        // [L] 1 = masked out
    int L;
} Plan;

// One image's written files (relative to DIR), for index.html; or why it has none (failed).
typedef struct {
    char *source, *montage;
    char *failed;                  // this run drew nothing of it: why (the reason of its error line)
    const char *stem;   // owned by the command's StemSet
    char **maps;
    double (*ranges)[5];           // per map: its min and max, its colour scale's ends, its uniform level
    int nmaps;
} Written;

// ---------------------------------------------------------------------------------------------
// Flag values

// Digits after a sign at most, as every integer flag reads them (cmd/cli.c): strtol would also skip
// spaces. A plus was refused here and taken by the numeric flags, "-0" taken here and refused by embed's
// --layer (docs/interface.md, section 1).
static int starts_integer(const char *s) { return isdigit((unsigned char)s[0]) || s[0] == '-' || s[0] == '+'; }

// A selection flag: a number (*is_number = 1, *n), or one of the words (*word = its index).
// Returns 0, or -1 when s is neither.
static int parse_selection(const char *s, const char *const *words, int nwords, int *is_number, int *n, int *word) {
    for (int i = 0; i < nwords; i++)
        if (!strcmp(s, words[i])) { *is_number = 0; *word = i; return 0; }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < INT_MIN || v > INT_MAX || !starts_integer(s)) return -1;
    *is_number = 1; *n = (int)v;
    return 0;
}

// "X,Y" (integers).
static int parse_query(const char *s, int *x, int *y) {
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (end == s || *end != ',' || errno || a < INT_MIN || a > INT_MAX || !starts_integer(s)) return -1;
    const char *t = end + 1;
    long b = strtol(t, &end, 10);
    if (end == t || *end || errno || b < INT_MIN || b > INT_MAX || !starts_integer(t)) return -1;
    *x = (int)a; *y = (int)b;
    return 0;
}

static const char *head_name(int head, char *buf, size_t n) {
    if (head == ATTN_HEAD_MEAN) snprintf(buf, n, "mean");
    else if (head == ATTN_HEAD_MAX) snprintf(buf, n, "max");
    else snprintf(buf, n, "head%02d", head);
    return buf;
}

static const char *mode_name(Mode m) { return m == MODE_CLS ? "cls" : m == MODE_PATCH ? "patch" : "rollout"; }

// File name of a map without extension, e.g. "layer05-head02", "patch03x04-layer05-mean",
// "rollout-layer11-mean".
static void map_name(const Plan *p, int layer, int head, char *buf, size_t n) {
    char h[24], q[32] = "";
    if (p->has_query) snprintf(q, sizeof q, "patch%02dx%02d-", p->qx, p->qy);
    snprintf(buf, n, "%s%slayer%02d-%s", p->mode == MODE_ROLLOUT ? "rollout-" : "", q, layer,
             head_name(head, h, sizeof h));
}

// s past "<prefix><two or more digits>" (map_name's %02d), or NULL when s does not begin so.
static const char *past_number(const char *s, const char *prefix) {
    size_t n = strlen(prefix);
    if (!s || strncmp(s, prefix, n)) return NULL;
    const char *d = s + n;
    while (isdigit((unsigned char)*d)) d++;
    return d - (s + n) >= 2 ? d : NULL;
}

// Whether name is a map's file as map_name names them in any mode, .png or .npy: the files of an
// earlier run that --force removes from an image's folder of maps; any other file there is the user's
// and stays (docs/interface.md, section 5, attention's --force).
static int is_map_file(const char *name) {
    const char *s = name;
    if (!strncmp(s, "rollout-", 8)) s += 8;
    if (!strncmp(s, "patch", 5)) {
        s = past_number(past_number(s, "patch"), "x");
        if (!s || *s++ != '-') return 0;
    }
    s = past_number(s, "layer");
    if (!s || *s++ != '-') return 0;
    const char *ext = past_number(s, "head");
    if (!ext) ext = !strncmp(s, "mean", 4) ? s + 4 : !strncmp(s, "max", 3) ? s + 3 : NULL;
    return ext && (!strcmp(ext, ".png") || !strcmp(ext, ".npy"));
}

// Tile label in the montage: "layer 5 head 0", "layer 5 mean", "layer 5 rollout mean".
static void tile_label(const Plan *p, int layer, int head, char *buf, size_t n) {
    char h[24];
    if (head >= 0) snprintf(h, sizeof h, "head %d", head);
    else head_name(head, h, sizeof h);
    snprintf(buf, n, "layer %d %s%s", layer, p->mode == MODE_ROLLOUT ? "rollout " : "", h);
}

// ---------------------------------------------------------------------------------------------
// Files and names

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s/%s", a, b);
    return s;
}

// The page's lines of what the gathering met ("PATH: why"), the first `placed` of them each with the
// number of images gathered before it, kept in that order (after the lines of its place met before
// it), as stderr says them (cmd/cli.h, cli_unread_keep): write_index lists them among the images' own
// (docs/interface.md, attention). A line with no room for its place (out of memory) comes after them.
typedef struct {
    CliHeld held;
    long *before;
    int cap, placed;
} PageLines;

typedef struct {
    int *failures;
    PageLines *page;
    CliUnread *unread;
} Unusable;

// A line for the page, after the first `before` images: held in place (index.html lists what it did not
// draw in input order); after a failed allocation of places, this and the later lines come last.
static void page_line(void *ctx, long before, const char *what, const char *why) {
    PageLines *pl = ctx;
    cli_hold(&pl->held, what, "%s", why);
    if (pl->placed != pl->held.n - 1) return;   // not kept (said now), or an earlier line has no place
    if (pl->cap < pl->held.n) {
        long *b = realloc(pl->before, (size_t)pl->held.cap * sizeof *b);
        if (!b) return;
        pl->before = b;
        pl->cap = pl->held.cap;
    }
    char *line = pl->held.lines[pl->placed];
    int j = pl->placed++;
    for (; j > 0 && pl->before[j - 1] > before; j--) {
        pl->held.lines[j] = pl->held.lines[j - 1];
        pl->before[j] = pl->before[j - 1];
    }
    pl->held.lines[j] = line;
    pl->before[j] = before;
}

// One input this run cannot draw (collect_inputs), after the first `before` images: its line kept in
// unread at its place (one of the 20 named for one of a folder's files or an input that is not there,
// else said whole); the same line for the page; counted.
static void unusable(const Unusable *u, long before, int one_of_many, const char *what, const char *why) {
    cli_unread_keep(u->unread, CLI_AT_BEFORE(before), one_of_many, what, why);
    page_line(u->page, before, what, why);
    (*u->failures)++;
}

// Input files: each INPUT is a file, or a folder scanned like `data` (recursively, sorted).
// Unusable inputs are counted in *failures, their lines kept in *unread in input order (said once the
// outputs pass their checks: a refused run prints its one line only; cmd/cli.h names 20). Every one of
// them, "PATH: why", also goes to *page, for index.html's list of what this run did not draw.
static char **collect_inputs(char **inputs, int ninputs, long max_pixels, int *npaths, int *failures,
                             CliUnread *unread, PageLines *page) {
    char **paths = NULL;
    int n = 0, cap = 0;
    Unusable u = {failures, page, unread};
    for (int i = 0; i < ninputs; i++) {
        struct stat st;
        char reason[4200];
        if (stat(inputs[i], &st)) {
            unusable(&u, n, 1, inputs[i], file_path_reason(inputs[i], errno, reason, sizeof reason));
            continue;
        }
        const char **add = NULL;
        int nadd = 0;
        Dataset ds;
        int scanned = 0;
        if (S_ISDIR(st.st_mode)) {
            char err[CLI_ERR_MAX];
            DatasetOptions opt = {.max_pixels = max_pixels};
            int src = dataset_scan(inputs[i], &opt, &ds, err, sizeof err);
            if (src) {
                unusable(&u, n, 0, dataset_err_what(src, inputs[i]), err);
                continue;
            }
            scanned = 1;
            // Its skipped files and a folder with nothing to draw, as reconstruct and classify say them
            // (one rule); the hidden ones' warning is no failure and not on the page.
            *failures += output_folder_skipped(unread, n, inputs[i], &ds, page_line, page);
            add = malloc((size_t)(ds.n ? ds.n : 1) * sizeof *add);
            for (int k = 0; add && k < ds.n; k++) add[nadd++] = ds.items[k].path;
        } else {
            add = malloc(sizeof *add);
            if (add) add[nadd++] = inputs[i];
        }
        // Out of memory: the input is a failure said in its own line, never left out without a word
        // (and the list keeps the capacity it has: a larger one kept after a failed realloc was
        // written past).
        int room = add != NULL;
        if (room && n + nadd > cap) {
            char **np = realloc(paths, (size_t)(n + nadd) * 2 * sizeof *paths);
            if (np) { paths = np; cap = (n + nadd) * 2; }
            else room = 0;
        }
        for (int k = 0; room && k < nadd; k++)
            if (!(paths[n] = strdup(add[k]))) room = 0;
            else n++;
        if (!room) unusable(&u, n, 0, inputs[i], "out of memory");
        free(add);
        if (scanned) dataset_free(&ds);
    }
    *npaths = n;
    return paths;
}

// ---------------------------------------------------------------------------------------------
// Drawing

static const uint8_t WHITE[3] = {255, 255, 255}, BLACK[3] = {0, 0, 0}, GREY[3] = {128, 128, 128},
                     QUERY_RGB[3] = {255, 40, 40};

// The photo of one image and where the model's view sits in it, at one display size.
typedef struct {
    int dw, dh, k, c;
    float *px;        // [dh][dw][c]
    double box[4];    // the evaluation crop, display pixels
    int cropped;      // the crop is not the whole photo: outline it
} Display;

// The display's size alone (d->dw, d->dh, d->k; nothing allocated): known from the photo's size and the
// flags, so that an image refused for its size is refused before anything of it is drawn.
static int display_size(Display *d, const Image *im, int display, int scale, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    overlay_display_size(im->w, im->h, display, scale, &d->dw, &d->dh, &d->k);
    if (d->dw > VIZ_MAX_SIDE || d->dh > VIZ_MAX_SIDE) {
        snprintf(err, errlen, "a %dx%d photo at --scale %d is too large to draw (%d pixels per side at most)",
                 im->w, im->h, scale, VIZ_MAX_SIDE);
        return -1;
    }
    return 0;
}

static int display_make(Display *d, const Image *im, int S, int display, int scale, char *err, size_t errlen) {
    if (display_size(d, im, display, scale, err, errlen)) return -1;
    d->c = im->c;
    d->px = malloc(sizeof(float) * (size_t)d->dw * d->dh * d->c);
    if (!d->px || overlay_display_photo(im->px, im->w, im->h, im->c, d->dw, d->dh, d->k, d->px)) {
        free(d->px); d->px = NULL;
        snprintf(err, errlen, "out of memory for a %dx%d picture", d->dw, d->dh);
        return -1;
    }
    double b[4];
    image_eval_box(im->w, im->h, S, 1.0, b);
    d->cropped = b[0] > 0 || b[1] > 0 || b[2] < im->w || b[3] < im->h;
    d->box[0] = b[0] * d->dw / im->w; d->box[2] = b[2] * d->dw / im->w;
    d->box[1] = b[1] * d->dh / im->h; d->box[3] = b[3] * d->dh / im->h;
    return 0;
}

// Draws one map over the photo with its top-left at (x, y), colours over [vmin, vmax]. grid [L]
// raw values (NaN = masked); up [dw * dh] is scratch. A masked patch lends no value to its visible
// neighbours (overlay_map leaves NaN cells out) and is painted grey over the result.
static void draw_map(Canvas *cv, int x, int y, const Display *d, const MaeConfig *cfg, const float *grid,
                     const Plan *p, double vmin, double vmax, float *up) {
    int g = cfg->img_size / cfg->patch_size, L = g * g;
    overlay_map(grid, g, g, d->box, d->dw, d->dh, p->bilinear, up);
    overlay_draw(cv, x, y, d->px, d->dw, d->dh, d->c, up, vmin, vmax, p->cmap, p->alpha, d->box, d->cropped);
    int r[4];
    for (int l = 0; l < L; l++)
        if (p->removed[l]) {
            overlay_cell_rect(d->box, g, g, l % g, l / g, r);
            canvas_fill_rect(cv, x + r[0], y + r[1], r[2] - r[0], r[3] - r[1], GREY);
        }
    if (p->has_query) {
        overlay_cell_rect(d->box, g, g, p->qx, p->qy, r);
        canvas_rect(cv, x + r[0], y + r[1], r[2] - r[0], r[3] - r[1], r[2] - r[0] >= 12 ? 2 : 1, QUERY_RGB);
    }
}

// ---------------------------------------------------------------------------------------------
// One image

typedef struct {
    const MaeConfig *cfg;
    const Plan *plan;
    const char *out_dir;
    int raw;
    float mask_ratio;
    long seed;
    int ema;       // --ema: the maps are of a classifier's moving average (tEXt weights = ema)
    int replace;   // --force: publish over files that exist (io/files.h)
    FileFolders *later;   // the folders written to, synced once at the run's end (io/files.h)
    int *page_gone;       // --force: 1 once the first image is published, 2 when an earlier index.html went then
} Job;

enum { STAGED_LEN = 4096 + FILE_TMP_HOST_EXTRA };   // names with the host (leftovers_sweep)

// Writes one map's overlay PNG (and .npy with --raw) under temporary names, given in staged[0] and
// staged[1] (STAGED_LEN bytes each; left empty for a file not written). name is without extension.
static int write_map(const Job *job, const char *dir, const char *name, int layer, int head, const Display *d,
                     const float *grid, double vmin, double vmax, float *up, char *staged,
                     char *err, size_t errlen) {
    const MaeConfig *cfg = job->cfg;
    const Plan *p = job->plan;
    int g = cfg->img_size / cfg->patch_size;
    Canvas cv;
    if (canvas_create(&cv, d->dw, d->dh, err, errlen)) return -1;
    draw_map(&cv, 0, 0, d, cfg, grid, p, vmin, vmax, up);
    float lo, hi;
    attn_grid_range(grid, g * g, &lo, &hi);
    char layer_s[16], head_s[24], min_s[32], max_s[32], query_s[32], mask_s[48], seed_s[32], scale_s[80], uni_s[32];
    snprintf(layer_s, sizeof layer_s, "%d", layer);
    head_name(head, head_s, sizeof head_s);
    if (head >= 0) snprintf(head_s, sizeof head_s, "%d", head);
    snprintf(min_s, sizeof min_s, "%.9g", (double)lo);
    snprintf(max_s, sizeof max_s, "%.9g", (double)hi);
    snprintf(scale_s, sizeof scale_s, "%.9g %.9g", vmin, vmax);
    snprintf(uni_s, sizeof uni_s, "%.9g", attn_uniform_level(p->mode == MODE_ROLLOUT, layer, 1 + p->K));
    snprintf(query_s, sizeof query_s, p->has_query ? "%d,%d" : "cls", p->qx, p->qy);
    // mask_ratio a number, as the flag was typed (it held "0.5 seed 3", which float() refuses); the
    // seed of the mask a chunk of its own.
    config_float_text(job->mask_ratio, mask_s, sizeof mask_s);
    snprintf(seed_s, sizeof seed_s, "%ld", job->seed);
    const char *text[] = {"Software", "vitmae attention", "mode", mode_name(p->mode), "layer", layer_s,
                          "head", head_s, "query", query_s, "min", min_s, "max", max_s,
                          "normalize", NORMALIZE_NAMES[p->normalize], "colour_scale", scale_s, "uniform", uni_s,
                          "mask_ratio", mask_s, "seed", seed_s, job->ema ? "weights" : NULL, "ema", NULL};   // chunk with --ema only
    char path[4096], why[256];
    snprintf(path, sizeof path, "%s/%s.png", dir, name);
    file_tmp_name_host(path, staged, STAGED_LEN);
    int rc = output_png_to(staged, cv.px, cv.w, cv.h, 3, text, why, sizeof why);
    canvas_free(&cv);
    if (rc) staged[0] = 0;
    if (!rc && job->raw) {
        snprintf(path, sizeof path, "%s/%s.npy", dir, name);
        int64_t shape[2] = {g, g};
        file_tmp_name_host(path, staged + STAGED_LEN, STAGED_LEN);
        rc = npy_write_to(staged + STAGED_LEN, path, grid, "<f4", 2, shape, why, sizeof why);
        if (rc) staged[STAGED_LEN] = 0;
    }
    if (rc) snprintf(err, errlen, "%s: %s", path, why);   // which of the image's files, and why
    return rc ? -1 : 0;
}

// Every map's own overlay file (write_map), the maps shared out over the threads: encoding those PNGs
// is most of this command's time per image. Each thread draws in scratch of its own; files do not
// depend on which thread wrote them. They are added to files in map order. On failure the first map,
// in order, that failed gives err, and the maps' temporary files are removed.
static int write_maps(const Job *job, const char *dir, const Display *big, const float *grids, const int *layer_of,
                      const int *head_of, const double (*range)[2], int ntiles, FileGroup *files, char *err,
                      size_t errlen) {
    const MaeConfig *cfg = job->cfg;
    int g = cfg->img_size / cfg->patch_size, L = g * g, nth = omp_get_max_threads();
    if (nth > ntiles) nth = ntiles > 0 ? ntiles : 1;
    size_t up_n = (size_t)big->dw * big->dh, errsz = 4096 + 300;
    float *ups = malloc((size_t)nth * up_n * sizeof *ups);
    char *errs = malloc((size_t)ntiles * errsz + 1);
    int *failed = calloc((size_t)ntiles + 1, sizeof *failed);
    char *staged = calloc((size_t)ntiles * 2 + 1, STAGED_LEN);   // per map: its .png's and .npy's temporary names
    if (!ups || !errs || !failed || !staged) {
        free(ups); free(errs); free(failed); free(staged);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    #pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
    for (int t = 0; t < ntiles; t++) {
        int th = omp_get_thread_num();
        char name[128];
        map_name(job->plan, layer_of[t], head_of[t], name, sizeof name);
        failed[t] = write_map(job, dir, name, layer_of[t], head_of[t], big, grids + (size_t)t * L, range[t][0],
                              range[t][1], ups + (size_t)th * up_n,
                              staged + (size_t)t * 2 * STAGED_LEN, errs + (size_t)t * errsz, errsz) != 0;
    }
    int rc = 0;
    for (int t = 0; t < ntiles && !rc; t++)
        if (failed[t]) { snprintf(err, errlen, "%s", errs + (size_t)t * errsz); rc = -1; }
    for (int t = 0; t < ntiles; t++) {
        char name[128], path[4096 + 160];
        map_name(job->plan, layer_of[t], head_of[t], name, sizeof name);
        for (int k = 0; k < 2; k++) {
            const char *tmp = staged + ((size_t)t * 2 + k) * STAGED_LEN;
            if (!tmp[0]) continue;
            snprintf(path, sizeof path, "%s/%s.%s", dir, name, k ? "npy" : "png");
            if (rc) file_tmp_remove(tmp);
            else if (file_group_add(files, tmp, path)) { snprintf(err, errlen, "out of memory"); rc = -1; }
        }
    }
    free(ups); free(errs); free(failed); free(staged);
    return rc;
}

static int add_written(Written *w, const char *rel, float lo, float hi, double vmin, double vmax, double uniform) {
    char **m = realloc(w->maps, (size_t)(w->nmaps + 1) * sizeof *m);
    if (!m) return -1;
    w->maps = m;
    double (*r)[5] = realloc(w->ranges, (size_t)(w->nmaps + 1) * sizeof *r);
    if (!r) return -1;
    w->ranges = r;
    w->ranges[w->nmaps][0] = lo; w->ranges[w->nmaps][1] = hi;
    w->ranges[w->nmaps][2] = vmin; w->ranges[w->nmaps][3] = vmax; w->ranges[w->nmaps][4] = uniform;
    w->maps[w->nmaps] = strdup(rel);
    return w->maps[w->nmaps++] ? 0 : -1;
}

// The montage's header: what the tiles show and how to read their colours.
static void montage_caption(const Plan *p, const char *stem, const Display *d, int T, int beyond, char *buf,
                            size_t n) {
    char qdesc[48] = "the CLS token", u[32], mark[192];
    if (p->has_query) snprintf(qdesc, sizeof qdesc, "patch (%d,%d)", p->qx, p->qy);
    viz_format_value(1.0 / T, u, sizeof u);
    snprintf(mark, sizeof mark, "uniform attention, 1/%d = %s", T, u);
    if (p->mode == MODE_ROLLOUT) {
        // Uniform attention in every layer leaves (1 - 2^-(l+1)) / T on a patch after layer l
        // (attn_uniform_level), not 1/T: the residual half of each layer stays on the token itself.
        char first[32], last[32];
        viz_format_value(attn_uniform_level(1, p->layer_first, T), first, sizeof first);
        viz_format_value(attn_uniform_level(1, p->layer_last, T), last, sizeof last);
        if (p->layer_first == p->layer_last)
            snprintf(mark, sizeof mark, "where uniform attention in every layer (1/%d) leaves the rollout, "
                     "(1 - 2^-%d)/%d = %s", T, p->layer_last + 1, T, last);
        else
            snprintf(mark, sizeof mark, "where uniform attention in every layer (1/%d) leaves the rollout, "
                     "(1 - 2^-(l+1))/%d at layer l: %s at layer %d to %s at layer %d", T, T, first, p->layer_first,
                     last, p->layer_last);
    }
    const char *scale =
        p->normalize == NORM_LAYER ? "Colour = attention weight, from 0 to the largest weight among the layer's maps drawn (one scale per layer, its ends on each bar)."
      : p->normalize == NORM_MAP ? "Each tile is stretched to its own min..max (the ends of its bar): small differences look large."
                                 : "Colour = attention weight on 0..1.";
    // beyond: some bar's scale ends short of uniform attention, which its end then marks with an arrow.
    snprintf(buf, n, "%s: %s%s over the patches.\n%s The white mark on a bar is %s%s.%s%s",
             stem, p->mode == MODE_ROLLOUT ? "attention rollout of " : "attention of ", qdesc, scale, mark,
             beyond ? " (a white arrow at a bar's end: uniform attention lies beyond that end of its scale)" : "",
             d->cropped ? " The model saw the outlined square (its centre crop); the rest of the photo is dimmed." : "",
             p->K < p->L ? " Grey squares: masked patches." : "");
}

// The narrowest montage cell (its colour bar and the bar's numbers) and header text, the margin and the
// colour bars' height, in pixels.
enum { MONTAGE_MIN_BAR_W = 120, MONTAGE_MIN_TEXT_W = 360, MONTAGE_PAD = 10, MONTAGE_BAR_H = 8 };

// The montage's text size: larger over tiles wide enough for it.
static double montage_text_size(int tile_w) { return tile_w >= 160 ? 13.0 : 11.0; }

// Plans the montage of ntiles tiles of tile_w x tile_h (tile t: layer_of[t]'s head_of[t]) under a header
// head_h pixels tall. One function for the check before the image's maps are made (head_h 0: the
// header's lines wait for the maps, whose scales the caption tells) and for the montage drawn, so that a
// montage too large is refused before anything of the image is drawn or allocated (docs/interface.md,
// attention's "Selection"), with the same line.
static int montage_layout(Montage *mo, const Plan *p, const int *layer_of, const int *head_of, int ntiles,
                          int tile_w, int tile_h, int head_h, char *err, size_t errlen) {
    double ts = montage_text_size(tile_w);
    int pad = MONTAGE_PAD, lh = text_line_height(ts);
    // A row per layer of several maps; one map a layer: the grid montage_plan chooses (0), the nearest
    // square unless that is too large and another grid without an empty cell fits.
    int cols = p->nspec > 1 ? p->nspec : 0;
    // A cell holds its label and its bar's numbers however narrow the photo (1 x 4000 pixels: tiles 1 px
    // wide), and the header wraps at no fewer than MONTAGE_MIN_TEXT_W pixels.
    int min_cell = MONTAGE_MIN_BAR_W;
    for (int t = 0; t < ntiles; t++) {
        char label[64];
        tile_label(p, layer_of[t], head_of[t], label, sizeof label);
        int lw = text_width(label, ts) + 4;
        if (lw > min_cell) min_cell = lw;
    }
    if (!montage_plan(mo, ntiles, cols, tile_w, tile_h, lh + 2, viz_colorbar_height(MONTAGE_BAR_H, ts) + 2, head_h, pad,
                      min_cell, MONTAGE_MIN_TEXT_W + 2 * pad, err, errlen))
        return 0;
    // The same line came for every image, and said nothing of the flags that draw fewer or smaller tiles.
    size_t k = strlen(err);
    // Tiles are the --scale drawing itself, which at --scale 1 cannot be smaller.
    // Only the ways not already taken: one tile a layer (--head mean) was offered to a run drawing one.
    if (strstr(err, "too large") && k < errlen) {
        const char *heads = p->nspec > 1 ? "--head mean, max or N draws one tile a layer" : "";
        const char *layers = p->layer_last > p->layer_first ? "--layer N draws one layer" : "";
        const char *tiles = p->scale == 1 ? "" : p->scale > 1 ? "a smaller --scale smaller tiles"
                                                              : "a smaller --display smaller tiles";
        const char *ways[3] = {heads, layers, tiles};
        for (int i = 0, said = 0; i < 3; i++)
            if (ways[i][0] && (k = strlen(err)) < errlen) {
                snprintf(err + k, errlen - k, "%s%s", said++ ? ", " : ": ", ways[i]);
            }
    }
    return -1;
}

// The arrays of one image that grow with the model, laid out in one block (a Carver, core/encoder.h)
// by one function, which both the memory check before the run and attend_one use, so that the check
// counts what is allocated (docs/interface.md, attention's "Memory"). The encoder runs a block at a
// time (mae_encoder_block) and each layer's maps are read as it makes them: T = 1 + K tokens,
// L patches, H heads, the drawn layers' tiles ntiles = layers x nspec.
typedef struct {
    float *grids;      // [ntiles, L] the maps drawn (each layer's rows, read as the layer is made)
    float *row;        // [T] one query row
    float *rollout;    // rollout: [nspec, T, T] the running products R_l, one per fused map
    float *mat, *work; // rollout: [T, T] a layer's fused matrix, and the product's scratch
    float *raw;        // --raw: [depth, H, T, T] every layer, for .attn.npy
} AttendArrays;

static size_t attend_layout(AttendArrays *a, float *base, const Plan *p, const MaeConfig *cfg, int raw) {
    Carver cv = {base, 0};
    size_t T = 1 + (size_t)p->K, TT = T * T, L = (size_t)p->L;
    size_t ntiles = (size_t)(p->layer_last - p->layer_first + 1) * p->nspec;
    int roll = p->mode == MODE_ROLLOUT;
    a->grids = carve(&cv, ntiles * L);
    a->row = carve(&cv, T);
    a->rollout = roll ? carve(&cv, (size_t)p->nspec * TT) : NULL;
    a->mat = roll ? carve(&cv, TT) : NULL;
    a->work = roll ? carve(&cv, TT) : NULL;
    a->raw = raw ? carve(&cv, (size_t)cfg->depth * cfg->num_heads * TT) : NULL;
    return cv.used;
}

// The bytes a run holds for one image: the encoder-only model (one block's activations, one layer's
// maps among them, nothing of the decoder) and attend_layout's arrays. Said in a refusal
// (mae_memory_check_bytes).
static size_t attend_bytes(const Plan *p, const MaeConfig *cfg, int raw) {
    AttendArrays a;
    size_t model = mae_bytes_needed_encoder(cfg, 1), arrays = attend_layout(&a, NULL, p, cfg, raw) * sizeof(float);
    double need = (double)model + (double)arrays;   // bounded as the model's (core/encoder.h, BYTES_BEYOND_ANY)
    return need >= BYTES_BEYOND_ANY ? (size_t)fmin(need, 0x1p63) : model + arrays;
}

// Runs the encoder on one view and writes every file of this image, under temporary names, then
// publishes them together (io/files.h): without --force nothing is replaced, so
// the image's files are all this run's or all another command's that wrote them meanwhile (then
// *taken is 1); with --force the earlier run's maps and arrays of the image that this run does not
// write go in the same step (file_group_sweep), so they are all this run's. Returns the number of
// maps written, or -1 with err; on failure nothing of the image is left (its folder of maps goes
// when this call made it and it is empty). A folder whose sync fails once the files are published
// leaves them (io/files.h, FILE_UNSYNCED): the maps are counted, *unsynced is 1 and err says which.
// From the publish on a stop signal is held back until the caller's file_stop_resume (io/files.h).
static int attend_one(const Job *job, Mae *m, const Image *photo, const float *view, Written *w, int *taken,
                      int *unsynced, char *err, size_t errlen) {
    const MaeConfig *cfg = job->cfg;
    const Plan *p = job->plan;
    int S = cfg->img_size, C = cfg->in_chans, g = S / cfg->patch_size, L = g * g;
    int H = cfg->num_heads, T = 1 + p->K, depth = cfg->depth;
    size_t TT = (size_t)T * T;
    int nmaps = -1;
    int nlayers = p->layer_last - p->layer_first + 1, ntiles = nlayers * p->nspec, roll = p->mode == MODE_ROLLOUT;

    Display big = {0}, small = {0};
    AttendArrays arr;
    size_t arr_floats = attend_layout(&arr, NULL, p, cfg, job->raw);
    float *arena = malloc((arr_floats + 16) * sizeof *arena);   // + 16: room to align its start to 64 bytes
    float *norm = malloc((size_t)S * S * C * sizeof *norm);
    int *layer_of = malloc((size_t)ntiles * sizeof *layer_of), *head_of = malloc((size_t)ntiles * sizeof *head_of);
    double (*range)[2] = malloc((size_t)ntiles * sizeof *range);   // each map's colour scale, vmin and vmax
    char *dir = join(job->out_dir, w->stem);
    float *up = NULL;
    Canvas cv = {0, 0, NULL};
    FileGroup files = {.later = job->later};
    int made_dir = 0, parent = -1;   // parent: DIR held open, where the folder of maps is removed from
    *taken = 0;
    *unsynced = 0;
    if (!arena || !norm || !layer_of || !head_of || !range || !dir) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    // Tile t is layer layer_first + t / nspec's heads[t % nspec], the order the encoder makes the maps in
    // (below). The image's sizes come first: a photo too large to draw, or its montage too large, is
    // refused before the encoder runs or a picture is allocated (a 900 x 506 photo at --scale 20 took
    // 4.3 GB of displays before its montage was refused, and where they did not fit the run stopped out
    // of memory instead, the images after it not drawn).
    for (int t = 0; t < ntiles; t++) {
        layer_of[t] = p->layer_first + t / p->nspec;
        head_of[t] = p->heads[t % p->nspec];
    }
    Montage mo;
    if (display_size(&big, photo, p->display, p->scale, err, errlen) ||
        display_size(&small, photo, p->tile, p->scale, err, errlen) ||
        montage_layout(&mo, p, layer_of, head_of, ntiles, small.dw, small.dh, 0, err, errlen))
        goto done;
    attend_layout(&arr, (float *)(((uintptr_t)arena + 63) & ~(uintptr_t)63), p, cfg, job->raw);
    float *grids = arr.grids, *row = arr.row;
    if (display_make(&big, photo, S, p->display, p->scale, err, errlen) ||
        display_make(&small, photo, S, p->tile, p->scale, err, errlen))
        goto done;
    up = malloc((size_t)big.dw * big.dh * sizeof *up);
    if (!up) { snprintf(err, errlen, "out of memory"); goto done; }
    memcpy(norm, view, (size_t)S * S * C * sizeof *norm);
    pixels_normalise(cfg, norm, (long)S * S);
    // Every map first (a layer's scale needs all of its tiles), each layer's read as its block makes
    // it: the encoder stops after the last layer drawn (--raw: after the last layer).
    int query = 0;
    if (p->has_query) query = attn_token_of_patch(p->keep, p->K, p->qy * g + p->qx);
    for (int s = 0; p->mode == MODE_ROLLOUT && s < p->nspec; s++) attn_rollout_init(arr.rollout + s * TT, T);
    mae_encoder_start(m, norm, p->keep, 1, p->K);
    int t = 0;
    for (int l = 0; l <= (job->raw ? depth - 1 : p->layer_last); l++) {
        const float *att = mae_encoder_block(m, l);   // [1, H, T, T]
        int finite = 1;   // weights that overflow float: NaN maps, never drawn or written
        for (size_t i = 0; i < (size_t)H * TT; i++) finite &= isfinite(att[i]) != 0;
        if (!finite) { snprintf(err, errlen, "%s", INFER_NONFINITE_WHY); goto done; }
        if (job->raw) memcpy(arr.raw + (size_t)l * H * TT, att, (size_t)H * TT * sizeof *att);
        for (int s = 0; s < p->nspec && l <= p->layer_last; s++) {
            int head = p->heads[s];
            if (p->mode == MODE_ROLLOUT) {
                attn_fuse_heads(att, H, T, head, arr.mat);
                attn_rollout_step(arr.rollout + s * TT, arr.mat, T, arr.work);
                if (l < p->layer_first) continue;
                memcpy(row, arr.rollout + s * TT + (size_t)query * T, (size_t)T * sizeof *row);
            } else {
                if (l < p->layer_first) break;
                attn_query_row(att, H, T, query, head, row);
            }
            attn_row_to_grid(row, T, p->keep, L, grids + (size_t)t * L);   // tile t: layer_of[t] = l, head_of[t] = head
            t++;
        }
    }

    // The montage: tiles in rows of a layer's heads (or, one map per layer, a grid of layers),
    // each with its label above and its colour bar under it.
    file_test_gate("VITMAE_FAULT_HOLD_BEFORE_PUBLISH");   // the folder of maps is an output too (io/files.h)
    // A symbolic link at the folder's name, to a folder, a file or nothing, is replaced by a folder of
    // this run's with --force, never written through: the maps went into its target, and --force's sweep
    // of an earlier run's maps deleted the target's files (docs/interface.md, "Earlier results"). Without
    // --force (a link made since the check before the work) mkdir finds the name taken: below.
    struct stat lst;
    if (job->replace && lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode) && unlink(dir) != 0 && errno != ENOENT) {
        char reason[128];
        snprintf(err, errlen, "%s: cannot replace the symbolic link with a folder: %s", dir,
                 file_reason(errno, reason, sizeof reason));
        goto done;
    }
    // DIR held before its folder of maps is made in it: a failed image's folder goes from DIR wherever
    // it went (a DIR moved meanwhile kept an empty DIR/<stem>, which a later run refused as "exists").
    parent = open(job->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int mk = file_mkdir_tracked(dir);   // kept until published: a stop signal removes it while empty
    if (mk < 0) {
        char reason[128];
        snprintf(err, errlen, "%s: %s", dir, file_reason(errno, reason, sizeof reason));
        goto done;
    }
    made_dir = mk == 0;
    // Without --force nothing was at the name when the run began (refuse_earlier): a folder or a link
    // there now was made by another command meanwhile, and this run's maps went into it silently (or
    // through the link). The run stops, as for a file published meanwhile (io/files.h, FILE_TAKEN).
    if (!made_dir && !job->replace) {
        snprintf(err, errlen, "%s: exists now (made by another command meanwhile); pass --force to replace it", dir);
        *taken = 1;
        goto done;
    }
    if (!made_dir && output_mkdir_p(dir, err, errlen)) goto done;   // there already: it must be a folder
    double ts = montage_text_size(small.dw);
    int pad = MONTAGE_PAD, lh = text_line_height(ts), bar = MONTAGE_BAR_H;
    int beyond = 0;   // a bar whose scale ends short of uniform attention (viz_colorbar_mark_beyond)
    for (t = 0; t < ntiles; t++) {
        ColorBar cb = {p->cmap, 0, 0, attn_uniform_level(roll, layer_of[t], T), NULL, ts, {0, 0, 0}};
        attn_map_scale((int)p->normalize, grids, layer_of, ntiles, t, L, &cb.vmin, &cb.vmax);
        if (viz_colorbar_mark_beyond(&cb)) beyond = 1;
    }
    char caption[1024], wrapped[2048];
    montage_caption(p, w->stem, &small, T, beyond, caption, sizeof caption);
    int head_lines = text_wrap_names(caption, ts, mo.w - 2 * pad, wrapped, sizeof wrapped);
    if (montage_layout(&mo, p, layer_of, head_of, ntiles, small.dw, small.dh, pad + head_lines * lh, err, errlen) ||
        canvas_create(&cv, mo.w, mo.h, err, errlen))
        goto done;
    canvas_fill(&cv, WHITE);
    canvas_text(&cv, pad, pad, wrapped, BLACK, ts);

    for (t = 0; t < ntiles; t++) {
        const float *grid = grids + (size_t)t * L;
        double vmin, vmax;
        attn_map_scale((int)p->normalize, grids, layer_of, ntiles, t, L, &vmin, &vmax);
        range[t][0] = vmin; range[t][1] = vmax;
        int x, y, cx, cy;
        montage_tile_origin(&mo, t, &x, &y);
        montage_cell_origin(&mo, t, &cx, &cy);
        char label[64];
        tile_label(p, layer_of[t], head_of[t], label, sizeof label);
        canvas_text(&cv, cx, cy, label, BLACK, ts);
        draw_map(&cv, x, y, &small, cfg, grid, p, vmin, vmax, up);
        ColorBar cb = {p->cmap, vmin, vmax, attn_uniform_level(roll, layer_of[t], T), "uniform", ts,
                       {BLACK[0], BLACK[1], BLACK[2]}};
        viz_colorbar(&cv, cx, y + mo.tile_h + 2, mo.cell_w, bar, 0, &cb);
    }
    if (write_maps(job, dir, &big, grids, layer_of, head_of, (const double (*)[2])range, ntiles, &files, err, errlen))
        goto done;
    nmaps = 0;
    for (t = 0; t < ntiles; t++) {
        char rel[4096], name[128];
        map_name(p, layer_of[t], head_of[t], name, sizeof name);
        snprintf(rel, sizeof rel, "%s/%s.png", w->stem, name);
        float lo, hi;
        attn_grid_range(grids + (size_t)t * L, L, &lo, &hi);
        if (add_written(w, rel, lo, hi, range[t][0], range[t][1], attn_uniform_level(roll, layer_of[t], T))) {
            snprintf(err, errlen, "out of memory");
            nmaps = -1;
            goto done;
        }
        nmaps++;
    }

    // Files are added in the same order by every run (maps, montage, raw), so that between two runs
    // on one image the first name they share settles which run's files the image keeps.
    char path[4096], tmp[STAGED_LEN];
    snprintf(path, sizeof path, "%s/%s.attn.png", job->out_dir, w->stem);
    char layers_s[32], mask_s[48];
    snprintf(layers_s, sizeof layers_s, "%d-%d", p->layer_first, p->layer_last);
    char seed_s[32];
    config_float_text(job->mask_ratio, mask_s, sizeof mask_s);
    snprintf(seed_s, sizeof seed_s, "%ld", job->seed);
    const char *text[] = {"Software", "vitmae attention", "mode", mode_name(p->mode), "layers", layers_s,
                          "normalize", NORMALIZE_NAMES[p->normalize], "mask_ratio", mask_s, "seed", seed_s,
                          job->ema ? "weights" : NULL, "ema", NULL};   // the chunk with --ema only
    file_tmp_name_host(path, tmp, sizeof tmp);
    char why[256];
    if (output_png_to(tmp, cv.px, cv.w, cv.h, 3, text, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);   // the montage, and why (as write_map names a map)
        nmaps = -1;
        goto done;
    }
    if (file_group_add(&files, tmp, path)) { snprintf(err, errlen, "out of memory"); nmaps = -1; goto done; }


    if (job->raw) {
        // Every layer, as the blocks made them: [depth, heads, T, T].
        int64_t shape[4] = {depth, H, T, T};
        snprintf(path, sizeof path, "%s/%s.attn.npy", job->out_dir, w->stem);
        file_tmp_name_host(path, tmp, sizeof tmp);
        int rc = npy_write_to(tmp, path, arr.raw, "<f4", 4, shape, err, errlen);
        if (rc || file_group_add(&files, tmp, path)) { if (!rc) snprintf(err, errlen, "out of memory"); nmaps = -1; goto done; }
        if (p->K < L) {
            // Not reconstruct's DIR/<stem>.mask.npy: each command's --force replaces and removes its own
            // files only, so the two in one --out never take each other's (docs/interface.md, attention).
            int64_t mshape[2] = {g, g};
            snprintf(path, sizeof path, "%s/%s.attn-mask.npy", job->out_dir, w->stem);
            file_tmp_name_host(path, tmp, sizeof tmp);
            if (npy_write_to(tmp, path, p->removed, "|u1", 2, mshape, err, errlen)) { nmaps = -1; goto done; }
            if (file_group_add(&files, tmp, path)) { snprintf(err, errlen, "out of memory"); nmaps = -1; goto done; }
        }
    }
    // With --force the image's files are this run's only: an earlier run's maps of another selection
    // in its folder, and its arrays where this run writes none, go as the group is published.
    static const char *const arrays[] = {".attn.npy", ".attn-mask.npy"};
    if (nmaps >= 0 && file_group_sweep(&files, dir, is_map_file)) { snprintf(err, errlen, "out of memory"); nmaps = -1; }
    for (int a = 0; a < 2 && nmaps >= 0; a++) {
        snprintf(path, sizeof path, "%s/%s%s", job->out_dir, w->stem, arrays[a]);
        if (file_group_sweep(&files, path, NULL)) { snprintf(err, errlen, "out of memory"); nmaps = -1; }
    }
    // Under --force the earlier run's page goes before the first image replaces its files: a run
    // stopped by a signal left it linking maps the stopped run had removed (its own page, written at
    // the end, takes the name; one that draws nothing leaves it, still true of the folder).
    if (nmaps >= 0 && job->replace && !*job->page_gone) {
        char page[4200];
        struct stat st;
        snprintf(page, sizeof page, "%s/index.html", job->out_dir);
        *job->page_gone = lstat(page, &st) == 0 && S_ISREG(st.st_mode) && unlink(page) == 0 ? 2 : 1;
    }
    if (nmaps >= 0) {
        // A stop signal from here on waits for the image's line (file_stop_resume in cmd_attention).
        int pub = file_group_publish_held(&files, job->replace, err, errlen);
        if (pub == FILE_UNSYNCED) *unsynced = 1;
        else if (pub) { *taken = pub == FILE_TAKEN; nmaps = -1; }
    }
    if (nmaps >= 0) {
        size_t n = strlen(w->stem) + 16;
        w->montage = malloc(n);
        if (w->montage) snprintf(w->montage, n, "%s.attn.png", w->stem);
    }
done:
    file_group_discard(&files);   // what was not published (nothing once it was)
    if (nmaps < 0 && made_dir) {   // only when empty: another command's maps stay
        if (parent >= 0) unlinkat(parent, w->stem, AT_REMOVEDIR);
        else rmdir(dir);
    }
    if (parent >= 0) close(parent);
    if (made_dir) file_tmp_forget(dir);
    canvas_free(&cv);
    free(big.px); free(small.px);
    free(arena); free(norm); free(layer_of); free(head_of); free(range); free(up); free(dir);
    return nmaps;
}

// ---------------------------------------------------------------------------------------------
// index.html

// Text of the page (names, the checkpoint's path), escaped; the page is UTF-8 (its <meta charset>), so
// bytes of a name that are not UTF-8 are written as U+FFFD, as in JSON (docs/interface.md, "Names that
// are not UTF-8"): as they were, the page was not UTF-8, and readers that decode it as such (Python's
// html.parser after .decode(), an XHTML tool) refused it. Links keep the bytes, percent-encoded.
static void html_text(FILE *f, const char *text) {
    char *clean = utf8_clean(text);
    for (const char *s = clean ? clean : text; *s; s++) {
        char esc[9];
        size_t used;
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            // Control characters (a browser shows them as nothing, or as a box; a newline as a space)
            // and the backslash as the command's stdout line writes them (cli_escape_at).
            if (cli_escape_at(s, esc, &used)) fputs(esc, f);
            else fwrite(s, 1, used, f);
            s += used - 1;
        }
    }
    free(clean);
}

// A relative URL: every byte outside A-Z a-z 0-9 - . _ ~ / percent-encoded.
static void html_url(FILE *f, const char *s) {
    for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
        if ((*u >= 'A' && *u <= 'Z') || (*u >= 'a' && *u <= 'z') || (*u >= '0' && *u <= '9') ||
            strchr("-._~/", *u))
            fputc(*u, f);
        else
            fprintf(f, "%%%02X", *u);
    }
}

// The page marks any picture that does not load (a moved or half-copied folder), and records the
// count in <body data-images="N loaded, M broken"> (what `make gallery-check` reads).
static const char INDEX_SCRIPT[] =
    "<script>\n"
    "window.addEventListener('load', function () {\n"
    "  var ok = 0, bad = 0;\n"
    "  Array.prototype.forEach.call(document.images, function (im) {\n"
    "    if (im.complete && im.naturalWidth > 0) { ok++; return; }\n"
    "    bad++;\n"
    "    var note = document.createElement('span');\n"
    "    note.className = 'broken';\n"
    "    note.textContent = 'missing picture: ' + im.getAttribute('src');\n"
    "    im.parentNode.insertBefore(note, im.nextSibling);\n"
    "  });\n"
    "  document.body.setAttribute('data-images', ok + ' loaded, ' + bad + ' broken');\n"
    "});\n"
    "</script>\n";

static void html_value(FILE *f, double v) {
    char b[32];
    viz_format_value(v, b, sizeof b);
    fputs(b, f);
}

// The colour scale of a map on the page: a bar of the colour map from vmin (left) to vmax (right),
// as a CSS gradient through 17 entries of its table, with uniform attention (u) marked where it
// lies inside, as on the montage's bars.
static void html_colorbar(FILE *f, int cmap, double vmin, double vmax, double u) {
    const uint8_t *t = colormap_table(cmap);
    if (!t) return;
    // A flat scale (vmin = vmax) is the lowest colour alone, its mark in the middle (viz_colorbar).
    int flat = vmax == vmin;
    fputs("<span class=\"bar\" style=\"background:linear-gradient(to right", f);
    for (int k = 0; k <= 16; k++) {
        int i = flat ? 0 : k * 255 / 16;
        fprintf(f, ",#%02x%02x%02x", t[3 * i], t[3 * i + 1], t[3 * i + 2]);
    }
    fputs(")\">", f);
    ColorBar cb = {cmap, vmin, vmax, u, NULL, 0, {0, 0, 0}};
    int beyond = viz_colorbar_mark_beyond(&cb);
    if (isfinite(u) && vmax >= vmin && !beyond)
        fprintf(f, "<span class=\"mark\" style=\"left:%.1f%%\"></span>", flat ? 50.0 : 100.0 * (u - vmin) / (vmax - vmin));
    fputs("</span>", f);
    // Beyond the scale, said in words (the montage's bars draw an arrow at that end).
    if (beyond) {
        fputs("uniform (", f);
        html_value(f, u);
        fputs(beyond > 0 ? ") lies above this scale: every value is below it" : ") lies below this scale: every value is above it", f);
    }
}

// DIR/index.html, published as io/files.h says (replace: --force), a stop signal held back from the
// publish on until the caller's file_stop_resume. 0, FILE_TAKEN, FILE_UNSYNCED (the page in place, its
// folder not synced) or -1, with err.
// The page is made in memory and written whole (file_write_to): a disk that fills names its cause,
// as the images' files do (a write failing inside stdio's buffer read "Input/output error"). It shows
// what this run wrote and nothing else: inputs[i] for i < tried drawn (w[i].montage) or failed
// (w[i].failed), those from tried on not reached (the run stopped), and among them, in the inputs'
// order, the inputs the scan could not read (scanned's lines, "PATH: why"); an earlier run's files under
// the names of the ones not drawn are not linked (docs/interface.md, attention).
static int write_index(const char *out_dir, const char *ckpt, const Job *job, const Written *w,
                       char *const *inputs, int n, int tried, const PageLines *scanned, int replace, FileFolders *later,
                       char *err, size_t errlen) {
    const Plan *p = job->plan;
    int ema = job->ema, L = mae_num_patches(job->cfg);
    char path[4096], tmp[STAGED_LEN];
    snprintf(path, sizeof path, "%s/index.html", out_dir);
    char *page = NULL;
    size_t page_len = 0;
    FILE *f = open_memstream(&page, &page_len);
    if (!f) { snprintf(err, errlen, "out of memory"); return -1; }
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>vitmae attention</title>\n"
          "<style>body{font-family:sans-serif;max-width:72em;margin:1em auto;padding:0 1em;line-height:1.4}"
          " img{max-width:100%;height:auto} .maps{display:flex;flex-wrap:wrap;gap:1em}"
          " figure{margin:0;width:16em} figure img{width:100%} figcaption{font-size:90%}"
          " .bar{display:block;position:relative;height:0.8em;margin:0.2em 0}"
          " .mark{position:absolute;top:-0.15em;width:1px;height:1.1em;background:#fff;"
          "border:solid #000;border-width:0 1px}"
          " .broken{color:#b00;font-weight:bold}</style>\n", f);
    fputs(INDEX_SCRIPT, f);
    fputs("</head><body>\n<h1>vitmae attention</h1>\n<p>Checkpoint ", f);
    html_text(f, ckpt);
    // --ema: the page says whose weights, as the run's last line and each map's tEXt chunk do.
    if (ema) fputs(" (EMA weights: the moving average of finetune --model-ema)", f);
    fprintf(f, ", mode %s", mode_name(p->mode));
    if (p->mode == MODE_CLS) fputs(": where the CLS token (the image summary) looks", f);
    else if (p->mode == MODE_PATCH) fprintf(f, ": where patch (%d,%d) (outlined in red) looks", p->qx, p->qy);
    else if (p->has_query) fprintf(f, ": attention rollout of patch (%d,%d) (outlined in red: its row of the rollout, "
                                   "attention through all layers up to the one shown)", p->qx, p->qy);
    else fputs(": attention rollout of the CLS token (its row of the rollout, attention through all layers up to the "
               "one shown)", f);
    // A masked run's maps are mostly grey: the page says why, as each map's tEXt (mask_ratio, seed) does,
    // and that the mask is the same for every image (it said "each image's own", reconstruct's rule).
    int masked_run = p->K < L;
    if (masked_run) {
        char ratio[48];
        config_float_text(job->mask_ratio, ratio, sizeof ratio);
        fprintf(f, "; the encoder saw %d of the %d patches (--mask-ratio %s, --seed %ld: one random mask "
                "for every image), the removed ones grey in the maps", p->K, L, ratio, job->seed);
    }
    // The colour map's low end is not always the darker one (turbo ends in dark red): the page names
    // the map and draws its bar under every map.
    fprintf(f, ".</p>\n<p>Each picture is the photograph with the attention over it, coloured with the %s colour "
            "map: from the left end of the bar under the picture (least attention) to its right end (most). ",
            colormap_name(p->cmap));
    if (p->normalize == NORM_LAYER)
        fputs("Colours run from 0 to the largest value among the layer's maps drawn, one scale per layer, so "
              "tiles of a layer compare directly (a run that draws other heads scales them otherwise). ", f);
    else if (p->normalize == NORM_MAP)
        fputs("Each map is stretched to its own min..max (--normalize map): small differences look large. ", f);
    else fputs("Colours are the attention weights on 0..1 (--normalize none). ", f);
    if (p->mode == MODE_ROLLOUT)
        fputs("Uniform attention in every layer (each weight 1/(number of tokens)) would leave the rollout at "
              "(1 - 2^-(l+1))/(number of tokens) on a patch after layer l (half of each layer stays on the token "
              "itself), marked in white on every colour bar (or said under it where it lies beyond the bar's "
              "scale). ", f);
    else
        fputs("Uniform attention would be 1/(number of tokens), marked in white on every colour bar (or said under "
              "it where it lies beyond the bar's scale). ", f);
    fputs("Where the photo is not square, the model saw only the outlined centre square; the rest is dimmed.</p>\n", f);
    for (int i = 0; i < n; i++) {
        if (!w[i].montage) continue;
        fputs("<h2>", f); html_text(f, w[i].stem); fputs("</h2>\n<p>", f); html_text(f, w[i].source);
        fputs("</p>\n<p><a href=\"", f); html_url(f, w[i].montage); fputs("\"><img src=\"", f);
        html_url(f, w[i].montage); fputs("\" alt=\"montage of ", f); html_text(f, w[i].stem); fputs("\"></a></p>\n", f);
        fputs("<div class=\"maps\">\n", f);
        for (int k = 0; k < w[i].nmaps; k++) {
            const char *slash = strrchr(w[i].maps[k], '/');
            fputs("<figure><a href=\"", f); html_url(f, w[i].maps[k]); fputs("\"><img loading=\"lazy\" src=\"", f);
            html_url(f, w[i].maps[k]); fputs("\" alt=\"", f); html_text(f, slash ? slash + 1 : w[i].maps[k]);
            fputs("\"></a><figcaption>", f); html_text(f, slash ? slash + 1 : w[i].maps[k]);
            fputs("<br>values ", f); html_value(f, w[i].ranges[k][0]); fputs(" to ", f); html_value(f, w[i].ranges[k][1]);
            fputs("; colours ", f); html_value(f, w[i].ranges[k][2]); fputs(" to ", f); html_value(f, w[i].ranges[k][3]);
            html_colorbar(f, p->cmap, w[i].ranges[k][2], w[i].ranges[k][3], w[i].ranges[k][4]);
            fputs("</figcaption></figure>\n", f);
        }
        fputs("</div>\n", f);
    }
    int missed = scanned->held.n;
    for (int i = 0; i < n; i++) missed += !w[i].montage;
    if (missed) {
        fprintf(f, "<h2 id=\"not-drawn\">Not drawn by this run (%d)</h2>\n<p>This run wrote none of these "
                "inputs' files; files of an earlier run under their names, if any, are as that run left them "
                "and are not shown here.</p>\n<ul class=\"failed\">\n", missed);
        int s = 0;   // the next of scanned's lines
        for (int i = 0; i < n; i++) {
            for (; s < scanned->placed && scanned->before[s] <= i; s++) {   // those met before image i
                fputs("<li>", f); html_text(f, scanned->held.lines[s]); fputs("</li>\n", f);
            }
            if (w[i].montage) continue;
            fputs("<li>", f); html_text(f, inputs[i]); fputs(": ", f);
            html_text(f, w[i].failed ? w[i].failed : i >= tried ? "not reached: the run stopped before it" : "failed");
            fputs("</li>\n", f);
        }
        for (; s < scanned->held.n; s++) { fputs("<li>", f); html_text(f, scanned->held.lines[s]); fputs("</li>\n", f); }
        fputs("</ul>\n", f);
    }
    fputs("</body></html>\n", f);
    int bad = ferror(f);
    if (fclose(f) || bad) { free(page); snprintf(err, errlen, "out of memory"); return -1; }   // in memory: only that
    file_tmp_name_host(path, tmp, sizeof tmp);
    int rc = file_write_to(tmp, path, page, page_len, err, errlen);   // err: "PATH: why"
    free(page);
    if (rc) return -1;
    FileGroup files = {.later = later};
    if (file_group_add(&files, tmp, path)) { file_group_discard(&files); snprintf(err, errlen, "out of memory"); return -1; }
    return file_group_publish_held(&files, replace, err, errlen);   // a stop waits for the run's line (cmd_attention)
}

// ---------------------------------------------------------------------------------------------
// The command

static const char *SYNOPSIS =
    "--ckpt FILE|RUN [--out DIR] [--mode cls|patch|rollout] [--layer N|last|all] [--head N|mean|max|all]\n"
    "       [--query X,Y] [--normalize layer|map|none] [--colormap NAME] [--alpha A]\n"
    "       [--upsample bilinear|nearest] [--display N] [--scale K] [--raw] [--mask-ratio R --seed S] [--ema] [--force]\n"
    "       INPUT...\n"
    "Attention maps of the encoder drawn over each photo (files, or folders scanned recursively):\n"
    "DIR/<stem>.attn.png (montage), DIR/<stem>/<map>.png (one overlay per map), DIR/index.html (an earlier\n"
    "run's files in DIR are replaced only with --force);\n"
    "--raw adds DIR/<stem>.attn.npy [depth, heads, 1+L, 1+L] and DIR/<stem>/<map>.npy [gh, gw].\n"
    "The map covers the part of the photo the model saw (its centre crop, outlined when the photo is not\n"
    "square). Photos larger than --display are shrunk to it; smaller ones are enlarged by whole pixels.";

// What each image writes beside DIR/index.html: DIR/<stem><kind> (the folder of maps for "").
static const char *const kinds[] = {".attn.png", "", ".attn.npy", ".attn-mask.npy", NULL};
static const char *const index_name[] = {"index.html", NULL};

// The names a run writes (cmd/output.h, OutputNames): DIR/index.html, then each image's files,
// named when asked (a folder of 20,000 images holds no list of them).
typedef struct {
    const char *out_dir;
    const Written *w;
    int per;   // kinds an image writes: the montage and its folder of maps, with --raw the arrays
} RunNames;

static int run_name(void *ctx, long i, char *path, size_t size) {
    const RunNames *r = ctx;
    if (i == 0) {
        snprintf(path, size, "%s/%s", r->out_dir, index_name[0]);
        return OUTPUT_FILE;
    }
    const char *kind = kinds[(i - 1) % r->per];
    snprintf(path, size, "%s/%s%s", r->out_dir, r->w[(i - 1) / r->per].stem, kind);
    return *kind ? OUTPUT_FILE : OUTPUT_FOLDER;
}

static RunNames run_names(const char *out_dir, const Written *w, int raw, int masked) {
    return (RunNames){out_dir, w, raw ? (masked ? 4 : 3) : 2};
}

// Files of an earlier run are replaced only with --force (docs/interface.md, "Earlier results"): 1 after
// naming, with or without --force, the first that is a folder where a file goes or not a folder where
// the folder of maps goes (nothing can be published over it; "use --force" would send the user to that
// refusal), or else the first of DIR/index.html and each image's files that exists; else 0.
// Whether name is one of the maps this run writes in an image's folder (map_name's .png, with --raw
// its .npy): another selection's name is no map of this run's (--force leaves a folder there).
static int run_writes_map(const Plan *p, int raw, const char *name) {
    char base[128], file[160];
    for (int l = p->layer_first; l <= p->layer_last; l++)
        for (int s = 0; s < p->nspec; s++) {
            map_name(p, l, p->heads[s], base, sizeof base);
            snprintf(file, sizeof file, "%s.png", base);
            if (!strcmp(name, file)) return 1;
            snprintf(file, sizeof file, "%s.npy", base);
            if (raw && !strcmp(name, file)) return 1;
        }
    return 0;
}

// The temporary files that a killed run left of the names this run writes (cmd/output.h,
// output_sweep_leftovers): DIR/index.html's and each image's in DIR, and in each image's folder of
// maps those of the maps this run writes (run_writes_map's names).
static void leftovers_sweep(const char *out_dir, const Written *w, int n, int raw, const Plan *p,
                            const OutputNames *names) {
    output_sweep_leftovers(names);
    int nmaps = (p->layer_last - p->layer_first + 1) * p->nspec * (raw ? 2 : 1), k = 0;
    char (*maps)[160] = malloc((size_t)nmaps * sizeof *maps);
    const char **leaves = malloc((size_t)nmaps * sizeof *leaves);
    for (int l = p->layer_first; maps && leaves && l <= p->layer_last; l++)
        for (int s = 0; s < p->nspec; s++) {
            char base[128];
            map_name(p, l, p->heads[s], base, sizeof base);
            for (int e = 0; e < (raw ? 2 : 1); e++, k++) {
                snprintf(maps[k], sizeof maps[k], "%s.%s", base, e ? "npy" : "png");
                leaves[k] = maps[k];
            }
        }
    for (int i = 0; maps && leaves && i < n; i++) {
        char dir[4096];
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%s", out_dir, w[i].stem);
        // Only a folder of maps itself: a link at its name (which --force replaces with a folder) is
        // never swept through, nor is a name with nothing there yet listed.
        if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode)) file_sweep_dead_tmps(dir, leaves, nmaps);
    }
    free(maps);
    free(leaves);
}

static int refuse_earlier(const char *out_dir, const Written *w, int n, int raw, int masked, int force, const Plan *p) {
    // A folder at the name of a map this run writes, inside an image's folder of maps (a folder, not a
    // link to one, which --force replaces): no map can be published over it, nor --force remove it. It
    // was found after the work, and "use --force" (for the folder of maps) sent the user to that failure.
    for (int i = 0; i < n; i++) {
        char dir[4096], path[8192], first[256] = "";   // the first such name in byte order: the same line every run
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%s", out_dir, w[i].stem);
        DIR *d = lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? opendir(dir) : NULL;
        struct dirent *e;
        while (d && (e = readdir(d))) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (is_map_file(e->d_name) && run_writes_map(p, raw, e->d_name) &&
                lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && (!first[0] || strcmp(e->d_name, first) < 0))
                snprintf(first, sizeof first, "%s", e->d_name);
        }
        if (d) closedir(d);
        if (first[0]) {
            snprintf(path, sizeof path, "%s/%s", dir, first);
            cli_error(path, "is a folder at a map's name: --force replaces files, not folders (move it away, or "
                      "choose another --out)");
            return 1;
        }
    }
    RunNames r = run_names(out_dir, w, raw, masked);
    OutputNames names = {.n = 1 + (long)n * r.per, .name = run_name, .ctx = &r};
    if (output_refuse_earlier(&names, force)) return 1;
    leftovers_sweep(out_dir, w, n, raw, p, &names);
    return 0;
}

// An input is never replaced, also with --force (docs/interface.md, "Paths that meet"): 1 after naming
// the first output that is an input file, or a folder of maps that holds one; else 0.
static int refuse_inputs(const char *out_dir, const Written *w, char *const *paths, int n, const char *ckpt,
                         int raw, int masked) {
    char path[8192];
    OutputInputs ids = {0};
    // Every kind, the arrays too: a run without --raw removes an earlier run's under --force (an input or
    // the checkpoint there was deleted).
    RunNames r = run_names(out_dir, w, 1, 1);
    int writes = run_names(out_dir, w, raw, masked).per;   // the kinds this run writes, the first of kinds[]
    int j = -1, folder = 0, is_ckpt = 0;
    long i;
    for (i = 0; i < 1 + (long)n * r.per; i++) {
        folder = run_name(&r, i, path, sizeof path) == OUTPUT_FOLDER;
        // A link at a folder of maps' name is never written through: refused as an earlier output, or
        // replaced by a folder under --force (docs/interface.md, section 1). What its target holds is
        // safe: "holds the checkpoint --ckpt reads" refused a run that would not touch it.
        struct stat ls;
        if (folder && lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode)) continue;
        j = folder ? output_input_in(&ids, paths, n, path) : output_input_named(&ids, paths, n, path);
        // ... nor the checkpoint it reads (--force replaced it: the checkpoint destroyed)
        is_ckpt = j < 0 && (folder ? output_path_within(ckpt, path) : output_replaces(path, ckpt));
        if (j >= 0 || is_ckpt) break;
    }
    output_inputs_free(&ids);
    if (j < 0 && !is_ckpt) return 0;
    const char *how = i == 0 || (i - 1) % r.per < writes ? "this run's output would replace it"
                                                         : "a run with --force would remove it as an earlier run's array";
    const char *also = i == 0 || (i - 1) % r.per < writes ? "also with --force; " : "";
    if (is_ckpt && folder)
        cli_error("attention --out", "%s holds the checkpoint --ckpt reads: this run writes its maps there (also "
                  "with --force; another --out)", path);
    else if (is_ckpt)
        cli_error("attention --out", "%s is the checkpoint --ckpt reads: %s (%sanother --out)", path, how, also);
    else if (folder)
        cli_error("attention --out", "%s holds the input %s: this run writes its maps there (another --out)", path, paths[j]);
    else
        cli_error("attention --out", "%s is the input %s: %s (another --out)", path, paths[j], how);
    return 1;
}

int cmd_attention(int argc, char **argv) {
    const char *ckpt_path = NULL, *out_dir = "attention", *layer_s = "last", *head_s = "all", *query_s = NULL;
    char ckpt_file[ST_RUN_LATEST_MAX];   // --ckpt RUN's checkpoint.safetensors
    const char *mode_s = "cls", *cmap_s = "viridis", *upsample_s = "bilinear", *normalize_s = "layer";
    float alpha = 0.6f, mask_ratio = 0.0f;
    int scale = 0, display = 512, raw = 0, threads = 0, force = 0, ema = 0;
    long seed = 0, max_pixels = VITMAE_DEFAULT_MAX_PIXELS;
    Flag flags[] = {
        {"--ckpt", FLAG_PATH, &ckpt_path, 0, 0, NULL, "checkpoint (.safetensors, or a run folder: its checkpoint.safetensors; encoder-only is fine) (required)", "FILE|RUN", 0},
        {"--out", FLAG_PATH, &out_dir, 0, 0, NULL, "output folder (default attention)", "DIR", 0},
        {"--mode", FLAG_CHOICE, &mode_s, 0, 0, "cls|patch|rollout",
         "cls: CLS token's row; patch: --query's row; rollout: 0.5A+0.5I product (default cls)", NULL, 0},
        {"--layer", FLAG_STR, &layer_s, 0, 0, NULL, "0-based encoder layer, last or all (default last)", "N|last|all", 0},
        {"--head", FLAG_STR, &head_s, 0, 0, NULL, "a head, mean/max over heads, or all + mean (default all)", "N|mean|max|all", 0},
        {"--query", FLAG_STR, &query_s, 0, 0, NULL, "query patch in grid coordinates (patch; optional for rollout)", "X,Y", 0},
        {"--colormap", FLAG_CHOICE, &cmap_s, 0, 0, VIZ_COLORMAP_NAMES, "colormap (default viridis)", NULL, 0},
        {"--alpha", FLAG_FLOAT, &alpha, 0, 1, NULL, "opacity of the map over the image (default 0.6)", "A", 0},
        {"--upsample", FLAG_CHOICE, &upsample_s, 0, 0, "bilinear|nearest", "patch grid to pixels (default bilinear)", NULL, 0},
        {"--normalize", FLAG_CHOICE, &normalize_s, 0, 0, "layer|map|none",
         "colour scale: 0..max of each layer, each map's min..max, or 0..1 (default layer)", NULL, 0},
        {"--display", FLAG_INT, &display, CLI_DISPLAY_MIN, CLI_DISPLAY_MAX, NULL,
         "longest side of an overlay in pixels (default 512; montage tiles up to 256)", "N", 0},
        {"--scale", FLAG_INT, &scale, 1, 64, NULL, "draw photos K times their own size instead (nearest)", "K", 0},
        {"--ema", FLAG_BOOL, &ema, 0, 0, NULL, CLI_EMA_ENCODER_HELP, NULL, 0},
        {"--raw", FLAG_BOOL, &raw, 0, 0, NULL, "also write the attention (.attn.npy) and each map (.npy)", NULL, 0},
        {"--force", FLAG_BOOL, &force, 0, 0, NULL, "replace files of an earlier run in DIR", NULL, 0},
        {"--mask-ratio", FLAG_FLOAT, &mask_ratio, 0, MASK_RATIO_FLAG_MAX, NULL, "remove this fraction of patches as MAE does, leaving at least one visible (default 0: none)", "R", 0},
        {"--seed", FLAG_LONG, &seed, 0, RNG_SEED_MAX, NULL, "mask seed: one mask for every image (default 0)", "S", 0},
        {"--threads", FLAG_INT, &threads, 1, CLI_THREADS_MAX, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--max-pixels", FLAG_LONG, &max_pixels, 1, CLI_MAX_PIXELS_MAX, NULL,
         "refuse a larger INPUT image, skip one in an INPUT folder (default 67108864 = 2^26)", "N", 0},
    };
    int nflags = (int)(sizeof flags / sizeof flags[0]);
    char **inputs = malloc((size_t)(argc > 1 ? argc : 1) * sizeof *inputs);
    if (!inputs) { cli_error("attention", "out of memory"); return 1; }
    int ninputs = 0;
    int rc = cli_parse("attention", SYNOPSIS, flags, nflags, argc, argv, inputs, argc, &ninputs);
    if (rc != CLI_OK) { free(inputs); return rc == CLI_HELP ? 0 : 2; }
    int status = 2;
    OutputMade made = {.n = 0};   // the --out folders this run made (removed again when it fails: cmd/output.h)
    Checkpoint ck = {0};
    Mae *m = NULL;
    char **paths = NULL;
    int npaths = 0;
    Written *written = NULL;
    StemSet stems = {.first_suffix = 1, .suffixes = kinds, .reserved = index_name};   // x, x-1, x-2 as reconstruct
    CliUnread unread = {0};   // the inputs that cannot be read, in input order: 20 named, then a count (cmd/cli.h)
    PageLines scanned = {0};   // every input the scan could not read ("PATH: why"), for index.html
    int *keep = NULL;
    uint8_t *removed = NULL;
    float *view = NULL;

    // Syntax first (before the checkpoint is read), ranges once depth/heads/grid are known.
    Plan plan;
    char word[UTF8_CLIP_SIZE];   // a refused value, echoed as cmd/cli.h says (cli_error)
    memset(&plan, 0, sizeof plan);
    static const char *const layer_words[] = {"last", "all"}, *const head_words[] = {"mean", "max", "all"};
    int layer_num, layer_v = 0, layer_word = 0, head_num, head_v = 0, head_word = 0, qx = 0, qy = 0;
    plan.mode = !strcmp(mode_s, "cls") ? MODE_CLS : !strcmp(mode_s, "patch") ? MODE_PATCH : MODE_ROLLOUT;
    if (!ckpt_path) { cli_error("attention", "--ckpt FILE|RUN is required (see vitmae attention --help)"); goto out; }
    // A run folder stands for its checkpoint.safetensors (docs/interface.md, section 9).
    ckpt_path = st_checkpoint_arg(ckpt_path, ckpt_file, sizeof ckpt_file);
    if (ninputs == 0) { cli_error("attention", "no INPUT: give image files or folders (see vitmae attention --help)"); goto out; }
    if (parse_selection(layer_s, layer_words, 2, &layer_num, &layer_v, &layer_word)) { cli_error("attention --layer", "'%s' is not a layer (N, last or all)", utf8_clip(word, layer_s)); goto out; }
    if (parse_selection(head_s, head_words, 3, &head_num, &head_v, &head_word)) { cli_error("attention --head", "'%s' is not a head (N, mean, max or all)", utf8_clip(word, head_s)); goto out; }
    if (query_s && parse_query(query_s, &qx, &qy)) { cli_error("attention --query", "'%s' is not X,Y (patch grid coordinates)", utf8_clip(word, query_s)); goto out; }
    if (plan.mode == MODE_PATCH && !query_s) { cli_error("attention --query", "--mode patch needs --query X,Y"); goto out; }
    if (plan.mode == MODE_CLS && query_s) { cli_error("attention --query", "not used by --mode cls (use --mode patch or rollout)"); goto out; }
    if (mask_ratio == 0 && cli_flag(flags, nflags, "--seed")->seen) {   // it would be ignored
        cli_error("attention --seed", "draws the mask of --mask-ratio R; without a ratio above 0 nothing is masked");
        goto out;
    }
    if (output_refuse_inside_inputs("attention", out_dir, cli_flag(flags, nflags, "--out")->seen, inputs, ninputs)) goto out;
    if (scale && cli_flag(flags, nflags, "--display")->seen) {   // one of the two sizes is drawn, as in reconstruct
        cli_error("attention --scale", "give --scale K or --display N, not both");
        goto out;
    }

    char err[CLI_ERR_MAX];
    if (mask_ratio_check(mask_ratio, 0, err, sizeof err)) { cli_error("attention --mask-ratio", "%s", err); goto out; }
    if (cli_one_process_refused("attention")) goto out;
    if (cli_start_threads("attention", threads)) { status = 1; goto out; }
    if (clf_ckpt_load_encoder(ckpt_path, ema, &ck, err, sizeof err)) {   // err names the file
        cli_error(NULL, "%s", err);
        status = 1;
        goto out;
    }
    const MaeConfig *cfg = &ck.cfg;
    int depth = cfg->depth, H = cfg->num_heads, S = cfg->img_size, g = S / cfg->patch_size, L = g * g;
    if (layer_num && (layer_v < 0 || layer_v >= depth)) {
        cli_error("attention --layer", "%d is out of range [0, %d] (or last|all)", layer_v, depth - 1);
        goto out;
    }
    if (head_num && (head_v < 0 || head_v >= H)) {
        cli_error("attention --head", "%d is out of range [0, %d] (or mean|max|all)", head_v, H - 1);
        goto out;
    }
    if (query_s && (qx < 0 || qx >= g || qy < 0 || qy >= g)) {
        cli_error("attention --query", "(%d,%d) is outside the %dx%d patch grid (X and Y in [0, %d])", qx, qy, g, g, g - 1);
        goto out;
    }
    // A tile per head and the mean: any head count train makes (a 72-head model was refused whole, even
    // for --head mean, by a fixed table of 64).
    plan.heads = malloc(((size_t)H + 1) * sizeof *plan.heads);
    if (!plan.heads) { cli_error("attention", "out of memory"); status = 1; goto out; }
    plan.layer_first = layer_num ? layer_v : layer_word == 0 ? depth - 1 : 0;
    plan.layer_last = layer_num ? layer_v : depth - 1;
    if (head_num) plan.heads[plan.nspec++] = head_v;
    else if (head_word < 2) plan.heads[plan.nspec++] = head_word == 0 ? ATTN_HEAD_MEAN : ATTN_HEAD_MAX;
    else if (plan.mode == MODE_ROLLOUT) plan.heads[plan.nspec++] = ATTN_HEAD_MEAN;   // the standard rollout
    else {
        for (int h = 0; h < H; h++) plan.heads[plan.nspec++] = h;
        plan.heads[plan.nspec++] = ATTN_HEAD_MEAN;
    }
    plan.has_query = query_s != NULL;
    plan.qx = qx; plan.qy = qy;
    plan.cmap = colormap_from_name(cmap_s);
    plan.bilinear = !strcmp(upsample_s, "bilinear");
    plan.scale = scale;
    plan.display = display;
    plan.tile = display < 256 ? display : 256;
    plan.normalize = !strcmp(normalize_s, "map") ? NORM_MAP : !strcmp(normalize_s, "none") ? NORM_NONE : NORM_LAYER;
    plan.alpha = alpha;

    // The mask (one for every image): MAE's argsort of uniform noise, visible patches kept in
    // ascending grid order so that token 1 + j is the j-th visible patch in raster order.
    if (mask_ratio_check(mask_ratio, L, err, sizeof err)) { cli_error("attention --mask-ratio", "%s", err); goto out; }
    int K = mask_ratio > 0 ? mae_len_keep(cfg, mask_ratio) : L;
    keep = malloc((size_t)L * sizeof *keep);
    removed = malloc((size_t)L);
    view = malloc((size_t)S * S * cfg->in_chans * sizeof *view);
    if (!keep || !removed || !view) { cli_error("attention", "out of memory"); status = 1; goto out; }
    if (K < L) {
        float *noise = malloc((size_t)L * sizeof *noise);
        int *scratch = malloc(2 * (size_t)L * sizeof *scratch);
        if (!noise || !scratch) { free(noise); free(scratch); cli_error("attention", "out of memory"); status = 1; goto out; }
        Rng rng;
        rng_seed(&rng, (uint64_t)seed);
        mask_from_rng(&rng, L, K, noise, keep, scratch);
        free(noise);
        free(scratch);
        recon_removed_from_keep(keep, K, L, removed);
        recon_keep_from_removed(removed, L, keep);
    } else {
        for (int l = 0; l < L; l++) keep[l] = l;
        memset(removed, 0, (size_t)L);
    }
    if (plan.has_query && removed[qy * g + qx]) {
        cli_error("attention --query", "patch (%d,%d) is masked out by --mask-ratio %g --seed %ld", qx, qy,
                  (double)mask_ratio, seed);
        goto out;
    }
    plan.keep = keep; plan.K = K; plan.removed = removed; plan.L = L;

    status = 1;
    // Memory: refuse before allocating what cannot fit (one image at a time). The model is the
    // encoder alone (no decoder), run a block at a time, and takes the checkpoint's weights as its own
    // (no copy); the maps kept are the ones drawn (attend_bytes).
    if (mae_memory_check_bytes(attend_bytes(&plan, cfg, raw), 1, S, err, sizeof err)) {
        cli_error("attention", "%s", err);
        goto out;
    }
    m = mae_create_encoder_with(cfg, 1, ck.params, err, sizeof err);
    if (!m) { cli_error("attention", "%s", err); goto out; }
    ck.params = NULL;   // the model's now

    int failures = 0;
    paths = collect_inputs(inputs, ninputs, max_pixels, &npaths, &failures, &unread, &scanned);
    file_test_gate("VITMAE_FAULT_HOLD_AFTER_SCAN");   // tests: folders changed between the scan and the reads
    written = calloc((size_t)(npaths ? npaths : 1), sizeof *written);
    if (!written) { cli_error("attention", "out of memory"); goto out; }
    // Every input's stem in input order, as reconstruct names them (docs/interface.md, "Stems").
    for (int i = 0; i < npaths; i++) {
        char *stem = infer_stem(paths[i]);
        written[i].stem = stem ? stem_set_claim(&stems, stem) : NULL;
        free(stem);
        if (!written[i].stem) { cli_error("attention", "out of memory"); goto out; }
    }
    if (refuse_inputs(out_dir, written, paths, npaths, ckpt_path, raw, K < L) ||
        refuse_earlier(out_dir, written, npaths, raw, K < L, force, &plan)) { status = 2; goto out; }
    // DIR is made once the check has passed: a refused run leaves nothing.
    // Ctrl-C from here leaves no temporary file, nor an image's unfinished folder of maps, nor an empty
    // --out folder this run made (io/files.h).
    file_cleanup_on_stop_signals();
    if (output_make_out("attention --out", out_dir, &made)) goto out;
    // A folder that does not take files (read-only) is one line now, not one per image.
    if (output_check_writable(out_dir, err, sizeof err)) { cli_error("attention --out", "%s", err); goto out; }
    // The folder as the run found it: one moved away meanwhile stops the run with one line (output_out_gone).
    struct stat home_st, *home = stat(out_dir, &home_st) == 0 ? &home_st : NULL;
    cli_unread_reach(&unread, CLI_AT_ITEM(0));   // the run goes ahead: the inputs that cannot be read before the first image
    FileFolders later = {0};
    int page_gone = 0;
    Job job = {cfg, &plan, out_dir, raw, K < L ? mask_ratio : 0.0f, seed, ema, force, &later, &page_gone};
    int nimages = 0, nmaps = 0, taken = 0, unsynced_maps = 0, full = 0;   // full: OUTPUT_STOP_*, the folder or the memory ran out (cmd/output.h)
    char gone[4096] = {0};   // input folders that went away during the run (cmd/output.h)
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int tried = 0;   // the inputs the loop reached
    for (int i = 0; i < npaths && !taken && !full; i++) {
        tried = i + 1;
        cli_unread_reach(&unread, CLI_AT_ITEM(i));   // the lines before this image's
        Image photo;
        if (image_load(paths[i], max_pixels, &photo, err, sizeof err) ||
            image_view(&photo, S, VIEW_WHOLE, cfg->in_chans, view, err, sizeof err)) {
            if (photo.px) image_free(&photo);
            if (!output_input_gone(paths[i], gone, sizeof gone)) cli_unread_item(&unread, i, paths[i], err);
            failures++;
            written[i].failed = strdup(err);
            full = image_why_is_resource(err) ? OUTPUT_STOP_MEMORY : 0;
            continue;
        }
        Written *w = &written[i];
        // DIR/<stem>/<map>.png and the temporary names beside it must fit the system's 4096-byte
        // paths: a name cut short would write one map over another.
        if (output_names_fit(out_dir, w->stem, "/...", err, sizeof err)) {
            cli_error(paths[i], "%s", err);
            failures++;
            w->failed = strdup("its output names would pass the 4096-byte path limit");
            image_free(&photo);
            continue;
        }
        w->source = strdup(paths[i]);
        if (!w->source) { cli_error("attention", "out of memory"); failures++; image_free(&photo); continue; }
        int unsynced;
        int n = attend_one(&job, m, &photo, view, w, &taken, &unsynced, err, sizeof err);
        image_free(&photo);
        // Nothing of a failed image stays, so that a retry needs no --force. Files another command
        // wrote meanwhile stay its own, and this run stops: that command is writing in DIR.
        int stop = 0;
        if (n < 0 && taken) {
            cli_error(NULL, "%s", err);
            failures++;
            stop = 1;
        } else if (n < 0 && output_out_gone(out_dir, home)) {
            // The --out folder moved or deleted: its one line at the end (output_report_stop), not this
            // image's "DIR/<stem>: No such file or directory" and every image's after it.
            failures++;
            full = OUTPUT_STOP_GONE;
            stop = 1;
        } else if (n < 0) {
            cli_error(paths[i], "%s", err);
            failures++;
            full = output_stop_kind(err);
            w->failed = strdup(err);
        } else {
            cli_out("%s: %d map%s -> %s/%s", paths[i], n, n == 1 ? "" : "s", out_dir, w->montage ? w->montage : "");
            cli_flush_stdout();   // the line of an image out, even when a signal ends the run next (as reconstruct's)
            if (unsynced) { cli_error("attention", "%s", err); unsynced_maps = 1; }   // "PATH ...: written, but ...": drawn
            nimages++;
            nmaps += n;
        }
        file_stop_resume();   // a stop signal since the image's publish ends the run here, its line out
        if (stop) break;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cli_unread_end(&unread, NULL);
    int failed_inputs = failures;   // the inputs alone: the page's and the folders' failures come below
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    // No page for a run that drew nothing: it would only stand in the way of the retry (--force); nor
    // for one that met another command's files (its page is that command's). A run that stopped (a
    // full disk) writes its page too: under --force an earlier page would link maps this run removed.
    output_report_stop("attention", full, out_dir, nimages, npaths);
    int index_rc = nimages > 0 && !taken && full != OUTPUT_STOP_GONE   // no page for a folder gone
                       ? write_index(out_dir, ckpt_path, &job, written, paths, npaths, tried, &scanned, force, &later, err, sizeof err)
                       : -2;
    int index_ok = index_rc == 0 || index_rc == FILE_UNSYNCED;   // the page in place, even if its folder's sync failed
    if (index_rc == FILE_TAKEN) { cli_error(NULL, "%s", err); failures++; }
    else if (index_rc == FILE_UNSYNCED) { cli_error("attention", "%s", err); failures++; }
    else if (index_rc == -1) {
        // Under --force an earlier page stays only where it still describes the folder: it would link
        // maps this run removed (an image drawn again) and miss the ones it wrote.
        char page[4200];
        struct stat st;
        snprintf(page, sizeof page, "%s/index.html", out_dir);
        int drop = page_gone == 2 || (force && lstat(page, &st) == 0 && S_ISREG(st.st_mode) && unlink(page) == 0);
        cli_error("attention", "%s%s", err, drop ? " (the earlier index.html, which showed files this run replaced, is removed)" : "");
        failures++;
    }
    // The names of the maps, montages and page on disk before the run says it is done: each folder
    // once (DIR and each image's DIR/<stem>), not once an image.
    // (none to say of a folder gone: its files went with it)
    if (file_folders_sync(&later, err, sizeof err) && full != OUTPUT_STOP_GONE) { cli_error("attention", "%s", err); failures++; }
    // A run that drew nothing and failed says its failures alone, as reconstruct, embed and classify do
    // ("attention: 0 images, 0 maps in 0.00 s" read as a success above the error).
    if (nimages > 0 || !failures)
        cli_out("attention: %d image%s, %d map%s in %.2f s (%.2f images/s)%s%s%s%s", nimages, nimages == 1 ? "" : "s",
                nmaps, nmaps == 1 ? "" : "s", secs, secs > 0 ? nimages / secs : 0.0, ema ? CLI_EMA_WHAT : "",
                index_ok ? "; index " : "", index_ok ? out_dir : "", index_ok ? "/index.html" : "");
    cli_flush_stdout();
    file_stop_resume();   // a stop signal since the page's publish ends the run here, the line that names it out
    if (!full && failed_inputs > 1)   // as reconstruct ends (docs/interface.md, section 2)
        cli_error("attention", "%d inputs failed", failed_inputs);
    status = failures || unsynced_maps ? 1 : 0;
out:
    if (status) output_mkdir_undo(&made);   // only while empty: the images drawn keep it
    for (int i = 0; written && i < npaths; i++) {
        free(written[i].source); free(written[i].montage); free(written[i].failed);
        for (int k = 0; k < written[i].nmaps; k++) free(written[i].maps[k]);
        free(written[i].maps);
        free(written[i].ranges);
    }
    free(written);
    stem_set_free(&stems);
    cli_unread_free(&unread);   // a refused run's lines, never said
    cli_held_free(&scanned.held);
    free(scanned.before);
    for (int i = 0; i < npaths; i++) free(paths[i]);
    free(paths);
    free(keep); free(removed); free(view);
    free(plan.heads);
    mae_free(m);
    ckpt_free(&ck);
    free(inputs);
    return status;
}
