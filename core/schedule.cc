#include "core/schedule.h"

#include <algorithm>

namespace meshplan::core {

std::vector<ScheduleSlot> StageOrder(Schedule schedule, int64_t pp, int64_t vpp, int64_t stage,
                                     int64_t microbatches) {
  std::vector<ScheduleSlot> order;
  const int64_t p = pp, m = microbatches;
  if (schedule == Schedule::kGpipe) {
    for (int64_t i = 0; i < m; ++i) order.push_back({true, 0, i});
    for (int64_t i = 0; i < m; ++i) order.push_back({false, 0, i});
    return order;
  }
  const int64_t v = schedule == Schedule::kInterleaved ? std::max<int64_t>(vpp, 1) : 1;
  if (v == 1) {
    const int64_t warm = std::min(p - stage - 1, m);
    for (int64_t i = 0; i < warm; ++i) order.push_back({true, 0, i});
    for (int64_t k = 0; k < m - warm; ++k) {
      order.push_back({true, 0, warm + k});
      order.push_back({false, 0, k});
    }
    for (int64_t i = m - warm; i < m; ++i) order.push_back({false, 0, i});
    return order;
  }
  const int64_t total = m * v, group = p * v;
  auto slot = [&](int64_t k, bool forward) {
    int64_t chunk = (k % group) / p;
    if (!forward) chunk = v - 1 - chunk;
    return ScheduleSlot{forward, chunk, (k / group) * p + k % p};
  };
  const int64_t warm = std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  for (int64_t k = 0; k < warm; ++k) order.push_back(slot(k, true));
  for (int64_t k = 0; k < total - warm; ++k) {
    order.push_back(slot(warm + k, true));
    order.push_back(slot(k, false));
  }
  for (int64_t k = total - warm; k < total; ++k) order.push_back(slot(k, false));
  return order;
}

}  // namespace meshplan::core
