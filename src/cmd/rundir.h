// Run folders shared by `vitmae train` and `vitmae finetune` (folders themselves: cmd/output.h): snapshot
// pruning, leftovers of killed writes, --resume paths, and the pixel
// normalisation chosen at the start of a run.
#ifndef VITMAE_RUNDIR_H
#define VITMAE_RUNDIR_H
#include <stddef.h>
#include "core/model.h"
#include "data/dataset.h"

// Removes ".checkpoint*.safetensors.tmp-*" and ".checkpoint.link.*" left by killed writes.
void run_remove_stale_temp_files(const char *dir);
// Keeps the newest `keep` RUN/checkpoint-<step>.safetensors files.
void prune_snapshots(const char *dir, int keep);
// Makes `latest` a hard link to the snapshot file, swapped in atomically (link to a temporary name,
// rename, fsync of dir). 0 ok; -1 when links are not possible there (the caller writes latest itself).
int  publish_latest(const char *snapshot, const char *latest, const char *dir);
// --resume RUN_OR_FILE: a folder means its checkpoint.safetensors; dir gets the run folder.
void run_resume_path(const char *arg, char *path, size_t n, char *dir, size_t dn);
// 1 when path exists and is not an empty folder (a run must not be written into it without --resume).
int  path_in_use(const char *path);
// --pixel-norm dataset|imagenet|none into cfg->pixel_mean / pixel_std ("dataset": measured on the
// evaluation views of the items idx[0..n)). 0 ok, -1 with a reason.
int  pixel_norm_set(MaeConfig *cfg, const char *mode, const Dataset *ds, const int *idx, int n, char *err,
                    size_t errlen);
#endif
