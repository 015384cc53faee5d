// Classifier checkpoints (vitmae finetune / classify; docs/encoder.md): safetensors with timm's
// VisionTransformer names (cls_token, pos_embed, patch_embed.proj.*, blocks.N.*, fc_norm.*, head.*),
// written atomically by st_write (crc32 included). Metadata: format "vitmae", config (the encoder's
// MaeConfig JSON, as pretraining checkpoints), classifier = {"num_classes": K, "classes": [names],
// "global_pool": "avg"}, and train_state (JSON) with the AdamW moments optimizer.exp_avg.<name> /
// optimizer.exp_avg_sq.<name> when the file can resume fine-tuning, and the model's moving average
// ema.<name> (finetune --model-ema; docs/interface.md, section 4).
#ifndef VITMAE_CLASSIFIER_CKPT_H
#define VITMAE_CLASSIFIER_CKPT_H
#include <stddef.h>
#include "core/classifier.h"
#include "io/checkpoint.h"

typedef struct {
    ClassifierConfig cfg;
    char **classes;            // [num_classes] malloc'd names
    float *params;             // [clf_num_params]
    char *train_state;         // malloc'd JSON or NULL
    int has_moments;           // as Checkpoint's: the file holds the AdamW moments (ckpt_has_moments)
    float *exp_avg, *exp_avg_sq;   // [clf_num_params] or NULL
    int has_ema;               // the file holds the EMA weights (every ema.<name>: CKPT_EMA_PREFIX, io/checkpoint.h)
    float *ema;                // [clf_num_params]: them (clf_ckpt_load), or NULL
} ClfCheckpoint;

// 1 when the file is a classifier checkpoint (has the "classifier" metadata).
int  clf_ckpt_is_classifier(const StFile *f);
// ema: the EMA weights (ema.<name>), or NULL for none.
int  clf_ckpt_save(const char *path, const ClassifierConfig *cfg, char *const *classes, const float *params,
                   const char *train_state, const float *exp_avg, const float *exp_avg_sq, const float *ema, char *err,
                   size_t errlen);
// Loads and checks everything (config, class names, every tensor's name and shape, the moments when a
// train state is present and the file holds any, as io/checkpoint.h ckpt_has_moments, and the EMA weights
// when it holds any: all of them, into out->ema). A one-line reason naming the file on failure.
int  clf_ckpt_load(const char *path, ClfCheckpoint *out, char *err, size_t errlen);
// The same checks without copying the moments (exp_avg and exp_avg_sq stay NULL; train_state is
// kept), as io/checkpoint.h ckpt_load_weights: for `vitmae classify` and features, not for resuming.
int  clf_ckpt_load_weights(const char *path, ClfCheckpoint *out, char *err, size_t errlen);
// clf_ckpt_load_weights with the EMA weights as out->params (classify --ema); a file without them is
// refused: `PATH: holds no EMA weights (fine-tuned without --model-ema)`.
int  clf_ckpt_load_ema_weights(const char *path, ClfCheckpoint *out, char *err, size_t errlen);
// clf_ckpt_load's checks on a file already opened (st_open_header, or st_open): with the moments and the
// EMA weights copied (moments 1, as clf_ckpt_load) or not (0, as clf_ckpt_load_weights).
int  clf_ckpt_from_st(StFile *f, int moments, ClfCheckpoint *out, char *err, size_t errlen);
// The encoder of any checkpoint for the encoder's users (embed, probe, attention): io/checkpoint.h's
// ckpt_load_encoder (ema 0) or ckpt_load_encoder_ema (1), a classifier's header first checked as
// clf_ckpt_load_weights checks it (the metadata 'classifier', its class names, every tensor's name and
// shape, the head's included), so that a file classify and info refuse is refused with the same line.
int  clf_ckpt_load_encoder(const char *path, int ema, Checkpoint *out, char *err, size_t errlen);
void clf_ckpt_free(ClfCheckpoint *c);
#endif
