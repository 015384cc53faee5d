// Drop path (stochastic depth, timm's DropPath with scale_by_keep): a residual branch of image b is
// multiplied by scale[b], 0 when the branch is dropped and 1 / keep_prob when it is kept, so the
// expectation of the block output is unchanged. The draws live in core/classifier.c; these kernels
// only apply the factors. Layouts: x, branch, out [B, T, C]; scale [B].
#ifndef VITMAE_DROPPATH_H
#define VITMAE_DROPPATH_H

// out = x + scale[b] * branch (out may alias branch or x).
void droppath_residual_forward(float *out, const float *branch, const float *x, const float *scale,
                               int B, int T, int C);
// dbranch = scale[b] * dout: the gradient reaching the branch (the residual path passes dout as it is).
void droppath_scale(float *dbranch, const float *dout, const float *scale, int B, int T, int C);
// The factors of B images for drop probability p: keep when u[b] >= p (u uniform in [0, 1)), as
// torch's bernoulli(1 - p); p == 0 gives 1 for every image (timm returns x unchanged).
void droppath_factors(float *scale, const float *u, int B, float p);
#endif
