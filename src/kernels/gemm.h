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

// Cache blocking. k is cut into blocks of at most kc (the sum order of every output follows these
// blocks, so results depend on kc: fixed per CPU, never on the thread count); packed B is handled in
// slabs of slab_floats; packed A (gemm_tn) in blocks of mc_panels micro-panels. From this CPU's caches
// (kernels/cpu.h: cpu_caches) and the micro-kernel's MR, by rules stated in docs/performance.md
// ("Blocking from the caches"): for L1d 32 KiB, L2 1 MiB and MR 14 (Zen 4, AVX-512) kc 384, a 512 KiB
// slab and 8 panels. Unknown caches count as those. The environment variable VITMAE_GEMM_KC (16 to
// 4096, read at the first GEMM) overrides kc, for tuning.
typedef struct { int kc; long slab_floats; int mc_panels; } GemmBlocking;
GemmBlocking gemm_blocking_for(long l1d_bytes, long l2_bytes, int mr);   // the rules
GemmBlocking gemm_blocking(void);   // what the current path uses on this CPU ({0} on the ref path)
// Tests and tuning: kc (16..4096) and slab_floats (>= 1024) instead of the caches' values, 0 for the
// caches' value. Releases the packed weights (their layout follows kc). Returns 0, or -1 when out of
// range (nothing changes then). Call from a serial region.
int gemm_force_blocking(int kc, long slab_floats);

// How many packing buffers the products have allocated so far, all threads together (with their one
// shared scratch, for a split of k and for groups' trees). Each buffer is kept and grown only for a
// larger request, so products of shapes already met allocate nothing (tests/test_gemm.c checks it).
long gemm_pack_allocs(void);

void gemm_nt(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, const float *bias, int accumulate);
void gemm_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, int accumulate);
void gemm_tn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, int accumulate);
// gemm_tn, and when it can take them in its own pass over A (it packs A), the sums over k of A's
// columns too: sums[i] (+)= A[0 lda + i] + A[1 lda + i] + ... + A[(K-1) lda + i] for i < M, one chain
// from 0 in ascending k, added to sums[i] when accumulate is set: bitwise what kernels/linear.h's
// column_sum(sums, A, K, M, accumulate) stores (a linear layer's bias gradient: docs/performance.md,
// "Bias gradients summed while packing"). Returns 1 then; 0 when it did not (sums untouched: the k
// range is split among threads, K <= 0, or the reference path), the same on every thread of a team.
int gemm_tn_sums(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, int accumulate, float *sums);

// Weights packed once per step. Between gemm_weights_begin() and gemm_weights_end() the caller promises
// that no matrix passed as B to gemm_nt_weight / gemm_nn_weight changes: each is packed whole at its
// first use in the scope and that copy serves every later call with the same matrix (a training step
// runs forward and backward once per gradient group with the same weights). Outside a scope, and on
// the ref path, they are gemm_nt / gemm_nn. Results are bitwise those of gemm_nt / gemm_nn (packing is a
// copy). The copies are kept for the next scope (at most 2 GiB; beyond that weights are packed per
// call); gemm_weights_release() frees them. Call the three from a serial region. Worker threads
// (dist/workers.h: products in one-thread regions nested in the workers' region, side by side) share
// the copies: a stale copy is packed by the first worker that needs it, and the others pack per call
// until it is fresh (docs/distributed.md, "Threads as workers").
// The copies of all weights together take at most this many bytes (GEMM_WEIGHT_COPIES_MAX_BYTES); a
// weight's copies (as B of gemm_nt_weight and of gemm_nn_weight) take about twice its floats.
#define GEMM_WEIGHT_COPIES_MAX_BYTES (2L << 30)
void gemm_weights_begin(void);
void gemm_weights_end(void);
void gemm_weights_release(void);

// A weight updated in place between scopes (AdamW) can have its packed copies rewritten as it is
// updated, rows still in the cache, instead of packed again from memory at its first use in the next
// scope (docs/performance.md, "Weights packed by the update"). For W [rows][ld] (rows * ld == numel):
//   c = gemm_weight_copies(W, numel)     its copies that hold all of W (c.n 0: none); any thread,
//                                        also beside other threads' products of other weights
//   gemm_weight_copies_rows(&c, r0, r1)  W's rows [r0, r1) written into them, after those rows
//                                        changed; r0 a multiple of GEMM_COPY_ROWS, r1 too or = c.rows;
//                                        any thread, disjoint rows
//   gemm_weight_copies_fresh(&c)         once every row was written: the copies serve the next
//                                        scope as if packed at its first use (the same floats).
// Rows not rewritten must not have changed, or the next scope would read stale copies. A weight is
// rewritten only once the current scope's products are done with it.
#define GEMM_COPY_ROWS 32
#define GEMM_COPIES_MAX 4
typedef struct { int n, rows, idx[GEMM_COPIES_MAX]; } GemmCopies;
GemmCopies gemm_weight_copies(const float *W, long numel);
void gemm_weight_copies_rows(const GemmCopies *c, int r0, int r1);
void gemm_weight_copies_fresh(const GemmCopies *c);
void gemm_nt_weight(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                    float *C, int ldc, const float *bias, int accumulate);
void gemm_nn_weight(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                    float *C, int ldc, int accumulate);

// The weight gradients of n gradient groups summed in their tree (kernels/sumtree.h, t->n groups): group
// g's product P_g = A_g^T B_g over its Kg rows (A_g = A + g Kg lda, B_g = B + g Kg ldb; bitwise gemm_tn
// with accumulate 0), then t's adds element by element; the live results (times t->scale) are stored
// into C[g] ([M, N], ldc); the others' C[g] are not written (the ref path uses them as scratch). Each
// element is one chain: the same bits as the n products into n buffers followed by sumtree_apply.
// (docs/distributed.md, "Groups at once")
typedef struct SumTree SumTree;
void gemm_tn_tree(int M, int N, int Kg, const float *A, int lda, const float *B, int ldb, float *const *C, int ldc,
                  const SumTree *t);
// The same, and each group's sums over its k of A's columns too, taken while A is packed (by groups or
// by blocks: docs/performance.md, "The weight gradients of groups at once, by groups" and "The bias
// gradients of groups at once in the tree's pass"): sums[g][i] = A_g[0 lda + i] + ... +
// A_g[(Kg-1) lda + i], as gemm_tn_sums stores them with accumulate 0 (bitwise column_sum's). Returns 1
// when it took them (sums not NULL, a blocked path); 0 when not (sums NULL, or the reference path,
// which leaves them untouched). The same on every thread of a team.
int gemm_tn_tree_sums(int M, int N, int Kg, const float *A, int lda, const float *B, int ldb, float *const *C,
                      int ldc, const SumTree *t, float *const *sums);

void gemm_nt_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, const float *bias, int accumulate);
void gemm_nn_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, int accumulate);
void gemm_tn_ref(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, int accumulate);
#endif
