// The model's configuration, in one place: the struct, the presets and the defaults of the model
// flags (their help text included), the checks, the JSON stored in checkpoints (metadata "config",
// docs/interface.md section 4), and the table of named parameter tensors (MAE state_dict order) that
// the config implies.
#ifndef VITMAE_CONFIG_H
#define VITMAE_CONFIG_H
#include <stddef.h>
#include "core/masking.h"

// Defaults of the model flags of `vitmae train` and `vitmae bench`; the help text is built from the
// same macros (MAE_STR), so it cannot drift from the values.
#define MAE_DEFAULT_PRESET "tiny"
#define MAE_DEFAULT_IMG 32
#define MAE_DEFAULT_PATCH 4
#define MAE_DEFAULT_MASK_RATIO 0.75
#define MAE_DEFAULT_BATCH 64
// The largest img_size of a model (mae_config_check): the bound of every --img flag too (train, finetune,
// bench, probe --pixels; docs/interface.md, section 1).
#define MAE_IMG_MAX 8192
#define MAE_STR_(x) #x
#define MAE_STR(x) MAE_STR_(x)

typedef struct {
    int img_size, patch_size, in_chans;
    int embed_dim, depth, num_heads;
    int dec_embed_dim, dec_depth, dec_num_heads;
    int mlp_ratio;          // 4
    int norm_pix_loss;      // 1: per-patch normalised targets (mean, unbiased var, eps 1e-6)
    float mask_ratio;       // training default (MAE_DEFAULT_MASK_RATIO)
    int pos_learned;        // 1: position embeddings are trained; 0: fixed sin-cos
    float pixel_mean[3], pixel_std[3];
    float ln_eps;           // 1e-6
} MaeConfig;

// Fills the preset "tiny", "small" or "base" (docs/interface.md section 3) with img 224, patch 16, 3 channels,
// mask 0.75, learned pos, no norm-pix, pixel mean 0 / std 1. Returns 0, or -1 for an unknown name.
int mae_config_preset(MaeConfig *cfg, const char *name);
// Returns 0 when the config is usable; otherwise -1 and a one-line reason in err.
int mae_config_check(const MaeConfig *cfg, char *err, size_t errlen);
// The same check for a model made from command-line flags: the reason names the flags (`--dim 16 is
// not divisible by --heads 3`), not the config's keys. A size out of its range sets *flag to its flag
// and err to the rest (`32 is out of range [1, 16]`: the command says `train --patch: ...`); *flag is
// NULL when err names the flags itself.
int mae_config_check_flags(const MaeConfig *cfg, const char **flag, char *err, size_t errlen);
static inline int mae_num_patches(const MaeConfig *c) {
    int g = c->img_size / c->patch_size; return g * g;
}
static inline int mae_patch_dim(const MaeConfig *c) { return c->patch_size * c->patch_size * c->in_chans; }
static inline int mae_len_keep(const MaeConfig *c, float mask_ratio) {
    return mask_len_keep(mae_num_patches(c), mask_ratio);
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
// The encoder's tensors alone (cls_token, pos_embed, patch_embed, blocks): the first entries of
// mae_param_table, at the same offsets; returns their count and their floats in *numel. Like
// mae_param_table it allocates nothing.
int mae_encoder_param_table(const MaeConfig *cfg, MaeTensor *out, int cap, size_t *numel);
// The same and the encoder's final norm (norm.weight, norm.bias): every tensor before the decoder's,
// so a prefix of the parameter buffer of *numel floats; what the encoder-only model holds
// (mae_create_encoder in core/model.h) and ckpt_load_encoder reads (io/checkpoint.h).
int mae_encoder_model_table(const MaeConfig *cfg, MaeTensor *out, int cap, size_t *numel);

// Normalise pixels [n values, C interleaved] in place with the config's statistics:
// (x - pixel_mean[c]) / pixel_std[c] (the model's input), and back.
void pixels_normalise(const MaeConfig *cfg, float *px, long n_pixels);
void pixels_denormalise(const MaeConfig *cfg, float *px, long n_pixels);

// Config <-> the JSON string stored under checkpoint metadata "config" (floats as the shortest
// decimal that reads back as the same float). from_json checks every field and mae_config_check.
char *mae_config_to_json(const MaeConfig *cfg);           // malloc'd; NULL when out of memory
// A float as JSON: the shortest decimal that reads back as the same float (0.05f as 0.05, not the
// double 0.05000000074505806, which a reader compares with 0.05 in vain), through strtof and through
// strtod then a cast, as cJSON reads it back; null when not finite. The config's floats and the
// float settings of train_state (cmd/train_state.c, cmd/finetune.c) are written so.
struct cJSON *config_float_json(float x);
// The same decimal as text (buf of 32 bytes or more), for a finite x: PNG text chunks.
void config_float_text(float x, char *buf, size_t n);
int   mae_config_from_json(const char *json, MaeConfig *cfg, char *err, size_t errlen);
#endif
