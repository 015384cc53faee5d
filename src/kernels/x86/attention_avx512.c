// Attention for one (image, head) pair with AVX-512 (see x86/attention_avx512.h; called by
// kernels/attention.c only when the CPU has AVX-512 and the GEMM path is "avx512"). The same math as
// the portable loops in kernels/attention.c: small products by a register-blocked kernel (6 rows x up to 64 columns of C in zmm
// registers, one FMA chain per element over k ascending), the softmax and its backward per row with
// masked vectors, SR rows side by side, exp by the same polynomial as exp_approx. Rows of up to
// FUSED_MAX_T take the softmax (and its backward) on the registers of their product's tile instead.
// The forward gives the portable loops' bits (tests/test_ops.c); the backward's row dot products fuse
// multiply and add.
#include "kernels/x86/attention_avx512.h"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>
#include "kernels/x86/transpose_avx512.h"
#include "kernels/x86/vecmath_avx512.h"

#define RB 6   // rows of C per register tile

// x[r][v] = sum_k A[r * ars + k * aks] * B[k * ldb + 16 v + lane] for r < TR <= 8, v < NV <= 5, lanes
// of the last vector past `last` zero: a tile of rows [0, R) of A B in registers (rows past R repeat
// row R - 1), one FMA chain per element over k ascending. The tile's destination `out` (R rows, ldo
// apart) is fetched for writing while the FMAs run, as the GEMM micro-kernel does (docs/performance.md,
// "C fetched before the products"). x has fixed sizes: a variable-length array would live in memory.
static inline __attribute__((always_inline)) TGT
void tile_product(__m512 x[8][5], int R, int K, const float *A, long ars, long aks, const float *B, long ldb,
                  float *out, long ldo, const int TR, const int NV, __mmask16 last) {
    long ro[8];
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++) {
        ro[r] = (long)(r < R ? r : R - 1) * ars;
#pragma GCC unroll 5
        for (int v = 0; v < NV; v++) x[r][v] = _mm512_setzero_ps();
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++) _mm_prefetch((const char *)(out + (long)r * ldo + 16 * v), _MM_HINT_ET0);
    for (int k = 0; k < K; k++) {
        const float *b = B + (long)k * ldb, *a = A + (long)k * aks;
        __m512 bv[5];
#pragma GCC unroll 5
        for (int v = 0; v < NV; v++)
            bv[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(last, b + 16 * v) : _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 8
        for (int r = 0; r < TR; r++) {
            __m512 ar = _mm512_set1_ps(a[ro[r]]);
#pragma GCC unroll 5
            for (int v = 0; v < NV; v++) x[r][v] = _mm512_fmadd_ps(ar, bv[v], x[r][v]);
        }
    }
}

// C[r][j] (+)= sum_k A[r * ars + k * aks] * B[k * ldb + j] for r < R <= RB, j < 16 * (nv - 1) + |last|.
// Rows past R repeat row R - 1 (computed, not stored).
static inline __attribute__((always_inline)) TGT
void mm_tile(int R, int K, const float *A, long ars, long aks, const float *B, long ldb, float *C,
             long ldc, int accumulate, const int nv, __mmask16 last) {
    __m512 acc[8][5];
    tile_product(acc, R, K, A, ars, aks, B, ldb, C, ldc, RB, nv, last);
#pragma GCC unroll 6
    for (int r = 0; r < RB; r++) {
        if (r >= R) break;
        float *c = C + (long)r * ldc;
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            __mmask16 m = v == nv - 1 ? last : (__mmask16)0xFFFF;
            __m512 t = acc[r][v];
            if (accumulate) t = _mm512_add_ps(_mm512_maskz_loadu_ps(m, c + 16 * v), t);
            _mm512_mask_storeu_ps(c + 16 * v, m, t);
        }
    }
}

// C[M][N] (+)= A . B, A(r, k) = A[r * ars + k * aks], B rows ldb apart: columns in chunks of 64,
// each chunk over every row block (the chunk of B stays in L1).
static TGT void mm(int M, int N, int K, const float *A, long ars, long aks, const float *B, long ldb,
                   float *C, long ldc, int accumulate) {
    for (int j0 = 0; j0 < N; j0 += 64) {
        int w = N - j0 < 64 ? N - j0 : 64, nv = (w + 15) / 16;
        __mmask16 last = tail_mask(w - 16 * (nv - 1));
        for (int r0 = 0; r0 < M; r0 += RB) {
            int R = M - r0 < RB ? M - r0 : RB;
            const float *a = A + r0 * ars;
            const float *b = B + j0;
            float *c = C + (long)r0 * ldc + j0;
            switch (nv) {
            case 1: mm_tile(R, K, a, ars, aks, b, ldb, c, ldc, accumulate, 1, last); break;
            case 2: mm_tile(R, K, a, ars, aks, b, ldb, c, ldc, accumulate, 2, last); break;
            case 3: mm_tile(R, K, a, ars, aks, b, ldb, c, ldc, accumulate, 3, last); break;
            default: mm_tile(R, K, a, ars, aks, b, ldb, c, ldc, accumulate, 4, last); break;
            }
        }
    }
}

// Rows per step of the row-wise passes (softmax and its backward): each row is a chain of dependent
// steps (its max, then its exps, their sum, the division), so rows taken one at a time left the core
// waiting on each chain; SR rows side by side keep it busy (docs/performance.md, "Attention: rows side
// by side"). Each row gets the same operations either way.
#define SR 4

// Rows r < R (R <= SR, ld apart): row[s] = softmax(row * scale)[s] for s < T.
static inline __attribute__((always_inline)) TGT
void softmax_rows(float *row, long ld, int T, float scale, const int R) {
    __m512 vs = _mm512_set1_ps(scale), mx[SR], sum[SR], vmax[SR], inv[SR];
    for (int r = 0; r < R; r++) { mx[r] = _mm512_set1_ps(-INFINITY); sum[r] = _mm512_setzero_ps(); }
    for (int s = 0; s < T; s += 16) {
        __mmask16 m = tail_mask(T - s);
        for (int r = 0; r < R; r++) {
            __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + r * ld + s), vs);
            _mm512_mask_storeu_ps(row + r * ld + s, m, x);
            mx[r] = _mm512_mask_max_ps(mx[r], m, mx[r], x);
        }
    }
    for (int r = 0; r < R; r++) vmax[r] = _mm512_set1_ps(_mm512_reduce_max_ps(mx[r]));
    for (int s = 0; s < T; s += 16) {
        __mmask16 m = tail_mask(T - s);
        for (int r = 0; r < R; r++) {
            __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, row + r * ld + s), vmax[r]));
            _mm512_mask_storeu_ps(row + r * ld + s, m, e);
            sum[r] = _mm512_mask_add_ps(sum[r], m, sum[r], e);
        }
    }
    for (int r = 0; r < R; r++) inv[r] = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum[r]));
    for (int s = 0; s < T; s += 16) {
        __mmask16 m = tail_mask(T - s);
        for (int r = 0; r < R; r++)
            _mm512_mask_storeu_ps(row + r * ld + s, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + r * ld + s), inv[r]));
    }
}

// Every row of att [Tq][T], SR at a time.
static TGT void softmax_all(float *att, int Tq, int T, float scale) {
    int t = 0;
    for (; t + SR <= Tq; t += SR) softmax_rows(att + (long)t * T, T, T, scale, SR);
    for (; t < Tq; t++) softmax_rows(att + (long)t * T, T, T, scale, 1);
}

// dS = P * (dP - rowsum(P * dP)) * scale for rows r < R (R <= SR) of p and ds (ld apart), dP in ds.
static inline __attribute__((always_inline)) TGT
void softmax_backward_rows(float *ds, const float *p, long ld, int T, float scale, const int R) {
    __m512 vs = _mm512_set1_ps(scale), acc[SR], dot[SR];
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
    for (int s = 0; s < T; s += 16) {
        __mmask16 m = tail_mask(T - s);
        for (int r = 0; r < R; r++)
            acc[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, p + r * ld + s), _mm512_maskz_loadu_ps(m, ds + r * ld + s),
                                     acc[r]);
    }
    for (int r = 0; r < R; r++) dot[r] = _mm512_set1_ps(_mm512_reduce_add_ps(acc[r]));
    for (int s = 0; s < T; s += 16) {
        __mmask16 m = tail_mask(T - s);
        for (int r = 0; r < R; r++) {
            __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, ds + r * ld + s), dot[r]);
            _mm512_mask_storeu_ps(ds + r * ld + s, m,
                                  _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, p + r * ld + s), d), vs));
        }
    }
}

// dst[i][s] = src[s * ld + i] for s < T, i < hd, by 16 x 16 blocks transposed in registers.
static TGT void transpose_head(float *dst, const float *src, long ld, int T, int hd) {
    for (int s0 = 0; s0 < T; s0 += 16) {
        int ns = T - s0 < 16 ? T - s0 : 16;
        __mmask16 ms = tail_mask(ns);
        for (int i0 = 0; i0 < hd; i0 += 16) {
            int ni = hd - i0 < 16 ? hd - i0 : 16;
            __mmask16 mi = tail_mask(ni);
            __m512 r[16];
            for (int j = 0; j < 16; j++)
                r[j] = j < ns ? _mm512_maskz_loadu_ps(mi, src + (long)(s0 + j) * ld + i0) : _mm512_setzero_ps();
            transpose16x16_ps(r);
            for (int i = 0; i < ni; i++) _mm512_mask_storeu_ps(dst + (long)(i0 + i) * T + s0, ms, r[i]);
        }
    }
}

// Rows [0, R) of one head's P = softmax(scale S), S = A B (A(r, k) = A[r * ars + k], B = [K][T]),
// R <= TR, T <= 16 NV, for the product and the softmax at once: the tile of S in registers (one FMA
// chain per element over k ascending, as mm_tile), then softmax_rows' operations on those registers
// in the same order, so the same bits as the product stored and passed over three times
// (docs/performance.md, "Attention: the softmax on the product's registers").
static inline __attribute__((always_inline)) TGT
void softmax_tile(int R, int K, const float *A, long ars, const float *B, int T, float *P, float scale,
                  const int TR, const int NV) {
    __mmask16 last = tail_mask(T - 16 * (NV - 1));
    __m512 x[8][5];
    tile_product(x, R, K, A, ars, 1, B, T, P, T, TR, NV, last);
    // Rows side by side in each pass (as softmax_rows), so that their chains overlap.
    __m512 vs = _mm512_set1_ps(scale), mx[8], sum[8];
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++) { mx[r] = _mm512_set1_ps(-INFINITY); sum[r] = _mm512_setzero_ps(); }
#pragma GCC unroll 5
    for (int v = 0; v < NV; v++) {
        __mmask16 m = v == NV - 1 ? last : (__mmask16)0xFFFF;
#pragma GCC unroll 8
        for (int r = 0; r < TR; r++) {
            x[r][v] = _mm512_mul_ps(x[r][v], vs);
            mx[r] = _mm512_mask_max_ps(mx[r], m, mx[r], x[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++) mx[r] = _mm512_set1_ps(_mm512_reduce_max_ps(mx[r]));
#pragma GCC unroll 5
    for (int v = 0; v < NV; v++) {
        __mmask16 m = v == NV - 1 ? last : (__mmask16)0xFFFF;
#pragma GCC unroll 8
        for (int r = 0; r < TR; r++) {
            x[r][v] = exp16(_mm512_sub_ps(x[r][v], mx[r]));
            sum[r] = _mm512_mask_add_ps(sum[r], m, sum[r], x[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++) sum[r] = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum[r]));
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++)
#pragma GCC unroll 5
        for (int v = 0; v < NV; v++)
            if (r < R)   // rows past R repeat row R - 1
                _mm512_mask_storeu_ps(P + (long)r * T + 16 * v, v == NV - 1 ? last : (__mmask16)0xFFFF,
                                      _mm512_mul_ps(x[r][v], sum[r]));
}

// The same for the softmax's backward: rows [0, R) of dS = P * (dP - rowsum(P * dP)) * scale with
// dP = A B in registers, as softmax_backward_rows does on dP stored.
static inline __attribute__((always_inline)) TGT
void softmax_backward_tile(int R, int K, const float *A, long ars, const float *B, int T, const float *P,
                           float *dS, float scale, const int TR, const int NV) {
    __mmask16 last = tail_mask(T - 16 * (NV - 1));
    __m512 x[8][5];
    tile_product(x, R, K, A, ars, 1, B, T, dS, T, TR, NV, last);
    __m512 vs = _mm512_set1_ps(scale);
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++) {
        const float *p = P + (long)(r < R ? r : R - 1) * T;
        __m512 acc = _mm512_setzero_ps();
#pragma GCC unroll 5
        for (int v = 0; v < NV; v++) {
            __mmask16 m = v == NV - 1 ? last : (__mmask16)0xFFFF;
            acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, p + 16 * v), x[r][v], acc);
        }
        __m512 dot = _mm512_set1_ps(_mm512_reduce_add_ps(acc));
#pragma GCC unroll 5
        for (int v = 0; v < NV; v++) {
            __mmask16 m = v == NV - 1 ? last : (__mmask16)0xFFFF;
            __m512 d = _mm512_sub_ps(x[r][v], dot);
            if (r < R)
                _mm512_mask_storeu_ps(dS + (long)r * T + 16 * v, m,
                                  _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, p + 16 * v), d), vs));
        }
    }
}

// Rows of a tile by the width of a row: TILE_ROWS(NV) x NV accumulators (at most 20 of the 32 registers).
#define TILE_ROWS(NV) ((NV) <= 1 ? 8 : (NV) <= 3 ? 6 : 4)
#define FUSED_MAX_T 80   // rows of up to 5 vectors; longer ones take mm and the row passes

// The Tq rows of P = softmax(scale A B) ([Tq][T], back = 0) or of dS (back = 1, P given), T <= FUSED_MAX_T.
static TGT void softmax_fused(int back, int Tq, int T, int K, const float *A, long ars, const float *B, float *out,
                              const float *P, float scale) {
    int nv = (T + 15) / 16, rb = TILE_ROWS(nv);
    for (int r0 = 0; r0 < Tq; r0 += rb) {
        int R = Tq - r0 < rb ? Tq - r0 : rb;
        const float *a = A + r0 * ars;
        float *o = out + (long)r0 * T;
        const float *p = P + (long)r0 * T;
#define SOFTMAX_CASE(NV)                                                                            \
        case NV:                                                                                    \
            if (back) softmax_backward_tile(R, K, a, ars, B, T, p, o, scale, TILE_ROWS(NV), NV);   \
            else softmax_tile(R, K, a, ars, B, T, o, scale, TILE_ROWS(NV), NV);                     \
            break;
        switch (nv) {
        SOFTMAX_CASE(1)
        SOFTMAX_CASE(2)
        SOFTMAX_CASE(3)
        SOFTMAX_CASE(4)
        SOFTMAX_CASE(5)
        }
#undef SOFTMAX_CASE
    }
}

TGT void attn_head_forward_avx512(float *out, long ldo, float *att, const float *q, long ldqq, const float *k,
                              const float *v, long ldq, float *kt, int Tq, int T, int hd, float scale) {
    transpose_head(kt, k, ldq, T, hd);
    if (T <= FUSED_MAX_T) softmax_fused(0, Tq, T, hd, q, ldqq, kt, att, NULL, scale);   // P = softmax(scale Q K^T)
    else {
        mm(Tq, T, hd, q, ldqq, 1, kt, T, att, T, 0);    // S = Q K^T
        softmax_all(att, Tq, T, scale);
    }
    mm(Tq, hd, T, att, T, 1, v, ldq, out, ldo, 0);      // O = P V
}

TGT void attn_head_backward_avx512(float *dq, long lddqq, float *dk, float *dv, long lddq, float *ds, const float *dy,
                               long ldy, const float *q, long ldqq, const float *k, const float *v, long ldq,
                               const float *p, float *vt, int Tq, int T, int hd, float scale, int accumulate) {
    transpose_head(vt, v, ldq, T, hd);
    if (T <= FUSED_MAX_T) softmax_fused(1, Tq, T, hd, dy, ldy, vt, ds, p, scale);   // dS from dP = dO V^T
    else {
        mm(Tq, T, hd, dy, ldy, 1, vt, T, ds, T, 0);     // dP = dO V^T
        int t = 0;                                      // dS = P * (dP - rowsum(P * dP)) * scale
        for (; t + SR <= Tq; t += SR) softmax_backward_rows(ds + (long)t * T, p + (long)t * T, T, T, scale, SR);
        for (; t < Tq; t++) softmax_backward_rows(ds + (long)t * T, p + (long)t * T, T, T, scale, 1);
    }
    mm(T, hd, Tq, p, 1, T, dy, ldy, dv, lddq, accumulate);        // dV (+)= P^T dO
    mm(Tq, hd, T, ds, T, 1, k, ldq, dq, lddqq, accumulate);       // dQ (+)= dS K
    mm(T, hd, Tq, ds, 1, T, q, ldqq, dk, lddq, accumulate);       // dK (+)= dS^T Q
}
#else
void attn_head_forward_avx512(float *out, long ldo, float *att, const float *q, long ldqq, const float *k,
                              const float *v, long ldq, float *kt, int Tq, int T, int hd, float scale) {
    (void)out; (void)ldo; (void)att; (void)q; (void)ldqq; (void)k; (void)v; (void)ldq; (void)kt; (void)Tq; (void)T;
    (void)hd; (void)scale;
}
void attn_head_backward_avx512(float *dq, long lddqq, float *dk, float *dv, long lddq, float *ds, const float *dy,
                               long ldy, const float *q, long ldqq, const float *k, const float *v, long ldq,
                               const float *p, float *vt, int Tq, int T, int hd, float scale, int accumulate) {
    (void)dq; (void)lddqq; (void)dk; (void)dv; (void)lddq; (void)ds; (void)dy; (void)ldy; (void)q; (void)ldqq;
    (void)k; (void)v; (void)ldq; (void)p; (void)vt; (void)Tq; (void)T; (void)hd; (void)scale; (void)accumulate;
}
#endif
