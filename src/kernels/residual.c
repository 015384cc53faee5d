// The residual add (kernels/residual.h): one loop, the same in every build.
#include "kernels/residual.h"
#include "kernels/prof.h"
#include "kernels/team.h"

static void residual_forward_body(float *out, const float *a, const float *b, long N) {
    #pragma omp for schedule(static) nowait
    for (long i = 0; i < N; i++) out[i] = a[i] + b[i];
}

void residual_forward(float *out, const float *a, const float *b, long N) {
    double t0 = PROF_START(PROF_RESIDUAL);
    TEAM_RUN(residual_forward_body(out, a, b, N));
    PROF_STOP(PROF_RESIDUAL, t0, 0);
}
