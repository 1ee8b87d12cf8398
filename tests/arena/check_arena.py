#!/usr/bin/env python3
"""Arena test: a program whose tensors are carved out of one large allocation (as PyTorch's caching allocator and
llm.c lay them out) must get exactly the verdicts of the same program with one allocation per tensor.

For every driver-API example: record it with `kfuse record` on the emulator's stand-in libcuda.so.1, then make its
arena twin: a copy of the trace in which every device allocation is replaced by one allocation spanning them all
(same addresses, same launches; each pointer argument now points into the arena at its old allocation's offset).
`kfuse analyze --all --json` on both must give the same candidates (ids, kinds, legality, confidence, occurrences,
conflicts), the same costs and savings, and the same data-flow graph (edge counts by kind). Text that names an
allocation (reasons, edge sentences) and the proof's argument tuples (pointer offsets are arguments the proof
reads) are left out of the comparison.

mlp_block is also compared with mlp_block_arena, the same program built to carve its tensors out of one cuMemAlloc
itself: a real arena program, not a rewritten trace.

Usage: check_arena.py --kfuse PATH --build DIR
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

EXAMPLES = ["vector_add", "elementwise_chain", "mlp_block", "many_small_kernels", "histogram", "reduction", "stencil",
            "residual_layernorm", "activation_matmul"]
# Fields of a candidate that depend on allocation numbering or pointer offsets, not on the verdict.
UNSTABLE = {"reasons", "edges", "checked", "remedies"}


def make_arena(src, dst):
    """Copies trace `src` to `dst` with every device allocation merged into one."""
    shutil.copyfile(src, dst)
    db = sqlite3.connect(dst)
    try:
        rows = db.execute("SELECT id, context_id, address, size, alloc_ns, free_ns FROM allocation "
                          "WHERE kind = 'device'").fetchall()
        if len(rows) < 2:
            return False
        lo = min(r[2] for r in rows)
        hi = max(r[2] + r[3] for r in rows)
        alloc_ns = None if any(r[4] is None for r in rows) else min(r[4] for r in rows)
        free_ns = None if any(r[5] is None for r in rows) else max(r[5] for r in rows)
        arena = db.execute("SELECT max(id) FROM allocation").fetchone()[0] + 1
        offset = {r[0]: r[2] - lo for r in rows}
        db.execute("INSERT INTO allocation(id, context_id, address, size, kind, alloc_ns, free_ns) "
                   "VALUES (?, ?, ?, ?, 'device', ?, ?)", (arena, rows[0][1], lo, hi - lo, alloc_ns, free_ns))
        for launch, text in db.execute("SELECT id, pointer_args FROM launch WHERE pointer_args IS NOT NULL").fetchall():
            args = json.loads(text)
            for a in args:  # [param_index, address, allocation_id, offset(, field_offset)]
                if a[2] in offset:
                    a[3] += offset[a[2]]
                    a[2] = arena
            db.execute("UPDATE launch SET pointer_args = ? WHERE id = ?",
                       (json.dumps(args, separators=(",", ":")), launch))
        ids = ",".join(str(i) for i in offset)
        for column in ("memcpy.src_allocation_id", "memcpy.dst_allocation_id", "memset.dst_allocation_id"):
            table, col = column.split(".")
            db.execute(f"UPDATE {table} SET {col} = ? WHERE {col} IN ({ids})", (arena,))
        db.execute(f"DELETE FROM allocation WHERE id IN ({ids})")
        db.commit()
        return True
    finally:
        db.close()


def verdicts(kfuse, trace, out):
    p = subprocess.run([kfuse, "-q", "analyze", "--all", "--no-store", "--top", "1000", "--json", out, trace],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"kfuse analyze {trace} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    with open(out) as f:
        report = json.load(f)
    candidates = [{k: v for k, v in c.items() if k not in UNSTABLE} for c in report["candidates"]]
    return {"candidates": candidates, "edges_by_kind": report["summary"]["edges_by_kind"],
            "predicted_saving_ns": report["summary"]["predicted_saving_ns"]}


def first_difference(a, b, path="$"):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}"
            d = first_difference(a[key], b[key], f"{path}.{key}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} != {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) or isinstance(b, float):
        return None if abs(a - b) <= 1e-9 * max(abs(a), abs(b)) else path
    return None if a == b else path


def lookup(report, path):
    node = report
    for part in path.replace("[", ".[").split(".")[1:]:
        part = part.split(" ")[0]
        if not part:
            continue
        node = node[int(part[1:-1])] if part.startswith("[") else node.get(part)
        if node is None:
            break
    return json.dumps(node)[:300]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(args.build, "standin"))
    passed = failed = 0

    def compare(name, a, b, tmp):
        nonlocal passed, failed
        va = verdicts(args.kfuse, a, os.path.join(tmp, name + ".a.json"))
        vb = verdicts(args.kfuse, b, os.path.join(tmp, name + ".b.json"))
        d = first_difference(va, vb)
        if d:
            print(f"FAIL {name}: the arena's report differs at {d}\n  one allocation per tensor: {lookup(va, d)}\n"
                  f"  arena:                     {lookup(vb, d)}")
            failed += 1
        else:
            legal = sum(c["legality"] == "proven" for c in va["candidates"])
            print(f"ok   {name}: {len(va['candidates'])} candidates ({legal} proven), "
                  f"{sum(va['edges_by_kind'].values())} edges, the same in the arena")
            passed += 1

    with tempfile.TemporaryDirectory() as tmp:
        def record(program):
            path = os.path.join(tmp, program + ".sqlite")
            if os.path.exists(path):
                return path
            p = subprocess.run([args.kfuse, "-q", "record", "-o", path, "--",
                                os.path.join(args.build, "examples", "driver_api", program)],
                               env=env, capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                raise RuntimeError(f"kfuse record {program} exited {p.returncode}: {p.stderr.strip()[-400:]}")
            return path

        for name in EXAMPLES:
            trace = record(name)
            arena = os.path.join(tmp, name + ".arena.sqlite")
            if not make_arena(trace, arena):
                print(f"FAIL {name}: fewer than two device allocations: nothing to merge")
                failed += 1
                continue
            compare(name, trace, arena, tmp)
        compare("mlp_block vs mlp_block_arena", record("mlp_block"), record("mlp_block_arena"), tmp)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
