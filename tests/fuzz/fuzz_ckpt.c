// libFuzzer target: the safetensors reader (st_open_mem) and the vitmae checkpoint checks
// (ckpt_from_st: metadata, config, names, shapes, crc32) on arbitrary bytes.
#include <stdint.h>
#include <string.h>
#include "io/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    StFile *f = st_open_mem(data, size, "fuzz", err, sizeof err);
    if (!f) {
        if (strchr(err, '\n')) __builtin_trap();   // reasons are one line
        return 0;
    }
    for (int i = 0; i < st_count(f); i++) {
        int nd;
        int64_t shape[4];
        const char *name = st_tensor_name(f, i);
        const float *p = st_get(f, name, &nd, shape);
        if (!p) __builtin_trap();
        int64_t n = 1;
        for (int k = 0; k < nd; k++) n *= shape[k];
        volatile float sink = 0;
        if (n > 0) sink += p[0] + p[n - 1];      // every element lies inside the data section
        (void)sink;
    }
    (void)st_meta(f, "format");
    Checkpoint ck;
    if (ckpt_from_st(f, &ck, err, sizeof err) == 0) ckpt_free(&ck);
    else if (strchr(err, '\n')) __builtin_trap();
    st_close(f);
    return 0;
}
