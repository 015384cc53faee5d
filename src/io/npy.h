// NumPy .npy writer (format version 1.0), readable by numpy.load: little-endian, C order.
#ifndef VITMAE_NPY_H
#define VITMAE_NPY_H
#include <stddef.h>
#include <stdint.h>

enum { NPY_MAX_DIMS = 16 };

// Writes `data` (C order, prod(shape) items, host byte order = little-endian) to path as an .npy
// file. descr is one of "<f4", "<f8", "<i4", "<i8", "|u1", "|i1", "|b1". ndim 0..NPY_MAX_DIMS
// (0 = a scalar, one item); shape entries >= 0. The header is
//   "\x93NUMPY" 01 00 <u16 LE length> "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
// padded with spaces and a final '\n' so that magic + length + header is a multiple of 64 bytes
// (a 1-D shape is written "(n,)", 0-D "()"). Written to a temporary file in the same folder, then
// renamed over path; on any failure nothing is left behind. Returns 0, or -1 with a message.
int npy_write(const char *path, const void *data, const char *descr, int ndim,
              const int64_t *shape, char *err, size_t errlen);
// The same file written to a new file at tmp (O_EXCL; io/files.h's file_tmp_create: the next serial
// where that name is taken, written back into tmp), bound for path (io/files.h's file_group_publish
// moves it there); messages name path. On failure tmp is removed.
int npy_write_to(char *tmp, const char *path, const void *data, const char *descr, int ndim,
                 const int64_t *shape, char *err, size_t errlen);
// Builds the header bytes alone (as npy_write writes them) into buf; returns its length, or -1
// when the arguments are invalid or buf is too small (cap bytes).
int npy_header(char *buf, size_t cap, const char *descr, int ndim, const int64_t *shape,
               char *err, size_t errlen);
#endif
