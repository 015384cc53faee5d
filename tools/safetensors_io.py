"""Read and write safetensors files (F32 only), as vitmae does, in pure Python.

    write(path, tensors, metadata, crc32=True)
        tensors: dict name -> (shape, data); data is a flat list of numbers (nested lists are
        flattened), an array.array('f'), a numpy array or a torch tensor (any float dtype, written
        as float32). Tensors are written in dict order; __metadata__ gets metadata plus "crc32" (zlib
        crc32 of the data section as 8 lowercase hex digits) unless crc32=False. Metadata values are
        strings in the file: a str is written as it is, any other value (the config as a dict, a
        bool, a number) as its JSON text, json.dumps(value), which vitmae reads.
    read(path) -> (tensors, metadata)
        tensors: dict name -> (shape list, array.array('f')); metadata: dict str -> str.
        Checks sizes, offsets and crc32 (when present), like src/io/safetensors.c.

Usage as a script: python3 tools/safetensors_io.py FILE   (lists tensors and metadata)
"""
import array
import json
import struct
import sys
import zlib

_LITTLE = sys.byteorder == "little"


def _flatten(x, out):
    for v in x:
        if isinstance(v, (list, tuple)):
            _flatten(v, out)
        else:
            out.append(float(v))


def _f32_bytes(data):
    """Little-endian float32 bytes of a list / array / numpy array / torch tensor."""
    if hasattr(data, "detach"):  # torch tensor
        data = data.detach().to("cpu").contiguous().float()
        try:
            return data.numpy().astype("<f4").tobytes()
        except Exception:  # torch without numpy
            data = data.reshape(-1).tolist()
    if hasattr(data, "astype") and hasattr(data, "tobytes"):  # numpy array
        return data.astype("<f4", order="C").tobytes(order="C")
    if isinstance(data, array.array) and data.typecode == "f":
        a = array.array("f", data)
    else:
        flat = []
        _flatten(data, flat)
        a = array.array("f", flat)
    if not _LITTLE:
        a.byteswap()
    return a.tobytes()


def write(path, tensors, metadata=None, crc32=True):
    header = {}
    chunks = []
    offset = 0
    for name, (shape, data) in tensors.items():
        shape = [int(d) for d in shape]
        numel = 1
        for d in shape:
            if d < 0:
                raise ValueError("tensor %r has a negative dimension" % name)
            numel *= d
        raw = _f32_bytes(data)
        if len(raw) != 4 * numel:
            raise ValueError("tensor %r: %d values for shape %s" % (name, len(raw) // 4, shape))
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    data = b"".join(chunks)
    meta = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in (metadata or {}).items() if k != "crc32"}
    if crc32:
        meta["crc32"] = "%08x" % (zlib.crc32(data) & 0xFFFFFFFF)
    header["__metadata__"] = meta
    js = json.dumps(header, separators=(",", ":")).encode("utf-8")
    js += b" " * ((8 - len(js) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)))
        f.write(js)
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        raise ValueError("%s: file too short" % path)
    (hlen,) = struct.unpack("<Q", buf[:8])
    if hlen > 100_000_000 or hlen > len(buf) - 8:
        raise ValueError("%s: bad header length %d" % (path, hlen))
    header = json.loads(buf[8:8 + hlen].decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("%s: header is not a JSON object" % path)
    data = buf[8 + hlen:]
    meta = header.pop("__metadata__", {}) or {}
    for k, v in meta.items():
        if not isinstance(v, str):
            raise ValueError("%s: __metadata__ value %r is not a string" % (path, k))
    if "crc32" in meta and meta["crc32"] != "%08x" % (zlib.crc32(data) & 0xFFFFFFFF):
        raise ValueError("%s: crc32 mismatch (file damaged)" % path)
    tensors = {}
    for name, e in header.items():
        if e.get("dtype") != "F32":
            raise ValueError("%s: tensor %r has dtype %s (only F32)" % (path, name, e.get("dtype")))
        shape = [int(d) for d in e["shape"]]
        numel = 1
        for d in shape:
            numel *= d
        b, en = e["data_offsets"]
        if en - b != 4 * numel or b < 0 or en > len(data):
            raise ValueError("%s: tensor %r has bad data_offsets" % (path, name))
        a = array.array("f")
        a.frombytes(data[b:en])
        if not _LITTLE:
            a.byteswap()
        tensors[name] = (shape, a)
    return tensors, meta


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: safetensors_io.py FILE")
    ts, md = read(sys.argv[1])
    for k, v in md.items():
        print("meta %s = %s" % (k, v))
    for k, (shape, a) in ts.items():
        print("%s %s" % (k, shape))
