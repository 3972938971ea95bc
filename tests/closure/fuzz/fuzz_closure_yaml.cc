// libFuzzer target: the YAML family (conda-lock, pixi.lock).
#include "tests/closure/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using lockstep::closure::LockFormat;
  lockstep::closure::fuzz::run(data, size, {LockFormat::kCondaLock, LockFormat::kPixi});
  return 0;
}
