// Internal to the AVX2 files (attention_avx2.c, gelu_avx2.c, gemm_avx2.c): the target attribute, tail
// masks, the exp and erfc approximations of kernels/vecmath.h in 8 lanes, the 16-lane sum of
// kernels/vecmath.h (lanes_sum) on two vectors, and an 8 x 8 transpose in registers. Each arithmetic
// one does the same float operations in the same order as its scalar twin there, so the same bits
// (tests/test_ops.c).
#ifndef VITMAE_VECMATH_AVX2_H
#define VITMAE_VECMATH_AVX2_H
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#define TGT2 __attribute__((target("avx2,fma")))

// The first min(max(n, 0), 8) lanes set (all bits), the rest clear: for the masked loads (which read
// zeros there and touch no memory) and the masked stores.
static const int32_t tail8_bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
static inline TGT2 __m256i tail8(int n) {
    n = n < 0 ? 0 : n > 8 ? 8 : n;
    return _mm256_loadu_si256((const __m256i *)(tail8_bits + 8 - n));
}

// The functions below take n <= 8 vectors at once (n a constant where they are inlined) and go stage
// by stage across them: each vector's operations are the single-vector ones in the same order (so the
// same bits for any n), but n independent chains lie side by side in the instruction stream. One chain
// alone is a long run of dependent operations that fills the core's scheduler while it waits; n of them
// give it work for every cycle (the GELU forward: docs/performance.md, "Chains side by side").
#define AI2 static inline __attribute__((always_inline)) TGT2
#define EACH _Pragma("GCC unroll 8") for (int j = 0; j < n; j++)

// exp_approx on x[0 .. n): the clamps as max / min with the constant first keep a NaN input (the
// second operand is returned when either is NaN), as the scalar `x < -87 ? -87 : x` does.
AI2 void exp8_n(__m256 *x, const int n) {
    const __m256 shift = _mm256_set1_ps(12582912.0f);
    __m256 k[8], r[8], p[8];
    EACH x[j] = _mm256_max_ps(_mm256_set1_ps(-87.0f), x[j]);
    EACH x[j] = _mm256_min_ps(_mm256_set1_ps(88.0f), x[j]);
    EACH k[j] = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(x[j], _mm256_set1_ps(1.44269504088896341f)), shift), shift);
    EACH r[j] = _mm256_fmadd_ps(k[j], _mm256_set1_ps(-0.693359375f), x[j]);
    EACH r[j] = _mm256_fmadd_ps(k[j], _mm256_set1_ps(2.12194440e-4f), r[j]);
    EACH p[j] = _mm256_fmadd_ps(_mm256_set1_ps(1.0f / 5040.0f), r[j], _mm256_set1_ps(1.0f / 720.0f));
    EACH p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(1.0f / 120.0f));
    EACH p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(1.0f / 24.0f));
    EACH p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(1.0f / 6.0f));
    EACH p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(0.5f));
    EACH p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(1.0f));
    EACH p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(1.0f));
    EACH x[j] = _mm256_mul_ps(p[j], _mm256_castsi256_ps(_mm256_slli_epi32(
                    _mm256_add_epi32(_mm256_cvtps_epi32(k[j]), _mm256_set1_epi32(127)), 23)));
}
static inline TGT2 __m256 exp8(__m256 x) {
    exp8_n(&x, 1);
    return x;
}

// erfc_abs: out[j] = erfc(|z[j]|) from e[j] = e^{-z[j]^2}, by Abramowitz & Stegun 7.1.26.
AI2 void erfc_abs8_n(__m256 *out, const __m256 *z, const __m256 *e, const int n) {
    __m256 t[8], p[8];
    EACH t[j] = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f),
                              _mm256_andnot_ps(_mm256_set1_ps(-0.0f), z[j]), _mm256_set1_ps(1.0f)));
    EACH p[j] = _mm256_fmadd_ps(_mm256_set1_ps(1.061405429f), t[j], _mm256_set1_ps(-1.453152027f));
    EACH p[j] = _mm256_fmadd_ps(p[j], t[j], _mm256_set1_ps(1.421413741f));
    EACH p[j] = _mm256_fmadd_ps(p[j], t[j], _mm256_set1_ps(-0.284496736f));
    EACH p[j] = _mm256_fmadd_ps(p[j], t[j], _mm256_set1_ps(0.254829592f));
    EACH out[j] = _mm256_mul_ps(_mm256_mul_ps(p[j], t[j]), e[j]);
}

// normal_cdf: out[j] = Phi(x[j]) from e[j] = e^{-x[j]^2/2}; 0.5 erfc(|x| / sqrt 2) for x < 0, 1 minus it
// otherwise.
AI2 void normal_cdf8_n(__m256 *out, const __m256 *x, const __m256 *e, const int n) {
    __m256 z[8];
    EACH z[j] = _mm256_mul_ps(x[j], _mm256_set1_ps((float)M_SQRT1_2));
    erfc_abs8_n(out, z, e, n);
    EACH out[j] = _mm256_mul_ps(_mm256_set1_ps(0.5f), out[j]);
    EACH out[j] = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), out[j]), out[j],
                                   _mm256_cmp_ps(x[j], _mm256_setzero_ps(), _CMP_LT_OQ));
}
#undef EACH

// lanes_sum (kernels/vecmath.h) of the 16 lanes lo (lanes 0-7) and hi (8-15): lane j + lane j + 8,
// then j + j + 4, then (0 + 2) + (1 + 3). The AVX-512 files' _mm512_reduce_add_ps adds in this order too.
static inline TGT2 float lanes16_sum(__m256 lo, __m256 hi) {
    __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));   // (0 + 2), (1 + 3)
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// On entry r[i] holds row i of an 8 x 8 block; on exit r[j] holds its column j.
AI2 void transpose8x8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);       // rows 2i, 2i+1: columns 0 1 | 4 5
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);   // columns 2 3 | 6 7
    }
    for (int g = 0; g < 2; g++) {   // rows 4g .. 4g + 3: u[4g + m] holds columns m | m + 4
        u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int m = 0; m < 4; m++) {
        r[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20);
        r[m + 4] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
    }
}

// The largest of 8 lanes (max is exact: any order gives it).
static inline TGT2 float lanes8_max(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}
#endif
#endif
