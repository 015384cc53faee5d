#!/bin/sh
# The streaming data pipeline (docs/data.md): bitwise the same run for any --prefetch,
# --loader-threads, --cache-mb and with or without the on-disk store (built by one run, read by the
# next); a file broken past its header is skipped the same way every time and reported; --val DIR;
# the warning for a tiny validation split; sample panels of images that are not flat; the
# pixel statistics within their pixel budget (start-up decodes 16 of 20 large photos); a big WebP's
# working image made without its full-size floats.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch dir
export XDG_CACHE_HOME="$dir/xdg"
cd "$dir" || exit 1
"$VITMAE_TOOLS/synth" "$dir/data" --count 48 --size 24 --seed 2 >/dev/null || { echo "synth failed"; exit 1; }
"$VITMAE_TOOLS/synth" "$dir/val" --count 12 --size 24 --seed 4 >/dev/null
# One file broken past its header: the scan reads headers only, so it is found while training.
f=$(ls "$dir"/data/circle/*.png | head -n 1)
head -c 80 "$f" > "$dir/cut.png" && mv "$dir/cut.png" "$f"
# $small holds out --val-frac of --data; $base, for runs given --val DIR (the two together are refused).
base="--data $dir/data --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 8 --steps 8 --eval-every 4"
small="$base --val-frac 0.2"

run() { name=$1; shift; "$VITMAE" train $small --out "$dir/$name" "$@" > "$dir/$name.log" 2> "$dir/$name.err"; }
run ref --threads 2; rc=$?
t "reference run exits 0 ($(head -c 300 "$dir/ref.err"))" '[ $rc -eq 0 ]'
t "the broken file is reported once" '[ $(grep -c "skipped .*circle/.*found while \(training\|validating\)" "$dir/ref.err") -eq 1 ]'
variants="p5 store1 store2"
[ "${VITMAE_SANITIZED:-0}" = 1 ] || variants="p1 p5 nocache store1 store2"   # fewer runs under ASan
case " $variants " in *" p1 "*) run p1 --threads 1 --prefetch 1 --loader-threads 1;; esac
run p5 --threads 2 --prefetch 5 --loader-threads 3
case " $variants " in *" nocache "*) run nocache --threads 2 --cache-mb 0 --store none;; esac
run store1 --threads 2 --cache-mb 0 --store "$dir/store"
run store2 --threads 1 --cache-mb 0 --store "$dir/store" --prefetch 3
for v in $variants; do
  t "$v: bitwise the same weights as the reference" 'same_weights "$dir/ref/checkpoint.safetensors" "$dir/$v/checkpoint.safetensors"'
  t "$v: the broken file reported" 'grep -q "skipped .*circle/.*found while" "$dir/$v.err"'
done
# --store auto (the default) in a cache folder that cannot be made: one warning line, no store, the
# same run.
: > "$dir/afile"
XDG_CACHE_HOME="$dir/afile/x" run autobad --threads 2 --cache-mb 0; rc=$?
t "--store auto, no usable folder: exit 0, one warning line" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^vitmae: --store auto: .*afile/x: Not a directory; going on without a store" "$dir/autobad.err")" -eq 1 ]'
t "--store auto, no usable folder: bitwise the same weights" 'same_weights "$dir/ref/checkpoint.safetensors" "$dir/autobad/checkpoint.safetensors"'
"$VITMAE" train $small --store "$dir/afile" --out "$dir/storefile" > /dev/null 2> "$dir/storefile.err"; rc=$?
t "--store on a file: exit 1, one line, no run folder left" \
  '[ $rc -eq 1 ] && [ "$(grep -c . "$dir/storefile.err")" -eq 1 ] && grep -q "^vitmae: train --store: " "$dir/storefile.err" && [ ! -e "$dir/storefile" ]'
# A store folder whose path leaves no room for its files' names under the 4096-byte limit (4075 bytes):
# taken, and never written to (each image decoded again, not a word): now refused in one line, exit 1,
# the folders made for it removed; --store auto there goes on without a store, said.
lp="$dir/lp"; while [ ${#lp} -lt 3800 ]; do lp="$lp/$(printf 'y%.0s' $(seq 200))"; done
lp="$lp/$(printf 'w%.0s' $(seq $((4075 - ${#lp} - 1))))"
"$VITMAE" train $small --store "$lp" --out "$dir/storelong" > /dev/null 2> "$dir/storelong.err"; rc=$?
t "--store of a 4075-byte path: exit 1, one line, nothing made ($rc: $(tail -c 160 "$dir/storelong.err"))" \
  '[ $rc -eq 1 ] && [ "$(grep -c . "$dir/storelong.err")" -eq 1 ] && grep -q "^vitmae: train --store: .*: a store folder whose path is 4075 bytes is too long: the names of its files would pass the 4096-byte path limit (at most [0-9]* bytes)$" "$dir/storelong.err" && [ ! -e "$dir/lp" ] && [ ! -e "$dir/storelong" ]'
XDG_CACHE_HOME="$lp" run autolong --threads 2 --cache-mb 0; rc=$?
t "--store auto under such a path: exit 0, said, no store ($rc)" \
  '[ $rc -eq 0 ] && grep -q "^vitmae: --store auto: .*is too long: the names of its files would pass the 4096-byte path limit.*; going on without a store" "$dir/autolong.err" && grep -q "0 read from the store (0 written)" "$dir/autolong.log"'
# The store's folder is made as every folder vitmae makes (cmd/output.h; data/dataset.c kept a copy of
# its own): a --store longer than a path can be was cut to 4095 bytes, that shorter path's 20 folders
# made, and the run refused with "<the cut path>: not a writable folder", the folders left behind.
long=$(/usr/bin/python3 -c 'print("/".join(["s" * 200] * 24))')
"$VITMAE" train $small --cache-mb 0 --store "$long" --out "$dir/storelong" > /dev/null 2> "$dir/storelong.err"; rc=$?
t "--store longer than a path: exit 1, one line, no folder made ($rc: $(cut -c 1-80 "$dir/storelong.err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$dir/storelong.err")" = "vitmae: train --store: path too long" ] && [ ! -e "$dir/storelong" ] && [ ! -e "$dir/$(printf "%200s" | tr " " s)" ]'
# A --store whose last name is too long for the system (300 bytes): the folder above it, which the run
# made, was left behind, empty (mkdir -p without undo). Now: one line, no folder of the run's left.
"$VITMAE" train $small --cache-mb 0 --store "$dir/stnew/$(printf "%300s" | tr " " n)" --out "$dir/stname" > /dev/null 2> "$dir/stname.err"; rc=$?
t "--store of a name too long: exit 1, one line, no folder left ($rc: $(cut -c 1-80 "$dir/stname.err"); $(ls -d "$dir/stnew" "$dir/stname" 2>/dev/null))" \
  '[ $rc -eq 1 ] && [ "$(grep -c . "$dir/stname.err")" -eq 1 ] && grep -q "^vitmae: train --store: .*: File name too long$" "$dir/stname.err" && [ ! -e "$dir/stnew" ] && [ ! -e "$dir/stname" ]'
# An append-only --store (chattr +a) passed as writable: every run left one temporary per working image
# in it that it could not rename or remove, stored nothing, exit 0, without a word. Refused before the
# run now, as an append-only --out is; only the named probe file stays.
mkdir -p "$dir/stappend"
if chattr +a "$dir/stappend" 2> /dev/null; then
  "$VITMAE" train $small --cache-mb 0 --store "$dir/stappend" --out "$dir/stapp" > /dev/null 2> "$dir/stapp.err"; rc=$?
  left=$(ls -A "$dir/stappend" | tr "\n" " ")
  chattr -a "$dir/stappend"
  t "an append-only --store: exit 1, one line, no run folder, only the probe left ($rc: $(cat "$dir/stapp.err"); $left)" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/stapp.err")" -eq 1 ] &&
     grep -q "^vitmae: train --store: $dir/stappend: cannot write in this folder: it takes new files but lets none be removed or renamed (an append-only folder: lsattr -d shows .a.), and outputs are published by renaming; the probe file $dir/stappend/.vitmae-write-test-[A-Za-z0-9]* stays in it$" "$dir/stapp.err" &&
     [ ! -e "$dir/stapp" ] && [ "$(echo $left | wc -w)" -eq 1 ]'
else
  echo "note: chattr +a is not available on this file system: the append-only --store check is skipped"
fi
rm -rf "$dir/stappend"
# An immutable --store (chattr +i) said only "DIR: not a writable folder", where an immutable --out
# names the attribute and the way off it (io/files.h, file_folder_reason): the same reason now.
mkdir -p "$dir/stimm"
if chattr +i "$dir/stimm" 2> /dev/null; then
  "$VITMAE" train $small --cache-mb 0 --store "$dir/stimm" --out "$dir/stimmrun" > /dev/null 2> "$dir/stimm.err"; rc=$?
  left=$(ls -A "$dir/stimm" | tr "\n" " ")
  chattr -i "$dir/stimm"
  t "an immutable --store: exit 1, one line naming the attribute and chattr -i, no run folder ($rc: $(cat "$dir/stimm.err"); $left)" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/stimm.err")" -eq 1 ] && [ -z "$left" ] && [ ! -e "$dir/stimmrun" ] &&
     grep -qx "vitmae: train --store: $dir/stimm: cannot write in this folder: Operation not permitted (an immutable folder: lsattr -d shows .i.; chattr -i $dir/stimm lifts it)" "$dir/stimm.err"'
else
  echo "note: chattr +i is not available on this file system: the immutable --store check is skipped"
fi
rm -rf "$dir/stimm"
t "first store run decodes and writes working images" 'grep -q "working images: [1-9][0-9]* decoded, [0-9]* read from the store ([1-9]" "$dir/store1.log"'
t "second store run reads them back, decodes nothing" 'grep -q "working images: 0 decoded, [1-9][0-9]* read from the store" "$dir/store2.log"'
t "the store holds files" '[ $(ls "$dir/store" | grep -c "\.work$") -ge 40 ]'
# A file edited in place with its size and modification time kept (exiftool -P rotating a photo does
# so): the store's key was (path, size, mtime, working size), so the store gave back the old working
# image, and the weights with --store differed from those without. The key holds the file's inode and
# status-change time too (ctime: set by any write, never by touch -r). repng FILE FLIP: FILE's pixels
# written again at zlib level 0, whose size depends on the pixels' count alone, with FLIP bytes of
# its middle row inverted (0: as they are).
repng() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import struct, sys, zlib
path, flip = sys.argv[1], int(sys.argv[2])
b = open(path, "rb").read()
pos, chunks = 8, []
while pos < len(b):
    n, kind = struct.unpack(">I4s", b[pos:pos + 8])
    chunks.append((kind, b[pos + 8:pos + 8 + n]))
    pos += 12 + n
w, h = struct.unpack(">II", chunks[0][1][:8])
raw = bytearray(zlib.decompress(b"".join(d for k, d in chunks if k == b"IDAT")))
row = len(raw) // h
mid = (h // 2) * row
for i in range(1, 1 + flip): raw[mid + i] ^= 0xFF
def chunk(kind, data): return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
out = b[:8] + chunk(b"IHDR", chunks[0][1]) + chunk(b"IDAT", zlib.compress(bytes(raw), 0)) + chunk(b"IEND", b"")
open(path, "wb").write(out)
PY
}
cp -r "$dir/data" "$dir/edit"
ef=$(ls "$dir"/edit/square/*.png | head -n 1)
repng "$ef" 0
ed="--data $dir/edit --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 8 --steps 4 --val-frac 0 --threads 2 --cache-mb 0"
"$VITMAE" train $ed --store "$dir/estore" --out "$dir/e1" > /dev/null 2>&1
size1=$(wc -c < "$ef"); touch -r "$ef" "$dir/estamp"
repng "$ef" 30; touch -r "$dir/estamp" "$ef"
"$VITMAE" train $ed --store "$dir/estore" --out "$dir/e2" > "$dir/e2.log" 2>&1; rc=$?
"$VITMAE" train $ed --store none --out "$dir/e3" > /dev/null 2>&1; rc3=$?
t "a file edited with its size and mtime kept: the store decodes it again, the weights are those without a store ($rc $rc3; size $size1 -> $(wc -c < "$ef"), mtime kept: $([ "$ef" -nt "$dir/estamp" ] || [ "$ef" -ot "$dir/estamp" ] && echo no || echo yes); $(grep "^working images" "$dir/e2.log"))" \
  '[ $rc -eq 0 ] && [ $rc3 -eq 0 ] && [ "$(wc -c < "$ef")" -eq "$size1" ] && same_weights "$dir/e2/checkpoint.safetensors" "$dir/e3/checkpoint.safetensors" &&
   ! same_weights "$dir/e1/checkpoint.safetensors" "$dir/e3/checkpoint.safetensors"'
# A store whose disk is short of --store-min-free (docs/data.md, "Cache, store and prefetch";
# VITMAE_FAULT_FREE_BYTES gives the disk's free space): nothing is written there, one line says so and
# the end line counts them; the run is the same. The floor's edge: 1 MiB free beside a floor of 1 MB
# leaves no room for a file, 1.1 MB does; --store-min-free 0 writes whatever the disk has.
runfree() { free=$1; name=$2; shift 2
  VITMAE_FAULT_FREE_BYTES=$free "$VITMAE" train $small --out "$dir/$name" --threads 2 --cache-mb 0 --store "$dir/st$name" \
    --log-every 4 "$@" > "$dir/$name.log" 2> "$dir/$name.err"; }
runfree 1000000 stfull; rc=$?
t "store on a disk below --store-min-free: exit 0, nothing stored ($rc: $(ls "$dir/ststfull" | head -n 2))" \
  '[ $rc -eq 0 ] && [ -d "$dir/ststfull" ] && [ -z "$(ls -A "$dir/ststfull")" ]'
t "store on a disk below --store-min-free: the end line counts the images not written ($(grep "^working images" "$dir/stfull.log"))" \
  'grep -q "^working images: [1-9][0-9]* decoded, 0 read from the store (0 written, [1-9][0-9]* not: its disk at --store-min-free)" "$dir/stfull.log"'
t "store on a disk below --store-min-free: one line says so, naming the store and the floor" \
  '[ "$(grep -c "^the disk of the store /.*/ststfull has less than --store-min-free 2048 MB free: working images are no longer written there ([1-9][0-9]* left out so far)" "$dir/stfull.log")" -eq 1 ]'
t "store on a disk below --store-min-free: bitwise the same weights" 'same_weights "$dir/ref/checkpoint.safetensors" "$dir/stfull/checkpoint.safetensors"'
# ... its line names the store with control characters written out, as every path: a store named with a
# newline split the line in two (and --store auto's "keeping them in the store DIR" alike).
nl='
'
VITMAE_FAULT_FREE_BYTES=1000000 "$VITMAE" train $small --out "$dir/stnl" --threads 2 --cache-mb 0 --store "$dir/st${nl}nl" \
  --log-every 4 > "$dir/stnl.log" 2> "$dir/stnl.err"; rc=$?
t "a store named with a newline: its --store-min-free line one line, the newline written \\n ($rc: $(grep -c "^the disk of the store" "$dir/stnl.log"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^the disk of the store" "$dir/stnl.log")" -eq 1 ] && grep -qF "the disk of the store $dir/st\\nnl has less than --store-min-free" "$dir/stnl.log"'
XDG_CACHE_HOME="$dir/x${nl}dg" "$VITMAE" train $small --out "$dir/autonl" --threads 2 --cache-mb 0 > "$dir/autonl.log" 2>&1; rc=$?
t "--store auto under a cache folder named with a newline: its line one line ($rc: $(grep "keeping them in the store" "$dir/autonl.log" | head -c 200))" \
  '[ $rc -eq 0 ] && grep -qF "keeping them in the store $dir/x\\ndg/vitmae/work" "$dir/autonl.log"'
runfree 1048576 stedge0 --store-min-free 1; rc0=$?
runfree 1100000 stedge1 --store-min-free 1; rc1=$?
runfree 1000 stoff --store-min-free 0; rc2=$?
t "--store-min-free 1 at 1 MiB free: nothing stored ($rc0: $(grep "^working images" "$dir/stedge0.log"))" \
  '[ $rc0 -eq 0 ] && [ -z "$(ls -A "$dir/ststedge0")" ] && grep -q "(0 written, [1-9][0-9]* not: its disk at --store-min-free)" "$dir/stedge0.log"'
t "--store-min-free 1 at 1.1 MB free: every image stored ($rc1: $(grep "^working images" "$dir/stedge1.log"))" \
  '[ $rc1 -eq 0 ] && [ $(ls "$dir/ststedge1" | grep -c "\.work$") -ge 40 ] && grep -q "read from the store ([1-9][0-9]* written)," "$dir/stedge1.log" && ! grep -q "store-min-free" "$dir/stedge1.log"'
t "--store-min-free 0 at 1000 bytes free: every image stored ($rc2: $(grep "^working images" "$dir/stoff.log"))" \
  '[ $rc2 -eq 0 ] && [ $(ls "$dir/ststoff" | grep -c "\.work$") -ge 40 ] && ! grep -q "store-min-free" "$dir/stoff.log"'
# Store files that are FIFOs (or anything but a regular file) are misses, decoded again and
# rewritten: opening a FIFO used to block the run for ever (SIGTERM could not end it either).
cp -r "$dir/store" "$dir/fifostore"
for f in "$dir"/fifostore/*.work; do rm -f "$f" && mkfifo "$f"; done
timeout -s KILL 30 "$VITMAE" train $small --out "$dir/fifo" --threads 2 --cache-mb 0 --store "$dir/fifostore" > "$dir/fifo.log" 2> "$dir/fifo.err"; rc=$?
t "store files that are FIFOs: exit 0, no hang (rc $rc)" '[ $rc -eq 0 ]'
t "store files that are FIFOs: bitwise the same weights" 'same_weights "$dir/ref/checkpoint.safetensors" "$dir/fifo/checkpoint.safetensors"'
t "store files that are FIFOs: rewritten as files" '[ -z "$(find "$dir/fifostore" -type p)" ] && grep -q "working images: [1-9][0-9]* decoded" "$dir/fifo.log"'
# ... and without XDG_CACHE_HOME and HOME it went on without a store silently (docs/data.md: one line).
(unset HOME XDG_CACHE_HOME; run nohome --threads 2 --cache-mb 0); rc=$?
t "--store auto, neither XDG_CACHE_HOME nor HOME: exit 0, one warning line ($rc: $(grep -c "store" "$dir/nohome.err"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^vitmae: --store auto: neither XDG_CACHE_HOME nor HOME is set; going on without a store" "$dir/nohome.err")" -eq 1 ]'
# A relative XDG_CACHE_HOME (or HOME) made the store in the working directory (`XDG_CACHE_HOME=cache`:
# ./cache/vitmae/work, a new store wherever a run starts); the XDG spec says such a value is ignored:
# HOME's .cache then, and with HOME relative too, no store, one line.
mkdir -p "$dir/cwd" "$dir/home"
(cd "$dir/cwd" && XDG_CACHE_HOME=relcache HOME="$dir/home" run relxdg --threads 2 --cache-mb 0); rc=$?
t "--store auto, XDG_CACHE_HOME relative: the store in HOME/.cache, nothing in the working directory ($rc: $(ls "$dir/cwd" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ -d "$dir/home/.cache/vitmae/work" ] && [ -z "$(ls -A "$dir/cwd")" ]'
(cd "$dir/cwd" && XDG_CACHE_HOME=relcache HOME=relhome run relboth --threads 2 --cache-mb 0); rc=$?
t "--store auto, both relative: no store, one line, nothing in the working directory ($rc: $(ls "$dir/cwd" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^vitmae: --store auto: neither XDG_CACHE_HOME nor HOME is an absolute path; going on without a store" "$dir/relboth.err")" -eq 1 ] && [ -z "$(ls -A "$dir/cwd")" ] && same_weights "$dir/ref/checkpoint.safetensors" "$dir/relboth/checkpoint.safetensors"'
# A store folder is made 0777 less the umask, as every folder vitmae makes (it was 0755: a group's
# store under umask 002 did not take the group's files).
(umask 002; run umask002 --threads 2 --cache-mb 0 --store "$dir/gstore/work"); rc=$?
t "--store folders under umask 002: 775 ($rc: $(stat -c %a "$dir/gstore" "$dir/gstore/work" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(stat -c %a "$dir/gstore")" = 775 ] && [ "$(stat -c %a "$dir/gstore/work")" = 775 ]'
# --cache-mb 0 with --store auto keeps the store under XDG_CACHE_HOME, never elsewhere.
run auto --threads 2 --cache-mb 0
t "--store auto with no cache: the store in XDG_CACHE_HOME" '[ -d "$dir/xdg/vitmae/work" ] && same_weights "$dir/ref/checkpoint.safetensors" "$dir/auto/checkpoint.safetensors"'
# --store auto weighs every image of --data, the held-out ones too, which share the cache (first come, step
# 0's validation first): 500 images of 3 KB working images at --val-frac 0.5, --cache-mb 1, whose training
# half (0.7 MB) fits alone. Weighed alone it went without a store, and the held-out half filled the cache:
# 818 decodes for 500 images in 2 steps; now the store is made and each image decoded once.
"$VITMAE_TOOLS/synth" "$dir/vsplit" --count 500 --size 40 --seed 3 >/dev/null
XDG_CACHE_HOME="$dir/xdgsplit" "$VITMAE" train --data "$dir/vsplit" --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 \
  --dec-depth 1 --dec-heads 2 --batch 8 --steps 2 --val-frac 0.5 --cache-mb 1 --threads 2 --out "$dir/vsplitrun" > "$dir/vsplit.log" 2>&1; rc=$?
t "--store auto counts the held-out images too: the store made, each image decoded once ($rc: $(grep "^working images" "$dir/vsplit.log" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && grep -q "^working images need 1\.[0-9]* MB, more than --cache-mb 1: keeping them in the store $dir/xdgsplit/vitmae/work$" "$dir/vsplit.log" &&
   grep -q "^working images: 500 decoded, [0-9]* read from the store (500 written)" "$dir/vsplit.log"'
# The line that says so gives a small set's size in MB with two digits ("need 0 MB, more than --cache-mb 0").
t "--store auto with no cache: the need said in two digits below 10 MB ($(grep "^working images need" "$dir/auto.log"))" \
  'grep -q "^working images need 0\.0[1-9]* MB, more than --cache-mb 0: keeping them in the store $dir/xdg/vitmae/work$" "$dir/auto.log"'
# A disk that cannot hold them above --store-min-free: the line says how much of them it can
# (VITMAE_FAULT_FREE_BYTES gives the disk's free space), of a store that holds none of them yet.
XDG_CACHE_HOME="$dir/xdgcold" VITMAE_FAULT_FREE_BYTES=1000000 "$VITMAE" train $small --out "$dir/autofull" --threads 2 --cache-mb 0 > "$dir/autofull.log" 2>&1; rc=$?
t "--store auto on a disk below --store-min-free: the line says so ($rc: $(grep "^working images need" "$dir/autofull.log"))" \
  '[ $rc -eq 0 ] && grep -q "^working images need 0\.0[1-9]* MB, more than --cache-mb 0: keeping them in the store $dir/xdgcold/vitmae/work, whose disk has 1 MB free: room for about 0% of them above --store-min-free 2048 MB, the others decoded again each epoch$" "$dir/autofull.log"'
XDG_CACHE_HOME="$dir/xdgcold" VITMAE_FAULT_FREE_BYTES=2147503648 "$VITMAE" train $small --out "$dir/autopart" --threads 2 --cache-mb 0 > "$dir/autopart.log" 2>&1; rc=$?
t "--store auto on a disk with room for some above --store-min-free: the share said ($rc: $(grep "^working images need" "$dir/autopart.log"))" \
  '[ $rc -eq 0 ] && grep -q "^working images need .*, whose disk has 2048 MB free: room for about [1-9][0-9]\{0,1\}% of them above --store-min-free 2048 MB" "$dir/autopart.log"'
"$VITMAE" train $small --out "$dir/autoroom" --threads 2 --cache-mb 0 --store-min-free 1 > "$dir/autoroom.log" 2>&1; rc=$?
t "--store auto on a disk with room: the line as before ($rc: $(grep "^working images need" "$dir/autoroom.log"))" \
  '[ $rc -eq 0 ] && grep -q "^working images need 0\.0[1-9]* MB, more than --cache-mb 0: keeping them in the store $dir/xdg/vitmae/work$" "$dir/autoroom.log"'
# What the store holds already needs no room: a second run over images all stored, on a disk below
# --store-min-free, said "room for about 0% of them ..., the others decoded again each epoch" and then
# read every one from the store. Now no clause; a store holding part of them says the room for the
# rest. And --store-min-free 0 dropped the clause on a disk that cannot hold them (then wrote what fit).
# 12 clean images (no broken file, which is never stored), a cache folder of their own.
warm="--data $dir/val --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 4 --steps 3 --val-frac 0 --threads 2 --cache-mb 0"
runwarm() { free=$1; name=$2; shift 2
  XDG_CACHE_HOME="$dir/xdgwarm" VITMAE_FAULT_FREE_BYTES=$free "$VITMAE" train $warm --out "$dir/$name" "$@" > "$dir/$name.log" 2>&1; }
runwarm 10000 warm0 --store-min-free 0; rc0=$?
runwarm 1000000 warm1; rc1=$?
t "--store-min-free 0 on a disk short of the working images: the share said, without a floor ($rc0: $(grep "^working images need" "$dir/warm0.log"))" \
  '[ $rc0 -eq 0 ] && grep -q "^working images need 0\.0[1-9]* MB, more than --cache-mb 0: keeping them in the store $dir/xdgwarm/vitmae/work, whose disk has 0\.0095 MB free: room for about [1-9][0-9]\{0,1\}% of them, the others decoded again each epoch$" "$dir/warm0.log"'
t "--store auto on a disk below --store-min-free, every image stored already: no share said ($rc1: $(grep "^working images" "$dir/warm1.log" | tr "\n" " "))" \
  '[ $rc1 -eq 0 ] && grep -q "^working images need 0\.0[1-9]* MB, more than --cache-mb 0: keeping them in the store $dir/xdgwarm/vitmae/work$" "$dir/warm1.log" &&
   grep -q "^working images: 0 decoded, [1-9][0-9]* read from the store" "$dir/warm1.log"'
rm -f $(ls "$dir"/xdgwarm/vitmae/work/*.work | head -n 6)
runwarm 1000000 warm2; rc2=$?
t "--store auto on a disk below --store-min-free, half the images stored: the room for the rest said ($rc2: $(grep "^working images need" "$dir/warm2.log"))" \
  '[ $rc2 -eq 0 ] && grep -q "^working images need 0\.0[1-9]* MB, more than --cache-mb 0: keeping them in the store $dir/xdgwarm/vitmae/work, which holds about [1-9][0-9]% of them already, on a disk with 1 MB free: room for about 0% of the rest above --store-min-free 2048 MB, the others decoded again each epoch$" "$dir/warm2.log"'
# A refused run says nothing of the store: the line came before the run folder was made, on stdout
# beside the refusal's one line on stderr (train and finetune; docs/interface.md, section 5).
"$VITMAE" train $small --threads 2 --cache-mb 0 --out "$dir/afile" > "$dir/autoref.log" 2> "$dir/autoref.err"; rc=$?
t "--store auto, --out a plain file: exit 1, one line on stderr, nothing on stdout ($(cat "$dir/autoref.log" "$dir/autoref.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/autoref.err")" -eq 1 ] && [ ! -s "$dir/autoref.log" ]'
XDG_CACHE_HOME="$dir/afile/x" "$VITMAE" train $small --threads 2 --cache-mb 0 --out "$dir/afile" > "$dir/autoref2.log" 2> "$dir/autoref2.err"; rc=$?
t "--store auto with no usable folder, --out a plain file: exit 1, the refusal alone ($(cat "$dir/autoref2.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/autoref2.err")" -eq 1 ] && ! grep -q "store" "$dir/autoref2.err"'

# Start-up does not decode every photo (docs/interface.md, "Pixel normalisation"): 20 JPEGs of
# 4096 x 4096 (16.8 million pixels each by their headers; a flat colour each, so they decode in a
# moment at 1/8 scale) pass 200 million pixels, so the statistics decode 16 of them, the least
# allowed; the same run with --pixel-norm imagenet (no statistics) decodes 16 images fewer.
mkdir -p "$dir/large/a"
/usr/bin/python3 -c '
import sys
from PIL import Image
for i in range(20): Image.new("RGB", (4096, 4096), (10 * i, 100, 200 - 5 * i)).save("%s/%02d.jpg" % (sys.argv[1], i), quality=20)' "$dir/large/a"
decoded() { sed -n 's/^working images: \([0-9]*\) decoded, .*/\1/p' "$1"; }
for norm in dataset imagenet; do
  "$VITMAE" train $base --data "$dir/large" --val-frac 0 --steps 1 --batch 4 --cache-mb 0 --store none --pixel-norm $norm \
    --threads 2 --out "$dir/large-$norm" > "$dir/large-$norm.log" 2>&1
done
d1=$(decoded "$dir/large-dataset.log"); d0=$(decoded "$dir/large-imagenet.log")
t "20 large photos: the pixel statistics decode 16 of them (decoded ${d1:-?} with them, ${d0:-?} without)" \
  '[ -n "$d1" ] && [ -n "$d0" ] && [ $((d1 - d0)) -eq 16 ]'
# --val DIR: every --data image trains, the val folder validates; config.json says so.
"$VITMAE" train $base --val "$dir/val" --threads 2 --out "$dir/v" > "$dir/v.log" 2>&1; rc=$?
t "--val exits 0" '[ $rc -eq 0 ]'
t "--val: 12 val images, 48 train" 'grep -q "\"val_images\":[[:space:]]*12" "$dir/v/config.json" && grep -q "\"train_images\":[[:space:]]*48" "$dir/v/config.json"'
t "--val: validation rows" '[ $(awk -F, "NR > 1 && \$5 != \"\"" "$dir/v/metrics.csv" | wc -l) -ge 2 ]'
# The files the --val folder's scan skipped were never said (finetune said both folders'): "N val from
# DIR" counted fewer images than `vitmae data DIR`, without a word; a --val of broken files only said
# "no usable image for --val (1 skipped, 0 ignored)" naming none. Said as --data's, after them.
mkdir -p "$dir/valskip/zz" "$dir/valnone" && cp -r "$dir"/val/* "$dir/valskip/"
printf 'not a png' > "$dir/valskip/zz/notes.png"; printf 'not a png' > "$dir/valnone/x.png"
"$VITMAE" train $base --val "$dir/valskip" --steps 1 --threads 2 --out "$dir/vskip" > /dev/null 2> "$dir/vskip.err"; rc=$?
t "--val: its scan's skipped files said, after --data's ($rc: $(grep -v "found while" "$dir/vskip.err" | head -c 300))" \
  '[ $rc -eq 0 ] && [ "$(grep -v "found while" "$dir/vskip.err" | grep "^vitmae: skipped ")" = "vitmae: skipped $dir/valskip/zz/notes.png: not a PNG, JPEG or WebP file" ]'
"$VITMAE" train $base --val "$dir/valnone" --steps 1 --threads 2 --out "$dir/vnone" > /dev/null 2> "$dir/vnone.err"; rc=$?
t "--val of broken files only: each said, then the refusal ($rc: $(head -c 300 "$dir/vnone.err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$dir/vnone.err")" = "vitmae: skipped $dir/valnone/x.png: not a PNG, JPEG or WebP file
vitmae: $dir/valnone: no usable image for --val (1 skipped, 0 ignored)" ]'
# A tiny held-out split warns.
"$VITMAE" train $small --val-frac 0.05 --steps 2 --threads 2 --out "$dir/tiny" > /dev/null 2> "$dir/tiny.err"
t "tiny split warns with the count" 'grep -q "warning: only [0-9] validation image.*pass --val DIR" "$dir/tiny.err"'
# Sample panels show validation images that are not one flat colour (docs/data.md, "Validation"): a
# --val folder whose first 8 images (a/, scanned first) are flat greys, then the 12 shapes. The rows
# are tried at places spread over the split, 4 of them flat: each of the first 4 rows (128 px
# panels at --img 16, one every 132 px under the 64 px of title and captions) must show a shape.
mkdir -p "$dir/flatval/a" && cp -r "$dir"/val/* "$dir/flatval/"
/usr/bin/python3 -c '
import sys
from PIL import Image
for i in range(8): Image.new("RGB", (24, 24), (30 * i, 30 * i, 30 * i)).save("%s/%d.png" % (sys.argv[1], i))' "$dir/flatval/a"
"$VITMAE" train $base --val "$dir/flatval" --steps 1 --threads 2 --out "$dir/flat" > /dev/null 2>&1; rc=$?
spreads=""
for k in 0 1 2 3; do
  y=$((64 + 132 * k)); spreads="$spreads $(ink "$dir/flat/samples/step-1.png" 0 128 "$y" $((y + 128)) "$dir/sheet.npy")"
done
t "--val with flat images: the samples' rows show shapes (spread of each row's original:$spreads)" \
  '[ $rc -eq 0 ] && echo "$spreads" | awk "{ for (i = 1; i <= 4; i++) if (!(\$i > 0.1)) exit 1 }"'
# ... but only once the run starts: a refusal on the same data stays one line.
"$VITMAE" train $small --val-frac 0.05 --steps 2 --accum 8 --threads 2 --out "$dir/tiny2" > /dev/null 2> "$dir/tiny2.err"; rc=$?
t "a refusal on a tiny split: exit 2, one line ($(head -n 1 "$dir/tiny2.err"))" '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/tiny2.err")" -eq 1 ]'
# A small folder whose every image falls in the held-out part (keys 6874, 2237, 7988 < 9000 at
# --val-frac 0.9): the one with the largest key trains (docs/interface.md, "Validation split"); it
# was refused with "no training image left".
mkdir -p "$dir/held/a"
i=0; for f in $(ls "$dir"/val/*/*.png | head -n 3); do cp "$f" "$dir/held/a/$i.png"; i=$((i + 1)); done
"$VITMAE" train $small --data "$dir/held" --val-frac 0.9 --steps 1 --threads 2 --out "$dir/held.run" > /dev/null 2> "$dir/held.err"; rc=$?
t "every image held out at --val-frac 0.9: exit 0 ($(head -n 1 "$dir/held.err"))" '[ $rc -eq 0 ]'
t "every image held out: the small split's warning asks for no --val-frac above the largest ($(cat "$dir/held.err"))" \
  'grep -q "warning: only 2 validation images (--val-frac 0.9 of 3): .*; pass --val DIR$" "$dir/held.err"'
t "every image held out: a/2.png (the largest key) trains, 2 validate" \
  'grep -q "\"train_images\":[[:space:]]*1," "$dir/held.run/config.json" && grep -q "\"val_images\":[[:space:]]*2," "$dir/held.run/config.json"'
# A folder of one image keeps it for training whatever --val-frac asks: the split held nothing out and
# the run had no validation without a word (a split of 1 to 7 is warned about).
mkdir -p "$dir/one/a" && cp "$dir/held/a/0.png" "$dir/one/a/"
"$VITMAE" train $small --data "$dir/one" --val-frac 0.5 --steps 1 --threads 2 --out "$dir/one.run" > /dev/null 2> "$dir/one.err"; rc=$?
t "--val-frac 0.5 of one image: exit 0, one warning that it holds none out ($(cat "$dir/one.err"))" \
  '[ $rc -eq 0 ] && grep -qxF "vitmae: warning: --val-frac 0.5 of 1 image holds none out: the run has no validation, its metrics.csv'"'"'s validation columns stay empty; pass --val DIR" "$dir/one.err" &&
   grep -q "\"val_images\":[[:space:]]*0," "$dir/one.run/config.json"'
"$VITMAE" train $small --data "$dir/one" --val-frac 0 --steps 1 --threads 2 --out "$dir/one0.run" > /dev/null 2> "$dir/one0.err"; rc=$?
t "--val-frac 0 of one image: asked for no validation, no such warning" '[ $rc -eq 0 ] && ! grep -q "holds none out" "$dir/one0.err"'
# Of two images one always trains: a larger --val-frac cannot hold out 2, and was offered at 0.5.
cp "$dir/held/a/1.png" "$dir/one/a/"
"$VITMAE" train $small --data "$dir/one" --val-frac 0.5 --steps 1 --threads 2 --out "$dir/two.run" > /dev/null 2> "$dir/two.err"; rc=$?
t "--val-frac 0.5 of two images: the small split's warning offers --val DIR alone ($(grep "only" "$dir/two.err"))" \
  '[ $rc -eq 0 ] && grep -qxF "vitmae: warning: only 1 validation image (--val-frac 0.5 of 2): the validation loss will be noisy; pass --val DIR" "$dir/two.err"' 
# An image less than half --img on its shorter side (a 5x5 icon at --img 16) is enlarged more than twice in
# every view: one line says how many and names the smallest (docs/data.md, "Working images"); train
# said nothing. 24x24 images at --img 16 (the run above) are not worth it.
mkdir -p "$dir/icons/a" && cp "$dir"/held/a/*.png "$dir/icons/a/" && "$VITMAE_TOOLS/mkckpt" png "$dir/icons/a/icon.png" --size 5 > /dev/null
"$VITMAE" train $small --data "$dir/icons" --val-frac 0.5 --steps 1 --threads 2 --out "$dir/icons.run" > /dev/null 2> "$dir/icons.err"; rc=$?
t "an image under half --img: exit 0, one line with the count and the smallest ($(grep "less than half" "$dir/icons.err"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "less than half" "$dir/icons.err")" -eq 1 ] && grep -qxF "vitmae: warning: 1 image of $dir/icons is less than half --img 16 on the shorter side (the smallest 5x5, $dir/icons/a/icon.png): every view enlarges it more than twice, blurred" "$dir/icons.err"'
t "images of 24 at --img 16: no such line" '! grep -q "less than half" "$dir/held.err"'
# Two images of one shortest side: the one of fewer pixels is the smallest (a 3x40 strip, first in the
# scan, was named "the smallest" beside a 3x3 image).
mkdir -p "$dir/strips/a" && cp "$dir"/held/a/*.png "$dir/strips/a/"
/usr/bin/python3 -c 'import sys; from PIL import Image; Image.new("RGB", (3, 40), (9, 90, 9)).save(sys.argv[1]); Image.new("RGB", (3, 3), (90, 9, 9)).save(sys.argv[2])' \
  "$dir/strips/a/0strip.png" "$dir/strips/a/1dot.png"
"$VITMAE" train $small --data "$dir/strips" --val-frac 0.5 --steps 1 --threads 2 --out "$dir/strips.run" > /dev/null 2> "$dir/strips.err"; rc=$?
t "a 3x40 strip and a 3x3 image: the 3x3 named the smallest ($rc: $(grep "less than half" "$dir/strips.err"))" \
  '[ $rc -eq 0 ] && grep -qxF "vitmae: warning: 2 images of $dir/strips are less than half --img 16 on the shorter side (the smallest 3x3, $dir/strips/a/1dot.png): every view enlarges them more than twice, blurred" "$dir/strips.err"'
# --val the --data folder itself (warned of as such): the same line was said twice, once per set.
"$VITMAE" train $base --data "$dir/icons" --val "$dir/icons" --steps 1 --threads 2 --out "$dir/icons.run2" > /dev/null 2> "$dir/icons2.err"; rc=$?
t "--val the --data folder: the small-image line once ($rc: $(grep -c "less than half" "$dir/icons2.err"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "less than half" "$dir/icons2.err")" -eq 1 ]'
# ... and so on a folder with a file the scan skips: a refused flag, or a run folder that holds a run,
# is one line (the skipped lines came first), and a run that starts still names the file.
mkdir -p "$dir/skipdata/a" && cp "$dir"/val/*/*.png "$dir/skipdata/a/" && printf 'not an image' > "$dir/skipdata/a/junk.png"
for f in "--img 7" "--batch 3 --groups 2" "--out $dir/tiny"; do
  "$VITMAE" train $small --data "$dir/skipdata" --steps 1 --threads 2 --out "$dir/skip1" $f > /dev/null 2> "$dir/skip1.err"; rc=$?
  t "a skipped file, then a refusal ($f): exit 2, one line ($(head -n 1 "$dir/skip1.err"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$dir/skip1.err")" -eq 1 ] && [ ! -e "$dir/skip1" ]'
done
# ... and so is a run folder that cannot be made (a plain file as --out, a folder under it, a name longer
# than the system takes): exit 1, its one line, the skipped lines held back until the folder is made
# (docs/interface.md, section 5, "Checked first"; they came first).
for f in "$dir/afile" "$dir/afile/run" "$dir/$(printf '%0256d' 0)"; do
  "$VITMAE" train $small --data "$dir/skipdata" --steps 1 --threads 2 --out "$f" > /dev/null 2> "$dir/skip1.err"; rc=$?
  t "a skipped file, then an --out that cannot be made (${f#$dir/}): exit 1, one line ($(head -n 1 "$dir/skip1.err" | head -c 120))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/skip1.err")" -eq 1 ] && grep -q "^vitmae: train --out: " "$dir/skip1.err"'
done
"$VITMAE" train $small --data "$dir/skipdata" --steps 1 --threads 2 --out "$dir/skip2" > /dev/null 2> "$dir/skip2.err"; rc=$?
t "a skipped file, a run that starts: exit 0, the file named" '[ $rc -eq 0 ] && grep -q "^vitmae: skipped .*skipdata/a/junk.png: " "$dir/skip2.err"'
# A batch none of whose files decodes (every file broken past its header, found while training) stops
# the run: exit 1 and one line that says why, with the threads as a team or as workers (whose groups
# once reported the failure with an empty reason).
"$VITMAE_TOOLS/synth" "$dir/broken" --count 8 --size 16 --seed 5 >/dev/null
for f in $(find "$dir/broken" -name "*.png"); do head -c 80 "$f" > "$dir/cut.png" && mv "$dir/cut.png" "$f"; done
for p in kernels groups; do
  "$VITMAE" train --data "$dir/broken" --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 \
    --dec-heads 2 --batch 8 --steps 2 --val-frac 0 --pixel-norm none --threads 2 --parallel $p --out "$dir/b$p" \
    > /dev/null 2> "$dir/b$p.err"; rc=$?
  t "no image of a batch decodes, --parallel $p: exit 1, one error line with the file and the reason ($(tail -n 1 "$dir/b$p.err" | head -c 200))" \
    '[ $rc -eq 1 ] && [ "$(grep -v "^vitmae: skipped " "$dir/b$p.err" | grep -c .)" -eq 1 ] && tail -n 1 "$dir/b$p.err" | grep -q "^vitmae: .*broken/[a-z]*/[^/]*\.png: [a-zA-Z].*; no image of its batch decodes to take its place (all 8 are broken)$" && [ ! -e "$dir/b$p/checkpoint.safetensors" ]'
  t "--parallel $p: each broken file reported once before it, no replacement claimed" \
    '[ "$(grep "^vitmae: skipped .*(found while training)$" "$dir/b$p.err" | sort -u | wc -l)" -eq 8 ] && ! grep -q "takes its place)" "$dir/b$p.err"'
done
# At --batch 1 the line said "its batch has no other image to take its place" right below the file's
# "replaced by another image of its batch": now what to do, and the skipped line of a file found as the
# run stops claims no replacement.
"$VITMAE" train --data "$dir/broken" --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 \
  --dec-heads 2 --batch 1 --steps 2 --val-frac 0 --pixel-norm none --threads 2 --out "$dir/b1" > /dev/null 2> "$dir/b1.err"; rc=$?
t "a broken file at --batch 1: exit 1, the last line says what to do ($(tail -n 1 "$dir/b1.err" | head -c 200))" \
  '[ $rc -eq 1 ] && tail -n 1 "$dir/b1.err" | grep -q "^vitmae: .*broken/[a-z]*/[^/]*\.png: [a-zA-Z].*; a batch of one image has no other to take its place: remove the file, or train with a --batch of 2 or more$" &&
   grep -q "^vitmae: skipped .*(found while training; at --batch 1 no other image can take its place: the step that draws it stops the run)$" "$dir/b1.err" && ! grep -q "takes its place" "$dir/b1.err"'
# ... and files the pixel statistics found broken, in a --batch 1 run whose steps never draw them: they
# were said to be replaced by "an image of its batch", which a batch of one has not.
"$VITMAE_TOOLS/synth" "$dir/b1s" --count 32 --size 16 --seed 3 >/dev/null
head -c 80 "$dir/b1s/circle/$(ls "$dir/b1s/circle" | sed -n 1p)" > "$dir/b1s/circle/zz1.png"
head -c 80 "$dir/b1s/circle/$(ls "$dir/b1s/circle" | sed -n 2p)" > "$dir/b1s/circle/zz2.png"
"$VITMAE" train --data "$dir/b1s" --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 \
  --dec-heads 2 --batch 1 --steps 3 --val-frac 0 --threads 2 --out "$dir/b1sr" > /dev/null 2> "$dir/b1s.err"; rc=$?
t "broken files found before the steps at --batch 1: exit 0, each said as one no image can replace ($rc: $(head -n 1 "$dir/b1s.err"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "(found while training; at --batch 1 no other image can take its place: the step that draws it stops the run)$" "$dir/b1s.err")" -eq 2 ]'
rm -rf "$dir/b1s" "$dir/b1sr"
# ... and resumed: the run keeps its --batch (--batch 2 is refused), so "train with a --batch of 2 or
# more" could not be followed; the way on is a new run from the weights, which starts. The file, found as
# the resumed step stops (the pixel statistics are the run's, not measured again), was said as "(found
# while training)" alone.
"$VITMAE_TOOLS/synth" "$dir/b1r" --count 6 --size 16 --seed 7 >/dev/null
head -c 80 "$dir/b1r/circle/$(ls "$dir/b1r/circle" | sed -n 1p)" > "$dir/b1r/circle/zz.png"
b1r="--img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --val-frac 0 --threads 2"
"$VITMAE" train --data "$dir/b1r" $b1r --batch 1 --steps 20 --ckpt-every 1 --out "$dir/b1rr" > /dev/null 2>&1; rc=$?
"$VITMAE" train --resume "$dir/b1rr" --threads 2 > /dev/null 2> "$dir/b1rr.err"; rc2=$?
t "a --batch 1 run stopped by a broken file, resumed: exit 1, the file said with the --batch 1 wording, a way on a resumed run can take ($rc, $rc2: $(tr "\n" "|" < "$dir/b1rr.err" | head -c 400))" \
  '[ $rc -eq 1 ] && [ $rc2 -eq 1 ] && [ "$(wc -l < "$dir/b1rr.err")" -eq 2 ] &&
   head -n 1 "$dir/b1rr.err" | grep -q "^vitmae: skipped .*/b1r/circle/zz\.png: [a-zA-Z].* (found while training; at --batch 1 no other image can take its place: the step that draws it stops the run)$" &&
   tail -n 1 "$dir/b1rr.err" | grep -q "^vitmae: .*/b1r/circle/zz\.png: [a-zA-Z].*; a batch of one image has no other to take its place: remove the file and continue with --resume .*/b1rr (its checkpoint holds step [1-9][0-9]*), or start a new run from these weights with --init CHECKPOINT and a --batch of 2 or more (a resumed run keeps its --batch)$"'
"$VITMAE" train --init "$dir/b1rr" --data "$dir/b1r" $b1r --batch 2 --steps 2 --out "$dir/b1rn" > /dev/null 2> "$dir/b1rn.err"; rc=$?
t "... and the way on: --init the run with --batch 2 trains ($rc: $(head -c 300 "$dir/b1rn.err"))" '[ $rc -eq 0 ]'
rm -rf "$dir/b1r" "$dir/b1rr" "$dir/b1rn"
# The same stop in a run with no checkpoint since its steps (docs/data.md, "Training reads lazily"): it
# saved nothing, so "remove the file" lost every step, and the same command run again was refused (the
# folder holds a run stopped before its first checkpoint). Now the steps done are saved as it stops, the
# line says so and how to go on, and the resume that follows it finishes the run.
"$VITMAE_TOOLS/synth" "$dir/b1k" --count 6 --size 16 --seed 7 >/dev/null
head -c 80 "$dir/b1k/circle/$(ls "$dir/b1k/circle" | sed -n 1p)" > "$dir/b1k/circle/zz.png"
"$VITMAE" train --data "$dir/b1k" $b1r --batch 1 --steps 20 --ckpt-every 1000 --out "$dir/b1kr" > /dev/null 2> "$dir/b1k.err"; rc=$?
b1k_at=$(tail -n 1 "$dir/b1k.err" | sed -n "s/.*(its checkpoint holds step \([0-9]*\)).*/\1/p")
b1k_info=$("$VITMAE" info "$dir/b1kr/checkpoint.safetensors" 2>/dev/null | awk '$1 == "step" { print $2 }')
t "a --batch 1 run stopped by a broken file before any checkpoint: the steps done saved, the line says so ($rc, step ${b1k_at:-none}, info ${b1k_info:-none}: $(tail -n 1 "$dir/b1k.err" | head -c 400))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/b1k.err")" -eq 2 ] && [ -n "$b1k_at" ] && [ "$b1k_at" -ge 1 ] && [ "$b1k_at" -lt 20 ] && [ "$b1k_info" = "$b1k_at" ] &&
   tail -n 1 "$dir/b1k.err" | grep -q "^vitmae: .*/b1k/circle/zz\.png: [a-zA-Z].*; a batch of one image has no other to take its place: remove the file and continue with --resume .*/b1kr (its checkpoint holds step [0-9]*), or start a new run with a --batch of 2 or more$"'
rm "$dir/b1k/circle/zz.png"
b1k_resume=$(tail -n 1 "$dir/b1k.err" | sed -n "s/.*continue with \(--resume [^ ]*\) (its.*/\1/p")
"$VITMAE" train $b1k_resume --threads 2 > /dev/null 2> "$dir/b1kc.err"; rc=$?
t "... the file removed, the line's --resume finishes the run ($rc, ${b1k_resume:-no --resume}: $(grep -v "warning: train --resume: the images of" "$dir/b1kc.err" | head -c 300))" \
  '[ $rc -eq 0 ] && [ -n "$b1k_resume" ] && "$VITMAE" info "$dir/b1kr/checkpoint.safetensors" | awk '"'"'$1 == "step" && $2 == 20 { ok = 1 } END { exit !ok }'"'"''
rm -rf "$dir/b1k" "$dir/b1kr"

# The same folder with the pixel statistics measured (the default --pixel-norm): they meet every file
# first; the run stopped with "no image decodes for the pixel statistics" alone, naming none of them.
"$VITMAE" train --data "$dir/broken" --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 \
  --dec-heads 2 --batch 8 --steps 2 --val-frac 0 --threads 2 --out "$dir/bstats" > /dev/null 2> "$dir/bstats.err"; rc=$?
t "no image decodes for the pixel statistics: exit 1, each file named before the reason ($(tail -n 1 "$dir/bstats.err"))" \
  '[ $rc -eq 1 ] && [ "$(grep -c "^vitmae: skipped .*broken/[a-z]*/[^/]*\.png: [a-zA-Z]" "$dir/bstats.err")" -eq 8 ] && [ "$(wc -l < "$dir/bstats.err")" -eq 9 ] && tail -n 1 "$dir/bstats.err" | grep -q "^vitmae: train: no image decodes for the pixel statistics$" && [ ! -e "$dir/bstats" ]'

# Validation leaves a file broken past its header out (docs/data.md): a --val folder of 12 images
# and one broken, alone in the last chunk of one gradient group, gives the same validation as the
# 12 alone, and the file is reported once.
cp -r "$dir/val" "$dir/val13"
head -c 80 "$(ls "$dir"/val13/*/*.png | tail -n 1)" > "$dir/val13/zz_broken.png"
for v in val val13; do
  "$VITMAE" train $base --val "$dir/$v" --batch 12 --threads 2 --out "$dir/r$v" > "$dir/r$v.log" 2> "$dir/r$v.err"
  echo $? > "$dir/r$v.rc"
done
t "a broken validation file: exit 0 ($(head -c 200 "$dir/rval13.err"))" '[ "$(cat "$dir/rval13.rc")" = 0 ]'
t "a broken validation file: reported once" \
  '[ "$(grep -c "skipped .*val13/zz_broken.png: .*found while validating; left out of the validation" "$dir/rval13.err")" -eq 1 ]'
t "a broken validation file: the same validation as without it" \
  '[ -n "$(cut -d, -f5,6 "$dir/rval/metrics.csv" | grep "[0-9]")" ] && [ "$(cut -d, -f5,6 "$dir/rval/metrics.csv")" = "$(cut -d, -f5,6 "$dir/rval13/metrics.csv")" ]'

# A file broken past its header is reported with the wording of its split, whichever pass finds it
# (--val-frac: the training folder's own held-out part; the split's rule from docs/interface.md):
# here one training and one held-out file, in a run with no cache, whose pixel statistics and
# validation meet both. And with every held-out image broken, no sample image decodes: the run still
# ends with its checkpoint, and the samples are left out (no samples/: it comes with the first sheet).
"$VITMAE_TOOLS/synth" "$dir/split" --count 24 --size 24 --seed 6 >/dev/null
pick=$(cd "$dir/split" && find . -name "*.png" | sed 's|^\./||' | sort | python3 -c '
import sys
def key(p):
    h = 0xcbf29ce484222325
    for b in p.encode():
        h = ((h ^ b) * 0x100000001b3) % 2**64
    return h % 10000
names = [l.strip() for l in sys.stdin]
val = [n for n in names if key(n) < 2000]
print(val[0] if val else "", [n for n in names if key(n) >= 2000][0])')
vf=${pick% *}; tf=${pick#* }
for f in $vf $tf; do head -c 80 "$dir/split/$f" > "$dir/cut.png" && mv "$dir/cut.png" "$dir/split/$f"; done
"$VITMAE" train $small --data "$dir/split" --cache-mb 0 --store none --threads 2 --out "$dir/rsplit" > /dev/null 2> "$dir/rsplit.err"; rc=$?
t "split wording: exit 0" '[ $rc -eq 0 ] && [ -n "$vf" ]'
t "split wording: the held-out file ($vf) as validating" \
  '[ "$(grep -c "skipped .*split/$vf: .*(found while validating; left out of the validation)$" "$dir/rsplit.err")" -eq 1 ]'
t "split wording: the training file ($tf) as training" \
  '[ "$(grep -c "skipped .*split/$tf: .*(found while training; an image of its batch that decodes takes its place)$" "$dir/rsplit.err")" -eq 1 ]'
mkdir -p "$dir/allbad"
head -c 80 "$(ls "$dir"/val/*/*.png | head -n 1)" > "$dir/allbad/x.png"
"$VITMAE" train $base --val "$dir/allbad" --threads 2 --out "$dir/rallbad" > /dev/null 2> "$dir/rallbad.err"; rc=$?
t "every held-out image broken: exit 0 with a checkpoint ($(head -c 300 "$dir/rallbad.err"))" \
  '[ $rc -eq 0 ] && [ -s "$dir/rallbad/checkpoint.safetensors" ] && [ ! -e "$dir/rallbad/samples" ]'
t "every held-out image broken: reported once, as validating" \
  '[ "$(grep -c "skipped .*allbad/x.png: .*found while validating" "$dir/rallbad.err")" -eq 1 ]'
# ... and said once in a line of its own why the validation columns stay empty; nothing else.
t "every held-out image broken: one warning that the run goes on without validation ($(grep -v "^vitmae: skipped " "$dir/rallbad.err" | head -c 300))" \
  '[ "$(grep -c "^vitmae: warning: none of the 1 validation image decodes (it is broken past the header): the run goes on without validation; metrics.csv.s val_loss and val_psnr stay empty$" "$dir/rallbad.err")" -eq 1 ] &&
   [ "$(grep -vc "^vitmae: skipped " "$dir/rallbad.err")" -eq 1 ] && [ -z "$(cut -d, -f5 "$dir/rallbad/metrics.csv" | tail -n +2 | tr -d "\n")" ]'

# Sample images that break during the run (their files cut short after they were picked, no cache):
# left out of the samples from then on, reported once each; the run goes on (SIGINT ends it, exit 0).
cp -r "$dir/val" "$dir/valcut"
"$VITMAE" train $base --val "$dir/valcut" --steps 1000000 --eval-every 1000000 --sample-every 2 --cache-mb 0 \
  --store none --threads 2 --out "$dir/rcut" > /dev/null 2> "$dir/rcut.err" &
pid=$!
i=0; while [ $i -lt 1200 ] && [ ! -e "$dir/rcut/samples/step-2.png" ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
for f in "$dir"/valcut/*/*.png; do head -c 80 "$f" > "$dir/cut.png" && mv "$dir/cut.png" "$f"; done
i=0; while [ $i -lt 1200 ] && ! grep -q "valcut/.*found while validating" "$dir/rcut.err" && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -INT $pid 2>/dev/null; wait $pid; rc=$?
# Besides the "skipped" lines, only the Ctrl-C's own (docs/interface.md, "Stopping"), once.
said="vitmae: SIGINT: finishing this step, then saving a checkpoint; Ctrl-C again stops at once without saving"
t "sample images broken mid-run: exit 0 ($(grep -v "skipped" "$dir/rcut.err" | head -c 300))" \
  '[ $rc -eq 0 ] && [ -s "$dir/rcut/checkpoint.safetensors" ] && [ "$(grep -v "^vitmae: skipped " "$dir/rcut.err")" = "$said" ]'
t "sample images broken mid-run: reported, each once" \
  '[ -n "$(grep "valcut/" "$dir/rcut.err")" ] && [ "$(grep "valcut/" "$dir/rcut.err" | wc -l)" -eq "$(grep "valcut/" "$dir/rcut.err" | sort -u | wc -l)" ]'

# The data folder renamed during the run (no cache, no store: every batch reads files): one line that
# says the folder is gone, exit 1, the last checkpoint kept, no "skipped" line per file (it reported
# each file of the batches it tried, then said "no image of its batch decodes ... all 8 are broken").
cp -r "$dir/val" "$dir/moving"
"$VITMAE" train $base --data "$dir/moving" --val "$dir/val" --steps 1000000 --eval-every 1000000 --ckpt-every 2 --cache-mb 0 \
  --store none --threads 2 --out "$dir/rmove" > /dev/null 2> "$dir/rmove.err" &
moved_mid_run $! "$dir/rmove" "$dir/moving" "$dir/moved"
t "data folder moved mid-run: exit 1, one line ($(head -c 300 "$dir/rmove.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/rmove.err")" -eq 1 ] && grep -q "^vitmae: .*/moving: the data folder is gone (moved or deleted during the run)$" "$dir/rmove.err"'
"$VITMAE" train --resume "$dir/rmove" --data "$dir/moved" --steps $(($(saved_step "$dir/rmove/checkpoint.safetensors") + 1)) \
  --threads 2 > /dev/null 2>&1; rc=$?
t "data folder moved mid-run: the run resumes with --data at its new place" '[ $rc -eq 0 ]'

# The --val folder moved during the run: its line names it as the validation folder (it said "the data
# folder"), and no "skipped VAL: the folder is gone ...; its images are left out from now on" comes
# before it (which the stop then contradicted): the one line naming vmoving. The step's checkpoint
# saved, and a resume with --val at its new place goes on. (data/'s broken file is said as it is met.)
cp -r "$dir/val" "$dir/vmoving"
"$VITMAE" train $base --val "$dir/vmoving" --steps 1000000 --eval-every 2 --ckpt-every 2 --cache-mb 0 \
  --store none --threads 2 --out "$dir/rvmove" > /dev/null 2> "$dir/rvmove.err" &
moved_mid_run $! "$dir/rvmove" "$dir/vmoving" "$dir/vmoved"
t "--val folder moved mid-run: exit 1, its line, nothing skipped ($(head -c 400 "$dir/rvmove.err"))" \
  '[ $rc -eq 1 ] && [ "$(grep "vmoving" "$dir/rvmove.err")" = "vitmae: train: $dir/vmoving: the validation folder (--val) is gone (moved or deleted during the run)" ] &&
   grep -q "^vitmae: saved $dir/rvmove/checkpoint.safetensors at step" "$dir/rvmove.err"'
# ... and that saved line asks for --val, as the resume will (it said "continue with --resume RUN", which
# is refused next: "the run's validation folder ... is gone; pass --val DIR").
t "--val folder moved mid-run: the saved line's way names --val ($(grep "^vitmae: saved" "$dir/rvmove.err"))" \
  'grep -q "^vitmae: saved $dir/rvmove/checkpoint.safetensors at step [0-9]* of 1000000 (continue with --resume $dir/rvmove --val DIR, DIR where the validation folder is now)$" "$dir/rvmove.err"'
"$VITMAE" train --resume "$dir/rvmove" --val "$dir/vmoved" --steps $(($(saved_step "$dir/rvmove/checkpoint.safetensors") + 1)) \
  --threads 2 > /dev/null 2>&1; rc=$?
t "--val folder moved mid-run: the run resumes with --val at its new place" '[ $rc -eq 0 ]'
# One class folder of --val moved: the run goes on, its line says the validation scores fewer images
# now (it said "left out from now on", as of training images, and each later val loss covered fewer).
cp -r "$dir/val" "$dir/vcls"
vc=$(ls "$dir/vcls" | head -n 1)
"$VITMAE" train $base --val "$dir/vcls" --steps 1000000 --eval-every 2 --ckpt-every 2 --cache-mb 0 \
  --store none --threads 2 --out "$dir/rvcls" > /dev/null 2> "$dir/rvcls.err" &
pid=$!
i=0; while [ $i -lt 1200 ] && [ ! -e "$dir/rvcls/checkpoint.safetensors" ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
mv "$dir/vcls/$vc" "$dir/vcls-$vc"
i=0; while [ $i -lt 1200 ] && ! grep -q "vcls/$vc: the folder is gone" "$dir/rvcls.err" && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -INT $pid 2>/dev/null; wait $pid; rc=$?
t "a --val class folder moved mid-run: the run goes on, the line says the validation shrinks ($rc: $(grep "vcls" "$dir/rvcls.err"))" \
  '[ $rc -eq 0 ] && [ "$(grep "vcls" "$dir/rvcls.err")" = "vitmae: skipped $dir/vcls/$vc: the folder is gone (moved or deleted during the run); its images are left out of the validation from now on, which scores fewer images than before (its numbers do not compare with the earlier ones)" ]'

# Two class folders deleted during the run: one line for each folder, not one per image (nor one each
# time the batches switch between them); the run goes on (SIGINT ends it, exit 0).
# Two small folders of 4 images each go (a batch all of them takes its images from the other folders:
# tests/test_dataset.c, test_loader.c).
cp -r "$dir/data" "$dir/clsgone" && find "$dir/clsgone" -name "*.png" -size -100c -exec rm {} +   # the broken file
mkdir "$dir/clsgone/gone1" "$dir/clsgone/gone2"
for k in 1 2; do for f in $(ls "$dir"/clsgone/square/*.png | head -n 4); do cp "$f" "$dir/clsgone/gone$k/"; done; done
"$VITMAE" train $base --data "$dir/clsgone" --val "$dir/val" --steps 1000000 --eval-every 1000000 --ckpt-every 2 \
  --cache-mb 0 --store none --threads 2 --out "$dir/rcls" > /dev/null 2> "$dir/rcls.err" &
pid=$!
i=0; while [ $i -lt 1200 ] && [ ! -e "$dir/rcls/checkpoint.safetensors" ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
# Each folder leaves the tree at once (a rename), then goes: `rm -rf` of it in place removes its files
# before the folder, and a read between them meets a missing file in a folder still there, which is
# rightly said as that file (a load of 8 on 2 cores showed it: one file line, then the two folders').
mv "$dir/clsgone/gone1" "$dir/clsgone.gone1" && mv "$dir/clsgone/gone2" "$dir/clsgone.gone2"
rm -rf "$dir/clsgone.gone1" "$dir/clsgone.gone2"
i=0; while [ $i -lt 600 ] && [ "$(grep -c "clsgone/" "$dir/rcls.err")" -lt 2 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
sleep 0.5   # more batches meet more of their images
kill -INT $pid 2>/dev/null; wait $pid; rc=$?
t "class folders deleted mid-run: exit 0, one line for each folder ($(head -n 3 "$dir/rcls.err" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && [ "$(grep -v -x -F "$said" "$dir/rcls.err" | wc -l)" -eq 2 ] && [ "$(grep -c -x -F "$said" "$dir/rcls.err")" -eq 1 ] && grep -q "^vitmae: skipped .*/clsgone/gone1: the folder is gone (moved or deleted during the run); its images are left out from now on$" "$dir/rcls.err" && grep -q "^vitmae: skipped .*/clsgone/gone2: the folder is gone" "$dir/rcls.err"'

# A class folder of --data deleted before the validation (the --val-frac split held out of --data) meets
# it, at the gate VITMAE_FAULT_HOLD_BEFORE_VALIDATION before step 0's: its line says the folder's images
# are left out of training and of the validation. It said the --val folder's words, "left out of the
# validation from now on", as if its training images went on (docs/data.md).
cp -r "$dir/data" "$dir/hgone"
env "VITMAE_FAULT_HOLD_BEFORE_VALIDATION=$dir/hgone.go" "$VITMAE" train $small --data "$dir/hgone" --steps 4 --cache-mb 0 \
  --store none --threads 2 --out "$dir/rhgone" > /dev/null 2> "$dir/rhgone.err" &
pid=$!; wait_gate "$dir/hgone.go" $pid
mv "$dir/hgone/square" "$dir/hgone.square" && rm -rf "$dir/hgone.square"; touch "$dir/hgone.go"; wait $pid; rc=$?
t "a --data class folder gone before the validation: exit 0, its line says training and validation ($rc: $(grep "hgone/square" "$dir/rhgone.err"))" \
  '[ $rc -eq 0 ] && [ "$(grep "hgone/square" "$dir/rhgone.err")" = "vitmae: skipped $dir/hgone/square: the folder is gone (moved or deleted during the run); its images are left out from now on, of training and of the validation, which scores fewer images than before (its numbers do not compare with the earlier ones)" ]'

# The reason survives a long path (a broken file below 550 characters of folders).
long="$dir/data/circle/$(printf "%0200d" 0)/$(printf "%0200d" 1)/$(printf "%0150d" 2)"
mkdir -p "$long" && cp "$dir/val13/zz_broken.png" "$long/x.png"
reason=$(sed -n 's/^vitmae: skipped [^:]*: \(.*\) (found while .*/\1/p' "$dir/ref.err" | head -n 1)
"$VITMAE" train $small --threads 2 --out "$dir/long" > /dev/null 2> "$dir/long.err"
t "long path: the reason is kept ($reason)" '[ -n "$reason" ] && grep -qF "skipped $long/x.png: $reason (found while " "$dir/long.err"'

# An image this process lacks the memory to decode during the run (ulimit -v 150 MB; a flat 8192x8192
# RGB PNG turned by its EXIF orientation keeps its 201 MB of 8-bit samples; the scan reads headers only)
# stops the run with one line naming it, exit 1: it was "skipped ... out of memory (found while
# training; replaced by another image of its batch)", exit 0, a run on other images than the folder's.
# A 4096x4096 PNG the right way up is decoded a row at a time (docs/data.md, "Big photos on huge
# pages") and trains there; turned, it keeps its 50 MB of samples, not 200 MB of floats twice over,
# and trains there too. ASan cannot run under ulimit -v.
if [ "${VITMAE_SANITIZED:-0}" = 1 ]; then
  echo "note: the ulimit -v check is skipped under the sanitizers (ASan cannot run under ulimit -v)"
else
  mkdir -p "$dir/mem" "$dir/memup" "$dir/memturn" && for i in 1 2 3 4 5 6; do "$VITMAE_TOOLS/mkckpt" png "$dir/mem/$i.png" --size 16 --value 0.$i > /dev/null; done
  cp "$dir/mem/"[1-6].png "$dir/memup/"; cp "$dir/mem/"[1-6].png "$dir/memturn/"
  /usr/bin/python3 - "$dir/mem/huge.png" "$dir/memup/huge.png" "$dir/memturn/huge.png" <<'PY'
import sys
from PIL import Image
exif = Image.Exif()
exif[0x0112] = 6
Image.new("RGB", (8192, 8192), (128, 64, 32)).save(sys.argv[1], exif=exif, compress_level=1)
im = Image.new("RGB", (4096, 4096), (128, 64, 32))
im.save(sys.argv[2], compress_level=1)
im.save(sys.argv[3], exif=exif, compress_level=1)
PY
  for m in up turn; do
    (ulimit -v 150000 && exec "$VITMAE" train --data "$dir/mem$m" --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 \
      --dec-depth 1 --dec-heads 2 --batch 4 --steps 6 --val-frac 0 --pixel-norm imagenet --threads 1 --out "$dir/mem$m.run") \
      > /dev/null 2> "$dir/mem$m.err"; rc=$?
    t "a 4096x4096 PNG ($m) trains under ulimit -v 150 MB ($rc: $(tr "\n" "|" < "$dir/mem$m.err"))" \
      '[ $rc -eq 0 ] && [ -s "$dir/mem$m.run/checkpoint.safetensors" ] && ! grep -q "skipped\|out of memory" "$dir/mem$m.err"'
  done
  (ulimit -v 150000 && exec "$VITMAE" train --data "$dir/mem" --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 \
    --dec-depth 1 --dec-heads 2 --batch 4 --steps 6 --val-frac 0 --pixel-norm imagenet --threads 1 --out "$dir/mem.run") \
    > /dev/null 2> "$dir/mem.err"; rc=$?
  t "an image too large for this process's memory stops the run: exit 1, named, not skipped ($rc: $(tr "\n" "|" < "$dir/mem.err"))" \
    '[ $rc -eq 1 ] && grep -qxF "vitmae: $dir/mem/huge.png: image 8192x8192 (stored 8192x8192, EXIF orientation 6): out of memory for its pixels (204582912 bytes, 195 MiB, under ulimit -v 150000 KB); a --max-pixels below 67108864 skips it" "$dir/mem.err" && ! grep -q "skipped" "$dir/mem.err"'
  # A 111-byte PNG whose header says 100000x100000 (its EXIF orientation turns it, so its 30 GB of
  # 8-bit samples are kept whole, not read a row at a time), let through by a raised --max-pixels, met by the pixel statistics: one line
  # naming the file, its size and the bytes, exit 1, no run folder. It said "vitmae: train: PATH: out of
  # memory (a limit of this process, ...)".
  mkdir -p "$dir/lie" && cp "$dir/mem/"[1-6].png "$dir/lie/" && /usr/bin/python3 - "$dir/lie/lie.png" <<'PY'
import struct, sys, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
exif = b"MM\0*\0\0\0\x08" + struct.pack(">HHHIHHI", 1, 0x0112, 3, 1, 6, 0, 0)
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 10**5, 10**5, 8, 2, 0, 0, 0))
                              + chunk(b"eXIf", exif) + chunk(b"IDAT", zlib.compress(b"\0" * 4)) + chunk(b"IEND", b""))
PY
  (ulimit -v 150000 && exec "$VITMAE" train --data "$dir/lie" --img 16 --patch 4 --dim 32 --depth 1 --heads 2 --dec-dim 32 \
    --dec-depth 1 --dec-heads 2 --batch 4 --steps 2 --val-frac 0 --max-pixels 1000000000000 --threads 1 --out "$dir/lie.run") \
    > /dev/null 2> "$dir/lie.err"; rc=$?
  t "train --max-pixels 10^12: a header of 100000x100000 stops the run, one line with the size and bytes ($rc: $(tr "\n" "|" < "$dir/lie.err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$dir/lie.err")" -eq 1 ] && grep -qxF "vitmae: $dir/lie/lie.png: image 100000x100000 (stored 100000x100000, EXIF orientation 6): out of memory for its pixels (30039612288 bytes, 28.0 GiB, under ulimit -v 150000 KB); a --max-pixels below 10000000000 skips it" "$dir/lie.err" && [ ! -e "$dir/lie.run" ]'
fi
# The bottleneck note is judged on enough steps after the first (which waits for the loader to start):
# a short run on large images (--cache-mb 0: each decoded at its step) was told "data pipeline is the
# bottleneck ... (N ms per step)"; the end line still says how long the steps waited. Three steps: the
# two after the first are too few as well.
mkdir -p "$dir/slow/a"
for i in 1 2 3 4; do "$VITMAE_TOOLS/mkckpt" png "$dir/slow/a/$i.png" --size 2048 --value 0.$i || fail=1; done
"$VITMAE" train --data "$dir/slow" --steps 3 --threads 2 --out "$dir/slowrun" --batch 4 --val-frac 0 --cache-mb 0 \
  --pixel-norm none --store none --img 16 --dim 32 --depth 1 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 \
  > "$dir/slow.out" 2>&1; rc=$?
t "a three-step run: no bottleneck note ($rc: $(grep bottleneck "$dir/slow.out" | cut -c1-80))" \
  '[ $rc -eq 0 ] && ! grep -q "bottleneck" "$dir/slow.out" && grep -q "steps waited [0-9]*\.[0-9][0-9] [nmu]\{0,1\}s each for images" "$dir/slow.out"'

# A still WebP's or a PNG's working image is resized row by row, without the photo's full-size floats
# (docs/data.md, "Big photos on huge pages"): with every allocation of vitmae's own code of 16 MB or
# more failing, a run on a 1600 x 1200 WebP (23 MB of floats, 5.8 MB of samples) trains, and one on
# the same photo as a PNG (decoded a row at a time), and on the WebP and the PNG turned by their EXIF
# orientation (the upright rows read across the 5.8 MB of samples). A 2400 x 2400 PNG turned keeps its
# 17 MB of samples: the allocation fails and the run stops (so the shim is seen to bite).
mkdir -p "$dir/bigwebp/a" "$dir/bigpng/a" "$dir/bigturned/a" "$dir/bigwebpturned/a" "$dir/bigtoobig/a"
/usr/bin/python3 - "$dir/bigwebp/a/1.webp" "$dir/bigpng/a/1.png" "$dir/bigturned/a/1.png" "$dir/bigwebpturned/a/1.webp" \
  "$dir/bigtoobig/a/1.png" <<'PY'
import sys
from PIL import Image
im = Image.radial_gradient("L").resize((1600, 1200)).convert("RGB")
im.save(sys.argv[1], lossless=True)
im.save(sys.argv[2])
exif = Image.Exif()
exif[0x0112] = 6
im.save(sys.argv[3], exif=exif)
im.save(sys.argv[4], lossless=True, exif=exif)
im.resize((2400, 2400)).save(sys.argv[5], exif=exif)
PY
for f in webp png turned webpturned toobig; do
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0" FAULT_OWN=1 FAULT_MIN=16000000 FAULT_FUNC=malloc \
    FAULT_N=1+ LD_PRELOAD="$VITMAE_TOOLS/fault.so" "$VITMAE" train --data "$dir/big$f" --img 16 --patch 4 --dim 32 --depth 1 \
    --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 2 --steps 2 --val-frac 0 --threads 1 --store none \
    --out "$dir/big$f.run" > /dev/null 2> "$dir/big$f.err"; eval "rc_$f=\$?"
done
t "a 1600x1200 WebP trains with no allocation of 16 MB or more ($rc_webp: $(tr "\n" "|" < "$dir/bigwebp.err" | cut -c1-200))" \
  '[ $rc_webp -eq 0 ] && [ -s "$dir/bigwebp.run/checkpoint.safetensors" ]'
t "... and its PNG ($rc_png: $(tr "\n" "|" < "$dir/bigpng.err" | cut -c1-200))" \
  '[ $rc_png -eq 0 ] && [ -s "$dir/bigpng.run/checkpoint.safetensors" ]'
t "... and the PNG turned by EXIF ($rc_turned: $(tr "\n" "|" < "$dir/bigturned.err" | cut -c1-200))" \
  '[ $rc_turned -eq 0 ] && [ -s "$dir/bigturned.run/checkpoint.safetensors" ]'
t "... and the WebP turned by EXIF ($rc_webpturned: $(tr "\n" "|" < "$dir/bigwebpturned.err" | cut -c1-200))" \
  '[ $rc_webpturned -eq 0 ] && [ -s "$dir/bigwebpturned.run/checkpoint.safetensors" ]'
t "... a 2400x2400 PNG turned by EXIF does not ($rc_toobig: $(tr "\n" "|" < "$dir/bigtoobig.err" | cut -c1-200))" \
  '[ $rc_toobig -ne 0 ] && grep -q "out of memory" "$dir/bigtoobig.err"'

[ $fail -eq 0 ] && echo "cli pipeline ok"
exit $fail
