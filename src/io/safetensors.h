// The safetensors file format (docs/interface.md section 4): 8-byte little-endian header length, a JSON
// header (parsed with cJSON), then the data. Every length, offset, dtype and shape is checked
// before use; crc32 (zlib) over the data section is written and, when present, verified.
// Writing is atomic: temporary file in the same folder, fsync, rename, fsync of the folder.
#ifndef VITMAE_SAFETENSORS_H
#define VITMAE_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>

// F32 tensors only; other dtypes are refused by name.
typedef struct {
    const char *name;
    int ndim;
    int64_t shape[4];
    const float *data;
} StTensor;

// Writes tensors and string metadata (keys[i] -> vals[i]); adds "crc32". Atomic: written under
// ".NAME.tmp-XXXXXX" beside path (io/files.h's file_tmp_create_unique: removed on failure from the folder
// it was made in, wherever that went), then renamed. Test gate VITMAE_FAULT_HOLD_BEFORE_CKPT_RENAME
// (file_test_gate) before the rename.
int st_write(const char *path, const StTensor *tensors, int ntensors,
             const char *const *meta_keys, const char *const *meta_vals, int nmeta,
             char *err, size_t errlen);

typedef struct StFile StFile;
// Reads and validates the whole file (crc32 included). NULL and a one-line reason naming the file on
// failure.
StFile *st_open(const char *path, char *err, size_t errlen);
// Reads and validates the header alone (lengths, offsets, dtypes, shapes, layout, the crc32's text);
// the data stay in the file. Name where each wanted tensor goes with st_take, then st_fill reads the
// data section once and checks its crc32. st_get finds no data in such a file.
StFile *st_open_header(const char *path, char *err, size_t errlen);
// The latest checkpoint of the run folder dir, "DIR/checkpoint.safetensors" (dir's trailing slashes
// dropped), in latest (n bytes; ST_RUN_LATEST_MAX holds any): 1 when it is there, a regular file, else
// 0. The one rule of st_checkpoint_arg.
enum { ST_RUN_LATEST_MAX = 4096 + 32 };
int st_run_latest(const char *dir, char *latest, size_t n);
// A checkpoint named on the command line (every --ckpt, train --init, info's FILE|RUN): a folder that
// holds one (st_run_latest) stands for that file, written into buf (n bytes; ST_RUN_LATEST_MAX holds
// any) and returned, so that the command reads, names and records the file itself; anything else is
// returned as given, for st_open to read or refuse (a folder without one: "DIR: a folder with no
// checkpoint.safetensors"; a folder named NAME.safetensors: "NAME.safetensors: a folder, not a
// checkpoint file"). A folder whose checkpoint.safetensors is there but no file (a folder, a link to
// nothing) gives that path, which st_open refuses with why, as --resume RUN. The one rule of every
// command (docs/interface.md, section 9); --help shows it as `--ckpt FILE|RUN`.
const char *st_checkpoint_arg(const char *arg, char *buf, size_t n);
// Same, from memory (for fuzzing); name is used in messages.
StFile *st_open_mem(const uint8_t *buf, size_t len, const char *name, char *err, size_t errlen);
void st_close(StFile *f);
int st_count(const StFile *f);
// The index of the tensor called name, or -1. ndim/shape are filled when non-NULL.
int st_find(const StFile *f, const char *name, int *ndim, int64_t shape[4]);
// The data of the tensor called name, or NULL (absent, or a file opened by st_open_header).
const float *st_get(const StFile *f, const char *name, int *ndim, int64_t shape[4]);
// Tensor i's data into dst (4 x its elements bytes): now for a file in memory, at st_fill for one
// opened by st_open_header. Calling it after st_fill on such a file is a caller's bug (abort).
void st_take(StFile *f, int i, float *dst);
// Tensor i, which no place receives, checked for NaN and infinite values as st_fill reads it past
// (a file in memory: now); st_nonfinite(f, i) then gives 1 if it held any. For a reader that keeps
// part of a file and still refuses such values in the rest (ckpt_load_encoder, io/checkpoint.h).
// Calling it after st_fill is a caller's bug (abort).
void st_scan(StFile *f, int i);
int st_nonfinite(const StFile *f, int i);
// For a file opened by st_open_header: reads the whole data section in order, the tensors named by
// st_take into their places and the rest through a small buffer, and checks the crc32 over all of
// it (a file damaged or shortened since it was opened is refused; the places then hold part of the
// data). 0, or -1 and a reason naming the file. Once only; for a file in memory it does nothing.
int st_fill(StFile *f, char *err, size_t errlen);
// The same reading for the crc32 alone, st_take's places left untouched: for a reader that refuses
// the file before st_fill, so that damaged data are the reason it gives, as st_open gives it before
// anything else. 0 with err untouched (also for a file in memory, or one already read), or -1 with
// err replaced by the reason.
int st_verify(StFile *f, char *err, size_t errlen);
const char *st_tensor_name(const StFile *f, int i);
// err = "FILE: missing tensor 'NAME'"; when the file holds NAME under a prefix (`module.cls_token`, as
// the state_dict of a model wrapped in DistributedDataParallel or another module), the reason says so:
// the names must be MAE's own (docs/interface.md, section 4). Moments (`optimizer.*`) are no such prefix.
void st_missing(const StFile *f, const char *name, char *err, size_t errlen);
const char *st_meta(const StFile *f, const char *key);   // NULL if absent
const char *st_name(const StFile *f);                    // the path (or name) it was opened as

// "[a, b, c]": a shape as messages print it.
void st_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);
#endif
