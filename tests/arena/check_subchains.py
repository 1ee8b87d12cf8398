#!/usr/bin/env python3
"""Sub-chain test: `kfuse analyze` never reports a blocked vertical chain while a legal part of it goes unreported.

For each trace (the driver-API examples and the red-team programs' legal modes, recorded on the emulator's stand-in
libcuda.so.1, each also as its arena twin, see check_arena.py), every blocked vertical candidate's every occurrence
is cut into all its windows of two or more consecutive launches. Each window is judged on its own: a copy of the
trace keeps, on that stream, only the window's launches (a chain with nothing before or after it), and
`kfuse analyze --all` judges it there. Where that verdict is `proven`, the full report must hold a proven vertical
candidate with an occurrence that contains every launch of the window (the window itself or a longer legal chain
around it).

Usage: check_subchains.py --kfuse PATH --build DIR --redteam-program PATH --redteam-ptx DIR
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_arena import make_arena  # noqa: E402

EXAMPLES = ["elementwise_chain", "mlp_block", "stencil", "residual_layernorm", "activation_matmul", "reduction"]
# Red-team cases whose legal mode has a blocked chain of three or more launches.
REDTEAM = ["sub_chain_tl", "waw_read_between", "waw_slowfill_fill_rd", "waw_rd_slowfill_fill"]


def analyze(kfuse, trace, out):
    p = subprocess.run([kfuse, "-q", "analyze", "--all", "--no-store", "--top", "1000", "--json", out, trace],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"kfuse analyze {trace} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    with open(out) as f:
        return json.load(f)["candidates"]


def only_window(src, dst, window):
    """Copies `src` to `dst` keeping, on the window's stream, only the window's launches."""
    shutil.copyfile(src, dst)
    db = sqlite3.connect(dst)
    try:
        marks = ",".join("?" * len(window))
        streams = {r[0] for r in db.execute(f"SELECT stream_id FROM launch WHERE id IN ({marks})", window)}
        if len(streams) != 1:
            raise RuntimeError(f"{src}: launches {window} are not on one stream")
        stream = streams.pop()
        gone = [r[0] for r in db.execute(f"SELECT id FROM launch WHERE stream_id = ? AND id NOT IN ({marks})",
                                         [stream] + window)]
        for launch in gone:
            db.execute("DELETE FROM metric WHERE launch_id = ?", (launch,))
            db.execute("DELETE FROM launch WHERE id = ?", (launch,))
        db.commit()
    finally:
        db.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--redteam-program", required=True)
    ap.add_argument("--redteam-ptx", required=True)
    args = ap.parse_args()
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(args.build, "standin"))
    failed = windows = legal = 0
    with tempfile.TemporaryDirectory() as tmp:
        def record(name, argv):
            path = os.path.join(tmp, name + ".sqlite")
            p = subprocess.run([args.kfuse, "-q", "record", "-o", path, "--"] + argv, env=env, capture_output=True,
                               text=True, timeout=300)
            if p.returncode != 0:
                raise RuntimeError(f"kfuse record {name} exited {p.returncode}: {p.stderr.strip()[-400:]}")
            return path

        traces = [record(e, [os.path.join(args.build, "examples", "driver_api", e)]) for e in EXAMPLES]
        traces += [record("redteam-" + c, [args.redteam_program, args.redteam_ptx, c, "legal"]) for c in REDTEAM]
        for t in list(traces):
            arena = t.replace(".sqlite", ".arena.sqlite")
            if make_arena(t, arena):
                traces.append(arena)
        for trace in traces:
            name = os.path.basename(trace)
            failed_before = failed
            cands = analyze(args.kfuse, trace, os.path.join(tmp, "report.json"))
            proven = [set(o) for c in cands if c["kind"] == "vertical" and c["legality"] == "proven"
                      for o in c["occurrence_launches"]]
            blocked = [c for c in cands if c["kind"] == "vertical" and c["legality"] == "blocked"]
            for c in blocked:
                for occ in c["occurrence_launches"]:
                    for size in range(2, len(occ)):
                        for start in range(len(occ) - size + 1):
                            window = occ[start:start + size]
                            windows += 1
                            part = os.path.join(tmp, "window.sqlite")
                            if os.path.exists(part):
                                os.remove(part)
                            only_window(trace, part, window)
                            alone = analyze(args.kfuse, part, os.path.join(tmp, "window.json"))
                            if not any(c2["legality"] == "proven" and window in c2["occurrence_launches"]
                                       for c2 in alone):
                                continue
                            legal += 1
                            if not any(set(window) <= p for p in proven):
                                failed += 1
                                print(f"FAIL {name}: launches {window} are a legal chain on their own, inside the "
                                      f"blocked {' -> '.join(k['name'] for k in c['kernels'])} (launches {occ}), "
                                      f"but no proven candidate covers them")
            if failed == failed_before:
                print(f"ok   {name}: {len(blocked)} blocked vertical candidates")
    print(f"{windows} windows of blocked chains judged alone, {legal} legal; {failed} unreported")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
