// Per-kernel profile of a training step (`vitmae bench --profile`): wall time, calls and FLOPs per
// kind of kernel, summed while profiling is on. Off by default; then each kernel pays one load and
// one branch. Only thread 0 of a team (or the serial caller; with threads as workers, dist/workers.h,
// worker 0 alone) keeps time: a kernel's time runs from its
// entry to its return, the wait for the slowest thread included, so the kernels of a step add up to
// the step minus the serial glue between them. Every thread adds the time it waits at the team's
// barrier for the others (the cost of uneven work and of a thread held up, per step and thread).
#ifndef VITMAE_PROF_H
#define VITMAE_PROF_H

typedef enum {
    PROF_GEMM_NT,        // Linear forward: y = x W^T + b
    PROF_GEMM_NN,        // Linear backward, input gradient: dx = dy W
    PROF_GEMM_TN,        // Linear backward, weight gradient: dW += dy^T x
    PROF_ATTN_FWD,       // attention core forward (QK^T, softmax, AV)
    PROF_ATTN_BWD,       // attention core backward
    PROF_LN_FWD,         // LayerNorm forward
    PROF_LN_BWD,         // LayerNorm backward (input and parameter gradients)
    PROF_GELU_FWD,       // GELU forward
    PROF_GELU_BWD,       // GELU backward (fc1's bias gradient: its chunk sums here, their sum under bias grad)
    PROF_BIAS_GRAD,      // bias gradients (column sums)
    PROF_RESIDUAL,       // residual adds, drop path
    PROF_COUNT
} ProfKernel;

typedef struct {
    double seconds[PROF_COUNT];
    double flops[PROF_COUNT];   // counted for the matrix products only (2 per multiply-add)
    long calls[PROF_COUNT];
    double barrier_wait;        // seconds threads spent waiting at the team's barrier, summed over threads
    double barrier_wait_in[PROF_COUNT];   // the part of it inside each kind of kernel (the rest: between)
} ProfTotals;

extern int prof_on;

void prof_enable(int on);          // also clears the totals; call from a serial region
void prof_read(ProfTotals *out);
const char *prof_name(int k);      // "gemm_nt (linear fwd)", ...
const char *prof_key(int k);       // the same as a JSON key: "gemm_nt", ...

// The kind of kernel this thread is in (-1: none), for its barrier waits.
extern _Thread_local int prof_kernel;
double prof_enter(int k);          // prof_kernel = k; omp_get_wtime() on thread 0, -1 elsewhere
void prof_add(int k, double t0, double flops);
// A thread's wait at the team's barrier (kernels/team.c), any thread: each keeps its own sums, by the
// kernel it is in.
void prof_add_wait(int thread, double seconds);

// t0 = PROF_START(k); ... PROF_STOP(k, t0, flops): the kernel's time, when profiling is on; every
// thread of a team marks itself inside the kernel in between.
#define PROF_START(k) (prof_on ? prof_enter(k) : -1.0)
#define PROF_STOP(k, t0, flops)                          \
    do {                                                 \
        if (prof_on) prof_kernel = -1;                   \
        if ((t0) >= 0.0) prof_add((k), (t0), (flops));   \
    } while (0)
#endif
