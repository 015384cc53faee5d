#!/bin/sh
# `make bench`, data pipeline part (docs/data.md): decode throughput per core by size class on a folder
# of photos (build/tools/bench_data), then what the pipeline costs a training run on it: two short
# `vitmae train` runs with no in-memory cache, the first building the on-disk store of working images
# (cold), the second reading it (warm); each prints the time its steps waited for images.
# Usage: tools/bench_pipeline.sh [VITMAE_BIN [BENCH_DATA_BIN]]   env: BENCH_DATA (a folder of images,
# default Debian's wallpapers in /usr/share/backgrounds), BENCH_IMG (default 64)
set -e
bin=${1:-./vitmae}
bd=${2:-build/tools/bench_data}
data=${BENCH_DATA:-/usr/share/backgrounds}
img=${BENCH_IMG:-64}
if [ ! -d "$data" ]; then
  echo "(data pipeline: no folder $data; set BENCH_DATA=DIR to measure decoding on your photos)"
  exit 0
fi
echo
echo "data pipeline on $data (--img $img):"
"$bd" "$data" --img "$img" --limit 300
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for pass in cold warm; do
  "$bin" train --data "$data" --img "$img" --patch 8 --preset tiny --batch 8 --steps 20 --threads 2 \
    --cache-mb 0 --store "$tmp/store" --val-frac 0 --log-every 20 --out "$tmp/$pass" >"$tmp/$pass.log" 2>&1 ||
    { echo "(data pipeline: train failed: $(tail -n 1 "$tmp/$pass.log"))"; exit 0; }
  echo "train, 20 steps of 8, no cache, store $pass: $(grep -h 'steps waited' "$tmp/$pass.log" | sed 's/^ *//')"
done
