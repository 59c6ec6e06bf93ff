// Pipeline schedules defined once: the order in which a pipeline rank runs the forward and
// backward passes of its microbatches. The discrete-event simulator (sim/des.cc) and the runtime
// executor (runtime/executor.cc) both take their orders from here. Pure; thread-safe.
#ifndef MESHPLAN_CORE_SCHEDULE_H_
#define MESHPLAN_CORE_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "core/specs.h"

namespace meshplan::core {

struct ScheduleSlot {
  bool forward = true;     // forward pass, else backward (with its weight gradients)
  int64_t chunk = 0;       // model chunk on this rank (interleaved); 0 otherwise
  int64_t microbatch = 0;
  friend bool operator==(const ScheduleSlot&, const ScheduleSlot&) = default;
};

// Megatron-LM's fixed per-rank orders (megatron/core/pipeline_parallel/schedules.py):
// GPipe: all forwards, then all backwards. 1F1B: p - stage - 1 warm-up forwards, then one
// forward / one backward, then the remaining backwards. Interleaved (vpp > 1): warm-up of
// 2(p - stage - 1) + (v - 1)p virtual microbatches; virtual microbatch k runs chunk
// (k mod pv) / p (reversed in backward) on microbatch (k / pv) p + k mod p.
// Zero-bubble and DualPipe have no fixed order here: they are list-scheduled (sim/des.cc).
// REQUIRES: 0 <= stage < pp; microbatches >= 1; for interleaved, microbatches % pp == 0.
std::vector<ScheduleSlot> StageOrder(Schedule schedule, int64_t pp, int64_t vpp, int64_t stage,
                                     int64_t microbatches);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_SCHEDULE_H_
