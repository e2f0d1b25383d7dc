// GpuInventory: the --device grammar, pinning GPUs from CUDA_VISIBLE_DEVICES or NVML, the clear
// failure on a machine without a GPU, and pinned zygotes (real ones, on the CPU: a pinned zygote's
// children see only their GPU in CUDA_VISIBLE_DEVICES, and a job pinned to a GPU runs on its zygote).
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <set>

#include "TestWorkers.h"
#include "fuzzer/worker/GpuInventory.h"

namespace tcfuzz {
namespace {

using test_support::TempDir;

TEST(DeviceSelection, ParsesEveryForm) {
  EXPECT_FALSE(parseDeviceSelection("cpu").cuda);
  DeviceSelection plain = parseDeviceSelection("cuda");
  EXPECT_TRUE(plain.cuda);
  EXPECT_FALSE(plain.all);
  EXPECT_TRUE(plain.ordinals.empty());
  EXPECT_EQ(parseDeviceSelection("cuda:3").ordinals, (std::vector<int>{3}));
  EXPECT_EQ(parseDeviceSelection("cuda:1,0, 2").ordinals, (std::vector<int>{1, 0, 2}));
  EXPECT_TRUE(parseDeviceSelection("cuda:all").all);
  EXPECT_EQ(parseDeviceSelection("cuda:all").jobDevice(), "cuda");
  EXPECT_EQ(parseDeviceSelection("cpu").jobDevice(), "cpu");
}

TEST(DeviceSelection, RejectsMalformedDevicesAsUsageErrors) {
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:0,0", "cuda:1,,2", "CUDA", "cuda:all,0"})
    EXPECT_THROW(parseDeviceSelection(bad), std::invalid_argument) << bad;
  try {
    parseDeviceSelection("cuda:0,0");
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--device cuda:0,0: GPU 0 is named twice");
  }
}

TEST(DeviceSelection, OrdinalsIndexTheVisibleDevicesAsTorchDoes) {
  Nvml nvml;
  // cuda:1 under CUDA_VISIBLE_DEVICES=4,5 is GPU 5 (what a Slurm job with --gres=gpu:2 sees).
  EXPECT_EQ(resolveDevices(parseDeviceSelection("cuda:1"), nvml, "4,5").gpus, (std::vector<std::string>{"5"}));
  EXPECT_EQ(resolveDevices(parseDeviceSelection("cuda:all"), nvml, "4,5").gpus, (std::vector<std::string>{"4", "5"}));
  EXPECT_EQ(resolveDevices(parseDeviceSelection("cuda:1,0"), nvml, "GPU-aa,GPU-bb").gpus,
            (std::vector<std::string>{"GPU-bb", "GPU-aa"}));
  EXPECT_TRUE(resolveDevices(parseDeviceSelection("cuda"), nvml, "4,5").gpus.empty());  // unpinned: torch's cuda:0
  EXPECT_TRUE(resolveDevices(parseDeviceSelection("cpu"), nvml, nullptr).gpus.empty());
  try {
    resolveDevices(parseDeviceSelection("cuda:2"), nvml, "4,5");
    ADD_FAILURE() << "cuda:2 of two GPUs was accepted";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.what(), "--device cuda:2: there is no GPU 2; this machine has 2 (CUDA_VISIBLE_DEVICES=4,5)");
  }
}

TEST(DeviceSelection, WithoutAGpuCudaFailsWithNvmlsReason) {
  Nvml nvml;
  if (nvml.available() && nvml.count() > 0) GTEST_SKIP() << "this machine has a GPU: " << nvml.count();
  EXPECT_EQ(nvml.count(), 0);
  EXPECT_FALSE(nvml.health("0").has_value());
  for (const char* device : {"cuda", "cuda:0", "cuda:all"}) {
    try {
      resolveDevices(parseDeviceSelection(device), nvml, nullptr);
      ADD_FAILURE() << device << " was accepted without a GPU";
    } catch (const DeviceError& e) {
      std::string message = e.what();
      EXPECT_NE(message.find(std::string("--device ") + device + ": this machine has no usable NVIDIA GPU"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find(nvml.available() ? "NVML lists no GPU" : nvml.unavailableReason()), std::string::npos)
          << message;
      EXPECT_NE(message.find("--device cpu"), std::string::npos) << message;
    }
  }
  // An empty CUDA_VISIBLE_DEVICES hides every GPU, as it does from torch.
  EXPECT_THROW(resolveDevices(parseDeviceSelection("cuda:all"), nvml, ""), DeviceError);
}

/// A script job that prints the CUDA_VISIBLE_DEVICES its child sees, run on `gpu`'s zygote ("" any).
oracles::RunResult printVisibleDevices(WorkerPool& pool, const std::filesystem::path& dir, const std::string& id,
                                       const std::string& gpu) {
  std::filesystem::path script = dir / "print_visible.py";
  if (!std::filesystem::exists(script))
    std::ofstream(script) << "import os\nprint('visible=' + os.environ.get('CUDA_VISIBLE_DEVICES', 'unset'))\n";
  Job job;
  job.id = id;
  job.kind = "script";
  job.program = script;
  job.jobDir = dir / "jobs" / id;
  job.limits = Limits{120, 1024};
  job.gpu = gpu;
  std::filesystem::create_directories(job.jobDir);
  return pool.submit(job).get();
}

TEST(PinnedWorkers, EachZygoteSeesOnlyItsGpuAndPinnedJobsRunThere) {
  TempDir dir("tcfuzz-gpu-pin");
  WorkerSpec spec = test_support::testWorkerSpec(dir.path());
  spec.gpus = {"7", "9"};  // CPU jobs: the pinning is only an environment here, which is what is checked
  WorkerPool pool(spec, 2);
  for (int i = 0; i < 4; ++i) {
    oracles::RunResult r = printVisibleDevices(pool, dir.path(), "to-9-" + std::to_string(i), "9");
    ASSERT_TRUE(r.ok()) << test_support::describeRun(r);
    EXPECT_EQ(r.child.gpu, "9");
    EXPECT_NE(r.stdoutTail.find("visible=9"), std::string::npos) << r.stdoutTail;
  }
  oracles::RunResult seven = printVisibleDevices(pool, dir.path(), "to-7", "7");
  EXPECT_EQ(seven.child.gpu, "7");
  EXPECT_NE(seven.stdoutTail.find("visible=7"), std::string::npos) << seven.stdoutTail;
  // A GPU no zygote holds is no constraint (a finding of another machine replayed here).
  oracles::RunResult elsewhere = printVisibleDevices(pool, dir.path(), "to-3", "3");
  ASSERT_TRUE(elsewhere.ok()) << test_support::describeRun(elsewhere);
  EXPECT_TRUE(elsewhere.child.gpu == "7" || elsewhere.child.gpu == "9") << elsewhere.child.gpu;
  EXPECT_NE(elsewhere.stdoutTail.find("visible=" + elsewhere.child.gpu), std::string::npos);
}

TEST(PinnedWorkers, ResultsNameTheirGpuThroughJson) {
  oracles::RunResult r;
  r.child.gpu = "GPU-8e6f";
  EXPECT_EQ(oracles::runResultFromJson(oracles::toJson(r)).child.gpu, "GPU-8e6f");
  oracles::RunResult cpu;
  EXPECT_FALSE(oracles::toJson(cpu)["child"].contains("gpu"));
}

}  // namespace
}  // namespace tcfuzz
