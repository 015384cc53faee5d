// Matrix products of training, row-major, with explicit leading dimensions.
//   gemm_nt: C[M,N] (+)= A[M,K] . B[N,K]^T (+ bias[N])   Linear forward:   y = x W^T + b
//   gemm_nn: C[M,N] (+)= A[M,K] . B[K,N]                  Linear backward:  dx = dy W
//   gemm_tn: C[M,N] (+)= A[K,M]^T . B[K,N]                Linear backward:  dW = dy^T x
// accumulate = 0 overwrites C, 1 adds to it. bias may be NULL (only gemm_nt takes one).
// Each output element is summed over k in an order fixed by the sizes alone, never by the number
// of threads, so results are bitwise identical for any OMP thread count. The *_ref versions are
// the plain triple loops kept as the definition the fast kernels are tested against.
#ifndef VITMAE_GEMM_H
#define VITMAE_GEMM_H

void gemm_nt(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, const float *bias, int accumulate);
void gemm_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, int accumulate);
void gemm_tn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, int accumulate);

void gemm_nt_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, const float *bias, int accumulate);
void gemm_nn_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, int accumulate);
void gemm_tn_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, int accumulate);
#endif
