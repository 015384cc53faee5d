// GELU, exact (erf form): the reference (*_ref, with erff/expf) and the fast versions (with
// erf_approx / exp_approx, kernels/vecmath.h) side by side in kernels/gelu.c, the fast passes also in
// AVX-512 and in AVX2 (x86/gelu_avx512.c, x86/gelu_avx2.c, the same bits); tests/test_ops.c compares
// them on odd sizes and checks the approximations on a dense grid.
#ifndef VITMAE_GELU_H
#define VITMAE_GELU_H

// Exact GELU (erf form) for a step that goes on to the backward: out = 0.5 x (1 + erf(x / sqrt 2)), and
// x_dgelu, which holds x, left holding gelu'(x) in its place (the two share their exp and normal CDF,
// and the backward then needs no erf or exp of its own: docs/performance.md, "GELU's derivative kept
// from the forward"). out, x_dgelu [N], not overlapping. The fast versions use erf_approx
// (kernels/vecmath.h): max abs error vs erff below ERF_APPROX_MAX_ERR over all floats (tested on a
// dense grid); gelu'(x) bitwise what gelu_backward_set multiplies dout by.
void gelu_forward_dgelu(float *out, float *x_dgelu, long N);
// dinp [N] += dout * gelu'(inp)   (dinp = ... when accumulate is 0 in gelu_backward_set).
void gelu_backward(float *dinp, const float *inp, const float *dout, long N);
void gelu_backward_set(float *dinp, const float *inp, const float *dout, long N);
// dinp [N, C] = dout * dgelu, with dgelu = gelu'(x) as gelu_forward_dgelu left it (so bitwise
// gelu_backward_set on x), and dbias [C] += column sums of that dinp (the bias gradient of the Linear
// that produced x), in one pass over the rows (dinp may be dout itself: the step takes it in place).
// Each column is summed over chunks of GELU_CHUNK_ROWS rows, then over the chunks, in orders fixed by N
// and C. part: scratch of gelu_colsum_scratch(N, C) floats. bias_acc 0: dbias = those sums instead (the
// same bits as adding into zeros: kernels/ops.h).
#define GELU_CHUNK_ROWS 8
long gelu_colsum_scratch(int N, int C);
void gelu_backward_set_colsum(float *dinp, float *dbias, float *part, const float *dgelu, const float *dout, int N,
                              int C, int bias_acc);
#define ERF_APPROX_MAX_ERR 5e-7f   // A&S 7.1.26 (1.5e-7) plus float rounding; measured 4.9e-7
void erf_approx_array(float *out, const float *inp, long N);   // out[i] ~ erff(inp[i])
void exp_approx_array(float *out, const float *inp, long N);   // out[i] ~ expf(inp[i]), rel err < 4e-7

// Reference versions (the definitions; layouts as above).
void gelu_forward_ref(float *out, const float *inp, long N);
void gelu_backward_ref(float *dinp, const float *inp, const float *dout, long N);
#endif
