// Attention for one (image, head) pair with AVX2 and FMA (see x86/attention_avx2.h; called by
// kernels/attention.c only when the CPU has AVX2 and the GEMM path is "avx2"). The AVX-512 kernel
// (x86/attention_avx512.c) in 8-lane vectors and 16 registers: small products by a register-blocked
// tile (6 rows x 16 columns, one FMA chain per element over k ascending), the softmax and its backward
// per row, SR rows side by side, and rows of up to FUSED_MAX_T taking the softmax on their product's
// registers. A row's sums run in 16 lanes (lane j takes elements j, j + 16, ...: two vectors, the even
// and the odd 8-element pieces) added by lanes16_sum, as the portable row_sum and the AVX-512
// reductions do, so the forward gives the portable loops' bits and the backward the AVX-512 kernel's
// (its row dot products fuse multiply and add).
#include "kernels/x86/attention_avx2.h"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>
#include "kernels/x86/vecmath_avx2.h"

#define RB 6   // rows of C per register tile of mm (12 accumulators, as the GEMM micro-kernel's 6 x 16)
#define AI static inline __attribute__((always_inline)) TGT2

// Vector v of a row of NV vectors: the last one through the tail mask when MASKED (its lanes past the
// row read as zero), the others whole.
AI __m256 load_v(const float *p, int v, const int NV, const int MASKED, __m256i last) {
    return MASKED && v == NV - 1 ? _mm256_maskload_ps(p + 8 * v, last) : _mm256_loadu_ps(p + 8 * v);
}
AI void store_v(float *p, int v, const int NV, const int MASKED, __m256i last, __m256 x) {
    if (MASKED && v == NV - 1) _mm256_maskstore_ps(p + 8 * v, last, x);
    else _mm256_storeu_ps(p + 8 * v, x);
}

// x[r][v] = sum_k A[r * ars + k * aks] * B[k * ldb + 8 v + lane] for r < TR <= 8, v < NV <= 5: a tile of
// rows [0, R) of A B in registers (rows past R repeat row R - 1), one FMA chain per element over k
// ascending; lanes past the row's end zero. x has fixed sizes: a variable-length array would live in memory.
AI void tile_product(__m256 x[8][5], int R, int K, const float *A, long ars, long aks, const float *B, long ldb,
                     const int TR, const int NV, const int MASKED, __m256i last) {
    long ro[8];
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++) {
        ro[r] = (long)(r < R ? r : R - 1) * ars;
#pragma GCC unroll 5
        for (int v = 0; v < NV; v++) x[r][v] = _mm256_setzero_ps();
    }
    for (int k = 0; k < K; k++) {
        const float *b = B + (long)k * ldb, *a = A + (long)k * aks;
        __m256 bv[5];
#pragma GCC unroll 5
        for (int v = 0; v < NV; v++) bv[v] = load_v(b, v, NV, MASKED, last);
#pragma GCC unroll 8
        for (int r = 0; r < TR; r++) {
            __m256 ar = _mm256_broadcast_ss(a + ro[r]);
#pragma GCC unroll 5
            for (int v = 0; v < NV; v++) x[r][v] = _mm256_fmadd_ps(ar, bv[v], x[r][v]);
        }
    }
}

// C[r][j] (+)= sum_k A[r * ars + k * aks] * B[k * ldb + j] for r < R <= RB, j < 8 * nv (the last
// vector cut by `last` when MASKED).
AI void mm_tile(int R, int K, const float *A, long ars, long aks, const float *B, long ldb, float *C, long ldc,
                int accumulate, const int nv, const int MASKED, __m256i last) {
    __m256 acc[8][5];
    tile_product(acc, R, K, A, ars, aks, B, ldb, RB, nv, MASKED, last);
#pragma GCC unroll 6
    for (int r = 0; r < RB; r++) {
        if (r >= R) break;
        float *c = C + (long)r * ldc;
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            __m256 t = acc[r][v];
            if (accumulate) t = _mm256_add_ps(load_v(c, v, nv, MASKED, last), t);
            store_v(c, v, nv, MASKED, last, t);
        }
    }
}

// C[M][N] (+)= A . B, A(r, k) = A[r * ars + k * aks], B rows ldb apart: columns in chunks of 16, each
// chunk over every row block (the chunk of B stays in L1).
static TGT2 void mm(int M, int N, int K, const float *A, long ars, long aks, const float *B, long ldb, float *C,
                    long ldc, int accumulate) {
    for (int j0 = 0; j0 < N; j0 += 16) {
        int w = N - j0 < 16 ? N - j0 : 16, nv = (w + 7) / 8, masked = w % 8 != 0;
        __m256i last = tail8(w - 8 * (nv - 1));
        for (int r0 = 0; r0 < M; r0 += RB) {
            int R = M - r0 < RB ? M - r0 : RB;
            const float *a = A + r0 * ars, *b = B + j0;
            float *c = C + (long)r0 * ldc + j0;
            switch (2 * nv + masked) {
            case 2: mm_tile(R, K, a, ars, aks, b, ldb, c, ldc, accumulate, 1, 0, last); break;
            case 3: mm_tile(R, K, a, ars, aks, b, ldb, c, ldc, accumulate, 1, 1, last); break;
            case 4: mm_tile(R, K, a, ars, aks, b, ldb, c, ldc, accumulate, 2, 0, last); break;
            default: mm_tile(R, K, a, ars, aks, b, ldb, c, ldc, accumulate, 2, 1, last); break;
            }
        }
    }
}

// Rows per step of the row-wise passes (softmax and its backward), side by side so that their chains
// of dependent steps overlap (docs/performance.md, "Attention: rows side by side").
#define SR 4

// Rows r < R (R <= SR, ld apart): row[s] = softmax(row * scale)[s] for s < T. Piece s / 8 of a row
// adds into sum[r][(s / 8) % 2]: the 16 lanes of row_sum. Whole pieces go by plain loads and stores,
// the row's last piece, when cut, by masked ones (AMD's masked stores take many cycles each).
AI void softmax_rows(float *row, long ld, int T, float scale, const int R) {
    __m256 vs = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY), mx[SR], sum[SR][2], vmax[SR], inv[SR];
    int nf = T & ~7, ht = (nf / 8) & 1;   // the whole pieces' elements; the cut piece's half
    __m256i m = tail8(T - nf);
    __m256 mf = _mm256_castsi256_ps(m);
    for (int r = 0; r < R; r++) { mx[r] = ninf; sum[r][0] = sum[r][1] = _mm256_setzero_ps(); }
    for (int s = 0; s < nf; s += 8)
        for (int r = 0; r < R; r++) {
            __m256 x = _mm256_mul_ps(_mm256_loadu_ps(row + r * ld + s), vs);
            _mm256_storeu_ps(row + r * ld + s, x);
            mx[r] = _mm256_max_ps(mx[r], x);
        }
    if (nf < T)
        for (int r = 0; r < R; r++) {
            __m256 x = _mm256_mul_ps(_mm256_maskload_ps(row + r * ld + nf, m), vs);
            _mm256_maskstore_ps(row + r * ld + nf, m, x);
            mx[r] = _mm256_max_ps(mx[r], _mm256_blendv_ps(ninf, x, mf));
        }
    for (int r = 0; r < R; r++) vmax[r] = _mm256_set1_ps(lanes8_max(mx[r]));
    for (int s = 0; s < nf; s += 8) {
        int h = (s / 8) & 1;
        for (int r = 0; r < R; r++) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + r * ld + s), vmax[r]));
            _mm256_storeu_ps(row + r * ld + s, e);
            sum[r][h] = _mm256_add_ps(sum[r][h], e);
        }
    }
    if (nf < T)
        for (int r = 0; r < R; r++) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_maskload_ps(row + r * ld + nf, m), vmax[r]));
            _mm256_maskstore_ps(row + r * ld + nf, m, e);
            sum[r][ht] = _mm256_add_ps(sum[r][ht], _mm256_and_ps(e, mf));
        }
    for (int r = 0; r < R; r++) inv[r] = _mm256_set1_ps(1.0f / lanes16_sum(sum[r][0], sum[r][1]));
    for (int s = 0; s < nf; s += 8)
        for (int r = 0; r < R; r++)
            _mm256_storeu_ps(row + r * ld + s, _mm256_mul_ps(_mm256_loadu_ps(row + r * ld + s), inv[r]));
    if (nf < T)
        for (int r = 0; r < R; r++)
            _mm256_maskstore_ps(row + r * ld + nf, m, _mm256_mul_ps(_mm256_maskload_ps(row + r * ld + nf, m), inv[r]));
}

// Every row of att [Tq][T], SR at a time.
static TGT2 void softmax_all(float *att, int Tq, int T, float scale) {
    int t = 0;
    for (; t + SR <= Tq; t += SR) softmax_rows(att + (long)t * T, T, T, scale, SR);
    for (; t < Tq; t++) softmax_rows(att + (long)t * T, T, T, scale, 1);
}

// dS = P * (dP - rowsum(P * dP)) * scale for rows r < R (R <= SR) of p and ds (ld apart), dP in ds.
// Whole pieces by plain loads and stores, as softmax_rows.
AI void softmax_backward_rows(float *ds, const float *p, long ld, int T, float scale, const int R) {
    __m256 vs = _mm256_set1_ps(scale), acc[SR][2], dot[SR];
    int nf = T & ~7, ht = (nf / 8) & 1;
    __m256i m = tail8(T - nf);
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int s = 0; s < nf; s += 8) {
        int h = (s / 8) & 1;
        for (int r = 0; r < R; r++)
            acc[r][h] = _mm256_fmadd_ps(_mm256_loadu_ps(p + r * ld + s), _mm256_loadu_ps(ds + r * ld + s), acc[r][h]);
    }
    if (nf < T)
        for (int r = 0; r < R; r++)
            acc[r][ht] = _mm256_fmadd_ps(_mm256_maskload_ps(p + r * ld + nf, m), _mm256_maskload_ps(ds + r * ld + nf, m),
                                         acc[r][ht]);
    for (int r = 0; r < R; r++) dot[r] = _mm256_set1_ps(lanes16_sum(acc[r][0], acc[r][1]));
    for (int s = 0; s < nf; s += 8)
        for (int r = 0; r < R; r++) {
            __m256 d = _mm256_sub_ps(_mm256_loadu_ps(ds + r * ld + s), dot[r]);
            _mm256_storeu_ps(ds + r * ld + s, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(p + r * ld + s), d), vs));
        }
    if (nf < T)
        for (int r = 0; r < R; r++) {
            __m256 d = _mm256_sub_ps(_mm256_maskload_ps(ds + r * ld + nf, m), dot[r]);
            _mm256_maskstore_ps(ds + r * ld + nf, m,
                                _mm256_mul_ps(_mm256_mul_ps(_mm256_maskload_ps(p + r * ld + nf, m), d), vs));
        }
}

// dst[i][s] = src[s * ld + i] for s < T, i < hd: 8 x 8 blocks transposed in registers, the edges one
// element at a time.
static TGT2 void transpose_head(float *dst, const float *src, long ld, int T, int hd) {
    int s0 = 0;
    for (; s0 + 8 <= T; s0 += 8) {
        int i0 = 0;
        for (; i0 + 8 <= hd; i0 += 8) {
            __m256 r[8];
            for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(src + (long)(s0 + j) * ld + i0);
            transpose8x8(r);
            for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + (long)(i0 + i) * T + s0, r[i]);
        }
        for (; i0 < hd; i0++)
            for (int j = 0; j < 8; j++) dst[(long)i0 * T + s0 + j] = src[(long)(s0 + j) * ld + i0];
    }
    for (; s0 < T; s0++)
        for (int i = 0; i < hd; i++) dst[(long)i * T + s0] = src[(long)s0 * ld + i];
}

// Rows [0, R) of one head's P = softmax(scale S), S = A B (A(r, k) = A[r * ars + k], B = [K][T]),
// R <= TR, T <= 8 NV, for the product and the softmax at once: softmax_rows' operations on the tile's
// registers, so the same bits as the product stored and passed over three times.
AI void softmax_tile(int R, int K, const float *A, long ars, const float *B, int T, float *P, float scale,
                     const int TR, const int NV) {
    __m256i last = tail8(T - 8 * (NV - 1));
    __m256 lastf = _mm256_castsi256_ps(last), ninf = _mm256_set1_ps(-INFINITY);
    __m256 x[8][5];
    tile_product(x, R, K, A, ars, 1, B, T, TR, NV, 1, last);
    __m256 vs = _mm256_set1_ps(scale), mx[8], sum[8][2];
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++) { mx[r] = ninf; sum[r][0] = sum[r][1] = _mm256_setzero_ps(); }
#pragma GCC unroll 5
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 8
        for (int r = 0; r < TR; r++) {
            x[r][v] = _mm256_mul_ps(x[r][v], vs);
            mx[r] = _mm256_max_ps(mx[r], v == NV - 1 ? _mm256_blendv_ps(ninf, x[r][v], lastf) : x[r][v]);
        }
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++) mx[r] = _mm256_set1_ps(lanes8_max(mx[r]));
#pragma GCC unroll 5
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 8
        for (int r = 0; r < TR; r++) {
            x[r][v] = exp8(_mm256_sub_ps(x[r][v], mx[r]));
            sum[r][v & 1] = _mm256_add_ps(sum[r][v & 1], v == NV - 1 ? _mm256_and_ps(x[r][v], lastf) : x[r][v]);
        }
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++) mx[r] = _mm256_set1_ps(1.0f / lanes16_sum(sum[r][0], sum[r][1]));
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++)
#pragma GCC unroll 5
        for (int v = 0; v < NV; v++)
            if (r < R)   // rows past R repeat row R - 1
                store_v(P + (long)r * T, v, NV, 1, last, _mm256_mul_ps(x[r][v], mx[r]));
}

// The same for the softmax's backward: rows [0, R) of dS = P * (dP - rowsum(P * dP)) * scale with
// dP = A B in registers, as softmax_backward_rows does on dP stored.
AI void softmax_backward_tile(int R, int K, const float *A, long ars, const float *B, int T, const float *P,
                              float *dS, float scale, const int TR, const int NV) {
    __m256i last = tail8(T - 8 * (NV - 1));
    __m256 x[8][5];
    tile_product(x, R, K, A, ars, 1, B, T, TR, NV, 1, last);
    __m256 vs = _mm256_set1_ps(scale);
#pragma GCC unroll 8
    for (int r = 0; r < TR; r++) {
        if (r >= R) break;
        const float *p = P + (long)r * T;
        __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
#pragma GCC unroll 5
        for (int v = 0; v < NV; v++) acc[v & 1] = _mm256_fmadd_ps(load_v(p, v, NV, 1, last), x[r][v], acc[v & 1]);
        __m256 dot = _mm256_set1_ps(lanes16_sum(acc[0], acc[1]));
#pragma GCC unroll 5
        for (int v = 0; v < NV; v++) {
            __m256 d = _mm256_sub_ps(x[r][v], dot);
            store_v(dS + (long)r * T, v, NV, 1, last, _mm256_mul_ps(_mm256_mul_ps(load_v(p, v, NV, 1, last), d), vs));
        }
    }
}

// Rows of a tile by the width of a row: TILE_ROWS(NV) x NV accumulators, at most 12 of the 16 registers
// (beside the NV vectors of B and the broadcast of A).
#define TILE_ROWS(NV) ((NV) <= 1 ? 8 : (NV) == 2 ? 6 : (NV) == 3 ? 4 : (NV) == 4 ? 3 : 2)
#define FUSED_MAX_T 40   // rows of up to 5 vectors; longer ones take mm and the row passes

// The Tq rows of P = softmax(scale A B) ([Tq][T], back = 0) or of dS (back = 1, P given), T <= FUSED_MAX_T.
static TGT2 void softmax_fused(int back, int Tq, int T, int K, const float *A, long ars, const float *B, float *out,
                               const float *P, float scale) {
    int nv = (T + 7) / 8, rb = TILE_ROWS(nv);
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

TGT2 void attn_head_forward_avx2(float *out, long ldo, float *att, const float *q, long ldqq, const float *k,
                              const float *v, long ldq, float *kt, int Tq, int T, int hd, float scale) {
    transpose_head(kt, k, ldq, T, hd);
    if (T <= FUSED_MAX_T) softmax_fused(0, Tq, T, hd, q, ldqq, kt, att, NULL, scale);   // P = softmax(scale Q K^T)
    else {
        mm(Tq, T, hd, q, ldqq, 1, kt, T, att, T, 0);    // S = Q K^T
        softmax_all(att, Tq, T, scale);
    }
    mm(Tq, hd, T, att, T, 1, v, ldq, out, ldo, 0);      // O = P V
}

TGT2 void attn_head_backward_avx2(float *dq, long lddqq, float *dk, float *dv, long lddq, float *ds, const float *dy,
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
#else   // never called off x86: kernels/attention.c calls these on the "avx2" path alone
void attn_head_forward_avx2(float *out, long ldo, float *att, const float *q, long ldqq, const float *k,
                              const float *v, long ldq, float *kt, int Tq, int T, int hd, float scale) {
    (void)out; (void)ldo; (void)att; (void)q; (void)ldqq; (void)k; (void)v; (void)ldq; (void)kt; (void)Tq; (void)T;
    (void)hd; (void)scale;
}
void attn_head_backward_avx2(float *dq, long lddqq, float *dk, float *dv, long lddq, float *ds, const float *dy,
                               long ldy, const float *q, long ldqq, const float *k, const float *v, long ldq,
                               const float *p, float *vt, int Tq, int T, int hd, float scale, int accumulate) {
    (void)dq; (void)lddqq; (void)dk; (void)dv; (void)lddq; (void)ds; (void)dy; (void)ldy; (void)q; (void)ldqq;
    (void)k; (void)v; (void)ldq; (void)p; (void)vt; (void)Tq; (void)T; (void)hd; (void)scale; (void)accumulate;
}
#endif
