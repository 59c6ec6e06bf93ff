// Pipeline schedules defined once: which model chunks (virtual stages) a pipeline rank holds and
// the order in which it runs the forward (F), input-gradient (B) and weight-gradient (W) passes
// of its microbatches. The discrete-event simulator (sim/des.cc) places these orders in time with
// the predicted costs; the runtime executor (runtime/executor.cc) runs them; neither has an order
// of its own, so what meshplan-run measures is the schedule meshplan simulate predicts. Every
// order is fixed, as the frameworks run them (none reorders at run time by measured costs).
// Pure; thread-safe.
#ifndef MESHPLAN_CORE_SCHEDULE_H_
#define MESHPLAN_CORE_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/specs.h"
#include "core/status.h"

namespace meshplan::core {

// The one F/B/W vocabulary. Schedules that do not split W from B (GPipe, 1F1B, interleaved) run
// the weight gradients inside B and have no W pass.
enum class PipePass { kForward, kBackward, kWeight };
const char* Name(PipePass p);  // "F", "B", "W"

struct ScheduleSlot {
  PipePass pass = PipePass::kForward;
  int64_t chunk = 0;       // the rank's model chunk: interleaved 0..vpp-1; DualPipe: its direction; else 0
  int64_t microbatch = 0;  // 0..m-1 (DualPipe: direction 0 runs [0, ceil(m/2)), direction 1 the rest)
  friend bool operator==(const ScheduleSlot&, const ScheduleSlot&) = default;
};

// A pipeline of virtual stages (model chunks placed on ranks).
// - Interleaved: virtual stage vs = c * pp + rank holds model chunk vs (Megatron's assignment:
//   rank r holds chunks r, r + pp, ...); the activation of chunk c goes to the rank of c + 1.
// - DualPipe (DeepSeek-V3 §3.2.1): two directions of pp stages, vs = d * pp + j; direction 0's
//   stage j on rank j, direction 1's stage j on rank pp - 1 - j, both running model chunk j, so
//   rank r holds chunks r and pp - 1 - r; direction 0 takes microbatches [0, ceil(m/2)),
//   direction 1 the rest.
// - Otherwise one chunk per rank, vs = rank.
struct PipeTopology {
  PipeTopology(Schedule schedule, int64_t pp, int64_t vpp, int64_t microbatches);
  int64_t pp = 1;
  bool dual = false;
  int64_t chunks = 1;  // per rank
  int64_t m = 0;       // microbatches per pipeline
  int64_t Stages() const { return pp * chunks; }
  int64_t Rank(int64_t vs) const { return dual && vs >= pp ? pp - 1 - vs % pp : vs % pp; }
  int64_t Chunk(int64_t vs) const { return vs / pp; }  // the rank-local chunk (DualPipe: direction)
  int64_t VStage(int64_t rank, int64_t chunk) const {
    return dual && chunk == 1 ? 2 * pp - 1 - rank : chunk * pp + rank;
  }
  // Previous / next virtual stage along the data flow; -1 at the ends.
  int64_t Prev(int64_t vs) const { return (dual ? vs % pp == 0 : vs == 0) ? -1 : vs - 1; }
  int64_t Next(int64_t vs) const { return (dual ? vs % pp == pp - 1 : vs == Stages() - 1) ? -1 : vs + 1; }
  // The microbatches that pass through vs: [FirstMb, FirstMb + Mbs).
  int64_t FirstMb(int64_t vs) const { return dual && vs >= pp ? (m + 1) / 2 : 0; }
  int64_t Mbs(int64_t vs) const { return !dual ? m : vs < pp ? (m + 1) / 2 : m / 2; }
};

// True for the schedules with W passes of their own (zero-bubble, DualPipe).
bool SplitsWeightGradients(Schedule s);

// OK, or InvalidArgument naming the plan field, for a pipeline the schedule cannot order: pp or
// vpp < 1; vpp > 1 without interleaved; interleaved with a microbatch group `group` (0: pp; plan
// vpp_group) outside [pp, m] or leaving a last group of m mod group below pp (with the default,
// m not a multiple of pp); DualPipe with an odd pp or m odd or below 2 pp (DeepSeek's dualpipe.py
// asserts both).
Status CheckPipelineSchedule(Schedule schedule, int64_t pp, int64_t vpp, int64_t microbatches, int64_t group = 0);

// Megatron-Core's rule on an interleaved microbatch group of `group` (> 0) over m >= 1
// microbatches per pipeline (schedules.py forward_backward_pipelining_with_interleaving at
// d98e8a64, after its tunable schedule, 4295be1a6c): the group in [pp, m] and a last group of
// m mod group that is empty or at least pp. Empty when it holds, else what plan.vpp_group breaks
// (the plan checks and CheckPipelineSchedule both say it so).
std::string VppGroupViolation(int64_t pp, int64_t microbatches, int64_t group);

// Every pipeline rank's order (index = rank), each pass of each (chunk, microbatch) once, B after
// its F, W right after its B or later:
//   gpipe: all F, then all B.
//   1f1b (Narayanan 2021 §2.2, Megatron-LM schedules.py): min(pp - r - 1, m) warm-up forwards,
//     then one F / one B, then the remaining Bs.
//   interleaved (vpp > 1, Megatron-Core schedules.py get_schedule_table and
//     get_pp_rank_microbatches at d98e8a64): microbatches in groups of N (`group`, 0: pp), the
//     last group taking the remainder; within a group every chunk in turn runs the group's
//     microbatches, so virtual microbatch k is the k-th (microbatch, chunk) of that table, its
//     chunk reversed in backward; warm-up of 2(pp - r - 1) + (v - 1)N virtual microbatches. With
//     N = pp and m a multiple of pp: chunk (k mod pv)/p on microbatch (k / pv) p + k mod p.
//   zero-bubble (ZB-H1, Qi et al. 2024 §2.1 and Figure 3): 1F1B's F and B; rank i runs the W of
//     microbatch k - i after the B of microbatch k, so every rank holds at most pp microbatches
//     (1F1B's first-stage peak) and the deferred Ws fill the drain: one pending W after each
//     drain B, the rest last.
//   dualpipe: DeepSeek's reference order (deepseek-ai/DualPipe, dualpipe/dualpipe.py, DualPipe.step
//     at 3da1bbe), its eight phases; a backward run without zero-bubble splitting (B and W in one
//     autograd call there) is B immediately followed by its W.
// Errors as CheckPipelineSchedule.
Result<std::vector<std::vector<ScheduleSlot>>> PipelineOrders(Schedule schedule, int64_t pp, int64_t vpp,
                                                              int64_t microbatches, int64_t group = 0);

// The fixed orders of one rank for GPipe, 1F1B and interleaved (zero-bubble and DualPipe: use
// PipelineOrders). REQUIRES: 0 <= stage < pp; microbatches >= 1; for interleaved,
// CheckPipelineSchedule(..., group) passed.
std::vector<ScheduleSlot> StageOrder(Schedule schedule, int64_t pp, int64_t vpp, int64_t stage, int64_t microbatches,
                                     int64_t group = 0);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_SCHEDULE_H_
