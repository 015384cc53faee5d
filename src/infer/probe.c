// kNN and linear probes on frozen features (probe.h states the rules).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "infer/probe.h"
#include "core/rng.h"
#include "kernels/ops.h"

// Rows of x [n][dim] scaled to unit length (x / max(|x|, 1e-12), as torch.nn.functional.normalize).
static float *l2_rows(const float *x, long n, int dim) {
    float *y = malloc((size_t)n * dim * sizeof *y);
    if (!y) return NULL;
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        const float *r = x + (size_t)i * dim;
        double ss = 0;
        for (int d = 0; d < dim; d++) ss += (double)r[d] * r[d];
        double norm = sqrt(ss);
        float inv = (float)(1.0 / (norm > 1e-12 ? norm : 1e-12));
        for (int d = 0; d < dim; d++) y[(size_t)i * dim + d] = r[d] * inv;
    }
    return y;
}

enum { KNN_CHUNK = 256 };   // test rows per similarity block

size_t probe_bytes_needed(long ntrain, long ntest, long dim) {
    return sizeof(float) * (2 * (size_t)(ntrain + ntest) * (size_t)dim + (size_t)KNN_CHUNK * (size_t)ntrain);
}

int probe_knn(const float *train, const int *train_labels, long ntrain, const float *test, long ntest,
              int dim, int nclasses, int k, float temperature, int *pred, char *err, size_t errlen) {
    if (ntrain < 1 || ntest < 0 || dim < 1 || nclasses < 1 || k < 1 || !(temperature > 0)
        || ntrain > (1L << 30) || ntest > (1L << 30)) {
        snprintf(err, errlen, "bad kNN arguments (train %ld, test %ld, dim %d, k %d, T %g)", ntrain, ntest, dim, k,
                 temperature);
        return -1;
    }
    if (k > ntrain) k = (int)ntrain;
    float *tr = l2_rows(train, ntrain, dim), *te = l2_rows(test, ntest, dim);
    float *sim = malloc((size_t)KNN_CHUNK * ntrain * sizeof *sim);
    if (!tr || !te || !sim) {
        free(tr); free(te); free(sim);
        snprintf(err, errlen, "out of memory (kNN over %ld training rows)", ntrain);
        return -1;
    }
    int status = 0;
    for (long t0 = 0; t0 < ntest; t0 += KNN_CHUNK) {
        int nt = ntest - t0 < KNN_CHUNK ? (int)(ntest - t0) : KNN_CHUNK;
        // sim [nt][ntrain] = test rows . train rows^T
        linear_forward(sim, te + (size_t)t0 * dim, tr, NULL, nt, dim, (int)ntrain);
        #pragma omp parallel
        {
            float *best_sim = malloc((size_t)k * sizeof *best_sim);
            long *best_idx = malloc((size_t)k * sizeof *best_idx);
            double *votes = malloc((size_t)nclasses * sizeof *votes);
            if (!best_sim || !best_idx || !votes) {
                #pragma omp atomic write
                status = -1;
            }
            #pragma omp for schedule(static)
            for (int r = 0; r < nt; r++) {
                if (!best_sim || !best_idx || !votes) continue;
                const float *s = sim + (size_t)r * ntrain;
                // The k best so far, sorted by similarity descending; a later row with an equal
                // similarity ranks after the earlier one (lower index first).
                int have = 0;
                for (long j = 0; j < ntrain; j++) {
                    float v = s[j];
                    if (have == k && !(v > best_sim[k - 1])) continue;
                    int pos = have < k ? have++ : k - 1;
                    while (pos > 0 && v > best_sim[pos - 1]) {
                        best_sim[pos] = best_sim[pos - 1]; best_idx[pos] = best_idx[pos - 1]; pos--;
                    }
                    best_sim[pos] = v; best_idx[pos] = j;
                }
                // exp(sim / T) over exp(best / T), a factor common to every vote: the ranking is
                // DINO's, and a small T (below 1 / 709 for cosines near 1) cannot overflow every
                // vote to inf, which made all classes with a neighbour tie.
                for (int c = 0; c < nclasses; c++) votes[c] = 0;
                for (int i = 0; i < have; i++)
                    votes[train_labels[best_idx[i]]] += exp(((double)best_sim[i] - best_sim[0]) / temperature);
                int arg = 0;
                for (int c = 1; c < nclasses; c++) if (votes[c] > votes[arg]) arg = c;
                pred[t0 + r] = arg;
            }
            free(best_sim); free(best_idx); free(votes);
        }
        if (status) break;
    }
    free(tr); free(te); free(sim);
    if (status) snprintf(err, errlen, "out of memory (kNN)");
    return status;
}

// ---------------------------------------------------------------------------------------------
// Linear probe

void probe_linear_free(LinearProbe *p) {
    if (!p) return;
    free(p->mean); free(p->inv_std); free(p->weight); free(p->bias);
    memset(p, 0, sizeof *p);
}

// (x - mean) * inv_std for n rows into y.
static void normalise_rows(const LinearProbe *p, const float *x, long n, float *y) {
    int dim = p->dim;
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        for (int d = 0; d < dim; d++)
            y[(size_t)i * dim + d] = (x[(size_t)i * dim + d] - p->mean[d]) * p->inv_std[d];
}

// Row-wise softmax of logits [n][C] in place; returns the sum over rows of -log p[label] (rows in order).
static double softmax_xent(float *logits, const int *labels, int n, int C) {
    double loss = 0;
    for (int i = 0; i < n; i++) {
        float *z = logits + (size_t)i * C;
        float mx = z[0];
        for (int c = 1; c < C; c++) if (z[c] > mx) mx = z[c];
        double sum = 0;
        for (int c = 0; c < C; c++) sum += exp((double)z[c] - mx);
        loss += log(sum) - ((double)z[labels[i]] - mx);
        for (int c = 0; c < C; c++) z[c] = (float)(exp((double)z[c] - mx) / sum);
    }
    return loss;
}

static void shuffle(long *order, long n, uint64_t seed, int epoch) {
    Rng r;
    rng_derive(&r, seed, 0x5a1e, (uint64_t)epoch);
    for (long i = 0; i < n; i++) order[i] = i;
    for (long i = n - 1; i > 0; i--) {
        long j = (long)rng_below(&r, (uint32_t)(i + 1));
        long t = order[i]; order[i] = order[j]; order[j] = t;
    }
}

int probe_linear_train(const float *train, const int *labels, long n, int dim, int nclasses,
                       const LinearProbeOptions *opt, LinearProbe *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (n < 1 || n > 0x7fffffffL || dim < 1 || nclasses < 2 || opt->epochs < 1 || opt->batch < 1) {
        snprintf(err, errlen, "bad linear-probe arguments (n %ld, dim %d, classes %d)", n, dim, nclasses);
        return -1;
    }
    int B = opt->batch < n ? opt->batch : (int)n, C = nclasses;
    out->dim = dim; out->nclasses = C;
    out->mean = malloc((size_t)dim * sizeof(float));
    out->inv_std = malloc((size_t)dim * sizeof(float));
    out->weight = calloc((size_t)C * dim, sizeof(float));
    out->bias = calloc((size_t)C, sizeof(float));
    float *xn = malloc((size_t)n * dim * sizeof *xn), *xb = malloc((size_t)B * dim * sizeof *xb);
    float *logits = malloc((size_t)B * C * sizeof *logits);
    float *gw = malloc((size_t)C * dim * sizeof *gw), *gb = malloc((size_t)C * sizeof *gb);
    float *mw = calloc((size_t)C * dim, sizeof *mw), *mb = calloc((size_t)C, sizeof *mb);
    long *order = malloc((size_t)n * sizeof *order);
    int *yb = malloc((size_t)B * sizeof *yb);
    int status = 0;
    if (!out->mean || !out->inv_std || !out->weight || !out->bias || !xn || !xb || !logits || !gw || !gb
        || !mw || !mb || !order || !yb) {
        snprintf(err, errlen, "out of memory (linear probe on %ld x %d features)", n, dim);
        status = -1;
        goto done;
    }
    // Normalisation statistics: each feature alone, rows in order.
    #pragma omp parallel for schedule(static)
    for (int d = 0; d < dim; d++) {
        double s = 0, ss = 0;
        for (long i = 0; i < n; i++) s += train[(size_t)i * dim + d];
        double mu = s / n;
        for (long i = 0; i < n; i++) { double v = train[(size_t)i * dim + d] - mu; ss += v * v; }
        out->mean[d] = (float)mu;
        out->inv_std[d] = (float)(1.0 / sqrt(ss / n + 1e-6));
    }
    normalise_rows(out, train, n, xn);

    long per_epoch = (n + B - 1) / B, steps = (long)opt->epochs * per_epoch, t = 0;
    for (int e = 0; e < opt->epochs; e++) {
        shuffle(order, n, opt->seed, e);
        double epoch_loss = 0;
        for (long i0 = 0; i0 < n; i0 += B, t++) {
            int nb = n - i0 < B ? (int)(n - i0) : B;
            for (int r = 0; r < nb; r++) {
                memcpy(xb + (size_t)r * dim, xn + (size_t)order[i0 + r] * dim, (size_t)dim * sizeof *xb);
                yb[r] = labels[order[i0 + r]];
            }
            linear_forward(logits, xb, out->weight, out->bias, nb, dim, C);
            epoch_loss += softmax_xent(logits, yb, nb, C);
            // d loss / d logits = (softmax - onehot) / nb
            for (int r = 0; r < nb; r++) {
                logits[(size_t)r * C + yb[r]] -= 1.0f;
                for (int c = 0; c < C; c++) logits[(size_t)r * C + c] /= (float)nb;
            }
            memset(gw, 0, (size_t)C * dim * sizeof *gw);
            memset(gb, 0, (size_t)C * sizeof *gb);
            linear_backward(NULL, gw, gb, logits, xb, out->weight, nb, dim, C, 1);
            double lr = opt->lr * 0.5 * (1.0 + cos(M_PI * (double)t / (double)steps));
            float lrf = (float)lr;
            for (size_t i = 0; i < (size_t)C * dim; i++) {
                float g = gw[i] + opt->weight_decay * out->weight[i];
                mw[i] = opt->momentum * mw[i] + g;
                out->weight[i] -= lrf * mw[i];
            }
            for (int c = 0; c < C; c++) {
                float g = gb[c] + opt->weight_decay * out->bias[c];
                mb[c] = opt->momentum * mb[c] + g;
                out->bias[c] -= lrf * mb[c];
            }
        }
        out->last_epoch_loss = epoch_loss / n;
    }

done:
    free(xn); free(xb); free(logits); free(gw); free(gb); free(mw); free(mb); free(order); free(yb);
    if (status) probe_linear_free(out);
    return status;
}

int probe_linear_predict(const LinearProbe *p, const float *x, long n, int *pred, char *err, size_t errlen) {
    enum { CHUNK = 1024 };
    int C = p->nclasses, dim = p->dim;
    size_t rows = n < CHUNK ? (size_t)(n > 0 ? n : 1) : CHUNK;   // a few wide rows (raw pixels) need no 1024
    float *xn = malloc(rows * dim * sizeof *xn), *logits = malloc(rows * C * sizeof *logits);
    if (!xn || !logits) {
        free(xn); free(logits);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (long i0 = 0; i0 < n; i0 += CHUNK) {
        int nb = n - i0 < CHUNK ? (int)(n - i0) : CHUNK;
        normalise_rows(p, x + (size_t)i0 * dim, nb, xn);
        linear_forward(logits, xn, p->weight, p->bias, nb, dim, C);
        for (int r = 0; r < nb; r++) {
            const float *z = logits + (size_t)r * C;
            int arg = 0;
            for (int c = 1; c < C; c++) if (z[c] > z[arg]) arg = c;
            pred[i0 + r] = arg;
        }
    }
    free(xn); free(logits);
    return 0;
}
