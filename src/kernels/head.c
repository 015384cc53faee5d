// Mean pooling and smoothed cross-entropy (see head.h).
#include <math.h>
#include <stddef.h>
#include "kernels/head.h"

void mean_pool_forward(float *out, const float *x, int B, int T, int D) {
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++)
        for (int i = 0; i < D; i++) {
            double s = 0.0;
            for (int t = 1; t < T; t++) s += x[((size_t)b * T + t) * D + i];
            out[(size_t)b * D + i] = T > 1 ? (float)(s / (T - 1)) : 0.0f;
        }
}

void mean_pool_backward(float *dx, const float *dout, int B, int T, int D) {
    float inv = T > 1 ? 1.0f / (float)(T - 1) : 0.0f;
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < B * T; r++) {
        int b = r / T, t = r % T;
        float *row = dx + (size_t)r * D;
        const float *d = dout + (size_t)b * D;
        for (int i = 0; i < D; i++) row[i] = t == 0 ? 0.0f : d[i] * inv;
    }
}

// Softmax of one row; returns log(sum exp(x - max)) + max, the log-normaliser.
static double softmax_row(float *p, const float *x, int K) {
    float mx = x[0];
    for (int k = 1; k < K; k++) mx = x[k] > mx ? x[k] : mx;
    double sum = 0.0;
    for (int k = 0; k < K; k++) sum += exp((double)x[k] - mx);
    for (int k = 0; k < K; k++) p[k] = (float)(exp((double)x[k] - mx) / sum);
    return log(sum) + mx;
}

void softmax_rows(float *probs, const float *logits, int B, int K) {
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) softmax_row(probs + (size_t)b * K, logits + (size_t)b * K, K);
}

double softmax_xent_forward(float *probs, const float *logits, const int *labels, const int *labels2, double lam,
                            int B, int K, float smoothing) {
    double total = 0.0;
    for (int b = 0; b < B; b++) {
        const float *x = logits + (size_t)b * K;
        double lse = softmax_row(probs + (size_t)b * K, x, K);
        // -sum q_k (x_k - lse) = lse - (1 - s) x_y - (s / K) sum x_k; mixed: x_y -> lam x_y + (1 - lam) x_y2
        double xsum = 0.0;
        for (int k = 0; k < K; k++) xsum += x[k];
        double xy = labels2 ? lam * x[labels[b]] + (1.0 - lam) * x[labels2[b]] : x[labels[b]];
        total += lse - (1.0 - smoothing) * xy - smoothing * xsum / K;
    }
    return B ? total / B : 0.0;
}

void softmax_xent_backward(float *dlogits, const float *probs, const int *labels, const int *labels2, double lam,
                           int B, int K, float smoothing) {
    for (int b = 0; b < B; b++)
        for (int k = 0; k < K; k++) {
            double on = labels2 ? lam * (k == labels[b]) + (1.0 - lam) * (k == labels2[b]) : (k == labels[b]);
            double q = smoothing / K + (1.0 - smoothing) * on;   // on 0 or 1: the unmixed q, bit for bit
            dlogits[(size_t)b * K + k] = (float)(((double)probs[(size_t)b * K + k] - q) / B);
        }
}
