// Data-parallel training over MPI (OpenMPI): start-up, rank and size, small agreements, and the
// gradient reduction whose result does not depend on the number of processes (docs/distributed.md).
//
// MPI starts only when the program was launched by mpirun (OMPI_COMM_WORLD_SIZE or PMI_SIZE in the
// environment): a plain `./vitmae` never calls MPI_Init and runs as rank 0 of 1. Every function here
// works without MPI as the one-process case (no communication), but grad_reduce_combine (2 or more).
//
// The reduction. A step's global batch of B images is cut into G gradient groups of B / G images
// (G a power of two, recorded with the run). The gradient of a group is computed alone (one forward
// and backward of B / G images, gradients zeroed first), so it is the same bits on any rank. The step
// gradient is the sum of the G group gradients in one fixed pairwise tree (node [l, r) = node [l, m)
// + node [m, r), m = (l + r) / 2), times 1 / G (exact: a power of two). With N processes (N | G),
// rank r owns the groups [r G/N, (r + 1) G/N): a node of that tree, which it sums locally; the top of
// the tree (the N rank nodes) is summed slice by slice, rank i summing slice i: on one machine every
// rank reads the others' buffers in a shared-memory window and stores its summed slice into every
// rank's gradient; across machines after an all-to-all exchange (reduce-scatter), the slices then
// gathered back (allgather). Every addition happens in the same order whatever N, the exchange, the
// micro-batch count or the thread count, so the gradient, and so the weights, are bitwise equal.
#ifndef VITMAE_DIST_H
#define VITMAE_DIST_H
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "kernels/sumtree.h"

// MPI_Init when launched by mpirun (argc/argv may be updated); on ranks > 0 stdout goes to /dev/null
// (rank 0 alone reports). 0 ok; -1 and a reason in err when MPI fails to start.
int  dist_init(int *argc, char ***argv, char *err, size_t errlen);
// 1 when a launcher started this process as a rank (mpirun, srun): known before dist_init, from the
// environment alone.
int  dist_launched(void);
// MPI_Finalize (nothing without MPI). Call once, on every rank, when the command returned.
void dist_finalize(void);
// Ends every process of the job now with this exit status (exit() without MPI): for programming
// errors only. A function below that needs memory for a collective returns, on every rank together,
// DIST_NO_MEMORY_HERE on a rank that lacked it (err says for what) or DIST_NO_MEMORY_ELSEWHERE on the
// others: the rank that lacked it says so, every rank exits 1 (docs/distributed.md, "Faults").
void dist_abort(int code);
enum { DIST_NO_MEMORY_HERE = -3, DIST_NO_MEMORY_ELSEWHERE = -4 };
int  dist_rank(void);    // 0 without MPI
int  dist_size(void);    // 1 without MPI
int  dist_active(void);  // 1 when MPI runs (even with one process)

// The largest value of v over the ranks, returned on every rank.
int  dist_max_int(int v);
double dist_max_double(double v);
// v[0..n) summed over the ranks, in place on every rank (for integer counts: exact in any order).
void dist_sum_doubles(double *v, int n);
// The rank holding the largest key (the lowest such rank on a tie), on every rank.
int  dist_max_rank(double key);
// Rank root's bytes to every rank. The sizes must match on every rank.
void dist_bcast(void *buf, size_t bytes, int root);
void dist_barrier(void);
// Every rank's n bytes, concatenated in rank order on rank 0 into *all (malloc'ed, *total bytes and a
// zero after them; the caller frees it); NULL on the other ranks. Collective. Without MPI: a copy of
// mine. 0, or DIST_NO_MEMORY_HERE / _ELSEWHERE on every rank (nothing gathered; a part, or their sum,
// over 1 GiB counts as memory lacking).
int  dist_gather_bytes(const void *mine, size_t n, char **all, size_t *total, char *err, size_t errlen);

// Every rank must hold the same list of n strings (e.g. the dataset's files, in scan order). Compares
// a hash of each rank's list with rank 0's; where one differs, rank 0 sends its list and that rank
// finds the first differing entry. Returns 0 on every rank when all lists agree; otherwise -2 on a
// differing rank (err names it and the first differing entry) and -1 on the others (err names the
// first differing rank); or DIST_NO_MEMORY_HERE / _ELSEWHERE on every rank (err says for what). words:
// 1 when the entries are words of the command line, which err quotes cut as io/json.h's utf8_clip cuts
// them; 0 when they are file names, quoted whole (docs/interface.md, section 1).
int  dist_check_same_list(const char *const *items, size_t stride, int n, const char *what, int words, char *err,
                          size_t errlen);
// The same for n numbers (n the same on every rank; value k at *(const long long *)(first + k * stride)):
// a hash of each rank's, then, where one differs, rank 0's numbers. 0 on every rank when all agree;
// otherwise -2 on a differing rank, with *index its first differing entry and *theirs rank 0's number
// there, and -1 on the others, with *index the first differing rank; or DIST_NO_MEMORY_HERE / _ELSEWHERE
// on every rank, err saying for what ("rank 0's <what>, to compare").
int  dist_check_same_numbers(const long long *first, size_t stride, int n, int *index, long long *theirs,
                             const char *what, char *err, size_t errlen);
// The first rank whose short text mine (what differs between ranks outside the command line, such as
// the matrix products' path: cmd/main.c) is not rank 0's: that rank on every rank, its text in theirs
// (cut to DIST_TEXT_MAX - 1 bytes, as the comparison is) and rank 0's in ours; 0 when every rank's is
// rank 0's, or without MPI. Collective; allocates nothing.
enum { DIST_TEXT_MAX = 64 };
int  dist_first_other_text(const char *mine, char *theirs, char *ours, size_t n);
// A 64-bit hash of bytes (FNV-1a over 8-byte words, then the tail bytes) continuing from h (start
// from DIST_HASH_START): which rank holds other weights, not a digest against tampering.
#define DIST_HASH_START 0xcbf29ce484222325ull
uint64_t dist_hash_bytes(const void *p, size_t bytes, uint64_t h);

// The pairwise tree over `count` items (a power of two) of n floats, item i at items + i * stride:
// item 0 becomes the sum, added as node [l, r) = node [l, m) + node [m, r), m = (l + r) / 2.
void tree_sum_floats(float *items, size_t stride, int count, size_t n);
// The same tree over count doubles (a power of two).
double tree_sum_doubles(const double *v, int count);

// Default gradient groups for a global batch: the largest power of two <= DIST_DEFAULT_GROUPS that
// divides it.
#define DIST_DEFAULT_GROUPS 4
int  dist_default_groups(int batch);
// Checks that G groups of `batch` images can be shared by `procs` processes in `accum` micro-batches
// each with the guarantee above: G a power of two dividing batch, procs * accum dividing G.
// 0 ok; otherwise (a usage error) a one-line reason in err and which rule failed, so that the command
// names the flag: DIST_BAD_GROUPS (G itself: --groups), DIST_BAD_PROCS (the process count: mpirun -np),
// DIST_BAD_ACCUM (--accum).
enum { DIST_BAD_GROUPS = -1, DIST_BAD_PROCS = -2, DIST_BAD_ACCUM = -3 };
int  dist_check_groups(int batch, int groups, int procs, int accum, char *err, size_t errlen);
// The same where the command knows whether G came from --groups (given): another batch named then
// comes with the --groups it needs, since the one given would be kept.
int  dist_check_groups_given(int batch, int groups, int given, int procs, int accum, char *err, size_t errlen);
// The --accum a refusal asks for when accum must divide d gradient groups: "an --accum that divides D",
// or "--accum 1" where that is the one choice. In use (48 bytes will do); the refusals of
// dist_check_groups, --parallel groups and a resume say it alike.
const char *dist_accum_choice(char *use, size_t n, int d);
// The gradient groups one process has per step, as an --accum refusal names them: "the 4 gradient
// groups of a step" (procs 1) or "the 2 gradient groups each of the 2 processes has per step". In buf
// (96 bytes will do); dist_check_groups and a resume's refusal (cmd/runfolder.c) say them alike.
const char *dist_groups_share(char *buf, size_t n, int groups, int procs);
// The process counts that can run G gradient groups in `accum` micro-batches each: the powers of two
// from 2 that divide G and leave each process a share that accum divides (with accum 1, every power of
// two from 2 up to G). Written into buf as a refusal names them, "2", "2 or 4", "2, 4 or 8" (256 bytes
// will do for any G up to 4096); "" when there is none. Returns the largest, or 0 when there is none.
// dist_check_groups and a resume's refusal (cmd/runfolder.c) say them alike.
int dist_proc_counts(char *buf, size_t n, int groups, int accum);

// One step's gradient over this rank's groups. The caller's group function computes the gradient of
// group g (zeroed, forward, backward) into `grads` (n floats) and its loss into *loss; it returns 0,
// or -1 with a reason in err when the group could not be computed (e.g. an image failed to load).
typedef int (*GroupFn)(void *ctx, int group, float *grads, float *loss, char *err, size_t errlen);
// Or `count` consecutive groups at once (grad_reduce_at_once): the gradient of group first + i computed
// for buffer grads[i] (count distinct buffers of n floats), each bitwise what the group alone would
// give, then summed in `tree` (kernels/sumtree.h, tree->n = count: the local tree's adds within these
// groups, and its scaling when they are the whole step): what the tree's live buffers must hold after.
// mae_backward_set_groups does exactly that. Group first + i's loss into losses[i]. 0, or -1 with a
// reason in err.
typedef int (*GroupsFn)(void *ctx, int first, int count, float *const *grads, const SumTree *tree, float *losses,
                        char *err, size_t errlen);

typedef struct GradShared GradShared;   // the ranks' buffers in shared memory (dist.c)

typedef struct {
    int groups;         // G, for the whole step
    int first, count;   // this rank's groups [first, first + count)
    size_t n;           // floats per gradient
    int depth;          // log2(count)
    float **node;       // [depth] local tree buffers of n floats (node[0] shared when `shared` is set)
    float *slices;      // [n] (+ padding) the N received slices of this rank's share (messages, N > 1)
    size_t *slice_off;  // [N + 1] slice boundaries (floats)
    GradShared *shared; // every rank on one machine: the top of the tree is added in shared memory
    float *grads;       // with `shared`: the n floats the step's gradient must land in (shared memory)
    int width;          // groups computed at once (grad_reduce_at_once); 0: one at a time
    float **leaf;       // [width] the buffers of a chunk's groups
    float *losses;      // [width] their losses
    float **extra;      // width - 1 - log2(width) buffers of n floats beyond the tree's, NULL-terminated
    double reduce_s;    // seconds spent adding groups and exchanging, summed over steps
    double wait_s;      // seconds waiting at the step's first exchange for the slower ranks (not in reduce_s)
    int notes_here;     // in: this rank holds lines for rank 0 to say (files found broken, cmd/runfolder.h)
    int notes_any;      // out, after a step's exchange (also a failed one): some rank held such lines
    double *ranks_status;  // past 64 ranks: the step's status exchange (5 doubles a rank; else on the stack)
    int *ranks_counts;     // past 64 ranks: the message exchange's counts (4 ints a rank)
} GradReduce;

// Buffers for G groups of n-float gradients shared by dist_size() processes (checked before).
// Under mpirun this is collective: every rank must call it (a rank out of memory makes every rank
// return -1). With every rank on one machine the ranks' halves of the top of the tree go into one
// shared-memory window (docs/distributed.md); VITMAE_REDUCE=messages in the environment forces the
// message exchange used across machines.
int  grad_reduce_init(GradReduce *gr, int groups, size_t n, char *err, size_t errlen);
// The levels of the pairwise tree over count items: log2(count), count a power of two (as the
// reduction's and the workers' trees have).
int  dist_tree_depth(int count);
// Floats of gradient buffers grad_reduce_init allocates for G groups over N processes: log2(G / N)
// tree nodes and, with N > 1, the received slices of one gradient (the caller's gradient not counted).
size_t grad_reduce_floats(int groups, int N, size_t n);
// The buffer the step's gradient lands in: gr->grads under shared memory, else `own` (the caller's n
// floats). Pass it to grad_reduce_step and read the gradient there.
float *grad_reduce_grads(const GradReduce *gr, float *own);
// grad_reduce_init for a rank whose own groups are summed elsewhere (its threads as workers,
// dist/workers.h): no buffers for its local tree, only the exchange's (and node[0] under shared memory:
// see grad_reduce_right). Collective as grad_reduce_init.
int  grad_reduce_init_top(GradReduce *gr, int groups, size_t n, char *err, size_t errlen);
// grad_reduce_init's buffers for rank r of N, without MPI (tests build every rank's share in one process).
int  grad_reduce_init_as(GradReduce *gr, int groups, size_t n, int r, int N, char *err, size_t errlen);
// This rank's part alone: the sum of its groups in the fixed tree into grads (not scaled), the sum of
// their losses in *loss. 0 ok, -1 when fn failed (err says why).
int  grad_reduce_local(GradReduce *gr, float *grads, GroupFn fn, void *ctx, double *loss, char *err, size_t errlen);
// The same with gr->width groups at once (grad_reduce_at_once).
int  grad_reduce_local_at_once(GradReduce *gr, float *grads, GroupsFn fn, void *ctx, double *loss, char *err,
                               size_t errlen);
void grad_reduce_free(GradReduce *gr);
// Groups at once (docs/distributed.md, "Groups at once"): this rank's groups in chunks of `width`
// consecutive groups (a power of two dividing them), each chunk one GroupsFn call, for
// grad_reduce_step_at_once. Allocates the gradient buffers this needs beyond the tree's:
// grad_reduce_at_once_floats(width, n) floats. 0; -1 and err when out of memory (grad_reduce_free
// still releases everything).
int  grad_reduce_at_once(GradReduce *gr, int width, char *err, size_t errlen);
size_t grad_reduce_at_once_floats(int width, size_t n);

// Runs this rank's groups through fn, sums their gradients in the fixed tree, combines the ranks, and
// leaves in grads (on every rank; grads = grad_reduce_grads(gr, ...)) the gradient of the mean loss
// over the whole batch: sum / G.
// *loss: the mean of the G group losses (the batch loss, as every group has the same number of removed
// patches). stop_wish (may be NULL): this rank's wish to stop after this step (a signal handler's
// flag), read once its groups are done; *stop: 1 when any rank wished it.
// Returns 0; -1 when a group failed on any rank: err says why on the rank that failed (*failed_here
// set) and "rank R failed" on the others; no rank is left waiting.
int  grad_reduce_step(GradReduce *gr, float *grads, GroupFn fn, void *ctx, float *loss,
                      const volatile sig_atomic_t *stop_wish, int *stop, int *failed_here, char *err, size_t errlen);
// The same with the groups computed gr->width at a time by fn (after grad_reduce_at_once): the same
// adds in the same tree, so the same bits.
int  grad_reduce_step_at_once(GradReduce *gr, float *grads, GroupsFn fn, void *ctx, float *loss,
                              const volatile sig_atomic_t *stop_wish, int *stop, int *failed_here, char *err,
                              size_t errlen);
// The ranks' part of grad_reduce_step alone, for a rank that summed its node of the tree itself (its
// threads as workers, dist/workers.h), under mpirun with 2 processes or more: the node is in grads
// (grad_reduce_grads), not scaled, and where grad_reduce_right gives a buffer its root's two halves are
// in grads and that buffer, not added (under shared memory the add is part of the ranks' pass);
// node_loss is the sum of its groups' losses (tree_sum_doubles's order); *failed_here in: this rank's
// groups failed (err says why). Then as grad_reduce_step.
int  grad_reduce_combine(GradReduce *gr, float *grads, double node_loss, float *loss,
                         const volatile sig_atomic_t *stop_wish, int *stop, int *failed_here, char *err,
                         size_t errlen);
// Where the rank's node leaves the right half of its root for grad_reduce_combine: node[0] under shared
// memory with two groups or more per rank; NULL when the node is to be whole in grads.
float *grad_reduce_right(const GradReduce *gr);
#endif
