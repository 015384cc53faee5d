// The number of gradient groups a step runs at once: see cmd/groups.h.
#include <stdlib.h>
#include "cmd/groups.h"
#include "core/model.h"
#include "dist/dist.h"
#include "kernels/cpu.h"

int groups_at_once(const MaeConfig *cfg, int per, int count, size_t other_bytes) {
    int w = count;
    while (w > SUMTREE_MAX) w /= 2;
    const char *cap = getenv("VITMAE_GROUPS_AT_ONCE");
    if (cap && *cap) {
        long c = strtol(cap, NULL, 10);
        while (w > 1 && w > c) w /= 2;
    }
    long have = cpu_physical_memory_bytes();
    if (have <= 0) return w;
    size_t np = mae_num_params(cfg);
    for (; w > 1; w /= 2) {
        double need = (double)mae_bytes_needed(cfg, per * w) + (double)grad_reduce_at_once_floats(w, np) * sizeof(float) +
                      (double)other_bytes;
        if (need <= 0.5 * (double)have) break;
    }
    return w;
}
