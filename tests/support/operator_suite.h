// OperatorSuite: the fixture of a cluster test binary that shares one operator
// process, with the CRDs, RBAC and webhook configurations installed, across
// its tests (started in SetUpTestSuite, stopped and the webhooks removed in
// TearDownTestSuite). Each suite (the Derived class) has its own process.
//
//   class AdmissionClusterTest : public OperatorSuite<AdmissionClusterTest> {
//     static void SetUpTestSuite() { startOperator({"--controllers=runtimeenv"}); }  // optional
//     void TearDown() override { printOperatorLogOnFailure(); ... }
//   };
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/operator_process.h"

namespace lockstep::testing {

template <typename Derived>
class OperatorSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { startOperator({}); }
  static void TearDownTestSuite() {
    delete op_;
    op_ = nullptr;
    OperatorProcess::uninstallWebhooks();
  }
  // Installs the cluster pieces and starts the suite's operator with `args`, pods admitted
  // by `admissionMode` (the chart's admission.mode: webhook or policy).
  static void startOperator(std::vector<std::string> args,
                            const std::string& admissionMode = "webhook") {
    OperatorProcess::installClusterPieces(sharedWebhookPort(), admissionMode);
    op_ = new OperatorProcess();
    args.push_back("--admission-mode=" + admissionMode);
    ASSERT_EQ(op_->start(args), "");
  }
  // The operator's log tail on stderr when the current test failed.
  void printOperatorLogOnFailure() const {
    if (HasFailure() && op_ != nullptr) std::cerr << "operator log tail:\n" << op_->log() << "\n";
  }

  static inline OperatorProcess* op_ = nullptr;
};

}  // namespace lockstep::testing
