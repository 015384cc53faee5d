// libFuzzer target: the flag parser. The input is split at NUL bytes into argv[1..]; the flag table
// has one flag of every type (int, long, float, string, bool, choice) with train-like ranges.
// stdout/stderr output is discarded by the fuzzer's -close_fd_mask, if set.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/cli.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    argv[argc++] = "fuzz";
    for (size_t i = 0; i <= size && argc < MAX_ARGS; ) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    int batch = 64, norm = 0;
    long steps = 1000, seed = 0;
    float lr = 0.001f, ratio = 0.75f;
    const char *data_dir = NULL, *mode = "cls";
    Flag flags[] = {
        {"--batch", FLAG_INT, &batch, 1, 4096, NULL, "images per step", "B", 0},
        {"--steps", FLAG_LONG, &steps, 1, 1e12, NULL, "optimizer steps", "N", 0},
        {"--seed", FLAG_LONG, &seed, 0, 9e18, NULL, "random seed", "S", 0},
        {"--lr", FLAG_FLOAT, &lr, 0.0, 10.0, NULL, "learning rate", "LR", 0},
        {"--mask-ratio", FLAG_FLOAT, &ratio, 0.0, 0.99, NULL, "fraction removed", "R", 0},
        {"--data", FLAG_STR, &data_dir, 0, 0, NULL, "folder", "DIR", 0},
        {"--norm-pix", FLAG_BOOL, &norm, 0, 0, NULL, "per-patch normalised loss", NULL, 0},
        {"--mode", FLAG_CHOICE, &mode, 0, 0, "cls|patch|rollout", "map", NULL, 0},
    };
    int nflags = (int)(sizeof flags / sizeof flags[0]);
    char *positional[4];
    int np = 0;
    int rc = cli_parse("fuzz", "[flags] INPUT...", flags, nflags, argc, argv, positional, 4, &np);
    if (rc == CLI_OK) {
        // Whatever parsed must respect the table's ranges.
        if (batch < 1 || batch > 4096 || steps < 1 || seed < 0 || !(lr >= 0 && lr <= 10)
            || !(ratio >= 0 && ratio <= 0.99f) || np < 0 || np > 4) abort();
        if (strcmp(mode, "cls") && strcmp(mode, "patch") && strcmp(mode, "rollout")) abort();
        if (data_dir && !*data_dir) abort();
    } else if (rc != CLI_HELP && rc != CLI_USAGE) {
        abort();
    }
    free(buf);
    return 0;
}
