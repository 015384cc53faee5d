// Kernels of the classification head (timm's VisionTransformer with global_pool='avg', as
// facebookresearch/mae's models_vit): mean of the patch tokens, and softmax cross-entropy with
// label smoothing. Plain loops; every sum runs in a fixed order (results do not depend on threads).
#ifndef VITMAE_HEAD_H
#define VITMAE_HEAD_H

// out [B, D] = mean over tokens 1..T-1 of x [B, T, D] (token 0, the CLS token, is left out);
// summed in double in token order.
void mean_pool_forward(float *out, const float *x, int B, int T, int D);
// dx [B, T, D] = dout [B, D] / (T - 1) on tokens 1..T-1, 0 on token 0 (overwrites dx).
void mean_pool_backward(float *dx, const float *dout, int B, int T, int D);

// Softmax cross-entropy with label smoothing s over K classes (torch's
// CrossEntropyLoss(label_smoothing=s), timm's LabelSmoothingCrossEntropy): the target of image b
// is q = (1 - s) onehot(labels[b]) + s / K, and
//   loss = mean over b of -sum_k q_k log softmax(logits[b])_k.
// With labels2 (NULL: none) the targets are mixed, as timm's mixup_target with SoftTargetCrossEntropy:
// q = lam q(labels[b]) + (1 - lam) q(labels2[b]), one lam for the B images.
// probs [B, K] gets the softmax (kept for backward); returns the loss (summed in double, in order).
double softmax_xent_forward(float *probs, const float *logits, const int *labels, const int *labels2, double lam,
                            int B, int K, float smoothing);
// dlogits [B, K] = (probs - q) / B (overwrites).
void softmax_xent_backward(float *dlogits, const float *probs, const int *labels, const int *labels2, double lam,
                           int B, int K, float smoothing);
// probs [B, K] = softmax of logits (no loss; inference).
void softmax_rows(float *probs, const float *logits, int B, int K);
#endif
