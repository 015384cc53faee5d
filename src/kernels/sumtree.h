// A fixed order of adds over n buffers: how the gradient groups of a step are summed when they are
// computed at once (docs/distributed.md, "Groups at once"). For each add i in order,
// buf[dst[i]] += buf[src[i]] (element by element); then every buffer that is no add's source (live)
// holds a result, multiplied by scale (1: left as it is). Each element is its own chain of float adds,
// so the result does not depend on how the elements are shared among threads.
#ifndef VITMAE_SUMTREE_H
#define VITMAE_SUMTREE_H
#include <stddef.h>

#define SUMTREE_MAX 64
typedef struct SumTree {
    int n, nadd;
    unsigned char dst[SUMTREE_MAX], src[SUMTREE_MAX];
    unsigned char live[SUMTREE_MAX];   // 1: no add's source (sumtree_finish sets it)
    float scale;
} SumTree;

// Sets t->live from the adds.
void sumtree_finish(SumTree *t);
// The tree over floats [off, off + len) of the n buffers, in place; the threads of the caller's team
// (kernels/team.h) share the elements.
void sumtree_apply(const SumTree *t, float *const *buf, size_t off, size_t len);
// The tree over floats [a, b) of the n buffers, in place, on the calling thread alone.
void sumtree_range(const SumTree *t, float *const *buf, size_t a, size_t b);
// Rows [0, rows) of n [rows, cols] blocks: src[g] rows ld_src apart, the live results (scaled) stored
// into dst[g] rows ld_dst apart (one thread; src is changed). stream: stored with streaming stores
// where they fill whole 64-byte lines (for results not read again soon; the caller fences).
void sumtree_rows(const SumTree *t, float *const *src, long ld_src, float *const *dst, long ld_dst, int rows, int cols,
                  int stream);
#endif
