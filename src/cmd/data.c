// `vitmae data DIR [--json] [--max-pixels N] [--threads T]`: what training would see in a folder:
// usable images, skipped candidates with their reasons, ignored files (those that look like images
// named with the reason), warnings (a vitmae run's folder among the images' folders, images of one
// flat colour, hidden class folders, folders that are no class, files that are copies of another),
// classes and the size range.
#include <cJSON.h>
#include <dirent.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/runfolder.h"
#include "data/copies.h"
#include "data/dataset.h"
#include "io/json.h"
#include "kernels/cpu.h"

#define UNIFORM_WARNING "every pixel is the same colour: nothing to learn from"
#define UNIFORM_ALPHA_WARNING "every pixel is the same colour (after dropping alpha): nothing to learn from"
#define EMPTY_FOLDER_WARNING "holds no usable image: not a class"

// The warnings of both reports, in their order: a vitmae run's folder the images were found in (train
// and finetune refuse it: docs/data.md, "Files"), each image of one flat colour, then each hidden class
// folder as DIR/<name>, then each sub-folder of DIR that is no class since it holds no usable image,
// by name (docs/data.md; hidden ones, such as .git, are not said, as probe and finetune say them), then
// one line for the images whose files are copies of an earlier one's (data/copies.h): how many, and
// the first copy with the file it copies. One allocation holds the folders' paths, another that line;
// out of memory: -1, w empty.
typedef struct { const char *path, *why, *same_as; int copies; } DataWarning;
typedef struct { DataWarning *v; int n; char *paths, *copies_why, *run; } DataWarnings;

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static int warnings_make(const Dataset *ds, const char *dir, DataWarnings *w) {
    size_t n = 0, bytes = 1;
    char err[64];
    int *copy_of = malloc(sizeof *copy_of * (size_t)(ds->n ? ds->n : 1));
    int copies = copy_of ? dataset_copies(ds, copy_of, err, sizeof err) : -1, first = 0;
    char *copies_why = NULL;
    const char *copy_path = NULL, *orig = NULL;   // the warning's path and same_as
    if (copies > 0) {
        while (copy_of[first] < 0) first++;
        orig = ds->items[copy_of[first]].path;
        copy_path = ds->items[first].path;
        // Two names of one file (a symbolic or hard link beside its target) train twice as a copy does,
        // but "the same bytes" sent a user to delete "the copy", the file the link leads to.
        struct stat sa, sb;
        int one_file = stat(orig, &sa) == 0 && stat(copy_path, &sb) == 0 && sa.st_dev == sb.st_dev &&
                       sa.st_ino == sb.st_ino;
        // Which name is the symbolic link (the one to remove); neither: hard links.
        struct stat la;
        const char *link = !one_file ? NULL : lstat(orig, &la) == 0 && S_ISLNK(la.st_mode) ? orig
                         : lstat(copy_path, &la) == 0 && S_ISLNK(la.st_mode) ? copy_path : NULL;
        // The link is the warning's path (--json's "path", the name to remove), its target same_as.
        if (link && link == orig) { orig = copy_path; copy_path = link; }
        const char *how = !one_file ? "" : link ? " (a symbolic link to it)" : " (a hard link)";
        size_t len = strlen(orig) + strlen(how) + 200;
        if ((copies_why = malloc(len)))
            snprintf(copies_why, len, "%s %s%s; %d image%s of an earlier one (a copy trains twice, "
                     "and train's --val-frac can hold one out while the other trains)",
                     one_file ? "the same file as" : "the same bytes as", orig, how, copies, copies == 1 ? " is a copy" : "s are copies");
        n++;
    }
    // A run's folder found (--data RUN where --ckpt RUN was meant): its path, then its warning, in run.
    char run_at[4400], what[300], *run = NULL;
    size_t run_len = 0;
    if (run_data_run_folder(ds, run_at, sizeof run_at, what, sizeof what)) {
        run_len = strlen(run_at) + 1;
        size_t len = run_len + strlen(what) + 200;
        if ((run = malloc(len))) {
            memcpy(run, run_at, run_len);
            snprintf(run + run_len, len - run_len, "a vitmae run folder (it holds %s): its sample sheets and curves.png "
                     "are counted as images here; train and finetune refuse it (--ckpt takes a run folder)", what);
        }
        n++;
    }
    if (copies < 0 || (copies > 0 && !copies_why) || (run_len && !run)) {
        free(copy_of); free(copies_why); free(run); *w = (DataWarnings){0};
        return -1;
    }
    for (int i = 0; i < ds->n; i++) n += ds->items[i].uniform != 0;
    for (int i = 0; i < ds->nclasses; i++)
        if (ds->class_names[i][0] == '.') { n++; bytes += strlen(dir) + strlen(ds->class_names[i]) + 2; }
    struct dirent **sub = NULL;
    int nsub = scandir(dir, &sub, NULL, by_name);   // a folder that cannot be listed now: no such warnings
    for (int i = 0; i < nsub; i++) {
        if (!cli_unused_class_folder(dir, sub[i]->d_name, ds)) sub[i]->d_name[0] = 0;
        else { n++; bytes += strlen(dir) + strlen(sub[i]->d_name) + 2; }
    }
    *w = (DataWarnings){malloc(sizeof *w->v * (n ? n : 1)), 0, malloc(bytes), copies_why, run};
    if (!w->v || !w->paths) {
        free(w->v); free(w->paths); free(copies_why); free(run); *w = (DataWarnings){0};
        for (int i = 0; i < nsub; i++) free(sub[i]);
        free(sub); free(copy_of);
        return -1;
    }
    if (run) w->v[w->n++] = (DataWarning){run, run + run_len, NULL, 0};
    for (int i = 0; i < ds->n; i++)
        if (ds->items[i].uniform)
            w->v[w->n++] = (DataWarning){ds->items[i].path, ds->items[i].uniform == 2 ? UNIFORM_ALPHA_WARNING : UNIFORM_WARNING, NULL, 0};
    char *at = w->paths;
    for (int i = 0; i < ds->nclasses; i++) {
        if (ds->class_names[i][0] != '.') continue;
        w->v[w->n++] = (DataWarning){at, HIDDEN_CLASS_WARNING, NULL, 0};
        at += sprintf(at, "%s/%s", dir, ds->class_names[i]) + 1;
    }
    for (int i = 0; i < nsub; i++) {
        if (sub[i]->d_name[0]) {
            w->v[w->n++] = (DataWarning){at, EMPTY_FOLDER_WARNING, NULL, 0};
            at += sprintf(at, "%s/%s", dir, sub[i]->d_name) + 1;
        }
        free(sub[i]);
    }
    free(sub);
    if (copies > 0) w->v[w->n++] = (DataWarning){copy_path, copies_why, orig, copies};
    free(copy_of);
    return 0;
}

static int print_json(const Dataset *ds, const DataWarnings *w) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "ok", ds->n);
    cJSON_AddNumberToObject(root, "skipped", ds->nskipped);
    cJSON_AddNumberToObject(root, "ignored", ds->nignored);
    // One key per class folder: a name that is not UTF-8 is written with U+FFFD (io/json.h), so two
    // folders whose names differ only in such bytes would share a key (Python's json keeps one of
    // them); a later one takes the first free "<key> (2)", "<key> (3)", ... (docs/interface.md).
    cJSON *classes = cJSON_AddObjectToObject(root, "classes");
    for (int i = 0; i < ds->nclasses; i++) {
        char *key = utf8_clean(ds->class_names[i]);
        for (int k = 2; key && cJSON_GetObjectItemCaseSensitive(classes, key); k++) {
            char *base = utf8_clean(ds->class_names[i]);
            size_t len = base ? strlen(base) + 24 : 0;
            free(key);
            key = base ? malloc(len) : NULL;
            if (key) snprintf(key, len, "%s (%d)", base, k);
            free(base);
        }
        if (!key || !cJSON_AddNumberToObject(classes, key, ds->class_counts[i])) { free(key); cJSON_Delete(root); return -1; }
        free(key);
    }
    cJSON *skipped = cJSON_AddArrayToObject(root, "skipped_files");
    for (int i = 0; i < ds->nskipped; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "path", ds->skipped[i].path);
        cJSON_AddStringToObject(s, "reason", ds->skipped[i].reason);
        cJSON_AddItemToArray(skipped, s);
    }
    cJSON *ignored = cJSON_AddArrayToObject(root, "ignored_files");
    for (int i = 0; i < ds->nignored_files; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "path", ds->ignored[i].path);
        cJSON_AddStringToObject(s, "reason", ds->ignored[i].reason);
        cJSON_AddItemToArray(ignored, s);
    }
    cJSON *warnings = cJSON_AddArrayToObject(root, "warnings");
    for (int i = 0; i < w->n; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "path", w->v[i].path);
        cJSON_AddStringToObject(s, "warning", w->v[i].why);
        if (w->v[i].same_as) {   // the copies' line: the file copied, and how many images are copies
            cJSON_AddStringToObject(s, "same_as", w->v[i].same_as);
            cJSON_AddNumberToObject(s, "copies", w->v[i].copies);
        }
        cJSON_AddItemToArray(warnings, s);
    }
    // The folder as a whole (docs/interface.md section 5): unclassified images, the size range, greyscale.
    cJSON_AddNumberToObject(root, "unclassified", ds->nroot);
    cJSON *size = cJSON_AddObjectToObject(root, "size");
    cJSON_AddNumberToObject(size, "min_w", ds->min_w);
    cJSON_AddNumberToObject(size, "min_h", ds->min_h);
    cJSON_AddNumberToObject(size, "max_w", ds->max_w);
    cJSON_AddNumberToObject(size, "max_h", ds->max_h);
    cJSON_AddBoolToObject(root, "greyscale", ds->all_grey);
    char *text = json_print_utf8(root, 1);
    cJSON_Delete(root);
    if (!text) return -1;
    puts(text);
    cJSON_free(text);
    return 0;
}

// The report on stdout: every line that holds a name goes through cli_out, so a folder or file name
// with a newline or a terminal escape stays inside its line, written out (as on stderr).
static void print_text(const Dataset *ds, const char *dir, const DataWarnings *w) {
    cli_out("%s: %d ok, %d skipped, %d ignored", dir, ds->n, ds->nskipped, ds->nignored);
    if (ds->n)
        // Each side's range on its own: "20x1 to 5000x3000" read as two images' sizes where a wide and a
        // tall panorama gave the ends (no image there was either).
        printf("sizes: width %d to %d, height %d to %d, %s\n", ds->min_w, ds->max_w, ds->min_h, ds->max_h,
               ds->all_grey ? "all greyscale" : "colour");
    if (ds->nclasses) {
        printf("classes (%d):\n", ds->nclasses);
        for (int i = 0; i < ds->nclasses; i++) cli_out("  %s%*s %d", ds->class_names[i], cli_pad(ds->class_names[i], 24), "", ds->class_counts[i]);
    }
    if (ds->nroot) cli_out("unclassified (directly in %s): %d", dir, ds->nroot);
    if (ds->nskipped) {
        printf("skipped:\n");
        for (int i = 0; i < ds->nskipped; i++)   // every one; the hidden ones one line for them all, below
            if (!cli_hidden_file(ds->skipped[i].path)) cli_out("  %s: %s", ds->skipped[i].path, ds->skipped[i].reason);
        cli_hidden_skipped(NULL, "  ", ds);
    }
    if (ds->nignored_files) {
        printf("ignored (they look like images):\n");
        for (int i = 0; i < ds->nignored_files; i++) cli_out("  %s: %s", ds->ignored[i].path, ds->ignored[i].reason);
    }
    // The rest of the count is not listed (docs/data.md): said, so that "N ignored" above does not read
    // as a list that lost some.
    int others = ds->nignored - ds->nignored_files - ds->nignored_dirs;
    if (others > 0) printf("other files ignored (not images, only counted): %d\n", others);
    if (ds->nignored_dirs)
        printf("folders ignored (met again through a link, searched once): %d\n", ds->nignored_dirs);
    if (w->n) printf("warnings:\n");
    for (int i = 0; i < w->n; i++) cli_out("  %s: %s", w->v[i].path, w->v[i].why);
}

int cmd_data(int argc, char **argv) {
    int json = 0, threads = 0;
    long max_pixels = VITMAE_DEFAULT_MAX_PIXELS;
    Flag flags[] = {
        {"--json", FLAG_BOOL, &json, 0, 0, NULL, "print JSON: ok, skipped, ignored, classes, skipped_files, ignored_files, warnings, ...", NULL, 0},
        {"--max-pixels", FLAG_LONG, &max_pixels, 1, CLI_MAX_PIXELS_MAX, NULL,
         "skip images with more pixels than N (default 67108864 = 2^26)", "N", 0},
        {"--threads", FLAG_INT, &threads, 1, CLI_THREADS_MAX, NULL, "OpenMP threads decoding (default: all cores)", "T", 0},
    };
    const int nflags = (int)(sizeof flags / sizeof flags[0]);
    const char *synopsis = "DIR [--json] [--max-pixels N] [--threads T]";
    char *pos[1];
    int npos = 0;
    int rc = cli_parse("data", synopsis, flags, nflags, argc, argv, pos, 1, &npos);
    if (rc == CLI_HELP) return 0;
    if (rc != CLI_OK) return 2;
    if (npos != 1) { cli_error("data", "missing DIR: give the folder to check (see vitmae data --help)"); return 2; }
    if (cli_one_process_refused("data")) return 2;

    const char *dir = pos[0];
    Dataset ds;
    char err[CLI_ERR_MAX];
    if (cli_start_threads("data", threads)) return 1;
    DatasetOptions opt = {.max_pixels = max_pixels};
    int src = dataset_scan(dir, &opt, &ds, err, sizeof err);
    if (src) { cli_error(dataset_err_what(src, dir), "%s", err); return 1; }
    DataWarnings warnings;
    int oom = warnings_make(&ds, dir, &warnings) || (json && print_json(&ds, &warnings));
    if (!oom && !json) print_text(&ds, dir, &warnings);
    free(warnings.v);
    free(warnings.paths);
    free(warnings.copies_why);
    free(warnings.run);
    if (oom) { cli_error("data", "out of memory"); dataset_free(&ds); return 1; }
    int status = 0;
    if (ds.n == 0) {
        cli_error(dir, "no usable image (%d skipped, %d ignored)", ds.nskipped, ds.nignored);
        status = 1;
    }
    dataset_free(&ds);
    return status;
}
