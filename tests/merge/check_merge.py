#!/usr/bin/env python3
"""The map/reduce multi-rank analysis gives what the in-process one gives, and names the straggler.

Makes RANKS synthetic rank traces from a real Kineto trace in ../shared/data (each a copy whose distributedInfo.rank
is set, written as the profiler writes it; rank STRAGGLER's kernels take twice as long), then:
  - map: `kfuse analyze RANK.json --json RANK.report.json` per rank, as separate processes (xargs -P 2), the way a
    Slurm job array or `xargs -P` runs them (scripts/slurm/);
  - reduce: `kfuse merge` of the rank reports;
  - in process: `kfuse analyze DIR --json` of the same traces;
and checks that both merged reports have the same ranks, the same recommendations with the same totals and
per-rank shares, and the straggler named (job level and per pattern). Then a corrupt report, a missing one and a
report of another cost-model version: each left out and said, the others merged, exit 0; and nothing to merge:
exit 2.

The traces are synthetic (copies of one real trace with changed ranks and durations); the test says so.
Also runs the Slurm recipe (scripts/slurm/submit.sh: an array of `kfuse analyze` jobs and a merge job) through a
stand-in sbatch (tests/merge/fake_slurm) that runs the jobs locally, and checks it merges to the same report.
Usage: check_merge.py --kfuse PATH --shared DIR --source DIR [--ranks N]
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile

STRAGGLER = 5


def make_ranks(source, out_dir, ranks):
    with gzip.open(source, "rt") as f:
        trace = json.load(f)
    paths = []
    for r in range(ranks):
        t = json.loads(json.dumps(trace))
        t["distributedInfo"] = {"backend": "nccl", "rank": r, "world_size": ranks}
        t["traceName"] = f"synthetic rank {r} (copy of {os.path.basename(source)})"
        if r == STRAGGLER:
            for e in t["traceEvents"]:
                if e.get("cat") == "kernel" and "dur" in e:
                    e["dur"] = e["dur"] * 2
        path = os.path.join(out_dir, f"rank{r:04d}.json")
        with open(path, "w") as f:
            json.dump(t, f)
        paths.append(path)
    return paths


def run(cmd, expect=(0,), **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    if p.returncode not in expect:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def comparable(job):
    ranks = [(r["rank"], r["launches"], r["gpu_busy_ns"], r["candidates"]) for r in job["ranks"]]
    recs = [(tuple(m["members"]), m["kind"], m["fusion_kind"], m["legality"], round(m["total_saving_ns"], 3),
             tuple((s["rank"], s["occurrences"], round(s["saving_ns"], 3)) for s in m["ranks"]),
             tuple(m["stragglers"])) for m in job["recommendations"]]
    return ranks, recs, job["stragglers"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--source", required=True, help="the project's source directory (scripts/slurm)")
    ap.add_argument("--ranks", type=int, default=64)
    args = ap.parse_args()
    source = os.path.join(args.shared, "kineto", "tracelens_bert_small_h100.json.gz")
    failures = []
    with tempfile.TemporaryDirectory(prefix="kfuse_merge_") as work:
        traces = os.path.join(work, "traces")
        reports = os.path.join(work, "reports")
        os.makedirs(traces)
        os.makedirs(reports)
        paths = make_ranks(source, traces, args.ranks)
        # Map: one process per rank, two at a time.
        lines = "".join(f"{p}\n" for p in paths)
        run(["xargs", "-P", "2", "-I", "{}", "sh", "-c",
             f'"$0" analyze "$1" --no-store --json "$2/$(basename "$1" .json).report.json" > /dev/null 2>&1',
             args.kfuse, "{}", reports], input=lines)
        made = sorted(os.listdir(reports))
        if len(made) != args.ranks:
            failures.append(f"map step wrote {len(made)} reports, want {args.ranks}")
        # Reduce, and the in-process analysis of the same traces.
        merged = os.path.join(work, "merged.json")
        md, html = os.path.join(work, "merged.md"), os.path.join(work, "merged.html")
        p = run([args.kfuse, "merge", reports, "-o", merged, "--top", "3", "--md", md, "--html", html])
        with open(md) as f:
            md_text = f.read()
        with open(html) as f:
            html_text = f.read()
        if f"rank {STRAGGLER}" not in md_text or "aten::addmm bf16[141,512]x[512,512]" not in md_text:
            failures.append(f"the Markdown report should name the straggler and the top pattern:\n{md_text[:600]}")
        if not html_text.startswith("<!doctype html>") or f"rank {STRAGGLER}" not in html_text:
            failures.append("the HTML report should be a page naming the straggler")
        inproc = os.path.join(work, "inproc.json")
        run([args.kfuse, "analyze", traces, "--json", inproc])
        with open(merged) as f:
            a = json.load(f)
        with open(inproc) as f:
            b = json.load(f)
        ca, cb = comparable(a), comparable(b)
        if ca[0] != cb[0]:
            failures.append("ranks differ between merge and in-process analysis")
        if ca[1] != cb[1]:
            failures.append(f"recommendations differ:\nmerge   {ca[1][:2]}\nprocess {cb[1][:2]}")
        if len(a["ranks"]) != args.ranks or a["left_out"]:
            failures.append(f"merged {len(a['ranks'])} ranks, left out {a['left_out']}")
        if a["stragglers"] != [STRAGGLER]:
            failures.append(f"job stragglers {a['stragglers']}, want [{STRAGGLER}]")
        if not a["recommendations"] or not all(m["stragglers"] == [STRAGGLER] for m in a["recommendations"]
                                               if len(m["ranks"]) >= 3):
            failures.append("every pattern on 3 or more ranks should name the straggler: "
                            f"{[m['stragglers'] for m in a['recommendations']]}")
        if f"stragglers rank {STRAGGLER}" not in p.stdout:
            failures.append(f"the text report should name the straggler:\n{p.stdout[:800]}")

        # The same map and reduce as a Slurm job array and a merge job with a dependency (scripts/slurm/submit.sh),
        # run by a stand-in sbatch that executes the jobs at once.
        slurm = os.path.join(args.source, "scripts", "slurm")
        for script in ("analyze_array.sbatch", "merge.sbatch", "submit.sh"):
            run(["bash", "-n", os.path.join(slurm, script)])
        env = dict(os.environ)
        env["PATH"] = os.path.join(args.source, "tests", "merge", "fake_slurm") + os.pathsep + env["PATH"]
        env["KFUSE"] = args.kfuse
        via_slurm = os.path.join(work, "slurm_reports")
        p = run(["bash", os.path.join(slurm, "submit.sh"), traces, via_slurm], env=env)
        with open(os.path.join(via_slurm, "job.json")) as f:
            d = json.load(f)
        if comparable(d) != ca:
            failures.append(f"the Slurm recipe's merged report differs from the xargs one: {p.stdout[-500:]}")

        # Bad rank reports: left out, said, the rest merged.
        with open(os.path.join(reports, "rank9998.report.json"), "w") as f:
            f.write('{"format": "kfuse-report", "version": 1, "candidates": [')  # truncated
        other = json.load(open(os.path.join(reports, made[0])))
        other["summary"]["cost_model_version"] += 1
        with open(os.path.join(reports, "rank9999.report.json"), "w") as f:
            json.dump(other, f)
        missing = os.path.join(work, "no_such_rank.json")
        p = run([args.kfuse, "merge", reports, missing, "-o", merged])
        with open(merged) as f:
            c = json.load(f)
        left = {os.path.basename(l["path"]): l["why"] for l in c["left_out"]}
        if set(left) != {"rank9998.report.json", "rank9999.report.json", "no_such_rank.json"}:
            failures.append(f"left out {left}")
        elif "cost model version" not in left["rank9999.report.json"]:
            failures.append(f"the other version's report should say why: {left['rank9999.report.json']}")
        if len(c["ranks"]) != args.ranks:
            failures.append(f"with bad reports beside them, {len(c['ranks'])} ranks merged, want {args.ranks}")
        if "3 of %d rank reports left out" % (args.ranks + 3) not in p.stderr:
            failures.append(f"merge should say how many it left out: {p.stderr[-400:]}")
        p = run([args.kfuse, "merge", missing], expect=(2,))
        if "no rank report could be merged" not in p.stderr:
            failures.append(f"nothing to merge should say so: {p.stderr}")
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print(f"{args.ranks} synthetic ranks: merge of separately analyzed reports equals the in-process analysis; "
          f"straggler rank {STRAGGLER} named; bad reports left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
