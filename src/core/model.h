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
#ifndef VITMAE_MODEL_H
#define VITMAE_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "core/rng.h"

typedef struct {
    int img_size, patch_size, in_chans;
    int embed_dim, depth, num_heads;
    int dec_embed_dim, dec_depth, dec_num_heads;
    int mlp_ratio;          // 4
    int norm_pix_loss;      // 1: per-patch normalised targets (mean, unbiased var, eps 1e-6)
    float mask_ratio;       // training default
    int pos_learned;        // 1: position embeddings are trained; 0: fixed sin-cos
    float pixel_mean[3], pixel_std[3];
    float ln_eps;           // 1e-6
} MaeConfig;

// Fills the preset "tiny", "small" or "base" (docs/interface.md section 3) with img 224, patch 16, 3 channels,
// mask 0.75, learned pos, no norm-pix, pixel mean 0 / std 1. Returns 0, or -1 for an unknown name.
int mae_config_preset(MaeConfig *cfg, const char *name);
// Returns 0 when the config is usable; otherwise -1 and a one-line reason in err.
int mae_config_check(const MaeConfig *cfg, char *err, size_t errlen);
static inline int mae_num_patches(const MaeConfig *c) {
    int g = c->img_size / c->patch_size; return g * g;
}
static inline int mae_patch_dim(const MaeConfig *c) { return c->patch_size * c->patch_size * c->in_chans; }
static inline int mae_len_keep(const MaeConfig *c, float mask_ratio) {
    return (int)(mae_num_patches(c) * (1.0 - (double)mask_ratio));
}

// One named parameter tensor: a slice [offset, offset + numel) of the parameter buffer.
typedef struct {
    char name[64];
    int ndim;
    int shape[4];
    size_t offset, numel;
    int decay;       // AdamW weight decay applies (weight matrices of >= 2 dims, not pos/tokens)
    int trainable;   // 0 for position embeddings when pos_learned == 0
    int decoder;     // 1 for decoder_* and mask_token (absent in encoder-only checkpoints)
} MaeTensor;

// Writes the tensors in MAE state_dict order into out (cap entries at most); returns their count.
int mae_param_table(const MaeConfig *cfg, MaeTensor *out, int cap);
size_t mae_num_params(const MaeConfig *cfg);
// Bytes mae_init would allocate for (cfg, max_batch): params, grads, AdamW moments, activations.
size_t mae_bytes_needed(const MaeConfig *cfg, int max_batch);

typedef struct Mae Mae;   // defined in model.c; fields below are read through accessors

// Allocates parameters (zero), gradients (zero) and the activation arena for batches up to
// max_batch with any len_keep <= L. Returns NULL and a reason in err on failure.
Mae *mae_create(const MaeConfig *cfg, int max_batch, char *err, size_t errlen);
void mae_free(Mae *m);
const MaeConfig *mae_config(const Mae *m);
float *mae_params(Mae *m);           // [mae_num_params]
float *mae_grads(Mae *m);            // [mae_num_params], same layout
const MaeTensor *mae_tensors(const Mae *m, int *count);
float *mae_tensor(Mae *m, const char *name);   // pointer into params, NULL if unknown

// MAE initialisation: xavier-uniform Linear weights and patch weight (as [D, C*P*P]), zero
// biases, LayerNorm 1/0, cls and mask tokens N(0, 0.02), 2D sin-cos position tables.
void mae_init_weights(Mae *m, Rng *rng);
// MAE's 2D sin-cos position table [1 + grid*grid, dim], CLS row zero; dim divisible by 4.
void mae_sincos_pos_embed(float *out, int grid, int dim);

// Per-image masking as MAE: argsort(noise[b]) ascending (stable), first len_keep visible.
// noise [B, L]; ids_keep out [B, len_keep].
// Allocation-free: sorts in a stack buffer when L <= MAE_MASK_STACK_L, else in `scratch`.
void mae_masking_from_noise(const float *noise, int B, int L, int len_keep, int *ids_keep);
// The same with caller-provided scratch of 2 * L ints (any L).
#define MAE_MASK_STACK_L 1024
void mae_masking_from_noise_scratch(const float *noise, int B, int L, int len_keep, int *ids_keep, int *scratch);

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
// patches of the per-patch MSE (0 when no patch is removed). Caches what backward needs.
float mae_forward(Mae *m, const float *images, const int *ids_keep, int B, int len_keep);
// Backward of the last mae_forward: ADDS d(loss)/d(param) into the gradient buffer (zero it
// with mae_zero_grads first). Frozen position embeddings get no gradient.
void mae_backward(Mae *m);
void mae_zero_grads(Mae *m);
// Points the gradient buffer at grads (mae_num_params floats, owned by the caller) and returns the
// buffer used until now: backward then adds there (the gradient groups of src/dist/dist.h each land
// in their own buffer without a copy). Give the model its own buffer back before mae_free.
float *mae_use_grads(Mae *m, float *grads);
void mae_set_timings(Mae *m, MaeTimings *t);   // NULL: timing off (the default)
// Encoder only (for attention maps): CLS + the given patches (len_keep may be L), final norm.
void mae_forward_encoder(Mae *m, const float *images, const int *ids_keep, int B, int len_keep);

// Results of the last forward.
const float *mae_pred(const Mae *m);          // [B, L, P*P*C] (mae_forward only)
const float *mae_target(const Mae *m);        // [B, L, P*P*C] targets (norm-pix applied if set)
const float *mae_latent(const Mae *m);        // [B, 1+K, D] encoder output after norm
const float *mae_attention(const Mae *m, int layer);  // [B, heads, 1+K, 1+K] encoder layer
#endif
