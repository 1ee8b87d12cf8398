// Launches one case of the red-team soundness suite: `redteam PTX_DIR CASE MODE`, MODE `legal` or `illegal`. Both
// modes launch the same kernels in the same order (on one stream, but for one case); only the arguments differ
// (scalars, pointer offsets, which allocation a pointer points into, the dynamic shared memory size). Every buffer
// starts with index-based values, so reading a wrong element changes the result; at the end every buffer is copied back
// and printed as one FNV-1a checksum line, which check_redteam.py compares with and without `kfuse run`.
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include "common.h"

namespace {

constexpr int kN = 1024;       // elements of the 1-D cases
constexpr int kCap = 8192;     // floats in each separate buffer
constexpr int kRegion = 4096;  // floats in each region of the arena
constexpr int kRegions = 8;
constexpr int kW = 64, kH = 16;  // the 2-D image of the epilogue and prologue cases (kW * kH == kN)
constexpr int kRowH = 256;       // elements per row of the block-level cases (one row per block, 8 rows)

struct Shape {
  unsigned gx, gy, bx, by, smem;
};
constexpr Shape k1d{8, 1, 128, 1, 0};    // kN threads
constexpr Shape kImg{4, 1, 16, 16, 0};   // a 64 x 16 image
constexpr Shape kRows{8, 1, 128, 1, 0};  // 8 rows, one per block
constexpr Shape kOne{1, 1, 128, 1, 0};   // one block
constexpr Shape kTwo{2, 1, 128, 1, 0};   // 256 threads: a grid-stride loop over kN elements takes four steps
Shape img(int w, int h) {
  return {example::blocksFor(w, 16), example::blocksFor(h, 16), 16, 16, 0};
}
Shape withSmem(Shape s, unsigned smem) {
  s.smem = smem;
  return s;
}

float initial(int buffer, int i) {
  return float((i * 37 + buffer * 101) % 997) * 0.25f - 60.f + float(buffer);
}

uint64_t fnv1a(const void* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  return h;
}

// Two buffers made with virtual memory management (the `vmm_` cases): V1 and V2 are mappings of one reserved
// range, V2 of its own physical allocation in the legal mode and of V1's (the same bytes at a second address, as a
// double-mapped ring buffer does) in the illegal mode.
struct Mapped {
  CUdeviceptr v1 = 0, v2 = 0, reserved = 0;
  size_t bytes = 0;
  CUmemGenericAllocationHandle h1 = 0, h2 = 0;
  bool two = false;
  explicit Mapped(bool alias) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t granularity = 0;
    CU_CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    bytes = (size_t{kCap} * 4 + granularity - 1) / granularity * granularity;
    CU_CHECK(cuMemCreate(&h1, bytes, &prop, 0));
    two = !alias;
    if (two) CU_CHECK(cuMemCreate(&h2, bytes, &prop, 0));
    CU_CHECK(cuMemAddressReserve(&reserved, 2 * bytes, 0, 0, 0));
    v1 = reserved;
    v2 = reserved + bytes;
    CU_CHECK(cuMemMap(v1, bytes, 0, h1, 0));
    CU_CHECK(cuMemMap(v2, bytes, 0, two ? h2 : h1, 0));
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_CHECK(cuMemSetAccess(reserved, 2 * bytes, &access, 1));
  }
  ~Mapped() {
    cuMemUnmap(v1, bytes);
    cuMemUnmap(v2, bytes);
    cuMemAddressFree(reserved, 2 * bytes);
    cuMemRelease(h1);
    if (two) cuMemRelease(h2);
  }
};

// The buffers every case may use: five separate allocations, one arena (regions of kRegion floats inside one
// cuMemAlloc), two index arrays (identity, rotation by 300) and an integer counter array; the `vmm_` cases also
// have V1 and V2 (Mapped).
struct Buffers {
  CUdeviceptr a = 0, b = 0, c = 0, d = 0, e = 0, arena = 0, idx_id = 0, idx_perm = 0, cnt = 0;
  std::unique_ptr<Mapped> mapped;
  CUdeviceptr v1 = 0, v2 = 0;
  struct Entry {
    const char* name;
    CUdeviceptr* ptr;
    size_t bytes;
  };
  std::vector<Entry> all() {
    std::vector<Entry> out = {{"A", &a, kCap * 4},           {"B", &b, kCap * 4},
                              {"C", &c, kCap * 4},           {"D", &d, kCap * 4},
                              {"E", &e, kCap * 4},           {"ARENA", &arena, kRegion * kRegions * 4},
                              {"IDX_ID", &idx_id, kCap * 4}, {"IDX_PERM", &idx_perm, kCap * 4},
                              {"CNT", &cnt, kCap * 4}};
    if (mapped) {
      out.push_back({"V1", &v1, kCap * 4});
      out.push_back({"V2", &v2, kCap * 4});
    }
    return out;
  }
  // `vmm`: also V1 and V2, the same bytes when `alias`.
  Buffers(bool vmm, bool alias) {
    if (vmm) {
      mapped = std::make_unique<Mapped>(alias);
      v1 = mapped->v1;
      v2 = mapped->v2;
    }
    int which = 0;
    for (Entry& en : all()) {
      if (en.ptr != &v1 && en.ptr != &v2) CU_CHECK(cuMemAlloc(en.ptr, en.bytes));
      std::vector<uint32_t> words(en.bytes / 4);
      for (size_t i = 0; i < words.size(); ++i) {
        float f = initial(which, int(i));
        int v = int(i);
        if (en.ptr == &idx_perm) v = i < size_t(kN) ? int((i + 300) % kN) : int(i);
        if (en.ptr == &cnt) v = 0;
        if (en.ptr == &idx_id || en.ptr == &idx_perm || en.ptr == &cnt)
          std::memcpy(&words[i], &v, 4);
        else
          std::memcpy(&words[i], &f, 4);
      }
      CU_CHECK(cuMemcpyHtoD(*en.ptr, words.data(), en.bytes));
      ++which;
    }
  }
  ~Buffers() {
    for (Entry& en : all()) {
      if (en.ptr != &v1 && en.ptr != &v2) cuMemFree(*en.ptr);
    }
  }
  CUdeviceptr ar(int region, long elements = 0) const { return arena + 4 * (size_t(region) * kRegion + elements); }
  void print() {
    for (Entry& en : all()) {
      std::vector<unsigned char> bytes(en.bytes);
      CU_CHECK(cuMemcpyDtoH(bytes.data(), *en.ptr, en.bytes));
      std::printf("redteam %s %016llx\n", en.name, (unsigned long long)fnv1a(bytes.data(), bytes.size()));
    }
  }
};

CUdeviceptr at(CUdeviceptr base, long elements) {
  return base + 4 * elements;
}

// Every case launches on `st`, except that one may put a launch on `side`, a second non-blocking stream (which
// stream a launch goes to can be what the two modes change).
struct Run {
  const example::Session& s;
  CUstream st, side;
  bool illegal;
  Buffers& b;
  template <class T>
  T pick(T legal, T ill) const {
    return illegal ? ill : legal;
  }
  template <class... T>
  void launch(const char* name, Shape sh, T... args) const {
    launchOn(st, name, sh, args...);
  }
  template <class... T>
  void launchOn(CUstream stream, const char* name, Shape sh, T... args) const {
    void* a[] = {static_cast<void*>(&args)...};
    CU_CHECK(cuLaunchKernel(s.function(name), sh.gx, sh.gy, 1, sh.bx, sh.by, 1, sh.smem, stream, a, nullptr));
  }
};

using Case = std::function<void(const Run&)>;
constexpr CUdeviceptr kNull = 0;

std::map<std::string, Case> cases(Buffers& b) {
  const int n = kN, w = kW, h = kH, rh = kRowH;
  std::map<std::string, Case> c;
  // ---- Class 1: a scalar reaching an address only through non-affine arithmetic ----
  // Thread-local, every buffer in the arena. RAW: the consumer reads ahead of its thread.
  c["tl_max_raw"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.ar(1), b.ar(0), n);
    r.launch("rd_max", k1d, b.ar(2), b.ar(1), r.pick(0, 700), n);
  };
  c["tl_select_raw"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.ar(1), b.ar(0), n);
    r.launch("rd_sel", k1d, b.ar(2), b.ar(1), r.pick(1, 0), n);
  };
  c["tl_mul_raw"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.ar(1), b.ar(0), n);
    r.launch("rd_mul", k1d, b.ar(2), b.ar(1), r.pick(1, 2), n);
  };
  // WAR: the first kernel reads behind its thread what the second overwrites.
  auto war = [=, &b](const char* reader, int legal, int ill) {
    return [=, &b](const Run& r) {
      r.launch(reader, k1d, b.ar(2), b.ar(1), r.pick(legal, ill), n);
      r.launch("wr_from", k1d, b.ar(1), b.ar(2), n);
    };
  };
  c["tl_min_war"] = war("rd_min", n - 1, 100);
  c["tl_div_war"] = war("rd_div", 1, 3);
  c["tl_rem_war"] = war("rd_rem", n, 100);
  c["tl_shr_war"] = war("rd_shr", 0, 2);
  c["tl_and_war"] = war("rd_and", -1, 0x3c0);
  // Prologue: an element-wise producer writing 1000 of its 1024 threads' elements, a 2-D consumer reading z at
  // min/max/or of its element and k; the illegal k reaches elements no producer thread writes.
  c["pro_min"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, 1000);
    r.launch("p2_rd_min", kImg, b.d, b.c, r.pick(999, 1023), w, h);
  };
  c["pro_max"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, 1000);
    r.launch("p2_rd_max", img(50, 20), b.d, b.c, r.pick(0, 1010), 50, 20);
  };
  c["pro_or"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, 1000);
    r.launch("p2_rd_or", img(50, 20), b.d, b.c, r.pick(0, 0x200), 50, 20);
  };
  // Block-level: row b of the consumer reads row max(b, k) (RAW: a later block's row) or min(b, k) (WAR: a row an
  // earlier block already overwrote).
  c["blk_max_raw"] = [=, &b](const Run& r) {
    r.launch("blk_scale", kRows, b.c, b.a, rh);
    r.launch("blk_rd_max", kRows, b.d, b.c, rh, r.pick(0, 5));
  };
  c["blk_max_noloop"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("blk_rd_max1", k1d, b.d, b.c, r.pick(0, 5));
  };
  // A pointer used as a number: the row comes from the distance between two buffers (minus a bias that makes it
  // row 0 as recorded), or from an address's low bits. Moving the buffers moves the row onto another block's.
  c["addr_distance_blk"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("blk_rd_distance", k1d, b.d, b.c, b.e, long((b.e - b.c) / 4));
  };
  c["addr_bits_blk"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("blk_rd_bits", k1d, b.d, b.c, int((b.c & 0xFFFF) >> 2));
  };
  c["blk_min_war"] = [=, &b](const Run& r) {
    r.launch("blk_rd_min", kRows, b.d, b.c, rh, r.pick(7, 2));
    r.launch("blk_wr_row", kRows, b.c, b.d, rh);
  };
  // Horizontal, in the arena: hz_read reads region 1 (or 0); the writer's max/min lands in its own region for the
  // legal k and on element 600 of the region hz_read reads for the illegal one (a write-after-read race).
  c["hor_max_war"] = [=, &b](const Run& r) {
    r.launch("hz_read", k1d, b.ar(2), b.ar(1), n);
    r.launch("hz_write_max", k1d, b.ar(0), 0.5f, r.pick(0, kRegion + 600), n);
  };
  c["hor_min_war"] = [=, &b](const Run& r) {
    r.launch("hz_read", k1d, b.ar(2), b.ar(0), n);
    r.launch("hz_write_min", k1d, b.ar(1), 0.5f, r.pick(n - 1, 600 - kRegion), n);
  };
  // Epilogue: a 2-D producer, a 1-D consumer reading z[max(i, k)] (element 500 is stored by the producer's last
  // block); a producer reading x[min(e, k)] that its consumer overwrites.
  c["epi_max_raw"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, h);
    r.launch("rd_max", k1d, b.d, b.c, r.pick(0, 500), n);
  };
  c["epi_min_war"] = [=, &b](const Run& r) {
    r.launch("p2_scale_min", kImg, b.c, b.a, r.pick(n - 1, 100), w, h);
    r.launch("wr_from", k1d, b.a, b.c, n);
  };
  // ---- Class 2: writes after writes ----
  // rd reads x[0..101), slowfill writes x[0..100) from one block, fill writes x[0..2048): fill must win.
  c["waw_rd_slowfill_fill"] = [=, &b](const Run& r) {
    r.launch("rd_prefix", kOne, b.d, b.a, r.pick(101, 301));
    r.launch("slowfill", kOne, b.a, 1.f, r.pick(100, 300));
    r.launch("fill", Shape{16, 1, 128, 1, 0}, b.a, 2.f, 2048);
  };
  // The same with the partial writer's work done by the last of 16 blocks: fused side by side with fill, that block
  // would run after fill's blocks and win where fill must.
  c["waw_rd_lastfill_fill"] = [=, &b](const Run& r) {
    r.launch("rd_prefix", kOne, b.d, b.a, r.pick(101, 301));
    r.launch("lastfill", Shape{16, 1, 128, 1, 0}, b.a, 1.f, r.pick(100, 300));
    r.launch("fill", Shape{16, 1, 128, 1, 0}, b.a, 2.f, 2048);
  };
  // The other order: fill x[0..2048) from 16 blocks, then slowfill x[0..m) from one block, then rd x[0..m + 1):
  // slowfill must win on x[0..m). Already the legal variant (m = 300) is a WAW pair that must never be fused
  // side by side; the illegal m = 1000 overwrites more.
  c["waw_fill_slowfill"] = [=, &b](const Run& r) {
    r.launch("fill", Shape{16, 1, 128, 1, 0}, b.a, 2.f, 2048);
    r.launch("slowfill", kOne, b.a, 1.f, r.pick(300, 1000));
    r.launch("rd_prefix", Shape{16, 1, 128, 1, 0}, b.d, b.a, r.pick(301, 1001));
  };
  // Thread i writes y[i] and x[i - s]; then x[i] = y[i] + 1. With s > 0 a later thread's first write lands on an
  // element an earlier thread's second write already set.
  c["waw_tl_back"] = [=, &b](const Run& r) {
    r.launch("wr_back", k1d, b.d, b.c, b.a, r.pick(0, 200), n);
    r.launch("wr_own", k1d, b.c, b.d, n);
  };
  // Block-level: block b writes row b of z and row b - s of x; then row b of x from row b of z.
  c["waw_blk_back"] = [=, &b](const Run& r) {
    r.launch("blk_scale_wx", kRows, b.c, b.d, b.a, rh, r.pick(0, 1));
    r.launch("blk_wx_row", kRows, b.d, b.c, rh);
  };
  // x = 2a + 1 over 1024 elements, y = x + 3, then x[i + s] = 3 y[i] over 512: a read between two writes of different
  // extents; the illegal shift makes the second write land where a later thread still reads and first writes.
  c["waw_read_between"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("ew_add", k1d, b.d, b.c, n);
    r.launch("wr_shift", k1d, b.c, b.d, r.pick(0, 64), 512);
  };
  // Two independent writers, the second into another allocation, or (illegal) one block further into the first's.
  c["waw_hor_shift"] = [=, &b](const Run& r) {
    r.launch("fill", k1d, b.c, 1.f, n);
    r.launch("hz_write", k1d, r.pick(b.d, at(b.c, 128)), 0.25f, n);
  };
  // slowfill x[0..100), fill x[0..n), rd x[0..m): rd must read fill's values (fill -> rd is an epilogue of a
  // 16-block producer into a 2-block consumer); the illegal fill writes fewer elements than rd reads.
  c["waw_slowfill_fill_rd"] = [=, &b](const Run& r) {
    r.launch("slowfill", kOne, b.a, 1.f, 100);
    r.launch("fill", Shape{16, 1, 128, 1, 0}, b.a, 2.f, r.pick(2048, 200));
    r.launch("rd_prefix", Shape{2, 1, 128, 1, 0}, b.d, b.a, 256);
  };
  // ---- Class 3: the producer -> consumer buffer relation ----
  c["tl_ptr_cons_other"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, at(b.c, 1), b.a, n);
    r.launch("ew_add", k1d, b.d, r.pick(at(b.c, 1), at(b.b, 1)), n);
  };
  c["tl_ptr_prod_other"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, r.pick(at(b.c, 1), at(b.b, 1)), b.a, n);
    r.launch("ew_add", k1d, b.d, at(b.c, 1), n);
  };
  c["tl_ptr_arena_shift"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.ar(1, 16), b.ar(0), n);
    r.launch("ew_add", k1d, b.ar(2), b.ar(1, r.pick(16, 17)), n);
  };
  // Epilogue: the consumer reads the intermediate one element on (legal: a consistent shift).
  c["epi_ptr_cons_other"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, h);
    r.launch("ew_add", k1d, b.d, r.pick(at(b.c, 1), at(b.b, 1)), n - 1);
  };
  c["epi_ptr_prod_other"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, r.pick(b.c, b.b), b.a, w, h);
    r.launch("ew_add", k1d, b.d, at(b.c, 1), n - 1);
  };
  c["epi_ptr_arena"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.ar(1), b.ar(0), w, h);
    r.launch("ew_add", k1d, b.ar(2), b.ar(1, r.pick(1, 200)), n - 1);
  };
  // Prologue: a 2-D consumer (31 x 33 = 1023 elements) reading the intermediate one element on.
  c["pro_ptr_cons_other"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("p2_rd", img(31, 33), b.d, r.pick(at(b.c, 1), at(b.b, 1)), 31, 33);
  };
  c["pro_ptr_prod_other"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, r.pick(b.c, b.b), b.a, n);
    r.launch("p2_rd", img(31, 33), b.d, at(b.c, 1), 31, 33);
  };
  // In the arena, the producer writing 1000 elements, the consumer 33 x 30 = 990 from one element on; the illegal
  // offset reaches elements no producer thread writes.
  c["pro_ptr_arena"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.ar(1), b.ar(0), 1000);
    r.launch("p2_rd", img(33, 30), b.ar(2), b.ar(1, r.pick(1, 40)), 33, 30);
  };
  // Block-level: the consumer reads its row reversed through a pointer one element on; the illegal pointer is one
  // row further (a later block's row); or the producer writes one row back.
  c["blk_ptr_row_shift"] = [=, &b](const Run& r) {
    r.launch("blk_scale", kRows, b.c, b.a, rh);
    r.launch("blk_rd_rev_m1", kRows, b.d, at(b.c, r.pick(1, rh + 1)), rh);
  };
  c["blk_ptr_prod_shift"] = [=, &b](const Run& r) {
    r.launch("blk_scale", kRows, r.pick(at(b.c, rh), b.c), b.a, rh);
    r.launch("blk_rd_rev_m1", kRows, b.d, at(b.c, rh + 1), rh);
  };
  // ---- Class 4 ----
  // Aliasing: the consumer's second input, or its output, lands one element into another kernel's buffer.
  c["alias_tl_w_into_z"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("ew_add2", k1d, b.d, b.c, r.pick(b.b, at(b.c, 1)), n);
  };
  c["alias_tl_out_into_in"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("ew_add", k1d, r.pick(b.d, at(b.a, 1)), b.c, n);
  };
  // Memory mapped twice (cuMemMap of one physical allocation at two addresses): distinct addresses, the same bytes.
  c["vmm_tl_alias"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.v1, b.a, n);
    r.launch("ew_add2", k1d, b.d, b.v1, at(b.v2, 1), n);
  };
  c["vmm_hor_alias"] = [=, &b](const Run& r) {
    r.launch("hz_read", k1d, b.d, b.v1, n);
    r.launch("hz_write", k1d, at(b.v2, 128), 0.5f, n);
  };
  c["hor_alias"] = [=, &b](const Run& r) {
    r.launch("hz_read", k1d, b.d, b.a, n);
    r.launch("hz_write", k1d, r.pick(b.b, at(b.a, 128)), 0.5f, n);
  };
  // A horizontal group with a member the analysis cannot see into (it writes through a pointer loaded from E):
  // legally on a stream of its own, writing the arena's region 5, so the two others are a group proven without it;
  // illegally between them on their stream, writing A, which hz_read reads: run as one kernel with hz_write (where
  // hz_write was launched), hz_read would read A after that write.
  c["hor_hidden_split"] = [=, &b](const Run& r) {
    const CUdeviceptr target = r.pick(b.ar(5), b.a);
    uint64_t kept = 0;
    CU_CHECK(cuMemcpyDtoH(&kept, b.e, sizeof kept));
    CU_CHECK(cuMemcpyHtoD(b.e, &target, sizeof target));
    r.launch("hz_read", k1d, b.d, b.a, n);
    r.launchOn(r.pick(r.side, r.st), "hz_indirect", k1d, b.e, 0.25f, n);
    r.launch("hz_write", k1d, b.c, 0.5f, n);
    // E held an address: its bytes are put back, so that its checksum does not depend on where buffers land.
    CU_CHECK(cuStreamSynchronize(r.st));
    CU_CHECK(cuStreamSynchronize(r.side));
    CU_CHECK(cuMemcpyHtoD(b.e, &kept, sizeof kept));
  };
  // Partial coverage: the producer writes fewer elements than the consumer reads.
  c["partial_tl"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, r.pick(n, 900));
    r.launch("ew_add", k1d, b.d, b.c, n);
  };
  c["partial_epi"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, r.pick(h, 12));
    r.launch("ew_add", k1d, b.d, b.c, n);
  };
  c["partial_pro"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, r.pick(n, 900));
    r.launch("p2_rd", kImg, b.d, b.c, w, h);
  };
  // An in-place producer (x == out) in front of a prologue: recomputing it reads what it already overwrote.
  c["inplace_pro"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, r.pick(b.a, b.c), n);
    r.launch("p2_rd", kImg, b.d, b.c, w, h);
  };
  // Atomics into counters c[i / k]: one per thread (legal k) or shared by 100 threads of two blocks.
  c["atomic_bucket"] = [=, &b](const Run& r) {
    r.launch("at_count", k1d, b.cnt, b.a, b.c, r.pick(1, 100), n);
    r.launch("at_use", k1d, b.d, b.cnt, b.c, r.pick(1, 100), n);
  };
  // Data-dependent indices: identity (legal) or a rotation by 300.
  c["gather_tl"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("gather", k1d, b.d, b.c, r.pick(b.idx_id, b.idx_perm), n);
  };
  c["gather_pro"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, 1000);
    r.launch("p2_gather", img(50, 20), b.d, b.c, r.pick(b.idx_id, b.idx_perm), 50, 20);
  };
  // Reversed indices: thread-local never; a prologue while the consumer stays inside the producer's 1000 elements.
  c["reverse_tl"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("rd_rev", k1d, b.d, b.c, r.pick(n, 1000));
  };
  c["reverse_pro"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, 1000);
    r.launch("p2_rd_rev", kImg, b.d, b.c, r.pick(1000, n), w, h);
  };
  // Dynamic shared memory: an address, and a loop bound, depending on %dynamic_smem_size.
  c["dynsmem_tl"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("rd_dsm", withSmem(k1d, r.pick(0u, 1024u)), b.d, b.c, n);
  };
  c["dynsmem_blk"] = [=, &b](const Run& r) {
    r.launch("blk_stage", withSmem(kRows, unsigned(rh) * 4), b.c, b.a, rh);
    r.launch("blk_rd_dsm", withSmem(kRows, r.pick(0u, 256u)), b.d, b.c, rh);
  };
  c["dynsmem_pro"] = [=, &b](const Run& r) {
    r.launch("ew_scale_dsm", withSmem(k1d, r.pick(256u, 512u)), b.c, b.a, n);
    r.launch("p2_rd", kImg, b.d, b.c, w, h);
  };
  c["dynsmem_epi"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, h);
    r.launch("ew_add_dsm", withSmem(k1d, r.pick(64u, 128u)), b.d, b.c, n);
  };
  c["dynsmem_hor"] = [=, &b](const Run& r) {
    r.launch("hz_read", k1d, b.d, b.a, n);
    r.launch("hz_write_dsm", withSmem(k1d, r.pick(128u, 256u)), b.b, n);
  };
  // The launch size alone: an unguarded consumer on 9 blocks writes 128 elements the producer never stores.
  c["grid_epi"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, h);
    r.launch("ew_add_ng", Shape{r.pick(8u, 9u), 1, 128, 1, 0}, b.d, b.c);
  };
  // Guards on a scalar.
  c["guard_tl"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("rd_guard", k1d, b.d, b.c, r.pick(0, n - 1), n);
  };
  c["guard_epi"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, h);
    r.launch("rd_upto", Shape{9, 1, 128, 1, 0}, b.d, b.c, r.pick(n, n + 64));
  };
  // Optional NULL pointers: NULL (legal) or pointing one element into the intermediate.
  c["null_bias_tl"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("bias_opt", k1d, b.d, b.c, r.pick(kNull, at(b.c, 1)), n);
  };
  c["null_bias_epi"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, h);
    r.launch("bias_opt", k1d, b.d, b.c, r.pick(kNull, at(b.c, 1)), n);
  };
  // The same for a prologue (a 2-D consumer, 31 x 33, of an element-wise producer) and a block-level pair (rows).
  c["null_bias_pro"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("p2_bias_opt", img(31, 33), b.d, b.c, r.pick(kNull, at(b.c, 1)), 31, 33);
  };
  c["null_bias_blk"] = [=, &b](const Run& r) {
    r.launch("blk_scale", kRows, b.c, b.a, rh);
    r.launch("blk_bias_opt", kRows, b.d, b.c, r.pick(kNull, at(b.c, 1)), rh);
  };
  // A 2-D pair with a scalar pitch (60 x 17 image).
  c["pitch2d_tl"] = [=, &b](const Run& r) {
    r.launch("p2_scale", img(60, 17), b.c, b.a, 60, 17);
    r.launch("p2_rd_pitch", img(60, 17), b.d, b.c, r.pick(60, 61), 60, 17);
  };
  // Loop trip counts from a scalar.
  c["loop_trip_tl"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("rd_loop", k1d, b.d, b.c, r.pick(1, 4), n);
  };
  c["loop_trip_blk"] = [=, &b](const Run& r) {
    r.launch("blk_scale", kRows, b.c, b.a, rh);
    r.launch("blk_rd_loop", kRows, b.d, b.c, rh, r.pick(rh, rh + 128));
  };
  // Grid-stride loops with a scalar stride (4096 elements, 1024 threads).
  // Arena tensors that overlap by 4 bytes: the consumer's output is its own region (legal) or starts at the last
  // element of the producer's input (illegal): fused, thread 0 overwrites x[n - 1] before thread n - 1 reads it.
  c["arena_overlap_tl"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.ar(1), b.ar(0), n);
    r.launch("ew_add", k1d, r.pick(b.ar(2), b.ar(0, n - 1)), b.ar(1), n);
  };
  c["arena_overlap_epi"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.ar(1), b.ar(0), w, h);
    r.launch("ew_add", k1d, r.pick(b.ar(2), b.ar(0, n - 1)), b.ar(1), n);
  };
  // A sub-chain of a blocked chain: ew_scale (1000 elements) -> rd_max (k = 700 reads ahead, and elements 1000 on
  // that ew_scale never writes: no fusion kind applies, the chain is blocked) -> ew_add -> wr_from. rd_max -> ew_add
  // -> wr_from is legal; illegally the middle kernel writes one element past what rd_max reads (ar(1) + 1), and
  // wr_from reads it there: fused, thread j's write lands on the element thread j + 1 reads.
  c["sub_chain_tl"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.ar(1), b.ar(0), 1000);
    r.launch("rd_max", k1d, b.ar(2), b.ar(1), 700, n);
    r.launch("ew_add", k1d, r.pick(b.ar(3), b.ar(1, 1)), b.ar(2), n - 1);
    r.launch("wr_from", k1d, b.ar(4), r.pick(b.ar(3), b.ar(1, 1)), n - 1);
  };
  c["gridstride_tl"] = [=, &b](const Run& r) {
    r.launch("gs_scale", k1d, b.c, b.a, n, 4 * n);
    r.launch("gs_sum", k1d, b.d, b.c, r.pick(n, n / 2), 4 * n);
  };
  // A grid-stride consumer reading its element (k = 0) or the next thread's (k = 1), in the arena.
  c["gridstride_ahead_tl"] = [=, &b](const Run& r) {
    r.launch("gs_scale", k1d, b.ar(1), b.ar(0), n, 4 * n);
    r.launch("gs_sum_ahead", k1d, b.ar(5), b.ar(1), r.pick(0, 1), n, 4 * n);
  };
  // A grid-stride chain of three whose last kernel writes where the first reads: legally its own region (the
  // arena's region 3), illegally the first kernel's input one element on.
  c["gridstride_chain_tl"] = [=, &b](const Run& r) {
    r.launch("gs_scale", k1d, b.ar(1), b.ar(0), n, 4 * n);
    r.launch("gs_inc", k1d, b.ar(2), b.ar(1), n, 4 * n);
    r.launch("gs_inc", k1d, r.pick(b.ar(3), b.ar(0, 1)), b.ar(2), n, 4 * n);
  };
  // Grid-stride loops stepping by the launch's 1024 threads over 2048 elements, in separate allocations: the
  // consumer reads k elements on. k = 1024 is the element the same thread's next step writes: legal for running the
  // two loops one after the other in each thread, but not for one merged loop (it would read the element before
  // the producer's next iteration writes it). k = 1025 is the next thread's: illegal.
  c["gridstride_next_step_tl"] = [=, &b](const Run& r) {
    r.launch("gsl_scale", k1d, b.c, b.a, 2 * n);
    r.launch("gsl_read_ahead", k1d, b.d, b.c, r.pick(n, n + 1), 2 * n);
  };
  // The same loops, the consumer reading its own element (one merged loop) or, through a pointer one element on,
  // the next thread's.
  c["gridstride_merged_tl"] = [=, &b](const Run& r) {
    r.launch("gsl_scale", k1d, b.c, b.a, 2 * n);
    r.launch("gsl_inc", k1d, b.d, r.pick(b.c, b.c + 4), 2 * n);
  };
  // Grid-stride kernels of another launch shape than their partner, fused element by element: 256 threads walk the
  // 1024 elements of the 64 x 16 image in four steps, as one element per thread (docs/analyzer.md). An epilogue
  // consumer reading its own element (k = 0) or the next one (k = 1, another iteration's);
  c["gridstride_epi"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, h);
    r.launch("gsl_read_ahead", kTwo, b.d, b.c, r.pick(0, 1), n);
  };
  // a consumer whose bound is the image (legal) or 128 elements more, which the producer never writes;
  c["gridstride_bound_epi"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, h);
    r.launch("gsl_inc", kTwo, b.d, b.c, r.pick(n, n + 128));
  };
  // an in-place consumer whose iterations touch only their own element (k = 0) or the next one's (k = 1);
  c["gridstride_inplace_epi"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, h);
    r.launch("gsl_shift", kTwo, b.d, b.c, r.pick(0, 1), n);
  };
  // Causal row loops on 2 blocks of 128 rows (16 values used of 24 per row): the consumer reads its own row (legal)
  // or, 64 rows on, rows the other block writes.
  c["causal_blk"] = [=, &b](const Run& r) {
    r.launch("causal_wr", kTwo, b.c, b.a, 16, 24, 256);
    r.launch("causal_rd", kTwo, b.d, b.c, b.e, 16, 24, 8, r.pick(0, 64 * 24), 256);
  };
  // A producer reading one row through a remainder (k[i % 16]) from the arena's region 0 (legal) or from region 2,
  // which the consumer writes element by element: then thread i reads what threads 0..15 of the consumer write.
  c["rem_footprint_tl"] = [=, &b](const Run& r) {
    r.launch("rd_rowrem", k1d, b.ar(1), r.pick(b.ar(0), b.ar(2)), 16, n);
    r.launch("ew_add", k1d, b.ar(2), b.ar(1), n);
  };
  // The same in-place consumer in nvcc's unrolled layout;
  c["gridstride_unrolled_epi"] = [=, &b](const Run& r) {
    r.launch("p2_scale", kImg, b.c, b.a, w, h);
    r.launch("gsu_shift", kTwo, b.d, b.c, r.pick(0, 1), n);
  };
  // an unrolled bias consumer of the producer's own launch shape over rows * 16 elements: the producer's (legal) or
  // 8 rows more, which the producer never writes;
  c["gridstride_unrolled_same_epi"] = [=, &b](const Run& r) {
    r.launch("ew_scale", k1d, b.c, b.a, n);
    r.launch("gsu_bias", k1d, b.c, b.b, r.pick(n / 16, n / 16 + 8), 16);
  };
  // an unrolled in-place bias producer on 256 threads, its element view the consumer's 1024 threads: the consumer
  // reads its own element (legal) or, through a pointer one element on, the next one, which another iteration of
  // the producer writes;
  c["gridstride_producer_epi"] = [=, &b](const Run& r) {
    r.launch("gsu_bias", kTwo, b.c, b.b, n / 16, 16);
    r.launch("ew_add", k1d, b.d, r.pick(b.c, b.c + 4), n);
  };
  // and a prologue producer writing the whole image (legal) or 64 elements less, which the consumer still reads.
  c["gridstride_pro"] = [=, &b](const Run& r) {
    r.launch("gsl_scale", kTwo, b.c, b.a, r.pick(n, n - 64));
    r.launch("p2_rd", kImg, b.d, b.c, w, h);
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[3], "legal") != 0 && std::strcmp(argv[3], "illegal") != 0)) {
    std::fprintf(stderr, "usage: redteam PTX_DIR CASE legal|illegal\n");
    return 2;
  }
  example::Session s(argc, argv, "redteam");
  CUstream st, side;
  CU_CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  // The `addr_` cases change no argument: their illegal mode moves every buffer by allocating 12 KiB first, so
  // only absolute addresses differ (offsets inside allocations and which pointers share one stay the same).
  CUdeviceptr spacer = 0;
  const bool illegal = std::strcmp(argv[3], "illegal") == 0;
  if (illegal && std::strncmp(argv[2], "addr_", 5) == 0) CU_CHECK(cuMemAlloc(&spacer, 12 * 1024));
  {
    Buffers b(std::strncmp(argv[2], "vmm_", 4) == 0, illegal);
    const auto all = cases(b);
    auto it = all.find(argv[2]);
    if (it == all.end()) {
      std::fprintf(stderr, "redteam: unknown case '%s'; cases:", argv[2]);
      for (const auto& [name, fn] : all) std::fprintf(stderr, " %s", name.c_str());
      std::fprintf(stderr, "\n");
      return 2;
    }
    it->second(Run{s, st, side, illegal, b});
    CU_CHECK(cuStreamSynchronize(st));
    CU_CHECK(cuStreamSynchronize(side));
    b.print();
  }
  if (spacer) cuMemFree(spacer);
  CU_CHECK(cuStreamDestroy(side));
  CU_CHECK(cuStreamDestroy(st));
  return 0;
}
