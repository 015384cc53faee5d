// vitmae: pretrain a ViT masked autoencoder on the CPU. Dispatches to one command per file.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include "cmd/commands.h"
#include "cmd/cli.h"
#include "cmd/runfolder.h"
#include "core/encoder.h"
#include "core/version.h"
#include "dist/dist.h"
#include "io/json.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"

typedef struct { const char *name; int (*run)(int, char **); const char *what; int writes_files; } Command;

static const Command commands[] = {
    // Each command registers here as it lands (one line each, sorted as in --help).
    {"train", cmd_train, "pretrain a masked autoencoder on a folder of images", 1},
    {"reconstruct", cmd_reconstruct, "mask images, reconstruct them, write panels and masked MSE / PSNR", 1},
    {"attention", cmd_attention, "attention maps of the encoder drawn over images (cls, patch, rollout)", 1},
    {"data", cmd_data, "check a folder of images: counts, classes, sizes, skipped files", 0},
    {"info", cmd_info, "the config, parameter count and train state of a checkpoint", 0},
    {"eval", cmd_eval, "masked loss and PSNR of a checkpoint over a folder, fixed masks", 0},
    {"embed", cmd_embed, "encoder features of images (cls or mean pooling) as .npy, one row per image", 1},
    {"probe", cmd_probe, "kNN and linear-probe accuracy of the encoder's features (or raw pixels)", 1},
    {"finetune", cmd_finetune, "fine-tune a classifier from a pretrained encoder (or from scratch) on class folders", 1},
    {"classify", cmd_classify, "predicted class and top-K probabilities of images with a fine-tuned classifier", 0},
    {"bench", cmd_bench, "training-step speed on synthetic data: img/s, GFLOP/s, % of FMA peak, phases", 0},
    {NULL, NULL, NULL, 0},
};

#define VERSION_WHAT "the version and the vector paths this CPU runs"

static void usage(FILE *out) {
    fprintf(out, "usage: vitmae COMMAND [flags]   (vitmae COMMAND --help for its flags)\n\ncommands:\n");
    for (const Command *c = commands; c->name; c++)
        fprintf(out, "  %-12s %s\n", c->name, c->what);
    fprintf(out, "\nvitmae help COMMAND (as vitmae COMMAND --help): that command's flags\n");
    fprintf(out, "vitmae --version (or vitmae version): %s\n", VERSION_WHAT);
}

// The end of the line that refuses an unknown command or top-level request, in buf: "did you mean
// train? see vitmae --help" when the word is close to a command or request, as a command's unknown flag
// names its closest flags (cli_parse; docs/interface.md, section 1), else "see vitmae --help".
static const char *unknown_word_hint(const char *word, char *buf, size_t n) {
    const char *words[sizeof commands / sizeof *commands + 4];   // the commands, 4 requests, NULL
    int k = 0;
    for (const Command *c = commands; c->name; c++) words[k++] = c->name;
    words[k++] = "help";
    words[k++] = "version";
    words[k++] = "--help";
    words[k++] = "--version";
    words[k] = NULL;
    char near[256];
    if (cli_closest_words(words, word, near, sizeof near)) snprintf(buf, n, "did you mean %s? see vitmae --help", near);
    else snprintf(buf, n, "see vitmae --help");
    return buf;
}

// The vectors the compiler was allowed for the code outside the matrix products (ARCH in the Makefile:
// -march=native by default): a binary built for AVX-512 stops with SIGILL on a CPU without it.
static const char *compiled_for(void) {
#if defined(__AVX512F__)
    return "AVX-512";
#elif defined(__AVX2__)
    return "AVX2";
#elif defined(__x86_64__)
    return "x86-64 (SSE2)";
#else
    return "this architecture's base";
#endif
}

// `vitmae --version`, `vitmae version`: the version (core/version.h), then the matrix-product paths every
// build holds (the vector ones run only on a CPU that has them) and the one this CPU runs, as bench names
// it (VITMAE_GEMM may pick another).
static int print_version(void) {
    printf("vitmae %s\n", vitmae_version());
    printf("matrix products: avx512 avx2 portable ref built in, this CPU runs %s; other code built for %s\n",
           gemm_kernel_name(), compiled_for());
    return 0;
}

// libgomp's threads spin for a long time at every barrier before they sleep (GOMP_SPINCOUNT
// 300000 by default). On a machine whose cores are shared with other processes that spin takes the
// core from the very thread everyone waits for: 2-thread training ran 5x slower than with
// OMP_WAIT_POLICY=passive next to one busy process. A short spin (1000) keeps nearly all of the
// quiet-machine speed and loses nothing when the cores are shared. libgomp reads the variable only
// when it loads, so when the user set neither variable we set it and run ourselves again, once.
// Not when a binding is asked for (OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY): libgomp applies it
// as it loads, pinning this thread to the first place, and the process run again would inherit that
// one CPU as all it may use: every thread on one core, half the speed at 2 threads (docs/design.md,
// "OpenMP threads on shared cores").
#define REEXEC_STDERR "VITMAE_REEXEC_STDERR"
// The stop signals (cmd/runfolder.h, run_stop_signal) that short_omp_spin blocked for the run again:
// "<pid>:<bits>", bit i for run_stop_signal(i). One that comes meanwhile stays pending across exec
// (instead of killing the process with its default action) and reaches the new process's handler once
// stop_signals_back unblocks it (docs/distributed.md, "Faults": caught from the start of the command).
#define REEXEC_SIGNALS "VITMAE_REEXEC_SIGNALS"

static void short_omp_spin(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (getenv("OMP_PROC_BIND") || getenv("OMP_PLACES") || getenv("GOMP_CPU_AFFINITY")) return;
    // Nor when the dynamic loader was run by hand (`/lib64/ld-linux-x86-64.so.2 ./vitmae ...`, to pick
    // libraries with --library-path or a glibc of its own): no interpreter was loaded for the file the
    // kernel ran (AT_BASE 0), which is the loader, and /proc/self/exe names it. Run again, it took our
    // first argument for the program to load: `vitmae --version` printed ld.so's version, and any command
    // ended with exit 127 and ld.so's "cannot open shared object file" on the stderr set aside below.
    if (getauxval(AT_BASE) == 0) return;
    // The path of our own binary (as a tool running us, e.g. valgrind, reports it), not
    // "/proc/self/exe" itself, which would name the tool.
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || n >= (ssize_t)sizeof self - 1) return;
    self[n] = 0;
    if (setenv("GOMP_SPINCOUNT", "1000", 1)) return;
    // libgomp's lines about variables it cannot read (`libgomp: Invalid value for environment variable
    // OMP_NUM_THREADS`) were said once, as this process loaded; the run again would say each twice. So it
    // starts with stderr on /dev/null, and stderr_back, first thing in main, takes the real one back from
    // the descriptor named in REEXEC_STDERR with this process id (exec keeps it; a value inherited from
    // another process names another id and is dropped).
    int saved = fcntl(2, F_DUPFD, 10), null = saved >= 0 ? open("/dev/null", O_WRONLY) : -1;
    char mark[64];
    snprintf(mark, sizeof mark, "%ld:%d", (long)getpid(), saved);
    int quiet = null >= 0 && !setenv(REEXEC_STDERR, mark, 1) && dup2(null, 2) == 2;
    if (null >= 0) close(null);
    sigset_t stops, before;
    sigemptyset(&stops);
    for (int i = 0; run_stop_signal(i); i++) sigaddset(&stops, run_stop_signal(i));
    int blocked = !sigprocmask(SIG_BLOCK, &stops, &before);
    unsigned bits = 0;
    for (int i = 0; blocked && run_stop_signal(i); i++)
        if (!sigismember(&before, run_stop_signal(i))) bits |= 1u << i;   // the caller's blocked ones stay so
    char sigmark[64];
    snprintf(sigmark, sizeof sigmark, "%ld:%u", (long)getpid(), bits);
    if (blocked) setenv(REEXEC_SIGNALS, sigmark, 1);
    run_test_hook_stop("exec");
    execv(self, argv);   // returns only on failure: go on with the defaults, stderr as it was
    if (blocked) sigprocmask(SIG_SETMASK, &before, NULL);
    unsetenv(REEXEC_SIGNALS);
    if (quiet) dup2(saved, 2);
    if (saved >= 0) close(saved);
    unsetenv(REEXEC_STDERR);
}

// The stderr that short_omp_spin set aside for the run again (see there).
static void stderr_back(void) {
    const char *mark = getenv(REEXEC_STDERR);
    if (!mark) return;
    long pid = 0;
    int fd = -1;
    if (sscanf(mark, "%ld:%d", &pid, &fd) == 2 && pid == (long)getpid() && fd > 2 && fcntl(fd, F_GETFD) >= 0) {
        dup2(fd, 2);
        close(fd);
    }
    unsetenv(REEXEC_STDERR);
}

// The stop signals short_omp_spin blocked for the run again (see REEXEC_SIGNALS), unblocked once this
// process has its handlers: one that came meanwhile is delivered now.
static void stop_signals_back(void) {
    const char *mark = getenv(REEXEC_SIGNALS);
    if (!mark) return;
    long pid = 0;
    unsigned bits = 0;
    if (sscanf(mark, "%ld:%u", &pid, &bits) == 2 && pid == (long)getpid()) {
        sigset_t set;
        sigemptyset(&set);
        for (int i = 0; run_stop_signal(i); i++)
            if (bits & (1u << i)) sigaddset(&set, run_stop_signal(i));
        sigprocmask(SIG_UNBLOCK, &set, NULL);
    }
    unsetenv(REEXEC_SIGNALS);
}

// A standard stream closed by the caller (`2>&-`, `>&-`) would give its number to the next file we
// open, and every message and report line would then go into that file: a run's metrics.csv or a
// checkpoint. Such a stream reads or writes /dev/null instead (docs/interface.md, section 1, "Standard output").
static void std_streams_open(void) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
        int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (n < 0) _exit(1);   // nowhere to say it: stderr is one of the closed
        if (n != fd) { dup2(n, fd); close(n); }
    }
}

static int main_run(int argc, char **argv);

int main(int argc, char **argv) {
    stderr_back();
    std_streams_open();
    // Past a file-size limit (ulimit -f) a write then fails with EFBIG, which every writer reports in
    // one line and cleans up after, instead of the signal killing the process mid-file
    // (docs/interface.md, section 4).
    signal(SIGXFSZ, SIG_IGN);
    // train and finetune catch their stop signals from the start (docs/distributed.md, "Faults"): one
    // that lands before MPI has started, or as we run ourselves again, ends the run after its first step
    // instead of killing the process.
    if (argc > 1 && (!strcmp(argv[1], "train") || !strcmp(argv[1], "finetune"))) run_catch_stop_signals();
    stop_signals_back();
    // A small stack limit (ulimit -s) is raised before anything deep runs or a thread is made (and
    // before short_omp_spin runs us again, which then starts with it): below it, a SIGSEGV.
    char stack_err[256];
    if (cpu_ensure_stack(stack_err, sizeof stack_err)) {
        // Said by write(2), not cli_error, whose line buffer would not fit, nor fprintf, whose
        // unbuffered stderr takes an 8 KB buffer of its own on the stack (a SIGSEGV under ulimit -s 24).
        size_t n = strlen(stack_err);
        ssize_t w = write(2, "vitmae: ", 8);
        if (w == 8) w = write(2, stack_err, n);
        if (w == (ssize_t)n) w = write(2, "\n", 1);
        (void)w;   // nowhere else to say it
        return 1;
    }
    return main_run(argc, argv);
}

// The command, once the stack is large enough: a frame of its own (some 10 KB of buffers), so that
// main's is small enough to say a small stack's line (it was main's frame that overflowed at 12 KB).
static __attribute__((noinline)) int main_run(int argc, char **argv) {
    short_omp_spin(argv);
    run_test_hook_stop("mpi");
    // Under mpirun every rank runs the command (docs/distributed.md); without it nothing changes. The
    // usage and the unknown command are then said once, by rank 0 (the others' stdout is /dev/null).
    char err[CLI_ERR_MAX];
    if (dist_init(&argc, &argv, err, sizeof err)) { cli_error("mpi", "%s", err); return 1; }
    // Every rank must run the same build (docs/distributed.md, "Semantics"): another version's ranks
    // exchange other messages (an MPI error, a wait for ever) or compute other bits. Compared first, by
    // the exchange that compares the command lines below, so that a build from before this check,
    // whose first exchange that is, stops at the difference too.
    char build[128];
    snprintf(build, sizeof build, "vitmae %s", vitmae_version());
    const char *build_list[1] = {build};
    int same_build = dist_check_same_list(build_list, sizeof *build_list, 1, "build", 1, err, sizeof err);
    if (same_build) {
        // A rank out of memory for the comparison says so alone (dist.h, DIST_NO_MEMORY_HERE), and so
        // does each rank that differs: one line per problem, none from rank 0 pointing at it.
        if (same_build == -2 || same_build == DIST_NO_MEMORY_HERE)
            cli_error("mpi", "%s%s", err, same_build == -2 ? " (every process must run the same build of vitmae: the same "
                                                             "vitmae --version)" : "");
        dist_finalize();
        return 1;
    }
    // Every rank must run the same command line (docs/distributed.md): an MPMD launch with other
    // flags on one rank would otherwise train apart, or wait forever at a step the others never take.
    // Both are compared before --help, --version and the usage, which end without an exchange: a rank
    // that ended so left the others waiting in the comparison for ever.
    int same = dist_check_same_list((const char *const *)(argv + 1), sizeof *argv, argc - 1, "command line", 1,
                                    err, sizeof err);
    if (same) {
        if (same == -2 || same == DIST_NO_MEMORY_HERE) cli_error("mpi", "%s", err);   // the differing rank alone
        dist_finalize();
        return same == -1 || same == -2 ? 2 : 1;   // out of memory is no usage error
    }
    // main's usage errors (below) are every rank's alike: said once, by rank 0. A word of the command
    // line that they echo goes through utf8_clip (cli.h, cli_error).
    cli_quiet_ranks(1);
    char word[UTF8_CLIP_SIZE], hint[320];
    // `vitmae help NAME` is `vitmae NAME --help`, as git's and go's help take a command. NAME may be a
    // top-level request as it is spelled on its own: `help --version` is `help version`, and `help
    // --help`, `help -h` are `help help`, the list (docs/interface.md, section 1).
    char *help_argv[4] = {argv[0], NULL, "--help", NULL};
    // `vitmae --help train` (and -h) as `vitmae help train`, as `git --help status`: it printed the list.
    int asks_help = argc >= 2 && (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
    if (argc == 3 && asks_help) {
        char *name = argv[2];
        if (!strcmp(name, "--version")) name = "version";
        else if (!strcmp(name, "--help") || !strcmp(name, "-h")) name = "help";
        if (name[0] == '-') {   // `help --bogus` printed the list of commands and exited 0
            cli_error("help", "unknown flag '%s' (%s)", utf8_clip(word, name), unknown_word_hint(name, hint, sizeof hint));
            dist_finalize();
            return 2;
        }
        help_argv[1] = name;
        argv = help_argv;
    } else if (argc > 3 && asks_help) {
        cli_error(argv[1], "takes one command (vitmae help COMMAND)");
        dist_finalize();
        return 2;
    }
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (argc < 2 && dist_rank() == 0) usage(stderr);
        else if (argc >= 2) usage(stdout);
        int rc = cli_stdout_done("help", argc < 2 ? 2 : 0);   // "vitmae: help: standard output: ...", as each command's
        dist_finalize();
        return rc;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        int rc;
        if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {   // and `vitmae help version`
            if (dist_rank() == 0) printf("usage: vitmae version (or vitmae --version): " VERSION_WHAT "; it takes no arguments\n");
            rc = cli_stdout_done("version", 0);
        } else if (argc > 2) {   // like --help: a top-level request, not a command's flag (docs/interface.md, section 1)
            cli_error(argv[1], "takes no arguments");
            rc = 2;
        } else rc = cli_stdout_done("version", print_version());
        dist_finalize();
        return rc;
    }
    // VITMAE_FORWARD_IMAGES=M, a count from 1 up in digits: each block's forward in passes of M images
    // (speed only; docs/interface.md); anything else (" 2", "+2", as VITMAE_GROUPS_AT_ONCE) leaves the
    // rule (core/encoder.h).
    long images = cpu_env_count(getenv("VITMAE_FORWARD_IMAGES"), 1, 1L << 30);
    if (images > 0) stack_forward_force_images((int)images);
    for (const Command *c = commands; c->name; c++)
        if (!strcmp(argv[1], c->name)) {
            // Only train, finetune and bench share their work between processes; the others would each
            // do it all, and are refused under mpirun once their flags are read, so that their --help is
            // printed (cli_one_process). Their usage errors are said once; the three say their own.
            int one_process = strcmp(c->name, "train") && strcmp(c->name, "finetune") && strcmp(c->name, "bench");
            cli_one_process(one_process);
            cli_quiet_ranks(one_process);
            // A closed pipe on stdout or stderr (`| head`) must not kill a command with its work unsaved:
            // those that write files drop the stream and go on (cmd/streams.h, cli_stream_check); the others,
            // which write nothing, end at once by SIGPIPE, as `grep ... | head` does.
            if (c->writes_files) cli_ignore_sigpipe(c->name);
            int rc = cli_stdout_done(c->name, c->run(argc - 1, argv + 1));
            dist_finalize();
            return rc;
        }
    if (!argv[1][0]) cli_error(NULL, "an empty argument where the command goes (see vitmae --help)");   // said "vitmae: : unknown command"
    else cli_error(utf8_clip(word, argv[1]), "unknown command (%s)", unknown_word_hint(argv[1], hint, sizeof hint));
    dist_finalize();
    return 2;
}
