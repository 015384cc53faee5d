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

// Which path runs. Paths, fastest first: "avx512" (14x32 micro-kernel), "avx2" (AVX2+FMA, 6x16),
// "portable" (plain C, 4x8), "ref" (the *_ref triple loops). The default is the fastest one this CPU
// supports (kernels/cpu.h); the environment variable VITMAE_GEMM=ref|avx2|avx512|portable (read at
// the first GEMM call) or gemm_force_kernel() picks another. Every path is compiled into every build
// (the vector kernels carry target attributes), and runs only when the CPU has it.
enum { GEMM_PATH_REF, GEMM_PATH_PORTABLE, GEMM_PATH_AVX2, GEMM_PATH_AVX512 };
int gemm_path(void);                       // the path gemm_* use now (GEMM_PATH_*)
const char *gemm_kernel_name(void);        // its name: "avx512", "avx2", "portable" or "ref"
// Forces a path by name; NULL or "auto" restores the default (ignoring VITMAE_GEMM). Returns 0, or -1
// when the name is unknown or the CPU lacks that path (nothing changes then). Not thread-safe against
// concurrent gemm_* calls; call it from a serial region.
int gemm_force_kernel(const char *name);

void gemm_nt(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, const float *bias, int accumulate);
void gemm_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, int accumulate);
void gemm_tn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, int accumulate);

// Weights packed once per step. Between gemm_weights_begin() and gemm_weights_end() the caller promises
// that no matrix passed as B to gemm_nt_weight / gemm_nn_weight changes: each is packed whole at its
// first use in the scope and that copy serves every later call with the same matrix (a training step
// runs forward and backward once per gradient group with the same weights). Outside a scope, and on
// the ref path, they are gemm_nt / gemm_nn. Results are bitwise those of gemm_nt / gemm_nn (packing is a
// copy). The copies are kept for the next scope (at most 2 GiB; beyond that weights are packed per
// call); gemm_weights_release() frees them. Call the three from a serial region.
void gemm_weights_begin(void);
void gemm_weights_end(void);
void gemm_weights_release(void);
void gemm_nt_weight(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                    float *C, int ldc, const float *bias, int accumulate);
void gemm_nn_weight(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                    float *C, int ldc, int accumulate);

void gemm_nt_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, const float *bias, int accumulate);
void gemm_nn_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, int accumulate);
void gemm_tn_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, int accumulate);
#endif
