#!/usr/bin/env python3
"""Faults while recording, and concurrent recording: `kfuse record` of a driver-API test program (launch_loop, on
the test fake libcuda) killed, crashing, forking, out of disk, over its file size limit, its output directory
removed, and its trace read from read-only media. Whatever was committed must open with `kfuse info` and
`kfuse analyze`; a recording that could not be completed must say so and exit non-zero; the program's own exit
status passes through; the program behaves as it does without kfuse.

Disk-full and read-only media use a small tmpfs mounted in a private mount namespace (`unshare -rm`, no root
needed where unprivileged user namespaces are allowed); those tests are skipped where that is refused.

Usage: check_faults.py --kfuse PATH --launch-loop PATH [unittest args]
"""
import argparse
import base64
import json
import os
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None


def kfuse(*args, timeout=120, **kw):
    p = subprocess.run([ARGS.kfuse, *args], capture_output=True, text=True, timeout=timeout, **kw)
    return p.returncode, p.stdout, p.stderr


def launches_of(trace):
    """(thread value v, n) of every launch of the trace, from `kfuse export`."""
    rc, out, err = kfuse("export", trace, "-o", "-")
    assert rc == 0, err
    doc = json.loads(out)
    keys = []
    for l in doc["launches"]:
        raw = base64.b64decode(l["arg_bytes"])
        _, n, v = struct.unpack("<Qif", raw[:16])
        keys.append((int(v), n))
    return keys


def namespaces_work():
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Faults(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kfuse_faults_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def loop(self, *args):
        return [ARGS.launch_loop, *[str(a) for a in args]]

    def start_record(self, trace, *loop_args):
        return subprocess.Popen([ARGS.kfuse, "record", "-o", trace, "--", *self.loop(*loop_args)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def program_pid(self, rec):
        """The recorded program: the child of `kfuse record`."""
        children = f"/proc/{rec.pid}/task/{rec.pid}/children"
        for _ in range(2000):
            try:
                with open(children) as f:
                    pids = f.read().split()
                if pids:
                    return int(pids[0])
            except OSError:
                pass
            time.sleep(0.001)
        self.fail("the program did not start")

    def assertTraceUsable(self, trace, what):
        rc, out, err = kfuse("info", trace)
        self.assertEqual(rc, 0, f"{what}: info: {err}")
        rc, out, err = kfuse("analyze", trace, "--no-store")
        self.assertIn(rc, (0, 3), f"{what}: analyze: {err}")
        self.assertNotIn("neither a kfuse trace", err)

    def assertCleanPrefixPerStream(self, keys, streams, what):
        by_stream = {}
        for v, n in keys:
            by_stream.setdefault(v, []).append(n)
        for v, ns in by_stream.items():
            ns.sort()
            s = v % 100
            self.assertEqual(ns, list(range(s, s + streams * len(ns), streams)), f"{what}: stream {v}")

    def test_sigkill_at_several_moments_leaves_a_trace_that_opens(self):
        # A SIGKILL about 15 ms in left a file that did not open; analyze ignored the WAL of a killed program.
        # Moments: at start-up (before any file), while the collector creates the trace (its temporary file
        # appears), right after the trace appears, and 20, 150 and 400 ms later.
        for moment in ("start-up", "creating", "created", 20, 150, 400):
            trace = self.path(f"killed_{moment}.sqlite")
            rec = self.start_record(trace, "--threads", 2, "--streams", 2, "--launches", 200000, "--sleep-us", 20)
            pid = self.program_pid(rec)
            if moment != "start-up":
                want = (lambda: any(f.startswith(".killed_creating") for f in os.listdir(self.dir))) \
                    if moment == "creating" else (lambda: os.path.exists(trace))
                deadline = time.time() + 30
                while not want() and time.time() < deadline:
                    time.sleep(0.0002)
                if isinstance(moment, int):
                    time.sleep(moment / 1000)
            os.kill(pid, signal.SIGKILL)
            out, err = rec.communicate(timeout=60)
            self.assertEqual(rec.returncode, 128 + signal.SIGKILL, err)
            leftovers = [f for f in os.listdir(self.dir) if ".kfuse-new-" in f]
            self.assertEqual(leftovers, [], "kfuse record removes a trace the collector had not finished creating")
            if not os.path.exists(trace):
                self.assertIn(moment, ("start-up", "creating"), f"no trace after {moment}: {err}")
                self.assertIn("before the collector created its trace", err)
                continue
            self.assertTraceUsable(trace, f"killed at {moment}")
            keys = launches_of(trace)
            self.assertCleanPrefixPerStream(keys, 2, f"killed at {moment}")
            if moment == 400:
                self.assertGreater(len(keys), 0, "batches committed before the kill are in the trace")

    def test_a_crashing_program_passes_its_status_through_and_its_trace_analyzes(self):
        # Under ASan (scripts/sanitize.sh) the deliberate crash must end the program as it would without it, not as
        # an ASan report (exit 1).
        env = dict(os.environ)
        if "ASAN_OPTIONS" in env:
            env["ASAN_OPTIONS"] += ":handle_segv=0:handle_abort=0"
        for crash, status in (("abort", 128 + signal.SIGABRT), ("segv", 128 + signal.SIGSEGV)):
            trace = self.path(f"{crash}.sqlite")
            rc, out, err = kfuse("record", "-o", trace, "--",
                                 *self.loop("--threads", 1, "--streams", 2, "--launches", 5000, "--crash", crash,
                                            "--at", 3000), env=env)
            self.assertEqual(rc, status, err)
            self.assertTraceUsable(trace, crash)
            keys = launches_of(trace)
            self.assertCleanPrefixPerStream(keys, 2, crash)

    def test_a_file_size_limit_fails_the_recording_not_the_program(self):
        # With `ulimit -f` the recorded program died of SIGXFSZ (exit 153) though it ran fine alone.
        trace = self.path("limited.sqlite")
        cmd = (f"ulimit -f 512; exec {shlex.quote(ARGS.kfuse)} record -o {shlex.quote(trace)} -- " +
               " ".join(shlex.quote(a) for a in self.loop("--threads", 2, "--streams", 2, "--launches", 20000)))
        p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
        self.assertIn("launch_loop: driver saw 40000 launches", p.stdout, p.stderr)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("recording incomplete", p.stderr)
        self.assertTraceUsable(trace, "over the file size limit")

    def test_output_directory_removed_mid_run_is_reported(self):
        out_dir = self.path("out")
        os.mkdir(out_dir)
        trace = os.path.join(out_dir, "t.sqlite")
        rec = self.start_record(trace, "--threads", 1, "--streams", 1, "--launches", 3000, "--sleep-us", 100)
        self.program_pid(rec)
        time.sleep(0.1)
        shutil.rmtree(out_dir)
        out, err = rec.communicate(timeout=60)
        self.assertEqual(rec.returncode, 2, err)
        self.assertIn("was removed or renamed while recording", err)

    def test_four_threads_on_two_streams_each_record_every_launch_once(self):
        trace = self.path("threads.sqlite")
        rc, out, err = kfuse("record", "-o", trace, "--",
                             *self.loop("--threads", 4, "--streams", 2, "--launches", 2500))
        self.assertEqual(rc, 0, err)
        self.assertIn("launch_loop: driver saw 10000 launches", out)
        keys = launches_of(trace)
        self.assertEqual(len(keys), 10000)
        self.assertEqual(len(set(keys)), 10000, "every launch recorded exactly once")
        self.assertCleanPrefixPerStream(keys, 2, "threads")

    def test_a_program_that_forks_and_execs_gives_one_trace_per_process(self):
        pattern = self.path("fork_%p.sqlite")
        rc, out, err = kfuse("record", "-o", pattern, "--",
                             *self.loop("--threads", 2, "--streams", 2, "--launches", 100, "--fork-exec",
                                        ARGS.launch_loop))
        self.assertEqual(rc, 0, err)
        traces = sorted(f for f in os.listdir(self.dir) if f.startswith("fork_") and f.endswith(".sqlite"))
        self.assertEqual(len(traces), 2, err)
        counts = sorted(len(launches_of(self.path(t))) for t in traces)
        self.assertEqual(counts, [10, 200])


class Interrupted(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kfuse_interrupt_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_an_interrupted_ptx_roundtrip_leaves_no_ptxas_running_and_no_temporary_directory(self):
        # Interrupted, `kfuse ptx roundtrip` left ptxas running at 100 % CPU and its temporary directory behind.
        if not shutil.which("ptxas") and not os.path.exists("/usr/local/cuda/bin/ptxas"):
            self.skipTest("no ptxas")
        lines = [".version 8.0", ".target sm_90", ".address_size 64", ".visible .entry big(.param .u64 p)", "{",
                 "  .reg .f32 %f<40002>;", "  .reg .b64 %rd<3>;", "  ld.param.u64 %rd1, [p];",
                 "  cvta.to.global.u64 %rd2, %rd1;", "  ld.global.f32 %f1, [%rd2];"]
        lines += [f"  fma.rn.f32 %f{i}, %f{i - 1}, %f{i - 1}, %f{max(1, i - 2)};" for i in range(2, 40001)]
        lines += ["  st.global.f32 [%rd2], %f40000;", "  ret;", "}"]
        ptx = os.path.join(self.dir, "big.ptx")  # synthetic: a long chain ptxas needs seconds for
        with open(ptx, "w") as f:
            f.write("\n".join(lines) + "\n")
        tmp = os.path.join(self.dir, "tmp")
        os.mkdir(tmp)
        for sig in (signal.SIGINT, signal.SIGTERM):
            p = subprocess.Popen([ARGS.kfuse, "ptx", "roundtrip", ptx, "--arch", "sm_90"],
                                 env=dict(os.environ, TMPDIR=tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            children = f"/proc/{p.pid}/task/{p.pid}/children"
            ptxas = None
            deadline = time.time() + 60
            while ptxas is None and time.time() < deadline and p.poll() is None:
                try:
                    with open(children) as f:
                        pids = f.read().split()
                    ptxas = int(pids[0]) if pids else None
                except OSError:
                    pass
                time.sleep(0.01)
            self.assertIsNotNone(ptxas, "ptxas started")
            p.send_signal(sig)
            p.communicate(timeout=60)
            self.assertEqual(p.returncode, -sig)
            time.sleep(0.2)
            self.assertFalse(os.path.exists(f"/proc/{ptxas}") and "ptxas" in open(f"/proc/{ptxas}/cmdline").read(),
                             "ptxas still running")
            self.assertEqual(os.listdir(tmp), [], "temporary directory left behind")


@unittest.skipUnless(namespaces_work(), "unshare -rm (a private mount namespace) is not allowed here")
class FullOrReadOnlyMedia(unittest.TestCase):
    """Each test runs one shell script in a private mount namespace with a small tmpfs at $M."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kfuse_media_")
        self.mnt = os.path.join(self.dir, "m")
        os.mkdir(self.mnt)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def in_namespace(self, script, size="2m"):
        full = f"set -u; M={shlex.quote(self.mnt)}; K={shlex.quote(ARGS.kfuse)}; L={shlex.quote(ARGS.launch_loop)}\n"
        full += f"mount -t tmpfs -o size={size} tmpfs \"$M\" || exit 99\n" + script
        p = subprocess.run(["unshare", "-rm", "bash", "-c", full], capture_output=True, text=True, timeout=300)
        if p.returncode == 99:
            self.skipTest("cannot mount a tmpfs here: " + p.stderr)
        return p

    def test_a_full_disk_fails_the_recording_loudly_and_what_was_committed_opens(self):
        # Recording into a filling filesystem exited 0, said "trace written", and the file then did not open.
        p = self.in_namespace(
            '"$K" record -o "$M/t.sqlite" -- "$L" --threads 4 --streams 2 --launches 20000 > "$M/../out.txt" 2> "$M/../err.txt"\n'
            'echo "record=$?"\n'
            '"$K" info "$M/t.sqlite" > /dev/null 2> "$M/../info.txt"; echo "info=$?"\n'
            '"$K" analyze --no-store "$M/t.sqlite" > /dev/null 2>> "$M/../info.txt"; echo "analyze=$?"\n',
            size="1m")
        with open(os.path.join(self.dir, "err.txt")) as f:
            err = f.read()
        with open(os.path.join(self.dir, "info.txt")) as f:
            info_err = f.read()
        self.assertIn("record=2", p.stdout, err)
        self.assertIn("recording incomplete", err)
        self.assertIn("full", err)
        self.assertIn("info=0", p.stdout, info_err)
        self.assertRegex(p.stdout, r"analyze=[03]", info_err)
        with open(os.path.join(self.dir, "out.txt")) as f:
            self.assertIn("driver saw 80000 launches", f.read(), "the program ran to its end")

    def test_import_onto_a_full_disk_leaves_no_file(self):
        demo = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                                            "traces", "demo_chain.json"))
        p = self.in_namespace(
            f'dd if=/dev/zero of="$M/fill" bs=1k count=2000 2>/dev/null; '
            f'"$K" import {shlex.quote(demo)} -o "$M/t.sqlite"; echo "import=$?"; ls "$M"\n', size="2m")
        self.assertIn("import=2", p.stdout, p.stderr)
        self.assertNotIn("t.sqlite", p.stdout.split("import=")[1], "no 0-byte or partial trace is left")

    def test_traces_on_read_only_media_open_with_or_without_a_write_ahead_log(self):
        # A killed recording leaves t.sqlite-wal beside the trace; neither kind opened from read-only media.
        p = self.in_namespace(
            '"$K" -q record -o "$M/clean.sqlite" -- "$L" --threads 1 --streams 1 --launches 500 > /dev/null\n'
            '"$K" -q record -o "$M/killed.sqlite" -- "$L" --threads 1 --streams 1 --launches 100000 --sleep-us 20 > /dev/null &\n'
            'sleep 0.5; pkill -KILL -P $! ; wait\n'
            'rm -f "$M/killed.sqlite-shm"; ls "$M" >&2\n'
            'mount -o remount,ro "$M" || exit 98\n'
            'for t in clean killed; do "$K" info "$M/$t.sqlite" > /dev/null; echo "$t info=$?"; '
            '"$K" analyze --no-store "$M/$t.sqlite" > /dev/null; echo "$t analyze=$?"; done\n')
        self.assertIn("killed.sqlite-wal", p.stderr, "the killed recording left its write-ahead log")
        for t in ("clean", "killed"):
            self.assertIn(f"{t} info=0", p.stdout, p.stderr)
            self.assertRegex(p.stdout, f"{t} analyze=[03]", p.stderr)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--launch-loop", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
