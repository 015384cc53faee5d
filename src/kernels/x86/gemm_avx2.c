// AVX2 + FMA micro-kernel: a 6 x 16 tile of C in 12 ymm registers; per k, two loads of B and six
// broadcasts of A feed 12 FMAs. Edge tiles go through a small buffer (AVX2 masked stores are slow on
// some CPUs), full tiles are stored directly.
#include "kernels/gemm_kernels.h"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include "kernels/x86/vecmath_avx2.h"

#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)

// Element (i, k) of A at a[i * a_rs + k * a_cs]: packed (1, MR) or unpacked rows (lda, 1).
static inline __attribute__((always_inline, target("avx2,fma")))
void kernel_avx2(int kc, const float *restrict a, long a_rs, long a_cs, const float *restrict b,
               float *restrict c, long ldc, int mr, int nr, int load_c, const float *restrict bias) {
#define DECL(i) __m256 c##i##_0 = _mm256_setzero_ps(), c##i##_1 = _mm256_setzero_ps();
    ROWS6(DECL)
#undef DECL
#pragma GCC unroll 4
    for (int k = 0; k < kc; k++) {
        _mm_prefetch((const char *)(b + 16 * GEMM_AVX2_NR), _MM_HINT_T0); // B streams from L2
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#define STEP(i) { __m256 ai = _mm256_broadcast_ss(a + (i) * a_rs); \
        c##i##_0 = _mm256_fmadd_ps(ai, b0, c##i##_0); c##i##_1 = _mm256_fmadd_ps(ai, b1, c##i##_1); }
        ROWS6(STEP)
#undef STEP
        a += a_cs;
        b += GEMM_AVX2_NR;
    }
    if (mr == GEMM_AVX2_MR && nr == GEMM_AVX2_NR) {
        __m256 bias0 = _mm256_setzero_ps(), bias1 = _mm256_setzero_ps();
        if (bias) { bias0 = _mm256_loadu_ps(bias); bias1 = _mm256_loadu_ps(bias + 8); }
#define STORE(i) { float *cr = c + (long)(i) * ldc; __m256 t0 = c##i##_0, t1 = c##i##_1; \
        if (bias) { t0 = _mm256_add_ps(t0, bias0); t1 = _mm256_add_ps(t1, bias1); } \
        if (load_c) { t0 = _mm256_add_ps(_mm256_loadu_ps(cr), t0); \
                      t1 = _mm256_add_ps(_mm256_loadu_ps(cr + 8), t1); } \
        _mm256_storeu_ps(cr, t0); _mm256_storeu_ps(cr + 8, t1); }
        ROWS6(STORE)
#undef STORE
        return;
    }
    float tile[GEMM_AVX2_MR][GEMM_AVX2_NR];
#define SPILL(i) _mm256_storeu_ps(tile[i], c##i##_0); _mm256_storeu_ps(tile[i] + 8, c##i##_1);
    ROWS6(SPILL)
#undef SPILL
    for (int i = 0; i < mr; i++) {
        float *cr = c + (long)i * ldc;
        for (int j = 0; j < nr; j++) {
            float t = tile[i][j];
            if (bias) t += bias[j];
            cr[j] = load_c ? cr[j] + t : t;
        }
    }
}

__attribute__((target("avx2,fma")))
void gemm_kernel_avx2(int kc, const float *a, const float *b, float *c, long ldc, int mr, int nr,
                 int load_c, const float *bias) {
    kernel_avx2(kc, a, 1, GEMM_AVX2_MR, b, c, ldc, mr, nr, load_c, bias);
}

__attribute__((target("avx2,fma")))
void gemm_kernel_avx2_rows(int kc, const float *a, long lda, const float *b, float *c, long ldc,
                      int mr, int nr, int load_c, const float *bias) {
    kernel_avx2(kc, a, lda, 1, b, c, ldc, mr, nr, load_c, bias);
}
// pack_strided of gemm.c for panels 16 wide: element (x, k) of the source at src[(x0 + x) * ld + k0 + k]
// goes to dst[p * kc * 16 + k * 16 + x % 16] for panel p = x / 16, rows past `width` zero. Each 8-step
// block of k is two 8 x 8 blocks (the panel's halves) transposed in registers, then stored k by k, the
// two halves of each 64-byte line one after the other. stream: streaming stores (dst 64-byte aligned;
// the caller fences), each line written whole by two neighbouring stores.
TGT2 void gemm_pack_strided16_avx2(const float *src, long ld, int k0, int kc, int x0, int width, int stream,
                                   float *dst) {
    for (int p = 0; p * 16 < width; p++) {
        float *d = dst + (long)p * kc * 16;
        int nrows = width - p * 16 > 16 ? 16 : width - p * 16;
        const float *s0 = src + (long)(x0 + p * 16) * ld + k0;
        for (int kb = 0; kb < kc; kb += 8) {
            int kw = kc - kb < 8 ? kc - kb : 8;
            __m256i km = tail8(kw);
            __m256 r[2][8];
            for (int h = 0; h < 2; h++) {
                for (int i = 0; i < 8; i++) {
                    const float *row = s0 + (long)(h * 8 + i) * ld + kb;
                    r[h][i] = h * 8 + i >= nrows ? _mm256_setzero_ps()
                              : kw == 8      ? _mm256_loadu_ps(row)
                                             : _mm256_maskload_ps(row, km);
                }
                transpose8x8(r[h]);
            }
            float *dk = d + (long)kb * 16;
            if (stream)
                for (int j = 0; j < kw; j++) {
                    _mm256_stream_ps(dk + j * 16, r[0][j]);
                    _mm256_stream_ps(dk + j * 16 + 8, r[1][j]);
                }
            else
                for (int j = 0; j < kw; j++) {
                    _mm256_storeu_ps(dk + j * 16, r[0][j]);
                    _mm256_storeu_ps(dk + j * 16 + 8, r[1][j]);
                }
        }
    }
}
#else
void gemm_kernel_avx2(int kc, const float *a, const float *b, float *c, long ldc, int mr, int nr,
                      int load_c, const float *bias) {
    (void)kc; (void)a; (void)b; (void)c; (void)ldc; (void)mr; (void)nr; (void)load_c; (void)bias;
}
void gemm_kernel_avx2_rows(int kc, const float *a, long lda, const float *b, float *c, long ldc,
                        int mr, int nr, int load_c, const float *bias) {
    (void)kc; (void)a; (void)lda; (void)b; (void)c; (void)ldc; (void)mr; (void)nr; (void)load_c; (void)bias;
}
void gemm_pack_strided16_avx2(const float *src, long ld, int k0, int kc, int x0, int width, int stream,
                              float *dst) {
    (void)stream; (void)src; (void)ld; (void)k0; (void)kc; (void)x0; (void)width; (void)dst;
}
#endif
