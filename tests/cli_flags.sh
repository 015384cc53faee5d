#!/bin/sh
# Every command, every flag, read from `vitmae --help` and `vitmae CMD --help`: an unknown flag, a
# missing value at the end of argv, non-numeric, below-range and above-range numbers, a bad choice
# and a value given to a boolean are usage errors: exit 2 and one stderr line `vitmae: ...` naming
# the flag (and, for numbers, the valid range that --help shows).
set -u
fail=0; checked=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch dir
cd "$dir" || exit 1   # a command that wrongly writes to the working directory writes here

# usage_error WHAT NEEDLE ARGS...: exit 2, exactly one stderr line, starting "vitmae: ", with NEEDLE.
# The line is read and matched in the shell: with wc and grep, four processes a call took 35 of this
# test's 80 s over its 1713 calls.
usage_error() {
  what=$1; needle=$2; shift 2
  "$VITMAE" "$@" > "$dir/out" 2> "$dir/err" < /dev/null; rc=$?
  checked=$((checked + 1))
  lines=0; first=""; rest=""
  while IFS= read -r rest; do lines=$((lines + 1)); [ $lines -eq 1 ] && first=$rest; rest=""; done < "$dir/err"
  # $rest: what follows the last newline (empty when the line ends with one, as it must).
  whole=0
  case "$first" in "vitmae: "*) case "$first" in *"$needle"*) whole=1 ;; esac ;; esac
  if [ $rc -ne 2 ] || [ $lines -ne 1 ] || [ -n "$rest" ] || [ $whole -ne 1 ]; then
    echo "FAILED: $what: vitmae $* -> exit $rc, stderr ($lines lines): $(head -c 300 "$dir/err")"
    fail=1
  fi
}

cmds=$("$VITMAE" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$cmds" ] || { echo "FAILED: no commands in vitmae --help"; exit 1; }
usage_error "unknown command" "frobnicate" frobnicate
ncmd=0; nflag=0
for cmd in $cmds; do
  ncmd=$((ncmd + 1))
  "$VITMAE" "$cmd" --help > "$dir/help" 2>&1 || { echo "FAILED: vitmae $cmd --help exits non-zero"; fail=1; continue; }
  usage_error "$cmd: unknown flag" "--no-such-flag" "$cmd" --no-such-flag
  usage_error "$cmd: unknown flag with =" "--no-such-flag" "$cmd" --no-such-flag=3
  # --help=1 was "unknown flag '--help' (did you mean --help? ...)": said as any flag that takes none.
  usage_error "$cmd: --help given a value" "vitmae: $cmd: flag --help takes no value" "$cmd" --help=1
  # Flag lines: "  --name[ METAVAR]<pad to 26> help[ (integer A to B)|(number A to B)|(one of ...)]".
  grep '^  --' "$dir/help" > "$dir/flags"
  while IFS= read -r line; do
    nflag=$((nflag + 1))
    flag=$(printf '%s\n' "$line" | awk '{ print $1 }')
    left=$(printf '%s\n' "$line" | cut -c3-28)
    case "$left" in
      *" "[!\ ]*) has_value=1 ;;
      *) has_value=0 ;;
    esac
    if [ $has_value -eq 0 ]; then
      usage_error "$cmd $flag: boolean given a value" "$flag" "$cmd" "$flag=1"
      continue
    fi
    usage_error "$cmd $flag: missing value at the end" "$flag" "$cmd" "$flag"
    # ... or before another flag: "--out --force" made a folder named --force (and forced nothing).
    usage_error "$cmd $flag: missing value before --help" "flag $flag needs a value (the next argument, --help, is a flag" "$cmd" "$flag" --help
    range=$(printf '%s\n' "$line" | sed -n 's/.*(\(integer\|number\) \([^ ]*\) to \([^ ]*\))$/\1 \2 \3/p')
    if [ -n "$range" ]; then
      set -- $range; kind=$1; lo=$2; hi=$3
      valid="[$lo, $hi]"
      usage_error "$cmd $flag: non-numeric" "$flag" "$cmd" "$flag" abc
      usage_error "$cmd $flag: non-numeric names the range" "$valid" "$cmd" "$flag" abc
      usage_error "$cmd $flag: empty" "$flag" "$cmd" "$flag="
      usage_error "$cmd $flag: trailing junk" "$flag" "$cmd" "$flag" 3x
      usage_error "$cmd $flag: a leading space" "$flag" "$cmd" "$flag" " $lo"
      usage_error "$cmd $flag: hexadecimal" "$flag" "$cmd" "$flag" 0x1
      below=$(awk -v v="$lo" 'BEGIN { printf "%.17g", v - 1 }')
      above=$(awk -v v="$hi" 'BEGIN { printf "%.17g", v * 2 + 1 }')
      [ "$kind" = integer ] && above=$(awk -v v="$hi" 'BEGIN { printf "%.0f", v * 2 + 1 }')
      usage_error "$cmd $flag: below range ($below)" "$valid" "$cmd" "$flag" "$below"
      usage_error "$cmd $flag: above range ($above)" "$valid" "$cmd" "$flag" "$above"
      usage_error "$cmd $flag: below range as --flag=v" "$flag" "$cmd" "$flag=$below"
      if [ "$kind" = number ]; then
        usage_error "$cmd $flag: nan" "$flag" "$cmd" "$flag" nan
        usage_error "$cmd $flag: inf" "$flag" "$cmd" "$flag" inf
        # Underflow is a number, as Python's float() reads it: 1e-400 is 0, taken where 0 is in range
        # (the next flag's error is the one said), else out of range. It was "'1e-400' is not a number".
        if awk -v l="$lo" -v h="$hi" 'BEGIN { exit !(l <= 0 && 0 <= h) }'; then
          usage_error "$cmd $flag: 1e-400 reads as 0, accepted" "unknown flag '--no-such-flag'" "$cmd" "$flag" 1e-400 --no-such-flag
        else
          usage_error "$cmd $flag: 1e-400 reads as 0, below range" "1e-400 is out of range $valid" "$cmd" "$flag" 1e-400
        fi
      else
        usage_error "$cmd $flag: fraction for an integer" "$flag" "$cmd" "$flag" 1.5
        # One past the maximum, exactly (64-bit shell arithmetic): 2^53 + 1 is not 2^53.
        usage_error "$cmd $flag: one above range ($((hi + 1)))" "$valid" "$cmd" "$flag" "$((hi + 1))"
      fi
    else
      choices=$(printf '%s\n' "$line" | awk '{ print $2 }')
      case "$line" in
        *"(one of "*) choices=$(printf '%s\n' "$line" | sed -n 's/.*(one of \([^)]*\))$/\1/p') ;;
      esac
      # A fixed list (lowercase words, e.g. "cls|patch|rollout") is checked while parsing; a
      # placeholder such as "N|last|all" is checked later by its command (after its required flags).
      case "$choices" in
        *[A-Z]*) usage_error "$cmd $flag: empty value" "$flag" "$cmd" "$flag=" ;;
        *"|"*) usage_error "$cmd $flag: not a choice" "$flag" "$cmd" "$flag" no-such-choice ;;
        *) usage_error "$cmd $flag: empty text" "$flag" "$cmd" "$flag=" ;;
      esac
    fi
  done < "$dir/flags"
done
# An empty argument: where a command takes paths, refused while parsing as a flag's empty value is
# (`vitmae info ""` said "vitmae: : No such file or directory", exit 1); elsewhere an unexpected one.
for cmd in $cmds; do
  case $cmd in
    reconstruct|attention|data|info|embed|classify) usage_error "$cmd \"\"" "vitmae: $cmd: an empty argument where a path goes" "$cmd" "" ;;
    *) usage_error "$cmd \"\"" "vitmae: $cmd: unexpected argument ''" "$cmd" "" ;;
  esac
done
# --threads has one bound in every command (CLI_THREADS_MAX, docs/interface.md section 1): train,
# finetune, data and bench stopped at 1024 and the others at 4096, with nothing sized by either. The
# bound is accepted (the next flag's error is the one said) and one more is refused alike everywhere.
nthreads=0
for cmd in $cmds; do
  "$VITMAE" "$cmd" --help 2>&1 | grep -q '^  --threads ' || continue
  nthreads=$((nthreads + 1))
  usage_error "$cmd --threads 4096 accepted" "unknown flag '--no-such-flag'" "$cmd" --threads 4096 --no-such-flag
  usage_error "$cmd --threads 4097 refused" "vitmae: $cmd --threads: 4097 is out of range [1, 4096]" "$cmd" --threads 4097
done
t "--threads: every command that has it ($nthreads) bounds it at 4096" '[ $nthreads -ge 10 ]'
# --display and --img too (docs/interface.md section 1): reconstruct's --display stopped at 4096 and
# attention's at 8192, probe's --img at 4096 and that of train, finetune and bench at 8192 (the
# model's img_size bound, which probe --pixels --ckpt takes from a checkpoint anyway).
for spec in "--display 16 8192 2" "--img 1 8192 4"; do
  set -- $spec
  bflag=$1; lo=$2; hi=$3; want=$4
  n=0
  for cmd in $cmds; do
    line=$("$VITMAE" "$cmd" --help 2>&1 | grep "^  $bflag ") || continue
    n=$((n + 1))
    t "$cmd $bflag: $lo to $hi ($line)" 'case "$line" in *"(integer $lo to $hi)") true ;; *) false ;; esac'
    usage_error "$cmd $bflag $hi accepted" "unknown flag '--no-such-flag'" "$cmd" "$bflag" "$hi" --no-such-flag
    usage_error "$cmd $bflag $((hi + 1)) refused" "vitmae: $cmd $bflag: $((hi + 1)) is out of range [$lo, $hi]" "$cmd" "$bflag" "$((hi + 1))"
  done
  t "$bflag: every command that has it ($n) bounds it alike" '[ $n -eq $want ]'
done
# --max-pixels too has one bound and one default (CLI_MAX_PIXELS_MAX, docs/interface.md section 2):
# data took up to 10^15, train and finetune 10^12 (what a train_state holds), the others 9.2 x 10^18,
# with the default written three ways.
npix=0
for cmd in $cmds; do
  line=$("$VITMAE" "$cmd" --help 2>&1 | grep '^  --max-pixels ') || continue
  npix=$((npix + 1))
  t "$cmd --max-pixels: default 67108864 = 2^26, 1 to 10^12 ($line)" \
    'case "$line" in *"(default 67108864 = 2^26) (integer 1 to 1000000000000)") true ;; *) false ;; esac'
  usage_error "$cmd --max-pixels 10^12 accepted" "unknown flag '--no-such-flag'" "$cmd" --max-pixels 1000000000000 --no-such-flag
done
t "--max-pixels: every command that reads images ($npix) has it" '[ $npix -eq 9 ]'
# Every --seed is 0 to 2^53, the largest whole number every JSON reader holds exactly (docs/interface.md
# section 1, "Seeds"; RNG_SEED_MAX): the generic checks above take the bound from --help, so a bound
# moved in the code alone (back to 9.2 x 10^18) passed them.
nseed=0
for cmd in $cmds; do
  line=$("$VITMAE" "$cmd" --help 2>&1 | grep '^  --seed ') || continue
  nseed=$((nseed + 1))
  t "$cmd --seed: 0 to 2^53 ($line)" 'case "$line" in *"(integer 0 to 9007199254740992)") true ;; *) false ;; esac'
done
t "--seed: the commands that draw at random ($nseed) have it" '[ $nseed -ge 7 ]'
t "found commands ($ncmd) and flags ($nflag)" '[ $ncmd -ge 3 ] && [ $nflag -ge 30 ]'
[ $fail -eq 0 ] && echo "cli flags ok ($ncmd commands, $nflag flags, $checked invocations)"
exit $fail
