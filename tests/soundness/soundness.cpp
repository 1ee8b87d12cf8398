// Launches one case of the legality soundness suite: `soundness PTX_DIR CASE`. Each case is a producer and a
// consumer launched back to back on one stream, with the arguments that make the fusion legal or not; the suite
// (check_soundness.py) records the run with `kfuse record` and checks what `kfuse analyze` proves. The program
// only launches and synchronizes: what matters is the trace.
#include <cstring>
#include <functional>
#include <map>

#include "common.h"

namespace {

constexpr int kN = 1000;  // elements of the 1-D cases, not a multiple of the block size
constexpr unsigned kBlock = 128;
constexpr int kW = 100, kH = 50;  // the 2-D image

struct Buffers {
  CUdeviceptr x = 0, mid = 0, y = 0;
  Buffers() {
    for (CUdeviceptr* p : {&x, &mid, &y}) {
      CU_CHECK(cuMemAlloc(p, (kW * kH + 64) * sizeof(float)));
      CU_CHECK(cuMemsetD32(*p, 0, kW * kH + 64));
    }
  }
  ~Buffers() {
    for (CUdeviceptr p : {x, mid, y}) cuMemFree(p);
  }
};

void launch1d(const example::Session& s, CUstream stream, const char* name, void** args,
              unsigned grid = example::blocksFor(kN, kBlock), unsigned block = kBlock) {
  CU_CHECK(cuLaunchKernel(s.function(name), grid, 1, 1, block, 1, 1, 0, stream, args, nullptr));
}

void launch2d(const example::Session& s, CUstream stream, const char* name, void** args) {
  CU_CHECK(cuLaunchKernel(s.function(name), example::blocksFor(kW, 16), example::blocksFor(kH, 16), 1, 16, 16, 1, 0,
                          stream, args, nullptr));
}

// prod(out = mid + mid_offset, shift_p) then cons(in = mid + mid_offset, shift_c).
void shifted(const example::Session& s, CUstream st, Buffers& b, int shift_p, int shift_c) {
  int n = kN;
  void* a1[] = {&b.mid, &b.x, &shift_p, &n};
  launch1d(s, st, "prod", a1);
  void* a2[] = {&b.y, &b.mid, &shift_c, &n};
  launch1d(s, st, "cons", a2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: soundness PTX_DIR CASE\n");
    return 2;
  }
  example::Session s(argc, argv, "soundness");
  const std::string which = argv[2];
  CUstream st;
  CU_CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  Buffers b;
  int n = kN, w = kW, h = kH;
  // Producer into mid, then a consumer reading mid: `prod` with shift 0 is the plain elementwise producer.
  auto prodPlain = [&](CUdeviceptr out) {
    int zero = 0;
    void* a[] = {&out, &b.x, &zero, &n};
    launch1d(s, st, "prod", a);
  };
  auto consumer = [&](const char* name, CUdeviceptr in) {
    void* a[] = {&b.y, &in, &n};
    launch1d(s, st, name, a);
  };
  const std::map<std::string, std::function<void()>> cases = {
      {"shift_param_differs", [&] { shifted(s, st, b, 0, 1); }},
      {"shift_param_equal", [&] { shifted(s, st, b, 0, 0); }},
      {"shift_param_equal_nonzero", [&] { shifted(s, st, b, 1, 1); }},
      {"shift_param_mixed",
       [&] {
         shifted(s, st, b, 0, 0);
         CU_CHECK(cuStreamSynchronize(st));
         shifted(s, st, b, 0, 1);
       }},
      {"const_off_by_one", [&] { prodPlain(b.mid), consumer("cons_next", b.mid); }},
      {"const_same", [&] { prodPlain(b.mid), consumer("cons_same", b.mid); }},
      // cons_next on one element fewer: every element it reads (mid[1..n-1]) is one prod writes.
      {"const_next_inside",
       [&] {
         prodPlain(b.mid);
         int fewer = kN - 1;
         void* a[] = {&b.y, &b.mid, &fewer};
         launch1d(s, st, "cons_next", a);
       }},
      {"pointer_offset_differs", [&] { prodPlain(b.mid), consumer("cons_same", b.mid + sizeof(float)); }},
      {"pointer_offset_equal", [&] { prodPlain(b.mid + sizeof(float)), consumer("cons_same", b.mid + sizeof(float)); }},
      {"write_twice",
       [&] {
         void* a[] = {&b.mid, &b.x, &n};
         launch1d(s, st, "prod_twice", a);
         consumer("cons_same", b.mid);
       }},
      {"write_per_block",
       [&] {
         void* a[] = {&b.mid, &b.x, &n};
         launch1d(s, st, "prod_per_block", a);
         consumer("cons_same", b.mid);
       }},
      {"transposed",
       [&] {
         void* a1[] = {&b.mid, &b.x, &w, &h};
         launch2d(s, st, "prod2d", a1);
         void* a2[] = {&b.y, &b.mid, &w, &h};
         launch2d(s, st, "cons2d_transposed", a2);
       }},
      {"row_major_2d",
       [&] {
         void* a1[] = {&b.mid, &b.x, &w, &h};
         launch2d(s, st, "prod2d", a1);
         void* a2[] = {&b.y, &b.mid, &w, &h};
         launch2d(s, st, "cons2d", a2);
       }},
      {"guard_param_differs",
       [&] {
         int k1 = 7, k2 = 9;
         void* a1[] = {&b.mid, &b.x, &k1};
         launch1d(s, st, "pick", a1, 1);
         void* a2[] = {&b.y, &b.mid, &k2};
         launch1d(s, st, "take", a2, 1);
       }},
      {"guard_param_differs_blocks",
       [&] {
         int k1 = 7, k2 = 9;
         void* a1[] = {&b.mid, &b.x, &k1};
         launch1d(s, st, "pick", a1, 4);
         void* a2[] = {&b.y, &b.mid, &k2};
         launch1d(s, st, "take", a2, 4);
       }},
      {"guard_param_equal",
       [&] {
         int k = 7;
         void* a1[] = {&b.mid, &b.x, &k};
         launch1d(s, st, "pick", a1, 1);
         void* a2[] = {&b.y, &b.mid, &k};
         launch1d(s, st, "take", a2, 1);
       }},
      {"vec4",
       [&] {
         int n4 = kN / 4;
         void* a1[] = {&b.mid, &b.x, &n4};
         launch1d(s, st, "prod_vec4", a1);
         void* a2[] = {&b.y, &b.mid, &n4};
         launch1d(s, st, "cons_vec4", a2);
       }},
      {"wide_index_early_return",
       [&] {
         long long n64 = kN;
         void* a1[] = {&b.mid, &b.x, &n64};
         launch1d(s, st, "prod_wide", a1);
         void* a2[] = {&b.y, &b.mid, &n64};
         launch1d(s, st, "cons_wide", a2);
       }},
      {"two_per_thread",
       [&] {
         void* a1[] = {&b.mid, &b.x, &n};
         launch1d(s, st, "prod_pair", a1);
         void* a2[] = {&b.y, &b.mid, &n};
         launch1d(s, st, "cons_pair", a2);
       }},
      {"hidden_global",
       [&] {
         void* a[] = {&b.mid, &b.x, &n};
         launch1d(s, st, "prod_hidden", a);
         consumer("cons_hidden", b.mid);
       }},
  };
  auto it = cases.find(which);
  if (it == cases.end()) {
    std::fprintf(stderr, "soundness: unknown case '%s'; cases:", which.c_str());
    for (const auto& [name, fn] : cases) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  it->second();
  CU_CHECK(cuStreamSynchronize(st));
  CU_CHECK(cuStreamDestroy(st));
  std::printf("soundness %s: launched\n", which.c_str());
  return 0;
}
