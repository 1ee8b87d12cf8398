#!/usr/bin/env python3
"""`kfuse record` and `kfuse run` end to end on the emulator's stand-in libcuda.so.1, kept small enough for the
sanitizer stage (scripts/sanitize.sh asan runs it under ASan + UBSan): the collector and the injector go into a
driver-API program built by the host compiler (instrumented in that build) and into a runtime-API program built by
nvcc (never instrumented). Each program prints what it prints without kfuse, the traces hold its launches, a plan
made from one trace fuses every occurrence under `kfuse run`, and no sanitizer reports anything.

Usage: check_preload.py --kfuse BIN --build BUILD [--asan-runtime LIB]
  --asan-runtime: the shared ASan runtime of an instrumented build; the programs run without kfuse then preload it,
  as `kfuse record` and `kfuse run` do (the stand-in driver is instrumented too).
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402

DRIVER = "driver_api/elementwise_chain"  # three scale+add pairs: one plan, three occurrences
RUNTIME = "runtime_api/vector_add"       # nvcc defaults: static cudart, the kernels in a fatbin


class Checker(Checks):
    detail_chars = 3000

    def __init__(self, args, tmp):
        super().__init__(args, tmp)
        self.env = self.standin_env(args.build, drop=("KFUSE_DISABLE", "LD_PRELOAD"))

    def program(self, name):
        return os.path.join(self.args.build, "examples", *name.split("/"))

    def run(self, argv, what, env=None):
        p = subprocess.run(argv, capture_output=True, text=True, env=env or self.env, timeout=600)
        # A sanitizer's report ends the process with an error; its text names the sanitizer either way.
        self.check("Sanitizer" not in p.stdout + p.stderr, f"{what}: no sanitizer report", p.stdout + p.stderr)
        return p

    def kfuse(self, *argv, what):
        return self.run([self.args.kfuse, "-q", *argv], what)

    def baseline(self, name):
        env = dict(self.env)
        if self.args.asan_runtime:
            env["LD_PRELOAD"] = self.args.asan_runtime
        p = self.run([self.program(name)], f"{name} without kfuse", env)
        self.check(p.returncode == 0, f"{name} runs on the stand-in", p.stdout + p.stderr)
        return self.result_lines(p.stdout)

    def record(self, name):
        trace = os.path.join(self.tmp, name.replace("/", "_") + ".sqlite")
        p = self.kfuse("record", "-o", trace, "--", self.program(name), what=f"record {name}")
        self.check(p.returncode == 0, f"record {name}", p.stdout + p.stderr)
        self.check(any("PASSED" in l for l in self.result_lines(p.stdout)), f"{name} passes under kfuse record",
                   p.stdout + p.stderr)
        if not os.path.exists(trace):
            return trace, 0
        with sqlite3.connect(trace) as db:
            launches = db.execute("SELECT COUNT(*) FROM launch").fetchone()[0]
        self.check(launches > 0, f"{name}: the trace holds its launches", f"{launches} launches")
        return trace, launches

    def main(self):
        driver_base = self.baseline(DRIVER)
        runtime_base = self.baseline(RUNTIME)
        trace, launches = self.record(DRIVER)
        self.record(RUNTIME)

        plan = os.path.join(self.tmp, "plan")
        p = self.kfuse("rewrite", trace, "--candidate", "1", "-o", plan, what="rewrite")
        if not self.check(p.returncode == 0, "kfuse rewrite --candidate 1 writes a validated plan", p.stdout + p.stderr):
            return
        with open(os.path.join(plan, "plan.json")) as f:
            kernels = len(json.load(f)["pattern"]["kernels"])

        # The injector in the instrumented program, recorded by the collector after it.
        stats_path = os.path.join(self.tmp, "stats.json")
        fused_trace = os.path.join(self.tmp, "fused.sqlite")
        p = self.kfuse("record", "-o", fused_trace, "--", self.args.kfuse, "-q", "run", "--plan", plan, "--stats",
                       stats_path, "--", self.program(DRIVER), what=f"run {DRIVER}")
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == driver_base,
                   f"{DRIVER} under kfuse record + kfuse run prints what it prints without kfuse",
                   f"without: {driver_base}\n{p.stdout}{p.stderr}")
        if os.path.exists(stats_path):
            with open(stats_path) as f:
                stats = json.load(f)
            fused = stats["plans"][0]["occurrences_fused"]
            self.check(fused > 0 and stats["plans"][0]["disabled"] is None, "the plan fuses", json.dumps(stats))
            with sqlite3.connect(fused_trace) as db:
                after = db.execute("SELECT COUNT(*) FROM launch").fetchone()[0]
            self.check(launches - after == fused * (kernels - 1),
                       "the driver saw exactly the launches the fusion removes",
                       f"{launches} launches without kfuse, {after} with; {fused} occurrences of {kernels} kernels")
        else:
            self.check(False, "kfuse run --stats writes its statistics")

        # The injector in a program nvcc built: the plan's kernels are not there, and the program runs unchanged.
        p = self.kfuse("run", "--plan", plan, "--", self.program(RUNTIME), what=f"run {RUNTIME}")
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == runtime_base,
                   f"{RUNTIME} under kfuse run prints what it prints without kfuse",
                   f"without: {runtime_base}\n{p.stdout}{p.stderr}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--asan-runtime", default="")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kfuse_preload_") as tmp:
        c = Checker(args, tmp)
        c.main()
    print(f"{c.passed} checks passed, {len(c.failures)} failed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
