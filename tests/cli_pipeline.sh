#!/bin/sh
# The streaming data pipeline (docs/data.md): bitwise the same run for any --prefetch,
# --loader-threads, --cache-mb and with or without the on-disk store (built by one run, read by the
# next); a file broken past its header is skipped the same way every time and reported; --val DIR;
# the warning for a tiny validation split.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch dir
export XDG_CACHE_HOME="$dir/xdg"
cd "$dir" || exit 1
"$VITMAE_TOOLS/synth" "$dir/data" --count 48 --size 24 --seed 2 >/dev/null || { echo "synth failed"; exit 1; }
"$VITMAE_TOOLS/synth" "$dir/val" --count 12 --size 24 --seed 4 >/dev/null
# One file broken past its header: the scan reads headers only, so it is found while training.
f=$(ls "$dir"/data/circle/*.png | head -n 1)
head -c 80 "$f" > "$dir/cut.png" && mv "$dir/cut.png" "$f"
small="--data $dir/data --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 8 --steps 8 --eval-every 4 --val-frac 0.2"

run() { name=$1; shift; "$VITMAE" train $small --out "$dir/$name" "$@" > "$dir/$name.log" 2> "$dir/$name.err"; }
run ref --threads 2; rc=$?
t "reference run exits 0 ($(head -c 300 "$dir/ref.err"))" '[ $rc -eq 0 ]'
t "the broken file is reported once" '[ $(grep -c "skipped .*circle/.*found while training" "$dir/ref.err") -eq 1 ]'
variants="p5 store1 store2"
[ "${VITMAE_SANITIZED:-0}" = 1 ] || variants="p1 p5 nocache store1 store2"   # fewer runs under ASan
case " $variants " in *" p1 "*) run p1 --threads 1 --prefetch 1 --loader-threads 1;; esac
run p5 --threads 2 --prefetch 5 --loader-threads 3
case " $variants " in *" nocache "*) run nocache --threads 2 --cache-mb 0 --store none;; esac
run store1 --threads 2 --cache-mb 0 --store "$dir/store"
run store2 --threads 1 --cache-mb 0 --store "$dir/store" --prefetch 3
for v in $variants; do
  t "$v: bitwise the same weights as the reference" 'same_weights "$dir/ref/checkpoint.safetensors" "$dir/$v/checkpoint.safetensors"'
  t "$v: the broken file reported" 'grep -q "found while training" "$dir/$v.err"'
done
t "first store run decodes and writes working images" 'grep -q "working images: [1-9][0-9]* decoded, [0-9]* read from the store ([1-9]" "$dir/store1.log"'
t "second store run reads them back, decodes nothing" 'grep -q "working images: 0 decoded, [1-9][0-9]* read from the store" "$dir/store2.log"'
t "the store holds files" '[ $(ls "$dir/store" | grep -c "\.work$") -ge 40 ]'
# --cache-mb 0 with --store auto keeps the store under XDG_CACHE_HOME, never elsewhere.
run auto --threads 2 --cache-mb 0
t "--store auto with no cache: the store in XDG_CACHE_HOME" '[ -d "$dir/xdg/vitmae/work" ] && same_weights "$dir/ref/checkpoint.safetensors" "$dir/auto/checkpoint.safetensors"'

# --val DIR: every --data image trains, the val folder validates; config.json says so.
"$VITMAE" train $small --val "$dir/val" --threads 2 --out "$dir/v" > "$dir/v.log" 2>&1; rc=$?
t "--val exits 0" '[ $rc -eq 0 ]'
t "--val: 12 val images, 48 train" 'grep -q "\"val_images\":[[:space:]]*12" "$dir/v/config.json" && grep -q "\"train_images\":[[:space:]]*48" "$dir/v/config.json"'
t "--val: validation rows" '[ $(awk -F, "NR > 1 && \$5 != \"\"" "$dir/v/metrics.csv" | wc -l) -ge 2 ]'
# A tiny held-out split warns.
"$VITMAE" train $small --val-frac 0.05 --steps 2 --threads 2 --out "$dir/tiny" > /dev/null 2> "$dir/tiny.err"
t "tiny split warns with the count" 'grep -q "warning: only [0-9] validation image.*pass --val DIR" "$dir/tiny.err"'
# A batch none of whose files decodes (every file broken past its header, found while training) stops
# the run: exit 1 and one line that says why, with the threads as a team or as workers (whose groups
# once reported the failure with an empty reason).
"$VITMAE_TOOLS/synth" "$dir/broken" --count 8 --size 16 --seed 5 >/dev/null
for f in $(find "$dir/broken" -name "*.png"); do head -c 80 "$f" > "$dir/cut.png" && mv "$dir/cut.png" "$f"; done
for p in kernels groups; do
  "$VITMAE" train --data "$dir/broken" --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 \
    --dec-heads 2 --batch 8 --steps 2 --val-frac 0 --pixel-norm none --threads 2 --parallel $p --out "$dir/b$p" \
    > /dev/null 2> "$dir/b$p.err"; rc=$?
  t "no image of a batch decodes, --parallel $p: exit 1, one line with the reason ($(head -c 200 "$dir/b$p.err"))" \
    '[ $rc -eq 1 ] && [ "$(grep -c "^vitmae:" "$dir/b$p.err")" -eq 1 ] && grep -q "^vitmae: no image of this batch decodes (the last: .*broken/.*png)$" "$dir/b$p.err" && [ ! -e "$dir/b$p/checkpoint.safetensors" ]'
done
[ $fail -eq 0 ] && echo "cli pipeline ok"
exit $fail
