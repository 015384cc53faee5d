// LayerNorm: the reference loops (*_ref) and the fast versions (fixed-lane row sums, column blocks
// for the parameter gradients). See kernels/layernorm.h; kernels/ops.h for the accumulate rule.
#include "kernels/layernorm.h"
#include "kernels/prof.h"
#include <math.h>
#include <omp.h>
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
        vpiece acc[NP] = {{0}};
        int i = 0;
        for (; i + VL <= C; i += VL)
            for (int k = 0; k < NP; k++) {
                vpiece d = PIECE_AT(x + i + k * VP) - m;
                acc[k] += d * d;
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

// dx for rows [r0, r1).
static void layernorm_backward_rows(float *dinp, const float *dout, const float *inp, const float *weight,
                                    const float *mean, const float *rstd, int r0, int r1, int C) {
    for (int n = r0; n < r1; n++) {
        const float *x = inp + (long)n * C, *dy = dout + (long)n * C;
        float m = mean[n], s = rstd[n];
        vpiece ag[NP] = {{0}}, agx[NP] = {{0}};
        int i = 0;
        for (; i + VL <= C; i += VL)
            for (int k = 0; k < NP; k++) {
                int e = i + k * VP;
                vpiece g = PIECE_AT(dy + e) * PIECE_AT(weight + e);
                ag[k] += g;
                agx[k] += g * ((PIECE_AT(x + e) - m) * s);
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
}

// The column block [c0, c0 + w) of the parameter gradients' chains, carried on over rows [r0, r1) in
// ascending order: dw[j] and db[j] hold the sums over the rows before r0 and get those rows added, one
// row at a time, exactly as the reference adds them.
static void layernorm_backward_params(float *dw, float *db, const float *dout, const float *inp, const float *mean,
                                      const float *rstd, int r0, int r1, int C, int c0, int w) {
    if (w == CB) {   // CB / VP pieces of each, in registers
        vpiece vdw[CB / VP], vdb[CB / VP];
        memcpy(vdw, dw, sizeof vdw);
        memcpy(vdb, db, sizeof vdb);
        for (int n = r0; n < r1; n++) {
            const float *dy = dout + (long)n * C + c0, *x = inp + (long)n * C + c0;
            float m = mean[n], s = rstd[n];
            for (int k = 0; k < CB / VP; k++) {
                vpiece y = PIECE_AT(dy + k * VP);
                vdw[k] += y * (PIECE_AT(x + k * VP) - m) * s;
                vdb[k] += y;
            }
        }
        memcpy(dw, vdw, sizeof vdw);
        memcpy(db, vdb, sizeof vdb);
        return;
    }
    for (int n = r0; n < r1; n++) {
        const float *dy = dout + (long)n * C + c0, *x = inp + (long)n * C + c0;
        float m = mean[n], s = rstd[n];
        for (int j = 0; j < w; j++) {
            dw[j] += dy[j] * (x[j] - m) * s;
            db[j] += dy[j];
        }
    }
}

// Rows go to the threads in ascending ranges (team_rows), each thread computing its rows' dx. The
// parameter gradients are the reference's chains over all rows in ascending order, handed from thread
// to thread block by block (kernels/team.h, team_chain_*): so they equal the reference bitwise for any
// thread count, and each thread reads only its own rows, which its dx pass has just read.
static void layernorm_backward_body(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                    const float *weight, const float *mean, const float *rstd, int N, int C,
                                    int param_acc) {
    int t = omp_get_thread_num(), T = team_chain_threads(2 * C), r0, r1;   // dweight's chains, then dbias's
    if (t >= T) return;
    team_rows(N, t, T, &r0, &r1);
    layernorm_backward_rows(dinp, dout, inp, weight, mean, rstd, r0, r1, C);
    float *in = t ? team_chain_slot(t - 1) : NULL, *out = team_chain_slot(t);
    int nblocks = (C + CB - 1) / CB;
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CB, w = C - c0 < CB ? C - c0 : CB;
        float dw[CB] = {0}, db[CB] = {0};
        if (t) {
            team_chain_take(t, blk);
            memcpy(dw, in + c0, (size_t)w * sizeof(float));
            memcpy(db, in + C + c0, (size_t)w * sizeof(float));
        }
        layernorm_backward_params(dw, db, dout, inp, mean, rstd, r0, r1, C, c0, w);
        if (t < T - 1) {
            memcpy(out + c0, dw, (size_t)w * sizeof(float));
            memcpy(out + C + c0, db, (size_t)w * sizeof(float));
            team_chain_post(t, blk);
        } else if (param_acc) {
            for (int j = 0; j < w; j++) { dweight[c0 + j] += dw[j]; dbias[c0 + j] += db[j]; }
        } else {
            for (int j = 0; j < w; j++) { dweight[c0 + j] = dw[j]; dbias[c0 + j] = db[j]; }
        }
    }
}

// Groups at once: thread t of T takes groups [t n / T, (t + 1) n / T) whole: their rows' dx, then each
// column block's chains over a group's rows in ascending order from 0, as one thread alone takes them
// (layernorm_backward_body at T = 1), stored into the group's gradients.
static void layernorm_backward_groups_body(float *dinp, float *const *dweight, float *const *dbias,
                                           const float *dout, const float *inp, const float *weight,
                                           const float *mean, const float *rstd, int n, int rows, int C,
                                           int param_acc) {
    int t = omp_get_thread_num(), T = omp_get_num_threads();
    for (int g = (int)((long)n * t / T); g < (int)((long)n * (t + 1) / T); g++) {
        int r0 = g * rows, r1 = r0 + rows;
        layernorm_backward_rows(dinp, dout, inp, weight, mean, rstd, r0, r1, C);
        for (int c0 = 0; c0 < C; c0 += CB) {
            int w = C - c0 < CB ? C - c0 : CB;
            float dw[CB] = {0}, db[CB] = {0}, *gw = dweight[g] + c0, *gb = dbias[g] + c0;
            layernorm_backward_params(dw, db, dout, inp, mean, rstd, r0, r1, C, c0, w);
            if (param_acc) for (int j = 0; j < w; j++) { gw[j] += dw[j]; gb[j] += db[j]; }
            else for (int j = 0; j < w; j++) { gw[j] = dw[j]; gb[j] = db[j]; }
        }
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

void layernorm_backward_by_groups(float *dinp, float *const *dweight, float *const *dbias, const float *dout,
                                  const float *inp, const float *weight, const float *mean, const float *rstd, int n,
                                  int rows, int C, int param_acc) {
    int threads = team_kernel_threads();
    if (n > 1 && n % threads == 0) {
        double t0 = PROF_START(PROF_LN_BWD);
        TEAM_RUN(layernorm_backward_groups_body(dinp, dweight, dbias, dout, inp, weight, mean, rstd, n, rows, C,
                                                param_acc));
        PROF_STOP(PROF_LN_BWD, t0, 0);
        return;
    }
    for (int g = 0; g < n; g++) {
        size_t r0 = (size_t)g * rows;
        layernorm_backward(dinp + r0 * C, dweight[g], dbias[g], dout + r0 * C, inp + r0 * C, weight, mean + r0,
                           rstd + r0, rows, C, param_acc);
    }
}
