#!/usr/bin/env python3
"""Legality soundness suite: `proven` must never be wrong.

Each case launches a producer and a consumer (tests/soundness/soundness.cu, real nvcc PTX) on kfuse's CPU stand-in
driver under `kfuse record`, then runs `kfuse analyze --all --json` (every pattern, also those predicted to save nothing) and checks the vertical candidates of the pair:
every illegal fusion must be refused (blocked) or downgraded (likely) with its reason, and every legal twin must
stay proven. Every proven candidate is also rewritten (`kfuse rewrite --no-gain`), which compiles the fused kernel
and validates it against the original launches on the emulator, bit for bit.

Usage: check_soundness.py --kfuse PATH --program PATH --ptx-dir DIR --standin DIR [CASE...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# case -> expected vertical candidates of the pair, in any order: (producer, consumer, legality, reason, occurrences)
CASES = {
    # The example: prod(buf, x, 0, n) then cons(y, buf, 1, n): thread i reads what thread i + 1 wrote.
    "shift_param_differs": [("prod", "cons", "blocked", "stencil-like", 1)],
    "shift_param_equal": [("prod", "cons", "proven", "thread-local for these arguments", 1)],
    "shift_param_equal_nonzero": [("prod", "cons", "proven", "thread-local for these arguments", 1)],
    # The same pair once with equal and once with different shifts: two candidates, each checked on its own.
    "shift_param_mixed": [("prod", "cons", "proven", "legality checked on 1 occurrence", 1),
                          ("prod", "cons", "blocked", "stencil-like", 1)],
    # Off by one through a constant in the consumer's code.
    "const_off_by_one": [("prod", "cons_next", "blocked", "stencil-like", 1)],
    "const_same": [("prod", "cons_same", "proven", "thread-local for these arguments", 1)],
    # The same consumer on one element fewer: still not thread-local, but every element it loads is one the producer
    # writes, so each load can recompute its element (a prologue fusion, rewritten and validated like the rest).
    "const_next_inside": [("prod", "cons_next", "proven", "prologue: prod writes element p", 1)],
    # Off by one through the pointer argument: the consumer's pointer is one float further into the buffer.
    "pointer_offset_differs": [("prod", "cons_same", "blocked", "stencil-like", 1)],
    "pointer_offset_equal": [("prod", "cons_same", "proven", "thread-local for these arguments", 1)],
    # A producer writing an element from two threads; one writing the same elements from every block.
    "write_twice": [("prod_twice", "cons_same", "blocked", "stencil-like", 1)],
    # (every block writes out[tid.x]; the consumer reads out[i]: forms that differ, so not proven)
    "write_per_block": [("prod_per_block", "cons_same", "likely", "different functions of the thread", 1)],
    # Transposed indices: different functions of the thread.
    "transposed": [("prod2d", "cons2d_transposed", "likely", "different functions of the thread", 1)],
    "row_major_2d": [("prod2d", "cons2d", "proven", "thread-local for these arguments", 1)],
    # A guard that differs only by a parameter's value: thread 7 writes what thread 9 reads. Not thread-local; in one
    # block a barrier between the two bodies makes it legal (block-level); with four blocks every block's thread 7
    # writes element 0, which every consumer block reads.
    "guard_param_differs": [("pick", "take", "proven", "block-level: no block of take", 1)],
    "guard_param_differs_blocks": [("pick", "take", "blocked", "block-level fusion refused: take block 0", 1)],
    "guard_param_equal": [("pick", "take", "proven", "thread-local for these arguments", 1)],
    # Legal shapes that must stay proven: float4 accesses, 64-bit indices with an early return, two elements per
    # thread (each thread reads its own two, at different constants of one linear form).
    "vec4": [("prod_vec4", "cons_vec4", "proven", "thread-local for these arguments", 1)],
    "wide_index_early_return": [("prod_wide", "cons_wide", "proven", "thread-local for these arguments", 1)],
    "two_per_thread": [("prod_pair", "cons_pair", "proven", "thread-local for these arguments", 1)],
    # Data passed through a module variable that no parameter shows.
    "hidden_global": [("prod_hidden", "cons_hidden", "likely", "not based on one of its pointer parameters", 1)],
}


def run_case(args, name, expected, tmp):
    trace = os.path.join(tmp, name + ".sqlite")
    report = os.path.join(tmp, name + ".json")
    env = dict(os.environ, LD_LIBRARY_PATH=args.standin)
    p = subprocess.run([args.kfuse, "-q", "record", "-o", trace, "--", args.program, args.ptx_dir, name], env=env,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return [f"kfuse record exited {p.returncode}: {p.stderr.strip()[-400:]}"]
    p = subprocess.run([args.kfuse, "-q", "analyze", trace, "--all", "--json", report, "--no-store"], capture_output=True,
                       text=True, timeout=300)
    if p.returncode != 0:
        return [f"kfuse analyze exited {p.returncode}: {p.stderr.strip()}"]
    with open(report) as f:
        got = json.load(f)
    problems = []
    pairs = {}
    for c in got["candidates"]:
        if c["kind"] != "vertical":
            continue
        key = tuple(k["name"] for k in c["kernels"])
        pairs.setdefault(key, []).append(c)
    for producer, consumer, legality, reason, occurrences in expected:
        found = pairs.get((producer, consumer), [])
        match = [c for c in found if c["legality"] == legality and c["occurrences"] == occurrences
                 and any(reason in r for r in c["reasons"])]
        if not match:
            seen = [(c["legality"], c["occurrences"], c["reasons"]) for c in found] or "no such candidate"
            problems.append(f"expected {producer} -> {consumer} {legality} on {occurrences} occurrence(s) with a reason "
                            f"containing '{reason}'; got {json.dumps(seen)[:1200]}")
            continue
        c = match[0]
        if c["checked"]["occurrences"] != c["occurrences"]:
            problems.append(f"{producer} -> {consumer}: checked on {c['checked']['occurrences']} of "
                            f"{c['occurrences']} occurrences")
        if legality == "proven":
            plan = os.path.join(tmp, f"{name}-plan-{c['rank']}")
            p = subprocess.run([args.kfuse, "-q", "rewrite", trace, "--no-gain", "--candidate", str(c["rank"]), "-o",
                                plan], env=env, capture_output=True, text=True, timeout=300)
            if p.returncode != 0 or "validation: passed" not in p.stdout:
                problems.append(f"{producer} -> {consumer}: the proven fusion did not rewrite and validate: exit "
                                f"{p.returncode}: {(p.stdout + p.stderr).strip()[-600:]}")
        found.remove(c)
    # Nothing else may claim a proof for these kernels.
    for key, rest in pairs.items():
        for c in rest:
            if c["legality"] == "proven" and any(key == (e[0], e[1]) for e in expected):
                problems.append(f"unexpected proven candidate {key}: {c['reasons']}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--ptx-dir", required=True)
    ap.add_argument("--standin", required=True)
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()
    names = args.cases or list(CASES)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            problems = run_case(args, name, CASES[name], tmp)
            if problems:
                failed += 1
                print(f"FAIL {name}")
                for p in problems:
                    print("  " + p)
            else:
                passed += 1
                print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
