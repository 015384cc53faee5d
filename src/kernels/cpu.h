// CPU features, the measured FP32 FMA peak and physical memory. Which GEMM path runs is chosen in
// kernels/gemm.h from these features.
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

#endif
