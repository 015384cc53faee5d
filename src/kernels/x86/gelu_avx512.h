// Internal to kernels/gelu.c and x86/gelu_avx512.c: the GELU passes with AVX-512 (called only when the
// CPU has it and the GEMM path is "avx512"). The same float operations as the portable loops in
// kernels/gelu.c, so the same bits (tests/test_ops.c); fewer instructions than the compiler's
// vectorisation of those loops (docs/performance.md, "GELU in AVX-512").
#ifndef VITMAE_GELU_AVX512_H
#define VITMAE_GELU_AVX512_H

// For i < n: out[i] = gelu(x), and xd[i], which holds x, = gelu'(x).
void gelu_forward_avx512(float *out, float *xd, long n);
// Rows r < R of C columns (row-major, contiguous): dinp = dout * dgelu (dinp may be dout), and acc[j] =
// the sum of column j of that dinp over the R rows in ascending order (acc overwritten).
void gelu_backward_rows_avx512(float *dinp, float *acc, const float *dgelu, const float *dout, int R, int C);
#endif
