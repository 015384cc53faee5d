// Images of a scanned folder whose files hold the same bytes (docs/interface.md, `vitmae data`): a
// photo copied twice trains twice, and the train/val split (a hash of each path, data/dataset.h) can
// put one copy on each side. Cheap: only files of one size (DataItem.bytes, from the scan) are read,
// first their first 64 KiB each, for zlib's CRC-32, then the rest only of files whose first pieces
// have one size and CRC (a folder of same-size files, fixed-size arrays or raw images, is not read
// twice over); files of one size and whole-file CRC are then compared byte for byte, so that two
// different files are never called copies (a CRC-32 is 32 bits: among a million files of one size
// some different ones share it).
#ifndef VITMAE_COPIES_H
#define VITMAE_COPIES_H
#include <stddef.h>
#include "data/dataset.h"

// copy_of[i] for each of the ds->n usable images: the index of the first image before it (scan order)
// whose file holds the same bytes, or -1. A file that cannot be read now (gone since the scan) is no
// copy and has none. Returns how many images are copies (copy_of[i] >= 0), or -1 when out of memory
// (err says so). Files are read in parallel (OpenMP); the answer is the same for any thread count.
int dataset_copies(const Dataset *ds, int *copy_of, char *err, size_t errlen);

#endif
