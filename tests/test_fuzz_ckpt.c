// Replays the ckpt fuzz target (tests/fuzz/fuzz_ckpt.c) over its seed corpus, mutants of it, and the
// saved findings in tests/fuzz/regressions/ckpt-*: see tests/fuzz/replay.h.
#include "fuzz/fuzz_ckpt.c"
#include "fuzz/replay.h"
FUZZ_REPLAY_MAIN("ckpt", 4)
