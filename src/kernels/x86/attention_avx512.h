// Internal to kernels/attention.c and x86/attention_avx512.c: attention for one (image, head) pair
// with AVX-512.
// Layouts as attention_forward_rows / attention_backward_rows_set (kernels/attention.h): Tq query rows
// (q, rows `ldqq` floats apart) attend to T key and value rows (k, v: the head's first column in the
// qkv buffer, rows `ldq` floats apart, 3C); in a square attention q is the qkv buffer's too (Tq = T,
// ldqq = ldq). out / dy (Tq rows), dq (Tq rows, `lddqq` apart) and dk, dv (T rows, `lddq` apart)
// likewise. att / ds are the pair's [Tq][T] block. kt / vt are scratch of hd * T floats.
// accumulate = 0: dq, dk, dv are overwritten, else added to. Every sum is one fmaf chain (or a fixed
// lane tree) whose order depends on Tq, T and hd only; a query row's results do not depend on the
// other query rows, and a query row whose dO is zero adds exact zeros to dK and dV.
#ifndef VITMAE_ATTENTION_AVX512_H
#define VITMAE_ATTENTION_AVX512_H

void attn_head_forward_avx512(float *out, long ldo, float *att, const float *q, long ldqq, const float *k,
                              const float *v, long ldq, float *kt, int Tq, int T, int hd, float scale);
void attn_head_backward_avx512(float *dq, long lddqq, float *dk, float *dv, long lddq, float *ds, const float *dy,
                               long ldy, const float *q, long ldqq, const float *k, const float *v, long ldq,
                               const float *p, float *vt, int Tq, int T, int hd, float scale, int accumulate);
#endif
