// Diagnostics: every problem found in an input, each naming its field path and the rule broken
// ("plan.tp: 3 must divide model.heads=64"). Validation collects all of them before failing, so
// the user fixes a file in one pass. Not thread-safe; one per validation.
#ifndef MESHPLAN_CORE_DIAGNOSTICS_H_
#define MESHPLAN_CORE_DIAGNOSTICS_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace meshplan::core {

struct Diagnostic {
  enum class Severity { kError, kWarning };
  Severity severity = Severity::kError;
  std::string path;              // "plan.tp", "model.moe.top_k", "cluster.scale_up_domain_gpus"
  std::string message;           // the rule, with the offending values
  std::string ToString() const;  // "plan.tp: 3 must divide model.heads=64" (warnings: "warning: ...")
};

class Diagnostics {
 public:
  void Error(std::string path, std::string message);
  void Warning(std::string path, std::string message);
  bool has_errors() const;
  // True when an error names exactly `path` ("plan.tp", not "plan.tp_overlap").
  bool has_error_at(std::string_view path) const;
  // A collector that keeps only errors (the plan search validates every candidate and shows no
  // warnings): Warning() drops them, and callers may skip composing the message.
  void set_errors_only(bool v) { errors_only_ = v; }
  bool wants_warnings() const { return !errors_only_; }
  const std::vector<Diagnostic>& all() const { return items_; }
  std::vector<Diagnostic> errors() const;
  std::vector<Diagnostic> warnings() const;
  // InvalidArgument listing every error, one per line; Ok() when there is none.
  Status ToStatus() const;
  void Append(const Diagnostics& other);

 private:
  std::vector<Diagnostic> items_;
  bool errors_only_ = false;
};

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_DIAGNOSTICS_H_
