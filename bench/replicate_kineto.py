#!/usr/bin/env python3
"""Writes a Kineto trace made of N copies of another one, each shifted in time past the previous and with its
correlation and External ids offset (so the copies do not join each other): a larger real-shaped input for timing
`kfuse analyze` (README performance table).

Usage: replicate_kineto.py IN.json.gz OUT.json.gz [N=10]
"""
import gzip
import json
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    copies = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    times = [e["ts"] for e in events if isinstance(e, dict) and isinstance(e.get("ts"), (int, float))]
    span = max(times) - min(times) + 1000
    out = []
    for k in range(copies):
        for e in events:
            if not isinstance(e, dict):
                out.append(e)
                continue
            if k > 0 and e.get("ph") == "M":
                continue
            e = dict(e)
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] = e["ts"] + k * span
            args = e.get("args")
            if isinstance(args, dict):
                args = dict(args)
                for key in ("correlation", "External id", "external id"):
                    if isinstance(args.get(key), int):
                        args[key] += k * 10_000_000
                e["args"] = args
            out.append(e)
    doc["traceEvents"] = out
    with gzip.open(dst, "wt") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()
