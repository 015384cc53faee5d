#!/bin/sh
# What `vitmae train` hands the optimiser, checked from its outputs against closed forms:
# 1. the lr column of metrics.csv at every step equals linear warm-up + half-cosine to --min-lr
#    (src/core/optim.h; the row of step s holds the rate of 0-based step s - 1), to the printed
#    precision; also the default warm-up (5% of the run) and --blr * batch / 256;
# 2. the first step of a warm-up has lr 0 and leaves the weights (and all else) as an --lr 0 run's;
# 3. the first step of a run without warm-up, from its checkpoint: AdamW moments m = 0.1 g,
#    v = 0.05 g^2, and weights p0 (1 - lr wd [weight matrices]) - lr g / (|g| + 1e-8) (bias-corrected
#    step 1), p0 from the --lr 0 run;
# 4. --clip below the gradient norm changes the run, far above it does not, and with the threads as
#    workers it gives a team's weights;
# 5. a run resumed with a non-zero seed ends with bitwise the weights of the uninterrupted run;
# 6. the held-out images never reach the optimiser: replacing them (same names, so the same split)
#    leaves the trained weights bitwise the same, in pretraining and in fine-tuning.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch dir
cd "$dir" || exit 1   # a command that wrongly writes to the working directory writes here
"$VITMAE_TOOLS/synth" "$dir/data" --count 24 --size 8 --seed 2 >/dev/null || { echo "synth failed"; exit 1; }
small="--data $dir/data --img 8 --patch 4 --dim 8 --depth 1 --heads 2 --dec-dim 8 --dec-depth 1 --dec-heads 2 --batch 4 --augment none --val-frac 0.2 --pixel-norm none --threads 2 --eval-every 1000"
train() { out=$1; shift; "$VITMAE" train $small --out "$dir/$out" "$@" > "$dir/$out.log" 2>&1 || { echo "train $out failed:"; cat "$dir/$out.log"; fail=1; }; }

# lr_ok CSV TOTAL WARMUP BASE MIN_LR: every row's lr (column 3) against the closed form. awk in the C
# locale: metrics.csv writes a decimal point, which awk under a caller's LC_ALL=de_DE.UTF-8 read as the
# end of the number (0.0005 as 0).
lr_ok() {
  LC_ALL=C awk -F, -v T="$2" -v W="$3" -v base="$4" -v lo="$5" '
    NR == 1 { next }
    { s = $1 > 0 ? $1 - 1 : 0
      if (s < W) want = base * s / W
      else if (T <= W) want = base
      else { p = (s - W) / (T - W); if (p > 1) p = 1; want = lo + (base - lo) * 0.5 * (1 + cos(3.14159265358979324 * p)) }
      d = $3 - want; if (d < 0) d = -d
      w = want < 0 ? -want : want
      if (d > 6e-6 * w + 1e-15) { printf "step %s: lr %s, want %.9g\n", $1, $3, want; bad++ }
      rows++ }
    END { if (rows != T + 1) { printf "%d rows, want %d\n", rows, T + 1; bad++ } exit bad > 0 }' "$1"
}

# 1. The schedule as the loop applies it.
train sched --steps 13 --warmup-steps 4 --lr 0.01 --min-lr 0.001 --log-every 1
t "lr column = warm-up + half-cosine (13 steps, warm-up 4, min 0.001)" 'lr_ok "$dir/sched/metrics.csv" 13 4 0.01 0.001'
train dflt --steps 40 --blr 0.064 --log-every 1
t "lr column with the default warm-up (2 of 40) and lr = blr * 4 / 256" 'lr_ok "$dir/dflt/metrics.csv" 40 2 0.001 0'
# A run under 20 steps still warms up 1 step, its first at rate 0 as every MAE run's (5% rounded down
# was 0: step 1 ran at the full rate); a 1-step run none, or its only step would change nothing.
train short --steps 10 --lr 0.01 --log-every 1
t "--steps 10: the default warm-up is 1 step, step 1's lr 0 ($(sed -n 3p "$dir/short/metrics.csv"))" \
  'lr_ok "$dir/short/metrics.csv" 10 1 0.01 0'
train one --steps 1 --lr 0.01
t "--steps 1: no warm-up, step 1's lr the full 0.01 ($(sed -n 3p "$dir/one/metrics.csv"))" \
  'lr_ok "$dir/one/metrics.csv" 1 0 0.01 0'
# A warm-up as long as the run never reaches the lr the start line shows: one warning says so (a
# new user's --warmup-steps 40 on a 20-step trial ran silently at half the rate); one shorter than the
# run (warm's 2 of 3, below) and the default say nothing.
train longwarm --steps 2 --warmup-steps 2 --lr 0.01
t "--warmup-steps 2 of --steps 2: the warning ($(grep warning "$dir/longwarm.log"))" \
  'grep -qx "vitmae: warning: --warmup-steps 2 is not shorter than the run.s 2 steps: the learning rate rises at every step and never reaches its peak 1\.000e-02" "$dir/longwarm.log"'
t "the default warm-up: no warm-up warning" '! grep -q "warmup-steps" "$dir/one.log" "$dir/short.log"'
# A 1-step run given a warm-up runs its one step at rate 0: it trained nothing without a word (the
# warning was said in runs of 2 steps or more only). The default gives a 1-step run none (one.log above).
train onewarm --steps 1 --warmup-steps 3 --lr 0.01
t "--warmup-steps 3 of --steps 1: the warning ($(grep warning "$dir/onewarm.log"))" \
  'grep -qx "vitmae: warning: --warmup-steps 3 is not shorter than the run.s 1 step: its one step runs at learning rate 0 and trains nothing (--warmup-steps 0 trains it at 1\.000e-02)" "$dir/onewarm.log" &&
   [ "$(grep -c "warmup-steps" "$dir/onewarm.log")" -eq 1 ]'
# A resume shortened to a total within the run's warm-up keeps the warm-up (MAE's lr_sched: the rate
# rises until --warmup-steps, then the half-cosine): its warning named "--warmup-steps 6", a flag the
# resume was not given (and refuses at another value); it names the run's warm-up and the total past it.
# Past the warm-up, the shortened schedule's half-cosine from the resumed step on (docs/interface.md,
# section 9): the row of step 9 holds 0-based step 8's rate, halfway down (8 - 6 of 10 - 6), step 10's
# three quarters (0.01 x (1 + cos(3 pi / 4)) / 2).
train wlong --steps 20 --warmup-steps 6 --lr 0.01 --log-every 1 --ckpt-every 2 --keep 10
"$VITMAE" train --resume "$dir/wlong/checkpoint-2.safetensors" --steps 4 --out "$dir/wshort" > "$dir/wshort.log" 2>&1; rc=$?
t "a resume shortened within the warm-up: the warning names the run's warm-up ($rc: $(grep warning "$dir/wshort.log"))" \
  '[ $rc -eq 0 ] && grep -qx "vitmae: warning: the run.s warm-up of 6 steps (--warmup-steps, kept by a resume) is not shorter than its 4 steps now: the learning rate rises at every step and never reaches its peak 1\.000e-02 (--steps 7 or more reaches it)" "$dir/wshort.log" &&
   [ "$(grep -c "warning:.*warm-up" "$dir/wshort.log")" -eq 1 ]'
t "a resume shortened within the warm-up: the rate still rises (steps 3, 4: 0.01 x 2/6, 3/6)" \
  'LC_ALL=C awk -F, '"'"'$1 == 3 { a = $3 } $1 == 4 { b = $3 } END { exit !(a > 0.003333 && a < 0.003334 && b > 0.004999 && b < 0.005001) }'"'"' "$dir/wshort/metrics.csv"'
"$VITMAE" train --resume "$dir/wlong/checkpoint-8.safetensors" --steps 10 --out "$dir/wpast" > "$dir/wpast.log" 2>&1; rc=$?
t "a resume shortened past the warm-up: no warm-up warning, the shorter half-cosine (step 9 at 0.005, 10 at 0.0014645) ($rc)" \
  '[ $rc -eq 0 ] && ! grep -q "warning:.*warm-up" "$dir/wpast.log" &&
   LC_ALL=C awk -F, '"'"'$1 == 9 { a = $3 } $1 == 10 { b = $3 } END { exit !(a > 0.004999 && a < 0.005001 && b > 0.0014644 && b < 0.0014646) }'"'"' "$dir/wpast/metrics.csv"'
# lr = blr * batch / 256 beyond 10 (--blr 10 --batch 512: 20), the most --lr takes: the checkpoint's reader
# took --lr's range, and the run could not be resumed ('lr' missing or out of range).
train bigblr --steps 1 --blr 10 --batch 512
"$VITMAE" train --resume "$dir/bigblr" --steps 2 > "$dir/bigblr2.log" 2>&1; rc=$?
t "--blr 10 --batch 512 (lr 20) resumes ($(grep vitmae: "$dir/bigblr2.log"))" '[ $rc -eq 0 ] && [ "$(saved_step "$dir/bigblr/checkpoint.safetensors")" = 2 ]'
# --lr and --blr both given: --blr gives the rate only without --lr (MAE's main_pretrain.py the same),
# so the pair ran at --lr with --blr dropped unsaid. Refused, one line, exit 2, no run folder; a resume
# given both, each the run's, still goes on (dflt above took --blr alone).
"$VITMAE" train $small --out "$dir/both" --steps 2 --lr 0.01 --blr 0.001 > "$dir/both.log" 2>&1; rc=$?
t "--lr 0.01 --blr 0.001: refused ($(cat "$dir/both.log"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/both.log")" -eq 1 ] && [ ! -e "$dir/both" ] &&
   grep -qx "vitmae: train --blr: 0.001: the base rate gives the learning rate (x batch / 256) only when --lr is not given, and --lr 0.01 is (leave one out)" "$dir/both.log"'
"$VITMAE" train --resume "$dir/dflt" --steps 41 --lr 0.001 --blr 0.064 > "$dir/dflt2.log" 2>&1; rc=$?
t "a resume given the run's --lr and --blr goes on ($(grep vitmae: "$dir/dflt2.log"))" '[ $rc -eq 0 ] && [ "$(saved_step "$dir/dflt/checkpoint.safetensors")" = 41 ]'
# --lr and --blr are one rate written two ways (docs/interface.md, section 5): at batch 10, not a power
# of two, --blr 0.003 stores 0.000117187505 and --lr 1.171875e-4 (0.003 x 10 / 256) 0.000117187497, a
# float apart, and a resume of either run given the other form was refused (`--blr 0.003 cannot change
# when a run resumes (this run's is --lr 0.0001171875)`). Both go on; a rate a float off either stays refused.
train lr10 --steps 1 --batch 10 --lr 1.171875e-4
train blr10 --steps 1 --batch 10 --blr 0.003
"$VITMAE" train --resume "$dir/lr10" --steps 2 --blr 0.003 > "$dir/lr10b.log" 2>&1; rc1=$?
"$VITMAE" train --resume "$dir/blr10" --steps 2 --lr 1.171875e-4 > "$dir/blr10b.log" 2>&1; rc2=$?
"$VITMAE" train --resume "$dir/blr10" --steps 3 --lr 1.1718752e-4 > "$dir/blr10c.log" 2>&1; rc3=$?
t "batch 10: --blr 0.003 resumes the --lr 1.171875e-4 run and the other way round ($rc1 $rc2 $rc3: $(grep vitmae: "$dir/lr10b.log" "$dir/blr10b.log" | grep -v "warning: only"))" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(saved_step "$dir/lr10/checkpoint.safetensors")" = 2 ] && [ "$(saved_step "$dir/blr10/checkpoint.safetensors")" = 2 ] &&
   [ $rc3 -eq 2 ] && grep -qx "vitmae: train --resume: --lr 0.00011718752 cannot change when a run resumes (this run.s is 0.000117187505); start a new run from these weights with --init CHECKPOINT" "$dir/blr10c.log"'
# Where --lr x 256 / batch is a repeating decimal no --blr spelling stores the --lr run's float: at batch
# 12 --lr 1e-4 stores 9.99999975e-05 and every --blr 0.0021333... 0.000100000005, a float above (batch
# 24 and --lr 2e-4 alike), and resuming the --lr run with any --blr was refused (`--blr 0.0021333334
# cannot change when a run resumes (this run's is --lr 0.0001)`). A float apart is the run's; three
# floats (--blr 0.002133333) and another rate (--blr 0.003) stay refused.
train lr12 --steps 1 --batch 12 --lr 1e-4
train blr12 --steps 1 --batch 12 --blr 0.0021333333333333334
train lr24 --steps 1 --batch 24 --lr 2e-4
"$VITMAE" train --resume "$dir/lr12" --steps 2 --blr 0.0021333333333333334 > "$dir/lr12b.log" 2>&1; rc1=$?
"$VITMAE" train --resume "$dir/lr12" --steps 3 --blr 0.0021333334 > "$dir/lr12c.log" 2>&1; rc2=$?
"$VITMAE" train --resume "$dir/blr12" --steps 2 --lr 1e-4 > "$dir/blr12b.log" 2>&1; rc3=$?
"$VITMAE" train --resume "$dir/lr24" --steps 2 --blr 0.0021333334 > "$dir/lr24b.log" 2>&1; rc4=$?
"$VITMAE" train --resume "$dir/lr12" --steps 4 --blr 0.003 > "$dir/lr12d.log" 2>&1; rc5=$?
"$VITMAE" train --resume "$dir/lr12" --steps 4 --blr 0.002133333 > "$dir/lr12e.log" 2>&1; rc6=$?
t "batch 12 and 24: --blr 0.0021333... resumes the --lr 1e-4 (2e-4) run and the other way round; --blr 0.003 and 0.002133333 refused ($rc1 $rc2 $rc3 $rc4 $rc5 $rc6: $(grep -h vitmae: "$dir/lr12b.log" "$dir/lr12c.log" "$dir/blr12b.log" "$dir/lr24b.log" | grep -v warning))" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && [ $rc4 -eq 0 ] && [ "$(saved_step "$dir/lr12/checkpoint.safetensors")" = 3 ] &&
   [ "$(saved_step "$dir/blr12/checkpoint.safetensors")" = 2 ] && [ "$(saved_step "$dir/lr24/checkpoint.safetensors")" = 2 ] &&
   [ $rc5 -eq 2 ] && grep -qx "vitmae: train --resume: --blr 0.003 cannot change when a run resumes (this run.s is --lr 0.0001); start a new run from these weights with --init CHECKPOINT" "$dir/lr12d.log" &&
   [ $rc6 -eq 2 ] && grep -qx "vitmae: train --resume: --blr 0.002133333 cannot change when a run resumes (this run.s is --lr 0.0001); start a new run from these weights with --init CHECKPOINT" "$dir/lr12e.log"'
# --lr -0 is 0: it was echoed "lr -0.000e+00" and written -0 in metrics.csv's lr column and the state.
train negzero --steps 1 --lr -0
t "--lr -0: echoed and written as 0 ($(grep -o "lr [-0-9.e+]*" "$dir/negzero.log" | head -n 1); $(tail -n 1 "$dir/negzero/metrics.csv" | cut -d, -f3))" \
  'grep -q "lr 0.000e+00" "$dir/negzero.log" && ! grep -q -- "lr -0" "$dir/negzero.log" && [ "$(tail -n 1 "$dir/negzero/metrics.csv" | cut -d, -f3)" = 0 ]'

# 2. A step with lr 0 (the first of a warm-up) changes nothing: as a run with --lr 0.
train warm --steps 3 --warmup-steps 2 --lr 0.01 --ckpt-every 1 --keep 5
train zero --steps 1 --lr 0
t "after the first warm-up step (lr 0) the checkpoint equals an --lr 0 run's" \
  'same_weights "$dir/warm/checkpoint-1.safetensors" "$dir/zero/checkpoint.safetensors"'
t "the second warm-up step moves the weights" \
  '! same_weights "$dir/warm/checkpoint-2.safetensors" "$dir/warm/checkpoint-1.safetensors"'
t "--warmup-steps 2 of --steps 3: no warm-up warning" '! grep -q "warmup-steps" "$dir/warm.log"'

# 3. The first AdamW step, in closed form.
train first --steps 1 --warmup-steps 0 --lr 0.01 --wd 0.05
python3 - "$dir/zero/checkpoint.safetensors" "$dir/first/checkpoint.safetensors" > "$dir/first.check" 2>&1 <<'PY'
import math, os, sys
sys.path.insert(0, os.path.join(os.environ["VITMAE_ROOT"], "tools"))
import safetensors_io as st
p0, _ = st.read(sys.argv[1])
p1, _ = st.read(sys.argv[2])
lr, wd, b1, b2 = 0.01, 0.05, 0.9, 0.95
bad = checked = 0
for name, (shape, w0) in p0.items():
    if name.startswith("optimizer."):
        continue
    w1 = p1[name][1]
    m = p1["optimizer.exp_avg." + name][1]
    v = p1["optimizer.exp_avg_sq." + name][1]
    decay = name.endswith(".weight") and len(shape) >= 2
    for i in range(len(w0)):
        g = m[i] / (1 - b1)
        want = w0[i] * (1 - lr * wd if decay else 1) - lr * g / (math.sqrt(v[i] / (1 - b2)) + 1e-8)
        upd = abs(want - w0[i])
        ok = abs(v[i] - (1 - b2) * g * g) <= 1e-5 * v[i] + 1e-30 and abs(w1[i] - want) <= 2.5e-7 * abs(w0[i]) + 1e-5 * upd + 1e-12
        checked += 1
        if not ok:
            bad += 1
            if bad <= 3:
                print(f"{name}[{i}]: p {w1[i]:.9g} want {want:.9g} (p0 {w0[i]:.9g}, m {m[i]:.6g}, v {v[i]:.6g})")
print(f"{checked} values, {bad} off")
sys.exit(1 if bad or checked == 0 else 0)
PY
rc=$?
t "first step = AdamW closed form (bias-corrected step 1, decay on weight matrices): $(tail -n 1 "$dir/first.check")" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || head -n 3 "$dir/first.check"

# 4. Gradient clipping takes part only when the norm exceeds --clip.
train noclip --steps 2 --warmup-steps 0 --lr 0.01
train clip --steps 2 --warmup-steps 0 --lr 0.01 --clip 1e-6
train bigclip --steps 2 --warmup-steps 0 --lr 0.01 --clip 1e5
t "--clip 1e-6 changes the weights" '! same_weights "$dir/clip/checkpoint.safetensors" "$dir/noclip/checkpoint.safetensors"'
t "--clip 1e5 leaves the run as it is" 'same_weights "$dir/bigclip/checkpoint.safetensors" "$dir/noclip/checkpoint.safetensors"'
# The threads as workers clip the whole gradient, summed first (their top of the tree is left to
# AdamW's pass only without --clip): the same weights as a team's run.
train clipk --steps 2 --warmup-steps 0 --lr 0.01 --clip 1e-6 --parallel kernels
t "--clip with the threads as workers: the team's weights" 'grep -q "threads as workers" "$dir/clip.log" && same_weights "$dir/clip/checkpoint.safetensors" "$dir/clipk/checkpoint.safetensors"'

# 5. Resume with a seed other than the default: masks and crops continue the same streams.
train seeded --steps 4 --seed 5 --augment crop --lr 0.01 --ckpt-every 2 --keep 5
"$VITMAE" train --resume "$dir/seeded/checkpoint-2.safetensors" --out "$dir/resumed" > "$dir/resumed.log" 2>&1; rc=$?
t "resume exits 0" '[ $rc -eq 0 ]'
t "resumed --seed 5 run ends bitwise as the uninterrupted one" \
  'same_weights "$dir/resumed/checkpoint.safetensors" "$dir/seeded/checkpoint.safetensors"'
# --interp bicubic (docs/data.md, "Interpolation"): the start line says it, 1 thread and 2 give the same
# bits, the filter changes the run, a snapshot resumed ends bitwise as the run, a resume refuses the
# other filter, --augment none refuses the flag, and a train_state from before --interp (no "interp")
# resumes with bilinear crops, bitwise the run it was.
train cubic --steps 4 --seed 5 --augment crop --interp bicubic --lr 0.01 --ckpt-every 2 --keep 5
train cubic1 --steps 4 --seed 5 --augment crop --interp bicubic --lr 0.01 --threads 1
t "--interp bicubic: the start line says it ($(grep -o "augment [^,]*" "$dir/cubic.log"))" 'grep -q "mask 0.75, augment crop (bicubic), pixel" "$dir/cubic.log"'
t "--interp bicubic: 1 thread and 2, bitwise equal weights" 'same_weights "$dir/cubic/checkpoint.safetensors" "$dir/cubic1/checkpoint.safetensors"'
t "--interp bicubic: not the run with bilinear crops" '! same_weights "$dir/cubic/checkpoint.safetensors" "$dir/seeded/checkpoint.safetensors"'
"$VITMAE" train --resume "$dir/cubic/checkpoint-2.safetensors" --out "$dir/cubicr" > /dev/null 2>&1; rc=$?
t "--interp bicubic: a snapshot resumed ends bitwise as the run ($rc)" '[ $rc -eq 0 ] && same_weights "$dir/cubic/checkpoint.safetensors" "$dir/cubicr/checkpoint.safetensors"'
"$VITMAE" train --resume "$dir/cubic/checkpoint-2.safetensors" --interp bilinear --out "$dir/cubicc" > /dev/null 2> "$dir/cubicc.err"; rc=$?
t "--interp: a resume with the other filter is refused ($rc: $(cat "$dir/cubicc.err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/cubicc.err")" = "vitmae: train --resume: --interp bilinear cannot change when a run resumes (this run'"'"'s is bicubic); start a new run from these weights with --init CHECKPOINT" ] && [ ! -e "$dir/cubicc" ]'
"$VITMAE" train $small --augment none --interp bicubic --steps 2 --out "$dir/cubicn" > /dev/null 2> "$dir/cubicn.err"; rc=$?
t "--augment none --interp bicubic: refused, one line, no folder ($rc: $(cat "$dir/cubicn.err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/cubicn.err")" = "vitmae: train --interp: bicubic: the filter of the random resized crop, which --augment none does not take (leave it out, or use --augment crop)" ] && [ ! -e "$dir/cubicn" ]'
mkdir "$dir/old" && edit_state "$dir/seeded/checkpoint-2.safetensors" "$dir/old/checkpoint.safetensors" interp=DEL
"$VITMAE" train --resume "$dir/old" > /dev/null 2> "$dir/old.err"; rc=$?
t "train_state from before --interp: resumes bilinear, bitwise the run ($rc: $(head -n 1 "$dir/old.err"))" \
  '[ $rc -eq 0 ] && same_weights "$dir/seeded/checkpoint.safetensors" "$dir/old/checkpoint.safetensors"'
edit_state "$dir/seeded/checkpoint-2.safetensors" "$dir/badinterp.safetensors" interp='"lanczos"'
"$VITMAE" train --resume "$dir/badinterp.safetensors" --out "$dir/badi" > /dev/null 2> "$dir/badi.err"; rc=$?
t "train_state with interp \"lanczos\": exit 1, one line ($rc: $(cat "$dir/badi.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/badi.err")" -eq 1 ] && grep -q "cannot resume: train_state: .interp. out of range$" "$dir/badi.err" && [ ! -e "$dir/badi" ]'
# The largest seed (2^53 - 1, 16 digits; docs/interface.md, "Seeds"): stored with every digit, so the
# resumed run is the uninterrupted one; eval --json and config.json print it whole.
big=9007199254740991
train bigseed --steps 4 --seed $big --augment crop --lr 0.01 --ckpt-every 2 --keep 5
"$VITMAE" train --resume "$dir/bigseed/checkpoint-2.safetensors" --out "$dir/bigresumed" > /dev/null 2>&1; rc=$?
t "--seed $big: the resumed run ends bitwise as the uninterrupted one" \
  '[ $rc -eq 0 ] && same_weights "$dir/bigresumed/checkpoint.safetensors" "$dir/bigseed/checkpoint.safetensors"'
t "--seed $big: config.json and the checkpoint hold it whole" \
  'grep -q "\"seed\":[[:space:]]*$big," "$dir/bigseed/config.json" && "$VITMAE" info "$dir/bigseed/checkpoint.safetensors" | grep -q "^ *seed  *$big$"'
t "--seed $big: eval --json prints it whole" \
  '"$VITMAE" eval --ckpt "$dir/bigseed/checkpoint.safetensors" --data "$dir/data" --seed $big --json | grep -q "\"seed\":[[:space:]]*$big$"'

# 6. Held-out images do not influence the weights.
"$VITMAE_TOOLS/synth" "$dir/other" --count 24 --size 8 --seed 9 >/dev/null || { echo "synth failed"; exit 1; }
cp -R "$dir/data" "$dir/data2"
nval=$(python3 - "$dir/data2" "$dir/other" <<'PY'
import os, shutil, sys
root, other = sys.argv[1], sys.argv[2]
others = sorted(os.path.join(d, f) for d, _, fs in os.walk(other) for f in fs)
n = 0
for d, _, fs in sorted(os.walk(root)):
    for f in sorted(fs):
        rel = os.path.relpath(os.path.join(d, f), root)
        h = 0xcbf29ce484222325
        for b in rel.encode():   # FNV-1a 64, the split key of src/data/dataset.h
            h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
        if h % 10000 < 2000:     # --val-frac 0.2
            shutil.copyfile(others[n], os.path.join(d, f))
            n += 1
print(n)
PY
)
train heldout1 --steps 12 --lr 0.01 --augment crop
"$VITMAE" train $small --data "$dir/data2" --out "$dir/heldout2" --steps 12 --lr 0.01 --augment crop > "$dir/heldout2.log" 2>&1
t "replaced held-out images ($nval) leave the weights bitwise the same" \
  '[ "$nval" -gt 0 ] && same_weights "$dir/heldout1/checkpoint.safetensors" "$dir/heldout2/checkpoint.safetensors"'

# The same for fine-tuning (a classifier from scratch, --val-frac of --data held out).
ft="--from-scratch --img 8 --patch 4 --dim 8 --depth 1 --heads 2 --batch 4 --steps 6 --lr 0.01 --val-frac 0.2 --pixel-norm none --augment crop --threads 2 --eval-every 1000"
"$VITMAE" finetune $ft --data "$dir/data" --out "$dir/ft1" > "$dir/ft1.log" 2>&1; rc1=$?
"$VITMAE" finetune $ft --data "$dir/data2" --out "$dir/ft2" > "$dir/ft2.log" 2>&1; rc2=$?
t "finetune runs exit 0" '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ]'
"$VITMAE" finetune $ft --data "$dir/data" --steps 2 --warmup-steps 3 --out "$dir/ftwarm" > "$dir/ftwarm.log" 2>&1
t "finetune --warmup-steps 3 of --steps 2: the warning ($(grep warning "$dir/ftwarm.log"))" \
  'grep -qx "vitmae: warning: --warmup-steps 3 is not shorter than the run.s 2 steps: the learning rate rises at every step and never reaches its peak 1\.000e-02" "$dir/ftwarm.log"'
t "finetune with the default warm-up: no warm-up warning" '! grep -q "warmup-steps" "$dir/ft1.log"'
"$VITMAE" finetune $ft --data "$dir/data" --steps 1 --warmup-steps 1 --out "$dir/ftwarm1" > "$dir/ftwarm1.log" 2>&1
t "finetune --warmup-steps 1 of --steps 1: the warning ($(grep warning "$dir/ftwarm1.log"))" \
  'grep -qx "vitmae: warning: --warmup-steps 1 is not shorter than the run.s 1 step: its one step runs at learning rate 0 and trains nothing (--warmup-steps 0 trains it at 1\.000e-02)" "$dir/ftwarm1.log"'
t "fine-tuning: replaced held-out images leave the weights bitwise the same" \
  'same_weights "$dir/ft1/checkpoint.safetensors" "$dir/ft2/checkpoint.safetensors"'

# finetune alike: at batch 10 --blr 0.003 and --lr 1.171875e-4 each resume the other's run, and at batch
# 12, where the two forms store floats one apart that no --blr spelling closes (train above), --blr
# 0.0021333333333333334 and --lr 1e-4; a --blr further off is refused naming the run's --lr.
ft_lr_pair() {   # BATCH LR BLR OTHER_BLR RUN_LR_TEXT (named: t evaluates its check in its own arguments)
  b=$1; flr=$2; fblr=$3; fother=$4; frun=$5
  fl=$(echo "$ft" | sed "s/ --lr 0.01//; s/--batch 4/--batch $b/; s/--steps 6/--steps 1/")
  "$VITMAE" finetune $fl --data "$dir/data" --lr "$flr" --out "$dir/ftlr$b" > /dev/null 2>&1
  "$VITMAE" finetune $fl --data "$dir/data" --blr "$fblr" --out "$dir/ftblr$b" > /dev/null 2>&1
  "$VITMAE" finetune --resume "$dir/ftlr$b" --blr "$fblr" > /dev/null 2> "$dir/err"; rc1=$?
  "$VITMAE" finetune --resume "$dir/ftblr$b" --lr "$flr" > /dev/null 2>> "$dir/err"; rc2=$?
  "$VITMAE" finetune --resume "$dir/ftlr$b" --blr "$fother" > /dev/null 2> "$dir/err3"; rc3=$?
  t "finetune at batch $b: --blr $fblr and --lr $flr resume each other's run, --blr $fother refused ($rc1 $rc2 $rc3: $(grep -v "warning: only" "$dir/err"))" \
    '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ -f "$dir/ftlr$b/checkpoint.safetensors" ] && [ -f "$dir/ftblr$b/checkpoint.safetensors" ] &&
     [ $rc3 -eq 2 ] && grep -qx "vitmae: finetune --resume: --blr $fother cannot change when a run resumes (this run.s is --lr $frun); start a new run with --from-scratch for another" "$dir/err3"'
}
ft_lr_pair 10 1.171875e-4 0.003 0.0031 0.0001171875
ft_lr_pair 12 1e-4 0.0021333333333333334 0.003 0.0001

# A --min-lr above the peak made the half-cosine rise to it (0.001 to 0.5 over a run: the loss went to
# 27); it is refused, exit 2, nothing made. The default floor, 1e-6, above --lr 0 is that 0: a frozen
# run's lr column all 0 (it trained at up to 1e-6). --min-lr equal to --lr is a flat schedule, taken.
"$VITMAE" finetune $ft --data "$dir/data" --lr 0.001 --min-lr 0.5 --out "$dir/ftmin" > /dev/null 2> "$dir/err"; rc=$?
t "finetune --min-lr above --lr: refused, exit 2, nothing made ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ ! -e "$dir/ftmin" ] && grep -qx "vitmae: finetune --min-lr: 0.5 is above the learning rate, 0.001 (--lr): the half-cosine would rise to it, not decay (give at most 0.001)" "$dir/err"'
"$VITMAE" train $small --steps 3 --blr 0.064 --min-lr 0.01 --out "$dir/trmin" > /dev/null 2> "$dir/err"; rc=$?
t "train --min-lr above blr * batch / 256: refused, the lr's making said ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ ! -e "$dir/trmin" ] && grep -qx "vitmae: train --min-lr: 0.01 is above the learning rate, 0.001 (--blr 0.064 x --batch 4 / 256): the half-cosine would rise to it, not decay (give at most 0.001)" "$dir/err"'
"$VITMAE" finetune $ft --data "$dir/data" --lr 0 --log-every 1 --out "$dir/ftzero" > /dev/null 2>&1; rc=$?
t "finetune --lr 0 with the default --min-lr: every step's lr 0 ($(cut -d, -f3 "$dir/ftzero/metrics.csv" 2>/dev/null | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(cut -d, -f3 "$dir/ftzero/metrics.csv" | sed 1d | sort -u)" = 0 ] && [ "$(sed 1d "$dir/ftzero/metrics.csv" | wc -l)" -eq 7 ]'
train flat --steps 5 --lr 0.01 --min-lr 0.01 --warmup-steps 0 --log-every 1
t "train --min-lr equal to --lr: taken, a flat schedule" 'lr_ok "$dir/flat/metrics.csv" 5 0 0.01 0.01'

[ $fail -eq 0 ] && echo "cli optim ok"
exit $fail
