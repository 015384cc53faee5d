// The ViT pieces shared by the masked autoencoder (core/model.c) and the classifier
// (core/classifier.c): a stack of transformer blocks (forward, backward, optional drop path) laid
// out in an activation arena, and the encoder input (patch gather, CLS + position rows) with its
// backward. Each caller owns its parameter table; the blocks find their tensors by name.
//
// Block (timm / MAE): x = x + dp(proj(attn(norm1(x)))); x = x + dp(fc2(gelu(fc1(norm2(x))))), where
// dp is drop path (stochastic depth): with Stack.drop_scale set, each branch of image b in block l
// is multiplied by drop_scale[(l * 2 + branch) * B + b] (0 when dropped, 1 / keep_prob when kept);
// with drop_scale NULL the branch is added as it is (the MAE's path, unchanged).
#ifndef VITMAE_ENCODER_H
#define VITMAE_ENCODER_H
#include <stddef.h>
#include "core/config.h"
#include "kernels/sumtree.h"
#include "core/posembed.h"
#include "core/rng.h"

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
    float *fc1;                         // [N, Hd] pre-GELU; after the GELU forward, gelu' of it
    float *gelu;                        // [N, Hd]
} BlockActs;

// Backward scratch shared by every block of a model (sizes for the widest stack, N = B * T rows):
// d_ln [N, W], d_qkv [N, 3W], d_att [B, NH, T, T], d_atty [N, W], d_gelu [N, Hd] (the GELU's output gradient,
// then in its place its input's), d_small [N, W], d_part [gelu_colsum_scratch(N, Hd)] (kernels/gelu.h).
typedef struct { float *d_ln, *d_qkv, *d_att, *d_atty, *d_gelu, *d_small, *d_part; } BlockScratch;

// Called after a block's backward, with the block's place in the backward's order (its `unit`).
typedef void (*BlockDoneFn)(void *ctx, int unit);

// One transformer stack (encoder or decoder).
typedef struct {
    int depth, C, NH, hidden;
    float eps;               // LayerNorm eps
    BlockOffsets *w;         // [depth]
    BlockActs *acts;         // [depth]
    float **res;             // [depth + 1] residual streams [N, C]; res[0] input, res[depth] output
    float *att_scratch;      // [N, C] attention's per-head K^T (forward)
    const float *drop_scale; // NULL, or [depth][2][B] drop-path factors (see the file comment)
    BlockDoneFn block_done;  // NULL, or called by a one-thread team after block l's backward with unit
    void *block_done_ctx;    //   unit_base + depth - 1 - l (stack_backward)
    int unit_base;
    // NULL, or the rows whose output the last block computes: keep_n of each image's T, as full-row
    // indices (b * T + t), ascending. The last block then runs LayerNorm and qkv on every row, the
    // attention for the kept rows' queries on every row's keys and values, and the rest (proj, the
    // residual adds, the MLP) on the kept rows only, in the kept-row layout [B * keep_n, C]: res[depth]
    // and the last block's atty, mid, ln2 (with its mean and rstd), fc1 and gelu hold the kept rows, one
    // after another, and its att the kept rows' maps ([B, NH, keep_n, T]). Its backward takes d(output)
    // at the kept rows in sc->d_atty ([B * keep_n, C], used up) instead of dx, and writes dx (the
    // MAE decoder in a training step: core/model.h, mae_train_forward; docs/design.md, "The decoder's
    // last block on the removed patches"). No drop path with it.
    const int *keep_rows;
    int keep_n;
    // NULL, or rows of the first block's input that equal one of a few shared rows (the MAE decoder's
    // mask tokens, mask_token + pos, in a training step): dup_src[r] (r < B T) is -1 for a row of its
    // own, else the index u < dup_n of the shared row dup_rows[u] ([dup_n, C]) that row r equals,
    // bitwise. Every image has dup_own rows of its own, listed in dup_own_rows ([B dup_own], full-row
    // indices, ascending). Where that saves rows (stack_dup_forward / stack_dup_backward), the first
    // block's LayerNorm 1 and qkv run on each image's own rows and on each shared row once, and its qkv
    // rows are copied out to the rows that share them. Its backward then sums each gradient group's
    // qkv gradients of the rows that share a row, runs qkv's and LayerNorm 1's backward on the group's
    // own rows and its dup_n shared rows, and adds the own rows' input gradient to dx; at the shared
    // rows dx keeps the residual's part only, and dup_grad ([groups, dup_n, C]) gets, for each group
    // and shared row, the LayerNorm 1 part summed over the rows that share it (docs/design.md, "The
    // decoder's mask tokens once"). The bits of every forward row are those of the plain block's.
    const int *dup_src, *dup_own_rows;
    const float *dup_rows;
    int dup_n, dup_own;
    float *dup_grad;
    float *dup_qkv;          // [T (4C + 2)]: the shared rows' qkv, LayerNorm 1, mean, rstd (STACK_TRAIN; dup_n <= T)
} Stack;

// Walks an arena: with base == NULL it only counts floats, otherwise it hands out pointers
// (64-byte aligned pieces).
typedef struct { float *base; size_t used; } Carver;
// A memory estimate past this many bytes (an exbibyte) is beyond any machine: the models' bytes_needed
// give their bound instead of a size_t sum that could wrap past 2^64 (core/model.c).
#define BYTES_BEYOND_ANY 0x1p60
float *carve(Carver *c, size_t n);

void stack_setup(Stack *s, int depth, int C, int NH, int hidden, float eps);
// Allocates the per-block tables (w, acts, res); 0 ok, -1 out of memory. stack_free releases them.
int  stack_alloc(Stack *s);
void stack_free(Stack *s);
// What stack_carve lays out: STACK_TRAIN, every block's activations (the backward reads them);
// STACK_FORWARD, one set of block activations that every block overwrites in turn (a stack that never
// runs backward: inference needs 1 / depth of the activations; docs/design.md, "Forward-only models").
// Every residual stream has its own rows in both.
enum { STACK_TRAIN = 0, STACK_FORWARD = 1 };
// Carves residual streams and block activations for Bmax images of T tokens, as `kind` says.
void stack_carve(Carver *cv, Stack *s, int Bmax, int T, int kind);
// Offset of tensor `name` in a parameter table; aborts when absent (a layout bug, not bad input).
size_t tensor_offset(const MaeTensor *t, int nt, const char *name);
// Fills s->w from the table's "<prefix>.<i>.*" tensors.
void stack_find_weights(Stack *s, const MaeTensor *t, int nt, const char *prefix);

// The parameter-gradient buffers of a backward. With n gradient groups (docs/distributed.md) every
// activation's rows are cut into n equal ranges, one per group (its images), and group g's parameter
// gradients, the sums over its rows, land in buf[g]: bitwise what a backward of that group's images
// alone would leave there. Everything row by row (the products' input gradients, LayerNorm's and
// GELU's, attention per image) runs over all rows at once: a row's bits do not depend on the rows
// computed with it. n = 1: one buffer, the plain backward.
// With a tree (kernels/sumtree.h), the groups' gradients are also summed in it: the Linear weights'
// inside their products (gemm_tn_tree: only the tree's live buffers are written), every other tensor's
// per group and then by grad_groups_sum.
typedef struct { float *const *buf; int n; const SumTree *tree; } GradGroups;
// The tree's adds over every tensor that is not a Linear weight (ndim >= 2, named *.weight), after the
// backward wrote each group's part.
void grad_groups_sum(GradGroups G, const MaeTensor *tensors, int ntensors);

// Linear backward (kernels/linear.h) with the parameter gradients per group: dinp = dout . W over the
// N rows (skipped when dinp is NULL), then group g's dweight (at offset wo of buf[g]) and dbias (at bo;
// NO_BIAS: none) from its N / n rows.
#define NO_BIAS ((size_t)-1)
void linear_backward_groups(float *dinp, GradGroups G, size_t wo, size_t bo, const float *dout, const float *inp,
                            const float *weight, int N, int C, int OC, int param_acc);
// LayerNorm backward (kernels/layernorm.h) with group g's dweight (offset wo) and dbias (bo) from its rows.
void layernorm_backward_groups(float *dinp, GradGroups G, size_t wo, size_t bo, const float *dout, const float *inp,
                               const float *weight, const float *mean, const float *rstd, int N, int C, int param_acc);

// Block l: s->res[l] -> s->res[l + 1] for B images of T tokens, in passes of stack_forward_images(B, T,
// C, hidden, this CPU's L2, the team's threads) images, each pass through the whole block: on one
// thread (a worker, or a 1-thread run), a pass's activations are still in L2 when the block's next
// kernel reads them (docs/performance.md, "The forward in passes of a few images"). The bits do not
// depend on the passes: every forward kernel works row by row or per image.
void block_forward(const Stack *s, int l, const float *P, int B, int T);
// Images per pass: B on a team of more than one thread or where l2 is unknown; else the most images
// whose widest activation (T rows of max(3 C, hidden) floats each) fits half of l2, or B when that is
// none, B or more, or fewer than C rows (a pass reads the block's weights again).
// stack_forward_force_images(n > 0) makes it min(n, B) on any team (tests, and `vitmae` for
// VITMAE_FORWARD_IMAGES=n: cmd/main.c, docs/interface.md); 0 restores the rule.
int stack_forward_images(int B, int T, int C, int hidden, long l2, int threads);
void stack_forward_force_images(int images);
// On entry dx holds d(block output) (for the last block with keep_rows, sc->d_atty holds it: see Stack);
// on exit dx holds d(block input). Parameter grads accumulate into G's
// buffers (per group, B / G.n images each), or are set there when param_acc is 0 (kernels/ops.h).
void block_backward(const Stack *s, int l, const float *P, GradGroups G, const BlockScratch *sc, float *dx,
                    int B, int T, int param_acc);

// Whether the first block's forward / backward (with G.n gradient groups) shares rows (Stack.dup_src):
// only where the shared rows are fewer than the rows that share them, B (T - dup_own) in the forward and
// B / groups (T - dup_own) in each group's backward, and where the block's scratch holds the rows' qkv
// (dup_own 3 C <= T hidden; the backward's rows times 3 C <= B T hidden: an MLP narrower than 3 C can
// fail these).
int stack_dup_forward(const Stack *s, int B, int T);
int stack_dup_backward(const Stack *s, int B, int T, int groups);

// Rows of a full layout gathered into the kept-row layout (see Stack.keep_rows): dst[i] = src[rows[i]]
// (add: dst[i] += src[rows[i]]) for the n rows of C floats (dst's rows C apart, src's lds). And back:
// dst [B * T rows, ldd apart] gets src's row i at rows[i] (keep of each image's T, ascending within the
// image) and zeros in every other row, C floats of each. Both team-aware (kernels/team.h).
void rows_gather(float *dst, const float *src, long lds, const int *rows, int n, int C, int add);
void rows_scatter(float *dst, long ldd, const float *src, const int *rows, int B, int T, int keep, int C);

// Every block in turn, forward (res[0] -> res[depth]) or backward (blocks depth-1 .. 0, dx as in
// block_backward), inside one OpenMP parallel region whose threads share each kernel's loops
// (kernels/team.h): the same results as calling the blocks one by one. Called inside a team already
// (team mode), they run the blocks on that team. On a team of one thread, the backward calls
// s->block_done (when set) after each block.
void stack_forward(const Stack *s, const float *P, int B, int T);
void stack_backward(const Stack *s, const float *P, GradGroups G, const BlockScratch *sc, float *dx, int B, int T,
                    int param_acc);

// Encoder input. cols [B*K, C*P*P]: the patches ids_keep [B, K] of images [B, S, S, C], each in
// conv weight order (c, py, px). patches_gather and tokens_forward are team-aware (kernels/team.h).
void patches_gather(float *cols, const float *images, const int *ids_keep, int B, int K, int S, int P, int C);
// x0 [B*(1+K), D]: row 0 of each image cls + pos[0], row 1 + j patch_emb[b, j] + pos[1 + ids_keep[b, j]].
void tokens_forward(float *x0, const float *patch_emb, const float *cls, const float *pos, const int *ids_keep,
                    int B, int K, int D);
// Backward of tokens_forward: gcls [D] and gpos [1+L, D] (NULL: frozen) += from de [B*(1+K), D]
// (images summed in ascending order; threads own column blocks). Team-aware (kernels/team.h).
void tokens_backward(float *gcls, float *gpos, const float *de, const int *ids_keep, int B, int K, int D);

// MAE initialisation of the tensors of a table, in table order: xavier-uniform weights of >= 2 dims
// (patch weight as [D, C*P*P]), zero biases, LayerNorm 1/0, cls and mask tokens N(0, 0.02),
// pos_embed / decoder_pos_embed the 2D sin-cos table of a grid x grid image.
void vit_init_tensors(const MaeTensor *t, int nt, float *params, int grid, Rng *rng);
#endif
