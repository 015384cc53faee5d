#!/bin/sh
# `vitmae data`: counts, classes and skipped files (JSON) on a synthetic folder with bad files; exit
# statuses for an empty folder, a missing folder and an unknown flag.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch dir
cd "$dir" || exit 1   # a command that wrongly writes to the working directory writes here
"$VITMAE_TOOLS/synth" "$dir/set" --count 10 --size 16 --classes 3 --seed 1 >/dev/null
t "synth exits 0" '[ $? -eq 0 ]'
printf 'not a png' > "$dir/set/circle/broken.png"
head -c 50 "$dir/set/square/00001.png" > "$dir/set/square/cut.png"
printf 'notes' > "$dir/set/README.txt"
printf '<svg xmlns="http://www.w3.org/2000/svg"/>' > "$dir/set/logo.svg"
printf 'GIF89a' > "$dir/set/circle/anim.GIF"
# TIFF (a real 8 x 8 grey baseline TIFF, "II*\0", that PIL opens) under both its names, and HEIC (an
# ISO-BMFF "ftyp" box of brand heic, as a phone writes it): ignored with their reasons, as docs/data.md
# lists them.
/usr/bin/python3 - "$dir/set/square/scan.tif" "$dir/set/page.tiff" <<'PY'
import struct, sys
w = h = 8
tags = [(256, 3, w), (257, 3, h), (258, 3, 8), (259, 3, 1), (262, 3, 1), (273, 4, 0), (277, 3, 1),
        (278, 3, h), (279, 4, w * h)]
data_at = 8 + 2 + 12 * len(tags) + 4
ifd = struct.pack("<H", len(tags)) + b"".join(
    struct.pack("<HHI", tag, kind, 1) + (struct.pack("<HH", v, 0) if kind == 3 else struct.pack("<I", data_at if tag == 273 else v))
    for tag, kind, v in tags) + struct.pack("<I", 0)
for path in sys.argv[1:]:
    open(path, "wb").write(b"II*\0" + struct.pack("<I", 8) + ifd + bytes(range(0, 256, 4)))
PY
t "setup: the TIFF files begin II*\\0" '[ "$(head -c 4 "$dir/set/square/scan.tif" | od -An -c | tr -d " ")" = "II*\\0" ]'
printf '\000\000\000\030ftypheic\000\000\000\000mif1heic' > "$dir/set/triangle/phone.HEIC"
# An RGBA PNG whose colour is one flat grey under a varying alpha: uniform once alpha is dropped.
/usr/bin/python3 - "$dir/set/flat.png" <<'PY'
import struct, sys, zlib
w = h = 12
raw = b"".join(b"\0" + b"".join(bytes((90, 90, 90, (x * 30) % 256)) for x in range(w)) for y in range(h))
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
                              + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
PY

out=$("$VITMAE" data --json "$dir/set" 2>"$dir/err"); rc=$?
t "data --json exits 0" '[ $rc -eq 0 ]'
check=$(printf '%s' "$out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
want_classes = {"circle": 4, "square": 3, "triangle": 3}
rel = lambda f: f["path"].split("/set/")[1]
ok = (d["ok"] == 11 and d["skipped"] == 2 and d["ignored"] == 6 and d["classes"] == want_classes
      and [(rel(f), f["reason"]) for f in d["skipped_files"]]
          == [("circle/broken.png", "not a PNG, JPEG or WebP file"), ("square/cut.png", "truncated PNG data")]
      and [rel(f) for f in d["ignored_files"]] == ["circle/anim.GIF", "logo.svg", "page.tiff", "square/scan.tif",
                                                    "triangle/phone.HEIC"]
      and "GIF" in d["ignored_files"][0]["reason"] and "SVG" in d["ignored_files"][1]["reason"]
      and [f["reason"] for f in d["ignored_files"][2:]] == ["TIFF is not read; convert it to PNG"] * 2
                                                          + ["HEIC is not read; convert it to JPEG"]
      and [rel(f) for f in d["warnings"]] == ["flat.png"] and "same colour" in d["warnings"][0]["warning"])
print("ok" if ok else "bad: %r" % d)' 2>&1)
t "JSON counts, classes, skipped files ($check)" '[ "$check" = ok ]'
# Class folders whose names differ only in bytes that are not UTF-8 (a\xff, a\xfe: both "a\uFFFD"
# in JSON) and one named "a\uFFFD (2)": each keeps a key of its own, the later ones "<key> (N)" (they
# were duplicate keys, and Python's json kept one count).
for c in "a$(printf '\377')" "a$(printf '\376')" "a$(printf '\357\277\275') (2)"; do
  mkdir -p "$dir/dup/$c" && cp "$dir/set/circle/00000.png" "$dir/dup/$c/x.png"
done
cp "$dir/set/circle/00003.png" "$dir/dup/a$(printf '\377')/y.png"
check=$("$VITMAE" data --json "$dir/dup" 2>&1 | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print("ok" if d["classes"] == {"a\ufffd (2)": 1, "a\ufffd": 1, "a\ufffd (3)": 2} else "bad: %r" % d["classes"])' 2>&1)
t "data --json: names alike in JSON keep a key each ($check)" '[ "$check" = ok ]'

out=$("$VITMAE" data "$dir/set"); rc=$?
t "text form exits 0" '[ $rc -eq 0 ]'
t "text form has the counts" 'echo "$out" | grep -q "11 ok, 2 skipped, 6 ignored"'
t "text form names the ignored SVG" 'echo "$out" | grep -q "logo.svg: SVG is a vector format"'
# Camera raws of every maker and an animated PNG, named by extension: only .dng .cr2 .nef .arw were,
# and a folder of Canon CR3 or Fuji RAF files was "other files ignored" without a word.
mkdir -p "$dir/raws"
for e in cr3 RAF rw2 orf pef srw nrw 3fr x3f raw crw erf mrw kdc dcr sr2 iiq rwl dng gpr ptx bay cap eip k25 dcs drf r3d ari mdc apng; do echo x > "$dir/raws/f.$e"; done
raws=$("$VITMAE" data "$dir/raws" 2>&1)
t "data names every camera raw and an animated PNG ($(echo "$raws" | grep -c "camera raw files are not read") raws)" \
  '[ "$(echo "$raws" | grep -c ": camera raw files are not read; export them as JPEG$")" -eq 30 ] &&
   echo "$raws" | grep -q "f.apng: animated PNG is not read; save a frame as PNG$" && ! echo "$raws" | grep -q "other files ignored"'
# README.txt, the sixth ignored file, is not an image: counted, not listed, and the text says so (it read
# as if the list of five had lost one).
t "text form says the other ignored file is only counted" \
  '[ "$(echo "$out" | grep -c "ignored")" -eq 3 ] && echo "$out" | grep -qx "other files ignored (not images, only counted): 1"'
# A folder met again through a link (searched once) is counted as ignored too: said as a folder, not
# as a file that is not an image.
mkdir -p "$dir/loop/a" && cp "$dir/set/circle/00000.png" "$dir/loop/a/" && ln -s .. "$dir/loop/a/up"
lout=$("$VITMAE" data "$dir/loop"); rc=$?
t "a folder met again: said on its own line, no 'other files' line ($rc: $(echo "$lout" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && echo "$lout" | grep -q ": 1 ok, 0 skipped, 1 ignored$" &&
   echo "$lout" | grep -qx "folders ignored (met again through a link, searched once): 1" && ! echo "$lout" | grep -q "^other files"'
# A symbolic link to nothing (its target moved or deleted) is listed by ls: "No such file or
# directory" denied the file the user sees. Its line names the link's target.
mkdir -p "$dir/dang/a" && cp "$dir/set/circle/00000.png" "$dir/dang/a/" && ln -s "$dir/gone/x.png" "$dir/dang/a/lnk.png"
dout=$("$VITMAE" data "$dir/dang"); rc=$?
t "a link to nothing: skipped, named with its target ($rc: $(echo "$dout" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && echo "$dout" | grep -qx "  $dir/dang/a/lnk.png: a symbolic link to $dir/gone/x.png, which does not exist"'
t "text form names the ignored TIFF files and HEIC" \
  'echo "$out" | grep -q "/set/page.tiff: TIFF is not read; convert it to PNG$" &&
   echo "$out" | grep -q "/set/square/scan.tif: TIFF is not read; convert it to PNG$" &&
   echo "$out" | grep -q "/set/triangle/phone.HEIC: HEIC is not read; convert it to JPEG$"'
t "text form warns about the flat image" 'echo "$out" | grep -q "flat.png: every pixel is the same colour"'
# "(after dropping alpha)" only for an image that had alpha: a 1x1 RGB PNG was said to have dropped one.
mkdir -p "$dir/flat2" && cp "$dir/set/flat.png" "$dir/flat2/rgba.png"
/usr/bin/python3 -c 'from PIL import Image; import sys; Image.new("RGB", (1, 1), (9, 9, 9)).save(sys.argv[1])' "$dir/flat2/rgb.png"
# WebP reports its alpha by a path of its own (image.c's WebP decode): a lossless WebP of one grey under
# a varying alpha (exact: the colour under it kept), and one without alpha.
/usr/bin/python3 - "$dir/flat2" <<'PY'
import sys
from PIL import Image
im = Image.new("RGBA", (4, 4))
im.putdata([(9, 9, 9, 20 + 15 * i) for i in range(16)])
im.save(sys.argv[1] + "/rgba.webp", lossless=True, exact=True)
Image.new("RGB", (4, 4), (9, 9, 9)).save(sys.argv[1] + "/rgb.webp", lossless=True)
PY
fout=$("$VITMAE" data "$dir/flat2" 2>&1); rc=$?
t "flat images: alpha named only where there was one, PNG and WebP ($rc: $(echo "$fout" | grep same | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && echo "$fout" | grep -q "flat2/rgb.png: every pixel is the same colour: nothing to learn from$" &&
   echo "$fout" | grep -q "flat2/rgba.png: every pixel is the same colour (after dropping alpha): nothing to learn from$" &&
   echo "$fout" | grep -q "flat2/rgb.webp: every pixel is the same colour: nothing to learn from$" &&
   echo "$fout" | grep -q "flat2/rgba.webp: every pixel is the same colour (after dropping alpha): nothing to learn from$"'
# The sizes line gives each side's range: a wide and a tall image read "40x10 to 10x30" as two sizes
# neither has ("10x10 to 40x30 (min and max width x height)" before).
mkdir -p "$dir/pano"
/usr/bin/python3 -c '
import sys; from PIL import Image
Image.new("RGB", (40, 10), (200, 10, 10)).save(sys.argv[1] + "/wide.png")
Image.new("RGB", (10, 30), (10, 200, 10)).save(sys.argv[1] + "/tall.png")' "$dir/pano"
"$VITMAE" data "$dir/pano" > "$dir/pano.out"; rc=$?
t "text form: each side's range ($(grep "^sizes" "$dir/pano.out"))" \
  '[ $rc -eq 0 ] && grep -qx "sizes: width 10 to 40, height 10 to 30, colour" "$dir/pano.out"'
"$VITMAE" data --threads 1 "$dir/set" >/dev/null; rc=$?
t "--threads is accepted" '[ $rc -eq 0 ]'
t "text form lists classes" 'echo "$out" | grep -q "circle *4"'
t "text form lists the skipped reason" 'echo "$out" | grep -q "cut.png: truncated PNG data"'

# A folder nested past the 64-level limit is listed as skipped, not left out without a word.
deep="$dir/deep/a"; for i in $(seq 1 70); do deep="$deep/x"; done
mkdir -p "$deep" && cp "$dir/set/square/00001.png" "$deep/" && cp "$dir/set/square/00001.png" "$dir/deep/a/"
out=$("$VITMAE" data "$dir/deep"); rc=$?
t "a folder 70 levels deep: exit 0, listed as skipped ($(echo "$out" | head -n 1))" \
  '[ $rc -eq 0 ] && echo "$out" | grep -q "1 ok, 1 skipped" && echo "$out" | grep -q "/x/x: folder nested more than 64 levels deep: not searched$"'
# Paths past the system's 4095 bytes (made relative to their folder, as no path can name them): an
# image whose path is too long to open, and a folder (with an image) too long to search, are each
# listed as skipped with that reason (the folder was counted as ignored, named nowhere). Folders of 250
# bytes a name, as deep as the last one's path still fits.
seg=$(printf '%0250d' 0 | tr 0 y)
mkdir -p "$dir/long/ok" && cp "$dir/set/square/00001.png" "$dir/long/ok/"
(p="$dir/long/b"; mkdir "$p" && cd "$p" || exit 1
 while [ $((${#p} + 1 + 250)) -lt 4096 ]; do mkdir "$seg" && cd "$seg" && p="$p/$seg" || exit 1; done
 cp "$dir/set/square/00001.png" "$seg.png" && mkdir "$seg" && cp "$dir/set/square/00001.png" "$seg/x.png")
out=$("$VITMAE" data "$dir/long"); rc=$?
t "paths past 4095 bytes: exit 0, a file and a folder listed as skipped ($rc: $(echo "$out" | cut -c 1-80,4000- | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && echo "$out" | grep -q ": 1 ok, 2 skipped, 0 ignored$" && [ "$(echo "$out" | grep -c "yyyy\.png: path longer than 4095 bytes (the system limit): not opened$")" -eq 1 ] && [ "$(echo "$out" | grep -c "yyyy: folder path longer than 4095 bytes (the system limit): not searched$")" -eq 1 ]'
check=$("$VITMAE" data --json "$dir/long" 2>&1 | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
why = sorted((len(f["path"]) > 4095, f["path"].endswith(".png"), f["reason"].split(":")[0]) for f in d["skipped_files"])
print("ok" if (d["ok"], d["skipped"], d["ignored"], d["ignored_files"]) == (1, 2, 0, []) and why == [
    (True, False, "folder path longer than 4095 bytes (the system limit)"),
    (True, True, "path longer than 4095 bytes (the system limit)")] else "bad: %r" % ((d, why),))' 2>&1 | cut -c 1-300)
t "data --json: both in skipped_files ($check)" '[ "$check" = ok ]'

mkdir "$dir/empty"
"$VITMAE" data "$dir/empty" >/dev/null 2>"$dir/err"; rc=$?
t "empty folder exits 1" '[ $rc -eq 1 ]'
t "empty folder message" 'grep -q "^vitmae: .*/empty: no usable image (0 skipped, 0 ignored)" "$dir/err"'
"$VITMAE" data "$dir/missing" >/dev/null 2>"$dir/err"; rc=$?
t "missing folder exits 1" '[ $rc -eq 1 ]'
t "missing folder message" 'grep -q "^vitmae: .*/missing: " "$dir/err"'
"$VITMAE" data --frobnicate "$dir/set" >/dev/null 2>"$dir/err"; rc=$?
t "unknown flag exits 2" '[ $rc -eq 2 ]'
"$VITMAE" data >/dev/null 2>&1; rc=$?
t "missing DIR exits 2" '[ $rc -eq 2 ]'
"$VITMAE" data --max-pixels 100 "$dir/set" >/dev/null 2>&1; rc=$?
t "--max-pixels below every image: nothing usable, exit 1" '[ $rc -eq 1 ]'
"$VITMAE" data --help >/dev/null; rc=$?
t "--help exits 0" '[ $rc -eq 0 ]'
# A large file of another kind named .png (here 1.5 GB of zeros, sparse): refused by its first bytes,
# not read into memory whole (it took 1.5 GB and 4 s).
mkdir -p "$dir/big"
truncate -s 1500M "$dir/big/video.png" && "$VITMAE_TOOLS/mkckpt" png "$dir/big/ok.png" --size 16 > /dev/null
kb=$(python3 -c 'import resource, subprocess, sys
subprocess.run([sys.argv[1], "data", sys.argv[2]], stdout=open(sys.argv[3], "w"), stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$VITMAE" "$dir/big" "$dir/big.out")
t "a 1.5 GB non-image: skipped as not an image, in under 200 MB ($kb KB)" \
  'grep -q "video.png: not a PNG, JPEG or WebP file" "$dir/big.out" && [ "$kb" -lt 200000 ]'
# Names with a newline stay inside their lines of the text report, written out (a class folder, a
# skipped file).
mkdir -p "$dir/nl/$(printf 'cls\nfake')"
cp "$dir/set/circle/00000.png" "$dir/nl/$(printf 'cls\nfake')/"
printf 'not a png' > "$dir/nl/$(printf 'cls\nfake')/$(printf 'bad\nfake').png"
"$VITMAE" data "$dir/nl" > "$dir/nl.out" 2>&1; rc=$?
t "data: names with a newline written out ($rc: $(tr "\n" "|" < "$dir/nl.out"))" \
  '[ $rc -eq 0 ] && grep -qF "  cls\\nfake " "$dir/nl.out" && grep -qF "cls\\nfake/bad\\nfake.png: not a PNG" "$dir/nl.out" && ! grep -q "^fake" "$dir/nl.out"'

# Threads that cannot be made (here stacks larger than the address space, OMP_STACKSIZE: 1000000G is
# 954 TiB, past the 128 TiB a process has, so it fails whatever vm.overcommit_memory says; a process
# limit, ulimit -u, fails the same way): one line and exit 1, as for any command (libgomp ended the
# process with an empty line and its own "libgomp: Thread creation failed"). A stack size that fits
# runs.
OMP_STACKSIZE=1000000G "$VITMAE" data "$dir/set" --threads 3 > /dev/null 2> "$dir/err"; rc=$?
t "threads that cannot be made: exit 1, one line ($rc: $(tr "\n" "|" < "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: data: cannot start 3 threads: " "$dir/err"'
OMP_STACKSIZE=4M "$VITMAE" data "$dir/set" --threads 3 > /dev/null 2> "$dir/err"; rc=$?
drop_threads_warning "$dir/err"
t "a stack size that fits runs ($rc: $(tr "\n" "|" < "$dir/err"))" '[ $rc -eq 0 ] && [ ! -s "$dir/err" ]'
# A value libgomp cannot read is its own line, said once: vitmae runs itself again to set GOMP_SPINCOUNT
# (src/cmd/main.c), and the second load said each line again (two "Invalid value" lines for one
# variable). With the spin chosen by the user (no run again) it was once already, so the run here
# leaves both spin variables unset (tests/run.sh sets OMP_WAIT_POLICY); messages of the command itself
# still come after it.
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_NUM_THREADS=junk OMP_DYNAMIC=junk "$VITMAE" data "$dir/set" --json > /dev/null 2> "$dir/err"; rc=$?
t "OMP_NUM_THREADS=junk OMP_DYNAMIC=junk: libgomp's line for each, once ($rc: $(grep -c "Invalid value" "$dir/err") lines)" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^libgomp: Invalid value for environment variable OMP_NUM_THREADS" "$dir/err")" -eq 1 ] && [ "$(grep -c "^libgomp: Invalid value for environment variable OMP_DYNAMIC" "$dir/err")" -eq 1 ]'
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_NUM_THREADS=junk "$VITMAE" data "$dir/none" > /dev/null 2> "$dir/err"; rc=$?
t "... and the command's own line after it, on the same stderr ($rc: $(tr "\n" "|" < "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(grep -c "Invalid value" "$dir/err")" -eq 1 ] && grep -q "^vitmae: .*none: " "$dir/err"'
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT VITMAE_REEXEC_STDERR="1:1" "$VITMAE" data "$dir/none" > /dev/null 2> "$dir/err"; rc=$?
t "a VITMAE_REEXEC_STDERR left in the environment changes nothing ($rc: $(cat "$dir/err"))" '[ $rc -eq 1 ] && grep -q "^vitmae: .*none: " "$dir/err"'
# The dynamic loader run by hand (`ld.so ./vitmae ...`): /proc/self/exe is the loader, and the run again
# handed it our arguments as its own: --version printed ld.so's version, a command ended with exit 127
# and ld.so's line lost with the stderr set aside. It runs once, as vitmae.
ldso=$(readelf -l "$VITMAE" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
if [ -x "$ldso" ]; then
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$ldso" "$VITMAE" --version > "$dir/ldso.out" 2> "$dir/err"; rc=$?
  t "$ldso vitmae --version: vitmae's version ($rc: $(head -n 1 "$dir/ldso.out"))" \
    '[ $rc -eq 0 ] && [ "$(head -n 1 "$dir/ldso.out")" = "$("$VITMAE" --version | head -n 1)" ]'
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$ldso" "$VITMAE" data "$dir/none" > /dev/null 2> "$dir/err"; rc=$?
  t "$ldso vitmae data MISSING: the command's exit 1 and line ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 1 ] && grep -q "^vitmae: .*none: " "$dir/err"'
else
  echo "FAILED: no dynamic loader named in $VITMAE (readelf -l, binutils)"; fail=1
fi
# ... and the line names the variables that asked for it: the count came from OMP_NUM_THREADS when no
# --threads was given (the line said "fewer --threads need less" to a user who gave none), the stack
# from OMP_STACKSIZE; with --threads the count is the flag's, and OMP_NUM_THREADS is not blamed.
OMP_NUM_THREADS=3 OMP_STACKSIZE=1000000G "$VITMAE" data "$dir/set" > /dev/null 2> "$dir/err"; rc=$?
t "threads asked for by OMP_NUM_THREADS: the line names it and --threads ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "^vitmae: data: cannot start 3 threads: .*OMP_NUM_THREADS=3 asks for them, --threads T overrides it; a stack of OMP_STACKSIZE=1000000G each; " "$dir/err"'
OMP_NUM_THREADS=3 OMP_STACKSIZE=1000000G "$VITMAE" data "$dir/set" --threads 2 > /dev/null 2> "$dir/err"; rc=$?
t "with --threads 2: that count, OMP_NUM_THREADS not named, OMP_STACKSIZE named ($rc: $(cat "$dir/err"))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: data: cannot start 2 threads: .*a stack of OMP_STACKSIZE=1000000G each; " "$dir/err" && ! grep -q OMP_NUM_THREADS "$dir/err"'

# A file this process lacks the memory to decode (ulimit -v 150 MB; a flat 4096x4096 RGB PNG of 60 KB
# decodes to 200 MB of floats) is not a broken file: one line naming it, exit 1 (it was listed as
# skipped, exit 0, and eval, embed, probe and train went on without it). ASan cannot run under
# ulimit -v: skipped there.
if [ "${VITMAE_SANITIZED:-0}" = 1 ]; then
  echo "note: the ulimit -v check is skipped under the sanitizers (ASan cannot run under ulimit -v)"
else
  mkdir -p "$dir/mem/a" && cp "$dir/set/circle/00000.png" "$dir/mem/a/" && "$VITMAE_TOOLS/mkckpt" png "$dir/mem/a/huge.png" --size 4096 > /dev/null
  (ulimit -v 150000 && exec "$VITMAE" data "$dir/mem" --threads 1) > /dev/null 2> "$dir/err"; rc=$?
  t "data: a file too large for this process's memory: exit 1, one line, not called broken ($rc: $(tr "\n" "|" < "$dir/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -qxF "vitmae: $dir/mem/a/huge.png: image 4096x4096: out of memory for its pixels (201338880 bytes, 192 MiB, under ulimit -v 150000 KB); a --max-pixels below 16777216 skips it" "$dir/err"'
  # A JPEG turned by its EXIF orientation holds its pixels twice while it turns: under ulimit -v 400 MB
  # an 8192x8192 grey one decodes (268 MB of floats) and its turned copy fails; the line said 268435456
  # bytes (then said 0.2 GiB), and a user who raised the limit past that failed again. It counts both now.
  mkdir -p "$dir/memturn" && /usr/bin/python3 -c 'import sys
from PIL import Image
ex = Image.Exif(); ex[0x0112] = 6
Image.new("L", (8192, 8192), 100).save(sys.argv[1], quality=50, exif=ex.tobytes())' "$dir/memturn/huge.jpg"
  # Under 250 MB its pixels fail first: the line said their 268443648 bytes, and a limit raised past
  # them failed at the copy; both limits get the two buffers' bytes.
  for lim in 400000 250000; do
    (ulimit -v $lim && exec "$VITMAE" data "$dir/memturn" --threads 1) > /dev/null 2> "$dir/err"; rc=$?
    t "data: a JPEG turned, under ulimit -v $lim: the bytes of both buffers ($rc: $(tr "\n" "|" < "$dir/err"))" \
      '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -qxF "vitmae: $dir/memturn/huge.jpg: image 8192x8192 (stored 8192x8192, EXIF orientation 6): out of memory for its pixels (536870912 bytes, 512 MiB, under ulimit -v $lim KB); a --max-pixels below 67108864 skips it" "$dir/err"'
  done
  rm -rf "$dir/memturn"
  # A file whose header claims more pixels than its data holds, let through by a raised --max-pixels
  # (a 159-byte grey JPEG whose frame says 65500x65500: 17 GB of floats; ulimit -v makes the allocation
  # fail on any machine): the scan stops with one line naming the file, its size, the bytes its pixels
  # needed and the --max-pixels that skips it. It said "vitmae: DIR: DIR/lie.jpg: out of memory (a
  # limit of this process, such as ulimit -v or ulimit -n, not a broken image)": the folder named
  # twice, nothing of the size. A --max-pixels below its size skips it by name (exit 0).
  mkdir -p "$dir/lie" && cp "$dir/set/circle/00000.png" "$dir/lie/"
  /usr/bin/python3 -c 'import sys; open(sys.argv[1], "wb").write(bytes.fromhex(sys.argv[2]))' "$dir/lie/lie.jpg" \
    ffd8ffe000104a46494600010100000100010000ffdb004300100b0c0e0c0a100e0d0e1211101318281a181616183123251d283a333d3c3933383740485c4e404457453738506d51575f626768673e4d71797064785c656763ffc0000b08ffdcffdc01011100ffc40014000100000000000000000000000000000000ffc40014100100000000000000000000000000000000ffda0008010100003f003fffd9
  (ulimit -v 150000 && exec "$VITMAE" data "$dir/lie" --max-pixels 1000000000000 --threads 1) > /dev/null 2> "$dir/err"; rc=$?
  t "data: a header of 65500x65500 that its pixels cannot be allocated for: exit 1, one line with the size and bytes ($rc: $(tr "\n" "|" < "$dir/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -qxF "vitmae: $dir/lie/lie.jpg: image 65500x65500: out of memory for its pixels (17161065500 bytes, 16.0 GiB, under ulimit -v 150000 KB); a --max-pixels below 4290250000 skips it" "$dir/err"'
  # ... and a WebP whose pixels libwebp cannot allocate (a 38-byte lossless stream of one colour whose
  # header says 16383x16383: 805 MB of RGB): out of memory with its size, not "corrupt or truncated
  # WebP data" (libwebp's simple API gave no status). The bytes are what the decode holds at once: the
  # 805 MB of RGB and the 3.2 GB of floats made from them (it said the RGB's alone).
  mkdir -p "$dir/liew" && cp "$dir/set/circle/00000.png" "$dir/liew/"
  /usr/bin/python3 -c 'import sys; open(sys.argv[1], "wb").write(bytes.fromhex(sys.argv[2]))' "$dir/liew/lie.webp" \
    524946461e000000574542505650384c110000002ffebfff0f0750bc6a15b9ff8188e87f0000
  (ulimit -v 400000 && exec "$VITMAE" data "$dir/liew" --max-pixels 1000000000 --threads 1) > /dev/null 2> "$dir/err"; rc=$?
  t "data: a WebP whose pixels libwebp cannot allocate: exit 1, one line, out of memory with its size ($rc: $(tr "\n" "|" < "$dir/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -qxF "vitmae: $dir/liew/lie.webp: image 16383x16383: out of memory for its pixels (4026040335 bytes, 3.7 GiB, under ulimit -v 400000 KB); a --max-pixels below 268402689 skips it" "$dir/err"'
  "$VITMAE" data "$dir/lie" --max-pixels 4290249999 > "$dir/out" 2> "$dir/err"; rc=$?
  t "data --max-pixels 4290249999: that file skipped, exit 0 ($rc: $(tr "\n" "|" < "$dir/out"))" \
    '[ $rc -eq 0 ] && grep -q ": 1 ok, 1 skipped, 0 ignored$" "$dir/out" && grep -qxF "  $dir/lie/lie.jpg: image 65500x65500 exceeds --max-pixels 4290249999" "$dir/out"'
  # With no limit set, none is named: a PNG whose header says 1000000x1000000 (libpng's largest: 12 TB
  # of floats, more than any machine's memory; unless the kernel is told to overcommit always).
  if [ "$(ulimit -v)" = unlimited ] && [ "$(cat /proc/sys/vm/overcommit_memory 2>/dev/null)" != 1 ]; then
    mkdir -p "$dir/lie2" && /usr/bin/python3 - "$dir/lie2/lie.png" <<'PY'
import struct, sys, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 10**6, 10**6, 8, 2, 0, 0, 0))
                              + chunk(b"IDAT", zlib.compress(b"\0" * 4)) + chunk(b"IEND", b""))
PY
    "$VITMAE" data "$dir/lie2" --max-pixels 1000000000000 > /dev/null 2> "$dir/err"; rc=$?
    t "data: the same without a ulimit names none ($rc: $(tr "\n" "|" < "$dir/err"))" \
      '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -qxF "vitmae: $dir/lie2/lie.png: image 1000000x1000000: out of memory for its pixels (12000003000000 bytes, 11175.9 GiB); a --max-pixels below 1000000000000 skips it" "$dir/err"'
  else
    echo "note: the check without a memory limit is skipped (ulimit -v is $(ulimit -v), vm.overcommit_memory $(cat /proc/sys/vm/overcommit_memory 2>/dev/null))"
  fi
fi
# A hidden class folder (.ipynb_checkpoints, .Trash-1000 at a drive's root) is a class as torchvision's
# ImageFolder makes it: it was listed among the classes with nothing said, and fine-tuning took it as
# one. Now a warning names it, in text and JSON; hidden files inside a class are read and not flagged.
mkdir -p "$dir/hid/a" "$dir/hid/.Trash-1000/files" "$dir/hid/.empty"
cp "$dir/set/circle/00000.png" "$dir/hid/a/x.png"; cp "$dir/set/circle/00000.png" "$dir/hid/a/.y.png"
cp "$dir/set/circle/00000.png" "$dir/hid/.Trash-1000/files/z.png"; printf 'notes' > "$dir/hid/.empty/n.txt"
out=$("$VITMAE" data "$dir/hid" 2>"$dir/err"); rc=$?
t "data of a hidden class folder: exit 0, it is a class, and a warning names it ($rc: $(printf '%s' "$out" | tail -n 1))" \
  '[ $rc -eq 0 ] && printf "%s\n" "$out" | grep -q "^  .Trash-1000  *1$" && printf "%s\n" "$out" | grep -q "^  a  *2$" &&
   [ "$(printf "%s\n" "$out" | grep -c "hidden folder")" -eq 1 ] &&
   printf "%s\n" "$out" | grep -qF "  $dir/hid/.Trash-1000: a hidden folder (its name starts with '"'"'.'"'"') holding images: they train as a class of its own"'
check=$("$VITMAE" data --json "$dir/hid" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
w = [(f["path"].split("/hid/")[1], f["warning"]) for f in d["warnings"] if "same_as" not in f]   # its copies: below
print("ok" if d["classes"] == {".Trash-1000": 1, "a": 2} and len(w) == 1 and w[0][0] == ".Trash-1000"
      and "hidden folder" in w[0][1] else "bad: %r" % d)' 2>&1)
t "data --json of a hidden class folder: one warning, the folder's path ($check)" '[ "$check" = ok ]'
# A class folder that holds no usable image (cat: empty; dog: a file that does not decode) is no class:
# it left the class list without a word while probe and finetune say "(DIR/cat holds no usable image)".
# Now a warning names each, in text and JSON; the hidden .empty above stays unsaid (as probe says them).
mkdir -p "$dir/emp/a" "$dir/emp/cat" "$dir/emp/dog" "$dir/emp/.git"
cp "$dir/set/circle/00000.png" "$dir/emp/a/x.png"; printf 'not a png' > "$dir/emp/dog/d.png"
out=$("$VITMAE" data "$dir/emp" 2>"$dir/err"); rc=$?
t "data of an empty class folder: exit 0, one warning line for each ($rc: $(printf '%s' "$out" | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && printf "%s\n" "$out" | grep -q "^classes (1):$" &&
   [ "$(printf "%s\n" "$out" | grep -c "holds no usable image")" -eq 2 ] &&
   [ "$(printf "%s\n" "$out" | tail -n 2)" = "  $dir/emp/cat: holds no usable image: not a class
  $dir/emp/dog: holds no usable image: not a class" ]'
check=$("$VITMAE" data --json "$dir/emp" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
w = [(f["path"].split("/emp/")[1], f["warning"]) for f in d["warnings"]]
print("ok" if d["classes"] == {"a": 1} and w == [("cat", "holds no usable image: not a class"),
      ("dog", "holds no usable image: not a class")] else "bad: %r" % d)' 2>&1)
t "data --json of an empty class folder: a warning each, the folder's path ($check)" '[ "$check" = ok ]'
# The class list pads names to 24 columns of characters: "%-24s" padded bytes, so a name of accents
# (ünï: 5 bytes, 3 characters) ended its count 2 columns short of its neighbours'; an escaped
# character (a tab, \t) takes its escape's 2 columns.
# A wide character (日) takes two columns in a terminal, a combining mark (e + U+0301) none (wcwidth).
mkdir -p "$dir/pad/ünï" "$dir/pad/c" "$dir/pad/a	b" "$dir/pad/日本" "$dir/pad/é"
for c in ünï c "a	b" 日本 é; do cp "$dir/set/circle/00000.png" "$dir/pad/$c/x.png"; done
out=$("$VITMAE" data "$dir/pad" 2>/dev/null); rc=$?
t "data: class names padded by the columns they take ($rc: $(printf '%s' "$out" | grep -A5 "^classes" | tr '\n\t' '|^'))" \
  '[ $rc -eq 0 ] && [ "$(printf "%s\n" "$out" | grep -A5 "^classes (5):$" | tail -n 5)" = "  a\\tb                     1
  c                        1
  é                        1
  ünï                      1
  日本                     1" ]'
# A file of another format under an image's name is named by its first bytes, as data names a .gif by
# its name: every such file said only "not a PNG, JPEG or WebP file". A text file that begins "BM" is
# no BMP (its reserved bytes are not zero).
mkdir -p "$dir/fmt/a"
cp "$dir/set/circle/00000.png" "$dir/fmt/a/ok.png"
printf 'GIF89a\001\000\001\000\000\000\000;' > "$dir/fmt/a/g.png"
printf 'II*\000\010\000\000\000\000\000' > "$dir/fmt/a/t.jpg"
printf 'BM\076\000\000\000\000\000\000\000\066\000' > "$dir/fmt/a/b.png"
printf '\000\000\000\030ftypheic\000\000\000\000' > "$dir/fmt/a/h.jpg"
printf '\000\000\000\034ftypavif\000\000\000\000' > "$dir/fmt/a/v.webp"
printf 'BM is a text, not a bitmap\n' > "$dir/fmt/a/x.png"
out=$("$VITMAE" data "$dir/fmt" 2>/dev/null); rc=$?
t "data: another format under an image's name, named by its bytes ($rc: $(printf '%s' "$out" | sed -n '/^skipped/,/^[a-z]/p' | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && [ "$(printf "%s\n" "$out" | sed -n "/^skipped:$/,/^[a-z]/p" | grep "^  ")" = "  $dir/fmt/a/b.png: a BMP file: BMP is not read; convert it to PNG
  $dir/fmt/a/g.png: a GIF file: GIF is not read; convert it to PNG
  $dir/fmt/a/h.jpg: a HEIC file: HEIC is not read; convert it to JPEG
  $dir/fmt/a/t.jpg: a TIFF file: TIFF is not read; convert it to PNG
  $dir/fmt/a/v.webp: an AVIF file: AVIF is not read; convert it to JPEG or WebP
  $dir/fmt/a/x.png: not a PNG, JPEG or WebP file" ]'
# A PNG header past libpng's own limit of 1,000,000 pixels a side was refused as libpng's "Invalid IHDR
# data": a 2^31-1 square before --max-pixels could name its size, and a 1,000,001 x 1 image that PIL
# reads. The format's limit stands; --max-pixels refuses by size.
mkdir -p "$dir/ihdr/a"
python3 - "$dir/ihdr/a" <<'PY'
import struct, sys, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
def png(path, w, h, rows):
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
png(sys.argv[1] + "/huge.png", 2**31 - 1, 2**31 - 1, bytes(100))
png(sys.argv[1] + "/wide.png", 1000001, 1, b"\0" + bytes(i % 251 for i in range(1000001)))
PY
out=$("$VITMAE" data "$dir/ihdr" 2>/dev/null); rc=$?
t "data: a PNG header of 2^31-1 a side refused by --max-pixels, one of 1000001 x 1 read ($rc: $(printf '%s' "$out" | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && printf "%s\n" "$out" | grep -qx "  $dir/ihdr/a/huge.png: image 2147483647x2147483647 exceeds --max-pixels 67108864" &&
   printf "%s\n" "$out" | grep -qx "sizes: width 1000001 to 1000001, height 1 to 1, all greyscale"'
# A link beside the class folders to one of them (zzz -> cat) or to the folder itself (self -> .) holds
# images: the scan enters the folder once, under its class, and counts the link among the folders met
# again. data said "lnk/zzz: holds no usable image: not a class" of each (and probe's and finetune's
# notes could name one). Only the folder that holds nothing (none) is said.
mkdir -p "$dir/lnk/cat" "$dir/lnk/dog" "$dir/lnk/none"
cp "$dir/set/circle/00000.png" "$dir/lnk/cat/x.png"; cp "$dir/set/square/00001.png" "$dir/lnk/dog/y.png"
ln -s cat "$dir/lnk/zzz"; ln -s . "$dir/lnk/self"
out=$("$VITMAE" data "$dir/lnk" 2>"$dir/err"); rc=$?
t "data: a link to a class folder or to DIR is no folder without images ($rc: $(printf '%s' "$out" | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && printf "%s\n" "$out" | grep -q "^classes (2):$" &&
   printf "%s\n" "$out" | grep -qx "folders ignored (met again through a link, searched once): 2" &&
   [ "$(printf "%s\n" "$out" | grep "holds no usable image")" = "  $dir/lnk/none: holds no usable image: not a class" ]'
# A link that sorts before the folder it names (a_kitty -> cat) took the class: its images were counted
# under "a_kitty" and "cat" was said to hold no usable image. The folder claims its class before any
# link to it, so the images keep the name of the folder they sit in (docs/interface.md, section 2).
ln -s cat "$dir/lnk/a_kitty"
check=$("$VITMAE" data --json "$dir/lnk" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
w = [f["path"].split("/lnk/")[1] for f in d["warnings"]]
print("ok" if d["classes"] == {"cat": 1, "dog": 1} and w == ["none"] and d["ignored"] == 3 else "bad: %r" % d)' 2>&1)
t "data: a class folder keeps its name beside a link to it that sorts first ($check)" '[ "$check" = ok ]'
# A link into a class's sub-folder, beside the classes (a_sub, z_sub -> cat/inner) or below another
# class (ant/y -> ../cat/inner): a_sub and z_sub took cat/inner's image as a class "a_sub" (both were
# claimed before cat was entered; cat kept 1 image), and ant/y took it for ant, entered before cat;
# z_sub was then said to hold no usable image (a second look at the folder, by device and inode, that
# knew only links to a class's folder itself). Every image now keeps the class of the folder it sits
# in, the links are folders met again (the scan's own mark says so), and none is said to hold nothing.
mkdir -p "$dir/sub/cat/inner" "$dir/sub/ant"
cp "$dir/set/circle/00000.png" "$dir/sub/cat/x.png"; cp "$dir/set/square/00001.png" "$dir/sub/cat/inner/y.png"
cp "$dir/set/circle/00003.png" "$dir/sub/ant/z.png"
ln -s cat/inner "$dir/sub/a_sub"; ln -s cat/inner "$dir/sub/z_sub"; ln -s ../cat/inner "$dir/sub/ant/y"
check=$("$VITMAE" data --json "$dir/sub" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print("ok" if d["classes"] == {"ant": 1, "cat": 2} and d["warnings"] == [] and d["ignored"] == 3 else "bad: %r" % d)' 2>&1)
t "data: links into a class's sub-folder, beside the classes or below another, leave its images to the class ($check)" \
  '[ "$check" = ok ]'
"$VITMAE_TOOLS/mkckpt" ckpt "$dir/sub.safetensors" --img 16 --patch 4 --channels 3 > /dev/null 2>&1 || { echo "FAILED: mkckpt sub"; fail=1; }
"$VITMAE" embed --ckpt "$dir/sub.safetensors" --out "$dir/sub.npy" "$dir/sub" > /dev/null 2>&1
t "embed: the image below cat/inner is cat's, once ($(tr '\t\n' ' |' < "$dir/sub.txt"))" \
  '[ "$(cut -f 2 "$dir/sub.txt" | tr "\n" " ")" = "ant cat cat " ] && [ "$(grep -c "/cat/inner/y.png	cat$" "$dir/sub.txt")" -eq 1 ]'
# Only the class folder that really holds no image is said, here by probe's note on a folder of one
# class: z_sub (a link into cat) was named before, the first unused folder by name after cat.
rm -rf "$dir/sub/ant"; mkdir -p "$dir/sub/zz_none"
out=$("$VITMAE" probe --ckpt "$dir/sub.safetensors" --train "$dir/sub" --test "$dir/sub" 2>&1); rc=$?
t "probe of one class beside links into it: the note names the empty folder, not a link ($rc: $(printf '%s' "$out" | tail -n 1))" \
  '[ $rc -eq 2 ] && printf "%s\n" "$out" | grep -qF "a probe needs at least 2 class folders ($dir/sub/zz_none holds no usable image)"'
# A link that leads nowhere, here a class folder on a drive not mounted (dog -> .../usb/dog), was counted
# among "other files ignored (not images, only counted)": the class left every command without a word.
# It is listed as skipped with why, as a link to nothing named like an image is; a hidden one (.#x, an
# editor's lock) stays only counted.
mkdir -p "$dir/dl/cat"; cp "$dir/set/circle/00000.png" "$dir/dl/cat/x.png"
ln -s "$dir/usb/dog" "$dir/dl/dog"; ln -s "$dir/usb/lock" "$dir/dl/cat/.#lock"
out=$("$VITMAE" data "$dir/dl" 2>"$dir/err"); rc=$?
t "data: a link to nothing that may be a folder is skipped, with its target ($rc: $(printf '%s' "$out" | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && printf "%s\n" "$out" | grep -qx "$dir/dl: 1 ok, 1 skipped, 1 ignored" &&
   printf "%s\n" "$out" | grep -qx "  $dir/dl/dog: a symbolic link to $dir/usb/dog, which does not exist"'
# The same link given as the folder itself (data DIR, train --data, probe --train): named so, as embed
# and reconstruct name it as an INPUT, where it said "No such file or directory" (exit 1 each).
"$VITMAE" data "$dir/dl/dog" > /dev/null 2> "$dir/err1"; r1=$?
"$VITMAE" train --data "$dir/dl/dog" --steps 1 > /dev/null 2> "$dir/err2"; r2=$?
"$VITMAE" probe --train "$dir/dl/dog" --test "$dir/dl" --pixels --img 16 > /dev/null 2> "$dir/err3"; r3=$?
want="vitmae: $dir/dl/dog: a symbolic link to $dir/usb/dog, which does not exist"
t "a link to nothing as DIR of data, train --data, probe --train: its target named ($r1 $r2 $r3: $(cat "$dir/err1" "$dir/err2" "$dir/err3" | tr "\n" "|"))" \
  '[ $r1 -eq 1 ] && [ $r2 -eq 1 ] && [ $r3 -eq 1 ] && [ "$(cat "$dir/err1")" = "$want" ] && [ "$(cat "$dir/err2")" = "$want" ] && [ "$(cat "$dir/err3")" = "$want" ]'
# A folder that can be listed but not searched (read without execute permission: `chmod -R 644 photos`
# leaves every folder so) names files that cannot be opened. Its sub-folders were counted as "other
# files ignored (not images, only counted)", their images left out without a word, and such a DIR said
# "0 ok, 0 skipped, 2 ignored". It is a folder not read, listed as skipped with why (DIR: an error).
chmod 755 "$dir"; mkdir -p "$dir/perm/a" "$dir/perm/b/sub"
cp "$dir/set/circle/00000.png" "$dir/perm/a/x.png"; cp "$dir/set/circle/00000.png" "$dir/perm/b/sub/y.png"
cp "$dir/set/circle/00000.png" "$dir/perm/b/z.png"; chmod 644 "$dir/perm/b"
if as_user_can "$dir/perm/a/x.png"; then
  out=$(as_user "$VITMAE" data "$dir/perm" 2>"$dir/err"); rc=$?
  t "data: a folder without execute permission is skipped, with why ($rc: $(printf '%s' "$out" | tr '\n' '|'))" \
    '[ $rc -eq 0 ] && printf "%s\n" "$out" | grep -qx "$dir/perm: 1 ok, 1 skipped, 0 ignored" &&
     printf "%s\n" "$out" | grep -qx "  $dir/perm/b: cannot read folder: Permission denied"'
  # ... and not also warned about as a folder that "holds no usable image: not a class": what it holds
  # is not known.
  t "data: the folder not read is no 'holds no usable image' warning" '! printf "%s\n" "$out" | grep -q "perm/b.*holds no usable image"'
  chmod 644 "$dir/perm"
  out=$(as_user "$VITMAE" data "$dir/perm" 2>"$dir/err"); rc=$?
  t "data: a DIR without execute permission is an error, not a folder of other files ($rc: $(cat "$dir/err"))" \
    '[ $rc -eq 1 ] && [ -z "$out" ] && [ "$(cat "$dir/err")" = "vitmae: $dir/perm: Permission denied" ]'
  chmod 755 "$dir/perm" "$dir/perm/b"
else
  chmod 755 "$dir/perm/b"; echo "note: the check of a folder without execute permission skipped (no ordinary user can read the test's files)"
fi
# Files with the same bytes (a photo copied twice: it trains twice, and train's split can hold out one
# copy while the other trains) were not said. Now one warning line gives how many images are copies of
# an earlier one and the first with the file it copies; two different files of one size and one CRC-32
# are no copies (PNGs stored without compression, so that their size depends on the pixel count alone,
# each followed by the little-endian CRC-32 of its bytes, which a decoder leaves unread past IEND and
# which makes every file's CRC-32 zlib's residue 0x2144df1c).
mkdir -p "$dir/cop/a" "$dir/cop/b" "$dir/same"
/usr/bin/python3 - "$dir/cop/a/p.png" "$dir/cop/b/q.png" "$dir/same/p.png" "$dir/same/q.png" <<'PY'
import struct, sys, zlib
def png(path, shade):
    raw = b"".join(b"\0" + bytes((shade + x * 9 + y * 5) % 256 for x in range(8)) for y in range(8))
    def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    b = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 0, 0, 0, 0))
         + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b""))
    open(path, "wb").write(b + struct.pack("<I", zlib.crc32(b)))
for k, path in enumerate(sys.argv[1:]): png(path, 40 * (k % 2))
PY
cp "$dir/set/circle/00000.png" "$dir/cop/a/x.png"; cp "$dir/cop/a/x.png" "$dir/cop/b/y.png"; cp "$dir/cop/a/x.png" "$dir/cop/b/z.png"
crc() { /usr/bin/python3 -c 'import sys, zlib; print(zlib.crc32(open(sys.argv[1], "rb").read()))' "$1"; }
t "setup: p.png and q.png differ, of one size and one CRC-32" \
  '! cmp -s "$dir/same/p.png" "$dir/same/q.png" && [ $(wc -c < "$dir/same/p.png") -eq $(wc -c < "$dir/same/q.png") ] && [ "$(crc "$dir/same/p.png")" = "$(crc "$dir/same/q.png")" ]'
copy_why="(a copy trains twice, and train's --val-frac can hold one out while the other trains)"
out=$("$VITMAE" data --threads 2 "$dir/cop" 2>"$dir/err"); rc=$?
t "data of a folder with copies: exit 0, one warning line, the first copy, the file it copies and the count ($rc: $(printf '%s' "$out" | tail -n 2 | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && [ ! -s "$dir/err" ] && [ "$(printf "%s\n" "$out" | tail -n 2)" = "warnings:
  $dir/cop/b/y.png: the same bytes as $dir/cop/a/x.png; 2 images are copies of an earlier one $copy_why" ]'
check=$("$VITMAE" data --json "$dir/cop" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
w = [(f["path"].split("/cop/")[1], f["same_as"].split("/cop/")[1], f["copies"]) for f in d["warnings"]]
print("ok" if d["ok"] == 5 and w == [("b/y.png", "a/x.png", 2)] and "the same bytes as" in d["warnings"][0]["warning"] else "bad: %r" % d)' 2>&1)
t "data --json of it: one warning, with same_as and copies ($check)" '[ "$check" = ok ]'
cp "$dir/cop/a/x.png" "$dir/cop/b/r.png"
out=$("$VITMAE" data "$dir/cop" 2>/dev/null)
t "a copy that comes first in scan order is the one said ($(printf '%s' "$out" | tail -n 1))" \
  'printf "%s\n" "$out" | tail -n 1 | grep -qF "  $dir/cop/b/r.png: the same bytes as $dir/cop/a/x.png; 3 images are copies of"'
# A symbolic link beside its target (onefile/a/b.png -> z.png, the link first in scan order) trains twice
# as a copy does, but "z.png: the same bytes as b.png" sent a user to delete z.png, the file the link
# leads to: the line says one file, and which name is the link; a hard link says so.
mkdir -p "$dir/onefile/a" && cp "$dir/set/circle/00000.png" "$dir/onefile/a/z.png" && ln -s z.png "$dir/onefile/a/b.png"
out=$("$VITMAE" data "$dir/onefile" 2>/dev/null)
t "a link beside its target: one file, the link named ($(printf '%s' "$out" | tail -n 1))" \
  'printf "%s\n" "$out" | tail -n 1 | grep -qxF "  $dir/onefile/a/b.png: the same file as $dir/onefile/a/z.png (a symbolic link to it); 1 image is a copy of an earlier one $copy_why"'
# ... and --json's path is the link (a script removing "path" removed the file the link leads to).
check=$("$VITMAE" data --json "$dir/onefile" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
w = json.load(sys.stdin)["warnings"]
print("ok" if [(x["path"].split("/onefile/")[1], x["same_as"].split("/onefile/")[1]) for x in w] == [("a/b.png", "a/z.png")] else "bad: %r" % w)' 2>&1)
t "data --json of a link beside its target: path the link, same_as the file ($check)" '[ "$check" = ok ]'
rm "$dir/onefile/a/b.png" && ln "$dir/onefile/a/z.png" "$dir/onefile/a/h.png"
out=$("$VITMAE" data "$dir/onefile" 2>/dev/null)
t "a hard link: one file ($(printf '%s' "$out" | tail -n 1))" \
  'printf "%s\n" "$out" | tail -n 1 | grep -qxF "  $dir/onefile/a/z.png: the same file as $dir/onefile/a/h.png (a hard link); 1 image is a copy of an earlier one $copy_why"'
out=$("$VITMAE" data "$dir/same" 2>"$dir/err"); rc=$?
t "data of two different files of one size: no warning ($rc: $(printf '%s' "$out" | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && printf "%s\n" "$out" | head -n 1 | grep -q ": 2 ok, " && ! printf "%s\n" "$out" | grep -q "warning\|same bytes"'
cp "$dir/same/p.png" "$dir/same/p2.png"
out=$("$VITMAE" data "$dir/same" 2>/dev/null)
t "... and with a copy of one of them: the copy and its file, not the other ($(printf '%s' "$out" | tail -n 1))" \
  '[ "$(printf "%s\n" "$out" | tail -n 1)" = "  $dir/same/p2.png: the same bytes as $dir/same/p.png; 1 image is a copy of an earlier one $copy_why" ]'
# Every file that shared its size with another was read whole to be compared, so a folder of same-size
# files was read twice over. Now the first 64 KiB of each (its first piece) is read first, and the rest
# only of files whose first pieces agree (docs/data.md). PNGs followed by over 1 MiB that the decoder
# leaves unread past IEND: in piece/, files that differ only past the first piece (at its first byte
# after it, or at the last) are no copies and a copy of one is one; in heads/, four files of one size
# whose first pieces differ must cost the command less than half a file each over the scan's own
# reading of them (the bytes it read, rchar of /proc/self/io, which holds a reaped child's too).
mkdir -p "$dir/piece" "$dir/heads"
/usr/bin/python3 - "$dir/piece" "$dir/heads" <<'PY'
import struct, sys, zlib
raw = b"".join(b"\0" + bytes((x * 9 + y * 5) % 256 for x in range(8)) for y in range(8))
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 0, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b""))
size = (1 << 20) + 4096
tail = bytearray(size - len(png))
def write(path, b): open(path, "wb").write(b)
x = png + bytes(tail)
write(sys.argv[1] + "/x.png", x)
write(sys.argv[1] + "/z.png", x)   # a copy of x.png
write(sys.argv[1] + "/w.png", x[:-1] + b"\1")   # x.png but its last byte
write(sys.argv[1] + "/y.png", x[:65536] + b"\1" + x[65537:])   # x.png but the first byte past its first piece
for k in range(4): write("%s/%d.png" % (sys.argv[2], k), png + bytes([k + 1]) * len(tail))
PY
out=$("$VITMAE" data --threads 2 "$dir/piece" 2>"$dir/err"); rc=$?
t "data of same-size files that differ only past their first 64 KiB, and a copy: the copy alone ($rc: $(printf '%s' "$out" | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && [ ! -s "$dir/err" ] && printf "%s\n" "$out" | head -n 1 | grep -q ": 4 ok, " && [ "$(printf "%s\n" "$out" | tail -n 2)" = "warnings:
  $dir/piece/z.png: the same bytes as $dir/piece/x.png; 1 image is a copy of an earlier one $copy_why" ]'
check=$(/usr/bin/python3 - "$VITMAE" "$dir/heads" <<'PY' 2>&1
import os, subprocess, sys
def rchar():
    for line in open("/proc/self/io"):
        if line.startswith("rchar:"): return int(line.split()[1])
if not os.path.exists("/proc/self/io"): print("no /proc/self/io"); sys.exit()
folder = sys.argv[2]
files = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
before = rchar()
r = subprocess.run([sys.argv[1], "data", "--threads", "2", folder], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
read = rchar() - before
ok = r.returncode == 0 and b"same bytes" not in r.stdout and read < files * 3 // 2
print("ok" if ok else "bad: read %d bytes of %d bytes of files; exit %d: %r" % (read, files, r.returncode, r.stdout[-300:]))
PY
)
[ "$check" = "no /proc/self/io" ] && echo "note: the bytes that data reads not counted (no /proc/self/io)" && check=ok
t "data of four same-size files whose first 64 KiB differ reads only their first 64 KiB again ($check)" '[ "$check" = ok ]'
# The buffer each thread reads into was 64 KiB of its stack; now it is one allocation for all, and
# when it cannot be had the command says so (--threads 3: 3 x 64 KiB, a size nothing else asks for).
# Under ASan the shim comes before the sanitizer's runtime, as tests/cli_fault.sh allows it.
ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0" FAULT_OWN=1 FAULT_MIN=196608 FAULT_MAX=196608 FAULT_FUNC=malloc FAULT_N=1 LD_PRELOAD="$VITMAE_TOOLS/fault.so" \
  "$VITMAE" data --threads 3 "$dir/heads" >"$dir/out" 2>"$dir/err"; rc=$?
drop_threads_warning "$dir/err"
t "data whose read buffers cannot be allocated: exit 1, one line ($rc: $(tr '\n' '|' < "$dir/err"))" \
  '[ $rc -eq 1 ] && [ ! -s "$dir/out" ] && [ "$(cat "$dir/err")" = "vitmae: data: out of memory" ]'
# Hidden files inside the classes, as a folder copied from a Mac holds them: a ._NAME beside every
# image (AppleDouble: the picture's metadata under its name, junk bytes to a decoder) and .DS_Store.
# They are read as any other file, as ImageFolder reads them (docs/interface.md, section 2): the
# ._NAME.png that fail are one line, how many and the first (they were a line each, 20 lines and a
# count on train's stderr, the cause never said), .DS_Store is counted among the other files, and a
# hidden file that is an image still counts.
mkdir -p "$dir/mac/a" "$dir/mac/b"
for c in a b; do
  for k in 1 2 3; do cp "$dir/set/circle/00000.png" "$dir/mac/$c/$k.png"; head -c 4096 /dev/urandom > "$dir/mac/$c/._$k.png"; done
  head -c 6148 /dev/zero > "$dir/mac/$c/.DS_Store"
done
cp "$dir/set/circle/00000.png" "$dir/mac/a/.kept.png"
out=$("$VITMAE" data "$dir/mac" 2>"$dir/err"); rc=$?
hidden_line="  6 hidden files (names starting with '.', as the ._NAME files macOS writes beside copies) that do not decode; the first: $dir/mac/a/._1.png: not a PNG, JPEG or WebP file"
t "data of a folder copied from a Mac: the ._NAME files one line, .DS_Store counted ($rc: $(printf '%s' "$out" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && printf "%s\n" "$out" | head -n 1 | grep -q ": 7 ok, 6 skipped, 2 ignored$" &&
   [ "$(printf "%s\n" "$out" | grep -c "\._")" -eq 1 ] && printf "%s\n" "$out" | grep -qxF "$hidden_line" &&
   printf "%s\n" "$out" | grep -qx "other files ignored (not images, only counted): 2" && [ ! -s "$dir/err" ]'
n=$("$VITMAE" data --json "$dir/mac" 2>/dev/null | /usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)["skipped_files"]))' 2>&1)
t "data --json of it: every skipped file listed ($n)" '[ "$n" = 6 ]'
"$VITMAE" train --data "$dir/mac" --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 \
  --batch 4 --steps 1 --val-frac 0 --threads 1 --out "$dir/macrun" > /dev/null 2> "$dir/err"; rc=$?
t "train on it: the ._NAME files one warning line ($rc: $(grep "\._" "$dir/err" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "\._" "$dir/err")" -eq 1 ] && grep -qxF "vitmae: warning: skipped ${hidden_line#  }" "$dir/err"'

rm -rf "$dir"
[ $fail -eq 0 ] && echo "cli data ok"
exit $fail
