// The number of gradient groups a step runs at once: see cmd/groups.h.
#include <stdlib.h>
#include "cmd/groups.h"
#include "core/model.h"
#include "dist/dist.h"
#include "kernels/cpu.h"

// Whether w groups at once fit in half of the memory (or memory is unknown).
static int fits(const MaeConfig *cfg, int per, int w, size_t other_bytes) {
    long have = cpu_physical_memory_bytes();
    if (have <= 0) return 1;
    double need = (double)mae_bytes_needed(cfg, per * w) +
                  (double)grad_reduce_at_once_floats(w, mae_num_params(cfg)) * sizeof(float) + (double)other_bytes;
    return need <= 0.5 * (double)have;
}

// Whether taking 2 w groups at once pays by the rows of a forward (cmd/groups.h).
static int rows_pay(const MaeConfig *cfg, int per, int tokens, int w, int threads) {
    long rows = (long)per * w * tokens;
    return rows < cfg->embed_dim || (threads >= 2 && 2 * rows <= GROUPS_AT_ONCE_ROWS);
}

int groups_at_once(const MaeConfig *cfg, int per, int tokens, int count, size_t other_bytes, int threads) {
    const char *env = getenv("VITMAE_GROUPS_AT_ONCE");
    long cap = env && *env ? strtol(env, NULL, 10) : 0;
    int w = 1;
    while (2 * w <= count && 2 * w <= SUMTREE_MAX && fits(cfg, per, 2 * w, other_bytes) &&
           (cap > 0 ? 2 * w <= cap : rows_pay(cfg, per, tokens, w, threads)))
        w *= 2;
    return w;
}
