// LayerNorm: the reference loops (*_ref) and the fast versions (fixed-lane row sums, column blocks
// for the parameter gradients). See kernels/layernorm.h; kernels/ops.h for the accumulate rule.
#include "kernels/layernorm.h"
#include "kernels/prof.h"
#include <math.h>
#include <string.h>
#include "kernels/team.h"
#include "kernels/vecmath.h"

// ---------------------------------------------------------------------------------------------
// Reference

void layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                       const float *bias, int N, int C, float eps) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) m += x[i];
        m /= (float)C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) { float d = x[i] - m; v += d * d; }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + eps);
        float *o = out + (long)n * C;
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

// With xhat = (x - mean) * rstd and g = dout * weight:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dweight = sum dout * xhat,  dbias = sum dout.
void layernorm_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C, *dy = dout + (long)n * C;
        float m = mean[n], s = rstd[n];
        float gmean = 0.0f, gxmean = 0.0f;
        for (int i = 0; i < C; i++) {
            float g = dy[i] * weight[i];
            gmean += g;
            gxmean += g * (x[i] - m) * s;
        }
        gmean /= (float)C;
        gxmean /= (float)C;
        float *dx = dinp + (long)n * C;
        for (int i = 0; i < C; i++) {
            float g = dy[i] * weight[i], xhat = (x[i] - m) * s;
            dx[i] += s * (g - gmean - xhat * gxmean);
        }
    }
    // Parameter gradients: each thread owns channels; rows are summed in ascending order.
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < C; i++) {
        float dw = 0.0f, db = 0.0f;
        for (int n = 0; n < N; n++) {
            float dy = dout[(long)n * C + i];
            dw += dy * (inp[(long)n * C + i] - mean[n]) * rstd[n];
            db += dy;
        }
        dweight[i] += dw;
        dbias[i] += db;
    }
}

// ---------------------------------------------------------------------------------------------
// Fast

static void layernorm_forward_body(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                                   const float *bias, int N, int C, float eps) {
    #pragma omp for schedule(static) nowait
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float m = row_sum(x, C) / (float)C;
        vlanes acc = {0};
        int i = 0;
        for (; i + VL <= C; i += VL) {
            vlanes d = lanes_load(x + i) - m;
            acc += d * d;
        }
        float tail[VL];
        for (int j = 0; i + j < C; j++) { float d = x[i + j] - m; tail[j] = d * d; }
        float v = lanes_total(acc, tail, C - i) / (float)C;
        float s = 1.0f / sqrtf(v + eps);   // rstd
        float *o = out + (long)n * C;
        for (i = 0; i < C; i++) o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

// The parameter gradients go by column blocks of CB: each thread owns whole blocks and sums rows in
// ascending order, exactly as the reference (so dweight / dbias equal it bitwise), reading rows
// contiguously.
static void layernorm_backward_body(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                    const float *weight, const float *mean, const float *rstd, int N, int C,
                                    int param_acc) {
    #pragma omp for schedule(static) nowait
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C, *dy = dout + (long)n * C;
        float m = mean[n], s = rstd[n];
        vlanes ag = {0}, agx = {0};
        int i = 0;
        for (; i + VL <= C; i += VL) {
            vlanes g = lanes_load(dy + i) * lanes_load(weight + i);
            ag += g;
            agx += g * ((lanes_load(x + i) - m) * s);
        }
        float tg[VL], tgx[VL];
        for (int j = 0; i + j < C; j++) {
            float g = dy[i + j] * weight[i + j];
            tg[j] = g;
            tgx[j] = g * ((x[i + j] - m) * s);
        }
        float gmean = lanes_total(ag, tg, C - i) / (float)C, gxmean = lanes_total(agx, tgx, C - i) / (float)C;
        float *dx = dinp + (long)n * C;
        for (i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            dx[i] += s * (dy[i] * weight[i] - gmean - xhat * gxmean);
        }
    }
    int nblocks = (C + CB - 1) / CB;
    #pragma omp for schedule(static) nowait
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CB, w = C - c0 < CB ? C - c0 : CB;
        float dw[CB] = {0}, db[CB] = {0};
        if (w == CB) {   // CB / VL vectors of each, in registers
            vlanes dw0 = {0}, dw1 = {0}, db0 = {0}, db1 = {0};
            for (int n = 0; n < N; n++) {
                const float *dy = dout + (long)n * C + c0, *x = inp + (long)n * C + c0;
                float m = mean[n], s = rstd[n];
                vlanes y0 = lanes_load(dy), y1 = lanes_load(dy + VL);
                dw0 += y0 * (lanes_load(x) - m) * s;
                dw1 += y1 * (lanes_load(x + VL) - m) * s;
                db0 += y0;
                db1 += y1;
            }
            memcpy(dw, &dw0, sizeof dw0); memcpy(dw + VL, &dw1, sizeof dw1);
            memcpy(db, &db0, sizeof db0); memcpy(db + VL, &db1, sizeof db1);
        } else {
            for (int n = 0; n < N; n++) {
                const float *dy = dout + (long)n * C + c0, *x = inp + (long)n * C + c0;
                float m = mean[n], s = rstd[n];
                for (int j = 0; j < w; j++) {
                    dw[j] += dy[j] * (x[j] - m) * s;
                    db[j] += dy[j];
                }
            }
        }
        if (param_acc) for (int j = 0; j < w; j++) { dweight[c0 + j] += dw[j]; dbias[c0 + j] += db[j]; }
        else for (int j = 0; j < w; j++) { dweight[c0 + j] = dw[j]; dbias[c0 + j] = db[j]; }
    }
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                       const float *bias, int N, int C, float eps) {
    double t0 = PROF_START(PROF_LN_FWD);
    TEAM_RUN(layernorm_forward_body(out, mean, rstd, inp, weight, bias, N, C, eps));
    PROF_STOP(PROF_LN_FWD, t0, 0);
}

void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C, int param_acc) {
    double t0 = PROF_START(PROF_LN_BWD);
    TEAM_RUN(layernorm_backward_body(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, param_acc));
    PROF_STOP(PROF_LN_BWD, t0, 0);
}
