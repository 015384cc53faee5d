// `vitmae train`: pretrain the masked autoencoder on a folder of images.
//
// The story of a run: parse flags -> scan the folder (decoded once, cached) -> split train/val ->
// choose the model (preset + flags, channels, pixel statistics) -> check memory and the output
// folder -> build or resume the model -> steps (batch, masks, forward, backward, clip, AdamW) with
// logs, validation, samples, curves and checkpoints -> final checkpoint.
//
// Reproducibility: every random draw is derived from (seed, position): the data order of epoch e
// from (seed, PERM, e), the augmentation of the k-th image of step s from (seed, s, k), its mask
// from (seed ^ MASK, s, k), validation masks from (seed ^ VAL, i). So the whole training state is
// (step, parameters, AdamW moments): a resumed run continues bit for bit, and any thread count
// gives the same run (every kernel owns its outputs).
#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "io/checkpoint.h"
#include "cmd/cli.h"
#include "kernels/cpu.h"
#include "cmd/commands.h"
#include "data/dataset.h"
#include "cmd/log.h"
#include "core/model.h"
#include "core/optim.h"
#include "viz/panel.h"
#include "infer/recon.h"
#include "viz/viz.h"

#define SALT_PERM 0x7065726d75746531ull
#define SALT_MASK 0x6d61736b6d61736bull
#define SALT_VAL  0x76616c696461746full
#define SAMPLE_IMAGES 8

typedef struct {
    const char *data, *out, *resume, *preset, *channels, *pos, *augment, *pixel_norm;
    int img, patch, dim, depth, heads, dec_dim, dec_depth, dec_heads, norm_pix;
    float mask_ratio, lr, blr, min_lr, wd, clip, val_frac;
    long steps, warmup, seed, eval_every, ckpt_every, log_every, sample_every, cache_mb, max_pixels;
    float epochs;
    int batch, threads, keep, val_max;
} Args;

// What a checkpoint must carry to continue the run exactly (stored as train_state JSON).
typedef struct {
    long step, total_steps, warmup, seed, eval_every, ckpt_every, log_every, sample_every;
    int batch, keep, val_max;
    float lr, min_lr, wd, clip, mask_ratio, val_frac;
    char augment[16];
    char data[4096];
    double elapsed_s;   // training time of earlier sessions
} RunState;

typedef struct {
    long *step; double *loss, *val_step, *val_loss, *lr;
    int n, nval, cap;
} History;

typedef struct {
    Args a;
    RunState rs;
    Dataset ds;
    int *train_idx, ntrain, *val_idx, nval;
    MaeConfig cfg;
    Mae *model;
    float *exp_avg, *exp_avg_sq;
    const MaeTensor *tensors;
    int ntensors, L, K, S, C;
    char run_dir[4096], ckpt_path[4200];
    // Buffers sized once before the first step.
    float *pixels, *images, *noise, *recon;
    int *ids_keep, *batch_items, *perm[2];
    long perm_epoch[2];
    uint8_t *removed;
    float *patch_err;
    FILE *metrics;
    History hist;
} Train;

static volatile sig_atomic_t stop_requested = 0;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

// ---------------------------------------------------------------------------------------------
// Small helpers

static int mkdir_p(const char *path, char *err, size_t errlen) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) { snprintf(err, errlen, "%s: %s", tmp, strerror(errno)); return -1; }
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) { snprintf(err, errlen, "%s: %s", tmp, strerror(errno)); return -1; }
    struct stat st;
    if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode)) { snprintf(err, errlen, "%s: not a folder", tmp); return -1; }
    return 0;
}

// The output folder must take files: create and remove a probe file before any training.
static int check_writable(const char *dir, char *err, size_t errlen) {
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.vitmae-write-test-%d", dir, (int)getpid());
    FILE *f = fopen(probe, "w");
    if (!f) { snprintf(err, errlen, "%s: cannot write in this folder: %s", dir, strerror(errno)); return -1; }
    int bad = fputs("ok\n", f) < 0;
    bad |= fclose(f) != 0;
    unlink(probe);
    if (bad) { snprintf(err, errlen, "%s: cannot write in this folder", dir); return -1; }
    return 0;
}

static int write_text_file(const char *path, const char *text, char *err, size_t errlen) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) { snprintf(err, errlen, "%s: %s", tmp, strerror(errno)); return -1; }
    int bad = fputs(text, f) < 0;
    bad |= fflush(f) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// train_state JSON

static char *run_state_to_json(const RunState *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)r->step);
    cJSON_AddNumberToObject(o, "total_steps", (double)r->total_steps);
    cJSON_AddNumberToObject(o, "warmup_steps", (double)r->warmup);
    cJSON_AddNumberToObject(o, "seed", (double)r->seed);
    cJSON_AddNumberToObject(o, "batch", r->batch);
    cJSON_AddNumberToObject(o, "lr", r->lr);
    cJSON_AddNumberToObject(o, "min_lr", r->min_lr);
    cJSON_AddNumberToObject(o, "weight_decay", r->wd);
    cJSON_AddNumberToObject(o, "clip", r->clip);
    cJSON_AddNumberToObject(o, "mask_ratio", r->mask_ratio);
    cJSON_AddNumberToObject(o, "val_frac", r->val_frac);
    cJSON_AddNumberToObject(o, "val_max", r->val_max);
    cJSON_AddStringToObject(o, "augment", r->augment);
    cJSON_AddStringToObject(o, "data", r->data);
    cJSON_AddNumberToObject(o, "eval_every", (double)r->eval_every);
    cJSON_AddNumberToObject(o, "ckpt_every", (double)r->ckpt_every);
    cJSON_AddNumberToObject(o, "log_every", (double)r->log_every);
    cJSON_AddNumberToObject(o, "sample_every", (double)r->sample_every);
    cJSON_AddNumberToObject(o, "keep", r->keep);
    cJSON_AddNumberToObject(o, "elapsed_s", r->elapsed_s);
    // The data position and every random stream follow from (seed, step): see the file comment.
    cJSON_AddNumberToObject(o, "samples_seen", (double)r->step * r->batch);
    cJSON_AddStringToObject(o, "rng", "derived from (seed, step, image index)");
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static int json_number(const cJSON *o, const char *key, double lo, double hi, double *out,
                       char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi)) {
        snprintf(err, errlen, "train_state: '%s' missing or out of range", key);
        return -1;
    }
    *out = v->valuedouble;
    return 0;
}

static int run_state_from_json(const char *json, RunState *r, char *err, size_t errlen) {
    cJSON *o = cJSON_Parse(json);
    if (!cJSON_IsObject(o)) { cJSON_Delete(o); snprintf(err, errlen, "train_state is not a JSON object"); return -1; }
    double v[18];
    static const char *keys[] = {"step", "total_steps", "warmup_steps", "seed", "batch", "lr", "min_lr",
                                 "weight_decay", "clip", "mask_ratio", "val_frac", "val_max", "eval_every",
                                 "ckpt_every", "log_every", "sample_every", "keep", "elapsed_s"};
    for (int i = 0; i < 18; i++)
        if (json_number(o, keys[i], i == 3 ? -9.3e18 : 0, 9.3e18, &v[i], err, errlen)) { cJSON_Delete(o); return -1; }
    memset(r, 0, sizeof *r);
    r->step = (long)v[0]; r->total_steps = (long)v[1]; r->warmup = (long)v[2]; r->seed = (long)v[3];
    r->batch = (int)v[4]; r->lr = (float)v[5]; r->min_lr = (float)v[6]; r->wd = (float)v[7];
    r->clip = (float)v[8]; r->mask_ratio = (float)v[9]; r->val_frac = (float)v[10]; r->val_max = (int)v[11];
    r->eval_every = (long)v[12]; r->ckpt_every = (long)v[13]; r->log_every = (long)v[14];
    r->sample_every = (long)v[15]; r->keep = (int)v[16]; r->elapsed_s = v[17];
    const cJSON *aug = cJSON_GetObjectItemCaseSensitive(o, "augment");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    Augment parsed;
    if (!cJSON_IsString(aug) || augment_parse(aug->valuestring, &parsed) != 0 || !cJSON_IsString(data)) {
        cJSON_Delete(o);
        snprintf(err, errlen, "train_state: 'augment' or 'data' missing");
        return -1;
    }
    snprintf(r->augment, sizeof r->augment, "%s", aug->valuestring);
    snprintf(r->data, sizeof r->data, "%s", data->valuestring);
    cJSON_Delete(o);
    if (r->batch < 1 || r->step > r->total_steps) { snprintf(err, errlen, "train_state: inconsistent step/batch"); return -1; }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Data order: epoch e visits the training items in the permutation drawn from (seed, PERM, e).

static const int *epoch_perm(Train *t, long epoch) {
    for (int i = 0; i < 2; i++) if (t->perm_epoch[i] == epoch) return t->perm[i];
    int slot = t->perm_epoch[0] < t->perm_epoch[1] ? 0 : 1;
    int *p = t->perm[slot];
    Rng r;
    rng_derive(&r, (uint64_t)t->rs.seed ^ SALT_PERM, (uint64_t)epoch, 0);
    for (int i = 0; i < t->ntrain; i++) p[i] = i;
    for (int i = t->ntrain - 1; i > 0; i--) {
        int j = (int)rng_below(&r, (uint32_t)i + 1);
        int tmp = p[i]; p[i] = p[j]; p[j] = tmp;
    }
    t->perm_epoch[slot] = epoch;
    return p;
}

// Uniform noise [L] -> MAE's ids_keep (argsort ascending, first K).
static void masks_for(Train *t, uint64_t salt, uint64_t a, int n, const uint64_t *b, int *ids_keep) {
    for (int k = 0; k < n; k++) {
        Rng r;
        rng_derive(&r, (uint64_t)t->rs.seed ^ salt, a, b[k]);
        for (int l = 0; l < t->L; l++) t->noise[(size_t)k * t->L + l] = rng_uniform(&r);
    }
    mae_masking_from_noise(t->noise, n, t->L, t->K, ids_keep);
}

// ---------------------------------------------------------------------------------------------
// Validation: masked loss (model units) and PSNR (pixel units) on the held-out images, with the
// same mask for image i at every evaluation.

static int load_eval_batch(Train *t, const int *items, int n, char *err, size_t errlen) {
    if (dataset_load_batch(&t->ds, items, n, t->S, t->C, AUGMENT_NONE, 0, 0, t->pixels, err, errlen)) return -1;
    size_t count = (size_t)n * t->S * t->S * t->C;
    memcpy(t->images, t->pixels, count * sizeof(float));
    pixels_normalise(&t->cfg, t->images, (long)n * t->S * t->S);
    return 0;
}

static int evaluate(Train *t, double *val_loss, double *val_psnr, char *err, size_t errlen) {
    int nval = t->nval < t->rs.val_max ? t->nval : t->rs.val_max;
    *val_loss = NAN; *val_psnr = NAN;
    if (nval == 0) return 0;
    double loss_sum = 0, mse_sum = 0;
    size_t img_floats = (size_t)t->S * t->S * t->C;
    uint64_t keys[4096];
    for (int b0 = 0; b0 < nval; b0 += t->rs.batch) {
        int n = nval - b0 < t->rs.batch ? nval - b0 : t->rs.batch;
        for (int k = 0; k < n; k++) { t->batch_items[k] = t->val_idx[b0 + k]; keys[k] = (uint64_t)(b0 + k); }
        if (load_eval_batch(t, t->batch_items, n, err, errlen)) return -1;
        masks_for(t, SALT_VAL, 0, n, keys, t->ids_keep);
        float loss = mae_forward(t->model, t->images, t->ids_keep, n, t->K);
        loss_sum += (double)loss * n;
        const float *pred = mae_pred(t->model);
        size_t pd = (size_t)mae_patch_dim(&t->cfg);
        for (int k = 0; k < n; k++) {
            recon_removed_from_keep(t->ids_keep + (size_t)k * t->K, t->K, t->L, t->removed);
            recon_pixels(&t->cfg, pred + (size_t)k * t->L * pd, t->images + k * img_floats, t->removed, t->recon);
            mse_sum += recon_masked_mse(&t->cfg, t->recon, t->pixels + k * img_floats, t->removed, NULL);
        }
    }
    *val_loss = loss_sum / nval;
    *val_psnr = psnr_from_mse(mse_sum / nval);
    return 0;
}

// RUN/samples/step-<step>.png: SAMPLE_IMAGES validation images spread evenly over the split
// (training images when there is no validation split) with fixed masks, one five-panel row each.
static int write_samples(Train *t, long step, char *err, size_t errlen) {
    const int *src = t->nval ? t->val_idx : t->train_idx;
    int n = (t->nval ? t->nval : t->ntrain);
    if (n > SAMPLE_IMAGES) n = SAMPLE_IMAGES;
    if (n > t->rs.batch) n = t->rs.batch;
    uint64_t keys[SAMPLE_IMAGES];
    int total = t->nval ? t->nval : t->ntrain;
    // Spread over the split (scan order groups images by class): every class has a chance to show.
    for (int k = 0; k < n; k++) { t->batch_items[k] = src[(long)k * total / n]; keys[k] = (uint64_t)k; }
    if (load_eval_batch(t, t->batch_items, n, err, errlen)) return -1;
    masks_for(t, SALT_VAL, 0, n, keys, t->ids_keep);
    mae_forward(t->model, t->images, t->ids_keep, n, t->K);
    const float *pred = mae_pred(t->model);
    size_t pd = (size_t)mae_patch_dim(&t->cfg), img_floats = (size_t)t->S * t->S * t->C;
    Canvas rows[SAMPLE_IMAGES];
    memset(rows, 0, sizeof rows);
    int scale = t->S >= 128 ? 1 : (128 + t->S - 1) / t->S, rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        recon_removed_from_keep(t->ids_keep + (size_t)k * t->K, t->K, t->L, t->removed);
        recon_pixels(&t->cfg, pred + (size_t)k * t->L * pd, t->images + k * img_floats, t->removed, t->recon);
        recon_masked_mse(&t->cfg, t->recon, t->pixels + k * img_floats, t->removed, t->patch_err);
        rc = panel_recon_row(&rows[k], &t->cfg, t->pixels + k * img_floats, t->recon, t->removed,
                             t->patch_err, 0.0f, scale, k == 0, err, errlen);
    }
    Canvas sheet = {0};
    if (rc == 0) rc = panel_stack(&sheet, rows, n, 4, err, errlen);
    if (rc == 0) {
        char path[4300], stepbuf[32];
        snprintf(path, sizeof path, "%s/samples/step-%ld.png", t->run_dir, step);
        snprintf(stepbuf, sizeof stepbuf, "%ld", step);
        const char *text[] = {"Software", "vitmae", "step", stepbuf, NULL};
        rc = png_write(path, sheet.px, sheet.w, sheet.h, 3, text, err, errlen);
    }
    canvas_free(&sheet);
    for (int k = 0; k < n; k++) canvas_free(&rows[k]);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// History and RUN/curves.png

static int history_reserve(History *h, int cap) {
    if (cap <= h->cap) return 0;
    long *s = realloc(h->step, cap * sizeof *s);
    if (s) h->step = s;
    double *l = realloc(h->loss, cap * sizeof *l);
    if (l) h->loss = l;
    double *r = realloc(h->lr, cap * sizeof *r);
    if (r) h->lr = r;
    double *vs = realloc(h->val_step, cap * sizeof *vs);
    if (vs) h->val_step = vs;
    double *vl = realloc(h->val_loss, cap * sizeof *vl);
    if (vl) h->val_loss = vl;
    if (!s || !l || !r || !vs || !vl) return -1;
    h->cap = cap;
    return 0;
}

static void history_add(History *h, long step, double loss, double lr, double val_loss) {
    if (h->n >= h->cap && history_reserve(h, h->cap ? 2 * h->cap : 256)) return;
    if (isfinite(loss)) { h->step[h->n] = step; h->loss[h->n] = loss; h->lr[h->n] = lr; h->n++; }
    if (isfinite(val_loss)) { h->val_step[h->nval] = (double)step; h->val_loss[h->nval] = val_loss; h->nval++; }
}

// Rows of metrics.csv kept from the run we resume (the file already dropped later rows).
static void history_load(History *h, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    if (!fgets(line, sizeof line, f)) { fclose(f); return; }
    while (fgets(line, sizeof line, f)) {
        double v[8];
        int nf = 0;
        char *p = line;
        for (; nf < 8; nf++) {
            char *end;
            v[nf] = strtod(p, &end);
            if (end == p) v[nf] = NAN;
            p = strchr(end, ',');
            if (!p) { nf++; break; }
            p++;
        }
        if (nf >= 5) history_add(h, (long)v[0], v[3], v[2], v[4]);
    }
    fclose(f);
}

static void history_free(History *h) {
    free(h->step); free(h->loss); free(h->lr); free(h->val_step); free(h->val_loss);
    memset(h, 0, sizeof *h);
}

static int write_curves(Train *t, char *err, size_t errlen) {
    History *h = &t->hist;
    Canvas c = {0};
    if (canvas_create(&c, 960, 640, err, errlen)) return -1;
    static const uint8_t white[3] = {255, 255, 255};
    canvas_fill(&c, white);
    double *steps = malloc((h->n + 1) * sizeof *steps);
    if (!steps) { canvas_free(&c); snprintf(err, errlen, "out of memory"); return -1; }
    for (int i = 0; i < h->n; i++) steps[i] = (double)h->step[i];
    PlotSeries loss[2] = {
        {"train loss", steps, h->loss, h->n, 0, {0, 0, 0}},
        {"val loss", h->val_step, h->val_loss, h->nval, 0, {0, 0, 0}},
    };
    PlotOptions lo = {"masked-patch loss", "step", "loss", 1};
    PlotSeries lr = {"learning rate", steps, h->lr, h->n, 0, {0, 0, 0}};
    viz_palette(2, lr.rgb);
    lr.has_rgb = 1;
    PlotOptions lro = {"learning rate", "step", "lr", 0};
    int rc = viz_plot(&c, 0, 0, 960, 440, loss, 2, &lo);
    if (rc == 0) rc = viz_plot(&c, 0, 440, 960, 200, &lr, 1, &lro);
    if (rc == 0) {
        char path[4300];
        snprintf(path, sizeof path, "%s/curves.png", t->run_dir);
        const char *text[] = {"Software", "vitmae", NULL};
        rc = png_write(path, c.px, c.w, c.h, 3, text, err, errlen);
    } else {
        snprintf(err, errlen, "curves: plot box too small");
    }
    free(steps);
    canvas_free(&c);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// Checkpoints: RUN/checkpoint-<step>.safetensors (the kept snapshots) and RUN/checkpoint.safetensors
// (the latest, a hard link to the newest snapshot swapped in atomically, or a file of its own).

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

// Temporary files of writes that a kill (SIGKILL, power loss) interrupted: ckpt_save's
// ".checkpoint*.safetensors.tmp-XXXXXX" and save_checkpoint's ".checkpoint.link.<pid>". Removed when
// a run starts or resumes in the folder, so repeated crashes do not fill the disk.
static void remove_stale_temp_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        int tmp = strncmp(n, ".checkpoint", 11) == 0 && strstr(n, ".safetensors.tmp-") != NULL;
        int lnk = strncmp(n, ".checkpoint.link.", 17) == 0;
        if (!tmp && !lnk) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, n);
        unlink(path);
    }
    closedir(d);
}

static void prune_snapshots(const char *dir, int keep) {
    DIR *d = opendir(dir);
    if (!d) return;
    long steps[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096) {
        long s;
        char tail[64];
        if (sscanf(e->d_name, "checkpoint-%ld%63s", &s, tail) == 2 && !strcmp(tail, ".safetensors")) steps[n++] = s;
    }
    closedir(d);
    qsort(steps, n, sizeof steps[0], cmp_long);
    for (int i = 0; i < n - keep; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/checkpoint-%ld.safetensors", dir, steps[i]);
        unlink(path);
    }
}

static int save_checkpoint(Train *t, int snapshot, char *err, size_t errlen) {
    char *state = run_state_to_json(&t->rs);
    if (!state) { snprintf(err, errlen, "out of memory"); return -1; }
    int rc;
    if (snapshot && t->rs.keep > 0) {
        char snap[4300], tmp[4400];
        snprintf(snap, sizeof snap, "%s/checkpoint-%ld.safetensors", t->run_dir, t->rs.step);
        rc = ckpt_save(snap, &t->cfg, mae_params(t->model), state, t->exp_avg, t->exp_avg_sq, err, errlen);
        if (rc == 0) {
            snprintf(tmp, sizeof tmp, "%s/.checkpoint.link.%d", t->run_dir, (int)getpid());
            unlink(tmp);
            if (link(snap, tmp) == 0 && rename(tmp, t->ckpt_path) == 0) {
                int dfd = open(t->run_dir, O_RDONLY);
                if (dfd >= 0) { fsync(dfd); close(dfd); }
            } else {
                unlink(tmp);
                rc = ckpt_save(t->ckpt_path, &t->cfg, mae_params(t->model), state, t->exp_avg, t->exp_avg_sq, err, errlen);
            }
            prune_snapshots(t->run_dir, t->rs.keep);
        }
    } else {
        rc = ckpt_save(t->ckpt_path, &t->cfg, mae_params(t->model), state, t->exp_avg, t->exp_avg_sq, err, errlen);
    }
    free(state);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// Flags

static const char *SYNOPSIS = "--data DIR [--out RUN] [flags]";

static int parse_args(int argc, char **argv, Args *a, Flag *flags, int *nflags_out) {
    memset(a, 0, sizeof *a);
    a->preset = "tiny"; a->channels = "auto"; a->pos = "learned"; a->augment = "crop"; a->pixel_norm = "dataset";
    a->img = 32; a->patch = 4; a->mask_ratio = 0.75f; a->blr = 3e-3f; a->wd = 0.05f; a->val_frac = 0.05f;
    a->steps = 1000; a->batch = 64; a->warmup = -1; a->log_every = 10; a->keep = 2; a->cache_mb = 2048;
    a->val_max = 1000;
    Flag f[] = {
        {"--data", FLAG_STR, &a->data, 0, 0, NULL, "folder of images (searched recursively)", "DIR", 0},
        {"--out", FLAG_STR, &a->out, 0, 0, NULL, "run folder (default runs/<timestamp>)", "RUN", 0},
        {"--resume", FLAG_STR, &a->resume, 0, 0, NULL, "continue a run (its folder or a checkpoint file)", "RUN_OR_FILE", 0},
        {"--preset", FLAG_CHOICE, &a->preset, 0, 0, "tiny|small|base", "model size (default tiny)", NULL, 0},
        {"--img", FLAG_INT, &a->img, 1, 8192, NULL, "image size (default 32)", "N", 0},
        {"--patch", FLAG_INT, &a->patch, 1, 8192, NULL, "patch size (default 4)", "N", 0},
        {"--channels", FLAG_CHOICE, &a->channels, 0, 0, "auto|1|3", "1 grey, 3 RGB, auto: 1 when every image is grey", NULL, 0},
        {"--dim", FLAG_INT, &a->dim, 1, 16384, NULL, "encoder width (preset)", "N", 0},
        {"--depth", FLAG_INT, &a->depth, 1, 256, NULL, "encoder blocks (preset)", "N", 0},
        {"--heads", FLAG_INT, &a->heads, 1, 1024, NULL, "encoder heads (preset)", "N", 0},
        {"--dec-dim", FLAG_INT, &a->dec_dim, 1, 16384, NULL, "decoder width (preset)", "N", 0},
        {"--dec-depth", FLAG_INT, &a->dec_depth, 0, 256, NULL, "decoder blocks (preset)", "N", 0},
        {"--dec-heads", FLAG_INT, &a->dec_heads, 1, 1024, NULL, "decoder heads (preset)", "N", 0},
        {"--mask-ratio", FLAG_FLOAT, &a->mask_ratio, 0.0, 0.99, NULL, "fraction of patches removed (default 0.75)", "R", 0},
        {"--norm-pix", FLAG_BOOL, &a->norm_pix, 0, 0, NULL, "loss on per-patch normalised pixels", NULL, 0},
        {"--pos", FLAG_CHOICE, &a->pos, 0, 0, "learned|fixed", "position embeddings trained or frozen sin-cos (default learned)", NULL, 0},
        {"--pixel-norm", FLAG_CHOICE, &a->pixel_norm, 0, 0, "dataset|imagenet|none", "pixel mean/std (default: measured on the data)", NULL, 0},
        {"--augment", FLAG_CHOICE, &a->augment, 0, 0, "crop|flip|none", "training augmentation (default crop)", NULL, 0},
        {"--steps", FLAG_LONG, &a->steps, 1, 1e12, NULL, "optimizer steps (default 1000)", "N", 0},
        {"--epochs", FLAG_FLOAT, &a->epochs, 1e-6, 1e6, NULL, "train for E passes over the data instead of --steps", "E", 0},
        {"--batch", FLAG_INT, &a->batch, 1, 4096, NULL, "images per step (default 64)", "B", 0},
        {"--lr", FLAG_FLOAT, &a->lr, 0.0, 10.0, NULL, "learning rate (default blr * batch / 256)", "LR", 0},
        {"--blr", FLAG_FLOAT, &a->blr, 0.0, 10.0, NULL, "base learning rate (default 3e-3)", "LR", 0},
        {"--min-lr", FLAG_FLOAT, &a->min_lr, 0.0, 10.0, NULL, "final learning rate of the cosine (default 0)", "LR", 0},
        {"--warmup-steps", FLAG_LONG, &a->warmup, 0, 1e12, NULL, "linear warm-up steps (default 5% of the run)", "N", 0},
        {"--wd", FLAG_FLOAT, &a->wd, 0.0, 10.0, NULL, "AdamW weight decay on weight matrices (default 0.05)", "WD", 0},
        {"--clip", FLAG_FLOAT, &a->clip, 0.0, 1e6, NULL, "clip the global gradient norm (0: off, default)", "NORM", 0},
        {"--seed", FLAG_LONG, &a->seed, 0, 9e18, NULL, "random seed (default 0)", "S", 0},
        {"--threads", FLAG_INT, &a->threads, 1, 1024, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--val-frac", FLAG_FLOAT, &a->val_frac, 0.0, 0.9, NULL, "held-out fraction, by a hash of the path (default 0.05)", "F", 0},
        {"--val-max", FLAG_INT, &a->val_max, 1, 1000000, NULL, "at most this many held-out images per evaluation (default 1000)", "N", 0},
        {"--eval-every", FLAG_LONG, &a->eval_every, 1, 1e12, NULL, "validate every N steps (default: 10 times a run)", "N", 0},
        {"--ckpt-every", FLAG_LONG, &a->ckpt_every, 1, 1e12, NULL, "checkpoint every N steps (default: as --eval-every)", "N", 0},
        {"--keep", FLAG_INT, &a->keep, 0, 100000, NULL, "checkpoint-<step> snapshots kept (default 2)", "N", 0},
        {"--log-every", FLAG_LONG, &a->log_every, 1, 1e12, NULL, "a log line and metrics row every N steps (default 10)", "N", 0},
        {"--sample-every", FLAG_LONG, &a->sample_every, 1, 1e12, NULL, "reconstruction samples every N steps (default: as --eval-every)", "N", 0},
        {"--cache-mb", FLAG_LONG, &a->cache_mb, 0, 1e7, NULL, "keep decoded images in memory up to this size (default 2048)", "MB", 0},
        {"--max-pixels", FLAG_LONG, &a->max_pixels, 1, 1e12, NULL, "skip images larger than this (default 64 megapixels)", "N", 0},
    };
    int nflags = (int)(sizeof f / sizeof f[0]);
    memcpy(flags, f, sizeof f);
    *nflags_out = nflags;
    int rc = cli_parse("train", SYNOPSIS, flags, nflags, argc, argv, NULL, 0, NULL);
    if (rc != CLI_OK) return rc;
    if (!a->data && !a->resume) { cli_error("train", "--data DIR is required (see vitmae train --help)"); return CLI_USAGE; }
    return CLI_OK;
}

// ---------------------------------------------------------------------------------------------
// Setup

static int build_config(Train *t, Flag *flags, int nflags) {
    Args *a = &t->a;
    MaeConfig *c = &t->cfg;
    mae_config_preset(c, a->preset);
    c->img_size = a->img; c->patch_size = a->patch;
    if (a->dim) c->embed_dim = a->dim;
    if (a->depth) c->depth = a->depth;
    if (a->heads) c->num_heads = a->heads;
    if (a->dec_dim) c->dec_embed_dim = a->dec_dim;
    if (cli_flag(flags, nflags, "--dec-depth")->seen) c->dec_depth = a->dec_depth;
    if (a->dec_heads) c->dec_num_heads = a->dec_heads;
    c->mask_ratio = a->mask_ratio;
    c->norm_pix_loss = a->norm_pix;
    c->pos_learned = strcmp(a->pos, "learned") == 0;
    c->in_chans = !strcmp(a->channels, "1") ? 1 : !strcmp(a->channels, "3") ? 3 : (t->ds.all_grey ? 1 : 3);
    char err[256];
    if (mae_config_check(c, err, sizeof err)) { cli_error("train", "%s", err); return CLI_USAGE; }
    if (mae_len_keep(c, c->mask_ratio) < 1) {
        cli_error("train --mask-ratio", "%g leaves no visible patch of %d", c->mask_ratio, mae_num_patches(c));
        return CLI_USAGE;
    }
    return 0;
}

static int set_pixel_norm(Train *t) {
    MaeConfig *c = &t->cfg;
    const char *mode = t->a.pixel_norm;
    if (!strcmp(mode, "imagenet")) {
        static const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
        if (c->in_chans == 3) { memcpy(c->pixel_mean, mean, sizeof mean); memcpy(c->pixel_std, std, sizeof std); }
        else {   // the grey equivalent of ImageNet's statistics (L = 0.299 R + 0.587 G + 0.114 B)
            c->pixel_mean[0] = 0.299f * mean[0] + 0.587f * mean[1] + 0.114f * mean[2];
            c->pixel_std[0] = 0.299f * std[0] + 0.587f * std[1] + 0.114f * std[2];
        }
        return 0;
    }
    if (!strcmp(mode, "none")) {
        for (int i = 0; i < 3; i++) { c->pixel_mean[i] = 0.0f; c->pixel_std[i] = 1.0f; }
        return 0;
    }
    char err[512];
    if (dataset_pixel_stats(&t->ds, t->train_idx, t->ntrain, 10000, c->img_size, c->in_chans,
                            c->pixel_mean, c->pixel_std, err, sizeof err)) {
        cli_error("train", "%s", err);
        return 1;
    }
    return 0;
}

static int write_config_json(Train *t, char *err, size_t errlen) {
    char *model_json = mae_config_to_json(&t->cfg);
    char *state = run_state_to_json(&t->rs);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "model", cJSON_Parse(model_json ? model_json : "{}"));
    cJSON_AddItemToObject(o, "train", cJSON_Parse(state ? state : "{}"));
    cJSON_AddNumberToObject(o, "train_images", t->ntrain);
    cJSON_AddNumberToObject(o, "val_images", t->nval);
    cJSON_AddNumberToObject(o, "parameters", (double)mae_num_params(&t->cfg));
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    free(model_json);
    free(state);
    char path[4300];
    snprintf(path, sizeof path, "%s/config.json", t->run_dir);
    size_t n = text ? strlen(text) : 0;
    char *with_nl = text ? realloc(text, n + 2) : NULL;
    if (!with_nl) { free(text); snprintf(err, errlen, "out of memory"); return -1; }
    with_nl[n] = '\n'; with_nl[n + 1] = 0;
    int rc = write_text_file(path, with_nl, err, errlen);
    free(with_nl);
    return rc;
}

// Allocates every buffer the steps use, once.
static int alloc_buffers(Train *t) {
    size_t B = (size_t)t->rs.batch, img = (size_t)t->S * t->S * t->C;
    t->pixels = malloc(B * img * sizeof(float));
    t->images = malloc(B * img * sizeof(float));
    t->recon = malloc(img * sizeof(float));
    t->noise = malloc(B * t->L * sizeof(float));
    t->ids_keep = malloc(B * t->L * sizeof(int));
    t->batch_items = malloc(B * sizeof(int));
    t->perm[0] = malloc(((size_t)t->ntrain + 1) * sizeof(int));
    t->perm[1] = malloc(((size_t)t->ntrain + 1) * sizeof(int));
    t->removed = malloc((size_t)t->L);
    t->patch_err = malloc((size_t)t->L * sizeof(float));
    t->perm_epoch[0] = t->perm_epoch[1] = -1;
    return t->pixels && t->images && t->recon && t->noise && t->ids_keep && t->batch_items && t->perm[0] &&
           t->perm[1] && t->removed && t->patch_err ? 0 : -1;
}

static void train_free(Train *t) {
    free(t->pixels); free(t->images); free(t->recon); free(t->noise); free(t->ids_keep);
    free(t->batch_items); free(t->perm[0]); free(t->perm[1]); free(t->removed); free(t->patch_err);
    free(t->exp_avg); free(t->exp_avg_sq);
    free(t->train_idx); free(t->val_idx);
    if (t->model) mae_free(t->model);
    if (t->metrics) fclose(t->metrics);
    history_free(&t->hist);
    dataset_free(&t->ds);
}

// --resume RUN_OR_FILE: a folder means its checkpoint.safetensors.
static void resume_path(const char *arg, char *path, size_t n, char *dir, size_t dn) {
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(path, n, "%s/checkpoint.safetensors", arg);
        snprintf(dir, dn, "%s", arg);
    } else {
        snprintf(path, n, "%s", arg);
        const char *slash = strrchr(arg, '/');
        if (slash) snprintf(dir, dn, "%.*s", (int)(slash - arg), arg);
        else snprintf(dir, dn, ".");
    }
}

// ---------------------------------------------------------------------------------------------
// The command

static int setup(Train *t, Flag *flags, int nflags) {
    Args *a = &t->a;
    char err[1024];
    const char *data = a->data;
    int resuming = a->resume != NULL;
    if (resuming) {
        char path[4096], dir[4096];
        resume_path(a->resume, path, sizeof path, dir, sizeof dir);
        Checkpoint ck;
        memset(&ck, 0, sizeof ck);
        if (ckpt_load(path, &ck, err, sizeof err)) { fprintf(stderr, "vitmae: %s\n", err); return 1; }
        if (!ck.train_state || !ck.exp_avg || !ck.exp_avg_sq || !ck.has_decoder) {
            ckpt_free(&ck);
            cli_error(path, "cannot resume: no training state in this checkpoint (it loads for inference only)");
            return 1;
        }
        if (run_state_from_json(ck.train_state, &t->rs, err, sizeof err)) {
            ckpt_free(&ck);
            cli_error(path, "cannot resume: %s", err);
            return 1;
        }
        t->cfg = ck.cfg;
        snprintf(t->run_dir, sizeof t->run_dir, "%s", a->out ? a->out : dir);
        if (!data) data = t->rs.data;
        t->model = mae_create(&t->cfg, t->rs.batch, err, sizeof err);
        if (!t->model) { ckpt_free(&ck); cli_error("train", "%s", err); return 1; }
        size_t np = mae_num_params(&t->cfg);
        memcpy(mae_params(t->model), ck.params, np * sizeof(float));
        t->exp_avg = ck.exp_avg; t->exp_avg_sq = ck.exp_avg_sq;
        ck.exp_avg = ck.exp_avg_sq = NULL;
        ckpt_free(&ck);
        printf("resuming %s at step %ld of %ld\n", path, t->rs.step, t->rs.total_steps);
    } else if (a->out) {
        snprintf(t->run_dir, sizeof t->run_dir, "%s", a->out);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[64];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(t->run_dir, sizeof t->run_dir, "runs/%s", stamp);
    }

    // The data: scanned and decoded once (cached in memory when it fits).
    DatasetOptions opt = {.max_pixels = a->max_pixels, .work_size = 2 * (resuming ? t->cfg.img_size : a->img),
                          .cache_mb = a->cache_mb, .lazy = 1};
    if (dataset_scan(data, &opt, &t->ds, err, sizeof err)) { cli_error(data, "%s", err); return 1; }
    for (int i = 0; i < t->ds.nskipped && i < 20; i++)
        fprintf(stderr, "vitmae: skipped %s: %s\n", t->ds.skipped[i].path, t->ds.skipped[i].reason);
    if (t->ds.nskipped > 20) fprintf(stderr, "vitmae: ... and %d more skipped (vitmae data lists them)\n", t->ds.nskipped - 20);
    if (t->ds.n == 0) {
        cli_error(data, "no decodable image (%d skipped, %d ignored)", t->ds.nskipped, t->ds.nignored);
        return 1;
    }
    float val_frac = resuming ? t->rs.val_frac : a->val_frac;
    if (dataset_split(&t->ds, val_frac, &t->train_idx, &t->ntrain, &t->val_idx, &t->nval) || t->ntrain == 0) {
        cli_error(data, "no training image left after holding out %g for validation", val_frac);
        return 1;
    }

    if (!resuming) {
        int rc = build_config(t, flags, nflags);
        if (rc) return rc;
        RunState *r = &t->rs;
        r->batch = a->batch;
        r->seed = a->seed;
        r->total_steps = a->epochs > 0 ? (long)ceil((double)a->epochs * t->ntrain / a->batch) : a->steps;
        if (r->total_steps < 1) r->total_steps = 1;
        r->warmup = a->warmup >= 0 ? a->warmup : (long)(0.05 * r->total_steps);
        r->lr = cli_flag(flags, nflags, "--lr")->seen ? a->lr : a->blr * a->batch / 256.0f;
        r->min_lr = a->min_lr; r->wd = a->wd; r->clip = a->clip;
        r->mask_ratio = a->mask_ratio; r->val_frac = a->val_frac; r->val_max = a->val_max;
        snprintf(r->augment, sizeof r->augment, "%s", a->augment);
        snprintf(r->data, sizeof r->data, "%s", data);
        r->eval_every = a->eval_every ? a->eval_every : (r->total_steps >= 10 ? r->total_steps / 10 : 1);
        r->ckpt_every = a->ckpt_every ? a->ckpt_every : r->eval_every;
        r->sample_every = a->sample_every ? a->sample_every : r->eval_every;
        r->log_every = a->log_every;
        r->keep = a->keep;
    } else {
        // Cadence flags given on resume apply; what decides the weights comes from the checkpoint.
        if (cli_flag(flags, nflags, "--log-every")->seen) t->rs.log_every = a->log_every;
        if (cli_flag(flags, nflags, "--eval-every")->seen) t->rs.eval_every = a->eval_every;
        if (cli_flag(flags, nflags, "--ckpt-every")->seen) t->rs.ckpt_every = a->ckpt_every;
        if (cli_flag(flags, nflags, "--sample-every")->seen) t->rs.sample_every = a->sample_every;
        if (cli_flag(flags, nflags, "--keep")->seen) t->rs.keep = a->keep;
    }
    t->S = t->cfg.img_size; t->C = t->cfg.in_chans; t->L = mae_num_patches(&t->cfg);
    t->K = mae_len_keep(&t->cfg, t->rs.mask_ratio);

    // Memory: refuse before allocating what cannot fit.
    size_t need = mae_bytes_needed(&t->cfg, t->rs.batch) +
                  (size_t)t->rs.batch * t->S * t->S * t->C * 2 * sizeof(float);
    long have = cpu_physical_memory_bytes();
    if (have > 0 && (double)need > 0.9 * (double)have) {
        cli_error("train", "the model needs %zu bytes (%.2f GiB) for batch %d at %dx%d; this machine has %.2f GiB",
                  need, need / 1073741824.0, t->rs.batch, t->S, t->S, have / 1073741824.0);
        return 2;
    }

    // The run folder must take files before any work is done.
    char samples[4200];
    snprintf(samples, sizeof samples, "%s/samples", t->run_dir);
    if (mkdir_p(t->run_dir, err, sizeof err) || mkdir_p(samples, err, sizeof err) ||
        check_writable(t->run_dir, err, sizeof err)) {
        cli_error("train --out", "%s", err);
        return 1;
    }
    remove_stale_temp_files(t->run_dir);
    snprintf(t->ckpt_path, sizeof t->ckpt_path, "%s/checkpoint.safetensors", t->run_dir);

    if (!resuming) {
        int rc = set_pixel_norm(t);
        if (rc) return rc;
        t->model = mae_create(&t->cfg, t->rs.batch, err, sizeof err);
        if (!t->model) { cli_error("train", "%s", err); return 1; }
        Rng init;
        rng_seed(&init, (uint64_t)t->rs.seed);
        mae_init_weights(t->model, &init);
        size_t np = mae_num_params(&t->cfg);
        t->exp_avg = calloc(np, sizeof(float));
        t->exp_avg_sq = calloc(np, sizeof(float));
        if (!t->exp_avg || !t->exp_avg_sq) { cli_error("train", "out of memory for the AdamW moments"); return 1; }
    }
    t->tensors = mae_tensors(t->model, &t->ntensors);
    if (alloc_buffers(t)) { cli_error("train", "out of memory for the batch buffers"); return 1; }

    if (write_config_json(t, err, sizeof err)) { cli_error("train", "%s", err); return 1; }
    char metrics[4200];
    snprintf(metrics, sizeof metrics, "%s/metrics.csv", t->run_dir);
    t->metrics = metrics_open(metrics, resuming ? t->rs.step : 0, err, sizeof err);
    if (!t->metrics) { cli_error("train", "%s", err); return 1; }
    history_reserve(&t->hist, 256);
    if (resuming) history_load(&t->hist, metrics);

    printf("vitmae train: %d train / %d val images from %s; model %s %dx%dx%d patch %d, %zu parameters\n",
           t->ntrain, t->nval, data, t->a.preset, t->S, t->S, t->C, t->cfg.patch_size, mae_num_params(&t->cfg));
    printf("  %ld steps of batch %d, lr %.3g (warm-up %ld), mask %.2f, augment %s, pixel mean/std %.4f/%.4f, %d threads\n"
           "  run folder %s\n", t->rs.total_steps, t->rs.batch, t->rs.lr, t->rs.warmup, t->rs.mask_ratio,
           t->rs.augment, t->cfg.pixel_mean[0], t->cfg.pixel_std[0], omp_get_max_threads(), t->run_dir);
    fflush(stdout);
    return 0;
}

// Validation, samples and curves at a given step; appends the row to metrics.csv.
static int periodic_outputs(Train *t, MetricsRow *row, int do_eval, int do_samples, char *err, size_t errlen) {
    if (do_eval) {
        if (evaluate(t, &row->val_loss, &row->val_psnr, err, errlen)) return -1;
    }
    if (metrics_write(t->metrics, row)) { snprintf(err, errlen, "%s/metrics.csv: write failed", t->run_dir); return -1; }
    history_add(&t->hist, row->step, row->loss, row->lr, row->val_loss);
    if (do_samples && write_samples(t, row->step, err, errlen)) return -1;
    if (do_eval && write_curves(t, err, errlen)) return -1;
    return 0;
}

int cmd_train(int argc, char **argv) {
    Train *t = calloc(1, sizeof *t);
    if (!t) { cli_error("train", "out of memory"); return 1; }
    Flag flags[64];
    int nflags = 0;
    int rc = parse_args(argc, argv, &t->a, flags, &nflags);
    if (rc != CLI_OK) { free(t); return rc == CLI_HELP ? 0 : 2; }
    if (t->a.threads) omp_set_num_threads(t->a.threads);
    rc = setup(t, flags, nflags);
    if (rc) { train_free(t); free(t); return rc; }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    char err[1024];
    RunState *r = &t->rs;
    Augment aug = AUGMENT_CROP;
    augment_parse(r->augment, &aug);
    Progress prog;
    progress_init(&prog, stdout, r->step, r->total_steps, r->log_every);
    double session_start = now_seconds(), interval_busy = 0;
    double interval_loss = 0;
    int interval_n = 0;
    uint64_t keys[4096];
    int B = r->batch;
    // Fault injection for the tests: VITMAE_FAULT_NAN_STEP=N makes the loss of step N a NaN.
    const char *fault = getenv("VITMAE_FAULT_NAN_STEP");
    long fault_nan_step = fault ? strtol(fault, NULL, 10) : -1;
    for (int k = 0; k < B; k++) keys[k] = (uint64_t)k;
    rc = 0;
    if (r->step == 0) {   // the untrained model's validation loss: where the curves start
        MetricsRow row = {0, 0.0, lr_at(0, r->total_steps, r->warmup, r->lr, r->min_lr), NAN, NAN, NAN, NAN, 0.0};
        if (periodic_outputs(t, &row, 1, 0, err, sizeof err)) { cli_error("train", "%s", err); rc = 1; }
        else if (isfinite(row.val_loss))
            progress_message(&prog, stdout, "step 0: val loss %.4f, val PSNR %.2f dB (masked patches)",
                             row.val_loss, row.val_psnr);
    }
    while (rc == 0 && r->step < r->total_steps && !stop_requested) {
        double t0 = now_seconds();
        long step = r->step;
        for (int k = 0; k < B; k++) {
            long pos = step * B + k;
            const int *perm = epoch_perm(t, pos / t->ntrain);
            t->batch_items[k] = t->train_idx[perm[pos % t->ntrain]];
        }
        if (dataset_load_batch(&t->ds, t->batch_items, B, t->S, t->C, aug, (uint64_t)r->seed, (uint64_t)step,
                               t->images, err, sizeof err)) {
            progress_end(&prog, stdout);
            fprintf(stderr, "vitmae: %s\n", err);
            rc = 1;
            break;
        }
        pixels_normalise(&t->cfg, t->images, (long)B * t->S * t->S);
        masks_for(t, SALT_MASK, (uint64_t)step, B, keys, t->ids_keep);
        float lr = lr_at(step, r->total_steps, r->warmup, r->lr, r->min_lr);
        mae_zero_grads(t->model);
        float loss = mae_forward(t->model, t->images, t->ids_keep, B, t->K);
        if (fault_nan_step == step + 1) loss = NAN;
        if (!isfinite(loss)) {
            progress_end(&prog, stdout);
            cli_error("train", "loss is %s at step %ld (lr %.3g); stopped; the last good checkpoint is %s",
                      isnan(loss) ? "NaN" : "infinite", step + 1, lr, t->ckpt_path);
            rc = 1;
            break;
        }
        mae_backward(t->model);
        if (r->clip > 0) grad_clip(t->tensors, t->ntensors, mae_grads(t->model), r->clip);
        adamw_step(t->tensors, t->ntensors, mae_params(t->model), mae_grads(t->model), t->exp_avg,
                   t->exp_avg_sq, lr, r->wd, step + 1);
        r->step++;
        double t1 = now_seconds();
        interval_busy += t1 - t0;
        interval_loss += loss;
        interval_n++;
        progress_update(&prog, stdout, r->step, loss, lr, interval_busy > 0 ? interval_n * B / interval_busy : 0);

        int last = r->step == r->total_steps;
        int do_log = r->step % r->log_every == 0 || last;
        int do_eval = r->step % r->eval_every == 0 || last;
        int do_samples = r->step % r->sample_every == 0 || last;
        if (do_log || do_eval || do_samples) {
            MetricsRow row = {r->step, (double)r->step * B / t->ntrain, lr, interval_loss / interval_n, NAN, NAN,
                              interval_busy > 0 ? interval_n * B / interval_busy : NAN,
                              r->elapsed_s + (t1 - session_start)};
            if (periodic_outputs(t, &row, do_eval, do_samples, err, sizeof err)) {
                progress_end(&prog, stdout);
                cli_error("train", "%s", err);
                rc = 1;
                break;
            }
            if (do_eval && isfinite(row.val_loss))
                progress_message(&prog, stdout, "step %ld: val loss %.4f, val PSNR %.2f dB (masked patches)",
                                 r->step, row.val_loss, row.val_psnr);
            interval_loss = 0; interval_n = 0; interval_busy = 0;
        }
        if (r->step % r->ckpt_every == 0 && !last) {
            r->elapsed_s += now_seconds() - session_start;
            session_start = now_seconds();
            if (save_checkpoint(t, 1, err, sizeof err)) {
                progress_end(&prog, stdout);
                fprintf(stderr, "vitmae: %s\n", err);
                rc = 1;
                break;
            }
        }
    }
    progress_end(&prog, stdout);
    if (rc == 0) {
        r->elapsed_s += now_seconds() - session_start;
        if (save_checkpoint(t, 1, err, sizeof err)) { fprintf(stderr, "vitmae: %s\n", err); rc = 1; }
        else if (stop_requested && r->step < r->total_steps)
            printf("interrupted at step %ld of %ld; saved %s (continue with --resume %s)\n", r->step,
                   r->total_steps, t->ckpt_path, t->run_dir);
        else
            printf("done: %ld steps in %.1f s; checkpoint %s\n", r->step, r->elapsed_s, t->ckpt_path);
    }
    train_free(t);
    free(t);
    return rc;
}
