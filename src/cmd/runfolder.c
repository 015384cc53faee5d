// Run-folder guards (see runfolder.h).
#include "cmd/runfolder.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <string.h>
#include <unistd.h>
#include <cJSON.h>
#include "cmd/cli.h"
#include "cmd/log.h"
#include "cmd/output.h"
#include "cmd/streams.h"
#include "core/config.h"
#include "core/json_depth.h"
#include "core/optim.h"
#include "dist/dist.h"
#include "io/checkpoint.h"
#include "io/files.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"

// The number in a name vitmae writes, prefix then the step ("checkpoint-<step>.safetensors",
// "step-<step>.png"): digits as %ld prints them (no sign, space or leading zero, at most 18), with *end
// after them; else -1. sscanf's "%ld" took "checkpoint-05" (a copy beside checkpoint-5) as step 5, so
// pruning removed the run's checkpoint-5 and kept the copy, and a step past a long is undefined there.
static long name_step(const char *name, const char *prefix, const char **end) {
    size_t k = strlen(prefix);
    if (strncmp(name, prefix, k)) return -1;
    const char *p = name + k;
    long v = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (++digits > 18) return -1;
        v = v * 10 + (*p - '0');
    }
    if (digits == 0 || (digits > 1 && name[k] == '0')) return -1;
    *end = p;
    return v;
}

// The step of "checkpoint-<step>.safetensors", or -1 for any other name.
static long snapshot_step(const char *name) {
    const char *end;
    long step = name_step(name, "checkpoint-", &end);
    return step >= 0 && !strcmp(end, ".safetensors") ? step : -1;
}

// The train_state of the checkpoint at path, parsed (the caller deletes it); NULL when it has none or
// cannot be read.
static cJSON *checkpoint_state(const char *path) {
    char err[CLI_ERR_MAX];
    StFile *f = st_open_header(path, err, sizeof err);
    const char *ts = f ? st_meta(f, "train_state") : NULL;
    cJSON *o = ts ? cJSON_Parse(ts) : NULL;
    if (f) st_close(f);
    return o;
}

// The run_id in the train_state of the checkpoint at path, in id; "" when it has none or cannot be read.
static void checkpoint_run_id(const char *path, char *id, size_t n) {
    cJSON *o = checkpoint_state(path);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "run_id");
    snprintf(id, n, "%s", cJSON_IsString(v) ? v->valuestring : "");
    cJSON_Delete(o);
}

// 1 when the file at path records a training run (a train_state in a safetensors header): a snapshot of
// a run, its run_id known or from before run ids; 0 for a user's notes, a converted checkpoint or a file
// that cannot be read under a snapshot's name, which is not a snapshot (docs/interface.md, section 5).
static int checkpoint_records_run(const char *path) {
    cJSON *o = checkpoint_state(path);
    int run = o != NULL;
    cJSON_Delete(o);
    return run;
}

// 1 when the checkpoint at path passes what a resume checks of its header (run_resume_load,
// cmd/train_state.c): it opens, holds the AdamW moments, and its decoder unless a classifier's. A
// snapshot a user stripped (decoder_* and mask_token, or the moments, removed to share it) was advised
// to resume, which then refused it, a full snapshot beside it.
static int checkpoint_resumes(const char *path) {
    char err[CLI_ERR_MAX];
    StFile *f = st_open_header(path, err, sizeof err);
    int moments = f && ckpt_has_moments(f);
    if (f) st_close(f);
    return moments &&
           ckpt_peek_kind(path, CKPT_FULL | CKPT_ENCODER_ONLY | CKPT_CLASSIFIER, err, sizeof err) != CKPT_ENCODER_ONLY;
}

// Whether the checkpoint at path is its run's last: its train_state's step has reached total_steps
// (exactly: is at it, a step past it being a damaged state that a resume names).
static int checkpoint_at_end(const char *path, int exactly) {
    cJSON *o = checkpoint_state(path);
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(o, "step"),
                *total = cJSON_GetObjectItemCaseSensitive(o, "total_steps");
    int done = cJSON_IsNumber(step) && cJSON_IsNumber(total) && total->valuedouble > 0 &&
               (exactly ? step->valuedouble == total->valuedouble : step->valuedouble >= total->valuedouble);
    cJSON_Delete(o);
    return done;
}
static int checkpoint_finished(const char *path) { return checkpoint_at_end(path, 0); }

// Whether a parsed config.json is the one train writes (cmd/train_out.c): an object whose "model" holds
// the model's sizes and whose "train" holds the run's state, as every vitmae has written it.
// config.json is a common name (a Hugging Face model folder holds one): another program's records no
// run, and is a file a run would write over (docs/interface.md, section 9).
static int config_is_vitmae(const cJSON *o) {
    static const char *const sizes[] = {"img_size", "patch_size", "embed_dim", "depth", "num_heads"};
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(o, "model");
    if (!cJSON_IsObject(o) || !cJSON_IsObject(model) || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "train")))
        return 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(model, sizes[k]))) return 0;
    return 1;
}

// dir/config.json parsed (the caller deletes it), and its "train" state's item key in *v (NULL when
// the file, the state or the key cannot be read, or the file is not vitmae's).
static cJSON *config_train_item(const char *dir, const char *key, const cJSON **v) {
    char path[4400];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = file_read_small(path);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    free(text);
    *v = config_is_vitmae(o) ? cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "train"), key) : NULL;
    return o;
}

// 1 when dir/config.json reads as vitmae's, 0 when not (none, unreadable, another program's).
static int config_reads_vitmae(const char *dir) {
    const cJSON *v;
    cJSON *o = config_train_item(dir, "step", &v);
    int ours = config_is_vitmae(o);
    cJSON_Delete(o);
    return ours;
}

// What dir/config.json is: CONFIG_NONE (no such name), CONFIG_OTHER (a file that reads as anything but
// vitmae's: another program's, or text that is no JSON), or CONFIG_RUN (vitmae's, or one that cannot
// be read, which may be a run's: taken as its record, never named as the user's).
enum { CONFIG_NONE, CONFIG_OTHER, CONFIG_RUN };
static int config_kind(const char *dir) {
    char path[4400];
    struct stat st;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (lstat(path, &st) != 0) return CONFIG_NONE;
    char *text = file_read_small(path);
    if (!text) return CONFIG_RUN;
    cJSON *o = cJSON_Parse(text);
    free(text);
    int ours = config_is_vitmae(o);
    cJSON_Delete(o);
    return ours ? CONFIG_RUN : CONFIG_OTHER;
}

// The run_id recorded in dir/config.json ("train"."run_id"), in id; "" when none can be read.
static void config_run_id(const char *dir, char *id, size_t n) {
    const cJSON *v;
    cJSON *o = config_train_item(dir, "run_id", &v);
    snprintf(id, n, "%s", cJSON_IsString(v) ? v->valuestring : "");
    cJSON_Delete(o);
}

// The run_id of the run dir holds: its checkpoint.safetensors's, else (that file gone) its
// config.json's (train's), else the one its snapshots share (finetune's folders have no config.json),
// RUN_ID_MIXED when they are of more than one run; "" when nothing tells (runs from before run ids).
#define RUN_ID_MIXED "?"
static void folder_run_id(const char *dir, char *id, size_t n) {
    char path[4400], x[64];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    checkpoint_run_id(path, id, n);
    if (!id[0]) config_run_id(dir, id, n);
    DIR *d = id[0] ? NULL : opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (snapshot_step(e->d_name) < 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        checkpoint_run_id(path, x, sizeof x);
        if (!x[0]) continue;
        if (!id[0]) snprintf(id, n, "%s", x);
        else if (strcmp(id, x)) { snprintf(id, n, "%s", RUN_ID_MIXED); break; }
    }
    if (d) closedir(d);
}

// 1 when the snapshot dir/name is not provably the run's whose id is own ("" for unknown: runs from
// before run ids, taken by name where the file records a run): another run's copy, a file without a
// run_id (a user's file, a converted checkpoint), or any, when own is RUN_ID_MIXED; the folder's
// pruning, resume advice and checks leave such files alone (docs/interface.md, section 9). With own
// unknown, a file that records no run (a user's notes under a snapshot's name) was advised as the
// folder's newest snapshot, whose resume then failed on it.
static int snapshot_of_other_run(const char *dir, const char *name, const char *own) {
    char path[4400], id[64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!own[0]) return !checkpoint_records_run(path);
    if (!strcmp(own, RUN_ID_MIXED)) return 1;
    checkpoint_run_id(path, id, sizeof id);
    return !id[0] || strcmp(id, own) != 0;
}

int run_folder_has_run(const char *dir) { return run_folder_has_run_of("train", dir); }

int run_folder_has_run_of(const char *cmd, const char *dir) {
    // A folder that cannot be listed (no read permission, a failing disk, no descriptor left) may hold a
    // run's files, which a run written into it would replace: taken as holding one, never written over.
    DIR *d = opendir(dir);
    struct stat st;
    if (!d) return errno != ENOENT && errno != ENOTDIR && stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
    int found = 0, train = !strcmp(cmd, "train");
    struct dirent *e;
    while (!found && (errno = 0, e = readdir(d))) {
        const char *n = e->d_name;
        // curves.png too: a run writes it over whatever is there (a user's own plot, a copied run's).
        // finetune writes no config.json: another program's (a Hugging Face folder's) is neither its
        // run nor a file it writes over ("the folder holds a run without a checkpoint").
        found = !strcmp(n, "checkpoint.safetensors") || !strcmp(n, "metrics.csv") ||
                (!strcmp(n, "config.json") && (train || config_kind(dir) != CONFIG_OTHER)) ||
                !strcmp(n, "curves.png") || snapshot_step(n) >= 0;
    }
    if (!e && errno) found = 1;   // the listing failed part-way
    closedir(d);
    return found;
}

// The folder this process holds (one run per process), released when the process ends.
static int held_fd = -1;

int run_folder_lock(const char *dir, char *err, size_t errlen) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 0;   // not made yet (or not a folder: making it fails with its own reason)
    struct stat held, now;
    if (held_fd >= 0 && fstat(held_fd, &held) == 0 && fstat(fd, &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino) {
        close(fd);
        return 0;
    }
    // A reader's look (run_folder_busy: a shared lock for microseconds) is not a run: tried again
    // for up to 200 ms, where a run's lock is held until it ends.
    int got = flock(fd, LOCK_EX | LOCK_NB);
    for (int i = 0; got != 0 && errno == EWOULDBLOCK && i < 20; i++) {
        struct timespec tick = {0, 10000000};
        nanosleep(&tick, NULL);
        got = flock(fd, LOCK_EX | LOCK_NB);
    }
    if (got != 0) {
        int e = errno;
        close(fd);
        if (e != EWOULDBLOCK) return 0;   // a filesystem without locks: go on as before
        snprintf(err, errlen, "%s: in use by another vitmae process (a run in it has not ended); wait for it to end, "
                 "or choose another folder", dir);
        return 1;
    }
    if (held_fd >= 0) close(held_fd);
    held_fd = fd;
    return 0;
}

int run_folder_busy(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 0;
    int busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);   // the shared lock, when taken, goes with it
    return busy;
}

// The series run_folder_default started (one per process): runs/<prefix><stamp>, and the k of its
// name (1: the base itself, k >= 2: base-k).
static char default_base[256];
static int default_k;

// The first of base (k = 1), base-2, base-3, ... from k = from that does not exist (lstat), into dir.
static int first_free(char *dir, size_t n, int from) {
    struct stat st;
    for (default_k = from; default_k <= 999; default_k++) {
        if (default_k == 1) snprintf(dir, n, "%s", default_base);
        else snprintf(dir, n, "%s-%d", default_base, default_k);
        if (lstat(dir, &st) != 0) return 0;
    }
    return -1;
}

void run_folder_default(const char *prefix, char *dir, size_t n) {
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char stamp[64];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(default_base, sizeof default_base, "runs/%s%s", prefix, stamp);
    if (first_free(dir, n, 1)) snprintf(dir, n, "%s", default_base);   // all taken: the refusals name it
}

int run_folder_default_next(char *dir, size_t n) {
    return default_base[0] ? first_free(dir, n, default_k + 1) : -1;
}

// The command whose rows dir/metrics.csv holds, from its header (train's ends its validation columns
// with val_psnr, finetune's with val_top1): "train", "finetune", or NULL when it cannot tell.
static const char *metrics_kind(const char *dir) {
    char path[4400], head[256];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    FILE *f = file_open_regular(path, "r", head, sizeof head);
    if (!f) return NULL;
    const char *kind = NULL;
    if (fgets(head, sizeof head, f)) kind = strstr(head, ",val_top1,") ? "finetune" : strstr(head, ",val_psnr,") ? "train" : NULL;
    fclose(f);
    return kind;
}

// The command whose run wrote the checkpoint at path, from its header: "finetune" for a classifier's
// with a training state, "train" for any other with one, NULL when it has none or cannot be read.
static const char *checkpoint_command(const char *path) {
    char err[CLI_ERR_MAX];
    StFile *f = st_open_header(path, err, sizeof err);
    const char *kind = f && st_meta(f, "train_state") ? (st_meta(f, "classifier") ? "finetune" : "train") : NULL;
    if (f) st_close(f);
    return kind;
}

// The command whose run a folder holds: its metrics.csv header tells; with that file deleted (or not a
// run's), the run's checkpoint.safetensors, train's config.json (finetune writes none), else the
// snapshots of the folder's run when they agree. "train", "finetune", or NULL when nothing tells. The
// refusals name the command that continues it (docs/data.md, "Run folders"): metrics.csv gone, --out
// advised the other command's --resume, which refused the checkpoint.
static const char *run_folder_kind(const char *dir) {
    const char *kind = metrics_kind(dir);
    char path[4400], own[64];
    if (kind) return kind;
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    if ((kind = checkpoint_command(path))) return kind;
    if (config_reads_vitmae(dir)) return "train";
    folder_run_id(dir, own, sizeof own);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (snapshot_step(e->d_name) < 0 || snapshot_of_other_run(dir, e->d_name, own)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        const char *x = checkpoint_command(path);
        if (!x) continue;
        if (kind && strcmp(kind, x)) { kind = NULL; break; }   // both commands' snapshots: none is the folder's
        kind = x;
    }
    if (d) closedir(d);
    return kind;
}

int run_folder_has_sheets(const char *dir) {
    char path[4400];
    snprintf(path, sizeof path, "%s/samples", dir);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    DIR *d = opendir(path);
    if (!d) return 1;   // cannot be listed: may hold sheets, never written over
    int found = 0;
    struct dirent *e;
    while (!found && (errno = 0, e = readdir(d))) {
        const char *end;
        found = name_step(e->d_name, "step-", &end) >= 0 && !strcmp(end, ".png");
    }
    if (!found && errno) found = 1;
    closedir(d);
    return found;
}

// What a folder with a run's files and no checkpoint holds, said after "the folder holds" / "the run":
// a train run's config.json, rewritten with each checkpoint's state, tells a run that stopped before its
// first checkpoint (step 0) from one whose checkpoints were moved or deleted since (step N); without it
// (finetune's folders, a removed or unreadable config.json) both are said as possible.
static const char *no_checkpoint_why(const char *dir, char *buf, size_t n) {
    const cJSON *v;
    cJSON *o = config_train_item(dir, "step", &v);
    long step = cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= RUN_STEPS_MAX ? (long)v->valuedouble : -1;
    cJSON_Delete(o);
    if (step == 0) snprintf(buf, n, "a run that stopped before its first checkpoint");
    else if (step > 0)
        snprintf(buf, n, "a run whose checkpoints were moved or deleted (its config.json records one saved at step %ld)",
                 step);
    else snprintf(buf, n, "a run without a checkpoint (it stopped before its first, or they were moved or deleted)");
    return buf;
}

// The smallest step of the files in dir under a snapshot's name that record no run (a user's notes, a
// converted checkpoint: checkpoint_records_run), with how many there are in *count; -1 when none.
static long user_snapshot(const char *dir, int *count) {
    char path[4400];
    long first = -1, s;
    *count = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if ((s = snapshot_step(e->d_name)) < 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (checkpoint_records_run(path)) continue;
        ++*count;
        if (first < 0 || s < first) first = s;
    }
    if (d) closedir(d);
    return first;
}

// The outputs a run writes over that a folder holds and that are no run's (a user's own): a config.json
// that is not vitmae's (train's: finetune writes none) and a metrics.csv without a run's header, and,
// with no record of a run (no config.json of vitmae's, no run's metrics.csv, no checkpoint of one run),
// curves.png, train's samples/ and, where snapshots is set, a file under a snapshot's name that records
// no run (user_snapshot), which is then no run that stopped early. Their names in buf ("metrics.csv and
// curves.png"), or NULL when there are none; *recorded (when given) says whether the folder's checkpoints
// record a run.
static const char *user_outputs(const char *cmd, const char *dir, int snapshots, int *recorded, char *buf, size_t n) {
    char path[4400], own[64], note[96];
    struct stat st;
    int train = !strcmp(cmd, "train");
    if (recorded) *recorded = 0;
    int config = config_kind(dir);
    if (config == CONFIG_RUN) return NULL;
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    int metrics = lstat(path, &st) == 0;
    if (metrics && metrics_kind(dir)) return NULL;   // a run's rows
    // The run's checkpoint.safetensors or snapshots (one run_id) record it as well: a finetune folder has
    // no config.json, and with its metrics.csv deleted or emptied its own curves.png read as a user's,
    // its resume refused though --out advised it (docs/interface.md, section 9). They vouch only for
    // what the run writes whose content cannot tell: another program's config.json or a metrics.csv of
    // other columns beside them was written over by the resume.
    folder_run_id(dir, own, sizeof own);
    int run = own[0] && strcmp(own, RUN_ID_MIXED);
    if (recorded) *recorded = run;
    if (metrics && run && S_ISREG(st.st_mode) && st.st_size == 0) metrics = 0;   // emptied: nothing of the user's in it
    snprintf(path, sizeof path, "%s/curves.png", dir);
    int curves = !run && lstat(path, &st) == 0;
    int sheets = !run && train && run_folder_has_sheets(dir);
    int notes = 0;
    long note_step = !run && snapshots ? user_snapshot(dir, &notes) : -1;
    if (notes > 1) snprintf(note, sizeof note, "checkpoint-%ld.safetensors (with %d more checkpoint-N.safetensors)",
                            note_step, notes - 1);
    else if (notes) snprintf(note, sizeof note, "checkpoint-%ld.safetensors", note_step);
    const char *names[5];
    int k = 0;
    if (train && config == CONFIG_OTHER) names[k++] = "config.json";
    if (metrics) names[k++] = "metrics.csv";
    if (curves) names[k++] = "curves.png";
    if (sheets) names[k++] = "samples/";
    if (notes) names[k++] = note;
    if (!k) return NULL;
    size_t used = 0;   // "a", "a and b", "a, b and c", "a, b, c and d"
    buf[0] = 0;
    for (int i = 0; i < k && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i == 0 ? "" : i == k - 1 ? " and " : ", ", names[i]);
    return buf;
}

static long newest_snapshot(const char *dir);
static long resumable_snapshot(const char *cmd, const char *dir, char *steps, size_t n);

// The way on for a folder without checkpoint.safetensors whose newest snapshot, path, is the finished
// run's last step (its resume trains and writes nothing, so the folder would stay without its
// checkpoint): the file itself, or ln to give the folder its checkpoint back; train's --steps extends it.
// replace: the folder's checkpoint.safetensors is there but cannot be read, which ln -f puts the snapshot
// in place of (plain ln fails on a name that is taken; a resume of the snapshot writes nothing over it).
static const char *finished_advice(const char *cmd, const char *path, const char *dir, int replace, char *buf,
                                   size_t n) {
    char latest[4400], file[FILE_SHELL_WORD_MAX], to[FILE_SHELL_WORD_MAX];
    snprintf(latest, sizeof latest, "%s/checkpoint.safetensors", dir);
    file_shell_word(path, file, sizeof file);
    snprintf(buf, n, "pass that file where a checkpoint is asked for, or give the folder its checkpoint back with: ln "
             "%s%s %s%s%s%s", replace ? "-f " : "", file, file_shell_word(latest, to, sizeof to),
             strcmp(cmd, "train") ? "" : " (train --resume ", strcmp(cmd, "train") ? "" : file,
             strcmp(cmd, "train") ? "" : " --steps N, more than its steps, extends the run)");
    return buf;
}

const char *run_new_run_flag(const char *init, char *buf, size_t n, int *gone) {
    struct stat st;
    *gone = 0;
    if (!strcmp(init, "scratch")) return "--from-scratch";
    if (stat(init, &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) { *gone = 1; return "--ckpt CHECKPOINT"; }
    char word[FILE_SHELL_WORD_MAX];
    snprintf(buf, n, "--ckpt %s", file_shell_word(init, word, sizeof word));
    return buf;
}

const char *run_new_run_way(const char *init, char *way, size_t waylen) {
    char ckpt[FILE_SHELL_WORD_MAX + 8];
    int gone;
    const char *flag = run_new_run_flag(init, ckpt, sizeof ckpt, &gone);
    if (gone) snprintf(way, waylen, "start a new run with %s for another (this run started from %s, which is gone)", flag,
                       init);
    else snprintf(way, waylen, "start a new run with %s for another", flag);
    return way;
}

// res, a path, made the words typed after --resume: the path as a shell word (file_shell_word), then steps.
static int resume_word(char *res, size_t n, const char *steps) {
    char word[FILE_SHELL_WORD_MAX];
    snprintf(res, n, "%s%s", file_shell_word(res, word, sizeof word), steps);
    return 1;
}

// What --out's refusal advises to --resume for the run dir holds: dir itself, or the snapshot where
// --resume DIR would be refused naming it (no checkpoint.safetensors, or rows of metrics.csv missing
// before it, with the --steps its resume takes: run_snapshot_steps): 1 with that in res, as typed (resume_word); 2 with the
// snapshot in res when it is the finished run's last step (no checkpoint.safetensors: its resume
// would do nothing, finished_advice instead); 3 with the checkpoint's path in res when it is a finished
// fine-tuning run's (finetune --resume trains nothing more, and a fine-tuning run keeps its --steps: a new
// run is the way on); 4 with the snapshot in res, as 2, where checkpoint.safetensors is there but cannot be
// read (why in unread: its resume, in its folder, would leave the damaged file as the folder's checkpoint);
// 0 when the folder offers none that resumes there (its latest another run's copy,
// its snapshots of more than one run): advice to --resume DIR was refused in turn.
static int resume_target(const char *cmd, const char *dir, char *res, size_t n, char *unread, size_t un) {
    char latest[4400], why[CLI_ERR_MAX], steps[40] = "";
    struct stat st;
    snprintf(latest, sizeof latest, "%s/checkpoint.safetensors", dir);
    snprintf(res, n, "%s", dir);
    long snap;
    int newest = 0;   // the snapshot is the newest, with no checkpoint.safetensors: perhaps the finished run's last
    int damaged = 0;  // the newest, with a checkpoint.safetensors that cannot be read
    if (lstat(latest, &st) != 0) {
        if (errno != ENOENT) return resume_word(res, n, "");
        snap = resumable_snapshot(cmd, dir, steps, sizeof steps);
        if (snap < 0) return 0;   // none of its own (two runs' snapshots): --resume DIR says so
        newest = snap == newest_snapshot(dir);
    } else {
        // The latest: another run's copy resumes nowhere here; rows missing before it name a snapshot;
        // one that cannot be read, the newest snapshot if any (else --resume DIR says what is wrong).
        StFile *f = st_open_header(latest, why, sizeof why);
        if (f && run_folder_foreign_checkpoint(latest, dir)) { st_close(f); return 0; }
        long step = 0, last = -1;
        snap = f ? run_metrics_gap_of(dir, st_meta(f, "train_state"), &step, &last)
                 : resumable_snapshot(cmd, dir, steps, sizeof steps);
        if (f && snap >= 0) run_snapshot_steps(cmd, dir, snap, st_meta(f, "train_state"), steps, sizeof steps);
        if (f) st_close(f);
        if (!f && snap >= 0 && snap == newest_snapshot(dir)) {
            size_t skip = strlen(latest);   // the reason names the file, which the line names already
            const char *reason = !strncmp(why, latest, skip) && !strncmp(why + skip, ": ", 2) ? why + skip + 2 : why;
            snprintf(unread, un, "%s", reason);
            damaged = 1;
        }
        if (snap < 0 && !strcmp(cmd, "finetune") && checkpoint_finished(latest)) {   // train's --steps would extend it
            snprintf(res, n, "%s", latest);
            return 3;
        }
        if (snap < 0 && !checkpoint_resumes(latest)) return 0;   // --resume DIR says why (encoder-only, stripped)
        if (snap < 0) return resume_word(res, n, "");
    }
    snprintf(res, n, "%s/checkpoint-%ld.safetensors", dir, snap);
    if (newest && checkpoint_finished(res)) return 2;   // as --resume DIR says (run_resume_missing)
    if (damaged && checkpoint_finished(res)) return 4;
    if (!strcmp(cmd, "finetune") && checkpoint_finished(res)) return 3;
    return resume_word(res, n, steps);
}

// A finished fine-tuning run, whose checkpoint is at path: its last step, returned, and in way the way
// on that its --resume given another --steps names (run_new_run_way of the init the run records).
static long finished_run_way(const char *path, char *way, size_t n) {
    cJSON *o = checkpoint_state(path);
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(o, "total_steps"),
                *init = cJSON_GetObjectItemCaseSensitive(o, "init");
    long last = cJSON_IsNumber(total) ? (long)total->valuedouble : 0;
    if (cJSON_IsString(init)) run_new_run_way(init->valuestring, way, n);
    else snprintf(way, n, "start a new run for another");
    cJSON_Delete(o);
    return last;
}

long run_finished_way(const char *path, char *way, size_t n) {
    // At its last step exactly: a step past total_steps is a damaged state, which finetune --resume names.
    return checkpoint_at_end(path, 1) ? finished_run_way(path, way, n) : 0;
}

int run_folder_refusal(const char *cmd, const char *dir, int why, char *err, size_t errlen) {
    const char *kind = why == RUN_HOLDS_RUN ? run_folder_kind(dir) : NULL;
    char names[160], gone[160];
    const char *mine = why == RUN_HOLDS_NO_CHECKPOINT ? user_outputs(cmd, dir, 1, NULL, names, sizeof names) : NULL;
    char latest[4400], aside[4096], word[FILE_SHELL_WORD_MAX];   // word: dir as typed in a command (file_shell_word)
    snprintf(latest, sizeof latest, "%s/checkpoint.safetensors", dir);
    run_folder_aside_base(dir, aside, sizeof aside);   // where --overwrite moves it: the advice names that
    // A finished fine-tuning run: finetune --resume trains it no more (it keeps its --steps), so the way
    // "continue it with vitmae finetune --resume" led nowhere (train's --resume --steps N extends a run).
    if (kind && strcmp(kind, cmd) && !strcmp(kind, "finetune") && checkpoint_finished(latest))
        snprintf(err, errlen, "%s --out %s: the folder already holds a finished fine-tuning run (a fine-tuning run keeps "
                 "its --steps: it trains no more); pass another --out folder, or --overwrite to move it aside (to "
                 "%s.old-N)", cmd, dir, aside);
    else if (kind && strcmp(kind, cmd))   // the other command's run: --resume here would be refused
        snprintf(err, errlen, "%s --out %s: the folder already holds a %s run (continue it with vitmae %s --resume %s); "
                 "pass another --out folder, or --overwrite to move it aside (to %s.old-N)", cmd, dir,
                 strcmp(kind, "train") ? "fine-tuning" : "pretraining", kind, file_shell_word(dir, word, sizeof word), aside);
    else if (mine)
        snprintf(err, errlen, "%s --out %s: the folder holds %s, which a run writes over; pass --overwrite to move "
                 "the folder aside (to %s.old-N) and start, or another --out folder", cmd, dir, mine, aside);
    else if (why == RUN_HOLDS_NO_CHECKPOINT)
        snprintf(err, errlen, "%s --out %s: the folder holds %s, nothing to resume; pass --overwrite to move it aside "
                 "(to %s.old-N) and start again, or another --out folder", cmd, dir,
                 no_checkpoint_why(dir, gone, sizeof gone), aside);
    else if (why == RUN_HOLDS_OTHER && (mine = user_outputs(cmd, dir, 1, NULL, names, sizeof names)))   // no run: a user's files
        snprintf(err, errlen, "%s --out %s: the folder holds %s, which a run writes over; a resumed run continues in "
                 "its own folder or in a new --out folder", cmd, dir, mine);
    else if (why == RUN_HOLDS_OTHER)
        snprintf(err, errlen, "%s --out %s: the folder already holds another run; a resumed run continues in its own "
                 "folder or in a new --out folder", cmd, dir);
    else if (why == RUN_HOLDS_SAME)   // a copy of the run's folder: "another run" was untrue
        snprintf(err, errlen, "%s --out %s: the folder already holds this run (a copy: the same run_id); continue it "
                 "there with --resume %s, or give a new --out folder", cmd, dir, file_shell_word(dir, word, sizeof word));
    else if (why == RUN_HOLDS_MEANWHILE)
        snprintf(err, errlen, "%s --out %s: the folder already holds a run (started by another process meanwhile); "
                 "choose another --out folder", cmd, dir);
    else {
        char res[FILE_SHELL_WORD_MAX + 40], way[CLI_ERR_MAX], unread[CLI_ERR_MAX];
        int target = resume_target(cmd, dir, res, sizeof res, unread, sizeof unread);
        if (target == 2)
            snprintf(err, errlen, "%s --out %s: the folder already holds a finished run without its "
                     "checkpoint.safetensors; its newest snapshot, %s, is the run's last step: %s; or pass another "
                     "--out folder, or --overwrite to move the old run aside (to %s.old-N)", cmd, dir, res,
                     finished_advice(cmd, res, dir, 0, way, sizeof way), aside);
        else if (target == 4)   // its resume said "nothing to train" and left the damaged file (docs/interface.md, section 9)
            snprintf(err, errlen, "%s --out %s: the folder already holds a finished run whose checkpoint.safetensors "
                     "cannot be read (%s); its newest snapshot, %s, is the run's last step: %s; or pass another --out "
                     "folder, or --overwrite to move the old run aside (to %s.old-N)", cmd, dir, unread, res,
                     finished_advice(cmd, res, dir, 1, way, sizeof way), aside);
        else if (target == 3) {
            long last = finished_run_way(res, way, sizeof way);
            snprintf(err, errlen, "%s --out %s: the folder already holds a finished run (it reached its last step, %ld, "
                     "and a fine-tuning run keeps its --steps); %s, in another --out folder or with --overwrite to move "
                     "the old run aside (to %s.old-N)", cmd, dir, last, way, aside);
        } else if (target)
            snprintf(err, errlen, "%s --out %s: the folder already holds a run; pass --resume %s to continue it, another "
                     "--out folder, or --overwrite to move the old run aside (to %s.old-N)", cmd, dir, res, aside);
        else
            snprintf(err, errlen, "%s --out %s: the folder already holds a run that cannot be resumed as it is (%s "
                     "--resume %s says why); pass another --out folder, or --overwrite to move it aside (to %s.old-N)",
                     cmd, dir, cmd, file_shell_word(dir, word, sizeof word), aside);
    }
    return CLI_USAGE;
}

int run_folder_aside_base(const char *dir, char *base, size_t n) {
    snprintf(base, n, "%s", dir);
    size_t len = strlen(base);
    while (len > 1 && base[len - 1] == '/') base[--len] = 0;   // "runs/x/" -> "runs/x"
    const char *last = strrchr(base, '/');
    last = last ? last + 1 : base;
    if (strcmp(last, ".") && strcmp(last, "..")) return 0;
    // "." renamed to "..old-1" fails (EBUSY), "sub/.." to "sub/...old-1" would be inside the folder itself:
    // its own name, resolved, gives DIR.old-N beside it (docs/data.md, "Run folders").
    char *real = realpath(base, NULL);
    int resolved = real && strlen(real) < n;
    if (resolved) snprintf(base, n, "%s", real);
    free(real);
    return resolved;
}

int run_folder_move_aside(const char *dir, char *moved, size_t movedlen, char *err, size_t errlen) {
    char base[4096], reason[128];
    run_folder_aside_base(dir, base, sizeof base);
    for (int n = 1; n < 100000; n++) {
        snprintf(moved, movedlen, "%s.old-%d", base, n);
        if (renameat2(AT_FDCWD, base, AT_FDCWD, moved, RENAME_NOREPLACE) == 0) return 0;
        if (errno == EEXIST) continue;
        snprintf(err, errlen, "cannot move %s aside to %s: %s", base, moved, file_reason(errno, reason, sizeof reason));
        return -1;
    }
    snprintf(err, errlen, "cannot move %s aside: every %s.old-N is taken", base, base);
    return -1;
}

// 1 when path's resolved name lies below dir's, with the rest of it ("/checkpoint.safetensors") in rest.
static int path_below(const char *path, const char *dir, char *rest, size_t restlen) {
    char *p = realpath(path, NULL), *d = realpath(dir, NULL);
    size_t n = d ? strlen(d) : 0;
    int below = p && d && !strncmp(p, d, n) && p[n] == '/' && strlen(p + n) < restlen;
    if (below) snprintf(rest, restlen, "%s", p + n);
    free(p);
    free(d);
    return below;
}

int run_folder_overwrite(const char *cmd, char *dir, size_t dirlen, const char *file, char *file_now, size_t nowlen,
                         char *err, size_t errlen) {
    char moved[4200], rest[4096], why[CLI_ERR_MAX], base[4096];
    int inside = file && path_below(file, dir, rest, sizeof rest) && strlen(rest) < nowlen;
    // Resolved before the move: "." names the moved folder after it (the working directory goes with it).
    int resolved = run_folder_aside_base(dir, base, sizeof base) && strlen(base) < dirlen;
    if (run_folder_move_aside(dir, moved, sizeof moved, why, sizeof why)) {
        snprintf(err, errlen, "%s --overwrite: %s", cmd, why);
        return -1;
    }
    if (resolved) snprintf(dir, dirlen, "%s", base);   // the new run goes where the old one was
    char *cwd = getcwd(NULL, 0), *now = realpath(moved, NULL);
    size_t nl = now ? strlen(now) : 0;
    int cwd_went = cwd && now && !strncmp(cwd, now, nl) && (cwd[nl] == 0 || cwd[nl] == '/');
    free(cwd);
    free(now);
    cli_out("--overwrite: the old run in %s was moved to %s%s", dir, moved,
            cwd_went ? " (the working directory with it)" : "");
    fflush(stdout);   // said even where a second stop signal ends the process at once (no exit flush)
    if (inside) snprintf(file_now, nowlen, "%.*s%s", (int)(nowlen - 1 - strlen(rest)), moved, rest);
    return 0;
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

// 1 when n is "<base>.tmp.<pid>" or "<base>.tmp.<pid>.<serial>": the temporary name under which
// file_write_atomic and png_write write `base` before renaming it into place.
static int is_output_temp(const char *n, const char *base) {
    size_t lb = strlen(base);
    if (strncmp(n, base, lb) || strncmp(n + lb, ".tmp.", 5)) return 0;
    const char *p = n + lb + 5;
    for (int part = 0; part < 2; part++) {
        if (*p < '0' || *p > '9') return 0;
        while (*p >= '0' && *p <= '9') p++;
        if (!*p) return 1;
        if (*p++ != '.') return 0;
    }
    return 0;
}

// 1 when n is a temporary name of samples/step-<step>.png.
static int is_sample_temp(const char *n) {
    const char *end;
    char base[64];
    if (name_step(n, "step-", &end) < 0 || strncmp(end, ".png", 4)) return 0;
    int used = (int)(end + 4 - n);
    if (used >= (int)sizeof base) return 0;
    snprintf(base, sizeof base, "%.*s", used, n);
    return is_output_temp(n, base);
}

static void remove_matching(const char *dir, int samples) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        int stale;
        if (samples) stale = is_sample_temp(n);
        else stale = (strncmp(n, ".checkpoint", 11) == 0 && strstr(n, ".safetensors.tmp-") != NULL) ||
                     is_output_temp(n, "config.json") ||
                     is_output_temp(n, "curves.png") || is_output_temp(n, "metrics.csv");
        if (!stale) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, n);
        unlink(path);
    }
    closedir(d);
}

// The pid of publish_latest's temporary link made on host, ".checkpoint.link.<host>.<pid>.XXXXXX"
// (six letters or digits), or 0 for any other name: a user's ".checkpoint.link.notes" is not ours.
static long latest_link_leftover(const char *name, const char *host) {
    long pid;
    const char *p = strncmp(name, ".checkpoint.link.", 17) ? NULL : file_name_host_pid(name + 17, host, &pid);
    if (!p || *p++ != '.') return 0;
    for (int i = 0; i < 6; i++)
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9'))) return 0;
    return p[6] ? 0 : pid;
}

// Temporary files of writes that a kill (SIGKILL, power loss) interrupted: ckpt_save's
// ".checkpoint*.safetensors.tmp-XXXXXX", publish_latest's ".checkpoint.link.<host>.<pid>.XXXXXX" (only
// this host's, and only when that process is gone: io/files.h's file_sweep_dead), and the
// "NAME.tmp.<pid>[.<serial>]" of config.json, metrics.csv, curves.png and samples/step-<step>.png.
// Removed when a run starts or resumes in the folder, so repeated crashes do not fill the disk or
// the folder.
void run_remove_stale_temp_files(const char *dir) {
    remove_matching(dir, 0);
    file_sweep_dead(dir, latest_link_leftover);
    char samples[4400];
    snprintf(samples, sizeof samples, "%s/samples", dir);
    remove_matching(samples, 1);
}

int run_remove_sheets_past(const char *dir, long step, char *note, size_t n, char *err, size_t errlen) {
    char samples[4400], path[4700], reason[128];
    snprintf(samples, sizeof samples, "%s/samples", dir);
    note[0] = 0;
    DIR *d = opendir(samples);
    if (!d && errno == ENOENT) return 0;   // no sheet written yet
    if (!d) {   // sheets past step may be there: said, not guessed
        snprintf(err, errlen, "%s: cannot list the folder: %s", samples, file_reason(errno, reason, sizeof reason));
        return -1;
    }
    long removed = 0, first = -1;
    struct dirent *e;
    while ((errno = 0, e = readdir(d))) {
        const char *end = "";
        long s = name_step(e->d_name, "step-", &end);
        struct stat st;
        // Only the names vitmae writes, "step-<n>.png": a user's "step-06.png" or notes, a folder or a
        // link of that name are not the run's sheets and stay.
        if (s <= step || strcmp(end, ".png")) continue;
        snprintf(path, sizeof path, "%s/%s", samples, e->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (unlink(path) != 0) {
            snprintf(err, errlen, "%s: cannot remove this sample sheet of a step the resume trains again: %s", path,
                     file_reason(errno, reason, sizeof reason));
            closedir(d);
            return -1;
        }
        removed++;
        if (first < 0 || s < first) first = s;
    }
    if (errno) {
        snprintf(err, errlen, "%s: cannot list the folder: %s", samples, file_reason(errno, reason, sizeof reason));
        closedir(d);
        return -1;
    }
    closedir(d);
    if (removed)
        snprintf(note, n, "removed %ld sample sheet%s past step %ld (samples/step-%ld.png%s): %s trained again", removed,
                 removed == 1 ? "" : "s", step, first, removed == 1 ? "" : " ...",
                 removed == 1 ? "that step is" : "those steps are");
    return removed ? 1 : 0;
}

int run_sheet_missing(const char *dir, long step) {
    char path[4400];
    struct stat st;
    snprintf(path, sizeof path, "%s/samples/step-%ld.png", dir, step);
    return lstat(path, &st) != 0 && errno == ENOENT;
}

// The newest RUN/checkpoint-<step>.safetensors of the run the folder holds where its run_id is known
// (another run's copy is no advice to resume), of those a resume takes where resumes is set
// (checkpoint_resumes: a user's stripped copy is none); -1 when there is none, or -2 with errno when the
// folder cannot be listed (opendir, or readdir part-way): one not listed may hold snapshots, and each
// caller says so rather than take it for a folder without (docs/interface.md section 9).
static long newest_snapshot_of(const char *dir, int resumes) {
    DIR *d = opendir(dir);
    if (!d) return -2;
    long best = -1;
    char own[64], path[4400];
    folder_run_id(dir, own, sizeof own);
    struct dirent *e;
    while ((errno = 0, e = readdir(d))) {
        long s = snapshot_step(e->d_name);
        if (s <= best || snapshot_of_other_run(dir, e->d_name, own)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!resumes || checkpoint_resumes(path)) best = s;
    }
    int failed = errno;
    closedir(d);
    if (failed) { errno = failed; return -2; }
    return best;
}
static long newest_snapshot(const char *dir) { return newest_snapshot_of(dir, 1); }

// The snapshot to advise for a resume of dir's run: its newest own one (newest_snapshot), or, where
// metrics.csv ends before it with rows due between, the newest at or before the log's end, which
// writes them again (the newest was advised, and its resume is refused: run_metrics_gap_of), with
// the --steps its resume takes in steps (run_snapshot_steps; "" for the newest). -1 when there is
// none, -2 with errno when dir cannot be listed.
static long resumable_snapshot(const char *cmd, const char *dir, char *steps, size_t n) {
    steps[0] = 0;
    long snap = newest_snapshot(dir);
    if (snap < 0) return snap;
    char path[4400], why[CLI_ERR_MAX];
    snprintf(path, sizeof path, "%s/checkpoint-%ld.safetensors", dir, snap);
    StFile *f = st_open_header(path, why, sizeof why);
    long step = 0, last = -1, back = f ? run_metrics_gap_of(dir, st_meta(f, "train_state"), &step, &last) : -1;
    if (back >= 0) run_snapshot_steps(cmd, dir, back, st_meta(f, "train_state"), steps, n);
    if (f) st_close(f);
    return back >= 0 ? back : snap;
}

// The step and total_steps of the checkpoint at path's train_state: 0, or -1 when they cannot be read.
static int saved_schedule(const char *path, long *step, long *total) {
    char err[CLI_ERR_MAX];
    StFile *f = st_open_header(path, err, sizeof err);
    const char *ts = f ? st_meta(f, "train_state") : NULL;
    cJSON *o = ts ? cJSON_Parse(ts) : NULL;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "step"), *n = cJSON_GetObjectItemCaseSensitive(o, "total_steps");
    int ok = cJSON_IsNumber(s) && cJSON_IsNumber(n);
    if (ok) { *step = (long)s->valuedouble; *total = (long)n->valuedouble; }
    cJSON_Delete(o);
    if (f) st_close(f);
    return ok ? 0 : -1;
}

const char *run_snapshot_steps(const char *cmd, const char *dir, long snap, const char *train_state, char *buf,
                               size_t n) {
    char path[4400];
    long step, own;
    buf[0] = 0;
    cJSON *o = train_state && !strcmp(cmd, "train") ? cJSON_Parse(train_state) : NULL;
    const cJSON *kt = cJSON_GetObjectItemCaseSensitive(o, "total_steps");
    snprintf(path, sizeof path, "%s/checkpoint-%ld.safetensors", dir, snap);
    if (cJSON_IsNumber(kt) && !saved_schedule(path, &step, &own) && own != (long)kt->valuedouble)
        snprintf(buf, n, " --steps %ld", (long)kt->valuedouble);
    cJSON_Delete(o);
    return buf;
}

// One more checkpoint past the step of total n: later->mixed once two differ (*seen: the first's, -1 none).
static void later_total(RunLater *later, long n, long *seen) {
    if (*seen >= 0 && n != *seen) later->mixed = 1;
    *seen = n;
}

long run_folder_later_schedule(const char *dir, long step, long total, RunLater *later) {
    DIR *d = opendir(dir);
    if (d == NULL) return -2;
    char path[4400], own[64];
    long s, n, seen = -1;
    memset(later, 0, sizeof *later);
    later->step = -1;
    folder_run_id(dir, own, sizeof own);
    struct dirent *e;
    // Every one, the earliest named: moving away the one a line named and running again met the next
    // (in the listing's order), and checkpoint.safetensors last, named only by its step.
    while ((errno = 0, e = readdir(d))) {
        if (snapshot_step(e->d_name) <= step || snapshot_of_other_run(dir, e->d_name, own)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (saved_schedule(path, &s, &n) || s <= step) continue;
        later_total(later, n, &seen);
        if (n == total) continue;
        later->count++;
        if (later->step < 0 || s < later->step) {
            later->step = s;
            later->total = n;
            snprintf(later->name, sizeof later->name, "%s", e->d_name);
        }
    }
    int failed = errno;
    closedir(d);
    if (failed != 0) { errno = failed; return -2; }
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    int past = !saved_schedule(path, &s, &n) && s > step;
    if (past) later_total(later, n, &seen);
    if (past && n != total) {
        later->count++;
        later->latest = 1;
        if (later->step < 0 || s < later->step) {
            later->step = s;
            later->total = n;
            snprintf(later->name, sizeof later->name, "checkpoint.safetensors");
        }
    }
    return later->step;
}

int run_other_ahead_refusal(const char *cmd, const char *arg, const char *dir, long step, long total, int keep,
                            char *err, size_t errlen) {
    if (keep <= 0) return 0;   // no snapshot written
    DIR *d = opendir(dir);
    if (d == NULL) {
        snprintf(err, errlen, "%s --resume %s: cannot list the folder %s: %s", cmd, arg, dir, strerror(errno));
        return 1;
    }
    char own[64], id[64], path[4400];
    folder_run_id(dir, own, sizeof own);
    long first = -1;
    struct dirent *e;
    while ((errno = 0, e = readdir(d))) {
        long s = snapshot_step(e->d_name);
        if (s > step && s <= total && (first < 0 || s < first) && snapshot_of_other_run(dir, e->d_name, own)) first = s;
    }
    int failed = errno;
    closedir(d);
    if (failed) {
        snprintf(err, errlen, "%s --resume %s: cannot list the folder %s: %s", cmd, arg, dir, strerror(failed));
        return 1;
    }
    if (first < 0) return 0;
    snprintf(path, sizeof path, "%s/checkpoint-%ld.safetensors", dir, first);
    checkpoint_run_id(path, id, sizeof id);
    snprintf(err, errlen, "%s --resume %s: %s is not of this run (%s), and this run, going on from step %ld to %ld, "
             "may save its own checkpoint-%ld (on its cadence, at its last step, or stopped there) over it; move it "
             "away, or continue in a folder of its own with --out DIR", cmd, arg, path,
             id[0] ? "its run_id differs" : "it records no run_id", step, total, first);
    return CLI_USAGE;
}

int run_resume_user_outputs(const char *cmd, const char *arg, const char *dir, char *err, size_t errlen) {
    char names[160];
    int recorded;
    // A file under a snapshot's name that records no run is left to run_other_ahead_refusal, which
    // refuses the resume only where it reaches that step.
    if (!user_outputs(cmd, dir, 0, &recorded, names, sizeof names)) {
        // A run's metrics.csv makes the folder a run's (user_outputs names nothing then, its curves.png and
        // samples/ being the run's), but it records no config.json: another program's beside it was written
        // over, exit 0, where without metrics.csv the resume was refused (docs/interface.md, section 9).
        if (strcmp(cmd, "train") || config_kind(dir) != CONFIG_OTHER) return 0;
        snprintf(names, sizeof names, "config.json");
        recorded = 1;
    }
    if (recorded) {   // the run's checkpoints beside a user's config.json or metrics.csv
        snprintf(err, errlen, "%s --resume %s: its folder %s holds %s, not the run's, which the run would write over; "
                 "move %s away, or continue it in a folder of its own with --out DIR", cmd, arg, dir, names,
                 strchr(names, ' ') ? "them" : "it");
        return CLI_USAGE;
    }
    snprintf(err, errlen, "%s --resume %s: its folder %s holds %s with no record of a run (no run's config.json or "
             "metrics.csv, and no checkpoints of one run), which the run would write over; continue it in a folder of its own with --out DIR", cmd,
             arg, dir, names);
    return CLI_USAGE;
}

int run_folder_holds_which(const char *file, const char *dir) {
    char a[64], b[64];
    checkpoint_run_id(file, a, sizeof a);
    folder_run_id(dir, b, sizeof b);
    return a[0] && b[0] && !strcmp(a, b) ? RUN_HOLDS_SAME : RUN_HOLDS_OTHER;
}

// (run_metrics_gap_of, with every the smaller of the run's row cadences; finished: step is the run's
// last, whose own row missing is a gap too)
static long run_metrics_gap(const char *dir, long step, long every, int finished, long *last) {
    char path[4400];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    *last = metrics_last_step(path);
    if (*last < 0 || every < 1 || *last >= step || (!finished && (*last / every + 1) * every >= step)) return -1;
    DIR *d = opendir(dir);
    if (!d) return -1;
    char own[64];
    folder_run_id(dir, own, sizeof own);
    long best = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        long s = snapshot_step(e->d_name);
        if (s <= *last && s > best && !snapshot_of_other_run(dir, e->d_name, own)) best = s;
    }
    closedir(d);
    return best < 0 ? -2 : best;   // rows due and none of its snapshots at or before the log's end
}

long run_metrics_gap_of(const char *dir, const char *train_state, long *step, long *last) {
    cJSON *o = train_state ? cJSON_Parse(train_state) : NULL;
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(o, "step"), *kl = cJSON_GetObjectItemCaseSensitive(o, "log_every"),
                *ke = cJSON_GetObjectItemCaseSensitive(o, "eval_every"), *kt = cJSON_GetObjectItemCaseSensitive(o, "total_steps");
    long snap = -1;
    if (cJSON_IsNumber(ks) && cJSON_IsNumber(kl) && cJSON_IsNumber(ke)) {
        *step = (long)ks->valuedouble;
        // A finished run's last row is written before its last checkpoint: missing (a resume from an earlier
        // snapshot stopped before it got back dropped it, or the last step's validation or row failed, said
        // as the run exited), its plain resume, "nothing to train", never writes it (docs/interface.md,
        // section 5, "Resumable").
        int finished = cJSON_IsNumber(kt) && (long)kt->valuedouble == *step;
        snap = run_metrics_gap(dir, *step, (long)(kl->valuedouble < ke->valuedouble ? kl->valuedouble : ke->valuedouble),
                               finished, last);
    }
    cJSON_Delete(o);
    return snap;
}

int metrics_gap_refusal(const char *cmd, const char *arg, const char *path, const char *dir, int trains, char *err,
                        size_t errlen) {
    // Any checkpoint of the folder, its latest or a snapshot: one past the log's end (the advice of a
    // folder without checkpoint.safetensors named it) dropped the rows between as silently.
    // The cadences the rows were written with: the checkpoint's, not this resume's flags (a new --steps
    // brings a new default --eval-every, under which rows "due" were never written).
    // A run extended after the snapshot: its resume takes the later checkpoints' --steps (run_snapshot_steps).
    char why[CLI_ERR_MAX], steps[40] = "";
    StFile *f = st_open_header(path, why, sizeof why);
    long step = 0, last = -1, snap = f ? run_metrics_gap_of(dir, st_meta(f, "train_state"), &step, &last) : -1;
    if (snap >= 0) run_snapshot_steps(cmd, dir, snap, st_meta(f, "train_state"), steps, sizeof steps);
    if (f) st_close(f);
    if (snap == -2 && trains)   // nothing writes them again: going on is the only way, and the log's jump is said
        cli_message("warning: %s/metrics.csv ends at step %ld, before this checkpoint's step %ld, and no snapshot of "
                    "the run at or before step %ld is left to write the rows between again: the log goes on from step "
                    "%ld without them", dir, last, step, last, step);
    if (snap < 0) return 0;
    char snapshot[4400], word[FILE_SHELL_WORD_MAX];
    snprintf(snapshot, sizeof snapshot, "%s/checkpoint-%ld.safetensors", dir, snap);
    snprintf(err, errlen, "%s --resume %s: %s/metrics.csv ends at step %ld, before this checkpoint's step %ld (a resume "
             "from an earlier snapshot stopped before it got back here); going on from step %ld would lose the rows "
             "between for good; resume the snapshot instead, --resume %s%s, which writes them again", cmd, arg, dir,
             last, step, step, file_shell_word(snapshot, word, sizeof word), steps);
    return CLI_USAGE;
}

int run_folder_has_checkpoint(const char *dir) {
    char path[4400];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    if (access(path, F_OK) == 0) return 1;
    // The snapshots --resume DIR would take (snapshot_of_other_run), and, where the folder's snapshots
    // are of more than one run with none recorded as its own, any: such a folder was "a run without a
    // checkpoint, nothing to resume" (each can go on in a folder of its own). A file of a snapshot's
    // name that is not the folder's run's (a user's notes, a converted checkpoint, another run's copy
    // beside a config.json of its own run_id) is none: it turned "nothing to resume" into "a run that
    // cannot be resumed as it is", or (no run recorded) advised a --resume that failed on it.
    DIR *d = opendir(dir);
    if (!d) return -1;
    char own[64];
    folder_run_id(dir, own, sizeof own);
    struct dirent *e;
    int found = 0;
    while (!found && (errno = 0, e = readdir(d)))
        found = snapshot_step(e->d_name) >= 0 &&
                (!strcmp(own, RUN_ID_MIXED) || !snapshot_of_other_run(dir, e->d_name, own));
    int failed = errno;
    closedir(d);
    if (!found && failed) { errno = failed; return -1; }
    return found;
}

int run_resume_missing(const char *cmd, const char *arg, char *err, size_t errlen) {
    struct stat st;
    char path[4400], names[160], gone[160], way[CLI_ERR_MAX], steps[40];
    char word[FILE_SHELL_WORD_MAX];   // a path in a command the line says to type, as a shell word (file_shell_word)
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", arg);
    if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode) || lstat(path, &st) == 0 || errno != ENOENT) return 0;
    long snap = resumable_snapshot(cmd, arg, steps, sizeof steps);
    if (snap == -2) {   // it may hold snapshots: said, not guessed
        snprintf(err, errlen, "%s --resume %s: cannot list the folder: %s", cmd, arg, strerror(errno));
        return 1;
    }
    char own[64];
    folder_run_id(arg, own, sizeof own);
    long newest = snap >= 0 ? newest_snapshot(arg) : -1;   // the folder listed once for the lines below
    const char *kind = run_folder_kind(arg);   // the other command's run: its advice would be refused next
    int other = kind && strcmp(kind, cmd);
    if (other)
        snprintf(err, errlen, "%s --resume %s: the folder holds a %s run, not a %s one (continue it with vitmae %s "
                 "--resume %s, which says what its missing checkpoint.safetensors leaves)", cmd, arg,
                 strcmp(kind, "train") ? "fine-tuning" : "pretraining",
                 strcmp(cmd, "train") ? "fine-tuning" : "pretraining", kind, file_shell_word(arg, word, sizeof word));
    else if (!strcmp(own, RUN_ID_MIXED))   // no record of which run is the folder's: none advised
        snprintf(err, errlen, "%s --resume %s: no checkpoint.safetensors in the folder, and its snapshots are of more "
                 "than one run (their run_ids differ); continue the one you mean in a folder of its own: --resume "
                 "%s --out DIR", cmd, arg,
                 (snprintf(path, sizeof path, "%s/checkpoint-N.safetensors", arg), file_shell_word(path, word, sizeof word)));
    else if (snap >= 0 && snap == newest &&
             (snprintf(path, sizeof path, "%s/checkpoint-%ld.safetensors", arg, snap), checkpoint_finished(path)))
        // A finished run's: its resume trains nothing and writes nothing, so it gave the folder no
        // checkpoint.safetensors back (--ckpt RUN and info RUN went on failing after the advice).
        snprintf(err, errlen, "%s --resume %s: no checkpoint.safetensors in the folder; its newest snapshot, %s, is "
                 "the finished run's last step: %s", cmd, arg, path, finished_advice(cmd, path, arg, 0, way, sizeof way));
    else if (snap >= 0) {
        snprintf(path, sizeof path, "%s/checkpoint-%ld.safetensors", arg, snap);
        snprintf(err, errlen, "%s --resume %s: no checkpoint.safetensors in the folder; resume its newest snapshot%s "
                 "with --resume %s%s%s", cmd, arg, snap == newest ? "" : " within metrics.csv's rows",
                 file_shell_word(path, word, sizeof word), steps,
                 snap == newest ? "" : " (a later one would lose the rows between for good)");
    }
    else if (snap == -1 && (newest = newest_snapshot_of(arg, 0)) >= 0) {   // the run's, each stripped or damaged
        snprintf(path, sizeof path, "%s/checkpoint-%ld.safetensors", arg, newest);
        snprintf(err, errlen, "%s --resume %s: no checkpoint.safetensors in the folder, and none of its snapshots can "
                 "be resumed (its newest, %s: %s --resume of that file says why)", cmd, arg,
                 file_shell_word(path, word, sizeof word), cmd);
    }
    else if (run_folder_has_run(arg) && !user_outputs(cmd, arg, 1, NULL, names, sizeof names)) {   // a user's own files: no stopped run
        // Its command line again, not this one: --overwrite (and --init) cannot go with --resume, which
        // the advice, added to the command just run, was refused for next.
        snprintf(path, sizeof path, "%s/config.json", arg);
        int recorded = config_kind(arg) == CONFIG_RUN;   // another program's config.json records no flags
        snprintf(err, errlen, "%s --resume %s: the folder holds %s, nothing to resume; start it again with its own "
                 "flags%s%s%s and --out %s --overwrite, without --resume", cmd, arg,
                 no_checkpoint_why(arg, gone, sizeof gone), recorded ? " (" : "", recorded ? path : "",
                 recorded ? " records them)" : "", file_shell_word(arg, word, sizeof word));
    }
    else {
        // A user's file under a snapshot's name, the folder's only one, was advised as its newest snapshot.
        int notes;
        long note = user_snapshot(arg, &notes);
        if (note >= 0) snprintf(path, sizeof path, "%s/checkpoint-%ld.safetensors", arg, note);
        snprintf(err, errlen, "%s --resume %s: no run in this folder (no checkpoint.safetensors%s%s%s)", cmd, arg,
                 note >= 0 ? "; " : "", note >= 0 ? path : "",
                 note < 0 ? "" : notes > 1 ? " and the others of a snapshot's name are not snapshots: they record no "
                 "training run" : " is not a snapshot: it records no training run");
    }
    return CLI_USAGE;
}

// Every snapshot in the folder counts: a fixed list of 4096, filled in directory order, left a run
// with --keep above 4096 keeping every snapshot from then on (none pruned), and one with a smaller
// --keep (resumed after a larger one) pruning the oldest of an arbitrary 4096 instead of the oldest.
void prune_snapshots(const char *dir, int keep, long step) {
    DIR *d = opendir(dir);
    if (!d) return;
    long *steps = NULL;
    size_t n = 0, cap = 0;
    char own[64];
    folder_run_id(dir, own, sizeof own);
    struct dirent *e;
    while ((e = readdir(d))) {
        long s = snapshot_step(e->d_name);
        // Past step: the run's own later snapshots, written again as it gets there (a resume from an
        // earlier one), or another run's; neither the run's to prune, nor another run's copy at all.
        if (s < 0 || s > step || snapshot_of_other_run(dir, e->d_name, own)) continue;
        if (n == cap) {
            size_t more = cap ? 2 * cap : 64;
            long *p = realloc(steps, more * sizeof *steps);
            if (!p) break;   // out of memory: prune what was listed; the next checkpoint prunes the rest
            steps = p;
            cap = more;
        }
        steps[n++] = s;
    }
    closedir(d);
    if (n > 0) qsort(steps, n, sizeof steps[0], cmp_long);
    for (size_t i = 0; i + (size_t)keep < n; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/checkpoint-%ld.safetensors", dir, steps[i]);
        unlink(path);
    }
    free(steps);
}

// --resume RUN_OR_FILE: a folder means its checkpoint.safetensors.
void run_resume_path(const char *arg, char *path, size_t n, char *dir, size_t dn) {
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

int publish_latest(const char *snapshot, const char *latest, const char *dir, char *err, size_t errlen) {
    // A name of its own (io/files.h), never one that is there: ".checkpoint.link.<pid>" was unlinked
    // first, whatever held that name. Removed from the folder it was made in by a failure or a stop at
    // once; the host and pid let the next start remove what a kill left (latest_link_leftover).
    char tmp[4400], host[FILE_HOST_MAX];
    file_host_name(host, sizeof host);
    // run_folder_names_fit leaves 80 bytes for a name: a long host name in a folder near the limit is
    // left out (that link, if a kill leaves it, is never swept) rather than failing the link.
    if (strlen(dir) + strlen(host) + 40 >= 4096) host[0] = 0;
    if (snprintf(tmp, sizeof tmp, "%s/.checkpoint.link.%s.%ld.XXXXXX", dir, host, (long)getpid()) >= (int)sizeof tmp)
        return -1;
    if (file_tmp_link_unique(snapshot, tmp) != 0) return -1;
    file_test_gate("VITMAE_FAULT_HOLD_BEFORE_LATEST_RENAME");   // tests: a stop signal while the link is there
    if (rename(tmp, latest) != 0) { file_tmp_remove(tmp); return -1; }
    file_tmp_forget(tmp);
    file_test_gate("VITMAE_FAULT_HOLD_AFTER_LATEST_RENAME");   // tests: a second Ctrl-C before the mark below
    run_mark_published();   // the step is saved: a second Ctrl-C from here loses none (cmd/runfolder.h)
    // latest is in place, whole; a folder that cannot be synced is said as for every other file.
    return file_sync_folder_of(latest, err, errlen) ? 1 : 0;
}

int pixel_norm_set(MaeConfig *c, const char *mode, const Dataset *ds, const int *idx, int n, char *err,
                   size_t errlen) {
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
    return dataset_pixel_stats(ds, idx, n, 10000, 0, c->img_size, c->in_chans, c->pixel_mean, c->pixel_std, err, errlen);
}

// MB with two digits below 10 (the store's line says them alike): "191", "0.5".
static void say_mb(double bytes, char *buf, size_t n) {
    double mb = bytes / 1048576.0;
    snprintf(buf, n, mb < 10 ? "%.2g" : "%.0f", mb);
}

// The store's folder made as every folder vitmae makes (0777 less the umask, so that a group's store under
// umask 002 takes the group's files; a path too long refused, not cut: cmd/output.h), then the store
// turned on in it. A store that cannot be made or used leaves none of the folders it made (cmd/output.h,
// output_mkdir_made): `--store st/<a name too long>` left an empty st/.
// made (NULL: forgotten) gets the folders made for dir, for run_unmake_store; none on failure.
static int make_store(Dataset *ds, const char *dir, long min_free_mb, OutputMade *made, char *err, size_t errlen) {
    OutputMade mine = {.n = 0};
    if (!made) made = &mine;
    made->n = 0;
    if (ds->shared && ds->work_size > 0 && output_mkdir_made(dir, made, err, errlen)) return -1;
    if (dataset_set_store(ds, dir, err, errlen)) { output_mkdir_undo(made); return -1; }
    // A folder that takes files but lets none be renamed (append-only) passed as writable: every working
    // image's temporary stayed in it, none stored, run after run (cmd/output.h, output_check_writable).
    if (ds->shared && ds->work_size > 0 && output_check_writable(dir, err, errlen)) { output_mkdir_undo(made); return -1; }
    dataset_set_store_min_free(ds, (double)min_free_mb * 1048576.0);
    return 0;
}

void run_unmake_store(Dataset *ds, OutputMade *made) {
    // Any folder made means the store's own was (mkdir -p makes every part below the first missing
    // one): what it holds is this run's working images. A folder that was there stays as it was.
    if (made->n > 0) dataset_store_remove(ds);
    output_mkdir_undo(made);
}

void run_unmake_folder(const char *run_dir, const char *const *files, OutputMade *made) {
    // Through the held folder, not by path: a folder put at the name since keeps its files (a user's
    // config.json), and one without locks (held_fd unset) is taken as the path's, which it then is.
    struct stat held, now;
    int at = held_fd < 0 ? AT_FDCWD
             : fstat(held_fd, &held) == 0 && stat(run_dir, &now) == 0 && held.st_dev == now.st_dev &&
                       held.st_ino == now.st_ino ? held_fd : -1;
    char path[4300];
    for (int i = 0; files && at != -1 && files[i]; i++) {
        if (at == AT_FDCWD) snprintf(path, sizeof path, "%s/%s", run_dir, files[i]);
        unlinkat(at, at == AT_FDCWD ? path : files[i], 0);   // one not written yet is not there: nothing to do
    }
    output_mkdir_undo(made);
}

int run_store_meets_run(const char *cmd, const char *store, const char *run_dir, char *err, size_t errlen) {
    char entry[256], what[96];
    if (!strcmp(store, "none") || !strcmp(store, "auto") || !output_path_entry(store, run_dir, entry, sizeof entry))
        return 0;
    // The names a run writes in its folder (docs/data.md, "Run folders"): a store folder at one of them
    // failed the run partway (a checkpoint's rename onto a folder after step 1, curves.png at step 0).
    long step = snapshot_step(entry);
    int train = !strcmp(cmd, "train");
    if (!strcmp(entry, "checkpoint.safetensors")) snprintf(what, sizeof what, "its checkpoint");
    else if (step >= 0) snprintf(what, sizeof what, "its snapshot of step %ld", step);
    else if (!strcmp(entry, "metrics.csv") || !strcmp(entry, "curves.png") || (train && !strcmp(entry, "config.json")))
        snprintf(what, sizeof what, "its %s", entry);
    else if (train && !strcmp(entry, "samples")) snprintf(what, sizeof what, "its sample sheets");
    else return 0;   // a folder of another name in the run folder (RUN/store) is the user's to choose
    char named[4400], given[4096];
    snprintf(named, sizeof named, "%s/%s", run_dir, entry);
    cli_clean_path(named);
    snprintf(given, sizeof given, "%s", store);
    cli_clean_path(given);
    int is = output_path_within(named, store);   // the entry itself, not a folder inside it
    const char *g = strncmp(given, "./", 2) ? given : given + 2, *m = strncmp(named, "./", 2) ? named : named + 2;
    if (is && !strcmp(g, m))
        snprintf(err, errlen, "%s --store: %s is where the run writes %s; choose another folder", cmd, store, what);
    else
        snprintf(err, errlen, "%s --store: %s is %s%s, where the run writes %s; choose another folder", cmd, store,
                 is ? "" : "inside ", named, what);
    return CLI_USAGE;
}

int run_use_store(Dataset *ds, const int *idx, int n, const char *store, long cache_mb, long min_free_mb,
                  OutputMade *made, StoreNote *note, char *err, size_t errlen) {
    note->text[0] = 0;
    note->warning = 0;
    made->n = 0;
    if (!strcmp(store, "none")) return 0;
    char dir[4096];
    if (!strcmp(store, "auto")) {
        size_t need = dataset_working_bytes(ds, idx, n), budget = dataset_cache_budget(ds);
        if (need <= budget) return 0;
        // Absolute paths only, as the XDG base directory spec asks: a relative XDG_CACHE_HOME (or HOME) would
        // put the store in whatever folder the run started in, a new one each time.
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        note->warning = 1;
        if (xdg && *xdg == '/') snprintf(dir, sizeof dir, "%s/vitmae/work", xdg);
        else if (home && *home == '/') snprintf(dir, sizeof dir, "%s/.cache/vitmae/work", home);
        else {   // no folder to use: said, as when the folder cannot be made (docs/data.md)
            snprintf(note->text, sizeof note->text, "--store auto: neither XDG_CACHE_HOME nor HOME is %s; going on "
                     "without a store (each epoch decodes its images again; --store DIR chooses a folder)",
                     (xdg && *xdg) || (home && *home) ? "an absolute path" : "set");
            return 0;
        }
        cli_clean_path(dir);   // HOME=/ or a trailing '/': "/.cache/...", not "//.cache/..."
        if (make_store(ds, dir, min_free_mb, made, err, errlen)) {   // the default asks for no folder: go on without it
            snprintf(note->text, sizeof note->text, "--store auto: %s; going on without a store (each epoch "
                     "decodes its images again; --store DIR chooses a folder)", err);
            return 0;
        }
        // Two digits below 10 MB (say_mb): "%.0f" said "need 0 MB, more than --cache-mb 0" of a small set.
        double room;
        note->warning = 0;
        char than[64], kept[32], needs[32];   // the cache's budget: --cache-mb's, or what run_fit_cache lowered it to
        say_mb((double)budget, kept, sizeof kept);
        say_mb((double)need, needs, sizeof needs);
        if (budget == (size_t)cache_mb * 1048576) snprintf(than, sizeof than, "--cache-mb %ld", cache_mb);
        else snprintf(than, sizeof than, "the memory cache's %s MB", kept);
        int n0 = snprintf(note->text, sizeof note->text, "working images need %s MB, more than %s: keeping them in the store %s",
                          needs, than, dir);
        // A disk that cannot hold them above --store-min-free (0 included: the disk's free space then):
        // how much of them it can (docs/data.md). Those the store holds already need no room: a warm
        // store on a small disk said "room for about 0% of them" and then read every one of them back.
        double spare = file_free_bytes(dir, &room) == 0 ? room - (double)min_free_mb * 1048576.0 : (double)need;
        size_t rest = spare < (double)need ? dataset_unstored_bytes(ds, idx, n) : 0;   // a stat per image: only then
        if (rest > 0 && spare < (double)rest && n0 > 0 && (size_t)n0 < sizeof note->text) {
            char free_mb[32], where[96], floor_said[64] = "";
            format_figure(room / 1048576.0, 0, free_mb, sizeof free_mb);
            if (rest == need) snprintf(where, sizeof where, ", whose disk has %s MB free: room for about", free_mb);
            else   // "about 0%" of a store that holds a few: at least 1 (and below 100, as rest > 0)
                snprintf(where, sizeof where, ", which holds about %.0f%% of them already, on a disk with %s MB free: "
                         "room for about", fmax(1.0, floor(100.0 * (double)(need - rest) / (double)need)), free_mb);
            if (min_free_mb > 0) snprintf(floor_said, sizeof floor_said, " above --store-min-free %ld MB", min_free_mb);
            snprintf(note->text + n0, sizeof note->text - (size_t)n0, "%s %.0f%% of %s%s, the others decoded again "
                     "each epoch", where, spare > 0 ? floor(100.0 * spare / (double)rest) : 0.0,
                     rest == need ? "them" : "the rest", floor_said);
        }
        return 0;
    }
    return make_store(ds, store, min_free_mb, made, err, errlen);
}

void run_store_note(const StoreNote *note) {
    if (!note->text[0]) return;
    if (note->warning) cli_message("%s", note->text);
    else cli_out("%s", note->text);   // the store's path written out as every path is (a newline in it kept the line one)
}

double run_cache_room(double want, double have, double need) {
    if (have <= 0) return want;
    double room = 0.9 * have - need;   // the rule of every memory check (core/model.h)
    return want <= room ? want : room > 0 ? room : 0;
}

void run_fit_cache(Dataset *ds, Dataset *val, long cache_mb, double need, int loader_threads, StoreNote *note) {
    note->text[0] = 0;
    note->warning = 0;
    // What the caches can take: their budgets, or all their working images where those are fewer.
    double work = (double)dataset_working_bytes(ds, NULL, ds->n);
    double vwork = val ? (double)dataset_working_bytes(val, NULL, val->n) : 0;
    double budget = (double)dataset_cache_budget(ds), vbudget = val ? (double)dataset_cache_budget(val) : 0;
    double want = fmin(budget, work), vwant = fmin(vbudget, vwork);
    size_t largest = dataset_largest_samples(ds), vlargest = val ? dataset_largest_samples(val) : 0;
    int decoders = loader_threads > omp_get_max_threads() ? loader_threads : omp_get_max_threads();
    double besides = RUN_CACHE_SLACK + decoders * (double)(largest > vlargest ? largest : vlargest);
    long have = cpu_memory_bytes();
    double room = run_cache_room(want + vwant, (double)have, need + besides);
    if (room >= want + vwant) return;
    double mine = want + vwant > 0 ? floor(room * want / (want + vwant)) : 0;
    dataset_set_cache_budget(ds, (size_t)mine);
    if (val) dataset_set_cache_budget(val, (size_t)(room - mine));
    char kept[32], wanted[32], vkept[32];
    say_mb(mine, kept, sizeof kept);
    say_mb(work, wanted, sizeof wanted);
    say_mb(room - mine, vkept, sizeof vkept);
    int n0 = snprintf(note->text, sizeof note->text,
                      "--cache-mb %ld lowered to %s MB: the working images (%s MB) would not fit in memory beside the "
                      "run, which needs %.2f GiB and its decoders and libraries about %.2f GiB more, of the %.2f GiB "
                      "it may take (90%% of the %.2f GiB %s)",
                      cache_mb, kept, wanted, need / 1073741824.0, besides / 1073741824.0, 0.9 * (double)have / 1073741824.0,
                      have / 1073741824.0, cpu_memory_holder());
    if (val && n0 > 0 && (size_t)n0 < sizeof note->text)
        snprintf(note->text + n0, sizeof note->text - (size_t)n0, "; the --val folder's cache to %s MB", vkept);
}

void run_share_store(Dataset *ds, const char *cmd, const char *store, long min_free_mb) {
    if (dist_size() < 2) return;
    char dir[4096] = "";
    const char *own = dataset_store_dir(ds);
    if (dist_rank() == 0 && own) snprintf(dir, sizeof dir, "%s", own);
    dist_bcast(dir, sizeof dir, 0);
    if (dist_rank() == 0 || !dir[0]) return;
    char err[CLI_ERR_MAX];
    if (make_store(ds, dir, min_free_mb, NULL, err, sizeof err))
        cli_message("%s%s: %s; this process goes on without a store (each epoch decodes its images again)",
                    strcmp(store, "auto") ? cmd : "", strcmp(store, "auto") ? " --store" : "--store auto", err);
}

void loader_flags_init(LoaderFlags *l) {
    l->store = "auto"; l->cache_mb = DEFAULT_CACHE_MB; l->max_pixels = 0; l->prefetch = 2; l->loader_threads = DEFAULT_LOADER_THREADS;
    l->store_min_free_mb = DEFAULT_STORE_MIN_FREE_MB;
}

void loader_flags_table(LoaderFlags *l, Flag *f) {
    const Flag t[LOADER_FLAGS] = {
        {"--cache-mb", FLAG_LONG, &l->cache_mb, 0, 1e7, NULL, "keep working images in memory up to this size (default " MAE_STR(DEFAULT_CACHE_MB) "; lowered to what the run leaves)", "MB", 0},
        {"--store", FLAG_PATH, &l->store, 0, 0, NULL, "on-disk store of working images: auto (when they exceed --cache-mb; the default), none, or a folder (docs/data.md)", "auto|none|DIR", 0},
        {"--store-min-free", FLAG_LONG, &l->store_min_free_mb, 0, 1e9, NULL, "free space the store leaves on its disk: no working image is stored past it (default " MAE_STR(DEFAULT_STORE_MIN_FREE_MB) ")", "MB", 0},
        {"--prefetch", FLAG_INT, &l->prefetch, 1, 64, NULL, "batches made ahead in the background (default 2)", "N", 0},
        {"--loader-threads", FLAG_INT, &l->loader_threads, 1, 256, NULL, "background threads making batches (default " MAE_STR(DEFAULT_LOADER_THREADS) ")", "T", 0},
        {"--max-pixels", FLAG_LONG, &l->max_pixels, 1, CLI_MAX_PIXELS_MAX, NULL, "skip images with more pixels than N (default 67108864 = 2^26)", "N", 0},
    };
    memcpy(f, t, sizeof t);
}

volatile sig_atomic_t run_stop_requested = 0;
static int output_is_mpirun = 0;

static void output_never_blocks(void) {
    int fl = fcntl(STDOUT_FILENO, F_GETFL);
    if (fl != -1) fcntl(STDOUT_FILENO, F_SETFL, fl | O_NONBLOCK);
    cli_stdout_lossy = 1;   // lines that do not fit are dropped from now on, and that is no failure
}

// A process started by mpirun (known from its environment before MPI starts): its stop signals say
// nothing, and a second Ctrl-C does not end it at once (mpirun has its own second Ctrl-C, and a rank
// that died would leave the others to mpirun's teardown; docs/distributed.md, "Faults").
static int stops_quietly = 0;

// Said on stderr with write(2), which a signal handler may call, as a stop signal arrives: the run
// acknowledges it at once, though its step may take minutes (docs/interface.md, "Stopping").
#define STOP_SAID(name) "vitmae: " name ": finishing this step, then saving a checkpoint"
// Before the first step has begun (the folder still scanned, the model still loading) the run goes
// on to its first step, then saves (docs/interface.md, "Stopping"): no step is being finished.
#define STOP_SAID_EARLY(name) "vitmae: " name ": starting up: the first step runs, then a checkpoint is saved"
#define CTRL_C_AGAIN "; Ctrl-C again stops at once without saving\n"
static const char stop_said_int[] = STOP_SAID("SIGINT") CTRL_C_AGAIN;
static const char stop_said_int_early[] = STOP_SAID_EARLY("SIGINT") CTRL_C_AGAIN;
static const char stop_said_at_once[] =
    "vitmae: SIGINT again: stopped at once without saving (the steps since the last checkpoint are lost)\n";
// ... where the run has no checkpoint yet (none saved in this run, nor resumed from): "the last
// checkpoint" was one the folder does not hold.
static const char stop_said_at_once_none[] =
    "vitmae: SIGINT again: stopped at once without saving (no checkpoint was saved yet: the steps run are lost)\n";
// Before the first step (the folder still scanned, the model still loading) no step has run to lose.
static const char stop_said_before_steps[] = "vitmae: SIGINT again: stopped at once, before the first step: nothing saved\n";
// After the stop's checkpoint is saved (config.json, curves.png still being written) nothing is lost.
static const char stop_said_after_save[] = "vitmae: SIGINT again: stopped at once; the checkpoint was saved\n";
volatile sig_atomic_t run_steps_begun = 0;
volatile sig_atomic_t run_saved = 0;
volatile sig_atomic_t run_checkpointed = 0;
volatile sig_atomic_t run_published = 0;

static int saving;   // a save under way (run_mark_saving, below), until it is published

void run_mark_published(void) {
    run_published = 1;
    __atomic_store_n(&saving, 0, __ATOMIC_SEQ_CST);   // the save's files are looked for no more: it is published
    file_test_gate("VITMAE_FAULT_HOLD_AFTER_PUBLISH");   // tests: a second Ctrl-C as the save goes on
}

// The save under way (run_mark_saving): its snapshot's and checkpoint.safetensors's names, the file each
// name held before it (none, or its device and inode), and the line a second Ctrl-C says once the
// snapshot is in place; all made before `saving` is set, so that the handler reads them with stat(2)
// alone. A rename done and not yet seen by the code that asked for it (run_mark_published follows it)
// is a file in place all the same: the line said "nothing was saved" with a whole checkpoint there.
typedef struct {
    char path[4400];
    int had;   // the name held a file before this save: that one is not the save's
    dev_t dev;
    ino_t ino;
} SavingName;
static SavingName saving_snapshot, saving_latest;
static char said_snapshot[2 * 4400 + FILE_SHELL_WORD_MAX + 160];
static size_t said_snapshot_len = 0;

static void saving_name(SavingName *n, const char *path) {
    struct stat st;
    snprintf(n->path, sizeof n->path, "%s", path ? path : "");
    n->had = path && stat(path, &st) == 0;
    n->dev = n->had ? st.st_dev : 0;
    n->ino = n->had ? st.st_ino : 0;
}

void run_mark_saving(const char *snapshot, const char *latest) {
    __atomic_store_n(&saving, 0, __ATOMIC_SEQ_CST);
    if (!latest) return;
    saving_name(&saving_snapshot, snapshot);
    saving_name(&saving_latest, latest);
    char word[FILE_SHELL_WORD_MAX];   // the advice's path as a shell word (io/files.h), as every resume advice's
    int n = snapshot ? snprintf(said_snapshot, sizeof said_snapshot, "vitmae: SIGINT again: stopped at once; %s was "
                                "saved, %s is not it yet (continue with --resume %s)\n", snapshot, latest,
                                file_shell_word(snapshot, word, sizeof word)) : 0;
    said_snapshot_len = n > 0 && (size_t)n < sizeof said_snapshot ? (size_t)n : 0;
    __atomic_store_n(&saving, 1, __ATOMIC_SEQ_CST);
}

// 1 when the save's file is at its name: a file there that was not there before the save (stat(2) may
// be called from a signal handler).
static int saving_in_place(const SavingName *n) {
    struct stat st;
    return n->path[0] && stat(n->path, &st) == 0 && (!n->had || st.st_dev != n->dev || st.st_ino != n->ino);
}
static int stderr_on_terminal = 0;
// A stop signal taken (the first: its line said, the run stopping), and the first's line written (or
// none to write). A signal goes to any thread that does not block it, so two Ctrl-Cs at once land on
// two threads: the second ended the process before the first had said its line, and the run's stderr
// held only "SIGINT again: ...". The second waits for the first's line (at most 100 ms).
static int stop_taken = 0;
static volatile sig_atomic_t stop_line_said = 0;
static long stop_line_delay_ms = 0;   // tests: VITMAE_FAULT_SLOW_STOP_LINE, the first line written late

static void say_on_stderr(const char *line, size_t n) {
    // A progress bar drawn on the terminal (cmd/streams.h) is left on a line of its own; it is drawn
    // again below the line said.
    ssize_t w = stderr_on_terminal && progress_open() ? write(STDERR_FILENO, "\n", 1) : 0;
    w = write(STDERR_FILENO, line, n);
    (void)w;   // a stderr that takes nothing leaves the stop as it is
}

static void on_stop_signal(int sig) {
    int saved_errno = errno;   // the code the signal interrupted may be about to read errno
    int again = __atomic_exchange_n(&stop_taken, 1, __ATOMIC_SEQ_CST);
    run_stop_requested = 1;
    if (sig == SIGHUP) cli_stdout_lossy = 1;   // the terminal is gone: lines to it fail, and that is no failure
    if (output_is_mpirun) output_never_blocks();
    if (!stops_quietly && again && sig == SIGINT) {
        struct timespec ms = {0, 1000000};
        for (int i = 0; i < 100 && !stop_line_said; i++) nanosleep(&ms, NULL);
        int mid_save = __atomic_load_n(&saving, __ATOMIC_SEQ_CST);
        if (run_saved || run_published || (mid_save && saving_in_place(&saving_latest)))
            say_on_stderr(stop_said_after_save, sizeof stop_said_after_save - 1);
        else if (mid_save && said_snapshot_len && saving_in_place(&saving_snapshot))
            say_on_stderr(said_snapshot, said_snapshot_len);   // a resume finds it, named
        else if (run_steps_begun && run_checkpointed) say_on_stderr(stop_said_at_once, sizeof stop_said_at_once - 1);
        else if (run_steps_begun) say_on_stderr(stop_said_at_once_none, sizeof stop_said_at_once_none - 1);
        else say_on_stderr(stop_said_before_steps, sizeof stop_said_before_steps - 1);
        // Ends the process by SIGINT (exit 130), its temporary files removed first (io/files.h): a store
        // file or a checkpoint's link being written would stay, and nothing removes a store's.
        file_stop_now(SIGINT);
    } else if (!stops_quietly && !again) {
        if (stop_line_delay_ms > 0) {
            struct timespec d = {stop_line_delay_ms / 1000, stop_line_delay_ms % 1000 * 1000000};
            nanosleep(&d, NULL);
        }
        static const char term[] = STOP_SAID("SIGTERM") "\n", usr1[] = STOP_SAID("SIGUSR1") "\n",
                          quit[] = STOP_SAID("SIGQUIT") "\n", xcpu[] = STOP_SAID("SIGXCPU") "\n",
                          usr2[] = STOP_SAID("SIGUSR2") "\n", alrm[] = STOP_SAID("SIGALRM") "\n";
        static const char term0[] = STOP_SAID_EARLY("SIGTERM") "\n", usr10[] = STOP_SAID_EARLY("SIGUSR1") "\n",
                          quit0[] = STOP_SAID_EARLY("SIGQUIT") "\n", xcpu0[] = STOP_SAID_EARLY("SIGXCPU") "\n",
                          usr20[] = STOP_SAID_EARLY("SIGUSR2") "\n", alrm0[] = STOP_SAID_EARLY("SIGALRM") "\n";
        static const char hup[] = STOP_SAID("SIGHUP") "\n", hup0[] = STOP_SAID_EARLY("SIGHUP") "\n";
#define SAY(line, early) (run_steps_begun ? say_on_stderr(line, sizeof line - 1) : say_on_stderr(early, sizeof early - 1))
        switch (sig) {
        // SIGHUP on a terminal's stderr: the terminal is gone, there is no one to tell; into a log file
        // the run's last line said it was interrupted, and nothing said by what.
        case SIGHUP: if (!stderr_on_terminal) SAY(hup, hup0); break;
        case SIGINT: SAY(stop_said_int, stop_said_int_early); break;
        case SIGTERM: SAY(term, term0); break;
        case SIGUSR1: SAY(usr1, usr10); break;
        case SIGQUIT: SAY(quit, quit0); break;
        case SIGXCPU: SAY(xcpu, xcpu0); break;
        case SIGUSR2: SAY(usr2, usr20); break;
        case SIGALRM: SAY(alrm, alrm0); break;
        }
#undef SAY
    }
    if (!again) stop_line_said = 1;
    errno = saved_errno;
}

int run_stop_signal(int i) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGUSR1, SIGQUIT, SIGXCPU, SIGHUP, SIGUSR2, SIGALRM};
    return i >= 0 && i < (int)(sizeof sigs / sizeof *sigs) ? sigs[i] : 0;
}

void run_catch_stop_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    // A write to stdout (a pipe, a terminal) that the signal lands in goes on where it was instead of
    // failing with EINTR: that would drop the line, and the run would end saying its stdout failed.
    sa.sa_flags = SA_RESTART;
    output_is_mpirun = dist_active();
    stops_quietly = dist_launched();
    stderr_on_terminal = isatty(STDERR_FILENO);
    const char *slow = getenv("VITMAE_FAULT_SLOW_STOP_LINE");   // read here: getenv is no call for a handler
    stop_line_delay_ms = slow ? atol(slow) : 0;
    file_stop_now_prepare();   // before the handler that may call file_stop_now
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    // Ctrl-\ (SIGQUIT) as Ctrl-C: its default, a core dump, would lose the steps since the last
    // checkpoint; a run that must end at once still takes SIGKILL, and its last checkpoint is whole.
    sigaction(SIGQUIT, &sa, NULL);
    // A CPU-time limit's first warning (ulimit -t, a batch system's) stops the run as SIGTERM does, and
    // so does the end of its terminal (SIGHUP), unless the run was started to outlive it (nohup: ignored).
    sigaction(SIGXCPU, &sa, NULL);
    struct sigaction old;
    if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(SIGHUP, &sa, NULL);
    // SIGUSR2 (a batch system's warning, as SIGUSR1; mpirun forwards both) and SIGALRM (timeout -s ALRM, a
    // script's timer) as SIGTERM: their default ended the run at once, its steps since the last checkpoint
    // lost, where the inference commands and docs/interface.md, section 1, take them as stop signals.
    // Each unless ignored, as the inference commands leave one.
    if (sigaction(SIGUSR2, NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(SIGUSR2, &sa, NULL);
    if (sigaction(SIGALRM, NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(SIGALRM, &sa, NULL);
    // main installs these before MPI starts, when it cannot yet know it runs under mpirun: a stop
    // asked since then quiets the output now.
    if (run_stop_requested && output_is_mpirun) output_never_blocks();
}

void run_test_hook_stop(const char *point) {
    const char *v = getenv("VITMAE_FAULT_STOP_IN_SETUP");
    if (v && !strcmp(v, point)) raise(SIGUSR1);
}

// 1 when metadata key is the same text in both files (or absent from both).
static int same_meta(const StFile *f, const StFile *g, const char *key) {
    const char *a = st_meta(f, key), *b = st_meta(g, key);
    return a == b || (a && b && !strcmp(a, b));
}

int run_epoch_steps(const char *cmd, double epochs, long ntrain, int batch, long *steps, char *err, size_t errlen) {
    // A decimal E is not a double: --epochs 0.28 of 25 images at batch 7 is 1.0000000000000002, whose
    // ceiling made 2 steps. A quotient within 1e-9 (relative) of a whole number is that number.
    double x = epochs * (double)ntrain / batch, whole = nearbyint(x);
    double n = fabs(x - whole) <= 1e-9 * fmax(1.0, whole) ? whole : ceil(x);
    if (n > RUN_STEPS_MAX) {
        snprintf(err, errlen, "%s --epochs: %g passes over %ld images at batch %d are %.0f steps, more than a run "
                 "counts (at most 10^12): fewer --epochs or a larger --batch", cmd, epochs, ntrain, batch, n);
        return CLI_USAGE;
    }
    *steps = n < 1 ? 1 : (long)n;
    return 0;
}

static double state_get(const StateField *f, const void *state) {
    const char *p = (const char *)state + f->offset;
    switch (f->kind) {
    case STATE_LONG: return (double)*(const long *)p;
    case STATE_INT: return *(const int *)p;
    case STATE_FLOAT: return *(const float *)p;
    default: return *(const double *)p;
    }
}

void run_state_fields_to_json(cJSON *o, const StateField *fields, int n, const void *state) {
    for (int i = 0; i < n; i++) {
        const StateField *f = &fields[i];
        if (f->kind == STATE_TEXT) cJSON_AddStringToObject(o, f->key, (const char *)state + f->offset);
        else if (f->kind == STATE_FLOAT) {   // (an item not added is freed: memory ran out, json.c notes it)
            cJSON *x = config_float_json((float)state_get(f, state));
            if (x && !cJSON_AddItemToObject(o, f->key, x)) cJSON_Delete(x);
        }
        else cJSON_AddNumberToObject(o, f->key, state_get(f, state));
    }
}

cJSON *run_state_parse(const char *json, char *err, size_t errlen) {
    const char *end = NULL;
    int oom;
    cJSON *o = json_parse_n(json, strlen(json) + 1, &end, &oom);   // memory that ran out is not a bad text (io/json.h)
    if (!o) {
        if (oom) snprintf(err, errlen, "out of memory");
        else if (json_parse_too_deep(json, strlen(json) + 1, end))   // well-formed, maybe: not "not valid JSON"
            snprintf(err, errlen, "train_state: " JSON_TOO_DEEP_FMT, CJSON_NESTING_LIMIT);
        else if (end && end >= json) snprintf(err, errlen, "train_state is not valid JSON (at byte %zu)", (size_t)(end - json));
        else snprintf(err, errlen, "train_state is not valid JSON");
        return NULL;
    }
    if (!cJSON_IsObject(o)) { cJSON_Delete(o); snprintf(err, errlen, "train_state is not a JSON object"); return NULL; }
    return o;
}

int run_state_fields_from_json(const cJSON *o, const StateField *fields, int n, void *state, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        const StateField *f = &fields[i];
        if (f->kind == STATE_TEXT) continue;
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, f->key);
        double v = cJSON_IsNumber(x) ? x->valuedouble : NAN;
        int ok;
        if (f->kind == STATE_FLOAT) ok = fabs(v) <= 3e38 && (float)v >= (float)f->lo && (float)v <= (float)f->hi;
        else ok = v >= f->lo && v <= f->hi && (f->kind == STATE_DOUBLE || v == floor(v));
        if (!ok) { snprintf(err, errlen, "train_state: '%s' missing or out of range", f->key); return -1; }
        char *p = (char *)state + f->offset;
        switch (f->kind) {
        case STATE_LONG: *(long *)p = (long)v; break;
        case STATE_INT: *(int *)p = (int)v; break;
        case STATE_FLOAT: *(float *)p = (float)v; break;
        default: *(double *)p = v; break;
        }
    }
    return 0;
}

void run_state_shared_to_json(cJSON *state, const char *run_id, double sum, long steps, long max_pixels) {
    if (run_id[0]) cJSON_AddStringToObject(state, "run_id", run_id);
    if (max_pixels > 0) cJSON_AddNumberToObject(state, "max_pixels", (double)max_pixels);
    if (steps <= 0) return;
    cJSON_AddNumberToObject(state, "log_loss_sum", sum);
    cJSON_AddNumberToObject(state, "log_steps", (double)steps);
}

int run_state_shared_from_json(const cJSON *state, long step, char *run_id, size_t idlen, double *sum, long *steps,
                               long *max_pixels, char *err, size_t errlen) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(state, "run_id");
    if (id && !cJSON_IsString(id)) {   // read as "" it made the run an older one, foreign to its own folder
        snprintf(err, errlen, "train_state: 'run_id' missing or out of range");
        return -1;
    }
    snprintf(run_id, idlen, "%s", id ? id->valuestring : "");
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(state, "max_pixels");   // the flag's range
    *max_pixels = cJSON_IsNumber(mp) && mp->valuedouble >= 1 && mp->valuedouble <= CLI_MAX_PIXELS_MAX &&
                  mp->valuedouble == (double)(long)mp->valuedouble ? (long)mp->valuedouble : 0;
    if (mp && !*max_pixels) {
        snprintf(err, errlen, "train_state: 'max_pixels' missing or out of range");
        return -1;
    }
    // Written together, or not at all (no step since the last row). The steps since the last row are at
    // most the run's steps; not at most log_every, which a resume's --log-every may lower mid-interval
    // (10 -> 7 at step 15 with 5 carried: step 19's checkpoint holds 9). The losses are each >= 0 and
    // finite. A sum of 500 steps at step 15 wrote 8.4 / 500 in the next row (docs/interface.md, section 4).
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(state, "log_loss_sum");
    const cJSON *ln = cJSON_GetObjectItemCaseSensitive(state, "log_steps");
    *sum = 0;
    *steps = 0;
    if (!ls && !ln) return 0;
    const char *bad = NULL;
    if (!(cJSON_IsNumber(ln) && ln->valuedouble >= 1 && ln->valuedouble <= (double)step &&
          ln->valuedouble == floor(ln->valuedouble)))
        bad = "log_steps";
    else if (!(cJSON_IsNumber(ls) && ls->valuedouble >= 0 && isfinite(ls->valuedouble)))
        bad = "log_loss_sum";
    if (bad) {
        if (!strcmp(bad, "log_steps") && cJSON_IsNumber(ln) && ln->valuedouble > (double)step)
            snprintf(err, errlen, "train_state: 'log_steps' out of range: %.0f is past 'step' %ld", ln->valuedouble, step);
        else snprintf(err, errlen, "train_state: '%s' missing or out of range", bad);
        return -1;
    }
    *sum = ls->valuedouble;
    *steps = (long)ln->valuedouble;
    return 0;
}

double run_epoch_at(const RunEpochs *e, long step, int batch) {
    return e->from + (double)(step - e->from_step) * batch / e->images;   // from 0: step x batch / images exactly
}

void run_epochs_resume(RunEpochs *e, long step, int batch, long ntrain) {
    // step x batch / the new count ran the column back (images added) or ahead (removed) at the resume.
    if (e->images > 0 && e->images != ntrain) {
        e->from = run_epoch_at(e, step, batch);
        e->from_step = step;
    }
    e->images = ntrain;
}

int run_epoch_total(const char *cmd, double epochs, const RunEpochs *e, long ntrain, int batch, long *steps,
                    char *err, size_t errlen) {
    // --epochs 4 of a run at epoch 2.02 whose images doubled counted 4 x the new count / batch from step
    // 0: the run ended at epoch 5.02 (and, images removed, its own --epochs was refused as fewer steps
    // than it had run). The column's own count, from its last stretch on.
    if (e->from_step <= 0) return run_epoch_steps(cmd, epochs, ntrain, batch, steps, err, errlen);
    if (epochs <= e->from) { *steps = e->from_step; return 0; }
    long n;
    if (run_epoch_steps(cmd, epochs - e->from, ntrain, batch, &n, err, errlen)) return CLI_USAGE;
    if ((double)e->from_step + (double)n > RUN_STEPS_MAX) {
        snprintf(err, errlen, "%s --epochs: %g passes at batch %d are %.0f steps, more than a run counts (at most "
                 "10^12): fewer --epochs", cmd, epochs, batch, (double)e->from_step + (double)n);
        return CLI_USAGE;
    }
    *steps = e->from_step + n;
    return 0;
}

void run_epochs_to_json(cJSON *state, const RunEpochs *e, long step, int batch) {
    if (e->images <= 0) return;
    cJSON_AddNumberToObject(state, "epoch", run_epoch_at(e, step, batch));
    cJSON_AddNumberToObject(state, "epoch_images", (double)e->images);
    if (e->from_step <= 0) return;
    cJSON_AddNumberToObject(state, "epoch_from", e->from);
    cJSON_AddNumberToObject(state, "epoch_from_step", (double)e->from_step);
}

void run_split_pin_to_json(cJSON *state, const DatasetSplitPin *pin) {
    if (pin->held_out[0]) cJSON_AddStringToObject(state, "split_held_out", pin->held_out);
    if (pin->trains[0]) cJSON_AddStringToObject(state, "split_trains", pin->trains);
}

int run_split_pin_from_json(const cJSON *state, DatasetSplitPin *pin, char *err, size_t errlen) {
    const char *keys[2] = {"split_held_out", "split_trains"};
    char *dst[2] = {pin->held_out, pin->trains};
    size_t dn[2] = {sizeof pin->held_out, sizeof pin->trains};
    for (int i = 0; i < 2; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(state, keys[i]);
        if (x && !cJSON_IsString(x)) {   // dropped as absent, the split chose again: its images moved
            snprintf(err, errlen, "train_state: '%s' missing or out of range", keys[i]);
            return -1;
        }
        snprintf(dst[i], dn[i], "%s", x ? x->valuestring : "");
    }
    return 0;
}

int run_epochs_from_json(const cJSON *state, long step, RunEpochs *e, char *err, size_t errlen) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(state, "epoch_images");
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(state, "epoch_from");
    const cJSON *fs = cJSON_GetObjectItemCaseSensitive(state, "epoch_from_step");
    memset(e, 0, sizeof *e);
    const char *bad = NULL;
    if (n && !(cJSON_IsNumber(n) && n->valuedouble >= 1 && n->valuedouble <= INT_MAX &&
               n->valuedouble == floor(n->valuedouble)))
        bad = "epoch_images";
    else if ((f || fs) && !(cJSON_IsNumber(fs) && fs->valuedouble >= 1 && fs->valuedouble <= (double)step &&
                            fs->valuedouble == floor(fs->valuedouble)))
        bad = "epoch_from_step";
    else if ((f || fs) && !(cJSON_IsNumber(f) && f->valuedouble >= 0 && isfinite(f->valuedouble)))
        bad = "epoch_from";
    if (bad) { snprintf(err, errlen, "train_state: '%s' missing or out of range", bad); return -1; }
    if (n) e->images = (long)n->valuedouble;
    if (fs) { e->from_step = (long)fs->valuedouble; e->from = f->valuedouble; }
    return 0;
}

static uint64_t item_hash(const DataItem *it, int set, uint64_t h) {
    int dims[3] = {it->w, it->h, set};
    h = dist_hash_bytes(it->rel, strlen(it->rel) + 1, h);
    return dist_hash_bytes(dims, sizeof dims, h);
}

void run_data_signature(const Dataset *ds, const Dataset *val, const int *train_idx, int ntrain, const int *val_idx,
                        int nval, char *sig, size_t n) {
    uint64_t h = DIST_HASH_START, h_train = 0;
    long count = 0;
    const Dataset *sets[2] = {ds, val};
    for (int s = 0; s < 2; s++) {
        if (!sets[s]) continue;
        for (int i = 0; i < sets[s]->n; i++) h = item_hash(&sets[s]->items[i], s, h);
        count += sets[s]->n;
        if (s == 0) h_train = h;   // the training folder's alone: where the hash stood before --val's items
    }
    int k = snprintf(sig, n, "%ld:%016llx", count, (unsigned long long)h);
    if (k <= 0 || (size_t)k >= n) return;
    uint64_t h_val = DIST_HASH_START;
    if (val) {
        for (int i = 0; i < val->n; i++) h_val = item_hash(&val->items[i], 1, h_val);
        snprintf(sig + k, n - (size_t)k, "/%d:%016llx/%d:%016llx", ds->n, (unsigned long long)h_train, val->n,
                 (unsigned long long)h_val);
    } else if (train_idx) {   // the held-out split's training side, then its held-out side
        h_train = DIST_HASH_START;
        for (int i = 0; i < ntrain; i++) h_train = item_hash(&ds->items[train_idx[i]], 0, h_train);
        for (int i = 0; i < nval; i++) h_val = item_hash(&ds->items[val_idx[i]], 1, h_val);
        snprintf(sig + k, n - (size_t)k, "/%d:%016llx/%d:%016llx", ntrain, (unsigned long long)h_train, nval,
                 (unsigned long long)h_val);
    }
}

// Part `part` (0, 1, 2) of a signature, "" when it has none (an older run's); its length in *len.
static const char *sig_part(const char *sig, int part, size_t *len) {
    for (int p = 0; p < part && *sig; p++) {
        sig += strcspn(sig, "/");
        if (*sig) sig++;
        else return (*len = 0, "");
    }
    *len = strcspn(sig, "/");
    return sig;
}

static int same_part(const char *was, const char *now, int part) {
    size_t wl, nl;
    const char *w = sig_part(was, part, &wl), *v = sig_part(now, part, &nl);
    return wl && nl ? wl == nl && !strncmp(w, v, wl) : -1;   // -1: one of them has no such part
}

int run_state_images_from_json(const cJSON *state, char *sig, size_t n, char *err, size_t errlen) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(state, "images");   // absent in older runs
    sig[0] = 0;
    if (!x) return 0;
    // One to three parts "<count>:<16 hex digits>" (run_data_signature): "garbage" read as a count of
    // 0 and warned that the images were not those the run was checkpointed with.
    const char *p = cJSON_IsString(x) ? x->valuestring : NULL;
    int ok = p && strlen(p) < n;
    for (int part = 0; ok; part++) {
        size_t digits = strspn(p, "0123456789");
        ok = digits >= 1 && digits <= 10 && p[digits] == ':' && strspn(p + digits + 1, "0123456789abcdef") == 16;
        if (ok) p += digits + 1 + 16;
        if (!ok || *p != '/' || part == 2) break;
        p++;
    }
    if (!ok || *p) {
        snprintf(err, errlen, "train_state: 'images' missing or out of range");
        return -1;
    }
    snprintf(sig, n, "%s", x->valuestring);
    return 0;
}

int run_state_groups_check(const char *key, int batch, int groups, char *err, size_t errlen) {
    char why[512];
    if (!dist_check_groups(batch, groups, 1, 1, why, sizeof why)) return 0;
    snprintf(err, errlen, "train_state: '%s' out of range: %d is not a power of two that divides 'batch' %d", key,
             groups, batch);
    return -1;
}

int run_data_changed(const char *cmd, const char *data, const char *val, const char *was, const char *now, char *msg,
                     size_t n) {
    // The first part, of every image, decides (a run from before the second part has only that one).
    if (!was[0] || same_part(was, now, 0) == 1) return 0;
    char whose[4200];
    if (val) snprintf(whose, sizeof whose, "the images of --val %s", val);
    else snprintf(whose, sizeof whose, "the images held out of %s for validation (--val-frac)", data);
    // The training images as they were, the --val folder's not: validation images never train, so the
    // weights go on as they would have, and only val_loss and the rest come from other images.
    if (same_part(was, now, 1) == 1) {
        size_t len;
        long train = atol(sig_part(now, 1, &len));
        snprintf(msg, n, "warning: %s --resume: %s are not those the run was checkpointed with (%ld usable now, "
                 "%ld then); the training images are the same, so the weights train as they would have, but the "
                 "validation figures from here on are of other images", cmd, whose, atol(now) - train, atol(was) - train);
        return 1;
    }
    // The validation images changed with the training images (a held-out split's fallback image gone, the
    // split choosing again: docs/interface.md section 2, "Validation split"): said too, where both runs
    // recorded them (the third part).
    char also[4400] = "";
    size_t len;
    if (same_part(was, now, 2) == 0)
        snprintf(also, sizeof also, "; %s are other images too (%ld now, %ld then), so the validation figures from "
                 "here on are of other images", whose, atol(sig_part(now, 2, &len)), atol(sig_part(was, 2, &len)));
    // The counts are of both folders when the run validates on a --val folder of its own.
    snprintf(msg, n, "warning: %s --resume: the images of %s%s%s are not those the run was checkpointed with "
             "(%ld usable now, %ld then%s: files added, removed, renamed or resized, or another --max-pixels); it "
             "goes on with them, so it will not end as the uninterrupted run would have%s", cmd, data,
             val ? " and of --val " : "", val ? val : "", atol(now), atol(was), val ? ", the two folders together" : "",
             also);
    return 2;
}

// The end of the lines that stop a run at a non-finite loss or weights: the checkpoint still good, or
// that the run wrote none (ckpt_path is the run folder's latest).
static void last_good_checkpoint(char *out, size_t n, const char *ckpt_path) {
    int written = access(ckpt_path, F_OK) == 0;
    snprintf(out, n, "%s%s", written ? RUN_LAST_GOOD : "no checkpoint was written (the run stopped before its first)",
             written ? ckpt_path : "");
}

void run_saved_after_failure(const char *ckpt_path, const char *run_dir, long step, long total_steps, const char *data,
                             const char *val) {
    // A folder the resume would refuse as gone (it was refused so, the line's advice followed as said).
    struct stat st;
    int no_data = data && data[0] && stat(data, &st) != 0, no_val = val && val[0] && stat(val, &st) != 0;
    char word[FILE_SHELL_WORD_MAX];
    if (step < total_steps)
        cli_message("saved %s at step %ld of %ld (continue with --resume %s%s%s%s)", ckpt_path, step, total_steps,
                    file_shell_word(run_dir, word, sizeof word), no_data ? " --data DIR" : "", no_val ? " --val DIR" : "",
                    no_data && no_val ? ", each DIR where that folder is now"
                    : no_data ? ", DIR where the data folder is now"
                    : no_val ? ", DIR where the validation folder is now" : "");
    else
        cli_message("saved %s at step %ld, the run's last", ckpt_path, step);
}

int run_folder_gone(const char *run_dir, const struct stat *home, int resume_note, char *err, size_t errlen) {
    struct stat st;
    if (!run_dir || !run_dir[0]) return 0;
    if (stat(run_dir, &st) == 0) {   // another in its place is gone too: a file, or a new folder
        if (S_ISDIR(st.st_mode) && (!home || (st.st_dev == home->st_dev && st.st_ino == home->st_ino))) return 0;
    } else if (errno != ENOENT && errno != ENOTDIR) {
        return 0;
    }
    snprintf(err, errlen, "%s: the run folder is gone (moved or deleted during the run)%s", run_dir,
             resume_note ? "; if it was moved, --resume goes on from its last checkpoint where it went" : "");
    return 1;
}

void run_nonfinite_loss_message(char *msg, size_t n, double loss, long step, double lr, const char *ckpt_path) {
    char last[4400];
    last_good_checkpoint(last, sizeof last, ckpt_path);
    snprintf(msg, n, "loss is %s at step %ld (lr %.3e); stopped; %s", isnan(loss) ? "NaN" : "infinite", step, lr, last);
}

float run_test_hook_loss(long step1, float loss) {
    static int read = 0;
    static long nan_step = -1, inf_step = -1;
    if (!read) {
        const char *v = getenv("VITMAE_FAULT_NAN_STEP"), *i = getenv("VITMAE_FAULT_INF_STEP");
        nan_step = v ? strtol(v, NULL, 10) : -1;
        inf_step = i ? strtol(i, NULL, 10) : -1;
        read = 1;
    }
    return step1 == nan_step ? NAN : step1 == inf_step ? INFINITY : loss;
}

void run_diverged_note(char *err, size_t errlen, const MaeTensor *tab, int n, const float *params, const float *m,
                       const float *v, long step, const char *ckpt_path) {
    char why[200], last[4400];
    if (!ckpt_check_finite(tab, n, params, m, v, why, sizeof why)) return;
    size_t len = strlen(err);
    if (len + 1 >= errlen) return;
    last_good_checkpoint(last, sizeof last, ckpt_path);
    snprintf(err + len, errlen - len, "; stopped at step %ld, its loss still finite; %s", step, last);
}

void run_new_id(char *id, size_t n) {
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    z ^= (uint64_t)getpid() << 40 ^ (uint64_t)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) << 20;
    z += 0x9e3779b97f4a7c15u;   // splitmix64's finaliser spreads the bits
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    snprintf(id, n, "%016llx", (unsigned long long)z);
}

// 1 when member key is the same in both train_states x and y (or absent from both).
static int same_item(const cJSON *x, const cJSON *y, const char *key) {
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(x, key), *v = cJSON_GetObjectItemCaseSensitive(y, key);
    return (!u && !v) || (cJSON_IsNumber(u) && cJSON_IsNumber(v) && u->valuedouble == v->valuedouble) ||
           (cJSON_IsString(u) && cJSON_IsString(v) && !strcmp(u->valuestring, v->valuestring));
}

const char *run_foreign_why(int kind, const char *dir, char *buf, size_t n) {
    if (kind == RUN_FOREIGN_ID) snprintf(buf, n, "another run: its run_id differs from that of %s/checkpoint.safetensors", dir);
    else if (kind == RUN_FOREIGN_CONFIG) snprintf(buf, n, "another run: its run_id differs from the one in %s/config.json", dir);
    else if (kind == RUN_FOREIGN_MIXED)
        snprintf(buf, n, "%s has no checkpoint.safetensors and its snapshots are of more than one run: which is its "
                 "own cannot be told", dir);
    else if (kind == RUN_FOREIGN_SNAPSHOTS)
        snprintf(buf, n, "another run: its run_id differs from that of the snapshots in %s", dir);
    else if (kind == RUN_FOREIGN_UNKNOWN)
        snprintf(buf, n, "%s holds a run's metrics.csv and no checkpoint.safetensors, config.json or snapshot to tell "
                 "which run: its rows cannot be told to be this run's", dir);
    else snprintf(buf, n, "its model, seed or batch differ from %s/checkpoint.safetensors", dir);
    return buf;
}

int run_folder_foreign_checkpoint(const char *file, const char *dir) {
    char latest[4200];
    snprintf(latest, sizeof latest, "%s/checkpoint.safetensors", dir);
    struct stat a, b;
    if (stat(latest, &b) != 0) {   // gone (a kill, a user): config.json or the snapshots still name the run
        char id[64], own[64];
        checkpoint_run_id(file, id, sizeof id);
        config_run_id(dir, own, sizeof own);
        if (own[0]) return id[0] && strcmp(id, own) ? RUN_FOREIGN_CONFIG : 0;
        folder_run_id(dir, own, sizeof own);
        if (!strcmp(own, RUN_ID_MIXED)) return RUN_FOREIGN_MIXED;
        // The snapshots of one other run (a damaged config.json), or nothing to tell whose the run's rows
        // are: the resume went on, its rows mixed with the other run's (those past its step dropped).
        if (own[0] && id[0] && strcmp(id, own)) return RUN_FOREIGN_SNAPSHOTS;
        if (!own[0] && id[0] && run_folder_kind(dir)) return RUN_FOREIGN_UNKNOWN;
        return 0;
    }
    if (stat(file, &a) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        // The folder's latest checkpoint: the run's own unless config.json, written with the run's every
        // checkpoint, names another run (another run's checkpoint copied in at that name).
        char id[64], own[64];
        checkpoint_run_id(file, id, sizeof id);
        config_run_id(dir, own, sizeof own);
        return id[0] && own[0] && strcmp(id, own) ? RUN_FOREIGN_CONFIG : 0;
    }
    char err[CLI_ERR_MAX];
    StFile *f = st_open_header(file, err, sizeof err), *g = f ? st_open_header(latest, err, sizeof err) : NULL;
    int foreign = 0;
    if (f && g) {
        const char *ta = st_meta(f, "train_state"), *tb = st_meta(g, "train_state");
        cJSON *x = ta ? cJSON_Parse(ta) : NULL, *y = tb ? cJSON_Parse(tb) : NULL;
        if (cJSON_GetObjectItemCaseSensitive(x, "run_id") && cJSON_GetObjectItemCaseSensitive(y, "run_id"))
            foreign = same_item(x, y, "run_id") ? 0 : RUN_FOREIGN_ID;
        else   // runs from before run ids
            foreign = same_meta(f, g, "config") && same_meta(f, g, "classifier") && same_item(x, y, "seed") &&
                      same_item(x, y, "batch") ? 0 : RUN_FOREIGN_MODEL;
        cJSON_Delete(x);
        cJSON_Delete(y);
    }
    if (f) st_close(f);
    if (g) st_close(g);
    return foreign;
}

int run_folder_names_fit(const char *dir, char *err, size_t errlen) {
    if (strlen(dir) + 80 < 4096) return 0;
    snprintf(err, errlen, "a folder name of %zu bytes is too long for a run folder: the names of its checkpoints "
             "would pass the 4096-byte path limit", strlen(dir));
    return -1;
}

int run_resume_check_folders(const char *command, const char *ckpt, const char *data, const char *val, double val_frac,
                             const char *given_data, const char *given_val, char *err, size_t errlen) {
    struct stat st;
    if (given_val && !val[0]) {
        // A run of --val-frac 0 held nothing out: "give those images back" would name images there are none of.
        if (val_frac == 0)
            snprintf(err, errlen, "%s --resume %s: --val cannot be added when a run resumes (the run has no validation: "
                     "it started with --val-frac 0 and no --val)", command, ckpt);
        else
            snprintf(err, errlen, "%s --resume %s: --val cannot be added when a run resumes (the run holds out "
                     "--val-frac %g of its folder; a --val folder would give those images back to training)", command,
                     ckpt, val_frac);
        return CLI_USAGE;
    }
    if (!given_data && !data[0]) {   // an edited train_state: no folder to name
        snprintf(err, errlen, "%s --resume %s: the run's train_state has an empty 'data' field; pass --data DIR", command,
                 ckpt);
        return CLI_USAGE;
    }
    // A name stored with U+FFFD for bytes that are not UTF-8 (docs/interface.md, section 5) names no
    // folder: said so, not "is gone", which that folder may well not be.
    static const char lost[] = " (its name is not UTF-8: the checkpoint keeps U+FFFD for the bytes that are not, "
                               "so it cannot find the folder by it)";
    if (!given_data && stat(data, &st) != 0) {
        char reason[128];
        int e = errno;
        if (e == ENOENT && strstr(data, "\xEF\xBF\xBD"))
            snprintf(err, errlen, "%s --resume %s: the run's data folder %s is not found%s; pass --data DIR", command,
                     ckpt, data, lost);
        else
            snprintf(err, errlen, "%s --resume %s: the run's data folder %s is gone (%s); pass --data DIR", command,
                     ckpt, data, file_reason(e, reason, sizeof reason));
        return CLI_USAGE;
    }
    if (!given_val && val[0] && stat(val, &st) != 0) {
        char reason[128];
        int e = errno;
        if (e == ENOENT && strstr(val, "\xEF\xBF\xBD"))
            snprintf(err, errlen, "%s --resume %s: the run's validation folder %s is not found%s; pass --val DIR",
                     command, ckpt, val, lost);
        else
            snprintf(err, errlen, "%s --resume %s: the run's validation folder %s is gone (%s); pass --val DIR",
                     command, ckpt, val, file_reason(e, reason, sizeof reason));
        return CLI_USAGE;
    }
    return 0;
}

void run_report_skipped(const Dataset *ds) {
    if (dist_rank() != 0) return;
    CliHeld held = {0};
    cli_hold_skipped(&held, ds);
    cli_held_say(&held);
    cli_held_free(&held);
}

void run_report_broken(const Dataset *ds) {
    CliUnread u = {.skipped = 1};   // said as the scan's skipped files are (cmd/cli.h)
    DataSkip sk[64];
    for (int m; (m = dataset_take_broken(ds, sk, NULL, 64)) > 0;)
        for (int i = 0; i < m; i++) {
            if (dist_rank() == 0) cli_unread(&u, NULL, sk[i].path, sk[i].reason);
            free(sk[i].path);
            free(sk[i].reason);
        }
    if (dist_rank() == 0) cli_unread_end(&u, NULL);
}

void run_report_no_validation(int *said, int n, const char *cols) {
    if (*said) return;
    *said = 1;
    cli_message("warning: none of the %d validation image%s decodes (%s broken past the header): the run goes on "
                "without validation; metrics.csv's %s stay empty", n, n == 1 ? "" : "s", n == 1 ? "it is" : "each is",
                cols);
}

int run_val_folder_gone(const Dataset *vds, char *err, size_t errlen) {
    if (!dataset_root_gone(vds, err, errlen)) return 0;
    DataSkip b[16];
    int nb;
    while ((nb = dataset_take_broken(vds, b, NULL, 16)) > 0)
        for (int i = 0; i < nb; i++) { free(b[i].path); free(b[i].reason); }
    return -1;
}

void run_warn_batch_repeats(int batch, int ntrain) {
    if (ntrain <= 0 || batch <= ntrain) return;
    cli_message("warning: --batch %d is more than the %d training image%s: a step takes each image %.1f times on "
                "average", batch, ntrain, ntrain == 1 ? "" : "s", (double)batch / ntrain);
}

void run_warn_long_warmup(long warmup, long total_steps, double lr, int resuming) {
    if (warmup < total_steps) return;
    // A resume keeps the run's warm-up (--warmup-steps is refused at another value) and was told of no
    // --warmup-steps when the default set it: the line names the run's, and the total that gets past it.
    if (resuming) {
        if (total_steps == 1)
            cli_message("warning: the run's warm-up of %ld step%s (--warmup-steps, kept by a resume) is not shorter than "
                        "its 1 step now: its one step runs at learning rate 0 and trains nothing (--steps %ld or more "
                        "reaches the peak %.3e)", warmup, warmup == 1 ? "" : "s", warmup + 1, lr);
        else
            cli_message("warning: the run's warm-up of %ld step%s (--warmup-steps, kept by a resume) is not shorter than "
                        "its %ld steps now: the learning rate rises at every step and never reaches its peak %.3e "
                        "(--steps %ld or more reaches it)", warmup, warmup == 1 ? "" : "s", total_steps, lr, warmup + 1);
        return;
    }
    // A 1-step run warms up only when --warmup-steps says so (warmup_default gives it none), and then its
    // one step runs at rate 0 (lr_at): the user asked for a step of training and gets none.
    if (total_steps == 1) {
        cli_message("warning: --warmup-steps %ld is not shorter than the run's 1 step: its one step runs at "
                    "learning rate 0 and trains nothing (--warmup-steps 0 trains it at %.3e)", warmup, lr);
        return;
    }
    cli_message("warning: --warmup-steps %ld is not shorter than the run's %ld steps: the learning rate rises "
                "at every step and never reaches its peak %.3e", warmup, total_steps, lr);
}

void run_warn_few_val(int nval, float val_frac, int n, const char *what, int offer_larger, int resuming) {
    // A resume takes neither --val nor another --val-frac (its split is the run's): the advice is for a
    // new run (it said "pass --val DIR or a larger --val-frac", both refused by the resume).
    const char *pass = resuming ? "the split is the run's, fixed when it started (a new run can pass --val DIR" : "pass --val DIR";
    // A folder of one image keeps it for training (the split holds at least one out of two or more):
    // the fraction asked for held nothing out, and the run has no validation at all.
    if (nval == 0 && val_frac > 0) {
        cli_message("warning: --val-frac %g of %d image%s holds none out: the run has no validation, its "
                    "metrics.csv's validation columns stay empty; %s%s", val_frac, n, n == 1 ? "" : "s", pass,
                    resuming ? ")" : "");
        return;
    }
    if (nval <= 0 || nval >= 8) return;
    cli_message("warning: only %d validation image%s (--val-frac %g of %d): %s will be noisy; %s%s%s",
                nval, nval == 1 ? "" : "s", val_frac, n, what, pass,
                offer_larger && val_frac < (float)VAL_FRAC_MAX && nval < n - 1 ? " or a larger --val-frac" : "",
                resuming ? ")" : "");
}

// The path (the CPU's, or VITMAE_GEMM's) and the k-blocks (the caches', or VITMAE_GEMM_KC's) fix the
// rounding, so every rank must multiply alike for a run to be bitwise what one process gives. Machines
// of other kinds may still train together, with other last bits (docs/design.md): a warning, the run
// goes on.
void run_warn_other_gemm(void) {
    if (dist_size() <= 1) return;
    char mine[DIST_TEXT_MAX], theirs[DIST_TEXT_MAX], ours[DIST_TEXT_MAX];
    GemmBlocking blk = gemm_blocking();
    if (blk.kc) snprintf(mine, sizeof mine, "the %s path with k-blocks of %d", gemm_kernel_name(), blk.kc);
    else snprintf(mine, sizeof mine, "the %s path", gemm_kernel_name());
    int other = dist_first_other_text(mine, theirs, ours, sizeof theirs);
    if (other && dist_rank() == 0)
        cli_message("warning: rank %d multiplies matrices on %s, rank 0 on %s (VITMAE_GEMM, VITMAE_GEMM_KC or "
                    "another kind of CPU): the run is not bitwise what one process gives (docs/distributed.md)",
                    other, theirs, ours);
}

void run_warn_small(const Dataset *ds, const char *dir, int img) {
    int n = 0, least = -1;
    for (int i = 0; i < ds->n; i++) {
        const DataItem *it = &ds->items[i];
        int side = it->w < it->h ? it->w : it->h;
        if (2L * side >= img) continue;   // 28x28 Fashion-MNIST at the default --img 32 is not worth a line
        n++;
        // The shortest side, then the fewest pixels among those: a 1x3000 strip was named "the smallest"
        // beside a 1x1 image (both of side 1).
        const DataItem *l = least < 0 ? NULL : &ds->items[least];
        int lside = l ? (l->w < l->h ? l->w : l->h) : 0;
        if (!l || side < lside || (side == lside && (long)it->w * it->h < (long)l->w * l->h)) least = i;
    }
    if (!n) return;
    const DataItem *s = &ds->items[least];
    cli_message("warning: %d image%s of %s %s less than half --img %d on the shorter side (the smallest %dx%d, %s): "
                "every view enlarges %s more than twice, blurred", n, n == 1 ? "" : "s", dir, n == 1 ? "is" : "are", img,
                s->w, s->h, s->path, n == 1 ? "it" : "them");
}

void run_wait_note_init(RunWaitNote *n) {
    n->store_said = 0;
    n->waited = n->busy = 0;
    n->steps = -1;
    n->last = -1e9;
}

void run_wait_note_step(RunWaitNote *n, double waited, double busy) {
    if (n->steps < 0) { n->steps = 0; return; }   // the session's first step: the loader was starting
    n->waited += waited;
    n->busy += busy;
    n->steps++;
}

enum { NOTE_MIN_STEPS = 8 };

void run_wait_note(RunWaitNote *n, const Dataset *ds, Progress *prog) {
    double waited = n->waited, busy = n->busy;
    int steps = n->steps;
    if (steps < NOTE_MIN_STEPS) return;
    n->waited = n->busy = 0;
    n->steps = 0;
    DataStats st;
    dataset_stats(ds, &st);
    int N = dist_size();
    run_job_data_stats(&st);
    // The process that waited the largest share of its time (the lowest rank of those alike; a process
    // that was never busy counts as none), and its figures.
    int most = dist_max_rank(busy > 0 ? waited / busy : -1.0);
    double figures[2] = {waited, busy};
    dist_bcast(figures, sizeof figures, most);
    waited = figures[0];
    busy = figures[1];
    if (busy <= 0 || waited < 0.2 * busy || now_seconds() - n->last < 60) return;
    char procs[48] = "";
    if (N > 1) snprintf(procs, sizeof procs, " (%d processes together)", N);
    // Figures above 0 never read 0 ("waited 54% of the time (0 ms per step)" of a 0.05 ms step).
    char per_step[48], mb[32], budget[32];
    format_time_ms(1e3 * waited / steps, per_step, sizeof per_step);
    format_figure(st.cache_bytes / 1048576.0, 0, mb, sizeof mb);
    format_figure(st.cache_budget / 1048576.0, 0, budget, sizeof budget);
    progress_message(prog, stdout, "data pipeline is the bottleneck: steps waited %.0f%% of the time (%s per "
                     "step) for images%s; working images so far%s: %ld decoded, %ld from the store, %ld cache hits "
                     "(cache %s of %s MB); see --cache-mb, --store, --loader-threads (docs/data.md)",
                     100 * waited / busy, per_step, N > 1 ? " (the process that waited most)" : "", procs,
                     st.decoded, st.store_hits, st.cache_hits, mb, budget);
    n->last = now_seconds();
}

void run_store_left_note(RunWaitNote *n, const Dataset *ds, long min_free_mb) {
    // Alike on every rank, as the sum below is collective: a rank without the store (another machine's
    // folder) still takes part (a store on rank 0 alone is enough for the line; rank 0 has one whenever
    // any rank has: run_share_store).
    if (n->store_said || min_free_mb <= 0) return;
    DataStats st;
    dataset_stats(ds, &st);
    run_job_data_stats(&st);
    if (st.store_left <= 0) return;
    n->store_said = 1;
    if (dist_rank() == 0 && dataset_store_dir(ds))
        // cli_out: the folder's name with its control characters written out, the line one line (docs/interface.md,
        // section 1), as every line that names a path.
        cli_out("the disk of the store %s has less than --store-min-free %ld MB free: working "
                         "images are no longer written there (%ld left out so far) and are decoded again when "
                         "wanted; free some space, or see --store-min-free and --store (docs/data.md)",
                         dataset_store_dir(ds), min_free_mb, st.store_left);
}

void run_job_data_stats(DataStats *st) {
    // Sums over the ranks (no buffer per rank, so nothing to run out of); integers below 2^53: exact.
    double c[7] = {(double)st->decoded, (double)st->store_hits, (double)st->store_writes, (double)st->cache_hits,
                   (double)st->cache_bytes, (double)st->cache_budget, (double)st->store_left};
    dist_sum_doubles(c, 7);
    st->decoded = (long)c[0]; st->store_hits = (long)c[1]; st->store_writes = (long)c[2];
    st->cache_hits = (long)c[3]; st->cache_bytes = (size_t)c[4]; st->cache_budget = (size_t)c[5];
    st->store_left = (long)c[6];
}

void run_report_working_images(const Dataset *ds, long steps_run, double total_wait) {
    DataStats st;
    dataset_stats(ds, &st);
    int N = dist_size();
    double wait_ms = steps_run > 0 ? 1e3 * total_wait / steps_run : 0.0;
    run_job_data_stats(&st);   // the job's counts; the longest wait is the job's
    wait_ms = dist_max_double(wait_ms);
    char procs[48] = "";
    if (N > 1) snprintf(procs, sizeof procs, " (%d processes together)", N);
    // A cache in use, or a wait, never reads 0: 300 Fashion-MNIST images are 0.22 MB, not "0 MB".
    char mb[32], each[48];
    format_figure(st.cache_bytes / 1048576.0, 0, mb, sizeof mb);
    format_time_ms(wait_ms, each, sizeof each);
    char left[96] = "";   // images the store's disk had no room for above --store-min-free
    if (st.store_left > 0) snprintf(left, sizeof left, ", %ld not: its disk at --store-min-free", st.store_left);
    printf("working images%s: %ld decoded, %ld read from the store (%ld written%s), %ld from the cache (%s MB); "
           "steps waited %s each for images%s\n", procs, st.decoded, st.store_hits, st.store_writes, left, st.cache_hits,
           mb, each, N > 1 ? " (the process that waited most)" : "");
}

void run_report_broken_file(const char *path, const char *reason, int held, int rank, char *gone_dirs, size_t n) {
    const char *dir = NULL;
    char missing[128];   // the reason as the read said it (io/files.h)
    int gone = !strcmp(reason, file_reason(ENOENT, missing, sizeof missing)) ? output_gone_folder(path, gone_dirs, n, &dir) : 0;
    char on[48] = "";
    if (rank >= 0) snprintf(on, sizeof on, "on rank %d, ", rank);
    // A held-out folder's: the validation scores fewer images, said so (its numbers move). A class folder
    // of --data that the validation met first holds training images too, dropped alike (it said the
    // --val folder's words, as if training went on with them).
    const char *fewer = "which scores fewer images than before (its numbers do not compare with the earlier ones)";
    if (gone == 1)
        cli_message("skipped %s: the folder is gone (%smoved or deleted during the run); its images are left out %s%s",
                    dir, on, held == BROKEN_VAL_FOLDER ? "of the validation from now on, "
                    : held == BROKEN_HELD ? "from now on, of training and of the validation, " : "from now on",
                    held == BROKEN_VAL_FOLDER || held == BROKEN_HELD ? fewer : "");
    else if (!gone)
        cli_message("skipped %s: %s (%sfound while %s)", path, reason, on,
                    held == BROKEN_HELD || held == BROKEN_VAL_FOLDER ? "validating; left out of the validation"
                    : held == BROKEN_STOPPING ? "training"
                    : held == BROKEN_BATCH_OF_ONE ? "training; at --batch 1 no other image can take its place: the step "
                                                    "that draws it stops the run"
                    : "training; an image of its batch that decodes takes its place");
}

int run_broken_held(int held_out, int stopping, int batch) {
    // At --batch 1 every file found broken is said so, the one whose step stops the run too (docs/data.md).
    return held_out ? BROKEN_HELD : batch == 1 ? BROKEN_BATCH_OF_ONE : stopping ? BROKEN_STOPPING : BROKEN_TRAINING;
}

// Rank 0 under mpirun: says item's find (by rank `rank`) unless the same reason was said for it before.
static int broken_say(BrokenNotes *bn, int nitems, int rank, int item, const char *path, const char *reason,
                      int held, char *gone_dirs, size_t n) {
    if (item < 0 || item >= nitems) return 0;
    if (!bn->said) {
        bn->said = calloc((size_t)nitems, sizeof *bn->said);
        if (!bn->said) { run_report_broken_file(path, reason, held, -1, gone_dirs, n); return 1; }
        bn->nitems = nitems;
    }
    if (bn->said[item]) {
        if (!strcmp(bn->said[item], reason)) return 0;
        run_report_broken_file(path, reason, held, rank, gone_dirs, n);   // this rank found it otherwise
        return 1;
    }
    bn->said[item] = strdup(reason);
    run_report_broken_file(path, reason, held, -1, gone_dirs, n);
    return 1;
}

// A kept find: rank, item and held as 3 int32, then path and reason, each with its zero.
static void broken_keep(BrokenNotes *bn, int item, const char *path, const char *reason, int held, char *gone_dirs,
                        size_t n) {
    size_t lp = strlen(path) + 1, lr = strlen(reason) + 1, need = 12 + lp + lr;
    if (bn->len + need > bn->cap) {
        size_t cap = bn->cap ? bn->cap : 4096;
        while (cap < bn->len + need) cap *= 2;
        char *p = realloc(bn->kept, cap);
        // Out of memory for a line: this rank says it itself, as before the job said each once.
        if (!p) { run_report_broken_file(path, reason, held, -1, gone_dirs, n); return; }
        bn->kept = p;
        bn->cap = cap;
    }
    int32_t head[3] = {dist_rank(), item, held};
    memcpy(bn->kept + bn->len, head, sizeof head);
    memcpy(bn->kept + bn->len + 12, path, lp);
    memcpy(bn->kept + bn->len + 12 + lp, reason, lr);
    bn->len += need;
}

int run_broken_note(BrokenNotes *bn, int nitems, int item, const char *path, const char *reason, int held,
                    char *gone_dirs, size_t n) {
    if (dist_size() == 1) { run_report_broken_file(path, reason, held, -1, gone_dirs, n); return 1; }
    if (dist_rank() == 0) return broken_say(bn, nitems, 0, item, path, reason, held, gone_dirs, n);
    broken_keep(bn, item, path, reason, held, gone_dirs, n);
    return 0;
}

int run_broken_kept(const BrokenNotes *bn) { return bn->len > 0; }

int run_broken_share(BrokenNotes *bn, int nitems, char *gone_dirs, size_t n, void (*said)(void *ctx, int item),
                     void *ctx, char *err, size_t errlen) {
    size_t total = 0;
    char *all = NULL;
    char why[160];
    int rc = dist_gather_bytes(bn->kept, bn->len, &all, &total, why, sizeof why);
    bn->len = 0;
    if (rc) {
        snprintf(err, errlen, "the files found broken by the other processes, to say them: %s", why);
        return rc;
    }
    for (size_t at = 0; all && dist_rank() == 0 && at + 12 < total;) {
        int32_t head[3];
        memcpy(head, all + at, sizeof head);
        const char *path = all + at + 12, *reason = path + strlen(path) + 1;
        at = (size_t)(reason + strlen(reason) + 1 - all);
        if (broken_say(bn, nitems, head[0], head[1], path, reason, head[2], gone_dirs, n) && said) said(ctx, head[1]);
    }
    free(all);
    return 0;
}

void run_resume_groups_refusal(char *err, size_t errlen, int bad, int procs, int accum, int groups) {
    if (bad == DIST_BAD_ACCUM) {
        int mine = groups / procs;
        char whose[96], use[48];
        snprintf(err, errlen, "%d micro-batches cannot share %s evenly, and this run's %d gradient group%s fixed "
                 "since it started (--groups): use %s", accum, dist_groups_share(whose, sizeof whose, groups, procs),
                 groups, groups == 1 ? " is" : "s are", dist_accum_choice(use, sizeof use, mine));
        return;
    }
    // G is fixed, --accum is this session's: the counts whose share it divides (-np 4 --accum 2 of 4
    // groups would be refused again, for --accum), as dist_check_groups names them for a new run.
    char counts[256], way[300];
    if (dist_proc_counts(counts, sizeof counts, groups, accum))
        snprintf(way, sizeof way, "resume it without mpirun or with mpirun -np %s", counts);
    else snprintf(way, sizeof way, "resume it without mpirun (or with mpirun -np 1)");
    if (groups < 2)
        snprintf(err, errlen, "%d processes: this run sums each step as 1 gradient group, fixed when it started "
                 "(--groups), which one process computes: %s", procs, way);
    else
        snprintf(err, errlen, "%d processes: this run sums each step as %d gradient groups, fixed when it started "
                 "(--groups), and each process must own a power-of-two share of them for bitwise equal results: "
                 "%s", procs, groups, way);
}

void run_broken_free(BrokenNotes *bn) {
    for (int i = 0; bn->said && i < bn->nitems; i++) free(bn->said[i]);
    free(bn->said);
    free(bn->kept);
    memset(bn, 0, sizeof *bn);
}

// train's RUN/samples, where a link to a folder sends the sheets into its target, is or lies inside the
// folder dir (name: "data folder", "--val folder") read as images, or a link below dir leads the scan
// into it: the sheets would train at the next scan. label: "CMD FLAG: " as run_folder_overlaps writes it.
// CLI_USAGE with err, or 0 (also when RUN/samples is not a folder: made with the first sheet, or
// refused by train_out_prepare).
static int samples_overlap(const char *label, const char *run_dir, const char *dir, const char *name, char *err,
                           size_t errlen) {
    char samples[4200], target[4096] = "", at[4096], word[4400], linked[8400];
    struct stat lst, st;
    snprintf(samples, sizeof samples, "%s/samples", run_dir);
    if (lstat(samples, &lst) != 0 || stat(samples, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    int link = S_ISLNK(lst.st_mode);
    if (link) {
        ssize_t len = readlink(samples, target, sizeof target - 1);
        target[len > 0 ? len : 0] = 0;
    }
    const char *pngs = "the run's sample sheets would be read as images by the next scan (a --resume, the next run)";
    if (link && output_path_within(samples, dir)) {
        snprintf(err, errlen, "%s%s is a symbolic link to %s, which %s the %s %s: %s; move the link away, or point it "
                 "at a folder outside the %s", label, samples, target, output_path_within(dir, samples) ? "is" : "lies inside",
                 name, dir, pngs, name);
        return CLI_USAGE;
    }
    if (output_folder_reaches(dir, samples, at, sizeof at)) {
        if (link) snprintf(linked, sizeof linked, "%s, a symbolic link to %s,", samples, target);
        snprintf(err, errlen, "%s%s is inside the %s %s through a link (its scan enters %s): %s; move the link %s out "
                 "of the %s", label, link ? linked : samples, name, dir, at, pngs, file_shell_word(at, word, sizeof word), name);
        return CLI_USAGE;
    }
    return 0;
}

int run_folder_overlaps(const char *cmd, const char *flag, const char *run_dir, const char *data, const char *val,
                        char *err, size_t errlen) {
    const char *dirs[2] = {data, val}, *names[2] = {"data folder", "--val folder"};
    const char *which = flag ? "" : "the default run folder ";
    // The PNGs a run writes: train's sample panels and both commands' curves.png.
    const char *pngs = !strcmp(cmd, "train") ? "the run's sample panels and curves.png" : "the run's curves.png";
    for (int k = 0; k < 2; k++) {
        if (!dirs[k]) continue;
        if (output_path_within(run_dir, dirs[k])) {
            // A resumed run's folder already holds such files: it moves out before it goes on; one given
            // as its own images' folder (`--resume RUN --data RUN`) cannot move out of itself.
            int resumed = flag && !strcmp(flag, "--resume"), same = output_path_within(dirs[k], run_dir);
            snprintf(err, errlen, "%s%s%s: %s%s is %s the %s %s: %s would be read as images by the next scan (a "
                     "--resume, the next run); %s", cmd, flag ? " " : "", flag ? flag : "", which, run_dir,
                     same ? "the same folder as" : "inside", names[k], dirs[k], pngs,
                     !resumed ? "give a run folder outside it with --out"
                     : !same ? "move the run folder out of it, then resume it there"
                     : k == 0 ? "give the folder of the images with --data DIR" : "give the folder of the validation images with --val DIR");
            return CLI_USAGE;
        }
        // ... also when a link below the folder leads to the run folder, or to a folder holding it: the
        // scan follows it (docs/interface.md, "Paths that meet").
        char link[4096];
        if (output_folder_reaches(dirs[k], run_dir, link, sizeof link)) {
            snprintf(err, errlen, "%s%s%s: %s%s is inside the %s %s through a link (its scan enters %s): %s would be read as images "
                     "by the next scan (a --resume, the next run); %s", cmd, flag ? " " : "", flag ? flag : "", which,
                     run_dir, names[k], dirs[k], link, pngs,
                     flag && !strcmp(flag, "--resume") ? "move the run folder out of it, then resume it there"
                                                       : "give a run folder outside it with --out");
            return CLI_USAGE;
        }
        if (output_path_within(dirs[k], run_dir)) {
            snprintf(err, errlen, "%s%s%s: %s%s holds the %s %s (--overwrite would move it away with the run, and the "
                     "run's files would land among its images); keep the images outside the run folder", cmd,
                     flag ? " " : "", flag ? flag : "", which, run_dir, names[k], dirs[k]);
            return CLI_USAGE;
        }
    }
    // train's sample sheets go where RUN/samples leads: a link to (or into) a folder the run reads, made
    // before this run or between runs, fed them back as images (docs/interface.md, "Paths that meet").
    if (strcmp(cmd, "train")) return 0;
    char label[64];
    snprintf(label, sizeof label, "%s%s%s: ", cmd, flag ? " " : "", flag ? flag : "");
    for (int k = 0; k < 2; k++)
        if (dirs[k] && samples_overlap(label, run_dir, dirs[k], names[k], err, errlen)) return CLI_USAGE;
    return 0;
}

// 1 when dir/name is a checkpoint file: a regular file or a link to one, as st_run_latest takes a run's
// latest (io/safetensors.h) for --ckpt RUN, info RUN and --resume RUN. A folder of that name is none (a
// class of images named checkpoint-5.safetensors made its data folder "a vitmae run folder"), nor is a
// link to nothing.
static int checkpoint_file_at(const char *dir, const char *name) {
    char path[4400];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

// The record of a vitmae run that dir holds, its name in what: train's config.json (config_is_vitmae: another
// program's config.json is no run), checkpoint.safetensors, or a snapshot checkpoint-N.safetensors, each a
// file (checkpoint_file_at). 1 found, 0 not.
static int folder_holds_run_record(const char *dir, char *what, size_t n) {
    if (checkpoint_file_at(dir, "checkpoint.safetensors")) { snprintf(what, n, "checkpoint.safetensors"); return 1; }
    if (config_reads_vitmae(dir)) { snprintf(what, n, "config.json"); return 1; }
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (!found && d && (e = readdir(d)))
        if ((found = snapshot_step(e->d_name) >= 0 && checkpoint_file_at(dir, e->d_name))) snprintf(what, n, "%s", e->d_name);
    if (d) closedir(d);
    return found;
}

int run_data_run_folder(const Dataset *ds, char *at, size_t atlen, char *what, size_t whatlen) {
    // Items come in scan order, depth first: a folder met again (files beside its sub-folders) is one
    // above or equal to the previous item's, checked then, so each folder is looked at once.
    const char *prev = NULL;
    size_t prevlen = 0;
    for (int i = 0; i < ds->n; i++) {
        const char *rel = ds->items[i].rel, *path = ds->items[i].path, *slash = strrchr(rel, '/');
        size_t len = slash ? (size_t)(slash - rel) : 0, base = strlen(path) - strlen(rel);
        if (prev && prevlen == len && !memcmp(prev, rel, len)) continue;   // the previous item's folder
        // the root (e = 0), then each folder below it on the item's way (rel[e] a '/', or the item's own)
        for (size_t e = 0; e <= len; e++) {
            if (e && e < len && rel[e] != '/') continue;
            int checked = prev && prevlen >= e && (prevlen == e || prev[e] == '/') && !memcmp(prev, rel, e);
            if (checked) continue;
            if (e == 0) snprintf(at, atlen, "%s", ds->root);
            else snprintf(at, atlen, "%.*s", (int)(base + e), path);
            if (folder_holds_run_record(at, what, whatlen)) return 1;
        }
        prev = rel;
        prevlen = len;
    }
    return 0;
}

int run_data_refuse_run_folder(const char *cmd, const char *flag, const Dataset *ds, int val, char *err, size_t errlen) {
    char at[4400], what[300];
    if (!run_data_run_folder(ds, at, sizeof at, what, sizeof what)) return 0;
    int root = !strcmp(at, ds->root);
    char where[4400] = "";
    if (!root) snprintf(where, sizeof where, " inside the %s folder %s", val ? "--val" : "data", ds->root);
    // --data RUN where --ckpt RUN (--init, --resume) was meant: the run's sample sheets and curves.png
    // trained as images, and their colour made a greyscale run's model 3-channel (docs/data.md, "Files").
    snprintf(err, errlen, "%s %s: %s is a vitmae run folder (it holds %s)%s: its sample sheets and curves.png would "
             "be read as %s images; %s with %s DIR (%s take a run folder)", cmd, flag, at, what, where,
             val ? "validation" : "training",
             root ? (val ? "give the folder of the validation images" : "give the folder of the images")
                  : "move the run folder out of it, or give the folder of the images", val ? "--val" : "--data",
             !strcmp(cmd, "finetune") ? "--ckpt and --resume" : "--init and --resume");
    return CLI_USAGE;
}

void run_data_hold_run_folder(CliHeld *held, const char *what_flag, const Dataset *ds) {
    char at[4400], what[300];
    if (!run_data_run_folder(ds, at, sizeof at, what, sizeof what)) return;
    cli_hold(held, NULL, "warning: %s: %s is a vitmae run folder (it holds %s): its sample sheets and curves.png are read "
             "as images here, and train and finetune refuse it (--ckpt takes a run folder)", what_flag, at, what);
}

void run_abs_path(char *dst, size_t n, const char *path) {
    char *abs = realpath(path, NULL);
    snprintf(dst, n, "%s", abs ? abs : path);
    free(abs);
}

void run_threads_text(char *buf, size_t n, int threads) {
    char procs[32] = "";
    if (dist_size() > 1) snprintf(procs, sizeof procs, "%d processes x ", dist_size());
    int cpus = cpu_usable_cpus();
    char over[96] = "";
    if (threads > cpus)   // a typo (--threads 64 on 2 cores) ran each step many times slower, unsaid
        snprintf(over, sizeof over, " (more than the %d CPU%s %s may use: slower steps, the same results)", cpus,
                 cpus == 1 ? "" : "s", dist_size() > 1 ? "each" : "it");
    snprintf(buf, n, "%s%d thread%s%s", procs, threads, threads == 1 ? "" : "s", over);
}

void run_augment_text(char *buf, size_t n, const char *augment, float crop_scale, const char *interp) {
    char lo[32] = "", area[48] = "";
    int crop = !strcmp(augment, "crop"), other_area = crop && augment_fraction(crop_scale) != AUGMENT_CROP_LO;
    int cubic = !strcmp(interp, "bicubic");   // flip and none: the evaluation views they train on
    if (other_area) {
        run_value_text(lo, sizeof lo, crop_scale, 1);
        snprintf(area, sizeof area, "area %s to 1", lo);
    }
    if (other_area || cubic)
        snprintf(buf, n, "%s (%s%s%s)", augment, area, other_area && cubic ? ", " : "", cubic ? "bicubic" : "");
    else snprintf(buf, n, "%s", augment);
}

int run_check_same_files(const Dataset *ds) {
    char err[CLI_ERR_MAX];
    int same = dist_check_same_list((const char *const *)&ds->items[0].rel, sizeof(DataItem), ds->n, "file list", 0,
                                    err, sizeof err);
    if (!same) {
        int k = 0;
        long long theirs = 0;
        same = dist_check_same_numbers(&ds->items[0].bytes, sizeof(DataItem), ds->n, &k, &theirs, "file sizes", err,
                                       sizeof err);
        if (same == -2)
            snprintf(err, sizeof err, "rank %d sees a different file list than rank 0: entry %d, '%s', is %lld bytes here "
                     "and %lld on rank 0 (every process must read the same files)", dist_rank(), k + 1, ds->items[k].rel,
                     ds->items[k].bytes, theirs);
    }
    // A rank out of memory for the comparison says so alone, and so does each rank whose files differ
    // (one line per problem: rank 0 does not point at it); the others end with it (dist.h).
    if (same == -2 || same == DIST_NO_MEMORY_HERE) cli_error("data", "%s", err);
    return same ? 1 : 0;
}

int run_check_same_start(long step, const float *const *arrays, int na, size_t n) {
    if (dist_size() == 1) return 0;
    uint64_t h = DIST_HASH_START;
    for (int i = 0; i < na; i++)
        if (arrays[i]) h = dist_hash_bytes(arrays[i], n * sizeof(float), h);
    char ident[96], err[1024];
    snprintf(ident, sizeof ident, "step %ld, weights and moments hashed to %016llx", step, (unsigned long long)h);
    const char *list[1] = {ident};
    int same = dist_check_same_list(list, sizeof *list, 1, "starting checkpoint", 0, err, sizeof err);
    if (same == DIST_NO_MEMORY_HERE) cli_message("%s", err);
    else if (same == -2)   // the differing rank alone, one line (as run_check_same_files)
        cli_message("%s (every process must load the same checkpoint file)", err);
    return same ? 1 : 0;
}

void run_value_text(char *buf, size_t len, double v, int is_float) {
    if (v == floor(v) && fabs(v) <= 9007199254740992.0) { snprintf(buf, len, "%.0f", v); return; }   // 250, not 2.5e+02
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, len, "%.*g", p, v);
        double back = strtod(buf, NULL);
        if (is_float ? (float)back == (float)v : back == v) return;
    }
}

int run_min_lr_check(const char *cmd, float lr, int lr_given, float blr, int batch, float *min_lr, int min_lr_given,
                     char *err, size_t errlen) {
    if (*min_lr <= lr) return 0;
    if (!min_lr_given) { *min_lr = lr; return 0; }
    char m[32], l[32], b[32];
    run_value_text(m, sizeof m, *min_lr, 1);
    run_value_text(l, sizeof l, lr, 1);
    run_value_text(b, sizeof b, blr, 1);
    char how[96];
    if (lr_given) snprintf(how, sizeof how, "--lr");
    else snprintf(how, sizeof how, "--blr %s x --batch %d / 256", b, batch);
    snprintf(err, errlen, "%s --min-lr: %s is above the learning rate, %s (%s): the half-cosine would rise to it, "
             "not decay (give at most %s)", cmd, m, l, how, l);
    return CLI_USAGE;
}

int run_lr_blr_check(const char *cmd, Flag *flags, int nflags, char *err, size_t errlen) {
    const Flag *lr = cli_flag(flags, nflags, "--lr"), *blr = cli_flag(flags, nflags, "--blr");
    if (!lr->seen || !blr->seen) return 0;
    char l[32], b[32];
    run_value_text(l, sizeof l, *(const float *)lr->dst, 1);
    run_value_text(b, sizeof b, *(const float *)blr->dst, 1);
    snprintf(err, errlen, "%s --blr: %s: the base rate gives the learning rate (x batch / 256) only when --lr is not "
             "given, and --lr %s is (leave one out)", cmd, b, l);
    return CLI_USAGE;
}

int run_lr_is_runs(float given, int is_blr, int batch, float lr) {
    float rate = is_blr ? lr_from_blr(given, batch) : given;
    return rate == lr || nextafterf(rate, lr) == lr;
}

int run_resume_val_frac(const char *cmd, const char *val, Flag *flags, int nflags, char *err, size_t errlen) {
    if (!val || !val[0] || !cli_flag(flags, nflags, "--val-frac")->seen) return 0;
    snprintf(err, errlen, "%s --resume: --val-frac: this run validates on its --val folder (%s), holding nothing out "
             "of --data; leave --val-frac out", cmd, val);
    return CLI_USAGE;
}

int run_resume_same_flags(const char *cmd, const RunSameFlag *same, int n, Flag *flags, int nflags, const char *way,
                          char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        const RunSameFlag *s = &same[i];
        if (!cli_flag(flags, nflags, s->flag)->seen) continue;
        char given[192], run[192];   // run_resume_same_pixel_norm's three means and stds
        if (s->is_text) {
            if (s->run_text && !strcmp(s->given_text, s->run_text)) continue;
            snprintf(given, sizeof given, "%s", s->given_text);
            snprintf(run, sizeof run, "%s", s->run_text ? s->run_text : "");
        } else {
            if (s->is_float ? (float)s->given == (float)s->run : s->given == s->run) continue;
            run_value_text(given, sizeof given, s->given, s->is_float);
            run_value_text(run, sizeof run, s->run, s->is_float);
        }
        if (s->is_text && !s->run_text)
            snprintf(err, errlen, "%s --resume: %s%s%s cannot change when a run resumes (it decides the weights); %s",
                     cmd, s->flag, given[0] ? " " : "", given, way);
        else
            snprintf(err, errlen, "%s --resume: %s%s%s cannot change when a run resumes (this run's is %s); %s", cmd,
                     s->flag, given[0] ? " " : "", given, run, way);
        return CLI_USAGE;
    }
    return 0;
}

void run_model_from_flags(MaeConfig *c, const char *preset, int img, int patch, int dim, int depth, int heads,
                          const char *pos, const char *channels, int auto_chans) {
    mae_config_preset(c, preset);
    c->img_size = img; c->patch_size = patch;
    if (dim) c->embed_dim = dim;
    if (depth) c->depth = depth;
    if (heads) c->num_heads = heads;
    c->pos_learned = strcmp(pos, "learned") == 0;
    c->in_chans = !strcmp(channels, "1") ? 1 : !strcmp(channels, "3") ? 3 : auto_chans;
}

void run_decoder_from_flags(MaeConfig *c, int dec_dim, int dec_depth_seen, int dec_depth, int dec_heads) {
    if (dec_dim) c->dec_embed_dim = dec_dim;
    if (dec_depth_seen) c->dec_depth = dec_depth;
    if (dec_heads) c->dec_num_heads = dec_heads;
}

// --preset P given on resume: the first size it sets (given, the model P and the shape flags given build)
// that is not the run's model's, c, with no flag given for it (one given is its own flag's refusal). A
// run started with shape flags over P resumed with --preset P alone was refused as if P changed, with
// "it decides the weights": the line names the size, and the run's shape flags that go with P.
static int resume_preset(const char *cmd, const char *preset, const MaeConfig *given, int decoder, const MaeConfig *c,
                         Flag *flags, int nflags, const char *way, char *err, size_t errlen) {
    if (!cli_flag(flags, nflags, "--preset")->seen) return 0;
    const struct { const char *flag; int set, run; } size[] = {
        {"--dim", given->embed_dim, c->embed_dim}, {"--depth", given->depth, c->depth},
        {"--heads", given->num_heads, c->num_heads}, {"--dec-dim", given->dec_embed_dim, c->dec_embed_dim},
        {"--dec-depth", given->dec_depth, c->dec_depth}, {"--dec-heads", given->dec_num_heads, c->dec_num_heads},
    };
    if (given->mlp_ratio != c->mlp_ratio) {   // no flag sets it
        snprintf(err, errlen, "%s --resume: --preset %s sets an MLP ratio of %d, which disagrees with this run's %d (a "
                 "resume keeps the run's model): leave --preset out; %s", cmd, preset, given->mlp_ratio, c->mlp_ratio,
                 way);
        return CLI_USAGE;
    }
    char runs[256] = "";   // the run's value of each size P gets wrong: "--dim 64 --heads 4"
    size_t used = 0;
    int first = -1;
    for (int i = 0; i < (decoder ? 6 : 3); i++) {
        if (size[i].set == size[i].run || cli_flag(flags, nflags, size[i].flag)->seen) continue;
        if (first < 0) first = i;
        used += (size_t)snprintf(runs + used, sizeof runs - used, "%s%s %d", used ? " " : "", size[i].flag, size[i].run);
    }
    if (first < 0) return 0;
    snprintf(err, errlen, "%s --resume: --preset %s sets %s %d, which disagrees with this run's %d (a resume keeps the "
             "run's model): leave --preset out, or give it with the run's %s; %s", cmd, preset, size[first].flag,
             size[first].set, size[first].run, runs, way);
    return CLI_USAGE;
}

int run_resume_same_encoder(const char *cmd, const char *preset, const MaeConfig *given, int decoder, int img,
                            int patch, const char *channels, int dim, int depth, int heads, const MaeConfig *c,
                            Flag *flags, int nflags, const char *way, const char *img_way, char *err, size_t errlen) {
    // --channels auto follows the data, read later: run_resume_same_auto_channels compares it then.
    const char *chans = c->in_chans == 1 ? "1" : "3";
    const RunSameFlag same[] = {
        {"--patch", 0, 0, patch, c->patch_size, NULL, NULL},
        {"--channels", 1, 0, 0, 0, channels, strcmp(channels, "auto") ? chans : channels},
        {"--dim", 0, 0, dim, c->embed_dim, NULL, NULL},
        {"--depth", 0, 0, depth, c->depth, NULL, NULL},
        {"--heads", 0, 0, heads, c->num_heads, NULL, NULL},
    };
    const RunSameFlag size = {"--img", 0, 0, img, c->img_size, NULL, NULL};
    int rc = resume_preset(cmd, preset, given, decoder, c, flags, nflags, way, err, errlen);   // --preset first, as before
    if (!rc) rc = run_resume_same_flags(cmd, &size, 1, flags, nflags, img_way, err, errlen);
    if (!rc) rc = run_resume_same_flags(cmd, same, (int)(sizeof same / sizeof same[0]), flags, nflags, way, err, errlen);
    return rc;
}

int run_resume_same_auto_channels(const char *cmd, const char *channels, int chans, const MaeConfig *c, Flag *flags,
                                  int nflags, const char *way, char *err, size_t errlen) {
    if (strcmp(channels, "auto")) return 0;
    char given[48];
    snprintf(given, sizeof given, "auto (%d for these images)", chans);
    const RunSameFlag same = {"--channels", 1, 0, 0, 0, given, chans == c->in_chans ? given : c->in_chans == 1 ? "1" : "3"};
    return run_resume_same_flags(cmd, &same, 1, flags, nflags, way, err, errlen);
}

// The statistics of C channels as text: `mean 0.5, std 0.25`, or `mean (a, b, c), std (d, e, f)`, each
// number the shortest that reads back as its float.
static void pixel_stats_text(char *buf, size_t len, const float *mean, const float *std, int C) {
    char num[2][3][32];
    for (int i = 0; i < C; i++) {
        run_value_text(num[0][i], sizeof num[0][i], mean[i], 1);
        run_value_text(num[1][i], sizeof num[1][i], std[i], 1);
    }
    if (C == 1) snprintf(buf, len, "mean %s, std %s", num[0][0], num[1][0]);
    else snprintf(buf, len, "mean (%s, %s, %s), std (%s, %s, %s)", num[0][0], num[0][1], num[0][2], num[1][0],
                  num[1][1], num[1][2]);
}

// Whether the first C means and stds of a and b are the same floats.
static int same_pixel_stats(const MaeConfig *a, const MaeConfig *b, int C) {
    for (int i = 0; i < C; i++)
        if (a->pixel_mean[i] != b->pixel_mean[i] || a->pixel_std[i] != b->pixel_std[i]) return 0;
    return 1;
}

int run_resume_same_pixel_norm(const char *cmd, const char *mode, const MaeConfig *c, const Dataset *ds,
                               const int *idx, int n, Flag *flags, int nflags, const char *way, char *err,
                               size_t errlen) {
    if (!cli_flag(flags, nflags, "--pixel-norm")->seen) return 0;
    MaeConfig given = *c;
    int rc = pixel_norm_set(&given, mode, ds, idx, n, err, errlen);
    if (rc) return rc;
    int C = c->in_chans;
    if (same_pixel_stats(&given, c, C)) return 0;
    char given_text[192], run_text[160];
    snprintf(given_text, sizeof given_text, "%s", mode);
    if (!strcmp(mode, "dataset")) {   // measured: what these images gave
        char stats[160];
        pixel_stats_text(stats, sizeof stats, given.pixel_mean, given.pixel_std, C);
        snprintf(given_text, sizeof given_text, "dataset (%s on these images)", stats);
    }
    // The run's value by the name that gives it, when one does (its numbers otherwise).
    MaeConfig named = *c;
    run_text[0] = 0;
    for (int k = 0; k < 2 && !run_text[0]; k++) {
        const char *name = k ? "none" : "imagenet";
        if (!pixel_norm_set(&named, name, NULL, NULL, 0, err, errlen) && same_pixel_stats(&named, c, C))
            snprintf(run_text, sizeof run_text, "%s", name);
    }
    if (!run_text[0]) pixel_stats_text(run_text, sizeof run_text, c->pixel_mean, c->pixel_std, C);
    const RunSameFlag same = {"--pixel-norm", 1, 0, 0, 0, given_text, run_text};
    return run_resume_same_flags(cmd, &same, 1, flags, nflags, way, err, errlen);
}
