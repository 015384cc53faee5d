// Replays the image fuzz target (tests/fuzz/fuzz_image.c) over its seed corpus, mutants of it, and the
// saved findings in tests/fuzz/regressions/image-*: see tests/fuzz/replay.h.
#include "fuzz/fuzz_image.c"
#include "fuzz/replay.h"
FUZZ_REPLAY_MAIN("image", 20)
