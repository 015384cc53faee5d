// Internal to gemm*.c: the micro-kernel interface shared by the packed GEMM driver (gemm.c) and the
// vector kernels (gemm_avx512.c, gemm_avx2.c).
//
// A micro-kernel computes one MR x NR tile of C from packed panels over kc steps of k:
//   acc[i][j] = sum_{k < kc} a[k * MR + i] * b[k * NR + j]      (k ascending, one FMA chain per element)
//   t = acc + bias[j]                                           (only when bias != NULL)
//   C[i * ldc + j] = load_c ? C[i * ldc + j] + t : t            for i < mr, j < nr only
// a and b are 64-byte aligned, zero-padded to MR rows / NR columns. Elements of C outside mr x nr are
// neither read nor written. (The vector kernels load B unaligned: B read in place need not be.)
// The *_rows variants read A unpacked, element (i, k) at a[i * lda + k] (a full MR-row panel of a
// row-major A), which saves packing A for nt/nn; the arithmetic is identical.
// The *_brows variants read row k of B unpacked at b + k * ldb (NR columns of a row-major B, gemm_tn's
// B in place), which must hold 16 readable columns when nr <= 16 and 32 otherwise; A is packed.
#ifndef VITMAE_GEMM_KERNELS_H
#define VITMAE_GEMM_KERNELS_H

typedef void (*GemmKernel)(int kc, const float *a, const float *b, float *c, long ldc, int mr, int nr,
                           int load_c, const float *bias);
typedef void (*GemmKernelRows)(int kc, const float *a, long lda, const float *b, float *c, long ldc,
                               int mr, int nr, int load_c, const float *bias);
typedef void (*GemmKernelBRows)(int kc, const float *a, const float *b, long ldb, float *c, long ldc,
                                int mr, int nr, int load_c, const float *bias);

#define GEMM_AVX512_MR 14
#define GEMM_AVX512_NR 32
#define GEMM_AVX2_MR 6
#define GEMM_AVX2_NR 16

void gemm_kernel_avx512(int kc, const float *a, const float *b, float *c, long ldc, int mr, int nr,
                        int load_c, const float *bias);
void gemm_kernel_avx2(int kc, const float *a, const float *b, float *c, long ldc, int mr, int nr,
                      int load_c, const float *bias);
void gemm_kernel_avx512_rows(int kc, const float *a, long lda, const float *b, float *c, long ldc,
                             int mr, int nr, int load_c, const float *bias);
void gemm_kernel_avx512_brows(int kc, const float *a, const float *b, long ldb, float *c, long ldc,
                              int mr, int nr, int load_c, const float *bias);
void gemm_kernel_avx2_rows(int kc, const float *a, long lda, const float *b, float *c, long ldc,
                           int mr, int nr, int load_c, const float *bias);
// The strided packing of gemm.c for 32-wide panels (the AVX-512 NR), transposing 16 x 16 blocks in
// registers; the same result as the plain copy loop.
void gemm_pack_strided32_avx512(const float *src, long ld, int k0, int kc, int x0, int width, int stream,
                                float *dst);
// The same for 16-wide panels (the AVX2 NR), transposing 8 x 8 blocks in registers.
void gemm_pack_strided16_avx2(const float *src, long ld, int k0, int kc, int x0, int width, int stream,
                              float *dst);
#endif
