#!/bin/sh
# `vitmae bench`: a tiny run prints JSON with the documented fields, the analytic FLOP count matches
# the formula for the tiny preset at 32x32x3 / patch 4 / batch 64 / mask 0.75, bad flags exit 2; the
# gates that choose the kernels' path check every feature those kernels are compiled for.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch tmp
cd "$tmp" || exit 1   # a command that wrongly writes to the working directory writes here

out=$("$VITMAE" bench --img 8 --patch 4 --channels 1 --batch 2 --steps 1 --warmup 0 --threads 1 --json); rc=$?
t "bench --json exits 0" '[ $rc -eq 0 ]'
out2=$("$VITMAE" bench --img 8 --patch 4 --channels 1 --batch 2 --steps 1 --warmup 0 --threads 1 --mask-ratio 0.1234567 --json); rc=$?
t "bench --json: mask_ratio as typed, to its last digit (\"%g\" gave 0.123457)" '[ $rc -eq 0 ] && echo "$out2" | python3 -c "import json, sys; assert json.load(sys.stdin)[\"mask_ratio\"] == 0.1234567"'
# ... and its text line too, as train prints it ("mask %g" there gave 0.123457).
text2=$("$VITMAE" bench --img 8 --patch 4 --channels 1 --batch 2 --steps 1 --warmup 0 --threads 1 --mask-ratio 0.1234567 | head -n 1)
t "bench: the text line's mask ratio as typed ($text2)" 'echo "$text2" | grep -q ", mask 0\.1234567 (3 of 4 patches visible),"'
echo "$out" >"$tmp/b.json"
# Its loss reads back as the step's float32 loss, as every JSON number that is not whole ("%.6f" wrote
# 1.383501 of 1.3835010528564453: docs/interface.md, section 1).
t "bench --json: the loss with every digit of its float ($(grep -o '"loss": [^,]*' "$tmp/b.json" | head -n 1))" 'python3 - "$tmp/b.json" <<PY
import json, struct, sys
v = json.load(open(sys.argv[1]))["loss"]
assert struct.unpack("f", struct.pack("f", v))[0] == v, v
PY'
t "bench --json: 1 thread on 1 CPU at least" "grep -q '\"cpus_of_threads\": [1-9]' '$tmp/b.json'"

# A binding asked for in the environment (OMP_PROC_BIND) must not leave both threads on one CPU: vitmae
# then does not run itself again with GOMP_SPINCOUNT set (src/cmd/main.c), which would inherit the one
# CPU libgomp had pinned its first thread to. Needs 2 CPUs to tell.
if [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ]; then
  for bind in "OMP_PROC_BIND=true" "OMP_PLACES=cores"; do
    cpus=$(env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY "$bind" "$VITMAE" bench --img 8 --patch 4 --channels 1 --batch 2 \
             --steps 1 --warmup 0 --threads 2 --json | grep -o '"cpus_of_threads": [0-9]*' | grep -o '[0-9]*$')
    t "$bind: the 2 threads may run on 2 CPUs (got ${cpus:-none})" '[ "$cpus" = 2 ]'
  done
fi
for k in img_per_s gflops peak_gflops peak_fraction peak_gflops_after gflop_per_step peak_rss_bytes analytic_bytes memory_ratio \
         '"data"' '"patch_embed"' '"encoder"' '"decoder"' '"loss"' '"backward"' '"optimizer"'; do
  t "bench --json has $k" "grep -q '$k' '$tmp/b.json'"
done
# The phases add up to the step: "other" holds what no phase does (they summed to ~99% with no row for
# the rest; docs/interface.md, "vitmae bench").
t "bench --json: phases_s, \"other\" included, add up to step_s" '/usr/bin/python3 - "$tmp/b.json" <<PY
import json, sys
d = json.load(open(sys.argv[1]))
p = d["phases_s"]
assert "other" in p and p["other"] >= 0 and abs(sum(p.values()) - d["step_s"]) <= 1e-5, (p, d["step_s"])
PY'
# Each phase of the step holds its own time (the speed issue's list: data, patch embedding, encoder,
# decoder, loss, backward, optimizer): a timer laid into the next phase's field left its phase at 0 and
# every check above passing (the key there, the sum the same). 16x16 images, 8 of them, so that the
# shortest phases (loss, data: tens of microseconds) stay well above the JSON's microsecond.
"$VITMAE" bench --img 16 --patch 4 --batch 8 --steps 1 --warmup 0 --threads 1 --json > "$tmp/ph.json"; rc=$?
zero=$(/usr/bin/python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["phases_s"]
print(" ".join(k for k in ("data", "patch_embed", "encoder", "decoder", "loss", "backward", "optimizer") if not p.get(k, 0) > 0))' "$tmp/ph.json" 2>&1)
t "bench --json: every phase of a step takes time (at 0 or missing: ${zero:-none})" '[ $rc -eq 0 ] && [ -z "$zero" ]'
# The defaults --help states are the ones a run takes (docs/interface.md, "vitmae bench": 10 timed steps
# after 2 warm-up, tiny, 3 channels, mask 0.75): --steps and --warmup are numbers in cmd/bench.c beside
# their help text, and nothing compared the two.
"$VITMAE" bench --img 8 --patch 4 --batch 2 --threads 1 --json > "$tmp/def.json"; rc=$?
help_flags bench > "$tmp/def.help"
drift=$(/usr/bin/python3 -c 'import json, re, sys
d = json.load(open(sys.argv[1])); h = open(sys.argv[2]).read()
for flag, key in (("steps", "steps"), ("warmup", "warmup"), ("preset", "preset"), ("channels", "channels"), ("mask-ratio", "mask_ratio"), ("accum", "accum")):
    m = re.search(r"^  --%s .*\(default ([^;)]+)" % flag, h, re.M)
    if not m or str(d.get(key)) != m.group(1): print("--%s: help %s, run %s" % (flag, m and m.group(1), d.get(key)))' "$tmp/def.json" "$tmp/def.help" 2>&1)
t "bench: the defaults --help states are a run's (differ: ${drift:-none})" '[ $rc -eq 0 ] && [ -z "$drift" ]'
# A peak that could not be measured: every run of the FMA loop needs its whole OpenMP team, and under
# OMP_THREAD_LIMIT=1 a team of 2 never comes, so the peak was 0 and the JSON held "peak_fraction": inf,
# which no JSON reader reads, and the text "-> inf% of peak" (docs/interface.md, "vitmae bench").
OMP_THREAD_LIMIT=1 "$VITMAE" bench --img 8 --patch 4 --batch 2 --steps 1 --warmup 0 --threads 2 --json > "$tmp/lim.json"; rc=$?
t "bench --json, OMP_THREAD_LIMIT=1 at 2 threads: valid JSON, peak_fraction null ($rc: $(grep -o '"peak_fraction": [^,]*' "$tmp/lim.json"))" \
  '[ $rc -eq 0 ] && /usr/bin/python3 -c "import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if d[\"peak_fraction\"] is None else 1)" "$tmp/lim.json"'
out=$(OMP_THREAD_LIMIT=1 "$VITMAE" bench --img 8 --patch 4 --batch 2 --steps 1 --warmup 0 --threads 2 --parallel kernels --profile); rc=$?
t "bench, OMP_THREAD_LIMIT=1 at 2 threads: the peak not measured, said so, no inf ($rc: $(echo "$out" | grep "FMA peak"))" \
  '[ $rc -eq 0 ] && echo "$out" | grep -q "^  FMA peak       not measured: OpenMP ran fewer than the 2 threads asked" && ! echo "$out" | grep -Eqi "(inf|nan)%|GFLOP/s +-?(inf|nan)"'
phases_text=$("$VITMAE" bench --img 8 --patch 4 --channels 1 --batch 2 --steps 1 --warmup 0 --threads 1 | sed -n "/^  phases/,/^  peak memory/p")
t "bench: the text's phases, \"other\" last, add up to 100% ($(echo "$phases_text" | awk "NF == 3 { print \$1, \$3 }" | tr "\n" " "))" \
  'echo "$phases_text" | grep -Eq "^    other +[0-9.]+ +[0-9.]+%$" &&
   echo "$phases_text" | LC_ALL=C awk "NF == 3 { s += \$3 } END { exit !(s > 99.4 && s < 100.6) }"'
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/b.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
ok = d["img_per_s"] > 0 and d["gflops"] > 0 and d["len_keep"] == 1 and d["threads"] == 1 and d["batch"] == 2
# The peak measured again after the steps: the same machine, so of the same order as the first (a
# quarter to 4 times covers any host's drift; a missing or zero measurement fails).
if not 0.25 * d["peak_gflops"] < d["peak_gflops_after"] < 4 * d["peak_gflops"]:
    print("FAILED: peak_gflops_after %r against peak_gflops %r" % (d["peak_gflops_after"], d["peak_gflops"])); ok = False
# 2x2 patches of 4x4x1, K = 1: by hand from the formula in src/cmd/bench.c
D, Dd, depth, ddepth, B, K, L, pd = 192, 128, 6, 2, 2, 1, 4, 16
Te, Td = 1 + K, 1 + L
fwd = depth * (2 * B * Te * 12 * D * D + 4 * B * Te * Te * D) + ddepth * (2 * B * Td * 12 * Dd * Dd + 4 * B * Td * Td * Dd) \
    + 2 * B * L * pd * D + 2 * B * Te * D * Dd + 2 * B * Td * Dd * pd
# The model's count, as PyTorch's MAE computes it: the patch embedding on every patch (before the
# masking) and decoder_pred on CLS's row too (it counted K and L rows: 0.14% short on tiny32).
want = (3 * fwd - 2 * B * L * pd * D) * 1e-9
if abs(d["flop_per_step"] * 1e-9 - want) > 1e-9 * want:
    print("FAILED: flop_per_step %r want %r" % (d["flop_per_step"], want * 1e9)); ok = False
# the step skips the last decoder block's attention queries, proj, fc1 and fc2 on CLS + K visible rows, and
# decoder_pred on CLS and K; the patch embedding of the L - K removed patches (forward and its weight's
# gradient);
# and the first decoder block's qkv on the mask tokens beyond the L positions, in each forward of
# at_once groups and each group's backward, where there are more mask tokens than positions
skip = 3 * (2 * B * (1 + K) * 9 * Dd * Dd + 4 * B * (1 + K) * Td * Dd + 2 * B * (1 + K) * Dd * pd) + 2 * 2 * B * (L - K) * pd * D
per, R, qkv = B // d["groups"], L - K, 2 * Dd * 3 * Dd
for g in range(0, d["groups"], d["at_once"]):
    n = per * min(d["at_once"], d["groups"] - g)
    skip += max(n * R - L, 0) * qkv
skip += d["groups"] * 2 * max(per * R - L, 0) * qkv
if abs(d["flop_done_per_step"] - (want * 1e9 - skip)) > 1e-9 * want * 1e9:
    print("FAILED: flop_done_per_step %r want %r" % (d["flop_done_per_step"], want * 1e9 - skip)); ok = False
if not ok:
    print("FAILED: bench json", d)
sys.exit(0 if ok else 1)
PY
  # One group of 4 images (12 mask tokens for 4 positions): the first decoder block's backward takes
  # them once too, which the run above (groups of 1 image) does not.
  "$VITMAE" bench --img 8 --patch 4 --channels 1 --batch 4 --groups 1 --steps 1 --warmup 0 --threads 1 --json \
    >"$tmp/g.json" || fail=1
  python3 - "$tmp/g.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
Dd, B, K, L, pd, ddepth = 128, 4, 1, 4, 16, 2
R, qkv = L - K, 2 * Dd * 3 * Dd
D = 192
skip = 3 * (2 * B * (1 + K) * 9 * Dd * Dd + 4 * B * (1 + K) * (1 + L) * Dd + 2 * B * (1 + K) * Dd * pd) + 2 * 2 * B * R * pd * D \
    + (B * R - L) * qkv + 2 * (B * R - L) * qkv
ok = d["groups"] == 1 and abs(d["flop_per_step"] - skip - d["flop_done_per_step"]) < 1e-9 * d["flop_per_step"]
if not ok:
    print("FAILED: one group of 4: flop_done_per_step %r want %r" % (d["flop_done_per_step"], d["flop_per_step"] - skip))
sys.exit(0 if ok else 1)
PY
fi
# The timed steps' times, in order, and their quartiles (linear interpolation between ranks, as
# numpy's default): recomputed here from the list; their mean is step_s, their least the best step.
out=$("$VITMAE" bench --img 8 --patch 4 --channels 1 --batch 2 --steps 6 --warmup 1 --threads 1 --json); rc=$?
t "bench --json --steps 6 exits 0" '[ $rc -eq 0 ]'
echo "$out" >"$tmp/q.json"
t "bench --json: the step times and their quartiles" "/usr/bin/python3 - '$tmp/q.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = d['step_times_s']
def q(p):
    s = sorted(v); at = p * (len(s) - 1); i = int(at)
    return s[-1] if i >= len(s) - 1 else s[i] + (at - i) * (s[i + 1] - s[i])
ok = len(v) == 6 and all(x > 0 for x in v)
ok = ok and all(abs(d[k] - q(p)) <= 2e-6 for k, p in (('step_s_q1', 0.25), ('step_s_median', 0.5), ('step_s_q3', 0.75)))
# printed to 6 decimals (times) and 2 (img/s): the best step's time within both roundings
ok = ok and abs(sum(v) / len(v) - d['step_s']) <= 2e-6
ok = ok and abs(min(v) - d['batch'] / d['img_per_s_best_step']) <= 1.5e-6 + min(v) * 0.006 / d['img_per_s_best_step']
if not ok: print('FAILED: step times', v, d['step_s_q1'], d['step_s_median'], d['step_s_q3'], d['step_s'])
sys.exit(0 if ok else 1)
PY"
out=$("$VITMAE" bench --img 8 --patch 4 --batch 2 --steps 1 --warmup 0 --threads 1); rc=$?
t "bench text exits 0" '[ $rc -eq 0 ]'
t "bench text has the steps' median and middle half" 'echo "$out" | grep -Eq "^  step +[0-9.]+ ms mean; median [0-9.]+, middle half [0-9.]+-[0-9.]+ ms"'
t "bench text has img/s and peak" 'echo "$out" | grep -q "img/s" && echo "$out" | grep -q "of peak"'
t "bench text has the peak measured after the steps" 'echo "$out" | grep -Eq "^  peak after +[0-9.]+ GFLOP/s measured again after the steps \([+-][0-9.]+%\)"'
# --profile: a row per kind of kernel and "other"; the JSON has the same rows, with the products' GFLOP/s.
out=$("$VITMAE" bench --img 8 --patch 4 --batch 2 --steps 1 --warmup 0 --threads 2 --profile); rc=$?
t "bench --profile exits 0" '[ $rc -eq 0 ]'
t "bench --profile lists the kernels" 'echo "$out" | grep -q "gemm_tn (linear dW)" && echo "$out" | grep -q "layernorm bwd" && echo "$out" | grep -q "^    other"'
out=$("$VITMAE" bench --img 8 --patch 4 --batch 2 --steps 1 --warmup 0 --threads 2 --parallel kernels --profile --json); rc=$?
t "bench --profile --json exits 0 and parses" "[ $rc -eq 0 ] && echo '$out' | /usr/bin/python3 -c 'import json,sys; p=json.load(sys.stdin)[\"profile\"]; sys.exit(0 if p[\"gemm_nt\"][\"calls\"] > 0 and p[\"gemm_nt\"][\"gflops\"] > 0 and \"other\" in p else 1)'"
# The threads' waits at the team's barrier: some at 2 threads (one of two always arrives first), some of
# them inside the linear layers' products, the kinds adding up to the whole; none at 1.
t "bench --profile --json: barrier waits at 2 threads" "echo '$out' | /usr/bin/python3 -c 'import json,sys; w=json.load(sys.stdin)[\"profile\"][\"barrier_wait\"]; sys.exit(0 if w[\"ms\"] > 0 and 0 < w[\"share_of_cpu\"] < 1 and w[\"in\"][\"gemm_nt\"] > 0 and abs(sum(w[\"in\"].values()) - w[\"ms\"]) < 1e-3 else 1)'"
out=$("$VITMAE" bench --img 8 --patch 4 --batch 2 --steps 1 --warmup 0 --threads 1 --profile --json); rc=$?
t "bench --profile --json: no barrier waits at 1 thread" "[ $rc -eq 0 ] && echo '$out' | /usr/bin/python3 -c 'import json,sys; w=json.load(sys.stdin)[\"profile\"][\"barrier_wait\"]; sys.exit(0 if w[\"ms\"] == 0 else 1)'"
# --parallel: auto takes the threads as workers where they fit (2 threads, 2 groups), kernels never, and
# groups refuses 3 threads; the workers' profile is worker 0's.
for mode in auto kernels groups; do
  out=$("$VITMAE" bench --img 8 --patch 4 --batch 2 --steps 1 --warmup 0 --threads 2 --parallel $mode --json); rc=$?
  want='"parallel": "groups", "workers": 2'; [ $mode = kernels ] && want='"parallel": "kernels", "workers": 0'
  t "bench --parallel $mode: exits 0, $want" '[ $rc -eq 0 ] && echo "$out" | grep -q "$want"'
done
out=$("$VITMAE" bench --img 8 --patch 4 --batch 2 --steps 1 --warmup 0 --threads 2 --parallel groups --profile); rc=$?
t "bench --parallel groups --profile: worker 0's kernels" '[ $rc -eq 0 ] && echo "$out" | grep -q "threads as workers: each of the 2 threads takes 1 of the gradient groups (1 at once)" && echo "$out" | grep -q "worker 0.s kernels" && echo "$out" | grep -q "gemm_nt (linear fwd)"'
# A worker's groups at once go by the rule of the workers' thread count (cmd/groups.h): tiny32's groups
# of 272 encoder rows, more than the model's width (192) but 544 two at a time, within
# GROUPS_AT_ONCE_ROWS: 2 at once on each of the 2 workers (one thread's rule would take one at a time).
out=$("$VITMAE" bench --steps 1 --warmup 0 --threads 2 --json); rc=$?
t "bench tiny32, 2 threads as workers: each takes its 2 groups at once" '[ $rc -eq 0 ] && echo "$out" | grep -q "\"workers\": 2" && echo "$out" | grep -q "\"at_once\": 2"'
# Each block's forward in passes (core/encoder.h): these images are a few rows, so one pass; with
# VITMAE_GROUPS_AT_ONCE=M (docs/interface.md) is a whole number read in full; anything else leaves the
# rule (4 groups at once here), as for the other variables: "2x" was taken as 2, "1e3" as 1.
for v in 2 2x 1e3 " 2" junk -1 99999999999999999999; do
  want=4; [ "$v" = 2 ] && want=2
  out=$(VITMAE_GROUPS_AT_ONCE="$v" "$VITMAE" bench --img 8 --patch 4 --batch 8 --steps 1 --warmup 0 --threads 1); rc=$?
  t "VITMAE_GROUPS_AT_ONCE='$v': $want at once ($rc: $(echo "$out" | grep -o "([0-9]* at once)"))" \
    '[ $rc -eq 0 ] && echo "$out" | grep -q "4 gradient groups of 2 images, 4 per process ($want at once)"'
done
# VITMAE_FORWARD_IMAGES=2 (docs/interface.md) two images a pass, on a worker and on a team alike.
out=$("$VITMAE" bench --img 8 --patch 4 --batch 4 --steps 1 --warmup 0 --threads 1); rc=$?
t "bench: the block forward in one pass of a few rows" '[ $rc -eq 0 ] && echo "$out" | grep -q "block forward in passes of 4 (encoder) and 4 (decoder) of the 4 images at once"'
t "bench: groups of one image, '4 gradient groups of 1 image, ' ($(echo "$out" | grep "gradient groups"))" \
  'echo "$out" | grep -q "4 gradient groups of 1 image, "'
t "bench --steps 1: '1 timed step after' ($(echo "$out" | grep "timed"))" 'echo "$out" | grep -q "^  1 timed step after 0 warm-up, "'
out=$("$VITMAE" bench --img 8 --patch 4 --batch 4 --groups 1 --steps 1 --warmup 0 --threads 1); rc=$?
t "bench --groups 1: '1 gradient group of 4 images' ($(echo "$out" | grep "gradient group"))" \
  '[ $rc -eq 0 ] && echo "$out" | grep -q "^  1 process, 1 gradient group of 4 images, "'
# A count in digits only, as VITMAE_GROUPS_AT_ONCE: ' 2' and '+2' were taken as 2.
for v in " 2" "+2" "2x"; do
  out=$(VITMAE_FORWARD_IMAGES="$v" "$VITMAE" bench --img 8 --patch 4 --batch 4 --steps 1 --warmup 0 --threads 1); rc=$?
  t "VITMAE_FORWARD_IMAGES='$v' is no count: the default passes ($rc: $(echo "$out" | grep -o "in passes of [0-9]*"))" \
    '[ $rc -eq 0 ] && echo "$out" | grep -q "block forward in passes of 4 (encoder) and 4 (decoder) of the 4 images at once"'
done
for mode in groups kernels; do
  out=$(VITMAE_FORWARD_IMAGES=2 "$VITMAE" bench --img 8 --patch 4 --batch 8 --steps 1 --warmup 0 --threads 2 --parallel $mode); rc=$?
  t "bench --parallel $mode, VITMAE_FORWARD_IMAGES=2: passes of 2 images" '[ $rc -eq 0 ] && echo "$out" | grep -q "block forward in passes of 2 (encoder) and 2 (decoder) of the [48] images at once"'
done
err=$("$VITMAE" bench --img 8 --patch 4 --batch 2 --steps 1 --threads 3 --parallel groups 2>&1 >/dev/null); rc=$?
t "bench --parallel groups at 3 threads: exit 2, one line" '[ $rc -eq 2 ] && [ "$(echo "$err" | wc -l)" -eq 1 ] && echo "$err" | grep -q "^vitmae: bench --parallel: groups needs"'
"$VITMAE" bench --batch 0 2>/dev/null; rc=$?
t "bench --batch 0 exits 2" '[ $rc -eq 2 ]'
# A model of one patch is refused as train refuses it, whatever --mask-ratio: each ratio was blamed in
# turn (0.75 and 0.1 "leave no visible patch of 1", 0 "removes no patch of 1").
for r in 0.75 0.1 0; do
  err=$("$VITMAE" bench --img 8 --patch 8 --batch 2 --steps 1 --warmup 0 --threads 1 --mask-ratio $r 2>&1 >/dev/null); rc=$?
  t "bench --img 8 --patch 8 --mask-ratio $r: exit 2, the one patch named ($rc: $err)" \
    '[ $rc -eq 2 ] && [ "$err" = "vitmae: bench --patch: 8 makes one patch of the 8x8 image; a step needs at least 2 (patches seen and patches to predict): a smaller --patch or a larger --img" ]'
done
# A ratio that removes no patch is refused as train refuses it (bench timed a loss over no patch: 0).
err=$("$VITMAE" bench --img 8 --patch 4 --channels 1 --batch 2 --steps 1 --warmup 0 --threads 1 --mask-ratio 0 2>&1 >/dev/null); rc=$?
t "bench --mask-ratio 0: exit 2, as train ($rc: $err)" '[ $rc -eq 2 ] && echo "$err" | grep -q "^vitmae: bench --mask-ratio: 0 removes no patch of 4 "'
err=$("$VITMAE" bench --img 30 --patch 4 2>&1 >/dev/null); rc=$?
t "bench with img not divisible by patch exits 2, naming the flags ($err)" '[ $rc -eq 2 ] && [ "$err" = "vitmae: bench: --img 30 is not a multiple of --patch 4" ]'
err=$("$VITMAE" bench --img 16 --patch 32 --threads 1 2>&1 >/dev/null); rc=$?
t "bench --patch past --img: exit 2, bench --patch: out of range, as every range error ($err)" '[ $rc -eq 2 ] && [ "$err" = "vitmae: bench --patch: 32 is out of range [1, 16]" ]'
err=$("$VITMAE" bench --img 8 --patch 4 --batch 4 --accum 8 2>&1 >/dev/null); rc=$?
t "bench --accum 8 of 4 groups: exit 2, names --accum, no process count ($err)" '[ $rc -eq 2 ] && echo "$err" | grep -q "^vitmae: bench --accum: 8 micro-batches cannot share the 4 gradient groups of a step evenly" && ! echo "$err" | grep -q process'
"$VITMAE" bench --frobnicate 2>/dev/null; rc=$?
t "bench unknown flag exits 2" '[ $rc -eq 2 ]'
# make bench's table (tools/bench.sh) divides a row's best run by the highest peak that any of the
# row's runs at that thread count measured, not by that run's own check. A stand-in for vitmae prints
# the JSON fields the table reads: at 1 thread the faster run's own check read the peak low (40, so
# 150% of it), the other run's 100; at 2 threads the team's runs measured the highest peak, 250.
cat >"$tmp/fake" <<'SH'
#!/bin/sh
n=$(cat "$(dirname "$0")/count" 2>/dev/null || echo 0); n=$((n + 1)); echo $n >"$(dirname "$0")/count"
par=groups; case "$*" in *kernels*|*"--threads 1"*) par=kernels ;; esac
case "$*" in
  *"--threads 1"*) [ $((n % 6)) = 1 ] && set -- 10 50 100 100 || set -- 12 60 40 45 ;;
  *kernels*) set -- 15 75 250 240 ;;
  *) [ $((n % 6)) = 2 ] && set -- 20 100 200 210 || set -- 18 90 150 160 ;;
esac
echo "{\"parallel\": \"$par\", \"img_per_s\": $1, \"gflops\": $2, \"peak_gflops\": $3, \"peak_fraction\": 0.0, \"peak_gflops_after\": $4, \"step_s\": 1.0, \"step_s_q1\": 1.0, \"step_s_median\": 1.0, \"step_s_q3\": 1.0, \"memory_ratio\": 1.0, \"phases_s\": {\"data\": 0.5}}"
SH
chmod +x "$tmp/fake"
out=$(cd "$VITMAE_ROOT" && BENCH_ROWS=small224 MAE_REPEAT=2 BENCH_TORCH=0 sh tools/bench.sh "$tmp/fake"); rc=$?
t "make bench's table: exits 0" '[ $rc -eq 0 ]'
t "make bench's table: 1 thread at 60% of the row's highest peak (not 150% of the run's own)" \
  'echo "$out" | grep -Eq "^vitmae, 1 thread\(s\) +12\.00 +60\.0 +60\.0% "'
t "make bench's table: 2 threads at 40% and the team at 30% of the 2-thread runs' highest peak" \
  'echo "$out" | grep -Eq "^vitmae, 2 thread\(s\), workers +20\.00 +100\.0 +40\.0% " &&
   echo "$out" | grep -Eq "^vitmae, 2 thread\(s\), team +15\.00 +75\.0 +30\.0% "'
# ... and the same table under a locale with a decimal comma (LC_ALL=de_DE.UTF-8, made here from Debian's
# locale sources as cli_usage.sh makes it): bench.sh's awk read the JSON's 4.8 as 4 and wrote "+12,5%",
# and its printf refused awk's "133,333" (not completely converted), so the PyTorch rows failed.
# bench.sh now works in the C locale, whatever the caller's.
if command -v localedef > /dev/null 2>&1 && mkdir -p "$tmp/loc" && localedef -i de_DE -f UTF-8 "$tmp/loc/de_DE.UTF-8" > /dev/null 2>&1; then
  rm -f "$tmp/count"
  out_de=$(cd "$VITMAE_ROOT" && LOCPATH="$tmp/loc" LC_ALL=de_DE.UTF-8 BENCH_ROWS=small224 MAE_REPEAT=2 BENCH_TORCH=0 sh tools/bench.sh "$tmp/fake"); rc=$?
  t "make bench's table under LC_ALL=de_DE.UTF-8: exit 0, the same table ($rc: $(echo "$out_de" | grep "^vitmae, 1 thread"))" \
    '[ $rc -eq 0 ] && [ "$out_de" = "$out" ]'
else
  echo "note: make bench's table under a decimal-comma locale not checked (localedef or Debian's locale sources missing)"
fi
# PyTorch on a BLAS that is not OpenBLAS (Debian's reference BLAS: tens of times slower, hours on
# ViT-B/16) is not timed, and the table says why. A stand-in for the Python that runs PyTorch answers
# bench.sh's questions: torch imports, bench_torch.py --blas names the OpenBLAS kernels or none, and its
# JSON names them too (null where libblas.so.3 is not OpenBLAS); each timing run leaves a line in
# $TIMED, with the OPENBLAS_CORETYPE it was given. A run without TIMED fails loudly: the narrower-kernels
# run below once had none, so its timing runs wrote nowhere ("cannot create : Directory nonexistent" on
# stderr) and whether PyTorch was timed, with the variable kept, went unchecked.
cat >"$tmp/py" <<'SH'
#!/bin/sh
case "$*" in
  *"bench_torch.py --blas")
    if [ "$KERNELS" = null ]; then echo none; else echo "$KERNELS" | tr -d '"'; fi ;;
  *bench_torch.py*)
    [ -n "${TIMED:-}" ] || { echo "stand-in: TIMED is not set" >&2; exit 3; }
    echo "run ${OPENBLAS_CORETYPE:-}" >>"$TIMED"
    t=1 v=1.5; case "$*" in *"--threads 2"*) t=2 v=2.5 ;; esac
    echo "{\"torch\": \"0\", \"openblas_kernels\": $KERNELS, \"openblas_own_choice\": $KERNELS, \"openblas_narrower_than_cpu\": ${NARROWER:-false}, \"results\": [{\"threads\": $t, \"img_per_s\": $v}]}" ;;
  *__config__*) echo "BLAS_INFO=generic" ;;
  *__version__*) echo "0-standin" ;;
esac
exit 0
SH
chmod +x "$tmp/py"
for k in null '"Zen"'; do
  rm -f "$tmp/count" "$tmp/timed"
  out=$(cd "$VITMAE_ROOT" && TIMED="$tmp/timed" KERNELS=$k BENCH_TORCH_PYTHON="$tmp/py" BENCH_ROWS=small224 MAE_REPEAT=1 sh tools/bench.sh "$tmp/fake"); rc=$?
  timed=$(cat "$tmp/timed" 2>/dev/null | wc -l)
  if [ "$k" = null ]; then rc_null=$rc; out_null=$out; timed_null=$timed; else rc_zen=$rc; out_zen=$out; timed_zen=$timed; fi
done
rm -f "$tmp/timed"
t "make bench's table with PyTorch: exits 0" '[ $rc_null -eq 0 ] && [ $rc_zen -eq 0 ]'
t "make bench's table with PyTorch: a row compares with its best thread count (10.00 / 2.50 = 4.00x)" \
  'echo "$out_zen" | grep -Eq "^vitmae, 1 thread\(s\) +10\.00 .* 4\.00x "'
t "make bench's table: PyTorch on a BLAS that is not OpenBLAS is not timed, and that is said once" \
  '[ "$timed_null" -eq 0 ] && ! echo "$out_null" | grep -q "^torch, " &&
   echo "$out_null" | grep -Eq "^vitmae, 1 thread\(s\) .* - +[0-9.]+x$" &&
   [ "$(echo "$out_null" | grep -c "^bench.sh: warning: PyTorch not timed: its BLAS (libblas.so.3) is not OpenBLAS")" -eq 1 ]'
t "make bench's table: PyTorch on OpenBLAS is timed (1 and 2 threads)" '[ "$timed_zen" -eq 2 ]'
t "make bench's table: PyTorch on OpenBLAS is not warned about, and its kernels are named" \
  '! echo "$out_zen" | grep -q "warning" && echo "$out_zen" | grep -q "OpenBLAS kernels Zen;"'
# An OPENBLAS_CORETYPE in the environment that holds PyTorch to narrower kernels than the CPU's (one of
# our virtual machines had OPENBLAS_CORETYPE=Haswell on an AVX-512 Zen 5) is kept, and said in the table.
out_narrow=$(cd "$VITMAE_ROOT" && TIMED="$tmp/timed" OPENBLAS_CORETYPE=Haswell NARROWER=true KERNELS='"Haswell"' \
  BENCH_TORCH_PYTHON="$tmp/py" BENCH_ROWS=small224 MAE_REPEAT=1 sh tools/bench.sh "$tmp/fake"); rc=$?
t "make bench's table: PyTorch held to narrower kernels by OPENBLAS_CORETYPE is said, once" \
  '[ $rc -eq 0 ] && [ "$(echo "$out_narrow" | grep -c "^bench.sh: warning: OPENBLAS_CORETYPE=Haswell held PyTorch to narrower kernels")" -eq 1 ]'
t "make bench's table: PyTorch under OPENBLAS_CORETYPE is timed (1 and 2 threads), the variable kept ($(cat "$tmp/timed" 2>/dev/null | tr "\n" "|"))" \
  '[ "$(cat "$tmp/timed" 2>/dev/null | tr "\n" "|")" = "run Haswell|run Haswell|" ]'
rm -f "$tmp/timed"
# Which kernels tools/bench_torch.py runs PyTorch with, by the kernels OpenBLAS chose and the CPU's flags
# (the module imports without torch; its choice is a function of the two).
kernels_out=$(cd "$VITMAE_ROOT/tools" && /usr/bin/python3 -c '
import bench_torch as b
avx512 = {"avx512f", "avx512vl", "avx2", "fma"}; avx2 = {"avx2", "fma"}
for chosen, flags in [("Prescott", avx512), ("Haswell", avx512), ("Zen", avx512), ("Cooperlake", avx512),
                      ("SkylakeX", avx512), ("Prescott", avx2), ("Haswell", avx2), ("Zen", avx2),
                      ("Prescott", {"sse3"}), (None, avx512), ("Haswell", {"avx512f", "avx2", "fma"})]:
    print(chosen, b.wider_kernels(chosen, flags))' 2>&1)
t "bench_torch.py: AVX-512 kernels where OpenBLAS chose narrower ones on an AVX-512 CPU" \
  'echo "$kernels_out" | grep -qx "Prescott SkylakeX" && echo "$kernels_out" | grep -qx "Haswell SkylakeX" &&
   echo "$kernels_out" | grep -qx "Zen SkylakeX" && echo "$kernels_out" | grep -qx "Cooperlake None" &&
   echo "$kernels_out" | grep -qx "SkylakeX None"'
t "bench_torch.py: AVX2 kernels where OpenBLAS chose SSE ones on an AVX2 CPU, and no change past what the CPU has" \
  '[ "$(echo "$kernels_out" | sed -n 6,11p | tr "\n" "|")" = "Prescott Haswell|Haswell None|Zen None|Prescott None|None None|Haswell None|" ]'
# Every instruction-set feature an x86 kernel file is compiled for (its target attributes) is checked
# by the gate that chooses its path (kernels/cpu.c: cpu_has_avx512 for the *avx512* files,
# cpu_has_avx2_fma for the *avx2* ones): a CPU, or a hypervisor, that offers the one without the other
# would otherwise run an instruction it lacks (SIGILL) instead of falling back to the next path.
src="$VITMAE_ROOT/src/kernels"
for isa in avx512:cpu_has_avx512 avx2:cpu_has_avx2_fma; do
  feats=$(grep -ho 'target("[^"]*")' "$src"/x86/*"${isa%%:*}"*.[ch] | sed 's/^target("//; s/")$//' | tr ',' '\n' | sort -u)
  gate=$(sed -n "/^int ${isa#*:}(void)/,/^}/p" "$src/cpu.c")
  t "the ${isa%%:*} files name their features (got: $(echo $feats))" '[ -n "$feats" ] && [ -n "$gate" ]'
  for f in $feats; do
    t "${isa#*:} checks $f, which the ${isa%%:*} files are compiled for" \
      "echo \"\$gate\" | grep -q '__builtin_cpu_supports(\"$f\")'"
  done
done
# --channels is 1 or 3 (its --help showed a range 1 to 3 that 2 was refused from): a choice, as
# docs/interface.md says.
"$VITMAE" bench --channels 2 --steps 1 > /dev/null 2> "$tmp.err"; rc=$?
t "--channels 2: exit 2, one line naming the choices" '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp.err")" -eq 1 ] && grep -q "^vitmae: bench --channels: .2. is not one of 1|3$" "$tmp.err"'
t "--help shows --channels 1|3" '"$VITMAE" bench --help | grep -q "^  --channels 1|3 "'
rm -f "$tmp.err"
rm -rf "$tmp"
[ $fail -eq 0 ] && echo "cli bench ok"
exit $fail
