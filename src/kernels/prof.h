// Per-kernel profile of a training step (`vitmae bench --profile`): wall time, calls and FLOPs per
// kind of kernel, summed while profiling is on. Off by default; then each kernel pays one load and
// one branch. Only thread 0 of a team (or the serial caller) keeps time: a kernel's time runs from its
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
} ProfTotals;

extern int prof_on;

void prof_enable(int on);          // also clears the totals; call from a serial region
void prof_read(ProfTotals *out);
const char *prof_name(int k);      // "gemm_nt (linear fwd)", ...
const char *prof_key(int k);       // the same as a JSON key: "gemm_nt", ...

double prof_now_thread0(void);     // omp_get_wtime() on thread 0, -1 elsewhere
void prof_add(int k, double t0, double flops);
// A thread's wait at the team's barrier (kernels/team.c), any thread: each keeps its own sum.
void prof_add_wait(int thread, double seconds);

// t0 = PROF_START(); ... PROF_STOP(k, t0, flops): the kernel's time, when profiling is on.
#define PROF_START() (prof_on ? prof_now_thread0() : -1.0)
#define PROF_STOP(k, t0, flops) do { if ((t0) >= 0.0) prof_add((k), (t0), (flops)); } while (0)
#endif
