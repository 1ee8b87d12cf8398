// A SYNTHETIC kernel of about N instructions as bench/make_large_ptx.py writes it (straight line, nvcc's SSA-like
// registers): 16 instructions per group, two global loads, float arithmetic and a store. Nobody compiled it; the
// benchmarks of huge kernels (ptx_parse_bench, analyze_bench) share it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace kfuse::bench {

// The entry `name`, whose parameters are `types` (".u64", ".f32"...): it reads through parameter 0, writes through
// parameter 1 and compares each index with the u32 parameter `n_param`.
inline std::string hugeKernelEntry(const std::string& name, const std::vector<std::string>& types, size_t n_param,
                                   int64_t n) {
  const int64_t groups = std::max<int64_t>(1, n / 16);
  std::string text = ".visible .entry " + name + "(";
  for (size_t i = 0; i < types.size(); ++i) {
    text += (i ? ", .param " : ".param ") + types[i] + " " + name + "_param_" + std::to_string(i);
  }
  text += ")\n{\n";
  text.append("\t.reg .pred %p<").append(std::to_string(groups + 2)).append(">;\n\t.reg .f32 %f<");
  text.append(std::to_string(6 * groups + 2)).append(">;\n\t.reg .b32 %r<").append(std::to_string(5 * groups + 8));
  text.append(">;\n\t.reg .b64 %rd<").append(std::to_string(3 * groups + 8)).append(">;\n");
  const std::string param = "[" + name + "_param_";
  text.append("\tld.param.u64 %rd1, " + param + "0];\n\tld.param.u64 %rd2, " + param + "1];\n\tld.param.u32 %r1, " +
              param + std::to_string(n_param) + "];\n");
  text.append(
      "\tcvta.to.global.u64 %rd3, %rd1;\n\tcvta.to.global.u64 %rd4, %rd2;\n\tmov.u32 %r2, %ctaid.x;\n"
      "\tmov.u32 %r3, %ntid.x;\n\tmov.u32 %r4, %tid.x;\n\tmad.lo.s32 %r5, %r2, %r3, %r4;\n");
  for (int64_t k = 0; k < groups; ++k) {
    const std::string r = std::to_string(6 + 5 * k), r1 = std::to_string(7 + 5 * k), r2 = std::to_string(8 + 5 * k);
    const std::string r3 = std::to_string(9 + 5 * k), r4 = std::to_string(10 + 5 * k), p = std::to_string(1 + k);
    const int64_t f = 6 * k, rd = 5 + 3 * k;
    auto F = [&](int i) { return "%f" + std::to_string(f + i); };
    auto RD = [&](int i) { return "%rd" + std::to_string(rd + i); };
    text.append("\tadd.s32 %r" + r + ", %r5, " + std::to_string(k) + ";\n\tsetp.ge.s32 %p" + p + ", %r" + r +
                ", %r1;\n");
    text.append("\tselp.b32 %r" + r4 + ", 1, 0, %p" + p + ";\n\tmul.wide.s32 " + RD(0) + ", %r" + r + ", 4;\n");
    text.append("\tadd.s64 " + RD(1) + ", %rd3, " + RD(0) + ";\n\tld.global.nc.f32 " + F(0) + ", [" + RD(1) + "];\n");
    text.append("\tld.global.nc.f32 " + F(1) + ", [" + RD(1) + "+4];\n\tfma.rn.f32 " + F(2) + ", " + F(0) +
                ", 0f3F000000, " + F(1) + ";\n");
    text.append("\tmul.f32 " + F(3) + ", " + F(2) + ", " + F(2) + ";\n\tadd.f32 " + F(4) + ", " + F(3) +
                ", 0f3F800000;\n\tmax.f32 " + F(5) + ", " + F(4) + ", 0f00000000;\n");
    text.append("\tadd.s64 " + RD(2) + ", %rd4, " + RD(0) + ";\n\tst.global.f32 [" + RD(2) + "], " + F(5) + ";\n");
    text.append("\tadd.s32 %r" + r1 + ", %r" + r + ", %r3;\n\tmov.b32 %r" + r2 + ", " + F(5) + ";\n\txor.b32 %r" + r3 +
                ", %r" + r2 + ", %r" + r1 + ";\n");
  }
  text.append("\tret;\n}\n");
  return text;
}

// A module of one such kernel, `huge(.u64 in, .u64 out, .u32 n)`.
inline std::string hugeKernel(int64_t n) {
  return ".version 9.0\n.target sm_90\n.address_size 64\n" + hugeKernelEntry("huge", {".u64", ".u64", ".u32"}, 2, n);
}

}  // namespace kfuse::bench
