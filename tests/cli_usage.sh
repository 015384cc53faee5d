#!/bin/sh
# The top-level command line: help, unknown commands, exit statuses, and every flag of every command
# named in docs/interface.md; and the docs' examples: their flags, make targets and variables, the test table.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch tmp
cd "$tmp" || exit 1   # a command that wrongly writes to the working directory writes here
out=$("$VITMAE" --help); rc=$?
t "--help exits 0" '[ $rc -eq 0 ]'
t "--help prints usage" 'echo "$out" | grep -q "usage: vitmae COMMAND"'
"$VITMAE" frobnicate 2>"$tmp/err"; rc=$?
t "unknown command exits 2" '[ $rc -eq 2 ]'
t "unknown command message" 'grep -q "^vitmae: frobnicate: unknown command" "$tmp/err"'
"$VITMAE" 2>/dev/null; rc=$?
t "no command exits 2" '[ $rc -eq 2 ]'
# `vitmae help COMMAND` is `vitmae COMMAND --help` (it printed the list of commands for any word); an
# unknown word is an unknown command, two words a usage error.
"$VITMAE" help train > "$tmp/h1" 2>&1; rc=$?
"$VITMAE" train --help > "$tmp/h2" 2>&1
t "help train: train's --help, exit 0 ($rc: $(head -n 1 "$tmp/h1"))" '[ $rc -eq 0 ] && cmp -s "$tmp/h1" "$tmp/h2"'
# ... for every command `vitmae --help` lists, version and help themselves too: `help version` said
# "vitmae: version: takes no arguments", exit 2 (and `version --help` alike).
listed=$("$VITMAE" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
unhelped=$(for c in $listed version help; do
  "$VITMAE" help "$c" > "$tmp/hc" 2> "$tmp/hcerr" && [ -s "$tmp/hc" ] && [ ! -s "$tmp/hcerr" ] || echo "$c"
done)
t "help CMD: exit 0 and a usage on stdout for every command listed, version and help too (not: $(echo $unhelped))" \
  '[ "$(echo $listed | wc -w)" -ge 11 ] && [ -z "$unhelped" ]'
"$VITMAE" version --help > "$tmp/h1" 2>&1; rc=$?
"$VITMAE" help version > "$tmp/h2" 2>&1
t "version --help: its usage, exit 0, as help version ($rc: $(cat "$tmp/h1"))" \
  '[ $rc -eq 0 ] && cmp -s "$tmp/h1" "$tmp/h2" && [ "$(cat "$tmp/h1")" = "usage: vitmae version (or vitmae --version): the version and the vector paths this CPU runs; it takes no arguments" ]'
# A command's usage is no work to save: `vitmae train --help | head -3` said "vitmae: train: standard
# output: its reader has gone ...; ... and the run goes on", with no run, for the commands that write
# files (they ignore SIGPIPE); now --help ends by SIGPIPE in silence, as data's and info's do.
unquiet=$(for c in train finetune reconstruct attention embed probe; do
  closed_pipe stdout "$tmp/hperr" "$VITMAE" $c --help; _rc=$?
  [ $_rc -eq 141 ] && [ ! -s "$tmp/hperr" ] || echo "$c: $_rc $(head -n 1 "$tmp/hperr")"
done)
t "CMD --help | head: ends by SIGPIPE, without a word (not: $unquiet)" '[ -z "$unquiet" ]'
"$VITMAE" help frobnicate > /dev/null 2> "$tmp/err"; rc=$?
t "help frobnicate: exit 2, unknown command ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: frobnicate: unknown command (see vitmae --help)" ]'
"$VITMAE" help train probe > /dev/null 2> "$tmp/err"; rc=$?
t "help with two words: exit 2, one line ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: help: takes one command (vitmae help COMMAND)" ]'
"$VITMAE" help --bogus > "$tmp/out" 2> "$tmp/err"; rc=$?
t "help --bogus: exit 2, unknown flag, nothing on stdout ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = "vitmae: help: unknown flag '"'--bogus'"' (see vitmae --help)" ]'
# help NAME of a top-level request as it is spelled on its own (docs/interface.md, section 1): `help
# --version` is `help version` (it was `vitmae: help: unknown flag '--version'`, exit 2), and `help
# --help`, `help -h` and `help help` are `vitmae --help`: the same text on stdout, exit 0.
"$VITMAE" --help > "$tmp/list" 2>&1
"$VITMAE" help version > "$tmp/vhelp" 2>&1
for h in --help -h help --version; do
  want=$tmp/list; [ "$h" = --version ] && want=$tmp/vhelp
  "$VITMAE" help $h > "$tmp/out" 2> "$tmp/err"; rc=$?
  t "help $h: exit 0, what $(basename "$want" | sed 's/list/vitmae --help/; s/vhelp/help version/') prints, nothing on stderr ($rc: $(head -n 1 "$tmp/out"; cat "$tmp/err"))" \
    '[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && cat "$tmp/out" | cmp -s - "$want" && [ -s "$want" ]'
done
t "help help is the list of commands" 'grep -q "^usage: vitmae COMMAND" "$tmp/list" && grep -q "^usage: vitmae version" "$tmp/vhelp"'
# Every flag a command cannot run without is marked in its --help: attention's --ckpt, train's and
# finetune's --data were not, where reconstruct, embed, classify and eval marked theirs.
unmarked=""
for cf in "attention --ckpt" "reconstruct --ckpt" "embed --ckpt" "classify --ckpt" "eval --ckpt" "eval --data" \
          "train --data" "finetune --data"; do
  "$VITMAE" ${cf% *} --help | grep -q "^  ${cf#* } [A-Z|]* .*(required" || unmarked="$unmarked $cf;"
done
t "--help marks every required flag (unmarked:$unmarked)" '[ -z "$unmarked" ]'
# A whole number past every bound is out of range, as -1 is (it was "not an integer").
"$VITMAE" train --steps 99999999999999999999 > /dev/null 2> "$tmp/err"; r1=$?
t "--steps 99999999999999999999: out of range ($r1: $(cat "$tmp/err"))" \
  '[ $r1 -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: train --steps: 99999999999999999999 is out of range [1, 1000000000000]" ]'
# Every flag as near as the nearest is named (--atch named --patch alone, as near as --batch).
"$VITMAE" train --atch 8 > /dev/null 2> "$tmp/err"; r1=$?
"$VITMAE" train --stepz 8 > /dev/null 2> "$tmp/err2"
t "--atch: both flags one edit away named ($r1: $(cat "$tmp/err"); $(cat "$tmp/err2"))" \
  '[ $r1 -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: train: unknown flag '"'--atch'"' (did you mean --patch or --batch? see vitmae train --help)" ] &&
   [ "$(cat "$tmp/err2")" = "vitmae: train: unknown flag '"'--stepz'"' (did you mean --steps? see vitmae train --help)" ]'
# train --ckpt, the other commands' checkpoint flag: "did you mean --ckpt-every?" (a number of steps,
# refused next); train's two ways to a checkpoint are named.
"$VITMAE" train --ckpt run --data x > /dev/null 2> "$tmp/err"; r1=$?
t "train --ckpt: --init and --resume named ($r1: $(cat "$tmp/err"))" \
  '[ $r1 -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: train: unknown flag '"'--ckpt'"' (train starts from a checkpoint'"'"'s weights with --init CHECKPOINT, or continues its run with --resume RUN; see vitmae train --help)" ]'
"$VITMAE" train -ckpt run --data x > /dev/null 2> "$tmp/err2"; r2=$?
t "train -ckpt (one dash): the same ($r2: $(cat "$tmp/err2"))" '[ $r2 -eq 2 ] && cmp -s "$tmp/err" "$tmp/err2"'
# `vitmae --help train` and `-h train` are `help train`, as `git --help status` (they printed the list,
# the word dropped); `vitmae ""` and `help ""` say what is missing (it was "vitmae: : unknown command").
"$VITMAE" help train > "$tmp/th" 2>&1
"$VITMAE" --help train > "$tmp/out" 2>&1; r1=$?
"$VITMAE" -h train > "$tmp/out2" 2>&1; r2=$?
t "--help train and -h train: train's help, exit 0 ($r1 $r2: $(head -n 1 "$tmp/out"))" \
  '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && cmp -s "$tmp/out" "$tmp/th" && cmp -s "$tmp/out2" "$tmp/th" && grep -q "^usage: vitmae train" "$tmp/th"'
"$VITMAE" "" > "$tmp/out" 2> "$tmp/err"; r1=$?
"$VITMAE" help "" > "$tmp/out" 2> "$tmp/err2"; r2=$?
t "an empty command word: exit 2, one line saying so ($r1 $r2: $(cat "$tmp/err" "$tmp/err2" | tr "\n" "|"))" \
  '[ $r1 -eq 2 ] && [ $r2 -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: an empty argument where the command goes (see vitmae --help)" ] && cmp -s "$tmp/err" "$tmp/err2"'
# A word of the command line echoed in a message goes through one rule (cmd/cli.h, cli_error;
# docs/interface.md, section 1): its control characters written out, what is not UTF-8 as U+FFFD, and
# past 96 bytes cut and marked "...". An unknown command was printed raw (a control byte as it is, all
# of a 300-byte word), an unknown flag cut at 63 bytes (in a character's middle) without a mark.
long=$(printf 'x%.0s' $(seq 300)); ctl=$(printf 'bad\001name'); bad=$(printf 'bad\377name')
# one_line FILE: one line, no control byte but its newline, valid UTF-8, at most 200 bytes.
one_line() {
  [ "$(wc -l < "$1")" -eq 1 ] && [ "$(wc -c < "$1")" -le 200 ] && ! tr -d '\n' < "$1" | LC_ALL=C grep -q '[[:cntrl:]]' &&
    iconv -f UTF-8 -t UTF-8 "$1" > /dev/null 2>&1
}
# clean_echo WHAT ARGS...: `vitmae ARGS` (W a word above) exits 2 with one clean line.
clean_echo() {
  _what=$1; shift
  "$VITMAE" "$@" > /dev/null 2> "$tmp/err"; rc=$?
  t "$_what, a $(printf %s "$w" | wc -c)-byte word: exit 2, one clean line ($rc: $(head -c 300 "$tmp/err" | od -c | head -n 2 | tr -s ' '))" \
    '[ $rc -eq 2 ] && one_line "$tmp/err"'
}
euros=$(printf '\342\202\254%.0s' $(seq 40))   # --EUROS: 63 bytes end inside a character
for w in "$ctl" "$long" "$bad" "$euros"; do
  clean_echo "an unknown command" "$w"
  clean_echo "help W" help "$w"
  clean_echo "help -W" help "-$w"
  clean_echo "an unknown flag" train "--$w=3"
  clean_echo "an integer flag's value" train --batch "$w"
  clean_echo "a number flag's value" train --lr "$w"
  clean_echo "a choice flag's value" train --pos "$w"
  clean_echo "attention --layer's value" attention --ckpt c --layer "$w" in.png
  clean_echo "an argument not taken" train "$w"
  clean_echo "one argument too many" data d "$w"
done
"$VITMAE" "$long" 2> "$tmp/err"
t "an unknown command of 300 bytes: its first 96 and ... ($(cat "$tmp/err"))" \
  '[ "$(cat "$tmp/err")" = "vitmae: $(printf "x%.0s" $(seq 96))...: unknown command (see vitmae --help)" ]'
"$VITMAE" "$ctl" 2> "$tmp/err"
t "an unknown command's control byte written out ($(cat "$tmp/err"))" \
  '[ "$(cat "$tmp/err")" = "vitmae: bad\\x01name: unknown command (see vitmae --help)" ]'
"$VITMAE" train "--$bad" 2> "$tmp/err"
t "an unknown flag not UTF-8: U+FFFD in its place ($(cat "$tmp/err"))" \
  '[ "$(cat "$tmp/err")" = "vitmae: train: unknown flag '"'"'--bad$(printf "\357\277\275")name'"'"' (see vitmae train --help)" ]'
# An unknown flag names the command's closest flag when one is close (docs/interface.md, section 1), as
# git and argparse do: timm's `--topk` for classify's --top, `--epoch`; none for a word far from all.
near_flag() {   # near_flag CMD WORD EXPECTED-HINT (empty: no hint)
  "$VITMAE" "$1" "$2" 5 > /dev/null 2> "$tmp/err"; rc=$?
  if [ -n "$3" ]; then want="vitmae: $1: unknown flag '$2' (did you mean $3? see vitmae $1 --help)"
  else want="vitmae: $1: unknown flag '$2' (see vitmae $1 --help)"; fi
  t "$1 $2: exit 2, one line, ${3:-no} flag suggested ($rc: $(cat "$tmp/err"))" '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "$want" ]'
}
near_flag classify --topk --top
near_flag finetune --epoch --epochs
near_flag train --warm --warmup-steps
# A word that begins several flags names them all, not the shortest (the pick would be arbitrary):
near_flag train --dec "--dec-dim, --dec-depth or --dec-heads"
near_flag train --dec-d "--dec-dim or --dec-depth"
near_flag finetune --nb-classes ""
# Two letters swapped are one edit, as git counts them (--hlep, --tpo), and --help, in no flag table,
# is a candidate of every command:
near_flag classify --hlep --help
near_flag classify --tpo --top
# A long flag written with one dash gets the hint its two-dash spelling gets (-hlep named none, and
# `train -steps 5` said only "unexpected argument"); a one-dash word near no flag stays an argument.
near_flag train -hlep --help
near_flag train -steps --steps
near_flag classify -tpo --top
"$VITMAE" train -x > /dev/null 2> "$tmp/err"; rc=$?
t "train -x: an unexpected argument, as before ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: train: unexpected argument '"'"'-x'"'"' (the folder of images goes with --data DIR)" ]'
# A file or folder whose name begins with '-' follows `--` (docs/interface.md, section 1): after it no
# word is a flag, for every command that takes files or folders as arguments. Without it a name that
# reads as one of the command's flags (-json, -force, --x) is refused in one line, exit 2, nothing read.
mkdir -p "$tmp/dash/-json" "$tmp/dash/--x" "$tmp/dash/-x"
{ "$VITMAE_TOOLS/mkckpt" png "$tmp/dash/-json/a.png" --size 8 --channels 1 --value 0.3 &&
  "$VITMAE_TOOLS/mkckpt" ckpt "$tmp/dash/-json/checkpoint.safetensors" --img 8 --patch 4 --channels 1 &&
  "$VITMAE_TOOLS/synth" "$tmp/dash/cls" --count 4 --size 8 --classes 2 &&
  "$VITMAE" finetune --from-scratch --img 8 --patch 4 --dim 8 --depth 1 --heads 1 --data "$tmp/dash/cls" --val-frac 0 \
    --batch 2 --steps 1 --threads 1 --out "$tmp/dash/ft"; } > /dev/null 2>&1 || { echo "FAILED: the files named with a dash"; fail=1; }
for f in -force --x/a.png -x/a.png; do cp "$tmp/dash/-json/a.png" "$tmp/dash/$f"; done
# dash_arg WORD HINT CMD [FLAGS...]: in $tmp/dash, `vitmae CMD FLAGS -- WORD` reads WORD (exit 0, nothing
# on stderr); `vitmae CMD FLAGS WORD` says "unknown flag 'WORD'", with HINT when one is given.
dash_arg() {
  word=$1; hint=$2; shift 2
  (cd "$tmp/dash" && "$VITMAE" "$@" -- "$word") > "$tmp/out" 2> "$tmp/err"; rc=$?
  (cd "$tmp/dash" && "$VITMAE" "$@" "$word") > "$tmp/out2" 2> "$tmp/err2"; rc2=$?
  if [ -n "$hint" ]; then want="vitmae: $1: unknown flag '$word' (did you mean $hint? see vitmae $1 --help)"
  else want="vitmae: $1: unknown flag '$word' (see vitmae $1 --help)"; fi
  t "$1 -- $word: read, exit 0 ($rc: $(head -n 1 "$tmp/err")); $1 $word: exit 2, one line ($rc2: $(cat "$tmp/err2"))" \
    '[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && [ -s "$tmp/out" ] && [ $rc2 -eq 2 ] && [ "$(cat "$tmp/err2")" = "$want" ] && [ ! -s "$tmp/out2" ]'
}
dash_arg -json --json data
dash_arg --x "" data
dash_arg -json --json info
dash_arg -force --force reconstruct --ckpt -json/checkpoint.safetensors --out rec
dash_arg -force --force attention --ckpt -json/checkpoint.safetensors --out att
dash_arg -force --force embed --ckpt -json/checkpoint.safetensors --out e.npy
dash_arg -json --json classify --ckpt ft/checkpoint.safetensors
t "reconstruct, attention and embed -- -force: each output names the file -force" \
  '[ -s "$tmp/dash/rec/-force.recon.png" ] && [ -s "$tmp/dash/att/-force.attn.png" ] && [ "$(cut -f1 "$tmp/dash/e.txt")" = -force ]'
# A one-dash word near no flag needs no `--`: it is an argument as any other word.
(cd "$tmp/dash" && "$VITMAE" data -x) > "$tmp/out" 2> "$tmp/err"; rc=$?
t "data -x: the folder -x read, exit 0, as data -- -x ($rc: $(head -n 1 "$tmp/out"))" \
  '[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && [ "$(head -n 1 "$tmp/out")" = "-x: 1 ok, 0 skipped, 0 ignored" ]'
# An unknown command or top-level request names the closest command or request the same way, as git
# does for its commands (docs/interface.md, section 1); `help NAME` too. None for a word far from all.
near_word() {   # near_word EXPECTED-LINE ARG...
  want=$1; shift
  "$VITMAE" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
  t "$*: exit 2, one line, nothing on stdout ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "$want" ] && [ ! -s "$tmp/out" ]'
}
near_word "vitmae: trian: unknown command (did you mean train? see vitmae --help)" trian
near_word "vitmae: rec: unknown command (did you mean reconstruct? see vitmae --help)" rec
near_word "vitmae: --hlep: unknown command (did you mean --help? see vitmae --help)" --hlep
near_word "vitmae: -hlep: unknown command (did you mean --help? see vitmae --help)" -hlep
near_word "vitmae: help: unknown flag '-verison' (did you mean --version? see vitmae --help)" help -verison
near_word "vitmae: verison: unknown command (did you mean version? see vitmae --help)" verison
near_word "vitmae: trian: unknown command (did you mean train? see vitmae --help)" help trian
near_word "vitmae: help: unknown flag '--verison' (did you mean --version? see vitmae --help)" help --verison
near_word "vitmae: help: unknown flag '--x' (see vitmae --help)" help --x
near_word "vitmae: frobnicate: unknown command (see vitmae --help)" frobnicate
# tools/fresh_debian.sh (docs/testing.md) refuses before it bootstraps anything: no DIR, or a DIR that
# exists (it would write a whole system into it).
sh "$VITMAE_ROOT/tools/fresh_debian.sh" 2>"$tmp/err"; rc=$?
t "fresh_debian.sh without DIR exits 2" '[ $rc -eq 2 ] && grep -q "^usage: tools/fresh_debian.sh DIR" "$tmp/err"'
sh "$VITMAE_ROOT/tools/fresh_debian.sh" "$tmp" 2>"$tmp/err"; rc=$?
t "fresh_debian.sh into an existing folder exits 2" '[ $rc -eq 2 ] && grep -q "^vitmae: $tmp: already exists" "$tmp/err"'
# tools/install-deps.sh (README, "Install"; issue 2): not root, a missing package is one line with the
# exact command, exit 1, nothing installed; root, `apt-get update` once per build folder, then the
# install (an apt-get of the test's own on PATH records its calls). The package name is one that no
# Debian has, so dpkg-query finds it missing.
deps="$VITMAE_ROOT/tools/install-deps.sh"; pkg=vitmae-test-no-such-package
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null 2>&1; then
  (cd / && setpriv --reuid=65534 --regid=65534 --clear-groups sh -s -- "$tmp/nobuild" $pkg < "$deps") > /dev/null 2> "$tmp/err"; rc=$?
elif [ "$(id -u)" != 0 ]; then
  sh "$deps" "$tmp/nobuild" $pkg > /dev/null 2> "$tmp/err"; rc=$?
else
  rc=1; echo "vitmae: missing packages: $pkg; run: sudo apt-get update && sudo apt-get install -y $pkg" > "$tmp/err"
  echo "note: setpriv missing: install-deps.sh not run as another user"
fi
t "install-deps.sh, not root: the exact command, exit 1 ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: missing packages: $pkg; run: sudo apt-get update && sudo apt-get install -y $pkg" ] && [ ! -e "$tmp/nobuild" ]'
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$tmp/fakebin"
  printf '#!/bin/sh\necho "apt-get $*" >> "%s/apt.log"\n' "$tmp" > "$tmp/fakebin/apt-get" && chmod +x "$tmp/fakebin/apt-get"
  PATH="$tmp/fakebin:$PATH" sh "$deps" "$tmp/b" $pkg > /dev/null 2> "$tmp/err"; rc1=$?
  PATH="$tmp/fakebin:$PATH" sh "$deps" "$tmp/b" $pkg > /dev/null 2>> "$tmp/err"; rc2=$?
  t "install-deps.sh as root: apt-get update once, then the install, each time ($rc1 $rc2: $(tr "\n" "|" < "$tmp/apt.log"))" \
    '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(cat "$tmp/apt.log")" = "apt-get update -qq
apt-get install -y -qq --no-install-recommends $pkg
apt-get install -y -qq --no-install-recommends $pkg" ] && [ -f "$tmp/b/.apt-updated" ]'
fi
# docs/interface.md states the interface flag by flag: every flag of every command's --help appears in
# that command's part of it (its "### `vitmae CMD" subsection of section 5 or its "- `vitmae CMD" item
# of section 8; for train also sections 2, 3, 7 and 9, which describe its data, model, processes and
# run folders). doc_part CMD DOC prints that part; undocumented_flags DOC prints "CMD --flag" for each
# flag missing from DOC.
doc_part() {
  awk -v cmd="$1" '
    /^## [0-9]+\./ { sec = $2 + 0; part = ""; next }
    /^### `vitmae / { part = $3 }
    /^### / && !/^### `vitmae / { part = ""; next }
    sec == 8 && /^- `vitmae / { part = $3 }
    { p = part; gsub(/`/, "", p) }
    p == cmd || (cmd == "train" && (sec == 2 || sec == 3 || sec == 7 || sec == 9)) { print }
  ' "$2"
}
undocumented_flags() {
  "$VITMAE" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' > "$tmp/cmds"
  while read -r cmd; do
    doc_part "$cmd" "$1" > "$tmp/part"
    "$VITMAE" "$cmd" --help | awk '/^  --/ { print $1 }' | while read -r flag; do
      grep -Eq -- "$flag([^a-z-]|\$)" "$tmp/part" || echo "$cmd $flag"
    done
  done < "$tmp/cmds"
}
# Each flag of a --help gives its default (section 1): every flag of numbers or of a choice says it
# ("default", or "(preset)" for the model's sizes), but for the two that replace another (--epochs for
# --steps, --scale for --display). train's and finetune's --channels and --parallel and bench's --accum
# named none. A choice is of words (cls|mean, N|last); FILE|RUN (--ckpt, --init) names two kinds of
# path, no choice.
no_default=$("$VITMAE" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' | while read -r cmd; do
  help_flags "$cmd" | awk -v cmd="$cmd" '/^  --/ && (($2 ~ /[|]/ && $2 !~ /^[A-Z|]+$/) || /\((integer|number) |\(one of /) && !/default|\(preset\)/ &&
    $1 != "--epochs" && $1 != "--scale" { print cmd " " $1 }'; done)
t "every --help flag of numbers or choices gives its default (none: $(echo $no_default))" '[ -z "$no_default" ]'
doc="$VITMAE_ROOT/docs/interface.md"
missing=$(undocumented_flags "$doc")
t "every --help flag is in its command's part of docs/interface.md (missing: $(echo $missing))" '[ -z "$missing" ]'
# The check can fail: a copy of the file without one flag (and with --val but not --val-max).
sed 's/--linear-lr//g' "$doc" > "$tmp/no-flag.md"
t "a flag missing from docs/interface.md is found" 'undocumented_flags "$tmp/no-flag.md" | grep -qx "probe --linear-lr"'
sed 's/--val-max//g' "$doc" > "$tmp/no-flag.md"
t "a flag whose name begins another's (--val) is still found" \
  'undocumented_flags "$tmp/no-flag.md" | grep -qx "train --val-max" && ! undocumented_flags "$tmp/no-flag.md" | grep -qx "train --val"'

# What docs/interface.md says of a flag's default and range is what --help gives: "`--val-max N`
# (default 1000, 1 to 10000000, ...)", "`--batch B` default 64, 1 to 4096" and bench's "`--img N` (32, 1
# to 8192)", in that command's part; numbers compare as numbers (10^12 is --help's 1000000000000, 1e-9 its 1e-09). The
# words of a default compare by their first ("`--blr` x batch / 256" and "blr * batch / 256").
# doc_defaults DOC prints "= CMD --flag" for each flag whose statements agree, "! CMD --flag: why" else.
doc_defaults() {
  "$VITMAE" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' | while read -r cmd; do
    help_flags "$cmd" > "$tmp/cmdhelp"
    doc_part "$cmd" "$1" > "$tmp/part"
    /usr/bin/python3 - "$cmd" "$tmp/cmdhelp" "$tmp/part" <<'PY'
import re, sys
cmd, helpf, partf = sys.argv[1:4]
def num(x):
    x = x.strip().rstrip(",;:.")
    x = re.sub(r"^(\d+)\^(\d+)$", lambda m: repr(float(int(m[1]) ** int(m[2]))), x)
    try: return float(x)
    except ValueError: return None
def paren(text, i):   # the text of the parenthesis that opens at text[i], nested ones kept
    depth = 0
    for j in range(i, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0: return text[i + 1:j]
    return text[i + 1:]
def first(x):         # the first word of a default, as said: "`--blr` x batch" and "blr * batch" are "blr"
    w = x.replace("`", "").strip().split()
    return w[0].strip("-,;:") if w else ""
helpd = {}
for line in open(helpf, encoding="utf-8"):   # the docs and --help are UTF-8, whatever the locale
    m = re.match(r"  (--[a-z-]+)", line)
    if not m: continue
    d = re.search(r"default:? ", line)
    dflt = first(re.split(r"[;)]", line[d.end():])[0]) if d else None
    r = re.search(r"\((?:integer|number) (\S+) to ([^)\s]+)\)", line)
    helpd[m[1]] = (dflt, (num(r[1]), num(r[2])) if r else None)
text = re.sub(r"\s+", " ", open(partf, encoding="utf-8").read())
claims = [(m[1], paren(text, m.end() - 1)) for m in re.finditer(r"`(--[a-z-]+)(?: [^`]*)?` ?\(", text)]
claims += [(m[1], m[2]) for m in re.finditer(r"`(--[a-z-]+)(?: [^`]*)?` (default[^;)`]*)", text)]
for flag, body in claims:
    if flag not in helpd: continue
    pieces = [p.strip() for p in re.split(r"[,;] ", body)]
    rng = dflt = None
    for p in pieces:
        r = re.match(r"(\S+) to (\S+)$", p)
        if r and num(r[1]) is not None and num(r[2]) is not None: rng = (num(r[1]), num(r[2])); break
    said = [p for p in pieces if p.startswith("default")]
    if said: dflt = first(said[0][len("default"):].lstrip(":"))
    elif rng and num(pieces[0]) is not None: dflt = pieces[0]   # bench's "(32, 1 to 8192)"
    hd, hr = helpd[flag]
    bad = 0
    if dflt and hd is not None:
        a, b = num(dflt), num(hd)
        if (a != b) if a is not None and b is not None else dflt != hd:
            print("! %s %s: default %s here, %s in --help" % (cmd, flag, dflt, hd)); bad = 1
    if rng and hr and rng != hr:
        print("! %s %s: range %g to %g here, %g to %g in --help" % (cmd, flag, rng[0], rng[1], hr[0], hr[1])); bad = 1
    if not bad and ((dflt and hd is not None) or (rng and hr)): print("= %s %s" % (cmd, flag))
PY
  done
}
doc_defaults "$doc" > "$tmp/defaults"
n=$(grep -c '^=' "$tmp/defaults"); wrong=$(grep '^!' "$tmp/defaults" | cut -c3-)
t "docs/interface.md's defaults and ranges of $n flags are their --help's (differ: $(echo $wrong))" '[ "$n" -ge 50 ] && [ -z "$wrong" ]'
# The same in a locale whose codeset is ASCII (PYTHONUTF8=0 LC_ALL=C, where Python reads a file in the
# locale's encoding): the docs are UTF-8 whatever the locale (it stopped at their first non-ASCII
# byte, UnicodeDecodeError, and found no statement).
n_c=$( (export LC_ALL=C PYTHONUTF8=0; doc_defaults "$doc") 2>&1 | grep -c '^=')
t "docs/interface.md's defaults and ranges read in an ASCII locale too ($n_c of $n flags)" '[ "$n_c" -eq "$n" ]'
sed 's/`--val-max N` (default 1000, 1 to 10000000, as finetune/`--val-max N` (default 100, 1 to 1000000, as finetune/; s/`--img N` (32, 1/`--img N` (64, 1/' "$doc" > "$tmp/no-flag.md"
t "a default or range docs/interface.md gives otherwise than --help is found ($(doc_defaults "$tmp/no-flag.md" | grep '^!' | tr "\n" " "))" \
  '[ "$(doc_defaults "$tmp/no-flag.md" | grep "^!")" = "! train --val-max: default 100 here, 1000 in --help
! train --val-max: range 1 to 1e+06 here, 1 to 1e+07 in --help
! bench --img: default 64 here, 32 in --help" ]'
# README.md's table of commands ("| `vitmae CMD ...` | what it does |") lists every command of
# `vitmae --help`, and no other, in any order.
readme_commands() {
  awk '/^\| command \| what it does \|/ { on = 1; next } on && !/^\|/ { exit }
    on && /^\| `vitmae / { c = $3; gsub(/`/, "", c); print c }' "$1" | sort
}
"$VITMAE" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' | sort > "$tmp/cmds"
readme_commands "$VITMAE_ROOT/README.md" > "$tmp/readme-cmds"
t "README.md's table of commands is vitmae --help's list ($(comm -3 "$tmp/cmds" "$tmp/readme-cmds" | tr -d '\t' | tr '\n' ' '))" \
  '[ -s "$tmp/cmds" ] && cmp -s "$tmp/cmds" "$tmp/readme-cmds"'
grep -v '^| `vitmae probe ' "$VITMAE_ROOT/README.md" > "$tmp/no-cmd.md"
t "a command missing from README.md's table is found" '[ "$(readme_commands "$tmp/no-cmd.md" | comm -23 "$tmp/cmds" -)" = probe ]'
# The other direction: every flag a command line in README.md or docs/*.md gives a command (`vitmae
# CMD ... --flag`, `./vitmae` and lines continued with a backslash too) is one of CMD's --help flags,
# so an example copied from the docs is not refused as an unknown flag. example_flags FILE... prints
# "FILE: CMD --flag" for each flag that CMD lacks; a bare `--` ends the flags (`vitmae data --
# --odd-name`).
example_flags() {
  for cmd in $("$VITMAE" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
    printf '%s' "$cmd "; "$VITMAE" "$cmd" --help | awk '/^  --/ { printf "%s ", $1 }'; echo
  done > "$tmp/cmdflags"
  awk -v flagsfile="$tmp/cmdflags" '
    BEGIN { while ((getline line < flagsfile) > 0) { n = split(line, w, " "); for (i = 2; i <= n; i++) ok[w[1] " " w[i]] = 1; known[w[1]] = 1 } }
    FNR == 1 { held = "" }
    /\\$/ { held = held substr($0, 1, length($0) - 1) " "; next }
    {
      text = held $0; held = ""
      while (match(text, /vitmae [a-z]+/)) {
        cmd = substr(text, RSTART + 7, RLENGTH - 7); text = substr(text, RSTART + RLENGTH)
        if (!(cmd in known)) continue
        rest = text; sub(/[`|;)].*$/, "", rest)
        n = split(rest, w, /[ \t]+/)
        for (i = 1; i <= n; i++) {
          if (w[i] == "--") break
          if (w[i] !~ /^--[a-z]/) continue
          f = w[i]; sub(/[^a-z0-9-].*$/, "", f)
          if (!((cmd " " f) in ok) && f != "--help") print FILENAME ": " cmd " " f
        }
      }
    }' "$@"
}
bad=$(example_flags "$VITMAE_ROOT/README.md" "$VITMAE_ROOT"/docs/*.md)
t "every flag of a command line in README.md and docs/*.md is in that command's --help (unknown: $(echo $bad))" '[ -z "$bad" ]'
# README.md gives train's defaults and why (the train issue asked for them there; a rewrite of the README
# had dropped them): each `--flag VALUE` of that paragraph is the default `train --help` gives the flag.
readme_defaults() {
  awk '/^Defaults of `vitmae train`/ { on = 1 } on && /^$/ { exit } on' "$1" | tr '\n' ' ' | grep -o '`--[a-z-]* [^`]*`' | tr -d '`' | sed 's/ --/\n--/g'
}
wrong=$(readme_defaults "$VITMAE_ROOT/README.md" | while read -r flag value; do
  help=$(help_flags train | awk -v f="$flag" '$1 == f' | sed -n 's/.*(default \([^)]*\)).*/\1/p')
  [ "$help" = "$value" ] || echo "$flag $value (help: ${help:-none})"
done)
n=$(readme_defaults "$VITMAE_ROOT/README.md" | wc -l)
t "README.md's defaults of train: $n flags, each train --help's default (wrong: $(echo $wrong))" '[ "$n" -ge 10 ] && [ -z "$wrong" ]'
# The flags train and finetune share, the run folder's and a new model's, have one home each (cmd/runfolder.h,
# core/config.h): each default and range of finetune --help is train --help's.
shared_default() { help_flags "$1" | awk -v f="$2" '$1 == f' | grep -o '(default [^)]*)\|([a-z]* [^ ]* to [^)]*)$' | tr '\n' ' '; }
drift=$(for f in --val-frac --val-max --keep --log-every --eval-every --ckpt-every --preset --img --patch --seed --threads; do
  tr_d=$(shared_default train $f); ft_d=$(shared_default finetune $f)
  [ -n "$tr_d" ] && [ "$tr_d" = "$ft_d" ] || echo "$f (train: $tr_d; finetune: $ft_d)"
done)
t "train and finetune give their shared flags the same defaults and ranges (differ: $(echo $drift))" '[ -z "$drift" ]'
printf 'run it:\n\n    ./vitmae train --data d --out r \\\n        --warmup-epochs 2\n    vitmae data -- --odd-name\n' > "$tmp/example.md"
t "an example flag the command lacks is found (also on a continued line), one after -- is not" \
  '[ "$(example_flags "$tmp/example.md")" = "$tmp/example.md: train --warmup-epochs" ]'
# Every make target the docs name (`make TARGET`, or a code line beginning `make TARGET`) is a rule of
# the Makefile, and every VAR of a `make ... VAR=value` example is read by the Makefile or the tools it
# runs (docs/data.md said `make bench-data DATA=DIR`, which the target ignores: BENCH_DATA).
# make_examples FILE...: `make ...` spans, and the lines of code blocks (fenced, or indented 4 spaces)
# that begin with make (a line of prose that begins so is not one).
make_examples() {
  awk '/^ *```/ { code = !code; next }
    { line = $0; while (match(line, /`make [^`]*`/)) { print substr(line, RSTART + 1, RLENGTH - 2); line = substr(line, RSTART + RLENGTH) } }
    (code || /^    /) && /^ *make [a-z]/ { sub(/#.*/, ""); sub(/^ */, ""); print }' "$@"
}
doc_targets=$(make_examples "$VITMAE_ROOT/README.md" "$VITMAE_ROOT"/docs/*.md | awk '$2 ~ /^[a-z][a-z-]*$/ { print $2 }' | sort -u)
missing_targets=$(for x in $doc_targets; do grep -q "^$x:" "$VITMAE_ROOT/Makefile" || echo "$x"; done)
t "every make target the docs name is in the Makefile (missing: $(echo $missing_targets))" '[ -n "$doc_targets" ] && [ -z "$missing_targets" ]'
make_vars() { make_examples "$@" | grep -oE '(^| )[A-Z][A-Z0-9_]*=' | tr -d ' =' | sort -u; }
unread_vars() { for v in $(make_vars "$@"); do grep -qw -- "$v" "$VITMAE_ROOT/Makefile" "$VITMAE_ROOT"/tools/*.sh || echo "$v"; done; }
bad_vars=$(unread_vars "$VITMAE_ROOT/README.md" "$VITMAE_ROOT"/docs/*.md)
t "every VAR= of a make example in the docs is read by the Makefile or tools/*.sh (unread: $(echo $bad_vars))" '[ -z "$bad_vars" ]'
printf 'Try `make bench-data DATA=DIR` or\n\n    make demo DEMO_STEPS=5\n\nmake it X=1 so.\n```sh\nmake mutate MUTANTS="a b"   # X=2\n```\n' > "$tmp/example.md"
t "a make variable nothing reads is found, one the demo reads is not" '[ "$(unread_vars "$tmp/example.md")" = DATA ]'
# The layers (docs/design.md, "Rules" and "What each folder owns"): src/'s folders in the order the
# rule lists them, lowest first, which the Makefile's SRC_DIRS follows; every include of src/ names a
# folder of the same or a lower layer and one of those its row of the table lists; no files include each
# other, in a loop of any length (a file and its header as one). data/image.c included io/json.h while
# the rule put data below io, and the table's column left out six of the includes.
# layer_check ROOT: one line per breach of the rule, as "FILE -> INCLUDE: why".
layer_check() {
  /usr/bin/python3 - "$1" <<'PY'
import os, re, sys
root = sys.argv[1]
design = open(os.path.join(root, "docs/design.md"), encoding="utf-8").read()   # UTF-8 whatever the locale
rule = re.search(r"\*\*Layers\.\*\*.*?lowest first:(.*?)\.\s", design, re.S)
order = [f.split("/")[0] for f in re.findall(r"`([a-z0-9/]+)`", rule.group(1))] if rule else []
order = list(dict.fromkeys(order))
if not order: print("docs/design.md: no \"lowest first:\" list in the Layers rule"); sys.exit()
rows = {}
for m in re.finditer(r"^\| `src/([a-z0-9/]+)` \|[^|]*\|([^|]*)\|$", design, re.M):
    rows[m.group(1)] = "any" if "anything" in m.group(2) else set(re.findall(r"`([a-z0-9/]+)`", m.group(2)))
mk = re.search(r"^SRC_DIRS\s*:=(.*)$", open(os.path.join(root, "Makefile"), encoding="utf-8").read(), re.M)
dirs = [d[len("src/"):] for d in mk.group(1).split()] if mk else []
if [d.split("/")[0] for d in dirs if "/" not in d] != order:
    print("Makefile: SRC_DIRS %s, not in the order of docs/design.md's rule %s" % (" ".join(dirs), " ".join(order)))
edges = {}
for d, _, files in os.walk(os.path.join(root, "src")):
    for f in sorted(files):
        if not f.endswith((".c", ".h")): continue
        path = os.path.relpath(os.path.join(d, f), os.path.join(root, "src"))
        folder = os.path.dirname(path)
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(os.path.join(d, f), encoding="utf-8", errors="replace").read(), re.M):
            to = os.path.dirname(inc)
            if not to: print("src/%s -> %s: names no folder" % (path, inc)); continue
            edges.setdefault(os.path.splitext(path)[0], set()).add(os.path.splitext(inc)[0])
            a, b = folder.split("/")[0], to.split("/")[0]
            if a not in order or b not in order: print("src/%s -> %s: a folder the rule does not list" % (path, inc)); continue
            if order.index(b) > order.index(a): print("src/%s -> %s: runs up, %s is above %s" % (path, inc, b, a))
            row = rows.get(folder)
            if b != a and row != "any" and (row is None or to not in row and b not in row):
                print("src/%s -> %s: %s is not in the row of src/%s in docs/design.md's table" % (path, inc, to, folder))
# Loops: depth-first search over the files (a .c and its .h as one).
state = {}
def visit(u, stack):
    state[u] = 1; stack.append(u)
    for v in sorted(edges.get(u, ())):
        if v == u: continue
        if state.get(v) == 1: print("src/: a loop of includes: " + " -> ".join(stack[stack.index(v):] + [v])); continue
        if not state.get(v): visit(v, stack)
    stack.pop(); state[u] = 2
for u in sorted(edges):
    if not state.get(u): visit(u, [])
PY
}
layers=$(layer_check "$VITMAE_ROOT")
t "src/'s includes keep docs/design.md's layers, no loops ($(echo "$layers" | head -n 3))" '[ -z "$layers" ]'
# ... and in a locale whose codeset is ASCII (PYTHONUTF8=0 LC_ALL=C, as for the docs' defaults above):
# docs/design.md was read in the locale's encoding and the check stopped at its first non-ASCII byte
# (UnicodeDecodeError: 'ascii' codec can't decode byte 0xe1).
layers=$( (export LC_ALL=C PYTHONUTF8=0; layer_check "$VITMAE_ROOT") 2>&1)
t "... also in an ASCII locale ($(echo "$layers" | tail -n 1))" '[ -z "$layers" ]'
# The check can fail: a copy of the tree with an include that runs up, one a row does not list, and a loop.
mkdir -p "$tmp/layers/docs"
cp -R "$VITMAE_ROOT/src" "$VITMAE_ROOT/Makefile" "$tmp/layers/" && cp "$VITMAE_ROOT/docs/design.md" "$tmp/layers/docs/"
printf '#include "cmd/cli.h"\n' >> "$tmp/layers/src/core/rng.c"
printf '#include "dist/dist.h"\n' >> "$tmp/layers/src/viz/confusion.c"
printf '#include "core/optim.h"\n' >> "$tmp/layers/src/core/rng.h"; printf '#include "core/rng.h"\n' >> "$tmp/layers/src/core/optim.h"
layers=$(layer_check "$tmp/layers")
t "the layer check finds an include that runs up, one its row lacks and a loop ($(echo "$layers" | wc -l) lines)" \
  'echo "$layers" | grep -q "^src/core/rng.c -> cmd/cli.h: runs up" && echo "$layers" | grep -q "^src/viz/confusion.c -> dist/dist.h: .* not in the row of src/viz" &&
   echo "$layers" | grep -q "a loop of includes: core/optim -> core/rng -> core/optim\|a loop of includes: core/rng -> core/optim -> core/rng"'
rm -rf "$tmp/layers"
# Code and tests cite the project's own docs (docs/design.md, "Rules"), by file and often by section:
# every docs/<name>.md named in src/, tests/, tools/ and the Makefile exists, every section named
# beside it ('docs/interface.md, "Seeds"' or '(docs/data.md, "Run folders")') is one of its headings, bold
# labels or list labels (or begins one), and no comment cites a document outside the repository (the
# interface contract was once cited by section number). A section renamed in a doc left its citations
# pointing nowhere, and no test said so.
# cite_check ROOT: one line per citation that points nowhere.
cite_check() {
  /usr/bin/python3 - "$1" <<'PY'
import glob, os, re, sys
root = sys.argv[1]
def norm(s): return re.sub(r"\s+", " ", s).strip().lower()
def titles(t):   # headings and bold labels, without backticks and a closing period
    found = re.findall(r"^#+ +(.+)$", t, re.M) + re.findall(r"\*\*([^*]+)\*\*", t) + re.findall(r"^ *- ([A-Z][^:.\n]{0,60})[:.]", t, re.M)
    return [norm(re.sub(r"[`]", "", x).rstrip(".:")) for x in found]
docs = {os.path.relpath(p, root): titles(open(p, encoding="utf-8").read()) for p in glob.glob(os.path.join(root, "docs/*.md"))}
files = [p for pat in ("src/**/*.[ch]", "tests/*.[ch]", "tests/*.sh", "tests/fuzz/*.[ch]", "tools/*") for p in glob.glob(os.path.join(root, pat), recursive=True)]
for p in sorted(files + [os.path.join(root, "Makefile")]):
    if not os.path.isfile(p): continue
    rel = os.path.relpath(p, root)
    if rel == "tests/cli_usage.sh": continue   # this check's own examples
    text = open(p, encoding="utf-8", errors="replace").read()
    if rel.startswith("src/") and re.search(r"CONTRACT|contract section", text): print("%s: cites the interface contract, not docs/" % rel)
    text = re.sub(r"\n\s*(//|#|\*)?\s*", " ", text)   # comments continued on the next line
    for m in re.finditer(r"(docs/[a-z_]+\.md)(?:,? \(?\"([A-Z`][^\"$|<>]{2,80})\")?", text):
        doc, section = m.group(1), m.group(2)
        if doc not in docs: print("%s: %s does not exist" % (rel, doc))
        elif section and not any(x == norm(section.rstrip(".")) or re.match(re.escape(norm(section.rstrip("."))) + r"\W", x) for x in docs[doc]): print("%s: %s has no \"%s\"" % (rel, doc, section))
PY
}
cites=$(cite_check "$VITMAE_ROOT")
t "every docs/*.md and section that code, tests and tools cite exists ($(echo "$cites" | head -n 3))" '[ -z "$cites" ]'
cites=$( (export LC_ALL=C PYTHONUTF8=0; cite_check "$VITMAE_ROOT") 2>&1)   # the docs read as UTF-8 here too
t "... also in an ASCII locale ($(echo "$cites" | tail -n 1))" '[ -z "$cites" ]'
mkdir -p "$tmp/cites/docs" "$tmp/cites/src"
cp "$VITMAE_ROOT"/docs/*.md "$tmp/cites/docs/" && : > "$tmp/cites/Makefile"
printf '// (docs/interface.md, "Seeds"), docs/design.md, "No Such Section"; docs/nothing.md\n' > "$tmp/cites/src/a.c"
cites=$(cite_check "$tmp/cites")
t "the citation check finds a missing section and a missing doc, not a present one ($(echo "$cites" | tr "\n" " "))" \
  '[ "$cites" = "src/a.c: docs/design.md has no \"No Such Section\"
src/a.c: docs/nothing.md does not exist" ]'
rm -rf "$tmp/cites"
# A fuzz replay (tests/test_fuzz_<name>.c) includes tests/fuzz/fuzz_<name>.c and tests/fuzz/replay.h: the
# Makefile rebuilds it when either is newer (make -q -W: as if it were; nothing is built). It did not, so
# `make test` replayed a target as it was before its last change.
stale=""
for f in "$VITMAE_ROOT"/tests/fuzz/fuzz_*.c; do
  n=$(basename "$f" .c); n=${n#fuzz_}
  for dep in "tests/fuzz/fuzz_$n.c" tests/fuzz/replay.h; do
    make -C "$VITMAE_ROOT" -q -W "$dep" "build/tests/test_fuzz_$n" > /dev/null 2>&1 && stale="$stale test_fuzz_$n<-$dep"
  done
done
t "every fuzz replay is rebuilt when its target or replay.h changes (not:$stale)" '[ -z "$stale" ]'
# `make fuzz` links its targets with what the Makefile's fuzz rule gives (make -n -B: the commands, none
# run): without -fopenmp, the OpenMP runtime's functions the kernels call must come from a library it
# names (no target linked: "undefined reference to omp_get_thread_num"). Where clang is installed, a
# program calling them is linked with the rule's libraries.
if command -v clang > /dev/null 2>&1; then
  link=$(make -C "$VITMAE_ROOT" -n -B build/fuzz/fuzz_cli 2>/dev/null | grep -- '-fsanitize=fuzzer ' | tail -n 1)
  libs=${link#*libvitmae.a}; libs=${libs%% -o *}
  printf '#include <omp.h>\nint main(void) { return omp_get_thread_num() + (omp_get_wtime() < 0); }\n' > "$tmp/omp.c"
  clang "$tmp/omp.c" $libs -o "$tmp/omp" > "$tmp/omp.err" 2>&1; rc=$?
  t "the fuzz targets' libraries answer the OpenMP runtime's calls (rc $rc: $(grep -m 1 -o 'undefined reference to [^ ]*' "$tmp/omp.err"))" \
    '[ -n "$link" ] && [ $rc -eq 0 ] && "$tmp/omp"'
fi
# `make fuzz` stopped at the first target that crashed: the targets after it never ran, and the run named
# one crash file at most. Its loop (make -n: printed, nothing built) run over stand-in targets, the first
# crashing with a crash file (said as libFuzzer says it, after the artifact prefix on the same line), the
# last failing without one: every target runs, then the run fails
# naming each that crashed and its crash file (or its log).
mkdir -p "$tmp/fz/build/fuzz"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -n -C "$VITMAE_ROOT" fuzz FUZZ_TARGETS="mask image cli" FUZZ_SECONDS=1 2>/dev/null |
  awk 'on { print } on && !/\\$/ { exit } /^mkdir -p build\/fuzz\/artifacts$/ { on = 1 }' > "$tmp/fz/recipe"
printf '#!/bin/sh\necho "artifact_prefix='"'"'build/fuzz/artifacts/mask-'"'"'; Test unit written to build/fuzz/artifacts/mask-crash-0a1b"\nexit 1\n' > "$tmp/fz/build/fuzz/fuzz_mask"
printf '#!/bin/sh\necho "#9 DONE"\ntouch ran-image\n' > "$tmp/fz/build/fuzz/fuzz_image"
printf '#!/bin/sh\necho "==1== ERROR: libFuzzer: out-of-memory"\nexit 1\n' > "$tmp/fz/build/fuzz/fuzz_cli"
chmod +x "$tmp/fz/build/fuzz/fuzz_mask" "$tmp/fz/build/fuzz/fuzz_image" "$tmp/fz/build/fuzz/fuzz_cli"
(cd "$tmp/fz" && sh recipe) > "$tmp/fz/out" 2>&1; rc=$?
t "make fuzz: every target runs after one crashed, then fails naming each and its crash file (rc $rc: $(tail -n 3 "$tmp/fz/out" | tr '\n' '|'))" \
  '[ $rc -ne 0 ] && [ -e "$tmp/fz/ran-image" ] && grep -qx "make fuzz: these targets crashed:" "$tmp/fz/out" &&
   grep -qx "  mask: build/fuzz/artifacts/mask-crash-0a1b" "$tmp/fz/out" &&
   grep -qx "  cli: no crash file (see build/fuzz/cli.log)" "$tmp/fz/out" && ! grep -q "^  image:" "$tmp/fz/out"'
# docs/testing.md's table names every test program and script (tests/test_*.c, tests/cli_*.sh; the
# fuzz replays as `test_fuzz_*`).
awk '/^\| test \| what it checks \|/ { on = 1 } on && !/^\|/ { exit } on { print $0 }' "$VITMAE_ROOT/docs/testing.md" |
  cut -d'|' -f2 > "$tmp/tested"
untabled=$(for f in "$VITMAE_ROOT"/tests/test_*.c "$VITMAE_ROOT"/tests/cli_*.sh; do
  n=$(basename "$f"); n=${n%.*}; case $n in test_fuzz_*) n='test_fuzz_\*' ;; esac
  grep -q "\`$n\`" "$tmp/tested" || echo "$n"; done)
t "every test is in docs/testing.md's table (missing: $(echo $untabled))" '[ -s "$tmp/tested" ] && [ -z "$untabled" ]'

# The same thing said the same way by every command: a missing required flag or INPUT points to the
# command's --help (reconstruct, eval, classify and probe did not; "no INPUT" had three wordings), and
# a checkpoint that cannot be read is named first, "vitmae: PATH: why", as reconstruct, eval, classify,
# info, train and finetune say it (embed, probe and attention put "embed: " before the file).
"$VITMAE_TOOLS/synth" "$tmp/imgs" --count 2 --size 8 --classes 2 > /dev/null || fail=1
# args_of CMD: what CMD needs besides --ckpt (one image folder).
args_of() {
  case $1 in
    eval) echo "--data $tmp/imgs" ;; probe) echo "--train $tmp/imgs --test $tmp/imgs" ;;
    embed) echo "--out $tmp/o.npy $tmp/imgs" ;; *) echo "$tmp/imgs" ;;
  esac
}
for cmd in reconstruct eval classify probe embed attention; do
  "$VITMAE" $cmd $(args_of $cmd) 2>"$tmp/err" >/dev/null; rc=$?
  t "$cmd without --ckpt: exit 2, one line pointing to its --help ($(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $cmd: --ckpt FILE|RUN is required (see vitmae $cmd --help)" ]'
  "$VITMAE" $cmd --ckpt "$tmp/none.safetensors" $(args_of $cmd) 2>"$tmp/err" >/dev/null; rc=$?
  t "$cmd --ckpt of a missing file: exit 1, the file named first ($(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/none.safetensors: No such file or directory" ]'
done
# probe --pixels takes its view from --ckpt (a file or a run folder) or --img: neither given is said so.
"$VITMAE" probe --pixels $(args_of probe) 2>"$tmp/err" >/dev/null; rc=$?
t "probe --pixels without --ckpt or --img: exit 2, both named ($(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: probe: --pixels needs --ckpt FILE|RUN or --img S for the view size" ]'
# A damaged checkpoint (a changed data byte: crc32 mismatch; cut short: truncated data) is refused by
# every command that reads one with one line naming the file and the problem, exit 1, nothing written
# (issue 3; the reader is shared, the commands came later). Damage is said before a file of the wrong
# kind is refused: a damaged classifier given to finetune --ckpt was refused as "a fine-tuned
# classifier" (exit 2), and a damaged pretraining checkpoint given to finetune --resume as "a
# pretraining checkpoint", before their crc32 was checked (the -clf cases: the classifier's file).
"$VITMAE_TOOLS/hostile" ckpt "$tmp/dm.safetensors" 8 4 && "$VITMAE_TOOLS/hostile" clf "$tmp/dc.safetensors" 8 4 || fail=1
for k in m c; do
  size=$(wc -c < "$tmp/d$k.safetensors")
  cp "$tmp/d$k.safetensors" "$tmp/d$k-flip.safetensors"
  printf 'XXXX' | dd of="$tmp/d$k-flip.safetensors" bs=1 seek=$((size - 4)) conv=notrunc 2>/dev/null
  head -c $((size - 4)) "$tmp/d$k.safetensors" > "$tmp/d$k-cut.safetensors"
done
for damage in flip:"crc32 mismatch (file damaged)" cut:"truncated data"; do
  kind=${damage%%:*}; why=${damage#*:}
  for cmd in info reconstruct eval classify probe embed attention finetune finetune-clf finetune-resume \
             finetune-resume-clf train-init train-init-clf train-resume train-resume-clf; do
    ck="$tmp/dm-$kind.safetensors"; case $cmd in classify|*-clf) ck="$tmp/dc-$kind.safetensors" ;; esac
    rm -rf "$tmp/out" "$tmp/o.npy" "$tmp/o.txt"
    case $cmd in
      info) set -- info "$ck" ;;
      finetune|finetune-clf) set -- finetune --ckpt "$ck" --data "$tmp/imgs" --out "$tmp/out" ;;
      finetune-resume*) set -- finetune --resume "$ck" --out "$tmp/out" ;;
      train-init*) set -- train --init "$ck" --data "$tmp/imgs" --out "$tmp/out" ;;
      train-resume*) set -- train --resume "$ck" --out "$tmp/out" ;;
      reconstruct|attention) set -- $cmd --ckpt "$ck" --out "$tmp/out" "$tmp/imgs" ;;
      *) set -- $cmd --ckpt "$ck" $(args_of $cmd) ;;
    esac
    "$VITMAE" "$@" 2>"$tmp/err" >/dev/null; rc=$?
    t "$cmd of a checkpoint ($kind): exit 1, one line naming it ($rc: $(head -c 160 "$tmp/err"))" \
      '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -qF "vitmae: $ck: $why" "$tmp/err" &&
       [ ! -e "$tmp/out" ] && [ ! -e "$tmp/o.npy" ]'
  done
done
# A sound checkpoint of the wrong kind for the command is a bad file for it, exit 1, but for finetune
# --ckpt of a classifier, exit 2: the flag is the mistake (docs/interface.md, "Exit status"). One line
# naming the file and why, nothing written; the table holds every command that refuses a kind.
enc="$VITMAE_ROOT/tests/fixtures/torch_small_encoder.safetensors"
while IFS='|' read -r what want ck why; do
  case $what in
    classify) set -- classify --ckpt "$ck" "$tmp/imgs" ;;
    reconstruct*) set -- reconstruct --ckpt "$ck" --out "$tmp/out" "$tmp/imgs" ;;
    eval*) set -- eval --ckpt "$ck" --data "$tmp/imgs" ;;
    finetune-ckpt) set -- finetune --ckpt "$ck" --data "$tmp/imgs" --out "$tmp/out" ;;
    finetune-resume) set -- finetune --resume "$ck" --out "$tmp/out" ;;
    train-init*) set -- train --init "$ck" --data "$tmp/imgs" --out "$tmp/out" ;;
    train-resume) set -- train --resume "$ck" --out "$tmp/out" ;;
  esac
  rm -rf "$tmp/out"
  "$VITMAE" "$@" 2>"$tmp/err" >/dev/null; rc=$?
  t "$what of a checkpoint of the wrong kind: exit $want, one line ($rc: $(head -c 200 "$tmp/err"))" \
    '[ $rc -eq $want ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -qF "vitmae: $ck: $why" "$tmp/err" && [ ! -e "$tmp/out" ]'
done <<EOF2
classify|1|$tmp/dm.safetensors|not a classifier checkpoint
reconstruct|1|$tmp/dc.safetensors|a fine-tuned classifier's checkpoint (no decoder tensors)
reconstruct-encoder-only|1|$enc|encoder-only checkpoint (no decoder tensors)
eval|1|$tmp/dc.safetensors|a fine-tuned classifier's checkpoint (no decoder tensors)
eval-encoder-only|1|$enc|encoder-only checkpoint (no decoder tensors)
finetune-ckpt|2|$tmp/dc.safetensors|is a fine-tuned classifier
finetune-resume|1|$tmp/dm.safetensors|cannot resume: a pretraining checkpoint
train-init|1|$tmp/dc.safetensors|a fine-tuned classifier's checkpoint, which has no decoder weights; --init needs a full MAE checkpoint
train-init-encoder-only|1|$enc|has no decoder weights
train-resume|1|$tmp/dc.safetensors|cannot resume: a fine-tuned classifier's checkpoint
EOF2
# finetune --resume of a run folder holding a pretraining checkpoint names the folder the user gave as
# the --ckpt to start from (it said `--ckpt FILE`, a placeholder, after a run folder was taken too).
mkdir -p "$tmp/mrun" && cp "$tmp/dm.safetensors" "$tmp/mrun/checkpoint.safetensors" || fail=1
"$VITMAE" finetune --resume "$tmp/mrun" 2>"$tmp/err" >/dev/null; rc=$?
t "finetune --resume of a pretraining run folder: exit 1, --ckpt that folder ($rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/mrun/checkpoint.safetensors: cannot resume: a pretraining checkpoint (start fine-tuning from it with --ckpt $tmp/mrun)" ]'
# A checkpoint of the wrong kind that also holds a NaN is refused for its kind, the first thing the user
# can act on (the header says it; the NaN needs the tensors read): reconstruct, eval and train --init
# and --resume of such a classifier named the NaN, classify and finetune the kind; and reconstruct, eval
# and train --init of such an encoder-only file (no decoder tensors: a kind, docs/interface.md) the NaN.
nan_copy() { python3 - "$1" "$2" <<'PY'
import json, struct, sys, zlib
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); d = bytearray(b[8 + n:])
o = h["blocks.0.attn.qkv.weight"]["data_offsets"][0]; d[o:o + 4] = struct.pack("<f", float("nan"))
h["__metadata__"]["crc32"] = "%08x" % zlib.crc32(bytes(d))
t = json.dumps(h).encode(); t += b" " * (-len(t) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + bytes(d))
PY
}
nan_copy "$tmp/dm.safetensors" "$tmp/nm.safetensors" && nan_copy "$tmp/dc.safetensors" "$tmp/nc.safetensors" &&
  nan_copy "$enc" "$tmp/ne.safetensors" || fail=1
nan="tensor 'blocks.0.attn.qkv.weight' holds NaN or infinite values"
while IFS='|' read -r what want ck why; do
  case $what in
    classify) set -- classify --ckpt "$ck" "$tmp/imgs" ;;
    reconstruct*) set -- reconstruct --ckpt "$ck" --out "$tmp/out" "$tmp/imgs" ;;
    eval*) set -- eval --ckpt "$ck" --data "$tmp/imgs" ;;
    finetune-ckpt*) set -- finetune --ckpt "$ck" --data "$tmp/imgs" --out "$tmp/out" ;;
    finetune-resume) set -- finetune --resume "$ck" --out "$tmp/out" ;;
    train-init*) set -- train --init "$ck" --data "$tmp/imgs" --out "$tmp/out" ;;
    train-resume) set -- train --resume "$ck" --out "$tmp/out" ;;
    embed*) set -- embed --ckpt "$ck" --out "$tmp/o.npy" "$tmp/imgs" ;;
    attention*) set -- attention --ckpt "$ck" --out "$tmp/out" "$tmp/imgs" ;;
    probe*) set -- probe --ckpt "$ck" $(args_of probe) ;;
    info*) set -- info "$ck" ;;
  esac
  rm -rf "$tmp/out" "$tmp/o.npy"
  "$VITMAE" "$@" 2>"$tmp/err" >/dev/null; rc=$?
  t "$what of a checkpoint of the wrong kind holding a NaN: exit $want, the kind's line ($rc: $(head -c 200 "$tmp/err"))" \
    '[ $rc -eq $want ] && [ "$(cat "$tmp/err")" = "vitmae: $ck: $why" ] && [ ! -e "$tmp/out" ] && [ ! -e "$tmp/o.npy" ]'
done <<EOF2
classify|1|$tmp/nm.safetensors|not a classifier checkpoint (no head; fine-tune it first with vitmae finetune)
reconstruct|1|$tmp/nc.safetensors|a fine-tuned classifier's checkpoint (no decoder tensors): reconstruct needs the decoder
eval|1|$tmp/nc.safetensors|a fine-tuned classifier's checkpoint (no decoder tensors): eval needs the decoder
finetune-ckpt|2|$tmp/nc.safetensors|is a fine-tuned classifier without a training state (for inference only: no run to continue); --ckpt takes a pretraining checkpoint
finetune-resume|1|$tmp/nm.safetensors|cannot resume: a pretraining checkpoint (start fine-tuning from it with --ckpt $tmp/nm.safetensors)
train-init|1|$tmp/nc.safetensors|a fine-tuned classifier's checkpoint, which has no decoder weights; --init needs a full MAE checkpoint
train-resume|1|$tmp/nc.safetensors|cannot resume: a fine-tuned classifier's checkpoint without a training state (for inference only)
embed-mae|1|$tmp/nm.safetensors|$nan
embed-clf|1|$tmp/nc.safetensors|$nan
attention-mae|1|$tmp/nm.safetensors|$nan
attention-clf|1|$tmp/nc.safetensors|$nan
probe-mae|1|$tmp/nm.safetensors|$nan
probe-clf|1|$tmp/nc.safetensors|$nan
info-mae|1|$tmp/nm.safetensors|$nan
info-clf|1|$tmp/nc.safetensors|$nan
reconstruct-enc|1|$tmp/ne.safetensors|encoder-only checkpoint (no decoder tensors): reconstruct needs the decoder
eval-enc|1|$tmp/ne.safetensors|encoder-only checkpoint (no decoder tensors): eval needs the decoder
train-init-enc|1|$tmp/ne.safetensors|has no decoder weights; --init needs a full MAE checkpoint
finetune-ckpt-enc|1|$tmp/ne.safetensors|$nan
embed-enc|1|$tmp/ne.safetensors|$nan
info-enc|1|$tmp/ne.safetensors|$nan
EOF2
# ... and damage before the kind: such an encoder-only file cut short or with a byte changed is said to be
# damaged by the commands that refuse its kind (the header alone would say "encoder-only").
size=$(wc -c < "$tmp/ne.safetensors")
cp "$tmp/ne.safetensors" "$tmp/ne-flip.safetensors"
printf 'XXXX' | dd of="$tmp/ne-flip.safetensors" bs=1 seek=$((size - 4)) conv=notrunc 2>/dev/null
head -c $((size - 4)) "$tmp/ne.safetensors" > "$tmp/ne-cut.safetensors"
for damage in flip:"crc32 mismatch (file damaged)" cut:"truncated data"; do
  kind=${damage%%:*}; why=${damage#*:}; ck="$tmp/ne-$kind.safetensors"
  for cmd in reconstruct eval train-init; do
    case $cmd in
      reconstruct) set -- reconstruct --ckpt "$ck" --out "$tmp/out" "$tmp/imgs" ;;
      eval) set -- eval --ckpt "$ck" --data "$tmp/imgs" ;;
      train-init) set -- train --init "$ck" --data "$tmp/imgs" --out "$tmp/out" ;;
    esac
    rm -rf "$tmp/out"
    "$VITMAE" "$@" 2>"$tmp/err" >/dev/null; rc=$?
    t "$cmd of an encoder-only checkpoint holding a NaN ($kind): exit 1, damaged ($rc: $(head -c 160 "$tmp/err"))" \
      '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -qF "vitmae: $ck: $why" "$tmp/err" && [ ! -e "$tmp/out" ]'
  done
done
for cmd in reconstruct classify embed attention; do
  extra=; [ $cmd = embed ] && extra="--out $tmp/o.npy"
  "$VITMAE" $cmd --ckpt "$tmp/none.safetensors" $extra 2>"$tmp/err" >/dev/null; rc=$?
  t "$cmd without INPUT: exit 2, one wording ($(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $cmd: no INPUT: give image files or folders (see vitmae $cmd --help)" ]'
done
# A folder without an image: train's and data's words in every command ("no usable image", "no
# decodable image in this folder" and "no image in this folder" before).
mkdir -p "$tmp/empty"; echo notes > "$tmp/empty/notes.txt"
"$VITMAE_TOOLS/hostile" ckpt "$tmp/m.safetensors" 8 4 && "$VITMAE_TOOLS/hostile" clf "$tmp/c.safetensors" 8 4 || fail=1
# probe's labelled folders too (it said "has no class sub-folders with images", exit 2, of a folder whose
# class folders held only files that do not decode; finetune says data's words).
for cmd in reconstruct eval classify embed attention probe; do
  case $cmd in eval) a="--data $tmp/empty" ;; embed) a="--out $tmp/e.npy $tmp/empty" ;; probe) a="--train $tmp/empty --test $tmp/empty" ;;
    *) a="--out $tmp/o $tmp/empty" ;; esac
  ck="$tmp/m.safetensors"; [ $cmd = classify ] && { ck="$tmp/c.safetensors"; a="$tmp/empty"; }
  "$VITMAE" $cmd --ckpt "$ck" $a 2>"$tmp/err" >/dev/null; rc=$?
  t "$cmd of a folder without an image: exit 1, data's words ($(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/empty: no usable image (0 skipped, 1 ignored)" ]'
done
# An INPUT folder of the commands that take files whose one file does not decode (a text file named
# x.jpg): that file's line alone, exit 1 (docs/interface.md, section 2: each unreadable input is one
# line); attention added "DIR: no usable image (1 skipped, 0 ignored)", a second failure for the
# same file, where reconstruct and classify say the file only.
mkdir -p "$tmp/undec"; echo text > "$tmp/undec/x.jpg"
for cmd in reconstruct attention classify; do
  a="--ckpt $tmp/m.safetensors --out $tmp/undec-$cmd"; [ $cmd = classify ] && a="--ckpt $tmp/c.safetensors"
  "$VITMAE" $cmd $a "$tmp/undec" 2>"$tmp/err" >/dev/null; rc=$?
  t "$cmd of a folder whose one file does not decode: exit 1, the file's line alone ($rc: $(tr '\n' '|' < "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/undec/x.jpg: not a PNG, JPEG or WebP file" ]'
done
# Class folders whose files all fail to decode: the files said, then data's words (probe as finetune,
# and embed, which reads an INPUT folder as a data set: section 2).
mkdir -p "$tmp/broken/a" "$tmp/broken/b"; echo x > "$tmp/broken/a/1.png"; echo y > "$tmp/broken/b/2.png"
for cmd in probe finetune embed; do
  case $cmd in probe) a="--train $tmp/broken --test $tmp/broken" ;; embed) a="--out $tmp/ft.npy $tmp/broken" ;;
    *) a="--data $tmp/broken --out $tmp/ft" ;; esac
  "$VITMAE" $cmd --ckpt "$tmp/m.safetensors" $a 2>"$tmp/err" >/dev/null; rc=$?
  t "$cmd of class folders without a decodable image: exit 1, data's words ($(tail -n 1 "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(tail -n 1 "$tmp/err")" = "vitmae: $tmp/broken: no usable image (2 skipped, 0 ignored)" ] &&
     grep -qx "vitmae: skipped $tmp/broken/a/1.png: not a PNG, JPEG or WebP file" "$tmp/err" && [ ! -e "$tmp/ft" ] && [ ! -e "$tmp/ft.npy" ]'
done
# An --out through a symbolic link to nothing (its target deleted): "LINK: No such file or directory"
# named neither the link nor what is missing. Every command with --out names the link and its target
# in the same words, "CMD --out: LINK: ..." (reconstruct, attention and probe said "cannot create the
# output folder:" before the link, as no other command did),
# exit 1, and makes nothing there (the link itself, and a folder below it).
ln -s "$tmp/gone" "$tmp/dangling"
for out in "$tmp/dangling" "$tmp/dangling/sub"; do
  for cmd in train finetune reconstruct attention probe embed; do
    case $cmd in
      train) set -- train --data "$tmp/imgs" --img 8 --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 \
               --dec-heads 1 --steps 1 --batch 2 --val-frac 0 --out "$out" ;;
      finetune) set -- finetune --ckpt "$tmp/m.safetensors" --data "$tmp/imgs" --steps 1 --out "$out" ;;
      probe) set -- probe --ckpt "$tmp/m.safetensors" --train "$tmp/imgs" --test "$tmp/imgs" --out "$out" ;;
      embed) set -- embed --ckpt "$tmp/m.safetensors" --out "$out/f.npy" "$tmp/imgs" ;;
      *) set -- $cmd --ckpt "$tmp/m.safetensors" --out "$out" "$tmp/imgs" ;;
    esac
    "$VITMAE" "$@" > /dev/null 2> "$tmp/err"; rc=$?
    t "$cmd --out ${out#$tmp/} through a dangling link: exit 1, the link and its target named ($rc: $(cat "$tmp/err"))" \
      '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] &&
       grep -qx "vitmae: $cmd --out: $tmp/dangling: a symbolic link to $tmp/gone, which does not exist" "$tmp/err" &&
       [ ! -e "$tmp/gone" ] && [ -L "$tmp/dangling" ]'
  done
done
# Too few open files (ulimit -n 4: standard input, output, error and one more) said "--out: DIR: cannot
# write in this folder: Too many open files", blaming the folder: every command with --out now names
# the limit reached (io/files.h, file_folder_reason), exit 1, nothing made (embed's folder must exist:
# it stays empty). The streams are opened
# before the limit is set, in the subshell.
for cmd in train finetune reconstruct attention probe embed; do
  out="$tmp/nofiles-$cmd"
  case $cmd in
    train) set -- train --data "$tmp/imgs" --img 8 --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 \
             --dec-heads 1 --steps 1 --batch 2 --val-frac 0 --threads 1 --out "$out" ;;
    finetune) set -- finetune --ckpt "$tmp/m.safetensors" --data "$tmp/imgs" --steps 1 --threads 1 --out "$out" ;;
    probe) set -- probe --ckpt "$tmp/m.safetensors" --train "$tmp/imgs" --test "$tmp/imgs" --threads 1 --out "$out" ;;
    embed) mkdir -p "$out"; set -- embed --ckpt "$tmp/m.safetensors" --threads 1 --out "$out/f.npy" "$tmp/imgs" ;;
    *) set -- $cmd --ckpt "$tmp/m.safetensors" --threads 1 --out "$out" "$tmp/imgs" ;;
  esac
  (ulimit -n 4 && exec "$VITMAE" "$@") > /dev/null 2> "$tmp/err"; rc=$?
  t "$cmd --out under ulimit -n 4: exit 1, the limit named, not the folder ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && if [ $cmd = embed ]; then [ -z "$(ls -A "$out")" ]; else [ ! -e "$out" ]; fi &&
     grep -qx "vitmae: $cmd --out: $out: cannot write in this folder: Too many open files (the limit of open files, ulimit -n 4, is reached)" "$tmp/err"'
  rm -rf "$out"
done
# A hard stack limit far below the 256 KB needed, where a program of the system still starts (/bin/true;
# below some 10-14 KB, with the environment, the loader itself fails): the one line, exit 1 (a SIGSEGV at 12-24 KB:
# main's frame of 10 KB overflowed at 12, and fprintf's own 8 KB buffer for stderr at 16-24).
for kb in 20 24; do
  (ulimit -s $kb && exec /bin/true) 2>/dev/null || { echo "note: /bin/true does not start under ulimit -s $kb here"; continue; }
  (ulimit -s $kb && exec "$VITMAE" --version) > /dev/null 2> "$tmp/err"; rc=$?
  t "a hard stack limit of $kb KB: exit 1, one line ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: the stack size limit is $kb KB (ulimit -s, hard limit $kb KB); vitmae needs at least 256 KB" ]'
done
"$VITMAE" eval --ckpt "$tmp/none.safetensors" 2>"$tmp/err"; rc=$?
t "eval without --data: points to its --help" '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: eval: --data DIR is required (see vitmae eval --help)" ]'
"$VITMAE" embed --ckpt "$tmp/none.safetensors" "$tmp/imgs" 2>"$tmp/err"; rc=$?
t "embed without --out: points to its --help" '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: embed: --out FEATS.npy is required (see vitmae embed --help)" ]'
"$VITMAE" data 2>"$tmp/err"; rc=$?
t "data without DIR: points to its --help" '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: data: missing DIR: give the folder to check (see vitmae data --help)" ]'

# A checkout whose path has a space (`~/My projects/vitmae`): make test's sanitizer pass hands
# LeakSanitizer its suppressions file by path in LSAN_OPTIONS; unquoted, the shell split the line at
# the space and the pass stopped with "ace/main/tests/lsan.supp:print_suppressions=0: not found". The
# recipe `make -n` prints for such a CURDIR, run with printenv in place of the tests, must give the
# whole path in the quotes the sanitizers' option parser reads.
space="$tmp/a b"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -n -C "$VITMAE_ROOT" test-san CURDIR="$space" 2>"$tmp/err" |
  awk '/^ASAN_OPTIONS=/ { on = 1 } on { print } on && /tests\/run\.sh/ { exit }' |
  sed 's|sh tests/run\.sh .*$|printenv LSAN_OPTIONS|' > "$tmp/recipe"
got=$(sh "$tmp/recipe" 2>&1)
t "make test-san in a path with a space: LSAN_OPTIONS whole (got: $got)" \
  '[ "$got" = "suppressions=\"$space/tests/lsan.supp\":print_suppressions=0" ]'
# What make test runs (docs/testing.md, "Running"): the optimised pass over every test, then the
# sanitizer pass over every test program and the command-line tests the docs name there (in
# backquotes), no more and no fewer; make test-san and make test-full run every test under the
# sanitizers. A SAN_CLI entry that is not there stops the pass with its name (tests/run.sh would pass
# over it, the sanitizers left off a test with nothing said).
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -n -C "$VITMAE_ROOT" test 2>"$tmp/err" > "$tmp/make_test"
grep 'sh tests/run\.sh ' "$tmp/make_test" > "$tmp/passes"
fast_pass=$(grep -c '^sh tests/run\.sh build/tests \./vitmae build/tools$' "$tmp/passes")
ran=$(grep 'VITMAE_SANITIZED=1 sh tests/run\.sh build/san/tests build/san/vitmae build/tools ' "$tmp/passes" |
  sed 's/.*build\/tools //' | tr ' ' '\n' | sed 's|.*/||' | sort)
want_cli=$(awk '/^The sanitizer pass of `make test` runs/,/^$/' "$VITMAE_ROOT/docs/testing.md" | grep -o '`cli_[a-z_]*\.sh`' | tr -d '`' | sort -u)
want=$( (cd "$VITMAE_ROOT/tests" && ls test_*.c | sed 's/\.c$//'; printf '%s\n' "$want_cli") | sort)
t "make test: the optimised pass over every test, then the sanitizers over every test program and docs/testing.md's $(printf '%s\n' "$want_cli" | grep -c .) command-line tests (got $(wc -l < "$tmp/passes") passes: $(printf '%s' "$ran" | grep cli_ | tr '\n' ' '))" \
  '[ "$(wc -l < "$tmp/passes")" -eq 2 ] && [ "$fast_pass" -eq 1 ] && [ -n "$want_cli" ] && [ "$ran" = "$want" ]'
# Both builds come first, two compilers at once (docs/testing.md, "Running"), unless make was given a -j.
t "make test builds both trees two compilers at once (got: $(grep 'build-fast build-san' "$tmp/make_test"))" \
  'grep -q "^make --no-print-directory WERROR=1 -j2 build-fast build-san$" "$tmp/make_test"'
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -n -j3 -C "$VITMAE_ROOT" test 2>/dev/null | grep 'build-fast build-san' > "$tmp/make_j3"
t "make -j3 test keeps the caller's -j (got: $(cat "$tmp/make_j3"))" \
  '[ "$(cat "$tmp/make_j3")" = "make --no-print-directory WERROR=1  build-fast build-san" ]'
# Its last line says how much of it ran under the sanitizers, so that the second pass's "40 passed"
# is not read as all of them.
n_cli=$(ls "$VITMAE_ROOT"/tests/cli_*.sh | wc -l)
n_san=$(printf '%s\n' "$want_cli" | grep -c .)
said=$(tail -n 1 "$tmp/make_test")
t "make test ends saying the sanitizers ran over $n_san of the $n_cli command-line tests (got: $said)" \
  'printf "%s" "$said" | grep -qF "make test: passed; the sanitizers ran over the test programs and $n_san of the $n_cli command-line tests (make test-san runs every test under them"'
for target in test-san test-full; do
  got=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -n -C "$VITMAE_ROOT" $target 2>/dev/null | grep -c 'VITMAE_SANITIZED=1 sh tests/run\.sh build/san/tests build/san/vitmae build/tools$')
  t "make $target: every test under the sanitizers ($got)" '[ "$got" -eq 1 ]'
done
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -n -C "$VITMAE_ROOT" test-san-part SAN_CLI="tests/cli_fault.sh tests/cli_gone.sh" > /dev/null 2>"$tmp/err"; rc=$?
t "make test's sanitizer pass, SAN_CLI naming a test that is not there: stops, naming it ($rc: $(cat "$tmp/err"))" \
  '[ $rc -ne 0 ] && grep -q "SAN_CLI names a test that is not there: tests/cli_gone\.sh\.  Stop\.$" "$tmp/err"'
# A value left out before another flag: "--out --force" took "--force" as the folder's name (a folder
# named --force made, nothing forced). One line, exit 2, nothing made; "--out=--force" still names one.
"$VITMAE" attention --ckpt "$VITMAE_ROOT/tests/fixtures/attn_model.safetensors" --out --force "$VITMAE_ROOT/tests/fixtures/attn_input.png" > /dev/null 2> "$tmp/err"; rc=$?
t "attention --out --force IMAGE: exit 2, one line, no folder named --force ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "^vitmae: attention: flag --out needs a value (the next argument, --force, is a flag; a path so named is written --out=--force or --out ./--force)$" "$tmp/err" && [ ! -e "$tmp/--force" ]'
"$VITMAE" data --json --max-pixels --json "$tmp" > /dev/null 2> "$tmp/err"; rc=$?
t "data --max-pixels --json: exit 2, the flag named ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: data: flag --max-pixels needs a value (the next argument, --json, is a flag)$" "$tmp/err"'
# A word of two dashes that is none of the command's flags is taken for a flag too, as argparse takes it:
# `--out --overwrit` (a misspelt --overwrite) made a run folder named --overwrit and trained into it, and
# `--out --` one named --. The nearest flag offered; `--out=--overwrit` still names such a folder.
(cd "$tmp" && "$VITMAE" train --data "$tmp" --steps 1 --out --overwrit > /dev/null 2> "$tmp/err"); rc=$?
(cd "$tmp" && "$VITMAE" reconstruct --ckpt "$VITMAE_ROOT/tests/fixtures/attn_model.safetensors" --out --json "$VITMAE_ROOT/tests/fixtures/attn_input.png" > /dev/null 2> "$tmp/err2"); rc2=$?
(cd "$tmp" && "$VITMAE" train --data "$tmp" --steps 1 --out -- > /dev/null 2> "$tmp/err3"); rc3=$?
t "train --out --overwrit, reconstruct --out --json, train --out --: exit 2, one line each, no folder ($rc $rc2 $rc3: $(cat "$tmp/err" "$tmp/err2" "$tmp/err3" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ $rc2 -eq 2 ] && [ $rc3 -eq 2 ] && [ ! -e "$tmp/--overwrit" ] && [ ! -e "$tmp/--json" ] && [ ! -e "$tmp/--" ] &&
   [ "$(cat "$tmp/err")" = "vitmae: train: flag --out needs a value (the next argument, --overwrit, looks like a flag (did you mean --overwrite?); a path so named is written --out=--overwrit or --out ./--overwrit)" ] &&
   [ "$(cat "$tmp/err2")" = "vitmae: reconstruct: flag --out needs a value (the next argument, --json, looks like a flag; a path so named is written --out=--json or --out ./--json)" ] &&
   [ "$(cat "$tmp/err3")" = "vitmae: train: flag --out needs a value (the next argument, --, ends the flags; a path so named is written --out=-- or --out ./--)" ]'
# The hint never names the flag being filled: `--data --dat` offered --data, its own flag; --out
# --dat offers --data as before.
(cd "$tmp" && "$VITMAE" train --data --dat --steps 1 > /dev/null 2> "$tmp/err"); rc=$?
(cd "$tmp" && "$VITMAE" train --out --dat --steps 1 > /dev/null 2> "$tmp/err2"); rc2=$?
t "train --data --dat: no hint of --data; --out --dat: --data offered ($rc $rc2: $(cat "$tmp/err" "$tmp/err2" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ $rc2 -eq 2 ] &&
   [ "$(cat "$tmp/err")" = "vitmae: train: flag --data needs a value (the next argument, --dat, looks like a flag; a path so named is written --data=--dat or --data ./--dat)" ] &&
   [ "$(cat "$tmp/err2")" = "vitmae: train: flag --out needs a value (the next argument, --dat, looks like a flag (did you mean --data?); a path so named is written --out=--dat or --out ./--dat)" ]'
# A sign on the index flags as on every integer flag: embed's --layer refused "-0", which attention's
# took, and attention's --layer/--head/--query refused "+1", which every numeric flag takes. The same
# blocks as unsigned: the features equal.
am="$VITMAE_ROOT/tests/fixtures/attn_model.safetensors"; ai="$VITMAE_ROOT/tests/fixtures/attn_input.png"
"$VITMAE" embed --ckpt "$am" --out "$tmp/l0.npy" --layer -0 "$ai" > /dev/null 2> "$tmp/err"; r1=$?
"$VITMAE" embed --ckpt "$am" --out "$tmp/l0b.npy" --layer 0 "$ai" > /dev/null 2>&1
"$VITMAE" embed --ckpt "$am" --out "$tmp/l1.npy" --layer +1 "$ai" > /dev/null 2>> "$tmp/err"; r2=$?
"$VITMAE" embed --ckpt "$am" --out "$tmp/l1b.npy" --layer 1 "$ai" > /dev/null 2>&1
"$VITMAE" attention --ckpt "$am" --out "$tmp/sg" --mode patch --layer +1 --head +0 --query +1,-0 "$ai" > /dev/null 2>> "$tmp/err"; r3=$?
t "--layer -0 and +1 (embed), --layer +1 --head +0 --query +1,-0 (attention): taken as 0 and 1 ($r1 $r2 $r3: $(cat "$tmp/err"))" \
  '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ $r3 -eq 0 ] && cmp -s "$tmp/l0.npy" "$tmp/l0b.npy" && cmp -s "$tmp/l1.npy" "$tmp/l1b.npy" &&
   [ -s "$tmp/sg/attn_input/patch01x00-layer01-head00.png" ]'
# One dash: -h (every command's) and a word near a flag (-force, -overwrite) are refused as a positional
# word of theirs is; they were taken as folders named -h and -overwrite. One near no flag stays a name.
(cd "$tmp" && "$VITMAE" reconstruct --ckpt "$am" --out -h "$ai" > /dev/null 2> "$tmp/err"); r1=$?
(cd "$tmp" && "$VITMAE" train --data "$tmp" --steps 1 --out -overwrite > /dev/null 2> "$tmp/err2"); r2=$?
t "--out -h, --out -overwrite: exit 2, one line, no folder ($r1 $r2: $(cat "$tmp/err" "$tmp/err2" | tr "\n" "|"))" \
  '[ $r1 -eq 2 ] && [ $r2 -eq 2 ] && [ ! -e "$tmp/-h" ] && [ ! -e "$tmp/-overwrite" ] &&
   [ "$(cat "$tmp/err")" = "vitmae: reconstruct: flag --out needs a value (the next argument, -h, is a flag; a path so named is written --out=-h or --out ./-h)" ] &&
   [ "$(cat "$tmp/err2")" = "vitmae: train: flag --out needs a value (the next argument, -overwrite, looks like a flag (did you mean --overwrite?); a path so named is written --out=-overwrite or --out ./-overwrite)" ]'
# ... and that next word echoed as any other word of the command line (docs/interface.md, section 1):
# `--out --steps=<300 bytes>` quoted all 300 bytes three times; now its first 96 and "...", the hint NAME.
long=$(printf 'x%.0s' $(seq 300))
# (Whether a file so named was written needs no check: 308 bytes are over a file name's 255, so none can be.)
"$VITMAE" train --data "$tmp" --out --steps=$long > /dev/null 2> "$tmp/err"; rc=$?
t "train --out --steps=<300 bytes>: exit 2, the word clipped ($rc: $(head -c 400 "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: train: flag --out needs a value (the next argument, --steps=$(printf %.88s "$long")..., is a flag; a path so named is written --out=NAME or --out ./NAME)" ]'

# The version (docs/interface.md, section 1, "Version"): `vitmae --version` and `vitmae version` print it
# and the vector paths, exit 0; it was "unknown command". Not a flag of the commands (as git's), and
# `version` takes no arguments.
"$VITMAE" --version > "$tmp/ver" 2> "$tmp/err"; rc=$?
t "--version: exit 0, two lines, nothing on stderr ($rc: $(head -c 300 "$tmp/ver"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/ver")" -eq 2 ] && [ ! -s "$tmp/err" ]'
t "--version: 'vitmae VERSION' first ($(head -n 1 "$tmp/ver"))" 'head -n 1 "$tmp/ver" | grep -Eq "^vitmae [A-Za-z0-9._+-]+$"'
t "--version: the paths built in and the one this CPU runs, as bench names it" \
  'sed -n 2p "$tmp/ver" | grep -Eq "^matrix products: avx512 avx2 portable ref built in, this CPU runs (avx512|avx2|portable); other code built for "'
VITMAE_GEMM=ref "$VITMAE" --version > "$tmp/ver-ref"
t "--version: VITMAE_GEMM=ref is the path it names" 'grep -q "this CPU runs ref;" "$tmp/ver-ref"'
[ -s "$VITMAE_ROOT/build/version.txt" ] && \
  t "--version: the version make built in (build/version.txt: $(cat "$VITMAE_ROOT/build/version.txt"))" \
    '[ "$(head -n 1 "$tmp/ver")" = "vitmae $(cat "$VITMAE_ROOT/build/version.txt")" ]'
"$VITMAE" version > "$tmp/ver2"; rc=$?
t "version: exit 0, what --version prints" '[ $rc -eq 0 ] && cmp -s "$tmp/ver" "$tmp/ver2"'
"$VITMAE" version --json > /dev/null 2> "$tmp/err"; rc=$?
t "version with an argument: exit 2, one line" '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: version: takes no arguments" ]'
"$VITMAE" train --version > /dev/null 2> "$tmp/err"; rc=$?
t "train --version: an unknown flag of train, exit 2" '[ $rc -eq 2 ] && grep -q "^vitmae: train: unknown flag .--version." "$tmp/err"'
# A folder given as an INPUT to a command that reads --data DIR (`vitmae train photos/`, as reconstruct and
# embed take their images): the line says where the folder goes; bench, which takes none, says no more.
for c in train finetune eval; do
  "$VITMAE" $c photos > /dev/null 2> "$tmp/err"; rc=$?
  t "$c photos: exit 2, --data named ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $c: unexpected argument '"'"'photos'"'"' (the folder of images goes with --data DIR)" ]'
done
"$VITMAE" probe photos > /dev/null 2> "$tmp/err"; rc=$?
t "probe photos: exit 2, --train and --test named ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: probe: unexpected argument '"'"'photos'"'"' (the folders of images go with --train DIR and --test DIR)" ]'
"$VITMAE" bench photos > /dev/null 2> "$tmp/err"; rc=$?
t "bench photos: exit 2, no --data named ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: bench: unexpected argument '"'"'photos'"'"'" ]'
t "--help names --version" '"$VITMAE" --help | grep -q -- "--version"'
"$VITMAE" --version > /dev/full 2> "$tmp/err"; rc=$?
t "--version > /dev/full: exit 1, said" '[ $rc -eq 1 ] && grep -q "^vitmae: version: standard output: " "$tmp/err"'
# --help's list the same: it said "vitmae: standard output: ...", no command named (docs/interface.md, section 1).
for h in --help -h help; do
  "$VITMAE" $h > /dev/full 2> "$tmp/err"; rc=$?
  t "$h > /dev/full: exit 1, said as help's ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: help: standard output: No space left on device" ]'
done

# The Makefile's version: `git describe --always --dirty` of a git checkout, else its VERSION; a commit or
# an edit rebuilds core/version.o, and a make with nothing changed rebuilds nothing. Checked on a copy of
# the sources in a git repository of its own, building that one object.
ver=$tmp/vercopy
mkdir -p "$ver/tools" && cp -R "$VITMAE_ROOT/src" "$VITMAE_ROOT/Makefile" "$ver/" && cp "$VITMAE_ROOT/tools/install-deps.sh" "$ver/tools/"
mkdir -p "$ver/build" && touch "$ver/build/.deps-ok"   # what `make` installs is there: the suite runs on it
vmake() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ver" "$@" build/obj/core/version.o > /dev/null 2>&1; }
built_version() { grep -ao "$1" "$ver/build/obj/core/version.o" | head -n 1; }
(cd "$ver" && git init -q . && git add -A && git -c user.name=t -c user.email=t@t commit -q -m one) 2>/dev/null
head=$(git -C "$ver" rev-parse --short HEAD 2>/dev/null)
if [ -n "$head" ]; then
  vmake; rc=$?
  t "make in a git checkout: version.o holds git describe ($head)" '[ $rc -eq 0 ] && [ "$(built_version "$head[a-z-]*")" = "$head" ]'
  stamp=$(stat -c %Y.%y "$ver/build/obj/core/version.o"); sleep 1; vmake
  t "make again, nothing changed: version.o not rebuilt" '[ "$(stat -c %Y.%y "$ver/build/obj/core/version.o")" = "$stamp" ]'
  # ... and make says so: -q exits 0 and -n lists nothing (the version file's rule ran at every make, so -q
  # said out of date and -n listed the object, the library, vitmae and every test to be built again).
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -q -C "$ver" build/obj/core/version.o > /dev/null 2>&1; rc=$?
  qn=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -n -C "$ver" build/obj/core/version.o 2>&1)
  t "make -q, nothing changed: up to date, exit 0 ($rc); make -n lists nothing ($(printf '%s' "$qn" | head -c 200))" \
    '[ $rc -eq 0 ] && [ -z "$qn" ]'
  echo "# an edit" >> "$ver/Makefile"; vmake
  t "make after an edit of a tracked file: version.o holds $head-dirty" '[ "$(built_version "$head-dirty")" = "$head-dirty" ]'
  (cd "$ver" && git -c user.name=t -c user.email=t@t commit -q -am two); head2=$(git -C "$ver" rev-parse --short HEAD); vmake
  t "make after a commit: version.o holds the new commit $head2" '[ "$(built_version "$head2[a-z-]*")" = "$head2" ]'
  (cd "$ver" && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m three)
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -q -C "$ver" build/obj/core/version.o > /dev/null 2>&1; rc=$?
  t "make -q after another commit: out of date, exit 1 ($rc)" '[ $rc -eq 1 ]'
  rm -rf "$ver/.git"; vmake VERSION=7.7.7
  t "make outside git: the Makefile's VERSION (make VERSION=7.7.7)" '[ "$(built_version "7\.7\.7")" = "7.7.7" ]'
else
  echo "FAILED: git could not make a repository in $ver (git is needed for the version check)"; fail=1
fi

# make install / uninstall (README, docs/interface.md section 1, "Install"): the binary to
# $(DESTDIR)$(PREFIX)/bin, nothing else; -o vitmae installs the binary as built, without rebuilding it.
stage=$tmp/stage
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -o vitmae -C "$VITMAE_ROOT" install DESTDIR="$stage" PREFIX=/opt/v \
  > /dev/null 2> "$tmp/err"; rc=$?
t "make install DESTDIR PREFIX: exit 0, the binary in DESTDIR/PREFIX/bin, executable ($rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ -x "$stage/opt/v/bin/vitmae" ] && cmp -s "$stage/opt/v/bin/vitmae" "$VITMAE_ROOT/vitmae"'
t "make install: nothing else installed ($(cd "$stage" && find . -type f | tr "\n" " "))" \
  '[ "$(cd "$stage" && find . -type f)" = "./opt/v/bin/vitmae" ]'
# The installed copy reads nothing of the checkout: with the checkout hidden (a mount namespace, as
# root), from /, it trains, and info reads what it wrote; as a non-root user the checkout stays visible.
mkdir -p "$stage/imgs/a" "$stage/imgs/b" && cp "$VITMAE_ROOT/tests/fixtures/attn_input.png" "$stage/imgs/a/x.png" &&
  cp "$VITMAE_ROOT/tests/fixtures/attn_input.png" "$stage/imgs/b/y.png"
installed_run='cd / && "$0/opt/v/bin/vitmae" train --data "$0/imgs" --img 16 --patch 8 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 --dec-heads 1 --steps 2 --batch 2 --val-frac 0 --threads 1 --out "$0/run" > "$0/train.log" 2>&1 && "$0/opt/v/bin/vitmae" info "$0/run/checkpoint.safetensors" > "$0/info.txt" && "$0/opt/v/bin/vitmae" --version > "$0/ver.txt"'
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
  unshare -m sh -c 'mount -t tmpfs none "$1" && [ ! -e "$1/Makefile" ] && sh -c "$2" "$0"' "$stage" "$VITMAE_ROOT" "$installed_run"; rc=$?
else
  sh -c "$installed_run" "$stage"; rc=$?
fi
t "the installed copy, checkout hidden, from /: trains, info reads it ($rc: $(tail -n 2 "$stage/train.log" 2>/dev/null))" \
  '[ $rc -eq 0 ] && grep -q "written by   vitmae " "$stage/info.txt" && [ "$(head -n 1 "$stage/ver.txt")" = "$(head -n 1 "$tmp/ver")" ]'
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$VITMAE_ROOT" uninstall DESTDIR="$stage" PREFIX=/opt/v > /dev/null 2>&1; rc=$?
t "make uninstall: exit 0, the binary gone" '[ $rc -eq 0 ] && [ ! -e "$stage/opt/v/bin/vitmae" ]'
# BINDIR chooses the folder itself (docs/interface.md section 1, "Install"), PREFIX then unused.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -o vitmae -C "$VITMAE_ROOT" install DESTDIR="$stage" PREFIX=/opt/v \
  BINDIR=/usr/games > /dev/null 2> "$tmp/err"; rc=$?
t "make install BINDIR: the binary in DESTDIR/BINDIR, nothing else ($rc: $(cd "$stage" && find . -path ./imgs -prune -o -type f -print | tr "\n" " "))" \
  '[ $rc -eq 0 ] && cmp -s "$stage/usr/games/vitmae" "$VITMAE_ROOT/vitmae" && [ ! -e "$stage/opt/v/bin/vitmae" ]'
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$VITMAE_ROOT" uninstall DESTDIR="$stage" BINDIR=/usr/games > /dev/null 2>&1; rc=$?
t "make uninstall BINDIR: the binary gone" '[ $rc -eq 0 ] && [ ! -e "$stage/usr/games/vitmae" ]'

# A locale with a decimal comma (LC_ALL=de_DE.UTF-8) changes nothing: vitmae never calls setlocale, so
# flags read `--lr 0.001` and every number is written with a point (a library or a change that set the
# locale from the environment would write "0,001" into metrics.csv and JSON, and read --lr as 0). The
# locale is made here from Debian's locale sources (the locales package), in the test's folder.
if command -v localedef > /dev/null 2>&1 && mkdir -p "$tmp/loc" && localedef -i de_DE -f UTF-8 "$tmp/loc/de_DE.UTF-8" > /dev/null 2>&1; then
  mkdir -p "$tmp/lc/a" "$tmp/lc/b"
  cp "$VITMAE_ROOT/tests/fixtures/attn_input.png" "$tmp/lc/a/x.png"; cp "$VITMAE_ROOT/tests/fixtures/attn_input.png" "$tmp/lc/b/y.png"
  lc_train() { "$VITMAE" train --data "$tmp/lc" --img 16 --patch 8 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 \
    --dec-heads 1 --steps 2 --batch 2 --val-frac 0 --lr 0.001 --wd 0.05 --threads 1 --out "$1" > /dev/null 2>&1; }
  lc_train "$tmp/lc-c"; rc=$?
  LOCPATH="$tmp/loc" LC_ALL=de_DE.UTF-8 LANG=de_DE.UTF-8 lc_train "$tmp/lc-de"; rc2=$?
  t "LC_ALL=de_DE.UTF-8: train --lr 0.001 runs, the same weights and metrics.csv losses ($rc $rc2)" \
    '[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && same_run "$tmp/lc-c" "$tmp/lc-de"'
  # Step 2's row: step 1 is the default warm-up's, at rate 0.
  t "LC_ALL=de_DE.UTF-8: metrics.csv lr written with a point" 'grep -q "^2,[0-9.]*,0\.001" "$tmp/lc-de/metrics.csv"'
  "$VITMAE" info --json "$VITMAE_ROOT/tests/fixtures/torch_small.safetensors" > "$tmp/lc-c.json"
  LOCPATH="$tmp/loc" LC_ALL=de_DE.UTF-8 "$VITMAE" info --json "$VITMAE_ROOT/tests/fixtures/torch_small.safetensors" > "$tmp/lc-de.json"
  t "LC_ALL=de_DE.UTF-8: info --json the same text" 'cmp -s "$tmp/lc-c.json" "$tmp/lc-de.json"'
else
  echo "cli usage: no decimal-comma locale could be made (localedef, Debian's locales): the locale checks skipped"
fi

# The usage line of a command whose line spells out its flags names every one of them: those of
# reconstruct, eval, embed and classify left out --max-pixels, which their flag lists have. (train,
# attention, probe, finetune and bench give their common flags only and say so by their lists.)
for c in data info reconstruct eval embed classify; do
  "$VITMAE" $c --help > "$tmp/help" 2>&1
  usage=$(head -n 1 "$tmp/help"); missing=""
  for f in $(sed -n '2,$p' "$tmp/help" | grep -o '^ *--[a-z0-9-]*' | tr -d ' '); do
    case "$usage" in *"[$f"*|*" $f "*) ;; *) missing="$missing $f" ;; esac
  done
  t "vitmae $c --help: the usage line names every flag of the list (missing:$missing)" '[ -z "$missing" ]'
done

# A message naming a long path is said whole, with its reason, by every command (cmd/cli.h,
# CLI_ERR_MAX): finetune --out, --ckpt and --resume, and reconstruct, eval and classify --ckpt said a
# 2,000-byte path's first 1,000 bytes and no reason (info its first 500).
long="$tmp/long"
for i in 1 2 3 4 5 6 7 8 9 10; do long="$long/$(printf "%0190d" $i)"; done
mkdir -p "$long" && : > "$long/file"
"$VITMAE_TOOLS/synth" "$tmp/lset" --count 4 --size 16 --seed 1 > /dev/null
gone="$long/gone.safetensors" under="$long/file/sub"
for cmd in "train --data $long/gone --steps 1 --out $tmp/lo1" "train --data $tmp/lset --steps 1 --out $under" \
           "train --resume $long/gone --steps 3" "finetune --from-scratch --data $long/gone --steps 1 --out $tmp/lo2" \
           "finetune --from-scratch --data $tmp/lset --steps 1 --out $under" "finetune --ckpt $gone --data $tmp/lset --out $tmp/lo3" \
           "finetune --resume $long/gone --steps 3" "reconstruct --ckpt $gone --out $tmp/lo4 $tmp/lset" \
           "eval --ckpt $gone --data $tmp/lset" "embed --ckpt $gone --out $tmp/lo5.npy $tmp/lset" \
           "attention --ckpt $gone --out $tmp/lo6 $tmp/lset" "probe --ckpt $gone --train $tmp/lset --test $tmp/lset" \
           "classify --ckpt $gone $tmp/lset" "info $gone" "data $long/gone"; do
  # shellcheck disable=SC2086 # the words of cmd are the command's arguments (no spaces in the paths)
  "$VITMAE" $cmd > /dev/null 2> "$tmp/err"; rc=$?
  t "a 2,000-byte path said whole with its reason: vitmae ${cmd%% *} (exit $rc, $(wc -c < "$tmp/err") bytes: $(tail -c 60 "$tmp/err"))" \
    '[ $rc -ge 1 ] && [ $rc -le 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -qF "$long/" "$tmp/err" && grep -Eq ": (No such file or directory|Not a directory)\$" "$tmp/err"'
done
t "... and nothing made for them" '[ ! -e "$tmp/lo1" ] && [ ! -e "$tmp/lo2" ] && [ ! -e "$tmp/lo3" ] && [ ! -e "$tmp/lo4" ] && [ ! -e "$tmp/lo5.npy" ] && [ ! -e "$tmp/lo6" ]'

# docs/encoder.md's `classify --json` example is its command's output: the paths are the command's
# inputs, in order, each with --top K classes in falling probability, and top1 the share of labelled
# images whose first class is their label. It showed other paths (test/Coat/0001.png for a.png b.jpg)
# and two classes under --top 3.
classify_example() {
  /usr/bin/python3 - "$VITMAE_ROOT/docs/encoder.md" <<'PY'
import json, re, shlex, sys
doc = open(sys.argv[1]).read()
sec = doc[doc.index("### `vitmae classify`"):]
cmd = next((l for l in sec.splitlines() if l.startswith("vitmae classify") and "--json" in l), None)
block = re.search(r"```json\n(.*?)```", sec, re.S)
if not cmd or not block: print("no classify --json command and output"); sys.exit()
args = shlex.split(cmd.split("#")[0])[2:]
top, inputs, i = 5, [], 0
while i < len(args):
    if args[i] in ("--ckpt", "--top", "--batch", "--threads", "--max-pixels"):
        if args[i] == "--top": top = int(args[i + 1])
        i += 2
    elif args[i].startswith("--"): i += 1
    else: inputs.append(args[i]); i += 1
out = json.loads(block.group(1))
paths = [im["path"] for im in out["images"]]
if paths != inputs: print("paths %s, the command's inputs %s" % (paths, inputs))
for im in out["images"]:
    p = [c[1] for c in im["top"]]
    if len(p) != top or p != sorted(p, reverse=True): print("%s: top %s under --top %d" % (im["path"], im["top"], top))
lab = [im for im in out["images"] if im["label"] is not None]
want = sum(im["top"][0][0] == im["label"] for im in lab) / len(lab) if lab else None
if out["top1"] != want: print("top1 %s, the images give %s" % (out["top1"], want))
PY
}
t "docs/encoder.md: the classify --json example is its command's output ($(classify_example | head -n 2 | tr "\n" " "))" '[ -z "$(classify_example)" ]'

[ $fail -eq 0 ] && echo "cli usage ok"
exit $fail
