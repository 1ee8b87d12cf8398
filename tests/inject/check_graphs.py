#!/usr/bin/env python3
"""Fusion inside CUDA graphs, end to end on the emulator's stand-in libcuda.so.1: record
examples/runtime_api/cuda_graphs (a <<<>>> program capturing the elementwise chain into a graph replayed 5 times, and
an explicitly built graph), `kfuse analyze` it, `kfuse rewrite` the proven chain over the captured graph's nodes, and
run the program under `kfuse run --plan DIR` (graphs are rewritten by default):

  * it prints the same result and checksum as without kfuse;
  * the stand-in runs fewer kernel nodes per replay of the captured graph (its KFUSE_STANDIN_TRACE lines), by exactly
    the kernels the fusion removes, and the injector's statistics count the rewritten graph and the fused chain;
  * a trace recorded under `kfuse run` (kfuse record -- kfuse run ...) holds the rewritten graph: the fused kernel
    node in place of the chain's nodes, and that many fewer kernel nodes run by the replays;
  * with --validate=2, the fused node is checked against the chain's kernels before the first two launches of the
    rewritten graph, passes, and every replay runs it (same result and checksum);
  * with --no-graphs, KFUSE_REWRITE_GRAPHS=0 and KFUSE_DISABLE=1, the graphs run as they were;
  * examples/runtime_api/graph_branches (two independent kernels on two branches of a captured graph): their
    horizontal candidate over the graph's nodes is rewritten and, under `kfuse run` (and with --validate=2), the
    branches run as one fused node: the same checksum, 2 kernel nodes per replay instead of 3;
  * with both plans `kfuse rewrite --all` makes (the captured chain, and scale -> add of the explicitly built graph,
    whose scale node the program changes with cudaGraphExecKernelNodeSetParams between its two launches): the same
    result and checksum; the captured graph's replays run the fused node, the explicit graph's first launch its
    fused node and, once the setter changed a node the fused node replaced, its second launch the application's
    own graph with the new parameters (the kernel nodes per replay are printed).

Usage: check_graphs.py --kfuse BIN --build BUILD
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

LAUNCH_LINE = re.compile(r"cuGraphLaunch graph exec (\d+): (\d+) nodes, (\d+) kernel nodes run")


class Checker(Checks):
    def __init__(self, args, tmp):
        super().__init__(args, tmp)
        self.env = self.standin_env(args.build)
        self.program = os.path.join(args.build, "examples", "runtime_api", "cuda_graphs")

    def run(self, argv, env=None):
        return subprocess.run(argv, capture_output=True, text=True, env=env or self.env, timeout=600)

    def kfuse(self, *argv, env=None):
        return self.run([self.args.kfuse, *argv], env=env)

    @staticmethod
    def kernel_nodes_per_replay(stderr):
        # exec id -> kernel nodes run by each of its launches, as the stand-in traced them.
        runs = {}
        for m in LAUNCH_LINE.finditer(stderr):
            runs.setdefault(int(m.group(1)), []).append(int(m.group(3)))
        return runs

    @staticmethod
    def captured_replays(runs):
        # The captured graph is the one exec launched 5 times; the explicit graph's exec runs twice.
        replayed = [v for v in runs.values() if len(v) == 5]
        return replayed[0] if len(replayed) == 1 else None

    @staticmethod
    def graph_kernels(trace):
        # Per recorded graph: its kernel nodes' function names; and the kernel nodes the replays ran.
        with sqlite3.connect(trace) as db:
            rows = db.execute("SELECT n.graph_id, f.mangled_name FROM graph_node AS n JOIN function AS f "
                              "ON f.id = n.function_id WHERE n.type = 'kernel' ORDER BY n.graph_id, n.id").fetchall()
            ran = db.execute("SELECT count(*) FROM graph_launch_kernel").fetchone()[0]
            replays = db.execute("SELECT e.graph_id, count(*) FROM graph_launch AS l JOIN graph_exec AS e "
                                 "ON e.id = l.graph_exec_id GROUP BY e.graph_id").fetchall()
        kernels = {}
        for graph, name in rows:
            kernels.setdefault(graph, []).append(name)
        return kernels, ran, dict(replays)

    def main(self):
        trace = os.path.join(self.tmp, "graphs.sqlite")
        p = self.kfuse("-q", "record", "-o", trace, "--", self.program)
        if not self.check(p.returncode == 0, "record cuda_graphs", p.stdout + p.stderr):
            return
        report = os.path.join(self.tmp, "report.json")
        p = self.kfuse("-q", "analyze", trace, "--json", report, "--no-store")
        if not self.check(p.returncode == 0, "analyze cuda_graphs", p.stdout + p.stderr):
            return
        with open(report) as f:
            candidates = json.load(f)["candidates"]
        with sqlite3.connect(trace) as db:
            captured = db.execute("SELECT id FROM graph WHERE origin = 'capture'").fetchone()[0]
        chains = [c for c in candidates if c["legality"] == "proven" and c["kind"] == "vertical" and
                  c.get("occurrence_graphs") == [captured]]
        if not self.check(len(chains) == 1 and len(chains[0]["kernels"]) == 4,
                          "one proven 4-kernel chain over the captured graph's nodes", json.dumps(candidates)[:2000]):
            return
        chain = chains[0]
        self.check(chain["occurrence_replays"] == [5], "the chain counts the 5 replays", json.dumps(chain)[:1000])
        plan = os.path.join(self.tmp, "graph-plan")
        p = self.kfuse("-q", "rewrite", trace, "--report", report, "--candidate", chain["id"], "-o", plan)
        if not self.check(p.returncode == 0, "kfuse rewrite of the graph candidate validates",
                          p.stdout + p.stderr):
            return
        with open(os.path.join(plan, "plan.json")) as f:
            plan_json = json.load(f)
        fused_name = plan_json["fused_kernel"]["name"]
        self.check(plan_json["validation"]["emulator"] == "passed", "the plan passed validation on the emulator",
                   json.dumps(plan_json["validation"]))
        self.check(plan_json["argument_sets"] and
                   all(s["origin"].startswith("graph nodes") for s in plan_json["argument_sets"]),
                   "the plan's argument sets come from the graph nodes", json.dumps(plan_json["argument_sets"])[:500])
        removed = len(plan_json["pattern"]["kernels"]) - 1

        traced = dict(self.env, KFUSE_STANDIN_TRACE="1")
        base = self.run([self.program], env=traced)
        self.check(base.returncode == 0 and "cuda_graphs: PASSED" in base.stdout, "cuda_graphs runs on the stand-in",
                   base.stdout + base.stderr)
        before = self.captured_replays(self.kernel_nodes_per_replay(base.stderr))
        self.check(before == [5] * 5, "without kfuse: 5 kernel nodes per replay of the captured graph", str(before))

        stats_path = os.path.join(self.tmp, "stats.json")
        p = self.kfuse("run", "--plan", plan, "--stats", stats_path, "--", self.program, env=traced)
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout),
                   "kfuse run: same result and checksum",
                   f"without: {self.result_lines(base.stdout)} with: {self.result_lines(p.stdout)} {p.stderr[-1500:]}")
        after = self.captured_replays(self.kernel_nodes_per_replay(p.stderr))
        self.check(before is not None and after == [n - removed for n in before],
                   f"kfuse run: {removed} kernel nodes fewer per replay", f"before {before}, after {after}")
        if self.check(os.path.exists(stats_path), "kfuse run writes its statistics"):
            with open(stats_path) as f:
                graphs = json.load(f)["graphs"]
            self.check(graphs == {"rewritten": 1, "chains_fused": 1, "chains_refused": 0, "execs_unfused": 0},
                       "statistics: one graph rewritten, one chain fused", json.dumps(graphs))

        # The trace recorded under kfuse run shows the rewritten clone, instantiated first (--graphs: still accepted).
        fused_trace = os.path.join(self.tmp, "graphs.fused.sqlite")
        p = self.kfuse("-q", "record", "-o", fused_trace, "--", self.args.kfuse, "-q", "run", "--graphs", "--plan",
                       plan, "--", self.program)
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout),
                   "kfuse record -- kfuse run --graphs: same result", p.stdout + p.stderr)
        if p.returncode == 0:
            kernels, ran, replays = self.graph_kernels(trace)
            fused_kernels, fused_ran, fused_replays = self.graph_kernels(fused_trace)
            first = min(fused_kernels) if fused_kernels else None
            self.check(len(kernels[captured]) == 5 and first is not None and len(fused_kernels[first]) == 2 and
                       fused_name in fused_kernels[first],
                       "the trace under kfuse run holds the rewritten graph: the fused node and the node after the chain",
                       f"recorded {kernels}, under kfuse run {fused_kernels}")
            self.check(fused_replays.get(first) == 5, "the rewritten graph is replayed 5 times", str(fused_replays))
            self.check(ran - fused_ran == 5 * removed,
                       f"the replays ran {5 * removed} kernel nodes fewer", f"{ran} recorded, {fused_ran} under kfuse run")

        # --validate=2: before each of the first two launches of the rewritten exec, the fused node is checked
        # against the chain's kernels (the buffers put back); it passes, so every replay still runs the fused node.
        stats_path = os.path.join(self.tmp, "stats-validate.json")
        p = self.kfuse("run", "--validate=2", "--plan", plan, "--stats", stats_path, "--", self.program, env=traced)
        self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout),
                   "kfuse run --validate=2: same result and checksum",
                   f"without: {self.result_lines(base.stdout)} with: {self.result_lines(p.stdout)} {p.stderr[-1500:]}")
        runs = self.captured_replays(self.kernel_nodes_per_replay(p.stderr))
        self.check(before is not None and runs == [n - removed for n in before],
                   "kfuse run --validate=2: every replay runs the fused node once checked", str(runs))
        if self.check(os.path.exists(stats_path), "kfuse run --validate=2 writes its statistics"):
            with open(stats_path) as f:
                s = json.load(f)["plans"][0]
            self.check(s["validations_passed"] == 2 and s["validations_failed"] == 0 and not s.get("disabled"),
                       "kfuse run --validate=2: the fused node passed two checks", json.dumps(s)[:800])

        self.both_plans(trace, report, before, base, traced)

        # Turned off, or kfuse disabled: the graphs run as they were.
        for what, argv, env in (("--no-graphs", ["run", "--no-graphs", "--plan", plan], traced),
                                ("KFUSE_REWRITE_GRAPHS=0", ["run", "--plan", plan],
                                 dict(traced, KFUSE_REWRITE_GRAPHS="0")),
                                ("KFUSE_DISABLE=1", ["run", "--plan", plan], dict(traced, KFUSE_DISABLE="1"))):
            p = self.kfuse(*argv, "--", self.program, env=env)
            runs = self.captured_replays(self.kernel_nodes_per_replay(p.stderr))
            self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout) and
                       runs == before, f"{what}: the captured graph runs unchanged", f"{runs} {p.stderr[-1500:]}")

    def both_plans(self, trace, report, before, base, traced):
        plans = os.path.join(self.tmp, "all-plans")
        p = self.kfuse("-q", "rewrite", trace, "--report", report, "--all", "-o", plans)
        if not self.check(p.returncode == 0, "kfuse rewrite --all", p.stdout + p.stderr):
            return
        dirs = sorted(os.path.join(plans, d) for d in os.listdir(plans))
        kernels = []
        for d in dirs:
            with open(os.path.join(d, "plan.json")) as f:
                kernels.append([k["mangled_name"] for k in json.load(f)["pattern"]["kernels"]])
        if not self.check(len(dirs) == 2 and sorted(map(len, kernels)) == [2, 4],
                          "kfuse rewrite --all makes the captured chain's plan and the explicit graph's",
                          json.dumps(kernels)):
            return
        want = self.result_lines(base.stdout)
        explicit_before = [v for v in self.kernel_nodes_per_replay(base.stderr).values() if len(v) == 2]
        self.check(explicit_before == [[2, 2]], "without kfuse: the explicit graph runs 2 kernel nodes per launch",
                   str(explicit_before))
        stats_path = os.path.join(self.tmp, "stats-all.json")
        argv = ["run", "--log", "--stats", stats_path]
        for d in dirs:
            argv += ["--plan", d]
        p = self.kfuse(*argv, "--", self.program, env=traced)
        self.check(p.returncode == 0 and "cuda_graphs: PASSED" in p.stdout and self.result_lines(p.stdout) == want,
                   "both plans, kfuse run: same result and checksum, PASSED",
                   f"without: {want} with: {self.result_lines(p.stdout)} {p.stderr[-1500:]}")
        runs = self.kernel_nodes_per_replay(p.stderr)
        print(f"both plans: kernel nodes per launch, by executable graph: {runs} (without kfuse: "
              f"{self.kernel_nodes_per_replay(base.stderr)})")
        removed = len(max(kernels, key=len)) - 1
        self.check(self.captured_replays(runs) == [n - removed for n in before],
                   "both plans: the captured graph's replays run the fused node", str(runs))
        # The explicit graph: its rewritten exec launched once (the fused node: 1 kernel node), then, after the
        # setter on its replaced scale node, the application's exec (2 kernel nodes, the new alpha).
        singles = sorted(v[0] for v in runs.values() if len(v) == 1)
        self.check(singles == [1, 2], "both plans: the explicit graph's first launch runs the fused node, the second "
                   "(after cudaGraphExecKernelNodeSetParams on a replaced node) the application's graph", str(runs))
        self.check("a node that a fused node replaced was changed" in p.stderr,
                   "both plans: --log says the explicit graph runs unfused after the setter", p.stderr[-1500:])
        if self.check(os.path.exists(stats_path), "both plans: statistics written"):
            with open(stats_path) as f:
                graphs = json.load(f)["graphs"]
            self.check(graphs == {"rewritten": 2, "chains_fused": 2, "chains_refused": 0, "execs_unfused": 1},
                       "both plans: statistics count both graphs rewritten, and the explicit one back to the application's "
                       "after the setter", json.dumps(graphs))

    def branches(self):
        # examples/runtime_api/graph_branches: twice and plus_one on two branches of a captured graph (no path
        # between them), accumulate_sum after both; 5 replays.
        program = os.path.join(self.args.build, "examples", "runtime_api", "graph_branches")
        trace = os.path.join(self.tmp, "branches.sqlite")
        p = self.kfuse("-q", "record", "-o", trace, "--", program)
        if not self.check(p.returncode == 0, "branches: record graph_branches", p.stdout + p.stderr):
            return
        report = os.path.join(self.tmp, "branches.json")
        p = self.kfuse("-q", "analyze", trace, "--all", "--json", report, "--no-store")
        if not self.check(p.returncode == 0, "branches: analyze", p.stdout + p.stderr):
            return
        with open(report) as f:
            candidates = json.load(f)["candidates"]
        side = [c for c in candidates if c["kind"] == "horizontal" and c["legality"] == "proven" and
                c.get("occurrence_graphs") and
                sorted(k["mangled_name"] for k in c["kernels"]) == ["_Z5twicePKfPfi", "_Z8plus_onePKfPfi"]]
        if not self.check(len(side) == 1 and side[0]["occurrence_replays"] == [5],
                          "branches: the two branch kernels are a proven horizontal candidate over the graph's nodes, "
                          "counted per replay", json.dumps(candidates)[:2000]):
            return
        plan = os.path.join(self.tmp, "branches-plan")
        p = self.kfuse("-q", "rewrite", trace, "--report", report, "--candidate", side[0]["id"], "-o", plan)
        if not self.check(p.returncode == 0, "branches: kfuse rewrite of the horizontal candidate validates",
                          p.stdout + p.stderr):
            return
        traced = dict(self.env, KFUSE_STANDIN_TRACE="1")
        base = self.run([program], env=traced)
        before = [v for v in self.kernel_nodes_per_replay(base.stderr).values()]
        self.check(base.returncode == 0 and "graph_branches: PASSED" in base.stdout and before == [[3] * 5],
                   "branches: without kfuse, 3 kernel nodes per replay", f"{before} {base.stdout[-500:]}")
        for what, extra in (("kfuse run", []), ("kfuse run --validate=2", ["--validate=2"])):
            stats_path = os.path.join(self.tmp, "branches-stats.json")
            p = self.kfuse("run", *extra, "--plan", plan, "--stats", stats_path, "--", program, env=traced)
            after = [v for v in self.kernel_nodes_per_replay(p.stderr).values()]
            self.check(p.returncode == 0 and self.result_lines(p.stdout) == self.result_lines(base.stdout) and
                       after == [[2] * 5], f"branches, {what}: same checksum and PASSED, 2 kernel nodes per replay",
                       f"{after} {self.result_lines(p.stdout)} vs {self.result_lines(base.stdout)} {p.stderr[-800:]}")
            if self.check(os.path.exists(stats_path), f"branches, {what}: statistics written"):
                with open(stats_path) as f:
                    stats = json.load(f)
                self.check(stats["graphs"]["chains_fused"] == 1 and stats["graphs"]["execs_unfused"] == 0,
                           f"branches, {what}: the branch kernels fused into one node", json.dumps(stats["graphs"]))
                if extra:
                    self.check(stats["plans"][0]["validations_passed"] == 2,
                               f"branches, {what}: two checks passed", json.dumps(stats["plans"][0])[:500])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kfuse_graphs_")
    try:
        c = Checker(args, tmp)
        c.main()
        c.branches()
        print(f"{c.passed} checks passed, {len(c.failures)} failed")
        return 1 if c.failures or not c.passed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
