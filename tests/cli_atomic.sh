#!/bin/sh
# Checkpoints are written atomically (docs/interface.md, section 4): a temporary file in the same
# folder, fsync, rename over the name, fsync of the folder; RUN/checkpoint.safetensors swapped in by a
# rename, then the folder synced. Seen with strace, for train and for finetune (which came later and
# must keep it): each snapshot's three calls in that order, one after the other. Skipped, with a note,
# where strace is missing or cannot trace.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch
scratch dir
cd "$dir" || exit 1
if ! command -v strace > /dev/null 2>&1 || ! strace -qq -o /dev/null true 2> /dev/null; then
  echo "cli_atomic skipped: strace missing or not permitted here"
  rm -rf "$dir"; exit 0
fi
"$VITMAE_TOOLS/synth" "$dir/data" --count 24 --size 16 --seed 2 > /dev/null || { echo "synth failed"; exit 1; }
model="--img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2"
# LeakSanitizer cannot run under ptrace (it stops the process with exit 134): off for the traced runs.
trace() {
  name=$1; shift
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -y -qq -e trace=fsync,fdatasync,rename,renameat,renameat2 \
    -o "$dir/$name.trace" "$@"
}

# The calls of each write, in order, with the scratch folder's path taken out: for a snapshot
# "fsync <tmp>", "rename <tmp> <snapshot>", "fsync <folder>".
calls() {
  sed -n 's/^[0-9]* *//; s/ *= -\{0,1\}[0-9].*$//; p' "$dir/$1.trace" | sed "s|$dir/||g" |
    sed -n 's/^fsync([0-9]*<\(.*\)>)$/fsync \1/p; s/^rename("\(.*\)", "\(.*\)")$/rename \1 \2/p'
}
# 0 when the calls of run $1 hold, for each snapshot $2/checkpoint-N.safetensors, N in $3, its three
# calls in a row, then the link swapped in as checkpoint.safetensors and the folder synced.
atomic() {
  calls "$1" | awk -v run="$2" -v steps="$3" '
    { line[NR] = $0 }
    END {
      n = split(steps, s, " ")
      for (k = 1; k <= n; k++) {
        snap = run "/checkpoint-" s[k] ".safetensors"; tmp = run "/.checkpoint-" s[k] ".safetensors.tmp-"
        found = 0
        for (i = 1; i + 4 <= NR; i++) {
          split(line[i], a, " "); split(line[i + 1], b, " ")
          if (a[1] != "fsync" || index(a[2], tmp) != 1 || b[1] != "rename" || b[2] != a[2] || b[3] != snap) continue
          split(line[i + 3], d, " ")
          if (line[i + 2] == "fsync " run && d[1] == "rename" && d[3] == run "/checkpoint.safetensors" &&
              line[i + 4] == "fsync " run) found = 1
        }
        if (!found) { print "checkpoint-" s[k] ": not temp + fsync, rename, fsync of the folder"; bad = 1 }
      }
      exit bad
    }'
}

trace train "$VITMAE" train --data "$dir/data" $model --batch 8 --steps 2 --ckpt-every 1 --threads 1 --out "$dir/run" \
  > /dev/null 2> "$dir/train.err"; rc=$?
t "train: checkpoints written atomically ($rc: $(atomic train run "1 2" | tr "\n" " "))" '[ $rc -eq 0 ] && atomic train run "1 2" > /dev/null'
trace finetune "$VITMAE" finetune --ckpt "$dir/run/checkpoint.safetensors" --data "$dir/data" --batch 8 --steps 2 --ckpt-every 1 \
  --threads 1 --out "$dir/ft" > /dev/null 2> "$dir/ft.err"; rc=$?
t "finetune: checkpoints written atomically ($rc: $(atomic finetune ft "1 2" | tr "\n" " "))" '[ $rc -eq 0 ] && atomic finetune ft "1 2" > /dev/null'
rm -rf "$dir"
[ $fail -eq 0 ] && echo "cli_atomic ok"
exit $fail
