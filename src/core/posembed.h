// Position tables: MAE's fixed 2D sin-cos table (get_2d_sincos_pos_embed), shared by the MAE's encoder
// and decoder and the classifier's encoder, and the resize that fine-tuning at another image size
// applies to a pretrained table (MAE's interpolate_pos_embed).
#ifndef VITMAE_POSEMBED_H
#define VITMAE_POSEMBED_H

// MAE's 2D sin-cos position table [1 + grid*grid, dim], CLS row zero; dim divisible by 4.
void mae_sincos_pos_embed(float *out, int grid, int dim);

// A position table [1 + g*g, dim] resized to [1 + n*n, dim] (g, n >= 1) as MAE's interpolate_pos_embed
// resizes it for fine-tuning at another image size: row 0 (CLS) copied, each of the dim channels of the
// g x g patch rows (row 1 + y*g + x) resized to n x n as torch's F.interpolate(mode='bicubic',
// align_corners=False) resizes it (docs/encoder.md, "vitmae finetune"). out and in do not overlap.
void posembed_resize(float *out, const float *in, int g, int n, int dim);
#endif
