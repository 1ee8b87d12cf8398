// The real CuptiApi, over libcupti (linked only into libkfuse_collector.so).
#include <cstring>

#include "kfuse/collector/cupti_backend.h"

namespace kfuse::collector {

class RealCuptiApi final : public CuptiApi {
 public:
  CUptiResult getVersion(uint32_t* version) override { return cuptiGetVersion(version); }
  CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* user,
                        std::string* other) override {
    char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "kfuse";
    params.oldSubscriberName = old_name;
    params.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN;
    CUptiResult r = cuptiSubscribe_v2(subscriber, callback, user, &params);
    if (other) *other = std::string(old_name, strnlen(old_name, sizeof old_name));
    return r;
  }
  CUptiResult unsubscribe(CUpti_SubscriberHandle subscriber) override { return cuptiUnsubscribe(subscriber); }
  CUptiResult enableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,
                             CUpti_CallbackId cbid) override {
    return cuptiEnableCallback(enable, subscriber, domain, cbid);
  }
  CUptiResult enableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain) override {
    return cuptiEnableDomain(enable, subscriber, domain);
  }
  CUptiResult activityEnable(CUpti_ActivityKind kind) override { return cuptiActivityEnable(kind); }
  CUptiResult activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                        CUpti_BuffersCallbackCompleteFunc complete) override {
    return cuptiActivityRegisterCallbacks(request, complete);
  }
  CUptiResult activityGetNextRecord(uint8_t* buffer, size_t valid_size, CUpti_Activity** record) override {
    return cuptiActivityGetNextRecord(buffer, valid_size, record);
  }
  CUptiResult activityGetNumDroppedRecords(CUcontext context, uint32_t stream_id, size_t* dropped) override {
    return cuptiActivityGetNumDroppedRecords(context, stream_id, dropped);
  }
  CUptiResult activityFlushAll(uint32_t flag) override { return cuptiActivityFlushAll(flag); }
  CUptiResult activityFlushPeriod(uint32_t period_ms) override { return cuptiActivityFlushPeriod(period_ms); }
  const char* errorString(CUptiResult result) override {
    const char* s = nullptr;
    return cuptiGetResultString(result, &s) == CUPTI_SUCCESS && s ? s : "unknown CUPTI error";
  }
};

CuptiApi& realCuptiApi() {
  static auto* api = new RealCuptiApi();  // never destroyed
  return *api;
}

}  // namespace kfuse::collector
