// Replays the mask fuzz target (tests/fuzz/fuzz_mask.c) over its seed corpus, mutants of it, and the
// saved findings in tests/fuzz/regressions/mask-*: see tests/fuzz/replay.h.
#include "fuzz/fuzz_mask.c"
#include "fuzz/replay.h"
FUZZ_REPLAY_MAIN("mask", 20)
