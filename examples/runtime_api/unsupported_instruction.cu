// A kernel with an instruction the emulator does not implement (a carry chain, add.cc/addc) beside one it does:
// the stand-in reports the instruction and the kernel once when the module loads, launching that kernel fails
// with cudaErrorNotSupported, and the rest of the program still runs. On a GPU both kernels run.
#include "common.h"

__global__ void add64_by_carry(const unsigned* a, const unsigned* b, unsigned* lo, unsigned* hi) {
  unsigned l, h;
  asm("add.cc.u32 %0, %2, %3;\n\taddc.u32 %1, 0, 0;" : "=r"(l), "=r"(h) : "r"(a[threadIdx.x]), "r"(b[threadIdx.x]));
  lo[threadIdx.x] = l;
  hi[threadIdx.x] = h;
}
__global__ void plain_add(const unsigned* a, const unsigned* b, unsigned* c) {
  c[threadIdx.x] = a[threadIdx.x] + b[threadIdx.x];
}

int main() {
  example::printDevice();
  std::vector<unsigned> a(32, 0xffffffffu), b(32), want(32);
  for (unsigned i = 0; i < 32; ++i) b[i] = i, want[i] = a[i] + b[i];
  unsigned *da = example::upload(a), *db = example::upload(b), *lo = example::alloc<unsigned>(32),
           *hi = example::alloc<unsigned>(32);
  add64_by_carry<<<1, 32>>>(da, db, lo, hi);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  std::printf("unsupported_instruction: add64_by_carry -> %s\n", cudaGetErrorName(e));
  plain_add<<<1, 32>>>(da, db, lo);
  CUDA_CHECK_LAUNCH();
  auto got = example::download(lo, 32);
  for (unsigned* p : {da, db, lo, hi}) CUDA_CHECK(cudaFree(p));
  return example::finish("unsupported_instruction", example::compare("c", got, want), example::checksum(got));
}
