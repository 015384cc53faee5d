// Drop path factors and their application (see droppath.h).
#include "kernels/droppath.h"
#include "kernels/prof.h"
#include "kernels/team.h"

static void droppath_residual_forward_body(float *out, const float *branch, const float *x, const float *scale,
                                           int B, int T, int C) {
    long rows = (long)B * T;
    #pragma omp for schedule(static) nowait
    for (long r = 0; r < rows; r++) {
        float s = scale[r / T];
        const float *br = branch + r * C, *xr = x + r * C;
        float *o = out + r * C;
        for (int i = 0; i < C; i++) o[i] = xr[i] + s * br[i];
    }
}

static void droppath_scale_body(float *dbranch, const float *dout, const float *scale, int B, int T, int C) {
    long rows = (long)B * T;
    #pragma omp for schedule(static) nowait
    for (long r = 0; r < rows; r++) {
        float s = scale[r / T];
        const float *d = dout + r * C;
        float *o = dbranch + r * C;
        for (int i = 0; i < C; i++) o[i] = s * d[i];
    }
}

void droppath_residual_forward(float *out, const float *branch, const float *x, const float *scale,
                               int B, int T, int C) {
    double t0 = PROF_START(PROF_RESIDUAL);
    TEAM_RUN(droppath_residual_forward_body(out, branch, x, scale, B, T, C));
    PROF_STOP(PROF_RESIDUAL, t0, 0);
}

void droppath_scale(float *dbranch, const float *dout, const float *scale, int B, int T, int C) {
    double t0 = PROF_START(PROF_RESIDUAL);
    TEAM_RUN(droppath_scale_body(dbranch, dout, scale, B, T, C));
    PROF_STOP(PROF_RESIDUAL, t0, 0);
}

void droppath_factors(float *scale, const float *u, int B, float p) {
    float keep = 1.0f - p;
    for (int b = 0; b < B; b++) scale[b] = p <= 0.0f ? 1.0f : (u[b] >= p ? 1.0f / keep : 0.0f);
}
