// RandAugment of fine-tuning's training views, as timm's rand_augment_transform (MAE's main_finetune.py:
// --aa rand-m9-mstd0.5-inc1): each image takes `layers` operations drawn with replacement from fifteen,
// each applied with probability `prob` at a magnitude drawn from N(m, mstd) (uniform in [0, m] for an
// mstd above 100) and clipped to [0, mmax] (10 unless given), on
// the 8-bit view after its crop and flip, as PIL 9.4 computes each one (ImageOps, ImageEnhance,
// Image.transform with the view's filter, outside pixels the fill colour). docs/encoder.md, "RandAugment".
#ifndef VITMAE_RANDAUG_H
#define VITMAE_RANDAUG_H
#include <stddef.h>
#include <stdint.h>
#include "core/rng.h"
#include "data/image.h"

// timm's _RAND_TRANSFORMS, in its order (the increasing variants of Posterize, Solarize and the four
// enhancements when `increasing`, as its _RAND_INCREASING_TRANSFORMS).
enum {
    RA_AUTOCONTRAST, RA_EQUALIZE, RA_INVERT, RA_ROTATE, RA_POSTERIZE, RA_SOLARIZE, RA_SOLARIZE_ADD, RA_COLOR,
    RA_CONTRAST, RA_BRIGHTNESS, RA_SHARPNESS, RA_SHEAR_X, RA_SHEAR_Y, RA_TRANSLATE_X, RA_TRANSLATE_Y, RA_NOPS
};
#define RANDAUG_LEVEL_MAX 10.0    // timm's _LEVEL_DENOM: the magnitude's scale and its default upper clip
#define RANDAUG_MMAX_MAX 100.0    // the largest upper clip (mmax) and magnitude taken
#define RANDAUG_MSTD_UNIFORM 100.0   // timm: an mstd above it draws the magnitude uniform in [0, m]
#define RANDAUG_LAYERS_MAX 16     // the most operations an image takes (the spec's n)
#define RANDAUG_TEXT_MAX 128      // room for randaug_text's canonical spec

// layers 0: off. magnitude m in [0, mmax]; mstd >= 0 (0: the magnitude as given; above
// RANDAUG_MSTD_UNIFORM: uniform); prob in [0, 1]; increasing: timm's inc1; mmax: the magnitude's upper clip.
typedef struct { int layers; double magnitude, mstd, prob; int increasing; double mmax; } RandAugSpec;
#define RANDAUG_OFF ((RandAugSpec){0, 0.0, 0.0, 0.0, 0, RANDAUG_LEVEL_MAX})

// timm's config string: "rand" and dash-separated sections m<M> (default 10), n<N> (2), mstd<S> (0),
// inc<0|1> (0), p<P> (0.5), mmax<X> (10), in any order; "none" is off. A magnitude above its upper clip
// is refused (timm would clip it). 0, or -1 with the reason in why.
int randaug_parse(const char *text, RandAugSpec *out, char *why, size_t whylen);
// timm's fill colour for a mean pixel in [0, 1] (its img_mean): min(255, round(255 mean)), half to even,
// for each of c channels.
void randaug_fill(const float *mean, int c, uint8_t *fill);
// The canonical spec, "rand-m9-n2-mstd0.5-inc1" (p only when not 0.5, mmax when not 10), or "none";
// parses back to *s.
void randaug_text(const RandAugSpec *s, char *buf, size_t n);
// The operation's name as timm's (increasing: "PosterizeIncreasing", ...).
const char *randaug_op_name(int op, int increasing);
// The operation's argument at a magnitude (timm's LEVEL_TO_ARG), negated where the operation is signed
// and `negate`: degrees (Rotate), bits kept (Posterize), threshold (Solarize), addend (SolarizeAdd), enhance
// factor (Color, Contrast, Brightness, Sharpness), shear factor, translation as a fraction of the side;
// 0 for the three without one.
double randaug_level(int op, int increasing, double magnitude, int negate);
// 1 for the operations whose argument timm negates with probability 1/2.
int randaug_signed(int op, int increasing);
// One operation with its argument on px [h][w][c] (c 1 or 3), 8-bit samples, in place: tmp holds
// w * h * c bytes. filter: the resampling of Rotate, ShearX/Y and TranslateX/YRel; fill[c]: their
// outside colour.
void randaug_op(uint8_t *px, int w, int h, int c, int op, double arg, ImageFilter filter, const uint8_t *fill,
                uint8_t *tmp);
// RandAugment on one view px [h][w][c] of 8-bit levels in [0, 1] (k / 255), drawing from rng: the
// operations first (rng_below), then for each its probability, its magnitude and its sign, in timm's
// order (randaug_magnitude). ops (may be NULL): room for s->layers entries, set to the operation applied at each layer or -1
// (skipped). 0, or -1 out of memory (px untouched).
// One magnitude as timm's AugmentOp draws it: m, N(m, mstd) or uniform in [0, m], clipped to [0, mmax].
double randaug_magnitude(const RandAugSpec *s, Rng *rng);
int randaug_image(float *px, int w, int h, int c, const RandAugSpec *s, ImageFilter filter, const uint8_t *fill,
                  Rng *rng, int *ops);
#endif
