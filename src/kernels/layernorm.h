// LayerNorm over the last dim: the reference (*_ref, the definition) and the fast version the
// model calls, side by side in kernels/layernorm.c; tests/test_ops.c compares them on odd sizes.
#ifndef VITMAE_LAYERNORM_H
#define VITMAE_LAYERNORM_H

// LayerNorm over the last dim. inp, out [N, C]; weight, bias [C]; mean, rstd [N] (cached for
// backward). Biased variance, rstd = 1 / sqrt(var + eps).
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                       const float *bias, int N, int C, float eps);
// dinp [N, C] += ...; dweight, dbias [C] += sum over rows (rows in ascending order), or = that sum
// when param_acc is 0 (the same bits as adding into zeros: kernels/ops.h).
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C, int param_acc);
// n gradient groups of `rows` consecutive rows each (N = n rows): bitwise n calls of layernorm_backward,
// group g's on its rows into dweight[g] and dbias[g]. Where the threads divide the groups, one kernel:
// each thread takes whole groups, every chain over a group's rows on one thread (no hand-offs, one
// barrier instead of n: docs/performance.md, "LayerNorm's parameter gradients of groups at once");
// otherwise the n calls.
void layernorm_backward_by_groups(float *dinp, float *const *dweight, float *const *dbias, const float *dout,
                                  const float *inp, const float *weight, const float *mean, const float *rstd, int n,
                                  int rows, int C, int param_acc);

// Reference versions (the definitions; layouts as above).
void layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                           const float *bias, int N, int C, float eps);
void layernorm_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, const float *mean, const float *rstd, int N, int C);
#endif
