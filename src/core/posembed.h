// Fixed 2D sin-cos position tables (MAE's get_2d_sincos_pos_embed), shared by the MAE's encoder and
// decoder and the classifier's encoder.
#ifndef VITMAE_POSEMBED_H
#define VITMAE_POSEMBED_H

// MAE's 2D sin-cos position table [1 + grid*grid, dim], CLS row zero; dim divisible by 4.
void mae_sincos_pos_embed(float *out, int grid, int dim);
#endif
