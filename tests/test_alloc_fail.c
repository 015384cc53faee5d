// Allocations that fail where a command collects its inputs. This program is linked with the
// program's malloc, calloc, realloc, strdup and stat wrapped (Makefile, ALLOC_WRAP): once the command
// stats the first input to list it, the k-th allocation of the program's code after it fails. Each run
// is a child process (cmd_attention as `vitmae attention` runs it); it must end with exit 0 having
// written a montage for every input, or exit 1 having said why (docs/interface.md, sections 1 and 5:
// an input that fails has its own line and the command exits 1 at the end).
//
// `attention` listed its inputs in an array grown with realloc (cmd/attention.c, collect_inputs): a
// failed realloc kept the larger capacity, so the next input was written through a NULL pointer
// (clang's analyzer: "Array access results in a null pointer dereference"; SIGSEGV); a failed strdup
// of a path was kept as NULL and read later (SIGSEGV); a failed malloc for an input's entry dropped the
// input, and the run ended with exit 0 without it.
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include "check.h"
#include "cmd/commands.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
int __real_stat(const char *path, struct stat *st);

// The allocations are counted from the stat of the first input (arm_path) that follows one of the
// second (seen_path): the command's list of inputs (the check that --out is not inside an input stats
// them before, in order).
static const char *arm_path, *seen_path;
static int armed, seen;
static long fail_at = -1, count;

static int fail_now(void) { return armed && ++count == fail_at; }

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return fail_now() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }
int __wrap_stat(const char *path, struct stat *st) {
    if (seen_path && !strcmp(path, seen_path)) seen = 1;
    if (arm_path && seen && !strcmp(path, arm_path)) armed = 1;
    return __real_stat(path, st);
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[4096];
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out)) ok = 0;
    return ok ? 0 : -1;
}

static int exists(const char *path) {
    struct stat st;
    return __real_stat(path, &st) == 0;
}

int main(void) {
    const char *root = getenv("VITMAE_ROOT"), *tmp = check_tmpdir();
    char ckpt[1024], a[600], b[600];
    snprintf(ckpt, sizeof ckpt, "%s/tests/fixtures/attn_model.safetensors", root && *root ? root : ".");
    snprintf(a, sizeof a, "%s/a.png", tmp);
    snprintf(b, sizeof b, "%s/b.png", tmp);
    char img[1024];
    snprintf(img, sizeof img, "%s/tests/fixtures/attn_input.png", root && *root ? root : ".");
    if (copy_file(img, a) || copy_file(img, b)) { CHECK(0, "cannot copy %s", img); return check_done(); }
    // Two inputs: 3 allocations for the first (its entry, the list, its path), 2 for the second; the
    // run goes on past them (the folder's and the maps' own allocations).
    for (long k = 1; k <= 10; k++) {
        char out[700], log[700], ma[800], mb[800];
        snprintf(out, sizeof out, "%s/out%ld", tmp, k);
        snprintf(log, sizeof log, "%s/log%ld", tmp, k);
        snprintf(ma, sizeof ma, "%s/a.attn.png", out);
        snprintf(mb, sizeof mb, "%s/b.attn.png", out);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
            char *argv[] = {"attention", "--ckpt", ckpt, "--out", out, "--threads", "1", a, b, NULL};
            arm_path = a;
            seen_path = b;
            fail_at = k;
            int rc = cmd_attention(9, argv);
            fflush(NULL);
            _exit(rc);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        int exited = WIFEXITED(status), rc = exited ? WEXITSTATUS(status) : -1;
        int both = exists(ma) && exists(mb);
        CHECK(exited && (rc == 0 || rc == 1), "allocation %ld after the first input's stat failing: %s %d", k,
              exited ? "exit" : "signal", exited ? rc : WTERMSIG(status));
        CHECK(rc != 0 || both, "allocation %ld failing: exit 0 without a montage for each input (a: %d, b: %d)", k,
              exists(ma), exists(mb));
        FILE *f = fopen(log, "r");
        char line[512];
        int said = 0;
        while (f && fgets(line, sizeof line, f)) said |= !strncmp(line, "vitmae: ", 8);
        if (f) fclose(f);
        CHECK(rc != 1 || said, "allocation %ld failing: exit 1 without a line that says why", k);
        if (!exited || (rc != 0 && rc != 1) || (rc == 0 && !both) || (rc == 1 && !said)) {
            f = fopen(log, "r");
            while (f && fgets(line, sizeof line, f)) fprintf(stderr, "  | %s", line);
            if (f) fclose(f);
        }
    }
    return check_done();
}
