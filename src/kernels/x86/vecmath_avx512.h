// Internal to the AVX-512 files (attention_avx512.c, gelu_avx512.c): the target attribute, tail masks
// and the exp and erfc approximations of kernels/vecmath.h in 16 lanes. Each does the same float
// operations in the same order as its scalar twin there, so the same bits (tests/test_ops.c).
#ifndef VITMAE_VECMATH_AVX512_H
#define VITMAE_VECMATH_AVX512_H
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>

#define TGT __attribute__((target("avx512f,avx512vl,avx512dq,fma")))

static inline TGT __mmask16 tail_mask(int n) {   // the first min(n, 16) lanes
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
}

// The functions below take n <= 8 vectors at once (n a constant where they are inlined) and go stage
// by stage across them, as x86/vecmath_avx2.h's do: each vector's operations are the single-vector ones
// in the same order (so the same bits for any n), with n independent chains side by side in the
// instruction stream (docs/performance.md, "Chains side by side", and for AVX-512 "A thirty-sixth
// session").
#define AI static inline __attribute__((always_inline)) TGT
#define EACH _Pragma("GCC unroll 8") for (int j = 0; j < n; j++)

// exp_approx on x[0 .. n): the clamps as max / min with the constant first keep a NaN input (the
// second operand is returned when either is NaN), as the scalar `x < -87 ? -87 : x` does.
AI void exp16_n(__m512 *x, const int n) {
    const __m512 shift = _mm512_set1_ps(12582912.0f);
    __m512 k[8], r[8], p[8];
    EACH x[j] = _mm512_max_ps(_mm512_set1_ps(-87.0f), x[j]);
    EACH x[j] = _mm512_min_ps(_mm512_set1_ps(88.0f), x[j]);
    EACH k[j] = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(x[j], _mm512_set1_ps(1.44269504088896341f)), shift), shift);
    EACH r[j] = _mm512_fmadd_ps(k[j], _mm512_set1_ps(-0.693359375f), x[j]);
    EACH r[j] = _mm512_fmadd_ps(k[j], _mm512_set1_ps(2.12194440e-4f), r[j]);
    EACH p[j] = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 5040.0f), r[j], _mm512_set1_ps(1.0f / 720.0f));
    EACH p[j] = _mm512_fmadd_ps(p[j], r[j], _mm512_set1_ps(1.0f / 120.0f));
    EACH p[j] = _mm512_fmadd_ps(p[j], r[j], _mm512_set1_ps(1.0f / 24.0f));
    EACH p[j] = _mm512_fmadd_ps(p[j], r[j], _mm512_set1_ps(1.0f / 6.0f));
    EACH p[j] = _mm512_fmadd_ps(p[j], r[j], _mm512_set1_ps(0.5f));
    EACH p[j] = _mm512_fmadd_ps(p[j], r[j], _mm512_set1_ps(1.0f));
    EACH p[j] = _mm512_fmadd_ps(p[j], r[j], _mm512_set1_ps(1.0f));
    EACH x[j] = _mm512_mul_ps(p[j], _mm512_castsi512_ps(_mm512_slli_epi32(
                    _mm512_add_epi32(_mm512_cvtps_epi32(k[j]), _mm512_set1_epi32(127)), 23)));
}
static inline TGT __m512 exp16(__m512 x) {
    exp16_n(&x, 1);
    return x;
}

// erfc_abs: out[j] = erfc(|z[j]|) from e[j] = e^{-z[j]^2}, by Abramowitz & Stegun 7.1.26.
AI void erfc_abs16_n(__m512 *out, const __m512 *z, const __m512 *e, const int n) {
    __m512 t[8], p[8];
    EACH t[j] = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f),
                              _mm512_andnot_ps(_mm512_set1_ps(-0.0f), z[j]), _mm512_set1_ps(1.0f)));
    EACH p[j] = _mm512_fmadd_ps(_mm512_set1_ps(1.061405429f), t[j], _mm512_set1_ps(-1.453152027f));
    EACH p[j] = _mm512_fmadd_ps(p[j], t[j], _mm512_set1_ps(1.421413741f));
    EACH p[j] = _mm512_fmadd_ps(p[j], t[j], _mm512_set1_ps(-0.284496736f));
    EACH p[j] = _mm512_fmadd_ps(p[j], t[j], _mm512_set1_ps(0.254829592f));
    EACH out[j] = _mm512_mul_ps(_mm512_mul_ps(p[j], t[j]), e[j]);
}

// normal_cdf: out[j] = Phi(x[j]) from e[j] = e^{-x[j]^2/2}; 0.5 erfc(|x| / sqrt 2) for x < 0, 1 minus it
// otherwise.
AI void normal_cdf16_n(__m512 *out, const __m512 *x, const __m512 *e, const int n) {
    __m512 z[8];
    EACH z[j] = _mm512_mul_ps(x[j], _mm512_set1_ps((float)M_SQRT1_2));
    erfc_abs16_n(out, z, e, n);
    EACH out[j] = _mm512_mul_ps(_mm512_set1_ps(0.5f), out[j]);
    EACH out[j] = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x[j], _mm512_setzero_ps(), _CMP_LT_OQ),
                                       _mm512_sub_ps(_mm512_set1_ps(1.0f), out[j]), out[j]);
}
#undef EACH
#endif
#endif
