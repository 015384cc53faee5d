// Internal to the fast kernels (kernels/*.c): fixed-lane partial sums and the exp / erf
// approximations, written so that -O3 vectorises the loops that use them. A row is summed in VL
// fixed lanes (lane j takes elements j, j+VL, ...) and the lanes are added in a fixed tree, so the
// order depends on the sizes only (bitwise the same for any thread count). Explicit fmaf where a fused
// multiply-add is wanted (the build is ISO C, so the compiler does not contract a*b+c on its own).
#ifndef VITMAE_VECMATH_H
#define VITMAE_VECMATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#define VL 16   // lanes of the partial sums: one AVX-512 vector, two AVX2 vectors
// Column blocks of the column sums (LayerNorm's parameter gradients, bias gradients): each column's
// chain over the rows in ascending order, a block at a time, handed from thread to thread
// (kernels/team.h, team_chain_*).
#define CB 32
_Static_assert(CB == 2 * VL, "the column blocks are two vectors of lanes (kernels/layernorm.c)");

static inline float lanes_sum(const float *acc) {
    float s8[8];
    for (int j = 0; j < 8; j++) s8[j] = acc[j] + acc[j + 8];
    float s4[4];
    for (int j = 0; j < 4; j++) s4[j] = s8[j] + s8[j + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

// The VL lanes as NP pieces of VP lanes, a piece being the widest vector register the build targets
// (one AVX-512 register, two AVX2 ones, four SSE ones): `vpiece acc[NP]`, lane j of the VL being lane
// j % VP of piece j / VP. So the partial sums stay in registers across a row. Kept as an array `float
// acc[VL]`, GCC spilled them to the stack every step and the LayerNorm backward ran 4x slower
// (docs/performance.md, "Row sums in vector registers"); kept as one 64-byte vector, they stayed in
// memory wherever the target has no 64-byte register (GCC gives such a vector no machine mode), and
// the LayerNorm ran 8x slower on AVX2 ("LayerNorm's lanes in the target's own vectors"). The same sums
// either way, bitwise. The piece loops (k < NP) are complete-unrolled, the arrays kept in registers.
// (A piece is never wider than the target's registers, so GCC's -Wpsabi note about wider vectors
// crossing calls, which `make test` would treat as an error, cannot arise.)
#if defined(__AVX512F__)
#define VP 16
#elif defined(__AVX__)
#define VP 8
#else
#define VP 4
#endif
#define NP (VL / VP)
typedef float vpiece __attribute__((vector_size(VP * sizeof(float))));
typedef float vpiece_at __attribute__((vector_size(VP * sizeof(float)), aligned(sizeof(float))));

// The VP floats at p (any float alignment) as a piece.
#define PIECE_AT(p) (*(const vpiece_at *)(p))

// The lanes' total: the C % VL elements of a row past its last full VL (at tail, ntail of them) added
// to lanes 0 .. ntail - 1, then the fixed tree of lanes_sum.
static inline float lanes_total(const vpiece *acc, const float *tail, int ntail) {
    float a[VL];
    memcpy(a, acc, sizeof a);
    for (int j = 0; j < ntail; j++) a[j] += tail[j];
    return lanes_sum(a);
}

static inline float row_sum(const float *x, int C) {
    vpiece acc[NP] = {{0}};
    int i = 0;
    for (; i + VL <= C; i += VL)
        for (int k = 0; k < NP; k++) acc[k] += PIECE_AT(x + i + k * VP);
    return lanes_total(acc, x + i, C - i);
}

// exp(x) = 2^n e^r with n = round(x / ln 2) (round-to-nearest by the 1.5 * 2^23 trick), r = x - n ln 2
// in two steps (Cody-Waite: ln 2 = 0.693359375 - 2.12194440e-4, the first part exact in n * hi),
// |r| <= 0.35, e^r by its degree-7 Taylor polynomial (truncation < 6e-9 relative). x is clamped to
// [-87, 88] so 2^n stays a normal float; exp(-87) = 1.6e-38 stands for anything smaller.
static inline float exp_approx(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = fmaf(n, -0.693359375f, x);
    r = fmaf(n, 2.12194440e-4f, r);
    float p = 1.0f / 5040.0f;
    p = fmaf(p, r, 1.0f / 720.0f);
    p = fmaf(p, r, 1.0f / 120.0f);
    p = fmaf(p, r, 1.0f / 24.0f);
    p = fmaf(p, r, 1.0f / 6.0f);
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    // A NaN x leaves n NaN, whose conversion to int is undefined in C: take 0 (scale 1; p is NaN
    // already, so the result is p's NaN, as x86's conversion, INT_MIN, gives too: its shift leaves 1.0).
    int32_t bits = ((int32_t)(n == n ? n : 0.0f) + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

// Abramowitz & Stegun 7.1.26: for z >= 0, erfc(z) = t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^{-z^2}
// with t = 1 / (1 + p z); |error| <= 1.5e-7 in exact arithmetic. Returns that erfc(|z|).
static inline float erfc_abs(float z, float e_minus_z2) {
    float t = 1.0f / fmaf(0.3275911f, fabsf(z), 1.0f);
    float p = 1.061405429f;
    p = fmaf(p, t, -1.453152027f);
    p = fmaf(p, t, 1.421413741f);
    p = fmaf(p, t, -0.284496736f);
    p = fmaf(p, t, 0.254829592f);
    return p * t * e_minus_z2;
}

static inline float erf_approx(float x) {
    float c = erfc_abs(x, exp_approx(-x * x));
    float y = 1.0f - c;
    return x < 0.0f ? -y : y;
}

// Phi(x) = 0.5 (1 + erf(x / sqrt 2)): for x < 0 it is 0.5 erfc(|x| / sqrt 2) directly (no
// cancellation), and e^{-x^2/2} is shared with the density phi(x) = e^{-x^2/2} / sqrt(2 pi).
static inline float normal_cdf(float x, float e_half) {
    float q = 0.5f * erfc_abs(x * (float)M_SQRT1_2, e_half);
    return x < 0.0f ? q : 1.0f - q;
}
#endif
