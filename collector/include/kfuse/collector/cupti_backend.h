// The CUPTI backend: activity records (kernels, memcpy, memset, synchronization, NVTX markers) for GPU times;
// driver-API callbacks for launch arguments (through the HookRecorder's layout cache) and for allocations/frees
// (in API order, so pointer arguments resolve); module images from the module-load driver callbacks (the image
// the application passed: a fatbin keeps its PTX) and from the module-loaded resource callback (the cubin).
//
// Every cupti* call goes through CuptiApi, so tests drive the backend with a fake that hands it buffers of real
// CUDA 13.0 record structs (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, ...) built in memory. The real
// implementation (libcupti) lives in the injection library only.
// Thread-safety: CUPTI calls the callbacks from any thread; the backend only pushes into the TraceSink.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "kfuse/collector/hook_recorder.h"
#include "kfuse/collector/range_metrics.h"
#include "kfuse/collector/trace_sink.h"
#include "kfuse/core/status.h"

namespace kfuse::collector {

class CuptiApi {
 public:
  virtual ~CuptiApi() = default;
  virtual CUptiResult getVersion(uint32_t* version) = 0;
  // cuptiSubscribe_v2; on CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED `other` names the other tool if known.
  virtual CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* user,
                                std::string* other) = 0;
  virtual CUptiResult unsubscribe(CUpti_SubscriberHandle subscriber) = 0;
  virtual CUptiResult enableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,
                                     CUpti_CallbackId cbid) = 0;
  virtual CUptiResult enableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain) = 0;
  virtual CUptiResult activityEnable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                CUpti_BuffersCallbackCompleteFunc complete) = 0;
  virtual CUptiResult activityGetNextRecord(uint8_t* buffer, size_t valid_size, CUpti_Activity** record) = 0;
  virtual CUptiResult activityGetNumDroppedRecords(CUcontext context, uint32_t stream_id, size_t* dropped) = 0;
  virtual CUptiResult activityFlushAll(uint32_t flag) = 0;
  virtual CUptiResult activityFlushPeriod(uint32_t period_ms) = 0;
  virtual const char* errorString(CUptiResult result) = 0;
};

// The versions of CUPTI whose record layouts this build decodes (CUPTI_API_VERSION 130000 / 130001).
bool cuptiVersionSupported(uint32_t version);

class CuptiBackend {
 public:
  // `recorder` supplies the launch-argument capture (its function-layout cache and driver queries); it is not
  // installed as a hook client by the backend.
  CuptiBackend(CuptiApi& api, TraceSink& sink, HookRecorder& recorder);
  ~CuptiBackend();

  // Checks the version, subscribes, enables callbacks and activity kinds. On error nothing stays enabled that
  // would change the application, and the message says why (another tool holds CUPTI, unknown version...):
  // the caller records with the hook backend instead.
  Status start();
  // Hardware metrics for every launch (`--metrics`): told of each launch at API entry, of context destruction,
  // and finished by stop(). Set before start(); not owned.
  void setRangeMetrics(RangeMetrics* metrics) { metrics_ = metrics; }
  // Delivers completed buffers (forced: also incomplete ones, at exit).
  void flush(bool forced);
  void stop();
  // Stops CUPTI from calling the backend (unsubscribes); what was recorded stays. For a CUPTI found blind.
  void detach();

  // What CUPTI calls; public so tests can call them as CUPTI would.
  void onCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* cbdata);
  void onBufferComplete(uint8_t* buffer, size_t size, size_t valid_size);
  static void requestBuffer(uint8_t** buffer, size_t* size, size_t* max_records);
  static void freeBuffer(uint8_t* buffer);

  // Driver-API callbacks CUPTI has delivered (any thread / the calling thread). CUPTI calls them inside the driver
  // function, so a hooked call that returns without advancing the calling thread's count was not seen by CUPTI.
  static uint64_t driverCallbacksSeen();
  static uint64_t driverCallbacksOnThisThread();

  uint64_t recordsDecoded() const { return records_.load(); }
  uint64_t recordsIgnored() const { return ignored_.load(); }

 private:
  void decode(const CUpti_Activity* record);
  void onDriverApi(CUpti_CallbackId cbid, const CUpti_CallbackData* data);
  void onResource(CUpti_CallbackId cbid, const void* data);
  void onMemoryApi(CUpti_CallbackId cbid, const void* params);
  void onRuntimeApi(const CUpti_CallbackData* data);
  // A driver call recorded under `driver_corr` inside a runtime API call: tells the assembler both ids.
  void noteRuntimeParent(int64_t driver_corr);
  // Whether the launch `cbid`/`params` describe goes to a capturing stream (a graph node, not executed work).
  bool capturedLaunch(CUpti_CallbackId cbid, const void* params);
  // Copies and memsets at API exit; false if `cbid` is neither.
  bool onCopyApi(CUpti_CallbackId cbid, const void* params, int64_t t0, int64_t t1, int64_t corr);

  CuptiApi& api_;
  TraceSink& sink_;
  HookRecorder& recorder_;
  RangeMetrics* metrics_ = nullptr;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool started_ = false;
  std::atomic<uint64_t> records_{0}, ignored_{0};
};

// Guards the CUPTI backend against recording nothing: installed as the hook client while CUPTI records, it forwards
// the calls an application makes first (module loads, allocations, copies to the device, launches) and checks that
// CUPTI saw them. If one succeeds while CUPTI has delivered no driver callback at all (a driver CUPTI cannot trace,
// such as the emulator's stand-in), it records that call with `recorder` and calls `on_blind` once, which switches
// the process to the hook backend. Once CUPTI is seen working it only forwards.
class CuptiWatch : public HookClient {
 public:
  // `seen` / `seen_on_thread` count CUPTI's driver callbacks (default: CuptiBackend's counters; tests pass their own).
  using CountFn = uint64_t (*)();
  CuptiWatch(DriverTable& table, HookRecorder& recorder, void (*on_blind)(const char* why),
             CountFn seen = &CuptiBackend::driverCallbacksSeen,
             CountFn seen_on_thread = &CuptiBackend::driverCallbacksOnThisThread)
      : HookClient(table), recorder_(recorder), on_blind_(on_blind), seen_(seen), seen_on_thread_(seen_on_thread) {}

  CUresult ModuleLoadData(int variant, CUmodule* module, const void* image) override;
  CUresult ModuleLoad(int variant, CUmodule* module, const char* fname) override;
  CUresult ModuleLoadDataEx(int variant, CUmodule* module, const void* image, unsigned n, CUjit_option* options,
                            void** values) override;
  CUresult LibraryLoadData(int variant, CUlibrary* library, const void* code, CUjit_option* jit_options,
                           void** jit_values, unsigned n_jit, CUlibraryOption* library_options, void** library_values,
                           unsigned n_library) override;
  CUresult MemAlloc(int variant, CUdeviceptr* dptr, size_t bytes) override;
  CUresult MemAllocAsync(int variant, CUdeviceptr* dptr, size_t bytes, CUstream stream) override;
  CUresult MemAllocManaged(int variant, CUdeviceptr* dptr, size_t bytes, unsigned flags) override;
  CUresult MemcpyHtoD(int variant, CUdeviceptr dst, const void* src, size_t bytes) override;
  CUresult LaunchKernel(int variant, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, CUstream stream, void** params, void** extra) override;

  bool blind() const { return state_.load() == kBlind; }

 private:
  enum State : int { kWatching, kCuptiWorks, kBlind };
  // After a successful forwarded call: true if CUPTI turned out blind (the caller then records the call).
  bool judge(uint64_t callbacks_before);
  // forward() the call; if it succeeded and CUPTI is judged blind, record(t0, t1) it with its CPU times.
  template <class Forward, class Record>
  CUresult watched(Forward forward, Record record);

  HookRecorder& recorder_;
  void (*on_blind_)(const char* why);
  CountFn seen_, seen_on_thread_;
  std::atomic<int> state_{kWatching};
};

}  // namespace kfuse::collector
