// The run folder outputs of `vitmae train` besides checkpoints: config.json, metrics.csv,
// validation, samples and curves. See cmd/train_out.h.
#include "cmd/train_out.h"
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "cmd/output.h"
#include "cmd/runfolder.h"
#include "cmd/train_state.h"
#include "core/masking.h"
#include "core/version.h"
#include "infer/recon.h"
#include "io/files.h"
#include "io/json.h"
#include "viz/panel.h"
#include "viz/viz.h"


// ---------------------------------------------------------------------------------------------
// The run folder

int train_out_prepare(const char *run_dir, OutputMade *made, char *err, size_t errlen) {
    // made keeps what an earlier try made above RUN (cmd/output.h). samples/ waits for its first sheet
    // (write_samples): made here, a run stopped or failed before any sheet left it behind, empty, in a
    // run folder that holds a result and stays.
    if (run_folder_names_fit(run_dir, err, errlen)) return -1;
    if (output_mkdir_made(run_dir, made, err, errlen) || output_check_writable(run_dir, err, errlen)) {
        train_out_unmake(made);
        return -1;
    }
    // Anything under samples/'s name but a folder that takes files (a file, a link to one or to nothing,
    // a folder made read-only: a resumed run's folder, or one that gained it since) would fail the
    // first sheet, after steps have run, and so would every resume: refused now, before any, named as
    // docs/interface.md, section 1 names such a path.
    char dir[4220], reason[4200];
    struct stat lst, st;
    snprintf(dir, sizeof dir, "%s/samples", run_dir);
    if (lstat(dir, &lst) != 0) return 0;   // made with the first sheet
    const char *what = S_ISLNK(lst.st_mode) ? "link" : "file";
    int bad = 0;
    if (stat(dir, &st) != 0) {   // a link to nothing, or a loop of links
        snprintf(err, errlen, "%s: %s: the sample sheets go into a folder of this name (move the link away)", dir,
                 file_path_reason(dir, errno, reason, sizeof reason));
        bad = 1;
    } else if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a folder: the sample sheets go into a folder of this name (move the %s away)", dir, what);
        bad = 1;
    } else bad = output_check_writable(dir, err, errlen) != 0;   // "RUN/samples: cannot write in this folder: why"
    if (bad) train_out_unmake(made);
    return bad ? -1 : 0;
}

void train_out_unmake(OutputMade *made) { output_mkdir_undo(made); }

int train_out_config(Train *t, const RunState *rs, char *err, size_t errlen) {
    char path[4300];
    snprintf(path, sizeof path, "%s/config.json", t->run_dir);
    char *model_json = mae_config_to_json(&t->cfg);
    char *state = run_state_to_json(rs);
    cJSON *o = cJSON_CreateObject();
    // Every part or none: a part that memory ran out for is a failed write, never a config.json without it.
    cJSON *model = model_json ? cJSON_Parse(model_json) : NULL, *train = state ? cJSON_Parse(state) : NULL;
    int ok = o && model && train && cJSON_AddStringToObject(o, "vitmae_version", vitmae_version());   // the program that wrote the run
    if (ok && (ok = cJSON_AddItemToObject(o, "model", model))) model = NULL;
    if (ok && (ok = cJSON_AddItemToObject(o, "train", train))) train = NULL;
    ok = ok && cJSON_AddNumberToObject(o, "train_images", t->ntrain) && cJSON_AddNumberToObject(o, "val_images", t->nval) &&
         cJSON_AddNumberToObject(o, "parameters", (double)mae_num_params(&t->cfg));
    char *text = ok ? json_print_utf8(o, 1) : NULL;
    cJSON_Delete(o);
    cJSON_Delete(model);
    cJSON_Delete(train);
    free(model_json);
    free(state);
    size_t n = text ? strlen(text) : 0;
    char *with_nl = text ? realloc(text, n + 2) : NULL;
    if (!with_nl) { free(text); snprintf(err, errlen, "%s: out of memory", path); return -1; }
    with_nl[n] = '\n'; with_nl[n + 1] = 0;
    int rc = file_write_atomic(path, with_nl, n + 1, err, errlen);
    free(with_nl);
    return rc;
}

// 1 when item i of ds is a held-out image: ds is the --val folder, or the training folder's own
// held-out part (--val-frac) holds i.
static int held_out(const Train *t, const Dataset *ds, int i) {
    if (ds != &t->ds) return 1;
    if (t->vds != &t->ds) return 0;
    for (int k = 0; k < t->nval; k++)
        if (t->val_idx[k] == i) return 1;
    return 0;
}

void train_out_report_broken(Train *t, const Dataset *ds, int stopping) {
    DataSkip broken[8];
    int items[8], nb;
    while ((nb = dataset_take_broken(ds, broken, items, 8)) > 0)
        for (int i = 0; i < nb; i++) {
            if (ds == &t->ds)   // under mpirun: said once for the job, by rank 0
                run_broken_note(&t->notes, t->ds.n, items[i], broken[i].path, broken[i].reason,
                                run_broken_held(held_out(t, ds, items[i]), stopping, t->rs.batch),
                                t->gone_dirs, sizeof t->gone_dirs);
            else
                run_report_broken_file(broken[i].path, broken[i].reason, BROKEN_VAL_FOLDER, -1, t->gone_dirs,
                                       sizeof t->gone_dirs);
            free(broken[i].path);
            free(broken[i].reason);
        }
}

// ---------------------------------------------------------------------------------------------
// Validation: masked loss (model units) and PSNR (pixel units) on the held-out images, with the
// same mask for image i at every evaluation.

static int load_eval_batch(Train *t, const Dataset *ds, const int *items, int n, char *err, size_t errlen) {
    if (dataset_load_batch(ds, items, n, t->S, t->C, AUGMENT_NONE, 0, 0, t->pixels, err, errlen)) return -1;
    size_t count = (size_t)n * t->S * t->S * t->C;
    memcpy(t->images, t->pixels, count * sizeof(float));
    pixels_normalise(&t->cfg, t->images, (long)n * t->S * t->S);
    return 0;
}

// The held-out images an evaluation scores: all of them, or with more than val_max, image i * nval /
// val_max for each i < val_max. The folders are scanned class by class, so the first val_max were the
// first classes only (`make demo`'s 3,000 held out of Fashion-MNIST at the default 1000: three classes
// and a third of ten). Made at the first evaluation; val_max and the held-out images are fixed for the
// session from its start.
static int eval_images(Train *t, int nval, char *err, size_t errlen) {
    if (t->eval_idx && t->neval == nval) return 0;
    free(t->eval_idx);
    t->neval = 0;
    t->eval_idx = malloc((size_t)nval * sizeof *t->eval_idx);
    if (!t->eval_idx) { snprintf(err, errlen, "out of memory"); return -1; }
    for (int i = 0; i < nval; i++) t->eval_idx[i] = t->val_idx[(long)i * t->nval / nval];
    t->neval = nval;
    return 0;
}

// Images found broken while validating are left out of it (docs/data.md) and reported once.
// stop (NULL: none): once set, the validation ends before its next batch, RUN_VALIDATION_STOPPED.
static int evaluate(Train *t, double *val_loss, double *val_psnr, const volatile sig_atomic_t *stop, char *err,
                    size_t errlen) {
    int nval = t->nval < t->rs.val_max ? t->nval : t->rs.val_max;
    *val_loss = NAN; *val_psnr = NAN;
    if (nval == 0) return 0;
    if (eval_images(t, nval, err, errlen)) return -1;
    double loss_sum = 0, mse_sum = 0;
    size_t img_floats = (size_t)t->S * t->S * t->C;
    int pos[4096], used = 0, rc = 0;
    file_test_gate("VITMAE_FAULT_HOLD_BEFORE_VALIDATION");   // tests: a class folder gone before its reads
    // In chunks of one gradient group: the same numbers for any process count (cmd/train_state.h).
    for (int b0 = 0, end; b0 < nval && !rc; ) {
        if (stop && *stop) { train_out_report_broken(t, t->vds, 0); return RUN_VALIDATION_STOPPED; }
        int n = dataset_next_chunk(t->vds, t->eval_idx, nval, b0, t->per, pos, &end);
        if (n == 0) { b0 = end; continue; }
        for (int k = 0; k < n; k++) t->batch_items[k] = t->eval_idx[pos[k]];
        rc = load_eval_batch(t, t->vds, t->batch_items, n, err, errlen);
        if (dataset_any_broken(t->vds, t->batch_items, n)) { rc = 0; continue; }   // the chunk again, without it
        if (rc) break;
        run_val_masks(t->rs.seed, used, n, t->L, t->K, t->noise, t->ids_keep, t->mask_scratch);   // image used + k's own mask
        float loss = mae_forward(t->model, t->images, t->ids_keep, n, t->K);
        loss_sum += (double)loss * n;
        const float *pred = mae_pred(t->model);
        size_t pd = (size_t)mae_patch_dim(&t->cfg);
        for (int k = 0; k < n; k++) {
            recon_removed_from_keep(t->ids_keep + (size_t)k * t->K, t->K, t->L, t->removed);
            recon_pixels(&t->cfg, pred + (size_t)k * t->L * pd, t->images + k * img_floats, t->removed, t->recon);
            mse_sum += recon_masked_mse(&t->cfg, t->recon, t->pixels + k * img_floats, t->removed, NULL);
        }
        used += n;
        b0 = end;
        if (stop) file_test_gate("VITMAE_FAULT_HOLD_IN_VALIDATION");   // tests: a stop during the validation
    }
    if ((rc || used < nval) && run_val_folder_gone(t->vds, err, errlen)) return -1;
    train_out_report_broken(t, t->vds, 0);
    if (rc) return -1;
    if (used == 0) run_report_no_validation(&t->val_none_said, nval, "val_loss and val_psnr");
    if (used > 0) {
        *val_loss = loss_sum / used;
        *val_psnr = psnr_from_mse(mse_sum / used);
    }
    return 0;
}

// One colour: every pixel equals the first (px [n pixels][c]).
static int is_flat(const float *px, size_t n, int c) {
    for (size_t i = (size_t)c; i < n * c; i++)
        if (px[i] != px[i % c]) return 0;
    return 1;
}

int train_out_pick_samples(Train *t, char *err, size_t errlen) {
    const int *src = t->nval ? t->val_idx : t->train_idx;
    int total = t->nval ? t->nval : t->ntrain;
    t->sds = t->nval ? t->vds : &t->ds;
    int want = total < TRAIN_SAMPLE_IMAGES ? total : TRAIN_SAMPLE_IMAGES;
    // Candidates: first the positions spread over the split (scan order groups images by class, so
    // every class has a chance to show), then the rest in order; at most 8 per panel row are tried.
    int tries = want * 8 < total ? want * 8 : total, spread = want, flat[TRAIN_SAMPLE_IMAGES], nflat = 0;
    t->nsample = 0;
    for (int c = 0; c < tries && t->nsample < want; c++) {
        int pos = c < spread ? (int)((long)c * total / spread) : c - spread;
        int item = src[pos], dup = 0;
        for (int k = 0; k < t->nsample; k++) dup |= t->sample_idx[k] == item;
        for (int k = 0; k < nflat; k++) dup |= flat[k] == item;
        if (dup) continue;
        if (dataset_load_batch(t->sds, &item, 1, t->S, t->C, AUGMENT_NONE, 0, 0, t->pixels, err, errlen)) {
            if (t->sds->lazy) continue;   // broken past its header: not shown
            return -1;
        }
        if (!is_flat(t->pixels, (size_t)t->S * t->S, t->C)) t->sample_idx[t->nsample++] = item;
        else if (nflat < want) flat[nflat++] = item;
    }
    // Too few that are not flat: the flat ones that decode fill the rows (none: no sample panels).
    for (int k = 0; k < nflat && t->nsample < want; k++) t->sample_idx[t->nsample++] = flat[k];
    return 0;
}

// RUN/samples/step-<step>.png: the images train_out_pick_samples chose, with fixed masks, one
// five-panel row each, under a title line.
// An image that broke since it was picked (a file changed during the run) is left out from then on.
static int write_samples(Train *t, long step, char *err, size_t errlen) {
    int n = t->nsample;
    if (n == 0) return 0;
    uint64_t keys[TRAIN_SAMPLE_IMAGES];
    for (int k = 0; k < n; k++) { t->batch_items[k] = t->sample_idx[k]; keys[k] = (uint64_t)k; }
    int rc = load_eval_batch(t, t->sds, t->batch_items, n, err, errlen);
    if (dataset_any_broken(t->sds, t->batch_items, n)) {   // (a lazy load shows another image in its place)
        int m = 0;
        for (int k = 0; k < n; k++)
            if (!dataset_is_broken(t->sds, t->sample_idx[k])) t->sample_idx[m++] = t->sample_idx[k];
        t->nsample = m;
        train_out_report_broken(t, t->sds, 0);
        return write_samples(t, step, err, errlen);
    }
    if (rc) return -1;
    masks_seeded((uint64_t)t->rs.seed ^ SALT_VAL, 0, keys, n, t->L, t->K, t->noise, t->ids_keep, t->mask_scratch);
    size_t pd = (size_t)mae_patch_dim(&t->cfg), img_floats = (size_t)t->S * t->S * t->C;
    Canvas rows[TRAIN_SAMPLE_IMAGES];
    memset(rows, 0, sizeof rows);
    int scale = t->S >= 128 ? 1 : (128 + t->S - 1) / t->S, k0 = 0;
    const float *pred = NULL;
    // The sheet's title, above the first row's captions, as reconstruct's panel has one: which step,
    // which images, how much of them is removed.
    char title[200], pct[32];
    panel_percent_text(t->L - t->K, t->L, pct, sizeof pct);
    snprintf(title, sizeof title, "step %ld of %ld: %s images, %s of the patches removed (the same images and "
             "masks at every step)", step, t->rs.total_steps, t->nval ? "validation" : "training", pct);
    for (int k = 0; k < n && rc == 0; k++) {
        if (k % t->per == 0) {   // the model takes one gradient group's images at a time
            int m = n - k < t->per ? n - k : t->per;
            mae_forward(t->model, t->images + k * img_floats, t->ids_keep + (size_t)k * t->K, m, t->K);
            pred = mae_pred(t->model);
            k0 = k;
        }
        recon_removed_from_keep(t->ids_keep + (size_t)k * t->K, t->K, t->L, t->removed);
        recon_pixels(&t->cfg, pred + (size_t)(k - k0) * t->L * pd, t->images + k * img_floats, t->removed, t->recon);
        recon_masked_mse(&t->cfg, t->recon, t->pixels + k * img_floats, t->removed, t->patch_err);
        // Nearest: the model's own pixels, and a sheet a tenth the size of a smooth one (a run
        // keeps one per --sample-every).
        PanelOptions po = {t->S * scale, 0, k == 0, 0.0f, title};
        rc = panel_recon_row(&rows[k], &t->cfg, t->pixels + k * img_floats, t->recon, t->removed,
                             t->patch_err, &po, err, errlen);
    }
    Canvas sheet = {0};
    if (rc == 0) rc = panel_stack(&sheet, rows, n, 4, err, errlen);
    char path[4300], dir[4220];
    snprintf(dir, sizeof dir, "%s/samples", t->run_dir);
    snprintf(path, sizeof path, "%s/step-%ld.png", dir, step);
    if (rc) {   // a row or the sheet that memory ran out for: its line names the file (docs/data.md, "Run folders")
        char why[256];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "%s: %s", path, why);
    }
    if (rc == 0) {
        char stepbuf[32];
        snprintf(stepbuf, sizeof stepbuf, "%ld", step);
        const char *text[] = {"Software", "vitmae", "step", stepbuf, NULL};
        char why[PNG_WRITE_WHY_MAX];   // a folder's name in it whole (data/image.h)
        // samples/ comes with the first sheet, not with the run folder (train_out_prepare), and again
        // when the user deleted it: mkdir, not mkdir -p, so a run folder moved or deleted mid-run is not
        // made anew at its old name. A sheet that fails takes the folder it made with it (while that
        // name is still the folder made here).
        struct stat mine, now;
        int created = mkdir(dir, 0777) == 0, made = created && stat(dir, &mine) == 0;
        if (!made && (created || errno != EEXIST)) {
            char reason[128];
            snprintf(err, errlen, "%s: %s", dir, file_reason(errno, reason, sizeof reason));
            if (created) rmdir(dir);   // made here a moment ago and still empty: no folder without its sheet
            rc = -1;
        } else {
            rc = png_write(path, sheet.px, sheet.w, sheet.h, 3, text, why, sizeof why);
            if (rc) snprintf(err, errlen, "%s: %s", path, why);
            if (rc && made && lstat(dir, &now) == 0 && now.st_dev == mine.st_dev && now.st_ino == mine.st_ino)
                rmdir(dir);
        }
    }
    canvas_free(&sheet);
    for (int k = 0; k < n; k++) canvas_free(&rows[k]);
    return rc;
}


// ---------------------------------------------------------------------------------------------
// RUN/curves.png

static int write_curves(Train *t, char *err, size_t errlen) {
    History *h = &t->hist;
    PlotSeries loss[2] = {
        {"train loss", h->step, h->loss, h->n, 0, {0, 0, 0}},
        {"val loss", h->val_step, h->val_loss, h->nval, 0, {0, 0, 0}},
    };
    PlotOptions lo = {"masked-patch loss", "step", "loss", 1, 1};
    PlotSeries lr = {"learning rate", h->step, h->lr, h->n, 0, {0, 0, 0}};
    viz_palette(2, lr.rgb);
    lr.has_rgb = 1;
    PlotOptions lro = {"learning rate", "step", "lr", 0, 1};
    const PlotPanel panels[] = {{440, loss, 2, &lo}, {200, &lr, 1, &lro}};
    char path[4300];
    snprintf(path, sizeof path, "%s/curves.png", t->run_dir);
    return viz_plot_png(path, 960, panels, 2, err, errlen);
}

int train_out_curves(Train *t, char *err, size_t errlen) { return write_curves(t, err, errlen); }

int train_out_sheet(Train *t, long step, char *err, size_t errlen) { return write_samples(t, step, err, errlen); }

// ---------------------------------------------------------------------------------------------
// Metrics and the outputs of a logged step

int train_out_open_metrics(Train *t, int resuming, char *err, size_t errlen) {
    char metrics[4200];
    snprintf(metrics, sizeof metrics, "%s/metrics.csv", t->run_dir);
    t->metrics = metrics_open(metrics, resuming ? t->rs.step : 0, err, errlen);
    if (!t->metrics) return -1;
    if (resuming) history_load(&t->hist, metrics);
    return 0;
}

int train_out_step(Train *t, MetricsRow *row, int do_eval, int do_samples, const volatile sig_atomic_t *stop,
                   int *logged, char *err, size_t errlen) {
    if (logged) *logged = 0;
    if (do_eval) {
        int rc = evaluate(t, &row->val_loss, &row->val_psnr, stop, err, errlen);
        if (rc) return rc;
    }
    int again = metrics_rejoin_run(&t->metrics, t->run_dir, err, errlen);   // deleted meanwhile: written again
    if (again < 0) return -1;
    if (again) cli_message("warning: %s", err);
    if (metrics_write_run(t->metrics, row, t->run_dir, err, errlen)) return -1;
    if (logged) *logged = 1;
    history_add(&t->hist, (double)row->step, row->loss, row->lr, row->val_loss, row->val_psnr, NULL);
    if (do_samples && write_samples(t, row->step, err, errlen)) return -1;
    if (do_eval && write_curves(t, err, errlen)) return -1;
    return 0;
}
