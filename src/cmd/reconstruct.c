// `vitmae reconstruct --ckpt FILE|RUN [flags] INPUT...`: mask each image, run the autoencoder, and
// write DIR/<stem>.recon.png (original | masked | raw prediction | + visible | error map), with
// --raw the prediction and mask as .npy; print each image's masked MSE and PSNR and their mean.
//
// Story: load the checkpoint (refuse encoder-only) -> list the inputs (folders scanned as `data`
// does) and give each a unique stem -> pick the masks (--mask file, or --mask-ratio with --seed) ->
// batches of evaluation views through mae_forward -> per image: de-normalise, score, draw, write,
// a few images at a time (as many as threads), so that the panels held do not grow with --batch.
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/checkpoint.h"
#include "io/classifier_ckpt.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/output.h"
#include "data/image.h"
#include "infer/infer.h"
#include "data/mask.h"
#include "io/files.h"
#include "io/npy.h"
#include "viz/panel.h"
#include "infer/recon.h"
#include "core/masking.h"
#include "core/rng.h"
#include "kernels/cpu.h"

// A draw_output status of its own: the image's outputs are not finite (INFER_NONFINITE_WHY).
enum { RECON_NONFINITE = -1000 };

typedef struct {
    char *path;   // as given, or found under a folder
    const char *stem;   // unique among the inputs (owned by InputList.stems): output files are DIR/<stem>.*
    char *key;    // the stem before de-duplication: the random mask depends on it
    int unfit;    // its output names would pass the path limit: said before the work, never read
} Input;

typedef struct { Input *v; int n, cap; StemSet stems; } InputList;

static int input_add(InputList *l, const char *path) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        Input *v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) return -1;
        l->v = v; l->cap = cap;
    }
    Input *in = &l->v[l->n];
    in->path = strdup(path);
    in->key = infer_stem(path);
    in->stem = NULL;
    in->unfit = 0;
    if (!in->path || !in->key) { free(in->path); free(in->key); return -1; }
    l->n++;
    return 0;
}

static void inputs_free(InputList *l) {
    for (int i = 0; i < l->n; i++) { free(l->v[i].path); free(l->v[i].key); }
    free(l->v);
    stem_set_free(&l->stems);
}

// Output names in input order: the first keeps its stem, a later one with a taken stem gets
// "<stem>-1", "<stem>-2", ... (cmd/output.h).
static int assign_stems(InputList *l) {
    for (int i = 0; i < l->n; i++)
        if (!(l->v[i].stem = stem_set_claim(&l->stems, l->v[i].key))) return -1;
    return 0;
}

// Every INPUT as a list of image files. Folders are scanned like `vitmae data`; files that cannot
// be read there, and inputs that do not exist, are counted in *failed, their lines kept in *unread.
static int gather_add(void *list, const char *path, const char *cls) {
    (void)cls;
    return input_add(list, path);
}

static int gather_inputs(char **pos, int npos, long max_pixels, InputList *list, int *failed, CliUnread *unread) {
    if (output_gather_inputs(pos, npos, max_pixels, gather_add, list, failed, unread)) return -1;
    return assign_stems(list);
}

// The names refuse_earlier checks (cmd/output.h, OutputNames): each input's DIR/<stem>.recon.png,
// and with --raw its arrays, named when asked (a folder of 20,000 images holds no list of them).
typedef struct {
    const char *out_dir;
    const InputList *inputs;
    int per;   // files an input writes
    char **in_paths;
    OutputInputs in_ids;
    const char *ckpt, *mask;   // the files --ckpt and --mask read (NULL: none)
    int writes;                // the kinds of file the run writes (per; the others it removes under --force)
} EarlierNames;

static int earlier_name(void *ctx, long i, char *path, size_t size) {
    static const char *const kinds[] = {"recon.png", "recon.npy", "mask.npy"};
    const EarlierNames *e = ctx;
    snprintf(path, size, "%s/%s.%s", e->out_dir, e->inputs->v[i / e->per].stem, kinds[i % e->per]);
    return OUTPUT_FILE;
}

// An output that is one of the inputs: 1 after its line.
static int earlier_is_input(void *ctx, long i, const char *path) {
    EarlierNames *e = ctx;
    int j = output_input_named(&e->in_ids, e->in_paths, e->inputs->n, path);
    // A name the run writes is replaced by its output; one of the arrays it does not write (no --raw), an
    // earlier run's, --force removes.
    char what[4400];
    int writes = i % e->per < e->writes;
    if (writes) snprintf(what, sizeof what, "the output of %s would replace it", e->inputs->v[i / e->per].path);
    else snprintf(what, sizeof what, "a run with --force would remove it as an earlier run's array");
    if (j >= 0) cli_error("reconstruct --out", "%s is the input %s: %s (another --out)", path, e->in_paths[j], what);
    // ... nor the checkpoint or mask it reads (--force replaced them: the checkpoint destroyed).
    const char *flag = j >= 0 ? NULL : output_replaces(path, e->ckpt) ? "--ckpt"
                       : e->mask && output_replaces(path, e->mask) ? "--mask" : NULL;
    if (flag)
        cli_error("reconstruct --out", "%s is the file %s reads: %s (%sanother --out)", path, flag, what,
                  writes ? "also with --force; " : "");
    return j >= 0 || flag;
}

// Files of an earlier run are replaced only with --force (docs/interface.md, "Earlier results"), and
// an input never, also with --force ("Paths that meet"): it may not have been read yet. 0 (and the
// temporary files a killed run left of the names it writes are removed: output_sweep_leftovers); 2
// after the line that refuses; 1 out of memory.
static int refuse_earlier(const char *out_dir, const InputList *inputs, int raw, int force, const char *ckpt,
                          const char *mask) {
    // Every kind is looked at for the files it reads (per 3): the arrays a run without --raw removes
    // under --force (an earlier run's) are its names too, and an input, the checkpoint or the mask there
    // was deleted. Then the names it writes (per: its kinds) for an earlier run's files.
    EarlierNames e = {.out_dir = out_dir, .inputs = inputs, .per = 3, .ckpt = ckpt, .mask = mask,
                      .writes = raw ? 3 : 1};
    e.in_paths = malloc(sizeof *e.in_paths * (size_t)(inputs->n ? inputs->n : 1));
    if (!e.in_paths) { cli_error("reconstruct", "out of memory"); return 1; }
    for (int i = 0; i < inputs->n; i++) e.in_paths[i] = inputs->v[i].path;
    char path[8192];
    int refused = 0;
    for (long i = 0; i < (long)inputs->n * 3 && !refused; i++) {
        earlier_name(&e, i, path, sizeof path);
        refused = earlier_is_input(&e, i, path);
    }
    e.per = e.writes;
    OutputNames names = {.n = (long)inputs->n * e.per, .name = earlier_name, .ctx = &e};
    if (!refused) refused = output_refuse_earlier(&names, force);
    if (!refused) output_sweep_leftovers(&names);   // a killed run's temporary files of these names (cmd/output.h)
    output_inputs_free(&e.in_ids);
    free(e.in_paths);
    return refused ? 2 : 0;
}

typedef struct {
    const char *out_dir;
    int side, bilinear, raw;   // panel side in pixels, smooth or nearest resizing
    FileFolders *later;        // the folders the panels go to, synced once at the run's end (io/files.h)
} Outputs;

// Why one image's outputs failed: what the message is about (the input or a file) and the reason,
// kept until the batch's lines are printed in order.
typedef struct { char who[4700], why[512]; } Failure;

static int fail_at(Failure *f, const char *who, const char *why) {
    snprintf(f->who, sizeof f->who, "%s", who);
    snprintf(f->why, sizeof f->why, "%s", why);
    return -1;
}

enum { TITLE_MAX = 600 };

// The bytes of one image's row of panels at this side (viz/panel.h gives its exact geometry, which
// needs the image's title and errors): five panels and the colour bar across, the title and captions
// above, RGB; the text's share taken as 512 pixels plus a quarter of the side each way (the text grows
// with panels past 256 pixels, viz/panel.h), more than it takes at the sides where the panels' memory
// counts: at 8192, a title, two lines of captions and the bar's labels take some 1,500 of 2,560.
static size_t panel_bytes(int side) {
    size_t text = 512 + (size_t)side / 4;
    return (size_t)3 * ((size_t)5 * (side + panel_gap(side)) + panel_bar_w(side) + text) * ((size_t)side + text);
}   // a panel's title line (panel_recon_title cuts the stem to 300 bytes)

// The panel of one image (original | masked | raw prediction | + visible | error map) into *row.
// Drawn one image at a time: the title's text goes through cairo and fontconfig. 0 ok, -1 and *f.
// title [TITLE_MAX]: the title line drawn, which write_output also puts in the PNG's text.
static int draw_output(const Outputs *o, const MaeConfig *cfg, const Input *in, const float *orig,
                       const float *recon, const uint8_t *removed, const float *patch_err, double mse, Canvas *row,
                       char *title, Failure *f) {
    char err[CLI_ERR_MAX];
    int L = mae_num_patches(cfg), nrem = 0;
    for (int l = 0; l < L; l++) nrem += removed[l] != 0;
    panel_recon_title(in->stem, nrem, L, psnr_from_mse(mse), title, TITLE_MAX);
    PanelOptions po = {o->side, o->bilinear, 1, 0.0f, title};
    if (panel_recon_row(row, cfg, orig, recon, removed, patch_err, &po, err, sizeof err))
        return fail_at(f, in->path, err);
    return 0;
}

// The panel's PNG and, with --raw, the two .npy files of one image: plain encoding and writing, so
// the images drawn together are written side by side (most of this command's time on a small model is
// zlib's deflate in the PNGs). The files are written under temporary names into *files, the panel
// first, which publish_output then publishes together as the image's line is said; with --force a run
// without --raw removes an earlier run's arrays of the image in the same step (file_group_sweep). 0
// ok, or -1 and *f (*files empty).
static int write_output(const Outputs *o, const MaeConfig *cfg, const Input *in, const Canvas *row,
                        const char *title, const float *recon, const uint8_t *removed, FileGroup *out, Failure *f) {
    char err[CLI_ERR_MAX], path[4200], tmp[4200 + FILE_TMP_HOST_EXTRA];
    int S = cfg->img_size, g = S / cfg->patch_size;
    FileGroup files = {.later = o->later};
    snprintf(path, sizeof path, "%s/%s.recon.png", o->out_dir, in->stem);
    const char *text[] = {"Software", "vitmae reconstruct", "Source", in->path, "Title", title, NULL};
    file_tmp_name_host(path, tmp, sizeof tmp);
    if (output_png_to(tmp, row->px, row->w, row->h, 3, text, err, sizeof err)) return fail_at(f, path, err);
    if (file_group_add(&files, tmp, path)) { file_group_discard(&files); return fail_at(f, "reconstruct", "out of memory"); }
    if (o->raw) {
        int64_t shape[3] = {S, S, cfg->in_chans}, mshape[2] = {g, g};
        snprintf(path, sizeof path, "%s/%s.recon.npy", o->out_dir, in->stem);
        file_tmp_name_host(path, tmp, sizeof tmp);
        // err "PATH: why", said as the panel's is, with no command name (docs/interface.md, section 1);
        // out of memory as the command's.
        int bad = npy_write_to(tmp, path, recon, "<f4", 3, shape, err, sizeof err), oom = 0;
        if (!bad && (bad = oom = file_group_add(&files, tmp, path))) snprintf(err, sizeof err, "out of memory");
        if (!bad) {
            snprintf(path, sizeof path, "%s/%s.mask.npy", o->out_dir, in->stem);
            file_tmp_name_host(path, tmp, sizeof tmp);
            bad = npy_write_to(tmp, path, removed, "|u1", 2, mshape, err, sizeof err);
            if (!bad && (bad = oom = file_group_add(&files, tmp, path))) snprintf(err, sizeof err, "out of memory");
        }
        if (bad) { file_group_discard(&files); return oom ? fail_at(f, "reconstruct", err) : fail_at(f, err, ""); }
    } else {   // an earlier --raw run's arrays go with --force, so the image's files are this run's only
        static const char *const arrays[] = {"recon.npy", "mask.npy"};
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "%s/%s.%s", o->out_dir, in->stem, arrays[k]);
            if (file_group_sweep(&files, path, NULL)) {
                file_group_discard(&files);
                return fail_at(f, "reconstruct", "out of memory");
            }
        }
    }
    *out = files;
    return 0;
}

// One image's files written by write_output, published together (io/files.h): without --force
// (replace 0) nothing is replaced, so an image's files are all this run's or all another command's
// that wrote them meanwhile. Called by the thread that says the image's line, in input order: a stop
// signal from the publish on waits for that line (file_group_publish_held), and the caller ends the
// wait (file_stop_resume) once it is out. 0 ok, -1 and *f, or FILE_TAKEN and *f (who: the whole line,
// as for a file that could not be published), or FILE_UNSYNCED and *f (published, but a folder's sync
// failed: who "PATH and N more: written, but their folder DIR could not be synced: why"; the files
// stay, io/files.h).
static int publish_output(FileGroup *files, int replace, Failure *f) {
    char err[CLI_ERR_MAX];
    int rc = file_group_publish_held(files, replace, err, sizeof err);   // err: "PATH: why"
    if (rc) fail_at(f, err, "");
    return rc;
}

int cmd_reconstruct(int argc, char **argv) {
    const char *ckpt_path = NULL, *mask_path = NULL, *out_dir = "recon";
    float mask_ratio = 0.75f;
    long seed = 0, max_pixels = VITMAE_DEFAULT_MAX_PIXELS;
    int scale = 0, display = 0, raw = 0, threads = 0, batch = 16, force = 0;
    const char *upsample_s = "bilinear";
    Flag flags[] = {
        {"--ckpt", FLAG_PATH, &ckpt_path, 0, 0, NULL, "checkpoint (.safetensors, or a run folder: its checkpoint.safetensors) with a decoder (required)", "FILE|RUN", 0},
        {"--mask-ratio", FLAG_FLOAT, &mask_ratio, 0, MASK_RATIO_FLAG_MAX, NULL,
         "fraction of patches removed, leaving at least one visible (default: the checkpoint's mask_ratio; 0 = none)", "R", 0},
        {"--seed", FLAG_LONG, &seed, 0, RNG_SEED_MAX, NULL,
         "random masks from this seed and each image's stem (default 0)", "S", 0},
        {"--mask", FLAG_PATH, &mask_path, 0, 0, NULL,
         "one mask for every image: patches whose mean luminance is >= 0.5 are removed", "MASK.png", 0},
        {"--out", FLAG_PATH, &out_dir, 0, 0, NULL, "output folder, created if needed (default ./recon)", "DIR", 0},
        {"--display", FLAG_INT, &display, CLI_DISPLAY_MIN, CLI_DISPLAY_MAX, NULL,
         "side of each panel in pixels (default max(256, img_size))", "N", 0},
        {"--upsample", FLAG_CHOICE, &upsample_s, 0, 0, "bilinear|nearest",
         "how the pictures are enlarged (default bilinear; nearest with --scale)", NULL, 0},
        {"--scale", FLAG_INT, &scale, 1, 64, NULL,
         "panels of img_size x K pixels, nearest unless --upsample says otherwise (instead of --display)", "K", 0},
        {"--raw", FLAG_BOOL, &raw, 0, 0, NULL, "also write <stem>.recon.npy and <stem>.mask.npy", NULL, 0},
        {"--force", FLAG_BOOL, &force, 0, 0, NULL, "replace files of an earlier run in DIR", NULL, 0},
        {"--batch", FLAG_INT, &batch, 1, 4096, NULL, "images per forward pass (default 16)", "B", 0},
        {"--threads", FLAG_INT, &threads, 1, CLI_THREADS_MAX, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--max-pixels", FLAG_LONG, &max_pixels, 1, CLI_MAX_PIXELS_MAX, NULL,
         "refuse a larger INPUT image, skip one in an INPUT folder (default 67108864 = 2^26)", "N", 0},
    };
    const int nflags = (int)(sizeof flags / sizeof flags[0]);
    const char *synopsis = "--ckpt FILE|RUN [--mask-ratio R] [--seed S] [--mask MASK.png] [--out DIR] "
                           "[--display N] [--upsample bilinear|nearest] [--scale K] [--raw] [--force] [--batch B] [--threads T] [--max-pixels N] "
                           "INPUT...";
    char **pos = malloc(sizeof(char *) * (size_t)(argc > 1 ? argc : 1));
    if (!pos) { cli_error("reconstruct", "out of memory"); return 1; }
    int npos = 0;
    int rc = cli_parse("reconstruct", synopsis, flags, nflags, argc, argv, pos, argc, &npos);
    if (rc != CLI_OK) { free(pos); return rc == CLI_HELP ? 0 : 2; }
    if (!ckpt_path) { cli_error("reconstruct", "--ckpt FILE|RUN is required (see vitmae reconstruct --help)"); free(pos); return 2; }
    // A run folder stands for its checkpoint.safetensors (docs/interface.md, section 9).
    char ckpt_file[ST_RUN_LATEST_MAX];
    ckpt_path = st_checkpoint_arg(ckpt_path, ckpt_file, sizeof ckpt_file);
    if (npos == 0) { cli_error("reconstruct", "no INPUT: give image files or folders (see vitmae reconstruct --help)"); free(pos); return 2; }
    if (scale && display) { cli_error("reconstruct --scale", "give --scale K or --display N, not both"); free(pos); return 2; }
    if (mask_path && (cli_flag(flags, nflags, "--mask-ratio")->seen || cli_flag(flags, nflags, "--seed")->seen)) {
        cli_error("reconstruct --mask", "one mask for every image; --mask-ratio and --seed make random masks instead (give one or the other)");
        free(pos); return 2;
    }
    char err[CLI_ERR_MAX];
    if (mask_ratio_check(mask_ratio, 0, err, sizeof err)) {
        cli_error("reconstruct --mask-ratio", "%s", err);
        free(pos); return 2;
    }
    if (output_refuse_inside_inputs("reconstruct", out_dir, cli_flag(flags, nflags, "--out")->seen, pos, npos)) { free(pos); return 2; }
    if (cli_one_process_refused("reconstruct")) { free(pos); return 2; }
    if (cli_start_threads("reconstruct", threads)) { free(pos); return 1; }

    // The kind (a classifier, an encoder-only file) is refused from the header, before the tensors are
    // read: damage is said before it, a NaN in them after (docs/interface.md, "Exit status").
    int kind = ckpt_peek_kind(ckpt_path, CKPT_FULL, err, sizeof err);
    Checkpoint ck = {0};
    if (kind == CKPT_FULL && ckpt_load_weights(ckpt_path, &ck, err, sizeof err)) kind = -1;
    if (kind < 0) { cli_error(NULL, "%s", err); free(pos); return 1; }   // err names the file
    if (kind != CKPT_FULL || !ck.has_decoder) {   // (has_decoder 0 too: the file changed since the header was read)
        cli_error(ckpt_path, "%s (no decoder tensors): reconstruct needs the decoder", kind == CKPT_CLASSIFIER || ck.classifier
                  ? "a fine-tuned classifier's checkpoint" : "encoder-only checkpoint");
        ckpt_free(&ck); free(pos); return 1;
    }
    const MaeConfig *cfg = &ck.cfg;
    int S = cfg->img_size, C = cfg->in_chans, L = mae_num_patches(cfg);
    // Panels larger than a row can hold fail every image after the work: refuse --scale first (exit 2).
    if (scale && (long)S * scale > PANEL_SIDE_MAX) {
        cli_error("reconstruct --scale", "%d draws panels of %ld pixels (img_size %d x %d), more than the %d a row of "
                  "five panels allows: at most --scale %d for this checkpoint",
                  scale, (long)S * scale, S, scale, (int)PANEL_SIDE_MAX, (int)PANEL_SIDE_MAX / S);
        ckpt_free(&ck); free(pos); return 2;
    }
    if (!cli_flag(flags, nflags, "--mask-ratio")->seen) mask_ratio = cfg->mask_ratio;
    if (!mask_path && mask_ratio == 0 && cli_flag(flags, nflags, "--seed")->seen) {   // it would be ignored, as in attention
        cli_error("reconstruct --seed", "draws the masks of --mask-ratio R; without a ratio above 0 nothing is masked%s",
                  cli_flag(flags, nflags, "--mask-ratio")->seen ? "" : " (the checkpoint's mask_ratio is 0)");
        ckpt_free(&ck); free(pos); return 2;
    }

    // The mask: one from a file for every image, or a random one per image with K visible patches.
    uint8_t *file_removed = NULL;
    int K = mae_len_keep(cfg, mask_ratio);
    if (mask_path) {
        file_removed = malloc((size_t)L);
        if (!file_removed || mask_from_png(mask_path, S, cfg->patch_size, file_removed, err, sizeof err)) {
            // Named as the --mask file: "vitmae: m.png: is a directory" read as an INPUT's failure.
            cli_error("reconstruct --mask", "%s: %s", mask_path, file_removed ? err : "out of memory");
            free(file_removed); ckpt_free(&ck); free(pos); return 1;
        }
        K = 0;
        for (int l = 0; l < L; l++) K += !file_removed[l];
        if (K == 0) {
            cli_error("reconstruct --mask", "%s: the mask removes all %d patches: the encoder needs at least one visible",
                      mask_path, L);
            free(file_removed); ckpt_free(&ck); free(pos); return 1;
        }
    } else if (mask_ratio_check(mask_ratio, L, err, sizeof err)) {
        int code = cli_mask_ratio_refused("reconstruct", cli_flag(flags, nflags, "--mask-ratio")->seen, ckpt_path, err);
        ckpt_free(&ck); free(pos); return code;
    }

    int failed = 0, unsynced = 0;   // unsynced: a folder of the outputs could not be fsync'd at the end
    InputList inputs = {0};
    inputs.stems.first_suffix = 1;
    // The lines of inputs that cannot be read wait until the outputs and the memory have passed their
    // checks: a refused run prints its one line only (docs/interface.md, "Earlier results").
    // Those lines and the reads' that fail, in input order: 20 named, then a count (cmd/cli.h).
    CliUnread unread = {0};
    if (gather_inputs(pos, npos, max_pixels, &inputs, &failed, &unread)) {
        cli_error("reconstruct", "out of memory");
        cli_unread_free(&unread); inputs_free(&inputs); free(file_removed); ckpt_free(&ck); free(pos); return 1;
    }
    free(pos);
    // An input whose output names would pass the path limit fails alone, as in attention, and before any
    // work (it was read, reconstructed and drawn, then its file failed under a name cut short). Its line
    // waits in its place with those of the inputs that cannot be read.
    for (int i = 0; i < inputs.n; i++)
        if (output_names_fit(out_dir, inputs.v[i].stem, ".*", err, sizeof err)) {
            cli_unread_keep(&unread, CLI_AT_ITEM(i), 0, inputs.v[i].path, err);
            inputs.v[i].unfit = 1;
            failed++;
        }
    int refused = refuse_earlier(out_dir, &inputs, raw, force, ckpt_path, mask_path);
    if (refused) { cli_unread_free(&unread); inputs_free(&inputs); free(file_removed); ckpt_free(&ck); return refused; }
    int B = batch < inputs.n ? batch : (inputs.n ? inputs.n : 1);
    size_t per = (size_t)S * S * C;
    // Panel size: --scale K is img_size x K (nearest unless --upsample is given), else --display.
    int side = scale ? S * scale : display ? display : (S > 256 ? S : 256);
    // Memory: refuse before allocating what cannot fit (exit 2 when a smaller --batch would), and
    // before the output folder is made (a refused run leaves none behind). Panels are drawn before
    // they are written, at_once images at a time whatever --batch is (one a thread writes): at
    // --display 8192 a gigabyte each (panel_bytes).
    int at_once = omp_get_max_threads() < B ? omp_get_max_threads() : B;
    char mem_err[256];
    int mem = infer_memory_check(cfg, B, per, panel_bytes(side), at_once, mem_err, sizeof mem_err);
    if (mem) cli_error("reconstruct", "%s", mem_err);
    if (mem) {
        cli_unread_free(&unread); inputs_free(&inputs); free(file_removed); ckpt_free(&ck);
        return mem;
    }
    OutputMade made = {.n = 0};   // the --out folders this run made (removed again when it fails: cmd/output.h)
    file_cleanup_on_stop_signals();   // Ctrl-C leaves no temporary file, nor an empty --out folder it made (io/files.h)
    if (inputs.n > 0 && output_make_out("reconstruct --out", out_dir, &made)) {
        cli_unread_free(&unread); inputs_free(&inputs); free(file_removed); ckpt_free(&ck); return 1;
    }
    // A folder that does not take files (read-only) is one line now, not one per image at its end.
    if (inputs.n > 0 && output_check_writable(out_dir, err, sizeof err)) {
        cli_error("reconstruct --out", "%s", err);
        output_mkdir_undo(&made);
        cli_unread_free(&unread); inputs_free(&inputs); free(file_removed); ckpt_free(&ck); return 1;
    }
    // The folder as the run found it: one moved away meanwhile stops the run with one line (output_out_gone).
    struct stat home_st, *home = inputs.n > 0 && stat(out_dir, &home_st) == 0 ? &home_st : NULL;

    // The run goes ahead: the inputs before the first image that cannot be read are said, then the notes.
    cli_unread_reach(&unread, CLI_AT_ITEM(0));
    if (cfg->norm_pix_loss && K < L)   // none removed: nothing de-normalised (eval leaves it out alike)
        printf("note: norm-pix checkpoint: each removed patch is de-normalised with the mean and variance "
               "of the visible patches (its own are unknown)\n");
    if (K == L) printf("note: no patch removed: masked_mse is the MSE over all patches\n");
    Mae *m = mae_create_forward_with(cfg, B, ck.params, err, sizeof err);   // the weights without a copy
    if (m) ck.params = NULL;
    float *images = malloc(sizeof(float) * per * B), *norm = malloc(sizeof(float) * per * B);
    float *recon = malloc(sizeof(float) * per * B), *patch_err = malloc(sizeof(float) * (size_t)L * B);
    int *ids_keep = malloc(sizeof(int) * (size_t)K * B), *status = malloc(sizeof(int) * B);
    int *slot = malloc(sizeof(int) * B);
    uint8_t *removed = malloc((size_t)L * B);
    double *mse = malloc(sizeof(double) * B), *loss = malloc(sizeof(double) * B);
    char *errs = malloc((size_t)B * 512);
    Canvas *rows = calloc((size_t)at_once, sizeof *rows);
    char *titles = malloc((size_t)at_once * TITLE_MAX);
    Failure *fails = malloc(sizeof *fails * (size_t)at_once);
    FileGroup *groups = calloc((size_t)at_once, sizeof *groups);   // each image's files, written, to publish
    if (!m || !images || !norm || !recon || !patch_err || !ids_keep || !status || !slot || !removed || !mse ||
        !loss || !errs || !rows || !titles || !fails || !groups) {
        cli_error("reconstruct", "%s", m ? "out of memory" : err);
        failed = -1;
        goto done;
    }

    int bilinear = cli_flag(flags, nflags, "--upsample")->seen ? !strcmp(upsample_s, "bilinear") : !scale;
    FileFolders later = {0};
    Outputs outs = {out_dir, side, bilinear, raw, &later};
    double mse_sum = 0;
    int nok = 0, taken = 0;   // taken: another command wrote one of the files meanwhile; stop there
    int full = 0;             // OUTPUT_STOP_*: the output folder or the memory ran out (cmd/output.h): stop there too
    char gone[4096] = {0};   // input folders that went away during the run (cmd/output.h)
    for (int i0 = 0; i0 < inputs.n && !taken && !full; i0 += B) {
        int n = inputs.n - i0 < B ? inputs.n - i0 : B;
        // Views land in batch order; the ones that fail to load are left out of the forward pass.
        #pragma omp parallel for schedule(dynamic)
        for (int k = 0; k < n; k++)
            status[k] = inputs.v[i0 + k].unfit ? -1 : image_load_view(inputs.v[i0 + k].path, max_pixels, S, VIEW_WHOLE, C, images + per * k, errs + (size_t)k * 512, 512);
        int nb = 0, load_full = 0;   // an image that ran out of memory as it loaded: stop after the ones before it
        // A failure's line is kept in its place, said as the outputs reach it (below): an image before it
        // in the batch whose outputs fail says so first (docs/interface.md, section 2, "Bad files").
        for (int k = 0; k < n; k++) {
            if (status[k] && inputs.v[i0 + k].unfit) continue;   // said and counted above
            if (status[k]) {
                if (!output_input_gone(inputs.v[i0 + k].path, gone, sizeof gone))
                    cli_unread_keep(&unread, CLI_AT_ITEM(i0 + k), 1, inputs.v[i0 + k].path, errs + (size_t)k * 512);
                failed++;
                // Out of memory (or open files): the run stops at this image, as attention's does
                // (docs/interface.md, reconstruct): the images before it in the batch are written, none after.
                if (output_stop_kind(errs + (size_t)k * 512) == OUTPUT_STOP_MEMORY) { load_full = OUTPUT_STOP_MEMORY; break; }
                continue;
            }
            if (nb != k) memmove(images + per * nb, images + per * k, sizeof(float) * per);
            uint8_t *rm = removed + (size_t)L * nb;
            if (file_removed) {
                memcpy(rm, file_removed, (size_t)L);
                recon_keep_from_removed(rm, L, ids_keep + (size_t)K * nb);
            } else if (infer_random_mask((uint64_t)seed, inputs.v[i0 + k].key, L, K, ids_keep + (size_t)K * nb, rm)) {
                // Out of memory for its mask: the run stops at this image, as for its pixels above
                // (docs/interface.md, reconstruct): the images before it are written, none after.
                cli_unread_keep(&unread, CLI_AT_ITEM(i0 + k), 0, inputs.v[i0 + k].path, "out of memory");   // always said
                failed++;
                load_full = OUTPUT_STOP_MEMORY;   // the mask's memory, as the pixels' above
                break;
            }
            slot[nb++] = i0 + k;
        }
        if (!nb) { full = load_full; cli_unread_reach(&unread, CLI_AT_ITEM(i0 + n)); continue; }
        infer_batch(m, images, norm, ids_keep, removed, nb, K, recon, patch_err, mse, loss);
        // at_once panels drawn in turn, their files written side by side, then each image's line or
        // message in input order: the output depends on neither the thread count nor --batch.
        for (int c0 = 0; c0 < nb && !taken && !full; c0 += at_once) {
            int nc = nb - c0 < at_once ? nb - c0 : at_once;
            for (int j = 0; j < nc; j++) {
                int b = c0 + j;
                status[b] = !isfinite(mse[b]) || !isfinite(loss[b]) ? RECON_NONFINITE
                          : draw_output(&outs, cfg, &inputs.v[slot[b]], images + per * b, recon + per * b,
                                        removed + (size_t)L * b, patch_err + (size_t)L * b, mse[b], &rows[j],
                                        titles + (size_t)j * TITLE_MAX, &fails[j]);
            }
            #pragma omp parallel for schedule(dynamic)
            for (int j = 0; j < nc; j++) {
                int b = c0 + j;
                if (!status[b])
                    status[b] = write_output(&outs, cfg, &inputs.v[slot[b]], &rows[j], titles + (size_t)j * TITLE_MAX,
                                             recon + per * b, removed + (size_t)L * b, &groups[j], &fails[j]);
            }
            // Each image's files published, then its line said, one image after another: a stop signal
            // between the two waits for the line (file_stop_resume), the images not yet published go.
            for (int j = 0; j < nc; j++) {
                int b = c0 + j;
                const Input *in = &inputs.v[slot[b]];
                canvas_free(&rows[j]);
                cli_unread_reach(&unread, CLI_AT_ITEM(slot[b]));   // the lines before this image's
                if (status[b] == 0) status[b] = publish_output(&groups[j], force, &fails[j]);   // written: published now
                if (status[b] == RECON_NONFINITE) {   // nothing drawn or written for it
                    cli_error(in->path, "%s", INFER_NONFINITE_WHY);
                    failed++;
                } else if (status[b] == FILE_TAKEN) {   // the first such line; then the run stops (below)
                    if (!taken) cli_error(NULL, "%s", fails[j].who);
                    failed += !taken;
                    taken = 1;
                } else if (status[b] && status[b] != FILE_UNSYNCED) {   // one line for what stops the run, not one per image drawn with it
                    int kind = output_stop_kind(fails[j].why[0] ? fails[j].why : fails[j].who);
                    // The --out folder moved or deleted: its one line at the end, not this image's
                    // "DIR/<stem>.recon.png: No such file or directory" (docs/interface.md, section 1).
                    if (full == OUTPUT_STOP_GONE || (!kind && output_out_gone(out_dir, home))) kind = OUTPUT_STOP_GONE;
                    if ((full && kind) || kind == OUTPUT_STOP_GONE) {
                    } else if (!fails[j].why[0]) {
                        cli_error(NULL, "%s", fails[j].who);
                    } else {
                        cli_error(fails[j].who, "%s", fails[j].why);
                    }
                    failed += !(full && kind);
                    if (!full) full = kind;
                } else {
                    // "STEM masked_mse=V psnr=VdB", the line docs/interface.md section 5 promises to scripts,
                    // then "(INPUT -> PANEL)": two inputs of one base name (a/x.png, b/x.png -> x, x-1) told
                    // apart; %.6e, a column of one width whatever the magnitude.
                    cli_out("%s masked_mse=%.6e psnr=%.2fdB (%s -> %s/%s.recon.png)", in->stem, mse[b],
                            psnr_from_mse(mse[b]), in->path, out_dir, in->stem);
                    cli_flush_stdout();
                    mse_sum += mse[b];
                    nok++;
                    if (status[b] == FILE_UNSYNCED) { cli_error(NULL, "%s", fails[j].who); unsynced = 1; }   // written, not durable
                }
                file_stop_resume();   // the line out: a stop signal that came since the publish ends the run here
            }
        }
        if (!full) full = load_full;
        cli_unread_reach(&unread, CLI_AT_ITEM(i0 + n));   // the batch's failures after its last output
    }
    cli_unread_end(&unread, NULL);
    // The panels' names on disk before the run says it is done: each folder once, not once an image
    // (none to say of a folder gone: its files went with it).
    if (file_folders_sync(&later, err, sizeof err) && full != OUTPUT_STOP_GONE) { cli_error(NULL, "%s", err); unsynced = 1; }
    if (nok) {
        double mean = mse_sum / nok;
        printf("mean masked_mse=%.6e psnr=%.2fdB over %d image%s\n", mean, psnr_from_mse(mean), nok,
               nok == 1 ? "" : "s");
    }
    output_report_stop("reconstruct", full, out_dir, nok, inputs.n);
    if (!full && failed > 1)
        cli_error("reconstruct", "%d inputs failed", failed);   // one failure: its own line says it

done:
    if (failed) output_mkdir_undo(&made);   // only while empty: the images written keep it
    cli_unread_free(&unread);   // the lines of a run that stopped early (out of memory)
    mae_free(m);
    free(images); free(norm); free(recon); free(patch_err); free(ids_keep); free(status); free(slot);
    free(removed); free(mse); free(loss); free(errs); free(rows); free(titles); free(fails); free(groups);
    inputs_free(&inputs);
    free(file_removed);
    ckpt_free(&ck);
    return failed || unsynced ? 1 : 0;
}
