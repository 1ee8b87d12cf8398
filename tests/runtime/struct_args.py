#!/usr/bin/env python3
"""Records examples/runtime_api/struct_args (kernels whose tensors travel inside a struct passed by value, as in
PyTorch's elementwise kernels; real nvcc output, static cudart) on the stand-in and checks that

  * the trace resolves the pointers inside the struct arguments (launch_pointer_arg.field_offset 0, 8, 16),
  * the dependency graph links the three launches through them (read-after-write edges),
  * `kfuse analyze --all` reports the chain as a candidate that is not proven, saying why (pointers inside a struct
    argument are not followed by the PTX analysis), with byte estimates that are not zero.

Usage: struct_args.py --kfuse BIN --build BUILD [--cuda-lib DIR]
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--cuda-lib")
    a = ap.parse_args()
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(a.build, "standin") +
               (os.pathsep + a.cuda_lib if a.cuda_lib else ""))
    program = os.path.join(a.build, "examples", "runtime_api", "struct_args")
    failures = []
    with tempfile.TemporaryDirectory(prefix="kfuse_struct_args_") as tmp:
        trace = os.path.join(tmp, "t.sqlite")
        subprocess.run([a.kfuse, "-q", "record", "--backend", "hook", "-o", trace, "--", program], env=env,
                       check=True, timeout=300, capture_output=True)
        db = sqlite3.connect(trace)
        rows = db.execute("SELECT launch_id, param_index, field_offset FROM launch_pointer_arg "
                          "ORDER BY launch_id, field_offset").fetchall()
        db.close()
        want = [(1, 2, 0), (1, 2, 8), (2, 2, 0), (2, 2, 8), (2, 2, 16), (3, 2, 0), (3, 2, 8)]
        if rows != want:
            failures.append(f"pointer arguments {rows}, expected {want}")
        report = os.path.join(tmp, "r.json")
        subprocess.run([a.kfuse, "-q", "analyze", trace, "--all", "--no-store", "--json", report], env=env, check=True,
                       timeout=300, capture_output=True)
        with open(report) as f:
            r = json.load(f)
        raw = r["summary"]["edges_by_kind"].get("RAW", 0)
        if raw < 2:
            failures.append(f"{raw} read-after-write edges, expected at least 2")
        chains = [c for c in r["candidates"] if c["kind"] == "vertical" and len(c["kernels"]) == 3]
        if not chains:
            failures.append("no vertical candidate over the three launches: " +
                            json.dumps([c["kernels"] for c in r["candidates"]]))
        for c in chains:
            if c["legality"] == "proven":
                failures.append("the chain is called proven although its pointers travel inside structs")
            why = " ".join(c.get("reasons", []))
            if "a struct passed by value" not in why:
                failures.append(f"the reasons do not say why it is not proven: {why}")
            if not c["cost"].get("bytes_before"):
                failures.append(f"0 bytes before fusion: {c['cost']}")
    for f in failures:
        print("struct_args:", f)
    print("struct_args:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
