// bench_gemm: GFLOP/s of gemm_nt / gemm_nn / gemm_tn on the model's Linear shapes and 1024^3, with 1
// and 2 threads, against the measured FMA peak and the *_ref loops.
// Usage: bench_gemm [--quick] [--no-ref] [--vitb] [--cold] [--batch B] [--path avx512|avx2|portable|ref]
//   --quick: fewer shapes; --no-ref: skip the (slow) reference; --vitb: add ViT-B shapes (M = 12544);
//   --batch B: the tiny model's shapes for B images (default 64; a training step's products take one
//   gradient group's images, 16 of 64 by default, or a few groups at once: `vitmae bench` says which);
//   --cold: also each product with its operands out of L1 and L2, as a training step meets them (a
//   sweep over COLD_BYTES of other memory, by every thread, before each timed call): the gap between
//   the two columns is what the products lose to cold operands (docs/performance.md, "Products inside
//   the step: cold operands").
// Each Linear layer (tokens M, in -> out) gives three products:
//   nt  y = x W^T + b   M x out x in      nn  dx = dy W   M x in x out      tn  dW = dy^T x   out x in x M
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels/cpu.h"
#include "kernels/gemm.h"

typedef struct { const char *name; int tokens, in, out; } Layer;

static const Layer tiny_layers[] = {
    // tiny preset, batch 64 (tokens scaled by --batch), 32x32 images, patch 4: 17 encoder tokens (16
    // visible + CLS), 65 decoder
    {"patch_embed", 4096, 48, 192},  {"enc.qkv", 1088, 192, 576}, {"enc.proj", 1088, 192, 192},
    {"enc.fc1", 1088, 192, 768},     {"enc.fc2", 1088, 768, 192}, {"dec_embed", 1088, 192, 128},
    {"dec.qkv", 4160, 128, 384},     {"dec.proj", 4160, 128, 128}, {"dec.fc1", 4160, 128, 512},
    {"dec.fc2", 4160, 512, 128},     {"dec.pred", 4160, 128, 48},
};
static const Layer vitb_layers[] = {
    {"vitb.qkv", 12544, 768, 2304}, {"vitb.fc1", 12544, 768, 3072}, {"vitb.fc2", 12544, 3072, 768},
};

// The memory a cold call's sweep reads: 32 times a 2 MiB L2, so that no operand stays in a core's L1 or
// L2 (and most of it leaves L3).
#define COLD_BYTES (64L << 20)
static const float *cold_buf;
static volatile float cold_sink;

// Reads COLD_BYTES, one float a cache line, shared among the calling team's threads (each core's own
// caches then hold only this memory).
static void cold_sweep(int threads) {
    const long n = COLD_BYTES / sizeof(float);
    float s = 0.0f;
    #pragma omp parallel for num_threads(threads) reduction(+ : s) schedule(static)
    for (long i = 0; i < n; i += 16) s += cold_buf[i];
    cold_sink = s;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static float *randn(long n, unsigned *seed) {
    float *x = malloc((size_t)n * sizeof(float));
    if (!x) { perror("malloc"); exit(1); }
    for (long i = 0; i < n; i++) { *seed = *seed * 1664525u + 1013904223u; x[i] = (*seed >> 8) * 0x1p-24f - 0.5f; }
    return x;
}

enum { NT, NN, TN };

static void call(int product, int ref, int M, int N, int K, const float *A, const float *B, float *C,
                 const float *bias) {
    int lda = product == TN ? M : K, ldb = product == NT ? K : N;
    switch (product) {
    case NT: (ref ? gemm_nt_ref : gemm_nt)(M, N, K, A, lda, B, ldb, C, N, bias, 0); break;
    case NN: (ref ? gemm_nn_ref : gemm_nn)(M, N, K, A, lda, B, ldb, C, N, 0); break;
    default: (ref ? gemm_tn_ref : gemm_tn)(M, N, K, A, lda, B, ldb, C, N, 1); break;
    }
}

// Best GFLOP/s over repetitions filling ~budget seconds (at least 2 runs after a warm-up); cold: each
// run after a sweep (cold_sweep), at most COLD_RUNS of them.
#define COLD_RUNS 20
static double measure(int product, int ref, int M, int N, int K, int threads, double budget, int cold,
                      double *seconds) {
    unsigned seed = 1;
    float *A = randn((long)M * K, &seed), *B = randn((long)N * K, &seed), *C = randn((long)M * N, &seed);
    float *bias = randn(N, &seed);
    omp_set_num_threads(threads);
    double flops = 2.0 * M * N * K, best = 1e30, spent = 0;
    call(product, ref, M, N, K, A, B, C, bias);
    for (int r = 0; r < 2 || (spent < budget && r < (cold ? COLD_RUNS : 1000)); r++) {
        if (cold) cold_sweep(threads);
        double t0 = now_s();
        call(product, ref, M, N, K, A, B, C, bias);
        double t = now_s() - t0;
        spent += t;
        if (t < best) best = t;
        if (ref && spent > budget) break;
    }
    free(A); free(B); free(C); free(bias);
    if (seconds) *seconds = best;
    return flops / best * 1e-9;
}

int main(int argc, char **argv) {
    int quick = 0, with_ref = 1, vitb = 0, cold = 0, batch = 64;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-ref")) with_ref = 0;
        else if (!strcmp(argv[i], "--vitb")) vitb = 1;
        else if (!strcmp(argv[i], "--cold")) cold = 1;
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            char *end;
            long b = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || b < 1 || b > 4096) {
                fprintf(stderr, "vitmae: bench_gemm: --batch %s: not a whole number from 1 to 4096\n", argv[i]);
                return 2;
            }
            batch = (int)b;
        }
        else if (!strcmp(argv[i], "--path") && i + 1 < argc) {
            if (gemm_force_kernel(argv[++i])) {
                fprintf(stderr, "vitmae: bench_gemm: path %s: unknown or not on this CPU\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_gemm [--quick] [--no-ref] [--vitb] [--cold] [--batch B] [--path avx512|avx2|portable|ref]\n");
            return 2;
        }
    }
    if (cold) {
        float *buf = malloc(COLD_BYTES);
        if (!buf) {
            fprintf(stderr, "vitmae: bench_gemm: --cold: out of memory for its %ld MB sweep\n", COLD_BYTES >> 20);
            return 1;
        }
        for (long i = 0; i < COLD_BYTES / (long)sizeof(float); i++) buf[i] = 1.0f;
        cold_buf = buf;
    }
    int max_threads = omp_get_max_threads() >= 2 ? 2 : 1;
    double peak[3] = {0};
    for (int t = 1; t <= max_threads; t++) peak[t] = cpu_fma_peak_gflops(t);
    printf("gemm path: %s   measured FMA peak: 1 thread %.1f GFLOP/s", gemm_kernel_name(), peak[1]);
    if (max_threads == 2) printf(", 2 threads %.1f GFLOP/s", peak[2]);
    printf("\n\n%-12s %-4s %6s %6s %6s", "layer", "op", "M", "N", "K");
    for (int t = 1; t <= max_threads; t++) printf(cold ? "   %dT GFLOP/s  %%peak  cold%%" : "   %dT GFLOP/s  %%peak", t);
    if (with_ref) printf("   ref %dT", max_threads);
    printf("\n");

    Layer layers[32];
    int n = 0;
    for (size_t i = 0; i < sizeof tiny_layers / sizeof *tiny_layers; i++)
        if (!quick || i == 1 || i == 4 || i == 8) {
            layers[n] = tiny_layers[i];
            layers[n++].tokens = tiny_layers[i].tokens / 64 * batch;   // every row count is a multiple of 64
        }
    if (vitb) for (int i = 0; i < 3; i++) layers[n++] = vitb_layers[i];
    layers[n++] = (Layer){"square1024", 1024, 1024, 1024};

    static const char *const op_name[] = {"nt", "nn", "tn"};
    double total_flops = 0, total_time[3] = {0}, total_cold[3] = {0};
    for (int l = 0; l < n; l++) {
        const Layer *L = &layers[l];
        for (int p = 0; p < 3; p++) {
            int M = p == TN ? L->out : L->tokens, N = p == NN ? L->in : p == NT ? L->out : L->in;
            int K = p == NT ? L->in : p == NN ? L->out : L->tokens;
            double flops = 2.0 * M * N * K;
            int is_model = strcmp(L->name, "square1024") != 0 && strncmp(L->name, "vitb", 4) != 0;
            printf("%-12s %-4s %6d %6d %6d", L->name, op_name[p], M, N, K);
            fflush(stdout);
            for (int t = 1; t <= max_threads; t++) {
                double secs, g = measure(p, 0, M, N, K, t, quick ? 0.05 : 0.15, 0, &secs);
                printf("   %11.1f %5.1f%%", g, 100.0 * g / peak[t]);
                if (is_model) total_time[t] += secs;
                if (cold) {
                    double cs, gc = measure(p, 0, M, N, K, t, quick ? 0.05 : 0.15, 1, &cs);
                    printf(" %5.1f%%", 100.0 * gc / peak[t]);
                    if (is_model) total_cold[t] += cs;
                }
                fflush(stdout);
            }
            if (is_model) total_flops += flops;
            if (with_ref && flops <= 4e9) printf("   %7.1f", measure(p, 1, M, N, K, max_threads, 0.2, 0, NULL));
            printf("\n");
        }
    }
    printf("\ntiny-model Linear products, %d images (one forward+backward pass of each layer):", batch);
    for (int t = 1; t <= max_threads; t++) {
        double g = total_flops / total_time[t] * 1e-9;
        printf("  %dT %.1f GFLOP/s (%.1f%% of peak)", t, g, 100.0 * g / peak[t]);
    }
    printf("\n");
    if (cold) {
        printf("the same, cold (operands out of L1 and L2):");
        for (int t = 1; t <= max_threads; t++) {
            double g = total_flops / total_cold[t] * 1e-9;
            printf("  %dT %.1f GFLOP/s (%.1f%% of peak)", t, g, 100.0 * g / peak[t]);
        }
        printf("\n");
    }
    free((void *)cold_buf);
    return 0;
}
