#!/usr/bin/env python3
"""End-to-end rewriter test: record the driver-API examples on the emulator's stand-in libcuda.so.1, rewrite
every proven candidate with `kfuse rewrite` (ptxas for sm_80, sm_90 and sm_100, validation on the emulator),
check each plan against schemas/plan.schema.json and re-validate it with `kfuse validate`; the blocked stencil is
refused with the analyzer's reason; a hand-corrupted fused.ptx fails validation naming the buffer and element;
bad plans are refused with exit 2. Block-level fusion (residual_layernorm): the row-per-block residual add ->
layernorm and the block reduction row_rms -> scale_rows are proven block-level, rewritten with a barrier between
the parts, validated, and injected into the unmodified program with the same checksum; the grid-stride twin and
row_rms -> scale_by_max (every block needs every block's result) are refused, naming the blocks. Arena:
mlp_block_arena (every tensor at an offset inside one allocation) gets the same candidates, proofs, predicted savings
and dependency edges as mlp_block.

Usage: check_rewrite.py --kfuse BIN --source SRC --build BUILD
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402

EXAMPLES = ["elementwise_chain", "mlp_block", "mlp_block_arena", "many_small_kernels", "stencil", "residual_layernorm",
            "activation_matmul"]
ARCHS = "sm_80,sm_90,sm_100"


class Checker(Checks):
    detail_chars = 1500
    keep_detail = True

    def __init__(self, args, tmp):
        super().__init__(args, tmp)
        with open(os.path.join(args.source, "schemas", "plan.schema.json")) as f:
            self.plan_schema = json.load(f)

    def run(self, *argv, env=None, timeout=300):
        return subprocess.run([self.args.kfuse, "-q", *argv], capture_output=True, text=True, env=env,
                              timeout=timeout)

    def record(self, name):
        path = os.path.join(self.tmp, name + ".sqlite")
        program = os.path.join(self.args.build, "examples", "driver_api", name)
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(self.args.build, "standin"))
        p = self.run("record", "-o", path, "--", program, env=env)
        self.check(p.returncode == 0, f"record {name}", p.stderr)
        return path

    def candidates(self, trace):
        out = os.path.join(self.tmp, os.path.basename(trace) + ".report.json")
        p = self.run("analyze", trace, "--json", out, "--no-store")
        self.check(p.returncode == 0, f"analyze {trace}", p.stderr)
        with open(out) as f:
            return json.load(f)["candidates"]

    def validate_schema(self, plan_path):
        try:
            import jsonschema
        except ImportError:
            self.check(False, "python3-jsonschema is installed (scripts/setup-deps.sh installs it)")
            return
        with open(plan_path) as f:
            plan = json.load(f)
        errors = sorted(jsonschema.Draft202012Validator(self.plan_schema).iter_errors(plan), key=str)
        self.check(not errors, f"{plan_path} follows plan.schema.json", "; ".join(e.message for e in errors[:3]))
        return plan

    def rewrite_all_proven(self, name, trace):
        plans = []
        for c in self.candidates(trace):
            rank = c["rank"]
            out = os.path.join(self.tmp, f"{name}-plan-{rank}")
            p = self.run("rewrite", trace, "--candidate", str(rank), "--arch", ARCHS, "-o", out)
            if c["legality"] != "proven":
                self.check(p.returncode == 2 and "not proven" in p.stderr and not os.path.exists(out),
                           f"{name} #{rank} ({c['legality']}) is refused with the analyzer's reason",
                           f"exit {p.returncode}: {p.stderr}")
                reason = (c.get("reasons") or [""])[0]
                self.check(reason[:40] in p.stderr, f"{name} #{rank}: the refusal quotes the analyzer",
                           f"reason {reason!r} not in {p.stderr!r}")
                continue
            self.check(p.returncode == 0, f"{name} #{rank} ({c['kind']}) rewrites and validates",
                       f"exit {p.returncode}: {p.stdout}{p.stderr}")
            if p.returncode != 0:
                continue
            plan = self.validate_schema(os.path.join(out, "plan.json"))
            if plan is None:
                continue
            v = plan.get("validation", {})
            self.check(v.get("emulator") == "passed", f"{name} #{rank}: the plan records a passed validation",
                       json.dumps(v))
            archs = set(v.get("ptxas_archs", []))
            self.check({"sm_80", "sm_90", "sm_100"} <= archs, f"{name} #{rank}: compiled for sm_80, sm_90, sm_100",
                       str(sorted(archs)))
            self.check(os.path.exists(os.path.join(out, "README.md")), f"{name} #{rank}: README.md written")
            p = self.run("validate", out, "--seed", "7")
            self.check(p.returncode == 0, f"{name} #{rank}: kfuse validate passes", p.stdout + p.stderr)
            if plan["fusion"] == "horizontal":
                # Independent kernels share buffers at most: a scalar equality seen in the recorded launches is a
                # coincidence the program need not repeat, and must not become a guard.
                kernels = plan["pattern"]["kernels"]
                scalar = [q for q in plan["pattern"]["predicates"] if q["kind"] == "arg_equal" and not all(
                    kernels[r["kernel"]]["params"][r["arg"]]["pointer"] for r in (q["a"], q["b"]))]
                self.check(not scalar, f"{name} #{rank}: a horizontal plan pins no scalar equality", str(scalar))
            plans.append((c, out, plan))
        return plans

    def corrupted_plan_fails(self, plan_dir):
        bad = plan_dir + "-corrupted"
        shutil.copytree(plan_dir, bad)
        fused = os.path.join(bad, "fused.ptx")
        with open(fused) as f:
            text = f.read()
        changed, n = re.subn(r"\b(add|mul)\.f32\b", "sub.f32", text, count=1)
        self.check(n == 1, "the fused kernel has an f32 add or mul to corrupt")
        with open(fused, "w") as f:
            f.write(changed)
        p = self.run("validate", bad)
        out = p.stdout + p.stderr
        self.check(p.returncode == 1, "a corrupted fused.ptx fails validation with exit 1", f"exit {p.returncode}: {out}")
        self.check("buffer" in out and "element" in out, "the mismatch names the buffer and the element", out)

    def bad_plans_are_refused(self, plan_dir):
        cases = {
            "version": lambda plan: plan.update(version=99),
            "missing pattern": lambda plan: plan.pop("pattern", None),
            "module hash": lambda plan: plan["pattern"]["kernels"][0].update(module_hash="0" * 64),
        }
        for what, mutate in cases.items():
            bad = f"{plan_dir}-bad-{what.replace(' ', '-')}"
            shutil.copytree(plan_dir, bad)
            path = os.path.join(bad, "plan.json")
            with open(path) as f:
                plan = json.load(f)
            mutate(plan)
            with open(path, "w") as f:
                json.dump(plan, f)
            before = open(path).read()
            p = self.run("validate", bad)
            self.check(p.returncode == 2 and "plan.json" in p.stderr, f"a plan with a bad {what} is refused (exit 2)",
                       f"exit {p.returncode}: {p.stdout}{p.stderr}")
            self.check(open(path).read() == before, f"a refused plan ({what}) is left as it was")
        # PTX our parser takes but ptxas does not (a float type on an integer-only instruction).
        bad = f"{plan_dir}-bad-ptxas"
        shutil.copytree(plan_dir, bad)
        fused = os.path.join(bad, "fused.ptx")
        with open(fused) as f:
            text = f.read()
        text, n = re.subn(r"\bmad\.lo\.s32\b", "mad.lo.f32", text, count=1)
        self.check(n == 1, "the fused kernel has a mad.lo.s32 to break")
        with open(fused, "w") as f:
            f.write(text)
        p = self.run("validate", bad)
        self.check(p.returncode == 2 and "ptxas" in p.stderr and "mad" in p.stderr,
                   "PTX that ptxas rejects: exit 2 with ptxas's log", f"exit {p.returncode}: {p.stderr}")
        self.check(open(fused).read() == text, "the rejected fused PTX is kept for inspection")
        p = self.run("validate", os.path.join(self.tmp, "no-such-plan"))
        self.check(p.returncode == 2, "a missing plan directory is refused (exit 2)", p.stderr)

    def aggressive(self, trace):
        out = os.path.join(self.tmp, "chain-aggressive")
        p = self.run("rewrite", trace, "--candidate", "1", "--aggressive", "-o", out)
        self.check(p.returncode == 0, "--aggressive rewrites the chain", p.stdout + p.stderr)
        if p.returncode != 0:
            return
        plan = self.validate_schema(os.path.join(out, "plan.json"))
        dropped = plan.get("dropped_buffers", []) if plan else []
        # scale -> add -> relu -> mul: t1, t2 and t3 are overwritten by the next iteration before anything reads them.
        self.check(len(dropped) == 3, "--aggressive drops the three intermediates of the chain", json.dumps(dropped))
        with open(os.path.join(out, "fused.ptx")) as f:
            stores = len(re.findall(r"\bst\.global", f.read()))
        self.check(stores == 1, "only the output is stored", f"{stores} stores")
        p = self.run("validate", out)
        self.check(p.returncode == 0, "the aggressive plan validates (dropped buffers left out)", p.stdout + p.stderr)

    def ptx_opt(self):
        """`kfuse ptx opt`, one pipeline per pass, on the examples' nvcc PTX; every output must pass ptxas."""
        ptx_dir = os.path.join(self.args.build, "examples", "driver_api", "ptx")
        chain = os.path.join(ptx_dir, "elementwise_chain.ptx")
        small = os.path.join(ptx_dir, "many_small_kernels.ptx")
        mlp = os.path.join(ptx_dir, "mlp_block.ptx")
        cases = {
            "fuse-vertical": ([chain], "fuse-vertical{kernels=scale+add,name=f,equal=0.1=1.0+0.3=1.3}", "f"),
            "fuse-horizontal": ([small], "fuse-horizontal{kernels=axpb+square,shapes=4/256+2/128,layout=thread,name=f}",
                                "f"),
            "cleanup": ([chain], "fuse-vertical{kernels=relu+mul,name=f,equal=0.1=1.0},cleanup{kernels=f,params=true}",
                        "f"),
            "keep-only": ([chain], "keep-only{kernels=add}", "add"),
            "merge": ([chain, mlp], "fuse-vertical{kernels=scale+gelu,name=f,equal=0.1=1.0+0.3=1.2}", "f"),
        }
        for what, (inputs, pipeline, kernel) in cases.items():
            out = os.path.join(self.tmp, f"opt-{what}.ptx")
            p = self.run("ptx", "opt", *inputs, "--passes=" + pipeline, "-o", out)
            self.check(p.returncode == 0 and os.path.exists(out), f"ptx opt runs {what}", p.stderr)
            if p.returncode != 0:
                continue
            with open(out) as f:
                text = f.read()
            self.check(f".entry {kernel}(" in text, f"ptx opt {what}: the output has kernel {kernel}")
            if what == "keep-only":
                self.check(text.count(".entry") == 1, "keep-only leaves one kernel", str(text.count(".entry")))
            p = self.run("ptx", "roundtrip", out, "--arch", "sm_90")
            self.check(p.returncode == 0, f"ptx opt {what}: the output compiles with ptxas and round-trips",
                       p.stdout + p.stderr)
        p = self.run("ptx", "opt", chain, "--passes=fuse-vertical{kernels=scale}")
        self.check(p.returncode == 2 and "at least two kernels" in p.stderr, "ptx opt refuses a bad pipeline", p.stderr)
        p = self.run("ptx", "opt", "--list")
        self.check(p.returncode == 0 and all(k in p.stdout for k in ("fuse-vertical", "fuse-horizontal", "fuse-block-level",
                                                                     "fuse-epilogue", "fuse-prologue")),
                   "ptx opt --list names a pass for every fusion kind", p.stdout)

    def from_binary(self, trace):
        """A trace without module images: refused with a hint, then rewritten from the application's fatbin."""
        import sqlite3
        stripped = os.path.join(self.tmp, "chain-no-images.sqlite")
        shutil.copy(trace, stripped)
        db = sqlite3.connect(stripped)
        db.execute("DELETE FROM module_image")
        db.commit()
        db.close()
        out = os.path.join(self.tmp, "plan-from-binary")
        p = self.run("rewrite", stripped, "--candidate", "1", "-o", out)
        self.check(p.returncode == 2 and "--binary" in p.stderr and not os.path.exists(out),
                   "a trace without module images is refused with a hint to pass --binary", p.stderr)
        fatbin = os.path.join(self.tmp, "elementwise_chain.fatbin")
        cu = os.path.join(self.args.source, "examples", "driver_api", "elementwise_chain.cu")
        nvcc = subprocess.run([self.args.nvcc, "-fatbin", "-gencode", "arch=compute_90,code=compute_90", "-o", fatbin,
                               cu], capture_output=True, text=True)
        self.check(nvcc.returncode == 0, "nvcc builds the example's fatbin", nvcc.stderr)
        p = self.run("rewrite", stripped, "--candidate", "1", "--binary", fatbin, "-o", out)
        self.check(p.returncode == 0, "--binary takes the PTX from the application's fatbin", p.stdout + p.stderr)

    def forced_layouts(self, trace):
        """Each horizontal layout on a recorded pair (the cost model picks block partitioning for these)."""
        for layout, name in (("block", "block-partitioned"), ("thread", "thread-partitioned")):
            out = os.path.join(self.tmp, f"small-{layout}")
            p = self.run("rewrite", trace, "--candidate", "1", "--layout", layout, "--arch", ARCHS, "-o", out)
            self.check(p.returncode == 0, f"--layout {layout} rewrites and validates a horizontal pair",
                       p.stdout + p.stderr)
            if p.returncode == 0:
                plan = self.validate_schema(os.path.join(out, "plan.json"))
                self.check(plan is not None and plan.get("layout") == name, f"the plan says {name}",
                           str(plan.get("layout") if plan else None))

    def block_level(self, trace):
        out = os.path.join(self.tmp, "residual_layernorm.all.json")
        p = self.run("analyze", trace, "--all", "--json", out, "--no-store")
        self.check(p.returncode == 0, "analyze --all residual_layernorm", p.stderr)
        with open(out) as f:
            cands = {tuple(k["name"] for k in c["kernels"]): c for c in json.load(f)["candidates"]}
        # Row b (h = 256 floats) is written by grid-stride blocks 2b and 2b + 1 (128 threads each): block 0's row by
        # blocks 0 and 1, of which the interval analysis names the other one. scale_by_max's block 0 reads every
        # row's rms, which the other row_rms blocks write (its first unrolled load covers rms[0..60]).
        refused = {("residual_add_strided", "layernorm"): "layernorm block 0 (line",
                   ("row_rms", "scale_by_max"): "scale_by_max block 0 (line"}
        for pair, phrase in refused.items():
            c = cands.get(pair)
            self.check(c is not None and c["legality"] == "blocked" and any(
                "block-level fusion refused: " + phrase in r and pair[0] + " block" in r for r in c["reasons"]),
                       f"{pair[0]} -> {pair[1]} is refused per block, naming the blocks", json.dumps(c)[:800])
        program = os.path.join(self.args.build, "examples", "driver_api", "residual_layernorm")
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(self.args.build, "standin"))
        base = subprocess.run([program], capture_output=True, text=True, env=env, timeout=300)
        # A row-wise producer, and a block reduction (row_rms: barriers inside the producer, thread 0 writes).
        for pair in [("residual_add_rows", "layernorm"), ("row_rms", "scale_rows")]:
            what = f"{pair[0]} -> {pair[1]}"
            c = cands.get(pair)
            self.check(c is not None and c["legality"] == "proven" and c["fusion"] == "block-level"
                       and c["occurrences"] == 2, f"{what} is proven block-level", json.dumps(c)[:800])
            if not c:
                continue
            plan = os.path.join(self.tmp, "block-level-plan-" + pair[0])
            p = self.run("rewrite", trace, "--no-gain", "--candidate", str(c["rank"]), "--arch", ARCHS, "-o", plan)
            self.check(p.returncode == 0 and "validation: passed" in p.stdout,
                       f"{what}: the block-level fusion rewrites and validates on the emulator", p.stdout + p.stderr)
            if p.returncode != 0:
                continue
            j = self.validate_schema(os.path.join(plan, "plan.json"))
            self.check(j is not None and j.get("fusion") == "block-level", f"{what}: the plan says fusion block-level")
            with open(os.path.join(plan, "fused.ptx")) as f:
                ptx = f.read()
            # The producer's body ends at a barrier before the consumer's first instruction (declarations hoisted);
            # the last producer instruction before it is the producer's own (its returns branch there).
            code = [l.strip() for l in ptx[ptx.index(".entry"):].splitlines()
                    if l.strip() and not l.strip().startswith((".reg", ".shared", ".local", "//"))]
            first_consumer = next((i for i, l in enumerate(code) if "%k1_" in l), -1)
            bars = [i for i, l in enumerate(code[:max(first_consumer, 0)]) if l.startswith("bar.sync")]
            self.check(first_consumer > 0 and bars and any("%k0_" in l for l in code[:bars[-1]]),
                       f"{what}: a block barrier separates the producer's part from the consumer's",
                       "\n".join(code[:80]))
            stats = os.path.join(self.tmp, "block-level-" + pair[0] + ".stats.json")
            p = self.run("run", "--plan", plan, "--stats", stats, "--", program, env=env)
            checksum = [l for l in p.stdout.splitlines() if "checksum" in l]
            self.check(p.returncode == 0 and checksum and checksum == [l for l in base.stdout.splitlines()
                                                                       if "checksum" in l],
                       f"{what}: the unmodified program under kfuse run prints the same checksum", p.stdout + p.stderr)
            if os.path.exists(stats):
                with open(stats) as f:
                    st = json.load(f)["plans"][0]
                self.check(st["occurrences_fused"] == 2 and not st["predicate_failures"],
                           f"{what}: both occurrences are fused at run time", json.dumps(st))

    def prologue(self, trace):
        out = os.path.join(self.tmp, "activation_matmul.all.json")
        p = self.run("analyze", trace, "--all", "--json", out, "--no-store")
        self.check(p.returncode == 0, "analyze --all activation_matmul", p.stderr)
        with open(out) as f:
            cands = [c for c in json.load(f)["candidates"] if c["kernels"][0]["name"] in ("silu", "silu_vec4")]
        proven = {(c["kernels"][0]["name"], c["kernels"][1]["name"]): c for c in cands if c["legality"] == "proven"}
        # A tiled GEMM; one loading its tiles as float4 vectors (each lane recomputed); the tiled GEMM after an
        # activation storing float4 vectors (each load takes its lane of the vector).
        pairs = [("silu", "matmul_tiled"), ("silu", "matmul_tiled_vec4"), ("silu_vec4", "matmul_tiled")]
        for pair in pairs:
            c = proven.get(pair)
            self.check(c is not None and c["fusion"] == "prologue" and c["occurrences"] == 2,
                       f"{pair[0]} -> {pair[1]} is proven as a prologue fusion on its 2 occurrences",
                       json.dumps(cands)[:1500])
        # The near misses: the activation leaves the last 32 elements unwritten; the GEMM overwrites its input.
        for phrase, what in [("which silu never writes", "a ragged activation"),
                             ("which silu reads", "a GEMM writing over the activation's input")]:
            self.check(any(c["legality"] == "blocked" and c["fusion"] == "prologue" and
                           any(phrase in r for r in c["reasons"]) for c in cands),
                       f"prologue: {what} is refused with its reason", json.dumps(cands)[:1500])
        program = os.path.join(self.args.build, "examples", "driver_api", "activation_matmul")
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(self.args.build, "standin"))
        base = subprocess.run([program], capture_output=True, text=True, env=env, timeout=300)
        checksum = [l for l in base.stdout.splitlines() if "checksum" in l]
        # (pair, --aggressive, exponentials in the fused kernel: silu's body has one, silu_vec4's four, copied once
        # per lane of each replaced load plus once for the producer's own threads unless dropped; predicate failures
        # at run time: silu -> matmul_tiled's pattern also matches the 2 near misses).
        runs = [(pairs[0], False, 2, 4), (pairs[0], True, 1, 4), (pairs[1], False, 5, 0), (pairs[2], False, 8, 0)]
        for pair, aggressive, copies, refusals in runs:
            if pair not in proven:
                continue
            what = f"prologue {pair[0]} -> {pair[1]}" + (" --aggressive" if aggressive else "")
            plan = os.path.join(self.tmp, f"prologue-plan-{pair[0]}-{pair[1]}" + ("-aggressive" if aggressive else ""))
            p = self.run("rewrite", trace, "--candidate", str(proven[pair]["rank"]), "--arch", ARCHS, "-o", plan,
                         *(["--aggressive"] if aggressive else []))
            self.check(p.returncode == 0 and "validation: passed" in p.stdout,
                       f"{what}: the fusion rewrites and validates on the emulator", p.stdout + p.stderr)
            if p.returncode != 0:
                continue
            j = self.validate_schema(os.path.join(plan, "plan.json"))
            self.check(j is not None and j.get("fusion") == "prologue" and j["fused_kernel"]["grid"] == [4, 4, 1],
                       f"{what}: the plan says fusion prologue and launches the GEMM's grid", json.dumps(j)[:800])
            dropped = (j or {}).get("dropped_buffers", [])
            self.check(dropped == ([{"kernel": 0, "arg": 1}] if aggressive else []),
                       f"{what}: the activation's output is dropped only with --aggressive", json.dumps(dropped))
            with open(os.path.join(plan, "fused.ptx")) as f:
                n = f.read().count("ex2.approx")  # silu's exponential
            self.check(n == copies, f"{what}: the activation's body is copied into the GEMM ({copies} ex2)", f"{n} ex2")
            stats = os.path.join(self.tmp, os.path.basename(plan) + ".stats.json")
            p = self.run("run", "--plan", plan, "--stats", stats, "--", program, env=env)
            got = [l for l in p.stdout.splitlines() if "checksum" in l]
            self.check(p.returncode == 0 and checksum and got == checksum,
                       f"{what}: the unmodified program under kfuse run prints the same checksum", p.stdout + p.stderr)
            if os.path.exists(stats):
                with open(stats) as f:
                    st = json.load(f)["plans"][0]
                # The near misses match the pattern's kernels; their arguments fail the guards and run unfused.
                self.check(st["occurrences_fused"] == 2 and sum(st["predicate_failures"].values()) == refusals,
                           f"{what}: both occurrences fuse at run time, the near misses do not", json.dumps(st))

    def arena_matches(self, separate, arena):
        def summary(trace):
            out = os.path.join(self.tmp, os.path.basename(trace) + ".all.json")
            p = self.run("analyze", trace, "--all", "--json", out, "--no-store")
            self.check(p.returncode == 0, f"analyze --all {trace}", p.stderr)
            with open(out) as f:
                r = json.load(f)
            cands = sorted((tuple(k["name"] for k in c["kernels"]), c["fusion"], c["legality"], c["occurrences"],
                            round(c["predicted_saving_ns_total"], 3)) for c in r["candidates"])
            return cands, r["summary"]["edges_by_kind"]
        s_cands, s_edges = summary(separate)
        a_cands, a_edges = summary(arena)
        self.check(s_cands == a_cands and any(c[2] == "proven" for c in s_cands),
                   "mlp_block_arena: the same candidates, proofs and savings as mlp_block",
                   f"separate {s_cands} arena {a_cands}")
        self.check(s_edges == a_edges, "mlp_block_arena: the same dependency edges as mlp_block",
                   f"separate {s_edges} arena {a_edges}")

    def rewrite_all(self, trace):
        out = os.path.join(self.tmp, "all-plans")
        p = self.run("rewrite", trace, "--all", "--arch", ARCHS, "-o", out)
        self.check(p.returncode == 0, "rewrite --all writes the chosen consistent set", p.stdout + p.stderr)
        dirs = sorted(os.listdir(out)) if os.path.isdir(out) else []
        self.check(len(dirs) >= 1 and all(d.startswith("candidate-") for d in dirs), "one directory per candidate",
                   str(dirs))


    def report_handoff(self, trace):
        """`kfuse rewrite --candidate ID|RANK` rewrites the candidate `kfuse analyze` printed under that id or rank,
        whatever analyze's options: from the report stored in the trace, or from --report FILE."""
        def kernels(c):
            return [k["mangled_name"] for k in c["kernels"]]

        def planned(plan_dir):
            with open(os.path.join(plan_dir, "plan.json")) as f:
                return [k["mangled_name"] for k in json.load(f)["pattern"]["kernels"]]

        two = os.path.join(self.tmp, "handoff-chain2.json")
        p = self.run("analyze", trace, "--max-chain", "2", "--all", "--json", two)
        self.check(p.returncode == 0, "analyze --max-chain 2 --all stores its report", p.stderr)
        with open(two) as f:
            stored = json.load(f)["candidates"]
        pairs = [c for c in stored if c["legality"] == "proven" and len(c["kernels"]) == 2]
        self.check(len(pairs) >= 2, "--max-chain 2 proposes proven pairs", json.dumps([kernels(c) for c in stored]))
        for c in pairs[:2]:
            for which in (c["id"], str(c["rank"])):
                out = os.path.join(self.tmp, f"handoff-{which}")
                p = subprocess.run([self.args.kfuse, "rewrite", trace, "--candidate", which, "-o", out],
                                   capture_output=True, text=True, timeout=300)
                self.check(p.returncode == 0 and planned(out) == kernels(c) and
                           "candidates from the report `kfuse analyze` stored in" in p.stderr,
                           f"rewrite --candidate {which} rewrites the stored report's {kernels(c)}",
                           p.stdout + p.stderr[-800:])
        # Another report of the same trace (the default chains of 4, not stored), named with --report.
        four = os.path.join(self.tmp, "handoff-chain4.json")
        p = self.run("analyze", trace, "--json", four, "--no-store")
        with open(four) as f:
            longest = json.load(f)["candidates"][0]
        out = os.path.join(self.tmp, "handoff-report")
        p = self.run("rewrite", trace, "--report", four, "--candidate", longest["id"], "-o", out)
        self.check(p.returncode == 0 and planned(out) == kernels(longest) and len(kernels(longest)) == 4,
                   "rewrite --report FILE --candidate ID rewrites that report's candidate", p.stdout + p.stderr)
        p = self.run("rewrite", trace, "--report", four, "--candidate", pairs[0]["id"], "-o", out + "-x")
        self.check(p.returncode == 2 and pairs[0]["id"] in p.stderr and four in p.stderr,
                   "an id another report gave is not found in this one, and the error names the report", p.stderr)
        # A PyTorch trace analyzed with its Execution Trace: its tensor-level data flow shows that no adjacent pair
        # shares data, so that report has no candidate 1, while an analysis without --et (what rewrite did before
        # reading reports back) proposes one. rewrite --report must follow the report.
        kineto = os.path.join(self.args.source, "..", "shared", "data", "kineto", "hta_simple_add.json.gz")
        et = os.path.join(self.args.source, "..", "shared", "data", "kineto", "hta_simple_add_et.json.gz")
        if os.path.exists(kineto) and os.path.exists(et):
            with_et, without = os.path.join(self.tmp, "handoff-et.json"), os.path.join(self.tmp, "handoff-no-et.json")
            p = self.run("analyze", kineto, "--et", et, "--json", with_et)
            q = self.run("analyze", kineto, "--json", without)
            with open(with_et) as f:
                report = json.load(f)
            with open(without) as f:
                plain = json.load(f)
            self.check(p.returncode == 0 and q.returncode == 0 and report["options"]["execution_trace"] == et and
                       not report["candidates"] and plain["candidates"],
                       "analyze --et finds no pair sharing data where the analysis without it proposes one",
                       p.stderr + q.stderr)
            p = self.run("rewrite", kineto, "--report", with_et, "--candidate", "1", "-o",
                         os.path.join(self.tmp, "handoff-kineto-plan"))
            self.check(p.returncode == 2 and "no candidate 1 in " + with_et in p.stderr,
                       "rewrite --report of the --et analysis takes that report's candidates", p.stderr)
            p = self.run("rewrite", kineto, "--report", without, "--candidate", plain["candidates"][0]["id"], "-o",
                         os.path.join(self.tmp, "handoff-kineto-plan"))
            self.check(p.returncode == 2 and "not proven" in p.stderr,
                       "the candidate of the analysis without --et is found, and refused as not proven", p.stderr)
        else:
            self.check(False, "the shared Kineto trace and its Execution Trace are in ../shared/data/kineto")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--nvcc", default="nvcc")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kfuse_rewrite_") as tmp:
        c = Checker(args, tmp)
        traces = {name: c.record(name) for name in EXAMPLES}
        plans = {}
        for name in EXAMPLES:
            plans[name] = c.rewrite_all_proven(name, traces[name])
        kinds = {plan["fusion"] for ps in plans.values() for _, _, plan in ps}
        c.check("thread-local" in kinds, "some thread-local vertical fusion was rewritten", str(kinds))
        c.check("horizontal" in kinds, "some horizontal fusion was rewritten", str(kinds))
        chain = [out for cand, out, plan in plans["elementwise_chain"] if plan["fusion"] != "horizontal"]
        c.check(bool(chain), "the elementwise chain rewrote")
        if chain:
            c.corrupted_plan_fails(chain[0])
            c.bad_plans_are_refused(chain[0])
        c.aggressive(traces["elementwise_chain"])
        c.ptx_opt()
        c.from_binary(traces["elementwise_chain"])
        c.forced_layouts(traces["many_small_kernels"])
        c.rewrite_all(traces["many_small_kernels"])
        c.block_level(traces["residual_layernorm"])
        c.prologue(traces["activation_matmul"])
        c.arena_matches(traces["mlp_block"], traces["mlp_block_arena"])
        c.report_handoff(traces["elementwise_chain"])
        print(f"{c.passed} checks passed, {len(c.failures)} failed")
        return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
