// Internal to kernels/gelu.c and x86/gelu_avx2.c: the GELU passes with AVX2 and FMA (called only when
// the CPU has them and the GEMM path is "avx2"). The same float operations as the portable loops in
// kernels/gelu.c, so the same bits (tests/test_ops.c); GCC leaves those loops scalar (the clamps and
// sign tests of kernels/vecmath.h, under the default -ftrapping-math: docs/performance.md, "GELU and
// attention in AVX2").
#ifndef VITMAE_GELU_AVX2_H
#define VITMAE_GELU_AVX2_H

// For i < n: out[i] = gelu(x), and xd[i], which holds x, = gelu'(x).
void gelu_forward_avx2(float *out, float *xd, long n);
// Rows r < R of C columns (row-major, contiguous): dinp = dout * dgelu (dinp may be dout), and acc[j] =
// the sum of column j of that dinp over the R rows in ascending order (acc overwritten).
void gelu_backward_rows_avx2(float *dinp, float *acc, const float *dgelu, const float *dout, int R, int C);
#endif
