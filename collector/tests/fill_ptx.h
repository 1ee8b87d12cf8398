// PTX of `fill(float* out, int n, float v)`: out[i] = v for i < n (1-D). Loaded with cuModuleLoadData by the
// test programs that need a real kernel on the stand-in driver or a GPU (standin_threads, nvtx_ranges).
#pragma once

inline constexpr char kFillPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry fill(.param .u64 p_out, .param .u32 p_n, .param .f32 p_v)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [p_out];
  ld.param.u32 %r1, [p_n];
  ld.param.f32 %f1, [p_v];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.s32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.f32 [%rd4], %f1;
DONE:
  ret;
}
)";
