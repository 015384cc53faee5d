// A training step of the model allocates nothing (docs/design.md, "Memory: one parameter buffer, a
// gradient twin, one activation arena"): after a first step, which may allocate what it keeps (GEMM's
// packing buffers and packed weights), further steps of the training forward, the backward (plain and
// as gradient groups at once), clipping and AdamW call no malloc, calloc, realloc, strdup or
// aligned_alloc of the program's code, on 1 and 2 threads; nor do the step's masks (masks_seeded) on
// more patches than a stack buffer holds. This program is linked with those functions
// wrapped (Makefile, STEP_ALLOC_WRAP), which count the calls made while `counting` is set.
#include <omp.h>
#include "check.h"
#include "core/model.h"
#include "core/optim.h"
#include "core/rng.h"
#include "core/masking.h"
#include "dist/dist.h"
#include "kernels/gemm.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__real_aligned_alloc(size_t align, size_t n);

static _Atomic long allocs;
static _Atomic int counting;

void *__wrap_malloc(size_t n) { if (counting) allocs++; return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { if (counting) allocs++; return __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { if (counting) allocs++; return __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { if (counting) allocs++; return __real_strdup(s); }
void *__wrap_aligned_alloc(size_t align, size_t n) { if (counting) allocs++; return __real_aligned_alloc(align, n); }

// Steps 2..4 of a run of `groups` gradient groups (1: mae_backward) on `threads` threads: the calls
// counted over them.
static long steps_allocs(int threads, int groups) {
    omp_set_num_threads(threads);
    MaeConfig c;
    mae_config_preset(&c, "tiny");
    c.img_size = 16; c.patch_size = 4; c.in_chans = 3;
    c.embed_dim = 24; c.depth = 2; c.num_heads = 3;
    c.dec_embed_dim = 16; c.dec_depth = 2; c.dec_num_heads = 2;
    c.norm_pix_loss = 1;
    int B = 8, L = mae_num_patches(&c), K = mae_len_keep(&c, 0.75f);
    char err[256];
    long at_create = allocs;
    counting = 1;   // the wrap sees the library's calls: mae_create's own are counted
    Mae *m = mae_create(&c, B, err, sizeof err);
    counting = 0;
    CHECK(allocs > at_create, "mae_create's allocations counted (the functions are wrapped)");
    CHECK(m != NULL, "mae_create: %s", err);
    if (!m) return -1;
    Rng r;
    rng_seed(&r, 3);
    mae_init_weights(m, &r);
    size_t np = mae_num_params(&c), nimg = (size_t)B * 16 * 16 * 3;
    float *img = malloc(sizeof(float) * nimg), *noise = malloc(sizeof(float) * B * L);
    float *mo = calloc(np, sizeof(float)), *v = calloc(np, sizeof(float)), *gbuf = calloc(np * groups, sizeof(float));
    int *keep = malloc(sizeof(int) * B * L);
    float *gptr[8], glosses[8];
    for (int g = 0; g < groups; g++) gptr[g] = gbuf + np * g;
    int nt; const MaeTensor *t = mae_tensors(m, &nt);
    long counted = 0;
    for (int s = 0; s < 4; s++) {
        for (size_t i = 0; i < nimg; i++) img[i] = rng_normal(&r, 0.0f, 1.0f);   // the loop's own buffers
        for (int i = 0; i < B * L; i++) noise[i] = rng_uniform(&r);
        mae_masking_from_noise(noise, B, L, K, keep);
        long before = allocs;
        counting = s > 0;
        gemm_weights_begin();   // as the training loop: each weight packed once per step (kernels/gemm.h)
        float *grads = mae_grads(m);
        if (groups == 1) {
            mae_zero_grads(m);
            mae_train_forward(m, img, keep, B, K);
            mae_backward(m);
        } else {
            memset(gbuf, 0, sizeof(float) * np * groups);
            mae_train_forward(m, img, keep, B, K);
            mae_group_losses(m, groups, glosses);
            mae_backward_set_groups(m, gptr, groups, NULL);
            tree_sum_floats(gbuf, np, groups, np);
            grads = gbuf;
        }
        grad_clip(t, nt, grads, 1.0f);
        gemm_weights_end();
        adamw_step(t, nt, mae_params(m), grads, mo, v, 1e-3f, 0.05f, s + 1);
        counting = 0;
        if (s > 0) counted += allocs - before;
    }
    free(img); free(noise); free(mo); free(v); free(gbuf); free(keep);
    mae_free(m);
    return counted;
}

// The masks of a step as train makes them (masks_seeded, cmd/train.c's load of a batch) on more
// patches than the stack buffer holds (MAE_MASK_STACK_L): sorted in the caller's scratch, no allocation,
// and the same masks as the allocating mae_masking_from_noise.
static void masks_no_alloc(void) {
    enum { N = 3, L = MAE_MASK_STACK_L + 77, K = 301 };
    const uint64_t keys[N] = {4, 9, 1};
    float *noise = malloc(sizeof(float) * N * L);
    int *keep = malloc(sizeof(int) * N * K), *ref = malloc(sizeof(int) * N * K), *scratch = malloc(sizeof(int) * 2 * L);
    long before = allocs;
    counting = 1;
    masks_seeded(11, 5, keys, N, L, K, noise, keep, scratch);
    counting = 0;
    printf("masks of %d patches: %ld allocations\n", L, allocs - before);
    CHECK(allocs == before, "masks_seeded of %d patches allocated %ld times", L, allocs - before);
    CHECK(mae_masking_from_noise(noise, N, L, K, ref) == 0 && !memcmp(keep, ref, sizeof(int) * N * K),
          "masks_seeded's masks are mae_masking_from_noise's");
    free(noise); free(keep); free(ref); free(scratch);
}

int main(void) {
    masks_no_alloc();
    for (int threads = 1; threads <= 2; threads++)
        for (int groups = 1; groups <= 4; groups *= 2) {
            long n = steps_allocs(threads, groups);
            printf("%d thread%s, %d gradient group%s: %ld allocations in steps 2-4\n", threads, threads > 1 ? "s" : "",
                   groups, groups > 1 ? "s" : "", n);
            CHECK(n == 0, "%d threads, %d groups: steps after the first allocated %ld times", threads, groups, n);
        }
    gemm_weights_release();
    return check_done();
}
