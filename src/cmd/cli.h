// Command-line flags: one table per command, parsed with range checks. Usage errors print one
// line `vitmae: <command> <flag>: <why>` to stderr and make the command exit 2.
#ifndef VITMAE_CLI_H
#define VITMAE_CLI_H
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include "cmd/streams.h"
#include "data/dataset.h"

// FLAG_PATH: a file or folder name, a string written back clean (cli_clean_path) into argv.
// FLAG_FILE: a FLAG_PATH that names a file the command writes (embed --out): one ending in '/' names a
// folder, a usage error, rather than a file written under the name with its '/' cleaned away.
typedef enum { FLAG_INT, FLAG_LONG, FLAG_FLOAT, FLAG_STR, FLAG_PATH, FLAG_FILE, FLAG_BOOL, FLAG_CHOICE, FLAG_DOUBLE } FlagType;

typedef struct {
    const char *name;      // "--batch"
    FlagType type;
    void *dst;             // int*, long*, float*, const char**, int* (bool: set to 1), const char** (choice)
    double min, max;       // inclusive range for numbers
    const char *choices;   // FLAG_CHOICE: "a|b|c"
    const char *help;      // one line; "VALUE" placeholder taken from metavar
    const char *metavar;   // e.g. "N"; NULL for booleans
    int seen;              // set by cli_parse when the flag was given
} Flag;

enum { CLI_OK = 0, CLI_HELP = -1, CLI_USAGE = 2 };
// The size of a buffer that takes a message for the user (err): two paths as long as Linux takes them
// (4095 bytes each, as --out's link and its target can be) and the words around them. A message was cut
// where a smaller buffer ended (finetune --out of 2000 bytes said its path's first 1000 and no reason).
enum { CLI_ERR_MAX = 2 * 4096 + 512 };

// The largest --threads of every command (docs/interface.md, section 1). No buffer is sized by it:
// per-thread scratch is allocated for the threads asked for, and threads that cannot be made are one
// line (cpu_start_threads). It only catches a typo (--threads 100000) as a usage error at once, rather
// than after minutes of starting threads; it is above the hardware threads of the largest single
// machines, so that no real machine is refused.
#define CLI_THREADS_MAX 4096

// The largest --max-pixels of every command that reads images (docs/interface.md, section 2): past
// any image a decoder takes (libpng's own limit is 10^6 x 10^6), and a whole number that JSON holds
// exactly, as a run's train_state records it (cmd/runfolder.c). One bound for all, as for --threads.
#define CLI_MAX_PIXELS_MAX 1e12

// The evaluation view's flags of embed, probe and classify (docs/interface.md, section 2, "Evaluation
// views"): --crop-pct F in [VIEW_CROP_PCT_MIN, 1] (default 1) and --interp bilinear|bicubic (default
// bilinear); finetune's --interp also resizes its training crops, and says so in its own help.
#define CLI_CROP_PCT_HELP "the evaluation view: the shorter side resized to floor(img / F), the centre img x img kept (default 1, the whole centre square; MAE's and timm's 0.875)"
#define CLI_INTERP_HELP "the filter of the evaluation view's resize (default bilinear; MAE's and DINO's is bicubic)"
// --ema of embed, probe and attention (docs/encoder.md, "Other commands on a fine-tuned checkpoint"),
// and the words their summaries add for it.
#define CLI_EMA_ENCODER_HELP "use the moving average of the weights a finetune --model-ema run kept (timm's model EMA) instead of the weights"
#define CLI_EMA_WHAT ", EMA weights"
// The view those two flags give (crop_pct as typed, data/dataset.h augment_fraction; interp checked by
// its FLAG_CHOICE).
ViewSpec cli_view(float crop_pct, const char *interp);
// A view other than VIEW_WHOLE in words for a command's lines, at view size `size`, after prefix:
// prefix + "crop-pct 0.875 (shorter side 256, centre 224), bicubic", "crop-pct 0.9 (shorter side 248,
// centre 224)" or "bicubic"; "" (no prefix) for VIEW_WHOLE.
void cli_view_text(char *buf, size_t n, const char *prefix, ViewSpec v, int size);

// The range of --display, the side in pixels of a picture as reconstruct and attention draw it
// (docs/interface.md, section 1): one for both, as far as --scale reaches (64 x a 128-pixel model);
// reconstruct's row of five panels of 8192 stays inside a canvas's 65,536 pixels (viz/viz.h).
#define CLI_DISPLAY_MIN 16
#define CLI_DISPLAY_MAX 8192

// Parses argv[1..] (argv[0] is the command name). Arguments that are not flags are collected in
// positional (argv order, at most max_positional; more is a usage error); they are file and folder
// names, cleaned in place as FLAG_PATH values are. "--flag=value" and
// "--flag value" both work. Returns CLI_OK, CLI_HELP (usage printed to stdout) or CLI_USAGE
// (one-line error printed to stderr).
int cli_parse(const char *command, const char *synopsis, Flag *flags, int nflags,
              int argc, char **argv, char **positional, int max_positional, int *npositional);
// The words of the NULL-ended list that word, unknown, was likely meant to be, as cli_parse names an
// unknown flag's closest flags (docs/interface.md, section 1): main's hint for an unknown command or
// top-level request (trian: train; --hlep: --help). 0 when none is close, buf "".
int cli_closest_words(const char *const *words, const char *word, char *buf, size_t n);
void cli_print_usage(const char *command, const char *synopsis, const Flag *flags, int nflags);
Flag *cli_flag(Flag *flags, int nflags, const char *name);   // lookup (for ->seen)
// A path as the user meant it, written without what names nothing (docs/interface.md, section 1):
// runs of '/' become one, "." components after the first go ("a/./b" is "a/b", "./a" stays), and so do
// trailing '/' ("/" stays "/"). ".." is kept: through a link it is not the lexical parent. In place
// (the result is never longer), so that a folder given as "out/" does not make "out//checkpoint..."
// in every name and message built from it.
void cli_clean_path(char *p);
// Prints `vitmae: <what>: <why>` (printf-style why) to stderr. Under mpirun, ranks other than 0
// print `vitmae: rank R: <what>: <why>`, or nothing while cli_quiet_ranks(1) is in force (errors
// every rank meets alike, such as a bad flag, are then reported once, by rank 0), unless cli_defer
// (below) keeps the message.
// what may be NULL when the message names what failed itself: `vitmae: <why>`.
// A word of the command line that a message echoes back (an unknown command or flag, a flag's refused
// value, `help NAME`'s NAME, an argument not taken) is passed through utf8_clip (io/json.h): what is not
// UTF-8 as U+FFFD, cut to 96 bytes and "...", as a name read from a file; cli_error then writes its
// control characters out. A file or folder name is shown whole (docs/interface.md, section 1).
void cli_error(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_quiet_ranks(int on);
// Set by main for a command that runs in one process (all but train, finetune and bench): under mpirun
// it is refused in one line, exit 2, once its command line is checked, so that its --help is printed
// and a usage error said as without mpirun, and before it reads its inputs or writes anything
// (docs/interface.md, section 7). Each such command calls cli_one_process_refused(command) there: 1
// when it is refused (the line said; return 2), 0 when it runs.
void cli_one_process(int on);
int cli_one_process_refused(const char *command);
// One line "vitmae: [rank R: ]<message>" on stderr from this process whatever its rank and
// cli_quiet_ranks (a warning, a skipped file); as cli_error, control characters in it are written
// out (\n, \t, \xHH; a backslash \\).
void cli_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// The OpenMP threads of a command that has no start-up header (kernels/cpu.h, cpu_start_threads;
// threads 0: the default): 0, or 1 after "vitmae: CMD: cannot start T threads: ...". A --threads above
// the CPUs the process may use is said in a warning line, and so is such a count from OMP_NUM_THREADS,
// naming it (train and finetune say it in their header).
int cli_start_threads(const char *cmd, int threads);
// Lines a command holds back until it is sure to go ahead (docs/interface.md, section 5, "Checked
// first": a refused run prints its one line only), such as the files a folder's scan skipped:
//   CliHeld held = {0};
//   cli_hold(&held, path, "%s", reason);   // kept, as cli_error(path, "%s", reason) would print it
//   ... the outputs checked: a refusal calls cli_held_free alone (the lines are never said) ...
//   cli_held_say(&held);                   // printed in order, then forgotten; also before a failure they explain
//   cli_held_free(&held);
// A line that cannot be kept (out of memory) is printed at once.
typedef struct { char **lines; int n, cap; } CliHeld;
void cli_hold(CliHeld *h, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cli_held_say(CliHeld *h);
void cli_held_free(CliHeld *h);
// The warning of probe and finetune for images directly in a folder of class sub-folders, after
// "warning: DIR: ": the count, "s" or "", "has"/"have", "is"/"are" (docs/encoder.md).
#define ROOT_IMAGES_UNUSED "%d image%s directly in the folder %s no class and %s not used"
// A class folder whose name starts with '.' (.ipynb_checkpoints, .Trash-1000, .thumbnails) is read as
// any other, as torchvision's ImageFolder reads it, and is a class of its own (docs/interface.md,
// section 2): `data` and `finetune` say so after its path, since such a folder is seldom meant as one.
#define HIDDEN_CLASS_WARNING \
    "a hidden folder (its name starts with '.') holding images: they train as a class of its own"
// Holds in h the line "warning: DIR/NAME: " HIDDEN_CLASS_WARNING for each of the n class names that
// starts with '.' (finetune's and probe's; data lists them in its report).
void cli_hold_hidden_classes(CliHeld *h, const char *dir, char *const *names, int n);
// The end of probe's and finetune's refusal of a test or --val class that the training folder lacks,
// when root holds a folder of that name all the same (ds: root's scan): " (ROOT/NAME holds no usable
// image)" where it is empty, or every file skipped (no class, as `vitmae data` reads classes), and
// " (" CLASS_LINK_NOTE ")" where it is a folder the scan met again (a link to a class's folder, into
// one, or to root: its images counted once, under their class, as `vitmae data` counts it among the
// folders met again); else "" (a user who sees the folder there is told why it is not a class).
// Returns 1 for the first note only, where the scan's skipped files may explain it.
#define CLASS_LINK_NOTE "%s is a folder met again through a link, searched once: its images count under their class"
int cli_class_folder_note(const char *root, const char *name, const Dataset *ds, char *buf, size_t n);
// 1 when name is a sub-folder of root (a link to one too) that is none of ds's classes (ds: root's
// scan) and not hidden (.git, .ipynb_checkpoints), nor one the scan met again (a link to root, to a
// class's folder or into one, whose images it counted once, under the class): a folder that holds no
// usable image, so no class. The one rule of cli_unused_class_folder_note and of `vitmae data`'s
// warning of such folders (docs/data.md).
int cli_unused_class_folder(const char *root, const char *name, const Dataset *ds);
// The end of probe's and finetune's refusal of a training folder with fewer than 2 classes, when
// root holds a sub-folder that is none of ds's classes (empty, or every file skipped; torchvision's
// ImageFolder refuses it, `Found no valid file for the classes NAME`): the first such by name, as
// cli_class_folder_note says it, else "" (a user who sees two class folders is told why one is none).
// Hidden folders (.git, .ipynb_checkpoints) are passed over.
void cli_unused_class_folder_note(const char *root, const Dataset *ds, char *buf, size_t len);
// A candidate whose name starts with '.' is read as any other too (docs/interface.md, section 2), but
// most are macOS's ._NAME files (AppleDouble: a copied picture's metadata under the picture's name,
// one beside every image) or other tools' leftovers: those that fail are said as one line, how many
// and the first (count, "s" or "", "es" or "", its path, its reason), after "warning: skipped " on
// stderr (train, finetune) or under "skipped:" (data), not a line each.
#define HIDDEN_FILES_SKIPPED "%d hidden file%s (names starting with '.', as the ._NAME files macOS writes beside " \
    "copies) that do%s not decode; the first: %s: %s"
// 1 when the last part of path (after its last '/') starts with '.'.
int cli_hidden_file(const char *path);
// The files that cannot be read, as every command says them: the first CLI_UNREAD_NAMED a line each,
// then one line with how many more (cli_unread_end), so that a folder of thousands of broken files is a
// screen, not thousands of lines (docs/interface.md, section 2, "Bad files"). skipped 1: a scan's
// skipped candidates (train, finetune, embed, eval, probe), "skipped PATH: REASON", then "... and N
// more skipped (vitmae data lists them)"; skipped 0: the inputs of the commands that take files
// (classify, reconstruct, attention), "PATH: REASON" as cli_error says a file's failure, then "... and
// N more inputs that cannot be read" (each still a failed input: exit 1), said in input order through
// cli_unread_keep (below). cli_unread holds a line in h, or says it at once (stderr) where h is NULL.
#define CLI_UNREAD_NAMED 20
typedef struct { long at; int counted; char *line; } CliUnreadLine;
typedef struct {
    int skipped, named, more;
    // The commands that take files keep their lines in input order (cli_unread_keep): at most
    // CLI_UNREAD_NAMED counted ones wait here, with the lines of whole INPUTs, until said.
    CliUnreadLine *kept;
    int nkept, capkept, kept_counted;
} CliUnread;
void cli_unread(CliUnread *u, CliHeld *h, const char *path, const char *reason);
// Says the kept lines (cli_unread_reach), then "... and N more" where some were not named, and frees them.
void cli_unread_end(CliUnread *u, CliHeld *h);
// The lines of classify, reconstruct and attention come in the order of their inputs, as the user gave
// them (docs/interface.md, section 2, "Bad files"), whether an input failed as the INPUTs were gathered
// (a missing path, a folder's scan) or later, as its image was read: each line has a place, at, in the
// gathered list of images: CLI_AT_BEFORE(i) for a line before image i (what the gathering met after
// i images), CLI_AT_ITEM(i) for image i's own. cli_unread_keep keeps a line (counted: one of the
// CLI_UNREAD_NAMED; else a whole INPUT's, "DIR: no usable image", always said), what and why as
// cli_error would say them; of the counted ones only the first CLI_UNREAD_NAMED by place are kept, the
// others counted in more. cli_unread_reach says every kept line placed before at, in order, once no line
// can come before it (a command calls it as it reaches image i, CLI_AT_ITEM(i)); cli_unread_item is
// image i's own failure, said at once. cli_unread_free drops what a refused run never says.
#define CLI_AT_BEFORE(i) (2 * (long)(i))
#define CLI_AT_ITEM(i) (2 * (long)(i) + 1)
void cli_unread_keep(CliUnread *u, long at, int counted, const char *what, const char *why);
void cli_unread_reach(CliUnread *u, long at);
void cli_unread_item(CliUnread *u, long i, const char *path, const char *reason);
void cli_unread_free(CliUnread *u);
// The hidden files ds's scan skipped as one HIDDEN_FILES_SKIPPED line after prefix: held in h (train,
// finetune, embed, eval, probe: "warning: skipped "), or printed on stdout where h is NULL (data's
// report, under "skipped:"). Nothing when no hidden file was skipped.
void cli_hidden_skipped(CliHeld *h, const char *prefix, const Dataset *ds);
// Holds in h the files ds's scan skipped as every command that reads a folder says them (train,
// finetune, eval, probe; embed through cli_unread_keep_skipped): the others through cli_unread (skipped 1), then the hidden ones that
// do not decode (cli_hidden_skipped): a folder copied from a Mac is a few lines, not thousands.
void cli_hold_skipped(CliHeld *h, const Dataset *ds);
// The same lines kept in u (skipped 1) at their places for embed, whose INPUT folders are scanned as
// data sets and say their lines in input order (docs/interface.md, section 2, "Bad files"), and for
// classify, reconstruct and attention (skipped 0: "PATH: REASON"; output_folder_skipped): ds is the
// scan of an INPUT folder met after `before` images; its skipped files count towards one
// CLI_UNREAD_NAMED for the whole run, then one "... and N more skipped" (cli_unread_end).
void cli_unread_keep_skipped(CliUnread *u, long before, const Dataset *ds);
// train's and finetune's refusal of --val DIR with --val-frac F, which it would ignore (docs/data.md,
// "Validation"), after "<command> --val-frac: ".
#define VAL_PAIR_REFUSAL "give --val DIR or --val-frac F, not both: with --val DIR every image of --data trains " \
    "and --val-frac would be ignored"
// How those lines write the character at text: io/json.h's text_escape_at (the one rule). attention's
// index.html and embed's FEATS.txt write names so too.
size_t cli_escape_at(const char *text, char out[9], size_t *used);
// The spaces that pad text to width columns as cli_out writes it (0 when it is as wide or wider): a
// character of UTF-8 the columns wcwidth gives it (2 for a wide CJK character, 0 for a combining mark;
// 1 where the C.UTF-8 locale is missing), an escaped one its escape's ("%-24s" padded bytes, so a
// class name of accents ended short of its neighbours in data's list).
int cli_pad(const char *text, int width);
// One line on stdout (a command's report of an input: "PATH: ..."), its control characters written
// out as cli_error writes them: a file name holding a newline or a terminal escape stays inside its line.
void cli_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// A stdout line built piece by piece (classify's line of --top N classes, info's class list), of any
// length, then written by cli_out:
//   CliLine l;
//   FILE *f = cli_line_open(&l);           // NULL when out of memory (cli_line_out then says so)
//   if (f) fprintf(f, ...);
//   if (cli_line_out(&l)) -> out of memory, nothing written
typedef struct { FILE *f; char *text; size_t len; } CliLine;
FILE *cli_line_open(CliLine *l);
// Closes the line, writes it through cli_out and frees it. 0, or -1 (out of memory: nothing written).
int cli_line_out(CliLine *l);
// Ends a command's output: flushes stdout and, when anything written to it was lost (a full disk
// under `> FILE`, /dev/full), says so in one line, `vitmae: <what>: standard output: <why>`, and
// returns 1 in place of a 0 rc (any other rc is kept): a report cut short never exits 0
// (docs/interface.md, section 1, "Standard output").
int cli_stdout_done(const char *what, int rc);
// Set (from a signal handler) where stdout may drop lines by design: rank 0's stdout under mpirun
// once a stop is asked (cmd/runfolder.h, run_catch_stop_signals); cli_stdout_done then says nothing.
extern volatile sig_atomic_t cli_stdout_lossy;
// cli_error(what, "%s", why), returning code: `return cli_report("train", err, 1);`.
int cli_report(const char *what, const char *why, int code);
// A mask ratio that mask_ratio_check (core/masking.h) refused with why: with --mask-ratio given, the
// flag's usage error (exit 2); without it the ratio was the checkpoint's config, edited (train writes
// none that leaves no patch), so the file is at fault, not a flag the user did not give (exit 1).
// Prints the line; returns the exit code (reconstruct, eval).
int cli_mask_ratio_refused(const char *cmd, int given, const char *ckpt_path, const char *why);
// A model of the command's flags that mae_config_check_flags (core/config.h) refused: `vitmae: <cmd>
// --patch: why` when flag names the size out of range, else `vitmae: <cmd>: why`. Returns 2 (usage).
int cli_model_flags_refused(const char *cmd, const char *flag, const char *why);
// Setup under mpirun, in phases (docs/distributed.md): while cli_defer(1) is in force (it does
// nothing without mpirun), cli_error keeps a rank's first message instead of printing it, and
// cli_agree(rc) ends the phase: every rank learns the largest rc, rank 0 prints its kept message,
// another rank prints its own only when rank 0 did not fail, so a failure every rank meets (a
// missing folder) is printed once and a rank's own (its memory, its copy of the data) is named. A
// collective call is then never half attended. cli_agree is collective; it returns rank 0's rc when
// rank 0 failed (the status of the line said: a folder locked by another run is exit 1 on every rank,
// though another rank, which does not take the lock, found no checkpoint there, exit 2), else the
// largest rc.
void cli_defer(int on);
int cli_agree(int rc);
#endif
