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

// The attention of some query rows only: per image, Tq query rows (q [B, Tq, C], heads as in qkv's q
// part) attend to all T rows of qkv's keys and values ([B, T, 3C]; its q part is not read). out
// [B, Tq, C] and att [B, NH, Tq, T] as above, each query row's bits those of its row in
// attention_forward. The backward sets dq [B, Tq, C] and dqkv's k and v parts (its q part is left as
// it is). Where the query rows are some of qkv's own rows in their order, dk and dv are bitwise
// attention_backward_set's with dout zero at the other rows (their terms there are exact zeros), and
// dq is its rows at the queries (tests/test_ops.c). datt and scratch as above.
void attention_forward_rows(float *out, float *att, const float *q, const float *qkv, float *scratch, int B, int Tq,
                            int T, int C, int NH);
void attention_backward_rows_set(float *dq, float *dqkv, float *datt, const float *dout, const float *q,
                                 const float *qkv, const float *att, float *scratch, int B, int Tq, int T, int C,
                                 int NH);

// Reference versions (the definitions; layouts as above).
void attention_forward_ref(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
void attention_backward_ref(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att,
                            int B, int T, int C, int NH);
#endif
