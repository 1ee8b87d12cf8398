#include "trace_builders.h"

#include <cstring>

namespace kfuse::testing {

using namespace kfuse::core;

Launch makeLaunch(Id id, int pointer_args) {
  Launch l;
  l.id = id;
  l.correlation_id = 1000 + id;
  l.thread_id = 4242;
  l.stream_id = 1 + id % 2;
  l.function_id = 1 + id % 3;
  l.grid = {static_cast<uint32_t>(256 + id % 7), 1, 1};
  l.block = {256, 1, 1};
  l.registers_per_thread = 32;
  l.api_start_ns = 1'000'000 + id * 1000;
  l.api_end_ns = l.api_start_ns + 400;
  l.gpu_start_ns = l.api_start_ns + 5000;
  l.gpu_end_ns = l.gpu_start_ns + 2000 + id % 100;
  l.arg_bytes.resize(32);
  for (int p = 0; p < pointer_args; ++p) {
    const uint64_t address =
        0x7f0000000000ull + static_cast<uint64_t>(p) * 0x100000 + static_cast<uint64_t>(id % 64) * 16;
    std::memcpy(l.arg_bytes.data() + 8 * p, &address, sizeof address);
    l.pointer_args.push_back(
        PointerArg{p, address, p + 1, address - (0x7f0000000000ull + static_cast<uint64_t>(p) * 0x100000)});
  }
  return l;
}

Trace makeEveryKindTrace() {
  Trace t;
  t.metadata.producer = "kfuse-test";
  t.metadata.producer_version = "0.1.0";
  t.metadata.command_line = "./app --size 1024 \"quoted arg\"";
  t.metadata.host = "testhost";
  t.metadata.start_time_ns = 1'700'000'000'000'000'000;
  t.metadata.extra = {{"backend", "hook"}, {"note", "ünïcödé ok"}};

  t.processes = {{1, 4242, "app"}, {2, 4243, "worker"}};
  t.devices = {{1, 0, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85'520'809'984ull, 1'980'000, "GPU-1234"},
               {2, 1, "kfuse emulator", 9, 0, 0, 0, 0, ""}};
  t.contexts = {{1, 1, 1, 0xdeadbeef00ull}, {2, 2, kNoId, 0}};
  t.streams = {{1, 1, 0, 7, 0, true}, {2, 1, 0xffff800000000001ull, 20, -1, false}};

  Module ptx;
  ptx.id = 1;
  ptx.context_id = 1;
  ptx.kind = ImageKind::kPtx;
  const char* text = ".version 9.0\n.target sm_90\n.address_size 64\n";
  ptx.image.assign(text, text + std::strlen(text));
  ptx.hash = sha256Hex(ptx.image);
  ptx.load_ns = 900'000;
  Module cubin = ptx;  // same image loaded twice: stored once
  cubin.id = 2;
  cubin.load_ns = 950'000;
  Module hash_only;
  hash_only.id = 3;
  hash_only.kind = ImageKind::kCubin;
  hash_only.hash = std::string(64, 'a');
  t.modules = {ptx, cubin, hash_only};

  t.functions = {
      {1,
       1,
       "_Z5scalePKfPfi",
       "scale(float const*, float*, int)",
       {{0, 0, 8, "ptr", AccessMode::kRead},
        {1, 8, 8, "ptr", AccessMode::kWrite},
        {2, 16, 4, "s32", AccessMode::kNone}}},
      {2,
       1,
       "_Z3addPKfS0_Pfi",
       "add(float const*, float const*, float*, int)",
       {{0, 0, 8, "ptr", AccessMode::kRead},
        {1, 8, 8, "ptr", AccessMode::kUnknown},
        {2, 16, 8, "ptr", AccessMode::kReadWrite}}},
      {3, 3, "relu_kernel", "", {}},
  };
  t.allocations = {{1, 1, 0x7f0000000000ull, 1 << 20, AllocationKind::kDevice, 950'000, 5'000'000},
                   {2, 1, 0x7f0000100000ull, 1 << 20, AllocationKind::kManaged, kNoTime, kNoTime},
                   {3, kNoId, 0xfffffffffff00000ull, 4096, AllocationKind::kHostPinned, 960'000, kNoTime}};
  t.launches = {makeLaunch(1), makeLaunch(2, 0), makeLaunch(3, 1)};
  t.launches[1].gpu_start_ns = kNoTime;
  t.launches[1].gpu_end_ns = kNoTime;
  t.launches[1].arg_bytes.clear();
  t.launches[2].pointer_args[0].allocation_id = kNoId;  // a pointer that matched no allocation
  t.launches[2].stream_id = kNoId;
  t.launches[1].cluster = {2, 1, 1};  // launched with clusters of 2 blocks (its grid.x, 258, is even)
  t.memcpys = {{1, 5, 4242, 1, MemcpyKind::kHostToDevice, 0x55550000ull, 0x7f0000000000ull, kNoId, 1, 4096, false,
                960'000, 970'000, 965'000, 968'000},
               {2, 6, 4242, 2, MemcpyKind::kDeviceToHost, 0x7f0000100000ull, 0x55560000ull, 2, kNoId, 1 << 20, true,
                kNoTime, kNoTime, kNoTime, kNoTime}};
  t.memsets = {{1, 7, 4242, 1, 0x7f0000000000ull, 1, 1 << 20, 0, 4, true, 980'000, 981'000, 982'000, 983'000},
               {2, 8, 4243, kNoId, 0x1234ull, kNoId, 16, 0xff, 1, false, kNoTime, kNoTime, kNoTime, kNoTime}};
  t.events = {{1, 9, 0xabcdull, 1, 1'200'000}, {2, 10, 0xabcdull, 2, kNoTime}};
  t.syncs = {{1, 11, 4242, SyncKind::kStreamWaitEvent, 2, 1, 1'300'000, 1'300'010},
             {2, 12, 4242, SyncKind::kContext, kNoId, kNoId, 1'400'000, 1'500'000},
             {3, 13, 4243, SyncKind::kEvent, kNoId, 2, kNoTime, kNoTime}};
  t.nvtx_ranges = {{1, "forward", "", 4242, 990'000, 2'000'000}, {2, "layer 0", "model", 4242, 995'000, kNoTime}};
  t.metrics = {{1, "dram_bytes_read", 4096.0, "bytes", MetricSource::kEmulated},
               {1, "flops_fp32", 1.5e6, "flop", MetricSource::kMeasured},
               {3, "dram_bytes_written", 0.25, "bytes", MetricSource::kEstimated}};
  t.stats = {{"dropped_records", 3, StatSeverity::kWarning, "activity buffer full"},
             {"unmatched_correlation", 1, StatSeverity::kError, ""}};

  // A captured graph (kernel, memset, child graph) whose child graph holds a copy and a kernel; one exec, updated
  // once by a kernel-node change (its own snapshot); two replays.
  t.graphs = {{1, 0x6000ull, GraphOrigin::kCapture, 2, kNoId, 1'600'000},
              {2, 0x6100ull, GraphOrigin::kChild, kNoId, 1, 1'600'001},
              {3, 0x6000ull, GraphOrigin::kExecNodeUpdate, kNoId, 1, kNoTime}};
  GraphNode kernel;
  kernel.id = 1;
  kernel.graph_id = 1;
  kernel.handle = 0x7000ull;
  kernel.type = GraphNodeType::kKernel;
  kernel.function_id = 1;
  kernel.grid = {64, 1, 1};
  kernel.block = {256, 1, 1};
  kernel.dynamic_shared_bytes = 128;
  kernel.arg_bytes = makeLaunch(1).arg_bytes;
  kernel.pointer_args = makeLaunch(1).pointer_args;
  GraphNode memset;
  memset.id = 2;
  memset.graph_id = 1;
  memset.index = 1;
  memset.handle = 0x7001ull;
  memset.type = GraphNodeType::kMemset;
  memset.dst_address = 0x7f0000000010ull;
  memset.dst_allocation_id = 1;
  memset.bytes = 4096;
  memset.value = 7;
  memset.element_size = 4;
  GraphNode child;
  child.id = 3;
  child.graph_id = 1;
  child.index = 2;
  child.handle = 0x7002ull;
  child.type = GraphNodeType::kChildGraph;
  child.child_graph_id = 2;
  GraphNode copy;
  copy.id = 4;
  copy.graph_id = 2;
  copy.handle = 0x7100ull;
  copy.type = GraphNodeType::kMemcpy;
  copy.memcpy_kind = MemcpyKind::kDeviceToHost;
  copy.src_address = 0x7f0000100000ull;
  copy.src_allocation_id = 2;
  copy.dst_address = 0x55550000ull;
  copy.bytes = 1 << 16;
  GraphNode inner = kernel;
  inner.id = 5;
  inner.graph_id = 2;
  inner.index = 1;
  inner.handle = 0x7101ull;
  inner.function_id = 3;
  inner.arg_bytes.clear();
  inner.pointer_args.clear();
  GraphNode changed = kernel;
  changed.id = 6;
  changed.graph_id = 3;
  changed.grid = {128, 1, 1};
  GraphNode event;
  event.id = 7;
  event.graph_id = 3;
  event.index = 1;
  event.handle = 0x7003ull;
  event.type = GraphNodeType::kEventRecord;
  event.event_handle = 0xabcdull;
  t.graph_nodes = {kernel, memset, child, copy, inner, changed, event};
  t.graph_edges = {{1, 1, 2, 0}, {1, 2, 3, 0}, {2, 4, 5, 1}, {3, 6, 7, 0}};
  t.graph_execs = {{1, 0x8000ull, 1, kNoId, 4242, 1'700'000, 1'700'100}, {2, 0x8000ull, 3, 1, 4242, kNoTime, kNoTime}};
  t.graph_launches = {{1, 20, 4242, 1, 2, 1'800'000, 1'800'010}, {2, 21, 4243, 2, kNoId, kNoTime, kNoTime}};
  return t;
}

}  // namespace kfuse::testing
