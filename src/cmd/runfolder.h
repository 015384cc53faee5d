// Run folders are never lost (docs/data.md "Run folders"): recognising a folder that holds a run,
// and moving a run aside whole for `train --overwrite`.
#ifndef VITMAE_RUNFOLDER_H
#define VITMAE_RUNFOLDER_H
#include <stddef.h>

// 1 when dir holds a run: checkpoint.safetensors, checkpoint-<step>.safetensors, metrics.csv or
// config.json. 0 when it does not (or does not exist).
int run_folder_has_run(const char *dir);
// Renames dir to dir.old-N, the first N >= 1 not taken (never replacing anything), so the old run
// stays whole. 0 ok with the new name in moved; -1 with err.
int run_folder_move_aside(const char *dir, char *moved, size_t movedlen, char *err, size_t errlen);
#endif
