// libFuzzer target: the mask-PNG reader (mask_from_mem: decode, nearest resize, per-patch luminance).
// The first two bytes pick the patch size (1..16) and the grid (1..16 patches a side); the rest is
// the file. Every patch must come out 0 or 1.
#include <stdint.h>
#include <stdlib.h>
#include "data/mask.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int patch = 1 + data[0] % 16, grid = 1 + data[1] % 16;
    int L = grid * grid;
    uint8_t *removed = malloc((size_t)L);
    if (!removed) return 0;
    for (int i = 0; i < L; i++) removed[i] = 7;
    char err[256];
    if (mask_from_mem(data + 2, size - 2, patch * grid, patch, removed, err, sizeof err) == 0)
        for (int i = 0; i < L; i++)
            if (removed[i] > 1) abort();
    free(removed);
    return 0;
}
