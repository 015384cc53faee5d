// `vitmae embed --ckpt FILE|RUN [--pool cls|mean] [--layer N|last] [--ema] --out FEATS.npy [--force] INPUT...`:
// one feature vector per image (src/infer/features.h), written as
//   FEATS.npy   float32 [N, D], row i = image i
//   FEATS.txt   line i: the image's path as the other commands name it (a file INPUT: the path as
//               given; an image of a folder INPUT: the folder, a slash and its path under it), a tab,
//               its class (first-level sub-folder of a folder INPUT) or nothing
// Images: each INPUT is a file or a folder scanned like `vitmae data` (recursive, sorted); a file of a
// folder that does not decode is reported and left out; a file named on the command line that does
// not decode is an error. Both files are written atomically and published as a pair; existing ones are
// replaced only with --force, also when another command wrote them while this one computed. In
// FEATS.txt names are written as the per-image lines of the commands write them (cli_escape_at:
// \\, \t, \n, \r, \xHH for the other control bytes, C1 controls and stray bytes 0x80..0x9F), so
// that a row is one line and reads back one way (docs/encoder.md gives the reader).
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/count_progress.h"
#include "cmd/output.h"
#include "data/dataset.h"
#include "infer/features.h"
#include "io/npy.h"
#include "io/files.h"
#include "io/safetensors.h"
#include "kernels/cpu.h"

typedef struct {
    char **paths;     // as image_load reads them and FEATS.txt names them
    char **classes;   // "" when none
    long n, cap;
} Inputs;

static int inputs_add(Inputs *in, const char *path, const char *cls) {
    if (in->n == in->cap) {
        long cap = in->cap ? 2 * in->cap : 64;
        char **p = realloc(in->paths, cap * sizeof *p);
        if (p) in->paths = p;
        char **c = realloc(in->classes, cap * sizeof *c);
        if (c) in->classes = c;
        if (!p || !c) return -1;
        in->cap = cap;
    }
    in->paths[in->n] = strdup(path);
    in->classes[in->n] = strdup(cls);
    in->n++;
    return in->paths[in->n - 1] && in->classes[in->n - 1] ? 0 : -1;
}

static void inputs_free(Inputs *in) {
    for (long i = 0; i < in->n; i++) { free(in->paths[i]); free(in->classes[i]); }
    free(in->paths); free(in->classes);
}

// Files of every INPUT. Returns 0, 1 (runtime failure, printed). The files a scan skipped are kept in
// *unread at their places, in input order (cmd/cli.h: 20 named for the whole run, then a count), said
// once the checkpoint and --layer have passed their checks (a refused run prints its one line only) as
// the features reach them (reach_progress), or before the failure that ends the gathering (stop): a
// missing INPUT, a folder that cannot be scanned or has no usable image says the lines of the
// inputs before it first (docs/interface.md, "Bad files").
static int stop(CliUnread *unread, const char *what, const char *why) {
    cli_unread_end(unread, NULL);
    cli_error(what, "%s", why);
    return 1;
}

// The features' progress (features.h's FeaturesProgress): the kept lines placed before image done
// (those of the images computed, and what the gathering met before the next), then the count.
typedef struct { CliUnread *unread; CountProgress prog; } Reach;
static void reach_progress(void *ctx, long done, long total) {
    Reach *r = ctx;
    cli_unread_reach(r->unread, CLI_AT_ITEM(done));
    count_progress(&r->prog, done, total);
}

static int collect(char **inputs, int ninputs, long max_pixels, Inputs *in, CliUnread *unread) {
    char err[CLI_ERR_MAX];
    DatasetOptions opt = {.max_pixels = max_pixels};
    for (int i = 0; i < ninputs; i++) {
        struct stat st;
        char reason[4200];
        if (stat(inputs[i], &st)) return stop(unread, inputs[i], file_path_reason(inputs[i], errno, reason, sizeof reason));
        if (!S_ISDIR(st.st_mode)) {
            if (inputs_add(in, inputs[i], "")) return stop(unread, "embed", "out of memory");
            continue;
        }
        Dataset ds;
        int src = dataset_scan(inputs[i], &opt, &ds, err, sizeof err);
        if (src) return stop(unread, dataset_err_what(src, inputs[i]), err);
        cli_unread_keep_skipped(unread, in->n, &ds);   // as train says them, among the images before
        if (ds.n == 0) {
            snprintf(err, sizeof err, "no usable image (%d skipped, %d ignored)", ds.nskipped, ds.nignored);
            dataset_free(&ds);
            return stop(unread, inputs[i], err);
        }
        for (int k = 0; k < ds.n; k++) {
            const DataItem *it = &ds.items[k];
            if (inputs_add(in, it->path, it->cls >= 0 ? ds.class_names[it->cls] : "")) {
                dataset_free(&ds);
                return stop(unread, "embed", "out of memory");
            }
        }
        dataset_free(&ds);
    }
    return 0;
}

// Appends s to buf (grown as needed); with escape, its characters as cli_escape_at writes them (a tab
// or newline in a name would split its row, a carriage return too for Python's universal newlines, and
// a terminal escape would steer `cat FEATS.txt`).
static void put(char **buf, size_t *len, size_t *cap, const char *s, int escape) {
    while (*s && *buf) {
        if (*len + 10 > *cap) {
            *cap = *cap * 2 + 256;
            char *b = realloc(*buf, *cap);
            if (!b) { free(*buf); *buf = NULL; return; }
            *buf = b;
        }
        char esc[9];
        size_t used = 1, n = escape ? cli_escape_at(s, esc, &used) : 0;
        if (n) {
            memcpy(*buf + *len, esc, n);
            *len += n;
        }
        for (size_t k = 0; k < used && *s; k++, s++)
            if (!n) (*buf)[(*len)++] = *s;
    }
}

// FEATS.txt: "path<TAB>class<NL>" per row.
static char *list_text(const Inputs *in, size_t *len) {
    size_t cap = 4096;
    char *buf = malloc(cap);
    *len = 0;
    for (long i = 0; i < in->n && buf; i++) {
        put(&buf, len, &cap, in->paths[i], 1);
        put(&buf, len, &cap, "\t", 0);
        put(&buf, len, &cap, in->classes[i], 1);
        put(&buf, len, &cap, "\n", 0);
    }
    return buf;
}

int cmd_embed(int argc, char **argv) {
    const char *ckpt_path = NULL, *out_path = NULL, *pool_s = "cls", *layer_s = "last";
    char ckpt_file[ST_RUN_LATEST_MAX];   // --ckpt RUN's checkpoint.safetensors
    const char *interp = "bilinear";
    int batch = 64, threads = 0, force = 0, ema = 0, blocks = 1;
    float crop_pct = 1.0f;
    long max_pixels = VITMAE_DEFAULT_MAX_PIXELS;
    Flag flags[] = {
        {"--ckpt", FLAG_PATH, &ckpt_path, 0, 0, NULL, "checkpoint (.safetensors, or a run folder: its checkpoint.safetensors; encoder-only is fine) (required)", "FILE|RUN", 0},
        {"--out", FLAG_FILE, &out_path, 0, 0, NULL, "features file, ending in .npy; FEATS.txt is written beside it (required)", "FEATS.npy", 0},
        {"--pool", FLAG_CHOICE, &pool_s, 0, 0, FEATURES_POOL_NAMES, "cls: the CLS token (default); mean: the mean of the patch tokens", NULL, 0},
        {"--layer", FLAG_STR, &layer_s, 0, 0, NULL, "encoder block whose tokens are used, 0-based, or last (default); " FEATURES_NORM_HELP, "N|last", 0},
        {"--blocks", FLAG_INT, &blocks, 1, FEATURES_BLOCKS_MAX, NULL, FEATURES_BLOCKS_HELP, "K", 0},
        {"--ema", FLAG_BOOL, &ema, 0, 0, NULL, CLI_EMA_ENCODER_HELP, NULL, 0},
        {"--crop-pct", FLAG_FLOAT, &crop_pct, VIEW_CROP_PCT_MIN, 1.0, NULL, CLI_CROP_PCT_HELP, "F", 0},
        {"--interp", FLAG_CHOICE, &interp, 0, 0, "bilinear|bicubic", CLI_INTERP_HELP, NULL, 0},
        {"--force", FLAG_BOOL, &force, 0, 0, NULL, "replace FEATS.npy / FEATS.txt when they exist", NULL, 0},
        {"--batch", FLAG_INT, &batch, 1, 4096, NULL, "images per forward pass (default 64)", "B", 0},
        {"--threads", FLAG_INT, &threads, 1, CLI_THREADS_MAX, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--max-pixels", FLAG_LONG, &max_pixels, 1, CLI_MAX_PIXELS_MAX, NULL,
         "refuse a larger INPUT image, skip one in an INPUT folder (default 67108864 = 2^26)", "N", 0},
    };
    const int nflags = (int)(sizeof flags / sizeof flags[0]);
    const char *synopsis = "--ckpt FILE|RUN --out FEATS.npy [--pool cls|mean] [--layer N|last] [--blocks K] [--ema] [--crop-pct F] [--interp bilinear|bicubic] [--force] [--batch B] [--threads T] [--max-pixels N] INPUT...";
    char **inputs = malloc((size_t)(argc > 0 ? argc : 1) * sizeof *inputs);
    if (!inputs) { cli_error("embed", "out of memory"); return 1; }
    int ninputs = 0, status = 0;
    Inputs in = {0};
    CliUnread unread = {.skipped = 1};   // the files the scans skipped, in input order (cmd/cli.h)
    FeatureModel *fm = NULL;
    float *feats = NULL;
    char *list = NULL, *txt_path = NULL, *out_folder = NULL;
    int rc = cli_parse("embed", synopsis, flags, nflags, argc, argv, inputs, argc, &ninputs);
    if (rc != CLI_OK) { status = rc == CLI_HELP ? 0 : 2; goto out; }
    status = 2;
    if (!ckpt_path) { cli_error("embed", "--ckpt FILE|RUN is required (see vitmae embed --help)"); goto out; }
    // A run folder stands for its checkpoint.safetensors (docs/interface.md, section 9).
    ckpt_path = st_checkpoint_arg(ckpt_path, ckpt_file, sizeof ckpt_file);
    if (!out_path) { cli_error("embed", "--out FEATS.npy is required (see vitmae embed --help)"); goto out; }
    size_t olen = strlen(out_path);
    const char *leaf = strrchr(out_path, '/');
    leaf = leaf ? leaf + 1 : out_path;
    if (!strcmp(leaf, ".npy")) {   // ends in .npy, but no name before it: said so, not "must end in .npy"
        cli_error("embed --out", "'%s' has no name before .npy: give one, such as feats.npy (FEATS.txt is written "
                  "beside it)", out_path);
        goto out;
    }
    if (olen < 4 || strcmp(out_path + olen - 4, ".npy")) {
        cli_error("embed --out", "'%s' must be a file name ending in .npy, such as feats.npy (FEATS.txt is "
                  "written beside it)", out_path);
        goto out;
    }
    if (ninputs == 0) { cli_error("embed", "no INPUT: give image files or folders (see vitmae embed --help)"); goto out; }
    FeaturesSpec spec;
    features_pool_parse(pool_s, &spec.pool);
    spec.view = cli_view(crop_pct, interp);
    spec.blocks = blocks;
    txt_path = strdup(out_path);
    if (!txt_path) { cli_error("embed", "out of memory"); status = 1; goto out; }
    memcpy(txt_path + olen - 4, ".txt", 4);
    const char *outs[2] = {out_path, txt_path};   // neither may be the checkpoint it reads (--force would destroy it)
    for (int k = 0; k < 2; k++)
        if (output_replaces(outs[k], ckpt_path)) {
            cli_error("embed --out", "%s is the checkpoint --ckpt reads; the features would replace it (also with "
                      "--force): choose another name", outs[k]);
            goto out;
        }
    // Under mpirun the refusal comes first: "use --force to replace it" led to a run refused all the same.
    if (cli_one_process_refused("embed")) goto out;   // before the probe of --out's folder, a file written
    // Ctrl-C from here leaves no temporary file, nor the probe of the folder just below (io/files.h).
    file_cleanup_on_stop_signals();
    // The folder FEATS.npy goes to must take files: found before the work, not after it (exit 1).
    char *slash = strrchr(txt_path, '/');
    if (slash) *slash = 0;
    char werr[4400];
    out_folder = strdup(slash ? (*txt_path ? txt_path : "/") : ".");
    if (slash) *slash = '/';
    if (!out_folder) { cli_error("embed", "out of memory"); status = 1; goto out; }
    if (output_check_writable(out_folder, werr, sizeof werr)) { cli_error("embed --out", "%s", werr); status = 1; goto out; }
    // The folder as the run found it: one moved away meanwhile is said as that when the features cannot
    // be written (output_out_gone), not as "FEATS.npy: No such file or directory".
    struct stat home_st, *home = stat(out_folder, &home_st) == 0 ? &home_st : NULL;
    // A name the folder cannot hold (a component past the system's 255 bytes: "File name too long") was
    // found only when the features were published, after all the work.
    for (int k = 0; k < 2; k++) {
        struct stat st;
        if (lstat(outs[k], &st) != 0 && errno != ENOENT) {
            char reason[128];
            cli_error("embed --out", "%s: %s", outs[k], file_reason(errno, reason, sizeof reason));
            status = 1;
            goto out;
        }
    }
    // Nor its temporary name, FEATS.npy's with ".tmp.<host>.<pid>.<n>" (file_tmp_name_host): a path that
    // fit and a temporary name that did not failed after all the work, naming the folder. The rule of
    // reconstruct's and attention's names (output_names_fit), said as the name's.
    {
        char ferr[64];
        const char *leaf = strrchr(out_path, '/');
        leaf = leaf ? leaf + 1 : out_path;
        char *stem = strndup(leaf, strlen(leaf) - 4);   // FEATS.npy's and FEATS.txt's stem
        if (!stem) { cli_error("embed", "out of memory"); status = 1; goto out; }
        int fits = !output_names_fit(leaf > out_path ? out_folder : "", stem, ".*", ferr, sizeof ferr);
        free(stem);
        if (!fits) {
            char reason[128];
            cli_error("embed --out", "%s: %s", out_path, file_reason(ENAMETOOLONG, reason, sizeof reason));
            status = 1;
            goto out;
        }
    }
    status = 1;
    char err[CLI_ERR_MAX];
    if (cli_start_threads("embed", threads)) goto out;
    int open_status;
    if (collect(inputs, ninputs, max_pixels, &in, &unread)) goto out;
    // Neither may be an image it reads (named, or found in a folder: inputs go by content, so a PNG named
    // x.txt is one): --force replaced it by the features ("Paths that meet", docs/interface.md). Said
    // before the earlier results, whose "use --force" would lead to this refusal all the same.
    OutputInputs ids = {0};   // the inputs' file ids, found once for both names
    for (int k = 0; k < 2 && in.n > 0; k++) {
        int j = output_input_named(&ids, in.paths, (int)in.n, outs[k]);
        if (j >= 0) {
            output_inputs_free(&ids);
            cli_error("embed --out", "%s is the input %s: the features would replace it (also with --force): choose "
                      "another name", outs[k], in.paths[j]);
            status = 2;
            goto out;
        }
    }
    output_inputs_free(&ids);
    // Earlier results, and first a folder in either's place (docs/interface.md, "Earlier results").
    OutputNames names = {.n = 2, .list = outs};
    if (output_refuse_earlier(&names, force)) { status = 2; goto out; }
    output_sweep_leftovers(&names);   // the temporary files of the pair that a killed embed left (cmd/output.h)
    // The model holds one batch: no more images than there are (the memory check counts what runs).
    if (in.n < batch) batch = in.n > 0 ? (int)in.n : 1;
    fm = features_open(ckpt_path, ema, batch, &open_status, err, sizeof err);
    if (!fm) { cli_error(output_subject("embed", ckpt_path, err), "%s", err); status = open_status; goto out; }
    const MaeConfig *cfg = features_config(fm);
    if (features_layer_parse(layer_s, cfg->depth, &spec.layer, err, sizeof err)) {
        cli_error("embed --layer", "%s", err);
        status = 2;
        goto out;
    }
    if (features_blocks_check(&spec, err, sizeof err)) {
        cli_error("embed --blocks", "%s", err);
        status = 2;
        goto out;
    }
    // The run goes ahead: the lines before the first image, the others as the features reach them.
    cli_unread_reach(&unread, CLI_AT_ITEM(0));
    int D = features_dim(fm, &spec);
    feats = malloc((size_t)in.n * D * sizeof *feats);
    if (!feats) { cli_error("embed", "out of memory (%ld x %d features)", in.n, D); goto out; }
    Reach reach = {&unread, {0}};
    count_progress_init(&reach.prog, "embed");
    long failed_at;
    int frc = features_of_files(fm, &spec, 0, 0, max_pixels, (const char *const *)in.paths, in.n, batch, feats,
                                reach_progress, &reach, &failed_at, err, sizeof err);
    // An image that cannot be read (or whose features are not finite) stops the run: its line in its
    // place among the folders' skipped files, as reconstruct says a failed input; those after it still
    // said, then how many more, as reconstruct ends a run it stops (docs/interface.md, section 2, "Bad files").
    if (frc > 0) {
        cli_unread_reach(&unread, CLI_AT_ITEM(failed_at));
        cli_error(NULL, "%s", err);   // err names the image
        cli_unread_end(&unread, NULL);
        goto out;
    }
    if (frc) { cli_error("embed", "%s", err); goto out; }   // out of memory: the run stops, its lines unsaid
    cli_unread_end(&unread, NULL);   // every image done: the 20 named, then how many more
    size_t len;
    list = list_text(&in, &len);
    if (!list) { cli_error("embed", "out of memory"); goto out; }
    int64_t shape[2] = {in.n, D};
    // The two files are published together (io/files.h), FEATS.npy first: a pair is always one run's.
    // Without --force nothing is replaced: another command that wrote either file since the check
    // above keeps its pair, and this run exits 1. A failed write leaves the earlier pair (or none).
    // Temporary names with the host, whose leftovers a later run removes (output_sweep_leftovers).
    size_t tlen = olen + FILE_TMP_HOST_EXTRA;
    char *npy_tmp = malloc(tlen), *txt_tmp = malloc(tlen);
    FileGroup pair = {0};
    int wrote = npy_tmp && txt_tmp && !file_tmp_name_host(out_path, npy_tmp, tlen) &&
                !file_tmp_name_host(txt_path, txt_tmp, tlen);
    if (!wrote) snprintf(err, sizeof err, "out of memory");
    else if (npy_write_to(npy_tmp, out_path, feats, "<f4", 2, shape, err, sizeof err)) wrote = 0;
    else if (file_group_add(&pair, npy_tmp, out_path)) { snprintf(err, sizeof err, "out of memory"); wrote = 0; }
    else if (file_write_to(txt_tmp, txt_path, list, len, err, sizeof err)) wrote = 0;
    else if (file_group_add(&pair, txt_tmp, txt_path)) { snprintf(err, sizeof err, "out of memory"); wrote = 0; }
    free(npy_tmp); free(txt_tmp);
    if (!wrote) {
        file_group_discard(&pair);
        if (output_out_gone(out_folder, home)) output_report_stop("embed", OUTPUT_STOP_GONE, out_folder, 0, 0);
        else cli_error("embed", "%s", err);
        goto out;
    }
    // A stop signal from the publish on waits for the line that says it (io/files.h): the pair is
    // never left on disk unsaid.
    int pub = file_group_publish_held(&pair, force, err, sizeof err);
    if (pub == FILE_TAKEN) {
        cli_error(NULL, "%s", err);   // "PATH: exists now ...; pass --force"
    } else if (pub) {
        cli_error("embed", "%s", err);
    } else {
        // The feature in probe's words (features_what): a classifier's mean pooling is fc_norm's output.
        char view[96], which[96];
        cli_view_text(view, sizeof view, ", view ", spec.view, cfg->img_size);
        features_blocks_text(&spec, cfg->depth, which, sizeof which);
        cli_out("%ld image%s -> %s [%ld, %d] (%s, %s%s%s) and %s", in.n, in.n == 1 ? "" : "s", out_path,
                in.n, D, features_what(fm, &spec), which, ema ? CLI_EMA_WHAT : "", view, txt_path);
        cli_flush_stdout();
        status = 0;
    }
    file_stop_resume();

out:
    features_close(fm);
    inputs_free(&in);
    cli_unread_free(&unread);   // a refused run's lines, never said
    free(inputs); free(feats); free(list); free(txt_path); free(out_folder);
    return status;
}
