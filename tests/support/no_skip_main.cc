// main() for test binaries without a cluster: gtest, with skipped tests failing
// the run (tests/support/no_skip.h).
#include <gtest/gtest.h>

#include "tests/support/no_skip.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  lockstep::testing::installNoSkipPrinter();
  return lockstep::testing::runAllTestsNoSkip();
}
