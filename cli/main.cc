// meshplan: capacity planning for distributed LLM training.
#include <iostream>
#include <streambuf>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace {

// Counts what goes to stderr, so that a non-zero exit without a word of why is caught here (every
// command prints its reason; this is the guard against a path that forgets to).
class CountingBuf : public std::streambuf {
 public:
  explicit CountingBuf(std::streambuf* to) : to_(to) {}
  int64_t count() const { return count_; }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    ++count_;
    return to_->sputc(static_cast<char>(c));
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    count_ += n;
    return to_->sputn(s, n);
  }
  int sync() override { return to_->pubsync(); }

 private:
  std::streambuf* to_;
  int64_t count_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"meshplan: will it fit, how fast, what will it cost, how often will it break"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "meshplan 0.1.0");
  // Parse errors too start with "error:", as every other failure does.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("error: ") + e.what() + "\nRun with --help for more information.\n";
  });
  int exit_code = 0;
  meshplan::cli::AddReportCommand(&app, &exit_code);
  meshplan::cli::AddPlanCommand(&app, &exit_code);
  meshplan::cli::AddPresetsCommand(&app, &exit_code);
  meshplan::cli::AddValidateCommand(&app, &exit_code);
  meshplan::cli::AddReliabilityCommand(&app, &exit_code);
  meshplan::cli::AddSearchCommand(&app, &exit_code);
  meshplan::cli::AddExportCommand(&app, &exit_code);
  meshplan::cli::AddSimulateCommand(&app, &exit_code);
  meshplan::cli::AddExplainCommand(&app, &exit_code);
  meshplan::cli::AddCalibrateCommand(&app, &exit_code);
  meshplan::cli::AddHistoryCommand(&app, &exit_code);
  CountingBuf counted(std::cerr.rdbuf());
  std::streambuf* const original = std::cerr.rdbuf(&counted);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints help/version with exit 0; every other parse error is a usage error (2).
    int code = app.exit(e);
    std::cerr.rdbuf(original);
    return code == 0 ? 0 : 2;
  }
  if (exit_code != 0 && counted.count() == 0) {
    std::cerr << "error: meshplan " << (app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name())
              << " exited with status " << exit_code << " without saying why (a bug; please report the command)\n";
  }
  std::cerr.rdbuf(original);
  return exit_code;
}
