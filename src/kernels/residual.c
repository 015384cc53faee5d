// The residual add (kernels/residual.h): one loop, the same in every build.
#include "kernels/residual.h"

void residual_forward(float *out, const float *a, const float *b, long N) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) out[i] = a[i] + b[i];
}
