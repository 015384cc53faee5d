// How many gradient groups one forward and backward of a training (or bench) step take at once
// (docs/distributed.md, "Groups at once"). Shared by cmd/train.c and cmd/bench.c; the threads-as-workers
// checks (parallel_check, parallel_memory_more) and a memory refusal's way out (groups_that_fit) by
// cmd/finetune.c too.
#ifndef VITMAE_GROUPS_H
#define VITMAE_GROUPS_H
#include <stddef.h>
#include "core/config.h"

// w, a power of two <= count (the groups of one micro-batch of this process, G / N / K): doubled from 1
// while the encoder's rows per forward (per * w images of `tokens` tokens) stay below the model's width
// (embed_dim), or, with 2 threads or more, while they would stay within GROUPS_AT_ONCE_ROWS at 2 w; and
// while 2 w groups' model (mae_bytes_needed for their images), the gradient buffers they add
// (grad_reduce_at_once_floats) and other_bytes need at most half of this machine's memory. Below the
// width, every product streams a weight larger than its rows for each group, and taking groups together
// pays (ViT-B/16 at 224, batch 8: 100 rows a group; docs/performance.md, "Gradient groups at once").
// Above it, with threads that meet at a barrier after every product, fewer and larger products pay
// while they stay small (tiny32, 272 rows a group: all 4 at once at 2 threads); with more rows, or at
// 1 thread, where no barrier is saved and the weight gradients' tree costs more than the reduction pass
// it replaces, more rows at once only push a layer's activations out of the cache (docs/performance.md,
// "Gradient groups at once at 2 threads"). Threads as workers (dist/workers.h) go by the rule of their
// number of threads, though each worker is one thread: its groups at once spare it the adding of their
// gradients after the backward, and their weight gradients' tree costs no pass of its own
// (docs/performance.md, "A worker's groups at once"). VITMAE_GROUPS_AT_ONCE=M in the environment sets
// w to the largest power of two <= M and count instead (memory still checked). At most SUMTREE_MAX.
// threads: the step's OpenMP threads (the workers' count for workers). Results do not depend on w.
#define GROUPS_AT_ONCE_ROWS 1200
int groups_at_once(const MaeConfig *cfg, int per, int tokens, int count, size_t other_bytes, int threads);

// A model's out-of-memory message err (mae_create, clf_create: "... for N images at a time") in the
// terms of the user, who asked for --batch B: how B comes to `images` at a time, and that each of
// `workers` threads (when more than 1) holds its own. Written to out.
void groups_oom_message(char *out, size_t n, const char *err, int batch, int images, int workers);

// --groups' largest value, in train, finetune and bench and in the run states their checkpoints keep.
#define GROUPS_MAX 4096

// The way out of a memory refusal (docs/interface.md, "Checked first"): the fewest gradient groups above
// `groups`, doubled up to the batch and `max` (--groups' range), that this job allows
// (dist_check_groups: `procs` processes, `accum` micro-batches) and for which fits(ctx, G) says the
// command's own memory rule is met; 0 when none is (the batch's own pixels, or the parameters, are too
// much). More groups hold fewer images in the model at a time; the results change with G.
int groups_that_fit(int batch, int groups, int procs, int accum, int max, int (*fits)(const void *ctx, int groups),
                    const void *ctx);
// Appends "; --groups G (N images at a time) fits" to the refusal in out (n bytes) when groups_that_fit
// gave G (fits > 0); else leaves it.
void groups_fit_hint(char *out, size_t n, int batch, int fits);

// --parallel (docs/interface.md, "Threads"): "kernels", every thread in every kernel (the team,
// kernels/team.h): *workers = 0; "groups", each of the `threads` threads its own gradient groups
// (dist/workers.h): *workers = threads, which needs a power of two of threads, 2 or more, that divides
// the process's groups (groups / dist_size()) with --accum dividing each thread's share, else -1 and
// the reason in err (a usage error); "auto", groups where they fit, else kernels. Results do not depend
// on it.
int parallel_check(const char *mode, int groups, int accum, int threads, int *workers, char *err, size_t errlen);
// Whether `workers` threads as workers over a process's `groups` groups, each taking `width` groups of
// `per` images at once (the models, the workers' gradient buffers: grad_workers_floats) and other_bytes fit in `fraction` of this
// machine's memory (or memory is unknown): 0; else -1 and "T threads as workers need N bytes ..." in
// err. auto takes the workers only within half of the memory; groups is refused beyond 90%, the memory
// rule of every command (core/model.h, mae_memory_check).
int parallel_memory(const MaeConfig *cfg, int per, int width, int workers, int groups, size_t other_bytes,
                    double fraction, char *err, size_t errlen);
// The bytes a training step of this process takes as the checks above count them: `width` groups of
// `per` images at once in one model (workers 0) or in each of `workers` threads as workers over the
// process's `groups` groups, with other_bytes (its images, the reduction's tree): what the in-memory
// cache of working images leaves room for (cmd/runfolder.h's run_fit_cache).
double groups_step_bytes(const MaeConfig *cfg, int per, int width, int workers, int groups, size_t other_bytes);
// The same check for any model (finetune's classifier: core/classifier.h): base, the bytes the run needs
// already (worker 0's model included), and model, one worker's model of `width` groups' images holding
// np parameters (`shared` bytes of it, its weights, gradients and moments, and any packed copies, which
// the other workers share). *need_out (when not NULL): base and what the other workers add, whether or
// not it fits.
int parallel_memory_more(double base, double model, double shared, size_t np, int width, int workers, int groups,
                         double fraction, double *need_out, char *err, size_t errlen);
#endif
