#!/bin/sh
# vitmae train on generated shapes: learning, files, metrics, thread-count and resume
# determinism, SIGINT, NaN stop, and usage errors. A small model keeps it fast (also under ASan).
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch dir
cd "$dir" || exit 1   # a command that wrongly writes to the working directory writes here
"$VITMAE_TOOLS/synth" "$dir/data" --count 192 --size 16 --seed 3 >/dev/null || { echo "synth failed"; exit 1; }
small="--data $dir/data --img 16 --patch 4 --dim 32 --depth 2 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 16 --lr 3e-3 --warmup-steps 5 --augment crop --val-frac 0.1"
steps=120; [ "${VITMAE_SANITIZED:-0}" = 1 ] && steps=60

# 1. A run learns, and writes what docs/interface.md section 5 lists.
"$VITMAE" train $small --steps $steps --eval-every 30 --threads 2 --out "$dir/run" > "$dir/log" 2>&1; rc=$?
t "train exits 0" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || cat "$dir/log"
for f in checkpoint.safetensors config.json metrics.csv curves.png samples/step-$steps.png samples/step-30.png; do
  t "writes $f" '[ -s "$dir/run/$f" ]'
done
# The model is the preset's with the shape flags given over it (docs/interface.md, section 3): each of
# the six sizes $small sets differs from tiny's (192, 6, 3; decoder 128, 2, 4) and is the checkpoint's.
shape=$("$VITMAE" info --json "$dir/run/checkpoint.safetensors" 2>&1 | /usr/bin/python3 -c 'import json, sys
c = json.load(sys.stdin)["config"]
print(" ".join(str(c[k]) for k in ("embed_dim", "depth", "num_heads", "decoder_embed_dim", "decoder_depth", "decoder_num_heads")))' 2>&1)
t "--dim 32 --depth 2 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 over the tiny preset: the checkpoint's sizes ($shape)" \
  '[ "$shape" = "32 2 2 32 1 2" ]'
t "metrics header" '[ "$(head -n 1 "$dir/run/metrics.csv")" = "step,epoch,lr,loss,val_loss,val_psnr,img_per_s,elapsed_s" ]'
# The sample sheet has a title line, as reconstruct's panels have (it had captions only): its first
# line runs across the gap between the first two panels (128 px each at --img 16: columns 128..131),
# where captions, wrapped to their panel, never reach.
gap=$(ink "$dir/run/samples/step-30.png" 128 132 0 12 "$dir/sheet.npy")
t "samples/step-30.png: a title line over the panels (spread $gap in the first gap)" 'awk -v s="$gap" "BEGIN { exit !(s > 0.3) }"'
evals=$(awk -F, 'NR > 1 && $5 != "" { n++ } END { print n + 0 }' "$dir/run/metrics.csv")
t "a metrics row per evaluation (step 0 + every 30 steps: $evals)" '[ "$evals" -eq $((steps / 30 + 1)) ]'
first=$(awk -F, 'NR > 1 && $5 != "" { print $5; exit }' "$dir/run/metrics.csv")
last=$(awk -F, 'NR > 1 && $5 != "" { v = $5 } END { print v }' "$dir/run/metrics.csv")
t "val loss falls below 60% of its first value ($first -> $last)" 'awk -v a="$first" -v b="$last" "BEGIN { exit !(b < 0.6 * a) }"'
# Without validation images (--val-frac 0) the step-0 row is still written, holding the lr the first step
# uses and elapsed 0 only (docs/interface.md, "vitmae train": where the lr curve starts), then a row per step.
"$VITMAE" train --data "$dir/data" --img 16 --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 \
  --batch 8 --steps 2 --log-every 1 --val-frac 0 --threads 1 --out "$dir/noval" > /dev/null 2>&1; rc=$?
t "--val-frac 0: the step-0 row holds only the lr and elapsed 0 ($(sed -n 2p "$dir/noval/metrics.csv"))" \
  '[ $rc -eq 0 ] && sed -n 2p "$dir/noval/metrics.csv" | grep -Eq "^0,0,[0-9.e-]+,,,,,0\.00$" &&
   [ "$(cut -d, -f1 "$dir/noval/metrics.csv" | tr "\n" " ")" = "step 0 1 2 " ]'
# metrics.csv's losses read back exactly: a row of one step (--log-every 1) holds that step's float32
# loss, which Python's csv + float() get back bit for bit ("%.6f" wrote 0.637567 for 0.63756698...).
"$VITMAE" train $small --steps 3 --log-every 1 --eval-every 3 --threads 2 --out "$dir/lg" > /dev/null 2>&1; rc=$?
t "metrics.csv: each step's loss read back is a float32, exactly ($rc: $(cut -d, -f4 "$dir/lg/metrics.csv" | tr "\n" " "))" '[ $rc -eq 0 ] && python3 - "$dir/lg/metrics.csv" <<PY
import csv, struct, sys
rows = [r for r in csv.DictReader(open(sys.argv[1], newline="")) if r["loss"]]
assert len(rows) == 3, rows
for r in rows:
    v = float(r["loss"]); assert struct.unpack("f", struct.pack("f", v))[0] == v and repr(v) in (r["loss"], r["loss"] + ".0"), r
PY'
# config.json and the checkpoint's train_state hold the float settings as the floats the flags gave:
# json.load of them equals the number typed (--lr 3e-3 read 0.0030000000260770321, --wd 0.05
# 0.05000000074505806: the float widened to a double and printed whole).
t "config.json: --lr, --wd, --val-frac, --mask-ratio read back as typed" 'python3 - "$dir/lg/config.json" <<PY
import json, sys
t = json.load(open(sys.argv[1]))["train"]
assert (t["lr"], t["weight_decay"], t["val_frac"], t["mask_ratio"], t["min_lr"]) == (0.003, 0.05, 0.1, 0.75, 0), t
PY'
# The lines naming the run folder write its control characters out ("run folder", "done: ... checkpoint"):
# a newline in --out split them.
"$VITMAE" train $small --steps 1 --threads 2 --out "$dir/$(printf 'r\nf')" > "$dir/nl.out" 2>&1; rc=$?
t "a run folder with a newline: written out in every line that names it ($rc)" \
  '[ $rc -eq 0 ] && [ "$(grep -cF "r\\nf" "$dir/nl.out")" -ge 2 ] && ! grep -q "^f" "$dir/nl.out"'
t "a one-step run: '1 step of batch'" 'grep -q "^  1 step of batch " "$dir/nl.out"'
# An image whose file name holds a newline and a terminal escape (POSIX allows both), skipped as
# broken: its one line on stderr names it in full with both written out, never a second line
# (--warmup-steps 0: $small's 5 would add the warning of a 1-step run's warm-up).
mkdir -p "$dir/nld"
cp "$dir"/data/*/0000*.png "$dir/nld/"   # synth numbers images across its classes: 10 names
printf 'not a png' > "$dir/nld/$(printf 'bad\n\033[31mx').png"
"$VITMAE" train $small --data "$dir/nld" --val-frac 0 --batch 2 --steps 1 --warmup-steps 0 --threads 2 --out "$dir/nlrun" > /dev/null 2> "$dir/nld.err"; rc=$?
t "an image named with a newline, skipped: one line on stderr, written out ($rc: $(head -c 300 "$dir/nld.err"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/nld.err")" -eq 1 ] && ! grep -q "$(printf "\033")" "$dir/nld.err" &&
   grep -qxF "vitmae: skipped $dir/nld/bad\\n\\x1b[31mx.png: not a PNG, JPEG or WebP file" "$dir/nld.err"'
t "a one-step run ends 'done: 1 step in', not '1 steps' ($(grep "^done" "$dir/nl.out"))" 'grep -q "^done: 1 step in " "$dir/nl.out"'
# A batch larger than the training images trains, and says so once (docs/interface.md, section 3: a
# step takes each image batch / images times; it said nothing); the start line names the sizes the
# flags gave over the preset (it said "model tiny" of a model of 16 wide and 1 block); a 1-step run
# has no warm-up, as --help says.
mkdir -p "$dir/few"
cp "$dir"/data/*/0000*.png "$dir/few/"   # 10 images
fewm="--data $dir/few --img 16 --patch 4 --val-frac 0 --steps 1 --threads 1"
"$VITMAE" train $fewm --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 16 --out "$dir/fewa" > "$dir/fewa.out" 2> "$dir/fewa.err"; rc=$?
t "--batch 16 of 10 images: exit 0, one warning ($rc: $(cat "$dir/fewa.err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$dir/fewa.err")" = "vitmae: warning: --batch 16 is more than the 10 training images: a step takes each image 1.6 times on average" ]'
t "the start line: the sizes given over the preset ($(grep -o "; model .*parameters" "$dir/fewa.out"))" \
  'grep -qF "; model tiny (--dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2) 16x16x3 patch 4, " "$dir/fewa.out"'
t "a 1-step run: no warm-up, as --help says" \
  'grep -q "^  1 step of batch 16, lr [^ ]* (warm-up 0)" "$dir/fewa.out" && "$VITMAE" train --help | grep -q "^  --warmup-steps N .*none in a 1-step run"'
"$VITMAE" train $fewm --dim 24 --depth 6 --batch 10 --out "$dir/fewb" > "$dir/fewb.out" 2> "$dir/fewb.err"; rc=$?
t "--batch 10 of 10 images: no warning ($rc: $(cat "$dir/fewb.err")); only --dim named, depth 6 is the preset's" \
  '[ $rc -eq 0 ] && [ ! -s "$dir/fewb.err" ] && grep -qF "; model tiny (--dim 24) 16x16x3 patch 4, " "$dir/fewb.out"'
# A gradient group of one image (--batch 4, 4 groups) is "of 1 image", not "of 1 images".
"$VITMAE" train $small --batch 4 --steps 1 --threads 1 --mask-ratio 0.875 --out "$dir/one" > "$dir/one.out" 2>&1; rc=$?
t "groups of one image: '4 gradient groups of 1 image (' ($rc: $(grep "gradient groups" "$dir/one.out"))" \
  '[ $rc -eq 0 ] && grep -q "^  4 gradient groups of 1 image (" "$dir/one.out"'
# The start line gives each channel's pixel statistics (of RGB images it showed the red channel's
# alone, "pixel mean/std 0.4723/0.2531", as if they were the images'), as config.json holds them.
want=$(python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["model"]
f = lambda v: "(" + ", ".join("%.4f" % x for x in v) + ")"
print(f(m["pixel_mean"]) + "/" + f(m["pixel_std"]))' "$dir/one/config.json")
t "the start line: pixel mean/std of every channel, $want ($(grep -o "pixel mean/std [^,]*, [^,]*, [^,]*, [^ ]*" "$dir/one.out"))" \
  'grep -qF "pixel mean/std $want, " "$dir/one.out"'
# ... and the mask ratio as typed ("%.2f" showed --mask-ratio 0.875 as "mask 0.88").
t "the start line: --mask-ratio 0.875 shown as typed ($(grep -o "mask [0-9.]*," "$dir/one.out"))" 'grep -q "^  1 step of batch 4, .*, mask 0\.875, " "$dir/one.out"'
# ... and lr in the log lines' form, %.3e ("%.3g" wrote "lr 0.000188" in one run, "lr 9.38e-05" in another).
t "the start line: lr as the log lines write it ($(grep -o ", lr [^ ]* (warm-up" "$dir/one.out"))" \
  'grep -Eq "^  1 step of batch 4, lr [0-9]\.[0-9]{3}e[-+][0-9]{2} \(warm-up " "$dir/one.out"'
# Its last line: 192 images of 16x16x3 in the cache are 0.14 MB, which "%.0f" wrote "(0 MB)" beside
# "N from the cache"; a figure above 0 now keeps two digits (as the store's "need 0.079 MB").
t "the last line: the cache's size is not 0 MB with images in it ($(grep "^working images" "$dir/one.out"))" \
  'grep -q "^working images: .*, [1-9][0-9]* from the cache (0\.1[0-9] MB); steps waited [0-9]*\.[0-9][0-9] [nmu]\{0,1\}s each" "$dir/one.out"'
t "info reads the checkpoint" '"$VITMAE" info "$dir/run/checkpoint.safetensors" --json | grep -q "\"step\""'
# Every evaluation scores the same validation images under the same masks, and the sample sheets show
# the same images and masks at every step, so that a user watches the reconstructions sharpen
# (docs/interface.md, "vitmae train": validation masks from (seed, i)); the run's last step is evaluated
# also where --eval-every does not divide it. Under --lr 0 the weights never change: every evaluation
# must give the same numbers, and every sheet must be the first one below its title line (the step).
"$VITMAE" train $small --lr 0 --steps 5 --eval-every 2 --sample-every 2 --threads 2 --out "$dir/lr0" > /dev/null 2>&1; rc=$?
vals=$(awk -F, 'NR > 1 && $5 != "" { printf "%s:%s/%s ", $1, $5, $6 }' "$dir/lr0/metrics.csv")
t "--lr 0: validated at steps 0, 2, 4 and the last, 5, to the same loss and PSNR ($rc: $vals)" \
  '[ $rc -eq 0 ] && [ "$(echo $vals | tr " " "\n" | cut -d: -f1 | tr "\n" " ")" = "0 2 4 5 " ] && [ "$(echo $vals | tr " " "\n" | cut -d: -f2 | sort -u | wc -l)" -eq 1 ]'
# Its sheets: every --sample-every steps and the last step's, none at step 0 (docs/interface.md, section 5).
t "--sample-every 2 of 5 steps: sheets at steps 2, 4 and 5, none at step 0 ($(ls "$dir/lr0/samples" | tr "\n" " "))" \
  '[ "$(ls "$dir/lr0/samples" | tr "\n" " ")" = "step-2.png step-4.png step-5.png " ]'
# last_row_differing A.png B.png: the last pixel row in which two pictures of one size differ (-1: none).
last_row_differing() { "$VITMAE_TOOLS/imgdump" "$1" "$dir/a.npy" && "$VITMAE_TOOLS/imgdump" "$2" "$dir/b.npy" && python3 -c '
import ast, struct, sys
def load(p):
    b = open(p, "rb").read(); n = struct.unpack("<H", b[8:10])[0]
    return ast.literal_eval(b[10:10 + n].decode())["shape"], b[10 + n:]
(sa, a), (sb, b) = load(sys.argv[1]), load(sys.argv[2])
row = sa[1] * sa[2] * 4
print("sizes %s and %s" % (sa, sb) if sa != sb else max([y for y in range(sa[0]) if a[y * row:(y + 1) * row] != b[y * row:(y + 1) * row]], default=-1))' "$dir/a.npy" "$dir/b.npy"; }
for s in 4 5; do
  last=$(last_row_differing "$dir/lr0/samples/step-2.png" "$dir/lr0/samples/step-$s.png")
  t "--lr 0: samples/step-$s.png is step-2.png but for the title line (last row differing: $last)" \
    '[ "$last" -ge 0 ] 2>/dev/null && [ "$last" -lt 16 ]'
done
rm -f "$dir/a.npy" "$dir/b.npy"
# Its checkpoints: every --eval-every steps (--ckpt-every's default) and at the end, the default --keep 2
# newest snapshots kept.
t "--lr 0: the snapshots of steps 4 and 5 kept of 2, 4, 5 ($(cd "$dir/lr0" && ls checkpoint-* | tr "\n" " "))" \
  '[ "$(cd "$dir/lr0" && ls checkpoint-* | tr "\n" " ")" = "checkpoint-4.safetensors checkpoint-5.safetensors " ]'

# --pixel-norm imagenet and none (docs/interface.md, section 2, "Pixel normalisation"): the run's
# statistics are ImageNet's (0.485, 0.456, 0.406) / (0.229, 0.224, 0.225) and 0 / 1, as config.json and
# the checkpoint hold them, not the ones measured on the images (the default, also checked to differ).
for pn in imagenet none dataset; do
  "$VITMAE" train $small --steps 1 --val-frac 0 --pixel-norm $pn --threads 2 --out "$dir/pn-$pn" > /dev/null 2>&1
done
stats() { python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["model"]; print(c["pixel_mean"], c["pixel_std"])' "$1/config.json" 2>&1; }
t "--pixel-norm imagenet: ImageNet's statistics ($(stats "$dir/pn-imagenet"))" '[ "$(stats "$dir/pn-imagenet")" = "[0.485, 0.456, 0.406] [0.229, 0.224, 0.225]" ]'
t "--pixel-norm none: 0 and 1 ($(stats "$dir/pn-none"))" '[ "$(stats "$dir/pn-none")" = "[0, 0, 0] [1, 1, 1]" ]'
t "--pixel-norm dataset: measured, neither of those ($(stats "$dir/pn-dataset"))" \
  'stats "$dir/pn-dataset" | grep -q "^\[0\.[0-9]*, 0\.[0-9]*, 0\.[0-9]*\] \[0\.[0-9]*, 0\.[0-9]*, 0\.[0-9]*\]$" && [ "$(stats "$dir/pn-dataset")" != "$(stats "$dir/pn-imagenet")" ]'
t "... and the checkpoint holds config.json's statistics" '"$VITMAE" info --json "$dir/pn-imagenet/checkpoint.safetensors" | tr -d " \t\n" | grep -q "\"pixel_std\":\[0.229,0.224,0.225\]"'
# A flag given twice takes its last value (docs/interface.md section 1), a number's and a path's alike.
"$VITMAE" train $small --steps 5 --steps 2 --seed 3 --seed=4 --val-frac 0 --threads 2 --out "$dir/twice-a" --out "$dir/twice-b" \
  > /dev/null 2>&1; rc=$?
t "a flag given twice: its last value (--steps 2, --seed 4, --out twice-b) ($rc)" \
  '[ $rc -eq 0 ] && [ ! -e "$dir/twice-a" ] && [ "$(tail -n 1 "$dir/twice-b/metrics.csv" | cut -d, -f1)" = 2 ] &&
   grep -q "\"seed\":[[:space:]]*4," "$dir/twice-b/config.json"'
# --pos fixed (docs/interface.md, section 3, "Position embeddings"): both tables stay MAE's 2D sin-cos
# table through training (CLS row zero; the first half of a row encodes x, the second y), recorded
# fixed; --pos learned (the default) trains them away from it.
for pos in fixed learned; do
  "$VITMAE" train $small --steps 3 --warmup-steps 1 --val-frac 0 --pos $pos --threads 2 --out "$dir/pos-$pos" > /dev/null 2>&1
done
sincos_off() { python3 - "$1" <<'PY'
import json, math, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
worst = 0.0
for name in ("pos_embed", "decoder_pos_embed"):
    (_, T, D), o = h[name]["shape"], h[name]["data_offsets"]
    got = struct.unpack("<%df" % (T * D), b[8 + n + o[0]:8 + n + o[1]])
    g, q = math.isqrt(T - 1), D // 4
    for t in range(T):
        for i in range(D):
            want = 0.0
            if t:
                y, x = divmod(t - 1, g); k = i % q; v = (x, y)[i // (2 * q)]
                a = v / 10000 ** (k / q); want = math.sin(a) if i % (2 * q) < q else math.cos(a)
            worst = max(worst, abs(got[t * D + i] - want))
print("%.3g" % worst)
PY
}
off_fixed=$(sincos_off "$dir/pos-fixed/checkpoint.safetensors" 2>&1); off_learned=$(sincos_off "$dir/pos-learned/checkpoint.safetensors" 2>&1)
t "--pos fixed: the sin-cos tables kept (off by $off_fixed), recorded fixed; learned: trained (off by $off_learned)" \
  'awk -v f="$off_fixed" -v l="$off_learned" "BEGIN { exit !(f + 0 < 1e-6 && l + 0 > 1e-4) }" &&
   "$VITMAE" info --json "$dir/pos-fixed/checkpoint.safetensors" | grep -q "\"pos_embed\":[[:space:]]*\"fixed\""'
# Grey images: --channels auto makes a 1-channel model (section 3), and imagenet's statistics are their
# grey equivalent, 0.299 R + 0.587 G + 0.114 B of each (section 2).
"$VITMAE_TOOLS/synth" "$dir/grey" --count 40 --size 16 --seed 3 --grey > /dev/null
"$VITMAE" train $small --data "$dir/grey" --steps 1 --val-frac 0 --pixel-norm imagenet --threads 2 --out "$dir/pn-grey" > /dev/null 2>&1
chans=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["model"]["in_chans"])' "$dir/pn-grey/config.json" 2>&1)
t "grey images, --channels auto: 1 channel, ImageNet's grey statistics ($chans: $(stats "$dir/pn-grey"))" \
  '[ "$chans" = 1 ] && [ "$(stats "$dir/pn-grey")" = "[0.458971] [0.225609]" ]'

# More threads than the CPUs the process may use (taskset: one) are said in the header, with why a step
# is slower (--threads 64 on 2 cores ran each step 30 times slower, unsaid); as many are not.
if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
  for n in 1 2; do
    taskset -c 0 "$VITMAE" train $small --steps 1 --warmup-steps 0 --val-frac 0 --threads $n --out "$dir/over$n" > "$dir/over$n.log" 2>&1
  done
  t "--threads 2 on 1 CPU: the header says so ($(sed -n 2p "$dir/over2.log" | grep -o "2 threads.*"))" \
    'sed -n 2p "$dir/over2.log" | grep -q ", 2 threads (more than the 1 CPU it may use: slower steps, the same results)$"'
  t "--threads 1 on 1 CPU: no such words" 'sed -n 2p "$dir/over1.log" | grep -q ", 1 thread$"'
  # The commands without a header say it in a warning line (embed --threads 4096 on 2 cores took 41.8 s
  # against 1.0 s at 8, unsaid), as many threads as CPUs nothing.
  ck="$dir/run/checkpoint.safetensors"; img=$(ls "$dir"/data/*/*.png | head -n 1)
  for c in "embed --out $dir/over.npy $img" "reconstruct --out $dir/over-r $img" "attention --out $dir/over-a $img" \
           "eval --data $dir/data" "probe --train $dir/data --test $dir/data"; do
    set -- $c; cmd=$1
    for n in 1 2; do
      rm -rf "$dir/over.npy" "$dir/over.txt" "$dir/over-r" "$dir/over-a"
      taskset -c 0 "$VITMAE" $c --ckpt "$ck" --threads $n > /dev/null 2> "$dir/over-$cmd$n.err"; eval rc$n=\$?
    done
    t "$cmd --threads 2 on 1 CPU: a warning, exit 0 ($rc2: $(cat "$dir/over-${cmd}2.err")); --threads 1: none ($rc1)" \
      '[ $rc2 -eq 0 ] && [ $rc1 -eq 0 ] && grep -qx "vitmae: warning: --threads 2 is more than the 1 CPU this process may use: slower, the same results" "$dir/over-${cmd}2.err" &&
       [ "$(grep -c "threads" "$dir/over-${cmd}2.err")" -eq 1 ] && ! grep -q "threads" "$dir/over-${cmd}1.err"'
  done
  taskset -c 0 "$VITMAE" data --threads 2 "$dir/data" > /dev/null 2> "$dir/over-data.err"; rc=$?
  t "data --threads 2 on 1 CPU: the warning ($rc: $(cat "$dir/over-data.err"))" \
    '[ $rc -eq 0 ] && grep -qx "vitmae: warning: --threads 2 is more than the 1 CPU this process may use: slower, the same results" "$dir/over-data.err"'
  # ... and so is a count from OMP_NUM_THREADS, naming it (data, eval and probe said nothing of it, where
  # --threads 2 warned and train's header said it); --threads given over it: the flag's count alone.
  for c in "data $dir/data" "eval --ckpt $ck --data $dir/data" "probe --ckpt $ck --train $dir/data --test $dir/data" \
           "embed --ckpt $ck --out $dir/over.npy $img"; do
    set -- $c; cmd=$1
    rm -f "$dir/over.npy" "$dir/over.txt"
    taskset -c 0 env OMP_NUM_THREADS=2 "$VITMAE" $c > /dev/null 2> "$dir/over-env-$cmd.err"; rc=$?
    t "$cmd with OMP_NUM_THREADS=2 on 1 CPU: a warning naming the variable, exit 0 ($rc: $(cat "$dir/over-env-$cmd.err"))" \
      '[ $rc -eq 0 ] && grep -qx "vitmae: warning: OMP_NUM_THREADS=2 asks for 2 threads, more than the 1 CPU this process may use: slower, the same results (--threads T overrides it)" "$dir/over-env-$cmd.err" &&
       [ "$(grep -c "threads" "$dir/over-env-$cmd.err")" -eq 1 ]'
  done
  taskset -c 0 env OMP_NUM_THREADS=2 "$VITMAE" data --threads 1 "$dir/data" > /dev/null 2> "$dir/over-data.err"; rc=$?
  t "data with OMP_NUM_THREADS=2 and --threads 1 on 1 CPU: no warning ($rc: $(cat "$dir/over-data.err"))" \
    '[ $rc -eq 0 ] && ! grep -q "threads" "$dir/over-data.err"'
else
  echo "note: the header's words for more threads than CPUs not checked (no taskset)"
fi
# 2. The same seed gives bitwise the same weights with 1 and 2 threads.
"$VITMAE" train $small --steps 20 --eval-every 10 --threads 1 --out "$dir/t1" > /dev/null 2>&1
"$VITMAE" train $small --steps 20 --eval-every 10 --threads 2 --out "$dir/t2" > /dev/null 2>&1
t "1 and 2 threads: bitwise equal weights" 'same_weights "$dir/t1/checkpoint.safetensors" "$dir/t2/checkpoint.safetensors"'
# 2 threads as a team in every kernel, and as workers each with its own 2 of the 4 gradient groups
# (--parallel, docs/interface.md): the same weights again.
"$VITMAE" train $small --steps 20 --eval-every 10 --threads 2 --parallel kernels --out "$dir/tk" > "$dir/tk.log" 2>&1
"$VITMAE" train $small --steps 20 --eval-every 10 --threads 2 --parallel groups --out "$dir/tg" > "$dir/tg.log" 2>&1
t "--parallel groups says so" 'grep -q "threads as workers: each of the 2 threads takes 2 of the gradient groups" "$dir/tg.log"'
t "--parallel kernels has no workers" '! grep -q "threads as workers" "$dir/tk.log"'
t "2 threads as a team and as workers: bitwise equal weights" 'same_weights "$dir/t1/checkpoint.safetensors" "$dir/tk/checkpoint.safetensors" && same_weights "$dir/t1/checkpoint.safetensors" "$dir/tg/checkpoint.safetensors"'
"$VITMAE" train $small --steps 2 --threads 3 --parallel groups --out "$dir/t3w" > "$dir/log" 2>&1; rc=$?
# ... and one whose --accum does not divide a thread's groups said "groups needs --accum 2 to divide each
# thread's 1 groups" (the other way round, and "1 groups").
"$VITMAE" train $small --steps 2 --threads 4 --parallel groups --accum 2 --out "$dir/t4w" > "$dir/log4" 2>&1; rc=$?
t "--parallel groups, --accum not dividing a thread's groups: exit 2, what to do ($(cat "$dir/log4"))" '[ $rc -eq 2 ] && [ "$(cat "$dir/log4")" = "vitmae: train --parallel: groups gives each of the 4 threads 1 gradient group per step, which --accum 2 micro-batches cannot share evenly; use --accum 1, fewer --threads or --parallel kernels" ]'
t "--parallel groups at 3 threads: exit 2, one line" '[ $rc -eq 2 ] && grep -q "^vitmae: train --parallel: groups needs 2 or more threads, a power of two dividing the 4 gradient groups" "$dir/log" && [ ! -e "$dir/t3w/checkpoint.safetensors" ]'
# A resume whose --accum does not divide its one fixed gradient group was told "use an --accum that divides
# 1" (and "this run's 1 gradient groups are fixed"): the one choice is named as such.
"$VITMAE" train $small --steps 1 --groups 1 --threads 1 --out "$dir/g1" > /dev/null 2>&1
"$VITMAE" train --resume "$dir/g1" --accum 2 --steps 2 > "$dir/g1.log" 2>&1; rc=$?
t "resume of a run of 1 gradient group with --accum 2: exit 2, --accum 1 named ($(cat "$dir/g1.log"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$dir/g1.log")" = "vitmae: train --accum: 2 micro-batches cannot share the 1 gradient group of a step evenly, and this run'"'"'s 1 gradient group is fixed since it started (--groups): use --accum 1" ]'
"$VITMAE" train $small --steps 20 --eval-every 10 --threads 2 --seed 7 --out "$dir/t3" > /dev/null 2>&1
t "another seed gives other weights" '! same_weights "$dir/t1/checkpoint.safetensors" "$dir/t3/checkpoint.safetensors"'

# 3. Resuming from a mid-run snapshot ends bitwise equal to the uninterrupted run.
"$VITMAE" train --resume "$dir/t2/checkpoint-10.safetensors" --out "$dir/resumed" --threads 2 > "$dir/log" 2>&1; rc=$?
t "resume exits 0" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || cat "$dir/log"
# A resume that trains says where it goes on from, once (only refusals were checked not to say it).
t "resume says where it goes on from, once ($(grep -c "^resuming " "$dir/log"): $(grep "^resuming " "$dir/log"))" \
  '[ "$(grep "^resuming " "$dir/log")" = "resuming $dir/t2/checkpoint-10.safetensors at step 10 of 20" ]'
t "resumed run equals the uninterrupted one" 'same_weights "$dir/t2/checkpoint.safetensors" "$dir/resumed/checkpoint.safetensors"'
# The ended run resumed again trains nothing, and says so with the way on (it said only where it
# resumed, then "done": `--resume` alone reads as "train more").
mkdir "$dir/ended" && cp -p "$dir/resumed/checkpoint.safetensors" "$dir/resumed/config.json" "$dir/resumed/metrics.csv" "$dir/ended/"
"$VITMAE" train --resume "$dir/resumed" --threads 2 > "$dir/again.log" 2>&1; rc=$?
# ... and leaves the run as it was: no file rewritten (the checkpoint's elapsed time grew, config.json
# and metrics.csv were written again), nothing decoded; into another --out no folder is made.
t "resuming an ended run rewrites none of its files" 'cmp -s "$dir/ended/checkpoint.safetensors" "$dir/resumed/checkpoint.safetensors" && [ ! "$dir/resumed/config.json" -nt "$dir/ended/config.json" ] && [ ! "$dir/resumed/metrics.csv" -nt "$dir/ended/metrics.csv" ] && ! grep -q "decoded" "$dir/again.log"'
"$VITMAE" train --resume "$dir/resumed/checkpoint.safetensors" --out "$dir/ended-copy" --threads 2 > "$dir/again2.log" 2>&1; rc2=$?
t "an ended run resumed into another --out: exit 0, nothing to train, no folder ($rc2: $(cat "$dir/again2.log"))" '[ $rc2 -eq 0 ] && grep -q "nothing to train" "$dir/again2.log" && [ ! -e "$dir/ended-copy" ]'
t "resuming an ended run: exit 0, nothing to train, --steps named ($rc: $(grep "last step" "$dir/again.log"))" \
  '[ $rc -eq 0 ] && grep -qx "the run has reached its last step, \([0-9]*\): nothing to train (--steps N, more than \1, extends it)" "$dir/again.log"'
# --eval-every given on a resume brings --ckpt-every and --sample-every not given along, as in a new run
# (the resumed run evaluated every 3 steps and saved and sampled on its old cadence).
cp -r "$dir/ended" "$dir/cadence"
"$VITMAE" train --resume "$dir/cadence" --steps 26 --eval-every 3 --keep 10 --threads 2 > /dev/null 2>&1; rc=$?
t "a resume given --eval-every 3 alone: snapshots and sheets at 21 and 24 ($rc: $(ls "$dir/cadence" "$dir/cadence/samples" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ -e "$dir/cadence/checkpoint-21.safetensors" ] && [ -e "$dir/cadence/checkpoint-24.safetensors" ] &&
   [ -e "$dir/cadence/samples/step-21.png" ] && [ -e "$dir/cadence/samples/step-24.png" ] && [ ! -e "$dir/cadence/checkpoint-22.safetensors" ]'
# Its command line again with --resume added, its own --steps 20 among the flags: the same (it was
# refused, `--steps/--epochs must give more steps than that`, where the run's own value is accepted).
"$VITMAE" train --resume "$dir/resumed" --steps 20 --threads 2 > "$dir/again3.log" 2>&1; rc=$?
t "an ended run resumed with its own --steps 20: exit 0, nothing to train ($rc: $(cat "$dir/again3.log"))" \
  '[ $rc -eq 0 ] && grep -qx "the run has reached its last step, 20: nothing to train (--steps N, more than 20, extends it)" "$dir/again3.log" &&
   cmp -s "$dir/ended/checkpoint.safetensors" "$dir/resumed/checkpoint.safetensors"'
# ... and given another --pixel-norm that needs no image (none, imagenet): refused as when the run goes
# on, exit 2 (it was taken, exit 0, "nothing to train", where --mask-ratio 0.5 was refused); `dataset`
# is not measured there (no image is decoded), so taken.
"$VITMAE" train --resume "$dir/resumed" --pixel-norm none > "$dir/again4.log" 2> "$dir/again4.err"; rc=$?
"$VITMAE" train --resume "$dir/resumed" --pixel-norm dataset > /dev/null 2>&1; rc2=$?
t "an ended run resumed with --pixel-norm none: exit 2, one line ($rc: $(cat "$dir/again4.err")), dataset taken ($rc2)" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/again4.err")" -eq 1 ] && [ ! -s "$dir/again4.log" ] &&
   grep -q "^vitmae: train --resume: --pixel-norm none cannot change when a run resumes (this run.s is mean " "$dir/again4.err" &&
   [ $rc2 -eq 0 ] && cmp -s "$dir/ended/checkpoint.safetensors" "$dir/resumed/checkpoint.safetensors"'

# The log line's loss is the metrics row's, the mean since the last row (it was the last step's alone,
# so the two disagreed at every row), also across a resume between rows.
"$VITMAE" train $small --steps 10 --log-every 5 --eval-every 100 --ckpt-every 3 --keep 5 --threads 2 --out "$dir/ml" > "$dir/ml.log" 2>&1
"$VITMAE" train --resume "$dir/ml/checkpoint-3.safetensors" --out "$dir/ml2" --threads 2 > "$dir/ml2.log" 2>&1; rc=$?
t "the log lines' losses are metrics.csv's ($(grep "^step [0-9]*/" "$dir/ml.log" | cut -d" " -f2,4 | tr "\n" " "))" \
  '[ $rc -eq 0 ] && python3 - "$dir/ml" "$dir/ml2" <<PY
import csv, re, sys
for run in sys.argv[1:]:
    logged = {int(m.group(1)): m.group(2) for m in re.finditer(r"^step (\d+)/\d+ loss (\S+) ", open(run + ".log").read(), re.M)}
    rows = {int(r["step"]): "%.4f" % float(r["loss"]) for r in csv.DictReader(open(run + "/metrics.csv")) if r["loss"]}
    assert set(logged) == {5, 10} and all(logged[s] == rows[s] for s in logged), (run, logged, rows)
PY'
# ... and the resumed run's rows are the uninterrupted run's to the last bit: config.json carries the
# loss sum since the last row, which cJSON printed with 15 digits when they read back within a rounding
# error (docs/interface.md, section 5, "Resumable").
t "a resumed run's metrics rows equal the uninterrupted run's, bit for bit ($(cut -d, -f1,4 "$dir/ml2/metrics.csv" | tr "\n" " "))" \
  '[ "$(awk -F, "NR > 1 && \$1 > 0" "$dir/ml/metrics.csv" | cut -d, -f1-6)" = "$(awk -F, "NR > 1" "$dir/ml2/metrics.csv" | cut -d, -f1-6)" ]'
# A train_state edited by hand is checked field by field (docs/interface.md, section 4). log_steps past
# the run's steps (500 at step 9) was taken: the next row divided the carried sum by 500 (0.0120 for
# 0.60); a negative or unpaired sum, an "images" that is no signature ("garbage" warned "400 usable
# now, 0 then"), a run_id, split pin or --val folder of another type, were taken or read as absent; grad_groups 3
# said "3 gradient groups: must be ...", --groups' wording of a flag not given. Each: exit 1, one
# line, nothing written.
for edit in log_steps=500 log_steps=DEL log_loss_sum=-1 'log_loss_sum="x"' 'images="garbage"' images=5 \
    'images="40:0123456789abcdef/"' grad_groups=3 run_id=7 split_held_out=1 val=5; do
  rm -rf "$dir/mled" "$dir/mled2" && mkdir "$dir/mled"
  python3 - "$dir/ml/checkpoint-9.safetensors" "$dir/mled/checkpoint.safetensors" "$edit" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
st = json.loads(h["__metadata__"]["train_state"]); k, v = sys.argv[3].split("=", 1)
assert k in st or k in ("split_held_out", "val"), k
if v == "DEL": del st[k]
else: st[k] = json.loads(v)
h["__metadata__"]["train_state"] = json.dumps(st); h["__metadata__"].pop("crc32", None)
hb = json.dumps(h).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
  "$VITMAE" train --resume "$dir/mled" --out "$dir/mled2" --threads 2 > /dev/null 2> "$dir/mled.err"; rc=$?
  key=${edit%%=*}
  case $edit in
    log_steps=500) want="'log_steps' out of range: 500 is past 'step' 9" ;;
    grad_groups=3) want="'grad_groups' out of range: 3 is not a power of two that divides 'batch' 16" ;;
    *) want="'$key' missing or out of range" ;;
  esac
  t "train_state edited ($edit): exit 1, one line naming '$key', nothing written ($rc: $(cat "$dir/mled.err"))" \
    '[ $rc -eq 1 ] && [ "$(cat "$dir/mled.err")" = "vitmae: $dir/mled/checkpoint.safetensors: cannot resume: train_state: $want" ] && [ ! -e "$dir/mled2" ]'
done
# log_steps is bounded by the steps, not by log_every: a resume given a lower --log-every between two
# rows carries more steps than its cadence (4 carried at step 9, --log-every 4: step 11's checkpoint
# holds 6), and that checkpoint resumes to the same row.
"$VITMAE" train --resume "$dir/ml/checkpoint-9.safetensors" --out "$dir/mlk" --steps 12 --log-every 4 --ckpt-every 1 \
  --threads 2 > /dev/null 2>&1
"$VITMAE" train --resume "$dir/mlk/checkpoint-11.safetensors" --out "$dir/mlk2" --threads 2 > /dev/null 2> "$dir/mlk2.err"; rc=$?
t "log_steps 6 at --log-every 4 (a lowered cadence): resumes, the same row at step 12 ($rc: $(cat "$dir/mlk2.err"))" \
  'python3 -c "import json, struct, sys; b = open(sys.argv[1], \"rb\").read(); n = struct.unpack(\"<Q\", b[:8])[0]; s = json.loads(json.loads(b[8:8 + n])[\"__metadata__\"][\"train_state\"]); sys.exit(0 if (s[\"log_every\"], s[\"log_steps\"]) == (4, 6) else 1)" "$dir/mlk/checkpoint-11.safetensors" &&
   [ $rc -eq 0 ] && grep -q "^12," "$dir/mlk2/metrics.csv" && [ "$(grep "^12," "$dir/mlk/metrics.csv" | cut -d, -f1-4)" = "$(grep "^12," "$dir/mlk2/metrics.csv" | cut -d, -f1-4)" ]'
# A FIFO at the name of a run's metrics.csv: a resume refuses it in one line (it waited for a writer
# forever, and SIGTERM could not end the wait).
cp -r "$dir/ml" "$dir/mlfifo" && rm "$dir/mlfifo/metrics.csv" && mkfifo "$dir/mlfifo/metrics.csv"
timeout -k 5 60 "$VITMAE" train --resume "$dir/mlfifo" --steps 12 --threads 2 > /dev/null 2> "$dir/mlfifo.err"; rc=$?
t "a FIFO at metrics.csv: a resume exits 1 at once, one line ($rc: $(tr "\n" "|" < "$dir/mlfifo.err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$dir/mlfifo.err")" = "vitmae: train: $dir/mlfifo/metrics.csv: not a regular file" ]'

# config.json's train state follows the checkpoints (it was the state when the session began: a
# finished 10-step run said "step": 0, "elapsed_s": 0; a resumed one the step it resumed at).
t "config.json: the train state of the last checkpoint ($(grep -h "\"step\"" "$dir/ml/config.json" "$dir/ml2/config.json" | tr -d "\t\n"))" \
  'python3 - "$dir/ml/config.json" "$dir/ml2/config.json" <<PY
import json, sys
for f in sys.argv[1:]:
    tr = json.load(open(f))["train"]
    assert tr["step"] == 10 and tr["total_steps"] == 10 and tr["elapsed_s"] > 0, (f, tr["step"], tr["elapsed_s"])
PY'

# The log line's elapsed is the run's, as metrics.csv's elapsed_s: a resumed run's counted from 0 again
# ("elapsed 0s" beside a row of 3600 s). The checkpoint is made to hold an hour of earlier sessions.
python3 - "$dir/ml/checkpoint-3.safetensors" "$dir/hour.safetensors" <<PY
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
st = json.loads(h["__metadata__"]["train_state"]); st["elapsed_s"] = 3600.0
h["__metadata__"]["train_state"] = json.dumps(st)
hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
"$VITMAE" train --resume "$dir/hour.safetensors" --out "$dir/hour" --threads 2 > "$dir/hour.log" 2>&1; rc=$?
t "a resumed run's log line gives the run's elapsed ($(grep "^step 5/" "$dir/hour.log"))" \
  '[ $rc -eq 0 ] && grep -q "^step 5/10 .* elapsed 1h00m ETA " "$dir/hour.log" && awk -F, "\$1 == 5 && \$8 >= 3600 { ok = 1 } END { exit !ok }" "$dir/hour/metrics.csv"'

# ... also when a resumed session ends before its first checkpoint (here a NaN at its first step): it
# wrote the session's settings at its start (--steps 20, --ckpt-every 4), so config.json said a 20-step
# run while the checkpoint, which a plain --resume goes on from, is the 10-step one.
cp -R "$dir/ml" "$dir/mlnan"
VITMAE_FAULT_NAN_STEP=11 "$VITMAE" train --resume "$dir/mlnan" --steps 20 --ckpt-every 4 --threads 2 > "$dir/mlnan.log" 2>&1; rc=$?
"$VITMAE" info --json "$dir/mlnan/checkpoint.safetensors" > "$dir/mlnan.info" 2>&1
t "a resumed session stopped before its first checkpoint: config.json's train state is the checkpoint's ($rc: $(grep -h "total_steps" "$dir/mlnan/config.json" | tr -d "\t\n"))" \
  '[ $rc -eq 1 ] && python3 - "$dir/mlnan/config.json" "$dir/mlnan.info" <<PY
import json, sys
tr, ck = json.load(open(sys.argv[1]))["train"], json.load(open(sys.argv[2]))["train_state"]
assert tr == ck and tr["total_steps"] == 10, [(k, tr.get(k), ck.get(k)) for k in set(tr) | set(ck) if tr.get(k) != ck.get(k)]
PY'

# A kill between a checkpoint's rename and config.json's rewrite leaves config.json one checkpoint
# behind (written here by hand: ml's config.json with checkpoint-3's state). info trusts the checkpoint
# and says config.json is stale, once, on stderr (it said nothing); a resume rewrites it from the
# checkpoint as it starts (here the session then stops at a NaN before its own first checkpoint).
cp -R "$dir/ml" "$dir/mlstale"
"$VITMAE" info --json "$dir/ml/checkpoint-3.safetensors" > "$dir/ml3.info" 2>&1
python3 - "$dir/mlstale/config.json" "$dir/ml3.info" <<PY
import json, sys
c = json.load(open(sys.argv[1])); c["train"] = json.load(open(sys.argv[2]))["train_state"]
open(sys.argv[1], "w").write(json.dumps(c, indent=1) + "\n")
PY
"$VITMAE" info "$dir/mlstale/checkpoint.safetensors" > "$dir/stale.out" 2> "$dir/stale.err"; rc=$?
t "a stale config.json: info says so in one warning, the checkpoint's step on stdout ($rc: $(cat "$dir/stale.err"))" \
  '[ $rc -eq 0 ] && [ $(wc -l < "$dir/stale.err") -eq 1 ] && grep -q "^    step  *10$" "$dir/stale.out" && [ "$(cat "$dir/stale.err")" = "vitmae: warning: $dir/mlstale/config.json describes step 3 of 10, not this checkpoint'"'"'s step 10 of 10 (the run stopped between writing the checkpoint and config.json, or a resume from an earlier snapshot stopped before its first checkpoint): the checkpoint is the run'"'"'s state; the run has reached its last step, so config.json stays as it is until train --resume $dir/mlstale --steps N extends it" ]'
"$VITMAE" info --json "$dir/mlstale/checkpoint.safetensors" > "$dir/stale.json" 2> "$dir/stale.err"; rc=$?
t "... and with --json: the same warning on stderr, the JSON whole" \
  '[ $rc -eq 0 ] && grep -q "describes step 3 of 10" "$dir/stale.err" && python3 -c "import json,sys; assert json.load(open(sys.argv[1]))[\"train_state\"][\"step\"] == 10" "$dir/stale.json"'
"$VITMAE" info "$dir/mlstale/checkpoint-9.safetensors" > /dev/null 2> "$dir/snap.err"; rc1=$?
"$VITMAE" info "$dir/ml/checkpoint.safetensors" > /dev/null 2> "$dir/fresh.err"; rc2=$?
t "no warning for a snapshot (an earlier state by design) nor a config.json that follows its checkpoint" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ ! -s "$dir/snap.err" ] && [ ! -s "$dir/fresh.err" ]'
VITMAE_FAULT_NAN_STEP=11 "$VITMAE" train --resume "$dir/mlstale" --steps 20 --threads 2 > "$dir/mlstale.log" 2>&1; rc=$?
"$VITMAE" info --json "$dir/mlstale/checkpoint.safetensors" > "$dir/mlstale.info" 2>&1
t "a resume rewrites a stale config.json from the checkpoint ($rc: $(grep -h "\"step\"" "$dir/mlstale/config.json" | tr -d "\t\n"))" \
  '[ $rc -eq 1 ] && python3 - "$dir/mlstale/config.json" "$dir/mlstale.info" <<PY
import json, sys
tr, ck = json.load(open(sys.argv[1]))["train"], json.load(open(sys.argv[2]))["train_state"]
assert tr == ck and tr["step"] == 10, [(k, tr.get(k), ck.get(k)) for k in set(tr) | set(ck) if tr.get(k) != ck.get(k)]
PY'

# 4. SIGINT saves a loadable checkpoint and exits 0; resuming it finishes the run.
"$VITMAE" train $small --steps 100000 --eval-every 100000 --log-every 1 --threads 1 --out "$dir/int" > "$dir/int.log" 2>&1 &
pid=$!
i=0; while [ $i -lt 300 ] && ! grep -q "^step 3/" "$dir/int.log" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -INT $pid; wait $pid; rc=$?
t "SIGINT exits 0" '[ $rc -eq 0 ]'
t "SIGINT leaves a loadable checkpoint" '"$VITMAE" info "$dir/int/checkpoint.safetensors" > /dev/null'
t "SIGINT says how to resume" 'grep -q "resume" "$dir/int.log"'
# A stop was said nothing of until its step ended (a ViT-B step can take minutes): it is said at once
# on stderr, and a second Ctrl-C stops the run at once (below).
t "SIGINT is said at once, once ($(grep -c "SIGINT" "$dir/int.log"))" \
  '[ "$(grep -c "SIGINT" "$dir/int.log")" -eq 1 ] && grep -q "^vitmae: SIGINT: finishing this step, then saving a checkpoint; Ctrl-C again stops at once without saving$" "$dir/int.log"'
# SIGHUP (its terminal closed) and SIGXCPU (a CPU-time limit's warning) killed a run without saving,
# and SIGQUIT (Ctrl-\) dumped core without saving (in a script's background job, where the shell
# ignores it, it did nothing): now they stop it as SIGINT does, and so does SIGTERM; under nohup
# (SIGHUP ignored) SIGHUP leaves the run going. A run still going 60 s after its signal is killed.
# env --default-signal: the runs see SIGHUP as a terminal's session does even when the suite itself
# runs under nohup (SIGHUP ignored from the start, which the run keeps, as under nohup below).
# SIGUSR2 (a batch system's warning) and SIGALRM (timeout -s ALRM) ended the run by their default
# (exit 140 and 142, no checkpoint) where the inference commands and docs/interface.md take them as stops.
for sig in HUP XCPU TERM QUIT USR2 ALRM; do
  env --default-signal=HUP "$VITMAE" train $small --steps 100000 --eval-every 100000 --log-every 1 --threads 1 --out "$dir/sig$sig" > "$dir/sig$sig.log" 2>&1 &
  pid=$!
  i=0; while [ $i -lt 300 ] && ! grep -q "^step 3/" "$dir/sig$sig.log" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  kill -$sig $pid
  i=0; while [ $i -lt 600 ] && [ -r /proc/$pid/stat ] && ! grep -q ") Z" /proc/$pid/stat; do sleep 0.1; i=$((i + 1)); done
  kill -KILL $pid 2>/dev/null; wait $pid; rc=$?
  t "SIG$sig: exit 0 ($rc), saved mid-run, says how to resume" \
    '[ $rc -eq 0 ] && grep -q "^interrupted at step" "$dir/sig$sig.log" && [ "$(saved_step "$dir/sig$sig/checkpoint.safetensors")" -gt 0 ]'
  said=$(grep -c "finishing this step" "$dir/sig$sig.log")
  # SIGHUP too, its stderr a file (a terminal's, gone, is not written): a log whose last line said
  # "interrupted" said by what for every signal but SIGHUP.
  t "SIG$sig: said at once, once ($said)" '[ "$said" -eq 1 ] && grep -q "^vitmae: SIG$sig: finishing this step, then saving a checkpoint$" "$dir/sig$sig.log"'
done
nohup "$VITMAE" train $small --steps 100000 --eval-every 100000 --log-every 1 --threads 1 --out "$dir/nohup" > "$dir/nohup.log" 2>&1 &
pid=$!
i=0; while [ $i -lt 300 ] && ! grep -q "^step 3/" "$dir/nohup.log" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -HUP $pid; sleep 1
t "under nohup, SIGHUP leaves the run going" 'kill -0 $pid 2>/dev/null && ! grep -q "^interrupted" "$dir/nohup.log"'
kill -TERM $pid; wait $pid; rc=$?
t "... and SIGTERM then stops it, exit 0 ($rc)" '[ $rc -eq 0 ] && grep -q "^interrupted at step" "$dir/nohup.log"'
# A second Ctrl-C stops the run at once, unsaved (held at the test gate VITMAE_FAULT_HOLD_AFTER_STOP,
# after the stopped step and before its save): exit 130 as a Ctrl-C's death, the line said, the last
# periodic checkpoint whole and resumable. It used to do nothing: a user whose run seemed stuck had only
# kill -9 left. A SIGTERM there instead (a script's, a scheduler's) changes nothing: the run saves.
twice() {   # twice NAME SIG: SIGINT, then at the gate SIG
  rm -f "$dir/$1.gate" "$dir/$1.gate.held"
  VITMAE_FAULT_HOLD_AFTER_STOP="$dir/$1.gate" "$VITMAE" train $small --steps 100000 --eval-every 100000 --ckpt-every 4 --log-every 1 --threads 1 --out "$dir/$1" > "$dir/$1.log" 2> "$dir/$1.err" &
  pid=$!
  i=0; while [ $i -lt 300 ] && ! grep -q "^step 9/" "$dir/$1.log" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  kill -INT $pid; wait_gate "$dir/$1.gate" $pid
  before=$(saved_step "$dir/$1/checkpoint.safetensors")
  # The Ctrl-C may land while a periodic checkpoint is written: that one is then the stop's, at the
  # stopped step (the last metrics row's), and nothing is left to save.
  in_save=0; [ "$before" = "$(tail -n 1 "$dir/$1/metrics.csv" | cut -d, -f1)" ] && in_save=1
  kill -$2 $pid; sleep 0.5; touch "$dir/$1.gate"
  i=0; while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  kill -KILL $pid 2>/dev/null; wait $pid; rc=$?
}
twice int2 INT
said="vitmae: SIGINT again: stopped at once without saving (the steps since the last checkpoint are lost)"
[ $in_save = 1 ] && said="vitmae: SIGINT again: stopped at once; the checkpoint was saved"
t "a second Ctrl-C: ended by SIGINT ($rc), said so, nothing saved after the stop (in a save: $in_save; $(tail -c 300 "$dir/int2.err"))" \
  '[ $rc -eq 130 ] && [ "$(tail -n 1 "$dir/int2.err")" = "$said" ] && ! grep -q "^interrupted" "$dir/int2.log" && [ "$(saved_step "$dir/int2/checkpoint.safetensors")" = "$before" ]'
# Two Ctrl-Cs at once land on two threads (a signal goes to any thread that does not block it): the
# second ended the process while the first's handler was still writing its line, and stderr held only
# "SIGINT again: ...". The first's line written 50 ms late (VITMAE_FAULT_SLOW_STOP_LINE), the second
# sent 10 ms after it: both lines, in order. The run has no checkpoint yet (its first is at step 10000):
# the second line says so (it said "the steps since the last checkpoint are lost").
VITMAE_FAULT_SLOW_STOP_LINE=50 "$VITMAE" train $small --steps 100000 --eval-every 100000 --log-every 1 --threads 2 --out "$dir/int2b" > "$dir/int2b.log" 2> "$dir/int2b.err" &
pid=$!
i=0; while [ $i -lt 300 ] && ! grep -q "^step 3/" "$dir/int2b.log" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -INT $pid; sleep 0.01; kill -INT $pid
i=0; while [ $i -lt 300 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -KILL $pid 2>/dev/null; wait $pid; rc=$?
t "two Ctrl-Cs at once: the first's line, then the second's, exit 130 ($rc: $(tr "\n" "|" < "$dir/int2b.err"))" \
  '[ $rc -eq 130 ] && [ "$(wc -l < "$dir/int2b.err")" -eq 2 ] &&
   [ "$(head -n 1 "$dir/int2b.err")" = "vitmae: SIGINT: finishing this step, then saving a checkpoint; Ctrl-C again stops at once without saving" ] &&
   [ "$(tail -n 1 "$dir/int2b.err")" = "vitmae: SIGINT again: stopped at once without saving (no checkpoint was saved yet: the steps run are lost)" ]'
rm -rf "$dir/int2b"
"$VITMAE" train --resume "$dir/int2" --steps $((before + 2)) > /dev/null 2>&1; rc=$?
t "... and its last checkpoint (step $before) resumes ($rc)" '[ $rc -eq 0 ] && [ "$(saved_step "$dir/int2/checkpoint.safetensors")" = $((before + 2)) ]'
# A second Ctrl-C once the stop's checkpoint is saved (held at the gate VITMAE_FAULT_HOLD_AFTER_SAVE,
# after the "interrupted" line, before curves.png is redrawn): it ends the run at once, and its line says
# the checkpoint was saved; it said "without saving (the steps since the last checkpoint are lost)".
rm -f "$dir/int3.gate" "$dir/int3.gate.held"
VITMAE_FAULT_HOLD_AFTER_SAVE="$dir/int3.gate" "$VITMAE" train $small --steps 100000 --eval-every 100000 --ckpt-every 4 --log-every 1 --threads 1 --out "$dir/int3" > "$dir/int3.log" 2> "$dir/int3.err" &
pid=$!
i=0; while [ $i -lt 300 ] && ! grep -q "^step 9/" "$dir/int3.log" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -INT $pid; wait_gate "$dir/int3.gate" $pid
stopped=$(saved_step "$dir/int3/checkpoint.safetensors")   # the stop's (the periodic one before: step 8)
kill -INT $pid; sleep 0.5; touch "$dir/int3.gate"
i=0; while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -KILL $pid 2>/dev/null; wait $pid; rc=$?
t "a second Ctrl-C once saved: ended by SIGINT ($rc), said the checkpoint was saved, at the stopped step ${stopped:-none} ($(tail -c 200 "$dir/int3.err"))" \
  '[ $rc -eq 130 ] && [ "$(tail -n 1 "$dir/int3.err")" = "vitmae: SIGINT again: stopped at once; the checkpoint was saved" ] && [ "${stopped:-0}" -ge 9 ] && [ "$(saved_step "$dir/int3/checkpoint.safetensors")" = "$stopped" ]'
# ... and one as checkpoint.safetensors has just been published, before the save returns (held at
# VITMAE_FAULT_HOLD_AFTER_PUBLISH: the old snapshots still to be pruned, or, at --keep 0, the file saved
# at its name): the run's first checkpoint, the stop's, is in the folder, and the line said "no
# checkpoint was saved yet: the steps run are lost".
for keep in 2 0; do
  # The log of the round before goes first: its "step 3/" sent the next round's first Ctrl-C before the
  # run had its handler (a background job's SIGINT is ignored until then), and the run never stopped.
  rm -f "$dir/int5.gate" "$dir/int5.gate.held" "$dir/int5.log" "$dir/int5.err"
  VITMAE_FAULT_HOLD_AFTER_PUBLISH="$dir/int5.gate" "$VITMAE" train $small --steps 100000 --eval-every 100000 --keep $keep --log-every 1 --threads 1 --out "$dir/int5" > "$dir/int5.log" 2> "$dir/int5.err" &
  pid=$!
  i=0; while [ $i -lt 300 ] && ! grep -q "^step 3/" "$dir/int5.log" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  kill -INT $pid; wait_gate "$dir/int5.gate" $pid
  kill -INT $pid; sleep 0.5; touch "$dir/int5.gate"
  i=0; while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  kill -KILL $pid 2>/dev/null; wait $pid; rc=$?
  stopped=$(saved_step "$dir/int5/checkpoint.safetensors")
  t "a second Ctrl-C as the stop's checkpoint is published (--keep $keep): said saved, and it is (step ${stopped:-none}; $rc: $(tail -c 200 "$dir/int5.err"))" \
    '[ $rc -eq 130 ] && [ "$(tail -n 1 "$dir/int5.err")" = "vitmae: SIGINT again: stopped at once; the checkpoint was saved" ] && [ "${stopped:-0}" -ge 3 ] &&
     "$VITMAE" train --resume "$dir/int5" --steps $((stopped + 1)) > /dev/null 2>&1'
  rm -rf "$dir/int5"
done
# A stop asked for while a periodic checkpoint is written (held at VITMAE_FAULT_HOLD_BEFORE_CKPT_RENAME
# in the first, step 4's): that checkpoint is the stop's. The run took one step more and saved again,
# which under mpirun (SIGKILL a second after its SIGTERM) was killed in the second save.
rm -f "$dir/int4.gate" "$dir/int4.gate.held"
VITMAE_FAULT_HOLD_BEFORE_CKPT_RENAME="$dir/int4.gate" "$VITMAE" train $small --steps 100000 --eval-every 100000 --ckpt-every 4 --log-every 1 --threads 1 --out "$dir/int4" > "$dir/int4.log" 2> "$dir/int4.err" &
pid=$!
wait_gate "$dir/int4.gate" $pid
kill -INT $pid; sleep 0.3; touch "$dir/int4.gate"
i=0; while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -KILL $pid 2>/dev/null; wait $pid; rc=$?
t "Ctrl-C during step 4's periodic save: stopped at step 4, exit 0, no step 5 ($rc: $(grep "^interrupted" "$dir/int4.log"))" \
  '[ $rc -eq 0 ] && grep -q "^interrupted at step 4 of 100000; saved" "$dir/int4.log" && [ "$(saved_step "$dir/int4/checkpoint.safetensors")" = 4 ] &&
   [ ! -e "$dir/int4/checkpoint-5.safetensors" ] && [ "$(tail -n 1 "$dir/int4/metrics.csv" | cut -d, -f1)" = 4 ]'
# ... config.json written once, with that checkpoint: written again at the stop, its elapsed_s read in
# info as an edit ("differs from this checkpoint's train state at the same step").
"$VITMAE" info "$dir/int4" > /dev/null 2> "$dir/int4.info"; rc=$?
t "... and info finds config.json the checkpoint's ($rc: $(cat "$dir/int4.info"))" '[ $rc -eq 0 ] && [ ! -s "$dir/int4.info" ]'
rm -rf "$dir/int4"
# A stop in a step that validates (and draws a sample sheet) saves before those outputs: under mpirun
# the ranks' SIGKILL follows their SIGTERM by a second (docs/distributed.md, "Faults"), and a validation
# longer than that lost the stop's checkpoint, saved after it. Killed at the gate after the stopped
# step, before its outputs (VITMAE_FAULT_HOLD_BEFORE_STOPPED_OUTPUTS), as by that SIGKILL: the
# checkpoint, its snapshot and config.json hold the stopped step (the one after metrics.csv's last
# row); info names no gap (that step's row alone missing), and the resume ends bitwise equal to the
# uninterrupted run, its rows the same, the stopped step's too: the resume writes it first, with the
# losses the stop's checkpoint carries (it carried none, and the row stayed missing). The stop comes in
# the start-up (VITMAE_FAULT_STOP_IN_SETUP), so that step 1's exchange learns it: a SIGTERM sent during a
# step's validation gives that validation up instead (the test after this one).
vstop="--steps 40 --eval-every 1 --ckpt-every 100000 --log-every 1 --threads 1"
rm -f "$dir/vstop.gate" "$dir/vstop.gate.held"
VITMAE_FAULT_STOP_IN_SETUP=1 VITMAE_FAULT_HOLD_BEFORE_STOPPED_OUTPUTS="$dir/vstop.gate" "$VITMAE" train $small $vstop --out "$dir/vstop" > "$dir/vstop.log" 2> "$dir/vstop.err" &
pid=$!
wait_gate "$dir/vstop.gate" $pid
kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
stopped=$(($(tail -n 1 "$dir/vstop/metrics.csv" | cut -d, -f1) + 1))
t "a stop in a step that validates, killed before the validation: the stop's checkpoint saved first (step $stopped: $(saved_step "$dir/vstop/checkpoint.safetensors"))" \
  '[ "$(saved_step "$dir/vstop/checkpoint.safetensors")" = $stopped ] && [ "$(saved_step "$dir/vstop/checkpoint-$stopped.safetensors")" = $stopped ] &&
   grep -Eq "\"step\":[[:space:]]*$stopped," "$dir/vstop/config.json"'
"$VITMAE" info "$dir/vstop" > /dev/null 2> "$dir/vstop.info"; rc=$?
"$VITMAE" train --resume "$dir/vstop" --threads 1 > /dev/null 2> "$dir/vstop.rerr"; rc2=$?
"$VITMAE" train $small $vstop --out "$dir/vfull" > /dev/null 2>&1
t "... info names no gap ($rc: $(cat "$dir/vstop.info")), the resume ($rc2: $(cat "$dir/vstop.rerr")) ends as the uninterrupted run, bitwise" \
  '[ $rc -eq 0 ] && [ ! -s "$dir/vstop.info" ] && [ $rc2 -eq 0 ] && same_weights "$dir/vfull/checkpoint.safetensors" "$dir/vstop/checkpoint.safetensors" &&
   [ "$(losses "$dir/vstop")" = "$(losses "$dir/vfull")" ]'
rm -rf "$dir/vstop" "$dir/vfull"
# A stop during a step's validation (SIGTERM at the gate VITMAE_FAULT_HOLD_IN_VALIDATION, after step 2's
# first batch of five (the held-out 18 images, 4 a batch)) gives the validation up and saves at that
# step at once: the stop was learnt at the next step's exchange only, so the validation went on, then
# step 3 was trained, then the save, and under mpirun (SIGKILL a second after SIGTERM) the checkpoint
# was lost. The row of step 2 is left to the resume (the checkpoint carries its losses), which ends
# bitwise as the uninterrupted run, its rows the same. With a validation of one batch (--val-max 4) the
# stop comes after it, before step 3: the row is written, and again no step is trained past it.
vin="--steps 6 --eval-every 2 --ckpt-every 100000 --log-every 1 --threads 1"
for v in vin:20:1 vone:4:2; do
  name=${v%%:*}; max=${v#*:}; max=${max%:*}; row=${v##*:}
  "$VITMAE" train $small $vin --val-max $max --out "$dir/${name}full" > /dev/null 2>&1
  signal_then_open IN_VALIDATION "$name" TERM train $small $vin --val-max $max --out "$dir/$name"
  t "SIGTERM during step 2's validation (--val-max $max): saved at step 2, exit 0, no step 3, metrics.csv to step $row ($rc: $(grep "^interrupted" "$dir/$name.log"); $(saved_step "$dir/$name/checkpoint.safetensors"); $(tail -n 1 "$dir/$name/metrics.csv" | cut -d, -f1))" \
    '[ $rc -eq 0 ] && grep -q "^interrupted at step 2 of 6; saved $dir/$name/checkpoint.safetensors" "$dir/$name.log" &&
     [ "$(saved_step "$dir/$name/checkpoint.safetensors")" = 2 ] && [ "$(tail -n 1 "$dir/$name/metrics.csv" | cut -d, -f1)" = $row ]'
  "$VITMAE" info "$dir/$name" > /dev/null 2> "$dir/$name.info"; rc=$?
  "$VITMAE" train --resume "$dir/$name" --threads 1 > /dev/null 2> "$dir/$name.rerr"; rc2=$?
  t "... info names no gap ($rc: $(cat "$dir/$name.info")), the resume ($rc2: $(cat "$dir/$name.rerr")) ends as the uninterrupted run, bitwise, its rows the same" \
    '[ $rc -eq 0 ] && [ ! -s "$dir/$name.info" ] && [ $rc2 -eq 0 ] && same_run "$dir/${name}full" "$dir/$name"'
done
rm -rf "$dir/vin" "$dir/vone" "$dir/vinfull" "$dir/vonefull"
# A step whose sample sheet failed (a folder at samples/step-20.png's name) saves its checkpoint and
# says to resume; with the folder moved away the resume draws that sheet first (it was never drawn),
# and the run ends as the uninterrupted one: its weights, its rows, its sheets.
VITMAE_FAULT_STOP_IN_SETUP=1 "$VITMAE" train $small --steps 30 --eval-every 10 --threads 1 --out "$dir/sgap" > /dev/null 2>&1
mkdir -p "$dir/sgap/samples/step-20.png"
"$VITMAE" train --resume "$dir/sgap" --threads 1 > /dev/null 2> "$dir/sgap.err"; rc=$?
rmdir "$dir/sgap/samples/step-20.png"
"$VITMAE" train --resume "$dir/sgap" --threads 1 > /dev/null 2> "$dir/sgap.rerr"; rc2=$?
"$VITMAE" train $small --steps 30 --eval-every 10 --threads 1 --out "$dir/sfull" > /dev/null 2>&1
t "a sample sheet failed at step 20 ($rc: $(tail -n 1 "$dir/sgap.err")), the resume ($rc2: $(cat "$dir/sgap.rerr")) draws it: the uninterrupted run's sheets ($(ls "$dir/sgap/samples" | tr "\n" " ")), rows and weights" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: saved $dir/sgap/checkpoint.safetensors at step 20 of 30 (continue with --resume $dir/sgap)$" "$dir/sgap.err" &&
   [ $rc2 -eq 0 ] && [ ! -s "$dir/sgap.rerr" ] && cmp -s "$dir/sfull/samples/step-20.png" "$dir/sgap/samples/step-20.png" &&
   cmp -s "$dir/sfull/samples/step-30.png" "$dir/sgap/samples/step-30.png" && same_run "$dir/sfull" "$dir/sgap"'
rm -rf "$dir/sgap" "$dir/sfull"
# A second Ctrl-C during the start-up (held at the gate before the folder's lock, before step 1): no
# step has run, so nothing is lost; the line says so (it said "the steps since the last checkpoint are
# lost"). The first one's line and the save after step 1 are the contract's (../shared/CONTRACT.md).
rm -f "$dir/int0.gate" "$dir/int0.gate.held"
VITMAE_FAULT_HOLD_BEFORE_LOCK="$dir/int0.gate" "$VITMAE" train $small --steps 100000 --log-every 1 --threads 1 --out "$dir/int0" > "$dir/int0.log" 2> "$dir/int0.err" &
pid=$!
wait_gate "$dir/int0.gate" $pid
kill -INT $pid; sleep 0.5; kill -INT $pid
i=0; while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -KILL $pid 2>/dev/null; wait $pid; rc=$?
t "a second Ctrl-C before the first step: ended by SIGINT ($rc), said that no step ran ($(tail -c 300 "$dir/int0.err"))" \
  '[ $rc -eq 130 ] && [ "$(tail -n 1 "$dir/int0.err")" = "vitmae: SIGINT again: stopped at once, before the first step: nothing saved" ] && ! grep -q "^step " "$dir/int0.log" && [ ! -e "$dir/int0/checkpoint.safetensors" ]'
# One Ctrl-C during the start-up (held at the same gate): the run goes on to its first step, saves it
# and exits 0, as the contract says (../shared/CONTRACT.md); the line says that, not "finishing this
# step" (no step was running), and a second Ctrl-C's way out stays offered.
rm -f "$dir/int1.gate" "$dir/int1.gate.held"
VITMAE_FAULT_HOLD_BEFORE_LOCK="$dir/int1.gate" "$VITMAE" train $small --steps 100000 --log-every 1 --threads 1 --out "$dir/int1" > "$dir/int1.log" 2> "$dir/int1.err" &
pid=$!
wait_gate "$dir/int1.gate" $pid
kill -INT $pid; sleep 0.5; touch "$dir/int1.gate"
i=0; while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -KILL $pid 2>/dev/null; wait $pid; rc=$?
t "a Ctrl-C before the first step: said as what happens, the first step saved, exit 0 ($rc: $(grep SIGINT "$dir/int1.err"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c SIGINT "$dir/int1.err")" -eq 1 ] && grep -qx "vitmae: SIGINT: starting up: the first step runs, then a checkpoint is saved; Ctrl-C again stops at once without saving" "$dir/int1.err" && grep -q "^interrupted at step 1 of 100000" "$dir/int1.log" && [ "$(saved_step "$dir/int1/checkpoint.safetensors")" = 1 ]'
twice term2 TERM
t "Ctrl-C, then SIGTERM: the run saves as asked, exit 0 ($rc; step $(saved_step "$dir/term2/checkpoint.safetensors") after $before)" \
  '[ $rc -eq 0 ] && grep -q "^interrupted at step $(saved_step "$dir/term2/checkpoint.safetensors") of" "$dir/term2.log" &&
   [ "$(saved_step "$dir/term2/checkpoint.safetensors")" -ge "$before" ] && { [ $in_save = 1 ] || [ "$(saved_step "$dir/term2/checkpoint.safetensors")" -gt "$before" ]; } &&
   [ "$(grep -c "finishing this step" "$dir/term2.err")" -eq 1 ]'
# A closed pipe (`vitmae train ... | head -3`) killed the run by SIGPIPE at its next line, unsaved:
# now stdout's lines are dropped, one line on stderr says so, and the run trains and saves, exit 0;
# a closed stderr (here at the small-split warning) likewise, without a word.
closed_pipe stdout "$dir/pipeout.err" "$VITMAE" train $small --steps 12 --log-every 1 --threads 1 --out "$dir/pipeout"; rc=$?
t "stdout's reader gone: the run goes on and saves, exit 0 ($rc: $(cat "$dir/pipeout.err"))" \
  '[ $rc -eq 0 ] && [ "$(saved_step "$dir/pipeout/checkpoint.safetensors")" = 12 ] && [ $(grep -c "standard output" "$dir/pipeout.err") -eq 1 ] && grep -q "^vitmae: train: standard output: its reader has gone (a closed pipe, as after | head); its lines are dropped from here on and the run goes on$" "$dir/pipeout.err"'
closed_pipe stderr "$dir/pipe2.log" "$VITMAE" train $small --val-frac 0.02 --steps 12 --threads 1 --out "$dir/pipe2"; rc=$?
t "stderr's reader gone: the run goes on and saves, exit 0 ($rc)" \
  '[ $rc -eq 0 ] && [ "$(saved_step "$dir/pipe2/checkpoint.safetensors")" = 12 ] && grep -q "^done: 12 steps" "$dir/pipe2.log"'
# A stop signal while the run starts (VITMAE_FAULT_STOP_IN_SETUP raises SIGUSR1 there): the run ends
# after its first step, saved, exit 0 (it used to die of the signal).
VITMAE_FAULT_STOP_IN_SETUP=1 "$VITMAE" train $small --steps 50 --threads 1 --out "$dir/early" > "$dir/early.log" 2>&1; rc=$?
t "a stop signal during start-up: exit 0 ($rc), saved at step 1, said as such ($(grep SIGUSR1 "$dir/early.log"))" \
  '[ $rc -eq 0 ] && grep -q "interrupted at step 1 of 50" "$dir/early.log" && [ "$(saved_step "$dir/early/checkpoint.safetensors")" = 1 ] &&
   grep -qx "vitmae: SIGUSR1: starting up: the first step runs, then a checkpoint is saved" "$dir/early.log"'
# curves.png after a stop: drawn at the last evaluation (step 0 here), it missed the rows logged since
# (step 1, --log-every 1) while the checkpoint was at step 1. It is redrawn after the save, to the
# checkpoint's step, the last row of metrics.csv (docs/interface.md, section 5): read from what the
# picture draws (its x_range), not from file times, which a coarse file system may leave equal.
VITMAE_FAULT_STOP_IN_SETUP=1 "$VITMAE" train $small --steps 50 --log-every 1 --threads 1 --out "$dir/stopcurves" > "$dir/stopcurves.log" 2>&1; rc=$?
t "a stop: curves.png redrawn after the checkpoint, to its step 1, the last row ($rc: $(tail -n 1 "$dir/stopcurves.log"); drawn to step $(curves_last "$dir/stopcurves/curves.png"))" \
  '[ $rc -eq 0 ] && [ "$(saved_step "$dir/stopcurves/checkpoint.safetensors")" = 1 ] && [ "$(tail -n 1 "$dir/stopcurves/metrics.csv" | cut -d, -f1)" = 1 ] && [ "$(curves_last "$dir/stopcurves/curves.png")" = 1 ]'
# ... and a picture with no point drawn records no x_range (docs/interface.md, section 5): a resumed run
# whose metrics.csv holds only its header (the rows cut away), stopped after its first step, which logs
# no row (the default --log-every), redraws curves.png with nothing in it. (The stop's picture above reads "0 1".)
cp -R "$dir/early" "$dir/norows" && head -n 1 "$dir/early/metrics.csv" > "$dir/norows/metrics.csv"
VITMAE_FAULT_STOP_IN_SETUP=1 "$VITMAE" train --resume "$dir/norows" --threads 1 > "$dir/norows.log" 2>&1; rc=$?
t "curves.png with no point drawn: no x_range ($rc: $(tail -n 1 "$dir/norows.log"); x_range '$(png_text "$dir/norows/curves.png" x_range)', stop's '$(png_text "$dir/stopcurves/curves.png" x_range)')" \
  '[ $rc -eq 0 ] && grep -q "interrupted at step 2 of 50" "$dir/norows.log" && [ "$(wc -l < "$dir/norows/metrics.csv")" -eq 1 ] &&
   [ "$(png_text "$dir/norows/curves.png" Software)" = vitmae ] && [ -z "$(png_text "$dir/norows/curves.png" x_range)" ] &&
   [ "$(png_text "$dir/stopcurves/curves.png" x_range)" = "0 1" ]'
# Earlier still (=exec: as the process runs itself again for a short OpenMP spin, docs/interface.md,
# GOMP_SPINCOUNT, which tests/run.sh's OMP_WAIT_POLICY would skip; =mpi: before MPI starts, where a rank
# under mpirun spends most of its start-up): the same. The signal's default action killed the process
# there (exit 138), before train installed its handler.
for at in exec mpi; do
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT VITMAE_FAULT_STOP_IN_SETUP=$at "$VITMAE" train $small --steps 50 --threads 1 --out "$dir/early-$at" > "$dir/early-$at.log" 2>&1; rc=$?
  t "a stop signal as the process starts ($at): exit 0 ($rc), saved at step 1" \
    '[ $rc -eq 0 ] && grep -q "interrupted at step 1 of 50" "$dir/early-$at.log" && [ "$(saved_step "$dir/early-$at/checkpoint.safetensors")" = 1 ]'
done

# --val-max N scores N held-out images spread over them, not the first N: the folders are scanned class
# by class, so the first 4 of 4 classes x 4 were one class (make demo's 1000 of 3,000 held out: three
# classes and a third). Scored so, a --val of 4 x 4 at --val-max 4 gives the same bits as a --val of the
# first image of each class, whose masks (by position) and images are then the same.
mkdir -p "$dir/vfull" "$dir/vone"
for c in $(ls "$dir/data"); do
  mkdir -p "$dir/vfull/$c" "$dir/vone/$c"
  for f in $(ls "$dir/data/$c" | head -n 4); do cp "$dir/data/$c/$f" "$dir/vfull/$c/"; done
  cp "$dir/vfull/$c/$(ls "$dir/vfull/$c" | head -n 1)" "$dir/vone/$c/"
done
vm="--data $dir/data --img 16 --patch 4 --dim 32 --depth 2 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 16 --steps 2 --eval-every 2 --threads 1"
"$VITMAE" train $vm --val "$dir/vfull" --val-max 4 --out "$dir/vfull.run" > /dev/null 2>&1; rc1=$?
"$VITMAE" train $vm --val "$dir/vone" --out "$dir/vone.run" > /dev/null 2>&1; rc2=$?
t "--val-max 4 of 4 classes x 4: the first image of each class scored ($rc1 $rc2: $(cut -d, -f5 "$dir/vfull.run/metrics.csv" | tr "\n" " ") / $(cut -d, -f5 "$dir/vone.run/metrics.csv" | tr "\n" " "))" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(ls "$dir/vone" | wc -l)" -eq 4 ] && [ "$(cut -d, -f5,6 "$dir/vfull.run/metrics.csv")" = "$(cut -d, -f5,6 "$dir/vone.run/metrics.csv")" ] && [ "$(cut -d, -f5 "$dir/vone.run/metrics.csv" | grep -c "^[0-9]")" -eq 2 ]'

# 5. A NaN loss stops the run: exit 1, the step named, the last good checkpoint intact.
VITMAE_FAULT_NAN_STEP=15 "$VITMAE" train $small --steps 20 --ckpt-every 10 --eval-every 10 --out "$dir/nan" > /dev/null 2> "$dir/nan.err"; rc=$?
t "NaN loss exits 1" '[ $rc -eq 1 ]'
t "NaN loss names the step and the last good checkpoint" 'grep -q "NaN at step 15 .*; stopped; the last good checkpoint is $dir/nan/checkpoint.safetensors$" "$dir/nan.err"'
# The line's lr is the step's, in the progress lines' form (it was "%.3g", "lr 0.00104" against the log's
# "lr 1.036e-03"): the same run without the NaN logs step 15's lr.
"$VITMAE" train $small --steps 20 --ckpt-every 10 --eval-every 10 --log-every 5 --out "$dir/nanless" > "$dir/nanless.log" 2>&1
lr15=$(sed -n "s/^step 15\/20 loss [^ ]* lr \([^ ]*\) .*/\1/p" "$dir/nanless.log")
t "the NaN line's lr reads as step 15's log line ($lr15: $(cat "$dir/nan.err"))" \
  '[ -n "$lr15" ] && grep -q "^vitmae: train: loss is NaN at step 15 (lr $lr15); stopped" "$dir/nan.err"'
t "checkpoint of step 10 intact after NaN" '"$VITMAE" info "$dir/nan/checkpoint.safetensors" --json | grep -q "\"step\":[[:space:]]*10,"'
# A NaN at the first step, before any checkpoint: the line named "the last good checkpoint" all the same,
# a file that was never written.
VITMAE_FAULT_NAN_STEP=1 "$VITMAE" train $small --steps 20 --ckpt-every 10 --eval-every 10 --out "$dir/nan1" > /dev/null 2> "$dir/nan1.err"; rc=$?
t "NaN at step 1: exit 1, one line saying no checkpoint was written ($(cat "$dir/nan1.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/nan1.err")" -eq 1 ] && grep -q "^vitmae: train: loss is NaN at step 1 (lr .*); stopped; no checkpoint was written (the run stopped before its first)$" "$dir/nan1.err" && [ ! -e "$dir/nan1/checkpoint.safetensors" ]'
# curves.png is redrawn at each evaluation: the run stopped at step 15 drew it at steps 0 and 10, the
# one stopped at step 1 at step 0 only (same seed and settings), so both exist and differ.
t "curves.png redrawn at each evaluation: the runs stopped at steps 15 and 1 drew different curves" \
  '[ -s "$dir/nan/curves.png" ] && [ -s "$dir/nan1/curves.png" ] && ! cmp -s "$dir/nan/curves.png" "$dir/nan1/curves.png"'
# An infinite loss stops the run as a NaN does (docs/interface.md, "vitmae train", "Stopping").
VITMAE_FAULT_INF_STEP=15 "$VITMAE" train $small --steps 20 --ckpt-every 10 --eval-every 10 --out "$dir/inf" > /dev/null 2> "$dir/inf.err"; rc=$?
t "an infinite loss: exit 1, one line naming the step and the last good checkpoint, whose step is 10 ($rc: $(cat "$dir/inf.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/inf.err")" -eq 1 ] && grep -q "^vitmae: train: loss is infinite at step 15 (lr .*); stopped; the last good checkpoint is $dir/inf/checkpoint.safetensors$" "$dir/inf.err" && [ "$(saved_step "$dir/inf/checkpoint.safetensors")" = 10 ]'

# 5b. Weights gone NaN while the loss is still finite (a learning rate of 10, decay of 10): the
#     checkpoint is not written, exit 1, naming the tensor; the last checkpoint written stays good.
"$VITMAE" train $small --steps 8 --lr 10 --min-lr 10 --wd 10 --warmup-steps 0 --ckpt-every 1 --eval-every 1 \
  --dim 8 --heads 2 --dec-dim 8 --dec-heads 2 --depth 1 --img 8 --batch 4 --out "$dir/div" > /dev/null 2> "$dir/div.err"; rc=$?
t "diverged weights: exit 1, not written ($(grep -v skipped "$dir/div.err" | head -n 1))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: .*div/checkpoint-[0-9]*.safetensors: not written: tensor .* holds NaN or infinite values" "$dir/div.err"'
t "diverged weights: the latest checkpoint loads" '"$VITMAE" info "$dir/div/checkpoint.safetensors" > /dev/null'
# The line went on to say nothing of the run: now, as a NaN loss's, it names the step (the snapshot's)
# and the last good checkpoint, which holds the step before.
div_step=$(sed -n 's/.*checkpoint-\([0-9]*\)\.safetensors: not written: .*/\1/p' "$dir/div.err")
t "diverged weights: the step and the last good checkpoint named ($(grep -v skipped "$dir/div.err" | head -n 1))" \
  '[ -n "$div_step" ] && grep -q "(the model diverged); stopped at step $div_step, its loss still finite; the last good checkpoint is $dir/div/checkpoint.safetensors$" "$dir/div.err" && [ "$(saved_step "$dir/div/checkpoint.safetensors")" = $((div_step - 1)) ]'
# A checkpoint holding a NaN weight (crc32 made to match) is refused when read, not used for NaN results.
python3 - "$dir/nan/checkpoint.safetensors" "$dir/nanw.safetensors" <<'PY'
import sys, struct, json, zlib
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); d = bytearray(b[8 + n:])
o = h["blocks.0.attn.qkv.weight"]["data_offsets"][0]; d[o:o + 4] = struct.pack("<f", float("nan"))
h["__metadata__"]["crc32"] = "%08x" % zlib.crc32(bytes(d))
hb = json.dumps(h).encode(); open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + bytes(d))
PY
"$VITMAE" info "$dir/nanw.safetensors" > /dev/null 2> "$dir/nanw.err"; rc=$?
t "a NaN weight in a checkpoint: refused, exit 1 ($(head -n 1 "$dir/nanw.err"))" \
  '[ $rc -eq 1 ] && grep -q "nanw.safetensors: tensor .blocks.0.attn.qkv.weight. holds NaN or infinite values" "$dir/nanw.err"'

# 6. Usage errors (exit 2) before any work; an unwritable output folder is exit 1.
usage() { "$VITMAE" train $small --steps 5 --out "$dir/u" "$@" > /dev/null 2> "$dir/u.err"; echo $?; }
t "--batch 0 is a usage error" '[ $(usage --batch 0) -eq 2 ] && grep -q -- "--batch" "$dir/u.err"'
t "image not a multiple of the patch" '[ $(usage --img 18) -eq 2 ] && grep -q "multiple" "$dir/u.err"'
t "dim not divisible by heads" '[ $(usage --dim 36 --heads 5) -eq 2 ] && grep -q "divisible" "$dir/u.err"'
# --dec-depth 0: no decoder block, so no head count to divide --dec-dim (it was refused).
t "--dec-depth 0 takes any --dec-heads ($(cat "$dir/u.err"))" '[ $(usage --dec-depth 0 --dec-heads 3 --steps 1) -eq 0 ] && "$VITMAE" info "$dir/u/checkpoint.safetensors" | grep -q "decoder .*depth 0, heads 3"'
rm -rf "$dir/u"
t "dim not divisible by 4" '[ $(usage --dim 30 --heads 2) -eq 2 ] && grep -q "sin-cos" "$dir/u.err"'
# The model errors name the flags the user typed, not the config's keys ("embed_dim 36 is not divisible
# by num_heads 5"); --groups and --accum errors name their flag, and a one-process run is not told of
# "each of the 1 processes".
t "model error names --dim and --heads" '[ $(usage --dim 36 --heads 5) -eq 2 ] && grep -q "^vitmae: train: --dim 36 is not divisible by --heads 5$" "$dir/u.err"'
t "model error names --img and --patch" '[ $(usage --img 18) -eq 2 ] && grep -q "^vitmae: train: --img 18 is not a multiple of --patch 4$" "$dir/u.err"'
# A size out of a range that another flag sets reads as every range error, the flag beside the command
# (it was "vitmae: train: --patch 32 is out of range [1, 16]").
for f in "--patch 32 16" "--heads 64 32" "--dec-heads 64 32"; do
  flag=${f%% *}; v=${f#* }; v=${v% *}; hi=${f##* }; rc=$(usage $flag $v)
  t "$flag $v past its bound $hi: exit 2, train $flag: out of range ($rc: $(cat "$dir/u.err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$dir/u.err")" = "vitmae: train $flag: $v is out of range [1, $hi]" ]'
done
t "--groups error names --groups" '[ $(usage --groups 3) -eq 2 ] && grep -q "^vitmae: train --groups: 3 gradient groups: must be a power of two that divides the batch (16)$" "$dir/u.err"'
t "--accum error in one process: no process count" '[ $(usage --accum 8 --groups 4) -eq 2 ] && grep -q "^vitmae: train --accum: 8 micro-batches cannot share the 4 gradient groups of a step evenly" "$dir/u.err" && ! grep -q process "$dir/u.err"'
t "a model too big for memory names the bytes" '[ $(usage --preset base --img 1024 --patch 4 --batch 4096) -eq 2 ] && grep -q "bytes" "$dir/u.err"'
t "unknown flag" '[ $(usage --frobnicate 1) -eq 2 ]'
# A ratio that removes no patch: the loss over removed patches has no term (MAE's is 0 / 0); such a run
# trained nothing with loss 0 and printed 'val PSNR inf dB'. One removed patch is enough.
# --epochs is instead of --steps: given both, --epochs was used and --steps silently ignored.
t "--steps with --epochs: exit 2, one line" '[ $(usage --epochs 1) -eq 2 ] && [ "$(wc -l < "$dir/u.err")" -eq 1 ] && grep -q "^vitmae: train --epochs: give --steps N or --epochs E, not both" "$dir/u.err"'
# --epochs E is ceil(E x images / batch) steps of the number the user wrote: --epochs 0.8 was a float,
# 0.800000012 x 25 / 20 = 1.0000000149, so 2 steps; and in doubles 0.28 x 25 / 7 is 1.0000000000000002,
# 2 steps too. Each is 1 step now.
"$VITMAE_TOOLS/synth" "$dir/ep25" --count 25 --size 16 --seed 3 >/dev/null
ep="--data $dir/ep25 --val-frac 0 --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --threads 1"
"$VITMAE" train $ep --epochs 0.8 --batch 20 --out "$dir/ep1" > "$dir/ep1.log" 2>&1; r1=$?
"$VITMAE" train $ep --epochs 0.28 --batch 7 --out "$dir/ep2" > "$dir/ep2.log" 2>&1; r2=$?
t "--epochs 0.8 of 25 at batch 20, 0.28 of 25 at batch 7: 1 step each ($r1 $r2: $(grep -h " steps\? of batch" "$dir/ep1.log" "$dir/ep2.log" | tr "\n" "|"))" \
  '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && grep -q "^  1 step of batch 20" "$dir/ep1.log" && grep -q "^  1 step of batch 7" "$dir/ep2.log"'
t "--mask-ratio 0 removes no patch: exit 2, one line" '[ $(usage --mask-ratio 0) -eq 2 ] && [ "$(wc -l < "$dir/u.err")" -eq 1 ] && grep -q "^vitmae: train --mask-ratio: 0 removes no patch of" "$dir/u.err"'
# One patch (--img equal to --patch): no ratio both keeps and removes a patch, and each refusal sent
# the user to the other side ("0.75 leaves no visible patch of 1", "0 removes no patch of 1"); one
# line names the geometry, whatever --mask-ratio.
for r in 0.75 0; do
  rc=$(usage --img 16 --patch 16 --mask-ratio $r)
  t "--img 16 --patch 16 --mask-ratio $r: exit 2, one line naming one patch ($(cat "$dir/u.err"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/u.err")" -eq 1 ] && grep -q "^vitmae: train --patch: 16 makes one patch of the 16x16 image; pretraining needs at least 2" "$dir/u.err"'
done
t "missing --data" '"$VITMAE" train --steps 5 2>/dev/null; [ $? -eq 2 ]'
t "nothing written on usage errors" '[ ! -e "$dir/u" ]'
touch "$dir/file"
"$VITMAE" train $small --steps 5 --out "$dir/file/run" > "$dir/w.out" 2> "$dir/w.err"; rc=$?
t "unwritable output folder: exit 1 before training, one line, nothing on stdout ($rc: $(head -c 300 "$dir/w.err"))" \
  '[ $rc -eq 1 ] && [ ! -s "$dir/w.out" ] && [ "$(cat "$dir/w.err")" = "vitmae: train --out: $dir/file/run: Not a directory" ]'
mkdir "$dir/empty"
"$VITMAE" train --data "$dir/empty" --steps 5 --out "$dir/e" > /dev/null 2> "$dir/e.err"; rc=$?
t "a folder with no image exits 1" '[ $rc -eq 1 ] && grep -q "no usable image" "$dir/e.err"'
# A run with stdout and stderr closed by its caller (`>&- 2>&-`): its first files took their numbers,
# and the skipped-file line, the warnings and the progress lines went into metrics.csv and the rest.
mkdir "$dir/closed"
for f in $(find "$dir/data" -name '*.png' | sort | head -n 20); do cp "$f" "$dir/closed/"; done
printf 'not a png' > "$dir/closed/broken.png"
"$VITMAE" train --data "$dir/closed" --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 4 --steps 2 --out "$dir/cl" >&- 2>&-; rc=$?
t "stdout and stderr closed: the run ends with exit 0 ($rc)" '[ $rc -eq 0 ]'
t "stdout and stderr closed: metrics.csv holds only its header and rows" '[ -s "$dir/cl/metrics.csv" ] && ! grep -v "^step,\|^[0-9]" "$dir/cl/metrics.csv" > /dev/null'
t "stdout and stderr closed: no message in any file of the run" '! grep -rl "skipped\|vitmae: \|done: " "$dir/cl" > /dev/null'
# A stop signal landing while a progress line waits for room in a full pipe (`vitmae train | slow`):
# the write failed with EINTR, the line was lost and the run ended with exit 1 (its stdout had failed).
# The handler now lets the write go on (SA_RESTART): once the reader reads, the run saves, exit 0.
mkfifo "$dir/pipe"
{ sleep 3; cat; } < "$dir/pipe" > "$dir/piped.log" &
reader=$!
"$VITMAE" train --data "$dir/closed" --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 \
  --batch 4 --steps 1000000 --log-every 1 --eval-every 1000000 --ckpt-every 1000000 --out "$dir/piped" > "$dir/pipe" 2> /dev/null &
vp=$!
i=0; while [ $i -lt 100 ] && ! cat /proc/$vp/wchan 2>/dev/null | grep -q pipe_write; do sleep 0.05; i=$((i + 1)); done
blocked=$(cat /proc/$vp/wchan 2>/dev/null)
kill -TERM $vp; wait $vp; rc=$?; wait $reader
t "SIGTERM while stdout's pipe is full ($blocked): exit 0 ($rc)" '[ $rc -eq 0 ]'
t "... its last line says where it stopped" 'tail -n 1 "$dir/piped.log" | grep -q "^interrupted at step [0-9]* of 1000000; saved"'
# Threads that cannot be made (stacks larger than the address space; a process limit, ulimit -u, fails
# the same way): one line, exit 1, before the run folder is made (it was libgomp's own line).
OMP_STACKSIZE=1000000G "$VITMAE" train $small --steps 2 --threads 3 --out "$dir/nothreads" > /dev/null 2> "$dir/t.err"; rc=$?
t "threads that cannot be made: exit 1, one line, no run folder ($rc: $(tr "\n" "|" < "$dir/t.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/t.err")" -eq 1 ] && grep -q "^vitmae: train: cannot start 3 threads: " "$dir/t.err" && [ ! -e "$dir/nothreads" ]'
# A CPU quota (a container's `docker run --cpus 1`, cgroup v1's cpu.cfs_quota_us or v2's cpu.max) of
# fewer CPUs than the machine's cores: the default thread count is the quota's (it was every core, and
# each parallel region waited for threads the quota had stopped); --threads and OMP_NUM_THREADS still
# win. Needs a cgroup this test may make and 2 cores or more: otherwise said and skipped. (--warmup-steps
# 0: the warning of $small's warm-up in a 1-step run would come before the start lines read here.)
cg=""
[ "$(nproc)" -ge 2 ] && cgroup_make cpu
if [ -n "$cg" ]; then
  in_cg env -u OMP_NUM_THREADS "$VITMAE" train $small --steps 1 --warmup-steps 0 --out "$dir/quota" > "$dir/q.out" 2>&1; rc=$?
  t "a CPU quota of 1 CPU: 1 thread by default ($rc: $(sed -n 2p "$dir/q.out"))" \
    '[ $rc -eq 0 ] && sed -n 2p "$dir/q.out" | grep -q ", 1 thread$"'
  in_cg env -u OMP_NUM_THREADS "$VITMAE" train $small --steps 1 --warmup-steps 0 --threads 2 --out "$dir/quota2" > "$dir/q.out" 2>&1; rc=$?
  t "a CPU quota of 1 CPU: --threads 2 is 2 threads ($rc: $(sed -n 2p "$dir/q.out"))" \
    '[ $rc -eq 0 ] && sed -n 2p "$dir/q.out" | grep -q ", 2 threads (more than the 1 CPU it may use: slower steps, the same results)$"'
  in_cg env OMP_NUM_THREADS=2 "$VITMAE" train $small --steps 1 --warmup-steps 0 --out "$dir/quota3" > "$dir/q.out" 2>&1; rc=$?
  t "a CPU quota of 1 CPU: OMP_NUM_THREADS=2 is 2 threads ($rc: $(sed -n 2p "$dir/q.out"))" \
    '[ $rc -eq 0 ] && sed -n 2p "$dir/q.out" | grep -q ", 2 threads (more than the 1 CPU it may use: slower steps, the same results)$"'
  # A value libgomp refuses (its one line) is as if unset: the quota's count (it was every core), and
  # one libgomp takes with spaces or as a nested list is its first count.
  for v in abc 0 -1 2,abc ' '; do
    in_cg env OMP_NUM_THREADS="$v" "$VITMAE" train $small --steps 1 --warmup-steps 0 --out "$dir/quota4" > "$dir/q.out" 2>&1; rc=$?
    t "a CPU quota of 1 CPU: OMP_NUM_THREADS='$v', libgomp's line once and 1 thread ($rc: $(grep "thread" "$dir/q.out" | head -n 1))" \
      '[ $rc -eq 0 ] && [ "$(grep -c "^libgomp: Invalid value for environment variable OMP_NUM_THREADS" "$dir/q.out")" -eq 1 ] && grep -q ", 1 thread$" "$dir/q.out"'
    rm -rf "$dir/quota4"
  done
  for v in ' 2' 2,1; do
    in_cg env OMP_NUM_THREADS="$v" "$VITMAE" train $small --steps 1 --warmup-steps 0 --out "$dir/quota5" > "$dir/q.out" 2>&1; rc=$?
    t "a CPU quota of 1 CPU: OMP_NUM_THREADS='$v' is 2 threads ($rc: $(sed -n 2p "$dir/q.out"))" \
      '[ $rc -eq 0 ] && ! grep -q libgomp "$dir/q.out" && sed -n 2p "$dir/q.out" | grep -q ", 2 threads (more than the 1 CPU it may use: slower steps, the same results)$"'
    rm -rf "$dir/quota5"
  done
  cgroup_remove
else
  echo "note: the CPU quota's thread count not checked (no CPU cgroup can be made here, or 1 core)"
fi
# A small stack limit (ulimit -s; 160 KB are needed): a soft limit is raised (it was a SIGSEGV at 128
# KB and below); a hard one refused in one line, exit 1, before anything is made.
(ulimit -S -s 64 && exec "$VITMAE" train $small --steps 2 --threads 2 --out "$dir/stack") > /dev/null 2> "$dir/s.err"; rc=$?
t "a soft stack limit of 64 KB is raised ($rc: $(tr "\n" "|" < "$dir/s.err"))" '[ $rc -eq 0 ] && [ -s "$dir/stack/checkpoint.safetensors" ]'
(ulimit -s 64 && exec "$VITMAE" train $small --steps 2 --threads 2 --out "$dir/stack2") > /dev/null 2> "$dir/s.err"; rc=$?
t "a hard stack limit of 64 KB: exit 1, one line ($rc: $(tr "\n" "|" < "$dir/s.err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$dir/s.err")" = "vitmae: the stack size limit is 64 KB (ulimit -s, hard limit 64 KB); vitmae needs at least 256 KB" ] && [ ! -e "$dir/stack2" ]'
# Paths as the user meant them (docs/interface.md, section 1): --out "DIR/" and "a//b/./" printed and
# recorded "DIR//checkpoint.safetensors", "./d//x/."; names built from them are now clean.
"$VITMAE" train $small --data "$dir//data/./" --steps 1 --threads 2 --out "$dir/slash//run/" > "$dir/slash.log" 2>&1; rc=$?
t "trailing '/', '//' and '.' in --out and --data: exit 0, clean names ($rc: $(grep -e '//' -e '/\./' "$dir/slash.log" | head -n 1))" \
  '[ $rc -eq 0 ] && grep -q "checkpoint $dir/slash/run/checkpoint.safetensors$" "$dir/slash.log" && grep -q "from $dir/data;" "$dir/slash.log" && ! grep -q -e "//" -e "/\./" "$dir/slash.log"'

# On a terminal (a pty from `script`) the progress bar fits the terminal's width: it was about 80
# characters (85 for a long run) whatever the width, so on a narrower terminal (or an 80-column one)
# each redraw wrapped, and \r went back to the wrapped part only, leaving a line per step. Every
# \r-separated piece is now at most COLUMNS - 1 wide (the bar narrowed, then left out, then the text cut).
if command -v script > /dev/null 2>&1; then
  for cols in 40 12; do
    script -q -c "stty cols $cols; '$VITMAE' train $small --steps 4 --log-every 1 --eval-every 4 --threads 1 --out '$dir/tty$cols'" \
      /dev/null < /dev/null > "$dir/tty$cols.txt" 2>&1; rc=$?
    widest=$(tr '\r' '\n' < "$dir/tty$cols.txt" | grep -a "^\[[#.]*\] [0-9]*/4 \|^[0-9]/4 \|^[0-9]/4$" | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
    drawn=$(tr '\r' '\n' < "$dir/tty$cols.txt" | grep -ac "^\[[#.]*\] [0-9]*/4 \|^[0-9]/4")
    t "progress bar on a terminal $cols wide: at most $((cols - 1)) characters (widest $widest, $drawn drawn, rc $rc)" \
      '[ $rc -eq 0 ] && [ "$drawn" -ge 4 ] && [ "$widest" -le $((cols - 1)) ]'
  done
  t "... 40 wide: a narrower bar, the step, loss and ETA whole" 'tr "\r" "\n" < "$dir/tty40.txt" | grep -aq "^\[[#.]*\] 4/4 loss [0-9.]* ETA [0-9]*s *$"'
  # A message while the bar is drawn (a file found broken mid-run, on stderr, the same terminal) went
  # on the bar's line, "... ETA 0svitmae: skipped ..."; the bar's line is now ended first. Every 6th
  # image broken past its header (found as its batch is made), the pixel statistics not measured (they
  # would find them all before the first step).
  "$VITMAE_TOOLS/synth" "$dir/brk" --count 96 --size 16 --seed 5 > /dev/null
  for f in $(ls "$dir"/brk/*/*.png | awk 'NR % 6 == 0'); do head -c 80 "$f" > "$dir/cut.png" && mv "$dir/cut.png" "$f"; done
  script -q -c "stty cols 100; '$VITMAE' train --data '$dir/brk' --img 16 --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 --batch 8 --steps 12 --val-frac 0 --pixel-norm imagenet --threads 1 --out '$dir/ttybrk'" \
    /dev/null < /dev/null > "$dir/ttybrk.txt" 2>&1; rc=$?
  skips=$(grep -ac "vitmae: skipped" "$dir/ttybrk.txt"); glued=$(tr -d '\r' < "$dir/ttybrk.txt" | grep -a "vitmae: skipped" | grep -avc "^vitmae: skipped")
  t "a message while the bar is drawn starts a line of its own ($skips skipped lines, $glued after a bar, rc $rc)" \
    '[ $rc -eq 0 ] && [ "$skips" -ge 3 ] && [ "$glued" -eq 0 ]'
else
  echo "FAILED: script (util-linux, Debian's bsdutils) not found: the terminal checks need it"; fail=1
fi

# A run that fails before its first file leaves no run folder it made (docs/interface.md, section 1):
# nor the folders above it, nor RUN/samples. Under a file-size limit of 0 (the folder's check that it
# takes files fails) and out of memory for the activations once the folder was made (ulimit -v: it left
# oom/a with an empty samples/). A folder that was there stays, as it was. (Stopped by a signal, a
# run saves first: its folder holds a result.)
err=$( (ulimit -f 0 && exec "$VITMAE" train $small --steps 2 --threads 1 --out "$dir/nofs/a/b") 2>&1 >/dev/null); rc=$?
t "a file-size limit of 0: exit 1, no folder made left ($rc: $err; $(ls -R "$dir/nofs" 2>&1 | tr "\n" " "))" \
  '[ $rc -eq 1 ] && echo "$err" | grep -q "cannot write in this folder" && [ ! -e "$dir/nofs" ]'
# An append-only --out folder (chattr +a) takes the probe file but lets it be neither removed nor
# renamed: the probe passed, and the run failed at its first published file (`config.json: Operation
# not permitted`), its temporary left beside the probe. The check says so before the run; the probe,
# which cannot go, is named.
mkdir -p "$dir/appendonly"
if chattr +a "$dir/appendonly" 2> /dev/null; then
  "$VITMAE" train $small --steps 2 --threads 1 --out "$dir/appendonly" > /dev/null 2> "$dir/err"; rc=$?
  left=$(ls -A "$dir/appendonly" | tr "\n" " ")
  chattr -a "$dir/appendonly"
  t "an append-only --out folder: exit 1, one line before the run, only the probe left ($rc: $(cat "$dir/err"); $left)" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] &&
     grep -q "^vitmae: train --out: $dir/appendonly: cannot write in this folder: it takes new files but lets none be removed or renamed (an append-only folder: lsattr -d shows .a.), and outputs are published by renaming; the probe file $dir/appendonly/.vitmae-write-test-[A-Za-z0-9]* stays in it$" "$dir/err" &&
     case "$left" in ".vitmae-write-test-"*" ") [ "$(echo $left | wc -w)" -eq 1 ] ;; *) false ;; esac'
else
  echo "note: chattr +a is not available on this file system: the append-only check is skipped"
fi
rm -rf "$dir/appendonly"
# An immutable --out folder (chattr +i), or one that holds a new --out, stops even root with "Operation
# not permitted", which said nothing of why: the line names the attribute and the way off it (io/files.h,
# file_folder_reason), for the folder itself and for a folder to be made in it.
mkdir -p "$dir/immutable"
if chattr +i "$dir/immutable" 2> /dev/null; then
  "$VITMAE" train $small --steps 2 --threads 1 --out "$dir/immutable" > /dev/null 2> "$dir/err"; rc=$?
  "$VITMAE" train $small --steps 2 --threads 1 --out "$dir/immutable/new/run" > /dev/null 2> "$dir/err2"; rc2=$?
  left=$(ls -A "$dir/immutable" | tr "\n" " ")
  chattr -i "$dir/immutable"
  t "an immutable --out folder: exit 1, one line naming the attribute, nothing left ($rc $rc2: $(cat "$dir/err" "$dir/err2"); $left)" \
    '[ $rc -eq 1 ] && [ $rc2 -eq 1 ] && [ "$(cat "$dir/err" "$dir/err2" | wc -l)" -eq 2 ] && [ -z "$left" ] &&
     grep -qx "vitmae: train --out: $dir/immutable: cannot write in this folder: Operation not permitted (an immutable folder: lsattr -d shows .i.; chattr -i $dir/immutable lifts it)" "$dir/err" &&
     grep -qx "vitmae: train --out: $dir/immutable/new: Operation not permitted (an immutable folder: lsattr -d shows .i.; chattr -i $dir/immutable lifts it)" "$dir/err2"'
else
  echo "note: chattr +i is not available on this file system: the immutable check is skipped"
fi
rm -rf "$dir/immutable"
if [ "${VITMAE_SANITIZED:-0}" = 1 ]; then
  echo "note: the ulimit -v check is skipped under the sanitizers (ASan cannot run under ulimit -v)"
else
  mkdir -p "$dir/oomkept"
  for o in oom/a oomkept; do
    err=$( (ulimit -v 600000 && exec "$VITMAE" train --data "$dir/data" --preset base --img 224 --patch 16 --batch 8 \
      --steps 2 --threads 1 --out "$dir/$o") 2>&1 >/dev/null); rc=$?
    t "out of memory once the run folder $o was made: exit 1, no folder it made left ($rc: $err; $(ls -R "$dir/${o%/a}" 2>&1 | tr "\n" " "))" \
      '[ $rc -eq 1 ] && echo "$err" | grep -q "out of memory" && if [ $o = oomkept ]; then [ -d "$dir/oomkept" ] && [ -z "$(ls -A "$dir/oomkept")" ]; else [ ! -e "$dir/oom" ]; fi'
  done
fi

[ $fail -eq 0 ] && echo "cli train ok"
exit $fail
