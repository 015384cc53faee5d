// Layer kernels of the ViT (llm.c style). Each kernel has a plain, readable reference version
// (*_ref, src/kernels/ops.c) that defines it and a fast version (src/kernels/ops_fast.c: vectorisable loops with
// fixed-width partial sums, register-blocked attention) that the model calls; tests/test_ops.c
// compares the two on odd sizes. The two differ by float rounding only (summation order).
// Every kernel is a free function with its shapes as arguments; row-major layouts are given in the
// comment above each one. Backward kernels ACCUMULATE (+=) into every gradient they produce, so the
// caller zeroes scratch gradients first. OpenMP loops give each thread its own output rows or
// columns, and every sum runs in an order fixed by the sizes alone: results are bitwise identical
// for any number of threads.
#ifndef VITMAE_OPS_H
#define VITMAE_OPS_H

// LayerNorm over the last dim. inp, out [N, C]; weight, bias [C]; mean, rstd [N] (cached for
// backward). Biased variance, rstd = 1 / sqrt(var + eps).
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                       const float *bias, int N, int C, float eps);
// dinp [N, C] += ...; dweight, dbias [C] += sum over rows (rows in ascending order).
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C);

// Linear: out [N, OC] = inp [N, C] . weight[OC, C]^T + bias [OC] (bias may be NULL).
void linear_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int N, int C, int OC);
// dinp [N, C] += dout . W (skipped when dinp is NULL); dweight [OC, C] += dout^T . inp;
// dbias [OC] += column sums of dout (skipped when NULL).
void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int C, int OC);
// The same with dinp overwritten (dinp = dout . W) instead of added to.
void linear_backward_set(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                         const float *weight, int N, int C, int OC);
// dbias [OC] += sum over rows of dout [N, OC], rows in ascending order.
void column_sum_accumulate(float *dbias, const float *dout, int N, int OC);

// Exact GELU (erf form). The fast versions use erf_approx (ops_fast.c): max abs error vs erff
// below ERF_APPROX_MAX_ERR over all floats (tested on a dense grid).: out = 0.5 x (1 + erf(x / sqrt 2)). inp, out [N].
void gelu_forward(float *out, const float *inp, long N);
// dinp [N] += dout * gelu'(inp)   (dinp = ... when accumulate is 0 in gelu_backward_set).
void gelu_backward(float *dinp, const float *inp, const float *dout, long N);
void gelu_backward_set(float *dinp, const float *inp, const float *dout, long N);
// dinp [N, C] = dout * gelu'(inp) (as gelu_backward_set) and dbias [C] += column sums of that dinp
// (as column_sum_accumulate, bitwise): the bias gradient of the Linear that produced inp, in one pass.
void gelu_backward_set_colsum(float *dinp, float *dbias, const float *inp, const float *dout, int N, int C);
#define ERF_APPROX_MAX_ERR 5e-7f   // A&S 7.1.26 (1.5e-7) plus float rounding; measured 4.9e-7
void erf_approx_array(float *out, const float *inp, long N);   // out[i] ~ erff(inp[i])
void exp_approx_array(float *out, const float *inp, long N);   // out[i] ~ expf(inp[i]), rel err < 4e-7

// out [N] = a + b.
void residual_forward(float *out, const float *a, const float *b, long N);

// Multi-head self-attention core (no projections).
// qkv [B, T, 3C]: each token's row splits as (3, NH, hd), q first, hd = C / NH.
// att [B, NH, T, T]: softmax(q . k^T * hd^-0.5) over the last dim (cached for backward).
// out [B, T, C]: per head, att . v, heads concatenated.
// Parallel over (image, head) pairs; each pair owns its att block and its hd columns of out.
// scratch [B*T*C] floats (the fast version keeps each head's K^T there).
void attention_forward(float *out, float *att, const float *qkv, float *scratch, int B, int T, int C, int NH);
// dqkv [B, T, 3C] += ...; datt [B, NH, T, T] and scratch [B*T*C] are scratch (overwritten).
void attention_backward(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                        float *scratch, int B, int T, int C, int NH);

// The same, overwriting dqkv (every element of it is written) instead of adding to it.
void attention_backward_set(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                            float *scratch, int B, int T, int C, int NH);

// Reference versions (the definitions; see above for layouts).
void layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                           const float *bias, int N, int C, float eps);
void layernorm_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, const float *mean, const float *rstd, int N, int C);
void column_sum_accumulate_ref(float *dbias, const float *dout, int N, int OC);
void gelu_forward_ref(float *out, const float *inp, long N);
void gelu_backward_ref(float *dinp, const float *inp, const float *dout, long N);
void attention_forward_ref(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
void attention_backward_ref(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                            int B, int T, int C, int NH);

#endif
