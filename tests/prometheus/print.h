// GoogleTest prints an ErrorKind by name ("empty"), not as bytes.
#pragma once

#include <ostream>

#include "operator/prometheus/query_result.h"

namespace lockstep::prometheus {

inline void PrintTo(ErrorKind k, std::ostream* os) { *os << errorKindName(k); }

}  // namespace lockstep::prometheus
