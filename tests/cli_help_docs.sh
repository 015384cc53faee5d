#!/bin/sh
# The flags of each command as four places state them agree: its flag table (the `  --flag` lines of
# `vitmae CMD --help`, which cli_print_usage prints from the table cli_parse reads), the synopsis its
# --help opens with (a string of its own in each command's file), the synopses docs/interface.md gives
# (section 5's `### \`vitmae CMD ...\`` headings and section 8's `- \`vitmae CMD ...\`` items) and
# README.md's table of commands. Only those strict lists are parsed, never prose; the other direction
# (every --help flag in its command's part of docs/interface.md) is tests/cli_usage.sh's.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch
scratch tmp
cd "$tmp" || exit 1   # a command that wrongly writes to the working directory writes here

"$VITMAE" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' > "$tmp/cmds"
sort "$tmp/cmds" > "$tmp/cmds.sorted"
t "vitmae --help lists the commands ($(wc -l < "$tmp/cmds"))" '[ "$(wc -l < "$tmp/cmds")" -ge 11 ]'
# flags_of TEXT: the distinct --flags of TEXT (a flag's name ends where its letters, digits and '-' do;
# --batch_size is none).
flags_of() { printf '%s\n' "$1" | grep -oE -- '--[a-z][a-z0-9-]*([^a-z0-9_-]|$)' | sed 's/[^a-z0-9-]$//' | sort -u; }

# 1. The synopsis of --help (its usage line and the lines continuing it, indented) names only flags of the
# command's table: a flag renamed in the table and not in the synopsis would be shown and refused.
bad=$(while read -r cmd; do
  "$VITMAE" "$cmd" --help > "$tmp/help"
  awk '/^  --/ { print $1 }' "$tmp/help" | sort -u > "$tmp/table"
  syn=$(awk 'NR == 1 { print; next } /^       / { print; next } { exit }' "$tmp/help")
  flags_of "$syn" | grep -vxF -e --help | comm -23 - "$tmp/table" | sed "s/^/$cmd /"
done < "$tmp/cmds")
t "every flag of each --help's synopsis is in its table of flags (not: $(echo $bad))" '[ -z "$bad" ]'

# 2. Every flag the docs' synopses give a command is one it accepts: `vitmae CMD --flag --help` prints
# the usage (a flag without a value) or says the flag needs a value (--help is no value), never
# "unknown flag"; no work starts either way. doc_synopses FILE... prints "CMD SYNOPSIS" lines.
doc_synopses() {
  awk '/^## [0-9]+\./ { sec = $2 + 0 }
    /^### `vitmae [a-z]+ / || (sec == 8 && /^- `vitmae [a-z]+ /) || /^\| `vitmae [a-z]+ / {
      s = $0; sub(/^[^`]*`vitmae /, "", s); sub(/`.*$/, "", s); print s }' "$@"
}
# refused CMD FLAG: prints "CMD FLAG" when the command refuses FLAG as a flag it does not have.
refused() {
  "$VITMAE" "$1" "$2" --help > /dev/null 2> "$tmp/err" < /dev/null; rc=$?
  if [ $rc -eq 0 ] || { [ $rc -eq 2 ] && grep -q "^vitmae: $1: flag $2 needs a value" "$tmp/err"; }; then :
  else echo "$1 $2 (exit $rc: $(head -c 200 "$tmp/err"))"; fi
}
accepted_check() {
  doc_synopses "$@" > "$tmp/synopses"
  n=0
  while read -r cmd rest; do
    grep -qxF -- "$cmd" "$tmp/cmds" || { echo "$cmd (no such command)"; continue; }
    for flag in $(flags_of "$rest"); do [ "$flag" = --help ] || refused "$cmd" "$flag"; done
  done < "$tmp/synopses"
}
# Every command of vitmae --help has its synopsis in docs/interface.md (README.md's table: cli_usage.sh).
nosyn=$(doc_synopses "$VITMAE_ROOT/docs/interface.md" | awk '{ print $1 }' | sort -u | comm -23 "$tmp/cmds.sorted" -)
t "every command has a synopsis in docs/interface.md (none: $(echo $nosyn))" '[ -s "$tmp/cmds.sorted" ] && [ -z "$nosyn" ]'
n_syn=$(doc_synopses "$VITMAE_ROOT/docs/interface.md" "$VITMAE_ROOT/README.md" | wc -l)
bad=$(accepted_check "$VITMAE_ROOT/docs/interface.md" "$VITMAE_ROOT/README.md")
t "every flag of the $n_syn synopses of docs/interface.md and README.md is accepted by its command (refused: $bad)" \
  '[ "$n_syn" -ge 20 ] && [ -z "$bad" ]'
# The check can fail: a heading naming a flag the command lacks, an item of section 8 and a row of the table too.
sed 's/^### `vitmae eval --ckpt FILE|RUN --data DIR/&  [--mask-frac R]/; s/^- `vitmae embed --ckpt FILE|RUN/& [--pooling P]/' \
  "$VITMAE_ROOT/docs/interface.md" > "$tmp/interface.md"
sed 's/^| `vitmae classify /&--topk K /' "$VITMAE_ROOT/README.md" > "$tmp/README.md"
bad=$(accepted_check "$tmp/interface.md" "$tmp/README.md" | cut -d' ' -f1-2 | tr '\n' ' ')
t "a synopsis flag a command refuses is found in each place ($bad)" \
  '[ "$bad" = "eval --mask-frac embed --pooling classify --topk " ]'

# 3. Every flag docs/interface.md writes as code (a `--flag ...` span) is a flag of some command, so a
# flag renamed or removed does not live on in the docs. Besides the commands' flags the file names
# vitmae's top-level requests, tools/convert_mae.py's flags (section 8, given by their parser), and
# words it shows refused or as the form of every flag (`--flag value`, `--dec`, `--hlep`, `--atch`, `--odd-name`).
"$VITMAE" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' | while read -r cmd; do
  "$VITMAE" "$cmd" --help | awk '/^  --/ { print $1 }'
done > "$tmp/all"
grep -oE 'add_argument\("--[a-z0-9-]+"' "$VITMAE_ROOT/tools/convert_mae.py" | sed 's/.*("//; s/"$//' >> "$tmp/all"
printf '%s\n' --help --version --flag --dec --hlep --atch --odd-name >> "$tmp/all"
sort -u "$tmp/all" -o "$tmp/all"
t "tools/convert_mae.py's flags are read ($(grep -c . "$tmp/all") known)" 'grep -qx -- --no-norm-pix "$tmp/all"'
unknown_spans() { grep -oE -- '`--[a-z][a-z0-9-]*([^a-z0-9_-]|$)' "$1" | sed 's/^`//; s/[^a-z0-9-]$//' | sort -u | comm -23 - "$tmp/all"; }
bad=$(unknown_spans "$VITMAE_ROOT/docs/interface.md")
t "every \`--flag\` of docs/interface.md is a command's flag (unknown: $(echo $bad))" '[ -z "$bad" ]'
sed 's/`--val-max N`/`--val-most N`/' "$VITMAE_ROOT/docs/interface.md" > "$tmp/interface.md"
t "a flag no command has is found" '[ "$(unknown_spans "$tmp/interface.md")" = --val-most ]'
# 4. What a user reads first. `vitmae --help` names `vitmae help COMMAND` (section 1; it named only
# `vitmae COMMAND --help`).
t "vitmae --help names vitmae help COMMAND" '"$VITMAE" --help | grep -q "^vitmae help COMMAND "'
# A flag of choices shows them in place of its value's name, as --pos learned|fixed does: embed's and
# probe's --pool (and probe's --channels) showed "--pool P" and "(one of cls|mean)" at the end of the line.
in_place=$(while read -r cmd; do "$VITMAE" "$cmd" --help | grep '(one of ' | awk -v c="$cmd" '{ print c " " $1 }'; done < "$tmp/cmds")
t "every choice flag shows its choices in place of a value name (not: $(echo $in_place))" '[ -z "$in_place" ]'
t "embed --help and probe --help show --pool cls|mean" \
  '"$VITMAE" embed --help | grep -q "^  --pool cls|mean  " && "$VITMAE" probe --help | grep -q "^  --pool cls|mean  "'
# Every description of every --help starts at one column (30, after an entry of at most 25 characters
# and two spaces), or, when the entry is wider, on the next line at that column: --colormap's,
# --upsample's, --pixel-norm's and --parallel's started wherever their entries ended, --normalize's
# after a single space. misaligned CMD prints "CMD --flag" for each flag of its --help that is neither.
misaligned() {
  "$VITMAE" "$1" --help | awk -v cmd="$1" '
    function under(s) { return substr(s, 1, 29) ~ /^ +$/ && length(s) > 29 && substr(s, 30, 1) != " " }
    wide != "" { if (!under($0)) print cmd " " wide " (no description under it)"; wide = ""; next }
    /^  --/ {
      if (substr($0, 28, 2) == "  " && substr($0, 30, 1) != " " && length($0) >= 30) next
      if ($0 ~ /^  --[^ ]+( [^ ]+)?$/ && length($0) >= 28) { wide = $1; next }
      print cmd " " $1 }
    END { if (wide != "") print cmd " " wide " (no description under it)" }'
}
bad=$(while read -r cmd; do misaligned "$cmd"; done < "$tmp/cmds")
n_wide=$(while read -r cmd; do "$VITMAE" "$cmd" --help; done < "$tmp/cmds" | grep -c '^                             [^ ]')
t "every description of every --help starts at column 30, $n_wide under a wide entry (not: $(echo $bad))" \
  '[ -z "$bad" ] && [ "$n_wide" -ge 5 ]'
# help_flags (tests/lib.sh) gives those wide flags one line again, their defaults on it.
t "help_flags joins a wide entry to its description" \
  'help_flags attention | grep -q "^  --colormap [a-z|]* colormap (default viridis)$" && [ "$(help_flags attention | wc -l)" -eq "$("$VITMAE" attention --help | grep -vc "^                             [^ ]")" ]'
# Every flag that takes a checkpoint takes a run folder for its checkpoint.safetensors (st_checkpoint_arg,
# docs/interface.md section 9), and its --help says so: the --ckpt of seven commands and train's --init
# showed `--ckpt FILE` / `--init CKPT`, "checkpoint (safetensors)", after a run folder worked too. Each
# such line of a flag table shows `FILE|RUN` and what a folder means; each synopsis naming --ckpt with a
# value name gives `FILE|RUN` (finetune's `--ckpt PRETRAINED | --from-scratch` aside).
ckpt_lines=$(while read -r cmd; do
  "$VITMAE" "$cmd" --help | grep -E '^  --(ckpt|init) ' | sed "s/^/$cmd/"
done < "$tmp/cmds")
n=$(printf '%s\n' "$ckpt_lines" | grep -c .)
bad=$(printf '%s\n' "$ckpt_lines" | grep -v '^[a-z]*  --[a-z]* FILE|RUN  .*(\.safetensors, or a run folder: its checkpoint\.safetensors[;)]' | cut -d' ' -f1-4)
t "the $n --help lines of --ckpt and --init say FILE|RUN and what a run folder stands for (not: $(echo $bad))" \
  '[ "$n" -eq 8 ] && [ -z "$bad" ]'
bad=$(while read -r cmd; do
  "$VITMAE" "$cmd" --help | head -n 1 | grep -oE -- '--ckpt [A-Z][^ ]*' | grep -vx -e '--ckpt FILE|RUN' -e '--ckpt PRETRAINED' | sed "s/^/$cmd /"
done < "$tmp/cmds")
t "every synopsis with --ckpt names it FILE|RUN (not: $(echo $bad))" '[ -z "$bad" ]'
# README.md's table of commands alike: each --ckpt of its rows is `FILE\|RUN` (a table cell's escaped
# `|`), as --help; it said `--ckpt FILE` (and classify's `--ckpt CLASSIFIER`) after a run folder was taken.
readme_ckpt() { grep -E '^\| `vitmae [a-z]+ ' "$1" | grep -oE -- '--ckpt [^ `]*'; }
n=$(readme_ckpt "$VITMAE_ROOT/README.md" | grep -c .)
bad=$(readme_ckpt "$VITMAE_ROOT/README.md" | grep -vxF -e '--ckpt FILE\|RUN')
t "the $n --ckpt of README.md's table of commands say FILE|RUN (not: $(echo $bad))" '[ "$n" -eq 7 ] && [ -z "$bad" ]'

# A flag's value in the flag table is the one its synopsis writes (embed's and probe's said `--layer N`
# under `[--layer N|last]`), finetune's `--ckpt PRETRAINED` the one other word kept; train's and
# finetune's --store shows its choices with the folder (docs/interface.md: `--store auto|none|DIR`).
bad=$(while read -r cmd; do
  "$VITMAE" "$cmd" --help | awk -v cmd="$cmd" '
    !u && /^usage:/ { u = 1; line = $0
      while (match(line, /--[a-z0-9-]+ [^] ]+/)) { split(substr(line, RSTART, RLENGTH), p, " "); if (p[2] !~ /^-/) use[p[1]] = p[2]; line = substr(line, RSTART + RLENGTH) }
      next }
    /^  --[a-z]/ && ($1 in use) && $2 != use[$1] && !(cmd == "finetune" && $1 == "--ckpt") { print cmd " " $1 " " $2 "/" use[$1] }'
done < "$tmp/cmds")
t "every flag's value in the table as its synopsis writes it (not: $(echo $bad))" '[ -z "$bad" ]'
for cmd in train finetune; do
  t "$cmd --help: --store auto|none|DIR" '"$VITMAE" $cmd --help | grep -q "^  --store auto|none|DIR  "'
done
[ $fail -eq 0 ] && echo "cli help docs ok ($(wc -l < "$tmp/cmds") commands, $n_syn synopses, $(grep -c . "$tmp/all") known flags)"
exit $fail
