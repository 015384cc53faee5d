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

// Keys' cubic convolution weights at fractional offset t in [0, 1) for the samples at -1, 0, 1, 2, with
// A = -0.75 (torch's upsample_bicubic2d): |s| <= 1: ((A + 2)|s| - (A + 3)) s^2 + 1;
// 1 < |s| < 2: ((A|s| - 5A)|s| + 8A)|s| - 4A.
static void cubic_weights(double t, double w[4]) {
    const double A = -0.75;
    double s0 = t + 1.0, s1 = t, s2 = 1.0 - t, s3 = 2.0 - t;
    w[0] = ((A * s0 - 5.0 * A) * s0 + 8.0 * A) * s0 - 4.0 * A;
    w[1] = ((A + 2.0) * s1 - (A + 3.0)) * s1 * s1 + 1.0;
    w[2] = ((A + 2.0) * s2 - (A + 3.0)) * s2 * s2 + 1.0;
    w[3] = ((A * s3 - 5.0 * A) * s3 + 8.0 * A) * s3 - 4.0 * A;
}

// Output cell i of n over g source cells (align_corners=False): source coordinate
// (i + 0.5) g / n - 0.5, unclamped; its floor's neighbours -1..2 clamped into [0, g - 1] as torch reads
// them at the borders.
static void cubic_taps(int i, int g, int n, int idx[4], double w[4]) {
    double src = ((double)i + 0.5) * ((double)g / n) - 0.5;
    double f = floor(src);
    cubic_weights(src - f, w);
    for (int k = 0; k < 4; k++) {
        int j = (int)f - 1 + k;
        idx[k] = j < 0 ? 0 : j > g - 1 ? g - 1 : j;
    }
}

void posembed_resize(float *out, const float *in, int g, int n, int dim) {
    memcpy(out, in, (size_t)dim * sizeof(float));
    for (int y = 0; y < n; y++) {
        int iy[4]; double wy[4];
        cubic_taps(y, g, n, iy, wy);
        for (int x = 0; x < n; x++) {
            int ix[4]; double wx[4];
            cubic_taps(x, g, n, ix, wx);
            float *row = out + (size_t)(1 + y * n + x) * dim;
            for (int c = 0; c < dim; c++) {
                double s = 0.0;
                for (int a = 0; a < 4; a++) {
                    const float *src = in + (size_t)(1 + iy[a] * g) * dim + c;
                    double h = 0.0;
                    for (int b = 0; b < 4; b++) h += wx[b] * src[(size_t)ix[b] * dim];
                    s += wy[a] * h;
                }
                row[c] = (float)s;
            }
        }
    }
}
