#!/bin/sh
# make demo: Fashion-MNIST -> a tiny MAE trained for a few minutes -> scores on the test images,
# kNN and linear-probe accuracy of its frozen features beside the same probes on raw pixels,
# reconstruction panels and attention montages of one test image per class, and demo/index.html
# showing them all (tools/gallery_page.sh).
# Usage: tools/demo.sh [STEPS]   (the build and `make fmnist` have run already)
set -e
steps=${1:-${DEMO_STEPS:-1000}}
data=datasets/fashion-mnist
out=demo
./vitmae data "$data/train"
rm -rf "$out"
mkdir -p "$out"
echo
echo "== training the tiny preset on $data/train for $steps steps (28x28 grey, patch 4, batch 128)"
./vitmae train --data "$data/train" --preset tiny --img 28 --patch 4 --channels 1 --mask-ratio 0.75 \
    --batch 128 --lr 1.5e-3 --warmup-steps 50 --steps "$steps" --augment none --pos fixed --wd 0.05 \
    --seed 0 --log-every 50 --out "$out/run"
ckpt="$out/run/checkpoint.safetensors"
echo
echo "== scores on the 10000 test images (masks from seed 0, ratio 0.75)"
./vitmae eval --ckpt "$ckpt" --data "$data/test"
echo
echo "== frozen features on the 10000 test images: kNN (k 20, T 0.07) and linear probe, encoder vs raw pixels"
./vitmae probe --ckpt "$ckpt" --train "$data/train" --test "$data/test" --linear --out "$out/probe-encoder" \
    > "$out/probe-encoder.txt"
cat "$out/probe-encoder.txt"
./vitmae probe --ckpt "$ckpt" --pixels --train "$data/train" --test "$data/test" --linear --out "$out/probe-pixels" \
    > "$out/probe-pixels.txt"
cat "$out/probe-pixels.txt"
top1() { sed -n "s/^$1  *top1 \([0-9.]*\) .*/\1/p" "$2"; }
echo
printf '%-28s %8s %8s\n' "test top-1" "kNN" "linear"
printf '%-28s %8s %8s\n' "encoder (CLS token, frozen)" "$(top1 knn "$out/probe-encoder.txt")" "$(top1 linear "$out/probe-encoder.txt")"
printf '%-28s %8s %8s\n' "raw pixels (28x28)" "$(top1 knn "$out/probe-pixels.txt")" "$(top1 linear "$out/probe-pixels.txt")"
# The first test image of every class.
images=""
for d in "$data"/test/*/; do
  first=$(ls "$d" | head -n 1)
  images="$images $d$first"
done
echo
echo "== reconstructions"
./vitmae reconstruct --ckpt "$ckpt" --out "$out/recon" $images
echo
echo "== attention maps"
./vitmae attention --ckpt "$ckpt" --out "$out/attention" --layer all $images
./vitmae attention --ckpt "$ckpt" --out "$out/attention-rollout" --mode rollout --layer all $images
sh tools/gallery_page.sh "$out" "vitmae demo: a tiny MAE on Fashion-MNIST" >/dev/null
echo
echo "Done. Open $out/index.html in a browser: every picture below, with how to read it."
echo "  $out/run/curves.png                 training and validation loss, learning rate"
echo "  $out/run/samples/step-$steps.png      reconstructions of validation images during training"
echo "  $out/probe-encoder/*.png            confusion matrices of the kNN and linear probes (encoder)"
echo "  $out/probe-pixels/*.png             the same on raw pixels"
echo "  $out/recon/*.recon.png              original | masked | raw prediction | + visible | error"
echo "  $out/attention/index.html           attention montages and overlays, with value ranges"
echo "  $out/attention-rollout/index.html   attention rollout"
echo "  make gallery-check                  checks these pages in headless Chromium"
