#!/bin/sh
# `make gallery-check`: opens picture pages in a real browser (headless Chromium) and fails when any
# picture on them does not load. Also saves a screenshot of each page in build/gallery/screenshots/.
# Usage: tools/gallery_check.sh [DIR_OR_PAGE ...]
#   A folder stands for every index.html under it. Without arguments: demo/ when `make demo` has
#   run, else a small gallery made here from the test fixtures (build/gallery/pages).
# How: a copy of each page, beside it (so relative links resolve the same), gets a script that counts
# on window load the images that loaded and those that did not (complete with naturalWidth 0);
# `chromium --dump-dom` prints the resulting page and we read the count.
set -e
out=build/gallery
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "vitmae: gallery-check: chromium not found (tools/install-deps.sh build chromium)" >&2; exit 1; }
mkdir -p "$out/screenshots"

if [ $# -eq 0 ]; then
  if [ -f demo/index.html ]; then
    set -- demo
  else
    echo "== no demo/index.html (make demo): a gallery from the test fixtures in $out/pages"
    g="$out/pages"
    rm -rf "$g"
    mkdir -p "$g/photos"
    fx=tests/fixtures
    cp "$fx/attn_input.png" "$fx/recon_rgb.png" "$g/photos/"
    build/tools/synth "$g/photos" --count 2 --size 37 >/dev/null
    ./vitmae attention --ckpt "$fx/attn_model.safetensors" --out "$g/attention" --layer all "$g/photos" >/dev/null
    ./vitmae attention --ckpt "$fx/attn_model.safetensors" --out "$g/attention-rollout" --mode rollout \
      --layer all "$g/photos" >/dev/null
    ./vitmae reconstruct --ckpt "$fx/torch_small.safetensors" --out "$g/recon" "$g/photos" >/dev/null
    sh tools/gallery_page.sh "$g" "vitmae gallery check" >/dev/null
    set -- "$g"
  fi
fi

pages=$(mktemp)
trap 'rm -f "$pages"' EXIT
for a in "$@"; do
  if [ -d "$a" ]; then find "$a" -name index.html | LC_ALL=C sort >>"$pages"
  elif [ -f "$a" ]; then echo "$a" >>"$pages"
  else echo "vitmae: gallery-check: $a: no such page or folder" >&2; exit 1
  fi
done
[ -s "$pages" ] || { echo "vitmae: gallery-check: no index.html under $*" >&2; exit 1; }

# (No "&" in it: it goes through sed.)
PROBE='<script>window.addEventListener("load",function(){var ok=0,bad=[];Array.prototype.forEach.call(document.images,function(i){if(i.complete?i.naturalWidth>0:false)ok++;else bad.push(i.getAttribute("src"));});document.body.setAttribute("data-gallery-check",ok+" loaded, "+bad.length+" broken: "+bad.join(" "));});</script>'
flags="--headless --no-sandbox --disable-gpu --hide-scrollbars --allow-file-access-from-files --virtual-time-budget=20000"
fail=0
n=0
while IFS= read -r page; do
  abs=$(cd "$(dirname "$page")" && pwd)/$(basename "$page")
  probe="$(dirname "$abs")/.gallery-check-$$.html"
  sed "s#</body>#$PROBE</body>#" "$abs" >"$probe"
  # shellcheck disable=SC2086
  result=$("$browser" $flags --dump-dom "file://$probe" 2>/dev/null | grep -o 'data-gallery-check="[^"]*"' || true)
  rm -f "$probe"
  n=$((n + 1))
  shot="$out/screenshots/page-$n.png"
  # shellcheck disable=SC2086
  "$browser" $flags --window-size=1280,1600 --screenshot="$PWD/$shot" "file://$abs" >/dev/null 2>&1 || true
  case "$result" in
    *' loaded, 0 broken: "') echo "ok   $page: ${result#*=} (screenshot $shot)" ;;
    '') echo "FAIL $page: the page did not report (did it load?)"; fail=1 ;;
    *) echo "FAIL $page: ${result#*=}"; fail=1 ;;
  esac
  case "$result" in *'"0 loaded'*) echo "FAIL $page: no picture at all"; fail=1 ;; esac
done <"$pages"
[ $fail -eq 0 ] && echo "gallery-check: $n page(s), every picture loaded"
exit $fail
