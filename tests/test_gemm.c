// gemm: every path this CPU has (avx512, avx2, portable, ref) against the *_ref loops on odd sizes, with
// and without bias, overwrite and accumulate, padded leading dimensions; C outside its M x N window
// untouched; 1 and 2 threads bitwise equal; weights packed once per scope; gemm_tn never reads past its B,
// and packs it where it would leave L2 (bitwise the in-place result); the path selection API; gemm_tn split
// along k; gemm_tn_sums (a bias gradient in the product's pass); gemm_tn_tree (groups' weight gradients
// summed in a tree); the blocking rules (kernels/gemm.h: gemm_blocking_for) and every check again under a
// small forced blocking (many k-blocks and slabs).
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>
#include "check.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/linear.h"
#include "kernels/sumtree.h"
#include "kernels/team.h"
#include "core/rng.h"

enum { NT, NN, TN };
static const char *const product_name[] = {"nt", "nn", "tn"};

static void run(int product, int ref, int M, int N, int K, const float *A, int lda, const float *B,
                int ldb, float *C, int ldc, const float *bias, int acc) {
    switch (product) {
    case NT: (ref ? gemm_nt_ref : gemm_nt)(M, N, K, A, lda, B, ldb, C, ldc, bias, acc); break;
    case NN: (ref ? gemm_nn_ref : gemm_nn)(M, N, K, A, lda, B, ldb, C, ldc, acc); break;
    default: (ref ? gemm_tn_ref : gemm_tn)(M, N, K, A, lda, B, ldb, C, ldc, acc); break;
    }
}

// One problem with its own buffers. Operand padding holds NaN, so reading past a row shows up;
// C padding holds a sentinel that must survive: the columns past N, and GUARD_ROWS rows below the M
// rows (a tile stored past its last row lands there, where it fails the check instead of corrupting
// the heap).
typedef struct {
    int product, M, N, K, lda, ldb, ldc, acc, has_bias;
    long a_len, b_len, c_len;
    float *A, *B, *C0, *bias, *absA, *absB, *absC0, *absbias;
} Problem;

#define SENTINEL 12345.0f
#define GUARD_ROWS 16   // more than any micro-kernel's MR - 1

static float *alloc_f(long n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!p) { perror("malloc"); exit(2); }
    return p;
}

static void fill(float *x, long rows, long cols, long ld, Rng *rng, float pad) {
    for (long r = 0; r < rows; r++)
        for (long c = 0; c < ld; c++) x[r * ld + c] = c < cols ? rng_uniform(rng) * 2.0f - 1.0f : pad;
}

static float *abs_copy(const float *x, long n) {
    if (!x) return NULL;
    float *y = alloc_f(n);
    for (long i = 0; i < n; i++) y[i] = fabsf(x[i]);
    return y;
}

static Problem make(int product, int M, int N, int K, int pad, int acc, int has_bias, Rng *rng) {
    Problem p = {product, M, N, K, 0, 0, N + pad, acc, has_bias, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    long arows, acols, brows, bcols;
    if (product == TN) { arows = K; acols = M; } else { arows = M; acols = K; }
    if (product == NT) { brows = N; bcols = K; } else { brows = K; bcols = N; }
    p.lda = (int)acols + pad; p.ldb = (int)bcols + (pad ? pad + 3 : 0);
    p.a_len = arows * p.lda; p.b_len = brows * p.ldb; p.c_len = (long)(M + GUARD_ROWS) * p.ldc;
    p.A = alloc_f(p.a_len); p.B = alloc_f(p.b_len); p.C0 = alloc_f(p.c_len);
    fill(p.A, arows, acols, p.lda, rng, NAN);
    fill(p.B, brows, bcols, p.ldb, rng, NAN);
    fill(p.C0, M, N, p.ldc, rng, SENTINEL);
    for (long x = (long)M * p.ldc; x < p.c_len; x++) p.C0[x] = SENTINEL;
    if (has_bias && product == NT) { p.bias = alloc_f(N); fill(p.bias, 1, N, N, rng, 0); }
    p.absA = abs_copy(p.A, p.a_len); p.absB = abs_copy(p.B, p.b_len);
    p.absC0 = abs_copy(p.C0, p.c_len); p.absbias = abs_copy(p.bias, N);
    return p;
}

static void release(Problem *p) {
    free(p->A); free(p->B); free(p->C0); free(p->bias);
    free(p->absA); free(p->absB); free(p->absC0); free(p->absbias);
}

// Runs the fast entry point on a copy of C0 (using `threads` threads).
static float *compute(const Problem *p, int threads) {
    float *C = alloc_f(p->c_len);
    memcpy(C, p->C0, (size_t)p->c_len * sizeof(float));
    omp_set_num_threads(threads);
    run(p->product, 0, p->M, p->N, p->K, p->A, p->lda, p->B, p->ldb, C, p->ldc, p->bias, p->acc);
    omp_set_num_threads(2);
    return C;
}

// Compares C against the reference. Both are sums of the same products in different orders, so each
// differs from the exact value by at most ~(K+2) u S, S = |C0| + sum_k |a||b| + |bias| (u = 2^-24):
// allow twice that. A wrong term or a missed k-block moves an element by far more.
static int compare(const Problem *p, const float *C, const char *path) {
    float *R = alloc_f(p->c_len), *S = alloc_f(p->c_len);
    memcpy(R, p->C0, (size_t)p->c_len * sizeof(float));
    memcpy(S, p->absC0, (size_t)p->c_len * sizeof(float));
    run(p->product, 1, p->M, p->N, p->K, p->A, p->lda, p->B, p->ldb, R, p->ldc, p->bias, p->acc);
    run(p->product, 1, p->M, p->N, p->K, p->absA, p->lda, p->absB, p->ldb, S, p->ldc, p->absbias, 1);
    int bad = 0;
    for (long i = 0; i < p->M + GUARD_ROWS && bad < 3; i++)
        for (long j = 0; j < p->ldc && bad < 3; j++) {
            long x = i * p->ldc + j;
            int ok, outside = i >= p->M || j >= p->N;
            if (outside) ok = C[x] == SENTINEL;
            else ok = fabsf(C[x] - R[x]) <= 2.0f * (p->K + 2) * 0x1p-24f * S[x] + 1e-30f;
            CHECK(ok, "%s %s M=%d N=%d K=%d acc=%d bias=%d: C[%ld,%ld]=%.9g want %.9g (scale %.3g)",
                  path, product_name[p->product], p->M, p->N, p->K, p->acc, p->bias != NULL, i, j,
                  C[x], outside ? SENTINEL : R[x], S[x]);
            bad += !ok;
        }
    free(R); free(S);
    return bad == 0;
}

static void test_path(const char *path, Rng *rng) {
    static const int sizes[] = {1, 7, 33, 129};
    int n = 0, ok = 0;
    for (int product = 0; product < 3; product++)
        for (int mi = 0; mi < 4; mi++)
            for (int ni = 0; ni < 4; ni++)
                for (int ki = 0; ki < 4; ki++) {
                    int v = mi + ni + ki + product;          // vary padding, accumulate and bias
                    Problem p = make(product, sizes[mi], sizes[ni], sizes[ki], v % 3 ? 5 : 0,
                                     v & 1, (v >> 1) & 1, rng);
                    float *C = compute(&p, 2);
                    ok += compare(&p, C, path); n++;
                    free(C); release(&p);
                }
    // Several k-blocks (K > kc, on every path and CPU: the rules give at most 1024, docs/performance.md,
    // "Blocking from the caches"; K 1000 was one block on the portable path, kc 1024 wherever L1d is 24 KiB
    // or more, so its packing of a row-major A past the first k-block went untested), several column slabs
    // (N * kc > slab), model-like shapes, K = 0.
    static const int shapes[][3] = {{33, 40, 2024}, {20, 1500, 400}, {65, 48, 128}, {150, 192, 576},
                                    {17, 65, 32}, {5, 9, 0}};
    if (!getenv("VITMAE_GEMM_KC"))   // the tuning override may ask for more
        CHECK(shapes[0][2] > gemm_blocking().kc, "%s: K %d spans several k-blocks of %d", path, shapes[0][2],
              gemm_blocking().kc);
    for (int product = 0; product < 3; product++)
        for (int s = 0; s < 6; s++) {
            // s = 0: K 2024 + pad 24 makes row-major A rows exactly 8 KB apart (the copied-rows case: a
            // multiple of 4 KB)
            Problem p = make(product, shapes[s][0], shapes[s][1], shapes[s][2], s == 0 ? 24 : s & 1 ? 0 : 3,
                             s & 1, 1, rng);
            float *C = compute(&p, 2);
            ok += compare(&p, C, path); n++;
            free(C); release(&p);
        }
    CHECK(ok == n, "%s: %d of %d problems match the reference", path, ok, n);
}

// n floats copied to the end of a fresh mapping whose next page cannot be read, so that reading past the
// last one faults. *map / *map_len: the mapping, for munmap.
static float *guarded_copy(const float *src, long n, void **map, size_t *map_len) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = (size_t)n * sizeof(float);
    size_t len = (bytes + page - 1) / page * page + page;
    char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED || mprotect(base + len - page, page, PROT_NONE)) { perror("mmap"); exit(2); }
    float *dst = (float *)(base + len - page - bytes);
    memcpy(dst, src, bytes);
    *map = base;
    *map_len = len;
    return dst;
}

// gemm_tn reads its B in place only where every panel is whole (16 or 32 columns: kernels/gemm.c,
// gemm_block); with N not a multiple of 16 it must not read past B's last row. B ends against an
// unreadable page here, so any read past it kills the test.
static void test_tn_b_bounds(const char *path, Rng *rng) {
    static const int shapes[][3] = {{40, 33, 70}, {20, 17, 300}, {64, 50, 129}};   // M, N, K
    for (int s = 0; s < 3; s++) {
        Problem p = make(TN, shapes[s][0], shapes[s][1], shapes[s][2], 0, 0, 0, rng);
        void *map;
        size_t map_len;
        float *own = p.B;
        p.B = guarded_copy(own, p.b_len, &map, &map_len);
        float *C = compute(&p, 2);
        CHECK(compare(&p, C, path), "%s: tn with B against an unreadable page, M=%d N=%d K=%d", path, p.M, p.N, p.K);
        free(C);
        munmap(map, map_len);
        p.B = own;
        release(&p);
    }
}

// Large enough to use both threads, split by rows and (M small) by columns; K 800 is several k-blocks
// where kc is 384 or 576 (the avx512 path) and one on the others (kc 896-1024; test_path's K 2024 spans
// several on every path, and the small-blocking pass below many on the default path). N a
// multiple of 16 (the last two): gemm_tn reads B in place (kernels/gemm.c, gemm_block), with a 16-wide
// last panel in the second.
static void test_threads(const char *path, Rng *rng) {
    static const int shapes[][3] = {{130, 100, 800}, {20, 500, 300}, {259, 67, 129}, {130, 96, 800}, {20, 496, 300}};
    for (int product = 0; product < 3; product++)
        for (int s = 0; s < 5; s++) {
            Problem p = make(product, shapes[s][0], shapes[s][1], shapes[s][2], 1, s == 1, 1, rng);
            float *C1 = compute(&p, 1), *C2 = compute(&p, 2);
            CHECK(!memcmp(C1, C2, (size_t)p.c_len * sizeof(float)),
                  "%s %s M=%d N=%d K=%d: 1 and 2 threads differ", path, product_name[product],
                  p.M, p.N, p.K);
            compare(&p, C2, path);
            free(C1); free(C2); release(&p);
        }
}

// gemm_tn split along k (kernels/gemm.c, "a weight gradient split along k"): with k-blocks of 64, K = 384
// is 6 blocks (shared by 2 and by 3 threads), 390 is 7 (not shared: rows of C instead), 130 is 3 (by 3
// threads); N a multiple of 16 (B read in place) or not (B packed); overwrite and accumulate. Bitwise
// the 1-thread result with 2 and 3 threads, alone and in team mode, and within rounding of the reference.
static void test_split_k(const char *path, Rng *rng) {
    static const int shapes[][3] = {{130, 48, 384}, {130, 33, 384}, {70, 64, 390}, {9, 530, 768}, {250, 48, 130}};
    CHECK(gemm_force_blocking(64, 0) == 0, "kc 64");
    for (int s = 0; s < 5; s++)
        for (int acc = 0; acc < 2; acc++) {
            Problem p = make(TN, shapes[s][0], shapes[s][1], shapes[s][2], s & 1 ? 3 : 0, acc, 0, rng);
            float *C1 = compute(&p, 1);
            compare(&p, C1, path);
            for (int threads = 2; threads <= 3; threads++)
                for (int team = 0; team < 2; team++) {
                    float *C = team ? alloc_f(p.c_len) : compute(&p, threads);
                    if (team) {
                        memcpy(C, p.C0, (size_t)p.c_len * sizeof(float));
                        #pragma omp parallel num_threads(threads)
                        {
                            team_begin();
                            gemm_tn(p.M, p.N, p.K, p.A, p.lda, p.B, p.ldb, C, p.ldc, p.acc);
                            team_end();
                        }
                    }
                    CHECK(!memcmp(C1, C, (size_t)p.c_len * sizeof(float)),
                          "%s tn split along k M=%d N=%d K=%d acc=%d: %d threads%s differ from 1", path, p.M, p.N,
                          p.K, acc, threads, team ? " (team)" : "");
                    free(C);
                }
            free(C1); release(&p);
        }
    gemm_force_blocking(0, 0);
}

// gemm_tn packs its B instead of reading it in place where each block of MC rows would read a k-block
// of B larger than the L2 slab again (kernels/gemm.c, tn_b_rereads): forced here by a slab of 1024
// floats, M past two row blocks per thread for any MR <= 16, N a multiple of 16 (read in place when the
// slab holds it). Packing only copies, so C must be bitwise the in-place result (a slab of 1M floats),
// at 1 and 2 threads, with K split among the threads (200: 4 k-blocks of 50) or not (130: 3 of 44),
// and within rounding of the reference.
static void test_tn_b_reread(const char *path, Rng *rng) {
    static const int shapes[][2] = {{96, 200}, {48, 130}};   // N, K
    int M = 4 * gemm_blocking().mc_panels * 16 + 5;
    for (int s = 0; s < 2; s++)
        for (int acc = 0; acc < 2; acc++) {
            Problem p = make(TN, M, shapes[s][0], shapes[s][1], 0, acc, 0, rng);
            CHECK(gemm_force_blocking(64, 1L << 20) == 0, "kc 64, large slab");
            float *C_in = compute(&p, 1);
            CHECK(gemm_force_blocking(64, 1024) == 0, "kc 64, slab of 1024 floats");
            float *C1 = compute(&p, 1), *C2 = compute(&p, 2);
            size_t bytes = (size_t)p.c_len * sizeof(float);
            CHECK(!memcmp(C_in, C1, bytes) && !memcmp(C_in, C2, bytes),
                  "%s tn B packed for its row blocks M=%d N=%d K=%d acc=%d: differs from B in place", path, p.M,
                  p.N, p.K, acc);
            compare(&p, C2, path);
            free(C_in); free(C1); free(C2); release(&p);
        }
    gemm_force_blocking(0, 0);
}

// gemm_tn_sums (kernels/gemm.h): C bitwise gemm_tn's; when it says it summed, the sums bitwise those of
// the definition (one chain from 0 over k ascending, then stored or added) and of column_sum where A has
// no padding; when not, the sums untouched. Overwrite and accumulate, 1, 2 and 3 threads, alone and in
// team mode. C split by rows and by columns among threads (one thread stores the sums), K over several
// k-blocks (one chain across them; split among threads at 2 or 3 where they share out: not summed),
// A padded (lda > M), K = 1. At 1 thread every fast path must sum; the ref path never does.
static void test_tn_sums(const char *path, Rng *rng) {
    static const int shapes[][3] = {{37, 45, 300}, {200, 64, 61}, {20, 300, 130}, {130, 48, 384}, {9, 530, 768},
                                    {5, 7, 1}};
    for (int s = 0; s < 6; s++)
        for (int acc = 0; acc < 2; acc++) {
            Problem p = make(TN, shapes[s][0], shapes[s][1], shapes[s][2], s & 1 ? 3 : 0, acc, 0, rng);
            float *want_c = compute(&p, 1), *sums0 = alloc_f(p.M), *want_s = alloc_f(p.M), *S = alloc_f(p.M);
            fill(sums0, 1, p.M, p.M, rng, 0);
            for (int i = 0; i < p.M; i++) {
                float t = 0.0f;
                for (int k = 0; k < p.K; k++) t += p.A[(long)k * p.lda + i];
                want_s[i] = acc ? sums0[i] + t : t;
            }
            if (p.lda == p.M) {   // the kernel the fused sums replace gives the same bits
                memcpy(S, sums0, (size_t)p.M * sizeof(float));
                column_sum(S, p.A, p.K, p.M, acc);
                CHECK(!memcmp(S, want_s, (size_t)p.M * sizeof(float)), "%s column_sum M=%d K=%d: not the chain",
                      path, p.M, p.K);
            }
            for (int threads = 1; threads <= 3; threads++)
                for (int team = 0; team < 2; team++) {
                    float *C = alloc_f(p.c_len);
                    memcpy(C, p.C0, (size_t)p.c_len * sizeof(float));
                    memcpy(S, sums0, (size_t)p.M * sizeof(float));
                    int got[3] = {-1, -1, -1};
                    #pragma omp parallel num_threads(threads) if (team)
                    {
                        if (team) team_begin();
                        else omp_set_num_threads(threads);
                        int r = gemm_tn_sums(p.M, p.N, p.K, p.A, p.lda, p.B, p.ldb, C, p.ldc, p.acc, S);
                        got[omp_get_thread_num()] = r;
                        if (team) team_end();
                        else omp_set_num_threads(2);
                    }
                    int r = got[0];
                    for (int t = 1; team && t < threads; t++)
                        CHECK(got[t] == r, "%s tn_sums M=%d N=%d K=%d: thread %d says %d, thread 0 %d", path, p.M,
                              p.N, p.K, t, got[t], r);
                    CHECK(!memcmp(C, want_c, (size_t)p.c_len * sizeof(float)),
                          "%s tn_sums M=%d N=%d K=%d acc=%d, %d threads%s: C differs from gemm_tn's", path, p.M, p.N,
                          p.K, acc, threads, team ? " (team)" : "");
                    if (gemm_path() == GEMM_PATH_REF) CHECK(r == 0, "%s tn_sums: the ref path summed", path);
                    else if (threads == 1) CHECK(r == 1, "%s tn_sums M=%d N=%d K=%d: 1 thread did not sum", path, p.M, p.N, p.K);
                    CHECK(!memcmp(S, r ? want_s : sums0, (size_t)p.M * sizeof(float)),
                          "%s tn_sums M=%d N=%d K=%d acc=%d, %d threads%s (summed %d): sums[0] %.9g, want %.9g", path,
                          p.M, p.N, p.K, acc, threads, team ? " (team)" : "", r, S[0], r ? want_s[0] : sums0[0]);
                    free(C);
                }
            free(want_c); free(sums0); free(want_s); free(S); release(&p);
        }
}

// Weights packed once per scope (gemm_weights_begin): gemm_nt_weight / gemm_nn_weight give bitwise what
// gemm_nt / gemm_nn give, on the call that packs and on the calls that reuse the packed copy, alone and
// in team mode (kernels/team.h); a weight changed between scopes is packed again. Odd sizes, K 400 past
// one k-block where kc is 384 (the avx512 path on Zen 4: kernels/gemm.h, gemm_blocking; one block
// elsewhere, many in the small-blocking pass), N past one slab; M of 8 tiles a thread
// and more, where a packed weight's product splits M although N is larger.
// Under the sanitizers (make test-san sets VITMAE_SANITIZED) the portable and ref paths, plain C that
// -O1 leaves scalar, run 20-40 times slower than the vector paths: there the driver tests below take
// their smaller shapes and fewer workers (the same checks on each), which took test-san's test_gemm
// from 144 s to 42 (AMD EPYC, 2 cores). The vector paths under the sanitizers, and every path in the
// plain build, take them all.
static int san_plain_path(void) {
    return check_sanitized() && (gemm_path() == GEMM_PATH_PORTABLE || gemm_path() == GEMM_PATH_REF);
}

static void test_weights(const char *path, Rng *rng) {
    int sizes[][3] = {{1, 1, 1}, {7, 33, 5}, {33, 129, 400}, {130, 1100, 129}, {272, 576, 192}, {337, 700, 65}};
    for (int si = 0; si < 6; si++) {
        if (san_plain_path() && (si == 3 || si == 4)) continue;   // the two largest
        for (int team = 0; team < 3; team++) {
            int M = sizes[si][0], N = sizes[si][1], K = sizes[si][2];
            float *W = alloc_f((long)N * K), *bias = alloc_f(N);
            fill(W, N, K, K, rng, 0.0f); fill(bias, 1, N, N, rng, 0.0f);
            for (int round = 0; round < 2; round++) {   // round 1: W changed, a new scope
                if (round) for (long i = 0; i < (long)N * K; i++) W[i] *= -0.5f;
                gemm_weights_begin();
                for (int call = 0; call < 3; call++) {
                    float *A = alloc_f((long)M * K), *D = alloc_f((long)M * N);
                    fill(A, M, K, K, rng, 0.0f); fill(D, M, N, N, rng, 0.0f);
                    float *c0 = alloc_f((long)M * N), *c1 = alloc_f((long)M * N);
                    float *d0 = alloc_f((long)M * K), *d1 = alloc_f((long)M * K);
                    gemm_nt(M, N, K, A, K, W, K, c0, N, bias, 0);
                    gemm_nn(M, K, N, D, N, W, K, d0, K, 0);
                    #pragma omp parallel num_threads(team + 1) if (team > 0)
                    {
                        if (team > 0) team_begin();
                        gemm_nt_weight(M, N, K, A, K, W, K, c1, N, bias, 0);
                        gemm_nn_weight(M, K, N, D, N, W, K, d1, K, 0);
                        if (team > 0) team_end();
                    }
                    CHECK(!memcmp(c0, c1, sizeof(float) * M * N) && !memcmp(d0, d1, sizeof(float) * M * K),
                          "%s: packed weights M=%d N=%d K=%d, team %d, round %d, call %d", path, M, N, K, team + 1,
                          round, call);
                    free(A); free(D); free(c0); free(c1); free(d0); free(d1);
                }
                gemm_weights_end();
            }
            free(W); free(bias);
        }
    }
    gemm_weights_release();
}

// Worker threads (dist/workers.h: each its own products, in a one-thread team nested in the workers'
// region) share the packed copies: 2 and 4 workers call gemm_nt_weight / gemm_nn_weight on the same
// three weights at once, with their own A, three scopes in a row with the weights changed between them.
// Every product is bitwise gemm_nt / gemm_nn of the weight of its scope, whether the call packed the
// copy, read it, or packed per call while another worker packed it. Then, in the same scope, the
// weights are changed behind the cache's back: the workers' products must still be those of the
// weights as they were, which shows that they read the copies the workers packed.
// (Not on the ref path, which packs nothing.)
static void test_weights_workers(const char *path, Rng *rng) {
    enum { NW = 3, CALLS = 2 };
    if (gemm_path() == GEMM_PATH_REF) return;
    int sizes[NW][3] = {{33, 129, 400}, {130, 1100, 129}, {272, 576, 192}};
    float *W[NW], *want_c[NW][4][CALLS], *want_d[NW][4][CALLS], *A[NW][4][CALLS], *D[NW][4][CALLS];
    for (int w = 0; w < NW; w++) {
        int M = sizes[w][0], N = sizes[w][1], K = sizes[w][2];
        W[w] = alloc_f((long)N * K);
        fill(W[w], N, K, K, rng, 0.0f);
        for (int t = 0; t < 4; t++)
            for (int c = 0; c < CALLS; c++) {
                A[w][t][c] = alloc_f((long)M * K); D[w][t][c] = alloc_f((long)M * N);
                fill(A[w][t][c], M, K, K, rng, 0.0f); fill(D[w][t][c], M, N, N, rng, 0.0f);
                want_c[w][t][c] = alloc_f((long)M * N); want_d[w][t][c] = alloc_f((long)M * K);
            }
    }
    for (int workers = 2; workers <= (san_plain_path() ? 2 : 4); workers += 2)
        for (int scope = 0; scope < 4; scope++) {   // scope 3: the weights change inside it
            if (scope > 0)
                for (int w = 0; w < NW; w++)
                    for (long i = 0; i < (long)sizes[w][1] * sizes[w][2]; i++) W[w][i] *= -0.75f;
            for (int w = 0; w < NW; w++)   // the products of this scope's weights, serially
                for (int t = 0; t < workers; t++)
                    for (int c = 0; c < CALLS; c++) {
                        int M = sizes[w][0], N = sizes[w][1], K = sizes[w][2];
                        gemm_nt(M, N, K, A[w][t][c], K, W[w], K, want_c[w][t][c], N, NULL, 0);
                        gemm_nn(M, K, N, D[w][t][c], N, W[w], K, want_d[w][t][c], K, 0);
                    }
            gemm_weights_begin();
            int bad = 0, stale_bad = 0;
            #pragma omp parallel num_threads(workers) reduction(+ : bad, stale_bad)
            {
                int t = omp_get_thread_num();
                for (int pass = 0; pass < (scope == 3 ? 2 : 1); pass++) {
                    if (pass == 1) {   // every copy is packed by now: change the weights behind the cache
                        #pragma omp barrier
                        #pragma omp single
                        for (int w = 0; w < NW; w++)
                            for (long i = 0; i < (long)sizes[w][1] * sizes[w][2]; i++) W[w][i] += 1.0f;
                    }
                    #pragma omp parallel num_threads(1)
                    {
                        team_begin();
                        for (int c = 0; c < CALLS; c++)
                            for (int w = 0; w < NW; w++) {
                                int M = sizes[w][0], N = sizes[w][1], K = sizes[w][2];
                                float *cg = alloc_f((long)M * N), *dg = alloc_f((long)M * K);
                                gemm_nt_weight(M, N, K, A[w][t][c], K, W[w], K, cg, N, NULL, 0);
                                gemm_nn_weight(M, K, N, D[w][t][c], N, W[w], K, dg, K, 0);
                                int differs = memcmp(cg, want_c[w][t][c], sizeof(float) * M * N) ||
                                              memcmp(dg, want_d[w][t][c], sizeof(float) * M * K);
                                if (pass == 0) bad += differs;
                                else stale_bad += differs;
                                free(cg); free(dg);
                            }
                        team_end();
                    }
                }
            }
            gemm_weights_end();
            CHECK(bad == 0, "%s: %d workers sharing packed weights, scope %d: every product bitwise gemm_nt / gemm_nn "
                  "(%d differ)", path, workers, scope, bad);
            if (scope == 3)
                CHECK(stale_bad == 0, "%s: %d workers: later calls in the scope read the copies packed before (%d "
                      "products saw the changed weights)", path, workers, stale_bad);
            if (scope == 3)   // the next round starts from the weights the copies hold
                for (int w = 0; w < NW; w++)
                    for (long i = 0; i < (long)sizes[w][1] * sizes[w][2]; i++) W[w][i] -= 1.0f;
        }
    gemm_weights_release();
    for (int w = 0; w < NW; w++) {
        free(W[w]);
        for (int t = 0; t < 4; t++)
            for (int c = 0; c < CALLS; c++) {
                free(A[w][t][c]); free(D[w][t][c]); free(want_c[w][t][c]); free(want_d[w][t][c]);
            }
    }
}

// Copies rewritten by the weight's update (gemm_weight_copies, kernels/gemm.h). After W changes and its
// blocks of GEMM_COPY_ROWS rows are written into its copies (in reverse order, by 1 or 3 threads, the
// last block short), the next scope's gemm_nt_weight / gemm_nn_weight give bitwise gemm_nt / gemm_nn
// on that W; and they are served from the rewritten copies, not packed again: W changed once more
// without a rewrite still gives the products of the rewritten W. A copy that fits L2 is left to its
// first use (no copies), as is a view of only part of W. (Sizes are chosen far from L2's: padding
// only adds a few columns.)
static void test_weight_copies(const char *path, Rng *rng, int N, int K) {
    int M = 37, want_copies = (long)N * K > 2 * gemm_blocking().slab_floats;
    float *W = alloc_f((long)N * K), *Wr = alloc_f((long)N * K), *A = alloc_f((long)M * K), *D = alloc_f((long)M * N);
    float *c0 = alloc_f((long)M * N), *c1 = alloc_f((long)M * N), *d0 = alloc_f((long)M * K), *d1 = alloc_f((long)M * K);
    fill(W, N, K, K, rng, 0.0f); fill(A, M, K, K, rng, 0.0f); fill(D, M, N, N, rng, 0.0f);
    int has_kernels = gemm_path() != GEMM_PATH_REF;
    for (int round = 0; round < 3; round++) {
        if (round) {   // an update of every row, then its copies rewritten
            for (long i = 0; i < (long)N * K; i++) W[i] = W[i] * -0.5f + 0.25f;
            GemmCopies c = gemm_weight_copies(W, (long)N * K);
            CHECK(c.n == (want_copies && has_kernels ? 2 : 0) && (!c.n || c.rows == N),
                  "%s: W %dx%d has %d copies of %d rows", path, N, K, c.n, c.rows);
            CHECK(gemm_weight_copies(W, (long)N * K - K).n == 0, "%s: a view of part of W has no copies", path);
            int blocks = (N + GEMM_COPY_ROWS - 1) / GEMM_COPY_ROWS;
            #pragma omp parallel for num_threads(round == 1 ? 1 : 3) schedule(dynamic)
            for (int b = blocks - 1; b >= 0; b--)
                gemm_weight_copies_rows(&c, b * GEMM_COPY_ROWS, b == blocks - 1 ? N : (b + 1) * GEMM_COPY_ROWS);
            gemm_weight_copies_fresh(&c);
            memcpy(Wr, W, sizeof(float) * N * K);
            if (c.n) for (long i = 0; i < (long)N * K; i++) W[i] += 1.0f;   // not rewritten: the copies stand
        } else {
            memcpy(Wr, W, sizeof(float) * N * K);
        }
        gemm_weights_begin();
        gemm_nt(M, N, K, A, K, Wr, K, c0, N, NULL, 0);
        gemm_nn(M, K, N, D, N, Wr, K, d0, K, 0);
        gemm_nt_weight(M, N, K, A, K, W, K, c1, N, NULL, 0);
        gemm_nn_weight(M, K, N, D, N, W, K, d1, K, 0);
        gemm_weights_end();
        CHECK(!memcmp(c0, c1, sizeof(float) * M * N) && !memcmp(d0, d1, sizeof(float) * M * K),
              "%s: products of W %dx%d from its copies, round %d", path, N, K, round);
        if (round) memcpy(W, Wr, sizeof(float) * N * K);
    }
    gemm_weights_release();
    free(W); free(Wr); free(A); free(D); free(c0); free(c1); free(d0); free(d1);
}

// The rules of docs/performance.md, "Blocking from the caches", on the caches of the CPUs we run on,
// unknown caches and out-of-range ones; the cache-size parser; this CPU's blocking follows its caches.
static void test_blocking_rules(void) {
    struct { long l1d, l2; int mr, kc; long slab; int mc; } want[] = {
        {32 << 10, 1 << 20, 14, 384, 131072, 8},    // Zen 4, AVX-512 (where the rules were tuned)
        {48 << 10, 1 << 20, 14, 576, 131072, 5},    // Zen 5
        {48 << 10, 2 << 20, 14, 576, 262144, 10},   // Sapphire Rapids
        {32 << 10, 1 << 20, 6, 896, 131072, 8},     // AVX2 6x16
        {32 << 10, 512 << 10, 6, 896, 65536, 4},    // Zen 3 (AVX2, L2 512 KiB)
        {0, 0, 14, 384, 131072, 8},                 // unknown: as Zen 4
        {4 << 10, 64 << 10, 14, 64, 16384, 3},      // tiny caches: the lower bounds
        {1 << 20, 64L << 20, 4, 1024, 4L << 20, 64}, // huge caches: the upper bounds
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        GemmBlocking b = gemm_blocking_for(want[i].l1d, want[i].l2, want[i].mr);
        CHECK(b.kc == want[i].kc && b.slab_floats == want[i].slab && b.mc_panels == want[i].mc,
              "blocking for L1d %ld L2 %ld MR %d: kc %d slab %ld mc %d, want %d %ld %d", want[i].l1d, want[i].l2,
              want[i].mr, b.kc, b.slab_floats, b.mc_panels, want[i].kc, want[i].slab, want[i].mc);
    }
    CHECK(cpu_parse_cache_size("32K\n") == 32768 && cpu_parse_cache_size("1024K") == 1 << 20 &&
          cpu_parse_cache_size("32M") == 32L << 20 && cpu_parse_cache_size("512") == 512,
          "cache sizes parsed");
    CHECK(!cpu_parse_cache_size("") && !cpu_parse_cache_size("K") && !cpu_parse_cache_size("32X") &&
          !cpu_parse_cache_size("-4K"), "bad cache sizes refused");
    CpuCaches c = cpu_caches();
    CHECK(c.l1d == 0 || (c.l1d >= 4096 && c.l1d <= (1 << 20)), "L1d %ld plausible", c.l1d);
    CHECK(c.l2 == 0 || c.l2 >= c.l1d, "L2 %ld >= L1d %ld", c.l2, c.l1d);
    printf("caches: L1d %ld, L2 %ld, L3 %ld bytes\n", c.l1d, c.l2, c.l3);
    // L3 is the slice /sys says cpu0 shares, where /sys has one (kernels/cpu.h), not sysconf's figure.
    long l3_sys = cpu_sys_cache_size(3);
    CHECK(!l3_sys || c.l3 == l3_sys, "L3 %ld is /sys's %ld", c.l3, l3_sys);
    if (gemm_force_kernel("avx512") == 0 || gemm_force_kernel("avx2") == 0 || gemm_force_kernel("portable") == 0) {
        GemmBlocking b = gemm_blocking(), r = gemm_blocking_for(c.l1d, c.l2, gemm_path() == GEMM_PATH_AVX512 ? 14
                                                                            : gemm_path() == GEMM_PATH_AVX2 ? 6 : 4);
        if (getenv("VITMAE_GEMM_KC")) r.kc = b.kc;   // the tuning override, when someone set it
        CHECK(b.kc == r.kc && b.slab_floats == r.slab_floats && b.mc_panels == r.mc_panels,
              "%s uses kc %d slab %ld mc %d, its caches say %d %ld %d", gemm_kernel_name(), b.kc, b.slab_floats,
              b.mc_panels, r.kc, r.slab_floats, r.mc_panels);
    }
    CHECK(gemm_force_blocking(8, 0) == -1 && gemm_force_blocking(0, 100) == -1 && gemm_force_blocking(5000, 0) == -1,
          "out-of-range blocking refused");
}

// A forced kc reaches the products: K = 1000 summed in blocks of 40 differs (in rounding) from blocks of
// the CPU's kc, for every product.
static void test_blocking_applied(Rng *rng) {
    for (int product = 0; product < 3; product++) {
        Problem p = make(product, 30, 40, 1000, 0, 0, 0, rng);
        CHECK(gemm_force_blocking(0, 0) == 0, "caches' blocking");
        float *C1 = compute(&p, 2);
        CHECK(gemm_force_blocking(40, 0) == 0, "kc 40");
        float *C2 = compute(&p, 2);
        CHECK(memcmp(C1, C2, (size_t)p.c_len * sizeof(float)) != 0, "%s: kc 40 gives the same bits as kc %d",
              product_name[product], gemm_blocking_for(cpu_caches().l1d, cpu_caches().l2, 14).kc);
        free(C1); free(C2); release(&p);
    }
    gemm_force_blocking(0, 0);
}

// The pairwise tree over [l, r) as adds; apart: the root's add left out.
static void pair_tree(SumTree *t, int l, int r, int apart) {
    if (r - l == 1) return;
    int m = l + (r - l) / 2;
    pair_tree(t, l, m, 0);
    pair_tree(t, m, r, 0);
    if (!apart) { t->dst[t->nadd] = (unsigned char)l; t->src[t->nadd++] = (unsigned char)m; }
}

// gemm_tn_tree against its definition: each group's gemm_tn into its own buffer, then sumtree_apply.
// Odd sizes, N a multiple of 16 (B read in place) or not, ldb a multiple of 1024 floats (B packed),
// rows per group (Kg 613) past one k-block where kc is 384 or 576 (the avx512 path; one block on the
// others, kc 896-1024; with the small blocking many), 1, 2, 4
// and 8 groups, the whole tree scaled or the root's add apart; the live buffers bitwise, the other
// buffers' elements outside the product untouched; 1, 2 and 3 threads, alone and in team mode (at 2 and
// 3 threads the products that fit the threads' L2 go by groups, the others, and every product under the
// small blocking, by blocks).
static void test_tn_tree(const char *path, Rng *rng) {
    static const int shapes[][4] = {{37, 48, 29, 0}, {130, 33, 100, 0}, {61, 1024, 97, 1}, {300, 160, 613, 0},
                                    {14, 32, 1, 0}, {250, 96, 70, 0}};
    for (int s = 0; s < 6; s++) {
        if (san_plain_path() && (s == 1 || s == 3 || s == 5)) continue;   // the three largest
        for (int n = 1; n <= 8; n *= 2)
            for (int plan = 0; plan < 2; plan++) {
                int M = shapes[s][0], N = shapes[s][1], Kg = shapes[s][2], ldb = shapes[s][3] ? 1024 : N + (s & 1);
                int lda = M + (s % 3), ldc = N + (s & 1) * 5;
                SumTree t;
                memset(&t, 0, sizeof t);
                t.n = n;
                pair_tree(&t, 0, n, plan == 1 && n > 1);
                t.scale = plan == 0 ? 1.0f / (float)n : 1.0f;
                sumtree_finish(&t);
                long a_len = (long)n * Kg * lda, b_len = (long)n * Kg * ldb, c_len = (long)M * ldc;
                float *A = alloc_f(a_len), *B = alloc_f(b_len);
                for (long i = 0; i < a_len; i++) A[i] = rng_normal(rng, 0.0f, 1.0f);
                for (long i = 0; i < b_len; i++) B[i] = rng_normal(rng, 0.0f, 1.0f);
                float *want[8], *got[8], *sums[8], want_sums[8][300];   // M <= 300 in these shapes
                for (int g = 0; g < n; g++) {
                    want[g] = alloc_f(c_len);
                    for (long i = 0; i < c_len; i++) want[g][i] = -7.0f;
                    gemm_tn(M, N, Kg, A + (long)g * Kg * lda, lda, B + (long)g * Kg * ldb, ldb, want[g], ldc, 0);
                    for (int i = 0; i < M; i++) {   // the bias gradient's definition: one chain, ascending k
                        float acc = 0.0f;
                        for (int k = 0; k < Kg; k++) acc += A[((long)g * Kg + k) * lda + i];
                        want_sums[g][i] = acc;
                    }
                }
                for (int r = 0; r < M; r++) sumtree_apply(&t, want, (size_t)r * ldc, (size_t)N);
                for (int threads = 1; threads <= 3; threads++)
                    for (int team = 0; team < 2; team++) {
                        for (int g = 0; g < n; g++) {
                            got[g] = alloc_f(c_len);
                            for (long i = 0; i < c_len; i++) got[g][i] = -7.0f;
                            sums[g] = alloc_f(M);
                            for (int i = 0; i < M; i++) sums[g][i] = -7.0f;
                        }
                        // Every other round asks for the groups' sums over k too (gemm_tn_tree_sums).
                        int ask = (threads + team) & 1, summed = 0;
                        omp_set_num_threads(threads);
                        if (team) {
                            #pragma omp parallel
                            {
                                team_begin();
                                int r = ask ? gemm_tn_tree_sums(M, N, Kg, A, lda, B, ldb, got, ldc, &t, sums)
                                            : (gemm_tn_tree(M, N, Kg, A, lda, B, ldb, got, ldc, &t), 0);
                                #pragma omp single
                                summed = r;
                                team_end();
                            }
                        } else if (ask) {
                            summed = gemm_tn_tree_sums(M, N, Kg, A, lda, B, ldb, got, ldc, &t, sums);
                        } else {
                            gemm_tn_tree(M, N, Kg, A, lda, B, ldb, got, ldc, &t);
                        }
                        // Taken on every blocked path, by groups (2 or more threads, the products that fit
                        // the threads' L2) or by blocks (1 thread, and the small blocking's larger
                        // products: C split by rows, or by columns with one thread taking them); not on the
                        // ref path. Bitwise the definition's chains when taken, untouched when not.
                        int take = ask && gemm_path() != GEMM_PATH_REF, sums_ok = summed == take;
                        for (int g = 0; g < n; g++)
                            for (int i = 0; i < M; i++)
                                sums_ok &= summed ? !memcmp(&sums[g][i], &want_sums[g][i], sizeof(float))
                                                  : sums[g][i] == -7.0f;
                        CHECK(sums_ok,
                              "%s tn tree sums M=%d N=%d Kg=%d, %d groups, %d threads%s: returned %d (asked %d): %s",
                              path, M, N, Kg, n, threads, team ? " (team)" : "", summed, ask,
                              summed == take ? "sums differ from the columns' chains or were written"
                                             : "taken or not where it should not");
                        // On the blocked paths the other buffers are not written at all (their pages stay
                        // untouched: the memory that groups at once save); the ref path uses them as scratch.
                        int same = 1, pad = 1, blocked = gemm_path() != GEMM_PATH_REF;
                        for (int g = 0; g < n; g++)
                            for (int r = 0; r < M; r++)
                                for (int c = 0; c < ldc; c++) {
                                    long i = (long)r * ldc + c;
                                    if (c >= N || (blocked && !t.live[g])) pad &= got[g][i] == -7.0f;
                                    else if (t.live[g]) same &= !memcmp(&got[g][i], &want[g][i], sizeof(float));
                                }
                        CHECK(same && pad, "%s tn tree M=%d N=%d Kg=%d ldb=%d, %d groups (plan %d), %d threads%s: %s", path,
                              M, N, Kg, ldb, n, plan, threads, team ? " (team)" : "",
                              same ? "wrote outside its columns or into a buffer that is not live"
                                   : "live buffers differ from the groups' products summed");
                        for (int g = 0; g < n; g++) { free(got[g]); free(sums[g]); }
                    }
                omp_set_num_threads(omp_get_num_procs());
                for (int g = 0; g < n; g++) free(want[g]);
                free(A); free(B);
            }
    }
}

// The packing buffers are kept per thread and grown only for a larger request (kernels/gemm.h:
// gemm_pack_allocs): a second round of the same products, on 1 and 2 threads, every kind (B packed
// and in place, the tree of groups), allocates nothing; a larger product allocates again.
static void run_pack_round(const float *A, const float *B, float *C, float **Cg, const SumTree *t, int scale) {
    int M = 90 * scale, N = 70 * scale, K = 110 * scale;
    for (int th = 1; th <= 2; th++) {
        omp_set_num_threads(th);
        gemm_nt(M, N, K, A, K, B, K, C, N, NULL, 0);
        gemm_nn(M, N, K, A, K, B, N, C, N, 0);
        gemm_tn(M, N, K, A, M, B, N, C, N, 0);
        gemm_tn(M, N, K, A, M, B, 1024, C, N, 1);   // rows 4 KB apart: B packed
        gemm_tn_tree(M, N, K / 4, A, M, B, N, Cg, N, t);
    }
}

static void plain_tree(SumTree *t, int n) {   // n groups added pairwise, no scaling
    memset(t, 0, sizeof *t);
    t->n = n;
    pair_tree(t, 0, n, 0);
    t->scale = 1.0f;
    sumtree_finish(t);
}

static void test_pack_buffers(const char *path, Rng *rng) {
    long len = 9L << 19;
    float *A = alloc_f(len), *B = alloc_f(len), *C = alloc_f(len), *Cg[4];
    for (long i = 0; i < len; i++) { A[i] = rng_normal(rng, 0.0f, 1.0f); B[i] = rng_normal(rng, 0.0f, 1.0f); }
    for (int g = 0; g < 4; g++) Cg[g] = alloc_f(len / 4);
    SumTree t;
    plain_tree(&t, 4);
    run_pack_round(A, B, C, Cg, &t, 1);
    long a0 = gemm_pack_allocs();
    run_pack_round(A, B, C, Cg, &t, 1);
    long a1 = gemm_pack_allocs();
    CHECK(a1 == a0, "%s: the same products again allocated %ld packing buffers", path, a1 - a0);
    CHECK(a0 > 0, "%s: no packing buffer counted", path);
    // A larger one on each path (the buffers outlive a path): B's rows 4 KB apart, so B is packed and every
    // group's A is packed for all of the thread's rows, at least 8 x 1600 x K floats (3.07 M at the first
    // path's K of 240, more than any test before) and at most 8 x (1600 + MC - 1) x K rounded up to the
    // k-blocks. Each path's K is 1.2x the last one's: more than the rounding of the 1600 rows up to the
    // row blocks can make up (MC = mc_panels x MR: 112 on Zen 4 with AVX-512, 140 on a Xeon with 2 MiB of
    // L2; a K of 60 more on 400 rows was not, where the blocking follows Zen 4's caches).
    float *Cb[8];
    for (int g = 0; g < 8; g++) Cb[g] = alloc_f(1600 * 32);
    SumTree t8;
    plain_tree(&t8, 8);
    static int calls;
    int K = 240;
    for (int i = 0; i < calls; i++) K = K * 6 / 5;
    calls++;
    omp_set_num_threads(1);
    gemm_tn_tree(1600, 32, K, A, 1600, B, 1024, Cb, 32, &t8);
    CHECK(gemm_pack_allocs() > a1, "%s: a larger product allocated no larger buffer", path);
    omp_set_num_threads(2);
    free(A); free(B); free(C);
    for (int g = 0; g < 4; g++) free(Cg[g]);
    for (int g = 0; g < 8; g++) free(Cb[g]);
}

int main(void) {
    Rng rng;
    rng_seed(&rng, 7);
    CHECK(gemm_force_kernel("no-such-path") == -1, "unknown path refused");
    CHECK(gemm_force_kernel(NULL) == 0, "auto");
    const char *best = cpu_has_avx512() ? "avx512" : cpu_has_avx2_fma() ? "avx2" : "portable";
    CHECK(!strcmp(gemm_kernel_name(), best), "default path %s, want %s", gemm_kernel_name(), best);
    CHECK((gemm_force_kernel("avx512") == 0) == cpu_has_avx512(), "avx512 available iff CPU has it");
    CHECK((gemm_force_kernel("avx2") == 0) == cpu_has_avx2_fma(), "avx2 available iff CPU has it");

    static const char *const paths[] = {"avx512", "avx2", "portable", "ref"};
    for (int i = 0; i < 4; i++) {
        if (gemm_force_kernel(paths[i])) { printf("path %s: not on this CPU, skipped\n", paths[i]); continue; }
        CHECK(!strcmp(gemm_kernel_name(), paths[i]), "forced %s, got %s", paths[i], gemm_kernel_name());
        test_path(paths[i], &rng);
        test_threads(paths[i], &rng);
        test_weights(paths[i], &rng);
        test_weights_workers(paths[i], &rng);
        test_weight_copies(paths[i], &rng, 1100, 700);   // 3 MB: larger than L2 on the CPUs we run on
        test_weight_copies(paths[i], &rng, 70, 45);
        test_tn_b_bounds(paths[i], &rng);
        test_tn_tree(paths[i], &rng);
        test_tn_sums(paths[i], &rng);
        if (gemm_path() != GEMM_PATH_REF) test_split_k(paths[i], &rng);
        if (gemm_path() != GEMM_PATH_REF) test_tn_b_reread(paths[i], &rng);
        if (gemm_path() != GEMM_PATH_REF) test_pack_buffers(paths[i], &rng);
        printf("path %s: checked\n", paths[i]);
    }
    gemm_force_kernel(NULL);
    test_blocking_rules();
    gemm_force_kernel(NULL);
    if (gemm_path() != GEMM_PATH_REF) {
        // Everything again with k-blocks of 40 and 4 KB slabs of B: many blocks, slabs and edges.
        test_blocking_applied(&rng);
        CHECK(gemm_force_blocking(40, 1024) == 0, "small blocking");
        test_path("small blocking", &rng);
        test_threads("small blocking", &rng);
        test_weights("small blocking", &rng);
        test_weight_copies("small blocking", &rng, 70, 45);   // 4 KB slabs: "L2" is 8 KB
        test_tn_tree("small blocking", &rng);
        test_tn_sums("small blocking", &rng);
        gemm_force_blocking(0, 0);
        printf("small blocking (kc 40, slab 1024 floats): checked\n");
    }
    gemm_force_kernel(NULL);
    return check_done();
}
