// Internal to the AVX-512 files (gemm_avx512.c, attention_avx512.c): a 16 x 16 float transpose in registers.
#ifndef VITMAE_TRANSPOSE_AVX512_H
#define VITMAE_TRANSPOSE_AVX512_H
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

// On entry r[i] holds row i; on exit r[j] holds column j (r[j][i] = old r[i][j]). Three stages:
// unpack pairs of rows, shuffle 2-element pieces within 128-bit lanes (u[4g + m] then holds columns
// m, m + 4, m + 8, m + 12 of rows 4g..4g+3, one column per lane), then gather the lanes across vectors.
static inline __attribute__((always_inline, target("avx512f")))
void transpose16x16_ps(__m512 r[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int m = 0; m < 4; m++) {
        __m512 xe = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88), ye = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88);
        __m512 xo = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xDD), yo = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xDD);
        r[m] = _mm512_shuffle_f32x4(xe, ye, 0x88);
        r[m + 4] = _mm512_shuffle_f32x4(xo, yo, 0x88);
        r[m + 8] = _mm512_shuffle_f32x4(xe, ye, 0xDD);
        r[m + 12] = _mm512_shuffle_f32x4(xo, yo, 0xDD);
    }
}
#endif
#endif
