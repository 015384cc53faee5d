// Matrix products: plain reference loops (the definition) and the fast entry points the model calls.
//
// The fast path is a packed, cache-blocked GEMM (the Goto/BLIS scheme). Every product is written as
// C[M,N] (+)= opA(A)[M,K] . opB(B)[K,N] with opA/opB reading A/B either as stored or transposed.
//   k is cut into blocks of kc <= kc_max whose sizes depend on K and kc_max alone (balanced:
//   ceil(K / nblocks)); kc_max and the slab size come from this CPU's caches (gemm_blocking_for);
//   for each block a kc x nc slab of opB is packed into NR-wide panels (sized to stay in L2), then for
//   each MR-row panel of opA (packed, kc x MR, stays in L1) the micro-kernel runs over every NR-wide
//   panel of the slab, adding its kc-term sum into C.
// So each C element is: C = (((C0 or 0) + s_0) + s_1) + ... + (s_last + bias), where s_b is one FMA
// chain over block b in ascending k. That order depends on K and the CPU's L1 size only, never on tile
// positions or on the number of threads. Threads split C into row (or column) ranges and each owns its
// outputs, so results are bitwise identical for any thread count. The *_ref loops sum all of k in one
// chain, so the two differ by float rounding only.
#include "kernels/gemm.h"
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu.h"
#include "kernels/gemm_kernels.h"
#include "kernels/prof.h"
#include "kernels/stream.h"
#include "kernels/sumtree.h"
#include "kernels/team.h"

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

// ---- which path runs (dispatch) --------------------------------------------------------------------------------------

static int path_available(int p) {
    switch (p) {
    case GEMM_PATH_AVX512: return cpu_has_avx512();
    case GEMM_PATH_AVX2: return cpu_has_avx2_fma();
    case GEMM_PATH_PORTABLE: case GEMM_PATH_REF: return 1;
    default: return 0;
    }
}

static int path_default(void) {
    if (cpu_has_avx512()) return GEMM_PATH_AVX512;
    if (cpu_has_avx2_fma()) return GEMM_PATH_AVX2;
    return GEMM_PATH_PORTABLE;
}

static int path_by_name(const char *name) {
    static const char *const names[] = {"ref", "portable", "avx2", "avx512"};
    for (int p = 0; p < 4; p++) if (!strcmp(name, names[p])) return p;
    return -1;
}

static int current_path = -1; // -1: not chosen yet

int gemm_path(void) {
    int p = __atomic_load_n(&current_path, __ATOMIC_RELAXED);
    if (p >= 0) return p;
    p = path_default();
    const char *env = getenv("VITMAE_GEMM");
    if (env && *env) {
        int q = path_by_name(env);
        if (q >= 0 && path_available(q)) p = q; // an unknown or unsupported name keeps the default
    }
    __atomic_store_n(&current_path, p, __ATOMIC_RELAXED);
    return p;
}

const char *gemm_kernel_name(void) {
    static const char *const names[] = {"ref", "portable", "avx2", "avx512"};
    return names[gemm_path()];
}

int gemm_force_kernel(const char *name) {
    int p;
    if (!name || !strcmp(name, "auto")) p = path_default();
    else if ((p = path_by_name(name)) < 0 || !path_available(p)) return -1;
    __atomic_store_n(&current_path, p, __ATOMIC_RELAXED);
    return 0;
}

// ---- portable micro-kernel: plain C, 4 x 8 -----------------------------------------------------------------

#define PORTABLE_MR 4
#define PORTABLE_NR 8

// The tile's sums in 4-float vectors (GCC's vector extension; every target has 16-byte vectors), two a
// row. Kept as an array `float acc[4][8]`, GCC spilled them to the stack every k and the path ran
// several times slower than this (the same trap as vecmath.h's lanes; docs/performance.md, "The
// portable path's tile in registers"). Each element is still acc += a * b, a multiply then an add,
// for k in order: the same bits as the plain loops.
typedef float v4f __attribute__((vector_size(4 * sizeof(float))));

static void gemm_kernel_portable(int kc, const float *restrict a, const float *restrict b,
                                 float *restrict c, long ldc, int mr, int nr, int load_c,
                                 const float *restrict bias) {
    v4f acc[PORTABLE_MR][2] = {{{0}}};
    for (int k = 0; k < kc; k++, a += PORTABLE_MR, b += PORTABLE_NR) {
        v4f b0, b1;
        memcpy(&b0, b, sizeof b0);
        memcpy(&b1, b + 4, sizeof b1);
        for (int i = 0; i < PORTABLE_MR; i++) {
            v4f ai = {a[i], a[i], a[i], a[i]};
            acc[i][0] += ai * b0;
            acc[i][1] += ai * b1;
        }
    }
    for (int i = 0; i < mr; i++) {
        float row[PORTABLE_NR];
        memcpy(row, acc[i], sizeof row);
        float *cr = c + (long)i * ldc;
        for (int j = 0; j < nr; j++) {
            float t = row[j];
            if (bias) t += bias[j];
            cr[j] = load_c ? cr[j] + t : t;
        }
    }
}

// ---- packed driver ------------------------------------------------------------------------------------

#define MIN_FMAS_PER_THREAD (1L << 19)

// ---- blocking from the caches ---------------------------------------------------------------------------

// The caches assumed when the CPU does not say: Zen 4's, where the rules below were tuned.
#define DEFAULT_L1D (32L * 1024)
#define DEFAULT_L2 (1024L * 1024)

static long clampl(long v, long lo, long hi) { return v < lo ? lo : v > hi ? hi : v; }

GemmBlocking gemm_blocking_for(long l1d, long l2, int mr) {
    if (l1d <= 0) l1d = DEFAULT_L1D;
    if (l2 <= 0) l2 = DEFAULT_L2;
    if (mr < 1) mr = 1;
    GemmBlocking b;
    // The MR x kc panel of A that the micro-kernel rereads for every NR-wide panel of B: two thirds of L1
    // (the rest holds the B panel streaming past and the C tile).
    b.kc = (int)clampl(l1d * 2 / 3 / (4L * mr) / 32 * 32, 64, 1024);
    // The kc x nc slab of packed B that all A panels of a block run over: half of L2.
    b.slab_floats = clampl(l2 / 2 / 4, 16L * 1024, 4L * 1024 * 1024);
    // The MC x kc block of packed A (tn): a sixth of L2, beside the slab.
    b.mc_panels = (int)clampl(l2 / 6 / (4L * mr * b.kc), 1, 64);
    return b;
}

// gemm_force_blocking's values (0: none), and VITMAE_GEMM_KC, read once (-1: not yet).
static int forced_kc;
static long forced_slab;
static int env_kc = -1;

static int env_kc_value(void) {
    int v = __atomic_load_n(&env_kc, __ATOMIC_RELAXED);
    if (v >= 0) return v;
    long k = cpu_env_count(getenv("VITMAE_GEMM_KC"), 16, 4096);
    v = k > 0 ? (int)k : 0;   // anything else: from the caches
    __atomic_store_n(&env_kc, v, __ATOMIC_RELAXED);
    return v;
}

static GemmBlocking blocking_for_mr(int mr) {
    CpuCaches c = cpu_caches();
    GemmBlocking b = gemm_blocking_for(c.l1d, c.l2, mr);
    int kc = __atomic_load_n(&forced_kc, __ATOMIC_RELAXED);
    long slab = __atomic_load_n(&forced_slab, __ATOMIC_RELAXED);
    if (!kc) kc = env_kc_value();
    if (kc) b.kc = kc;
    if (slab) b.slab_floats = slab;
    return b;
}

int gemm_force_blocking(int kc, long slab_floats) {
    if (kc < 0 || (kc > 0 && kc < 16) || kc > 4096 || slab_floats < 0 || (slab_floats > 0 && slab_floats < 1024))
        return -1;
    gemm_weights_release();   // packed copies follow the k-blocking
    __atomic_store_n(&forced_kc, kc, __ATOMIC_RELAXED);
    __atomic_store_n(&forced_slab, slab_floats, __ATOMIC_RELAXED);
    return 0;
}

// rows and brows may be NULL; pack_t (NULL: the plain loop) packs strided NR-wide panels of B. blk: the
// blocking for this kernel's MR on this CPU.
typedef struct {
    int mr, nr; GemmKernel fn; GemmKernelRows rows; GemmKernelBRows brows;
    void (*pack_t)(const float *src, long ld, int k0, int kc, int x0, int width, int stream, float *dst);
    GemmBlocking blk;
} Kernel;

// The operands as the driver sees them: element (i, k) of opA and (k, j) of opB.
// bpacked, when not NULL, is all of opB already packed (pack_b_whole below), bpacked_block floats per
// k-block: gemm_block then packs no B.
typedef struct {
    const float *a; long lda; int trans_a;  // trans_a: opA(i,k) = a[k*lda + i], else a[i*lda + k]
    const float *b; long ldb; int trans_b;  // trans_b: opB(k,j) = b[j*ldb + k], else b[k*ldb + j]
    const float *bpacked; long bpacked_block;
    float *asum;   // gemm_tn_sums: opA's sums over k for each row i (accumulated into when accumulating)
} Operands;

// Packing. Both operands are packed into panels W wide (W = MR for A, NR for B) holding k in order:
// panel p of a `width`-wide range starting at x0 lies at dst + p*kc*W, element (x, k) at [k*W + x%W],
// and the last panel is zero-padded to W. Two source layouts:
//   contiguous: (x, k) at src[(k0+k)*ld + x0+x]   (opA of tn, opB of nn/tn): rows of x are copied
//   strided:    (x, k) at src[(x0+x)*ld + k0+k]   (opA of nt/nn, opB of nt): a transpose
// W is a compile-time constant in each instance (see PACK_DISPATCH), so the copies vectorise. The
// panels are pstride k-rows apart (kc when the range is a whole k-block; more when the range is part of
// one: gemm_weight_copies_rows). stream: a weight's packed copy larger than L2 (kernels/stream.h).
static inline __attribute__((always_inline))
void pack_contiguous_w(const float *src, long ld, int k0, int kc, int x0, int width, int W, long pstride,
                       int stream, float *restrict dst, float *restrict sum) {
    const int full = width / W, rest = width - full * W;
    const long pstep = pstride * W;   // one panel to the next
    for (int k = 0; k < kc; k++) {
        const float *row = src + (long)(k0 + k) * ld + x0;
        if (sum)   // the row's elements, just loaded, onto each x's chain (gemm_tn_sums)
            for (int x = 0; x < width; x++) sum[x] += row[x];
        // Rows are far apart and short: the hardware prefetcher misses them, so fetch 16 rows ahead.
        if (k + 16 < kc)
            for (int x = 0; x < width; x += 16) __builtin_prefetch(row + 16 * ld + x);
        // The whole panels in a loop of their own (one constant-size copy each), then the cut one.
        float *d = dst + (long)k * W;
        const float *r = row;
        if (stream)
            for (int p = 0; p < full; p++, d += pstep, r += W) stream_floats(d, r, W);
        else
            for (int p = 0; p < full; p++, d += pstep, r += W) memcpy(d, r, W * sizeof(float));
        if (rest) {
            memcpy(d, r, (size_t)rest * sizeof(float));
            memset(d + rest, 0, (size_t)(W - rest) * sizeof(float));
        }
    }
}

static inline __attribute__((always_inline))
void pack_strided_w(const float *src, long ld, int k0, int kc, int x0, int width, int W, long pstride,
                    int stream, float *restrict dst, float *restrict sum) {
    (void)stream;   // element by element: plain stores
    (void)sum;      // only contiguous panels are summed (gemm_tn's A)
    for (int p = 0; p * W < width; p++) {
        float *d = dst + (long)p * pstride * W;
        int w = width - p * W < W ? width - p * W : W;
        for (int x = 0; x < w; x++) {
            const float *r = src + (long)(x0 + p * W + x) * ld + k0;
            for (int k = 0; k < kc; k++) d[(long)k * W + x] = r[k];
        }
        for (int k = 0; k < kc && w < W; k++)
            for (int x = w; x < W; x++) d[(long)k * W + x] = 0.0f;
    }
}

// stream reaches only the 32- and 16-wide instances (the AVX-512 and AVX2 NR, where streaming stores
// were measured: docs/performance.md, "Weights packed with streaming stores" and "A transposed B packed
// in registers on AVX2"); the other widths store plainly. sum
// (NULL: none): the x range's sums over k, added onto (gemm_tn_sums).
#define PACK_DISPATCH(fn)                                                                              \
    static void fn(const float *src, long ld, int k0, int kc, int x0, int width, int W, long pstride,  \
                   int stream, float *dst, float *sum) {                                               \
        switch (W) {                                                                                   \
        case 32: fn##_w(src, ld, k0, kc, x0, width, 32, pstride, stream, dst, sum); break;             \
        case 16: fn##_w(src, ld, k0, kc, x0, width, 16, pstride, stream, dst, sum); break;             \
        case 14: fn##_w(src, ld, k0, kc, x0, width, 14, pstride, 0, dst, sum); break;                  \
        case 8: fn##_w(src, ld, k0, kc, x0, width, 8, pstride, 0, dst, sum); break;                    \
        case 6: fn##_w(src, ld, k0, kc, x0, width, 6, pstride, 0, dst, sum); break;                    \
        case 4: fn##_w(src, ld, k0, kc, x0, width, 4, pstride, 0, dst, sum); break;                    \
        default: fn##_w(src, ld, k0, kc, x0, width, W, pstride, 0, dst, sum); break;                   \
        }                                                                                              \
    }
PACK_DISPATCH(pack_contiguous)
PACK_DISPATCH(pack_strided)

// opA rows [i0, i0+mr) x k [k0, k0+kc) into MR-row panels; sum (NULL: none, else a transposed A's
// only): each row's elements added onto sum[i - i0] in ascending k.
static void pack_a(const Operands *op, int i0, int mr, int k0, int kc, int MR, float *dst, float *sum) {
    if (op->trans_a) pack_contiguous(op->a, op->lda, k0, kc, i0, mr, MR, kc, 0, dst, sum);
    else pack_strided(op->a, op->lda, k0, kc, i0, mr, MR, kc, 0, dst, NULL);
}

// opB k [k0, k0+kc) x columns [j0, j0+nc) into NR-column panels; stream: with streaming stores where
// the packer has them (a weight's packed copy: pack_b_whole).
static void pack_b_to(const Kernel *ker, const Operands *op, int k0, int kc, int j0, int nc, int NR, int stream,
                      float *dst) {
    if (op->trans_b && NR == ker->nr && ker->pack_t) ker->pack_t(op->b, op->ldb, k0, kc, j0, nc, stream, dst);
    else if (op->trans_b) pack_strided(op->b, op->ldb, k0, kc, j0, nc, NR, kc, stream, dst, NULL);
    else pack_contiguous(op->b, op->ldb, k0, kc, j0, nc, NR, kc, stream, dst, NULL);
}
static void pack_b(const Kernel *ker, const Operands *op, int k0, int kc, int j0, int nc, int NR, float *dst) {
    pack_b_to(ker, op, k0, kc, j0, nc, NR, 0, dst);
}

// The k-blocking: nblocks blocks of kc_base (the last one shorter), a function of K and kc_max alone.
static int k_block(int K, int kc_max) {
    int nblocks = (K + kc_max - 1) / kc_max;
    return (K + nblocks - 1) / nblocks;
}

// 64-byte aligned; from 4 MB on (packed weights, split-k scratch) 2 MB aligned and advised to be huge
// pages (kernels/cpu.h: cpu_advise_huge_pages).
static void *alloc_floats(long n) {
    size_t bytes = ((size_t)n * sizeof(float) + 63) & ~(size_t)63, huge = (size_t)2 << 20;
    if (bytes < 2 * huge) return aligned_alloc(64, bytes ? bytes : 64);
    void *p = aligned_alloc(huge, (bytes + huge - 1) & ~(huge - 1));
    if (p) cpu_advise_huge_pages(p, bytes);   // the last, partial huge page stays small pages
    return p;
}

// Each thread's packing buffers: grown to the largest request seen and kept, so that once a step's
// shapes have been met the products allocate nothing (no malloc inside a step: docs/performance.md,
// "Packing buffers kept per thread"). A slot serves one buffer of one product at a time (products do
// not nest on a thread). Per thread, so the threads of a team or of separate regions never share one;
// they are freed when their thread exits (a thread-specific key's destructor).
#define PACK_SLOTS 3
typedef struct { float *buf[PACK_SLOTS]; long cap[PACK_SLOTS]; } PackScratch;
static pthread_key_t pack_key;
static pthread_once_t pack_key_once = PTHREAD_ONCE_INIT;
static int pack_key_ok;
static long pack_allocs;   // buffers allocated so far, every thread (gemm_pack_allocs)

static void pack_scratch_free(void *p) {
    PackScratch *ps = p;
    for (int i = 0; i < PACK_SLOTS; i++) free(ps->buf[i]);
    free(ps);
}
static void pack_key_make(void) { pack_key_ok = pthread_key_create(&pack_key, pack_scratch_free) == 0; }

// The calling thread's buffer of slot, at least n floats; NULL when out of memory.
static float *pack_scratch(int slot, long n) {
    pthread_once(&pack_key_once, pack_key_make);
    if (!pack_key_ok) return NULL;
    PackScratch *ps = pthread_getspecific(pack_key);
    if (!ps) {
        if (!(ps = calloc(1, sizeof *ps))) return NULL;
        if (pthread_setspecific(pack_key, ps)) { free(ps); return NULL; }
    }
    if (n > ps->cap[slot]) {
        free(ps->buf[slot]);
        __atomic_add_fetch(&pack_allocs, 1, __ATOMIC_RELAXED);
        ps->buf[slot] = alloc_floats(n);
        ps->cap[slot] = ps->buf[slot] ? n : 0;
    }
    return ps->buf[slot];
}

long gemm_pack_allocs(void) { return __atomic_load_n(&pack_allocs, __ATOMIC_RELAXED); }

// Which k-blocks a gemm_block call sums, and where: blocks [kb0, kb1) of the k-blocking (k_block), each
// added into C in turn; or, when P is set, block kb0 + i stored alone (as if into a zeroed C, bias
// included when it is the last block) at P + i * p_stride, rows ldp apart (a split of k: gemm_split_k).
typedef struct { int kb0, kb1; float *P; long ldp, p_stride; } KBlocks;
static const KBlocks ALL_K = {0, 1 << 30, NULL, 0, 0};

// tn's B (row-major, an activation used once) is read in place by the brows kernel when every
// NR-column panel of the block [n0, n1) is 16 or 32 columns wide and its rows are not a multiple of
// 4 KB apart: packing it would only copy it (per thread, when the threads split M). (Reading tn's A in
// place too was slower: docs/performance.md, "Tried, not kept".)
static int tn_b_in_place(const Kernel *ker, int n0, int n1, long ldb) {
    return ker->brows && ker->nr == 32 && (n1 - n0) % 16 == 0 && ldb % 1024 != 0;
}

// ... except in gemm_block when its rows [m0, m1) take more than one block of MC rows and a k-block of
// B's columns [n0, n1) (kc x (n1 - n0) floats) is larger than the slab that the blocking keeps in L2:
// each row block would then read B again from beyond L2, rows far apart, where a packed slab stays in
// L2 (docs/performance.md, "The transposed product's B packed when it leaves L2").
static int tn_b_rereads(const Kernel *ker, int m0, int m1, int n0, int n1, int kc) {
    return m1 - m0 > ker->blk.mc_panels * ker->mr && (long)kc * (n1 - n0) > ker->blk.slab_floats;
}

// C rows [m0, m1) x columns [n0, n1) on the calling thread, over the k-blocks kb. Returns 0, or -1 when
// out of memory.
static int gemm_block(const Kernel *ker, const Operands *op, int m0, int m1, int n0, int n1, int K,
                      float *C, long ldc, const float *bias, int accumulate, const KBlocks *kb) {
    const int MR = ker->mr, NR = ker->nr, MC = ker->blk.mc_panels * ker->mr;
    int kc_base = k_block(K, ker->blk.kc);
    int nc_max = (int)(ker->blk.slab_floats / kc_base / NR * NR);
    if (nc_max < NR) nc_max = NR;
    int n_len = n1 - n0, nc_cap = (n_len + NR - 1) / NR * NR;
    if (nc_cap > nc_max) nc_cap = nc_max;
    // A row-major A (nt, nn) goes to the rows kernel: a full MR-row panel in place, unless its rows are
    // a multiple of 4 KB apart (they would all fall in one L1 set), and an edge panel, as rows copied
    // to a buffer with a harmless stride and zero rows below. Otherwise (tn, or no rows kernel) A is
    // packed MC rows at a time.
    int rows_mode = ker->rows && !op->trans_a, in_place = rows_mode && op->lda % 1024 != 0;
    int b_in_place = op->trans_a && !op->trans_b && !op->bpacked && tn_b_in_place(ker, n0, n1, op->ldb) &&
                     !tn_b_rereads(ker, m0, m1, n0, n1, kc_base);
    long a_stride = (kc_base + 15) / 16 * 16 + 16;
    if (a_stride % 1024 == 0) a_stride += 16;
    long apack_len = rows_mode ? (long)MR * a_stride : (long)MC * kc_base;
    float *apack = pack_scratch(0, apack_len);
    float *bpack = op->bpacked || b_in_place ? NULL : pack_scratch(1, (long)kc_base * nc_cap);
    if (!apack || (!bpack && !op->bpacked && !b_in_place)) return -1;
    // gemm_tn_sums: opA's sums over k for rows [m0, m1), one chain per row, taken while the first column
    // slab packs A (its k-blocks in ascending order); stored by the thread whose columns start at 0.
    int sums = op->asum && n0 == 0 && !rows_mode;
    float *asum = sums ? pack_scratch(2, m1 - m0) : NULL;
    if (sums && !asum) return -1;
    if (sums) memset(asum, 0, (size_t)(m1 - m0) * sizeof(float));
    for (int jc = n0; jc < n1; jc += nc_cap) {
        int nc = n1 - jc < nc_cap ? n1 - jc : nc_cap;
        long k_lo = (long)kb->kb0 * kc_base, k_hi = (long)kb->kb1 * kc_base < K ? (long)kb->kb1 * kc_base : K;
        for (int pc = (int)k_lo; pc < k_hi; pc += kc_base) {
            int kc = K - pc < kc_base ? K - pc : kc_base;
            int load_c = !kb->P && (accumulate || pc > 0);
            float *Ct = kb->P ? kb->P + (long)(pc / kc_base - kb->kb0) * kb->p_stride : C;
            long ldct = kb->P ? kb->ldp : ldc;
            const float *bias_blk = bias && pc + kc == K ? bias + jc : NULL;
            // Panel jr / NR of the slab at bslab + (jr / NR) * b_panel, row k of it at + k * b_ks.
            const float *bslab = bpack;
            long b_panel = (long)kc * NR, b_ks = NR;
            if (op->bpacked) bslab = op->bpacked + (long)(pc / kc_base) * op->bpacked_block + (long)(jc / NR) * kc * NR;
            else if (b_in_place) { bslab = op->b + (long)pc * op->ldb + jc; b_panel = NR; b_ks = op->ldb; }
            else pack_b(ker, op, pc, kc, jc, nc, NR, bpack);
            for (int ic = m0; ic < m1; ic += MC) {
                int mc = m1 - ic < MC ? m1 - ic : MC;
                if (!rows_mode) pack_a(op, ic, mc, pc, kc, MR, apack, sums && jc == n0 ? asum + (ic - m0) : NULL);
                for (int ir = 0; ir < mc; ir += MR) {
                    int mr = mc - ir < MR ? mc - ir : MR;
                    const float *ap = apack + (long)ir * kc, *a_rows = NULL;
                    long lda_rows = op->lda;
                    if (rows_mode) {
                        a_rows = op->a + (long)(ic + ir) * op->lda + pc;
                        if (!in_place || mr < MR) {
                            for (int i = 0; i < MR; i++) {
                                float *d = apack + i * a_stride;
                                if (i < mr) memcpy(d, a_rows + (long)i * op->lda, (size_t)kc * sizeof(float));
                                else memset(d, 0, (size_t)kc * sizeof(float));
                            }
                            a_rows = apack;
                            lda_rows = a_stride;
                        }
                    }
                    for (int jr = 0; jr < nc; jr += NR) {
                        int nr = nc - jr < NR ? nc - jr : NR;
                        const float *bp = bslab + (long)(jr / NR) * b_panel;
                        float *cp = Ct + (long)(ic + ir) * ldct + jc + jr;
                        const float *bias_p = bias_blk ? bias_blk + jr : NULL;
                        if (a_rows) ker->rows(kc, a_rows, lda_rows, bp, cp, ldct, mr, nr, load_c, bias_p);
                        else if (b_in_place) ker->brows(kc, ap, bp, b_ks, cp, ldct, mr, nr, load_c, bias_p);
                        else ker->fn(kc, ap, bp, cp, ldct, mr, nr, load_c, bias_p);
                    }
                }
            }
        }
    }
    for (int i = 0; sums && i < m1 - m0; i++) op->asum[m0 + i] = accumulate ? op->asum[m0 + i] + asum[i] : asum[i];
    return 0;
}

// Out-of-memory fallback for one thread's block: plain loops, same definition as the *_ref (one chain
// over the k of the blocks kb, or per block into kb->P).
static void gemm_block_plain(const Operands *op, int m0, int m1, int n0, int n1, int K, int kc_base, float *C,
                             long ldc, const float *bias, int accumulate, const KBlocks *kb) {
    long k_lo = (long)kb->kb0 * kc_base, k_hi = (long)kb->kb1 * kc_base < K ? (long)kb->kb1 * kc_base : K;
    for (long pc = k_lo; pc < k_hi; pc += kb->P ? kc_base : k_hi - k_lo) {
        long pe = kb->P && pc + kc_base < k_hi ? pc + kc_base : k_hi;
        float *Ct = kb->P ? kb->P + (pc / kc_base - kb->kb0) * kb->p_stride : C;
        long ldct = kb->P ? kb->ldp : ldc;
        for (int i = m0; i < m1; i++)
            for (int j = n0; j < n1; j++) {
                float s = 0.0f;
                for (long k = pc; k < pe; k++) {
                    float a = op->trans_a ? op->a[k * op->lda + i] : op->a[(long)i * op->lda + k];
                    float b = op->trans_b ? op->b[(long)j * op->ldb + k] : op->b[k * op->ldb + j];
                    s += a * b;
                }
                if (bias && pe == K) s += bias[j];
                float *c = &Ct[(long)i * ldct + j];
                *c = !kb->P && (accumulate || pc > 0) ? *c + s : s;
            }
    }
    // gemm_tn_sums (opA transposed, never with a split of k): each row's chain over k.
    for (int i = m0; op->asum && n0 == 0 && i < m1; i++) {
        float s = 0.0f;
        for (long k = 0; k < K; k++) s += op->a[k * op->lda + i];
        op->asum[i] = accumulate ? op->asum[i] + s : s;
    }
}

static int pick_kernel(Kernel *ker) {
    switch (gemm_path()) {
    case GEMM_PATH_AVX512:
        *ker = (Kernel){GEMM_AVX512_MR, GEMM_AVX512_NR, gemm_kernel_avx512, gemm_kernel_avx512_rows,
                         gemm_kernel_avx512_brows, gemm_pack_strided32_avx512, {0, 0, 0}};
        break;
    case GEMM_PATH_AVX2:
        *ker = (Kernel){GEMM_AVX2_MR, GEMM_AVX2_NR, gemm_kernel_avx2, gemm_kernel_avx2_rows, NULL,
                         gemm_pack_strided16_avx2, {0, 0, 0}};
        break;
    case GEMM_PATH_PORTABLE:
        *ker = (Kernel){PORTABLE_MR, PORTABLE_NR, gemm_kernel_portable, NULL, NULL, NULL, {0, 0, 0}};
        break;
    default: return 0;
    }
    ker->blk = blocking_for_mr(ker->mr);
    return 1;
}

GemmBlocking gemm_blocking(void) {
    Kernel ker;
    return pick_kernel(&ker) ? ker.blk : (GemmBlocking){0, 0, 0};
}

// ---- a weight gradient split along k ---------------------------------------------------------------

// gemm_tn (dW = dy^T x) sums over the rows of its operands, the tokens, which the kernels before it
// shared out among the threads by rows. When those rows span several k-blocks, the threads can take
// whole k-blocks instead of rows of C: each then reads only about the rows it wrote (docs/performance.md,
// "Intel Xeon: the weight gradient split along k"). Virtual thread v of n sums the blocks
// [nb v / n, nb (v + 1) / n) for all of C: v = 0 into C itself, as the unsplit product would, the
// others each block alone into scratch; then the scratch blocks are added into C in ascending order,
// C's rows shared out. So C = ((C0 + s_0) + s_1) + ... + s_last exactly as the one-thread path sums it
// (kernels/gemm.c's header): the same bits for any split. Used when the blocks share out evenly (nb a
// multiple of n) and the scratch stays under SPLIT_K_MAX_FLOATS.
#define SPLIT_K_MAX_FLOATS (4L << 20)

// The products' one shared scratch, for a split along k's blocks and for gemm_tn_tree's groups (by
// groups, below): grown by one thread while its team waits, freed by gemm_weights_release. One for the
// process: both need 2 or more threads, so only a team or a top-level OpenMP region uses it, and no
// two of those run products side by side. NULL when out of memory.
static float *shared_buf;
static long shared_cap;
static float *shared_scratch(long need) {
    if (need > shared_cap) {
        free(shared_buf);
        __atomic_add_fetch(&pack_allocs, 1, __ATOMIC_RELAXED);
        shared_buf = alloc_floats(need);
        shared_cap = shared_buf ? need : 0;
    }
    return shared_buf;
}

// A split along k: n virtual threads (0: no split), nb k-blocks of kc_base, v = 0 owning the first
// nb / n; nfold = nb - nb / n blocks go through scratch, each M x N.
typedef struct { int n, kc_base, nb, nfold; } SplitK;

// The split of this product, from the arguments alone, so every thread of a team plans the same.
static SplitK split_k_plan(const Kernel *ker, const Operands *op, int M, int N, int K, int threads) {
    SplitK sk = {0, 0, 0, 0};
    if (!op->trans_a || op->trans_b || op->bpacked) return sk;   // gemm_tn only (measured there)
    int kc_base = k_block(K, ker->blk.kc), nb = (K + kc_base - 1) / kc_base;
    int n = threads < nb ? threads : nb;
    if (n < 2 || nb % n || (long)(nb - nb / n) * M * N > SPLIT_K_MAX_FLOATS) return sk;
    return (SplitK){n, kc_base, nb, nb - nb / n};
}

// The scratch of a split (NULL when out of memory). One thread at a time.
static float *split_k_scratch(const SplitK *sk, int M, int N) { return shared_scratch((long)sk->nfold * M * N); }

// Virtual thread v's blocks.
static void split_k_part(const Kernel *ker, const Operands *op, const SplitK *sk, int M, int N, int K, float *C,
                         int ldc, const float *bias, int accumulate, float *P, int v) {
    int b0 = sk->nb * v / sk->n, b1 = sk->nb * (v + 1) / sk->n;
    KBlocks kb = {b0, b1, v ? P + (long)(b0 - (sk->nb - sk->nfold)) * M * N : NULL, N, (long)M * N};
    if (gemm_block(ker, op, 0, M, 0, N, K, C, ldc, bias, accumulate, &kb))
        gemm_block_plain(op, 0, M, 0, N, K, sk->kc_base, C, ldc, bias, accumulate, &kb);
}

// After every part: C's rows, shared out, get the scratch blocks added in ascending order.
static void split_k_fold_body(const SplitK *sk, int M, int N, float *C, int ldc, const float *P) {
    #pragma omp for schedule(static) nowait
    for (int i = 0; i < M; i++) {
        float *restrict c = C + (long)i * ldc;
        for (int b = 0; b < sk->nfold; b++) {
            const float *restrict p = P + (long)b * M * N + (long)i * N;
            for (int j = 0; j < N; j++) c[j] += p[j];
        }
    }
}

// ---- weights packed once per scope (gemm_weights_begin) -----------------------------------------------

// Whether this many floats (a packed copy, a product's result) are more than L2 holds (twice the
// blocking's B slab).
static int too_big_for_l2(const Kernel *ker, long floats) { return floats > 2 * ker->blk.slab_floats; }

// All of opB packed: k-block b (kc_base = k_block(K, kc) wide, the last one shorter) at buf + b * block,
// its NR-column panel p at + p * kc * NR, as gemm_block would pack it piece by piece. Thread t of nth
// packs its share of the (block, panel) pieces. A copy larger than L2 cannot wait there for the
// product that follows: it is written with streaming stores (kernels/stream.h); a smaller one with plain
// stores, so that the product finds it in the cache.
static void pack_b_whole(const Kernel *ker, const Operands *op, int K, int N, float *buf, long block, int t,
                         int nth) {
    int NR = ker->nr, kc_base = k_block(K, ker->blk.kc);
    long nblocks = (K + kc_base - 1) / kc_base, panels = (N + NR - 1) / NR, pieces = nblocks * panels;
    int stream = too_big_for_l2(ker, nblocks * block);
    for (long i = pieces * t / nth; i < pieces * (t + 1) / nth; i++) {
        int b = (int)(i / panels), p = (int)(i % panels), pc = b * kc_base, j0 = p * NR;
        int kc = K - pc < kc_base ? K - pc : kc_base, w = N - j0 < NR ? N - j0 : NR;
        pack_b_to(ker, op, pc, kc, j0, w, NR, stream, buf + b * block + (long)p * kc * NR);
    }
    stream_fence();   // the streaming stores are seen by the other threads after the barrier that follows
}

// One weight's packed copy; generation: the scope it was last packed in. Its layout follows the
// k-blocking, which changes only through gemm_force_blocking (it releases the copies).
typedef struct {
    const float *b; long ldb; int trans_b, K, N, nr;
    long generation, block;
    float *buf;
    int filling;   // a worker thread is packing it (weight_lookup's nested case)
} PackedWeight;

#define WEIGHT_CACHE_MAX_BYTES GEMM_WEIGHT_COPIES_MAX_BYTES   // beyond this, weights are packed per call as before
static PackedWeight *cache;
static int cache_len, cache_cap;
static long cache_bytes, scope_generation;
static int scope_open;

void gemm_weights_begin(void) { scope_generation++; scope_open = 1; }
void gemm_weights_end(void) { scope_open = 0; }
void gemm_weights_release(void) {
    free(shared_buf);
    shared_buf = NULL; shared_cap = 0;
    for (int i = 0; i < cache_len; i++) free(cache[i].buf);
    free(cache);
    cache = NULL; cache_len = cache_cap = 0; cache_bytes = 0; scope_open = 0;
}

// ---- copies rewritten by the weight's update (gemm_weight_copies, kernels/gemm.h) ------------------------

// Worker threads (dist/workers.h: each in a region nested in the workers', running its own products
// beside the others) look up under this lock. A copy that is fresh in this scope is read by all; one
// that is not is claimed by the first worker to ask, which packs it alone (its `filling` set) and then
// marks it fresh (weight_filled); a worker that asks meanwhile packs per call rather than wait. The lock
// orders the packing before every read of the copy.
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
// The three below take it too: a worker may update a weight beside another worker's products, which
// can add entries to the table (dist/workers.h, AdamW beside the backward).

GemmCopies gemm_weight_copies(const float *W, long numel) {
    GemmCopies c = {0, 0, {0}};
    Kernel ker;
    if (!pick_kernel(&ker) || GEMM_COPY_ROWS % ker.nr) return c;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < cache_len && c.n < GEMM_COPIES_MAX; i++) {
        const PackedWeight *e = &cache[i];
        int rows = e->trans_b ? e->N : e->K, cols = e->trans_b ? e->K : e->N;
        if (e->b != W || e->nr != ker.nr || e->ldb != cols || (long)rows * cols != numel || (c.n && rows != c.rows))
            continue;
        // A copy that fits L2 is better packed at its first use, where the product finds it in the cache.
        int kc_base = k_block(e->K, ker.blk.kc);
        if (!too_big_for_l2(&ker, (long)(e->K + kc_base - 1) / kc_base * e->block)) continue;
        c.rows = rows;
        c.idx[c.n++] = i;
    }
    pthread_mutex_unlock(&cache_lock);
    return c;
}

void gemm_weight_copies_rows(const GemmCopies *c, int r0, int r1) {
    Kernel ker;
    if (!c->n || r0 >= r1 || !pick_kernel(&ker)) return;
    PackedWeight copy[GEMM_COPIES_MAX];   // the entries as they are now: the table may grow meanwhile
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < c->n; i++) copy[i] = cache[c->idx[i]];
    pthread_mutex_unlock(&cache_lock);
    for (int i = 0; i < c->n; i++) {
        const PackedWeight *e = &copy[i];
        int K = e->K, NR = e->nr, kc_base = k_block(K, ker.blk.kc);
        long nblocks = (K + kc_base - 1) / kc_base;
        // Every copy here is larger than L2 (gemm_weight_copies): streaming stores, as pack_b_whole's.
        if (e->trans_b) {   // rows of W are columns of opB: whole NR-wide panels of every k-block
            Operands op = {NULL, 0, 0, e->b, e->ldb, 1, NULL, 0, NULL};
            for (long b = 0; b < nblocks; b++) {
                int pc = (int)b * kc_base, kc = K - pc < kc_base ? K - pc : kc_base;
                float *dst = e->buf + b * e->block + (long)(r0 / NR) * kc * NR;
                pack_b_to(&ker, &op, pc, kc, r0, r1 - r0, NR, 1, dst);
            }
        } else {   // rows of W are rows k of opB: the part of each k-block they cover, all its panels
            for (int k = r0; k < r1;) {
                int b = k / kc_base, kcb = K - b * kc_base < kc_base ? K - b * kc_base : kc_base;
                int k_end = b * kc_base + kcb < r1 ? b * kc_base + kcb : r1;
                pack_contiguous(e->b, e->ldb, k, k_end - k, 0, e->N, NR, kcb, 1,
                                e->buf + b * e->block + (long)(k - b * kc_base) * NR, NULL);
                k = k_end;
            }
        }
    }
    stream_fence();
}

void gemm_weight_copies_fresh(const GemmCopies *c) {
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < c->n; i++) cache[c->idx[i]].generation = scope_generation + 1;   // the next scope's
    pthread_mutex_unlock(&cache_lock);
}

// What a GEMM needs to know of its weight's packed copy: buf NULL (pack per call), or the copy and
// whether this call must fill it first (then, called from a worker, `entry` is its index in the cache,
// for weight_filled).
typedef struct { float *buf; long block; int fill, entry; } PackedB;
_Static_assert(sizeof(PackedB) <= TEAM_BCAST_MAX, "team_broadcast carries a PackedB");


static PackedB weight_lookup_locked(const Kernel *ker, const Operands *op, int K, int N, int worker);

// Finds or makes the packed copy of opB (one thread at a time, or a worker thread: see cache_lock).
static PackedB weight_lookup(const Kernel *ker, const Operands *op, int K, int N) {
    if (!scope_open) return (PackedB){NULL, 0, 0, -1};
    if (omp_get_level() < 2) return weight_lookup_locked(ker, op, K, N, 0);
    pthread_mutex_lock(&cache_lock);
    PackedB r = weight_lookup_locked(ker, op, K, N, 1);
    pthread_mutex_unlock(&cache_lock);
    return r;
}

// A worker has packed cache entry i: fresh for this scope.
static void weight_filled(int i) {
    pthread_mutex_lock(&cache_lock);
    cache[i].generation = scope_generation;
    cache[i].filling = 0;
    pthread_mutex_unlock(&cache_lock);
}

static PackedB weight_lookup_locked(const Kernel *ker, const Operands *op, int K, int N, int worker) {
    PackedB r = {NULL, 0, 0, -1};
    PackedWeight *e = NULL;
    for (int i = 0; i < cache_len && !e; i++) {
        PackedWeight *c = &cache[i];
        if (c->b == op->b && c->ldb == op->ldb && c->trans_b == op->trans_b && c->K == K && c->N == N && c->nr == ker->nr)
            e = c;
    }
    if (!e) {
        int kc_base = k_block(K, ker->blk.kc);
        long nblocks = (K + kc_base - 1) / kc_base, panels = (N + ker->nr - 1) / ker->nr;
        long block = panels * kc_base * ker->nr, bytes = nblocks * block * (long)sizeof(float);
        if (cache_bytes + bytes > WEIGHT_CACHE_MAX_BYTES) return r;
        if (cache_len == cache_cap) {
            int cap = cache_cap ? 2 * cache_cap : 64;
            PackedWeight *grown = realloc(cache, (size_t)cap * sizeof *grown);
            if (!grown) return r;
            cache = grown; cache_cap = cap;
        }
        float *buf = alloc_floats(nblocks * block);
        if (!buf) return r;
        e = &cache[cache_len++];
        *e = (PackedWeight){op->b, op->ldb, op->trans_b, K, N, ker->nr, 0, block, buf, 0};
        cache_bytes += bytes;
    }
    r.buf = e->buf; r.block = e->block; r.fill = e->generation != scope_generation;
    if (!worker) {
        e->generation = scope_generation;
    } else if (r.fill) {   // stale: this worker packs it, unless another already does
        if (e->filling) return (PackedB){NULL, 0, 0, -1};
        e->filling = 1;
        r.entry = (int)(e - cache);
    }
    return r;
}

// Whether threads split C by MR-row tiles (else NR-column tiles): each thread packs all of the operand
// along the dimension it does not split, so split the larger of M and N, unless it has too few tiles to
// share out evenly.
static int split_rows(int M, int N, long tiles_m, long tiles_n) {
    return M >= N ? tiles_m >= 4 || tiles_m >= tiles_n : !(tiles_n >= 4 || tiles_n >= tiles_m);
}

// Thread t of nth's share of C: rows [m0, m1) x columns [n0, n1). Split by rows (split_m), each thread
// gets M / nth rows (the one short tile of each range runs on the micro-kernel's smaller instances):
// whole MR-row tiles left one thread up to a tile short of the others, which then waited for it at the
// barrier (docs/performance.md, "Rows shared out evenly"). By columns, whole NR-column tiles. Which
// thread computes a row does not change its bits.
typedef struct { int m0, m1, n0, n1; } Range;
static Range part_range(const Kernel *ker, int M, int N, int split_m, long tiles, int t, int nth) {
    long t0 = tiles * t / nth, t1 = tiles * (t + 1) / nth;
    Range r = {0, M, 0, N};
    if (split_m) {
        r.m0 = (int)((long)M * t / nth); r.m1 = (int)((long)M * (t + 1) / nth);
    } else {
        r.n0 = (int)(t0 * ker->nr); r.n1 = t1 * ker->nr < N ? (int)(t1 * ker->nr) : N;
    }
    return r;
}

// Thread t of nth: its share of the tiles (part_range).
static void gemm_part(const Kernel *ker, const Operands *op, int M, int N, int K, float *C, int ldc,
                      const float *bias, int accumulate, int split_m, long tiles, int t, int nth) {
    Range r = part_range(ker, M, N, split_m, tiles, t, nth);
    int m0 = r.m0, m1 = r.m1, n0 = r.n0, n1 = r.n1;
    if (m0 < m1 && n0 < n1 && gemm_block(ker, op, m0, m1, n0, n1, K, C, ldc, bias, accumulate, &ALL_K))
        gemm_block_plain(op, m0, m1, n0, n1, K, K, C, ldc, bias, accumulate, &ALL_K);
}

// Splits C among threads: whole MR-row tiles or NR-column tiles, each thread owning its range; a
// problem too small to pay for more threads runs on fewer (the caller alone at the least). In team
// mode (kernels/team.h) the threads are those of the caller's region: the first `threads` of them
// compute, and all meet at the team's barrier before the next kernel. Returns 1 when op->asum's sums
// were taken (gemm_tn_sums: never when the k range is split among threads), else 0; the same on
// every thread, as the plan follows from the arguments and the thread count alone.
static int gemm_packed(const Kernel *ker, Operands *op, int M, int N, int K, float *C, int ldc,
                       const float *bias, int accumulate, int weight) {
    if (M <= 0 || N <= 0) return 0;
    if (K <= 0) { // no products: C = (C or 0) + bias
        if (!team_mode || omp_get_thread_num() == 0)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    float s = bias ? 0.0f + bias[j] : 0.0f, *c = &C[(long)i * ldc + j];
                    *c = accumulate ? *c + s : s;
                }
        team_barrier();
        return 0;
    }
    // A weight inside a scope: packed by all threads the first time, then read from its packed copy.
    // The copies are the process's, shared with worker threads beside this one (cache_lock).
    PackedB pb = {NULL, 0, 0, -1};
    if (team_mode && weight) {   // thread 0 looks up (a team's threads do not look up side by side), all get its answer
        if (omp_get_thread_num() == 0) pb = weight_lookup(ker, op, K, N);
        team_broadcast(&pb, (int)sizeof pb);
    } else if (weight) {
        pb = weight_lookup(ker, op, K, N);
    }
    long tiles_m = (M + ker->mr - 1) / ker->mr, tiles_n = (N + ker->nr - 1) / ker->nr;
    long by_work = (long)((double)M * N * K / MIN_FMAS_PER_THREAD);
    int threads = team_kernel_threads();
    if (threads > by_work) threads = by_work > 1 ? (int)by_work : 1;
    // split_rows; but a B packed once for the step is packed by no thread: then split M whenever its
    // tiles go round, so that each thread gets about the rows that the row-wise kernels before and after
    // the product give it.
    int split_m = split_rows(M, N, tiles_m, tiles_n);
    if (pb.buf && tiles_m >= 8L * threads) split_m = 1;
    long tiles = split_m ? tiles_m : tiles_n;
    if (threads > tiles) threads = (int)tiles;
    if (team_mode) {
        int t = omp_get_thread_num();
        if (pb.fill) {
            pack_b_whole(ker, op, K, N, pb.buf, pb.block, t, omp_get_num_threads());
            team_barrier();
            if (pb.entry >= 0 && t == 0) weight_filled(pb.entry);
        }
        op->bpacked = pb.buf; op->bpacked_block = pb.block;
        SplitK sk = split_k_plan(ker, op, M, N, K, threads);
        if (sk.n) {
            float *P = t == 0 ? split_k_scratch(&sk, M, N) : NULL;
            team_broadcast(&P, (int)sizeof P);
            if (P) {
                op->asum = NULL;   // each thread sees only its k-blocks: no one chain over k
                for (int v = t; v < sk.n; v += omp_get_num_threads())
                    split_k_part(ker, op, &sk, M, N, K, C, ldc, bias, accumulate, P, v);
                team_barrier();
                split_k_fold_body(&sk, M, N, C, ldc, P);
                team_barrier();
                return 0;
            }
        }
        if (t < threads) gemm_part(ker, op, M, N, K, C, ldc, bias, accumulate, split_m, tiles, t, threads);
        team_barrier();
        return op->asum != NULL;
    }
    op->bpacked = pb.buf; op->bpacked_block = pb.block;
    SplitK sk = split_k_plan(ker, op, M, N, K, threads);
    float *P = sk.n ? split_k_scratch(&sk, M, N) : NULL;
    if (P) {
        op->asum = NULL;   // the parts see only their k-blocks, as in team mode
        #pragma omp parallel num_threads(sk.n)
        {
            for (int v = omp_get_thread_num(); v < sk.n; v += omp_get_num_threads())
                split_k_part(ker, op, &sk, M, N, K, C, ldc, bias, accumulate, P, v);
            #pragma omp barrier
            split_k_fold_body(&sk, M, N, C, ldc, P);
        }
        return 0;
    }
    #pragma omp parallel num_threads(threads) if (threads > 1)
    {
        int t = omp_get_thread_num(), nth = omp_get_num_threads();
        if (pb.fill) {
            pack_b_whole(ker, op, K, N, pb.buf, pb.block, t, nth);
            #pragma omp barrier
            if (pb.entry >= 0 && t == 0) weight_filled(pb.entry);
        }
        gemm_part(ker, op, M, N, K, C, ldc, bias, accumulate, split_m, tiles, t, nth);
    }
    return op->asum != NULL;
}

// The reference path in team mode: the caller's thread 0 runs the plain loops (its own region is nested,
// so it runs them alone) while the others wait at the barrier.
#define RUN_REF(call)                                       \
    do {                                                    \
        if (!team_mode) {                                   \
            call;                                           \
        } else {                                            \
            if (omp_get_thread_num() == 0) call;            \
            team_barrier();                                 \
        }                                                   \
    } while (0)

static void gemm_nt_impl(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                         float *C, int ldc, const float *bias, int accumulate, int weight) {
    double t0 = PROF_START(PROF_GEMM_NT);
    Kernel ker;
    Operands op = {A, lda, 0, B, ldb, 1, NULL, 0, NULL};
    if (pick_kernel(&ker)) gemm_packed(&ker, &op, M, N, K, C, ldc, bias, accumulate, weight);
    else RUN_REF(gemm_nt_ref(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate));
    PROF_STOP(PROF_GEMM_NT, t0, 2.0 * M * N * K);
}
static void gemm_nn_impl(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                         float *C, int ldc, int accumulate, int weight) {
    double t0 = PROF_START(PROF_GEMM_NN);
    Kernel ker;
    Operands op = {A, lda, 0, B, ldb, 0, NULL, 0, NULL};
    if (pick_kernel(&ker)) gemm_packed(&ker, &op, M, N, K, C, ldc, NULL, accumulate, weight);
    else RUN_REF(gemm_nn_ref(M, N, K, A, lda, B, ldb, C, ldc, accumulate));
    PROF_STOP(PROF_GEMM_NN, t0, 2.0 * M * N * K);
}

void gemm_nt(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, const float *bias, int accumulate) {
    gemm_nt_impl(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate, 0);
}
void gemm_nt_weight(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                    float *C, int ldc, const float *bias, int accumulate) {
    gemm_nt_impl(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate, 1);
}
void gemm_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, int accumulate) {
    gemm_nn_impl(M, N, K, A, lda, B, ldb, C, ldc, accumulate, 0);
}
void gemm_nn_weight(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                    float *C, int ldc, int accumulate) {
    gemm_nn_impl(M, N, K, A, lda, B, ldb, C, ldc, accumulate, 1);
}
int gemm_tn_sums(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, int accumulate, float *sums) {
    double t0 = PROF_START(PROF_GEMM_TN);
    Kernel ker;
    Operands op = {A, lda, 1, B, ldb, 0, NULL, 0, sums};
    int summed = 0;
    if (pick_kernel(&ker)) summed = gemm_packed(&ker, &op, M, N, K, C, ldc, NULL, accumulate, 0);
    else RUN_REF(gemm_tn_ref(M, N, K, A, lda, B, ldb, C, ldc, accumulate));
    PROF_STOP(PROF_GEMM_TN, t0, 2.0 * M * N * K);
    return summed;
}
void gemm_tn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
             float *C, int ldc, int accumulate) {
    gemm_tn_sums(M, N, K, A, lda, B, ldb, C, ldc, accumulate, NULL);
}

// ---- the weight gradients of gradient groups at once, summed in their tree -------------------------

// Group g's operands of gemm_tn_tree: opA(i, k) = A[(g Kg + k) lda + i], opB(k, j) = B[(g Kg + k) ldb + j].
static Operands group_operands(const float *A, int lda, const float *B, int ldb, int Kg, int g) {
    return (Operands){A + (long)g * Kg * lda, lda, 1, B + (long)g * Kg * ldb, ldb, 0, NULL, 0, NULL};
}

// Group g's product of rows [ic, ic + mc) x columns [jc, jc + nc) of gemm_tn_tree into blk (rows ld_blk
// apart), k-blocks added there as gemm_block adds them into C, and onto what blk holds when onto is set:
// A packed at ap (k-block b at + b a_block, MC x kc each); B packed at bp (k-block b at + b b_block) or,
// bp NULL, read in place at b_rows (row k at + k ldb: this group's rows, from column jc).
static void tn_tree_group(const Kernel *ker, int mc, int nc, int Kg, int kc_base, const float *ap, long a_block,
                          const float *bp, long b_block, const float *b_rows, long ldb, float *blk, long ld_blk,
                          int onto) {
    const int MR = ker->mr, NR = ker->nr;
    for (int pc = 0; pc < Kg; pc += kc_base) {
        int kc = Kg - pc < kc_base ? Kg - pc : kc_base;
        const float *apk = ap + (long)(pc / kc_base) * a_block, *bpk = bp ? bp + (long)(pc / kc_base) * b_block : NULL;
        for (int ir = 0; ir < mc; ir += MR) {
            int mr = mc - ir < MR ? mc - ir : MR;
            for (int jr = 0; jr < nc; jr += NR) {
                int nr = nc - jr < NR ? nc - jr : NR;
                float *cp = blk + (long)ir * ld_blk + jr;
                const float *a = apk + (long)ir * kc;
                if (bpk) ker->fn(kc, a, bpk + (long)(jr / NR) * kc * NR, cp, ld_blk, mr, nr, pc > 0 || onto, NULL);
                else ker->brows(kc, a, b_rows + (long)pc * ldb + jr, ldb, cp, ld_blk, mr, nr, pc > 0 || onto, NULL);
            }
        }
    }
}

// One block (mc rows x nc columns) of every group's product, summed in the tree: the live groups' results
// go straight into their C[g] (out[g], rows ldc apart), the others' into scratch blocks (blk[g], rows
// nc_cap apart, kept in L2). With one k-block per group, an add of a group whose product is not computed
// yet is that product taken onto the destination by the kernel itself (its load of C: dst + P_src, the
// add's own float add); an add of a subtree's result is a pass over the block. Then the live results
// are scaled in place. The same adds in the same order as sumtree_apply over the n products, so the same
// bits, with no block written twice and no pass over the groups' blocks to add and store them
// (docs/performance.md, "The tree's adds in the kernels' stores").
typedef struct {
    const Kernel *ker;
    int mc, nc, Kg, kc_base, nc_cap;
    const float *apack; long a_group, a_block;   // group g's packed A at apack + g a_group
    const float *bpack; long b_group, b_block;   // group g's packed B at bpack + g b_group, or ...
    const float *b_rows; long ldb, b_rows_group; // ... (bpack NULL) read in place at b_rows + g b_rows_group
} TnBlock;

static void tn_block_tree(const TnBlock *q, const SumTree *t, float *const *blk, float *const *out, long ldc) {
    const int n = t->n;
    float *buf[SUMTREE_MAX];
    long ld[SUMTREE_MAX];
    for (int g = 0; g < n; g++) {
        buf[g] = t->live[g] ? out[g] : blk[g];
        ld[g] = t->live[g] ? ldc : q->nc_cap;
    }
    // Group g's product into buf[d] (onto: added onto what buf[d] holds).
#define TN_GROUP(g, d, onto)                                                                                      tn_tree_group(q->ker, q->mc, q->nc, q->Kg, q->kc_base, q->apack + (long)(g) * q->a_group, q->a_block,                       q->bpack ? q->bpack + (long)(g) * q->b_group : NULL, q->b_block,                                              q->b_rows ? q->b_rows + (long)(g) * q->b_rows_group : NULL, q->ldb, buf[d], ld[d], onto)
    int fold = q->Kg <= q->kc_base;   // one k-block: the kernel's load of C is the chain's only add of C
    unsigned char done[SUMTREE_MAX] = {0};
    for (int i = 0; i < t->nadd; i++) {
        int d = t->dst[i], s = t->src[i];
        if (!done[d]) { TN_GROUP(d, d, 0); done[d] = 1; }
        if (!done[s] && fold) { TN_GROUP(s, d, 1); done[s] = 1; continue; }
        if (!done[s]) { TN_GROUP(s, s, 0); done[s] = 1; }
        for (int r = 0; r < q->mc; r++) {
            float *restrict dr = buf[d] + r * ld[d];
            const float *restrict sr = buf[s] + r * ld[s];
            for (int j = 0; j < q->nc; j++) dr[j] += sr[j];
        }
    }
    for (int g = 0; g < n; g++) {
        if (!done[g]) TN_GROUP(g, g, 0);   // a group no add takes: a tree of one
        if (!t->live[g] || t->scale == 1.0f) continue;
        for (int r = 0; r < q->mc; r++)
            for (int j = 0; j < q->nc; j++) buf[g][r * ld[g] + j] *= t->scale;
    }
#undef TN_GROUP
}

// Rows [ic, ic + mc) of every group's A, every k-block: group g's block b at dst + g a_group + b a_block.
// sums (NULL: none): each row's chain over all of its group's k, ascending, set into sums[g][ic ...]
// (gemm_block's sums, taken while packing).
static void tn_pack_a_groups(const Kernel *ker, int ic, int mc, int Kg, int kc_base, const float *A, int lda,
                             const float *B, int ldb, int n, float *dst, long a_group, long a_block,
                             float *const *sums) {
    int nkb = (Kg + kc_base - 1) / kc_base;
    for (int g = 0; g < n; g++) {
        Operands op = group_operands(A, lda, B, ldb, Kg, g);
        float *sum = sums ? sums[g] + ic : NULL;
        if (sum) memset(sum, 0, (size_t)mc * sizeof(float));
        for (int b = 0; b < nkb; b++)
            pack_a(&op, ic, mc, b * kc_base, b < nkb - 1 ? kc_base : Kg - b * kc_base, ker->mr,
                   dst + (long)g * a_group + (long)b * a_block, sum);
    }
}

// Rows [m0, m1) x columns [n0, n1) of gemm_tn_tree on the calling thread, in blocks of MC rows x at
// most 256 columns, each summed in the tree by tn_block_tree (the live results straight into C, the
// other groups' products in scratch blocks of their own, S, kept in L2; the same kernels on the same
// packed operands as gemm_block, so the same bits). With B read in place (gemm_block's condition), A
// is packed once per MC-row block for every group and the blocks go row block by row block. Otherwise every group's A is packed once for
// all the rows [m0, m1), and each group's B once per column slab, before that slab's row blocks (B
// packed per row block cost a pass over B for every 140 rows). sums (NULL: none): each group's sums
// over k of A's rows [m0, m1), taken while A is packed, by the thread whose columns start at 0.
// Returns 0, -1 when out of memory (nothing stored).
static int tn_tree_block(const Kernel *ker, int m0, int m1, int n0, int n1, int Kg, const float *A, int lda,
                         const float *B, int ldb, float *const *C, int ldc, const SumTree *t, float *const *sums) {
    const int NR = ker->nr, MC = ker->blk.mc_panels * ker->mr, n = t->n;
    int kc_base = k_block(Kg, ker->blk.kc), nkb = (Kg + kc_base - 1) / kc_base;
    int b_in_place = tn_b_in_place(ker, n0, n1, ldb);
    // Column slabs of at most 256 columns whose B (one group's) fits the B slab of the blocking.
    int nc_cap = (int)(ker->blk.slab_floats / Kg / NR * NR);
    if (nc_cap > 256) nc_cap = 256;
    if (nc_cap < NR) nc_cap = NR;
    int nic = b_in_place ? 1 : (m1 - m0 + MC - 1) / MC;              // row blocks whose A is packed at once
    long a_block = (long)MC * kc_base, a_group = nkb * a_block;       // one group's packed A of a row block
    long a_ic = n * a_group;                                          // every group's, of one row block
    long b_block = (long)kc_base * ((nc_cap + NR - 1) / NR) * NR;     // one k-block of a packed B slab
    float *apack = pack_scratch(0, nic * a_ic);
    float *bpack = b_in_place ? NULL : pack_scratch(1, n * nkb * b_block);
    float *S = pack_scratch(2, (long)n * MC * nc_cap);
    if (!apack || !S || (!b_in_place && !bpack)) return -1;
    float *blk[SUMTREE_MAX], *out[SUMTREE_MAX];
    for (int g = 0; g < n; g++) blk[g] = S + (long)g * MC * nc_cap;
    if (n0 != 0) sums = NULL;
    if (b_in_place) {
        for (int ic = m0; ic < m1; ic += MC) {
            int mc = m1 - ic < MC ? m1 - ic : MC;
            tn_pack_a_groups(ker, ic, mc, Kg, kc_base, A, lda, B, ldb, n, apack, a_group, a_block, sums);
            for (int jc = n0; jc < n1; jc += nc_cap) {
                int nc = n1 - jc < nc_cap ? n1 - jc : nc_cap;
                TnBlock q = {ker, mc, nc, Kg, kc_base, nc_cap, apack, a_group, a_block, NULL, 0, 0,
                             B + jc, ldb, (long)Kg * ldb};
                for (int g = 0; g < n; g++) out[g] = C[g] + (long)ic * ldc + jc;
                tn_block_tree(&q, t, blk, out, ldc);
            }
        }
    } else {
        for (int ic = m0, i = 0; ic < m1; ic += MC, i++)
            tn_pack_a_groups(ker, ic, m1 - ic < MC ? m1 - ic : MC, Kg, kc_base, A, lda, B, ldb, n,
                             apack + (long)i * a_ic, a_group, a_block, sums);
        for (int jc = n0; jc < n1; jc += nc_cap) {
            int nc = n1 - jc < nc_cap ? n1 - jc : nc_cap;
            for (int g = 0; g < n; g++) {
                Operands op = group_operands(A, lda, B, ldb, Kg, g);
                for (int b = 0; b < nkb; b++)
                    pack_b(ker, &op, b * kc_base, b < nkb - 1 ? kc_base : Kg - b * kc_base, jc, nc, NR,
                           bpack + ((long)g * nkb + b) * b_block);
            }
            for (int ic = m0, i = 0; ic < m1; ic += MC, i++) {
                int mc = m1 - ic < MC ? m1 - ic : MC;
                TnBlock q = {ker, mc, nc, Kg, kc_base, nc_cap, apack + (long)i * a_ic, a_group, a_block,
                             bpack, nkb * b_block, b_block, NULL, ldb, 0};
                for (int g = 0; g < n; g++) out[g] = C[g] + (long)ic * ldc + jc;
                tn_block_tree(&q, t, blk, out, ldc);
            }
        }
    }
    return 0;
}

// Thread th of nth: its share of the tiles, split as gemm_packed splits them (part_range), and, sums not
// NULL, the groups' sums over k of its rows when its columns start at 0. Out of memory, each group's
// part goes into its own buffer C[g] by the plain loops (gemm_part's fallback: the definition's sums,
// not the kernels' bits; the groups' sums, the same chains), then is summed there.
static void tn_tree_part(const Kernel *ker, int M, int N, int Kg, const float *A, int lda, const float *B, int ldb,
                         float *const *C, int ldc, const SumTree *t, float *const *sums, int th, int nth) {
    long tiles_m = (M + ker->mr - 1) / ker->mr, tiles_n = (N + ker->nr - 1) / ker->nr;
    int split_m = split_rows(M, N, tiles_m, tiles_n);
    Range r = part_range(ker, M, N, split_m, split_m ? tiles_m : tiles_n, th, nth);
    int m0 = r.m0, m1 = r.m1, n0 = r.n0, n1 = r.n1;
    if (m0 >= m1 || n0 >= n1) return;
    if (tn_tree_block(ker, m0, m1, n0, n1, Kg, A, lda, B, ldb, C, ldc, t, sums) == 0) return;
    float *out[SUMTREE_MAX];
    for (int g = 0; g < t->n; g++) {
        Operands op = group_operands(A, lda, B, ldb, Kg, g);
        if (sums) op.asum = sums[g];   // set where its columns start at 0, as the blocks take them
        gemm_block_plain(&op, m0, m1, n0, n1, Kg, Kg, C[g], ldc, NULL, 0, &ALL_K);
        out[g] = C[g] + (long)m0 * ldc + n0;
    }
    sumtree_rows(t, out, ldc, out, ldc, m1 - m0, n1 - n0, 0);
}

// ---- the same, by groups: each thread the products of its own groups, then the tree --------------
//
// With 2 or more threads and n groups' products small enough for the threads' L2 (n M N floats at most
// twice the blocking's slab a thread), every group's product goes whole into a scratch block of its
// own, computed by the thread (or the threads, by rows) that the group falls to: thread t takes
// groups [t n / nth, (t + 1) n / nth) (with as many threads as groups, the token rows it wrote in the
// forward), where the blocks above split C's tiles and every thread reads every group's rows, half of
// them from another core. Then the team meets and each thread runs the tree over its share of C's rows
// (docs/performance.md, "The weight gradients of groups at once, by groups"). gemm_block per group: the
// bits of gemm_tn, as the blocks give them.

static long groups_ld(int N) {      // rows of a scratch block: whole lines, not a multiple of 4 KB
    long ld = (N + 15) / 16 * 16;
    return ld % 1024 == 0 ? ld + 16 : ld;
}

static int tn_by_groups(const Kernel *ker, int M, int N, const SumTree *t, int nth) {
    return nth >= 2 && (long)t->n * M * groups_ld(N) <= 2 * ker->blk.slab_floats * nth;
}

// The scratch for n blocks of M rows, groups_ld(N) apart (shared_scratch); one thread at a time.
static float *groups_scratch(int n, int M, int N) { return shared_scratch((long)n * M * groups_ld(N)); }

// Thread th of nth (team mode, or an OpenMP team when team is 0): its groups' products into S (and
// their sums over k into sums[g], unless sums is NULL), then, when all are done, the tree over its rows
// of C.
static void tn_groups_part(const Kernel *ker, int M, int N, int Kg, const float *A, int lda, const float *B, int ldb,
                           float *const *C, int ldc, const SumTree *t, float *const *sums, float *S, int th, int nth,
                           int team) {
    const int n = t->n, MR = ker->mr;
    long ld = groups_ld(N);
    int g0, g1, m0 = 0, m1 = M;
    if (nth <= n) {
        g0 = (int)((long)n * th / nth);
        g1 = (int)((long)n * (th + 1) / nth);
    } else {   // more threads than groups: group th n / nth, its rows shared among that group's threads
        g0 = (int)((long)th * n / nth);
        g1 = g0 + 1;
        int first = (int)(((long)g0 * nth + n - 1) / n), last = (int)(((long)(g0 + 1) * nth + n - 1) / n);
        long tiles = (M + MR - 1) / MR, q = last - first, i = th - first;
        m0 = (int)(tiles * i / q * MR);
        m1 = tiles * (i + 1) / q * MR < M ? (int)(tiles * (i + 1) / q * MR) : M;
    }
    for (int g = g0; g < g1 && m0 < m1; g++) {
        Operands op = group_operands(A, lda, B, ldb, Kg, g);
        op.asum = sums ? sums[g] : NULL;   // gemm_block takes them while it packs A (its columns start at 0)
        float *Sg = S + (long)g * M * ld;
        if (gemm_block(ker, &op, m0, m1, 0, N, Kg, Sg, ld, NULL, 0, &ALL_K))
            gemm_block_plain(&op, m0, m1, 0, N, Kg, Kg, Sg, ld, NULL, 0, &ALL_K);
    }
    if (team) team_barrier();
    else {
        #pragma omp barrier
    }
    int r0 = (int)((long)M * th / nth), r1 = (int)((long)M * (th + 1) / nth);
    if (r0 >= r1) return;
    float *src[SUMTREE_MAX], *dst[SUMTREE_MAX];
    for (int g = 0; g < n; g++) {
        src[g] = S + (long)g * M * ld + (long)r0 * ld;
        dst[g] = C[g] + (long)r0 * ldc;
    }
    // Results larger than L2 are not read again soon (the optimiser reads them after the backward):
    // streaming stores spare reading each line before it is written (docs/performance.md, "The weight
    // gradients stored with streaming stores").
    int stream = too_big_for_l2(ker, (long)M * N);
    sumtree_rows(t, src, ld, dst, ldc, r1 - r0, N, stream);
    if (stream) stream_fence();
}

int gemm_tn_tree_sums(int M, int N, int Kg, const float *A, int lda, const float *B, int ldb, float *const *C,
                      int ldc, const SumTree *t, float *const *sums) {
    double t0 = PROF_START(PROF_GEMM_TN);
    Kernel ker;
    if (M <= 0 || N <= 0) return 0;
    if (!pick_kernel(&ker)) {   // the definition: each group alone, then the tree over whole rows
        for (int g = 0; g < t->n; g++)
            RUN_REF(gemm_tn_ref(M, N, Kg, A + (long)g * Kg * lda, lda, B + (long)g * Kg * ldb, ldb, C[g], ldc, 0));
        RUN_REF(sumtree_rows(t, C, ldc, C, ldc, M, N, 0));
        PROF_STOP(PROF_GEMM_TN, t0, 2.0 * M * N * Kg * t->n);
        return 0;
    }
    int threads = team_kernel_threads();
    if (tn_by_groups(&ker, M, N, t, threads)) {
        float *S = NULL;
        if (team_mode) {   // thread 0 grows the scratch; the others learn where it is
            if (omp_get_thread_num() == 0) S = groups_scratch(t->n, M, N);
            team_broadcast(&S, sizeof S);
            if (S) {
                tn_groups_part(&ker, M, N, Kg, A, lda, B, ldb, C, ldc, t, sums, S, omp_get_thread_num(), threads, 1);
                team_barrier();
                PROF_STOP(PROF_GEMM_TN, t0, 2.0 * M * N * Kg * t->n);
                return sums != NULL;
            }
        } else if ((S = groups_scratch(t->n, M, N))) {
            #pragma omp parallel num_threads(threads)
            {
                int nth = omp_get_num_threads();   // fewer than asked for: still each group once
                if (nth == threads)
                    tn_groups_part(&ker, M, N, Kg, A, lda, B, ldb, C, ldc, t, sums, S, omp_get_thread_num(), nth, 0);
                else
                    tn_tree_part(&ker, M, N, Kg, A, lda, B, ldb, C, ldc, t, sums, omp_get_thread_num(), nth);
            }
            PROF_STOP(PROF_GEMM_TN, t0, 2.0 * M * N * Kg * t->n);
            return sums != NULL;
        }
    }   // out of memory for the scratch: the blocks, below
    if (team_mode) {
        tn_tree_part(&ker, M, N, Kg, A, lda, B, ldb, C, ldc, t, sums, omp_get_thread_num(), threads);
        team_barrier();
    } else {
        #pragma omp parallel num_threads(threads) if (threads > 1)
        tn_tree_part(&ker, M, N, Kg, A, lda, B, ldb, C, ldc, t, sums, omp_get_thread_num(), omp_get_num_threads());
    }
    PROF_STOP(PROF_GEMM_TN, t0, 2.0 * M * N * Kg * t->n);
    return sums != NULL;
}

void gemm_tn_tree(int M, int N, int Kg, const float *A, int lda, const float *B, int ldb, float *const *C, int ldc,
                  const SumTree *t) {
    gemm_tn_tree_sums(M, N, Kg, A, lda, B, ldb, C, ldc, t, NULL);
}
