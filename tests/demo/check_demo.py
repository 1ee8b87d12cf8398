#!/usr/bin/env python3
"""End-to-end test of `kfuse demo` on the stand-in driver (and of `kfuse compare` on its two recordings): the
before/after table it prints is checked against the
traces, reports and run statistics it wrote (launch counts from the traces' launch tables, DRAM bytes from their
metric tables, the injector's statistics, equal checksums); the default temporary directory is removed.

Usage: check_demo.py --kfuse BIN --build BUILD
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL " + msg)
    return 1


def mb(text):
    v, unit = text.split()
    return float(v) * {"kB": 1e3, "MB": 1e6, "GB": 1e9}[unit]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kfuse_demo_test_")
    failures = 0
    try:
        out = os.path.join(tmp, "demo")
        env = dict(os.environ, TMPDIR=tmp)
        p = subprocess.run([args.kfuse, "demo", "-o", out], capture_output=True, text=True, env=env, timeout=900)
        text = p.stdout
        if p.returncode != 0:
            return fail(f"kfuse demo exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        rows = {}
        for line in text.splitlines():
            m = re.match(r"\s{4}(kernel launches the driver received|GPU time on \S+ \([^)]*\)|DRAM bytes \([^)]*\)|"
                         r"output checksum)\s+(\S+(?: \S+)?)\s+(\S+(?: \S+)?)(?:\s+(\S+))?\s*$", line)
            if m:
                rows[m.group(1).split(" (")[0] if m.group(1).startswith(("GPU", "DRAM")) else m.group(1)] = m.groups()[1:]
        for key in ("kernel launches the driver received", "DRAM bytes", "output checksum"):
            if key not in rows:
                failures += fail(f"the table has a row '{key}':\n{text}")
        if failures:
            return 1

        def count(trace, sql):
            with sqlite3.connect(os.path.join(out, trace)) as db:
                return db.execute(sql).fetchone()[0]

        launches = [count(t, "SELECT COUNT(*) FROM launch") for t in ("before.sqlite", "after.sqlite")]
        if [int(x) for x in rows["kernel launches the driver received"][:2]] != launches:
            failures += fail(f"launch counts {rows['kernel launches the driver received']} vs traces {launches}")
        dram = [count(t, "SELECT SUM(value) FROM metric WHERE name IN ('dram_bytes_read', 'dram_bytes_written')")
                for t in ("before.sqlite", "after.sqlite")]
        for shown, real in zip(rows["DRAM bytes"][:2], dram):
            if abs(mb(shown) - real) > 0.01 * real:
                failures += fail(f"DRAM bytes {shown} vs {real} in the trace")
        if dram[1] >= dram[0]:
            failures += fail(f"the fused run moves fewer bytes: {dram}")
        if rows["output checksum"][0] != rows["output checksum"][1] or rows["output checksum"][2] != "equal":
            failures += fail(f"checksums: {rows['output checksum']}")
        with open(os.path.join(out, "run.json")) as f:
            stats = json.load(f)
        if stats["launches_seen"] != launches[0] or stats["launches_issued"] != launches[1]:
            failures += fail(f"run statistics {stats['launches_seen']} -> {stats['launches_issued']} vs {launches}")
        # The GPU time row names the GPU the report costed (the trace's own, h100-sxm for the stand-in's recording).
        with open(os.path.join(out, "before.json")) as f:
            costed = json.load(f)["gpu"]["short_name"]
        if not any(line.strip().startswith(f"GPU time on {costed} (") for line in text.splitlines()):
            failures += fail(f"the GPU time row names {costed}, the GPU before.json was costed for:\n{text}")
        for name in ("before.json", "after.json", "1-record.log", "4-run.log"):
            if not os.path.exists(os.path.join(out, name)):
                failures += fail(f"the demo wrote {name}")

        # `kfuse compare` on the two recordings: every launch the plans removed is accounted for, kernel by kernel,
        # against the traces themselves and the plan files.
        p = subprocess.run([args.kfuse, "compare", "--json", os.path.join(out, "before.sqlite"),
                            os.path.join(out, "after.sqlite")], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            failures += fail(f"kfuse compare exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        else:
            cmp = json.loads(p.stdout)
            if [cmp["launches_before"], cmp["launches_after"]] != launches:
                failures += fail(f"kfuse compare counts {cmp['launches_before']} -> {cmp['launches_after']} vs {launches}")
            for k in cmp["kernels"]:
                if k["before"]["count"] - k["replaced"] != k["after"]["count"] and not k["fused_by"]:
                    failures += fail(f"kfuse compare: {k['name']}: {k['before']['count']} - {k['replaced']} replaced "
                                     f"!= {k['after']['count']}")
            plans = sorted(os.listdir(os.path.join(out, "plans")))
            for p_ in cmp["plans"]:
                with open(os.path.join(out, "plans", os.path.basename(p_["dir"].rstrip("/")), "plan.json")) as f:
                    plan = json.load(f)
                if p_["fused_kernel"] != plan["fused_kernel"]["name"] or \
                        len(p_["replaced_kernels"]) != len(plan["pattern"]["kernels"]):
                    failures += fail(f"kfuse compare: plan {p_['dir']} vs its plan.json")
            removed = sum(p_["occurrences"] * (len(p_["replaced_kernels"]) - 1) for p_ in cmp["plans"])
            if not cmp["plans"] or removed != launches[0] - launches[1]:
                failures += fail(f"kfuse compare: plans {cmp['plans']} account for {removed} removed launches, "
                                 f"the traces for {launches[0] - launches[1]} (plans {plans})")
        p = subprocess.run([args.kfuse, "compare", os.path.join(out, "before.sqlite"), os.path.join(tmp, "none.sqlite")],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or "the trace after" not in p.stderr or "none.sqlite" not in p.stderr:
            failures += fail(f"kfuse compare of a missing trace: exit {p.returncode}, {p.stderr}")

        # Without -o the demo works in a temporary directory and removes it.
        private = os.path.join(tmp, "private-tmp")
        os.makedirs(private)
        p = subprocess.run([args.kfuse, "demo", "--trace", os.path.join(tmp, "none.json")], capture_output=True,
                           text=True, env=dict(os.environ, TMPDIR=private), timeout=900)
        if p.returncode != 0 or "equal" not in p.stdout:
            failures += fail(f"kfuse demo with a temporary directory:\n{p.stdout}\n{p.stderr}")
        if os.listdir(private):
            failures += fail(f"left behind in the temporary directory: {os.listdir(private)}")
        print(f"kfuse demo: table checked against its traces ({launches[0]} -> {launches[1]} launches, "
              f"{dram[0]:.0f} -> {dram[1]:.0f} DRAM bytes); {failures} failure(s)")
        return 1 if failures else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
