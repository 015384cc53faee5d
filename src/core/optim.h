// AdamW (PyTorch's math), MAE's learning-rate schedule (per step), global grad-norm clipping.
// Every function works on the flat parameter / gradient / moment buffers laid out as the tensor
// table says; tensors with trainable == 0 are skipped. Results do not depend on the thread count.
#ifndef VITMAE_OPTIM_H
#define VITMAE_OPTIM_H
#include "core/model.h"

#define ADAMW_BETA1 0.9f
#define ADAMW_BETA2 0.95f
#define ADAMW_EPS 1e-8f

// One AdamW step (step is 1-based) over every trainable tensor, as torch.optim.AdamW:
//   p -= lr * wd * p (only where t.decay);  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//   p -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps).
void adamw_step(const MaeTensor *t, int nt, float *params, const float *grads, float *m, float *v,
                float lr, float wd, long step);

// The same with the gradient given as a tree's result over n buffers (kernels/sumtree.h, one live
// buffer): each range of elements is summed (the tree's adds, then its scale) just before it is
// updated, while AdamW's pass has it in the cache, rather than in a pass of its own (the threads as
// workers' top of the tree: dist/workers.h). Afterwards the live buffer holds the gradient of every
// trainable tensor; the other tensors' elements are left as they were. The same bits as
// sumtree_apply followed by adamw_step. Tensors with skip[k] set (skip may be NULL) are left as they
// are: adamw_tree_rows updated them already this step.
typedef struct SumTree SumTree;
void adamw_step_tree(const MaeTensor *t, int nt, float *params, const SumTree *tree, float *const *bufs, float *m,
                     float *v, float lr, float wd, long step, const unsigned char *skip);
// adamw_step_tree's update of one tensor's rows [r0, r1) (shape[0] rows; r0 a multiple of
// GEMM_COPY_ROWS, kernels/gemm.h) on the calling thread alone, writing them into the weight's packed
// copies too: a tensor updated by such calls over all its rows, from any threads in any order, is
// bitwise what adamw_step_tree makes of it, and adamw_step_tree marks its copies fresh after
// (the workers' AdamW beside the backward, dist/workers.h).
void adamw_tree_rows(const MaeTensor *tk, float *params, const SumTree *tree, float *const *bufs, float *m, float *v,
                     float lr, float wd, long step, int r0, int r1);

// The same with a learning rate per tensor (lr * lr_scale[k], also in the decoupled decay
// 1 - lr * lr_scale[k] * wd, as torch's param groups with MAE's layer decay: docs/encoder.md, `vitmae
// finetune`) and the betas as arguments (fine-tuning uses torch's defaults 0.9, 0.999).
void adamw_step_groups(const MaeTensor *t, int nt, const float *lr_scale, float *params, const float *grads,
                       float *m, float *v, float lr, float wd, float beta1, float beta2, long step);

// The AdamW element update over one flat range: p *= decay; m = b1 m + (1 - b1) g;
// v = b2 v + (1 - b2) g^2; p -= step_size * m / (sqrt(v) / bc2_sqrt + eps). adamw_update is the
// vectorised one adamw_step runs (one pass, no per-element branches); adamw_update_ref the plain loop.
void adamw_update(float *p, const float *g, float *m, float *v, long n, float decay, float step_size,
                  float bc2_sqrt);
void adamw_update_ref(float *p, const float *g, float *m, float *v, long n, float decay, float step_size,
                      float bc2_sqrt);

// Learning rate of 0-based step s of total: linear warm-up base * s / warmup for s < warmup, then
// half-cosine min_lr + (base - min_lr) * 0.5 * (1 + cos(pi * (s - warmup) / (total - warmup)))
// (MAE's schedule, per step: docs/interface.md, section 3). With total <= warmup the rate after warm-up is
// base.
float lr_at(long step, long total, long warmup, float base, float min_lr);
// The defaults of train and finetune without --lr / --warmup-steps: MAE's scaling rule lr = blr x
// batch / 256, and a warm-up of 5% of the run's steps rounded down, at least 1 step in a run of 2 or
// more: the first step then has rate 0, as every MAE run's, and a run under 20 steps
// does not take AdamW's first step, which moves every weight by about lr whatever its gradient, at the
// full rate. A 1-step run has none: its only step would change no weight (docs/interface.md, section 3).
static inline float lr_from_blr(float blr, int batch) { return blr * batch / 256.0f; }
static inline long warmup_default(long total_steps) {
    long w = (long)(0.05 * total_steps);
    return w < 1 && total_steps >= 2 ? 1 : w;
}

// The model's exponential moving average (finetune --model-ema; docs/encoder.md, "Model EMA"), as timm's
// ModelEmaV3. ema_decay_at: the decay of optimizer update `update` (1-based: the steps taken so far):
// 0 at the first (the average starts as the weights), then `decay`, or with warmup
// min(decay, 1 - update^(-2/3)) (timm's warm-up, gamma 1 and power 2/3, at its step update - 1).
double ema_decay_at(double decay, int warmup, long update);
// ema += (1 - decay) * (w - ema) over n floats, bit for bit as torch's CPU lerp with weight 1 - decay
// (rounded to float), one fused multiply-add: below 0.5, fmaf(weight, w - ema, ema); else
// fmaf(-(1 - weight), w - ema, w), so that decay 0 copies w. Each element alone: the same bits for any
// thread count.
void ema_update(float *ema, const float *w, size_t n, double decay);

// sqrt(sum of g^2) over the trainable tensors, summed in double in fixed-size chunks added in order.
float grad_global_norm(const MaeTensor *t, int nt, const float *grads);
// As torch.nn.utils.clip_grad_norm_: when norm > max_norm, scales the trainable gradients by
// max_norm / (norm + 1e-6). Returns the norm before clipping.
float grad_clip(const MaeTensor *t, int nt, float *grads, float max_norm);
#endif
