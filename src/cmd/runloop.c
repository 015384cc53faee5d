// The loop of steps train and finetune share (see runloop.h).
#include "cmd/runloop.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "cmd/cli.h"
#include "core/optim.h"
#include "io/files.h"

// The time of this session's steps, brought into the run's count before a save, with the losses not in
// a metrics row yet.
typedef struct {
    double session_start;
    double interval_loss;    // the losses since the last metrics row, carried through a checkpoint
    long interval_n;         // and how many (up to --log-every, 10^12: past an int)
} Carried;

static void carry(const RunLoop *L, Carried *c, int restart) {
    *L->elapsed_s += now_seconds() - c->session_start;
    if (restart) c->session_start = now_seconds();
    *L->log_loss_sum = c->interval_loss;
    *L->log_steps = c->interval_n;
}

// The checkpoint, then what follows it (train's config.json): 0, -1 with err where the checkpoint
// failed, or SAVED_THEN_FAILED with err where it was saved and what follows failed: the run can go on
// from it, and the failure's line is followed by the line that says so (run_saved_after_failure; the
// run said only config.json's failure, and a user took the run for lost).
enum { SAVED_THEN_FAILED = -2 };
static int save_all(const RunLoop *L, char *err, size_t errlen) {
    if (L->save_checkpoint(L->ctx, err, errlen)) return -1;
    return L->save_after && L->save_after(L->ctx, err, errlen) ? SAVED_THEN_FAILED : 0;
}

// A checkpoint that failed to save (the disk full, a file-size limit) leaves the run folder's latest as
// it was: the failure's line says which step it keeps, where this session saved one (saved_at >= 0),
// so that one line says both what failed and what is left ("RUN/checkpoint-30.safetensors: write
// failed: No space left on device; RUN/checkpoint.safetensors keeps step 20 (continue with --resume
// RUN)"); the user otherwise had to find out with vitmae info.
// A line that names the last good checkpoint already (a diverged model's: RUN_LAST_GOOD) says it so.
static void kept_note(const RunLoop *L, long saved_at, char *err, size_t errlen) {
    size_t l = strlen(err);
    char word[FILE_SHELL_WORD_MAX];
    if (saved_at >= 0 && l < errlen && !strstr(err, RUN_LAST_GOOD))
        snprintf(err + l, errlen - l, "; %s keeps step %ld (continue with --resume %s)", L->ckpt_path, saved_at,
                 file_shell_word(L->run_dir, word, sizeof word));
}

// The line after a failure whose step's checkpoint was saved all the same (cmd/runfolder.h).
static void say_saved(const RunLoop *L) {
    run_saved_after_failure(L->ckpt_path, L->run_dir, *L->step, L->total_steps, L->data_dir, L->val_dir);
}

// The stop of a step none of whose batch's images decode, on any rank (cmd/runloop.h's inputs): the
// data's, and the step changed nothing, so the weights are those of the steps done. Where a step ran
// since the run's last checkpoint (this session's, or the one it resumed from), rank 0 saves them, as a
// failed output's step is saved; then the failure's line says where the run is kept and how it goes on
// once the file is removed (dataset_broken_stop_kept). At --batch 1 "remove the file" lost every step
// since the last checkpoint, and a new run's command, run again, was refused (docs/data.md, "Training
// reads lazily"). Collective; returns 1.
static int data_stop(const RunLoop *L, Carried *c, const struct stat *home, long saved_at, long first_step,
                     int failed_here, char *err, size_t errlen) {
    char serr[CLI_ERR_MAX];
    int kept = 0, saved = 0;
    if (dist_rank() == 0) {
        long since = saved_at >= 0 ? saved_at : first_step;
        kept = since > 0 && *L->step == since;   // the run's checkpoint holds the steps done already
        if (*L->step > since) {
            int resumable = saved_at >= 0 || first_step > 0;
            int gone = run_folder_gone(L->run_dir, home, resumable, serr, sizeof serr);
            carry(L, c, 0);
            saved = gone ? -1 : save_all(L, serr, sizeof serr);
            if (saved == -1 && !gone && !run_folder_gone(L->run_dir, home, resumable || run_published, serr, sizeof serr))
                kept_note(L, saved_at, serr, sizeof serr);
            kept = saved != -1;
            if (kept) run_checkpointed = 1;
        }
    }
    // Every failed rank's batch is its own share, so their lines name different files and the exchange's
    // match of reasons (said_by_lower_rank) kept them all: one line per rank. The lowest failed rank
    // alone says it, as one process does (docs/distributed.md, "Semantics"); each file was said already.
    int size = dist_size(), lowest = size - dist_max_int(failed_here ? size - dist_rank() : 0);
    int says = failed_here && dist_rank() == lowest;
    if (dist_max_int(kept) && says) {
        char word[FILE_SHELL_WORD_MAX];
        dataset_broken_stop_kept(L->ds, L->keeps_classes, L->ckpt_path, file_shell_word(L->run_dir, word, sizeof word),
                                 *L->step, err, errlen);
    }
    if (says) cli_report(NULL, err, 1);
    if (saved) cli_report(L->cmd, serr, 1);   // the checkpoint's failure, or config.json's after it
    if (saved == SAVED_THEN_FAILED) say_saved(L);
    return 1;
}

// The save of a stop or of the run's last step (rank 0's; the other ranks pass): the checkpoint, then
// what follows it, the stop's mark between them: a second Ctrl-C while train's config.json is written
// says that the checkpoint is saved. 0, or 1 after the line that says what failed and what is left.
static int save_at_end(const RunLoop *L, const struct stat *home, long saved_at, int resumable, char *err,
                       size_t errlen) {
    if (dist_rank() != 0) { run_saved = 1; return 0; }
    int gone = run_folder_gone(L->run_dir, home, resumable, err, errlen);
    if (gone || L->save_checkpoint(L->ctx, err, errlen)) {
        // The checkpoint published before what failed (the folder moved while the save went on): it resumes
        // where the folder went (run_published).
        if (!gone && !run_folder_gone(L->run_dir, home, resumable || run_published, err, errlen))
            kept_note(L, saved_at, err, errlen);
        return cli_report(L->cmd, err, 1);
    }
    run_saved = 1;   // a second Ctrl-C from here loses nothing (cmd/runfolder.h)
    if (L->save_after && L->save_after(L->ctx, err, errlen)) {
        gone = run_folder_gone(L->run_dir, home, 1, err, errlen);   // the checkpoint went with the folder
        int rc = cli_report(L->cmd, err, 1);
        if (!gone) say_saved(L);
        return rc;
    }
    return 0;
}

// A resumed run's outputs of the step its checkpoint holds, as a run never stopped made them
// (docs/data.md, "Run folders"): a step whose metrics row or sample sheet failed saves its checkpoint
// without them, and so does a stop at a step that validates (a kill during its outputs). Following the
// failure's advice, --resume then never wrote that row, and the next row's loss was the mean over two
// intervals (the checkpoint carries the row's losses); the sheet was never drawn. Where the step is one
// with outputs due on the run's cadences and metrics.csv (its rows past the step dropped as the resume
// opened it) ends before it, the row is written with the carried losses, validated where due (the same
// weights and masks: the same numbers), and the sheet drawn where due and missing; where the row is
// there, the losses carried are its own and go with it, and a sheet missing is drawn alone. A row
// missing with no losses carried (metrics.csv edited, an older checkpoint) is left missing: its loss is
// not known. Rank 0's, collective in the end; 0, or 1 after the line that says what failed.
static int resumed_outputs(const RunLoop *L, Carried *c, Progress *prog, const struct stat *home, char *err,
                           size_t errlen) {
    long at = *L->step;
    int rc = 0, restart = 0;
    int do_log = at % L->log_every == 0, do_eval = at % L->eval_every == 0;
    int do_samples = L->sample_every > 0 && L->sheet && at % L->sample_every == 0;
    if (dist_rank() == 0) {
        char metrics[4400];
        snprintf(metrics, sizeof metrics, "%s/metrics.csv", L->run_dir);
        long last = metrics_last_step(metrics);
        int sheet = do_samples && run_sheet_missing(L->run_dir, at);
        restart = last == at;   // the row holds the losses carried (a stop's save before its outputs)
        if (last < at && c->interval_n > 0 && (do_log || do_eval || do_samples)) {
            MetricsRow row = {.step = at, .epoch = run_epoch_at(L->epochs, at, L->batch),
                              .lr = lr_at(at - 1, L->total_steps, L->warmup, L->lr, L->min_lr),
                              .loss = c->interval_loss / c->interval_n, .val_loss = NAN, .val_psnr = NAN,
                              .img_per_s = NAN, .elapsed_s = *L->elapsed_s};
            int logged = 0;
            rc = L->outputs(L->ctx, &row, do_eval, sheet, NULL, &logged, err, errlen);
            if (do_eval && isfinite(row.val_loss) && (!rc || logged)) L->say_validation(L->ctx, prog, &row);
            restart = logged;
        } else if (sheet)
            rc = L->sheet(L->ctx, at, err, errlen);
        if (rc) {   // nothing trained since the checkpoint: it stays as it was, and a resume tries again
            if (!run_folder_gone(L->run_dir, home, 1, err, errlen)) kept_note(L, at, err, errlen);
            rc = cli_report(L->cmd, err, 1);
        }
    }
    // The interval restarts on every rank alike (the next row averages the steps after this one).
    if (dist_max_int(restart)) { c->interval_loss = 0; c->interval_n = 0; }
    return dist_max_int(rc);
}

int run_loop(const RunLoop *L) {
    int rank0 = dist_rank() == 0, stop = 0, stop_saved = 0, rc = 0;
    char err[CLI_ERR_MAX];
    long first_step = *L->step, queued = *L->step;
    int B = L->batch;
    Progress prog;
    progress_init(&prog, stdout, *L->step, L->total_steps, L->log_every);
    prog.elapsed_before = *L->elapsed_s;   // a resumed run's log counts its earlier sessions too
    // The bottleneck note's evidence: the steps after a session's first (docs/data.md, "Cache, store and
    // prefetch").
    RunWaitNote note;
    run_wait_note_init(&note);
    Carried c = {now_seconds(), *L->log_loss_sum, *L->log_steps};
    double interval_busy = 0, total_wait = 0;
    long interval_timed = 0;   // the steps timed in this session since the last row
    int out_failed = 0;        // a step's outputs failed (rank 0): the step itself stands, and is saved below
    long saved_at = -1;        // the step of this session's last checkpoint (rank 0), -1 before one
    // The run folder as the run found it (rank 0): one moved or deleted meanwhile, or another file or
    // folder put in its place, is gone (run_folder_gone), looked at before each output and save and
    // after each failure. A folder moved and a new one made at its name took the run's later files
    // while its metrics.csv went on in the moved one: the run split in two, exit 0.
    struct stat home_st;
    const struct stat *home = rank0 && L->run_dir && stat(L->run_dir, &home_st) == 0 ? &home_st : NULL;
    // The looks leave a moment before each save: a folder put at the name then would have taken the
    // checkpoint. None is made there (io/files.h): the save fails, and the look after it says why.
    if (home) file_guard_folder(L->run_dir, home);
    run_checkpointed = first_step > 0;   // a resumed run's checkpoint is there
    if (*L->step == 0) {   // the model before any step (finetune's: a new head): where the curves start
        MetricsRow row = {.step = 0, .epoch = 0.0, .lr = lr_at(0, L->total_steps, L->warmup, L->lr, L->min_lr),
                          .loss = NAN, .val_loss = NAN, .val_psnr = NAN, .img_per_s = NAN, .elapsed_s = 0.0};
        int logged = 0;
        if (rank0 && L->outputs(L->ctx, &row, 1, 0, NULL, &logged, err, sizeof err)) {
            run_folder_gone(L->run_dir, home, first_step > 0, err, sizeof err);
            rc = cli_report(L->cmd, err, 1);
        }
        else if (rank0 && isfinite(row.val_loss))
            L->say_validation(L->ctx, &prog, &row);
        if (logged && L->started) *L->started = 1;   // the row stays (a curves.png failing after it)
        rc = dist_max_int(rc);
    }
    if (rc == 0 && first_step > 0 && first_step < L->total_steps)
        rc = resumed_outputs(L, &c, &prog, home, err, sizeof err);
    progress_restart(&prog);   // the ETA counts steps only, not the start-up or step 0's validation
    while (rc == 0 && *L->step < L->total_steps && !stop) {
        double t0 = now_seconds(), waited = 0;
        run_steps_begun = 1;
        if (L->started) *L->started = 1;
        run_published = 0;   // the step about to run is in no checkpoint (cmd/runfolder.h)
        run_mark_saving(NULL, NULL);
        long step = *L->step;
        L->queue(L->ctx, L->ld, &queued, step, L->prefetch);
        // This process's images; a failure is carried into the exchange below as its groups' failure.
        int inputs_rc = L->inputs(L->ctx, L->ld, step, &waited), inputs_failed = inputs_rc != 0;
        total_wait += waited;
        float lr = lr_at(step, L->total_steps, L->warmup, L->lr, L->min_lr), loss = 0.0f, *grads = NULL;
        // The step's gradient over every rank's groups; the ranks also agree here on stopping after it.
        int failed_here = 0;
        L->gr->notes_here = run_broken_kept(L->notes);   // files this rank found broken, for rank 0 to say
        int reduce_rc = L->gradient(L->ctx, inputs_failed, step, lr, &grads, &loss, &stop, &failed_here, err,
                                    sizeof err);
        char share_err[256];
        int share_rc = dist_size() > 1 && L->gr->notes_any   // collective: every rank learnt it at the exchange
                       ? run_broken_share(L->notes, L->ds->n, L->gone_dirs, L->gone_len, L->broken_said, L->ctx,
                                          share_err, sizeof share_err) : 0;
        if (reduce_rc) {
            progress_end(&prog, stdout);
            // The failing rank names the cause; the data's stop saves the steps done first (every rank
            // agrees here: the exchange failed on all of them alike).
            if (dist_max_int(inputs_rc == DATASET_ERR_BROKEN))
                rc = data_stop(L, &c, home, saved_at, first_step, failed_here, err, sizeof err);
            else
                rc = failed_here ? cli_report(NULL, err, 1) : 1;
            break;
        }
        if (share_rc) {   // every rank together; the rank that lacked the memory says so
            progress_end(&prog, stdout);
            rc = share_rc == DIST_NO_MEMORY_HERE ? cli_report(L->cmd, share_err, 1) : 1;
            break;
        }
        loss = run_test_hook_loss(step + 1, loss);
        if (!isfinite(loss)) {   // the same loss on every rank: all stop here, rank 0 says so
            progress_end(&prog, stdout);
            run_nonfinite_loss_message(err, sizeof err, loss, step + 1, lr, L->ckpt_path);
            rc = rank0 ? cli_report(L->cmd, err, 1) : 1;
            break;
        }
        L->update(L->ctx, grads, step, lr);
        (*L->step)++;
        double t1 = now_seconds();
        interval_busy += t1 - t0;
        run_wait_note_step(&note, waited, t1 - t0);
        c.interval_loss += loss;
        c.interval_n++;
        interval_timed++;
        // The loss shown is the mean since the last metrics row: the number the row will hold.
        progress_update(&prog, stdout, *L->step, c.interval_loss / c.interval_n, lr,
                        interval_busy > 0 ? interval_timed * B / interval_busy : 0);

        long at = *L->step;
        int last = at == L->total_steps;
        int do_log = at % L->log_every == 0 || last;
        int do_eval = at % L->eval_every == 0 || last;
        int do_samples = L->sample_every > 0 && (at % L->sample_every == 0 || last);
        // A stop at a step that validates or draws a sample sheet saves before them: under mpirun the
        // ranks' SIGKILL follows their SIGTERM by a second, and a validation of seconds first lost the
        // stop's checkpoint (docs/distributed.md, "Faults"). The checkpoint carries the step's losses: a
        // resume writes the row a kill or a failure left out with them, and drops them where the row is
        // there (resumed_outputs). The last step's outputs come first still: its row is the finished run's.
        if (stop && !last && (do_eval || do_samples)) {
            file_test_gate("VITMAE_FAULT_HOLD_AFTER_STOP");   // tests: a second Ctrl-C before the save
            carry(L, &c, 1);
            rc = dist_max_int(save_at_end(L, home, saved_at, saved_at >= 0 || first_step > 0, err, sizeof err));
            if (rc) { progress_end(&prog, stdout); break; }
            if (rank0) saved_at = at;
            stop_saved = 1;
        }
        if (do_log || do_eval || do_samples) {
            MetricsRow row = {.step = at, .epoch = run_epoch_at(L->epochs, at, B), .lr = lr,
                              .loss = c.interval_loss / c.interval_n, .val_loss = NAN, .val_psnr = NAN,
                              .img_per_s = interval_busy > 0 ? interval_timed * B / interval_busy : NAN,
                              .elapsed_s = *L->elapsed_s + (t1 - c.session_start)};
            int logged = 0, resumable = saved_at >= 0 || first_step > 0;
            if (stop) file_test_gate("VITMAE_FAULT_HOLD_BEFORE_STOPPED_OUTPUTS");   // tests: a kill there
            int gone = rank0 && run_folder_gone(L->run_dir, home, resumable, err, sizeof err);
            // A stop asked for during the validation ends it between its batches (not the last step's:
            // its row is the finished run's; nor one saved above already): the run saves at once below.
            const volatile sig_atomic_t *may_stop = stop || last ? NULL : &run_stop_requested;
            int out = gone || !rank0 ? 0 : L->outputs(L->ctx, &row, do_eval, do_samples, may_stop, &logged, err, sizeof err);
            int val_stopped = out == RUN_VALIDATION_STOPPED;
            int failed = gone || (out && !val_stopped);
            // The validation a row holds is said also when a later output of the step failed (a sample
            // sheet out of memory): metrics.csv had it, the log lost it. Before the failure's line.
            if (do_eval && isfinite(row.val_loss) && (!failed || logged)) L->say_validation(L->ctx, &prog, &row);
            if (failed) {
                // The run folder moved or deleted meanwhile: each of its files fails alike, and no save can
                // follow (cmd/runfolder.h, run_folder_gone). It said its sample sheet's "RUN/samples: No
                // such file or directory", then the save's on the way out, neither naming the cause.
                out_failed = !gone && !run_folder_gone(L->run_dir, home, resumable, err, sizeof err);
                rc = cli_report(L->cmd, err, 1);
                if (logged) { c.interval_loss = 0; c.interval_n = 0; }   // the row holds them: not carried on
            }
            if ((rc = dist_max_int(rc))) { progress_end(&prog, stdout); break; }
            if (do_log) {   // collective under mpirun, as the row's exchange
                run_wait_note(&note, L->ds, &prog);
                run_store_left_note(&note, L->ds, L->store_min_free_mb);
            }
            // A stop asked for during these outputs (rank 0's validation given up) or since, at any rank:
            // the run ends at this step, saved at once, and no step more is trained. The stop was learnt
            // at the next step's exchange only: the validation went on, then a step, then the save, and
            // under mpirun (SIGKILL a second after SIGTERM, docs/distributed.md, "Faults") the checkpoint
            // was lost. The ranks agree, as on a stop at a step. A row given up with its validation keeps
            // the step's losses: the checkpoint carries them, and the resume writes the row
            // (resumed_outputs).
            if (!stop && !last && dist_max_int(val_stopped || run_stop_requested ? 1 : 0)) stop = 1;
            if (!(stop && !stop_saved && !logged)) { c.interval_loss = 0; c.interval_n = 0; }
            interval_timed = 0; interval_busy = 0;
        }
        if (at % L->ckpt_every == 0 && !last && !stop) {
            carry(L, &c, 1);
            // A failure said as every file of the run folder says its own.
            int resumable = saved_at >= 0 || first_step > 0;
            int gone = rank0 && run_folder_gone(L->run_dir, home, resumable, err, sizeof err);
            if (!gone) file_test_gate("VITMAE_FAULT_HOLD_BEFORE_SAVE");   // tests: a folder put at its name
            int saved = gone ? -1 : rank0 ? save_all(L, err, sizeof err) : 0;
            // A folder moved once this save had published its checkpoint.safetensors (the rest of the save
            // failing then: its snapshots' pruning, config.json) keeps that checkpoint where it went: the line
            // says --resume goes on there (run_published). It said nothing of it, the run's first save's
            // checkpoint in the moved folder (a test moving the folder as checkpoint.safetensors appeared met it).
            if (!gone && saved && run_folder_gone(L->run_dir, home, resumable || run_published, err, sizeof err)) saved = -1;
            else if (!gone && saved == -1) kept_note(L, saved_at, err, sizeof err);
            if (rank0 && saved != -1) saved_at = *L->step;   // saved (what follows it may have failed)
            if (saved != -1) run_checkpointed = 1;
            if (saved) rc = cli_report(L->cmd, err, 1);   // the periodic checkpoint's, or config.json's
            if (saved == SAVED_THEN_FAILED) say_saved(L);
            if ((rc = dist_max_int(rc))) { progress_end(&prog, stdout); break; }
            // A stop asked for while the checkpoint was written (a save takes seconds): that checkpoint is
            // the stop's, at this very step. It took one step more and saved again, which under mpirun
            // (SIGKILL a second after its SIGTERM) was killed in the second save. The ranks agree, as on a
            // stop at a step.
            if (dist_max_int(run_stop_requested ? 1 : 0)) { stop = 1; stop_saved = 1; run_saved = 1; }
        }
    }
    progress_end(&prog, stdout);
    loader_free(L->ld);   // stops the background threads (batches queued past a stop are dropped)
    run_report_working_images(L->ds, *L->step - first_step, total_wait);   // collective under mpirun
    if (out_failed) {
        // A step's validation, metrics row, sample sheet or curves failed after the step was taken: its
        // weights are sound, so they are saved before the run stops, and a picture that memory or the
        // disk refused costs no training (docs/data.md, "Run folders"). The run still exits 1, and its
        // resume makes the outputs the step lacks (resumed_outputs). A stop's checkpoint saved before them
        // holds the step and its losses already: not saved twice.
        int saved = 0;
        if (!stop_saved) {
            carry(L, &c, 0);
            saved = save_all(L, err, sizeof err);
        }
        if (saved == -1) kept_note(L, saved_at, err, sizeof err);
        if (saved) cli_report(L->cmd, err, 1);
        if (saved != -1) say_saved(L);
    }
    if (rc == 0) {
        if (stop) file_test_gate("VITMAE_FAULT_HOLD_AFTER_STOP");   // tests: a second Ctrl-C before the save
        carry(L, &c, 0);
        // stop_saved: the stop's save was made already, a periodic one or before the stopped step's
        // outputs, config.json with it (written again, its elapsed_s read in info as an edit); neither is
        // written twice.
        rc = stop_saved ? 0 : save_at_end(L, home, saved_at, saved_at >= 0 || first_step > 0, err, sizeof err);
        if (rc == 0 && stop && *L->step < L->total_steps) {
            // The folder as a shell word: "--resume my run" pasted gave train two arguments (docs/interface.md,
            // section 1).
            char word[FILE_SHELL_WORD_MAX];
            cli_out("interrupted at step %ld of %ld; saved %s (continue with --resume %s)", *L->step, L->total_steps,
                    L->ckpt_path, file_shell_word(L->run_dir, word, sizeof word));
            file_test_gate("VITMAE_FAULT_HOLD_AFTER_SAVE");   // tests: a second Ctrl-C once saved
            // curves.png was drawn at the last evaluation: redrawn with the rows logged since, once the
            // checkpoint is safe, so that a picture that fails to draw is a warning, never a lost save.
            if (rank0 && L->curves(L->ctx, err, sizeof err))
                cli_message("warning: %s (curves.png stays as at the last evaluation)", err);
        } else if (rc == 0)
            cli_out("done: %ld step%s in %.1f s; checkpoint %s", *L->step, *L->step == 1 ? "" : "s", *L->elapsed_s,
                    L->ckpt_path);
        // The last row was written before the last sheet, checkpoint and curves: metrics.csv deleted
        // meanwhile left a finished run without it, exit 0, nothing said. Looked at once more, as
        // before each row (cmd/log.h, metrics_rejoin_run). A run folder moved away took the file along.
        if (rc == 0 && rank0 && L->metrics_look && !run_folder_gone(L->run_dir, home, 0, err, sizeof err)) {
            file_test_gate("VITMAE_FAULT_HOLD_BEFORE_LAST_LOOK");   // tests: metrics.csv deleted there
            int again = L->metrics_look(L->ctx, err, sizeof err);
            if (again < 0) rc = cli_report(L->cmd, err, 1);
            else if (again) cli_message("warning: %s", err);
        }
        rc = dist_max_int(rc);
    }
    file_guard_folder(NULL, NULL);
    return rc;
}
