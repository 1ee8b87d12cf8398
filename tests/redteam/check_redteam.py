#!/usr/bin/env python3
"""Red-team soundness suite: `kfuse run` must never change a program's output.

Each case (tests/redteam/redteam.cpp, kernels in redteam.cu compiled by nvcc) is a short sequence of launches (on
one stream, but for hor_hidden_split) whose fusion is legal for the arguments of its `legal` mode and illegal for
those of its `illegal` mode; both modes launch the same kernels in the same order. For each case: record the legal mode on the stand-in driver
(`kfuse record`), `kfuse analyze --all`, `kfuse rewrite --no-gain` every proven candidate, then run the program in
both modes without kfuse and under `kfuse run` with every plan written. The checksum of every buffer must be the
same with and without kfuse, in both modes: kfuse either refuses to prove, refuses to rewrite, refuses to inject (a
plan predicate fails at run time), or the output is bit-identical. Outcomes per case and mode:

  not-proven       no candidate of the legal recording is proven
  not-rewritten    proven candidates exist, but `kfuse rewrite` refused them all (exit 2) or validation failed (exit 1)
  refused-at-run   plans were written; a predicate refused every occurrence, nothing was fused
  unmatched        plans were written, but no occurrence matched them (nothing fused, no predicate failed)
  fused-identical  at least one occurrence was fused and the output is bit-identical
  FAIL changed-output   the output under `kfuse run` differs from the plain run's
  FAIL legal-not-fused  the case's legal variant is a fusion kfuse must prove and inject, and nothing was fused

`--force` additionally runs the illegal mode with every plan's predicates removed: a diagnostic showing which illegal variants really change the output once fused ("sharp").

Usage: check_redteam.py --kfuse BIN --program BIN --ptx-dir DIR --standin DIR [--jobs N] [--keep DIR] [--force]
                        [CASE...]
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

# name -> (class, fusion kind the case attacks, legal_fused, what the illegal arguments do).
# class: 1 a scalar reaching an address only through non-affine arithmetic; 2 writes after writes; 3 the
# producer -> consumer buffer relation; 4 aliasing, partial coverage, in-place, atomics, gathers, reversed indices,
# dynamic shared memory, guards, NULL pointers, pitches, loop trip counts, grid-stride loops.
# legal_fused: the legal variant is a truly legal fusion of a kind kfuse proves today (affine accesses, or a
# block-level / prologue proof from the interval analysis of the recorded arguments), so the suite fails when nothing
# is fused in the legal mode. False where the legal variant needs non-affine arithmetic, a loop, a gather, atomics,
# a NULL pointer or the dynamic shared memory size to be understood, which kfuse may rightly refuse.
CASES = {
    # ---- class 1 ----
    # z[max(i, k)]: k = 0 is z[i]; k = 700 reads elements later threads write. max(i, 0) is provable per block by the
    # interval analysis (block-level), not as an affine form, so a kfuse that refuses it is not wrong.
    "tl_max_raw": (1, "thread-local", False, "k = 700: reads elements later threads write"),
    "tl_select_raw": (1, "thread-local", False, "k = 0 selects z[n - 1 - i]"),
    "tl_mul_raw": (1, "thread-local", False, "k = 2: z[2 i], written by thread 2 i"),
    "tl_min_war": (1, "thread-local", False, "k = 100: reads z[100] after thread 100 overwrote it"),
    "tl_div_war": (1, "thread-local", False, "k = 3: reads z[i / 3], already overwritten"),
    "tl_rem_war": (1, "thread-local", False, "k = 100: reads z[i % 100], already overwritten"),
    "tl_shr_war": (1, "thread-local", False, "k = 2: reads z[i >> 2], already overwritten"),
    "tl_and_war": (1, "thread-local", False, "k = 0x3c0: reads z[i & k], already overwritten"),
    "pro_min": (1, "prologue", False, "k = 1023: reads elements 1000..1023 the producer never writes"),
    "pro_max": (1, "prologue", False, "k = 1010: reads an element the producer never writes"),
    "pro_or": (1, "prologue", False, "k = 0x200: reads elements the producer never writes"),
    # Row max(b, 0) = b, min(b, 7) = b: the block-level proof bounds each block's bytes by interval analysis for the
    # recorded arguments (docs/analyzer.md, ptx::BlockRanges), where min/max of a block index and a scalar are exact;
    # the plan must pin k (it does: the illegal k fails `proven_values`).
    "blk_max_raw": (1, "block-level", True, "k = 5: blocks 0-4 read row 5 before block 5 writes it"),
    # The same outside any loop (rows of blockDim.x elements, one per thread).
    "blk_max_noloop": (1, "block-level", True, "k = 5: blocks 0-4 read row 5 before block 5 writes it"),
    # A pointer used as a number (ptx::ParamInfluence::absolute): the row comes from the distance between two
    # buffers or from an address's bits, minus a bias that makes it row 0 when recorded; the illegal mode only
    # moves the buffers. Such a verdict holds only at the recorded addresses, which validation on fresh buffers
    # cannot reproduce, so kfuse keeps it `likely` (not fused, even legally).
    "addr_distance_blk": (1, "block-level", False, "buffers moved by 12 KiB: the distance is another row"),
    "addr_bits_blk": (1, "block-level", False, "buffers moved by 12 KiB: the address bits are another row"),
    "blk_min_war": (1, "block-level", True, "k = 2: blocks 3-7 read row 2 after block 2 overwrote it"),
    "hor_max_war": (1, "horizontal", False, "k = 4096 + 600: the writer lands on what the reader reads (WAR race)"),
    "hor_min_war": (1, "horizontal", False, "k = 600 - 4096: the writer lands on what the reader reads (WAR race)"),
    "epi_max_raw": (1, "epilogue", False, "k = 500: consumer threads read element 500 before it is stored"),
    "epi_min_war": (1, "epilogue", False, "k = 100: the producer reads x[100] after consumer thread 100 wrote it"),
    # ---- class 2 ----
    "waw_rd_slowfill_fill": (2, "horizontal", False, "slowfill covers 300 elements instead of 100; fill must still win"),
    # The legal variant already holds a write-after-write pair (slowfill, then fill over it) that must stay ordered;
    # side by side in one launch, slowfill's single block runs first on the emulator whatever the layout, so a wrong
    # fusion does not show here: waw_rd_lastfill_fill moves the partial writer's work to its last block, which does.
    "waw_rd_lastfill_fill": (2, "horizontal", False, "lastfill covers 300 elements instead of 100; fill must still "
                                                     "win"),
    "waw_fill_slowfill": (2, "horizontal", False, "slowfill covers 1000 elements instead of 300; it must still win"),
    "waw_tl_back": (2, "thread-local", True, "s = 200: a later thread's first write lands after an earlier thread's "
                                             "second write"),
    "waw_blk_back": (2, "block-level", True, "s = 1: block b writes row b - 1 after block b - 1's second write"),
    "waw_read_between": (2, "thread-local", True, "s = 64: the second write lands where later threads still read "
                                                  "and first write"),
    "waw_hor_shift": (2, "horizontal", True, "the second writer writes one block into the first writer's buffer"),
    # fill -> rd_prefix is an epilogue (a 16-block producer, a 2-block consumer reading its own elements).
    "waw_slowfill_fill_rd": (2, "epilogue", True, "fill writes 200 elements, rd reads 256"),
    # ---- class 3 ----
    "tl_ptr_cons_other": (3, "thread-local", True, "the consumer's input points into another allocation"),
    "tl_ptr_prod_other": (3, "thread-local", True, "the producer's output points into another allocation"),
    "tl_ptr_arena_shift": (3, "thread-local", True, "the consumer's input is one element further into the arena"),
    "epi_ptr_cons_other": (3, "epilogue", True, "the consumer's input (output + 4 bytes) points into another "
                                                "allocation"),
    "epi_ptr_prod_other": (3, "epilogue", True, "the producer's output points into another allocation"),
    "epi_ptr_arena": (3, "epilogue", True, "the consumer's input is 200 elements on instead of 1"),
    "pro_ptr_cons_other": (3, "prologue", True, "the consumer's input (output + 4 bytes) points into another "
                                                "allocation"),
    "pro_ptr_prod_other": (3, "prologue", True, "the producer's output points into another allocation"),
    "pro_ptr_arena": (3, "prologue", True, "the consumer's input is 40 elements on: elements never written"),
    "blk_ptr_row_shift": (3, "block-level", True, "the consumer's input is one row further (a later block's row)"),
    "blk_ptr_prod_shift": (3, "block-level", True, "the producer's output is one row back"),
    # ---- class 4 ----
    "alias_tl_w_into_z": (4, "thread-local", True, "the consumer's second input is the intermediate + 1 element"),
    "alias_tl_out_into_in": (4, "thread-local", True, "the consumer's output is the producer's input + 1 element"),
    # Horizontal fusion of independent kernels: kfuse fuses many_small_kernels' pairs today.
    "hor_alias": (4, "horizontal", True, "the writer writes one block into what the reader reads"),
    # A member the analysis cannot see into is left out of a horizontal group only when it is on a stream of its own.
    "hor_hidden_split": (4, "horizontal", True, "the hidden writer runs between the two on their stream and writes "
                                                "what the reader reads"),
    "vmm_tl_alias": (4, "thread-local", True,
                     "V2 maps V1's physical memory (cuMemMap twice): the consumer reads the intermediate + 1 element"),
    "vmm_hor_alias": (4, "horizontal", True,
                      "V2 maps V1's physical memory (cuMemMap twice): the writer writes into what the reader reads"),
    "partial_tl": (4, "thread-local", True, "the producer writes 900 of the 1024 elements the consumer reads"),
    "partial_epi": (4, "epilogue", True, "the producer writes 12 of 16 rows"),
    "partial_pro": (4, "prologue", True, "the producer writes 900 of the 1024 elements the consumer reads"),
    "inplace_pro": (4, "prologue", True, "the producer runs in place (x == out)"),
    # Legal (one counter per thread), but kfuse refuses atomics on a shared buffer by design.
    # Block-level with k = 1 is legal (each block touches its own counters) and kfuse proves it today; still False:
    # a kfuse that refuses atomics on a shared buffer for every kind is sound.
    "atomic_bucket": (4, "block-level", False, "k = 100: counters shared by threads of two blocks"),
    "gather_tl": (4, "thread-local", False, "idx is a rotation instead of the identity"),
    "gather_pro": (4, "prologue", False, "idx rotated reaches elements the producer never writes"),
    "reverse_tl": (4, "thread-local", False, "n = 1000 instead of 1024 (never thread-local)"),
    # Legal (every element read is one the producer writes), but nvcc writes n - 1 - e as n + ~e (not.b32), which
    # kfuse's footprint analysis does not follow today: "which bytes ... p2_rd_rev reads could not be bounded".
    "reverse_pro": (4, "prologue", False, "n = 1024: reads elements the producer never writes"),
    # The consumer's address depends on %dynamic_smem_size: refusing is the sound answer.
    "dynsmem_tl": (4, "thread-local", False, "the consumer is launched with 1024 bytes of dynamic shared memory"),
    # The producer uses 1024 bytes of dynamic shared memory, the consumer none but reads its size: a fused kernel
    # launched with the larger size changes the consumer's loop bound even for the legal arguments.
    "dynsmem_blk": (4, "block-level", False, "the consumer is launched with 256 bytes of dynamic shared memory"),
    # A producer whose values depend on its own dynamic shared memory size, recomputed inside a consumer launched
    # with none; a consumer reading its size, run inside a producer launched with another: refusing is the answer
    # (docs/rewriter.md: such kernels read a special register the fused kernel cannot give them).
    "dynsmem_pro": (4, "prologue", False, "the producer is launched with 512 bytes instead of 256"),
    "dynsmem_epi": (4, "epilogue", False, "the consumer is launched with 128 bytes instead of 64"),
    # Horizontal parts each get their own %dynamic_smem_size (docs/rewriter.md, horizontal fusion).
    "dynsmem_hor": (4, "horizontal", True, "the writer is launched with 256 bytes instead of 128"),
    "grid_epi": (4, "epilogue", True, "the unguarded consumer runs on 9 blocks instead of 8"),
    # The neighbour read sits under `i < k`, k = 0: an empty domain when guards are bound to the recorded values
    # (docs/analyzer.md: guards narrow the thread domain). If kfuse drops the guard, this becomes not-proven.
    "guard_tl": (4, "thread-local", True, "k = n - 1: every thread reads its neighbour"),
    "guard_epi": (4, "epilogue", True, "k = n + 64: consumer threads beyond the producer's elements write"),
    # An optional pointer: NULL when recorded, so the guarded load never runs and the pair is proven with the NULL
    # pinned; the illegal mode passes a real pointer (into the intermediate, one element on), which must be refused.
    "null_bias_tl": (4, "thread-local", True, "bias = the intermediate + 1 element instead of NULL"),
    "null_bias_epi": (4, "epilogue", True, "bias = the intermediate + 1 element instead of NULL"),
    "null_bias_pro": (4, "prologue", True, "bias = the intermediate + 1 element instead of NULL"),
    "null_bias_blk": (4, "block-level", True, "bias = the intermediate + 1 element instead of NULL"),
    "pitch2d_tl": (4, "thread-local", True, "pitch = w + 1: row r reads r elements ahead"),
    "loop_trip_tl": (4, "thread-local", False, "k = 4: reads 3 later blocks' elements"),
    # Proven block-level for the recorded h and k, which the plan pins (validation once also tried lowered sizes the
    # proof does not cover, and failed there).
    "loop_trip_blk": (4, "block-level", True, "k = h + 128: reads half of the next block's row"),
    # Grid-stride loops: thread t touches t + k * stride; with stride = grid * block the elements are the thread's
    # own for every k (ptx induction variables, docs/analyzer.md). The plan pins the strides.
    "gridstride_tl": (4, "thread-local", True, "the consumer's stride is half the producer's"),
    "gridstride_ahead_tl": (4, "thread-local", True, "the consumer reads one element ahead (the next thread's)"),
    "gridstride_chain_tl": (4, "thread-local", True, "the last kernel writes one element past the first's input"),
    # Legal: the consumer reads what the same thread's next step writes (the loops must not be merged into one).
    "gridstride_next_step_tl": (4, "thread-local", True, "the consumer reads the next thread's next-step element"),
    "gridstride_merged_tl": (4, "thread-local", True, "the consumer reads the next thread's element"),
    # Grid-stride kernels fused element by element with a kernel of another shape (run as one element per thread).
    "gridstride_epi": (4, "epilogue", True, "the grid-stride consumer reads the next element"),
    "gridstride_bound_epi": (4, "epilogue", True, "the grid-stride consumer runs 128 elements past the producer's"),
    "gridstride_inplace_epi": (4, "epilogue", True, "the in-place grid-stride consumer reads the next element, "
                                                    "which another iteration overwrites"),
    # Causal row loops (attention's softmax and value), unrolled with per-thread trip counts.
    "causal_blk": (4, "block-level", True, "the consumer reads the rows another block writes"),
    # A row read through a remainder computed from the quotient (the interval analysis bounds it to the row).
    "rem_footprint_tl": (4, "thread-local", True, "the producer reads its row from where the consumer writes"),
    # nvcc's unrolled layout (a remainder loop, then four copies of the body per step), read as one body per index.
    "gridstride_unrolled_epi": (4, "epilogue", True, "the unrolled in-place consumer reads the next element, "
                                                     "which another iteration overwrites"),
    "gridstride_unrolled_same_epi": (4, "epilogue", True, "the unrolled consumer runs 128 elements past the "
                                                          "producer's"),
    "gridstride_producer_epi": (4, "epilogue", True, "the consumer reads the next element, which another iteration "
                                                     "of the unrolled grid-stride producer writes"),
    "gridstride_pro": (4, "prologue", True, "the grid-stride producer writes 64 elements less than the consumer reads"),
    "arena_overlap_tl": (4, "thread-local", True, "the consumer's output starts at the producer's input's last "
                                                  "element (4 bytes of overlap in the arena)"),
    "arena_overlap_epi": (4, "epilogue", True, "the consumer's output starts at the producer's input's last element"),
    # The legal part of a blocked chain is proven on its own (issue: blocked chains swallow legal sub-chains).
    "sub_chain_tl": (4, "thread-local", True, "the middle kernel writes one element past what the first reads"),
}

# Cases whose illegal mode is also recorded and analyzed: no candidate proven for the legal recording may be proven
# for the illegal one (the analyzer's own verdict, not only the plan's run-time predicates).
ANALYZE_ILLEGAL = {"arena_overlap_tl", "arena_overlap_epi", "sub_chain_tl", "tl_ptr_arena_shift", "epi_ptr_arena",
                   "pro_ptr_arena", "gridstride_tl", "gridstride_ahead_tl", "gridstride_chain_tl",
                   "gridstride_next_step_tl", "gridstride_merged_tl", "gridstride_epi", "gridstride_bound_epi", "gridstride_inplace_epi",
                   "gridstride_unrolled_epi", "gridstride_unrolled_same_epi", "gridstride_producer_epi",
                   "rem_footprint_tl", "causal_blk",
                   "gridstride_pro", "null_bias_tl", "null_bias_epi", "null_bias_pro", "null_bias_blk",
                   "vmm_tl_alias", "vmm_hor_alias", "hor_hidden_split"}

MODES = ("legal", "illegal")


def kernels(candidate):
    return f"{candidate['fusion']} " + "+".join(k["name"] for k in candidate["kernels"])


def checksums(stdout):
    return [line for line in stdout.splitlines() if line.startswith("redteam ")]


class Case:
    def __init__(self, args, name, tmp):
        self.args = args
        self.name = name
        self.dir = os.path.join(tmp, name)
        shutil.rmtree(self.dir, ignore_errors=True)  # --keep DIR from an earlier run
        os.makedirs(self.dir)
        self.env = dict(os.environ, LD_LIBRARY_PATH=args.standin, KFUSE_EMU_THREADS="1")
        self.env.pop("KFUSE_DISABLE", None)
        self.cls, self.kind, self.legal_fused, self.what = CASES[name]
        self.outcome = {}
        self.problems = []
        self.details = []
        self.sharp = None
        self.contradicted = []  # proven candidates whose rewrite failed validation: a proof the emulator contradicts

    def path(self, f):
        return os.path.join(self.dir, f)

    def run(self, argv, timeout=300):
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)

    def program(self, mode):
        return [self.args.program, self.args.ptx_dir, self.name, mode]

    def plain(self, mode):
        p = self.run(self.program(mode))
        if p.returncode != 0 or not checksums(p.stdout):
            raise RuntimeError(f"{mode} run without kfuse exited {p.returncode}: {p.stderr.strip()[-400:]}")
        return checksums(p.stdout)

    def under_kfuse(self, plans, mode, tag):
        stats_path = self.path(f"stats-{tag}.json")
        argv = [self.args.kfuse, "-q", "run"] + [a for d in plans for a in ("--plan", d)] + \
               ["--stats", stats_path, "--"] + self.program(mode)
        p = self.run(argv)
        if p.returncode != 0:
            raise RuntimeError(f"{mode} run under kfuse exited {p.returncode}: {p.stderr.strip()[-400:]}")
        with open(stats_path) as f:
            stats = json.load(f)
        fused = sum(s["occurrences_fused"] for s in stats["plans"])
        refused = sum(sum(s["predicate_failures"].values()) for s in stats["plans"])
        failures = {}
        for s in stats["plans"]:
            for k, v in s["predicate_failures"].items():
                failures[k] = failures.get(k, 0) + v
        return checksums(p.stdout), fused, refused, failures

    def recorded_candidates(self, mode, trace, report):
        # Records the program in `mode` and returns every candidate `kfuse analyze --all` reports for it.
        p = self.run([self.args.kfuse, "-q", "record", "-o", trace, "--"] + self.program(mode))
        if p.returncode != 0:
            raise RuntimeError(f"kfuse record ({mode}) exited {p.returncode}: {p.stderr.strip()[-400:]}")
        p = self.run([self.args.kfuse, "-q", "analyze", trace, "--all", "--json", report, "--no-store"])
        if p.returncode != 0:
            raise RuntimeError(f"kfuse analyze ({mode}) exited {p.returncode}: {p.stderr.strip()[-400:]}")
        with open(report) as f:
            return json.load(f)["candidates"]

    def check(self):
        trace = self.path("trace.sqlite")
        cands = self.recorded_candidates("legal", trace, self.path("report.json"))
        proven = [c for c in cands if c["legality"] == "proven"]
        if self.name in ANALYZE_ILLEGAL:
            self.check_illegal_verdicts({kernels(c) for c in proven})
        self.candidates = [(c["rank"], c["fusion"], c["legality"], "+".join(k["name"] for k in c["kernels"]),
                            c["reasons"]) for c in cands]
        plans = []
        for c in proven:
            plan = self.path(f"plan-{c['rank']}")
            # Horizontal groups thread-partitioned: the emulator runs a launch's blocks in order (launches of under
            # 4096 threads on one host thread), so block-partitioned parts run exactly in stream order and no race
            # between them could ever show; side by side in each block, a part's block b runs before the other
            # part's block b + 1.
            layout = ["--layout", "thread"] if c["kind"] == "horizontal" else []
            p = self.run([self.args.kfuse, "-q", "rewrite", trace, "--no-gain", "--candidate", str(c["rank"]), "-o",
                          plan] + layout)
            label = f"#{c['rank']} {c['fusion']} {'+'.join(k['name'] for k in c['kernels'])}"
            if p.returncode == 0:
                plans.append(plan)
                self.details.append(f"{label}: plan written")
            else:
                why = (p.stdout + p.stderr).strip().splitlines()
                if p.returncode == 1:
                    self.contradicted.append(label)
                self.details.append(f"{label}: rewrite exit {p.returncode} "
                                    f"({'refused' if p.returncode == 2 else 'validation failed'}): "
                                    f"{why[-1][:200] if why else ''}")
        for mode in MODES:
            base = self.plain(mode)
            if not proven:
                self.outcome[mode] = "not-proven"
                continue
            if not plans:
                self.outcome[mode] = "not-rewritten"
                continue
            got, fused, refused, failures = self.under_kfuse(plans, mode, mode)
            if got != base:
                diff = [a.split()[1] for a, b in zip(base, got) if a != b] or [f"{len(got)} lines, not {len(base)}"]
                self.outcome[mode] = "FAIL changed-output"
                self.problems.append(f"{mode}: output changed under kfuse run (buffers {', '.join(diff)}; "
                                     f"{fused} occurrence(s) fused)")
            elif fused:
                self.outcome[mode] = "fused-identical"
            elif refused:
                self.outcome[mode] = "refused-at-run"
                self.details.append(f"{mode}: predicate failures {json.dumps(failures)}")
            else:
                self.outcome[mode] = "unmatched"
            if mode == "legal" and self.legal_fused and not fused:
                self.problems.append("legal: a legal fusion kfuse should prove and inject fused nothing")
        if self.legal_fused and self.outcome["legal"] in ("not-proven", "not-rewritten"):
            self.problems.append(f"legal: a legal fusion kfuse should prove and inject was {self.outcome['legal']}")
        if self.args.force and plans:
            self.sharp = self.forced(plans)

    def check_illegal_verdicts(self, proven_legally):
        cands = self.recorded_candidates("illegal", self.path("illegal.sqlite"), self.path("illegal.json"))
        for c in cands:
            if c["legality"] == "proven" and kernels(c) in proven_legally:
                self.problems.append(f"illegal recording: {kernels(c)} is proven ({c['reasons'][-1][:300]})")
            elif kernels(c) in proven_legally:
                self.details.append(f"illegal recording: {kernels(c)} {c['legality']}: {c['reasons'][-1][:300]}")

    def forced(self, plans):
        # Every plan without predicates: does the illegal mode's output change once fused?
        stripped = []
        for d in plans:
            s = d + "-forced"
            shutil.copytree(d, s)
            with open(os.path.join(s, "plan.json")) as f:
                plan = json.load(f)
            plan["pattern"]["predicates"] = []
            with open(os.path.join(s, "plan.json"), "w") as f:
                json.dump(plan, f)
            stripped.append(s)
        base = self.plain("illegal")
        try:
            got, fused, _, _ = self.under_kfuse(stripped, "illegal", "forced")
        except RuntimeError as e:
            return f"forced run failed: {e}"
        if not fused:
            return "forced: nothing fused"
        return "sharp" if got != base else "NOT sharp (fused illegal output identical)"


def run_case(args, name, tmp):
    case = Case(args, name, tmp)
    try:
        case.check()
    except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
        case.problems.append(f"error: {e}")
        for mode in MODES:
            case.outcome.setdefault(mode, "FAIL error")
    return case


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--ptx-dir", required=True)
    ap.add_argument("--standin", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", metavar="DIR", help="keep traces, reports, plans and statistics under DIR")
    ap.add_argument("--force", action="store_true", help="also run the illegal mode with predicate-free plans")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every candidate and rewrite of each case")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        print(f"unknown case(s): {' '.join(unknown)}; cases: {' '.join(CASES)}", file=sys.stderr)
        return 2
    names = args.cases or list(CASES)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kfuse-redteam-") as tmp:
        work = args.keep or tmp
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda n: run_case(args, n, work), names))
    passed = failed = 0
    print(f"{'case':<22} {'class':>5} {'kind':<13} {'legal':<20} {'illegal':<20}")
    for c in results:
        ok = not c.problems
        passed, failed = passed + ok, failed + (not ok)
        print(f"{c.name:<22} {c.cls:>5} {c.kind:<13} {c.outcome.get('legal', '?'):<20} "
              f"{c.outcome.get('illegal', '?'):<20}{'' if c.sharp is None else ' ' + c.sharp}")
        for p in c.problems:
            print(f"  FAIL {p}")
        if c.problems or args.verbose:
            print(f"  illegal variant: {c.what}")
            for d in c.details:
                print(f"  {d}")
            for rank, fusion, legality, kernels, reasons in getattr(c, "candidates", []):
                print(f"  candidate #{rank} {fusion} {legality} {kernels}: {' | '.join(reasons)[-600:]}")
    contradicted = [f"{c.name} ({', '.join(c.contradicted)})" for c in results if c.contradicted]
    if contradicted:
        print("proven, but the rewrite's validation failed (no plan, so not a failure here; the proof or the fused "
              "kernel is wrong for some inputs): " + "; ".join(contradicted))
    print(f"({time.monotonic() - start:.0f} s)")
    print(f"redteam: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
