#!/usr/bin/env python3
"""Writes the hostile inputs in inputs/ (committed; run again only to change them). Each is a damaged or hostile
variant of a real input, made by hand to reproduce one defect; see inputs/README.md. Synthetic by construction."""
import copy
import gzip
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "examples", "traces", "demo_chain.json")
OUT = os.path.join(HERE, "inputs")


def small_chain():
    """The demo chain trace cut to its first three iterations (12 launches), the note saying so."""
    with open(SRC) as f:
        d = json.load(f)
    d["launches"] = d["launches"][:12]
    d["metadata"]["extra"]["note"] = "hostile-input fixture: the demo chain cut to 12 launches, then damaged"
    return d


def write_json(name, doc):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    # 1. Pointer arguments naming parameters the kernels do not have: 7 (add has 4) and -1.
    d = small_chain()
    for l in d["launches"]:
        if l["function_id"] == 2:
            l["pointer_args"][0]["param_index"] = 7
        if l["function_id"] == 3:
            l["pointer_args"][0]["param_index"] = -1
    write_json("param_index_out_of_range.json", d)
    # 2. A number too large for a double.
    d = small_chain()
    text = json.dumps(d, separators=(",", ":")).replace('"bytes":4194304', '"bytes":1e99999', 1)
    with open(os.path.join(OUT, "number_too_large.json"), "w") as f:
        f.write(text + "\n")
    # gzip.open writes the time into the header: a fixed one keeps the files the same from run to run.
    def gz(name):
        return gzip.GzipFile(os.path.join(OUT, name), "wb", compresslevel=9, mtime=0)

    # 3. An enum value nested a million arrays deep (2 MB of brackets, gzip-compressed).
    head = '{"format":"kfuse-trace-json","version":1,"memcpys":[{"id":1,"kind":'
    with gz("nested_million.json.gz") as f:
        f.write((head + "[" * 1000000 + "]" * 1000000 + "}]}\n").encode())
    # 4. Kineto traces whose one string, or whitespace between two events, inflates to 100 MiB.
    ev = '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"stream":7,"correlation":1}}'
    with gz("kineto_huge_string.json.gz") as f:
        f.write(('{"traceEvents":[' + ev + ',{"ph":"X","cat":"kernel","name":"').encode())
        for _ in range(100):
            f.write(b"a" * (1 << 20))
        f.write(b'","pid":0,"tid":7,"ts":5,"dur":1,"args":{"stream":7}}]}\n')
    with gz("kineto_huge_whitespace.json.gz") as f:
        f.write(('{"traceEvents":[' + ev + ",").encode())
        for _ in range(100):
            f.write(b" " * (1 << 20))
        f.write((ev + "]}\n").encode())
    # 4b. A gzipped kfuse trace JSON whose one string inflates to 300 MiB (kfuse JSON was inflated whole).
    with gz("kfuse_json_huge_string.json.gz") as f:
        f.write(b'{"format":"kfuse-trace-json","version":1,"metadata":{"host":"')
        for _ in range(300):
            f.write(b"h" * (1 << 20))
        f.write(b'"}}\n')
    # 5. A fatbin whose one entry is of a kind kfuse does not extract (neither PTX nor ELF).
    entry = struct.pack("<HHIQIIIIQQQ", 0x10, 0, 64, 16, 0, 0, 0, 0, 0, 0, 16) + b"\x00" * 8
    assert len(entry) == 64
    payload = b"not ptx, not elf"
    header = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(entry) + len(payload))
    with open(os.path.join(OUT, "fatbin_unknown_entry.fatbin"), "wb") as f:
        f.write(header + entry + payload)


if __name__ == "__main__":
    main()
