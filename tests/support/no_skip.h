// Tests are never skipped. gtest marks every test of a suite whose
// SetUpTestSuite failed (a test world or the operator that did not start) as
// SKIPPED, and ctest's gtest_discover_tests reports "[  SKIPPED ]" as a skip,
// whatever the exit code: a suite that could not even start looked green.
// This printer reports a skipped test as NOT RUN (never the "[  SKIPPED ]"
// marker ctest matches) and makes the run fail, so ctest goes by the exit code.
// Thread-safety: gtest calls listeners from the main thread only.
#pragma once

namespace lockstep::testing {

// Replaces gtest's default result printer. Call after InitGoogleTest.
void installNoSkipPrinter();

// RUN_ALL_TESTS(), then 1 when any test was skipped.
int runAllTestsNoSkip();

}  // namespace lockstep::testing
