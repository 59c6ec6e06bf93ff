// placeholder: being written (registers nothing yet)
#include "cli/commands.h"
namespace meshplan::cli {
void AddExplainCommand(CLI::App*, int*) {}
}  // namespace meshplan::cli
