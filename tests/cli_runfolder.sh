#!/bin/sh
# Run folders are never lost (docs/data.md "Run folders"): --out on an existing run is refused,
# --overwrite moves the old run aside whole, resume from another directory finds the data by its
# recorded absolute path (and names --data when it is gone), --steps on resume extends the run,
# weight flags on resume are refused, --init starts a new run from a checkpoint's weights.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch dir
export XDG_CACHE_HOME="$dir/xdg"
mkdir -p "$dir/work" && cd "$dir/work" || exit 1
"$VITMAE_TOOLS/synth" data --count 40 --size 16 --seed 5 >/dev/null || { echo "synth failed"; exit 1; }
# A relative --data path: resuming from another directory must still find it.
# $small holds out --val-frac of --data; $base, for runs given --val DIR (the two together are refused).
base="--data data --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 8 --threads 2"
small="$base --val-frac 0.2"

"$VITMAE" train $small --steps 6 --out "$dir/run" > "$dir/log" 2>&1; rc=$?
t "first run exits 0" '[ $rc -eq 0 ]'
cp "$dir/run/checkpoint.safetensors" "$dir/first.safetensors"
rows=$(wc -l < "$dir/run/metrics.csv")

# 1. --out on a folder that holds a run: exit 2, the run untouched, the message names the ways on.
"$VITMAE" train $small --steps 4 --out "$dir/run" > "$dir/log" 2>"$dir/err"; rc=$?
t "existing run: exit 2 ($rc)" '[ $rc -eq 2 ]'
t "message names --resume, another --out and --overwrite" 'grep -q "^vitmae: train --out .*/run: the folder already holds a run; pass --resume .*/run to continue it, another --out folder, or --overwrite" "$dir/err"'
t "the old checkpoint is untouched" 'cmp -s "$dir/run/checkpoint.safetensors" "$dir/first.safetensors"'
# A resumed run given another run's folder was told to "pass ... --overwrite", which --resume refuses.
mkdir -p "$dir/another" && cp "$dir/run/metrics.csv" "$dir/another/"
"$VITMAE" train --resume "$dir/first.safetensors" --out "$dir/another" > /dev/null 2>"$dir/err"; rc=$?
t "--resume into another run's folder: exit 2, no --overwrite advice ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: train --out .*/another: the folder already holds another run; a resumed run continues in its own folder or in a new --out folder$" "$dir/err"'
# ... and a copy of the run's own folder holds this run, not "another run": it says where to resume it.
cp -r "$dir/run" "$dir/runcopy"
"$VITMAE" train --resume "$dir/first.safetensors" --out "$dir/runcopy" > /dev/null 2>"$dir/err"; rc=$?
t "--resume into a copy of the run's folder: exit 2, this run, resume it there ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: train --out .*/runcopy: the folder already holds this run (a copy: the same run_id); continue it there with --resume .*/runcopy, or give a new --out folder$" "$dir/err" &&
   cmp -s "$dir/run/metrics.csv" "$dir/runcopy/metrics.csv"'
rm -rf "$dir/runcopy"
t "the old metrics are untouched" '[ $(wc -l < "$dir/run/metrics.csv") -eq $rows ]'
t "nothing else written" '[ ! -e "$dir/run.old-1" ] && [ ! -e "$dir/run/checkpoint-4.safetensors" ]'
# A folder with only unrelated files is not a run.
mkdir "$dir/other" && echo notes > "$dir/other/notes.txt"
"$VITMAE" train $small --steps 2 --out "$dir/other" > /dev/null 2>&1; rc=$?
t "a folder without a run takes a new one" '[ $rc -eq 0 ] && [ -s "$dir/other/checkpoint.safetensors" ]'
# A folder holding a curves.png (a user's plot, a run's copied picture) and nothing else of a run: the
# new run wrote its own curves.png over it, exit 0. Now it counts as a run: refused, the file kept, the
# file named (the refusal said "a run that stopped before its first checkpoint", which it is not).
mkdir "$dir/plot" && echo "my plot" > "$dir/plot/curves.png"
"$VITMAE" train $small --steps 2 --out "$dir/plot" > /dev/null 2>"$dir/err"; rc=$?
t "a folder with a curves.png: exit 2, one line naming the file and --overwrite, the file kept ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --out $dir/plot: the folder holds curves.png, which a run writes over; pass --overwrite to move the folder aside (to $dir/plot.old-N) and start, or another --out folder$" "$dir/err" && [ "$(cat "$dir/plot/curves.png")" = "my plot" ] && [ "$(ls "$dir/plot")" = curves.png ]'
# Its --resume: no run there (it said "the run stopped before its first checkpoint ... start it again with
# --overwrite", which would move the user's plot aside for a run that never was).
"$VITMAE" train --resume "$dir/plot" > /dev/null 2>"$dir/err"; rc=$?
t "--resume of a folder with only a curves.png: exit 2, no run there ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/plot: no run in this folder (no checkpoint.safetensors)" ] && [ "$(ls "$dir/plot")" = curves.png ]'
# The same for a samples/ folder of sheets (a user's, a copied run's): train wrote samples/step-2.png
# over the one there, exit 0.
mkdir -p "$dir/sheets/samples" && echo "my sheet" > "$dir/sheets/samples/step-2.png"
"$VITMAE" train $small --steps 2 --out "$dir/sheets" > /dev/null 2>"$dir/err"; rc=$?
t "a folder with a samples/ folder: exit 2, one line naming it and --overwrite, the sheet kept ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --out $dir/sheets: the folder holds samples/, which a run writes over; pass --overwrite" "$dir/err" && [ "$(cat "$dir/sheets/samples/step-2.png")" = "my sheet" ] && [ "$(ls "$dir/sheets")" = samples ]'
# A samples/ folder with no sheet in it (empty, or a user's notes) has nothing a run writes over: the
# run goes on there (it was refused as a folder of sheets), the notes kept.
mkdir -p "$dir/notes/samples" && echo "my notes" > "$dir/notes/samples/notes.txt"
"$VITMAE" train $small --steps 2 --out "$dir/notes" > /dev/null 2>"$dir/err"; rc=$?
t "a folder whose samples/ holds only notes.txt: the run goes on, the notes kept ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$dir/notes/samples/notes.txt")" = "my notes" ] && [ -s "$dir/notes/checkpoint.safetensors" ]'
# A metrics.csv of the user's (not a run's header) is named as curves.png is, with the plot beside it:
# the refusal said "a run that stopped before its first checkpoint", and its --resume advised
# --overwrite. A run's metrics.csv alone is still a stopped run (the loop below).
mkdir "$dir/mine" && echo "my numbers" > "$dir/mine/metrics.csv" && echo "my plot" > "$dir/mine/curves.png"
"$VITMAE" train $small --steps 2 --out "$dir/mine" > /dev/null 2>"$dir/err"; rc=$?
t "a folder with the user's metrics.csv and curves.png: exit 2, both named, kept ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --out $dir/mine: the folder holds metrics.csv and curves.png, which a run writes over; pass --overwrite" "$dir/err" && [ "$(cat "$dir/mine/metrics.csv")" = "my numbers" ]'
"$VITMAE" train --resume "$dir/mine" > /dev/null 2>"$dir/err"; rc=$?
t "--resume of that folder: exit 2, no run there ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/mine: no run in this folder (no checkpoint.safetensors)" ]'
# A config.json that is not vitmae's (a Hugging Face model folder holds one) is named as metrics.csv is:
# it was taken for a run's record, the refusal said "a run without a checkpoint (it stopped before its
# first, ...)" and its --resume "start it again with its own flags (DIR/config.json records them)".
# One of vitmae's alone (its model's sizes and train state) is still a stopped run (the loop below).
mkdir "$dir/hf" && echo '{"a":1}' > "$dir/hf/config.json"
"$VITMAE" train $small --steps 2 --out "$dir/hf" > /dev/null 2>"$dir/err"; rc=$?
"$VITMAE" train --resume "$dir/hf" > /dev/null 2>"$dir/err2"; rc2=$?
t "a folder with another program's config.json: exit 2, the file named as one a run writes over, kept; its --resume: no run there ($rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --out $dir/hf: the folder holds config.json, which a run writes over; pass --overwrite to move the folder aside (to $dir/hf.old-N) and start, or another --out folder" ] &&
   [ "$(cat "$dir/hf/config.json")" = "{\"a\":1}" ] && [ "$(ls "$dir/hf")" = config.json ] &&
   [ $rc2 -eq 2 ] && [ "$(cat "$dir/err2")" = "vitmae: train --resume $dir/hf: no run in this folder (no checkpoint.safetensors)" ]'
echo "my plot" > "$dir/hf/curves.png" && printf 'epoch,acc\n1,0.5\n' > "$dir/hf/metrics.csv"
"$VITMAE" train $small --steps 2 --out "$dir/hf" > /dev/null 2>"$dir/err"; rc=$?
t "... with the user's metrics.csv and curves.png beside it: train names all three, kept ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -qx "vitmae: train --out $dir/hf: the folder holds config.json, metrics.csv and curves.png, which a run writes over; pass --overwrite .*" "$dir/err" && [ "$(ls "$dir/hf" | wc -l)" -eq 3 ]'
# finetune writes no config.json: another program's was named "a file a run writes over" (or, alone, "a run
# without a checkpoint"), and --overwrite moved the user's folder aside for nothing.
"$VITMAE" finetune --from-scratch --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --data data --steps 2 --out "$dir/hf" > /dev/null 2>"$dir/err"; rc=$?
t "... finetune names only the two it writes over ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -qx "vitmae: finetune --out $dir/hf: the folder holds metrics.csv and curves.png, which a run writes over; pass --overwrite .*" "$dir/err" && [ "$(ls "$dir/hf" | wc -l)" -eq 3 ]'
mkdir "$dir/hfft" && echo '{"a":1}' > "$dir/hfft/config.json"
"$VITMAE" finetune --from-scratch --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --data data --steps 2 --out "$dir/hfft" > /dev/null 2>"$dir/err"; rc=$?
t "finetune --out a folder holding only another program's config.json: runs there, the file untouched ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$dir/hfft/config.json")" = "{\"a\":1}" ] && [ -s "$dir/hfft/checkpoint.safetensors" ]'
# A user's file under a snapshot's name (notes, no safetensors, no run_id) in a folder with no record of
# a run is not a snapshot (docs/interface.md, sections 5 and 9): --out called the folder a run and
# advised "--resume DIR/checkpoint-5.safetensors", --resume DIR advised the same, and that resume failed
# ("a text file, not a safetensors checkpoint"). Now it is named as a file a run writes over, and the
# resume says there is no run, naming it; finetune alike.
mkdir "$dir/snapnote" && echo 'my notes' > "$dir/snapnote/checkpoint-5.safetensors"
"$VITMAE" train $small --steps 5 --out "$dir/snapnote" > /dev/null 2>"$dir/err"; rc=$?
"$VITMAE" train --resume "$dir/snapnote" > /dev/null 2>"$dir/err2"; rc2=$?
"$VITMAE" finetune --from-scratch --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --data data --steps 5 --out "$dir/snapnote" > /dev/null 2>"$dir/err3"; rc3=$?
"$VITMAE" finetune --resume "$dir/snapnote" > /dev/null 2>"$dir/err4"; rc4=$?
t "a folder holding only notes named checkpoint-5.safetensors: no snapshot advised, the file named, kept ($rc $rc2 $rc3 $rc4: $(cat "$dir/err" "$dir/err2" "$dir/err3" "$dir/err4" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --out $dir/snapnote: the folder holds checkpoint-5.safetensors, which a run writes over; pass --overwrite to move the folder aside (to $dir/snapnote.old-N) and start, or another --out folder" ] &&
   [ $rc2 -eq 2 ] && [ "$(cat "$dir/err2")" = "vitmae: train --resume $dir/snapnote: no run in this folder (no checkpoint.safetensors; $dir/snapnote/checkpoint-5.safetensors is not a snapshot: it records no training run)" ] &&
   [ $rc3 -eq 2 ] && [ "$(cat "$dir/err3")" = "vitmae: finetune --out $dir/snapnote: the folder holds checkpoint-5.safetensors, which a run writes over; pass --overwrite to move the folder aside (to $dir/snapnote.old-N) and start, or another --out folder" ] &&
   [ $rc4 -eq 2 ] && [ "$(cat "$dir/err4")" = "vitmae: finetune --resume $dir/snapnote: no run in this folder (no checkpoint.safetensors; $dir/snapnote/checkpoint-5.safetensors is not a snapshot: it records no training run)" ] &&
   [ "$(cat "$dir/snapnote/checkpoint-5.safetensors")" = "my notes" ] && [ "$(ls "$dir/snapnote")" = checkpoint-5.safetensors ]'
# Beside a run's metrics.csv (a run that stopped early is there), such a config.json records no flags.
mkdir "$dir/hf2" && echo '{"a":1}' > "$dir/hf2/config.json" && head -n 1 "$dir/run/metrics.csv" > "$dir/hf2/metrics.csv"
"$VITMAE" train --resume "$dir/hf2" > /dev/null 2>"$dir/err"; rc=$?
t "--resume of a run's metrics.csv beside another program's config.json: not said to record the flags ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/hf2: the folder holds a run without a checkpoint (it stopped before its first, or they were moved or deleted), nothing to resume; start it again with its own flags and --out $dir/hf2 --overwrite, without --resume" ]'
# A run's checkpoint beside a user's config.json or metrics.csv of other columns: the checkpoint records
# the run (a folder whose metrics.csv was deleted resumes), but not those files, which the resume wrote
# over, exit 0 (the --out advice, "pass --resume DIR", led there). Refused, naming them; both kept.
mkdir "$dir/hf3" && echo '{"a":1}' > "$dir/hf3/config.json" && cp "$dir/other/checkpoint.safetensors" "$dir/hf3/"
"$VITMAE" train --resume "$dir/hf3" --threads 2 > /dev/null 2>"$dir/err"; rc=$?
t "a run's checkpoint beside another program's config.json: the resume refused, the file kept ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/hf3: its folder $dir/hf3 holds config.json, not the run'"'"'s, which the run would write over; move it away, or continue it in a folder of its own with --out DIR" ] &&
   [ "$(cat "$dir/hf3/config.json")" = "{\"a\":1}" ]'
# ... and beside the run's own metrics.csv as well: that file made the folder a run's and the config.json
# went unchecked, the resume (of the folder or a snapshot) wrote vitmae's over it, exit 0.
for c in '{"model_type":"vit_mae"}' '{}' '"hello"' '{"model":{"img_size":16}}'; do
  rm -rf "$dir/hf4" && cp -r "$dir/other" "$dir/hf4" && rm -f "$dir/hf4/notes.txt" && printf '%s\n' "$c" > "$dir/hf4/config.json"
  "$VITMAE" train --resume "$dir/hf4/checkpoint-1.safetensors" --threads 2 > /dev/null 2>"$dir/err2"; rc2=$?
  "$VITMAE" train --resume "$dir/hf4" --steps 4 --threads 2 > /dev/null 2>"$dir/err"; rc=$?
  t "a run's checkpoints and metrics.csv beside config.json $c: both resumes refused, the file kept ($rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/hf4: its folder $dir/hf4 holds config.json, not the run'"'"'s, which the run would write over; move it away, or continue it in a folder of its own with --out DIR" ] &&
     [ $rc2 -eq 2 ] && [ "$(cat "$dir/err2")" = "vitmae: train --resume $dir/hf4/checkpoint-1.safetensors: its folder $dir/hf4 holds config.json, not the run'"'"'s, which the run would write over; move it away, or continue it in a folder of its own with --out DIR" ] &&
     [ "$(cat "$dir/hf4/config.json")" = "$c" ] && cmp -s "$dir/hf4/metrics.csv" "$dir/other/metrics.csv"'
done
# finetune writes no config.json: its resume beside one (hfft above: its run's metrics.csv) goes ahead, the file kept.
"$VITMAE" finetune --resume "$dir/hfft/checkpoint-1.safetensors" --threads 2 > /dev/null 2>"$dir/err"; rc=$?
t "finetune --resume beside another program's config.json and its run's metrics.csv: goes ahead, the file kept ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$dir/hfft/config.json")" = "{\"a\":1}" ]'
mkdir "$dir/um" && printf 'name,score\nalice,3\n' > "$dir/um/metrics.csv" && cp "$dir/other/checkpoint.safetensors" "$dir/um/checkpoint-2.safetensors"
"$VITMAE" train --resume "$dir/um/checkpoint-2.safetensors" --threads 2 > /dev/null 2>"$dir/err"; rc=$?
t "a snapshot beside a metrics.csv of other columns: the resume refused, the file kept ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -qx "vitmae: train --resume $dir/um/checkpoint-2.safetensors: its folder $dir/um holds metrics.csv, not the run.s, which the run would write over; move it away, or continue it in a folder of its own with --out DIR" "$dir/err" &&
   [ "$(cat "$dir/um/metrics.csv")" = "$(printf "name,score\nalice,3")" ]'

# A folder holding exactly one of a run's names (the others deleted, or the one file copied there) is a
# run all the same: each alone refuses train --out in one line naming the folder, the file kept and
# nothing written beside it. Every folder above holds two or more of them, so a name dropped from
# run_folder_has_run (cmd/runfolder.c) went unseen. curves.png alone: the plot folder above.
# config.json (the finished run's, step 6) tells that its checkpoints were saved and are gone since;
# metrics.csv alone cannot tell that from a run stopped before its first.
for name in config.json metrics.csv checkpoint.safetensors checkpoint-7.safetensors; do
  one="$dir/only-${name%.*}"
  case $name in
    checkpoint.*) src="$dir/first.safetensors"; why="already holds a run; pass --resume $one to continue it" ;;
    # (no checkpoint.safetensors: --resume DIR would be refused naming the snapshot, which --out names; the
    # copy is the finished run's last step, whose resume trains nothing: the file itself or ln, as --resume DIR)
    checkpoint-*) src="$dir/first.safetensors"; why="already holds a finished run without its checkpoint.safetensors; its newest snapshot, $one/$name, is the run's last step: pass that file where a checkpoint is asked for, or give the folder its checkpoint back with: ln $one/$name $one/checkpoint.safetensors" ;;
    config.json) src="$dir/run/$name"; why="holds a run whose checkpoints were moved or deleted (its config.json records one saved at step 6), nothing to resume" ;;
    *) src="$dir/run/$name"; why="holds a run without a checkpoint (it stopped before its first, or they were moved or deleted), nothing to resume" ;;
  esac
  mkdir "$one" && cp "$src" "$one/$name"
  "$VITMAE" train $small --steps 2 --out "$one" > /dev/null 2> "$dir/err"; rc=$?
  t "a folder holding only $name: exit 2, one line naming the folder, the file kept ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --out $one: the folder $why" "$dir/err" &&
     cmp -s "$src" "$one/$name" && [ "$(ls -A "$one")" = "$name" ]'
done
# ... and finetune --out likewise (its own check of the folder, cmd/finetune.c).
for name in config.json checkpoint-7.safetensors; do
  one="$dir/ftonly-${name%.*}"
  case $name in
    # (a pretraining run's snapshot, no metrics.csv: the snapshot tells the run's command, which
    # continues it; finetune's advice, the snapshot or ln, led to finetune --resume, which refuses it)
    checkpoint-*) src="$dir/first.safetensors"; why="already holds a pretraining run (continue it with vitmae train --resume $one); pass another --out folder" ;;
    *) src="$dir/run/$name"; why="holds a run whose checkpoints were moved or deleted (its config.json records one saved at step 6), nothing to resume" ;;
  esac
  mkdir "$one" && cp "$src" "$one/$name"
  "$VITMAE" finetune --from-scratch --data data --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --batch 8 --threads 2 \
    --steps 2 --out "$one" > /dev/null 2> "$dir/err"; rc=$?
  t "finetune --out a folder holding only $name: exit 2, one line naming the folder, the file kept ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: finetune --out $one: the folder $why" "$dir/err" &&
     cmp -s "$src" "$one/$name" && [ "$(ls -A "$one")" = "$name" ]'
done
# A name vitmae never writes is no snapshot (snapshot_step: digits as %ld prints them): a copy named
# checkpoint-07 or checkpoint-x leaves the folder free; the run goes on beside it, which stays as it was
# (pruning passes it by too).
for name in checkpoint-07.safetensors checkpoint-x.safetensors; do
  one="$dir/only-${name%.*}"
  mkdir "$one" && cp "$dir/first.safetensors" "$one/$name"
  "$VITMAE" train $small --steps 2 --out "$one" > /dev/null 2> "$dir/err"; rc=$?
  t "a folder holding only $name (no snapshot name): a new run beside it, the file kept ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 0 ] && [ ! -s "$dir/err" ] && cmp -s "$dir/first.safetensors" "$one/$name" && [ -s "$one/checkpoint.safetensors" ]'
done

# A run killed before its first checkpoint leaves config.json and metrics.csv: --out says it holds a run
# with nothing to resume (it said "pass --resume", and --resume then failed with "No such file"); its
# --resume says to start again with --overwrite; a folder whose checkpoint.safetensors is gone names
# its newest snapshot.
# (Its config.json is the state of step 0, as a new run writes it before its first checkpoint.)
mkdir -p "$dir/early" && sed 's/"step":[[:space:]]*6,/"step": 0,/' "$dir/run/config.json" > "$dir/early/config.json" &&
  head -n 1 "$dir/run/metrics.csv" > "$dir/early/metrics.csv"
"$VITMAE" train $small --steps 4 --out "$dir/early" > /dev/null 2> "$dir/err"; rc=$?
t "killed before its first checkpoint, --out: exit 2, one line, --overwrite and no --resume ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --out .*/early: the folder holds a run that stopped before its first checkpoint, nothing to resume; pass --overwrite" "$dir/err" && ! grep -q -- "--resume" "$dir/err"'
"$VITMAE" train --resume "$dir/early" > /dev/null 2> "$dir/err"; rc=$?
t "killed before its first checkpoint, --resume: exit 2, one line ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume .*/early: the folder holds a run that stopped before its first checkpoint, nothing to resume; start it again with its own flags (.*/early/config.json records them) and --out .*/early --overwrite, without --resume$" "$dir/err"'
# A run whose every checkpoint was deleted (config.json and metrics.csv left, its config.json of step 6)
# did not stop before its first checkpoint, as the refusal said: config.json records the one it saved.
mkdir -p "$dir/emptied" && cp "$dir/run/config.json" "$dir/run/metrics.csv" "$dir/emptied/"
"$VITMAE" train --resume "$dir/emptied" > /dev/null 2> "$dir/err"; rc=$?
t "every checkpoint deleted, --resume: exit 2, one line, the checkpoints said gone, not never saved ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume .*/emptied: the folder holds a run whose checkpoints were moved or deleted (its config.json records one saved at step 6), nothing to resume; start it again with its own flags (.*/emptied/config.json records them) and --out .*/emptied --overwrite, without --resume$" "$dir/err"'
# ... and beside a file of a snapshot's name that is not the run's (a user's notes, a converted checkpoint
# without train_state, another run's snapshot copied in), which --resume DIR passes by: --out said "a run
# that cannot be resumed as it is (train --resume DIR says why)", and that resume said "nothing to
# resume". Now --out says what it says without the file, which stays.
"$VITMAE" train $small --steps 2 --out "$dir/emptied" > /dev/null 2> "$dir/err0"
for what in notes converted other; do
  rm -rf "$dir/emptied2" && cp -r "$dir/emptied" "$dir/emptied2"
  case $what in
    notes) echo "my notes" > "$dir/emptied2/checkpoint-2.safetensors" ;;
    converted) "$VITMAE_TOOLS/mkckpt" ckpt "$dir/emptied2/checkpoint-2.safetensors" > /dev/null || fail=1 ;;
    other) cp "$dir/other/checkpoint.safetensors" "$dir/emptied2/checkpoint-2.safetensors" ;;
  esac
  cp "$dir/emptied2/checkpoint-2.safetensors" "$dir/kept"
  "$VITMAE" train $small --steps 2 --out "$dir/emptied2" > /dev/null 2> "$dir/err"; rc=$?
  "$VITMAE" train --resume "$dir/emptied2" > /dev/null 2> "$dir/err2"; rc2=$?
  t "every checkpoint deleted, $what under a snapshot's name: --out as without it, its --resume unchanged, the file kept ($rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
    '[ $rc -eq 2 ] && [ "$(sed "s#/emptied2#/emptied#g" "$dir/err")" = "$(cat "$dir/err0")" ] &&
     grep -qx "vitmae: train --out $dir/emptied2: the folder holds a run whose checkpoints were moved or deleted (its config.json records one saved at step 6), nothing to resume; pass --overwrite .*" "$dir/err" &&
     [ $rc2 -eq 2 ] && grep -q "^vitmae: train --resume $dir/emptied2: the folder holds a run whose checkpoints were moved or deleted (its config.json records one saved at step 6), nothing to resume; " "$dir/err2" &&
     cmp -s "$dir/kept" "$dir/emptied2/checkpoint-2.safetensors"'
done
mkdir -p "$dir/snaps" && cp "$dir/first.safetensors" "$dir/snaps/checkpoint-6.safetensors" && cp "$dir/run/config.json" "$dir/snaps/"
"$VITMAE" train --resume "$dir/snaps" > /dev/null 2> "$dir/err"; rc=$?
t "checkpoint.safetensors gone, a snapshot left (the finished run's): exit 2, the snapshot named ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: train --resume .*/snaps: no checkpoint.safetensors in the folder; its newest snapshot, .*/snaps/checkpoint-6.safetensors, is the finished run'"'"'s last step: " "$dir/err"'

# 2. --overwrite: the old run moved aside whole to run.old-1, the new folder holds only the new run.
"$VITMAE" train $small --steps 4 --seed 9 --out "$dir/run" --overwrite > "$dir/log" 2>&1; rc=$?
t "--overwrite exits 0" '[ $rc -eq 0 ]'
t "--overwrite says where the old run went" 'grep -q "moved to .*/run.old-1" "$dir/log"'
t "old run whole in run.old-1" 'cmp -s "$dir/run.old-1/checkpoint.safetensors" "$dir/first.safetensors" && [ $(wc -l < "$dir/run.old-1/metrics.csv") -eq $rows ]'
t "new run alone in run (4 steps)" '[ "$(tail -n 1 "$dir/run/metrics.csv" | cut -d, -f1)" = 4 ] && [ ! -e "$dir/run/checkpoint-6.safetensors" ] && [ ! -e "$dir/run/samples/step-6.png" ]'
"$VITMAE" train $small --steps 2 --out "$dir/run" --overwrite > /dev/null 2>&1
t "a second --overwrite takes run.old-2" '[ -d "$dir/run.old-2" ] && [ -d "$dir/run.old-1" ]'
# A run folder named "." or ending in "/..": the advice named ..old-N (sub/...old-N) and --overwrite failed
# ("cannot move . aside to ..old-1: Device or resource busy"). Its real name, resolved: moved to
# DOT.old-1 beside it, the new run in DOT itself (not in the moved folder, where "." then is).
real=$(cd "$dir" && pwd -P) && mkdir -p "$real/dot/sub" && (
  cd "$real/dot" || exit 1
  "$VITMAE" train $small --data "$dir/work/data" --steps 2 --out . > /dev/null 2>&1 &&
  "$VITMAE" train $small --data "$dir/work/data" --steps 2 --out sub/.. > /dev/null 2>"$dir/err"; echo $? > "$dir/rc"
  cp "$real/dot/checkpoint.safetensors" "$dir/dot-first.safetensors"
  "$VITMAE" train $small --data "$dir/work/data" --steps 3 --out . --overwrite > "$dir/log" 2>&1; echo $? >> "$dir/rc"
  cd "$real/dot" && mkdir -p sub || exit 1   # the shell went with the old run: the new one entered
  "$VITMAE" finetune --from-scratch --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --batch 8 --threads 2 \
    --data "$dir/work/data" --steps 2 --out sub/.. --overwrite > "$dir/log2" 2>&1; echo $? >> "$dir/rc")
t "--out . / sub/..: the advice names DOT.old-N, --overwrite moves DOT there, the new run in DOT ($(cat "$dir/rc" "$dir/err" "$dir/log" "$dir/log2" | grep -v "^ \|warning" | head -c 600))" \
  '[ "$(cat "$dir/rc" | tr "\n" " ")" = "2 0 0 " ] &&
   grep -qx "vitmae: train --out sub/..: the folder already holds a run; pass --resume sub/.. to continue it, another --out folder, or --overwrite to move the old run aside (to $real/dot.old-N)" "$dir/err" &&
   grep -qx -- "--overwrite: the old run in $real/dot was moved to $real/dot.old-1 (the working directory with it)" "$dir/log" &&
   cmp -s "$real/dot.old-1/checkpoint.safetensors" "$dir/dot-first.safetensors" && [ -d "$real/dot.old-1/sub" ] &&
   [ "$(tail -n 1 "$real/dot.old-2/metrics.csv" | cut -d, -f1)" = 3 ] && [ -d "$real/dot.old-2/sub" ] &&
   grep -qx -- "--overwrite: the old run in $real/dot was moved to $real/dot.old-2 (the working directory with it)" "$dir/log2" &&
   [ -s "$real/dot/checkpoint.safetensors" ] && [ ! -e "$real/dot/config.json" ] && [ ! -e "$real/dot.old-3" ]'

# 3. Resume from another directory (the data path was relative); --steps extends the run.
"$VITMAE" train $small --steps 6 --out "$dir/r" > /dev/null 2>&1
cd "$dir" || exit 1
"$VITMAE" train --resume "$dir/r" --steps 9 --threads 2 > "$dir/log" 2>"$dir/err"; rc=$?
t "resume from another directory exits 0 ($(cat "$dir/err"))" '[ $rc -eq 0 ]'
t "--steps on resume extends the run to 9" '[ "$(tail -n 1 "$dir/r/metrics.csv" | cut -d, -f1)" = 9 ] && grep -q "goes on to step 9" "$dir/log"'
"$VITMAE" train --resume "$dir/r" --steps 5 > "$dir/out" 2>"$dir/err"; rc=$?
t "--steps below the step reached: exit 2" '[ $rc -eq 2 ] && grep -q "the run is at step 9" "$dir/err"'
# A refused resume is its one line: no "resuming ... at step 9" on stdout before it, nor "the run goes
# on to step 12" for a longer run refused later (--accum).
t "--steps below the step reached: nothing on stdout ($(head -c 200 "$dir/out"))" '[ ! -s "$dir/out" ]'
"$VITMAE" train --resume "$dir/r" --steps 12 --accum 3 > "$dir/out" 2>"$dir/err"; rc=$?
t "--steps 12 --accum 3 on resume: exit 2, one line, nothing on stdout ($(head -c 200 "$dir/out"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --accum: 3" "$dir/err" && [ ! -s "$dir/out" ]'
# A file named samples in the run folder (where the sample sheets go) is refused at the start, exit 1,
# in one line naming it: the first sheet found it only after the run's steps.
cp -r "$dir/r" "$dir/rs" && rm -r "$dir/rs/samples" && echo notes > "$dir/rs/samples"
"$VITMAE" train --resume "$dir/rs" --steps 12 > /dev/null 2>"$dir/err"; rc=$?
t "a resumed run folder whose samples is a file: exit 1 at the start, one line ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume: $dir/rs/samples: not a folder: " "$dir/err" &&
   [ "$(tail -n 1 "$dir/rs/metrics.csv" | cut -d, -f1)" = 9 ] && [ "$(cat "$dir/rs/samples")" = notes ]'
# ... and so is a samples that is a link to nothing (or to a file) in the folder of a new run or of a
# resumed one (which may have gained it since): the run trained its first steps, then stopped at the
# first sheet with "RUN/samples/step-1.png: No such file or directory" and "continue with --resume RUN",
# which stopped the same way a step later. One line naming the link and its target, nothing trained;
# moved away, the resume goes on. A link to a folder is followed: the sheets go into its target.
rm "$dir/rs/samples" && ln -s ../nothing "$dir/rs/samples"
"$VITMAE" train --resume "$dir/rs" --steps 12 > /dev/null 2>"$dir/err"; rc=$?
t "a resumed run folder whose samples is a link to nothing: exit 1 at the start, one line naming the link ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume: $dir/rs/samples: a symbolic link to ../nothing, which does not exist: the sample sheets go into a folder of this name (move the link away)" ] &&
   [ "$(tail -n 1 "$dir/rs/metrics.csv" | cut -d, -f1)" = 9 ] && [ "$(readlink "$dir/rs/samples")" = ../nothing ]'
mv "$dir/rs/samples" "$dir/rs-samples-link"
"$VITMAE" train --resume "$dir/rs" --steps 12 > /dev/null 2>"$dir/err"; rc=$?
t "... moved away as it says, the resume goes on to step 12 with its sheet ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(tail -n 1 "$dir/rs/metrics.csv" | cut -d, -f1)" = 12 ] && [ -f "$dir/rs/samples/step-12.png" ]'
mkdir -p "$dir/sl/dangling" "$dir/sl/tofile" "$dir/sl/tofolder" "$dir/sl/sheets" && echo mine > "$dir/sl/file"
ln -s ../nothing "$dir/sl/dangling/samples" && ln -s ../file "$dir/sl/tofile/samples" && ln -s ../sheets "$dir/sl/tofolder/samples"
"$VITMAE" train $small --data "$dir/work/data" --steps 2 --out "$dir/sl/dangling" > /dev/null 2>"$dir/err"; rc=$?
t "a new run whose --out holds samples, a link to nothing: exit 1, one line naming it, no step trained ($rc: $(cat "$dir/err"); $(ls -A "$dir/sl/dangling" | tr "\n" " "))" \
  '[ $rc -eq 1 ] && [ "$(cat "$dir/err")" = "vitmae: train --out: $dir/sl/dangling/samples: a symbolic link to ../nothing, which does not exist: the sample sheets go into a folder of this name (move the link away)" ] &&
   [ "$(ls -A "$dir/sl/dangling")" = samples ] && [ ! -e "$dir/sl/nothing" ]'
"$VITMAE" train $small --data "$dir/work/data" --steps 2 --out "$dir/sl/tofile" > /dev/null 2>"$dir/err"; rc=$?
t "... samples a link to a file: exit 1, one line, the file as it was ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$dir/err")" = "vitmae: train --out: $dir/sl/tofile/samples: not a folder: the sample sheets go into a folder of this name (move the link away)" ] &&
   [ "$(ls -A "$dir/sl/tofile")" = samples ] && [ "$(cat "$dir/sl/file")" = mine ]'
"$VITMAE" train $small --data "$dir/work/data" --steps 2 --out "$dir/sl/tofolder" > /dev/null 2>"$dir/err"; rc=$?
t "... samples a link to a folder: the run goes on, its sheets in the link's target ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ -L "$dir/sl/tofolder/samples" ] && [ -f "$dir/sl/sheets/step-2.png" ]'
# A run that cannot start leaves no --store folder of its own (docs/data.md, "Cache, store and
# prefetch"): an --out below a file failed after the store was made and the pixel statistics had
# decoded 37 working images into it, which stayed; a failure after the statistics (the model out of
# memory: the shim fails each allocation of the parameters' size) left them too. A store folder that
# was there stays, with the user's file, and the --out is checked before any image goes into it.
: > "$dir/sfile"
"$VITMAE" train $small --data "$dir/work/data" --steps 2 --store "$dir/st1/s2" --out "$dir/sfile/run" > /dev/null 2>"$dir/err"; rc=$?
t "train --out below a file with a new --store folder: exit 1, one line, no store folder left ($rc: $(cat "$dir/err"); $(find "$dir/st1" 2>&1 | wc -l) paths)" \
  '[ $rc -eq 1 ] && [ "$(cat "$dir/err")" = "vitmae: train --out: $dir/sfile/run: Not a directory" ] && [ ! -e "$dir/st1" ]'
mkdir -p "$dir/stkeep" && echo mine > "$dir/stkeep/mine.txt"
"$VITMAE" train $small --data "$dir/work/data" --steps 2 --store "$dir/stkeep" --out "$dir/sfile/run" > /dev/null 2>"$dir/err"; rc=$?
t "... a --store folder that was there: kept as it was, no working image decoded into it ($rc: $(ls -A "$dir/stkeep" | tr "\n" " "))" \
  '[ $rc -eq 1 ] && [ "$(ls -A "$dir/stkeep")" = mine.txt ] && [ "$(cat "$dir/stkeep/mine.txt")" = mine ]'
params=$(sed -n 's/.*"parameters":[[:space:]]*\([0-9]*\).*/\1/p' "$dir/r/config.json")
oom_train() {   # oom_train STORE [RUN]: a run whose every allocation of the parameters' size fails
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0" FAULT_OWN=1 FAULT_MIN=$((4 * params)) FAULT_MAX=$((4 * params)) \
    FAULT_FUNC=calloc FAULT_N=1+ LD_PRELOAD="$VITMAE_TOOLS/fault.so" \
    "$VITMAE" train $small --data "$dir/work/data" --steps 2 --store "$1" --out "${2:-$dir/st2run}" > /dev/null 2>"$dir/err"; rc=$?
}
oom_train "$dir/st2/s2"
t "train out of memory for the model after the statistics: exit 1, no run folder, no store folder left ($rc: $(cat "$dir/err"); $(find "$dir/st2" 2>&1 | wc -l) paths)" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: train: out of memory" "$dir/err" && [ ! -e "$dir/st2run" ] && [ ! -e "$dir/st2" ]'
oom_train "$dir/stkeep"
t "... a --store folder that was there stays, with the user's file ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: train: out of memory" "$dir/err" && [ ! -e "$dir/st2run" ] && [ "$(cat "$dir/stkeep/mine.txt")" = mine ]'
# The store inside the new run folder (docs/data.md: it may lie there): the run folder was removed first,
# while the store still filled it, and stayed behind, empty, with the folders made above it.
oom_train "$dir/st3/run/store" "$dir/st3/run"
t "... a --store inside the new run folder: neither left, nor the folder made above ($rc: $(find "$dir/st3" 2>&1 | wc -l) paths)" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: train: out of memory" "$dir/err" && [ ! -e "$dir/st3" ]'
# A --store at one of the run's own names in its run folder (docs/interface.md, "Paths that meet") was
# taken: a store at RUN/checkpoint.safetensors failed the run after step 1 ("rename failed: Is a
# directory (previous file left intact)", with no previous file), one at RUN/curves.png at step 0 with a
# bare "Is a directory", leaving config.json and metrics.csv. Now refused before anything is made, exit
# 2, one line; a store of another name in the run folder (RUN/store, above) still runs.
for name in checkpoint.safetensors curves.png samples/x; do
  rm -rf "$dir/sto"
  "$VITMAE" train $small --data "$dir/work/data" --steps 4 --store "$dir/sto/r4/$name" --out "$dir/sto/r4" > "$dir/out" 2>"$dir/err"; rc=$?
  case $name in checkpoint.safetensors) say="is where the run writes its checkpoint" ;;
    curves.png) say="is where the run writes its curves.png" ;;
    *) say="is inside $dir/sto/r4/samples, where the run writes its sample sheets" ;; esac
  t "train --store RUN/$name: exit 2 before the run, one line, nothing made ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --store: $dir/sto/r4/$name $say; choose another folder" ] &&
     [ ! -s "$dir/out" ] && [ ! -e "$dir/sto" ]'
done
# ... on a resume too, also named through a link to the run folder, the run left as it was.
ls -l "$dir/r" > "$dir/before" && ln -s r "$dir/rlink"
"$VITMAE" train --resume "$dir/r" --steps 12 --store "$dir/rlink/checkpoint-12.safetensors" > "$dir/out" 2>"$dir/err"; rc=$?
t "train --resume with --store at a snapshot's name through a link: exit 2, one line, the run untouched ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --store: $dir/rlink/checkpoint-12.safetensors is $dir/r/checkpoint-12.safetensors, where the run writes its snapshot of step 12; choose another folder" ] &&
   [ ! -s "$dir/out" ] && ls -l "$dir/r" | cmp -s - "$dir/before"'
rm "$dir/rlink"
"$VITMAE" finetune --ckpt "$dir/r" --data "$dir/work/data" --steps 2 --batch 8 --threads 2 --store "$dir/sto/f/metrics.csv" --out "$dir/sto/f" > "$dir/out" 2>"$dir/err"; rc=$?
t "finetune --store RUN/metrics.csv: exit 2, one line, nothing made ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: finetune --store: $dir/sto/f/metrics.csv is where the run writes its metrics.csv; choose another folder" ] &&
   [ ! -s "$dir/out" ] && [ ! -e "$dir/sto" ]'
"$VITMAE" train --resume "$dir/r" --batch 4 > /dev/null 2>"$dir/err"; rc=$?
t "--batch on resume refused, naming both values ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: train --resume: --batch 4 cannot change when a run resumes (this run.s is 8); start a new run from these weights with --init CHECKPOINT$" "$dir/err"'
# The run's own command line with --resume added: the flags that decide the weights, given at the run's
# own values (compared as parsed: --lr 0.0001 is the run's 1e-4, --blr 0.0032 works out to it at batch
# 8, --preset tiny under the shape flags is its model; --channels auto and --pixel-norm dataset, the
# defaults, as the same images make them), were refused all the same. Now the run goes on, bitwise as the
# uninterrupted one; another value is refused naming both (a float as the run stores it).
"$VITMAE" train $small --data "$dir/work/data" --lr 1e-4 --steps 4 --ckpt-every 2 --keep 2 --out "$dir/own" > /dev/null 2>&1
"$VITMAE" train --resume "$dir/own/checkpoint-2.safetensors" $small --data "$dir/work/data" --lr 0.0001 --blr 0.0032 \
  --preset tiny --mask-ratio 0.75 --seed 0 --augment crop --pos learned --channels auto --pixel-norm dataset --steps 4 \
  --out "$dir/own2" > /dev/null 2> "$dir/err"; rc=$?
t "resume given the run's own weight flags: runs, bitwise as uninterrupted ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ ! -s "$dir/err" ] && same_weights "$dir/own/checkpoint.safetensors" "$dir/own2/checkpoint.safetensors"'
"$VITMAE" train --resume "$dir/own/checkpoint-2.safetensors" --lr 2e-4 --out "$dir/own3" > /dev/null 2> "$dir/err"; rc=$?
t "resume given another --lr: refused naming both ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume: --lr 0.0002 cannot change when a run resumes (this run'"'"'s is 0.0001); start a new run from these weights with --init CHECKPOINT" ] && [ ! -e "$dir/own3" ]'
# The encoder's shape flags at another value than the run's (--img 16 --patch 4 --dim 32 --depth 1
# --heads 2, --channels 3): refused naming both, nothing made.
for f in "--img 32" "--patch 8" "--dim 64" "--depth 2" "--heads 4" "--channels 1"; do
  "$VITMAE" train --resume "$dir/own/checkpoint-2.safetensors" $f --out "$dir/own3" > /dev/null 2> "$dir/err"; rc=$?
  t "resume given another $f: refused naming both ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume: $f cannot change when a run resumes (this run.s is [0-9]*); another is a new run from scratch (no --resume or --init)$" "$dir/err" && [ ! -e "$dir/own3" ]'
done
# ... and the decoder's: --init keeps the model as it is too, so its advice (given before) was refused
# next; a new shape is a new run from scratch.
for f in "--dec-dim 64" "--dec-depth 0" "--dec-heads 4"; do
  "$VITMAE" train --resume "$dir/own/checkpoint-2.safetensors" $f --out "$dir/own3" > /dev/null 2> "$dir/err"; rc=$?
  t "resume given another $f: refused, a new run from scratch the way ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume: $f cannot change when a run resumes (this run.s is [0-9]*); another is a new run from scratch (no --resume or --init)$" "$dir/err" && [ ! -e "$dir/own3" ]'
done
# --preset tiny (the default) alone on a run started with shape flags over it: the user changed nothing,
# but was told "--preset tiny cannot change when a run resumes (it decides the weights)". Now the size it
# sets that is not the run's is named, with the run's values that go with it (given, the resume goes on:
# the run's own weight flags above).
"$VITMAE" train --resume "$dir/own/checkpoint-2.safetensors" --preset tiny --out "$dir/own3" > /dev/null 2> "$dir/err"; rc=$?
t "resume given --preset tiny alone over a run of shape flags: the size named, and the run's flags ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume: --preset tiny sets --dim 192, which disagrees with this run'"'"'s 32 (a resume keeps the run'"'"'s model): leave --preset out, or give it with the run'"'"'s --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2; another is a new run from scratch (no --resume or --init)" ] && [ ! -e "$dir/own3" ]'
# --pixel-norm and --channels auto follow the data, so they were refused whatever they said. Now they are
# compared by value once the images are read: statistics the run did not use (ImageNet's; those of other
# images, measured) and another channel count (RGB images for a grey run) are refused naming both.
"$VITMAE" train --resume "$dir/own/checkpoint-2.safetensors" --pixel-norm imagenet --out "$dir/own3" > /dev/null 2> "$dir/err"; rc=$?
t "resume given --pixel-norm imagenet of a measured run: refused naming both ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume: --pixel-norm imagenet cannot change when a run resumes (this run.s is mean ([0-9.]*, [0-9.]*, [0-9.]*), std ([0-9.]*, [0-9.]*, [0-9.]*)); leave --pixel-norm out to keep the run.s; another is a new run from scratch (no --resume or --init)$" "$dir/err" && [ ! -e "$dir/own3" ]'
"$VITMAE_TOOLS/synth" "$dir/otherimg" --count 40 --size 16 --seed 7 > /dev/null
"$VITMAE" train --resume "$dir/own/checkpoint-2.safetensors" --data "$dir/otherimg" --pixel-norm dataset --out "$dir/own3" > /dev/null 2> "$dir/err"; rc=$?
t "resume given --pixel-norm dataset on other images: refused, both measured values named ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume: --pixel-norm dataset (mean (.*), std (.*) on these images) cannot change when a run resumes (this run.s is mean (.*), std (.*)); leave --pixel-norm out" "$dir/err" && [ ! -e "$dir/own3" ]'
"$VITMAE_TOOLS/synth" "$dir/grey" --count 40 --size 16 --seed 3 --grey > /dev/null
"$VITMAE" train $small --data "$dir/grey" --pixel-norm imagenet --steps 2 --ckpt-every 1 --out "$dir/greyrun" > /dev/null 2>&1
"$VITMAE" train --resume "$dir/greyrun/checkpoint-1.safetensors" --channels auto --pixel-norm imagenet --out "$dir/grey2" > /dev/null 2> "$dir/err"; rc=$?
t "a grey run resumed given its own --channels auto --pixel-norm imagenet: runs, bitwise ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && same_weights "$dir/greyrun/checkpoint.safetensors" "$dir/grey2/checkpoint.safetensors"'
"$VITMAE" train --resume "$dir/greyrun/checkpoint-1.safetensors" --data "$dir/otherimg" --channels auto --out "$dir/grey3" > /dev/null 2> "$dir/err"; rc=$?
t "a grey run resumed on RGB images given --channels auto: refused naming both ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume: --channels auto (3 for these images) cannot change when a run resumes (this run'"'"'s is 1); leave --channels out to keep the run'"'"'s; another is a new run from scratch (no --resume or --init)" ] && [ ! -e "$dir/grey3" ]'
# ... and that advice followed: the grey run goes on, reading the RGB images as grey.
"$VITMAE" train --resume "$dir/greyrun/checkpoint-1.safetensors" --data "$dir/otherimg" --out "$dir/grey3" > /dev/null 2> "$dir/err"; rc=$?
t "... --channels left out, as the line says: the run goes on ($rc: $(cat "$dir/err"))" '[ $rc -eq 0 ] && [ -s "$dir/grey3/checkpoint.safetensors" ]'
rm -rf "$dir/grey3"
"$VITMAE" train --resume "$dir/greyrun/checkpoint-1.safetensors" --pixel-norm none --out "$dir/grey3" > /dev/null 2> "$dir/err"; rc=$?
t "a grey run resumed given --pixel-norm none: refused, the run's named imagenet ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume: --pixel-norm none cannot change when a run resumes (this run'"'"'s is imagenet); leave --pixel-norm out to keep the run'"'"'s; another is a new run from scratch (no --resume or --init)" ] && [ ! -e "$dir/grey3" ]'
# A run that holds out --val-frac of its folder: a --val folder on resume would give those images back
# to training (another run): refused.
"$VITMAE" train --resume "$dir/r" --steps 10 --val "$dir/moved" > /dev/null 2>"$dir/err"; rc=$?
t "--val added on resume refused" '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume .*: --val cannot be added when a run resumes" "$dir/err"'
# A run of --val-frac 0 held nothing out: its refusal said "holds out --val-frac 0 of its folder; a --val
# folder would give those images back to training", images there are none of.
"$VITMAE" train $small --data "$dir/work/data" --val-frac 0 --steps 2 --out "$dir/nv" > /dev/null 2>&1
"$VITMAE" train --resume "$dir/nv" --steps 4 --val "$dir/moved" > /dev/null 2>"$dir/err"; rc=$?
t "--val added on resume of a --val-frac 0 run: refused, saying it has no validation ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume .*: --val cannot be added when a run resumes (the run has no validation: it started with --val-frac 0 and no --val)$" "$dir/err"'
# --val DIR with --val-frac F: --val-frac was ignored without a word (every --data image trained, as
# with --val alone); now refused before anything is written (docs/data.md, "Validation"), a new run's
# folder (--out, or the default runs/...) not made; on a resume too. A run on a --val folder resumed
# with --val-frac is refused as every flag that decides the weights is, and the reverse (above) as --val
# added; the run folder is left as it was.
pair="^vitmae: train --val-frac: give --val DIR or --val-frac F, not both: with --val DIR every image of --data trains and --val-frac would be ignored$"
"$VITMAE_TOOLS/synth" "$dir/vval" --count 6 --size 16 --seed 8 > /dev/null
"$VITMAE" train $base --data "$dir/work/data" --val "$dir/vval" --val-frac 0.1 --steps 2 --out "$dir/pair" > "$dir/out" 2> "$dir/err"; rc=$?
t "train --val with --val-frac: exit 2, one line naming both ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "$pair" "$dir/err"'
t "train --val with --val-frac: nothing written" '[ ! -e "$dir/pair" ] && [ ! -s "$dir/out" ]'
mkdir -p "$dir/pairdefault"
(cd "$dir/pairdefault" && "$VITMAE" train $base --data "$dir/work/data" --val-frac 0 --val "$dir/vval" --steps 2 > /dev/null 2> "$dir/err"); rc=$?
t "train --val-frac 0 with --val, no --out: exit 2, no runs/ folder made ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -q "$pair" "$dir/err" && [ -z "$(ls -A "$dir/pairdefault")" ]'
"$VITMAE" train $base --data "$dir/work/data" --val "$dir/vval" --steps 2 --out "$dir/vrun" > /dev/null 2>&1; rc=$?
t "a run on a --val folder" '[ $rc -eq 0 ] && [ -s "$dir/vrun/checkpoint.safetensors" ]'
before=$(ls -lR --time-style=full-iso "$dir/vrun" "$dir/r"; cksum "$dir/vrun"/* "$dir/r"/* 2> /dev/null)
"$VITMAE" train --resume "$dir/vrun" --steps 4 --val-frac 0.1 > "$dir/out" 2> "$dir/err"; rc=$?
t "--val-frac on resume of a --val run: exit 2, one line ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume: --val-frac: this run validates on its --val folder (.*/vval), holding nothing out of --data; leave --val-frac out$" "$dir/err" && [ ! -s "$dir/out" ]'
"$VITMAE" train --resume "$dir/vrun" --steps 4 --val "$dir/vval" --val-frac 0.1 > "$dir/out" 2> "$dir/err"; rc=$?
t "--val with --val-frac on resume: exit 2, the pair's line ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "$pair" "$dir/err" && [ ! -s "$dir/out" ]'
"$VITMAE" train --resume "$dir/r" --steps 10 --val "$dir/vval" --val-frac 0.2 > "$dir/out" 2> "$dir/err"; rc=$?
t "--val with --val-frac on resume of a --val-frac run: exit 2, the pair's line ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "$pair" "$dir/err"'
"$VITMAE" train --resume "$dir/r" --steps 10 --val "$dir/vval" > /dev/null 2> "$dir/err"
after=$(ls -lR --time-style=full-iso "$dir/vrun" "$dir/r"; cksum "$dir/vrun"/* "$dir/r"/* 2> /dev/null)
t "the refused resumes left both run folders as they were" '[ "$before" = "$after" ]'
"$VITMAE" train --resume "$dir/r" --steps 10 --overwrite > /dev/null 2>"$dir/err"; rc=$?
t "--overwrite with --resume refused" '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --overwrite: .*cannot be combined with --resume" "$dir/err"'
mv "$dir/work/data" "$dir/moved"
"$VITMAE" train --resume "$dir/r" --steps 10 > /dev/null 2>"$dir/err"; rc=$?
t "data gone: exit 2 naming the folder, why and --data ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "data folder .*/work/data is gone (No such file or directory); pass --data DIR$" "$dir/err"'
# The same of a --val run's validation folder (its line had no test).
mv "$dir/vval" "$dir/vval.moved"
"$VITMAE" train --resume "$dir/vrun" --steps 4 --data "$dir/moved" > /dev/null 2>"$dir/err"; rc=$?
t "validation folder gone: exit 2 naming the folder, why and --val ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "validation folder $dir/vval is gone (No such file or directory); pass --val DIR$" "$dir/err"'
mv "$dir/vval.moved" "$dir/vval"
"$VITMAE" train --resume "$dir/r" --steps 10 --data "$dir/moved" --threads 2 > /dev/null 2>"$dir/err"; rc=$?
t "resume with --data at the new place" '[ $rc -eq 0 ]'

# 4. --init: a new run from a checkpoint's weights; its model config comes along; shapes must agree.
"$VITMAE" train --init "$dir/first.safetensors" --data "$dir/moved" --steps 3 --batch 8 --threads 2 --out "$dir/init" > "$dir/log" 2>&1; rc=$?
t "--init exits 0" '[ $rc -eq 0 ]'
t "--init keeps the model (dim 32)" '"$VITMAE" info "$dir/init/checkpoint.safetensors" --json | grep -q "\"embed_dim\":[[:space:]]*32"'
t "--init starts at step 0 of its own run" '[ "$(tail -n 1 "$dir/init/metrics.csv" | cut -d, -f1)" = 3 ]'
# --init RUN/checkpoint.safetensors --out RUN --overwrite: the start line names where the checkpoint
# is once the old run has moved aside (it named RUN/checkpoint.safetensors, the new run's file).
# A data folder whose name is not UTF-8: the checkpoint keeps it with U+FFFD, so a resume cannot find
# it by that name; it said the folder "is gone (No such file or directory)", which it is not.
nu="$dir/$(printf 'fot\351s')"; mkdir -p "$nu" && cp -r "$dir/moved/." "$nu/"
"$VITMAE" train $small --data "$nu" --steps 2 --out "$dir/nurun" > /dev/null 2>&1
"$VITMAE" train --resume "$dir/nurun" --steps 3 > /dev/null 2> "$dir/err"; rc=$?
"$VITMAE" train --resume "$dir/nurun" --steps 3 --data "$nu" > /dev/null 2>&1; rc2=$?
t "a data folder named in bytes that are not UTF-8: the resume says its name cannot find it, not gone; --data goes on ($rc $rc2: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ $rc2 -eq 0 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/nurun: the run'"'"'s data folder $dir/fot$(printf "\357\277\275")s is not found (its name is not UTF-8: the checkpoint keeps U+FFFD for the bytes that are not, so it cannot find the folder by it); pass --data DIR" ]'
rm -rf "$nu" "$dir/nurun"
# Without --overwrite: refused, the ways named being those that go with --init (it advised `pass --resume
# RUN to continue it`, refused with --init next).
"$VITMAE" train --init "$dir/init/checkpoint.safetensors" --data "$dir/moved" --steps 1 --batch 8 --threads 2 \
  --out "$dir/init" > /dev/null 2> "$dir/err"; rc=$?
t "--init into a run folder, no --overwrite: exit 2, no --resume advised ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --out $dir/init: the folder already holds a run; a new run from --init weights goes to another --out folder, or pass --overwrite to move the old run aside (to $dir/init.old-N)" ]'
"$VITMAE" train --init "$dir/init/checkpoint.safetensors" --data "$dir/moved" --steps 1 --batch 8 --threads 2 \
  --out "$dir/init" --overwrite > "$dir/log" 2>&1; rc=$?
t "--init inside the run --overwrite moves: the start line names it where it is now ($rc: $(grep "^vitmae train" "$dir/log"))" \
  '[ $rc -eq 0 ] && grep -q "^vitmae train: .* model $dir/init.old-1/checkpoint.safetensors " "$dir/log"'
# Every model flag --init refuses names the way on, resume's for the model (docs/interface.md, section
# 5): the line ended "(--init keeps its model)", and --pixel-norm "... the checkpoint's pixel
# statistics", with nowhere to go.
scratch_way="another is a new run from scratch (no --resume or --init)"
for f in "--img 32|16" "--patch 8|4" "--channels 1|3" "--dim 64|32" "--depth 2|1" "--heads 4|2" "--dec-dim 64|32" \
         "--dec-depth 2|1" "--dec-heads 4|2"; do
  "$VITMAE" train --init "$dir/first.safetensors" --data "$dir/moved" ${f%|*} --out "$dir/init2" > /dev/null 2>"$dir/err"; rc=$?
  t "--init with another ${f%|*}: exit 2, one line with the way on, no folder ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --init $dir/first.safetensors: ${f%|*} disagrees with the checkpoint'"'"'s ${f#*|} (--init keeps its model); $scratch_way" ] && [ ! -e "$dir/init2" ]'
done
"$VITMAE" train --init "$dir/first.safetensors" --data "$dir/moved" --preset base --out "$dir/init3" > /dev/null 2>"$dir/err"; rc=$?
t "--init with another --preset names the preset, its value and the way on ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --init $dir/first.safetensors: --preset base sets --dim 768, which disagrees with the checkpoint'"'"'s 32 (--init keeps its model); $scratch_way" ]'
"$VITMAE" train --init "$dir/first.safetensors" --data "$dir/moved" --pixel-norm none --out "$dir/init3" > /dev/null 2>"$dir/err"; rc=$?
t "--init with --pixel-norm: refused with the ways on ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --init $dir/first.safetensors: --pixel-norm cannot change: the weights were trained with the checkpoint'"'"'s pixel statistics; leave --pixel-norm out to keep them; $scratch_way" ] && [ ! -e "$dir/init3" ]'
# A shape flag that the default preset's heads do not divide was checked against the preset before the
# checkpoint: "train: embed_dim 8 is not divisible by num_heads 3", heads the --init run never has.
"$VITMAE" train --init "$dir/first.safetensors" --data "$dir/moved" --dim 8 --out "$dir/init4" > /dev/null 2>"$dir/err"; rc=$?
t "--init with a --dim the preset's heads do not divide: the disagreement ($(cat "$dir/err"))" '[ $rc -eq 2 ] && grep -q "^vitmae: train --init .*: --dim 8 disagrees with the checkpoint.s 32" "$dir/err"'
"$VITMAE" train --init "$dir/first.safetensors" --resume "$dir/r" > /dev/null 2>&1; rc=$?
t "--init with --resume: exit 2" '[ $rc -eq 2 ]'
# An encoder-only checkpoint (no decoder tensors, as MAE's released pretrain files; docs/interface.md
# section 4, "Loading") has nothing to start a decoder from: refused in one line, no run folder.
"$VITMAE" train --init "$VITMAE_ROOT/tests/fixtures/torch_small_encoder.safetensors" --data "$dir/moved" --steps 1 \
  --out "$dir/init5" > /dev/null 2>"$dir/err"; rc=$?
t "--init of an encoder-only checkpoint: exit 1, one line, no run folder ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(grep -vc "^vitmae: warning" "$dir/err")" -eq 1 ] && grep -q "^vitmae: .*/torch_small_encoder.safetensors: has no decoder weights; --init needs a full MAE checkpoint$" "$dir/err" && [ ! -e "$dir/init5" ]'
# The weights really come from the checkpoint: --init with lr 0 (and no decay) keeps them bit for bit.
"$VITMAE" train --init "$dir/first.safetensors" --data "$dir/moved" --steps 1 --batch 8 --lr 0 --wd 0 --threads 2 --out "$dir/init0" > /dev/null 2>&1
t "--init --lr 0: the checkpoint's weights" 'python3 -c "
import sys, struct, json
def params(p):
    b = open(p, \"rb\").read(); n = struct.unpack(\"<Q\", b[:8])[0]; h = json.loads(b[8:8 + n]); d = b[8 + n:]
    return {k: d[v[\"data_offsets\"][0]:v[\"data_offsets\"][1]] for k, v in h.items() if k != \"__metadata__\" and not k.startswith(\"optimizer.\")}
a, b = params(sys.argv[1]), params(sys.argv[2]); sys.exit(0 if a == b and len(a) > 10 else 1)" "$dir/first.safetensors" "$dir/init0/checkpoint.safetensors"'
# The training targets with --init (docs/data.md, "Run folders"): left out, each is the checkpoint's, as
# --norm-pix and --pos were and --mask-ratio was not (a checkpoint trained at 0.6 went on at the default
# 0.75, said only by the start line's "mask 0.75"); --no-norm-pix turns a norm-pix checkpoint's loss off,
# which train had no way to do.
# targets CKPT: "mask_ratio norm_pix_loss pos_embed" of CKPT's config.
targets() { "$VITMAE" info "$1" --json | python3 -c 'import json, sys; c = json.load(sys.stdin)["config"]; print(c["mask_ratio"], str(c["norm_pix_loss"]).lower(), c["pos_embed"])'; }
"$VITMAE" train --data "$dir/moved" ${base#--data data } --steps 1 --norm-pix --pos fixed --mask-ratio 0.6 --out "$dir/np" > /dev/null 2>&1
"$VITMAE" train --init "$dir/np" --data "$dir/moved" --steps 1 --batch 8 --threads 2 --out "$dir/np-keep" > "$dir/log" 2>&1; rc=$?
t "--init, no target flags: the checkpoint's mask ratio, norm-pix and pos ($rc: $(targets "$dir/np-keep/checkpoint.safetensors"); $(grep -o "mask [0-9.]*" "$dir/log"))" \
  '[ $rc -eq 0 ] && [ "$(targets "$dir/np-keep/checkpoint.safetensors")" = "0.6 true fixed" ] && grep -q ", mask 0.6, " "$dir/log"'
"$VITMAE" train --init "$dir/np" --data "$dir/moved" --steps 1 --batch 8 --threads 2 --no-norm-pix --out "$dir/np-off" > "$dir/log" 2>&1; rc=$?
t "--init --no-norm-pix: the norm-pix loss off, the mask ratio still the checkpoint's ($rc: $(tail -n 1 "$dir/log"))" \
  '[ $rc -eq 0 ] && [ "$(targets "$dir/np-off/checkpoint.safetensors")" = "0.6 false fixed" ]'
"$VITMAE" train --init "$dir/np" --data "$dir/moved" --steps 1 --batch 8 --threads 2 --mask-ratio 0.5 --pos learned --out "$dir/np-new" > "$dir/log" 2>&1; rc=$?
t "--init with --mask-ratio and --pos: the values given ($rc: $(tail -n 1 "$dir/log"))" \
  '[ $rc -eq 0 ] && [ "$(targets "$dir/np-new/checkpoint.safetensors")" = "0.5 true learned" ]'
"$VITMAE" train --init "$dir/np" --data "$dir/moved" --norm-pix --no-norm-pix --out "$dir/np-both" > /dev/null 2>"$dir/err"; rc=$?
t "--norm-pix with --no-norm-pix: exit 2, one line, no folder ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --no-norm-pix: give --norm-pix or --no-norm-pix, not both" ] && [ ! -e "$dir/np-both" ]'
# On --resume, --no-norm-pix is the run's own only where it had no norm-pix loss (as --norm-pix the reverse).
"$VITMAE" train --resume "$dir/np" --no-norm-pix --steps 2 --threads 2 > /dev/null 2>"$dir/err"; rc=$?
t "--resume of a norm-pix run with --no-norm-pix: exit 2, the way on ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume: --no-norm-pix cannot change when a run resumes (it decides the weights); start a new run from these weights with --init CHECKPOINT" ] && [ "$(saved_step "$dir/np/checkpoint.safetensors")" = 1 ]'
"$VITMAE" train --resume "$dir/np-off" --no-norm-pix --steps 2 --threads 2 > /dev/null 2>"$dir/err"; rc=$?
t "--resume of a run without norm-pix given --no-norm-pix: its own, it goes on ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(saved_step "$dir/np-off/checkpoint.safetensors")" = 2 ]'
# A checkpoint whose mask_ratio removes no patch (tools/convert_mae.py takes 0): said as the checkpoint's.
"$VITMAE_TOOLS/mkckpt" ckpt "$dir/r0.st" --img 16 --patch 4 --channels 3 --mask-ratio 0 || fail=1
"$VITMAE" train --init "$dir/r0.st" --data "$dir/moved" --steps 1 --out "$dir/r0run" > /dev/null 2>"$dir/err"; rc=$?
t "--init of a checkpoint at mask_ratio 0, no --mask-ratio: exit 2, the checkpoint's ratio named ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --init $dir/r0.st: the checkpoint'"'"'s mask_ratio 0 removes no patch of 16 (the loss is over removed patches); give --mask-ratio R" ] && [ ! -e "$dir/r0run" ]'

# Resuming a checkpoint of another run into a run folder would mix the two runs: refused, exit 2, the
# folder's run untouched; a copy of the folder's own checkpoint still resumes there.
"$VITMAE" train $small --data "$dir/moved" --steps 6 --seed 7 --out "$dir/seven" > /dev/null 2>&1
mkdir -p "$dir/mix" && cp "$dir/first.safetensors" "$dir/mix/checkpoint.safetensors"
cp "$dir/seven/checkpoint.safetensors" "$dir/mix/other.safetensors"
"$VITMAE" train --resume "$dir/mix/other.safetensors" --data "$dir/moved" --steps 8 > /dev/null 2>"$dir/err"; rc=$?
t "another run's checkpoint into a run folder: exit 2, one line ($(head -n 1 "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume .*other.safetensors: not a checkpoint of the run in .*mix (another run: its run_id differs from that of .*mix/checkpoint.safetensors)" "$dir/err"'
t "another run's checkpoint: the folder's run untouched" 'cmp -s "$dir/mix/checkpoint.safetensors" "$dir/first.safetensors" && [ ! -e "$dir/mix/metrics.csv" ]'
# Runs from before run ids: told apart by their model, seed and batch.
rm -rf "$dir/mix0" && mkdir -p "$dir/mix0"
for pair in "first.safetensors mix0/checkpoint.safetensors" "seven/checkpoint.safetensors mix0/other.safetensors"; do
  python3 - "$dir/${pair% *}" "$dir/${pair#* }" <<'PY'
import sys, struct, json
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
st = json.loads(h["__metadata__"]["train_state"]); del st["run_id"]; h["__metadata__"]["train_state"] = json.dumps(st)
hb = json.dumps(h).encode(); open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
done
"$VITMAE" train --resume "$dir/mix0/other.safetensors" --data "$dir/moved" --steps 8 > /dev/null 2>"$dir/err"; rc=$?
t "a run from before run ids: another seed is another run (exit 2: $(head -n 1 "$dir/err"))" '[ $rc -eq 2 ] && grep -q "not a checkpoint of the run in .*mix0 (its model, seed or batch differ from" "$dir/err"'
# The default cadence is a tenth of the run rounded up: a 12-step run evaluated, drew and saved at every
# step (a tenth rounded down, at least 1). Extended on resume, a default cadence follows the new total
# (it stayed at every step: a trial extended to 100,000 steps would write 100,000 sheets); a given one
# stays.
"$VITMAE" train $small --data "$dir/moved" --steps 12 --keep 0 --out "$dir/cad" > /dev/null 2>&1
"$VITMAE" train $small --data "$dir/moved" --steps 12 --keep 0 --sample-every 3 --out "$dir/cad3" > /dev/null 2>&1
sheets=$(ls "$dir/cad/samples" | tr "\n" " ")
"$VITMAE" train --resume "$dir/cad" --steps 50 > /dev/null 2>&1; r1=$?
"$VITMAE" train --resume "$dir/cad3" --steps 50 > /dev/null 2>&1; r2=$?
cad=$(python3 -c 'import json, sys
for p in sys.argv[1:]:
    t = json.load(open(p))["train"]; print(t["eval_every"], t["ckpt_every"], t["sample_every"], end=" ")' "$dir/cad/config.json" "$dir/cad3/config.json")
t "12 steps: sheets at 2, 4, ..., 12; extended to 50: every 5; --sample-every 3 kept ($r1 $r2: $sheets; $cad)" \
  '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ "$sheets" = "step-10.png step-12.png step-2.png step-4.png step-6.png step-8.png " ] &&
   [ "$cad" = "5 5 5 5 5 3 " ] && [ -e "$dir/cad/samples/step-15.png" ] && [ ! -e "$dir/cad/samples/step-14.png" ]'
# A resume from an earlier snapshot drops metrics.csv's rows past it as it starts; killed before it got
# back (here: the rows cut as it leaves them), `--resume RUN` went on from the latest checkpoint and the
# rows between were lost for good, `info` silent. Refused now, naming the snapshot that writes them again;
# info warns the same; and a config.json cut short is named by info (it said nothing).
"$VITMAE" train $small --data "$dir/moved" --steps 12 --log-every 2 --keep 3 --out "$dir/gap" > /dev/null 2>&1
python3 -c 'import sys
p = sys.argv[1]; rows = open(p).read().splitlines(True)
open(p, "w").write("".join(r for r in rows if r.startswith("step") or int(r.split(",")[0]) <= 8))' "$dir/gap/metrics.csv"
cp "$dir/gap/metrics.csv" "$dir/gap.csv"
"$VITMAE" train --resume "$dir/gap" --steps 14 > /dev/null 2>"$dir/err"; rc=$?
"$VITMAE" info "$dir/gap" > /dev/null 2>"$dir/err2"; rc2=$?
t "metrics.csv cut at step 8 behind the checkpoint's 12: --resume RUN refused naming checkpoint-8, info warns ($rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && cmp -s "$dir/gap/metrics.csv" "$dir/gap.csv" &&
   grep -q "^vitmae: train --resume .*/gap: .*/gap/metrics.csv ends at step 8, before this checkpoint.s step 12 (a resume from an earlier snapshot stopped before it got back here); going on from step 12 would lose the rows between for good; resume the snapshot instead, --resume .*/gap/checkpoint-8.safetensors, which writes them again$" "$dir/err" &&
   [ $rc2 -eq 0 ] && grep -q "^vitmae: warning: .*/gap/metrics.csv ends at step 8, before this checkpoint.s step 12 (.*); train --resume .*/gap/checkpoint-8.safetensors writes the rows between again$" "$dir/err2"'
# --out of that folder advised --resume RUN, refused as above: it names the snapshot. Without
# checkpoint.safetensors, the advice named the newest snapshot (checkpoint-12) and its resume dropped
# the rows between as silently (only the latest was checked): the advice names checkpoint-8, and
# checkpoint-12 resumed by name is refused naming it.
"$VITMAE" train $small --data "$dir/moved" --steps 4 --out "$dir/gap" > /dev/null 2>"$dir/err"; rc=$?
t "--out of it names checkpoint-8 ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: train --out .*/gap: the folder already holds a run; pass --resume .*/gap/checkpoint-8.safetensors to continue it, " "$dir/err"'
cp -r "$dir/gap" "$dir/gapx" && rm "$dir/gapx/checkpoint.safetensors"
"$VITMAE" train --resume "$dir/gapx" > /dev/null 2>"$dir/err"; rc=$?
"$VITMAE" train --resume "$dir/gapx/checkpoint-12.safetensors" > /dev/null 2>"$dir/err2"; rc2=$?
t "no checkpoint.safetensors, its newest snapshot past the log's end: the advice names the one within, that one refused ($rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/gapx: no checkpoint.safetensors in the folder; resume its newest snapshot within metrics.csv'"'"'s rows with --resume $dir/gapx/checkpoint-8.safetensors (a later one would lose the rows between for good)" ] &&
   [ $rc2 -eq 2 ] && grep -q "^vitmae: train --resume .*/gapx/checkpoint-12.safetensors: .*/gapx/metrics.csv ends at step 8, before this checkpoint.s step 12 .* --resume .*/gapx/checkpoint-8.safetensors, which writes them again$" "$dir/err2" &&
   cmp -s "$dir/gapx/metrics.csv" "$dir/gap.csv"'
rm -rf "$dir/gapx"
"$VITMAE" train --resume "$dir/gap/checkpoint-8.safetensors" > /dev/null 2>&1; r1=$?
"$VITMAE" train --resume "$dir/gap" --steps 14 > /dev/null 2>&1; r2=$?
t "the snapshot resumed writes rows 10 and 12 again; then --resume RUN goes on ($r1 $r2: $(cut -d, -f1 "$dir/gap/metrics.csv" | tr "\n" " "))" \
  '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ "$(cut -d, -f1 "$dir/gap/metrics.csv" | tr "\n" " ")" = "step 0 2 4 6 8 10 12 14 " ]'
# Cut so, with no snapshot at or before its end left to write the rows again, a resume went on without a
# word: it goes on (nothing else can), warning once; info warns too.
cp -r "$dir/gap" "$dir/gapk" && rm "$dir"/gapk/checkpoint-*.safetensors
python3 -c 'import sys
p = sys.argv[1]; rows = open(p).read().splitlines(True)
open(p, "w").write("".join(r for r in rows if r.startswith("step") or int(r.split(",")[0]) <= 8))' "$dir/gapk/metrics.csv"
"$VITMAE" info "$dir/gapk" > /dev/null 2>"$dir/err2"; rc2=$?
"$VITMAE" train --resume "$dir/gapk" --steps 16 > /dev/null 2>"$dir/err"; rc=$?
t "metrics.csv cut at 8, no snapshot left: the resume goes on warning once, info warns ($rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "metrics.csv" "$dir/err")" -eq 1 ] &&
   grep -q "^vitmae: warning: .*/gapk/metrics.csv ends at step 8, before this checkpoint.s step 14, and no snapshot of the run at or before step 8 is left to write the rows between again: the log goes on from step 14 without them$" "$dir/err" &&
   [ "$(cut -d, -f1 "$dir/gapk/metrics.csv" | tr "\n" " ")" = "step 0 2 4 6 8 16 " ] &&
   [ $rc2 -eq 0 ] && grep -q "^vitmae: warning: .*/gapk/metrics.csv ends at step 8, before this checkpoint.s step 14, and no snapshot of the run at or before step 8 is left to write the rows between again$" "$dir/err2"'
# Finished, a plain resume trains nothing and writes no row: the warning said "the log goes on from step
# 16 without them" of a run that went nowhere. Said by info alone then.
python3 -c 'import sys
p = sys.argv[1]; rows = open(p).read().splitlines(True)
open(p, "w").write("".join(r for r in rows if r.startswith("step") or int(r.split(",")[0]) <= 8))' "$dir/gapk/metrics.csv"
"$VITMAE" train --resume "$dir/gapk" > "$dir/out" 2>"$dir/err"; rc=$?
t "metrics.csv cut, the run finished: a plain resume, which writes nothing, says nothing of the rows ($rc: $(cat "$dir/err" "$dir/out" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && [ ! -s "$dir/err" ] && grep -q "nothing to train" "$dir/out"'
rm -rf "$dir/gapk"
truncate -s 100 "$dir/gap/config.json"
"$VITMAE" info "$dir/gap" > /dev/null 2>"$dir/err"; rc=$?
t "config.json cut short: info warns ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && grep -q "^vitmae: warning: .*/gap/config.json is damaged (not a JSON object): the checkpoint is the run.s state; the run has reached its last step, so config.json stays as it is until train --resume .*/gap --steps N extends it$" "$dir/err"'
# A finished run's last row: a resume from its snapshot at step 8 of 12 drops row 12 and samples/step-12.png
# as it starts; killed before it got back (here at its save at step 10, no row due between), `--resume
# RUN` said "nothing to train", exit 0, and info said nothing of them: the row of the checkpoint's own
# step missing was no gap, and the row and sheet were lost for good. A finished run writes its last row
# before its checkpoint: refused naming checkpoint-8, info warns the same, and that snapshot resumed
# writes the row and the sheet again. config.json, which that resume wrote at step 8 as it started, is
# behind the checkpoint too: info names it in a line of its own (it said only the gap, and config.json's
# came after the fix), its way on that snapshot's resume, not config.json's "train --resume RUN".
"$VITMAE" train $small --data "$dir/moved" --steps 12 --log-every 4 --eval-every 4 --ckpt-every 2 --keep 5 --out "$dir/fin" > /dev/null 2>&1
env "VITMAE_FAULT_HOLD_BEFORE_SAVE=$dir/fin.go" "$VITMAE" train --resume "$dir/fin/checkpoint-8.safetensors" > /dev/null 2>&1 &
fp=$!; wait_gate "$dir/fin.go" $fp; kill -KILL $fp; wait $fp 2>/dev/null
killed=$(cut -d, -f1 "$dir/fin/metrics.csv" | tr "\n" " ")
"$VITMAE" train --resume "$dir/fin" > /dev/null 2>"$dir/err"; rc=$?
"$VITMAE" info "$dir/fin" > /dev/null 2>"$dir/err2"; rc2=$?
t "a finished run's last row dropped by a killed snapshot resume: --resume RUN refused naming checkpoint-8, info warns ($killed; $rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ "$killed" = "step 0 4 8 " ] && [ ! -e "$dir/fin/samples/step-12.png" ] && [ $rc -eq 2 ] &&
   [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/fin: $dir/fin/metrics.csv ends at step 8, before this checkpoint'"'"'s step 12 (a resume from an earlier snapshot stopped before it got back here); going on from step 12 would lose the rows between for good; resume the snapshot instead, --resume $dir/fin/checkpoint-8.safetensors, which writes them again" ] &&
   [ $rc2 -eq 0 ] && [ "$(wc -l < "$dir/err2")" -eq 2 ] && grep -qx "vitmae: warning: $dir/fin/metrics.csv ends at step 8, before this checkpoint.s step 12 (.*); train --resume $dir/fin/checkpoint-8.safetensors writes the rows between again" "$dir/err2" &&
   grep -qx "vitmae: warning: $dir/fin/config.json describes step 8 of 12, not this checkpoint.s step 12 of 12 (.*): the checkpoint is the run.s state; train --resume $dir/fin/checkpoint-8.safetensors, the resume that writes metrics.csv.s rows between again, rewrites config.json" "$dir/err2"'
"$VITMAE" train --resume "$dir/fin/checkpoint-8.safetensors" > /dev/null 2>&1; r1=$?
"$VITMAE" train --resume "$dir/fin" > "$dir/out" 2>"$dir/err"; r2=$?
t "that snapshot resumed writes row 12 and its sheet again; then --resume RUN has nothing to train ($r1 $r2: $(cut -d, -f1 "$dir/fin/metrics.csv" | tr "\n" " "))" \
  '[ $r1 -eq 0 ] && [ "$(cut -d, -f1 "$dir/fin/metrics.csv" | tr "\n" " ")" = "step 0 4 8 12 " ] && [ -s "$dir/fin/samples/step-12.png" ] &&
   [ $r2 -eq 0 ] && [ ! -s "$dir/err" ] && grep -q "nothing to train" "$dir/out"'
rm -rf "$dir/fin"
# metrics.csv cut so (a resume from an earlier snapshot killed) in a run extended after that snapshot (its
# total_steps 8, the later checkpoints' 12): every advice named the snapshot alone, whose resume on its own
# 8-step schedule is refused (later checkpoints of this run on another schedule), and `--steps 12` was
# never said. Each carries it now, and followed word for word it goes on and writes the rows again.
"$VITMAE" train $small --data "$dir/moved" --steps 8 --log-every 2 --eval-every 2 --ckpt-every 4 --keep 100 --out "$dir/ext" > /dev/null 2>&1
"$VITMAE" train --resume "$dir/ext" --steps 12 > /dev/null 2>&1
whole=$(cut -d, -f1 "$dir/ext/metrics.csv" | tr "\n" " ")
# checkpoint-8 moved away, then checkpoint-4 resumed with --steps 12 and killed before step 12: the log cut at 4
rm "$dir/ext/checkpoint-8.safetensors"
python3 -c 'import sys
p = sys.argv[1]; rows = open(p).read().splitlines(True)
open(p, "w").write("".join(r for r in rows if r.startswith("step") or int(r.split(",")[0]) <= 4))' "$dir/ext/metrics.csv"
for k in 1 2 3 4; do cp -r "$dir/ext" "$dir/ext$k"; done
rm "$dir/ext4/checkpoint.safetensors"
"$VITMAE" info "$dir/ext1" > /dev/null 2>"$dir/err1"
"$VITMAE" train --resume "$dir/ext2" > /dev/null 2>"$dir/err2"
"$VITMAE" train $small --data "$dir/moved" --steps 4 --out "$dir/ext3" > /dev/null 2>"$dir/err3"
"$VITMAE" train --resume "$dir/ext4" > /dev/null 2>"$dir/err4"
ways="" said=""
for k in 1 2 3 4; do
  way=$(sed -n -e 's/.*; train \(--resume .*\) writes the rows between again$/\1/p' -e 's/.*resume the snapshot instead, \(--resume .*\), which writes them again$/\1/p' \
               -e 's/.* pass \(--resume .*\) to continue it, .*/\1/p' -e 's/.* with \(--resume .*\) (a later one would lose .*/\1/p' "$dir/err$k")
  "$VITMAE" train $way > /dev/null 2>"$dir/err"; rc=$?
  ways="$ways$k: $way -> $rc $(cut -d, -f1 "$dir/ext$k/metrics.csv" | tr "\n" " ")| "
  said="$said$(head -n 1 "$dir/err$k")| "
done
t "metrics.csv cut at 4 in a run extended from 8 to 12 steps: info, --resume RUN, --out RUN and --resume RUN without checkpoint.safetensors advise --resume RUN/checkpoint-4.safetensors --steps 12, which goes on and writes the rows again ($whole| $ways$said)" \
  '[ "$whole" = "step 0 2 4 6 8 10 12 " ] &&
   [ "$ways" = "1: --resume $dir/ext1/checkpoint-4.safetensors --steps 12 -> 0 $whole| 2: --resume $dir/ext2/checkpoint-4.safetensors --steps 12 -> 0 $whole| 3: --resume $dir/ext3/checkpoint-4.safetensors --steps 12 -> 0 $whole| 4: --resume $dir/ext4/checkpoint-4.safetensors --steps 12 -> 0 $whole| " ] &&
   [ -s "$dir/ext4/checkpoint.safetensors" ] && "$VITMAE" info "$dir/ext1" 2>&1 >/dev/null | { ! grep -q metrics.csv; }'
rm -rf "$dir"/ext*
# Sample sheets of an abandoned stretch: a run stopped at step 8 without saving (a second SIGINT; here its
# checkpoint put back to checkpoint-4) resumed with --steps 5 dropped metrics.csv's rows past 4 but
# kept samples/step-6.png and step-8.png ("step 8 of 8"), contradicting the run. The resume in its own
# folder removes the sheets past its step as it starts, saying so on stdout; a user's files (notes.txt,
# step-06.png), a folder and a link of a sheet's name stay; a resume into a new --out folder leaves the
# run's folder as it is.
"$VITMAE" train $small --data "$dir/moved" --steps 8 --sample-every 2 --ckpt-every 4 --out "$dir/abandon" > /dev/null 2>&1; r1=$?
cp "$dir/abandon/checkpoint-4.safetensors" "$dir/abandon/checkpoint.safetensors" && rm "$dir/abandon/checkpoint-8.safetensors"
echo notes > "$dir/abandon/samples/notes.txt" && cp "$dir/abandon/samples/step-6.png" "$dir/abandon/samples/step-06.png"
mkdir "$dir/abandon/samples/step-9.png" && ln -s step-2.png "$dir/abandon/samples/step-7.png"
"$VITMAE" train --resume "$dir/abandon/checkpoint-4.safetensors" --steps 5 --out "$dir/abandon2" > /dev/null 2>&1; r2=$?
t "a resume into a new --out folder leaves the run's sheets ($r1 $r2: $(ls "$dir/abandon/samples" | tr "\n" " "))" \
  '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ -f "$dir/abandon/samples/step-6.png" ] && [ -f "$dir/abandon/samples/step-8.png" ]'
"$VITMAE" train --resume "$dir/abandon" --steps 5 > "$dir/abandon.out" 2>&1; rc=$?
t "a resume in its own folder removes the sheets past its step, said on stdout; a user's files, a folder and a link stay ($rc: $(ls "$dir/abandon/samples" | tr "\n" " "); $(grep "sample sheet" "$dir/abandon.out"))" \
  '[ $rc -eq 0 ] && [ "$(ls "$dir/abandon/samples" | tr "\n" " ")" = "notes.txt step-06.png step-2.png step-4.png step-5.png step-7.png step-9.png " ] &&
   [ -L "$dir/abandon/samples/step-7.png" ] && [ -d "$dir/abandon/samples/step-9.png" ] &&
   grep -q "^removed 2 sample sheets past step 4 (samples/step-6.png ...): those steps are trained again$" "$dir/abandon.out" &&
   [ "$(cut -d, -f1 "$dir/abandon/metrics.csv" | tr "\n" " ")" = "step 0 1 2 3 4 5 " ]'
rm -rf "$dir/abandon" "$dir/abandon2"
# Another run's snapshot copied into a run folder (checkpoint-100 and checkpoint-5 of the seed-7 run):
# pruning went by names, so --keep 1 removed the run's own new snapshots (100 was "newest") and the
# user's copies; the folder's advice and a resume without checkpoint.safetensors took the copy as the
# run's. Now another run's snapshot is neither pruned nor counted, nor advised, nor resumed there.
"$VITMAE" train $small --data "$dir/moved" --steps 6 --keep 1 --out "$dir/pr" > /dev/null 2>&1
cp "$dir/seven/checkpoint.safetensors" "$dir/pr/checkpoint-100.safetensors"
cp "$dir/seven/checkpoint.safetensors" "$dir/pr/checkpoint-5.safetensors"
"$VITMAE" train --resume "$dir/pr" --steps 8 > /dev/null 2>"$dir/err"; rc=$?
t "another run's snapshots in the folder: --keep 1 keeps the run's checkpoint-8 and both copies ($rc: $(ls "$dir/pr" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ -s "$dir/pr/checkpoint-8.safetensors" ] && [ ! -e "$dir/pr/checkpoint-7.safetensors" ] &&
   [ ! -e "$dir/pr/checkpoint-6.safetensors" ] && cmp -s "$dir/pr/checkpoint-100.safetensors" "$dir/seven/checkpoint.safetensors" &&
   cmp -s "$dir/pr/checkpoint-5.safetensors" "$dir/seven/checkpoint.safetensors"'
# ... nor a file of that name that is no checkpoint of the run (a user's notes: no run_id), and another
# run's later copy (the 50-step run's, named checkpoint-11) does not make a resume from checkpoint-8
# "leave later checkpoints of this run".
cp -r "$dir/pr" "$dir/pr2"
echo notes > "$dir/pr2/checkpoint-1.safetensors"
cp "$dir/cad/checkpoint.safetensors" "$dir/pr2/checkpoint-11.safetensors"
"$VITMAE" train --resume "$dir/pr2/checkpoint-8.safetensors" --steps 10 > /dev/null 2>"$dir/err"; rc=$?
t "a note named checkpoint-1 kept by --keep 1; a later copy of another run blocks no resume ($rc: $(cat "$dir/err"); $(ls "$dir/pr2" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(cat "$dir/pr2/checkpoint-1.safetensors")" = notes ] && cmp -s "$dir/pr2/checkpoint-11.safetensors" "$dir/cad/checkpoint.safetensors" &&
   [ -s "$dir/pr2/checkpoint-10.safetensors" ] && [ ! -e "$dir/pr2/checkpoint-8.safetensors" ]'
rm -rf "$dir/pr2"
# ... but another run's copy at a step the resume goes through (the 50-step run's, named checkpoint-10,
# the run going on from 8 to 10) is where the run saves its own checkpoint-10: refused, the copy intact
# (the run wrote its snapshot over it, exit 0); with --keep 0 no snapshot is written, and it goes on.
cp -r "$dir/pr" "$dir/pr3"
cp "$dir/cad/checkpoint.safetensors" "$dir/pr3/checkpoint-10.safetensors"
"$VITMAE" train --resume "$dir/pr3" --steps 10 > /dev/null 2>"$dir/err"; rc=$?
t "another run's checkpoint-10 where the resume saves its own: exit 2, one line, the copy intact ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] &&
   grep -q "^vitmae: train --resume .*/pr3: .*/pr3/checkpoint-10.safetensors is not of this run (its run_id differs), and this run, going on from step 8 to 10, may save its own checkpoint-10 (on its cadence, at its last step, or stopped there) over it; move it away, or continue in a folder of its own with --out DIR$" "$dir/err" &&
   cmp -s "$dir/pr3/checkpoint-10.safetensors" "$dir/cad/checkpoint.safetensors" && [ "$(tail -n 1 "$dir/pr3/metrics.csv" | cut -d, -f1)" = 8 ]'
"$VITMAE" train --resume "$dir/pr3" --steps 10 --keep 0 > /dev/null 2>"$dir/err"; rc=$?
t "... with --keep 0 (no snapshot written) it goes on, the copy intact ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && cmp -s "$dir/pr3/checkpoint-10.safetensors" "$dir/cad/checkpoint.safetensors" && [ "$(tail -n 1 "$dir/pr3/metrics.csv" | cut -d, -f1)" = 10 ]'
rm -rf "$dir/pr3"
rm "$dir/pr/checkpoint.safetensors"
"$VITMAE" train --resume "$dir/pr" > /dev/null 2>"$dir/err"; rc=$?
"$VITMAE" train --resume "$dir/pr/checkpoint-100.safetensors" > /dev/null 2>"$dir/err2"; rc2=$?
t "no checkpoint.safetensors: the advice names the run's checkpoint-8; the copy is refused by config.json's run_id ($rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && grep -q "its newest snapshot, .*/pr/checkpoint-8.safetensors, is the finished run" "$dir/err" &&
   [ $rc2 -eq 2 ] && [ "$(wc -l < "$dir/err2")" -eq 1 ] &&
   grep -q "^vitmae: train --resume .*checkpoint-100.safetensors: not a checkpoint of the run in .*pr (another run: its run_id differs from the one in .*pr/config.json); continue it in a folder of its own with --out DIR$" "$dir/err2" &&
   [ "$(tail -n 1 "$dir/pr/metrics.csv" | cut -d, -f1)" = 8 ]'
# Another run's checkpoint copied in at checkpoint.safetensors itself (config.json still the folder's
# run's): --resume RUN continued that other run there, writing over the folder's snapshots and sheets
# and changing config.json's run_id, exit 0. Refused, nothing changed.
rm -rf "$dir/latest" && cp -r "$dir/seven" "$dir/latest.src" && mv "$dir/latest.src" "$dir/latest"
cp "$dir/first.safetensors" "$dir/latest/checkpoint.safetensors"
ls -l "$dir/latest" > "$dir/latest.before"; cp "$dir/latest/config.json" "$dir/latest.config"
"$VITMAE" train --resume "$dir/latest" --data "$dir/moved" --steps 8 > /dev/null 2>"$dir/err"; rc=$?
t "another run's checkpoint at checkpoint.safetensors: --resume RUN refused by config.json's run_id ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/latest: $dir/latest/checkpoint.safetensors is not a checkpoint of the run in $dir/latest (another run: its run_id differs from the one in $dir/latest/config.json); continue it in a folder of its own with --out DIR" ] &&
   cmp -s "$dir/latest/config.json" "$dir/latest.config" && ls -l "$dir/latest" | cmp -s - "$dir/latest.before"'
# ... and --out of that folder advised --resume RUN, refused so: it says no resume goes on there.
cp -r "$dir/seven" "$dir/latest2" && cp "$dir/first.safetensors" "$dir/latest2/checkpoint.safetensors"
"$VITMAE" train $small --data "$dir/moved" --steps 2 --out "$dir/latest2" > /dev/null 2>"$dir/err"; rc=$?
t "--out of it: no --resume advice, the resume says why ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --out $dir/latest2: the folder already holds a run that cannot be resumed as it is (train --resume $dir/latest2 says why); pass another --out folder, or --overwrite to move it aside (to $dir/latest2.old-N)" ]'
rm -rf "$dir/latest" "$dir/latest2"
# A checkpoint resumed in a folder holding another run's metrics.csv and nothing to tell whose (no
# checkpoint.safetensors, config.json or snapshot): the resume went on, its rows mixed with the other
# run's; with one snapshot of the other run there (a damaged config.json), the same. Refused, the rows kept.
mkdir -p "$dir/mixrows" && cp "$dir/seven/metrics.csv" "$dir/mixrows/" && cp "$dir/first.safetensors" "$dir/mixrows/model.safetensors"
"$VITMAE" train --resume "$dir/mixrows/model.safetensors" --data "$dir/moved" --steps 8 > /dev/null 2>"$dir/err"; rc=$?
cp "$dir/seven/checkpoint.safetensors" "$dir/mixrows/checkpoint-6.safetensors"
"$VITMAE" train --resume "$dir/mixrows/model.safetensors" --data "$dir/moved" --steps 8 > /dev/null 2>"$dir/err2"; rc2=$?
t "another run's metrics.csv, nothing to tell whose; then its snapshot there: refused both, the rows kept ($rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: train --resume .*/mixrows/model.safetensors: not a checkpoint of the run in .*/mixrows (.*/mixrows holds a run.s metrics.csv and no checkpoint.safetensors, config.json or snapshot to tell which run: its rows cannot be told to be this run.s); continue it in a folder of its own with --out DIR$" "$dir/err" &&
   [ $rc2 -eq 2 ] && grep -q "(another run: its run_id differs from that of the snapshots in .*/mixrows)" "$dir/err2" && cmp -s "$dir/mixrows/metrics.csv" "$dir/seven/metrics.csv"'
# A folder of two runs' snapshots, nothing else: --out said "a run without a checkpoint ... nothing to
# resume", untrue; it says no resume goes on there as it is (--resume DIR names the way).
mkdir -p "$dir/tworuns" && cp "$dir/first.safetensors" "$dir/tworuns/checkpoint-6.safetensors" && cp "$dir/seven/checkpoint.safetensors" "$dir/tworuns/checkpoint-8.safetensors"
"$VITMAE" train $small --data "$dir/moved" --steps 2 --out "$dir/tworuns" > /dev/null 2>"$dir/err"; rc=$?
t "--out of a folder of two runs' snapshots: held, no resume as it is ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: train --out .*/tworuns: the folder already holds a run that cannot be resumed as it is (train --resume .*/tworuns says why)" "$dir/err"'
rm -rf "$dir/mixrows" "$dir/tworuns"
# A checkpoint resumed in a folder of the user's own files, no run there (their curves.png and a
# metrics.csv of theirs, no config.json): the resume wrote over both (its rows under the user's);
# refused as --out of that folder is, and --out of such a folder names them ("another run", untrue).
mkdir -p "$dir/loose" "$dir/loose2" && echo "my plot" > "$dir/loose/curves.png" && printf 'epoch,acc\n1,0.5\n' > "$dir/loose/metrics.csv"
echo "my plot" > "$dir/loose2/curves.png" && cp "$dir/first.safetensors" "$dir/loose/mymodel.safetensors"
"$VITMAE" train --resume "$dir/loose/mymodel.safetensors" --data "$dir/moved" --steps 8 > /dev/null 2>"$dir/err"; rc=$?
"$VITMAE" train --resume "$dir/loose/mymodel.safetensors" --data "$dir/moved" --steps 8 --out "$dir/loose2" > /dev/null 2>"$dir/err2"; rc2=$?
t "--resume FILE in a folder of the user's curves.png and metrics.csv: refused, both named, kept ($rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/loose/mymodel.safetensors: its folder $dir/loose holds metrics.csv and curves.png with no record of a run (no run'"'"'s config.json or metrics.csv, and no checkpoints of one run), which the run would write over; continue it in a folder of its own with --out DIR" ] &&
   [ "$(cat "$dir/loose/curves.png")" = "my plot" ] && [ "$(head -n 1 "$dir/loose/metrics.csv")" = "epoch,acc" ] && [ "$(ls "$dir/loose" | wc -l)" -eq 3 ] &&
   [ $rc2 -eq 2 ] && [ "$(cat "$dir/err2")" = "vitmae: train --out $dir/loose2: the folder holds curves.png, which a run writes over; a resumed run continues in its own folder or in a new --out folder" ] && [ "$(ls "$dir/loose2")" = curves.png ]'
cp "$dir/first.safetensors" "$dir/mix/own.safetensors"
"$VITMAE" train --resume "$dir/mix/own.safetensors" --data "$dir/moved" --steps 8 > /dev/null 2>"$dir/err"; rc=$?
t "a copy of the folder's own checkpoint resumes there ($(head -n 1 "$dir/err"))" '[ $rc -eq 0 ]'

# A train_state edited by hand (the checksum covers the data, not the header): a cadence of 0 or
# 0.5, a mask ratio of 1.75, a seed below 0 (--seed's range; it resumed) or a step past the run's
# total_steps (it said "inconsistent step/batch") is refused in one line, never a crash, nothing written.
# A mask ratio of 0 (or 1e-17) removes no patch: the resume trained on a loss of 0 / 0 printed as 0 and
# exited 0; it is refused as a new run's --mask-ratio 0 is.
# A max_pixels out of --max-pixels' range (0) was dropped, the run going on with the default: refused.
for edit in ckpt_every=0 log_every=0.5 mask_ratio=1.75 seed=-1 step=7 mask_ratio=0 mask_ratio=1e-17 max_pixels=0; do
  rm -rf "$dir/ed" && mkdir "$dir/ed"
  python3 - "$dir/first.safetensors" "$dir/ed/checkpoint.safetensors" "$edit" <<'PY'
import sys, struct, json
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); key, value = sys.argv[3].split("=")
st = json.loads(h["__metadata__"]["train_state"]); assert key in st or key == "max_pixels"; st[key] = float(value)
h["__metadata__"]["train_state"] = json.dumps(st)
hb = json.dumps(h).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
  "$VITMAE" train --resume "$dir/ed" --data "$dir/moved" --steps 8 > /dev/null 2>"$dir/err"; rc=$?
  t "edited train_state ($edit): exit 1, one line, nothing written ($(head -n 1 "$dir/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && [ "$(ls "$dir/ed")" = checkpoint.safetensors ] &&
     grep -q "^vitmae: \(.*train_state: .$(echo $edit | cut -d= -f1). \(missing or out of range$\|out of range: 7 is past .total_steps. 6$\)\|train --resume: the run.s mask ratio removes no patch (the loss is over removed patches)$\)" "$dir/err"'
done
# A value that is not JSON (an edit that left NaN) was refused as "train_state is not a JSON object",
# which the object is: it says where the JSON breaks. 1e400 is JSON (cJSON reads it as infinity): out
# of range, as any number past its flag's. A data field left empty said "the run's data folder  is
# gone" (no name): it says the field is empty. A state nested past the JSON reader's 1000 levels (step
# a list 1000 deep) was "not valid JSON (at byte 1005)" though well-formed: it says so, and info, which
# showed its two thousand brackets as they are, says so too.
for edit in mask_ratio=NaN seed=1e400 data=EMPTY step=DEEP; do
  rm -rf "$dir/ed" && mkdir "$dir/ed"
  python3 - "$dir/first.safetensors" "$dir/ed/checkpoint.safetensors" "$edit" <<'PY'
import sys, struct, json
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); key, value = sys.argv[3].split("=")
st = json.loads(h["__metadata__"]["train_state"]); assert key in st; st[key] = "@@"
value = "[" * 1000 + "]" * 1000 if value == "DEEP" else value
h["__metadata__"]["train_state"] = json.dumps(st).replace('"@@"', '""' if value == "EMPTY" else value)
hb = json.dumps(h).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
  "$VITMAE" train --resume "$dir/ed" --steps 8 > /dev/null 2>"$dir/err"; rc=$?
  case $edit in
    data=*) want="^vitmae: train --resume .*/ed: the run's train_state has an empty 'data' field; pass --data DIR$"; code=2 ;;
    seed=*) want="^vitmae: .*/ed/checkpoint.safetensors: cannot resume: train_state: 'seed' missing or out of range$"; code=1 ;;
    step=*) want="^vitmae: .*/ed/checkpoint.safetensors: cannot resume: train_state: JSON nested deeper than 1000 levels (the limit of the JSON reader)$"; code=1 ;;
    *) want="^vitmae: .*train_state is not valid JSON (at byte [0-9]*)$"; code=1 ;;
  esac
  t "edited train_state ($edit): exit $code, one line saying so, nothing written ($rc: $(head -n 1 "$dir/err"))" \
    '[ $rc -eq $code ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && [ "$(ls "$dir/ed")" = checkpoint.safetensors ] && grep -q "$want" "$dir/err"'
  [ $edit = step=DEEP ] || continue
  "$VITMAE" info "$dir/ed" > "$dir/out" 2> "$dir/err"; rc=$?
  t "edited train_state ($edit): info exits 0 and says why it cannot resume ($rc: $(grep "train state" "$dir/out" | cut -c 1-120))" \
    '[ $rc -eq 0 ] && grep -qx "  train state  JSON nested deeper than 1000 levels (the limit of the JSON reader): cannot resume" "$dir/out"'
  # --json showed the 2000 brackets as a string, as if they were a state that is not JSON: now the text's line
  "$VITMAE" info --json "$dir/ed" > "$dir/out" 2> "$dir/err"; rc=$?
  t "edited train_state ($edit): info --json says the same ($rc: $(cut -c 1-200 "$dir/out" | grep train_state))" \
    '[ $rc -eq 0 ] && [ "$(python3 -c "import json, sys; o = json.load(open(sys.argv[1])); print(o[\"train_state\"], o[\"moments_removed\"])" "$dir/out")" = "JSON nested deeper than 1000 levels (the limit of the JSON reader): cannot resume None" ]'
done
# A checkpoint whose AdamW moments were all removed (two thirds of the file; users strip them to share
# the weights, as MAE's released files are) was refused by every reader, eval and info included:
# "missing tensor 'optimizer.exp_avg.cls_token' (train_state is present, so AdamW moments are required)".
# Its weights load for every use; --resume alone refuses it, in one line that names the moments, writing
# nothing. A file with some moments and not others is damaged: still refused by every reader.
rm -rf "$dir/nom" && mkdir "$dir/nom" && strip_moments "$dir/first.safetensors" "$dir/nom/checkpoint.safetensors"
"$VITMAE" eval --ckpt "$dir/nom/checkpoint.safetensors" --data "$dir/moved" > "$dir/out" 2> "$dir/err"; rc=$?
t "moments removed: eval reads the weights ($rc: $(head -n 1 "$dir/err"))" '[ $rc -eq 0 ] && grep -q "^loss=" "$dir/out"'
"$VITMAE" info "$dir/nom/checkpoint.safetensors" > "$dir/out" 2> "$dir/err"; rc=$?
t "moments removed: info says it cannot resume ($rc: $(grep "train state" "$dir/out"))" \
  '[ $rc -eq 0 ] && grep -q "^  train state  (AdamW moments removed: cannot resume; the weights load for every other use)$" "$dir/out"'
"$VITMAE" train --init "$dir/nom/checkpoint.safetensors" --data "$dir/moved" --steps 2 --batch 8 --threads 2 --out "$dir/nom-init" > /dev/null 2> "$dir/err"; rc=$?
t "moments removed: train --init starts from its weights ($rc: $(head -n 1 "$dir/err"))" '[ $rc -eq 0 ] && [ "$(saved_step "$dir/nom-init/checkpoint.safetensors")" = 2 ]'
"$VITMAE" train --resume "$dir/nom" --steps 8 > /dev/null 2> "$dir/err"; rc=$?
t "moments removed: --resume refused in one line naming them, nothing written ($rc: $(head -n 1 "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && [ "$(ls "$dir/nom")" = checkpoint.safetensors ] &&
   grep -q "^vitmae: .*/nom/checkpoint.safetensors: cannot resume: its AdamW moments (optimizer.exp_avg.\*, optimizer.exp_avg_sq.\*) were removed" "$dir/err"'
strip_moments "$dir/first.safetensors" "$dir/nom/half.safetensors" exp_avg_sq
"$VITMAE" eval --ckpt "$dir/nom/half.safetensors" --data "$dir/moved" > /dev/null 2> "$dir/err"; rc=$?
t "exp_avg_sq alone removed: a damaged file, refused ($rc: $(head -n 1 "$dir/err"))" \
  '[ $rc -eq 1 ] && grep -q "half.safetensors: missing tensor .optimizer.exp_avg_sq.cls_token. (the file holds other AdamW moments" "$dir/err"'
# An encoder-only checkpoint that kept its train_state (decoder_* and mask_token stripped, with their
# moments): train --resume said "no training state in this checkpoint (it loads for inference only)",
# which it holds, while info said "can resume" (resume_refused null). The resume names the decoder, the
# moments too where they went as well, and info's text and --json say the same reason.
for what in decoder moments; do
  rm -rf "$dir/enc" && mkdir "$dir/enc"
  if [ $what = decoder ]; then strip_decoder "$dir/first.safetensors" "$dir/enc/checkpoint.safetensors"
  else strip_decoder "$dir/first.safetensors" "$dir/enc/checkpoint.safetensors" moments; fi
  "$VITMAE" train --resume "$dir/enc" --steps 8 > /dev/null 2> "$dir/err"; rc=$?
  why=$(sed -n 's/^vitmae: .*\/enc\/checkpoint.safetensors: cannot resume: //p' "$dir/err")
  "$VITMAE" info "$dir/enc" > "$dir/out" 2>&1; r1=$?
  "$VITMAE" info --json "$dir/enc" > "$dir/json" 2>&1; r2=$?
  refused=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['resume_refused'])" "$dir/json" 2>&1)
  case $what in
    decoder) want="the file holds no decoder (decoder_\*, mask_token), and a pretraining run continues only with it (an encoder-only file loads for attention, embed, probe and finetune --ckpt)"; moments=present ;;
    *) want="the file holds no decoder (decoder_\*, mask_token) and no AdamW moments (optimizer.exp_avg.\*, optimizer.exp_avg_sq.\*), and a pretraining run continues only with both (an encoder-only"; moments=removed ;;
  esac
  t "encoder-only with train_state ($what stripped): --resume names the decoder in one line, nothing written ($rc: $(head -n 1 "$dir/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && [ "$(ls "$dir/enc")" = checkpoint.safetensors ] &&
     echo "$why" | grep -q "^$want" && ! grep -q "no training state" "$dir/err"'
  t "encoder-only with train_state ($what stripped): info says the resume's reason, text and --json ($r1 $r2: $(grep "train state" "$dir/out"); $refused)" \
    '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ -n "$why" ] && [ "$refused" = "$why" ] &&
     [ "$(grep "^  train state  " "$dir/out")" = "  train state  (AdamW moments $moments; cannot resume: $why)" ]'
done
rm -rf "$dir/enc"
# The advice names only a snapshot whose resume is taken: a snapshot a user stripped (its decoder, or its
# AdamW moments) was advised as the newest, --resume DIR/checkpoint-6.safetensors (the finished run's:
# "... --steps N extends the run"), and that resume refused it, a full snapshot beside it. Now the newest
# that resumes is named; with none, --resume DIR names the newest and --out says it cannot be resumed as
# it is; an encoder-only checkpoint.safetensors is not advised as --resume DIR either.
flags_moved=$(echo "$small" | sed "s#--data data#--data $dir/moved#")
"$VITMAE" train $flags_moved --steps 6 --ckpt-every 2 --keep 3 --out "$dir/strip" > /dev/null 2>&1 || fail=1
rm -f "$dir/strip/checkpoint.safetensors"
strip_decoder "$dir/strip/checkpoint-6.safetensors" "$dir/x" && mv "$dir/x" "$dir/strip/checkpoint-6.safetensors"
for s in 4 2 none; do
  "$VITMAE" train --resume "$dir/strip" > /dev/null 2> "$dir/err"; rc=$?
  "$VITMAE" train $flags_moved --out "$dir/strip" > /dev/null 2> "$dir/err2"; rc2=$?
  snap="$dir/strip/checkpoint-$s.safetensors"
  if [ $s = none ]; then
    want="no checkpoint.safetensors in the folder, and none of its snapshots can be resumed (its newest, $dir/strip/checkpoint-6.safetensors: train --resume of that file says why)"
    want2="the folder already holds a run that cannot be resumed as it is (train --resume $dir/strip says why); pass another --out folder, or --overwrite to move it aside (to $dir/strip.old-N)"
  else
    want="no checkpoint.safetensors in the folder; resume its newest snapshot with --resume $snap"
    want2="the folder already holds a run; pass --resume $snap to continue it, another --out folder, or --overwrite to move the old run aside (to $dir/strip.old-N)"
  fi
  t "snapshots stripped down to checkpoint-$s: --resume and --out advise it ($rc $rc2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/strip: $want" ] &&
     [ $rc2 -eq 2 ] && [ "$(cat "$dir/err2")" = "vitmae: train --out $dir/strip: $want2" ]'
  [ $s = 4 ] && strip_moments "$dir/strip/checkpoint-4.safetensors" "$dir/x" && mv "$dir/x" "$dir/strip/checkpoint-4.safetensors"
  [ $s = 2 ] && cp -r "$dir/strip" "$dir/strip2" && strip_decoder "$dir/strip/checkpoint-2.safetensors" "$dir/x" moments &&
    mv "$dir/x" "$dir/strip/checkpoint-2.safetensors"
done
"$VITMAE" train --resume "$dir/strip2/checkpoint-2.safetensors" > /dev/null 2> "$dir/err"; rc=$?
t "the advised snapshot resumes ($rc: $(cat "$dir/err"))" '[ $rc -eq 0 ] && [ "$(saved_step "$dir/strip2/checkpoint.safetensors")" = 6 ]'
rm -rf "$dir/enc" "$dir/strip" "$dir/strip2" && mkdir "$dir/enc" && strip_decoder "$dir/first.safetensors" "$dir/enc/checkpoint.safetensors"
"$VITMAE" train $flags_moved --out "$dir/enc" > /dev/null 2> "$dir/err"; rc=$?
t "an encoder-only checkpoint.safetensors: --out does not advise its resume ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --out $dir/enc: the folder already holds a run that cannot be resumed as it is (train --resume $dir/enc says why); pass another --out folder, or --overwrite to move it aside (to $dir/enc.old-N)" ]'
rm -rf "$dir/enc"
# A run folder with its metrics.csv and config.json deleted: its own curves.png and samples/ read as a
# user's, the resume --out advised refused ("holds curves.png and samples/ with no record of a run").
# Its checkpoints (one run_id) record the run: the resume goes on, metrics.csv from the resumed step on.
"$VITMAE" train $small --data "$dir/moved" --steps 4 --ckpt-every 2 --out "$dir/nomet" > /dev/null 2>&1
cp "$dir/nomet/checkpoint.safetensors" "$dir/nomet.safetensors" && rm "$dir/nomet/metrics.csv" "$dir/nomet/config.json"
"$VITMAE" train $small --data "$dir/moved" --steps 4 --out "$dir/nomet" > /dev/null 2> "$dir/err"; r1=$?
"$VITMAE" train --resume "$dir/nomet/checkpoint-2.safetensors" > /dev/null 2> "$dir/err2"; r2=$?
t "metrics.csv and config.json deleted: --out advises --resume DIR, the resume goes on, the run's weights ($r1 $r2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ $r1 -eq 2 ] && grep -q "^vitmae: train --out .*/nomet: the folder already holds a run; pass --resume .*/nomet to continue it," "$dir/err" &&
   [ $r2 -eq 0 ] && ! grep -q "no record of a run" "$dir/err2" && [ "$(head -n 1 "$dir/nomet/metrics.csv")" = "step,epoch,lr,loss,val_loss,val_psnr,img_per_s,elapsed_s" ] &&
   [ "$(sed -n 2p "$dir/nomet/metrics.csv" | cut -d, -f1)" -gt 2 ] && same_weights "$dir/nomet.safetensors" "$dir/nomet/checkpoint.safetensors"'
rm -rf "$dir/nomet" "$dir/nomet.safetensors"
# Snapshot names are read as vitmae writes them: a user's copy "checkpoint-04.safetensors" was step 4
# (pruning then removed the run's checkpoint-4 and kept the copy), "checkpoint-012.safetensors" step 12,
# and a name with a step past a long (sscanf's %ld; undefined there) the newest snapshot: a resume in
# the folder was refused as going back to an older snapshot, and one without checkpoint.safetensors was
# told to resume checkpoint-9223372036854775807.safetensors. Such names are a user's files: left alone,
# not counted.
"$VITMAE" train $small --data "$dir/moved" --steps 6 --ckpt-every 2 --keep 2 --out "$dir/names" > /dev/null 2>&1
cp "$dir/names/checkpoint-4.safetensors" "$dir/names/checkpoint-04.safetensors"
cp "$dir/names/checkpoint-4.safetensors" "$dir/names/checkpoint-012.safetensors"
cp "$dir/names/checkpoint-4.safetensors" "$dir/names/checkpoint-99999999999999999999.safetensors"
"$VITMAE" train --resume "$dir/names" --steps 10 > /dev/null 2> "$dir/err"; rc=$?
t "user's snapshot-like names: the resume runs, keeps checkpoint-8 and -10 and the user's three files ($rc: $(cat "$dir/err"); $(cd "$dir/names" && ls checkpoint-* | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(cd "$dir/names" && ls checkpoint-* | tr "\n" " ")" = "checkpoint-012.safetensors checkpoint-04.safetensors checkpoint-10.safetensors checkpoint-8.safetensors checkpoint-99999999999999999999.safetensors " ]'
rm "$dir/names/checkpoint.safetensors"
# Its --out advised --resume DIR/checkpoint-10.safetensors, whose resume had nothing to train and left the
# folder without checkpoint.safetensors: it says what --resume DIR says below.
"$VITMAE" train $small --data "$dir/moved" --steps 10 --out "$dir/names" > /dev/null 2> "$dir/err"; rc=$?
t "--out of a finished run without checkpoint.safetensors: its last snapshot and ln, as --resume DIR says ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --out $dir/names: the folder already holds a finished run without its checkpoint.safetensors; its newest snapshot, $dir/names/checkpoint-10.safetensors, is the run'"'"'s last step: pass that file where a checkpoint is asked for, or give the folder its checkpoint back with: ln $dir/names/checkpoint-10.safetensors $dir/names/checkpoint.safetensors (train --resume $dir/names/checkpoint-10.safetensors --steps N, more than its steps, extends the run); or pass another --out folder, or --overwrite to move the old run aside (to $dir/names.old-N)" ]'
"$VITMAE" train --resume "$dir/names" > /dev/null 2> "$dir/err"; rc=$?
# The run had finished at step 10: that snapshot's resume would train and write nothing, leaving the
# folder without its checkpoint.safetensors (it advised it all the same; --ckpt RUN and info RUN went on
# failing). The advice is the file itself, or ln to give the folder its name back, which works.
t "no checkpoint.safetensors, the run finished: the newest snapshot checkpoint-10 named, and ln to put it back ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume $dir/names: no checkpoint.safetensors in the folder; its newest snapshot, $dir/names/checkpoint-10.safetensors, is the finished run'"'"'s last step: pass that file where a checkpoint is asked for, or give the folder its checkpoint back with: ln $dir/names/checkpoint-10.safetensors $dir/names/checkpoint.safetensors (train --resume $dir/names/checkpoint-10.safetensors --steps N, more than its steps, extends the run)" ]'
ln "$dir/names/checkpoint-10.safetensors" "$dir/names/checkpoint.safetensors"
"$VITMAE" info "$dir/names" > /dev/null 2>&1; rc=$?
"$VITMAE" train --resume "$dir/names" > "$dir/log" 2>&1; rc2=$?
t "... and after that ln, info reads the folder and its resume has nothing to train ($rc $rc2: $(cat "$dir/log" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && grep -q "the run has reached its last step, 10: nothing to train" "$dir/log"'
# Its checkpoint.safetensors damaged (cut short) instead of gone: --out advised --resume of checkpoint-10,
# which had nothing to train (exit 0) and left the damaged file as the folder's checkpoint. It says the
# file cannot be read and the snapshot is the run's last step, and ln -f puts it back; followed, info,
# eval and --resume --steps go on from the folder.
cp -r "$dir/names" "$dir/cut" && rm "$dir/cut/checkpoint.safetensors"
head -c $(($(wc -c < "$dir/cut/checkpoint-10.safetensors") / 2)) "$dir/cut/checkpoint-10.safetensors" > "$dir/cut/checkpoint.safetensors"
cp "$dir/cut/checkpoint.safetensors" "$dir/cut.bin"
"$VITMAE" train $small --data "$dir/moved" --steps 10 --out "$dir/cut" > /dev/null 2> "$dir/err"; rc=$?
t "--out of a finished run whose checkpoint.safetensors is cut short: unreadable, its last snapshot and ln -f, the file kept ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --out $dir/cut: the folder already holds a finished run whose checkpoint.safetensors cannot be read (truncated data (.*)); its newest snapshot, $dir/cut/checkpoint-10.safetensors, is the run'"'"'s last step: pass that file where a checkpoint is asked for, or give the folder its checkpoint back with: ln -f $dir/cut/checkpoint-10.safetensors $dir/cut/checkpoint.safetensors (train --resume $dir/cut/checkpoint-10.safetensors --steps N, more than its steps, extends the run); or pass another --out folder, or --overwrite to move the old run aside (to $dir/cut.old-N)$" "$dir/err" &&
   cmp -s "$dir/cut.bin" "$dir/cut/checkpoint.safetensors"'
ln -f "$dir/cut/checkpoint-10.safetensors" "$dir/cut/checkpoint.safetensors"
"$VITMAE" info "$dir/cut" > /dev/null 2>&1; r1=$?
"$VITMAE" eval --ckpt "$dir/cut" --data "$dir/moved" --threads 1 > /dev/null 2>&1; r2=$?
"$VITMAE" train --resume "$dir/cut" --steps 12 > "$dir/log" 2>&1; r3=$?
t "... and after that ln -f, info and eval read the folder and --resume DIR --steps 12 extends the run ($r1 $r2 $r3: $(tail -n 2 "$dir/log" | tr "\n" "|"))" \
  '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ $r3 -eq 0 ] && "$VITMAE" info "$dir/cut" | grep -Eq "^ +step +12$"'
rm -rf "$dir/cut" "$dir/cut.bin"
rm "$dir/names/checkpoint.safetensors" "$dir/names/checkpoint-10.safetensors"
"$VITMAE" train --resume "$dir/names" > /dev/null 2> "$dir/err"; rc=$?
t "... its last snapshot gone too: checkpoint-8, not the run's last, is offered for --resume ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -q "resume its newest snapshot with --resume .*/names/checkpoint-8.safetensors$" "$dir/err"'
# ... and `finetune --resume` of this pretraining folder: it gave train's advice (the snapshot, or ln),
# which finetune then refused as a pretraining checkpoint: the folder's command is named.
"$VITMAE" finetune --resume "$dir/names" > /dev/null 2> "$dir/err"; rc=$?
t "finetune --resume of a pretraining folder without its checkpoint: exit 2, train --resume named ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: finetune --resume $dir/names: the folder holds a pretraining run, not a fine-tuning one (continue it with vitmae train --resume $dir/names, which says what its missing checkpoint.safetensors leaves)" ]'
# The other command's run with its metrics.csv deleted: the kind was read from that file's header alone,
# so --out advised "--resume DIR", which the command then refused (a classifier's checkpoint to train, a
# pretraining one to finetune), and without checkpoint.safetensors too both offered the snapshot's
# train --resume. The run's checkpoint.safetensors, train's config.json, else its snapshots tell.
"$VITMAE" finetune --ckpt "$dir/first.safetensors" --data "$dir/moved" --batch 8 --threads 2 --steps 4 --ckpt-every 2 \
  --out "$dir/ftk" > /dev/null 2>&1
rm "$dir/ftk/metrics.csv"
"$VITMAE" train $small --data "$dir/moved" --steps 1 --out "$dir/ftk" > /dev/null 2> "$dir/err"; r1=$?
"$VITMAE" train --resume "$dir/ftk" > /dev/null 2> "$dir/err2"; r2=$?
# (--resume of the finished run says it is finished, naming a new run from its init, not finetune --resume.)
first_abs="$(cd "$dir" && pwd -P)/first.safetensors"   # as the run records it (its init)
t "train --out of a finished fine-tuning run without metrics.csv: exit 2, a fine-tuning run named, finished; --resume says the classifier's, finished ($r1 $r2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ $r1 -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --out $dir/ftk: the folder already holds a finished fine-tuning run (a fine-tuning run keeps its --steps: it trains no more); pass another --out folder, or --overwrite to move it aside (to $dir/ftk.old-N)" ] &&
   [ $r2 -eq 1 ] && [ "$(cat "$dir/err2")" = "vitmae: $dir/ftk/checkpoint.safetensors: cannot resume: a fine-tuned classifier'"'"'s checkpoint, of a finished run (it reached its last step, 4, and a fine-tuning run keeps its --steps); with vitmae finetune, start a new run with --ckpt $first_abs for another, in another --out folder" ]'
rm "$dir/ftk/checkpoint.safetensors"
"$VITMAE" train $small --data "$dir/moved" --steps 1 --out "$dir/ftk" > /dev/null 2> "$dir/err"; r1=$?
"$VITMAE" train --resume "$dir/ftk" > /dev/null 2> "$dir/err2"; r2=$?
t "... its checkpoint.safetensors deleted too: its snapshots tell, finetune --resume named by --out and --resume ($r1 $r2: $(cat "$dir/err" "$dir/err2" | tr "\n" "|"))" \
  '[ $r1 -eq 2 ] && grep -q "^vitmae: train --out $dir/ftk: the folder already holds a fine-tuning run (continue it with vitmae finetune --resume $dir/ftk);" "$dir/err" &&
   [ $r2 -eq 2 ] && [ "$(cat "$dir/err2")" = "vitmae: train --resume $dir/ftk: the folder holds a fine-tuning run, not a pretraining one (continue it with vitmae finetune --resume $dir/ftk, which says what its missing checkpoint.safetensors leaves)" ] &&
   [ "$(ls "$dir/ftk" | tr "\n" " ")" = "checkpoint-2.safetensors checkpoint-4.safetensors curves.png " ]'
"$VITMAE" train $small --data "$dir/moved" --steps 4 --ckpt-every 2 --out "$dir/prek" > /dev/null 2>&1
rm "$dir/prek/metrics.csv" "$dir/prek/checkpoint.safetensors"
"$VITMAE" finetune --ckpt "$dir/first.safetensors" --data "$dir/moved" --steps 1 --out "$dir/prek" > /dev/null 2> "$dir/err"; r1=$?
t "finetune --out of a pretraining run without metrics.csv and checkpoint.safetensors: its config.json tells, train --resume named ($r1: $(cat "$dir/err"))" \
  '[ $r1 -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: finetune --out $dir/prek: the folder already holds a pretraining run (continue it with vitmae train --resume $dir/prek); pass another --out folder, or --overwrite to move it aside (to $dir/prek.old-N)" ]'
rm "$dir/prek/config.json"
"$VITMAE" finetune --resume "$dir/prek" > /dev/null 2> "$dir/err"; r1=$?
t "... its config.json deleted too: its snapshots tell, finetune --resume names train --resume ($r1: $(cat "$dir/err"))" \
  '[ $r1 -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: finetune --resume $dir/prek: the folder holds a pretraining run, not a fine-tuning one (continue it with vitmae train --resume $dir/prek, which says what its missing checkpoint.safetensors leaves)" ]'
rm -rf "$dir/ftk" "$dir/prek"
# A checkpoint between two metrics rows carries the losses since the last row: resumed from it, the
# next row averages the same steps as in the uninterrupted run (loss column bitwise equal).
"$VITMAE" train $small --data "$dir/moved" --steps 8 --log-every 4 --eval-every 4 --sample-every 4 --ckpt-every 3 \
  --keep 5 --out "$dir/rows" > /dev/null 2>&1
cp -r "$dir/rows" "$dir/rows2"
"$VITMAE" train --resume "$dir/rows2/checkpoint-6.safetensors" --data "$dir/moved" > /dev/null 2>&1; rc=$?
t "resumed between rows: the rows' losses as uninterrupted ($(cut -d, -f1,4 "$dir/rows2/metrics.csv" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(cut -d, -f1,4 "$dir/rows/metrics.csv")" = "$(cut -d, -f1,4 "$dir/rows2/metrics.csv")" ] && [ "$(tail -n 1 "$dir/rows2/metrics.csv" | cut -d, -f1)" = 8 ]'

# Back to an earlier snapshot on another schedule (--steps) in the run's own folder: the later
# snapshots of the old schedule stayed among the new run's files (--keep then pruned the new run's own
# snapshots and kept the stale ones, and a --resume of one mixed the metrics rows). Refused, exit 2, one
# line, nothing changed; in a folder of its own (--out) it runs.
cp -r "$dir/rows" "$dir/rows3"
ls "$dir/rows3" > "$dir/rows3.before"
"$VITMAE" train --resume "$dir/rows3/checkpoint-3.safetensors" --data "$dir/moved" --steps 5 > /dev/null 2> "$dir/err"; rc=$?
t "an earlier snapshot on another schedule in its own folder: exit 2, one line, nothing changed ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --resume $dir/rows3/checkpoint-3.safetensors: $dir/rows3 holds later checkpoints of this run on another schedule ([0-9]* files, the first $dir/rows3/checkpoint-[0-9]*.safetensors, step [0-9]* of 8, checkpoint.safetensors among them; this resume.s is of 5 steps); going on from step 3 would leave them" "$dir/err" && ls "$dir/rows3" | cmp -s - "$dir/rows3.before" && cmp -s "$dir/rows/metrics.csv" "$dir/rows3/metrics.csv"'
"$VITMAE" train --resume "$dir/rows3/checkpoint-3.safetensors" --data "$dir/moved" --steps 5 --out "$dir/rows4" > /dev/null 2>&1; rc=$?
t "... with --out a folder of its own: exit 0, 5 steps ($rc)" '[ $rc -eq 0 ] && [ "$(tail -n 1 "$dir/rows4/metrics.csv" | cut -d, -f1)" = 5 ]'
# The same without --steps where the run was extended since: the snapshot's own 8-step schedule, the
# later snapshots of the 11-step one. It went on, replaced the newest checkpoint with step 8 of 8, dropped
# the rows past 8 and left checkpoint-9 among its files. Refused alike, nothing changed.
cp -r "$dir/rows" "$dir/rows5"
"$VITMAE" train --resume "$dir/rows5" --data "$dir/moved" --steps 11 > /dev/null 2>&1
ls "$dir/rows5" > "$dir/rows5.before"
cp "$dir/rows5/metrics.csv" "$dir/rows5.csv"
"$VITMAE" train --resume "$dir/rows5/checkpoint-6.safetensors" --data "$dir/moved" > /dev/null 2> "$dir/err"; rc=$?
t "an earlier snapshot of a run extended since, on its own schedule: exit 2, one line, nothing changed ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -qx "vitmae: train --resume $dir/rows5/checkpoint-6.safetensors: $dir/rows5 holds later checkpoints of this run on another schedule (3 files, the first $dir/rows5/checkpoint-9.safetensors, step 9 of 11, checkpoint.safetensors among them; this resume.s is of 8 steps); going on from step 6 would leave them among its files; continue in a folder of its own with --out DIR (or move them away)" "$dir/err" &&
   ls "$dir/rows5" | cmp -s - "$dir/rows5.before" && cmp -s "$dir/rows5.csv" "$dir/rows5/metrics.csv"'
# Its later snapshots moved away as the line says, checkpoint.safetensors (the run's step 11) still
# blocks it: the line named only "step 11 of 11", of which no checkpoint-11 was left to find; it names
# the file now.
mkdir "$dir/rows5.away" && cp "$dir/rows5/checkpoint-9.safetensors" "$dir/rows5/checkpoint-11.safetensors" "$dir/rows5.away/" &&
  rm "$dir/rows5/checkpoint-9.safetensors" "$dir/rows5/checkpoint-11.safetensors"
"$VITMAE" train --resume "$dir/rows5/checkpoint-6.safetensors" --data "$dir/moved" > /dev/null 2> "$dir/err"; rc=$?
t "later snapshots moved away, checkpoint.safetensors left: the line names it ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -qx "vitmae: train --resume $dir/rows5/checkpoint-6.safetensors: $dir/rows5 holds later checkpoints of this run on another schedule ($dir/rows5/checkpoint.safetensors, step 11 of 11; this resume.s is of 8 steps); going on from step 6 would leave them among its files; continue in a folder of its own with --out DIR (or move them away)" "$dir/err"'
mv "$dir/rows5.away/"* "$dir/rows5/" && rmdir "$dir/rows5.away"
# Where every later checkpoint is of one schedule (checkpoint-8, of the 8-step one, gone), theirs is a way
# on in the folder: the line offers `--steps 11`, which the resume takes, writing them over on that
# schedule (from step 6 on it, not the run's 8-step stretch: other weights). Not offered above, where
# checkpoint-8 of the resume's own schedule stays (no one --steps passes the check).
cp -r "$dir/rows5" "$dir/rows7" && rm "$dir/rows7/checkpoint-8.safetensors"
"$VITMAE" train --resume "$dir/rows7/checkpoint-6.safetensors" --data "$dir/moved" > /dev/null 2> "$dir/err"; rc=$?
"$VITMAE" train --resume "$dir/rows7/checkpoint-6.safetensors" --data "$dir/moved" --steps 11 > /dev/null 2>&1; rc2=$?
t "later checkpoints of one schedule: the line offers their --steps, which goes on to step 11 ($rc $rc2: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && grep -qx "vitmae: train --resume $dir/rows7/checkpoint-6.safetensors: $dir/rows7 holds later checkpoints of this run on another schedule (3 files, the first $dir/rows7/checkpoint-9.safetensors, step 9 of 11, checkpoint.safetensors among them; this resume.s is of 8 steps); going on from step 6 would leave them among its files; continue in a folder of its own with --out DIR, or give their --steps 11 to write them over on it (or move them away)" "$dir/err" &&
   [ $rc2 -eq 0 ] && [ "$(tail -n 1 "$dir/rows7/metrics.csv" | cut -d, -f1)" = 11 ]'
rm -rf "$dir/rows7"
# Back to the snapshot before the extension given the extension's own --steps 11: the later snapshots are
# of that schedule and are written again bit for bit, so it goes on (it was refused as "made on its
# old schedule", untrue).
cp -r "$dir/rows5" "$dir/rows6"
"$VITMAE" train --resume "$dir/rows6/checkpoint-8.safetensors" --data "$dir/moved" --steps 11 > /dev/null 2> "$dir/err"; rc=$?
t "an earlier snapshot given the later snapshots' own --steps: goes on, the same weights ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && same_weights "$dir/rows5/checkpoint.safetensors" "$dir/rows6/checkpoint.safetensors"'
# Back to an earlier snapshot over other training images (a file removed since): the steps past it are
# not those of the later checkpoints, which the resume does not write again where their step is off its
# cadence (a Ctrl-C's): they stayed among its files for good, counted by --keep, and a --resume of one
# went on without a word. Refused as the other schedule's, exit 2, one line, nothing changed (sample
# sheets, metrics.csv, config.json); --out goes on in a folder of its own, the latest checkpoint still
# resumes there (the warning alone), and so does an earlier snapshot where only the --val images changed.
cp -r "$dir/moved" "$dir/fewer" && rm "$(find "$dir/fewer" -type f | sort | head -n 1)"
cp -r "$dir/rows" "$dir/rowsimg"
"$VITMAE" train --resume "$dir/rowsimg/checkpoint-3.safetensors" --data "$dir/fewer" > /dev/null 2> "$dir/err"; rc=$?
diff -r "$dir/rows" "$dir/rowsimg" > "$dir/diff" 2>&1; dr=$?
"$VITMAE" train --resume "$dir/rowsimg/checkpoint-3.safetensors" --data "$dir/fewer" --out "$dir/rowsimg2" > /dev/null 2>&1; rc2=$?
"$VITMAE" train --resume "$dir/rowsimg" --data "$dir/fewer" --steps 10 > /dev/null 2> "$dir/err2"; rc3=$?
t "an earlier snapshot over other training images in its own folder: exit 2, one line, nothing changed; --out and the latest go on ($rc $dr $rc2 $rc3: $(cat "$dir/err" "$dir/diff" "$dir/err2" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -qx "vitmae: train --resume $dir/rowsimg/checkpoint-3.safetensors: $dir/rowsimg holds later checkpoints of this run made with other images than this resume.s (3 files, the first $dir/rowsimg/checkpoint-6.safetensors, step 6 of 8, checkpoint.safetensors among them); going on from step 3 would leave them among its files; continue in a folder of its own with --out DIR (or move them away)" "$dir/err" && [ $dr -eq 0 ] &&
   [ $rc2 -eq 0 ] && [ "$(tail -n 1 "$dir/rowsimg2/metrics.csv" | cut -d, -f1)" = 8 ] &&
   [ $rc3 -eq 0 ] && [ "$(wc -l < "$dir/err2")" -eq 1 ] && grep -q "^vitmae: warning: train --resume: the images of $dir/fewer are not those the run was checkpointed with" "$dir/err2" && [ "$(tail -n 1 "$dir/rowsimg/metrics.csv" | cut -d, -f1)" = 10 ]'
rm -rf "$dir/rowsimg" "$dir/rowsimg2"
# Where only the --val images changed, the training images are the same and so are the later steps: an
# earlier snapshot goes on in its own folder (the warning says the weights train as they would have).
"$VITMAE_TOOLS/synth" "$dir/vimg" --count 6 --size 16 --seed 8 > /dev/null
"$VITMAE" train $base --data "$dir/moved" --val "$dir/vimg" --steps 4 --ckpt-every 2 --keep 5 --out "$dir/valimg" > /dev/null 2>&1
rm "$(find "$dir/vimg" -type f | sort | head -n 1)"
"$VITMAE" train --resume "$dir/valimg/checkpoint-2.safetensors" > /dev/null 2> "$dir/err"; rc=$?
t "an earlier snapshot where only the --val images changed: goes on, the warning alone ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "the training images are the same" "$dir/err" && [ "$(tail -n 1 "$dir/valimg/metrics.csv" | cut -d, -f1)" = 4 ]'
rm -rf "$dir/valimg" "$dir/vimg"

# A metrics.csv whose last row was cut short (a resume that extends the run killed as it wrote its row
# 7, an edit): the resumed run drops that row rather than gluing its next row onto it. (The finished
# run's own last row cut instead is a gap, above: a snapshot writes it again.)
cp -r "$dir/seven" "$dir/seven2"
m="$dir/seven2/metrics.csv"; tail -n 1 "$m" | sed "s/^6,/7,/" | head -c 20 >> "$m"
"$VITMAE" train --resume "$dir/seven2" --data "$dir/moved" --steps 8 > /dev/null 2>&1; rc=$?
t "a cut metrics row: the resume exits 0, every row whole" '[ $rc -eq 0 ] && awk -F, "NF != 8 { bad = 1 } END { exit bad }" "$m" && [ "$(tail -n 1 "$m" | cut -d, -f1)" = 8 ]'

# A resume on a folder whose images changed since the checkpoint (an image added): exit 0, one warning
# line with the counts (it went on in silence, another run than the uninterrupted one); the resume
# after it, on the same images, says nothing.
cp -r "$dir/moved" "$dir/grow"
"$VITMAE" train $small --data "$dir/grow" --steps 4 --out "$dir/g" > /dev/null 2>&1
"$VITMAE" train --resume "$dir/g" --steps 5 --threads 2 > /dev/null 2> "$dir/err"; rc=$?
t "same images on resume: no warning ($(cat "$dir/err"))" '[ $rc -eq 0 ] && [ ! -s "$dir/err" ]'
cp "$(find "$dir/grow" -name "*.png" | head -n 1)" "$dir/grow/added.png"
"$VITMAE" train --resume "$dir/g" --steps 6 --threads 2 > /dev/null 2> "$dir/err"; rc=$?
t "an image added before a resume: exit 0, one warning line ($(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: warning: train --resume: the images of .*/grow are not those the run was checkpointed with (41 usable now, 40 then: .*uninterrupted run would have$" "$dir/err"'
"$VITMAE" train --resume "$dir/g" --steps 7 --threads 2 > /dev/null 2> "$dir/err"; rc=$?
t "the next resume on the same images: no warning" '[ $rc -eq 0 ] && [ ! -s "$dir/err" ]'
# metrics.csv's epoch after a resume on another count of training images: step x batch / the new count
# ran it back (3 images for 2 steps of 4 at 2.67, then 15 added: 0.67 at step 3; removing them jumped
# it ahead). It counts on from the checkpoint's epoch, batch / 18 a step, and a resume on the same
# images after it keeps that stretch: the rows read as the run's that went on without stopping.
mkdir -p "$dir/ep" && "$VITMAE_TOOLS/synth" "$dir/ep/data" --count 3 --size 16 --seed 11 > /dev/null &&
  "$VITMAE_TOOLS/synth" "$dir/ep/more" --count 15 --size 16 --seed 12 > /dev/null
ep="--data $dir/ep/data --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 4 --threads 2 --val-frac 0 --log-every 1"
"$VITMAE" train $ep --steps 2 --out "$dir/ep/r" > /dev/null 2>&1 && cp -r "$dir/ep/r" "$dir/ep/r2"
for f in "$dir"/ep/more/*/*.png; do cp "$f" "$dir/ep/data/$(basename "$(dirname "$f")")/more-$(basename "$f")"; done
"$VITMAE" train --resume "$dir/ep/r" --steps 4 --threads 2 > /dev/null 2>&1; rc=$?
"$VITMAE" train --resume "$dir/ep/r2" --steps 3 --threads 2 > /dev/null 2>&1 && "$VITMAE" train --resume "$dir/ep/r2" --steps 4 --threads 2 > /dev/null 2>&1
t "images added before a resume: the epoch goes on from the checkpoint's, batch / 18 a step ($(cut -d, -f1-2 "$dir/ep/r/metrics.csv" | tr '\n' ' '))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/ep/r/metrics.csv")" -eq 6 ] && awk -F, "NR > 1 {
     want = \$1 <= 2 ? \$1 * 4 / 3 : 8 / 3 + (\$1 - 2) * 4 / 18; d = \$2 - want
     if (d > 1e-12 || d < -1e-12 || \$2 < last) bad = 1; last = \$2 } END { exit bad }" "$dir/ep/r/metrics.csv"'
t "... and a resume on the same images after it keeps the stretch: the same epochs, bitwise ($(cut -d, -f1-2 "$dir/ep/r2/metrics.csv" | tr '\n' ' '))" \
  '[ "$(cut -d, -f1-2 "$dir/ep/r/metrics.csv")" = "$(cut -d, -f1-2 "$dir/ep/r2/metrics.csv")" ] &&
   grep -q "\"epoch_from_step\":[[:space:]]*2," "$dir/ep/r2/config.json"'
# --epochs E of such a resume counts as that column does, from the run's start: --epochs 4 of r (epoch
# 8/3 + 2 x 4/18 = 3.11 at step 4) ends at step 8, epoch 4 (4 x 18 / 4 steps from step 0 ran it to step
# 18, epoch 6.2); --epochs 2.5, not past 3.11, is refused saying so (it went on to step 12, epoch 4.9).
"$VITMAE" train --resume "$dir/ep/r" --epochs 2.5 --threads 2 > /dev/null 2> "$dir/err"; rc=$?
t "images added, --epochs 2.5 of a run at epoch 3.11: refused, saying the epoch ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "vitmae: train --resume: the run is at epoch 3.11 (step 4); --epochs 2.5 is not past it: --epochs counts the passes from the run'"'"'s start, as metrics.csv'"'"'s epoch column does" ] &&
   [ "$(tail -n 1 "$dir/ep/r/metrics.csv" | cut -d, -f1)" = 4 ]'
"$VITMAE" train --resume "$dir/ep/r" --epochs 4 --threads 2 > "$dir/out" 2>&1; rc=$?
t "images added, --epochs 4: the run ends where its epoch column reaches 4, at step 8 ($rc: $(tail -n 1 "$dir/ep/r/metrics.csv" | cut -d, -f1-2))" \
  '[ $rc -eq 0 ] && grep -q "^the run goes on to step 8 (was 4)" "$dir/out" &&
   tail -n 1 "$dir/ep/r/metrics.csv" | awk -F, "{ d = \$2 - 4; exit !(\$1 == 8 && d < 1e-12 && d > -1e-12) }"'
rm -rf "$dir/ep"

# --max-pixels decides which images are usable, so the run keeps it: a plain resume of a run started with
# --max-pixels took the default again, trained on the images the run had skipped and warned that the
# files had changed. Given on resume, it applies (and the warning names it).
mkdir -p "$dir/big" && "$VITMAE_TOOLS/synth" "$dir/big" --count 3 --size 24 --seed 9 > /dev/null
cp -r "$dir/moved" "$dir/mixed" && for f in "$dir"/big/*/*.png; do cp "$f" "$dir/mixed/big-$(basename "$f")"; done
"$VITMAE" train $small --data "$dir/mixed" --max-pixels 300 --steps 4 --out "$dir/mp" > /dev/null 2> "$dir/err"; rc=$?
t "--max-pixels 300: the three 24x24 images skipped ($(grep -c exceeds "$dir/err"))" '[ $rc -eq 0 ] && [ "$(grep -c "exceeds --max-pixels 300$" "$dir/err")" -eq 3 ]'
"$VITMAE" train --resume "$dir/mp" --steps 5 --threads 2 > /dev/null 2> "$dir/err"; rc=$?
t "a resume keeps the run's --max-pixels: the same images, no warning ($(grep -v exceeds "$dir/err"))" \
  '[ $rc -eq 0 ] && ! grep -q warning "$dir/err" && [ "$(grep -c "exceeds --max-pixels 300$" "$dir/err")" -eq 3 ] && grep -q "\"max_pixels\":[[:space:]]*300," "$dir/mp/config.json"'
"$VITMAE" train --resume "$dir/mp" --steps 6 --threads 2 --max-pixels 1000 > /dev/null 2> "$dir/err"; rc=$?
t "--max-pixels given on resume applies, the warning names it ($(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "(43 usable now, 40 then: .*or another --max-pixels)" "$dir/err"'
# A run on a --val folder of its own: the start line gave both counts as "from DATA", and a resume's
# warning counted the --val folder's images as DATA's ("43 usable now" of a 40-image folder).
mkdir -p "$dir/vfold" && cp "$dir"/big/*/*.png "$dir/vfold/"
"$VITMAE" train $base --data "$dir/moved" --val "$dir/vfold" --steps 2 --out "$dir/vr" > "$dir/out" 2> /dev/null; rc=$?
t "--val: the start line names each count's folder ($(head -n 1 "$dir/out"))" \
  '[ $rc -eq 0 ] && grep -q "^vitmae train: 40 train images from $dir/moved, 3 val from $dir/vfold; model " "$dir/out"'
# An image added to the --val folder alone: the weights train as before (validation images never
# train), and the warning said they would not ("it will not end as the uninterrupted run would have").
cp "$(find "$dir/moved" -name "*.png" | head -n 1)" "$dir/vfold/added.png"
"$VITMAE" train --resume "$dir/vr" --steps 3 --threads 2 > /dev/null 2> "$dir/err"; rc=$?
t "--val: an image added there alone, the warning says the weights train as before ($(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -qx "vitmae: warning: train --resume: the images of --val $dir/vfold are not those the run was checkpointed with (4 usable now, 3 then); the training images are the same, so the weights train as they would have, but the validation figures from here on are of other images" "$dir/err"'
cp "$(find "$dir/moved" -name "*.png" | head -n 1)" "$dir/moved/added.png"
"$VITMAE" train --resume "$dir/vr" --steps 4 --threads 2 > /dev/null 2> "$dir/err"; rc=$?
t "--val: a training image added, the resume's warning names both folders, the counts theirs together ($(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "the images of $dir/moved and of --val $dir/vfold are not those the run was checkpointed with (45 usable now, 44 then, the two folders together: .*uninterrupted run would have$" "$dir/err"'
rm -f "$dir/moved/added.png"
# The same for a held-out split (--val-frac, no --val folder): an image added that the split holds out
# (circle/add3.png, by its name) leaves the training images and so the weights as they were; the warning
# said the run "will not end as the uninterrupted run would have". One that trains (circle/add1.png)
# keeps that warning.
rm -rf "$dir/ho" "$dir/hor" && mkdir -p "$dir/ho" && cp -r "$dir/moved/"* "$dir/ho/"
ho="--data $dir/ho --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 8 --threads 2 --val-frac 0.2"
"$VITMAE" train $ho --steps 2 --out "$dir/hor" > /dev/null 2>&1
cp -r "$dir/hor" "$dir/hor0" && cp -r "$dir/hor" "$dir/hor1"
"$VITMAE" train --resume "$dir/hor0" --steps 4 > /dev/null 2>&1
cp "$dir/ho/circle/$(ls "$dir/ho/circle" | head -n 1)" "$dir/ho/circle/add3.png"
"$VITMAE" train --resume "$dir/hor" --steps 4 > "$dir/out" 2> "$dir/err"; rc=$?
t "--val-frac: an image added that the split holds out, the warning says so, the weights as without it ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q " train / 10 val images from" "$dir/out" &&
   grep -qx "vitmae: warning: train --resume: the images held out of $dir/ho for validation (--val-frac) are not those the run was checkpointed with (10 usable now, 9 then); the training images are the same, so the weights train as they would have, but the validation figures from here on are of other images" "$dir/err" &&
   same_weights "$dir/hor/checkpoint.safetensors" "$dir/hor0/checkpoint.safetensors"'
rm "$dir/ho/circle/add3.png"; cp "$dir/ho/circle/$(ls "$dir/ho/circle" | head -n 1)" "$dir/ho/circle/add1.png"
"$VITMAE" train --resume "$dir/hor1" --steps 4 > /dev/null 2> "$dir/err"; rc=$?
t "--val-frac: an image added that trains keeps the older warning ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && grep -q "the images of $dir/ho are not those the run was checkpointed with (41 usable now, 40 then: .*uninterrupted run would have$" "$dir/err"'
rm -rf "$dir/ho" "$dir/hor" "$dir/hor0" "$dir/hor1"
# The split's fallback is the run's (docs/interface.md section 2, "Validation split"): at --val-frac 0.02
# (threshold 200) no name of these 12 images holds out by the rule, so the one of smallest residue,
# stripes/00007.png (370), is held out. An image added of a smaller residue (circle/add3.png, 343) took
# its place at the resume: the old validation image trained, val_loss jumped, and the warning said only
# that the folder's images changed. Now the run keeps its image (at --lr 0 the weights stay, so the same
# image under the same mask gives the same val_loss at every evaluation); only when it is gone does the
# split choose again, and the warning says the validation images are others.
rm -rf "$dir/fb" "$dir/fbr" && mkdir -p "$dir/fb" && "$VITMAE_TOOLS/synth" "$dir/fb" --count 12 --size 16 --seed 5 > /dev/null
fb="--data $dir/fb --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 8 --threads 2 --val-frac 0.02 --lr 0 --eval-every 2"
"$VITMAE" train $fb --steps 2 --out "$dir/fbr" > /dev/null 2>&1
# A run from before the record (the key taken out): its resume chooses as it did, the image of smallest
# residue now, and says that the validation images are others (the training images changed too).
cp -r "$dir/fbr" "$dir/fbo" && edit_state "$dir/fbr/checkpoint.safetensors" "$dir/fbo/checkpoint.safetensors" split_held_out=DEL
cp "$dir/fb/circle/00000.png" "$dir/fb/circle/add3.png"
"$VITMAE" train --resume "$dir/fbo" --steps 4 > /dev/null 2> "$dir/err"; rc=$?
t "--val-frac fallback, a checkpoint without the record: add3.png held out now, the warning says the validation images are others ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && grep -q "\"split_held_out\":[[:space:]]*\"circle/add3.png\"" "$dir/fbo/config.json" &&
   grep -q "(13 usable now, 12 then: .*; the images held out of $dir/fb for validation (--val-frac) are other images too (1 now, 1 then), so the validation figures from here on are of other images$" "$dir/err"'
"$VITMAE" train --resume "$dir/fbr" --steps 4 > "$dir/out" 2> "$dir/err"; rc=$?
val_losses() { awk -F, 'NR > 1 && $5 != "" { print $5 }' "$1/metrics.csv" | sort -u | wc -l; }
t "--val-frac fallback: an image of a smaller residue added, the run holds out its own image still (val_loss the same at each evaluation: $(val_losses "$dir/fbr") values; $rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && grep -q " 12 train / 1 val images from" "$dir/out" && [ "$(val_losses "$dir/fbr")" -eq 1 ] &&
   grep -q "the images of $dir/fb are not those the run was checkpointed with (13 usable now, 12 then: .*uninterrupted run would have$" "$dir/err" &&
   grep -q "\"split_held_out\":[[:space:]]*\"stripes/00007.png\"" "$dir/fbr/config.json"'
mv "$dir/fb/stripes/00007.png" "$dir/fb-00007.png"
"$VITMAE" train --resume "$dir/fbr" --steps 6 > /dev/null 2> "$dir/err"; rc=$?
t "--val-frac fallback: its image gone, the split chooses again and the warning says the validation images are others ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 0 ] && [ "$(val_losses "$dir/fbr")" -eq 2 ] && grep -q "\"split_held_out\":[[:space:]]*\"circle/add3.png\"" "$dir/fbr/config.json" &&
   grep -q "(12 usable now, 13 then: .*uninterrupted run would have; the images held out of $dir/fb for validation (--val-frac) are other images too (1 now, 1 then), so the validation figures from here on are of other images$" "$dir/err"'
rm -rf "$dir/fb" "$dir/fbr" "$dir/fbo"

# An --out whose checkpoints' names would pass the 4096-byte path limit is refused before anything is
# written (it used to write config.json and metrics.csv, then fail at the first checkpoint), in one
# line: the data folder's skipped file is said only by a run that starts (it came first).
cp -r "$dir/moved" "$dir/movedj" && printf 'not an image' > "$dir/movedj/junk.png"
long="$dir/long"
while [ ${#long} -lt 3990 ]; do long="$long/$(printf "%0200d" 0)"; done
long=$(printf "%.4030s" "$long"); mkdir -p "$long"
"$VITMAE" train $small --data "$dir/movedj" --steps 2 --out "$long/r" > /dev/null 2>"$dir/err"; rc=$?
t "--out past the path limit: exit 1, one line ($(tail -c 120 "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train --out: a folder name of [0-9]* bytes is too long for a run folder" "$dir/err"'
t "--out past the path limit: nothing written" '[ ! -e "$long/r" ]'
# 5. A run folder serves one process at a time (docs/data.md, "Run folders"). While a run trains in
# busy, another train given busy to resume or to --overwrite is refused (exit 1, one line) and leaves
# the running run's folder where it is; once it has ended, it resumes. Two runs started at once into
# one new folder: one trains, the other is refused (before the lock, both trained into it).
"$VITMAE" train $small --data "$dir/moved" --steps 1000000000 --log-every 1 --out "$dir/busy" > "$dir/busy.log" 2>&1 &
busy=$!
wait_step "$dir/busy" 1
"$VITMAE" train --resume "$dir/busy" > /dev/null 2>"$dir/err"; rc=$?
t "resume of a run still training: exit 1, one line ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train: .*/busy: in use by another vitmae process" "$dir/err"'
"$VITMAE" train $small --data "$dir/moved" --steps 2 --overwrite --out "$dir/busy" > /dev/null 2>"$dir/err"; rc=$?
t "--overwrite of a run still training: exit 1, nothing moved ($rc)" \
  '[ $rc -eq 1 ] && grep -q "in use by another vitmae process" "$dir/err" && [ ! -e "$dir/busy.old-1" ]'
kill -TERM $busy; wait $busy; rc=$?
saved=$(saved_step "$dir/busy/checkpoint.safetensors")
t "the running run ends as asked and saves (exit $rc, step ${saved:-none})" '[ $rc -eq 0 ] && [ -n "$saved" ]'
"$VITMAE" train --resume "$dir/busy" --steps $((saved + 1)) > /dev/null 2>"$dir/err"; rc=$?
t "once it has ended it resumes ($rc)" '[ $rc -eq 0 ]'
"$VITMAE" train $small --data "$dir/moved" --steps 3 --out "$dir/twin" > "$dir/twin1.log" 2>&1 &
twin=$!
"$VITMAE" train $small --data "$dir/moved" --steps 3 --out "$dir/twin" > "$dir/twin2.log" 2>&1; rc2=$?
wait $twin; rc1=$?
t "two runs started at once into one folder: one trains, one is refused ($rc1, $rc2)" \
  '[ $((rc1 + rc2)) -ge 1 ] && { [ $rc1 -eq 0 ] || [ $rc2 -eq 0 ]; } && grep -q "^vitmae: train.*\(in use by another vitmae process\|already holds a run\)" "$dir/twin1.log" "$dir/twin2.log"'
# A run that found its new folder empty, then waited before locking it (VITMAE_FAULT_HOLD_BEFORE_LOCK)
# while another run trained there and ended: it looks again once it holds the folder, and is refused
# as a folder that holds a run (exit 2, one line: its data folder's skipped file is not said, as a
# refused run's never is); the other run's files are untouched.
VITMAE_FAULT_HOLD_BEFORE_LOCK="$dir/go" "$VITMAE" train $small --data "$dir/movedj" --steps 3 --out "$dir/late" \
  > /dev/null 2>"$dir/late.err" &
late=$!
wait_gate "$dir/go" $late
"$VITMAE" train $small --data "$dir/moved" --steps 2 --out "$dir/late" > /dev/null 2>&1; rc1=$?
cp "$dir/late/checkpoint.safetensors" "$dir/late.first"
touch "$dir/go"; wait $late; rc2=$?
t "a run that comes to its folder after another has trained there: exit 2, one line ($rc1, $rc2: $(cat "$dir/late.err" | tr "\n" "|"))" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 2 ] && [ "$(wc -l < "$dir/late.err")" -eq 1 ] && grep -q "^vitmae: train --out .*/late: the folder already holds a run" "$dir/late.err"'
t "... and the other run's checkpoint is untouched" 'cmp -s "$dir/late/checkpoint.safetensors" "$dir/late.first"'
# moved_run NAME GATE WHAT LINE: train held at the gate VITMAE_FAULT_GATE while it writes WHAT under a
# temporary name, its run folder $dir/NAME/run moved meanwhile to $dir/NAME/moved: the rename fails
# (exit 1, the one line LINE, a grep pattern) and the temporary file goes from the folder where it went,
# through the folder held since it was made (not by its old name, which finds nothing). Nor is an empty
# samples/ left there: train made it at the start, before it had a sheet to put in it.
moved_run() {
  mv_d="$dir/$1"; mv_line=$4   # the condition below is read by t, where $1 is t's own
  mkdir -p "$mv_d"
  env "VITMAE_FAULT_$2=$mv_d.go" "$VITMAE" train $small --data "$dir/moved" --steps 3 --out "$mv_d/run" > /dev/null 2> "$mv_d.err" &
  moved_at_gate "$mv_d.go" $! "$mv_d/run" "$mv_d/moved"; rc=$?
  t "train's folder moved before the rename of $3: exit 1, one line, no temporary file or empty samples/ left where it went ($rc: $(cat "$mv_d.err"); $(ls -AR "$mv_d/moved" | tr "\n" " "))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$mv_d.err")" -eq 1 ] && grep -q "$mv_line" "$mv_d.err" &&
     [ -d "$mv_d/moved" ] && ! ls -A "$mv_d/moved" | grep -q "\.tmp" &&
     { [ ! -e "$mv_d/moved/samples" ] || [ -n "$(ls -A "$mv_d/moved/samples")" ]; }'
}
# config.json (its temporary config.json.tmp.PID.N stayed in the moved folder: removed by its old name).
# The line names the cause, the run folder gone, not the file that met it (config.json's "No such file or
# directory", the checkpoint's "rename failed").
moved_run mvw HOLD_AFTER_WRITE config.json "^vitmae: train: .*/mvw/run: the run folder is gone (moved or deleted during the run)$"
# A checkpoint (io/safetensors.c; its .checkpoint-1.safetensors.tmp-XXXXXX stayed: st_write made it with
# mkstemp and removed it by its old name).
moved_run mvc HOLD_BEFORE_CKPT_RENAME checkpoint-1.safetensors \
  "^vitmae: train: .*/mvc/run: the run folder is gone (moved or deleted during the run)$"   # its first: none to resume
# ... once the save has published checkpoint.safetensors (config.json still to write): the checkpoint went
# with the folder and resumes there, which the line says (it did not: the live move below met that moment
# now and then on a loaded machine, its line without the way on).
moved_run mvp HOLD_AFTER_PUBLISH checkpoint.safetensors \
  "^vitmae: train: .*/mvp/run: the run folder is gone (moved or deleted during the run); if it was moved, --resume goes on from its last checkpoint where it went$"
# live_move NAME CKPT_EVERY FILE AT [EVERY]: train into $dir/NAME/run (--eval-every and --log-every
# EVERY, default 2), wait for run/FILE, then move the folder to $dir/NAME/moved and put AT at its name
# (none, folder or file); wait for the run to end (Ctrl-C after a minute): sets rc, stderr in NAME.err.
live_move() {
  mkdir -p "$dir/$1"
  "$VITMAE" train $small --data "$dir/moved" --steps 100000 --ckpt-every $2 --eval-every ${5:-2} --log-every ${5:-2} \
    --out "$dir/$1/run" > /dev/null 2> "$dir/$1.err" &
  lm=$!
  i=0; while [ $i -lt 1200 ] && [ ! -e "$dir/$1/run/$3" ] && kill -0 $lm 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  mv "$dir/$1/run" "$dir/$1/moved"
  case $4 in folder) mkdir "$dir/$1/run" ;; file) echo x > "$dir/$1/run" ;; esac
  i=0; while [ $i -lt 600 ] && kill -0 $lm 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  kill -INT $lm 2>/dev/null; wait $lm; rc=$?
}
gone_line="the run folder is gone (moved or deleted during the run)"
# The run folder moved while training, no gate: whichever file meets it first (a sample sheet, the
# checkpoint, curves.png), one line that names the folder, no save tried on the way out (it said
# "RUN/samples: No such file or directory", then the save's "cannot create a temporary file"); the
# folder where it went holds its last checkpoint, which resumes there.
live_move mvr 2 checkpoint.safetensors none
t "train's folder moved mid-run: exit 1, one line naming the folder ($rc: $(cat "$dir/mvr.err" | tr "\n" "|"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/mvr.err")" -eq 1 ] && grep -q "^vitmae: train: .*/mvr/run: $gone_line; if it was moved, --resume goes on from its last checkpoint where it went$" "$dir/mvr.err" && [ ! -e "$dir/mvr/run" ]'
"$VITMAE" info "$dir/mvr/moved" > /dev/null 2>&1; rc=$?
t "... and where it went, its checkpoint reads ($rc)" '[ $rc -eq 0 ]'
# ... another put in its place at once: a new folder (mkdir), a file. The run looks before each output
# and save: it stops with the one line, and writes no checkpoint into the new folder (it split the run
# in two, exit 0: the checkpoints in the new folder, metrics.csv in the moved one). No row or
# evaluation between the checkpoints: the look before a save is the one that finds it.
for kind in folder file; do
  live_move mv$kind 2 checkpoint.safetensors $kind 100000
  t "train's folder moved, a $kind put at its name: exit 1, one line, no checkpoint there ($rc: $(tr "\n" "|" < "$dir/mv$kind.err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/mv$kind.err")" -eq 1 ] && grep -q "^vitmae: train: .*/mv$kind/run: $gone_line; if it was moved, --resume goes on from its last checkpoint where it went$" "$dir/mv$kind.err" && ! ls "$dir/mv$kind/run" 2>/dev/null | grep -q safetensors'
done
# ... the same, at the very moment between the look and a save (the gate HOLD_BEFORE_SAVE): the
# checkpoint is not made in the new folder (it was, now and then on a loaded machine, where the loop
# above met that moment: the run's checkpoints split from its metrics.csv); the one line, and the
# moved folder keeps the run's metrics.csv.
env "VITMAE_FAULT_HOLD_BEFORE_SAVE=$dir/pw.go" "$VITMAE" train $small --data "$dir/moved" --steps 4 --ckpt-every 2 \
  --out "$dir/pw/run" > /dev/null 2> "$dir/pw.err" &
pw=$!
mkdir -p "$dir/pw"; wait_gate "$dir/pw.go" $pw; mv "$dir/pw/run" "$dir/pw/moved"; mkdir "$dir/pw/run"; touch "$dir/pw.go"
wait $pw; rc=$?
t "train's folder moved and a new one made at its name just before a save: exit 1, one line, nothing written in the new one ($rc: $(tr "\n" "|" < "$dir/pw.err"); new: $(ls -A "$dir/pw/run" | tr "\n" " "))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/pw.err")" -eq 1 ] && grep -q "^vitmae: train: .*/pw/run: $gone_line$" "$dir/pw.err" &&
   [ -z "$(ls -A "$dir/pw/run")" ] && [ -f "$dir/pw/moved/metrics.csv" ]'
# metrics.csv deleted while the run trains (at the gate HOLD_BEFORE_SAVE of step 3, rows 0..3 written; a
# hard link keeps the file the run holds open): the rows went on into the deleted file, exit 0, no
# metrics.csv in the finished run. Now the row of step 4 finds it gone, writes it again from the file
# the run holds (byte for byte: the rows before the deletion, img_per_s and elapsed_s too) with one
# warning, and goes on in the new one: the run's rows are those of an undisturbed run of the same seed.
mg="$small --data $dir/moved --steps 6 --ckpt-every 3 --log-every 1"
mkdir -p "$dir/mg"
"$VITMAE" train $mg --out "$dir/mg/ref" > /dev/null 2>&1
env "VITMAE_FAULT_HOLD_BEFORE_SAVE=$dir/mg.go" "$VITMAE" train $mg --out "$dir/mg/run" > /dev/null 2> "$dir/mg.err" &
pid=$!; wait_gate "$dir/mg.go" $pid
ln "$dir/mg/run/metrics.csv" "$dir/mg/held.csv" && rm "$dir/mg/run/metrics.csv"; touch "$dir/mg.go"; wait $pid; rc=$?
t "metrics.csv deleted mid-run: exit 0, one warning, written again whole, the rows an undisturbed run writes ($rc: $(tr "\n" "|" < "$dir/mg.err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$dir/mg.err")" = "vitmae: warning: $dir/mg/run/metrics.csv was deleted or moved away during the run; written again from the run'"'"'s rows" ] &&
   head -c "$(wc -c < "$dir/mg/held.csv")" "$dir/mg/run/metrics.csv" | cmp -s - "$dir/mg/held.csv" && [ "$(wc -l < "$dir/mg/held.csv")" -eq 5 ] &&
   cut -d, -f1-6 "$dir/mg/run/metrics.csv" > "$dir/mg/run.cols" && cut -d, -f1-6 "$dir/mg/ref/metrics.csv" > "$dir/mg/ref.cols" &&
   cmp -s "$dir/mg/run.cols" "$dir/mg/ref.cols" && [ "$(wc -l < "$dir/mg/run.cols")" -eq 8 ]'
# ... in a resumed run: the rows from before the resume are written again too. Stopped (SIGINT) at step 3,
# resumed, deleted at the resume's checkpoint of step 6 (--steps 8).
mg8="$small --data $dir/moved --steps 8 --ckpt-every 3 --log-every 1"
"$VITMAE" train $mg8 --out "$dir/mg/ref8" > /dev/null 2>&1
env "VITMAE_FAULT_HOLD_BEFORE_SAVE=$dir/mg8a.go" "$VITMAE" train $mg8 --out "$dir/mg/res" > /dev/null 2>&1 &
pid=$!; wait_gate "$dir/mg8a.go" $pid; kill -INT $pid; touch "$dir/mg8a.go"; wait $pid
env "VITMAE_FAULT_HOLD_BEFORE_SAVE=$dir/mg8b.go" "$VITMAE" train --resume "$dir/mg/res" > /dev/null 2> "$dir/mg8.err" &
pid=$!; wait_gate "$dir/mg8b.go" $pid
rm "$dir/mg/res/metrics.csv"; touch "$dir/mg8b.go"; wait $pid; rc=$?
cut -d, -f1-6 "$dir/mg/res/metrics.csv" > "$dir/mg/res.cols" 2>/dev/null; cut -d, -f1-6 "$dir/mg/ref8/metrics.csv" > "$dir/mg/ref8.cols"
t "... deleted in a resumed run: exit 0, one warning, the rows from step 0 on, an undisturbed run's ($rc: $(tr "\n" "|" < "$dir/mg8.err"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^vitmae: warning: .*/mg/res/metrics.csv was deleted or moved away during the run; written again from the run" "$dir/mg8.err")" -eq 1 ] &&
   [ "$(grep -vc "^vitmae: warning: .*/mg/res/metrics.csv was deleted" "$dir/mg8.err")" -eq 0 ] &&
   cmp -s "$dir/mg/res.cols" "$dir/mg/ref8.cols" && [ "$(wc -l < "$dir/mg/res.cols")" -eq 10 ]'
# ... a folder put at its name: nothing is written over it; exit 1 with one line naming it (as a run
# that starts with one), the step's checkpoint saved as for any failed output (it ended rc 0, no rows).
env "VITMAE_FAULT_HOLD_BEFORE_SAVE=$dir/mgd.go" "$VITMAE" train $mg --out "$dir/mg/dir" > /dev/null 2> "$dir/mgd.err" &
pid=$!; wait_gate "$dir/mgd.go" $pid
rm "$dir/mg/dir/metrics.csv" && mkdir "$dir/mg/dir/metrics.csv"; touch "$dir/mgd.go"; wait $pid; rc=$?
t "... a folder put at metrics.csv mid-run: exit 1, its line, the step's checkpoint saved ($rc: $(tr "\n" "|" < "$dir/mgd.err"))" \
  '[ $rc -eq 1 ] && [ "$(sed -n 1p "$dir/mgd.err")" = "vitmae: train: $dir/mg/dir/metrics.csv: not a regular file (put at its name during the run)" ] &&
   [ "$(sed -n 2p "$dir/mgd.err")" = "vitmae: saved $dir/mg/dir/checkpoint.safetensors at step 4 of 6 (continue with --resume $dir/mg/dir)" ] &&
   [ "$(wc -l < "$dir/mgd.err")" -eq 2 ] && [ -d "$dir/mg/dir/metrics.csv" ] && [ "$(saved_step "$dir/mg/dir/checkpoint.safetensors")" = 4 ]'
# ... deleted, then a FIFO, a link to nothing or a folder put at its name between the look that finds it
# gone and the publish of the rewritten file (the gate HOLD_BEFORE_METRICS_REWRITE): nothing is written
# over it, the line as at the look, exit 1, the checkpoint saved. The rename replaced the FIFO or link
# with a regular file (a warning, exit 0), and a folder said "Is a directory (... writing it again ...)".
for kind in fifo link dir; do
  env "VITMAE_FAULT_HOLD_BEFORE_SAVE=$dir/mr$kind.go" "VITMAE_FAULT_HOLD_BEFORE_METRICS_REWRITE=$dir/mr$kind.put" \
    "$VITMAE" train $mg --out "$dir/mg/r$kind" > /dev/null 2> "$dir/mr$kind.err" &
  pid=$!; wait_gate "$dir/mr$kind.go" $pid; rm "$dir/mg/r$kind/metrics.csv"; touch "$dir/mr$kind.go"
  wait_gate "$dir/mr$kind.put" $pid
  case $kind in
    fifo) mkfifo "$dir/mg/r$kind/metrics.csv" ;;
    link) ln -s ../nonexist "$dir/mg/r$kind/metrics.csv" ;;
    dir) mkdir "$dir/mg/r$kind/metrics.csv" ;;
  esac
  touch "$dir/mr$kind.put"; wait $pid; rc=$?
  t "... a $kind put at metrics.csv as it is written again: exit 1, its line, the checkpoint saved, the $kind left ($rc: $(tr "\n" "|" < "$dir/mr$kind.err"))" \
    '[ $rc -eq 1 ] && [ "$(sed -n 1p "$dir/mr$kind.err")" = "vitmae: train: $dir/mg/r$kind/metrics.csv: not a regular file (put at its name during the run)" ] &&
     [ "$(sed -n 2p "$dir/mr$kind.err")" = "vitmae: saved $dir/mg/r$kind/checkpoint.safetensors at step 4 of 6 (continue with --resume $dir/mg/r$kind)" ] &&
     [ "$(wc -l < "$dir/mr$kind.err")" -eq 2 ] && [ "$(saved_step "$dir/mg/r$kind/checkpoint.safetensors")" = 4 ] &&
     case $kind in fifo) [ -p "$dir/mg/r$kind/metrics.csv" ] ;; link) [ -L "$dir/mg/r$kind/metrics.csv" ] &&
       [ "$(readlink "$dir/mg/r$kind/metrics.csv")" = ../nonexist ] ;; dir) [ -d "$dir/mg/r$kind/metrics.csv" ] ;; esac'
done
# ... deleted after the run's last row (during its last sample sheet, checkpoint and curves; held at the
# gate HOLD_BEFORE_LAST_LOOK): the finished run had no metrics.csv, exit 0, nothing said. Now the run
# looks once more as it ends and writes it again whole with the warning; the same at a stop's end.
env "VITMAE_FAULT_HOLD_BEFORE_LAST_LOOK=$dir/ml.go" "$VITMAE" train $mg --out "$dir/mg/last" > /dev/null 2> "$dir/ml.err" &
pid=$!; wait_gate "$dir/ml.go" $pid
ln "$dir/mg/last/metrics.csv" "$dir/mg/last.csv" 2>/dev/null && rm "$dir/mg/last/metrics.csv"; touch "$dir/ml.go"; wait $pid; rc=$?
t "... deleted after the run's last row: exit 0, one warning, written again whole ($rc: $(tr "\n" "|" < "$dir/ml.err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$dir/ml.err")" = "vitmae: warning: $dir/mg/last/metrics.csv was deleted or moved away during the run; written again from the run'"'"'s rows" ] &&
   cmp -s "$dir/mg/last/metrics.csv" "$dir/mg/last.csv" && [ "$(wc -l < "$dir/mg/last.csv")" -eq 8 ]'
env "VITMAE_FAULT_HOLD_BEFORE_SAVE=$dir/mls.stop" "VITMAE_FAULT_HOLD_BEFORE_LAST_LOOK=$dir/mls.go" \
  "$VITMAE" train $mg --out "$dir/mg/lastst" > /dev/null 2> "$dir/mls.err" &
pid=$!; wait_gate "$dir/mls.stop" $pid; kill -INT $pid; touch "$dir/mls.stop"; wait_gate "$dir/mls.go" $pid
ln "$dir/mg/lastst/metrics.csv" "$dir/mg/lastst.csv" 2>/dev/null && rm "$dir/mg/lastst/metrics.csv"; touch "$dir/mls.go"; wait $pid; rc=$?
t "... deleted at a stop's end: exit 0, one warning, written again whole ($rc: $(tr "\n" "|" < "$dir/mls.err"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/mls.err")" -eq 2 ] && grep -q "^vitmae: SIGINT: finishing this step" "$dir/mls.err" &&
   [ "$(sed -n 2p "$dir/mls.err")" = "vitmae: warning: $dir/mg/lastst/metrics.csv was deleted or moved away during the run; written again from the run'"'"'s rows" ] &&
   cmp -s "$dir/mg/lastst/metrics.csv" "$dir/mg/lastst.csv" && [ "$(wc -l < "$dir/mg/lastst.csv")" -eq 5 ]'
# ... moved before its first checkpoint: no resume offered (--resume of it says there is nothing to resume).
live_move mvn 100000 curves.png none
t "train's folder moved before its first checkpoint: exit 1, the line offers no --resume ($rc: $(tr "\n" "|" < "$dir/mvn.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/mvn.err")" -eq 1 ] && grep -q "^vitmae: train: .*/mvn/run: $gone_line$" "$dir/mvn.err"'
# at_once NAME GATE ARGS...: `vitmae train ARGS` held at VITMAE_FAULT_HOLD_<GATE> ($dir/NAME.go), then
# Ctrl-C twice (the second stops at once without saving): sets rc and held, what the folder $peek held
# at the gate. The second is sent once the first one's line is said (two sent while the first is still
# pending would be one signal: a loaded machine took more than a fixed pause).
at_once() {
  ao_go="$dir/$1.go"; ao_err="$dir/$1.err"; ao_gate=$2; shift 2
  env --default-signal "VITMAE_FAULT_HOLD_$ao_gate=$ao_go" "$VITMAE" train "$@" > /dev/null 2> "$ao_err" &
  ao_pid=$!; wait_gate "$ao_go" $ao_pid
  held=$(ls -A "$peek" 2>&1 | tr "\n" " ")
  kill -INT $ao_pid
  ao_i=0; while [ $ao_i -lt 300 ] && ! grep -q "^vitmae: SIGINT: " "$ao_err"; do sleep 0.1; ao_i=$((ao_i + 1)); done
  kill -INT $ao_pid; wait $ao_pid; rc=$?
}
# A stop at once while a working image is written to the --store folder: the store's temporary file
# goes (io/files.h's cleanup; it stayed, HASH.work.tmp.<pid>.<thread>, and nothing removes it later).
peek="$dir/sw/store"
at_once sw IN_STORE_WRITE $small --data "$dir/moved" --steps 3 --store "$dir/sw/store" --out "$dir/sw/run"
t "a second Ctrl-C while a store file is written: exit 130, no temporary file left in the store ($rc; at the gate: $held; now: $(ls -A "$dir/sw/store" | grep "\.tmp\." | tr "\n" " "))" \
  '[ $rc -eq 130 ] && [ "${held#*.work.tmp.}" != "$held" ] && ! ls -A "$dir/sw/store" | grep -q "\.tmp\."'
# ... and between the checkpoint's link .checkpoint.link.<host>.<pid>.XXXXXX and its rename to checkpoint.safetensors
# (left behind until the next start in the folder).
peek="$dir/ln/run"
at_once ln BEFORE_LATEST_RENAME $small --data "$dir/moved" --steps 3 --out "$dir/ln/run"
t "a second Ctrl-C between the checkpoint's link and its rename: exit 130, no link left ($rc; at the gate: $held)" \
  '[ $rc -eq 130 ] && [ "${held#*.checkpoint.link.}" != "$held" ] && ! ls -A "$dir/ln/run" | grep -q "^\.checkpoint\.link\."'
# ... its line says what a resume finds: the snapshot, whole in place, not yet checkpoint.safetensors
# (it said "without saving (no checkpoint was saved yet: the steps run are lost)"); its advice resumes.
ln_snap=$(ls "$dir/ln/run" | grep "^checkpoint-[0-9]*\.safetensors$")
"$VITMAE" train --resume "$dir/ln/run/$ln_snap" --steps 4 > /dev/null 2> "$dir/ln.resume"; rc=$?
t "... and says $ln_snap was saved, to resume with --resume (resumed: $rc; $(tail -n 1 "$dir/ln.err") $(cat "$dir/ln.resume"))" \
  '[ -n "$ln_snap" ] && [ "$(tail -n 1 "$dir/ln.err")" = "vitmae: SIGINT again: stopped at once; $dir/ln/run/$ln_snap was saved, $dir/ln/run/checkpoint.safetensors is not it yet (continue with --resume $dir/ln/run/$ln_snap)" ] &&
   [ $rc -eq 0 ] && [ "$(saved_step "$dir/ln/run/checkpoint.safetensors")" = 4 ]'
# ... and between checkpoint.safetensors's rename and the mark that it is published (the gate
# VITMAE_FAULT_HOLD_AFTER_LATEST_RENAME): it is in place, and the line says the checkpoint was saved.
peek="$dir/lr/run"
at_once lr AFTER_LATEST_RENAME $small --data "$dir/moved" --steps 3 --out "$dir/lr/run"
lr_step=$(saved_step "$dir/lr/run/checkpoint.safetensors")
"$VITMAE" train --resume "$dir/lr/run" --steps $((${lr_step:-0} + 1)) > /dev/null 2>&1; rc2=$?
t "a second Ctrl-C once checkpoint.safetensors is renamed in place: the checkpoint was saved, and resumes ($rc $rc2; step ${lr_step:-none}; $(tail -n 1 "$dir/lr.err"))" \
  '[ $rc -eq 130 ] && [ -n "$lr_step" ] && [ "$(tail -n 1 "$dir/lr.err")" = "vitmae: SIGINT again: stopped at once; the checkpoint was saved" ] && [ $rc2 -eq 0 ]'
# A file at the link's old name, .checkpoint.link.<pid> (here a user's link to a file outside), made while
# the run held at its first checkpoint's rename: it was removed (unlink first, by name); now the link
# has a name of its own and that file stays as it is.
mkdir -p "$dir/lp" && echo mine > "$dir/lp/outside"
VITMAE_FAULT_HOLD_BEFORE_CKPT_RENAME="$dir/lp.go" "$VITMAE" train $small --data "$dir/moved" --steps 3 --out "$dir/lp/run" \
  > /dev/null 2> "$dir/lp.err" &
lp=$!
wait_gate "$dir/lp.go" $lp
ln -s "$dir/lp/outside" "$dir/lp/run/.checkpoint.link.$lp" && touch "$dir/lp.go"; wait $lp; rc=$?
t "a file named .checkpoint.link.<pid> in the run folder is neither removed nor followed ($rc: $(cat "$dir/lp.err"))" \
  '[ $rc -eq 0 ] && [ -L "$dir/lp/run/.checkpoint.link.$lp" ] && [ "$(cat "$dir/lp/outside")" = mine ] &&
   [ -n "$(saved_step "$dir/lp/run/checkpoint.safetensors")" ]'
# A run stopped (SIGINT, at config.json's write) before its first sample sheet (--sample-every 10): its
# run folder holds a checkpoint and stays, with no samples/ (it kept one, made at the start, empty).
# (train saves and stops at its next step: the gate is opened once the signal is sent.)
VITMAE_FAULT_HOLD_AFTER_WRITE="$dir/nosheet.go" "$VITMAE" train $small --data "$dir/moved" --steps 20 --sample-every 10 \
  --out "$dir/nosheet" > /dev/null 2>&1 &
pid=$!; wait_gate "$dir/nosheet.go" $pid; kill -INT $pid; touch "$dir/nosheet.go"; wait $pid; rc=$?
t "a run stopped before its first sample sheet: exit 0, a checkpoint, no samples/ ($rc: $(ls -A "$dir/nosheet" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ -s "$dir/nosheet/checkpoint.safetensors" ] && [ ! -e "$dir/nosheet/samples" ]'
# No --out: runs/<YYYYmmdd-HHMMSS>. A run started in a second that already had a run (a loop of short
# runs) was refused ("holds a run; pass --resume"), and runs started together by a script took one
# name: all but one failed. The name now goes on to <stamp>-2, -3, ...
mkdir "$dir/dflt" && cd "$dir/dflt" || exit 1
now=$(date +%s)
for s in 0 1 2 3 4 5 6 7 8 9; do   # for each of the next seconds (whichever the command starts in):
  stamp=$(date -d "@$((now + s))" +%Y%m%d-%H%M%S)   # a folder of notes, and a run in <stamp>-2
  mkdir -p "runs/$stamp" "runs/$stamp-2" && echo notes > "runs/$stamp/notes.txt" && echo '{}' > "runs/$stamp-2/config.json"
done
"$VITMAE" train $small --data "$dir/moved" --steps 1 > "$dir/d.log" 2> "$dir/d.err"; rc=$?
t "no --out, its second's folders taken: exit 0 ($rc: $(tail -n 1 "$dir/d.err"))" '[ $rc -eq 0 ]'
t "... its run in <stamp>-3 ($(ls runs | tr "\n" " "))" '[ "$(ls -d runs/*-3/checkpoint.safetensors | wc -l)" -eq 1 ] && [ "$(ls runs | wc -l)" -eq 21 ]'
t "... the other folders as they were" '[ "$(find runs -type f | wc -l)" -eq "$(($(find runs/*-3 -type f | wc -l) + 20))" ]'
rm -rf runs
for k in 1 2 3; do
  VITMAE_FAULT_HOLD_AFTER_SCAN="$dir/go$k" "$VITMAE" train $small --data "$dir/moved" --steps 1 > "$dir/d$k.log" 2>&1 &
  eval "pid$k=\$!"
done
wait_gate "$dir/go1" $pid1; wait_gate "$dir/go2" $pid2; wait_gate "$dir/go3" $pid3
touch "$dir/go1" "$dir/go2" "$dir/go3"
wait $pid1; rc1=$?; wait $pid2; rc2=$?; wait $pid3; rc3=$?
t "three runs without --out at once: all exit 0 ($rc1 $rc2 $rc3: $(cat "$dir/d1.log" "$dir/d2.log" "$dir/d3.log" | grep vitmae: | head -n 1))" '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ]'
t "... each in a folder of its own ($(ls runs | tr "\n" " "))" '[ "$(ls runs/*/checkpoint.safetensors | wc -l)" -eq 3 ] && [ "$(ls runs | wc -l)" -eq 3 ]'
cd "$dir/work" && rm -rf "$dir/dflt"
# No --out, and runs/ made by this run: another run takes runs/<stamp> before this one locks it (a
# metrics.csv there, at the gate HOLD_BEFORE_LOCK), so this one goes on to runs/<stamp>-2; the other
# run's folder then goes away (at the gate HOLD_IN_WRITE_TEST, in -2's check that it takes files; the
# first folder's check passed it, its gate file there then), and this run fails before its first file
# (a file-size limit of 0, set with prlimit; its stderr goes through a pipe, which the limit spares).
# It removes every folder it made, runs/ with -2: it left runs/ behind, empty (the fallback forgot
# what its first try had made). fallback_fails: tests/lib.sh.
mkdir "$dir/fb" && cd "$dir/fb" || exit 1
fallback_fails train $small --data "$dir/moved" --steps 1
t "no --out, runs/<stamp> taken then gone, the run fails in <stamp>-2: exit 1, no runs/ left ($rc: $(tail -n 1 "$dir/fb.err"); $first; $(ls -AR runs 2>&1 | tr "\n" " "))" \
  '[ $rc -eq 1 ] && [ -n "$first" ] && grep -q "^vitmae: train: .*-2/config.json" "$dir/fb.err" && [ ! -e runs ]'
# ... a runs/ that was there before stays (empty), as every folder a failed run did not make does.
mkdir -p runs
fallback_fails train $small --data "$dir/moved" --steps 1
t "... a runs/ that was there before stays, empty ($rc: $(tail -n 1 "$dir/fb.err"); $(ls -AR runs 2>&1 | tr "\n" " "))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: train: .*-2/config.json" "$dir/fb.err" && [ -d runs ] && [ -z "$(ls -A runs)" ]'
cd "$dir/work" && rm -rf "$dir/fb" "$dir"/fb.*

# Paths that meet (docs/interface.md): a run folder inside its data folder trained on its own sample
# panels and curves.png at the next scan (a resume said "the images changed" and went on with them); a
# data folder inside the run folder went away with the old run under --overwrite ("no image decodes").
# Each is one line, exit 2, before anything is written; also through a link and from the data folder.
cp -r "$dir/moved" "$dir/meet" && ln -s "$dir/meet" "$dir/meetlink"
meet_refused() {   # NAME NEEDLE ARGS...: exit 2, one line holding NEEDLE, no run folder made
  _name=$1; _needle=$2; shift 2
  "$VITMAE" "$@" > /dev/null 2> "$dir/meet.err"; rc=$?
  t "$_name: exit 2, one line ($rc: $(head -n 2 "$dir/meet.err" | tr "\n" "|"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/meet.err")" -eq 1 ] && grep -q "^vitmae: $_needle" "$dir/meet.err"'
}
meet="--img 16 --patch 4 --dim 32 --depth 1 --heads 2 --batch 8 --threads 2 --steps 1"
meet_refused "train --out inside --data" "train --out: $dir/meet/run is inside the data folder $dir/meet: the run's sample panels and curves.png would be read as images" \
  train $meet --data "$dir/meet" --out "$dir/meet/run"
t "... nothing made there" '[ ! -e "$dir/meet/run" ]'
meet_refused "train --out equal to --data" "train --out: $dir/meet is the same folder as the data folder" train $meet --data "$dir/meet" --out "$dir/meet"
meet_refused "train --out inside --data through a link" "train --out: $dir/meet/run is inside the data folder $dir/meetlink:" \
  train $meet --data "$dir/meetlink" --out "$dir/meet/run"
# ... and when a link below the data folder leads to the run folder or a folder holding it: the
# paths did not meet, the run went ahead, and the next scan (`vitmae data`, a --resume) followed the
# link into the run's sample panels and curves.png. A loop link beside it ends the walk's way there.
mkdir "$dir/lruns" && ln -s "$dir/lruns" "$dir/meet/lk" && ln -s "$dir/meet" "$dir/meet/loop"
meet_refused "train --out reached through a link below --data" "train --out: $dir/lruns/p4/run is inside the data folder $dir/meet through a link (its scan enters $dir/meet/lk): the run's sample panels" \
  train $meet --data "$dir/meet" --out "$dir/lruns/p4/run"
t "... nothing made there" '[ -z "$(ls -A "$dir/lruns")" ]'
rm "$dir/meet/lk" "$dir/meet/loop" && rmdir "$dir/lruns"
meet_refused "train --out inside --val" "train --out: $dir/meet/circle/run is inside the --val folder $dir/meet/circle:" \
  train $meet --data "$dir/moved" --val "$dir/meet/circle" --out "$dir/meet/circle/run"
# A --val folder inside the data folder is taken as given (its images also train), with one warning
# line (it was silent); a --val folder apart has none.
"$VITMAE" train $meet --data "$dir/meet" --val "$dir/meet/circle" --out "$dir/valin" > /dev/null 2> "$dir/meet.err"; rc=$?
t "train --val inside --data: runs, one warning ($rc: $(cat "$dir/meet.err"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/meet.err")" -eq 1 ] && grep -q "^vitmae: warning: --val $dir/meet/circle is inside --data $dir/meet: its images also train; the results measure fit, not generalisation$" "$dir/meet.err"'
# ... naming the folders as the user gave them, not the absolute paths the run records for --resume
# (docs/interface.md, section 1, "Paths"; it said "--val /abs/meet/circle is inside --data /abs/meet");
# a resume given neither names the recorded paths.
(cd "$dir" && "$VITMAE" train $meet --data meet --val ./meet/circle/ --out "$dir/valrel" > /dev/null 2> "$dir/meet.err"); rc=$?
t "train --val inside --data, relative names: the warning names them as given ($rc: $(cat "$dir/meet.err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$dir/meet.err")" = "vitmae: warning: --val ./meet/circle is inside --data meet: its images also train; the results measure fit, not generalisation" ]'
"$VITMAE" train --resume "$dir/valrel" --steps 2 > /dev/null 2> "$dir/meet.err"; rc=$?
t "... its resume without --data or --val names the recorded paths ($rc: $(cat "$dir/meet.err"))" \
  '[ $rc -eq 0 ] && grep -q "^vitmae: warning: --val $dir/meet/circle is inside --data $dir/meet: its images also train" "$dir/meet.err"'
rm -rf "$dir/valrel"
"$VITMAE" train $meet --data "$dir/meet/circle" --val "$dir/meet" --out "$dir/valout" > /dev/null 2> "$dir/meet.err"; rc=$?
t "train --data inside --val: one warning ($rc: $(cat "$dir/meet.err"))" \
  '[ $rc -eq 0 ] && grep -q "^vitmae: warning: --data $dir/meet/circle is inside --val $dir/meet: its images are also held out;" "$dir/meet.err"'
"$VITMAE" train $meet --data "$dir/moved" --val "$dir/meet/circle" --out "$dir/valapart" > /dev/null 2> "$dir/meet.err"; rc=$?
t "train --val apart: no warning ($rc)" '[ $rc -eq 0 ] && ! grep -q warning "$dir/meet.err"'
rm -rf "$dir/valin" "$dir/valout" "$dir/valapart"
(cd "$dir/meet" && "$VITMAE" train $meet --data . > /dev/null 2> "$dir/meet.err"); rc=$?
t "train --data . without --out: the default run folder refused ($rc: $(cat "$dir/meet.err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: train: the default run folder runs/[0-9-]* is inside the data folder \.:" "$dir/meet.err" && [ ! -e "$dir/meet/runs" ]'
meet_refused "finetune --out inside --data" "finetune --out: $dir/meet/ft is inside the data folder $dir/meet: the run's curves.png" \
  finetune --from-scratch $meet --data "$dir/meet" --out "$dir/meet/ft"
"$VITMAE" train $meet --data "$dir/meet" --out "$dir/mrun" > /dev/null 2>&1
# A folder cannot move out of itself ("move the run folder out of it, then resume it there"): --data
# RUN, a slip for the images' folder, is asked for that folder; one inside the images still moves out.
meet_refused "train --resume RUN --data RUN" "train --resume: $dir/mrun is the same folder as the data folder .*; give the folder of the images with --data DIR$" train --resume "$dir/mrun" --data "$dir/mrun"
meet_refused "train --resume RUN --data PARENT" "train --resume: $dir/mrun is inside the data folder $dir: .*; move the run folder out of it, then resume it there$" train --resume "$dir/mrun" --data "$dir"
# train's sample sheets go where RUN/samples leads (section 1, "A link to a folder is followed"): a link
# to, or into, the data or --val folder put them among the images, exit 0, and the next scan trained on
# them (a resume warned only that the images were not those the run was checkpointed with). Refused,
# one line, exit 2, before anything is written: a new run's --out, a resume (the link made between
# runs), --val; also a link below the data folder that leads its scan into the run's samples/.
mkdir "$dir/slnk" && ln -s "$dir/meet/circle" "$dir/slnk/samples"
sway="the run's sample sheets would be read as images by the next scan (a --resume, the next run)"
meet_refused "train --out whose samples links into --data" "train --out: $dir/slnk/samples is a symbolic link to $dir/meet/circle, which lies inside the data folder $dir/meet: $sway; move the link away, or point it at a folder outside the data folder$" \
  train $meet --data "$dir/meet" --out "$dir/slnk"
t "... nothing written, no sheet among the images" '[ "$(ls -A "$dir/slnk")" = samples ] && [ -z "$(find "$dir/meet" -name "step-*")" ]'
meet_refused "train --out whose samples links to --val" "train --out: $dir/slnk/samples is a symbolic link to $dir/meet/circle, which is the --val folder $dir/meet/circle: $sway; " \
  train $meet --data "$dir/moved" --val "$dir/meet/circle" --out "$dir/slnk"
rows=$(wc -l < "$dir/mrun/metrics.csv") && mv "$dir/mrun/samples" "$dir/mrun-samples" && ln -s "$dir/meet" "$dir/mrun/samples"
meet_refused "train --resume, samples linked to --data since" "train --resume: $dir/mrun/samples is a symbolic link to $dir/meet, which is the data folder $dir/meet: $sway; move the link away" \
  train --resume "$dir/mrun" --steps 2
t "... the run as it was, no sheet among the images" \
  '[ "$(wc -l < "$dir/mrun/metrics.csv")" -eq "$rows" ] && [ -z "$(find "$dir/meet" -name "step-*")" ]'
rm "$dir/mrun/samples" && mv "$dir/mrun-samples" "$dir/mrun/samples" && ln -s "$dir/mrun/samples" "$dir/meet/sheets"
meet_refused "train --resume, a link in --data to the run's samples/" "train --resume: $dir/mrun/samples is inside the data folder $dir/meet through a link (its scan enters $dir/meet/sheets): $sway; move the link $dir/meet/sheets out of the data folder$" \
  train --resume "$dir/mrun" --steps 2
rm "$dir/meet/sheets" && rm -r "$dir/slnk"
cp -r "$dir/meet" "$dir/mrun/imgs"
meet_refused "train --out RUN --overwrite, --data inside RUN" "train --out: $dir/mrun holds the data folder $dir/mrun/imgs (--overwrite would move it away" \
  train $meet --data "$dir/mrun/imgs" --out "$dir/mrun" --overwrite
t "... the run and its images stay where they were" '[ ! -e "$dir/mrun.old-1" ] && [ -s "$dir/mrun/checkpoint.safetensors" ] && [ -d "$dir/mrun/imgs" ]'
# ... also when the data folder is a link inside the run folder to images elsewhere: the scan's paths
# went through RUN/imgs, which --overwrite moved away ("the folder is gone" mid-run).
rm -rf "$dir/mrun/imgs" && ln -s "$dir/meet" "$dir/mrun/imgs"
meet_refused "train --out RUN --overwrite, --data a link in RUN" "train --out: $dir/mrun holds the data folder $dir/mrun/imgs" \
  train $meet --data "$dir/mrun/imgs" --out "$dir/mrun" --overwrite

# Another run's folder given as the images' folder (--data RUN where --init RUN or --ckpt RUN was meant):
# train read its sample sheets and curves.png as training images, exit 0 (a greyscale run's model became
# 3-channel). Refused, one line, exit 2, nothing made (docs/data.md, "Files"): the data folder itself, a
# run folder below it, --val; finetune too; one told by its config.json alone. Another program's
# config.json is no run. data, eval and probe go on with a warning.
rm "$dir/mrun/imgs"
"$VITMAE" train $meet --steps 2 --sample-every 1 --data "$dir/meet" --out "$dir/rdrun" --overwrite > /dev/null 2>&1
rdway="(--init and --resume take a run folder)"
meet_refused "train --data RUN, another run's folder" "train --data: $dir/rdrun is a vitmae run folder (it holds checkpoint.safetensors): its sample sheets and curves.png would be read as training images; give the folder of the images with --data DIR $rdway$" \
  train $meet --data "$dir/rdrun" --out "$dir/rdbad"
t "... nothing made" '[ ! -e "$dir/rdbad" ] && [ ! -e runs ]'
mkdir "$dir/rdin" && cp -r "$dir/moved/." "$dir/rdin/" && cp -r "$dir/rdrun" "$dir/rdin/circle/old"
meet_refused "train --data holding a run folder below it" "train --data: $dir/rdin/circle/old is a vitmae run folder (it holds checkpoint.safetensors) inside the data folder $dir/rdin: its sample sheets and curves.png would be read as training images; move the run folder out of it, or give the folder of the images with --data DIR $rdway$" \
  train $meet --data "$dir/rdin" --out "$dir/rdbad"
meet_refused "train --val RUN" "train --val: $dir/rdrun is a vitmae run folder (it holds checkpoint.safetensors): its sample sheets and curves.png would be read as validation images; give the folder of the validation images with --val DIR $rdway$" \
  train $meet --data "$dir/moved" --val "$dir/rdrun" --out "$dir/rdbad"
meet_refused "finetune --data holding a run folder" "finetune --data: $dir/rdin/circle/old is a vitmae run folder .*(--ckpt and --resume take a run folder)$" \
  finetune --from-scratch $meet --data "$dir/rdin" --out "$dir/rdbad"
rm "$dir"/rdin/circle/old/*.safetensors
meet_refused "train --data holding a run folder told by its config.json" "train --data: $dir/rdin/circle/old is a vitmae run folder (it holds config.json) inside" \
  train $meet --data "$dir/rdin" --out "$dir/rdbad"
t "... nothing made" '[ ! -e "$dir/rdbad" ]'
echo '{"model_type": "vit", "hidden_size": 768}' > "$dir/rdin/circle/old/config.json"
"$VITMAE" train $meet --data "$dir/rdin" --out "$dir/rdok" > /dev/null 2> "$dir/meet.err"; rc=$?
t "... another program's config.json is no run: it trains ($rc: $(cat "$dir/meet.err"))" '[ $rc -eq 0 ] && ! grep -q "run folder" "$dir/meet.err"'
"$VITMAE" data "$dir/rdrun" > "$dir/rd.out" 2> "$dir/meet.err"; rc=$?
t "data RUN: exit 0, a warning naming the run folder ($rc: $(grep "$dir/rdrun:" "$dir/rd.out"))" \
  '[ $rc -eq 0 ] && grep -qx "  $dir/rdrun: a vitmae run folder (it holds checkpoint.safetensors): its sample sheets and curves.png are counted as images here; train and finetune refuse it (--ckpt takes a run folder)" "$dir/rd.out"'
"$VITMAE" eval --ckpt "$dir/rdrun" --data "$dir/rdrun" --threads 2 > /dev/null 2> "$dir/meet.err"; rc=$?
t "eval --data RUN: exit 0, one warning ($rc: $(cat "$dir/meet.err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$dir/meet.err")" = "vitmae: warning: eval --data: $dir/rdrun is a vitmae run folder (it holds checkpoint.safetensors): its sample sheets and curves.png are read as images here, and train and finetune refuse it (--ckpt takes a run folder)" ]'
# A folder at a checkpoint's name is no checkpoint (--ckpt RUN, info RUN and --resume RUN say "a folder,
# not a checkpoint file"): a class of images named checkpoint-5.safetensors, or a folder
# checkpoint.safetensors inside a class, made the data folder "a vitmae run folder" (finetune refused
# it, exit 2; data warned). Only a file at the name counts, or a link to one: the run's checkpoint linked
# into a class still does.
mkdir -p "$dir/ckd/checkpoint-5.safetensors" "$dir/ckd2/cat/checkpoint.safetensors"
cp -r "$dir/moved/circle/." "$dir/ckd/checkpoint-5.safetensors/" && cp -r "$dir/moved/square" "$dir/ckd/dog" &&
  cp -r "$dir/moved/circle/." "$dir/ckd2/cat/checkpoint.safetensors/" && cp -r "$dir/moved/square" "$dir/ckd2/dog"
for d in ckd ckd2; do
  "$VITMAE" finetune --from-scratch $meet --data "$dir/$d" --out "$dir/${d}ft" > /dev/null 2> "$dir/meet.err"; rc=$?
  t "finetune --data with a folder at a checkpoint's name ($d): it trains ($rc: $(cat "$dir/meet.err"))" \
    '[ $rc -eq 0 ] && ! grep -q "run folder" "$dir/meet.err" && [ -s "$dir/${d}ft/checkpoint.safetensors" ]'
  "$VITMAE" data "$dir/$d" > "$dir/rd.out" 2> "$dir/meet.err"; rc=$?
  t "data of it ($d): no run folder warning ($rc: $(grep "run folder" "$dir/rd.out"))" \
    '[ $rc -eq 0 ] && ! grep -q "run folder" "$dir/rd.out" && grep -q "^  dog  *[0-9]" "$dir/rd.out"'
done
ln -s "$dir/rdrun/checkpoint.safetensors" "$dir/ckd2/dog/checkpoint.safetensors"
meet_refused "... a link to a checkpoint file in a class still makes it a run folder" "finetune --data: $dir/ckd2/dog is a vitmae run folder (it holds checkpoint.safetensors) inside the data folder $dir/ckd2:" \
  finetune --from-scratch $meet --data "$dir/ckd2" --out "$dir/ckdbad"
rm -rf "$dir/ckd" "$dir/ckd2" "$dir/ckdft" "$dir/ckd2ft"
rm -rf "$dir/rdrun" "$dir/rdin" "$dir/rdok"

# A read-only working directory without --out (as an ordinary user: tests/lib.sh as_user): the default
# run folder is no flag's, and the line said "vitmae: train --out: runs: Permission denied".
chmod 755 "$dir" "$dir/moved" && mkdir -p "$dir/rocwd" && chmod 555 "$dir/rocwd"
if as_user_can "$dir/moved/circle/$(ls "$dir/moved/circle" | head -n 1)"; then
  for c in train "finetune --from-scratch"; do
    (cd "$dir/rocwd" && as_user "$VITMAE" $c $meet --data "$dir/moved" --store none > /dev/null 2> "$dir/ro.err"); rc=$?
    c=${c% *}
    t "$c in a read-only working directory, no --out: exit 1, one line naming the default folder ($rc: $(cat "$dir/ro.err"))" \
      '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/ro.err")" -eq 1 ] && grep -q "^vitmae: $c: cannot make the default run folder runs/[-a-z0-9]*: runs: Permission denied (pass --out DIR)$" "$dir/ro.err"'
  done
else
  echo "note: read-only working directory check skipped (no ordinary user can read the test's files)"
fi

# A step's picture that cannot be written (samples/step-20.png a folder, so the sheet's rename fails):
# the run stops with exit 1 and that line, and the step's weights are saved first with a line saying
# so (until the eightieth session the run stopped with the checkpoint of step 10, the 10 steps since
# lost); with the folder gone, the resume finishes with the weights and losses of a run never stopped
# (the metrics row of step 20 was written before the sheet: its losses are not carried on). The same at
# the run's last step: saved as the run's last. (The first session stops at step 15 by the NaN hook,
# its checkpoint that of step 10: a new run refuses a folder that holds samples/.)
"$VITMAE_TOOLS/synth" "$dir/picdata" --count 40 --size 16 --seed 5 > /dev/null || { echo "FAILED: synth picdata"; fail=1; }
pic=$(echo "$small" | sed "s|--data data |--data $dir/picdata |")
"$VITMAE" train $pic --steps 30 --log-every 5 --eval-every 10 --out "$dir/pic0" > /dev/null 2>&1 ||
  { echo "FAILED: train pic0"; fail=1; }
VITMAE_FAULT_NAN_STEP=15 "$VITMAE" train $pic --steps 30 --log-every 5 --eval-every 10 --out "$dir/pic" > /dev/null 2>&1
t "setup: a run stopped at step 15, its checkpoint step 10" '[ "$(saved_step "$dir/pic/checkpoint.safetensors")" = 10 ]'
mkdir -p "$dir/pic/samples/step-20.png" "$dir/pic/samples/step-30.png"
"$VITMAE" train --resume "$dir/pic" --ckpt-every 1000 > "$dir/pic.out" 2> "$dir/pic.err"; rc=$?
t "a sample sheet that cannot be written: exit 1, its line, then the checkpoint saved at that step ($rc: $(cat "$dir/pic.err" | tr '\n' '|'))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/pic.err")" -eq 2 ] && head -n 1 "$dir/pic.err" | grep -q "^vitmae: train: $dir/pic/samples/step-20.png: Is a directory$" &&
   [ "$(tail -n 1 "$dir/pic.err")" = "vitmae: saved $dir/pic/checkpoint.safetensors at step 20 of 30 (continue with --resume $dir/pic)" ] &&
   [ "$(saved_step "$dir/pic/checkpoint.safetensors")" = 20 ]'
# ... and the step's validation, which its metrics.csv row holds, is said in the log as well (the line
# was lost with the sheet that failed after the row).
t "a sample sheet that cannot be written: the step's validation line is in the log ($(grep "^step 20:" "$dir/pic.out"))" \
  'grep -q "^step 20: val loss [0-9.]*, val PSNR [0-9.]* dB (masked patches)$" "$dir/pic.out"'
rmdir "$dir/pic/samples/step-20.png"
"$VITMAE" train --resume "$dir/pic" > /dev/null 2> "$dir/pic.err"; rc=$?
t "... at the run's last step too: saved as the run's last ($rc: $(cat "$dir/pic.err" | tr '\n' '|'))" \
  '[ $rc -eq 1 ] && [ "$(tail -n 1 "$dir/pic.err")" = "vitmae: saved $dir/pic/checkpoint.safetensors at step 30, the run'"'"'s last" ] &&
   [ "$(saved_step "$dir/pic/checkpoint.safetensors")" = 30 ]'
t "... the saved weights and losses are a run's never stopped" 'same_run "$dir/pic0" "$dir/pic"'
rm -rf "$dir/pic0" "$dir/pic" "$dir/picdata"

# Advice to type names its folder as one shell word (docs/interface.md, section 1): "continue with
# --resume my run" pasted gave train two arguments ('run' unexpected, exit 2). Each line's advice, taken
# out of it and run through eval as a paste goes through the shell, works: the stop's, --out's refusal,
# and the ln that gives a folder without checkpoint.safetensors its finished run's checkpoint back, in
# folders named with a space and with a single quote, and in folders given from their parent with a
# leading '-' (the advice "--resume -steps" was refused as a flag, and "ln '-x y/...'" read -x as its
# option: such a path is written from ./). Each eval in a subshell: a quote left open (the folder it's)
# ends that subshell, not the test. From $dir, for the relative names (the file's last checks).
cd "$dir"
for name in "my run" "it's" "-steps" "-x y"; do
  case $name in -*) q=$name ;; *) q="$dir/$name" ;; esac
  p="$dir/$name"
  VITMAE_FAULT_STOP_IN_SETUP=1 "$VITMAE" train $base --data "$dir/moved" --steps 4 --ckpt-every 2 --keep 2 --out="$q" > "$dir/q.out" 2>&1; rc=$?
  way=$(sed -n 's/^interrupted at step 1 of 4; saved .* (continue with \(--resume .*\))$/\1/p' "$dir/q.out")
  (eval "\"\$VITMAE\" train $way") > /dev/null 2> "$dir/q.err"; rc2=$?
  t "a run in '$name' stopped: its line's advice ($way) pasted resumes it ($rc $rc2: $(cat "$dir/q.err"))" \
    '[ $rc -eq 0 ] && [ -n "$way" ] && [ $rc2 -eq 0 ] && [ "$(saved_step "$p/checkpoint.safetensors")" = 4 ]'
  "$VITMAE" train $base --data "$dir/moved" --steps 4 --out="$q" > /dev/null 2> "$dir/q.err"; rc=$?
  way=$(sed -n 's/^vitmae: train --out .*: the folder already holds a run; pass \(--resume .*\) to continue it, .*$/\1/p' "$dir/q.err")
  (eval "\"\$VITMAE\" train $way --steps 6 --ckpt-every 2 --keep 2") > /dev/null 2> "$dir/q.err"; rc2=$?
  t "... --out '$name' refused: its advice ($way --steps 6) pasted extends the run ($rc $rc2: $(cat "$dir/q.err"))" \
    '[ $rc -eq 2 ] && [ -n "$way" ] && [ $rc2 -eq 0 ] && [ "$(saved_step "$p/checkpoint.safetensors")" = 6 ]'
  rm -f "$p/checkpoint.safetensors"
  "$VITMAE" train --resume="$q" > /dev/null 2> "$dir/q.err"; rc=$?
  way=$(sed -n 's/^.* give the folder its checkpoint back with: \(ln .*\) (train --resume .*$/\1/p' "$dir/q.err")
  (eval "$way") 2> "$dir/q.err"; rc2=$?
  t "... its checkpoint.safetensors removed: the advice ($way) pasted gives the folder its checkpoint back ($rc $rc2: $(cat "$dir/q.err"))" \
    '[ $rc -eq 2 ] && [ -n "$way" ] && [ $rc2 -eq 0 ] && [ "$(saved_step "$p/checkpoint.safetensors")" = 6 ]'
  rm -rf "$p"
done

[ $fail -eq 0 ] && echo "cli runfolder ok"
exit $fail
