// runtime/executor.h, runtime/bench.h and runtime/measurement.h in one process, on the cpu
// backend: the executor runs exactly the StepGraph's ops of its stage (one measurement per op,
// with the calls a step makes), group layouts follow the placement order, rank slices model the
// collectives they cannot run, and the measurement JSON reads back. Multi-process runs (real
// groups, the watchdog) are in mpi_test.cmake.
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "core/diagnostics.h"
#include "core/presets.h"
#include "core/step_graph.h"
#include "core/validate.h"
#include "runtime/bench.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/host_comm.h"
#include "runtime/measurement.h"

namespace meshplan::runtime {
namespace {

using core::CommGroup;

core::Scenario Tiny(int64_t tp, int64_t pp, int64_t dp, int64_t global_batch = 4) {
  core::Scenario s;
  auto model = core::LoadModel("tiny");
  auto gpu = core::LoadGpu("h100-sxm");
  auto cluster = core::LoadCluster("dgx-h100");
  EXPECT_TRUE(model.ok() && gpu.ok() && cluster.ok());
  s.model = *model;
  s.gpu = *gpu;
  s.cluster = *cluster;
  s.plan.gpus = tp * pp * dp;
  s.plan.tp = tp;
  s.plan.pp = pp;
  s.plan.dp = dp;
  s.plan.micro_batch = 1;
  s.plan.global_batch = global_batch;
  s.plan.seq_len = 64;
  core::Diagnostics d;
  core::ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  EXPECT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  return s;
}

// Each reading 1 ms after the last: an op's time is exactly 1 ms (two consecutive readings).
class FakeClock final : public Clock {
 public:
  double NowSeconds() override { return now_ += 1e-3; }

 private:
  double now_ = 0;
};

ExecutorOptions FastOptions() {
  ExecutorOptions o;
  o.warmup_steps = 0;
  o.steps = 1;
  o.peak = DevicePeak{1e10, core::Dtype::kBf16, "test"};
  return o;
}

TEST(GroupLayoutTest, GroupsFollowThePlacementOrder) {
  // tp-cp-ep-dp-pp with tp = pp = dp = 2: tp is innermost (stride 1), dp next (stride 2), pp
  // outermost (stride 4). Rank 5 = tp 1, dp 0, pp 1.
  const core::PlanSpec p = Tiny(2, 2, 2).plan;
  EXPECT_EQ(GroupMembers(CommGroup::kTp, p, 5), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(GroupMembers(CommGroup::kDp, p, 5), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(GroupMembers(CommGroup::kDpCp, p, 5), (std::vector<int64_t>{5, 7}));  // cp = 1
  EXPECT_EQ(GroupMembers(CommGroup::kPp, p, 5), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(StageOfRank(p, 5), 1);
  EXPECT_EQ(StageOfRank(p, 3), 0);
  // Every rank is in exactly one group of each kind.
  for (CommGroup g : {CommGroup::kTp, CommGroup::kDp, CommGroup::kPp}) {
    std::map<int64_t, int> seen;
    for (int64_t r = 0; r < p.gpus; ++r)
      for (int64_t m : GroupMembers(g, p, r)) seen[m] += m == r ? 1 : 0;
    for (int64_t r = 0; r < p.gpus; ++r) EXPECT_EQ(seen[r], 1) << core::Name(g) << " rank " << r;
  }
}

TEST(StagePassOrderTest, OneFOneBWarmsUpThenAlternates) {
  // Narayanan 2021 §2.2: stage i of p runs p - i - 1 warm-up forwards.
  using V = std::vector<std::pair<bool, int64_t>>;
  EXPECT_EQ(StagePassOrder(core::Schedule::k1F1B, 3, 0, 4),
            (V{{true, 0}, {true, 1}, {true, 2}, {false, 0}, {true, 3}, {false, 1}, {false, 2}, {false, 3}}));
  EXPECT_EQ(StagePassOrder(core::Schedule::k1F1B, 3, 2, 2), (V{{true, 0}, {false, 0}, {true, 1}, {false, 1}}));
  EXPECT_EQ(StagePassOrder(core::Schedule::kGpipe, 2, 0, 2), (V{{true, 0}, {true, 1}, {false, 0}, {false, 1}}));
  // pp = 1: forward then backward per microbatch.
  EXPECT_EQ(StagePassOrder(core::Schedule::k1F1B, 1, 0, 2), (V{{true, 0}, {false, 0}, {true, 1}, {false, 1}}));
}

TEST(ExecutorTest, RunsEveryStepGraphOpOfTheStageWithItsCallCount) {
  const core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const core::StepGraph g = core::BuildStepGraph(s.model, s.plan);
  // Every op of every list the single stage holds, once: embedding, dense layer (x2), head.
  size_t expected_ops = g.embedding.size() + g.dense_layer.size() + g.head.size();
  EXPECT_EQ(m->ops.size(), expected_ops);
  double flops = 0;
  int64_t calls = 0;
  for (const OpMeasurement& o : m->ops) {
    const std::vector<core::Op>& list = o.section == "embedding"     ? g.embedding
                                        : o.section == "dense_layer" ? g.dense_layer
                                                                     : g.head;
    ASSERT_LT(o.index, static_cast<int64_t>(list.size()));
    const core::Op& op = list[static_cast<size_t>(o.index)];
    EXPECT_EQ(o.name, op.name);
    EXPECT_EQ(o.pass, op.pass);
    // Two layers in the dense list; per microbatch unless once per step.
    const int64_t instances = o.section == "dense_layer" ? s.model.layers : 1;
    const int64_t per = op.pass == core::Pass::kStep ? 1 : g.microbatches;
    EXPECT_EQ(o.calls_per_step, instances * per) << o.section << "/" << o.name;
    EXPECT_FALSE(o.modeled);
    // The fake clock: exactly 1 ms per call.
    EXPECT_NEAR(o.time_s, 1e-3 * static_cast<double>(o.calls_per_step), 1e-9) << o.name;
    EXPECT_DOUBLE_EQ(o.flops, op.Flops() * static_cast<double>(o.calls_per_step));
    if (op.kind == core::OpKind::kGemm || op.kind == core::OpKind::kAttention) flops += o.flops;
    calls += o.calls_per_step;
  }
  // One step event before and after, two per call.
  EXPECT_NEAR(m->step->measured_s, 1e-3 * static_cast<double>(2 * calls + 1), 1e-9);
  EXPECT_DOUBLE_EQ(m->step->flops, flops);
  EXPECT_DOUBLE_EQ(m->step->time_s, m->step->measured_s);
  EXPECT_NEAR(m->step->mfu, flops / (m->step->time_s * 1e10), 1e-12);
  EXPECT_GT(m->step->peak_memory_bytes, 0);
  EXPECT_EQ(m->mode, "single_process");
}

TEST(ExecutorTest, RankSliceModelsCollectivesWithoutARealGroup) {
  const core::Scenario s = Tiny(2, 2, 2);
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  ExecutorOptions o = FastOptions();
  o.rank = 5;  // tp 1, dp 0, pp stage 1 (the last: head, no embedding)
  o.mode = "rank_slice";
  auto m = ExecuteStep(*backend, s, o, {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stage, 1);
  bool head = false, embedding = false, tp_modeled = false, p2p_modeled = false;
  double exposed = 0;
  for (const OpMeasurement& op : m->ops) {
    head |= op.section == "head";
    embedding |= op.section == "embedding";
    if (op.kind == core::OpKind::kCollective || op.kind == core::OpKind::kP2p) {
      EXPECT_TRUE(op.modeled) << op.name;
      EXPECT_GT(op.time_s, 0) << op.name;  // the alpha-beta prediction, never free
      tp_modeled |= op.group == CommGroup::kTp;
      p2p_modeled |= op.kind == core::OpKind::kP2p;
      if (!op.overlappable) exposed += op.time_s;
    }
  }
  EXPECT_TRUE(head);
  EXPECT_FALSE(embedding);
  EXPECT_TRUE(tp_modeled);
  EXPECT_TRUE(p2p_modeled);
  EXPECT_NEAR(m->step->modeled_comm_s, exposed, 1e-15);
  EXPECT_DOUBLE_EQ(m->step->time_s, m->step->measured_s + m->step->modeled_comm_s);
  EXPECT_FALSE(m->notes.empty());
}

TEST(ExecutorTest, RejectsARankOutsideThePlan) {
  const core::Scenario s = Tiny(2, 1, 1);
  auto backend = MakeCpuBackend();
  ExecutorOptions o = FastOptions();
  o.rank = 2;
  auto m = ExecuteStep(*backend, s, o, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), core::Status::Code::kInvalidArgument);
}

TEST(ExecutorTest, CpuPeakIsAMeasuredGemmCeilingWhenNoneIsGiven) {
  const core::Scenario s = Tiny(1, 1, 1, 1);
  auto backend = MakeCpuBackend();
  ExecutorOptions o;
  o.warmup_steps = 0;
  o.steps = 1;
  auto m = ExecuteStep(*backend, s, o, {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->peak.has_value());
  EXPECT_GT(m->peak->flops_per_s, 0);
  EXPECT_NE(m->peak->source.find("measured"), std::string::npos);
  EXPECT_GT(m->step->mfu, 0);
}

TEST(BenchTest, GemmReportsFlopsAndChecksTheResult) {
  auto backend = MakeCpuBackend();
  auto r = BenchGemm(*backend, {64, 48, 32, core::Dtype::kBf16}, {.warmup = 1, .iterations = 2});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->flops, 2.0 * 64 * 48 * 32);  // 2mnk
  EXPECT_GT(r->time_s, 0);
  EXPECT_LE(r->max_rel_error, RelativeTolerance(core::Dtype::kBf16, 32));
  EXPECT_FALSE(BenchGemm(*backend, {0, 8, 8, core::Dtype::kFp32}, {}).ok());
}

TEST(BenchTest, CollectivesOnOneRankAreCorrectWithNcclTestsFactors) {
  auto backend = MakeCpuBackend();
  auto self = MakeSelfComm("world");
  auto rows = BenchCollectives(*backend, *self,
                               {core::CollectiveKind::kAllReduce, core::CollectiveKind::kAllGather,
                                core::CollectiveKind::kBroadcast, core::CollectiveKind::kSendRecv},
                               SizeSweep(64, 256), {.warmup = 1, .iterations = 2});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 9u);  // send/recv needs two ranks; 3 sizes x 3 kinds
  for (const auto& r : *rows) {
    EXPECT_EQ(r.wrong, 0);
    EXPECT_EQ(r.ranks, 1);
    // One rank: all-reduce and all-gather move nothing over a bus ((n-1)/n = 0); broadcast's factor is 1.
    if (r.kind == core::CollectiveKind::kBroadcast)
      EXPECT_DOUBLE_EQ(r.busbw_bytes_per_s, r.algbw_bytes_per_s);
    else
      EXPECT_EQ(r.busbw_bytes_per_s, 0);
  }
  EXPECT_EQ(SizeSweep(8, 64), (std::vector<int64_t>{8, 16, 32, 64}));
}

TEST(MeasurementTest, JsonRoundTrips) {
  const core::Scenario s = Tiny(2, 2, 2);
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  ExecutorOptions o = FastOptions();
  o.rank = 1;
  auto m = ExecuteStep(*backend, s, o, {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Measurement in = *m;
  in.tool = "meshplan-run test";
  in.hardware.backend = "cpu";
  in.plan = core::PlanFile{};
  in.plan->plan = s.plan;
  in.plan->model = s.model;
  in.gemm.push_back({{64, 64, 64, core::Dtype::kBf16}, 1e-3, 2.0 * 64 * 64 * 64, 524288e3, 1e-3, 5});
  in.hardware.gpus.push_back({"NVIDIA H100 80GB HBM3", int64_t{85} << 30, 9, 0, 132});
  const std::string json = MeasurementToJson(in);
  auto out = ParseMeasurementJson(json);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->schema, "meshplan.measurement/1");
  EXPECT_EQ(out->ops.size(), in.ops.size());
  for (size_t i = 0; i < in.ops.size(); ++i) {
    EXPECT_EQ(out->ops[i].name, in.ops[i].name);
    EXPECT_EQ(out->ops[i].kind, in.ops[i].kind);
    EXPECT_EQ(out->ops[i].pass, in.ops[i].pass);
    EXPECT_EQ(out->ops[i].group, in.ops[i].group);
    EXPECT_EQ(out->ops[i].modeled, in.ops[i].modeled);
    EXPECT_DOUBLE_EQ(out->ops[i].time_s, in.ops[i].time_s);
  }
  EXPECT_DOUBLE_EQ(out->step->time_s, in.step->time_s);
  EXPECT_DOUBLE_EQ(out->step->mfu, in.step->mfu);
  EXPECT_EQ(out->step->peak_memory_bytes, in.step->peak_memory_bytes);
  ASSERT_TRUE(out->plan.has_value());
  EXPECT_EQ(out->plan->plan, s.plan);
  ASSERT_EQ(out->gemm.size(), 1u);
  EXPECT_EQ(out->gemm[0].shape.m, 64);
  ASSERT_EQ(out->hardware.gpus.size(), 1u);  // what calibrate maps to a GPU preset
  EXPECT_EQ(out->hardware.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(out->hardware.gpus[0].compute_capability_major, 9);
  EXPECT_EQ(out->hardware.gpus[0].sm_count, 132);
  EXPECT_EQ(MeasurementToJson(*out), json);  // a fixed point

  std::string bad_cc = json;
  bad_cc.replace(bad_cc.find("\"9.0\""), 5, "\"9x0\"");
  auto cc = ParseMeasurementJson(bad_cc);
  ASSERT_FALSE(cc.ok());
  EXPECT_NE(cc.status().message().find("hardware.gpus[0].compute_capability: must be \"MAJOR.MINOR\""),
            std::string::npos)
      << cc.status().message();

  auto bad =
      ParseMeasurementJson(R"({"schema": "meshplan.measurement/2", "mode": "mpi", "hardware": {"backend": "cpu"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("schema"), std::string::npos);
}

}  // namespace
}  // namespace meshplan::runtime
