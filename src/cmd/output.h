// Output plumbing shared by the commands that write files: output folders, names of the files of
// each input (stems), and the probe that a folder takes files.
#ifndef VITMAE_OUTPUT_H
#define VITMAE_OUTPUT_H
#include <stddef.h>
#include "cmd/cli.h"

// mkdir -p with mode 0777 (the umask decides, as for mkdir(1)). 0 ok; -1 with err "<folder>: <why>"
// and errno set (ENOTDIR when path exists and is not a folder, ENAMETOOLONG when too long). Each folder
// is made by file_mkdir_tracked (io/files.h): after file_cleanup_on_stop_signals, a stop signal removes
// the folders made here while they are empty (docs/interface.md, section 1, "Stopped by a signal"),
// so a command calls that before it makes its --out folder.
int output_mkdir_p(const char *path, char *err, size_t errlen);
// The folders one output_mkdir_made call made: prefixes of its path (its first len[i] bytes), in the
// order made. A command that fails removes them again with output_mkdir_undo, deepest first, each only
// while it is empty, so that a failed run leaves no empty folder of its own behind (docs/interface.md,
// section 1: a failed command leaves nothing half-written); a folder that was there before, or that
// holds a file, stays (and so do the made folders above it); one already gone (deleted mid-run) is
// passed over. A folder removed so is no longer kept for the stop signals' cleanup.
enum { OUTPUT_MADE_MAX = 2048 };   // a path of 4096 bytes has at most 2048 parts
typedef struct { char path[4096]; int n; unsigned short len[OUTPUT_MADE_MAX]; } OutputMade;
// made begins empty ({.n = 0}); a later call with the same made keeps what the earlier one made above
// its path (train's default run folder runs/<stamp>, taken by another run, then runs/<stamp>-2: the
// runs/ its first try made is still this run's to remove), and forgets the rest. 0, or -1 with err;
// -2 where a part of path is a symbolic link to nothing (err "LINK: a symbolic link to TARGET, which
// does not exist").
int output_mkdir_made(const char *path, OutputMade *made, char *err, size_t errlen);
void output_mkdir_undo(OutputMade *made);
// A command's --out folder made (output_mkdir_made) or one line said, labelled with label ("reconstruct
// --out"): "cannot create the output folder: PATH: why", or, for a path through a symbolic link to
// nothing, "LINK: a symbolic link to TARGET, which does not exist" as train's --out says it
// (docs/interface.md, "Earlier results"). 0, or 1 after the line.
int output_make_out(const char *label, const char *dir, OutputMade *made);
// The folder made->path itself (made by the last call) is another run's now: it is forgotten, and
// what was made above it stays in made.
void output_mkdir_disown(OutputMade *made);

// Earlier results are not replaced without the user's say (docs/interface.md, "Earlier results"): a
// command that writes named files checks them all first, in two passes, before any work.
// output_refuse_earlier returns 1 after one line, else 0. The first pass looks at every name for what
// --force cannot help: a folder where a file goes ("vitmae: PATH: is a folder: --force replaces files,
// not folders (choose another name)"; the rename that publishes the file would fail) or, for an
// OUTPUT_FOLDER (attention's folder of an image's maps, which --force keeps and fills), a file where it
// goes ("vitmae: PATH: is not a folder: ..."). Only then the second looks at every name for an earlier
// result, when force is 0: "vitmae: PATH: already exists (use --force to replace it)" (anything there,
// a file or a link); "use --force" for an earlier file must not send the user to a refusal --force
// cannot help.
enum { OUTPUT_FILE = 0, OUTPUT_FOLDER = 1 };
typedef struct {
    long n;                     // how many names
    const char *const *list;    // the names (each an OUTPUT_FILE), or NULL: name gives them
    // Writes the i-th name (0 <= i < n) into path and returns its kind: a command with thousands of
    // inputs (reconstruct, attention) names each output when asked, and holds no list of them.
    int (*name)(void *ctx, long i, char *path, size_t size);
    // Optional, in the second pass before each OUTPUT_FILE's check: 1 (after its line) refuses
    // (reconstruct: the output is one of its inputs, docs/interface.md, "Paths that meet").
    int (*also)(void *ctx, long i, const char *path);
    void *ctx;
} OutputNames;
int output_refuse_earlier(const OutputNames *names, int force);
// The temporary files that a killed run of this host (SIGKILL, a power cut: no stop signal removed
// them) left of the OUTPUT_FILE names in names, "NAME.tmp.<host>.<pid>.<serial>" (io/files.h,
// file_sweep_dead_tmps: only where that process is gone, never a user's file of another name),
// removed: embed, probe --out, reconstruct and attention call it once output_refuse_earlier has
// passed, before they write (docs/interface.md, section 1, "Stopped by a signal"). Failures leave them.
void output_sweep_leftovers(const OutputNames *names);

// The what for cli_error(what, "%s", err) of a library's message: NULL when err already begins with
// "path: " (it names the file, as "vitmae: PATH: why" should), else cmd.
const char *output_subject(const char *cmd, const char *path, const char *err);

// A PNG (data/image.h, png_write_fd) at a command's staged name tmp, made by file_tmp_create so that a
// stop signal removes it (io/files.h); removed on failure.
int output_png_to(char *tmp, const unsigned char *px, int w, int h, int c, const char *const *text,
                  char *err, size_t errlen);

// Whether a failure's reason (err) stops reconstruct and attention at that image (one line, then the
// stop) rather than let them compute every image left and fail each the same way, a line per image:
// OUTPUT_STOP_FULL, the output folder takes no more files (a full disk, a quota, a read-only file
// system); OUTPUT_STOP_MEMORY, this process is out of memory or open files (data/image.h,
// image_why_is_resource); 0, the image's own failure. OUTPUT_STOP_GONE, the output folder itself was
// moved or deleted (output_out_gone), is not read from a message: the command looks when an image fails.
enum { OUTPUT_STOP_FULL = 1, OUTPUT_STOP_MEMORY = 2, OUTPUT_STOP_GONE = 3 };
int output_stop_kind(const char *err);
// The line that ends such a run: "CMD: stopped: DIR takes no more files (W of T images written)", or
// "... this process is out of memory or open files (...)", or for OUTPUT_STOP_GONE "CMD: DIR: the
// folder is gone (moved or deleted during the run)" (docs/interface.md, section 1: the images left are
// no failures of their own, nor are the files that went with the folder); nothing for kind 0.
void output_report_stop(const char *cmd, int kind, const char *out_dir, int written, int total);
// Whether the output folder dir is no longer the folder *home was (stat'ed as the run made or found
// it): moved, deleted, or another folder or a file put at its name: 1, else 0 (also when home is NULL
// and dir is a folder). Every image written after that would fail alike (a "No such file or
// directory" line each, in reconstruct and attention), or go into a folder that is not the run's.
struct stat;
int output_out_gone(const char *dir, const struct stat *home);

// 1 when inner is the folder outer or lies below it, 0 otherwise (docs/interface.md, "Paths that
// meet"). Paths are resolved as the system would (links followed, relative to the working directory);
// a path that does not exist yet (an output folder still to be made) as its deepest existing
// folder followed by the rest of its name. inner also lies in outer when a folder on its way, as
// written, does ("RUN/imgs" with imgs a link to elsewhere lies in RUN). 0 when either cannot be
// resolved at all.
int output_path_within(const char *inner, const char *outer);

// 1 when inner lies below the folder outer, with the name of the entry of outer it is or lies in
// written into entry (n bytes): "curves.png" of "r4/curves.png" or "r4/curves.png/x" with outer "r4".
// Resolved as output_path_within does (links followed, names that do not exist yet as written), also
// through a folder on inner's way as written ("r4/curves.png" with curves.png a link to a folder
// elsewhere). 0 when inner is outer itself, lies elsewhere, or either cannot be resolved.
int output_path_entry(const char *inner, const char *outer, char *entry, size_t n);

// 1 when a scan of the folder dir (dataset_scan: links to folders followed) would enter target, or a
// folder holding it, through a link below dir: "runs/p4" with dir/c/runs a link to runs. The path the
// scan reaches it by, in at. Only existing folders count; 0 when none is reached (output_path_within
// has told the paths that lie in dir as written).
int output_folder_reaches(const char *dir, const char *target, char *at, size_t atlen);

// A held-out folder (train's and finetune's --val, probe's --test: flag_b, b) that is, or lies in, the
// training folder (flag_a, a), or holds it, is taken as given (tests/cli_finetune.sh validates on its
// training folder to measure fit), with one warning line (cli_message): "warning: --val B is inside
// --data A: its images also train; the results measure fit, not generalisation" (what: "train"), or
// "... --data A is inside --val B: its images are also held out; ...". 1 when warned.
int output_warn_overlap(const char *flag_a, const char *a, const char *flag_b, const char *b, const char *what);

// The --out folder of reconstruct, attention and probe must not be, or lie in, a folder the command
// reads (inputs[0..n): the INPUT arguments, or probe's --train and --test; files among them are left
// alone): its images would be read as inputs by the next run (with --force, or once more images come).
// Also where a link below such a folder leads to OUT or a folder holding it (output_folder_reaches).
// 0, or CLI_USAGE after one line "CMD --out: OUT is inside the input folder DIR: ..." (through a link:
// "... DIR through a link (its scan enters DIR/l): ...") (docs/interface.md, "Paths that meet"); of a
// default folder (given 0), "CMD: the default output folder OUT is ...".
int output_refuse_inside_inputs(const char *cmd, const char *out_dir, int given, char *const *inputs, int n);

// 1 when publishing a file at out (renamed onto its name) would replace the file that the existing
// path in names (through links: a link at out is replaced itself, its target stays; a link at in is
// followed), else 0. Such an output (embed's FEATS.npy on its --ckpt) is refused, also with --force.
int output_replaces(const char *out, const char *in);

// The inputs that an output would replace (docs/interface.md, "Paths that meet"): `reconstruct --out r
// r/y.png r/y.recon.png --force` wrote y's panel over the input r/y.recon.png. The inputs' files are
// known by device and inode, found when first asked (an output that does not exist asks nothing).
typedef struct { unsigned long long dev, ino; int i; } OutputFileId;
typedef struct { OutputFileId *files, *dirs; int nfiles, ndirs, made; } OutputInputs;
// The index of the input (paths[0..n)) that the existing directory entry out is, or -1: out is the
// input's file, or the file an input names through a link (a link at out is replaced itself: it is
// compared as the link).
int output_input_named(OutputInputs *s, char *const *paths, int n, const char *out);
// The index of an input that lies directly in the existing folder dir (attention's DIR/<stem>, where
// its maps go), or -1.
int output_input_in(OutputInputs *s, char *const *paths, int n, const char *dir);
void output_inputs_free(OutputInputs *s);

// Whether an input's output names fit the system's 4096-byte paths: dir/<stem> and what follows it
// (names: "/..." for attention's folder of maps, ".*" for reconstruct's files), with 64 bytes after the
// stem for the longest name an input writes there and its temporary name (io/files.h, FILE_TMP_EXTRA),
// and this host's name with a dot, which the temporary name carries (file_tmp_name_host).
// A name cut short would write one output over another, or fail after the image's work naming a path
// cut short. 0, or -1 with err "the output names DIR/STEMNAMES would pass the 4096-byte path limit (a
// shorter --out)", said of the input (its path first).
int output_names_fit(const char *dir, const char *stem, const char *names, char *err, size_t errlen);

// Creates and removes a probe file in dir (.vitmae-write-test-XXXXXX, a name of its own: io/files.h's
// file_tmp_create_unique): -1 with err "<dir>: cannot write in this folder..." when the folder does not
// take files. After file_cleanup_on_stop_signals a stop signal while the probe is there removes it
// (io/files.h): a command calls that first.
int output_check_writable(const char *dir, char *err, size_t errlen);

// The stems used so far by one command: every input writes DIR/<stem>.*, so no two inputs may share
// one. A stem is cut to its first STEM_MAX bytes (at a character boundary), so that each output name
// (the longest "<stem>-<k>.attn-mask.npy") and its temporary name (io/files.h, FILE_TMP_EXTRA:
// ".tmp.<pid>.<n>", at most 23 bytes) stay within the 255 bytes of a file name: 200 + 6 + 14 + 23 = 243
// (where the host's name that the inference commands' temporary names carry, file_tmp_name_host, makes
// one longer than 255 bytes, the output's part of it is cut: io/files.h, file_tmp_name).
// The first input keeps its stem ("image" when the name leaves nothing, or only "." or ".."); a
// later one with a taken stem gets "<stem>-<k>" for the first free k counting from first_suffix
// (reconstruct and attention count from 1: x, x-1, x-2, docs/interface.md "Stems"; pinned by
// tests/cli_reconstruct.sh and tests/cli_attention.sh). When the command names its files by suffixes (NULL-terminated; "" for a folder
// DIR/<stem>), a stem is also taken when one of its names is another stem's name or one of the
// command's own files (reserved, NULL-terminated, e.g. "index.html"): x.png and x.attn.png.png cannot
// both write DIR/x.attn.png (docs/interface.md, "Stems").
// The names are looked up in hash tables, and each stem remembers the last <k> it gave, so that a
// folder of 20,000 images (or 4,000 in 200 class folders that each hold 00.jpg .. 19.jpg) is named
// in a few compares an image, not one per image named before it.
enum { STEM_MAX = 200 };
typedef struct { char *key; int value; } StemSlot;
typedef struct { StemSlot *v; size_t cap, n; } StemTable;
typedef struct {
    char **names;
    int n, cap;
    int first_suffix;
    const char *const *suffixes;   // NULL: the names are DIR/<stem>.<kind>, which never meet
    const char *const *reserved;
    StemTable taken;   // every name an output takes: each stem with each suffix, and the reserved names
    StemTable last;    // each stem (as cut) given a "-<k>": the last k
    long compares;     // names compared in the tables (a count of work, for tests)
} StemSet;
// The unique stem for stem, owned by the set (valid until stem_set_free); NULL when out of memory.
const char *stem_set_claim(StemSet *s, const char *stem);
void stem_set_free(StemSet *s);
// The lines of a folder INPUT dir of classify, reconstruct and attention, its scan ds met after `before`
// images (docs/interface.md, section 2, "Bad files"), kept in unread: each file the scan skipped a
// failed input at its place among the folder's images, except the hidden ones (names starting with
// '.', macOS's ._NAME files beside every image of a copy) that do not decode, one warning after the
// folder's other lines and no failure, as train says them (cli_unread_keep_skipped); a folder with no
// image and no failed file is one failed input of its own, "DIR: no usable image (N skipped, M
// ignored)". page, when not NULL, is given each failed input's line too with its place, the number of
// images before it (attention's index.html; not the warning). Returns the number of failed inputs. The
// one rule of output_gather_inputs and attention's.
int output_folder_skipped(CliUnread *unread, long before, const char *dir, const Dataset *ds,
                          void (*page)(void *ctx, long before, const char *what, const char *why), void *ctx);
// The image files named by the INPUT arguments pos[0..npos): a file as itself, a folder scanned like
// `vitmae data` (data/dataset.h; images of more than max_pixels skipped, 0: the default). Calls add(ctx, path, cls) for each image in order, cls being the
// class folder the scan found it in, or NULL (a file given directly, or a flat folder). Inputs that do
// not exist, files the scan skips and folders without images are counted in *failed (a folder's
// hidden files that do not decode: one warning, no failure; output_folder_skipped) and their lines
// kept in *unread, each at its place among the images (cli_unread_keep: 20 named, then a count, with the
// reads that fail later), for the caller to say once its outputs have passed their checks (a refused
// run prints its one line only). Returns 0, or -1 as soon as add does (out of memory).
int output_gather_inputs(char **pos, int npos, long max_pixels, int (*add)(void *ctx, const char *path, const char *cls),
                         void *ctx, int *failed, CliUnread *unread);
// An input that failed to load because a folder above it went away during the run (renamed,
// deleted): 1, and the topmost missing folder is reported once (cli_error: "DIR: the folder is gone
// (moved or deleted during the run)"); a later input below a folder already reported returns 1
// silently. `gone` (n bytes, zeroed at first) lists the folders reported (NUL-separated, an empty
// name ends it). 0: no folder above it is missing (the caller reports the input's own error). A
// folder of thousands of images renamed mid-run gave a "no such file" line per image.
int output_input_gone(const char *path, char *gone, size_t n);
// The test of output_input_gone without the report: 1 when a folder above path is missing and not
// yet listed (now listed, *dir pointing at its name in the list), 2 when path is below a listed
// folder, 0 otherwise.
int output_gone_folder(const char *path, char *gone, size_t n, const char **dir);
#endif
