"""What the end-to-end check scripts share (tests/inject, tests/preload, tests/rewrite): a count of the checks
that passed, the ones that failed (printed as they fail), and the environment that runs programs on the emulator's
stand-in libcuda.so.1.

A script puts this directory on sys.path and subclasses Checks with the programs it runs.
"""
import os


class Checks:
    detail_chars = 2000  # of a failure's detail printed (its end: the last lines of a program's output)
    keep_detail = False  # whether `failures` keeps each failure's detail too

    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.failures = []
        self.passed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failures.append(what + (": " + detail if detail and self.keep_detail else ""))
            print("FAIL " + what + (": " + detail[-self.detail_chars:] if detail else ""))
        return ok

    @staticmethod
    def standin_env(build, drop=("KFUSE_DISABLE",)):
        """The environment with the stand-in first on the library path and `drop` unset (a KFUSE_DISABLE=1 the
        test's caller exported would turn kfuse off)."""
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "standin"))
        for name in drop:
            env.pop(name, None)
        return env

    @staticmethod
    def result_lines(stdout):
        """An example's verdict and checksum lines (timings differ from run to run)."""
        return [l for l in stdout.splitlines() if "checksum" in l or "PASSED" in l or "FAILED" in l]
