#!/bin/sh
# The README's two commands on a minimal Debian 12, as a new user's machine has it (docs/testing.md,
# "The README's commands on a fresh Debian 12"): debootstrap's minbase with only build-essential, git,
# pkg-config and python3 (and ca-certificates) in a chroot, a clone of this repository's HEAD in it,
# then `make test` and `make demo` there, each logged. Needs root, network access to deb.debian.org and
# about 3 GB in DIR. Leaves DIR for a look inside; remove it with `rm -rf DIR` (nothing is mounted then).
#
# Usage: tools/fresh_debian.sh DIR      (DIR must not exist yet)
set -eu
dir=${1:-}
if [ -z "$dir" ]; then echo "usage: tools/fresh_debian.sh DIR" >&2; exit 2; fi
if [ -e "$dir" ]; then echo "vitmae: $dir: already exists (give a new folder)" >&2; exit 2; fi
if [ "$(id -u)" != 0 ]; then echo "vitmae: tools/fresh_debian.sh: needs root (debootstrap, chroot)" >&2; exit 2; fi
repo=$(cd "$(dirname "$0")/.." && pwd)
command -v debootstrap >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
mirror=http://deb.debian.org/debian
debootstrap --variant=minbase --include=build-essential,git,pkg-config,python3,ca-certificates bookworm "$dir" \
    "$mirror" >"$dir.debootstrap.log" 2>&1 || { echo "vitmae: debootstrap failed: see $dir.debootstrap.log" >&2; exit 1; }
# The package lists a Debian 12 image has: main, its updates and security.
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main\n' \
    "$mirror" "$mirror" >"$dir/etc/apt/sources.list"
# A Debian machine has both: name servers, and its own name in /etc/hosts (without it OpenMPI's start-up
# waits seconds on name lookups at every mpirun).
cp /etc/resolv.conf "$dir/etc/resolv.conf"
cp /etc/hosts "$dir/etc/hosts"
mkdir -p "$dir/work"
git clone -q "$repo" "$dir/work/main"
[ -d "$repo/../shared" ] && cp -r "$repo/../shared" "$dir/work/shared"
# /proc, /sys and /dev with what is mounted under them (/dev/shm, /dev/pts, cgroups), kept from
# propagating back; a fresh /run.
mounted=""
cleanup() { for m in $mounted; do umount -R "$dir/$m" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM
for m in proc sys dev; do
    mount --rbind "/$m" "$dir/$m" && mount --make-rslave "$dir/$m"; mounted="$m $mounted"
done
mount -t tmpfs tmpfs "$dir/run"; mounted="run $mounted"
rc=0
for target in test demo; do
    start=$(date +%s)
    if chroot "$dir" env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        sh -c "cd /work/main && make $target" >"$dir/work/$target.log" 2>&1; then r=0; else r=$?; rc=1; fi
    echo "make $target: exit $r in $(( $(date +%s) - start )) s; log $dir/work/$target.log"
done
exit $rc
