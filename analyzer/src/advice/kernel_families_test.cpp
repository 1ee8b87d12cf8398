// Kernel families on real kernel names: every name below was copied from a trace in ../shared/data (file in the
// comment) or from the public libraries' kernels as profilers print them (Triton/Inductor, NCCL, nvjet).
#include "advice/kernel_families.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kfuse::analyzer {
namespace {

struct Case {
  const char* name;
  KernelFamily family;
  const char* library;
};

using F = KernelFamily;

const std::vector<Case> kCases = {
    // tracelens_bert_small_h100.json.gz
    {"void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, "
     "true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 "
     "const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned "
     "int, long)",
     F::kIndexing, "pytorch"},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, "
     "3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
     F::kElementwise, "pytorch"},
    {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
     "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
     F::kNormalization, "pytorch"},
    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, "
     "at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda(bool, bool)#1}>, "
     "unsigned int, bool, 4> >(at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, "
     "at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda(bool, bool)#1}>, "
     "unsigned int, bool, 4>)",
     F::kReduction, "pytorch"},
    {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_"
     "tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
     F::kGemm, "cutlass"},
    {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>(cutlass_80_tensorop_"
     "bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8::Params)",
     F::kGemm, "cutlass"},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
     "cublas",
     F::kGemm, "cublas"},
    {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
     "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, "
     "false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
     F::kAttention, "flash-attention"},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::"
     "BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::"
     "BFloat16)#1}, std::array<char*, 2ul>)",
     F::kElementwise, "pytorch"},
    // tracelens_vit_h100.json.gz
    {"void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>("
     "cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8::Params)",
     F::kConvolution, "cudnn"},
    {"void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, "
     "(cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __nv_bfloat16 const*, "
     "__nv_bfloat16*)",
     F::kCopy, "cudnn"},
    {"void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, "
     "unsigned int, 3, 64, 64>(at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous "
     "namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 64, 64>, "
     "at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)",
     F::kCopy, "pytorch"},
    // hta_alexnet_a100.json.gz
    {"ampere_sgemm_32x32_sliced1x4_tn", F::kGemm, "cublas"},
    {"cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", F::kConvolution, "cudnn"},
    {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_"
     "g1_tensor16x8x8_alignc4_execute_kernel",
     F::kConvolution, "cudnn"},
    {"void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int, int, int, int, int, int, int, int, "
     "int, cudnn::reduced_divisor, bool, int2, int, int)",
     F::kConvolution, "cudnn"},
    {"void epilogue::impl::globalKernel<float, float, float, true, true>(int, int, long, float*, cublasLtEpilogue_t, "
     "int, float*, long, void*, long, long, long)",
     F::kGemm, "cublaslt"},
    {"void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*, long, long, "
     "long, int, int, int, int, int, int, int, int, int, int, float*, long*)",
     F::kPooling, "pytorch"},
    {"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>("
     "at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float, unsigned int>, "
     "at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)",
     F::kRandom, "pytorch"},
    // hta_amd_mi250.json.gz (ROCm: hipBLASLt / Tensile GEMMs)
    {"Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_"
     "GRVWA1_GRVWB1_GSUAMB_ISA90a_IU1_K1_LBSPPA0",
     F::kGemm, "tensile"},
    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::FillFunctor<float>, float>("
     "at::native::(anonymous namespace)::TensorListMetadata<2>, float)",
     F::kOptimizer, "pytorch"},
    {"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_"
     "cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda("
     "float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}"
     "::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, "
     "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}"
     "::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, "
     "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}"
     "::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1})",
     F::kCopy, "pytorch"},
    // hta_six_streams_rank0.json.gz
    {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", F::kCollective, "nccl"},
    {"triton__0d1d2d3d", F::kUnknown, "triton"},
    {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2, false, false, cublasGemvParams<"
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParams<cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>, float, float)",
     F::kGemm, "cublas"},
    {"void splitKreduce_kernel<float, float, float, float, true, false, false>(cublasSplitKParams<float>, float "
     "const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, "
     "float*, int*)",
     F::kGemm, "cublas"},
    {"void cub::DeviceScanKernel<cub::AgentScanPolicy<128, 15, int, (cub::BlockLoadAlgorithm)3, "
     "(cub::CacheLoadModifier)0, (cub::BlockStoreAlgorithm)3, (cub::BlockScanAlgorithm)2>, int*, int*, "
     "cub::ScanTileState<int, true>, cub::Sum, cub::NullType, int>(int*, int*, cub::ScanTileState<int, true>, int, "
     "cub::Sum, cub::NullType, int)",
     F::kReduction, "cub"},
    {"void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<double>, at::detail::Array<char*, 3>, "
     "TrivialOffsetCalculator<2, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
     "at::native::memory::LoadWithoutCast, at::native::memory::StoreWithoutCast>(int, "
     "at::native::CUDAFunctor_add<double>, at::detail::Array<char*, 3>, TrivialOffsetCalculator<2, unsigned int>, "
     "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithoutCast, "
     "at::native::memory::StoreWithoutCast)",
     F::kElementwise, "pytorch"},
    {"void split_embedding_codegen_forward_unweighted_kernel<float, float, float, false, long, 1ul, 16ul>("
     "at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>)",
     F::kIndexing, ""},
    // Kernels of other libraries as profilers name them (public kernel names, not from ../shared/data).
    {"triton_poi_fused_add_mul_0", F::kElementwise, "triton"},
    {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1", F::kReduction, "triton"},
    {"triton_per_fused_native_layer_norm_2", F::kReduction, "triton"},
    {"triton_tem_fused_addmm_gelu_3", F::kGemm, "triton"},
    {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", F::kCollective, "nccl"},
    {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", F::kGemm, "nvjet"},
    {"some_custom_kernel(float*, int)", F::kUnknown, ""},
};

TEST(KernelFamilies, ClassifiesRealKernelNames) {
  for (const Case& c : kCases) {
    const KernelClass k = classifyKernel(c.name);
    EXPECT_EQ(kernelFamilyName(k.family), std::string(kernelFamilyName(c.family))) << c.name;
    EXPECT_EQ(std::string(k.library), c.library) << c.name;
  }
}

TEST(KernelFamilies, MarksKernelsThatAreAlreadyFused) {
  EXPECT_TRUE(classifyKernel("triton_poi_fused_add_mul_0").already_fused);
  EXPECT_TRUE(classifyKernel("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_"
                             "align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8::Params)")
                  .already_fused);
  EXPECT_FALSE(classifyKernel("ampere_sgemm_32x32_sliced1x4_tn").already_fused);
}

struct RuleCase {
  F producer, consumer;
  FamilyFusion kind;
  bool never;
};

TEST(KernelFamilies, PairRulesDecideFusionKind) {
  const std::vector<RuleCase> rules = {
      {F::kElementwise, F::kElementwise, FamilyFusion::kPointwise, false},
      {F::kIndexing, F::kElementwise, FamilyFusion::kPointwise, false},
      {F::kCopy, F::kElementwise, FamilyFusion::kPointwise, false},
      {F::kGemm, F::kElementwise, FamilyFusion::kEpilogue, false},
      {F::kConvolution, F::kElementwise, FamilyFusion::kEpilogue, false},
      {F::kElementwise, F::kNormalization, FamilyFusion::kPrologue, false},
      {F::kElementwise, F::kReduction, FamilyFusion::kPrologue, false},
      {F::kSoftmax, F::kElementwise, FamilyFusion::kReductionEpilogue, false},
      {F::kCollective, F::kElementwise, FamilyFusion::kNone, true},
      {F::kElementwise, F::kCollective, FamilyFusion::kNone, true},
      {F::kGemm, F::kGemm, FamilyFusion::kNone, true},
      {F::kElementwise, F::kGemm, FamilyFusion::kNone, true},
      {F::kNormalization, F::kGemm, FamilyFusion::kNone, true},
      {F::kAttention, F::kGemm, FamilyFusion::kNone, true},
      {F::kGemm, F::kNormalization, FamilyFusion::kNone, true},
      {F::kUnknown, F::kElementwise, FamilyFusion::kNone, false},
  };
  for (const RuleCase& r : rules) {
    const PairRule p = familyPairRule(r.producer, r.consumer);
    EXPECT_EQ(familyFusionName(p.kind), std::string(familyFusionName(r.kind)))
        << kernelFamilyName(r.producer) << " -> " << kernelFamilyName(r.consumer);
    EXPECT_EQ(p.never, r.never) << p.why;
    EXPECT_FALSE(p.why.empty());
  }
}

}  // namespace
}  // namespace kfuse::analyzer
