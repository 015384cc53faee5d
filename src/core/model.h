// The masked autoencoder of facebookresearch/mae (MaskedAutoencoderViT), forward and backward.
//
// Layouts (row-major):
//   images     [B, H, W, C]   normalised pixels ((x - mean[c]) / std[c]), H = W = img_size
//   ids_keep   [B, K]         visible patch indices (0..L-1) in the order MAE keeps them
//                             (ascending noise), K = len_keep, the same for every image of a batch
//   patch vec  [P*P*C]        index (py * P + px) * C + c   (targets and predictions)
//   pred       [B, L, P*P*C]  decoder predictions for every patch (CLS dropped), model units
//   attention  [B, heads, T, T] softmax probabilities of one encoder layer, T = 1 + K, token 0 = CLS
//
// Memory: one parameter buffer (tensors in MAE state_dict order, see mae_param_table), a twin
// gradient buffer, and one activation arena sized once by mae_init for (max_batch, L): no
// allocation happens in mae_forward / mae_backward.
//
// Threads: mae_forward, mae_forward_encoder and mae_backward each open one OpenMP region whose threads
// share every kernel's loops (kernels/team.h); called inside another region they run on one thread.
// Results do not depend on the thread count.
#ifndef VITMAE_MODEL_H
#define VITMAE_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "core/config.h"
#include "core/posembed.h"
#include "core/rng.h"
#include "kernels/sumtree.h"

// The config (MaeConfig, presets, checks, JSON) and the parameter table (MaeTensor): core/config.h.
// Bytes a training run of (cfg, max_batch) holds: mae_train_shared_bytes, activations, masks.
size_t mae_bytes_needed(const MaeConfig *cfg, int max_batch);
// What no batch changes and threads as workers share: the parameters, their gradients and AdamW's two
// moments, and the packed copies of the weights a training step keeps (kernels/gemm.h: two floats a
// parameter, at most GEMM_WEIGHT_COPIES_MAX_BYTES).
size_t mae_train_shared_bytes(const MaeConfig *cfg);
// The memory rule of every command: a run of batch B that needs mae_bytes_needed(cfg, B) plus
// extra_per_image bytes for each image is refused, before anything is allocated, when that is more
// than 90% of physical memory. 0 when it fits (or memory is unknown); -1 and err
// "batch B at SxS needs N bytes (G GiB, of which P GiB for the N parameters, their gradients, AdamW
// moments and packed copies at any batch); this machine has H GiB" when not.
int mae_memory_check(const MaeConfig *cfg, int B, size_t extra_per_image, char *err, size_t errlen);
// The bytes of a forward-only model (mae_create_forward): parameters and its smaller arena.
size_t mae_bytes_needed_forward(const MaeConfig *cfg, int max_batch);
// The bytes of an encoder-only model (mae_create_encoder): mae_bytes_needed_forward's less the
// decoder's parameters, every activation of the decoder and the loss, and the mask rows only they read.
size_t mae_bytes_needed_encoder(const MaeConfig *cfg, int max_batch);
// The rule itself, for need bytes at batch B of S x S images (inference's checks use it: infer/infer.h).
int mae_memory_check_bytes(size_t need, int B, int S, char *err, size_t errlen);
// The rule's test alone: 1 when need bytes pass 90% of physical memory (*have: the machine's bytes,
// 0 when unknown, then never), for checks that say their own line (probe's feature matrices).
int mae_memory_exceeds(size_t need, long *have);

typedef struct Mae Mae;   // defined in model.c; fields below are read through accessors

// Allocates parameters (zero), gradients (zero) and the activation arena for batches up to
// max_batch with any len_keep <= L. Returns NULL and a reason in err on failure.
Mae *mae_create(const MaeConfig *cfg, int max_batch, char *err, size_t errlen);
// A model for inference (reconstruct, eval: the commands that run the decoder): mae_forward and
// mae_forward_encoder give bitwise what mae_create's model gives, from no gradient buffer, no backward
// scratch and one block's activations per stack that every block overwrites (docs/design.md,
// "Forward-only models"). It has no attention maps to give (mae_attention: NULL; mae_encoder_block
// gives one layer's at a time) and its mae_grads is NULL; calling a backward on it is a bug and aborts.
Mae *mae_create_forward(const MaeConfig *cfg, int max_batch, char *err, size_t errlen);
// The same over parameters the caller has (mae_num_params(cfg) floats from malloc or calloc, e.g. a
// checkpoint's Checkpoint.params): the model takes them as they are, without a copy, and frees them
// in mae_free. On failure (NULL) they stay the caller's.
Mae *mae_create_forward_with(const MaeConfig *cfg, int max_batch, float *params, char *err, size_t errlen);
// A forward-only model of the encoder alone, for the commands that read the encoder only (`vitmae
// attention`, `embed`, `probe`): mae_forward_encoder, mae_encoder_start / mae_encoder_block and their
// results (mae_latent, mae_block_output, the maps) bitwise mae_create_forward's, from an arena with
// nothing of the decoder (docs/design.md, "Forward-only models"), and the encoder's parameters alone:
// the tensors before the decoder's (mae_encoder_model_table in core/config.h, a prefix of the same
// layout), which mae_tensors lists (mae_tensor: NULL for a decoder's name). mae_pred and mae_target
// give NULL; running the decoder on it (mae_forward, mae_train_forward) or a backward is a bug and
// aborts. _with: over the caller's parameters (that prefix's floats, e.g. ckpt_load_encoder's
// Checkpoint.params), as mae_create_forward_with.
Mae *mae_create_encoder(const MaeConfig *cfg, int max_batch, char *err, size_t errlen);
Mae *mae_create_encoder_with(const MaeConfig *cfg, int max_batch, float *params, char *err, size_t errlen);
// A second model over base's parameters (read, never copied; base must outlive it) with an activation
// arena of its own for batches up to max_batch and no gradient buffer of its own: for a worker thread
// that runs its own gradient groups while others run theirs (dist/workers.h) through mae_train_forward,
// mae_group_losses and mae_backward_set_groups (or mae_use_grads first, then mae_backward_set).
// NULL and a reason in err on failure.
Mae *mae_create_sharing(Mae *base, int max_batch, char *err, size_t errlen);
void mae_free(Mae *m);
const MaeConfig *mae_config(const Mae *m);
float *mae_params(Mae *m);           // [mae_num_params]
float *mae_grads(Mae *m);            // [mae_num_params], same layout
const MaeTensor *mae_tensors(const Mae *m, int *count);
float *mae_tensor(Mae *m, const char *name);   // pointer into params, NULL if unknown

// MAE initialisation: xavier-uniform Linear weights and patch weight (as [D, C*P*P]), zero
// biases, LayerNorm 1/0, cls and mask tokens N(0, 0.02), 2D sin-cos position tables.
void mae_init_weights(Mae *m, Rng *rng);

// Masking (mae_masking_from_noise, the seeded masks, the mask-ratio rule): core/masking.h.

// Optional wall-clock seconds per phase of mae_forward / mae_backward, ADDED to the struct's fields
// while timing is enabled (mae_set_timings with a non-NULL pointer). Timing reads a clock between
// phases only; it changes no result.
typedef struct {
    double patch_embed;   // gather visible patches, patch projection, + pos / cls
    double encoder;       // encoder blocks and final norm
    double decoder;       // decoder_embed, token un-shuffle, decoder blocks, decoder_norm, decoder_pred
    double loss;          // targets (norm-pix) and the masked MSE
    double backward_decoder;   // loss gradient down to the encoder output
    double backward_encoder;   // encoder blocks, pos / cls, patch projection
} MaeTimings;

// Full forward: encoder on CLS + visible patches, decoder, loss. Returns the mean over removed
// patches of the per-patch MSE (0 when no patch is removed); mae_pred holds every patch's prediction.
float mae_forward(Mae *m, const float *images, const int *ids_keep, int B, int len_keep);
// The forward of a training step: the same loss, bitwise, and what the backward needs. Nothing the
// loss reads depends on the decoder's last block's output at the CLS and visible rows, so that block
// (past its attention), decoder_norm and decoder_pred run on the removed patches' rows only
// (docs/design.md, "The decoder's last block on the removed patches"): mae_pred then holds
// [B, L - len_keep, P*P*C], each image's removed patches in ascending order, bitwise those rows of
// mae_forward's. With len_keep == L it is mae_forward.
float mae_train_forward(Mae *m, const float *images, const int *ids_keep, int B, int len_keep);
// Backward of the last mae_train_forward: ADDS d(loss)/d(param) into the gradient buffer (zero it
// with mae_zero_grads first). Frozen position embeddings get no gradient. After mae_forward_encoder
// (no loss) or a forward with no removed patch the gradient is 0; after mae_forward with removed
// patches it is a caller's bug (the program stops with an internal error).
void mae_backward(Mae *m);
// The same gradient SET into the buffer (every element written, none read; frozen position
// embeddings' get 0): bitwise what mae_zero_grads then mae_backward leave there, without the pass that
// zeroes the whole buffer first (docs/performance.md, "The gradient set, not zeroed and added to").
void mae_backward_set(Mae *m);
void mae_zero_grads(Mae *m);
// Points the gradient buffer at grads (mae_num_params floats, owned by the caller) and returns the
// buffer used until now: backward then adds there (the gradient groups of src/dist/dist.h each land
// in their own buffer without a copy). Give the model its own buffer back before mae_free.
float *mae_use_grads(Mae *m, float *grads);
void mae_set_timings(Mae *m, MaeTimings *t);   // NULL: timing off (the default)
// Gradient groups at once (docs/distributed.md, "Groups at once"): after mae_train_forward of the images
// of n groups (B / n consecutive images each, n dividing B), group g's loss and gradient are bitwise what
// mae_train_forward and mae_backward_set of its images alone would give: losses[g], and its gradient SET
// into grads[g] (n buffers of mae_num_params floats; the model's own buffer is not touched). With a
// tree (kernels/sumtree.h, tree->n = n), the gradients are then summed in it: the tree's live buffers
// hold bitwise what sumtree_apply over the whole per-group gradients leaves there (the others hold
// scratch).
void mae_group_losses(const Mae *m, int n, float *losses);
void mae_backward_set_groups(Mae *m, float *const *grads, int n, const SumTree *tree);
// The backward's blocks as units in the order it finishes them: the decoder's blocks from the last
// (unit 0) to the first, then the encoder's from the last to the first; mae_backward_units of them.
// A backward run inside another parallel region (a worker's, dist/workers.h) calls fn(ctx, unit)
// after each unit, once the gradients of the unit's Linear weights are final in the buffers the
// backward writes them to (with a tree: its live buffers); fn NULL: none (the default).
// mae_unit_weights: the indices in mae_tensors of unit's Linear weights (qkv, proj, fc1, fc2).
#define MAE_UNIT_WEIGHTS 4
int  mae_backward_units(const Mae *m);
void mae_set_block_done(Mae *m, void (*fn)(void *ctx, int unit), void *ctx);
void mae_unit_weights(const Mae *m, int unit, int idx[MAE_UNIT_WEIGHTS]);
// Encoder only (for attention maps): CLS + the given patches (len_keep may be L), final norm.
void mae_forward_encoder(Mae *m, const float *images, const int *ids_keep, int B, int len_keep);
// The same encoder a block at a time, for a caller that reads each layer's attention maps as the
// block makes them and may stop after any block (`vitmae attention` keeps the maps it draws, not
// every layer's: docs/design.md, "Forward-only models"). mae_encoder_start runs the patch embedding
// of CLS + the given patches; then mae_encoder_block(m, l) for l = 0, 1, ... in turn runs block l and
// gives its attention maps [B, heads, 1+K, 1+K], bitwise mae_forward_encoder's, valid until the next
// block runs (the blocks of a forward-only model share one set: mae_create_forward's and
// mae_create_encoder's models have them too). NULL for a layer out of range. No final norm: mae_latent
// is not this forward's.
void mae_encoder_start(Mae *m, const float *images, const int *ids_keep, int B, int len_keep);
const float *mae_encoder_block(Mae *m, int layer);

// Results of the last forward.
const float *mae_pred(const Mae *m);          // [B, L, P*P*C] (after mae_train_forward: see there); encoder-only: NULL
const float *mae_target(const Mae *m);        // [B, L, P*P*C] targets (norm-pix applied if set); encoder-only: NULL
const float *mae_latent(const Mae *m);        // [B, 1+K, D] encoder output after norm
const float *mae_attention(const Mae *m, int layer);  // [B, heads, 1+K, 1+K] encoder layer
// The residual stream after encoder block `layer` (0-based, before the final norm) [B, 1+K, D];
// NULL when layer is out of range.
const float *mae_block_output(const Mae *m, int layer);
#endif
