// The persistent worker child (fuzzer/worker/python/persistent.py): one warm process serves many program jobs,
// gives the same results as a fresh child, retires on its budget, on a crash and on a state leak; and
// ProgramTester confirms what it finds in a fresh process with a cold cache.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <vector>

#include "TestWorkers.h"
#include "fuzzer/worker/ProgramTester.h"
#include "generators/Generator.h"
#include "generators/OpCatalog.h"
#include "generators/python/PythonEmitter.h"
#include "oracles/judge/OutputLoader.h"

using namespace tcfuzz;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;

namespace {

WorkerSpec persistentSpec(const std::filesystem::path& dir, int childJobs) {
  WorkerSpec spec = test_support::testWorkerSpec(dir);
  spec.childJobs = childJobs;
  return spec;
}

Job programJob(const std::filesystem::path& program, const std::filesystem::path& dir, const std::string& id,
               RunMode mode = RunMode::Eager) {
  Job job;
  job.id = id;
  job.program = program;
  job.mode = mode;
  job.jobDir = dir / id;
  job.limits = Limits{300, 4096};
  job.threads = 1;
  job.persistent = true;
  return job;
}

TestSettings persistentSettings(const std::string& backend) {
  TestSettings s;
  s.compile.backend = backend;
  s.limits = Limits{600, 4096};
  s.threads = 1;
  s.persistent = true;
  s.cheapChecksFirst = true;
  s.confirmFindings = true;
  return s;
}

/// One zygote with a 50-job persistent child, shared by the tests that do not depend on its budget
/// (each zygote start costs half a minute: importing torch, warming the ISA probe, the warm-up compile).
class WarmWorker : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("tcfuzz-persistent");
    pool_ = new WorkerPool(persistentSpec(dir_->path(), 50), 1);
    tester_ = new ProgramTester(*pool_, oracles::Comparator{}, dir_->path() / "jobs");
  }
  static void TearDownTestSuite() {
    delete tester_;
    delete pool_;
    delete dir_;
  }
  static oracles::RunResult run(const std::string& program, const std::string& id, RunMode mode = RunMode::Eager) {
    return pool_->submit(programJob(sourcePath(program), dir_->path(), id, mode)).get();
  }
  static TempDir* dir_;
  static WorkerPool* pool_;
  static ProgramTester* tester_;
};

TempDir* WarmWorker::dir_ = nullptr;
WorkerPool* WarmWorker::pool_ = nullptr;
ProgramTester* WarmWorker::tester_ = nullptr;

}  // namespace

TEST(PersistentWorker, AChildServesManyJobsAndIsReplacedAfterItsBudget) {
  TempDir dir("tcfuzz-persistent");
  WorkerPool pool(persistentSpec(dir.path(), 3), 1);
  EXPECT_EQ(pool.hello().childJobs, 3);
  std::vector<int> jobsBefore;
  for (int i = 0; i < 7; ++i) {
    auto r = pool.submit(programJob(sourcePath("tests/programs/linear_tanh_sum.py"), dir.path(),
                                    "job" + std::to_string(i))).get();
    ASSERT_TRUE(r.ok()) << r.summary();
    EXPECT_TRUE(r.child.persistent);
    jobsBefore.push_back(r.child.jobsBefore);
  }
  EXPECT_EQ(jobsBefore, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
}

TEST(PersistentWorker, FreshUntilWarmRunsEagerJobsFreshWhileTheChildWarmsAndCompiledJobsInIt) {
  TempDir dir("tcfuzz-persistent");
  WorkerSpec spec = persistentSpec(dir.path(), 50);
  spec.freshUntilWarm = true;
  WorkerPool pool(spec, 1);
  auto program = sourcePath("tests/programs/linear_tanh_sum.py");
  // Right after the hello the persistent child is still in its warm-up compile: an eager job does not wait.
  auto eager = pool.submit(programJob(program, dir.path(), "eager-cold")).get();
  ASSERT_TRUE(eager.ok()) << eager.summary();
  EXPECT_FALSE(eager.child.persistent);
  // A compiled job waits for the warm child and runs in it; from then on every job does.
  auto compiled = pool.submit(programJob(program, dir.path(), "compiled", RunMode::Compiled)).get();
  ASSERT_TRUE(compiled.ok()) << compiled.summary();
  EXPECT_TRUE(compiled.child.persistent);
  EXPECT_EQ(compiled.child.jobsBefore, 0);
  auto again = pool.submit(programJob(program, dir.path(), "eager-warm")).get();
  ASSERT_TRUE(again.ok()) << again.summary();
  EXPECT_TRUE(again.child.persistent);
  EXPECT_EQ(again.child.jobsBefore, 1);
}

/// The precompiled header files (*.gch) under `dir`: path -> last write time.
std::map<std::filesystem::path, std::filesystem::file_time_type> precompiledHeaders(const std::filesystem::path& dir) {
  std::map<std::filesystem::path, std::filesystem::file_time_type> found;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->path().extension() == ".gch") found[it->path()] = it->last_write_time();
  return found;
}

TEST(PersistentWorker, PrecompiledHeadersAreBuiltOnceInTheSharedDirectoryAndReusedByTheNextRun) {
  TempDir shared("tcfuzz-headers");
  std::map<std::filesystem::path, std::filesystem::file_time_type> built;
  for (const char* run : {"first", "second"}) {
    SCOPED_TRACE(run);
    TempDir dir("tcfuzz-persistent");
    WorkerSpec spec = persistentSpec(dir.path(), 50);
    spec.headerCacheDir = shared.path() / "headers";
    WorkerPool pool(spec, 1);
    EXPECT_EQ(pool.hello().headerCache, spec.headerCacheDir.string());
    auto compiled = pool.submit(programJob(sourcePath("tests/programs/linear_tanh_sum.py"), dir.path(), "compiled",
                                           RunMode::Compiled)).get();
    ASSERT_TRUE(compiled.ok()) << compiled.summary();
    EXPECT_TRUE(precompiledHeaders(dir.path()).empty()) << "a header was built inside the run's own directory";
    auto now = precompiledHeaders(spec.headerCacheDir);
    ASSERT_FALSE(now.empty()) << "the warm-up compile built no precompiled header in the shared directory";
    if (built.empty()) built = now;
    else EXPECT_EQ(now, built) << "the second run rebuilt a header the first one left";
  }
}

TEST_F(WarmWorker, ACrashIsAResultAndTheNextJobGetsAFreshChild) {
  ASSERT_TRUE(run("tests/programs/linear_tanh_sum.py", "crash-a").ok());
  auto crash = run("tests/programs/segfault.py", "crash-b");
  EXPECT_EQ(crash.status, oracles::RunStatus::Signal);
  EXPECT_EQ(crash.signalName, "SIGSEGV");
  EXPECT_EQ(crash.phase, "run");
  EXPECT_TRUE(crash.child.persistent);
  EXPECT_GE(crash.child.jobsBefore, 1);
  auto after = run("tests/programs/linear_tanh_sum.py", "crash-c");
  ASSERT_TRUE(after.ok()) << after.summary();
  EXPECT_TRUE(after.child.persistent);
  EXPECT_EQ(after.child.jobsBefore, 0);

  Job slow = programJob(sourcePath("tests/programs/endless_loop.py"), dir_->path(), "crash-d");
  slow.limits.timeoutSeconds = 5;
  auto hung = pool_->submit(slow).get();
  EXPECT_EQ(hung.status, oracles::RunStatus::Timeout);
  auto again = run("tests/programs/linear_tanh_sum.py", "crash-e");
  ASSERT_TRUE(again.ok()) << again.summary();
  EXPECT_EQ(again.child.jobsBefore, 0);
}

TEST_F(WarmWorker, AProgramThatMonkeypatchesTorchRetiresTheChild) {
  ASSERT_TRUE(run("tests/programs/linear_tanh_sum.py", "leak-a").ok());
  auto leak = run("tests/programs/planted/monkeypatches_torch.py", "leak-b");
  ASSERT_TRUE(leak.ok()) << leak.summary();
  EXPECT_EQ(leak.child.stateLeak, "functions");
  auto next = run("tests/programs/linear_tanh_sum.py", "leak-c");
  ASSERT_TRUE(next.ok()) << next.summary();
  EXPECT_EQ(next.child.jobsBefore, 0);
  EXPECT_EQ(next.child.stateLeak, "");
}

TEST_F(WarmWorker, AGlobalModuleHookAProgramLeavesBehindIsGoneBeforeTheNextJob) {
  auto before = run("tests/programs/linear_tanh_sum.py", "hook-a");
  ASSERT_TRUE(before.ok() && before.outputs) << before.summary();
  auto hooked = run("tests/programs/planted/global_module_hook.py", "hook-b");
  ASSERT_TRUE(hooked.ok()) << hooked.summary();
  EXPECT_EQ(hooked.child.stateLeak, "");  // put back, not a leak
  auto after = run("tests/programs/linear_tanh_sum.py", "hook-c");
  ASSERT_TRUE(after.ok() && after.outputs) << after.summary();
  EXPECT_TRUE(after.child.persistent);
  EXPECT_GT(after.child.jobsBefore, 0);  // the same warm child ran the hook's program
  oracles::Comparator comparator;
  EXPECT_TRUE(comparator.identical(oracles::loadOutputs(*before.outputs, before.jobDir),
                                   oracles::loadOutputs(*after.outputs, after.jobDir)));
}

TEST(PersistentWorker, ResultsEqualThoseOfAFreshChildOverGeneratedPrograms) {
  // 120 generated programs in eager and fp64, every fifth also compiled with aot_eager and every
  // fiftieth with Inductor: a warm persistent child and a fresh child per job must agree on the
  // status of every job and on every output bit.
  TempDir dir("tcfuzz-persistent");
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  gen::Generator generator(catalog, gen::GenPolicy{}, 20261123);
  gen::PythonEmitter emitter(catalog);
  WorkerPool warm(persistentSpec(dir.path() / "warm", 500), 1);
  WorkerPool fresh(persistentSpec(dir.path() / "fresh", 1), 1);
  oracles::Comparator comparator;
  int compared = 0, outputsCompared = 0, persistentJobs = 0;
  constexpr int kPrograms = 120;
  for (int i = 0; i < kPrograms; ++i) {
    std::filesystem::path file = dir.path() / ("p" + std::to_string(i) + ".py");
    std::ofstream(file) << emitter.emit(generator.generate(static_cast<uint64_t>(i)));
    std::vector<std::pair<RunMode, std::string>> modes{{RunMode::Eager, ""}, {RunMode::Fp64, ""}};
    if (i % 5 == 0) modes.push_back({RunMode::Compiled, i % 50 == 0 ? "inductor" : "aot_eager"});
    for (const auto& [mode, backend] : modes) {
      std::string id = "p" + std::to_string(i) + "-" + std::string(toString(mode));
      Job a = programJob(file, dir.path() / "warm", id, mode);
      Job b = programJob(file, dir.path() / "fresh", id, mode);
      a.seed = b.seed = static_cast<uint64_t>(i);
      if (!backend.empty()) a.compile.backend = b.compile.backend = backend;
      b.persistent = false;
      auto fa = warm.submit(a);
      auto fb = fresh.submit(b);
      oracles::RunResult ra = fa.get(), rb = fb.get();
      SCOPED_TRACE(id + ": warm " + ra.summary() + "; fresh " + rb.summary());
      ASSERT_EQ(ra.status, rb.status);
      EXPECT_FALSE(rb.child.persistent);
      persistentJobs += ra.child.persistent;
      ++compared;
      if (ra.ok() && ra.outputs && rb.outputs) {
        EXPECT_TRUE(comparator.identical(oracles::loadOutputs(*ra.outputs, ra.jobDir),
                                         oracles::loadOutputs(*rb.outputs, rb.jobDir)));
        ++outputsCompared;
      } else if (ra.exception && rb.exception) {
        EXPECT_EQ(ra.exception->type, rb.exception->type);
      }
    }
  }
  EXPECT_EQ(persistentJobs, compared);
  EXPECT_GE(compared, kPrograms * 2 + kPrograms / 5);
  EXPECT_GE(outputsCompared, compared * 9 / 10);  // the generator's programs run: most jobs have outputs
}

TEST_F(WarmWorker, AFindingOnlyAWarmChildShowsIsAStateLeakSuspect) {
  auto r = tester_->test(sourcePath("tests/programs/planted/warm_process_only_bug.py"), persistentSettings("aot_eager"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::StateLeakSuspect) << r.verdict.reason;
  EXPECT_EQ(r.confirmation, Confirmation::NotReproduced);
  EXPECT_NE(r.verdict.reason.find("persistent worker"), std::string::npos) << r.verdict.reason;
  EXPECT_GT(r.confirmSeconds, 0);
}

TEST_F(WarmWorker, AConfirmedFindingIsTheFreshColdCacheRun) {
  TestSettings s = persistentSettings("tcfuzz_planted_numeric");
  s.plugins = {sourcePath("tests/fixtures/planted_backends.py")};
  auto r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::NumericDivergence) << r.verdict.reason;
  EXPECT_EQ(r.confirmation, Confirmation::Confirmed);
  EXPECT_FALSE(r.runs.compiled.child.persistent);
  EXPECT_EQ(r.runs.compiled.child.jobsBefore, 0);
  // The first, warm test and the confirmation's fresh one both count in what the program cost.
  EXPECT_GT(r.torchSeconds, r.runs.eager.times.childWall + r.runs.compiled.times.childWall + r.runs.fp64.times.childWall);
}

TEST_F(WarmWorker, AFailureOnlyTheSharedCacheShowsIsACacheBug) {
  std::ofstream(dir_->path() / "inductor-cache" / "planted-cache-bug") << "planted\n";  // the shared cache's marker
  auto r = tester_->test(sourcePath("tests/programs/planted/warm_cache_only_bug.py"), persistentSettings("aot_eager"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::NumericDivergence) << r.verdict.reason;
  EXPECT_EQ(r.confirmation, Confirmation::CacheOnly);
  EXPECT_TRUE(r.verdict.reason.starts_with("cache-only")) << r.verdict.reason;
}

TEST_F(WarmWorker, CheapChecksFirstNeverCompilesAProgramThatFailsInEager) {
  auto r = tester_->test(sourcePath("tests/programs/planted/eager_raises.py"), persistentSettings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::InvalidProgram);
  EXPECT_TRUE(r.compileSkipped);
  EXPECT_EQ(r.runs.compiled.phase, "skipped");
  EXPECT_FALSE(r.runs.compiled.compileFacts.has_value());
  EXPECT_EQ(r.confirmation, Confirmation::NotChecked);
}

// fp64 on demand: a compiled run equal to eager bit for bit has no fp64 job (aot_eager runs eager's kernels);
// a planted numeric bug's differs, so its fp64 job runs and arbitrates, and so does its confirmation.
TEST_F(WarmWorker, Fp64RunsOnlyWhenItCanChangeTheVerdict) {
  TestSettings s = persistentSettings("aot_eager");
  s.fp64OnDemand = true;
  auto same = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(same.verdict.verdict, oracles::Verdict::Agree) << same.verdict.reason;
  EXPECT_TRUE(same.fp64Skipped);
  EXPECT_EQ(same.runs.fp64.phase, oracles::kNotNeededPhase);
  EXPECT_NE(same.verdict.reason.find("fp64 was not run"), std::string::npos) << same.verdict.reason;

  s.compile.backend = "tcfuzz_planted_numeric";
  s.plugins = {sourcePath("tests/fixtures/planted_backends.py")};
  auto wrong = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(wrong.verdict.verdict, oracles::Verdict::NumericDivergence) << wrong.verdict.reason;
  EXPECT_FALSE(wrong.fp64Skipped);
  EXPECT_TRUE(wrong.runs.fp64.ok()) << wrong.runs.fp64.summary();
  EXPECT_EQ(wrong.confirmation, Confirmation::Confirmed);

  auto invalid = tester_->test(sourcePath("tests/programs/planted/eager_raises.py"), s);
  EXPECT_EQ(invalid.verdict.verdict, oracles::Verdict::InvalidProgram);
  EXPECT_TRUE(invalid.fp64Skipped);
}

TEST_F(WarmWorker, ACompiledJobReportsItsCompileTimeByPhase) {
  auto r = run("tests/programs/linear_tanh_sum.py", "phases", RunMode::Compiled);
  ASSERT_TRUE(r.ok()) << r.summary();
  const auto& phases = r.times.compilePhases;
  for (const char* name : {"dynamo", "aot_autograd", "lowering", "scheduling", "cxx_compile", "codegen_load"})
    EXPECT_TRUE(phases.count(name)) << name;
  double sum = 0;
  for (const auto& [name, seconds] : phases) {
    EXPECT_GE(seconds, 0) << name;
    sum += seconds;
  }
  EXPECT_NEAR(sum, r.times.compile, 1e-6);  // exclusive phases: they add up to the compile time
  EXPECT_GT(phases.at("lowering"), 0);
}

TEST_F(WarmWorker, ACompiledJobReportsWhatInductorDidAndTheNextJobOnlyItsOwn) {
  auto first = run("tests/programs/matmul_relu_sum.py", "inductor-facts-1", RunMode::Compiled);
  ASSERT_TRUE(first.ok()) << first.summary();
  ASSERT_TRUE(first.compileFacts);
  const oracles::CompileFacts& f = *first.compileFacts;
  // x @ w + b became one addmm (the "addmm" pattern), an extern kernel on CPU; relu, sum and the epilogue are
  // Inductor's lowerings, fused into one reduction kernel; cumsum runs ATen's kernel (a fallback).
  EXPECT_EQ(f.postGradOps.count("aten.addmm.default:float32"), 1u) << oracles::toJson(first).dump(1);
  EXPECT_EQ(f.postGradOps.count("aten.cumsum.default:float32"), 1u);
  EXPECT_EQ(f.patterns.count("addmm"), 1u);
  for (const char* op : {"aten.addmm.default", "aten.relu.default", "aten.sum.dim_IntList", "aten.div.Tensor"})
    EXPECT_EQ(f.lowerings.count(op), 1u) << op;
  EXPECT_EQ(f.fallbacks, (std::map<std::string, int>{{"aten.cumsum.default", 1}}));
  EXPECT_EQ(f.fusions, (std::map<std::string, int>{{"pointwise+reduction", 1}}));
  EXPECT_EQ(f.kernelKinds.at("reduction"), 1);
  EXPECT_GE(f.kernelKinds.at("extern"), 2);  // addmm and cumsum (torch 2.11 adds cumsum's MultiOutput)
  EXPECT_EQ(f.externKernels.at("extern_kernels.addmm"), 1);
  EXPECT_EQ(f.externKernels.at("torch.ops.aten.cumsum.default"), 1);
  EXPECT_GE(f.dynamoCounters.at("frames.ok"), 1);

  // The same child's next job reports its own compile only: no relu, no cumsum, no addmm pattern.
  auto second = run("tests/programs/linear_tanh_sum.py", "inductor-facts-2", RunMode::Compiled);
  ASSERT_TRUE(second.ok()) << second.summary();
  EXPECT_GE(second.child.jobsBefore, 1);
  ASSERT_TRUE(second.compileFacts);
  const oracles::CompileFacts& g = *second.compileFacts;
  EXPECT_EQ(g.lowerings.count("aten.tanh.default"), 1u) << oracles::toJson(second).dump(1);
  EXPECT_EQ(g.lowerings.count("aten.relu.default"), 0u);
  EXPECT_EQ(g.postGradOps.count("aten.cumsum.default:float32"), 0u);
  EXPECT_TRUE(g.fallbacks.empty());
  EXPECT_EQ(g.patterns.count("addmm"), 0u);
  EXPECT_EQ(g.externKernels.count("torch.ops.aten.cumsum.default"), 0u);

  // The first program again: Inductor's FX graph cache hit replays the figures its compile recorded.
  auto again = run("tests/programs/matmul_relu_sum.py", "inductor-facts-3", RunMode::Compiled);
  ASSERT_TRUE(again.ok()) << again.summary();
  ASSERT_TRUE(again.compileFacts);
  EXPECT_GE(again.compileFacts->inductorCounters["fxgraph_cache_hit"], 1) << oracles::toJson(again).dump(1);
  EXPECT_EQ(again.compileFacts->fallbacks, f.fallbacks);
  EXPECT_EQ(again.compileFacts->lowerings, f.lowerings);
  EXPECT_EQ(again.compileFacts->fusions, f.fusions);
}
