// The run state of `vitmae train` (src/cmd/train_state.c): the data order is a uniform shuffle per
// epoch (every permutation of 3 items appears, each item lands in each position about equally often,
// epochs differ, the same (seed, epoch) gives the same order, including after the two-epoch cache is
// evicted), each held-out image has its own validation mask whatever chunk it is scored in, the
// train_state JSON round-trips every field a resumed run depends on, and --keep prunes
// snapshots to the newest N however many the folder holds.
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cmd/train_out.h"
#include "cmd/train_state.h"
#include "core/masking.h"
#include "core/rng.h"
#include "io/json.h"

static void test_epoch_order(void) {
    enum { N = 5, EPOCHS = 4000 };
    int a[N], b[N];
    EpochOrder o = {{a, b}, {-1, -1}};
    int count[N][N] = {{0}};
    int perms3[6] = {0};
    for (long e = 0; e < EPOCHS; e++) {
        const int *p = run_epoch_order(&o, 7, e, N);
        int seen[N] = {0}, ok = 1;
        for (int i = 0; i < N; i++) { ok &= p[i] >= 0 && p[i] < N && !seen[p[i]]; if (ok) seen[p[i]] = 1; }
        CHECK(ok, "epoch %ld: a permutation", e);
        if (!ok) return;
        for (int i = 0; i < N; i++) count[i][p[i]]++;
    }
    // Each (position, item) count is Binomial(4000, 1/5): mean 800, sd 25; 700..900 is 4 sd.
    int lo = EPOCHS, hi = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) { lo = count[i][j] < lo ? count[i][j] : lo; hi = count[i][j] > hi ? count[i][j] : hi; }
    CHECK(lo >= 700 && hi <= 900, "item-in-position counts %d..%d over %d epochs (want 700..900)", lo, hi, EPOCHS);
    int c[3], d[3];
    EpochOrder o3 = {{c, d}, {-1, -1}};
    for (long e = 0; e < 600; e++) {
        const int *p = run_epoch_order(&o3, 3, e, 3);
        perms3[p[0] * 2 + (p[1] > p[2])]++;
    }
    int all = 1;
    for (int k = 0; k < 6; k++) all &= perms3[k] > 50;
    CHECK(all, "all 6 orders of 3 items appear (>50 of 600 each): %d %d %d %d %d %d", perms3[0], perms3[1],
          perms3[2], perms3[3], perms3[4], perms3[5]);
    // Deterministic: epoch 1 again after epochs 2 and 3 pushed it out of the cache.
    int e1[N];
    memcpy(e1, run_epoch_order(&o, 11, 1, N), sizeof e1);
    run_epoch_order(&o, 11, 2, N);
    run_epoch_order(&o, 11, 3, N);
    CHECK(!memcmp(e1, run_epoch_order(&o, 11, 1, N), sizeof e1), "(seed, epoch) gives the same order again");
    int differ = 0, prev[N];
    memcpy(prev, run_epoch_order(&o, 11, 0, N), sizeof prev);
    for (long e = 1; e <= 8; e++) {
        const int *p = run_epoch_order(&o, 11, e, N);
        differ += memcmp(prev, p, sizeof prev) != 0;
        memcpy(prev, p, sizeof prev);
    }
    CHECK(differ >= 6, "consecutive epochs have different orders (%d of 8)", differ);
}

static void test_state_json(void) {
    RunState r, back;
    memset(&r, 0, sizeof r);
    r.step = 12; r.total_steps = 40; r.warmup = 3; r.seed = 123456789012345; r.eval_every = 5;
    r.ckpt_every = 6; r.log_every = 7; r.sample_every = 8; r.batch = 12; r.keep = 2; r.val_max = 100;
    r.lr = 0.0125f; r.min_lr = 1e-5f; r.wd = 0.04f; r.clip = 1.5f; r.mask_ratio = 0.6f; r.val_frac = 0.07f;
    snprintf(r.augment, sizeof r.augment, "flip");
    snprintf(r.interp, sizeof r.interp, "bicubic");
    snprintf(r.data, sizeof r.data, "/data/set");
    r.elapsed_s = 12.5;
    r.grad_groups = 4; r.processes = 2; r.accum = 2;
    char *js = run_state_to_json(&r), err[256];
    CHECK(js != NULL, "to json");
    if (!js) return;
    int rc = run_state_from_json(js, &back, err, sizeof err);
    CHECK(rc == 0, "from json: %s", err);
    CHECK(back.step == r.step && back.total_steps == r.total_steps && back.warmup == r.warmup && back.seed == r.seed
          && back.batch == r.batch && back.lr == r.lr && back.min_lr == r.min_lr && back.wd == r.wd
          && back.clip == r.clip && back.mask_ratio == r.mask_ratio && back.val_frac == r.val_frac
          && !strcmp(back.augment, "flip") && !strcmp(back.interp, "bicubic") && !strcmp(back.data, "/data/set"),
          "round trip: %s", js);
    CHECK(back.grad_groups == 4 && back.processes == 2 && back.accum == 2, "groups, processes, accum: %s", js);
    free(js);
    // The losses since the last metrics row come back whatever --log-every (up to 10^12) made them: a
    // run of --log-every 2000000000 checkpointed 1.5 x 10^9 steps after its last row lost them (a
    // reader's bound of 10^9), and its next row averaged a third of the steps.
    r.step = 1500000000; r.total_steps = 1000000000000; r.log_every = 1000000000000;
    r.log_loss_sum = 2.25e9; r.log_steps = 1500000000;
    js = run_state_to_json(&r);
    rc = js ? run_state_from_json(js, &back, err, sizeof err) : -1;
    CHECK(rc == 0 && back.log_steps == r.log_steps && back.log_loss_sum == r.log_loss_sum,
          "log_steps %ld, log_loss_sum %g back as %ld, %g (%s)", r.log_steps, r.log_loss_sum, back.log_steps,
          back.log_loss_sum, rc ? err : js);
    free(js);
    // ... but never more steps than the run has made (an edit: the next row divided the sum by them).
    r.step = 1499999999;
    js = run_state_to_json(&r);
    rc = js ? run_state_from_json(js, &back, err, sizeof err) : 0;
    CHECK(rc == -1 && !strcmp(err, "train_state: 'log_steps' out of range: 1500000000 is past 'step' 1499999999"),
          "log_steps past the step: %s", err);
    free(js);
    r.step = 12; r.total_steps = 40; r.log_every = 7; r.log_loss_sum = 0; r.log_steps = 0;
    // The epoch column's stretch (cmd/runfolder.h, RunEpochs) comes back bitwise, so that a resume after
    // a change of images writes the rows of the run that did not stop; one past the step is an edit.
    r.epochs = (RunEpochs){8.0 / 3, 2, 18};
    js = run_state_to_json(&r);
    rc = js ? run_state_from_json(js, &back, err, sizeof err) : -1;
    CHECK(rc == 0 && back.epochs.from == r.epochs.from && back.epochs.from_step == 2 && back.epochs.images == 18 &&
          run_epoch_at(&back.epochs, 14, 4) == 8.0 / 3 + 12.0 * 4 / 18, "epochs stretch back (%s)", rc ? err : js);
    free(js);
    r.epochs.from_step = 13;
    js = run_state_to_json(&r);
    rc = js ? run_state_from_json(js, &back, err, sizeof err) : 0;
    CHECK(rc == -1 && !strcmp(err, "train_state: 'epoch_from_step' missing or out of range"), "a stretch past the step: %s", err);
    free(js);
    r.epochs = (RunEpochs){0, 0, 0};
    // --epochs E makes ceil(E n / B) steps: E up to 10^6 over 2,000,000 images at batch 1 made 2 x 10^12,
    // past what train_state's reader takes, so a run trained on and each checkpoint it wrote was refused
    // by --resume. Such a run is refused before it starts; the most a reader takes still runs.
    static const struct { double epochs; long n; int batch; } runs[] = {{1e6, 2000000, 1}, {1e6, 1000000, 1},
                                                                       {1e6, 2147483647, 4096}, {1e-6, 1, 4096}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        long steps = -1;
        err[0] = 0;
        rc = run_epoch_steps("train", runs[i].epochs, runs[i].n, runs[i].batch, &steps, err, sizeof err);
        if (rc == 0) {
            r.total_steps = steps; r.step = steps;
            js = run_state_to_json(&r);
            int back_rc = js ? run_state_from_json(js, &back, err, sizeof err) : -1;
            CHECK(steps >= 1 && back_rc == 0 && back.total_steps == steps, "--epochs %g over %ld at batch %d: %ld "
                  "steps, and its checkpoint %s", runs[i].epochs, runs[i].n, runs[i].batch, steps,
                  back_rc ? err : "resumes");
            free(js);
        } else {
            CHECK(rc == CLI_USAGE && !strncmp(err, "train --epochs: ", 16) && strstr(err, "at most 10^12"),
                  "--epochs %g over %ld at batch %d refused: rc %d, %s", runs[i].epochs, runs[i].n, runs[i].batch, rc, err);
        }
    }
    // Every field at the far end of its flag's range (cmd/train.c) reads back: what a run accepts, its
    // checkpoint resumes. lr without --lr is --blr 10 x --batch 4096 / 256, computed as train does.
    RunState far = r;
    far.step = far.total_steps = far.warmup = 1000000000000; far.seed = (long)RNG_SEED_MAX; far.batch = 4096;
    far.lr = 10.0f * 4096 / 256.0f; far.min_lr = far.wd = 10.0f; far.clip = 1e6f; far.mask_ratio = 0.99999994f;
    far.val_frac = 0.9f; far.val_max = VAL_MAX_LIMIT; far.keep = 100000; far.elapsed_s = 3.2e9;
    far.eval_every = far.ckpt_every = far.log_every = far.sample_every = 1000000000000;
    far.log_steps = 999999999999; far.log_loss_sum = 1e12; far.max_pixels = 1000000000000;
    far.grad_groups = far.processes = far.accum = 4096;
    js = run_state_to_json(&far);
    rc = js ? run_state_from_json(js, &back, err, sizeof err) : -1;
    CHECK(rc == 0 && back.step == far.step && back.lr == far.lr && back.val_frac == far.val_frac &&
          back.mask_ratio == far.mask_ratio && back.seed == far.seed && back.log_steps == far.log_steps &&
          back.max_pixels == far.max_pixels && back.grad_groups == 4096, "the flags' far ends read back: %s (%s)",
          rc ? err : "changed", js);
    free(js);
    r.step = 12; r.total_steps = 40;
    // A state from before gradient groups: one group (the whole batch in one pass), 1 process.
    const char *old = "{\"step\":1,\"total_steps\":2,\"warmup_steps\":0,\"seed\":0,\"batch\":8,\"lr\":0.1,"
                      "\"min_lr\":0,\"weight_decay\":0,\"clip\":0,\"mask_ratio\":0.75,\"val_frac\":0,\"val_max\":1,"
                      "\"augment\":\"none\",\"data\":\"/d\",\"eval_every\":1,\"ckpt_every\":1,\"log_every\":1,"
                      "\"sample_every\":1,\"keep\":1,\"elapsed_s\":0}";
    rc = run_state_from_json(old, &back, err, sizeof err);
    CHECK(rc == 0 && back.grad_groups == 1 && back.processes == 1 && back.accum == 1 && !strcmp(back.interp, "bilinear"),
          "old state (one group, bilinear crops): %s", rc ? err : back.interp);
    r.grad_groups = 0;
    js = run_state_to_json(&r);
    CHECK(js && run_state_from_json(js, &back, err, sizeof err) != 0, "grad_groups 0 refused");
    free(js);
    // --val-max takes 1 to 10000000 in train as in finetune (cmd/runfolder.h, VAL_MAX_LIMIT): a checkpoint
    // holding such a value resumes, one past it does not. A float setting written by an earlier version
    // as the double it held (the largest --mask-ratio, 0.99999994f, as 0.9999999403953552, above the
    // decimal bound) is checked as the float it is read into; a count that is not whole, or past an
    // int, is refused.
    static const struct { const char *from, *to; int ok; } edits[] = {
        {"\"val_max\":1,", "\"val_max\":10000000,", 1}, {"\"val_max\":1,", "\"val_max\":10000001,", 0},
        {"\"mask_ratio\":0.75,", "\"mask_ratio\":0.9999999403953552,", 1},
        {"\"mask_ratio\":0.75,", "\"mask_ratio\":1.0000001,", 0}, {"\"val_max\":1,", "\"val_max\":0,", 0},
        {"\"batch\":8,", "\"batch\":1e10,", 0}, {"\"keep\":1,", "\"keep\":1.5,", 0},
        {"\"seed\":0,", "\"seed\":9.3e18,", 0}, {"\"lr\":0.1,", "\"lr\":1e300,", 0},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        char edited[1024];
        const char *at = strstr(old, edits[i].from);
        snprintf(edited, sizeof edited, "%.*s%s%s", (int)(at - old), old, edits[i].to, at + strlen(edits[i].from));
        err[0] = 0;
        rc = run_state_from_json(edited, &back, err, sizeof err);
        CHECK(edits[i].ok ? rc == 0 : rc != 0 && strstr(err, "missing or out of range"), "%s: %s (%s)", edits[i].to,
              edits[i].ok ? "read" : "refused", err);
    }
    // G is a count: 2.5 was read as 2 groups, another run's sums.
    char half[1024];
    snprintf(half, sizeof half, "%.*s,\"grad_groups\":2.5}", (int)strlen(old) - 1, old);
    CHECK(run_state_from_json(half, &back, err, sizeof err) != 0, "grad_groups 2.5 refused (read as %d)", back.grad_groups);
    // Hostile records of N and K (far beyond an int): read as 1.
    char hostile[1024];
    snprintf(hostile, sizeof hostile, "%.*s,\"processes\":1e300,\"accum\":-5}", (int)strlen(old) - 1, old);
    rc = run_state_from_json(hostile, &back, err, sizeof err);
    CHECK(rc == 0 && back.processes == 1 && back.accum == 1, "hostile processes/accum read as 1 (rc %d: %d, %d)", rc,
          back.processes, back.accum);
    // A state nested past the JSON reader's 1000 levels: said so, not "not valid JSON (at byte N)", which
    // sent the user after a syntax error that is not there (1000 levels parse, then fail a field).
    for (int levels = 1000; levels <= 1001; levels++) {
        char deep[2 * 1001 + 16];
        check_json_nested(deep, sizeof deep, "{\"a\":", levels);
        const char *want = levels == 1000 ? "missing or out of range" : "train_state: JSON nested deeper than 1000 levels (the limit of the JSON reader)";
        err[0] = 0;
        rc = run_state_from_json(deep, &back, err, sizeof err);
        CHECK(rc != 0 && strstr(err, want), "train_state of %d levels: '%s'", levels, err);
    }
    // Memory that runs out at any one of cJSON's allocations as it reads a valid state: "out of memory",
    // never "train_state is not valid JSON (at byte N)", which sent the user to a text that is fine.
    int wrong = 0, failed = 0;
    long oom_at;
    for (oom_at = 1; oom_at < 1000; oom_at++) {
        json_test_fail_alloc(oom_at);
        err[0] = 0;
        rc = run_state_from_json(old, &back, err, sizeof err);
        long allocs = json_test_allocs();
        json_test_fail_alloc(0);
        failed += rc != 0;
        if (rc != 0 && strcmp(err, "out of memory") && !wrong++)
            CHECK(0, "train_state read with allocation %ld failing: '%s', want 'out of memory'", oom_at, err);
        if (allocs < oom_at) break;   // every allocation passed: all were tried
    }
    CHECK(failed > 10 && wrong == 0, "%d of %ld allocations failed the read, %d of them said otherwise", failed, oom_at - 1,
          wrong);
}

// Counts RUN/checkpoint-<step>.safetensors in dir, and the oldest step among them.
static int count_snapshots(const char *dir, long *oldest) {
    DIR *d = opendir(dir);
    int n = 0;
    *oldest = -1;
    for (struct dirent *e; d && (e = readdir(d));) {
        long s;
        if (sscanf(e->d_name, "checkpoint-%ld.safetensors", &s) != 1) continue;
        n++;
        if (*oldest < 0 || s < *oldest) *oldest = s;
    }
    if (d) closedir(d);
    return n;
}

// --keep N keeps the newest N snapshots however many the folder holds: a list of 4096 read in
// directory order pruned nothing once a folder held more than 4096 (--keep 4100: every snapshot of
// a long run stayed).
static void test_prune_snapshots(void) {
    const char *dir = check_tmpdir();
    enum { MADE = 4200, KEEP = 4100 };
    char path[600];
    // Each a safetensors header holding a train_state, as a run's snapshot is: a file under a snapshot's
    // name that records no run (an empty one, a user's notes) is not a snapshot, never pruned
    // (docs/interface.md, section 5).
    static const char head[] = "{\"__metadata__\":{\"train_state\":\"{}\"}}   ";
    unsigned char len[8] = {(unsigned char)(sizeof head - 1)};
    for (int s = 1; s <= MADE; s++) {
        snprintf(path, sizeof path, "%s/checkpoint-%d.safetensors", dir, s * 10);
        FILE *f = fopen(path, "w");
        if (f) {
            fwrite(len, 1, sizeof len, f);
            fwrite(head, 1, sizeof head - 1, f);
            fclose(f);
        }
    }
    long oldest;
    CHECK(count_snapshots(dir, &oldest) == MADE, "%d snapshots made", MADE);
    prune_snapshots(dir, KEEP, MADE * 10L);
    int left = count_snapshots(dir, &oldest);
    CHECK(left == KEEP && oldest == (MADE - KEEP + 1) * 10L, "--keep %d of %d snapshots: %d left, the oldest step %ld (want %ld)",
          KEEP, MADE, left, oldest, (MADE - KEEP + 1) * 10L);
    prune_snapshots(dir, 2, MADE * 10L);
    left = count_snapshots(dir, &oldest);
    CHECK(left == 2 && oldest == (MADE - 1) * 10L, "--keep 2 then: %d left, the oldest step %ld", left, oldest);
    // A user's notes under a snapshot's name (no train_state) stay: not a snapshot, not counted.
    snprintf(path, sizeof path, "%s/checkpoint-3.safetensors", dir);
    FILE *notes = fopen(path, "w");
    if (notes) { fputs("my notes\n", notes); fclose(notes); }
    prune_snapshots(dir, 1, MADE * 10L);
    left = count_snapshots(dir, &oldest);
    CHECK(left == 2 && oldest == 3 && access(path, F_OK) == 0,
          "--keep 1 beside a user's checkpoint-3.safetensors: the notes and the newest snapshot left (%d, oldest %ld)",
          left, oldest);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = calloc(1, 1 << 16);
    if (s) fread(s, 1, (1 << 16) - 1, f);
    fclose(f);
    return s;
}

// config.json and a checkpoint's train state when memory runs out at any one of cJSON's allocations
// (json_test_fail_alloc): the whole text or none, with "PATH: out of memory". An item that failed was
// left out (a config.json without "model", exit 0), found by failing the C library's calls one at a time.
static void test_config_out_of_memory(void) {
    static Train t;
    memset(&t, 0, sizeof t);
    mae_config_preset(&t.cfg, "tiny");
    t.ntrain = 5;
    t.nval = 1;
    snprintf(t.run_dir, sizeof t.run_dir, "%s/cfgrun", check_tmpdir());
    mkdir(t.run_dir, 0777);
    RunState r;
    memset(&r, 0, sizeof r);
    r.step = 4; r.total_steps = 8; r.batch = 2; r.keep = 2;
    snprintf(r.augment, sizeof r.augment, "crop");
    char path[4200], err[4400];
    snprintf(path, sizeof path, "%s/config.json", t.run_dir);
    CHECK(train_out_config(&t, &r, err, sizeof err) == 0, "config.json: %s", err);
    char *want = read_text(path);
    CHECK(want && strstr(want, "\"model\"") && strstr(want, "\"train\"") && strstr(want, "\"parameters\""), "config.json: %s", want ? want : "missing");
    int failed = 0, wrong = 0;
    long oom_at;
    for (oom_at = 1; want && oom_at < 1000; oom_at++) {
        remove(path);
        json_test_fail_alloc(oom_at);
        int rc = train_out_config(&t, &r, err, sizeof err);
        long allocs = json_test_allocs();
        json_test_fail_alloc(0);
        char *got = read_text(path);
        char want_err[4300];
        snprintf(want_err, sizeof want_err, "%s: out of memory", path);
        if (rc == 0 && (!got || strcmp(got, want))) {
            if (!wrong++) CHECK(0, "allocation %ld failing: exit 0 with config.json %s", oom_at, got ? got : "missing");
        } else if (rc != 0 && (got || strcmp(err, want_err))) {
            if (!wrong++) CHECK(0, "allocation %ld failing: '%s', config.json %s", oom_at, err, got ? "written" : "absent");
        }
        failed += rc != 0;
        free(got);
        if (allocs < oom_at) break;   // every allocation passed: all were tried
    }
    CHECK(failed > 10 && wrong == 0, "%d of %ld allocations failed the write, %d of them wrongly", failed, oom_at - 1, wrong);
    free(want);
    remove(path);

    // The checkpoint: its header holds the train state (run_state_to_json) and the config.
    MaeConfig *c = &t.cfg;
    c->img_size = 4; c->patch_size = 2; c->in_chans = 1; c->embed_dim = 4; c->depth = 1; c->num_heads = 1;
    c->dec_embed_dim = 4; c->dec_depth = 1; c->dec_num_heads = 1;
    r.keep = 0;
    r.seed = 123456789012345;
    size_t np = mae_num_params(c);
    float *w = calloc(3 * np, sizeof *w);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", t.run_dir);
    CHECK(w && run_save_checkpoint(t.run_dir, path, &r, c, w, w + np, w + 2 * np, err, sizeof err) == 0, "checkpoint: %s", err);
    FILE *f = fopen(path, "rb");
    long size = 0;
    char *ref = NULL, *got = NULL;
    if (f) {
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        rewind(f);
        ref = malloc(size);
        got = malloc(size);
        if (ref && fread(ref, 1, size, f) != (size_t)size) size = 0;
        fclose(f);
    }
    failed = wrong = 0;
    for (oom_at = 1; ref && got && size && oom_at < 1000; oom_at++) {
        remove(path);
        json_test_fail_alloc(oom_at);
        int rc = run_save_checkpoint(t.run_dir, path, &r, c, w, w + np, w + 2 * np, err, sizeof err);
        long allocs = json_test_allocs();
        json_test_fail_alloc(0);
        f = fopen(path, "rb");
        long n = f ? (long)fread(got, 1, size, f) : -1;
        if (f) fclose(f);
        char want_err[4300];
        snprintf(want_err, sizeof want_err, "%s: out of memory", path);
        if (rc == 0 && (n != size || memcmp(got, ref, size))) {
            if (!wrong++) CHECK(0, "allocation %ld failing: a checkpoint unlike the whole one written (%ld of %ld bytes)", oom_at, n, size);
        } else if (rc != 0 && (n >= 0 || strcmp(err, want_err))) {
            if (!wrong++) CHECK(0, "allocation %ld failing: '%s', checkpoint %s", oom_at, err, n >= 0 ? "written" : "absent");
        }
        failed += rc != 0;
        if (allocs < oom_at) break;
    }
    CHECK(failed > 10 && wrong == 0, "checkpoint: %d of %ld allocations failed the write, %d of them wrongly", failed, oom_at - 1, wrong);
    free(ref); free(got); free(w);
    remove(path);
    DIR *d = opendir(t.run_dir);   // nothing else: no temporary file left by a failed write
    int others = 0;
    for (struct dirent *e; d && (e = readdir(d));) others += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    CHECK(others == 0, "%d files left in the run folder", others);
    rmdir(t.run_dir);
}

// Validation masks (docs/interface.md, "Cadence"): each held-out image its own mask, from (seed ^
// SALT_VAL, 0, i), the same in whatever chunk of an evaluation it is scored. A build that gave every
// image one mask (the key of image 0 for all) passed every test.
static void test_val_masks(void) {
    enum { N = 6, L = 64, K = 16 };
    float noise[N * L];
    int all[N * K], alone[K], want[K], scratch[2 * L];
    run_val_masks(3, 0, N, L, K, noise, all, scratch);
    // As sets of visible patches: C(64, 16) ~ 4.9e14 masks, so two images alike would be no chance.
    unsigned long long set[N] = {0};
    for (int i = 0; i < N; i++)
        for (int k = 0; k < K; k++) set[i] |= 1ull << all[i * K + k];
    for (int i = 0; i < N; i++) {
        int bits = __builtin_popcountll(set[i]);
        CHECK(bits == K, "validation image %d: %d distinct visible patches, want %d", i, bits, K);
        for (int j = 0; j < i; j++) CHECK(set[i] != set[j], "validation images %d and %d share one mask", j, i);
    }
    // Image 4 scored alone (first 4: a later chunk) has the mask it has among the six.
    run_val_masks(3, 4, 1, L, K, noise, alone, scratch);
    CHECK(!memcmp(alone, all + 4 * K, sizeof alone), "validation image 4: another mask in another chunk");
    // ... which is the seeded mask of key 4 under the validation's salt (core/masking.h).
    uint64_t key = 4;
    masks_seeded(3ull ^ SALT_VAL, 0, &key, 1, L, K, noise, want, scratch);
    CHECK(!memcmp(want, all + 4 * K, sizeof want), "validation image 4: not the mask of (seed ^ SALT_VAL, 0, 4)");
    // Another seed, other masks.
    run_val_masks(4, 4, 1, L, K, noise, alone, scratch);
    CHECK(memcmp(alone, all + 4 * K, sizeof alone) != 0, "validation image 4: the same mask under seeds 3 and 4");
}

// The room the in-memory caches get beside a run (cmd/runfolder.h, run_cache_room): 90% of the memory
// there is for this process, less what the run needs; their wish where it fits or memory is unknown;
// never below 0.
static void test_cache_room(void) {
    const double M = 1048576.0, G = 1024 * M;
    CHECK(run_cache_room(2048 * M, 24 * G, 2 * G) == 2048 * M, "2 GiB beside a 2 GiB run in 24 GiB: kept");
    CHECK(run_cache_room(2048 * M, 0.5 * G, 0.22 * G) == 0.9 * 0.5 * G - 0.22 * G, "0.5 GiB: lowered to %g MB",
          run_cache_room(2048 * M, 0.5 * G, 0.22 * G) / M);
    CHECK(run_cache_room(2048 * M, 0.5 * G, 0.5 * G) == 0, "a run past 90%%: no cache");
    CHECK(run_cache_room(2048 * M, 0, 100 * G) == 2048 * M && run_cache_room(2048 * M, -1, 100 * G) == 2048 * M,
          "memory unknown: kept");
    CHECK(run_cache_room(0, 0.5 * G, 0.22 * G) == 0, "no cache asked: none");
    double exact = 0.9 * 10 * G - 3 * G;
    CHECK(run_cache_room(exact, 10 * G, 3 * G) == exact, "a wish of the room exactly: kept");
}

int main(void) {
    test_cache_room();
    test_epoch_order();
    test_val_masks();
    test_config_out_of_memory();
    test_state_json();
    test_prune_snapshots();
    return check_done();
}
