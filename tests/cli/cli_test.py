#!/usr/bin/env python3
"""End-to-end tests of the `kfuse` command: exit codes, error lines, and every JSON it writes validated
against its schema in schemas/.

Usage: cli_test.py --kfuse PATH --source DIR --shared DIR [unittest args, e.g. a TestCase name]
"""
import argparse
import glob
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

import jsonschema

ARGS = None


def kfuse(*args, check=None):
    """Runs kfuse; returns (exit code, stdout, stderr)."""
    p = subprocess.run([ARGS.kfuse, *args], capture_output=True, text=True, timeout=120)
    if check is not None and p.returncode != check:
        raise AssertionError(f"kfuse {' '.join(args)} exited {p.returncode}, wanted {check}\n"
                             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p.returncode, p.stdout, p.stderr


def schema(name):
    with open(os.path.join(ARGS.source, "schemas", name)) as f:
        return json.load(f)


def validate(doc, schema_name):
    jsonschema.Draft202012Validator(schema(schema_name)).validate(doc)


class TempDirCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kfuse_cli_")
        self.demo_json = os.path.join(ARGS.source, "examples", "traces", "demo_chain.json")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def demo_trace(self):
        out = self.path("demo.sqlite")
        kfuse("import", self.demo_json, "-o", out, check=0)
        return out


class Version(unittest.TestCase):
    def test_prints_version(self):
        code, out, _ = kfuse("--version", check=0)
        self.assertRegex(out.strip(), r"^kfuse \d+\.\d+\.\d+$")


class Help(unittest.TestCase):
    def test_every_verb_has_help(self):
        code, out, _ = kfuse("--help", check=0)
        for verb in ["info", "export", "import", "gpus", "analyze", "metrics"]:
            self.assertIn(verb, out)
            code, vout, _ = kfuse(verb, "--help", check=0)
            self.assertIn("Usage", vout)

    def test_help_verb_prints_the_guides_section(self):
        with open(os.path.join(ARGS.source, "docs", "guide.md")) as f:
            guide = f.read()
        code, out, _ = kfuse("help", check=0)
        self.assertEqual(out, guide)
        for verb in ["record", "analyze", "rewrite", "validate", "run", "demo", "export", "import", "info", "ptx"]:
            code, out, _ = kfuse("help", verb, check=0)
            self.assertTrue(out.startswith("### ") and f"`kfuse {verb}`" in out.splitlines()[0], out[:200])
            self.assertIn(out, guide)
        code, _, err = kfuse("help", "frobnicate")
        self.assertEqual(code, 2)
        self.assertIn("frobnicate", err)

    def test_no_verb_is_a_usage_error(self):
        code, _, err = kfuse()
        self.assertEqual(code, 2)
        self.assertTrue(err.strip())

    def test_unknown_verb_is_a_usage_error(self):
        code, _, err = kfuse("frobnicate")
        self.assertEqual(code, 2)
        self.assertIn("frobnicate", err)


class ExampleTraces(unittest.TestCase):
    def test_every_example_trace_states_its_origin(self):
        # A trace in the project that was not recorded says so in its metadata; a recorded one says where.
        traces = glob.glob(os.path.join(ARGS.source, "examples", "traces", "*.json"))
        self.assertTrue(traces)
        for path in traces:
            with open(path) as f:
                meta = json.load(f)["metadata"]
            origin = meta.get("extra", {}).get("origin", "")
            self.assertTrue(origin, f"{path}: metadata.extra.origin is missing")
            if "recorded" not in origin:
                self.assertIn("synthetic", origin, f"{path}: an unrecorded trace must say it is synthetic")
                self.assertIn("not measured", origin, path)


class TraceVerbs(TempDirCase):
    def test_info_summarizes_the_demo_trace(self):
        trace = self.demo_trace()
        _, out, _ = kfuse("info", trace, check=0)
        self.assertIn("NVIDIA H100 80GB HBM3", out)
        self.assertIn("200 of 4 kernels", out)
        self.assertIn("add(float const*, float const*, float*, int)", out)

    def test_info_json_validates_and_counts_exactly(self):
        trace = self.demo_trace()
        _, out, _ = kfuse("info", trace, "--json", check=0)
        doc = json.loads(out)
        validate(doc, "info.schema.json")
        self.assertEqual(doc["counts"]["launches"], 200)
        self.assertEqual(doc["counts"]["kernels"], 4)
        self.assertEqual(doc["counts"]["memcpys"], 3)
        self.assertEqual(doc["counts"]["memsets"], 1)
        self.assertEqual(doc["counts"]["allocations"], 4)
        self.assertEqual([k["launches"] for k in doc["top_kernels"]], [50, 50, 50, 50])
        self.assertEqual(doc["top_kernels"][0]["name"], "add(float const*, float const*, float*, int)")
        total = sum(k["total_gpu_ns"] for k in doc["top_kernels"])
        self.assertEqual(total, doc["total_gpu_kernel_ns"])

    def test_top_limits_the_kernel_list(self):
        trace = self.demo_trace()
        _, out, _ = kfuse("info", trace, "--json", "--top", "2", check=0)
        self.assertEqual(len(json.loads(out)["top_kernels"]), 2)

    def test_export_validates_and_round_trips(self):
        trace = self.demo_trace()
        exported = self.path("export.json")
        kfuse("export", trace, "-o", exported, check=0)
        with open(exported) as f:
            doc = json.load(f)
        validate(doc, "trace.schema.json")
        with open(self.demo_json) as f:
            original = json.load(f)
        # Import then export gives back the document we started from, field for field.
        self.assertEqual(doc["launches"], original["launches"])
        self.assertEqual(doc["functions"], original["functions"])
        self.assertEqual(doc["modules"], original["modules"])
        self.assertEqual(doc["metadata"], original["metadata"])
        # And a second import/export cycle is a fixed point.
        again = self.path("again.sqlite")
        kfuse("import", exported, "-o", again, check=0)
        kfuse("export", again, "-o", self.path("again.json"), check=0)
        with open(self.path("again.json")) as f:
            self.assertEqual(json.load(f), doc)

    def test_export_to_stdout(self):
        trace = self.demo_trace()
        _, out, _ = kfuse("export", trace, "-o", "-", check=0)
        validate(json.loads(out), "trace.schema.json")

    def test_trace_is_readable_with_plain_sqlite(self):
        trace = self.demo_trace()
        db = sqlite3.connect(trace)
        self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], 4)
        self.assertEqual(db.execute("SELECT count(*) FROM launch").fetchone()[0], 200)
        rows = db.execute("SELECT count(*), count(DISTINCT allocation_id) FROM launch_pointer_arg").fetchone()
        self.assertEqual(rows, (50 * (2 + 3 + 2 + 3), 4))
        db.close()

    def test_an_option_is_never_taken_as_an_output_path(self):
        # `-o --help` once wrote a trace into a file named "--help".
        trace = self.demo_trace()
        for args in (["export", trace, "-o", "--help"], ["analyze", trace, "--no-store", "--json", "--md"],
                     ["import", self.demo_json, "-o", "-v"]):
            p = subprocess.run([ARGS.kfuse, *args], capture_output=True, text=True, timeout=120, cwd=self.dir)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stdout} {p.stderr}")
            self.assertIn("looks like an option", p.stderr)
        self.assertEqual(sorted(os.listdir(self.dir)), ["demo.sqlite"])

    def test_import_refuses_to_overwrite_without_force(self):
        trace = self.demo_trace()
        before = os.path.getsize(trace)
        code, _, err = kfuse("import", self.demo_json, "-o", trace)
        self.assertEqual(code, 2)
        self.assertIn("already exists", err)
        self.assertEqual(os.path.getsize(trace), before)
        kfuse("import", self.demo_json, "-o", trace, "--force", check=0)


class BadInputs(TempDirCase):
    def assertOneLineError(self, args, *fragments):
        code, out, err = kfuse(*args)
        self.assertEqual(code, 2, f"stdout={out!r} stderr={err!r}")
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith("kfuse: "), err)
        for frag in fragments:
            self.assertIn(frag, lines[0])
        self.assertEqual(out, "")

    def write(self, name, data):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def test_missing_file(self):
        p = self.path("absent.sqlite")
        self.assertOneLineError(["info", p], p, "no such file")

    def test_not_sqlite(self):
        p = self.write("x.sqlite", b'{"traceEvents": []}')
        self.assertOneLineError(["info", p], p, "not a SQLite database")

    def test_kineto_trace_given_to_info(self):
        src = os.path.join(ARGS.shared, "kineto", "hta_simple_add.json.gz")
        self.assertTrue(os.path.exists(src), f"{src} missing: the shared traces belong beside the project")
        self.assertOneLineError(["info", src], src, "not a SQLite database")

    def test_nsight_export_is_not_a_kfuse_trace(self):
        src = os.path.join(ARGS.shared, "nsys", "nsysai_mock_rtx3080.sqlite")
        self.assertTrue(os.path.exists(src), f"{src} missing: the shared traces belong beside the project")
        self.assertOneLineError(["info", src], src, "not a kfuse trace")

    def test_newer_schema_version(self):
        trace = self.demo_trace()
        db = sqlite3.connect(trace)
        db.execute("PRAGMA user_version=99")
        db.commit()
        db.close()
        self.assertOneLineError(["info", trace], trace, "newer", "upgrade kfuse")

    def test_truncated_trace(self):
        trace = self.demo_trace()
        size = os.path.getsize(trace)
        with open(trace, "r+b") as f:
            f.truncate(size // 2)
        self.assertOneLineError(["info", trace], trace, "truncated")
        self.assertOneLineError(["export", trace, "-o", self.path("e.json")], trace, "truncated")
        self.assertFalse(os.path.exists(self.path("e.json")))

    def test_malformed_json_import(self):
        p = self.write("bad.json", b'{"format": "kfuse-trace-json", "version": 1, "launches": [')
        self.assertOneLineError(["import", p, "-o", self.path("o.sqlite")], p, "invalid JSON")
        self.assertFalse(os.path.exists(self.path("o.sqlite")))

    def test_wrong_field_type_names_the_path(self):
        with open(self.demo_json) as f:
            doc = json.load(f)
        doc["launches"][7]["block"] = [256, 1]
        p = self.write("wrong.json", json.dumps(doc).encode())
        self.assertOneLineError(["import", p, "-o", self.path("o.sqlite")], p, "launches[7].block")
        self.assertFalse(os.path.exists(self.path("o.sqlite")))

    def test_hostile_sizes(self):
        with open(self.demo_json) as f:
            doc = json.load(f)
        doc["launches"][0]["grid"] = [2 ** 40, 1, 1]
        p = self.write("huge.json", json.dumps(doc).encode())
        self.assertOneLineError(["import", p, "-o", self.path("o.sqlite")], p, "launches[0].grid")

    def test_gzip_of_json_is_named(self):
        p = self.write("t.json.gz", gzip.compress(b"{}"))
        code, _, err = kfuse("import", p, "-o", self.path("o.sqlite"))
        self.assertEqual(code, 2)
        self.assertIn(p, err)

    def test_unwritable_output(self):
        out = os.path.join(self.dir, "no", "such", "dir", "o.sqlite")
        self.assertOneLineError(["import", self.demo_json, "-o", out], out)


class Analyze(TempDirCase):
    def test_demo_chain_is_one_proven_vertical_candidate(self):
        trace = self.demo_trace()
        out_json, out_md, out_html = self.path("r.json"), self.path("r.md"), self.path("r.html")
        _, out, err = kfuse("analyze", trace, "--json", out_json, "--md", out_md, "--html", out_html, check=0)
        self.assertIn("proven", out)
        with open(out_json) as f:
            report = json.load(f)
        validate(report, "report.schema.json")
        self.assertEqual(report["summary"]["candidates"], 1)
        c = report["candidates"][0]
        self.assertEqual((c["kind"], c["legality"], c["confidence"], c["occurrences"]), ("vertical", "proven", "high", 50))
        self.assertEqual([k["mangled_name"] for k in c["kernels"]],
                         ["_Z5scalePKfPffi", "_Z3addPKfS0_Pfi", "_Z4reluPKfPfi", "_Z3mulPKfS0_Pfi"])
        self.assertGreater(c["predicted_saving_ns_total"], 0)
        self.assertLess(c["cost"]["bytes_after"], c["cost"]["bytes_before"])
        with open(out_html) as f:
            html = f.read()
        self.assertIn("<svg", html)
        self.assertIn("scale(float const*, float*, float, int)", html)
        with open(out_md) as f:
            self.assertIn(f"| 1 | `{c['id']}` | thread-local |", f.read())
        # The report is kept in the trace for the GUI.
        db = sqlite3.connect(trace)
        rows = db.execute("SELECT gpu, report FROM analysis").fetchall()
        db.close()
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][0], "h100-sxm")
        self.assertEqual(json.loads(rows[0][1])["candidates"][0]["occurrences"], 50)

    def test_metrics_from_a_separate_run(self):
        trace = self.demo_trace()
        with open(self.demo_json) as f:
            doc = json.load(f)
        # A --metrics run of the same program: every launch measured at 8 MiB read, 4 MiB written, 2 MFLOP.
        doc["metrics"] = []
        for launch in doc["launches"]:
            for name, value, unit in [("dram_bytes_read", 8 << 20, "bytes"), ("dram_bytes_written", 4 << 20, "bytes"),
                                      ("flops_fp32", 2 << 20, "flop")]:
                doc["metrics"].append({"launch_id": launch["id"], "name": name, "value": value, "unit": unit,
                                       "source": "measured"})
        doc["metadata"]["extra"]["metrics"] = "range-profiler kernel-replay"
        metrics_json = self.path("metrics.json")
        with open(metrics_json, "w") as f:
            json.dump(doc, f)
        metrics_trace = self.path("metrics.sqlite")
        kfuse("import", metrics_json, "-o", metrics_trace, check=0)
        out_json = self.path("r.json")
        _, _, err = kfuse("analyze", trace, "--metrics-from", metrics_trace, "--json", out_json, "--no-store", check=0)
        self.assertIn("measured metrics from", err)
        with open(out_json) as f:
            report = json.load(f)
        validate(report, "report.schema.json")
        c = report["candidates"][0]
        # Measured bytes win: before, the chain's 4 launches x 12 MiB measured; after, the share of them the
        # per-buffer estimate keeps. Its FLOPs are the measured ones.
        self.assertEqual(c["cost"]["bytes_source"], "measured")
        self.assertEqual(c["cost"]["bytes_before"], 4 * (12 << 20))
        self.assertLess(c["cost"]["bytes_after"], c["cost"]["bytes_before"])
        self.assertEqual(c["cost"]["flops_source"], "measured")
        self.assertEqual(c["cost"]["flops"], 4 * (2 << 20))
        stats = {s["name"]: s["value"] for s in report["stats"]}
        self.assertEqual(stats["metrics_merged_launches"], 200)
        self.assertNotIn("metrics_run_serialised", stats)  # the timeline is the normal run's
        # A trace without measured metrics cannot serve.
        code, _, err = kfuse("analyze", trace, "--metrics-from", trace, "--no-store")
        self.assertEqual(code, 2)
        self.assertIn("no measured metrics", err)

    def test_no_store_leaves_the_trace_alone(self):
        trace = self.demo_trace()
        kfuse("analyze", trace, "--no-store", check=0)
        db = sqlite3.connect(trace)
        self.assertEqual(db.execute("SELECT count(*) FROM analysis").fetchone()[0], 0)
        db.close()

    def test_every_shared_trace_gives_a_valid_report(self):
        files = sorted(glob.glob(os.path.join(ARGS.shared, "kineto", "*.json.gz")) +
                       glob.glob(os.path.join(ARGS.shared, "nsys", "*.sqlite")))
        self.assertTrue(files, f"no shared traces under {ARGS.shared}: they belong beside the project, in ../shared")
        for path in files:
            with self.subTest(path=os.path.basename(path)):
                before = os.path.getsize(path)
                out_json = self.path("r.json")
                if os.path.exists(out_json):
                    os.remove(out_json)
                code, out, err = kfuse("analyze", path, "--json", out_json)
                self.assertEqual(os.path.getsize(path), before)  # never writes into the user's file
                if "cpu_only" in path:
                    self.assertEqual(code, 3, err)
                    self.assertIn("no GPU kernels", err)
                    continue
                if path.endswith("_et.json.gz"):
                    # A PyTorch Execution Trace holds operators and tensors but no GPU work: a clear refusal.
                    self.assertEqual(code, 2, err)
                    self.assertIn(os.path.basename(path), err)
                    self.assertIn("Execution Trace", err)
                    continue
                self.assertEqual(code, 0, err)
                with open(out_json) as f:
                    report = json.load(f)
                validate(report, "report.schema.json")
                self.assertGreater(report["summary"]["launches"], 0)
                self.assertFalse(report["summary"]["has_pointer_data"])
                for c in report["candidates"]:
                    self.assertNotEqual(c["legality"], "proven")  # no PTX, no pointers: never proven
                if report["summary"]["candidates"] == 0:
                    self.assertTrue(report["summary"]["why_none"])

    def test_unknown_gpu_is_a_usage_error(self):
        trace = self.demo_trace()
        code, _, err = kfuse("analyze", trace, "--gpu", "tpu-v5")
        self.assertEqual(code, 2)
        self.assertIn("tpu-v5", err)

    def test_gpu_option_changes_the_costs(self):
        trace = self.demo_trace()
        kfuse("analyze", trace, "--no-store", "--json", self.path("h.json"), check=0)
        kfuse("analyze", trace, "--no-store", "--gpu", "l4", "--json", self.path("l.json"), check=0)
        with open(self.path("h.json")) as f:
            h = json.load(f)
        with open(self.path("l.json")) as f:
            l4 = json.load(f)
        self.assertEqual(l4["gpu"]["short_name"], "l4")
        self.assertNotEqual(h["candidates"][0]["cost"]["fused_ns"], l4["candidates"][0]["cost"]["fused_ns"])

    def test_missing_input(self):
        code, _, err = kfuse("analyze", self.path("nope.json"))
        self.assertEqual(code, 2)
        self.assertIn("nope.json", err)


class Gpus(unittest.TestCase):
    def test_json_validates(self):
        _, out, _ = kfuse("gpus", "--json", check=0)
        doc = json.loads(out)
        validate(doc, "gpus.schema.json")
        self.assertGreaterEqual(len(doc), 10)

    def test_lists_the_table(self):
        _, out, _ = kfuse("gpus", check=0)
        for short in ["v100-sxm2-16gb", "a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm", "h100-pcie",
                      "h200", "l4", "l40s", "rtx-4090", "b200"]:
            self.assertRegex(out, r"(?m)^" + short + r"\s")

    def test_looks_up_trace_names(self):
        _, out, _ = kfuse("gpus", "NVIDIA A100-SXM4-80GB", "--json", check=0)
        doc = json.loads(out)
        self.assertEqual(len(doc), 1)
        self.assertEqual(doc[0]["sm_count"], 108)

    def test_unknown_gpu(self):
        code, _, err = kfuse("gpus", "Intel Data Center GPU Max 1550")
        self.assertEqual(code, 2)
        self.assertIn("Max 1550", err)


class Metrics(unittest.TestCase):
    """`kfuse metrics` runs CUPTI's Profiler Host API: real metric names per chip, no GPU needed."""

    def test_lists_chips(self):
        _, out, _ = kfuse("metrics", "--json", check=0)
        doc = json.loads(out)
        validate(doc, "metrics.schema.json")
        for chip in ["GA100", "GH100", "GB202"]:
            self.assertIn(chip, doc["chips"])

    def test_hopper_plan(self):
        _, out, _ = kfuse("metrics", "--chip", "GH100", "--json", check=0)
        doc = json.loads(out)
        validate(doc, "metrics.schema.json")
        by_name = {m["name"]: m for m in doc["metrics"]}
        self.assertEqual(by_name["dram_bytes_read"]["terms"],
                         [{"profiler_metric": "dram__bytes_read.sum", "weight": 1.0}])
        ffma = [t for t in by_name["flops_fp32"]["terms"] if "op_ffma_" in t["profiler_metric"]]
        self.assertEqual(ffma[0]["weight"], 2.0)
        self.assertGreaterEqual(doc["passes"], 1)
        self.assertEqual(doc["unavailable"], [])

    def test_text_names_the_rtx50_dram_metrics(self):
        _, out, _ = kfuse("metrics", "--chip", "GB202", check=0)
        self.assertRegex(out, r"dram_bytes_read\s+bytes\s+= dram__bytes_op_read\.sum")

    def test_only_kfuse_metrics_needs_cupti(self):
        # kfuse does not link libcupti: every other verb starts on a machine without it.
        dyn = subprocess.run(["readelf", "-d", ARGS.kfuse], capture_output=True, text=True, check=True).stdout
        self.assertNotIn("libcupti", dyn)
        env = dict(os.environ, LD_LIBRARY_PATH="", KFUSE_CUPTI_LIB="/nonexistent/libcupti.so.13")
        demo = os.path.join(ARGS.source, "examples", "traces", "demo_chain.json")
        p = subprocess.run([ARGS.kfuse, "-q", "analyze", demo], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run([ARGS.kfuse, "metrics", "--chip", "GH100"], capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("/nonexistent/libcupti.so.13", p.stderr)
        self.assertIn("KFUSE_CUPTI_LIB", p.stderr)

    def test_tegra_says_what_is_missing(self):
        _, out, _ = kfuse("metrics", "--chip", "GA10B", check=0)
        self.assertIn("not collected: dram_bytes_read", out)

    def test_unknown_chip(self):
        code, _, err = kfuse("metrics", "--chip", "XZ999")
        self.assertEqual(code, 2)
        self.assertIn("XZ999", err)
        self.assertIn("GH100", err)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--kfuse", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--shared", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
