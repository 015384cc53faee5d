#!/bin/sh
# The C library's calls failed one at a time (build/tools/fault.so under LD_PRELOAD, docs/testing.md,
# "Crashes, full disks, memory"): each allocation of 256 bytes or more made by vitmae's own code in `info`
# (text and --json, of a
# pretrained and of a fine-tuned checkpoint) fails in turn, and the command either prints what it prints
# without the failure (exit 0) or exits 1 with one line `vitmae: FILE: out of memory`; never a crash, a
# count of 0 or a line left out; the same in a one-step `finetune` (below). A folder whose listing fails
# part-way is said as a folder not read.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"
scratch dir
cd "$dir" || exit 1
shim="$VITMAE_TOOLS/fault.so"
# Under ASan the shim comes before the sanitizer's runtime in the list of libraries (its malloc is the
# runtime's, one step further): allowed, leak reports off (a failed call leaves what it leaves).
ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0"; export ASAN_OPTIONS
export GOMP_SPINCOUNT=1000   # no run again of vitmae by itself (cmd/main.c): one process to count in

"$VITMAE_TOOLS/mkckpt" ckpt mae.safetensors --img 8 --patch 4 --channels 1 >/dev/null || { echo "FAILED: mkckpt"; exit 1; }
mkdir -p data/a data/b
for v in 0.1 0.8 0.4; do "$VITMAE_TOOLS/mkckpt" png data/a/$v.png --size 8 --channels 1 --value $v >/dev/null; done
for v in 0.2 0.7 0.5; do "$VITMAE_TOOLS/mkckpt" png data/b/$v.png --size 8 --channels 1 --value $v >/dev/null; done
"$VITMAE" finetune --ckpt mae.safetensors --data data --steps 1 --batch 2 --threads 1 --out ft >/dev/null 2>&1 ||
  { echo "FAILED: finetune"; exit 1; }

# every_alloc NAME ARGS...: vitmae ARGS with each allocation of its own code failing in turn.
every_alloc() {
  name=$1; shift
  "$VITMAE" "$@" > want.out 2>/dev/null || { echo "FAILED: $name without faults"; fail=1; return; }
  for f in malloc calloc realloc; do
    FAULT_OWN=1 FAULT_MIN=256 FAULT_COUNT=count LD_PRELOAD=$shim "$VITMAE" "$@" >/dev/null 2>&1
    n=$(sed -n "s/^$f //p" count)
    [ -n "$n" ] || { echo "FAILED: $name: the shim counted no $f"; fail=1; return; }
    i=1; step=1
    while [ "$i" -le "$n" ]; do
      FAULT_OWN=1 FAULT_MIN=256 FAULT_FUNC=$f FAULT_N=$i LD_PRELOAD=$shim timeout 60 "$VITMAE" "$@" > got.out 2> got.err; rc=$?
      if [ $rc -eq 0 ]; then
        cmp -s got.out want.out || { echo "FAILED: $name, $f $i of $n failing: exit 0 with another report:"; diff want.out got.out | head -5; fail=1; }
      elif [ $rc -ne 1 ] || [ "$(wc -l < got.err)" -ne 1 ] || ! grep -q '^vitmae: .*: out of memory$' got.err; then
        echo "FAILED: $name, $f $i of $n failing: exit $rc, stderr:"; head -3 got.err; fail=1
      fi
      i=$((i + step))
    done
  done
}
every_alloc "info" info mae.safetensors
every_alloc "info --json" info --json mae.safetensors
every_alloc "info of a classifier" info ft/checkpoint.safetensors
every_alloc "info --json of a classifier" info --json ft/checkpoint.safetensors

# A class folder whose listing fails after its first entries (EIO): said as skipped with why, its images
# not silently fewer (test_dataset.c holds the scan's side).
FAULT_FUNC=readdir FAULT_N=9 LD_PRELOAD=$shim "$VITMAE" data data > got.out 2> got.err; rc=$?
t "data with a listing failing: exit 0, the folder skipped with why" \
  '[ $rc -eq 0 ] && grep -q "cannot read folder: Input/output error" got.out && ! grep -q "^data: 6 ok" got.out'

# A run folder that cannot be listed (opendir failing from the run folder's first check on, as for a
# folder without read permission) is taken as holding a run: train --out refuses it and the earlier
# run's checkpoint stays. It was taken for an empty folder, and the run trained over the checkpoint.
"$VITMAE" train --data data --img 8 --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 \
  --batch 2 --steps 1 --threads 1 --out run >/dev/null 2>&1 || { echo "FAILED: the first run"; fail=1; }
cp run/checkpoint.safetensors before.safetensors
# Its samples/ folder alone would refuse the run (a new train run never writes into one): gone, so that
# only the listing of the run folder can tell that it holds a run.
rm -rf run/samples
FAULT_OWN=1 FAULT_COUNT=count LD_PRELOAD=$shim "$VITMAE" data data >/dev/null 2>&1
scan=$(sed -n 's/^opendir //p' count)
# data opens each folder twice: in the scan, and in the look for a vitmae run folder among them
# (run_data_run_folder); train three times before the run folder's first check: once more in the walk
# that looks for a link below --data leading to the run folder (run_folder_overlaps).
scan=$((3 * scan / 2))
FAULT_OWN=1 FAULT_FUNC=opendir FAULT_N=$((scan + 1))+ LD_PRELOAD=$shim "$VITMAE" train --data data --img 8 --patch 4 \
  --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 --batch 2 --steps 2 --threads 1 --out run \
  > got.out 2> got.err; rc=$?
t "train --out a run folder that cannot be listed: refused, the earlier checkpoint kept (exit $rc: $(tail -n 1 got.err))" \
  '[ $rc -eq 2 ] && cmp -s run/checkpoint.safetensors before.safetensors && grep -q "already holds a run" got.err'
# The same with only a snapshot left (checkpoint-1.safetensors), which no name looked up finds.
rm -rf run/checkpoint.safetensors run/metrics.csv run/config.json run/curves.png run/samples
ls run/checkpoint-1.safetensors >/dev/null 2>&1 || { echo "FAILED: no snapshot checkpoint-1"; fail=1; }
FAULT_OWN=1 FAULT_FUNC=opendir FAULT_N=$((scan + 1))+ LD_PRELOAD=$shim "$VITMAE" train --data data --img 8 --patch 4 \
  --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 --batch 2 --steps 2 --threads 1 --out run \
  > got.out 2> got.err; rc=$?
# Said as such, exit 1: it was refused as a folder holding "a run that stopped before its first
# checkpoint", a guess the snapshot there belies (docs/interface.md section 9).
t "train --out an unlistable folder holding a snapshot only: refused for the listing, nothing written (exit $rc: $(tail -n 1 got.err))" \
  '[ $rc -eq 1 ] && [ "$(cat got.err)" = "vitmae: train --out run: cannot list the folder: Too many open files" ] &&
   cmp -s run/checkpoint-1.safetensors before.safetensors && [ ! -e run/checkpoint.safetensors ]'
# ... and readdir failing there (EIO, from the run folder's first listing on: train reads each folder of
# --data three times before it where data reads it twice, as above): the same, not "a run without a checkpoint" (run_folder_has_checkpoint
# lists every snapshot itself since the hundred-and-second session).
rd=$(sed -n 's/^readdir //p' count)
FAULT_OWN=1 FAULT_FUNC=readdir FAULT_N=$((3 * rd / 2 + 1))+ LD_PRELOAD=$shim "$VITMAE" train --data data --img 8 --patch 4 \
  --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 --batch 2 --steps 2 --threads 1 --out run \
  > got.out 2> got.err; rc=$?
t "... readdir failing: refused for the listing, nothing written (exit $rc: $(tail -n 1 got.err))" \
  '[ $rc -eq 1 ] && [ "$(cat got.err)" = "vitmae: train --out run: cannot list the folder: Input/output error" ] &&
   cmp -s run/checkpoint-1.safetensors before.safetensors && [ ! -e run/checkpoint.safetensors ]'
# --resume of that folder (no checkpoint.safetensors, a snapshot unseen): the listing failure, exit 1,
# for train and finetune, opendir failing (its first in the program's own code: the folder's listing) or
# readdir (EIO). It said "the run stopped before its first checkpoint", a wrong claim, where a listing
# finds the snapshot and names it.
for cmd in train finetune; do
  for f in opendir:"Too many open files" readdir:"Input/output error"; do
    FAULT_OWN=1 FAULT_FUNC=${f%%:*} FAULT_N=1+ LD_PRELOAD=$shim "$VITMAE" $cmd --resume run > got.out 2> got.err; rc=$?
    t "$cmd --resume a folder whose listing fails (${f%%:*}): exit 1, the failure said (exit $rc: $(tail -n 1 got.err))" \
      '[ $rc -eq 1 ] && [ "$(cat got.err)" = "vitmae: $cmd --resume run: cannot list the folder: ${f#*:}" ] && [ ! -e run/checkpoint.safetensors ]'
  done
done
# finetune --out of a fine-tuning run folder holding only a snapshot, every listing failing (the run
# folder's come before --data's): the failure said, exit 1. It was refused as "a run that stopped before
# its first checkpoint".
cp -R ft ftr && rm -rf ftr/checkpoint.safetensors ftr/metrics.csv ftr/config.json ftr/curves.png || fail=1
ls ftr/checkpoint-1.safetensors >/dev/null 2>&1 || { echo "FAILED: no snapshot checkpoint-1 in ftr"; fail=1; }
FAULT_OWN=1 FAULT_FUNC=opendir FAULT_N=1+ LD_PRELOAD=$shim "$VITMAE" finetune --ckpt mae.safetensors --data data --steps 2 \
  --batch 2 --threads 1 --out ftr > got.out 2> got.err; rc=$?
t "finetune --out an unlistable folder holding a snapshot only: exit 1, the failure said (exit $rc: $(tail -n 1 got.err))" \
  '[ $rc -eq 1 ] && [ "$(cat got.err)" = "vitmae: finetune --out ftr: cannot list the folder: Too many open files" ] && [ ! -e ftr/checkpoint.safetensors ]'

# train --resume of an earlier snapshot on another schedule (--steps) in the run's own folder is refused
# where later snapshots of the old schedule are there (docs/interface.md section 9); the folder's listing
# that looks for them failing was taken for "none later", and the run trained over them (exit 0). Now
# said, exit 1, nothing written. That listing is the run's last opendir before it trains: counted in a
# resume refused for the later snapshots, then that call alone fails.
"$VITMAE" train --data data --img 8 --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 \
  --batch 2 --steps 3 --ckpt-every 1 --keep 3 --threads 1 --out rsn >/dev/null 2>&1 || { echo "FAILED: the run into rsn"; fail=1; }
cp rsn/checkpoint.safetensors before_rsn.safetensors
FAULT_OWN=1 FAULT_COUNT=count LD_PRELOAD=$shim "$VITMAE" train --resume rsn/checkpoint-1.safetensors --steps 5 --threads 1 \
  > got.out 2> got.err; rc=$?
t "train --resume an earlier snapshot, other --steps: refused for the later snapshots (exit $rc: $(tail -n 1 got.err))" \
  '[ $rc -eq 2 ] && grep -q "holds later checkpoints of this run on another schedule (3 files, the first rsn/checkpoint-2.safetensors, step 2 of 3, checkpoint.safetensors among them; this resume.s is of 5 steps)" got.err'
opens=$(sed -n 's/^opendir //p' count)
FAULT_OWN=1 FAULT_FUNC=opendir FAULT_N=$opens LD_PRELOAD=$shim "$VITMAE" train --resume rsn/checkpoint-1.safetensors --steps 5 \
  --threads 1 > got.out 2> got.err; rc=$?
t "train --resume an earlier snapshot, other --steps, the folder's listing failing: exit 1, said, nothing written (exit $rc: $(tail -n 1 got.err))" \
  '[ $rc -eq 1 ] && [ "$(cat got.err)" = "vitmae: train --resume rsn/checkpoint-1.safetensors: cannot list the folder rsn: Too many open files" ] &&
   cmp -s rsn/checkpoint.safetensors before_rsn.safetensors && [ -e rsn/checkpoint-3.safetensors ]'
rm -rf rsn before_rsn.safetensors

# A run folder whose listing fails part-way (readdir ending it with EIO, as on a failing disk, where its
# end gives errno 0) is taken as holding a run, as one that cannot be opened: the names not read may be
# a run's. train --out refuses it and the earlier run's checkpoint stays. The listing fails where the
# first of the run's names would come (ls -f: the folder's own order, the filesystem's), after the
# entries before it: a run's name read before the failure would refuse the run by itself.
"$VITMAE" train --data data --img 8 --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 \
  --batch 2 --steps 1 --threads 1 --out run2 >/dev/null 2>&1 || { echo "FAILED: the first run into run2"; fail=1; }
cp run2/checkpoint.safetensors before2.safetensors
rm -rf run2/samples   # it alone would refuse the run (above)
for k in 1 2 3 4 5 6 7 8; do echo notes > run2/notes$k.txt; done   # names read before the failure
first=$(ls -f run2 | awk '/^(checkpoint\.safetensors|metrics\.csv|config\.json|curves\.png|checkpoint-[0-9]+\.safetensors)$/ { print NR; exit }')
[ -n "$first" ] || { echo "FAILED: no run's name listed in run2"; fail=1; first=1; }
FAULT_OWN=1 FAULT_COUNT=count LD_PRELOAD=$shim "$VITMAE" data data >/dev/null 2>&1
listed=$(sed -n 's/^readdir //p' count)
# As for opendir: train lists --data's folders twice (the link walk, the scan) before the run folder;
# every later listing fails too (a disk that stays failing).
FAULT_OWN=1 FAULT_FUNC=readdir FAULT_N=$((2 * listed + first))+ LD_PRELOAD=$shim "$VITMAE" train --data data --img 8 \
  --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 --batch 2 --steps 2 --threads 1 \
  --out run2 > got.out 2> got.err; rc=$?
t "train --out a run folder whose listing fails part-way (at entry $first): refused, the earlier checkpoint kept (exit $rc: $(tail -n 1 got.err))" \
  '[ $rc -eq 2 ] && cmp -s run2/checkpoint.safetensors before2.safetensors && grep -q "^vitmae: train --out run2: the folder already holds a run; pass --resume" got.err'

# attention with each of the first reallocs of its own code failing in turn (the first are the inputs'
# list's; a run takes a second, most of it cairo's fonts): the list grew its size before the realloc did,
# so the next input was written past the list (SIGSEGV after "attention: out of memory").
FAULT_OWN=1 FAULT_COUNT=count LD_PRELOAD=$shim "$VITMAE" attention --ckpt mae.safetensors --out att0 --threads 1 \
  data/a/0.1.png data/b/0.2.png >/dev/null 2>&1
n=$(sed -n 's/^realloc //p' count); i=1; bad=0
[ "${n:-0}" -gt 4 ] && n=4
while [ "$i" -le "${n:-0}" ]; do
  rm -rf att
  FAULT_OWN=1 FAULT_FUNC=realloc FAULT_N=$i LD_PRELOAD=$shim timeout 60 "$VITMAE" attention --ckpt mae.safetensors \
    --out att --threads 1 data/a/0.1.png data/b/0.2.png > got.out 2> got.err; rc=$?
  if { [ $rc -ne 0 ] && [ $rc -ne 1 ]; } || grep -qv '^vitmae: ' got.err; then
    echo "FAILED: attention, realloc $i of $n failing: exit $rc, stderr:"; head -3 got.err; bad=1
  fi
  i=$((i + 1))
done
t "attention with each of its first $n reallocs failing in turn: exit 0 or 1, its lines only" '[ "${n:-0}" -gt 0 ] && [ $bad -eq 0 ]'

# finetune with each allocation of 256 bytes or more of its own code failing in turn (a pretrained
# checkpoint, the scan, the model, the buffers, a step, the checkpoint written): exit 0, or exit 1 with
# one line `vitmae: WHAT: ...out of memory...` (and, after the step, the line saying its checkpoint was
# saved all the same). The layer-decay scales allocated a tensor table and
# abort()ed when that failed (SIGABRT, no line), and a checkpoint's state that memory ran out for was
# said as `vitmae: out of memory`, naming no file.
ft_args="finetune --ckpt mae.safetensors --data data --val-frac 0 --steps 1 --batch 2 --threads 1 --out ftf"
FAULT_OWN=1 FAULT_MIN=256 FAULT_COUNT=count LD_PRELOAD=$shim "$VITMAE" $ft_args >/dev/null 2>&1 ||
  { echo "FAILED: finetune under the shim, no failure"; fail=1; }
bad=0; runs=0
for f in malloc calloc realloc; do
  n=$(sed -n "s/^$f //p" count); i=1
  while [ "$i" -le "${n:-0}" ]; do
    rm -rf ftf
    FAULT_OWN=1 FAULT_MIN=256 FAULT_FUNC=$f FAULT_N=$i LD_PRELOAD=$shim timeout 60 "$VITMAE" $ft_args > got.out 2> got.err; rc=$?
    # A failure after the step (its curves) saves the step's checkpoint first and says so: a second line.
    grep -vx "vitmae: saved ftf/checkpoint.safetensors at step 1, the run's last" got.err > got.err1
    if [ $rc -ne 0 ] && { [ $rc -ne 1 ] || [ "$(wc -l < got.err1)" -ne 1 ] || ! grep -q '^vitmae: [^:]*: .*out of memory' got.err1 ||
                          { ! cmp -s got.err got.err1 && [ ! -s ftf/checkpoint.safetensors ]; }; }; then
      echo "FAILED: finetune, $f $i of $n failing: exit $rc, stderr:"; head -3 got.err; bad=1
    fi
    i=$((i + 1)); runs=$((runs + 1))
  done
done
rm -rf ftf
t "finetune with each of its $runs allocations failing in turn: exit 0, or 1 and one line naming what" '[ $runs -gt 50 ] && [ $bad -eq 0 ]'

# finetune --ckpt holds the pretrained encoder's weights alone (io/checkpoint.h, ckpt_load_encoder; the
# decoder's are read past and checked): with every allocation of the whole parameters' size failing, it
# runs as it runs without, and the one array it reads is the encoder's floats. It read every weight,
# decoder included, into an array of the whole parameters (104 MB more at ViT-B/16; docs/encoder.md).
bytes=$(python3 - mae.safetensors <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
every = encoder = 0
for name, t in h.items():
    if name == "__metadata__" or name.startswith("optimizer."): continue
    k = 1
    for d in t["shape"]: k *= d
    every += 4 * k
    encoder += 0 if name.startswith("decoder") or name == "mask_token" else 4 * k
print(every, encoder)
PY
)
every=${bytes% *}; encoder=${bytes#* }
ft_args="finetune --ckpt mae.safetensors --data data --val-frac 0 --steps 1 --batch 2 --threads 1"
rm -rf ftd ftd2
FAULT_OWN=1 FAULT_MIN=$every FAULT_MAX=$every FAULT_FUNC=calloc FAULT_N=1+ LD_PRELOAD=$shim "$VITMAE" $ft_args --out ftd \
  > got.out 2> got.err; rc=$?
FAULT_OWN=1 FAULT_MIN=$encoder FAULT_MAX=$encoder FAULT_COUNT=count LD_PRELOAD=$shim "$VITMAE" $ft_args --out ftd2 \
  > /dev/null 2>&1
t "finetune --ckpt, no allocation of the whole parameters' $every bytes (exit $rc: $(head -n 1 got.err)), the encoder's $encoder read once ($(sed -n "s/^calloc //p" count) times)" \
  '[ $rc -eq 0 ] && [ -s ftd/checkpoint.safetensors ] && [ "$encoder" -lt "$every" ] && [ "$(sed -n "s/^calloc //p" count)" -eq 1 ]'
rm -rf ftd ftd2

# A PNG whose fsync fails (EIO: a disk that fails as it writes back) is a failed write, as a full
# disk is: before it is renamed into place, each PNG is fsync'd, and at the run's end each folder
# once (io/files.h), so that a power cut never leaves a renamed PNG empty. They were never fsync'd.
# With --threads 1 the calls come in order: the three panels (0.1, 0.4, 0.8), then the folder; the
# folder had been synced after each panel (tests/cli_atomic.sh counts the calls).
rm -rf rq rq0 rq1
"$VITMAE" reconstruct --ckpt mae.safetensors --threads 1 --out rq0 data/a > /dev/null 2>&1 || { echo "FAILED: reconstruct"; fail=1; }
FAULT_FUNC=fsync FAULT_N=2 LD_PRELOAD=$shim "$VITMAE" reconstruct --ckpt mae.safetensors --threads 1 --out rq data/a \
  > got.out 2> got.err; rc=$?
t "reconstruct, the second panel's fsync failing: exit 1, one line naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|')), no file at its name, the first written" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: rq/0.4.recon.png: Input/output error" got.err &&
   [ ! -e rq/0.4.recon.png ] && cmp -s rq/0.1.recon.png rq0/0.1.recon.png && cmp -s rq/0.8.recon.png rq0/0.8.recon.png &&
   [ -z "$(ls rq | grep tmp)" ]'
# ... its line in input order: a panel that could not be written was said when its batch was done,
# after the line of an input after it in the batch that could not be read (docs/interface.md, "Bad files").
rm -rf rqb; printf 'not an image' > broken.png
FAULT_FUNC=fsync FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" reconstruct --ckpt mae.safetensors --threads 1 --out rqb data/a/0.1.png broken.png \
  > got.out 2> got.err; rc=$?
printf 'vitmae: rqb/0.1.recon.png: Input/output error\nvitmae: broken.png: not a PNG, JPEG or WebP file\nvitmae: reconstruct: 2 inputs failed\n' > want.err
t "reconstruct, a panel's fsync failing, then an input that cannot be read: both lines in input order (exit $rc: $(head -n 2 got.err | tr '\n' '|'))" \
  '[ $rc -eq 1 ] && cmp -s want.err got.err'
rm -rf rqb broken.png
cp -R rq0 rq1
FAULT_FUNC=fsync FAULT_N=2 LD_PRELOAD=$shim "$VITMAE" reconstruct --ckpt mae.safetensors --threads 1 --out rq1 --force data/a \
  > got.out 2> got.err; rc=$?
t "reconstruct --force, the second panel's fsync failing: exit 1, one line (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the earlier run's file at its name intact" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: rq1/0.4.recon.png: Input/output error" got.err &&
   cmp -s rq1/0.4.recon.png rq0/0.4.recon.png && [ "$(ls rq1 | wc -l)" -eq 3 ]'
rm -rf rq
FAULT_FUNC=fsync FAULT_N=4 LD_PRELOAD=$shim "$VITMAE" reconstruct --ckpt mae.safetensors --threads 1 --out rq data/a \
  > got.out 2> got.err; rc=$?
t "reconstruct, the folder's fsync after the last panel failing: exit 1, one line saying what was written and naming the folder (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the panels whole (each was synced before its rename)" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: rq/0.1.recon.png and 2 more: written, but their folder rq could not be synced: Input/output error" got.err &&
   cmp -s rq/0.1.recon.png rq0/0.1.recon.png && cmp -s rq/0.4.recon.png rq0/0.4.recon.png && cmp -s rq/0.8.recon.png rq0/0.8.recon.png &&
   [ -z "$(ls rq | grep tmp)" ]'
rm -rf at
FAULT_FUNC=fsync FAULT_N=9 LD_PRELOAD=$shim "$VITMAE" attention --ckpt mae.safetensors --threads 1 --out at --head mean data/a \
  > got.out 2> got.err; rc=$?
t "attention, the output folder's fsync failing at the run's end (the 9th call: 6 PNGs, the page, at/0.1, then at): exit 1, one line saying what was written and naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|'))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: attention: at/0.1.attn.png and 3 more: written, but their folder at could not be synced: Input/output error" got.err &&
   [ -s at/index.html ] && [ -s at/0.8/layer00-mean.png ]'
# A folder whose sync fails once a group is published leaves the group in place (io/files.h,
# FILE_UNSYNCED): the files are whole (each was synced before its rename), only their names'
# durability is in doubt. embed --force over an earlier pair, the folder's fsync failing (the third
# call: FEATS.npy, FEATS.txt, then the folder): one line saying the pair was written and naming the
# folder, exit 1, the new pair in place. The group was undone: the new pair removed, and with it the earlier one it had replaced.
rm -rf em em0; mkdir em em0
"$VITMAE" embed --ckpt mae.safetensors --threads 1 --out em0/f.npy data/a > /dev/null 2>&1 || { echo "FAILED: embed"; fail=1; }
"$VITMAE" embed --ckpt mae.safetensors --threads 1 --out em/f.npy data/a/0.1.png > /dev/null 2>&1 || { echo "FAILED: embed"; fail=1; }
FAULT_FUNC=fsync FAULT_N=3 LD_PRELOAD=$shim "$VITMAE" embed --ckpt mae.safetensors --threads 1 --out em/f.npy --force data/a \
  > got.out 2> got.err; rc=$?
t "embed --force, the folder's fsync after the pair failing: exit 1, one line saying what was written and naming the folder (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the new pair in place ($(ls em | tr '\n' ' '))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: embed: em/f.npy and 1 more: written, but their folder em could not be synced: Input/output error" got.err &&
   cmp -s em/f.npy em0/f.npy && cmp -s em/f.txt em0/f.txt && [ "$(ls em | wc -l)" -eq 2 ]'
rm -rf em em0
# A file written alone (file_write_atomic: train's config.json; png_write: its curves.png) whose
# folder's sync fails after the rename is in place, whole: the line says it was written and names the
# folder; it said "tr/config.json: Input/output error", as for a file that was not written. config.json
# failing so stops a new run before its first step, which leaves no folder (docs/interface.md, section 1).
# --val-frac 0: the calls are config.json, tr, curves.png, tr.
tr_args="train --data data --img 8 --patch 4 --dim 8 --depth 1 --heads 2 --dec-dim 8 --dec-depth 1 --dec-heads 2 --batch 2
  --steps 1 --threads 1 --val-frac 0 --out tr"
rm -rf tr
FAULT_FUNC=fsync FAULT_N=2 LD_PRELOAD=$shim "$VITMAE" $tr_args > got.out 2> got.err; rc=$?
t "train, config.json's folder sync failing: exit 1, one line saying it was written (exit $rc: $(head -n 2 got.err | tr '\n' '|'))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && [ ! -e tr ] &&
   grep -qx "vitmae: train: tr/config.json: written, but its folder tr could not be synced: Input/output error" got.err'
rm -rf tr
FAULT_FUNC=fsync FAULT_N=4 LD_PRELOAD=$shim "$VITMAE" $tr_args > got.out 2> got.err; rc=$?
t "train, curves.png's folder sync failing: exit 1, one line saying it was written (exit $rc: $(head -n 2 got.err | tr '\n' '|'))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && [ -s tr/curves.png ] &&
   grep -qx "vitmae: train: tr/curves.png: written, but its folder tr could not be synced: Input/output error" got.err'
rm -rf tr
# config.json failing after a checkpoint was saved (its fsync, at step 2's checkpoint and at the run's
# end): the run can go on from that checkpoint, and its failure line is followed by the one that says so
# (it said only "tr/config.json: Input/output error", and the run read as lost). Every fsync of the run in
# turn: the two config.json failures after a checkpoint, each with the saved line, step 2 then 3.
cfg_saved=
n=1
while [ $n -le 40 ]; do
  rm -rf tr
  FAULT_FUNC=fsync FAULT_N=$n LD_PRELOAD=$shim "$VITMAE" ${tr_args% --out tr} --steps 3 --ckpt-every 2 --out tr > got.out 2> got.err
  if grep -qx "vitmae: train: tr/config.json: Input/output error" got.err && [ -e tr/checkpoint.safetensors ]; then
    cfg_saved="$cfg_saved$(sed -n 2p got.err | sed 's/.*at step \([0-9]*\).*/\1/') "
    [ "$(wc -l < got.err)" -eq 2 ] || cfg_saved="$cfg_saved(lines $(wc -l < got.err)) "
  fi
  n=$((n + 1))
done
t "config.json failing after a checkpoint: the saved line after it, at steps 2 and 3 (${cfg_saved:-none})" '[ "$cfg_saved" = "2 3 " ]'
rm -rf tr

# ... and whole where the run folder's name is long: png_write's callers held its reason in 256 bytes,
# which cut "written, but its folder RUN could not be synced: why" before the why (a 230-byte RUN).
# --sample-every 1: the calls are config.json, RUN, curves.png, RUN, samples/step-1.png, RUN/samples.
# The step-1 sheet's failure comes after the step: its checkpoint is saved all the same, a second line.
long=$(printf 'r%.0s' $(seq 230))
for png in "4 curves.png $long 1" "6 samples/step-1.png $long/samples 2"; do
  set -- $png; png_n=$1 png_file=$2 png_dir=$3 png_lines=$4   # named: t's condition runs inside t, where $1.. are its own
  rm -rf "$long"
  FAULT_FUNC=fsync FAULT_N=$png_n LD_PRELOAD=$shim "$VITMAE" ${tr_args% --out tr} --sample-every 1 --out "$long" > got.out 2> got.err; rc=$?
  t "train --out <230 bytes>, $png_file's folder sync failing: exit 1, the whole line ($rc: $(head -n 2 got.err | sed "s/$long/RUN/g" | tr '\n' '|'))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq $png_lines ] && [ -s "$long/$png_file" ] &&
     [ "$(head -n 1 got.err)" = "vitmae: train: $long/$png_file: written, but its folder $png_dir could not be synced: Input/output error" ] &&
     { [ $png_lines -eq 1 ] || [ "$(tail -n 1 got.err)" = "vitmae: saved $long/checkpoint.safetensors at step 1, the run'"'"'s last" ]; }'
done
rm -rf "$long"
rm -rf at
FAULT_FUNC=fsync FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" attention --ckpt mae.safetensors --threads 1 --out at data/a \
  > got.out 2> got.err; rc=$?
t "attention, the first map's fsync failing: exit 1, one line naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|')), none of the image's files" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -q "^vitmae: data/a/0.1.png: at/0.1/layer00-.*png: Input/output error$" got.err &&
   [ ! -e at/0.1 ] && [ ! -e at/0.1.attn.png ] && [ -s at/0.4.attn.png ]'
rm -rf rq rq0 rq1 at

# The folder syncs of every command that publishes a group, failing (docs/interface.md, section 1:
# one line in the words of a file written alone, "PATH and N more: written, but their folder DIR could
# not be synced: why", PATH the first file published into DIR (it said only "DIR: why", which did not
# say whether the results were there), exit 1, the files in place and whole, also under --force, and
# no temporary file left), and a file of the group that cannot be written (its fsync failing, ENOSPC):
# one line naming it, nothing of the group published, an earlier run's files as they were.
# --threads 1: reconstruct's calls are the three panels, then rq; attention's (--head mean) each
# image's map and montage, the page, then at/0.1, at, at/0.4, at/0.8; probe --linear's the two
# matrices, then its folder; embed's FEATS.npy, FEATS.txt, then the folder.
no_tmp() { [ -z "$(find "$@" -name '*.tmp.*')" ]; }
rm -rf rq rq0; "$VITMAE" reconstruct --ckpt mae.safetensors --threads 1 --out rq0 data/a > /dev/null 2>&1 || { echo "FAILED: reconstruct"; fail=1; }
"$VITMAE" reconstruct --ckpt mae.safetensors --threads 1 --raw --out rq data/a > /dev/null 2>&1 || { echo "FAILED: reconstruct --raw"; fail=1; }
FAULT_FUNC=fsync FAULT_N=4 LD_PRELOAD=$shim "$VITMAE" reconstruct --ckpt mae.safetensors --threads 1 --out rq --force data/a \
  > got.out 2> got.err; rc=$?
t "reconstruct --force over a --raw run, the folder's sync failing: exit 1, one line saying what was written and naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the new panels in place, the earlier arrays gone ($(ls rq | tr '\n' ' '))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: rq/0.1.recon.png and 2 more: written, but their folder rq could not be synced: Input/output error" got.err && diff -r rq rq0 > /dev/null && no_tmp rq'
rm -rf rq rq0
rm -rf at at0; "$VITMAE" attention --ckpt mae.safetensors --threads 1 --out at0 --head mean data/a > /dev/null 2>&1 || { echo "FAILED: attention"; fail=1; }
FAULT_FUNC=fsync FAULT_N=10 LD_PRELOAD=$shim "$VITMAE" attention --ckpt mae.safetensors --threads 1 --out at --head mean data/a \
  > got.out 2> got.err; rc=$?
t "attention, an image's folder of maps failing its sync (at/0.4): exit 1, one line saying what was written and naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|')), every file in place and whole" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: attention: at/0.4/layer00-mean.png: written, but its folder at/0.4 could not be synced: Input/output error" got.err && diff -r at at0 > /dev/null && no_tmp at'
rm -rf at; "$VITMAE" attention --ckpt mae.safetensors --threads 1 --out at data/a > /dev/null 2>&1 || { echo "FAILED: attention"; fail=1; }
FAULT_FUNC=fsync FAULT_N=8 LD_PRELOAD=$shim "$VITMAE" attention --ckpt mae.safetensors --threads 1 --out at --force --head mean data/a \
  > got.out 2> got.err; rc=$?
t "attention --force over a run of every head, at/0.1 failing its sync: exit 1, one line saying what was written and naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the new maps, montages and page in place, the earlier heads' maps gone" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: attention: at/0.1/layer00-mean.png: written, but its folder at/0.1 could not be synced: Input/output error" got.err && diff -r at at0 > /dev/null && no_tmp at'
rm -rf at at0
cp -R data dt
probe_args="probe --ckpt mae.safetensors --train data --test dt --threads 1 --linear --out pr"
rm -rf pr pr0; "$VITMAE" ${probe_args}0 > /dev/null 2>&1 || { echo "FAILED: probe"; fail=1; }
FAULT_FUNC=fsync FAULT_N=3 LD_PRELOAD=$shim "$VITMAE" $probe_args > got.out 2> got.err; rc=$?
t "probe --out, the folder's sync after the matrices failing: exit 1, one line saying what was written and naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|')), both matrices in place and whole" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: probe: pr/confusion-knn.png and 1 more: written, but their folder pr could not be synced: Input/output error" got.err && diff -r pr pr0 > /dev/null && no_tmp pr'
rm -rf pr; "$VITMAE" ${probe_args% --linear*} --out pr > /dev/null 2>&1 || { echo "FAILED: probe"; fail=1; }
cp pr/confusion-knn.png knn0.png
FAULT_FUNC=fsync FAULT_N=3 LD_PRELOAD=$shim "$VITMAE" $probe_args --force > got.out 2> got.err; rc=$?
t "probe --out --force over an earlier matrix, the folder's sync failing: exit 1, one line saying what was written and naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the new matrices in place" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: probe: pr/confusion-knn.png and 1 more: written, but their folder pr could not be synced: Input/output error" got.err && diff -r pr pr0 > /dev/null && no_tmp pr'
for n in 1 2; do
  rm -rf pr; "$VITMAE" ${probe_args% --linear*} --out pr > /dev/null 2>&1 || { echo "FAILED: probe"; fail=1; }
  FAULT_FUNC=fsync FAULT_N=$n FAULT_ERRNO=28 LD_PRELOAD=$shim "$VITMAE" $probe_args --force > got.out 2> got.err; rc=$?
  t "probe --out --force, matrix $n of 2 not written (a full disk): exit 1, one line naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the earlier matrix as it was, nothing else ($(ls pr | tr '\n' ' '))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: probe: pr/confusion-$([ $n = 1 ] && echo knn || echo linear).png: No space left on device" got.err &&
     [ "$(ls -A pr)" = confusion-knn.png ] && cmp -s pr/confusion-knn.png knn0.png'
done
rm -rf pr
FAULT_FUNC=fsync FAULT_N=1 FAULT_ERRNO=28 LD_PRELOAD=$shim "$VITMAE" $probe_args > got.out 2> got.err; rc=$?
t "probe --out, the first matrix not written: exit 1, one line (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the --out folder it made removed" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && [ ! -e pr ]'
rm -rf pr pr0 dt knn0.png
rm -rf em em0; mkdir em em0
"$VITMAE" embed --ckpt mae.safetensors --threads 1 --out em0/f.npy data/a > /dev/null 2>&1 || { echo "FAILED: embed"; fail=1; }
FAULT_FUNC=fsync FAULT_N=3 LD_PRELOAD=$shim "$VITMAE" embed --ckpt mae.safetensors --threads 1 --out em/f.npy data/a \
  > got.out 2> got.err; rc=$?
t "embed, the folder's sync after a new pair failing: exit 1, one line saying what was written and naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the pair in place" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: embed: em/f.npy and 1 more: written, but their folder em could not be synced: Input/output error" got.err && diff -r em em0 > /dev/null && no_tmp em'
for n in 1 2; do
  rm -rf em; mkdir em
  "$VITMAE" embed --ckpt mae.safetensors --threads 1 --out em/f.npy data/a/0.1.png > /dev/null 2>&1 || { echo "FAILED: embed"; fail=1; }
  cp em/f.npy f0.npy; cp em/f.txt f0.txt
  FAULT_FUNC=fsync FAULT_N=$n FAULT_ERRNO=28 LD_PRELOAD=$shim "$VITMAE" embed --ckpt mae.safetensors --threads 1 --out em/f.npy --force data/a \
    > got.out 2> got.err; rc=$?
  t "embed --force, file $n of the pair not written (a full disk): exit 1, one line naming it (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the earlier pair as it was" \
    '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -qx "vitmae: embed: em/f.$([ $n = 1 ] && echo npy || echo txt): No space left on device" got.err &&
     cmp -s em/f.npy f0.npy && cmp -s em/f.txt f0.txt && [ "$(ls -A em | wc -l)" -eq 2 ]'
done
rm -rf em em0 f0.npy f0.txt

# attention --force over an earlier run that stops part-way (a full disk: fsync failing with ENOSPC on
# the second image's map) writes its own index.html, which links exactly the files this run wrote and
# names the two images it drew nothing of; the earlier page stayed, and linked the first image's
# earlier maps, which this run had removed. A page that cannot be written under --force removes the
# earlier one, which would show files this run replaced.
rm -rf at
"$VITMAE" attention --ckpt mae.safetensors --threads 1 --out at data/a > /dev/null 2>&1 || { echo "FAILED: attention"; fail=1; }
FAULT_FUNC=fsync FAULT_N=3 FAULT_ERRNO=28 LD_PRELOAD=$shim "$VITMAE" attention --ckpt mae.safetensors --threads 1 \
  --out at --force --head mean data/a > got.out 2> got.err; rc=$?
links=$(grep -o 'href="[^"]*"' at/index.html 2>/dev/null | sed 's/^href="//; s/"$//' | tr '\n' ' ')
missing=0; for l in $links; do [ -f "at/$l" ] || missing=1; done
t "attention --force stopped by a full disk: a new index.html with only this run's files ($links), the images not drawn named (exit $rc)" \
  '[ $rc -eq 1 ] && [ "$links" = "0.1.attn.png 0.1/layer00-mean.png " ] && [ $missing -eq 0 ] &&
   grep -q "<li>data/a/0.4.png: at/0.4/layer00-mean.png: No space left on device</li>" at/index.html &&
   grep -q "<li>data/a/0.8.png: not reached: the run stopped before it</li>" at/index.html && grep -q "index at/index.html" got.out'
rm -rf at
"$VITMAE" attention --ckpt mae.safetensors --threads 1 --out at data/a > /dev/null 2>&1 || { echo "FAILED: attention"; fail=1; }
FAULT_FUNC=fsync FAULT_N=7 LD_PRELOAD=$shim "$VITMAE" attention --ckpt mae.safetensors --threads 1 \
  --out at --force --head mean data/a > got.out 2> got.err; rc=$?
t "attention --force whose index.html cannot be written: exit 1, one line, the earlier page gone (exit $rc: $(head -n 2 got.err | tr '\n' '|'))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && [ ! -e at/index.html ] && [ -s at/0.8/layer00-mean.png ] &&
   grep -qx "vitmae: attention: at/index.html: Input/output error (the earlier index.html, which showed files this run replaced, is removed)" got.err'
rm -rf at

# Failures of the file system that a test run as root cannot get from permissions, each with its one
# whole line, its exit status and no file left half-written.
# A checkpoint whose folder's fsync fails after its rename (fsync_dir: only folders' fsyncs counted):
# st_write says so naming the file, exit 1; the file is in place whole, no temporary left. --val-frac 0
# --steps 1: the folder syncs are config.json's, curves.png's, samples/'s, curves.png's again, then the
# checkpoint's, the fifth.
rm -rf tr
FAULT_FUNC=fsync_dir FAULT_N=5 LD_PRELOAD=$shim "$VITMAE" $tr_args > got.out 2> got.err; rc=$?
t "train, the checkpoint's folder sync failing: exit 1, the whole line (exit $rc: $(head -n 2 got.err | tr '\n' '|')), the checkpoint whole" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] &&
   grep -qx "vitmae: train: tr/checkpoint-1.safetensors: written, but its folder tr could not be synced: Input/output error" got.err &&
   "$VITMAE" info tr/checkpoint-1.safetensors > /dev/null 2>&1 && [ -z "$(ls -a tr | grep "\.tmp-")" ]'
# The sixth: checkpoint.safetensors, linked to that snapshot (publish_latest), its folder's sync failing.
# It was ignored (exit 0, nothing said); now the one wording of a file in place whose folder was not
# synced, exit 1, both files whole.
rm -rf tr
FAULT_FUNC=fsync_dir FAULT_N=6 LD_PRELOAD=$shim "$VITMAE" $tr_args > got.out 2> got.err; rc=$?
t "train, the latest checkpoint's folder sync failing: exit 1, the whole line (exit $rc: $(head -n 2 got.err | tr '\n' '|')), both files whole" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] &&
   grep -qx "vitmae: train: tr/checkpoint.safetensors: written, but its folder tr could not be synced: Input/output error" got.err &&
   cmp -s tr/checkpoint.safetensors tr/checkpoint-1.safetensors && "$VITMAE" info tr/checkpoint.safetensors > /dev/null 2>&1'
# train --overwrite of a run whose folder cannot be moved aside: a 250-byte name, whose RUN.old-1 is
# longer than a name may be (ENAMETOOLONG; a rename that fails otherwise needs permissions root has).
# One line naming both, exit 1, the run in place as it was, nothing at RUN.old-1.
long=$(printf 'o%.0s' $(seq 250))
rm -rf "$long"
"$VITMAE" ${tr_args% --out tr} --out "$long" > /dev/null 2>&1 || { echo "FAILED: a run in a 250-byte folder"; fail=1; }
cp "$long/checkpoint.safetensors" before.safetensors
"$VITMAE" ${tr_args% --out tr} --out "$long" --overwrite > got.out 2> got.err; rc=$?
t "train --overwrite, the old run cannot be moved aside: exit 1, the whole line (exit $rc: $(head -n 2 got.err | sed "s/$long/RUN/g" | tr '\n' '|')), the run as it was" \
  '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] &&
   grep -qx "vitmae: train --overwrite: cannot move $long aside to $long.old-1: File name too long" got.err &&
   cmp -s "$long/checkpoint.safetensors" before.safetensors && [ ! -e "$long.old-1" ]'
rm -rf "$long"
# The data folder that cannot be reached mid-run for a reason other than its being gone: its path goes
# through a link swapped (one rename) for a link to itself, so stat says ELOOP. One line with the
# reason, exit 1, the last checkpoint whole (it is said as gone only for ENOENT and ENOTDIR).
rm -rf real sw loop sw.new rl && mkdir real && cp -r data real/data && ln -s real sw && ln -s loop loop
"$VITMAE" train --data sw/data --img 8 --patch 4 --dim 8 --depth 1 --heads 2 --dec-dim 8 --dec-depth 1 --dec-heads 2 \
  --batch 2 --steps 1000000 --threads 1 --val-frac 0 --ckpt-every 2 --cache-mb 0 --store none --out rl > /dev/null 2> rl.err &
pid=$!
i=0; while [ $i -lt 1200 ] && [ ! -e rl/checkpoint.safetensors ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
ln -s loop sw.new && mv -T sw.new sw
i=0; while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -KILL $pid 2>/dev/null; wait $pid; rc=$?
t "data folder behind a link loop mid-run: exit 1, the whole line with why ($rc: $(head -n 2 rl.err | tr '\n' '|')), a checkpoint kept" \
  '[ $rc -eq 1 ] && [ "$(wc -l < rl.err)" -eq 1 ] &&
   grep -qx "vitmae: sw/data: the data folder cannot be reached: Too many levels of symbolic links" rl.err &&
   "$VITMAE" info rl/checkpoint.safetensors > /dev/null 2>&1 && [ -z "$(ls -a rl | grep "\.tmp-")" ]'
rm -rf real sw loop rl

# The buffers each command sizes by its input (images, masks, features, outputs; docs/testing.md,
# "Crashes, full disks, memory"), each allocation of one such size failing in turn: exit 0 with the
# report of a run without the failure, or exit 1 with one line `vitmae: WHAT: ...out of memory...`
# (two where the run stops: the image's, then "stopped: this process is out of memory ..."); never a
# crash or a sanitizer's report, and no --out that a run with no result made. A checkpoint of 9 patches
# (12x12, patch 4: K = 2 kept at mask ratio 0.75) and the 6 images of data: B = 6 at once. Each mask
# (infer_random_mask, attention's) allocates L floats of noise (36 bytes) and 2L ints (72 bytes).
"$VITMAE_TOOLS/mkckpt" ckpt m12.safetensors --img 12 --patch 4 --channels 1 >/dev/null || { echo "FAILED: mkckpt m12"; fail=1; }
"$VITMAE" finetune --ckpt m12.safetensors --data data --val-frac 0 --steps 1 --batch 2 --threads 1 --out ft12 >/dev/null 2>&1 ||
  { echo "FAILED: finetune of m12"; fail=1; }
# Leaks are looked for here (under ASan): these paths free what they hold before they return.
asan_before=$ASAN_OPTIONS; ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=1"
# sized_fail NAME OUT "SIZES" ARGS...: vitmae ARGS with each malloc and calloc of each size in SIZES
# (bytes) failing in turn, 8 calls of a size at most; OUT is the file or folder the run may make.
sized_runs=0
sized_fail() {
  name=$1; out=$2; sizes=$3; shift 3
  rm -rf "$out"
  "$VITMAE" "$@" > want.out 2>/dev/null || { echo "FAILED: $name without faults"; fail=1; return; }
  for sz in $sizes; do
    rm -rf "$out"
    FAULT_OWN=1 FAULT_MIN=$sz FAULT_MAX=$sz FAULT_COUNT=count LD_PRELOAD=$shim "$VITMAE" "$@" >/dev/null 2>&1
    for f in malloc calloc; do
      n=$(sed -n "s/^$f //p" count); [ "${n:-0}" -gt 8 ] && n=8
      i=1
      while [ "$i" -le "${n:-0}" ]; do
        rm -rf "$out"
        FAULT_OWN=1 FAULT_MIN=$sz FAULT_MAX=$sz FAULT_FUNC=$f FAULT_N=$i LD_PRELOAD=$shim timeout 60 "$VITMAE" "$@" \
          > got.out 2> got.err; rc=$?
        sized_runs=$((sized_runs + 1))
        if [ $rc -eq 0 ]; then
          # (attention's timing aside)
          [ "$(sed -E 's/[0-9.]+ (s|images\/s)\b/T/g' got.out)" = "$(sed -E 's/[0-9.]+ (s|images\/s)\b/T/g' want.out)" ] ||
            { echo "FAILED: $name, $f $i of $sz bytes failing: exit 0 with another report"; fail=1; }
        elif [ $rc -ne 1 ] || grep -qv '^vitmae: ' got.err || ! grep -q 'out of memory' got.err ||
             { [ "$(wc -l < got.err)" -ne 1 ] && ! { [ "$(wc -l < got.err)" -eq 2 ] &&
               tail -n 1 got.err | grep -q '^vitmae: [a-z]*: stopped: this process is out of memory'; }; }; then
          echo "FAILED: $name, $f $i of $sz bytes failing: exit $rc, stderr:"; head -3 got.err; fail=1
        elif [ ! -s got.out ] && [ -e "$out" ]; then
          echo "FAILED: $name, $f $i of $sz bytes failing: exit 1, no result, $out left: $(ls "$out" | head -3 | tr '\n' ' ')"; fail=1
        fi
        i=$((i + 1))
      done
    done
  done
  rm -rf "$out"
}
# reconstruct: images, norm, recon (3456), patch errors (216), ids_keep (48), status and slot (24),
# masks (54), mse and loss (48), messages (3072), a mask's noise and scratch (36, 72).
sized_fail reconstruct rsz "3456 216 48 24 54 3072 36 72" reconstruct --ckpt m12.safetensors --threads 1 --out rsz data
# eval: as reconstruct (items 24), without messages.
sized_fail eval none "3456 216 48 24 54 36 72" eval --ckpt m12.safetensors --threads 1 --data data
# attention: the mask's keep and noise (36), its scratch (72), the view (576); one image.
sized_fail attention asz "36 72 576" attention --ckpt m12.safetensors --mask-ratio 0.75 --threads 1 --out asz data/a/0.1.png
# embed: the features (6 x 32 floats, 768).
sized_fail embed esz.npy "768" embed --ckpt m12.safetensors --threads 1 --out esz.npy data
# classify: images (3456), probabilities (48), ok (24), order (8), messages (3072).
sized_fail classify none "3456 48 24 8 3072" classify --ckpt ft12 --threads 1 data
# probe (--test a copy of --train: no warning line): an image's view, 8x8 up to 12x12, its filter tables
# (12 outputs x 3 taps: 288 bytes of weights, 96 of first/count, each axis); the features (768). A
# table that failed made a black view that the probe took, exit 0 with another result, until the
# seventy-eighth session (image_eval_view; docs/data.md).
rm -rf data2 && cp -r data data2
sized_fail probe none "288 96 768" probe --ckpt m12.safetensors --train data --test data2 --threads 1
rm -rf data2
t "the buffers sized by the input, each failing in turn ($sized_runs runs): exit 0 or 1, one line" '[ $sized_runs -gt 60 ]'
# train's random resized crops of synth's shapes (data's are flat: any resize of them is the same),
# 8x8 at --img 8: each crop's filter tables (8 outputs x 3 taps, 192 bytes; the 5th to 8th of that
# size, after the memory check's) failing in turn: exit 0 with the weights of a run without the
# failure (same_weights), or exit 1 with one line naming the image. A failed table made a
# nearest-neighbour crop, trained on, exit 0 (until the seventy-eighth session: crop_resize).
"$VITMAE_TOOLS/synth" sy --count 6 --size 8 --classes 2 --grey > /dev/null 2>&1 || { echo "FAILED: synth sy"; fail=1; }
tr8="train --data sy --img 8 --patch 4 --dim 8 --depth 1 --heads 2 --dec-dim 8 --dec-depth 1 --dec-heads 2 --batch 2
  --steps 1 --threads 1 --val-frac 0 --cache-mb 0 --store none"
rm -rf rrc0 && "$VITMAE" $tr8 --out rrc0 > /dev/null 2>&1 || { echo "FAILED: train $tr8"; fail=1; }
rrc_bad=0
for i in 5 6 7 8; do
  rm -rf rrc
  FAULT_OWN=1 FAULT_MIN=192 FAULT_MAX=192 FAULT_FUNC=calloc FAULT_N=$i LD_PRELOAD=$shim "$VITMAE" $tr8 --out rrc > /dev/null 2> got.err; rc=$?
  if [ $rc -eq 0 ] && same_weights rrc0/checkpoint.safetensors rrc/checkpoint.safetensors; then :
  elif [ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -q '^vitmae: sy/[a-z]*/[0-9]*\.png: out of memory' got.err; then :
  else echo "    train, calloc $i of 192 bytes failing: exit $rc, $(head -n 2 got.err | tr '\n' '|')"; rrc_bad=1; fi
done
t "train, a random resized crop's filter tables failing: the same weights, or exit 1 naming the image" '[ $rrc_bad -eq 0 ]'
rm -rf rrc rrc0 sy
# Photos larger than the working size (40x40 at --img 8: working images 16x16, docs/data.md) are
# resized as they are decoded; the pass between the two axes (40 rows x 16 columns, 2560 bytes) failing
# in turn, 8 times: exit 0 with the weights of a run without the failure, or exit 1 with one line
# naming the image. Until the seventy-ninth session a failed resize made a nearest-neighbour working
# image, trained on (and counted in the pixel statistics), exit 0 (image_resize_bilinear).
"$VITMAE_TOOLS/synth" sy40 --count 6 --size 40 --classes 2 --grey > /dev/null 2>&1 || { echo "FAILED: synth sy40"; fail=1; }
trw=$(echo $tr8 | sed 's/--data sy /--data sy40 /')
rm -rf wrk0 && "$VITMAE" $trw --out wrk0 > /dev/null 2>&1 || { echo "FAILED: train $trw"; fail=1; }
wrk_bad=0 wrk_failed=0
for i in 1 2 3 4 5 6 7 8; do
  rm -rf wrk
  FAULT_OWN=1 FAULT_MIN=2560 FAULT_MAX=2560 FAULT_FUNC=malloc FAULT_N=$i LD_PRELOAD=$shim "$VITMAE" $trw --out wrk > /dev/null 2> got.err; rc=$?
  if [ $rc -eq 0 ] && same_weights wrk0/checkpoint.safetensors wrk/checkpoint.safetensors; then :
  elif [ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -q '^vitmae: sy40/[a-z]*/[0-9]*\.png: out of memory' got.err; then
    wrk_failed=$((wrk_failed + 1))
  else echo "    train, malloc $i of 2560 bytes failing: exit $rc, $(head -n 2 got.err | tr '\n' ' ')"; wrk_bad=1; fi
done
t "train, a working image's resize failing: the same weights, or exit 1 naming the image ($wrk_failed of 8 stopped)" \
  '[ $wrk_bad -eq 0 ] && [ $wrk_failed -gt 0 ]'
rm -rf wrk wrk0 sy40

# curves.png's lines (each series' points, x and y: 18 logged steps of 8 bytes, 144, the 1st to 4th of
# that size) that memory runs out for: exit 1, `RUN/curves.png: out of memory`, not a plot without the
# line (exit 0, a curves.png with the train loss or the learning rate left out, until the seventy-ninth
# session); the last step's weights saved before the run stops, and said (since the eightieth).
"$VITMAE_TOOLS/synth" sc --count 4 --size 16 --classes 2 > /dev/null 2>&1 || { echo "FAILED: synth sc"; fail=1; }
trc="train --data sc --img 16 --patch 4 --dim 8 --depth 1 --heads 2 --dec-dim 8 --dec-depth 1 --dec-heads 2 --batch 2
  --steps 17 --log-every 1 --eval-every 17 --threads 1 --val-frac 0 --cache-mb 0 --store none"
rm -rf cv0 && "$VITMAE" $trc --out cv0 > /dev/null 2>&1 || { echo "FAILED: train $trc"; fail=1; }
cv_bad=0; cv_stops=0
for i in 1 2 3 4; do
  rm -rf cv
  FAULT_OWN=1 FAULT_MIN=144 FAULT_MAX=144 FAULT_FUNC=malloc FAULT_N=$i LD_PRELOAD=$shim "$VITMAE" $trc --out cv > /dev/null 2> got.err; rc=$?
  if [ $rc -eq 0 ] && cmp -s cv0/curves.png cv/curves.png; then :
  elif [ $rc -eq 1 ] && [ "$(cat got.err)" = "vitmae: train: cv/curves.png: out of memory
vitmae: saved cv/checkpoint.safetensors at step 17, the run's last" ] &&
       same_weights cv0/checkpoint.safetensors cv/checkpoint.safetensors; then cv_stops=$((cv_stops + 1))
  else echo "    train, malloc $i of 144 bytes failing: exit $rc, $(head -n 2 got.err | tr '\n' '|')"; cv_bad=1; fi
done
t "train, curves.png's points failing ($cv_stops stopped): the same curves.png, or exit 1 naming it" '[ $cv_bad -eq 0 ] && [ $cv_stops -ge 1 ]'
# The pictures' own memory (docs/data.md, "Run folders"): a sample sheet's canvas (W x H x 3 bytes, read
# from cv0's sheet), a sheet row's error map (128 x 128 x 2 floats, 131072 bytes, a realloc) and
# curves.png's canvas (960x640, finetune's 960x840), each first allocation of its size failing (the
# curves' first is step 0's, before any step; finetune's second, its last step's): exit 1, the line names
# the file. Before, they said `train: out of memory for a 707x588 canvas`, `... for a 700 x 192 panel`,
# `finetune: out of memory for a 960x840 canvas`, naming none.
png_canvas() { od -An -tu1 -j16 -N8 "$1" | awk '{ printf "%d", (($3 * 256 + $4) * ($7 * 256 + $8)) * 3 }'; }
pic_bad=0
while IFS='|' read -r f sz want; do
  rm -rf cv
  FAULT_OWN=1 FAULT_MIN=$sz FAULT_MAX=$sz FAULT_FUNC=$f FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" $trc --sample-every 1 --out cv \
    > /dev/null 2> got.err; rc=$?
  [ $rc -eq 1 ] && sed -n 1p got.err | grep -qx "vitmae: train: $want" ||
    { echo "    train, $f 1 of $sz bytes failing: exit $rc, $(head -n 2 got.err | tr '\n' '|')"; pic_bad=1; }
done <<EOF
calloc|$(png_canvas cv0/samples/step-17.png)|cv/samples/step-1\.png: out of memory for a [0-9]*x[0-9]* canvas
realloc|131072|cv/samples/step-1\.png: out of memory for a [0-9]* x [0-9]* panel
calloc|1843200|cv/curves\.png: out of memory for a 960x640 canvas
EOF
rm -rf ftc
FAULT_OWN=1 FAULT_MIN=2419200 FAULT_MAX=2419200 FAULT_FUNC=calloc FAULT_N=2 LD_PRELOAD=$shim "$VITMAE" finetune --ckpt mae.safetensors \
  --data data --val-frac 0 --steps 1 --batch 2 --threads 1 --out ftc > /dev/null 2> got.err; rc=$?
[ $rc -eq 1 ] && [ "$(cat got.err)" = "vitmae: finetune: ftc/curves.png: out of memory for a 960x840 canvas
vitmae: saved ftc/checkpoint.safetensors at step 1, the run's last" ] ||
  { echo "    finetune, calloc 2 of 2419200 bytes failing: exit $rc, $(head -n 2 got.err | tr '\n' '|')"; pic_bad=1; }
t "train's sample sheet and curves.png, finetune's curves.png: memory for the picture failing, the line names its file" '[ $pic_bad -eq 0 ]'
rm -rf ftc
rm -rf cv cv0 sc

# An EXIF orientation (6: a quarter turn) that memory runs out for as it is read (PNG's eXIf block and
# its copy, the TIFF block libexif loads: 32 bytes each for PIL's one-tag EXIF), in PNG, JPEG and
# WebP, each of the first 12 mallocs of that size failing in turn: exit 0 with the features of a run
# without the failure, or exit 1 with one line, out of memory (the image's, at least once a format). The
# image was taken unturned, exit 0, other features (until the seventy-ninth session: exif_orientation,
# png_orientation).
"$VITMAE_TOOLS/mkckpt" ckpt m16c.safetensors --img 16 --patch 4 --channels 3 >/dev/null || { echo "FAILED: mkckpt m16c"; fail=1; }
/usr/bin/python3 -c '
from PIL import Image
px = bytes((i * 7) % 251 for i in range(30 * 20 * 3))
for ext in ("png", "jpg", "webp"):
    ex = Image.Exif(); ex[0x0112] = 6
    Image.frombytes("RGB", (30, 20), px).save("o6." + ext, exif=ex.tobytes())' || { echo "FAILED: PIL o6"; fail=1; }
for f in o6.png o6.jpg o6.webp; do
  rm -f ex0.npy ex0.txt && "$VITMAE" embed --ckpt m16c.safetensors --threads 1 --out ex0.npy $f > /dev/null 2>&1 ||
    { echo "FAILED: embed $f"; fail=1; }
  ex_bad=0; ex_stops=0
  for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
    rm -f ex.npy ex.txt
    FAULT_OWN=1 FAULT_MIN=32 FAULT_MAX=32 FAULT_FUNC=malloc FAULT_N=$i LD_PRELOAD=$shim "$VITMAE" embed --ckpt m16c.safetensors \
      --threads 1 --out ex.npy $f > /dev/null 2> got.err; rc=$?
    if [ $rc -eq 0 ] && cmp -s ex0.npy ex.npy; then :
    elif [ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 1 ] && grep -q '^vitmae: [^ ]*: out of memory$' got.err && [ ! -e ex.npy ]; then
      grep -qx "vitmae: $f: out of memory" got.err && ex_stops=$((ex_stops + 1))
    else echo "    embed $f, malloc $i of 32 bytes failing: exit $rc, $(head -n 2 got.err | tr '\n' '|')"; ex_bad=1; fi
  done
  t "embed $f, its EXIF orientation failing ($ex_stops stopped at it): the same features, or exit 1, out of memory" \
    '[ $ex_bad -eq 0 ] && [ $ex_stops -ge 1 ]'
done
rm -f o6.png o6.jpg o6.webp ex0.npy ex0.txt ex.npy ex.txt m16c.safetensors

# A random mask that memory runs out for (its scratch, 72 bytes, the first of that size: one image)
# stops reconstruct at that image, as its pixels' memory does (docs/interface.md, reconstruct): the
# image's line, then the stop line, exit 1, no --out folder; eval's stops the run, one line. Until the
# seventy-eighth session reconstruct went on with the next image there (docs/testing.md).
stop1='vitmae: reconstruct: stopped: this process is out of memory or open files (0 of 1 images written)'
rm -rf rm1
FAULT_OWN=1 FAULT_MIN=72 FAULT_MAX=72 FAULT_FUNC=malloc FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" reconstruct --ckpt m12.safetensors \
  --threads 1 --out rm1 data/a/0.1.png > got.out 2> got.err; rc=$?
t "reconstruct, the mask's allocation failing: exit 1, the image's line and the stop, no --out (exit $rc: $(tr '\n' '|' < got.err))" \
  '[ $rc -eq 1 ] && [ "$(cat got.err)" = "$(printf "vitmae: data/a/0.1.png: out of memory\n%s" "$stop1")" ] &&
   [ ! -s got.out ] && [ ! -e rm1 ]'
# Of 6 images, the 2nd's mask (72 bytes) or the 2nd's view as it loads (12x12 floats, 576 bytes: the
# 2nd of that size in the one thread) failing: one rule, the 1st written, none after the 2nd.
for what in "72 mask" "576 pixels"; do
  sz=${what%% *}; what=${what#* }
  rm -rf rm1
  FAULT_OWN=1 FAULT_MIN=$sz FAULT_MAX=$sz FAULT_FUNC=malloc FAULT_N=2 LD_PRELOAD=$shim "$VITMAE" reconstruct --ckpt m12.safetensors \
    --threads 1 --out rm1 data > got.out 2> got.err; rc=$?
  t "reconstruct, the 2nd image's $what failing: exit 1, its line, the stop, 1 panel (exit $rc: $(tr '\n' '|' < got.err))" \
    '[ $rc -eq 1 ] && [ "$(sed -n 1p got.err)" = "vitmae: data/a/0.4.png: out of memory" ] && [ "$(wc -l < got.err)" -eq 2 ] &&
     grep -qx "vitmae: reconstruct: stopped: this process is out of memory or open files (1 of 6 images written)" got.err &&
     [ "$(ls rm1)" = "0.1.recon.png" ] && grep -q "over 1 image$" got.out'
done
rm -rf rm1
# The pictures' bilinear resizes (docs/data.md): reconstruct's panels at --display 40 (a 12x12 view
# enlarged: the picture 40x40 floats, 6400 bytes; the pass between its axes 12 x 40, 1920 bytes) and
# attention's photo shrunk to --display 16 (40x40 to 16x16: the pass between 40 x 16, 2560 bytes), each
# first allocation failing: the image's line, the stop, exit 1, nothing written. Until the seventy-ninth
# session a failed resize drew nearest-neighbour pictures in their place, exit 0 (canvas_blit_resized,
# overlay_display_photo).
for sz in 6400 1920; do
  rm -rf rp1
  FAULT_OWN=1 FAULT_MIN=$sz FAULT_MAX=$sz FAULT_FUNC=malloc FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" reconstruct --ckpt m12.safetensors \
    --threads 1 --display 40 --out rp1 data > got.out 2> got.err; rc=$?
  t "reconstruct --display 40, a panel's resize ($sz bytes) failing: exit 1, the panel's line, the stop (exit $rc: $(tr '\n' '|' < got.err))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < got.err)" -eq 2 ] && grep -q "^vitmae: data/a/0.1.png: out of memory for a [0-9]* x [0-9]* panel$" got.err &&
     grep -qx "vitmae: reconstruct: stopped: this process is out of memory or open files (0 of 6 images written)" got.err && [ ! -e rp1 ]'
done
"$VITMAE_TOOLS/synth" big40 --count 1 --size 40 --grey > /dev/null 2>&1 || { echo "FAILED: synth big40"; fail=1; }
big40=$(ls big40/*/*.png | head -n 1)
rm -rf ap1
FAULT_OWN=1 FAULT_MIN=2560 FAULT_MAX=2560 FAULT_FUNC=malloc FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" attention --ckpt m12.safetensors \
  --threads 1 --display 16 --out ap1 "$big40" > got.out 2> got.err; rc=$?
t "attention --display 16, the photo's shrinking resize failing: exit 1, its line, the stop (exit $rc: $(tr '\n' '|' < got.err))" \
  '[ $rc -eq 1 ] && [ "$(sed -n 1p got.err)" = "vitmae: $big40: out of memory for a 16x16 picture" ] &&
   grep -qx "vitmae: attention: stopped: this process is out of memory or open files (0 of 1 images written)" got.err &&
   [ "$(wc -l < got.err)" -eq 2 ] && [ ! -e ap1 ]'
rm -rf rp1 ap1 big40
FAULT_OWN=1 FAULT_MIN=72 FAULT_MAX=72 FAULT_FUNC=malloc FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" eval --ckpt m12.safetensors \
  --threads 1 --data data > got.out 2> got.err; rc=$?
t "eval, a mask's allocation failing: exit 1, one line (exit $rc: $(tr '\n' '|' < got.err))" \
  '[ $rc -eq 1 ] && [ "$(cat got.err)" = "vitmae: eval: out of memory" ] && [ ! -s got.out ]'
FAULT_OWN=1 FAULT_MIN=72 FAULT_MAX=72 FAULT_FUNC=malloc FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" attention --ckpt m12.safetensors \
  --mask-ratio 0.75 --threads 1 --out am1 data/a/0.1.png > got.out 2> got.err; rc=$?
t "attention, the mask's allocation failing: exit 1, one line, no --out (exit $rc: $(tr '\n' '|' < got.err))" \
  '[ $rc -eq 1 ] && [ "$(cat got.err)" = "vitmae: attention: out of memory" ] && [ ! -s got.out ] && [ ! -e am1 ]'
rm -rf m12.safetensors ft12
ASAN_OPTIONS=$asan_before

# An 8x8 image whose pixel buffer (256 bytes, 264 with its row) cannot be allocated: the process is out of memory, and
# the reason says so. It advised "a --max-pixels below 64 skips it", a limit that skips every photo.
FAULT_OWN=1 FAULT_MIN=256 FAULT_MAX=256 FAULT_FUNC=malloc FAULT_N=1+ LD_PRELOAD=$shim "$VITMAE" data data > got.out 2> got.err; rc=$?
t "a small image's pixels out of memory: no --max-pixels advised ($rc: $(head -c 300 got.err))" \
  '[ $rc -eq 1 ] && grep -q "\.png: image 8x8: out of memory for its pixels (264 bytes): the process is out of memory, not the image too large$" got.err && ! grep -q max-pixels got.err'

# A new train or finetune run that failed before its first step, after it had written its config.json and
# metrics.csv (the loader's threads that cannot start, as under ulimit -u; finetune's gradient buffers
# out of memory), left its run folder with them, and the same command run again was refused as "a run
# that stopped before its first checkpoint". It now leaves nothing (docs/interface.md, section 1): the
# folders it made go with the files it wrote; into a folder that was there, its files go and the folder
# and the user's files stay; a resumed run's folder keeps everything; a step-0 row written (its
# curves.png failing after it) is a log, and its folder stays.
ps_tr="train --data data --img 8 --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 --batch 2 --threads 1"
ps_ft="finetune --ckpt mae.safetensors --data data --val-frac 0 --batch 2 --threads 1"
# first_failing FUNC BYTES PATTERN ARGS...: the first N for which vitmae ARGS, with the Nth call of FUNC
# of BYTES or more from its own code failing, says PATTERN on stderr (0: none does); got.err holds its
# lines, and the run's --out is removed before each try.
first_failing() {
  ff_func=$1; ff_min=$2; ff_pat=$3; shift 3
  FAULT_OWN=1 FAULT_MIN=$ff_min FAULT_COUNT=count LD_PRELOAD=$shim "$VITMAE" "$@" --out ffc >/dev/null 2>&1
  rm -rf ffc
  ff_n=$(sed -n "s/^$ff_func //p" count); ff_i=1
  while [ "$ff_i" -le "${ff_n:-0}" ]; do
    rm -rf pq
    FAULT_OWN=1 FAULT_MIN=$ff_min FAULT_FUNC=$ff_func FAULT_N=$ff_i LD_PRELOAD=$shim timeout 60 "$VITMAE" "$@" --out pq/run \
      > got.out 2> got.err
    grep -q "$ff_pat" got.err && { echo "$ff_i"; return; }
    ff_i=$((ff_i + 1))
  done
  echo 0
}
for cmd in train finetune; do
  [ $cmd = train ] && args=$ps_tr || args=$ps_ft
  rm -rf pq
  FAULT_OWN=1 FAULT_FUNC=pthread_create FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" $args --steps 1 --out pq/run > got.out 2> got.err; rc=$?
  t "$cmd whose loader threads cannot start: exit 1, its line, no folder left (exit $rc: $(grep -v warning got.err | tr '\n' '|'); $(ls -R pq 2>&1 | tr '\n' ' '))" \
    '[ $rc -eq 1 ] && grep -q "^vitmae: $cmd: cannot start [0-9]* loader threads*: Resource temporarily unavailable" got.err && [ ! -e pq ]'
  "$VITMAE" $args --steps 1 --out pq/run > got.out 2> got.err; rc=$?
  t "... the same command again: it runs (exit $rc: $(grep -v warning got.err | tr '\n' '|'))" '[ $rc -eq 0 ] && [ -s pq/run/checkpoint.safetensors ]'
  # Into a folder that was there, holding a user's file: the run's own files go, the folder stays.
  rm -rf pq && mkdir pq && echo notes > pq/notes.txt
  FAULT_OWN=1 FAULT_FUNC=pthread_create FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" $args --steps 1 --out pq > got.out 2> got.err; rc=$?
  t "$cmd --out a folder that was there, its loader threads failing: exit 1, the folder and the user's file as they were ($rc: $(ls -A pq | tr '\n' ' '))" \
    '[ $rc -eq 1 ] && [ "$(ls -A pq)" = notes.txt ] && [ "$(cat pq/notes.txt)" = notes ]'
  # A resumed run's folder keeps its files (a run stopped at step 1 of 2 by a signal in its set-up).
  rm -rf pq && VITMAE_FAULT_STOP_IN_SETUP=1 "$VITMAE" $args --steps 2 --out pq >/dev/null 2>&1 ||
    { echo "FAILED: the $cmd run into pq"; fail=1; }
  cp pq/checkpoint.safetensors before_pq.safetensors && cp pq/metrics.csv before_pq.csv
  FAULT_OWN=1 FAULT_FUNC=pthread_create FAULT_N=1 LD_PRELOAD=$shim "$VITMAE" $cmd --resume pq --threads 1 > got.out 2> got.err; rc=$?
  t "$cmd --resume, its loader threads failing: exit 1, the folder kept whole ($rc: $(ls pq | tr '\n' ' '))" \
    '[ $rc -eq 1 ] && cmp -s pq/checkpoint.safetensors before_pq.safetensors && cmp -s pq/metrics.csv before_pq.csv &&
     { [ $cmd = finetune ] || [ -s pq/config.json ]; }'
  rm -rf pq before_pq.safetensors before_pq.csv
done
# finetune's gradient buffers (one group's whole gradient, found by its line) out of memory: after its
# metrics.csv; train's come before its files.
np=$("$VITMAE" $ps_ft --steps 1 --out ftn 2>/dev/null | sed -n 's/.*, \([0-9]*\) parameters$/\1/p'); rm -rf ftn
n=$(first_failing calloc $((4 * ${np:-0})) "gradient buffers" $ps_ft --steps 1)
t "finetune's gradient buffers out of memory (calloc $n of $((4 * ${np:-0})) bytes): no folder left ($(grep -v warning got.err | tr '\n' '|'); $(ls -R pq 2>&1 | tr '\n' ' '))" \
  '[ "$n" -gt 0 ] && [ ! -e pq ]'
# train's step-0 curves.png out of memory (its canvas, found by its line): the step-0 row is written, a
# log, and the folder stays with it (docs/interface.md, section 1).
n=$(first_failing calloc 100000 "canvas" $ps_tr --steps 1)
t "train's step-0 curves.png out of memory (calloc $n): the folder stays with its step-0 row ($(grep -v warning got.err | tr '\n' '|'); $(ls pq/run 2>&1 | tr '\n' ' '))" \
  '[ "$n" -gt 0 ] && [ -s pq/run/config.json ] && [ "$(sed -n "2s/,.*//p" pq/run/metrics.csv)" = 0 ] && [ "$(wc -l < pq/run/metrics.csv)" -eq 2 ]'
rm -rf pq count

[ $fail -eq 0 ] && echo "cli fault ok"
exit $fail
