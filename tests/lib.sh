# Shell helpers shared by the command-line tests (sourced, not run: the runner takes tests/cli_*.sh).
# Sourced first thing; the test then sets fail=0 and makes its own scratch folder.

# Python writes its output in UTF-8 whatever the locale: the tests compare what it prints of a file name
# with the name's bytes, and under a locale that is not UTF-8 (LC_ALL=C with PYTHONUTF8=0, a Latin-1
# one) a name that is not ASCII failed to print (UnicodeEncodeError, cli_reconstruct.sh's Source checks).
# surrogateescape: the bytes of a name that is not UTF-8, read from argv, are written back as they were.
PYTHONIOENCODING=utf-8:surrogateescape; export PYTHONIOENCODING

# t NAME CHECK: evaluates CHECK; when it fails, prints "FAILED: NAME" and sets fail=1.
t() { if eval "$2"; then :; else echo "FAILED: $1"; fail=1; fi; }
# help_flags CMD: `vitmae CMD --help` with one line a flag: an entry too wide for the flag column has
# its description on the next line (cmd/cli.c, cli_print_usage), here joined to it again, so that a test
# reads a flag's default and range from its line.
help_flags() {
  "$VITMAE" "$1" --help | awk 'held != "" && /^                             [^ ]/ { sub(/^ +/, ""); print held " " $0; held = ""; next }
    held != "" { print held; held = "" }
    /^  --[^ ]+( [^ ]+)?$/ && length($0) >= 28 { held = $0; next }
    { print }
    END { if (held != "") print held }'
}
# drop_threads_warning FILE: the line a command without a start-up header says of a --threads (or an
# OMP_NUM_THREADS) above the CPUs it may use (cmd/cli.h, cli_start_threads) removed from FILE, for checks
# of what else it said that run --threads 3 on a machine of 2 CPUs or of more.
drop_threads_warning() {
  sed -i -e '/^vitmae: warning: --threads [0-9]* is more than the [0-9]* CPUs* this process may use: slower, the same results$/d' \
    -e '/^vitmae: warning: OMP_NUM_THREADS=.* asks for [0-9]* threads, more than the [0-9]* CPUs* this process may use: slower, the same results (--threads T overrides it)$/d' "$1"
}
# scratch VAR: a new temporary folder in $VAR, removed when the test exits (also on HUP/INT/TERM).
scratch() {
  _scratch=$(mktemp -d) || exit 1
  eval "$1=\$_scratch"
  trap "rm -rf '$_scratch'" EXIT; trap 'exit 1' HUP INT TERM
}

# need_dir HELPER: ends the test (exit 1, one FAILED line) unless $dir is the test's scratch folder, made
# and set (scratch dir): a helper below that writes in "$dir/..." wrote at the root instead, /tmp or
# /usr1.log, shared by every test run on the machine, when a test (one of those with `scratch tmp`)
# never set it. Every helper here that writes under $dir calls it first (tests/cli_runner.sh checks).
need_dir() {
  [ -n "${dir:-}" ] && [ -d "$dir" ] && return 0
  echo "FAILED: $1: \$dir is not the test's scratch folder (\"${dir:-}\"; \`scratch dir\` first, tests/lib.sh)"; exit 1
}

# The data section of a safetensors file (parameters and AdamW moments), without the header, which
# holds run-specific metadata such as elapsed time. Exits 2 with a line on stderr, nothing written,
# when FILE cannot be read or is too short for its header.
safetensors_data_py='
import os, struct, sys
sys.excepthook = lambda kind, e, tb: (sys.stderr.write("%s: %s: %s\n" % (sys.argv[1], kind.__name__, e)), os._exit(2))
def data_of(path):
    try:
        with open(path, "rb") as f: b = f.read()
        n = struct.unpack("<Q", b[:8])[0] if len(b) >= 8 else None
    except OSError as e:
        sys.stderr.write("%s: %s: %s\n" % (sys.argv[1], path, e.strerror)); sys.exit(2)
    if n is None or 8 + n > len(b):
        sys.stderr.write("%s: %s: no safetensors header (%d bytes)\n" % (sys.argv[1], path, len(b))); sys.exit(2)
    return b[8 + n:]
'
data_of() { python3 -c "$safetensors_data_py"'
sys.stdout.buffer.write(data_of(sys.argv[2]))' data_of "$1"; }
# same_weights A B: 0 when two checkpoints hold bitwise the same tensors, 1 when they differ. Compared
# in one process, without scratch files: the two files were once written to "$dir/a.bin" and
# "$dir/b.bin", and in a test whose folder is $tmp ($dir unset) that was /a.bin and /b.bin, shared by
# every test and every checkout's `make test` on the machine; two side by side overwrote each other's
# and a same-weights check failed (cli_usage.sh's locale check, under load). And an unreadable file
# read as empty data matched another empty one. When the comparison itself fails (a file missing or
# cut short, python not starting) the test fails with its own line and fail=1, whatever the caller
# expects: `! same_weights` does not pass on an error.
same_weights() {
  python3 -c "$safetensors_data_py"'
sys.exit(0 if data_of(sys.argv[2]) == data_of(sys.argv[3]) else 1)' same_weights "$1" "$2"; _sw=$?
  [ $_sw -le 1 ] || { echo "FAILED: same_weights $1 $2: the comparison itself failed (exit $_sw)"; fail=1; }
  return $_sw
}
# The losses of a run's metrics.csv (its first 6 columns: step, epoch, lr, loss and the two validation
# figures; img/s and time vary). same_run A B: 0 when two run folders end with bitwise the same tensors
# and the same losses.
losses() { cut -d, -f1-6 "$1/metrics.csv"; }
same_run() { same_weights "$1/checkpoint.safetensors" "$2/checkpoint.safetensors" && [ "$(losses "$1")" = "$(losses "$2")" ]; }

# mpi_setup (after scratch dir): what a test of runs under mpirun needs. OpenMPI keeps its session
# directory (ompi.<host>.<uid>/pid.<mpirun pid>/, with PMIx's segments; the shared window and the
# vader transport's segments are in /dev/shm, docs/distributed.md) under TMPDIR, and can leave it
# behind when a rank is killed: it goes inside the test's folder, which the EXIT trap removes. As root OpenMPI needs OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM). OpenMPI's own allocations
# are not ours to free: $mpi_asan (ASAN_OPTIONS without the leak report) for every run under mpirun.
# mpi ARGS...: mpirun --oversubscribe --bind-to none ARGS with it.
mpi_setup() {
  need_dir mpi_setup
  TMPDIR="$dir/tmp"; mkdir -p "$TMPDIR"; export TMPDIR
  command -v mpirun >/dev/null 2>&1 || { echo "FAILED: mpirun not found (make installs openmpi-bin)"; exit 1; }
  OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
  mpi_asan="${ASAN_OPTIONS:-}:detect_leaks=0"
  # OpenMPI's point-to-point layer named, ob1: the one it picks here anyway (Debian's
  # /etc/openmpi/openmpi-mca-params.conf leaves out only ucx, "pml = ^ucx"). A list that leaves one out
  # still has every rank open the others, cm with its psm and psm2 transports: 0.2 s of the 0.5 s an
  # `mpirun -np 2 vitmae --version` took on the Zen 5 of the eighty-fourth session, and cli_mpi.sh alone
  # went from 137 s to 110 (docs/testing.md, "Running"). A caller's choice stays.
  [ -n "${OMPI_MCA_pml:-}" ] || { OMPI_MCA_pml=ob1; export OMPI_MCA_pml; }
}
mpi() { ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none "$@"; }
# mpi_need_shm NAME: ends the test NAME with one line "SKIP: NAME: WHY ...", exit 0, when /dev/shm is
# missing, not writable or has less than 64 MB free. OpenMPI backs its shared-memory transport there
# (4 MB a rank) and vitmae checks its room before it makes the shared gradient window (src/dist/dist.c,
# docs/distributed.md); on a machine without it OpenMPI warned on stderr and vitmae went on as messages,
# so checks of empty stderr and of "combined through shared memory" failed with nothing saying why.
# mpi_shm_skip NAME: the same check for a script that goes on without its MPI part (tests/tsan.sh):
# prints that line and returns 0 when the room is missing, returns 1 (nothing said) when it is there.
mpi_need_shm() { if mpi_shm_skip "$1"; then exit 0; fi; }
mpi_shm_skip() {
  _why=
  if [ ! -d /dev/shm ]; then _why="there is no /dev/shm"
  elif [ ! -w /dev/shm ]; then _why="/dev/shm is not writable"
  else
    _kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
    case "$_kb" in
      ''|*[!0-9]*) _why="the free room in /dev/shm cannot be read (df -Pk /dev/shm)" ;;
      *) [ "$_kb" -ge 65536 ] || _why="/dev/shm has $((_kb / 1024)) MB free, less than the 64 MB these runs need" ;;
    esac
  fi
  [ -z "$_why" ] && return 1
  echo "SKIP: $1: $_why (OpenMPI's shared-memory transport and vitmae's shared gradient window live there)"
}

# This host's name as the inference commands' temporary names carry it, "NAME.tmp.<host>.<pid>.<n>"
# (io/files.h, file_host_name: "hx-<16 hex>", FNV-1a 64 of its bytes, for a name of other characters,
# or of 65 bytes or more).
tmp_host() { python3 -c 'import socket
n = socket.gethostname().encode("utf-8", "surrogateescape")
if len(n) < 65 and all(c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-" for c in n): print(n.decode())
else:
    h = 14695981039346656037
    for c in n: h = ((h ^ c) * 1099511628211) % 2**64
    print("hx-%016x" % h)'; }

# Test gates (docs/testing.md, "Fault injection"): a command run with VITMAE_FAULT_HOLD_<POINT>=PATH
# makes PATH.held when it reaches that point and waits there until PATH exists. wait_gate PATH PID:
# until the command PID is at its gate (or has ended; at most 120 s); `touch PATH` lets it go on.
wait_gate() { _i=0; while [ $_i -lt 1200 ] && [ ! -e "$1.held" ] && kill -0 "$2" 2>/dev/null; do sleep 0.1; _i=$((_i + 1)); done; }
# moved_at_gate GATE PID FROM TO: the command PID (started in the background with a gate at GATE)
# waits there while FROM is renamed to TO, then goes on; returns its exit status.
moved_at_gate() { wait_gate "$1" "$2"; mv "$3" "$4"; touch "$1"; wait "$2"; }
# signal_at_gate GATE FILE SIG ARGS...: `vitmae ARGS` held at the test gate VITMAE_FAULT_HOLD_<GATE>
# (FILE; docs/testing.md) and sent SIG there, its signals at their defaults as a terminal's job has
# them; sets rc, and held to what folder $peek held at the gate (`ls -A`) when peek is set.
signal_at_gate() {
  _gate=$1; _file=$2; _sig=$3; shift 3
  env --default-signal "VITMAE_FAULT_HOLD_$_gate=$_file" "$VITMAE" "$@" > /dev/null 2>&1 &
  _pid=$!; wait_gate "$_file" $_pid
  held=; [ -z "${peek:-}" ] || held=$(ls -A "$peek" 2>&1)
  kill -"$_sig" $_pid; wait $_pid; rc=$?
}
# signal_then_open GATE NAME SIG ARGS...: `vitmae ARGS` held at VITMAE_FAULT_HOLD_GATE (the gate file
# $dir/NAME.gate), sent SIG there, the gate then opened; its stdout in $dir/NAME.log, stderr in
# $dir/NAME.err; a run still going a minute later is killed. Sets rc.
signal_then_open() {
  need_dir signal_then_open
  _gate=$1; _name=$2; _sig=$3; shift 3
  rm -f "$dir/$_name.gate" "$dir/$_name.gate.held"
  env "VITMAE_FAULT_HOLD_$_gate=$dir/$_name.gate" "$VITMAE" "$@" > "$dir/$_name.log" 2> "$dir/$_name.err" &
  _pid=$!
  wait_gate "$dir/$_name.gate" $_pid
  kill -"$_sig" $_pid; sleep 0.3; touch "$dir/$_name.gate"
  _i=0; while [ $_i -lt 600 ] && kill -0 $_pid 2>/dev/null; do sleep 0.1; _i=$((_i + 1)); done
  kill -KILL $_pid 2>/dev/null; wait $_pid; rc=$?
}
# fallback_fails ARGS...: `vitmae ARGS` (train or finetune without --out, run in the working directory)
# finds runs/<stamp> taken by another run before its lock (a metrics.csv put there at the gate
# HOLD_BEFORE_LOCK), goes on to runs/<stamp>-2, and there, held at HOLD_IN_WRITE_TEST, sees the other
# run's folder go and a file-size limit of 0 set (prlimit; its stderr goes through a pipe, which the
# limit spares), so it fails before its first file. Sets rc, first (the taken folder) and $dir/fb.err.
fallback_fails() {
  need_dir fallback_fails
  # runs/ is made in the working directory: the test's folder, not wherever the test was started.
  case $PWD/ in "$dir"/*) ;; *) echo "FAILED: fallback_fails: run in $PWD, outside the test's folder $dir"; exit 1 ;; esac
  rm -f "$dir/fb.l" "$dir/fb.l.held" "$dir/fb.w.held" "$dir/fb.pipe" && touch "$dir/fb.w" && mkfifo "$dir/fb.pipe" || exit 1
  VITMAE_FAULT_HOLD_BEFORE_LOCK="$dir/fb.l" VITMAE_FAULT_HOLD_IN_WRITE_TEST="$dir/fb.w" \
    "$VITMAE" "$@" > /dev/null 2> "$dir/fb.pipe" &
  _fb=$!
  cat "$dir/fb.pipe" > "$dir/fb.err" &
  _cat=$!
  wait_gate "$dir/fb.l" $_fb
  first=$(ls -d runs/* 2>/dev/null)
  # No folder (the command ended before its lock): "$first/metrics.csv" would be /metrics.csv.
  [ -n "$first" ] || { echo "FAILED: fallback_fails: no runs/<stamp> at the gate BEFORE_LOCK"; kill $_fb; exit 1; }
  rm "$dir/fb.w" && echo "step," > "$first/metrics.csv" && touch "$dir/fb.l"
  wait_gate "$dir/fb.w" $_fb
  rm -rf "$first" && prlimit --pid $_fb --fsize=0 && touch "$dir/fb.w"
  wait $_fb; rc=$?; wait $_cat
}
# wait_step RUN STEP: waits until run folder RUN has a metrics.csv row for STEP (at most 120 s: a
# loaded machine). saved_step CKPT: the step a checkpoint holds (empty when it does not load).
wait_step() {
  i=0; while [ $i -lt 1200 ] && ! grep -q "^$2," "$1/metrics.csv" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
}
# moved_mid_run PID RUN FROM TO: once the run in RUN (the command PID, started in the background) has
# its first checkpoint, renames its data folder FROM to TO, waits for the command to end (60 s at most,
# then kills it) and sets rc to its exit status.
moved_mid_run() {
  _i=0; while [ $_i -lt 1200 ] && [ ! -e "$2/checkpoint.safetensors" ] && kill -0 "$1" 2>/dev/null; do sleep 0.1; _i=$((_i + 1)); done
  mv "$3" "$4"
  _i=0; while [ $_i -lt 600 ] && kill -0 "$1" 2>/dev/null; do sleep 0.1; _i=$((_i + 1)); done
  kill -KILL "$1" 2>/dev/null; wait "$1"; rc=$?
}
# one_rank_signal SIG OUT COMMAND ARGS...: vitmae COMMAND ARGS --out OUT as 2 processes (mpirun, under
# `timeout 60`, so that a rank left waiting fails the test instead of hanging it), SIG sent to rank 1
# only once step 3 is in OUT/metrics.csv. Sets r1 (rank 1's pid; empty when it was not found), rc (the
# job's exit status) and saved (the step of OUT's checkpoint; empty when none loads). Logs: OUT.log,
# OUT.err.
one_rank_signal() {
  _sig=$1; _out=$2; shift 2
  ASAN_OPTIONS=$mpi_asan timeout 60 mpirun --oversubscribe --bind-to none -np 2 "$VITMAE" "$@" --out "$_out" \
    > "$_out.log" 2> "$_out.err" &
  _pid=$!
  wait_step "$_out" 3
  r1=$(rank_pid "$_out" 1)
  for _s in $_sig; do [ -n "$r1" ] && kill -"$_s" "$r1"; done   # "INT INT": two, back to back
  wait $_pid; rc=$?
  saved=$(saved_step "$_out/checkpoint.safetensors")
}
# rank_pid OUT R: the pid of rank R of the mpirun job whose command line holds the argument OUT (its
# --out), read from /proc (no procps on a minimal system); empty when there is none.
rank_pid() {
  for _s in /proc/[0-9]*/environ; do
    _c=${_s#/proc/}; _c=${_c%/environ}
    { tr '\0' '\n' < "/proc/$_c/cmdline"; } 2>/dev/null | grep -qx -- "$1" || continue
    { tr '\0' '\n' < "$_s"; } 2>/dev/null | grep -q "^OMPI_COMM_WORLD_RANK=$2$" && { echo "$_c"; return 0; }
  done
}
# overflowing_ckpt IN OUT: IN with pos_embed at +-3e38, finite (the reader takes it, no crc32) but
# overflowing float in the forward.
overflowing_ckpt() { python3 - "$1" "$2" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["VITMAE_ROOT"], "tools"))
import safetensors_io as st
tensors, meta = st.read(sys.argv[1]); shape, a = tensors["pos_embed"]
tensors["pos_embed"] = (shape, [3e38 if k % 2 else -3e38 for k in range(len(a))]); del meta["crc32"]
st.write(sys.argv[2], tensors, meta)
PY
}
# strip_moments SRC DST [exp_avg_sq]: SRC without its AdamW moments (every optimizer.* tensor, as a user
# strips them to share the weights), or without the exp_avg_sq ones alone (a damaged file); train_state kept.
strip_moments() { python3 - "$@" <<'PY2'
import os, sys
sys.path.insert(0, os.path.join(os.environ["VITMAE_ROOT"], "tools"))
import safetensors_io as st
tensors, meta = st.read(sys.argv[1]); meta.pop("crc32", None)
prefix = "optimizer." + (sys.argv[3] + "." if len(sys.argv) > 3 else "")
st.write(sys.argv[2], {k: v for k, v in tensors.items() if not k.startswith(prefix)}, meta)
PY2
}
# strip_decoder SRC DST [moments]: SRC encoder-only (its decoder_* and mask_token tensors and their AdamW
# moments removed, as a user strips a file to share the encoder), or without any AdamW moment as well;
# train_state kept.
strip_decoder() { python3 - "$@" <<'PY2'
import os, sys
sys.path.insert(0, os.path.join(os.environ["VITMAE_ROOT"], "tools"))
import safetensors_io as st
tensors, meta = st.read(sys.argv[1]); meta.pop("crc32", None)
def gone(k):
    if len(sys.argv) > 3 and k.startswith("optimizer."): return True
    name = k.replace("optimizer.exp_avg_sq.", "").replace("optimizer.exp_avg.", "")
    return name.startswith("decoder") or name == "mask_token"
st.write(sys.argv[2], {k: v for k, v in tensors.items() if not gone(k)}, meta)
PY2
}
# A checkpoint SRC with its train_state edited, written to DST: KEY=JSON sets a key, KEY=DEL removes it
# (the key must be there). The crc32 covers the data, not the header: tools/safetensors_io.py writes it.
edit_state() {   # SRC DST KEY=JSON|KEY=DEL...
  python3 - "$@" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["VITMAE_ROOT"], "tools"))
import safetensors_io as st
tensors, meta = st.read(sys.argv[1]); s = json.loads(meta["train_state"])
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1); assert k in s, k
    if v == "DEL": del s[k]
    else: s[k] = json.loads(v)
meta["train_state"] = json.dumps(s); del meta["crc32"]
st.write(sys.argv[2], tensors, meta)
PY
}
saved_step() { "$VITMAE" info --json "$1" 2>/dev/null | tr -d ' \t' | grep -o '"step":[0-9]*' | head -n 1 | cut -d: -f2; }
# png_text PNG KEY: the text of PNG's tEXt chunk KEY; empty when the picture or the chunk is missing.
# Read chunk by chunk: a grep of the bytes would run on into the chunk's CRC where its bytes happen to
# be digits.
png_text() { python3 -c '
import struct, sys
b = open(sys.argv[1], "rb").read(); i = 8
while i + 8 <= len(b):
    n, kind = struct.unpack(">I4s", b[i:i + 8]); d = b[i + 8:i + 8 + n]; i += 12 + n
    if kind == b"tEXt" and d.split(b"\0", 1)[0] == sys.argv[2].encode(): print(d.split(b"\0", 1)[1].decode("latin-1"))
' "$1" "$2" 2>/dev/null; }
# curves_last PNG: the last step RUN/curves.png draws (its text chunk x_range, "<first> <last>",
# docs/interface.md); empty when the picture or the chunk is missing.
curves_last() { png_text "$1" x_range | awk '{ print $NF }'; }
# ink PNG X0 X1 Y0 Y1 NPY: the spread (max - min, 0..1) of the values in columns X0..X1-1 of rows Y0..Y1-1
# of PNG, as Python's slices take them (-4 0: the last 4 columns); NPY: a scratch file. 0.000 where
# nothing is drawn there on a plain background.
ink() { "$VITMAE_TOOLS/imgdump" "$1" "$6" && python3 -c '
import array, ast, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<H", b[8:10])[0]; h, w, c = ast.literal_eval(b[10:10 + n].decode())["shape"]
x0, x1, y0, y1 = (int(v) for v in sys.argv[2:6])
a = array.array("f"); a.frombytes(b[10 + n:10 + n + y1 * w * c * 4])
v = [a[(y * w + x) * c + k] for y in range(y0, y1) for x in list(range(w))[x0:x1 or None] for k in range(c)]
print("%.3f" % (max(v) - min(v)))' "$6" "$2" "$3" "$4" "$5"; }
# usr1_stop CMD STEPS ARGS...: `mpirun -np 2 $VITMAE CMD ARGS --steps STEPS --threads 1 --out $dir/usr1`
# in the background, SIGUSR1 to mpirun once step 3 is logged (mpirun forwards it at once); checks that
# every process exits 0, rank 0 says how to resume and saved a checkpoint mid-run (after mpi_setup).
usr1_stop() {
  need_dir usr1_stop
  _cmd=$1; _steps=$2; shift 2
  # mpirun itself in the background, not through mpi: $! must be mpirun's pid, not a subshell's.
  ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 2 "$VITMAE" "$_cmd" "$@" --steps "$_steps" \
    --threads 1 --out "$dir/usr1" > "$dir/usr1.log" 2>&1 &
  _pid=$!
  wait_step "$dir/usr1" 3
  kill -USR1 $_pid; wait $_pid; _rc=$?
  t "SIGUSR1 to mpirun: exit 0" '[ $_rc -eq 0 ]'
  t "SIGUSR1: rank 0 says how to resume" 'grep -q "interrupted at step" "$dir/usr1.log"'
  _saved=$(saved_step "$dir/usr1/checkpoint.safetensors")
  t "SIGUSR1: saved mid-run (step ${_saved:-none} of $_steps)" '[ -n "$_saved" ] && [ "$_saved" -gt 0 ] && [ "$_saved" -lt $_steps ]'
}

# Permission checks need an ordinary user: root reads and writes anywhere. as_user CMD ARGS... runs
# CMD as nobody (setpriv) when the test runs as root, as itself otherwise; the test's files must be
# open to that user (chmod 755 on the way to them). as_user_can FILE...: 0 when that user can read
# $VITMAE and every FILE (else the test says it skips its permission checks).
as_user() { if [ "$(id -u)" -eq 0 ]; then setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; else "$@"; fi; }
as_user_can() { as_user sh -c 'test -x "$0" && for f in "$@"; do test -r "$f" || exit 1; done' "$VITMAE" "$@" 2>/dev/null; }
# readonly_out CMD CKPT INPUT READABLE DIR: `CMD --ckpt CKPT --out DIR INPUT` as that user, DIR made
# read-only: exit 1 and the one line "vitmae: CMD --out: DIR: cannot write in this folder: Permission
# denied", before the work (skipped, and said, when that user cannot read CKPT and the file READABLE).
readonly_out() {
  _ro_cmd=$1; _ro_dir=$5
  mkdir -p "$_ro_dir"; chmod 555 "$_ro_dir"
  if ! as_user_can "$2" "$4"; then echo "note: read-only --out check skipped (no ordinary user can read the test's files)"; return; fi
  as_user "$VITMAE" "$1" --ckpt "$2" --out "$_ro_dir" "$3" > /dev/null 2> "$_ro_dir.err"; rc=$?
  t "$1: read-only --out: exit 1, one line ($(head -n 3 "$_ro_dir.err" | tr "\n" "|"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$_ro_dir.err")" -eq 1 ] && grep -qx "vitmae: $_ro_cmd --out: $_ro_dir: cannot write in this folder: Permission denied" "$_ro_dir.err"'
}
# closed_pipe STREAM LOG CMD...: runs CMD with STREAM (stdout or stderr) a pipe whose reader has gone,
# as `CMD | head -3` leaves it once head has its lines, and the other stream into LOG; returns CMD's
# exit status (128 + N when signal N ended it: 141 for SIGPIPE).
closed_pipe() {
  python3 -c '
import os, subprocess, sys
stream, log, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
r, w = os.pipe(); os.close(r)
with open(log, "wb") as other:
    p = subprocess.run(argv, stdout=w if stream == "stdout" else other, stderr=w if stream == "stderr" else other)
sys.exit(128 - p.returncode if p.returncode < 0 else p.returncode)' "$@"
}

# cgroup_make memory|cpu: a new cgroup (v1's hierarchy of that controller, or v2's) with a limit of
# 0.50 GiB of memory or 1 CPU, in $cg; "" when none can be made here (not root, no such controller).
# in_cg COMMAND ARGS...: runs the command inside it. cgroup_remove: removes it once its processes are gone.
cgroup_make() {
  cg=""
  _bases="/sys/fs/cgroup/$1 /sys/fs/cgroup"
  [ "$1" = cpu ] && _bases="/sys/fs/cgroup/cpu /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup"
  for _base in $_bases; do
    _d="$_base/vitmae-test-$$"
    [ -w "$_base" ] && mkdir "$_d" 2>/dev/null || continue
    case $1 in
      memory) for _f in memory.limit_in_bytes memory.max; do
                [ -e "$_d/$_f" ] && echo 536870912 > "$_d/$_f" 2>/dev/null && { cg=$_d; break; }
              done ;;
      cpu) if [ -e "$_d/cpu.cfs_quota_us" ]; then
             echo 100000 > "$_d/cpu.cfs_period_us" && echo 100000 > "$_d/cpu.cfs_quota_us" && cg=$_d
           elif [ -e "$_d/cpu.max" ]; then
             echo "100000 100000" > "$_d/cpu.max" && cg=$_d
           fi ;;
    esac
    [ -n "$cg" ] && return 0
    rmdir "$_d"
  done
  return 1
}
in_cg() { sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@"; }
cgroup_remove() { _i=0; while ! rmdir "$cg" 2>/dev/null && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done; }
