// meshplan explain: whiteboard sizing that shows its derivations (sim/explain.h does the work; this
// file parses flags and renders the steps as text, markdown or JSON).
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/plan_flags.h"
#include "core/failures.h"
#include "core/profile.h"
#include "core/spec_json.h"
#include "core/units.h"
#include "sim/explain.h"
#include "sim/step_model.h"

namespace meshplan::cli {
namespace {

using OJson = nlohmann::ordered_json;

enum class ExplainFormat { kText, kMarkdown, kJson };

// Display width of UTF-8 text: code points, not bytes (the steps use ×, ⇒, ≥, √).
size_t Width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

// Word-wraps `text` to `width` columns: the first line after `first`, the rest after `indent`.
std::string Wrap(const std::string& text, const std::string& first, const std::string& indent, size_t width = 100) {
  std::string out = first, line;
  size_t col = Width(first);
  size_t i = 0;
  bool line_empty = true;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    const std::string word = text.substr(i, j - i);
    i = j + 1;
    if (word.empty()) continue;
    if (!line_empty && col + 1 + Width(word) > width) {
      out += "\n" + indent;
      col = Width(indent);
      line_empty = true;
    }
    if (!line_empty) {
      out += ' ';
      ++col;
    }
    out += word;
    col += Width(word);
    line_empty = false;
  }
  return out + "\n";
}

std::string PlanSummary(const core::PlanSpec& p) {
  std::string s = "tp " + std::to_string(p.tp) + " . pp " + std::to_string(p.pp) + " . dp " + std::to_string(p.dp) +
                  " . cp " + std::to_string(p.cp) + " . ep " + std::to_string(p.ep);
  if (p.vpp > 1) s += " . vpp " + std::to_string(p.vpp);
  s += " | zero " + std::to_string(p.zero) + " | sp " + (p.sequence_parallel ? "on" : "off") + " | recompute " +
       core::Name(p.recompute) + " | mbs " + std::to_string(p.micro_batch) + " | " + core::Name(p.schedule);
  return s;
}

std::string RenderText(const sim::Explanation& ex, const std::vector<std::string>& notes,
                       const std::vector<std::string>& warnings) {
  std::string o = "# meshplan explain: " + ex.title + "\n";
  for (const auto& n : notes) o += "# default: " + n + "\n";
  for (const auto& w : warnings) o += "# " + w + "\n";
  int i = 0;
  for (const auto& st : ex.steps) {
    o += "\n" + std::to_string(++i) + ". " + st.title + "\n";
    o += Wrap(st.rule, "   rule:     ", "             ");
    o += Wrap(st.formula, "   formula:  ", "             ");
    o += Wrap(st.substituted, "   numbers:  ", "             ");
    o += Wrap(st.result, "   result:   ", "             ");
    if (!st.seeds_note.empty()) o += Wrap(st.seeds_note, "   seeds:    ", "             ");
  }
  if (ex.recommended) o += "\nrecommended: " + PlanSummary(ex.recommended->plan) + "\n";
  return o;
}

std::string RenderMarkdown(const sim::Explanation& ex, const std::vector<std::string>& notes,
                           const std::vector<std::string>& warnings) {
  std::string o = "# meshplan explain: " + ex.title + "\n\n";
  for (const auto& n : notes) o += "- default: " + n + "\n";
  for (const auto& w : warnings) o += "- " + w + "\n";
  if (!notes.empty() || !warnings.empty()) o += "\n";
  int i = 0;
  for (const auto& st : ex.steps) {
    o += "## " + std::to_string(++i) + ". " + st.title + "\n\n";
    o += "**Rule.** " + st.rule + "\n\n";
    o += "**Formula.** `" + st.formula + "`\n\n";
    o += "**Numbers.** " + st.substituted + "\n\n";
    o += "**Result.** " + st.result + "\n\n";
    if (!st.seeds_note.empty()) o += "> **The seeds' rule of thumb is wrong here.** " + st.seeds_note + "\n\n";
  }
  if (ex.recommended) o += "**Recommended:** `" + PlanSummary(ex.recommended->plan) + "`\n";
  return o;
}

OJson PlanJson(const core::PlanSpec& p) {
  OJson j = OJson::parse(core::PlanToJson(p));
  j["stage_layers"] = p.stage_layers;  // always, as before (the plan writer omits an even split)
  return j;
}

std::string RenderJson(const sim::Explanation& ex, const char* kind, const std::vector<std::string>& notes,
                       const std::vector<std::string>& warnings) {
  OJson j;
  j["kind"] = kind;
  j["title"] = ex.title;
  j["fits"] = ex.fits;
  if (ex.rules_plan) j["rules_plan"] = PlanJson(*ex.rules_plan);
  if (ex.recommended) {
    OJson r = PlanJson(ex.recommended->plan);
    r["tokens_per_s"] = ex.recommended->step.tokens_per_s;
    r["mfu"] = ex.recommended->step.mfu;
    r["per_gpu_bytes"] = ex.recommended->per_gpu_bytes;
    j["recommended"] = r;
  }
  OJson steps = OJson::array();
  for (const auto& st : ex.steps) {
    OJson s;
    s["id"] = st.id;
    s["title"] = st.title;
    s["rule"] = st.rule;
    s["formula"] = st.formula;
    s["substituted"] = st.substituted;
    s["result"] = st.result;
    s["seeds_note"] = st.seeds_note;
    OJson values = OJson::object(), units = OJson::object();
    for (const auto& v : st.values) {
      values[v.name] = v.value;
      if (!v.unit.empty()) units[v.name] = v.unit;
    }
    s["values"] = values;
    s["units"] = units;
    steps.push_back(s);
  }
  j["steps"] = steps;
  j["defaults"] = notes;
  j["warnings"] = warnings;
  return j.dump(2) + "\n";
}

std::string Render(const sim::Explanation& ex, ExplainFormat f, const char* kind, const std::vector<std::string>& notes,
                   const std::vector<std::string>& warnings) {
  switch (f) {
    case ExplainFormat::kMarkdown: return RenderMarkdown(ex, notes, warnings);
    case ExplainFormat::kJson: return RenderJson(ex, kind, notes, warnings);
    case ExplainFormat::kText: break;
  }
  return RenderText(ex, notes, warnings);
}

// The user chose the parallel layout: explain evaluates it instead of the whiteboard rules' plan.
bool PlanGiven(const PlanFlags& f) {
  return !f.plan_file.empty() || f.tp || f.pp || f.dp || f.cp || f.ep || f.etp || f.vpp || f.zero || f.sp ||
         f.recompute || f.schedule || f.mbs || f.recompute_layers || f.sharding || !f.stage_layers.empty();
}

struct ExplainFlags {
  std::string topic, format = "text", profile = "default", failures = "llama3-405b";
  std::optional<double> tokens;
  bool no_search = false;
  int threads = 0;
};

}  // namespace

void AddExplainCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand(
      "explain", "Whiteboard sizing with its derivations: the checklist for a scenario, or one concept (--topic)");
  auto flags = std::make_shared<PlanFlags>();
  auto ef = std::make_shared<ExplainFlags>();
  flags->Register(cmd);
  cmd->add_option("--topic", ef->topic, "Explain one concept with a worked example: " + sim::TopicChoices());
  cmd->add_option("--format", ef->format, "text|markdown|json");
  cmd->add_option("--profile", ef->profile, "Calibration profile: default, a name, or a JSON file");
  cmd->add_option("--failures", ef->failures, "Failure-rate preset or JSON file (default llama3-405b)");
  cmd->add_option("--tokens", ef->tokens, "Tokens to train (default 20 per parameter, Hoffmann et al. 2022)");
  cmd->add_option("--threads", ef->threads, "Search threads (default: all cores)");
  cmd->add_flag("--no-search", ef->no_search, "Skip the plan search; recommend the whiteboard plan");
  cmd->callback([flags, ef, exit_code] {
    ExplainFormat format;
    if (ef->format == "text") format = ExplainFormat::kText;
    else if (ef->format == "markdown" || ef->format == "md") format = ExplainFormat::kMarkdown;
    else if (ef->format == "json") format = ExplainFormat::kJson;
    else {
      std::cerr << "error: --format must be text, markdown or json (got \"" << ef->format << "\")\n";
      *exit_code = 2;
      return;
    }
    auto profile = core::LoadProfile(ef->profile);
    if (!profile.ok()) {
      std::cerr << "error: --profile: " << profile.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    if (!ef->topic.empty()) {
      sim::Topic topic;
      if (!sim::FromName(ef->topic, &topic)) {
        std::cerr << "error: --topic: must be one of " << sim::TopicChoices() << " (got \"" << ef->topic << "\")\n";
        *exit_code = 2;
        return;
      }
      if (!flags->model.empty() || !flags->plan_file.empty() || flags->gpus) {
        std::cerr << "error: --topic: give a topic or a scenario (--model/--plan/--gpus), not both\n";
        *exit_code = 2;
        return;
      }
      auto ex = sim::ExplainTopic(topic, *profile);
      if (!ex.ok()) {
        std::cerr << "error: " << ex.status().ToString() << "\n";
        *exit_code = 1;
        return;
      }
      std::cout << Render(*ex, format, "topic", {}, {});
      *exit_code = 0;
      return;
    }
    if (flags->model.empty() && flags->plan_file.empty()) {
      std::cerr << "error: --model: give a scenario (--model M --gpu G --gpus N [plan flags]) or --topic "
                << sim::TopicChoices() << "\n";
      *exit_code = 2;
      return;
    }
    if (const std::string bad = TokensFlagError(ef->tokens); !bad.empty()) {
      std::cerr << "error: --tokens: " << bad << "\n";
      *exit_code = 2;
      return;
    }
    if (ef->threads < 0) {
      std::cerr << "error: --threads: must be >= 0 (got " << ef->threads << ")\n";
      *exit_code = 2;
      return;
    }
    const bool plan_given = PlanGiven(*flags);
    if (!plan_given && !flags->gpus) {
      std::cerr << "error: --gpus: is required (or give your plan: --tp/--pp/--dp/..., or --plan)\n";
      *exit_code = 2;
      return;
    }
    if (!plan_given && *flags->gpus < 1) {
      std::cerr << "error: --gpus: must be >= 1 (got " << *flags->gpus << ")\n";
      *exit_code = 2;
      return;
    }
    core::Scenario s;
    std::vector<std::string> notes, warnings;
    if (plan_given) {
      if (!ResolveOrReport(*flags, &s, &notes, &warnings, exit_code)) return;
    } else {
      // The rules choose the layout: resolve the model, GPU, cluster, seq and batch on one GPU (a
      // layout every batch admits), then hand the rules the real GPU count.
      PlanFlags one = *flags;
      one.gpus.reset();
      one.dp = 1;
      if (!ResolveOrReport(one, &s, &notes, &warnings, exit_code)) return;
      std::erase_if(notes,
                    [](const std::string& n) { return n.rfind("gpus ", 0) == 0 || n.rfind("global batch ", 0) == 0; });
      s.plan.gpus = *flags->gpus;
      s.plan.dp = *flags->gpus;
      if (!flags->gbs && !flags->gbs_tokens) {
        s.plan.global_batch = s.plan.micro_batch * s.plan.gpus;
        notes.push_back("global batch " + std::to_string(s.plan.global_batch) +
                        " sequences (one per GPU; --gbs or --gbs-tokens to change)");
      }
    }
    auto failures = core::LoadFailureModel(ef->failures);
    if (!failures.ok()) {
      std::cerr << "error: --failures: " << failures.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    sim::ExplainOptions opt;
    opt.keep_plan = plan_given;
    opt.search = !ef->no_search;
    opt.search_options.threads = ef->threads;
    opt.search_options.top_k = 1;
    opt.tokens = ef->tokens.value_or(0);
    if (!opt.keep_plan) {
      notes.push_back("parallel layout from the whiteboard rules (give --tp/--pp/--zero/... to explain your own)");
    }
    if (!ef->tokens) notes.push_back("tokens: 20 per parameter (Chinchilla; --tokens to change)");
    auto ex = sim::ExplainScenario(s, *profile, *failures, opt);
    if (!ex.ok()) {
      std::cerr << "error: " << ex.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    // The plan the walk costs: the recommended one, or the user's own when none fits.
    const core::PlanSpec* costed = ex->recommended ? &ex->recommended->plan : (plan_given ? &s.plan : nullptr);
    if (costed != nullptr)
      for (std::string& n : sim::AssumedRates(*profile, s.gpu, s.model, *costed)) notes.push_back(std::move(n));
    std::cout << Render(*ex, format, "scenario", notes, warnings);
    if (!ex->fits)
      std::cerr << "error: no plan fits in " << core::FormatBytes(s.gpu.CapacityBytes()) << " per GPU: neither "
                << (opt.keep_plan ? "the given plan, " : "") << "the whiteboard rules' plan"
                << (opt.search ? " nor any plan the search tried" : "")
                << " (the explanation above says by how much; more GPUs, or a GPU with more memory)\n";
    *exit_code = ex->fits ? 0 : 1;
  });
}

}  // namespace meshplan::cli
