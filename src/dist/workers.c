// Threads as workers: each thread its own gradient groups, one meeting a step (dist/workers.h).
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dist/workers.h"
#include "core/optim.h"
#include "kernels/cpu.h"
#include "kernels/stream.h"
#include "kernels/team.h"

#define TOP_BLOCK 1024
#define PIECE_ROWS 64   // a multiple of GEMM_COPY_ROWS (adamw_tree_rows)

typedef struct { GradWorkers *gw; int w; } WorkerHook;

// AdamW beside the backward (workers.h). Unit u's pieces: for each of its weights in turn, its rows in
// runs of PIECE_ROWS.
struct EarlyAdamW {
    int units;
    int (*weights)[MAE_UNIT_WEIGHTS];   // [units] tensor indices (mae_unit_weights)
    int *pieces;                        // [units]
    atomic_int *claimed;                // [units] pieces handed out this step (may run past pieces[u])
    atomic_int progress[WORKERS_MAX];   // units worker w has finished this step
    atomic_int returned[WORKERS_MAX];   // worker w's groups are done (or failed)
    int active;                         // this step updates beside the backward
    int planned;                        // grad_workers_plan_adamw set the arguments below for the next step
    float *m, *v, lr, wd;
    long step;
    const MaeTensor *t;                 // the model's tensors (nt) and parameters
    int nt;
    float *params;
    SumTree top;
    unsigned char *skip;                // [nt] tensors updated beside the last step
    WorkerHook hook[WORKERS_MAX];
};

static int is_pow2(long v) { return v > 0 && (v & (v - 1)) == 0; }

int grad_workers_fit(int count, int workers) {
    return workers >= 2 && workers <= WORKERS_MAX && is_pow2(workers) && count % workers == 0;
}

void grad_workers_free(GradWorkers *gw) {
    for (int w = 0; w < gw->workers; w++) {
        grad_reduce_free(&gw->part[w]);
        if (w > 0 && w != gw->borrowed) free(gw->node[w]);
    }
    if (gw->early) {
        free(gw->early->weights);
        free(gw->early->pieces);
        free(gw->early->claimed);
        free(gw->early->skip);
        free(gw->early);
    }
    memset(gw, 0, sizeof *gw);
}

size_t grad_workers_floats(int count, size_t n, int workers, int width) {
    size_t per_worker = (size_t)dist_tree_depth(count / workers) * n +
                        (width > 1 ? grad_reduce_at_once_floats(width, n) : 0);
    return (size_t)workers * per_worker + (size_t)(workers - 1) * n;
}

int grad_workers_init(GradWorkers *gw, GradReduce *rank, int groups, size_t n, int workers, int width, char *err,
                      size_t errlen) {
    memset(gw, 0, sizeof *gw);
    int mine = rank ? rank->count : groups, first = rank ? rank->first : 0;
    if (!grad_workers_fit(mine, workers)) {   // a programming error: callers ask grad_workers_fit first
        snprintf(err, errlen, "%d workers cannot share %d gradient groups", workers, mine);
        return -1;
    }
    gw->workers = workers;
    gw->width = width;
    gw->rank = rank;
    if (rank && grad_reduce_right(rank)) {   // the right half of the process's root: the rank's buffer
        gw->borrowed = workers / 2;
        gw->node[gw->borrowed] = grad_reduce_right(rank);
    }
    int count = mine / workers;
    for (int w = 0; w < workers; w++) {
        // Worker w's share is a rank's share of dist.h (count groups from first + w * count), with no exchange.
        if (grad_reduce_init_as(&gw->part[w], count, n, 0, 1, err, errlen)) return -1;
        gw->part[w].groups = groups;
        gw->part[w].first = first + w * count;
        if (width > 1 && grad_reduce_at_once(&gw->part[w], width, err, errlen)) return -1;
        if (w > 0 && w != gw->borrowed && !(gw->node[w] = cpu_calloc_big(n, sizeof(float)))) {
            snprintf(err, errlen, "out of memory for a worker's gradient buffer of %zu MB", n * sizeof(float) >> 20);
            return -1;
        }
    }
    return 0;
}

// ---- AdamW beside the backward: the step's side (workers.h) -------------------------------------------

// Piece p of unit u: its weight and rows.
static void piece_rows(const EarlyAdamW *e, int u, int p, int *k, int *r0, int *r1) {
    *k = *r0 = *r1 = 0;
    for (int i = 0; i < MAE_UNIT_WEIGHTS; i++) {
        *k = e->weights[u][i];
        int rows = e->t[*k].shape[0], n = (rows + PIECE_ROWS - 1) / PIECE_ROWS;
        if (p < n) {
            *r0 = p * PIECE_ROWS;
            *r1 = *r0 + PIECE_ROWS < rows ? *r0 + PIECE_ROWS : rows;
            return;
        }
        p -= n;
    }
}

// Updates pieces of the units every worker has finished, as long as any is left; with `wait`, also
// waits (spinning, then sleeping 50 us at a time) for the other workers to finish more units, until
// every unit is handed out or a worker has returned short of the last one. Returns the seconds spent
// updating.
static double early_take(GradWorkers *gw, int wait) {
    EarlyAdamW *e = gw->early;
    const int W = gw->workers;
    int lo = 0, spin_us = team_spin_us();
    double idle_since = -1.0, busy = 0.0;
    for (;;) {
        int ready = e->units, stalled = 0;
        for (int x = 0; x < W; x++) {
            int p = atomic_load_explicit(&e->progress[x], memory_order_acquire);
            ready = p < ready ? p : ready;
            stalled |= p < e->units && atomic_load_explicit(&e->returned[x], memory_order_acquire);
        }
        int took = 0;
        double t0 = omp_get_wtime();
        for (int u = lo; u < ready; u++) {
            if (atomic_load_explicit(&e->claimed[u], memory_order_relaxed) >= e->pieces[u]) {
                if (u == lo) lo++;
                continue;
            }
            for (int p; (p = atomic_fetch_add_explicit(&e->claimed[u], 1, memory_order_relaxed)) < e->pieces[u];) {
                int k, r0, r1;
                piece_rows(e, u, p, &k, &r0, &r1);
                adamw_tree_rows(&e->t[k], e->params, &e->top, gw->node, e->m, e->v, e->lr, e->wd, e->step, r0, r1);
                took = 1;
            }
        }
        if (took) busy += omp_get_wtime() - t0;
        if (!wait || ready == e->units || stalled) return busy;
        if (took) { idle_since = -1.0; continue; }
        double now = omp_get_wtime();
        if (idle_since < 0) idle_since = now;
        if (spin_us >= 0 && (now - idle_since) * 1e6 > spin_us) {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        } else {
            cpu_relax();
        }
    }
}

// The hook on worker w's model (core/model.h, mae_set_block_done): its unit is finished. It updates
// nothing itself: pieces taken between a worker's blocks made the step slower (docs/performance.md,
// "AdamW beside the backward").
static void early_block_done(void *ctx, int unit) {
    WorkerHook *h = ctx;
    EarlyAdamW *e = h->gw->early;
    if (!e->active) return;
    stream_fence();   // the unit's gradients, stored with streaming stores too, before its progress
    atomic_store_explicit(&e->progress[h->w], unit + 1, memory_order_release);
}

static void early_begin(GradWorkers *gw) {
    EarlyAdamW *e = gw->early;
    e->active = e->planned;
    e->planned = 0;
    if (!e->active) return;
    for (int w = 0; w < gw->workers; w++) {
        atomic_store(&e->progress[w], 0);
        atomic_store(&e->returned[w], 0);
    }
    for (int u = 0; u < e->units; u++) atomic_store(&e->claimed[u], 0);
    grad_workers_top_tree(gw, &e->top);
}

// After the step's meeting: the weights of every unit whose pieces were all handed out are updated, for
// grad_workers_adamw to skip (none when the step did not update beside its backward).
static void early_end(GradWorkers *gw) {
    EarlyAdamW *e = gw->early;
    memset(e->skip, 0, (size_t)e->nt);
    if (!e->active) return;
    e->active = 0;
    for (int u = 0; u < e->units; u++)
        if (atomic_load(&e->claimed[u]) >= e->pieces[u])
            for (int i = 0; i < MAE_UNIT_WEIGHTS; i++) e->skip[e->weights[u][i]] = 1;
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
    EarlyAdamW *e = gw->rank ? NULL : gw->early;   // one process only (workers.h)
    const int defer = gw->defer_top && !gw->rank;
    if (e) early_begin(gw);
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
            if (e && e->active) atomic_store_explicit(&e->returned[w], 1, memory_order_release);
        }
        // Pieces of the finished blocks until none is left, rather than waiting here (on a thread that
        // runs several workers one after the other, the others' blocks are not waited for). The time
        // spent waiting for them counts as waiting at the meeting.
        double returned_at = omp_get_wtime(), busy = e && e->active ? early_take(gw, nth == W) : 0.0;
        done_at[th] = omp_get_wtime();
        if (th == 0) {
            gw->early_s += busy;
            gw->wait_s += done_at[0] - returned_at - busy;
        }
        #pragma omp barrier
        int any_failed = 0;
        for (int w = 0; w < W; w++) any_failed |= failed[w];
        if (!any_failed && !defer && (top.nadd > 0 || top.scale != 1.0f)) {
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
    if (e) early_end(gw);
    gw->reduce_s += t_add;
    for (int w = 0; w < W; w++) gw->reduce_s += gw->part[w].reduce_s / W;   // the workers' own adds, side by side
    *failed_here = 0;
    for (int w = 0; w < W && !*failed_here; w++)
        if (failed[w]) {
            *failed_here = 1;
            snprintf(err, errlen, "%s", gw->err[w]);
        }
    if (gw->rank) {   // the ranks combine their nodes (dist.h), as after their own trees
        GradReduce *gr = gw->rank;
        double reduce0 = gr->reduce_s, wait0 = gr->wait_s;
        int rc = grad_reduce_combine(gr, grads, tree_sum_doubles(node_loss, W), loss, stop_wish, stop, failed_here,
                                     err, errlen);
        gw->reduce_s += gr->reduce_s - reduce0;
        gw->wait_s += gr->wait_s - wait0;
        return rc;
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
            if (gw->borrowed && step == W / 2) break;   // the root's add: the ranks' pass does it
            t->dst[t->nadd] = (unsigned char)j;
            t->src[t->nadd++] = (unsigned char)(j + step);
        }
    t->scale = gw->rank ? 1.0f : 1.0f / (float)gw->part[0].groups;   // the ranks' pass scales
    sumtree_finish(t);
}

void grad_workers_adamw(const GradWorkers *gw, const MaeTensor *t, int nt, float *params, const float *grads, float *m,
                        float *v, float lr, float wd, long step) {
    if (!gw->defer_top || gw->rank) {
        adamw_step(t, nt, params, grads, m, v, lr, wd, step);
        return;
    }
    SumTree top;
    grad_workers_top_tree(gw, &top);
    EarlyAdamW *e = gw->early;
    adamw_step_tree(t, nt, params, &top, gw->node, m, v, lr, wd, step, e ? e->skip : NULL);
    if (e) memset(e->skip, 0, (size_t)e->nt);   // a second call, or one without a step, updates them all
}

// ---- AdamW beside the backward ---------------------------------------------------------------------

int grad_workers_early_init(GradWorkers *gw, Mae *const *models, char *err, size_t errlen) {
    const int W = gw->workers;
    const GradReduce *gr = &gw->part[0];
    if (!gw->defer_top || gw->rank || gr->count != (gw->width > 1 ? gw->width : 1)) return 0;
    EarlyAdamW *e = calloc(1, sizeof *e);
    int units = mae_backward_units(models[0]);
    if (e) {
        gw->early = e;
        e->units = units;
        e->t = mae_tensors(models[0], &e->nt);
        e->params = mae_params(models[0]);
        e->weights = calloc((size_t)units + 1, sizeof *e->weights);
        e->pieces = calloc((size_t)units + 1, sizeof *e->pieces);
        e->claimed = calloc((size_t)units + 1, sizeof *e->claimed);
        e->skip = calloc((size_t)e->nt + 1, 1);
    }
    if (!e || !e->weights || !e->pieces || !e->claimed || !e->skip) {
        snprintf(err, errlen, "out of memory for the workers' update tables");
        return -1;
    }
    for (int u = 0; u < units; u++) {
        mae_unit_weights(models[0], u, e->weights[u]);
        for (int i = 0; i < MAE_UNIT_WEIGHTS; i++)
            e->pieces[u] += (e->t[e->weights[u][i]].shape[0] + PIECE_ROWS - 1) / PIECE_ROWS;
    }
    for (int w = 0; w < W; w++) {
        e->hook[w] = (WorkerHook){gw, w};
        mae_set_block_done(models[w], early_block_done, &e->hook[w]);
    }
    return 0;
}

void grad_workers_plan_adamw(GradWorkers *gw, float *m, float *v, float lr, float wd, long step) {
    EarlyAdamW *e = gw->early;
    if (!e) return;
    e->planned = 1;
    e->m = m; e->v = v;
    e->lr = lr; e->wd = wd; e->step = step;
}

