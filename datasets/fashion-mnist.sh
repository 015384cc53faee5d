#!/bin/sh
# Fashion-MNIST as PNG folders: datasets/fashion-mnist/{train,test}/<class>/<index>.png (60000 + 10000
# 28x28 greyscale images). Source: Debian's dataset-fashion-mnist package. As root it is installed with
# apt-get when missing; otherwise the .deb is fetched with `apt-get download` and unpacked into
# datasets/cache. Does nothing when the stamp file datasets/fashion-mnist/.complete exists.
# Needs build/tools/fmnist2png (`make fmnist` builds it first).
set -eu
cd "$(dirname "$0")/.."
out=datasets/fashion-mnist
stamp=$out/.complete
if [ -f "$stamp" ]; then echo "fashion-mnist: already in $out"; exit 0; fi
tool=build/tools/fmnist2png
[ -x "$tool" ] || { echo "fashion-mnist: $tool is missing (run make fmnist)" >&2; exit 1; }

find_src() {
  f=$(dpkg -L dataset-fashion-mnist 2>/dev/null | grep '/train-images-idx3-ubyte\.gz$' | head -n 1 || true)
  if [ -n "$f" ] && [ -f "$f" ]; then dirname "$f"; return; fi
  f=$(find datasets/cache -name train-images-idx3-ubyte.gz 2>/dev/null | head -n 1 || true)
  if [ -n "$f" ]; then dirname "$f"; fi
}

src=$(find_src)
if [ -z "$src" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "fashion-mnist: installing dataset-fashion-mnist" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dataset-fashion-mnist >&2
  else
    echo "fashion-mnist: fetching dataset-fashion-mnist into datasets/cache (not root)" >&2
    mkdir -p datasets/cache
    (cd datasets/cache && apt-get download dataset-fashion-mnist >&2)
    deb=$(ls datasets/cache/dataset-fashion-mnist_*.deb | head -n 1)
    dpkg -x "$deb" datasets/cache/root
  fi
  src=$(find_src)
fi
[ -n "$src" ] || { echo "fashion-mnist: cannot find the Fashion-MNIST idx files" >&2; exit 1; }

# Convert into a temporary folder, check the counts, then move into place.
rm -rf "$out.tmp"
"$tool" "$src" "$out.tmp"
ntrain=$(find "$out.tmp/train" -name '*.png' | wc -l)
ntest=$(find "$out.tmp/test" -name '*.png' | wc -l)
if [ "$ntrain" -ne 60000 ] || [ "$ntest" -ne 10000 ]; then
  echo "fashion-mnist: expected 60000 train + 10000 test PNGs, got $ntrain + $ntest" >&2
  exit 1
fi
rm -rf "$out"
mv "$out.tmp" "$out"
echo "source: $src" > "$stamp"
echo "fashion-mnist: $ntrain train + $ntest test images in $out"
