// The image classifier fine-tuned from a MAE encoder: timm's VisionTransformer with global
// average pooling, as facebookresearch/mae's models_vit:
//   x = blocks(patch_embed(img) + pos, with the CLS token; every patch, no masking)
//   feat = fc_norm(mean of the patch tokens of x, CLS left out)   (no final `norm`)
//   logits = head(feat)
// trained with softmax cross-entropy with label smoothing and drop path in the blocks
// (core/encoder.h). Tensors in timm's state_dict order: cls_token, pos_embed, patch_embed.proj.*,
// blocks.N.*, fc_norm.weight/bias [D], head.weight [classes, D], head.bias [classes].
// Memory as the MAE: one parameter buffer, a twin gradient buffer, one activation arena sized at
// create time; no allocation in forward / backward.
#ifndef VITMAE_CLASSIFIER_H
#define VITMAE_CLASSIFIER_H
#include <stddef.h>
#include <stdint.h>
#include "core/model.h"
#include "core/rng.h"

// The encoder's shape comes from a MaeConfig (its decoder fields are not used).
typedef struct {
    MaeConfig enc;
    int num_classes;   // >= 2
} ClassifierConfig;

int clf_config_check(const ClassifierConfig *cfg, char *err, size_t errlen);
// The tensor table (timm order); returns the count (writes at most cap entries).
int clf_param_table(const ClassifierConfig *cfg, MaeTensor *out, int cap);
size_t clf_num_params(const ClassifierConfig *cfg);
size_t clf_bytes_needed(const ClassifierConfig *cfg, int max_batch);
size_t clf_bytes_needed_forward(const ClassifierConfig *cfg, int max_batch);   // clf_create_forward's

// MAE's layer-wise lr decay (docs/encoder.md, `vitmae finetune`): layer id 0 for cls_token, pos_embed,
// patch_embed.*; i + 1 for blocks.i.*; depth + 1 for the rest (fc_norm, head).
int clf_layer_id(const char *name, int depth);
// lr scale of each of the n tensors of a table (clf_tensors, of an encoder of `depth` blocks):
// decay^(depth + 1 - layer id).
void clf_lr_scales(const MaeTensor *t, int n, int depth, float layer_decay, float *out);

typedef struct Classifier Classifier;
Classifier *clf_create(const ClassifierConfig *cfg, int max_batch, char *err, size_t errlen);
// For inference (classify): clf_forward gives bitwise what clf_create's classifier gives, without a
// gradient buffer or backward scratch and with one block's activations that every block overwrites
// (as core/model.h mae_create_forward). clf_attention gives NULL and clf_grads NULL; clf_backward
// after a labelled forward is a bug and aborts.
Classifier *clf_create_forward(const ClassifierConfig *cfg, int max_batch, char *err, size_t errlen);
// The same over parameters the caller has (clf_num_params(cfg) floats from malloc or calloc: a
// checkpoint's), taken without a copy and freed by clf_free; on failure (NULL) they stay the caller's.
Classifier *clf_create_forward_with(const ClassifierConfig *cfg, int max_batch, float *params, char *err, size_t errlen);
// A training classifier over c's parameters, with activations of its own and no gradient buffer:
// the caller points it at one with clf_use_grads before a backward (threads as workers, dist/workers.h).
// c must outlive it; clf_free leaves the parameters to c.
Classifier *clf_create_sharing(Classifier *c, int max_batch, char *err, size_t errlen);
void clf_free(Classifier *c);
const ClassifierConfig *clf_config(const Classifier *c);
float *clf_params(Classifier *c);
float *clf_grads(Classifier *c);
const MaeTensor *clf_tensors(const Classifier *c, int *count);
float *clf_tensor(Classifier *c, const char *name);
void clf_zero_grads(Classifier *c);
// Points the classifier's gradient at another buffer of clf_num_params floats (a gradient group's,
// dist/dist.h) and returns the one it had: clf_zero_grads and clf_backward then work there.
float *clf_use_grads(Classifier *c, float *grads);

// Random init (the --from-scratch model, and the head of a fine-tuned one): the MAE's rules for the
// encoder (core/encoder.h vit_init_tensors), fc_norm 1/0, then head.weight ~ N(0, 2e-5) truncated at
// 2 std and head.bias 0 (MAE's main_finetune).
void clf_init_weights(Classifier *c, Rng *rng);
// Copies every tensor of the classifier that the table (t, nt) over src also has, by name and size
// (cls_token, pos_embed, patch_embed.*, blocks.*). Returns how many were copied.
int clf_copy_encoder(Classifier *c, const MaeTensor *t, int nt, const float *src);

// Drop-path factors for one step: block l of depth drops with p_l = rate * l / (depth - 1) (torch's
// linspace(0, rate, depth)); image b draws 2 * depth uniforms (block order; attention then MLP branch)
// from rng_derive(seed, step, b). scale [depth][2][B] (see kernels/droppath.h).
void clf_drop_path_factors(const ClassifierConfig *cfg, float rate, uint64_t seed, uint64_t step, int B,
                           float *scale);

// Forward of B images [B, S, S, C] (normalised). With labels (B class indices) returns the smoothed
// cross-entropy (mean over the batch) and keeps what backward needs; without labels returns 0.
// drop_scale: NULL (evaluation: no drop path) or [depth][2][B] factors, read during this call and
// the next clf_backward.
double clf_forward(Classifier *c, const float *images, const int *labels, int B, float smoothing,
                   const float *drop_scale);
// The same with mixed targets (Mixup and CutMix, data/mix.h): image b's target is lam of labels[b]'s
// and 1 - lam of labels2[b]'s (each smoothed), as timm's mixup_target; labels2 NULL is clf_forward.
double clf_forward_mixed(Classifier *c, const float *images, const int *labels, const int *labels2, double lam,
                         int B, float smoothing, const float *drop_scale);
// ADDS d(loss)/d(param) of the last labelled clf_forward into the gradients.
void clf_backward(Classifier *c);

const float *clf_logits(const Classifier *c);    // [B, classes]
const float *clf_probs(const Classifier *c);     // [B, classes] softmax
const float *clf_features(const Classifier *c);  // [B, D] fc_norm output (the head's input)
const float *clf_attention(const Classifier *c, int layer);   // [B, heads, 1+L, 1+L]
// The classes ranked above `label` by one image's K logits: those with a greater logit, and those with
// an equal one and a lower index (the first of equal maxima is the argmax). The top-k holds the label
// when its rank is below k: rank 0 is top-1, below 5 top-5 (MAE's evaluate, timm's accuracy).
int clf_label_rank(const float *logits, int K, int label);
#endif
