// Layer kernels, the fast versions the model calls (the definitions are the *_ref loops in ops.c).
// Attention runs per (image, head) kernels with AVX-512 (ops_avx512.c) on the "avx512" GEMM path.
// The rest is plain C written so that -O3 vectorises it: inner loops run over contiguous floats with
// no reduction carried across lanes; where a row must be summed (LayerNorm), it is summed in VL fixed
// lanes (lane j takes elements j, j+VL, ...) and the lanes are added in a fixed tree, so the order
// depends on the sizes only. Threads own output rows / columns / (image, head) pairs: results are
// bitwise identical for any thread count. Explicit fmaf where a fused multiply-add is wanted (the
// build is ISO C, so the compiler does not contract a*b+c on its own).
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "kernels/cpu.h"
#include "kernels/ops.h"
#include "kernels/ops_kernels.h"

#define VL 16   // lanes of the partial sums: one AVX-512 vector, two AVX2 vectors

static inline float lanes_sum(const float *acc) {
    float s8[8];
    for (int j = 0; j < 8; j++) s8[j] = acc[j] + acc[j + 8];
    float s4[4];
    for (int j = 0; j < 4; j++) s4[j] = s8[j] + s8[j + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

// ---------------------------------------------------------------------------------------------
// exp and erf for vector loops

// exp(x) = 2^n e^r with n = round(x / ln 2) (round-to-nearest by the 1.5 * 2^23 trick), r = x - n ln 2
// in two steps (Cody-Waite: ln 2 = 0.693359375 - 2.12194440e-4, the first part exact in n * hi),
// |r| <= 0.35, e^r by its degree-7 Taylor polynomial (truncation < 6e-9 relative). x is clamped to
// [-87, 88] so 2^n stays a normal float; exp(-87) = 1.6e-38 stands for anything smaller.
static inline float exp_approx(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = fmaf(n, -0.693359375f, x);
    r = fmaf(n, 2.12194440e-4f, r);
    float p = 1.0f / 5040.0f;
    p = fmaf(p, r, 1.0f / 720.0f);
    p = fmaf(p, r, 1.0f / 120.0f);
    p = fmaf(p, r, 1.0f / 24.0f);
    p = fmaf(p, r, 1.0f / 6.0f);
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

// Abramowitz & Stegun 7.1.26: for z >= 0, erfc(z) = t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^{-z^2}
// with t = 1 / (1 + p z); |error| <= 1.5e-7 in exact arithmetic. Returns that erfc(|z|).
static inline float erfc_abs(float z, float e_minus_z2) {
    float t = 1.0f / fmaf(0.3275911f, fabsf(z), 1.0f);
    float p = 1.061405429f;
    p = fmaf(p, t, -1.453152027f);
    p = fmaf(p, t, 1.421413741f);
    p = fmaf(p, t, -0.284496736f);
    p = fmaf(p, t, 0.254829592f);
    return p * t * e_minus_z2;
}

static inline float erf_approx(float x) {
    float c = erfc_abs(x, exp_approx(-x * x));
    float y = 1.0f - c;
    return x < 0.0f ? -y : y;
}

// Phi(x) = 0.5 (1 + erf(x / sqrt 2)): for x < 0 it is 0.5 erfc(|x| / sqrt 2) directly (no
// cancellation), and e^{-x^2/2} is shared with the density phi(x) = e^{-x^2/2} / sqrt(2 pi).
static inline float normal_cdf(float x, float e_half) {
    float q = 0.5f * erfc_abs(x * (float)M_SQRT1_2, e_half);
    return x < 0.0f ? q : 1.0f - q;
}

void erf_approx_array(float *out, const float *inp, long N) {
    for (long i = 0; i < N; i++) out[i] = erf_approx(inp[i]);
}

void exp_approx_array(float *out, const float *inp, long N) {
    for (long i = 0; i < N; i++) out[i] = exp_approx(inp[i]);
}

// ---------------------------------------------------------------------------------------------
// GELU

void gelu_forward(float *out, const float *inp, long N) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) {
        float x = inp[i];
        out[i] = x * normal_cdf(x, exp_approx(-0.5f * x * x));
    }
}

// gelu'(x) = Phi(x) + x phi(x).
static inline float gelu_grad(float x) {
    float e = exp_approx(-0.5f * x * x);
    return normal_cdf(x, e) + x * (0.39894228040143267794f * e);
}

void gelu_backward(float *dinp, const float *inp, const float *dout, long N) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) dinp[i] += dout[i] * gelu_grad(inp[i]);
}

void gelu_backward_set(float *dinp, const float *inp, const float *dout, long N) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) dinp[i] = dout[i] * gelu_grad(inp[i]);
}

// ---------------------------------------------------------------------------------------------
// LayerNorm

static float row_sum(const float *x, int C) {
    float acc[VL] = {0};
    int i = 0;
    for (; i + VL <= C; i += VL)
        for (int j = 0; j < VL; j++) acc[j] += x[i + j];
    for (int j = 0; i + j < C; j++) acc[j] += x[i + j];
    return lanes_sum(acc);
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                       const float *bias, int N, int C, float eps) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float m = row_sum(x, C) / (float)C;
        float acc[VL] = {0};
        int i = 0;
        for (; i + VL <= C; i += VL)
            for (int j = 0; j < VL; j++) { float d = x[i + j] - m; acc[j] += d * d; }
        for (int j = 0; i + j < C; j++) { float d = x[i + j] - m; acc[j] += d * d; }
        float v = lanes_sum(acc) / (float)C;
        float s = 1.0f / sqrtf(v + eps);
        float *o = out + (long)n * C;
        for (i = 0; i < C; i++) o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

// Columns are cut into blocks of CB; each thread owns whole blocks and sums rows in ascending order,
// exactly as the reference (so dweight / dbias equal it bitwise), reading rows contiguously.
#define CB 64

void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C, *dy = dout + (long)n * C;
        float m = mean[n], s = rstd[n];
        float ag[VL] = {0}, agx[VL] = {0};
        int i = 0;
        for (; i + VL <= C; i += VL)
            for (int j = 0; j < VL; j++) {
                float g = dy[i + j] * weight[i + j];
                ag[j] += g;
                agx[j] += g * ((x[i + j] - m) * s);
            }
        for (int j = 0; i + j < C; j++) {
            float g = dy[i + j] * weight[i + j];
            ag[j] += g;
            agx[j] += g * ((x[i + j] - m) * s);
        }
        float gmean = lanes_sum(ag) / (float)C, gxmean = lanes_sum(agx) / (float)C;
        float *dx = dinp + (long)n * C;
        for (i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            dx[i] += s * (dy[i] * weight[i] - gmean - xhat * gxmean);
        }
    }
    int nblocks = (C + CB - 1) / CB;
    #pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CB, w = C - c0 < CB ? C - c0 : CB;
        float dw[CB] = {0}, db[CB] = {0};
        for (int n = 0; n < N; n++) {
            const float *dy = dout + (long)n * C + c0, *x = inp + (long)n * C + c0;
            float m = mean[n], s = rstd[n];
            if (w == CB)   // a constant trip count keeps dw, db in registers
                for (int j = 0; j < CB; j++) {
                    dw[j] += dy[j] * (x[j] - m) * s;
                    db[j] += dy[j];
                }
            else
                for (int j = 0; j < w; j++) {
                    dw[j] += dy[j] * (x[j] - m) * s;
                    db[j] += dy[j];
                }
        }
        for (int j = 0; j < w; j++) { dweight[c0 + j] += dw[j]; dbias[c0 + j] += db[j]; }
    }
}

// dinp [N, C] = dout * gelu'(inp) and dbias [C] += its column sums, in one pass over the rows: threads
// own column blocks; each column is summed over rows in ascending order from 0, then added to dbias,
// exactly as column_sum_accumulate (bitwise the same), without reading dinp back.
void gelu_backward_set_colsum(float *dinp, float *dbias, const float *inp, const float *dout, int N, int C) {
    int nblocks = (C + CB - 1) / CB;
    #pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CB, w = C - c0 < CB ? C - c0 : CB;
        float acc[CB] = {0};
        for (int n = 0; n < N; n++) {
            long o = (long)n * C + c0;
            if (w == CB)
                for (int j = 0; j < CB; j++) { float g = dout[o + j] * gelu_grad(inp[o + j]); dinp[o + j] = g; acc[j] += g; }
            else
                for (int j = 0; j < w; j++) { float g = dout[o + j] * gelu_grad(inp[o + j]); dinp[o + j] = g; acc[j] += g; }
        }
        for (int j = 0; j < w; j++) dbias[c0 + j] += acc[j];
    }
}

void column_sum_accumulate(float *dbias, const float *dout, int N, int OC) {
    int nblocks = (OC + CB - 1) / CB;
    #pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CB, w = OC - c0 < CB ? OC - c0 : CB;
        float acc[CB] = {0};
        if (w == CB)   // a constant trip count keeps acc in registers
            for (int n = 0; n < N; n++) {
                const float *d = dout + (long)n * OC + c0;
                for (int j = 0; j < CB; j++) acc[j] += d[j];
            }
        else
            for (int n = 0; n < N; n++) {
                const float *d = dout + (long)n * OC + c0;
                for (int j = 0; j < w; j++) acc[j] += d[j];
            }
        for (int j = 0; j < w; j++) dbias[c0 + j] += acc[j];
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

void attention_forward(float *out, float *att, const float *qkv, float *scratch, int B, int T, int C, int NH) {
    int hd = C / NH;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hd);
    int avx512 = gemm_path() == GEMM_PATH_AVX512;
    #pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *q = qkv + (long)b * T * C3 + h * hd, *k = q + C, *v = q + 2 * C;
        float *kt = scratch + (long)bh * hd * T;          // [hd][T]
        float *a = att + (long)bh * T * T;                // [T][T]
        if (avx512) {
            attn_head_forward_avx512(out + (long)b * T * C + h * hd, C, a, q, k, v, C3, kt, T, hd, scale);
            continue;
        }
        transpose_head(kt, k, C3, T, hd);
        rows_mm(T, T, hd, q, C3, 1, kt, T, a, T, 0);      // S = Q K^T
        for (int t = 0; t < T; t++) {
            float *row = a + (long)t * T;
            float maxv = -INFINITY;
            for (int s = 0; s < T; s++) { row[s] *= scale; maxv = row[s] > maxv ? row[s] : maxv; }
            for (int s = 0; s < T; s++) row[s] = exp_approx(row[s] - maxv);
            float inv = 1.0f / row_sum(row, T);
            for (int s = 0; s < T; s++) row[s] *= inv;
        }
        rows_mm(T, hd, T, a, T, 1, v, C3, out + (long)b * T * C + h * hd, C, 0);   // O = P V
    }
}

// Per (image, head), P = att, dO = dout: dP = dO V^T; dS = P * (dP - rowsum(P * dP)) * scale;
// dV += P^T dO; dQ += dS K; dK += dS^T Q.
static void attention_backward_impl(float *dqkv, float *datt, const float *dout, const float *qkv,
                                    const float *att, float *scratch, int B, int T, int C, int NH,
                                    int accumulate) {
    int hd = C / NH;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hd);
    int avx512 = gemm_path() == GEMM_PATH_AVX512;
    #pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *q = qkv + (long)b * T * C3 + h * hd, *k = q + C, *v = q + 2 * C;
        float *dq = dqkv + (long)b * T * C3 + h * hd, *dk = dq + C, *dv = dq + 2 * C;
        const float *dy = dout + (long)b * T * C + h * hd, *p = att + (long)bh * T * T;
        float *vt = scratch + (long)bh * hd * T, *ds = datt + (long)bh * T * T;
        if (avx512) {
            attn_head_backward_avx512(dq, dk, dv, C3, ds, dy, C, q, k, v, C3, p, vt, T, hd, scale, accumulate);
            continue;
        }
        transpose_head(vt, v, C3, T, hd);
        rows_mm(T, T, hd, dy, C, 1, vt, T, ds, T, 0);     // dP
        for (int t = 0; t < T; t++) {
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
        rows_mm(T, hd, T, p, 1, T, dy, C, dv, C3, accumulate);      // dV (+)= P^T dO
        rows_mm(T, hd, T, ds, T, 1, k, C3, dq, C3, accumulate);     // dQ (+)= dS K
        rows_mm(T, hd, T, ds, 1, T, q, C3, dk, C3, accumulate);     // dK (+)= dS^T Q
    }
}

void attention_backward(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                        float *scratch, int B, int T, int C, int NH) {
    attention_backward_impl(dqkv, datt, dout, qkv, att, scratch, B, T, C, NH, 1);
}

void attention_backward_set(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                            float *scratch, int B, int T, int C, int NH) {
    attention_backward_impl(dqkv, datt, dout, qkv, att, scratch, B, T, C, NH, 0);
}
