# Shell helpers shared by the command-line tests (sourced, not run: the runner takes tests/cli_*.sh).
# Needs $dir, the test's scratch folder.

# The data section of a safetensors file (parameters and AdamW moments), without the header, which
# holds run-specific metadata such as elapsed time.
data_of() { python3 -c 'import struct,sys; b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; sys.stdout.buffer.write(b[8+n:])' "$1"; }
# 0 when two checkpoints hold bitwise the same tensors.
same_weights() { data_of "$1" > "$dir/a.bin"; data_of "$2" > "$dir/b.bin"; cmp -s "$dir/a.bin" "$dir/b.bin"; }
