// `vitmae eval --ckpt FILE|RUN --data DIR [flags]`: the masked loss and PSNR of a checkpoint over every
// image of a folder (evaluation view), with the fixed per-image masks `reconstruct` uses for the same
// seed and mask ratio (infer.h), so the two commands report the same numbers.
//   loss       model units, as mae_forward computes it, averaged over images
//   masked_mse pixel units, clipped reconstruction, mean over removed patches, averaged over images
//   psnr       10 log10(1 / masked_mse)  (the PSNR of the mean MSE, not the mean of PSNRs)
#include <cJSON.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/checkpoint.h"
#include "io/classifier_ckpt.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/runfolder.h"
#include "data/dataset.h"
#include "infer/infer.h"
#include "infer/recon.h"
#include "core/masking.h"
#include "core/rng.h"
#include "io/files.h"
#include "io/json.h"
#include "kernels/cpu.h"

static void print_json(int n, double loss, double mse, double psnr, double ratio, long seed) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "images", n);
    cJSON_AddNumberToObject(root, "loss", loss);
    cJSON_AddNumberToObject(root, "masked_mse", mse);
    cJSON_AddNumberToObject(root, "psnr", psnr);   // cJSON writes +inf (mse 0) as null
    // The float flag as the user wrote it (0.6, not 0.60000002384; 0.1234567, not "%g"'s 0.123457),
    // the decimal that masking reads it as (core/masking.c).
    cJSON_AddItemToObject(root, "mask_ratio", config_float_json((float)ratio));
    cJSON_AddNumberToObject(root, "seed", (double)seed);
    char *text = json_print_utf8(root, 1);
    cJSON_Delete(root);
    if (text) puts(text);
    cJSON_free(text);
}

int cmd_eval(int argc, char **argv) {
    const char *ckpt_path = NULL, *data_dir = NULL;
    float mask_ratio = 0.75f;
    long seed = 0, max_pixels = VITMAE_DEFAULT_MAX_PIXELS;
    int batch = 32, threads = 0, json = 0;
    Flag flags[] = {
        {"--ckpt", FLAG_PATH, &ckpt_path, 0, 0, NULL, "checkpoint (.safetensors, or a run folder: its checkpoint.safetensors) with a decoder (required)", "FILE|RUN", 0},
        {"--data", FLAG_PATH, &data_dir, 0, 0, NULL, "folder of images, scanned recursively (required)", "DIR", 0},
        {"--mask-ratio", FLAG_FLOAT, &mask_ratio, 0, MASK_RATIO_FLAG_MAX, NULL,
         "fraction of patches removed, leaving at least one visible (default: the checkpoint's mask_ratio; 0 = none)", "R", 0},
        {"--seed", FLAG_LONG, &seed, 0, RNG_SEED_MAX, NULL,
         "masks from this seed and each image's stem, as reconstruct (default 0)", "S", 0},
        {"--batch", FLAG_INT, &batch, 1, 4096, NULL, "images per forward pass (default 32)", "B", 0},
        {"--threads", FLAG_INT, &threads, 1, CLI_THREADS_MAX, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--json", FLAG_BOOL, &json, 0, 0, NULL,
         "print JSON: images, loss, masked_mse, psnr, mask_ratio, seed", NULL, 0},
        {"--max-pixels", FLAG_LONG, &max_pixels, 1, CLI_MAX_PIXELS_MAX, NULL,
         "skip images with more pixels than N (default 67108864 = 2^26)", "N", 0},
    };
    const int nflags = (int)(sizeof flags / sizeof flags[0]);
    const char *synopsis = "--ckpt FILE|RUN --data DIR [--mask-ratio R] [--seed S] [--batch B] [--threads T] [--max-pixels N] [--json]";
    int npos = 0;
    int rc = cli_parse("eval", synopsis, flags, nflags, argc, argv, NULL, 0, &npos);
    if (rc != CLI_OK) return rc == CLI_HELP ? 0 : 2;
    if (!ckpt_path) { cli_error("eval", "--ckpt FILE|RUN is required (see vitmae eval --help)"); return 2; }
    // A run folder stands for its checkpoint.safetensors (docs/interface.md, section 9).
    char ckpt_file[ST_RUN_LATEST_MAX];
    ckpt_path = st_checkpoint_arg(ckpt_path, ckpt_file, sizeof ckpt_file);
    if (!data_dir) { cli_error("eval", "--data DIR is required (see vitmae eval --help)"); return 2; }
    int ratio_seen = cli_flag(flags, nflags, "--mask-ratio")->seen;
    char err[CLI_ERR_MAX];
    if (mask_ratio_check(mask_ratio, 0, err, sizeof err)) { cli_error("eval --mask-ratio", "%s", err); return 2; }
    if (cli_one_process_refused("eval")) return 2;
    if (cli_start_threads("eval", threads)) return 1;

    // The kind (a classifier, an encoder-only file) is refused from the header, before the tensors are
    // read: damage is said before it, a NaN in them after (docs/interface.md, "Exit status").
    int kind = ckpt_peek_kind(ckpt_path, CKPT_FULL, err, sizeof err);
    Checkpoint ck = {0};
    if (kind == CKPT_FULL && ckpt_load_weights(ckpt_path, &ck, err, sizeof err)) kind = -1;
    if (kind < 0) { cli_error(NULL, "%s", err); return 1; }   // err names the file
    if (kind != CKPT_FULL || !ck.has_decoder) {   // (has_decoder 0 too: the file changed since the header was read)
        cli_error(ckpt_path, "%s (no decoder tensors): eval needs the decoder", kind == CKPT_CLASSIFIER || ck.classifier
                  ? "a fine-tuned classifier's checkpoint" : "encoder-only checkpoint");
        ckpt_free(&ck); return 1;
    }
    const MaeConfig *cfg = &ck.cfg;
    int S = cfg->img_size, C = cfg->in_chans, L = mae_num_patches(cfg);
    if (!ratio_seen) mask_ratio = cfg->mask_ratio;
    if (mask_ratio == 0 && cli_flag(flags, nflags, "--seed")->seen) {   // it would be ignored, as in attention
        cli_error("eval --seed", "draws the masks of --mask-ratio R; without a ratio above 0 nothing is masked%s",
                  ratio_seen ? "" : " (the checkpoint's mask_ratio is 0)");
        ckpt_free(&ck); return 2;
    }
    int K = mae_len_keep(cfg, mask_ratio);
    if (mask_ratio_check(mask_ratio, L, err, sizeof err)) {   // without the flag, an edited config's (cmd/cli.h)
        int code = cli_mask_ratio_refused("eval", ratio_seen, ckpt_path, err);
        ckpt_free(&ck); return code;
    }

    Dataset ds;
    DatasetOptions opt = {.max_pixels = max_pixels};
    int src = dataset_scan(data_dir, &opt, &ds, err, sizeof err);
    if (src) {
        cli_error(dataset_err_what(src, data_dir), "%s", err); ckpt_free(&ck); return 1;
    }
    file_test_gate("VITMAE_FAULT_HOLD_AFTER_SCAN");   // tests: a file changed between the scan and its batch
    // The files the scan skipped, as train says them: before the failure they explain, else once the
    // memory check has passed (a refused run prints its one line only).
    CliHeld held = {0};
    cli_hold_skipped(&held, &ds);
    run_data_hold_run_folder(&held, "eval --data", &ds);   // --data RUN where --ckpt RUN was meant (docs/data.md, "Files")
    if (ds.n == 0) {
        cli_held_say(&held);
        cli_held_free(&held);
        cli_error(data_dir, "no usable image (%d skipped, %d ignored)", ds.nskipped, ds.nignored);
        dataset_free(&ds); ckpt_free(&ck); return 1;
    }

    int B = batch < ds.n ? batch : ds.n;
    size_t per = (size_t)S * S * C;
    // Memory: refuse before allocating what cannot fit (exit 2 when a smaller --batch would).
    char mem_err[256];
    int mem = infer_memory_check(cfg, B, per, 0, 0, mem_err, sizeof mem_err);
    if (mem) cli_error("eval", "%s", mem_err);
    if (mem) {
        cli_held_free(&held); dataset_free(&ds); ckpt_free(&ck);
        return mem;
    }
    cli_held_say(&held);
    cli_held_free(&held);
    Mae *m = mae_create_forward_with(cfg, B, ck.params, err, sizeof err);   // the weights without a copy
    if (m) ck.params = NULL;
    float *images = malloc(sizeof(float) * per * B), *norm = malloc(sizeof(float) * per * B);
    float *recon = malloc(sizeof(float) * per * B), *patch_err = malloc(sizeof(float) * (size_t)L * B);
    int *ids_keep = malloc(sizeof(int) * (size_t)K * B), *items = malloc(sizeof(int) * B);
    uint8_t *removed = malloc((size_t)L * B);
    double *mse = malloc(sizeof(double) * B), *loss = malloc(sizeof(double) * B);
    int status = 0;
    if (!m || !images || !norm || !recon || !patch_err || !ids_keep || !items || !removed || !mse || !loss) {
        cli_error("eval", "%s", m ? "out of memory" : err);
        status = 1;
        goto done;
    }

    double loss_sum = 0, mse_sum = 0;
    for (int i0 = 0; i0 < ds.n; i0 += B) {
        int n = ds.n - i0 < B ? ds.n - i0 : B;
        for (int k = 0; k < n; k++) items[k] = i0 + k;
        int lrc = dataset_load_batch(&ds, items, n, S, C, AUGMENT_NONE, 0, 0, images, err, sizeof err);
        if (lrc) {
            cli_error(dataset_err_what(lrc, "eval"), "%s", err);   // "vitmae: PATH: why", as other commands say a file's failure
            status = 1;
            goto done;
        }
        for (int k = 0; k < n; k++) {
            char *stem = infer_stem(ds.items[i0 + k].path);
            int bad = !stem || infer_random_mask((uint64_t)seed, stem, L, K, ids_keep + (size_t)K * k,
                                                 removed + (size_t)L * k);
            free(stem);
            if (bad) { cli_error("eval", "out of memory"); status = 1; goto done; }
        }
        infer_batch(m, images, norm, ids_keep, removed, n, K, recon, patch_err, mse, loss);
        for (int k = 0; k < n; k++) {
            if (!isfinite(loss[k]) || !isfinite(mse[k])) {
                cli_error(ds.items[i0 + k].path, "%s", INFER_NONFINITE_WHY);   // an image's failure, as reconstruct says it
                status = 1;
                goto done;
            }
            loss_sum += loss[k];
            mse_sum += mse[k];
        }
    }
    double mean_loss = loss_sum / ds.n, mean_mse = mse_sum / ds.n, psnr = psnr_from_mse(mean_mse);
    if (json) {
        print_json(ds.n, mean_loss, mean_mse, psnr, mask_ratio, seed);
    } else {
        char ratio_s[32];
        config_float_text(mask_ratio, ratio_s, sizeof ratio_s);
        printf("%d image%s, mask_ratio %s (%d of %d patches removed), seed %ld%s\n", ds.n, ds.n == 1 ? "" : "s",
               ratio_s, L - K, L, seed, K == L ? ": no patch removed, scores are over all patches" : "");
        printf("loss=%.6e masked_mse=%.6e psnr=%.2fdB\n", mean_loss, mean_mse, psnr);
        // A removed patch's own statistics are unknown at inference: say whose stand in (docs/interface.md,
        // section 5, "vitmae eval"), as reconstruct does.
        if (cfg->norm_pix_loss && K < L)
            printf("note: norm-pix checkpoint: masked_mse and psnr de-normalise each removed patch with the mean "
                   "and variance of the visible patches (its own are unknown)\n");
    }

done:
    mae_free(m);
    free(images); free(norm); free(recon); free(patch_err); free(ids_keep); free(items); free(removed);
    free(mse); free(loss);
    dataset_free(&ds);
    ckpt_free(&ck);
    return status;
}
