// AVX-512 micro-kernel: a 14 x 32 tile of C lives in 28 zmm registers; per k, two loads of B and 14
// broadcasts of A feed 28 FMAs. Edge tiles use masked loads/stores on columns, and an edge tile of mr
// rows runs an instance that computes only the first 4, 7 or 10 rows when mr fits in them (M = 100, a
// ViT-B gradient group's encoder rows, ends in a 2-row tile that would otherwise cost a full one).
#include "kernels/gemm_kernels.h"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include "kernels/x86/transpose_avx512.h"

#define ROWS14(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)

// Element (i, k) of A at a[i * a_rs + k * a_cs]: packed (1, MR) or unpacked rows (lda, 1). Row k of B
// at b + k * b_ks: packed (NR) or unpacked (ldb).
// halves = 2: the full 32 columns; halves = 1: only the first 16 (an edge tile with nr <= 16, which
// would otherwise spend half its FMAs on zero padding). Same arithmetic per element either way.
// spread: C's lines are fetched one per k step over the first steps instead of all at once.
static inline __attribute__((always_inline, target("avx512f,avx512vl,fma")))
void kernel_avx512(int kc, const float *restrict a, long a_rs, long a_cs, const float *restrict b, long b_ks,
                   float *restrict c, long ldc, int mr, int nr, int load_c, const float *restrict bias,
                   const int halves, const int rows, const int spread) {
#define DECL(i) __m512 c##i##_0 = _mm512_setzero_ps(), c##i##_1 = _mm512_setzero_ps();
    ROWS14(DECL)
#undef DECL
    // C's tile, stored (and read, load_c) after the k loop, is fetched now for writing: a tile that is
    // not in cache (a weight gradient, a fresh activation) then arrives while the FMAs run, instead of
    // stalling the stores at the end (docs/performance.md, "C fetched before the products"). For the
    // weight gradients (packed A: gemm_tn), one line per k step over the first 2 mr steps instead: 1-2%
    // faster there, the 28 lines at once likely crowding the fill buffers that A's and B's loads need;
    // no gain measured for the rows kernel (docs/performance.md, "C's lines one per step").
    int spread_c = spread && kc >= 2 * mr;
    for (int i = 0; !spread_c && i < mr; i++) {
        _mm_prefetch((const char *)(c + (long)i * ldc), _MM_HINT_ET0);
        if (halves == 2) _mm_prefetch((const char *)(c + (long)i * ldc + 16), _MM_HINT_ET0);
    }
#pragma GCC unroll 2
    for (int k = 0; k < kc; k++) {
        // B streams from L2: fetch 8 steps ahead. Past the panel's end this touches the next panel or
        // harmless memory (prefetches never fault).
        _mm_prefetch((const char *)(b + 8 * b_ks), _MM_HINT_T0);
        _mm_prefetch((const char *)(b + 8 * b_ks + 16), _MM_HINT_T0);
        if (spread_c && k < 2 * mr) _mm_prefetch((const char *)(c + (long)(k >> 1) * ldc + 16 * (k & 1)), _MM_HINT_ET0);
        __m512 b0 = _mm512_loadu_ps(b), b1 = halves == 2 ? _mm512_loadu_ps(b + 16) : b0;
#define STEP(i) if (i < rows) { __m512 ai = _mm512_set1_ps(a[(i) * a_rs]); c##i##_0 = _mm512_fmadd_ps(ai, b0, c##i##_0); \
        if (halves == 2) c##i##_1 = _mm512_fmadd_ps(ai, b1, c##i##_1); }
        ROWS14(STEP)
#undef STEP
        a += a_cs;
        b += b_ks;
    }
    __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
    __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
    if (bias) { bias0 = _mm512_maskz_loadu_ps(m0, bias); bias1 = _mm512_maskz_loadu_ps(m1, bias + 16); }
#define STORE(i) if (i < mr) { float *cr = c + (long)(i) * ldc; __m512 t0 = c##i##_0, t1 = c##i##_1; \
        if (bias) { t0 = _mm512_add_ps(t0, bias0); t1 = _mm512_add_ps(t1, bias1); } \
        if (load_c) { t0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr), t0); \
                      t1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, cr + 16), t1); } \
        _mm512_mask_storeu_ps(cr, m0, t0); _mm512_mask_storeu_ps(cr + 16, m1, t1); }
    ROWS14(STORE)
#undef STORE
}

// The instances: halves (1 or 2) x computed rows (4, 7, 10 or 14, the fewest that hold mr). Rows past
// mr are zero padding in A (gemm.c packs or copies edge panels with zero rows), computed and not stored.
#define DISPATCH(A_RS, A_CS, B_KS, S)                                                                   \
    do {                                                                                             \
        int h = nr <= 16 ? 1 : 2, r = mr <= 4 ? 4 : mr <= 7 ? 7 : mr <= 10 ? 10 : 14;                \
        switch (h * 100 + r) {                                                                       \
        case 104: kernel_avx512(kc, a, A_RS, A_CS, b, B_KS, c, ldc, mr, nr, load_c, bias, 1, 4, S); break;  \
        case 107: kernel_avx512(kc, a, A_RS, A_CS, b, B_KS, c, ldc, mr, nr, load_c, bias, 1, 7, S); break;  \
        case 110: kernel_avx512(kc, a, A_RS, A_CS, b, B_KS, c, ldc, mr, nr, load_c, bias, 1, 10, S); break; \
        case 114: kernel_avx512(kc, a, A_RS, A_CS, b, B_KS, c, ldc, mr, nr, load_c, bias, 1, 14, S); break; \
        case 204: kernel_avx512(kc, a, A_RS, A_CS, b, B_KS, c, ldc, mr, nr, load_c, bias, 2, 4, S); break;  \
        case 207: kernel_avx512(kc, a, A_RS, A_CS, b, B_KS, c, ldc, mr, nr, load_c, bias, 2, 7, S); break;  \
        case 210: kernel_avx512(kc, a, A_RS, A_CS, b, B_KS, c, ldc, mr, nr, load_c, bias, 2, 10, S); break; \
        default: kernel_avx512(kc, a, A_RS, A_CS, b, B_KS, c, ldc, mr, nr, load_c, bias, 2, 14, S); break;  \
        }                                                                                            \
    } while (0)

__attribute__((target("avx512f,avx512vl,fma")))
void gemm_kernel_avx512(int kc, const float *a, const float *b, float *c, long ldc, int mr, int nr,
                 int load_c, const float *bias) {
    DISPATCH(1, GEMM_AVX512_MR, GEMM_AVX512_NR, 1);
}

__attribute__((target("avx512f,avx512vl,fma")))
void gemm_kernel_avx512_rows(int kc, const float *a, long lda, const float *b, float *c, long ldc,
                      int mr, int nr, int load_c, const float *bias) {
    DISPATCH(lda, 1, GEMM_AVX512_NR, 0);
}

__attribute__((target("avx512f,avx512vl,fma")))
void gemm_kernel_avx512_brows(int kc, const float *a, const float *b, long ldb, float *c, long ldc,
                              int mr, int nr, int load_c, const float *bias) {
    DISPATCH(1, GEMM_AVX512_MR, ldb, 1);
}
// pack_strided of gemm.c for panels 32 wide: element (x, k) of the source at src[(x0 + x) * ld + k0 + k]
// goes to dst[p * kc * 32 + k * 32 + x % 32] for panel p = x / 32, rows past `width` zero. Blocks of
// 16 x 16 are transposed in registers. stream: streaming stores (dst 64-byte aligned; the caller fences).
__attribute__((target("avx512f,avx512vl,fma")))
void gemm_pack_strided32_avx512(const float *src, long ld, int k0, int kc, int x0, int width, int stream,
                                float *dst) {
    for (int p = 0; p * 32 < width; p++) {
        float *d = dst + (long)p * kc * 32;
        for (int h = 0; h < 2; h++) {
            int xr = p * 32 + h * 16, nrows = width - xr < 0 ? 0 : width - xr > 16 ? 16 : width - xr;
            for (int kb = 0; kb < kc; kb += 16) {
                int kw = kc - kb < 16 ? kc - kb : 16;
                __mmask16 km = kw == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << kw) - 1);
                __m512 r[16];
                for (int i = 0; i < 16; i++)
                    r[i] = i < nrows ? _mm512_maskz_loadu_ps(km, src + (long)(x0 + xr + i) * ld + k0 + kb)
                                     : _mm512_setzero_ps();
                transpose16x16_ps(r);
                if (stream) for (int j = 0; j < kw; j++) _mm512_stream_ps(d + (long)(kb + j) * 32 + h * 16, r[j]);
                else for (int j = 0; j < kw; j++) _mm512_storeu_ps(d + (long)(kb + j) * 32 + h * 16, r[j]);
            }
        }
    }
}
#else
void gemm_kernel_avx512(int kc, const float *a, const float *b, float *c, long ldc, int mr, int nr,
                        int load_c, const float *bias) {
    (void)kc; (void)a; (void)b; (void)c; (void)ldc; (void)mr; (void)nr; (void)load_c; (void)bias;
}
void gemm_kernel_avx512_rows(int kc, const float *a, long lda, const float *b, float *c, long ldc,
                        int mr, int nr, int load_c, const float *bias) {
    (void)kc; (void)a; (void)lda; (void)b; (void)c; (void)ldc; (void)mr; (void)nr; (void)load_c; (void)bias;
}
void gemm_kernel_avx512_brows(int kc, const float *a, const float *b, long ldb, float *c, long ldc,
                              int mr, int nr, int load_c, const float *bias) {
    (void)kc; (void)a; (void)ldb; (void)b; (void)c; (void)ldc; (void)mr; (void)nr; (void)load_c; (void)bias;
}
void gemm_pack_strided32_avx512(const float *src, long ld, int k0, int kc, int x0, int width, int stream,
                                float *dst) {
    (void)stream; (void)src; (void)ld; (void)k0; (void)kc; (void)x0; (void)width; (void)dst;
}
#endif
