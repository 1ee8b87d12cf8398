#!/usr/bin/env python3
"""Checks that the committed generated schemas under schemas/ (`kfuse_schema_gen --list`: the trace's from
core/src/trace_fields.h, the plan's from rewriter/src/plan.cpp, ...) are what kfuse_schema_gen generates from
their field lists; prints the difference and how to regenerate if not.

Usage: check_generated.py KFUSE_SCHEMA_GEN SOURCE_DIR
"""
import difflib
import os
import subprocess
import sys


def main(gen, source):
    names = subprocess.run([gen, "--list"], check=True, capture_output=True, text=True).stdout.split()
    stale = 0
    for name in names:
        path = os.path.join(source, "schemas", name)
        generated = subprocess.run([gen, "--print", name], check=True, capture_output=True, text=True).stdout
        committed = ""
        if os.path.exists(path):
            with open(path) as f:
                committed = f.read()
        if committed == generated:
            print(f"ok {path}")
            continue
        stale += 1
        print(f"FAIL {path} differs from what {os.path.basename(gen)} --print {name} generates:")
        sys.stdout.writelines(difflib.unified_diff(committed.splitlines(True), generated.splitlines(True),
                                                   f"committed/{name}", f"generated/{name}"))
    if stale:
        print(f"\nregenerate with: {gen} --write {source}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
