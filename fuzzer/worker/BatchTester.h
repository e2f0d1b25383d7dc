#pragma once
// Batched compiles: k programs judged as members of one module under one compile (generators/python/BatchProgram.h),
// each member's leaves judged on their own, and every member whose verdict is a finding judged again alone, in a
// fresh process with a cold cache, before anything is recorded. A compiled job that failed as a whole at no member's
// text judges no member's leaves: each member is then tested as it would be unbatched (warm, its finding confirmed
// fresh and cold). What holds only in the batch is its own kind:
// batch-only (a fault that needs the other members, a cross-program fusion bug), confirmed by a fresh cold run of
// the batch.
#include <filesystem>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "fuzzer/worker/ProgramTester.h"
#include "generators/python/BatchProgram.h"

namespace tcfuzz {

/// Which member a saved leaf belongs to: by its position among call 1's outputs, or by the input, output or
/// submodule its name names ("grad(input 3)", "param m1.w after forward", "second-call: output 2"). -1: every
/// member (the note on call 4's inputs, a role without a member).
int batchMemberOfLeaf(const gen::BatchProgram& batch, const oracles::OutputLeaf& leaf, int outputPosition);

/// Member k's part of one batch job's result: its leaves only (the same tensor file).
oracles::RunResult memberRun(const gen::BatchProgram& batch, const oracles::RunResult& run, int member);

/// Member k's verdict on its own leaves of `whole` (a batch's runs), under `comparator`; its torchSeconds is its share.
ProgramTestResult batchMemberResult(const ProgramTestResult& whole, const gen::BatchProgram& batch, int member,
                                    const oracles::Comparator& comparator);

/// How a member's verdict came about.
enum class BatchJudgement {
  InBatch,      ///< judged in the batch: no finding there
  Alone,        ///< judged alone after the batch: its eager run failed there, or its finding held alone
  NotAlone,     ///< its batch finding did not hold alone, nor in a fresh cold batch: the alone verdict stands
  BatchOnly,    ///< its finding held in a fresh cold batch, never alone: kept with the batch
};
std::string_view toString(BatchJudgement judgement);

struct BatchMemberResult {
  ProgramTestResult result;  ///< its verdict; a BatchOnly member's runs are its part of the batch's
  BatchJudgement judgement = BatchJudgement::InBatch;
  std::vector<int> batch;  ///< BatchOnly: the members (positions in the first batch) of the batch where it held
};

/// The member of `batch` (written at `file`, run as a copy of that name) whose program text raised `run`'s
/// exception: the frame of that file in the stack trace of the FX node torch was working on, else the innermost in the
/// traceback, else the last its message quotes, else the one
/// member whose inputs the message names ("m1_x2"). -1 when none does (the batch's own lines, several members' inputs,
/// a signal, a timeout, memory).
int batchMemberOfFailure(const gen::BatchProgram& batch, const std::filesystem::path& file, const oracles::RunResult& run);

class BatchTester {
 public:
  /// Writes the batch of the given members (positions in the first batch) and returns its file and layout.
  using Rebatch =
      std::function<std::pair<std::filesystem::path, gen::BatchProgram>(const std::vector<int>& members)>;

  explicit BatchTester(ProgramTester& tester) : tester_(tester) {}

  /// Tests the batch written at `batchFile` (`batch`: where its members lie) and returns one result per member,
  /// in order; `memberFiles[k]` is member k's program alone. Each member's torchSeconds is its share of the
  /// batch's jobs plus what was run for it alone. The batch job's time limit is settings' times the member count.
  /// A batch of one is the member tested alone as ProgramTester::test does. When eager fails in one member's
  /// program, that member is invalid (eager computes it as alone) and the others are batched again through
  /// `rebatch`; without it, or when the failure names no member, each is tested alone. Throws as
  /// ProgramTester::test.
  std::vector<BatchMemberResult> test(const std::filesystem::path& batchFile, const gen::BatchProgram& batch,
                                      const std::vector<std::filesystem::path>& memberFiles,
                                      const TestSettings& settings, const Rebatch& rebatch = {});

 private:
  ProgramTestResult judgeMember(const ProgramTestResult& whole, const gen::BatchProgram& batch, int member) const {
    return batchMemberResult(whole, batch, member, tester_.comparator());
  }

  ProgramTester& tester_;
};

}  // namespace tcfuzz
