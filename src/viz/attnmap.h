// Attention maps from the encoder's softmax attention (`vitmae attention`, docs/interface.md section 5):
// a query row over the patches (the CLS token's, or one patch's), head fusion, and attention
// rollout. Pure math on buffers; drawing and files are the command's (src/cmd/attention.c).
//
// Layouts (row-major):
//   att   [heads, T, T]  one encoder layer of one image, as mae_attention gives it for B = 1:
//                        row = query token, column = key token; every row sums to 1.
//                        T = 1 + K: token 0 = CLS, token 1 + j = grid patch keep[j].
//   keep  [K]            the visible patches (grid indices 0..L-1), in token order
//   mat   [T, T]         one matrix (a head, a fused layer, a rollout product)
//   grid  [L]            a map over the patch grid, L = gw * gh, row-major (row = y);
//                        patches that are not visible (masked out) hold NAN
#ifndef VITMAE_ATTNMAP_H
#define VITMAE_ATTNMAP_H

// Head selection: a head index >= 0, or one of these fusions over heads.
enum { ATTN_HEAD_MEAN = -1, ATTN_HEAD_MAX = -2 };

// mat [T, T] = head `head` of att (a copy), or the element-wise mean / max over heads.
void attn_fuse_heads(const float *att, int heads, int T, int head, float *mat);

// row [T] = row `query` of head `head` of att, or the mean / max over heads of that row.
void attn_query_row(const float *att, int heads, int T, int query, int head, float *row);

// Token of grid patch `patch`: 1 + j where keep[j] == patch, or -1 when it is not visible.
int attn_token_of_patch(const int *keep, int K, int patch);

// grid [L] = row [T] over the patches: grid[keep[j]] = row[1 + j]; the CLS column is dropped and
// every patch not in keep gets NAN.
void attn_row_to_grid(const float *row, int T, const int *keep, int L, float *grid);

// Attention rollout (Abnar & Zuidema 2020): R_0 = I, R_l = Â_l R_{l-1} with
// Â = 0.5 A + 0.5 I, rows renormalised to sum 1. attn_rollout_init sets R = I;
// attn_rollout_step replaces R [T, T] by Â R for one layer's matrix A [T, T] (a head, or heads
// fused with attn_fuse_heads); work [T, T] is scratch. Sums run in double over k in order, each
// output row owned by one thread: the result is the same for any thread count.
void attn_rollout_init(float *R, int T);
void attn_rollout_step(float *R, const float *A, int T, float *work);

// The value a map holds on a patch when every layer attends uniformly (each weight 1/T), the level
// its colour bar marks: 1/T for a query row (rollout 0); for the rollout through layers 0..layer,
// (1 - 2^-(layer+1)) / T on every token but the query's own, since with U the uniform matrix
// (U^2 = U) the product of k matrices 0.5 U + 0.5 I is 2^-k I + (1 - 2^-k) U.
double attn_uniform_level(int rollout, int layer, int T);

// Min and max of the finite values of grid [n] (NaN skipped); 0 and 0 when there is none.
void attn_grid_range(const float *grid, int n, float *vmin, float *vmax);

// Colour scales of drawn maps (`vitmae attention --normalize`): ATTN_SCALE_LAYER: from 0 to the
// largest value of every map in the same group (a layer), so a layer's maps share one scale and a
// colour is proportional to the weight; ATTN_SCALE_MAP: the map's own min..max (most contrast; small
// differences look large); ATTN_SCALE_NONE: 0..1, the weights as they are.
enum { ATTN_SCALE_LAYER, ATTN_SCALE_MAP, ATTN_SCALE_NONE };
// The scale of map t of grids [n][L] (NaN = masked, skipped); group [n] (e.g. the layer of each).
void attn_map_scale(int how, const float *grids, const int *group, int n, int t, int L, double *vmin, double *vmax);
#endif
