// `vitmae attention --ckpt FILE [flags] INPUT...`: the encoder's attention drawn over each image.
// For every image: the evaluation view runs through the encoder (every patch, or the visible ones
// with --mask-ratio), the chosen maps are computed by src/viz/attnmap.c, and the command draws
//   DIR/<stem>.attn.png          a montage: a row per layer shown, a tile per map, a colour bar
//   DIR/<stem>/<map>.png         one overlay per map (tEXt: mode, layer, head, min, max, ...)
//   DIR/<stem>.attn.npy          --raw: float32 [depth, heads, T, T], every layer's softmax attention
//   DIR/<stem>/<map>.npy         --raw: float32 [gh, gw], the map's raw values (NaN = masked patch)
//   DIR/index.html               links to everything written by this run
// Each tile is normalised to its own min..max over the patches, so the colour bar reads 0..1
// "relative attention"; the raw min and max of every map are in its PNG's text chunks.
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "viz/attnmap.h"
#include "io/checkpoint.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/output.h"
#include "data/dataset.h"
#include "viz/font.h"
#include "data/image.h"
#include "core/model.h"
#include "io/npy.h"
#include "infer/infer.h"
#include "infer/recon.h"
#include "core/rng.h"
#include "viz/viz.h"
#include "core/masking.h"

typedef enum { MODE_CLS, MODE_PATCH, MODE_ROLLOUT } Mode;

// What to compute and draw, resolved against the checkpoint.
typedef struct {
    Mode mode;
    int layer_first, layer_last;   // layers shown (inclusive)
    int heads[64 + 1];             // tile specs per layer: head index, ATTN_HEAD_MEAN or ATTN_HEAD_MAX
    int nspec;
    int has_query, qx, qy;         // query patch in grid coordinates
    int cmap, bilinear, scale;
    float alpha;
    const int *keep;               // [K] visible patches, ascending
    int K;
    const uint8_t *removed;        // [L] 1 = masked out
} Plan;

// One image's written files (relative to DIR), for index.html.
typedef struct {
    char *source, *montage;
    const char *stem;   // owned by the command's StemSet
    char **maps;
    int nmaps;
} Written;

// ---------------------------------------------------------------------------------------------
// Flag values

// A selection flag: a number (*is_number = 1, *n), or one of the words (*word = its index).
// Returns 0, or -1 when s is neither.
static int parse_selection(const char *s, const char *const *words, int nwords, int *is_number, int *n, int *word) {
    for (int i = 0; i < nwords; i++)
        if (!strcmp(s, words[i])) { *is_number = 0; *word = i; return 0; }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < INT_MIN || v > INT_MAX) return -1;
    *is_number = 1; *n = (int)v;
    return 0;
}

// "X,Y" (integers).
static int parse_query(const char *s, int *x, int *y) {
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (end == s || *end != ',' || errno || a < INT_MIN || a > INT_MAX) return -1;
    const char *t = end + 1;
    long b = strtol(t, &end, 10);
    if (end == t || *end || errno || b < INT_MIN || b > INT_MAX) return -1;
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

// Tile label in the montage: "L5 H0", "L5 mean", "L5 rollout mean".
static void tile_label(const Plan *p, int layer, int head, char *buf, size_t n) {
    char h[24];
    if (head >= 0) snprintf(h, sizeof h, "H%d", head);
    else head_name(head, h, sizeof h);
    snprintf(buf, n, "L%d %s%s", layer, p->mode == MODE_ROLLOUT ? "rollout " : "", h);
}

// ---------------------------------------------------------------------------------------------
// Files and names

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s/%s", a, b);
    return s;
}

// Input files: each INPUT is a file, or a folder scanned like `data` (recursively, sorted).
// Unusable inputs are reported and counted in *failures.
static char **collect_inputs(char **inputs, int ninputs, long max_pixels, int *npaths, int *failures) {
    char **paths = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < ninputs; i++) {
        struct stat st;
        if (stat(inputs[i], &st)) { cli_error(inputs[i], "%s", strerror(errno)); (*failures)++; continue; }
        const char **add = NULL;
        int nadd = 0;
        Dataset ds;
        int scanned = 0;
        if (S_ISDIR(st.st_mode)) {
            char err[512];
            DatasetOptions opt = {max_pixels, 0, 0};
            if (dataset_scan(inputs[i], &opt, &ds, err, sizeof err)) { cli_error(inputs[i], "%s", err); (*failures)++; continue; }
            scanned = 1;
            for (int k = 0; k < ds.nskipped; k++) { cli_error(ds.skipped[k].path, "%s", ds.skipped[k].reason); (*failures)++; }
            if (ds.n == 0) { cli_error(inputs[i], "no decodable image in this folder"); (*failures)++; }
            add = malloc((size_t)(ds.n ? ds.n : 1) * sizeof *add);
            for (int k = 0; add && k < ds.n; k++) add[nadd++] = ds.items[k].path;
        } else {
            add = malloc(sizeof *add);
            if (add) add[nadd++] = inputs[i];
        }
        if (n + nadd > cap) {
            cap = (n + nadd) * 2;
            char **np = realloc(paths, (size_t)cap * sizeof *paths);
            if (!np) { nadd = 0; (*failures)++; cli_error("attention", "out of memory"); }
            else paths = np;
        }
        for (int k = 0; add && k < nadd; k++) paths[n++] = strdup(add[k]);
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

// Draws one map over the image with its top-left at (x, y). grid [L] raw values (NaN = masked);
// cell [L] and up [S*S] are scratch. The grid is normalised to [0, 1] over its visible patches
// first, then upsampled, so the colours span exactly the patches' min..max.
static void draw_map(Canvas *cv, int x, int y, const float *view, const MaeConfig *cfg, const float *grid,
                     const Plan *p, float *cell, float *up) {
    int S = cfg->img_size, P = cfg->patch_size, g = S / P, L = g * g, K = p->scale, side = P * K;
    float lo, hi;
    attn_grid_range(grid, L, &lo, &hi);
    // A masked patch takes the minimum: it pulls no colour into its visible neighbours.
    for (int l = 0; l < L; l++) cell[l] = isfinite(grid[l]) ? grid[l] : lo;
    viz_normalize(cell, (size_t)L);
    viz_upsample(cell, g, g, up, S, S, p->bilinear);
    viz_overlay(cv, x, y, view, S, S, cfg->in_chans, up, p->cmap, p->alpha, K);
    for (int l = 0; l < L; l++)
        if (p->removed[l]) canvas_fill_rect(cv, x + (l % g) * side, y + (l / g) * side, side, side, GREY);
    if (p->has_query) canvas_rect(cv, x + p->qx * side, y + p->qy * side, side, side, K >= 3 ? 2 : 1, QUERY_RGB);
}

// Montage geometry: rows of tiles under a caption, a colour bar at the right.
typedef struct {
    int pad, ts, tile, col_w, label_h, cap_h, bar_x, bar_w, w, h;
} Layout;

static Layout montage_layout(const MaeConfig *cfg, const Plan *p, const char *cap1, const char *cap2) {
    Layout lo;
    lo.pad = 8;
    lo.tile = cfg->img_size * p->scale;
    lo.ts = lo.tile >= 160 ? 2 : 1;
    lo.label_h = FONT_LINE_H * lo.ts + 2;
    lo.col_w = lo.tile;
    char label[64];
    for (int s = 0; s < p->nspec; s++) {
        tile_label(p, p->layer_last, p->heads[s], label, sizeof label);
        int w = font_text_width(label, lo.ts);
        if (w > lo.col_w) lo.col_w = w;
    }
    lo.cap_h = 2 * FONT_LINE_H * lo.ts;
    int nrows = p->layer_last - p->layer_first + 1;
    lo.bar_w = 14;
    lo.bar_x = lo.pad + p->nspec * (lo.col_w + lo.pad);
    lo.w = lo.bar_x + lo.bar_w + 3 + viz_colorbar_label_width(0.0, 1.0) + lo.pad;
    int cap_w = font_text_width(cap1, lo.ts);
    if (font_text_width(cap2, lo.ts) > cap_w) cap_w = font_text_width(cap2, lo.ts);
    if (cap_w + 2 * lo.pad > lo.w) lo.w = cap_w + 2 * lo.pad;
    lo.h = lo.pad + lo.cap_h + lo.pad + nrows * (lo.label_h + lo.tile + lo.pad);
    return lo;
}

static void tile_origin(const Layout *lo, const Plan *p, int layer, int spec, int *x, int *y) {
    *x = lo->pad + spec * (lo->col_w + lo->pad);
    *y = lo->pad + lo->cap_h + lo->pad + (layer - p->layer_first) * (lo->label_h + lo->tile + lo->pad) + lo->label_h;
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
} Job;

// Writes one map's overlay PNG (and .npy with --raw). name is without extension.
static int write_map(const Job *job, const char *dir, const char *name, int layer, int head, const float *view,
                     const float *grid, float *cell, float *up, char *err, size_t errlen) {
    const MaeConfig *cfg = job->cfg;
    const Plan *p = job->plan;
    int S = cfg->img_size, g = S / cfg->patch_size;
    Canvas cv;
    if (canvas_create(&cv, S * p->scale, S * p->scale, err, errlen)) return -1;
    draw_map(&cv, 0, 0, view, cfg, grid, p, cell, up);
    float lo, hi;
    attn_grid_range(grid, g * g, &lo, &hi);
    char layer_s[16], head_s[24], min_s[32], max_s[32], query_s[32], mask_s[48];
    snprintf(layer_s, sizeof layer_s, "%d", layer);
    head_name(head, head_s, sizeof head_s);
    if (head >= 0) snprintf(head_s, sizeof head_s, "%d", head);
    snprintf(min_s, sizeof min_s, "%.9g", (double)lo);
    snprintf(max_s, sizeof max_s, "%.9g", (double)hi);
    snprintf(query_s, sizeof query_s, p->has_query ? "%d,%d" : "cls", p->qx, p->qy);
    snprintf(mask_s, sizeof mask_s, "%g seed %ld", (double)job->mask_ratio, job->seed);
    const char *text[] = {"Software", "vitmae attention", "mode", mode_name(p->mode), "layer", layer_s,
                          "head", head_s, "query", query_s, "min", min_s, "max", max_s,
                          "normalised", "per map: colour = (v - min) / (max - min)",
                          "mask_ratio", mask_s, NULL};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.png", dir, name);
    int rc = png_write(path, cv.px, cv.w, cv.h, 3, text, err, errlen);
    canvas_free(&cv);
    if (rc) return -1;
    if (job->raw) {
        snprintf(path, sizeof path, "%s/%s.npy", dir, name);
        int64_t shape[2] = {g, g};
        if (npy_write(path, grid, "<f4", 2, shape, err, errlen)) return -1;
    }
    return 0;
}

static int add_written(Written *w, const char *rel) {
    char **m = realloc(w->maps, (size_t)(w->nmaps + 1) * sizeof *m);
    if (!m) return -1;
    w->maps = m;
    w->maps[w->nmaps] = strdup(rel);
    return w->maps[w->nmaps++] ? 0 : -1;
}

// Runs the encoder on one view and writes every file of this image. Returns the number of maps
// written, or -1 with err.
static int attend_one(const Job *job, Mae *m, const float *view, Written *w, char *err, size_t errlen) {
    const MaeConfig *cfg = job->cfg;
    const Plan *p = job->plan;
    int S = cfg->img_size, C = cfg->in_chans, g = S / cfg->patch_size, L = g * g;
    int H = cfg->num_heads, T = 1 + p->K, depth = cfg->depth;
    size_t TT = (size_t)T * T;
    int nmaps = -1;

    float *norm = malloc((size_t)S * S * C * sizeof *norm);
    float *row = malloc((size_t)T * sizeof *row), *grid = malloc((size_t)L * sizeof *grid);
    float *cell = malloc((size_t)L * sizeof *cell), *up = malloc((size_t)S * S * sizeof *up);
    float *mat = malloc(TT * sizeof *mat), *work = malloc(TT * sizeof *work);
    float *rollout = p->mode == MODE_ROLLOUT ? malloc((size_t)p->nspec * TT * sizeof *rollout) : NULL;
    char *dir = join(job->out_dir, w->stem);
    Canvas cv = {0, 0, NULL};
    if (!norm || !row || !grid || !cell || !up || !mat || !work || !dir || (p->mode == MODE_ROLLOUT && !rollout)) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    memcpy(norm, view, (size_t)S * S * C * sizeof *norm);
    pixels_normalise(cfg, norm, (long)S * S);
    mae_forward_encoder(m, norm, p->keep, 1, p->K);

    if (output_mkdir_p(dir, err, errlen)) goto done;
    char cap1[256], cap2[256];
    char qdesc[48] = "the CLS token";
    if (p->has_query) snprintf(qdesc, sizeof qdesc, "patch (%d,%d)", p->qx, p->qy);
    snprintf(cap1, sizeof cap1, "%s: %s%s over the patches", w->stem,
             p->mode == MODE_ROLLOUT ? "attention rollout of " : "attention of ", qdesc);
    snprintf(cap2, sizeof cap2, "each tile normalised to its own min..max (bar: relative attention)%s",
             p->K < L ? "; grey = masked" : "");
    Layout lo = montage_layout(cfg, p, cap1, cap2);
    if (canvas_create(&cv, lo.w, lo.h, err, errlen)) goto done;
    canvas_fill(&cv, WHITE);
    canvas_text(&cv, lo.pad, lo.pad, cap1, BLACK, lo.ts);
    canvas_text(&cv, lo.pad, lo.pad + FONT_LINE_H * lo.ts, cap2, BLACK, lo.ts);
    int bar_y = lo.pad + lo.cap_h + lo.pad + lo.label_h;
    viz_colorbar(&cv, lo.bar_x, bar_y, lo.bar_w, lo.tile, 1, p->cmap, 0.0, 1.0, BLACK);

    int query = 0;
    if (p->has_query) query = attn_token_of_patch(p->keep, p->K, p->qy * g + p->qx);
    for (int s = 0; p->mode == MODE_ROLLOUT && s < p->nspec; s++) attn_rollout_init(rollout + s * TT, T);
    nmaps = 0;
    int last = p->layer_last;
    for (int l = p->mode == MODE_ROLLOUT ? 0 : p->layer_first; l <= last; l++) {
        const float *att = mae_attention(m, l);   // [1, H, T, T]
        for (int s = 0; s < p->nspec; s++) {
            int head = p->heads[s];
            if (p->mode == MODE_ROLLOUT) {
                attn_fuse_heads(att, H, T, head, mat);
                attn_rollout_step(rollout + s * TT, mat, T, work);
                if (l < p->layer_first) continue;
                memcpy(row, rollout + s * TT + (size_t)query * T, (size_t)T * sizeof *row);
            } else {
                attn_query_row(att, H, T, query, head, row);
            }
            attn_row_to_grid(row, T, p->keep, L, grid);
            int x, y;
            tile_origin(&lo, p, l, s, &x, &y);
            char label[64], name[128];
            tile_label(p, l, head, label, sizeof label);
            canvas_text(&cv, x, y - lo.label_h, label, BLACK, lo.ts);
            draw_map(&cv, x, y, view, cfg, grid, p, cell, up);
            map_name(p, l, head, name, sizeof name);
            if (write_map(job, dir, name, l, head, view, grid, cell, up, err, errlen)) { nmaps = -1; goto done; }
            char rel[4096];
            snprintf(rel, sizeof rel, "%s/%s.png", w->stem, name);
            if (add_written(w, rel)) { snprintf(err, errlen, "out of memory"); nmaps = -1; goto done; }
            nmaps++;
        }
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/%s.attn.png", job->out_dir, w->stem);
    char layers_s[32], mask_s[48];
    snprintf(layers_s, sizeof layers_s, "%d-%d", p->layer_first, p->layer_last);
    snprintf(mask_s, sizeof mask_s, "%g", (double)job->mask_ratio);
    const char *text[] = {"Software", "vitmae attention", "mode", mode_name(p->mode), "layers", layers_s,
                          "normalised", "per tile: colour = (v - min) / (max - min) over its patches",
                          "mask_ratio", mask_s, NULL};
    if (png_write(path, cv.px, cv.w, cv.h, 3, text, err, errlen)) { nmaps = -1; goto done; }
    size_t n = strlen(w->stem) + 16;
    w->montage = malloc(n);
    if (w->montage) snprintf(w->montage, n, "%s.attn.png", w->stem);

    if (job->raw) {
        // Every layer, copied out of the model's cache only here: [depth, heads, T, T].
        float *all = malloc((size_t)depth * H * TT * sizeof *all);
        if (!all) { snprintf(err, errlen, "out of memory for --raw (%d layers of %d x %d x %d)", depth, H, T, T); nmaps = -1; goto done; }
        for (int l = 0; l < depth; l++) memcpy(all + (size_t)l * H * TT, mae_attention(m, l), (size_t)H * TT * sizeof *all);
        int64_t shape[4] = {depth, H, T, T};
        snprintf(path, sizeof path, "%s/%s.attn.npy", job->out_dir, w->stem);
        int rc = npy_write(path, all, "<f4", 4, shape, err, errlen);
        free(all);
        if (rc) { nmaps = -1; goto done; }
        if (p->K < L) {
            int64_t mshape[2] = {g, g};
            snprintf(path, sizeof path, "%s/%s.mask.npy", job->out_dir, w->stem);
            if (npy_write(path, p->removed, "|u1", 2, mshape, err, errlen)) { nmaps = -1; goto done; }
        }
    }
done:
    canvas_free(&cv);
    free(norm); free(row); free(grid); free(cell); free(up); free(mat); free(work); free(rollout); free(dir);
    return nmaps;
}

// ---------------------------------------------------------------------------------------------
// index.html

static void html_text(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
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

static int write_index(const char *out_dir, const char *ckpt, const Plan *p, const Written *w, int n,
                       char *err, size_t errlen) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/index.html", out_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) { snprintf(err, errlen, "%.2000s: %s", tmp, strerror(errno)); return -1; }
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>vitmae attention</title>\n"
          "<style>body{font-family:sans-serif} img{max-width:100%} li{display:inline-block;margin:0 1em 0 0}</style>\n"
          "</head><body>\n<h1>vitmae attention</h1>\n<p>checkpoint ", f);
    html_text(f, ckpt);
    fprintf(f, ", mode %s. Each map is normalised to its own min..max.</p>\n", mode_name(p->mode));
    for (int i = 0; i < n; i++) {
        if (!w[i].montage) continue;
        fputs("<h2>", f); html_text(f, w[i].stem); fputs("</h2>\n<p>", f); html_text(f, w[i].source);
        fputs("</p>\n<p><a href=\"", f); html_url(f, w[i].montage); fputs("\"><img src=\"", f);
        html_url(f, w[i].montage); fputs("\" alt=\"", f); html_text(f, w[i].montage); fputs("\"></a></p>\n<ul>\n", f);
        for (int k = 0; k < w[i].nmaps; k++) {
            fputs("<li><a href=\"", f); html_url(f, w[i].maps[k]); fputs("\">", f);
            const char *slash = strrchr(w[i].maps[k], '/');
            html_text(f, slash ? slash + 1 : w[i].maps[k]);
            fputs("</a></li>\n", f);
        }
        fputs("</ul>\n", f);
    }
    fputs("</body></html>\n", f);
    if (fclose(f) || rename(tmp, path)) { snprintf(err, errlen, "%.2000s: %s", path, strerror(errno)); remove(tmp); return -1; }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// The command

static const char *SYNOPSIS =
    "--ckpt FILE [--out DIR] [--mode cls|patch|rollout] [--layer N|last|all] [--head N|mean|max|all]\n"
    "       [--query X,Y] [--colormap NAME] [--alpha A] [--upsample bilinear|nearest] [--scale K] [--raw]\n"
    "       [--mask-ratio R --seed S] INPUT...\n"
    "Attention maps of the encoder drawn over each image (files, or folders scanned recursively):\n"
    "DIR/<stem>.attn.png (montage), DIR/<stem>/<map>.png (one overlay per map), DIR/index.html;\n"
    "--raw adds DIR/<stem>.attn.npy [depth, heads, 1+L, 1+L] and DIR/<stem>/<map>.npy [gh, gw].";

int cmd_attention(int argc, char **argv) {
    const char *ckpt_path = NULL, *out_dir = "attention", *layer_s = "last", *head_s = "all", *query_s = NULL;
    const char *mode_s = "cls", *cmap_s = "viridis", *upsample_s = "bilinear";
    float alpha = 0.6f, mask_ratio = 0.0f;
    int scale = 0, raw = 0, threads = 0;
    long seed = 0, max_pixels = VITMAE_DEFAULT_MAX_PIXELS;
    Flag flags[] = {
        {"--ckpt", FLAG_STR, &ckpt_path, 0, 0, NULL, "checkpoint (.safetensors; encoder-only is fine)", "FILE", 0},
        {"--out", FLAG_STR, &out_dir, 0, 0, NULL, "output folder (default attention)", "DIR", 0},
        {"--mode", FLAG_CHOICE, &mode_s, 0, 0, "cls|patch|rollout",
         "cls: CLS token's row; patch: --query's row; rollout: 0.5A+0.5I product (default cls)", NULL, 0},
        {"--layer", FLAG_STR, &layer_s, 0, 0, NULL, "0-based encoder layer, last or all (default last)", "N|last|all", 0},
        {"--head", FLAG_STR, &head_s, 0, 0, NULL, "a head, mean/max over heads, or all + mean (default all)", "N|mean|max|all", 0},
        {"--query", FLAG_STR, &query_s, 0, 0, NULL, "query patch in grid coordinates (patch; optional for rollout)", "X,Y", 0},
        {"--colormap", FLAG_CHOICE, &cmap_s, 0, 0, VIZ_COLORMAP_NAMES, "colormap (default viridis)", NULL, 0},
        {"--alpha", FLAG_FLOAT, &alpha, 0, 1, NULL, "opacity of the map over the image (default 0.6)", "A", 0},
        {"--upsample", FLAG_CHOICE, &upsample_s, 0, 0, "bilinear|nearest", "patch grid to pixels (default bilinear)", NULL, 0},
        {"--scale", FLAG_INT, &scale, 1, 64, NULL, "pixel scale of the drawings (default max(1, 256 / img_size))", "K", 0},
        {"--raw", FLAG_BOOL, &raw, 0, 0, NULL, "also write the attention (.attn.npy) and each map (.npy)", NULL, 0},
        {"--mask-ratio", FLAG_FLOAT, &mask_ratio, 0, MASK_RATIO_FLAG_MAX, NULL, "remove patches as MAE does (default 0: none)", "R", 0},
        {"--seed", FLAG_LONG, &seed, 0, 9.2e18, NULL, "mask seed: one mask for every image (default 0)", "S", 0},
        {"--threads", FLAG_INT, &threads, 0, 1024, NULL, "OpenMP threads (default: all)", "N", 0},
        {"--max-pixels", FLAG_LONG, &max_pixels, 1, 9.2e18, NULL, "refuse larger images (default 64M)", "N", 0},
    };
    int nflags = (int)(sizeof flags / sizeof flags[0]);
    char **inputs = malloc((size_t)(argc > 1 ? argc : 1) * sizeof *inputs);
    if (!inputs) { cli_error("attention", "out of memory"); return 1; }
    int ninputs = 0;
    int rc = cli_parse("attention", SYNOPSIS, flags, nflags, argc, argv, inputs, argc, &ninputs);
    if (rc != CLI_OK) { free(inputs); return rc == CLI_HELP ? 0 : 2; }
    int status = 2;
    Checkpoint ck = {0};
    Mae *m = NULL;
    char **paths = NULL;
    int npaths = 0;
    Written *written = NULL;
    StemSet stems = {NULL, 0, 0, 2};
    int *keep = NULL;
    uint8_t *removed = NULL;
    float *view = NULL;

    // Syntax first (before the checkpoint is read), ranges once depth/heads/grid are known.
    Plan plan;
    memset(&plan, 0, sizeof plan);
    static const char *const layer_words[] = {"last", "all"}, *const head_words[] = {"mean", "max", "all"};
    int layer_num, layer_v = 0, layer_word = 0, head_num, head_v = 0, head_word = 0, qx = 0, qy = 0;
    plan.mode = !strcmp(mode_s, "cls") ? MODE_CLS : !strcmp(mode_s, "patch") ? MODE_PATCH : MODE_ROLLOUT;
    if (!ckpt_path) { cli_error("attention", "--ckpt FILE is required (see vitmae attention --help)"); goto out; }
    if (ninputs == 0) { cli_error("attention", "no INPUT image or folder given"); goto out; }
    if (parse_selection(layer_s, layer_words, 2, &layer_num, &layer_v, &layer_word)) { cli_error("attention --layer", "'%s' is not a layer (N, last or all)", layer_s); goto out; }
    if (parse_selection(head_s, head_words, 3, &head_num, &head_v, &head_word)) { cli_error("attention --head", "'%s' is not a head (N, mean, max or all)", head_s); goto out; }
    if (query_s && parse_query(query_s, &qx, &qy)) { cli_error("attention --query", "'%s' is not X,Y (patch grid coordinates)", query_s); goto out; }
    if (plan.mode == MODE_PATCH && !query_s) { cli_error("attention --query", "--mode patch needs --query X,Y"); goto out; }
    if (plan.mode == MODE_CLS && query_s) { cli_error("attention --query", "not used by --mode cls (use --mode patch or rollout)"); goto out; }

    char err[4096];
    if (mask_ratio_check(mask_ratio, 0, err, sizeof err)) { cli_error("attention --mask-ratio", "%s", err); goto out; }
    if (ckpt_load(ckpt_path, &ck, err, sizeof err)) { cli_error("attention", "%s", err); status = 1; goto out; }
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
    if (H > 64) { cli_error("attention", "%s: %d heads (at most 64 are drawn)", ckpt_path, H); status = 1; goto out; }
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
    plan.scale = scale ? scale : (256 / S > 1 ? 256 / S : 1);
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
        if (!noise) { cli_error("attention", "out of memory"); status = 1; goto out; }
        Rng rng;
        rng_seed(&rng, (uint64_t)seed);
        mask_from_rng(&rng, L, K, noise, keep);
        free(noise);
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
    plan.keep = keep; plan.K = K; plan.removed = removed;

    status = 1;
    if (threads > 0) omp_set_num_threads(threads);
    // Memory: refuse before allocating what cannot fit (one image at a time).
    if (mae_memory_check(cfg, 1, 0, err, sizeof err)) { cli_error("attention", "%s", err); goto out; }
    m = mae_create(cfg, 1, err, sizeof err);
    if (!m) { cli_error("attention", "%s", err); goto out; }
    memcpy(mae_params(m), ck.params, mae_num_params(cfg) * sizeof(float));
    if (output_mkdir_p(out_dir, err, sizeof err)) { cli_error("attention", "%s", err); goto out; }

    int failures = 0;
    paths = collect_inputs(inputs, ninputs, max_pixels, &npaths, &failures);
    written = calloc((size_t)(npaths ? npaths : 1), sizeof *written);
    if (!written) { cli_error("attention", "out of memory"); goto out; }
    Job job = {cfg, &plan, out_dir, raw, K < L ? mask_ratio : 0.0f, seed};
    int nimages = 0, nmaps = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < npaths; i++) {
        if (image_load_view(paths[i], max_pixels, S, cfg->in_chans, view, err, sizeof err)) {
            cli_error(paths[i], "%s", err);
            failures++;
            continue;
        }
        Written *w = &written[i];
        w->source = strdup(paths[i]);
        char *stem = infer_stem(paths[i]);
        w->stem = stem ? stem_set_claim(&stems, stem) : NULL;
        free(stem);
        if (!w->source || !w->stem) { cli_error("attention", "out of memory"); failures++; continue; }
        int n = attend_one(&job, m, view, w, err, sizeof err);
        if (n < 0) { cli_error(paths[i], "%s", err); failures++; continue; }
        printf("%s: %d map%s -> %s/%s\n", paths[i], n, n == 1 ? "" : "s", out_dir, w->montage ? w->montage : "");
        nimages++;
        nmaps += n;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (write_index(out_dir, ckpt_path, &plan, written, npaths, err, sizeof err)) { cli_error("attention", "%s", err); failures++; }
    printf("attention: %d image%s, %d maps in %.2f s (%.2f images/s); index %s/index.html\n", nimages,
           nimages == 1 ? "" : "s", nmaps, secs, secs > 0 ? nimages / secs : 0.0, out_dir);
    status = failures ? 1 : 0;
out:
    for (int i = 0; written && i < npaths; i++) {
        free(written[i].source); free(written[i].montage);
        for (int k = 0; k < written[i].nmaps; k++) free(written[i].maps[k]);
        free(written[i].maps);
    }
    free(written);
    stem_set_free(&stems);
    for (int i = 0; i < npaths; i++) free(paths[i]);
    free(paths);
    free(keep); free(removed); free(view);
    mae_free(m);
    ckpt_free(&ck);
    free(inputs);
    return status;
}
