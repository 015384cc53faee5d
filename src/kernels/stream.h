// Streaming (non-temporal) stores, for results larger than L2 that nothing reads again soon (a weight's
// packed copy, the step's weight gradients): a plain store first reads in each line it fills, a
// streaming store does not (docs/performance.md, "Weights packed with streaming stores"). Plain stores
// where the CPU has none. After a thread's streaming stores, stream_fence() before another thread reads
// them (then the barrier that orders the two).
#ifndef VITMAE_STREAM_H
#define VITMAE_STREAM_H
#include <stdint.h>
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

// d[0, n) = s[0, n): plain stores up to d's first 64-byte line and after its last whole one, streaming
// stores for the whole lines between.
static inline void stream_floats(float *restrict d, const float *restrict s, long n) {
    long j = 0;
#if defined(__SSE__)
    for (; j < n && ((uintptr_t)(d + j) & 63); j++) d[j] = s[j];
    for (; j + 16 <= n; j += 16)
        for (int q = 0; q < 16; q += 4) _mm_stream_ps(d + j + q, _mm_loadu_ps(s + j + q));
#endif
    if (j < n) memcpy(d + j, s + j, (size_t)(n - j) * sizeof(float));
}

static inline void stream_fence(void) {
#if defined(__SSE__)
    _mm_sfence();
#endif
}
#endif
