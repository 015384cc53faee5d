// Files: small files written whole and atomically (a temporary file in the same folder, fsync,
// rename: on failure nothing is left behind and the previous file at path, if any, is intact), and
// the publishing of a command's outputs: files written under temporary names, then moved to their
// names together, replacing nothing unless the user said so (--force). Output folders are cmd/output.h's.
#ifndef VITMAE_FILES_H
#define VITMAE_FILES_H
#include <stddef.h>
#include <stdio.h>

struct stat;

// The most bytes of a path (or of its folder part) that a message here names ("%.*s"), so that a
// message of a path, its folder and a reason fits its callers' buffers whole (data/image.h's
// PNG_WRITE_WHY_MAX, png_write's own buffer).
enum { FILE_NAME_CUT = 2000 };

// Writes len bytes of data to path, replacing what is there: fsync of the file, rename, fsync of its
// folder. 0 ok, -1 with "PATH: reason" in err (file_publish_atomic's when only the folder's sync failed).
int file_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
// The same where nothing is at path: the rename replaces nothing put at the name meanwhile (a file, a
// folder, a FIFO, a link, also one to nothing). -1 with errno EEXIST (err "PATH: File exists") where
// the name is taken, 0 where the file is in place and only its folder's sync failed (err as
// file_publish_atomic's), another errno else; tmp is removed on every failure.
int file_write_new_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);

// Writes len bytes of data to a new file at tmp (file_tmp_create: the next serial where that name is
// taken, written back into tmp), fsync'd, bound for path
// (file_group_publish moves it there); on failure tmp is removed. 0 ok, -1 with "PATH: reason". Test
// gate VITMAE_FAULT_HOLD_AFTER_WRITE (file_test_gate) once written, before it is renamed or added to
// a group (file_write_atomic's too): a test moves its folder there.
int file_write_to(char *tmp, const char *path, const void *data, size_t len, char *err, size_t errlen);
// tmp (a file written whole and fsync'd, as file_write_to's) renamed over path, then path's folder
// fsync'd: the file is there after a power cut. On failure tmp is removed. tmp's name is no longer
// kept for the stop signals. 0 ok, -1 with "PATH: reason"; a folder whose sync fails after the rename
// leaves the new file in place, whole: -1 with "PATH: written, but its folder DIR could not be synced:
// reason" (the same for file_write_atomic and data/image.h's png_write).
int file_publish_atomic(const char *tmp, const char *path, char *err, size_t errlen);
// path's folder fsync'd (a file just renamed or linked there): 0, or -1 with "PATH: written, but its
// folder DIR could not be synced: reason", file_publish_atomic's words.
int file_sync_folder_of(const char *path, char *err, size_t errlen);
// The same two, of the n buffers parts[i] (lens[i] bytes each) one after another (a header, then data).
int file_write_parts_atomic(const char *path, const void *const *parts, const size_t *lens, int n, char *err,
                            size_t errlen);
int file_write_parts_to(char *tmp, const char *path, const void *const *parts, const size_t *lens, int n,
                        char *err, size_t errlen);

// Stop signals in the commands that publish outputs (embed, probe --out, reconstruct, attention):
// after file_cleanup_on_stop_signals, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGXCPU and
// SIGALRM (each unless ignored, as
// under nohup) remove this process's temporary files (named by file_tmp_name, made by
// file_tmp_create, each in its folder as held open from its creation: also when the folder was moved
// since) and the folders it made with file_mkdir_tracked that are still empty and still at their
// names (deepest first: cmd/output.h's output_mkdir_made makes --out and the folders above it so), let a
// file_group_publish under way finish (a group is published whole or not at all), sync the folders
// noted in a FileFolders for the command's end (below), then end the
// process by the same signal (exit status 128 + its number). The names are kept where the handler
// reads them without locks; a name is kept from file_tmp_name until file_tmp_forget (files.c's own
// functions forget the names they publish or remove).
void file_cleanup_on_stop_signals(void);
// For a command whose stop signals are its own (train and finetune, cmd/runfolder.h): its stop that
// ends the process at once (a second Ctrl-C) calls file_stop_now(sig) from its handler, which removes
// this process's temporary files as the handler above does (each from the folder it was made in;
// folders it made are not removed), then ends the process by sig (exit status 128 + its number); a
// thread inside a critical section (a file being made) ends it as it leaves. Async-signal-safe.
// file_stop_now_prepare() first, as that handler is installed: from then on a file is made before the
// cleanup looks for it, or not at all.
void file_stop_now_prepare(void);
void file_stop_now(int sig);
// Creates tmp (O_EXCL, 0666 less the umask) for writing: the fd, or -1 with errno set. A stop
// signal never finds it half made: created before the cleanup sees it, or not at all. Where tmp is a
// name of file_tmp_name's (or file_tmp_name_host's), in the buffer it was made in, and that name is
// taken (a file an earlier process of this pid left: a pid reused after a kill, whose serials count from
// 1 again), tmp is given the next serial in place, FILE_TMP_TRIES times at most, then EEXIST: the caller
// goes on with tmp as it is now (file_group_add, file_publish_atomic, file_tmp_remove).
enum { FILE_TMP_TRIES = 100 };
int file_tmp_create(char *tmp);
// mkstemp's: tmpl ends in "XXXXXX", which become six letters and digits that no file in its folder has
// (O_EXCL, tried again when taken); the file is made as file_tmp_create makes it, its name kept as
// file_tmp_name's (file_tmp_remove and file_tmp_forget as for them): a failure removes it from the
// folder it was made in, also when that folder was moved meanwhile (io/safetensors.c's checkpoints,
// ".NAME.tmp-XXXXXX"). The fd, or -1 with errno set (EINVAL: no "XXXXXX" at the end).
int file_tmp_create_unique(char *tmpl);
// The same, made as a hard link to the file target (linkat: never over a name that is taken, which stays
// as it is): 0, or -1 with errno set (cmd/runfolder.h's publish_latest, ".checkpoint.link.XXXXXX").
int file_tmp_link_unique(const char *target, char *tmpl);
// From now on a temporary file whose folder is spelled dir is made only while the folder at that name
// is still home (dev and ino): one made there after another folder was put at its name fails with
// ENOENT, and nothing is made. The run loop guards its run folder so (cmd/runloop.c): a folder moved
// and a new one made at its name between its look and a save took the checkpoint, split from its
// metrics.csv. dir NULL (or home NULL) ends the guard. Set and ended outside the threads that make files.
void file_guard_folder(const char *dir, const struct stat *home);
// name is kept for the cleanup as file_tmp_name's are (a file of this run's, made after this call,
// removed by a stop signal until file_tmp_forget): for a file named otherwise (cmd/output.h's probe of
// a folder, output_check_writable).
void file_tmp_keep(const char *name);
// tmp is renamed or removed: its name is no longer kept. file_tmp_remove: removed from the folder it
// was made in (held since file_tmp_create, also without the cleanup, wherever that folder is now; by
// its name when none is held), then forgotten. file_publish_atomic's failed rename removes it so.
void file_tmp_forget(const char *tmp);
void file_tmp_remove(const char *tmp);
// mkdir(dir, 0777), kept for the stop signals' cleanup (removed there when empty) until
// file_tmp_forget(dir). 0 made, 1 it was there already (not kept), -1 errno set.
int file_mkdir_tracked(const char *dir);

// The temporary name beside path that a file bound for path is written under first:
// "PATH.tmp.<pid>.<serial>", unique in this process (threads included); when that file name would pass
// 255 bytes, PATH's last part is cut to fit (a name of 250 bytes is written too). tmp holds at least
// strlen(path) + FILE_TMP_EXTRA bytes; -1 (tmp empty) when it is too small.
enum { FILE_TMP_EXTRA = 48 };
int file_tmp_name(const char *path, char *tmp, size_t tmplen);

// Leftovers of a process killed at once (SIGKILL, a power cut), which no stop signal removed, in a
// folder several processes may share (the --store, several machines too): a temporary name that names
// its maker's host and pid, so that a sweep removes only what a process of this host left that is gone.
// file_host_name: this host's name (gethostname) in host (n >= FILE_HOST_MAX); one with characters
// other than letters, digits, '.', '-' and '_' (or 65 bytes or more) as "hx-" and the 16 lowercase hex
// digits of the 64-bit FNV-1a hash of its bytes; "" only when gethostname fails or gives "" (then
// nothing is swept).
enum { FILE_HOST_MAX = 65, FILE_TMP_HOST_EXTRA = FILE_TMP_EXTRA + FILE_HOST_MAX };
void file_host_name(char *host, size_t n);
// file_tmp_name's, with the host: "PATH.tmp.<host>.<pid>.<serial>"; tmp holds at least strlen(path) +
// FILE_TMP_HOST_EXTRA bytes.
int file_tmp_name_host(const char *path, char *tmp, size_t tmplen);
// For a name's matcher: when p starts "<host>.<pid>" (host not empty, pid getpid's decimal), the pid
// in *pid and the rest of p after it; else NULL.
const char *file_name_host_pid(const char *p, const char *host, long *pid);
// Removes from the folder dir every regular file (never a link or a folder; never followed) whose name
// maker(name, host) says is a temporary name of this host's (host as file_host_name's, never "") made
// by a process that is gone: maker returns that pid, or 0 for a name that is not exactly one of its
// pattern (a user's file stays). Gone: kill(pid, 0) fails with ESRCH, or the process is a zombie
// (/proc/PID/stat's state 'Z' or 'X': killed, not yet reaped); this process, a live one or one this
// one may not signal keeps its files, and so does every other host's. Checked and removed in the
// folder as opened (unlinkat). The number removed, or -1 when dir cannot be listed.
long file_sweep_dead(const char *dir, long (*maker)(const char *name, const char *host));
// The same for the temporary files of the files names[0..n) (names in the folder dir, no '/') that
// file_tmp_name_host named "NAME.tmp.<host>.<pid>.<serial>" (NAME's first bytes where it cut the name
// to 255): those of this host whose process is gone, as above (the inference commands' outputs, before
// they write them: cmd/output.h, output_sweep_leftovers); and, there, those with this process's own pid
// that it does not keep (an earlier process's whose pid was reused; never one it made and holds). A
// name cut to 255 is matched by its kept first bytes: a gone process's temporary of another name
// with those first bytes goes too. A name without the host, another name's, a
// user's "NAME.tmp.notes" stay. The number removed, or -1 (dir not listed, out of memory).
long file_sweep_dead_tmps(const char *dir, const char *const *names, long n);

// A command's outputs, each written whole under its temporary name (file_tmp_name), published
// together by file_group_publish. Names are copied.
typedef struct {
    char *path;
    int (*ours)(const char *name);
} FileSweep;
// Folders whose syncs wait until a command's end: a command that publishes group after group into one
// folder (reconstruct, attention: a group an image) syncs it once, not once a group. Noted by
// file_group_publish from any thread (a lock in files.c). A stop signal (file_cleanup_on_stop_signals)
// syncs the folders noted so far before the process ends, so that the groups published stay after a
// power cut as after the command's own end.
typedef struct {
    char **dirs;
    char **firsts;   // per folder: the first file published into it, and how many were (its message)
    long *files;
    int n, cap;
    int *slots, nslots;   // a hash set of dirs (slot: index + 1, 0 free), so a folder is noted at once
} FileFolders;
typedef struct {
    char **tmps, **paths;
    int *dirs;   // per file: the folder it was made in, held (-1: not), so that a failed publish finds
                 // what it made there also when the folder was moved or removed meanwhile; files added
                 // one after another in one folder share one descriptor
    int n, cap;
    FileSweep *sweeps;   // file_group_sweep
    int nsweeps;
    FileFolders *later;   // NULL: the folders are synced as the group is published; else noted here
} FileGroup;
// Adds tmp -> path. 0, or -1 when out of memory (then tmp is removed and the caller reports it).
int file_group_add(FileGroup *g, const char *tmp, const char *path);
// The files of an earlier run that the group replaces as a whole (--force), so that what is left
// never mixes two runs: once file_group_publish with replace = 1 has published every file, it
// removes those of them that the group did not publish: path itself (ours NULL), or, with ours, every
// file directly in the folder path whose name ours(name) says is one the command writes there (a
// user's own file stays). Only regular files go (a link or a folder stays), compared with the group's
// paths as spelled ("DIR/name"). This is part of the group's all or nothing: a file that cannot be
// removed fails the group as a file that cannot be published does, and a stop signal finds all of it
// done or none. With replace = 0 nothing is removed (what is there is another command's). 0, or -1
// when out of memory.
int file_group_sweep(FileGroup *g, const char *path, int (*ours)(const char *name));
// Removes the temporary files not published and frees the group (for a run that gives up).
void file_group_discard(FileGroup *g);

// Moves every tmp to its path, in the order added, then frees the group (it may be used again).
// replace = 1 (--force): rename(2), replacing what is at path. replace = 0: a path that exists is
// never replaced (renameat2 with RENAME_NOREPLACE; link + unlink where the file system lacks it):
// another command may have written it since this one checked it before computing. The group is all
// or nothing: on any failure the temporary files are removed (also from a folder moved meanwhile: each
// file's folder is held open from file_group_add on), and so are the files this call had
// published (each only while it is still this call's), so that a group never mixes with another
// command's: with replace = 0, what is at the paths stays as that command left it (the first path
// decides between two groups that share it); with replace = 1, the files they had replaced are gone,
// as when the run had failed before. With replace = 1, the earlier run's files of file_group_sweep go
// once every file is published (and the group fails when one of them cannot). Then each folder of the
// paths is fsync'd once (the files themselves were as they were written: file_write_to, the PNGs of
// data/image.h), so that what was published is there after a power cut (one the file system cannot
// sync, EINVAL, or that cannot be opened to sync, a folder one may write in but not read, is left as
// it is). A folder whose sync fails leaves the group published: its files are in place and whole,
// only their names' durability is in doubt (FILE_UNSYNCED). With g->later the folders are noted there
// instead (one that cannot be noted, out of memory, is synced now), and file_folders_sync syncs them.
// Returns
//   0               all published;
//   FILE_TAKEN      a path exists (replace = 0): err "PATH: exists now (written by another command
//                   meanwhile); pass --force to replace it";
//   FILE_UNSYNCED   all published (and swept), but a folder's sync failed: err "PATH and N more: written,
//                   but their folder DIR could not be synced: reason" (PATH the first of the group's
//                   files in DIR; one file: file_publish_atomic's "PATH: written, but its folder ...");
//   -1              err "PATH: reason", nothing of the group published; "DIR: the folder is gone (moved
//                   or deleted during the run)" when PATH's folder is no longer where it was.
// Test gate VITMAE_FAULT_HOLD_BEFORE_PUBLISH (file_test_gate) before publishing, so that a test can run
// a second command meanwhile. A command that makes a folder for its outputs passes the gate itself,
// before it.
// Test gate VITMAE_FAULT_HOLD_AFTER_PUBLISH once a group is published (0 or FILE_UNSYNCED): a test
// stops the command between its files and its line of them.
enum { FILE_TAKEN = 1, FILE_UNSYNCED = 2 };
int file_group_publish(FileGroup *g, int replace, char *err, size_t errlen);
// The same for a command that says on stdout what it published (reconstruct's line of an image,
// attention's, embed's, probe's): a stop signal (file_cleanup_on_stop_signals) that comes once the
// publish has begun waits, as for the publish itself, until this thread calls file_stop_resume, once
// the line (or the failure's) is said and flushed; then the process ends. So files published never go
// without their line (a stop between the two ended the process: the files on disk, the line never
// said, and a rerun refused them as "already exists"). Called by the thread that says the line, which
// makes no file and waits for no thread that makes one until it resumes: a thread that would make a
// file once the stop has come waits for the end, which the hold holds back (file_group_publish and
// file_folders_sync on this thread meanwhile are fine). Nothing is held where the publish could not
// begin (out of memory), and file_stop_resume then does nothing.
int file_group_publish_held(FileGroup *g, int replace, char *err, size_t errlen);
void file_stop_resume(void);
// The seconds a held line (file_group_publish_held) may still wait for room on stdout once a stop signal
// has come: a reader that still reads takes it; one that reads no more costs the stop this much, then the
// line is given up (a second stop signal gives it up at once).
enum { FILE_LINE_GRACE_S = 2 };
// line (one line, no newline) said on stderr when the process ends by a stop signal from now on (the
// first given is kept): a failure the command's own end would have said, as standard output's.
void file_stop_note(const char *line);
// Each folder noted in f fsync'd once, then f emptied (it may be used again): called by the command
// after its last group, before it says it is done. 0, or -1 with err for the first folder that failed
// (the others are synced still) as file_group_publish's FILE_UNSYNCED says it, of every file the
// groups published into DIR ("PATH and N more", PATH the first). The files published stay where they are: each
// was on disk before its rename; only their names may not outlive a power cut. Test gate
// VITMAE_FAULT_HOLD_BEFORE_FOLDER_SYNC first (file_test_gate): a test stops the command there.
int file_folders_sync(FileFolders *f, char *err, size_t errlen);

// The commands' test gates (docs/testing.md, "Fault injection"): when the environment variable env
// names a file PATH that does not exist, the command makes PATH.held and waits (at most 120 s) until
// PATH exists; once it does, the gate lets every later pass through. A test waits for PATH.held (the
// command has reached the gate), does what it tries meanwhile, then makes PATH.
void file_test_gate(const char *env);
// fopen(path, mode) ("r", "a" or "a+") of a regular file only: opened without waiting (O_NONBLOCK, then
// cleared), so that a FIFO or a device under the name of a run's own file (metrics.csv) is refused
// with "not a regular file" instead of blocking the command before its signals can end it. NULL with
// errno set (ENOENT for a missing file under "r", EINVAL for one that is not regular) and "PATH:
// reason" in err.
FILE *file_open_regular(const char *path, const char *mode, char *err, size_t errlen);
// errno's strerror text as it is ("No space left on device", "File too large"): the one wording of a
// failed open, read, write, listing or rename, whatever the file or folder (a PNG, a .npy, a
// checkpoint, a data or --out folder, standard output), and the text a message is matched against
// (cmd/output.h's stop on a full disk); written into buf, which it returns, so that threads may call
// it at once (strerror's buffer is shared). A reason that is not a file's (a thread the system cannot
// start, the stack limit: kernels/cpu.c, data/loader.c) is said where it arises.
const char *file_reason(int e, char *buf, size_t n);
// A path as one word of a command a message tells the user to type ("continue with --resume RUN", "ln
// FILE DIR/checkpoint.safetensors", "chattr -i DIR"), so that a paste of it runs in a POSIX shell
// (docs/interface.md, section 1): path as it is where it holds only characters no shell splits or
// expands (letters, digits and _ - . / + , : = @ % ^), else in single quotes, each ' written '"'"'
// ("my run" is 'my run', "it's" is 'it'"'"'s': '\'' would reach the user as '\\'', a message writing
// its backslashes out); a path that begins with '-' is written from ./, "-steps" as ./-steps, as no
// command, vitmae's, ln or chattr, may read it as an option). A path named as the subject of a line or
// as a file is no word to type and is shown whole as it is. In buf (n bytes; FILE_SHELL_WORD_MAX holds any quoted path of 4400 bytes),
// returned; the one home of the quoting, below every layer that gives such advice (io/files.c's chattr).
enum { FILE_SHELL_WORD_MAX = 5 * 4400 + 5 };
const char *file_shell_word(const char *path, char *buf, size_t n);
// The reason an image at path could not be opened or stat'ed with errno e: file_reason's, except where
// path is itself a symbolic link to nothing (e ENOENT, lstat finds the link), which `ls` lists and
// "No such file or directory" would deny: "a symbolic link to TARGET, which does not exist", as the
// --out folders say it (cmd/output.c; docs/interface.md, section 2, "Bad files").
const char *file_path_reason(const char *path, int e, char *buf, size_t n);
// The reason a new file or folder could not be made in the folder dir with errno e: file_reason's,
// and where e is EPERM and dir carries the immutable attribute (chattr +i, which stops even root), that
// attribute named with the way off it: "Operation not permitted (an immutable folder: lsattr -d shows
// 'i'; chattr -i DIR lifts it)" (docs/interface.md, section 1); where e is EMFILE or
// ENFILE, the limit of open files that was reached, not the folder, named: "Too many open files (the
// limit of open files, ulimit -n 4, is reached)".
const char *file_folder_reason(const char *dir, int e, char *buf, size_t n);
// The bytes an unprivileged process may still write on the file system holding path (statvfs's
// f_bavail x f_frsize: root's reserve not counted), in *bytes; -1 with errno when it cannot be told.
// VITMAE_FAULT_FREE_BYTES=N makes every answer N (docs/testing.md, "Fault injection").
int file_free_bytes(const char *path, double *bytes);
// The text of a small regular file (a run's config.json), malloc'ed and NUL-ended; NULL when it is
// missing, not a plain file (a FIFO would block the read), larger than 16 MB or unreadable.
char *file_read_small(const char *path);
#endif
