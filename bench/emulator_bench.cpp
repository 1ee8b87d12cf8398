// Emulator throughput: thread-instructions per second on one host core (Device with one worker thread), for
// an elementwise kernel and a shared-memory reduction. The PTX below is nvcc 13.0 output (`nvcc -ptx
// -arch=sm_90`) for:
//
//   extern "C" __global__ void saxpy_relu(const float* x, const float* y, float* out, float a, int n) {
//     int i = blockIdx.x * blockDim.x + threadIdx.x;
//     if (i < n) { float v = a * x[i] + y[i]; out[i] = v > 0.f ? v : 0.f; }
//   }
//   extern "C" __global__ void block_reduce(const float* in, float* out, int n) {
//     extern __shared__ float s[];
//     int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
//     s[t] = i < n ? in[i] : 0.f;
//     __syncthreads();
//     for (int k = blockDim.x / 2; k > 0; k >>= 1) { if (t < k) s[t] += s[t + k]; __syncthreads(); }
//     if (t == 0) out[blockIdx.x] = s[0];
//   }
//
// Reported counter: thread_inst/s over the CPU time of the benchmark thread, which runs every block (the device
// has one worker thread), i.e. per core even on a loaded machine. Target >= 30M/s per core.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kfuse/emulator/emulator.h"

namespace {

const char* kPtx = R"PTX(
.version 9.0
.target sm_90
.address_size 64
	// .globl	saxpy_relu
.extern .shared .align 16 .b8 s[];
.visible .entry saxpy_relu(
	.param .u64 saxpy_relu_param_0,
	.param .u64 saxpy_relu_param_1,
	.param .u64 saxpy_relu_param_2,
	.param .f32 saxpy_relu_param_3,
	.param .u32 saxpy_relu_param_4
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<6>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<11>;
	ld.param.u64 	%rd1, [saxpy_relu_param_0];
	ld.param.u64 	%rd2, [saxpy_relu_param_1];
	ld.param.u64 	%rd3, [saxpy_relu_param_2];
	ld.param.f32 	%f1, [saxpy_relu_param_3];
	ld.param.u32 	%r2, [saxpy_relu_param_4];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.f32 	%f2, [%rd6];
	cvta.to.global.u64 	%rd7, %rd2;
	add.s64 	%rd8, %rd7, %rd5;
	ld.global.f32 	%f3, [%rd8];
	fma.rn.f32 	%f4, %f2, %f1, %f3;
	max.f32 	%f5, %f4, 0f00000000;
	cvta.to.global.u64 	%rd9, %rd3;
	add.s64 	%rd10, %rd9, %rd5;
	st.global.f32 	[%rd10], %f5;
$L__BB0_2:
	ret;
}
	// .globl	block_reduce
.visible .entry block_reduce(
	.param .u64 block_reduce_param_0,
	.param .u64 block_reduce_param_1,
	.param .u32 block_reduce_param_2
)
{
	.reg .pred 	%p<6>;
	.reg .f32 	%f<9>;
	.reg .b32 	%r<15>;
	.reg .b64 	%rd<9>;
	ld.param.u64 	%rd1, [block_reduce_param_0];
	ld.param.u64 	%rd2, [block_reduce_param_1];
	ld.param.u32 	%r9, [block_reduce_param_2];
	mov.u32 	%r1, %ntid.x;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %tid.x;
	mad.lo.s32 	%r4, %r2, %r1, %r3;
	setp.ge.s32 	%p1, %r4, %r9;
	mov.f32 	%f8, 0f00000000;
	@%p1 bra 	$L__BB1_2;
	cvta.to.global.u64 	%rd3, %rd1;
	mul.wide.s32 	%rd4, %r4, 4;
	add.s64 	%rd5, %rd3, %rd4;
	ld.global.f32 	%f8, [%rd5];
$L__BB1_2:
	shl.b32 	%r10, %r3, 2;
	mov.u32 	%r11, s;
	add.s32 	%r5, %r11, %r10;
	st.shared.f32 	[%r5], %f8;
	bar.sync 	0;
	shr.u32 	%r14, %r1, 1;
	setp.eq.s32 	%p2, %r14, 0;
	@%p2 bra 	$L__BB1_6;
$L__BB1_3:
	setp.ge.s32 	%p3, %r3, %r14;
	@%p3 bra 	$L__BB1_5;
	shl.b32 	%r12, %r14, 2;
	add.s32 	%r13, %r5, %r12;
	ld.shared.f32 	%f4, [%r5];
	ld.shared.f32 	%f5, [%r13];
	add.f32 	%f6, %f5, %f4;
	st.shared.f32 	[%r5], %f6;
$L__BB1_5:
	bar.sync 	0;
	shr.u32 	%r14, %r14, 1;
	setp.ne.s32 	%p4, %r14, 0;
	@%p4 bra 	$L__BB1_3;
$L__BB1_6:
	setp.ne.s32 	%p5, %r3, 0;
	@%p5 bra 	$L__BB1_8;
	ld.shared.f32 	%f7, [s];
	cvta.to.global.u64 	%rd6, %rd2;
	mul.wide.u32 	%rd7, %r2, 4;
	add.s64 	%rd8, %rd6, %rd7;
	st.global.f32 	[%rd8], %f7;
$L__BB1_8:
	ret;
}
)PTX";

using kfuse::core::LaunchShape;
using kfuse::emulator::Device;
using kfuse::emulator::DevicePtr;
using kfuse::emulator::LaunchCounters;

struct Fixture {
  Device device{1};
  std::shared_ptr<kfuse::emulator::Program> program;
  Fixture() {
    auto p = device.loadPtx(kPtx, "emulator_bench.ptx");
    if (!p.ok()) {
      std::fprintf(stderr, "emulator_bench: %s\n", p.status().message().c_str());
      std::exit(1);
    }
    program = *p;
  }
  DevicePtr alloc(size_t n, float v) {
    DevicePtr p = *device.memory().allocate(n * sizeof(float));
    std::vector<float> h(n, v);
    (void)device.memory().copyToDevice(p, h.data(), n * sizeof(float));
    return p;
  }
};

void BM_Elementwise(benchmark::State& state) {
  Fixture f;
  const int n = int(state.range(0));
  DevicePtr x = f.alloc(n, 1.0f), y = f.alloc(n, -0.5f), out = f.alloc(n, 0.0f);
  float a = 2.0f;
  int nn = n;
  void* args[] = {&x, &y, &out, &a, &nn};
  const auto* k = f.program->findKernel("saxpy_relu");
  auto params = Device::packParams(k->info(), args);
  LaunchShape cfg{{unsigned((n + 255) / 256)}, {256}, 0};
  uint64_t inst = 0;
  for (auto _ : state) {
    LaunchCounters c;
    if (!f.device.launch(*k, cfg, params, &c).ok()) state.SkipWithError("launch failed");
    inst += c.thread_instructions;
  }
  state.counters["thread_inst/s"] = benchmark::Counter(double(inst), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Elementwise)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_SharedReduction(benchmark::State& state) {
  Fixture f;
  const int n = int(state.range(0));
  DevicePtr in = f.alloc(n, 1.0f), out = f.alloc(n / 256 + 1, 0.0f);
  int nn = n;
  void* args[] = {&in, &out, &nn};
  const auto* k = f.program->findKernel("block_reduce");
  auto params = Device::packParams(k->info(), args);
  LaunchShape cfg{{unsigned((n + 255) / 256)}, {256}, 256 * sizeof(float)};
  uint64_t inst = 0;
  for (auto _ : state) {
    LaunchCounters c;
    if (!f.device.launch(*k, cfg, params, &c).ok()) state.SkipWithError("launch failed");
    inst += c.thread_instructions;
  }
  state.counters["thread_inst/s"] = benchmark::Counter(double(inst), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SharedReduction)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
