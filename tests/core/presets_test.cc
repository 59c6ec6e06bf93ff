// Every built-in preset parses, validates and round-trips through JSON unchanged.
#include "core/presets.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/measurement.h"

namespace meshplan::core {
namespace {

TEST(PresetsTest, TheDesignedPresetsAreBuiltIn) {
  const auto models = PresetNames("models");
  for (const char* name : {"tiny", "gpt3-175b", "gpt-1.7b", "gpt-1t", "llama2-7b", "llama2-13b", "llama2-70b",
                           "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "mixtral-8x22b", "deepseek-v3",
                           "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b"})
    EXPECT_NE(std::find(models.begin(), models.end(), name), models.end()) << name;
  EXPECT_EQ(PresetNames("gpus").size(),
            19u);  // + h100-96g-hbm2e (torchtitan's Grand Teton H100s), b300, gb300, v100-dgx2h, a800, mi325x,
                   // mi350x, mi355x, gh200
  const auto clusters = PresetNames("clusters");
  for (const char* name : {"dgx-a100", "hgx-a800", "dgx-h100", "hgx-h800", "dgx-b200", "gb200-nvl72", "mi300x-8",
                           "mi325x-8", "mi350x-8", "mi355x-8", "gh200-quad", "dgx-2", "dgx-2h"})
    EXPECT_NE(std::find(clusters.begin(), clusters.end(), name), clusters.end()) << name;
}

TEST(PresetsTest, EveryModelParsesAndRoundTrips) {
  for (const auto& name : PresetNames("models")) {
    auto m = LoadModel(name);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status().ToString();
    EXPECT_EQ(m->name, name);
    EXPECT_FALSE(m->source.empty()) << name << " must cite its source";
    auto back = ParseModelJson(ModelToJson(*m));
    ASSERT_TRUE(back.ok()) << name << ": " << back.status().ToString();
    EXPECT_EQ(*back, *m) << name;
  }
}

TEST(PresetsTest, EveryGpuParsesAndRoundTrips) {
  for (const auto& name : PresetNames("gpus")) {
    auto g = LoadGpu(name);
    ASSERT_TRUE(g.ok()) << name << ": " << g.status().ToString();
    EXPECT_FALSE(g->source.empty()) << name;
    auto back = ParseGpuJson(GpuToJson(*g));
    ASSERT_TRUE(back.ok()) << name << ": " << back.status().ToString();
    EXPECT_EQ(*back, *g) << name;
  }
}

TEST(PresetsTest, EveryClusterParsesRoundTripsAndNamesABuiltInGpu) {
  const auto gpus = PresetNames("gpus");
  for (const auto& name : PresetNames("clusters")) {
    auto c = LoadCluster(name);
    ASSERT_TRUE(c.ok()) << name << ": " << c.status().ToString();
    EXPECT_NE(std::find(gpus.begin(), gpus.end(), c->gpu), gpus.end()) << name << " names gpu " << c->gpu;
    auto back = ParseClusterJson(ClusterToJson(*c));
    ASSERT_TRUE(back.ok()) << name << ": " << back.status().ToString();
    EXPECT_EQ(*back, *c) << name;
  }
}

TEST(PresetsTest, H100HasEightyGibibytesAndDensePeaks) {
  // NVIDIA H100 SXM datasheet: 80 GB HBM3 (80 GiB physical), 989.4 TFLOP/s dense BF16, 3.35 TB/s.
  auto g = LoadGpu("h100-sxm");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->hbm_bytes, 80LL << 30);
  EXPECT_DOUBLE_EQ(g->peak_flops_per_s.at(Dtype::kBf16), 989.4e12);
  EXPECT_DOUBLE_EQ(g->hbm_bytes_per_s, 3.35e12);
  // What CUDA reports of it (deviceQuery: 81106 MBytes, 85045477376 bytes; nvidia-smi: 81559 MiB
  // total less 454 MiB reserved): the capacity the fit verdict uses, 0.8 GiB under the physical.
  EXPECT_EQ(g->cuda_total_bytes, 85'045'477'376);
  EXPECT_EQ(g->CapacityBytes(), 85'045'477'376);
  EXPECT_NEAR(static_cast<double>(g->hbm_bytes - g->CapacityBytes()) / (1 << 20), 814.3, 0.1);  // MiB
}

TEST(PresetsTest, TheH200sCudaTotalIsTheOneMeasuredOnALentH200) {
  // tests/data/gpu/h200-2026-11-28/probes.json: torch.cuda.mem_get_info()'s total, 143155.9375 MiB
  // (scripts/gpu_probes.py context). The preset holds that figure; a GPU without a measurement falls
  // back to its physical memory.
  auto g = LoadGpu("h200");
  ASSERT_TRUE(g.ok());
  std::ifstream in(std::string(MESHPLAN_TEST_DATA_DIR) + "/gpu/h200-2026-11-28/probes.json");
  ASSERT_TRUE(in.good());
  const auto probes = nlohmann::json::parse(in);
  const double total_mib = probes.at("context").at("total_mib").get<double>();
  EXPECT_DOUBLE_EQ(total_mib, 143155.9375);
  EXPECT_EQ(g->cuda_total_bytes, static_cast<int64_t>(total_mib * (1 << 20)));
  EXPECT_EQ(g->hbm_bytes, 141LL << 30);
  // meshplan-run's own record of the same machine (cudaGetDeviceProperties' totalGlobalMem, the
  // measurement's hardware.gpus[0].memory_bytes) says the same, and `calibrate` says so.
  std::ifstream run(std::string(MESHPLAN_TEST_DATA_DIR) + "/gpu/h200-2026-11-28/tiny.json");
  ASSERT_TRUE(run.good());
  const std::string text((std::istreambuf_iterator<char>(run)), std::istreambuf_iterator<char>());
  auto m = ParseMeasurementJson(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_FALSE(m->hardware.gpus.empty());
  EXPECT_EQ(m->hardware.gpus.front().memory_bytes, g->cuda_total_bytes);
  EXPECT_NE(DeviceCapacityNote(*g, m->hardware.gpus.front()).find("h200's capacity as the fit verdicts take it"),
            std::string::npos);
  // Against the physical 141 GiB it names the figure to set.
  GpuSpec physical = *g;
  physical.cuda_total_bytes = 0;
  const std::string note = DeviceCapacityNote(physical, m->hardware.gpus.front());
  EXPECT_NE(note.find("its physical memory: no cuda_total_bytes), -0.85% from it"), std::string::npos) << note;
  EXPECT_NE(note.find("\"cuda_total_bytes\": 150109880320"), std::string::npos) << note;
  EXPECT_EQ(DeviceCapacityNote(*g, DeviceInfo{}), "");
  auto b200 = LoadGpu("b200");
  ASSERT_TRUE(b200.ok());
  EXPECT_EQ(b200->cuda_total_bytes, 0);
  EXPECT_EQ(b200->CapacityBytes(), b200->hbm_bytes);
}

TEST(PresetsTest, Mi300xTakesItsOwnMeasuredGemmAndAttentionSpeeds) {
  // ml-engineering's MAMF table (commit 082816f9be8a): MI300X bf16 668.4 TFLOP/s of 1307.4; fp8 by
  // AMD's own fp8/bf16 ratio on one stack (ROCm blog, hipblaslt-bench: 1223.6 / 708); attention:
  // AITER's measured forward (attn-dsl-bench @603819b3cf24) x 0.9735 for an assumed backward.
  auto g = LoadGpu("mi300x");
  ASSERT_TRUE(g.ok());
  EXPECT_NEAR(g->gemm_efficiency.at(Dtype::kBf16), 668.4 / 1307.4, 1e-4);
  EXPECT_NEAR(g->gemm_efficiency.at(Dtype::kFp8), 668.4 * 1223.6 / 708 / 2614.9, 1e-4);
  bool found = false;
  for (const auto& pt : g->attention_curve.at(AttentionImpl::kFlash))
    if (pt.head_dim == 128 && pt.seq == 4096) {
      found = true;
      EXPECT_NEAR(pt.tflops, 408.8 * 3.5 * (499.0 / 518) / (499.0 / 518 + 2.5), 0.06);
    }
  EXPECT_TRUE(found);
}

TEST(PresetsTest, Mi355xPeaksComeFromItsClockAndMatrixCoresAndItsSpeedsFromMeasurements) {
  // ml-engineering's 'For AMD @ BF16' (082816f9be8a): 2400 MHz x 512 FMAs x 2 x 1024 matrix cores =
  // 2516.6 TFLOP/s bf16 (AMD prints 2.5 PFLOP/s); fp8 twice that (ISSCC 2026: 8,192 FP8 FLOPs per
  // CU per clock x 256 CUs). MAMF 1565.0 TFLOP/s bf16 (the same repository's table); fp8: hipBLASLt's
  // 3293.2 TFLOP/s at 16384^3 (HipKittens). Attention: HipKittens' AITER forward 1069.0 and backward
  // 876.8 TFLOP/s at 4k tokens, head dim 128, causal: 3.5 / (1/1069.0 + 2.5/876.8) = 924.3.
  auto g = LoadGpu("mi355x");
  ASSERT_TRUE(g.ok());
  EXPECT_NEAR(g->peak_flops_per_s.at(Dtype::kBf16), 2400e6 * 512 * 2 * 1024, 0.1e12);
  EXPECT_NEAR(g->peak_flops_per_s.at(Dtype::kFp8), 256 * 8192 * 2.4e9, 0.1e12);
  EXPECT_EQ(g->peak_flops_per_s.count(Dtype::kTf32), 0u);  // AMD publishes none
  EXPECT_EQ(g->hbm_bytes, 288LL << 30);
  EXPECT_NEAR(g->gemm_efficiency.at(Dtype::kBf16), 1565.0 / 2516.6, 1e-4);
  EXPECT_NEAR(g->gemm_efficiency.at(Dtype::kFp8), 3293.2 / 5033.2, 1e-4);
  bool found = false;
  for (const auto& pt : g->attention_curve.at(AttentionImpl::kFlash))
    if (pt.head_dim == 128 && pt.seq == 4096) {
      found = true;
      EXPECT_NEAR(pt.tflops, 3.5 / (1 / 1069.0 + 2.5 / 876.8), 0.06);
    }
  EXPECT_TRUE(found);
  // The MI350X: the same silicon at 2200 MHz, so its peaks are the MI355X's x 2200/2400.
  auto slow = LoadGpu("mi350x");
  ASSERT_TRUE(slow.ok());
  EXPECT_NEAR(slow->peak_flops_per_s.at(Dtype::kBf16), 2200e6 * 512 * 2 * 1024, 0.1e12);
  EXPECT_DOUBLE_EQ(slow->tdp_w, 1000.0);
  // Infinity Fabric: 7 links of 76.5 GB/s per direction (ml-engineering network/README.md).
  auto c = LoadCluster("mi355x-8");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->scale_up_bytes_per_s, 7 * 76.5e9);
}

TEST(PresetsTest, Gh200IsAnH100DieWithItsOwnMemoryAndBurstRow) {
  // The H100 SXM5's peaks on 96 GB of HBM3 at 4 TB/s (CSCS's GH200 schematic); the GEMM rate by the
  // H100 rule with the GH200's own MAMF row (ml-engineering 082816f9be8a: 828.6 bf16, 1535.0 fp8
  // against the H200's 841.9, 1491.9): 0.712 x 828.6/841.9 x 0.9563 and 0.647 x 1535.0/1491.9 x
  // 0.9726. Four to a node, 3 x 150 GB/s of NVLink per direction, a 25 GB/s NIC each.
  auto g = LoadGpu("gh200");
  auto h = LoadGpu("h100-sxm");
  ASSERT_TRUE(g.ok() && h.ok());
  EXPECT_EQ(g->peak_flops_per_s, h->peak_flops_per_s);
  EXPECT_EQ(g->hbm_bytes, 96LL << 30);
  EXPECT_DOUBLE_EQ(g->hbm_bytes_per_s, 4.0e12);
  EXPECT_NEAR(g->gemm_efficiency.at(Dtype::kBf16), 0.712 * 828.6 / 841.9 * 0.9563, 5e-4);
  EXPECT_NEAR(g->gemm_efficiency.at(Dtype::kFp8), 0.647 * 1535.0 / 1491.9 * 0.9726, 5e-4);
  auto c = LoadCluster("gh200-quad");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(c->scale_up_bytes_per_s, 3 * 150e9);
  EXPECT_DOUBLE_EQ(c->nic_bytes_per_s, 25e9);
}

TEST(PresetsTest, H100SiblingsRunTheirDiesMeasuredSpeedsAtTheirOwnPeaks) {
  // Two H100 boards not measured themselves take the H100 SXM5's measurements as the same fraction
  // of their own peak: the GEMMs' sustained fraction (0.643 bf16, 0.591 fp8) and every attention
  // curve (absolute speeds) times their bf16 peak over the SXM5's 989.4 TFLOP/s.
  // - torchtitan's Grand Teton H100 (96 GB HBM2e, 500 W): its peak taken as the SXM5 and NVL
  //   datasheets' midpoint, (989.4 + 835.5) / 2 = 912.45; FlashAttention-2 at head dim 128 and 16k
  //   328 x 912.45/989.4 = 302.5, cuDNN's at 4k 504.3 x 0.92223 = 465.1.
  // - H100 PCIe (350 W, 114 SMs): the datasheet's 756.5; FlashAttention-2 at 16k 328 x 0.76460 =
  //   250.8, cuDNN's at 4k 504.3 x 0.76460 = 385.6. Before, it had no curve and no GEMM figure and
  //   took the profile's 0.80 and 0.60 / 0.50: faster than the SXM5 at attention in absolute terms.
  // cuDNN's FP8 attention (cudnn-fp8) likewise: the SXM5 takes the H200's measurement (the same die,
  // peaks and 700 W; as do the H800 and GH200), 540.2 TFLOP/s at 4k, so the 96 GB board 540.2 x
  // 0.92223 = 498.2 and the PCIe board 540.2 x 0.76460 = 413.0.
  auto h = LoadGpu("h100-sxm");
  auto h200 = LoadGpu("h200");
  ASSERT_TRUE(h.ok() && h200.ok());
  for (const char* same_die : {"h100-sxm", "h800", "gh200"}) {
    auto g = LoadGpu(same_die);
    ASSERT_TRUE(g.ok()) << same_die;
    const auto& fp8 = g->attention_curve.at(AttentionImpl::kCudnnFp8);
    const auto& measured = h200->attention_curve.at(AttentionImpl::kCudnnFp8);
    ASSERT_EQ(fp8.size(), measured.size()) << same_die;
    for (size_t i = 0; i < fp8.size(); ++i) {
      EXPECT_EQ(fp8[i].head_dim, measured[i].head_dim) << same_die;
      EXPECT_EQ(fp8[i].seq, measured[i].seq) << same_die;
      EXPECT_DOUBLE_EQ(fp8[i].tflops, measured[i].tflops) << same_die;
    }
  }
  const struct {
    const char* name;
    double peak_tflops, flash2_16k, cudnn_4k, cudnn_fp8_4k;
  } siblings[] = {{"h100-96g-hbm2e", 912.45, 302.5, 465.1, 498.2}, {"h100-pcie", 756.5, 250.8, 385.6, 413.0}};
  for (const auto& s : siblings) {
    auto g = LoadGpu(s.name);
    ASSERT_TRUE(g.ok()) << s.name;
    const double ratio = g->peak_flops_per_s.at(Dtype::kBf16) / h->peak_flops_per_s.at(Dtype::kBf16);
    EXPECT_NEAR(ratio, s.peak_tflops / 989.4, 1e-9) << s.name;
    EXPECT_EQ(g->gemm_efficiency, h->gemm_efficiency) << s.name;
    size_t points = 0;
    for (const auto& [impl, curve] : h->attention_curve) {
      ASSERT_TRUE(g->attention_curve.count(impl)) << s.name << " " << Name(impl);
      const auto& mine = g->attention_curve.at(impl);
      ASSERT_EQ(mine.size(), curve.size()) << s.name << " " << Name(impl);
      for (size_t i = 0; i < curve.size(); ++i) {
        EXPECT_EQ(mine[i].head_dim, curve[i].head_dim);
        EXPECT_EQ(mine[i].seq, curve[i].seq);
        EXPECT_NEAR(mine[i].tflops, curve[i].tflops * ratio, 0.051) << s.name << " " << Name(impl);  // 0.1 rounding
        ++points;
      }
    }
    EXPECT_EQ(points, 59u) << s.name;  // flash (cuDNN) 18 points, flash2, flash1 and triton 12 each, cudnn-fp8 5
    for (const auto& pt : g->attention_curve.at(AttentionImpl::kFlash2))
      if (pt.head_dim == 128 && pt.seq == 16384) EXPECT_DOUBLE_EQ(pt.tflops, s.flash2_16k) << s.name;
    for (const auto& pt : g->attention_curve.at(AttentionImpl::kFlash))
      if (pt.head_dim == 128 && pt.seq == 4096) EXPECT_DOUBLE_EQ(pt.tflops, s.cudnn_4k) << s.name;
    for (const auto& pt : g->attention_curve.at(AttentionImpl::kCudnnFp8))
      if (pt.seq == 4096) EXPECT_DOUBLE_EQ(pt.tflops, s.cudnn_fp8_4k) << s.name;
  }
}

TEST(PresetsTest, UnknownNameListsTheBuiltIns) {
  auto m = LoadModel("llama9-1t");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Status::Code::kNotFound);
  EXPECT_NE(m.status().message().find("llama3-70b"), std::string::npos) << m.status().message();
}

TEST(PresetsTest, MissingFileIsAnIoErrorNamingThePath) {
  auto m = LoadModel("/nonexistent/model.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Status::Code::kIoError);
  EXPECT_NE(m.status().message().find("/nonexistent/model.json"), std::string::npos);
}

TEST(PresetsTest, WriteTextFileAtomicallyReplacesWholeOrNothing) {
  // Written whole, then replaced whole; no .tmp left. Into a folder that does not exist: IoError
  // naming the file, nothing created.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "meshplan_atomic_write_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "plan.json").string();
  ASSERT_TRUE(WriteTextFileAtomically(path, "first\n").ok());
  ASSERT_TRUE(WriteTextFileAtomically(path, "second, longer\n").ok());
  EXPECT_EQ(*ReadTextFile(path), "second, longer\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  const std::string missing = (dir / "no" / "such" / "plan.json").string();
  const Status st = WriteTextFileAtomically(missing, "x");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Status::Code::kIoError);
  EXPECT_NE(st.message().find(missing), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir / "no"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace meshplan::core
