// A confusion matrix as a picture: rows = true class, columns = predicted class, each cell coloured by
// the fraction of its row (viridis, 0..1, with a colour bar) and, when it fits, labelled with its count.
// Rows are labelled "index name" on the left (viz_confusion_label), columns by index on top; a title line above. Where a line of text is taller than a cell,
// every k-th row is labelled (with a tick); where an index is wider than a cell, the column indices
// take two staggered lines, or, wider still, every k-th column is labelled (with a tick).
#ifndef VITMAE_CONFUSION_H
#define VITMAE_CONFUSION_H
#include <stddef.h>
#include "viz/viz.h"

// counts [n][n] (row = true class). Creates *out (canvas_free it). 0 ok, -1 with a message.
// A row's label "i name" into out (n bytes): a name of more than 24 characters (not bytes) keeps its
// first 12 and last 12 with an ellipsis between, so that a cut name does not pass for a whole one and
// names that differ at their ends stay apart.
void viz_confusion_label(char *out, size_t n, int i, const char *name);
int viz_confusion(Canvas *out, const long *counts, int n, const char *const *names, const char *title,
                  char *err, size_t errlen);
#endif
