// The MAE model: parameter/activation layout, initialisation, masking, forward, backward.
// Reads top to bottom: structs, arena layout, init, forward pieces, backward pieces, accessors.
// Kernels live in ops.c, matrix products in gemm.c.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/model.h"
#include "kernels/ops.h"

// Offsets (in floats) of one transformer block's 12 tensors, in MAE state_dict order.
typedef struct {
    size_t ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fc1w, fc1b, fc2w, fc2b;
} BlockOffsets;

// Activations of one block for N = B * T tokens of width C, hidden width Hd = mlp_ratio * C.
typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd;   // [N, C], [N], [N]
    float *qkv;                         // [N, 3C]
    float *att;                         // [B, NH, T, T] softmax probabilities
    float *atty;                        // [N, C] attention output before proj
    float *mid;                         // [N, C] residual stream after the attention branch
    float *ln2, *ln2_mean, *ln2_rstd;   // [N, C], [N], [N]
    float *fc1;                         // [N, Hd] pre-GELU
    float *gelu;                        // [N, Hd]
} BlockActs;

// One transformer stack (encoder or decoder).
typedef struct {
    int depth, C, NH, hidden;
    float eps;             // LayerNorm eps
    BlockOffsets *w;       // [depth]
    BlockActs *acts;       // [depth]
    float **res;           // [depth + 1] residual streams [N, C]; res[0] input, res[depth] output
    float *att_scratch;    // [N, C] attention's per-head K^T (forward)
} Stack;

struct Mae {
    MaeConfig cfg;
    int max_batch, L, pd, cpp;   // patches, patch-vector length, conv fan-in C*P*P
    MaeTensor *tensors;
    int ntensors;
    float *params, *grads;
    float *arena;                // 64-byte aligned, inside arena_alloc
    void *arena_alloc;           // calloc'd: pages are zero and only touched when a pass uses them
    size_t arena_floats;
    int *ids_keep;               // [max_batch, L] of the last forward
    unsigned char *removed;      // [max_batch, L] 1 = patch masked out
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
    // backward scratch
    float *d_enc, *d_dec;        // residual-stream gradients [B*(1+L), D], [B*(1+L), Dd]
    float *d_ln, *d_qkv, *d_att, *d_atty, *d_fc1, *d_gelu, *d_small;
    // shape of the last forward
    int B, K, has_decoder_pass;
    float loss;
    MaeTimings *timing;          // NULL: no timing
};

// Adds the seconds since *t0 to *field and restarts the clock (no-op while timing is off).
static void lap(const Mae *m, double *t0, double *field) {
    if (!m->timing) return;
    double t = omp_get_wtime();
    *field += t - *t0;
    *t0 = t;
}

// ---------------------------------------------------------------------------------------------
// Layout

static size_t find_offset(const Mae *m, const char *name) {
    for (int i = 0; i < m->ntensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return m->tensors[i].offset;
    fprintf(stderr, "vitmae: internal error: no tensor %s\n", name);
    abort();
}

static void block_offsets(const Mae *m, const char *prefix, int i, BlockOffsets *o) {
    char name[96];
#define OFF(s) (snprintf(name, sizeof name, "%s.%d.%s", prefix, i, s), find_offset(m, name))
    o->ln1w = OFF("norm1.weight"); o->ln1b = OFF("norm1.bias");
    o->qkvw = OFF("attn.qkv.weight"); o->qkvb = OFF("attn.qkv.bias");
    o->projw = OFF("attn.proj.weight"); o->projb = OFF("attn.proj.bias");
    o->ln2w = OFF("norm2.weight"); o->ln2b = OFF("norm2.bias");
    o->fc1w = OFF("mlp.fc1.weight"); o->fc1b = OFF("mlp.fc1.bias");
    o->fc2w = OFF("mlp.fc2.weight"); o->fc2b = OFF("mlp.fc2.bias");
#undef OFF
}

// Walks the arena: with base == NULL it only counts floats, otherwise it hands out pointers.
typedef struct { float *base; size_t used; } Carver;
static float *carve(Carver *c, size_t n) {
    float *p = c->base ? c->base + c->used : NULL;
    c->used += (n + 15) & ~(size_t)15;   // 64-byte aligned pieces
    return p;
}

static void carve_stack(Carver *cv, Stack *s, int Bmax, int T) {
    size_t N = (size_t)Bmax * T, C = (size_t)s->C, Hd = (size_t)s->hidden;
    for (int l = 0; l <= s->depth; l++) {
        float *p = carve(cv, N * C);
        if (s->res) s->res[l] = p;
    }
    for (int l = 0; l < s->depth; l++) {
        BlockActs a;
        a.ln1 = carve(cv, N * C); a.ln1_mean = carve(cv, N); a.ln1_rstd = carve(cv, N);
        a.qkv = carve(cv, N * 3 * C);
        a.att = carve(cv, (size_t)Bmax * s->NH * T * T);
        a.atty = carve(cv, N * C);
        a.mid = carve(cv, N * C);
        a.ln2 = carve(cv, N * C); a.ln2_mean = carve(cv, N); a.ln2_rstd = carve(cv, N);
        a.fc1 = carve(cv, N * Hd);
        a.gelu = carve(cv, N * Hd);
        if (s->acts) s->acts[l] = a;
    }
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

// Lays out every activation and scratch buffer; returns the number of floats.
static size_t carve_all(Mae *m, float *base) {
    Carver cv = {base, 0};
    const MaeConfig *c = &m->cfg;
    size_t Bm = (size_t)m->max_batch, L = (size_t)m->L, T = L + 1;
    size_t D = (size_t)c->embed_dim, Dd = (size_t)c->dec_embed_dim;
    m->patch_cols = carve(&cv, Bm * L * m->cpp);
    m->patch_emb = carve(&cv, Bm * L * D);
    carve_stack(&cv, &m->enc, (int)Bm, (int)T);
    m->latent = carve(&cv, Bm * T * D); m->norm_mean = carve(&cv, Bm * T); m->norm_rstd = carve(&cv, Bm * T);
    m->dec_emb = carve(&cv, Bm * T * Dd);
    carve_stack(&cv, &m->dec, (int)Bm, (int)T);
    m->dec_patches = carve(&cv, Bm * L * Dd);
    m->dec_ln = carve(&cv, Bm * L * Dd); m->dec_mean = carve(&cv, Bm * L); m->dec_rstd = carve(&cv, Bm * L);
    m->pred = carve(&cv, Bm * L * m->pd);
    m->target = carve(&cv, Bm * L * m->pd);
    m->d_enc = carve(&cv, Bm * T * D);
    m->d_dec = carve(&cv, Bm * T * Dd);
    size_t W = max_sz(D, Dd), NH = (size_t)(c->num_heads > c->dec_num_heads ? c->num_heads : c->dec_num_heads);
    size_t N = Bm * T;
    m->d_ln = carve(&cv, max_sz(N * W, Bm * L * max_sz(Dd, (size_t)m->pd)));
    m->d_qkv = carve(&cv, N * 3 * W);
    m->d_att = carve(&cv, Bm * NH * T * T);
    m->d_atty = carve(&cv, N * W);
    m->d_fc1 = carve(&cv, N * W * c->mlp_ratio);
    m->d_gelu = carve(&cv, N * W * c->mlp_ratio);
    m->d_small = carve(&cv, N * W);
    // The forward attention scratch is the backward's d_small (N * W >= B * T * C for both stacks).
    m->enc.att_scratch = m->d_small;
    m->dec.att_scratch = m->d_small;
    return cv.used;
}

static void stack_setup(Stack *s, int depth, int C, int NH, int hidden, float eps) {
    memset(s, 0, sizeof *s);
    s->eps = eps;
    s->depth = depth; s->C = C; s->NH = NH; s->hidden = hidden;
}

// Sizes only: a Mae with counts but no allocations.
static size_t arena_floats_for(const MaeConfig *cfg, int max_batch) {
    Mae m;
    memset(&m, 0, sizeof m);
    m.cfg = *cfg; m.max_batch = max_batch; m.L = mae_num_patches(cfg); m.pd = mae_patch_dim(cfg);
    m.cpp = m.pd;
    stack_setup(&m.enc, cfg->depth, cfg->embed_dim, cfg->num_heads, cfg->embed_dim * cfg->mlp_ratio, cfg->ln_eps);
    stack_setup(&m.dec, cfg->dec_depth, cfg->dec_embed_dim, cfg->dec_num_heads, cfg->dec_embed_dim * cfg->mlp_ratio, cfg->ln_eps);
    return carve_all(&m, NULL);
}

size_t mae_bytes_needed(const MaeConfig *cfg, int max_batch) {
    size_t np = mae_num_params(cfg), L = (size_t)mae_num_patches(cfg);
    return 4 * np * sizeof(float) + arena_floats_for(cfg, max_batch) * sizeof(float)
           + (size_t)max_batch * L * (sizeof(int) + 1);
}

Mae *mae_create(const MaeConfig *cfg, int max_batch, char *err, size_t errlen) {
    if (mae_config_check(cfg, err, errlen)) return NULL;
    if (max_batch < 1) { snprintf(err, errlen, "batch size %d must be >= 1", max_batch); return NULL; }
    Mae *m = calloc(1, sizeof *m);
    if (!m) { snprintf(err, errlen, "out of memory"); return NULL; }
    m->cfg = *cfg; m->max_batch = max_batch;
    m->L = mae_num_patches(cfg); m->pd = mae_patch_dim(cfg); m->cpp = m->pd;
    m->ntensors = mae_param_table(cfg, NULL, 0);
    m->tensors = calloc((size_t)m->ntensors, sizeof *m->tensors);
    size_t np = mae_num_params(cfg);
    m->params = calloc(np ? np : 1, sizeof(float));
    m->grads = calloc(np ? np : 1, sizeof(float));
    stack_setup(&m->enc, cfg->depth, cfg->embed_dim, cfg->num_heads, cfg->embed_dim * cfg->mlp_ratio, cfg->ln_eps);
    stack_setup(&m->dec, cfg->dec_depth, cfg->dec_embed_dim, cfg->dec_num_heads, cfg->dec_embed_dim * cfg->mlp_ratio, cfg->ln_eps);
    m->enc.w = calloc((size_t)cfg->depth + 1, sizeof(BlockOffsets));
    m->enc.acts = calloc((size_t)cfg->depth + 1, sizeof(BlockActs));
    m->enc.res = calloc((size_t)cfg->depth + 1, sizeof(float *));
    m->dec.w = calloc((size_t)cfg->dec_depth + 1, sizeof(BlockOffsets));
    m->dec.acts = calloc((size_t)cfg->dec_depth + 1, sizeof(BlockActs));
    m->dec.res = calloc((size_t)cfg->dec_depth + 1, sizeof(float *));
    m->ids_keep = calloc((size_t)max_batch * m->L, sizeof(int));
    m->removed = calloc((size_t)max_batch * m->L, 1);
    m->arena_floats = arena_floats_for(cfg, max_batch);
    // calloc, not aligned_alloc + memset: a large calloc maps fresh zero pages without writing them,
    // so inference (encoder only, no backward scratch) never touches most of the arena.
    m->arena_alloc = calloc(m->arena_floats + 16, sizeof(float));
    m->arena = m->arena_alloc ? (float *)(((uintptr_t)m->arena_alloc + 63) & ~(uintptr_t)63) : NULL;
    if (!m->tensors || !m->params || !m->grads || !m->enc.w || !m->enc.acts || !m->enc.res || !m->dec.w
        || !m->dec.acts || !m->dec.res || !m->ids_keep || !m->removed || !m->arena) {
        snprintf(err, errlen, "out of memory (%zu MB of activations for batch %d)",
                 m->arena_floats * sizeof(float) >> 20, max_batch);
        mae_free(m);
        return NULL;
    }
    mae_param_table(cfg, m->tensors, m->ntensors);
    carve_all(m, m->arena);
    m->cls = find_offset(m, "cls_token"); m->pos = find_offset(m, "pos_embed");
    m->patch_w = find_offset(m, "patch_embed.proj.weight"); m->patch_b = find_offset(m, "patch_embed.proj.bias");
    m->norm_w = find_offset(m, "norm.weight"); m->norm_b = find_offset(m, "norm.bias");
    m->dembed_w = find_offset(m, "decoder_embed.weight"); m->dembed_b = find_offset(m, "decoder_embed.bias");
    m->mask_token = find_offset(m, "mask_token"); m->dpos = find_offset(m, "decoder_pos_embed");
    m->dnorm_w = find_offset(m, "decoder_norm.weight"); m->dnorm_b = find_offset(m, "decoder_norm.bias");
    m->dpred_w = find_offset(m, "decoder_pred.weight"); m->dpred_b = find_offset(m, "decoder_pred.bias");
    for (int i = 0; i < cfg->depth; i++) block_offsets(m, "blocks", i, &m->enc.w[i]);
    for (int i = 0; i < cfg->dec_depth; i++) block_offsets(m, "decoder_blocks", i, &m->dec.w[i]);
    return m;
}

void mae_free(Mae *m) {
    if (!m) return;
    free(m->tensors); free(m->params); free(m->grads); free(m->arena_alloc);
    free(m->enc.w); free(m->enc.acts); free(m->enc.res);
    free(m->dec.w); free(m->dec.acts); free(m->dec.res);
    free(m->ids_keep); free(m->removed);
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
void mae_zero_grads(Mae *m) { memset(m->grads, 0, mae_num_params(&m->cfg) * sizeof(float)); }

// ---------------------------------------------------------------------------------------------
// Initialisation

// MAE's 2D sin-cos table [1 + g*g, dim] (row 0, the CLS row, zero). For patch (y, x) the first
// dim/2 values encode x, the last dim/2 encode y (MAE builds its grid as meshgrid(w, h) and embeds
// grid[0] first); each half is sin(pos * omega_k) for k < dim/4, then cos(pos * omega_k), with
// omega_k = 1 / 10000^(k / (dim/4)).
void mae_sincos_pos_embed(float *out, int grid, int dim) {
    int q = dim / 4;
    memset(out, 0, (size_t)dim * sizeof(float));
    for (int y = 0; y < grid; y++)
        for (int x = 0; x < grid; x++) {
            float *row = out + (size_t)(1 + y * grid + x) * dim;
            for (int k = 0; k < q; k++) {
                double omega = 1.0 / pow(10000.0, (double)k / q);
                row[k] = (float)sin(x * omega);
                row[q + k] = (float)cos(x * omega);
                row[2 * q + k] = (float)sin(y * omega);
                row[3 * q + k] = (float)cos(y * omega);
            }
        }
}

void mae_init_weights(Mae *m, Rng *rng) {
    const MaeConfig *c = &m->cfg;
    int grid = c->img_size / c->patch_size;
    for (int i = 0; i < m->ntensors; i++) {
        const MaeTensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        const char *n = t->name;
        size_t len = strlen(n);
        int ends_weight = len >= 7 && !strcmp(n + len - 7, ".weight");
        if (!strcmp(n, "pos_embed")) mae_sincos_pos_embed(p, grid, c->embed_dim);
        else if (!strcmp(n, "decoder_pos_embed")) mae_sincos_pos_embed(p, grid, c->dec_embed_dim);
        else if (!strcmp(n, "cls_token") || !strcmp(n, "mask_token"))
            for (size_t j = 0; j < t->numel; j++) p[j] = rng_normal(rng, 0.0f, 0.02f);
        else if (ends_weight && t->ndim >= 2) {
            // Xavier uniform with the weight viewed as [out, in] (patch weight: [D, C*P*P]).
            double fan_out = t->shape[0], fan_in = (double)t->numel / t->shape[0];
            float bound = (float)sqrt(6.0 / (fan_in + fan_out));
            for (size_t j = 0; j < t->numel; j++) p[j] = (2.0f * rng_uniform(rng) - 1.0f) * bound;
        } else if (ends_weight) {
            for (size_t j = 0; j < t->numel; j++) p[j] = 1.0f;   // LayerNorm weight
        } else {
            memset(p, 0, t->numel * sizeof(float));              // biases, LayerNorm bias
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Masking

// Stable bottom-up merge sort of idx[0..n) by noise (ascending; equal noise keeps index order), so
// the result is a stable argsort. Passes alternate between idx and tmp; returns the sorted one.
static const int *sort_by_noise(int *idx, int *tmp, int n, const float *noise) {
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = noise[idx[j]] < noise[idx[i]] ? idx[j++] : idx[i++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        int *t = idx; idx = tmp; tmp = t;
    }
    return idx;
}

void mae_masking_from_noise_scratch(const float *noise, int B, int L, int len_keep, int *ids_keep, int *scratch) {
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < L; i++) scratch[i] = i;
        const int *sorted = sort_by_noise(scratch, scratch + L, L, noise + (size_t)b * L);
        for (int j = 0; j < len_keep; j++) ids_keep[(size_t)b * len_keep + j] = sorted[j];
    }
}

void mae_masking_from_noise(const float *noise, int B, int L, int len_keep, int *ids_keep) {
    int stack[2 * MAE_MASK_STACK_L];
    if (L <= MAE_MASK_STACK_L) { mae_masking_from_noise_scratch(noise, B, L, len_keep, ids_keep, stack); return; }
    int *scratch = malloc(2 * (size_t)L * sizeof *scratch);
    if (!scratch) abort();
    mae_masking_from_noise_scratch(noise, B, L, len_keep, ids_keep, scratch);
    free(scratch);
}

// ---------------------------------------------------------------------------------------------
// Forward

static void block_forward(const Stack *s, int l, const float *P, int B, int T) {
    const BlockOffsets *w = &s->w[l];
    const BlockActs *a = &s->acts[l];
    int N = B * T, C = s->C, H = s->hidden;
    const float *x = s->res[l];
    layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, x, P + w->ln1w, P + w->ln1b, N, C, s->eps);
    linear_forward(a->qkv, a->ln1, P + w->qkvw, P + w->qkvb, N, C, 3 * C);
    attention_forward(a->atty, a->att, a->qkv, s->att_scratch, B, T, C, s->NH);
    linear_forward(a->mid, a->atty, P + w->projw, P + w->projb, N, C, C);
    residual_forward(a->mid, a->mid, x, (long)N * C);
    layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->mid, P + w->ln2w, P + w->ln2b, N, C, s->eps);
    linear_forward(a->fc1, a->ln2, P + w->fc1w, P + w->fc1b, N, C, H);
    gelu_forward(a->gelu, a->fc1, (long)N * H);
    float *out = s->res[l + 1];
    linear_forward(out, a->gelu, P + w->fc2w, P + w->fc2b, N, H, C);
    residual_forward(out, out, a->mid, (long)N * C);
}

static void run_encoder(Mae *m, const float *images, const int *ids_keep, int B, int K) {
    const MaeConfig *c = &m->cfg;
    const float *P = m->params;
    int D = c->embed_dim, Pp = c->patch_size, Ch = c->in_chans, g = c->img_size / Pp, S = c->img_size;
    int T = 1 + K, cpp = m->cpp, L = m->L;
    double t0 = m->timing ? omp_get_wtime() : 0.0;
    MaeTimings dummy, *tm = m->timing ? m->timing : &dummy;
    m->B = B; m->K = K;
    for (int b = 0; b < B; b++) {
        memcpy(m->ids_keep + (size_t)b * K, ids_keep + (size_t)b * K, (size_t)K * sizeof(int));
        memset(m->removed + (size_t)b * L, 1, (size_t)L);
        for (int j = 0; j < K; j++) m->removed[(size_t)b * L + ids_keep[(size_t)b * K + j]] = 0;
    }
    // Gather the visible patches as conv inputs, index (c, py, px).
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < B * K; r++) {
        int b = r / K, l = ids_keep[r], gy = l / g, gx = l % g;
        float *col = m->patch_cols + (size_t)r * cpp;
        for (int ch = 0; ch < Ch; ch++)
            for (int py = 0; py < Pp; py++)
                for (int px = 0; px < Pp; px++)
                    col[(ch * Pp + py) * Pp + px] =
                        images[(((size_t)b * S + gy * Pp + py) * S + gx * Pp + px) * Ch + ch];
    }
    linear_forward(m->patch_emb, m->patch_cols, P + m->patch_w, P + m->patch_b, B * K, cpp, D);
    // Token rows: CLS + pos[0], then visible patches + pos[1 + l].
    float *x0 = m->enc.res[0];
    const float *pos = P + m->pos, *cls = P + m->cls;
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < B * T; r++) {
        int b = r / T, t = r % T;
        float *row = x0 + (size_t)r * D;
        if (t == 0) for (int i = 0; i < D; i++) row[i] = cls[i] + pos[i];
        else {
            int l = ids_keep[(size_t)b * K + t - 1];
            const float *e = m->patch_emb + ((size_t)b * K + t - 1) * D, *pe = pos + (size_t)(1 + l) * D;
            for (int i = 0; i < D; i++) row[i] = e[i] + pe[i];
        }
    }
    lap(m, &t0, &tm->patch_embed);
    for (int l = 0; l < m->enc.depth; l++) block_forward(&m->enc, l, P, B, T);
    layernorm_forward(m->latent, m->norm_mean, m->norm_rstd, m->enc.res[m->enc.depth], P + m->norm_w,
                      P + m->norm_b, B * T, D, c->ln_eps);
    lap(m, &t0, &tm->encoder);
}

void mae_forward_encoder(Mae *m, const float *images, const int *ids_keep, int B, int len_keep) {
    run_encoder(m, images, ids_keep, B, len_keep);
    m->has_decoder_pass = 0;
}

// Targets [B*L, pd]: patch vectors (py*P+px)*C+c of the image, optionally normalised per patch.
static void make_targets(Mae *m, const float *images, int B) {
    const MaeConfig *c = &m->cfg;
    int Pp = c->patch_size, Ch = c->in_chans, g = c->img_size / Pp, S = c->img_size, pd = m->pd, L = m->L;
    #pragma omp parallel for schedule(static)
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

float mae_forward(Mae *m, const float *images, const int *ids_keep, int B, int len_keep) {
    const MaeConfig *c = &m->cfg;
    const float *P = m->params;
    int K = len_keep, T = 1 + K, L = m->L, Td = 1 + L, D = c->embed_dim, Dd = c->dec_embed_dim, pd = m->pd;
    run_encoder(m, images, ids_keep, B, K);
    m->has_decoder_pass = 1;
    double t0 = m->timing ? omp_get_wtime() : 0.0;
    MaeTimings dummy, *tm = m->timing ? m->timing : &dummy;
    linear_forward(m->dec_emb, m->latent, P + m->dembed_w, P + m->dembed_b, B * T, D, Dd);
    // Decoder tokens in image order: CLS, then each patch's encoder token or the mask token.
    float *xd = m->dec.res[0];
    const float *dpos = P + m->dpos, *mtok = P + m->mask_token;
    #pragma omp parallel for schedule(static)
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
    for (int l = 0; l < m->dec.depth; l++) block_forward(&m->dec, l, P, B, Td);
    // decoder_norm and decoder_pred on the patch rows only (the CLS prediction is dropped anyway).
    const float *xo = m->dec.res[m->dec.depth];
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++)
        memcpy(m->dec_patches + (size_t)b * L * Dd, xo + ((size_t)b * Td + 1) * Dd, (size_t)L * Dd * sizeof(float));
    layernorm_forward(m->dec_ln, m->dec_mean, m->dec_rstd, m->dec_patches, P + m->dnorm_w, P + m->dnorm_b,
                      B * L, Dd, c->ln_eps);
    linear_forward(m->pred, m->dec_ln, P + m->dpred_w, P + m->dpred_b, B * L, Dd, pd);
    lap(m, &t0, &tm->decoder);
    make_targets(m, images, B);
    // Loss: mean over removed patches of the per-patch mean squared error (summed in fixed order).
    double total = 0.0;
    long nrem = 0;
    for (int r = 0; r < B * L; r++) {
        if (!m->removed[r]) continue;
        const float *p = m->pred + (size_t)r * pd, *t = m->target + (size_t)r * pd;
        double s = 0.0;
        for (int i = 0; i < pd; i++) { double d = (double)p[i] - t[i]; s += d * d; }
        total += s / pd;
        nrem++;
    }
    m->loss = nrem ? (float)(total / nrem) : 0.0f;
    lap(m, &t0, &tm->loss);
    return m->loss;
}

// ---------------------------------------------------------------------------------------------
// Backward

// On entry dx holds d(block output); on exit d(block input). Parameter grads accumulate into G.
static void block_backward(Mae *m, const Stack *s, int l, float *dx, int B, int T) {
    const BlockOffsets *w = &s->w[l];
    const BlockActs *a = &s->acts[l];
    const float *P = m->params;
    float *G = m->grads;
    int N = B * T, C = s->C, H = s->hidden;
    // MLP branch: out = mid + fc2(gelu(fc1(ln2(mid)))).
    linear_backward_set(m->d_gelu, G + w->fc2w, G + w->fc2b, dx, a->gelu, P + w->fc2w, N, H, C);
    gelu_backward_set_colsum(m->d_fc1, G + w->fc1b, a->fc1, m->d_gelu, N, H);
    linear_backward_set(m->d_ln, G + w->fc1w, NULL, m->d_fc1, a->ln2, P + w->fc1w, N, C, H);
    layernorm_backward(dx, G + w->ln2w, G + w->ln2b, m->d_ln, a->mid, P + w->ln2w, a->ln2_mean, a->ln2_rstd, N, C);
    // Attention branch: mid = x + proj(attn(ln1(x))).
    linear_backward_set(m->d_atty, G + w->projw, G + w->projb, dx, a->atty, P + w->projw, N, C, C);
    attention_backward_set(m->d_qkv, m->d_att, m->d_atty, a->qkv, a->att, m->d_small, B, T, C, s->NH);
    linear_backward_set(m->d_ln, G + w->qkvw, G + w->qkvb, m->d_qkv, a->ln1, P + w->qkvw, N, C, 3 * C);
    layernorm_backward(dx, G + w->ln1w, G + w->ln1b, m->d_ln, s->res[l], P + w->ln1w, a->ln1_mean, a->ln1_rstd, N, C);
}

void mae_backward(Mae *m) {
    if (!m->has_decoder_pass) return;
    const MaeConfig *c = &m->cfg;
    const float *P = m->params;
    float *G = m->grads;
    int B = m->B, K = m->K, T = 1 + K, L = m->L, Td = 1 + L, D = c->embed_dim, Dd = c->dec_embed_dim, pd = m->pd;
    long nrem = 0;
    for (int r = 0; r < B * L; r++) nrem += m->removed[r];
    if (nrem == 0) return;   // loss is the constant 0
    double t0 = m->timing ? omp_get_wtime() : 0.0;
    MaeTimings dummy, *tm = m->timing ? m->timing : &dummy;
    // d loss / d pred = 2 (pred - target) / (pd * n_removed) on removed patches.
    float *dpred = m->d_ln;   // [B*L, pd]
    float coef = (float)(2.0 / ((double)pd * nrem));
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < B * L; r++)
        for (int i = 0; i < pd; i++)
            dpred[(size_t)r * pd + i] = m->removed[r] ? coef * (m->pred[(size_t)r * pd + i] - m->target[(size_t)r * pd + i]) : 0.0f;
    float *d_decln = m->d_small;   // [B*L, Dd]
    linear_backward_set(d_decln, G + m->dpred_w, G + m->dpred_b, dpred, m->dec_ln, P + m->dpred_w, B * L, Dd, pd);
    // decoder_norm backward, then into the patch rows of the decoder stream gradient (CLS row 0).
    float *dd = m->d_dec;
    float *d_patches = m->d_atty;   // [B*L, Dd] scratch, free until the blocks run
    memset(d_patches, 0, (size_t)B * L * Dd * sizeof(float));
    layernorm_backward(d_patches, G + m->dnorm_w, G + m->dnorm_b, d_decln, m->dec_patches, P + m->dnorm_w,
                       m->dec_mean, m->dec_rstd, B * L, Dd);
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {   // the CLS row's prediction is dropped: no gradient
        memset(dd + (size_t)b * Td * Dd, 0, (size_t)Dd * sizeof(float));
        memcpy(dd + ((size_t)b * Td + 1) * Dd, d_patches + (size_t)b * L * Dd, (size_t)L * Dd * sizeof(float));
    }
    for (int l = m->dec.depth - 1; l >= 0; l--) block_backward(m, &m->dec, l, dd, B, Td);
    // Decoder input: pos (summed over images in order), mask token (over removed patches in order),
    // and the decoder_embed outputs routed back to their encoder tokens.
    if (c->pos_learned) {
        float *gpos = G + m->dpos;
        #pragma omp parallel for schedule(static)
        for (int t = 0; t < Td; t++)
            for (int b = 0; b < B; b++)
                for (int i = 0; i < Dd; i++) gpos[(size_t)t * Dd + i] += dd[((size_t)b * Td + t) * Dd + i];
    }
    {
        float *gmt = G + m->mask_token;
        #pragma omp parallel for schedule(static)
        for (int i = 0; i < Dd; i++) {
            float s = 0.0f;
            for (int r = 0; r < B * L; r++)
                if (m->removed[r]) s += dd[((size_t)(r / L) * Td + 1 + r % L) * Dd + i];
            gmt[i] += s;
        }
    }
    float *d_emb = m->d_small;   // [B*T, Dd]
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < B * T; r++) {
        int b = r / T, t = r % T;
        int td = t == 0 ? 0 : 1 + m->ids_keep[(size_t)b * K + t - 1];
        memcpy(d_emb + (size_t)r * Dd, dd + ((size_t)b * Td + td) * Dd, (size_t)Dd * sizeof(float));
    }
    float *dlatent = m->d_atty;   // [B*T, D]
    linear_backward_set(dlatent, G + m->dembed_w, G + m->dembed_b, d_emb, m->latent, P + m->dembed_w, B * T, D, Dd);
    lap(m, &t0, &tm->backward_decoder);
    float *de = m->d_enc;
    memset(de, 0, (size_t)B * T * D * sizeof(float));
    layernorm_backward(de, G + m->norm_w, G + m->norm_b, dlatent, m->enc.res[m->enc.depth], P + m->norm_w,
                       m->norm_mean, m->norm_rstd, B * T, D);
    for (int l = m->enc.depth - 1; l >= 0; l--) block_backward(m, &m->enc, l, de, B, T);
    // Encoder input: cls token, pos (per image in order; visible positions are distinct within an
    // image, so rows can be split across threads), patch embedding.
    // Threads own column blocks of 16; every element sums images in ascending order.
    float *gcls = G + m->cls, *gpos = c->pos_learned ? G + m->pos : NULL;
    #pragma omp parallel for schedule(static)
    for (int i0 = 0; i0 < D; i0 += 16) {
        int i1 = i0 + 16 < D ? i0 + 16 : D;
        for (int b = 0; b < B; b++) {
            const float *row = de + (size_t)b * T * D;
            for (int i = i0; i < i1; i++) gcls[i] += row[i];
            if (!gpos) continue;
            for (int i = i0; i < i1; i++) gpos[i] += row[i];
            for (int j = 0; j < K; j++) {
                float *g = gpos + (size_t)(1 + m->ids_keep[(size_t)b * K + j]) * D;
                const float *d = row + (size_t)(1 + j) * D;
                for (int i = i0; i < i1; i++) g[i] += d[i];
            }
        }
    }
    float *d_pe = m->d_small;   // [B*K, D]
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++)
        memcpy(d_pe + (size_t)b * K * D, de + ((size_t)b * T + 1) * D, (size_t)K * D * sizeof(float));
    linear_backward(NULL, G + m->patch_w, G + m->patch_b, d_pe, m->patch_cols, P + m->patch_w, B * K, m->cpp, D);
    lap(m, &t0, &tm->backward_encoder);
}

// ---------------------------------------------------------------------------------------------
// Results

const float *mae_pred(const Mae *m) { return m->pred; }
const float *mae_target(const Mae *m) { return m->target; }
const float *mae_latent(const Mae *m) { return m->latent; }
const float *mae_attention(const Mae *m, int layer) {
    return layer >= 0 && layer < m->enc.depth ? m->enc.acts[layer].att : NULL;
}
