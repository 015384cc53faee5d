// Transformer blocks and the encoder input, shared by the MAE and the classifier (see encoder.h).
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/encoder.h"
#include "kernels/cpu.h"
#include "kernels/droppath.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"
#include "kernels/team.h"

float *carve(Carver *c, size_t n) {
    float *p = c->base ? c->base + c->used : NULL;
    c->used += (n + 15) & ~(size_t)15;   // 64-byte aligned pieces
    return p;
}

void stack_setup(Stack *s, int depth, int C, int NH, int hidden, float eps) {
    memset(s, 0, sizeof *s);
    s->eps = eps;
    s->depth = depth; s->C = C; s->NH = NH; s->hidden = hidden;
}

int stack_alloc(Stack *s) {
    s->w = calloc((size_t)s->depth + 1, sizeof(BlockOffsets));
    s->acts = calloc((size_t)s->depth + 1, sizeof(BlockActs));
    s->res = calloc((size_t)s->depth + 1, sizeof(float *));
    return s->w && s->acts && s->res ? 0 : -1;
}

void stack_free(Stack *s) {
    free(s->w); free(s->acts); free(s->res);
    s->w = NULL; s->acts = NULL; s->res = NULL;
}

void stack_carve(Carver *cv, Stack *s, int Bmax, int T, int kind) {
    size_t N = (size_t)Bmax * T, C = (size_t)s->C, Hd = (size_t)s->hidden;
    for (int l = 0; l <= s->depth; l++) {
        float *p = carve(cv, N * C);
        if (s->res) s->res[l] = p;
    }
    BlockActs a;
    for (int l = 0; l < s->depth; l++) {
        if (kind != STACK_TRAIN && l > 0) {   // every block on block 0's activations
            if (s->acts) s->acts[l] = a;
            continue;
        }
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
    // The first block's shared rows (Stack.dup_src): their qkv, LayerNorm 1 output, mean and rstd.
    if (kind == STACK_TRAIN) s->dup_qkv = carve(cv, (size_t)T * (4 * C + 2));
}

size_t tensor_offset(const MaeTensor *t, int nt, const char *name) {
    for (int i = 0; i < nt; i++)
        if (!strcmp(t[i].name, name)) return t[i].offset;
    fprintf(stderr, "vitmae: internal error: no tensor %s\n", name);
    abort();
}

void stack_find_weights(Stack *s, const MaeTensor *t, int nt, const char *prefix) {
    char name[96];
    for (int i = 0; i < s->depth; i++) {
        BlockOffsets *o = &s->w[i];
#define OFF(x) (snprintf(name, sizeof name, "%s.%d.%s", prefix, i, x), tensor_offset(t, nt, name))
        o->ln1w = OFF("norm1.weight"); o->ln1b = OFF("norm1.bias");
        o->qkvw = OFF("attn.qkv.weight"); o->qkvb = OFF("attn.qkv.bias");
        o->projw = OFF("attn.proj.weight"); o->projb = OFF("attn.proj.bias");
        o->ln2w = OFF("norm2.weight"); o->ln2b = OFF("norm2.bias");
        o->fc1w = OFF("mlp.fc1.weight"); o->fc1b = OFF("mlp.fc1.bias");
        o->fc2w = OFF("mlp.fc2.weight"); o->fc2b = OFF("mlp.fc2.bias");
#undef OFF
    }
}

// The residual add of one branch for images [b0, b0 + B) of the Ball in the step: out = x + branch, or
// x + drop_scale * branch (out and x at those images' rows).
static void branch_add(const Stack *s, int l, int branch, float *out, const float *x, int b0, int B, int Ball,
                       int T) {
    if (s->drop_scale)
        droppath_residual_forward(out, out, x, s->drop_scale + ((size_t)l * 2 + branch) * Ball + b0, B, T, s->C);
    else
        residual_forward(out, out, x, (long)B * T * s->C);
}

// Besides fewer rows, the scratch must hold them: the forward's own rows' qkv go to a pass's rows of
// a->fc1 (dup_own 3 C floats an image against T hidden), the backward's rows' qkv gradients to
// sc->d_gelu (B T rows of at least hidden floats).
int stack_dup_forward(const Stack *s, int B, int T) {
    return s->dup_src && s->depth > 0 && s->dup_n < (long)B * (T - s->dup_own)
           && (long)s->dup_own * 3 * s->C <= (long)T * s->hidden;
}

int stack_dup_backward(const Stack *s, int B, int T, int groups) {
    long rows = (long)groups * (B / groups * s->dup_own + s->dup_n);
    return stack_dup_forward(s, B, T) && s->dup_n < (long)(B / groups) * (T - s->dup_own)
           && rows * 3 * s->C <= (long)B * T * s->hidden;
}

// The qkv rows of images [b0, b0 + B) from their own rows' (own: [B dup_own, 3C], in order) and the
// shared rows' (Stack.dup_src).
static void dup_expand_body(const Stack *s, float *qkv, const float *own, int b0, int B, int T) {
    size_t row = 3 * (size_t)s->C;
    #pragma omp for schedule(static) nowait
    for (int b = 0; b < B; b++) {
        const float *o = own + (size_t)b * s->dup_own * row;
        for (int t = 0; t < T; t++) {
            int r = (b0 + b) * T + t, u = s->dup_src[r];
            memcpy(qkv + ((size_t)b * T + t) * row, u < 0 ? o : s->dup_qkv + (size_t)u * row, row * sizeof(float));
            if (u < 0) o += row;
        }
    }
}

// LayerNorm 1 and qkv of images [b0, b0 + B) (rows r0 = b0 T on): on every row, or, where the first
// block shares rows, on their own rows (gathered into the pass's rows of a->mid, qkv'd into its rows of
// a->fc1, both written later in the pass) and copied out with the shared rows' (computed once, by
// block_forward).
static void block_front_forward(const Stack *s, int l, const float *P, int b0, int B, int Ball, int T) {
    const BlockOffsets *w = &s->w[l];
    const BlockActs *a = &s->acts[l];
    int C = s->C;
    size_t r0 = (size_t)b0 * T;
    if (l == 0 && stack_dup_forward(s, Ball, T)) {
        int n = B * s->dup_own;
        size_t k0 = (size_t)b0 * s->dup_own;
        float *x = a->mid + r0 * C, *own = a->fc1 + r0 * s->hidden;
        rows_gather(x, s->res[0], C, s->dup_own_rows + k0, n, C, 0);
        layernorm_forward(a->ln1 + k0 * C, a->ln1_mean + k0, a->ln1_rstd + k0, x, P + w->ln1w, P + w->ln1b, n, C,
                          s->eps);
        linear_forward(own, a->ln1 + k0 * C, P + w->qkvw, P + w->qkvb, n, C, 3 * C);
        TEAM_RUN(dup_expand_body(s, a->qkv + r0 * 3 * C, own, b0, B, T));
        return;
    }
    layernorm_forward(a->ln1 + r0 * C, a->ln1_mean + r0, a->ln1_rstd + r0, s->res[l] + r0 * C, P + w->ln1w,
                      P + w->ln1b, B * T, C, s->eps);
    linear_forward(a->qkv + r0 * 3 * C, a->ln1 + r0 * C, P + w->qkvw, P + w->qkvb, B * T, C, 3 * C);
}

// The shared rows' LayerNorm 1 and qkv, once for the block's forward (Stack.dup_src).
static void dup_shared_forward(const Stack *s, const float *P) {
    const BlockOffsets *w = &s->w[0];
    int C = s->C, n = s->dup_n;
    float *ln = s->dup_qkv + (size_t)n * 3 * C, *mean = ln + (size_t)n * C, *rstd = mean + n;
    layernorm_forward(ln, mean, rstd, s->dup_rows, P + w->ln1w, P + w->ln1b, n, C, s->eps);
    linear_forward(s->dup_qkv, ln, P + w->qkvw, P + w->qkvb, n, C, 3 * C);
}

// The MLP branch over N rows from row r0 of the block's activations: out = fc2(gelu(fc1(ln2(mid)))),
// the residual added by the caller.
static void mlp_forward(const Stack *s, int l, const float *P, size_t r0, int N, float *out) {
    const BlockOffsets *w = &s->w[l];
    const BlockActs *a = &s->acts[l];
    int C = s->C, H = s->hidden;
    float *ln2 = a->ln2 + r0 * C, *fc1 = a->fc1 + r0 * H, *gelu = a->gelu + r0 * H;
    layernorm_forward(ln2, a->ln2_mean + r0, a->ln2_rstd + r0, a->mid + r0 * C, P + w->ln2w, P + w->ln2b, N, C,
                      s->eps);
    linear_forward(fc1, ln2, P + w->fc1w, P + w->fc1b, N, C, H);
    gelu_forward_dgelu(gelu, fc1, (long)N * H);   // fc1 now holds gelu'(fc1)
    linear_forward(out, gelu, P + w->fc2w, P + w->fc2b, N, H, C);
}

// Block l's forward for images [b0, b0 + B) of the Ball in the step: every kernel of the forward works
// row by row, or per image (attention), so a pass over some images gives their rows the bits of a pass
// over all.
static void block_forward_images(const Stack *s, int l, const float *P, int b0, int B, int Ball, int T) {
    const BlockOffsets *w = &s->w[l];
    const BlockActs *a = &s->acts[l];
    int N = B * T, C = s->C;
    size_t r0 = (size_t)b0 * T;
    const float *x = s->res[l] + r0 * C;
    float *qkv = a->qkv + r0 * 3 * C, *atty = a->atty + r0 * C, *mid = a->mid + r0 * C, *out = s->res[l + 1] + r0 * C;
    block_front_forward(s, l, P, b0, B, Ball, T);
    attention_forward(atty, a->att + (size_t)b0 * s->NH * T * T, qkv, s->att_scratch, B, T, C, s->NH);
    linear_forward(mid, atty, P + w->projw, P + w->projb, N, C, C);
    branch_add(s, l, 0, mid, x, b0, B, Ball, T);
    mlp_forward(s, l, P, r0, N, out);
    branch_add(s, l, 1, out, mid, b0, B, Ball, T);
}

static void rows_gather_body(float *dst, const float *src, long lds, const int *rows, int n, int C, int add) {
    #pragma omp for schedule(static) nowait
    for (int i = 0; i < n; i++) {
        float *d = dst + (size_t)i * C;
        const float *x = src + (size_t)rows[i] * lds;
        if (add) for (int c = 0; c < C; c++) d[c] += x[c];
        else memcpy(d, x, (size_t)C * sizeof(float));
    }
}

static void rows_scatter_body(float *dst, long ldd, const float *src, const int *rows, int B, int T, int keep,
                              int C) {
    #pragma omp for schedule(static) nowait
    for (int b = 0; b < B; b++) {
        const int *r = rows + (size_t)b * keep;
        for (int t = b * T, i = 0; t < (b + 1) * T; t++) {
            float *d = dst + (size_t)t * ldd;
            if (i < keep && r[i] == t) memcpy(d, src + ((size_t)b * keep + i++) * C, (size_t)C * sizeof(float));
            else memset(d, 0, (size_t)C * sizeof(float));
        }
    }
}

// The last block's forward with s->keep_rows for images [b0, b0 + B): LayerNorm and qkv over every
// row, the attention of the kept rows' queries on every row's keys and values, the rest over the kept
// rows (see Stack). The queries are gathered into the pass's full rows of a->mid: the kept rows of the
// passes before end at or before this pass's first full row (b0 keep_n <= b0 T), and this pass's own
// are written by proj, after the attention.
static void block_forward_kept(const Stack *s, int l, const float *P, int b0, int B, int Ball, int T) {
    const BlockOffsets *w = &s->w[l];
    const BlockActs *a = &s->acts[l];
    int C = s->C, Nk = B * s->keep_n;
    size_t r0 = (size_t)b0 * T, k0 = (size_t)b0 * s->keep_n;
    const int *rows = s->keep_rows + k0;
    float *qkv = a->qkv + r0 * 3 * C, *atty = a->atty + k0 * C, *mid = a->mid + k0 * C, *out = s->res[l + 1] + k0 * C;
    float *q = a->mid + r0 * C;
    block_front_forward(s, l, P, b0, B, Ball, T);
    rows_gather(q, a->qkv, 3L * C, rows, Nk, C, 0);
    attention_forward_rows(atty, a->att + k0 * s->NH * T, q, qkv, s->att_scratch, B, s->keep_n, T, C, s->NH);
    linear_forward(mid, atty, P + w->projw, P + w->projb, Nk, C, C);
    rows_gather(mid, s->res[l], C, rows, Nk, C, 1);   // mid = proj + x, as residual_forward
    mlp_forward(s, l, P, k0, Nk, out);
    residual_forward(out, out, mid, (long)Nk * C);
}

void rows_gather(float *dst, const float *src, long lds, const int *rows, int n, int C, int add) {
    TEAM_RUN(rows_gather_body(dst, src, lds, rows, n, C, add));
}

void rows_scatter(float *dst, long ldd, const float *src, const int *rows, int B, int T, int keep, int C) {
    TEAM_RUN(rows_scatter_body(dst, ldd, src, rows, B, T, keep, C));
}

static int forced_images;   // stack_forward_force_images (0: the rule)

void stack_forward_force_images(int images) {
    __atomic_store_n(&forced_images, images < 0 ? 0 : images, __ATOMIC_RELAXED);
}

int stack_forward_images(int B, int T, int C, int hidden, long l2, int threads) {
    int forced = __atomic_load_n(&forced_images, __ATOMIC_RELAXED);
    if (forced > 0) return forced < B ? forced : B;
    if (threads != 1 || l2 <= 0) return B;
    long widest = 3L * C > hidden ? 3L * C : hidden;
    long per = l2 / 2 / (4L * T * widest);   // images whose widest activation fills half of L2
    // A pass reads the block's weights again (4 C (4 C + 2 hidden) bytes); with at least C rows it keeps
    // more bytes of activations in L2 than that.
    return per < 1 || per >= B || per * T < C ? B : (int)per;
}

void block_forward(const Stack *s, int l, const float *P, int B, int T) {
    int n = stack_forward_images(B, T, s->C, s->hidden, cpu_caches().l2, omp_get_num_threads());
    int kept = s->keep_rows && l == s->depth - 1;
    if (l == 0 && stack_dup_forward(s, B, T)) dup_shared_forward(s, P);
    for (int b0 = 0; b0 < B; b0 += n) {
        int nb = B - b0 < n ? B - b0 : n;
        if (kept) block_forward_kept(s, l, P, b0, nb, B, T);
        else block_forward_images(s, l, P, b0, nb, B, T);
    }
}

// The gradient reaching a branch's output: dx itself, or drop_scale * dx in sc->d_ln (free at the
// two points this is called: d_ln is next written by the branch's first-layer backward).
static const float *branch_grad(const Stack *s, int l, int branch, const BlockScratch *sc, const float *dx,
                                int B, int T) {
    if (!s->drop_scale) return dx;
    droppath_scale(sc->d_ln, dx, s->drop_scale + ((size_t)l * 2 + branch) * B, B, T, s->C);
    return sc->d_ln;
}

void linear_backward_groups(float *dinp, GradGroups G, size_t wo, size_t bo, const float *dout, const float *inp,
                            const float *weight, int N, int C, int OC, int param_acc) {
    if (dinp) linear_backward_input(dinp, dout, weight, N, C, OC);
    int rows = N / G.n;
    if (G.tree) {   // the weight summed in the tree inside the product; the bias per group, in the
                    // product's pass where it can (set, so not when adding onto a gradient)
        float *w[SUMTREE_MAX], *b[SUMTREE_MAX];
        int want = bo != NO_BIAS && !param_acc;
        for (int g = 0; g < G.n; g++) {
            w[g] = G.buf[g] + wo;
            if (want) b[g] = G.buf[g] + bo;
        }
        if (gemm_tn_tree_sums(OC, C, rows, dout, OC, inp, C, w, C, G.tree, want ? b : NULL) && want) return;
        for (int g = 0; bo != NO_BIAS && g < G.n; g++)
            column_sum(G.buf[g] + bo, dout + (size_t)g * rows * OC, rows, OC, param_acc);
        return;
    }
    for (int g = 0; g < G.n; g++)
        linear_backward_params(G.buf[g] + wo, bo == NO_BIAS ? NULL : G.buf[g] + bo, dout + (size_t)g * rows * OC,
                               inp + (size_t)g * rows * C, rows, C, OC, param_acc);
}

void layernorm_backward_groups(float *dinp, GradGroups G, size_t wo, size_t bo, const float *dout, const float *inp,
                               const float *weight, const float *mean, const float *rstd, int N, int C, int param_acc) {
    float *w[SUMTREE_MAX], *b[SUMTREE_MAX];   // (groups are at most SUMTREE_MAX, as linear_backward_groups's)
    for (int g = 0; g < G.n; g++) {
        w[g] = G.buf[g] + wo;
        b[g] = G.buf[g] + bo;
    }
    layernorm_backward_by_groups(dinp, w, b, dout, inp, weight, mean, rstd, G.n, N / G.n, C, param_acc);
}

static int is_linear_weight(const MaeTensor *t) {
    size_t len = strlen(t->name);
    return t->ndim >= 2 && len >= 7 && !strcmp(t->name + len - 7, ".weight");
}

void grad_groups_sum(GradGroups G, const MaeTensor *tensors, int ntensors) {
    for (int i = 0; i < ntensors; i++)
        if (!is_linear_weight(&tensors[i])) sumtree_apply(G.tree, G.buf, tensors[i].offset, tensors[i].numel);
}

// Each gradient group's rows of the first block's shared-row backward (Stack.dup_src): its images' own
// rows, then the dup_n shared rows. A gets their qkv gradients (a shared row's: the sum over the
// group's rows that share it, in ascending row order), X their inputs, dxd zeros.
static void dup_sums_body(const Stack *s, float *A, float *X, float *dxd, const float *dqkv, int B, int T, int groups) {
    int C = s->C, W3 = 3 * C, Bg = B / groups, own = Bg * s->dup_own, ng = own + s->dup_n, nblk = (W3 + 127) / 128;
    #pragma omp for schedule(static) nowait
    for (int task = 0; task < groups * nblk; task++) {   // (group, 128 columns): each column's sums in row order
        int g = task / nblk, c0 = task % nblk * 128, nc = W3 - c0 < 128 ? W3 - c0 : 128, j = 0;
        float *Ag = A + (size_t)g * ng * W3, *shared = Ag + (size_t)own * W3;
        for (int u = 0; u < s->dup_n; u++) memset(shared + (size_t)u * W3 + c0, 0, (size_t)nc * sizeof(float));
        for (int r = g * Bg * T; r < (g + 1) * Bg * T; r++) {
            const float *d = dqkv + (size_t)r * W3 + c0;
            int u = s->dup_src[r];
            if (u < 0) {
                memcpy(Ag + (size_t)j++ * W3 + c0, d, (size_t)nc * sizeof(float));
            } else {
                float *o = shared + (size_t)u * W3 + c0;
                for (int i = 0; i < nc; i++) o[i] += d[i];
            }
        }
    }
    #pragma omp for schedule(static) nowait
    for (int i = 0; i < groups * ng; i++) {
        int g = i / ng, k = i % ng;
        const float *src = k < own ? s->res[0] + (size_t)s->dup_own_rows[(size_t)g * own + k] * C
                                   : s->dup_rows + (size_t)(k - own) * C;
        memcpy(X + (size_t)i * C, src, (size_t)C * sizeof(float));
        memset(dxd + (size_t)i * C, 0, (size_t)C * sizeof(float));
    }
}

// The input gradients of dup_sums_body's rows: an own row's added to dx at its row, a shared row's into
// Stack.dup_grad (group by group).
static void dup_spread_body(const Stack *s, float *dx, const float *dxd, int B, int groups) {
    int C = s->C, own = B / groups * s->dup_own, ng = own + s->dup_n;
    #pragma omp for schedule(static) nowait
    for (int i = 0; i < groups * ng; i++) {
        int g = i / ng, k = i % ng;
        const float *d = dxd + (size_t)i * C;
        if (k < own) {
            float *o = dx + (size_t)s->dup_own_rows[(size_t)g * own + k] * C;
            for (int c = 0; c < C; c++) o[c] += d[c];
        } else {
            memcpy(s->dup_grad + ((size_t)g * s->dup_n + k - own) * C, d, (size_t)C * sizeof(float));
        }
    }
}

// qkv's and LayerNorm 1's backward (sc->d_qkv holds qkv's output gradient; LayerNorm 1's input gradient
// is added to dx): over every row, or, in a first block that shares rows, over each group's own and
// shared rows (Stack.dup_src). The forward kept LayerNorm 1 of the own rows only there: it is computed
// again, on the rows the backward takes (bitwise, row by row).
static void block_front_backward(const Stack *s, int l, const float *P, GradGroups G, const BlockScratch *sc,
                                 float *dx, int B, int T, int param_acc) {
    const BlockOffsets *w = &s->w[l];
    const BlockActs *a = &s->acts[l];
    int N = B * T, C = s->C;
    if (l == 0 && stack_dup_backward(s, B, T, G.n)) {
        int Nd = G.n * (B / G.n * s->dup_own + s->dup_n);
        float *A = sc->d_gelu, *X = sc->d_atty, *dxd = sc->d_small;   // free once the attention's backward ran
        TEAM_RUN(dup_sums_body(s, A, X, dxd, sc->d_qkv, B, T, G.n));
        layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, X, P + w->ln1w, P + w->ln1b, Nd, C, s->eps);
        linear_backward_groups(sc->d_ln, G, w->qkvw, w->qkvb, A, a->ln1, P + w->qkvw, Nd, C, 3 * C, param_acc);
        layernorm_backward_groups(dxd, G, w->ln1w, w->ln1b, sc->d_ln, X, P + w->ln1w, a->ln1_mean, a->ln1_rstd, Nd,
                                  C, param_acc);
        TEAM_RUN(dup_spread_body(s, dx, dxd, B, G.n));
        return;
    }
    if (l == 0 && stack_dup_forward(s, B, T))
        layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, s->res[0], P + w->ln1w, P + w->ln1b, N, C, s->eps);
    linear_backward_groups(sc->d_ln, G, w->qkvw, w->qkvb, sc->d_qkv, a->ln1, P + w->qkvw, N, C, 3 * C, param_acc);
    layernorm_backward_groups(dx, G, w->ln1w, w->ln1b, sc->d_ln, s->res[l], P + w->ln1w, a->ln1_mean, a->ln1_rstd, N,
                              C, param_acc);
}

// The MLP branch's backward over N rows, out = mid + fc2(gelu(fc1(ln2(mid)))): dout is d(branch output),
// and LayerNorm 2's input gradient is added to dx (which may be dout).
static void mlp_backward(const Stack *s, int l, const float *P, GradGroups G, const BlockScratch *sc,
                         const float *dout, float *dx, int N, int param_acc) {
    const BlockOffsets *w = &s->w[l];
    const BlockActs *a = &s->acts[l];
    int C = s->C, H = s->hidden, rows = N / G.n;
    linear_backward_groups(sc->d_gelu, G, w->fc2w, w->fc2b, dout, a->gelu, P + w->fc2w, N, H, C, param_acc);
    // GELU's input gradient in place of its output's (a->fc1 holds gelu' since the forward), and fc1's
    // bias gradient as its column sums (docs/performance.md, "GELU's derivative kept from the forward").
    for (int g = 0; g < G.n; g++) {
        size_t r0 = (size_t)g * rows * H;
        gelu_backward_set_colsum(sc->d_gelu + r0, G.buf[g] + w->fc1b, sc->d_part, a->fc1 + r0, sc->d_gelu + r0,
                                 rows, H, param_acc);
    }
    linear_backward_groups(sc->d_ln, G, w->fc1w, NO_BIAS, sc->d_gelu, a->ln2, P + w->fc1w, N, C, H, param_acc);
    layernorm_backward_groups(dx, G, w->ln2w, w->ln2b, sc->d_ln, a->mid, P + w->ln2w, a->ln2_mean, a->ln2_rstd, N, C,
                              param_acc);
}

// The last block's backward with s->keep_rows (see Stack): the MLP branch and proj over the kept rows,
// the attention's from the kept rows' queries (gathered again into sc->d_gelu, free after the MLP's
// backward; their gradient in sc->d_atty, free after proj's), then qkv's and LayerNorm 1's over every
// row, with the query gradient scattered into qkv's (zero at the other rows).
static void block_backward_kept(const Stack *s, int l, const float *P, GradGroups G, const BlockScratch *sc,
                                float *dx, int B, int T, int param_acc) {
    const BlockOffsets *w = &s->w[l];
    const BlockActs *a = &s->acts[l];
    int C = s->C, Nk = B * s->keep_n;
    float *dk = sc->d_atty;   // d(output) at the kept rows; after LayerNorm 2's backward, d(mid) there
    mlp_backward(s, l, P, G, sc, dk, dk, Nk, param_acc);
    rows_scatter(dx, C, dk, s->keep_rows, B, T, s->keep_n, C);   // the residual's part of d(input)
    linear_backward_groups(sc->d_ln, G, w->projw, w->projb, dk, a->atty, P + w->projw, Nk, C, C, param_acc);
    float *q = sc->d_gelu, *dq = sc->d_atty;
    rows_gather(q, a->qkv, 3L * C, s->keep_rows, Nk, C, 0);
    attention_backward_rows_set(dq, sc->d_qkv, sc->d_att, sc->d_ln, q, a->qkv, a->att, sc->d_small, B, s->keep_n, T,
                                C, s->NH);
    rows_scatter(sc->d_qkv, 3L * C, dq, s->keep_rows, B, T, s->keep_n, C);
    block_front_backward(s, l, P, G, sc, dx, B, T, param_acc);
}

void block_backward(const Stack *s, int l, const float *P, GradGroups G, const BlockScratch *sc, float *dx,
                    int B, int T, int param_acc) {
    if (s->keep_rows && l == s->depth - 1) {
        block_backward_kept(s, l, P, G, sc, dx, B, T, param_acc);
        return;
    }
    const BlockOffsets *w = &s->w[l];
    const BlockActs *a = &s->acts[l];
    int N = B * T, C = s->C;
    // MLP branch: out = mid + fc2(gelu(fc1(ln2(mid)))).
    mlp_backward(s, l, P, G, sc, branch_grad(s, l, 1, sc, dx, B, T), dx, N, param_acc);
    // Attention branch: mid = x + proj(attn(ln1(x))).
    const float *dout = branch_grad(s, l, 0, sc, dx, B, T);
    linear_backward_groups(sc->d_atty, G, w->projw, w->projb, dout, a->atty, P + w->projw, N, C, C, param_acc);
    attention_backward_set(sc->d_qkv, sc->d_att, sc->d_atty, a->qkv, a->att, sc->d_small, B, T, C, s->NH);
    block_front_backward(s, l, P, G, sc, dx, B, T, param_acc);
}

void stack_forward(const Stack *s, const float *P, int B, int T) {
    if (team_mode) {   // on the caller's team (core/model.c: mae_forward), or on the one opened below
        for (int l = 0; l < s->depth; l++) block_forward(s, l, P, B, T);
        return;
    }
    #pragma omp parallel
    {
        team_begin();
        stack_forward(s, P, B, T);
        team_end();
    }
}

void stack_backward(const Stack *s, const float *P, GradGroups G, const BlockScratch *sc, float *dx, int B, int T,
                    int param_acc) {
    if (team_mode) {   // on the caller's team (core/model.c: mae_backward), or on the one opened below
        for (int l = s->depth - 1; l >= 0; l--) {
            block_backward(s, l, P, G, sc, dx, B, T, param_acc);
            if (s->block_done && omp_get_num_threads() == 1)
                s->block_done(s->block_done_ctx, s->unit_base + s->depth - 1 - l);
        }
        return;
    }
    #pragma omp parallel
    {
        team_begin();
        stack_backward(s, P, G, sc, dx, B, T, param_acc);
        team_end();
    }
}

static void patches_gather_body(float *cols, const float *images, const int *ids_keep, int B, int K, int S, int P,
                                int C) {
    int g = S / P, cpp = C * P * P;
    #pragma omp for schedule(static) nowait
    for (int r = 0; r < B * K; r++) {
        int b = r / K, l = ids_keep[r], gy = l / g, gx = l % g;
        float *col = cols + (size_t)r * cpp;
        for (int ch = 0; ch < C; ch++)
            for (int py = 0; py < P; py++)
                for (int px = 0; px < P; px++)
                    col[(ch * P + py) * P + px] = images[(((size_t)b * S + gy * P + py) * S + gx * P + px) * C + ch];
    }
}

void patches_gather(float *cols, const float *images, const int *ids_keep, int B, int K, int S, int P, int C) {
    TEAM_RUN(patches_gather_body(cols, images, ids_keep, B, K, S, P, C));
}

static void tokens_forward_body(float *x0, const float *patch_emb, const float *cls, const float *pos,
                                const int *ids_keep, int B, int K, int D) {
    int T = 1 + K;
    #pragma omp for schedule(static) nowait
    for (int r = 0; r < B * T; r++) {
        int b = r / T, t = r % T;
        float *row = x0 + (size_t)r * D;
        if (t == 0) for (int i = 0; i < D; i++) row[i] = cls[i] + pos[i];
        else {
            int l = ids_keep[(size_t)b * K + t - 1];
            const float *e = patch_emb + ((size_t)b * K + t - 1) * D, *pe = pos + (size_t)(1 + l) * D;
            for (int i = 0; i < D; i++) row[i] = e[i] + pe[i];
        }
    }
}

void tokens_forward(float *x0, const float *patch_emb, const float *cls, const float *pos, const int *ids_keep,
                    int B, int K, int D) {
    TEAM_RUN(tokens_forward_body(x0, patch_emb, cls, pos, ids_keep, B, K, D));
}

// Visible positions are distinct within an image, so pos rows can be split across threads: threads
// own column blocks of 16, and every element sums images in ascending order.
static void tokens_backward_body(float *gcls, float *gpos, const float *de, const int *ids_keep, int B, int K, int D) {
    int T = 1 + K;
    #pragma omp for schedule(static) nowait
    for (int i0 = 0; i0 < D; i0 += 16) {
        int i1 = i0 + 16 < D ? i0 + 16 : D;
        for (int b = 0; b < B; b++) {
            const float *row = de + (size_t)b * T * D;
            for (int i = i0; i < i1; i++) gcls[i] += row[i];
            if (!gpos) continue;
            for (int i = i0; i < i1; i++) gpos[i] += row[i];
            for (int j = 0; j < K; j++) {
                float *g = gpos + (size_t)(1 + ids_keep[(size_t)b * K + j]) * D;
                const float *d = row + (size_t)(1 + j) * D;
                for (int i = i0; i < i1; i++) g[i] += d[i];
            }
        }
    }
}

void tokens_backward(float *gcls, float *gpos, const float *de, const int *ids_keep, int B, int K, int D) {
    TEAM_RUN(tokens_backward_body(gcls, gpos, de, ids_keep, B, K, D));
}

void vit_init_tensors(const MaeTensor *tensors, int nt, float *params, int grid, Rng *rng) {
    for (int i = 0; i < nt; i++) {
        const MaeTensor *t = &tensors[i];
        float *p = params + t->offset;
        const char *n = t->name;
        size_t len = strlen(n);
        int ends_weight = len >= 7 && !strcmp(n + len - 7, ".weight");
        if (!strcmp(n, "pos_embed") || !strcmp(n, "decoder_pos_embed")) mae_sincos_pos_embed(p, grid, t->shape[2]);
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
