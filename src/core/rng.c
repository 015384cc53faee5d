// xoshiro256** (Blackman & Vigna), state filled by splitmix64.
#include "core/rng.h"
#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void rng_seed(Rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(Rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

float rng_uniform(Rng *r) { return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f); }

double rng_uniform_double(Rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

// A standard normal draw in double (Box-Muller, one draw per call); u1 in (0, 1] so log(u1) is finite.
static double normal_double(Rng *r) {
    double u1 = 1.0 - rng_uniform_double(r), u2 = rng_uniform_double(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

float rng_normal(Rng *r, float mean, float std) { return mean + std * (float)normal_double(r); }

// log of a Gamma(a, 1) variate, a > 0: Marsaglia and Tsang (2000) for a >= 1; for a < 1,
// Gamma(a) = Gamma(a + 1) U^(1/a), whose logarithm log Gamma(a + 1) + log(U) / a stays finite where
// the variate itself would underflow (a = 0.01 and U < 1e-3: below 1e-300).
static double log_gamma_variate(Rng *r, double a) {
    if (a < 1.0) {
        double u = 1.0 - rng_uniform_double(r);   // (0, 1]: drawn before the variate of a + 1
        return log_gamma_variate(r, a + 1.0) + log(u) / a;
    }
    double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = normal_double(r);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        double u = 1.0 - rng_uniform_double(r);   // (0, 1]
        if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return log(d * v);
    }
}

double rng_beta_sym(Rng *r, double a) {
    double lx = log_gamma_variate(r, a), ly = log_gamma_variate(r, a);
    return 1.0 / (1.0 + exp(ly - lx));   // x / (x + y); exp overflowing gives 0, as x / (x + y) with x << y
}

uint32_t rng_below(Rng *r, uint32_t n) {
    // Lemire's multiply-shift with rejection of the biased low range.
    uint64_t m = (uint64_t)(uint32_t)(rng_next(r) >> 32) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            m = (uint64_t)(uint32_t)(rng_next(r) >> 32) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

void rng_derive(Rng *r, uint64_t seed, uint64_t a, uint64_t b) {
    uint64_t x = seed ^ 0x6A09E667F3BCC909ull;
    uint64_t k = splitmix64(&x) ^ (a * 0xD1B54A32D192ED03ull);
    k = splitmix64(&k) ^ (b * 0x8CB92BA72F3D8DD7ull);
    rng_seed(r, k);
}
