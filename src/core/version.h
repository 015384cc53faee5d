// The program's version: `git describe --always --dirty` of the checkout it was built from, else the
// Makefile's VERSION (a copy of the source without git). `vitmae --version` prints it; checkpoints and a
// run's config.json record it as "vitmae_version", and `vitmae info` shows it (docs/interface.md).
#ifndef VITMAE_VERSION_H
#define VITMAE_VERSION_H

const char *vitmae_version(void);

#endif
