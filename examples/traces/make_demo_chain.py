#!/usr/bin/env python3
"""Writes demo_chain.json: a hand-made kfuse trace (JSON interchange form) of an elementwise chain
scale -> add -> relu -> mul over 1M floats, 50 iterations on one stream of an H100, as the collector would
record it, with the real PTX of elementwise_chain.cu (compiled here with nvcc) as its module image. It is the
embedded default that `scripts/demo.sh` imports and summarizes until the end-to-end
emulator demo exists. Deterministic: running it again gives the same file."""
import base64
import json
import struct
import sys

N = 1 << 20
ITERS = 50
BLOCK = 256
GRID = N // BLOCK
BASE = 0x7F1200000000
ALLOC = {1: BASE, 2: BASE + 0x400000, 3: BASE + 0x800000, 4: BASE + 0xC00000}  # x, y, tmp, out

kernels = [  # (id, mangled, demangled, params [(type, access)], gpu ns)
    (1, "_Z5scalePKfPffi", "scale(float const*, float*, float, int)",
     [("ptr", "read"), ("ptr", "write"), ("f32", "none"), ("s32", "none")], 9_800),
    (2, "_Z3addPKfS0_Pfi", "add(float const*, float const*, float*, int)",
     [("ptr", "read"), ("ptr", "read"), ("ptr", "write"), ("s32", "none")], 13_900),
    (3, "_Z4reluPKfPfi", "relu(float const*, float*, int)",
     [("ptr", "read"), ("ptr", "write"), ("s32", "none")], 9_700),
    (4, "_Z3mulPKfS0_Pfi", "mul(float const*, float const*, float*, int)",
     [("ptr", "read"), ("ptr", "read"), ("ptr", "write"), ("s32", "none")], 13_850),
]
# Which allocation each pointer parameter receives, per kernel.
pointer_allocs = {1: [1, 3], 2: [3, 2, 3], 3: [3, 3], 4: [3, 1, 4]}


def params(spec):
    out, offset = [], 0
    for i, (ty, access) in enumerate(spec):
        size = 8 if ty == "ptr" else 4
        offset = (offset + size - 1) // size * size
        out.append({"index": i, "offset": offset, "size": size, "type": ty, "access": access})
        offset += size
    return out


functions = [{"id": k, "module_id": 1, "mangled_name": m, "demangled_name": d, "params": params(p)}
             for k, m, d, p, _ in kernels]

import hashlib
import os
import subprocess
import tempfile

# The module image is the real PTX of elementwise_chain.cu, so the analyzer can prove fusion legality from it.
here = os.path.dirname(os.path.abspath(__file__))
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run(["nvcc", "-ptx", "-arch=sm_90", os.path.join(here, "elementwise_chain.cu"),
                    "-o", os.path.join(tmp, "chain.ptx")], check=True)
    with open(os.path.join(tmp, "chain.ptx"), "rb") as f:
        ptx = f.read()
module = {"id": 1, "context_id": 1, "kind": "ptx", "hash": hashlib.sha256(ptx).hexdigest(),
          "image": base64.b64encode(ptx).decode(), "load_ns": 1_000_000}

launches, t_api, t_gpu, seq, corr = [], 2_000_000, 2_050_000, 0, 100
for it in range(ITERS):
    for k, _, _, spec, gpu_ns in kernels:
        seq += 1
        corr += 1
        fn = next(f for f in functions if f["id"] == k)
        args = bytearray()
        pointer_args = []
        ptr_i = 0
        for p in fn["params"]:
            args += b"\0" * (p["offset"] - len(args))
            if p["type"] == "ptr":
                alloc = pointer_allocs[k][ptr_i]
                ptr_i += 1
                args += struct.pack("<Q", ALLOC[alloc])
                pointer_args.append({"param_index": p["index"], "address": ALLOC[alloc],
                                     "allocation_id": alloc, "offset": 0, "field_offset": -1})
            elif p["type"] == "f32":
                args += struct.pack("<f", 2.0)
            else:
                args += struct.pack("<i", N)
        t_gpu = max(t_gpu, t_api + 4_000)
        launches.append({
            "id": seq, "correlation_id": corr, "thread_id": 31337, "stream_id": 1, "function_id": k,
            "grid": [GRID, 1, 1], "block": [BLOCK, 1, 1], "cluster": [1, 1, 1],
            "dynamic_shared_bytes": 0, "static_shared_bytes": 0,
            "registers_per_thread": 16, "api_start_ns": t_api, "api_end_ns": t_api + 2_600,
            "gpu_start_ns": t_gpu, "gpu_end_ns": t_gpu + gpu_ns + (seq * 37) % 400,
            "arg_bytes": base64.b64encode(bytes(args)).decode(), "pointer_args": pointer_args})
        t_api += 3_100
        t_gpu = launches[-1]["gpu_end_ns"] + 1_200

end = max(t_api, t_gpu)
doc = {
    "format": "kfuse-trace-json", "version": 1,
    "metadata": {"producer": "kfuse-demo", "producer_version": "0.1.0",
                 "command_line": "./elementwise_chain --n 1048576 --iters 50", "host": "demo",
                 "start_time_ns": 1_763_769_600_000_000_000,
                 "extra": {"note": "hand-made demo trace (examples/traces/make_demo_chain.py)",
                           "origin": "synthetic: made by hand with examples/traces/make_demo_chain.py; the PTX is "
                                     "nvcc's, the GPU times are invented, not measured"}},
    "processes": [{"id": 1, "pid": 31337, "name": "elementwise_chain"}],
    "devices": [{"id": 1, "ordinal": 0, "name": "NVIDIA H100 80GB HBM3", "cc_major": 9, "cc_minor": 0,
                 "sm_count": 132, "memory_bytes": 85_520_809_984, "clock_khz": 1_980_000, "uuid": ""}],
    "contexts": [{"id": 1, "device_id": 1, "process_id": 1, "handle": 0x5555_0000_1000}],
    "streams": [{"id": 1, "context_id": 1, "handle": 0, "native_id": 7, "priority": 0, "is_default": True}],
    "modules": [module],
    "functions": functions,
    "launches": launches,
    "allocations": [{"id": a, "context_id": 1, "address": addr, "size": 4 * N, "kind": "device",
                     "alloc_ns": 1_100_000 + a * 1_000, "free_ns": end + 10_000 + a} for a, addr in ALLOC.items()],
    "memcpys": [
        {"id": 1, "correlation_id": 10, "thread_id": 31337, "stream_id": 1, "kind": "htod",
         "src_address": 0x5555_6000_0000, "dst_address": ALLOC[1], "src_allocation_id": 0, "dst_allocation_id": 1,
         "bytes": 4 * N, "async": False, "api_start_ns": 1_200_000, "api_end_ns": 1_560_000,
         "gpu_start_ns": 1_210_000, "gpu_end_ns": 1_550_000},
        {"id": 2, "correlation_id": 11, "thread_id": 31337, "stream_id": 1, "kind": "htod",
         "src_address": 0x5555_6040_0000, "dst_address": ALLOC[2], "src_allocation_id": 0, "dst_allocation_id": 2,
         "bytes": 4 * N, "async": False, "api_start_ns": 1_600_000, "api_end_ns": 1_960_000,
         "gpu_start_ns": 1_610_000, "gpu_end_ns": 1_950_000},
        {"id": 3, "correlation_id": corr + 1, "thread_id": 31337, "stream_id": 1, "kind": "dtoh",
         "src_address": ALLOC[4], "dst_address": 0x5555_6080_0000, "src_allocation_id": 4, "dst_allocation_id": 0,
         "bytes": 4 * N, "async": False, "api_start_ns": t_api, "api_end_ns": end + 350_000,
         "gpu_start_ns": end + 1_000, "gpu_end_ns": end + 340_000}],
    "memsets": [{"id": 1, "correlation_id": 12, "thread_id": 31337, "stream_id": 1, "dst_address": ALLOC[3],
                 "dst_allocation_id": 3, "bytes": 4 * N, "value": 0, "element_size": 4, "async": False,
                 "api_start_ns": 1_970_000, "api_end_ns": 1_975_000, "gpu_start_ns": 1_971_000,
                 "gpu_end_ns": 1_974_000}],
    "syncs": [{"id": 1, "correlation_id": corr + 2, "thread_id": 31337, "kind": "context", "stream_id": 0,
               "event_id": 0, "start_ns": end + 350_000, "end_ns": end + 351_000}],
    "events": [], "nvtx_ranges": [{"id": 1, "name": "iterations", "domain": "", "thread_id": 31337,
                                   "start_ns": 2_000_000, "end_ns": t_api}],
    "metrics": [], "stats": [],
}
out = sys.argv[1] if len(sys.argv) > 1 else "demo_chain.json"
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
