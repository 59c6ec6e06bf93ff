// meshplan: capacity planning for distributed LLM training.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"meshplan: will it fit, how fast, what will it cost, how often will it break"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "meshplan 0.1.0");
  int exit_code = 0;
  meshplan::cli::AddReportCommand(&app, &exit_code);
  meshplan::cli::AddPlanCommand(&app, &exit_code);
  meshplan::cli::AddPresetsCommand(&app, &exit_code);
  meshplan::cli::AddValidateCommand(&app, &exit_code);
  meshplan::cli::AddReliabilityCommand(&app, &exit_code);
  meshplan::cli::AddSearchCommand(&app, &exit_code);
  meshplan::cli::AddSimulateCommand(&app, &exit_code);
  meshplan::cli::AddExplainCommand(&app, &exit_code);
  meshplan::cli::AddCalibrateCommand(&app, &exit_code);
  meshplan::cli::AddHistoryCommand(&app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints help/version with exit 0; every other parse error is a usage error (2).
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}
