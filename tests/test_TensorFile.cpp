// The tensor file (oracles/judge/OutputLoader.h): the version-independent exchange between any worker torch
// and the LibTorch tcfuzz links. Round trips, files written by real worker interpreters, corrupt files.
#include <cstdlib>
#include <fstream>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "TestWorkers.h"
#include "oracles/judge/OutputLoader.h"

using namespace tcfuzz;
using tcfuzz::test_support::TempDir;

namespace {

/// Has `python` write three tensors with the worker's own writer (child.py's write_tensor_file).
void writeWithWorkerCode(const std::filesystem::path& python, const std::filesystem::path& file) {
  std::string script = fmt::format(
      "import sys; sys.path.insert(0, '{}/fuzzer/worker/python')\n"
      "import torch\n"
      "from child import write_tensor_file\n"
      "a = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3).t()\n"  // non-contiguous on purpose
      "write_tensor_file('{}', [a, torch.tensor(True), torch.empty(0, 3), torch.tensor([-7, 2**40])])\n",
      TCFUZZ_SOURCE_DIR, file.string());
  auto scriptFile = file.parent_path() / "write.py";
  std::ofstream(scriptFile) << script;
  ASSERT_EQ(std::system(fmt::format("'{}' '{}'", python.string(), scriptFile.string()).c_str()), 0);
}

void expectWorkerTensors(const std::vector<at::Tensor>& t) {
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].scalar_type(), at::kBFloat16);
  EXPECT_EQ(t[0].sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(at::equal(t[0], at::arange(6, at::kBFloat16).reshape({2, 3}).t()));
  EXPECT_EQ(t[1].scalar_type(), at::kBool);
  EXPECT_TRUE(t[1].item<bool>());
  EXPECT_EQ(t[2].sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(t[3].scalar_type(), at::kLong);
  EXPECT_EQ(t[3][1].item<int64_t>(), int64_t{1} << 40);
}

}  // namespace

TEST(TensorFile, EveryDtypeRoundTripsBitForBit) {
  TempDir dir("tcfuzz-tensorfile");
  at::manual_seed(3);
  std::vector<at::Tensor> tensors;
  for (auto type : {at::kBool, at::kByte, at::kChar, at::kShort, at::kInt, at::kLong, at::kUInt16, at::kUInt32,
                    at::kUInt64, at::kHalf, at::kBFloat16, at::kFloat, at::kDouble, at::kFloat8_e4m3fn,
                    at::kFloat8_e5m2})
    tensors.push_back((at::randn({3, 5}) * 50).to(type));
  tensors.push_back(at::tensor(std::numeric_limits<double>::quiet_NaN()));  // 0-d, NaN kept
  auto file = dir.path() / "all.safetensors";
  oracles::saveTensorFile(file, tensors);
  auto back = oracles::loadTensorFile(file);
  ASSERT_EQ(back.size(), tensors.size());
  for (size_t i = 0; i + 1 < tensors.size(); ++i) {
    EXPECT_EQ(back[i].scalar_type(), tensors[i].scalar_type()) << i;
    EXPECT_TRUE(at::equal(back[i].view(at::kByte), tensors[i].contiguous().view(at::kByte))) << i;
  }
  EXPECT_TRUE(std::isnan(back.back().item<double>()));
}

TEST(TensorFile, WhatTheDefaultTorchWritesLoads) {
  TempDir dir("tcfuzz-tensorfile");
  auto file = dir.path() / "py.safetensors";
  writeWithWorkerCode(TCFUZZ_DEFAULT_PYTHON, file);
  expectWorkerTensors(oracles::loadTensorFile(file));
}

TEST(TensorFile, WhatEveryExtraTorchWritesLoads) {
  auto extra = test_support::extraTorchPythons();
  if (extra.empty()) GTEST_SKIP() << "no .venv-torch-<version>/ here (TCFUZZ_EXTRA_TORCH=... scripts/setup makes one)";
  for (const auto& python : extra) {
    TempDir dir("tcfuzz-tensorfile");
    auto file = dir.path() / "py.safetensors";
    writeWithWorkerCode(python, file);
    SCOPED_TRACE(python.string());
    expectWorkerTensors(oracles::loadTensorFile(file));
  }
}

TEST(TensorFile, CorruptFilesAreRefusedWithTheReason) {
  TempDir dir("tcfuzz-tensorfile");
  auto good = dir.path() / "good.safetensors";
  oracles::saveTensorFile(good, {at::ones({4}), at::zeros({2}, at::kLong)});
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  auto refused = [&](const std::string& content, const std::string& why) {
    auto file = dir.path() / "bad.safetensors";
    std::ofstream(file, std::ios::binary | std::ios::trunc) << content;
    try {
      oracles::loadTensorFile(file);
      ADD_FAILURE() << "accepted a file that should fail with: " << why;
    } catch (const oracles::OutputLoadError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("bad.safetensors"), std::string::npos) << what;
      EXPECT_NE(what.find(why), std::string::npos) << what;
    }
  };
  refused("abc", "shorter than its 8-byte header length");
  refused(bytes.substr(0, bytes.size() - 4), "data_offsets outside the data");
  std::string huge = bytes;
  huge[5] = '\x7f';
  refused(huge, "exceeds the file");
  std::string dtype = bytes;
  dtype.replace(dtype.find("\"F32\""), 5, "\"Q32\"");
  refused(dtype, "unknown dtype 'Q32'");
  std::string header = bytes;
  header[8] = '[';
  refused(header, "not a JSON object");
  EXPECT_THROW(oracles::loadTensorFile(dir.path() / "missing.safetensors"), oracles::OutputLoadError);
}
