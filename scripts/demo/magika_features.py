#!/usr/bin/env python3
"""Magika's pre-processing, standard library only: turn files into the model's input.

Usage: magika_features.py CONFIG.min.json OUT.npy LABELS.txt FILE...

Writes OUT.npy, an int32 array [len(FILES), beg_size + end_size] in C order (the
model's `bytes` input), and LABELS.txt, the model's output labels one per line in
output order. Follows magika 1.0.3 (magika.py, _extract_features_from_seekable):
read at most block_size bytes from the start (lstrip whitespace) and from the end
(rstrip), keep beg_size / end_size of them, pad with padding_token (after the
start bytes, before the end bytes).
"""
import json
import struct
import sys


def features(path, cfg):
    beg_size, end_size = cfg["beg_size"], cfg["end_size"]
    block, pad = cfg["block_size"], cfg["padding_token"]
    if cfg.get("mid_size", 0) or cfg.get("use_inputs_at_offsets", False):
        sys.exit("magika_features: this config needs features this script does not make")
    with open(path, "rb") as f:
        data = f.read()
    n = min(block, len(data))
    beg = data[:n].lstrip()[:beg_size]
    end = data[len(data) - n:].rstrip()
    end = end[max(0, len(end) - end_size):]
    return list(beg) + [pad] * (beg_size - len(beg)) + [pad] * (end_size - len(end)) + list(end)


def write_npy(path, rows):
    width = len(rows[0])
    header = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows), width)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"  # 64-byte aligned, ends in \n
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("ascii"))
        for row in rows:
            f.write(struct.pack("<%di" % width, *row))


def main(argv):
    if len(argv) < 5 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2
    with open(argv[1], encoding="utf-8") as f:
        cfg = json.load(f)
    write_npy(argv[2], [features(p, cfg) for p in argv[4:]])
    with open(argv[3], "w", encoding="utf-8") as f:
        f.write("\n".join(cfg["target_labels_space"]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
