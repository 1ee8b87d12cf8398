#!/usr/bin/env python3
"""End-to-end injector test on the emulator's stand-in libcuda.so.1: record the driver-API examples, `kfuse rewrite`
their proven candidates, then run each example under `kfuse run --plan`: it prints the same result and checksum as
without kfuse, and the launches the driver saw (a trace recorded under the injector, and the injector's statistics)
drop by exactly what the fusions remove. Also: statistics match schemas/run_stats.schema.json; a corrupt plan and
a plan that was never validated are left out with a message while the program runs unchanged; KFUSE_DISABLE=1;
the program's exit code passes through; --validate catches a deliberately wrong fused kernel and the program still
prints the right result; a program that reaches the driver only through cuGetProcAddress (as cudart does), on
per-thread default streams from 4 threads, has every pattern fused; a runtime-API program's prologue plans (an
activation recomputed at the loads of a tiled GEMM and of one loading float4 vectors, and an activation storing float4
vectors recomputed at the tiled GEMM's loads) fuse every occurrence while the two near misses run unfused.

Usage: check_run.py --kfuse BIN --source SRC --build BUILD
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

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402

# Driver-API programs, and their runtime-API twins (`<<<>>>`, nvcc defaults: static cudart) that reach the driver
# through cudart's cuGetProcAddress lookups and load their kernels from the fatbin with cuLibraryLoadData.
# many_small_kernels: N-way horizontal plans over kernels on four streams. mlp_block_arena: mlp_block with every
# tensor carved out of one allocation. gridstride: two grid-stride loops fused thread-locally. linear_bias: a bias
# added by a grid-stride loop nvcc unrolls, fused into the matmul before it as an epilogue.
EXAMPLES = ["driver_api/elementwise_chain", "driver_api/mlp_block", "driver_api/mlp_block_arena",
            "driver_api/many_small_kernels", "driver_api/gridstride", "runtime_api/elementwise_chain",
            "runtime_api/mlp_block", "runtime_api/gridstride", "runtime_api/linear_bias"]


class Checker(Checks):
    def __init__(self, args, tmp):
        super().__init__(args, tmp)
        self.env = self.standin_env(args.build)
        with open(os.path.join(args.source, "schemas", "run_stats.schema.json")) as f:
            self.stats_schema = json.load(f)

    def kfuse(self, *argv, env=None):
        return subprocess.run([self.args.kfuse, *argv], capture_output=True, text=True, env=env or self.env,
                              timeout=600)

    def program(self, name):
        return os.path.join(self.args.build, "examples", *(name.split("/") if "/" in name else ("driver_api", name)))

    def launches_in(self, trace):
        with sqlite3.connect(trace) as db:
            return db.execute("SELECT COUNT(*) FROM launch").fetchone()[0]

    def check_stats(self, path, what):
        with open(path) as f:
            stats = json.load(f)
        try:
            import jsonschema
            jsonschema.validate(stats, self.stats_schema)
            self.check(True, what)
        except ImportError:
            pass
        except Exception as e:  # jsonschema.ValidationError
            self.check(False, what + ": statistics match run_stats.schema.json", str(e))
        return stats

    def plans_for(self, name):
        trace = os.path.join(self.tmp, name.replace("/", "_") + ".sqlite")
        p = self.kfuse("-q", "record", "-o", trace, "--", self.program(name))
        self.check(p.returncode == 0, f"record {name}", p.stderr)
        out = os.path.join(self.tmp, name.replace("/", "_") + "-plans")
        p = self.kfuse("-q", "rewrite", trace, "--all", "-o", out)
        self.check(p.returncode == 0, f"rewrite --all {name}", p.stdout + p.stderr)
        plans = sorted(os.path.join(out, d) for d in os.listdir(out) if os.path.isfile(os.path.join(out, d, "plan.json")))
        self.check(plans, f"{name}: kfuse rewrite --all wrote plans", p.stdout + p.stderr)
        return trace, plans

    def example(self, name):
        trace, plans = self.plans_for(name)
        if not plans:
            return
        base = subprocess.run([self.program(name)], capture_output=True, text=True, env=self.env, timeout=600)
        self.check(base.returncode == 0, f"{name} runs on the stand-in", base.stderr)
        stats_path = os.path.join(self.tmp, name.replace("/", "_") + ".stats.json")
        fused_trace = os.path.join(self.tmp, name.replace("/", "_") + ".fused.sqlite")
        plan_args = [a for d in plans for a in ("--plan", d)]
        p = self.kfuse("-q", "record", "-o", fused_trace, "--", self.args.kfuse, "run", *plan_args, "--stats",
                       stats_path, "--", self.program(name))
        self.check(p.returncode == 0, f"{name} under kfuse record + kfuse run", p.stdout + p.stderr)
        self.check(self.result_lines(p.stdout) == self.result_lines(base.stdout),
                   f"{name}: same result and checksum with the fused kernels",
                   f"without: {self.result_lines(base.stdout)} with: {self.result_lines(p.stdout)}")
        stats = self.check_stats(stats_path, f"{name} statistics")
        removed = 0
        for plan_dir, plan_stats in zip(plans, stats["plans"]):
            with open(os.path.join(plan_dir, "plan.json")) as f:
                k = len(json.load(f)["pattern"]["kernels"])
            removed += plan_stats["occurrences_fused"] * (k - 1)
            self.check(plan_stats["occurrences_fused"] > 0 and plan_stats["disabled"] is None,
                       f"{name}: {os.path.basename(plan_dir)} fused", json.dumps(plan_stats))
            # The same program, run again: every occurrence the analyzer found fuses, and no guard refuses one (a
            # refusal here means the plan asks for more than its proof needs).
            self.check(not plan_stats["predicate_failures"],
                       f"{name}: {os.path.basename(plan_dir)}: no predicate refuses an occurrence", json.dumps(plan_stats))
        before, after = self.launches_in(trace), self.launches_in(fused_trace)
        self.check(before - after == removed and removed > 0,
                   f"{name}: the driver saw exactly the launches the fusions remove",
                   f"recorded {before} launches without kfuse, {after} under it; fusions remove {removed}")
        self.check(stats["launches_seen"] == before and stats["launches_issued"] == after,
                   f"{name}: statistics count what the traces show", json.dumps(stats))
        return plans

    def prologue(self, name):
        # An ordinary <<<>>> program: an activation recomputed at a GEMM's operand loads (three prologue plans: a
        # tiled GEMM, one loading float4 vectors, and the tiled GEMM after an activation storing float4 vectors),
        # injected together. The two near misses match the first plan's kernels and must run unfused, refused by its
        # guards.
        trace = os.path.join(self.tmp, name.replace("/", "_") + ".prologue.sqlite")
        p = self.kfuse("-q", "record", "-o", trace, "--", self.program(name))
        self.check(p.returncode == 0, f"record {name}", p.stderr)
        report = trace + ".json"
        p = self.kfuse("-q", "analyze", trace, "--all", "--json", report, "--no-store")
        self.check(p.returncode == 0, f"analyze {name}", p.stderr)
        if p.returncode != 0:
            return
        with open(report) as f:
            cands = [c for c in json.load(f)["candidates"] if c["fusion"] == "prologue" and c["legality"] == "proven"]
        self.check(len(cands) == 3 and all(c["occurrences"] == 2 for c in cands),
                   f"{name}: three proven prologues, 2 occurrences each", json.dumps(cands)[:1000])
        plans = []
        for c in cands:
            plan = os.path.join(self.tmp, name.replace("/", "_") + f"-prologue-plan-{c['rank']}")
            p = self.kfuse("-q", "rewrite", trace, "--candidate", str(c["rank"]), "-o", plan)
            self.check(p.returncode == 0, f"{name}: prologue plan #{c['rank']} rewrites and validates",
                       p.stdout + p.stderr)
            if p.returncode == 0:
                plans.append(plan)
        if len(plans) != 3:
            return
        base = subprocess.run([self.program(name)], capture_output=True, text=True, env=self.env, timeout=600)
        stats_path = os.path.join(self.tmp, name.replace("/", "_") + ".prologue.stats.json")
        fused_trace = os.path.join(self.tmp, name.replace("/", "_") + ".prologue.fused.sqlite")
        plan_args = [a for d in plans for a in ("--plan", d)]
        p = self.kfuse("-q", "record", "-o", fused_trace, "--", self.args.kfuse, "run", *plan_args, "--stats",
                       stats_path, "--", self.program(name))
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout),
                   f"{name}: same result and checksum with the prologue plans",
                   f"without: {self.result_lines(base.stdout)} with: {self.result_lines(p.stdout)} {p.stderr}")
        if not os.path.exists(stats_path):
            return
        st = self.check_stats(stats_path, f"{name} prologue statistics")["plans"]
        self.check(all(s["occurrences_fused"] == 2 for s in st) and
                   sum(sum(s["predicate_failures"].values()) for s in st) == 4,
                   f"{name}: every occurrence of the three plans fuses, the 2 near misses run unfused", json.dumps(st))
        self.check(self.launches_in(trace) - self.launches_in(fused_trace) == 6,
                   f"{name}: the driver saw 6 launches fewer")

    def cudart_like(self, good):
        # Launches through cuGetProcAddress (flags 2: _ptsz functions, per-thread default streams), 4 threads.
        program = os.path.join(self.args.build, "rewriter", "inject", "kfuse_test_gpa_chain")
        ptx = os.path.join(self.args.build, "examples", "driver_api", "ptx", "elementwise_chain.ptx")
        stats_path = os.path.join(self.tmp, "gpa.stats.json")
        p = self.kfuse("run", "--plan", good, "--stats", stats_path, "--", program, ptx, "--threads", "4")
        self.check(p.returncode == 0 and "gpa_chain: PASSED" in p.stdout,
                   "a cudart-like program (cuGetProcAddress, _ptsz, 4 threads) runs under kfuse run",
                   p.stdout + p.stderr)
        stats = self.check_stats(stats_path, "cudart-like statistics")
        self.check(stats["plans"][0]["occurrences_fused"] == 12 and stats["launches_issued"] == 12,
                   "every pattern of every thread's per-thread default stream is fused", json.dumps(stats))

    def module_from_file(self, good):
        # The same program loading its module by path (cuModuleLoad): the injector identifies the module by the
        # file's contents, as the trace (made with cuModuleLoadData) recorded them, and fuses every occurrence.
        name = "elementwise_chain"
        base = subprocess.run([self.program(name)], capture_output=True, text=True, env=self.env, timeout=600)
        stats_path = os.path.join(self.tmp, "from-file.stats.json")
        env = dict(self.env, KFUSE_EXAMPLE_MODULE_FROM_FILE="1")
        p = self.kfuse("run", "--plan", good, "--stats", stats_path, "--", self.program(name), env=env)
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout),
                   "a module loaded from its file (cuModuleLoad): the program prints what it prints without kfuse",
                   p.stdout + p.stderr)
        stats = self.check_stats(stats_path, "cuModuleLoad statistics")
        self.check(stats["plans"][0]["occurrences_fused"] == 3,
                   "a module loaded from its file is matched to the plan, every occurrence fused", json.dumps(stats))

    @staticmethod
    def without_file_hashes(plan_dir):
        # As a plan written before kfuse recorded the SHA-256 of the files it validated: kfuse run cannot tell an
        # edited fused kernel, and its run-time safety nets are what keeps the program unchanged.
        path = os.path.join(plan_dir, "plan.json")
        with open(path) as f:
            plan = json.load(f)
        plan["validation"].pop("files", None)
        with open(path, "w") as f:
            json.dump(plan, f)

    def bad_plans(self, good):
        name = "elementwise_chain"
        base = subprocess.run([self.program(name)], capture_output=True, text=True, env=self.env, timeout=600)
        corrupt = os.path.join(self.tmp, "corrupt-plan")
        shutil.copytree(good, corrupt)
        with open(os.path.join(corrupt, "plan.json"), "w") as f:
            f.write('{"format": "kfuse-plan", "version": 3, "pattern": ')
        unvalidated = os.path.join(self.tmp, "unvalidated-plan")
        shutil.copytree(good, unvalidated)
        with open(os.path.join(unvalidated, "plan.json")) as f:
            text = f.read().replace('"emulator": "passed"', '"emulator": "not-run"')
        with open(os.path.join(unvalidated, "plan.json"), "w") as f:
            f.write(text)
        # A plan directory whose plan.json is a directory: left out like any broken plan, the program still runs.
        not_a_file = os.path.join(self.tmp, "plan-json-is-a-directory")
        os.makedirs(os.path.join(not_a_file, "plan.json"))
        for plan, why in ((corrupt, "plan.json"), (unvalidated, "kfuse validate"), (not_a_file, "not a regular file")):
            p = self.kfuse("run", "--plan", plan, "--", self.program(name))
            self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout),
                       f"{os.path.basename(plan)}: the program runs unchanged", p.stdout + p.stderr)
            self.check("plan left out" in p.stderr and why in p.stderr,
                       f"{os.path.basename(plan)}: a clear message", p.stderr)
        stats_path = os.path.join(self.tmp, "disabled.stats.json")
        p = self.kfuse("run", "--plan", good, "--stats", stats_path, "--", self.program(name),
                       env=dict(self.env, KFUSE_DISABLE="1"))
        self.check(p.returncode == 0 and "KFUSE_DISABLE" in p.stderr and not os.path.exists(stats_path),
                   "KFUSE_DISABLE=1 runs the program without kfuse", p.stderr)
        # kfuse record under kfuse run (the other order than example() uses): the trace shows the fused launches.
        inner = os.path.join(self.tmp, "run-then-record.sqlite")
        p = self.kfuse("-q", "run", "--plan", good, "--", self.args.kfuse, "-q", "record", "-o", inner, "--",
                       self.program(name))
        self.check(p.returncode == 0 and os.path.exists(inner) and self.launches_in(inner) == 3,
                   "kfuse run -- kfuse record: the trace holds the 3 fused launches", p.stdout + p.stderr)
        p = self.kfuse("run", "--plan", good, "--", "sh", "-c", "exit 3")
        self.check(p.returncode == 3, "the program's exit code passes through", f"got {p.returncode}")

        # A fused module the driver refuses to load: the fusion is disabled once, the program runs unchanged.
        unloadable = os.path.join(self.tmp, "unloadable-plan")
        shutil.copytree(good, unloadable)
        with open(os.path.join(unloadable, "fused.ptx")) as f:
            ptx = f.read()
        with open(os.path.join(unloadable, "fused.ptx"), "w") as f:
            f.write(ptx.replace("ret;", "this is not an instruction;", 1))
        # With the plan's file hashes the edit is caught before anything loads.
        p = self.kfuse("run", "--plan", unloadable, "--", self.program(name))
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout) and
                   "plan left out" in p.stderr and "changed since it was validated" in p.stderr,
                   "a fused kernel edited after validation: the plan is left out", p.stdout + p.stderr)
        self.without_file_hashes(unloadable)
        p = self.kfuse("run", "--plan", unloadable, "--", self.program(name))
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout),
                   "a fused module that fails to load: the program runs unchanged", p.stdout + p.stderr)
        self.check(p.stderr.count("fusion disabled") == 1 and "loading the fused kernel failed" in p.stderr,
                   "a fused module that fails to load: one warning", p.stderr)

        # A fused module that loads but whose launch fails (the stand-in resolves names when it launches: a parameter
        # the kernel does not declare). The occurrence runs the original launches and the program is unchanged: the
        # failed launch never reaches the application.
        unlaunchable = os.path.join(self.tmp, "unlaunchable-plan")
        shutil.copytree(good, unlaunchable)
        with open(os.path.join(unlaunchable, "fused.ptx")) as f:
            ptx = f.read()
        ptx, n = re.subn(r"_param_\d+\]", "_param_99]", ptx, count=1)
        self.check(n == 1, "the fused kernel reads a parameter to break")
        with open(os.path.join(unlaunchable, "fused.ptx"), "w") as f:
            f.write(ptx)
        self.without_file_hashes(unlaunchable)
        stats_path = os.path.join(self.tmp, "unlaunchable.stats.json")
        p = self.kfuse("run", "--plan", unlaunchable, "--stats", stats_path, "--", self.program(name))
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout),
                   "a fused kernel whose launch fails: the program runs unchanged", p.stdout + p.stderr)
        stats = self.check_stats(stats_path, "unlaunchable-plan statistics")
        self.check(stats["plans"][0]["occurrences_fused"] == 0 and
                   "failed to launch" in (stats["plans"][0]["disabled"] or ""),
                   "a fused kernel whose launch fails: disabled, nothing counted as fused", json.dumps(stats["plans"][0]))

        # A deliberately wrong fused kernel: its first multiply becomes an add.
        wrong = os.path.join(self.tmp, "wrong-plan")
        shutil.copytree(good, wrong)
        ptx_path = os.path.join(wrong, "fused.ptx")
        with open(ptx_path) as f:
            ptx = f.read()
        broken, n = re.subn(r"\bmul\.f32\b", "add.f32", ptx, count=1)
        self.check(n == 1, "the fused kernel has a mul.f32 to break")
        with open(ptx_path, "w") as f:
            f.write(broken)
        self.without_file_hashes(wrong)
        stats_path = os.path.join(self.tmp, "wrong.stats.json")
        p = self.kfuse("run", "--plan", wrong, "--validate=2", "--stats", stats_path, "--", self.program(name))
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout),
                   "--validate keeps the originals' results when the fused kernel is wrong", p.stdout + p.stderr)
        self.check("validation failed" in p.stderr, "--validate reports the mismatch", p.stderr)
        stats = self.check_stats(stats_path, "wrong-plan statistics")
        self.check(stats["plans"][0]["validations_failed"] == 1 and stats["plans"][0]["occurrences_fused"] == 1,
                   "--validate disables the fusion at the first mismatch", json.dumps(stats["plans"][0]))
        p = self.kfuse("run", "--plan", good, "--validate", "--stats", stats_path, "--", self.program(name))
        stats = self.check_stats(stats_path, "validated statistics")
        self.check(p.returncode == 0 and stats["plans"][0]["validations_passed"] == 1 and
                   stats["plans"][0]["disabled"] is None, "--validate passes the real fused kernel",
                   p.stderr + json.dumps(stats))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kfuse_run_")
    try:
        c = Checker(args, tmp)
        first = None
        for name in EXAMPLES:
            plans = c.example(name)
            if name == "driver_api/elementwise_chain" and plans:
                first = plans[0]
        c.prologue("runtime_api/activation_matmul")
        if first:
            c.cudart_like(first)
            c.module_from_file(first)
            c.bad_plans(first)
        print(f"{c.passed} checks passed, {len(c.failures)} failed")
        return 1 if c.failures else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
