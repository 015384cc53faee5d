// Internal to kernels/attention.c and x86/attention_avx512.c: attention for one (image, head) pair
// with AVX-512.
// Layouts as attention_forward / attention_backward (ops.h): q, k, v point at the head's first
// column in the qkv buffer, rows `ldq` floats apart (3C); out / dy / dq, dk, dv likewise with their own
// row strides. att / ds are the pair's [T][T] block. kt is scratch of hd * T floats.
// accumulate = 0: dq, dk, dv are overwritten, else added to. Every sum is one fmaf chain (or a fixed lane tree) whose order depends on T and hd only.
#ifndef VITMAE_ATTENTION_AVX512_H
#define VITMAE_ATTENTION_AVX512_H

void attn_head_forward_avx512(float *out, long ldo, float *att, const float *q, const float *k,
                              const float *v, long ldq, float *kt, int T, int hd, float scale);
void attn_head_backward_avx512(float *dq, float *dk, float *dv, long lddq, float *ds, const float *dy,
                               long ldy, const float *q, const float *k, const float *v, long ldq,
                               const float *p, float *vt, int T, int hd, float scale, int accumulate);
#endif
