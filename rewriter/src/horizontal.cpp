// Horizontal fusion: implemented by the change that adds it; until then every request is refused.
#include "kfuse/rewriter/fusion.h"

namespace kfuse::rewriter {

const char* horizontalLayoutName(HorizontalLayout l) {
  return l == HorizontalLayout::kBlockPartitioned ? "block-partitioned" : "thread-partitioned";
}

Expected<FusionResult> fuseHorizontal(ptx::Module&, const HorizontalFusion&) {
  return unsupported("horizontal fusion is not available in this build");
}

}  // namespace kfuse::rewriter
