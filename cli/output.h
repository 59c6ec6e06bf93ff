// Rendering of reports: the human table (nccl-tests style: '#' comment lines, a units row), JSON
// and CSV. Only formatting; every number comes from core/.
#ifndef MESHPLAN_CLI_OUTPUT_H_
#define MESHPLAN_CLI_OUTPUT_H_

#include <string>
#include <vector>

#include "core/memory.h"
#include "core/presets.h"
#include <optional>

#include "sim/accuracy.h"
#include "sim/fit_advice.h"
#include "sim/run_sim.h"
#include "sim/step_model.h"

namespace meshplan::cli {

enum class Format { kTable, kJson, kCsv };
bool ParseFormat(const std::string& text, Format* out);
// 70553706496 -> "70.55B", 2760000 -> "2.76M": parameter counts as people say them.
std::string HumanCount(int64_t n);
// printf of one number (a format with one conversion), for table cells.
std::string Fmt(const char* format, double v);
// --tokens, as every command that prices a run reads it: when given, a finite count above 0 and at
// most kMaxTrainTokens, 1e18 (tens of thousands of times the tens of trillions the largest
// published pre-training runs took); not given, the default of 20 per parameter. The rule it
// breaks ("must be ..."), or empty when the flag is fine or absent.
inline constexpr double kMaxTrainTokens = 1e18;
std::string TokensFlagError(const std::optional<double>& tokens);
// "llama3-70b tp8 pp2 dp4 mbs1 seq8192 on 64x h100-sxm": how the result store labels a plan.
std::string PlanLabel(const core::Scenario& s);

// Speed and cost, printed after the memory section when present.
struct SpeedReport {
  std::string profile;
  sim::StepEstimate step;
  sim::TrainEstimate train;
  std::optional<sim::ReliabilityReport> reliability;  // failures, checkpoints and goodput
  std::string failure_model;
  std::optional<sim::FitAdvice> fit_advice;  // when the plan does not fit: what makes it fit
  // `report --ops`: every op of the step graph as the step model costs it (sim::CostStepGraph),
  // printed after the step time; empty otherwise.
  std::vector<sim::CostedOpList> ops;
  // How close such predictions came on published runs (sim/accuracy.h): the shipped tables' rows
  // for the plan's groups, step time and memory; absent with a calibrated profile (the tables are
  // the default profile's).
  // sim::AccuracyOfPlan's rows for the plan, and the table they come from (its `all` row, made_by).
  struct Accuracy : sim::PlanAccuracy {
    sim::AccuracyTable table;
  };
  std::optional<Accuracy> step_accuracy, memory_accuracy;
};

// The settings that make a plan fit, as table lines (after the DOES NOT FIT verdict).
std::string FitAdviceTable(const sim::FitAdvice& a);
// The one stderr line of a command that stops because the plan does not fit:
// "error: does not fit: stage 0 needs 95.1 GB, the GPU has 80 GB; --sp (...) makes it fit ...".
std::string DoesNotFitLine(const core::MemoryReport& r, const sim::FitAdvice& a);

std::string MemoryTable(const core::Scenario& s, const core::MemoryReport& r, const std::vector<std::string>& notes,
                        const std::vector<std::string>& warnings, const SpeedReport* speed = nullptr);
std::string MemoryJson(const core::Scenario& s, const core::MemoryReport& r, const std::vector<std::string>& notes,
                       const std::vector<std::string>& warnings, const SpeedReport* speed = nullptr);
std::string MemoryCsv(const core::MemoryReport& r);

}  // namespace meshplan::cli

#endif  // MESHPLAN_CLI_OUTPUT_H_
