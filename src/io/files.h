// Files and folders: small files written whole and atomically (a temporary file in the same folder,
// fsync, rename: on failure nothing is left behind and the previous file at path, if any, is intact).
// Output folders are cmd/output.h's.
#ifndef VITMAE_FILES_H
#define VITMAE_FILES_H
#include <stddef.h>

// Writes len bytes of data to path. 0 ok, -1 with "PATH: reason" in err.
int file_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
#endif
