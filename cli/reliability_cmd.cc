// placeholder: being written (registers nothing yet)
#include "cli/commands.h"
namespace meshplan::cli {
void AddReliabilityCommand(CLI::App*, int*) {}
}  // namespace meshplan::cli
