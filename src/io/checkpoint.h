// Checkpoints as safetensors (docs/interface.md section 4): 8-byte little-endian header length, a JSON
// header (parsed with cJSON), then the data. Every length, offset, dtype and shape is checked
// before use; crc32 (zlib) over the data section is written and, when present, verified.
// Writing is atomic: temporary file in the same folder, fsync, rename, fsync of the folder.
#ifndef VITMAE_CHECKPOINT_H
#define VITMAE_CHECKPOINT_H
#include <stddef.h>
#include <stdint.h>
#include "core/model.h"

// ---- generic safetensors (F32 tensors only; other dtypes are refused by name) ----
typedef struct {
    const char *name;
    int ndim;
    int64_t shape[4];
    const float *data;
} StTensor;

// Writes tensors and string metadata (keys[i] -> vals[i]); adds "crc32". Atomic.
int st_write(const char *path, const StTensor *tensors, int ntensors,
             const char *const *meta_keys, const char *const *meta_vals, int nmeta,
             char *err, size_t errlen);

typedef struct StFile StFile;
// Reads and validates the whole file. NULL and a one-line reason naming the file on failure.
StFile *st_open(const char *path, char *err, size_t errlen);
// Same, from memory (for fuzzing); name is used in messages.
StFile *st_open_mem(const uint8_t *buf, size_t len, const char *name, char *err, size_t errlen);
void st_close(StFile *f);
int st_count(const StFile *f);
// The tensor called name, or NULL. ndim/shape are filled when non-NULL.
const float *st_get(const StFile *f, const char *name, int *ndim, int64_t shape[4]);
const char *st_tensor_name(const StFile *f, int i);
const char *st_meta(const StFile *f, const char *key);   // NULL if absent
const char *st_name(const StFile *f);                    // the path (or name) it was opened as

// ---- vitmae checkpoints ----
// Config <-> the JSON string stored under metadata "config".
char *mae_config_to_json(const MaeConfig *cfg);           // malloc'd
int   mae_config_from_json(const char *json, MaeConfig *cfg, char *err, size_t errlen);

// Saves parameters (laid out as mae_param_table says) under MAE's names, metadata format and
// config, and, when train_state (a JSON string) is non-NULL, that state and the AdamW moments
// optimizer.exp_avg.<name> / optimizer.exp_avg_sq.<name> (each laid out like the parameters).
// Atomic: the previous file at path stays intact on any failure.
int ckpt_save(const char *path, const MaeConfig *cfg, const float *params, const char *train_state,
              const float *exp_avg, const float *exp_avg_sq, char *err, size_t errlen);

typedef struct {
    MaeConfig cfg;
    float *params;             // malloc'd [mae_num_params(&cfg)]
    int has_decoder;           // 0: encoder-only file (decoder parameters left zero)
    char *train_state;         // malloc'd JSON or NULL
    float *exp_avg, *exp_avg_sq;   // malloc'd [mae_num_params] or NULL
    int classifier;            // 1: a fine-tuned classifier's encoder (no `norm` in the file: 1 / 0 here; no decoder)
} Checkpoint;
// Loads and validates (names, shapes, dtype, config, crc32). A one-line reason naming the file on
// failure. The caller builds the model with mae_create(&ck.cfg, ...) and copies params in.
int  ckpt_load(const char *path, Checkpoint *out, char *err, size_t errlen);
void ckpt_free(Checkpoint *c);
// ckpt_load's checks on a file already opened (e.g. by `vitmae info`, which also reads its metadata).
int  ckpt_from_st(const StFile *f, Checkpoint *out, char *err, size_t errlen);
#endif
