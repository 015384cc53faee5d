// Shared plumbing of the commands: output folders and stems (cmd/output.c), the mask-ratio rule and
// the seeded masks (core/masking.c), the memory rule (core/model.c, and inference's in infer/infer.c),
// the huge-page advice for big arrays (kernels/cpu.c), names that are not UTF-8 in JSON (io/json.c).
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "cmd/cli.h"
#include "cmd/output.h"
#include "core/masking.h"
#include "core/model.h"
#include "infer/infer.h"
#include "io/files.h"
#include "io/json.h"
#include "kernels/cpu.h"

static void test_mkdir(void) {
    const char *tmp = check_tmpdir();
    char path[1024], err[1024];
    snprintf(path, sizeof path, "%s/a/b/c", tmp);
    CHECK(output_mkdir_p(path, err, sizeof err) == 0, "nested folders: %s", err);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "a/b/c is a folder");
    CHECK(output_mkdir_p(path, err, sizeof err) == 0, "existing folder is fine: %s", err);
    snprintf(path, sizeof path, "%s/a/b/", tmp);
    CHECK(output_mkdir_p(path, err, sizeof err) == 0, "trailing slash: %s", err);

    char file[1024];
    snprintf(file, sizeof file, "%s/file", tmp);
    FILE *f = fopen(file, "w");
    if (f) fclose(f);
    errno = 0;
    CHECK(output_mkdir_p(file, err, sizeof err) == -1 && errno == ENOTDIR && strstr(err, "not a folder"),
          "a file is refused: errno %d, %s", errno, err);
    snprintf(path, sizeof path, "%s/file/sub", tmp);
    errno = 0;
    CHECK(output_mkdir_p(path, err, sizeof err) == -1 && errno == ENOTDIR && strstr(err, "/file/sub: "),
          "below a file: errno %d, %s", errno, err);
    CHECK(output_check_writable(tmp, err, sizeof err) == 0, "tmp takes files: %s", err);
}

// Paths as the user meant them (cmd/cli.h, cli_clean_path) and paths that meet (cmd/output.h,
// output_path_within): "out/" made "out//checkpoint.safetensors" in every name built from it.
static void test_paths(void) {
    static const char *const cases[][2] = {
        {"out/", "out"}, {"a//b///c", "a/b/c"}, {"./a/./b/.", "./a/b"}, {"a/..", "a/.."}, {"/", "/"},
        {"//", "/"}, {"/./", "/"}, {".", "."}, {"./", "."}, {"-x/", "-x"}, {"a/.b/..c/", "a/.b/..c"},
        {"../x//", "../x"}, {"a/./", "a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char p[64];
        snprintf(p, sizeof p, "%s", cases[i][0]);
        cli_clean_path(p);
        CHECK(!strcmp(p, cases[i][1]), "clean '%s': '%s', want '%s'", cases[i][0], p, cases[i][1]);
    }
    const char *tmp = check_tmpdir();
    char d[1024], in[1200], link[1200], up[1200];
    snprintf(d, sizeof d, "%s/meet/data", tmp);
    char err[1024];
    CHECK(output_mkdir_p(d, err, sizeof err) == 0, "mkdir: %s", err);
    snprintf(in, sizeof in, "%s/run/not/yet", d);   // does not exist yet
    CHECK(output_path_within(in, d) == 1, "a folder still to be made inside data");
    CHECK(output_path_within(d, d) == 1, "the same folder");
    CHECK(output_path_within(d, in) == 0, "data is not inside its own subfolder");
    snprintf(up, sizeof up, "%s/../datax", d);
    CHECK(output_path_within(up, d) == 0, "a sibling that shares a prefix is not inside");
    snprintf(link, sizeof link, "%s/meet/link", tmp);
    CHECK(symlink(d, link) == 0, "symlink");
    snprintf(in, sizeof in, "%s/run", link);
    CHECK(output_path_within(in, d) == 1, "inside through a link");
    char far[1200], run[1200];   // RUN/imgs, imgs a link to a folder elsewhere: in RUN as written
    snprintf(far, sizeof far, "%s/meet/far", tmp);
    snprintf(run, sizeof run, "%s/imgs", d);
    CHECK(output_mkdir_p(far, err, sizeof err) == 0 && symlink(far, run) == 0, "link to a folder elsewhere");
    CHECK(output_path_within(run, d) == 1 && output_path_within(far, d) == 0, "a link inside is inside");
    CHECK(output_path_within(d, run) == 0, "... and does not hold its folder");
    snprintf(in, sizeof in, "%s/meet/data/sub/..//", tmp);
    CHECK(output_path_within(d, in) == 1 && output_path_within(in, d) == 1, "'sub/..' of a missing sub, '//'");
    char cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd) != NULL && chdir(d) == 0, "chdir");
    CHECK(output_path_within("runs/x", ".") == 1 && output_path_within("runs/x", d) == 1, "relative to the working directory");
    CHECK(output_path_within("../x", ".") == 0, "'..' of the working directory");
    CHECK(chdir(cwd) == 0, "chdir back");
}

static void test_stems(void) {
    StemSet r = {.first_suffix = 1}, a = {.first_suffix = 2};   // the count from 2 stays possible, though no command uses it now
    const char *r1 = stem_set_claim(&r, "x"), *r2 = stem_set_claim(&r, "x"), *r3 = stem_set_claim(&r, "x");
    const char *r4 = stem_set_claim(&r, "x-1");
    CHECK(r1 && !strcmp(r1, "x") && r2 && !strcmp(r2, "x-1") && r3 && !strcmp(r3, "x-2"),
          "from 1: x, x-1, x-2 (got %s %s %s)", r1, r2, r3);
    CHECK(r4 && !strcmp(r4, "x-1-1"), "a later x-1 does not take x-1 again (got %s)", r4);
    const char *a1 = stem_set_claim(&a, "x"), *a2 = stem_set_claim(&a, "x"), *a3 = stem_set_claim(&a, "y");
    CHECK(a1 && !strcmp(a1, "x") && a2 && !strcmp(a2, "x-2") && a3 && !strcmp(a3, "y"),
          "from 2: x, x-2; y untouched (got %s %s %s)", a1, a2, a3);
    const char *e = stem_set_claim(&a, "");
    CHECK(e && !strcmp(e, "image"), "an empty stem is 'image' (got %s)", e);
    const char *d1 = stem_set_claim(&r, ".."), *d2 = stem_set_claim(&r, ".");
    CHECK(d1 && !strcmp(d1, "image") && d2 && !strcmp(d2, "image-1"), ".. and . are 'image' (got %s %s)", d1, d2);
    stem_set_free(&r);
    stem_set_free(&a);
    // Names by suffix: x's "x.attn.png" is x.attn.png's folder ""; "index.html" is reserved.
    static const char *const suf[] = {".attn.png", "", ".attn.npy", NULL}, *const res[] = {"index.html", NULL};
    StemSet s = {.first_suffix = 2, .suffixes = suf, .reserved = res};
    const char *s1 = stem_set_claim(&s, "x"), *s2 = stem_set_claim(&s, "x.attn.png"), *s3 = stem_set_claim(&s, "index.html");
    const char *s4 = stem_set_claim(&s, "x.attn"), *s5 = stem_set_claim(&s, "y.attn.png");
    CHECK(s1 && !strcmp(s1, "x") && s2 && !strcmp(s2, "x.attn.png-2") && s3 && !strcmp(s3, "index.html-2"),
          "clashing names move on (got %s %s %s)", s1, s2, s3);
    CHECK(s4 && !strcmp(s4, "x.attn") && s5 && !strcmp(s5, "y.attn.png"), "names that do not meet stay (got %s %s)", s4, s5);
    const char *s6 = stem_set_claim(&s, "y");   // y.attn.png is y.attn.png's folder
    CHECK(s6 && !strcmp(s6, "y-2"), "an earlier folder takes a later montage's name (got %s)", s6);
    stem_set_free(&s);
}

// The names a set gave, as the rule says (cmd/output.h), found the slow way: the first free of base,
// base-<first>, base-<first + 1>, ..., free when none of its names (with each suffix) is a name of
// an earlier one or a reserved name.
static int ref_taken(char **given, int n, const char *const *suf, const char *const *res, const char *name) {
    char a[400], b[400];
    for (int i = 0; suf[i]; i++) {
        snprintf(a, sizeof a, "%s%s", name, suf[i]);
        for (int r = 0; res && res[r]; r++) if (!strcmp(a, res[r])) return 1;
        for (int g = 0; g < n; g++)
            for (int j = 0; suf[j]; j++) {
                snprintf(b, sizeof b, "%s%s", given[g], suf[j]);
                if (!strcmp(a, b)) return 1;
            }
    }
    return 0;
}

// A folder of many images named alike (200 class folders that each hold 00.jpg .. 19.jpg, a camera's
// IMG_0001.JPG in every folder) is named in a few compares an image: a list searched through for
// every name tried cost the images times the names before them, times the duplicates (4,000 images
// in 200 folders: over 10^8 compares before the first picture). The names are the rule's, checked
// against a slow reference on a random mix that meets every case.
static void test_stems_at_scale(void) {
    StemSet r = {.first_suffix = 1};
    char stem[32], want[64];
    int ok = 1;
    for (int c = 0; c < 200; c++)
        for (int i = 0; i < 20; i++) {
            snprintf(stem, sizeof stem, "%02d", i);
            const char *got = stem_set_claim(&r, stem);
            if (c) snprintf(want, sizeof want, "%02d-%d", i, c);
            else snprintf(want, sizeof want, "%02d", i);
            if (!got || strcmp(got, want)) { ok = 0; CHECK(0, "class %d image %d: %s, not %s", c, i, got ? got : "(null)", want); break; }
        }
    CHECK(ok && r.compares < 10L * 4000, "4000 images, 20 names alike 200 times each: %ld compares (a few an image)", r.compares);
    stem_set_free(&r);

    static const char *const suf[] = {".attn.png", "", ".attn.npy", NULL}, *const res[] = {"index.html", NULL};
    static const char *const plain[] = {"", NULL};
    static const char *const pool[] = {"x", "x-1", "x-2", "x-1-1", "y", "y-2", "x.attn", "x.attn.png", "x.attn.png-2",
                                       "index.html", "index", "index.html-2", "", ".", "x.attn.npy"};
    for (int mode = 0; mode < 2; mode++) {
        StemSet s = {.first_suffix = 1 + mode, .suffixes = mode ? suf : NULL, .reserved = mode ? res : NULL};
        char *given[600];
        int n = 0, same = 1;
        uint64_t seed = 12345 + mode;
        for (; n < 600 && same; n++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            const char *pick = pool[(seed >> 33) % (sizeof pool / sizeof pool[0])];
            const char *base = *pick && strcmp(pick, ".") && strcmp(pick, "..") ? pick : "image";
            char ref[400];
            snprintf(ref, sizeof ref, "%s", base);
            for (int k = s.first_suffix; ref_taken(given, n, mode ? suf : plain, mode ? res : NULL, ref); k++)
                snprintf(ref, sizeof ref, "%s-%d", base, k);
            const char *got = stem_set_claim(&s, pick);
            same = got && !strcmp(got, ref);
            CHECK(same, "claim %d of '%s' (suffixes %d): %s, the rule gives %s", n, pick, mode, got ? got : "(null)", ref);
            given[n] = strdup(ref);
        }
        for (int i = 0; i < n; i++) free(given[i]);
        stem_set_free(&s);
    }
}

static void test_mask_ratio(void) {
    char err[256];
    CHECK(mask_ratio_check(0.0f, 16, err, sizeof err) == 0, "0 keeps everything");
    CHECK(mask_ratio_check(0.75f, 16, err, sizeof err) == 0, "0.75 of 16 keeps 4");
    CHECK(mask_ratio_check(0.95f, 16, err, sizeof err) == -1 && strstr(err, "of 16"), "0.95 of 16 keeps 0: %s", err);
    CHECK(mask_ratio_check(0.995f, 1024, err, sizeof err) == 0, "0.995 of 1024 keeps 5");
    CHECK(mask_ratio_check(1.0f, 0, err, sizeof err) == -1 && strstr(err, "must be < 1"), "1 is refused: %s", err);
    CHECK(mask_ratio_check(-0.1f, 0, err, sizeof err) == -1, "negative is refused");
    CHECK(mask_ratio_check(0.99f, 0, err, sizeof err) == 0, "range only when L is unknown");
    CHECK(mask_len_keep(16, 0.75f) == 4 && mask_len_keep(196, 0.75f) == 49, "int(L * (1 - R))");
    // Python's int(L * (1 - R)) for the decimal R written, not for the float nearest it.
    CHECK(mask_len_keep(25, 0.2f) == 20 && mask_len_keep(100, 0.1f) == 90 && mask_len_keep(100, 0.3f) == 70 &&
          mask_len_keep(100, 0.4f) == 60 && mask_len_keep(49, 0.6f) == 19, "as Python: 20 90 70 60 19 (got %d %d %d %d %d)",
          mask_len_keep(25, 0.2f), mask_len_keep(100, 0.1f), mask_len_keep(100, 0.3f), mask_len_keep(100, 0.4f),
          mask_len_keep(49, 0.6f));
}

static void test_seeded_masks(void) {
    enum { N = 3, L = 37, K = 9 };
    float noise[N * L], one[L];
    int keep[N * K], ref[K], scratch[2 * L];
    const uint64_t keys[N] = {0, 5, 11};
    masks_seeded(123, 7, keys, N, L, K, noise, keep, scratch);
    int same = 1, distinct = 1;
    for (int k = 0; k < N; k++) {
        Rng r;
        rng_derive(&r, 123, 7, keys[k]);
        mask_from_rng(&r, L, K, one, ref, scratch);
        for (int j = 0; j < K; j++) same &= keep[k * K + j] == ref[j];
        // each image's kept patches are K distinct indices below L
        for (int i = 0; i < K; i++)
            for (int j = 0; j < i; j++) distinct &= keep[k * K + i] != keep[k * K + j] && keep[k * K + i] < L;
    }
    CHECK(same, "image k's mask is the one of the stream rng_derive(seed, a, keys[k])");
    CHECK(distinct, "K distinct visible patches");
    // a mask does not depend on the batch it is in
    int keep1[K];
    masks_seeded(123, 7, &keys[2], 1, L, K, noise, keep1, scratch);
    CHECK(!memcmp(keep1, keep + 2 * K, sizeof keep1), "the same key alone gives the same mask");
}

static void test_memory(void) {
    MaeConfig c;
    mae_config_preset(&c, "tiny");
    c.img_size = 32; c.patch_size = 4;
    char err[256] = "";
    CHECK(mae_memory_check(&c, 2, 1000, err, sizeof err) == 0, "tiny at batch 2 fits: %s", err);
    CHECK(mae_memory_check(&c, 4096, (size_t)1 << 40, err, sizeof err) == -1 &&
          strstr(err, "batch 4096 at 32x32 needs ") && strstr(err, cpu_memory_holder()),
          "4 PiB of images does not fit: %s", err);
    // Inference sizes a forward-only model (core/model.h mae_create_forward): at the smallest ViT-B/16
    // batch that training could not hold here, embed / reconstruct / eval still run.
    MaeConfig v;
    mae_config_preset(&v, "base");
    v.img_size = 224; v.patch_size = 16;
    size_t per = (size_t)224 * 224 * 3;
    long have = cpu_memory_bytes();
    int B = 1;
    while (have > 0 && B < 4096 && mae_memory_check(&v, B, sizeof(float) * per * 3, err, sizeof err) == 0) B++;
    if (have > 0 && B < 4096) {
        CHECK(infer_memory_check(&v, B, per, 0, 0, err, sizeof err) == 0,
              "batch %d of ViT-B/16 forward only fits %.1f GiB: %s", B, have / 1073741824.0, err);
        CHECK(mae_bytes_needed_forward(&v, B) * 4 < mae_bytes_needed(&v, B), "forward only under a quarter");
    }
}

static void test_huge_pages(void) {
    const size_t huge = (size_t)2 << 20;
    char *small = calloc(1, 2 * huge - 64);
    CHECK(small && cpu_advise_huge_pages(small, 2 * huge - 64) == 0, "an array under 4 MB is left alone");
    free(small);
    CHECK(cpu_advise_huge_pages(NULL, 64 * huge) == 0, "NULL is left alone");

    // 40 MB from calloc (a fresh mapping of its own, not 2 MB aligned): the advice covers exactly the
    // whole 2 MB pages inside [p, p + bytes).
    size_t bytes = 20 * huge;
    char *p = calloc(1, bytes);
    CHECK(p != NULL, "40 MB");
    if (!p) return;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1), hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(huge - 1);
    size_t got = cpu_advise_huge_pages(p, bytes);
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (got == 0 && !thp) {
        printf("  (this kernel has no transparent huge pages: advice checks skipped)\n");
    } else {
        CHECK(got == hi - lo, "advised %zu bytes, the whole huge pages inside are %zu", got, (size_t)(hi - lo));
        char flags[512];
        check_vm_flags_at(lo, flags, sizeof flags);
        CHECK(strstr(flags, " hg") != NULL, "the first whole huge page is advised (VmFlags:%s)", flags);
        check_vm_flags_at(hi - 1, flags, sizeof flags);
        CHECK(strstr(flags, " hg") != NULL, "the last whole huge page is advised (VmFlags:%s)", flags);
        if ((uintptr_t)p < lo) {
            check_vm_flags_at((uintptr_t)p, flags, sizeof flags);
            CHECK(flags[0] && strstr(flags, " hg") == NULL, "nothing before the array's first whole huge page (VmFlags:%s)", flags);
        }
        check_vm_flags_at(hi, flags, sizeof flags);
        CHECK(strstr(flags, " hg") == NULL, "nothing past the array's last whole huge page (VmFlags:%s)", flags);
    }
    if (thp) fclose(thp);
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; i += 4096) nonzero += p[i] != 0;
    CHECK(nonzero == 0, "the advised array still reads as zeros (%zu pages not)", nonzero);
    free(p);

    float *f = cpu_calloc_big((size_t)5 << 20, sizeof(float));
    CHECK(f && f[0] == 0.0f && f[((size_t)5 << 20) - 1] == 0.0f, "cpu_calloc_big: zeroed floats");
    free(f);
}

// Valid UTF-8 passes unchanged; what is not becomes U+FFFD (EF BF BD), one for each maximal subpart, as
// Python's bytes.decode("utf-8", "replace") writes it (each expectation here is Python's); a JSON text
// with such a string prints clean.
static void test_utf8(void) {
    static const struct { const char *in, *out; int valid; } cases[] = {
        {"plain.png", "plain.png", 1},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x88", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x88", 1},   // 2, 3, 4 bytes
        {"a\xff" "b", "a\xef\xbf\xbd" "b", 0},                  // never a UTF-8 byte
        {"\xc3", "\xef\xbf\xbd", 0},                         // a sequence cut short at the end
        {"\xc3(", "\xef\xbf\xbd(", 0},                       // ... or by an ASCII byte
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd", 0},      // overlong '/'
        {"\xe0\x80\xaf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 0},   // overlong, 3 bytes
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 0},   // a surrogate (U+D800)
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 0},   // past U+10FFFF
        {"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf", 1},      // U+10FFFF itself
        {"\xe9t\xe9", "\xef\xbf\xbdt\xef\xbf\xbd", 0},    // Latin-1 "ete"
        {"\xe2\x82", "\xef\xbf\xbd", 0},                     // a 3-byte sequence cut short: one U+FFFD
        {"\xf0\x9f\x90(", "\xef\xbf\xbd(", 0},               // a 4-byte one cut short by '('
        {"\xe2\x82\xe2\x82\xac", "\xef\xbf\xbd\xe2\x82\xac", 0},   // then a whole one
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *c = utf8_clean(cases[i].in);
        CHECK(c && strcmp(c, cases[i].out) == 0, "utf8_clean of case %zu", i);
        CHECK(utf8_valid(cases[i].in) == cases[i].valid, "utf8_valid of case %zu", i);
        CHECK(c && utf8_valid(c), "the cleaned case %zu is valid", i);
        free(c);
    }
    char *names[] = {"cats", "dogs", "b\xe9tes", "x\xff"};
    CHECK(utf8_first_invalid(names, 2) == -1, "all valid");
    CHECK(utf8_first_invalid(names, 4) == 2, "the first invalid name");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", "runs/\xff\\\"x");
    char *s = json_print_utf8(o, 0);
    CHECK(s && strcmp(s, "{\"path\":\"runs/\xef\xbf\xbd\\\\\\\"x\"}") == 0, "JSON printed clean: %s", s ? s : "(null)");
    free(s);
    cJSON_Delete(o);
    // C1 controls (U+0080..U+009F) as \u0080..\u009f, which read back as the same string; U+00A0 and
    // other characters of 0xc2 as they are (cJSON copied them all raw: U+009B steers a terminal as ESC [).
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "data", "d\xc2\x9b" "2J\xc2\x80\xc2\x9f|\xc2\xa0\xc3\xa9");
    s = json_print_utf8(o, 0);
    CHECK(s && strcmp(s, "{\"data\":\"d\\u009b2J\\u0080\\u009f|\xc2\xa0\xc3\xa9\"}") == 0, "C1 controls escaped: %s",
          s ? s : "(null)");
    cJSON *back = s ? cJSON_Parse(s) : NULL;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(back, "data");
    CHECK(cJSON_IsString(d) && strcmp(d->valuestring, "d\xc2\x9b" "2J\xc2\x80\xc2\x9f|\xc2\xa0\xc3\xa9") == 0,
          "... and read back as the same string");
    cJSON_Delete(back);
    free(s);
    cJSON_Delete(o);
    // The terminal lines' rule (cli_escape_at): a C1 control as its two bytes written out, another
    // character of 0xc2 as it is, whole; a byte of 0x80..0x9F outside valid UTF-8 written out, other
    // such bytes (Latin-1 names) as they are; C0 controls and the backslash as before.
    struct { const char *in, *out; size_t used; } esc[] = {
        {"\xc2\x9b[2J", "\\xc2\\x9b", 2}, {"\xc2\x80", "\\xc2\\x80", 2}, {"\xc2\x9f", "\\xc2\\x9f", 2},
        {"\xc2\xa0", "", 2}, {"\xc3\xa9", "", 2}, {"\xc2", "", 1}, {"\x1b[", "\\x1b", 1}, {"\n", "\\n", 1},
        {"\\", "\\\\", 1}, {"\x9b", "\\x9b", 1}, {"\xe9t", "", 1}, {"\xe2\x82\xac", "", 3}, {"a", "", 1},
    };
    for (size_t i = 0; i < sizeof esc / sizeof *esc; i++) {
        char out[9] = "";
        size_t used = 0, n = cli_escape_at(esc[i].in, out, &used);
        CHECK(n == strlen(esc[i].out) && (!n || strcmp(out, esc[i].out) == 0) && used == esc[i].used,
              "cli_escape_at case %zu: %zu bytes '%s', used %zu", i, n, n ? out : "", used);
    }
    // Whole numbers from 10^15 to 2^53 with every digit, at any depth; others as cJSON prints them.
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "seed", 9007199254740991.0);
    cJSON *arr = cJSON_AddArrayToObject(o, "a");
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(-1234567890123456.0));
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(9007199254740992.0));
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(999999999999999.0));
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(0.5));
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(1e17));
    s = json_print_utf8(o, 0);
    CHECK(s && strcmp(s, "{\"seed\":9007199254740991,\"a\":[-1234567890123456,9007199254740992,999999999999999,0.5,1e+17]}") == 0,
          "whole numbers exact: %s", s ? s : "(null)");
    free(s);
    cJSON_Delete(o);
    // Numbers that are not whole with the fewest digits that read back as the same double: cJSON
    // printed 0.1 + 0.2 as 0.3 and a resumed run's loss sum 1-2 units in the last place off.
    double exact[] = {0.1 + 0.2, 8.0215833783149713, 1.0188942730426787, -2.5e-300, 0.1, 1.0 / 3.0, 5e-324};
    const char *want[] = {"0.30000000000000004", "8.021583378314972", "1.0188942730426787", "-2.5e-300", "0.1",
                          "0.3333333333333333", "5e-324"};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) {
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "x", exact[i]);
        s = json_print_utf8(o, 0);
        cJSON *b = s ? cJSON_Parse(s) : NULL;
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(b, "x");
        char text[64];
        snprintf(text, sizeof text, "{\"x\":%s}", want[i]);
        CHECK(s && strcmp(s, text) == 0 && cJSON_IsNumber(x) && x->valuedouble == exact[i],
              "number %zu printed %s, read back exactly", i, s ? s : "(null)");
        cJSON_Delete(b);
        free(s);
        cJSON_Delete(o);
    }
}

// utf8_clip, the form of a name from inside a file in a message (io/json.h): whole up to
// UTF8_CLIP_MAX bytes, else cut before the first character that does not fit, then "..."; what is not
// UTF-8 as U+FFFD (3 bytes each, counted so); control characters kept for the printer to write out.
static void test_utf8_clip(void) {
    char at[UTF8_CLIP_MAX + 2], past[UTF8_CLIP_MAX + 2], want[UTF8_CLIP_SIZE + 8], got[UTF8_CLIP_SIZE];
    memset(at, 'a', UTF8_CLIP_MAX); at[UTF8_CLIP_MAX] = 0;
    memset(past, 'a', UTF8_CLIP_MAX + 1); past[UTF8_CLIP_MAX + 1] = 0;
    CHECK(!strcmp(utf8_clip(got, ""), ""), "empty: empty ('%s')", got);
    CHECK(!strcmp(utf8_clip(got, NULL), "(null)"), "NULL: (null) ('%s')", got);
    CHECK(!strcmp(utf8_clip(got, at), at), "exactly %d bytes: whole (%zu bytes)", UTF8_CLIP_MAX, strlen(got));
    snprintf(want, sizeof want, "%.*s...", UTF8_CLIP_MAX, past);
    CHECK(!strcmp(utf8_clip(got, past), want), "one byte past: cut, then ... (%zu bytes)", strlen(got));
    // A 2-byte character (e9 = U+00E9) over the limit: left out whole, never half of it.
    memcpy(past + UTF8_CLIP_MAX - 1, "\xc3\xa9", 3);
    snprintf(want, sizeof want, "%.*s...", UTF8_CLIP_MAX - 1, past);
    CHECK(!strcmp(utf8_clip(got, past), want), "a cut inside a 2-byte character: before it (%zu bytes, ends %02x)",
          strlen(got), (unsigned char)got[UTF8_CLIP_MAX - 1]);
    // ... and a 4-byte one that ends exactly at the limit: kept.
    memcpy(at + UTF8_CLIP_MAX - 4, "\xf0\x9f\x90\x88", 5);
    CHECK(!strcmp(utf8_clip(got, at), at), "a 4-byte character ending at the limit: whole");
    // Bytes that are not UTF-8 as U+FFFD, 3 bytes each in the limit: 40 such bytes are 120 bytes.
    char bad[41];
    memset(bad, 0xff, 40); bad[40] = 0;
    utf8_clip(got, bad);
    CHECK(strlen(got) == 3 * (UTF8_CLIP_MAX / 3) + 3 && utf8_valid(got) && !strcmp(got + strlen(got) - 3, "...")
          && !memcmp(got, "\xef\xbf\xbd", 3), "40 bytes of 0xff: %d U+FFFD, then ... (%zu bytes)", UTF8_CLIP_MAX / 3, strlen(got));
    CHECK(!strcmp(utf8_clip(got, "a\xe9" "b\xc3"), "a\xef\xbf\xbd" "b\xef\xbf\xbd"), "Latin-1 and a cut sequence: U+FFFD");
    // Control characters pass: the line's printer writes them out (\n, \x1b), as in any message.
    CHECK(!strcmp(utf8_clip(got, "a\nb\x1b[31m\x7f"), "a\nb\x1b[31m\x7f"), "control characters kept for the printer");
}

// file_open_regular: a FIFO at a run's file name (metrics.csv) is refused at once, for reading and for
// appending, where fopen waited for a writer (a resumed run hung, deaf to SIGTERM); a regular file opens.
static void test_open_regular(void) {
    const char *tmp = check_tmpdir();
    char fifo[600], plain[600], err[700];
    snprintf(fifo, sizeof fifo, "%s/metrics.csv", tmp);
    snprintf(plain, sizeof plain, "%s/plain.csv", tmp);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    alarm(20);   // a wait on the FIFO ends the test instead of hanging it
    for (int i = 0; i < 2; i++) {
        err[0] = 0;
        FILE *f = file_open_regular(fifo, i ? "a" : "r", err, sizeof err);
        char want[700];
        snprintf(want, sizeof want, "%s: not a regular file", fifo);
        CHECK(!f && errno == EINVAL && !strcmp(err, want), "a FIFO refused for %s: '%s'", i ? "append" : "read", err);
        if (f) fclose(f);
    }
    alarm(0);
    FILE *f = file_open_regular(plain, "r", err, sizeof err);
    CHECK(!f && errno == ENOENT, "a missing file: ENOENT for read");
    if (f) fclose(f);
    f = file_open_regular(plain, "a", err, sizeof err);
    CHECK(f && fputs("x\n", f) >= 0 && fclose(f) == 0, "a new file made for append: %s", err);
    f = file_open_regular(plain, "a", err, sizeof err);
    CHECK(f && fputs("y\n", f) >= 0 && fclose(f) == 0, "appended to: %s", err);
    char line[8] = "";
    f = file_open_regular(plain, "r", err, sizeof err);
    CHECK(f && fread(line, 1, 4, f) == 4 && !memcmp(line, "x\ny\n", 4), "read back both lines");
    if (f) fclose(f);
}

// Writes text to root/rel, making the folders on the way.
static void put_file(const char *root, const char *rel, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        mkdir(path, 0777);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "write %s", path);
    if (f) { fputs(text, f); fclose(f); }
}

// Writes text to root/rel (rel NULL: nothing), then checks the limit read from root: memory (cpu 0) or
// CPUs (cpu 1).
static void expect_limit(const char *root, const char *rel, const char *text, int cpu, long want, const char *what) {
    if (rel) put_file(root, rel, text);
    long got = cpu ? cpu_cgroup_cpu_limit(root) : cpu_cgroup_memory_limit(root);
    CHECK(got == want, "%s: %ld, not %ld", what, got, want);
}

// The memory cgroup's limit, read from trees laid out as / (kernels/cpu.h): v2 and v1, the lowest
// of the process's cgroup and those above it, a mount that shows the hierarchy from a folder down,
// "max" and v1's "none" (2^63 less a page), a controller list with memory among others, and nothing
// to read.
static void test_cgroup_limit(void) {
    const char *v2 = check_tmpdir();
    put_file(v2, "proc/self/cgroup", "0::/user.slice/app.scope\n");
    put_file(v2, "proc/self/mountinfo",
             "22 1 0:21 / /proc rw - proc proc rw\n"
             "30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n");
    expect_limit(v2, "sys/fs/cgroup/user.slice/app.scope/memory.max", "max\n", 0, 0, "v2: 'max', none");
    expect_limit(v2, "sys/fs/cgroup/user.slice/memory.max", "2147483648\n", 0, 2147483648L,
                 "v2: the parent's 2 GiB under a 'max'");
    expect_limit(v2, "sys/fs/cgroup/user.slice/app.scope/memory.max", "536870912\n", 0, 536870912L,
                 "v2: the own 512 MiB under the parent's 2 GiB");
    expect_limit(v2, "sys/fs/cgroup/user.slice/app.scope/memory.max", "4294967296\n", 0, 2147483648L,
                 "v2: the parent's 2 GiB over the own 4 GiB");

    const char *v1 = check_tmpdir();   // a container: the mount shows the hierarchy from /docker/abc down
    put_file(v1, "proc/self/cgroup", "5:cpu,cpuacct:/docker/abc\n4:memory,hugetlb:/docker/abc\n0::/\n");
    put_file(v1, "proc/self/mountinfo",
             "40 30 0:33 /docker/abc /sys/fs/cgroup/memory ro,nosuid master:15 - cgroup cgroup rw,hugetlb,memory\n"
             "41 30 0:34 /docker/abc /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu,cpuacct\n");
    put_file(v1, "sys/fs/cgroup/cpu/memory.limit_in_bytes", "1000\n");   // not the memory controller's
    expect_limit(v1, "sys/fs/cgroup/memory/memory.limit_in_bytes", "1073741824\n", 0, 1073741824L, "v1 in a container: 1 GiB");
    // A cgroup below the container's: its folder is the mount's sub, not the hierarchy's whole path.
    put_file(v1, "proc/self/cgroup", "4:memory,hugetlb:/docker/abc/sub\n");
    put_file(v1, "sys/fs/cgroup/memory/docker/abc/sub/memory.limit_in_bytes", "4096\n");   // not there
    expect_limit(v1, "sys/fs/cgroup/memory/sub/memory.limit_in_bytes", "268435456\n", 0, 268435456L,
                 "v1, a cgroup below the container's: 256 MiB");
    // Outside the part mounted: not read.
    expect_limit(v1, "proc/self/cgroup", "4:memory:/elsewhere\n", 0, 0, "v1, a cgroup outside the mount's part: none");
    put_file(v1, "proc/self/cgroup", "4:memory,hugetlb:/docker/abc\n");
    expect_limit(v1, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n", 0, 0, "v1: no limit");

    const char *none = check_tmpdir();
    expect_limit(none, NULL, NULL, 0, 0, "nothing to read: no limit");
    put_file(none, "proc/self/cgroup", "4:memory:/a\n");
    put_file(none, "proc/self/mountinfo", "40 30 0:33 / /m rw - cgroup cgroup rw,memory\n");
    expect_limit(none, "m/a/memory.limit_in_bytes", "12x\n", 0, 0, "a limit that is no number: none");
    expect_limit(none, "m/memory.limit_in_bytes", "65536\n", 0, 65536, "v1 at the hierarchy's root");
    // A CPU quota, in whole CPUs rounded up: v2's cpu.max ("max": none), the lowest up the tree, and v1's
    // cfs quota over its period (-1: none).
    expect_limit(v2, "sys/fs/cgroup/user.slice/app.scope/cpu.max", "max 100000\n", 1, 0, "v2: no CPU quota");
    expect_limit(v2, "sys/fs/cgroup/user.slice/app.scope/cpu.max", "150000 100000\n", 1, 2, "v2: 1.5 CPUs are 2 threads");
    expect_limit(v2, "sys/fs/cgroup/user.slice/cpu.max", "100000 100000\n", 1, 1, "v2: the parent's 1 CPU under the own 1.5");
    put_file(v1, "proc/self/cgroup", "5:cpu,cpuacct:/docker/abc\n4:memory,hugetlb:/docker/abc\n");
    put_file(v1, "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    expect_limit(v1, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n", 1, 0, "v1: quota -1, none");
    expect_limit(v1, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "250000\n", 1, 3, "v1: 2.5 CPUs are 3 threads");
    expect_limit(v1, NULL, NULL, 0, 0, "v1: the CPU controller's folder holds no memory limit");
    expect_limit(none, NULL, NULL, 1, 0, "no CPU controller: none");
    // The amount a refusal names is this process's, with how it says it.
    long phys = sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGE_SIZE), lim = cpu_cgroup_memory_limit("");
    long have = cpu_memory_bytes();
    CHECK(have == (lim > 0 && lim < phys ? lim : phys), "this process's memory: %ld (machine %ld, cgroup %ld)", have,
          phys, lim);
    CHECK(!strcmp(cpu_memory_holder(), lim > 0 && lim < phys ? "its memory cgroup allows" : "this machine has"),
          "said as '%s'", cpu_memory_holder());
    // Under mpirun, 3 processes of the job on this machine (dist_init's cpu_share_cpus): each a third,
    // said so; back to one.
    cpu_share_cpus(1, 3);
    CHECK(cpu_memory_bytes() == have / 3 && !strcmp(cpu_memory_holder(), lim > 0 && lim < phys
                                                    ? "its memory cgroup allows each of its 3 processes"
                                                    : "each of this machine's 3 processes has"),
          "3 processes here: %ld, said as '%s'", cpu_memory_bytes(), cpu_memory_holder());
    cpu_share_cpus(1, 1);
    CHECK(cpu_memory_bytes() == have && !strchr(cpu_memory_holder(), '3'), "one process again: %ld", cpu_memory_bytes());
}

// OMP_NUM_THREADS as libgomp reads it (tried against libgomp 12: its line for exactly the values it
// refuses): a value it refuses leaves the default in charge, CPU quota included (it was every core).
static void test_default_threads(void) {
    const char *taken[] = {"1", "2", " 2", "2 ", "+2", "4,2", "1,1", " 3 , 2 ", "007"};
    const char *refused[] = {"", " ", "abc", "0", "-1", "-0", "2,", "2,abc", ",2", "2x", "1e3", "2 2",
                             "99999999999999999999", "18446744073709551615"};
    for (size_t i = 0; i < sizeof taken / sizeof *taken; i++) {
        CHECK(cpu_omp_threads_taken(taken[i]), "OMP_NUM_THREADS='%s' is libgomp's count", taken[i]);
        CHECK(cpu_default_threads(taken[i], 8, 2, 1, 1) == 0, "OMP_NUM_THREADS='%s': its count stands", taken[i]);
    }
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        CHECK(!cpu_omp_threads_taken(refused[i]), "OMP_NUM_THREADS='%s' is refused by libgomp", refused[i]);
        int d = cpu_default_threads(refused[i], 8, 2, 1, 1);
        CHECK(d == 2, "OMP_NUM_THREADS='%s' under a quota of 2 CPUs of 8: 2 threads as if unset (%d)", refused[i], d);
    }
    CHECK(!cpu_omp_threads_taken(NULL), "OMP_NUM_THREADS unset");
    CHECK(cpu_default_threads(NULL, 8, 2, 1, 1) == 2, "a quota of 2 CPUs of 8: 2 threads");
    CHECK(cpu_default_threads(NULL, 8, 0, 1, 1) == 8, "no quota: 8 threads");
    CHECK(cpu_default_threads(NULL, 2, 4, 1, 1) == 2, "a quota of more CPUs than there are: 2 threads");
}

// Under mpirun the ranks on one machine share its CPUs (each rank took them all: 2 ranks of 2 threads
// on 2 cores), and its quota; each at least 1; OMP_NUM_THREADS, where libgomp takes it, still decides.
static void test_default_threads_mpi(void) {
    struct { int cpus, quota, sharing, here, want; const char *what; } c[] = {
        {2, 0, 2, 2, 1, "2 ranks unbound on 2 cores: 1 thread each"},
        {16, 0, 4, 4, 4, "4 ranks unbound on 16 cores: 4 each"},
        {16, 0, 3, 3, 5, "3 ranks on 16 cores: 5 each, none past the cores"},
        {1, 0, 1, 2, 1, "bound to a core each (mpirun's default for 2 ranks): 1 each"},
        {8, 0, 2, 4, 4, "4 ranks on 2 sockets of 8 cores, 2 ranks a socket: 4 each"},
        {2, 0, 4, 4, 1, "4 ranks on 2 cores (--oversubscribe): at least 1 each"},
        {16, 4, 2, 2, 2, "a quota of 4 CPUs for 2 ranks on 16 cores: 2 each"},
        {4, 4, 1, 2, 2, "a quota of 4 CPUs for 2 ranks bound to 4 cores each: 2 each"},
        {8, 1, 2, 2, 1, "a quota of 1 CPU for 2 ranks: 1 each"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        int d = cpu_default_threads(NULL, c[i].cpus, c[i].quota, c[i].sharing, c[i].here);
        CHECK(d == c[i].want, "%s (%d threads)", c[i].what, d);
    }
    CHECK(cpu_default_threads("3", 2, 0, 2, 2) == 0, "OMP_NUM_THREADS=3 under mpirun: its count stands");
    CHECK(cpu_default_threads("abc", 2, 0, 2, 2) == 1, "OMP_NUM_THREADS=abc under mpirun: as if unset");
}

int main(void) {
    test_mkdir();
    test_open_regular();
    test_paths();
    test_stems();
    test_stems_at_scale();
    test_mask_ratio();
    test_seeded_masks();
    test_memory();
    test_cgroup_limit();
    test_default_threads();
    test_default_threads_mpi();
    test_huge_pages();
    test_utf8();
    test_utf8_clip();
    return check_done();
}
