#!/bin/sh
# `make bench`: vitmae bench and PyTorch (tools/bench_torch.py, same model, same recipe) at 1 and 2
# threads on three configurations, one table each with img/s, % of the measured FP32 peak (the highest
# that the row's runs at that thread count measured; how far each run's peak moved from before its
# steps to after them: beyond a few percent the host's speed changed during the run; and the spread of
# its step times, which shows what the peak's short checks miss: steps slowed by memory or caches
# shared with other jobs), the phase split and the ratio to PyTorch's best; then `mpirun -np 2` x 1
# thread against 1 process x 2 threads (docs/distributed.md), interleaved. Configurations (BENCH_ROWS,
# default "tiny32 small224 base224"):
#   tiny32:   the bench config (tiny, 32x32 RGB, patch 4, batch 64): best of REPEAT (3) runs of STEPS (10)
#   small224: the small preset at 224x224, patch 16, batch 8: best of MAE_REPEAT (1) runs of MAE_STEPS (2)
#   base224:  ViT-B/16 at 224 (MAE's own geometry), batch 8: as small224
# Each figure is the best of its runs: on shared cores the best run is the least disturbed one.
# Usage: tools/bench.sh [VITMAE_BIN]   env: REPEAT, STEPS, MAE_REPEAT, MAE_STEPS, BENCH_ROWS, BENCH_ARGS
# (BENCH_ARGS replaces tiny32's configuration), BENCH_TORCH=0 (no PyTorch rows, as where it is missing),
# BENCH_TORCH_PYTHON (the Python that runs PyTorch, default /usr/bin/python3; the tests give a stand-in).
set -e
# Numbers pass between vitmae's JSON (always a decimal point), awk and printf: in the C locale, whatever
# the caller's. Under LC_ALL=de_DE.UTF-8 awk read the JSON's 4.8 as 4 and wrote "+12,5%", and printf
# refused awk's "133,333" (not completely converted): a German user's table was wrong, its PyTorch rows failed.
LC_ALL=C; export LC_ALL
# Idle OpenMP threads spin only briefly before they sleep (both vitmae and PyTorch use libgomp). On
# cores shared with other jobs a long-spinning thread holds a core its teammate needs at the next
# barrier: with libgomp's default a 2-thread step measured ~2-6x slower while one other job ran.
# GOMP_SPINCOUNT=1000 is what vitmae sets for itself (src/cmd/main.c) when neither variable is set; here
# PyTorch gets the same. Set OMP_WAIT_POLICY or GOMP_SPINCOUNT to measure something else.
if [ -z "${OMP_WAIT_POLICY:-}" ] && [ -z "${GOMP_SPINCOUNT:-}" ]; then GOMP_SPINCOUNT=1000; export GOMP_SPINCOUNT; fi
bin=${1:-./vitmae}
repeat=${REPEAT:-3}; steps=${STEPS:-10}
mae_repeat=${MAE_REPEAT:-1}; mae_steps=${MAE_STEPS:-2}
args=${BENCH_ARGS:---preset tiny --img 32 --patch 4 --channels 3 --batch 64 --mask-ratio 0.75}
rows=${BENCH_ROWS:-tiny32 small224 base224}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
field() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1"; }
best() { sort -g | tail -n 1; }
# The BLAS kernels a PyTorch run used (tools/bench_torch.py picks AVX-512 ones where Debian's OpenBLAS
# would fall back to generic ones: docs/performance.md), for the footer.
blas_of() { /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); k, o = d.get("openblas_kernels"), d.get("openblas_own_choice")
print(k + ("" if o == k else " (OpenBLAS chose %s for this CPU by itself)" % o) if k else "none (not OpenBLAS)")' "$1"; }
# Whether an OPENBLAS_CORETYPE in the environment held PyTorch to kernels narrower than the CPU's vectors.
narrower_of() { /usr/bin/python3 -c 'import json, sys; print(1 if json.load(open(sys.argv[1])).get("openblas_narrower_than_cpu") else 0)' "$1"; }
blas_narrower=0
blas_kernels=-
torch_ok=0
torch_py=${BENCH_TORCH_PYTHON:-/usr/bin/python3}
[ "${BENCH_TORCH:-1}" != 0 ] && "$torch_py" -c 'import torch' 2>/dev/null && torch_ok=1
# Debian's torch calls whatever libblas.so.3 is installed: without OpenBLAS, the reference BLAS, which
# ran tiny32 at 6.87 img/s where OpenBLAS gave 118.93 and would take hours on ViT-B/16's rows
# (docs/performance.md), for ratios of 20x or more. So PyTorch is timed only on OpenBLAS; without it
# the rows go without PyTorch, and the table says why.
torch_blas=-
if [ $torch_ok = 1 ]; then
  torch_blas=$("$torch_py" tools/bench_torch.py --blas 2>/dev/null) || torch_blas=none
  case $torch_blas in ""|none) torch_ok=0 ;; esac
fi

# bench_row NAME ARGS STEPS WARMUP REPEAT: one table.
bench_row() {
  name=$1; rargs=$2; rsteps=$3; rwarm=$4; rrep=$5
  # 1 and 2 threads as `train` runs them (--parallel auto: at 2 threads the threads are workers where
  # the groups allow, docs/interface.md), and 2 threads as a team in every kernel (k2).
  for r in $(seq "$rrep"); do
    for t in 1 2 k2; do
      "$bin" bench $rargs --threads "${t#k}" $( [ "$t" = k2 ] && echo --parallel kernels ) --steps "$rsteps" \
        --warmup "$rwarm" --json >"$tmp/$name.v$t.$r"
    done
  done
  tbest=0
  if [ $torch_ok = 1 ]; then
    # Debian's torch calls OpenBLAS, which starts its own threads whatever torch.set_num_threads says
    # (a "1 thread" run measured 188% CPU): one process per thread count, with OpenBLAS told the same.
    for r in $(seq "$rrep"); do
      for t in 1 2; do
        OPENBLAS_NUM_THREADS=$t "$torch_py" tools/bench_torch.py $rargs --threads $t --steps "$rsteps" \
          --warmup "$rwarm" --json >"$tmp/$name.t$t.$r"
      done
    done
    for t in 1 2; do
      v=$(for r in $(seq "$rrep"); do /usr/bin/python3 -c "import json; d=json.load(open('$tmp/$name.t$t.$r')); print([x['img_per_s'] for x in d['results'] if x['threads']==$t][0])"; done | best)
      eval "torch$t=$v"
      tbest=$(echo "$tbest $v" | awk '{print ($2 > $1) ? $2 : $1}')
    done
    blas_kernels=$(blas_of "$tmp/$name.t1.1")
    blas_narrower=$(narrower_of "$tmp/$name.t1.1")
  fi
  echo
  printf '%-40s %8s %9s %8s %11s %12s %9s %7s\n' "$name: $rargs" "img/s" "GFLOP/s" "% peak" "peak moved" "step spread" "vs torch" "mem/x"
  for t in 1 2 k2; do
    ips=$(for r in $(seq "$rrep"); do field "$tmp/$name.v$t.$r" img_per_s; done | best)
    f=$(grep -l "\"img_per_s\": $ips," "$tmp/$name".v$t.* | head -n 1)
    eval "v$t=$ips; f$t=$f"
    ratio=$(echo "$ips $tbest" | awk '{ if ($2 > 0) printf "%.2fx", $1 / $2; else print "-" }')
    moved=$(echo "$(field "$f" peak_gflops) $(field "$f" peak_gflops_after)" |
      awk '{ if ($1 > 0 && $2 > 0) printf "%+.1f%%", 100 * ($2 / $1 - 1); else print "-" }')
    # The middle half of the run's step times, as a fraction of their median (vitmae bench: steps do
    # the same work, so a wide spread is the host's).
    spread=$(echo "$(field "$f" step_s_q1) $(field "$f" step_s_median) $(field "$f" step_s_q3)" |
      awk '{ if ($2 > 0) printf "%.1f%%", 100 * ($3 - $1) / $2; else print "-" }')
    # % of peak against the highest peak that any of the row's runs at this thread count measured,
    # before or after its steps (2 threads: the workers' and the team's runs): a run whose own check
    # read the peak low (a busy moment) cannot show more of the peak than the cores gave at their best.
    pk=$(for g in "$tmp/$name".v${t#k}.* $( [ "${t#k}" = 2 ] && echo "$tmp/$name".vk2.* ); do
      field "$g" peak_gflops; field "$g" peak_gflops_after; done | best)
    how=""; grep -q '"parallel": "groups"' "$f" && how=", workers"
    [ "$t" = k2 ] && how=", team"
    printf '%-40s %8.2f %9.1f %7.1f%% %11s %12s %9s %6.2fx\n' "vitmae, ${t#k} thread(s)$how" "$ips" "$(field "$f" gflops)" \
      "$(echo "$(field "$f" gflops) $pk" | awk '{print ($2 > 0) ? 100 * $1 / $2 : 0}')" "$moved" "$spread" "$ratio" \
      "$(field "$f" memory_ratio)"
  done
  if [ $torch_ok = 1 ]; then
    printf '%-40s %8.2f\n' "torch, 1 thread" "$torch1" "torch, 2 threads" "$torch2"
  fi
  /usr/bin/python3 -c "import json; d=json.load(open('$f2')); p=d['phases_s']; print('phases at 2 threads: ' + ', '.join('%s %.1f%%' % (k, 100 * v / d['step_s']) for k, v in p.items()))"
  echo "thread scaling 1 -> 2: $(echo "$v1 $v2" | awk '{printf "%.2fx", $2 / $1}'), as a team $(echo "$v1 $vk2" | awk '{printf "%.2fx", $2 / $1}')   (best of $rrep run(s) each, $rsteps steps after $rwarm warm-up)"
}

for row in $rows; do
  case $row in
    tiny32) bench_row tiny32 "$args" "$steps" 2 "$repeat" ;;
    small224) bench_row small224 "--preset small --img 224 --patch 16 --channels 3 --batch 8 --mask-ratio 0.75" "$mae_steps" 1 "$mae_repeat" ;;
    base224) bench_row base224 "--preset base --img 224 --patch 16 --channels 3 --batch 8 --mask-ratio 0.75" "$mae_steps" 1 "$mae_repeat" ;;
    *) echo "bench.sh: unknown row $row (tiny32, small224, base224)" >&2; exit 2 ;;
  esac
done
echo
if [ $torch_ok = 1 ]; then
  blas=$("$torch_py" -c 'import torch; print(torch.__config__.show())' | grep -o 'BLAS_INFO=[a-z]*')
  echo "(torch $("$torch_py" -c 'import torch; print(torch.__version__)'), $blas, OpenBLAS kernels $blas_kernels; vs torch = vitmae img/s / torch's best img/s of the row)"
  # An OPENBLAS_CORETYPE in the environment is kept (tools/bench_torch.py), even where it names kernels
  # narrower than the CPU's: a virtual machine of ours had OPENBLAS_CORETYPE=Haswell on an AVX-512 Zen 5,
  # which made PyTorch 1.3-2x slower there (docs/performance.md, "A fortieth session"). Said in the
  # table, where the figures are.
  if [ "$blas_narrower" = 1 ]; then
    echo "bench.sh: warning: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-?} held PyTorch to narrower kernels than this CPU's vectors: its img/s and the vs torch column are not PyTorch at its best; unset OPENBLAS_CORETYPE and run again"
  fi
elif [ "$torch_blas" = none ]; then
  echo "bench.sh: warning: PyTorch not timed: its BLAS (libblas.so.3) is not OpenBLAS, and Debian's reference BLAS is tens of times slower; install libopenblas0-pthread (make bench does) and run again"
else
  echo "(PyTorch not available: $torch_py cannot import torch; install python3-torch to compare)"
fi
echo "workers: --parallel groups, each thread its own gradient groups (the default where they fit); team: --parallel kernels, every thread in every kernel (docs/interface.md)"
echo "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset} GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-unset}"
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), family $(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -n 1) model $(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores"
echo

# Data-parallel (docs/distributed.md): `mpirun -np 2 vitmae bench --threads 1` against one process
# at 2 threads, interleaved (A, B, A, B, ...) so that both see the same moments of a shared machine.
# Goal: >= 0.9x, with the reduce phase (adding group gradients and exchanging them) < 5% of a step;
# sync_wait (waiting for the slower process at the step's exchange) is shown beside it.
case " $rows " in *" tiny32 "*) ;; *) exit 0 ;; esac   # with the tiny32 row only
if command -v mpirun >/dev/null 2>&1; then
  for r in $(seq "$repeat"); do
    "$bin" bench $args --threads 2 --steps "$steps" --json >"$tmp/p1.$r"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --bind-to none --oversubscribe \
      "$bin" bench $args --threads 1 --steps "$steps" --json >"$tmp/p2.$r"
  done
  reduce_pct() { /usr/bin/python3 -c "import json; d=json.load(open('$1')); p=d['phases_s']; print('%.1f%%, sync wait %.1f' % (100 * p['reduce'] / d['step_s'], 100 * p.get('sync_wait', 0) / d['step_s']))"; }
  for r in $(seq "$repeat"); do
    a=$(field "$tmp/p1.$r" img_per_s); b=$(field "$tmp/p2.$r" img_per_s)
    echo "round $r: 1 process x 2 threads $a img/s (reduce $(reduce_pct "$tmp/p1.$r")%); 2 processes x 1 thread $b img/s (reduce $(reduce_pct "$tmp/p2.$r")%); ratio $(echo "$a $b" | awk '{printf "%.2fx", $2 / $1}')"
  done
  p1=$(for r in $(seq "$repeat"); do field "$tmp/p1.$r" img_per_s; done | best)
  p2=$(for r in $(seq "$repeat"); do field "$tmp/p2.$r" img_per_s; done | best)
  echo "mpirun -np 2 --threads 1 vs --threads 2 (best of $repeat each): $p2 / $p1 img/s = $(echo "$p1 $p2" | awk '{printf "%.2fx", $2 / $1}') (goal >= 0.9x)"
else
  echo "(mpirun not found: no data-parallel figures; make installs openmpi-bin)"
fi
