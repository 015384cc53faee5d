// Replays the cli fuzz target (tests/fuzz/fuzz_cli.c) over its seed corpus, mutants of it, and the
// saved findings in tests/fuzz/regressions/cli-*: see tests/fuzz/replay.h.
#include "fuzz/fuzz_cli.c"
#include "fuzz/replay.h"
FUZZ_REPLAY_MAIN("cli", 10)
