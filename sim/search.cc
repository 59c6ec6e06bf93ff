#include "sim/search.h"

#include "core/defaults.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <system_error>
#include <thread>

#include "core/defaults.h"
#include "core/diagnostics.h"
#include "core/params.h"
#include "core/validate.h"

namespace meshplan::sim {

using core::CpKind;
using core::PlanSpec;
using core::Recompute;
using core::Schedule;

const char* Name(Objective o) {
  switch (o) {
    case Objective::kThroughput: return "throughput";
    case Objective::kTime: return "time";
    case Objective::kCost: return "cost";
  }
  return "throughput";
}

bool FromName(const std::string& text, Objective* out) {
  for (Objective o : {Objective::kThroughput, Objective::kTime, Objective::kCost}) {
    if (text == Name(o)) {
      *out = o;
      return true;
    }
  }
  return false;
}

namespace {

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    out.push_back(d);
    if (d != n / d) out.push_back(n / d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Allowed(const std::vector<int64_t>& list, int64_t v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

// Recompute modes from the lightest in memory to the heaviest: full keeps one checkpoint per
// layer, selective drops the attention scores, none keeps everything.
int RecomputeOrder(Recompute r) {
  switch (r) {
    case Recompute::kFull: return 0;
    case Recompute::kSelective: return 1;
    case Recompute::kNone: return 2;
  }
  return 2;
}

// The part of a plan the search fixes before its inner loops: degrees, layer split, micro batch.
struct Outer {
  int64_t tp = 1, cp = 1, pp = 1, dp = 1, ep = 1, vpp = 1, mbs = 1;
  CpKind cp_kind = CpKind::kRing;
  const std::vector<int64_t>* split = nullptr;  // into Searcher::splits_; empty: even
  // Parameters of an average pipeline rank (before ZeRO), for the model-state lower bound.
  double dense_params_avg = 0, expert_params_avg = 0;
};

// A total order on costed plans: objective, then memory, then the simpler plan. Identical knobs
// give identical numbers, so the order (and the search's answer) does not depend on threads.
using Knobs = std::array<int64_t, 12>;
Knobs KnobsOf(const PlanSpec& p) {
  // Simpler first: lower degrees, less ZeRO, less recompute (none < selective < full).
  const int64_t recompute = 2 - RecomputeOrder(p.recompute);
  return {p.tp,
          p.pp,
          p.cp,
          p.ep,
          p.vpp,
          static_cast<int64_t>(p.zero),
          recompute,
          p.sequence_parallel ? 0 : 1,
          p.micro_batch,
          static_cast<int64_t>(p.schedule),
          static_cast<int64_t>(p.cp_kind),
          p.dp};
}
struct Key {
  double score;
  int64_t bytes;
  Knobs knobs;
  bool operator<(const Key& o) const {
    if (score != o.score) return score < o.score;
    if (bytes != o.bytes) return bytes < o.bytes;
    return knobs < o.knobs;
  }
};
Key KeyOf(const RankedPlan& r) { return {r.score, r.per_gpu_bytes, KnobsOf(r.plan)}; }

double Score(Objective o, const StepEstimate& s, const TrainEstimate& t) {
  switch (o) {
    case Objective::kThroughput: return -s.tokens_per_s;
    case Objective::kTime: return t.days;
    case Objective::kCost: return t.cost_usd;
  }
  return -s.tokens_per_s;
}

// a dominates b: at least as good on tokens/s, memory and cost, better on one; equal numbers
// fall back to the total order so that exactly one of two equal plans survives.
bool Dominates(const RankedPlan& a, const RankedPlan& b) {
  const double ta = a.step.tokens_per_s, tb = b.step.tokens_per_s;
  const double ca = a.train.cost_usd, cb = b.train.cost_usd;
  if (ta < tb || a.per_gpu_bytes > b.per_gpu_bytes || ca > cb) return false;
  if (ta > tb || a.per_gpu_bytes < b.per_gpu_bytes || ca < cb) return true;
  return KeyOf(a) < KeyOf(b);
}

// (Takes the record: a caller that keeps no copy moves it in.)
void OfferPareto(std::vector<RankedPlan>* front, RankedPlan&& r) {
  for (const RankedPlan& f : *front)
    if (Dominates(f, r)) return;
  front->erase(std::remove_if(front->begin(), front->end(), [&](const RankedPlan& f) { return Dominates(r, f); }),
               front->end());
  front->push_back(std::move(r));
}

// Would a plan with these numbers enter the Pareto front? (Checked before building the record.)
bool ParetoCandidate(const std::vector<RankedPlan>& front, double tps, int64_t bytes, double cost) {
  for (const RankedPlan& f : front) {
    if (f.step.tokens_per_s > tps && f.per_gpu_bytes <= bytes && f.train.cost_usd <= cost) return false;
    if (f.step.tokens_per_s >= tps && f.per_gpu_bytes < bytes && f.train.cost_usd <= cost) return false;
    if (f.step.tokens_per_s >= tps && f.per_gpu_bytes <= bytes && f.train.cost_usd < cost) return false;
  }
  return true;
}

// Per-worker results, merged at the end. Each worker writes its stats and its memory report for
// every candidate, and the workers' Locals sit side by side in one vector: aligned to 128 bytes (two
// cache lines, the adjacent-line prefetcher's pair), one worker's report never shares a line with the
// next one's counters (without it the two-thread 405B search ran about 10% slower, docs/search.md).
struct alignas(128) Local {
  SearchStats stats;
  std::vector<RankedPlan> heap;  // top-k, worst on top (a max-heap under Key order)
  std::vector<RankedPlan> front;
  std::optional<RankedPlan> lightest;
  std::vector<std::string> invalid_examples;
  // The worker's costed op lists, shared by its plans that differ only in pipeline shape.
  std::shared_ptr<StepCostCache> step_cache = std::make_shared<StepCostCache>();
  core::MemoryReport mem;  // each candidate's memory estimate, refilled (its stages keep their capacity)
};

bool HeapLess(const RankedPlan& a, const RankedPlan& b) { return KeyOf(a) < KeyOf(b); }

void OfferTop(std::vector<RankedPlan>* heap, size_t k, RankedPlan&& r) {
  if (k == 0) return;
  if (heap->size() < k) {
    heap->push_back(std::move(r));
    std::push_heap(heap->begin(), heap->end(), HeapLess);
    return;
  }
  if (!(KeyOf(r) < KeyOf(heap->front()))) return;
  std::pop_heap(heap->begin(), heap->end(), HeapLess);
  heap->back() = std::move(r);
  std::push_heap(heap->begin(), heap->end(), HeapLess);
}

class Searcher {
 public:
  Searcher(const core::ModelSpec& m, const core::GpuSpec& g, const core::ClusterSpec& c, const PlanSpec& base,
           const core::Profile& prof, const SearchOptions& o)
      : m_(m),
        g_(g),
        c_(c),
        base_(base),
        prof_(prof),
        o_(o),
        early_stop_(base.recompute_early_stop && core::RecomputeEarlyStopBlocker(m, base) == nullptr) {
    params_ = core::CountParams(m);
    moe_layers_ = m.moe ? m.MoeLayerCount() : 0;
    budget_ = MemoryBudgetBytes(o, g);
    tokens_ = o.tokens > 0 ? o.tokens : core::DefaultTrainingTokens(params_.total);
    fixed_bytes_ = core::CudaContextBytes(base, prof.memory) + prof.memory.cublas_workspace_bytes;
    offload_ =
        base.offload_optimizer != core::OffloadTarget::kNone || base.offload_params != core::OffloadTarget::kNone;
    for (Recompute r : o.recompute) recompute_.push_back(r);
    std::sort(recompute_.begin(), recompute_.end(),
              [](Recompute a, Recompute b) { return RecomputeOrder(a) < RecomputeOrder(b); });
    recompute_.erase(std::unique(recompute_.begin(), recompute_.end()), recompute_.end());
    Enumerate();
  }

  double tokens() const { return tokens_; }
  size_t items() const { return outer_.size(); }

  // Runs blocks of `grain` consecutive outer items, [next, next + grain), until none is left.
  // Called by each worker thread. Neighbouring items share tp, cp and pp, so a block reuses its
  // worker's costed lists instead of costing them again in another worker.
  // `between_blocks`, if set, runs after each block (the calling thread reports progress there).
  void Work(Local* local, std::atomic<size_t>* next, std::atomic<size_t>* done, size_t grain,
            const std::function<void()>& between_blocks = {}) const {
    PlanSpec p = base_;
    p.sharding = core::Sharding::kFsdp;
    p.hsdp_shard_size = 0;
    p.etp = 1;
    p.recompute_layers = 0;
    for (size_t b = next->fetch_add(grain); b < outer_.size(); b = next->fetch_add(grain)) {
      const size_t end = std::min(outer_.size(), b + grain);
      for (size_t i = b; i < end; ++i) RunOuter(outer_[i], &p, local);
      done->fetch_add(end - b, std::memory_order_relaxed);
      if (between_blocks) between_blocks();
    }
    // The plans this worker kept were ranked on totals-only estimates: each gets its per-stage
    // times here, from the same cache (the same numbers), while the other workers still run.
    for (auto* list : {&local->heap, &local->front})
      for (RankedPlan& r : *list) r.step = EstimateStep(m_, r.plan, g_, c_, prof_, local->step_cache.get());
    local->stats.lists_costed = local->step_cache->misses();
    local->step_cache.reset();  // freed by its own thread, not serially after the search
  }

 private:
  void Enumerate() {
    const int64_t n = base_.gpus;
    const int64_t seq = base_.seq_len;
    const std::vector<int64_t> divs = Divisors(n);
    // The default split of each chunk count (pp x vpp <= layers), found once for every tp and cp.
    // (Kept in splits_, which the items point into: sized once, never reallocated.)
    splits_.assign(static_cast<size_t>(m_.layers) + 1, std::nullopt);
    std::vector<bool> split_found(static_cast<size_t>(m_.layers) + 1, false);
    auto split_of = [&](int64_t chunks) -> const std::optional<std::vector<int64_t>>& {
      const auto i = static_cast<size_t>(chunks);
      if (!split_found[i]) {
        splits_[i] = core::DefaultStageSplit(m_, chunks);
        split_found[i] = true;
      }
      return splits_[i];
    };
    for (int64_t tp : divs) {
      if (!Allowed(o_.tp, tp)) continue;
      if (o_.tp.empty() && tp > c_.scale_up_domain_gpus) continue;
      if (m_.heads % tp != 0) continue;
      if (m_.kv_heads % tp != 0 && tp % m_.kv_heads != 0) continue;
      if (m_.ffn_hidden > 0 && m_.ffn_hidden % tp != 0) continue;
      for (int64_t cp : divs) {
        if ((n / tp) % cp != 0 || !Allowed(o_.cp, cp)) continue;
        if (o_.cp.empty() && cp > 1 && seq / cp < o_.min_tokens_per_cp_rank) continue;
        const std::vector<CpKind> kinds = o_.cp_kinds.empty() ? std::vector<CpKind>{CpKind::kRing} : o_.cp_kinds;
        for (CpKind kind : kinds) {
          if (cp == 1 && kind != kinds.front()) continue;  // the kind only matters with cp > 1
          const CpKind cp_kind = cp == 1 ? base_.cp_kind : kind;
          if (cp > 1) {
            if (seq % core::CpSequenceChunks(cp_kind, cp) != 0) continue;
            if (cp_kind == CpKind::kUlysses && m_.heads % (tp * cp) != 0) continue;
          }
          for (int64_t pp : divs) {
            if ((n / (tp * cp)) % pp != 0 || pp > m_.layers || !Allowed(o_.pp, pp)) continue;
            const int64_t dp = n / (tp * cp * pp);
            if (base_.global_batch % dp != 0) continue;
            const int64_t per_replica = base_.global_batch / dp;  // sequences per DP rank per step
            const std::vector<int64_t> mbs_divs = Divisors(per_replica);
            for (int64_t vpp = 1; pp * vpp <= m_.layers; ++vpp) {
              if (vpp > 1 && pp < 2) break;
              if (!Allowed(o_.vpp, vpp)) continue;
              const auto& split = split_of(pp * vpp);
              if (!split) continue;
              if (!split->empty() && !o_.uneven_splits) continue;
              for (int64_t ep = 1; ep <= (m_.moe ? m_.moe->experts : 1); ++ep) {
                if (m_.moe && m_.moe->experts % ep != 0) continue;
                if ((tp * cp * dp) % ep != 0 || !Allowed(o_.ep, ep)) continue;
                Outer proto;  // every micro batch's item but for mbs
                proto.tp = tp;
                proto.cp = cp;
                proto.cp_kind = cp_kind;
                proto.pp = pp;
                proto.dp = dp;
                proto.vpp = vpp;
                proto.ep = ep;
                FillParams(&proto);
                for (int64_t mbs : mbs_divs) {
                  if (!Allowed(o_.mbs, mbs)) continue;
                  if (o_.mbs.empty() && mbs > o_.max_mbs) continue;
                  Outer& out = outer_.emplace_back(proto);
                  out.mbs = mbs;
                  out.split = &*split;
                }
              }
            }
          }
        }
      }
    }
  }

  // Parameters an average pipeline rank holds: every layer's TP/EP-local parameters over pp.
  // The worst rank holds at least this much (plus embeddings and head), so its model states are
  // a lower bound on EstimateMemory's per-GPU bytes.
  void FillParams(Outer* out) const {
    PlanSpec p = base_;
    p.tp = out->tp;
    p.ep = out->ep;
    p.etp = 1;
    const core::RankParams dense = core::LayerParamsOnRank(m_, p, params_.dense_layer);
    const core::RankParams moe = core::LayerParamsOnRank(m_, p, params_.moe_layer);
    const double n_dense = static_cast<double>(m_.layers - moe_layers_), n_moe = static_cast<double>(moe_layers_);
    const double pp = static_cast<double>(out->pp);
    out->dense_params_avg = (n_dense * static_cast<double>(dense.dense) + n_moe * static_cast<double>(moe.dense)) / pp;
    out->expert_params_avg = n_moe * static_cast<double>(moe.expert) / pp;
  }

  bool ScheduleFits(Schedule s, const Outer& o, int64_t microbatches) const {
    if (o.pp == 1) return s == Schedule::k1F1B;  // one stage: the schedule is moot
    if (o.vpp > 1) return s == Schedule::kInterleaved && microbatches % o.pp == 0;
    switch (s) {
      case Schedule::kGpipe:
      case Schedule::k1F1B: return true;
      case Schedule::kInterleaved: return false;
      case Schedule::kZeroBubble: return microbatches >= o.pp;
      case Schedule::kDualPipe: return o.pp % 2 == 0 && microbatches >= 2 * o.pp;
    }
    return false;
  }

  void RunOuter(const Outer& o, PlanSpec* pp, Local* local) const {
    PlanSpec& p = *pp;
    p.tp = o.tp;
    p.cp = o.cp;
    p.cp_kind = o.cp_kind;
    p.pp = o.pp;
    p.dp = o.dp;
    p.ep = o.ep;
    p.vpp = o.vpp;
    p.micro_batch = o.mbs;
    p.stage_layers = *o.split;  // into the plan's capacity
    const int64_t microbatches = base_.global_batch / (o.mbs * o.dp);
    const int64_t dense_group = o.dp * o.cp;
    const int64_t expert_group = o.tp * o.cp * o.dp / o.ep;
    const bool shardable = dense_group > 1 || (m_.moe && expert_group > 1);
    // pp == 1 runs only 1F1B; make sure it is tried even when the user's list lacks it.
    static constexpr Schedule kOneFOneB[] = {Schedule::k1F1B};
    const std::span<const Schedule> schedules =
        o.pp == 1 ? std::span<const Schedule>(kOneFOneB) : std::span<const Schedule>(o_.schedules);
    // SP only exists with tp > 1 (and needs seq/cp divisible by tp); tp == 1 runs without it.
    // (At most the two values, in the user's order: no allocation per item.)
    std::array<bool, 2> sps{};
    size_t n_sps = 0;
    if (o.tp == 1) {
      sps[n_sps++] = false;
    } else {
      for (bool sp : o_.sequence_parallel)
        if ((!sp || (base_.seq_len / o.cp) % o.tp == 0) && n_sps < sps.size()) sps[n_sps++] = sp;
    }
    for (Schedule s : schedules) {
      if (!ScheduleFits(s, o, microbatches)) continue;
      p.schedule = s;
      for (size_t i_sp = 0; i_sp < n_sps; ++i_sp) {
        const bool sp = sps[i_sp];
        p.sequence_parallel = sp;
        for (int zero : o_.zero) {
          if (zero > 0 && !shardable) continue;  // nothing to shard over: the same plan as ZeRO-0
          p.zero = zero;
          // The base plan's FP8 parameter gather rides on the candidates whose distributed
          // optimizer gathers (ZeRO 1 and 2, under fp8); the others run without it rather than
          // being refused for it.
          p.fp8_param_gather = base_.fp8_param_gather && p.Fp8ParamGatherApplies();
          RunRecompute(o, dense_group, expert_group, &p, local);
        }
      }
    }
  }

  void RunRecompute(const Outer& o, int64_t dense_group, int64_t expert_group, PlanSpec* pp, Local* local) const {
    PlanSpec& p = *pp;
    SearchStats& st = local->stats;
    const int64_t n = static_cast<int64_t>(recompute_.size());
    st.enumerated += n;
    if (o_.prune && !offload_) {
      // Closed-form lower bound: an average rank's model states plus the fixed overheads.
      const double states = core::ShardedModelStates(o.dense_params_avg, p, dense_group).Total() +
                            core::ShardedModelStates(o.expert_params_avg, p, expert_group).Total();
      if (states + static_cast<double>(fixed_bytes_) > static_cast<double>(budget_) + 1024.0) {
        st.pruned_bound += n;
        return;
      }
    }
    bool lighter_failed = false;
    // No check of ValidatePlan reads the recompute mode while recompute_layers is 0 (Work() sets
    // it so), but activation offloading's (no recomputation with offloaded activations) and
    // checkpoint offloading's (full recomputation) and fine-grained offloading's (no full
    // recomputation): the first variant's verdict serves them all unless the base plan offloads.
    const bool per_mode = p.offload_activation_layers > 0 || p.offload_checkpoints || p.offload_modules != 0;
    std::optional<bool> valid;
    for (Recompute r : recompute_) {
      if (o_.prune && lighter_failed) {
        // Memory only grows from full to selective to none recompute (docs/search.md), so a plan
        // whose lighter variant did not fit cannot fit either.
        ++st.pruned_monotone;
        continue;
      }
      p.recompute = r;
      // PyTorch's checkpoint early stop (PlanSpec::recompute_early_stop) as the base plan says it,
      // on full recomputation only; it skips nothing, and is refused, for the same model and
      // precision whatever the mode, so the first mode's verdict still serves them all.
      p.recompute_early_stop = early_stop_ && r == Recompute::kFull;
      if (!valid || per_mode) {
        core::Diagnostics d;
        d.set_errors_only(true);  // a candidate's warnings are never shown
        core::ValidatePlan(p, m_, g_, c_, &d);
        valid = !d.has_errors();
        if (!*valid && local->invalid_examples.size() < 4)
          local->invalid_examples.push_back(d.errors().front().ToString());
      }
      if (!*valid) {
        ++st.invalid;
        continue;
      }
      core::EstimateMemory(m_, p, g_, prof_.memory, core::MemoryDetail::kTotalsOnly, &params_, &local->mem);
      core::MemoryReport& mem = local->mem;
      ++st.memory_estimates;
      const bool tight = mem.per_gpu_bytes > budget_ && mem.least_per_gpu_bytes <= budget_;
      st.tight += tight ? 1 : 0;
      if (mem.per_gpu_bytes > budget_ && !(tight && o_.allow_tight)) {
        ++st.out_of_memory;
        lighter_failed = true;
        if (!local->lightest || mem.per_gpu_bytes < local->lightest->per_gpu_bytes ||
            (mem.per_gpu_bytes == local->lightest->per_gpu_bytes && KnobsOf(p) < KnobsOf(local->lightest->plan))) {
          RankedPlan lr;
          lr.plan = p;
          lr.per_gpu_bytes = mem.per_gpu_bytes;
          lr.capacity_bytes = mem.capacity_bytes;
          lr.worst_stage = std::move(mem.stages.front());
          local->lightest = std::move(lr);
        }
        continue;
      }
      StepEstimate step = EstimateStep(m_, p, g_, c_, prof_, local->step_cache.get(), StepDetail::kTotalsOnly);
      TrainEstimate train = EstimateTraining(step, p, g_, c_, tokens_);
      ++st.evaluated;
      const double score = Score(o_.objective, step, train);
      const Key key{score, mem.per_gpu_bytes, KnobsOf(p)};
      const bool top = static_cast<int64_t>(local->heap.size()) < o_.top_k ||
                       (!local->heap.empty() && key < KeyOf(local->heap.front()));
      const bool front = ParetoCandidate(local->front, step.tokens_per_s, mem.per_gpu_bytes, train.cost_usd);
      if (!top && !front) continue;
      RankedPlan rp;  // its per-stage times are filled in when the worker is done (Work)
      rp.plan = p;
      rp.per_gpu_bytes = mem.per_gpu_bytes;
      rp.capacity_bytes = mem.capacity_bytes;
      rp.tight = tight;
      rp.worst_stage = std::move(mem.stages.front());
      rp.step = std::move(step);
      rp.train = train;
      rp.score = score;
      if (front) OfferPareto(&local->front, top ? RankedPlan(rp) : std::move(rp));
      if (top) OfferTop(&local->heap, static_cast<size_t>(o_.top_k), std::move(rp));
    }
  }

  const core::ModelSpec& m_;
  const core::GpuSpec& g_;
  const core::ClusterSpec& c_;
  const PlanSpec& base_;
  const core::Profile& prof_;
  const SearchOptions& o_;
  // The base plan's checkpoint early stop where it skips something (RecomputeEarlyStopBlocker).
  const bool early_stop_;
  core::ParamCount params_;
  int64_t moe_layers_ = 0;
  int64_t budget_ = 0;
  int64_t fixed_bytes_ = 0;
  bool offload_ = false;
  double tokens_ = 0;
  std::vector<Recompute> recompute_;
  std::vector<std::optional<std::vector<int64_t>>> splits_;  // by chunk count (Enumerate)
  std::vector<Outer> outer_;
};

void Merge(Local&& from, Local* into, size_t top_k) {
  SearchStats& a = into->stats;
  const SearchStats& b = from.stats;
  a.enumerated += b.enumerated;
  a.pruned_bound += b.pruned_bound;
  a.pruned_monotone += b.pruned_monotone;
  a.invalid += b.invalid;
  a.memory_estimates += b.memory_estimates;
  a.out_of_memory += b.out_of_memory;
  a.tight += b.tight;
  a.evaluated += b.evaluated;
  a.lists_costed += b.lists_costed;
  for (RankedPlan& r : from.heap) OfferTop(&into->heap, top_k, std::move(r));
  for (RankedPlan& r : from.front) OfferPareto(&into->front, std::move(r));
  if (from.lightest && (!into->lightest || from.lightest->per_gpu_bytes < into->lightest->per_gpu_bytes ||
                        (from.lightest->per_gpu_bytes == into->lightest->per_gpu_bytes &&
                         KnobsOf(from.lightest->plan) < KnobsOf(into->lightest->plan))))
    into->lightest = std::move(from.lightest);
  for (auto& s : from.invalid_examples)
    if (into->invalid_examples.size() < 4) into->invalid_examples.push_back(std::move(s));
}

}  // namespace

SearchResult SearchPlans(const core::ModelSpec& m, const core::GpuSpec& g, const core::ClusterSpec& c,
                         const PlanSpec& base, const core::Profile& profile, const SearchOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  SearchResult result;
  if (base.gpus < 1 || base.global_batch < 1 || base.seq_len < 1) return result;
  const Searcher searcher(m, g, c, base, profile, options);
  result.tokens = searcher.tokens();

  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(std::max<size_t>(searcher.items(), 1))));
  std::vector<Local> locals(static_cast<size_t>(threads));
  std::atomic<size_t> next{0}, done{0};
  // Blocks small enough to balance the workers' loads (about 16 per worker).
  const size_t grain = std::max<size_t>(1, searcher.items() / (16 * static_cast<size_t>(threads)));
  std::mutex mu;
  std::condition_variable cv;
  int running = threads - 1;  // started threads still working
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(threads));
  // The calling thread is worker 0 (its malloc arena and the search's code are already warm, and
  // it would only wait); threads - 1 more start.
  for (int t = 1; t < threads; ++t) {
    try {
      workers.emplace_back([&, t] {
        searcher.Work(&locals[static_cast<size_t>(t)], &next, &done, grain);
        std::lock_guard<std::mutex> lock(mu);
        --running;
        cv.notify_all();
      });
    } catch (const std::system_error&) {
      // No thread to be had: the workers that did start, and this thread, take its share.
      std::lock_guard<std::mutex> lock(mu);
      --running;
    }
  }
  // Progress: at most every 100 ms, between this thread's blocks and then while it waits.
  const double total = static_cast<double>(std::max<size_t>(searcher.items(), 1));
  double last_report = 0;
  auto report = [&] {
    if (!options.progress) return;
    const double now = elapsed();
    if (now - last_report < 0.1) return;
    last_report = now;
    options.progress(static_cast<double>(done.load(std::memory_order_relaxed)) / total, now);
  };
  searcher.Work(&locals[0], &next, &done, grain, report);
  {
    std::unique_lock<std::mutex> lock(mu);
    while (running > 0) {
      cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return running == 0; });
      if (running > 0) {
        lock.unlock();
        report();
        lock.lock();
      }
    }
  }
  for (auto& w : workers) w.join();

  Local all;
  const size_t k = static_cast<size_t>(std::max<int64_t>(options.top_k, 0));
  for (Local& l : locals) Merge(std::move(l), &all, k);
  result.stats = all.stats;
  result.stats.threads = 1 + static_cast<int>(workers.size());
  result.top = std::move(all.heap);
  std::sort(result.top.begin(), result.top.end(), HeapLess);
  result.pareto = std::move(all.front);
  std::sort(result.pareto.begin(), result.pareto.end(), [](const RankedPlan& a, const RankedPlan& b) {
    if (a.step.tokens_per_s != b.step.tokens_per_s) return a.step.tokens_per_s > b.step.tokens_per_s;
    return KeyOf(a) < KeyOf(b);
  });
  result.lightest_rejected = std::move(all.lightest);
  result.invalid_examples = std::move(all.invalid_examples);
  result.stats.wall_s = elapsed();
  if (options.progress) options.progress(1.0, result.stats.wall_s);
  return result;
}

namespace {

std::string Gb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

std::string Variant(const PlanSpec& p) {
  std::string s = "tp " + std::to_string(p.tp) + ", pp " + std::to_string(p.pp) + ", dp " + std::to_string(p.dp) +
                  ", cp " + std::to_string(p.cp) + ", zero " + std::to_string(p.zero) + ", recompute " +
                  core::Name(p.recompute) + ", sp " + (p.sequence_parallel ? "on" : "off") + ", mbs " +
                  std::to_string(p.micro_batch) + ", " + core::Name(p.schedule);
  if (p.vpp > 1) s += " vpp " + std::to_string(p.vpp);
  return s;
}

}  // namespace

std::vector<WellKnownVerdict> ExplainWellKnownPlans(const core::ModelSpec& m, const core::GpuSpec& g,
                                                    const core::ClusterSpec& c, const PlanSpec& base,
                                                    const core::Profile& profile, const SearchOptions& options,
                                                    const RankedPlan* winner) {
  // The widest TP the scale-up domain allows that the heads, kv heads, MLP and GPU count accept.
  int64_t t_max = 1;
  for (int64_t t = 1; t <= std::min(c.scale_up_domain_gpus, base.gpus); ++t) {
    if (base.gpus % t == 0 && m.heads % t == 0 && (m.kv_heads % t == 0 || t % m.kv_heads == 0) &&
        (m.ffn_hidden <= 0 || m.ffn_hidden % t == 0))
      t_max = t;
  }
  struct Family {
    std::string name;
    int64_t tp, pp;
    std::vector<int> zero;
  };
  std::vector<Family> families = {
      {"data parallel (DDP, ZeRO-0)", 1, 1, {0}},
      {"data parallel + ZeRO-1/2", 1, 1, {1, 2}},
      {"FSDP (ZeRO-3)", 1, 1, {3}},
  };
  if (t_max > 1) families.push_back({"TP " + std::to_string(t_max) + " (scale-up domain) + DP", t_max, 1, {}});
  for (int64_t pp : {2, 4, 8, 16}) {
    if (t_max * pp > base.gpus) break;
    families.push_back({"TP " + std::to_string(t_max) + " x PP " + std::to_string(pp), t_max, pp, {}});
  }

  std::vector<WellKnownVerdict> out;
  for (const Family& f : families) {
    SearchOptions o = options;
    o.tp = {f.tp};
    o.pp = {f.pp};
    o.cp = {1};
    if (!f.zero.empty()) o.zero = f.zero;
    o.prune = false;  // estimate every variant: the lightest rejected one is the explanation
    o.top_k = 1;
    o.progress = nullptr;
    const SearchResult r = SearchPlans(m, g, c, base, profile, o);
    WellKnownVerdict v;
    v.name = f.name;
    v.tp = f.tp;
    v.pp = f.pp;
    if (!r.top.empty()) {
      v.kind = WellKnownVerdict::Kind::kFits;
      v.best = r.top.front();
      if (winner && winner->step.tokens_per_s > 0)
        v.relative_score = v.best->step.tokens_per_s / winner->step.tokens_per_s;
      v.reasons.push_back("fits; best variant: " + Variant(v.best->plan) + ", " + Gb(v.best->per_gpu_bytes) +
                          " per GPU");
    } else if (r.lightest_rejected) {
      v.kind = WellKnownVerdict::Kind::kOutOfMemory;
      v.lightest = r.lightest_rejected;
      const int64_t budget = MemoryBudgetBytes(options, g);
      const core::StageMemory& s = v.lightest->worst_stage;
      v.reasons.push_back("out of memory: even the lightest variant (" + Variant(v.lightest->plan) + ") needs " +
                          Gb(v.lightest->per_gpu_bytes) + " per GPU (stage " + std::to_string(s.stage) +
                          ": model states " + Gb(s.weights_bytes + s.grads_bytes + s.optimizer_bytes) +
                          ", activations " + Gb(s.activations_bytes) + ", other " + Gb(s.other_bytes) + ") > budget " +
                          Gb(budget));
    } else {
      // Nothing was generated or everything failed validation: let ValidatePlan say why on the
      // family's simplest plan.
      PlanSpec p = base;
      p.tp = f.tp;
      p.pp = f.pp;
      p.cp = 1;
      p.dp = std::max<int64_t>(1, base.gpus / (f.tp * f.pp));
      p.zero = f.zero.empty() ? 1 : f.zero.front();
      p.micro_batch = 1;
      p.vpp = 1;
      p.schedule = Schedule::k1F1B;
      p.sharding = core::Sharding::kFsdp;
      p.hsdp_shard_size = 0;
      if (auto split = core::DefaultStageSplit(m, f.pp)) p.stage_layers = *split;
      core::Diagnostics d;
      core::ValidatePlan(p, m, g, c, &d);
      if (d.has_errors()) {
        v.kind = WellKnownVerdict::Kind::kInvalid;
        for (const auto& e : d.errors()) v.reasons.push_back("invalid: " + e.ToString());
      } else if (!r.invalid_examples.empty()) {
        v.kind = WellKnownVerdict::Kind::kInvalid;
        for (const auto& e : r.invalid_examples) v.reasons.push_back("invalid: " + e);
      } else {
        v.kind = WellKnownVerdict::Kind::kOutsideSearch;
        v.reasons.push_back(
            "no variant in the search space (ZeRO with nothing to shard over, micro batch or "
            "schedule limits): try --mbs/--zero/--schedule");
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace meshplan::sim
