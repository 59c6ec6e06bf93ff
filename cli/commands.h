// The meshplan subcommands. Each Add*Command registers itself on the root app; its callback sets
// *exit_code: 0 success, 1 a plan that does not fit or is inconsistent, 2 a usage error.
#ifndef MESHPLAN_CLI_COMMANDS_H_
#define MESHPLAN_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace meshplan::cli {

void AddReportCommand(CLI::App* app, int* exit_code);
void AddPlanCommand(CLI::App* app, int* exit_code);
void AddPresetsCommand(CLI::App* app, int* exit_code);
void AddValidateCommand(CLI::App* app, int* exit_code);
void AddReliabilityCommand(CLI::App* app, int* exit_code);
void AddSearchCommand(CLI::App* app, int* exit_code);
void AddExportCommand(CLI::App* app, int* exit_code);
void AddSimulateCommand(CLI::App* app, int* exit_code);
void AddExplainCommand(CLI::App* app, int* exit_code);
void AddCalibrateCommand(CLI::App* app, int* exit_code);
void AddHistoryCommand(CLI::App* app, int* exit_code);

}  // namespace meshplan::cli

#endif  // MESHPLAN_CLI_COMMANDS_H_
