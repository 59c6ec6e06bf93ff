// The whiteboard explanations' shared helpers (sim/explain.cc: the checklist; sim/explain_topics.cc:
// the topics): number formatting (decimal units, GB = 1e9 B), worked-example cases and plans, and
// the checklist steps the topics reuse. Internal to sim/explain*.cc. Pure functions.
#ifndef MESHPLAN_SIM_EXPLAIN_INTERNAL_H_
#define MESHPLAN_SIM_EXPLAIN_INTERNAL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/failures.h"
#include "core/memory.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/specs.h"
#include "core/status.h"
#include "core/step_graph.h"
#include "sim/explain.h"
#include "sim/run_sim.h"
#include "sim/step_model.h"

namespace meshplan::sim::explain_internal {

using core::Dtype;
using core::ModelSpec;
using core::PlanSpec;
using core::Recompute;
using core::Schedule;
using core::Status;

// Formatting.
std::string Fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Eng(double v);
std::string Count(double v);
std::string Count(int64_t v);
std::string Int(int64_t v);
std::string Bytes(double b);
std::string Bytes(int64_t b);
std::string Hbm(int64_t b);
// The memory a plan may fill on GPU g (GpuSpec::CapacityBytes), with the physical memory beside it when the two differ.
std::string Capacity(const core::GpuSpec& g);
std::string Rate(double bytes_per_s);
std::string Pct(double f);
std::string Pct2(double f);
std::string Tflops(double flops_per_s);
std::string Secs(double s);
std::string Usd(double d);
std::string Join(const std::vector<std::string>& parts, const std::string& sep);
std::string RecomputeText(Recompute rc);
std::string PlanText(const PlanSpec& p);
void Set(ExplainStep* st, std::string name, double value, std::string unit = "");
ExplainStep NewStep(std::string id, std::string title);

// Shared computations.
bool PlanValid(const PlanSpec& p, const ModelSpec& m, const core::GpuSpec& g, const core::ClusterSpec& c,
               std::string* why = nullptr);
bool TypicalLayerIsMoe(const ModelSpec& m);
double Peak(const core::GpuSpec& g, Dtype d);
double RankTraffic(const std::vector<core::Op>& ops, core::CommGroup group, int64_t n, int64_t microbatches);
struct CollectiveCount {
  int forward = 0, backward = 0;
  int64_t bytes = 0;  // of the last one seen (they are all the same size in a TP/EP layer)
};
CollectiveCount CountCollectives(const std::vector<core::Op>& ops, core::CommGroup group);
double UniformBubble(Schedule schedule, int64_t p, int64_t m, int64_t v);
struct Case {
  ModelSpec m;
  core::GpuSpec g;
  core::ClusterSpec c;
};
core::Result<Case> LoadCase(const std::string& model, const std::string& cluster);
PlanSpec MakePlan(int64_t gpus, int64_t tp, int64_t pp, int64_t cp, int zero, bool sp, Recompute rc, int64_t seq,
                  int64_t gbs, int64_t layers);
Status RequireValid(const PlanSpec& p, const Case& k, const char* what);

// Checklist steps the topics reuse.
ExplainStep PrecisionStep(const core::Scenario& s, const PlanSpec& p, const core::Profile& profile);
ExplainStep CheckpointStep(const core::Scenario& s, const PlanSpec& p, const core::MemoryReport& mem,
                           const core::FailureModel& f);
std::string FailureSeedsNote(const core::FailureModel& f, int64_t gpus_per_node);
ExplainStep FailuresStep(const core::Scenario& s, const core::FailureModel& f,
                         const core::Result<ReliabilityReport>& rel);

}  // namespace meshplan::sim::explain_internal

#endif  // MESHPLAN_SIM_EXPLAIN_INTERNAL_H_
