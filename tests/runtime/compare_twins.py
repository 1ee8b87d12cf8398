#!/usr/bin/env python3
"""Records each runtime-API example (static cudart, <<<>>>) and its driver-API twin on the stand-in with
`kfuse record` (hook backend) and checks that the two traces hold the same launches -- kernel, grid, block,
dynamic shared memory, scalar argument bytes, and pointer arguments resolved to the same allocation (by order of
allocation) and offset -- and that `kfuse analyze --all` finds the same candidates (kind, kernels, occurrences,
legality; ranks and predicted savings depend on the emulated run times and are not compared).

`vector_add_shared_cudart` (the same program built with -cudart shared) is compared with vector_add's driver-API
twin as well.

Usage: compare_twins.py --kfuse BIN --build BUILD [--cuda-lib DIR] [NAME...]
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

TWINS = ["vector_add", "elementwise_chain", "mlp_block", "many_small_kernels", "histogram", "reduction", "stencil",
         "activation_matmul",
         "vector_add_shared_cudart"]
# Runtime-API program -> its driver-API twin, where the names differ.
DRIVER_TWIN = {"vector_add_shared_cudart": "vector_add"}


def record(kfuse, build, program, out, cuda_lib=None):
    path = os.path.join(build, "standin") + (os.pathsep + cuda_lib if cuda_lib else "")
    env = dict(os.environ, LD_LIBRARY_PATH=path)
    p = subprocess.run([kfuse, "-q", "record", "--backend", "hook", "-o", out, "--", program], env=env,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"kfuse record {program} exited {p.returncode}: {p.stderr[-2000:]}")


def launches(trace):
    db = sqlite3.connect(trace)
    allocs = {aid: n for n, (aid,) in enumerate(db.execute(
        "SELECT id FROM allocation WHERE kind = 'device' ORDER BY alloc_ns, id"))}
    params = {}
    for fid, idx, off, size in db.execute("SELECT function_id, idx, offset, size FROM function_param"):
        params.setdefault(fid, {})[idx] = (off, size)
    rows = []
    for (name, gx, gy, gz, bx, by, bz, shmem, arg_bytes, ptrs, fid) in db.execute(
            "SELECT f.mangled_name, grid_x, grid_y, grid_z, block_x, block_y, block_z, dynamic_shared_bytes, "
            "arg_bytes, pointer_args, l.function_id FROM launch l JOIN function f ON f.id = l.function_id "
            "ORDER BY l.id"):
        pointers = json.loads(ptrs) if ptrs else []
        scalars = bytearray(arg_bytes or b"")
        resolved = []
        for idx, _address, alloc, offset in pointers:
            off, size = params.get(fid, {}).get(idx, (None, None))
            if off is not None:
                scalars[off:off + size] = b"\0" * size  # the address itself differs between processes
            resolved.append((idx, allocs.get(alloc), offset))
        rows.append((name, (gx, gy, gz), (bx, by, bz), shmem, bytes(scalars).hex(), tuple(resolved)))
    db.close()
    return rows


def candidates(kfuse, trace, out):
    p = subprocess.run([kfuse, "-q", "analyze", trace, "--all", "--json", out, "--no-store"], capture_output=True,
                       text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"kfuse analyze {trace} exited {p.returncode}: {p.stderr[-2000:]}")
    with open(out) as f:
        report = json.load(f)
    return sorted((c["kind"], tuple(k.get("mangled_name", k["name"]) for k in c["kernels"]), c["occurrences"],
                   c["legality"]) for c in report["candidates"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--cuda-lib", help="directory of libcudart.so.13 (for the -cudart shared build)")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names or TWINS:
            try:
                traces = {}
                for api in ("driver_api", "runtime_api"):
                    program = DRIVER_TWIN.get(name, name) if api == "driver_api" else name
                    traces[api] = os.path.join(tmp, f"{name}.{api}.sqlite")
                    record(args.kfuse, args.build, os.path.join(args.build, "examples", api, program), traces[api],
                           args.cuda_lib)
                d, r = launches(traces["driver_api"]), launches(traces["runtime_api"])
                problems = []
                if not d:
                    problems.append("the driver-API trace has no launches")
                if len(d) != len(r):
                    problems.append(f"{len(d)} launches (driver API) vs {len(r)} (runtime API)")
                for i, (a, b) in enumerate(zip(d, r)):
                    if a != b:
                        problems.append(f"launch {i}: driver API {a} vs runtime API {b}")
                        break
                cd = candidates(args.kfuse, traces["driver_api"], os.path.join(tmp, f"{name}.d.json"))
                cr = candidates(args.kfuse, traces["runtime_api"], os.path.join(tmp, f"{name}.r.json"))
                if cd != cr:
                    problems.append(f"candidates differ: driver API {cd} vs runtime API {cr}")
            except (RuntimeError, subprocess.TimeoutExpired, sqlite3.Error) as e:
                problems = [str(e)]
            if problems:
                failures += 1
                print(f"FAIL {name}: " + "; ".join(problems))
            else:
                print(f"ok   {name}: {len(d)} launches, {len(cd)} candidates, identical")
    print(f"compare_twins: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
