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

// exp_approx: the clamps as max / min with the constant first keep a NaN input (the second operand is
// returned when either is NaN), as the scalar `x < -87 ? -87 : x` does.
static inline TGT __m512 exp16(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(-87.0f), x);
    x = _mm512_min_ps(_mm512_set1_ps(88.0f), x);
    const __m512 shift = _mm512_set1_ps(12582912.0f);
    __m512 n = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), shift), shift);
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
}

// erfc_abs: erfc(|z|) from e^{-z^2} by Abramowitz & Stegun 7.1.26.
static inline TGT __m512 erfc_abs16(__m512 z, __m512 e_minus_z2) {
    __m512 az = _mm512_andnot_ps(_mm512_set1_ps(-0.0f), z);
    __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), az, _mm512_set1_ps(1.0f)));
    __m512 p = _mm512_set1_ps(1.061405429f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
    return _mm512_mul_ps(_mm512_mul_ps(p, t), e_minus_z2);
}

// normal_cdf: Phi(x) from e^{-x^2/2}; 0.5 erfc(|x| / sqrt 2) for x < 0, 1 minus it otherwise.
static inline TGT __m512 normal_cdf16(__m512 x, __m512 e_half) {
    __m512 q = _mm512_mul_ps(_mm512_set1_ps(0.5f),
                             erfc_abs16(_mm512_mul_ps(x, _mm512_set1_ps((float)M_SQRT1_2)), e_half));
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(1.0f), q), q);
}
#endif
#endif
