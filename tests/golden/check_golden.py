#!/usr/bin/env python3
"""Golden tests: input trace -> `kfuse analyze --json` -> the expected report in tests/golden/analyze/.

Inputs are shipped traces, the shared real traces, and traces of the driver-API examples recorded here with
`kfuse record` on the emulator's stand-in libcuda.so.1 ("record:" cases: record, then analyze).

Unstable fields (the input path) are left out before comparing. Run with --update to rewrite the golden files
after an intended change, and review the diff like code.

Numbers: integers, strings and booleans must be equal; floating-point numbers (a float on either side) are equal
when they differ by at most REL_TOL = 1e-9 of the larger magnitude (a different compiler or libm may round the
cost model's arithmetic differently in the last bits; a changed rule moves numbers by far more than that).

Usage: check_golden.py --kfuse PATH --source DIR --shared DIR --build DIR [--update]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# name -> input, relative to the source dir ("src:") or the shared data dir ("shared:").
CASES = {
    "demo_chain": "src:examples/traces/demo_chain.json",
    "kineto_simple_add": "shared:kineto/hta_simple_add.json.gz",
    "kineto_alexnet": "shared:kineto/hta_alexnet_a100.json.gz",
    "kineto_event_sync": "shared:kineto/hta_event_sync_multi_stream.json.gz",
    "kineto_six_streams": "shared:kineto/hta_six_streams_rank0.json.gz",
    "kineto_bert_h100": "shared:kineto/tracelens_bert_small_h100.json.gz",
    "kineto_amd_mi250": "shared:kineto/hta_amd_mi250.json.gz",
    "nsys_saxpy_a100": "shared:nsys/pipit_saxpy_a100.sqlite",
    "nsys_rtx3080": "shared:nsys/nsysai_mock_rtx3080.sqlite",
    # Recorded on the emulator: what a CUDA engineer would fuse (the elementwise chain end to end, bias add ->
    # GELU, the small independent kernels horizontally) must come out proven; the stencil must be blocked.
    "emulator_elementwise_chain": "record:elementwise_chain",
    "emulator_mlp_block": "record:mlp_block",
    "emulator_many_small_kernels": "record:many_small_kernels",
    "emulator_stencil": "record:stencil",
}


REL_TOL = 1e-9


def same(got, want, path="$"):
    """Returns None when equal (floats within REL_TOL), else the path of the first difference."""
    if isinstance(got, float) or isinstance(want, float):
        if isinstance(got, bool) or isinstance(want, bool) or not isinstance(got, (int, float)) \
                or not isinstance(want, (int, float)):
            return path
        return None if abs(got - want) <= REL_TOL * max(abs(got), abs(want)) else path
    if type(got) is not type(want):
        return path
    if isinstance(got, dict):
        for key in sorted(set(got) | set(want)):
            if key not in got or key not in want:
                return f"{path}.{key}"
            d = same(got[key], want[key], f"{path}.{key}")
            if d:
                return d
        return None
    if isinstance(got, list):
        if len(got) != len(want):
            return f"{path} (length {len(got)} != {len(want)})"
        for i, (g, w) in enumerate(zip(got, want)):
            d = same(g, w, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if got == want else path


def normalize(report):
    report["input"].pop("path", None)
    return report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    golden_dir = os.path.join(args.source, "tests", "golden", "analyze")
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in CASES.items():
            where, rel = spec.split(":", 1)
            if where == "record":
                path = os.path.join(tmp, rel + ".sqlite")
                program = os.path.join(args.build, "examples", "driver_api", rel)
                env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(args.build, "standin"))
                p = subprocess.run([args.kfuse, "-q", "record", "-o", path, "--", program], env=env,
                                   capture_output=True, text=True, timeout=300)
                if p.returncode != 0:
                    print(f"FAIL {name}: kfuse record exited {p.returncode}: {p.stderr.strip()[-400:]}")
                    failed += 1
                    continue
            else:
                path = os.path.join(args.source if where == "src" else args.shared, rel)
            if not os.path.exists(path):
                # A missing input is a failure, never a skip: a clone without ../shared must not go green.
                print(f"FAIL {name}: input {path} missing (the shared traces belong beside the project, in ../shared)")
                failed += 1
                continue
            out = os.path.join(tmp, name + ".json")
            p = subprocess.run([args.kfuse, "-q", "analyze", path, "--json", out, "--no-store"],
                               capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                print(f"FAIL {name}: kfuse analyze exited {p.returncode}: {p.stderr.strip()}")
                failed += 1
                continue
            with open(out) as f:
                got = normalize(json.load(f))
            golden = os.path.join(golden_dir, name + ".json")
            if args.update:
                with open(golden, "w") as f:
                    json.dump(got, f, indent=1, sort_keys=True)
                    f.write("\n")
                print(f"UPDATED {name}")
                passed += 1
                continue
            if not os.path.exists(golden):
                print(f"FAIL {name}: no golden file {golden} (run with --update)")
                failed += 1
                continue
            with open(golden) as f:
                want = json.load(f)
            diff = same(got, want)
            if diff:
                print(f"FAIL {name}: report differs from {golden} (relative tolerance {REL_TOL} on floats)")
                print(f"  first difference at {diff}")
                for key in sorted(set(got) | set(want)):
                    if same(got.get(key), want.get(key)):
                        print("    got:  " + json.dumps(got.get(key))[:400])
                        print("    want: " + json.dumps(want.get(key))[:400])
                        break
                failed += 1
            else:
                passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
