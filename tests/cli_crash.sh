#!/bin/sh
# Crash safety: a small run is SIGKILLed at random moments (checkpoints are written every step, so
# many kills land inside a write), at least 10 times. After each kill RUN/checkpoint.safetensors must
# load (`vitmae info`), and the run is resumed from it; the finished run's weights and AdamW moments
# must equal an uninterrupted run's, bitwise. Under ASan (VITMAE_SANITIZED=1): fewer steps and kills.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch dir
cd "$dir" || exit 1   # a command that wrongly writes to the working directory writes here
"$VITMAE_TOOLS/synth" "$dir/data" --count 96 --size 16 --seed 3 >/dev/null || { echo "synth failed"; exit 1; }
small="--data $dir/data --img 16 --patch 4 --dim 32 --depth 2 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 16 --lr 3e-3 --warmup-steps 5 --val-frac 0.1 --threads 1 --eval-every 1000 --sample-every 1000 --ckpt-every 1 --log-every 1"
steps=3000; kills=12; max_delay=0.4
# Each life lasts at most max_delay and the run is long, so it cannot finish before the last kill
# (the last resume then runs it to its end).
# Under ASan a step of this model takes about 7 ms on a fast quiet core (400 steps, a checkpoint each,
# in 2.7 s on a Zen 5), so 6 lives of up to 0.62 s could finish 400 steps (seed 896 did): 1200.
if [ "${VITMAE_SANITIZED:-0}" = 1 ]; then steps=1200; kills=6; max_delay=0.6; fi

# How often checkpoints are written does not change the weights: the reference writes one at the end.
"$VITMAE" train $small --ckpt-every 100000 --steps $steps --out "$dir/ref" > "$dir/ref.log" 2>&1; rc=$?
t "uninterrupted run exits 0" '[ $rc -eq 0 ]'

# Random delays from a seed printed on failure (the kill moments are random, the check is not).
seed=${CRASH_SEED:-$$}
# kill_and_resume CMD RUN KILLS ARGS...: starts `vitmae CMD ARGS --out RUN` (again while RUN has no
# checkpoint), else `vitmae CMD --resume RUN`, and SIGKILLs each life after a random delay until KILLS
# kills; after each kill RUN/checkpoint.safetensors must load. Then the last resume runs it to its end.
# Sets killed, in_write, loadable, resumed.
kill_and_resume() {
  cmd=$1; run=$2; want=$3; shift 3
  killed=0; in_write=0; loadable=0; resumed=0; tries=0; finished=0; fresh=0
  while [ $killed -lt $want ] && [ $tries -lt $((want * 4)) ]; do
    tries=$((tries + 1))
    delay=$(awk -v s="$seed" -v i="$tries" -v m="$max_delay" 'BEGIN { srand(s * 1000 + i); printf "%.3f", 0.02 + rand() * m }')
    if [ -f "$run/checkpoint.safetensors" ]; then
      "$VITMAE" $cmd --resume "$run" --threads 1 > "$run.log" 2>&1 &
      resumed=$((resumed + 1))
    else
      # Killed before its first checkpoint: start again; the folder may hold that start's config.json
      # and metrics.csv, which train refuses to write over without --overwrite (docs/data.md).
      over=""; [ -d "$run" ] && over="--overwrite"
      "$VITMAE" $cmd "$@" $over --out "$run" > "$run.log" 2>&1 &
      fresh=$((fresh + 1))
    fi
    pid=$!
    # On a loaded host (or under ASan) a start can take longer than any delay: after two starts killed
    # before their first checkpoint, the next is given until its first checkpoint (at most 120 s) before
    # its delay begins, so that the kills always reach resumes (they once all landed in start-ups).
    if [ $fresh -ge 3 ] && [ $resumed -eq 0 ]; then
      i=0; while [ $i -lt 1200 ] && [ ! -f "$run/checkpoint.safetensors" ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
    fi
    sleep "$delay"
    if kill -0 $pid 2>/dev/null; then
      kill -KILL $pid 2>/dev/null
      wait $pid 2>/dev/null
      killed=$((killed + 1))
      # A temporary file left behind: this kill landed inside a checkpoint write.
      [ -d "$run" ] && [ "$(ls -a "$run" | grep -c '\.tmp-\|\.link\.')" -gt 0 ] && in_write=$((in_write + 1))
    else
      wait $pid; rc=$?
      t "$cmd: a run that ended by itself exits 0 (try $tries)" '[ $rc -eq 0 ]'
      finished=1
      break
    fi
    if [ -f "$run/checkpoint.safetensors" ]; then
      if "$VITMAE" info "$run/checkpoint.safetensors" > /dev/null 2> "$dir/info.err"; then
        loadable=$((loadable + 1))
      else
        echo "FAILED: $cmd: checkpoint unreadable after kill $killed (delay $delay s, seed $seed): $(cat "$dir/info.err")"
        fail=1
        return
      fi
    fi
  done
  if [ $finished -eq 0 ]; then
    "$VITMAE" $cmd --resume "$run" --threads 1 > "$run.log" 2>&1; rc=$?
    t "$cmd: the last resume finishes (exit 0)" '[ $rc -eq 0 ]'
    [ $rc -eq 0 ] || tail -n 5 "$run.log"
  fi
}
kill_and_resume train "$dir/run" $kills $small --steps $steps
t "killed $kills times while running (got $killed, seed $seed)" '[ $killed -ge $kills ]'
t "resumed after kills ($resumed)" '[ $resumed -ge 2 ]'
t "the final checkpoint reached step $steps" '"$VITMAE" info "$dir/run/checkpoint.safetensors" --json | grep -q "\"step\":[[:space:]]*$steps,"'
t "killed-and-resumed run equals the uninterrupted one, bitwise (seed $seed)" 'same_weights "$dir/ref/checkpoint.safetensors" "$dir/run/checkpoint.safetensors"'
leftovers=$(ls -a "$dir/run" "$dir/run/samples" | grep -c '\.tmp-\|\.link\.\|\.tmp\.')
t "temporary files of killed writes are removed on resume ($leftovers left)" '[ "$leftovers" -eq 0 ]'
# The temporary names of config.json, metrics.csv, curves.png and the sample panels that a kill
# leaves (their writes are rare in the run above, so planted here as kills left them) go too; they
# piled up, one per kill. Names that only look alike stay.
for f in curves.png.tmp.4242.3 config.json.tmp.4242 metrics.csv.tmp.4242 samples/step-8.png.tmp.4242.12 \
         .checkpoint-9.safetensors.tmp-AbC123 curves.png.tmp.notes samples/step-8.png.tmp.x mine.tmp.1; do
  : > "$dir/run/$f"
done
"$VITMAE" train --resume "$dir/run" --steps $((steps + 1)) --threads 1 > "$dir/run.log" 2>&1; rc=$?
t "a resume removes the temporary names of killed output writes ($(cd "$dir/run" && ls -a . samples | grep tmp | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(cd "$dir/run" && ls -a . samples | grep tmp | sort | tr "\n" " ")" = "curves.png.tmp.notes mine.tmp.1 step-8.png.tmp.x " ]'
report="train: $killed kills, $in_write inside a checkpoint write, $loadable checkpoints loaded after a kill, $resumed resumes"

# finetune keeps the same promise (README, "Safe to stop"): its classifier checkpoints, written every
# step, load after every kill, and the killed-and-resumed run equals an uninterrupted one, bitwise.
ft="--ckpt $dir/ref/checkpoint.safetensors --data $dir/data --batch 16 --val-frac 0.1 --eval-every 100000 --ckpt-every 1 --log-every 1 --threads 1"
# 6 kills also under ASan: on a loaded host the first three can all land in start-ups (kill_and_resume
# then waits for a checkpoint), and 3 kills once left a single resume. The lives together are far
# shorter than the run, so it cannot end before the last kill.
ft_steps=3000; ft_kills=6
[ "${VITMAE_SANITIZED:-0}" = 1 ] && ft_steps=1200
"$VITMAE" finetune $ft --ckpt-every 100000 --steps $ft_steps --out "$dir/ftref" > "$dir/ftref.log" 2>&1; rc=$?
t "finetune: uninterrupted run exits 0" '[ $rc -eq 0 ]'
kill_and_resume finetune "$dir/ft" $ft_kills $ft --steps $ft_steps
t "finetune: killed $ft_kills times while running (got $killed, seed $seed)" '[ $killed -ge $ft_kills ]'
t "finetune: resumed after kills ($resumed)" '[ $resumed -ge 2 ]'
t "finetune: the final checkpoint reached step $ft_steps" '[ "$(saved_step "$dir/ft/checkpoint.safetensors")" = $ft_steps ]'
t "finetune: killed-and-resumed run equals the uninterrupted one, bitwise (seed $seed)" \
  'same_weights "$dir/ftref/checkpoint.safetensors" "$dir/ft/checkpoint.safetensors"'
leftovers=$(ls -a "$dir/ft" | grep -c '\.tmp-\|\.link\.\|\.tmp\.')
t "finetune: temporary files of killed writes are removed on resume ($leftovers left)" '[ "$leftovers" -eq 0 ]'
[ $fail -eq 0 ] && echo "cli crash ok ($report; finetune: $killed kills, $in_write inside a write, $resumed resumes)"
exit $fail
