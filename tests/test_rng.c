// rng: reproducible streams, ranges, and rough uniformity/normality.
#include "check.h"
#include "core/rng.h"

int main(void) {
    Rng a, b;
    rng_seed(&a, 42); rng_seed(&b, 42);
    int same = 1;
    for (int i = 0; i < 1000; i++) same &= rng_next(&a) == rng_next(&b);
    CHECK(same, "same seed gives the same stream");
    rng_seed(&b, 43);
    CHECK(rng_next(&a) != rng_next(&b), "different seeds differ");

    double sum = 0, sum2 = 0; int in_range = 1;
    rng_seed(&a, 1);
    for (int i = 0; i < 100000; i++) {
        float u = rng_uniform(&a);
        in_range &= u >= 0.0f && u < 1.0f;
        sum += u;
    }
    CHECK(in_range, "uniform in [0,1)");
    CHECK_CLOSE(sum / 100000, 0.5, 0.01, 0, "uniform mean");

    sum = 0;
    for (int i = 0; i < 100000; i++) { float z = rng_normal(&a, 0, 1); sum += z; sum2 += z * z; }
    CHECK_CLOSE(sum / 100000, 0.0, 0.02, 0, "normal mean");
    CHECK_CLOSE(sum2 / 100000, 1.0, 0.03, 0, "normal variance");

    int counts[7] = {0}; int ok = 1;
    for (int i = 0; i < 70000; i++) { uint32_t k = rng_below(&a, 7); ok &= k < 7; if (k < 7) counts[k]++; }
    CHECK(ok, "rng_below in range");
    for (int k = 0; k < 7; k++) CHECK_CLOSE(counts[k], 10000, 400, 0, "rng_below bucket");

    Rng d1, d2, d3;
    rng_derive(&d1, 5, 1, 2); rng_derive(&d2, 5, 1, 2); rng_derive(&d3, 5, 2, 1);
    uint64_t x1 = rng_next(&d1);
    CHECK(x1 == rng_next(&d2), "derived streams reproducible");
    CHECK(x1 != rng_next(&d3), "derived streams differ by key");
    return check_done();
}
