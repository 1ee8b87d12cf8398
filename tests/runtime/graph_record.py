#!/usr/bin/env python3
"""Records examples/runtime_api/cuda_graphs (a captured graph replayed 5 times; an explicit graph launched, its
kernel node changed with cudaGraphExecKernelNodeSetParams, launched again) with `kfuse record` on the stand-in and
checks that the trace holds

  * the captured graph (origin capture, its stream) with its 7 nodes: a memset, 5 kernel nodes whose pointer
    arguments resolve to allocations, a host node; and at least 6 edges between them;
  * the explicit graph (2 kernel nodes and a device-to-host memcpy node from an allocation), and the copy the exec
    got when its scale node changed (origin exec_node_update, alpha -2 in its arguments instead of 0.5);
  * one graph_launch row per cudaGraphLaunch (5 + 2), each linked to the exec row it ran, and the kernels the
    replays ran through the graph_launch_kernel view (5 x 5 + 2 + 2);
  * `kfuse info` mentions the graphs, `kfuse export` writes them, and `kfuse analyze` finds candidates over the
    captured graph's nodes, each counted once per replay (x5), which `kfuse rewrite` makes into a plan that says
    it comes from graph nodes (tests/inject/check_graphs.py runs such a plan).

Usage: graph_record.py --kfuse BIN --build BUILD [--cuda-lib DIR]
"""
import argparse
import json
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--cuda-lib")
    a = ap.parse_args()
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(a.build, "standin") +
               (os.pathsep + a.cuda_lib if a.cuda_lib else ""))
    program = os.path.join(a.build, "examples", "runtime_api", "cuda_graphs")
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="kfuse_graph_record_") as tmp:
        trace = os.path.join(tmp, "t.sqlite")
        run = subprocess.run([a.kfuse, "-q", "record", "--backend", "hook", "-o", trace, "--", program], env=env,
                             timeout=300, capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout, run.stderr)
            print("graph_record: FAILED (record)")
            return 1
        check("cuda_graphs: PASSED" in run.stdout, "the example did not pass under the collector: " + run.stdout)
        db = sqlite3.connect(trace)
        q = lambda sql, *args: db.execute(sql, args).fetchall()
        check(q("PRAGMA user_version")[0][0] >= 4, "schema version below 4")

        graphs = q("SELECT id, origin, stream_id, parent_graph_id FROM graph ORDER BY id")
        by_origin = {}
        for g in graphs:
            by_origin.setdefault(g[1], []).append(g)
        check(len(by_origin.get("capture", [])) == 1, f"captured graphs {by_origin.get('capture')}")
        check(len(by_origin.get("explicit", [])) == 1, f"explicit graphs {by_origin.get('explicit')}")
        check(len(by_origin.get("exec_node_update", [])) == 1, f"updated copies {by_origin.get('exec_node_update')}")
        if failures:
            return report(failures)
        captured, explicit, updated = by_origin["capture"][0], by_origin["explicit"][0], \
            by_origin["exec_node_update"][0]
        check(captured[2] is not None, "the captured graph has no capturing stream")
        check(updated[3] == explicit[0], f"the updated copy names graph {updated[3]}, expected {explicit[0]}")

        types = sorted(t for (t,) in q("SELECT type FROM graph_node WHERE graph_id = ?", captured[0]))
        check(types == sorted(["memset", "kernel", "kernel", "kernel", "kernel", "kernel", "host"]),
              f"captured node types {types}")
        kernels = q("SELECT n.id, f.mangled_name, n.pointer_args, n.grid_x, n.block_x FROM graph_node AS n "
                    "JOIN function AS f ON f.id = n.function_id WHERE n.graph_id = ? AND n.type = 'kernel'",
                    captured[0])
        check(len(kernels) == 5, f"{len(kernels)} captured kernel nodes with a function")
        for node_id, name, pointers, grid, block in kernels:
            args = json.loads(pointers) if pointers else []
            resolved = [p for p in args if p[2] is not None]
            check(len(resolved) >= 2, f"kernel node {node_id} ({name}): pointer arguments {args}")
            check(block == 256 and grid == 64, f"kernel node {node_id} ({name}): grid {grid}, block {block}")
        edges = q("SELECT count(*) FROM graph_edge WHERE graph_id = ?", captured[0])[0][0]
        check(edges >= 6, f"{edges} edges in the captured graph")
        memset = q("SELECT dst_allocation_id, bytes FROM graph_node WHERE graph_id = ? AND type = 'memset'",
                   captured[0])
        check(memset and memset[0][0] is not None and memset[0][1] == 4 << 14, f"memset node {memset}")

        copies = q("SELECT memcpy_kind, src_allocation_id, bytes FROM graph_node WHERE graph_id = ? "
                   "AND type = 'memcpy'", explicit[0])
        check(copies == [("dtoh", copies[0][1] if copies else None, 16000)] and copies[0][1] is not None,
              f"explicit memcpy node {copies}")

        def alpha(graph_id):
            rows = q("SELECT n.arg_bytes FROM graph_node AS n JOIN function AS f ON f.id = n.function_id "
                     "WHERE n.graph_id = ? AND f.mangled_name LIKE '%scale%'", graph_id)
            return struct.unpack_from("<f", rows[0][0], 16)[0] if rows and rows[0][0] else None

        check(alpha(explicit[0]) == 0.5, f"alpha {alpha(explicit[0])} in the explicit graph, expected 0.5")
        check(alpha(updated[0]) == -2.0, f"alpha {alpha(updated[0])} in the updated copy, expected -2")

        execs = q("SELECT id, graph_id, update_of FROM graph_exec ORDER BY id")
        check(len(execs) == 3, f"exec rows {execs}")
        launches = q("SELECT e.graph_id, count(*) FROM graph_launch AS l JOIN graph_exec AS e "
                     "ON e.id = l.graph_exec_id GROUP BY e.graph_id ORDER BY e.graph_id")
        check(launches == sorted([(captured[0], 5), (explicit[0], 1), (updated[0], 1)]),
              f"graph launches per graph {launches}")
        ran = q("SELECT count(*) FROM graph_launch_kernel")[0][0]
        check(ran == 5 * 5 + 2 + 2, f"{ran} kernel nodes run by the replays, expected 29")
        check(q("SELECT count(*) FROM launch")[0][0] == 0, "graph kernels recorded as launch rows")
        db.close()

        info = subprocess.run([a.kfuse, "info", trace], env=env, timeout=120, capture_output=True, text=True)
        check(info.returncode == 0 and "graphs      3 graphs" in info.stdout and "7 launches running 29 kernel"
              in info.stdout, f"kfuse info: {info.stdout}{info.stderr}")
        analyze = subprocess.run([a.kfuse, "-q", "analyze", trace, "--no-store", "--json",
                                  os.path.join(tmp, "r.json")], env=env, timeout=300, capture_output=True, text=True)
        # Every kernel of this program runs inside a graph: the analyzer finds its candidates over the graphs'
        # nodes, each counted once per replay (the captured graph ran 5 times).
        check(analyze.returncode == 0, f"kfuse analyze: exit {analyze.returncode}: {analyze.stderr}")
        if analyze.returncode == 0:
            with open(os.path.join(tmp, "r.json")) as f:
                report_json = json.load(f)
            in_graphs = [c for c in report_json["candidates"] if c.get("occurrence_graphs")]
            check(in_graphs, "no candidate over graph nodes: " + json.dumps(report_json["candidates"])[:2000])
            captured_chain = [c for c in in_graphs if c["kind"] == "vertical" and captured[0] in c["occurrence_graphs"]]
            check(captured_chain, "no vertical candidate in the captured graph")
            for c in captured_chain:
                i = c["occurrence_graphs"].index(captured[0])
                check(c["occurrence_replays"][i] == 5, f"candidate {c['id']}: replays {c['occurrence_replays']}")
                check(c["in_cuda_graph"], f"candidate {c['id']} is not marked in_cuda_graph")
            # `kfuse rewrite` reads a graph candidate's kernels from the recorded kernel nodes.
            if captured_chain:
                plan = os.path.join(tmp, "plan")
                rewrite = subprocess.run([a.kfuse, "-q", "rewrite", trace, "--report", os.path.join(tmp, "r.json"),
                                          "--candidate", captured_chain[0]["id"], "-o", plan],
                                         env=env, timeout=300, capture_output=True, text=True)
                check(rewrite.returncode == 0, f"kfuse rewrite of a graph candidate: exit {rewrite.returncode}: "
                      f"{rewrite.stderr}")
                if rewrite.returncode == 0:
                    with open(os.path.join(plan, "plan.json")) as f:
                        notes = json.load(f)["notes"]
                    check(any(f"CUDA graph {captured[0]} (5 replays)" in n for n in notes),
                          f"the plan does not say it comes from graph {captured[0]}: {notes}")
            text = subprocess.run([a.kfuse, "analyze", trace, "--no-store"], env=env, timeout=300,
                                  capture_output=True, text=True)
            check(text.returncode == 0 and f"in CUDA graph {captured[0]}: node " in text.stdout and "x5 replays"
                  in text.stdout, f"kfuse analyze (text): exit {text.returncode}: {text.stdout}{text.stderr}")
        exported = os.path.join(tmp, "t.json")
        export = subprocess.run([a.kfuse, "-q", "export", trace, "-o", exported], env=env, timeout=120,
                                capture_output=True, text=True)
        check(export.returncode == 0, f"kfuse export: {export.stderr}")
        if export.returncode == 0:
            with open(exported) as f:
                doc = json.load(f)
            check(len(doc.get("graph_launches", [])) == 7, "the JSON export lacks the graph launches")
    return report(failures)


def report(failures):
    for f in failures:
        print("graph_record:", f)
    print("graph_record:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
