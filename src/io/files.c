// Atomic whole-file writes and the publishing of a command's outputs (files.h).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <linux/fs.h>
#include "io/files.h"

// ---------------------------------------------------------------------------------------------
// The names a stop signal removes (files.h). A signal handler may run on any thread at any moment, so
// it takes no lock and calls only async-signal-safe functions (strlen, memcpy; unlinkat, unlink, lstat, rmdir; open,
// fsync and close to sync the noted folders; sigaction, pthread_sigmask, raise and _exit to end): the
// names sit in a list that is only ever pushed onto, whose nodes are reused, never freed. A node is
// FREE, BUSY (being filled), LIVE (a name kept), DYING (taken by the handler) or DONE (a folder the
// handler is through with). The threads' lookups (kept_live) compare the names of nodes that other
// threads may be refilling with new ones: a name is read there and rewritten (keep_name) only under
// names_lock, or the strcmp would race with the memcpy (a data race, tests/test_npy.c under tests/tsan.sh).
// The handler needs no lock: it reads only the names it took from LIVE to DYING, whose writing came
// before their LIVE, and it never writes a node field a thread reads. The creation of a
// kept file or folder and a group's publishing are critical sections: stop_state counts the threads
// inside them, and its STOPPING bit is set by the first stop signal. A signal that finds a thread
// inside waits for the last one to leave, which then ends the process; a thread that would enter
// after it waits for the end. So a file is either made before the cleanup looks for it or not made,
// and a group is published whole; a group published for a line (file_group_publish_held) keeps its
// section open until that line is out (file_stop_resume), so that it is said too.
// The user may move or rename an output folder while the command runs (docs/interface.md, section 1,
// "Stopped by a signal"): a file is removed from the folder it was made in, held open from its
// creation (dir), wherever that folder is now, never by its old name (which may name another folder's
// file by then); a folder this run made is removed only while its name still names it (dev, ino),
// else a new folder made at its old name would go. Files are kept, and their folders held, also in a
// command without the cleanup (train): a failed publish or write removes its temporary file from that
// folder too (file_tmp_remove), not by the old name, which the folder no longer has; and the stop at
// once of such a command (file_stop_now) removes them as the cleanup does.
enum { NODE_FREE, NODE_BUSY, NODE_LIVE, NODE_DYING, NODE_DONE };
typedef struct KeptName {
    struct KeptName *next;
    int state, is_dir;
    int dir;            // a file's: its folder held (a HeldFolder's fd), or -1: reached by its name
    dev_t dev;          // a folder's: what it is, once made (ino 0: not known, reached by its name)
    ino_t ino;
    size_t tmp_at;      // a name of tmp_name's: where its ".tmp." begins (0: another name), for
    int tmp_host;       // file_tmp_create's next name; tmp_host: with the host (file_tmp_name_host)
    size_t cap;
    char name[];
} KeptName;
static KeptName *kept;
static int keeping;                 // set once by file_cleanup_on_stop_signals
static int counting;                // the critical sections counted: set with keeping, or by file_stop_now_prepare
static unsigned stop_state;         // STOPPING | the number of threads inside a critical section
static int stop_signal;
#define STOPPING (1u << 30)
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;   // a node's name: kept_live's reads, keep_name's rewrites

static KeptName *keep_name(const char *name, int is_dir) {
    if (is_dir && !__atomic_load_n(&keeping, __ATOMIC_SEQ_CST)) return NULL;
    size_t n = strlen(name) + 1;
    for (KeptName *k = __atomic_load_n(&kept, __ATOMIC_SEQ_CST); k; k = k->next) {
        int expect = NODE_FREE;
        if (k->cap >= n &&
            __atomic_compare_exchange_n(&k->state, &expect, NODE_BUSY, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&names_lock);   // another thread's kept_live may be comparing the old name
            memcpy(k->name, name, n);
            pthread_mutex_unlock(&names_lock);
            k->is_dir = is_dir;
            k->dir = -1;
            k->ino = 0;
            k->tmp_at = 0;
            __atomic_store_n(&k->state, NODE_LIVE, __ATOMIC_SEQ_CST);
            return k;
        }
    }
    size_t cap = n < 256 ? 256 : n;
    KeptName *k = malloc(sizeof *k + cap);
    if (!k) return NULL;   // out of memory: a stop signal leaves this one file behind
    k->cap = cap;
    k->is_dir = is_dir;
    k->dir = -1;
    k->ino = 0;
    k->tmp_at = 0;
    memcpy(k->name, name, n);
    k->state = NODE_LIVE;
    k->next = __atomic_load_n(&kept, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(&kept, &k->next, k, 1, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
    return k;
}

// The kept name's node while it is LIVE, or NULL. (A thread's own name: its node stays LIVE, and its
// name as written, until that thread forgets it.)
static KeptName *kept_live(const char *name) {
    KeptName *found = NULL;
    pthread_mutex_lock(&names_lock);
    for (KeptName *k = __atomic_load_n(&kept, __ATOMIC_SEQ_CST); k && !found; k = k->next)
        if (__atomic_load_n(&k->state, __ATOMIC_SEQ_CST) == NODE_LIVE && !strcmp(k->name, name)) found = k;
    pthread_mutex_unlock(&names_lock);
    return found;
}

// The folders of the kept files, each held open once however many files are made in it (a
// descriptor per file ran `attention --layer all --head all` out of descriptors, as file_group_add says), until
// the last of its files is forgotten. Looked up and released by the threads under a lock; the
// handler only reads a node's dir, which stays open while the node is LIVE or DYING (a DYING node is
// never forgotten: its folder is never released).
typedef struct HeldFolder {
    struct HeldFolder *next;
    int fd, users;
    dev_t dev;
    ino_t ino;
    char name[];
} HeldFolder;
static HeldFolder *held_folders;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *base_name(const char *path);
static size_t folder_len(const char *path);

// tmp's folder held for the cleanup: its fd (shared with the other files there while the folder is
// still the one at that name), or -1 (out of memory or descriptors: the file is reached by its name).
static int hold_folder(const char *tmp) {
    size_t d = folder_len(tmp);
    char *name = strndup(d ? tmp : ".", d ? d : 1);
    if (!name) return -1;
    int fd = -1;
    struct stat now;
    pthread_mutex_lock(&held_lock);
    for (HeldFolder *h = held_folders; h && fd < 0; h = h->next)
        if (!strcmp(h->name, name) && stat(name, &now) == 0 && now.st_dev == h->dev && now.st_ino == h->ino) {
            h->users++;
            fd = h->fd;
        }
    HeldFolder *h = fd < 0 ? malloc(sizeof *h + strlen(name) + 1) : NULL;
    if (h && (h->fd = open(name, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0 && fstat(h->fd, &now) == 0) {
        h->users = 1;
        h->dev = now.st_dev;
        h->ino = now.st_ino;
        strcpy(h->name, name);
        h->next = held_folders;
        held_folders = h;
        fd = h->fd;
    } else if (h) {
        if (h->fd >= 0) close(h->fd);
        free(h);
    }
    pthread_mutex_unlock(&held_lock);
    free(name);
    return fd;
}

// One of fd's files forgotten: the folder closed with its last.
static void release_folder(int fd) {
    pthread_mutex_lock(&held_lock);
    for (HeldFolder **p = &held_folders; *p; p = &(*p)->next)
        if ((*p)->fd == fd) {
            HeldFolder *h = *p;
            if (--h->users == 0) { *p = h->next; close(h->fd); free(h); }
            break;
        }
    pthread_mutex_unlock(&held_lock);
}

void file_tmp_keep(const char *name) {
    keep_name(name, 0);
}

void file_tmp_forget(const char *name) {
    KeptName *k = kept_live(name);
    int expect = NODE_LIVE, dir = k && !k->is_dir ? k->dir : -1;   // read while LIVE: the node may be reused once FREE
    if (k && __atomic_compare_exchange_n(&k->state, &expect, NODE_FREE, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
        dir >= 0)
        release_folder(dir);
}

// The folder tmp was made in, held since file_tmp_create (shared: not to be closed), or -1.
static int tmp_folder(const char *tmp) {
    KeptName *k = kept_live(tmp);
    return k && !k->is_dir ? k->dir : -1;
}

// Removes tmp from dir, the folder it was made in (wherever that folder is now), or by its name when
// none is held (dir -1). Never by its name when a folder is held: after a move, the name finds another
// folder's file or none, and an unlinkat that failed there would fail in the same folder by name too.
static void unlink_from(int dir, const char *tmp) {
    if (dir >= 0) unlinkat(dir, base_name(tmp), 0);
    else unlink(tmp);
}

void file_tmp_remove(const char *tmp) {
    unlink_from(tmp_folder(tmp), tmp);
    file_tmp_forget(tmp);
}

static int sync_folder(const char *path, size_t dirlen);
// The FileFolders that file_group_publish notes into (set inside its critical section), or NULL: the
// folders a stop signal syncs, as the command's end would have (files.h).
static FileFolders *noted_folders;

// A publish held for its line (file_group_publish_held) until file_stop_resume: the thread that holds it,
// and standard output's flags before a stop signal made it non-blocking (-1: left as they were). The line
// waits for a reader of stdout; one that reads no more (a pipe's reader stopped, `| less` left on its
// page) blocked that write, and the stop signal waited for it without end. The signal makes stdout
// non-blocking: the line's write, restarted, fails at once (EAGAIN: the line is lost, as no one read it),
// the section is left, and the process ends, its flags given back first (the terminal or pipe is shared).
static volatile sig_atomic_t line_held = 0;
static pthread_t line_holder;
static volatile sig_atomic_t stdout_flags_before = -1;
// The grace a held line has once a stop comes: an alarm (SIGALRM's handler is this file's:
// line_grace_ours) armed by the first stop signal (line_grace_armed until it rings).
static volatile sig_atomic_t line_grace_ours = 0, line_grace_armed = 0;
// A line said on stderr as the process ends by a signal (file_stop_note), "" for none.
static char stop_note[512];
static volatile sig_atomic_t stop_note_len = 0;

// The cleanup, then the signal's own end (async-signal-safe): files first, then the folders they were
// in, then the folders of the groups published whose syncs waited for the command's end. No thread is
// inside a critical section now, so none is noting a folder.
static void end_by_signal(int sig) {
    for (KeptName *k = __atomic_load_n(&kept, __ATOMIC_SEQ_CST); k; k = k->next) {
        int expect = NODE_LIVE;
        if (!__atomic_compare_exchange_n(&k->state, &expect, NODE_DYING, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) ||
            k->is_dir)
            continue;
        if (k->dir >= 0) {
            const char *leaf = k->name;   // base_name's, by hand: the handler calls no more of the C library than it must
            for (const char *c = k->name; *c; c++)
                if (*c == '/') leaf = c + 1;
            unlinkat(k->dir, leaf, 0);
        } else {
            unlink(k->name);
        }
    }
    // Folders deepest first, each only while empty: a pass removes those that are empty now, and the
    // folders above them are tried again by the next pass (a reused node puts a name anywhere in the list).
    for (int removed = 1; removed;) {
        removed = 0;
        for (KeptName *k = __atomic_load_n(&kept, __ATOMIC_SEQ_CST); k; k = k->next)
            if (__atomic_load_n(&k->state, __ATOMIC_SEQ_CST) == NODE_DYING && k->is_dir) {
                struct stat st;
                int ours = !k->ino || (lstat(k->name, &st) == 0 && st.st_dev == k->dev && st.st_ino == k->ino);
                if (!ours || rmdir(k->name) == 0) {
                    removed |= ours;
                    // Gone, or not ours: not tried again. A state, not is_dir = 0: a thread forgetting
                    // this folder may be reading is_dir (file_tmp_forget), and only the state is atomic.
                    __atomic_store_n(&k->state, NODE_DONE, __ATOMIC_SEQ_CST);
                }
            }
    }
    FileFolders *noted = __atomic_load_n(&noted_folders, __ATOMIC_SEQ_CST);
    for (int i = 0; noted && i < noted->n; i++) sync_folder(noted->dirs[i], strlen(noted->dirs[i]));
    if (stdout_flags_before != -1) fcntl(STDOUT_FILENO, F_SETFL, (int)stdout_flags_before);
    if (stop_note_len > 0) {
        ssize_t w = write(STDERR_FILENO, stop_note, (size_t)stop_note_len);
        (void)w;   // a stderr that takes nothing: the end as it is
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);
}

// The stop signals' handler (file_cleanup_on_stop_signals), and a command's own handler's end at once.
// The held line given up (line_held): stdout made non-blocking, so that its write, restarted, fails
// at once, and the holding thread's write interrupted where another thread took the signal.
static void give_up_held_line(int sig) {
    int fl = fcntl(STDOUT_FILENO, F_GETFL);
    if (fl != -1 && !(fl & O_NONBLOCK)) {
        if (stdout_flags_before == -1) stdout_flags_before = fl;
        fcntl(STDOUT_FILENO, F_SETFL, fl | O_NONBLOCK);
    }
    if (!pthread_equal(pthread_self(), line_holder)) pthread_kill(line_holder, sig);
}

void file_stop_now(int sig) {
    int saved = errno;
    // The held line's grace ended (alarm, below): given up now, the stop's own signal kept for the end.
    if (sig == SIGALRM && line_grace_armed) {
        line_grace_armed = 0;
        if (line_held) give_up_held_line(sig);
        errno = saved;
        return;
    }
    __atomic_store_n(&stop_signal, sig, __ATOMIC_SEQ_CST);
    unsigned old = __atomic_fetch_or(&stop_state, STOPPING, __ATOMIC_SEQ_CST);
    // A second signal while the first one's end is under way, or threads inside a critical section
    // (the last one out ends the process): nothing more here.
    if (!(old & STOPPING) && !(old & ~STOPPING)) end_by_signal(sig);
    // ... but a line held for may wait on a stdout nobody reads: a reader that still reads (a slow one)
    // takes it within FILE_LINE_GRACE_S seconds, after which (or at a second stop signal) it is given up.
    if ((old & ~STOPPING) && line_held) {
        if (!(old & STOPPING) && line_grace_ours) {
            line_grace_armed = 1;
            alarm(FILE_LINE_GRACE_S);
        } else {
            give_up_held_line(sig);
        }
    }
    errno = saved;
}

// This thread's critical sections open, one inside another (a held publish's line said through
// file_folders_sync's, below): the thread is counted once, by its outermost, so that it never waits
// at an inner one for the end its own outer one holds back.
static _Thread_local int stop_depth;
// Whether this thread holds a stop signal back for the line of what it published (file_group_publish_held).
static _Thread_local int stop_held;

static void stop_enter(void) {
    if (!__atomic_load_n(&counting, __ATOMIC_SEQ_CST)) return;
    if (stop_depth++) return;
    if (__atomic_fetch_add(&stop_state, 1, __ATOMIC_SEQ_CST) & STOPPING) {
        __atomic_fetch_sub(&stop_state, 1, __ATOMIC_SEQ_CST);   // the signal did not count this thread
        for (;;) pause();   // the process is ending
    }
}

static void stop_leave(void) {
    if (!__atomic_load_n(&counting, __ATOMIC_SEQ_CST)) return;
    if (--stop_depth) return;
    unsigned old = __atomic_fetch_sub(&stop_state, 1, __ATOMIC_SEQ_CST);
    if ((old & STOPPING) && (old & ~STOPPING) == 1) end_by_signal(__atomic_load_n(&stop_signal, __ATOMIC_SEQ_CST));
}

void file_stop_now_prepare(void) {
    __atomic_store_n(&counting, 1, __ATOMIC_SEQ_CST);
}

void file_cleanup_on_stop_signals(void) {
    __atomic_store_n(&counting, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&keeping, 1, __ATOMIC_SEQ_CST);
    // SIGUSR1, SIGUSR2, SIGXCPU and SIGALRM too: a batch system's warning or a script's timer ends such a
    // command as a Ctrl-C does, never with its temporary files left where --force leaves them too.
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGXCPU, SIGALRM};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) || old.sa_handler == SIG_IGN) continue;   // nohup, a background job
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = file_stop_now;
        sa.sa_flags = SA_RESTART | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
        if (sigs[i] == SIGALRM) line_grace_ours = 1;
    }
}

// file_guard_folder's folder and its identity (guard_dir NULL: none guarded).
static char *guard_dir;
static dev_t guard_dev;
static ino_t guard_ino;

void file_guard_folder(const char *dir, const struct stat *home) {
    free(guard_dir);
    guard_dir = dir && home ? strdup(dir) : NULL;   // out of memory: unguarded, as before the guard
    if (guard_dir) { guard_dev = home->st_dev; guard_ino = home->st_ino; }
}

// Whether tmp is to be made in the guarded folder (its name's folder is guard_dir, as spelled) while
// another folder is at that name: at the folder it would be made in (AT_FDCWD: looked up by name).
static int guard_refuses(const char *tmp, int at) {
    size_t d = folder_len(tmp);
    if (!guard_dir || strlen(guard_dir) != d || memcmp(guard_dir, tmp, d)) return 0;
    struct stat now;
    char *name = at == AT_FDCWD ? strndup(tmp, d) : NULL;
    int ok = at != AT_FDCWD ? fstat(at, &now) == 0 : name && stat(name, &now) == 0;
    free(name);
    return !ok || now.st_dev != guard_dev || now.st_ino != guard_ino;
}

// tmp made: a new file (target NULL: its fd), or a hard link to target (0); -1 with errno set (EEXIST:
// the name is taken, and what has it is left as it is).
static int tmp_make(const char *tmp, const char *target) {
    stop_enter();
    // Made in the folder held for the cleanup (openat, linkat), so that the file is where the cleanup
    // looks even when the folder is moved in between.
    KeptName *k = kept_live(tmp);
    int dir = k && k->dir < 0 && !k->is_dir ? hold_folder(tmp) : -1;
    if (dir >= 0) k->dir = dir;
    int at = k && k->dir >= 0 ? k->dir : AT_FDCWD;
    const char *name = at == AT_FDCWD ? tmp : base_name(tmp);
    // Never in another folder put at the guarded one's name: looked at in the very folder the file is
    // made in, so that a folder moved after the look took the file with it (where a rename by name
    // then finds nothing to move).
    int fd = guard_refuses(tmp, at) ? (errno = ENOENT, -1)
             : target ? linkat(AT_FDCWD, target, at, name, 0)
                      : openat(at, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    int saved = errno;
    stop_leave();
    errno = saved;
    return fd;
}

static int tmp_name(const char *path, char *tmp, size_t tmplen, const char *host);

// tmp (a name of tmp_name's, taken) given the next serial in place: "PATH.tmp.[<host>.]<pid>.<serial>"
// of the same PATH as cut (cut again where a longer serial passes 255 bytes), kept instead of the old one.
// tmp's buffer holds the name as its caller sized it (io/files.h: strlen(path) + FILE_TMP_EXTRA, or
// FILE_TMP_HOST_EXTRA), which holds any serial. 0, or -1 for a name of another kind (or out of memory).
static int tmp_next_name(char *tmp) {
    KeptName *k = kept_live(tmp);
    if (!k || k->is_dir || !k->tmp_at) return -1;
    size_t at = k->tmp_at, cap = at + (k->tmp_host ? FILE_TMP_HOST_EXTRA : FILE_TMP_EXTRA);
    char host[FILE_HOST_MAX], *path = strndup(tmp, at), *next = malloc(cap);
    if (k->tmp_host) file_host_name(host, sizeof host);
    int rc = path && next ? tmp_name(path, next, cap, k->tmp_host ? host : NULL) : -1;
    if (!rc) {
        file_tmp_forget(tmp);
        memcpy(tmp, next, strlen(next) + 1);
    }
    free(path);
    free(next);
    return rc;
}

int file_tmp_create(char *tmp) {
    // A name taken is a file left by an earlier process of this pid (a pid reused after a kill, the
    // serials counted from 1 again): the next serial, as mkstemp tries another name, never the
    // false "File exists" of an output that does not exist.
    for (int tries = 0;; tries++) {
        int fd = tmp_make(tmp, NULL);
        if (fd >= 0 || errno != EEXIST || tries == FILE_TMP_TRIES) return fd;
        if (tmp_next_name(tmp)) { errno = EEXIST; return -1; }
    }
}

// file_tmp_create_unique's and file_tmp_link_unique's: tmpl made (tmp_make) under a name of its own.
static int tmp_make_unique(char *tmpl, const char *target) {
    size_t n = strlen(tmpl);
    if (n < 6 || strcmp(tmpl + n - 6, "XXXXXX")) { errno = EINVAL; return -1; }
    static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static uint64_t serial;
    for (int tries = 0; tries < 100; tries++) {
        // mkstemp's six letters, but made here: the file is kept and made in its folder as held
        // (file_tmp_create), so that a failure removes it wherever that folder went (mkstemp gives no openat).
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        uint64_t r = (uint64_t)now.tv_nsec ^ (uint64_t)now.tv_sec << 30 ^ (uint64_t)getpid() << 40 ^
                     __atomic_add_fetch(&serial, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
        r ^= r >> 31; r *= 0xbf58476d1ce4e5b9ull; r ^= r >> 27;   // splitmix64's finaliser: all bits mixed
        for (int i = 0; i < 6; i++, r /= 62) tmpl[n - 6 + i] = letters[r % 62];
        file_tmp_keep(tmpl);
        int fd = tmp_make(tmpl, target), e = errno;
        if (fd >= 0) return fd;
        file_tmp_forget(tmpl);
        errno = e;
        if (e != EEXIST) return -1;
    }
    return -1;   // errno EEXIST
}

int file_tmp_create_unique(char *tmpl) {
    return tmp_make_unique(tmpl, NULL);
}

int file_tmp_link_unique(const char *target, char *tmpl) {
    return tmp_make_unique(tmpl, target);
}

int file_mkdir_tracked(const char *dir) {
    stop_enter();
    KeptName *k = keep_name(dir, 1);
    int rc = mkdir(dir, 0777) == 0 ? 0 : errno == EEXIST ? 1 : -1;
    int saved = errno;
    struct stat st;
    if (!rc && k && lstat(dir, &st) == 0) { k->dev = st.st_dev; k->ino = st.st_ino; }
    // Its own node forgotten, not the first LIVE one of that name (kept_live): a folder there already is
    // often one this run made and keeps (output_mkdir_p walks every folder above), whose node, with the
    // folder's identity (dev, ino), went instead, and this one, which has none, stayed: a stop signal then
    // removed by its name an empty folder made there by someone else once the run's had moved.
    int live = NODE_LIVE;
    if (rc && k) __atomic_compare_exchange_n(&k->state, &live, NODE_FREE, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    stop_leave();
    errno = saved;
    return rc;
}

// file_tmp_name's and file_tmp_name_host's: host NULL, or this host's name (file_host_name) put
// before the pid.
static int tmp_name(const char *path, char *tmp, size_t tmplen, const char *host) {
    static unsigned serial;   // threads of one process stage files side by side
    unsigned k = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
    char suffix[FILE_TMP_HOST_EXTRA];
    int ns = host ? snprintf(suffix, sizeof suffix, ".tmp.%s.%ld.%u", host, (long)getpid(), k)
                  : snprintf(suffix, sizeof suffix, ".tmp.%ld.%u", (long)getpid(), k);
    // The name within the 255 bytes of a file name: a long one's leaf is cut to make room (the
    // serial keeps it unique), else a name the system takes could not be written ("File name too long").
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash + 1 - path) : 0, leaf = strlen(path) - dir;
    if (leaf + (size_t)ns > 255) leaf = 255 - (size_t)ns;
    int n = snprintf(tmp, tmplen, "%.*s%s", (int)(dir + leaf), path, suffix);
    if (n < 0 || (size_t)n >= tmplen) { if (tmplen) tmp[0] = 0; return -1; }
    KeptName *kept_tmp = keep_name(tmp, 0);
    if (kept_tmp) { kept_tmp->tmp_at = dir + leaf; kept_tmp->tmp_host = host != NULL; }   // file_tmp_create's next name
    return 0;
}

int file_tmp_name(const char *path, char *tmp, size_t tmplen) {
    return tmp_name(path, tmp, tmplen, NULL);
}

int file_tmp_name_host(const char *path, char *tmp, size_t tmplen) {
    char host[FILE_HOST_MAX];
    file_host_name(host, sizeof host);
    return tmp_name(path, tmp, tmplen, host);
}

void file_host_name(char *host, size_t n) {
    char name[256];
    size_t len = 0;
    if (!n) return;
    host[0] = 0;
    if (gethostname(name, sizeof name) || !memchr(name, 0, sizeof name) || !name[0]) return;
    // Only the characters of a host name (RFC 1123, and '_'), so that a name made of it is one file
    // name with no room for doubt where the host ends. A name with a byte of another kind ('/', ' ',
    // ':', a UTF-8 letter) or too long is told by "hx-" and the 16 hex digits of its bytes' 64-bit
    // FNV-1a hash: still this host's own name, so its leftovers are swept too.
    int ok = 1;
    for (len = 0; name[len]; len++)
        ok = ok && ((name[len] >= 'a' && name[len] <= 'z') || (name[len] >= 'A' && name[len] <= 'Z') ||
                    (name[len] >= '0' && name[len] <= '9') || strchr("._-", name[len]));
    if (ok && len < FILE_HOST_MAX && len < n) { memcpy(host, name, len + 1); return; }
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 1099511628211ULL;
    if (n > 19) snprintf(host, n, "hx-%016llx", (unsigned long long)h);
}

const char *file_name_host_pid(const char *p, const char *host, long *pid) {
    size_t hl = strlen(host);
    if (!hl || strncmp(p, host, hl) || p[hl] != '.') return NULL;
    p += hl + 1;
    long v = 0;
    int digits = 0;
    // getpid's decimal as written: no sign, no leading zero, at most 10 digits within an int.
    for (; *p >= '0' && *p <= '9' && digits < 11; p++, digits++) v = v * 10 + (*p - '0');
    if (!digits || digits > 10 || p[-digits] == '0' || v > INT_MAX) return NULL;
    *pid = v;
    return p;
}

// Whether process pid is gone: kill says ESRCH, or it is a zombie (killed, not yet reaped by its
// parent: kill(pid, 0) still succeeds, /proc/PID/stat's state is 'Z', or 'X' as it goes). A live one,
// or one this process may not signal (EPERM: alive, another user's), is not.
static int pid_gone(long pid) {
    if (kill((pid_t)pid, 0) != 0) return errno == ESRCH;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT;   // gone between the two looks
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0) return 0;
    buf[r] = 0;
    // "PID (COMM) S ...": COMM may hold ')' and spaces; the state follows the last ')'.
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

// Whether a name this process keeps (LIVE: a temporary it made and still holds) has the last part leaf.
static int kept_leaf_live(const char *leaf) {
    int found = 0;
    pthread_mutex_lock(&names_lock);
    for (KeptName *k = __atomic_load_n(&kept, __ATOMIC_SEQ_CST); k && !found; k = k->next) {
        if (__atomic_load_n(&k->state, __ATOMIC_SEQ_CST) != NODE_LIVE) continue;
        const char *slash = strrchr(k->name, '/');
        found = !strcmp(slash ? slash + 1 : k->name, leaf);
    }
    pthread_mutex_unlock(&names_lock);
    return found;
}

// file_sweep_dead's and file_sweep_dead_tmps': maker given ctx too. own: a name with this process's
// pid that it does not keep (kept_leaf_live) is an earlier process's of the same pid (a pid reused),
// removed too; else this process's names all stay.
static long sweep_dead(const char *dir, long (*maker)(const char *name, const char *host, const void *ctx),
                       const void *ctx, int own) {
    char host[FILE_HOST_MAX];
    file_host_name(host, sizeof host);
    if (!host[0]) return 0;   // no name to tell this host's files by: none is certainly dead
    // The folder held while it is listed: each name is checked and removed in the folder listed
    // (fstatat, unlinkat), also when the folder is moved meanwhile, never through a link.
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) { if (fd >= 0) close(fd); return -1; }
    long removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = maker(e->d_name, host, ctx);
        struct stat st;
        // A process of this host that is gone (pid_gone: a zombie too). A live one, or one this process
        // may not signal (EPERM: alive, another user's), keeps its file; so does this one (own: what it made).
        if (pid <= 0) continue;
        if (pid == (long)getpid() ? !own || kept_leaf_live(e->d_name) : !pid_gone(pid)) continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) removed++;
    }
    closedir(d);
    return removed;
}

typedef struct { long (*maker)(const char *name, const char *host); } PlainMaker;
static long plain_maker(const char *name, const char *host, const void *ctx) {
    return ((const PlainMaker *)ctx)->maker(name, host);
}

long file_sweep_dead(const char *dir, long (*maker)(const char *name, const char *host)) {
    PlainMaker m = {maker};
    return sweep_dead(dir, plain_maker, &m, 0);
}

// The names whose temporaries file_sweep_dead_tmps removes, sorted (strcmp).
typedef struct { const char **v; long n; } SortedNames;

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// The pid in a temporary name of file_tmp_name_host's, "<NAME>.tmp.<host>.<pid>.<serial>" made on
// host, whose NAME is one of ctx's names, or that name's first bytes where tmp_name cut it to fit 255
// bytes (the temporary name is then 255 bytes long); 0 for any other name (a user's "x.npy.tmp.notes",
// another host's, "NAME.tmp.<pid>.<serial>" with no host, a name not in the list).
static long tmp_leftover(const char *name, const char *host, const void *ctx) {
    const SortedNames *s = ctx;
    size_t len = strlen(name), hl = strlen(host);
    // From the end: the serial's digits (no leading zero), then ".<pid>" and ".tmp.<host>" before it.
    const char *p = name + len;
    int digits = 0;
    while (p > name && p[-1] >= '0' && p[-1] <= '9' && digits < 11) { p--; digits++; }
    if (!digits || digits > 10 || *p == '0' || p == name || p[-1] != '.') return 0;
    const char *serial_dot = p - 1;
    p = serial_dot;
    for (digits = 0; p > name && p[-1] >= '0' && p[-1] <= '9' && digits < 11; digits++) p--;
    size_t tail = 5 + hl + 1 + (size_t)digits;   // ".tmp.<host>.<pid>"
    if (!digits || (size_t)(serial_dot - name) <= tail) return 0;
    const char *at = serial_dot - tail;   // where ".tmp." begins: NAME is name[0 .. at)
    long pid;
    if (strncmp(at, ".tmp.", 5) || file_name_host_pid(at + 5, host, &pid) != serial_dot) return 0;
    // The first of the sorted names that is not below NAME: NAME itself, or else the first that begins
    // with it (all that do follow it at once).
    size_t bl = (size_t)(at - name);
    long lo = 0, hi = s->n;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        int c = strncmp(s->v[mid], name, bl);
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo == s->n || strncmp(s->v[lo], name, bl)) return 0;
    return !s->v[lo][bl] || len == 255 ? pid : 0;
}

long file_sweep_dead_tmps(const char *dir, const char *const *names, long n) {
    SortedNames s = {malloc((size_t)(n > 0 ? n : 1) * sizeof *s.v), n};
    if (!s.v) return -1;
    if (n > 0) {
        memcpy(s.v, names, (size_t)n * sizeof *s.v);
        qsort(s.v, (size_t)n, sizeof *s.v, cmp_names);
    }
    long removed = sweep_dead(dir, tmp_leftover, &s, 1);
    free(s.v);
    return removed;
}

int file_write_parts_to(char *tmp, const char *path, const void *const *parts, const size_t *lens, int n,
                        char *err, size_t errlen) {
    char why[128];
    int fd = file_tmp_create(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%.*s: %s", FILE_NAME_CUT, path, file_reason(errno, why, sizeof why));
        file_tmp_forget(tmp);
        return -1;
    }
    int failed = 0, saved = 0;
    for (int i = 0; i < n && !failed; i++) {
        const char *p = parts[i];
        for (size_t done = 0; done < lens[i] && !failed;) {
            ssize_t w = write(fd, p + done, lens[i] - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) { failed = 1; saved = w < 0 ? errno : EIO; }
            else done += (size_t)w;
        }
    }
    if (!failed && fsync(fd)) { failed = 1; saved = errno; }
    if (close(fd) && !failed) { failed = 1; saved = errno; }
    if (!failed) file_test_gate("VITMAE_FAULT_HOLD_AFTER_WRITE");   // tests: its folder moved before it is published
    if (failed) {
        file_tmp_remove(tmp);
        snprintf(err, errlen, "%.*s: %s", FILE_NAME_CUT, path, file_reason(saved, why, sizeof why));
    }
    return failed ? -1 : 0;
}

int file_write_to(char *tmp, const char *path, const void *data, size_t len, char *err, size_t errlen) {
    return file_write_parts_to(tmp, path, &data, &len, 1, err, errlen);
}

// fsync of the folder that holds path (its first dirlen bytes; 0: the current folder), so that a
// rename into it outlives a power cut: 0, or errno. A file system that cannot sync a folder (EINVAL)
// has done what it can, and so has a folder one may write in but not read (mode 0733: it cannot be
// opened to sync), where the files were written as before the syncs (docs/interface.md, section 1).
static int sync_folder(const char *path, size_t dirlen) {
    char dir[4200];
    if (dirlen >= sizeof dir) return ENAMETOOLONG;
    if (dirlen) memcpy(dir, path, dirlen);
    else dir[dirlen++] = '.';
    dir[dirlen] = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno == EACCES ? 0 : errno;
    int e = fsync(fd) && errno != EINVAL && errno != EROFS ? errno : 0;
    close(fd);
    return e;
}

// n bytes of a name as a message says them: at most FILE_NAME_CUT ("%.*s").
static int name_cut(size_t n) {
    return n < FILE_NAME_CUT ? (int)n : FILE_NAME_CUT;
}

// The length of path's folder part ("DIR/name": 3, "/name": 1, "name": 0).
static size_t folder_len(const char *path) {
    const char *slash = strrchr(path, '/');
    return !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
}

// A folder whose sync failed (errno e) once the files were renamed into it, path the first of the
// nfiles written there: "PATH: written, but its folder DIR could not be synced: why", with more
// than one "PATH and N more: written, but their folder DIR ...". The one wording of it, whether a
// file was written alone or in a group (docs/interface.md, section 1): the files are in place, whole.
static void say_unsynced(const char *path, long nfiles, int e, char *err, size_t errlen) {
    char why[128], more[48] = "";
    size_t d = folder_len(path);
    if (nfiles > 1) snprintf(more, sizeof more, " and %ld more", nfiles - 1);
    snprintf(err, errlen, "%.*s%s: written, but %s folder %.*s could not be synced: %s", FILE_NAME_CUT, path, more,
             nfiles > 1 ? "their" : "its", d ? name_cut(d) : 1, d ? path : ".", file_reason(e, why, sizeof why));
}

// Whether path is in the folder that is the first d bytes of other (folder_len(other) == d).
static int same_folder(const char *path, const char *other, size_t d) {
    return folder_len(path) == d && !strncmp(path, other, d);
}

int file_publish_atomic(const char *tmp, const char *path, char *err, size_t errlen) {
    char why[128];
    int e = rename(tmp, path) ? errno : 0;
    if (e) file_tmp_remove(tmp);   // from its folder as held: moved meanwhile, the old name finds nothing
    else file_tmp_forget(tmp);
    if (e) { snprintf(err, errlen, "%.*s: %s", FILE_NAME_CUT, path, file_reason(e, why, sizeof why)); return -1; }
    // The file is in place, whole: only its name's durability is in doubt, and the message says so.
    return file_sync_folder_of(path, err, errlen);
}

int file_sync_folder_of(const char *path, char *err, size_t errlen) {
    int e = sync_folder(path, folder_len(path));
    if (e) say_unsynced(path, 1, e, err, errlen);
    return e ? -1 : 0;
}

static int move_noreplace(const char *tmp, const char *path);

// file_write_parts_atomic and file_write_new_atomic: the parts to a temporary file, then published at
// path over what is there (file_publish_atomic) or, replace 0, over nothing (move_noreplace); errno as
// io/files.h says of file_write_new_atomic.
static int write_atomic(const char *path, const void *const *parts, const size_t *lens, int n, int replace, char *err,
                        size_t errlen) {
    size_t tlen = strlen(path) + FILE_TMP_EXTRA;
    char *tmp = malloc(tlen);
    if (!tmp) { snprintf(err, errlen, "%.*s: out of memory", FILE_NAME_CUT, path); errno = ENOMEM; return -1; }
    file_tmp_name(path, tmp, tlen);
    int rc = file_write_parts_to(tmp, path, parts, lens, n, err, errlen), e = rc ? EIO : 0;
    if (rc) file_tmp_forget(tmp);
    else if (replace) rc = file_publish_atomic(tmp, path, err, errlen);
    else if ((e = move_noreplace(tmp, path))) {
        char why[128];
        file_tmp_remove(tmp);
        snprintf(err, errlen, "%.*s: %s", FILE_NAME_CUT, path, file_reason(e, why, sizeof why));
        rc = -1;
    } else {
        file_tmp_forget(tmp);
        rc = file_sync_folder_of(path, err, errlen);
    }
    free(tmp);
    errno = rc && e ? e : 0;   // 0: published, only its folder's sync failed
    return rc;
}

int file_write_parts_atomic(const char *path, const void *const *parts, const size_t *lens, int n, char *err,
                            size_t errlen) {
    return write_atomic(path, parts, lens, n, 1, err, errlen);
}

int file_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    return write_atomic(path, &data, &len, 1, 1, err, errlen);
}

int file_write_new_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    return write_atomic(path, &data, &len, 1, 0, err, errlen);
}

int file_group_add(FileGroup *g, const char *tmp, const char *path) {
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 8;
        char **t = realloc(g->tmps, (size_t)cap * sizeof *t);
        if (t) g->tmps = t;
        char **p = realloc(g->paths, (size_t)cap * sizeof *p);
        if (p) g->paths = p;
        int *d = realloc(g->dirs, (size_t)cap * sizeof *d);
        if (d) g->dirs = d;
        if (!t || !p || !d) { file_tmp_remove(tmp); return -1; }
        g->cap = cap;
    }
    char *t = strdup(tmp), *p = strdup(path);
    if (!t || !p) { free(t); free(p); file_tmp_remove(tmp); return -1; }
    // The folder held (O_PATH: no read permission needed) follows a rename of it, so that a group that
    // fails removes its files wherever the folder went: the one tmp was made in (file_tmp_create's,
    // not the one at its name now, which is another or none once the folder moved while tmp was
    // written). One that cannot be held (out of descriptors) is reached by the names, as before. tmp
    // and path share it (file_tmp_name). One descriptor per folder, not per file: the previous file's,
    // while it is the same folder (a descriptor per file ran attention --layer all --head all out of
    // them, its montage unwritten).
    int dir = -1;
    size_t d = folder_len(tmp);
    if (same_folder(path, tmp, d)) {
        int made_in = tmp_folder(tmp);
        char *name = made_in >= 0 ? NULL : strndup(d ? tmp : ".", d ? d : 1);
        int prev = g->n ? g->dirs[g->n - 1] : -1;
        struct stat held, now;
        int known = made_in >= 0 ? fstat(made_in, &now) == 0 : name && stat(name, &now) == 0;
        if (known && prev >= 0 && same_folder(g->paths[g->n - 1], path, d) && fstat(prev, &held) == 0 &&
            held.st_dev == now.st_dev && held.st_ino == now.st_ino)
            dir = prev;
        else if (made_in >= 0)
            dir = fcntl(made_in, F_DUPFD_CLOEXEC, 0);   // the group's own: the kept one closes with its last file
        else if (name)
            dir = open(name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        free(name);
    }
    g->tmps[g->n] = t;
    g->dirs[g->n] = dir;
    g->paths[g->n++] = p;
    return 0;
}

// The last part of path (a file in g->dirs[i]'s folder).
static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

// g's temporary file i removed from its folder, wherever that is now, and forgotten (file_tmp_remove).
static void group_tmp_remove(const FileGroup *g, int i) {
    unlink_from(g->dirs[i], g->tmps[i]);
    file_tmp_forget(g->tmps[i]);
}

// Whether g's file i's folder is gone from where its name says: moved or removed since file_group_add.
static int group_folder_gone(const FileGroup *g, int i) {
    struct stat held, now;
    size_t d = folder_len(g->paths[i]);
    char *name = strndup(d ? g->paths[i] : ".", d ? d : 1);
    int gone = name && g->dirs[i] >= 0 && fstat(g->dirs[i], &held) == 0 &&
               (stat(name, &now) != 0 || now.st_dev != held.st_dev || now.st_ino != held.st_ino);
    free(name);
    return gone;
}

int file_group_sweep(FileGroup *g, const char *path, int (*ours)(const char *name)) {
    FileSweep *s = realloc(g->sweeps, (size_t)(g->nsweeps + 1) * sizeof *s);
    if (!s) return -1;
    g->sweeps = s;
    char *p = strdup(path);
    if (!p) return -1;
    g->sweeps[g->nsweeps++] = (FileSweep){p, ours};
    return 0;
}

static void group_free(FileGroup *g) {
    for (int i = 0; i < g->n; i++) {
        free(g->tmps[i]); free(g->paths[i]);
        if (g->dirs[i] >= 0 && (i == 0 || g->dirs[i] != g->dirs[i - 1])) close(g->dirs[i]);   // shared: once
    }
    for (int i = 0; i < g->nsweeps; i++) free(g->sweeps[i].path);
    free(g->tmps); free(g->paths); free(g->dirs); free(g->sweeps);
    FileFolders *later = g->later;
    memset(g, 0, sizeof *g);
    g->later = later;
}

void file_group_discard(FileGroup *g) {
    for (int i = 0; i < g->n; i++) group_tmp_remove(g, i);
    group_free(g);
}

// tmp moved to path without replacing anything there: 0, or errno (EEXIST: path is taken).
static int move_noreplace(const char *tmp, const char *path) {
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return errno;
    // A file system without RENAME_NOREPLACE: a second name made with link(2) (which fails with
    // EEXIST on a taken name), then the temporary one dropped.
    if (link(tmp, path) == 0) { unlink(tmp); return 0; }
    if (errno == EEXIST) return EEXIST;
    if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS) return errno;
    // Nor hard links (FAT): look, then rename; only a command publishing in the same instant can slip by.
    struct stat st;
    if (lstat(path, &st) == 0) return EEXIST;
    return rename(tmp, path) ? errno : 0;
}

void file_test_gate(const char *env) {
    const char *path = getenv(env);
    if (!path || !*path || access(path, F_OK) == 0) return;
    size_t n = strlen(path) + sizeof ".held";
    char *held = malloc(n);
    if (!held) return;
    snprintf(held, n, "%s.held", path);
    int fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
    free(held);
    struct timespec tick = {0, 10000000};
    for (int i = 0; i < 12000 && access(path, F_OK) != 0; i++) nanosleep(&tick, NULL);
}

FILE *file_open_regular(const char *path, const char *mode, char *err, size_t errlen) {
    int append = mode[0] == 'a', both = mode[1] == '+';
    char why[128];
    int fd = open(path, (append ? (both ? O_RDWR : O_WRONLY) | O_APPEND | O_CREAT : O_RDONLY) | O_NONBLOCK | O_CLOEXEC,
                  0666);
    if (fd < 0) {   // ENXIO: a FIFO without a reader, opened for writing
        int e = errno == ENXIO ? EINVAL : errno;
        snprintf(err, errlen, "%s: %s", path, e == EINVAL ? "not a regular file" : file_reason(e, why, sizeof why));
        errno = e;
        return NULL;
    }
    struct stat st = {0};
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || flags == -1 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1) {
        int e = S_ISREG(st.st_mode) ? errno : EINVAL;
        snprintf(err, errlen, "%s: %s", path, e == EINVAL ? "not a regular file" : file_reason(e, why, sizeof why));
        close(fd);
        errno = e;
        return NULL;
    }
    FILE *f = fdopen(fd, mode);
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, file_reason(e, why, sizeof why));
        close(fd);
        errno = e;
    }
    return f;
}

const char *file_reason(int e, char *buf, size_t n) {
    char m[128];
    snprintf(buf, n, "%s", strerror_r(e, m, sizeof m));
    return buf;
}

const char *file_shell_word(const char *path, char *buf, size_t n) {
    static const char safe[] = "_-./+,:=@%^";
    int plain = path[0] != 0;   // an empty path is '' (nothing, unquoted, would drop the word)
    for (const char *c = path; *c && plain; c++)
        plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr(safe, *c);
    // A leading '-' would be read as an option (--resume -steps is refused as a flag; ln and chattr take
    // -x y for their options): ./ before it names the same path.
    const char *lead = path[0] == '-' ? "./" : "";
    if (plain || n < 5) {
        snprintf(buf, n, "%s%s", lead, path);
        return buf;
    }
    size_t at = 0;
    buf[at++] = '\'';
    for (const char *c = lead; *c; c++) buf[at++] = *c;
    // Each ' ends the quotes, gives the ' in double quotes, and opens them again: '"'"', not '\'', whose
    // backslash a message writes out as \\ (docs/interface.md, section 1), which a paste keeps. Stops
    // short of a word cut inside.
    for (const char *c = path; *c; c++) {
        const char *piece = *c == '\'' ? "'\"'\"'" : NULL;
        size_t len = piece ? 5 : 1;
        if (at + len + 2 > n) break;
        if (piece) memcpy(buf + at, piece, len);
        else buf[at] = *c;
        at += len;
    }
    buf[at++] = '\'';
    buf[at] = 0;
    return buf;
}

const char *file_path_reason(const char *path, int e, char *buf, size_t n) {
    struct stat st;
    char target[4096];
    ssize_t len;
    if (e == ENOENT && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) &&
        (len = readlink(path, target, sizeof target - 1)) >= 0) {
        target[len] = 0;
        snprintf(buf, n, "a symbolic link to %s, which does not exist", target);
        return buf;
    }
    // A socket's open(2) fails with ENXIO ("No such device or address"): it is there, and not a file
    // (docs/interface.md, section 2), as a FIFO is said to be.
    if (e == ENXIO && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(buf, n, "not a regular file");
        return buf;
    }
    return file_reason(e, buf, n);
}

const char *file_folder_reason(const char *dir, int e, char *buf, size_t n) {
    file_reason(e, buf, n);
    // Too many open files is the process's (or the system's) limit reached, not the folder's fault: said
    // with the limit, which ulimit -n raises (docs/interface.md, section 1).
    if (e == EMFILE || e == ENFILE) {
        struct rlimit rl;
        size_t at = strlen(buf);
        if (e == ENFILE)
            snprintf(buf + at, n - at, " (the limit of open files of the whole system, fs.file-max, is reached)");
        else if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            snprintf(buf + at, n - at, " (the limit of open files, ulimit -n %llu, is reached)", (unsigned long long)rl.rlim_cur);
        else
            snprintf(buf + at, n - at, " (the limit of open files of this process, ulimit -n, is reached)");
        return buf;
    }
    int fd = e == EPERM ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    int flags = 0;
    if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_IMMUTABLE_FL)) {
        size_t at = strlen(buf);
        char word[FILE_SHELL_WORD_MAX];
        snprintf(buf + at, n - at, " (an immutable folder: lsattr -d shows 'i'; chattr -i %s lifts it)",
                 file_shell_word(dir, word, sizeof word));
    }
    if (fd >= 0) close(fd);
    return buf;
}

// path removed when it is a regular file that the group did not publish (file_group_sweep): 0, or errno.
static int sweep_file(const FileGroup *g, const char *path) {
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->paths[i], path)) return 0;
    struct stat st;
    if (lstat(path, &st) || !S_ISREG(st.st_mode)) return 0;
    return unlink(path) && errno != ENOENT ? errno : 0;
}

// The earlier run's files of one sweep (file_group_sweep): 0, or errno with the file (or folder) that
// failed in at (n bytes).
static int sweep(const FileGroup *g, const FileSweep *s, char *at, size_t n) {
    snprintf(at, n, "%s", s->path);
    if (!s->ours) return sweep_file(g, s->path);
    DIR *d = opendir(s->path);
    if (!d) return errno == ENOENT || errno == ENOTDIR ? 0 : errno;
    int e = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) { e = errno; break; }
        if (!s->ours(de->d_name)) continue;
        if (snprintf(at, n, "%s/%s", s->path, de->d_name) >= (int)n) { e = ENAMETOOLONG; break; }
        if ((e = sweep_file(g, at))) break;
    }
    closedir(d);
    return e;
}

static pthread_mutex_t folders_lock = PTHREAD_MUTEX_INITIALIZER;

// FNV-1a of the n bytes at s: where a folder's name sits in FileFolders' hash set.
static size_t folder_hash(const char *s, size_t n) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return (size_t)h;
}

// The slot of the folder path[0..dirlen) in f's hash set: the one that holds it, else the free one
// where it goes (the set is never full: at most half its slots are taken).
static int folders_slot(const FileFolders *f, const char *path, size_t dirlen) {
    int mask = f->nslots - 1, s = (int)(folder_hash(path, dirlen) & (size_t)mask);
    for (; f->slots[s]; s = (s + 1) & mask) {
        const char *d = f->dirs[f->slots[s] - 1];
        if (strlen(d) == dirlen && !strncmp(d, path, dirlen)) break;
    }
    return s;
}

// path's folder (its first dirlen bytes) noted in f unless it is there already, with the nfiles files
// of a group published into it (path the first of them): 0, or -1 out of memory. Looked up in a hash
// set, not in the list: attention notes a folder an image (DIR/<stem>), and a scan of every folder
// noted so far, under the lock, made a run of n images n^2/2 compares.
static int folders_note(FileFolders *f, const char *path, size_t dirlen, int nfiles) {
    int rc = 0;
    pthread_mutex_lock(&folders_lock);
    if (2 * (f->n + 1) > f->nslots) {   // grown before it is half full, every name placed again
        int nslots = f->nslots ? 2 * f->nslots : 16;
        int *slots = calloc((size_t)nslots, sizeof *slots);
        if (slots) {
            free(f->slots);
            f->slots = slots;
            f->nslots = nslots;
            for (int i = 0; i < f->n; i++) f->slots[folders_slot(f, f->dirs[i], strlen(f->dirs[i]))] = i + 1;
        } else {
            rc = -1;
        }
    }
    int s = rc ? 0 : folders_slot(f, path, dirlen);
    if (!rc && !f->slots[s] && f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 8;
        char **d = realloc(f->dirs, (size_t)cap * sizeof *d);
        char **first = d ? realloc(f->firsts, (size_t)cap * sizeof *first) : NULL;
        long *files = first ? realloc(f->files, (size_t)cap * sizeof *files) : NULL;
        if (d) f->dirs = d;
        if (first) f->firsts = first;
        if (files) { f->files = files; f->cap = cap; }
        else rc = -1;
    }
    if (!rc && !f->slots[s]) {
        char *dir = strndup(path, dirlen), *first = strdup(path);
        if (dir && first) {
            f->firsts[f->n] = first;
            f->files[f->n] = 0;
            f->dirs[f->n++] = dir;
            f->slots[s] = f->n;
        } else {
            free(dir); free(first);
            rc = -1;
        }
    }
    if (!rc) f->files[f->slots[s] - 1] += nfiles;
    if (!rc) __atomic_store_n(&noted_folders, f, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&folders_lock);
    return rc;
}

int file_folders_sync(FileFolders *f, char *err, size_t errlen) {
    int rc = 0, e;
    file_test_gate("VITMAE_FAULT_HOLD_BEFORE_FOLDER_SYNC");
    stop_enter();   // a stop signal now finds the folders synced and f empty, or syncs them itself
    for (int i = 0; i < f->n; i++) {
        size_t d = strlen(f->dirs[i]);
        if ((e = sync_folder(f->dirs[i], d)) && !rc) {
            say_unsynced(f->firsts[i], f->files[i], e, err, errlen);
            rc = -1;
        }
    }
    for (int i = 0; i < f->n; i++) { free(f->dirs[i]); free(f->firsts[i]); }
    free(f->dirs);
    free(f->firsts);
    free(f->files);
    free(f->slots);
    memset(f, 0, sizeof *f);
    __atomic_compare_exchange_n(&noted_folders, &(FileFolders *){f}, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    stop_leave();
    return rc;
}

// file_group_publish's, and file_group_publish_held's (held: the critical section left open for the
// command's line, until file_stop_resume).
static int group_publish(FileGroup *g, int replace, int held, char *err, size_t errlen) {
    file_test_gate("VITMAE_FAULT_HOLD_BEFORE_PUBLISH");
    int k = 0, e = 0;
    struct stat *mine = calloc((size_t)(g->n ? g->n : 1), sizeof *mine);   // what each published name is
    if (!mine) { snprintf(err, errlen, "out of memory"); file_group_discard(g); return -1; }
    stop_enter();   // a stop signal now waits for the group to be published whole (or undone)
    for (; k < g->n; k++) {
        if (lstat(g->tmps[k], &mine[k])) { e = errno; break; }
        if ((e = replace ? (rename(g->tmps[k], g->paths[k]) ? errno : 0) : move_noreplace(g->tmps[k], g->paths[k])))
            break;
        file_tmp_forget(g->tmps[k]);
    }
    int rc = 0;
    char why[128], at[4400];
    // Published whole: the earlier run's files that it did not replace go too, inside the critical
    // section (a stop signal finds the group published and those files gone, or neither).
    for (int s = 0; k == g->n && replace && s < g->nsweeps && !e; s++) e = sweep(g, &g->sweeps[s], at, sizeof at);
    // The renames made durable (each file was fsync'd as it was written): each folder once, now or,
    // noted in g->later, at the command's end (file_folders_sync). The group is published by now: a
    // folder that fails its sync is said (the first), the others are synced still, and the files stay.
    for (int i = 0, unsynced = 0; k == g->n && !e && i < g->n; i++) {
        size_t d = folder_len(g->paths[i]);
        int seen = 0, fe, nfiles = 0;
        for (int j = 0; j < i && !seen; j++) seen = same_folder(g->paths[j], g->paths[i], d);
        for (int j = i; j < g->n && !seen; j++) nfiles += same_folder(g->paths[j], g->paths[i], d);
        if (!seen && g->later) seen = folders_note(g->later, g->paths[i], d, nfiles) == 0;
        if (!seen && (fe = sync_folder(g->paths[i], d)) && !unsynced++) {
            say_unsynced(g->paths[i], nfiles, fe, err, errlen);
            rc = FILE_UNSYNCED;
        }
    }
    if (k < g->n || e) {
        rc = e == EEXIST && !replace ? FILE_TAKEN : -1;
        if (rc == FILE_TAKEN)
            snprintf(err, errlen, "%.*s: exists now (written by another command meanwhile); pass --force to replace it",
                     FILE_NAME_CUT, g->paths[k]);
        else if (e == ENOENT && k < g->n && group_folder_gone(g, k))   // not "FILE: No such file or directory"
            snprintf(err, errlen, "%.*s: the folder is gone (moved or deleted during the run)",
                     name_cut(folder_len(g->paths[k])), g->paths[k]);
        else
            snprintf(err, errlen, "%.*s: %s", FILE_NAME_CUT, k < g->n ? g->paths[k] : at,
                     file_reason(e, why, sizeof why));
        for (int i = k; i < g->n; i++) group_tmp_remove(g, i);
        // All or nothing: the files this call published go again, each only while it is still this
        // command's (the same file), never another's; looked up in their folder as held, where it went.
        // (With replace, what they replaced is gone.)
        for (int i = 0; i < k; i++) {
            struct stat st;
            int at_dir = g->dirs[i] >= 0;
            const char *name = at_dir ? base_name(g->paths[i]) : g->paths[i];
            int dir = at_dir ? g->dirs[i] : AT_FDCWD;
            if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == mine[i].st_dev &&
                st.st_ino == mine[i].st_ino)
                unlinkat(dir, name, 0);
        }
    }
    if (held && !stop_held) {   // left by file_stop_resume, once the line is out
        stop_held = 1;
        line_holder = pthread_self();
        line_held = 1;
    }
    else stop_leave();
    free(mine);
    group_free(g);
    // Tests: a stop signal between the publish and the command's line of it (the line said all the same).
    if (rc == 0 || rc == FILE_UNSYNCED) file_test_gate("VITMAE_FAULT_HOLD_AFTER_PUBLISH");
    return rc;
}

int file_group_publish(FileGroup *g, int replace, char *err, size_t errlen) {
    return group_publish(g, replace, 0, err, errlen);
}

int file_group_publish_held(FileGroup *g, int replace, char *err, size_t errlen) {
    return group_publish(g, replace, 1, err, errlen);
}

void file_stop_note(const char *line) {
    if (stop_note_len > 0) return;   // the first one
    int n = snprintf(stop_note, sizeof stop_note, "%s\n", line);
    if (n > 0) stop_note_len = n < (int)sizeof stop_note ? n : (int)sizeof stop_note - 1;
}

void file_stop_resume(void) {
    if (!stop_held) return;
    stop_held = 0;
    line_held = 0;
    stop_leave();   // a stop signal that came meanwhile ends the process here
}

int file_free_bytes(const char *path, double *bytes) {
    const char *test = getenv("VITMAE_FAULT_FREE_BYTES");
    if (test && *test) {   // tests: a disk that is (nearly) full, without filling one
        char *end;
        double v = strtod(test, &end);
        if (!*end && v >= 0) { *bytes = v; return 0; }
    }
    struct statvfs fs;
    if (statvfs(path, &fs) != 0) return -1;
    *bytes = (double)fs.f_bavail * (double)fs.f_frsize;
    return 0;
}

// (io/files.h)
char *file_read_small(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    char *text = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (16 << 20) &&
        (text = malloc((size_t)st.st_size + 1))) {
        ssize_t n = read(fd, text, (size_t)st.st_size);
        if (n < 0) { free(text); text = NULL; }
        else text[n] = 0;
    }
    close(fd);
    return text;
}
