// Threads as workers: each thread its own gradient groups, one meeting a step (dist/workers.h).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dist/workers.h"
#include "core/optim.h"
#include "kernels/cpu.h"

#define TOP_BLOCK 1024

static int is_pow2(long v) { return v > 0 && (v & (v - 1)) == 0; }

int grad_workers_fit(int groups, int workers) {
    return workers >= 2 && workers <= WORKERS_MAX && is_pow2(workers) && groups % workers == 0 && dist_size() == 1;
}

void grad_workers_free(GradWorkers *gw) {
    for (int w = 0; w < gw->workers; w++) {
        grad_reduce_free(&gw->part[w]);
        if (w > 0) free(gw->node[w]);
    }
    memset(gw, 0, sizeof *gw);
}

size_t grad_workers_floats(int groups, size_t n, int workers, int width) {
    int count = groups / workers, depth = 0;
    while ((1 << depth) < count) depth++;
    size_t per_worker = (size_t)depth * n + (width > 1 ? grad_reduce_at_once_floats(width, n) : 0);
    return (size_t)workers * per_worker + (size_t)(workers - 1) * n;
}

int grad_workers_init(GradWorkers *gw, int groups, size_t n, int workers, int width, char *err, size_t errlen) {
    memset(gw, 0, sizeof *gw);
    if (!grad_workers_fit(groups, workers)) {   // a programming error: callers ask grad_workers_fit first
        snprintf(err, errlen, "%d workers cannot share %d gradient groups", workers, groups);
        return -1;
    }
    gw->workers = workers;
    gw->width = width;
    int count = groups / workers;
    for (int w = 0; w < workers; w++) {
        // Worker w's share is a rank's share of dist.h (count groups from w * count), with no exchange.
        if (grad_reduce_init_as(&gw->part[w], count, n, 0, 1, err, errlen)) return -1;
        gw->part[w].groups = groups;
        gw->part[w].first = w * count;
        if (width > 1 && grad_reduce_at_once(&gw->part[w], width, err, errlen)) return -1;
        if (w > 0 && !(gw->node[w] = cpu_calloc_big(n, sizeof(float)))) {
            snprintf(err, errlen, "out of memory for a worker's gradient buffer of %zu MB", n * sizeof(float) >> 20);
            return -1;
        }
    }
    return 0;
}

int grad_workers_step(GradWorkers *gw, float *grads, GroupFn fn, GroupsFn many, void *const *ctx, float *loss,
                      const volatile sig_atomic_t *stop_wish, int *stop, int *failed_here, char *err, size_t errlen) {
    const int W = gw->workers;
    const size_t n = gw->part[0].n;
    SumTree top;
    grad_workers_top_tree(gw, &top);
    double node_loss[WORKERS_MAX];
    int failed[WORKERS_MAX];
    double done_at[WORKERS_MAX];
    gw->node[0] = grads;
    double t_add = 0.0;
    #pragma omp parallel num_threads(W)
    {
        int th = omp_get_thread_num(), nth = omp_get_num_threads();
        // Every kernel a worker calls runs on this thread alone (a region it opens gets one thread).
        omp_set_num_threads(1);
        for (int w = th; w < W; w += nth) {   // one worker per thread, unless OpenMP gave fewer threads
            GradReduce *gr = &gw->part[w];
            gr->reduce_s = 0.0;
            gw->err[w][0] = '\0';
            failed[w] = (many && gw->width > 1 ? grad_reduce_local_at_once(gr, gw->node[w], many, ctx[w], &node_loss[w],
                                                                            gw->err[w], sizeof gw->err[w])
                                               : grad_reduce_local(gr, gw->node[w], fn, ctx[w], &node_loss[w],
                                                                   gw->err[w], sizeof gw->err[w])) != 0;
        }
        done_at[th] = omp_get_wtime();
        #pragma omp barrier
        int any_failed = 0;
        for (int w = 0; w < W; w++) any_failed |= failed[w];
        if (!any_failed && !gw->defer_top) {
            double t0 = omp_get_wtime();
            // Thread th adds its slice of every node (slices of whole 64-byte lines), in blocks of
            // TOP_BLOCK floats that keep the W rows in L1.
            size_t lo = ((size_t)th * n / nth) & ~(size_t)15, hi = th == nth - 1 ? n : ((size_t)(th + 1) * n / nth) & ~(size_t)15;
            for (size_t at = lo; at < hi; at += TOP_BLOCK) sumtree_range(&top, gw->node, at, hi - at < TOP_BLOCK ? hi : at + TOP_BLOCK);
            #pragma omp barrier
            if (th == 0) t_add = omp_get_wtime() - t0;
        }
        if (th == 0) {
            double last = done_at[0];
            for (int i = 1; i < nth; i++) last = done_at[i] > last ? done_at[i] : last;
            gw->wait_s += last - done_at[0];
        }
    }
    gw->reduce_s += t_add;
    for (int w = 0; w < W; w++) gw->reduce_s += gw->part[w].reduce_s / W;   // the workers' own adds, side by side
    *failed_here = 0;
    for (int w = 0; w < W && !*failed_here; w++)
        if (failed[w]) {
            *failed_here = 1;
            snprintf(err, errlen, "%s", gw->err[w]);
        }
    *stop = stop_wish && *stop_wish;
    *loss = (float)(tree_sum_doubles(node_loss, W) / gw->part[0].groups);
    return *failed_here ? -1 : 0;
}

// The top of the tree over the W worker nodes: node[j] += node[j + step] for step = 1, 2, 4, ... (the
// order of tree_sum_floats), then node[0] scaled by 1 / G (a power of two: exact): the adds of dist.c's
// rank combination, so the same bits.
void grad_workers_top_tree(const GradWorkers *gw, SumTree *t) {
    const int W = gw->workers;
    t->n = W;
    t->nadd = 0;
    for (int step = 1; step < W; step *= 2)
        for (int j = 0; j + step < W; j += 2 * step) {
            t->dst[t->nadd] = (unsigned char)j;
            t->src[t->nadd++] = (unsigned char)(j + step);
        }
    t->scale = 1.0f / (float)gw->part[0].groups;
    sumtree_finish(t);
}

void grad_workers_adamw(const GradWorkers *gw, const MaeTensor *t, int nt, float *params, const float *grads, float *m,
                        float *v, float lr, float wd, long step) {
    if (!gw->defer_top) {
        adamw_step(t, nt, params, grads, m, v, lr, wd, step);
        return;
    }
    SumTree top;
    grad_workers_top_tree(gw, &top);
    adamw_step_tree(t, nt, params, &top, gw->node, m, v, lr, wd, step);
}
