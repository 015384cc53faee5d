// src/viz/attnmap.c: head fusion, query rows, grid scatter with masking, rollout against a plain
// double-precision product, rollout rows summing to 1, thread-count independence, and the uniform
// level a colour bar marks.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "viz/attnmap.h"
#include "check.h"
#include "core/rng.h"

// [heads, T, T] rows of softmax-like probabilities (positive, each row sums to 1).
static float *random_attention(int heads, int T, uint64_t seed) {
    Rng r;
    rng_seed(&r, seed);
    float *a = malloc(sizeof(float) * heads * T * T);
    for (int row = 0; row < heads * T; row++) {
        double s = 0;
        for (int k = 0; k < T; k++) { a[row * T + k] = expf(3.0f * rng_uniform(&r)); s += a[row * T + k]; }
        for (int k = 0; k < T; k++) a[row * T + k] = (float)(a[row * T + k] / s);
    }
    return a;
}

static void test_fuse_and_rows(void) {
    int H = 3, T = 7;
    float *a = random_attention(H, T, 1);
    float mat[49], row[7];
    attn_fuse_heads(a, H, T, ATTN_HEAD_MEAN, mat);
    for (int i = 0; i < T * T; i++) {
        double want = ((double)a[i] + a[T * T + i] + a[2 * T * T + i]) / 3;
        CHECK_CLOSE(mat[i], want, 1e-7, 0, "mean over heads");
    }
    attn_fuse_heads(a, H, T, ATTN_HEAD_MAX, mat);
    for (int i = 0; i < T * T; i++) {
        float want = fmaxf(a[i], fmaxf(a[T * T + i], a[2 * T * T + i]));
        CHECK(mat[i] == want, "max over heads at %d", i);
    }
    attn_fuse_heads(a, H, T, 2, mat);
    CHECK(memcmp(mat, a + 2 * T * T, sizeof mat) == 0, "a single head is a copy");
    for (int head = ATTN_HEAD_MAX; head < H; head++) {
        attn_fuse_heads(a, H, T, head, mat);
        for (int q = 0; q < T; q++) {
            attn_query_row(a, H, T, q, head, row);
            CHECK(memcmp(row, mat + q * T, sizeof row) == 0, "query row %d of head %d = fused matrix row", q, head);
        }
    }
    free(a);
}

static void test_grid(void) {
    // Grid 3 x 3, patches 7, 2, 4 visible (token order), the rest masked.
    int keep[3] = {2, 4, 7};
    float row[4] = {0.1f, 0.2f, 0.3f, 0.4f}, grid[9];
    attn_row_to_grid(row, 4, keep, 9, grid);
    for (int l = 0; l < 9; l++) {
        if (l == 2) CHECK(grid[l] == 0.2f, "patch 2 = token 1");
        else if (l == 4) CHECK(grid[l] == 0.3f, "patch 4 = token 2");
        else if (l == 7) CHECK(grid[l] == 0.4f, "patch 7 = token 3");
        else CHECK(isnan(grid[l]), "masked patch %d is NaN", l);
    }
    CHECK(attn_token_of_patch(keep, 3, 4) == 2, "token of patch 4");
    CHECK(attn_token_of_patch(keep, 3, 5) == -1, "masked patch has no token");
    float lo, hi;
    attn_grid_range(grid, 9, &lo, &hi);
    CHECK(lo == 0.2f && hi == 0.4f, "range skips NaN: %g..%g", lo, hi);
    float nan_only[2] = {NAN, NAN};
    attn_grid_range(nan_only, 2, &lo, &hi);
    CHECK(lo == 0 && hi == 0, "no finite value gives 0..0");
}

// R = Â_{n-1} ... Â_0 in double, Â = rownorm(0.5 A + 0.5 I).
static void naive_rollout(const float *layers, int n, int T, double *R) {
    double *A = malloc(sizeof(double) * T * T), *N = malloc(sizeof(double) * T * T);
    for (int i = 0; i < T * T; i++) R[i] = i % (T + 1) == 0;
    for (int l = 0; l < n; l++) {
        for (int i = 0; i < T; i++) {
            double s = 0;
            for (int k = 0; k < T; k++) { A[i * T + k] = 0.5 * layers[((size_t)l * T + i) * T + k] + 0.5 * (i == k); s += A[i * T + k]; }
            for (int k = 0; k < T; k++) A[i * T + k] /= s;
        }
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                double s = 0;
                for (int k = 0; k < T; k++) s += A[i * T + k] * R[k * T + j];
                N[i * T + j] = s;
            }
        memcpy(R, N, sizeof(double) * T * T);
    }
    free(A); free(N);
}

static void test_rollout(void) {
    int sizes[] = {1, 2, 7, 33};
    for (int si = 0; si < 4; si++) {
        int T = sizes[si], n = 4;
        float *layers = random_attention(n, T, 100 + T);   // n layers of one fused [T, T] matrix each
        float *R = malloc(sizeof(float) * T * T), *work = malloc(sizeof(float) * T * T);
        float *R1 = malloc(sizeof(float) * T * T);
        double *want = malloc(sizeof(double) * T * T);
        attn_rollout_init(R, T);
        for (int l = 0; l < n; l++) attn_rollout_step(R, layers + (size_t)l * T * T, T, work);
        naive_rollout(layers, n, T, want);
        double worst = 0, rows = 0;
        for (int i = 0; i < T * T; i++) worst = fmax(worst, fabs(R[i] - want[i]));
        for (int i = 0; i < T; i++) {
            double s = 0;
            for (int k = 0; k < T; k++) s += R[i * T + k];
            rows = fmax(rows, fabs(s - 1));
        }
        CHECK(worst <= 1e-6, "rollout T=%d: max abs error %.3g vs plain product", T, worst);
        CHECK(rows <= 1e-5, "rollout T=%d rows sum to 1 (%.3g)", T, rows);
        // The same bits for 1 and 2 threads.
        omp_set_num_threads(1);
        attn_rollout_init(R1, T);
        for (int l = 0; l < n; l++) attn_rollout_step(R1, layers + (size_t)l * T * T, T, work);
        omp_set_num_threads(2);
        attn_rollout_init(R, T);
        for (int l = 0; l < n; l++) attn_rollout_step(R, layers + (size_t)l * T * T, T, work);
        CHECK(memcmp(R, R1, sizeof(float) * T * T) == 0, "rollout T=%d identical for 1 and 2 threads", T);
        free(layers); free(R); free(R1); free(work); free(want);
    }
    // One layer of identity attention leaves R = I; uniform attention mixes half of it.
    float eye[4] = {1, 0, 0, 1}, R[4], work[4];
    attn_rollout_init(R, 2);
    attn_rollout_step(R, eye, 2, work);
    CHECK(R[0] == 1 && R[1] == 0 && R[2] == 0 && R[3] == 1, "identity attention keeps I");
    float uni[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    attn_rollout_step(R, uni, 2, work);
    CHECK(R[0] == 0.75f && R[1] == 0.25f, "uniform: 0.5*0.5 + 0.5 = 0.75 on the diagonal (%g, %g)", R[0], R[1]);
}

// The level a colour bar marks as uniform attention (attn_uniform_level) is what the map holds when
// every layer attends uniformly: 1/T for a query row; for rollout, the product's off-diagonal entry.
// Rollout's bars marked 1/T at every layer, twice the uniform level at layer 0 (0.0154 for 0.0077 at
// T = 65), so a layer-0 map above uniform read as below it.
static void test_uniform_level(void) {
    static const int Ts[] = {2, 5, 17, 65};
    for (size_t i = 0; i < sizeof Ts / sizeof Ts[0]; i++) {
        int T = Ts[i];
        float *U = malloc(sizeof(float) * T * T), *R = malloc(sizeof(float) * T * T),
              *work = malloc(sizeof(float) * T * T);
        for (int k = 0; k < T * T; k++) U[k] = 1.0f / (float)T;
        CHECK(attn_uniform_level(0, 3, T) == 1.0 / T, "T=%d: a query row's uniform level is 1/T", T);
        attn_rollout_init(R, T);
        double worst = 0;
        for (int l = 0; l < 8; l++) {
            attn_rollout_step(R, U, T, work);
            double want = attn_uniform_level(1, l, T);
            for (int q = 0; q < T; q++)
                for (int c = 0; c < T; c++)
                    if (c != q) worst = fmax(worst, fabs(R[(size_t)q * T + c] - want) / want);
        }
        CHECK(worst <= 1e-6, "T=%d: rollout of uniform attention, layers 0..7, off the diagonal = "
              "attn_uniform_level (relative error %.3g)", T, worst);
        free(U); free(R); free(work);
    }
}

int main(void) {
    test_fuse_and_rows();
    test_grid();
    test_rollout();
    test_uniform_level();
    return check_done();
}
