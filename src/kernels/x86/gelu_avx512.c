// GELU with AVX-512: see x86/gelu_avx512.h.
#include "kernels/x86/gelu_avx512.h"
#if defined(__x86_64__) || defined(__i386__)
#include "kernels/x86/vecmath_avx512.h"

// out = gelu(x) = x Phi(x), and *dgelu = gelu'(x) = Phi(x) + x phi(x) (the portable loop's
// operations: dgelu_from in kernels/gelu.c).
static inline TGT __m512 gelu16(__m512 x, __m512 *dgelu) {
    __m512 e = exp16(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-0.5f), x), x)), cdf = normal_cdf16(x, e);
    *dgelu = _mm512_add_ps(cdf, _mm512_mul_ps(x, _mm512_mul_ps(_mm512_set1_ps(0.39894228040143267794f), e)));
    return _mm512_mul_ps(x, cdf);
}

TGT void gelu_forward_avx512(float *out, float *xd, long n) {
    long i = 0;
    __m512 d;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(out + i, gelu16(_mm512_loadu_ps(xd + i), &d));
        _mm512_storeu_ps(xd + i, d);
    }
    if (i < n) {
        __mmask16 m = tail_mask((int)(n - i));
        _mm512_mask_storeu_ps(out + i, m, gelu16(_mm512_maskz_loadu_ps(m, xd + i), &d));
        _mm512_mask_storeu_ps(xd + i, m, d);
    }
}

TGT void gelu_backward_rows_avx512(float *dinp, float *acc, const float *dgelu, const float *dout, int R, int C) {
    for (int j = 0; j < C; j += 16) _mm512_mask_storeu_ps(acc + j, tail_mask(C - j), _mm512_setzero_ps());
    for (int r = 0; r < R; r++) {   // row by row: each row read front to back, as it lies in memory
        long o = (long)r * C;
        for (int j = 0; j < C; j += 16) {
            __mmask16 m = tail_mask(C - j);
            __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dout + o + j), _mm512_maskz_loadu_ps(m, dgelu + o + j));
            _mm512_mask_storeu_ps(dinp + o + j, m, g);
            _mm512_mask_storeu_ps(acc + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, acc + j), g));
        }
    }
}
#else   // never called off x86: kernels/gelu.c calls these on the "avx512" path alone
void gelu_forward_avx512(float *out, float *xd, long n) { (void)out; (void)xd; (void)n; }
void gelu_backward_rows_avx512(float *dinp, float *acc, const float *dgelu, const float *dout, int R, int C) {
    (void)dinp; (void)acc; (void)dgelu; (void)dout; (void)R; (void)C;
}
#endif
