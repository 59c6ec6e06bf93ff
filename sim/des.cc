#include "sim/des.h"

#include "core/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>

namespace meshplan::sim {
namespace {

constexpr double kUnset = -1.0;

// The pipeline as virtual stages: a model chunk on a rank. Non-DualPipe: virtual stage
// vs = chunk * pp + rank (Megatron's interleaved assignment). DualPipe: two directions of pp
// stages, vs = d * pp + j; direction 1's stage j runs on rank pp-1-j.
struct Pipe {
  int64_t pp = 1, chunks = 1, directions = 1;
  std::vector<int64_t> mb_per_dir;  // microbatches in each direction
  int64_t Stages() const { return directions * pp * (directions == 1 ? chunks : 1); }
  int64_t Rank(int64_t vs) const {
    if (directions == 2) {
      const int64_t d = vs / pp, j = vs % pp;
      return d == 0 ? j : pp - 1 - j;
    }
    return vs % pp;
  }
  int64_t Chunk(int64_t vs) const { return directions == 2 ? vs / pp : vs / pp; }
  int64_t Dir(int64_t vs) const { return directions == 2 ? vs / pp : 0; }
  // Previous / next virtual stage along the data flow, -1 at the ends.
  int64_t Prev(int64_t vs) const {
    if (directions == 2) return vs % pp == 0 ? -1 : vs - 1;
    return vs == 0 ? -1 : vs - 1;
  }
  int64_t Next(int64_t vs) const {
    if (directions == 2) return vs % pp == pp - 1 ? -1 : vs + 1;
    return vs == Stages() - 1 ? -1 : vs + 1;
  }
  int64_t Mbs(int64_t vs) const { return mb_per_dir[static_cast<size_t>(Dir(vs))]; }
};

struct OpRef {
  PipeOpKind kind;
  int64_t vs, mb;
};

class Simulator {
 public:
  Simulator(const Pipe& pipe, std::vector<double> f, std::vector<double> b, std::vector<double> w, bool split_w,
            double jitter, uint64_t seed)
      : pipe_(pipe), f_(std::move(f)), b_(std::move(b)), w_(std::move(w)), split_w_(split_w), jitter_(jitter),
        rng_(seed) {
    const size_t n = static_cast<size_t>(pipe_.Stages());
    end_[0].assign(n, {});
    end_[1].assign(n, {});
    end_[2].assign(n, {});
    for (size_t vs = 0; vs < n; ++vs)
      for (auto& e : end_) e[vs].assign(static_cast<size_t>(pipe_.Mbs(static_cast<int64_t>(vs))), kUnset);
    free_.assign(static_cast<size_t>(pipe_.pp), 0.0);
    busy_.assign(static_cast<size_t>(pipe_.pp), 0.0);
  }

  // Earliest start of `op` given its dependencies, or kUnset if one is not yet scheduled.
  double Ready(const OpRef& op) const {
    double t = 0;
    auto need = [&](int kind, int64_t vs) {
      const double e = end_[kind][static_cast<size_t>(vs)][static_cast<size_t>(op.mb)];
      if (e == kUnset) return false;
      t = std::max(t, e);
      return true;
    };
    switch (op.kind) {
      case PipeOpKind::kForward:
        if (pipe_.Prev(op.vs) >= 0 && !need(0, pipe_.Prev(op.vs))) return kUnset;
        return t;
      case PipeOpKind::kBackward:
        if (!need(0, op.vs)) return kUnset;
        if (pipe_.Next(op.vs) >= 0 && !need(1, pipe_.Next(op.vs))) return kUnset;
        return t;
      case PipeOpKind::kWeight:
        if (!need(1, op.vs)) return kUnset;
        return t;
    }
    return kUnset;
  }

  void Run(const OpRef& op, double ready, std::vector<TimelineOp>* timeline) {
    const int64_t rank = pipe_.Rank(op.vs);
    double d = Duration(op);
    const double start = std::max(free_[static_cast<size_t>(rank)], ready);
    const double end = start + d;
    free_[static_cast<size_t>(rank)] = end;
    busy_[static_cast<size_t>(rank)] += d;
    end_[static_cast<int>(op.kind)][static_cast<size_t>(op.vs)][static_cast<size_t>(op.mb)] = end;
    if (timeline) timeline->push_back({rank, pipe_.Chunk(op.vs), op.mb, op.kind, start, end});
  }

  double Free(int64_t rank) const { return free_[static_cast<size_t>(rank)]; }
  double Busy(int64_t rank) const { return busy_[static_cast<size_t>(rank)]; }
  bool Done(const OpRef& op) const {
    return end_[static_cast<int>(op.kind)][static_cast<size_t>(op.vs)][static_cast<size_t>(op.mb)] != kUnset;
  }
  bool split_w() const { return split_w_; }

 private:
  double Duration(const OpRef& op) {
    const int64_t rank = pipe_.Rank(op.vs);
    double d = 0;
    switch (op.kind) {
      case PipeOpKind::kForward: d = f_[static_cast<size_t>(rank)]; break;
      case PipeOpKind::kBackward: d = b_[static_cast<size_t>(rank)] + (split_w_ ? 0 : w_[static_cast<size_t>(rank)]); break;
      case PipeOpKind::kWeight: d = w_[static_cast<size_t>(rank)]; break;
    }
    if (jitter_ > 0) {
      std::normal_distribution<double> n(1.0, jitter_);
      d *= std::max(0.05, n(rng_));
    }
    return d;
  }

  const Pipe& pipe_;
  std::vector<double> f_, b_, w_;  // per rank, per chunk op (already divided by chunks)
  bool split_w_;
  double jitter_;
  std::mt19937_64 rng_;
  std::vector<std::vector<double>> end_[3];
  std::vector<double> free_, busy_;
};

// The fixed per-rank orders of core/schedule.h, as ops on virtual stages (chunk * pp + rank).
std::vector<OpRef> StaticOrder(core::Schedule s, const Pipe& pipe, int64_t rank, int64_t m) {
  std::vector<OpRef> order;
  for (const core::ScheduleSlot& slot : core::StageOrder(s, pipe.pp, pipe.chunks, rank, m))
    order.push_back({slot.forward ? PipeOpKind::kForward : PipeOpKind::kBackward, slot.chunk * pipe.pp + rank,
                     slot.microbatch});
  return order;
}

}  // namespace

core::Result<DesResult> SimulatePipeline(const core::PlanSpec& plan, const std::vector<StageTimes>& stages,
                                         int64_t microbatches, const DesOptions& options) {
  const int64_t pp = plan.pp;
  if (static_cast<int64_t>(stages.size()) != pp)
    return core::Status::InvalidArgument("stages: " + std::to_string(stages.size()) + " given, plan.pp=" +
                                         std::to_string(pp));
  if (microbatches < 1) return core::Status::InvalidArgument("microbatches: must be >= 1");
  if (!options.stage_slowdown.empty() && static_cast<int64_t>(options.stage_slowdown.size()) != pp)
    return core::Status::InvalidArgument("stage_slowdown: needs one factor per pipeline rank (" +
                                         std::to_string(pp) + "), got " +
                                         std::to_string(options.stage_slowdown.size()));
  for (double f : options.stage_slowdown)
    if (!(f > 0)) return core::Status::InvalidArgument("stage_slowdown: factors must be > 0");
  if (!(options.jitter >= 0)) return core::Status::InvalidArgument("jitter: must be >= 0");

  Pipe pipe;
  pipe.pp = pp;
  const bool dual = plan.schedule == core::Schedule::kDualPipe && pp > 1;
  const bool interleaved = plan.schedule == core::Schedule::kInterleaved && plan.vpp > 1;
  pipe.chunks = interleaved ? plan.vpp : 1;
  pipe.directions = dual ? 2 : 1;
  if (dual) pipe.mb_per_dir = {(microbatches + 1) / 2, microbatches / 2};
  else pipe.mb_per_dir = {microbatches};
  // Per-op durations: a rank's per-microbatch times split over its chunks (DualPipe: two stages).
  const double split = dual ? 2.0 : static_cast<double>(pipe.chunks);
  std::vector<double> f, b, w;
  for (int64_t r = 0; r < pp; ++r) {
    const double slow = options.stage_slowdown.empty() ? 1.0 : options.stage_slowdown[static_cast<size_t>(r)];
    const StageTimes& t = stages[static_cast<size_t>(r)];
    f.push_back(t.forward_s * slow / split);
    b.push_back(t.backward_input_s * slow / split);
    w.push_back(t.backward_weight_s * slow / split);
  }
  const bool list = plan.schedule == core::Schedule::kZeroBubble || dual;
  Simulator sim(pipe, f, b, w, list, options.jitter, options.seed);
  DesResult res;
  std::vector<TimelineOp>* timeline = options.keep_timeline ? &res.ops : nullptr;

  if (!list) {
    // Fixed orders: run each rank's next op as soon as its dependencies are scheduled.
    std::vector<std::vector<OpRef>> orders;
    for (int64_t r = 0; r < pp; ++r) orders.push_back(StaticOrder(plan.schedule, pipe, r, microbatches));
    std::vector<size_t> next(static_cast<size_t>(pp), 0);
    size_t remaining = 0;
    for (const auto& o : orders) remaining += o.size();
    while (remaining > 0) {
      bool progress = false;
      for (int64_t r = 0; r < pp; ++r) {
        auto& i = next[static_cast<size_t>(r)];
        const auto& order = orders[static_cast<size_t>(r)];
        while (i < order.size()) {
          const double ready = sim.Ready(order[i]);
          if (ready == kUnset) break;
          sim.Run(order[i], ready, timeline);
          ++i;
          --remaining;
          progress = true;
        }
      }
      if (!progress) return core::Status::Internal("pipeline schedule deadlocked (a bug in the order)");
    }
  } else {
    // List scheduling. Each rank keeps, per virtual stage it hosts, the next forward and
    // backward microbatch (in order) and its pending weight-gradient ops. The globally earliest
    // startable op runs next; ties prefer B, then F (within the 1F1B in-flight limit), then W.
    struct Local {
      int64_t vs;
      int64_t next_f = 0, next_b = 0;
      std::vector<int64_t> pending_w;
      int64_t limit;  // forwards ahead of backwards allowed (memory bound, as 1F1B)
    };
    std::vector<std::vector<Local>> hosts(static_cast<size_t>(pp));
    for (int64_t vs = 0; vs < pipe.Stages(); ++vs) {
      const int64_t j = vs % pp;  // position along its direction
      hosts[static_cast<size_t>(pipe.Rank(vs))].push_back({vs, 0, 0, {}, pp - j});
    }
    size_t remaining = 0;
    for (int64_t vs = 0; vs < pipe.Stages(); ++vs) remaining += static_cast<size_t>(3 * pipe.Mbs(vs));
    while (remaining > 0) {
      double best_start = std::numeric_limits<double>::infinity();
      int best_prio = 99;
      Local* best_local = nullptr;
      OpRef best_op{};
      for (int64_t r = 0; r < pp; ++r) {
        for (Local& l : hosts[static_cast<size_t>(r)]) {
          const int64_t m = pipe.Mbs(l.vs);
          auto consider = [&](const OpRef& op, int prio) {
            const double ready = sim.Ready(op);
            if (ready == kUnset) return;
            const double start = std::max(ready, sim.Free(r));
            if (start < best_start - 1e-12 || (std::fabs(start - best_start) <= 1e-12 && prio < best_prio)) {
              best_start = start;
              best_prio = prio;
              best_local = &l;
              best_op = op;
            }
          };
          if (l.next_b < m) consider({PipeOpKind::kBackward, l.vs, l.next_b}, 0);
          if (l.next_f < m && l.next_f - l.next_b < l.limit) consider({PipeOpKind::kForward, l.vs, l.next_f}, 1);
          if (!l.pending_w.empty()) consider({PipeOpKind::kWeight, l.vs, l.pending_w.front()}, 2);
        }
      }
      if (!best_local) return core::Status::Internal("pipeline schedule deadlocked (a bug in the policy)");
      sim.Run(best_op, best_start, timeline);
      --remaining;
      if (best_op.kind == PipeOpKind::kForward) ++best_local->next_f;
      if (best_op.kind == PipeOpKind::kBackward) {
        ++best_local->next_b;
        best_local->pending_w.push_back(best_op.mb);
      }
      if (best_op.kind == PipeOpKind::kWeight) best_local->pending_w.erase(best_local->pending_w.begin());
    }
  }

  for (int64_t r = 0; r < pp; ++r) res.pipeline_s = std::max(res.pipeline_s, sim.Free(r));
  double busy = 0;
  for (int64_t r = 0; r < pp; ++r) {
    DesStage st;
    st.busy_s = sim.Busy(r);
    st.idle_s = res.pipeline_s - st.busy_s;
    busy += st.busy_s;
    res.stages.push_back(st);
  }
  res.bubble_fraction = res.pipeline_s > 0 ? 1.0 - busy / (res.pipeline_s * static_cast<double>(pp)) : 0;
  double step = 0;
  for (const auto& t : stages) step = std::max(step, t.step_s);
  res.step_time_s = res.pipeline_s + step;
  if (timeline)
    std::stable_sort(res.ops.begin(), res.ops.end(), [](const TimelineOp& x, const TimelineOp& y) {
      return x.stage != y.stage ? x.stage < y.stage : x.start_s < y.start_s;
    });
  return res;
}

namespace {
const char* KindName(PipeOpKind k) {
  switch (k) {
    case PipeOpKind::kForward: return "F";
    case PipeOpKind::kBackward: return "B";
    case PipeOpKind::kWeight: return "W";
  }
  return "?";
}
}  // namespace

std::string ChromeTraceJson(const DesResult& r) {
  // Trace Event Format: complete events ("ph": "X"), microseconds, one thread per rank.
  std::ostringstream o;
  o << "{\"traceEvents\": [\n";
  bool first = true;
  for (const auto& op : r.ops) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "%s  {\"name\": \"%s%lld\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 0, \"tid\": %lld, "
                  "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"chunk\": %lld}}",
                  first ? "" : ",\n", KindName(op.kind), static_cast<long long>(op.microbatch), KindName(op.kind),
                  static_cast<long long>(op.stage), op.start_s * 1e6, (op.end_s - op.start_s) * 1e6,
                  static_cast<long long>(op.chunk));
    o << line;
    first = false;
  }
  o << "\n], \"displayTimeUnit\": \"ms\"}\n";
  return o.str();
}

std::string SvgGantt(const DesResult& r, int64_t stages) {
  const double width = 1200, row = 24, left = 70, top = 30;
  const double scale = r.pipeline_s > 0 ? (width - left - 10) / r.pipeline_s : 0;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
    << top + row * static_cast<double>(stages) + 40 << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<text x=\"" << left << "\" y=\"18\">pipeline " << r.pipeline_s << " s, bubble "
    << 100 * r.bubble_fraction << "% (F blue, B orange, W green, idle white)</text>\n";
  for (int64_t s = 0; s < stages; ++s) {
    const double y = top + row * static_cast<double>(s);
    o << "<text x=\"4\" y=\"" << y + 16 << "\">rank " << s << "</text>\n";
    o << "<rect x=\"" << left << "\" y=\"" << y << "\" width=\"" << r.pipeline_s * scale << "\" height=\""
      << row - 4 << "\" fill=\"white\" stroke=\"#ccc\"/>\n";
  }
  for (const auto& op : r.ops) {
    const char* fill = op.kind == PipeOpKind::kForward ? "#4c78a8" : op.kind == PipeOpKind::kBackward ? "#f58518" : "#54a24b";
    o << "<rect x=\"" << left + op.start_s * scale << "\" y=\"" << top + row * static_cast<double>(op.stage)
      << "\" width=\"" << std::max(0.5, (op.end_s - op.start_s) * scale) << "\" height=\"" << row - 4
      << "\" fill=\"" << fill << "\"><title>" << KindName(op.kind) << op.microbatch << " chunk " << op.chunk
      << ": " << op.start_s << "-" << op.end_s << " s</title></rect>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string AsciiGantt(const DesResult& r, int64_t stages, int width) {
  std::vector<std::string> rows(static_cast<size_t>(stages), std::string(static_cast<size_t>(width), '.'));
  const double scale = r.pipeline_s > 0 ? static_cast<double>(width) / r.pipeline_s : 0;
  for (const auto& op : r.ops) {
    const int a = static_cast<int>(op.start_s * scale), b = std::max(a + 1, static_cast<int>(op.end_s * scale));
    const char c = op.kind == PipeOpKind::kForward ? 'F' : op.kind == PipeOpKind::kBackward ? 'B' : 'W';
    for (int x = a; x < b && x < width; ++x) rows[static_cast<size_t>(op.stage)][static_cast<size_t>(x)] = c;
  }
  std::ostringstream o;
  for (int64_t s = 0; s < stages; ++s) o << "rank " << s << (s < 10 ? "  |" : " |") << rows[static_cast<size_t>(s)] << "|\n";
  o << "        F forward  B backward  W weight gradient  . idle\n";
  return o.str();
}

}  // namespace meshplan::sim
