// Layer kernels, the plain reference versions (*_ref): the definitions the fast kernels in
// ops_fast.c are tested against (tests/test_ops.c). See ops.h for layouts and the accumulate rule.
#include <math.h>
#include <string.h>
#include "kernels/gemm.h"
#include "kernels/ops.h"

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
            float xhat = (x[i] - m) * s;
            dx[i] += s * (dy[i] * weight[i] - gmean - xhat * gxmean);
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

void linear_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int N, int C, int OC) {
    gemm_nt(N, OC, C, inp, C, weight, C, out, OC, bias, 0);
}

void column_sum_accumulate_ref(float *dbias, const float *dout, int N, int OC) {
    #pragma omp parallel for schedule(static)
    for (int o = 0; o < OC; o++) {
        float s = 0.0f;
        for (int n = 0; n < N; n++) s += dout[(long)n * OC + o];
        dbias[o] += s;
    }
}

void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int C, int OC) {
    if (dinp) gemm_nn(N, C, OC, dout, OC, weight, C, dinp, C, 1);
    gemm_tn(OC, C, N, dout, OC, inp, C, dweight, C, 1);
    if (dbias) column_sum_accumulate(dbias, dout, N, OC);
}

void linear_backward_set(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                         const float *weight, int N, int C, int OC) {
    gemm_nn(N, C, OC, dout, OC, weight, C, dinp, C, 0);
    gemm_tn(OC, C, N, dout, OC, inp, C, dweight, C, 1);
    if (dbias) column_sum_accumulate(dbias, dout, N, OC);
}

void gelu_forward_ref(float *out, const float *inp, long N) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2));
    }
}

// gelu'(x) = Phi(x) + x * phi(x), Phi the normal CDF, phi its density.
void gelu_backward_ref(float *dinp, const float *inp, const float *dout, long N) {
    const float inv_sqrt_2pi = 0.39894228040143267794f;
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) {
        float x = inp[i];
        float cdf = 0.5f * (1.0f + erff(x * (float)M_SQRT1_2));
        float pdf = inv_sqrt_2pi * expf(-0.5f * x * x);
        dinp[i] += dout[i] * (cdf + x * pdf);
    }
}

void residual_forward(float *out, const float *a, const float *b, long N) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) out[i] = a[i] + b[i];
}

void attention_forward_ref(float *out, float *att, const float *qkv, int B, int T, int C, int NH) {
    int hd = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hd);
    #pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *base = qkv + (long)b * T * C3;
        for (int t = 0; t < T; t++) {
            const float *q = base + (long)t * C3 + h * hd;
            float *a = att + ((long)bh * T + t) * T;
            float maxv = -INFINITY;
            for (int s = 0; s < T; s++) {
                const float *k = base + (long)s * C3 + C + h * hd;
                float dot = 0.0f;
                for (int i = 0; i < hd; i++) dot += q[i] * k[i];
                a[s] = dot * scale;
                if (a[s] > maxv) maxv = a[s];
            }
            float sum = 0.0f;
            for (int s = 0; s < T; s++) { a[s] = expf(a[s] - maxv); sum += a[s]; }
            float inv = 1.0f / sum;
            for (int s = 0; s < T; s++) a[s] *= inv;
            float *o = out + ((long)b * T + t) * C + h * hd;
            for (int i = 0; i < hd; i++) o[i] = 0.0f;
            for (int s = 0; s < T; s++) {
                const float *v = base + (long)s * C3 + 2 * C + h * hd;
                for (int i = 0; i < hd; i++) o[i] += a[s] * v[i];
            }
        }
    }
}

// Per (image, head), with P = att, dO = dout:
//   dV = P^T dO;  dP = dO V^T;  dS = P * (dP - rowsum(P * dP));  dQ = scale dS K;  dK = scale dS^T Q.
void attention_backward_ref(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                        int B, int T, int C, int NH) {
    int hd = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hd);
    #pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *base = qkv + (long)b * T * C3;
        float *dbase = dqkv + (long)b * T * C3;
        for (int t = 0; t < T; t++) {
            const float *a = att + ((long)bh * T + t) * T;
            float *da = datt + ((long)bh * T + t) * T;
            const float *dy = dout + ((long)b * T + t) * C + h * hd;
            float dot_pd = 0.0f;
            for (int s = 0; s < T; s++) {
                const float *v = base + (long)s * C3 + 2 * C + h * hd;
                float *dv = dbase + (long)s * C3 + 2 * C + h * hd;
                float d = 0.0f;
                for (int i = 0; i < hd; i++) { d += dy[i] * v[i]; dv[i] += a[s] * dy[i]; }
                da[s] = d;
                dot_pd += a[s] * d;
            }
            const float *q = base + (long)t * C3 + h * hd;
            float *dq = dbase + (long)t * C3 + h * hd;
            for (int s = 0; s < T; s++) {
                float ds = a[s] * (da[s] - dot_pd) * scale;
                const float *k = base + (long)s * C3 + C + h * hd;
                float *dk = dbase + (long)s * C3 + C + h * hd;
                for (int i = 0; i < hd; i++) { dq[i] += ds * k[i]; dk[i] += ds * q[i]; }
            }
        }
    }
}
