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
  // Installs the cluster pieces and starts the suite's operator with `args`.
  static void startOperator(const std::vector<std::string>& args) {
    OperatorProcess::installClusterPieces(sharedWebhookPort());
    op_ = new OperatorProcess();
    ASSERT_EQ(op_->start(args), "");
  }
  // The operator's log tail on stderr when the current test failed.
  void printOperatorLogOnFailure() const {
    if (HasFailure() && op_ != nullptr) std::cerr << "operator log tail:\n" << op_->log() << "\n";
  }

  static inline OperatorProcess* op_ = nullptr;
};

}  // namespace lockstep::testing
