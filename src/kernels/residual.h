// The residual add of a block.
#ifndef VITMAE_RESIDUAL_H
#define VITMAE_RESIDUAL_H

// out [N] = a + b.
void residual_forward(float *out, const float *a, const float *b, long N);
#endif
