#!/bin/sh
# Decoding against PIL (python3-pil), within 1 level of 255: EXIF orientations 1-8 (PIL's
# ImageOps.exif_transpose), WebP lossy / lossless / with alpha, CMYK JPEG (Adobe), progressive JPEG,
# greyscale JPEG. Files are written here by PIL; build/tools/imgdump gives vitmae's decode.
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
fail=0
if ! /usr/bin/python3 -c 'import PIL, numpy; from PIL import features; assert features.check("webp")' 2>/dev/null; then
  echo "cli formats skipped: python3-pil with WebP (and numpy) not installed"; exit 0
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/vitmae-cli-formats.XXXXXX")
trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 - "$dir" <<'PY'
import sys, numpy as np
from PIL import Image
d = sys.argv[1]
h, w = 24, 40
y, x = np.mgrid[0:h, 0:w]
rgb = np.stack([(x * 6) % 256, (y * 10) % 256, ((x + y) * 4) % 256], -1).astype(np.uint8)
rgb[:8, :8] = (255, 0, 0)          # a marked corner, so a wrong orientation shows
im = Image.fromarray(rgb)
for k in range(1, 9):
    ex = Image.Exif(); ex[0x0112] = k
    im.save(f"{d}/orient{k}.jpg", quality=95, exif=ex.tobytes())
# Orientation 6 stored as a LONG (type 4) instead of the standard's SHORT, as some writers do.
import struct
tiff = b"II*\0" + struct.pack("<IH", 8, 1) + struct.pack("<HHII", 0x0112, 4, 1, 6) + struct.pack("<I", 0)
im.save(f"{d}/orient6long.jpg", quality=95, exif=b"Exif\0\0" + tiff)
im.save(f"{d}/progressive.jpg", quality=90, progressive=True)
im.convert("L").save(f"{d}/grey.jpg", quality=90)
im.convert("CMYK").save(f"{d}/cmyk.jpg", quality=90)
im.save(f"{d}/lossy.webp", quality=80)
im.save(f"{d}/lossless.webp", lossless=True)
rgba = np.dstack([rgb, (x * 3 % 256).astype(np.uint8)])
Image.fromarray(rgba, "RGBA").save(f"{d}/alpha.webp", lossless=True)
PY
t "PIL wrote the files" '[ -f "$dir/alpha.webp" ]'
for f in orient1 orient2 orient3 orient4 orient5 orient6 orient6long orient7 orient8 progressive grey cmyk lossy lossless alpha; do
  src=$(ls "$dir/$f".*)
  "$VITMAE_TOOLS/imgdump" "$src" "$dir/$f.npy" 2>"$dir/err"; rc=$?
  t "$f decodes ($(cat "$dir/err"))" '[ $rc -eq 0 ]'
done
out=$(/usr/bin/python3 - "$dir" <<'PY'
import sys, glob, os, numpy as np
from PIL import Image, ImageOps
d = sys.argv[1]
for npy in sorted(glob.glob(d + "/*.npy")):
    name = os.path.basename(npy)[:-4]
    src = glob.glob(f"{d}/{name}.jpg") + glob.glob(f"{d}/{name}.webp")
    im = ImageOps.exif_transpose(Image.open(src[0]))
    ref = np.asarray(im.convert("L" if im.mode in ("L", "LA") else "RGB"), dtype=np.float64)
    if ref.ndim == 2: ref = ref[:, :, None]
    got = np.load(npy).astype(np.float64) * 255
    if got.shape != ref.shape:
        print(f"{name}: shape {got.shape} != PIL {ref.shape}"); continue
    worst = np.abs(got - ref).max()
    print(f"{name}: {'ok' if worst <= 1.0 else 'bad'} worst {worst:.3f} levels")
PY
)
echo "$out"
t "15 files compared with PIL" '[ $(echo "$out" | grep -c ": ok worst") -eq 15 ]'
t "no mismatch" '! echo "$out" | grep -q "bad\|shape"'
# Reduced-size JPEG decode (DCT scaling): 40x24 with shorter side >= 12 decodes at 4/8 = 20x12.
"$VITMAE_TOOLS/imgdump" "$dir/progressive.jpg" "$dir/half.npy" --reduced 12
shape=$(/usr/bin/python3 -c 'import numpy, sys; print(numpy.load(sys.argv[1]).shape)' "$dir/half.npy")
t "reduced decode is 12x20 ($shape)" '[ "$shape" = "(12, 20, 3)" ]'
[ $fail -eq 0 ] && echo "cli formats ok"
exit $fail
