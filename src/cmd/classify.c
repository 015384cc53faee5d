// `vitmae classify --ckpt FILE|RUN [--top K] [--json] INPUT...`: the predicted class and the top-K
// softmax probabilities (6 significant digits) of each image with a fine-tuned classifier
// (docs/encoder.md), and the top-1 accuracy over the images whose class is known.
//
// An image's label: in a folder INPUT, the first-level sub-folder it sits in (as `vitmae data` reads
// classes); for a file INPUT or an image directly in a folder INPUT, the name of the folder holding it
// when that is one of the model's classes. Images are seen as the evaluation view (docs/interface.md section 2) and normalised with the
// checkpoint's pixel statistics.
#include <cJSON.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/output.h"
#include "core/classifier.h"
#include "core/json_depth.h"
#include "data/image.h"
#include "infer/infer.h"
#include "infer/recon.h"
#include "io/classifier_ckpt.h"
#include "io/json.h"
#include "kernels/cpu.h"

typedef struct { char *path, *label; } Input;
typedef struct { Input *v; int n, cap; } InputList;

static int input_add(InputList *l, const char *path, const char *label) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        Input *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->v = v; l->cap = cap;
    }
    Input *in = &l->v[l->n];
    in->path = strdup(path);
    in->label = label ? strdup(label) : NULL;
    if (!in->path || (label && !in->label)) { free(in->path); free(in->label); return -1; }
    l->n++;
    return 0;
}

static void inputs_free(InputList *l) {
    for (int i = 0; i < l->n; i++) { free(l->v[i].path); free(l->v[i].label); }
    free(l->v);
    memset(l, 0, sizeof *l);
}

// The folder holding a file, when it is one of the model's classes; else NULL. Its name is the path's
// last folder as written ("val/Coat/a.png": Coat, also through a link of that name); a path that names
// none ("a.png", "./a.png", "../a.png", as `cd val/Coat && vitmae classify *.png` gives them) has the
// name of the folder it resolves to (such images had no label).
static const char *parent_class(const char *path, char *const *classes, int K, char *buf, size_t n) {
    const char *slash = strrchr(path, '/');
    const char *start = slash ? slash : path;
    while (start > path && start[-1] != '/') start--;
    snprintf(buf, n, "%.*s", (int)(slash ? slash - start : 0), start);
    if (!buf[0] || !strcmp(buf, ".") || !strcmp(buf, "..")) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
        char *abs = realpath(dir, NULL);
        const char *base = abs ? strrchr(abs, '/') : NULL;
        snprintf(buf, n, "%s", base ? base + 1 : "");
        free(abs);
    }
    for (int k = 0; k < K; k++) if (buf[0] && !strcmp(buf, classes[k])) return buf;
    return NULL;
}

// A class folder of a folder INPUT that is not one of the model's classes: its images have no label.
typedef struct { char *path; long images; } Unknown;

typedef struct {
    InputList *list;
    char *const *classes;
    int K;
    char **pos;
    int npos;
    Unknown *unknown;
    int nunknown;
} GatherCtx;

// Counts an image of class folder cls that is not a model class under its folder's path (INPUT/cls),
// to say once which folders' images are left out of the top-1 (docs/encoder.md).
static int unknown_add(GatherCtx *g, const char *path, const char *cls) {
    size_t lc = strlen(cls), len = 0;
    for (int i = 0; i < g->npos && !len; i++) {
        size_t l = strlen(g->pos[i]);
        if (strncmp(path, g->pos[i], l)) continue;
        const char *q = path + l;
        if (l && g->pos[i][l - 1] != '/' && *q++ != '/') continue;
        if (!strncmp(q, cls, lc) && q[lc] == '/') len = (size_t)(q + lc - path);
    }
    if (!len) return 0;   // a note only
    for (int u = 0; u < g->nunknown; u++)
        if (strlen(g->unknown[u].path) == len && !strncmp(g->unknown[u].path, path, len)) { g->unknown[u].images++; return 0; }
    Unknown *v = realloc(g->unknown, (size_t)(g->nunknown + 1) * sizeof *v);
    if (!v) return -1;
    g->unknown = v;
    if (!(v[g->nunknown].path = strndup(path, len))) return -1;
    v[g->nunknown++].images = 1;
    return 0;
}

// One line for all such folders, the first 3 named with their counts.
static void unknown_hold(CliHeld *held, const GatherCtx *g) {
    if (!g->nunknown) return;
    long images = 0;
    for (int u = 0; u < g->nunknown; u++) images += g->unknown[u].images;
    char names[3 * 600] = "";
    size_t at = 0;
    for (int u = 0; u < g->nunknown && u < 3 && at < sizeof names; u++)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%.500s (%ld)", u ? ", " : "", g->unknown[u].path,
                               g->unknown[u].images);
    if (g->nunknown > 3 && at < sizeof names) snprintf(names + at, sizeof names - at, " and %d more", g->nunknown - 3);
    cli_hold(held, NULL, "note: %ld image%s in %d class folder%s not among the model's classes %s no label, left out of "
             "the top-1: %s", images, images == 1 ? "" : "s", g->nunknown, g->nunknown == 1 ? "" : "s",
             images == 1 ? "has" : "have", names);
}

// The label of an input: its class folder from the scan when that is one of the model's classes (a
// folder of another name labels nothing), else, for an image not in a class folder, its parent folder
// when that is a class.
static int gather_add(void *ctx, const char *path, const char *cls) {
    GatherCtx *g = ctx;
    char buf[4096];
    if (cls) {
        int known = 0;
        for (int k = 0; k < g->K && !known; k++) known = !strcmp(g->classes[k], cls);
        if (!known && unknown_add(g, path, cls)) return -1;
        return input_add(g->list, path, known ? cls : NULL);
    }
    return input_add(g->list, path, parent_class(path, g->classes, g->K, buf, sizeof buf));
}

static int gather(char **pos, int npos, long max_pixels, char *const *classes, int K, InputList *list, int *failed,
                  CliHeld *held, CliUnread *unread) {
    GatherCtx g = {list, classes, K, pos, npos, NULL, 0};
    int rc = output_gather_inputs(pos, npos, max_pixels, gather_add, &g, failed, unread);
    if (!rc) unknown_hold(held, &g);
    for (int u = 0; u < g.nunknown; u++) free(g.unknown[u].path);
    free(g.unknown);
    return rc;
}

// p in JSON: 6 significant digits, so that a program reading it gets a small probability's digits too
// (3.1e-09, not 0). The text line prints its own with fixed decimals (below).
static void fmt6(char *buf, size_t n, double p) { snprintf(buf, n, "%.6g", p); }

// The view the checkpoint's run validated on (docs/encoder.md, "Validation views"): its train_state's
// crop_pct and interp, each where the flag did not give it; absent (a run from before them, a converted
// checkpoint), vitmae's whole view. 0, or -1 with *bad saying what is wrong with a value the flags
// leave to it (finetune writes them in range: a train_state edited by hand): one out of range, or a
// train_state that is not JSON at all, whose view would have been the default without a word. A value
// a flag replaces is not looked at.
static int run_view(const char *train_state, int crop_given, float *crop_pct, int interp_given, const char **interp,
                    const char **bad) {
    int oom = 0;
    const char *end = NULL;
    cJSON *o = train_state ? json_parse_n(train_state, strlen(train_state) + 1, &end, &oom) : NULL;
    static char deep[200];   // *bad of a state nested too deep, which names the reader's limit
    const cJSON *c = crop_given ? NULL : cJSON_GetObjectItemCaseSensitive(o, "crop_pct");
    const cJSON *f = interp_given ? NULL : cJSON_GetObjectItemCaseSensitive(o, "interp");
    ImageFilter filter;
    *bad = NULL;
    if (oom) *bad = "out of memory";
    else if (train_state && !o && !(crop_given && interp_given) &&
             json_parse_too_deep(train_state, strlen(train_state) + 1, end)) {
        // Well-formed but nested past the reader's limit: said so, not "not valid JSON" (core/json_depth.h).
        snprintf(deep, sizeof deep, "train_state: " JSON_TOO_DEEP_FMT ": the view its run validated on is unknown "
                 "(give --crop-pct and --interp)", CJSON_NESTING_LIMIT);
        *bad = deep;
    }
    else if (train_state && !o && !(crop_given && interp_given))
        *bad = "train_state is not valid JSON: the view its run validated on is unknown (give --crop-pct and --interp)";
    else if (c && (!cJSON_IsNumber(c) || !(c->valuedouble >= VIEW_CROP_PCT_MIN && c->valuedouble <= 1.0)))
        *bad = "train_state: 'crop_pct' out of range (give --crop-pct)";
    else if (f && (!cJSON_IsString(f) || augment_interp_parse(f->valuestring, &filter)))
        *bad = "train_state: 'interp' is not bilinear or bicubic (give --interp)";
    else {
        if (!crop_given && c) *crop_pct = (float)c->valuedouble;
        if (!interp_given && f) *interp = filter == IMAGE_BICUBIC ? "bicubic" : "bilinear";
    }
    cJSON_Delete(o);
    return *bad ? -1 : 0;
}

int cmd_classify(int argc, char **argv) {
    const char *ckpt_path = NULL, *interp = "bilinear";
    int top = 5, json = 0, batch = 32, threads = 0, ema = 0;
    float crop_pct = 1.0f;
    long max_pixels = VITMAE_DEFAULT_MAX_PIXELS;
    Flag flags[] = {
        {"--ckpt", FLAG_PATH, &ckpt_path, 0, 0, NULL, "fine-tuned classifier checkpoint of vitmae finetune (.safetensors, or a run folder: its checkpoint.safetensors) (required)", "FILE|RUN", 0},
        {"--top", FLAG_INT, &top, 1, 100000, NULL, "classes listed per image, most probable first (default 5)", "K", 0},
        {"--json", FLAG_BOOL, &json, 0, 0, NULL, "print one JSON object instead of text", NULL, 0},
        {"--ema", FLAG_BOOL, &ema, 0, 0, NULL, "classify with the weights' moving average the run kept (finetune --model-ema; as timm's validate.py with use_ema)", NULL, 0},
        {"--crop-pct", FLAG_FLOAT, &crop_pct, VIEW_CROP_PCT_MIN, 1.0, NULL, "the evaluation view: the shorter side resized to floor(img / F), the centre img x img kept (default: the fine-tuning run's validation view, else 1)", "F", 0},
        {"--interp", FLAG_CHOICE, &interp, 0, 0, "bilinear|bicubic", "the filter of the evaluation view's resize (default: the fine-tuning run's, else bilinear)", NULL, 0},
        {"--batch", FLAG_INT, &batch, 1, 4096, NULL, "images per forward pass (default 32)", "B", 0},
        {"--threads", FLAG_INT, &threads, 1, CLI_THREADS_MAX, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--max-pixels", FLAG_LONG, &max_pixels, 1, CLI_MAX_PIXELS_MAX, NULL,
         "refuse a larger INPUT image, skip one in an INPUT folder (default 67108864 = 2^26)", "N", 0},
    };
    const int nflags = (int)(sizeof flags / sizeof flags[0]);
    char **pos = malloc(sizeof(char *) * (size_t)(argc > 1 ? argc : 1));
    if (!pos) { cli_error("classify", "out of memory"); return 1; }
    int npos = 0;
    int rc = cli_parse("classify", "--ckpt FILE|RUN [--top K] [--json] [--ema] [--crop-pct F] [--interp bilinear|bicubic] [--batch B] [--threads T] [--max-pixels N] INPUT...", flags, nflags,
                       argc, argv, pos, argc, &npos);
    if (rc != CLI_OK) { free(pos); return rc == CLI_HELP ? 0 : 2; }
    if (!ckpt_path) { cli_error("classify", "--ckpt FILE|RUN is required (see vitmae classify --help)"); free(pos); return 2; }
    // A run folder stands for its checkpoint.safetensors (docs/interface.md, section 9).
    char ckpt_file[ST_RUN_LATEST_MAX];
    ckpt_path = st_checkpoint_arg(ckpt_path, ckpt_file, sizeof ckpt_file);
    if (npos == 0) { cli_error("classify", "no INPUT: give image files or folders (see vitmae classify --help)"); free(pos); return 2; }
    if (cli_one_process_refused("classify")) { free(pos); return 2; }
    char err[CLI_ERR_MAX];
    if (cli_start_threads("classify", threads)) { free(pos); return 1; }
    ClfCheckpoint ck;
    if ((ema ? clf_ckpt_load_ema_weights : clf_ckpt_load_weights)(ckpt_path, &ck, err, sizeof err)) { cli_error(NULL, "%s", err); free(pos); return 1; }
    const ClassifierConfig *cfg = &ck.cfg;
    int K = cfg->num_classes, S = cfg->enc.img_size, C = cfg->enc.in_chans;
    const char *bad;
    if (run_view(ck.train_state, cli_flag(flags, nflags, "--crop-pct")->seen, &crop_pct, cli_flag(flags, nflags, "--interp")->seen,
                 &interp, &bad)) {
        cli_error(NULL, "%s: %s", ckpt_path, bad);
        clf_ckpt_free(&ck);
        free(pos);
        return 1;
    }
    const ViewSpec view = cli_view(crop_pct, interp);
    if (top > K) top = K;
    int failed = 0;
    InputList in = {0};
    CliHeld held = {0};   // the note of classes the model lacks, said once the memory check has passed
    // The inputs that cannot be read, in input order, said from then on: 20 named, then a count (cmd/cli.h).
    CliUnread unread = {0};
    if (gather(pos, npos, max_pixels, ck.classes, K, &in, &failed, &held, &unread)) {
        cli_error("classify", "out of memory");
        cli_held_free(&held); cli_unread_free(&unread); inputs_free(&in); clf_ckpt_free(&ck); free(pos); return 1;
    }
    free(pos);
    int B = batch < in.n ? batch : (in.n ? in.n : 1);
    size_t per = (size_t)S * S * C;
    // Memory: refuse before allocating what cannot fit (exit 2 when a smaller --batch would).
    size_t extra = (per + (size_t)K) * sizeof(float);   // an image and its probabilities
    int mem = infer_memory_refusal(clf_bytes_needed_forward(cfg, B) + extra * (size_t)B,
                                   clf_bytes_needed_forward(cfg, 1) + extra, B, S, err, sizeof err);
    if (mem) {
        cli_error("classify", "%s", err);
        cli_held_free(&held); cli_unread_free(&unread); inputs_free(&in); clf_ckpt_free(&ck);
        return mem;
    }
    cli_unread_reach(&unread, CLI_AT_ITEM(0));   // the inputs before the first image, then the note
    cli_held_say(&held);
    cli_held_free(&held);
    Classifier *m = clf_create_forward_with(cfg, B, ck.params, err, sizeof err);   // the weights without a copy
    if (m) ck.params = NULL;
    float *images = malloc(per * B * sizeof(float)), *probs = malloc((size_t)B * K * sizeof(float));
    int *ok = malloc((size_t)B * sizeof(int)), *order = malloc((size_t)K * sizeof(int));
    char (*errs)[512] = malloc((size_t)B * sizeof *errs);
    cJSON *root = json ? cJSON_CreateObject() : NULL, *arr = json ? cJSON_AddArrayToObject(root, "images") : NULL;
    if (!m || !images || !probs || !ok || !order || !errs || (json && !arr)) {
        cli_error("classify", "%s", m ? "out of memory" : err);
        rc = 1;
        goto out;
    }
    long classified = 0, labelled = 0, correct = 0;
    char buf[64], gone[4096] = {0};   // input folders that went away during the run (cmd/output.h)
    for (int b0 = 0; b0 < in.n; b0 += B) {
        int n = in.n - b0 < B ? in.n - b0 : B;
        #pragma omp parallel for schedule(dynamic, 1)
        for (int k = 0; k < n; k++)
            ok[k] = image_load_view(in.v[b0 + k].path, max_pixels, S, view, C, images + (size_t)k * per, errs[k], sizeof errs[k]) == 0;
        // Failed images are left out, their lines kept in their places and said as the results reach
        // them (below): an image before one in the batch whose output is not finite says so first
        // (docs/interface.md, section 2, "Bad files"). The rest are packed to the front of the batch.
        int packed = 0;
        for (int k = 0; k < n; k++) {
            if (!ok[k]) {
                if (!output_input_gone(in.v[b0 + k].path, gone, sizeof gone))
                    cli_unread_keep(&unread, CLI_AT_ITEM(b0 + k), 1, in.v[b0 + k].path, errs[k]);
                failed++;
                continue;
            }
            if (packed != k) memmove(images + (size_t)packed * per, images + (size_t)k * per, per * sizeof(float));
            ok[packed++] = b0 + k;
        }
        if (packed == 0) { cli_unread_reach(&unread, CLI_AT_ITEM(b0 + n)); continue; }
        pixels_normalise(&cfg->enc, images, (long)packed * S * S);
        clf_forward(m, images, NULL, packed, 0.0f, NULL);
        memcpy(probs, clf_probs(m), (size_t)packed * K * sizeof(float));
        for (int k = 0; k < packed; k++) {
            const Input *x = &in.v[ok[k]];
            const float *p = probs + (size_t)k * K;
            cli_unread_reach(&unread, CLI_AT_ITEM(ok[k]));   // the lines before this image's
            int finite = 1;
            for (int j = 0; j < K; j++) finite &= isfinite(p[j]) != 0;
            if (!finite) {   // reported as an image that failed; no line, no JSON entry for it
                cli_error(x->path, "%s", INFER_NONFINITE_WHY);
                failed++;
                continue;
            }
            classified++;
            for (int j = 0; j < K; j++) order[j] = j;
            for (int j = 0; j < top; j++)   // partial selection sort: most probable first, ties by index
                for (int q = j + 1; q < K; q++)
                    if (p[order[q]] > p[order[j]]) { int s = order[j]; order[j] = order[q]; order[q] = s; }
            if (x->label) { labelled++; correct += !strcmp(ck.classes[order[0]], x->label); }
            if (json) {
                cJSON *o = cJSON_CreateObject(), *t = cJSON_CreateArray();
                cJSON_AddStringToObject(o, "path", x->path);
                cJSON_AddItemToObject(o, "label", x->label ? cJSON_CreateString(x->label) : cJSON_CreateNull());
                for (int j = 0; j < top; j++) {
                    cJSON *pair = cJSON_CreateArray();
                    cJSON_AddItemToArray(pair, cJSON_CreateString(ck.classes[order[j]]));
                    fmt6(buf, sizeof buf, p[order[j]]);
                    cJSON_AddItemToArray(pair, cJSON_CreateRaw(buf));
                    cJSON_AddItemToArray(t, pair);
                }
                cJSON_AddItemToObject(o, "top", t);
                cJSON_AddItemToArray(arr, o);
            } else {
                // The whole line, however many classes --top lists (a fixed buffer cut it short).
                CliLine line;
                FILE *ls = cli_line_open(&line);
                if (ls) {
                    fprintf(ls, "%s: %s", x->path, ck.classes[order[0]]);
                    if (x->label)
                        fprintf(ls, " (label %s%s)", x->label, strcmp(x->label, ck.classes[order[0]]) ? ", wrong" : "");
                    fprintf(ls, " |");
                    // A probability as a fraction of 1 with 6 decimals (0.526997 0.012346 1.000000), as
                    // PyTorch prints a softmax (tensor([0.6317, 0.2324, 0.1044])) and as the top-1 line
                    // beside it: one width, no exponent to read (%.6g wrote 0.0123457 beside 0.526997, and
                    // 1); below 5e-7 it reads 0.000000, the JSON keeps such a one's digits.
                    for (int j = 0; j < top; j++)
                        fprintf(ls, " %s %.6f", ck.classes[order[j]], (double)p[order[j]]);
                }
                if (cli_line_out(&line)) {
                    cli_error("classify", "out of memory");
                    rc = 1;
                    goto out;
                }
            }
        }
        cli_unread_reach(&unread, CLI_AT_ITEM(b0 + n));   // the batch's failures after its last result
        if (!json) fflush(stdout);   // the batch's lines out, even when a signal ends the run next (as attention's)
    }
    cli_unread_end(&unread, NULL);
    if (json) {
        // top1 as the JSON of probe and eval prints numbers: every digit that reads back (6 digits
        // gave 0.220588 for 15 of 68, which no longer equals 15 / 68).
        if (labelled) cJSON_AddNumberToObject(root, "top1", (double)correct / labelled);
        else cJSON_AddNullToObject(root, "top1");
        cJSON_AddItemToObject(root, "crop_pct", config_float_json(crop_pct));   // the evaluation view
        cJSON_AddStringToObject(root, "interp", interp);
        cJSON_AddStringToObject(root, "weights", ema ? "ema" : "model");   // --ema's moving average, or the weights
        char *s = json_print_utf8(root, 1);
        if (s) printf("%s\n", s);
        free(s);
    } else if (labelled) {
        char vt[96];
        cli_view_text(vt, sizeof vt, "; view ", view, S);
        // --ema said as embed's and probe's lines say it (docs/encoder.md, "--ema"): the weights read
        // are the result's, as the view is.
        printf("top-1: %.4f (%ld of %ld labelled image%s%s%s)\n", (double)correct / labelled, correct, labelled,
               labelled == 1 ? "" : "s", vt, ema ? CLI_EMA_WHAT : "");
    } else if (classified) {   // with none, the lines on stderr said why: no result, and one line a problem
        printf("top-1: no image sits in a class folder of the model's classes%s\n", ema ? " (EMA weights)" : "");
    }
    if (failed > 1) cli_error("classify", "%d inputs failed", failed);   // as reconstruct ends (docs/interface.md, section 2)
    rc = failed ? 1 : 0;
out:
    cli_unread_free(&unread);   // the lines of a run that stopped early (out of memory)
    cJSON_Delete(root);
    free(images); free(probs); free(ok); free(order); free(errs);
    clf_free(m);
    inputs_free(&in);
    clf_ckpt_free(&ck);
    return rc;
}
