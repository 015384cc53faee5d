// The run state of `vitmae train`: train_state JSON, resuming, the random streams and the
// checkpoint files of a run folder. See cmd/train_state.h.
#include "cmd/train_state.h"
#include <cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/rng.h"
#include "data/dataset.h"

// ---------------------------------------------------------------------------------------------
// train_state JSON

char *run_state_to_json(const RunState *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)r->step);
    cJSON_AddNumberToObject(o, "total_steps", (double)r->total_steps);
    cJSON_AddNumberToObject(o, "warmup_steps", (double)r->warmup);
    cJSON_AddNumberToObject(o, "seed", (double)r->seed);
    cJSON_AddNumberToObject(o, "batch", r->batch);
    cJSON_AddNumberToObject(o, "lr", r->lr);
    cJSON_AddNumberToObject(o, "min_lr", r->min_lr);
    cJSON_AddNumberToObject(o, "weight_decay", r->wd);
    cJSON_AddNumberToObject(o, "clip", r->clip);
    cJSON_AddNumberToObject(o, "mask_ratio", r->mask_ratio);
    cJSON_AddNumberToObject(o, "val_frac", r->val_frac);
    cJSON_AddNumberToObject(o, "val_max", r->val_max);
    cJSON_AddStringToObject(o, "augment", r->augment);
    cJSON_AddStringToObject(o, "data", r->data);
    cJSON_AddNumberToObject(o, "eval_every", (double)r->eval_every);
    cJSON_AddNumberToObject(o, "ckpt_every", (double)r->ckpt_every);
    cJSON_AddNumberToObject(o, "log_every", (double)r->log_every);
    cJSON_AddNumberToObject(o, "sample_every", (double)r->sample_every);
    cJSON_AddNumberToObject(o, "keep", r->keep);
    cJSON_AddNumberToObject(o, "grad_groups", r->grad_groups);
    cJSON_AddNumberToObject(o, "processes", r->processes);
    cJSON_AddNumberToObject(o, "accum", r->accum);
    cJSON_AddNumberToObject(o, "elapsed_s", r->elapsed_s);
    // The data position and every random stream follow from (seed, step): see the file comment.
    cJSON_AddNumberToObject(o, "samples_seen", (double)r->step * r->batch);
    cJSON_AddStringToObject(o, "rng", "derived from (seed, step, image index)");
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static int json_number(const cJSON *o, const char *key, double lo, double hi, double *out,
                       char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi)) {
        snprintf(err, errlen, "train_state: '%s' missing or out of range", key);
        return -1;
    }
    *out = v->valuedouble;
    return 0;
}

int run_state_from_json(const char *json, RunState *r, char *err, size_t errlen) {
    cJSON *o = cJSON_Parse(json);
    if (!cJSON_IsObject(o)) { cJSON_Delete(o); snprintf(err, errlen, "train_state is not a JSON object"); return -1; }
    double v[18];
    static const char *keys[] = {"step", "total_steps", "warmup_steps", "seed", "batch", "lr", "min_lr",
                                 "weight_decay", "clip", "mask_ratio", "val_frac", "val_max", "eval_every",
                                 "ckpt_every", "log_every", "sample_every", "keep", "elapsed_s"};
    for (int i = 0; i < 18; i++)
        if (json_number(o, keys[i], i == 3 ? -9.3e18 : 0, 9.3e18, &v[i], err, errlen)) { cJSON_Delete(o); return -1; }
    memset(r, 0, sizeof *r);
    r->step = (long)v[0]; r->total_steps = (long)v[1]; r->warmup = (long)v[2]; r->seed = (long)v[3];
    r->batch = (int)v[4]; r->lr = (float)v[5]; r->min_lr = (float)v[6]; r->wd = (float)v[7];
    r->clip = (float)v[8]; r->mask_ratio = (float)v[9]; r->val_frac = (float)v[10]; r->val_max = (int)v[11];
    r->eval_every = (long)v[12]; r->ckpt_every = (long)v[13]; r->log_every = (long)v[14];
    r->sample_every = (long)v[15]; r->keep = (int)v[16]; r->elapsed_s = v[17];
    const cJSON *aug = cJSON_GetObjectItemCaseSensitive(o, "augment");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    Augment parsed;
    if (!cJSON_IsString(aug) || augment_parse(aug->valuestring, &parsed) != 0 || !cJSON_IsString(data)) {
        cJSON_Delete(o);
        snprintf(err, errlen, "train_state: 'augment' or 'data' missing");
        return -1;
    }
    snprintf(r->augment, sizeof r->augment, "%s", aug->valuestring);
    snprintf(r->data, sizeof r->data, "%s", data->valuestring);
    // Checkpoints written before gradient groups computed the batch in one pass: G = 1.
    double g = 1, n = 1, k = 1;
    if (cJSON_GetObjectItemCaseSensitive(o, "grad_groups") &&
        json_number(o, "grad_groups", 1, 1 << 20, &g, err, errlen)) { cJSON_Delete(o); return -1; }
    const cJSON *np = cJSON_GetObjectItemCaseSensitive(o, "processes"), *nk = cJSON_GetObjectItemCaseSensitive(o, "accum");
    if (cJSON_IsNumber(np)) n = np->valuedouble;
    if (cJSON_IsNumber(nk)) k = nk->valuedouble;
    r->grad_groups = (int)g; r->processes = (int)n; r->accum = (int)k;
    cJSON_Delete(o);
    if (r->batch < 1 || r->step > r->total_steps) { snprintf(err, errlen, "train_state: inconsistent step/batch"); return -1; }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Resuming

void run_resume_path(const char *arg, char *path, size_t n, char *dir, size_t dn) {
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(path, n, "%s/checkpoint.safetensors", arg);
        snprintf(dir, dn, "%s", arg);
    } else {
        snprintf(path, n, "%s", arg);
        const char *slash = strrchr(arg, '/');
        if (slash) snprintf(dir, dn, "%.*s", (int)(slash - arg), arg);
        else snprintf(dir, dn, ".");
    }
}

int run_resume_load(const char *path, Checkpoint *ck, RunState *rs, char *err, size_t errlen) {
    memset(ck, 0, sizeof *ck);
    if (ckpt_load(path, ck, err, errlen)) return -1;
    if (!ck->train_state || !ck->exp_avg || !ck->exp_avg_sq || !ck->has_decoder) {
        ckpt_free(ck);
        snprintf(err, errlen, "%s: cannot resume: no training state in this checkpoint (it loads for inference only)", path);
        return -1;
    }
    char why[1024];
    if (run_state_from_json(ck->train_state, rs, why, sizeof why)) {
        ckpt_free(ck);
        snprintf(err, errlen, "%s: cannot resume: %s", path, why);
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Random streams

const int *run_epoch_order(EpochOrder *o, long seed, long epoch, int n) {
    for (int i = 0; i < 2; i++) if (o->epoch[i] == epoch) return o->perm[i];
    int slot = o->epoch[0] < o->epoch[1] ? 0 : 1;
    int *p = o->perm[slot];
    Rng r;
    rng_derive(&r, (uint64_t)seed ^ SALT_PERM, (uint64_t)epoch, 0);
    for (int i = 0; i < n; i++) p[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(&r, (uint32_t)i + 1);
        int tmp = p[i]; p[i] = p[j]; p[j] = tmp;
    }
    o->epoch[slot] = epoch;
    return p;
}

void run_masks(long seed, uint64_t salt, uint64_t a, int n, const uint64_t *keys, int L, int K,
               float *noise, int *ids_keep) {
    for (int k = 0; k < n; k++) {
        Rng r;
        rng_derive(&r, (uint64_t)seed ^ salt, a, keys[k]);
        for (int l = 0; l < L; l++) noise[(size_t)k * L + l] = rng_uniform(&r);
    }
    mae_masking_from_noise(noise, n, L, K, ids_keep);
}

// ---------------------------------------------------------------------------------------------
// Checkpoints: RUN/checkpoint-<step>.safetensors (the kept snapshots) and RUN/checkpoint.safetensors
// (the latest, a hard link to the newest snapshot swapped in atomically, or a file of its own).

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

// Temporary files of writes that a kill (SIGKILL, power loss) interrupted: ckpt_save's
// ".checkpoint*.safetensors.tmp-XXXXXX" and run_save_checkpoint's ".checkpoint.link.<pid>". Removed
// when a run starts or resumes in the folder, so repeated crashes do not fill the disk.
void run_remove_stale_temp_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        int tmp = strncmp(n, ".checkpoint", 11) == 0 && strstr(n, ".safetensors.tmp-") != NULL;
        int lnk = strncmp(n, ".checkpoint.link.", 17) == 0;
        if (!tmp && !lnk) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, n);
        unlink(path);
    }
    closedir(d);
}

static void prune_snapshots(const char *dir, int keep) {
    DIR *d = opendir(dir);
    if (!d) return;
    long steps[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096) {
        long s;
        char tail[64];
        if (sscanf(e->d_name, "checkpoint-%ld%63s", &s, tail) == 2 && !strcmp(tail, ".safetensors")) steps[n++] = s;
    }
    closedir(d);
    qsort(steps, n, sizeof steps[0], cmp_long);
    for (int i = 0; i < n - keep; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/checkpoint-%ld.safetensors", dir, steps[i]);
        unlink(path);
    }
}

int run_save_checkpoint(const char *run_dir, const char *ckpt_path, const RunState *rs,
                        const MaeConfig *cfg, const float *params, const float *exp_avg,
                        const float *exp_avg_sq, char *err, size_t errlen) {
    char *state = run_state_to_json(rs);
    if (!state) { snprintf(err, errlen, "out of memory"); return -1; }
    int rc;
    if (rs->keep > 0) {
        char snap[4300], tmp[4400];
        snprintf(snap, sizeof snap, "%s/checkpoint-%ld.safetensors", run_dir, rs->step);
        rc = ckpt_save(snap, cfg, params, state, exp_avg, exp_avg_sq, err, errlen);
        if (rc == 0) {
            snprintf(tmp, sizeof tmp, "%s/.checkpoint.link.%d", run_dir, (int)getpid());
            unlink(tmp);
            if (link(snap, tmp) == 0 && rename(tmp, ckpt_path) == 0) {
                int dfd = open(run_dir, O_RDONLY);
                if (dfd >= 0) { fsync(dfd); close(dfd); }
            } else {
                unlink(tmp);
                rc = ckpt_save(ckpt_path, cfg, params, state, exp_avg, exp_avg_sq, err, errlen);
            }
            prune_snapshots(run_dir, rs->keep);
        }
    } else {
        rc = ckpt_save(ckpt_path, cfg, params, state, exp_avg, exp_avg_sq, err, errlen);
    }
    free(state);
    return rc;
}
