#include "core/diagnostics.h"

namespace meshplan::core {

std::string Diagnostic::ToString() const {
  std::string s = severity == Severity::kWarning ? "warning: " : "";
  return s + path + ": " + message;
}

void Diagnostics::Error(std::string path, std::string message) {
  items_.push_back({Diagnostic::Severity::kError, std::move(path), std::move(message)});
}

void Diagnostics::Warning(std::string path, std::string message) {
  if (errors_only_) return;
  items_.push_back({Diagnostic::Severity::kWarning, std::move(path), std::move(message)});
}

bool Diagnostics::has_errors() const {
  for (const auto& d : items_)
    if (d.severity == Diagnostic::Severity::kError) return true;
  return false;
}

bool Diagnostics::has_error_at(std::string_view path) const {
  for (const auto& d : items_)
    if (d.severity == Diagnostic::Severity::kError && d.path == path) return true;
  return false;
}

std::vector<Diagnostic> Diagnostics::errors() const {
  std::vector<Diagnostic> out;
  for (const auto& d : items_)
    if (d.severity == Diagnostic::Severity::kError) out.push_back(d);
  return out;
}

std::vector<Diagnostic> Diagnostics::warnings() const {
  std::vector<Diagnostic> out;
  for (const auto& d : items_)
    if (d.severity == Diagnostic::Severity::kWarning) out.push_back(d);
  return out;
}

Status Diagnostics::ToStatus() const {
  std::string msg;
  for (const auto& d : items_) {
    if (d.severity != Diagnostic::Severity::kError) continue;
    if (!msg.empty()) msg += "\n";
    msg += d.ToString();
  }
  return msg.empty() ? Status::Ok() : Status::InvalidArgument(msg);
}

void Diagnostics::Append(const Diagnostics& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

}  // namespace meshplan::core
