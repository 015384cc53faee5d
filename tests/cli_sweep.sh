#!/bin/sh
# What a SIGKILL or a power cut leaves behind (no stop signal could remove it), swept only when it is
# certainly dead (io/files.h's file_sweep_dead; docs/data.md "Cache, store and prefetch" and "Run folders"):
# a --store's temporary file "<hash>.work.tmp.<host>.<pid>.<serial>" goes when the store is opened, and a
# run folder's ".checkpoint.link.<host>.<pid>.XXXXXX" when a run starts there, each only when its host is
# this one and its pid is no longer running. A live process's, another host's, one of an older version
# (no host), a near-miss name (a user's file), a link or a folder under such a name stay. Nothing swept
# the store before; the run folder's start removed every ".checkpoint.link.*", a user's file too.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch
scratch dir
cd "$dir" || exit 1
"$VITMAE_TOOLS/synth" "$dir/data" --count 24 --size 16 --seed 5 >/dev/null || { echo "FAILED: synth"; exit 1; }
small="--data $dir/data --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 8 --steps 2 --val-frac 0.2 --threads 1"
host=$(uname -n)   # gethostname's
other=$(echo "$host" | tr "a-zA-Z0-9" "b-zaB-ZA1-90")   # another host's name, as long as this one's
sh -c 'exit 0' & dead=$!; wait $dead   # a pid no process has now
live=$$
echo mine > "$dir/outside"

mkdir -p "$dir/store"
h=0123456789abcdef
for n in "$h.work.tmp.$host.$dead.1" "$h.work.tmp.$host.$dead.27" \
         "$h.work.tmp.$host.$live.1" "$h.work.tmp.not-$host.$dead.1" "$h.work.tmp.$other.$dead.1" "$h.work.tmp.$dead.1" \
         "$h.work.tmp.$host.$dead.1.bak" "0123456789ABCDEF.work.tmp.$host.$dead.1" "$h.work.tmp.$host.0$dead.1" \
         "$h.work.tmp.$host.$dead." "notes.work.tmp.$host.$dead.1"; do
  echo leftover > "$dir/store/$n"
done
ln -s "$dir/outside" "$dir/store/fedcba9876543210.work.tmp.$host.$dead.2"
mkdir "$dir/store/fedcba9876543210.work.tmp.$host.$dead.3"
"$VITMAE" train $small --store "$dir/store" --out "$dir/run" > /dev/null 2> "$dir/err"; rc=$?
now=$(ls -A "$dir/store" | grep "\.tmp\." | tr "\n" " ")
t "train exits 0 ($rc: $(cat "$dir/err"))" '[ $rc -eq 0 ]'
t "the store's temporary files of this host's dead processes are gone (now: $now)" \
  '[ ! -e "$dir/store/$h.work.tmp.$host.$dead.1" ] && [ ! -e "$dir/store/$h.work.tmp.$host.$dead.27" ]'
t "a live process's, another host's and an older version's stay" \
  '[ -e "$dir/store/$h.work.tmp.$host.$live.1" ] && [ -e "$dir/store/$h.work.tmp.not-$host.$dead.1" ] &&
   [ -e "$dir/store/$h.work.tmp.$other.$dead.1" ] &&
   [ -e "$dir/store/$h.work.tmp.$dead.1" ]'
t "near-miss names stay" \
  '[ -e "$dir/store/$h.work.tmp.$host.$dead.1.bak" ] && [ -e "$dir/store/0123456789ABCDEF.work.tmp.$host.$dead.1" ] &&
   [ -e "$dir/store/$h.work.tmp.$host.0$dead.1" ] && [ -e "$dir/store/$h.work.tmp.$host.$dead." ] &&
   [ -e "$dir/store/notes.work.tmp.$host.$dead.1" ]'
t "a link and a folder under such a name stay, the link not followed" \
  '[ -L "$dir/store/fedcba9876543210.work.tmp.$host.$dead.2" ] && [ "$(cat "$dir/outside")" = mine ] &&
   [ -d "$dir/store/fedcba9876543210.work.tmp.$host.$dead.3" ]'
t "the store holds the run's working images" '[ $(ls "$dir/store" | grep -c "^[0-9a-f]*\.work$") -ge 1 ]'

# The run folder: a new run in a folder of these files.
mkdir -p "$dir/rf"
for n in ".checkpoint.link.$host.$dead.AbC123" ".checkpoint.link.$host.$live.AbC123" ".checkpoint.link.notes" \
         ".checkpoint.link.not-$host.$dead.AbC123" ".checkpoint.link.$other.$dead.AbC123" ".checkpoint.link.$host.$dead.AbC12" \
         ".checkpoint.link.$host.$dead.AbC1234" ".checkpoint.link.$host.$dead.AbC-23"; do
  echo leftover > "$dir/rf/$n"
done
ln -s "$dir/outside" "$dir/rf/.checkpoint.link.$host.$dead.Link00"
"$VITMAE" train $small --out "$dir/rf" > /dev/null 2> "$dir/err"; rc=$?
now=$(ls -A "$dir/rf" | grep "^\.checkpoint\.link\." | tr "\n" " ")
t "train in a folder of leftovers exits 0 ($rc: $(cat "$dir/err"))" '[ $rc -eq 0 ] && [ -s "$dir/rf/checkpoint.safetensors" ]'
t "the link a dead process of this host left is gone (now: $now)" '[ ! -e "$dir/rf/.checkpoint.link.$host.$dead.AbC123" ]'
t "a user's .checkpoint.link.notes stays" '[ "$(cat "$dir/rf/.checkpoint.link.notes")" = leftover ]'
t "a live process's, another host's and near-miss names stay" \
  '[ -e "$dir/rf/.checkpoint.link.$host.$live.AbC123" ] && [ -e "$dir/rf/.checkpoint.link.not-$host.$dead.AbC123" ] &&
   [ -e "$dir/rf/.checkpoint.link.$other.$dead.AbC123" ] &&
   [ -e "$dir/rf/.checkpoint.link.$host.$dead.AbC12" ] && [ -e "$dir/rf/.checkpoint.link.$host.$dead.AbC1234" ] &&
   [ -e "$dir/rf/.checkpoint.link.$host.$dead.AbC-23" ]'
t "a symbolic link under such a name stays, not followed" \
  '[ -L "$dir/rf/.checkpoint.link.$host.$dead.Link00" ] && [ "$(cat "$dir/outside")" = mine ]'
[ $fail -eq 0 ] && echo "cli sweep ok"
exit $fail
