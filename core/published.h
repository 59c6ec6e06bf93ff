// Published training runs (the format of shared/validation/published.json, copied to
// tests/data/validation/) turned into scenarios meshplan can predict, with the measured number
// to compare against. The mapping from a record to a plan is fixed and documented here, the same
// for every record (docs/calibration.md); nothing is fitted per row.
#ifndef MESHPLAN_CORE_PUBLISHED_H_
#define MESHPLAN_CORE_PUBLISHED_H_

#include <string>
#include <vector>

#include "core/presets.h"
#include "core/status.h"

namespace meshplan::core {

// One published run as meshplan predicts it. Every run is compared in tokens/s per GPU: a source
// that prints an iteration time, TFLOP/s or MFU is converted with the batch it ran and the FLOP
// count of the software that printed it (core/stack.h), never with meshplan's own count, so a
// model that counts FLOPs differently looks neither better nor worse for it.
struct PublishedRun {
  std::string id;
  std::string source;  // paper, table, row
  std::string table;   // paper, table: the runs measured together (sim/comparison.h pairs them)
  Scenario scenario;
  std::string dataset;                   // the file it came from (set by the caller; a validation group)
  std::string stack;                     // the software-stack preset the run is predicted with (presets/stacks)
  double published = 0;                  // tokens/s per GPU
  std::string printed;                   // what the source prints, "tflops_per_gpu 144"
  std::string conversion;                // how `published` follows from it
  std::vector<std::string> assumptions;  // what the record does not print and we assumed
};

// Every record that names a model (its layers, hidden and heads, or a model preset's name), a GPU
// we have a preset for, a plan (tp and pp; dp printed or GPUs/(tp pp cp)), a software stack that
// produced it (presets/stacks applies_to) and a measured tokens/s, iteration time, TFLOP/s or
// MFU. Records without them are skipped (`skipped` lists their ids with the reason).
Result<std::vector<PublishedRun>> LoadPublishedRuns(const std::string& json_text, std::vector<std::string>* skipped);

// A measured per-GPU memory peak (shared/validation/memory_measured.json), mapped to a scenario by
// the same rule as the runs.
struct PublishedMemory {
  std::string id;
  std::string source;
  std::string table;  // as PublishedRun's
  Scenario scenario;
  std::string dataset;  // set by the caller
  std::string stack;
  double measured_gib = 0;
  // What was measured: the caching allocator's peak reserved bytes (torchtitan logs these), else
  // its peak allocated bytes (Megatron-LM's CI).
  bool reserved = false;
  // The device's used memory as nvidia-smi shows it (measured.device_gib): the whole stage on the
  // GPU, the CUDA context and NCCL's buffers included (the fit verdict's number).
  bool device = false;
  // The record measured the last pipeline stage's rank (measured.which_rank says so: Megatron-LM's
  // CI logs on the last global rank); otherwise the worst stage is compared (torchtitan prints
  // the maximum over the ranks).
  bool last_stage = false;
  std::string metric;  // the record's own description
  // What the source says became of the run when it prints no peak (measured.outcome): it ran out
  // of memory, or it ran (fit). A record with an outcome and no peak is judged by the memory
  // model's fit verdict alone (measured_gib 0); a record with a peak ran by definition.
  enum class Outcome { kPeak, kFits, kOutOfMemory };
  Outcome outcome = Outcome::kPeak;
  std::vector<std::string> assumptions;
};
// Every record with measured.peak_allocated_gib, or reserved_gib (or peak_gib with a metric that
// says reserved), or device_gib (nvidia-smi), or only measured.outcome ("out_of_memory" or "fits": a published
// verdict), that maps to a scenario; the rest are listed in `skipped` with the reason.
Result<std::vector<PublishedMemory>> LoadPublishedMemory(const std::string& json_text,
                                                         std::vector<std::string>* skipped);

// A published per-layer timing (Korthikanti 2022 Table 4: one transformer layer's forward and
// backward in ms), mapped to a scenario by the same rule as the runs; the model's `layers` is what
// the record prints (1) and only its dense layer is meant.
struct PublishedLayerTiming {
  std::string id;
  std::string source;
  Scenario scenario;
  std::string dataset;  // set by the caller
  std::string stack;    // as PublishedRun::stack
  double forward_s = 0, backward_s = 0;
  std::vector<std::string> assumptions;
};
// Every record with measured.other.forward_ms and backward_ms that maps to a scenario.
Result<std::vector<PublishedLayerTiming>> LoadPublishedLayerTimings(const std::string& json_text);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_PUBLISHED_H_
