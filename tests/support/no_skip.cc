#include "tests/support/no_skip.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace lockstep::testing {
namespace {

class NoSkipPrinter final : public ::testing::TestEventListener {
 public:
  explicit NoSkipPrinter(::testing::TestEventListener* inner) : inner_(inner) {}

  void OnTestProgramStart(const ::testing::UnitTest& u) override { inner_->OnTestProgramStart(u); }
  void OnTestIterationStart(const ::testing::UnitTest& u, int i) override {
    inner_->OnTestIterationStart(u, i);
  }
  void OnEnvironmentsSetUpStart(const ::testing::UnitTest& u) override {
    inner_->OnEnvironmentsSetUpStart(u);
  }
  void OnEnvironmentsSetUpEnd(const ::testing::UnitTest& u) override {
    inner_->OnEnvironmentsSetUpEnd(u);
  }
  void OnTestSuiteStart(const ::testing::TestSuite& s) override { inner_->OnTestSuiteStart(s); }
  void OnTestStart(const ::testing::TestInfo& t) override { inner_->OnTestStart(t); }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.skipped()) {
      std::printf("%s:%d: not run: %s\n", r.file_name() ? r.file_name() : "unknown file",
                  r.line_number(), r.message());
      return;
    }
    inner_->OnTestPartResult(r);
  }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    if (t.result()->Skipped()) {
      std::string name = std::string(t.test_suite_name()) + "." + t.name();
      std::printf("[ NOT RUN  ] %s (skipped: counted as a failure)\n", name.c_str());
      notRun_.push_back(name);
      return;
    }
    inner_->OnTestEnd(t);
  }
  void OnTestSuiteEnd(const ::testing::TestSuite& s) override { inner_->OnTestSuiteEnd(s); }
  void OnEnvironmentsTearDownStart(const ::testing::UnitTest& u) override {
    inner_->OnEnvironmentsTearDownStart(u);
  }
  void OnEnvironmentsTearDownEnd(const ::testing::UnitTest& u) override {
    inner_->OnEnvironmentsTearDownEnd(u);
  }
  void OnTestIterationEnd(const ::testing::UnitTest& u, int i) override {
    if (notRun_.empty()) {
      inner_->OnTestIterationEnd(u, i);
      return;
    }
    // The default summary would list them under "[  SKIPPED ]".
    std::printf("[==========] %d tests from %d test suites ran.\n", u.test_to_run_count(),
                u.test_suite_to_run_count());
    std::printf("[  FAILED  ] %zu test(s) not run (a suite's set-up failed, or GTEST_SKIP):\n",
                notRun_.size());
    for (const std::string& n : notRun_) std::printf("[  FAILED  ] %s\n", n.c_str());
    for (int s = 0; s < u.total_test_suite_count(); ++s) {
      const ::testing::TestSuite* suite = u.GetTestSuite(s);
      for (int t = 0; t < suite->total_test_count(); ++t) {
        const ::testing::TestInfo* info = suite->GetTestInfo(t);
        if (info->result()->Failed())
          std::printf("[  FAILED  ] %s.%s\n", info->test_suite_name(), info->name());
      }
    }
    std::fflush(stdout);
  }
  void OnTestProgramEnd(const ::testing::UnitTest& u) override { inner_->OnTestProgramEnd(u); }

  bool anyNotRun() const { return !notRun_.empty(); }

 private:
  std::unique_ptr<::testing::TestEventListener> inner_;
  std::vector<std::string> notRun_;
};

NoSkipPrinter* g_printer = nullptr;

}  // namespace

void installNoSkipPrinter() {
  ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
  ::testing::TestEventListener* inner = listeners.Release(listeners.default_result_printer());
  if (inner == nullptr) return;  // another printer (--gtest_output streams keep working)
  g_printer = new NoSkipPrinter(inner);
  listeners.Append(g_printer);  // gtest owns it from here
}

int runAllTestsNoSkip() {
  int rc = RUN_ALL_TESTS();
  if (g_printer != nullptr && g_printer->anyNotRun()) return 1;
  return rc;
}

}  // namespace lockstep::testing
