// The MAE model: parameter/activation layout, initialisation, masking, forward, backward.
// Reads top to bottom: structs, arena layout, init, forward pieces, backward pieces, accessors.
// Kernels live in kernels/ (one file per operation, kernels/ops.h), matrix products in kernels/gemm.c.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/model.h"
#include "core/encoder.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"
#include "kernels/team.h"

struct Mae {
    MaeConfig cfg;
    int max_batch, L, pd, cpp;   // patches, patch-vector length, conv fan-in C*P*P
    MaeTensor *tensors;
    int ntensors;
    float *params, *grads;       // grads NULL on a model sharing another's parameters
    int owns_params;             // 0: params belong to the model it was made from (mae_create_sharing)
    int kind;                    // STACK_TRAIN; STACK_FORWARD (mae_create_forward): no grads, no backward
                                 // scratch, one block's activations; MAE_ENCODER_ONLY: STACK_FORWARD's
                                 // encoder and nothing of the decoder
    float *arena;                // 64-byte aligned, inside arena_alloc
    void *arena_alloc;           // calloc'd: pages are zero and only touched when a pass uses them
    size_t arena_floats;
    int *ids_keep;               // [max_batch, L] of the last forward (these five: none when MAE_ENCODER_ONLY)
    unsigned char *removed;      // [max_batch, L] 1 = patch masked out
    int *dec_rows;               // [max_batch, L - K] each removed patch l's decoder row b (1 + L) + 1 + l:
                                 //   image by image, ascending
    int *dec_src, *dec_own;      // the decoder input's mask-token rows for its first block (Stack.dup_src):
                                 //   [max_batch, 1 + L] l for the row of a removed patch l, else -1; and
                                 //   [max_batch, 1 + K] each image's other rows (CLS, visible), ascending
    // tensor offsets outside the blocks
    size_t cls, pos, patch_w, patch_b, norm_w, norm_b, dembed_w, dembed_b, mask_token, dpos,
           dnorm_w, dnorm_b, dpred_w, dpred_b;
    Stack enc, dec;
    // encoder activations (T = 1 + K tokens per image)
    float *patch_cols;           // [B*K, C*P*P] visible patches in conv weight order (c, py, px)
    float *patch_emb;            // [B*K, D]
    float *latent, *norm_mean, *norm_rstd;   // [B*T, D], [B*T], [B*T]
    // decoder activations (1 + L tokens per image)
    float *dec_emb;              // [B*T, Dd] decoder_embed of the encoder tokens
    float *dec_patches;          // [B*L, Dd] decoder output rows without CLS
    float *dec_ln, *dec_mean, *dec_rstd;     // [B*L, Dd], [B*L], [B*L]
    float *pred, *target;        // [B*L, pd]
    float *dec_shared;           // [L, Dd] mask_token + decoder_pos_embed[1 + l] (mae_train_forward)
    // backward scratch
    float *d_enc, *d_dec;        // residual-stream gradients [B*(1+L), D], [B*(1+L), Dd]
    float *d_ln, *d_qkv, *d_att, *d_atty, *d_gelu, *d_small, *d_part;
    BlockScratch scratch;        // the same pointers, for block_backward
    // shape of the last forward
    int B, K, has_decoder_pass;  // has_decoder_pass: 0 none (mae_forward_encoder), 1 mae_forward,
                                 //   2 mae_train_forward (the decoder's last block on the removed rows)
    float loss;
    MaeTimings *timing;          // NULL: no timing
};

// Adds the seconds since *t0 to *field and restarts the clock (no-op while timing is off, and on every
// thread of a team but thread 0, which keeps the timings).
static void lap(const Mae *m, double *t0, double *field) {
    if (!m->timing || omp_get_thread_num() != 0) return;
    double t = omp_get_wtime();
    *field += t - *t0;
    *t0 = t;
}

// ---------------------------------------------------------------------------------------------
// Layout

// The model kinds: the stacks' (core/encoder.h) and the encoder alone (mae_create_encoder), whose
// encoder is STACK_FORWARD's and which lays out nothing the decoder or the loss reads: no decoder
// stack, decoder input or output rows, predictions, targets nor the mask rows of set_kept
// (docs/design.md, "Forward-only models").
enum { MAE_ENCODER_ONLY = STACK_FORWARD + 1 };

static size_t find_offset(const Mae *m, const char *name) { return tensor_offset(m->tensors, m->ntensors, name); }

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

// Lays out every activation and scratch buffer; returns the number of floats.
static size_t carve_all(Mae *m, float *base) {
    Carver cv = {base, 0};
    const MaeConfig *c = &m->cfg;
    size_t Bm = (size_t)m->max_batch, L = (size_t)m->L, T = L + 1;
    size_t D = (size_t)c->embed_dim, Dd = (size_t)c->dec_embed_dim;
    m->patch_cols = carve(&cv, Bm * L * m->cpp);
    m->patch_emb = carve(&cv, Bm * L * D);
    stack_carve(&cv, &m->enc, (int)Bm, (int)T, m->kind == STACK_TRAIN ? STACK_TRAIN : STACK_FORWARD);
    m->latent = carve(&cv, Bm * T * D); m->norm_mean = carve(&cv, Bm * T); m->norm_rstd = carve(&cv, Bm * T);
    size_t N = Bm * T;
    if (m->kind == MAE_ENCODER_ONLY) {   // the encoder's attention scratch [N, D], and no decoder
        m->enc.att_scratch = carve(&cv, N * D);
        return cv.used;
    }
    m->dec_emb = carve(&cv, Bm * T * Dd);
    stack_carve(&cv, &m->dec, (int)Bm, (int)T, m->kind == STACK_TRAIN ? STACK_TRAIN : STACK_FORWARD);
    m->dec_patches = carve(&cv, Bm * L * Dd);
    m->dec_ln = carve(&cv, Bm * L * Dd); m->dec_mean = carve(&cv, Bm * L); m->dec_rstd = carve(&cv, Bm * L);
    m->pred = carve(&cv, Bm * L * m->pd);
    m->target = carve(&cv, Bm * L * m->pd);
    size_t W = max_sz(D, Dd), NH = (size_t)(c->dec_depth > 0 && c->dec_num_heads > c->num_heads ? c->dec_num_heads : c->num_heads);
    if (m->kind != STACK_TRAIN) {   // the attention's scratch only (d_small's size); no backward
        m->enc.att_scratch = m->dec.att_scratch = carve(&cv, N * W);
        return cv.used;
    }
    m->d_enc = carve(&cv, Bm * T * D);
    m->d_dec = carve(&cv, Bm * T * Dd);
    m->d_ln = carve(&cv, max_sz(N * W, Bm * L * max_sz(Dd, (size_t)m->pd)));
    m->d_qkv = carve(&cv, N * 3 * W);
    m->d_att = carve(&cv, Bm * NH * T * T);
    m->d_atty = carve(&cv, N * W);
    m->d_gelu = carve(&cv, N * W * c->mlp_ratio);
    m->d_small = carve(&cv, N * W);
    m->d_part = carve(&cv, (size_t)gelu_colsum_scratch((int)N, (int)(W * c->mlp_ratio)));
    // The forward attention scratch is the backward's d_small (N * W >= B * T * C for both stacks).
    m->enc.att_scratch = m->d_small;
    m->dec.att_scratch = m->d_small;
    m->scratch = (BlockScratch){m->d_ln, m->d_qkv, m->d_att, m->d_atty, m->d_gelu, m->d_small, m->d_part};
    m->dec_shared = carve(&cv, L * Dd);
    return cv.used;
}

// Sizes only: a Mae with counts but no allocations.
static size_t arena_floats_for(const MaeConfig *cfg, int max_batch, int kind) {
    Mae m;
    memset(&m, 0, sizeof m);
    m.cfg = *cfg; m.max_batch = max_batch; m.kind = kind;
    m.L = mae_num_patches(cfg); m.pd = mae_patch_dim(cfg);
    m.cpp = m.pd;
    stack_setup(&m.enc, cfg->depth, cfg->embed_dim, cfg->num_heads, cfg->embed_dim * cfg->mlp_ratio, cfg->ln_eps);
    stack_setup(&m.dec, cfg->dec_depth, cfg->dec_embed_dim, cfg->dec_num_heads, cfg->dec_embed_dim * cfg->mlp_ratio, cfg->ln_eps);
    return carve_all(&m, NULL);
}

// The tensors a model of this kind holds: every one, or for the encoder alone those before the
// decoder's, a prefix of the same layout (mae_encoder_model_table). Their count; their floats in *np.
static int model_table(const MaeConfig *cfg, int kind, MaeTensor *out, int cap, size_t *np) {
    if (kind == MAE_ENCODER_ONLY) return mae_encoder_model_table(cfg, out, cap, np);
    *np = mae_num_params(cfg);
    return mae_param_table(cfg, out, cap);
}

// The bytes of set_kept's rows for one image: ids_keep, removed and dec_rows [L] each, dec_src and dec_own
// [1 + L] each (mae_make allocates them for max_batch images); none for the encoder alone.
static size_t mask_bytes_per_image(size_t L, int kind) {
    return kind == MAE_ENCODER_ONLY ? 0 : L * (2 * sizeof(int) + 1) + 2 * (L + 1) * sizeof(int);
}

// The packed copies (kernels/gemm.h) of np parameters' weights: two floats each, within the cap.
static double copies_bytes(size_t np) {
    return fmin(2.0 * (double)np * sizeof(float), (double)GEMM_WEIGHT_COPIES_MAX_BYTES);
}

size_t mae_train_shared_bytes(const MaeConfig *cfg) {
    // Exact in double: the largest model the flags allow has about 2^38 parameters, 2^42 bytes.
    size_t np = mae_num_params(cfg);
    return (size_t)fmin(4.0 * (double)np * sizeof(float) + copies_bytes(np), 0x1p63);
}

// Parameters (and for training their gradients, AdamW's two moments and the weights' packed copies),
// activations, masks. The largest models the flags allow overflowed the size_t sum (--dim 16384 --depth
// 256 --heads 1024 and the same decoder at 65,536 patches and batch 4096: 37 x 10^18 bytes of attention
// maps, said as 0.2 x 10^18): a wrapped estimate can be any small number, so a model no machine holds
// could pass the memory check. Every piece of the layout grows at most linearly with the batch, so B
// times one image's share bounds it; the exact sum is taken below BYTES_BEYOND_ANY, where it cannot
// wrap, and the bound (at most 2^63) past it.
static size_t bytes_needed(const MaeConfig *cfg, int max_batch, int kind) {
    size_t np, L = (size_t)mae_num_patches(cfg), masks = mask_bytes_per_image(L, kind);
    model_table(cfg, kind, NULL, 0, &np);
    double copies = kind != STACK_TRAIN ? 0.0 : copies_bytes(np);
    double fixed = (kind != STACK_TRAIN ? 1.0 : 4.0) * (double)np * sizeof(float) + copies;
    double bound = fixed + (double)max_batch * ((double)arena_floats_for(cfg, 1, kind) * sizeof(float) + (double)masks);
    if (bound >= BYTES_BEYOND_ANY) return (size_t)fmin(bound, 0x1p63);
    return (kind != STACK_TRAIN ? 1 : 4) * np * sizeof(float) + (size_t)copies +
           arena_floats_for(cfg, max_batch, kind) * sizeof(float) + (size_t)max_batch * masks;
}

size_t mae_bytes_needed(const MaeConfig *cfg, int max_batch) { return bytes_needed(cfg, max_batch, STACK_TRAIN); }
size_t mae_bytes_needed_forward(const MaeConfig *cfg, int max_batch) { return bytes_needed(cfg, max_batch, STACK_FORWARD); }
size_t mae_bytes_needed_encoder(const MaeConfig *cfg, int max_batch) { return bytes_needed(cfg, max_batch, MAE_ENCODER_ONLY); }

// The rule and its one message: share (NULL or "") is said after the GiB of need, inside the brackets.
int mae_memory_exceeds(size_t need, long *have) {
    *have = cpu_memory_bytes();
    return *have > 0 && (double)need > 0.9 * (double)*have;
}

static int memory_refusal(size_t need, int B, int S, const char *share, char *err, size_t errlen) {
    long have;
    if (!mae_memory_exceeds(need, &have)) return 0;
    snprintf(err, errlen, "batch %d at %dx%d needs %zu bytes (%.2f GiB%s); %s %.2f GiB", B, S, S,
             need, need / 1073741824.0, share ? share : "", cpu_memory_holder(), have / 1073741824.0);
    return -1;
}

int mae_memory_check_bytes(size_t need, int B, int S, char *err, size_t errlen) {
    return memory_refusal(need, B, S, NULL, err, errlen);
}

int mae_memory_check(const MaeConfig *cfg, int B, size_t extra_per_image, char *err, size_t errlen) {
    size_t need = mae_bytes_needed(cfg, B) + extra_per_image * (size_t)B;
    // The share no batch size changes: the parameters with their gradients, AdamW's two moments and the
    // weights' packed copies.
    size_t np = mae_num_params(cfg), params = mae_train_shared_bytes(cfg);
    char share[192];
    snprintf(share, sizeof share, ", of which %.2f GiB for the %zu parameters, their gradients, AdamW moments and "
             "packed copies at any batch", params / 1073741824.0, np);
    return memory_refusal(need, B, cfg->img_size, share, err, errlen);
}

// mae_create (kind STACK_TRAIN), mae_create_forward (STACK_FORWARD), mae_create_encoder (MAE_ENCODER_ONLY),
// or with `shared`: another model's parameters (mae_create_sharing), or parameters the model takes
// over when `adopt` (mae_create_forward_with, mae_create_encoder_with).
static Mae *mae_make(const MaeConfig *cfg, int max_batch, float *shared, int adopt, int kind, char *err,
                     size_t errlen) {
    if (mae_config_check(cfg, err, errlen)) return NULL;
    if (max_batch < 1) { snprintf(err, errlen, "batch size %d must be >= 1", max_batch); return NULL; }
    Mae *m = calloc(1, sizeof *m);
    if (!m) { snprintf(err, errlen, "out of memory"); return NULL; }
    m->cfg = *cfg; m->max_batch = max_batch; m->kind = kind;
    m->L = mae_num_patches(cfg); m->pd = mae_patch_dim(cfg); m->cpp = m->pd;
    size_t np;
    m->ntensors = model_table(cfg, kind, NULL, 0, &np);
    m->tensors = calloc((size_t)m->ntensors, sizeof *m->tensors);
    m->owns_params = shared == NULL || adopt;
    m->params = shared ? shared : cpu_calloc_big(np ? np : 1, sizeof(float));
    m->grads = shared || kind != STACK_TRAIN ? NULL : cpu_calloc_big(np ? np : 1, sizeof(float));
    stack_setup(&m->enc, cfg->depth, cfg->embed_dim, cfg->num_heads, cfg->embed_dim * cfg->mlp_ratio, cfg->ln_eps);
    stack_setup(&m->dec, cfg->dec_depth, cfg->dec_embed_dim, cfg->dec_num_heads, cfg->dec_embed_dim * cfg->mlp_ratio, cfg->ln_eps);
    int stacks_ok = stack_alloc(&m->enc) == 0 && stack_alloc(&m->dec) == 0;
    int masks = kind != MAE_ENCODER_ONLY;   // set_kept's rows (mask_bytes_per_image)
    if (masks) {
        m->ids_keep = calloc((size_t)max_batch * m->L, sizeof(int));
        m->removed = calloc((size_t)max_batch * m->L, 1);
        m->dec_rows = calloc((size_t)max_batch * m->L, sizeof(int));
        m->dec_src = calloc((size_t)max_batch * (m->L + 1), sizeof(int));
        m->dec_own = calloc((size_t)max_batch * (m->L + 1), sizeof(int));
    }
    m->arena_floats = arena_floats_for(cfg, max_batch, kind);
    // calloc, not aligned_alloc + memset: a large calloc maps fresh zero pages without writing them,
    // so inference (encoder only, no backward scratch) never touches most of the arena.
    m->arena_alloc = calloc(m->arena_floats + 16, sizeof(float));
    m->arena = m->arena_alloc ? (float *)(((uintptr_t)m->arena_alloc + 63) & ~(uintptr_t)63) : NULL;
    if (!m->tensors || !m->params || (m->owns_params && kind == STACK_TRAIN && !m->grads) || !stacks_ok
        || (masks && (!m->ids_keep || !m->removed || !m->dec_rows || !m->dec_src || !m->dec_own)) || !m->arena) {
        snprintf(err, errlen, "out of memory (%zu MB of activations for %d image%s at a time)",
                 (m->arena_floats * sizeof(float) + (1u << 20) - 1) >> 20, max_batch, max_batch == 1 ? "" : "s");
        if (adopt) m->params = NULL;   // still the caller's
        mae_free(m);
        return NULL;
    }
    model_table(cfg, kind, m->tensors, m->ntensors, &np);
    carve_all(m, m->arena);
    m->cls = find_offset(m, "cls_token"); m->pos = find_offset(m, "pos_embed");
    m->patch_w = find_offset(m, "patch_embed.proj.weight"); m->patch_b = find_offset(m, "patch_embed.proj.bias");
    m->norm_w = find_offset(m, "norm.weight"); m->norm_b = find_offset(m, "norm.bias");
    stack_find_weights(&m->enc, m->tensors, m->ntensors, "blocks");
    if (kind == MAE_ENCODER_ONLY) return m;   // no decoder tensor to find, nor rows of it to share
    m->dembed_w = find_offset(m, "decoder_embed.weight"); m->dembed_b = find_offset(m, "decoder_embed.bias");
    m->mask_token = find_offset(m, "mask_token"); m->dpos = find_offset(m, "decoder_pos_embed");
    m->dnorm_w = find_offset(m, "decoder_norm.weight"); m->dnorm_b = find_offset(m, "decoder_norm.bias");
    m->dpred_w = find_offset(m, "decoder_pred.weight"); m->dpred_b = find_offset(m, "decoder_pred.bias");
    stack_find_weights(&m->dec, m->tensors, m->ntensors, "decoder_blocks");
    // What the decoder's first block shares in a training step (Stack.dup_src, set by mae_train_forward):
    // the L mask-token rows; their input gradients, summed per group and position, go to dec_patches
    // (free in a training step).
    m->dec.dup_own_rows = m->dec_own;
    m->dec.dup_rows = m->dec_shared;
    m->dec.dup_n = m->L;
    m->dec.dup_grad = m->dec_patches;
    return m;
}

Mae *mae_create(const MaeConfig *cfg, int max_batch, char *err, size_t errlen) {
    return mae_make(cfg, max_batch, NULL, 0, STACK_TRAIN, err, errlen);
}

Mae *mae_create_forward(const MaeConfig *cfg, int max_batch, char *err, size_t errlen) {
    return mae_make(cfg, max_batch, NULL, 0, STACK_FORWARD, err, errlen);
}

Mae *mae_create_forward_with(const MaeConfig *cfg, int max_batch, float *params, char *err, size_t errlen) {
    return mae_make(cfg, max_batch, params, 1, STACK_FORWARD, err, errlen);
}

Mae *mae_create_encoder(const MaeConfig *cfg, int max_batch, char *err, size_t errlen) {
    return mae_make(cfg, max_batch, NULL, 0, MAE_ENCODER_ONLY, err, errlen);
}

Mae *mae_create_encoder_with(const MaeConfig *cfg, int max_batch, float *params, char *err, size_t errlen) {
    return mae_make(cfg, max_batch, params, 1, MAE_ENCODER_ONLY, err, errlen);
}

Mae *mae_create_sharing(Mae *base, int max_batch, char *err, size_t errlen) {
    return mae_make(&base->cfg, max_batch, base->params, 0, STACK_TRAIN, err, errlen);
}

void mae_free(Mae *m) {
    if (!m) return;
    if (m->owns_params) { free(m->params); free(m->grads); }
    free(m->tensors); free(m->arena_alloc);
    stack_free(&m->enc); stack_free(&m->dec);
    free(m->ids_keep); free(m->removed); free(m->dec_rows);
    free(m->dec_src); free(m->dec_own);
    free(m);
}

const MaeConfig *mae_config(const Mae *m) { return &m->cfg; }
float *mae_params(Mae *m) { return m->params; }
float *mae_grads(Mae *m) { return m->grads; }
const MaeTensor *mae_tensors(const Mae *m, int *count) { if (count) *count = m->ntensors; return m->tensors; }
float *mae_tensor(Mae *m, const char *name) {
    for (int i = 0; i < m->ntensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return m->params + m->tensors[i].offset;
    return NULL;
}
void mae_set_timings(Mae *m, MaeTimings *t) { m->timing = t; }
float *mae_use_grads(Mae *m, float *grads) { float *old = m->grads; m->grads = grads; return old; }
// x [n] = 0, each thread clearing its share (a team body: kernels/team.h).
static void zero_body(float *x, size_t n) {
    const long chunk = 1L << 14;
    long nchunks = (long)((n + chunk - 1) / chunk);
    #pragma omp for schedule(static) nowait
    for (long c = 0; c < nchunks; c++) {
        size_t at = (size_t)c * chunk, len = n - at < (size_t)chunk ? n - at : (size_t)chunk;
        memset(x + at, 0, len * sizeof(float));
    }
}

// Once per gradient group: 450 MB at ViT-B's 112 M parameters, so every thread clears its share.
void mae_zero_grads(Mae *m) { TEAM_RUN(zero_body(m->grads, mae_num_params(&m->cfg))); }

// ---------------------------------------------------------------------------------------------
// Initialisation

void mae_init_weights(Mae *m, Rng *rng) {
    vit_init_tensors(m->tensors, m->ntensors, m->params, m->cfg.img_size / m->cfg.patch_size, rng);
}

// ---------------------------------------------------------------------------------------------
// Forward

// The encoder's input rows on the caller's team: the patch embedding, then CLS + pos[0] and the
// visible patches + pos[1 + l] into the first residual stream.
static void tokens_team(Mae *m, const float *images, const int *ids_keep, int B, int K) {
    const MaeConfig *c = &m->cfg;
    const float *P = m->params;
    int D = c->embed_dim, Pp = c->patch_size, Ch = c->in_chans, S = c->img_size;
    patches_gather(m->patch_cols, images, ids_keep, B, K, S, Pp, Ch);
    linear_forward(m->patch_emb, m->patch_cols, P + m->patch_w, P + m->patch_b, B * K, m->cpp, D);
    tokens_forward(m->enc.res[0], m->patch_emb, P + m->cls, P + m->pos, ids_keep, B, K, D);
}

// The encoder on the caller's team (mae_forward / mae_forward_encoder open it; thread 0 keeps the
// timings). m->ids_keep and m->removed are set before the team starts.
static void encoder_team(Mae *m, const float *images, const int *ids_keep, int B, int K, double *t0) {
    const MaeConfig *c = &m->cfg;
    const float *P = m->params;
    int D = c->embed_dim, T = 1 + K;
    MaeTimings dummy, *tm = m->timing ? m->timing : &dummy;
    tokens_team(m, images, ids_keep, B, K);
    lap(m, t0, &tm->patch_embed);
    stack_forward(&m->enc, P, B, T);
    layernorm_forward(m->latent, m->norm_mean, m->norm_rstd, m->enc.res[m->enc.depth], P + m->norm_w,
                      P + m->norm_b, B * T, D, c->ln_eps);
    lap(m, t0, &tm->encoder);
}

// The serial part before the encoder's team: which patches each image keeps, and the rows of those
// it removes.
static void set_kept(Mae *m, const int *ids_keep, int B, int K) {
    int L = m->L;
    m->B = B; m->K = K;
    if (m->kind == MAE_ENCODER_ONLY) return;   // no rows of these: nothing reads them
    int n = 0, own = 0;
    for (int b = 0; b < B; b++) {
        memcpy(m->ids_keep + (size_t)b * K, ids_keep + (size_t)b * K, (size_t)K * sizeof(int));
        memset(m->removed + (size_t)b * L, 1, (size_t)L);
        for (int j = 0; j < K; j++) m->removed[(size_t)b * L + ids_keep[(size_t)b * K + j]] = 0;
        m->dec_src[b * (1 + L)] = -1;
        m->dec_own[own++] = b * (1 + L);
        for (int l = 0; l < L; l++) {
            int r = b * (1 + L) + 1 + l;
            if (m->removed[(size_t)b * L + l]) m->dec_rows[n++] = r;
            else m->dec_own[own++] = r;
            m->dec_src[r] = m->removed[(size_t)b * L + l] ? l : -1;
        }
    }
}

void mae_forward_encoder(Mae *m, const float *images, const int *ids_keep, int B, int len_keep) {
    set_kept(m, ids_keep, B, len_keep);
    double t0 = m->timing ? omp_get_wtime() : 0.0;
    #pragma omp parallel
    {
        team_begin();
        encoder_team(m, images, ids_keep, B, len_keep, &t0);
        team_end();
    }
    m->has_decoder_pass = 0;
}

void mae_encoder_start(Mae *m, const float *images, const int *ids_keep, int B, int len_keep) {
    set_kept(m, ids_keep, B, len_keep);
    #pragma omp parallel
    {
        team_begin();
        tokens_team(m, images, ids_keep, B, len_keep);
        team_end();
    }
    m->has_decoder_pass = 0;
}

const float *mae_encoder_block(Mae *m, int layer) {
    if (layer < 0 || layer >= m->enc.depth) return NULL;
    // One block on a team of its own: stack_forward's blocks, one region for all, give the same bits
    // (core/encoder.h).
    #pragma omp parallel
    {
        team_begin();
        block_forward(&m->enc, layer, m->params, m->B, 1 + m->K);
        team_end();
    }
    return m->enc.acts[layer].att;
}

// Targets [B*L, pd]: patch vectors (py*P+px)*C+c of the image, optionally normalised per patch.
static void make_targets_body(Mae *m, const float *images, int B) {
    const MaeConfig *c = &m->cfg;
    int Pp = c->patch_size, Ch = c->in_chans, g = c->img_size / Pp, S = c->img_size, pd = m->pd, L = m->L;
    #pragma omp for schedule(static) nowait
    for (int r = 0; r < B * L; r++) {
        int b = r / L, l = r % L, gy = l / g, gx = l % g;
        float *t = m->target + (size_t)r * pd;
        for (int py = 0; py < Pp; py++)
            for (int px = 0; px < Pp; px++)
                for (int ch = 0; ch < Ch; ch++)
                    t[(py * Pp + px) * Ch + ch] = images[(((size_t)b * S + gy * Pp + py) * S + gx * Pp + px) * Ch + ch];
        if (c->norm_pix_loss) {
            double mean = 0.0, var = 0.0;
            for (int i = 0; i < pd; i++) mean += t[i];
            mean /= pd;
            for (int i = 0; i < pd; i++) var += (t[i] - mean) * (t[i] - mean);
            var = pd > 1 ? var / (pd - 1) : 0.0;   // unbiased, as torch.var
            double inv = 1.0 / sqrt(var + 1e-6);
            for (int i = 0; i < pd; i++) t[i] = (float)((t[i] - mean) * inv);
        }
    }
}

// Decoder tokens in image order: CLS, then each patch's encoder token or the mask token.
static void dec_tokens_body(const Mae *m, float *xd, const float *dpos, const float *mtok, const int *ids_keep, int B,
                            int K, int T, int L, int Td, int Dd) {
    #pragma omp for schedule(static) nowait
    for (int b = 0; b < B; b++) {
        float *img = xd + (size_t)b * Td * Dd;
        const float *emb = m->dec_emb + (size_t)b * T * Dd;
        memcpy(img, emb, (size_t)Dd * sizeof(float));
        for (int l = 0; l < L; l++)
            if (m->removed[(size_t)b * L + l]) memcpy(img + (size_t)(1 + l) * Dd, mtok, (size_t)Dd * sizeof(float));
        for (int j = 0; j < K; j++)
            memcpy(img + (size_t)(1 + ids_keep[(size_t)b * K + j]) * Dd, emb + (size_t)(1 + j) * Dd,
                   (size_t)Dd * sizeof(float));
        for (int t = 0; t < Td; t++)
            for (int i = 0; i < Dd; i++) img[(size_t)t * Dd + i] += dpos[(size_t)t * Dd + i];
    }
}

// The rows every removed patch's decoder token equals: mask_token + decoder_pos_embed[1 + l], the sum
// dec_tokens_body makes.
static void dec_shared_body(float *shared, const float *dpos, const float *mtok, int L, int Dd) {
    #pragma omp for schedule(static) nowait
    for (int l = 0; l < L; l++)
        for (int i = 0; i < Dd; i++) shared[(size_t)l * Dd + i] = mtok[i] + dpos[(size_t)(1 + l) * Dd + i];
}

static void dec_patches_body(Mae *m, const float *xo, int B, int L, int Td, int Dd) {
    #pragma omp for schedule(static) nowait
    for (int b = 0; b < B; b++)
        memcpy(m->dec_patches + (size_t)b * L * Dd, xo + ((size_t)b * Td + 1) * Dd, (size_t)L * Dd * sizeof(float));
}

// Encoder, decoder and targets on one team (kernels/team.h), as mae_backward: the threads wait at the
// team's barrier between kernels instead of leaving a region after each.
// With m->dec.keep_rows set (mae_train_forward), the decoder's last block, decoder_norm and
// decoder_pred run on the removed patches' rows only: their outputs are [B * (L - K), .] in that order.
static void forward_team(Mae *m, const float *images, const int *ids_keep, int B, int K, double t0) {
    const MaeConfig *c = &m->cfg;
    const float *P = m->params;
    int T = 1 + K, L = m->L, Td = 1 + L, D = c->embed_dim, Dd = c->dec_embed_dim, pd = m->pd;
    encoder_team(m, images, ids_keep, B, K, &t0);
    MaeTimings dummy, *tm = m->timing ? m->timing : &dummy;
    linear_forward(m->dec_emb, m->latent, P + m->dembed_w, P + m->dembed_b, B * T, D, Dd);
    TEAM_RUN(dec_tokens_body(m, m->dec.res[0], P + m->dpos, P + m->mask_token, ids_keep, B, K, T, L, Td, Dd));
    if (m->dec.dup_src) TEAM_RUN(dec_shared_body(m->dec_shared, P + m->dpos, P + m->mask_token, L, Dd));
    stack_forward(&m->dec, P, B, Td);
    // decoder_norm and decoder_pred on the patch rows only (the CLS prediction is dropped anyway), or on
    // the removed ones, which the last block left one after another.
    const float *rows = m->dec.res[m->dec.depth];
    int n = m->dec.keep_rows ? B * (L - K) : B * L;
    if (!m->dec.keep_rows) {
        TEAM_RUN(dec_patches_body(m, rows, B, L, Td, Dd));
        rows = m->dec_patches;
    } else if (m->dec.depth == 0) {   // no block to leave them there
        rows_gather(m->dec_patches, rows, Dd, m->dec_rows, n, Dd, 0);
        rows = m->dec_patches;
    }
    layernorm_forward(m->dec_ln, m->dec_mean, m->dec_rstd, rows, P + m->dnorm_w, P + m->dnorm_b, n, Dd, c->ln_eps);
    linear_forward(m->pred, m->dec_ln, P + m->dpred_w, P + m->dpred_b, n, Dd, pd);
    lap(m, &t0, &tm->decoder);
    TEAM_RUN(make_targets_body(m, images, B));
    lap(m, &t0, &tm->loss);   // the targets count as the loss's, with the sum after the team
}

// The loss of the patch rows [r0, r1) of the last forward (whole images): the mean over their removed
// patches of the per-patch mean squared error, summed in row order (0 when none is removed).
static float rows_loss(const Mae *m, int r0, int r1) {
    int pd = m->pd;
    double total = 0.0;
    long nrem = 0;
    size_t k = (size_t)(r0 / m->L) * (m->L - m->K);   // mae_train_forward: the removed rows' predictions
    for (int r = r0; r < r1; r++) {
        if (!m->removed[r]) continue;
        const float *p = m->pred + (m->has_decoder_pass == 2 ? k++ : (size_t)r) * pd, *t = m->target + (size_t)r * pd;
        double s = 0.0;
        for (int i = 0; i < pd; i++) { double d = (double)p[i] - t[i]; s += d * d; }
        total += s / pd;
        nrem++;
    }
    return nrem ? (float)(total / nrem) : 0.0f;
}

static float forward_run(Mae *m, const float *images, const int *ids_keep, int B, int len_keep, int train) {
    if (m->kind == MAE_ENCODER_ONLY) {   // a caller's bug, not bad input: the model has no decoder to run
        fprintf(stderr, "vitmae: internal error: decoder forward on an encoder-only model\n");
        abort();
    }
    int K = len_keep;
    set_kept(m, ids_keep, B, K);
    // With no removed patch the loss reads nothing: the full pass, whose backward is the zero gradient.
    m->has_decoder_pass = train && K < m->L ? 2 : 1;
    m->dec.keep_rows = m->has_decoder_pass == 2 ? m->dec_rows : NULL;
    m->dec.keep_n = m->L - K;
    // and its first block takes the mask tokens' LayerNorm 1 and qkv once per position (Stack.dup_src)
    m->dec.dup_src = m->has_decoder_pass == 2 ? m->dec_src : NULL;
    m->dec.dup_own = 1 + K;
    double t0 = m->timing ? omp_get_wtime() : 0.0;
    #pragma omp parallel
    {
        team_begin();
        forward_team(m, images, ids_keep, B, K, t0);
        team_end();
    }
    MaeTimings dummy, *tm = m->timing ? m->timing : &dummy;
    t0 = m->timing ? omp_get_wtime() : 0.0;
    m->loss = rows_loss(m, 0, B * m->L);
    lap(m, &t0, &tm->loss);
    return m->loss;
}

float mae_forward(Mae *m, const float *images, const int *ids_keep, int B, int len_keep) {
    return forward_run(m, images, ids_keep, B, len_keep, 0);
}

float mae_train_forward(Mae *m, const float *images, const int *ids_keep, int B, int len_keep) {
    return forward_run(m, images, ids_keep, B, len_keep, 1);
}

void mae_group_losses(const Mae *m, int n, float *losses) {
    int rows = m->B / n * m->L;
    for (int g = 0; g < n; g++) losses[g] = rows_loss(m, g * rows, (g + 1) * rows);
}

// ---------------------------------------------------------------------------------------------
// Backward

// The backward's own loops, as team bodies (kernels/team.h: orphaned loops run through TEAM_RUN).
// d loss / d pred = 2 (pred - target) / (pd * n_removed), for the removed patches' rows of
// mae_train_forward's predictions.
static void dpred_body(const Mae *m, float *dpred, float coef, int rows) {
    int pd = m->pd;
    #pragma omp for schedule(static) nowait
    for (int r = 0; r < rows; r++) {
        int d = m->dec_rows[r], b = d / (1 + m->L);   // its target: row b L + l of d = b (1 + L) + 1 + l
        const float *p = m->pred + (size_t)r * pd, *t = m->target + (size_t)(d - b - 1) * pd;
        for (int i = 0; i < pd; i++) dpred[(size_t)r * pd + i] = coef * (p[i] - t[i]);
    }
}

// Decoder input: pos (summed over images in order) and mask token (over removed patches in order) of
// the B images whose removed flags start at `removed`; shared (NULL: none) [L, Dd], the rest of the
// gradient at each patch's mask-token rows, summed over them (Stack.dup_grad), added after.
static void dec_input_body(const unsigned char *removed, float *gpos, float *gmt, const float *dd, const float *shared,
                           int B, int L, int Td, int Dd) {
    if (gpos) {
        #pragma omp for schedule(static) nowait
        for (int t = 0; t < Td; t++) {
            for (int b = 0; b < B; b++)
                for (int i = 0; i < Dd; i++) gpos[(size_t)t * Dd + i] += dd[((size_t)b * Td + t) * Dd + i];
            if (shared && t > 0)
                for (int i = 0; i < Dd; i++) gpos[(size_t)t * Dd + i] += shared[(size_t)(t - 1) * Dd + i];
        }
    }
    // Threads own blocks of 16 columns and read the rows in order (each column's sum as a loop over the
    // rows per column would give it, without a pass over every row per column).
    #pragma omp for schedule(static) nowait
    for (int i0 = 0; i0 < Dd; i0 += 16) {
        int n = Dd - i0 < 16 ? Dd - i0 : 16;
        float s[16] = {0};
        for (int r = 0; r < B * L; r++) {
            if (!removed[r]) continue;
            const float *row = dd + ((size_t)(r / L) * Td + 1 + r % L) * Dd + i0;
            for (int i = 0; i < n; i++) s[i] += row[i];
        }
        for (int l = 0; shared && l < L; l++)   // 0 where no image removed l
            for (int i = 0; i < n; i++) s[i] += shared[(size_t)l * Dd + i0 + i];
        for (int i = 0; i < n; i++) gmt[i0 + i] += s[i];
    }
}

// The decoder_embed outputs routed back to their encoder tokens.
static void dec_emb_body(const Mae *m, float *d_emb, const float *dd, int B, int T, int K, int Td, int Dd) {
    #pragma omp for schedule(static) nowait
    for (int r = 0; r < B * T; r++) {
        int b = r / T, t = r % T;
        int td = t == 0 ? 0 : 1 + m->ids_keep[(size_t)b * K + t - 1];
        memcpy(d_emb + (size_t)r * Dd, dd + ((size_t)b * Td + td) * Dd, (size_t)Dd * sizeof(float));
    }
}

static void patch_rows_body(float *d_pe, const float *de, int B, int T, int K, int D) {
    #pragma omp for schedule(static) nowait
    for (int b = 0; b < B; b++)
        memcpy(d_pe + (size_t)b * K * D, de + ((size_t)b * T + 1) * D, (size_t)K * D * sizeof(float));
}

// The gradients of the input tokens (cls, mask token, both position tables: summed over tokens by
// tokens_backward and dec_input_body, or not trained at all) cleared, for a backward that sets the rest.
static void token_grads_zero_body(const Mae *m, float *grads) {
    const MaeConfig *c = &m->cfg;
    size_t rows = 1 + (size_t)m->L;
    size_t at[4] = {m->cls, m->pos, m->mask_token, m->dpos};
    size_t len[4] = {(size_t)c->embed_dim, rows * c->embed_dim, (size_t)c->dec_embed_dim, rows * c->dec_embed_dim};
    #pragma omp for schedule(static) nowait
    for (int i = 0; i < 4; i++) memset(grads + at[i], 0, len[i] * sizeof(float));
}

// Run by every thread of mae_backward's team (thread 0 keeps the timings). param_acc 0: every
// gradient is set, none read (mae_backward_set). Group g's parameter gradients (its B / G.n images, each
// group with nrem removed patches) go to G.buf[g] (core/encoder.h).
static void backward_team(Mae *m, GradGroups G, long nrem, double t0, int param_acc) {
    const MaeConfig *c = &m->cfg;
    const float *P = m->params;
    int B = m->B, K = m->K, T = 1 + K, L = m->L, Td = 1 + L, D = c->embed_dim, Dd = c->dec_embed_dim, pd = m->pd;
    int Bg = B / G.n;   // images per group
    MaeTimings dummy, *tm = m->timing ? m->timing : &dummy;
    if (!param_acc)
        for (int g = 0; g < G.n; g++) TEAM_RUN(token_grads_zero_body(m, G.buf[g]));
    int n = B * (L - K);   // the removed patches' rows, the only ones the loss reads
    float *dpred = m->d_ln;   // [n, pd]
    TEAM_RUN(dpred_body(m, dpred, (float)(2.0 / ((double)pd * nrem)), n));
    float *d_decln = m->d_small;   // [n, Dd]
    linear_backward_groups(d_decln, G, m->dpred_w, m->dpred_b, dpred, m->dec_ln, P + m->dpred_w, n, Dd, pd,
                           param_acc);
    // decoder_norm backward into d_atty, where the decoder's last block takes its output gradient at the
    // removed rows (core/encoder.h, Stack.keep_rows); it writes the decoder stream gradient dd.
    float *dd = m->d_dec;
    TEAM_RUN(zero_body(m->d_atty, (size_t)n * Dd));
    layernorm_backward_groups(m->d_atty, G, m->dnorm_w, m->dnorm_b, d_decln,
                              m->dec.depth ? m->dec.res[m->dec.depth] : m->dec_patches, P + m->dnorm_w, m->dec_mean,
                              m->dec_rstd, n, Dd, param_acc);
    if (m->dec.depth == 0) rows_scatter(dd, Dd, m->d_atty, m->dec_rows, B, Td, L - K, Dd);
    stack_backward(&m->dec, P, G, &m->scratch, dd, B, Td, param_acc);
    int shared = stack_dup_backward(&m->dec, B, Td, G.n);
    for (int g = 0; g < G.n; g++)
        TEAM_RUN(dec_input_body(m->removed + (size_t)g * Bg * L, c->pos_learned ? G.buf[g] + m->dpos : NULL,
                                G.buf[g] + m->mask_token, dd + (size_t)g * Bg * Td * Dd,
                                shared ? m->dec_patches + (size_t)g * L * Dd : NULL, Bg, L, Td, Dd));
    float *d_emb = m->d_small;   // [B*T, Dd]
    TEAM_RUN(dec_emb_body(m, d_emb, dd, B, T, K, Td, Dd));
    float *dlatent = m->d_atty;   // [B*T, D]
    linear_backward_groups(dlatent, G, m->dembed_w, m->dembed_b, d_emb, m->latent, P + m->dembed_w, B * T, D, Dd,
                           param_acc);
    lap(m, &t0, &tm->backward_decoder);
    float *de = m->d_enc;
    TEAM_RUN(zero_body(de, (size_t)B * T * D));
    layernorm_backward_groups(de, G, m->norm_w, m->norm_b, dlatent, m->enc.res[m->enc.depth], P + m->norm_w,
                              m->norm_mean, m->norm_rstd, B * T, D, param_acc);
    stack_backward(&m->enc, P, G, &m->scratch, de, B, T, param_acc);
    // Encoder input: cls token, pos, patch embedding.
    for (int g = 0; g < G.n; g++)
        tokens_backward(G.buf[g] + m->cls, c->pos_learned ? G.buf[g] + m->pos : NULL, de + (size_t)g * Bg * T * D,
                        m->ids_keep + (size_t)g * Bg * K, Bg, K, D);
    float *d_pe = m->d_small;   // [B*K, D]
    TEAM_RUN(patch_rows_body(d_pe, de, B, T, K, D));
    linear_backward_groups(NULL, G, m->patch_w, m->patch_b, d_pe, m->patch_cols, P + m->patch_w, B * K, m->cpp, D,
                           param_acc);
    if (G.tree) grad_groups_sum(G, m->tensors, m->ntensors);
    lap(m, &t0, &tm->backward_encoder);
}

// One team (kernels/team.h) for the whole backward, so that its threads wait at the team's barrier
// between kernels instead of leaving a parallel region after each and being woken for the next (the
// decoder and encoder stacks run on this team).
static void backward_run(Mae *m, GradGroups G, int param_acc) {
    if (m->kind != STACK_TRAIN) {   // a caller's bug, not bad input: the model has nowhere to put a backward
        fprintf(stderr, "vitmae: internal error: backward on a forward-only model\n");
        abort();
    }
    long nrem = 0;   // removed patches per group: every image has L - K
    if (m->has_decoder_pass)
        for (int r = 0; r < m->B / G.n * m->L; r++) nrem += m->removed[r];
    if (nrem == 0) {   // no forward, or the loss is the constant 0: a zero gradient (summed: zero too)
        if (!param_acc)
            for (int g = 0; g < G.n; g++) TEAM_RUN(zero_body(G.buf[g], mae_num_params(&m->cfg)));
        return;
    }
    if (m->has_decoder_pass != 2) {   // a caller's bug: the backward reads what mae_train_forward keeps
        fprintf(stderr, "vitmae: internal error: backward after mae_forward, not mae_train_forward\n");
        abort();
    }
    double t0 = m->timing ? omp_get_wtime() : 0.0;
    #pragma omp parallel
    {
        team_begin();
        backward_team(m, G, nrem, t0, param_acc);
        team_end();
    }
}

void mae_backward(Mae *m) { backward_run(m, (GradGroups){&m->grads, 1, NULL}, 1); }
void mae_backward_set(Mae *m) { backward_run(m, (GradGroups){&m->grads, 1, NULL}, 0); }
void mae_backward_set_groups(Mae *m, float *const *grads, int n, const SumTree *tree) {
    backward_run(m, (GradGroups){grads, n, tree}, 0);
}

int mae_backward_units(const Mae *m) { return m->dec.depth + m->enc.depth; }

void mae_set_block_done(Mae *m, void (*fn)(void *ctx, int unit), void *ctx) {
    m->dec.block_done = m->enc.block_done = fn;
    m->dec.block_done_ctx = m->enc.block_done_ctx = ctx;
    m->dec.unit_base = 0;
    m->enc.unit_base = m->dec.depth;
}

void mae_unit_weights(const Mae *m, int unit, int idx[MAE_UNIT_WEIGHTS]) {
    int dec = unit < m->dec.depth;
    const Stack *s = dec ? &m->dec : &m->enc;
    const BlockOffsets *w = &s->w[s->depth - 1 - (dec ? unit : unit - m->dec.depth)];
    size_t at[MAE_UNIT_WEIGHTS] = {w->qkvw, w->projw, w->fc1w, w->fc2w};
    for (int i = 0; i < MAE_UNIT_WEIGHTS; i++)
        for (int k = 0; k < m->ntensors; k++)
            if (m->tensors[k].offset == at[i]) idx[i] = k;
}

// ---------------------------------------------------------------------------------------------
// Results

const float *mae_pred(const Mae *m) { return m->pred; }
const float *mae_target(const Mae *m) { return m->target; }
const float *mae_latent(const Mae *m) { return m->latent; }
const float *mae_attention(const Mae *m, int layer) {
    return m->kind == STACK_TRAIN && layer >= 0 && layer < m->enc.depth ? m->enc.acts[layer].att : NULL;
}
const float *mae_block_output(const Mae *m, int layer) {
    return layer >= 0 && layer < m->enc.depth ? m->enc.res[layer + 1] : NULL;
}
