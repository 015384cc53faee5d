// GELU with AVX-512: see x86/gelu_avx512.h.
#include "kernels/x86/gelu_avx512.h"
#if defined(__x86_64__) || defined(__i386__)
#include "kernels/x86/vecmath_avx512.h"

static inline TGT __m512 gelu16(__m512 x) {
    __m512 e = exp16(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-0.5f), x), x));
    return _mm512_mul_ps(x, normal_cdf16(x, e));
}

// gelu'(x) = Phi(x) + x phi(x).
static inline TGT __m512 gelu_grad16(__m512 x) {
    __m512 e = exp16(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-0.5f), x), x));
    return _mm512_add_ps(normal_cdf16(x, e), _mm512_mul_ps(x, _mm512_mul_ps(_mm512_set1_ps(0.39894228040143267794f), e)));
}

TGT void gelu_forward_avx512(float *out, const float *inp, long n) {
    long i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, gelu16(_mm512_loadu_ps(inp + i)));
    if (i < n) {
        __mmask16 m = tail_mask((int)(n - i));
        _mm512_mask_storeu_ps(out + i, m, gelu16(_mm512_maskz_loadu_ps(m, inp + i)));
    }
}

TGT void gelu_backward_rows_avx512(float *dinp, float *acc, const float *inp, const float *dout, int R, int C) {
    for (int j = 0; j < C; j += 16) _mm512_mask_storeu_ps(acc + j, tail_mask(C - j), _mm512_setzero_ps());
    for (int r = 0; r < R; r++) {   // row by row: each row read front to back, as it lies in memory
        long o = (long)r * C;
        for (int j = 0; j < C; j += 16) {
            __mmask16 m = tail_mask(C - j);
            __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dout + o + j),
                                     gelu_grad16(_mm512_maskz_loadu_ps(m, inp + o + j)));
            _mm512_mask_storeu_ps(dinp + o + j, m, g);
            _mm512_mask_storeu_ps(acc + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, acc + j), g));
        }
    }
}
#else   // never called off x86: kernels/gelu.c calls these on the "avx512" path alone
void gelu_forward_avx512(float *out, const float *inp, long n) { (void)out; (void)inp; (void)n; }
void gelu_backward_rows_avx512(float *dinp, float *acc, const float *inp, const float *dout, int R, int C) {
    (void)dinp; (void)acc; (void)inp; (void)dout; (void)R; (void)C;
}
#endif
