#!/usr/bin/env python3
"""Golden tests of the fusion passes: one per fusion kind, each a `kfuse ptx opt` pipeline over the examples' nvcc
PTX whose output (the fused kernel alone, after `keep-only`) must equal tests/golden/ptx_opt/NAME.ptx and compile
with ptxas. Run with --update to rewrite the goldens after a deliberate change, then read the diff.

Usage: check_ptx_opt.py --kfuse PATH --build DIR [--update] [CASE...]
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (example PTX files, pipeline). Element maps and launch shapes are the ones `kfuse analyze --json` reports
# for the examples' proven candidates (the candidate's "epilogue" object and its launches).
CASES = {
    "vertical": (["elementwise_chain"], "fuse-vertical{kernels=scale+add,name=fused,equal=0.1=1.0+0.3=1.3}"),
    "horizontal": (["many_small_kernels"],
                   "fuse-horizontal{kernels=axpb+square,shapes=4/256+2/128,layout=block,name=fused}"),
    "block-level": (["residual_layernorm"], "fuse-block-level{kernels=residual_add_rows+layernorm,name=fused}"),
    "epilogue": (["mlp_block"], "fuse-epilogue{producer=matmul,consumers=bias_add+gelu,producer-param=2,"
                                "consumer-param=0,element-bytes=4,shape=32/256,name=fused}"),
    "prologue": (["activation_matmul"], "fuse-prologue{producer=silu,consumer=matmul_tiled,producer-param=1,"
                                        "consumer-param=0,element-bytes=4,producer-shape=16/256,"
                                        "consumer-shape=4x4/16x16,name=fused}"),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()
    ptx_dir = os.path.join(args.build, "examples", "driver_api", "ptx")
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="kfuse_ptx_opt_") as tmp:
        for name in args.cases or CASES:
            inputs, pipeline = CASES[name]
            out = os.path.join(tmp, name + ".ptx")
            p = subprocess.run([args.kfuse, "-q", "ptx", "opt", *[os.path.join(ptx_dir, i + ".ptx") for i in inputs],
                                "--passes=" + pipeline + ",cleanup{kernels=fused},keep-only{kernels=fused}", "-o", out],
                               capture_output=True, text=True, timeout=300)
            problems = []
            if p.returncode != 0:
                problems.append(f"kfuse ptx opt exited {p.returncode}: {p.stderr.strip()[-600:]}")
            else:
                with open(out) as f:
                    got = f.read()
                golden = os.path.join(HERE, name + ".ptx")
                if args.update:
                    with open(golden, "w") as f:
                        f.write(got)
                if not os.path.exists(golden):
                    problems.append(f"no golden {golden} (run with --update)")
                else:
                    with open(golden) as f:
                        want = f.read()
                    if got != want:
                        gl, wl = got.splitlines(), want.splitlines()
                        line = next((i for i in range(min(len(gl), len(wl))) if gl[i] != wl[i]), min(len(gl), len(wl)))
                        problems.append(f"differs from {golden} at line {line + 1}: got "
                                        f"{gl[line] if line < len(gl) else '<end>'!r}, want "
                                        f"{wl[line] if line < len(wl) else '<end>'!r}")
                r = subprocess.run([args.kfuse, "-q", "ptx", "roundtrip", out, "--arch", "sm_90"], capture_output=True,
                                   text=True, timeout=300)
                if r.returncode != 0:
                    problems.append("the fused kernel does not compile with ptxas: " + (r.stdout + r.stderr)[-600:])
            if problems:
                failed += 1
                print(f"FAIL {name}: " + "; ".join(problems))
            else:
                passed += 1
                print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
