// Mixup and CutMix of a batch's images, as timm's Mixup in its "batch" mode with correct_lam (MAE's
// main_finetune.py): one draw per gradient group, image i mixed with image n - 1 - i of the same
// group (torch's x.flip(0)), targets mixed by the same lambda. docs/encoder.md, "Mixup and CutMix".
#ifndef VITMAE_MIX_H
#define VITMAE_MIX_H
#include <stdint.h>

// The flags: alphas of the two Beta distributions (0: that kind off), the chance that a group is
// mixed at all, and the chance of CutMix over Mixup when both alphas are above 0.
typedef struct { float mixup, cutmix, prob, switch_prob; } MixFlags;
#define MIX_ALPHA_MAX 100.0      // the alphas' range is [0, MIX_ALPHA_MAX]
#define MIX_DEFAULT_PROB 1.0     // timm's mixup_prob
#define MIX_DEFAULT_SWITCH 0.5   // timm's mixup_switch_prob

// One group's draw: lam = 1 leaves the images and targets as they are. CutMix pastes rows [y0, y1) x
// columns [x0, x1) of the partner image, and lam is then 1 - the box's share of the image.
typedef struct { double lam; int cutmix, y0, y1, x0, x1; } MixDraw;

int  mix_enabled(const MixFlags *f);   // either alpha above 0 and prob above 0
// The draw of group `group` at step `step` from the run's seed alone (any process and thread count
// draws the same), for images of H x W pixels.
void mix_draw(MixDraw *d, const MixFlags *f, uint64_t seed, uint64_t step, uint64_t group, int H, int W);
// n images [n, H, W, C] mixed in place by d: Mixup x_i lam + x_(n-1-i) (1 - lam), each factor rounded to
// float as torch multiplies a float tensor by a Python number; CutMix the box from x_(n-1-i).
void mix_apply(float *images, int n, int H, int W, int C, const MixDraw *d);
// A gradient group's whole mixing: its draw (mix_draw), its n images mixed (mix_apply), and each image's
// partner's label, partner[i] = labels[n - 1 - i]; returns lam (1: not mixed).
double mix_group(float *images, const int *labels, int *partner, int n, int H, int W, int C, const MixFlags *f,
                 uint64_t seed, uint64_t step, uint64_t group);
#endif
