// `vitmae info FILE|RUN [--json]`: what a checkpoint (or a run folder's latest) holds — its config,
// parameter counts (encoder / decoder), whether it has a decoder, its crc32 status and its train
// state. The file goes through every check `ckpt_load` makes, so a file info accepts is one the other
// commands load.
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/checkpoint.h"
#include "io/classifier_ckpt.h"
#include "io/files.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/runfolder.h"
#include "cmd/train_state.h"   // run_state_from_json: the checks of a resume
#include "core/json_depth.h"
#include "core/model.h"
#include "io/json.h"
#include "io/safetensors.h"

typedef struct { size_t encoder, decoder; } ParamCounts;

// 0, or -1 when out of memory (never counts of 0 printed as the file's).
static int count_params(const Checkpoint *ck, ParamCounts *out) {
    ParamCounts pc = {0, 0};
    int n = mae_param_table(&ck->cfg, NULL, 0);
    MaeTensor *tab = malloc((size_t)n * sizeof *tab);
    if (!tab) return -1;
    mae_param_table(&ck->cfg, tab, n);
    for (int i = 0; i < n; i++) {
        if (!tab[i].decoder) pc.encoder += tab[i].numel;
        else if (ck->has_decoder) pc.decoder += tab[i].numel;
    }
    free(tab);
    *out = pc;
    return 0;
}

// 1234567 -> "1,234,567"
static const char *grouped(size_t v, char *buf, size_t n) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%zu", v);
    size_t k = 0;
    for (int i = 0; i < len && k + 2 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0) buf[k++] = ',';
        buf[k++] = digits[i];
    }
    buf[k] = 0;
    return buf;
}

static void print_channels(const char *label, const float *v, int C) {
    printf("%s [", label);
    for (int i = 0; i < C; i++) printf("%s%g", i ? ", " : "", (double)v[i]);
    printf("]");
}

// A key of the train state as its value is written, JSON-escaped (a newline as \n, an escape as
// \u001b, what is not UTF-8 as U+FFFD), without the quotes. malloc'ed; NULL when out of memory.
static char *key_text(const char *key) {
    cJSON *k = cJSON_CreateString(key);
    char *q = k ? json_print_utf8(k, 0) : NULL;
    cJSON_Delete(k);
    size_t n = q ? strlen(q) : 0;
    if (n >= 2 && q[0] == '"' && q[n - 1] == '"') {
        memmove(q, q + 1, n - 2);
        q[n - 2] = 0;
    }
    return q;
}

// Why a resume refuses the file's train state, by the checks train --resume (an MAE checkpoint) or
// finetune --resume (a classifier's, stripped_ema: its run keeps ema.* the file has not) make of it,
// into why; NULL when they pass or there is no state object (a state that is no JSON, or none, is
// said as such). info said "can resume" of a state these refuse (a step past total_steps, a cadence of
// 0, an empty object). first: what the resume refuses before it reads the state (an MAE checkpoint
// without its decoder, cmd/train_state.c), or NULL.
static const char *state_refused(const char *state, int classifier, int stripped_ema, const char *first, char *why,
                                 size_t n) {
    cJSON *o = state ? cJSON_Parse(state) : NULL;
    int object = cJSON_IsObject(o);
    cJSON_Delete(o);
    if (!object) return NULL;
    if (first) {
        snprintf(why, n, "%s", first);
        return why;
    }
    RunState rs;
    // Its gradient groups too, as the resume checks them (a count that does not divide the batch)
    if (classifier ? finetune_state_check(state, why, n) : run_state_from_json(state, &rs, why, n)) return why;
    if (stripped_ema) {
        snprintf(why, n, "its run keeps the weights' moving average (model_ema), and the file holds none (ema.*)");
        return why;
    }
    return NULL;
}

// What train --resume refuses first in an MAE checkpoint (cmd/train_state.c, run_resume_load): a file
// without its decoder, said "can resume" (or "the weights load for every other use") here while the
// resume refused it as holding "no training state". NULL when it has its decoder.
static const char *mae_refused_first(const Checkpoint *ck) {
    return ck->has_decoder ? NULL : ck->has_moments ? RESUME_NO_DECODER : RESUME_NO_DECODER_MOMENTS;
}

// The train state as text: one line per key, the key and its value written as JSON writes them (an
// edited checkpoint can hold a key with a newline or an escape sequence). has_decoder: 0 for an MAE
// checkpoint without its decoder (refused then says why, the moments too where they are gone).
// 0, or -1 when out of memory: a line left out is an error, never a shorter state.
static int print_train_state(const char *state, int has_moments, int has_decoder, const char *refused) {
    if (!state) {
        printf("  train state  none (inference only; cannot resume)\n");
        return 0;
    }
    int oom;
    const char *end = NULL;
    cJSON *ts = json_parse_n(state, strlen(state) + 1, &end, &oom);
    int rc = 0;
    if (oom) {
        rc = -1;
    } else if (!ts && json_parse_too_deep(state, strlen(state) + 1, end)) {
        // Two thousand brackets as they are would show no fault: a resume refuses it so (cmd/runfolder.c).
        printf("  train state  " JSON_TOO_DEEP_FMT ": cannot resume\n", CJSON_NESTING_LIMIT);
    } else if (!cJSON_IsObject(ts)) {
        cli_out("  train state  %s", state);   // not JSON: as it is, its control characters written out
    } else {
        if (has_moments && refused) cli_out("  train state  (AdamW moments present; cannot resume: %s)", refused);
        else if (!has_decoder && refused) cli_out("  train state  (AdamW moments removed; cannot resume: %s)", refused);
        else printf("  train state  %s\n", has_moments ? "(AdamW moments present; can resume)"
                    : "(AdamW moments removed: cannot resume; the weights load for every other use)");
        // A fine-tuning run given --val holds nothing out of --data: its val_frac, recorded all the same
        // (the flag's default), is said unused, as finetune --resume says it (docs/interface.md, section 4).
        const cJSON *val = cJSON_GetObjectItemCaseSensitive(ts, "val");
        int val_folder = cJSON_IsString(val) && val->valuestring[0];
        for (cJSON *it = ts->child; it && rc == 0; it = it->next) {
            char *v = json_print_utf8(it, 0), *k = key_text(it->string);
            if (v && k) printf("    %-14s %s%s\n", k, v,   // whole: a long --data path is read in full
                               val_folder && !strcmp(it->string, "val_frac") ? " (unused: the run validates on its val folder)" : "");
            else rc = -1;
            free(v);
            free(k);
        }
    }
    cJSON_Delete(ts);
    return rc;
}

// The program that wrote the file (its "vitmae_version"), through cli_out: the file's text, its control
// characters written out. Files of vitmae before the version was recorded, and PyTorch's, have none.
static void print_written_by(const char *version) {
    if (version) cli_out("  written by   vitmae %s", version);
    else printf("  written by   unknown (no vitmae_version: an older vitmae, or another program)\n");
}

static void add_version(cJSON *o, const char *version) {
    cJSON_AddItemToObject(o, "vitmae_version", version ? cJSON_CreateString(version) : cJSON_CreateNull());
}

static int print_text(const char *path, const Checkpoint *ck, const char *crc, const char *version, ParamCounts pc) {
    const MaeConfig *c = &ck->cfg;
    char a[40], b[40], t[40];
    cli_out("%s", path);   // its control characters written out, as every name in a report
    printf("  encoder      dim %d, depth %d, heads %d, mlp ratio %d\n", c->embed_dim, c->depth, c->num_heads, c->mlp_ratio);
    printf("  decoder      dim %d, depth %d, heads %d%s\n", c->dec_embed_dim, c->dec_depth, c->dec_num_heads,
           ck->has_decoder ? "" : "  (not in this file: encoder-only: for attention, embed, probe, finetune --ckpt)");
    printf("  input        %dx%d, %d channel%s, patch %d (%d patch%s)\n", c->img_size, c->img_size, c->in_chans,
           c->in_chans == 1 ? "" : "s", c->patch_size, mae_num_patches(c), mae_num_patches(c) == 1 ? "" : "es");
    char ratio_s[32];
    config_float_text(c->mask_ratio, ratio_s, sizeof ratio_s);
    printf("  training     mask ratio %s, norm_pix_loss %s, pos_embed %s, layer_norm_eps %g\n", ratio_s,
           c->norm_pix_loss ? "true" : "false", c->pos_learned ? "learned" : "fixed", (double)c->ln_eps);
    printf("  pixels      ");
    print_channels(" mean", c->pixel_mean, c->in_chans);
    print_channels(" std", c->pixel_std, c->in_chans);
    printf("\n");
    printf("  params       %s (encoder %s, decoder %s)\n", grouped(pc.encoder + pc.decoder, t, sizeof t),
           grouped(pc.encoder, a, sizeof a), grouped(pc.decoder, b, sizeof b));
    printf("  has decoder  %s\n", ck->has_decoder ? "yes" : "no");
    if (crc) printf("  crc32        %s (verified)\n", crc);
    else printf("  crc32        absent (not verified)\n");
    print_written_by(version);
    char why[CLI_ERR_MAX];
    if (print_train_state(ck->train_state, ck->has_moments, ck->has_decoder,
                          state_refused(ck->train_state, 0, 0, mae_refused_first(ck), why, sizeof why)) == 0)
        return 0;
    cli_error(path, "out of memory");
    return 1;
}

// Adds "moments_removed", the text's "AdamW moments removed: cannot resume": true when the file has a
// train state but not its AdamW moments, false when it has both, null without a train state or with
// one that is not a JSON object (ts: the state as parsed), of which the text says nothing either.
static void add_moments(cJSON *o, const cJSON *ts, int has_moments, const char *refused) {
    cJSON_AddItemToObject(o, "moments_removed", cJSON_IsObject(ts) ? cJSON_CreateBool(!has_moments) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "resume_refused", refused ? cJSON_CreateString(refused) : cJSON_CreateNull());
}

// Adds "train_state" as the text shows it (print_train_state): the state as JSON, its text as a string
// when it is not JSON (an edit that left NaN), the text's line when it nests past the JSON reader's
// limit (its brackets as they are would show no fault), null when the file has none; then
// "moments_removed". One for both kinds of file: a classifier's state that was not JSON read null, as
// if it had none.
static void add_train_state(cJSON *o, const char *state, int has_moments, const char *refused) {
    const char *end = NULL;
    cJSON *ts = state ? cJSON_ParseWithLengthOpts(state, strlen(state) + 1, &end, 0) : NULL;
    if (state && !ts && json_parse_too_deep(state, strlen(state) + 1, end)) {
        char line[160];
        snprintf(line, sizeof line, JSON_TOO_DEEP_FMT ": cannot resume", CJSON_NESTING_LIMIT);
        ts = cJSON_CreateString(line);
    } else if (state && !ts) ts = cJSON_CreateString(state);
    cJSON_AddItemToObject(o, "train_state", ts ? ts : cJSON_CreateNull());
    add_moments(o, ts, has_moments, refused);   // ts still valid: o holds it
}

// What a fine-tuned classifier has not: its decoder and the pretraining loss's settings (the text
// leaves them out: "has decoder  no"; its file's config holds them from the pretraining checkpoint).
static const char *const NOT_IN_CLASSIFIER[] = {"decoder_embed_dim", "decoder_depth", "decoder_num_heads",
                                                "mask_ratio", "norm_pix_loss"};

// Adds "config": the normalised config (what the program will use), or null; a classifier's without
// the fields of NOT_IN_CLASSIFIER.
static void add_config(cJSON *o, const MaeConfig *c, int classifier) {
    char *cfg_json = mae_config_to_json(c);
    cJSON *cfg = cfg_json ? cJSON_Parse(cfg_json) : NULL;
    free(cfg_json);
    for (size_t i = 0; cfg && classifier && i < sizeof NOT_IN_CLASSIFIER / sizeof *NOT_IN_CLASSIFIER; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(cfg, NOT_IN_CLASSIFIER[i]);
    cJSON_AddItemToObject(o, "config", cfg ? cfg : cJSON_CreateNull());
}

// Prints o (indented) on stdout and frees it. Returns the exit status.
static int emit_json(const char *path, cJSON *o) {
    char *s = json_print_utf8(o, 1);
    cJSON_Delete(o);
    if (!s) { cli_error(path, "out of memory"); return 1; }
    printf("%s\n", s);
    free(s);
    return 0;
}

static int print_json(const char *path, const Checkpoint *ck, const char *crc, const char *version, ParamCounts pc) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", path);
    add_config(o, &ck->cfg, 0);
    cJSON_AddNumberToObject(o, "params", (double)(pc.encoder + pc.decoder));
    cJSON_AddNumberToObject(o, "encoder_params", (double)pc.encoder);
    cJSON_AddNumberToObject(o, "decoder_params", (double)pc.decoder);
    cJSON_AddBoolToObject(o, "has_decoder", ck->has_decoder);
    cJSON_AddStringToObject(o, "crc32", crc ? "ok" : "absent");
    add_version(o, version);
    char why[CLI_ERR_MAX];
    add_train_state(o, ck->train_state, ck->has_moments,
                    state_refused(ck->train_state, 0, 0, mae_refused_first(ck), why, sizeof why));
    return emit_json(path, o);
}

// A fine-tuned classifier (vitmae finetune): encoder shape, classes, parameter counts, train state.
static int print_classifier(const char *path, const ClfCheckpoint *cc, const char *crc, const char *version, int json) {
    const MaeConfig *c = &cc->cfg.enc;
    size_t total = clf_num_params(&cc->cfg), head = (size_t)(cc->cfg.num_classes + 2) * c->embed_dim + cc->cfg.num_classes;
    // A run of --model-ema whose file lost its ema.* tensors: said, as --ema's readers say it (io/checkpoint.h).
    int stripped = !cc->has_ema && ckpt_state_keeps_ema(cc->train_state);
    char why[CLI_ERR_MAX];
    const char *refused = state_refused(cc->train_state, 1, stripped, NULL, why, sizeof why);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "file", path);
        cJSON_AddStringToObject(o, "kind", "classifier");
        add_config(o, c, 1);
        cJSON_AddNumberToObject(o, "num_classes", cc->cfg.num_classes);
        cJSON *names = cJSON_AddArrayToObject(o, "classes");
        for (int i = 0; names && i < cc->cfg.num_classes; i++) cJSON_AddItemToArray(names, cJSON_CreateString(cc->classes[i]));
        cJSON_AddNumberToObject(o, "params", (double)total);
        cJSON_AddNumberToObject(o, "encoder_params", (double)(total - head));
        cJSON_AddNumberToObject(o, "decoder_params", 0);   // every field of docs/interface.md's list
        cJSON_AddNumberToObject(o, "head_params", (double)head);
        cJSON_AddBoolToObject(o, "has_decoder", 0);
        cJSON_AddBoolToObject(o, "has_ema", cc->has_ema);   // finetune --model-ema's ema.* (classify --ema)
        cJSON_AddStringToObject(o, "crc32", crc ? "ok" : "absent");
        add_version(o, version);
        add_train_state(o, cc->train_state, cc->has_moments, refused);
        return emit_json(path, o);
    }
    char a[40], b[40], t[40];
    cli_out("%s", path);   // its control characters written out, as every name in a report
    printf("  kind         classifier (vitmae finetune): global average pool, fc_norm, head\n");
    printf("  encoder      dim %d, depth %d, heads %d, mlp ratio %d, layer_norm_eps %g\n", c->embed_dim, c->depth,
           c->num_heads, c->mlp_ratio, (double)c->ln_eps);
    printf("  input        %dx%d, %d channel%s, patch %d (%d patch%s), pos_embed %s\n", c->img_size, c->img_size,
           c->in_chans, c->in_chans == 1 ? "" : "s", c->patch_size, mae_num_patches(c), mae_num_patches(c) == 1 ? "" : "es",
           c->pos_learned ? "learned" : "fixed");
    printf("  pixels      ");
    print_channels(" mean", c->pixel_mean, c->in_chans);
    print_channels(" std", c->pixel_std, c->in_chans);
    printf("\n");
    // The classes through cli_out: a class folder's newline or tab written out, not splitting the line.
    CliLine line;
    FILE *ls = cli_line_open(&line);
    if (ls) {
        fprintf(ls, "  classes      %d:", cc->cfg.num_classes);
        for (int i = 0; i < cc->cfg.num_classes && i < 50; i++) fprintf(ls, "%s %s", i ? "," : "", cc->classes[i]);
        fprintf(ls, "%s", cc->cfg.num_classes > 50 ? ", ..." : "");
    }
    if (cli_line_out(&line)) { cli_error(path, "out of memory"); return 1; }
    printf("  params       %s (encoder %s, fc_norm + head %s)\n", grouped(total, t, sizeof t),
           grouped(total - head, a, sizeof a), grouped(head, b, sizeof b));
    printf("  has decoder  no\n");
    printf("  EMA weights  %s\n", cc->has_ema ? "yes (ema.*: the weights' moving average, finetune --model-ema; the --ema of classify, embed, probe, attention)"
                                  : stripped ? "no (its run kept them, model_ema, and this file's ema.* tensors were stripped)" : "no");
    if (crc) printf("  crc32        %s (verified)\n", crc);
    else printf("  crc32        absent (not verified)\n");
    print_written_by(version);
    if (print_train_state(cc->train_state, cc->has_moments, 1, refused) == 0) return 0;
    cli_error(path, "out of memory");
    return 1;
}

// A step count of a train state for the warning below ("?" when absent).
static const char *state_step(const cJSON *state, const char *key, char *buf, size_t n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(state, key);
    if (cJSON_IsNumber(v)) snprintf(buf, n, "%.0f", v->valuedouble);
    else snprintf(buf, n, "?");
    return buf;
}

// 1 when two train states are at the same step of the same total (both numbers, equal).
static int same_step(const cJSON *a, const cJSON *b) {
    const char *keys[2] = {"step", "total_steps"};
    for (int k = 0; k < 2; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, keys[k]), *y = cJSON_GetObjectItemCaseSensitive(b, keys[k]);
        if (!cJSON_IsNumber(x) || !cJSON_IsNumber(y) || !cJSON_Compare(x, y, 1)) return 0;
    }
    return 1;
}

// The first key (the checkpoint's order, then keys only config.json has) whose value differs
// between the two objects; NULL when none does.
static const char *first_difference(const cJSON *cfg, const cJSON *ck) {
    for (const cJSON *v = ck->child; v; v = v->next)
        if (!cJSON_Compare(v, cJSON_GetObjectItemCaseSensitive(cfg, v->string), 1)) return v->string;
    for (const cJSON *v = cfg->child; v; v = v->next)
        if (!cJSON_GetObjectItemCaseSensitive(ck, v->string)) return v->string;
    return NULL;
}

// When path is a run folder's latest checkpoint (RUN/checkpoint.safetensors: a snapshot is an earlier
// state by design), 1 with RUN in dir ("." or "/" for a bare name or one at the root); else 0.
static int latest_of_run(const char *path, char *dir, size_t n) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t dirlen = (size_t)(base - path);
    if (strcmp(base, "checkpoint.safetensors") || dirlen + 1 >= n) return 0;
    snprintf(dir, n, "%.*s", dirlen > 1 ? (int)dirlen - 1 : 1, dirlen ? path : ".");
    return 1;
}

// Rows a resume from an earlier snapshot dropped and, stopped before it got back, never wrote again
// (cmd/runfolder.h, run_metrics_gap_of): when path is a run folder's latest checkpoint, one warning
// names the snapshot that writes them (train's and finetune's; `cmd` resumes it), with the --steps its
// resume takes where the run was extended since (run_snapshot_steps). 1 when it warned, with that
// resume ("train --resume RUN/checkpoint-N.safetensors ...") in resume for warn_stale_config's advice.
static int warn_metrics_gap(const char *path, const char *train_state, const char *cmd, int live, char *resume,
                            size_t n) {
    char dir[4400];
    resume[0] = 0;
    // A run training in the folder (live) writes its files one after another: a look between two writes is
    // no gap (its resume from a snapshot writes the rows again as it goes).
    if (!train_state || !latest_of_run(path, dir, sizeof dir) || live) return 0;
    char steps[40];
    long step, last, snap = run_metrics_gap_of(dir, train_state, &step, &last);
    if (snap >= 0) {
        char snapshot[4440], word[FILE_SHELL_WORD_MAX];
        snprintf(snapshot, sizeof snapshot, "%s/checkpoint-%ld.safetensors", dir, snap);
        snprintf(resume, n, "%s --resume %s%s", cmd, file_shell_word(snapshot, word, sizeof word),
                 run_snapshot_steps(cmd, dir, snap, train_state, steps, sizeof steps));
        cli_message("warning: %s/metrics.csv ends at step %ld, before this checkpoint's step %ld (a resume from an "
                    "earlier snapshot stopped before it got back here); %s writes the rows between again", dir, last,
                    step, resume);
    } else if (snap == -2)
        cli_message("warning: %s/metrics.csv ends at step %ld, before this checkpoint's step %ld, and no snapshot of "
                    "the run at or before step %ld is left to write the rows between again", dir, last, step, last);
    return snap >= 0;
}

// A run folder's config.json follows its checkpoint.safetensors, written just after it
// (docs/interface.md, section 5): a run killed between the two writes leaves config.json one
// checkpoint behind. When path is a run's latest checkpoint and its folder's config.json, of the same
// run, holds another train state, one warning says so and what to trust. info only reads: a run
// resumed with train --resume rewrites config.json from the checkpoint as it starts (a finished run's
// only when extended: its plain resume writes nothing). Said beside warn_metrics_gap's warning too (a
// resume from an earlier snapshot stopped before its first checkpoint leaves both, docs/interface.md,
// section 5, "Resumable"): the user learns of each at once, not of one after fixing the other. The way
// on is then that warning's snapshot (gap_resume), not "train --resume RUN goes on from it", refused then.
static void warn_stale_config(const char *path, const char *train_state, int live, const char *gap_resume) {
    char dir[4400], cfg_path[4420];
    // A run training in it (live) writes config.json just after each checkpoint: read between the two,
    // they differ by a checkpoint's steps with nothing wrong (cmd/runfolder.h, run_folder_busy).
    if (!train_state || !latest_of_run(path, dir, sizeof dir) || live) return;
    snprintf(cfg_path, sizeof cfg_path, "%.*sconfig.json", (int)(strlen(path) - strlen("checkpoint.safetensors")), path);
    char *text = file_read_small(cfg_path);
    cJSON *cfg = text ? cJSON_Parse(text) : NULL, *ck = cJSON_Parse(train_state);
    // The way on: a finished run's plain --resume has nothing to train and writes nothing (it said "goes
    // on from it and rewrites config.json", which a finished run's resume does not); extended, it does.
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(ck, "step"), *kt = cJSON_GetObjectItemCaseSensitive(ck, "total_steps");
    int finished = cJSON_IsNumber(ks) && cJSON_IsNumber(kt) && ks->valuedouble >= kt->valuedouble;
    char way[FILE_SHELL_WORD_MAX + 200], word[FILE_SHELL_WORD_MAX];
    file_shell_word(dir, word, sizeof word);   // dir in the command the way on says to type
    if (gap_resume[0])
        snprintf(way, sizeof way, "the checkpoint is the run's state; %s, the resume that writes metrics.csv's rows "
                 "between again, rewrites config.json", gap_resume);
    else if (finished)
        snprintf(way, sizeof way, "the checkpoint is the run's state; the run has reached its last step, so config.json "
                 "stays as it is until train --resume %s --steps N extends it", word);
    else snprintf(way, sizeof way, "the checkpoint is the run's state; train --resume %s goes on from it and rewrites "
                  "config.json", word);
    // A config.json that is no JSON object (cut by a full disk, an editor) was passed over in silence.
    if (text && !cJSON_IsObject(cfg)) cli_message("warning: %s is damaged (not a JSON object): %s", cfg_path, way);
    free(text);
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(cfg, "train");
    const cJSON *id_cfg = cJSON_GetObjectItemCaseSensitive(tr, "run_id"), *id_ck = cJSON_GetObjectItemCaseSensitive(ck, "run_id");
    int same_run = cJSON_IsString(id_cfg) && cJSON_IsString(id_ck) ? !strcmp(id_cfg->valuestring, id_ck->valuestring)
                                                                    : !id_cfg && !id_ck;
    if (cJSON_IsObject(tr) && cJSON_IsObject(ck) && same_run && !cJSON_Compare(tr, ck, 1)) {
        char a[32], b[32], c[32], d[32], what[512];
        const char *key = same_step(tr, ck) ? first_difference(tr, ck) : NULL;
        if (key) {
            // At the same step the writes did not part: the file was changed afterwards (an edit), and
            // "the run stopped between the writes" would name step 3 of 10 against step 3 of 10.
            char q[UTF8_CLIP_SIZE];
            snprintf(what, sizeof what, "differs from this checkpoint's train state at the same step %s of %s ('%s' is "
                     "not the checkpoint's: the file was changed after it was written)",
                     state_step(ck, "step", c, sizeof c), state_step(ck, "total_steps", d, sizeof d), utf8_clip(q, key));
        } else {
            // config.json behind the checkpoint has a second cause: a resume from an earlier snapshot
            // writes it at its start, and one that failed before its own first checkpoint (a full disk)
            // left it at the snapshot's step beside the run's latest checkpoint.
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(tr, "step"), *sk = cJSON_GetObjectItemCaseSensitive(ck, "step");
            int behind = cJSON_IsNumber(st) && cJSON_IsNumber(sk) && st->valuedouble < sk->valuedouble;
            // Ahead of it, no stop between the writes explains it (config.json follows the checkpoint):
            // the checkpoint was put back to an earlier one since (a roll back by hand).
            int ahead = cJSON_IsNumber(st) && cJSON_IsNumber(sk) && st->valuedouble > sk->valuedouble;
            snprintf(what, sizeof what, "describes step %s of %s, not this checkpoint's step %s of %s (%s%s)",
                     state_step(tr, "step", a, sizeof a), state_step(tr, "total_steps", b, sizeof b),
                     state_step(ck, "step", c, sizeof c), state_step(ck, "total_steps", d, sizeof d),
                     ahead ? "checkpoint.safetensors was put back to an earlier state after config.json was written"
                           : "the run stopped between writing the checkpoint and config.json",
                     behind ? ", or a resume from an earlier snapshot stopped before its first checkpoint" : "");
        }
        cli_message("warning: %s %s: %s", cfg_path, what, way);
    }
    cJSON_Delete(cfg);
    cJSON_Delete(ck);
}

int cmd_info(int argc, char **argv) {
    int json = 0;
    Flag flags[] = {
        {"--json", FLAG_BOOL, &json, 0, 0, NULL, "print one JSON object", NULL, 0},
    };
    char *pos[1];
    int npos = 0;
    int r = cli_parse("info", "FILE|RUN [--json]",
                      flags, 1, argc, argv, pos, 1, &npos);
    if (r == CLI_HELP) return 0;
    if (r != CLI_OK) return 2;
    if (npos != 1) { cli_error("info", "expected one checkpoint FILE or RUN folder (see vitmae info --help)"); return 2; }
    if (cli_one_process_refused("info")) return 2;
    const char *path = pos[0];
    // A run folder stands for its latest checkpoint, RUN/checkpoint.safetensors, named on the report's
    // first line (docs/interface.md, "vitmae info"), by the rule of every --ckpt; a folder without one
    // is refused by st_open_header.
    char latest[ST_RUN_LATEST_MAX];
    path = st_checkpoint_arg(path, latest, sizeof latest);
    char err[CLI_ERR_MAX], dir[4400];
    // A run in the folder as the checkpoint is read or as the folder is compared with it (one ended or
    // begun between the two leaves them apart by a checkpoint): looked at both times (cmd/runfolder.h,
    // run_folder_busy), the warnings said only when neither found one.
    int ours = latest_of_run(path, dir, sizeof dir), live = ours && run_folder_busy(dir);
    StFile *f = st_open_header(path, err, sizeof err);
    if (!f) { cli_error(NULL, "%s", err); return 1; }
    if (clf_ckpt_is_classifier(f)) {
        ClfCheckpoint cc;
        int rc = clf_ckpt_from_st(f, 0, &cc, err, sizeof err);
        if (rc) cli_error(NULL, "%s", err);
        else rc = print_classifier(path, &cc, st_meta(f, "crc32"), st_meta(f, "vitmae_version"), json);
        char resume[4600];
        if (!rc) warn_metrics_gap(path, st_meta(f, "train_state"), "finetune", live || (ours && run_folder_busy(dir)),
                                  resume, sizeof resume);
        clf_ckpt_free(&cc);
        st_close(f);
        return rc ? 1 : 0;
    }
    Checkpoint ck;
    if (ckpt_from_st(f, 0, &ck, err, sizeof err)) {
        cli_error(NULL, "%s", err);
        st_close(f);
        return 1;
    }
    ParamCounts pc;
    if (count_params(&ck, &pc)) {
        cli_error(path, "out of memory");
        ckpt_free(&ck);
        st_close(f);
        return 1;
    }
    const char *crc = st_meta(f, "crc32"), *version = st_meta(f, "vitmae_version");
    int rc;
    if (json) rc = print_json(path, &ck, crc, version, pc);
    else rc = print_text(path, &ck, crc, version, pc);
    file_test_gate("VITMAE_FAULT_HOLD_INFO_COMPARE");   // tests: a run ends or begins between the read and the compare
    live = live || (ours && run_folder_busy(dir));
    char resume[FILE_SHELL_WORD_MAX + 100];
    warn_metrics_gap(path, ck.train_state, "train", live, resume, sizeof resume);
    warn_stale_config(path, ck.train_state, live, resume);
    ckpt_free(&ck);
    st_close(f);
    return rc;
}
