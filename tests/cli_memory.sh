#!/bin/sh
# Requests that cannot fit in memory are refused before anything is allocated, naming the bytes they
# would need: train and bench (huge image and batch: usage error, exit 2), finetune (the batches its
# loader holds ahead), and reconstruct / eval / attention / embed / classify / probe on a small
# checkpoint whose image size makes the activations huge (L = 65,536 patches: attention maps of 17 GB
# a head, and 16 heads in the encoder: 275 GB; exit 1, the model itself cannot fit at batch 1, even
# forward only, even the encoder alone, whose one head's 17 GB fit a 24 GB machine). Refusals are
# immediate and write nothing; embed and probe check the batch they will run (no more images than they
# have).
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch dir
cd "$dir" || exit 1   # a command that wrongly writes to the working directory writes here
"$VITMAE_TOOLS/synth" "$dir/data" --count 8 --size 16 --seed 1 >/dev/null || { echo "synth failed"; exit 1; }
"$VITMAE_TOOLS/hostile" ckpt "$dir/big.safetensors" 2048 8 1 16 || { echo "hostile ckpt failed"; exit 1; }
"$VITMAE_TOOLS/hostile" clf "$dir/bigc.safetensors" 2048 8 || { echo "hostile clf failed"; exit 1; }
cp "$(find "$dir/data" -name '*.png' | head -n 1)" "$dir/in.png"

bytes_line() { grep -E "^vitmae: $1: .*needs [0-9]+ bytes \([0-9.]+ GiB(\)|, of which [0-9.]+ GiB for the [0-9]+ parameters[^)]*\)).*this machine has [0-9.]+ GiB" "$dir/err" > /dev/null; }

"$VITMAE" train --data "$dir/data" --preset base --img 1024 --patch 4 --batch 4096 --out "$dir/t" > /dev/null 2> "$dir/err"; rc=$?
t "train: huge model and batch: exit 2 ($rc)" '[ $rc -eq 2 ]'
t "train: names the bytes ($(cat "$dir/err"))" 'grep -q "needs [0-9]* bytes" "$dir/err"'
t "train: nothing written" '[ ! -e "$dir/t" ]'
# Said in terms of --batch (a gradient group of 1024 images was "batch 1024"), with the share of the
# parameters, which no batch changes: a model too large at --batch 1 (3 TB of parameters) says so.
t "train: the line says --batch 4096 runs 1024 images at a time" 'grep -q "^vitmae: train: batch 1024 at 1024x1024 needs .*: --batch 4096 runs 1024 images at a time$" "$dir/err"'
# ... which no --groups can help (the 4096 images' own pixels need 200 GB): no way out named. Where more
# gradient groups would fit, the line names the fewest that do, B / G images at a time; with half of
# them it names the same again. The model: 4096 tokens of a 64x64 grey image, a decoder of 4 heads
# (590 GiB for 1024 images at a time, about 0.6 GiB for one: a hint on any machine of 2 to 600 GiB).
t "train: no --groups named where none fits" '! grep -q -- "--groups" "$dir/err"'
small_big="--img 64 --patch 1 --channels 1 --dim 16 --heads 1 --depth 1 --dec-dim 16 --dec-heads 4 --dec-depth 1 --batch 4096"
"$VITMAE" train --data "$dir/data" $small_big --out "$dir/t" > /dev/null 2> "$dir/err"; rc=$?
way=$(sed -n 's/.*: --batch 4096 runs 1024 images at a time; --groups \([0-9]*\) (\([0-9]*\) images\{0,1\} at a time) fits$/\1 \2/p' "$dir/err")
g=${way% *}; per=${way#* }
t "train: the fewest --groups that fit named ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ -n "$way" ] && [ $((g * per)) -eq 4096 ] && [ "$g" -gt 4 ] && [ $((g & (g - 1))) -eq 0 ] && [ ! -e "$dir/t" ]'
if [ -n "$way" ] && [ "$g" -ge 16 ]; then
  "$VITMAE" train --data "$dir/data" $small_big --groups $((g / 2)) --out "$dir/t" > /dev/null 2> "$dir/err"; rc=$?
  t "train --groups $((g / 2)): refused, --groups $g named again ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && grep -q -- "; --groups $g ($per images\{0,1\} at a time) fits$" "$dir/err"'
fi
"$VITMAE" train --data "$dir/data" --img 16 --patch 4 --dim 16384 --heads 1 --depth 64 --batch 1 --out "$dir/t" > /dev/null 2> "$dir/err"; rc=$?
t "train: a model too large at --batch 1: exit 2, one line naming the parameters' share ($(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "GiB, of which [0-9.]* GiB for the [0-9]* parameters, their gradients, AdamW moments and packed copies at any batch); this machine has" "$dir/err"'

# The bytes the rule counts cover a step whose parameters dominate (tiny at 32 pixels, patch 16: 5
# tokens an image, batch 1): bench's peak memory against them stays near 1 (1.08 on a Zen 5). Before
# the weights' packed copies were counted (two floats a parameter, kernels/gemm.h) it was 1.62, and a
# model the check let through by 0.1 GiB in a 0.50 GiB cgroup was killed (exit 137).
# Not with the sanitizers: their shadow memory and quarantine are no part of the step (1.29 there).
if [ "${VITMAE_SANITIZED:-0}" != 1 ]; then
  ratio=$("$VITMAE" bench --preset tiny --img 32 --patch 16 --batch 1 --groups 1 --threads 1 --steps 2 --warmup 1 --json 2> "$dir/err" |
          tr -d ' \n' | sed -n 's/.*"memory_ratio":\([0-9.]*\).*/\1/p')
  t "bench: a parameter-heavy step peaks within 1.25x of the bytes counted (${ratio:-none}: $(head -c 300 "$dir/err"))" \
    '[ -n "$ratio" ] && awk -v r="$ratio" "BEGIN { exit !(r > 0.5 && r <= 1.25) }"'
fi
"$VITMAE" reconstruct --ckpt "$dir/big.safetensors" --out "$dir/r" "$dir/in.png" > /dev/null 2> "$dir/err"; rc=$?
t "reconstruct: activations cannot fit: exit 1 ($rc)" '[ $rc -eq 1 ]'
t "reconstruct: names the bytes ($(cat "$dir/err"))" 'bytes_line reconstruct'
need_recon=$(sed -n 's/.* needs \([0-9]*\) bytes.*/\1/p' "$dir/err")
t "reconstruct: nothing written, no output folder made" '[ ! -e "$dir/r" ]'
cp "$dir/err" "$dir/err.recon"
# reconstruct draws its panels before writing them: at --display 8192 about a gigabyte an image, which
# the check did not count (a batch of them ran out of memory, killed where it should be refused). It
# draws and writes them as many images at a time as threads (at most --batch), whatever --batch is
# (it held a whole batch's: 600 images at --batch 600 needed 650 GB). With threads enough that their
# panels pass 90% of this machine's memory and one panel fits: refused, exit 2, a smaller --batch
# named, nothing made; under ulimit -v 8 GB (not with the sanitizers, whose shadow memory needs more),
# so that a count that leaves the panels out fails its allocations here instead of filling the
# machine. And the bytes named at --batch 600 are those at --batch 300 and 300 images' pixels (not
# 300 panels, 320 GB, more).
"$VITMAE_TOOLS/hostile" ckpt "$dir/tiny.safetensors" 16 4 || { echo "hostile ckpt failed"; exit 1; }
"$VITMAE_TOOLS/synth" "$dir/many" --count 600 --size 8 --seed 2 >/dev/null || { echo "synth failed"; exit 1; }
in_8g() { if [ "${VITMAE_SANITIZED:-0}" = 1 ]; then "$@"; else (ulimit -v 8000000 && exec "$@"); fi; }
have=$(sed -n 's/.* \([0-9.]*\) GiB$/\1/p' "$dir/err.recon")
panel=$((3 * 5 * 8192 * 8704))   # less than one panel at --display 8192 (viz/panel.h: wider, taller)
many=$(awk -v h="${have:-0}" -v p=$panel 'BEGIN { printf "%d", h * 1073741824 * 0.9 / p + 2 }')
if [ -z "$have" ] || [ "$many" -gt 256 ]; then
  echo "note: reconstruct's panels at --display 8192 not checked (this machine's memory takes ${many:-?} of them)"
else
  in_8g "$VITMAE" reconstruct --ckpt "$dir/tiny.safetensors" --display 8192 --batch 600 --threads $many --out "$dir/rp" "$dir/many" \
    > /dev/null 2> "$dir/err"; rc=$?
  drop_threads_warning "$dir/err"   # --threads $many above this machine's CPUs is said first
  need600=$(sed -n 's/.* needs \([0-9]*\) bytes.*/\1/p' "$dir/err")
  t "reconstruct --display 8192 --batch 600 --threads $many: the panels counted, exit 2 ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && bytes_line reconstruct && grep -q "(use a smaller --batch)$" "$dir/err" && [ ! -e "$dir/rp" ]'
  in_8g "$VITMAE" reconstruct --ckpt "$dir/tiny.safetensors" --display 8192 --batch 300 --threads $many --out "$dir/rp" "$dir/many" \
    > /dev/null 2> "$dir/err"; rc=$?
  need300=$(sed -n 's/.* needs \([0-9]*\) bytes.*/\1/p' "$dir/err")
  t "reconstruct --batch 600 needs no more panels than --batch 300 ($need600 and $need300 bytes)" \
    '[ $rc -eq 2 ] && [ -n "$need600" ] && [ -n "$need300" ] && [ $((need600 - need300)) -gt 0 ] && [ $((need600 - need300)) -lt $panel ]'
fi
# ... and holds no more than it counts: 24 panels at --display 1024 (17 MB each) at --batch 24 under
# ulimit -v 300 MB, at one thread, one panel at a time (it stopped out of memory at the first image).
if [ "${VITMAE_SANITIZED:-0}" != 1 ]; then
  mkdir "$dir/m24" && i=0 && for f in $(find "$dir/many" -name '*.png' | sort | head -n 24); do i=$((i + 1)); cp "$f" "$dir/m24/$i.png"; done
  (ulimit -v 300000 && exec "$VITMAE" reconstruct --ckpt "$dir/tiny.safetensors" --display 1024 --batch 24 --threads 1 \
    --out "$dir/r24" "$dir/m24") > /dev/null 2> "$dir/err"; rc=$?
  t "reconstruct of 24 panels at --batch 24 in 300 MB: runs, one panel held at a time ($rc: $(head -c 300 "$dir/err"))" \
    '[ $rc -eq 0 ] && [ ! -s "$dir/err" ] && [ "$(ls "$dir/r24" | grep -c "\.recon\.png$")" -eq 24 ]'
fi

"$VITMAE" eval --ckpt "$dir/big.safetensors" --data "$dir/data" > /dev/null 2> "$dir/err"; rc=$?
t "eval: activations cannot fit: exit 1 ($rc)" '[ $rc -eq 1 ]'
t "eval: names the bytes ($(cat "$dir/err"))" 'bytes_line eval'
# ... in its one line also when the folder holds a file the scan skips (its line came first).
cp -r "$dir/data" "$dir/dataj" && printf 'not an image' > "$dir/dataj/junk.png"
"$VITMAE" eval --ckpt "$dir/big.safetensors" --data "$dir/dataj" > /dev/null 2> "$dir/err"; rc=$?
t "eval, a skipped file: exit 1, one line ($rc: $(head -n 1 "$dir/err" | head -c 100))" '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && bytes_line eval'
"$VITMAE" attention --ckpt "$dir/big.safetensors" --out "$dir/a" "$dir/in.png" > /dev/null 2> "$dir/err"; rc=$?
t "attention: activations cannot fit: exit 1 ($rc)" '[ $rc -eq 1 ]'
t "attention: names the bytes ($(cat "$dir/err"))" 'bytes_line attention'
need_attn=$(sed -n 's/.* needs \([0-9]*\) bytes.*/\1/p' "$dir/err")
t "attention: nothing written" '[ ! -e "$dir/a" ]'
# attention keeps the maps it draws, not every layer's (docs/interface.md, attention's "Memory"): a
# checkpoint deep enough that every layer's maps (16,385 tokens at 1024 px, patch 8: 1.07 GB a layer)
# pass 90% of this machine's memory while one layer's fit. --raw writes every layer: refused, naming at
# least their bytes. --layer 0 runs block 0 alone and keeps one layer's maps: it runs (it was refused
# with the bytes of every layer, whatever --layer said).
mem=$(($(getconf _PHYS_PAGES) * $(getconf PAGE_SIZE)))
per=$((16385 * 16385 * 4))
deep=$((mem * 9 / 10 / per + 2))
if [ $deep -gt 256 ] || [ $((mem / per)) -lt 3 ]; then
  echo "note: attention's maps of the layers drawn not checked (this machine's memory takes $deep layers of 1.07 GB)"
else
  "$VITMAE_TOOLS/hostile" ckpt "$dir/deep.safetensors" 1024 8 $deep || { echo "hostile ckpt failed"; exit 1; }
  "$VITMAE" attention --ckpt "$dir/deep.safetensors" --raw --layer 0 --out "$dir/ad" "$dir/in.png" > /dev/null 2> "$dir/err"; rc=$?
  need=$(sed -n 's/.* needs \([0-9]*\) bytes.*/\1/p' "$dir/err")
  t "attention --raw of $deep layers of 1.07 GB: refused, naming their bytes ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 1 ] && bytes_line attention && [ "${need:-0}" -ge $((deep * per)) ] && [ ! -e "$dir/ad" ]'
  "$VITMAE" attention --ckpt "$dir/deep.safetensors" --layer 0 --out "$dir/ad" "$dir/in.png" > "$dir/out" 2> "$dir/err"; rc=$?
  t "attention --layer 0 of the same $deep layers: runs, one layer's maps kept ($rc: $(head -c 300 "$dir/err"))" \
    '[ $rc -eq 0 ] && [ ! -s "$dir/err" ] && [ -s "$dir/ad/in.attn.png" ] && [ -s "$dir/ad/in/layer00-mean.png" ]'
fi
"$VITMAE" embed --ckpt "$dir/big.safetensors" --out "$dir/e.npy" "$dir/in.png" > /dev/null 2> "$dir/err"; rc=$?
t "embed: activations cannot fit: exit 1 ($rc)" '[ $rc -eq 1 ]'
t "embed: names the bytes ($(cat "$dir/err"))" 'bytes_line embed'
t "embed: one image is checked at batch 1, not --batch's 64" 'grep -q "batch 1 at 2048x2048" "$dir/err"'
need_embed=$(sed -n 's/.* needs \([0-9]*\) bytes.*/\1/p' "$dir/err")
# attention and embed run the encoder alone (core/model.h mae_create_encoder): their estimates leave out
# the decoder's block, its attention maps of 65,537^2 floats (17 GB) among them, which reconstruct's
# model has (both counted them, a decoder none of their forwards reads).
dmaps=$((65537 * 65537 * 4))
t "attention and embed: the decoder's 17 GB of maps not counted ($need_attn, $need_embed bytes; reconstruct $need_recon)" \
  '[ $((${need_recon:-0} - ${need_attn:-0})) -ge $dmaps ] && [ $((${need_recon:-0} - ${need_embed:-0})) -ge $dmaps ]'
t "embed: nothing written" '[ ! -e "$dir/e.npy" ] && [ ! -e "$dir/e.txt" ]'
"$VITMAE" classify --ckpt "$dir/bigc.safetensors" "$dir/in.png" > "$dir/out" 2> "$dir/err"; rc=$?
t "classify: activations cannot fit: exit 1 ($rc)" '[ $rc -eq 1 ]'
t "classify: names the bytes ($(cat "$dir/err"))" 'bytes_line classify'
t "classify: nothing printed" '[ ! -s "$dir/out" ]'

"$VITMAE" bench --img 2048 --patch 8 --batch 4096 > /dev/null 2> "$dir/err"; rc=$?
t "bench: huge image and batch: exit 2 ($rc)" '[ $rc -eq 2 ]'
t "bench: names the bytes ($(cat "$dir/err"))" 'bytes_line bench'
t "bench: the line says --batch 4096 runs 1024 images at a time" 'grep -q "^vitmae: bench: batch 1024 at 2048x2048 needs .*: --batch 4096 runs 1024 images at a time$" "$dir/err"'
# finetune counts the batches its loader holds ahead (--prefetch): one batch of 1024x1024 images is a
# sixteenth of this machine's memory, so 1 + 64 of them cannot fit.
"$VITMAE_TOOLS/synth" "$dir/cls" --count 6 --size 16 --classes 2 --seed 1 >/dev/null || { echo "synth failed"; exit 1; }
mem=$(awk '/^MemTotal:/ { print $2 * 1024 }' /proc/meminfo)
fb=$(awk -v m="$mem" 'BEGIN { b = int(m / 16 / (1024 * 1024 * 3 * 4)); print b < 1 ? 1 : b }')
"$VITMAE" finetune --from-scratch --data "$dir/cls" --img 1024 --patch 64 --dim 32 --depth 1 --heads 1 --batch "$fb" \
  --prefetch 64 --steps 1 --out "$dir/f" > /dev/null 2> "$dir/err"; rc=$?
t "finetune: --prefetch 64 batches of $fb cannot fit: exit 2 ($rc)" '[ $rc -eq 2 ]'
t "finetune: names the bytes ($(cat "$dir/err"))" 'bytes_line finetune'
t "finetune: nothing written" '[ ! -e "$dir/f" ]'
t "finetune: no --groups named where none fits (the batches ahead are the batch's own pixels)" '! grep -q -- "--groups" "$dir/err"'
# Where more gradient groups would fit, finetune's line names the fewest that do by its own memory rule,
# as train's does. The model: 4097 tokens of a 64x64 grey image, 4 heads, at --groups 1 (2079 GiB for the
# 4096 images, about 0.55 GiB for one: a hint on any machine of 1 to 2000 GiB). Half of them is refused,
# naming the same again; the named G passes the memory check: under ulimit -v 0.6 GB the model's
# allocation fails (exit 1) where a refusal would say "needs" (exit 2), and nothing runs. Under ulimit
# also the run of half of them, which a wrong rule would let allocate some GiB and run (not under the
# sanitizers, where ulimit -v cannot be used, nor needed: their build is the one that passes).
in_limit() { if [ "${VITMAE_SANITIZED:-0}" = 1 ]; then "$@"; else (ulimit -v 600000 && exec "$@"); fi; }
ft_big="--from-scratch --data $dir/cls --img 64 --patch 1 --channels 1 --dim 16 --heads 4 --depth 1 --batch 4096 --steps 1"
"$VITMAE" finetune $ft_big --groups 1 --out "$dir/f" > /dev/null 2> "$dir/err"; rc=$?
way=$(sed -n 's/^vitmae: finetune: the model needs [0-9]* bytes .* for batch 4096 at 64x64; .* GiB; --groups \([0-9]*\) (\([0-9]*\) images\{0,1\} at a time) fits$/\1 \2/p' "$dir/err")
g=${way% *}; per=${way#* }
t "finetune --groups 1: the fewest --groups that fit named ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ -n "$way" ] && [ $((g * per)) -eq 4096 ] && [ "$g" -gt 1 ] && [ $((g & (g - 1))) -eq 0 ] && [ ! -e "$dir/f" ]'
if [ -n "$way" ] && [ "$g" -ge 4 ]; then
  in_limit "$VITMAE" finetune $ft_big --groups $((g / 2)) --out "$dir/f" > /dev/null 2> "$dir/err"; rc=$?
  t "finetune --groups $((g / 2)): refused, --groups $g named again ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && grep -q -- "; --groups $g ($per images\{0,1\} at a time) fits$" "$dir/err" && [ ! -e "$dir/f" ]'
fi
if [ -n "$way" ] && [ "${VITMAE_SANITIZED:-0}" != 1 ]; then
  in_limit "$VITMAE" finetune $ft_big --groups "$g" --out "$dir/f" > /dev/null 2> "$dir/err"; rc=$?
  t "finetune --groups $g: passes the memory check, then out of memory under ulimit -v ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 1 ] && grep -q "^vitmae: finetune: out of memory" "$dir/err" && ! grep -q "needs" "$dir/err" && [ ! -e "$dir/f" ]'
fi
# bench's refusal names the way out too, by its own rule (bench_memory_check): 1600 tokens of an 80x80
# grey image at patch 2 take some 0.45 GiB an image, 450 GiB at the default 1024 at a time (a hint on
# any machine of 0.5 to 450 GiB). It said no --groups, which bench takes as train does.
b_big="--preset tiny --img 80 --patch 2 --channels 1 --batch 4096 --steps 1 --warmup 0"
"$VITMAE" bench $b_big > /dev/null 2> "$dir/err"; rc=$?
way=$(sed -n 's/^vitmae: bench: batch 1024 at 80x80 needs .*: --batch 4096 runs 1024 images at a time; --groups \([0-9]*\) (\([0-9]*\) images\{0,1\} at a time) fits$/\1 \2/p' "$dir/err")
g=${way% *}; per=${way#* }
t "bench: the fewest --groups that fit named ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 2 ] && [ -n "$way" ] && [ $((g * per)) -eq 4096 ] && [ "$g" -gt 4 ] && [ $((g & (g - 1))) -eq 0 ]'
if [ -n "$way" ] && [ "$g" -ge 16 ]; then
  "$VITMAE" bench $b_big --groups $((g / 2)) > /dev/null 2> "$dir/err"; rc=$?
  t "bench --groups $((g / 2)): refused, --groups $g named again ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && grep -q -- "; --groups $g ($per images\{0,1\} at a time) fits$" "$dir/err"'
fi
if [ -n "$way" ] && [ "${VITMAE_SANITIZED:-0}" != 1 ]; then
  in_limit "$VITMAE" bench $b_big --groups "$g" > /dev/null 2> "$dir/err"; rc=$?
  t "bench --groups $g: passes the memory check, then out of memory under ulimit -v ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 1 ] && grep -q "^vitmae: bench: out of memory" "$dir/err" && ! grep -q "needs" "$dir/err"'
fi
# probe's model holds the larger of its two sets, not --batch (64) images.
ncls=$(find "$dir/cls" -name '*.png' | wc -l)
"$VITMAE" probe --ckpt "$dir/big.safetensors" --train "$dir/cls" --test "$dir/cls" > /dev/null 2> "$dir/err"; rc=$?
t "probe: activations cannot fit: exit 1 ($rc)" '[ $rc -eq 1 ]'
t "probe: names the bytes at batch $ncls ($(cat "$dir/err"))" 'bytes_line probe && grep -q "batch $ncls at 2048x2048" "$dir/err"'

# Under a limit below the machine's memory (ulimit -v 1 GB: ViT-B's weights and gradients alone take
# 0.9 GB), the model's allocation fails: one line in the user's terms, exit 1. With threads as workers
# it said "for batch 4" (one thread's share) to a user who asked for --batch 8. ASan reserves terabytes
# of address space, so a sanitized build cannot start under ulimit -v: that check is skipped there.
if [ "${VITMAE_SANITIZED:-0}" = 1 ]; then
  echo "note: the ulimit -v check is skipped under the sanitizers (ASan cannot run under ulimit -v)"
else
  (ulimit -v 1000000 && exec "$VITMAE" train --data "$dir/data" --preset base --img 224 --patch 16 --batch 8 --threads 2 \
    --parallel groups --steps 1 --out "$dir/ulimit") > /dev/null 2> "$dir/err"; rc=$?
  t "ulimit -v: exit 1, one line in terms of --batch 8 ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -Eq "^vitmae: train: out of memory \([0-9]+ MB of activations for [0-9]+ images at a time\): --batch 8 runs as 2 threads of [0-9]+ images at a time, each with activations of its own$" "$dir/err"'
fi

# A memory cgroup's limit (a container's `docker run --memory`, a systemd unit's MemoryMax) is the
# memory there is: a model that fits the machine but not the cgroup is refused, naming the cgroup's
# 0.50 GiB, and writes nothing (Linux's out-of-memory killer ended it, exit 137, the run folder half
# made). A small run in the same cgroup runs. Needs a cgroup this test may make (root, v1's memory
# hierarchy or v2 with the memory controller): otherwise said and skipped.
cgroup_make memory
if [ -n "$cg" ]; then
  in_cg "$VITMAE" train --data "$dir/data" --img 16 --patch 4 --dim 512 --depth 20 --heads 8 --batch 1 --steps 1 \
    --out "$dir/cg" > /dev/null 2> "$dir/err"; rc=$?
  t "a memory cgroup of 0.50 GiB: a 1.43 GiB model refused (0.96 GiB before its packed copies were counted), exit 2, one line naming it ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: train: batch 1 at 16x16 needs [0-9]* bytes (1.43 GiB, of which .*); its memory cgroup allows 0.50 GiB$" "$dir/err" && [ ! -e "$dir/cg" ]'
  in_cg "$VITMAE" train --data "$dir/data" --img 16 --patch 4 --batch 2 --steps 1 --threads 1 --out "$dir/cgsmall" \
    > /dev/null 2> "$dir/err"; rc=$?
  t "a memory cgroup of 0.50 GiB: a small run runs ($rc: $(head -c 300 "$dir/err"))" '[ $rc -eq 0 ] && [ -s "$dir/cgsmall/checkpoint.safetensors" ]'
  # bench counts the reduction's tree as train does: --groups 4096 sums the step in 12 levels of 25M
  # gradients (1.2 GB) that its check left out, and the 0.49 GiB it counted passed; the cgroup's
  # out-of-memory killer then ended it (exit 137).
  in_cg "$VITMAE" bench --preset small --img 32 --patch 16 --batch 4096 --groups 4096 --steps 1 --warmup 0 --threads 1 \
    > /dev/null 2> "$dir/err"; rc=$?
  t "bench --groups 4096 in a memory cgroup of 0.50 GiB: its tree counted, refused, exit 2 ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: bench: batch 1 at 32x32 needs [0-9]* bytes (1.[0-9]* GiB, of which .*); its memory cgroup allows 0.50 GiB: --batch 4096 runs 1 image at a time$" "$dir/err"'
  # finetune's way out in the same cgroup: a run of 16 images of 1025 tokens at --groups 1 (0.53 GiB)
  # made outside it. A new run is told --groups 2; its --resume, whose groups are fixed, is told nothing more.
  ft_cg="--from-scratch --data $dir/cls --img 32 --patch 1 --channels 1 --dim 16 --heads 4 --depth 1 --batch 16 --groups 1 --steps 1"
  "$VITMAE" finetune $ft_cg --out "$dir/fcg" > /dev/null 2> "$dir/err"; rc=$?
  t "finetune of 0.53 GiB outside the cgroup: runs ($rc: $(head -c 300 "$dir/err"))" '[ $rc -eq 0 ] && [ -s "$dir/fcg/checkpoint.safetensors" ]'
  in_cg "$VITMAE" finetune $ft_cg --out "$dir/fcg2" > /dev/null 2> "$dir/err"; rc=$?
  t "finetune in the cgroup: refused, --groups 2 named ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && grep -q "^vitmae: finetune: the model needs [0-9]* bytes (0.53 GiB) for batch 16 at 32x32; its memory cgroup allows 0.50 GiB; --groups 2 (8 images at a time) fits$" "$dir/err" && [ ! -e "$dir/fcg2" ]'
  in_cg "$VITMAE" finetune --resume "$dir/fcg" > /dev/null 2> "$dir/err"; rc=$?
  t "finetune --resume in the cgroup: refused, no --groups named ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 2 ] && grep -q "^vitmae: finetune: the model needs [0-9]* bytes (0.53 GiB) for batch 16 at 32x32; its memory cgroup allows 0.50 GiB$" "$dir/err"'
  # The in-memory cache gives way to the run (docs/data.md, "Cache, store and prefetch"): a model of
  # about 0.35 GiB leaves some 35 MB of the cgroup's 0.45 GiB beside its decoders and libraries, less
  # than the 72 MB of working images of 96 photos of 512 x 512 at --img 256; --cache-mb 2048 is lowered
  # to what is left, said on one line, and the store (--store auto) keeps what the cache cannot. The
  # cache held all 72 MB before (and a run whose cache outgrew the memory was killed, exit 137).
  # Outside the cgroup the same run keeps them all in memory and says nothing. Not with the sanitizers,
  # whose own memory takes the cgroup's room (the run is killed there, exit 137).
  if [ "${VITMAE_SANITIZED:-0}" != 1 ]; then
    "$VITMAE_TOOLS/synth" "$dir/photos" --count 96 --size 512 --classes 2 --seed 1 > /dev/null
    heavy="--data $dir/photos --img 256 --patch 32 --dim 480 --heads 8 --depth 4 --dec-dim 64 --dec-heads 1 --dec-depth 1 --batch 4 --groups 1 --threads 1 --steps 24 --val-frac 0"
    XDG_CACHE_HOME="$dir/xdg" in_cg "$VITMAE" train $heavy --out "$dir/cache" > "$dir/out" 2> "$dir/err"; rc=$?
    low=$(sed -n 's/^--cache-mb 2048 lowered to \([0-9]*\) MB: the working images (\([0-9]*\) MB) would not fit in memory beside the run, which needs [0-9.]* GiB and its decoders and libraries about [0-9.]* GiB more, of the [0-9.]* GiB it may take (90% of the 0.50 GiB its memory cgroup allows)$/\1 \2/p' "$dir/out")
    kept=$(sed -n 's/^working images: .* from the cache (\([0-9]*\) MB).*/\1/p' "$dir/out")
    t "train in a 0.50 GiB cgroup: --cache-mb lowered to what the run leaves, said, and kept to (${low:-none}, kept ${kept:-none}; $rc: $(head -c 300 "$dir/err"))" \
      '[ $rc -eq 0 ] && [ -s "$dir/cache/checkpoint.safetensors" ] && [ -n "$low" ] && [ "${low% *}" -lt "${low#* }" ] && [ -n "$kept" ] && [ "$kept" -le "${low% *}" ]'
    t "... the store keeps what the lowered cache cannot ($(grep "store" "$dir/out" | head -c 300))" \
      'grep -q "^working images need [0-9]* MB, more than the memory cache'"'"'s ${low% *} MB: keeping them in the store $dir/xdg/vitmae/work$" "$dir/out"'
    "$VITMAE" train $heavy --store none --out "$dir/cache2" > "$dir/out" 2> "$dir/err"; rc=$?
    t "... outside the cgroup: the whole cache, nothing said ($rc: $(grep -E "lowered|from the cache" "$dir/out"))" \
      '[ $rc -eq 0 ] && ! grep -q "lowered" "$dir/out" && grep -q "from the cache (72 MB)" "$dir/out"'
  fi
  cgroup_remove
else
  echo "note: memory cgroup refusal not checked (no memory cgroup can be made here)"
fi
[ $fail -eq 0 ] && echo "cli memory ok"
exit $fail
