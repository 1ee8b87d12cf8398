#!/usr/bin/env python3
"""`kfuse export --chrome`: the Chrome trace of an emulator recording (the elementwise-chain example on the stand-in)
and of a real PyTorch profiler trace from ../shared/data is checked against the Trace Event Format
(trace_event_format.schema.json) and against its input: one kernel slice per launch, copies and sets, every track
named, and each candidate occurrence a well-formed flow (one start, one end bound to its slice, in time order) with
an annotated slice carrying the candidate's kind, legality and predicted saving.

Usage: check_chrome.py --kfuse BIN --source SRC --build BUILD
"""
import argparse
import collections
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL " + what)


def validate(path, schema, what):
    with open(path) as f:
        doc = json.load(f)
    try:
        import jsonschema
        jsonschema.validate(doc, schema)
    except ImportError:
        pass
    except Exception as e:
        check(False, f"{what}: Trace Event Format: {str(e)[:500]}")
    return doc


def structure(doc, what, kernels, copies, sets):
    ev = doc["traceEvents"]
    count = collections.Counter((e["ph"], e.get("cat")) for e in ev)
    check(count[("X", "kernel")] == kernels, f"{what}: {count[('X', 'kernel')]} kernel slices, {kernels} launches")
    check(count[("X", "memcpy")] == copies, f"{what}: {count[('X', 'memcpy')]} copy slices, {copies} copies")
    check(count[("X", "memset")] == sets, f"{what}: {count[('X', 'memset')]} set slices, {sets} sets")
    named = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    processes = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    for e in ev:
        if e["ph"] == "X" and e.get("cat") in ("kernel", "memcpy", "memset", "kfuse.candidate"):
            check((e["pid"], e["tid"]) in named and e["pid"] in processes,
                  f"{what}: the track of '{e['name'][:60]}' is named")
            break
    flows = collections.defaultdict(list)
    for e in ev:
        if e["ph"] in "stf" and e.get("cat") == "kfuse.candidate":
            flows[e["id"]].append(e)
    check(flows, f"{what}: candidate flows")
    for fid, steps in flows.items():
        phases = [s["ph"] for s in steps]
        ok = phases[0] == "s" and phases[-1] == "f" and phases.count("s") == 1 and phases.count("f") == 1
        ok = ok and all(a["ts"] <= b["ts"] for a, b in zip(steps, steps[1:])) and steps[-1].get("bp") == "e"
        check(ok, f"{what}: flow {fid} is s (t...) f in time order, its end bound to the slice: {phases}")
        if not ok:
            break
    annotated = [e for e in ev if e["ph"] == "X" and e.get("cat") == "kfuse.candidate"]
    check(len(annotated) == len(flows), f"{what}: one annotated slice per occurrence")
    for e in annotated[:1]:
        for key in ("kind", "legality", "confidence", "predicted_saving_per_occurrence_ns", "kernels"):
            check(key in e["args"], f"{what}: candidate slice has args.{key}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    with open(os.path.join(args.source, "tests", "export", "trace_event_format.schema.json")) as f:
        schema = json.load(f)
    tmp = tempfile.mkdtemp(prefix="kfuse_chrome_")
    try:
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(args.build, "standin"))
        trace = os.path.join(tmp, "chain.sqlite")
        program = os.path.join(args.build, "examples", "driver_api", "elementwise_chain")
        p = subprocess.run([args.kfuse, "-q", "record", "-o", trace, "--", program], env=env, capture_output=True,
                           text=True, timeout=600)
        check(p.returncode == 0, "record the chain: " + p.stderr)
        out = os.path.join(tmp, "chain.chrome.json")
        p = subprocess.run([args.kfuse, "export", trace, "--chrome", out], capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, "export --chrome of a recording: " + p.stderr)
        doc = validate(out, schema, "emulator recording")
        with sqlite3.connect(trace) as db:
            n = [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("launch", "memcpy", "memset")]
        structure(doc, "emulator recording", *n)
        check("launch call" in doc["otherData"]["placement"], "the emulator recording says where work is placed")

        kineto = os.path.join(args.source, "..", "shared", "data", "kineto", "hta_six_streams_rank0.json.gz")
        if os.path.exists(kineto):
            out = os.path.join(tmp, "kineto.chrome.json")
            p = subprocess.run([args.kfuse, "export", kineto, "--chrome", out], capture_output=True, text=True,
                               timeout=600)
            check(p.returncode == 0, "export --chrome of a Kineto trace: " + p.stderr)
            doc = validate(out, schema, "Kineto trace")
            with gzip.open(kineto, "rt") as f:
                src = json.load(f)
            cats = collections.Counter(e.get("cat", "").lower() for e in src["traceEvents"] if e.get("ph") == "X")
            structure(doc, "Kineto trace", cats["kernel"], cats["gpu_memcpy"], cats["gpu_memset"])
        print(f"chrome export: {len(failures)} failure(s)")
        return 1 if failures else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
