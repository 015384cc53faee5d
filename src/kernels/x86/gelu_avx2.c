// GELU with AVX2 and FMA: see x86/gelu_avx2.h.
#include "kernels/x86/gelu_avx2.h"
#if defined(__x86_64__) || defined(__i386__)
#include "kernels/x86/vecmath_avx2.h"

// out = gelu(x) = x Phi(x), and *dgelu = gelu'(x) = Phi(x) + x phi(x) (the portable loop's
// operations: dgelu_from in kernels/gelu.c).
static inline TGT2 __m256 gelu8(__m256 x, __m256 *dgelu) {
    __m256 e = exp8(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), x), x)), cdf = normal_cdf8(x, e);
    *dgelu = _mm256_add_ps(cdf, _mm256_mul_ps(x, _mm256_mul_ps(_mm256_set1_ps(0.39894228040143267794f), e)));
    return _mm256_mul_ps(x, cdf);
}

TGT2 void gelu_forward_avx2(float *out, float *xd, long n) {
    long i = 0;
    __m256 d;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(out + i, gelu8(_mm256_loadu_ps(xd + i), &d));
        _mm256_storeu_ps(xd + i, d);
    }
    if (i < n) {
        __m256i m = tail8((int)(n - i));
        _mm256_maskstore_ps(out + i, m, gelu8(_mm256_maskload_ps(xd + i, m), &d));
        _mm256_maskstore_ps(xd + i, m, d);
    }
}

TGT2 void gelu_backward_rows_avx2(float *dinp, float *acc, const float *dgelu, const float *dout, int R, int C) {
    for (int j = 0; j < C; j++) acc[j] = 0.0f;
    for (int r = 0; r < R; r++) {   // row by row: each row read front to back, as it lies in memory
        long o = (long)r * C;
        int j = 0;
        for (; j + 8 <= C; j += 8) {
            __m256 g = _mm256_mul_ps(_mm256_loadu_ps(dout + o + j), _mm256_loadu_ps(dgelu + o + j));
            _mm256_storeu_ps(dinp + o + j, g);
            _mm256_storeu_ps(acc + j, _mm256_add_ps(_mm256_loadu_ps(acc + j), g));
        }
        if (j < C) {
            __m256i m = tail8(C - j);
            __m256 g = _mm256_mul_ps(_mm256_maskload_ps(dout + o + j, m), _mm256_maskload_ps(dgelu + o + j, m));
            _mm256_maskstore_ps(dinp + o + j, m, g);
            _mm256_maskstore_ps(acc + j, m, _mm256_add_ps(_mm256_maskload_ps(acc + j, m), g));
        }
    }
}
#else   // never called off x86: kernels/gelu.c calls these on the "avx2" path alone
void gelu_forward_avx2(float *out, float *xd, long n) { (void)out; (void)xd; (void)n; }
void gelu_backward_rows_avx2(float *dinp, float *acc, const float *dgelu, const float *dout, int R, int C) {
    (void)dinp; (void)acc; (void)dgelu; (void)dout; (void)R; (void)C;
}
#endif
