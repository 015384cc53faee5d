// Multi-head self-attention core: the reference (*_ref, the definition) and the fast version (per
// (image, head) register-blocked products; with AVX-512 or AVX2 on the "avx512" or "avx2" GEMM path,
// kernels/x86/attention_avx512.c and attention_avx2.c) side by side in kernels/attention.c;
// tests/test_ops.c compares them.
#ifndef VITMAE_ATTENTION_H
#define VITMAE_ATTENTION_H

// Multi-head self-attention core (no projections).
// qkv [B, T, 3C]: each token's row splits as (3, NH, hd), q first, hd = C / NH.
// att [B, NH, T, T]: softmax(q . k^T * hd^-0.5) over the last dim (cached for backward).
// out [B, T, C]: per head, att . v, heads concatenated.
// Parallel over (image, head) pairs; each pair owns its att block and its hd columns of out.
// scratch [B*T*C] floats (the fast version keeps each thread's K^T of its current head there).
void attention_forward(float *out, float *att, const float *qkv, float *scratch, int B, int T, int C, int NH);
// dqkv [B, T, 3C] += ...; datt [B, NH, T, T] and scratch [B*T*C] are scratch (overwritten).
void attention_backward(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                        float *scratch, int B, int T, int C, int NH);

// The same, overwriting dqkv (every element of it is written) instead of adding to it.
void attention_backward_set(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                            float *scratch, int B, int T, int C, int NH);

// Reference versions (the definitions; layouts as above).
void attention_forward_ref(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
void attention_backward_ref(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                            int B, int T, int C, int NH);
#endif
