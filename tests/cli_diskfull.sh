#!/bin/sh
# Out of space while writing a checkpoint: a clear one-line error, exit 1, the previous checkpoint
# intact (loads, same step) and no temporary file left behind. Two ways to run out:
#  1. a file-size limit (ulimit -f; vitmae ignores SIGXFSZ, so write() fails with EFBIG): any user;
#  2. a small tmpfs (real ENOSPC), when mount works here (root); skipped, and said so, otherwise.
set -u
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
fail=0
dir=$(mktemp -d) || exit 1
cleanup() { umount "$dir/full" 2>/dev/null; umount "$dir/fullft" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT; trap 'exit 1' HUP INT TERM
cd "$dir" || exit 1   # a command that wrongly writes to the working directory writes here
"$VITMAE_TOOLS/synth" "$dir/data" --count 64 --size 16 --seed 3 >/dev/null || { echo "synth failed"; exit 1; }
# ~540 KB checkpoints (43,600 parameters and two AdamW moments).
small="--data $dir/data --img 16 --patch 4 --dim 32 --depth 2 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 16 --lr 3e-3 --warmup-steps 5 --val-frac 0.1 --threads 1"
step_of() { "$VITMAE" info "$1" --json 2>/dev/null | sed -n 's/.*"step":[[:space:]]*\([0-9]*\),.*/\1/p' | head -n 1; }
temp_files() { ls -a "$1" | grep -c '\.tmp-\|\.link\.'; }

# 1. A checkpoint at step 10 (the NaN hook stops the run at step 15), then the resume under a 256 KB
#    file-size limit: the step-20 checkpoint cannot be written.
VITMAE_FAULT_NAN_STEP=15 "$VITMAE" train $small --steps 40 --ckpt-every 10 --eval-every 10 --out "$dir/run" > /dev/null 2>&1
t "setup: a checkpoint at step 10" '[ "$(step_of "$dir/run/checkpoint.safetensors")" = 10 ]'
(ulimit -f 512 && exec "$VITMAE" train --resume "$dir/run" --threads 1) > "$dir/out" 2> "$dir/err"; rc=$?
t "file-size limit: exit 1 (got $rc)" '[ $rc -eq 1 ]'
# The step-20 snapshot never existed: no "(previous file left intact)" (which test_checkpoint pins for a
# file written over), and the command's name first, as curves.png's and config.json's lines have it. No
# "keeps step" either: this session saved none (a run that did says it: the full disk below).
t "file-size limit: one clear line naming the file and the cause ($(tail -n 1 "$dir/err"))" \
  'tail -n 1 "$dir/err" | grep -q "^vitmae: train: $dir/run/checkpoint-20.safetensors: write failed: File too large$"'
t "file-size limit: previous checkpoint intact (step 10)" '[ "$(step_of "$dir/run/checkpoint.safetensors")" = 10 ]'
t "file-size limit: no temporary file left" '[ "$(temp_files "$dir/run")" -eq 0 ]'
"$VITMAE" train --resume "$dir/run" --threads 1 > /dev/null 2>&1; rc=$?
t "file-size limit: once space is back, the resume finishes (step 40)" '[ $rc -eq 0 ] && [ "$(step_of "$dir/run/checkpoint.safetensors")" = 40 ]'

# 1a. A resume rewrites metrics.csv (rows past the checkpoint's step dropped): under a 2 KB limit
#     (config.json fits, the 2.9 KB metrics.csv does not) the rewrite fails, and the file must stay
#     whole (rewritten in place, it was cut to the limit: the rows of steps the checkpoint had passed,
#     lost for good). A PNG output over the limit names its file (it said "file too large", no file).
"$VITMAE" train $small --steps 60 --log-every 1 --eval-every 30 --out "$dir/rows" > /dev/null 2>&1
cp "$dir/rows/metrics.csv" "$dir/rows.csv"
(ulimit -f 4 && exec "$VITMAE" train --resume "$dir/rows" --steps 70 --threads 1) > /dev/null 2> "$dir/err"; rc=$?
t "metrics.csv over the limit on resume: exit 1, one line naming it ($(head -n 1 "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train: .*rows/metrics.csv: File too large$" "$dir/err"'
t "metrics.csv over the limit on resume: every row kept, no temporary file" \
  'cmp -s "$dir/rows.csv" "$dir/rows/metrics.csv" && [ "$(ls -a "$dir/rows" | grep -c tmp)" -eq 0 ]'
(ulimit -f 40 && exec "$VITMAE" train --resume "$dir/rows" --steps 90 --ckpt-every 1000 --threads 1) > /dev/null 2> "$dir/err"; rc=$?
t "a sample panel over the limit: exit 1, the file named ($(head -n 1 "$dir/err"))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: train: .*rows/samples/step-90.png: File too large$" "$dir/err"'
# The run's first sheet over the limit (config.json, metrics.csv and curves.png fit): no samples/ left,
# empty (it was made with the run folder; now with the first sheet, and taken back when that fails).
# The smallest limit, in 512-byte blocks, at which the sheet is what fails.
sheet_err=
for f in 8 10 12 14 16 18 20 24 28 32 40; do
  rm -rf "$dir/sheet"
  (ulimit -f $f && exec "$VITMAE" train $small --warmup-steps 0 --steps 1 --out "$dir/sheet") > /dev/null 2> "$dir/err"
  if grep -q "^vitmae: train: .*sheet/samples/step-1.png: File too large$" "$dir/err"; then sheet_err=$f; break; fi
done
t "the first sample sheet over the limit (ulimit -f ${sheet_err:-none}): no empty samples/ left ($(ls -A "$dir/sheet" 2>&1 | tr "\n" " "))" \
  '[ -n "$sheet_err" ] && [ -s "$dir/sheet/config.json" ] && [ ! -e "$dir/sheet/samples" ]'
(ulimit -f 20 && exec "$VITMAE" finetune --ckpt "$dir/rows/checkpoint.safetensors" --data "$dir/data" --batch 16 --steps 4 \
  --eval-every 2 --threads 1 --out "$dir/ft") > /dev/null 2> "$dir/err"; rc=$?
t "finetune's curves over the limit: exit 1, the file named ($(head -n 1 "$dir/err"))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: finetune: .*ft/curves.png: File too large$" "$dir/err"'

# metrics.csv reaching a 16 KB limit mid-run (32 blocks of 512 bytes; curves.png, about 14 KB, fits; a row
# a step, about 80 bytes, 300 steps): the row that does not fit goes whole or not at all, so the log ends
# in a whole row (it ended cut, "...,0.76755" with no newline, a loss that reads back wrong).
(ulimit -f 32 && exec "$VITMAE" train $small --steps 300 --log-every 1 --eval-every 1000 --ckpt-every 1000 --out "$dir/cut") \
  > /dev/null 2> "$dir/err"; rc=$?
t "metrics.csv over the limit mid-run: exit 1, named ($(head -n 1 "$dir/err"))" \
  '[ $rc -eq 1 ] && grep -qx "vitmae: train: $dir/cut/metrics.csv: write failed: File too large" "$dir/err"'
t "metrics.csv over the limit mid-run: whole rows only, the last ending in a newline ($(tail -c 30 "$dir/cut/metrics.csv" | tr "\n" "|"))" \
  '[ "$(tail -c 1 "$dir/cut/metrics.csv" | od -An -c | tr -d " ")" = "\n" ] && [ "$(wc -l < "$dir/cut/metrics.csv")" -gt 100 ] &&
   [ -z "$(awk -F, "NF != 8" "$dir/cut/metrics.csv")" ]'
# The run's advice followed: a step whose metrics row failed saves its checkpoint ("saved RUN/...
# at step S (continue with --resume RUN)"), and the resume writes that row first, with the losses the
# checkpoint carries, then goes on: its metrics.csv is the uninterrupted run's (it lacked row S, and
# row S+1 held the mean of both intervals), its weights too. A model of 47 KB checkpoints, a 50 KB limit
# (100 blocks of 512 bytes) that metrics.csv reaches first, near step 650.
tiny="--data $dir/data --img 16 --patch 4 --batch 8 --dim 8 --heads 2 --depth 1 --dec-dim 8 --dec-heads 2 --dec-depth 1 --val-frac 0.1 --threads 1 --log-every 1 --eval-every 100000 --sample-every 100000 --ckpt-every 100000 --steps 1000"
(ulimit -f 100 && exec "$VITMAE" train $tiny --out "$dir/gap") > /dev/null 2> "$dir/err"; rc=$?
gap_at=$(step_of "$dir/gap/checkpoint.safetensors")
"$VITMAE" train --resume "$dir/gap" --threads 1 > /dev/null 2> "$dir/err2"; rc2=$?
"$VITMAE" train $tiny --out "$dir/nogap" > /dev/null 2>&1
t "metrics.csv's row failed at step $gap_at, the run resumed as advised ($rc, $rc2: $(tail -n 1 "$dir/err") $(cat "$dir/err2")): its rows and weights the uninterrupted run's ($(losses "$dir/nogap" > "$dir/nogap.csv"; losses "$dir/gap" | diff "$dir/nogap.csv" - | grep "^[<>]" | head -n 4 | tr "\n" " "))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: saved $dir/gap/checkpoint.safetensors at step $gap_at of 1000 (continue with --resume $dir/gap)$" "$dir/err" &&
   [ $rc2 -eq 0 ] && [ ! -s "$dir/err2" ] && same_run "$dir/nogap" "$dir/gap"'
rm -rf "$dir/gap" "$dir/nogap"

# 1b. reconstruct outputs under a file-size limit: the panel PNG (scale 8: ~100 KB) and, with a limit
#     the PNG fits in, the .npy: each a clear error naming the file and the cause, exit 1.
"$VITMAE_TOOLS/mkckpt" ckpt "$dir/small.safetensors" --img 32 --patch 4 > /dev/null
"$VITMAE_TOOLS/mkckpt" png "$dir/in.png" --size 32 > /dev/null
(ulimit -f 4 && exec "$VITMAE" reconstruct --ckpt "$dir/small.safetensors" --scale 8 --out "$dir/rec1" "$dir/in.png") > /dev/null 2> "$dir/err"; rc=$?
t "reconstruct panel over the limit: exit 1 (got $rc)" '[ $rc -eq 1 ]'
t "reconstruct panel over the limit: clear message ($(head -n 1 "$dir/err"))" 'grep -q "^vitmae: .*rec1/in.recon.png: File too large$" "$dir/err"'
cp "$dir/err" "$dir/err.png"
t "reconstruct panel over the limit: no partial file" '[ ! -e "$dir/rec1/in.recon.png" ]'
t "reconstruct panel over the limit: no empty --out folder left of its own ($(ls -A "$dir/rec1" 2>&1))" '[ ! -e "$dir/rec1" ]'
# 24 blocks of 512 bytes = 12288: the panel (about 9 KB with its captions) fits, the .npy
# (32 * 32 * 3 * 4 + 128 = 12416 bytes) does not.
(ulimit -f 24 && exec "$VITMAE" reconstruct --ckpt "$dir/small.safetensors" --raw --scale 1 --out "$dir/rec2" "$dir/in.png") > /dev/null 2> "$dir/err"; rc=$?
t "reconstruct .npy over the limit: exit 1 (got $rc)" '[ $rc -eq 1 ]'
t "reconstruct .npy over the limit: one clear line, no command name as the panel's ($(head -n 1 "$dir/err"))" 'grep -q "^vitmae: $dir/rec2/in.recon.npy: File too large$" "$dir/err"'
# One wording for one cause, whatever the file: the PNG said "file too large" (its own lowercase
# text) where the .npy, index.html and checkpoints say strerror's "File too large".
t "reconstruct: the PNG and the .npy over the limit give the same reason ($(sed 's/.*: //' "$dir/err.png") / $(sed 's/.*: //' "$dir/err"))" \
  '[ "$(sed "s/.*: //" "$dir/err.png")" = "$(sed "s/.*: //" "$dir/err")" ] && [ -s "$dir/err" ]'
t "reconstruct .npy over the limit: no partial file" '[ ! -e "$dir/rec2/in.recon.npy" ] && [ "$(ls -a "$dir/rec2" | grep -c tmp)" -eq 0 ]'

# 1c. attention outputs under a file-size limit: exit 1, a line naming the cause.
(ulimit -f 8 && exec "$VITMAE" attention --ckpt "$dir/small.safetensors" --out "$dir/att1" "$dir/in.png") > /dev/null 2> "$dir/err"; rc=$?
t "attention over the limit: exit 1 (got $rc)" '[ $rc -eq 1 ]'
t "attention over the limit: clear message ($(head -n 1 "$dir/err"))" 'grep -q "^vitmae: .*: File too large$" "$dir/err"'
t "attention over the limit: no empty --out folder left of its own ($(ls -A "$dir/att1" 2>&1))" '[ ! -e "$dir/att1" ]'
# With a limit that lets the first maps through and stops a later one, nothing of the image stays
# (it used to keep its first maps, so that the retry needed --force), and the retry then runs.
(ulimit -f 16 && exec "$VITMAE" attention --ckpt "$dir/small.safetensors" --out "$dir/att2" --raw "$dir/in.png") > /dev/null 2> "$dir/err"; rc=$?
t "attention failing half-way: exit 1, nothing of the image left ($(ls "$dir/att2" 2>/dev/null | tr "\n" " "))" \
  '[ $rc -eq 1 ] && [ ! -e "$dir/att2/in" ] && [ -z "$(ls "$dir/att2" 2>/dev/null)" ]'
"$VITMAE" attention --ckpt "$dir/small.safetensors" --out "$dir/att2" --raw "$dir/in.png" > /dev/null 2> "$dir/err"; rc=$?
t "attention failing half-way: the retry runs without --force ($(head -n 1 "$dir/err"))" '[ $rc -eq 0 ] && [ -s "$dir/att2/in.attn.png" ]'
# The montage over the limit (--display 16: its maps of a few hundred bytes fit under 4 KB, the montage
# of some 10 KB does not) is named with the input: it said "vitmae: IN: file too large", no file.
(ulimit -f 8 && exec "$VITMAE" attention --ckpt "$dir/small.safetensors" --display 16 --out "$dir/att3" "$dir/in.png") > /dev/null 2> "$dir/err"; rc=$?
t "attention's montage over the limit: exit 1, the file named ($(head -n 1 "$dir/err"))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: $dir/in.png: $dir/att3/in.attn.png: File too large$" "$dir/err" && [ ! -e "$dir/att3" ]'
# index.html over the limit (30 images: a page of some 45 KB, their files under 20 KB each): exit 1, one
# line naming the page and the cause (it said "Input/output error": the write failed inside stdio's
# buffer), the images' files kept, no page and no temporary file.
mkdir "$dir/att30in" && for i in $(seq 1 30); do cp "$dir/in.png" "$dir/att30in/c$i.png"; done
(ulimit -f 40 && exec "$VITMAE" attention --ckpt "$dir/small.safetensors" --display 16 --out "$dir/att30" "$dir/att30in") > /dev/null 2> "$dir/err"; rc=$?
t "attention's index.html over the limit: exit 1, one line naming it and the cause ($rc: $(tr "\n" "|" < "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: attention: $dir/att30/index.html: File too large$" "$dir/err"'
t "attention's index.html over the limit: the 30 montages kept, no page, no temporary file" \
  '[ "$(ls "$dir/att30" | grep -c "\.attn\.png$")" -eq 30 ] && [ ! -e "$dir/att30/index.html" ] && [ "$(ls -a "$dir/att30" | grep -c tmp)" -eq 0 ]'

# 1c. embed writes FEATS.npy and FEATS.txt as a pair: under a 512-byte limit the list of 30 images
#     fits and their features (30 x 32 floats) do not, so --force leaves the earlier pair of 2 images as
#     it was, and a first run leaves nothing that would refuse its retry.
mkdir -p "$dir/emb2" "$dir/emb30" "$dir/e"
for i in 1 2; do cp "$dir/in.png" "$dir/emb2/a$i.png"; done
for i in $(seq 1 30); do cp "$dir/in.png" "$dir/emb30/b$i.png"; done
"$VITMAE" embed --ckpt "$dir/small.safetensors" --out "$dir/e/f.npy" "$dir/emb2" > /dev/null 2>&1
t "embed: the first pair (2 rows)" '[ "$(wc -l < "$dir/e/f.txt")" -eq 2 ]'
cp "$dir/e/f.npy" "$dir/f2.npy"
(ulimit -f 1 && exec "$VITMAE" embed --ckpt "$dir/small.safetensors" --out "$dir/e/f.npy" --force "$dir/emb30") > /dev/null 2> "$dir/err"; rc=$?
t "embed --force over the limit: exit 1, one line ($(head -n 1 "$dir/err"))" '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: .*f.npy: File too large$" "$dir/err"'
t "embed --force over the limit: the earlier pair as it was" '[ "$(wc -l < "$dir/e/f.txt")" -eq 2 ] && cmp -s "$dir/e/f.npy" "$dir/f2.npy"'
t "embed --force over the limit: no temporary file left" '[ "$(ls -a "$dir/e" | grep -c tmp)" -eq 0 ]'
(ulimit -f 1 && exec "$VITMAE" embed --ckpt "$dir/small.safetensors" --out "$dir/e/g.npy" "$dir/emb30") > /dev/null 2>&1
"$VITMAE" embed --ckpt "$dir/small.safetensors" --out "$dir/e/g.npy" "$dir/emb30" > /dev/null 2> "$dir/err"; rc=$?
t "embed: a failed first run leaves nothing, its retry works ($(head -n 1 "$dir/err"))" '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/e/g.txt")" -eq 30 ]'
# probe --out under the limit (its confusion PNGs; the hardening issue's "outputs"): exit 1, one line
# naming the file (beside the warning that --test is --train), no file left in the folder (no part of
# a PNG, no temporary name), and no folder: the two it made for --out pr/run are removed again (they
# were left behind, empty); a folder that was there before (prk, empty) stays.
(ulimit -f 8 && exec "$VITMAE" probe --ckpt "$dir/small.safetensors" --train "$dir/data" --test "$dir/data" --out "$dir/pr/run") \
  > /dev/null 2> "$dir/err"; rc=$?
t "probe --out over the limit: exit 1, one line naming the PNG ($rc: $(tr "\n" "|" < "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(grep -vc "^vitmae: warning: --test" "$dir/err")" -eq 1 ] && grep -q "^vitmae: probe: $dir/pr/run/confusion-knn.png: File too large$" "$dir/err"'
t "probe --out over the limit: no folder left of the two it made ($(ls -AR "$dir/pr" 2>&1 | tr "\n" " "))" '[ ! -e "$dir/pr" ]'
mkdir "$dir/prk"
(ulimit -f 8 && exec "$VITMAE" probe --ckpt "$dir/small.safetensors" --train "$dir/data" --test "$dir/data" --out "$dir/prk/run") \
  > /dev/null 2>&1
t "probe --out over the limit: the folder that was there stays, the one it made goes ($(ls -A "$dir/prk" 2>&1 | tr "\n" " "))" \
  '[ -d "$dir/prk" ] && [ -z "$(ls -A "$dir/prk")" ]'
rmdir "$dir/prk"

# 1d. Reports written on stdout (`info --json > FILE`, `eval --json`, `data`) cut short by the limit
#     or a full device exited 0: the user's file held half a report and nothing said so. Now one line
#     names standard output and the cause, exit 1.
(ulimit -f 1 && exec "$VITMAE" info "$dir/small.safetensors" --json > "$dir/info.json") 2> "$dir/err"; rc=$?
t "info --json > FILE over the limit: exit 1, one line ($(head -n 1 "$dir/err"))" '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: info: standard output: File too large$" "$dir/err"'
if [ -c /dev/full ]; then
  for cmd in "info $dir/small.safetensors --json" "data $dir/emb30" "eval --ckpt $dir/small.safetensors --data $dir/emb30 --json" "embed --help"; do
    name=${cmd%% *}
    "$VITMAE" $cmd > /dev/full 2> "$dir/err"; rc=$?
    t "$name > /dev/full: exit 1, one line ($(head -n 1 "$dir/err"))" '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: $name: standard output: No space left on device$" "$dir/err"'
  done
  # The commands that write files flush each output's line as it is published (a stop signal may end
  # them next): that flush's failure lost its reason, and the end said "a write to it failed".
  for cmd in "embed --ckpt $dir/small.safetensors --out $dir/full-e.npy $dir/emb30" "reconstruct --ckpt $dir/small.safetensors --out $dir/full-r $dir/emb30" \
             "attention --ckpt $dir/small.safetensors --out $dir/full-a $dir/emb30" "probe --ckpt $dir/small.safetensors --train $dir/data --test $dir/data --out $dir/full-p"; do
    name=${cmd%% *}
    "$VITMAE" $cmd > /dev/full 2> "$dir/err"; rc=$?
    t "$name (writing files) > /dev/full: exit 1, one line with the reason ($rc: $(grep -v "^vitmae: warning:" "$dir/err" | tr "\n" "|"))" \
      '[ $rc -eq 1 ] && [ "$(grep -vc "^vitmae: warning:" "$dir/err")" -eq 1 ] && grep -q "^vitmae: $name: standard output: No space left on device$" "$dir/err"'
  done
  "$VITMAE" --help > /dev/full 2> "$dir/err"; rc=$?
  t "--help > /dev/full: exit 1 ($(head -n 1 "$dir/err"))" '[ $rc -eq 1 ] && grep -q "^vitmae: help: standard output: No space left on device$" "$dir/err"'
  "$VITMAE" info "$dir/missing.safetensors" > /dev/full 2> "$dir/err"; rc=$?
  t "a failing command keeps its own exit status ($rc)" '[ $rc -eq 1 ] && grep -q "missing.safetensors" "$dir/err"'
fi

# 2. A 1400 KB tmpfs: checkpoints 10 and 20 fit (the latest is a hard link to its snapshot), 30 does not.
mkdir "$dir/full"
if mount -t tmpfs -o size=1400k tmpfs "$dir/full" 2>/dev/null; then
  "$VITMAE" train $small --steps 40 --ckpt-every 10 --eval-every 10 --out "$dir/full/run" > "$dir/out" 2> "$dir/err"; rc=$?
  t "full disk: exit 1 (got $rc)" '[ $rc -eq 1 ]'
  t "full disk: one clear line ($(tail -n 1 "$dir/err"))" \
    'tail -n 1 "$dir/err" | grep -q "^vitmae: train: $dir/full/run/checkpoint-[0-9]*.safetensors: write failed: No space left on device; $dir/full/run/checkpoint.safetensors keeps step 20 (continue with --resume $dir/full/run)$"'
  t "full disk: previous checkpoint intact (step 20)" '[ "$(step_of "$dir/full/run/checkpoint.safetensors")" = 20 ]'
  t "full disk: no temporary file left" '[ "$(temp_files "$dir/full/run")" -eq 0 ]'
  # Free space again (drop the snapshots, keep none): the run resumes and finishes.
  rm -f "$dir/full/run"/checkpoint-*.safetensors
  "$VITMAE" train --resume "$dir/full/run" --threads 1 --keep 0 > /dev/null 2>&1; rc=$?
  t "full disk: after freeing space the resume finishes (step 40)" '[ $rc -eq 0 ] && [ "$(step_of "$dir/full/run/checkpoint.safetensors")" = 40 ]'
  # reconstruct into a full tmpfs (fill it first): exit 1, "No space left on device".
  head -c 2000000 /dev/zero > "$dir/full/filler" 2>/dev/null
  "$VITMAE" reconstruct --ckpt "$dir/small.safetensors" --raw --out "$dir/full/rec" "$dir/in.png" > /dev/null 2> "$dir/err"; rc=$?
  t "reconstruct on a full disk: exit 1 (got $rc)" '[ $rc -eq 1 ]'
  t "reconstruct on a full disk: clear message ($(head -n 1 "$dir/err"))" 'grep -q "^vitmae: .*rec.*: No space left on device" "$dir/err"'
  "$VITMAE" attention --ckpt "$dir/small.safetensors" --raw --out "$dir/full/att" "$dir/in.png" > /dev/null 2> "$dir/err"; rc=$?
  t "attention on a full disk: exit 1 (got $rc)" '[ $rc -eq 1 ]'
  t "attention on a full disk: clear message ($(head -n 1 "$dir/err"))" 'grep -q "^vitmae: .*: No space left on device" "$dir/err"'
  # Many images into a disk with 12 KB left (the folder takes a file; no image's files fit): the command
  # stops at the first image that does not fit, one line for it and one for the stop (it computed every
  # image left and printed a line for each).
  mkdir -p "$dir/six" && for i in 1 2 3 4 5 6; do cp "$dir/in.png" "$dir/six/$i.png"; done
  rm -f "$dir/full/filler"
  head -c $((($(df -k "$dir/full" | awk 'NR == 2 { print $4 }') - 12) * 1024)) /dev/zero > "$dir/full/filler" 2> /dev/null
  for c in reconstruct attention; do
    "$VITMAE" $c --ckpt "$dir/small.safetensors" --out "$dir/full/$c-six" "$dir/six" > /dev/null 2> "$dir/err"; rc=$?
    t "$c of six images on a full disk: exit 1, two lines, stopped ($rc: $(tr "\n" "|" < "$dir/err"))" \
      '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 2 ] && grep -q "^vitmae: .*: No space left on device$" "$dir/err" && tail -n 1 "$dir/err" | grep -q "^vitmae: $c: stopped: $dir/full/$c-six takes no more files (0 of 6 images written)$"'
  done
  umount "$dir/full"
  # finetune's checkpoints on an 800 KB tmpfs (~340 KB each): 10 and 20 fit, 30 does not. The same
  # promise as train's above (README, "Safe to stop"): exit 1, one line, the step-20 checkpoint loads.
  mkdir "$dir/fullft" && mount -t tmpfs -o size=800k tmpfs "$dir/fullft"
  "$VITMAE" finetune --ckpt "$dir/rows/checkpoint.safetensors" --data "$dir/data" --val-frac 0 --batch 16 --steps 40 --ckpt-every 10 \
    --eval-every 10 --threads 1 --out "$dir/fullft/ft" > /dev/null 2> "$dir/err"; rc=$?
  t "finetune, full disk: exit 1, one line naming the checkpoint ($rc: $(tr "\n" "|" < "$dir/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: finetune: $dir/fullft/ft/checkpoint-30.safetensors: write failed: No space left on device; $dir/fullft/ft/checkpoint.safetensors keeps step 20 (continue with --resume $dir/fullft/ft)$" "$dir/err"'
  t "finetune, full disk: previous checkpoint intact (step 20)" '[ "$(step_of "$dir/fullft/ft/checkpoint.safetensors")" = 20 ]'
  t "finetune, full disk: no temporary file left" '[ "$(temp_files "$dir/fullft/ft")" -eq 0 ]'
  rm -f "$dir/fullft/ft"/checkpoint-*.safetensors
  "$VITMAE" finetune --resume "$dir/fullft/ft" --threads 1 --keep 0 > /dev/null 2>&1; rc=$?
  t "finetune, full disk: after freeing space the resume finishes (step 40)" '[ $rc -eq 0 ] && [ "$(step_of "$dir/fullft/ft/checkpoint.safetensors")" = 40 ]'
  umount "$dir/fullft"
  tmpfs="tmpfs case run"
else
  tmpfs="tmpfs case skipped (mount not permitted)"
fi
[ $fail -eq 0 ] && echo "cli diskfull ok ($tmpfs)"
exit $fail
