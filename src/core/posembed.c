// Fixed 2D sin-cos position tables (see core/posembed.h).
#include "core/posembed.h"
#include <math.h>
#include <stddef.h>
#include <string.h>

// MAE's 2D sin-cos table [1 + g*g, dim] (row 0, the CLS row, zero). For patch (y, x) the first
// dim/2 values encode x, the last dim/2 encode y (MAE builds its grid as meshgrid(w, h) and embeds
// grid[0] first); each half is sin(pos * omega_k) for k < dim/4, then cos(pos * omega_k), with
// omega_k = 1 / 10000^(k / (dim/4)).
void mae_sincos_pos_embed(float *out, int grid, int dim) {
    int q = dim / 4;
    memset(out, 0, (size_t)dim * sizeof(float));
    for (int y = 0; y < grid; y++)
        for (int x = 0; x < grid; x++) {
            float *row = out + (size_t)(1 + y * grid + x) * dim;
            for (int k = 0; k < q; k++) {
                double omega = 1.0 / pow(10000.0, (double)k / q);
                row[k] = (float)sin(x * omega);
                row[q + k] = (float)cos(x * omega);
                row[2 * q + k] = (float)sin(y * omega);
                row[3 * q + k] = (float)cos(y * omega);
            }
        }
}
