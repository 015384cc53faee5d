// Layer kernels of the ViT (llm.c style), one file per operation: kernels/layernorm, linear, gelu,
// attention, residual. Each kernel has a plain, readable reference version (*_ref) that defines it and,
// beside it in the same file, a fast version (vectorisable loops with fixed-width partial sums,
// kernels/vecmath.h; register-blocked attention) that the model calls; tests/test_ops.c compares
// the two on odd sizes. The two differ by float rounding only (summation order).
// Every kernel is a free function with its shapes as arguments; row-major layouts are given in the
// comment above each one. Backward kernels ACCUMULATE (+=) into every gradient they produce, so the
// caller zeroes scratch gradients first; those that produce parameter gradients take param_acc, and
// with param_acc 0 they SET those instead (=, nothing read). Every such sum starts from +0, which
// (0 + x == x for any x but -0, and a sum from +0 is never -0) makes setting bitwise the same as
// adding into a zeroed gradient: the MAE's backward skips zeroing its gradient that way
// (core/model.h: mae_backward_set). OpenMP loops give each thread its own output rows or
// columns, and every sum runs in an order fixed by the sizes alone: results are bitwise identical
// for any number of threads.
#ifndef VITMAE_OPS_H
#define VITMAE_OPS_H
#include "kernels/attention.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/linear.h"
#include "kernels/residual.h"
#endif
