#include "sim/comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <regex>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/spec_json.h"

namespace meshplan::sim {

const std::vector<ComparisonAxis>& ComparisonAxes() {
  static const std::vector<ComparisonAxis> kAxes = {
      {"precision",
       {"precision"},
       {"dtypes", "fp8_scaling", "fp8_param_gather", "fp8_attention", "bf16_layers_at_start", "bf16_layers_at_end",
        "keep_lp_grads"}},
      {"gpus", {"gpus"}, {"dp", "global_batch", "hsdp_shard_size"}},
      {"micro_batch", {"micro_batch"}, {"global_batch"}},
      {"seq_len", {"seq_len"}, {"global_batch", "micro_batch"}},
      {"recompute", {"recompute", "recompute_modules", "recompute_layers"}, {"recompute_early_stop"}},
      {"ep_overlap", {"ep_overlap"}, {}},
      {"layout",
       {"tp", "pp", "cp", "ep"},
       {"dp", "etp", "vpp", "schedule", "sequence_parallel", "micro_batch", "global_batch", "placement"}},
  };
  return kAxes;
}

std::string ComparisonTableOf(const std::string& table) {
  static const std::regex kLine(R"((^|, )line [0-9]+: )");
  static const std::regex kPrecision(R"(\b(bf16|fp16|fp8|mxfp8|nvfp4)(-[a-z]+)?\b)", std::regex::icase);
  std::string t = std::regex_replace(table, kLine, "$1");
  t = std::regex_replace(t, kPrecision, "");
  return t;
}

namespace {

using Json = nlohmann::json;

// A scenario's fields as JSON pointers ("/tp", "/dtypes/grads", "/model/layers"), the model's
// max_seq and free-text source left out: two runs of one architecture at different sequence
// lengths, or built from their records' printed dimensions, are the same model.
std::map<std::string, Json> FieldsOf(const core::Scenario& s) {
  core::PlanFile f;
  f.plan = s.plan;
  f.model = s.model;
  f.gpu = s.gpu;
  f.cluster = s.cluster;
  std::map<std::string, Json> out;
  const Json flat = Json::parse(core::PlanFileToJson(f)).flatten();
  for (const auto& [key, value] : flat.items()) {
    if (key == "/model/max_seq" || key == "/model/source") continue;
    out.emplace(key, value);
  }
  return out;
}

// Whether pointer `key` is plan field `name` or inside it ("/dtypes/grads" is in "dtypes").
bool IsField(const std::string& key, std::string_view name) {
  if (key.size() < name.size() + 1 || key[0] != '/' || key.compare(1, name.size(), name) != 0) return false;
  return key.size() == name.size() + 1 || key[name.size() + 1] == '/';
}

bool InAny(const std::string& key, const std::vector<std::string_view>& names) {
  return std::any_of(names.begin(), names.end(), [&](std::string_view n) { return IsField(key, n); });
}

std::string Text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The values of `axis`'s varied fields, in its order (a missing field as null; a list, flattened
// into one pointer per element, as the array of its elements: recompute_modules).
std::vector<Json> VariedValues(const std::map<std::string, Json>& fields, const ComparisonAxis& axis) {
  std::vector<Json> out;
  for (std::string_view name : axis.varied) {
    std::string key(1, '/');
    key.append(name);
    auto it = fields.find(key);
    if (it != fields.end()) {
      out.push_back(it->second);
      continue;
    }
    Json list = Json::array();
    for (auto e = fields.lower_bound(key + "/"); e != fields.end() && e->first.rfind(key + "/", 0) == 0; ++e)
      list.push_back(e->second);
    out.push_back(list.empty() ? Json() : list);
  }
  return out;
}

}  // namespace

ComparisonSummary ComparePairs(const std::vector<ComparisonInput>& in) {
  ComparisonSummary out;
  std::vector<std::map<std::string, Json>> fields;
  std::vector<std::string> prefix;  // dataset, stack and table: what every pair shares
  for (const ComparisonInput& c : in) {
    fields.push_back(FieldsOf(*c.scenario));
    std::string dataset;
    for (const auto& [dim, value] : c.record->groups)
      if (dim == "dataset") dataset = value;
    prefix.push_back(dataset + "\n" + c.record->stack + "\n" + ComparisonTableOf(c.table) + "\n");
  }
  std::vector<double> all_errors;
  for (const ComparisonAxis& axis : ComparisonAxes()) {
    std::vector<std::string_view> allowed = axis.varied;
    allowed.insert(allowed.end(), axis.companions.begin(), axis.companions.end());
    // Runs alike but for this axis: the same prefix and every other field equal.
    std::map<std::string, std::vector<size_t>> alike;
    for (size_t i = 0; i < in.size(); ++i) {
      std::string key = prefix[i];
      for (const auto& [k, v] : fields[i])
        if (!InAny(k, allowed)) key += k + "=" + v.dump() + "\n";
      alike[key].push_back(i);
    }
    std::vector<double> errors;
    for (auto& [key, members] : alike) {
      if (members.size() < 2) continue;
      std::vector<std::pair<std::vector<Json>, size_t>> sorted;
      for (size_t i : members) sorted.emplace_back(VariedValues(fields[i], axis), i);
      std::sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first < b.first;
        return in[a.second].record->id < in[b.second].record->id;
      });
      for (size_t j = 1; j < sorted.size(); ++j) {
        const auto& [va, a] = sorted[j - 1];
        const auto& [vb, b] = sorted[j];
        if (va == vb) continue;
        const ValidationRecord& ra = *in[a].record;
        const ValidationRecord& rb = *in[b].record;
        ComparisonRecord r;
        r.axis = std::string(axis.name);
        r.first = ra.id;
        r.second = rb.id;
        for (size_t f = 0; f < axis.varied.size(); ++f) {
          if (va[f] == vb[f]) continue;
          if (!r.change.empty()) r.change += ", ";
          r.change += std::string(axis.varied[f]) + " " + Text(va[f]) + " -> " + Text(vb[f]);
        }
        r.published_ratio = rb.published / ra.published;
        r.predicted_ratio = rb.predicted / ra.predicted;
        r.error = r.predicted_ratio / r.published_ratio - 1;
        errors.push_back(r.error);
        out.pairs.push_back(std::move(r));
      }
    }
    if (errors.empty()) continue;
    all_errors.insert(all_errors.end(), errors.begin(), errors.end());
    out.axes.push_back({"axis", std::string(axis.name), SummarizeErrors(std::move(errors))});
  }
  out.all = SummarizeErrors(std::move(all_errors));
  return out;
}

namespace {

// Least squares y = t x + F; false when every x is the same.
bool FitLine(const std::vector<double>& x, const std::vector<double>& y, double* t, double* f) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  if (!(sxx > 0)) return false;
  *t = sxy / sxx;
  *f = my - *t * mx;
  return true;
}

}  // namespace

StepSplitSummary SplitSteps(const std::vector<ComparisonInput>& in) {
  StepSplitSummary out;
  const ComparisonAxis* gpus_axis = nullptr;
  for (const ComparisonAxis& axis : ComparisonAxes())
    if (axis.name == "gpus") gpus_axis = &axis;
  std::vector<std::string_view> allowed = gpus_axis->varied;
  allowed.insert(allowed.end(), gpus_axis->companions.begin(), gpus_axis->companions.end());
  std::map<std::string, std::vector<size_t>> alike;
  std::vector<const std::vector<size_t>*> order;  // the series by their first run
  for (size_t i = 0; i < in.size(); ++i) {
    const ValidationRecord& r = *in[i].record;
    const core::PlanSpec& p = in[i].scenario->plan;
    if (!std::isfinite(r.published) || r.published <= 0 || !(r.predicted > 0) || p.gpus <= 0 || p.seq_len <= 0 ||
        p.dp <= 0 || p.micro_batch <= 0 || p.global_batch % (p.dp * p.micro_batch) != 0)
      continue;
    std::string key;
    for (const auto& [dim, value] : r.groups)
      if (dim == "dataset") key = value;
    key += "\n" + r.stack + "\n";
    for (const auto& [k, v] : FieldsOf(*in[i].scenario))
      if (!InAny(k, allowed)) key += k + "=" + v.dump() + "\n";
    auto [it, fresh] = alike.try_emplace(std::move(key));
    it->second.push_back(i);
    if (fresh) order.push_back(&it->second);
  }
  std::vector<double> t_errors, f_gaps;
  for (const std::vector<size_t>* members : order) {
    if (members->size() < 3) continue;
    struct Run {
      int64_t m;
      size_t i;
    };
    std::vector<Run> runs;
    for (size_t i : *members) {
      const core::PlanSpec& p = in[i].scenario->plan;
      runs.push_back({p.global_batch / (p.dp * p.micro_batch), i});
    }
    std::sort(runs.begin(), runs.end(), [&](const Run& a, const Run& b) {
      if (a.m != b.m) return a.m > b.m;
      return in[a.i].record->id < in[b.i].record->id;
    });
    // A series, not a repeat: its microbatch counts span a factor of 2 or more.
    if (runs.front().m < 2 * runs.back().m) continue;
    StepSplitSeries g;
    std::vector<double> x;
    for (const Run& run : runs) {
      const ValidationRecord& r = *in[run.i].record;
      const core::PlanSpec& p = in[run.i].scenario->plan;
      const double tokens = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len);
      const double gpus = static_cast<double>(p.gpus);
      g.ids.push_back(r.id);
      g.microbatches.push_back(run.m);
      g.published_step_s.push_back(tokens / (r.published * gpus));
      g.predicted_step_s.push_back(tokens / (r.predicted * gpus));
      x.push_back(static_cast<double>(run.m));
    }
    if (!FitLine(x, g.published_step_s, &g.published_t, &g.published_f) ||
        !FitLine(x, g.predicted_step_s, &g.predicted_t, &g.predicted_f) || !(g.published_t > 0))
      continue;
    for (size_t k = 0; k < x.size(); ++k)
      g.published_residual =
          std::max(g.published_residual,
                   std::abs(g.published_step_s[k] - (g.published_t * x[k] + g.published_f)) / g.published_step_s[k]);
    t_errors.push_back(g.predicted_t / g.published_t - 1);
    f_gaps.push_back(g.predicted_f - g.published_f);
    out.runs += g.ids.size();
    out.series.push_back(std::move(g));
  }
  out.t = SummarizeErrors(std::move(t_errors));
  std::sort(f_gaps.begin(), f_gaps.end());
  out.median_f_gap_s = Quantile(f_gaps, 0.5);
  return out;
}

RepeatSummary FindRepeats(const std::vector<ComparisonInput>& in) {
  RepeatSummary out;
  std::map<std::string, std::vector<size_t>> same;
  std::vector<const std::vector<size_t>*> order;  // the groups by their first run
  for (size_t i = 0; i < in.size(); ++i) {
    const ValidationRecord& r = *in[i].record;
    if (!std::isfinite(r.published) || r.published <= 0) continue;
    // The prediction to nine digits: one scenario gives one number; a record whose comparison
    // rule picks another (a memory record's stage) is not the same prediction.
    char predicted[32];
    std::snprintf(predicted, sizeof predicted, "%.9g", r.predicted);
    std::string key = predicted;
    key += "\n";
    for (const auto& [dim, value] : r.groups)
      if (dim != "dataset" && dim != "stack") key += dim + "=" + value + "\n";
    for (const auto& [k, v] : FieldsOf(*in[i].scenario)) key += k + "=" + v.dump() + "\n";
    auto [it, fresh] = same.try_emplace(std::move(key));
    it->second.push_back(i);
    if (fresh) order.push_back(&it->second);
  }
  for (const std::vector<size_t>* members : order) {
    if (members->size() < 2) continue;
    RepeatGroup g;
    g.predicted = in[members->front()].record->predicted;
    g.published_min = g.published_max = in[members->front()].record->published;
    for (size_t i : *members) {
      const ValidationRecord& r = *in[i].record;
      g.ids.push_back(r.id);
      g.published_min = std::min(g.published_min, r.published);
      g.published_max = std::max(g.published_max, r.published);
    }
    g.spread = g.published_max / g.published_min - 1;
    g.floor = (g.published_max - g.published_min) / (g.published_max + g.published_min);
    out.runs += members->size();
    out.groups.push_back(std::move(g));
  }
  std::stable_sort(out.groups.begin(), out.groups.end(),
                   [](const RepeatGroup& a, const RepeatGroup& b) { return a.spread > b.spread; });
  std::vector<double> spreads, floors;
  for (const RepeatGroup& g : out.groups) spreads.push_back(g.spread), floors.push_back(g.floor);
  out.spread = SummarizeErrors(std::move(spreads));
  out.floor = SummarizeErrors(std::move(floors));
  return out;
}

namespace {

// What validate judged, as the pairing and the repeats read it: ValidateRuns' records in `runs`'
// order, or ValidateMemory's (the records with a measured peak, in `records`' order).
std::vector<ComparisonInput> InputsOf(const std::vector<core::PublishedRun>& runs, const ValidationSummary& v) {
  std::vector<ComparisonInput> in;
  for (size_t i = 0; i < runs.size() && i < v.records.size(); ++i)
    in.push_back({&v.records[i], &runs[i].scenario, runs[i].table});
  return in;
}
std::vector<ComparisonInput> InputsOf(const std::vector<core::PublishedMemory>& records, const ValidationSummary& v) {
  std::vector<ComparisonInput> in;
  for (const core::PublishedMemory& r : records)
    if (r.outcome == core::PublishedMemory::Outcome::kPeak && in.size() < v.records.size())
      in.push_back({&v.records[in.size()], &r.scenario, r.table});
  return in;
}

}  // namespace

RepeatSummary RepeatedRuns(const std::vector<core::PublishedRun>& runs, const ValidationSummary& v) {
  return FindRepeats(InputsOf(runs, v));
}

RepeatSummary RepeatedPeaks(const std::vector<core::PublishedMemory>& records, const ValidationSummary& v) {
  return FindRepeats(InputsOf(records, v));
}

StepSplitSummary SplitRunSteps(const std::vector<core::PublishedRun>& runs, const ValidationSummary& v) {
  return SplitSteps(InputsOf(runs, v));
}

ComparisonSummary CompareRuns(const std::vector<core::PublishedRun>& runs, const ValidationSummary& v) {
  return ComparePairs(InputsOf(runs, v));
}

ComparisonSummary ComparePeaks(const std::vector<core::PublishedMemory>& records, const ValidationSummary& v) {
  return ComparePairs(InputsOf(records, v));
}

}  // namespace meshplan::sim
