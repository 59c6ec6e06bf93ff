// Semantic validation of the specs: every rule broken is reported with the field path and the
// values involved; warnings flag legal but unwise choices (TP across the scale-up domain).
// Pure functions; no I/O.
#ifndef MESHPLAN_CORE_VALIDATE_H_
#define MESHPLAN_CORE_VALIDATE_H_

#include <string>

#include "core/diagnostics.h"
#include "core/specs.h"

namespace meshplan::core {

void ValidateModel(const ModelSpec& m, const std::string& prefix, Diagnostics* out);
void ValidateGpu(const GpuSpec& g, const std::string& prefix, Diagnostics* out);
void ValidateCluster(const ClusterSpec& c, const std::string& prefix, Diagnostics* out);
// The plan's own ranges, then its consistency with the model, GPU and cluster: gpus =
// tp*pp*dp*cp; tp | heads; layers split over pp*vpp; ep | experts; gbs % (mbs*dp) == 0; ...
void ValidatePlan(const PlanSpec& p, const ModelSpec& m, const GpuSpec& g, const ClusterSpec& c, Diagnostics* out);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_VALIDATE_H_
