// npy: exact header bytes, alignment, data round trip, and failures that leave nothing behind; the
// publishing of staged outputs (io/files.h): nothing replaced without replace, a group all or nothing.
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "io/files.h"
#include "io/npy.h"

static long read_file(const char *path, unsigned char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return (long)n;
}

// Checks that hdr[0..total) is the 10-byte prefix, dict, spaces, '\n', total a multiple of 64.
static void check_header(const unsigned char *hdr, long total, const char *dict, long want_total) {
    CHECK(total == want_total, "header total %ld, want %ld (%s)", total, want_total, dict);
    if (total != want_total) return;
    CHECK(memcmp(hdr, "\x93NUMPY\x01\x00", 8) == 0, "magic and version 1.0");
    CHECK(hdr[8] + 256 * hdr[9] == total - 10, "header length field (LE)");
    size_t n = strlen(dict);
    CHECK(memcmp(hdr + 10, dict, n) == 0, "dict text %s", dict);
    int spaces = 1;
    for (long i = 10 + (long)n; i < total - 1; i++) spaces &= hdr[i] == ' ';
    CHECK(spaces && hdr[total - 1] == '\n', "padding spaces then newline");
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

// Stages the 6 floats for path in g (npy_write_to under file_tmp_name's name).
static void stage(FileGroup *g, const char *path, const float *data) {
    char tmp[700], err[256];
    int64_t n = 6;
    CHECK(file_tmp_name(path, tmp, sizeof tmp) == 0 && strstr(tmp, ".tmp."), "temporary name %s", tmp);
    CHECK(npy_write_to(tmp, path, data, "<f4", 1, &n, err, sizeof err) == 0, "staged: %s", err);
    CHECK(file_group_add(g, tmp, path) == 0, "added");
}

static int stray_temporaries(const char *dir) {
    DIR *d = opendir(dir);
    int stray = 0;
    for (struct dirent *e; d && (e = readdir(d));) stray += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return stray;
}

static void test_publish(const char *dir) {
    char a[600], b[600], err[1200];
    float data[6] = {1, 2, 3, 4, 5, 6};
    snprintf(a, sizeof a, "%s/a.npy", dir);
    snprintf(b, sizeof b, "%s/b.txt", dir);
    FileGroup g = {0};
    stage(&g, a, data);
    stage(&g, b, data);
    CHECK(file_group_publish(&g, 0, err, sizeof err) == 0 && file_size(a) == 152 && file_size(b) == 152, "pair published: %s", err);
    CHECK(g.n == 0 && g.tmps == NULL, "the group is freed");
    // The first name taken: nothing replaced, nothing of this group left.
    stage(&g, a, data);
    stage(&g, b, data);
    unlink(b);
    CHECK(file_group_publish(&g, 0, err, sizeof err) == FILE_TAKEN, "a taken name: FILE_TAKEN");
    CHECK(strstr(err, "a.npy: exists now (written by another command meanwhile); pass --force to replace it") != NULL, "%s", err);
    CHECK(file_size(a) == 152 && file_size(b) == -1, "the taken file kept, the rest of the group not published");
    // The second name taken: the first, published, goes again (only this group's file).
    unlink(a);
    FILE *f = fopen(b, "w");
    if (f) { fputs("theirs", f); fclose(f); }
    stage(&g, a, data);
    stage(&g, b, data);
    CHECK(file_group_publish(&g, 0, err, sizeof err) == FILE_TAKEN && strstr(err, "b.txt: exists now"), "%s", err);
    CHECK(file_size(a) == -1 && file_size(b) == 6, "the group's first file removed again, the other's kept");
    // replace (--force): published over what is there.
    stage(&g, a, data);
    stage(&g, b, data);
    CHECK(file_group_publish(&g, 1, err, sizeof err) == 0 && file_size(a) == 152 && file_size(b) == 152, "replaced: %s", err);
    // A failure that is not a taken name: a folder in the second's place.
    unlink(b);
    char inner[700];
    snprintf(inner, sizeof inner, "%s/x", b);
    CHECK(mkdir(b, 0777) == 0 && mkdir(inner, 0777) == 0, "a folder at b.txt");
    unlink(a);
    stage(&g, a, data);
    stage(&g, b, data);
    CHECK(file_group_publish(&g, 1, err, sizeof err) == -1 && strstr(err, "b.txt: "), "a folder in the way: %s", err);
    CHECK(file_size(a) == -1, "all or nothing: the first removed again");
    // A group given up.
    stage(&g, a, data);
    file_group_discard(&g);
    CHECK(file_size(a) == -1 && stray_temporaries(dir) == 0, "no temporary file left");
    rmdir(inner); rmdir(b); unlink(a);
}

// A group of many files in one folder (attention --layer all --head all: two per map) holds one
// descriptor for the folder, not one per file: under a limit of 32 descriptors 100 files are staged
// and published. One per file ran the process out of them, and the next file could not be written.
// The stop signals' cleanup is on, as in the commands that publish groups: it holds each file's folder
// from its creation (io/files.c, HeldFolder), once for all the files there, and lets it go with the last.
static void test_publish_many(const char *dir) {
    file_cleanup_on_stop_signals();
    int free_fd = dup(0);   // the lowest descriptor free before: free again after, nothing held open
    close(free_fd);
    struct rlimit was, low;
    CHECK(getrlimit(RLIMIT_NOFILE, &was) == 0, "getrlimit");
    low = was;
    low.rlim_cur = 32;
    CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0, "setrlimit 32");
    float data[6] = {1, 2, 3, 4, 5, 6};
    char path[100][600], tmp[700], err[1200] = "";
    int64_t n = 6;
    FileGroup g = {0};
    int staged = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(path[i], sizeof path[i], "%s/m%03d.npy", dir, i);
        if (file_tmp_name(path[i], tmp, sizeof tmp) || npy_write_to(tmp, path[i], data, "<f4", 1, &n, err, sizeof err) ||
            file_group_add(&g, tmp, path[i]))
            break;
        staged++;
    }
    CHECK(staged == 100, "100 files staged in one folder under 32 descriptors (%d: %s)", staged, err);
    int rc = file_group_publish(&g, 0, err, sizeof err), published = 0;
    setrlimit(RLIMIT_NOFILE, &was);
    for (int i = 0; i < 100; i++) published += file_size(path[i]) == 152;
    CHECK(rc == 0 && published == staged, "published: %d of %d (%s)", published, staged, rc ? err : "");
    for (int i = 0; i < 100; i++) unlink(path[i]);
    CHECK(stray_temporaries(dir) == 0, "no temporary file left");
    int now_fd = dup(0);
    close(now_fd);
    CHECK(now_fd == free_fd, "no folder left open once the group is published (descriptor %d free before, %d now)",
          free_fd, now_fd);
}

// Names kept and forgotten by several threads at once, as reconstruct's and attention's workers stage
// their files: each thread's lookups of its own names (file_tmp_forget, file_tmp_create, file_tmp_remove)
// walk past nodes that other threads are refilling with new names. The lookup compared a node's name
// while another thread rewrote it (a data race: tests/tsan.sh runs this under ThreadSanitizer); a name
// is now read and rewritten under one lock (io/files.c, names_lock). Each thread's files are made and
// removed through its own names: none may be left, and none of another thread's removed.
enum { NAME_THREADS = 4, NAME_ROUNDS = 4000 };
typedef struct { const char *dir; int id, made, left; } NameWork;
static void *name_worker(void *arg) {
    NameWork *w = arg;
    char path[600], tmp[700];
    for (int i = 0; i < NAME_ROUNDS; i++) {
        // Names of varied lengths, so that a node is refilled with a name longer or shorter than its last.
        snprintf(path, sizeof path, "%s/t%d-%.*s.npy", w->dir, w->id, i % 40, "0123456789012345678901234567890123456789");
        if (file_tmp_name(path, tmp, sizeof tmp)) continue;
        if (i % 50) { file_tmp_forget(tmp); continue; }
        int fd = file_tmp_create(tmp);
        if (fd < 0) { file_tmp_forget(tmp); continue; }
        close(fd);
        w->made++;
        file_tmp_remove(tmp);
        w->left += access(tmp, F_OK) == 0;
    }
    return NULL;
}
static void test_names_threads(const char *dir) {
    pthread_t th[NAME_THREADS];
    NameWork w[NAME_THREADS];
    int started = 0, made = 0, left = 0;
    for (int i = 0; i < NAME_THREADS; i++) {
        w[i] = (NameWork){dir, i, 0, 0};
        started += pthread_create(&th[i], NULL, name_worker, &w[i]) == 0;
    }
    CHECK(started == NAME_THREADS, "%d threads started", started);
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        made += w[i].made;
        left += w[i].left;
    }
    CHECK(made == started * (NAME_ROUNDS / 50) && left == 0, "threads' temporary files: %d made, %d left", made, left);
    CHECK(stray_temporaries(dir) == 0, "no temporary file left by the threads");
}

// A folder made twice (file_mkdir_tracked: made, then there already, as output_mkdir_p walks the folders
// above an output), the cleanup on, the second call's node in a slot of the list below the first's (a
// node freed before is reused): the second call forgot the first LIVE node of that name, the one that
// knew the folder (dev, ino), and its own, which does not, stayed. The run's folder then moved and an
// empty one made at its name by someone else, a stop signal removed that one by its name. Now the second
// call forgets its own node: the other folder stays. (In a child: the signal ends it.)
static void test_mkdir_twice(const char *dir) {
    char d[600], moved[620];
    snprintf(d, sizeof d, "%s/made", dir);
    snprintf(moved, sizeof moved, "%s/made-moved", dir);
    pid_t pid = fork();
    if (pid == 0) {
        file_cleanup_on_stop_signals();
        char f1[600], f2[600];   // two free nodes: the two calls' nodes are taken in list order
        snprintf(f1, sizeof f1, "%s/fill1", dir);
        snprintf(f2, sizeof f2, "%s/fill2", dir);
        file_tmp_keep(f1);
        file_tmp_keep(f2);
        file_tmp_forget(f1);
        file_tmp_forget(f2);
        if (file_mkdir_tracked(d) != 0 || file_mkdir_tracked(d) != 1) _exit(3);
        if (rename(d, moved) || mkdir(d, 0777)) _exit(4);   // the user's own folder at the old name
        raise(SIGTERM);
        _exit(5);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork and wait");
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "the child ended by its stop signal (status %d)", status);
    struct stat st;
    CHECK(stat(d, &st) == 0, "a folder made at the run's folder's old name after it moved stays (%s)", d);
    rmdir(d);
    rmdir(moved);
}

// Temporary names of an earlier process (io/files.h). A file at the name file_tmp_name gave (a process of
// this pid before, killed: a pid reused) failed file_tmp_create with EEXIST, and so the output with a
// false "File exists": now the next serial, written back into the caller's buffer, also for a name cut
// to 255 bytes. And file_sweep_dead_tmps removes a dead process's "NAME.tmp.<host>.<pid>.<n>" of the
// names given, that of a long name cut to 255 bytes too, and nothing else.
static void make_file(const char *path) {
    FILE *f = fopen(path, "w");
    if (f) { fputs("theirs", f); fclose(f); }
}

static void test_tmp_leftovers(const char *dir) {
    char x[600], longleaf[251], lp[900], tmp[900 + FILE_TMP_HOST_EXTRA], taken[sizeof tmp], host[FILE_HOST_MAX];
    memset(longleaf, 'a', 250);
    longleaf[250] = 0;
    snprintf(x, sizeof x, "%s/x.npy", dir);
    snprintf(lp, sizeof lp, "%s/%s", dir, longleaf);
    const char *paths[2] = {x, lp};
    for (int k = 0; k < 4; k++) {   // x, then the long name (cut); each without and with the host
        const char *path = paths[k / 2];
        if (k % 2 ? file_tmp_name_host(path, tmp, sizeof tmp) : file_tmp_name(path, tmp, sizeof tmp)) continue;
        snprintf(taken, sizeof taken, "%s", tmp);
        make_file(taken);
        int fd = file_tmp_create(tmp);
        CHECK(fd >= 0 && strcmp(tmp, taken) && strlen(strrchr(tmp, '/')) <= 256,
              "a taken temporary name passed by for the next (%s -> %s)", taken, tmp);
        if (fd >= 0) { close(fd); file_tmp_remove(tmp); }
        else file_tmp_forget(tmp);   // never the other's file at the name
        unsigned char got[16];
        CHECK(read_file(taken, got, sizeof got) == 6 && !memcmp(got, "theirs", 6), "the file at the taken name kept");
        unlink(taken);
    }
    file_host_name(host, sizeof host);
    if (!host[0]) return;   // no host to name: nothing is swept (file_sweep_dead)
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    char suffix[160], gone[2][1200], stay[6][1200];
    snprintf(suffix, sizeof suffix, ".tmp.%s.%ld.7", host, (long)dead);
    snprintf(gone[0], sizeof gone[0], "%s/x.npy%s", dir, suffix);
    snprintf(gone[1], sizeof gone[1], "%s/%.*s%s", dir, (int)(255 - strlen(suffix)), longleaf, suffix);   // cut
    snprintf(stay[0], sizeof stay[0], "%s/x.npy%s.bak", dir, suffix);
    snprintf(stay[1], sizeof stay[1], "%s/y.npy%s", dir, suffix);          // another name's
    snprintf(stay[2], sizeof stay[2], "%s/x.npy.tmp.%s.0%ld.7", dir, host, (long)dead);
    snprintf(stay[3], sizeof stay[3], "%s/x.npy.tmp.other%s.%ld.7", dir, host, (long)dead);   // another host's
    snprintf(stay[4], sizeof stay[4], "%s/aaaa%s", dir, suffix);           // a prefix of the long name, not cut
    snprintf(stay[5], sizeof stay[5], "%s/x.npy.tmp.%ld.7", dir, (long)dead);   // no host
    for (int i = 0; i < 2; i++) make_file(gone[i]);
    for (int i = 0; i < 6; i++) make_file(stay[i]);
    const char *names[] = {longleaf, "x.npy"};
    long removed = file_sweep_dead_tmps(dir, names, 2);
    int left = 0;
    for (int i = 0; i < 2; i++) CHECK(access(gone[i], F_OK) != 0, "a dead process's temporary file removed: %s", gone[i]);
    for (int i = 0; i < 6; i++) left += access(stay[i], F_OK) == 0;
    CHECK(removed == 2 && left == 6, "only the names' temporary files removed (%ld removed, %d of 6 others left)", removed, left);
    for (int i = 0; i < 2; i++) unlink(gone[i]);
    for (int i = 0; i < 6; i++) unlink(stay[i]);
}

int main(void) {
    char err[256];
    char buf[1024];
    int64_t s23[2] = {2, 3};
    int n = npy_header(buf, sizeof buf, "<f4", 2, s23, err, sizeof err);
    check_header((unsigned char *)buf, n, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 128);
    // The whole 128 bytes, spelled out: 10-byte prefix, 59-byte dict, 58 spaces, newline.
    char want[129];
    memcpy(want, "\x93NUMPY\x01\x00\x76\x00", 10);
    memcpy(want + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 59);
    memset(want + 69, ' ', 58);
    want[127] = '\n';
    CHECK(n == 128 && memcmp(buf, want, 128) == 0, "exact bytes for <f4 (2, 3)");

    int64_t s5 = 5;
    n = npy_header(buf, sizeof buf, "|u1", 1, &s5, err, sizeof err);
    check_header((unsigned char *)buf, n, "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }", 128);
    n = npy_header(buf, sizeof buf, "<f4", 0, NULL, err, sizeof err);
    check_header((unsigned char *)buf, n, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 128);
    int64_t s4[4] = {6, 3, 65, 65};
    n = npy_header(buf, sizeof buf, "<f4", 4, s4, err, sizeof err);
    check_header((unsigned char *)buf, n,
                 "{'descr': '<f4', 'fortran_order': False, 'shape': (6, 3, 65, 65), }", 128);
    int64_t big[NPY_MAX_DIMS];
    for (int d = 0; d < NPY_MAX_DIMS; d++) big[d] = 1000000000;
    n = npy_header(buf, sizeof buf, "<f4", NPY_MAX_DIMS, big, err, sizeof err);
    CHECK(n > 128 && n % 64 == 0 && buf[n - 1] == '\n', "long header aligned (%d)", n);

    CHECK(npy_header(buf, sizeof buf, "<f2", 1, &s5, err, sizeof err) == -1 && strstr(err, "dtype"),
          "unsupported dtype refused: %s", err);
    int64_t neg = -1;
    CHECK(npy_header(buf, sizeof buf, "<f4", 1, &neg, err, sizeof err) == -1, "negative dim refused");
    CHECK(npy_header(buf, sizeof buf, "<f4", NPY_MAX_DIMS + 1, big, err, sizeof err) == -1, "ndim refused");
    CHECK(npy_header(buf, 32, "<f4", 2, s23, err, sizeof err) == -1, "small buffer refused");

    // Round trip through a file.
    const char *dir = check_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/a.npy", dir);
    float data[6] = {0.5f, -1.25f, 3.0f, 1e-20f, -0.0f, 65504.0f};
    CHECK(npy_write(path, data, "<f4", 2, s23, err, sizeof err) == 0, "write: %s", err);
    unsigned char file[256];
    long len = read_file(path, file, sizeof file);
    CHECK(len == 128 + 24, "file length %ld", len);
    CHECK(len >= 128 && memcmp(file, want, 128) == 0, "file header");
    CHECK(len == 152 && memcmp(file + 128, data, 24) == 0, "file data");

    uint8_t mask[5] = {1, 0, 1, 1, 0};
    snprintf(path, sizeof path, "%s/m.npy", dir);
    CHECK(npy_write(path, mask, "|u1", 1, &s5, err, sizeof err) == 0, "write u1: %s", err);
    len = read_file(path, file, sizeof file);
    CHECK(len == 133 && memcmp(file + 128, mask, 5) == 0, "u1 file");
    int64_t zero = 0;
    snprintf(path, sizeof path, "%s/empty.npy", dir);
    CHECK(npy_write(path, NULL, "<f4", 1, &zero, err, sizeof err) == 0, "empty array: %s", err);
    CHECK(read_file(path, file, sizeof file) == 128, "empty array is header only");

    snprintf(path, sizeof path, "%s/no/such/dir/x.npy", dir);
    CHECK(npy_write(path, data, "<f4", 2, s23, err, sizeof err) == -1 && strstr(err, "x.npy"),
          "unwritable path reported: %s", err);
    snprintf(path, sizeof path, "%s/bad.npy", dir);
    CHECK(npy_write(path, data, "<c8", 2, s23, err, sizeof err) == -1, "bad dtype");
    CHECK(npy_write(path, NULL, "<f4", 2, s23, err, sizeof err) == -1, "missing data");
    // Only the three good files remain: no temporaries, no partial files.
    DIR *d = opendir(dir);
    int files = 0, stray = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        files++;
        stray |= strstr(e->d_name, ".tmp") != NULL || strcmp(e->d_name, "bad.npy") == 0;
        char p[900];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        remove(p);
    }
    if (d) closedir(d);
    remove(dir);
    CHECK(files == 3 && !stray, "no temporary or partial files (%d files)", files);
    const char *pub = check_tmpdir();
    test_publish(pub);
    test_publish_many(pub);
    test_names_threads(pub);
    test_mkdir_twice(pub);
    test_tmp_leftovers(pub);
    remove(pub);
    return check_done();
}
