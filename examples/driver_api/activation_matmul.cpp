// silu -> tiled matmul three times per iteration: once as a prologue fusion can take it, and twice as near misses
// it must refuse (the activation leaves the last 32 elements of the GEMM's input unwritten; the GEMM writes its
// result over the activation's input); then silu -> a matmul loading its operand as float4 (a prologue fusion whose
// loads are vectors), and silu_vec4 (a vector store of four elements per thread) -> the tiled matmul. Checked against
// a C++ reference with a tolerance (__expf is approximate).
#include "../common/activation_matmul.h"
#include "common.h"

using namespace example::activation_matmul;

int main(int argc, char** argv) {
  example::Session s(argc, argv, "activation_matmul");
  const Data d;
  const std::vector<float> zeros(kElements, 0.f);
  CUdeviceptr dx1 = example::upload(d.x1), dx2 = example::upload(d.x2), dx3 = example::upload(d.x3);
  CUdeviceptr dx4 = example::upload(d.x4), dx5 = example::upload(d.x5), dw = example::upload(d.w);
  CUdeviceptr dh1 = example::upload(zeros), dh2 = example::upload(zeros), dh3 = example::upload(zeros);
  CUdeviceptr dh4 = example::upload(zeros), dh5 = example::upload(zeros), dy1, dy2, dy4, dy5;
  for (CUdeviceptr* p : {&dy1, &dy2, &dy4, &dy5}) CU_CHECK(cuMemAlloc(p, sizeof(float) * kTokens * kOut));
  CUfunction fsilu = s.function("silu"), fmm = s.function("matmul_tiled"), fvec = s.function("matmul_tiled_vec4");
  CUfunction fsilu4 = s.function("silu_vec4");
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  int t = kTokens, in = kIn, out = kOut, all = kElements, ragged = kElements - kRagged, all4 = kElements / 4;
  const unsigned blocks = example::blocksFor(kElements, 256);
  for (int it = 0; it < kIterations; ++it) {
    void* a1[] = {&dx1, &dh1, &all};
    CU_CHECK(cuLaunchKernel(fsilu, blocks, 1, 1, 256, 1, 1, 0, stream, a1, nullptr));
    void* m1[] = {&dh1, &dw, &dy1, &t, &out, &in};
    CU_CHECK(cuLaunchKernel(fmm, kOut / 16, kTokens / 16, 1, 16, 16, 1, 0, stream, m1, nullptr));
    void* a2[] = {&dx2, &dh2, &ragged};
    CU_CHECK(cuLaunchKernel(fsilu, blocks, 1, 1, 256, 1, 1, 0, stream, a2, nullptr));
    void* m2[] = {&dh2, &dw, &dy2, &t, &out, &in};
    CU_CHECK(cuLaunchKernel(fmm, kOut / 16, kTokens / 16, 1, 16, 16, 1, 0, stream, m2, nullptr));
    void* a3[] = {&dx3, &dh3, &all};
    CU_CHECK(cuLaunchKernel(fsilu, blocks, 1, 1, 256, 1, 1, 0, stream, a3, nullptr));
    void* m3[] = {&dh3, &dw, &dx3, &t, &out, &in};
    CU_CHECK(cuLaunchKernel(fmm, kOut / 16, kTokens / 16, 1, 16, 16, 1, 0, stream, m3, nullptr));
    void* a4[] = {&dx4, &dh4, &all};
    CU_CHECK(cuLaunchKernel(fsilu, blocks, 1, 1, 256, 1, 1, 0, stream, a4, nullptr));
    void* m4[] = {&dh4, &dw, &dy4, &t, &out, &in};
    CU_CHECK(cuLaunchKernel(fvec, kOut / 16, kTokens / 16, 1, 16, 16, 1, 0, stream, m4, nullptr));
    void* a5[] = {&dx5, &dh5, &all4};
    CU_CHECK(cuLaunchKernel(fsilu4, example::blocksFor(all4, 256), 1, 1, 256, 1, 1, 0, stream, a5, nullptr));
    void* m5[] = {&dh5, &dw, &dy5, &t, &out, &in};
    CU_CHECK(cuLaunchKernel(fmm, kOut / 16, kTokens / 16, 1, 16, 16, 1, 0, stream, m5, nullptr));
  }
  CU_CHECK(cuStreamSynchronize(stream));
  std::vector<float> every;
  const size_t results = size_t(kTokens) * kOut;
  const size_t bad = check(d,
                           {example::download<float>(dy1, results), example::download<float>(dy2, results),
                            example::download<float>(dx3, kElements), example::download<float>(dy4, results),
                            example::download<float>(dy5, results)},
                           &every);
  for (CUdeviceptr p : {dx1, dx2, dx3, dx4, dx5, dw, dh1, dh2, dh3, dh4, dh5, dy1, dy2, dy4, dy5})
    CU_CHECK(cuMemFree(p));
  CU_CHECK(cuStreamDestroy(stream));
  return example::finish("activation_matmul", bad, example::checksum(every));
}
