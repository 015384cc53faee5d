// vitmae checkpoints (docs/interface.md section 4): a safetensors file (io/safetensors.h) with the
// parameters under MAE's names, the config JSON (core/config.h) and, to resume training, the
// train_state JSON and the AdamW moments. Writing is atomic (io/safetensors.h).
#ifndef VITMAE_CHECKPOINT_H
#define VITMAE_CHECKPOINT_H
#include <stddef.h>
#include "core/model.h"
#include "io/safetensors.h"

// The prefixes of a checkpoint's tensors beside the weights: the AdamW moments, and a fine-tuned
// classifier's moving average of its weights (finetune --model-ema; io/classifier_ckpt.h).
#define CKPT_EXP_AVG_PREFIX "optimizer.exp_avg."
#define CKPT_EXP_AVG_SQ_PREFIX "optimizer.exp_avg_sq."
#define CKPT_EMA_PREFIX "ema."

// 0 when the tensors of tab (n entries, laid out in params and, when not NULL, in the moments m and
// v) hold finite values only; else -1 and why "tensor NAME holds NaN or infinite values". A checkpoint
// never holds such values: the writers refuse them (a diverged model) and the readers too, since a
// model with NaN weights would give NaN results with exit 0 (docs/interface.md, section 4).
int ckpt_check_finite(const MaeTensor *tab, int n, const float *params, const float *m, const float *v, char *why,
                      size_t whylen);
// The same for one array x laid out as tab (NULL: nothing to check), its tensors named PREFIX<name>.
int ckpt_check_finite_array(const MaeTensor *tab, int n, const float *x, const char *prefix, char *why,
                            size_t whylen);

// The same check for the AdamW moments a read did not copy (ckpt_load_weights, ckpt_load_encoder, a
// classifier's weights), each st_scan'ed before st_fill: -1 and why for the first moment of tab that
// held NaN or infinite values, in ckpt_check_finite's order (every exp_avg, then every exp_avg_sq), so
// that every reader refuses such a file with the line train --resume gives (docs/interface.md, section 4).
int ckpt_check_scanned_moments(const StFile *f, const MaeTensor *tab, int n, char *why, size_t whylen);
// The same for the tensors PREFIX<name> of tab a read did not copy (a classifier's ema.*).
int ckpt_check_scanned(const StFile *f, const MaeTensor *tab, int n, const char *prefix, char *why, size_t whylen);
// 1 when the file holds any tensor whose name starts with prefix.
int ckpt_has_prefix(const StFile *f, const char *prefix);
// Why a classifier holds no ema.* tensors, for `PATH: holds no EMA weights (WHY)`: its train_state
// says model_ema (the run kept an average, and the file lost it: "stripped"), or it does not ("fine-tuned
// without --model-ema"). A file whose state says model_ema with its tensors removed was told the run
// never used the flag.
const char *ckpt_no_ema_why(const StFile *f);
// 1 when the train_state JSON text (NULL: none) says model_ema, the run keeping an average of its
// weights; the one reading of it for ckpt_no_ema_why and info's "EMA weights" line.
int ckpt_state_keeps_ema(const char *train_state);
// -1 with err ("FILE: holds tensor 'blocks.5.norm1.weight', of a block past the config's depth 5 ...")
// when a tensor of the file, under any prefix (ema., optimizer.exp_avg.), belongs to an encoder block
// at or past depth, or a decoder block at or past dec_depth (-1: decoder blocks not checked); else 0.
// Extra tensors are otherwise ignored, but these say the config does not describe the file (a
// hand-edited config, a conversion given the wrong depth), whose blocks a load would silently drop.
int ckpt_check_block_names(const StFile *f, int depth, int dec_depth, char *err, size_t errlen);
// Tensor `name` (t's shape) into dst + t->offset, now or at st_fill (dst NULL: checks only): 0 ok, 1
// absent (err untouched), -1 another shape, err "PATH: tensor 'NAME' has shape [..], the config needs
// [..]" (the pretraining and the classifier readers alike).
int ckpt_take(StFile *f, const char *path, const char *name, const MaeTensor *t, float *dst,
              char *err, size_t errlen);
// 1 when the file holds any AdamW moment (a tensor optimizer.exp_avg.* or optimizer.exp_avg_sq.*): then
// every one must be there. A training checkpoint with all of them stripped (to share the weights) loads
// as a file without train_state does, for everything but resuming (docs/interface.md, section 4).
int ckpt_has_moments(const StFile *f);

// Saves parameters (laid out as mae_param_table says) under MAE's names, metadata format and
// config, and, when train_state (a JSON string) is non-NULL, that state and the AdamW moments
// optimizer.exp_avg.<name> / optimizer.exp_avg_sq.<name> (each laid out like the parameters).
// Atomic: the previous file at path stays intact on any failure.
int ckpt_save(const char *path, const MaeConfig *cfg, const float *params, const char *train_state,
              const float *exp_avg, const float *exp_avg_sq, char *err, size_t errlen);

typedef struct {
    MaeConfig cfg;
    float *params;             // malloc'd [mae_num_params(&cfg)] (ckpt_load_encoder: the encoder's alone)
    int has_decoder;           // 0: encoder-only file (decoder parameters left zero)
    char *train_state;         // malloc'd JSON or NULL
    int has_moments;           // 1: the file holds the AdamW moments (with train_state; copied by ckpt_load alone)
    float *exp_avg, *exp_avg_sq;   // malloc'd [mae_num_params] or NULL
    int classifier;            // 1: a fine-tuned classifier's encoder (no `norm` in the file: 1 / 0 here; no decoder)
    float *fc_norm;            // classifier: malloc'd fc_norm weight then bias [2 * embed_dim] (pooled features' norm); else NULL
} Checkpoint;
// Loads and validates (names, shapes, dtype, config, crc32). A one-line reason naming the file on
// failure. The caller builds the model with mae_create(&ck.cfg, ...) and copies params in, or hands
// them to mae_create_forward_with (inference).
int  ckpt_load(const char *path, Checkpoint *out, char *err, size_t errlen);
// The same checks (the AdamW moments' names, shapes and values included) without copying the moments:
// exp_avg and exp_avg_sq stay NULL (train_state is kept). For every use but resuming a run: a
// training checkpoint is 3x its weights, and inference need not hold the other 2x.
int  ckpt_load_weights(const char *path, Checkpoint *out, char *err, size_t errlen);
// The same checks again, keeping of the weights only the encoder's: params holds the tensors before
// the decoder's (mae_encoder_model_table's floats, core/config.h), what mae_create_encoder_with takes
// (`attention`, `embed`, `probe`) and what `finetune --ckpt` copies into its classifier; the decoder's
// tensors are read past, their names, shapes, crc32 and values checked as ckpt_load_weights checks
// them, and a file it refuses is refused with its reason (tests/fuzz/fuzz_ckpt.c reads every input
// with both).
int  ckpt_load_encoder(const char *path, Checkpoint *out, char *err, size_t errlen);
// The same over a fine-tuned classifier's moving average of its weights (finetune --model-ema; the
// --ema of embed, probe and attention, docs/encoder.md): params and fc_norm hold ema.<name> instead of
// <name>, and the weights themselves are read past, checked as the rest. A file without the average (a
// pretraining checkpoint, a classifier fine-tuned without --model-ema) is refused: `PATH: holds no EMA
// weights (...)`; one without an ema.<name> the encoder needs: `PATH: missing tensor 'ema.NAME' (...)`.
int  ckpt_load_encoder_ema(const char *path, Checkpoint *out, char *err, size_t errlen);
// Either on a file already opened with st_open_header (ema 0: ckpt_load_encoder's read, 1:
// ckpt_load_encoder_ema's). These readers check of a classifier what its encoder's users need (its
// encoder, fc_norm, every value), not its metadata 'classifier' or its head's shapes: the commands read
// through io/classifier_ckpt.h's clf_ckpt_load_encoder, which checks those first.
int  ckpt_encoder_from_st(StFile *f, int ema, Checkpoint *out, char *err, size_t errlen);
void ckpt_free(Checkpoint *c);
// The kinds of checkpoint a command may refuse before it loads the file (docs/interface.md, "Exit status").
enum { CKPT_FULL = 1, CKPT_ENCODER_ONLY = 2, CKPT_CLASSIFIER = 4 };
// The kind of the checkpoint at path, from its header alone: CKPT_CLASSIFIER (the "classifier" metadata of
// a fine-tuned classifier, io/classifier_ckpt.h), CKPT_ENCODER_ONLY (a vitmae config whose decoder has
// none of its tensors in the file, as ckpt_from_st's has_decoder 0), else CKPT_FULL (a file the loader
// will refuse included). A kind not in `takes`, which the command refuses, has its data read for damage
// first: -1 and a reason naming the file when they are damaged or the file cannot be opened. So damage is
// the reason given before the kind, and the kind before NaN or infinite values, which only the loaders
// look for (docs/interface.md, "Exit status").
int  ckpt_peek_kind(const char *path, int takes, char *err, size_t errlen);
// 1 when the checkpoint at path carries a train_state (its header alone; 0 when it has none or cannot
// be read): a classifier without one, saved for inference, has no run to continue.
int  ckpt_peek_has_state(const char *path);
// ckpt_load's checks on a file already opened (st_open_header, or st_open; e.g. by `vitmae info`,
// which also reads its metadata): with the moments copied (moments 1, as ckpt_load) or not (0, as
// ckpt_load_weights).
int  ckpt_from_st(StFile *f, int moments, Checkpoint *out, char *err, size_t errlen);
#endif
