// Propagation helpers for core::Status inside runtime/ .cc files (absl's RETURN_IF_ERROR and
// ASSIGN_OR_RETURN, reduced). The enclosing function returns core::Status or core::Result<T>.
#ifndef MESHPLAN_RUNTIME_STATUS_MACROS_H_
#define MESHPLAN_RUNTIME_STATUS_MACROS_H_

#include "core/status.h"

// Evaluates expr (a core::Status) once; returns it from the enclosing function if not ok.
#define MESHPLAN_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::meshplan::core::Status meshplan_status_ = (expr);  \
    if (!meshplan_status_.ok()) return meshplan_status_; \
  } while (0)

#define MESHPLAN_STATUS_CONCAT_INNER_(a, b) a##b
#define MESHPLAN_STATUS_CONCAT_(a, b) MESHPLAN_STATUS_CONCAT_INNER_(a, b)
// `lhs` = the value of expr (a core::Result<T>), or return its Status. lhs may declare: auto x.
#define MESHPLAN_ASSIGN_OR_RETURN(lhs, expr) \
  MESHPLAN_ASSIGN_OR_RETURN_IMPL_(MESHPLAN_STATUS_CONCAT_(meshplan_result_, __LINE__), lhs, expr)
#define MESHPLAN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()

#endif  // MESHPLAN_RUNTIME_STATUS_MACROS_H_
