// The two standard frozen-feature evaluations (docs/encoder.md, "Features and probes"), on feature
// matrices [n][dim] (row i = image i) with class labels 0..nclasses-1:
//
// kNN, as DINO's eval_knn: every row L2-normalised (x / max(|x|, 1e-12)); similarity = cosine (dot
// product of normalised rows); the k training rows of highest similarity (ties: lower training index
// first) vote for their class with weight exp(sim / T); the class of largest total wins (ties: lower
// class index). k larger than the training set is cut to its size.
//
// Linear probe, as MAE's main_linprobe (BatchNorm1d without affine, eps 1e-6, then Linear), trained on
// features computed once, without augmentation:
//   - Normalisation: per feature, the mean and the population variance over the whole training set
//     (summed in double, rows in order): x' = (x - mean) / sqrt(var + 1e-6). MAE normalises each
//     minibatch with its own statistics and evaluates with running averages; on frozen features both
//     estimate these same numbers, which we use in training and evaluation alike.
//   - Linear layer W [nclasses][dim], b [nclasses], both starting at zero (MAE draws W from
//     N(0, 0.01^2); the problem is convex, and a zero start makes the result depend on the order alone).
//   - Loss: softmax cross-entropy, mean over the minibatch.
//   - Optimiser: SGD with momentum (PyTorch's torch.optim.SGD: buf = momentum * buf + g + wd * w,
//     w -= lr_t * buf; no dampening, not Nesterov), lr_t = lr * 0.5 * (1 + cos(pi * t / steps)) per
//     step t = 0..steps-1 (cosine to 0, no warm-up), steps = epochs * ceil(n / batch).
//   - Order: each epoch e visits the rows in a permutation drawn by Fisher-Yates (for i = n-1 .. 1:
//     j = rng_below(i + 1), swap) from rng_derive(seed, 0x5a1e, e); the last minibatch of an epoch
//     may be smaller (no row is dropped).
// Every sum has a fixed order and every parallel loop owns its outputs: results are bitwise the same
// for any thread count.
#ifndef VITMAE_PROBE_H
#define VITMAE_PROBE_H
#include <stddef.h>
#include <stdint.h>

// The bytes a probe run holds at its peak for ntrain + ntest feature rows of dim floats: the two
// matrices, and beside them kNN's L2-normalised copies of both with one block of similarities
// (KNN_CHUNK test rows), more than the linear probe's normalised training rows. The command checks it
// against the machine's memory before it computes a feature (docs/encoder.md).
size_t probe_bytes_needed(long ntrain, long ntest, long dim);

// Predicted classes of ntest rows: pred [ntest]. 0 ok, -1 (out of memory, bad arguments) with a reason.
int probe_knn(const float *train, const int *train_labels, long ntrain, const float *test, long ntest,
              int dim, int nclasses, int k, float temperature, int *pred, char *err, size_t errlen);

typedef struct {
    int epochs;          // full passes over the training rows
    int batch;           // rows per step
    float lr;            // peak learning rate (cosine to 0)
    float momentum;
    float weight_decay;
    uint64_t seed;
} LinearProbeOptions;
// The defaults documented in docs/encoder.md.
#define LINEAR_PROBE_DEFAULTS {100, 256, 0.1f, 0.9f, 0.0f, 0}

typedef struct {
    int dim, nclasses;
    float *mean, *inv_std;   // [dim] the normalisation: (x - mean) * inv_std
    float *weight;           // [nclasses][dim]
    float *bias;             // [nclasses]
    double last_epoch_loss;  // mean training loss over the last epoch
} LinearProbe;

// Trains the probe on n rows. 0 ok, -1 with a reason. probe_linear_free releases it.
int  probe_linear_train(const float *train, const int *labels, long n, int dim, int nclasses,
                        const LinearProbeOptions *opt, LinearProbe *out, char *err, size_t errlen);
// Predicted classes of n rows (raw features: the probe normalises them). 0 ok, -1 out of memory.
int  probe_linear_predict(const LinearProbe *p, const float *x, long n, int *pred, char *err, size_t errlen);
void probe_linear_free(LinearProbe *p);
#endif
