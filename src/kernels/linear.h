// Linear layers on the GEMM (kernels/gemm.h) and the column sums of their bias gradients: the
// reference column sum (*_ref) and the fast one side by side in kernels/linear.c.
#ifndef VITMAE_LINEAR_H
#define VITMAE_LINEAR_H

// Linear: out [N, OC] = inp [N, C] . weight[OC, C]^T + bias [OC] (bias may be NULL).
void linear_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int N, int C, int OC);
// dinp [N, C] += dout . W (skipped when dinp is NULL); dweight [OC, C] += dout^T . inp;
// dbias [OC] += column sums of dout (skipped when NULL). With param_acc 0, dweight and dbias are set
// (=) instead: the same bits as adding into zeros (kernels/ops.h).
void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int C, int OC, int param_acc);
// The same with dinp overwritten (dinp = dout . W) instead of added to.
void linear_backward_set(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                         const float *weight, int N, int C, int OC, int param_acc);
// Its two halves: dinp = dout . W; dweight and dbias as above (added to or set). A row of dinp has the
// same bits whatever rows are computed with it (kernels/gemm.h), so the halves may run over different
// row ranges (the gradient groups of core/encoder.h).
void linear_backward_input(float *dinp, const float *dout, const float *weight, int N, int C, int OC);
void linear_backward_params(float *dweight, float *dbias, const float *dout, const float *inp, int N, int C,
                            int OC, int param_acc);
// dbias [OC] += sum over rows of dout [N, OC], rows in ascending order; with accumulate 0, dbias = that
// sum (the same bits as adding into zeros: kernels/ops.h).
void column_sum(float *dbias, const float *dout, int N, int OC, int accumulate);

// Reference version (the definition).
void column_sum_accumulate_ref(float *dbias, const float *dout, int N, int OC);
#endif
