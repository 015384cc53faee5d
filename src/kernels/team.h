// Team mode: one OpenMP parallel region around many kernels (a stack of transformer blocks,
// core/encoder.c: stack_forward, stack_backward) instead of one region per kernel, so that the threads
// stay in the region between kernels instead of being put to sleep and woken for every kernel
// (docs/performance.md, "Where the time goes").
//
// Inside such a region every thread of the team calls each kernel with the same arguments. A kernel
// written for it puts its loops in a body function with orphaned `#pragma omp for schedule(static)`
// loops and runs that body through TEAM_RUN: in team mode the loops are shared among the team that is
// already there (the closing barrier of each `omp for` orders the kernel before the next one),
// otherwise the kernel opens a region of its own, as before. The loops, their static schedules and so
// the results are the same either way; like every kernel, they do not depend on the thread count.
#ifndef VITMAE_TEAM_H
#define VITMAE_TEAM_H

// Nonzero on a thread while it is inside a team-mode region (set by team_begin, per thread).
extern _Thread_local int team_mode;

// Call on every thread at the start / end of a team-mode region.
static inline void team_begin(void) { team_mode = 1; }
static inline void team_end(void) { team_mode = 0; }

// Runs `call` (a body with orphaned `omp for` loops) on the current team, or on a new region.
#define TEAM_RUN(call)                                   \
    do {                                                 \
        if (team_mode) {                                 \
            call;                                        \
        } else {                                         \
            _Pragma("omp parallel") { call; }            \
        }                                                \
    } while (0)
#endif
