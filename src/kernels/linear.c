// Linear layers (on the GEMM, kernels/gemm.c) and the column sums of bias gradients: the reference
// loop (*_ref) and the fast column-block version. See kernels/linear.h.
#include "kernels/linear.h"
#include "kernels/prof.h"
#include "kernels/gemm.h"
#include "kernels/team.h"
#include "kernels/vecmath.h"

void linear_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int N, int C, int OC) {
    gemm_nt_weight(N, OC, C, inp, C, weight, C, out, OC, bias, 0);
}

void linear_backward_params(float *dweight, float *dbias, const float *dout, const float *inp, int N, int C,
                            int OC, int param_acc) {
    // The bias gradient in the product's own pass over dout where it can (docs/performance.md, "Bias
    // gradients summed while packing"); the same bits as column_sum either way.
    if (!gemm_tn_sums(OC, C, N, dout, OC, inp, C, dweight, C, param_acc, dbias) && dbias)
        column_sum(dbias, dout, N, OC, param_acc);
}

void linear_backward_input(float *dinp, const float *dout, const float *weight, int N, int C, int OC) {
    gemm_nn_weight(N, C, OC, dout, OC, weight, C, dinp, C, 0);
}

void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int C, int OC, int param_acc) {
    if (dinp) gemm_nn_weight(N, C, OC, dout, OC, weight, C, dinp, C, 1);
    linear_backward_params(dweight, dbias, dout, inp, N, C, OC, param_acc);
}

void linear_backward_set(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                         const float *weight, int N, int C, int OC, int param_acc) {
    linear_backward_input(dinp, dout, weight, N, C, OC);
    linear_backward_params(dweight, dbias, dout, inp, N, C, OC, param_acc);
}

// ---------------------------------------------------------------------------------------------
// Column sums: reference and fast

void column_sum_accumulate_ref(float *dbias, const float *dout, int N, int OC) {
    #pragma omp parallel for schedule(static)
    for (int o = 0; o < OC; o++) {
        float s = 0.0f;
        for (int n = 0; n < N; n++) s += dout[(long)n * OC + o];
        dbias[o] += s;
    }
}

static void column_sum_body(float *dbias, const float *dout, int N, int OC, int accumulate) {
    int nblocks = (OC + CB - 1) / CB;
    #pragma omp for schedule(static) nowait
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CB, w = OC - c0 < CB ? OC - c0 : CB;
        float acc[CB] = {0};
        if (w == CB)   // a constant trip count keeps acc in registers
            for (int n = 0; n < N; n++) {
                const float *d = dout + (long)n * OC + c0;
                for (int j = 0; j < CB; j++) acc[j] += d[j];
            }
        else
            for (int n = 0; n < N; n++) {
                const float *d = dout + (long)n * OC + c0;
                for (int j = 0; j < w; j++) acc[j] += d[j];
            }
        if (accumulate) for (int j = 0; j < w; j++) dbias[c0 + j] += acc[j];
        else for (int j = 0; j < w; j++) dbias[c0 + j] = acc[j];
    }
}

void column_sum(float *dbias, const float *dout, int N, int OC, int accumulate) {
    double t0 = PROF_START(PROF_BIAS_GRAD);
    TEAM_RUN(column_sum_body(dbias, dout, N, OC, accumulate));
    PROF_STOP(PROF_BIAS_GRAD, t0, 0);
}
