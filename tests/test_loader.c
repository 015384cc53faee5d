// loader: batches made in background threads equal dataset_load_batch bit for bit, for any depth,
// thread count and cache budget, also with a file broken past its header; queue misuse is refused.
#include <omp.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "data/loader.h"

static char dir[600];

static void put_png(const char *name, int w, int h, int c, int seed) {
    uint8_t *px = malloc((size_t)w * h * c);
    for (int i = 0; i < w * h * c; i++) px[i] = (uint8_t)((i * 37 + seed * 101 + (i / c) * 13) & 255);
    char path[800], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (png_write(path, px, w, h, c, NULL, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(2); }
    free(px);
}

enum { N = 7, B = 3, S = 8, STEPS = 9 };

static void items_of(uint64_t step, int *items) {
    for (int k = 0; k < B; k++) items[k] = (int)((step * 5 + (uint64_t)k * 3) % N);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s", check_tmpdir());
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "%02d.png", i);
        put_png(name, 10 + 7 * i, 12 + 5 * i, i % 2 ? 3 : 1, i);
    }
    // 03.png broken past its header: a lazy scan keeps it, batches replace it.
    char bad[700];
    snprintf(bad, sizeof bad, "%s/03.png", dir);
    truncate(bad, 70);
    size_t per = (size_t)S * S * 3;
    float *want = malloc(sizeof(float) * STEPS * B * per), *got = malloc(sizeof(float) * B * per);
    char err[256];
    Dataset ref;
    int want_items[STEPS * B];   // the item whose image each is: 03.png's place taken by the next that decodes
    DatasetOptions ro = {.work_size = 2 * S, .lazy = 1};
    if (dataset_scan(dir, &ro, &ref, err, sizeof err) || ref.n != N) { CHECK(0, "scan: %s", err); return check_done(); }
    for (int s = 0; s < STEPS; s++) {
        int items[B];
        items_of((uint64_t)s, items);
        CHECK(dataset_load_batch(&ref, items, B, S, 3, AUGMENT_CROP, 11, (uint64_t)s, want + (size_t)s * B * per, err,
                                 sizeof err) == 0, "reference batch %d: %s", s, err);
        for (int k = 0; k < B; k++)
            dataset_batch_image(&ref, items, B, k, NULL, 0, S, 3, AUGMENT_CROP, 11, (uint64_t)s, got, &want_items[s * B + k], err,
                                sizeof err);
    }
    const int depths[3] = {1, 2, 5}, threads[3] = {1, 2, 3};
    const long cache[2] = {0, 16};
    for (int di = 0; di < 3; di++)
        for (int ti = 0; ti < 3; ti++)
            for (int ci = 0; ci < 2; ci++) {
                Dataset ds;
                DatasetOptions o = {.work_size = 2 * S, .lazy = 1, .cache_mb = cache[ci]};
                if (dataset_scan(dir, &o, &ds, err, sizeof err)) { CHECK(0, "scan: %s", err); continue; }
                LoaderOptions lo = {S, 3, AUGMENT_CROP, 11, B, depths[di], threads[ti], NULL, 0};
                Loader *l = loader_create(&ds, &lo, err, sizeof err);
                CHECK(l != NULL, "loader: %s", err);
                if (!l) { dataset_free(&ds); continue; }
                int same = 1, items[B], used[B];
                for (int s = 0; s < depths[di] && s < STEPS; s++) { items_of((uint64_t)s, items); loader_push(l, (uint64_t)s, items, B, 0, B); }
                for (int s = 0; s < STEPS; s++) {
                    double waited = -1;
                    int rc = loader_pop(l, (uint64_t)s, got, used, &waited, err, sizeof err);
                    same &= rc == 0 && waited >= 0 && !memcmp(got, want + (size_t)s * B * per, sizeof(float) * B * per) &&
                            !memcmp(used, want_items + s * B, sizeof used);
                    if (s + depths[di] < STEPS) {
                        items_of((uint64_t)(s + depths[di]), items);
                        same &= loader_push(l, (uint64_t)(s + depths[di]), items, B, 0, B) == 0;
                    }
                }
                CHECK(same, "depth %d, %d threads, cache %ld MB: batches (and their items) equal dataset_load_batch", depths[di],
                      threads[ti], cache[ci]);
                DataSkip sk[2];
                int nb = dataset_take_broken(&ds, sk, NULL, 2);
                CHECK(nb == 1 && strstr(sk[0].path, "03.png"), "the broken file is reported (%d)", nb);
                for (int i = 0; i < nb; i++) { free(sk[i].path); free(sk[i].reason); }
                loader_free(l);
                dataset_free(&ds);
            }
    // Misuse: more than depth queued, a step popped out of order, a range larger than max_images;
    // freeing with work queued does not hang.
    LoaderOptions lo = {S, 3, AUGMENT_CROP, 11, 2, 2, 2, NULL, 0};
    Loader *l = loader_create(&ref, &lo, err, sizeof err);
    int items[B] = {0, 1, 2};
    CHECK(loader_push(l, 0, items, B, 0, 3) == -1, "range over max_images refused");
    CHECK(loader_push(l, 0, items, B, 0, 2) == 0 && loader_push(l, 1, items, B, 1, 3) == 0, "two queued");
    CHECK(loader_push(l, 2, items, B, 0, 2) == -1 && loader_pending(l) == 2, "a third refused at depth 2");
    CHECK(loader_pop(l, 1, got, NULL, NULL, err, sizeof err) == -1 && strstr(err, "not queued"), "out of order: %s", err);
    CHECK(loader_pop(l, 0, got, NULL, NULL, err, sizeof err) == 0 && !memcmp(got, want, 0), "pop 0");
    float part[2 * 8 * 8 * 3], whole[3 * 8 * 8 * 3];
    dataset_load_batch(&ref, items, B, S, 3, AUGMENT_CROP, 11, 1, whole, err, sizeof err);
    CHECK(loader_pop(l, 1, part, NULL, NULL, err, sizeof err) == 0 && !memcmp(part, whole + per, sizeof part),
          "a range [1, 3) equals the batch's images 1 and 2");
    loader_push(l, 2, items, B, 0, 2);
    loader_push(l, 3, items, B, 0, 2);
    loader_free(l);
    CHECK(loader_create(&ref, &(LoaderOptions){S, 3, AUGMENT_CROP, 1, 2, 0, 1, NULL, 0}, err, sizeof err) == NULL, "depth 0 refused");
    // Which item each image is (finetune's labels), recorded as the image is made: 06.png decodes for
    // step 0 and breaks before the step is popped (a batch made ahead then finds it broken). Asked at
    // the pop, 'the first not known broken' made image 0 item 0's, though its pixels are item 6's.
    {
        int b6[B] = {6, 0, 1}, used[B] = {-1, -1, -1};
        float ref6[B * 8 * 8 * 3];
        dataset_load_batch(&ref, b6, B, S, 3, AUGMENT_CROP, 11, 0, ref6, err, sizeof err);
        Dataset ds;
        DatasetOptions o = {.work_size = 2 * S, .lazy = 1};   // no cache: each load decodes the file
        Loader *l6 = NULL;
        if (dataset_scan(dir, &o, &ds, err, sizeof err) == 0 &&
            (l6 = loader_create(&ds, &(LoaderOptions){S, 3, AUGMENT_CROP, 11, B, 2, 1, NULL, 0}, err, sizeof err))) {
            loader_push(l6, 0, b6, B, 0, B);
            DataStats st = {0};
            for (int w = 0; w < 5000 && st.decoded < B; w++) { usleep(1000); dataset_stats(&ds, &st); }
            char six[700];
            snprintf(six, sizeof six, "%s/06.png", dir);
            truncate(six, 70);
            int later[2] = {6, 0};
            dataset_load_batch(&ds, later, 2, S, 3, AUGMENT_CROP, 11, 1, got, err, sizeof err);
            CHECK(dataset_is_broken(&ds, 6), "06.png found broken by a later batch");
            int rc = loader_pop(l6, 0, got, used, NULL, err, sizeof err);
            CHECK(rc == 0 && !memcmp(got, ref6, sizeof ref6) && used[0] == 6 && used[1] == 0 && used[2] == 1,
                  "step 0's images are items 6 0 1, as made (rc %d, items %d %d %d)", rc, used[0], used[1], used[2]);
            loader_free(l6);
            dataset_free(&ds);
        } else CHECK(0, "loader: %s", err);
    }
    // The pool reaches the images (data/loader.h): a batch all in a class folder moved away during the
    // run takes its images from the pool's other folder; without one, the step fails.
    {
        char g[700], x[720], y[720], moved[720];
        snprintf(g, sizeof g, "%s/g2", dir);
        snprintf(x, sizeof x, "%s/x", g);
        snprintf(y, sizeof y, "%s/y", g);
        snprintf(moved, sizeof moved, "%s/x.moved", dir);
        mkdir(g, 0777); mkdir(x, 0777); mkdir(y, 0777);
        put_png("g2/x/0.png", 9, 9, 3, 1); put_png("g2/x/1.png", 9, 9, 3, 2); put_png("g2/y/0.png", 9, 9, 3, 3);
        Dataset ds = {0};
        DatasetOptions o = {.work_size = 2 * S, .lazy = 1};
        int pool[3] = {0, 1, 2}, inx[2] = {0, 1}, used[2] = {-1, -1};
        Loader *lp = NULL, *ln = NULL;
        if (dataset_scan(g, &o, &ds, err, sizeof err) == 0 && ds.n == 3 &&
            (lp = loader_create(&ds, &(LoaderOptions){S, 3, AUGMENT_CROP, 11, 2, 1, 1, pool, 3}, err, sizeof err)) &&
            (ln = loader_create(&ds, &(LoaderOptions){S, 3, AUGMENT_CROP, 11, 2, 1, 1, NULL, 0}, err, sizeof err))) {
            CHECK(rename(x, moved) == 0, "folder x moved away");
            loader_push(lp, 0, inx, 2, 0, 2);
            int rc = loader_pop(lp, 0, got, used, NULL, err, sizeof err);
            CHECK(rc == 0 && used[0] == 2 && used[1] == 2, "with the pool: both images item 2's (rc %d: %s; %d %d)", rc,
                  rc ? err : "", used[0], used[1]);
            loader_push(ln, 0, inx, 2, 0, 2);
            CHECK(loader_pop(ln, 0, got, NULL, NULL, err, sizeof err) != 0 && strstr(err, "no image of its batch decodes"),
                  "without it: the step fails (%s)", err);
        } else CHECK(0, "pool loader: %s", err);
        loader_free(lp);
        loader_free(ln);
        if (ds.items) dataset_free(&ds);
    }
    dataset_free(&ref);
    free(want);
    free(got);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_done();
}
