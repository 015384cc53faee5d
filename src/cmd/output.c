// Output folders, stems and the writable probe (see cmd/output.h).
#include "cmd/output.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "data/dataset.h"
#include "data/image.h"
#include "io/files.h"

static int output_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

int output_refuse_earlier(const OutputNames *names, int force) {
    char buf[8192];
    // Two passes: what --force cannot help, in every name (pass 0), before an earlier run's file in any.
    for (int pass = 0; pass < 2; pass++)
        for (long i = 0; i < names->n; i++) {
            const char *path = names->list ? names->list[i] : buf;
            int folder = !names->list && names->name(names->ctx, i, buf, sizeof buf) == OUTPUT_FOLDER;
            struct stat st;
            // A folder the command fills, which --force keeps: never a file, with or without it. A
            // symbolic link there (to a folder, a file or nothing) is an earlier output that --force
            // replaces with a folder, never one written through (cmd/attention.c, attend_one).
            if (pass == 0 && folder && lstat(path, &st) == 0 && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
                cli_error(path, "is not a folder: the image's maps go into a folder of this name, and --force "
                          "replaces files, not a file with a folder (choose another --out)");
                return 1;
            }
            // A folder in a file's place: --force cannot replace it (the rename that publishes the file
            // fails), and that was found only after all the work; without --force, "use --force" sent the
            // user to that refusal.
            if (pass == 0 && !folder && lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
                cli_error(path, "is a folder: --force replaces files, not folders (choose another name)");
                return 1;
            }
            if (pass == 1 && !folder && names->also && names->also(names->ctx, i, path)) return 1;
            if (pass == 1 && !force && output_exists(path)) {
                // A link to nothing is there (lstat found it, stat does not), but "already exists" of a
                // path that names nothing read as a contradiction: the line says what is there.
                char why[4200];
                if (stat(path, &st) != 0 && errno == ENOENT) {
                    cli_error(path, "already exists, %s (use --force to replace the link with the %s)",
                              file_path_reason(path, ENOENT, why, sizeof why), folder ? "folder" : "file");
                } else {
                    cli_error(path, "already exists (use --force to replace it)");
                }
                return 1;
            }
        }
    return 0;
}

// The leaves of one folder's names gathered by output_sweep_leftovers, then swept.
typedef struct { char *dir; char **leaves; long n, cap; } FolderNames;

static void sweep_folder(FolderNames *f) {
    if (f->dir && f->n) file_sweep_dead_tmps(f->dir, (const char *const *)f->leaves, f->n);
    for (long i = 0; i < f->n; i++) free(f->leaves[i]);
    free(f->dir);
    f->dir = NULL;
    f->n = 0;
}

void output_sweep_leftovers(const OutputNames *names) {
    char buf[8192];
    FolderNames f = {0};
    for (long i = 0; i < names->n; i++) {
        const char *path = names->list ? names->list[i] : buf;
        if (!names->list && names->name(names->ctx, i, buf, sizeof buf) == OUTPUT_FOLDER) continue;
        const char *slash = strrchr(path, '/');
        size_t d = slash ? (size_t)(slash - path) : 0;
        const char *dir = slash ? (d ? path : "/") : ".";
        size_t dl = slash ? (d ? d : 1) : 1;
        // The names come folder by folder (DIR/<stem>.*, the pair of FEATS.npy): each folder listed once.
        if (f.dir && (strlen(f.dir) != dl || strncmp(f.dir, dir, dl))) sweep_folder(&f);
        if (!f.dir && !(f.dir = strndup(dir, dl))) break;
        if (f.n == f.cap) {
            long cap = f.cap ? 2 * f.cap : 16;
            char **l = realloc(f.leaves, (size_t)cap * sizeof *l);
            if (!l) break;
            f.leaves = l;
            f.cap = cap;
        }
        if (!(f.leaves[f.n] = strdup(slash ? slash + 1 : path))) break;
        f.n++;
    }
    sweep_folder(&f);   // out of memory: what was gathered; the rest stays, as leftovers do
    free(f.leaves);
}

int output_mkdir_p(const char *path, char *err, size_t errlen) {
    return output_mkdir_made(path, NULL, err, errlen);
}

// path's first part that is a symbolic link to nothing ("RUN" a link to a deleted folder): 1 with err
// "<link>: a symbolic link to <target>, which does not exist", else 0 (mkdir and stat say only "No such
// file or directory" of the path, and never name the link).
static int dangling_link(const char *path, char *err, size_t errlen) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return 0;
    for (char *p = buf + 1; ; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = 0;
        struct stat st;
        if (lstat(buf, &st) != 0) return 0;   // the parts from here do not exist: no link among them
        if (S_ISLNK(st.st_mode) && stat(buf, &st) != 0 && errno == ENOENT) {
            char target[4096];
            ssize_t n = readlink(buf, target, sizeof target - 1);
            if (n < 0) return 0;
            target[n] = 0;
            snprintf(err, errlen, "%s: a symbolic link to %s, which does not exist", buf, target);
            return 1;
        }
        *p = c;
        if (!c) return 0;
    }
}

int output_mkdir_made(const char *path, OutputMade *made, char *err, size_t errlen) {
    char buf[4096];
    // What an earlier call with made made above path stays in it (a sibling made next: cmd/output.h).
    size_t plen = strlen(path);
    int kept = 0;
    while (made && kept < made->n && made->len[kept] < plen && path[made->len[kept]] == '/' &&
           !strncmp(made->path, path, made->len[kept]))
        kept++;
    if (made) made->n = kept;
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        snprintf(err, errlen, "path too long");
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; ; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = 0;
        // Tracked: once a command has called file_cleanup_on_stop_signals, a stop signal removes the
        // folders made here while they are empty (io/files.h), as output_mkdir_undo does on a failure.
        int mk = file_mkdir_tracked(buf);
        if (mk == 0) {
            if (made && made->n < OUTPUT_MADE_MAX) made->len[made->n++] = (unsigned short)(p - buf);
        } else if (mk < 0) {
            int saved = errno;
            char reason[4300], parent[4096];
            int dangling = saved == ENOENT && dangling_link(buf, err, errlen);
            // The folder it was to be made in: its attribute is what an EPERM names (io/files.h).
            char *up = strrchr(buf, '/');
            if (up) snprintf(parent, sizeof parent, "%.*s", up == buf ? 1 : (int)(up - buf), buf);
            else snprintf(parent, sizeof parent, ".");
            if (!dangling) snprintf(err, errlen, "%s: %s", buf, file_folder_reason(parent, saved, reason, sizeof reason));
            if (made) { memcpy(made->path, buf, sizeof buf); output_mkdir_undo(made); }
            errno = saved;
            return dangling ? -2 : -1;
        }
        *p = c;
        if (!c) break;
    }
    struct stat st;
    if (stat(buf, &st) != 0) {
        int saved = errno;
        char reason[128];
        int dangling = saved == ENOENT && dangling_link(buf, err, errlen);
        if (!dangling) snprintf(err, errlen, "%s: %s", buf, file_reason(saved, reason, sizeof reason));
        errno = saved;
        return dangling ? -2 : -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a folder", buf);
        errno = ENOTDIR;
        return -1;
    }
    if (made) memcpy(made->path, buf, sizeof buf);
    return 0;
}

void output_mkdir_disown(OutputMade *made) {
    size_t len = strlen(made->path);
    while (made->n > 0 && made->len[made->n - 1] >= len) made->n--;
}

int output_make_out(const char *label, const char *dir, OutputMade *made) {
    char err[8400];
    int rc = output_mkdir_made(dir, made, err, sizeof err);
    if (rc == -2) cli_error(label, "%s", err);   // the link named first, as every --out names it
    else if (rc) cli_error(label, "cannot create the output folder: %s", err);
    return rc != 0;
}

void output_mkdir_undo(OutputMade *made) {
    for (int i = made->n - 1; i >= 0; i--) {
        char c = made->path[made->len[i]];
        made->path[made->len[i]] = 0;
        // Only when empty: a file in it (another command's) keeps it. One already gone (deleted by the
        // user mid-run) leaves its made parents to remove.
        int gone = rmdir(made->path) == 0 || errno == ENOENT;
        if (gone) file_tmp_forget(made->path);   // no longer this run's to remove at a stop signal
        made->path[made->len[i]] = c;
        if (!gone) break;                    // its parents are not empty either
    }
    made->n = 0;
}

const char *output_subject(const char *cmd, const char *path, const char *err) {
    size_t n = strlen(path);
    return !strncmp(err, path, n) && err[n] == ':' ? NULL : cmd;
}

int output_png_to(char *tmp, const unsigned char *px, int w, int h, int c, const char *const *text,
                  char *err, size_t errlen) {
    int fd = file_tmp_create(tmp);
    int rc = png_write_fd(fd, px, w, h, c, text, err, errlen);
    if (rc && fd >= 0) file_tmp_remove(tmp);
    else if (rc) file_tmp_forget(tmp);
    return rc;
}

int output_stop_kind(const char *err) {
    static const int full[] = {ENOSPC, EDQUOT, EROFS};
    char reason[128];   // as a failed write says it (io/files.h)
    for (size_t i = 0; err && i < sizeof full / sizeof *full; i++)
        if (strcasestr(err, file_reason(full[i], reason, sizeof reason))) return OUTPUT_STOP_FULL;
    return image_why_is_resource(err) ? OUTPUT_STOP_MEMORY : 0;
}

void output_report_stop(const char *cmd, int kind, const char *out_dir, int written, int total) {
    if (kind == OUTPUT_STOP_FULL)
        cli_error(cmd, "stopped: %s takes no more files (%d of %d images written)", out_dir, written, total);
    else if (kind == OUTPUT_STOP_GONE)
        cli_error(cmd, "%s: the folder is gone (moved or deleted during the run)", out_dir);
    else if (kind)
        cli_error(cmd, "stopped: this process is out of memory or open files (%d of %d images written)", written, total);
}

int output_out_gone(const char *dir, const struct stat *home) {
    struct stat st;
    if (stat(dir, &st)) return errno == ENOENT || errno == ENOTDIR;
    return !S_ISDIR(st.st_mode) || (home && (st.st_dev != home->st_dev || st.st_ino != home->st_ino));
}

int output_names_fit(const char *dir, const char *stem, const char *names, char *err, size_t errlen) {
    // 64: '/', a name such as ".recon.png", its temporary name's ".tmp.<pid>.<n>"; and the host's name
    // with its '.' that the temporary name carries (file_tmp_name_host).
    char host[FILE_HOST_MAX];
    file_host_name(host, sizeof host);
    if (strlen(dir) + strlen(stem) + 64 + strlen(host) + 1 < 4096) return 0;
    snprintf(err, errlen, "the output names %s/%s%s would pass the 4096-byte path limit (a shorter --out)", dir, stem,
             names);
    return -1;
}

int output_check_writable(const char *dir, char *err, size_t errlen) {
    char probe[4200], reason[4300];
    snprintf(probe, sizeof probe, "%s/.vitmae-write-test-XXXXXX", dir);
    // A name of its own, kept for the stop signals' cleanup before it exists (io/files.h): Ctrl-C while
    // it is there removes it, and so an --out folder this run made stays empty and goes too. A file
    // that has a name already is left as it is (".vitmae-write-test-<pid>" was unlinked when there).
    int fd = file_tmp_create_unique(probe);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int saved = errno;
        if (fd >= 0) { close(fd); file_tmp_remove(probe); }
        if (saved != ENOENT || !dangling_link(dir, err, errlen))
            snprintf(err, errlen, "%s: cannot write in this folder: %s", dir,
                     file_folder_reason(dir, saved, reason, sizeof reason));
        return -1;
    }
    errno = 0;
    int bad = fputs("ok\n", f) < 0;
    bad |= fclose(f) != 0;   // a full disk shows here, when the buffered byte is written
    int saved = errno;
    file_test_gate("VITMAE_FAULT_HOLD_IN_WRITE_TEST");   // tests: a stop signal while the probe is there
    file_tmp_remove(probe);
    // An append-only folder (chattr +a) takes new files but lets none be renamed or removed: every
    // output, published by renaming its temporary file, would fail after the work, its temporary left.
    struct stat st;
    if (!bad && lstat(probe, &st) == 0) {
        snprintf(err, errlen, "%s: cannot write in this folder: it takes new files but lets none be removed or renamed "
                 "(an append-only folder: lsattr -d shows 'a'), and outputs are published by renaming; the probe "
                 "file %s stays in it", dir, probe);
        return -1;
    }
    if (bad && saved) {
        snprintf(err, errlen, "%s: cannot write in this folder: %s", dir, file_reason(saved, reason, sizeof reason));
        return -1;
    }
    if (bad) { snprintf(err, errlen, "%s: cannot write in this folder", dir); return -1; }
    return 0;
}

// path made absolute with its links resolved into out (n bytes): realpath of its longest existing
// part, then the rest of its components ("." and ".." of names that do not exist yet taken lexically:
// the system would fail on them anyway). A loop, not a recursion: a hostile --out of thousands of
// missing components costs no stack. 0 ok, -1 when it cannot be resolved (below a file: no folder).
static int resolve_path(const char *path, char *out, size_t n) {
    char buf[8192];
    if (path[0] == '/') {
        if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
    } else {
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd)) return -1;
        if (snprintf(buf, sizeof buf, "%s/%s", cwd, path) >= (int)sizeof buf) return -1;
    }
    cli_clean_path(buf);
    char *cut = buf + strlen(buf);   // buf[0, cut) is tried; the components after cut do not exist
    for (;;) {
        char c = *cut;
        *cut = 0;
        char *r = realpath(buf, NULL);
        int e = errno;
        *cut = c;
        if (r) {
            int fits = snprintf(out, n, "%s", r) < (int)n;
            free(r);
            if (!fits) return -1;
            break;
        }
        if (e != ENOENT) return -1;   // below a file (ENOTDIR): no folder, said when it is made
        char *slash = cut - 1;
        while (slash > buf && *slash != '/') slash--;
        cut = slash > buf ? slash : buf + 1;   // "/" itself always resolves
    }
    for (char *p = cut; *p;) {
        while (*p == '/') p++;
        size_t len = strcspn(p, "/"), at = strlen(out);
        if (!len) break;
        if (len == 2 && !strncmp(p, "..", 2)) {
            char *up = strrchr(out, '/');
            if (up) up[up == out] = 0;
        } else if (!(len == 1 && *p == '.')) {
            if (snprintf(out + at, n - at, "%s%.*s", at > 1 ? "/" : "", (int)len, p) >= (int)(n - at)) return -1;
        }
        p += len;
    }
    return 0;
}

// 1 when the resolved path in is out or below it.
static int resolved_within(const char *in, const char *out) {
    size_t n = strlen(out);
    if (n == 1) return 1;   // everything is below "/"
    return !strncmp(in, out, n) && (in[n] == 0 || in[n] == '/');
}

int output_path_within(const char *inner, const char *outer) {
    char in[4096], out[4096], name[8192];
    if (resolve_path(outer, out, sizeof out) || resolve_path(inner, in, sizeof in)) return 0;   // below a file: no folder
    if (resolved_within(in, out)) return 1;
    // Each folder on inner's way as written, then inner itself: "RUN/imgs" with imgs a link elsewhere
    // still lies in RUN (moving RUN takes the link; a scan of RUN follows it).
    if (inner[0] == '/') snprintf(name, sizeof name, "%s", inner);
    else if (!getcwd(in, sizeof in) || snprintf(name, sizeof name, "%s/%s", in, inner) >= (int)sizeof name) return 0;
    cli_clean_path(name);
    // A prefix followed by ".." is not on the way ("d/../x" is not in d): start after the last one.
    char *start = name + 1;
    for (char *q = strstr(name, "/.."); q; q = strstr(q + 1, "/.."))
        if (q[3] == '/' || !q[3]) start = q + 3;
    // Only existing folders can be links: the first prefix that does not exist ends the walk (the
    // rest was resolved with inner above).
    for (char *p = start;; p++) {
        if (*p && *p != '/') continue;
        char c = *p;
        *p = 0;
        char *r = realpath(name, NULL);
        *p = c;
        int within = r && resolved_within(r, out);
        free(r);
        if (within) return 1;
        if (!r || !c) return 0;
    }
}

int output_path_entry(const char *inner, const char *outer, char *entry, size_t n) {
    char out[4096], in[4096], name[8192];
    if (resolve_path(outer, out, sizeof out)) return 0;
    // inner resolved: the part after outer's name ("/" holds everything below it).
    const char *rest = NULL;
    if (!resolve_path(inner, in, sizeof in) && resolved_within(in, out)) rest = in + (strlen(out) == 1 ? 0 : strlen(out));
    // ... else as written: the part after the last folder on its way that is outer ("RUN/curves.png" with
    // curves.png a link to a folder elsewhere is still RUN's entry curves.png).
    if (!rest) {
        if (inner[0] == '/') snprintf(name, sizeof name, "%s", inner);
        else if (!getcwd(in, sizeof in) || snprintf(name, sizeof name, "%s/%s", in, inner) >= (int)sizeof name) return 0;
        cli_clean_path(name);
        char *start = name + 1;   // after the last "..", as output_path_within walks ("d/../x" is not in d)
        for (char *q = strstr(name, "/.."); q; q = strstr(q + 1, "/.."))
            if (q[3] == '/' || !q[3]) start = q + 3;
        for (char *p = start; *p && !rest; p++) {
            if (*p != '/') continue;
            *p = 0;
            char *r = realpath(name, NULL);
            *p = '/';
            if (r && !strcmp(r, out)) rest = p;
            free(r);
            if (!r) break;   // the first prefix that does not exist ends the walk: no link below it
        }
    }
    if (!rest) return 0;
    while (*rest == '/') rest++;
    size_t len = strcspn(rest, "/");
    if (!len || (len == 1 && rest[0] == '.') || (len == 2 && !strncmp(rest, "..", 2))) return 0;   // outer itself
    snprintf(entry, n, "%.*s", (int)len, rest);
    return 1;
}

// Folders as (device, inode): those a walk entered through a link (a loop is walked once), and the run
// folder with the folders holding it.
typedef struct { dev_t *dev; ino_t *ino; int n, cap; } FolderIds;

static int folder_ids_has(const FolderIds *f, const struct stat *st) {
    for (int i = 0; i < f->n; i++)
        if (f->dev[i] == st->st_dev && f->ino[i] == st->st_ino) return 1;
    return 0;
}

static int folder_ids_add(FolderIds *f, const struct stat *st) {
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 64;
        dev_t *dev = realloc(f->dev, sizeof *dev * (size_t)cap);
        if (dev) f->dev = dev;
        ino_t *ino = dev ? realloc(f->ino, sizeof *ino * (size_t)cap) : NULL;
        if (!ino) return -1;
        f->ino = ino;
        f->cap = cap;
    }
    f->dev[f->n] = st->st_dev;
    f->ino[f->n++] = st->st_ino;
    return 0;
}

// Walks dir's sub-folders as dataset_scan does (links to folders followed, hidden ones too, 64 levels
// deep) until one is in target (the run folder and the existing folders holding it); its path, as the
// walk reached it, in at. 1 found, 0 not.
static int folder_walk_reaches(const char *dir, int depth, const FolderIds *target, FolderIds *seen, char *at,
                                                              size_t atlen) {
    DIR *d = depth < 64 ? opendir(dir) : NULL;
    if (!d) return 0;
    int found = 0;
    struct dirent *de;
    char path[4096];
    while (!found && (de = readdir(d))) {
        // Files need no stat: only a folder, a link or an entry of unknown type can lead to one.
        if (de->d_type != DT_DIR && de->d_type != DT_LNK && de->d_type != DT_UNKNOWN) continue;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path) continue;
        // Only a link can lead back to a folder walked before (a loop): the links' folders are kept, few
        // whatever the number of folders.
        int link = de->d_type == DT_LNK || (de->d_type == DT_UNKNOWN && lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || (link && folder_ids_has(seen, &st))) continue;
        if (folder_ids_has(target, &st)) {
            snprintf(at, atlen, "%s", path);
            found = 1;
        } else if (!link || !folder_ids_add(seen, &st)) {
            found = folder_walk_reaches(path, depth + 1, target, seen, at, atlen);
        }
    }
    closedir(d);
    return found;
}

int output_folder_reaches(const char *dir, const char *target, char *at, size_t atlen) {
    char resolved[4096];
    if (resolve_path(target, resolved, sizeof resolved)) return 0;
    // target and each existing folder above it: a scan that enters one of them also enters target.
    FolderIds holds = {0}, seen = {0};
    struct stat st;
    int found = 0, oom = 0;
    for (char *end = resolved + strlen(resolved); !oom; ) {
        char c = *end;
        *end = 0;
        if (stat(*resolved ? resolved : "/", &st) == 0 && S_ISDIR(st.st_mode)) oom = folder_ids_add(&holds, &st) != 0;
        *end = c;
        if (end == resolved) break;
        while (end > resolved && *--end != '/') {}
    }
    if (!oom && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && !folder_ids_add(&seen, &st))
        found = folder_walk_reaches(dir, 0, &holds, &seen, at, atlen);
    free(holds.dev); free(holds.ino); free(seen.dev); free(seen.ino);
    return found;
}

int output_refuse_inside_inputs(const char *cmd, const char *out_dir, int given, char *const *inputs, int n) {
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(inputs[i], &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        // ... also where a link below the input folder leads to --out, or to a folder holding it: the scan
        // follows it, as train's and finetune's of their data folder (src/cmd/runfolder.c, run_folder_overlaps).
        char link[4096], through[4200] = "";
        int within = output_path_within(out_dir, inputs[i]);
        if (!within && output_folder_reaches(inputs[i], out_dir, link, sizeof link))
            snprintf(through, sizeof through, " through a link (its scan enters %s)", link);
        else if (!within) continue;
        // The default folder (`cd photos && vitmae reconstruct ... .`) was named as if --out had been given.
        char what[64];
        snprintf(what, sizeof what, "%s%s", cmd, given ? " --out" : "");
        cli_error(what, "%s%s is %sthe input folder %s%s: its images would be read as inputs by the next run (with "
                  "--force, or once more images are added); choose an --out folder outside it",
                  given ? "" : "the default output folder ", out_dir,
                  within && output_path_within(inputs[i], out_dir) ? "" : "inside ", inputs[i], through);
        return CLI_USAGE;
    }
    return 0;
}

int output_replaces(const char *out, const char *in) {
    char name[4096], parent[4096], where[4200], *target = realpath(in, NULL);
    if (!target) return 0;
    snprintf(name, sizeof name, "%s", out);
    cli_clean_path(name);
    char *slash = strrchr(name, '/');
    const char *leaf = slash ? slash + 1 : name;
    if (slash) *slash = 0;
    int same = resolve_path(slash ? (*name ? name : "/") : ".", parent, sizeof parent) == 0 &&
               snprintf(where, sizeof where, "%s/%s", strcmp(parent, "/") ? parent : "", leaf) < (int)sizeof where &&
               !strcmp(where, target);
    free(target);
    return same;
}

static int file_id_cmp(const void *a, const void *b) {
    const OutputFileId *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return 0;
}

// Each input as its entry (lstat), the file it names (stat) and the folder it lies in. Out of memory
// leaves the lists empty: nothing is found (the check is a guard, not a step the run needs).
static void inputs_make(OutputInputs *s, char *const *paths, int n) {
    s->made = 1;
    s->files = malloc(sizeof *s->files * 2 * (size_t)(n ? n : 1));
    s->dirs = malloc(sizeof *s->dirs * (size_t)(n ? n : 1));
    if (!s->files || !s->dirs) { free(s->files); free(s->dirs); s->files = s->dirs = NULL; return; }
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (lstat(paths[i], &st) == 0) s->files[s->nfiles++] = (OutputFileId){st.st_dev, st.st_ino, i};
        if (S_ISLNK(st.st_mode) && stat(paths[i], &st) == 0) s->files[s->nfiles++] = (OutputFileId){st.st_dev, st.st_ino, i};
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", paths[i]);
        char *slash = strrchr(dir, '/');
        if (slash) slash[slash == dir] = 0;
        if (stat(slash ? dir : ".", &st) == 0) s->dirs[s->ndirs++] = (OutputFileId){st.st_dev, st.st_ino, i};
    }
    qsort(s->files, (size_t)s->nfiles, sizeof *s->files, file_id_cmp);
    qsort(s->dirs, (size_t)s->ndirs, sizeof *s->dirs, file_id_cmp);
}

static int inputs_find(const OutputFileId *v, int n, const struct stat *st) {
    OutputFileId key = {st->st_dev, st->st_ino, 0};
    const OutputFileId *hit = n ? bsearch(&key, v, (size_t)n, sizeof *v, file_id_cmp) : NULL;
    return hit ? hit->i : -1;
}

int output_input_named(OutputInputs *s, char *const *paths, int n, const char *out) {
    struct stat st;
    if (lstat(out, &st) != 0) return -1;
    if (!s->made) inputs_make(s, paths, n);
    return inputs_find(s->files, s->nfiles, &st);
}

int output_input_in(OutputInputs *s, char *const *paths, int n, const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return -1;
    if (!s->made) inputs_make(s, paths, n);
    return inputs_find(s->dirs, s->ndirs, &st);
}

void output_inputs_free(OutputInputs *s) {
    free(s->files);
    free(s->dirs);
    memset(s, 0, sizeof *s);
}

int output_warn_overlap(const char *flag_a, const char *a, const char *flag_b, const char *b, const char *what) {
    if (!a || !b || !*a || !*b) return 0;
    int b_in_a = output_path_within(b, a), a_in_b = output_path_within(a, b);
    if (b_in_a)
        cli_message("warning: %s %s is %s%s %s: its images also %s; the results measure fit, not generalisation",
                    flag_b, b, a_in_b ? "" : "inside ", flag_a, a, what);
    else if (a_in_b)
        cli_message("warning: %s %s is inside %s %s: its images are also held out; the results measure fit, not "
                    "generalisation", flag_a, a, flag_b, b);
    return b_in_a || a_in_b;
}

// The slot of key in t: where it is, or the empty slot where it would go (NULL: t is empty).
static StemSlot *stem_slot(const StemTable *t, const char *key, long *compares) {
    if (!t->cap) return NULL;
    for (size_t i = dataset_path_hash(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->v[i].key) return &t->v[i];
        (*compares)++;
        if (!strcmp(t->v[i].key, key)) return &t->v[i];
    }
}

// Sets key's value (a copy of key is kept); -1 when out of memory.
static int stem_put(StemTable *t, const char *key, int value, long *compares) {
    if (2 * (t->n + 1) > t->cap) {   // at most half full: twice as large, filled again
        size_t cap = t->cap ? 2 * t->cap : 64;
        StemSlot *v = calloc(cap, sizeof *v);
        if (!v) return -1;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->v[i].key) continue;
            size_t j = dataset_path_hash(t->v[i].key) & (cap - 1);
            while (v[j].key) j = (j + 1) & (cap - 1);
            v[j] = t->v[i];
        }
        free(t->v);
        t->v = v;
        t->cap = cap;
    }
    StemSlot *at = stem_slot(t, key, compares);
    if (!at->key) {
        if (!(at->key = strdup(key))) return -1;
        t->n++;
    }
    at->value = value;
    return 0;
}

static char *stem_join(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s) { memcpy(s, a, la); memcpy(s + la, b, lb + 1); }
    return s;
}

static const char *const stem_plain[] = {"", NULL};

// 1 when one of name's output names (name + each suffix) is taken, 0 when none is, -1 out of memory.
static int stem_taken(StemSet *s, const char *name) {
    const char *const *suf = s->suffixes ? s->suffixes : stem_plain;
    if (!s->taken.cap)
        for (int r = 0; s->reserved && s->reserved[r]; r++)
            if (stem_put(&s->taken, s->reserved[r], 0, &s->compares)) return -1;
    for (int a = 0; suf[a]; a++) {
        char *full = stem_join(name, suf[a]);
        if (!full) return -1;
        StemSlot *at = stem_slot(&s->taken, full, &s->compares);
        free(full);
        if (at && at->key) return 1;
    }
    return 0;
}

const char *stem_set_claim(StemSet *s, const char *stem) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        char **v = realloc(s->names, sizeof *v * (size_t)cap);
        if (!v) return NULL;
        s->names = v; s->cap = cap;
    }
    // "." and ".." would name the output folder or its parent (DIR/.. is outside DIR).
    const char *whole = *stem && strcmp(stem, ".") && strcmp(stem, "..") ? stem : "image";
    // A stem past STEM_MAX bytes is cut there, before a character (not inside a UTF-8 sequence): a
    // file name near the 255-byte limit wrote nothing ("x.recon.png: file name too long").
    size_t len = strlen(whole);
    if (len > STEM_MAX) {
        len = STEM_MAX;
        while (len > 0 && ((unsigned char)whole[len] & 0xc0) == 0x80) len--;
    }
    char base[STEM_MAX + 1];
    memcpy(base, whole, len);
    base[len] = 0;
    size_t n = len + 24;
    char *name = malloc(n);
    if (!name) return NULL;
    snprintf(name, n, "%s", base);
    // The first free of base, base-<first_suffix>, base-<first_suffix + 1>, ...: names are only ever
    // added, so the numbers this base was given before are still taken and the search starts after them.
    int taken = stem_taken(s, name);
    if (taken > 0) {
        StemSlot *last = stem_slot(&s->last, base, &s->compares);
        int k = last && last->key && last->value >= s->first_suffix ? last->value + 1 : s->first_suffix;
        for (;; k++) {
            snprintf(name, n, "%s-%d", base, k);
            if ((taken = stem_taken(s, name)) != 1) break;
        }
        if (taken == 0 && stem_put(&s->last, base, k, &s->compares)) taken = -1;
    }
    const char *const *kinds = s->suffixes ? s->suffixes : stem_plain;   // name's own output names, now taken
    for (int b = 0; taken == 0 && kinds[b]; b++) {
        char *full = stem_join(name, kinds[b]);
        if (!full || stem_put(&s->taken, full, 0, &s->compares)) taken = -1;
        free(full);
    }
    if (taken) { free(name); return NULL; }
    s->names[s->n++] = name;
    return name;
}

void stem_set_free(StemSet *s) {
    for (int i = 0; i < s->n; i++) free(s->names[i]);
    free(s->names);
    StemTable *t[2] = {&s->taken, &s->last};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < t[k]->cap; i++) free(t[k]->v[i].key);
        free(t[k]->v);
    }
    memset(s, 0, sizeof *s);
}

int output_gone_folder(const char *path, char *gone, size_t n, const char **dir) {
    char *end = gone;
    for (; *end; end += strlen(end) + 1) {
        size_t l = strlen(end);
        if (!strncmp(path, end, l) && path[l] == '/') return 2;
    }
    char top[4096], d[4096];
    if (snprintf(d, sizeof d, "%s", path) >= (int)sizeof d) return 0;
    top[0] = 0;
    for (char *slash; (slash = strrchr(d, '/')) && slash != d;) {
        *slash = 0;
        struct stat st;
        if (stat(d, &st) == 0 || errno != ENOENT) break;
        snprintf(top, sizeof top, "%s", d);   // missing: its parent may be too
    }
    if (!top[0]) return 0;
    size_t l = strlen(top);
    if ((size_t)(end - gone) + l + 2 > n) end = gone;   // no room left: the list starts again
    if (l + 2 > n) return 0;
    memcpy(end, top, l + 1);
    end[l + 1] = 0;
    *dir = end;
    return 1;
}

int output_input_gone(const char *path, char *gone, size_t n) {
    const char *dir = NULL;
    int g = output_gone_folder(path, gone, n, &dir);
    if (g == 1) cli_error(dir, "the folder is gone (moved or deleted during the run)");
    return g != 0;
}

int output_folder_skipped(CliUnread *unread, long before, const char *dir, const Dataset *ds,
                          void (*page)(void *ctx, long before, const char *what, const char *why), void *ctx) {
    // The others a line each among the folder's images, in its scan order, the hidden ones that do not
    // decode one warning after them, no failure (cmd/cli.h, cli_unread_keep_skipped).
    cli_unread_keep_skipped(unread, before, ds);
    int failed = 0;
    for (int k = 0; k < ds->nskipped; k++)
        if (!cli_hidden_file(ds->skipped[k].path)) {
            if (page) page(ctx, before + ds->skipped[k].items, ds->skipped[k].path, ds->skipped[k].reason);
            failed++;
        }
    if (ds->n == 0 && failed == 0) {   // nothing drawn and no failed file says why: the folder is the failure
        char why[96];
        snprintf(why, sizeof why, "no usable image (%d skipped, %d ignored)", ds->nskipped, ds->nignored);
        cli_unread_keep(unread, CLI_AT_BEFORE(before), 0, dir, why);
        if (page) page(ctx, before, dir, why);
        failed++;
    }
    return failed;
}

int output_gather_inputs(char **pos, int npos, long max_pixels, int (*add)(void *ctx, const char *path, const char *cls),
                         void *ctx, int *failed, CliUnread *unread) {
    DatasetOptions opt = {.max_pixels = max_pixels};
    long added = 0;   // each line's place: after the images gathered before it (cmd/cli.h)
    for (int i = 0; i < npos; i++) {
        struct stat st;
        char reason[4200];
        if (stat(pos[i], &st)) {
            cli_unread_keep(unread, CLI_AT_BEFORE(added), 1, pos[i], file_path_reason(pos[i], errno, reason, sizeof reason));
            (*failed)++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (add(ctx, pos[i], NULL)) return -1;
            added++;
            continue;
        }
        Dataset ds;
        char err[CLI_ERR_MAX];
        int src = dataset_scan(pos[i], &opt, &ds, err, sizeof err);
        if (src) { cli_unread_keep(unread, CLI_AT_BEFORE(added), 0, dataset_err_what(src, pos[i]), err); (*failed)++; continue; }
        *failed += output_folder_skipped(unread, added, pos[i], &ds, NULL, NULL);
        for (int k = 0; k < ds.n; k++) {
            const DataItem *it = &ds.items[k];
            if (add(ctx, it->path, it->cls >= 0 ? ds.class_names[it->cls] : NULL)) { dataset_free(&ds); return -1; }
        }
        added += ds.n;
        dataset_free(&ds);
    }
    file_test_gate("VITMAE_FAULT_HOLD_AFTER_SCAN");   // tests: folders changed between the scan and the reads
    return 0;
}
