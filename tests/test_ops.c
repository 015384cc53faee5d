// Fast layer kernels (ops_fast.c, adamw_update, the masking sort) against their plain references, on
// odd sizes (1, 7, 33, 129 ...) so vector tails are exercised; the approximate erf / exp against
// libm over a dense grid; 1 vs 2 threads bitwise for the fast kernels; team mode (kernels/team.h) bitwise
// the same as each kernel alone.
#include <omp.h>
#include <unistd.h>
#include "check.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "core/model.h"
#include "kernels/ops.h"
#include "core/optim.h"
#include "core/rng.h"
#include "kernels/droppath.h"
#include "kernels/team.h"

static float *randv(Rng *r, long n, float scale) {
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (long i = 0; i < n; i++) x[i] = rng_normal(r, 0.0f, scale);
    return x;
}

static float *copyv(const float *x, long n) {
    float *y = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    memcpy(y, x, (size_t)n * sizeof(float));
    return y;
}

// max |a - b| / (atol + rtol |b|) over n values; <= 1 means within tolerance.
static double worst(const float *a, const float *b, long n, double atol, double rtol) {
    double w = 0.0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (atol + rtol * fabs(b[i]));
        if (!(d <= w)) w = d;   // NaN sticks
    }
    return w;
}

static int same(const float *a, const float *b, long n) { return memcmp(a, b, (size_t)n * sizeof(float)) == 0; }

// n NaNs: what a gradient buffer that is set, never read, may hold before (kernels/ops.h, param_acc 0).
static float *nanv(long n) {
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (long i = 0; i < n; i++) x[i] = NAN;
    return x;
}

static void test_erf_exp(void) {
    long n = 2400001;   // [-12, 12] in steps of 1e-5
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    for (long i = 0; i < n; i++) x[i] = -12.0f + 1e-5f * (float)i;
    x[n / 2] = 0.0f;
    erf_approx_array(y, x, n);
    double maxerr = 0.0;
    for (long i = 0; i < n; i++) {
        double e = fabs((double)y[i] - erff(x[i]));
        if (!(e <= maxerr)) maxerr = e;
    }
    printf("erf_approx: max |err| vs erff on [-12, 12] = %.3g (bound %.3g)\n", maxerr, (double)ERF_APPROX_MAX_ERR);
    CHECK(maxerr <= ERF_APPROX_MAX_ERR, "erf max error %.3g", maxerr);
    float big[4] = {30.0f, -30.0f, INFINITY, -INFINITY}, out[4];
    erf_approx_array(out, big, 4);
    CHECK(out[0] == 1.0f && out[1] == -1.0f && out[2] == 1.0f && out[3] == -1.0f, "erf tails %g %g", out[0], out[1]);
    // exp on [-87, 88]: relative error.
    long m = 1750001;
    for (long i = 0; i < m; i++) x[i] = -87.0f + 1e-4f * (float)i;
    exp_approx_array(y, x, m);
    double maxrel = 0.0;
    for (long i = 0; i < m; i++) {
        double want = exp((double)x[i]), e = fabs(y[i] - want) / want;
        if (!(e <= maxrel)) maxrel = e;
    }
    printf("exp_approx: max rel err on [-87, 88] = %.3g\n", maxrel);
    CHECK(maxrel < 4e-7, "exp max rel error %.3g", maxrel);
    free(x); free(y);
}

// gelu_forward_dgelu: the GELU close to the reference, and the gelu'(x) it leaves in x's place close to
// the reference derivative and bitwise what gelu_backward_set multiplies dout by.
static void test_gelu(Rng *r) {
    long sizes[] = {1, 7, 33, 129, 1000};
    for (int si = 0; si < 5; si++) {
        long n = sizes[si];
        float *x = randv(r, n, 3.0f), *dy = randv(r, n, 1.0f), *xd = copyv(x, n);
        float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
        gelu_forward_dgelu(a, xd, n);
        gelu_forward_ref(b, x, n);
        // |gelu error| <= |x| / 2 * erf error + float rounding
        CHECK(worst(a, b, n, 2e-6, 2e-6) <= 1.0, "gelu_forward_dgelu n=%ld: %.3g", n, worst(a, b, n, 2e-6, 2e-6));
        float *g0 = randv(r, n, 1.0f), *g1 = copyv(g0, n);
        gelu_backward(g0, x, dy, n);
        gelu_backward_ref(g1, x, dy, n);
        CHECK(worst(g0, g1, n, 2e-6, 2e-6) <= 1.0, "gelu_backward n=%ld: %.3g", n, worst(g0, g1, n, 2e-6, 2e-6));
        memset(g1, 0, n * sizeof(float));
        gelu_backward_ref(g1, x, dy, n);
        gelu_backward_set(g0, x, dy, n);
        CHECK(worst(g0, g1, n, 2e-6, 2e-6) <= 1.0, "gelu_backward_set n=%ld", n);
        for (long i = 0; i < n; i++) a[i] = dy[i] * xd[i];
        CHECK(same(a, g0, n), "gelu_forward_dgelu n=%ld: dout * its gelu' = gelu_backward_set, bitwise", n);
        for (long i = 0; i < n; i++) b[i] = 1.0f;
        memset(g1, 0, n * sizeof(float));
        gelu_backward_ref(g1, x, b, n);
        CHECK(worst(xd, g1, n, 2e-6, 2e-6) <= 1.0, "gelu_forward_dgelu n=%ld: gelu' vs reference", n);
        free(x); free(dy); free(xd); free(a); free(b); free(g0); free(g1);
    }
}

// The fused GELU backward + bias column sums, from the gelu' gelu_forward_dgelu leaves: dinp bitwise
// gelu_backward_set on x; dbias bitwise the sum
// in the documented order (kernels/gelu.h: rows within chunks of GELU_CHUNK_ROWS, then the chunks, each
// in ascending order), written here as plain loops, and close to the reference column sums.
static void test_gelu_colsum(Rng *r) {
    int Ns[] = {1, 7, 33, 100}, Cs[] = {1, 7, 64, 129};
    for (int ni = 0; ni < 4; ni++)
        for (int ci = 0; ci < 4; ci++) {
            int N = Ns[ni], C = Cs[ci];
            long n = (long)N * C;
            float *x = randv(r, n, 2.0f), *dy = randv(r, n, 1.0f), *g0 = randv(r, n, 1.0f), *g1 = malloc(n * 4);
            float *b0 = randv(r, C, 1.0f), *b1 = copyv(b0, C), *b2 = copyv(b0, C), *xd = copyv(x, n);
            float *part = malloc((size_t)gelu_colsum_scratch(N, C) * 4), *o = malloc(n * 4);
            gelu_forward_dgelu(o, xd, n);
            gelu_backward_set_colsum(g0, b0, part, xd, dy, N, C, 1);
            gelu_backward_set(g1, x, dy, n);
            // bias_acc 0: the bias gradient set over NaNs, bitwise the sums added into zeros.
            float *bset = nanv(C), *bzero = calloc(C, 4), *gs = malloc(n * 4);
            gelu_backward_set_colsum(gs, bset, part, xd, dy, N, C, 0);
            gelu_backward_set_colsum(gs, bzero, part, xd, dy, N, C, 1);
            CHECK(same(bset, bzero, C), "gelu_backward_set_colsum N=%d C=%d: bias set = added into zeros", N, C);
            // In place (dinp = dout, as the step takes it): the same bits.
            memcpy(gs, dy, (size_t)n * 4);
            gelu_backward_set_colsum(gs, bzero, part, xd, gs, N, C, 0);
            CHECK(same(gs, g1, n) && same(bzero, bset, C), "gelu_backward_set_colsum N=%d C=%d: in place", N, C);
            free(bset); free(bzero); free(gs);
            for (int j = 0; j < C; j++) {
                float tot = 0.0f;
                for (int c0 = 0; c0 < N; c0 += GELU_CHUNK_ROWS) {
                    float s = 0.0f;
                    for (int i = c0; i < N && i < c0 + GELU_CHUNK_ROWS; i++) s += g1[(long)i * C + j];
                    tot += s;
                }
                b1[j] += tot;
            }
            column_sum_accumulate_ref(b2, g1, N, C);
            CHECK(same(g0, g1, n) && same(b0, b1, C), "gelu_backward_set_colsum N=%d C=%d", N, C);
            CHECK(worst(b0, b2, C, 1e-5, 1e-5) <= 1.0, "gelu_backward_set_colsum bias vs reference N=%d C=%d", N, C);
            free(x); free(dy); free(g0); free(g1); free(b0); free(b1); free(b2); free(part); free(xd); free(o);
        }
}

// The vector GELU passes (x86/gelu_avx512.c, x86/gelu_avx2.c) against the portable loops: bitwise,
// forward and the backward with its column sums, on odd sizes (vector tails) and with the special values
// among the inputs (NaN, infinities, signed zeros, the exp clamp's edge |x| ~ 13.19, huge and tiny
// values). Each path this CPU has (an AVX-512 CPU has both).
static void test_gelu_vector(Rng *r) {
    const char *paths[] = {"avx512", "avx2"};
    const int has[] = {cpu_has_avx512(), cpu_has_avx2_fma()};
    const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 13.19f, -13.19f, 13.2f, -13.2f, 1e30f,
                             -1e30f, 1e-30f, -1e-30f, 1e-45f, 5.0f, -5.0f, 0.5f, -0.5f};
    int Ns[] = {1, 7, 9, 17, 100}, Cs[] = {1, 7, 8, 16, 33, 129, 768};
    for (int pi = 0; pi < (int)(sizeof paths / sizeof paths[0]); pi++) {
        if (!has[pi]) {
            printf("gelu %s vs portable: skipped (this CPU lacks it)\n", paths[pi]);
            continue;
        }
        for (int ni = 0; ni < (int)(sizeof Ns / sizeof Ns[0]); ni++)
            for (int ci = 0; ci < (int)(sizeof Cs / sizeof Cs[0]); ci++) {
                int N = Ns[ni], C = Cs[ci];
                long n = (long)N * C;
                float *x = randv(r, n, 3.0f), *dy = randv(r, n, 1.0f);
                for (long i = 0; i < n; i += 5) x[i] = special[(i / 5) % (long)(sizeof special / sizeof special[0])];
                float *o[2], *d[2], *g[2], *b[2], *part = malloc((size_t)gelu_colsum_scratch(N, C) * 4);
                for (int p = 0; p < 2; p++) {
                    CHECK(gemm_force_kernel(p == 0 ? "portable" : paths[pi]) == 0, "gemm path %d", p);
                    o[p] = nanv(n); d[p] = copyv(x, n); g[p] = nanv(n); b[p] = calloc((size_t)C, sizeof(float));
                    gelu_forward_dgelu(o[p], d[p], n);
                    gelu_backward_set_colsum(g[p], b[p], part, d[p], dy, N, C, 1);
                }
                gemm_force_kernel(NULL);
                CHECK(same(o[0], o[1], n) && same(d[0], d[1], n), "gelu_forward_dgelu %s = portable, bitwise, n=%ld",
                      paths[pi], n);
                CHECK(same(g[0], g[1], n) && same(b[0], b[1], C),
                      "gelu_backward_set_colsum %s = portable, bitwise, N=%d C=%d", paths[pi], N, C);
                free(x); free(dy); free(part);
                for (int p = 0; p < 2; p++) { free(o[p]); free(d[p]); free(g[p]); free(b[p]); }
            }
    }
}

static void test_layernorm(Rng *r) {
    int Ns[] = {1, 7, 33}, Cs[] = {1, 7, 33, 129, 192};
    for (int ni = 0; ni < 3; ni++)
        for (int ci = 0; ci < 5; ci++) {
            int N = Ns[ni], C = Cs[ci];
            long NC = (long)N * C;
            float *x = randv(r, NC, 2.0f), *w = randv(r, C, 1.0f), *bb = randv(r, C, 1.0f), *dy = randv(r, NC, 1.0f);
            for (long i = 0; i < NC; i++) x[i] += 0.5f;   // a non-zero mean
            float *o0 = malloc(NC * 4), *o1 = malloc(NC * 4), *m0 = malloc(N * 4), *m1 = malloc(N * 4);
            float *s0 = malloc(N * 4), *s1 = malloc(N * 4);
            layernorm_forward(o0, m0, s0, x, w, bb, N, C, 1e-6f);
            layernorm_forward_ref(o1, m1, s1, x, w, bb, N, C, 1e-6f);
            CHECK(worst(o0, o1, NC, 1e-5, 1e-5) <= 1.0, "layernorm_forward N=%d C=%d", N, C);
            CHECK(worst(m0, m1, N, 1e-6, 1e-5) <= 1.0, "layernorm mean N=%d C=%d", N, C);
            CHECK(worst(s0, s1, N, 1e-6, 1e-5) <= 1.0, "layernorm rstd N=%d C=%d", N, C);
            float *dx0 = randv(r, NC, 1.0f), *dx1 = copyv(dx0, NC);
            float *dw0 = randv(r, C, 1.0f), *dw1 = copyv(dw0, C), *db0 = randv(r, C, 1.0f), *db1 = copyv(db0, C);
            // param_acc 0 first: dweight / dbias set over NaNs, bitwise what adding into zeros gives.
            float *dxs = copyv(dx0, NC), *dws = nanv(C), *dbs = nanv(C), *dwz = calloc(C, 4), *dbz = calloc(C, 4);
            float *dxz = copyv(dx0, NC);
            layernorm_backward(dxs, dws, dbs, dy, x, w, m1, s1, N, C, 0);
            layernorm_backward(dxz, dwz, dbz, dy, x, w, m1, s1, N, C, 1);
            CHECK(same(dxs, dxz, NC) && same(dws, dwz, C) && same(dbs, dbz, C),
                  "layernorm_backward N=%d C=%d: parameter gradients set = added into zeros", N, C);
            free(dxs); free(dws); free(dbs); free(dwz); free(dbz); free(dxz);
            layernorm_backward(dx0, dw0, db0, dy, x, w, m1, s1, N, C, 1);
            layernorm_backward_ref(dx1, dw1, db1, dy, x, w, m1, s1, N, C);
            CHECK(worst(dx0, dx1, NC, 1e-5, 1e-5) <= 1.0, "layernorm_backward dx N=%d C=%d: %.3g", N, C,
                  worst(dx0, dx1, NC, 1e-5, 1e-5));
            // Same per-column order as the reference: bitwise equal.
            CHECK(same(dw0, dw1, C) && same(db0, db1, C), "layernorm_backward dweight/dbias N=%d C=%d", N, C);
            free(x); free(w); free(bb); free(dy); free(o0); free(o1); free(m0); free(m1); free(s0); free(s1);
            free(dx0); free(dx1); free(dw0); free(dw1); free(db0); free(db1);
        }
}

// The LayerNorm backward hands each column block's parameter-gradient chains from thread to thread
// (kernels/team.h, team_chain_*): at 1 to 5 threads and at 66 (past TEAM_CHAIN_THREADS: 64 take part),
// alone and in team mode, with fewer rows than threads and with C past the slots' size (then thread
// 0 alone), dweight / dbias equal the reference bitwise, added and set, and dx equals the one-thread
// result bitwise. Two calls in a row on
// different gradients: a flag left set by the first would let the second read stale chains.
static void test_layernorm_threads(Rng *r) {
    int sizes[][2] = {{1, 33}, {2, 7}, {3, 192}, {7, 129}, {33, 1}, {100, 768}, {13, 4097}};   // N, C
    int saved = omp_get_max_threads();
    for (int si = 0; si < 7; si++) {
        int N = sizes[si][0], C = sizes[si][1];
        long NC = (long)N * C;
        float *x = randv(r, NC, 2.0f), *w = randv(r, C, 1.0f), *bb = randv(r, C, 1.0f);
        float *dy = randv(r, NC, 1.0f), *dy2 = randv(r, NC, 1.0f);
        float *m = malloc(N * 4), *s = malloc(N * 4), *o = malloc(NC * 4);
        layernorm_forward_ref(o, m, s, x, w, bb, N, C, 1e-6f);
        float *dx0 = randv(r, NC, 1.0f), *dw0 = randv(r, C, 1.0f), *db0 = randv(r, C, 1.0f);
        float *edw = copyv(dw0, C), *edb = copyv(db0, C), *rdx = copyv(dx0, NC);
        float *zw = calloc(C, 4), *zb = calloc(C, 4);   // the reference's sums alone for dy2 (added into zeros)
        layernorm_backward_ref(rdx, edw, edb, dy, x, w, m, s, N, C);
        layernorm_backward_ref(rdx, zw, zb, dy2, x, w, m, s, N, C);
        // dx at 1 thread, for dy and dy2: what every thread count must give.
        float *edx = copyv(dx0, NC), *edx2 = copyv(dx0, NC), *tw = calloc(C, 4), *tb = calloc(C, 4);
        omp_set_num_threads(1);
        layernorm_backward(edx, tw, tb, dy, x, w, m, s, N, C, 1);
        layernorm_backward(edx2, tw, tb, dy2, x, w, m, s, N, C, 1);
        free(tw); free(tb);
        for (int ti = 0; ti < 6; ti++)
            for (int team = 0; team < 2; team++) {
                int threads = (int[]){1, 2, 3, 4, 5, 66}[ti];
                float *dx = copyv(dx0, NC), *dw = copyv(dw0, C), *db = copyv(db0, C), *sw = nanv(C), *sb = nanv(C);
                float *dxs = copyv(dx0, NC);
                omp_set_num_threads(threads);
                #pragma omp parallel if (team)
                {
                    if (team) team_begin();
                    layernorm_backward(dx, dw, db, dy, x, w, m, s, N, C, 1);
                    layernorm_backward(dxs, sw, sb, dy2, x, w, m, s, N, C, 0);
                    if (team) team_end();
                }
                CHECK(same(dw, edw, C) && same(db, edb, C),
                      "layernorm_backward %d threads%s N=%d C=%d: dweight / dbias added = the reference, bitwise",
                      threads, team ? " (team)" : "", N, C);
                CHECK(same(sw, zw, C) && same(sb, zb, C),
                      "layernorm_backward %d threads%s N=%d C=%d: dweight / dbias set = the reference's sums, bitwise",
                      threads, team ? " (team)" : "", N, C);
                CHECK(same(dx, edx, NC) && same(dxs, edx2, NC),
                      "layernorm_backward %d threads%s N=%d C=%d: dx = at 1 thread, bitwise", threads,
                      team ? " (team)" : "", N, C);
                free(dx); free(dw); free(db); free(sw); free(sb); free(dxs);
            }
        omp_set_num_threads(saved);
        free(x); free(w); free(bb); free(dy); free(dy2); free(m); free(s); free(o); free(dx0); free(dw0); free(db0);
        free(edx); free(edx2); free(edw); free(edb); free(rdx); free(zw); free(zb);
    }
}

// layernorm_backward_by_groups: n groups of `rows` rows, each group's dweight / dbias bitwise the
// reference's chains over that group's rows alone (added onto what the buffer held, and set over NaN),
// never another group's rows; dx bitwise the one-thread layernorm_backward over all rows. At 1 to 5
// threads, alone and in team mode, so that both the path where every thread takes whole groups (the
// threads divide n) and the fallback of n calls run; n = 1 and rows = 1 among the sizes.
static void test_layernorm_groups(Rng *r) {
    int sizes[][3] = {{4, 17, 192}, {2, 7, 33}, {6, 1, 129}, {1, 13, 7}, {8, 5, 4097}, {3, 9, 40}};   // n, rows, C
    int saved = omp_get_max_threads();
    for (int si = 0; si < 6; si++) {
        int n = sizes[si][0], rows = sizes[si][1], C = sizes[si][2], N = n * rows;
        long NC = (long)N * C, nC = (long)n * C;
        float *x = randv(r, NC, 2.0f), *w = randv(r, C, 1.0f), *bb = randv(r, C, 1.0f), *dy = randv(r, NC, 1.0f);
        float *m = malloc(N * 4), *s = malloc(N * 4), *o = malloc(NC * 4);
        layernorm_forward_ref(o, m, s, x, w, bb, N, C, 1e-6f);
        float *dx0 = randv(r, NC, 1.0f), *pw0 = randv(r, nC, 1.0f), *pb0 = randv(r, nC, 1.0f);
        // The expected gradients: group g's rows alone through the reference, added onto pw0 / pb0, and
        // into zeros (what a set must store).
        float *ew = copyv(pw0, nC), *eb = copyv(pb0, nC), *zw = calloc(nC, 4), *zb = calloc(nC, 4);
        float *scratch = copyv(dx0, NC);
        for (int g = 0; g < n; g++) {
            long r0 = (long)g * rows;
            layernorm_backward_ref(scratch + r0 * C, ew + g * C, eb + g * C, dy + r0 * C, x + r0 * C, w, m + r0,
                                   s + r0, rows, C);
            layernorm_backward_ref(scratch + r0 * C, zw + g * C, zb + g * C, dy + r0 * C, x + r0 * C, w, m + r0,
                                   s + r0, rows, C);
        }
        float *edx = copyv(dx0, NC), *tw = calloc(C, 4), *tb = calloc(C, 4);
        omp_set_num_threads(1);
        layernorm_backward(edx, tw, tb, dy, x, w, m, s, N, C, 1);
        for (int threads = 1; threads <= 5; threads++)
            for (int team = 0; team < 2; team++)
                for (int acc = 0; acc < 2; acc++) {
                    float *dx = copyv(dx0, NC), *pw = acc ? copyv(pw0, nC) : nanv(nC), *pb = acc ? copyv(pb0, nC) : nanv(nC);
                    float *pwg[16], *pbg[16];
                    for (int g = 0; g < n; g++) { pwg[g] = pw + g * C; pbg[g] = pb + g * C; }
                    omp_set_num_threads(threads);
                    #pragma omp parallel if (team)
                    {
                        if (team) team_begin();
                        layernorm_backward_by_groups(dx, pwg, pbg, dy, x, w, m, s, n, rows, C, acc);
                        if (team) team_end();
                    }
                    CHECK(same(pw, acc ? ew : zw, nC) && same(pb, acc ? eb : zb, nC),
                          "layernorm_backward_by_groups %d threads%s n=%d rows=%d C=%d %s: each group's dweight / "
                          "dbias = the reference's chains over its rows, bitwise", threads, team ? " (team)" : "", n,
                          rows, C, acc ? "added" : "set");
                    CHECK(same(dx, edx, NC), "layernorm_backward_by_groups %d threads%s n=%d rows=%d C=%d: dx = "
                          "layernorm_backward at 1 thread, bitwise", threads, team ? " (team)" : "", n, rows, C);
                    free(dx); free(pw); free(pb);
                }
        omp_set_num_threads(saved);
        free(x); free(w); free(bb); free(dy); free(m); free(s); free(o); free(dx0); free(pw0); free(pb0);
        free(ew); free(eb); free(zw); free(zb); free(scratch); free(edx); free(tw); free(tb);
    }
}

// The fast LayerNorm's sums over a row, written out here from their definition (kernels/vecmath.h):
// 16 lanes, lane j adds elements j, j + 16, ... in ascending order, then the lanes meet in a fixed tree
// ((a0 + a8) + (a4 + a12)) + ... So the fast kernels must equal this bitwise, whatever vectors they use.
static float lane_tree_sum(const float *v, int C) {
    float a[16] = {0}, s8[8], s4[4];
    for (int i = 0; i < C; i++) a[i % 16] += v[i];
    for (int j = 0; j < 8; j++) s8[j] = a[j] + a[j + 8];
    for (int j = 0; j < 4; j++) s4[j] = s8[j] + s8[j + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

static void test_layernorm_lanes(Rng *r) {
    int Cs[] = {1, 5, 15, 16, 17, 32, 40, 129, 192};
    for (int ci = 0; ci < 9; ci++) {
        int N = 3, C = Cs[ci];
        long NC = (long)N * C;
        float *x = randv(r, NC, 2.0f), *w = randv(r, C, 1.0f), *bb = randv(r, C, 1.0f), *dy = randv(r, NC, 1.0f);
        float *o = malloc(NC * 4), *m = malloc(N * 4), *s = malloc(N * 4), *dx = randv(r, NC, 1.0f);
        float *dw = calloc(C, 4), *db = calloc(C, 4);
        float *eo = malloc(NC * 4), *edx = copyv(dx, NC), *t = malloc(C * 4), *u = malloc(C * 4);
        layernorm_forward(o, m, s, x, w, bb, N, C, 1e-6f);
        layernorm_backward(dx, dw, db, dy, x, w, m, s, N, C, 1);
        int ok_fwd = 1, ok_bwd = 1;
        for (int n = 0; n < N; n++) {
            const float *xr = x + (long)n * C, *dyr = dy + (long)n * C;
            float mean = lane_tree_sum(xr, C) / (float)C;
            for (int i = 0; i < C; i++) t[i] = (xr[i] - mean) * (xr[i] - mean);
            float rstd = 1.0f / sqrtf(lane_tree_sum(t, C) / (float)C + 1e-6f);
            for (int i = 0; i < C; i++) eo[(long)n * C + i] = (xr[i] - mean) * rstd * w[i] + bb[i];
            ok_fwd &= mean == m[n] && rstd == s[n];
            for (int i = 0; i < C; i++) {
                t[i] = dyr[i] * w[i];
                u[i] = t[i] * ((xr[i] - mean) * rstd);
            }
            float gmean = lane_tree_sum(t, C) / (float)C, gxmean = lane_tree_sum(u, C) / (float)C;
            for (int i = 0; i < C; i++) {
                float xhat = (xr[i] - mean) * rstd;
                edx[(long)n * C + i] += rstd * (dyr[i] * w[i] - gmean - xhat * gxmean);
            }
        }
        ok_fwd &= same(o, eo, NC);
        ok_bwd &= same(dx, edx, NC);
        CHECK(ok_fwd, "layernorm_forward C=%d: the lane-order sums of its definition, bitwise", C);
        CHECK(ok_bwd, "layernorm_backward dx C=%d: the lane-order sums of its definition, bitwise", C);
        free(x); free(w); free(bb); free(dy); free(o); free(m); free(s); free(dx); free(dw); free(db);
        free(eo); free(edx); free(t); free(u);
    }
}

static void test_column_sum(Rng *r) {
    int Ns[] = {1, 7, 33, 129}, OCs[] = {1, 7, 33, 48, 129, 192};
    for (int ni = 0; ni < 4; ni++)
        for (int oi = 0; oi < 6; oi++) {
            int N = Ns[ni], OC = OCs[oi];
            float *d = randv(r, (long)N * OC, 1.0f), *a = randv(r, OC, 1.0f), *b = copyv(a, OC);
            column_sum(a, d, N, OC, 1);
            column_sum_accumulate_ref(b, d, N, OC);
            CHECK(same(a, b, OC), "column_sum N=%d OC=%d", N, OC);
            float *s = nanv(OC), *z = calloc(OC, 4);
            column_sum(s, d, N, OC, 0);
            column_sum(z, d, N, OC, 1);
            CHECK(same(s, z, OC), "column_sum N=%d OC=%d: set = added into zeros", N, OC);
            free(d); free(a); free(b); free(s); free(z);
        }
}

// linear_backward_params: the bias gradient (taken inside the weight gradient's product where it can,
// kernels/gemm.h: gemm_tn_sums) bitwise column_sum's, the weight gradient bitwise gemm_tn's; set and
// accumulated, at 1, 2 and 3 threads, alone and in team mode. 1040 rows are split along k at 2 threads
// where they make 2 k-blocks (the bias then by column_sum), 272 and 33 are not.
// column_sum carries each column block's chains from thread to thread (kernels/team.h): at 1 to 5
// threads and at 66 (past TEAM_CHAIN_THREADS), alone and in team mode, with fewer rows than threads
// and with more columns than a slot holds (then thread 0 alone), two calls in a row on different rows
// (added, then set) equal the reference bitwise.
static void test_column_sum_threads(Rng *r) {
    int sizes[][2] = {{1, 33}, {2, 7}, {3, 192}, {7, 129}, {129, 1}, {272, 576}, {13, 8193}};   // N, OC
    int saved = omp_get_max_threads();
    for (int si = 0; si < 7; si++) {
        int N = sizes[si][0], OC = sizes[si][1];
        float *d = randv(r, (long)N * OC, 1.0f), *d2 = randv(r, (long)N * OC, 1.0f), *a0 = randv(r, OC, 1.0f);
        float *ea = copyv(a0, OC), *es = calloc(OC, 4);
        column_sum_accumulate_ref(ea, d, N, OC);
        column_sum_accumulate_ref(es, d2, N, OC);
        for (int ti = 0; ti < 6; ti++)
            for (int team = 0; team < 2; team++) {
                int threads = (int[]){1, 2, 3, 4, 5, 66}[ti];
                float *a = copyv(a0, OC), *sset = nanv(OC);
                omp_set_num_threads(threads);
                #pragma omp parallel if (team)
                {
                    if (team) team_begin();
                    column_sum(a, d, N, OC, 1);
                    column_sum(sset, d2, N, OC, 0);
                    if (team) team_end();
                }
                CHECK(same(a, ea, OC) && same(sset, es, OC),
                      "column_sum %d threads%s N=%d OC=%d: added and set = the reference, bitwise", threads,
                      team ? " (team)" : "", N, OC);
                free(a); free(sset);
            }
        omp_set_num_threads(saved);
        free(d); free(d2); free(a0); free(ea); free(es);
    }
}

static void test_linear_params(Rng *r) {
    int shapes[][3] = {{272, 192, 576}, {1040, 128, 384}, {33, 7, 129}};   // N, C, OC
    for (int si = 0; si < 3; si++)
        for (int acc = 0; acc < 2; acc++) {
            int N = shapes[si][0], C = shapes[si][1], OC = shapes[si][2];
            float *dout = randv(r, (long)N * OC, 1.0f), *inp = randv(r, (long)N * C, 1.0f);
            float *dw0 = randv(r, (long)OC * C, 1.0f), *db0 = randv(r, OC, 1.0f);
            float *want_w = copyv(dw0, (long)OC * C), *want_b = copyv(db0, OC);
            omp_set_num_threads(1);
            gemm_tn(OC, C, N, dout, OC, inp, C, want_w, C, acc);
            column_sum(want_b, dout, N, OC, acc);
            for (int threads = 1; threads <= 3; threads++)
                for (int team = 0; team < 2; team++) {
                    float *dw = copyv(dw0, (long)OC * C), *db = copyv(db0, OC);
                    omp_set_num_threads(threads);
                    if (team) {
                        #pragma omp parallel num_threads(threads)
                        {
                            team_begin();
                            linear_backward_params(dw, db, dout, inp, N, C, OC, acc);
                            team_end();
                        }
                    } else {
                        linear_backward_params(dw, db, dout, inp, N, C, OC, acc);
                    }
                    CHECK(same(dw, want_w, (long)OC * C) && same(db, want_b, OC),
                          "linear_backward_params N=%d C=%d OC=%d acc=%d, %d threads%s: weight %s, bias %s", N, C, OC,
                          acc, threads, team ? " (team)" : "", same(dw, want_w, (long)OC * C) ? "same" : "differs",
                          same(db, want_b, OC) ? "same" : "differs");
                    free(dw); free(db);
                }
            omp_set_num_threads(2);
            free(dout); free(inp); free(dw0); free(db0); free(want_w); free(want_b);
        }
}

// The attention of some query rows only (attention_forward_rows / attention_backward_rows_set: the MAE
// decoder's last block in training) on the path chosen: Tq = T - T / 4 rows of each image, picked at
// random, ascending. Each query row's output and map are bitwise the full attention's rows; dk and dv
// are bitwise the full backward's with dout zero at the other rows, dq its rows at the queries; the
// backward leaves dqkv's q part as it was.
static void test_attention_rows(Rng *r, int B, int T, int C, int NH, const float *qkv, const float *dout,
                                float *scratch) {
    int Tq = T - T / 4, C3 = 3 * C, *rows = malloc(sizeof(int) * (size_t)B * Tq);
    int *pick = malloc(sizeof(int) * (size_t)T);
    for (int b = 0; b < B; b++) {   // Tq of the T rows: a partial shuffle, then in ascending order
        for (int t = 0; t < T; t++) pick[t] = t;
        for (int i = 0; i < Tq; i++) {
            int j = i + (int)(rng_uniform(r) * (float)(T - i)), x = pick[i];
            if (j >= T) j = T - 1;
            pick[i] = pick[j]; pick[j] = x;
        }
        for (int i = 0, n = 0; i < T; i++)
            for (int k = 0; k < Tq; k++)
                if (pick[k] == i) rows[b * Tq + n++] = i;
    }
    long no = (long)B * T * C, na = (long)B * NH * T * T, nq = 3 * no, nr = (long)B * Tq * C;
    float *o = malloc(no * 4), *a = malloc(na * 4), *d = malloc(nq * 4), *da = malloc(na * 4);
    float *q = malloc(nr * 4), *or = malloc(nr * 4), *ar = malloc((long)B * NH * Tq * T * 4), *dor = malloc(nr * 4);
    float *dq = randv(r, nr, 1e3f), *dr = randv(r, nq, 1e3f), *dr0 = copyv(dr, nq), *dz = calloc((size_t)no, 4);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < Tq; i++) {
            long t = (long)b * T + rows[b * Tq + i], k = (long)b * Tq + i;
            memcpy(q + k * C, qkv + t * C3, (size_t)C * 4);
            memcpy(dor + k * C, dout + t * C, (size_t)C * 4);
            memcpy(dz + t * C, dout + t * C, (size_t)C * 4);
        }
    attention_forward(o, a, qkv, scratch, B, T, C, NH);
    attention_forward_rows(or, ar, q, qkv, scratch, B, Tq, T, C, NH);
    attention_backward_set(d, da, dz, qkv, a, scratch, B, T, C, NH);
    attention_backward_rows_set(dq, dr, da, dor, q, qkv, ar, scratch, B, Tq, T, C, NH);
    int out_ok = 1, att_ok = 1, dq_ok = 1, dkv_ok = 1, q_kept = 1;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < Tq; i++) {
            long t = (long)b * T + rows[b * Tq + i], k = (long)b * Tq + i;
            out_ok &= same(or + k * C, o + t * C, C);
            dq_ok &= same(dq + k * C, d + t * C3, C);
            for (int h = 0; h < NH; h++)
                att_ok &= same(ar + (((long)b * NH + h) * Tq + i) * T, a + (((long)b * NH + h) * T + t % T) * T, T);
        }
    for (long t = 0; t < (long)B * T; t++) {
        dkv_ok &= same(dr + t * C3 + C, d + t * C3 + C, 2 * C);
        q_kept &= same(dr + t * C3, dr0 + t * C3, C);
    }
    CHECK(out_ok && att_ok, "attention_forward_rows %s T=%d Tq=%d C=%d NH=%d: out %s, att %s", gemm_kernel_name(), T,
          Tq, C, NH, out_ok ? "same" : "differs", att_ok ? "same" : "differs");
    CHECK(dq_ok && dkv_ok && q_kept, "attention_backward_rows_set %s T=%d Tq=%d C=%d NH=%d: dq %s, dk dv %s, q part %s",
          gemm_kernel_name(), T, Tq, C, NH, dq_ok ? "same" : "differs", dkv_ok ? "same" : "differ",
          q_kept ? "kept" : "written");
    free(rows); free(pick); free(o); free(a); free(d); free(da); free(q); free(or); free(ar); free(dor); free(dq); free(dr);
    free(dr0); free(dz);
}

// The fast attention on every path this CPU has: AVX-512 (gemm path "avx512"), AVX2 ("avx2", which an
// AVX-512 CPU has too) and portable C.
static void test_attention(Rng *r) {
    const char *paths[] = {"avx512", "avx2", "portable"};
    // Rows of up to 80 (AVX-512) or 40 (AVX2) take the fused product-and-softmax tiles, 81 or 41 the
    // product stored and the row passes (kernels/x86/attention_avx512.c, attention_avx2.c).
    int Ts[] = {1, 7, 8, 17, 33, 40, 41, 65, 80, 81};
    int shapes[][2] = {{12, 3}, {33, 3}, {64, 2}, {192, 3}, {140, 2}};   // C, NH: hd 4, 11, 32, 64, 70
    for (int pi = 0; pi < (int)(sizeof paths / sizeof paths[0]); pi++)
    for (int ti = 0; ti < (int)(sizeof Ts / sizeof Ts[0]); ti++)
        for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++) {
            if (gemm_force_kernel(paths[pi]) != 0) {   // this CPU lacks the path
                if (ti == 0 && si == 0) printf("attention %s: skipped (this CPU lacks it)\n", paths[pi]);
                continue;
            }
            int B = 2, T = Ts[ti], C = shapes[si][0], NH = shapes[si][1];
            long nq = (long)B * T * 3 * C, no = (long)B * T * C, na = (long)B * NH * T * T;
            float *qkv = randv(r, nq, 1.0f), *dout = randv(r, no, 1.0f), *scratch = malloc(no * 4);
            // Image 1's scores all negative (q > 0, k < 0): a row's max is then below the zeros that a
            // vector's lanes past the row hold, so those lanes must stay out of it.
            for (int t = 0; t < T; t++)
                for (int c = 0; c < C; c++) {
                    float *row = qkv + ((long)T + t) * 3 * C;
                    row[c] = fabsf(row[c]) + 0.01f;
                    row[C + c] = -fabsf(row[C + c]) - 0.01f;
                }
            float *o0 = malloc(no * 4), *o1 = malloc(no * 4), *a0 = malloc(na * 4), *a1 = malloc(na * 4);
            attention_forward(o0, a0, qkv, scratch, B, T, C, NH);
            attention_forward_ref(o1, a1, qkv, B, T, C, NH);
            CHECK(worst(a0, a1, na, 1e-6, 1e-5) <= 1.0, "attention att T=%d C=%d NH=%d: %.3g", T, C, NH,
                  worst(a0, a1, na, 1e-6, 1e-5));
            CHECK(worst(o0, o1, no, 1e-5, 1e-5) <= 1.0, "attention out T=%d C=%d NH=%d: %.3g", T, C, NH,
                  worst(o0, o1, no, 1e-5, 1e-5));
            float *d0 = randv(r, nq, 1.0f), *d1 = copyv(d0, nq), *da0 = malloc(na * 4), *da1 = malloc(na * 4);
            attention_backward(d0, da0, dout, qkv, a1, scratch, B, T, C, NH);
            attention_backward_ref(d1, da1, dout, qkv, a1, B, T, C, NH);
            CHECK(worst(d0, d1, nq, 1e-5, 1e-5) <= 1.0, "attention dqkv T=%d C=%d NH=%d: %.3g", T, C, NH,
                  worst(d0, d1, nq, 1e-5, 1e-5));
            // The overwriting form: garbage in dqkv must not leak into the result.
            float *dz = calloc((size_t)nq, sizeof(float)), *dg = randv(r, nq, 1e3f);
            attention_backward_ref(dz, da1, dout, qkv, a1, B, T, C, NH);
            attention_backward_set(dg, da0, dout, qkv, a1, scratch, B, T, C, NH);
            CHECK(worst(dg, dz, nq, 1e-5, 1e-5) <= 1.0, "attention_backward_set T=%d C=%d NH=%d: %.3g", T, C, NH,
                  worst(dg, dz, nq, 1e-5, 1e-5));
            free(dz); free(dg);
            // 1 vs 2 threads: bitwise.
            float *d2 = randv(r, nq, 1.0f), *d3 = copyv(d2, nq);
            omp_set_num_threads(1);
            attention_forward(o0, a0, qkv, scratch, B, T, C, NH);
            attention_backward(d2, da0, dout, qkv, a0, scratch, B, T, C, NH);
            omp_set_num_threads(2);
            attention_forward(o1, a1, qkv, scratch, B, T, C, NH);
            attention_backward(d3, da1, dout, qkv, a1, scratch, B, T, C, NH);
            CHECK(same(o0, o1, no) && same(a0, a1, na) && same(d2, d3, nq), "attention threads T=%d C=%d %s", T, C,
                  gemm_kernel_name());
            // A vector forward (rows side by side, the fused tiles) against the portable loops: bitwise.
            // (The backward differs in rounding: its row dot products fuse multiply and add.)
            if (strcmp(paths[pi], "portable") != 0) {
                float *o2 = malloc(no * 4), *a2 = malloc(na * 4);
                CHECK(gemm_force_kernel("portable") == 0, "gemm path portable");
                attention_forward(o2, a2, qkv, scratch, B, T, C, NH);
                CHECK(gemm_force_kernel(paths[pi]) == 0, "gemm path %s", paths[pi]);
                attention_forward(o1, a1, qkv, scratch, B, T, C, NH);
                CHECK(same(o1, o2, no) && same(a1, a2, na), "attention forward %s = portable, bitwise, T=%d C=%d NH=%d",
                      paths[pi], T, C, NH);
                free(o2); free(a2);
            }
            // The AVX2 backward against the AVX-512 one, where the CPU has both: bitwise (the same
            // 16-lane row sums, the same FMA chains).
            if (strcmp(paths[pi], "avx2") == 0 && gemm_force_kernel("avx512") == 0) {
                float *d4 = randv(r, nq, 1.0f), *d5 = copyv(d4, nq);
                attention_backward(d4, da0, dout, qkv, a1, scratch, B, T, C, NH);
                CHECK(gemm_force_kernel("avx2") == 0, "gemm path avx2");
                attention_backward(d5, da1, dout, qkv, a1, scratch, B, T, C, NH);
                CHECK(same(d4, d5, nq), "attention backward avx2 = avx512, bitwise, T=%d C=%d NH=%d", T, C, NH);
                free(d4); free(d5);
            }
            test_attention_rows(r, B, T, C, NH, qkv, dout, scratch);
            free(qkv); free(dout); free(scratch); free(o0); free(o1); free(a0); free(a1);
            free(d0); free(d1); free(da0); free(da1); free(d2); free(d3);
        }
    gemm_force_kernel(NULL);
}

static void test_adamw(Rng *r) {
    long sizes[] = {1, 7, 33, 129, 1000};
    for (int si = 0; si < 5; si++) {
        long n = sizes[si];
        float *p0 = randv(r, n, 1.0f), *g = randv(r, n, 1.0f), *m0 = randv(r, n, 0.1f), *v0 = randv(r, n, 0.1f);
        for (long i = 0; i < n; i++) v0[i] = v0[i] * v0[i];
        float *p1 = copyv(p0, n), *m1 = copyv(m0, n), *v1 = copyv(v0, n);
        adamw_update(p0, g, m0, v0, n, 0.9995f, 1e-3f / 0.1f, 0.2236f);
        adamw_update_ref(p1, g, m1, v1, n, 0.9995f, 1e-3f / 0.1f, 0.2236f);
        CHECK(same(p0, p1, n) && same(m0, m1, n) && same(v0, v1, n), "adamw_update n=%ld", n);
        free(p0); free(g); free(m0); free(v0); free(p1); free(m1); free(v1);
    }
}

// Stable argsort by insertion (the definition) against the merge sort, with ties.
static void test_masking(Rng *r) {
    int Ls[] = {1, 7, 33, 129, 1100};
    for (int li = 0; li < 5; li++) {
        int L = Ls[li], B = 3, K = L / 3 + 1;
        float *noise = malloc((size_t)B * L * 4);
        for (int i = 0; i < B * L; i++) noise[i] = (float)rng_below(r, 8) / 8.0f;   // many ties
        int *got = malloc((size_t)B * K * sizeof(int)), *idx = malloc((size_t)L * sizeof(int));
        mae_masking_from_noise(noise, B, L, K, got);
        int ok = 1;
        for (int b = 0; b < B; b++) {
            const float *nz = noise + (size_t)b * L;
            for (int i = 0; i < L; i++) {
                int j = i;
                while (j > 0 && nz[idx[j - 1]] > nz[i]) { idx[j] = idx[j - 1]; j--; }
                idx[j] = i;
            }
            for (int k = 0; k < K; k++) ok &= got[(size_t)b * K + k] == idx[k];
        }
        CHECK(ok, "masking L=%d matches the stable argsort", L);
        free(noise); free(got); free(idx);
    }
}

// Team mode (kernels/team.h): every kernel the transformer blocks call, run by all threads of one
// region (2 and 3 threads), gives bitwise what it gives on its own, on odd sizes and on every GEMM path
// this CPU has (the ref path runs the plain loops on thread 0 while the others wait).
static void test_team_mode(Rng *r) {
    static const char *paths[] = {"ref", "portable", "avx2", "avx512"};
    int sizes[][3] = {{1, 7, 5}, {7, 33, 17}, {33, 129, 70}, {129, 65, 200}};   // N rows, C, OC
    for (int pi = 0; pi < 4; pi++) {
        if (gemm_force_kernel(paths[pi])) continue;
        for (int si = 0; si < 4; si++) {
            int N = sizes[si][0], C = sizes[si][1], OC = sizes[si][2];
            long nc = (long)N * C, no = (long)N * OC, nw = (long)OC * C;
            float *x = randv(r, nc, 1.0f), *w = randv(r, nw, 0.3f), *bias = randv(r, OC, 0.1f), *dy = randv(r, no, 1.0f);
            float *lw = randv(r, C, 1.0f), *lb = randv(r, C, 0.1f), *scale = randv(r, 3, 1.0f);
            float *part = malloc((size_t)gelu_colsum_scratch(N, OC) * 4);
            // One run alone (team 0), then one per team size: every output of every kernel.
            float *out[3][13];
            for (int team = 0; team < 3; team++) {
                float **o = out[team];
                o[0] = calloc(no, 4); o[1] = calloc(nc, 4); o[2] = calloc(nw, 4);      // nt, nn, tn
                o[3] = calloc(nc, 4); o[4] = calloc(N, 4); o[5] = calloc(N, 4);        // layernorm fwd
                o[6] = calloc(nc, 4); o[7] = calloc(C, 4); o[8] = calloc(C, 4);        // layernorm bwd
                o[9] = calloc(no, 4); o[10] = calloc(OC, 4);                           // gelu bwd + colsum
                o[11] = calloc(no, 4);                                                 // gelu, residual, droppath
                o[12] = calloc(no, 4);                                                 // gelu'
                #pragma omp parallel num_threads(team + 1) if (team > 0)
                {
                    if (team > 0) team_begin();
                    gemm_nt(N, OC, C, x, C, w, C, o[0], OC, bias, 0);
                    gemm_nn(N, C, OC, dy, OC, w, C, o[1], C, 0);
                    gemm_tn(OC, C, N, dy, OC, x, C, o[2], C, 1);
                    layernorm_forward(o[3], o[4], o[5], x, lw, lb, N, C, 1e-5f);
                    layernorm_backward(o[6], o[7], o[8], o[3], x, lw, o[4], o[5], N, C, 1);
                    gemm_nt(N, OC, C, x, C, w, C, o[12], OC, bias, 0);   // the GELU's input, then gelu' of it
                    gelu_forward_dgelu(o[11], o[12], no);
                    gelu_backward_set_colsum(o[9], o[10], part, o[12], dy, N, OC, 1);
                    column_sum(o[10], dy, N, OC, 1);
                    residual_forward(o[11], o[11], o[9], no);
                    if (N % 3 == 0 && N > 0) droppath_residual_forward(o[11], o[11], o[9], scale, 3, N / 3, OC);
                    if (N % 3 == 0 && N > 0) droppath_scale(o[9], o[9], scale, 3, N / 3, OC);
                    if (team > 0) team_end();
                }
            }
            long len[13] = {no, nc, nw, nc, N, N, nc, C, C, no, OC, no, no};
            for (int team = 1; team < 3; team++)
                for (int k = 0; k < 13; k++)
                    CHECK(same(out[0][k], out[team][k], len[k]), "team mode, %d threads, %s, N=%d C=%d OC=%d: output %d",
                          team + 1, paths[pi], N, C, OC, k);
            for (int team = 0; team < 3; team++)
                for (int k = 0; k < 13; k++) free(out[team][k]);
            free(x); free(w); free(bias); free(dy); free(lw); free(lb); free(scale); free(part);
        }
        // Attention: B = 3 images, T = 13 tokens, C = 24, NH = 3.
        int B = 3, T = 13, Ca = 24, NH = 3;
        long nq = (long)B * T * 3 * Ca, no = (long)B * T * Ca, na = (long)B * NH * T * T;
        float *qkv = randv(r, nq, 1.0f), *dout = randv(r, no, 1.0f);
        float *ao[3], *aa[3], *ad[3], *ada[3];
        for (int team = 0; team < 3; team++) {
            ao[team] = malloc(no * 4); aa[team] = malloc(na * 4); ad[team] = calloc(nq, 4); ada[team] = malloc(na * 4);
            float *sc = malloc(no * 4 * 2);
            #pragma omp parallel num_threads(team + 1) if (team > 0)
            {
                if (team > 0) team_begin();
                attention_forward(ao[team], aa[team], qkv, sc, B, T, Ca, NH);
                attention_backward(ad[team], ada[team], dout, qkv, aa[team], sc, B, T, Ca, NH);
                if (team > 0) team_end();
            }
            free(sc);
        }
        for (int team = 1; team < 3; team++)
            CHECK(same(ao[0], ao[team], no) && same(aa[0], aa[team], na) && same(ad[0], ad[team], nq),
                  "team mode attention, %d threads, %s", team + 1, paths[pi]);
        for (int team = 0; team < 3; team++) { free(ao[team]); free(aa[team]); free(ad[team]); free(ada[team]); }
        free(qkv); free(dout);
    }
    gemm_force_kernel(NULL);
}

// The team's barrier (kernels/team.h) on each of its ways of waiting (spin only, sleep at once, the
// default spin then sleep), teams of 2 and 3: in each round every thread writes its slot, meets the
// team, and must see every slot of this round; then meets again before the next round's writes. A
// barrier that lets a thread through early, or loses a wake-up (a hang), fails here. Then
// team_broadcast hands thread 0's value to all.
// The chains' hand-off (kernels/team.h): each thread of 3 posts its block after a pause long enough
// that the next one sleeps (past CHAIN_SPIN_US), or not at all (spin -1); the next one must get the
// values written before the post, every round, and the flags must be clear for the next round.
static void test_team_chain(void) {
    int saved = team_spin_us(), spins[] = {-1, 0};
    for (int si = 0; si < 2; si++) {
        team_set_spin_us(spins[si]);
        int bad = 0;
        #pragma omp parallel num_threads(3) reduction(+ : bad)
        {
            team_begin();
            int t = omp_get_thread_num(), T = omp_get_num_threads();
            for (int round = 1; round <= 4; round++)
                for (int blk = 0; blk < 3; blk++) {
                    float got = 0.0f;
                    if (t) {
                        team_chain_take(t, blk);
                        got = team_chain_slot(t - 1)[blk * 32];
                        bad += got != (float)(100 * round + 10 * blk + t - 1);
                    }
                    if (t < T - 1) {
                        if (round % 2) usleep(1000);   // the next thread goes to sleep
                        team_chain_slot(t)[blk * 32] = (float)(100 * round + 10 * blk + t);
                        team_chain_post(t, blk);
                    }
                    team_barrier();
                }
            team_end();
        }
        CHECK(bad == 0, "team chains, spin %d us: %d stale or missing hand-offs", spins[si], bad);
    }
    team_set_spin_us(saved);
}

static void test_team_barrier(void) {
    int saved = team_spin_us(), spins[] = {-1, 0, 20};
    for (int si = 0; si < 3; si++) {
        CHECK(team_set_spin_us(spins[si]) == 0 && team_spin_us() == spins[si], "team_set_spin_us(%d)", spins[si]);
        for (int nth = 2; nth <= 3; nth++) {
            int slot[3] = {0}, bad = 0, got_team = 1;
            const int rounds = 400;
            #pragma omp parallel num_threads(nth) reduction(+ : bad) reduction(min : got_team)
            {
                team_begin();
                int t = omp_get_thread_num();
                got_team = omp_get_num_threads() == nth;
                for (int round = 1; round <= rounds; round++) {
                    __atomic_store_n(&slot[t], round, __ATOMIC_RELAXED);
                    team_barrier();
                    for (int u = 0; u < nth; u++) bad += __atomic_load_n(&slot[u], __ATOMIC_RELAXED) != round;
                    team_barrier();
                }
                long v = t == 0 ? 1000 + nth : -1;
                team_broadcast(&v, (int)sizeof v);
                bad += v != 1000 + nth;
                team_barrier();
                team_end();
            }
            CHECK(got_team, "team of %d threads started", nth);
            CHECK(bad == 0, "team barrier, spin %d us, %d threads: %d stale reads in %d rounds", spins[si], nth, bad,
                  rounds);
        }
    }
    CHECK(team_set_spin_us(-2) == -1 && team_set_spin_us(1000001) == -1, "team_set_spin_us refuses out of range");
    team_set_spin_us(saved);
    // VITMAE_SPIN_US and OMP_WAIT_POLICY as read (docs/interface.md, "Environment"): N from 0 to 1000000
    // in digits, else the policy, else 20. " 7" and "+7" were taken as 7.
    static const struct { const char *spin, *policy; int want; } env[] = {
        {"7", NULL, 7}, {"0", "active", 0}, {"1000000", NULL, 1000000}, {"1000001", NULL, 20}, {"-1", NULL, 20},
        {" 7", NULL, 20}, {"+7", NULL, 20}, {"7us", NULL, 20}, {"", NULL, 20}, {NULL, "active", -1},
        {NULL, "PASSIVE", 0}, {" 7", "active", -1}, {NULL, NULL, 20}};
    for (size_t i = 0; i < sizeof env / sizeof *env; i++) {
        int got = team_spin_us_from(env[i].spin, env[i].policy);
        CHECK(got == env[i].want, "VITMAE_SPIN_US='%s' OMP_WAIT_POLICY='%s': %d us, want %d",
              env[i].spin ? env[i].spin : "(unset)", env[i].policy ? env[i].policy : "(unset)", got, env[i].want);
    }
}

int main(void) {
    Rng r;
    rng_seed(&r, 7);
    test_erf_exp();
    test_gelu(&r);
    test_gelu_colsum(&r);
    test_gelu_vector(&r);
    test_layernorm(&r);
    test_layernorm_lanes(&r);
    test_layernorm_threads(&r);
    test_layernorm_groups(&r);
    test_column_sum(&r);
    test_column_sum_threads(&r);
    test_linear_params(&r);
    test_attention(&r);
    test_adamw(&r);
    test_masking(&r);
    test_team_mode(&r);
    test_team_barrier();
    test_team_chain();
    return check_done();
}
