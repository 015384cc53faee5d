#!/bin/sh
# Writes DIR/index.html: one page that shows the pictures of a demo folder with a line on how to read
# each kind, and links to the attention pages (DIR/*/index.html, written by `vitmae attention`).
#   RUN/curves.png, RUN/samples/step-N.png (the last one)   from `vitmae train --out DIR/RUN`
#   */*.recon.png                                           from `vitmae reconstruct`
#   */*.attn.png                                            from `vitmae attention`
#   */confusion-*.png                                       from `vitmae probe --out`
# Usage: tools/gallery_page.sh DIR [TITLE]
set -e
dir=$1
title=${2:-vitmae}
[ -d "$dir" ] || { echo "vitmae: gallery: $dir: not a folder" >&2; exit 1; }
page="$(cd "$dir" && pwd)/index.html"

# A relative path as a URL (the characters that matter in file names percent-encoded), and as HTML.
url() { printf '%s' "$1" | sed 's/%/%25/g; s/ /%20/g; s/#/%23/g; s/?/%3F/g; s/&/%26/g; s/"/%22/g; s/</%3C/g; s/>/%3E/g'; }
html() { printf '%s' "$1" | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g; s/"/\&quot;/g'; }
img() {  # relative path, caption
  printf '<figure><a href="%s"><img src="%s" alt="%s"></a><figcaption>%s</figcaption></figure>\n' \
    "$(url "$1")" "$(url "$1")" "$(html "$1")" "$(html "$2")"
}

(
  cd "$dir"
  printf '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>%s</title>\n' "$(html "$title")"
  printf '<style>body{font-family:sans-serif;max-width:80em;margin:1em auto;padding:0 1em;line-height:1.4}'
  printf ' img{max-width:100%%;height:auto} figure{margin:1em 0} figcaption{font-size:90%%;color:#444}</style>\n'
  printf '</head><body>\n<h1>%s</h1>\n' "$(html "$title")"
  printf '<p>A masked autoencoder (MAE) learns by hiding most patches of an image and predicting them '
  printf 'from the rest. This page shows how training went, what the model predicts for hidden patches, '
  printf 'and where its encoder looks.</p>\n'
  find . -name curves.png | LC_ALL=C sort | while IFS= read -r curves; do
    run=$(dirname "${curves#./}")
    printf '<h2>Training (%s)</h2>\n' "$(html "$run")"
    img "${curves#./}" "Loss on the training and validation images (log scale) and the learning rate, by step."
    last=$(ls "$run/samples" 2>/dev/null | sed -n 's/^step-\([0-9]*\)\.png$/\1/p' | sort -n | tail -n 1)
    [ -z "$last" ] || img "$run/samples/step-$last.png" \
      "Reconstructions of held-out images at step $last (the same images and masks at every step)."
  done
  if [ -n "$(find . -name '*.recon.png' | head -n 1)" ]; then
    printf '<h2>Reconstructions</h2>\n<p>Each row: the original; the masked input (grey = hidden patches); '
    printf 'the raw prediction for every patch (MAE trains only on the hidden ones, so the visible '
    printf 'patches of this panel are not trained and may look odd); the prediction with the visible '
    printf 'patches put back; the squared error of each hidden patch (the visible ones grey: the loss '
    printf 'does not score them). The title gives the PSNR on the hidden patches (higher is better).</p>\n'
    find . -name '*.recon.png' | LC_ALL=C sort | while IFS= read -r f; do img "${f#./}" "$(basename "$f" .recon.png)"; done
  fi
  if [ -n "$(find . -name 'confusion-*.png' | head -n 1)" ]; then
    printf '<h2>Probes</h2>\n<p>How well frozen features classify the test images: rows are the true '
    printf 'class, columns the predicted one, colour the fraction of the row (a bright diagonal is good).</p>\n'
    find . -name 'confusion-*.png' | LC_ALL=C sort | while IFS= read -r f; do img "${f#./}" "${f#./}"; done
  fi
  find . -mindepth 2 -maxdepth 2 -name index.html | LC_ALL=C sort | while IFS= read -r idx; do
    sub=$(dirname "${idx#./}")
    printf '<h2>Attention: <a href="%s">%s</a></h2>\n' "$(url "$sub/index.html")" "$(html "$sub")"
    printf '<p>Where the encoder looks, over each photo; the linked page has every map with its value range.</p>\n'
    find "$sub" -maxdepth 1 -name '*.attn.png' | LC_ALL=C sort | while IFS= read -r f; do img "$f" "$(basename "$f" .attn.png)"; done
  done
  printf '</body></html>\n'
) >"$page.tmp" || { rm -f "$page.tmp"; echo "vitmae: gallery: cannot write $page" >&2; exit 1; }
mv "$page.tmp" "$page"
echo "gallery page $page"
