// `vitmae probe --ckpt FILE|RUN --train DIR --test DIR [flags]`: how well frozen features separate the
// classes of labelled folders (class = first-level sub-folder), by the two standard probes of
// src/infer/probe.h: kNN (always) and a linear probe (--linear). --pixels runs the same probes on the
// raw pixels of the evaluation view instead, the baseline the encoder has to beat.
// Prints top-1 and per-class accuracy (or one JSON object with --json); --out DIR writes
// DIR/confusion-knn.png and DIR/confusion-linear.png.
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/output.h"
#include "cmd/runfolder.h"
#include "cmd/count_progress.h"
#include "core/model.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "data/image.h"
#include "infer/features.h"
#include "infer/probe.h"
#include "io/checkpoint.h"
#include "io/classifier_ckpt.h"
#include "io/files.h"
#include "io/json.h"
#include "viz/confusion.h"
#include "kernels/cpu.h"

enum { PROBE_KNN, PROBE_LINEAR, NPROBES };
static const char *const probe_key[NPROBES] = {"knn", "linear"};

// One labelled folder: files, and labels as indices into the training folder's classes.
typedef struct {
    Dataset ds;
    const char **paths;   // [n] into ds
    int *labels;          // [n]
    long n;
} Labelled;

static void labelled_free(Labelled *l) {
    dataset_free(&l->ds);
    free(l->paths); free(l->labels);
}

// Scans dir and keeps the images that sit in class sub-folders. classes: the training classes to map
// onto (NULL for the training folder itself). Returns 0, or the exit status after printing the error.
// The files the scan skipped and the warning of images outside the classes are kept in *held: said
// once the run's checks have passed (a refused run prints its one line only), or before a failure
// they may explain (no class, one class, a class the training folder lacks).
static int labelled_scan(const char *flag, const char *dir, long max_pixels, const Labelled *classes, Labelled *out,
                         CliHeld *held) {
    char err[CLI_ERR_MAX];
    DatasetOptions opt = {.max_pixels = max_pixels};
    memset(out, 0, sizeof *out);
    struct stat st;
    char reason[4400];   // a link to nothing: its target named (file_path_reason)
    if (stat(dir, &st)) { cli_error(dir, "%s", file_path_reason(dir, errno, reason, sizeof reason)); return 1; }   // as every command: a runtime failure
    if (!S_ISDIR(st.st_mode)) {   // exit 1, as data, train, finetune and eval say "not a folder"
        cli_error(flag, "%s is not a folder: probe needs DIR/<class>/<image> (one sub-folder per class)", dir);
        return 1;
    }
    int src = dataset_scan(dir, &opt, &out->ds, err, sizeof err);
    if (src) { cli_error(dataset_err_what(src, dir), "%s", err); return 1; }
    const Dataset *ds = &out->ds;
    cli_hold_skipped(held, ds);   // as train says them
    run_data_hold_run_folder(held, flag, ds);   // --train RUN where --ckpt RUN was meant (docs/data.md, "Files")
    if (ds->n == 0) {   // a folder with no usable image: exit 1 (docs/interface.md, "Exit status"), as finetune says it
        cli_held_say(held);
        cli_error(dir, "no usable image (%d skipped, %d ignored)", ds->nskipped, ds->nignored);
        return 1;
    }
    if (ds->nclasses == 0) {
        cli_held_say(held);
        cli_error(flag, "%s has no class sub-folders with images: probe needs DIR/<class>/<image> (one sub-folder per class)", dir);
        return 2;
    }
    int bad = utf8_first_invalid(ds->class_names, ds->nclasses);
    if (bad >= 0) { cli_error(dir, UTF8_CLASS_REFUSAL, ds->class_names[bad]); return 2; }
    if (ds->nroot > 0)
        cli_hold(held, NULL, "warning: %s: " ROOT_IMAGES_UNUSED, dir, ds->nroot, ds->nroot == 1 ? "" : "s",
                 ds->nroot == 1 ? "has" : "have", ds->nroot == 1 ? "is" : "are");
    cli_hold_hidden_classes(held, dir, ds->class_names, ds->nclasses);   // as data and finetune say them
    if (!classes && ds->nclasses < 2) {
        char note[4200];
        cli_unused_class_folder_note(dir, ds, note, sizeof note);
        cli_held_say(held);
        cli_error(flag, "%s has one class only ('%s'): a probe needs at least 2 class folders%s", dir, ds->class_names[0],
                  note);
        return 2;
    }
    // Test classes -> training class indices.
    int *map = malloc((size_t)ds->nclasses * sizeof *map);
    out->paths = malloc((size_t)ds->n * sizeof *out->paths);
    out->labels = malloc((size_t)ds->n * sizeof *out->labels);
    if (!map || !out->paths || !out->labels) { free(map); cli_error("probe", "out of memory"); return 1; }
    for (int c = 0; c < ds->nclasses; c++) {
        map[c] = c;
        if (!classes) continue;
        map[c] = -1;
        for (int t = 0; t < classes->ds.nclasses; t++)
            if (!strcmp(ds->class_names[c], classes->ds.class_names[t])) map[c] = t;
        if (map[c] < 0) {
            char note[4200];
            cli_class_folder_note(classes->ds.root, ds->class_names[c], &classes->ds, note, sizeof note);
            cli_held_say(held);
            cli_error(flag, "class '%s' of %s is not a class of the training folder %s%s", ds->class_names[c], dir,
                      classes->ds.root, note);
            free(map);
            return 2;
        }
    }
    for (int i = 0; i < ds->n; i++) {
        if (ds->items[i].cls < 0) continue;
        out->paths[out->n] = ds->items[i].path;
        out->labels[out->n++] = map[ds->items[i].cls];
    }
    free(map);
    return 0;
}

typedef struct {
    int ran;
    int *pred;        // [ntest]
    long *confusion;  // [C][C]
    long correct;
    double top1;
} ProbeResult;

static void score(ProbeResult *r, const Labelled *test, int C) {
    r->correct = 0;
    for (long i = 0; i < test->n; i++) {
        r->confusion[(size_t)test->labels[i] * C + r->pred[i]]++;
        r->correct += r->pred[i] == test->labels[i];
    }
    r->top1 = test->n ? (double)r->correct / test->n : 0;
}

// Accuracy of class c (NaN when the test folder has none of it).
static double class_top1(const ProbeResult *r, int c, int C, long *count) {
    long n = 0;
    for (int j = 0; j < C; j++) n += r->confusion[(size_t)c * C + j];
    *count = n;
    return n ? (double)r->confusion[(size_t)c * C + c] / n : NAN;
}

// DIR/confusion-<probe>.png, written under a temporary name added to files (published with the
// others by the caller); output_png_to removes a partial file on failure.
static int write_confusion(const char *dir, int p, const ProbeResult *r, long ntest, const Dataset *classes,
                           const char *what, FileGroup *files, char *err, size_t errlen) {
    char title[256], path[4096], why[512], tmp[4096 + FILE_TMP_HOST_EXTRA];
    snprintf(title, sizeof title, "%s, %s: top-1 %.4f (%ld/%ld)", p == PROBE_KNN ? "kNN" : "linear probe", what,
             r->top1, r->correct, ntest);
    snprintf(path, sizeof path, "%s/confusion-%s.png", dir, probe_key[p]);
    Canvas cv;
    if (viz_confusion(&cv, r->confusion, classes->nclasses, (const char *const *)classes->class_names, title, why,
                      sizeof why)) {
        snprintf(err, errlen, "%.*s: %s", FILE_NAME_CUT, path, why);
        return -1;
    }
    char text_what[4500];
    snprintf(text_what, sizeof text_what, "%s %s", probe_key[p], what);
    const char *text[] = {"Description", text_what, NULL};
    file_tmp_name_host(path, tmp, sizeof tmp);
    int rc = output_png_to(tmp, cv.px, cv.w, cv.h, 3, text, why, sizeof why);
    canvas_free(&cv);
    if (!rc && file_group_add(files, tmp, path)) { snprintf(why, sizeof why, "out of memory"); rc = -1; }
    if (rc) snprintf(err, errlen, "%.*s: %s", FILE_NAME_CUT, path, why);
    return rc;
}

// weights: "model", "ema" (--ema, as classify --json says it) or NULL (pixels: null).
static void print_json(const ProbeResult *res, const Dataset *classes, long ntrain, long ntest, const char *features,
                       const char *weights, int k, float temperature, float crop_pct, const char *interp) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "features", features);
    if (weights) cJSON_AddStringToObject(root, "weights", weights);
    else cJSON_AddNullToObject(root, "weights");
    cJSON_AddItemToObject(root, "crop_pct", config_float_json(crop_pct));   // the evaluation view
    cJSON_AddStringToObject(root, "interp", interp);
    cJSON_AddNumberToObject(root, "train_images", (double)ntrain);
    cJSON_AddNumberToObject(root, "test_images", (double)ntest);
    cJSON_AddNumberToObject(root, "knn_k", k);
    // The float flag as the user wrote it (0.07, not 0.070000000298; 0.1234567, not "%g"'s 0.123457).
    cJSON_AddItemToObject(root, "knn_temperature", config_float_json(temperature));
    // Every key the interface names is there: a probe not run (the linear one without --linear) is
    // null, as info's absent values are, so that j["linear_top1"] reads in every run (docs/interface.md
    // section 8).
    for (int p = 0; p < NPROBES; p++) {
        char key[32];
        snprintf(key, sizeof key, "%s_top1", probe_key[p]);
        if (!res[p].ran) cJSON_AddNullToObject(root, key);
        else cJSON_AddNumberToObject(root, key, res[p].top1);
    }
    cJSON *cls = cJSON_AddArrayToObject(root, "classes");
    cJSON *per = cJSON_AddObjectToObject(root, "per_class");
    int C = classes->nclasses;
    for (int c = 0; c < C; c++) {
        cJSON_AddItemToArray(cls, cJSON_CreateString(classes->class_names[c]));
        cJSON *o = cJSON_AddObjectToObject(per, classes->class_names[c]);
        long n = 0;
        for (int p = 0; p < NPROBES; p++) {
            char key[32];
            snprintf(key, sizeof key, "%s_top1", probe_key[p]);
            if (!res[p].ran) { cJSON_AddNullToObject(o, key); continue; }
            double a = class_top1(&res[p], c, C, &n);
            if (isnan(a)) cJSON_AddNullToObject(o, key);
            else cJSON_AddNumberToObject(o, key, a);
        }
        cJSON_AddNumberToObject(o, "images", (double)n);
    }
    char *text = json_print_utf8(root, 1);
    cJSON_Delete(root);
    if (text) puts(text);
    cJSON_free(text);
}

static void print_text(const ProbeResult *res, const Dataset *classes, long ntest) {
    int C = classes->nclasses;
    for (int p = 0; p < NPROBES; p++)
        if (res[p].ran)
            printf("%-6s top1 %.4f (%ld/%ld)\n", probe_key[p], res[p].top1, res[p].correct, ntest);
    printf("per class:%*s", 22, "");
    for (int p = 0; p < NPROBES; p++) if (res[p].ran) printf(" %7s", probe_key[p]);
    printf("  images\n");
    // A row per class through cli_out, as data's report: a class name's control characters written
    // out (a tab or a newline in it made a row of two lines or of an extra column), and the whole name,
    // not its first 30 bytes (two classes alike in those read as one).
    for (int c = 0; c < C; c++) {
        char nums[64 * NPROBES + 16];
        int at = 0;
        long n = 0;
        for (int p = 0; p < NPROBES; p++) {
            if (!res[p].ran) continue;
            double a = class_top1(&res[p], c, C, &n);
            if (isnan(a)) at += snprintf(nums + at, sizeof nums - (size_t)at, " %7s", "-");
            else at += snprintf(nums + at, sizeof nums - (size_t)at, " %7.4f", a);
        }
        cli_out("  %s%*s%s  %6ld", classes->class_names[c], cli_pad(classes->class_names[c], 30), "", nums, n);
    }
}

int cmd_probe(int argc, char **argv) {
    const char *ckpt_path = NULL, *train_dir = NULL, *test_dir = NULL, *out_dir = NULL;
    const char *pool_s = "cls", *layer_s = "last", *channels_s = NULL;
    const char *interp = "bilinear";
    int k = 20, linear = 0, pixels = 0, json = 0, img = 0, batch = 64, threads = 0, force = 0, ema = 0, blocks = 1;
    float temperature = 0.07f, crop_pct = 1.0f;
    LinearProbeOptions lopt = LINEAR_PROBE_DEFAULTS;
    long seed = 0, max_pixels = VITMAE_DEFAULT_MAX_PIXELS;
    Flag flags[] = {
        {"--ckpt", FLAG_PATH, &ckpt_path, 0, 0, NULL, "checkpoint (.safetensors, or a run folder: its checkpoint.safetensors; encoder-only is fine); with --pixels its view unless --img/--channels say otherwise", "FILE|RUN", 0},
        {"--train", FLAG_PATH, &train_dir, 0, 0, NULL, "labelled training folder: DIR/<class>/<image> (required)", "DIR", 0},
        {"--test", FLAG_PATH, &test_dir, 0, 0, NULL, "labelled test folder, classes a subset of --train's (required)", "DIR", 0},
        {"--knn", FLAG_INT, &k, 1, 100000, NULL, "neighbours that vote (default 20)", "K", 0},
        {"--temperature", FLAG_FLOAT, &temperature, 1e-6, 1e6, NULL, "kNN vote weight exp(cosine / T) (default 0.07)", "T", 0},
        {"--linear", FLAG_BOOL, &linear, 0, 0, NULL, "also train and score a linear probe (BatchNorm without affine + linear)", NULL, 0},
        {"--pixels", FLAG_BOOL, &pixels, 0, 0, NULL, "probe the raw pixels of the evaluation view instead of encoder features", NULL, 0},
        {"--img", FLAG_INT, &img, 1, MAE_IMG_MAX, NULL, "--pixels: view size in pixels (default: --ckpt's img_size; required without --ckpt)", "S", 0},
        {"--channels", FLAG_CHOICE, &channels_s, 0, 0, "1|3|auto", "--pixels: 1, 3 or auto (1 when every image is grey); default --ckpt's channels, else auto", NULL, 0},
        {"--crop-pct", FLAG_FLOAT, &crop_pct, VIEW_CROP_PCT_MIN, 1.0, NULL, CLI_CROP_PCT_HELP, "F", 0},
        {"--interp", FLAG_CHOICE, &interp, 0, 0, "bilinear|bicubic", CLI_INTERP_HELP, NULL, 0},
        {"--pool", FLAG_CHOICE, &pool_s, 0, 0, FEATURES_POOL_NAMES, "encoder features: cls token (default) or mean of the patch tokens; " FEATURES_NORM_HELP, NULL, 0},
        {"--layer", FLAG_STR, &layer_s, 0, 0, NULL, "encoder block whose tokens are used, 0-based, or last (default)", "N|last", 0},
        {"--blocks", FLAG_INT, &blocks, 1, FEATURES_BLOCKS_MAX, NULL, "encoder features: " FEATURES_BLOCKS_HELP, "K", 0},
        {"--ema", FLAG_BOOL, &ema, 0, 0, NULL, "encoder features: " CLI_EMA_ENCODER_HELP, NULL, 0},
        {"--linear-epochs", FLAG_INT, &lopt.epochs, 1, 100000, NULL, "linear probe: passes over the training features (default 100)", "E", 0},
        {"--linear-batch", FLAG_INT, &lopt.batch, 1, 1 << 20, NULL, "linear probe: rows per SGD step (default 256)", "B", 0},
        {"--linear-lr", FLAG_FLOAT, &lopt.lr, 1e-9, 1e6, NULL, "linear probe: peak learning rate, cosine to 0 (default 0.1)", "LR", 0},
        {"--seed", FLAG_LONG, &seed, 0, RNG_SEED_MAX, NULL, "linear probe: order of the training rows (default 0)", "S", 0},
        {"--json", FLAG_BOOL, &json, 0, 0, NULL, "print one JSON object: knn_top1, linear_top1, classes, per_class, ...", NULL, 0},
        {"--out", FLAG_PATH, &out_dir, 0, 0, NULL, "write confusion-knn.png (and confusion-linear.png) into this folder", "DIR", 0},
        {"--force", FLAG_BOOL, &force, 0, 0, NULL, "replace the confusion matrices of an earlier run in --out", NULL, 0},
        {"--batch", FLAG_INT, &batch, 1, 4096, NULL, "images per forward pass (default 64)", "B", 0},
        {"--threads", FLAG_INT, &threads, 1, CLI_THREADS_MAX, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--max-pixels", FLAG_LONG, &max_pixels, 1, CLI_MAX_PIXELS_MAX, NULL,
         "skip images with more pixels than N (default 67108864 = 2^26)", "N", 0},
    };
    const int nflags = (int)(sizeof flags / sizeof flags[0]);
    const char *synopsis = "--ckpt FILE|RUN --train DIR --test DIR [--knn K] [--temperature T] [--linear] [--pixels] "
                           "[--json] [--out DIR [--force]] [flags]";
    int npos = 0;
    int rc = cli_parse("probe", synopsis, flags, nflags, argc, argv, NULL, 0, &npos);
    if (rc != CLI_OK) return rc == CLI_HELP ? 0 : 2;
    if (!train_dir || !test_dir) { cli_error("probe", "--train DIR and --test DIR are required (see vitmae probe --help)"); return 2; }
    if (!ckpt_path && !(pixels && img)) {
        cli_error("probe", pixels ? "--pixels needs --ckpt FILE|RUN or --img S for the view size" : "--ckpt FILE|RUN is required (see vitmae probe --help)");
        return 2;
    }
    // A run folder stands for its checkpoint.safetensors (docs/interface.md, section 9).
    char ckpt_file[ST_RUN_LATEST_MAX];
    if (ckpt_path) ckpt_path = st_checkpoint_arg(ckpt_path, ckpt_file, sizeof ckpt_file);
    char *const read_dirs[2] = {(char *)train_dir, (char *)test_dir};
    if (out_dir && output_refuse_inside_inputs("probe", out_dir, 1, read_dirs, 2)) return 2;
    if (!pixels && (img || channels_s)) {
        cli_error("probe", "--img and --channels set the view of --pixels; the encoder's view comes from --ckpt");
        return 2;
    }
    // Flags the run would not use are refused, never ignored.
    if (pixels && (cli_flag(flags, nflags, "--pool")->seen || cli_flag(flags, nflags, "--layer")->seen || ema ||
                   cli_flag(flags, nflags, "--blocks")->seen)) {
        cli_error("probe --pixels", "probes the raw pixels; --pool, --layer, --blocks and --ema choose encoder features (give one or the other)");
        return 2;
    }
    static const char *const linear_flags[] = {"--linear-epochs", "--linear-batch", "--linear-lr", "--seed", NULL};
    for (int i = 0; !linear && linear_flags[i]; i++)
        if (cli_flag(flags, nflags, linear_flags[i])->seen) {
            cli_error("probe", "%s sets the linear probe, which runs with --linear only", linear_flags[i]);
            return 2;
        }
    if (force && !out_dir) {
        cli_error("probe", "--force replaces the confusion matrices of --out DIR, which are written with --out only");
        return 2;
    }
    lopt.seed = (uint64_t)seed;
    FeaturesSpec spec;
    features_pool_parse(pool_s, &spec.pool);
    spec.view = cli_view(crop_pct, interp);
    spec.blocks = blocks;
    int status = 1;
    OutputMade made = {.n = 0};   // the --out folders this run made (removed again when it fails)
    char err[CLI_ERR_MAX], what[4400];
    if (cli_one_process_refused("probe")) return 2;
    // Files of an earlier run are replaced only with --force (docs/interface.md, "Earlier results"):
    // the matrices of the probes that run. After the refusal under mpirun, whose line --force never passes.
    if (out_dir) {
        char mats[NPROBES][4200];
        const char *mat_names[NPROBES];
        OutputNames names = {.list = mat_names};
        // Nor may a matrix, written or (confusion-linear.png under --force without --linear) removed, be
        // the checkpoint it reads: replaced or deleted, also with --force ("Paths that meet").
        for (int p = 0; p < NPROBES && ckpt_path; p++) {
            snprintf(mats[p], sizeof mats[p], "%s/confusion-%s.png", out_dir, probe_key[p]);
            if (output_replaces(mats[p], ckpt_path)) {
                cli_error("probe --out", "%s is the checkpoint --ckpt reads: this run would %s it (also with --force; "
                          "another --out)", mats[p], p == PROBE_KNN || linear ? "replace" : "remove");
                return 2;
            }
        }
        for (int p = 0; p < NPROBES; p++)
            if (p == PROBE_KNN || linear) {
                snprintf(mats[p], sizeof mats[p], "%s/confusion-%s.png", out_dir, probe_key[p]);
                mat_names[names.n++] = mats[p];
            }
        // Nor may a matrix's temporary name, "NAME.tmp.<host>.<pid>.<n>", pass the 4096-byte path limit
        // where the matrix's own name does not: the run printed its results, then failed naming the folder.
        // The rule of reconstruct's and attention's names (output_names_fit), said as the longest matrix's.
        int longest = linear ? PROBE_LINEAR : PROBE_KNN;
        char stem[32];
        snprintf(stem, sizeof stem, "confusion-%s", probe_key[longest]);
        if (output_names_fit(out_dir, stem, ".png", what, sizeof what)) {
            char reason[128];
            cli_error("probe --out", "%s/%s.png: %s", out_dir, stem, file_reason(ENAMETOOLONG, reason, sizeof reason));
            return 1;
        }
        if (output_refuse_earlier(&names, force)) return 2;
        output_sweep_leftovers(&names);   // a killed probe's temporary files of these names (cmd/output.h)
    }
    if (cli_start_threads("probe", threads)) return 1;
    FeatureModel *fm = NULL;
    Labelled train = {0}, test = {0};
    CliHeld held = {0};   // what the scans skipped, said once every check has passed
    float *ftrain = NULL, *ftest = NULL;
    ProbeResult res[NPROBES] = {{0}};
    LinearProbe lp = {0};
    int S = img, Cin = 0;
    if ((status = labelled_scan("probe --train", train_dir, max_pixels, NULL, &train, &held))) goto out;
    // --test the folder --train is (each within the other, as output_warn_overlap below says "is"): its
    // skipped files and warnings are train's, said once, not once per scan.
    int same = output_path_within(test_dir, train_dir) && output_path_within(train_dir, test_dir);
    CliHeld again = {0};
    status = labelled_scan("probe --test", test_dir, max_pixels, &train, &test, same ? &again : &held);
    cli_held_free(&again);
    if (status) goto out;
    status = 1;
    // The model holds one batch: no more images than the larger set has (the memory check counts what runs).
    long most = train.n > test.n ? train.n : test.n;
    if (most < batch) batch = most > 0 ? (int)most : 1;
    if (pixels && ckpt_path) {
        Checkpoint ck;
        if (clf_ckpt_load_encoder(ckpt_path, 0, &ck, err, sizeof err)) { cli_error(NULL, "%s", err); goto out; }   // err names the file
        if (!img) S = ck.cfg.img_size;
        if (!channels_s) Cin = ck.cfg.in_chans;
        ckpt_free(&ck);
    } else if (!pixels) {
        int open_status;
        fm = features_open(ckpt_path, ema, batch, &open_status, err, sizeof err);
        if (!fm) { cli_error(output_subject("probe", ckpt_path, err), "%s", err); status = open_status; goto out; }
        S = features_config(fm)->img_size;   // the view's size, as said on the first line
        if (features_layer_parse(layer_s, features_config(fm)->depth, &spec.layer, err, sizeof err)) {
            cli_error("probe --layer", "%s", err);
            status = 2;
            goto out;
        }
        if (features_blocks_check(&spec, err, sizeof err)) {
            cli_error("probe --blocks", "%s", err);
            status = 2;
            goto out;
        }
    }
    if (pixels && !Cin) Cin = channels_s && strcmp(channels_s, "auto") ? atoi(channels_s)
                             : train.ds.all_grey && test.ds.all_grey ? 1 : 3;
    int C = train.ds.nclasses;
    long dim = fm ? features_dim(fm, &spec) : (long)S * S * Cin;
    // The feature matrices must fit before any is computed or the --out folder made: a pixel baseline
    // at a large --img was killed by the system's out-of-memory killer partway (malloc does not fail
    // where memory is overcommitted).
    size_t need = probe_bytes_needed(train.n, test.n, dim);
    long have;
    if (mae_memory_exceeds(need, &have)) {   // the rule of every memory check (core/model.h)
        cli_error("probe", "the features of %ld images of dim %ld need %zu bytes (%.2f GiB, with kNN's normalised "
                  "copies); %s %.2f GiB%s", train.n + test.n, dim, need, need / 1073741824.0,
                  cpu_memory_holder(), have / 1073741824.0, pixels ? " (use a smaller --img)" : "");
        goto out;
    }
    // The --out folder is made before the work, as reconstruct and attention make theirs: a folder that
    // cannot be made, or does not take files, is found before the features are computed.
    // Ctrl-C from here leaves no temporary file, nor an empty --out folder this run made (io/files.h).
    if (out_dir) file_cleanup_on_stop_signals();
    if (out_dir && output_make_out("probe --out", out_dir, &made)) {
        goto out;
    }
    if (out_dir && output_check_writable(out_dir, err, sizeof err)) {
        cli_error("probe --out", "%s", err);
        goto out;
    }
    // The folder as the run found it: one moved away while the features are computed is said as that
    // when the matrices cannot be written (output_out_gone), not as "confusion-knn.png: No such file".
    struct stat home_st, *home = out_dir && stat(out_dir, &home_st) == 0 ? &home_st : NULL;
    // Said once every check has passed (a missing --ckpt or --layer out of range stays one line).
    cli_held_say(&held);
    output_warn_overlap("--train", train_dir, "--test", test_dir, "fit the probes");
    if (fm) {
        char which[96];
        features_blocks_text(&spec, features_config(fm)->depth, which, sizeof which);
        snprintf(what, sizeof what, "encoder %s, %s%s, %s", features_what(fm, &spec), which, ema ? CLI_EMA_WHAT : "", ckpt_path);
    } else {
        snprintf(what, sizeof what, "pixels %dx%dx%d", S, S, Cin);
    }
    size_t wl = strlen(what);
    cli_view_text(what + wl, sizeof what - wl, "; view ", spec.view, S);
    if (!json)
        cli_out("probe: %s (dim %ld); train %ld images, test %ld, %d classes", what, dim, train.n, test.n, C);
    cli_flush_stdout();

    ftrain = malloc((size_t)train.n * dim * sizeof *ftrain);
    ftest = malloc((size_t)test.n * dim * sizeof *ftest);
    for (int p = 0; p < NPROBES; p++) {
        res[p].pred = malloc((size_t)(test.n ? test.n : 1) * sizeof *res[p].pred);
        res[p].confusion = calloc((size_t)C * C, sizeof *res[p].confusion);
        if (!res[p].pred || !res[p].confusion) ftrain = (free(ftrain), NULL);
    }
    if (!ftrain || !ftest) { cli_error("probe", "out of memory (%ld x %ld features)", train.n + test.n, dim); goto out; }
    CountProgress prog;
    count_progress_init(&prog, "probe: train features");
    int frc = features_of_files(fm, &spec, S, Cin, max_pixels, train.paths, train.n, batch, ftrain, count_progress, &prog,
                                NULL, err, sizeof err);
    if (frc) { cli_error(frc > 0 ? NULL : "probe", "%s", err); goto out; }   // 1: err names the image, as reconstruct says it
    count_progress_init(&prog, "probe: test features");
    frc = features_of_files(fm, &spec, S, Cin, max_pixels, test.paths, test.n, batch, ftest, count_progress, &prog, NULL,
                            err, sizeof err);
    if (frc) { cli_error(frc > 0 ? NULL : "probe", "%s", err); goto out; }

    if (probe_knn(ftrain, train.labels, train.n, ftest, test.n, (int)dim, C, k, temperature, res[PROBE_KNN].pred,
                  err, sizeof err)) {
        cli_error("probe", "%s", err); goto out;
    }
    res[PROBE_KNN].ran = 1;
    int k_used = k < train.n ? k : (int)train.n;   // K larger than the training set is cut to its size
    if (!json) printf("knn: k %d (of %ld), T %g\n", k_used, train.n, temperature);
    if (linear) {
        if (probe_linear_train(ftrain, train.labels, train.n, (int)dim, C, &lopt, &lp, err, sizeof err) ||
            probe_linear_predict(&lp, ftest, test.n, res[PROBE_LINEAR].pred, err, sizeof err)) {
            cli_error("probe", "%s", err); goto out;
        }
        res[PROBE_LINEAR].ran = 1;
        if (!json)
            printf("linear: %d epoch%s, batch %d, SGD momentum %g, lr %g cosine to 0; last-epoch train loss %.4f\n",
                   lopt.epochs, lopt.epochs == 1 ? "" : "s", lopt.batch, lopt.momentum, lopt.lr, lp.last_epoch_loss);
    }
    for (int p = 0; p < NPROBES; p++) if (res[p].ran) score(&res[p], &test, C);
    if (json) print_json(res, &train.ds, train.n, test.n, fm ? "encoder" : "pixels", !fm ? NULL : ema ? "ema" : "model", k_used, temperature, crop_pct, interp);
    else print_text(res, &train.ds, test.n);
    if (out_dir) {
        file_test_gate("VITMAE_FAULT_HOLD_BEFORE_MATRICES");   // tests: the --out folder moved meanwhile
        // Published together (io/files.h): without --force nothing is replaced, also when another
        // command wrote one of them while this one computed; the matrices are then that command's.
        FileGroup files = {0};
        for (int p = 0; p < NPROBES; p++)
            if (res[p].ran && write_confusion(out_dir, p, &res[p], test.n, &train.ds, what, &files, err, sizeof err)) {
                file_group_discard(&files);
                if (output_out_gone(out_dir, home)) output_report_stop("probe", OUTPUT_STOP_GONE, out_dir, 0, 0);
                else cli_error("probe", "%s", err);
                goto out;
            }
        // An earlier --linear run's matrix goes with --force when this run has no linear probe, so that
        // the folder's matrices are this run's only (docs/interface.md, "Earlier results").
        if (!res[PROBE_LINEAR].ran) {
            char stale[4200];
            snprintf(stale, sizeof stale, "%s/confusion-%s.png", out_dir, probe_key[PROBE_LINEAR]);
            if (file_group_sweep(&files, stale, NULL)) {
                file_group_discard(&files);
                cli_error("probe", "out of memory"); goto out;
            }
        }
        // A stop signal from the publish on waits for the line that says it (io/files.h).
        int pub = file_group_publish_held(&files, force, err, sizeof err);
        if (pub) cli_error(pub == FILE_TAKEN ? NULL : "probe", "%s", err);
        else if (!json) cli_out("confusion matrices in %s/", out_dir);
        cli_flush_stdout();
        file_stop_resume();
        if (pub) goto out;
    }
    status = 0;

out:
    if (status) output_mkdir_undo(&made);   // a failed run leaves no empty --out folder of its own (cmd/output.h)
    features_close(fm);
    labelled_free(&train); labelled_free(&test);
    cli_held_free(&held);
    free(ftrain); free(ftest);
    for (int p = 0; p < NPROBES; p++) { free(res[p].pred); free(res[p].confusion); }
    probe_linear_free(&lp);
    return status;
}
