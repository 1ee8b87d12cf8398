#!/usr/bin/env python3
"""Hostile and damaged inputs never crash a verb: each gives exit 0 with valid output, or exit 2 with one line
naming the file and what is wrong. Inputs are files under tests/hostile/inputs/ (see make_inputs.py and the .sql
comments); each test names the defect it guards against.

Usage: hostile_test.py --kfuse PATH --source DIR --shared DIR [unittest args]
"""
import argparse
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None
HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "inputs")


def run(*args, timeout=300):
    """Runs kfuse with bytes output; returns (exit code, stdout bytes, stderr text)."""
    p = subprocess.run([ARGS.kfuse, *args], capture_output=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def inp(name):
    return os.path.join(INPUTS, name)


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kfuse_hostile_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def assertNoCrash(self, rc, err, what):
        """Exit 0-3 (never a signal, never an abort); an error is one 'kfuse: ' line."""
        self.assertIn(rc, (0, 1, 2, 3), f"{what}: exit {rc}\n{err}")
        if rc == 2:
            self.assertTrue(err.startswith("kfuse: "), f"{what}: {err}")
            self.assertNotIn("terminate called", err)

    def assertValidJson(self, data, what):
        text = data.decode("utf-8")  # raises on invalid UTF-8
        return json.loads(text)

    def imported(self, source, name="t.sqlite"):
        out = self.path(name)
        rc, _, err = run("import", source, "-o", out)
        self.assertEqual(rc, 0, err)
        return out

    def apply_sql(self, db, sql_file):
        with open(inp(sql_file)) as f:
            sql = f.read()
        con = sqlite3.connect(db)
        con.executescript(sql)
        con.commit()
        con.close()

    def every_verb(self, trace):
        """Runs every verb that reads a trace; returns {verb: (rc, out, err)} after checking none crashed."""
        results = {}
        for name, args in [
            ("info", ["info", trace]),
            ("info --json", ["info", "--json", trace]),
            ("export", ["export", trace, "-o", "-"]),
            ("export --chrome", ["export", trace, "--chrome", "-"]),
            ("analyze", ["analyze", trace, "--no-store"]),
            ("analyze --json", ["analyze", trace, "--json", self.path("r.json"), "--md", self.path("r.md"),
                                "--html", self.path("r.html")]),
        ]:
            rc, out, err = run(*args)
            self.assertNoCrash(rc, err, name)
            results[name] = (rc, out, err)
        return results


class DamagedTraces(Case):
    def test_parameter_index_out_of_range_or_negative_does_not_crash_the_analysis(self):
        # Analysis::fullyFollowed read ParamFacts past the end of a kernel's parameters (segfault).
        src = inp("param_index_out_of_range.json")
        rc, _, err = run("analyze", src, "--json", self.path("r.json"), "--no-store")
        self.assertEqual(rc, 0, err)
        with open(self.path("r.json"), "rb") as f:
            report = self.assertValidJson(f.read(), "analyze --json")
        self.assertTrue(report["candidates"], "the undamaged kernels are still analysed")
        self.assertIn("does not have", json.dumps(report), "the damaged pointer argument is named in the reasons")
        # Stored in SQLite and read back, the parameter index -1 is the same damage, named the same way.
        trace = self.imported(src)
        rc, _, err = run("analyze", trace, "--no-store", "--json", self.path("r2.json"))
        self.assertEqual(rc, 0, err)
        with open(self.path("r2.json"), "rb") as f:
            self.assertIn("does not have", json.dumps(self.assertValidJson(f.read(), "analyze --json")))

    def test_number_too_large_for_a_double_is_a_bad_input_not_an_abort(self):
        # import and analyze caught only nlohmann's parse_error; 1e99999 is an out_of_range error.
        src = inp("number_too_large.json")
        rc, _, err = run("import", src, "-o", self.path("t.sqlite"))
        self.assertEqual(rc, 2, err)
        self.assertIn(src, err)
        self.assertIn("invalid JSON", err)
        self.assertFalse(os.path.exists(self.path("t.sqlite")), "no half-written trace")
        rc, _, err = run("analyze", src)
        self.assertEqual(rc, 2, err)
        self.assertIn(src, err)

    def test_a_value_nested_a_million_deep_is_refused_without_overflowing_the_stack(self):
        # The error message dumped the value recursively (stack overflow); the nesting is now refused before the
        # parse (core::parseJsonDocument).
        gz = inp("nested_million.json.gz")
        plain = self.path("nested.json")
        with gzip.open(gz, "rb") as f, open(plain, "wb") as o:
            shutil.copyfileobj(f, o)
        for args in (["import", plain, "-o", self.path("n.sqlite")], ["analyze", gz]):
            rc, _, err = run(*args)
            self.assertEqual(rc, 2, err)
            self.assertIn("nested deeper than 512 levels", err)

    def test_plans_and_reports_nested_too_deep_are_refused_naming_the_file(self):
        # Every JSON reader bounds the nesting: a plan (kfuse validate, kfuse run), a report (kfuse rewrite --report).
        deep = "[" * 100000 + "]" * 100000
        plan_dir = self.path("plan")
        os.makedirs(plan_dir)
        plan = os.path.join(plan_dir, "plan.json")
        with open(plan, "w") as f:
            f.write('{"format": "kfuse-plan", "version": 4, "pattern": ' + deep + "}")
        report = self.path("report.json")
        with open(report, "w") as f:
            f.write('{"format": "kfuse-report", "version": 2, "candidates": ' + deep + "}")
        trace = self.imported(os.path.join(ARGS.source, "examples", "traces", "demo_chain.json"))
        for args, name in ((["validate", plan_dir], plan),
                           (["rewrite", trace, "--report", report, "--candidate", "1", "-o", self.path("out")],
                            report)):
            rc, _, err = run(*args)
            self.assertNoCrash(rc, err, " ".join(args))
            self.assertEqual(rc, 2, err)
            self.assertIn(name, err)
            self.assertIn("nested deeper than 512 levels", err)

    def test_rows_that_point_nowhere_or_hold_impossible_values_never_crash_a_verb(self):
        trace = self.imported(os.path.join(ARGS.source, "examples", "traces", "demo_chain.json"))
        self.apply_sql(trace, "damaged_rows.sql")
        results = self.every_verb(trace)
        for verb in ("info --json", "export", "export --chrome"):
            rc, out, err = results[verb]
            if rc == 0:
                self.assertValidJson(out, verb)

    def test_a_trace_truncated_by_a_page_is_reported_as_truncated_by_analyze_too(self):
        trace = self.imported(os.path.join(ARGS.source, "examples", "traces", "demo_chain.json"))
        size = os.path.getsize(trace)
        os.truncate(trace, size - 16384)
        for verb in ("info", "analyze"):
            rc, _, err = run(verb, trace)
            self.assertEqual(rc, 2, err)
            self.assertIn("truncated", err, verb)

    def test_an_nsys_export_truncated_by_a_page_is_reported_as_truncated(self):
        src = os.path.join(ARGS.shared, "nsys", "pipit_saxpy_a100.sqlite")
        if not os.path.exists(src):
            self.skipTest("shared data missing")
        copy = self.path("nsys.sqlite")
        shutil.copyfile(src, copy)
        os.chmod(copy, 0o644)
        os.truncate(copy, os.path.getsize(copy) - 4096)
        rc, _, err = run("analyze", copy)
        self.assertEqual(rc, 2, err)
        self.assertIn("truncated", err)
        self.assertNotIn("neither a kfuse trace", err)


    def test_ptx_extract_with_nothing_to_extract_says_why(self):
        # `ptx extract` could exit 3 with nothing on stderr.
        src = inp("fatbin_unknown_entry.fatbin")
        rc, _, err = run("ptx", "extract", src, "-o", self.path("out"))
        self.assertEqual(rc, 3, err)
        self.assertIn(src, err)
        self.assertIn("no PTX or cubin entries to extract", err)


class InvalidUtf8(Case):
    def test_strings_that_are_not_utf8_are_replaced_in_every_json_and_escaped_in_html(self):
        # info --json, export, analyze --json and analyze (storing its report) aborted on nlohmann's type_error.
        trace = self.imported(os.path.join(ARGS.source, "examples", "traces", "demo_chain.json"))
        self.apply_sql(trace, "invalid_utf8.sql")
        rc, out, err = run("info", "--json", trace)
        self.assertEqual(rc, 0, err)
        info = self.assertValidJson(out, "info --json")
        self.assertIn("\ufffd", json.dumps(info, ensure_ascii=False))
        rc, out, err = run("export", trace, "-o", "-")
        self.assertEqual(rc, 0, err)
        doc = self.assertValidJson(out, "export")
        self.assertIn("\ufffd", doc["metadata"]["command_line"])
        rc, _, err = run("export", trace, "-o", self.path("e.json"))
        self.assertEqual(rc, 0, err)
        with open(self.path("e.json"), "rb") as f:
            self.assertValidJson(f.read(), "export -o")
        rc, _, err = run("analyze", trace, "--json", self.path("r.json"), "--md", self.path("r.md"),
                         "--html", self.path("r.html"))
        self.assertEqual(rc, 0, err)
        for name in ("r.json", "r.md", "r.html"):
            with open(self.path(name), "rb") as f:
                data = f.read()
            data.decode("utf-8")
            if name == "r.json":
                json.loads(data)
        with open(self.path("r.html"), encoding="utf-8") as f:
            html = f.read()
        self.assertNotIn("scale\ufffd<b>", html, "kernel names are HTML-escaped")
        # The report was stored in the trace (plain analyze): it reads back as JSON.
        con = sqlite3.connect(trace)
        stored = con.execute("SELECT report FROM analysis ORDER BY id DESC LIMIT 1").fetchone()[0]
        con.close()
        json.loads(stored)

    def test_an_nsys_export_with_kernel_names_that_are_not_utf8_analyzes(self):
        src = os.path.join(ARGS.shared, "nsys", "pipit_saxpy_a100.sqlite")
        if not os.path.exists(src):
            self.skipTest("shared data missing")
        copy = self.path("nsys.sqlite")
        shutil.copyfile(src, copy)
        os.chmod(copy, 0o644)
        con = sqlite3.connect(copy)
        con.execute("UPDATE StringIds SET value = CAST(X'736178707980E9FF' AS TEXT) WHERE id IN "
                    "(SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL) OR id IN "
                    "(SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL)")
        con.commit()
        con.close()
        rc, _, err = run("analyze", copy, "--json", self.path("r.json"))
        self.assertIn(rc, (0, 3), err)
        if rc == 0:
            with open(self.path("r.json"), "rb") as f:
                self.assertValidJson(f.read(), "analyze --json")
        rc, out, err = run("export", copy, "--chrome", "-", "--no-candidates")
        self.assertEqual(rc, 0, err)
        self.assertValidJson(out, "export --chrome")

    def test_ptx_list_and_check_json_replace_invalid_utf8_in_file_and_kernel_names(self):
        # A Latin-1 file name ends up in "file"; the PTX's own kernel name is not a PTX identifier, which the
        # parser reports (exit 2) and the lister leaves out.
        latin1 = os.path.join(os.fsencode(self.dir), b"caf\xe9.ptx")
        shutil.copyfile(inp("invalid_utf8_kernel_name.ptx"), latin1)
        p = subprocess.run([os.fsencode(ARGS.kfuse), b"ptx", b"list", b"--json", latin1], capture_output=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = self.assertValidJson(p.stdout, "ptx list --json")
        self.assertIn("\ufffd", doc["file"])
        p = subprocess.run([os.fsencode(ARGS.kfuse), b"ptx", b"check", b"--json", latin1], capture_output=True,
                           timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertTrue(p.stderr.startswith(b"kfuse: "), p.stderr)


class Bombs(Case):
    def peak_rss_mib(self, *args):
        """Runs kfuse in a child of a fresh Python process: its peak RSS in MiB, with the exit code and stderr."""
        code = ("import resource, subprocess, sys\n"
                "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
                "sys.stderr.write(p.stderr.decode('utf-8', 'replace'))\n"
                "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
        p = subprocess.run([sys.executable, "-c", code, ARGS.kfuse, *args], capture_output=True, text=True,
                           timeout=300)
        rc, kib = p.stdout.split()
        return int(rc), int(kib) / 1024, p.stderr

    def assertRefusedCheaply(self, args, message, max_mib):
        """`kfuse ARGS` exits 2 saying `message`, and its peak RSS stays under `max_mib`."""
        rc, mib, err = self.peak_rss_mib(*args)
        self.assertEqual(rc, 2, err)
        self.assertIn(message, err)
        self.assertLess(mib, max_mib, f"peak RSS {mib:.0f} MiB")

    def test_ptx_check_time_grows_linearly_with_a_straight_line_kernel(self):
        # One basic block of many memory accesses: each access once rescanned its block for a ret (80k instructions
        # took 25x as long as 20k, a million instructions never finished). A ratio, so that slow builds hold too.
        sys.path.insert(0, os.path.join(ARGS.source, "bench"))
        import make_large_ptx
        seconds = {}
        for n in (20_000, 80_000):
            path = self.path(f"straight{n}.ptx")
            with open(path, "w") as f:
                f.write(make_large_ptx.module(n, branches=False))
            start = time.monotonic()
            rc, _, err = run("ptx", "check", path, timeout=600)
            seconds[n] = time.monotonic() - start
            self.assertEqual(rc, 0, err)
        self.assertLess(seconds[80_000], 8 * seconds[20_000] + 1.0, seconds)

    def test_ptx_check_memory_grows_by_less_than_880_bytes_per_instruction(self):
        # A kernel of a million instructions took 1.29 GB (issue 35): 1290 bytes per instruction for the IR, the
        # analyses and the file; about 910 once the IR and the affine forms were made compact, about 820 once an
        # operand's rare second register and a label's text were held out of line. The growth between two sizes, so
        # that what kfuse holds whatever the input does not count.
        if any(s in subprocess.run(["ldd", ARGS.kfuse], capture_output=True, text=True).stdout
               for s in ("asan", "tsan", "ubsan")):
            self.skipTest("a sanitizer's allocator changes what memory costs")
        sys.path.insert(0, os.path.join(ARGS.source, "bench"))
        import make_large_ptx
        kib = {}
        for n in (25_000, 200_000):
            path = self.path(f"straight{n}.ptx")
            with open(path, "w") as f:
                f.write(make_large_ptx.module(n, branches=False))
            rc, mib, err = self.peak_rss_mib("ptx", "check", path)
            self.assertEqual(rc, 0, err)
            kib[n] = mib * 1024
        per_instruction = (kib[200_000] - kib[25_000]) * 1024 / 175_000
        self.assertLess(per_instruction, 880, f"{per_instruction:.0f} bytes per instruction (peak RSS KiB: {kib})")

    def huge_demo_trace(self, instructions):
        """The demo chain (examples/traces/demo_chain.json) with scale and relu each replaced by a SYNTHETIC kernel of
        about `instructions` instructions (bench/make_large_ptx.py's body); relu reads and writes what scale wrote."""
        import base64
        import hashlib
        sys.path.insert(0, os.path.join(ARGS.source, "bench"))
        import make_large_ptx
        with open(os.path.join(ARGS.source, "examples", "traces", "demo_chain.json")) as f:
            doc = json.load(f)
        module = doc["modules"][0]
        ptx = base64.b64decode(module["image"]).decode()
        body = make_large_ptx.module(instructions, branches=False)
        body = body[body.index("{"):]
        for name, types in (("_Z5scalePKfPffi", ["u64", "u64", "f32", "u32"]), ("_Z4reluPKfPfi", ["u64", "u64", "u32"])):
            start = ptx.index(".visible .entry " + name)
            end = ptx.index("\n}\n", start) + 3
            params = ",\n".join(f"\t.param .{t} {name}_param_{i}" for i, t in enumerate(types))
            kernel = body.replace("[huge_param_0]", f"[{name}_param_0]").replace("[huge_param_1]", f"[{name}_param_1]")
            kernel = kernel.replace("[huge_param_2]", f"[{name}_param_{len(types) - 1}]")
            ptx = ptx[:start] + f".visible .entry {name}(\n{params}\n)\n" + kernel + ptx[end:]
        image = ptx.encode()
        module["image"] = base64.b64encode(image).decode()
        module["hash"] = hashlib.sha256(image).hexdigest()
        doc["metadata"]["extra"]["note"] = "SYNTHETIC: the demo chain with two huge kernels (tests/hostile)"
        path = self.path(f"huge{instructions}.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_analyze_time_grows_linearly_with_two_huge_kernels_sharing_a_buffer(self):
        # Thread locality compared every access of one kernel with every access of the other (two 100k-instruction
        # kernels: over 300 s), and the block-level check evaluated a huge kernel once per block of its 4,096
        # (a 1M-instruction one: hours, 13 GB). Both are bounded now; a ratio, so that slow builds hold too.
        seconds = {}
        for n in (10_000, 40_000):
            trace = self.huge_demo_trace(n)
            start = time.monotonic()
            rc, out, err = run("analyze", trace, "--no-store", "--all", "--verbose", timeout=600)
            seconds[n] = time.monotonic() - start
            self.assertEqual(rc, 0, err)
        self.assertLess(seconds[40_000], 8 * seconds[10_000] + 1.0, seconds)
        # The pair scale -> relu was left unproven by the budget, saying so.
        self.assertIn(b"are more pairs than the 131072 a thread-locality check compares", out)

    def test_element_maps_stop_at_the_analysis_budget(self):
        # An epilogue's element map enumerates both launches' threads (up to 16M each) once per distinct tuple of
        # argument values: a fuzzed trace with a 4096-thread block held the fuzzer past its timeout, and a thousand
        # tuples would take minutes. Here scale -> add at 16M threads each with n different on each of 50
        # occurrences (SYNTHETIC, from the demo chain): the first ones are checked, the rest say why not.
        if any(s in subprocess.run(["ldd", ARGS.kfuse], capture_output=True, text=True).stdout
               for s in ("asan", "tsan", "ubsan")):
            self.skipTest("hundreds of millions of enumerated threads take minutes under a sanitizer")
        import base64
        import struct
        with open(os.path.join(ARGS.source, "examples", "traces", "demo_chain.json")) as f:
            doc = json.load(f)
        occurrence = 0
        for launch in doc["launches"]:
            args = bytearray(base64.b64decode(launch["arg_bytes"]))
            if launch["function_id"] == 1:  # scale(x, y, a, n): n at byte 20
                launch["grid"], launch["block"] = [65536, 1, 1], [256, 1, 1]
                struct.pack_into("<i", args, 20, 1048576 + occurrence)
            elif launch["function_id"] == 2:  # add(x, y, z, n): n at byte 24
                launch["grid"], launch["block"] = [32768, 1, 1], [512, 1, 1]
                struct.pack_into("<i", args, 24, 1048576 + occurrence)
                occurrence += 1
            launch["arg_bytes"] = base64.b64encode(bytes(args)).decode()
        doc["metadata"]["extra"]["note"] = "SYNTHETIC: the demo chain at 16M threads per launch (tests/hostile)"
        path = self.path("element_maps.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        rc, out, err = run("analyze", path, "--no-store", "--verbose", timeout=600)
        self.assertEqual(rc, 0, err)
        text = out.decode()
        self.assertIn("not checked: this analysis has spent its budget of 268435456 launch threads", text)
        self.assertRegex(text, r"epilogue +proven +high +[1-9]")  # the occurrences checked before it ran out

    def test_a_gzip_whose_one_string_inflates_to_100_mib_is_refused_cheaply(self):
        # The whole string was buffered: a 3.9 GiB string passed 14 GiB of RSS.
        self.assertRefusedCheaply(["analyze", inp("kineto_huge_string.json.gz")], "longer than 64 MiB", 400)

    def test_whitespace_inflating_to_100_mib_between_two_events_is_refused_cheaply(self):
        self.assertRefusedCheaply(["analyze", inp("kineto_huge_whitespace.json.gz")], "longer than 64 MiB", 400)

    def test_a_gzipped_kfuse_json_whose_one_string_inflates_to_300_mib_is_refused_while_inflating(self):
        # kfuse trace JSON was inflated whole, then parsed: a 4 MB file could cost gigabytes.
        self.assertRefusedCheaply(["analyze", inp("kfuse_json_huge_string.json.gz")], "longer than 256.0 MiB", 700)

    def test_an_execution_trace_whose_one_string_inflates_to_300_mib_is_refused_while_inflating(self):
        # Found by fuzz_import_et: the ET reader inflated a gzip whole (1 GB and 22 s under the fuzzer).
        kineto = os.path.join(ARGS.shared, "kineto", "hta_simple_add.json.gz")
        self.assertRefusedCheaply(["analyze", kineto, "--no-store", "--et", inp("kfuse_json_huge_string.json.gz")],
                                  "longer than 64.0 MiB", 400)


class Overwrite(Case):
    def test_force_replaces_regular_files_only(self):
        # record -f and import --force replaced an empty directory (and, as root, would remove a device node).
        src = os.path.join(ARGS.source, "examples", "traces", "demo_chain.json")
        empty_dir = self.path("empty")
        os.mkdir(empty_dir)
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        for target in (empty_dir, fifo):
            rc, _, err = run("import", src, "-o", target, "--force")
            self.assertEqual(rc, 2, err)
            self.assertIn("not a regular file", err)
            rc, _, err = run("record", "-f", "-o", target, "--", "true")
            self.assertEqual(rc, 2, err)
            self.assertIn("not a regular file", err)
        self.assertTrue(os.path.isdir(empty_dir))
        self.assertTrue(os.path.exists(fifo) and not os.path.isfile(fifo))
        # A regular file that is not a trace (not SQLite) is not replaced either: the message says so.
        text = self.path("notes.txt")
        with open(text, "w") as f:
            f.write("my notes\n")
        for args in (["import", src, "-o", text, "--force"], ["record", "-f", "-o", text, "--", "true"]):
            rc, _, err = run(*args)
            self.assertEqual(rc, 2, err)
            self.assertIn("is not a trace (not an SQLite file)", err)
        with open(text) as f:
            self.assertEqual(f.read(), "my notes\n")

    def test_ptx_check_reports_a_verification_error_on_stderr_too(self):
        bad = self.path("bad.ptx")
        with open(bad, "w") as f:
            f.write(".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tfoo.bar %r1;\n\tret;\n}\n")
        rc, out, err = run("ptx", "check", bad)
        self.assertEqual(rc, 1, err)
        self.assertIn(b"verify: ", out)
        self.assertIn(f"kfuse: {bad}: ", err)
        self.assertIn("is not declared", err)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--shared", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
