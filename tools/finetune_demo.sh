#!/bin/sh
# make finetune-demo: fine-tune the demo's pretrained encoder (demo/run, `make demo`) and a from-scratch
# model of the same shape with the same recipe and budget on Fashion-MNIST, then print both test
# top-1 accuracies (all 10000 test images) and the time each took.
# Usage: tools/finetune_demo.sh [STEPS]   (the build and `make fmnist` have run already)
# FT_CKPT=FILE fine-tunes another pretraining checkpoint (its shape decides the scratch model's too).
# FT_EVAL=N validates every N steps (a curve in metrics.csv; default: at the end only); FT_ARGS adds
# finetune flags to both runs (e.g. FT_ARGS="--augment flip").
set -e
# metrics.csv's numbers have a decimal point: awk reads them in the C locale (under LC_ALL=de_DE.UTF-8
# it read the accuracy 0.8123 as 0), as tools/bench.sh does.
LC_ALL=C; export LC_ALL
steps=${1:-${FT_STEPS:-600}}
data=datasets/fashion-mnist
out=demo/finetune
ckpt=${FT_CKPT:-demo/run/checkpoint.safetensors}
if [ ! -f "$ckpt" ]; then
  echo "== $ckpt is missing: pretraining it with the demo first"
  sh tools/demo.sh
fi
rm -rf "$out"
mkdir -p "$out"
recipe="--data $data/train --val $data/test --val-max 10000 --batch 64 --blr 1e-3 --steps $steps \
  --eval-every ${FT_EVAL:-$steps} --seed 0 --log-every 50 ${FT_ARGS:-}"
shape=$(./vitmae info --json "$ckpt" | python3 -c 'import json, sys; c = json.load(sys.stdin)["config"]
print("--img %d --patch %d --channels %d --dim %d --depth %d --heads %d --pos %s" % (c["img_size"], c["patch_size"],
      c["in_chans"], c["embed_dim"], c["depth"], c["num_heads"], c["pos_embed"]))')
echo
echo "== fine-tuning the pretrained encoder of $ckpt ($steps steps of 64 images)"
./vitmae finetune --ckpt "$ckpt" $recipe --out "$out/pretrained"
echo
echo "== the same recipe from scratch ($shape)"
./vitmae finetune --from-scratch $shape $recipe --out "$out/scratch"
echo
echo "Fashion-MNIST test top-1 (10000 images), $steps fine-tuning steps of 64 images:"
printf "  %-12s %8s %10s %8s\n" model steps time top-1
for m in pretrained scratch; do
  awk -F, -v m=$m 'NR > 1 && $6 != "" { s = $1; t = $8; a = $6 } END { printf "  %-12s %8d %9.0fs %8.4f\n", m, s, t, a }' \
    "$out/$m/metrics.csv"
done
echo "Curves: $out/pretrained/curves.png, $out/scratch/curves.png"
