#!/bin/sh
# `mpirun -np N ./vitmae finetune` (docs/distributed.md, docs/encoder.md): bitwise the same weights,
# AdamW moments and metrics.csv losses for 1, 2 and 4 processes, in shared memory and as messages,
# each process's threads as workers or sharing every kernel, and across a resume with another process count; the gradient groups recorded and a fine-tuning run
# from before them resumed as it was; refusals (N that cannot keep that, other --groups on resume, a
# usage error, a folder that does not decode) as one line; SIGUSR1 to mpirun. Tiny model, few steps.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, same_weights, same_run, mpi_setup, mpi, usr1_stop, ...
scratch dir
cd "$dir" || exit 1
mpi_setup   # TMPDIR, OpenMPI as root, $mpi_asan, mpi (tests/lib.sh)
mpi_need_shm cli_mpi_finetune.sh   # else SKIP, said (tests/lib.sh)

"$VITMAE_TOOLS/synth" "$dir/data" --count 60 --size 16 --classes 3 --seed 5 >/dev/null || { echo "synth failed"; exit 1; }
model="--img 16 --patch 4 --dim 16 --depth 2 --heads 2"
"$VITMAE" train --data "$dir/data" $model --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 16 --steps 4 \
  --threads 2 --out "$dir/pre" > /dev/null 2>&1 || { echo "pretraining failed"; exit 1; }
pre="$dir/pre/checkpoint.safetensors"
# Drop path on (its draws follow each image's place in the batch) and label smoothing: every group
# must take its own images' labels and factors.
ft="--ckpt $pre --data $dir/data --batch 16 --lr 2e-3 --warmup-steps 2 --drop-path 0.3 --val-frac 0.2 --eval-every 3 --ckpt-every 3 --log-every 1 --keep 5"
steps=6

# 1. One process without mpirun is the reference: 4 gradient groups of 4 images (the default for a
#    batch of 16), its 2 threads in every kernel. Every split of the groups gives the same bits.
"$VITMAE" finetune $ft --steps $steps --threads 2 --parallel kernels --out "$dir/ref" > "$dir/ref.log" 2>&1; rc=$?
t "reference run exits 0" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || cat "$dir/ref.log"
t "the reference says its groups" 'grep -q "4 gradient groups of 4 images, 1 process$" "$dir/ref.log"'
mpi -np 2 "$VITMAE" finetune $ft --steps $steps --threads 1 --out "$dir/n2" > "$dir/n2.log" 2> "$dir/n2.err"; rc=$?
t "-np 2 exits 0" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || cat "$dir/n2.log" "$dir/n2.err"
t "-np 2: bitwise equal weights, moments and losses" 'same_run "$dir/ref" "$dir/n2"'
t "-np 2: nothing on stderr" '[ ! -s "$dir/n2.err" ]'
t "-np 2: one report (rank 0)" '[ "$(grep -c "^done:" "$dir/n2.log")" -eq 1 ] && grep -q "2 processes" "$dir/n2.log"'
t "-np 2: the header says 2 processes x 1 thread (--threads is each process's)" \
  'grep -E "^  [0-9]+ steps? of batch" "$dir/n2.log" | grep -q ", augment [a-z,]*, 2 processes x 1 thread$"'
# The checkpoint records the job's process count and the run's groups, as train's does (docs/distributed.md).
t "info: the -np 2 checkpoint records processes 2, groups 4; the reference processes 1" \
  '"$VITMAE" info "$dir/n2/checkpoint.safetensors" | grep -Eq "^ +processes +2$" && "$VITMAE" info "$dir/n2/checkpoint.safetensors" | grep -Eq "^ +groups +4$" &&
   "$VITMAE" info "$dir/ref/checkpoint.safetensors" | grep -Eq "^ +processes +1$"'
mpi -np 4 "$VITMAE" finetune $ft --steps $steps --threads 1 --out "$dir/n4" > "$dir/n4.log" 2>&1; rc=$?
t "-np 4 exits 0" '[ $rc -eq 0 ]'
t "-np 4: bitwise equal" 'same_run "$dir/ref" "$dir/n4"'
# Mixup and CutMix draw per gradient group from the seed (docs/encoder.md, "Mixup and CutMix"), random
# erasing per image from its place in the batch ("Random erasing"), each process's loader crops with the
# run's --crop-scale and --interp ("The crop's smallest area") and RandAugments each view from its place
# in the batch ("RandAugment"): any split of the groups crops, augments, mixes and erases the same
# images alike; and every process moves the same average toward the same weights ("Model EMA").
mx="--mixup 0.8 --cutmix 1.0 --reprob 0.5 --recount 2 --crop-scale 0.08 --interp bicubic --aa rand-m9-mstd0.5-inc1 --model-ema-decay 0.9 --model-ema-warmup"
"$VITMAE" finetune $ft $mx --steps $steps --threads 2 --parallel kernels --out "$dir/mxref" > /dev/null 2>&1
mpi -np 2 "$VITMAE" finetune $ft $mx --steps $steps --threads 1 --out "$dir/mx2" > /dev/null 2>&1; rc=$?
t "Mixup, CutMix, random erasing, --crop-scale 0.08, --interp bicubic, RandAugment and the model EMA, -np 2: bitwise equal to one process, the average too ($rc)" '[ $rc -eq 0 ] && same_run "$dir/mxref" "$dir/mx2" && ! same_run "$dir/ref" "$dir/mxref"'
VITMAE_REDUCE=messages mpi -np 2 "$VITMAE" finetune $ft --steps $steps --threads 1 --out "$dir/msg" > /dev/null 2>&1; rc=$?
t "-np 2, the gradients as messages: bitwise equal" '[ $rc -eq 0 ] && same_run "$dir/ref" "$dir/msg"'
# A process's threads as workers (the default where they fit), each its own groups on a model of its
# own: 1 process x 2 and x 4 threads, 2 processes x 2 threads (a group each): the same bits.
"$VITMAE" finetune $ft --steps $steps --threads 2 --parallel groups --out "$dir/wk2" > "$dir/wk2.log" 2>&1; rc=$?
t "2 threads as workers: bitwise equal" '[ $rc -eq 0 ] && grep -q "threads as workers: each of the 2 threads takes 2" "$dir/wk2.log" && same_run "$dir/ref" "$dir/wk2"'
"$VITMAE" finetune $ft --steps $steps --threads 4 --parallel groups --out "$dir/wk4" > /dev/null 2>&1; rc=$?
t "4 threads as workers: bitwise equal" '[ $rc -eq 0 ] && same_run "$dir/ref" "$dir/wk4"'
mpi -np 2 "$VITMAE" finetune $ft --steps $steps --threads 2 --out "$dir/n2w" > "$dir/n2w.log" 2>&1; rc=$?
t "-np 2 x 2 threads as workers: bitwise equal" '[ $rc -eq 0 ] && grep -q "each of the 2 threads takes 1" "$dir/n2w.log" && same_run "$dir/ref" "$dir/n2w"'
"$VITMAE" finetune $ft --steps 2 --threads 3 --parallel groups --out "$dir/wk3" > /dev/null 2> "$dir/wk3.err"; rc=$?
t "--parallel groups with 3 threads: exit 2, one line" '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae: finetune --parallel" "$dir/wk3.err")" -eq 1 ] && [ ! -e "$dir/wk3" ]'
"$VITMAE" finetune $ft --steps $steps --threads 1 --groups 1 --out "$dir/g1" > /dev/null 2>&1; rc=$?
t "--groups 1 runs (one group: the batch as one)" '[ $rc -eq 0 ]'
# The 4 groups are the batch's images, labels and drop-path draws cut in 4: the same losses as the
# batch as one (train and validation), up to the sums' rounding (6 decimals printed; 2e-6 allowed):
# 7 rows, the step-0 row's validation loss among them (its training loss is empty).
t "--groups 1 and 4: the same losses within 2e-6" 'paste -d, "$dir/ref/metrics.csv" "$dir/g1/metrics.csv" | awk -F, "
  NR > 1 { for (c = 4; c <= 5; c++) { d = \$c - \$(c + 8); if (d < 0) d = -d; if (\$c != \"\" && d > 2e-6) bad = 1; n++ } }
  END { exit !(n == 14 && !bad) }"'

# 2. The groups are recorded in the checkpoint's training state.
t "train_state records the groups" 'python3 - "$dir/n2/checkpoint.safetensors" <<PY
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
s = json.loads(h["__metadata__"]["train_state"]); assert s["groups"] == 4, s
PY'

# 3. Resume across process counts: a 1-process snapshot under 2 processes, a 2-process one under 1.
mpi -np 2 "$VITMAE" finetune --resume "$dir/ref/checkpoint-3.safetensors" --out "$dir/r12" --threads 1 > "$dir/r12.log" 2>&1; rc=$?
t "resume 1 -> 2 processes exits 0" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || tail -n 20 "$dir/r12.log"
t "resume 1 -> 2 processes: bitwise equal to the uninterrupted run" 'same_weights "$dir/ref/checkpoint.safetensors" "$dir/r12/checkpoint.safetensors"'
"$VITMAE" finetune --resume "$dir/n2/checkpoint-3.safetensors" --out "$dir/r21" --threads 2 > /dev/null 2>&1; rc=$?
t "resume 2 -> 1 process: bitwise equal" '[ $rc -eq 0 ] && same_weights "$dir/ref/checkpoint.safetensors" "$dir/r21/checkpoint.safetensors"'
# A run from before gradient groups (its train_state has no "groups") continues as one group: the
# --groups 1 run's snapshot with the key taken out resumes to that run's end.
python3 - "$dir/g1/checkpoint-3.safetensors" "$dir/old.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
s = json.loads(h["__metadata__"]["train_state"]); del s["groups"]
h["__metadata__"]["train_state"] = json.dumps(s)
hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
crc_ok=$("$VITMAE" info "$dir/old.safetensors" > /dev/null 2>&1 && echo 1 || echo 0)
"$VITMAE" finetune --resume "$dir/old.safetensors" --data "$dir/data" --out "$dir/rold" --threads 2 > "$dir/rold.log" 2>&1; rc=$?
t "a run without recorded groups resumes (info reads it: $crc_ok)" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || tail -n 5 "$dir/rold.log"
t "... as one group: bitwise equal to the --groups 1 run" 'same_weights "$dir/g1/checkpoint.safetensors" "$dir/rold/checkpoint.safetensors"'

# 4. Refusals: one line from rank 0, exit 2, no run folder.
mpi -np 3 "$VITMAE" finetune $ft --steps 2 --out "$dir/bad3" > /dev/null 2> "$dir/bad3.err"; rc=$?
t "-np 3 with 4 groups: exit 2, one line naming the process count" '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/bad3.err")" -eq 1 ] && grep -q "3 processes" "$dir/bad3.err"'
t "-np 3: no run folder" '[ ! -e "$dir/bad3" ]'
mpi -np 2 "$VITMAE" finetune $ft --steps 2 --groups 1 --out "$dir/badg" > /dev/null 2> "$dir/badg.err"; rc=$?
t "-np 2 with --groups 1: exit 2, one line" '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/badg.err")" -eq 1 ] && [ ! -e "$dir/badg" ]'
"$VITMAE" finetune --resume "$dir/ref" --groups 8 --out "$dir/badr" > /dev/null 2> "$dir/badr.err"; rc=$?
t "resume with other --groups: exit 2, names the run's groups" '[ $rc -eq 2 ] && grep -q "4 gradient groups" "$dir/badr.err"'
mpi -np 8 "$VITMAE" finetune --resume "$dir/ref" --threads 1 > /dev/null 2> "$dir/r18.err"; rc=$?
t "resume under -np 8 of a 4-group run: exit 2, naming the counts that resume it" \
  '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/r18.err")" -eq 1 ] && grep -q "^vitmae: finetune: 8 processes: this run sums each step as 4 gradient groups, .*: resume it without mpirun or with mpirun -np 2 or 4$" "$dir/r18.err"'
mpi -np 2 "$VITMAE" finetune --ckpt "$pre" --steps 2 --out "$dir/nodata" > /dev/null 2> "$dir/nodata.err"; rc=$?
t "a usage error under mpirun: exit 2, one line from rank 0" '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/nodata.err")" -eq 1 ] && ! grep -q "rank 1" "$dir/nodata.err"'
mpi -np 2 "$VITMAE" finetune $ft --steps 2 --out "$dir/ref" > /dev/null 2> "$dir/again.err"; rc=$?
t "--out holding a run under mpirun: exit 2, one line, the run unchanged" '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/again.err")" -eq 1 ] && same_weights "$dir/ref/checkpoint.safetensors" "$dir/r21/checkpoint.safetensors"'

# 5. A folder where no image decodes (every file cut past its header), which every rank meets alike:
#    exit 1, the reason once, the skipped files listed once (by rank 0), no run folder. The scan reads
#    headers only (as train's), so the pixel statistics of --from-scratch are what meet the files.
cp -r "$dir/data" "$dir/cut"
for f in "$dir"/cut/*/*.png; do head -c 60 "$f" > "$f.tmp" && mv "$f.tmp" "$f"; done
mpi -np 2 "$VITMAE" finetune --from-scratch $model --data "$dir/cut" --batch 16 --steps 2 --threads 1 --out "$dir/cutrun" \
  > /dev/null 2> "$dir/cut.err"; rc=$?
t "no image decodes under mpirun: exit 1, the reason once" '[ $rc -eq 1 ] && [ "$(grep -c "no image decodes for the pixel statistics" "$dir/cut.err")" -eq 1 ]'
t "... the skipped files listed once, no run folder" '[ "$(grep -c "^vitmae: skipped" "$dir/cut.err")" -eq 20 ] && [ ! -e "$dir/cutrun" ]'

# 5b. Files broken past their headers found while training, a whole class among them: each rank that
#    met one said it (and the class's warning), up to 4 times under -np 4; rank 0 now says each once,
#    the lines of one process (docs/distributed.md, "Semantics").
"$VITMAE_TOOLS/synth" "$dir/bdata" --count 60 --size 24 --classes 3 --seed 5 >/dev/null
for k in 1 12; do f=$(ls "$dir"/bdata/*/*.png | sed -n ${k}p); head -c 80 "$f" > "$f.tmp" && mv "$f.tmp" "$f"; done
for f in "$dir"/bdata/triangle/*.png; do head -c 80 "$f" > "$f.tmp" && mv "$f.tmp" "$f"; done
bft="--ckpt $pre --data $dir/bdata --batch 16 --val-frac 0.2 --steps 6 --threads 1"
"$VITMAE" finetune $bft --out "$dir/b1" > /dev/null 2> "$dir/b1.err"
mpi -np 4 "$VITMAE" finetune $bft --out "$dir/b4" > /dev/null 2> "$dir/b4.err"; rc=$?
t "broken files, -np 4: exit 0, each said once as one process says them ($(grep -c "^vitmae:" "$dir/b4.err") lines)" \
  '[ $rc -eq 0 ] && [ "$(grep -c "class .triangle. .* has no training image that decodes" "$dir/b1.err")" -eq 1 ] && [ "$(sort "$dir/b1.err")" = "$(sort "$dir/b4.err")" ]'

# 5b. The store is every rank's (docs/distributed.md, "Semantics"): after one process has stored the
#     run's working images, 2 processes decode none (rank 1 decoded its share again when the store was
#     rank 0's alone).
sft="--ckpt $pre --data $dir/data --batch 16 --val-frac 0 --steps 4 --threads 1 --cache-mb 0 --store $dir/fstore"
"$VITMAE" finetune $sft --out "$dir/fs1" > "$dir/fs1.log" 2>&1
mpi -np 2 "$VITMAE" finetune $sft --out "$dir/fs2" > "$dir/fs2.log" 2>&1; rc=$?
s1=$(sed -n 's/^working images: \([0-9]*\) decoded, \([0-9]*\) read from the store.*/\1 \2/p' "$dir/fs1.log")
s2=$(sed -n 's/^working images (2 processes together): \([0-9]*\) decoded, \([0-9]*\) read from the store.*/\1 \2/p' "$dir/fs2.log")
t "store: 2 processes read every working image from the store one process filled (${s1:-none} / ${s2:-none}, $rc)" \
  '[ $rc -eq 0 ] && [ -n "$s1" ] && [ "${s1% *}" -gt 0 ] && [ "$s2" = "0 $((${s1% *} + ${s1#* }))" ]'

# 6. SIGUSR1 to mpirun: every rank finishes its step, rank 0 saves, all exit 0, and the run resumes to
#    the end of the uninterrupted one. The run must still be going when the signal lands.
long=3000; [ "${VITMAE_SANITIZED:-0}" = 1 ] && long=400
lft="$ft --eval-every 100000 --ckpt-every 100000"
"$VITMAE" finetune $lft --steps $long --threads 1 --out "$dir/lref" > /dev/null 2>&1
usr1_stop finetune $long $lft
"$VITMAE" finetune --resume "$dir/usr1" --threads 1 > /dev/null 2>&1; rc=$?
t "SIGUSR1: the resumed run equals the uninterrupted one" '[ $rc -eq 0 ] && same_weights "$dir/lref/checkpoint.safetensors" "$dir/usr1/checkpoint.safetensors"'
# 7. SIGTERM to rank 1 only: the ranks agree on the stop at the next step's exchange, rank 0 saves,
#    all exit 0 (docs/distributed.md, "Faults"); under `timeout`, so that a rank left waiting fails the
#    test instead of hanging it.
one_rank_signal TERM "$dir/one" finetune $lft --steps 100000 --threads 1
t "SIGTERM to rank 1 only: found rank 1's process" '[ -n "$r1" ]'
t "SIGTERM to rank 1 only: the job ends, exit 0 ($rc), saved mid-run (step ${saved:-none}), nothing on stderr ($(head -c 300 "$dir/one.err"))" \
  '[ $rc -eq 0 ] && [ ! -s "$dir/one.err" ] && [ -n "$saved" ] && [ "$saved" -gt 0 ] && [ "$saved" -lt 100000 ] && grep -q "^interrupted at step $saved of 100000; saved " "$dir/one.log"'
[ $fail -eq 0 ] && echo "cli mpi finetune ok"
exit $fail
