// vitmae: pretrain a ViT masked autoencoder on the CPU. Dispatches to one command per file.
#include <stdio.h>
#include <string.h>
#include "commands.h"

typedef struct { const char *name; int (*run)(int, char **); const char *what; } Command;

static const Command commands[] = {
    // Each command registers here as it lands (one line each, sorted as in --help).
    {"train", cmd_train, "pretrain a masked autoencoder on a folder of images"},
    {"reconstruct", cmd_reconstruct, "mask images, reconstruct them, write panels and masked MSE / PSNR"},
    {"attention", cmd_attention, "attention maps of the encoder drawn over images (cls, patch, rollout)"},
    {"data", cmd_data, "check a folder of images: counts, classes, sizes, skipped files"},
    {"info", cmd_info, "the config, parameter count and train state of a checkpoint"},
    {"eval", cmd_eval, "masked loss and PSNR of a checkpoint over a folder, fixed masks"},
    {"bench", cmd_bench, "training-step speed on synthetic data: img/s, GFLOP/s, % of FMA peak, phases"},
    {NULL, NULL, NULL},
};

static void usage(FILE *out) {
    fprintf(out, "usage: vitmae COMMAND [flags]   (vitmae COMMAND --help for its flags)\n\ncommands:\n");
    for (const Command *c = commands; c->name; c++)
        fprintf(out, "  %-12s %s\n", c->name, c->what);
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return 2; }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (const Command *c = commands; c->name; c++)
        if (!strcmp(argv[1], c->name)) return c->run(argc - 1, argv + 1);
    fprintf(stderr, "vitmae: %s: unknown command (see vitmae --help)\n", argv[1]);
    return 2;
}
