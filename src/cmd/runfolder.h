// Run folders are never lost (docs/data.md "Run folders"): recognising a folder that holds a run,
// and moving a run aside whole for `train --overwrite`. Also what `train` and `finetune` share about
// their run folders: snapshot files, leftovers of killed writes, --resume paths, the pixel
// normalisation chosen when a run starts, and the flags of their data pipeline.
#ifndef VITMAE_RUNFOLDER_H
#define VITMAE_RUNFOLDER_H
#include <signal.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cJSON.h>
#include "cmd/cli.h"
#include "cmd/log.h"
#include "cmd/output.h"     // OutputMade
#include "core/model.h"
#include "data/dataset.h"

// 1 when dir holds a run: checkpoint.safetensors, checkpoint-<step>.safetensors, metrics.csv,
// config.json or curves.png, or when it cannot be listed (a run's files there cannot be ruled out). 0 when it does
// not (or does not exist).
int run_folder_has_run(const char *dir);
// As run_folder_has_run for cmd's run folder: finetune's takes no config.json but vitmae's for a run's.
int run_folder_has_run_of(const char *cmd, const char *dir);
// Why --out DIR is refused when it holds a run (docs/data.md, "Run folders"), one message for train and
// finetune: "CMD --out DIR: the folder ...", saying what to do instead. why: RUN_HOLDS_RUN (a new run:
// --resume, another --out or --overwrite; a finished run without checkpoint.safetensors: its last
// snapshot itself or ln, as --resume DIR says), RUN_HOLDS_NO_CHECKPOINT (a new run; the old one stopped
// before its first checkpoint: --overwrite or another --out), RUN_HOLDS_OTHER (a resumed run given
// another run's folder: its own folder or a new one; --overwrite does not go with --resume),
// RUN_HOLDS_SAME (a resumed run given a folder holding the same run, a copy: resume it there),
// RUN_HOLDS_MEANWHILE (a run started there by another process since the first check). Returns CLI_USAGE.
// A finished fine-tuning run (its last step reached) is not offered --resume, which cannot extend it: a
// new run, as run_new_run_way says, in another --out folder or with --overwrite.
enum { RUN_HOLDS_RUN, RUN_HOLDS_NO_CHECKPOINT, RUN_HOLDS_OTHER, RUN_HOLDS_MEANWHILE, RUN_HOLDS_SAME };
int run_folder_refusal(const char *cmd, const char *dir, int why, char *err, size_t errlen);
// The flag a new fine-tuning run of the same start takes, from the init its run records: "--from-scratch"
// (init "scratch"), or "--ckpt PATH" (in buf) with the checkpoint the run started from, or "--ckpt
// CHECKPOINT" with *gone set when that file is gone.
const char *run_new_run_flag(const char *init, char *buf, size_t n, int *gone);
// finetune's way on to a new run of the same start (its --steps, a recipe flag changed, a finished run):
// "start a new run with FLAG for another" (run_new_run_flag), with "(this run started from INIT, which is
// gone)" after it when it is. Made in way.
const char *run_new_run_way(const char *init, char *way, size_t waylen);
// A fine-tuning run's checkpoint at path that is its run's last (its train_state's step is total_steps):
// that step, returned, and in way the way on (run_new_run_way of the init it records, "start a new run for
// another" without one); 0, way untouched, when it is not finished (or past it) or has no train_state.
long run_finished_way(const char *path, char *way, size_t n);
// RUN_HOLDS_SAME when dir holds the run the checkpoint file is of (the same run_id: a copy of its
// folder), else RUN_HOLDS_OTHER: the refusal of a resume into dir given with --out.
int run_folder_holds_which(const char *file, const char *dir);
// A resume in the folder dir of the file resumed (--resume FILE, no other --out) where dir holds what a
// run writes over with no record of a run (a user's curves.png, a metrics.csv of their own, train's
// samples/; no config.json, and no checkpoint.safetensors or snapshots of one run_id): CLI_USAGE with err
// (prefixed by cmd --resume arg) naming them, as --out of such a folder is refused; 0 otherwise
// (docs/interface.md, section 9).
int run_resume_user_outputs(const char *cmd, const char *arg, const char *dir, char *err, size_t errlen);
// The run folder and the folders a run reads must not hold one another (docs/interface.md, "Paths
// that meet"): a run folder inside (or equal to) the data or --val folder would feed the run's sample
// panels and curves.png back as images at the next scan (a resume, the next run); a data folder
// inside the run folder would be moved away with the run by --overwrite. flag: the flag that named the
// run folder ("--out", "--resume"; NULL: the default one). For train, also RUN/samples where it is (a link
// to) a folder: its sample sheets go there, so a link to or into the data or --val folder, or a link below
// one that leads the scan into it, fed them back as images. 0, or CLI_USAGE with "CMD FLAG: RUN ..." in
// err. val may be NULL.
int run_folder_overlaps(const char *cmd, const char *flag, const char *run_dir, const char *data, const char *val,
                        char *err, size_t errlen);
// A vitmae run's folder given as (or found inside) a folder of images (docs/data.md, "Files"): the
// folders the scan read ds's images from, the root and those below it, each looked at once for a run's
// record (train's config.json, checkpoint.safetensors, checkpoint-N.safetensors). 1 with the first such
// folder in at (its path as the scan reached it) and the record's name in what; 0 when none.
int run_data_run_folder(const Dataset *ds, char *at, size_t atlen, char *what, size_t whatlen);
// train's and finetune's refusal of it (flag: the flag that named the folder; val: 1 for the validation
// folder): CLI_USAGE with "CMD FLAG: RUN is a vitmae run folder ..." in err; 0 when none.
int run_data_refuse_run_folder(const char *cmd, const char *flag, const Dataset *ds, int val, char *err, size_t errlen);
// The commands that measure a checkpoint on a folder of images (eval, probe) go on, with one warning line
// naming it ("warning: WHAT_FLAG: RUN is a vitmae run folder ..."), kept in held (cli_hold) to be said
// with the scan's other lines.
void run_data_hold_run_folder(CliHeld *held, const char *what_flag, const Dataset *ds);
// The name a run folder dir is moved aside from, into base (n bytes): dir without its trailing slashes,
// and where its last part is "." or ".." (--out ., --out sub/..) the folder's own name, resolved
// (realpath), so that its DIR.old-N lies beside it (docs/data.md, "Run folders"). 1 when resolved.
int run_folder_aside_base(const char *dir, char *base, size_t n);
// Renames dir (run_folder_aside_base) to DIR.old-N, the first N >= 1 not taken (never replacing
// anything), so the old run stays whole. 0 ok with the new name in moved; -1 with err.
int run_folder_move_aside(const char *dir, char *moved, size_t movedlen, char *err, size_t errlen);
// --overwrite of a run folder: moves dir aside (run_folder_move_aside) and says where on stdout (and
// that the working directory went with it, when it lay inside). A dir named "." or ".." at its end is
// rewritten (dirlen bytes) to the resolved name the old run was moved from: "." would name the moved
// folder now, and the new run goes where the old one was. A file that lay in it (--init, or finetune
// --ckpt RUN/checkpoint.safetensors with --out RUN; may be NULL) is elsewhere then: its new name goes
// into file_now (nowlen bytes), which is left alone when the file lay outside dir. 0 ok; -1 with err,
// labelled "CMD --overwrite: " (cmd "train", "finetune"), as the flag that asked for the move.
int run_folder_overwrite(const char *cmd, char *dir, size_t dirlen, const char *file, char *file_now, size_t nowlen,
                         char *err, size_t errlen);
// Under mpirun every rank loads its own copy of a checkpoint (--resume, --init, finetune --ckpt): a
// stale copy on one machine would train another model, or hang the job at its end. The step and a
// hash of the n floats of each of arrays[0..na) (NULL ones left out) are compared with rank 0's
// (docs/distributed.md, "Semantics"). 0 when every rank agrees (and with one process); else 1 after
// one line naming the first differing rank.
int run_check_same_start(long step, const float *const *arrays, int na, size_t n);
// Under mpirun every rank scans its own view of the data folder: the ranks compare their file lists
// (names in scan order), then each file's size, with rank 0's (docs/distributed.md, "Semantics"). A
// folder not on a shared filesystem, a copy that lacks a file, holds another file under its name or is
// still being copied would otherwise train on other images. 0 when every rank agrees (and with one
// process); else 1 after the line of the first differing rank ("data: ...").
int run_check_same_files(const Dataset *ds);
// The folders a resumed run reads, checked before it starts (docs/data.md, "Run folders"): a --val
// folder given to a run that held out a fraction of its data (its held-out images would go back to
// training: another run), and a recorded data or validation folder that is gone when no new place is
// given. data and val are the run's recorded folders ("" val: a held-out split); given_data and
// given_val the flags (NULL when not given). 0, or CLI_USAGE with the whole message in err
// ("COMMAND --resume CKPT: ...").
int run_resume_check_folders(const char *command, const char *ckpt, const char *data, const char *val, double val_frac,
                             const char *given_data, const char *given_val, char *err, size_t errlen);
// A run folder serves one process at a time (docs/data.md, "Run folders"): rank 0 of train or finetune
// holds an advisory lock (flock) on the folder itself from before it checks the folder until the
// process ends, so a second run given the same folder (to start, resume or --overwrite it) is refused
// rather than writing into the first one's files or moving them away. Locks dir when it exists (0 when
// it does not: the run calls again once it has made it); a folder this process holds already stays
// held, and taking another releases the first (the old run moved aside by --overwrite). 0 ok (also
// where the filesystem has no locks); 1 with the reason in err ("DIR: in use by ...") when another
// process holds it.
int run_folder_lock(const char *dir, char *err, size_t errlen);
// 1 when another process holds dir's run lock (run_folder_lock): a run is training in it, and its
// checkpoint, config.json and metrics.csv are written one after another as it goes, so a reader that
// compares them can meet one written and the next not yet. 0 otherwise (no lock, no folder). It takes
// a shared lock for the moment it looks, which run_folder_lock waits out.
int run_folder_busy(const char *dir);
// A new run's folder when --out is not given (docs/interface.md, section 5): runs/<prefix><stamp>
// with the local time's YYYYmmdd-HHMMSS, or, when that path exists, the first of <name>-2, -3, ...
// that does not, written into dir. Two runs that started in the same second can still pick one name:
// the one that then finds it locked or holding a run takes the next with run_folder_default_next.
void run_folder_default(const char *prefix, char *dir, size_t n);
// The next free name of the series run_folder_default started, into dir; 0, or -1 past 999 (or
// with no series).
int run_folder_default_next(char *dir, size_t n);
// The files a scan skipped, as cli_hold_skipped words them (cmd/cli.h), said now (rank 0). train and
// finetune print them once the flags have passed every check (the run folder's included), or with the
// failure they explain (no image left): a usage error stays one line, not the last of a list.
void run_report_skipped(const Dataset *ds);
// The files of a lazy dataset found broken past their headers and not reported yet, as
// run_report_skipped lists them (rank 0; the first 20, then a count): said before a failure they
// explain, e.g. no image decoding for the pixel statistics.
void run_report_broken(const Dataset *ds);
// An evaluation found each of its n validation images broken past its header (every one reported by
// then, each with its reason): the run goes on without validation. Said once a run (*said set), so
// that empty validation columns (cols: their names in metrics.csv) and a missing curve are explained.
void run_report_no_validation(int *said, int n, const char *cols);
// The folder an evaluation reads (the --val folder, or --data's for a held-out split) gone during the
// run: -1 with err "DIR: the validation folder (--val) is gone (moved or deleted during the run)" (or
// "the data folder"), and the images it marked broken meanwhile forgotten, not said: the run stops on
// that one line, as for the data folder (its files said "skipped DIR: the folder is gone ...; its images
// are left out from now on" first, which the stop then contradicted). 0 while it is there.
int run_val_folder_gone(const Dataset *vds, char *err, size_t errlen);
// What the --val folder's messages call it (Dataset.root_role).
#define RUN_VAL_ROLE "validation folder (--val)"
// The line that ends train's and finetune's runs on stdout (docs/data.md): where the working images of ds
// came from (decoded, the store, the cache) and how long the steps_run steps of this session waited for
// them, total_wait seconds in all. Under mpirun collective (every rank calls it): the processes' counts
// summed and the longest wait, said by rank 0.
void run_report_working_images(const Dataset *ds, long steps_run, double total_wait);
// The job's working images (collective under mpirun, every rank calls it at the same point): st's
// counts become every process's summed (one process: as they are). It allocates nothing: under
// mpirun a buffer per rank could run out on one rank alone (docs/distributed.md, "Faults").
void run_job_data_stats(DataStats *st);
// The warning of a held-out split too small to trust (docs/data.md, "Validation"), train's and
// finetune's: nval images (1 to 7) held out by --val-frac val_frac of n; what: the measure that will be
// noisy ("the validation loss"). The advice of a larger --val-frac is left out at the flag's largest,
// VAL_FRAC_MAX. A --val-frac above 0 that held nothing out (a folder of one image) is warned about too.
// Said by the caller's rank 0.
// offer_larger 0 leaves out the advice of a larger --val-frac (finetune, whose split already held out a
// class's every image: a larger one would hold out more); so does a split that holds out all but one
// image (one always trains: of 2 images no fraction holds out 2).
// resuming: the advice is for a new run (a resume takes neither --val nor another --val-frac).
void run_warn_few_val(int nval, float val_frac, int n, const char *what, int offer_larger, int resuming);
// The warning of a batch larger than the training set (docs/interface.md, section 3): a step then
// holds each of the ntrain images batch / ntrain times on average (the epochs' orders one after another;
// the copies differ only by what augmentation and masking draw), where PyTorch's DataLoader with drop_last (MAE's, DINO's) makes no
// step at all. batch: the step's images over all processes. train's and finetune's; said by the
// caller's rank 0.
void run_warn_batch_repeats(int batch, int ntrain);
// The warning of a warm-up that lasts the whole run (--warmup-steps at or past --steps): the rate rises
// at every step and never reaches the lr the start line shows, or, in a 1-step run, the one step runs at
// rate 0 (docs/interface.md, section 3). train's and finetune's; said by the caller's rank 0.
void run_warn_long_warmup(long warmup, long total_steps, double lr, int resuming);
// The warning of images less than half the view on their shorter side (docs/data.md, "Working images"):
// every view of one is enlarged more than twice to img x img, so it trains on blurred pixels. One line for them all, the
// count and the smallest named; none when every image is large enough. dir: the folder as the user
// gave it. Said by the caller's rank 0.
void run_warn_small(const Dataset *ds, const char *dir, int img);
// The warning of a rank that multiplies matrices on another path or with other k-blocks than rank 0
// (docs/distributed.md, "Semantics"), said by rank 0, naming both; nothing in one process. Collective:
// every rank calls it, where train, finetune and bench are sure to start (after their usage errors and
// every refusal, so that a refusal stays one line).
void run_warn_other_gemm(void);
// The threads of train's and finetune's start-up header, in buf: "4 threads", or under mpirun, where
// --threads is each process's, "2 processes x 1 thread" (docs/distributed.md); more threads than the
// CPUs a process may use (kernels/cpu.h, cpu_usable_cpus) add " (more than the 2 CPUs it may use: slower
// steps, the same results)".
void run_threads_text(char *buf, size_t n, int threads);
// The header's augmentation: "crop", "flip" or "none", and what differs from MAE's pretraining crop
// and its bilinear filter: " (area LO to 1, bicubic)" (crop_scale as typed, crop only; interp
// "bilinear" | "bicubic": finetune's flip and none train on evaluation views made with it).
void run_augment_text(char *buf, size_t n, const char *augment, float crop_scale, const char *interp);
// The log line when steps wait for images more than a fifth of the time (docs/data.md, "Cache, store and
// prefetch"), train's and finetune's alike: "data pipeline is the bottleneck: steps waited N% of the time
// ...", at most once a minute. It is judged on at least 8 steps after a session's first (which waits for
// the loader to start): a one-step run was told "the data pipeline is the bottleneck ... (0 ms per
// step)". run_wait_note_step adds a step's wait and its whole time (seconds); run_wait_note, at a log
// line, says the line when the evidence gathered since the last judgement (at least 8 steps) is enough,
// then starts it again. Under mpirun a step waits for the slowest process, so the job's evidence is the
// process's that waited the largest share of its time, and the working images are every process's
// together; run_wait_note is collective then (every rank holds the same step count at a log line).
typedef struct {
    double waited, busy;   // seconds, over the steps below
    int steps;             // -1 until the session's first step is done (it is not evidence)
    double last;           // now_seconds() of the last line said
    int store_said;        // the line of a store whose disk reached --store-min-free, said once a session
} RunWaitNote;
void run_wait_note_init(RunWaitNote *n);
void run_wait_note_step(RunWaitNote *n, double waited, double busy);
void run_wait_note(RunWaitNote *n, const Dataset *ds, Progress *prog);
// At a log line, once a session: the line that the store's disk reached --store-min-free (min_free_mb)
// and working images are no longer written there (data/dataset.h's DataStats.store_left), "the disk of
// the store DIR has less than --store-min-free N MB free: ..." on stdout (docs/data.md). Collective
// under mpirun (the job's count; rank 0 says it), as run_wait_note.
void run_store_left_note(RunWaitNote *n, const Dataset *ds, long min_free_mb);
// One file of a lazy dataset found broken past its header during a run (dataset_take_broken's path and
// reason), said as train and finetune say it: "skipped PATH: REASON (found while validating; ...)" or
// "(found while training; ...)" as held says, or, for a file whose folder is gone, the folder once
// (gone_dirs, of n bytes: the folders said so far, cmd/output.h's output_gone_folder). rank >= 0: the
// rank that found it so, said in the line ("(on rank R, found while ...)"); -1: none named.
void run_report_broken_file(const char *path, const char *reason, int held, int rank, char *gone_dirs, size_t n);
// What held says of a file found broken (run_report_broken_file, run_broken_note): a training image that
// another of its batch replaces, a validation image of the training folder (held out by --val-frac) left
// out, a training image found as the run stops (its batch had none to replace it: no replacement is
// claimed), one of a run whose batch is one image (stopping or not), an image of the --val folder left
// out. A class folder gone differs between the two held out: --data's is left out of training too.
enum { BROKEN_TRAINING = 0, BROKEN_HELD = 1, BROKEN_STOPPING = 2, BROKEN_BATCH_OF_ONE = 3, BROKEN_VAL_FOLDER = 4 };
// The held of a file found broken: its split, whether the run stops, the batch.
int run_broken_held(int held_out, int stopping, int batch);
// The training set's files found broken during a run, said once for the job (docs/distributed.md,
// "Semantics"). Under mpirun every rank that meets a broken file finds it (a rank decodes the
// replacements of its share, which may lie in another's), so a rank other than 0 keeps its finds;
// the step's status exchange tells every rank that some rank holds any (GradReduce.notes_here and
// notes_any), and run_broken_share then sends them to rank 0, which says each file once: the first
// find plainly, a later one with another reason (a copy that differs on another machine) with the
// rank that found it. One process says each find at once (dataset_take_broken gives each once).
typedef struct {
    char **said;      // rank 0 under mpirun: [nitems] the reason said for item i, NULL when none yet
    int nitems;
    char *kept;       // another rank: its finds not sent yet, as records (runfolder.c)
    size_t len, cap;
} BrokenNotes;
// Item `item` of the training set (nitems items) found broken (path, reason; held: a held-out image):
// said now (one process, or rank 0 unless the same reason was said before) or kept for rank 0.
// Returns 1 when it was said now (the caller's own follow-up runs then: finetune's class check).
int  run_broken_note(BrokenNotes *bn, int nitems, int item, const char *path, const char *reason, int held,
                     char *gone_dirs, size_t n);
// 1 when this rank keeps finds that rank 0 has not said (for GradReduce.notes_here).
int  run_broken_kept(const BrokenNotes *bn);
// Collective under mpirun, on every rank after a step whose exchange set GradReduce.notes_any (a failed
// step's too): the kept finds go to rank 0, which says them as run_broken_note does, calling said(ctx,
// item) for each said (said may be NULL). 0, or on every rank together DIST_NO_MEMORY_HERE (rank 0,
// which gathers them, err says so: the caller says it and exits 1) or DIST_NO_MEMORY_ELSEWHERE (dist.h).
int  run_broken_share(BrokenNotes *bn, int nitems, char *gone_dirs, size_t n, void (*said)(void *ctx, int item),
                      void *ctx, char *err, size_t errlen);
void run_broken_free(BrokenNotes *bn);
// A resumed run whose gradient groups this job's process count or --accum cannot share
// (dist_check_groups's DIST_BAD_PROCS or DIST_BAD_ACCUM, `bad`): the groups are the run's, fixed when
// it started, so the line names the process counts (or micro-batch counts) that resume it instead of
// --groups. Into err (errlen bytes); procs, accum: this job's.
// A resumed run that validates on a --val folder (val, the run's), given --val-frac: refused with
// CLI_USAGE and err `CMD --resume: --val-frac: this run validates on its --val folder (VAL), holding
// nothing out of --data; leave --val-frac out` (its generic line said the flag "decides the weights",
// which it does not there). 0 otherwise.
int run_resume_val_frac(const char *cmd, const char *val, Flag *flags, int nflags, char *err, size_t errlen);
void run_resume_groups_refusal(char *err, size_t errlen, int bad, int procs, int accum, int groups);

// A flag that decides the weights, given on resume (docs/data.md "Run folders"): accepted when its
// value is the run's own (the same command line with --resume added), refused otherwise. Numbers are
// compared as parsed and as the run stores them (a float flag as float: 1e-4 is 0.0001); text as text.
// run_text NULL: no value of the flag can be told equal to the run's (refused, as deciding the weights).
typedef struct {
    const char *flag;
    int is_text, is_float;
    double given, run;
    const char *given_text, *run_text;
} RunSameFlag;
// The first flag of same[0 .. n - 1] given (seen in flags) with a value other than the run's: 0 when
// none, else CLI_USAGE with err `CMD --resume: FLAG GIVEN cannot change when a run resumes (this run's
// is RUN; WAY)`.
// The shortest text that reads back as v (as a float when is_float): 0.0001 for 1e-4f, not
// 9.99999975e-05; 250 for a step count, not 2.5e+02.
void run_value_text(char *buf, size_t len, double v, int is_float);
// A new run's --min-lr against its peak learning rate lr (--lr, or --blr * batch / 256: lr_given says
// which): the half-cosine goes from lr down to *min_lr, and one above lr rose to it instead (MAE's
// schedule does; docs/interface.md, section 3, says "down"). Given (min_lr_given), one above lr is
// CLI_USAGE with err "CMD --min-lr: ..."; the default above a smaller lr (--lr 0 or below 1e-6) becomes
// lr, a flat schedule. 0 otherwise.
int run_min_lr_check(const char *cmd, float lr, int lr_given, float blr, int batch, float *min_lr, int min_lr_given,
                     char *err, size_t errlen);
// A new run given both --lr and --blr: --blr only gives the rate when --lr is not given (MAE's
// main_pretrain.py the same), so the pair ran at --lr with --blr dropped unsaid and kept as if it
// counted. CLI_USAGE with err "CMD --blr: B: ... (leave one out)" when both are given, else 0.
int run_lr_blr_check(const char *cmd, Flag *flags, int nflags, char *err, size_t errlen);
int run_resume_same_flags(const char *cmd, const RunSameFlag *same, int n, Flag *flags, int nflags, const char *way,
                          char *err, size_t errlen);
// --lr or --blr (is_blr) given on resume: 1 when it is the run's rate lr at the run's batch
// (docs/interface.md, section 5: `--blr B` is the run's when `B * batch / 256` is its `--lr`), 0 when
// not. The two forms are one: a value is the run's when the rate a new run given it stores
// (lr_from_blr(B, batch) for --blr B, L for --lr L) is lr or the float beside it. At a batch that is not
// a power of two the forms of one rate store floats one apart: --blr 0.003 at batch 10 stores
// 0.000117187505 (0.003 as a float is 0.00300000003, and the product is rounded), --lr 1.171875e-4, the
// same rate written out, 0.000117187497; and --lr 1e-4 at batch 12 stores 9.99999975e-05 where every
// --blr 0.0021333... stores 0.000100000005. Two floats apart is another rate. Only the comparison: the
// run trains on lr.
int run_lr_is_runs(float given, int is_blr, int batch, float lr);
// The encoder the model flags describe, built alike by train and finetune (a new run's model, and the
// one a resume compares with the run's): --preset's config, then --img, --patch, --pos (learned|fixed)
// and --channels (1 or 3; auto_chans for auto), and each of --dim, --depth, --heads given (0: not given)
// over the preset's size. The decoder and the rest are the preset's.
void run_model_from_flags(MaeConfig *c, const char *preset, int img, int patch, int dim, int depth, int heads,
                          const char *pos, const char *channels, int auto_chans);
// train's decoder flags over c's sizes: --dec-dim and --dec-heads when given (not 0), --dec-depth when
// seen (0 is a depth: a decoder of no blocks).
void run_decoder_from_flags(MaeConfig *c, int dec_dim, int dec_depth_seen, int dec_depth, int dec_heads);
// The encoder's shape flags, shared by train and finetune: --preset (its text; given: the model the
// preset and the shape flags given over it build, run_model_from_flags, with train's decoder flags too:
// decoder 1 compares its decoder's sizes), --img, --patch, --channels 1|3 (its text; auto follows the
// data: run_resume_same_auto_channels, once they are scanned), --dim, --depth, --heads against the run's
// config c. As run_resume_same_flags, with img_way the way on for --img (a fine-tuning run may take
// another size than its checkpoint's, so its way is not the model's). --preset is the run's when every
// size it sets under the shape flags given is (docs/interface.md, section 5); else `CMD --resume: --preset
// P sets --dim 384, which disagrees with this run's 64 (a resume keeps the run's model): leave --preset
// out, or give it with the run's --dim 64 --depth 2 --heads 4; WAY`, the sizes whose flag is not given.
int run_resume_same_encoder(const char *cmd, const char *preset, const MaeConfig *given, int decoder, int img,
                            int patch, const char *channels, int dim, int depth, int heads, const MaeConfig *c,
                            Flag *flags, int nflags, const char *way, const char *img_way, char *err, size_t errlen);
// --channels auto given on resume: chans, what auto makes of the images scanned (1 when every one is
// grey, else 3), against the run's c->in_chans. As run_resume_same_flags: `--channels auto (3 for
// these images) cannot change ... (this run's is 1)`; 0 for --channels 1|3 (run_resume_same_encoder's).
int run_resume_same_auto_channels(const char *cmd, const char *channels, int chans, const MaeConfig *c, Flag *flags,
                                  int nflags, const char *way, char *err, size_t errlen);
// --pixel-norm MODE given on resume: the statistics MODE gives the run's model c (pixel_norm_set;
// "dataset" measures them on the items idx[0..n) of ds, as the run did when it started) against the
// run's, to the bit as the checkpoint stores them (values, not names: a run's "dataset" on other images
// is another value). 0 when the same or not given; pixel_norm_set's failure (-1 or DATASET_ERR_FILE,
// err its reason); else CLI_USAGE with err as run_resume_same_flags's, the run's value named
// `imagenet` or `none` when it is theirs, else its numbers (`mean 0.5, std 0.25`).
int run_resume_same_pixel_norm(const char *cmd, const char *mode, const MaeConfig *c, const Dataset *ds,
                               const int *idx, int n, Flag *flags, int nflags, const char *way, char *err,
                               size_t errlen);
// Writes path made absolute (realpath) into dst, or as given when it does not resolve: a run records
// its data folders so, and a resume from another directory finds them again (docs/data.md, "Run
// folders").
void run_abs_path(char *dst, size_t n, const char *path);

// 0 when the names a run writes in dir (the longest: a snapshot's temporary name,
// ".checkpoint-<step>.safetensors.tmp-XXXXXX", and samples/step-<step>.png's) fit the system's
// 4096-byte paths; else -1 with err. Checked before a run writes anything.
int run_folder_names_fit(const char *dir, char *err, size_t errlen);
// Removes ".checkpoint*.safetensors.tmp-*", this host's ".checkpoint.link.<host>.<pid>.XXXXXX" whose
// process is gone, and the temporary names of
// config.json, metrics.csv, curves.png and samples/step-N.png ("NAME.tmp.<pid>[.<serial>]") left
// by killed writes.
void run_remove_stale_temp_files(const char *dir);
// 1 when dir/samples holds a sample sheet (samples/step-<step>.png), which a new run writes over, or
// cannot be listed; 0 when it is missing, empty, or holds only other files (a user's notes).
int run_folder_has_sheets(const char *dir);
// A resume in the run's own folder trains the steps past step again, on its schedule (--steps may have
// changed it): the sample sheets dir/samples/step-<n>.png with n past step, of the stretch it goes back
// over, would stay beside them and contradict the run (docs/data.md, "Run folders"), as metrics.csv's
// rows past step would (dropped alike). Removes those that are regular files under the exact name
// vitmae writes (a user's file named otherwise, a folder or a link stays). 1 with note (the start-up
// line that says so) when any was removed, 0 when none (note ""), -1 with err when samples/ cannot be
// listed or a sheet cannot be removed.
int run_remove_sheets_past(const char *dir, long step, char *note, size_t n, char *err, size_t errlen);
// 1 when dir/samples/step-<step>.png, the sheet of step, is not there (no file or link of the name), 0
// when it is or cannot be looked at: a resume draws the sheet its checkpoint's step lacks (cmd/runloop.h).
int run_sheet_missing(const char *dir, long step);
// The checkpoints in dir past step (numbered snapshots of the run, and checkpoint.safetensors) whose
// train_state's total_steps is not total (every one where total < 0: a resume on other training images,
// whose later steps are not those of any schedule's): how many, whether checkpoint.safetensors is one,
// and the earliest's name, step and total.
typedef struct RunLater {
    long step, total;
    int count, latest;
    int mixed;   // the totals of all the run's checkpoints past step (theirs and any of total) are not one
    char name[256];
} RunLater;
// The earliest such checkpoint's step, with *later filled; -1 when none; -2 with errno when dir cannot
// be listed (a later snapshot may be there: the caller says so, not a guess). A resume from step on
// another schedule than theirs (other --steps, or none where the run was extended since), or on other
// training images than the snapshot's, would leave them among its files (docs/interface.md, section 9).
// A file whose state cannot be read is passed over (a resume of it says why).
long run_folder_later_schedule(const char *dir, long step, long total, RunLater *later);
// A resume of the run dir holds, from step to total with snapshots kept (keep > 0): CLI_USAGE with err
// (prefixed by cmd --resume arg) when dir holds a checkpoint-<s>.safetensors, step < s <= total, that
// is not the run's own (another run's copy, or a file without a run_id): the run saves its snapshot at
// s on its cadence, at its last step, or when stopped there, and would write over that file; 1 with err
// when dir cannot be listed; 0 otherwise (docs/interface.md, section 9).
int run_other_ahead_refusal(const char *cmd, const char *arg, const char *dir, long step, long total, int keep,
                            char *err, size_t errlen);
// A resume from an earlier snapshot drops dir/metrics.csv's rows past it as it starts; stopped before
// it got back to the latest checkpoint (a kill, a double Ctrl-C), the file ends before that checkpoint's
// step while the rows between are the checkpoint's history. For the latest checkpoint whose train_state
// JSON is given (its step into *step; its own --log-every and --eval-every, the cadences its rows were
// written with): when a row was due after the last one (*last) before step, the step of the run's own
// snapshot to resume again to write them (the newest at or before *last: one past it would leave the
// rows up to it out); -2 when rows are missing and no snapshot can give them back; -1 when no row is
// missing or the state cannot be read (docs/interface.md, section 9). The row of step itself alone missing is no gap: a run whose
// output failed at a step saves that step's checkpoint without its row, and a row cut by a kill is
// dropped (the resume writes it first, from the losses the checkpoint carries: cmd/runloop.h); but at a finished run's last step (total_steps) it is, its plain resume writing no row.
long run_metrics_gap_of(const char *dir, const char *train_state, long *step, long *last);
// --resume of path, dir's latest checkpoint, when run_metrics_gap_of finds rows missing: CLI_USAGE
// with err (prefixed by cmd --resume arg) naming the snapshot to resume instead; 0 otherwise (a
// snapshot resumed is that very recovery), after one warning when rows are missing that no snapshot
// can give back and the resume trains (trains: a finished run's plain resume writes no row).
int metrics_gap_refusal(const char *cmd, const char *arg, const char *path, const char *dir, int trains, char *err,
                        size_t errlen);
// What a resume of dir's snapshot at snap, advised for rows missing before a later checkpoint of the
// run whose train_state is given, takes to be let go on: " --steps N" (N that checkpoint's
// total_steps) for train where the snapshot's own total is another (the run extended since: on the
// snapshot's schedule the resume is refused, the later checkpoints on another, run_folder_later_schedule),
// "" otherwise, and for finetune, whose resume keeps the run's --steps (docs/interface.md, section 9).
const char *run_snapshot_steps(const char *cmd, const char *dir, long snap, const char *train_state, char *buf,
                               size_t n);
// 1 when dir holds checkpoint.safetensors or a checkpoint-<step>.safetensors snapshot of its run (any,
// where its snapshots are of more than one run and none is recorded as its own), 0 when not (a file of
// a snapshot's name that is not the run's, as --resume DIR takes them, is none: a user's notes, a
// converted checkpoint, another run's copy), -1 with errno when it has no checkpoint.safetensors and
// cannot be listed.
int run_folder_has_checkpoint(const char *dir);
// --resume of an existing folder without checkpoint.safetensors: CLI_USAGE (2) with err (prefixed by
// cmd) saying what to do: resume its newest snapshot, or (a run killed before its first checkpoint)
// start again with --overwrite; 1 with err when the folder cannot be listed ("cannot list the folder:
// <why>", not a guess); 0 otherwise (a file, a missing path or a folder with a checkpoint: loaded as usual).
int run_resume_missing(const char *cmd, const char *arg, char *err, size_t errlen);
// Keeps the newest `keep` RUN/checkpoint-<step>.safetensors files of the run at step, the one just
// saved: a snapshot past step, or another run's (its run_id not the folder's), is neither removed nor
// counted.
void prune_snapshots(const char *dir, int keep, long step);
// Makes `latest` a hard link to the snapshot file, swapped in atomically (link to a temporary name,
// rename, fsync of dir). 0 ok; -1 when links are not possible there (the caller writes latest itself);
// 1 when latest is in place but dir's sync failed, err saying so (io/files.h's file_sync_folder_of).
int  publish_latest(const char *snapshot, const char *latest, const char *dir, char *err, size_t errlen);
// --resume RUN_OR_FILE: a folder means its checkpoint.safetensors; dir gets the run folder.
void run_resume_path(const char *arg, char *path, size_t n, char *dir, size_t dn);
// The most steps a run counts: --steps' range, and train_state's step, total_steps and cadences'.
#define RUN_STEPS_MAX 1e12
// The default --eval-every of a run of total steps (and so its --ckpt-every and --sample-every): a
// tenth of the run rounded up, so that it evaluates at most ten times past step 0, and at its last
// step (docs/interface.md, section 5). Runs from before this rule took a tenth rounded down, at least 1
// (12 steps: every step); run_every_was_default knows both, for a run extended on resume.
static inline long run_default_every(long total) { return total > 0 ? (total + 9) / 10 : 1; }
static inline int run_every_was_default(long every, long total) {
    return every == run_default_every(total) || every == (total >= 10 ? total / 10 : 1);
}
// --epochs E over ntrain images at batch B: ceil(E ntrain / B) steps (at least 1; a quotient within
// 1e-9 of a whole number, as 0.28 x 25 / 7 in doubles, is that number) into *steps. 0, or
// CLI_USAGE with "CMD --epochs: ..." in err when they pass RUN_STEPS_MAX: a run that its own checkpoint's
// reader would refuse (docs/interface.md, section 4) is refused before it starts.
int run_epoch_steps(const char *cmd, double epochs, long ntrain, int batch, long *steps, char *err, size_t errlen);
// The numbers and texts of a train_state JSON as one table (train's, cmd/train_state.c; finetune's,
// cmd/finetune.c), for writing and reading: each field's key, its C type, its place in the state struct
// and the range a reader accepts, its flag's range (counts whole numbers). train_state is not under
// the checkpoint's crc32 (docs/interface.md, section 4), so a checkpoint edited by hand is refused with
// one line instead of reaching an int conversion out of range, a zero cadence or a huge allocation.
typedef enum { STATE_LONG, STATE_INT, STATE_FLOAT, STATE_DOUBLE, STATE_TEXT } StateKind;
typedef struct {
    const char *key;
    StateKind kind;
    size_t offset;    // offsetof the state struct's member: long, int, float, double or char[]
    double lo, hi;    // the numbers' range
} StateField;
// Why train's and finetune's --resume refuse a checkpoint that holds train_state but whose AdamW moments
// were stripped (to share the weights): every other command reads it (docs/interface.md, section 4).
#define RESUME_NO_MOMENTS "cannot resume: its AdamW moments (optimizer.exp_avg.*, optimizer.exp_avg_sq.*) " \
    "were removed, and a run continues only with them (the weights load for every other use)"
// Why train --resume refuses an MAE checkpoint that holds train_state but none of its decoder's tensors
// (an encoder-only file, stripped to share the encoder): the pretraining loss needs the decoder. Without
// "cannot resume: ", as info's resume_refused gives it too; _MOMENTS where the moments went as well
// (docs/interface.md, section 4).
#define RESUME_NO_DECODER "the file holds no decoder (decoder_*, mask_token), and a pretraining run continues " \
    "only with it (an encoder-only file loads for attention, embed, probe and finetune --ckpt)"
#define RESUME_NO_DECODER_MOMENTS "the file holds no decoder (decoder_*, mask_token) and no AdamW moments " \
    "(optimizer.exp_avg.*, optimizer.exp_avg_sq.*), and a pretraining run continues only with both (an " \
    "encoder-only file loads for attention, embed, probe and finetune --ckpt)"
// The largest --val-frac, train's and finetune's (docs/interface.md); the few-validation-images warning
// offers a larger one below it (run_warn_few_val).
#define VAL_FRAC_MAX 0.9
// The defaults of the run folder's flags, train's and finetune's: their values and their --help texts
// (MAE_STR, core/config.h) come from here, so neither command can drift from the other.
#define DEFAULT_VAL_FRAC 0.05
#define DEFAULT_VAL_MAX 1000
#define DEFAULT_LOG_EVERY 10
#define DEFAULT_KEEP 2
// The most checkpoint-<step> snapshots --keep may ask for (its flag's range and train_state's).
#define KEEP_MAX 100000
// The range of --val-max, train's and finetune's (docs/interface.md); older runs wrote up to 1000000.
#define VAL_MAX_LIMIT 10000000
// The largest learning rate a run holds: --lr takes up to 10, but without it the rate is --blr (up to
// 10) x --batch (up to 4096) / 256.
#define STATE_LR_MAX (10.0 * 4096 / 256)
// Adds fields[0..n) of state to o in table order: floats as the floats they are (config_float_json),
// texts as strings.
void run_state_fields_to_json(cJSON *o, const StateField *fields, int n, const void *state);
// A checkpoint's train_state text parsed: the object, or NULL with err "train_state is not valid JSON
// (at byte N)" (a NaN or a 1e400 that an edit left there is not JSON), "train_state: JSON nested deeper
// than 1000 levels (...)" (core/json_depth.h), "train_state is not a JSON object" (valid JSON of another
// kind), or "out of memory" when cJSON's memory ran out as it read the
// text (io/json.h's json_parse_n tells the two apart). The caller frees it (cJSON_Delete).
cJSON *run_state_parse(const char *json, char *err, size_t errlen);
// Sets state's numbers among fields[0..n) from o; texts are the caller's to read. 0, or -1 with
// "train_state: '<key>' missing or out of range" in err. A float field is checked as the float it
// becomes (older versions wrote 0.99f as 0.9900000095367432).
int  run_state_fields_from_json(const cJSON *o, const StateField *fields, int n, void *state, char *err, size_t errlen);
// What train's and finetune's train_state share (docs/interface.md, section 4): run_id (written when
// set; "" when absent, in older runs), and log_loss_sum and log_steps, the losses of the steps since
// the last metrics row (written together when there are any; 0, 0 when both are absent), and max_pixels, the
// run's --max-pixels (written when set; 0, the default, when absent, in older runs). 0, or -1 with err
// "train_state: '<key>' missing or out of range" for a run_id that is not a string, a max_pixels out of
// the flag's range (an edit: it was dropped, the run going on with the default, which decides which
// images are usable), a log_steps from 1 to step or a log_loss_sum finite and >= 0 missing where the other is
// there ("'log_steps' out of range: N is past 'step' S" for more steps than the run has made: the next
// row divided the sum by them).
void run_state_shared_to_json(cJSON *state, const char *run_id, double sum, long steps, long max_pixels);
int  run_state_shared_from_json(const cJSON *state, long step, char *run_id, size_t idlen, double *sum, long *steps,
                                long *max_pixels, char *err, size_t errlen);
// train_state's "images", the run's run_data_signature (below), into sig (n bytes): "" when absent (older
// runs); 0, or -1 with "train_state: 'images' missing or out of range" for a value that is no signature.
int  run_state_images_from_json(const cJSON *state, char *sig, size_t n, char *err, size_t errlen);
// A train_state's gradient groups (train's 'grad_groups', finetune's 'groups': key) against its batch, as
// a new run's --groups is checked (dist_check_groups): 0, or -1 with "train_state: '<key>' out of range: G
// is not a power of two that divides 'batch' B" (it read as --groups' refusal, naming no file's field).
int  run_state_groups_check(const char *key, int batch, int groups, char *err, size_t errlen);
// The held-out split's pinned images (data/dataset.h, dataset_split_pinned) in train_state as
// "split_held_out" and "split_trains", each written when set; absent (older runs, a --val folder, a split
// the rule alone decided): "". A value that is not a string is refused: 0, or -1 with "train_state:
// '<key>' missing or out of range" in err (dropped as absent, the split chose again).
void run_split_pin_to_json(cJSON *state, const DatasetSplitPin *pin);
int  run_split_pin_from_json(const cJSON *state, DatasetSplitPin *pin, char *err, size_t errlen);
// A metrics row's epoch (its `epoch` column): the passes over the training images, counted stretch by
// stretch: from step from_step on, each step adds batch / images to the `from` passes done before it.
// A resume on another count of training images (files added or removed) starts a new stretch at its
// step, so that the column never runs backwards nor jumps, and each stretch counts passes over the
// images it trained on; a run on the same count keeps its stretch, and one that never changed
// (0, 0) reads step x batch / images, bitwise as before stretches. In train_state (docs/interface.md,
// section 4): "epoch_images" (0 when absent, in older runs: the current count), "epoch_from" and
// "epoch_from_step" (written once a stretch starts past step 0), and "epoch", the row's value at the
// checkpoint's step (a record, not read back).
typedef struct {
    double from;      // the passes done before from_step
    long from_step;
    long images;      // the training images of the stretch; 0: not recorded
} RunEpochs;
double run_epoch_at(const RunEpochs *e, long step, int batch);
// A resume at step on ntrain training images: a new stretch where the count differs from the one recorded.
void   run_epochs_resume(RunEpochs *e, long step, int batch, long ntrain);
void   run_epochs_to_json(cJSON *state, const RunEpochs *e, long step, int batch);
// 0, or -1 with "train_state: '<key>' missing or out of range" in err (an edit: a stretch past step).
int    run_epochs_from_json(const cJSON *state, long step, RunEpochs *e, char *err, size_t errlen);
// --epochs E of a resume: the step at which the run's epoch column reaches E (docs/interface.md,
// section 9), e the run's stretches as resumed (run_epochs_resume on these ntrain images): its last
// stretch's start plus ceil((E - its epoch) ntrain / B). One stretch is run_epoch_steps' count, as the
// run's start computed it; an E the last stretch began past gives that stretch's start.
int    run_epoch_total(const char *cmd, double epochs, const RunEpochs *e, long ntrain, int batch, long *steps,
                       char *err, size_t errlen);
// The line that stops train or finetune at a loss that is not finite: "loss is NaN at step S (lr X);
// stopped; the last good checkpoint is PATH" when ckpt_path (the run folder's latest) is there, else
// that the run stopped before writing one (a new run whose first step's loss was NaN named a file that
// did not exist).
void run_nonfinite_loss_message(char *msg, size_t n, double loss, long step, double lr, const char *ckpt_path);
// After a step's outputs failed (its validation, metrics row or pictures) and its checkpoint was saved
// at ckpt_path all the same: the line that says so on stderr, "saved PATH at step S of N (continue with
// --resume DIR)", or "saved PATH at step N, the run's last" (docs/data.md, "Run folders"). data and val
// (NULL or "": none) are the run's folders as it records them: one gone now (the failure may be its)
// is asked for, as the resume will ask, "--resume DIR --val DIR2, DIR2 where the validation folder is now".
void run_saved_after_failure(const char *ckpt_path, const char *run_dir, long step, long total_steps, const char *data,
                             const char *val);
// 1 when the run folder run_dir is gone (moved or deleted during the run): stat says ENOENT or ENOTDIR,
// or it is no folder now, or (home not NULL: the folder as the run found it) another folder has its
// name; err then replaced by "RUN: the run folder is gone (moved or deleted during the run)", with
// resume_note (where a checkpoint was saved) "; if it was moved, --resume goes on from its last
// checkpoint where it went" (docs/data.md, "Run folders"). 0, err untouched, otherwise.
int run_folder_gone(const char *run_dir, const struct stat *home, int resume_note, char *err, size_t errlen);
// Test hook of train and finetune, kept out of the step loop: VITMAE_FAULT_NAN_STEP=N turns the loss of
// step N (1-based) into a NaN, VITMAE_FAULT_INF_STEP=N into +infinity, so the tests can check the stop
// at a loss that is not finite without a diverging run (docs/testing.md, "Fault injection").
float run_test_hook_loss(long step1, float loss);
// The words that name the run folder's last good checkpoint in a stop's line (run_nonfinite_loss_message,
// run_diverged_note): a line that holds them says what is left, and the step loop adds no more to it.
#define RUN_LAST_GOOD "the last good checkpoint is "
// After a checkpoint of train or finetune that could not be written: when what stopped it is a weight or
// AdamW moment gone NaN or infinite (tab's n tensors over params, m, v; the loss still finite), err goes
// on as that line does, "; stopped at step S, its loss still finite; the last good checkpoint is PATH"
// (or that none was written). Any other failure leaves err as it is.
void run_diverged_note(char *err, size_t errlen, const MaeTensor *tab, int n, const float *params, const float *m,
                       const float *v, long step, const char *ckpt_path);
// A new run's id (train_state's run_id, kept by every resume): 16 hex digits from the clock, the
// process and a counter, so that two runs never share one.
void run_new_id(char *id, size_t n);
// The images a run trains and validates on, as "<count>:<16 hex digits>" (a hash of each usable
// item's relative path and header size, the training folder's then the --val folder's; val may be
// NULL), and after it "/<count>:<16 hex digits>" of the training images alone: with a --val folder
// the training folder's, with a held-out split (val NULL) ds's items train_idx [ntrain] (train_idx
// NULL: no second part), then "/<count>:<16 hex digits>" of the validation images alone: the --val
// folder's, or ds's items val_idx [nval]. So a resume tells validation images that changed from
// training images that did (runs from before the third part: only where the training images stayed).
// Recorded in train_state as "images", so that a resume on a folder whose images changed since
// (files added, removed, renamed, resized) says so. sig holds RUN_DATA_SIG_MAX bytes.
enum { RUN_DATA_SIG_MAX = 120 };
void run_data_signature(const Dataset *ds, const Dataset *val, const int *train_idx, int ntrain, const int *val_idx,
                        int nval, char *sig, size_t n);
// The resumed run's recorded signature `was` against the images now (`now`): 0 when the same (or
// none was recorded: older runs); else the warning line for cli_message in msg, naming data and the
// --val folder val (NULL for a held-out split), whose images the counts include, and 1 where the
// training images are the same and only the --val folder's changed (the line says that the weights
// train as before and only the validation numbers come from other images), 2 where the training images
// changed too, or cannot be told apart (a run from before the second part); where both changed (and both
// signatures have the validation part), the line says that the validation images are other images too.
int run_data_changed(const char *cmd, const char *data, const char *val, const char *was, const char *now, char *msg,
                     size_t n);
// Whether the checkpoint file, resumed into dir, belongs to another run than the one dir holds: dir's
// checkpoint.safetensors is another file and the two have different run ids (RUN_FOREIGN_ID), or, runs
// from before run ids, differ in their model, "config" and "classifier" metadata, or train_state's seed
// or batch (RUN_FOREIGN_MODEL); with no checkpoint.safetensors, or file being that very file (another
// run's copied in at its name), its run id differs from the one dir's config.json records
// (RUN_FOREIGN_CONFIG), or, with neither (finetune's folders), dir's snapshots are
// of more than one run, none told to be the folder's (RUN_FOREIGN_MIXED). 0 otherwise, also when
// nothing can be read (resuming an older snapshot is how a run recovers). run_foreign_why writes the
// reason, naming dir's file compared.
// Without checkpoint.safetensors or a run_id in config.json (one damaged): the snapshots' run_id is
// another (RUN_FOREIGN_SNAPSHOTS), or, the file having one, nothing tells whose a run's metrics.csv
// there is (RUN_FOREIGN_UNKNOWN).
enum { RUN_FOREIGN_ID = 1, RUN_FOREIGN_MODEL = 2, RUN_FOREIGN_CONFIG = 3, RUN_FOREIGN_MIXED = 4, RUN_FOREIGN_SNAPSHOTS = 5,
       RUN_FOREIGN_UNKNOWN = 6 };
int run_folder_foreign_checkpoint(const char *file, const char *dir);
const char *run_foreign_why(int kind, const char *dir, char *buf, size_t n);
// --pixel-norm dataset|imagenet|none into cfg->pixel_mean / pixel_std ("dataset": measured on the
// evaluation views of the items idx[0..n)). 0 ok, -1 with a reason, DATASET_ERR_FILE with a reason
// that names its file (data/dataset.h).
int  pixel_norm_set(MaeConfig *cfg, const char *mode, const Dataset *ds, const int *idx, int n, char *err,
                    size_t errlen);

// --store auto|none|DIR (docs/data.md, "Cache, store and prefetch"): none keeps working images in
// the memory cache only; DIR keeps them in that folder; auto uses $XDG_CACHE_HOME/vitmae/work (or
// ~/.cache/vitmae/work) when the working images of the items idx[0..n) need more than cache_mb, and
// says in note that it does, with the share of the images not stored yet that its disk has room for
// when short of it (a folder auto cannot use: a warning, and no store). 0 ok, -1 with err
// (the --store DIR given cannot be used). The caller says the note (run_store_note) once the run
// folder is made: a refused run prints its one line only (docs/interface.md, section 5).
typedef struct { char text[4400]; int warning; } StoreNote;   // text "": nothing to say
// Working images are not written where the store's disk would keep less than min_free_mb MB free
// (--store-min-free; data/dataset.h's dataset_set_store_min_free). made gets the folders made for the
// store (cmd/output.h; none when it was there, or on failure): a run that fails before it starts gives
// them to run_unmake_store.
int  run_use_store(Dataset *ds, const int *idx, int n, const char *store, long cache_mb, long min_free_mb,
                   OutputMade *made, StoreNote *note, char *err, size_t errlen);
// A --store DIR that is, or lies inside, one of the names the run writes in its folder run_dir
// (checkpoint.safetensors, checkpoint-N.safetensors, metrics.csv, curves.png; train's config.json and
// samples/), as given or resolved (output_path_entry): the run would make a folder there and fail
// partway, where that file goes (docs/interface.md, "Paths that meet"). CLI_USAGE with "CMD --store:
// STORE is where the run writes its checkpoint; choose another folder" in err, before the run makes
// anything; 0 otherwise (auto, none, and a folder of another name in the run folder, RUN/store).
int  run_store_meets_run(const char *cmd, const char *store, const char *run_dir, char *err, size_t errlen);
// The store folder a run made (made, from run_use_store) removed again when the run fails before it
// starts, with the working images written into it meanwhile (data/dataset.h's dataset_store_remove),
// and the folders made above it, each while empty (docs/data.md, "Cache, store and prefetch"); a store
// folder that was there before stays as it was. made is empty afterwards: a second call does nothing.
void run_unmake_store(Dataset *ds, OutputMade *made);
// A new run that fails before its first step, no metrics row written (step 0's included), leaves
// nothing behind (docs/interface.md, section 1): `files` (NULL-ended names: train's config.json and
// metrics.csv, finetune's metrics.csv; NULL: none, a resumed run's folder keeps its own) are removed
// from its run folder, then the folders it made for it (made, from output_mkdir_made), each while empty.
// A folder that was there before stays, without those files. The files go only from the folder the run
// holds (run_folder_lock) while it is still at run_dir: one moved meanwhile, or another put at its name,
// is left as it is. Rank 0's, after run_unmake_store (a --store inside the run folder); made is empty
// afterwards.
void run_unmake_folder(const char *run_dir, const char *const *files, OutputMade *made);
void run_store_note(const StoreNote *note);   // a line on stdout, or a warning on stderr
// The in-memory caches give way to the run (docs/data.md, "Cache, store and prefetch"). The memory they
// may take: 90% of `have` bytes (the memory there is for this process, kernels/cpu.h's cpu_memory_bytes;
// <= 0: unknown), less `need`, the bytes its memory rule counted for its run and what it holds besides.
// Returns `want` (the caches' budgets, at most what their working images take) when it fits or memory is
// unknown, else that room (never below 0).
double run_cache_room(double want, double have, double need);
// What a run holds beside the bytes of its memory rule, which no rule counts: the program's code,
// libraries and threads' stacks (RUN_CACHE_SLACK), and its decoding threads (the --loader-threads
// `loader_threads`, or the OpenMP threads of the pixel statistics where more) each decoding a photo as
// large as the largest of the sets (its 8-bit samples: data/dataset.h's dataset_largest_samples).
#define RUN_CACHE_SLACK (64.0 * 1048576)
// Lowers the budgets of ds's cache (--cache-mb MB) and of val's (a --val folder's own scan, NULL when
// none), in proportion, to run_cache_room's room for the run's `need` bytes and the rest above, when
// their working images would pass it, and then says so in note (text "" otherwise), said before the
// store's line. Every process, before any working image is made.
void run_fit_cache(Dataset *ds, Dataset *val, long cache_mb, double need, int loader_threads, StoreNote *note);
// Under mpirun, every rank after rank 0's run_use_store: the other ranks use the store folder rank 0
// chose, so that no rank decodes its share again each epoch (docs/distributed.md, "Semantics"). Ranks
// on one machine share its files (each written under a name of its own, then renamed); a rank that
// cannot use the folder (another machine) says so, as `auto` says it of its own folder, and goes on
// without a store. cmd: "train" or "finetune"; store: the --store flag. Collective.
void run_share_store(Dataset *ds, const char *cmd, const char *store, long min_free_mb);

// A run's stop signals: SIGINT, SIGQUIT, SIGTERM, SIGUSR1 and SIGUSR2 (which mpirun forwards to every
// rank, docs/distributed.md), SIGXCPU (a CPU-time limit's warning), SIGALRM (a timer's) and SIGHUP (SIGHUP,
// SIGUSR2 and SIGALRM unless ignored, as nohup leaves SIGHUP) set run_stop_requested; the run finishes its step, saves and exits 0. Under
// mpirun, rank 0's stdout is a pseudo-terminal that mpirun reads; after SIGINT/SIGTERM mpirun stops
// reading, so a progress line could block rank 0 until mpirun kills it: once a stop is asked, output
// there never blocks (lines that do not fit are dropped, the checkpoint is still written). A terminal
// of our own is left alone: its O_NONBLOCK flag would be the shell's too.
// Installed first thing in main for train and finetune (before MPI starts, which takes a rank half a
// second or more) and again as the command starts (then knowing whether it runs under mpirun): a
// signal during the start-up (MPI's, scanning, loading, the reduction's set-up) ends the run after its
// first step, as one during the run does. run_stop_signal(i): the i-th of those signals, 0 past the last
// (cmd/main.c keeps them blocked while the process runs itself again, so that none is lost there).
extern volatile sig_atomic_t run_stop_requested;
// The status of a validation that a stop asked for during it ended between its batches (train's and
// finetune's, given run_stop_requested by cmd/runloop.c): no message, no row written. The run saves at
// that step at once, the step's losses carried in its checkpoint (a resume writes the row); it went on
// with a validation of seconds and one step more, and mpirun's SIGKILL a second after its SIGTERM took
// the stop's checkpoint (docs/interface.md, "Stopping"). Test gate VITMAE_FAULT_HOLD_IN_VALIDATION
// after each batch of such a validation (tests/cli_train.sh, tests/cli_finetune.sh).
enum { RUN_VALIDATION_STOPPED = 1 };
// Set by train and finetune as their first step begins: a second Ctrl-C before it says that no step
// has run (nothing saved), not that the steps since the last checkpoint are lost.
extern volatile sig_atomic_t run_steps_begun;
// Set by train and finetune once a stop's (or the end's) checkpoint is saved: a second Ctrl-C during
// what follows (config.json, curves.png redrawn) says the checkpoint is saved, not that steps are lost.
extern volatile sig_atomic_t run_saved;
// Set by train and finetune while the run has a checkpoint (resumed from one, or a periodic one saved):
// a second Ctrl-C says the steps since it are lost, else that none was saved yet.
extern volatile sig_atomic_t run_checkpointed;
// Set as the run's checkpoint.safetensors is published at its step (publish_latest's rename, or the
// file saved at its name) and cleared as the next step begins: a second Ctrl-C in between (the old
// snapshots still being pruned, the save's return not yet seen) loses no step, and says the checkpoint
// was saved; it said "no checkpoint was saved yet" with the checkpoint in the folder.
extern volatile sig_atomic_t run_published;
// Sets run_published, as train and finetune publish their checkpoint.safetensors (the test gate
// VITMAE_FAULT_HOLD_AFTER_PUBLISH holds the run there: tests/cli_train.sh).
void run_mark_published(void);
// Called by train and finetune as a save begins (snapshot: RUN/checkpoint-N.safetensors, NULL at --keep
// 0; latest: RUN/checkpoint.safetensors), and with NULLs as a step begins: a second Ctrl-C during the
// save looks (stat) for its files in place. checkpoint.safetensors in place says the checkpoint was
// saved, before run_mark_published is reached; the snapshot alone says that it was saved and to
// continue with --resume RUN/checkpoint-N.safetensors (docs/interface.md, "Stopping"): both said "the
// steps ... are lost" with a whole checkpoint in the folder.
void run_mark_saving(const char *snapshot, const char *latest);
void run_catch_stop_signals(void);
int run_stop_signal(int i);
// Test hook: VITMAE_FAULT_STOP_IN_SETUP=POINT raises SIGUSR1 at that point, as a scheduler's early
// warning that lands while the run starts: "1" when a run's start-up begins, "exec" as the process
// runs itself again (cmd/main.c, short_omp_spin), "mpi" before MPI starts (tests/cli_train.sh,
// tests/cli_mpi.sh, tests/cli_finetune.sh).
void run_test_hook_stop(const char *point);

// The data pipeline's flags, the same in train and finetune (docs/data.md): --cache-mb, --store,
// --store-min-free, --prefetch, --loader-threads, --max-pixels. loader_flags_init sets the defaults;
// loader_flags_table writes their LOADER_FLAGS entries, pointing into l, at f[0 .. LOADER_FLAGS).
typedef struct {
    const char *store;
    long cache_mb, max_pixels;   // max_pixels 0: the dataset's default (data/dataset.h)
    long store_min_free_mb;      // --store-min-free
    int prefetch, loader_threads;
} LoaderFlags;
#define LOADER_FLAGS 6
#define DEFAULT_CACHE_MB 2048
// The free space the store leaves on its disk for other files (docs/data.md, "Cache, store and prefetch").
#define DEFAULT_STORE_MIN_FREE_MB 2048
// Two: a second photo decodes while the steps wait for the first (docs/data.md, "Cache, store and prefetch").
#define DEFAULT_LOADER_THREADS 2
void loader_flags_init(LoaderFlags *l);
void loader_flags_table(LoaderFlags *l, Flag *f);
#endif
