// dist: the fixed pairwise tree, the group checks, and the headline property in one process: a step's
// gradient built as N ranks would build it (each rank's groups summed locally, then the rank sums
// combined in the top of the tree) is bitwise the same for N = 1, 2, 4 and any thread count, on the
// real model. The MPI transport itself is exercised by tests/cli_mpi.sh.
#include <omp.h>
#include "check.h"
#include "core/model.h"
#include "core/rng.h"
#include "dist/dist.h"
#include "dist/workers.h"
#include "kernels/sumtree.h"
#include "kernels/gemm.h"
#include "cmd/groups.h"

// Reference: node [l, r) = node [l, m) + node [m, r), recursively, in plain C.
static float tree_ref(const float *v, size_t stride, int l, int r, size_t i) {
    if (r - l == 1) return v[(size_t)l * stride + i];
    int m = l + (r - l) / 2;
    float a = tree_ref(v, stride, l, m, i), b = tree_ref(v, stride, m, r, i);
    return a + b;
}

typedef struct {
    Mae *m;
    int per, S, C, L, K;
    float *images, *noise;
    int *ids_keep;
    int fail_group;   // a group that reports a failure (-1: none)
    Mae *all;         // for groups at once: room for every group's images
    int calls;        // GroupsFn calls
} Ctx;

// Images [first, first + count) of the batch into c->images (and their masks): each drawn from
// (7, step 0, global index), masks from the same streams.
static void draw_images(Ctx *c, int first, int count) {
    size_t per_image = (size_t)c->S * c->S * c->C;
    for (int k = 0; k < count; k++) {
        Rng r;
        rng_derive(&r, 7, 0, (uint64_t)(first + k));
        for (size_t i = 0; i < per_image; i++) c->images[(size_t)k * per_image + i] = rng_normal(&r, 0.0f, 1.0f);
        for (int i = 0; i < c->L; i++) c->noise[(size_t)k * c->L + i] = rng_uniform(&r);
    }
    mae_masking_from_noise(c->noise, count, c->L, c->K, c->ids_keep);
}

// Groups [first, first + count) at once (a GroupsFn): one forward of their images, then each group's
// loss and gradient.
static int groups_fn(void *ctx, int first, int count, float *const *grads, const SumTree *tree, float *losses,
                     char *err, size_t errlen) {
    Ctx *c = ctx;
    c->calls++;
    if (c->fail_group >= first && c->fail_group < first + count) {
        snprintf(err, errlen, "group %d: cannot load", c->fail_group);
        return -1;
    }
    draw_images(c, first * c->per, count * c->per);
    mae_train_forward(c->all, c->images, c->ids_keep, count * c->per, c->K);
    mae_group_losses(c->all, count, losses);
    mae_backward_set_groups(c->all, grads, count, tree);
    return 0;
}

// Group g: B / G images drawn from (7, step 0, global index), masks from the same streams.
static int group_fn(void *ctx, int g, float *grads, float *loss, char *err, size_t errlen) {
    Ctx *c = ctx;
    if (g == c->fail_group) { snprintf(err, errlen, "group %d: cannot load", g); return -1; }
    draw_images(c, g * c->per, c->per);
    float *own = mae_use_grads(c->m, grads);
    mae_zero_grads(c->m);
    *loss = mae_train_forward(c->m, c->images, c->ids_keep, c->per, c->K);
    mae_backward(c->m);
    mae_use_grads(c->m, own);
    return 0;
}

// The step's gradient as N ranks compute it: rank r's local tree, then the N rank sums in the top of
// the tree, times 1 / G. out: [n]; returns the batch loss.
static double step_as(Ctx *c, int G, int N, size_t n, float *out) {
    float *ranks = malloc((size_t)N * n * sizeof(float));
    double *losses = malloc((size_t)N * sizeof(double));
    char err[256];
    for (int r = 0; r < N; r++) {
        GradReduce gr;
        if (grad_reduce_init_as(&gr, G, n, r, N, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(2); }
        CHECK(gr.first == r * G / N && gr.count == G / N, "rank %d of %d owns groups [%d, +%d)", r, N, gr.first, gr.count);
        CHECK(grad_reduce_floats(G, N, n) == ((size_t)gr.depth + (N > 1)) * n,
              "grad_reduce_floats(%d, %d) counts the %d tree nodes init allocates and the slices", G, N, gr.depth);
        CHECK(grad_reduce_local(&gr, ranks + (size_t)r * n, group_fn, c, &losses[r], err, sizeof err) == 0, "%s", err);
        grad_reduce_free(&gr);
    }
    tree_sum_floats(ranks, n, N, n);
    for (size_t i = 0; i < n; i++) out[i] = ranks[i] * (1.0f / (float)G);
    double loss = tree_sum_doubles(losses, N) / G;
    free(ranks); free(losses);
    return loss;
}

int main(void) {
    // 1. tree_sum_floats is the recursive pairwise tree, bit for bit; a left-to-right sum is not.
    {
        enum { COUNT = 16, N = 333 };
        float *v = malloc(COUNT * N * sizeof(float)), *w = malloc(COUNT * N * sizeof(float));
        Rng r;
        rng_seed(&r, 1);
        for (int i = 0; i < COUNT * N; i++) v[i] = rng_normal(&r, 0.0f, 1.0f) * (float)(1 << (i % 9));
        for (int count = 1; count <= COUNT; count *= 2) {
            memcpy(w, v, COUNT * N * sizeof(float));
            tree_sum_floats(w, N, count, N);
            int same = 1, seq_differs = 0;
            for (size_t i = 0; i < N; i++) {
                float ref = tree_ref(v, N, 0, count, i), seq = 0.0f;
                for (int j = 0; j < count; j++) seq += v[(size_t)j * N + i];
                same &= memcmp(&ref, &w[i], sizeof ref) == 0;
                seq_differs |= seq != ref;
            }
            CHECK(same, "tree_sum_floats over %d items equals the recursive tree", count);
            if (count >= 4) CHECK(seq_differs, "a sequential sum of %d items differs somewhere (the order matters)", count);
        }
        double d[8] = {1e16, 1.0, -1e16, 1.0, 3.0, 1e-3, 5.0, 7.0};
        CHECK(tree_sum_doubles(d, 8) == ((1e16 + 1.0) + (-1e16 + 1.0)) + ((3.0 + 1e-3) + (5.0 + 7.0)), "tree_sum_doubles");
        free(v); free(w);
    }

    // 2. Groups: defaults and refusals.
    {
        char err[512];
        CHECK(dist_default_groups(64) == 4 && dist_default_groups(12) == 4 && dist_default_groups(6) == 2 &&
              dist_default_groups(7) == 1, "default groups");
        CHECK(grad_reduce_floats(8, 2, 100) == 300 && grad_reduce_floats(4, 1, 100) == 200 &&
              grad_reduce_floats(4, 4, 100) == 100 && grad_reduce_floats(1, 1, 100) == 0,
              "grad_reduce_floats: log2(G / N) nodes, plus one gradient of slices when N > 1");
        CHECK(grad_workers_floats(8, 100, 2, 1) == 500 && grad_workers_floats(4, 100, 1, 1) == 200 &&
              grad_workers_floats(4, 100, 4, 1) == 300,
              "grad_workers_floats: log2(G / W) nodes a worker, plus a gradient for each worker but the first");
        CHECK(dist_check_groups(64, 8, 1, 1, err, sizeof err) == 0, "8 groups, 1 process");
        CHECK(dist_check_groups(64, 8, 2, 4, err, sizeof err) == 0, "8 groups, 2 processes x 4");
        CHECK(dist_check_groups(64, 8, 4, 2, err, sizeof err) == 0, "8 groups, 4 processes x 2");
        CHECK(dist_check_groups(64, 8, 3, 1, err, sizeof err) != 0 && strstr(err, "3 processes"), "3 processes refused: %s", err);
        // A new run's refusal of a process count names the counts that run it, as a resume's does
        // (cmd/runfolder.c), those whose share --accum divides.
        CHECK(dist_check_groups(64, 4, 3, 1, err, sizeof err) != 0 &&
              !strcmp(err, "3 processes: each must own a whole subtree of the fixed pairwise tree over the 4 gradient "
                      "groups (bitwise equal results for any process count), so the count must be a power of two "
                      "dividing 4: run it without mpirun or with mpirun -np 2 or 4"), "-np 3 of 4 groups: %s", err);
        CHECK(dist_check_groups(64, 16, 6, 2, err, sizeof err) != 0 && strstr(err, "dividing 16: run it without mpirun or with mpirun -np 2, 4 or 8"),
              "-np 6 of 16 groups, --accum 2: %s", err);
        CHECK(dist_check_groups(64, 2, 3, 2, err, sizeof err) != 0 && strstr(err, "dividing 2: run it without mpirun (or with mpirun -np 1)"),
              "-np 3 of 2 groups, --accum 2: %s", err);
        CHECK(dist_check_groups(9, 1, 3, 1, err, sizeof err) != 0 && strstr(err, "tree over the 1 gradient group (bitwise"),
              "-np 3 of 1 group: one group, not '1 gradient groups': %s", err);
        CHECK(dist_check_groups(48, 16, 16, 1, err, sizeof err) == 0, "16 groups of 3, 16 processes");
        CHECK(dist_check_groups(64, 4, 8, 1, err, sizeof err) != 0 && strstr(err, "--groups"), "8 processes, 4 groups: %s", err);
        CHECK(dist_check_groups(64, 8, 4, 4, err, sizeof err) != 0 && strstr(err, "4 micro-batches cannot share the 2 gradient groups each of the 4 processes"), "4 x 4 refused: %s", err);
        CHECK(dist_check_groups(64, 4, 1, 8, err, sizeof err) == DIST_BAD_ACCUM && !strstr(err, "processes")
              && strstr(err, "8 micro-batches cannot share the 4 gradient groups of a step"), "1 process, --accum 8: %s", err);
        CHECK(dist_check_groups(64, 6, 1, 1, err, sizeof err) != 0, "6 groups refused (not a power of two)");
        CHECK(dist_check_groups(12, 8, 1, 1, err, sizeof err) != 0, "8 groups of a batch of 12 refused");
        // The way out a refusal names must be one the batch allows: more groups only up to the batch's
        // largest power-of-two divisor (a batch of 6 has 2 groups at most: -np 4 needs another --batch).
        CHECK(dist_check_groups(64, 4, 8, 1, err, sizeof err) == DIST_BAD_PROCS && strstr(err, "run it without mpirun or with mpirun -np 2 or 4, or --groups 8"),
              "8 processes, 4 groups of a batch of 64: --groups 8 named: %s", err);
        CHECK(dist_check_groups(6, 2, 4, 1, err, sizeof err) == DIST_BAD_PROCS && !strstr(err, "--groups") &&
              strstr(err, "run it without mpirun or with mpirun -np 2, or a --batch that 4 divides (a batch of 6 has at most 2 gradient groups)"),
              "4 processes, a batch of 6: another --batch named, not more groups: %s", err);
        // ... and with --accum 2, the batch named holds 4 x 2 groups (a --batch that 4 divides was then
        // refused for its --accum).
        CHECK(dist_check_groups(6, 2, 4, 2, err, sizeof err) == DIST_BAD_PROCS &&
              strstr(err, "run it without mpirun, or a --batch that 8 divides with --groups 8 (a batch of 6 has at most 2 gradient groups)"),
              "4 processes x --accum 2, a batch of 6: %s", err);
        CHECK(dist_check_groups(3, 1, 2, 1, err, sizeof err) == DIST_BAD_PROCS && strstr(err, "the 1 gradient group of a step") &&
              strstr(err, "run it without mpirun, or a --batch that 2 divides (a batch of 3 has at most 1 gradient group)"),
              "2 processes, a batch of 3: %s", err);
        CHECK(dist_check_groups(2, 2, 2, 2, err, sizeof err) == DIST_BAD_ACCUM && !strstr(err, "--groups") &&
              strstr(err, "use --accum 1, or a --batch that 4 divides (a batch of 2 has at most 2 gradient groups)"),
              "2 processes x --accum 2, a batch of 2: %s", err);
        // ... but where --groups 2 was given, the new batch keeps it unless told: "a --batch that 4
        // divides" was refused again, then "--groups 4" named. The --groups it needs comes with it.
        CHECK(dist_check_groups_given(2, 2, 1, 2, 2, err, sizeof err) == DIST_BAD_ACCUM &&
              strstr(err, "use --accum 1, or a --batch that 4 divides with --groups 4 (a batch of 2 has at most 2 gradient groups)"),
              "2 processes x --accum 2, a batch of 2, --groups 2 given: %s", err);
        CHECK(dist_check_groups_given(6, 2, 1, 4, 1, err, sizeof err) == DIST_BAD_PROCS &&
              strstr(err, "or a --batch that 4 divides with --groups 4 (a batch of 6 has at most 2 gradient groups)"),
              "4 processes, a batch of 6, --groups 2 given: %s", err);
        CHECK(dist_check_groups(64, 4, 2, 4, err, sizeof err) == DIST_BAD_ACCUM && strstr(err, "use an --accum that divides 2, or --groups 8"),
              "2 processes x --accum 4, 4 groups of 64: %s", err);
        // An --accum that is not a power of two divides no count of groups: "use an --accum that divides
        // 4, or --groups 3" (or "a --batch that 3 divides" of a batch of 6) named ways that are refused.
        CHECK(dist_check_groups(12, 4, 1, 3, err, sizeof err) == DIST_BAD_ACCUM && !strstr(err, "--groups") &&
              !strstr(err, "--batch") && strstr(err, "use an --accum that divides 4 (a power of two, as every count of gradient groups is)"),
              "--accum 3, 4 groups of 12: %s", err);
        CHECK(dist_check_groups(6, 2, 1, 3, err, sizeof err) == DIST_BAD_ACCUM && !strstr(err, "--batch"), "--accum 3, a batch of 6: %s", err);
        CHECK(dist_check_groups(64, 8, 2, 6, err, sizeof err) == DIST_BAD_ACCUM && !strstr(err, "--groups") &&
              strstr(err, "the 4 gradient groups each of the 2 processes"), "2 processes x --accum 6: %s", err);
        CHECK(dist_check_groups(12, 4, 8, 1, err, sizeof err) == DIST_BAD_PROCS &&
              strstr(err, "or a --batch that 8 divides with --groups 8 (a batch of 12 has at most 4 gradient groups)"),
              "8 processes, a batch of 12: a batch of 16 alone would still be 4 groups: %s", err);
        CHECK(dist_check_groups(8192, 4096, 8192, 1, err, sizeof err) == DIST_BAD_PROCS && !strstr(err, "--groups 8192"),
              "8192 processes: no --groups past its limit named: %s", err);
    }

    // 2b. How many groups at once (cmd/groups.h): doubled while the encoder's rows per forward stay below
    //     the model's width, or at 2 threads or more while they stay within GROUPS_AT_ONCE_ROWS;
    //     VITMAE_GROUPS_AT_ONCE sets it instead.
    {
        MaeConfig cfg;
        mae_config_preset(&cfg, "tiny");
        cfg.img_size = 8; cfg.patch_size = 4; cfg.embed_dim = 64; cfg.depth = 1; cfg.num_heads = 2;
        cfg.dec_embed_dim = 16; cfg.dec_depth = 1; cfg.dec_num_heads = 2;
        unsetenv("VITMAE_GROUPS_AT_ONCE");
        CHECK(groups_at_once(&cfg, 2, 5, 8, 0, 1) == 8, "2 images of 5 tokens a group, width 64: all 8 groups at once (%d)",
              groups_at_once(&cfg, 2, 5, 8, 0, 1));
        CHECK(groups_at_once(&cfg, 4, 5, 8, 0, 1) == 4, "4 images of 5 tokens: 4 at once (80 rows >= 64 stops)");
        CHECK(groups_at_once(&cfg, 13, 5, 8, 0, 1) == 1, "13 images of 5 tokens: one at a time");
        CHECK(groups_at_once(&cfg, 2, 5, 1, 0, 1) == 1, "one group: 1");
        // At 2 threads or more: also while 2 w groups' rows stay within GROUPS_AT_ONCE_ROWS (1200).
        CHECK(groups_at_once(&cfg, 13, 5, 8, 0, 2) == 8, "13 images of 5 tokens, 2 threads: 8 at once (520 rows)");
        CHECK(groups_at_once(&cfg, 13, 5, 8, 0, 3) == 8, "13 images of 5 tokens, 3 threads: 8 at once");
        CHECK(groups_at_once(&cfg, 100, 6, 8, 0, 2) == 2, "600 rows a group, 2 threads: 2 at once (1200 rows; %d)",
              groups_at_once(&cfg, 100, 6, 8, 0, 2));
        CHECK(groups_at_once(&cfg, 100, 7, 8, 0, 2) == 1, "700 rows a group, 2 threads: one at a time (1400 > 1200)");
        CHECK(groups_at_once(&cfg, 100, 6, 8, 0, 1) == 1, "600 rows a group, 1 thread: one at a time");
        MaeConfig tiny;
        mae_config_preset(&tiny, "tiny");   // the bench's tiny32: 4 groups of 16 images, 17 tokens
        CHECK(groups_at_once(&tiny, 16, 17, 4, 0, 2) == 4 && groups_at_once(&tiny, 16, 17, 4, 0, 1) == 1,
              "tiny32: 4 at once at 2 threads, one at a time at 1");
        setenv("VITMAE_GROUPS_AT_ONCE", "3", 1);
        CHECK(groups_at_once(&cfg, 13, 5, 8, 0, 1) == 2, "VITMAE_GROUPS_AT_ONCE=3: 2 at once");
        CHECK(groups_at_once(&cfg, 100, 7, 8, 0, 2) == 2, "VITMAE_GROUPS_AT_ONCE=3 at 2 threads: 2 at once");
        setenv("VITMAE_GROUPS_AT_ONCE", "64", 1);
        CHECK(groups_at_once(&cfg, 13, 5, 8, 0, 1) == 8, "VITMAE_GROUPS_AT_ONCE=64, 8 groups: 8");
        CHECK(groups_at_once(&cfg, 13, 5, 8, (size_t)1 << 62, 1) == 1, "more than half of the memory: one at a time");
        unsetenv("VITMAE_GROUPS_AT_ONCE");
        CHECK(groups_at_once(&cfg, 13, 5, 8, (size_t)1 << 62, 2) == 1, "2 threads, more than half of the memory: one at a time");
        // --parallel (cmd/groups.h): which thread counts take the groups as workers, and their memory.
        char err[512];
        int W = -1;
        CHECK(parallel_check("auto", 4, 1, 2, &W, err, sizeof err) == 0 && W == 2, "auto, 4 groups, 2 threads: 2 workers");
        CHECK(parallel_check("auto", 4, 1, 3, &W, err, sizeof err) == 0 && W == 0, "auto, 3 threads: the team");
        CHECK(parallel_check("auto", 4, 1, 1, &W, err, sizeof err) == 0 && W == 0, "auto, 1 thread: the team");
        CHECK(parallel_check("auto", 4, 4, 2, &W, err, sizeof err) == 0 && W == 0, "auto, --accum 4 of 2 groups a thread: the team");
        CHECK(parallel_check("kernels", 4, 1, 2, &W, err, sizeof err) == 0 && W == 0, "kernels: the team");
        CHECK(parallel_check("groups", 8, 2, 4, &W, err, sizeof err) == 0 && W == 4, "groups, 8 groups, 4 threads, --accum 2");
        CHECK(parallel_check("groups", 4, 1, 8, &W, err, sizeof err) == -1 && strstr(err, "dividing the 4 gradient groups"),
              "groups, 8 threads for 4 groups refused: %s", err);
        CHECK(parallel_check("groups", 4, 4, 2, &W, err, sizeof err) == -1 && strstr(err, "--accum 4"),
              "groups, --accum 4 of 2 groups a thread refused: %s", err);
        CHECK(parallel_memory(&cfg, 13, 2, 2, 8, 0, 0.5, err, sizeof err) == 0, "2 small workers fit: %s", err);
        CHECK(parallel_memory(&cfg, 13, 2, 2, 8, (size_t)1 << 62, 0.9, err, sizeof err) == -1 &&
              strstr(err, "2 threads as workers need ") && strstr(err, "GiB"), "workers beyond the memory: %s", err);
        // The step's bytes that the cache leaves room for (cmd/runfolder.h's run_fit_cache): the team's
        // model, or worker 0's and the other workers' activations and gradient buffers, with the same
        // other bytes; what parallel_memory measures against the memory for the workers.
        size_t np = mae_num_params(&cfg), shared = mae_train_shared_bytes(&cfg);
        double team = groups_step_bytes(&cfg, 13, 2, 0, 8, 1000), two = groups_step_bytes(&cfg, 13, 2, 2, 8, 1000);
        double model = (double)mae_bytes_needed(&cfg, 26);
        CHECK(team == model + (double)grad_reduce_at_once_floats(2, np) * sizeof(float) + 1000,
              "the team's step bytes %.0f", team);
        CHECK(two == 2 * model - (double)shared + (double)grad_workers_floats(8, np, 2, 2) * sizeof(float) + 1000,
              "2 workers' step bytes %.0f (team %.0f)", two, team);
    }

    // 3. The real model: N = 1, 2, 4 ranks and 1 or 2 threads give bitwise the same gradient and loss.
    {
        MaeConfig cfg;
        mae_config_preset(&cfg, "tiny");
        cfg.img_size = 8; cfg.patch_size = 4; cfg.in_chans = 3;
        cfg.embed_dim = 16; cfg.depth = 1; cfg.num_heads = 2;
        cfg.dec_embed_dim = 16; cfg.dec_depth = 1; cfg.dec_num_heads = 2;
        cfg.mask_ratio = 0.5f;
        const int B = 16, G = 8;
        char err[256];
        Ctx c = {0};
        c.per = B / G; c.S = 8; c.C = 3; c.L = mae_num_patches(&cfg); c.K = mae_len_keep(&cfg, cfg.mask_ratio);
        c.fail_group = -1;
        c.m = mae_create(&cfg, c.per, err, sizeof err);
        if (!c.m) { fprintf(stderr, "%s\n", err); return 2; }
        Rng init;
        rng_seed(&init, 3);
        mae_init_weights(c.m, &init);
        c.images = malloc((size_t)B * c.S * c.S * c.C * sizeof(float));
        c.noise = malloc((size_t)B * c.L * sizeof(float));
        c.ids_keep = malloc((size_t)B * c.L * sizeof(int));
        size_t n = mae_num_params(&cfg);
        float *ref = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
        omp_set_num_threads(1);
        double loss1 = step_as(&c, G, 1, n, ref);
        int nonzero = 0;
        for (size_t i = 0; i < n; i++) nonzero += ref[i] != 0.0f;
        CHECK(nonzero > (int)(n / 2), "the gradient is not trivially zero (%d of %zu)", nonzero, n);
        for (int threads = 1; threads <= 2; threads++) {
            omp_set_num_threads(threads);
            for (int N = 1; N <= 4; N *= 2) {
                double loss = step_as(&c, G, N, n, got);
                CHECK(memcmp(ref, got, n * sizeof(float)) == 0, "%d ranks, %d threads: the same gradient bits", N, threads);
                CHECK(loss == loss1, "%d ranks, %d threads: the same loss (%.9g vs %.9g)", N, threads, loss, loss1);
            }
        }
        // grad_reduce_step in this one process (no MPI): the local tree with the root's add and its right
        // child's add left to one last pass, (left + (right.left + right.right)) / G, the same bits.
        for (int threads = 1; threads <= 2; threads++) {
            omp_set_num_threads(threads);
            GradReduce gr;
            CHECK(grad_reduce_init(&gr, G, n, err, sizeof err) == 0, "one process: %s", err);
            float step_loss = 0.0f;
            int stop = 0, failed_here = 0;
            float *g = grad_reduce_grads(&gr, got);
            int rc = grad_reduce_step(&gr, g, group_fn, &c, &step_loss, NULL, &stop, &failed_here, err, sizeof err);
            CHECK(rc == 0 && !failed_here && !stop, "grad_reduce_step: %s", err);
            CHECK(memcmp(ref, g, n * sizeof(float)) == 0, "grad_reduce_step, %d threads: the tree's gradient bits", threads);
            CHECK(step_loss == (float)loss1, "grad_reduce_step: the batch loss (%.9g vs %.9g)", step_loss, loss1);
            grad_reduce_free(&gr);
        }
        // Groups at once (grad_reduce_at_once): 1, 2, 4 or all 8 groups per forward, in one process or as
        // rank 1 of 2, at 1 and 2 threads: the same adds in the same tree, so the same bits and loss.
        c.all = mae_create(&cfg, B, err, sizeof err);
        memcpy(mae_params(c.all), mae_params(c.m), n * sizeof(float));
        for (int threads = 1; threads <= 2; threads++) {
            omp_set_num_threads(threads);
            for (int width = 1; width <= G; width *= 2) {
                GradReduce gr;
                CHECK(grad_reduce_init(&gr, G, n, err, sizeof err) == 0 && grad_reduce_at_once(&gr, width, err, sizeof err) == 0,
                      "%d groups at once: %s", width, err);
                size_t extra = 0;
                for (int i = 0; gr.extra[i]; i++) extra++;
                CHECK(extra * n == grad_reduce_at_once_floats(width, n), "%d at once: %zu more buffers", width, extra);
                float step_loss = 0.0f;
                int stop = 0, failed_here = 0;
                float *g = grad_reduce_grads(&gr, got);
                memset(g, 0xff, n * sizeof(float));   // NaNs: every element must be written
                c.calls = 0;
                int rc = grad_reduce_step_at_once(&gr, g, groups_fn, &c, &step_loss, NULL, &stop, &failed_here, err,
                                                  sizeof err);
                CHECK(rc == 0 && !failed_here && !stop && c.calls == G / width, "at once: %s (%d calls)", err, c.calls);
                CHECK(memcmp(ref, g, n * sizeof(float)) == 0, "%d groups at once, %d threads: the tree's gradient bits",
                      width, threads);
                CHECK(step_loss == (float)loss1, "%d groups at once: the batch loss (%.9g vs %.9g)", width, step_loss, loss1);
                grad_reduce_free(&gr);
            }
            // As rank 1 of 2 (groups 4..7), 4 at once: its local node's bits.
            float *want = malloc(n * sizeof(float));
            double want_loss, got_loss;
            GradReduce gr;
            grad_reduce_init_as(&gr, G, n, 1, 2, err, sizeof err);
            CHECK(grad_reduce_local(&gr, want, group_fn, &c, &want_loss, err, sizeof err) == 0, "%s", err);
            grad_reduce_free(&gr);
            grad_reduce_init_as(&gr, G, n, 1, 2, err, sizeof err);
            CHECK(grad_reduce_at_once(&gr, 4, err, sizeof err) == 0, "%s", err);
            // (grad_reduce_step would exchange with rank 0: the local node alone is checked here.)
            CHECK(grad_reduce_local_at_once(&gr, got, groups_fn, &c, &got_loss, err, sizeof err) == 0, "%s", err);
            CHECK(memcmp(want, got, n * sizeof(float)) == 0 && want_loss == got_loss,
                  "rank 1 of 2, 4 groups at once: its local node's bits and loss");
            grad_reduce_free(&gr);
            free(want);
        }
        // A failing chunk is reported, not summed.
        {
            c.fail_group = 6;
            GradReduce gr;
            grad_reduce_init(&gr, G, n, err, sizeof err);
            grad_reduce_at_once(&gr, 4, err, sizeof err);
            float step_loss = 0.0f;
            int stop = 0, failed_here = 0;
            int rc = grad_reduce_step_at_once(&gr, grad_reduce_grads(&gr, got), groups_fn, &c, &step_loss, NULL, &stop,
                                              &failed_here, err, sizeof err);
            CHECK(rc == -1 && failed_here && strstr(err, "group 6"), "at once, a failing chunk: %s", err);
            grad_reduce_free(&gr);
            c.fail_group = -1;
        }
        // Threads as workers (dist/workers.h): W = 2 or 4 threads, each its own G / W groups on models
        // sharing the parameters (mae_create_sharing), one or more at a time, inside a scope of packed
        // weights (kernels/gemm.h) two steps running: the same gradient bits and loss as one thread alone.
        // A third step leaves the top of the tree to the caller (defer_top): its nodes unsummed, then
        // grad_workers_top_tree's adds give the same bits. A failing group is reported, not summed.
        for (int W = 2; W <= 4; W *= 2)
            for (int width = 1; width <= G / W; width *= 2) {
                Ctx wc[WORKERS_MAX];
                void *ctx[WORKERS_MAX];
                for (int w = 0; w < W; w++) {
                    wc[w] = c;
                    wc[w].m = mae_create_sharing(c.m, c.per, err, sizeof err);
                    wc[w].all = mae_create_sharing(c.m, c.per * width, err, sizeof err);
                    wc[w].images = malloc((size_t)c.per * width * c.S * c.S * c.C * sizeof(float));
                    wc[w].noise = malloc((size_t)c.per * width * c.L * sizeof(float));
                    wc[w].ids_keep = malloc((size_t)c.per * width * c.L * sizeof(int));
                    CHECK(wc[w].m && wc[w].all && wc[w].images && wc[w].noise && wc[w].ids_keep, "worker %d: %s", w, err);
                    ctx[w] = &wc[w];
                }
                CHECK(grad_workers_fit(G, W) && !grad_workers_fit(G, 3) && !grad_workers_fit(G, 1) &&
                      !grad_workers_fit(G, 2 * G), "%d workers fit %d groups; 1, 3 and %d do not", W, G, 2 * G);
                GradWorkers gw;
                CHECK(grad_workers_init(&gw, NULL, G, n, W, width, err, sizeof err) == 0, "%d workers: %s", W, err);
                omp_set_num_threads(W);
                for (int step = 0; step < 3; step++) {
                    float step_loss = 0.0f;
                    int stop = 0, failed_here = 0;
                    memset(got, 0xff, n * sizeof(float));   // NaNs: every element must be written
                    for (int w = 0; w < W; w++) wc[w].calls = 0;
                    gw.defer_top = step == 2;
                    gemm_weights_begin();
                    int rc = grad_workers_step(&gw, got, group_fn, groups_fn, ctx, &step_loss, NULL, &stop,
                                               &failed_here, err, sizeof err);
                    gemm_weights_end();
                    if (gw.defer_top) {
                        CHECK(memcmp(ref, got, n * sizeof(float)) != 0, "%d workers, %d at once: the top deferred",
                              W, width);
                        SumTree top;
                        grad_workers_top_tree(&gw, &top);
                        sumtree_apply(&top, gw.node, 0, n);
                    }
                    int calls = 0;
                    for (int w = 0; w < W; w++) calls += wc[w].calls;
                    CHECK(rc == 0 && !failed_here && !stop && calls == (width > 1 ? G / width : 0),
                          "workers: %s (%d calls)", err, calls);
                    CHECK(memcmp(ref, got, n * sizeof(float)) == 0,
                          "%d workers, %d groups at once, step %d: the tree's gradient bits", W, width, step);
                    CHECK(step_loss == (float)loss1, "%d workers, %d at once: the batch loss (%.9g vs %.9g)", W, width,
                          step_loss, loss1);
                }
                gw.defer_top = 0;
                for (int w = 0; w < W; w++) wc[w].fail_group = G - 1;
                float step_loss = 0.0f;
                int stop = 0, failed_here = 0;
                int rc = grad_workers_step(&gw, got, group_fn, groups_fn, ctx, &step_loss, NULL, &stop, &failed_here,
                                           err, sizeof err);
                char want[64];
                snprintf(want, sizeof want, "group %d", G - 1);
                CHECK(rc == -1 && failed_here && strstr(err, want), "%d workers, a failing group: %s", W, err);
                grad_workers_free(&gw);
                for (int w = 0; w < W; w++) {
                    mae_free(wc[w].m); mae_free(wc[w].all);
                    free(wc[w].images); free(wc[w].noise); free(wc[w].ids_keep);
                }
            }
        gemm_weights_release();
        omp_set_num_threads(1);
        mae_free(c.all);
        // The batch loss is the mean of the group losses: one forward of all B images agrees to rounding.
        Mae *whole = mae_create(&cfg, B, err, sizeof err);
        memcpy(mae_params(whole), mae_params(c.m), n * sizeof(float));
        float *imgs = malloc((size_t)B * c.S * c.S * c.C * sizeof(float));
        float *noise = malloc((size_t)B * c.L * sizeof(float));
        int *keep = malloc((size_t)B * c.L * sizeof(int));
        size_t per_image = (size_t)c.S * c.S * c.C;
        for (int k = 0; k < B; k++) {
            Rng r;
            rng_derive(&r, 7, 0, (uint64_t)k);
            for (size_t i = 0; i < per_image; i++) imgs[(size_t)k * per_image + i] = rng_normal(&r, 0.0f, 1.0f);
            for (int i = 0; i < c.L; i++) noise[(size_t)k * c.L + i] = rng_uniform(&r);
        }
        mae_masking_from_noise(noise, B, c.L, c.K, keep);
        mae_zero_grads(whole);
        float whole_loss = mae_train_forward(whole, imgs, keep, B, c.K);
        mae_backward(whole);
        CHECK_CLOSE(loss1, whole_loss, 1e-6, 1e-5, "grouped loss vs one batch");
        double maxd = 0;
        for (size_t i = 0; i < n; i++) {
            double d = fabs((double)ref[i] - mae_grads(whole)[i]);
            if (d > maxd) maxd = d;
        }
        CHECK(maxd < 1e-5, "grouped gradient vs one batch: max |d| %.3g", maxd);
        // A failing group is reported, not summed.
        c.fail_group = 5;
        GradReduce gr;
        grad_reduce_init_as(&gr, G, n, 1, 2, err, sizeof err);
        double l;
        CHECK(grad_reduce_local(&gr, got, group_fn, &c, &l, err, sizeof err) == -1 && strstr(err, "group 5"), "failure: %s", err);
        grad_reduce_free(&gr);
        mae_free(whole); free(imgs); free(noise); free(keep);
        free(ref); free(got); free(c.images); free(c.noise); free(c.ids_keep);
        mae_free(c.m);
    }
    return check_done();
}
