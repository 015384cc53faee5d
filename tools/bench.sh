#!/bin/sh
# `make bench`: vitmae bench at 1 and 2 threads and PyTorch (tools/bench_torch.py, same model, same
# recipe) at 1 and 2 threads on the bench config, then one table with the ratio to PyTorch's best;
# then `mpirun -np 2` x 1 thread against 1 process x 2 threads (docs/distributed.md), interleaved.
# Each figure is the best of REPEAT runs (default 3): the machine's cores are shared, so the best
# run is the least disturbed one. Usage: tools/bench.sh [VITMAE_BIN]   env: REPEAT, STEPS, BENCH_ARGS
set -e
# Idle OpenMP threads spin only briefly before they sleep (both vitmae and PyTorch use libgomp). On
# cores shared with other jobs a long-spinning thread holds a core its teammate needs at the next
# barrier: with libgomp's default a 2-thread step measured ~2-6x slower while one other job ran.
# GOMP_SPINCOUNT=1000 is what vitmae sets for itself (src/cmd/main.c) when neither variable is set; here
# PyTorch gets the same. Set OMP_WAIT_POLICY or GOMP_SPINCOUNT to measure something else.
if [ -z "${OMP_WAIT_POLICY:-}" ] && [ -z "${GOMP_SPINCOUNT:-}" ]; then GOMP_SPINCOUNT=1000; export GOMP_SPINCOUNT; fi
bin=${1:-./vitmae}
repeat=${REPEAT:-3}; steps=${STEPS:-10}
args=${BENCH_ARGS:---preset tiny --img 32 --patch 4 --channels 3 --batch 64 --mask-ratio 0.75}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
field() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1"; }
best() { sort -g | tail -n 1; }
for t in 1 2; do
  for r in $(seq "$repeat"); do "$bin" bench $args --threads "$t" --steps "$steps" --json >"$tmp/v$t.$r"; done
done
torch_ok=0
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  torch_ok=1
  targs=$(echo "$args" | sed 's/--mask-ratio/--mask-ratio/')
  # Debian's torch calls OpenBLAS, which starts its own threads whatever torch.set_num_threads says
  # (a "1 thread" run measured 188% CPU): one process per thread count, with OpenBLAS told the same.
  for r in $(seq "$repeat"); do
    for t in 1 2; do
      OPENBLAS_NUM_THREADS=$t /usr/bin/python3 tools/bench_torch.py $targs --threads $t --steps "$steps" --json >"$tmp/t$t.$r"
    done
  done
fi
printf '%-28s %10s %10s %10s %9s %8s\n' "bench ($args)" "img/s" "GFLOP/s" "% peak" "vs torch" "mem/x"
tbest=0
if [ $torch_ok = 1 ]; then
  for t in 1 2; do
    v=$(for r in $(seq "$repeat"); do /usr/bin/python3 -c "import json,sys; d=json.load(open('$tmp/t$t.$r')); print([x['img_per_s'] for x in d['results'] if x['threads']==$t][0])"; done | best)
    eval "torch$t=$v"
    tbest=$(echo "$tbest $v" | awk '{print ($2 > $1) ? $2 : $1}')
  done
fi
for t in 1 2; do
  ips=$(for r in $(seq "$repeat"); do field "$tmp/v$t.$r" img_per_s; done | best)
  f=$(grep -l "\"img_per_s\": $ips," "$tmp"/v$t.* | head -n 1)
  ratio=$(echo "$ips $tbest" | awk '{ if ($2 > 0) printf "%.2fx", $1 / $2; else print "-" }')
  printf '%-28s %10.1f %10.1f %9.1f%% %9s %7.2fx\n' "vitmae, $t thread(s)" "$ips" "$(field "$f" gflops)" \
    "$(echo "$(field "$f" peak_fraction)" | awk '{print 100 * $1}')" "$ratio" "$(field "$f" memory_ratio)"
done
if [ $torch_ok = 1 ]; then
  printf '%-28s %10.1f\n' "torch, 1 thread" "$torch1" "torch, 2 threads" "$torch2"
  blas=$(/usr/bin/python3 -c 'import torch; print(torch.__config__.show())' | grep -o 'BLAS_INFO=[a-z]*')
  echo "(torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), $blas; ratio = vitmae img/s / torch's best img/s)"
else
  echo "(PyTorch not available: /usr/bin/python3 cannot import torch; install python3-torch to compare)"
fi
v1=$(for r in $(seq "$repeat"); do field "$tmp/v1.$r" img_per_s; done | best)
v2=$(for r in $(seq "$repeat"); do field "$tmp/v2.$r" img_per_s; done | best)
echo "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset} GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-unset}"
echo "thread scaling 1 -> 2: $(echo "$v1 $v2" | awk '{printf "%.2fx", $2 / $1}')   (best of $repeat runs each, $steps steps after warm-up)"

# Data-parallel (docs/distributed.md): `mpirun -np 2 vitmae bench --threads 1` against one process
# at 2 threads, interleaved (A, B, A, B, ...) so that both see the same moments of a shared machine.
# Goal: >= 0.9x, with the reduce phase (adding group gradients and exchanging them) < 5% of a step;
# sync_wait (waiting for the slower process at the step's exchange) is shown beside it.
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
