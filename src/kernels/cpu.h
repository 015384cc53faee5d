// CPU features, the measured FP32 FMA peak, and which GEMM path runs.
// Paths, fastest first: "avx512" (14x32 micro-kernel), "avx2" (AVX2+FMA, 6x16), "portable" (plain C,
// 4x8), "ref" (the *_ref triple loops). The default is the fastest one this CPU supports; the
// environment variable VITMAE_GEMM=ref|avx2|avx512|portable (read at the first GEMM call) or
// gemm_force_kernel() picks another. Every path is compiled into every build (the vector kernels carry
// target attributes), and runs only when the CPU has it.
#ifndef VITMAE_CPU_H
#define VITMAE_CPU_H

int cpu_has_avx512(void);   // AVX-512F + VL (and the OS saves zmm state)
int cpu_has_avx2_fma(void); // AVX2 + FMA

// Measured FP32 peak in GFLOP/s for `threads` threads (<= 0: omp_get_max_threads()), 2 flops per FMA
// lane: independent vector-FMA chains in the widest ISA available on every thread at once, each timed
// by its own CPU time (so time the OS gives to other processes does not count), best of 5 runs of
// ~15 ms. Call from a serial region.
double cpu_fma_peak_gflops(int threads);

// Physical memory in bytes (0 when unknown): commands refuse, before allocating, what cannot fit.
long cpu_physical_memory_bytes(void);

enum { GEMM_PATH_REF, GEMM_PATH_PORTABLE, GEMM_PATH_AVX2, GEMM_PATH_AVX512 };
int gemm_path(void);                       // the path gemm_* use now (GEMM_PATH_*)
const char *gemm_kernel_name(void);        // its name: "avx512", "avx2", "portable" or "ref"
// Forces a path by name; NULL or "auto" restores the default (ignoring VITMAE_GEMM). Returns 0, or -1
// when the name is unknown or the CPU lacks that path (nothing changes then). Not thread-safe against
// concurrent gemm_* calls; call it from a serial region.
int gemm_force_kernel(const char *name);
#endif
