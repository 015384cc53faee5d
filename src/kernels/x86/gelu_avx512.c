// GELU with AVX-512: see x86/gelu_avx512.h.
#include "kernels/x86/gelu_avx512.h"
#if defined(__x86_64__) || defined(__i386__)
#include "kernels/x86/vecmath_avx512.h"

// out[j] = gelu(x[j]) = x Phi(x), and dgelu[j] = gelu'(x) = Phi(x) + x phi(x) for j < n (the portable
// loop's operations: dgelu_from in kernels/gelu.c), stage by stage across the n vectors
// (x86/vecmath_avx512.h).
AI void gelu16_n(__m512 *out, __m512 *dgelu, const __m512 *x, const int n) {
    __m512 e[8];
    for (int j = 0; j < n; j++) e[j] = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-0.5f), x[j]), x[j]);
    exp16_n(e, n);
    normal_cdf16_n(out, x, e, n);   // Phi(x), in out until the last line
    for (int j = 0; j < n; j++)
        dgelu[j] = _mm512_add_ps(out[j], _mm512_mul_ps(x[j], _mm512_mul_ps(_mm512_set1_ps(0.39894228040143267794f), e[j])));
    for (int j = 0; j < n; j++) out[j] = _mm512_mul_ps(x[j], out[j]);
}

// GELU_N vectors at a time (docs/performance.md, "A thirty-sixth session"), then single vectors, then
// the cut one.
#define GELU_N 4

TGT void gelu_forward_avx512(float *out, float *xd, long n) {
    long i = 0;
    __m512 x[GELU_N], o[GELU_N], d[GELU_N];
    for (; i + 16 * GELU_N <= n; i += 16 * GELU_N) {
        for (int j = 0; j < GELU_N; j++) x[j] = _mm512_loadu_ps(xd + i + 16 * j);
        gelu16_n(o, d, x, GELU_N);
        for (int j = 0; j < GELU_N; j++) {
            _mm512_storeu_ps(out + i + 16 * j, o[j]);
            _mm512_storeu_ps(xd + i + 16 * j, d[j]);
        }
    }
    for (; i + 16 <= n; i += 16) {
        x[0] = _mm512_loadu_ps(xd + i);
        gelu16_n(o, d, x, 1);
        _mm512_storeu_ps(out + i, o[0]);
        _mm512_storeu_ps(xd + i, d[0]);
    }
    if (i < n) {
        __mmask16 m = tail_mask((int)(n - i));
        x[0] = _mm512_maskz_loadu_ps(m, xd + i);
        gelu16_n(o, d, x, 1);
        _mm512_mask_storeu_ps(out + i, m, o[0]);
        _mm512_mask_storeu_ps(xd + i, m, d[0]);
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
