// Internal to kernels/attention.c and x86/attention_avx2.c: attention for one (image, head) pair with
// AVX2 and FMA. Arguments as x86/attention_avx512.h's twins: Tq query rows (q, `ldqq` apart) attend to
// T key and value rows (k, v in the qkv buffer, `ldq` apart); out / dy / dq (Tq rows) and dk, dv (T
// rows) with their own row strides; att / ds are the pair's [Tq][T] block; kt / vt scratch of hd * T
// floats; accumulate = 0 overwrites dq, dk, dv, else adds to them. The forward gives the portable
// loops' bits, the backward the AVX-512 kernel's (tests/test_ops.c).
#ifndef VITMAE_ATTENTION_AVX2_H
#define VITMAE_ATTENTION_AVX2_H

void attn_head_forward_avx2(float *out, long ldo, float *att, const float *q, long ldqq, const float *k,
                            const float *v, long ldq, float *kt, int Tq, int T, int hd, float scale);
void attn_head_backward_avx2(float *dq, long lddqq, float *dk, float *dv, long lddq, float *ds, const float *dy,
                             long ldy, const float *q, long ldqq, const float *k, const float *v, long ldq,
                             const float *p, float *vt, int Tq, int T, int hd, float scale, int accumulate);
#endif
