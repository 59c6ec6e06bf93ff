// The measurement record is core's (core/measurement.h: its types and JSON); the runtime fills it
// and prints it as tables here. Thread-safe (pure functions).
#ifndef MESHPLAN_RUNTIME_MEASUREMENT_H_
#define MESHPLAN_RUNTIME_MEASUREMENT_H_

#include <string>
#include <vector>

#include "core/measurement.h"

namespace meshplan::runtime {

using core::CollectiveBenchResult;
using core::DevicePeak;
using core::GemmBenchResult;
using core::Hardware;
using core::kMeasurementSchema;
using core::Measurement;
using core::MeasurementToJson;
using core::MemoryBreakdown;
using core::OpMeasurement;
using core::ParseMeasurementJson;
using core::RankSummary;
using core::StepMeasurement;
using core::StepMemory;

// Human tables, nccl-tests style: '#' comment lines, a header row and a units row.
std::string GemmBenchTable(const std::vector<GemmBenchResult>& rows);
std::string CollectiveBenchTable(const std::vector<CollectiveBenchResult>& rows);
std::string StepTable(const Measurement& m);

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_MEASUREMENT_H_
