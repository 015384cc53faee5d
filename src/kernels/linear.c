// Linear layers (on the GEMM, kernels/gemm.c) and the column sums of bias gradients: the reference
// loop (*_ref) and the fast version (column blocks carried from thread to thread). See kernels/linear.h.
#include "kernels/linear.h"
#include "kernels/prof.h"
#include "kernels/gemm.h"
#include "kernels/team.h"
#include "kernels/vecmath.h"
#include <omp.h>
#include <string.h>

_Static_assert(TEAM_CHAIN_BLOCKS * CB >= TEAM_CHAIN_FLOATS, "a slot's column blocks all have flags (kernels/team.h)");

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

// Each column one chain over the rows in ascending order (as the reference), carried from thread to
// thread block by block over their row ranges (kernels/team.h, team_chain_*), so that each thread
// reads only its own rows: bitwise the same for any thread count.
static void column_sum_body(float *dbias, const float *dout, int N, int OC, int accumulate) {
    int t = omp_get_thread_num(), T = team_chain_threads(OC), r0, r1;
    if (t >= T) return;
    team_rows(N, t, T, &r0, &r1);
    float *in = t ? team_chain_slot(t - 1) : NULL, *out = team_chain_slot(t);
    int nblocks = (OC + CB - 1) / CB;
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CB, w = OC - c0 < CB ? OC - c0 : CB;
        float acc[CB] = {0};
        if (t) {
            team_chain_take(t, blk);
            memcpy(acc, in + c0, (size_t)w * sizeof(float));
        }
        if (w == CB)   // a constant trip count keeps acc in registers
            for (int n = r0; n < r1; n++) {
                const float *d = dout + (long)n * OC + c0;
                for (int j = 0; j < CB; j++) acc[j] += d[j];
            }
        else
            for (int n = r0; n < r1; n++) {
                const float *d = dout + (long)n * OC + c0;
                for (int j = 0; j < w; j++) acc[j] += d[j];
            }
        if (t < T - 1) {
            memcpy(out + c0, acc, (size_t)w * sizeof(float));
            team_chain_post(t, blk);
        } else if (accumulate) {
            for (int j = 0; j < w; j++) dbias[c0 + j] += acc[j];
        } else {
            for (int j = 0; j < w; j++) dbias[c0 + j] = acc[j];
        }
    }
}

void column_sum(float *dbias, const float *dout, int N, int OC, int accumulate) {
    double t0 = PROF_START(PROF_BIAS_GRAD);
    TEAM_RUN(column_sum_body(dbias, dout, N, OC, accumulate));
    PROF_STOP(PROF_BIAS_GRAD, t0, 0);
}
