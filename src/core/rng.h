// Deterministic random numbers: xoshiro256** seeded by splitmix64. The whole state is four
// 64-bit words, so a training run can store it in a checkpoint and continue bit for bit.
#ifndef VITMAE_RNG_H
#define VITMAE_RNG_H
#include <stdint.h>

typedef struct { uint64_t s[4]; } Rng;

// The largest --seed any command takes, 2^53: every JSON reader (Python's, cJSON's) holds a whole
// number up to it exactly, so a seed stored in a checkpoint or printed comes back as itself
// (docs/interface.md, "Seeds").
#define RNG_SEED_MAX 9007199254740992.0

void     rng_seed(Rng *r, uint64_t seed);
uint64_t rng_next(Rng *r);
float    rng_uniform(Rng *r);                 // [0, 1), 24 random bits
double   rng_uniform_double(Rng *r);          // [0, 1), 53 random bits
float    rng_normal(Rng *r, float mean, float std);  // Box-Muller, one draw per call
uint32_t rng_below(Rng *r, uint32_t n);       // uniform in [0, n), unbiased; n > 0
// Beta(a, a), a > 0, as numpy's np.random.beta(a, a) draws it (timm's Mixup): two Gamma(a) variates,
// each by Marsaglia and Tsang's method (a < 1 through Gamma(a + 1) U^(1/a)), kept as logarithms so
// that a small a, whose variates underflow a double, still gives a number in [0, 1].
double   rng_beta_sym(Rng *r, double a);
// An independent stream derived from (seed, a, b): same inputs, same stream, whatever else ran.
void     rng_derive(Rng *r, uint64_t seed, uint64_t a, uint64_t b);
#endif
