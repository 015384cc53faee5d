#!/bin/sh
# build/tools/bench_gemm (docs/performance.md, "Other tools"): its table with --cold (a cold % of peak
# after each thread count's hot one, and a cold line under the summary), --batch (the tiny model's rows
# for B images: a training step's gradient group), and its refusals. Speeds are not judged (they are the
# machine's); the columns, the shapes and the counts are.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch
scratch tmp
cd "$tmp" || exit 1
bg="$VITMAE_TOOLS/bench_gemm"

# check FILE BATCH COLD: the table of `bench_gemm --quick --no-ref` as it should read.
check() {
  python3 - "$@" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
batch, cold = int(sys.argv[2]), sys.argv[3] == "1"
lines = text.splitlines()
ok = True
def bad(msg):
    global ok
    print("FAILED: " + msg); ok = False
head = [l for l in lines if l.startswith("layer")]
if len(head) != 1:
    bad("one header row, got %d" % len(head)); sys.exit(1)
threads = len(re.findall(r"\dT GFLOP/s", head[0]))
if threads not in (1, 2):
    bad("1 or 2 thread counts in the header: %r" % head[0])
if ("cold%" in head[0]) != cold or head[0].count("cold%") not in (0, threads):
    bad("the header's cold columns (--cold %s): %r" % (cold, head[0]))
# the quick shapes: (layer, tokens at 64 images, in, out); square1024 does not scale
want = {"enc.qkv": (1088, 192, 576), "enc.fc2": (1088, 768, 192), "dec.fc1": (4160, 128, 512),
        "square1024": (1024, 1024, 1024)}
rows = {}
for l in lines:
    f = l.split()
    if len(f) >= 2 and f[0] in want and f[1] in ("nt", "nn", "tn"):
        rows[(f[0], f[1])] = f
if len(rows) != 12:
    bad("12 product rows (4 layers x nt, nn, tn), got %d" % len(rows))
for (name, op), f in sorted(rows.items()):
    tokens, cin, cout = want[name]
    if name != "square1024":
        tokens = tokens // 64 * batch
    M, N, K = {"nt": (tokens, cout, cin), "nn": (tokens, cin, cout), "tn": (cout, cin, tokens)}[op]
    if f[2:5] != [str(M), str(N), str(K)]:
        bad("%s %s: M N K %s, want %d %d %d" % (name, op, " ".join(f[2:5]), M, N, K))
    per = 3 if cold else 2
    if len(f) != 5 + per * threads:
        bad("%s %s: %d columns, want %d: %r" % (name, op, len(f), 5 + per * threads, " ".join(f)))
        continue
    for t in range(threads):
        cells = f[5 + per * t: 5 + per * (t + 1)]
        if not all(c.endswith("%") for c in cells[1:]) or cells[0].endswith("%"):
            bad("%s %s: thread count %d's cells %r" % (name, op, t + 1, cells)); continue
        vals = [float(cells[0])] + [float(c[:-1]) for c in cells[1:]]
        if not all(0 < v < 1e5 for v in vals):
            bad("%s %s: a speed not above 0: %r" % (name, op, cells))
summary = [l for l in lines if l.startswith("tiny-model Linear products, %d images" % batch)]
if len(summary) != 1 or len(re.findall(r"\dT [0-9.]+ GFLOP/s \([0-9.]+% of peak\)", summary[0])) != threads:
    bad("the summary line for %d images with %d thread counts: %r" % (batch, threads, summary))
coldline = [l for l in lines if l.startswith("the same, cold")]
if len(coldline) != (1 if cold else 0) or (cold and len(re.findall(r"\dT [0-9.]+ GFLOP/s", coldline[0])) != threads):
    bad("the cold summary (--cold %s): %r" % (cold, coldline))
sys.exit(0 if ok else 1)
PY
}

"$bg" --quick --no-ref --cold --batch 16 >"$tmp/cold.txt" 2>"$tmp/cold.err"; rc=$?
t "--quick --no-ref --cold --batch 16 exits 0 (got $rc: $(head -c 300 "$tmp/cold.err"))" '[ $rc -eq 0 ]'
t "--cold --batch 16: the table (above)" 'check "$tmp/cold.txt" 16 1'
"$bg" --quick --no-ref >"$tmp/hot.txt" 2>"$tmp/hot.err"; rc=$?
t "--quick --no-ref exits 0 (got $rc)" '[ $rc -eq 0 ]'
t "without --cold: no cold columns, 64 images' rows (above)" 'check "$tmp/hot.txt" 64 0'

for b in 0 4097 12x "" -3; do
  "$bg" --quick --no-ref --batch "$b" >"$tmp/o" 2>"$tmp/e"; rc=$?
  t "--batch '$b' refused with exit 2 (got $rc)" '[ $rc -eq 2 ] && [ ! -s "$tmp/o" ]'
  t "--batch '$b': one line naming it ($(cat "$tmp/e"))" \
    '[ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "^vitmae: bench_gemm: --batch $b: not a whole number from 1 to 4096$" "$tmp/e"'
done
"$bg" --colder >"$tmp/o" 2>"$tmp/e"; rc=$?
t "an unknown flag: exit 2 and the usage, which names --cold and --batch" \
  '[ $rc -eq 2 ] && grep -q "^usage: bench_gemm .*--cold.*--batch B" "$tmp/e"'
[ $fail -eq 0 ] && echo "cli bench_gemm ok"
exit $fail
