// Background batch loading (see loader.h): a ring of slots, one per queued step; workers take the
// next image of the oldest slot that has one left, so a batch is finished in queue order.
#include "data/loader.h"
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    uint64_t step;
    int *items, n, k0, k1;
    int next, done;          // next image to hand out, images finished (both relative to k0)
    int fail_k;              // first failing image (batch order), -1 none
    int fail_rc;             // its status (dataset_batch_image's)
    char err[512];
    float *out;              // [max_images][size][size][channels]
    int *used;               // [max_images] the item whose image each is (dataset_batch_image)
} Slot;

struct Loader {
    const Dataset *ds;
    LoaderOptions o;
    size_t per;              // floats per image
    Slot *slots;
    int head, count;         // oldest slot, slots queued
    int quit;
    pthread_mutex_t lock;
    pthread_cond_t work, ready;
    pthread_t *threads;
    int nthreads;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
    Loader *l = arg;
    omp_set_num_threads(1);   // the compute threads keep the cores; this thread's regions stay serial
    pthread_mutex_lock(&l->lock);
    for (;;) {
        Slot *s = NULL;
        for (int q = 0; q < l->count && !s; q++) {
            Slot *c = &l->slots[(l->head + q) % l->o.depth];
            if (c->next < c->k1 - c->k0) s = c;
        }
        if (!s && l->quit) break;
        if (!s) { pthread_cond_wait(&l->work, &l->lock); continue; }
        int j = s->next++;
        pthread_mutex_unlock(&l->lock);
        char err[512];
        int rc = dataset_batch_image(l->ds, s->items, s->n, s->k0 + j, l->o.pool, l->o.npool, l->o.size,
                                     l->o.channels, l->o.aug, l->o.seed, s->step, s->out + (size_t)j * l->per,
                                     s->used + j, err, sizeof err);
        pthread_mutex_lock(&l->lock);
        if (rc && (s->fail_k < 0 || j < s->fail_k)) {
            s->fail_k = j;
            s->fail_rc = rc;
            snprintf(s->err, sizeof s->err, "%s", err);
        }
        if (++s->done == s->k1 - s->k0) pthread_cond_broadcast(&l->ready);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

Loader *loader_create(const Dataset *ds, const LoaderOptions *o, char *err, size_t errlen) {
    if (o->depth < 1 || o->threads < 1 || o->max_images < 1 || o->size < 1) {
        snprintf(err, errlen, "loader: depth, threads, images and size must be >= 1");
        return NULL;
    }
    Loader *l = calloc(1, sizeof *l);
    if (!l) { snprintf(err, errlen, "out of memory"); return NULL; }
    l->ds = ds;
    l->o = *o;
    l->per = (size_t)o->size * o->size * o->channels;
    l->slots = calloc((size_t)o->depth, sizeof *l->slots);
    l->threads = calloc((size_t)o->threads, sizeof *l->threads);
    int ok = l->slots && l->threads;
    for (int i = 0; ok && i < o->depth; i++) {
        l->slots[i].items = malloc(sizeof(int) * 1);
        l->slots[i].out = malloc(sizeof(float) * l->per * o->max_images);
        l->slots[i].used = malloc(sizeof(int) * (size_t)o->max_images);
        ok = l->slots[i].items && l->slots[i].out && l->slots[i].used;
    }
    if (!ok) { loader_free(l); snprintf(err, errlen, "out of memory for %d prefetched batches", o->depth); return NULL; }
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->work, NULL);
    pthread_cond_init(&l->ready, NULL);
    for (int i = 0; i < o->threads; i++) {
        int rc = pthread_create(&l->threads[i], NULL, worker, l);
        if (rc != 0) {
            loader_free(l);
            snprintf(err, errlen, "cannot start %d loader thread%s: %s (a limit on processes, ulimit -u, or no memory for "
                     "their stacks)", o->threads, o->threads == 1 ? "" : "s", strerror(rc));
            return NULL;
        }
        l->nthreads++;
    }
    return l;
}

int loader_push(Loader *l, uint64_t step, const int *items, int n, int k0, int k1) {
    if (k0 < 0 || k1 > n || k1 - k0 < 1 || k1 - k0 > l->o.max_images) return -1;
    pthread_mutex_lock(&l->lock);
    if (l->count == l->o.depth) { pthread_mutex_unlock(&l->lock); return -1; }
    Slot *s = &l->slots[(l->head + l->count) % l->o.depth];
    int *it = realloc(s->items, sizeof(int) * (size_t)n);
    if (!it) { pthread_mutex_unlock(&l->lock); return -1; }
    s->items = it;
    memcpy(s->items, items, sizeof(int) * (size_t)n);
    s->step = step;
    s->n = n;
    s->k0 = k0;
    s->k1 = k1;
    s->next = s->done = 0;
    s->fail_k = -1;
    s->err[0] = 0;
    l->count++;
    pthread_cond_broadcast(&l->work);
    pthread_mutex_unlock(&l->lock);
    return 0;
}

int loader_pop(Loader *l, uint64_t step, float *out, int *items, double *waited_s, char *err, size_t errlen) {
    double t0 = now_s();
    pthread_mutex_lock(&l->lock);
    Slot *s = &l->slots[l->head];
    if (l->count == 0 || s->step != step) {
        pthread_mutex_unlock(&l->lock);
        snprintf(err, errlen, "loader: step %llu was not queued", (unsigned long long)step);
        return -1;
    }
    while (s->done < s->k1 - s->k0) pthread_cond_wait(&l->ready, &l->lock);
    pthread_mutex_unlock(&l->lock);
    if (waited_s) *waited_s = now_s() - t0;
    int rc = 0;
    if (s->fail_k >= 0) { snprintf(err, errlen, "%s", s->err); rc = s->fail_rc; }
    else {
        memcpy(out, s->out, sizeof(float) * l->per * (size_t)(s->k1 - s->k0));
        if (items) memcpy(items, s->used, sizeof(int) * (size_t)(s->k1 - s->k0));
    }
    pthread_mutex_lock(&l->lock);
    l->head = (l->head + 1) % l->o.depth;
    l->count--;
    pthread_mutex_unlock(&l->lock);
    return rc;
}

int loader_pending(const Loader *l) { return l->count; }

void loader_free(Loader *l) {
    if (!l) return;
    if (l->nthreads) {
        pthread_mutex_lock(&l->lock);
        l->quit = 1;
        // Queued work is abandoned: nothing waits for it.
        for (int q = 0; q < l->count; q++) {
            Slot *s = &l->slots[(l->head + q) % l->o.depth];
            s->next = s->k1 - s->k0;
        }
        pthread_cond_broadcast(&l->work);
        pthread_mutex_unlock(&l->lock);
        for (int i = 0; i < l->nthreads; i++) pthread_join(l->threads[i], NULL);
        pthread_mutex_destroy(&l->lock);
        pthread_cond_destroy(&l->work);
        pthread_cond_destroy(&l->ready);
    }
    for (int i = 0; l->slots && i < l->o.depth; i++) {
        free(l->slots[i].items);
        free(l->slots[i].out);
        free(l->slots[i].used);
    }
    free(l->slots);
    free(l->threads);
    free(l);
}
