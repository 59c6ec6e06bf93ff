// meshplan presets [models|gpus|clusters] [NAME]: list what is built in, or print one preset.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/output.h"
#include "core/params.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/stack.h"
#include "core/units.h"
#include "sim/step_model.h"

namespace meshplan::cli {

void AddPresetsCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand("presets", "List the built-in models, GPUs and clusters, or print one");
  auto kind = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>();
  cmd->add_option("kind", *kind, "models|gpus|clusters|failures|profiles|stacks (default: all)");
  cmd->add_option("name", *name, "Print this preset's JSON");
  cmd->callback([kind, name, exit_code] {
    std::vector<std::string> kinds = {"models", "gpus", "clusters", "failures", "stacks"};
    if (!kind->empty()) {
      if (*kind != "models" && *kind != "gpus" && *kind != "clusters" && *kind != "failures" && *kind != "profiles" &&
          *kind != "stacks") {
        std::cerr << "error: kind must be models, gpus, clusters, failures, profiles or stacks (got \"" << *kind
                  << "\")\n";
        *exit_code = 2;
        return;
      }
      kinds = {*kind};
    }
    if (!name->empty()) {
      auto text = core::PresetText(kinds[0], *name);
      if (!text.ok()) {
        std::cerr << "error: " << text.status().message() << "\n";
        *exit_code = 2;
        return;
      }
      std::cout << *text;
      *exit_code = 0;
      return;
    }
    char line[256];
    for (const auto& k : kinds) {
      std::cout << "# " << k << "\n";
      for (const auto& n : core::PresetNames(k)) {
        if (k == "models") {
          auto m = core::LoadModel(n);
          if (!m.ok()) {
            std::cout << "  " << n << "  (invalid: " << m.status().message() << ")\n";
            continue;
          }
          const auto c = core::CountParams(*m);
          std::snprintf(line, sizeof line, "  %-18s %8s params  %8s active  %3lld layers  hidden %6lld%s\n", n.c_str(),
                        HumanCount(c.total).c_str(), HumanCount(c.active).c_str(), static_cast<long long>(m->layers),
                        static_cast<long long>(m->hidden), m->moe ? "  moe" : "");
        } else if (k == "gpus") {
          auto g = core::LoadGpu(n);
          if (!g.ok()) {
            std::cout << "  " << n << "  (invalid: " << g.status().message() << ")\n";
            continue;
          }
          const auto& peaks = g->peak_flops_per_s;
          const double bf16 = peaks.count(core::Dtype::kBf16)   ? peaks.at(core::Dtype::kBf16)
                              : peaks.count(core::Dtype::kFp16) ? peaks.at(core::Dtype::kFp16)
                                                                : peaks.begin()->second;
          // The 16-bit GEMM rate a step is costed at with the default profile, and whether the
          // preset gives its sourced fraction or the profile's assumed one is taken (sim::GemmEfficiency).
          const core::Dtype d16 = peaks.count(core::Dtype::kBf16) ? core::Dtype::kBf16 : core::Dtype::kFp16;
          const double eff = sim::GemmEfficiency(core::Profile{}, *g, d16);
          // Where the preset measured a short reduction's cost, the rate is its reference k's
          // (GpuSpec::gemm_reference_k) and K0 says how much a shorter k loses (sim::GemmReductionCost).
          const auto k0 = g->gemm_k_overhead.find(d16);
          char reduction[64] = "";
          if (k0 != g->gemm_k_overhead.end())
            std::snprintf(reduction, sizeof reduction, " at k %.0f, K0 %.0f", g->gemm_reference_k, k0->second);
          std::snprintf(
              line, sizeof line,
              "  %-18s %10s HBM  %6.2f TB/s  %7.1f TFLOP/s 16-bit dense  %5.0f W  GEMMs %6.1f TFLOP/s (%s "
              "%.3f%s)%s\n",
              n.c_str(), core::FormatBytes(g->hbm_bytes).c_str(), g->hbm_bytes_per_s / 1e12, bf16 / 1e12, g->tdp_w,
              bf16 * eff / 1e12, g->gemm_efficiency.count(d16) ? "preset" : "assumed", eff, reduction,
              // The capacity plans are fitted to, where measured (GpuSpec::cuda_total_bytes).
              g->cuda_total_bytes > 0 ? ("  CUDA reports " + core::FormatBytes(g->cuda_total_bytes)).c_str() : "");
        } else if (k == "stacks") {
          auto st = core::LoadStack(n);
          if (!st.ok()) {
            std::cout << "  " << n << "  (invalid: " << st.status().message() << ")\n";
            continue;
          }
          std::snprintf(line, sizeof line, "  %-24s %-4s %-9s recompute %-9s tp-overlap %-8s zero %d%s  FLOPs: %s\n",
                        n.c_str(), core::Name(st->precision), core::Name(st->attention), core::Name(st->recompute),
                        core::Name(st->tp_overlap), st->zero, st->sequence_parallel ? "  sp" : "",
                        core::Name(st->flop_count));
        } else if (k != "clusters") {
          std::snprintf(line, sizeof line, "  %s\n", n.c_str());
        } else {
          auto c = core::LoadCluster(n);
          if (!c.ok()) {
            std::cout << "  " << n << "  (invalid: " << c.status().message() << ")\n";
            continue;
          }
          std::snprintf(
              line, sizeof line,
              "  %-18s %-10s %3lld GPUs/node  scale-up %3lld @ %4.0f GB/s  %lld NICs x %4.0f Gb/s  $%.2f/GPU-h\n",
              n.c_str(), c->gpu.c_str(), static_cast<long long>(c->gpus_per_node),
              static_cast<long long>(c->scale_up_domain_gpus), c->scale_up_bytes_per_s / 1e9,
              static_cast<long long>(c->nics_per_node), c->nic_bytes_per_s * 8 / 1e9, c->price_per_gpu_hour_usd);
        }
        std::cout << line;
      }
    }
    *exit_code = 0;
  });
}

}  // namespace meshplan::cli
