// GELU with AVX2 and FMA: see x86/gelu_avx2.h.
#include "kernels/x86/gelu_avx2.h"
#if defined(__x86_64__) || defined(__i386__)
#include "kernels/x86/vecmath_avx2.h"

// out[j] = gelu(x[j]) = x Phi(x), and dgelu[j] = gelu'(x) = Phi(x) + x phi(x) for j < n (the portable
// loop's operations: dgelu_from in kernels/gelu.c), stage by stage across the n vectors
// (x86/vecmath_avx2.h).
AI2 void gelu8_n(__m256 *out, __m256 *dgelu, const __m256 *x, const int n) {
    __m256 e[8];
    for (int j = 0; j < n; j++) e[j] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), x[j]), x[j]);
    exp8_n(e, n);
    normal_cdf8_n(out, x, e, n);   // Phi(x), in out until the last line
    for (int j = 0; j < n; j++)
        dgelu[j] = _mm256_add_ps(out[j], _mm256_mul_ps(x[j], _mm256_mul_ps(_mm256_set1_ps(0.39894228040143267794f), e[j])));
    for (int j = 0; j < n; j++) out[j] = _mm256_mul_ps(x[j], out[j]);
}

// GELU_N vectors at a time (measured: 1.00 -> 0.81 ns an element with 4, docs/performance.md "Chains
// side by side"), then single vectors, then the cut one.
#define GELU_N 4

TGT2 void gelu_forward_avx2(float *out, float *xd, long n) {
    long i = 0;
    __m256 x[GELU_N], o[GELU_N], d[GELU_N];
    for (; i + 8 * GELU_N <= n; i += 8 * GELU_N) {
        for (int j = 0; j < GELU_N; j++) x[j] = _mm256_loadu_ps(xd + i + 8 * j);
        gelu8_n(o, d, x, GELU_N);
        for (int j = 0; j < GELU_N; j++) {
            _mm256_storeu_ps(out + i + 8 * j, o[j]);
            _mm256_storeu_ps(xd + i + 8 * j, d[j]);
        }
    }
    for (; i + 8 <= n; i += 8) {
        x[0] = _mm256_loadu_ps(xd + i);
        gelu8_n(o, d, x, 1);
        _mm256_storeu_ps(out + i, o[0]);
        _mm256_storeu_ps(xd + i, d[0]);
    }
    if (i < n) {
        __m256i m = tail8((int)(n - i));
        x[0] = _mm256_maskload_ps(xd + i, m);
        gelu8_n(o, d, x, 1);
        _mm256_maskstore_ps(out + i, m, o[0]);
        _mm256_maskstore_ps(xd + i, m, d[0]);
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
