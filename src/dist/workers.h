// Threads as workers (docs/performance.md, "Threads as workers"; docs/distributed.md, "Threads as
// workers"): in a process, W threads each take their own share of a step's gradient groups through
// the forward and backward with the one-thread kernels, on a model of their own that shares the
// parameters (core/model.h, mae_create_sharing), and meet once a step, to add their nodes of the
// groups' tree. Against the team (every thread in every kernel, kernels/team.h), the threads meet once
// instead of at every kernel's end: a core that the host holds up holds up the others only there.
//
// The same bits. Worker w of W owns groups [w G/W, (w + 1) G/W): a node of the fixed pairwise tree
// of dist.h, which it sums alone (grad_reduce_local / _at_once: the same adds as one process makes
// there), and the W worker nodes are added in the top of that tree (tree_sum_floats's order), then
// scaled by 1 / G, exactly as N processes of dist.h add their rank nodes. So the gradient, the loss and
// the weights are bitwise those of one thread, of a team of any size and of any number of processes.
//
// Under mpirun (2 processes or more) a process's W workers share its own node of the tree (dist.h: the
// groups [first, first + count) of its GradReduce, made by grad_reduce_init_top): worker w takes
// [first + w count/W, first + (w + 1) count/W), the W worker nodes are added in the top of the
// process's tree, not scaled, and the ranks combine their nodes as they do after their own trees
// (grad_reduce_combine); under shared memory the root's two halves go to the ranks' pass unadded, as
// the ranks' own trees leave them. AdamW beside the backward and the deferred top (defer_top) are for
// one process only: the whole gradient exists only after the ranks' exchange.
#ifndef VITMAE_WORKERS_H
#define VITMAE_WORKERS_H
#include <signal.h>
#include <stddef.h>
#include "core/config.h"
#include "core/model.h"
#include "dist/dist.h"

#define WORKERS_MAX 64

typedef struct EarlyAdamW EarlyAdamW;   // AdamW beside the backward (workers.c)

typedef struct {
    int workers;                    // W
    GradReduce *rank;               // under mpirun: the process's reduction (grad_reduce_init_top); NULL: one process
    int borrowed;                   // w > 0 whose node is the rank's right half (grad_reduce_right); 0: none
    int width;                      // groups each worker computes at once (1: one at a time)
    GradReduce part[WORKERS_MAX];   // worker w's groups and its local tree's buffers
    float *node[WORKERS_MAX];       // worker w's node (node[0]: the caller's gradient, set per step)
    char err[WORKERS_MAX][512];     // worker w's reason when its groups failed
    double reduce_s;                // seconds adding the groups' gradients (workers' and top), summed over steps
    double wait_s;                  // seconds worker 0 waited for the others at the meeting, summed over steps
    int defer_top;                  // set by the caller (one process only): steps leave the top of the tree to
                                    // grad_workers_adamw
    EarlyAdamW *early;              // grad_workers_early_init's tables (NULL: none)
    double early_s;                 // seconds worker 0 updated weights in the step (grad_workers_early_init),
                                    // summed over steps
} GradWorkers;

// Whether `workers` threads can share a process's `count` gradient groups as workers: 2 or more
// threads, a power of two dividing count, at most WORKERS_MAX.
int grad_workers_fit(int count, int workers);

// Buffers for W workers over a process's groups of n-float gradients, each computing `width` of its
// groups at once (a power of two dividing them; 1: one at a time): all G groups in one process (rank
// NULL), or under mpirun those of rank (grad_reduce_init_top, G groups in all; it must outlive gw).
// 0; -1 and err when out of memory (grad_workers_free still releases what was allocated).
int grad_workers_init(GradWorkers *gw, GradReduce *rank, int groups, size_t n, int workers, int width, char *err,
                      size_t errlen);
void grad_workers_free(GradWorkers *gw);
// Floats of gradient buffers grad_workers_init allocates for a process's `count` groups (the caller's
// gradient not counted; under shared memory one buffer fewer is needed).
size_t grad_workers_floats(int count, size_t n, int workers, int width);

// One step, as grad_reduce_step / _at_once: worker w runs its groups through `many` (width > 1) or `fn`
// with ctx[w] (each worker's own model and batch buffers), in a region of W threads where every kernel
// it calls runs on that thread alone; then the workers add their nodes, scale, and leave the gradient
// of the mean loss in grads (n floats, worker 0's node) and the batch loss in *loss. stop_wish (may be
// NULL) read once: *stop. Returns 0; -1 when a worker's group failed (*failed_here set, err says why).
// Under mpirun the ranks then combine their nodes (grad_reduce_combine: grads must be
// grad_reduce_grads(rank, ...)), and -1 also when another rank failed, as grad_reduce_step.
int grad_workers_step(GradWorkers *gw, float *grads, GroupFn fn, GroupsFn many, void *const *ctx, float *loss,
                      const volatile sig_atomic_t *stop_wish, int *stop, int *failed_here, char *err, size_t errlen);

// The top of the tree as adds over the W worker nodes (node[0] live, scaled by 1 / G; under mpirun not
// scaled, and node[W / 2] left apart where the ranks' pass adds it, grad_reduce_right): the step's own
// adds, or, with defer_top set, the caller's: a step then leaves the nodes unsummed, to be summed inside
// AdamW's pass (grad_workers_adamw: each range while it is in the cache, where no gradient clipping
// needs the whole gradient first) or with sumtree_apply.
void grad_workers_top_tree(const GradWorkers *gw, SumTree *t);
// AdamW (core/optim.h) on the step's gradient: adamw_step on grads, or, with defer_top set (gw->node
// holding the last step's unsummed nodes), adamw_step_tree over the nodes with the top tree. A GradWorkers
// that is all zeros (no workers) takes the first.
void grad_workers_adamw(const GradWorkers *gw, const MaeTensor *t, int nt, float *params, const float *grads, float *m,
                        float *v, float lr, float wd, long step);

// AdamW beside the backward (docs/performance.md, "AdamW beside the backward"). The backward finishes
// the model's blocks one by one (core/model.h, mae_backward_units), and once every worker has finished
// block u, the gradients of its Linear weights are final in the workers' nodes. A worker done with its
// groups before the others does not wait for them at the meeting: it takes pieces (64 rows of one
// weight) of the blocks every worker has finished, sums them in the top of the tree and updates them
// (core/optim.h, adamw_tree_rows), while the others finish their last blocks; then every worker takes
// pieces until none is left. Pieces are handed out on demand, so which worker updates a row varies, but
// a row's update reads nothing but that row: the weights are bitwise those of grad_workers_adamw after
// the step. grad_workers_adamw then updates the rest (the biases, LayerNorms, embeddings and heads,
// summed at the backward's end) and marks every rewritten packed copy fresh.
//
// grad_workers_early_init: with the top deferred (defer_top: no clipping, which needs the whole gradient
// first) and every worker's groups computed at once in one call (width == G / W), puts the hook on
// models[w], the model worker w's groups run on (models[0] holds the parameters the others share), and
// allocates the tables; otherwise leaves gw->early NULL. 0; -1 and err when out of memory.
// grad_workers_free releases them: the models then run no backward until their hooks are cleared
// (mae_set_block_done with NULL) or they are freed too.
// grad_workers_plan_adamw, before grad_workers_step: its AdamW's moments and settings (those
// grad_workers_adamw gets after it; the tensors and parameters are models[0]'s). grad_workers_step
// then updates blocks as above; grad_workers_adamw skips them.
// A step whose worker fails does so before its backward (dist.h: a group that cannot be computed), so
// before any update. A non-finite loss is found after the step: its blocks are updated by then, and the
// caller stops without saving them (cmd/train.c).
int grad_workers_early_init(GradWorkers *gw, Mae *const *models, char *err, size_t errlen);
void grad_workers_plan_adamw(GradWorkers *gw, float *m, float *v, float lr, float wd, long step);
#endif
