// GELU: the reference loops (*_ref, erff / expf) and the fast versions (erf_approx / exp_approx,
// kernels/vecmath.h). See kernels/gelu.h.
#include "kernels/gelu.h"
#include "kernels/gemm.h"
#include "kernels/linear.h"
#include "kernels/prof.h"
#include <math.h>
#include "kernels/team.h"
#include "kernels/vecmath.h"
#include "kernels/x86/gelu_avx2.h"
#include "kernels/x86/gelu_avx512.h"

// ---------------------------------------------------------------------------------------------
// Reference

void gelu_forward_ref(float *out, const float *inp, long N) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2));
    }
}

// gelu'(x) = Phi(x) + x * phi(x), Phi the normal CDF, phi its density.
void gelu_backward_ref(float *dinp, const float *inp, const float *dout, long N) {
    const float inv_sqrt_2pi = 0.39894228040143267794f;
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) {
        float x = inp[i];
        float cdf = 0.5f * (1.0f + erff(x * (float)M_SQRT1_2));
        float pdf = inv_sqrt_2pi * expf(-0.5f * x * x);
        dinp[i] += dout[i] * (cdf + x * pdf);
    }
}

// ---------------------------------------------------------------------------------------------
// Fast

void erf_approx_array(float *out, const float *inp, long N) {
    for (long i = 0; i < N; i++) out[i] = erf_approx(inp[i]);
}

void exp_approx_array(float *out, const float *inp, long N) {
    for (long i = 0; i < N; i++) out[i] = exp_approx(inp[i]);
}

// gelu'(x) = Phi(x) + x phi(x), with e = e^{-x^2/2} (gelu_forward_dgelu keeps it, gelu_backward and
// gelu_backward_set compute it: the same operations, the same bits).
static inline float dgelu_from(float x, float cdf, float e) { return cdf + x * (0.39894228040143267794f * e); }

static inline float gelu_grad(float x) {
    float e = exp_approx(-0.5f * x * x);
    return dgelu_from(x, normal_cdf(x, e), e);
}

// The forward in pieces of GELU_PIECE elements shared out by a static schedule (elementwise: any split
// gives the same bits). path GEMM_PATH_AVX512 / GEMM_PATH_AVX2: x86/gelu_avx512.c / x86/gelu_avx2.c, the
// same operations as the loop below.
#define GELU_PIECE 4096
static void gelu_forward_body(float *out, float *xd, long N, int path) {
    long npieces = (N + GELU_PIECE - 1) / GELU_PIECE;
    #pragma omp for schedule(static) nowait
    for (long c = 0; c < npieces; c++) {
        long i0 = c * GELU_PIECE, i1 = i0 + GELU_PIECE < N ? i0 + GELU_PIECE : N;
        if (path == GEMM_PATH_AVX512) { gelu_forward_avx512(out + i0, xd + i0, i1 - i0); continue; }
        if (path == GEMM_PATH_AVX2) { gelu_forward_avx2(out + i0, xd + i0, i1 - i0); continue; }
        for (long i = i0; i < i1; i++) {
            float x = xd[i], e = exp_approx(-0.5f * x * x), cdf = normal_cdf(x, e);
            out[i] = x * cdf;
            xd[i] = dgelu_from(x, cdf, e);
        }
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, long N) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) dinp[i] += dout[i] * gelu_grad(inp[i]);
}

void gelu_backward_set(float *dinp, const float *inp, const float *dout, long N) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) dinp[i] = dout[i] * gelu_grad(inp[i]);
}

// dinp [N, C] = dout * dgelu and dbias [C] += its column sums, in one pass over the rows. The
// rows go in chunks of GELU_CHUNK_ROWS, shared out by a static schedule (so a thread takes about the
// rows it produced in the product before, still in its L2); chunk c's column sums (rows in ascending
// order) go to part [c, C], and then dbias gets the column sums of part (column_sum: the
// chunks in ascending order). The chunks and both orders depend on N and C alone: bitwise the same for
// any thread count.
long gelu_colsum_scratch(int N, int C) { return (long)((N + GELU_CHUNK_ROWS - 1) / GELU_CHUNK_ROWS) * C; }

static void gelu_backward_chunks_body(float *dinp, float *part, const float *dgelu, const float *dout, int N,
                                     int C, int nchunks, int path) {
    #pragma omp for schedule(static) nowait
    for (int ch = 0; ch < nchunks; ch++) {
        float *acc = part + (long)ch * C;
        int n0 = ch * GELU_CHUNK_ROWS, n1 = n0 + GELU_CHUNK_ROWS < N ? n0 + GELU_CHUNK_ROWS : N;
        long o0 = (long)n0 * C;
        if (path == GEMM_PATH_AVX512 || path == GEMM_PATH_AVX2) {
            (path == GEMM_PATH_AVX512 ? gelu_backward_rows_avx512 : gelu_backward_rows_avx2)(dinp + o0, acc, dgelu + o0,
                                                                                            dout + o0, n1 - n0, C);
            continue;
        }
        for (int j = 0; j < C; j++) acc[j] = 0.0f;
        for (int n = n0; n < n1; n++) {
            long o = (long)n * C;
            for (int j = 0; j < C; j++) {
                float g = dout[o + j] * dgelu[o + j];
                dinp[o + j] = g;
                acc[j] += g;
            }
        }
    }
}

void gelu_forward_dgelu(float *out, float *x_dgelu, long N) {
    double t0 = PROF_START(PROF_GELU_FWD);
    TEAM_RUN(gelu_forward_body(out, x_dgelu, N, gemm_path()));
    PROF_STOP(PROF_GELU_FWD, t0, 0);
}

void gelu_backward_set_colsum(float *dinp, float *dbias, float *part, const float *dgelu, const float *dout, int N,
                              int C, int bias_acc) {
    int nchunks = (N + GELU_CHUNK_ROWS - 1) / GELU_CHUNK_ROWS;
    double t0 = PROF_START(PROF_GELU_BWD);
    TEAM_RUN(gelu_backward_chunks_body(dinp, part, dgelu, dout, N, C, nchunks, gemm_path()));
    PROF_STOP(PROF_GELU_BWD, t0, 0);
    column_sum(dbias, part, nchunks, C, bias_acc);   // a kernel of its own (profiled as a bias gradient)
}
