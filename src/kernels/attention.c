// Attention: the reference loops (*_ref) and the fast version the model calls (per (image, head)
// small matrix products by one register-blocked kernel, or the vector kernels of
// kernels/x86/attention_avx512.c and kernels/x86/attention_avx2.c on the "avx512" and "avx2" GEMM
// paths). See kernels/attention.h.
#include "kernels/attention.h"
#include "kernels/prof.h"
#include "kernels/team.h"
#include <math.h>
#include <omp.h>
#include "kernels/gemm.h"
#include "kernels/vecmath.h"
#include "kernels/x86/attention_avx2.h"
#include "kernels/x86/attention_avx512.h"

// ---------------------------------------------------------------------------------------------
// Reference

void attention_forward_ref(float *out, float *att, const float *qkv, int B, int T, int C, int NH) {
    int hd = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hd);
    #pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *base = qkv + (long)b * T * C3;
        for (int t = 0; t < T; t++) {
            const float *q = base + (long)t * C3 + h * hd;
            float *a = att + ((long)bh * T + t) * T;
            float maxv = -INFINITY;
            for (int s = 0; s < T; s++) {
                const float *k = base + (long)s * C3 + C + h * hd;
                float dot = 0.0f;
                for (int i = 0; i < hd; i++) dot += q[i] * k[i];
                a[s] = dot * scale;
                if (a[s] > maxv) maxv = a[s];
            }
            float sum = 0.0f;
            for (int s = 0; s < T; s++) { a[s] = expf(a[s] - maxv); sum += a[s]; }
            float inv = 1.0f / sum;
            for (int s = 0; s < T; s++) a[s] *= inv;
            float *o = out + ((long)b * T + t) * C + h * hd;
            for (int i = 0; i < hd; i++) o[i] = 0.0f;
            for (int s = 0; s < T; s++) {
                const float *v = base + (long)s * C3 + 2 * C + h * hd;
                for (int i = 0; i < hd; i++) o[i] += a[s] * v[i];
            }
        }
    }
}

// Per (image, head), with P = att, dO = dout:
//   dV = P^T dO;  dP = dO V^T;  dS = P * (dP - rowsum(P * dP));  dQ = scale dS K;  dK = scale dS^T Q.
void attention_backward_ref(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                        int B, int T, int C, int NH) {
    int hd = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hd);
    #pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *base = qkv + (long)b * T * C3;
        float *dbase = dqkv + (long)b * T * C3;
        for (int t = 0; t < T; t++) {
            const float *a = att + ((long)bh * T + t) * T;
            float *da = datt + ((long)bh * T + t) * T;
            const float *dy = dout + ((long)b * T + t) * C + h * hd;
            float dot_pd = 0.0f;
            for (int s = 0; s < T; s++) {
                const float *v = base + (long)s * C3 + 2 * C + h * hd;
                float *dv = dbase + (long)s * C3 + 2 * C + h * hd;
                float d = 0.0f;
                for (int i = 0; i < hd; i++) { d += dy[i] * v[i]; dv[i] += a[s] * dy[i]; }
                da[s] = d;
                dot_pd += a[s] * d;
            }
            const float *q = base + (long)t * C3 + h * hd;
            float *dq = dbase + (long)t * C3 + h * hd;
            for (int s = 0; s < T; s++) {
                float ds = a[s] * (da[s] - dot_pd) * scale;
                const float *k = base + (long)s * C3 + C + h * hd;
                float *dk = dbase + (long)s * C3 + C + h * hd;
                for (int i = 0; i < hd; i++) { dq[i] += ds * k[i]; dk[i] += ds * q[i]; }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Attention: per (image, head) small matrix products by one register-blocked kernel.

// C[r][j] (+)= sum_k A(r, k) B[k][j] for r < R <= 4, j < N, with A(r, k) = A[r * ars + k * aks] (so
// A may be read transposed) and B rows contiguous (ldb). Each C element is one fmaf chain over k in
// ascending order, started at 0 and added to C at the end when accumulate is set. Columns go in
// blocks of 16 (acc stays in registers: 4 rows x 16 lanes).
static void small_mm(int R, int N, int K, const float *A, long ars, long aks, const float *B, long ldb,
                     float *C, long ldc, int accumulate) {
    for (int j0 = 0; j0 < N; j0 += 16) {
        int w = N - j0 < 16 ? N - j0 : 16;
        float acc[4][16] = {{0}};
        if (w == 16) {
            for (int k = 0; k < K; k++) {
                const float *b = B + (long)k * ldb + j0;
                for (int r = 0; r < 4; r++) {
                    float a = A[(r < R ? r : 0) * ars + (long)k * aks];
                    for (int j = 0; j < 16; j++) acc[r][j] = fmaf(a, b[j], acc[r][j]);
                }
            }
        } else {
            for (int k = 0; k < K; k++) {
                const float *b = B + (long)k * ldb + j0;
                for (int r = 0; r < 4; r++) {
                    float a = A[(r < R ? r : 0) * ars + (long)k * aks];
                    for (int j = 0; j < w; j++) acc[r][j] = fmaf(a, b[j], acc[r][j]);
                }
            }
        }
        for (int r = 0; r < R; r++) {
            float *c = C + r * ldc + j0;
            if (accumulate) for (int j = 0; j < w; j++) c[j] += acc[r][j];
            else for (int j = 0; j < w; j++) c[j] = acc[r][j];
        }
    }
}

// All rows of C[M][N] (+)= A . B in blocks of 4 rows.
static void rows_mm(int M, int N, int K, const float *A, long ars, long aks, const float *B, long ldb,
                    float *C, long ldc, int accumulate) {
    for (int r0 = 0; r0 < M; r0 += 4)
        small_mm(M - r0 < 4 ? M - r0 : 4, N, K, A + r0 * ars, ars, aks, B, ldb, C + r0 * ldc, ldc, accumulate);
}

// dst[i][s] = src[s * ld + i] for s < T, i < hd (a head's K or V, transposed to [hd][T]).
static void transpose_head(float *dst, const float *src, long ld, int T, int hd) {
    for (int s = 0; s < T; s++)
        for (int i = 0; i < hd; i++) dst[(long)i * T + s] = src[s * ld + i];
}

// Per (image, head): Tq query rows (q0's, ldqq apart; the qkv buffer's own in a square attention, Tq = T)
// on the image's T key and value rows of qkv; out [B, Tq, C], att [B, NH, Tq, T].
static void attention_forward_body(float *out, float *att, const float *q0, long ldqq, const float *qkv,
                                   float *scratch, int B, int Tq, int T, int C, int NH, int path) {
    int hd = C / NH;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hd);
    // Each thread's K^T in a region of its own, used again for every head it takes (in L1/L2, where
    // a region per head would be fresh memory each time); thread th < B * NH when it has any head.
    float *kt = scratch + (long)omp_get_thread_num() * hd * T;   // [hd][T]
    #pragma omp for schedule(static) nowait
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *q = q0 + (long)b * Tq * ldqq + h * hd, *k = qkv + (long)b * T * C3 + C + h * hd, *v = k + C;
        float *a = att + (long)bh * Tq * T, *o = out + (long)b * Tq * C + h * hd;   // a: [Tq][T]
        if (path == GEMM_PATH_AVX512 || path == GEMM_PATH_AVX2) {
            (path == GEMM_PATH_AVX512 ? attn_head_forward_avx512 : attn_head_forward_avx2)(
                o, C, a, q, ldqq, k, v, C3, kt, Tq, T, hd, scale);
            continue;
        }
        transpose_head(kt, k, C3, T, hd);
        rows_mm(Tq, T, hd, q, ldqq, 1, kt, T, a, T, 0);   // S = Q K^T
        for (int t = 0; t < Tq; t++) {
            float *row = a + (long)t * T;
            float maxv = -INFINITY;
            for (int s = 0; s < T; s++) { row[s] *= scale; maxv = row[s] > maxv ? row[s] : maxv; }
            for (int s = 0; s < T; s++) row[s] = exp_approx(row[s] - maxv);
            float inv = 1.0f / row_sum(row, T);
            for (int s = 0; s < T; s++) row[s] *= inv;
        }
        rows_mm(Tq, hd, T, a, T, 1, v, C3, o, C, 0);      // O = P V
    }
}

void attention_forward(float *out, float *att, const float *qkv, float *scratch, int B, int T, int C, int NH) {
    int path = gemm_path();
    double t0 = PROF_START(PROF_ATTN_FWD);
    TEAM_RUN(attention_forward_body(out, att, qkv, 3L * C, qkv, scratch, B, T, T, C, NH, path));
    PROF_STOP(PROF_ATTN_FWD, t0, 4.0 * B * T * T * C);
}

void attention_forward_rows(float *out, float *att, const float *q, const float *qkv, float *scratch, int B, int Tq,
                            int T, int C, int NH) {
    int path = gemm_path();
    double t0 = PROF_START(PROF_ATTN_FWD);
    TEAM_RUN(attention_forward_body(out, att, q, C, qkv, scratch, B, Tq, T, C, NH, path));
    PROF_STOP(PROF_ATTN_FWD, t0, 4.0 * B * Tq * T * C);
}

// Per (image, head), P = att, dO = dout: dP = dO V^T; dS = P * (dP - rowsum(P * dP)) * scale;
// dV += P^T dO; dQ += dS K; dK += dS^T Q. Query rows and dQ as the forward's q0 (dq0's rows lddqq
// apart, [B, Tq] of them), dK and dV in dqkv's rows.
static void attention_backward_impl(float *dq0, long lddqq, float *dqkv, float *datt, const float *dout,
                                    const float *q0, long ldqq, const float *qkv, const float *att, float *scratch,
                                    int B, int Tq, int T, int C, int NH, int accumulate, int path) {
    int hd = C / NH;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hd);
    // V^T and dS per thread, not per head (as the forward's K^T): a head's 4 T^2 bytes of dS stay in
    // the thread's L2 for the next head instead of going out to memory.
    int th = omp_get_thread_num();
    float *vt = scratch + (long)th * hd * T, *ds = datt + (long)th * T * T;
    #pragma omp for schedule(static) nowait
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *q = q0 + (long)b * Tq * ldqq + h * hd, *k = qkv + (long)b * T * C3 + C + h * hd, *v = k + C;
        float *dq = dq0 + (long)b * Tq * lddqq + h * hd, *dk = dqkv + (long)b * T * C3 + C + h * hd, *dv = dk + C;
        const float *dy = dout + (long)b * Tq * C + h * hd, *p = att + (long)bh * Tq * T;
        if (path == GEMM_PATH_AVX512 || path == GEMM_PATH_AVX2) {
            (path == GEMM_PATH_AVX512 ? attn_head_backward_avx512 : attn_head_backward_avx2)(
                dq, lddqq, dk, dv, C3, ds, dy, C, q, ldqq, k, v, C3, p, vt, Tq, T, hd, scale, accumulate);
            continue;
        }
        transpose_head(vt, v, C3, T, hd);
        rows_mm(Tq, T, hd, dy, C, 1, vt, T, ds, T, 0);    // dP
        for (int t = 0; t < Tq; t++) {
            const float *pr = p + (long)t * T;
            float *dr = ds + (long)t * T;
            float acc[VL] = {0};
            int s = 0;
            for (; s + VL <= T; s += VL)
                for (int j = 0; j < VL; j++) acc[j] += pr[s + j] * dr[s + j];
            for (int j = 0; s + j < T; j++) acc[j] += pr[s + j] * dr[s + j];
            float dot = lanes_sum(acc);
            for (s = 0; s < T; s++) dr[s] = pr[s] * (dr[s] - dot) * scale;
        }
        rows_mm(T, hd, Tq, p, 1, T, dy, C, dv, C3, accumulate);     // dV (+)= P^T dO
        rows_mm(Tq, hd, T, ds, T, 1, k, C3, dq, lddqq, accumulate); // dQ (+)= dS K
        rows_mm(T, hd, Tq, ds, 1, T, q, ldqq, dk, C3, accumulate);  // dK (+)= dS^T Q
    }
}

void attention_backward(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                        float *scratch, int B, int T, int C, int NH) {
    int path = gemm_path();
    double t0 = PROF_START(PROF_ATTN_BWD);
    TEAM_RUN(attention_backward_impl(dqkv, 3L * C, dqkv, datt, dout, qkv, 3L * C, qkv, att, scratch, B, T, T, C, NH, 1,
                                      path));
    PROF_STOP(PROF_ATTN_BWD, t0, 8.0 * B * T * T * C);
}

void attention_backward_set(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                            float *scratch, int B, int T, int C, int NH) {
    int path = gemm_path();
    double t0 = PROF_START(PROF_ATTN_BWD);
    TEAM_RUN(attention_backward_impl(dqkv, 3L * C, dqkv, datt, dout, qkv, 3L * C, qkv, att, scratch, B, T, T, C, NH, 0,
                                      path));
    PROF_STOP(PROF_ATTN_BWD, t0, 8.0 * B * T * T * C);
}

void attention_backward_rows_set(float *dq, float *dqkv, float *datt, const float *dout, const float *q,
                                 const float *qkv, const float *att, float *scratch, int B, int Tq, int T, int C,
                                 int NH) {
    int path = gemm_path();
    double t0 = PROF_START(PROF_ATTN_BWD);
    TEAM_RUN(attention_backward_impl(dq, C, dqkv, datt, dout, q, C, qkv, att, scratch, B, Tq, T, C, NH, 0, path));
    PROF_STOP(PROF_ATTN_BWD, t0, 8.0 * B * Tq * T * C);
}
