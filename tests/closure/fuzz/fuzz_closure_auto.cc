// libFuzzer target: computeClosure() with format detection.
#include "tests/closure/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lockstep::closure::fuzz::run(data, size, {lockstep::closure::LockFormat::kAuto});
  return 0;
}
