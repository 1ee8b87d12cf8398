#!/usr/bin/env python3
"""End-to-end tests of `kfuse validate PLAN_DIR`: exit codes (0 passed, 1 failed validation, 2 bad input), the
mismatch sentence, and the verdict written back into plan.json (validated against schemas/plan.schema.json).

The plan is tests/schemas/examples/plan.scale_add.json (what the plan writer writes for the hand-written fusion of
`scale` and `add`), with the examples' nvcc PTX as the originals and rewriter/testdata/scale_add_fused.ptx as the
fused kernel.

Usage: validate_test.py --kfuse PATH --source DIR --ptx-dir DIR --standin DIR [unittest args]
"""
import argparse
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


def kfuse(*args, env=None):
    p = subprocess.run([ARGS.kfuse, *args], capture_output=True, text=True, timeout=300, env=env)
    return p.returncode, p.stdout, p.stderr


class Validate(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kfuse_validate_cli_")
        self.plan_dir = os.path.join(self.dir, "plan")
        with open(os.path.join(ARGS.source, "tests", "schemas", "examples", "plan.scale_add.json")) as f:
            plan = json.load(f)
        # The example's hash is a placeholder; validation reads the originals from the file the plan names.
        originals = os.path.join(self.plan_dir, plan["pattern"]["kernels"][0]["ptx_file"])
        os.makedirs(os.path.dirname(originals))
        shutil.copy(os.path.join(ARGS.ptx_dir, "elementwise_chain.ptx"), originals)
        plan["aggressive"] = False
        plan["dropped_buffers"] = []
        plan["validation"] = {"emulator": "not-run", "gpu": "not-run"}
        self.write_plan(plan)
        shutil.copy(os.path.join(ARGS.source, "rewriter", "testdata", "scale_add_fused.ptx"),
                    os.path.join(self.plan_dir, "fused.ptx"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write_plan(self, plan):
        with open(os.path.join(self.plan_dir, "plan.json"), "w") as f:
            json.dump(plan, f)

    def read_plan(self):
        with open(os.path.join(self.plan_dir, "plan.json")) as f:
            plan = json.load(f)
        with open(os.path.join(ARGS.source, "schemas", "plan.schema.json")) as f:
            jsonschema.Draft202012Validator(json.load(f)).validate(plan)
        return plan

    def corrupt_fused(self):
        path = os.path.join(self.plan_dir, "fused.ptx")
        with open(path) as f:
            text = f.read()
        self.assertEqual(text.count("add.f32"), 1)
        with open(path, "w") as f:
            f.write(text.replace("add.f32", "sub.f32"))

    def test_passing_plan_exits_0_and_records_the_verdict(self):
        code, out, err = kfuse("validate", self.plan_dir, "--seed", "5")
        self.assertEqual(code, 0, err)
        self.assertIn("passed: 8 runs bit-identical on the emulator (seed 5", out)
        self.assertIn("argument set 1 (ragged: n = 1000 with block 256), zeros: identical", err)
        v = self.read_plan()["validation"]
        self.assertEqual((v["emulator"], v["gpu"], v["seed"], v["runs"], v["mismatch"]), ("passed", "not-run", 5, 8, ""))
        self.assertRegex(v["validated_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

    def test_verdict_is_recorded_in_the_sqlite_trace_the_plan_names(self):
        trace = os.path.join(self.dir, "trace.sqlite")
        demo = os.path.join(ARGS.source, "examples", "traces", "demo_chain.json")
        subprocess.run([ARGS.kfuse, "import", demo, "-o", trace], check=True, capture_output=True)
        with open(os.path.join(self.plan_dir, "plan.json")) as f:
            plan = json.load(f)
        plan["source_trace"] = trace
        self.write_plan(plan)
        self.corrupt_fused()
        code, _, err = kfuse("validate", self.plan_dir, "--trials", "1")
        self.assertEqual(code, 1, err)
        self.assertIn(f"recorded in {trace}", err)
        rows = sqlite3.connect(trace).execute(
            "SELECT plan_dir, fused_kernel, backend, result, runs, seed, mismatch FROM kfuse_validation").fetchall()
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][:6], (self.plan_dir, "kfuse_scale_add", "emu", "failed", 1, 1))
        self.assertIn("buffer 3 (argument 2 of add)", rows[0][6])

    def test_corrupted_fused_ptx_exits_1_naming_buffer_and_element(self):
        self.corrupt_fused()
        code, out, err = kfuse("-q", "validate", self.plan_dir)
        self.assertEqual(code, 1, err)
        self.assertRegex(out, r"^FAILED: buffer 3 \(argument 2 of add\) differs first at element 0 \(f32\): "
                              r"original \S+, fused \S+ \(argument set 0, random \(seed 1\)\)\n$")
        v = self.read_plan()["validation"]
        self.assertEqual(v["emulator"], "failed")
        self.assertIn("buffer 3 (argument 2 of add)", v["mismatch"])

    def test_an_endless_fused_kernel_fails_at_the_instruction_budget(self):
        fused = os.path.join(self.plan_dir, "fused.ptx")
        with open(fused) as f:
            ptx = f.read()
        at = ptx.rindex("ret;")
        with open(fused, "w") as f:
            f.write(ptx[:at] + "$L_endless:\n\tbra.uni $L_endless;\n\t" + ptx[at:])
        code, out, err = kfuse("-q", "validate", self.plan_dir, "--max-instructions", "1000000")
        self.assertEqual(code, 1, err)
        self.assertIn("ran more than 1000000 warp instructions", out)
        self.assertIn("--max-instructions", out)
        self.assertEqual(self.read_plan()["validation"]["emulator"], "failed")

    def test_json_output(self):
        self.corrupt_fused()
        code, out, _ = kfuse("validate", self.plan_dir, "--json", "--trials", "1")
        self.assertEqual(code, 1)
        r = json.loads(out)
        self.assertFalse(r["passed"])
        self.assertEqual((r["runs"], r["mismatch"]["buffer"], r["mismatch"]["element"]), (1, 3, 0))

    def test_missing_directory_exits_2(self):
        absent = os.path.join(self.dir, "absent")
        code, out, err = kfuse("validate", absent)
        self.assertEqual(code, 2)
        self.assertEqual(err.strip(), f"kfuse: {absent}: no such plan directory")

    def test_bad_plan_json_exits_2_naming_file_and_field(self):
        plan_json = os.path.join(self.plan_dir, "plan.json")
        with open(plan_json) as f:
            plan = json.load(f)
        plan["version"] = 1
        self.write_plan(plan)
        code, _, err = kfuse("validate", self.plan_dir)
        self.assertEqual(code, 2)
        self.assertEqual(err.strip(), f"kfuse: {plan_json}: plan version 1 is not supported by this kfuse "
                                      "(reads versions 3 to 4); re-run kfuse rewrite")
        plan["version"] = 4
        plan["pattern"]["kernels"][1]["module_hash"] = "xyz"
        self.write_plan(plan)
        code, _, err = kfuse("validate", self.plan_dir)
        self.assertEqual(code, 2)
        self.assertIn(f"{plan_json}: pattern.kernels[1].module_hash: expected 64 hex digits", err)
        with open(plan_json, "w") as f:
            f.write("{")
        code, _, err = kfuse("validate", self.plan_dir)
        self.assertEqual(code, 2)
        self.assertTrue(err.strip().startswith(f"kfuse: {plan_json}: invalid JSON: "), err)
        self.assertIn("line 1, column 2", err)  # where the parser stopped

    def test_missing_fused_ptx_exits_2_naming_it(self):
        fused = os.path.join(self.plan_dir, "fused.ptx")
        os.remove(fused)
        code, _, err = kfuse("validate", self.plan_dir)
        self.assertEqual(code, 2)
        self.assertIn(fused, err)

    def test_gpu_backend_on_the_standin_driver(self):
        env = dict(os.environ, LD_LIBRARY_PATH=ARGS.standin)
        code, out, err = kfuse("-q", "validate", self.plan_dir, "--backend", "gpu", env=env)
        self.assertEqual(code, 0, err)
        self.assertIn("bit-identical on the GPU", out)
        v = self.read_plan()["validation"]
        self.assertEqual((v["emulator"], v["gpu"]), ("not-run", "passed"))
        # The stand-in runs kernels on the CPU: no times that would say anything about a GPU.
        self.assertIn("stand-in", v["timing"]["not_timed"])
        self.assertEqual(v["timing"]["argument_sets"], 0)

    def test_gpu_backend_without_a_driver_exits_2(self):
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        code, _, err = kfuse("validate", self.plan_dir, "--backend", "gpu", env=env)
        if code == 0:
            self.skipTest("this machine has a CUDA driver")
        self.assertEqual(code, 2)
        self.assertIn("libcuda.so.1", err)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--kfuse", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--ptx-dir", required=True)
    parser.add_argument("--standin", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
