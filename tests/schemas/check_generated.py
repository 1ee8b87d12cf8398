#!/usr/bin/env python3
"""Checks that the committed trace schemas (schemas/trace.sql, schemas/trace.schema.json) are what
kfuse_schema_gen generates from core/src/trace_fields.h; prints the difference and how to regenerate if not.

Usage: check_generated.py KFUSE_SCHEMA_GEN SOURCE_DIR
"""
import difflib
import os
import subprocess
import sys


def main(gen, source):
    stale = 0
    for flag, name in [("--sql", "trace.sql"), ("--json", "trace.schema.json")]:
        path = os.path.join(source, "schemas", name)
        generated = subprocess.run([gen, flag], check=True, capture_output=True, text=True).stdout
        with open(path) as f:
            committed = f.read()
        if committed == generated:
            print(f"ok {path}")
            continue
        stale += 1
        print(f"FAIL {path} differs from what {os.path.basename(gen)} {flag} generates:")
        sys.stdout.writelines(difflib.unified_diff(committed.splitlines(True), generated.splitlines(True),
                                                   f"committed/{name}", f"generated/{name}"))
    if stale:
        print(f"\nregenerate with: {gen} --write {source}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
