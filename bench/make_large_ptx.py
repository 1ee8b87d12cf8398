#!/usr/bin/env python3
"""Writes a SYNTHETIC PTX module with one kernel of about N instructions (default 1,000,000), for the memory and
time of `kfuse ptx check` on a huge kernel (README performance table; bench/ptx_parse_bench.cpp builds the same
shape in memory): nobody compiled it. The body repeats what nvcc emits for a fully unrolled elementwise loop, 16
instructions at a time: an index, two global loads, float arithmetic and a store, each value in a register of its
own (nvcc's SSA-like numbering). --branches guards each group with a branch over it (one basic block per group).

usage: make_large_ptx.py OUT.ptx [--instructions N] [--branches]
"""
import argparse

HEAD = """.version 9.0
.target sm_90
.address_size 64

// SYNTHETIC: written by bench/make_large_ptx.py
.visible .entry huge(
\t.param .u64 huge_param_0,
\t.param .u64 huge_param_1,
\t.param .u32 huge_param_2
)
{{
\t.reg .pred \t%p<{p}>;
\t.reg .f32 \t%f<{f}>;
\t.reg .b32 \t%r<{r}>;
\t.reg .b64 \t%rd<{rd}>;

\tld.param.u64 \t%rd1, [huge_param_0];
\tld.param.u64 \t%rd2, [huge_param_1];
\tld.param.u32 \t%r1, [huge_param_2];
\tcvta.to.global.u64 \t%rd3, %rd1;
\tcvta.to.global.u64 \t%rd4, %rd2;
\tmov.u32 \t%r2, %ctaid.x;
\tmov.u32 \t%r3, %ntid.x;
\tmov.u32 \t%r4, %tid.x;
\tmad.lo.s32 \t%r5, %r2, %r3, %r4;
"""


def group(k, branches):
    r, f, rd, p = 6 + 5 * k, 6 * k, 5 + 3 * k, 1 + k
    lines = [f"add.s32 \t%r{r}, %r5, {k}", f"setp.ge.s32 \t%p{p}, %r{r}, %r1"]
    lines.append(f"@%p{p} bra \t$L__BB0_{k}" if branches else f"selp.b32 \t%r{r + 4}, 1, 0, %p{p}")
    lines += [f"mul.wide.s32 \t%rd{rd}, %r{r}, 4", f"add.s64 \t%rd{rd + 1}, %rd3, %rd{rd}",
              f"ld.global.nc.f32 \t%f{f}, [%rd{rd + 1}]", f"ld.global.nc.f32 \t%f{f + 1}, [%rd{rd + 1}+4]",
              f"fma.rn.f32 \t%f{f + 2}, %f{f}, 0f3F000000, %f{f + 1}", f"mul.f32 \t%f{f + 3}, %f{f + 2}, %f{f + 2}",
              f"add.f32 \t%f{f + 4}, %f{f + 3}, 0f3F800000", f"max.f32 \t%f{f + 5}, %f{f + 4}, 0f00000000",
              f"add.s64 \t%rd{rd + 2}, %rd4, %rd{rd}", f"st.global.f32 \t[%rd{rd + 2}], %f{f + 5}",
              f"add.s32 \t%r{r + 1}, %r{r}, %r3", f"mov.b32 \t%r{r + 2}, %f{f + 5}",
              f"xor.b32 \t%r{r + 3}, %r{r + 2}, %r{r + 1}"]
    text = "".join(f"\t{l};\n" for l in lines)
    return text + (f"$L__BB0_{k}:\n" if branches else "")


def module(instructions, branches):
    """The module's text (tests/hostile/hostile_test.py uses it too)."""
    groups = max(1, instructions // 16)
    parts = [HEAD.format(p=groups + 2, f=6 * groups + 2, r=5 * groups + 8, rd=3 * groups + 8)]
    parts += [group(k, branches) for k in range(groups)]
    parts.append("\tret;\n\n}\n")
    return "".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--instructions", type=int, default=1_000_000)
    ap.add_argument("--branches", action="store_true")
    args = ap.parse_args()
    with open(args.out, "w") as out:
        out.write(module(args.instructions, args.branches))


if __name__ == "__main__":
    main()
