#!/bin/sh
# Makes sure the build's Debian packages are present. As root: installs what is missing
# (apt-get update once first). Not root: prints the exact command and fails.
# Usage: tools/install-deps.sh [BUILD_DIR] [extra-package ...]
set -e
build=${1:-build}; [ $# -gt 0 ] && shift
need=""
have_pc() { pkg-config --exists "$1" 2>/dev/null; }
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
have_pc libpng   || need="$need libpng-dev"
have_pc zlib     || need="$need zlib1g-dev"
have_pc libdeflate || need="$need libdeflate-dev"   # the checkpoints' crc32
have_pc libjpeg  || need="$need libjpeg62-turbo-dev"
have_pc libcjson || need="$need libcjson-dev"
have_pc libexif  || need="$need libexif-dev"
have_pc libwebp  || need="$need libwebp-dev"
have_pc libwebpdemux || need="$need libwebp-dev"   # the EXIF chunk (orientation)
# Text and lines in the pictures: cairo, fonts through fontconfig, and the font itself (DejaVu Sans).
have_pc cairo      || need="$need libcairo2-dev"
have_pc fontconfig || need="$need libfontconfig-dev"
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
installed fonts-dejavu-core || need="$need fonts-dejavu-core"
# OpenMPI: the library and headers, and mpirun for `mpirun -np N ./vitmae train` (docs/distributed.md).
have_pc ompi-c   || need="$need libopenmpi-dev"
command -v mpirun >/dev/null 2>&1 || need="$need openmpi-bin"
for p in "$@"; do
  installed "$p" || need="$need $p"
done
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "vitmae: missing packages:$need; run: sudo apt-get update && sudo apt-get install -y$need" >&2
  exit 1
fi
echo "vitmae: installing$need" >&2
mkdir -p "$build"
# apt-get update once per build folder: later installs reuse the package lists.
if [ ! -f "$build/.apt-updated" ]; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  touch "$build/.apt-updated"
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >&2
