#include "core/schedule.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>

namespace meshplan::core {

const char* Name(PipePass p) {
  switch (p) {
    case PipePass::kForward: return "F";
    case PipePass::kBackward: return "B";
    case PipePass::kWeight: return "W";
  }
  return "?";
}

PipeTopology::PipeTopology(Schedule schedule, int64_t pp_, int64_t vpp, int64_t microbatches)
    : pp(pp_),
      dual(schedule == Schedule::kDualPipe),
      chunks(dual                                 ? 2
             : schedule == Schedule::kInterleaved ? std::max<int64_t>(vpp, 1)
                                                  : 1),
      m(microbatches) {}

bool SplitsWeightGradients(Schedule s) { return s == Schedule::kZeroBubble || s == Schedule::kDualPipe; }

std::string VppGroupViolation(int64_t pp, int64_t m, int64_t group) {
  if (group < pp || group > m)
    return "must range from pp=" + std::to_string(pp) + " to the microbatches per pipeline (" + std::to_string(m) +
           ") (got " + std::to_string(group) + ")";
  if (m % group != 0 && m % group < pp)
    return "leaves a last group of " + std::to_string(m % group) + " microbatches (" + std::to_string(m) + " mod " +
           std::to_string(group) + "), fewer than pp=" + std::to_string(pp) + ": Megatron-Core refuses its bubbles";
  return "";
}

Status CheckPipelineSchedule(Schedule schedule, int64_t pp, int64_t vpp, int64_t m, int64_t group) {
  auto bad = [](const std::string& field, const std::string& rule) {
    return Status::InvalidArgument("pipeline schedule: " + field + ": " + rule);
  };
  const std::string name = Name(schedule);
  if (pp < 1) return bad("plan.pp", "must be >= 1 (got " + std::to_string(pp) + ")");
  if (vpp < 1) return bad("plan.vpp", "must be >= 1 (got " + std::to_string(vpp) + ")");
  if (m < 1) return bad("plan.global_batch", "must hold at least one microbatch per pipeline (micro_batch * dp)");
  if (vpp > 1 && schedule != Schedule::kInterleaved)
    return bad("plan.vpp", std::to_string(vpp) + " needs plan.schedule=interleaved (got " + name + ")");
  if (group < 0) return bad("plan.vpp_group", "must be >= 0 (got " + std::to_string(group) + ")");
  if (group > 0 && schedule != Schedule::kInterleaved)
    return bad("plan.vpp_group", "needs plan.schedule=interleaved (got " + name + ")");
  if (schedule == Schedule::kInterleaved && group == 0 && m % pp != 0)
    return bad("plan.global_batch", "interleaved needs the microbatches per pipeline (" + std::to_string(m) +
                                        ") to be a multiple of pp=" + std::to_string(pp));
  if (schedule == Schedule::kInterleaved && group > 0)
    if (std::string rule = VppGroupViolation(pp, m, group); !rule.empty()) return bad("plan.vpp_group", rule);
  if (schedule == Schedule::kDualPipe) {
    if (pp < 2 || pp % 2 != 0) return bad("plan.pp", "dualpipe needs an even pp >= 2 (got " + std::to_string(pp) + ")");
    if (m % 2 != 0 || m < 2 * pp)
      return bad("plan.global_batch",
                 "dualpipe needs an even number of microbatches per pipeline, at least 2*pp=" + std::to_string(2 * pp) +
                     " (got " + std::to_string(m) + "; DeepSeek's dualpipe.py asserts both)");
  }
  return Status::Ok();
}

std::vector<ScheduleSlot> StageOrder(Schedule schedule, int64_t pp, int64_t vpp, int64_t stage, int64_t microbatches,
                                     int64_t group) {
  constexpr PipePass F = PipePass::kForward, B = PipePass::kBackward;
  std::vector<ScheduleSlot> order;
  const int64_t p = pp, m = microbatches;
  if (schedule == Schedule::kGpipe) {
    for (int64_t i = 0; i < m; ++i) order.push_back({F, 0, i});
    for (int64_t i = 0; i < m; ++i) order.push_back({B, 0, i});
    return order;
  }
  const int64_t v = schedule == Schedule::kInterleaved ? std::max<int64_t>(vpp, 1) : 1;
  if (v == 1) {
    const int64_t warm = std::min(p - stage - 1, m);
    for (int64_t i = 0; i < warm; ++i) order.push_back({F, 0, i});
    for (int64_t k = 0; k < m - warm; ++k) {
      order.push_back({F, 0, warm + k});
      order.push_back({B, 0, k});
    }
    for (int64_t i = m - warm; i < m; ++i) order.push_back({B, 0, i});
    return order;
  }
  // Megatron-Core's schedule table: groups of n microbatches from the first, the last one taking
  // what remains; each group runs chunk 0 on its microbatches, then chunk 1, ...
  const int64_t total = m * v, n = group > 0 ? group : p;
  std::vector<std::pair<int64_t, int64_t>> table;  // (microbatch, chunk) of virtual microbatch k
  table.reserve(static_cast<size_t>(total));
  for (int64_t first = 0; first < m; first += n) {
    const int64_t last = first + n >= m ? m : first + n;
    for (int64_t c = 0; c < v; ++c)
      for (int64_t i = first; i < last; ++i) table.emplace_back(i, c);
    if (last == m) break;
  }
  auto slot = [&](int64_t k, PipePass pass) {
    const auto [mb, c] = table[static_cast<size_t>(k)];
    return ScheduleSlot{pass, pass == B ? v - 1 - c : c, mb};
  };
  const int64_t warm = std::min((p - stage - 1) * 2 + (v - 1) * n, total);
  for (int64_t k = 0; k < warm; ++k) order.push_back(slot(k, F));
  for (int64_t k = 0; k < total - warm; ++k) {
    order.push_back(slot(warm + k, F));
    order.push_back(slot(k, B));
  }
  for (int64_t k = total - warm; k < total; ++k) order.push_back(slot(k, B));
  return order;
}

namespace {

// ZB-H1 (Qi et al. 2024, §2.1 and Figure 3) on rank `stage`.
std::vector<ScheduleSlot> ZeroBubbleOrder(int64_t pp, int64_t stage, int64_t m) {
  std::vector<ScheduleSlot> out;
  const int64_t warm = std::min(pp - stage - 1, m), delay = stage;
  int64_t next_w = 0;
  auto f = [&](int64_t i) { out.push_back({PipePass::kForward, 0, i}); };
  auto b = [&](int64_t i) { out.push_back({PipePass::kBackward, 0, i}); };
  auto w = [&] { out.push_back({PipePass::kWeight, 0, next_w++}); };
  for (int64_t i = 0; i < warm; ++i) f(i);
  for (int64_t k = 0; k < m - warm; ++k) {
    f(warm + k);
    b(k);
    if (k >= delay) w();
  }
  for (int64_t k = m - warm; k < m; ++k) {
    b(k);
    if (next_w <= k) w();
  }
  while (next_w < m) w();
  return out;
}

// DualPipe on rank `rank`, phase by phase as DualPipe.step runs them (dualpipe/dualpipe.py at
// deepseek-ai/DualPipe 3da1bbe). A phase is rank-relative: on the first half of the ranks phase 0
// is direction 0 (data enters at rank 0), on the second half direction 1. Each direction's
// forwards and backwards run its microbatches in order; a zero-bubble backward (enable_zb) queues
// its W, which _weight_chunk runs first in, first out; any other backward carries its W with it.
// REQUIRES: CheckPipelineSchedule passed.
std::vector<ScheduleSlot> DualPipeOrder(const PipeTopology& topo, int64_t rank) {
  const int64_t pp = topo.pp, half_ranks = pp / 2, half_rank = std::min(rank, pp - 1 - rank);
  const int64_t half_chunks = topo.m / 2;
  const int64_t second_half = rank >= half_ranks ? 1 : 0;
  std::vector<ScheduleSlot> out;
  int64_t fwd[2] = {0, 0}, bwd[2] = {0, 0};
  std::deque<std::pair<int64_t, int64_t>> deferred;  // (direction, microbatch) through B, not W
  const int64_t first[2] = {0, (topo.m + 1) / 2};
  auto F = [&](int64_t phase) {
    const int64_t d = phase ^ second_half;
    out.push_back({PipePass::kForward, d, first[d] + fwd[d]++});
  };
  auto B = [&](int64_t phase, bool zero_bubble) {
    const int64_t d = phase ^ second_half, mb = first[d] + bwd[d]++;
    out.push_back({PipePass::kBackward, d, mb});
    if (zero_bubble) deferred.push_back({d, mb});
    else out.push_back({PipePass::kWeight, d, mb});
  };
  auto W = [&] {
    const auto [d, mb] = deferred.front();
    deferred.pop_front();
    out.push_back({PipePass::kWeight, d, mb});
  };
  for (int64_t i = 0; i < (half_ranks - half_rank - 1) * 2; ++i) F(0);  // 1: nF0
  for (int64_t i = 0; i < half_rank + 1; ++i) {                         // 2: nF0F1
    F(0);
    F(1);
  }
  for (int64_t i = 0; i < half_ranks - half_rank - 1; ++i) {  // 3: nB1W1F1 (zero bubble)
    B(1, true);
    W();
    F(1);
  }
  // 4 (main): nF0B1F1B0. The overlapped F&B pairs run F then B here; the middle ranks' first
  // pair, which dualpipe.py does not overlap, is the same order.
  for (int64_t i = 0; i < half_chunks - pp + half_rank + 1; ++i) {
    F(0);
    B(1, false);
    F(1);
    B(0, false);
  }
  for (int64_t i = 0; i < half_ranks - half_rank - 1; ++i) {  // 5: nB1F1B0
    B(1, false);
    F(1);
    B(0, false);
  }
  const int64_t step6 = half_rank + 1;  // 6: nB1B0, the second half with zero bubble
  bool zb = false;
  for (int64_t i = 0; i < step6; ++i) {
    if (i == step6 / 2 && half_rank % 2 == 1) zb = true;
    B(1, zb);
    if (i == step6 / 2 && half_rank % 2 == 0) zb = true;
    B(0, zb);
  }
  for (int64_t i = 0; i < half_ranks - half_rank - 1; ++i) {  // 7: nWB0 (zero bubble)
    W();
    B(0, true);
  }
  for (int64_t i = 0; i < half_rank + 1 && !deferred.empty(); ++i) W();  // 8: nW
  return out;
}

}  // namespace

Result<std::vector<std::vector<ScheduleSlot>>> PipelineOrders(Schedule schedule, int64_t pp, int64_t vpp,
                                                              int64_t microbatches, int64_t group) {
  if (Status s = CheckPipelineSchedule(schedule, pp, vpp, microbatches, group); !s.ok()) return s;
  const PipeTopology topo(schedule, pp, vpp, microbatches);
  std::vector<std::vector<ScheduleSlot>> out;
  out.reserve(static_cast<size_t>(pp));
  for (int64_t r = 0; r < pp; ++r) {
    switch (schedule) {
      case Schedule::kZeroBubble: out.push_back(ZeroBubbleOrder(pp, r, microbatches)); break;
      case Schedule::kDualPipe: out.push_back(DualPipeOrder(topo, r)); break;
      default: out.push_back(StageOrder(schedule, pp, vpp, r, microbatches, group)); break;
    }
  }
  return out;
}

}  // namespace meshplan::core
