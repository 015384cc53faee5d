#!/bin/sh
# valgrind --leak-check=full on a short train, a reconstruct and an attention run, then a finetune,
# classify, embed and probe: no memory errors and no leaks (definite or possible; the thread-TLS
# records of libgomp's and cpu_start_threads' threads are suppressed narrowly in tests/valgrind.supp).
# Slow (a minute or two), so `make valgrind` runs it, not `make test`.
# Usage: tests/valgrind.sh VITMAE_BIN TOOLS_DIR   (a binary built without AVX-512: valgrind lacks it)
set -u
VITMAE=$(realpath "$1"); TOOLS=$(realpath "$2")
supp=$(realpath tests/valgrind.supp)
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fail=0
# vitmae re-executes itself once to set GOMP_SPINCOUNT when it is unset (src/cmd/main.c); a re-executed
# child would run outside valgrind, so set it here.
GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}; export GOMP_SPINCOUNT
vg() {
  name=$1; shift
  valgrind --leak-check=full --errors-for-leak-kinds=definite,possible --error-exitcode=99 \
    --suppressions="$supp" "$@" > "$dir/$name.out" 2> "$dir/$name.vg"; rc=$?
  summary=$(grep -E "ERROR SUMMARY|definitely lost|possibly lost|in use at exit" "$dir/$name.vg" | sed 's/^==[0-9]*== *//' | tr '\n' ';')
  echo "$name: exit $rc; $summary"
  if [ $rc -ne 0 ]; then fail=1; grep -A30 -E "Invalid|uninitialised|lost in loss" "$dir/$name.vg" | head -60; fi
}
"$TOOLS/synth" "$dir/data" --count 24 --size 16 --seed 3 > /dev/null
small="--data $dir/data --img 16 --patch 4 --dim 32 --depth 2 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 8 --warmup-steps 2 --val-frac 0.2"
vg train "$VITMAE" train $small --steps 4 --eval-every 2 --threads 2 --out "$dir/run"
img=$(find "$dir/data" -name '*.png' | head -n 1)
vg reconstruct "$VITMAE" reconstruct --ckpt "$dir/run/checkpoint.safetensors" --raw --threads 2 --out "$dir/recon" "$img"
if "$VITMAE" --help | grep -q '^  attention'; then
  vg attention "$VITMAE" attention --ckpt "$dir/run/checkpoint.safetensors" --raw --threads 2 --out "$dir/attn" "$img"
fi
# The commands that came after (docs/encoder.md): the same promise. synth's folders are the classes.
vg finetune "$VITMAE" finetune --ckpt "$dir/run/checkpoint.safetensors" --data "$dir/data" --batch 8 --steps 3 --eval-every 2 \
  --threads 2 --out "$dir/ft"
vg classify "$VITMAE" classify --ckpt "$dir/ft/checkpoint.safetensors" --threads 2 "$img"
vg embed "$VITMAE" embed --ckpt "$dir/run/checkpoint.safetensors" --threads 2 --out "$dir/feats.npy" "$dir/data"
vg probe "$VITMAE" probe --ckpt "$dir/run/checkpoint.safetensors" --train "$dir/data" --test "$dir/data" --linear --threads 2 \
  --out "$dir/probe"
[ $fail -eq 0 ] && echo "valgrind ok"
exit $fail
