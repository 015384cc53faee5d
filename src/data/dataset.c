// Folder scan, split, views and pixel statistics (see dataset.h for the rules).
#include "data/dataset.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>
#include "io/files.h"

#define MAX_DEPTH 64

int augment_parse(const char *name, Augment *out) {
    if (!strcmp(name, "none")) *out = AUGMENT_NONE;
    else if (!strcmp(name, "flip")) *out = AUGMENT_FLIP;
    else if (!strcmp(name, "crop")) *out = AUGMENT_CROP;
    else return -1;
    return 0;
}

int augment_interp_parse(const char *name, ImageFilter *out) {
    if (!strcmp(name, "bilinear")) *out = IMAGE_BILINEAR;
    else if (!strcmp(name, "bicubic")) *out = IMAGE_BICUBIC;
    else return -1;
    return 0;
}

double augment_fraction(float scale) {
    char text[32];
    for (int digits = 1; digits <= 9; digits++) {   // 9 significant digits read back as any float
        snprintf(text, sizeof text, "%.*g", digits, (double)scale);
        if ((float)strtod(text, NULL) == scale) break;
    }
    return strtod(text, NULL);
}

// ---------------------------------------------------------------------------------------------
// Walk

typedef struct {
    char *path, *rel;
    const char *cls;   // first-level folder name (owned by the walk's class list) or NULL
    char *reason;      // set for an unreadable folder: already skipped
    long long bytes;   // the file's size (stat), -1 unknown
} Candidate;

typedef struct {
    Candidate *cand;
    int ncand, capcand;
    char **dirnames;   // first-level folder names (class candidates), owned
    int ndirnames, capdirnames;
    dev_t *vdev;
    ino_t *vino;
    int nvisited, capvisited;
    int *vslot;          // open-addressing table of visited folders: index + 1 into vdev/vino, 0 empty
    size_t nslot;        // a power of two, at least twice nvisited (0: none yet)
    long compares;       // folders compared while looking one up (Dataset.scan_dir_compares)
    int nignored, nignored_dirs;
    DataSkip *ignored;   // files that look like images but are not read, with the reason
    int nignored_files, capignored;
    char **met_again;    // first-level folders met again (links to a class, into one, or to the root), owned
    int nmet_again, capmet_again;
    // The first-level folders claimed so far (names owned by walk_dir's listing of the root, or by
    // dirnames), with their real paths, resolved when a link first needs them (inside_other_class).
    const char *root;
    const char **top_name;
    char **top_real;
    int ntop, captop, nresolved;
    int oom;
} Walk;

static int grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

// PNG, JPEG and WebP by name, JPEG also under the other names PIL opens it by: `.jfif` (what a web
// browser names many sites' JPEGs) and `.jpe` (docs/interface.md, section 2).
static int is_candidate_name(const char *name) {
    static const char *const ext[] = {".png", ".jpg", ".jpeg", ".jfif", ".jpe", ".webp"};
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (!strcasecmp(dot, ext[i])) return 1;
    return 0;
}

static char *join(const char *a, const char *b) {
    if (!a || !*a) return strdup(b);
    size_t la = strlen(a), lb = strlen(b);
    int slash = a[la - 1] != '/';
    char *s = malloc(la + slash + lb + 1);
    if (!s) return NULL;
    memcpy(s, a, la);
    if (slash) s[la] = '/';
    memcpy(s + la + slash, b, lb + 1);
    return s;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int add_candidate(Walk *wk, char *path, char *rel, const char *cls, char *reason, long long bytes) {
    if (grow((void **)&wk->cand, &wk->capcand, wk->ncand + 1, sizeof *wk->cand)) {
        free(path); free(rel); free(reason);
        wk->oom = 1;
        return -1;
    }
    wk->cand[wk->ncand++] = (Candidate){path, rel, cls, reason, bytes};
    return 0;
}

// Every bit of (device, inode) moves every bit of the slot (a 64-bit finaliser: shift, multiply,
// shift, multiply, shift). Filesystems number new folders in runs (one after another, or in strides): a
// hash whose low bits followed the inode's low bits put such runs in neighbouring slots, and linear
// probing then walked the whole run (8168 compares for 2041 folders on one CI machine, against about
// 1700 for a random table at this load; tests/test_dataset.c feeds it such runs).
static size_t inode_slot(dev_t dev, ino_t ino, size_t nslot) {
    uint64_t h = (uint64_t)ino ^ (uint64_t)dev * 0x9e3779b97f4a7c15ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (size_t)h & (nslot - 1);
}

// Marks the directory visited; 1 when it already was (a symlink loop or a second link to it). A hash
// of (device, inode): a scan of many folders looks each up in a few compares, where a list of them
// took as many compares as folders so far (a tree of 40,000 folders spent most of its scan here).
static int visit(Walk *wk, const struct stat *st) {
    if (wk->nslot)
        for (size_t s = inode_slot(st->st_dev, st->st_ino, wk->nslot); wk->vslot[s]; s = (s + 1) & (wk->nslot - 1)) {
            int j = wk->vslot[s] - 1;
            wk->compares++;
            if (wk->vdev[j] == st->st_dev && wk->vino[j] == st->st_ino) return 1;
        }
    int cap = wk->capvisited;
    if (grow((void **)&wk->vdev, &cap, wk->nvisited + 1, sizeof *wk->vdev)) { wk->oom = 1; return 1; }
    cap = wk->capvisited;
    if (grow((void **)&wk->vino, &cap, wk->nvisited + 1, sizeof *wk->vino)) { wk->oom = 1; return 1; }
    wk->capvisited = cap;
    wk->vdev[wk->nvisited] = st->st_dev;
    wk->vino[wk->nvisited] = st->st_ino;
    wk->nvisited++;
    if ((size_t)wk->nvisited * 2 > wk->nslot) {   // the table, twice as large, filled again
        size_t n = wk->nslot ? wk->nslot * 2 : 64;
        int *t = calloc(n, sizeof *t);
        if (!t) { wk->oom = 1; return 1; }
        free(wk->vslot);
        wk->vslot = t;
        wk->nslot = n;
        for (int j = 0; j < wk->nvisited - 1; j++) {
            size_t s = inode_slot(wk->vdev[j], wk->vino[j], n);
            while (t[s]) s = (s + 1) & (n - 1);
            t[s] = j + 1;
        }
    }
    size_t s = inode_slot(st->st_dev, st->st_ino, wk->nslot);
    while (wk->vslot[s]) s = (s + 1) & (wk->nslot - 1);
    wk->vslot[s] = wk->nvisited;
    return 0;
}

long dataset_visit_compares(unsigned long long dev, const unsigned long long *ino, int n) {
    Walk wk = {0};
    long r = 0;
    for (int i = 0; i < n && !wk.oom; i++) {
        struct stat st = {0};
        st.st_dev = (dev_t)dev;
        st.st_ino = (ino_t)ino[i];
        visit(&wk, &st);
    }
    r = wk.oom ? -1 : wk.compares;
    free(wk.vdev);
    free(wk.vino);
    free(wk.vslot);
    return r;
}

// stat() of dir/name, whose joined path full may pass PATH_MAX (4095 bytes and a NUL): such an
// entry is looked at relative to its folder, so that it can be listed for what it is (a folder not
// searched, an image not opened) instead of being taken for a file of another kind.
static int stat_entry(const char *dir, const char *name, const char *full, struct stat *st) {
    if (strlen(full) < PATH_MAX) return stat(full, st);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fstatat(fd, name, st, 0);
    close(fd);
    return rc;
}

// lstat() of dir/name, as stat_entry reaches a path past PATH_MAX.
static int lstat_entry(const char *dir, const char *name, const char *full, struct stat *st) {
    if (strlen(full) < PATH_MAX) return lstat(full, st);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fstatat(fd, name, st, AT_SYMLINK_NOFOLLOW);
    close(fd);
    return rc;
}

static int add_top(Walk *wk, const char *name) {
    int cap = wk->captop;
    if (grow((void **)&wk->top_name, &cap, wk->ntop + 1, sizeof *wk->top_name)) { wk->oom = 1; return -1; }
    cap = wk->captop;
    if (grow((void **)&wk->top_real, &cap, wk->ntop + 1, sizeof *wk->top_real)) { wk->oom = 1; return -1; }
    wk->captop = cap;
    wk->top_name[wk->ntop] = name;
    wk->top_real[wk->ntop++] = NULL;
    return 0;
}

// 1 when dir/name (full) is a link to a folder inside a first-level folder other than cls (NULL: any),
// one claimed before any was entered: its images are that class's, counted when the scan enters it,
// so the link is a folder met again, not a way for them into cls or into a class of the link's name
// (docs/interface.md, section 2, "Finding files"). Decided before the folder is marked visited, so that
// the class's own walk still enters it. A path that cannot be resolved is no such link.
static int inside_other_class(Walk *wk, const char *dir, const char *name, const char *full, const char *cls) {
    struct stat lst;
    if (lstat_entry(dir, name, full, &lst) != 0 || !S_ISLNK(lst.st_mode)) return 0;
    char *real = realpath(full, NULL);
    if (!real) return 0;
    for (; wk->nresolved < wk->ntop; wk->nresolved++) {
        char *top = join(wk->root, wk->top_name[wk->nresolved]);
        wk->top_real[wk->nresolved] = top ? realpath(top, NULL) : NULL;
        free(top);
    }
    int inside = 0;
    for (int k = 0; k < wk->ntop && !inside; k++) {
        const char *t = wk->top_real[k];
        size_t len = t ? strlen(t) : 0;
        inside = t && (!cls || strcmp(wk->top_name[k], cls) != 0) && !strncmp(real, t, len) && real[len] == '/';
    }
    free(real);
    return inside;
}

// Visits dir (path on disk, rel relative to the root, "" for the root) in sorted order.
static int walk_dir(Walk *wk, const char *path, const char *rel, const char *cls, int depth, char *err, size_t errlen) {
    DIR *d = opendir(path);
    char **names = NULL;
    int nnames = 0, cap = 0;
    struct dirent *de = NULL;
    // readdir ends a listing with NULL both at its end and on a failure (EIO of a failing disk), the
    // second with errno set: a listing cut short is the folder not read, never a folder of fewer images.
    while (d && (errno = 0, de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (grow((void **)&names, &cap, nnames + 1, sizeof *names)) { wk->oom = 1; break; }
        if (!(names[nnames] = strdup(de->d_name))) { wk->oom = 1; break; }
        nnames++;
    }
    int e = de ? 0 : errno;   // de is an entry when out of memory stopped the listing
    if (d) closedir(d);
    // A folder that can be listed but not searched (read without execute permission, as `chmod -R 644`
    // leaves every folder) names files that cannot be opened, nor told folders from files: its
    // sub-folders were counted as other files, their images left out without a word. It is a folder
    // not read, as one that cannot be listed. Told by its first entry's lstat (no link followed: only
    // this folder's permission counts), not by access(), which a network or FUSE filesystem may answer
    // otherwise than its lookups.
    if (!e && nnames) {
        struct stat st;
        char *first = join(path, names[0]);
        if (first && lstat_entry(path, names[0], first, &st) != 0 && errno == EACCES) e = EACCES;
        free(first);
    }
    if (e) {
        for (int i = 0; i < nnames; i++) free(names[i]);
        free(names);
        char why[160], reason[128];
        if (depth == 0) { snprintf(err, errlen, "%s", file_reason(e, reason, sizeof reason)); return -1; }
        snprintf(why, sizeof why, "cannot read folder: %s", file_reason(e, reason, sizeof reason));
        add_candidate(wk, strdup(path), strdup(rel), cls, strdup(why), -1);
        return 0;
    }
    if (nnames) qsort(names, (size_t)nnames, sizeof *names, cmp_str);
    // The class folders are claimed first, in sorted order, so that a link below one class to another
    // class's folder finds it visited: an image's class is the first-level folder it sits in
    // (docs/interface.md), never the folder of a link to it. A second first-level link to one folder
    // is left out (claimed[i] = -1). The folders themselves claim before the links (pass 0, then 1): a
    // link beside a class folder to it (`kitty -> cat`) is the one left out, whichever name sorts first,
    // so the images keep the name of the folder they sit in, not the link's. A link into a claimed
    // folder (`DIR/a_sub -> cat/inner`) is left out too, and so is one below a class into another
    // class's folder (`cat/y -> ../dog/inner`): inside_other_class.
    signed char *claimed = depth == 0 && nnames ? calloc((size_t)nnames, 1) : NULL;
    if (depth == 0 && nnames && !claimed) wk->oom = 1;
    for (int pass = 0; claimed && pass < 2 && !wk->oom; pass++)
        for (int i = 0; i < nnames && !wk->oom; i++) {
            if (pass == 1 && claimed[i] != 2) continue;   // pass 1: the links pass 0 left (2)
            char *full = join(path, names[i]);
            struct stat st;
            if (!full) { wk->oom = 1; break; }
            // Pass 0 looks at the entry itself (a folder's lstat is its stat), pass 1 where a link leads.
            int got = pass == 0 ? lstat_entry(path, names[i], full, &st) : stat_entry(path, names[i], full, &st);
            if (got != 0) claimed[i] = 0;
            else if (pass == 0 && S_ISLNK(st.st_mode)) claimed[i] = 2;
            else if (S_ISDIR(st.st_mode))
                claimed[i] = (pass == 1 && inside_other_class(wk, path, names[i], full, NULL)) || visit(wk, &st) ? -1 : 1;
            else claimed[i] = 0;
            if (claimed[i] == 1) add_top(wk, names[i]);
            free(full);
        }
    for (int i = 0; i < nnames && !wk->oom; i++) {
        char *full = join(path, names[i]), *sub = join(rel, names[i]);
        if (!full || !sub) { free(full); free(sub); wk->oom = 1; break; }
        struct stat st;
        int found = stat_entry(path, names[i], full, &st) == 0, is_dir = found && S_ISDIR(st.st_mode);
        int stat_errno = found ? 0 : errno;
        // No path can name it (open, opendir and the decoders take paths): listed as skipped, with why.
        int too_long = strlen(full) >= PATH_MAX;
        if (is_dir) {
            int seen = claimed ? claimed[i] != 1 : inside_other_class(wk, path, names[i], full, cls) || visit(wk, &st);
            if (seen) {
                wk->nignored++;
                wk->nignored_dirs++;
                if (depth == 0 && !grow((void **)&wk->met_again, &wk->capmet_again, wk->nmet_again + 1, sizeof *wk->met_again)) {
                    wk->met_again[wk->nmet_again++] = names[i];
                    names[i] = NULL;   // now owned by the list
                } else if (depth == 0) {
                    wk->oom = 1;
                }
                free(full); free(sub);
                continue;
            }
            if (too_long || depth + 1 >= MAX_DEPTH) {   // listed, not silently left out: it may hold images
                char why[96];
                if (too_long) snprintf(why, sizeof why, "folder path longer than %d bytes (the system limit): not searched", PATH_MAX - 1);
                else snprintf(why, sizeof why, "folder nested more than %d levels deep: not searched", MAX_DEPTH);
                add_candidate(wk, full, sub, cls, strdup(why), -1);
                continue;
            }
            const char *sub_cls = cls;
            if (depth == 0) {
                if (grow((void **)&wk->dirnames, &wk->capdirnames, wk->ndirnames + 1, sizeof *wk->dirnames)) {
                    wk->oom = 1; free(full); free(sub); break;
                }
                sub_cls = wk->dirnames[wk->ndirnames++] = names[i];
                names[i] = NULL;   // now owned by the class list
            }
            walk_dir(wk, full, sub, sub_cls, depth + 1, err, errlen);
            free(full);
            free(sub);
        } else if (is_candidate_name(names[i]) ||
                   (found && S_ISREG(st.st_mode) && !too_long && image_unread_format(names[i]) && image_file_is_read(full))) {
            char why[96] = "";
            if (too_long) snprintf(why, sizeof why, "path longer than %d bytes (the system limit): not opened", PATH_MAX - 1);
            // broken links and loops fail at decode
            add_candidate(wk, full, sub, cls, why[0] ? strdup(why) : NULL, found ? (long long)st.st_size : -1);
        } else if (!found && names[i][0] != '.' && !image_unread_format(names[i]) &&
                   lstat_entry(path, names[i], full, &st) == 0 && S_ISLNK(st.st_mode)) {
            // A link that leads nowhere (its target moved or deleted, a drive not mounted, a folder this
            // user cannot enter) may have been a folder of images, a whole class: listed as skipped with
            // why, as a candidate's link to nothing is, not counted among the other files.
            char why[4200];
            add_candidate(wk, full, sub, cls, strdup(file_path_reason(full, stat_errno, why, sizeof why)), -1);
        } else {
            wk->nignored++;
            const char *why = image_unread_format(names[i]);
            if (why && !grow((void **)&wk->ignored, &wk->capignored, wk->nignored_files + 1, sizeof *wk->ignored)) {
                char *reason = strdup(why);
                if (reason) { wk->ignored[wk->nignored_files++] = (DataSkip){full, reason, 0}; full = NULL; }
            }
            free(full);
            free(sub);
        }
    }
    for (int i = 0; i < nnames; i++) free(names[i]);
    free(names);
    free(claimed);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Decode

typedef struct {
    char *reason;          // NULL when ok
    int w, h, c;
    int uniform;           // every pixel the same colour (decoded scans only): 1, or 2 with alpha dropped
} Decoded;

static int is_uniform(const Image *im) {
    size_t n = (size_t)im->w * im->h;
    for (size_t p = 1; p < n; p++)
        if (memcmp(im->px + p * im->c, im->px, sizeof(float) * im->c)) return 0;
    return 1;
}

static void decode_one(const Candidate *cd, long max_pixels, int lazy, Decoded *out) {
    memset(out, 0, sizeof *out);
    if (cd->reason) { out->reason = strdup(cd->reason); return; }
    char why[256] = "";
    int rc;
    if (lazy) {
        rc = image_probe(cd->path, max_pixels, &out->w, &out->h, &out->c, why, sizeof why);
    } else {
        Image im;
        int alpha;
        rc = image_load_alpha(cd->path, max_pixels, &im, &alpha, why, sizeof why);
        if (rc == 0) {
            *out = (Decoded){NULL, im.w, im.h, im.c, is_uniform(&im) ? 1 + alpha : 0};
            image_free(&im);
        }
    }
    if (rc) {
        out->reason = strdup(why[0] ? why : "cannot decode");
        if (!out->reason) out->reason = strdup("out of memory");
    }
}

// What follows a reason that is the process's failure, not the file's (image_why_is_resource): the
// note for a limit such as ulimit; nothing after an image's pixels, whose reason says what they needed.
static const char *resource_note(const char *why) {
    return image_why_is_resource(why) == 1 ? " " DATASET_RESOURCE_NOTE : "";
}

static DataShared *shared_new(int n, size_t budget, const char *store_dir);
static void shared_free(DataShared *sh, int n);

int dataset_scan(const char *root, const DatasetOptions *opt, Dataset *ds, char *err, size_t errlen) {
    memset(ds, 0, sizeof *ds);
    DatasetOptions o = opt ? *opt : (DatasetOptions){0};
    ds->max_pixels = o.max_pixels > 0 ? o.max_pixels : VITMAE_DEFAULT_MAX_PIXELS;
    struct stat st;
    if (stat(root, &st) != 0) {   // a link to nothing named so, as an INPUT's and a folder's entries are
        char reason[4400];
        snprintf(err, errlen, "%s", file_path_reason(root, errno, reason, sizeof reason));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) { snprintf(err, errlen, "not a folder"); return -1; }

    Walk wk = {0};
    wk.root = root;
    visit(&wk, &st);
    int rc = walk_dir(&wk, root, "", NULL, 0, err, errlen);
    Decoded *dec = NULL;
    if (rc == 0 && !wk.oom) dec = calloc(wk.ncand ? (size_t)wk.ncand : 1, sizeof *dec);
    if (rc == 0 && !dec) { snprintf(err, errlen, "out of memory while scanning"); rc = -1; }
    int ncand = rc == 0 ? wk.ncand : 0;
    #pragma omp parallel for schedule(dynamic, 4)
    for (int i = 0; i < ncand; i++) decode_one(&wk.cand[i], ds->max_pixels, o.lazy, &dec[i]);
    // A file this process lacked the memory (or the open files) to read is not a broken file: the scan
    // fails, naming it, instead of listing it as skipped (the same folder then gave other images).
    for (int i = 0; rc == 0 && i < ncand; i++)
        if (dec[i].reason && image_why_is_resource(dec[i].reason)) {
            snprintf(err, errlen, "%s: %s%s", wk.cand[i].path, dec[i].reason, resource_note(dec[i].reason));
            rc = DATASET_ERR_FILE;
        }

    // Items, classes (first-level folders in sorted order, kept when they hold a usable image), skips.
    int nok = 0, nskip = 0;
    for (int i = 0; rc == 0 && i < wk.ncand; i++) dec[i].reason ? nskip++ : nok++;
    if (rc == 0) {
        ds->root = strdup(root);
        ds->items = calloc(nok ? (size_t)nok : 1, sizeof *ds->items);
        ds->skipped = calloc(nskip ? (size_t)nskip : 1, sizeof *ds->skipped);
        ds->class_names = calloc(wk.ndirnames ? (size_t)wk.ndirnames : 1, sizeof *ds->class_names);
        ds->class_counts = calloc(wk.ndirnames ? (size_t)wk.ndirnames : 1, sizeof *ds->class_counts);
        ds->work_size = o.work_size > 0 ? o.work_size : 0;
        ds->lazy = o.lazy;
        size_t budget = ds->work_size && o.cache_mb > 0 ? (size_t)o.cache_mb * 1024 * 1024 : 0;
        ds->shared = shared_new(nok, budget, ds->work_size ? o.store_dir : NULL);
        if (!ds->root || !ds->items || !ds->skipped || !ds->class_names || !ds->class_counts || !ds->shared) {
            snprintf(err, errlen, "out of memory while scanning");
            rc = -1;
        }
    }
    const char *last_cls = NULL;
    ds->all_grey = 1;
    for (int i = 0; rc == 0 && i < wk.ncand; i++) {
        Candidate *cd = &wk.cand[i];
        if (dec[i].reason) {
            ds->skipped[ds->nskipped++] = (DataSkip){cd->path, dec[i].reason, ds->n};
            dec[i].reason = NULL;
            free(cd->rel);
            cd->path = cd->rel = NULL;
            continue;
        }
        int cls = -1;
        if (cd->cls) {
            // Candidates arrive grouped by first-level folder in sorted order.
            if (cd->cls != last_cls) {
                ds->class_names[ds->nclasses] = strdup(cd->cls);
                ds->nclasses++;
                last_cls = cd->cls;
            }
            cls = ds->nclasses - 1;
            ds->class_counts[cls]++;
        } else {
            ds->nroot++;
        }
        DataItem *it = &ds->items[ds->n];
        *it = (DataItem){cd->path, cd->rel, cls, dec[i].w, dec[i].h, dec[i].c, dec[i].uniform, cd->bytes};
        ds->nuniform += dec[i].uniform != 0;
        cd->path = cd->rel = NULL;
        if (ds->n == 0 || it->w < ds->min_w) ds->min_w = it->w;
        if (ds->n == 0 || it->h < ds->min_h) ds->min_h = it->h;
        if (it->w > ds->max_w) ds->max_w = it->w;
        if (it->h > ds->max_h) ds->max_h = it->h;
        if (it->c != 1) ds->all_grey = 0;
        ds->n++;
    }
    if (ds->n == 0) ds->all_grey = 0;
    for (int i = 0; i < ds->nclasses && rc == 0; i++)
        if (!ds->class_names[i]) { snprintf(err, errlen, "out of memory while scanning"); rc = -1; }
    if (rc == 0 && wk.oom) { snprintf(err, errlen, "out of memory while scanning"); rc = -1; }

    for (int i = 0; i < wk.ncand; i++) {
        free(wk.cand[i].path);
        free(wk.cand[i].rel);
        free(wk.cand[i].reason);
        if (dec) free(dec[i].reason);
    }
    free(dec);
    free(wk.cand);
    for (int i = 0; i < wk.ndirnames; i++) free(wk.dirnames[i]);
    free(wk.dirnames);
    free(wk.vdev);
    free(wk.vino);
    free(wk.vslot);
    for (int k = 0; k < wk.ntop; k++) free(wk.top_real[k]);
    free(wk.top_real);
    free(wk.top_name);
    ds->met_again = wk.met_again;
    ds->nmet_again = wk.nmet_again;
    ds->scan_dir_compares = wk.compares;
    ds->nignored = wk.nignored;
    ds->nignored_dirs = wk.nignored_dirs;
    ds->ignored = wk.ignored;
    ds->nignored_files = wk.nignored_files;
    if (rc) dataset_free(ds);
    return rc;
}

void dataset_free(Dataset *ds) {
    if (!ds) return;
    for (int i = 0; i < ds->n; i++) { free(ds->items[i].path); free(ds->items[i].rel); }
    free(ds->items);
    for (int i = 0; i < ds->nclasses; i++) free(ds->class_names[i]);
    free(ds->class_names);
    free(ds->class_counts);
    for (int i = 0; i < ds->nskipped; i++) { free(ds->skipped[i].path); free(ds->skipped[i].reason); }
    free(ds->skipped);
    for (int i = 0; i < ds->nignored_files; i++) { free(ds->ignored[i].path); free(ds->ignored[i].reason); }
    free(ds->ignored);
    for (int i = 0; i < ds->nmet_again; i++) free(ds->met_again[i]);
    free(ds->met_again);
    shared_free(ds->shared, ds->n);
    free(ds->root);
    memset(ds, 0, sizeof *ds);
}

// ---------------------------------------------------------------------------------------------
// Split

uint64_t dataset_path_hash(const char *rel) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
}

int dataset_held_out(uint64_t key, double val_frac) {
    return key < (uint64_t)llround(val_frac * 10000.0);
}

// Item i's split key (dataset.h): its path's hash % 10000.
static uint64_t split_key(const Dataset *ds, int i) { return dataset_path_hash(ds->items[i].rel) % 10000; }

int dataset_split(const Dataset *ds, double val_frac, int **train, int *ntrain, int **val, int *nval) {
    return dataset_split_pinned(ds, val_frac, NULL, train, ntrain, val, nval);
}

int dataset_split_pinned(const Dataset *ds, double val_frac, DatasetSplitPin *pin, int **train, int *ntrain, int **val,
                         int *nval) {
    *train = malloc(sizeof(int) * (ds->n ? (size_t)ds->n : 1));
    *val = malloc(sizeof(int) * (ds->n ? (size_t)ds->n : 1));
    *ntrain = *nval = 0;
    if (!*train || !*val) { free(*train); free(*val); *train = *val = NULL; return -1; }
    // The pinned images among the items (a pin whose file is gone, or a run that validates on nothing, pins none).
    int pin_val = -1, pin_train = -1;
    for (int i = 0; pin && val_frac > 0 && i < ds->n; i++) {
        if (pin->held_out[0] && !strcmp(ds->items[i].rel, pin->held_out)) pin_val = i;
        if (pin->trains[0] && !strcmp(ds->items[i].rel, pin->trains)) pin_train = i;
    }
    // Fallback candidates: the smallest residue to hold out, the largest to train, neither the other pin's image.
    int best = -1, worst = -1;
    uint64_t best_key = UINT64_MAX, worst_key = 0;
    for (int i = 0; i < ds->n; i++) {
        uint64_t key = split_key(ds, i);
        if (i != pin_train && key < best_key) { best_key = key; best = i; }
        if (i != pin_val && (worst < 0 || key > worst_key)) { worst_key = key; worst = i; }
        if (i != pin_train && (i == pin_val || dataset_held_out(key, val_frac))) (*val)[(*nval)++] = i;
    }
    if (worst < 0) worst = pin_val;   // the pinned validation image alone: it trains (below)
    int held = pin_val, trains = pin_train;
    if (*nval == 0 && val_frac > 0 && ds->n >= 2 && best >= 0) (*val)[(*nval)++] = held = best;
    if (*nval > 0 && *nval == ds->n) {   // every image held out: the largest residue trains
        int k = 0;
        for (int v = 0; v < *nval; v++) if ((*val)[v] != worst) (*val)[k++] = (*val)[v];
        *nval = k;
        trains = worst;
        if (held == worst) held = -1;
    }
    for (int i = 0, v = 0; i < ds->n; i++) {
        if (v < *nval && (*val)[v] == i) { v++; continue; }
        (*train)[(*ntrain)++] = i;
    }
    if (pin) {   // what the rule did not decide, for the run to pin
        if (held >= 0 && dataset_held_out(split_key(ds, held), val_frac)) held = -1;
        if (trains >= 0 && !dataset_held_out(split_key(ds, trains), val_frac)) trains = -1;
        snprintf(pin->held_out, sizeof pin->held_out, "%s", held >= 0 ? ds->items[held].rel : "");
        snprintf(pin->trains, sizeof pin->trains, "%s", trains >= 0 ? ds->items[trains].rel : "");
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Working images: the cache, the store, late failures

typedef struct { uint8_t *px; int w, h, c; } WorkImage;

struct DataShared {
    pthread_mutex_t lock;
    WorkImage *cache;     // [n]; an entry, once set, stays until dataset_free (read without the lock)
    size_t budget, bytes;
    char *store_dir;      // absolute, or NULL
    char **broken;        // [n] why the item failed at first use (lazy scans), or NULL
    uint8_t *taken;       // [n] broken[i] already handed to dataset_take_broken
    uint8_t *busy;        // [n] a thread is making item i's working image: another waits for it (made_cond)
    pthread_cond_t made_cond;
    long decoded, cache_hits, store_hits, store_writes, store_left, nbroken;
    double store_min_free;   // bytes the store leaves free on its disk (dataset_set_store_min_free)
};

static DataShared *shared_new(int n, size_t budget, const char *store_dir) {
    DataShared *sh = calloc(1, sizeof *sh);
    if (!sh) return NULL;
    size_t m = n ? (size_t)n : 1;
    sh->cache = calloc(m, sizeof *sh->cache);
    sh->broken = calloc(m, sizeof *sh->broken);
    sh->taken = calloc(m, 1);
    sh->busy = calloc(m, 1);
    sh->budget = budget;
    if (store_dir) sh->store_dir = realpath(store_dir, NULL);
    if (!sh->cache || !sh->broken || !sh->taken || !sh->busy || (store_dir && !sh->store_dir)) {
        free(sh->cache); free(sh->broken); free(sh->taken); free(sh->busy); free(sh->store_dir); free(sh);
        return NULL;
    }
    pthread_mutex_init(&sh->lock, NULL);
    pthread_cond_init(&sh->made_cond, NULL);
    return sh;
}

static void shared_free(DataShared *sh, int n) {
    if (!sh) return;
    for (int i = 0; i < n; i++) { free(sh->cache[i].px); free(sh->broken[i]); }
    free(sh->cache);
    free(sh->broken);
    free(sh->taken);
    free(sh->busy);
    free(sh->store_dir);
    pthread_cond_destroy(&sh->made_cond);
    pthread_mutex_destroy(&sh->lock);
    free(sh);
}

void dataset_stats(const Dataset *ds, DataStats *st) {
    memset(st, 0, sizeof *st);
    DataShared *sh = ds->shared;
    if (!sh) return;
    pthread_mutex_lock(&sh->lock);
    *st = (DataStats){sh->decoded, sh->cache_hits, sh->store_hits, sh->store_writes, sh->store_left, sh->nbroken,
                      sh->bytes, sh->budget};
    pthread_mutex_unlock(&sh->lock);
}

// The pid of a store file's temporary name written on host, "<16 hex>.work.tmp.<host>.<pid>.<serial>"
// (store_write), or 0 for any other name (file_sweep_dead).
static long store_leftover(const char *name, const char *host) {
    for (int i = 0; i < 16; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
    long pid;
    const char *p = strncmp(name + 16, ".work.tmp.", 10) ? NULL : file_name_host_pid(name + 26, host, &pid);
    if (!p || *p++ != '.' || *p < '1' || *p > '9') return 0;
    size_t digits = strspn(p, "0123456789");
    return digits <= 10 && !p[digits] ? pid : 0;
}

int dataset_set_store(Dataset *ds, const char *dir, char *err, size_t errlen) {
    if (!ds->shared || ds->work_size <= 0) { snprintf(err, errlen, "no working images to store"); return -1; }
    char *abs = realpath(dir, NULL);
    struct stat st;
    int folder = abs && stat(abs, &st) == 0 && S_ISDIR(st.st_mode);
    if (!folder || access(abs, W_OK) != 0) {
        // A folder that takes no files says why, as an --out folder does: an immutable one (chattr +i)
        // with the way off it (docs/interface.md, section 1).
        int e = errno;
        char reason[4300];
        if (folder) snprintf(err, errlen, "%s: cannot write in this folder: %s", dir, file_folder_reason(dir, e, reason, sizeof reason));
        else snprintf(err, errlen, "%s: not a writable folder", dir);
        free(abs);
        return -1;
    }
    // Its files' names, "<16 hex>.work" and their temporary "....tmp.<host>.<pid>.<serial>", within the
    // 4096-byte path limit: a folder near it was taken and never written to (its files' opens failed, each
    // image decoded again, not a word; docs/data.md, "Cache, store and prefetch").
    size_t most = 4095 - (1 + 21 + FILE_TMP_HOST_EXTRA);
    if (strlen(abs) > most) {
        snprintf(err, errlen, "%s: a store folder whose path is %zu bytes is too long: the names of its files would "
                 "pass the 4096-byte path limit (at most %zu bytes)", dir, strlen(abs), most);
        free(abs);
        return -1;
    }
    // Once a run, as it opens the store: the temporary files of this host's killed runs (a SIGKILL or a
    // power cut; a stop signal removes its own), whose maker is certainly gone. Another host's, or a
    // live process's, stay (docs/data.md).
    file_sweep_dead(abs, store_leftover);
    pthread_mutex_lock(&ds->shared->lock);
    free(ds->shared->store_dir);
    ds->shared->store_dir = abs;
    pthread_mutex_unlock(&ds->shared->lock);
    return 0;
}

void dataset_store_remove(Dataset *ds) {
    if (!ds->shared || !ds->shared->store_dir) return;
    pthread_mutex_lock(&ds->shared->lock);
    char *dir = ds->shared->store_dir;
    ds->shared->store_dir = NULL;   // no working image written there from now on
    pthread_mutex_unlock(&ds->shared->lock);
    // Listed and removed in the folder held (fstatat, unlinkat), never through a link; the store's own
    // names only ("<16 hex>.work", store_key), regular files only.
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) close(fd);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *n = e->d_name;
        int ok = strlen(n) == 21 && !strcmp(n + 16, ".work");
        for (int i = 0; ok && i < 16; i++) ok = (n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f');
        struct stat st;
        if (ok && fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) unlinkat(dirfd(d), n, 0);
    }
    if (d) closedir(d);
    free(dir);
}

void dataset_set_store_min_free(Dataset *ds, double min_free) {
    if (ds->shared) ds->shared->store_min_free = min_free;
}

const char *dataset_store_dir(const Dataset *ds) {
    return ds->shared ? ds->shared->store_dir : NULL;
}

// Item i's working image's bytes, from its header's size (dataset.h: shorter side at most work_size).
static size_t work_bytes(const Dataset *ds, int i) {
    const DataItem *it = &ds->items[i];
    long T = ds->work_size, w = it->w, h = it->h;
    if (T > 0 && w > T && h > T) image_resize_size(w, h, T, &w, &h);
    return (size_t)w * h * it->c;
}

size_t dataset_working_bytes(const Dataset *ds, const int *idx, int n) {
    size_t total = 0;
    for (int k = 0; k < n; k++) total += work_bytes(ds, idx ? idx[k] : k);
    return total;
}

size_t dataset_largest_samples(const Dataset *ds) {
    size_t most = 0;
    for (int i = 0; i < ds->n; i++) {
        size_t b = (size_t)ds->items[i].w * ds->items[i].h * ds->items[i].c;
        if (b > most) most = b;
    }
    return most;
}

void dataset_set_cache_budget(Dataset *ds, size_t bytes) {
    DataShared *sh = ds->shared;
    if (!sh || !ds->work_size) return;
    pthread_mutex_lock(&sh->lock);
    sh->budget = bytes;
    pthread_mutex_unlock(&sh->lock);
}

size_t dataset_cache_budget(const Dataset *ds) {
    DataStats st;
    dataset_stats(ds, &st);
    return st.cache_budget;
}

static void count(DataShared *sh, long *counter) {
    pthread_mutex_lock(&sh->lock);
    (*counter)++;
    pthread_mutex_unlock(&sh->lock);
}

// Decodes item i's working image (see dataset.h): 8-bit, shorter side at most work_size.
static int work_decode(const Dataset *ds, int i, WorkImage *out, char *why, size_t whylen) {
    Image im;
    if (image_load_working(ds->items[i].path, ds->max_pixels, ds->work_size, &im, why, whylen)) return -1;
    int w = im.w, h = im.h, c = im.c;
    size_t n = (size_t)w * h * c;
    uint8_t *px = malloc(n ? n : 1);
    if (!px) { image_free(&im); snprintf(why, whylen, "out of memory"); return -1; }
    for (size_t k = 0; k < n; k++) {
        float v = im.px[k] * 255.0f;
        v = v < 0 ? 0 : v > 255 ? 255 : v;
        px[k] = (uint8_t)(int)(v + 0.5f);
    }
    image_free(&im);
    *out = (WorkImage){px, w, h, c};
    return 0;
}

// The store: one file per working image, STORE_DIR/<16 hex digits of the key's hash>.work:
//   "VMWK" | u32 version | u32 w | u32 h | u32 c | u32 crc32 | u32 key length | key | pixels
// (u32 little-endian). The crc32 covers w, h and c as written, then the pixels: in version 1 it covered
// the pixels alone, so a file whose w and h were changed (swapped, or 2w x h/2) read as an image of
// another shape. Version 3: CMYK JPEGs decode as PIL's (docs/testing.md), so a working image of an
// older version may hold other pixels for the same file. Files of another version are misses,
// rewritten. The key is "<absolute path>\n<size>\n<mtime s>.<mtime ns>\n<ctime s>.<ctime ns>\n<inode>\n<work_size>":
// a file edited in place with its size and mtime kept (exiftool -P, touch -r) has a new ctime, which
// no user call sets, and one put in its place by a rename a new inode (not the device, which another
// host of a shared store may number otherwise).
#define STORE_VERSION 3u
// A store file: its head ("VMWK", version, w, h, c, CRC-32, key length: 7 u32), its key, its pixels.
enum { STORE_HEAD = 28 };
static size_t store_file_bytes(const char *key, size_t pixels) { return STORE_HEAD + strlen(key) + pixels; }

// The store file's crc32: of head's w, h and c (bytes 8 to 19), then of the n pixels.
static uint32_t store_crc(const uint8_t *head, const uint8_t *px, size_t n) {
    return libdeflate_crc32(libdeflate_crc32(0, head + 8, 12), px, n);
}

static int store_key(const Dataset *ds, int i, char *key, size_t keylen, char *file, size_t filelen) {
    struct stat st;
    char *abs = realpath(ds->items[i].path, NULL);
    if (!abs || stat(abs, &st) != 0) { free(abs); return -1; }
    struct timespec changed = st.st_ctim;
    snprintf(key, keylen, "%s\n%lld\n%lld.%09ld\n%lld.%09ld\n%llu\n%d", abs, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec, (long long)changed.tv_sec,
             (long)changed.tv_nsec, (unsigned long long)st.st_ino, ds->work_size);
    free(abs);
    snprintf(file, filelen, "%s/%016llx.work", ds->shared->store_dir,
             (unsigned long long)dataset_path_hash(key));
    return 0;
}

static uint32_t get_u32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void put_u32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }

static int store_read(const char *file, const char *key, int T, WorkImage *out) {
    // O_NONBLOCK and a regular file only: a FIFO (or a device) under a store file's name would
    // otherwise block the read for ever; anything but a regular file is a miss, and rewritten.
    int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat sb;
    FILE *f = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? fdopen(fd, "rb") : NULL;
    if (!f) { close(fd); return -1; }
    uint8_t head[STORE_HEAD];
    size_t klen = strlen(key);
    int ok = fread(head, 1, sizeof head, f) == sizeof head && !memcmp(head, "VMWK", 4) &&
             get_u32(head + 4) == STORE_VERSION && get_u32(head + 24) == klen;
    uint32_t w = ok ? get_u32(head + 8) : 0, h = ok ? get_u32(head + 12) : 0, c = ok ? get_u32(head + 16) : 0;
    // A working image is at most work_size on its shorter side; the longer side is bounded by the pixel limit.
    ok = ok && (c == 1 || c == 3) && w >= 1 && h >= 1 && (w <= (uint32_t)T || h <= (uint32_t)T) &&
         (uint64_t)w * h * c < (1ull << 31);   // n fits an int, as the pixel counts that follow take it
    char *k = ok ? malloc(klen + 1) : NULL;
    ok = ok && k && fread(k, 1, klen, f) == klen && !memcmp(k, key, klen);
    free(k);
    size_t n = (size_t)w * h * c;
    uint8_t *px = ok ? malloc(n) : NULL;
    ok = ok && px && fread(px, 1, n, f) == n && fgetc(f) == EOF &&
         store_crc(head, px, n) == get_u32(head + 20);
    fclose(f);
    if (!ok) { free(px); return -1; }
    *out = (WorkImage){px, (int)w, (int)h, (int)c};
    return 0;
}

// Atomic: a temporary file in the store, then rename. A failure only means the next run decodes again.
// The temporary file is io/files.h's (file_tmp_name_host, file_tmp_create): a name of its own,
// "<hash>.work.tmp.<host>.<pid>.<serial>", that a kill leaves for the next store open (store_leftover), removed from
// the store's folder by a failure or by a stop that ends the run at once (file_stop_now), so that the
// store keeps no stray file, which nothing would remove. Test gate VITMAE_FAULT_HOLD_IN_STORE_WRITE once
// it is written, before its rename.
static int store_write(const char *file, const char *key, const WorkImage *wi) {
    char tmp[4400 + FILE_TMP_HOST_EXTRA];
    if (file_tmp_name_host(file, tmp, sizeof tmp)) return -1;
    int fd = file_tmp_create(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        if (fd >= 0) { close(fd); file_tmp_remove(tmp); }
        else file_tmp_forget(tmp);
        return -1;
    }
    size_t klen = strlen(key), n = (size_t)wi->w * wi->h * wi->c;
    uint8_t head[STORE_HEAD];
    memcpy(head, "VMWK", 4);
    put_u32(head + 4, STORE_VERSION);
    put_u32(head + 8, (uint32_t)wi->w);
    put_u32(head + 12, (uint32_t)wi->h);
    put_u32(head + 16, (uint32_t)wi->c);
    put_u32(head + 20, store_crc(head, wi->px, n));
    put_u32(head + 24, (uint32_t)klen);
    int bad = fwrite(head, 1, sizeof head, f) != sizeof head || fwrite(key, 1, klen, f) != klen ||
              fwrite(wi->px, 1, n, f) != n;
    bad |= fclose(f) != 0;
    if (!bad) file_test_gate("VITMAE_FAULT_HOLD_IN_STORE_WRITE");
    if (bad || rename(tmp, file) != 0) { file_tmp_remove(tmp); return -1; }
    file_tmp_forget(tmp);
    return 0;
}

size_t dataset_unstored_bytes(const Dataset *ds, const int *idx, int n) {
    if (!ds->shared || !ds->shared->store_dir || ds->work_size <= 0) return dataset_working_bytes(ds, idx, n);
    size_t total = 0;
    char key[4400], file[4400];
    for (int k = 0; k < n; k++) {
        int i = idx ? idx[k] : k;
        size_t bytes = work_bytes(ds, i);
        struct stat sb;
        // A stat, not a read: a regular file of the size store_write gives this key's image.
        int stored = store_key(ds, i, key, sizeof key, file, sizeof file) == 0 && stat(file, &sb) == 0 &&
                     S_ISREG(sb.st_mode) && (size_t)sb.st_size == store_file_bytes(key, bytes);
        if (!stored) total += bytes;
    }
    return total;
}

// Whether the store's disk keeps at least sh->store_min_free bytes free once wi's file (store_file_bytes)
// is written there (docs/data.md, "Cache, store and prefetch"). A disk whose free space cannot be told
// is written to, as without the floor.
static int store_has_room(const DataShared *sh, const char *key, const WorkImage *wi) {
    double room;
    if (sh->store_min_free <= 0 || file_free_bytes(sh->store_dir, &room) != 0) return 1;
    return room - (double)store_file_bytes(key, (size_t)wi->w * wi->h * wi->c) >= sh->store_min_free;
}

// Item i's working image: from the cache, the store, or decoded (then stored and cached when the
// budget allows). *owned = 1 when the caller must free out->px. One thread at a time makes an item's
// image: another that wants it meanwhile (two loader threads, the same photo in two batches ahead)
// waits, then takes it from the cache, where it nearly always is, so that a photo is decoded once;
// the counts of decoded images do not depend on the threads (docs/data.md, "Cache, store and prefetch").
static int work_make(const Dataset *ds, int i, WorkImage *out, int *owned, char *why, size_t whylen);
static int work_image(const Dataset *ds, int i, WorkImage *out, int *owned, char *why, size_t whylen) {
    DataShared *sh = ds->shared;
    *owned = 0;
    pthread_mutex_lock(&sh->lock);
    WorkImage hit = sh->cache[i];
    while (!hit.px && sh->busy[i]) {
        pthread_cond_wait(&sh->made_cond, &sh->lock);
        hit = sh->cache[i];
    }
    if (hit.px) sh->cache_hits++;
    else sh->busy[i] = 1;
    pthread_mutex_unlock(&sh->lock);
    if (hit.px) { *out = hit; return 0; }
    int rc = work_make(ds, i, out, owned, why, whylen);
    pthread_mutex_lock(&sh->lock);
    sh->busy[i] = 0;
    pthread_cond_broadcast(&sh->made_cond);
    pthread_mutex_unlock(&sh->lock);
    return rc;
}

// work_image's making of item i's image, not in the cache, this thread the one making it.
static int work_make(const Dataset *ds, int i, WorkImage *out, int *owned, char *why, size_t whylen) {
    DataShared *sh = ds->shared;
    char key[4400], file[4400];
    int keyed = sh->store_dir && store_key(ds, i, key, sizeof key, file, sizeof file) == 0;
    WorkImage wi;
    if (keyed && store_read(file, key, ds->work_size, &wi) == 0) {
        count(sh, &sh->store_hits);
    } else {
        if (work_decode(ds, i, &wi, why, whylen)) return -1;
        count(sh, &sh->decoded);
        int wrote = !keyed ? -1 : store_has_room(sh, key, &wi) ? store_write(file, key, &wi) : 1;
        if (wrote == 0) count(sh, &sh->store_writes);
        else if (wrote == 1) count(sh, &sh->store_left);
    }
    size_t bytes = (size_t)wi.w * wi.h * wi.c;
    pthread_mutex_lock(&sh->lock);
    if (sh->bytes + bytes <= sh->budget) {
        sh->cache[i] = wi;
        sh->bytes += bytes;
    } else {
        *owned = 1;
    }
    pthread_mutex_unlock(&sh->lock);
    *out = wi;
    return 0;
}

static void mark_broken(const Dataset *ds, int i, const char *why) {
    DataShared *sh = ds->shared;
    pthread_mutex_lock(&sh->lock);
    if (!sh->broken[i]) {
        sh->broken[i] = strdup(why[0] ? why : "cannot decode");
        sh->nbroken++;
    }
    pthread_mutex_unlock(&sh->lock);
}

static int is_broken(const Dataset *ds, int i) {
    pthread_mutex_lock(&ds->shared->lock);
    int b = ds->shared->broken[i] != NULL;
    pthread_mutex_unlock(&ds->shared->lock);
    return b;
}

int dataset_is_broken(const Dataset *ds, int i) {
    return ds->lazy && ds->shared && i >= 0 && i < ds->n && is_broken(ds, i);
}

int dataset_next_chunk(const Dataset *ds, const int *list, int n, int start, int max, int *pos, int *end) {
    int m = 0, p = start;
    for (; p < n && m < max; p++)
        if (!dataset_is_broken(ds, list[p])) pos[m++] = p;
    *end = p;
    return m;
}

int dataset_any_broken(const Dataset *ds, const int *items, int n) {
    for (int k = 0; k < n; k++)
        if (dataset_is_broken(ds, items[k])) return 1;
    return 0;
}

int dataset_take_broken(const Dataset *ds, DataSkip *out, int *items, int max) {
    DataShared *sh = ds->shared;
    int n = 0;
    if (!sh) return 0;
    pthread_mutex_lock(&sh->lock);
    for (int i = 0; i < ds->n && n < max; i++) {
        if (!sh->broken[i] || sh->taken[i]) continue;
        out[n].path = strdup(ds->items[i].path);
        out[n].reason = strdup(sh->broken[i]);
        out[n].items = 0;
        if (items) items[n] = i;
        sh->taken[i] = 1;
        n++;
    }
    pthread_mutex_unlock(&sh->lock);
    return n;
}

// ---------------------------------------------------------------------------------------------
// Views

// The source image of item i as floats: its working image (work_size > 0) or a fresh full decode.
// On failure why holds the reason alone; the callers name the file.
static int item_source(const Dataset *ds, int i, Image *im, char *why, size_t whylen) {
    if (ds->work_size > 0) {
        WorkImage wi;
        int owned;
        if (work_image(ds, i, &wi, &owned, why, whylen)) return -1;
        size_t n = (size_t)wi.w * wi.h * wi.c;
        im->px = malloc(sizeof(float) * (n ? n : 1));
        if (im->px)
            for (size_t k = 0; k < n; k++) im->px[k] = (float)wi.px[k] / 255.0f;
        if (owned) free(wi.px);
        if (!im->px) { snprintf(why, whylen, "out of memory"); return -1; }
        im->w = wi.w;
        im->h = wi.h;
        im->c = wi.c;
        return 0;
    }
    return image_load(ds->items[i].path, ds->max_pixels, im, why, whylen);
}

// "PATH: why" for item i into err.
static int item_error(const Dataset *ds, int i, const char *why, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: %s", ds->items[i].path, why[0] ? why : "cannot decode");
    return -1;
}

int dataset_working_image(const Dataset *ds, int i, Image *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= ds->n) { snprintf(err, errlen, "item %d out of range", i); return -1; }
    char why[256] = "";
    return item_source(ds, i, out, why, sizeof why) ? item_error(ds, i, why, err, errlen) : 0;
}

// The 8-bit-rounded view in the source's channels (tmp [size][size][c]) converted into out.
static void finish_view(float *tmp, int size, int c, int channels, float *out) {
    size_t n = (size_t)size * size;
    image_quantize8(tmp, n * c);
    image_convert_channels(tmp, c, out, channels, n);
}

// Item i's view (0 <= i < n); on failure why holds the reason alone.
static int item_view(const Dataset *ds, int i, int size, int channels, Augment aug, Rng *rng, float *out, char *why,
                     size_t whylen) {
    Image im;
    if (item_source(ds, i, &im, why, whylen)) return -1;
    float *tmp = malloc(sizeof(float) * (size_t)size * size * im.c);
    if (!tmp) { image_free(&im); snprintf(why, whylen, "out of memory"); return -1; }
    if (aug.kind == AUG_CROP ? image_random_resized_crop(&im, size, im.c, aug.crop_lo, aug.interp, rng, tmp)
                             : image_eval_view(&im, size, (ViewSpec){aug.crop_pct, aug.interp}, im.c, tmp)) {
        free(tmp); image_free(&im); snprintf(why, whylen, "out of memory"); return -1;   // not a black view
    }
    finish_view(tmp, size, im.c, channels, out);
    if (aug.kind != AUG_NONE && rng_uniform(rng) < 0.5f) image_flip_h(out, size, size, channels);
    free(tmp);
    image_free(&im);
    // RandAugment on the view in the model's channels, after the crop and flip as timm's transform
    if (aug.ra.layers && rng && randaug_image(out, size, size, channels, &aug.ra, aug.interp, aug.fill, rng, NULL)) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 0;
}

int dataset_train_view(const Dataset *ds, int i, int size, int channels, Augment aug, Rng *rng,
                       float *out, char *err, size_t errlen) {
    if (i < 0 || i >= ds->n) { snprintf(err, errlen, "item %d out of range", i); return -1; }
    char why[256] = "";
    return item_view(ds, i, size, channels, aug, rng, out, why, sizeof why) ? item_error(ds, i, why, err, errlen) : 0;
}

int dataset_eval_view(const Dataset *ds, int i, int size, int channels, float *out, char *err, size_t errlen) {
    return dataset_train_view(ds, i, size, channels, AUGMENT_NONE, NULL, out, err, errlen);
}

// 0 while the data folder is still there; else -1 with err naming it. A read that fails because the
// whole folder went away (renamed, deleted, unmounted during the run) is not a broken file: marking
// each image broken flooded stderr with one "skipped" line per file, trained on what the cache still
// held, and ended with "no image of its batch decodes", as if the images were corrupt.
static int root_check(const Dataset *ds, char *err, size_t errlen) {
    struct stat st;
    if (!ds->root) return 0;
    int e = stat(ds->root, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (!e) return 0;
    const char *role = ds->root_role ? ds->root_role : "data folder";
    if (e == ENOENT || e == ENOTDIR)
        snprintf(err, errlen, "%s: the %s is gone (moved or deleted during the run)", ds->root, role);
    else {
        char reason[128];
        snprintf(err, errlen, "%s: the %s cannot be reached: %s", ds->root, role, file_reason(e, reason, sizeof reason));
    }
    return -1;
}

int dataset_root_gone(const Dataset *ds, char *err, size_t errlen) { return root_check(ds, err, errlen); }

// Item `item`'s view with the random stream of batch image key: 0 made (*used = item), 1 broken (now
// marked: the next candidate is tried), or the error that stops the batch (err set).
static int try_item(const Dataset *ds, int item, int key, int size, int channels, Augment aug, uint64_t seed,
                    uint64_t step, float *out, int *used, char *err, size_t errlen) {
    char why[256] = "";
    if (item < 0 || item >= ds->n) { snprintf(err, errlen, "item %d out of range", item); return -1; }
    Rng r;
    rng_derive(&r, seed, step, (uint64_t)key);
    if (ds->lazy && is_broken(ds, item)) return 1;
    if (item_view(ds, item, size, channels, aug, &r, out, why, sizeof why) == 0) {
        if (used) *used = item;
        return 0;
    }
    if (root_check(ds, err, errlen)) return DATASET_ERR_FILE;
    if (image_why_is_resource(why)) {   // not the file's fault: the run stops rather than drop it
        snprintf(err, errlen, "%s: %s%s", ds->items[item].path, why, resource_note(why));
        return DATASET_ERR_FILE;
    }
    if (!ds->lazy) { item_error(ds, item, why, err, errlen); return DATASET_ERR_FILE; }
    mark_broken(ds, item, why);
    return 1;
}

// 1 when every item of items[0 .. n) is marked broken because its folder went away during the run
// (moved, deleted): the reason file_reason gives ENOENT, and the folder holding the file is gone too.
// A file deleted alone, its folder still there, is a broken file as any other.
static int all_gone(const Dataset *ds, const int *items, int n) {
    char missing[128];
    file_reason(ENOENT, missing, sizeof missing);
    int gone = 1;
    pthread_mutex_lock(&ds->shared->lock);
    for (int k = 0; k < n && gone; k++) {
        const char *why = ds->shared->broken[items[k]];
        gone = why && !strcmp(why, missing);
    }
    pthread_mutex_unlock(&ds->shared->lock);
    for (int k = 0; k < n && gone; k++) {
        const char *path = ds->items[items[k]].path, *slash = strrchr(path, '/');
        char dir[4096];
        struct stat st;
        gone = slash && slash > path && snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path) < (int)sizeof dir &&
               stat(dir, &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
    }
    return gone;
}

// The way on from a broken batch of one image (dataset.h, batch_of_one_way), and the words before it.
#define NO_OTHER "a batch of one image has no other to take its place"
#define REMOVE_OR "remove the file, or "
static const char *batch_of_one_way(const Dataset *ds) {
    return ds->batch_of_one_way ? ds->batch_of_one_way : REMOVE_OR "train with a --batch of 2 or more";
}

// 1 when item has a class and no other item is of it: a run that keeps its classes (finetune's resume)
// cannot lose the file.
static int only_of_class(const Dataset *ds, int item) {
    int cls = ds->items[item].cls, sole = cls >= 0;
    for (int i = 0; sole && i < ds->n; i++)
        if (i != item && ds->items[i].cls == cls) sole = 0;
    return sole;
}

// Image k of items[0 .. n), drawn with the random stream of batch image key; *used (may be NULL): the
// item whose image it is (items[k], or the one that took the place of a broken items[k]). pool[0 ..
// npool) (may be NULL): the items a batch whose every file went away draws from (dataset_batch_image).
static int keyed_image(const Dataset *ds, const int *items, int n, int k, int key, const int *pool, int npool,
                       int size, int channels, Augment aug, uint64_t seed, uint64_t step, float *out, int *used,
                       char *err, size_t errlen) {
    for (int t = 0; t < n; t++) {
        int rc = try_item(ds, items[(k + t) % n], key, size, channels, aug, seed, step, out, used, err, errlen);
        if (rc != 1) return rc;
    }
    // Every file of the batch gone from the disk (a class folder deleted during the run): those images
    // are left out from now on, not broken (docs/data.md), so one that decodes is drawn from the pool
    // instead, the first from a place (seed, step, key) chooses, in the pool's order; it depends only on
    // the files, the seed and the step, as a replacement from the batch. (Keys are below 2^31: the
    // place's stream is another than any image's.)
    if (pool && npool > 0 && ds->lazy && all_gone(ds, items, n)) {
        Rng p;
        rng_derive(&p, seed, step, (uint64_t)key | 1ull << 62);
        uint32_t from = rng_below(&p, (uint32_t)npool);
        for (int t = 0; t < npool; t++) {
            int rc = try_item(ds, pool[(from + (uint32_t)t) % (uint32_t)npool], key, size, channels, aug, seed, step,
                              out, used, err, errlen);
            if (rc != 1) return rc;
        }
        // Nothing in the pool decodes: every folder left is gone too (the data folder still there).
        snprintf(err, errlen, "%s: no training image is left: the folders that held them are gone (moved or deleted "
                 "during the run)", ds->root ? ds->root : "data");
        return DATASET_ERR_FILE;
    }
    // Every image of the batch is broken past its header (each one now marked): nothing to put in
    // image k's place.
    int item = items[k];
    pthread_mutex_lock(&ds->shared->lock);
    const char *why_k = ds->shared->broken[item] ? ds->shared->broken[item] : "cannot decode";
    int cls = ds->items[item].cls, sole = n == 1 && ds->batch_of_one_sole_way && only_of_class(ds, item);
    if (sole)
        snprintf(err, errlen, "%s: %s; " NO_OTHER ", and it is the only image of "
                 "class '%s', so removing it would take the class away (a resumed run keeps its classes): %s",
                 ds->items[item].path, why_k, ds->class_names[cls], ds->batch_of_one_sole_way);
    else if (n == 1)
        snprintf(err, errlen, "%s: %s; %s: %s", ds->items[item].path, why_k, NO_OTHER, batch_of_one_way(ds));
    else
        snprintf(err, errlen, "%s: %s; no image of its batch decodes to take its place (all %d are broken)",
                 ds->items[item].path, why_k, n);
    pthread_mutex_unlock(&ds->shared->lock);
    return DATASET_ERR_BROKEN;
}

void dataset_broken_stop_kept(const Dataset *ds, int keeps_classes, const char *ckpt, const char *resume, long step,
                              char *err, size_t errlen) {
    const char *way = batch_of_one_way(ds);
    size_t l = strlen(err), w = strlen(way), r = strlen(REMOVE_OR);
    static const char several[] = " are broken)";
    if (l >= sizeof several - 1 && !strcmp(err + l - (sizeof several - 1), several)) {
        snprintf(err + l, errlen - l, "; %s holds step %ld (remove them and continue with --resume %s)", ckpt, step,
                 resume);
        return;
    }
    // Left as they are: another stop's line, and the only image of its class in a resumed finetune (its
    // way is the new run already).
    if (l < w + 2 || strcmp(err + l - w, way) || strncmp(err + l - w - 2, ": ", 2) || strncmp(way, REMOVE_OR, r))
        return;
    // The new run's way where the file's removal is the resume's ("train with" would read as this run's).
    const char *other = ds->batch_of_one_way ? way + r : "start a new run with a --batch of 2 or more";
    // The file's class in a run that keeps its classes (finetune's resume): the only image of it cannot go.
    int item = -1;
    for (int i = 0; i < ds->n && item < 0; i++) {
        size_t p = strlen(ds->items[i].path);
        if (!strncmp(err, ds->items[i].path, p) && !strncmp(err + p, ": ", 2)) item = i;
    }
    int cls = item >= 0 ? ds->items[item].cls : -1, sole = keeps_classes && item >= 0 && only_of_class(ds, item);
    l -= w + 2;   // the way and its ": " written again (other, ckpt and resume lie outside err)
    if (sole)
        snprintf(err + l, errlen - l, ", and it is the only image of class '%s', so removing it would take the class "
                 "away (a resumed run keeps its classes): %s", ds->class_names[cls], other);
    else
        snprintf(err + l, errlen - l, ": remove the file and continue with --resume %s (its checkpoint holds step %ld), "
                 "or %s", resume, step, other);
}

int dataset_batch_image(const Dataset *ds, const int *items, int n, int k, const int *pool, int npool, int size,
                        int channels, Augment aug, uint64_t seed, uint64_t step, float *out, int *item, char *err,
                        size_t errlen) {
    return keyed_image(ds, items, n, k, k, pool, npool, size, channels, aug, seed, step, out, item, err, errlen);
}

// Images k0 .. k1 - 1 of items[0 .. n) in parallel; image k uses the random stream of key_base + k.
static int load_images(const Dataset *ds, const int *items, int n, int k0, int k1, int key_base, int size,
                       int channels, Augment aug, uint64_t seed, uint64_t step, float *out, char *err, size_t errlen) {
    if (k0 < 0 || k1 > n || k0 > k1) { snprintf(err, errlen, "batch range [%d, %d) outside [0, %d)", k0, k1, n); return -1; }
    int m = k1 - k0;
    int *status = calloc(m > 0 ? (size_t)m : 1, sizeof *status);
    enum { ERRLEN = 4096 + 512 };   // a path and its reason
    char *errs = calloc(m > 0 ? (size_t)m : 1, ERRLEN);
    if (!status || !errs) { free(status); free(errs); snprintf(err, errlen, "out of memory"); return -1; }
    size_t per = (size_t)size * size * channels;
    #pragma omp parallel for schedule(dynamic, 1)
    for (int j = 0; j < m; j++)
        status[j] = keyed_image(ds, items, n, k0 + j, key_base + k0 + j, NULL, 0, size, channels, aug, seed, step,
                                out + (size_t)j * per, NULL, errs + (size_t)j * ERRLEN, ERRLEN);
    int rc = 0;
    for (int j = 0; j < m && !rc; j++)
        if (status[j]) { snprintf(err, errlen, "%s", errs + (size_t)j * ERRLEN); rc = status[j]; }
    free(status);
    free(errs);
    return rc;
}

int dataset_load_range(const Dataset *ds, const int *items, int n, int k0, int k1, int size, int channels,
                       Augment aug, uint64_t seed, uint64_t step, float *out, char *err, size_t errlen) {
    return load_images(ds, items, n, k0, k1, 0, size, channels, aug, seed, step, out, err, errlen);
}

int dataset_load_batch(const Dataset *ds, const int *items, int n, int size, int channels, Augment aug,
                       uint64_t seed, uint64_t step, float *out, char *err, size_t errlen) {
    return dataset_load_range(ds, items, n, 0, n, size, channels, aug, seed, step, out, err, errlen);
}

int dataset_pixel_stats(const Dataset *ds, const int *idx, int n, int limit, double pixel_budget, int size,
                        int channels, float *mean, float *std, char *err, size_t errlen) {
    if (limit <= 0) limit = 10000;
    if (pixel_budget <= 0) pixel_budget = DATASET_STATS_PIXELS;
    int m = n < limit ? n : limit;
    // A pixel budget too (docs/interface.md, pixel normalisation): on a folder of large photos the
    // statistics decode a few dozen of them, not every one, so start-up stays short. Decided from
    // the header sizes alone, so the sample is the same on every run, thread count and rank.
    double px = 0;
    for (int k = 0; k < n; k++) px += (double)ds->items[idx[k]].w * ds->items[idx[k]].h;
    if (n > 0 && px / n * m > pixel_budget) {
        double fit = pixel_budget / (px / n);
        m = fit < DATASET_STATS_MIN ? DATASET_STATS_MIN : (int)fit;
        if (m > n) m = n;
    }
    if (m <= 0) {
        for (int c = 0; c < channels; c++) { mean[c] = 0; std[c] = 1; }
        return 0;
    }
    double *sums = calloc((size_t)m * channels * 2, sizeof *sums);
    int *status = calloc((size_t)m, sizeof *status);
    char *errs = calloc((size_t)m, 256);
    if (!sums || !status || !errs) {
        free(sums); free(status); free(errs);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t per = (size_t)size * size;
    #pragma omp parallel
    {
        float *view = malloc(sizeof(float) * per * channels);
        #pragma omp for schedule(dynamic, 4)
        for (int k = 0; k < m; k++) {
            int item = idx[(size_t)k * n / m];
            char *why = errs + (size_t)k * 256;   // the reason alone
            if (!view) { status[k] = -1; snprintf(why, 256, "out of memory"); continue; }
            status[k] = item_view(ds, item, size, channels, AUGMENT_NONE, NULL, view, why, 256);
            if (status[k] && image_why_is_resource(why)) {   // the process's limit, not the file's fault
                size_t l = strlen(why);
                snprintf(why + l, 256 - l, "%s", resource_note(why));
            } else if (status[k] && ds->lazy) {   // broken past its header: left out of the statistics
                mark_broken(ds, item, why);
                status[k] = 1;
            }
            if (status[k]) continue;
            double *s = sums + (size_t)k * channels * 2;
            for (size_t p = 0; p < per; p++)
                for (int c = 0; c < channels; c++) {
                    double v = view[p * channels + c];
                    s[2 * c] += v;
                    s[2 * c + 1] += v * v;
                }
        }
        free(view);
    }
    int rc = 0, used = 0;
    for (int k = 0; k < m && !rc; k++) {
        if (status[k] < 0) rc = item_error(ds, idx[(size_t)k * n / m], errs + (size_t)k * 256, err, errlen) ? DATASET_ERR_FILE : 0;
        used += status[k] == 0;
    }
    if (!rc && used == 0) { snprintf(err, errlen, "no image decodes for the pixel statistics"); rc = -1; }
    for (int c = 0; c < channels && !rc; c++) {
        double s = 0, s2 = 0, count = (double)used * per;
        for (int k = 0; k < m; k++) { s += sums[((size_t)k * channels + c) * 2]; s2 += sums[((size_t)k * channels + c) * 2 + 1]; }
        double mu = s / count, var = s2 / count - mu * mu;
        double sd = var > 0 ? sqrt(var) : 0;
        mean[c] = (float)mu;
        std[c] = sd < 1e-6 ? 1.0f : (float)sd;
    }
    free(sums);
    free(status);
    free(errs);
    return rc;
}
