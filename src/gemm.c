// Matrix products: plain reference loops (the definition) and the entry points the model calls.
// Parallel over output rows: each thread owns whole rows of C; k is summed in ascending order.
#include "gemm.h"

void gemm_nt_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, const float *bias, int accumulate) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) s += A[(long)i * lda + k] * B[(long)j * ldb + k];
            if (bias) s += bias[j];
            float *c = &C[(long)i * ldc + j];
            *c = accumulate ? *c + s : s;
        }
    }
}

void gemm_nn_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, int accumulate) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        float *c = &C[(long)i * ldc];
        if (!accumulate) for (int j = 0; j < N; j++) c[j] = 0.0f;
        for (int k = 0; k < K; k++) {
            float a = A[(long)i * lda + k];
            const float *b = &B[(long)k * ldb];
            for (int j = 0; j < N; j++) c[j] += a * b[j];
        }
    }
}

void gemm_tn_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, int accumulate) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        float *c = &C[(long)i * ldc];
        if (!accumulate) for (int j = 0; j < N; j++) c[j] = 0.0f;
        for (int k = 0; k < K; k++) {
            float a = A[(long)k * lda + i];
            const float *b = &B[(long)k * ldb];
            for (int j = 0; j < N; j++) c[j] += a * b[j];
        }
    }
}

void gemm_nt(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, const float *bias, int accumulate) {
    gemm_nt_ref(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate);
}
void gemm_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, int accumulate) {
    gemm_nn_ref(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}
void gemm_tn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, int accumulate) {
    gemm_tn_ref(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}
