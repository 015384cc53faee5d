// Features and probes against PyTorch (tools/reference_probe.py -> tests/fixtures/probe_expected.safetensors):
//   - features_batch on the attention fixture (model + image) for every layer, cls and mean pooling,
//     within 1e-5 of the float64 reference; `vitmae embed` writes the same numbers to .npy + .txt;
//     features are bitwise the same for batch 1 and 3 and for 1 and 2 threads;
//   - probe_knn's predictions equal DINO's knn_classifier for three (k, T), one with k > n;
//   - probe_linear_train's normalisation, trained weight and bias within tight tolerances of
//     torch.optim.SGD on the same row order, and equal predictions; bitwise the same for 1 and 2 threads.
#include <omp.h>
#include <stdint.h>
#include "check.h"
#include "cmd/commands.h"
#include "data/image.h"
#include "infer/features.h"
#include "infer/probe.h"
#include "io/checkpoint.h"

static char root[1024];

static const float *get(const StFile *f, const char *name, long want) {
    int nd;
    int64_t sh[4];
    const float *p = st_get(f, name, &nd, sh);
    CHECK(p != NULL, "fixture tensor %s", name);
    if (!p) return NULL;
    long n = 1;
    for (int i = 0; i < nd; i++) n *= (long)sh[i];
    CHECK(n == want, "%s: %ld values, want %ld", name, n, want);
    return n == want ? p : NULL;
}

static int *labels_of(const float *v, long n) {
    int *l = malloc((size_t)n * sizeof *l);
    for (long i = 0; i < n; i++) l[i] = (int)v[i];
    return l;
}

static double max_abs_diff(const float *a, const float *b, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) { double d = fabs((double)a[i] - b[i]); if (!(d <= m)) m = d; }
    return m;
}

static void test_features(const StFile *ref) {
    char path[2048], img_path[2048], err[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/attn_model.safetensors", root);
    snprintf(img_path, sizeof img_path, "%s/tests/fixtures/attn_input.png", root);
    int status;
    FeatureModel *fm = features_open(path, 0, 3, &status, err, sizeof err);
    CHECK(fm != NULL, "features_open: %s", err);
    if (!fm) return;
    const MaeConfig *cfg = features_config(fm);
    int S = cfg->img_size, C = cfg->in_chans, D = features_dim(fm, &(FeaturesSpec){0}), depth = cfg->depth;
    const float *want = get(ref, "features", (long)depth * 2 * D);
    size_t per = (size_t)S * S * C;
    float *img = malloc(3 * per * sizeof *img), *out = malloc(3 * (size_t)D * sizeof *out);
    float *single = malloc((size_t)D * sizeof *single);
    CHECK(image_load_view(img_path, 0, S, VIEW_WHOLE, C, img, err, sizeof err) == 0, "load %s: %s", img_path, err);
    // Images 1 and 2 of a batch: the fixture flipped, then the fixture again.
    memcpy(img + per, img, per * sizeof *img);
    image_flip_h(img + per, S, S, C);
    memcpy(img + 2 * per, img, per * sizeof *img);
    double worst = 0;
    for (int l = 0; want && l < depth; l++)
        for (int p = 0; p < 2; p++) {
            FeaturesSpec spec = {p ? FEATURES_POOL_MEAN : FEATURES_POOL_CLS, l, VIEW_WHOLE, 1};
            features_batch(fm, img, 1, &spec, single);
            const float *w = want + ((size_t)l * 2 + p) * D;
            for (int i = 0; i < D; i++) {
                CHECK_CLOSE(single[i], w[i], 1e-5, 1e-5, "feature");
                double d = fabs(single[i] - w[i]);
                if (d > worst) worst = d;
            }
            // The batch does not change an image's numbers, nor does the thread count.
            omp_set_num_threads(1);
            features_batch(fm, img, 3, &spec, out);
            omp_set_num_threads(2);
            CHECK(!memcmp(out, single, (size_t)D * sizeof *out), "layer %d pool %d: batch 3, 1 thread == batch 1", l, p);
            CHECK(!memcmp(out + 2 * (size_t)D, single, (size_t)D * sizeof *out), "layer %d pool %d: third image", l, p);
            CHECK(memcmp(out + (size_t)D, single, (size_t)D * sizeof *out), "layer %d pool %d: the flipped image differs", l, p);
        }
    printf("features: max |d| %.3g over %d layers x cls/mean x %d\n", worst, depth, D);

    // --blocks K: the K blocks ending at the layer side by side, each row PyTorch's block's, in order;
    // each image's row its own (a batch of 3, 1 thread and 2), and K past block 0 refused.
    float *cat = malloc(3 * (size_t)depth * D * sizeof *cat);
    int blocks_ok = 0, blocks_runs = 0;
    for (int K = 2; cat && want && K <= depth; K++)
        for (int l = K - 1; l < depth; l++)
            for (int p = 0; p < 2; p++) {
                FeaturesSpec spec = {p ? FEATURES_POOL_MEAN : FEATURES_POOL_CLS, l, VIEW_WHOLE, K};
                CHECK(features_dim(fm, &spec) == K * D && features_blocks_check(&spec, err, sizeof err) == 0,
                      "--blocks %d at layer %d: %d values, allowed", K, l, K * D);
                omp_set_num_threads(K % 2 ? 1 : 2);
                features_batch(fm, img, 3, &spec, cat);
                omp_set_num_threads(2);
                int good = 1;
                for (int k = 0; k < K; k++) {
                    const float *w = want + ((size_t)(l - K + 1 + k) * 2 + p) * D;
                    FeaturesSpec one = {spec.pool, l - K + 1 + k, VIEW_WHOLE, 1};
                    features_batch(fm, img, 1, &one, single);
                    for (int i = 0; i < D; i++) good &= fabsf(cat[(size_t)k * D + i] - w[i]) <= 1e-5f + 1e-5f * fabsf(w[i]);
                    good &= !memcmp(cat + (size_t)k * D, single, (size_t)D * sizeof *cat) &&
                            !memcmp(cat + (size_t)(2 * K + k) * D, single, (size_t)D * sizeof *cat);
                }
                blocks_ok += good;
                blocks_runs++;
            }
    CHECK(cat && blocks_runs > 0 && blocks_ok == blocks_runs, "--blocks: %d of %d (K, layer, pool) side by side as "
          "PyTorch's blocks", blocks_ok, blocks_runs);
    char bwhy[256];
    FeaturesSpec past = {FEATURES_POOL_CLS, 1, VIEW_WHOLE, 3};
    CHECK(features_blocks_check(&past, bwhy, sizeof bwhy) != 0 &&
          !strcmp(bwhy, "3 blocks ending at block 1 would begin before block 0: at most 2"), "--blocks 3 at layer 1: '%s'", bwhy);
    free(cat);

    // `vitmae embed` writes the last layer's CLS features, and the list beside them.
    const char *tmp = check_tmpdir();
    char npy[2048], txt[2048];
    snprintf(npy, sizeof npy, "%s/f.npy", tmp);
    snprintf(txt, sizeof txt, "%s/f.txt", tmp);
    char *argv[] = {"embed", "--ckpt", path, "--out", npy, img_path, img_path, NULL};
    CHECK(cmd_embed(7, argv) == 0, "cmd_embed");
    FILE *f = fopen(npy, "rb");
    CHECK(f != NULL, "open %s", npy);
    if (f && want) {
        unsigned char pre[10];
        CHECK(fread(pre, 1, 10, f) == 10 && !memcmp(pre, "\x93NUMPY\x01\x00", 8), "npy magic");
        size_t hl = pre[8] | (size_t)pre[9] << 8;
        char *h = calloc(hl + 1, 1);
        CHECK(fread(h, 1, hl, f) == hl, "npy header");
        char shape[64];
        snprintf(shape, sizeof shape, "'shape': (2, %d)", D);
        CHECK(strstr(h, shape) && strstr(h, "'descr': '<f4'"), "npy header %s", h);
        float *rows = malloc(2 * (size_t)D * sizeof *rows);
        CHECK(fread(rows, sizeof *rows, 2 * (size_t)D + 1, f) == 2 * (size_t)D, "npy data");
        features_batch(fm, img, 1, &(FeaturesSpec){FEATURES_POOL_CLS, depth - 1, VIEW_WHOLE, 1}, single);
        CHECK(!memcmp(rows, single, (size_t)D * sizeof *rows) && !memcmp(rows + D, single, (size_t)D * sizeof *rows),
              "embed rows == features_batch");
        free(rows); free(h);
        fclose(f);
    }
    f = fopen(txt, "rb");
    char list[8192] = "", line[4200];
    if (f) { size_t n = fread(list, 1, sizeof list - 1, f); list[n] = 0; fclose(f); }
    snprintf(line, sizeof line, "%s\t\n%s\t\n", img_path, img_path);
    CHECK(!strcmp(list, line), "FEATS.txt: '%s'", list);
    remove(npy); remove(txt); remove(tmp);
    free(img); free(out); free(single);
    features_close(fm);
}

static void test_knn(const StFile *ref) {
    int n = 70, m = 30, d = 9, C = 4;
    const float *tr = get(ref, "knn.train", (long)n * d), *te = get(ref, "knn.test", (long)m * d);
    const float *ytr = get(ref, "knn.train_labels", n);
    if (!tr || !te || !ytr) return;
    int *labels = labels_of(ytr, n), pred[30], pred1[30];
    struct { int k; const char *T; } cases[] = {{5, "0.07"}, {12, "0.5"}, {200, "0.07"}};
    char err[256], name[64];
    for (int c = 0; c < 3; c++) {
        snprintf(name, sizeof name, "knn.pred.%d_%s", cases[c].k, cases[c].T);
        const float *want = get(ref, name, m);
        float T = strtof(cases[c].T, NULL);
        CHECK(probe_knn(tr, labels, n, te, m, d, C, cases[c].k, T, pred, err, sizeof err) == 0, "probe_knn: %s", err);
        int same = 0;
        for (int i = 0; want && i < m; i++) same += pred[i] == (int)want[i];
        CHECK(same == m, "%s: %d of %d predictions as the reference", name, same, m);
        omp_set_num_threads(1);
        probe_knn(tr, labels, n, te, m, d, C, cases[c].k, T, pred1, err, sizeof err);
        omp_set_num_threads(2);
        CHECK(!memcmp(pred, pred1, sizeof pred), "%s: 1 thread == 2 threads", name);
    }
    free(labels);
}

// Tie rules (src/infer/probe.h): equal similarities rank the lower training index first; equal votes
// go to the lower class.
static void test_knn_ties(void) {
    const float train[] = {1, 0, 1, 0, 0, 1}, test[] = {2, 0};
    const int labels[] = {1, 0, 0};
    int pred = -1;
    char err[256];
    CHECK(probe_knn(train, labels, 3, test, 1, 2, 2, 1, 0.07f, &pred, err, sizeof err) == 0 && pred == 1,
          "k 1: the earlier of two equal neighbours (class 1), got %d", pred);
    CHECK(probe_knn(train, labels, 3, test, 1, 2, 2, 2, 0.07f, &pred, err, sizeof err) == 0 && pred == 0,
          "k 2: equal votes go to the lower class, got %d", pred);
}

// A small --temperature (down to the flag's 1e-6): exp(cos / T) overflows double below T = 1 / 709,
// and every class with a neighbour then tied at inf (the lower class won). The votes are the same up
// to a common factor, so the nearest neighbour wins, and equal neighbours add up.
static void test_knn_small_temperature(void) {
    const float s = 0.14106736f;   // (0.99, s): cosine 0.99 with (1, 0)
    const float train[] = {0.99f, s, 1, 0, 0.99f, s}, test[] = {1, 0};
    const int labels[] = {0, 1, 0};
    const float twice[] = {1, 0, 1, 0, 1, 0};
    const int labels2[] = {1, 0, 1};
    char err[256];
    const float temps[] = {1e-3f, 1e-4f, 1e-6f};
    for (int i = 0; i < 3; i++) {
        int pred = -1;
        CHECK(probe_knn(train, labels, 3, test, 1, 2, 2, 3, temps[i], &pred, err, sizeof err) == 0 && pred == 1,
              "T %g: the nearest neighbour (class 1, cosine 1) beats two at 0.99 (class 0), got %d", temps[i], pred);
        CHECK(probe_knn(twice, labels2, 3, test, 1, 2, 2, 3, temps[i], &pred, err, sizeof err) == 0 && pred == 1,
              "T %g: two equal nearest neighbours (class 1) beat one (class 0), got %d", temps[i], pred);
    }
}

static void test_linear(const StFile *ref) {
    int n = 70, m = 30, d = 9, C = 4;
    const float *tr = get(ref, "knn.train", (long)n * d), *te = get(ref, "knn.test", (long)m * d);
    const float *ytr = get(ref, "knn.train_labels", n);
    const float *mean = get(ref, "linear.mean", d), *inv_std = get(ref, "linear.inv_std", d);
    const float *w = get(ref, "linear.weight", (long)C * d), *b = get(ref, "linear.bias", C);
    const float *want_pred = get(ref, "linear.pred", m), *loss = get(ref, "linear.loss", 1);
    if (!tr || !te || !ytr || !mean || !inv_std || !w || !b || !want_pred || !loss) return;
    int *labels = labels_of(ytr, n), pred[30];
    LinearProbeOptions opt = {6, 16, 0.1f, 0.9f, 0.0f, 3};   // tools/reference_probe.py's LINEAR
    LinearProbe p, p1;
    char err[256];
    CHECK(probe_linear_train(tr, labels, n, d, C, &opt, &p, err, sizeof err) == 0, "train: %s", err);
    for (int i = 0; i < d; i++) {
        CHECK_CLOSE(p.mean[i], mean[i], 1e-6, 1e-6, "linear.mean");
        CHECK_CLOSE(p.inv_std[i], inv_std[i], 0, 1e-6, "linear.inv_std");
    }
    for (int i = 0; i < C * d; i++) CHECK_CLOSE(p.weight[i], w[i], 2e-6, 1e-5, "linear.weight");
    for (int i = 0; i < C; i++) CHECK_CLOSE(p.bias[i], b[i], 2e-6, 1e-5, "linear.bias");
    CHECK_CLOSE(p.last_epoch_loss, loss[0], 1e-6, 1e-5, "linear.loss");
    printf("linear: max |d| weight %.3g, bias %.3g, loss %.3g\n", max_abs_diff(p.weight, w, (long)C * d),
           max_abs_diff(p.bias, b, C), fabs(p.last_epoch_loss - loss[0]));
    CHECK(probe_linear_predict(&p, te, m, pred, err, sizeof err) == 0, "predict: %s", err);
    int same = 0;
    for (int i = 0; i < m; i++) same += pred[i] == (int)want_pred[i];
    CHECK(same == m, "linear: %d of %d predictions as the reference", same, m);
    omp_set_num_threads(1);
    CHECK(probe_linear_train(tr, labels, n, d, C, &opt, &p1, err, sizeof err) == 0, "train: %s", err);
    omp_set_num_threads(2);
    CHECK(!memcmp(p.weight, p1.weight, (size_t)C * d * sizeof(float)) && !memcmp(p.bias, p1.bias, (size_t)C * sizeof(float)),
          "linear: 1 thread == 2 threads");
    probe_linear_free(&p1);
    // Bad arguments are refused, not crashed on.
    CHECK(probe_linear_train(tr, labels, n, d, 1, &opt, &p1, err, sizeof err) != 0, "one class refused");
    CHECK(probe_knn(tr, labels, n, te, m, d, C, 5, 0.0f, pred, err, sizeof err) != 0, "T = 0 refused");
    probe_linear_free(&p); probe_linear_free(&p1);
    free(labels);
}

// embed --layer's and probe --layer's refused value, echoed as every word of the command line is
// (cmd/cli.h, cli_error): what is not UTF-8 as U+FFFD, cut to whole characters of 96 bytes and "...".
// It was "'%.100s'": cut inside a character, unmarked, an invalid byte passed on.
static void test_layer_word(void) {
    char word[301], err[512];
    memset(word, 'x', 300);
    memcpy(word + 94, "\xe2\x82\xac", 3);   // a character over the 96th byte
    word[300] = 0;
    CHECK(features_layer_parse(word, 4, &(int){0}, err, sizeof err) == -1 && strlen(err) < 160 &&
          strstr(err, "xx...' is not") && !strstr(err, "\xe2"), "a 300-byte --layer: %.200s", err);
    CHECK(features_layer_parse("1\xff", 4, &(int){0}, err, sizeof err) == -1 && strstr(err, "'1\xef\xbf\xbd' is not"),
          "a byte that is not UTF-8: %s", err);
}

int main(void) {
    test_layer_word();
    const char *r = getenv("VITMAE_ROOT");
    snprintf(root, sizeof root, "%s", r && *r ? r : ".");
    char path[2048], err[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/probe_expected.safetensors", root);
    StFile *ref = st_open(path, err, sizeof err);
    CHECK(ref != NULL, "%s", err);
    if (ref) {
        test_features(ref);
        test_knn(ref);
        test_knn_ties();
    test_knn_small_temperature();
        test_linear(ref);
        st_close(ref);
    }
    return check_done();
}
