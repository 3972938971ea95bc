// The flags of lockstep-operator, with their types and defaults.
// Pure. Thread-safety: a function.
#pragma once

#include <string>
#include <vector>

#include "common/flags.h"

namespace lockstep::operator_main {

// `podNamespace` ($POD_NAMESPACE, "" when unset) is the default of --namespace.
std::vector<FlagSpec> operatorFlagSpecs(const std::string& podNamespace);

}  // namespace lockstep::operator_main
