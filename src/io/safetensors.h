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

// "[a, b, c]": a shape as messages print it.
void st_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);
// Replaces control characters (names in a hostile header may hold them): a reason stays one line.
void st_one_line(char *err);
#endif
