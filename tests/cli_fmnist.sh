#!/bin/sh
# tools/fmnist2png (make fmnist, datasets/fashion-mnist.sh; issue 2): Fashion-MNIST's idx.gz files to
# OUT/{train,test}/<class name>/<index>.png, 8-bit grey, the index zero-padded to 5 digits, every class
# folder made; idx files that are not what their header says refused with one line. On tiny idx files
# written here (3 training images of 3x2, 1 test image).
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch
scratch dir
cd "$dir" || exit 1
tool="$VITMAE_TOOLS/fmnist2png"
# idx FILE MAGIC_BYTE DIMS... then the data as printf octal escapes on stdin: FILE.gz.
idx() {
  f=$1; m=$2; shift 2
  { printf '\000\000\010'; printf "\\$m"
    for d in "$@"; do printf "\\000\\000\\000\\$(printf %03o "$d")"; done
    cat; } | gzip -c > "$f.gz"
}
mkdir src
# Training images: 0 all white, 1 all 0x10, 2 the values 0..5; labels 9, 0, 9. Test: one image, label 4.
{ i=0; while [ $i -lt 6 ]; do printf '\377'; i=$((i + 1)); done
  i=0; while [ $i -lt 6 ]; do printf '\020'; i=$((i + 1)); done
  printf '\000\001\002\003\004\005'; } | idx src/train-images-idx3-ubyte 003 3 2 3
printf '\011\000\011' | idx src/train-labels-idx1-ubyte 001 3
printf '\007\007\007\007\007\007' | idx src/t10k-images-idx3-ubyte 003 1 2 3
printf '\004' | idx src/t10k-labels-idx1-ubyte 001 1
"$tool" src out > out.log 2> err; rc=$?
t "converts: exit 0, nothing on stderr ($rc: $(cat err))" '[ $rc -eq 0 ] && [ ! -s err ]'
t "the files: index and class folder as the labels say" \
  '[ "$(cd out && find . -name "*.png" | sort | tr "\n" " ")" = "./test/Coat/00000.png ./train/Ankle_boot/00000.png ./train/Ankle_boot/00002.png ./train/T-shirt_top/00001.png " ]'
t "every class folder made, in both splits" '[ "$(ls out/train | wc -l)" -eq 10 ] && [ "$(ls out/test | wc -l)" -eq 10 ] && [ -d out/train/Sneaker ]'
"$VITMAE" data out/train --json > data.json; rc=$?
t "vitmae data reads them: 3 ok, 3x2 grey ($rc)" \
  '[ $rc -eq 0 ] && grep -q "\"ok\":[[:space:]]*3," data.json && grep -q "\"max_w\":[[:space:]]*3," data.json && grep -q "\"max_h\":[[:space:]]*2" data.json && grep -q "\"greyscale\":[[:space:]]*true" data.json'
# The pixels as written: image 0 all 255, image 2 the bytes 0..5 in row-major order (imgdump: float32
# in [0, 1], times 255 and rounded back to bytes here).
pixels() {
  "$VITMAE_TOOLS/imgdump" "$1" px.npy > /dev/null && tail -c 24 px.npy | od -An -v -tf4 |
    awk '{ for (i = 1; i <= NF; i++) { printf "%s%d", sep, int($i * 255 + 0.5); sep = " " } }'
}
t "image 0: every pixel 255 ($(pixels out/train/Ankle_boot/00000.png))" '[ "$(pixels out/train/Ankle_boot/00000.png)" = "255 255 255 255 255 255" ]'
t "image 2: the bytes 0..5 in row-major order ($(pixels out/train/Ankle_boot/00002.png))" '[ "$(pixels out/train/Ankle_boot/00002.png)" = "0 1 2 3 4 5" ]'
# Refusals, one line each, exit 1, naming the file: a label past 9, counts that differ, a short data
# section, a wrong magic number.
bad() {   # bad NAME WHAT: the conversion of src-NAME fails with one line holding WHAT
  rm -rf out2
  "$tool" "src-$1" out2 > /dev/null 2> err; rc=$?; what=$2
  t "refused: $1 ($rc: $(cat err))" '[ $rc -ne 0 ] && [ "$(wc -l < err)" -eq 1 ] && grep -q "^fmnist2png: .*$what" err'
}
for n in label count short magic; do mkdir "src-$n" && cp src/*.gz "src-$n/"; done
printf '\011\012\011' | idx src-label/train-labels-idx1-ubyte 001 3
printf '\011\000' | idx src-count/train-labels-idx1-ubyte 001 2
printf '\011\000' | idx src-short/train-labels-idx1-ubyte 001 3
printf '\011\000\011' | idx src-magic/train-labels-idx1-ubyte 003 3
bad label "train-labels-idx1-ubyte.gz: label 10 of item 1 is not 0..9"
bad count "has 3 images but .* has 2 labels"
bad short "train-labels-idx1-ubyte.gz: truncated data"
bad magic "train-labels-idx1-ubyte.gz: bad idx magic 0x00000803 (want 0x00000801)"
rm -rf "$dir"
[ $fail -eq 0 ] && echo "cli_fmnist ok"
exit $fail
