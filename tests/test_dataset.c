// dataset: scan order, classes, skipped / ignored counts, hostile folder entries, split, cache vs
// decode, batches for any thread count, pixel statistics, the crop's smallest area as written.
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <omp.h>
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "check.h"
#include "data/dataset.h"

static char base[600], root[700];

// readdir as the C library's, except in a folder whose path ends in readdir_fail_dir: there, after
// readdir_fail_after entries, it fails with EIO (a failing disk), as readdir says a failure: NULL with
// errno set. This definition takes the place of the library's for the scan (linked into this program).
static const char *readdir_fail_dir;
static int readdir_fail_after;
struct dirent *readdir(DIR *d) {
    static struct dirent *(*real)(DIR *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "readdir");
    if (readdir_fail_dir) {
        char fd[64], path[1200];
        snprintf(fd, sizeof fd, "/proc/self/fd/%d", dirfd(d));
        ssize_t n = readlink(fd, path, sizeof path - 1);
        size_t k = strlen(readdir_fail_dir);
        path[n > 0 ? n : 0] = 0;
        if (n > 0 && (size_t)n >= k && !strcmp(path + n - k, readdir_fail_dir) && readdir_fail_after-- <= 0) {
            errno = EIO;
            return NULL;
        }
    }
    return real(d);
}

static const char *at(const char *base, const char *rel) {
    static char buf[8][1200];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", base, rel);
    return buf[k];
}

static void mkdirs(const char *base, const char *rel) { mkdir(at(base, rel), 0777); }

// A w x h x c PNG with a deterministic pattern (seed varies it).
static void put_png(const char *base, const char *rel, int w, int h, int c, int seed) {
    uint8_t *px = malloc((size_t)w * h * c);
    for (int i = 0; i < w * h * c; i++) px[i] = (uint8_t)((i * 37 + seed * 101 + (i / c) * 13) & 255);
    char err[256];
    if (png_write(at(base, rel), px, w, h, c, NULL, err, sizeof err)) { fprintf(stderr, "%s: %s\n", rel, err); exit(2); }
    free(px);
}

// A 16-bit grey PNG via libpng (our png_write is 8-bit only).
static void put_png16(const char *base, const char *rel, int w, int h) {
    FILE *f = fopen(at(base, rel), "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) exit(2);
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    uint8_t *row = malloc((size_t)w * 2);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) { uint16_t v = (uint16_t)((x * 4099 + y * 257) * 3); row[2 * x] = (uint8_t)(v >> 8); row[2 * x + 1] = (uint8_t)v; }
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
    free(row);
}

static void put_text(const char *base, const char *rel, const char *text) {
    FILE *f = fopen(at(base, rel), "wb");
    fputs(text, f);
    fclose(f);
}

static void build_tree(void) {
    snprintf(root, sizeof root, "%s/tree", base);
    mkdir(root, 0777);
    put_png(root, "a_root.png", 8, 8, 1, 1);
    put_text(root, "notes.txt", "not an image\n");
    put_text(root, "zz.JPG", "text pretending to be a JPEG\n");
    mkdirs(root, "B_class");
    put_png(root, "B_class/2.png", 8, 8, 1, 2);
    put_png(root, "B_class/10.png", 6, 9, 1, 3);
    put_png(root, "B_class/bad.png", 8, 8, 1, 4);
    truncate(at(root, "B_class/bad.png"), 60);
    mkdirs(root, "cats");
    mkdirs(root, "cats/sub");
    mkdirs(root, "cats/sub/deeper");
    put_png(root, "cats/x.png", 8, 8, 1, 5);
    put_png(root, "cats/\xff.png", 8, 8, 1, 6);            // a name that is not UTF-8
    put_png(root, "cats/sub/y.jpeg", 12, 10, 1, 7);        // a PNG named .jpeg: content decides
    put_png16(root, "cats/sub/deeper/z.PNG", 9, 7);         // 16-bit: cached as its view, not 8-bit
    mkdirs(root, "dogs");
    put_png(root, "dogs/d.png", 40, 30, 3, 8);              // large: cached as its evaluation view
    mkdirs(root, "dogs/fake.png");                          // a folder named like an image
    put_png(root, "dogs/fake.png/inner.png", 8, 8, 3, 9);
    symlink("l2.png", at(root, "dogs/l1.png"));
    symlink("l1.png", at(root, "dogs/l2.png"));
    symlink("..", at(root, "dogs/loop"));                   // a folder loop
    symlink("../dogs", at(root, "cats/more"));              // a class folder linked from another class
    mkdirs(root, "empty_class");
    put_text(root, "empty_class/readme.md", "no images here\n");
}

static void test_scan(void) {
    Dataset ds;
    char err[256] = "";
    int rc = dataset_scan(root, NULL, &ds, err, sizeof err);
    CHECK(rc == 0, "scan: %s", err);
    if (rc) return;
    CHECK(ds.n == 9, "ok = %d, want 9", ds.n);
    CHECK(ds.nskipped == 4, "skipped = %d, want 4", ds.nskipped);
    CHECK(ds.nignored == 4, "ignored = %d, want 4 (notes.txt, readme.md, the loop folder, cats/more)", ds.nignored);
    const char *want_rel[9] = {"B_class/10.png", "B_class/2.png", "a_root.png", "cats/sub/deeper/z.PNG",
                               "cats/sub/y.jpeg", "cats/x.png", "cats/\xff.png", "dogs/d.png",
                               "dogs/fake.png/inner.png"};
    int want_cls[9] = {0, 0, -1, 1, 1, 1, 1, 2, 2};
    for (int i = 0; i < 9 && i < ds.n; i++) {
        CHECK(!strcmp(ds.items[i].rel, want_rel[i]), "item %d is %s, want %s", i, ds.items[i].rel, want_rel[i]);
        CHECK(ds.items[i].cls == want_cls[i], "item %d class %d, want %d", i, ds.items[i].cls, want_cls[i]);
        CHECK(!strcmp(ds.items[i].path, at(root, want_rel[i])), "item %d path %s", i, ds.items[i].path);
    }
    CHECK(ds.nclasses == 3, "classes = %d", ds.nclasses);
    const char *want_cn[3] = {"B_class", "cats", "dogs"};
    int want_cc[3] = {2, 4, 2};
    for (int i = 0; i < 3 && i < ds.nclasses; i++)
        CHECK(!strcmp(ds.class_names[i], want_cn[i]) && ds.class_counts[i] == want_cc[i], "class %d: %s %d",
              i, ds.class_names[i], ds.class_counts[i]);
    CHECK(ds.nroot == 1, "unclassified = %d", ds.nroot);
    const char *want_skip[4] = {"B_class/bad.png", "dogs/l1.png", "dogs/l2.png", "zz.JPG"};
    const char *want_why[4] = {"truncated PNG data", "Too many levels of symbolic links",
                               "Too many levels of symbolic links", "not a PNG, JPEG or WebP file"};
    for (int i = 0; i < 4 && i < ds.nskipped; i++) {
        CHECK(!strcmp(ds.skipped[i].path, at(root, want_skip[i])), "skipped %d: %s", i, ds.skipped[i].path);
        CHECK(strstr(ds.skipped[i].reason, want_why[i]) != NULL, "skipped %d reason: %s", i, ds.skipped[i].reason);
    }
    CHECK(ds.min_w == 6 && ds.min_h == 7 && ds.max_w == 40 && ds.max_h == 30, "size range %dx%d .. %dx%d",
          ds.min_w, ds.min_h, ds.max_w, ds.max_h);
    CHECK(ds.all_grey == 0, "RGB images present: not all grey");
    CHECK(ds.work_size == 0 && ds.lazy == 0, "no working images without options");
    dataset_free(&ds);

    // Thread count does not change the result.
    omp_set_num_threads(1);
    Dataset one;
    rc = dataset_scan(root, NULL, &one, err, sizeof err);
    omp_set_num_threads(2);
    CHECK(rc == 0 && one.n == 9 && one.nskipped == 4, "single-threaded scan");
    if (rc == 0) dataset_free(&one);

    // A listing cut short by a read error is a folder not read (skipped, with why), never a folder of
    // fewer images: readdir's NULL with errno set is not the end of the folder.
    readdir_fail_dir = "/tree/cats/sub";
    readdir_fail_after = 1;
    rc = dataset_scan(root, NULL, &one, err, sizeof err);
    readdir_fail_dir = NULL;
    CHECK(rc == 0, "scan with cats/sub failing: %s", err);
    if (rc == 0) {
        int found = 0;
        for (int i = 0; i < one.nskipped; i++)
            found |= !strcmp(one.skipped[i].path, at(root, "cats/sub")) &&
                     !strcmp(one.skipped[i].reason, "cannot read folder: Input/output error");
        CHECK(one.n == 7 && one.nskipped == 5 && found, "a folder whose listing fails: %d ok, %d skipped, listed %s",
              one.n, one.nskipped, found ? "with its reason" : "not at all");
        dataset_free(&one);
    }
    readdir_fail_dir = "/tree";
    readdir_fail_after = 3;
    err[0] = 0;
    rc = dataset_scan(root, NULL, &one, err, sizeof err);
    readdir_fail_dir = NULL;
    CHECK(rc == -1 && strstr(err, "Input/output error"), "the root's listing failing fails the scan: rc %d, %s", rc, err);
    if (rc == 0) dataset_free(&one);

    // Greyscale-only folder; an empty folder; a missing one; a file.
    const char *grey = at(root, "B_class");
    rc = dataset_scan(grey, NULL, &ds, err, sizeof err);
    CHECK(rc == 0 && ds.n == 2 && ds.all_grey == 1 && ds.nclasses == 0 && ds.nroot == 2, "grey folder");
    if (rc == 0) dataset_free(&ds);
    rc = dataset_scan(at(root, "empty_class"), NULL, &ds, err, sizeof err);
    CHECK(rc == 0 && ds.n == 0 && ds.nignored == 1, "folder without images scans to n = 0");
    if (rc == 0) dataset_free(&ds);
    CHECK(dataset_scan(at(root, "nope"), NULL, &ds, err, sizeof err) == -1, "missing folder fails");
    CHECK(dataset_scan(at(root, "notes.txt"), NULL, &ds, err, sizeof err) == -1 && strstr(err, "not a folder"),
          "a file is not a folder: %s", err);
    // --max-pixels: the 40x30 image (1200 px) is skipped at a limit of 1000.
    DatasetOptions small = {.max_pixels = 1000};
    rc = dataset_scan(root, &small, &ds, err, sizeof err);
    CHECK(rc == 0 && ds.n == 8 && ds.nskipped == 5, "max_pixels skips the large image (n=%d)", ds.n);
    if (rc == 0) dataset_free(&ds);

    // Lazy scan (headers only): bad.png keeps its header, so it is an item until its pixels are read;
    // sizes and channels are the decoded ones; the pixel limit still applies from the header.
    DatasetOptions lazy = {.lazy = 1};
    rc = dataset_scan(root, &lazy, &ds, err, sizeof err);
    CHECK(rc == 0 && ds.n == 10 && ds.nskipped == 3, "lazy scan: n=%d skipped=%d", ds.n, ds.nskipped);
    if (rc == 0) {
        CHECK(!strcmp(ds.items[2].rel, "B_class/bad.png") && ds.items[1].w == 8 && ds.items[2].w == 8, "lazy order");
        CHECK(ds.items[4].w == 9 && ds.items[4].h == 7 && ds.items[4].c == 1 && ds.items[8].c == 3, "lazy sizes");
        float v[4 * 4];
        CHECK(dataset_eval_view(&ds, 2, 4, 1, v, err, sizeof err) == -1 && strstr(err, "bad.png: truncated PNG data"),
              "broken pixels found at first use: %s", err);
        dataset_free(&ds);
    }
    lazy.max_pixels = 1000;
    rc = dataset_scan(root, &lazy, &ds, err, sizeof err);
    CHECK(rc == 0 && ds.n == 9 && ds.nskipped == 4, "lazy scan checks the pixel limit (n=%d)", ds.n);
    if (rc == 0) dataset_free(&ds);

    // Files that look like images but are not read are listed; WebP is a candidate.
    char odd[700];
    snprintf(odd, sizeof odd, "%s/odd", base);
    mkdir(odd, 0777);
    put_text(odd, "a.svg", "<svg/>");
    put_text(odd, "b.HEIC", "....");
    put_text(odd, "c.txt", "text");
    put_text(odd, "d.webp", "RIFF....WEBPVP8 garbage");
    put_png(odd, "e.png", 4, 4, 3, 1);
    // A PNG under a name of a format not read (a photo renamed .heic by an exporter) is read by its
    // content, as any image is: it was ignored with "HEIC is not read; convert it to JPEG".
    put_png(odd, "f.heic", 4, 4, 3, 2);
    put_png(odd, "g.apng", 4, 4, 3, 3);   // ... but not .apng, whose bytes are a PNG's: ignored by its name
    rc = dataset_scan(odd, NULL, &ds, err, sizeof err);
    CHECK(rc == 0 && ds.n == 2 && ds.nignored == 4 && ds.nignored_files == 3 && ds.nskipped == 1, "odd folder (n=%d)", ds.n);
    CHECK(rc == 0 && ds.n == 2 && strstr(ds.items[1].path, "f.heic"), "a PNG named f.heic is an image");
    if (rc == 0 && ds.nignored_files == 3 && ds.nskipped == 1) {
        CHECK(strstr(ds.ignored[0].path, "a.svg") && strstr(ds.ignored[0].reason, "SVG"), "svg: %s", ds.ignored[0].reason);
        CHECK(strstr(ds.ignored[1].path, "b.HEIC") && strstr(ds.ignored[1].reason, "HEIC"), "heic: %s", ds.ignored[1].reason);
        CHECK(strstr(ds.ignored[2].path, "g.apng") && strstr(ds.ignored[2].reason, "animated PNG"), "apng: %s", ds.ignored[2].reason);
        CHECK(strstr(ds.skipped[0].path, "d.webp") && strstr(ds.skipped[0].reason, "WebP"), "webp: %s", ds.skipped[0].reason);
    }
    if (rc == 0) dataset_free(&ds);
}

// A tree of many folders (a class per person, a folder per day): entering each folder once is a
// lookup among those entered, which must not cost a compare per folder entered so far (40,000
// folders spent most of the scan there, growing with their square). A link back to the root is
// still found entered.
static void test_many_folders(void) {
    char many[700], err[256];
    snprintf(many, sizeof many, "%s/many", base);
    mkdir(many, 0777);
    enum { CLASSES = 40, SUBS = 50 };
    for (int c = 0; c < CLASSES; c++) {
        char rel[64];
        snprintf(rel, sizeof rel, "c%02d", c);
        mkdirs(many, rel);
        for (int s = 0; s < SUBS; s++) {
            snprintf(rel, sizeof rel, "c%02d/s%02d", c, s);
            mkdirs(many, rel);
        }
        snprintf(rel, sizeof rel, "c%02d/s%02d/x.png", c, SUBS - 1);
        put_png(many, rel, 4, 4, 3, c);
    }
    char link[800];
    snprintf(link, sizeof link, "%s/c00/s00/up", many);
    CHECK(symlink("../..", link) == 0, "symlink %s", link);
    DatasetOptions lazy = {.lazy = 1};
    Dataset ds;
    int rc = dataset_scan(many, &lazy, &ds, err, sizeof err);
    long folders = 1 + CLASSES + CLASSES * SUBS;
    CHECK(rc == 0 && ds.n == CLASSES && ds.nclasses == CLASSES && ds.nignored == 1, "many folders: %s (n %d, classes %d, ignored %d)",
          rc ? err : "ok", rc ? 0 : ds.n, rc ? 0 : ds.nclasses, rc ? 0 : ds.nignored);
    CHECK(rc == 0 && ds.scan_dir_compares < 4 * folders, "%ld folders entered once in %ld compares (a few per folder)",
          folders, rc ? 0 : ds.scan_dir_compares);
    if (rc == 0) dataset_free(&ds);
}

// The record of folders entered, fed the inode numbers filesystems give a run of new folders: one
// after another (ext4, tmpfs), in strides (2, 8, 64, 4096, 2^32), in two interleaved batches (tmpfs's
// per-CPU ranges), and at random. Each must cost about what a random table at this load costs (under one
// compare per folder; one CI machine's run of 2041 folders cost 8168 with a hash that followed the
// inode's low bits).
static void test_visit_spread(void) {
    enum { N = 2041 };
    static unsigned long long ino[N];
    const char *name[] = {"one after another", "stride 2", "stride 8", "stride 64", "stride 4096", "stride 2^32",
                          "two batches", "random"};
    unsigned long long rng = 0x243f6a8885a308d3ull;
    for (int p = 0; p < 8; p++) {
        for (int base = 0; base < 3; base++) {
            unsigned long long b = 12 + 1000003ull * (unsigned long long)base * (unsigned long long)(p + 1);
            for (int i = 0; i < N; i++) {
                unsigned long long u = (unsigned long long)i;
                switch (p) {
                case 0: ino[i] = b + u; break;
                case 1: ino[i] = b + 2 * u; break;
                case 2: ino[i] = b + 8 * u; break;
                case 3: ino[i] = b + 64 * u; break;
                case 4: ino[i] = b + 4096 * u; break;
                case 5: ino[i] = b + (u << 32); break;
                case 6: ino[i] = b + u / 2 + (u & 1 ? 1024 : 0); break;
                default:
                    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                    ino[i] = rng;
                }
            }
            long c = dataset_visit_compares(2049 + (unsigned long long)base, ino, N);
            CHECK(c >= 0 && c < N, "folders numbered %s (from %llu): %d folders entered in %ld compares (under one each)",
                  name[p], b, N, c);
        }
    }
    // A folder entered again is found: at least one compare more than the run without it.
    for (int i = 0; i < N; i++) ino[i] = 100 + (unsigned long long)i;
    long once = dataset_visit_compares(7, ino, N - 1);
    ino[N - 1] = ino[5];
    long seen = dataset_visit_compares(7, ino, N);
    CHECK(once >= 0 && seen > once, "a folder entered twice is compared with itself (%ld, then %ld)", once, seen);
}

static void test_split(void) {
    CHECK(dataset_path_hash("") == 0xcbf29ce484222325ull, "FNV-1a of empty string");
    CHECK(dataset_path_hash("a") == 0xaf63dc4c8601ec8cull, "FNV-1a of 'a'");
    CHECK(dataset_path_hash("foobar") == 0x85944171f73967e8ull, "FNV-1a of 'foobar'");
    Dataset ds;
    char err[256];
    if (dataset_scan(root, NULL, &ds, err, sizeof err)) { CHECK(0, "scan: %s", err); return; }
    int *tr, *va, nt, nv, *tr2, *va2, nt2, nv2;
    dataset_split(&ds, 0.3, &tr, &nt, &va, &nv);
    dataset_split(&ds, 0.3, &tr2, &nt2, &va2, &nv2);
    CHECK(nt == nt2 && nv == nv2 && !memcmp(tr, tr2, sizeof(int) * nt) && !memcmp(va, va2, sizeof(int) * nv),
          "split is deterministic");
    CHECK(nt + nv == ds.n, "train + val = all (%d + %d)", nt, nv);
    int rule_ok = 1;
    for (int i = 0; i < nv; i++) rule_ok &= dataset_path_hash(ds.items[va[i]].rel) % 10000 < 3000;
    for (int i = 0; i < nt; i++) rule_ok &= dataset_path_hash(ds.items[tr[i]].rel) % 10000 >= 3000;
    CHECK(rule_ok, "val exactly when hash %% 10000 < 3000");
    free(tr); free(va); free(tr2); free(va2);
    dataset_split(&ds, 0, &tr, &nt, &va, &nv);
    CHECK(nt == ds.n && nv == 0, "val_frac 0: no validation");
    free(tr); free(va);
    dataset_split(&ds, 1e-4, &tr, &nt, &va, &nv);   // threshold 1: almost surely empty -> one forced
    CHECK(nv >= 1 && nt + nv == ds.n, "tiny val_frac still gives a validation image");
    free(tr); free(va);
    dataset_free(&ds);
}

// A relative path whose split key (hash % 10000) is exactly `key`, found by trying names in order.
static const char *name_with_key(uint64_t key, char *buf, size_t n) {
    for (long i = 0;; i++) {
        snprintf(buf, n, "boundary/%ld.png", i);
        if (dataset_path_hash(buf) % 10000 == key) return buf;
    }
}

// ds over n items of no class, item i named with split key keys[i] (names: their buffers); ds.n = n.
static void keyed_items(Dataset *ds, DataItem *items, char (*names)[64], const uint64_t *keys, int n) {
    memset(items, 0, sizeof *items * (size_t)n);
    for (int i = 0; i < n; i++) {
        items[i].rel = (char *)name_with_key(keys[i], names[i], sizeof names[i]);
        items[i].cls = -1;
    }
    memset(ds, 0, sizeof *ds);
    ds->items = items;
    ds->n = n;
}

// The split boundary, exactly: a key equal to round(val_frac * 10000) is training data, one below it
// is held out; val_frac as the command line passes it (a float widened to double) rounds, not
// truncates (0.29f * 10000 = 2899.99992...). Also through dataset_split on items at the boundary.
static void test_split_boundary(void) {
    CHECK(dataset_held_out(499, 0.05) == 1, "key 499 at val_frac 0.05 is held out");
    CHECK(dataset_held_out(500, 0.05) == 0, "key 500 at val_frac 0.05 (threshold 500) is training data");
    CHECK(dataset_held_out(0, 0.0) == 0, "val_frac 0 holds nothing out");
    CHECK(dataset_held_out(9999, 1.0) == 1, "val_frac 1 holds every key out");
    CHECK(dataset_held_out(2899, (double)0.29f) == 1 && dataset_held_out(2900, (double)0.29f) == 0,
          "val_frac 0.29f: threshold 2900 (rounded)");
    CHECK(dataset_held_out(6999, (double)0.7f) == 1 && dataset_held_out(7000, (double)0.7f) == 0,
          "val_frac 0.7f: threshold 7000");
    char names[4][64];
    DataItem items[4];
    const uint64_t keys[4] = {500, 499, 501, 0};
    Dataset ds;
    keyed_items(&ds, items, names, keys, 4);
    int *tr, *va, nt, nv;
    if (dataset_split(&ds, 0.05, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nv == 2 && va[0] == 1 && va[1] == 3, "held out at 0.05: the keys 499 and 0 (got %d)", nv);
    CHECK(nt == 2 && tr[0] == 0 && tr[1] == 2, "training at 0.05: the keys 500 and 501 (got %d)", nt);
    free(tr); free(va);
    if (dataset_split(&ds, 0.0501, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nv == 3 && nt == 1 && tr[0] == 2, "at 0.0501 (threshold 501) only key 501 trains");
    free(tr); free(va);
    // Every key below the threshold: the largest one (501) still trains, the rest are held out.
    if (dataset_split(&ds, 0.9, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nt == 1 && tr[0] == 2 && nv == 3 && va[0] == 0 && va[1] == 1 && va[2] == 3,
          "at 0.9 every key is held out but the largest, which trains (got %d train, %d val)", nt, nv);
    free(tr); free(va);
    ds.n = 1;   // one image: it trains, nothing is held out
    if (dataset_split(&ds, 0.9, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nt == 1 && nv == 0, "one image at 0.9 trains (got %d train, %d val)", nt, nv);
    free(tr); free(va);
}

// The fallbacks pinned (docs/interface.md section 2, "Validation split"): the image a fallback chose stays
// where it went while it is among the items, whatever residues the items added have; gone, the fallback
// chooses again. The rule's own images are never pinned.
static void test_split_pinned(void) {
    char names[5][64];
    DataItem items[5];
    const uint64_t keys[5] = {500, 499, 501, 450, 600};
    Dataset ds;
    keyed_items(&ds, items, names, keys, 5);
    ds.n = 3;
    int *tr, *va, nt, nv;
    DatasetSplitPin pin;
    memset(&pin, 0, sizeof pin);
    // Threshold 400: none held out by the rule, the smallest residue (499) is, and pinned.
    if (dataset_split_pinned(&ds, 0.04, &pin, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nv == 1 && va[0] == 1 && !strcmp(pin.held_out, names[1]) && !pin.trains[0],
          "at 0.04 the key 499 held out by the fallback, pinned (got %d val, pin '%s')", nv, pin.held_out);
    free(tr); free(va);
    ds.n = 4;   // the key 450 added: the pinned 499 stays held out (the fallback alone would take 450)
    if (dataset_split_pinned(&ds, 0.04, &pin, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nv == 1 && va[0] == 1 && nt == 3 && !strcmp(pin.held_out, names[1]),
          "key 450 added: 499 still held out (got %d val, first %d)", nv, nv ? va[0] : -1);
    free(tr); free(va);
    if (dataset_split(&ds, 0.04, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nv == 1 && va[0] == 3, "without the pin the fallback takes 450 (got %d val, first %d)", nv, nv ? va[0] : -1);
    free(tr); free(va);
    snprintf(pin.held_out, sizeof pin.held_out, "gone.png");   // the pinned image gone: chosen again, pinned
    if (dataset_split_pinned(&ds, 0.04, &pin, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nv == 1 && va[0] == 3 && !strcmp(pin.held_out, names[3]), "pin gone: 450 held out and pinned (pin '%s')",
          pin.held_out);
    free(tr); free(va);
    // Every image held out (0.9): the largest residue trains, pinned; an image of a larger one added
    // (600) is held out, the pinned 501 trains still.
    memset(&pin, 0, sizeof pin);
    ds.n = 3;
    if (dataset_split_pinned(&ds, 0.9, &pin, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nt == 1 && tr[0] == 2 && !strcmp(pin.trains, names[2]) && !pin.held_out[0],
          "at 0.9 the key 501 trains, pinned (pin '%s')", pin.trains);
    free(tr); free(va);
    items[3] = items[4];   // the key 600 in place of 450
    ds.n = 4;
    if (dataset_split_pinned(&ds, 0.9, &pin, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nt == 1 && tr[0] == 2 && nv == 3 && !strcmp(pin.trains, names[2]),
          "key 600 added: 501 still trains (got %d train, first %d)", nt, nt ? tr[0] : -1);
    free(tr); free(va);
    // A split the rule decides pins nothing (0.05: the keys 499 held out, 500 and 501 train).
    ds.n = 3;
    if (dataset_split_pinned(&ds, 0.05, &pin, &tr, &nt, &va, &nv)) { CHECK(0, "split failed"); return; }
    CHECK(nv == 1 && va[0] == 1 && !pin.held_out[0] && !pin.trains[0], "the rule's split pins nothing");
    free(tr); free(va);
}

static int same_views(const Dataset *x, const Dataset *y, int i, int S, int ch, int aug, ImageFilter interp) {
    float a[16 * 16 * 3], b[16 * 16 * 3];
    char err[256];
    Rng r1, r2;
    rng_seed(&r1, 99); rng_seed(&r2, 99);
    Augment how = {(AugmentKind)aug, AUGMENT_CROP_LO, interp, 1.0, RANDAUG_OFF, {0, 0, 0}};
    int rc1 = dataset_train_view(x, i, S, ch, how, &r1, a, err, sizeof err);
    int rc2 = dataset_train_view(y, i, S, ch, how, &r2, b, err, sizeof err);
    return rc1 == 0 && rc2 == 0 && !memcmp(a, b, sizeof(float) * S * S * ch);
}

static void test_cache_and_views(void) {
    const int S = 8;
    Dataset plain, work, nocache;
    char err[256];
    DatasetOptions wopt = {.work_size = 2 * S, .cache_mb = 16}, nopt = {.work_size = 2 * S};
    if (dataset_scan(root, NULL, &plain, err, sizeof err) || dataset_scan(root, &wopt, &work, err, sizeof err) ||
        dataset_scan(root, &nopt, &nocache, err, sizeof err)) {
        CHECK(0, "scan: %s", err);
        return;
    }
    // Working images: an 8-bit image at most 2 x S on its shorter side is its own working image, so
    // every view equals the full decode's; the 16-bit z.PNG (item 3, held at 8 bits) and the 40x30
    // d.png (item 7, resized to 21x16) are the documented exceptions. Cache or not: always equal.
    for (int i = 0; i < plain.n; i++)
        for (int aug = AUG_NONE; aug <= AUG_CROP + 1; aug++)   // AUG_CROP + 1: the crop resized bicubic
            for (int ch = 1; ch <= 3; ch += 2) {
                int k = aug > AUG_CROP ? AUG_CROP : aug;
                ImageFilter interp = aug > AUG_CROP ? IMAGE_BICUBIC : IMAGE_BILINEAR;
                if (i != 3 && i != 7)
                    CHECK(same_views(&plain, &work, i, S, ch, k, interp), "item %d aug %d ch %d: working image = decode", i, aug, ch);
                CHECK(same_views(&work, &nocache, i, S, ch, k, interp), "item %d aug %d ch %d: cache = no cache", i, aug, ch);
            }
    Image wi;
    CHECK(dataset_working_image(&work, 7, &wi, err, sizeof err) == 0 && wi.w == 21 && wi.h == 16 && wi.c == 3,
          "40x30 working image at shorter side 16: %dx%d", wi.w, wi.h);
    image_free(&wi);
    CHECK(dataset_working_image(&work, 0, &wi, err, sizeof err) == 0 && wi.w == 6 && wi.h == 9, "small image kept");
    image_free(&wi);
    DataStats st;
    dataset_stats(&work, &st);
    CHECK(st.cache_bytes > 0 && st.cache_bytes <= st.cache_budget && st.decoded == work.n, "cache: %zu bytes, %ld decodes",
          st.cache_bytes, st.decoded);
    dataset_stats(&nocache, &st);
    CHECK(st.cache_bytes == 0 && st.decoded > nocache.n, "no cache: every view decodes (%ld)", st.decoded);

    // Views are 8-bit levels; the flip mode is the eval view, mirrored or not.
    float a[S * S * 3], b[S * S * 3];
    dataset_eval_view(&work, 7, S, 3, a, err, sizeof err);
    CHECK(image_is_8bit(a, S * S * 3), "views hold 8-bit levels");
    float e[S * S], f[S * S];
    dataset_eval_view(&plain, 2, S, 1, e, err, sizeof err);
    int flipped = 0, same = 0;
    for (int s = 0; s < 20; s++) {
        Rng r;
        rng_seed(&r, (uint64_t)s);
        dataset_train_view(&plain, 2, S, 1, AUGMENT_FLIP, &r, f, err, sizeof err);
        if (!memcmp(e, f, sizeof e)) same++;
        image_flip_h(f, S, S, 1);
        if (!memcmp(e, f, sizeof e)) flipped++;
    }
    CHECK(same + flipped == 20 && same > 0 && flipped > 0, "flip: %d as is, %d mirrored", same, flipped);
    // A crop resized bicubic (train/finetune --interp bicubic) rings past the source's range, and its view
    // is still 8-bit levels in [0, 1] (clamped, as PIL's 8-bit resize); the bilinear crop of the same draws
    // differs from it. Item 7, 40x30 colour, shrinks: its edges ring.
    Augment cubic = AUGMENT_CROP;
    cubic.interp = IMAGE_BICUBIC;
    int differ = 0, levels = 1;
    for (int s = 0; s < 8; s++) {
        Rng r1, r2;
        rng_seed(&r1, (uint64_t)s); rng_seed(&r2, (uint64_t)s);
        dataset_train_view(&work, 7, S, 3, cubic, &r1, a, err, sizeof err);
        dataset_train_view(&work, 7, S, 3, AUGMENT_CROP, &r2, b, err, sizeof err);
        differ += memcmp(a, b, sizeof a) != 0;
        levels &= image_is_8bit(a, S * S * 3);
        for (int i = 0; i < S * S * 3; i++) levels &= a[i] >= 0 && a[i] <= 1;
    }
    CHECK(differ > 0 && levels, "bicubic crops: %d of 8 differ from bilinear ones; 8-bit levels in [0, 1]: %d", differ,
          levels);

    // Batches: same for 1 and 2 threads, for cache and no cache, and split in two ranges.
    int items[5] = {0, 2, 4, 6, 8};
    size_t per = (size_t)S * S * 3;
    float *b1 = malloc(sizeof(float) * 5 * per), *b2 = malloc(sizeof(float) * 5 * per);
    omp_set_num_threads(1);
    int rc1 = dataset_load_batch(&nocache, items, 5, S, 3, AUGMENT_CROP, 5, 17, b1, err, sizeof err);
    omp_set_num_threads(2);
    int rc2 = dataset_load_batch(&work, items, 5, S, 3, AUGMENT_CROP, 5, 17, b2, err, sizeof err);
    CHECK(rc1 == 0 && rc2 == 0 && !memcmp(b1, b2, sizeof(float) * 5 * per), "batch independent of threads and cache");
    rc1 = dataset_load_range(&work, items, 5, 0, 2, S, 3, AUGMENT_CROP, 5, 17, b2, err, sizeof err);
    rc2 = dataset_load_range(&work, items, 5, 2, 5, S, 3, AUGMENT_CROP, 5, 17, b2 + 2 * per, err, sizeof err);
    CHECK(rc1 == 0 && rc2 == 0 && !memcmp(b1, b2, sizeof(float) * 5 * per), "a batch loaded in two ranges");
    CHECK(dataset_load_range(&work, items, 5, 3, 6, S, 3, AUGMENT_CROP, 5, 17, b2, err, sizeof err) == -1, "range past the batch");
    rc2 = dataset_load_batch(&plain, items, 5, S, 3, AUGMENT_CROP, 5, 18, b2, err, sizeof err);
    CHECK(rc2 == 0 && memcmp(b1, b2, sizeof(float) * 5 * per) != 0, "another step, another batch");

    // A file that changed after the scan: a clear error naming it (not lazy: no replacement).
    put_text(root, "cats/x.png", "gone");
    CHECK(dataset_eval_view(&plain, 5, S, 1, a, err, sizeof err) == -1 && strstr(err, "cats/x.png") &&
          strstr(err, "not a PNG, JPEG or WebP file"), "changed file: %s", err);
    CHECK(dataset_eval_view(&work, 5, S, 1, a, err, sizeof err) == 0, "cached dataset does not re-read it");
    items[1] = 5;
    CHECK(dataset_load_batch(&nocache, items, 5, S, 3, AUGMENT_CROP, 5, 17, b2, err, sizeof err) == DATASET_ERR_FILE &&
          strstr(err, "cats/x.png"), "not lazy: a batch with a broken file fails, err naming it: %s", err);
    put_png(root, "cats/x.png", 8, 8, 1, 5);
    dataset_free(&plain);
    dataset_free(&work);
    dataset_free(&nocache);
    (void)b;
    free(b1);
    free(b2);
}

// The on-disk store: a first run writes every working image, a second reads them all back, a changed
// file is decoded again; views are bitwise the same with and without the store.
static void test_store(void) {
    const int S = 8;
    char store[700];
    snprintf(store, sizeof store, "%s/store", base);
    mkdir(store, 0777);
    DatasetOptions none = {.work_size = 2 * S, .lazy = 1}, with = {.work_size = 2 * S, .lazy = 1, .store_dir = store};
    Dataset ref, s1, s2;
    char err[256];
    if (dataset_scan(root, &none, &ref, err, sizeof err) || dataset_scan(root, &with, &s1, err, sizeof err)) {
        CHECK(0, "scan: %s", err);
        return;
    }
    int n = ref.n, items[16];
    for (int i = 0; i < n; i++) items[i] = i;
    size_t per = (size_t)S * S * 3;
    float *b0 = malloc(sizeof(float) * n * per), *b1 = malloc(sizeof(float) * n * per);
    dataset_load_batch(&ref, items, n, S, 3, AUGMENT_CROP, 3, 4, b0, err, sizeof err);
    dataset_load_batch(&s1, items, n, S, 3, AUGMENT_CROP, 3, 4, b1, err, sizeof err);
    CHECK(!memcmp(b0, b1, sizeof(float) * n * per), "first run with the store = without");
    DataStats st;
    dataset_stats(&s1, &st);
    int good = n - 1;   // B_class/bad.png is broken past its header
    // bad.png's replacement (the next item of the batch) is read back, or decoded and written again
    // when its own thread has not written it yet.
    CHECK(st.store_writes >= good && st.store_writes + st.store_hits == good + 1, "store written: %ld writes, %ld hits",
          st.store_writes, st.store_hits);
    dataset_free(&s1);
    if (dataset_scan(root, &with, &s2, err, sizeof err)) { CHECK(0, "scan: %s", err); return; }
    memset(b1, 0, sizeof(float) * n * per);
    dataset_load_batch(&s2, items, n, S, 3, AUGMENT_CROP, 3, 4, b1, err, sizeof err);
    CHECK(!memcmp(b0, b1, sizeof(float) * n * per), "second run reads the store: same batch");
    dataset_stats(&s2, &st);
    CHECK(st.store_hits == good + 1 && st.decoded == 0, "store read: %ld hits, %ld decoded", st.store_hits, st.decoded);
    dataset_free(&s2);
    // Files of store version 2, written before CMYK JPEGs decoded as PIL's (their pixels may be another
    // decoder's): misses, decoded again and rewritten, the batch as without the store.
    int aged = 0;
    DIR *vd = opendir(store);
    for (struct dirent *ve; vd && (ve = readdir(vd));) {
        if (!strstr(ve->d_name, ".work")) continue;
        FILE *f = fopen(at(store, ve->d_name), "r+b");
        if (!f) continue;
        const uint8_t v2[4] = {2, 0, 0, 0};
        aged += fseek(f, 4, SEEK_SET) == 0 && fwrite(v2, 1, 4, f) == 4;
        fclose(f);
    }
    if (vd) closedir(vd);
    CHECK(aged == good, "%d store files made version 2", aged);
    if (dataset_scan(root, &with, &s2, err, sizeof err)) { CHECK(0, "scan: %s", err); return; }
    memset(b1, 0, sizeof(float) * n * per);
    dataset_load_batch(&s2, items, n, S, 3, AUGMENT_CROP, 3, 4, b1, err, sizeof err);
    dataset_stats(&s2, &st);
    CHECK(st.store_writes >= good && st.store_writes + st.store_hits == good + 1 &&
          !memcmp(b0, b1, sizeof(float) * n * per), "version 2 store files are misses (%ld hits, %ld writes)", st.store_hits, st.store_writes);
    dataset_free(&s2);
    // A changed file (new content, size and time): decoded again, and its view follows the new file.
    put_png(root, "cats/x.png", 10, 10, 1, 77);
    if (dataset_scan(root, &with, &s2, err, sizeof err)) { CHECK(0, "scan: %s", err); return; }
    float v1[S * S], v2[S * S];
    CHECK(dataset_eval_view(&s2, 6, S, 1, v1, err, sizeof err) == 0, "x.png: %s", err);
    dataset_stats(&s2, &st);
    CHECK(st.decoded == 1 && st.store_writes == 1, "changed file decoded again (%ld)", st.decoded);
    Dataset fresh;
    dataset_scan(root, &none, &fresh, err, sizeof err);
    dataset_eval_view(&fresh, 6, S, 1, v2, err, sizeof err);
    CHECK(!memcmp(v1, v2, sizeof v1), "changed file: the view of its new content");
    dataset_free(&fresh);
    dataset_free(&s2);
    // A damaged store file (its last pixel byte flipped, or every other file's shape changed to 2w x h/2,
    // the same bytes: the CRC no longer matches) is ignored and rewritten, never trusted. Before that,
    // each file's CRC field is zlib's crc32 of its w, h and c as written, then of its pixels (the pixels
    // alone were covered: a file of another shape read as the image).
    DIR *d = opendir(store);
    struct dirent *de;
    int damaged = 0, crc_ok = 0, reshaped = 0;
    while (d && (de = readdir(d))) {
        if (!strstr(de->d_name, ".work")) continue;
        FILE *f = fopen(at(store, de->d_name), "r+b");
        if (!f) continue;
        uint8_t buf[1 << 16];
        size_t len = fread(buf, 1, sizeof buf, f);
        uint32_t klen = len >= 28 ? (uint32_t)buf[24] | (uint32_t)buf[25] << 8 | (uint32_t)buf[26] << 16 | (uint32_t)buf[27] << 24 : 0;
        uint32_t field = len >= 28 ? (uint32_t)buf[20] | (uint32_t)buf[21] << 8 | (uint32_t)buf[22] << 16 | (uint32_t)buf[23] << 24 : 0;
        if (len > 28 + klen && len < sizeof buf &&
            field == (uint32_t)crc32(crc32(crc32(0L, Z_NULL, 0), buf + 8, 12), buf + 28 + klen, (uInt)(len - 28 - klen)))
            crc_ok++;
        uint32_t w = len >= 28 ? (uint32_t)buf[8] | (uint32_t)buf[9] << 8 : 0, h = len >= 28 ? (uint32_t)buf[12] | (uint32_t)buf[13] << 8 : 0;
        if (damaged % 2 && h % 2 == 0 && h > 0) {   // 2w x h/2: the same byte count, another image
            uint8_t dims[8] = {(uint8_t)(2 * w), (uint8_t)(2 * w >> 8), 0, 0, (uint8_t)(h / 2), (uint8_t)(h / 2 >> 8), 0, 0};
            fseek(f, 8, SEEK_SET);
            fwrite(dims, 1, sizeof dims, f);
            reshaped++;
        } else {
            fseek(f, -1, SEEK_END);
            int c = fgetc(f);
            fseek(f, -1, SEEK_END);
            fputc(c ^ 0xff, f);
        }
        fclose(f);
        damaged++;
    }
    if (d) closedir(d);
    put_png(root, "cats/x.png", 8, 8, 1, 5);
    CHECK(damaged == good + 1, "damaged %d store files", damaged);
    CHECK(crc_ok == damaged, "%d of %d store files carry zlib's crc32 of their shape and pixels", crc_ok, damaged);
    CHECK(reshaped >= 2, "%d store files given another shape", reshaped);
    if (dataset_scan(root, &with, &s2, err, sizeof err) == 0) {
        memset(b1, 0, sizeof(float) * n * per);
        dataset_load_batch(&ref, items, n, S, 3, AUGMENT_CROP, 3, 4, b0, err, sizeof err);
        dataset_load_batch(&s2, items, n, S, 3, AUGMENT_CROP, 3, 4, b1, err, sizeof err);
        dataset_stats(&s2, &st);
        CHECK(st.store_writes >= good && st.store_writes + st.store_hits == good + 1 &&
              !memcmp(b0, b1, sizeof(float) * n * per),
              "damaged store ignored (%ld hits, %ld writes)", st.store_hits, st.store_writes);
        dataset_free(&s2);
    }
    free(b0);
    free(b1);
    dataset_free(&ref);
}

// A file broken past its header (lazy scan): the batch takes the next item of the batch that decodes,
// with the broken image's random stream; the same for any thread count and cache; reported once.
static void test_broken_late(void) {
    const int S = 8;
    DatasetOptions o1 = {.work_size = 2 * S, .lazy = 1}, o2 = {.work_size = 2 * S, .lazy = 1, .cache_mb = 16};
    Dataset d1, d2;
    char err[256];
    if (dataset_scan(root, &o1, &d1, err, sizeof err) || dataset_scan(root, &o2, &d2, err, sizeof err)) {
        CHECK(0, "scan: %s", err);
        return;
    }
    CHECK(!strcmp(d1.items[2].rel, "B_class/bad.png"), "item 2 is the broken file");
    int items[4] = {0, 2, 5, 7};
    size_t per = (size_t)S * S * 3;
    float b1[4 * 8 * 8 * 3], b2[4 * 8 * 8 * 3], want[8 * 8 * 3];
    omp_set_num_threads(1);
    int rc1 = dataset_load_batch(&d1, items, 4, S, 3, AUGMENT_CROP, 9, 3, b1, err, sizeof err);
    omp_set_num_threads(2);
    int rc2 = dataset_load_batch(&d2, items, 4, S, 3, AUGMENT_CROP, 9, 3, b2, err, sizeof err);
    CHECK(rc1 == 0 && rc2 == 0 && !memcmp(b1, b2, sizeof b1), "broken item: same batch for threads and cache (%s)", err);
    Rng r;
    rng_derive(&r, 9, 3, 1);
    dataset_train_view(&d1, 5, S, 3, AUGMENT_CROP, &r, want, err, sizeof err);
    CHECK(!memcmp(b1 + per, want, sizeof want), "image 1 is item 5 with image 1's random stream");
    // Which item each image is, for its class label (finetune): image 1 is item 5's, the others their own.
    int is[4] = {-1, -1, -1, -1};
    for (int k = 0; k < 4; k++)
        dataset_batch_image(&d1, items, 4, k, NULL, 0, S, 3, AUGMENT_CROP, 9, 3, want, &is[k], err, sizeof err);
    CHECK(is[0] == 0 && is[1] == 5 && is[2] == 5 && is[3] == 7, "the items the images are: 0 5 5 7 (%d %d %d %d)",
          is[0], is[1], is[2], is[3]);
    DataSkip sk[4];
    int nb = dataset_take_broken(&d1, sk, NULL, 4);
    CHECK(nb == 1 && strstr(sk[0].path, "bad.png") && strstr(sk[0].reason, "truncated PNG data") &&
          !strstr(sk[0].reason, "bad.png"), "reported: %s", nb ? sk[0].reason : "none");
    for (int i = 0; i < nb; i++) { free(sk[i].path); free(sk[i].reason); }
    dataset_load_batch(&d1, items, 4, S, 3, AUGMENT_CROP, 9, 3, b2, err, sizeof err);
    CHECK(dataset_take_broken(&d1, sk, NULL, 4) == 0 && !memcmp(b1, b2, sizeof b1), "reported once; same batch again");
    int only[1] = {2};
    CHECK(dataset_load_batch(&d1, only, 1, S, 3, AUGMENT_CROP, 9, 3, b2, err, sizeof err) == DATASET_ERR_BROKEN &&
          strstr(err, "bad.png: truncated PNG data; a batch of one image has no other to take its place: remove the file, or train with a --batch of 2 or more"), "a batch of broken files: %s", err);
    // The same stop where the run's checkpoint holds the steps done (saved as it stopped, cmd/runloop.c):
    // "remove the file" is the resume's, and says so; "train with" was this run's command, refused when
    // run again. A way of the caller's keeps its new run; a batch of several says where the run is kept.
    char kept[2048];
    snprintf(kept, sizeof kept, "%s", err);
    dataset_broken_stop_kept(&d1, 0, "run/checkpoint.safetensors", "'my run'", 21, kept, sizeof kept);
    CHECK(strstr(kept, "bad.png: truncated PNG data; a batch of one image has no other to take its place: remove the "
                 "file and continue with --resume 'my run' (its checkpoint holds step 21), or start a new run with a "
                 "--batch of 2 or more") && !strstr(kept, "remove the file, or"), "kept at a batch of one: %s", kept);
    d1.batch_of_one_way = "remove the file, or start a new run with --init CHECKPOINT (a resumed run keeps its --batch)";
    dataset_load_batch(&d1, only, 1, S, 3, AUGMENT_CROP, 9, 3, b2, kept, sizeof kept);
    dataset_broken_stop_kept(&d1, 0, "r/checkpoint.safetensors", "r", 7, kept, sizeof kept);
    size_t kl = strlen(kept);
    static const char resumed[] = ": remove the file and continue with --resume r (its checkpoint holds step 7), or start a "
                                  "new run with --init CHECKPOINT (a resumed run keeps its --batch)";
    CHECK(kl > sizeof resumed && !strcmp(kept + kl - (sizeof resumed - 1), resumed), "kept, the caller's way: %s", kept);
    // ... and where the run keeps its classes (finetune) and the file is its class's only image: a new run.
    dataset_load_batch(&d1, only, 1, S, 3, AUGMENT_CROP, 9, 3, b2, kept, sizeof kept);
    int others = 0;
    for (int i = 0; i < d1.n; i++) others += i != 2 && d1.items[i].cls == d1.items[2].cls;
    dataset_broken_stop_kept(&d1, 1, "r/checkpoint.safetensors", "r", 7, kept, sizeof kept);
    CHECK(others > 0 ? strstr(kept, "continue with --resume r") != NULL : strstr(kept, "only image of class") != NULL,
          "kept, classes kept (%d others in its class): %s", others, kept);
    d1.batch_of_one_way = NULL;
    snprintf(kept, sizeof kept, "x.png: truncated PNG data; no image of its batch decodes to take its place (all 2 are broken)");
    dataset_broken_stop_kept(&d1, 0, "r/checkpoint.safetensors", "r", 7, kept, sizeof kept);
    CHECK(!strcmp(kept, "x.png: truncated PNG data; no image of its batch decodes to take its place (all 2 are broken); "
                  "r/checkpoint.safetensors holds step 7 (remove them and continue with --resume r)"), "kept, several: %s", kept);
    snprintf(kept, sizeof kept, "data: the data folder is gone (moved or deleted during the run)");
    dataset_broken_stop_kept(&d1, 0, "r/checkpoint.safetensors", "r", 7, kept, sizeof kept);
    CHECK(!strcmp(kept, "data: the data folder is gone (moved or deleted during the run)"), "other stops as they are: %s", kept);
    dataset_free(&d1);
    dataset_free(&d2);
}

static void test_stats(void) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/stats", base);
    mkdir(dir, 0777);
    uint8_t black[16] = {0}, white[16], rgb[16 * 3];
    memset(white, 255, sizeof white);
    for (int i = 0; i < 16; i++) { rgb[3 * i] = 255; rgb[3 * i + 1] = (uint8_t)(i % 2 ? 255 : 0); rgb[3 * i + 2] = 0; }
    char err[256];
    png_write(at(dir, "0.png"), black, 4, 4, 1, NULL, err, sizeof err);
    png_write(at(dir, "1.png"), white, 4, 4, 1, NULL, err, sizeof err);
    png_write(at(dir, "2.png"), rgb, 4, 4, 3, NULL, err, sizeof err);
    Dataset ds;
    if (dataset_scan(dir, NULL, &ds, err, sizeof err) || ds.n != 3) { CHECK(0, "stats scan: %s", err); return; }
    int idx[3] = {0, 1, 2};
    float mean[3], std[3];
    // Black and white grey images: mean 0.5, std 0.5.
    CHECK(dataset_pixel_stats(&ds, idx, 2, 0, 0, 4, 1, mean, std, err, sizeof err) == 0, "stats: %s", err);
    CHECK_CLOSE(mean[0], 0.5, 1e-7, 0, "grey mean");
    CHECK_CLOSE(std[0], 0.5, 1e-7, 0, "grey std");
    // All three as RGB: R = {0, 1, 1}, G = {0, 1, half 1}, B = {0, 1, 0} per image.
    CHECK(dataset_pixel_stats(&ds, idx, 3, 0, 0, 4, 3, mean, std, err, sizeof err) == 0, "stats: %s", err);
    double mr = 2.0 / 3, mg = 1.5 / 3, mb = 1.0 / 3;
    CHECK_CLOSE(mean[0], mr, 1e-6, 0, "R mean");
    CHECK_CLOSE(mean[1], mg, 1e-6, 0, "G mean");
    CHECK_CLOSE(mean[2], mb, 1e-6, 0, "B mean");
    CHECK_CLOSE(std[0], sqrt(mr - mr * mr), 1e-6, 0, "R std");
    CHECK_CLOSE(std[1], sqrt(mg - mg * mg), 1e-6, 0, "G std");
    CHECK_CLOSE(std[2], sqrt(mb - mb * mb), 1e-6, 0, "B std");
    // limit 1 picks idx[0] only: a constant black channel -> mean 0, std 1 (not scaled).
    CHECK(dataset_pixel_stats(&ds, idx, 3, 1, 0, 4, 1, mean, std, err, sizeof err) == 0 && mean[0] == 0 && std[0] == 1,
          "limit 1: mean %g std %g", mean[0], std[0]);
    // Same for 1 thread, bit for bit.
    float m2[3], s2[3];
    dataset_pixel_stats(&ds, idx, 3, 0, 0, 4, 3, mean, std, err, sizeof err);
    omp_set_num_threads(1);
    dataset_pixel_stats(&ds, idx, 3, 0, 0, 4, 3, m2, s2, err, sizeof err);
    omp_set_num_threads(2);
    CHECK(!memcmp(mean, m2, sizeof mean) && !memcmp(std, s2, sizeof std), "stats independent of threads");
    dataset_free(&ds);

    // The pixel budget: 40 lazy 8x8 images (64 pixels each). A budget of 20 images' pixels measures
    // exactly the 20 that limit 20 picks (bit for bit) and decodes no more; a budget of 5 images'
    // pixels still measures DATASET_STATS_MIN.
    snprintf(dir, sizeof dir, "%s/stats_budget", base);
    mkdir(dir, 0777);
    for (int i = 0; i < 40; i++) {
        char rel[32];
        snprintf(rel, sizeof rel, "%02d.png", i);
        put_png(dir, rel, 8, 8, 3, i);
    }
    DatasetOptions lazy = {.work_size = 8, .cache_mb = 16, .lazy = 1};
    Dataset lz, ref;
    if (dataset_scan(dir, &lazy, &lz, err, sizeof err) || dataset_scan(dir, &lazy, &ref, err, sizeof err) ||
        lz.n != 40) {
        CHECK(0, "budget scan: %s", err);
        return;
    }
    int all[40];
    for (int i = 0; i < 40; i++) all[i] = i;
    CHECK(dataset_pixel_stats(&lz, all, 40, 0, 20 * 64, 8, 3, mean, std, err, sizeof err) == 0, "budget: %s", err);
    CHECK(dataset_pixel_stats(&ref, all, 40, 20, 1e12, 8, 3, m2, s2, err, sizeof err) == 0, "limit 20: %s", err);
    CHECK(!memcmp(mean, m2, sizeof mean) && !memcmp(std, s2, sizeof std), "budget of 20 images = limit 20");
    DataStats st;
    dataset_stats(&lz, &st);
    CHECK(st.decoded == 20, "budget of 20 images decoded %ld", st.decoded);
    dataset_free(&lz);
    if (dataset_scan(dir, &lazy, &lz, err, sizeof err)) { CHECK(0, "budget scan: %s", err); dataset_free(&ref); return; }
    CHECK(dataset_pixel_stats(&lz, all, 40, 0, 5 * 64, 8, 3, mean, std, err, sizeof err) == 0, "budget: %s", err);
    dataset_stats(&lz, &st);
    CHECK(st.decoded == DATASET_STATS_MIN, "budget of 5 images decoded %ld, not %d", st.decoded, DATASET_STATS_MIN);
    dataset_free(&lz);
    dataset_free(&ref);
}

// The cache's budget lowered after the scan (cmd/runfolder.h's run_fit_cache): 12 lazy images of
// 16 x 8 x 3 (384 bytes each as working images at 16). At a budget of 5 images' bytes the cache keeps 5
// and decodes the rest again at every pass, views unchanged; at 0 it keeps none. The largest image's
// samples and the working bytes of every item (idx NULL) come from the headers.
static void test_cache_budget(void) {
    char dir[700], err[256];
    snprintf(dir, sizeof dir, "%s/budget", base);
    mkdir(dir, 0777);
    for (int i = 0; i < 12; i++) {
        char rel[32];
        snprintf(rel, sizeof rel, "%02d.png", i);
        put_png(dir, rel, i == 7 ? 20 : 16, 8, 3, i);   // item 7: 20 x 8
    }
    DatasetOptions lazy = {.work_size = 16, .cache_mb = 16, .lazy = 1};
    Dataset ds, ref;
    if (dataset_scan(dir, &lazy, &ds, err, sizeof err) || dataset_scan(dir, &lazy, &ref, err, sizeof err) || ds.n != 12) {
        CHECK(0, "budget scan: %s", err);
        return;
    }
    CHECK(dataset_cache_budget(&ds) == (size_t)16 << 20, "the scan's budget: %zu", dataset_cache_budget(&ds));
    CHECK(dataset_largest_samples(&ds) == 20 * 8 * 3, "largest samples %zu", dataset_largest_samples(&ds));
    int all[12];
    for (int i = 0; i < 12; i++) all[i] = i;
    size_t work = dataset_working_bytes(&ds, NULL, ds.n);
    CHECK(work == dataset_working_bytes(&ds, all, 12) && work == 11 * 384 + 480, "working bytes %zu", work);
    dataset_set_cache_budget(&ds, 5 * 384);
    const int S = 8;
    float a[S * S * 3], b[S * S * 3];
    int same = 1;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 12; i++) {
            dataset_eval_view(&ds, i, S, 3, a, err, sizeof err);
            dataset_eval_view(&ref, i, S, 3, b, err, sizeof err);
            same &= !memcmp(a, b, sizeof a);
        }
    DataStats st;
    dataset_stats(&ds, &st);
    CHECK(same && st.cache_budget == 5 * 384 && st.cache_bytes == 5 * 384 && st.decoded == 5 + 2 * 7 && st.cache_hits == 5,
          "budget of 5 images: %zu of %zu bytes kept, %ld decodes, %ld hits, views %s", st.cache_bytes, st.cache_budget,
          st.decoded, st.cache_hits, same ? "the same" : "differ");
    dataset_free(&ds);
    if (dataset_scan(dir, &lazy, &ds, err, sizeof err)) { CHECK(0, "budget scan: %s", err); dataset_free(&ref); return; }
    dataset_set_cache_budget(&ds, 0);
    for (int i = 0; i < 12; i++) dataset_eval_view(&ds, i, S, 3, a, err, sizeof err);
    dataset_stats(&ds, &st);
    CHECK(st.cache_bytes == 0 && st.decoded == 12, "budget 0: %zu bytes kept, %ld decodes", st.cache_bytes, st.decoded);
    dataset_free(&ds);
    dataset_free(&ref);
}

// One thread makes an item's working image; others that want it meanwhile wait and take it from the
// cache (docs/data.md, "Cache, store and prefetch"): 8 threads asking at once for a 1200 x 900 photo's
// (a decode long enough for all of them to arrive while it runs) decode it once, and all get its
// pixels. Before, each that found it missing decoded it too, and the count of decoded images depended
// on the threads' timing.
static void test_one_decode_at_a_time(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/once", base);
    mkdir(dir, 0777);
    mkdirs(dir, "a");
    put_png(dir, "a/big.png", 1200, 900, 3, 11);
    Dataset ds;
    char err[256] = "";
    DatasetOptions o = {.work_size = 32, .cache_mb = 16, .lazy = 1};
    if (dataset_scan(dir, &o, &ds, err, sizeof err) || ds.n != 1) { CHECK(0, "scan: %s", err); return; }
    int ok[8] = {0}, w[8] = {0};
    #pragma omp parallel num_threads(8)
    {
        int t = omp_get_thread_num();
        char e[256];
        Image im;
        #pragma omp barrier
        if (dataset_working_image(&ds, 0, &im, e, sizeof e) == 0) { ok[t] = 1; w[t] = im.w; image_free(&im); }
    }
    DataStats st;
    dataset_stats(&ds, &st);
    int all = 1;
    for (int t = 0; t < 8; t++) all &= ok[t] && w[t] == 42;
    CHECK(all, "8 threads: every one gets the 42x32 working image");
    CHECK(st.decoded == 1 && st.cache_hits == 7, "8 threads at once: %ld decodes, %ld cache hits (want 1 and 7)", st.decoded,
          st.cache_hits);
    dataset_free(&ds);
}

// A class folder that went away during the run (docs/data.md): a batch whose every file is in it takes
// its images from the pool of training items (the first that decodes from a place the seed, step and
// image choose), with the image's own random stream; without a pool, and for files deleted alone
// (their folder still there), the batch stops as one broken through and through. Before, a batch
// drawn all from a deleted class folder stopped the run that had said "its images are left out".
static void test_folder_gone(void) {
    const int S = 8;
    char dir[600], from[700], to[700];
    snprintf(dir, sizeof dir, "%s/gone", base);
    mkdir(dir, 0777);
    const char *files[6] = {"a/0.png", "a/1.png", "b/0.png", "b/1.png", "c/0.png", "c/1.png"};
    mkdirs(dir, "a"); mkdirs(dir, "b"); mkdirs(dir, "c");
    for (int i = 0; i < 6; i++) put_png(dir, files[i], 10, 9, 3, 20 + i);
    Dataset ds;
    char err[512] = "";
    DatasetOptions o = {.work_size = 2 * S, .lazy = 1};
    if (dataset_scan(dir, &o, &ds, err, sizeof err) || ds.n != 6) { CHECK(0, "scan: %s", err); return; }
    snprintf(from, sizeof from, "%s/b", dir);
    snprintf(to, sizeof to, "%s/b.moved", base);
    CHECK(rename(from, to) == 0, "class folder b moved away");
    int items[2] = {2, 3}, pool[6] = {0, 1, 2, 3, 4, 5};
    size_t per = (size_t)S * S * 3;
    float got[2 * 8 * 8 * 3], want[8 * 8 * 3];
    int used[2] = {-1, -1}, ok = 1;
    for (int k = 0; k < 2; k++) {
        int rc = dataset_batch_image(&ds, items, 2, k, pool, 6, S, 3, AUGMENT_CROP, 5, 7, got + k * per, &used[k], err,
                                     sizeof err);
        Rng p, r;
        rng_derive(&p, 5, 7, (uint64_t)k | 1ull << 62);
        uint32_t at = rng_below(&p, 6);
        int expect = -1;
        for (int t = 0; t < 6 && expect < 0; t++)
            if (pool[(at + t) % 6] != 2 && pool[(at + t) % 6] != 3) expect = pool[(at + t) % 6];
        rng_derive(&r, 5, 7, (uint64_t)k);
        dataset_train_view(&ds, expect, S, 3, AUGMENT_CROP, &r, want, err, sizeof err);
        ok &= rc == 0 && used[k] == expect && !memcmp(got + k * per, want, sizeof want);
    }
    CHECK(ok, "a batch all in a folder gone: images from the pool (items %d %d), each its own stream", used[0], used[1]);
    int again[2] = {-1, -1};
    float got2[2 * 8 * 8 * 3];
    for (int k = 0; k < 2; k++)
        dataset_batch_image(&ds, items, 2, k, pool, 6, S, 3, AUGMENT_CROP, 5, 7, got2 + k * per, &again[k], err, sizeof err);
    CHECK(again[0] == used[0] && again[1] == used[1] && !memcmp(got, got2, sizeof got), "the same images again");
    CHECK(dataset_batch_image(&ds, items, 2, 0, NULL, 0, S, 3, AUGMENT_CROP, 5, 7, got, NULL, err, sizeof err) ==
          DATASET_ERR_BROKEN && strstr(err, "no image of its batch decodes to take its place (all 2 are broken)"),
          "without a pool: the batch stops (%s)", err);
    // Files deleted alone, their folder still there: broken files, the batch stops.
    unlink(at(dir, "c/0.png"));
    unlink(at(dir, "c/1.png"));
    int cs[2] = {4, 5};
    CHECK(dataset_batch_image(&ds, cs, 2, 0, pool, 6, S, 3, AUGMENT_CROP, 5, 7, got, NULL, err, sizeof err) ==
          DATASET_ERR_BROKEN && strstr(err, "c/0.png: No such file or directory; no image of its batch decodes"),
          "files deleted alone: the batch stops (%s)", err);
    // Every folder gone (a and b moved, c's files deleted): nothing in the pool decodes, and the line
    // says so, not that the batch's images are broken.
    char a_from[700], a_to[700];
    snprintf(a_from, sizeof a_from, "%s/a", dir);
    snprintf(a_to, sizeof a_to, "%s/a.moved", base);
    rename(a_from, a_to);
    CHECK(dataset_batch_image(&ds, items, 2, 0, pool, 6, S, 3, AUGMENT_CROP, 5, 8, got, NULL, err, sizeof err) ==
          DATASET_ERR_FILE && strstr(err, "gone: no training image is left: the folders that held them are gone"),
          "every folder gone: said so (%s)", err);
    rename(a_to, a_from);
    rename(to, from);
    dataset_free(&ds);
}

// augment_fraction: the decimal a float was written as, read as a double (finetune --crop-scale); the
// default 0.2 exactly MAE's pretraining crop's AUGMENT_CROP_LO, so a run given it crops bitwise as one
// without the flag.
static void test_crop_lo(void) {
    const float given[] = {0.2f, 0.08f, 1.0f, 0.01f, 0.123456f, 0.35f};
    const double want[] = {AUGMENT_CROP_LO, 0.08, 1.0, 0.01, 0.123456, 0.35};
    int bad = 0;
    for (int i = 0; i < 6; i++) {
        double got = augment_fraction(given[i]);
        if (got != want[i] && bad++ < 3) fprintf(stderr, "  augment_fraction(%.9gf) = %.17g, want %.17g\n", given[i], got, want[i]);
    }
    CHECK(bad == 0, "augment_fraction: %d of 6 floats not read as the decimal written", bad);
}

int main(void) {
    omp_set_num_threads(2);
    test_crop_lo();
    snprintf(base, sizeof base, "%s", check_tmpdir());
    build_tree();
    test_scan();
    test_many_folders();
    test_visit_spread();
    test_split();
    test_split_boundary();
    test_split_pinned();
    test_cache_and_views();
    test_store();
    test_broken_late();
    test_folder_gone();
    test_stats();
    test_cache_budget();
    test_one_decode_at_a_time();
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
    return check_done();
}
