// Real worker zygotes (the venv's torch) and the ways a job can die.
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/headeronly/version.h>

#include "TestWorkers.h"
#include "fuzzer/worker/InductorCache.h"
#include "oracles/judge/OutputLoader.h"

using namespace tcfuzz;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;

namespace {

Job eagerJob(const TempDir& dir, const std::string& program, const std::string& id, double timeout = 30) {
  Job job;
  job.id = id;
  job.program = sourcePath(program);
  job.mode = RunMode::Eager;
  job.limits = Limits{timeout, 2048};
  job.jobDir = dir.path() / "jobs" / id;
  return job;
}

}  // namespace

TEST(WorkerPool, EachFailureModeHasItsOwnStatusAndThePoolKeepsRunning) {
  TempDir dir("tcfuzz-pool");
  WorkerPool pool(test_support::testWorkerSpec(dir.path()), 2);
  EXPECT_EQ(pool.size(), 2u);
  EXPECT_FALSE(pool.hello().torch.version.empty());

  auto segv = pool.submit(eagerJob(dir, "tests/programs/segfault.py", "segv"));
  auto loop = pool.submit(eagerJob(dir, "tests/programs/endless_loop.py", "loop", 3));
  auto huge = pool.submit(eagerJob(dir, "tests/programs/huge_allocation.py", "huge"));
  auto syntax = pool.submit(eagerJob(dir, "tests/programs/syntax_error.py", "syntax"));

  oracles::RunResult r = segv.get();
  EXPECT_EQ(r.status, oracles::RunStatus::Signal);
  EXPECT_EQ(r.signalName, "SIGSEGV");
  EXPECT_EQ(r.phase, "run");
  EXPECT_NE(r.stderrTail.find("Fatal Python error"), std::string::npos) << r.stderrTail;  // faulthandler

  r = loop.get();
  EXPECT_EQ(r.status, oracles::RunStatus::Timeout);
  EXPECT_EQ(r.phase, "run");
  EXPECT_GE(r.times.childWall, 3.0);
  EXPECT_LT(r.times.childWall, 10.0);

  r = huge.get();
  EXPECT_EQ(r.status, oracles::RunStatus::OutOfMemory);
  EXPECT_EQ(r.phase, "run");

  r = syntax.get();
  EXPECT_EQ(r.status, oracles::RunStatus::Exception);
  EXPECT_EQ(r.phase, "load");
  ASSERT_TRUE(r.exception);
  EXPECT_EQ(r.exception->type, "SyntaxError");

  // After all that, the same pool still runs a correct program.
  Job ok = eagerJob(dir, "corpus/conv1d_mean_linear.py", "ok");
  ok.repeat = 2;
  r = pool.submit(ok).get();
  EXPECT_EQ(r.status, oracles::RunStatus::Ok) << r.summary();
  ASSERT_TRUE(r.outputs);
  // Call 1's output, what its storage is shared with, the input and four parameters after forward, then
  // calls 2 and 3 (forward_checks.py).
  ASSERT_EQ(r.outputs->leaves.size(), 9u);
  EXPECT_EQ(r.outputs->leaves[0].role, "output");
  EXPECT_EQ(r.outputs->leaves[1].role, "alias");
  EXPECT_EQ(r.outputs->leaves[1].kind, oracles::OutputLeaf::Kind::Other);
  EXPECT_EQ(r.outputs->leaves[1].repr, "nothing");
  EXPECT_EQ(r.outputs->leaves[2].role, "state");
  EXPECT_EQ(r.outputs->leaves[8].role, "fresh-inputs");
  EXPECT_EQ(r.outputs->leaves[0].dtype, "float32");
  EXPECT_EQ(r.outputs->leaves[0].shape, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(r.repeatOutputs.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "jobs/ok/outputs.safetensors"));
  EXPECT_GT(r.times.roundTrip, 0.0);
}

TEST(WorkerPool, ContractViolationIsAnExceptionInLoad) {
  TempDir dir("tcfuzz-pool");
  std::filesystem::create_directories(dir.path() / "progs");
  auto program = dir.path() / "progs/no_inputs.py";
  std::ofstream(program) << "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n";
  WorkerPool pool(test_support::testWorkerSpec(dir.path()), 1);
  Job job = eagerJob(dir, "", "contract");
  job.program = program;
  auto r = pool.submit(job).get();
  EXPECT_EQ(r.status, oracles::RunStatus::Exception);
  EXPECT_EQ(r.phase, "load");
  ASSERT_TRUE(r.exception);
  EXPECT_EQ(r.exception->type, "ContractError");
  EXPECT_NE(r.exception->message.find("make_inputs"), std::string::npos);
}

TEST(WorkerPool, RefusesAPythonWithoutTorchWithAClearMessage) {
  TempDir dir("tcfuzz-pool");
  // A bare venv of the same interpreter: no site-packages, so no torch.
  auto bare = dir.path() / "bare-venv";
  ASSERT_EQ(std::system(fmt::format("'{}' -m venv --without-pip '{}'", TCFUZZ_DEFAULT_PYTHON, bare.string()).c_str()), 0);
  WorkerSpec spec = test_support::testWorkerSpec(dir.path());
  spec.python = bare / "bin" / "python";
  try {
    WorkerPool pool(spec, 1);
    FAIL() << "expected WorkerStartError";
  } catch (const WorkerStartError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cannot run tcfuzz's workers"), std::string::npos) << what;
    EXPECT_NE(what.find("No module named 'torch'"), std::string::npos) << what;
  }
}

TEST(WorkerPool, RunsATorchOtherThanTheLinkedOneWithoutARebuild) {
  auto extra = test_support::extraTorchPythons();
  if (extra.empty()) GTEST_SKIP() << "no .venv-torch-<version>/ here (TCFUZZ_EXTRA_TORCH=... scripts/setup makes one)";
  TempDir dir("tcfuzz-pool");
  WorkerSpec spec = test_support::testWorkerSpec(dir.path());
  // Relative, as a user types it (--python .venv-torch-2.11.0/bin/python): it means this directory's, in
  // the sandbox too (it used to mean the sandbox's own directory: execvp failed and the start timed out).
  spec.python = extra.front().lexically_relative(std::filesystem::current_path());
  ASSERT_EQ(spec.python.string().front(), '.') << spec.python;
  WorkerPool pool(spec, 1);
  std::string folder = extra.front().parent_path().parent_path().filename().string();  // .venv-torch-<v>
  std::string expected = folder.substr(std::string(".venv-torch-").size());
  EXPECT_EQ(oracles::releaseOf(pool.hello().torch.version), expected);
  EXPECT_NE(pool.hello().torch.version, TORCH_VERSION);
  EXPECT_FALSE(pool.hello().torch.git.empty());
  EXPECT_FALSE(pool.hello().inductorOptions.empty());
  // Its outputs cross to the linked LibTorch through the version-independent tensor file.
  auto r = pool.submit(eagerJob(dir, "corpus/conv1d_mean_linear.py", "old-torch")).get();
  ASSERT_EQ(r.status, oracles::RunStatus::Ok) << r.stderrTail;
  ASSERT_TRUE(r.outputs);
  auto loaded = oracles::loadOutputs(*r.outputs, r.jobDir);
  ASSERT_FALSE(loaded.tensors.empty());
  EXPECT_GT(loaded.tensors.front().numel(), 0);
}

TEST(WorkerPool, SandboxedProgramCannotWriteOutsideItsWorkDirectory) {
  if (!probeBubblewrap().empty()) GTEST_SKIP() << "bubblewrap cannot run here: " << probeBubblewrap();
  TempDir dir("tcfuzz-pool");
  // Outside the work directory nothing of the host is writable: the source tree is not even mounted, and
  // /tmp is the sandbox's own. The writes run as torch's code (compiled under torch's file name), so the
  // program guard lets them through and the OS sandbox alone must stop them.
  auto target = sourcePath("build/sandbox-escape-probe");
  auto tmpTarget = std::filesystem::temp_directory_path() / "tcfuzz-sandbox-escape-probe";
  std::filesystem::remove(target);
  std::filesystem::remove(tmpTarget);
  auto program = dir.path() / "escape.py";
  std::ofstream(program) << "import torch\n"
                            "WRITE = '''\n"
                            "try:\n"
                            "    open('" << tmpTarget.string() << "', 'w').write('x')\n"
                            "except OSError:\n"
                            "    pass\n"
                            "open('" << target.string() << "', 'w').write('x')\n"
                            "'''\n"
                            "class Model(torch.nn.Module):\n"
                            "    def forward(self, x):\n"
                            "        exec(compile(WRITE, torch.__file__, 'exec'), {})\n"
                            "        return x\n"
                            "def make_inputs(seed):\n    return (torch.zeros(1),)\n";
  WorkerPool pool(test_support::testWorkerSpec(dir.path()), 1);
  Job job = eagerJob(dir, "", "escape");
  job.program = program;
  auto r = pool.submit(job).get();
  EXPECT_EQ(r.status, oracles::RunStatus::Exception) << r.summary();
  ASSERT_TRUE(r.exception);
  EXPECT_EQ(r.exception->type, "FileNotFoundError") << r.exception->message;
  EXPECT_FALSE(std::filesystem::exists(target));
  EXPECT_FALSE(std::filesystem::exists(tmpTarget));

  // Written plainly, the same write is the program's own: the guard refuses it first.
  std::ofstream(program) << "import torch\n"
                            "class Model(torch.nn.Module):\n"
                            "    def forward(self, x):\n"
                            "        open('" << target.string() << "', 'w').write('x')\n"
                            "        return x\n"
                            "def make_inputs(seed):\n    return (torch.zeros(1),)\n";
  Job plain = eagerJob(dir, "", "escape-plain");
  plain.program = program;
  auto refused = pool.submit(plain).get();
  EXPECT_EQ(refused.status, oracles::RunStatus::Refused) << refused.summary();
  ASSERT_EQ(refused.refusals.size(), 1u);
  EXPECT_EQ(refused.refusals[0], "filesystem write: open '" + target.string() + "' mode 'w'");
  EXPECT_FALSE(std::filesystem::exists(target));
}

TEST(WorkerPool, ADeadZygoteIsAResultAndIsRestarted) {
  TempDir dir("tcfuzz-pool");
  WorkerPool pool(test_support::testWorkerSpec(dir.path()), 1);
  auto r = pool.submit(eagerJob(dir, "tests/programs/kill_zygote.py", "kill")).get();
  EXPECT_EQ(r.status, oracles::RunStatus::Signal);
  EXPECT_EQ(r.phase, "harness");
  EXPECT_NE(r.stderrTail.find("worker zygote died"), std::string::npos) << r.stderrTail;
  // The next job gets a fresh zygote.
  r = pool.submit(eagerJob(dir, "corpus/conv1d_mean_linear.py", "after")).get();
  EXPECT_EQ(r.status, oracles::RunStatus::Ok) << r.summary();
}

TEST(WorkerPool, AWorkerThatDiesBeforeItsHelloIsAClearStartErrorNotACrash) {
  TempDir dir("tcfuzz-pool");
  WorkerSpec spec = test_support::testWorkerSpec(dir.path());
  spec.harness = dir.path() / "missing_harness.py";  // python exits at once: no hello, a closed pipe
  try {
    WorkerPool pool(spec, 2);
    FAIL() << "expected WorkerStartError";
  } catch (const WorkerStartError& e) {
    EXPECT_NE(std::string(e.what()).find("exited before its hello"), std::string::npos) << e.what();  // not "within 300s"
    EXPECT_NE(std::string(e.what()).find("missing_harness.py"), std::string::npos) << e.what();  // the log tail
  }
}

namespace {

/// The kernel libraries Inductor built under `cacheDir`, and how many of them LLD linked (it writes
/// "Linker: [Debian ]LLD 14.0.6" into .comment; GNU ld writes no linker name).
std::pair<int, int> kernelLibrariesAndLldLinked(const std::filesystem::path& cacheDir) {
  int libraries = 0, lld = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(cacheDir)) {
    if (e.path().extension() != ".so") continue;
    ++libraries;
    std::ifstream in(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (size_t at = bytes.find("Linker: "); at != std::string::npos && bytes.substr(at, 32).find("LLD") != std::string::npos)
      ++lld;
  }
  return {libraries, lld};
}

oracles::RunResult compiledJob(WorkerPool& pool, const TempDir& dir, const std::string& id) {
  Job job = eagerJob(dir, "corpus/conv1d_mean_linear.py", id, 300);
  job.mode = RunMode::Compiled;
  job.limits = Limits{300, 4096};
  return pool.submit(std::move(job)).get();
}

}  // namespace

// --kernel-linker lld links every Inductor kernel with LLD; default leaves torch's own link step alone.
TEST(WorkerPool, KernelLinkerLldLinksEveryInductorKernelWithLldAndDefaultWithNone) {
  for (std::string linker : {"lld", "default"}) {
    TempDir dir("tcfuzz-linker");
    WorkerSpec spec = test_support::testWorkerSpec(dir.path());
    spec.kernelLinker = linker;
    spec.inductorCacheDir = dir.path() / "inductor";
    WorkerPool pool(spec, 1);
    ASSERT_EQ(pool.hello().kernelLinker, linker);
    auto r = compiledJob(pool, dir, "compiled-" + linker);
    ASSERT_EQ(r.status, oracles::RunStatus::Ok) << r.summary() << "\n" << r.stderrTail;
    auto [libraries, lld] = kernelLibrariesAndLldLinked(spec.inductorCacheDir);
    ASSERT_GT(libraries, 0) << "Inductor built no kernel library under " << spec.inductorCacheDir;
    EXPECT_EQ(lld, linker == "lld" ? libraries : 0) << linker << ": " << lld << " of " << libraries << " linked by LLD";
  }
}

// A torch that cannot take a compiler command line refuses --kernel-linker lld clearly; auto falls back.
TEST(WorkerPool, KernelLinkerLldOnATorchWithoutCompilerCommandsIsARefusalAndAutoFallsBack) {
  auto extra = test_support::extraTorchPythons();
  if (extra.empty()) GTEST_SKIP() << "no .venv-torch-<version>/ here (TCFUZZ_EXTRA_TORCH=... scripts/setup makes one)";
  TempDir dir("tcfuzz-linker-old");
  WorkerSpec spec = test_support::testWorkerSpec(dir.path());
  spec.python = extra.front();
  spec.kernelLinker = "lld";
  try {
    WorkerPool pool(spec, 1);
    // A newer extra torch may take command lines: then it is LLD, as asked.
    EXPECT_EQ(pool.hello().kernelLinker, "lld");
  } catch (const WorkerStartError& e) {
    EXPECT_NE(std::string(e.what()).find("--kernel-linker lld: this torch takes CXX as one program"), std::string::npos)
        << e.what();
    spec.kernelLinker = "auto";
    WorkerPool pool(spec, 1);
    EXPECT_EQ(pool.hello().kernelLinker, "default");
  }
}

TEST(InductorCache, OverItsCapTheLeastRecentlyWrittenEntriesGoFirstAndFreshOnesStay) {
  namespace fs = std::filesystem;
  TempDir dir("tcfuzz-inductor-cache");
  fs::path cache = dir.path() / "cache";
  auto write = [&](const fs::path& rel, size_t bytes, std::chrono::minutes age) {
    fs::create_directories((cache / rel).parent_path());
    std::ofstream(cache / rel) << std::string(bytes, 'x');
    fs::last_write_time(cache / rel, fs::file_time_type::clock::now() - age);
  };
  write("fxgraph/aa/entry", 4000, std::chrono::minutes(50));  // oldest: the first to go
  write("ab/kernel.so", 3000, std::chrono::minutes(40));
  write("ab/kernel.cpp", 1000, std::chrono::minutes(35));      // the same 2-char directory: one entry per file
  write("fxgraph/bb/entry", 2000, std::chrono::minutes(30));
  write("triton/0/new", 5000, std::chrono::minutes(0));        // written just now: kept whatever its age rank
  CacheTrim none = trimCache(cache, 0, std::chrono::seconds(120));
  EXPECT_EQ(none.bytesBefore, 15000u);
  EXPECT_EQ(none.entriesRemoved, 0);  // a cap of 0 trims nothing
  CacheTrim under = trimCache(cache, 20000, std::chrono::seconds(120));
  EXPECT_EQ(under.bytesAfter, 15000u);
  EXPECT_EQ(under.entriesRemoved, 0);
  CacheTrim t = trimCache(cache, 10000, std::chrono::seconds(120));  // to at most 9000 bytes
  EXPECT_EQ(t.bytesBefore, 15000u);
  EXPECT_EQ(t.bytesAfter, 8000u);
  EXPECT_EQ(t.entriesRemoved, 2);
  EXPECT_FALSE(fs::exists(cache / "fxgraph/aa"));
  EXPECT_FALSE(fs::exists(cache / "ab/kernel.so"));
  EXPECT_TRUE(fs::exists(cache / "ab/kernel.cpp"));
  EXPECT_TRUE(fs::exists(cache / "fxgraph/bb/entry"));
  EXPECT_TRUE(fs::exists(cache / "triton/0/new"));
  EXPECT_EQ(trimCache(dir.path() / "missing", 1, std::chrono::seconds(0)).bytesBefore, 0u);
}
