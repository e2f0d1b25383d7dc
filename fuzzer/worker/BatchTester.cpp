#include "fuzzer/worker/BatchTester.h"

#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

namespace tcfuzz {

namespace {

/// How a leaf's name names what it belongs to: the first rule whose pattern matches decides.
struct LeafOwnerRule {
  const char* pattern;
  enum { Input, Output, State } by;
};

const LeafOwnerRule kLeafOwnerRules[] = {
    {R"((?:^|: )(m\d+\.)(?:self\.|global |closure cell |Member\d+\.))", LeafOwnerRule::State},  // a member's Python state
    {R"(^grad\(input (\d+)\)$)", LeafOwnerRule::Input},           // an input's gradient
    {R"(^grad\(param ([^)]+)\)$)", LeafOwnerRule::State},         // a parameter's gradient
    {R"(^input (\d+) after )", LeafOwnerRule::Input},             // an input after the call
    {R"(^(?:buffer|param) (\S+) after )", LeafOwnerRule::State},  // a buffer or parameter after the call
    {R"(output (\d+)(?: storage)?$)", LeafOwnerRule::Output},     // calls 2 to 4 and the moved call, an alias note
};

}  // namespace

int batchMemberOfLeaf(const gen::BatchProgram& batch, const oracles::OutputLeaf& leaf, int outputPosition) {
  if (leaf.role == "output") return batch.memberOfOutput(outputPosition);
  for (const LeafOwnerRule& rule : kLeafOwnerRules) {
    static thread_local std::map<const char*, std::regex> compiled;
    auto [it, added] = compiled.try_emplace(rule.pattern, rule.pattern);
    std::smatch m;
    if (!std::regex_search(leaf.name, m, it->second)) continue;
    switch (rule.by) {
      case LeafOwnerRule::Input: return batch.memberOfInput(std::stoi(m[1]));
      case LeafOwnerRule::Output: return batch.memberOfOutput(std::stoi(m[1]));
      case LeafOwnerRule::State: return batch.memberOfState(m[1]);
    }
  }
  return -1;
}

oracles::RunResult memberRun(const gen::BatchProgram& batch, const oracles::RunResult& run, int member) {
  oracles::RunResult part = run;
  auto keep = [&](oracles::OutputSet& set) {
    std::vector<oracles::OutputLeaf> own;
    int output = 0;
    for (const auto& leaf : set.leaves) {
      int owner = batchMemberOfLeaf(batch, leaf, output);
      if (leaf.role == "output") ++output;
      if (owner == member || owner < 0) own.push_back(leaf);
    }
    set.leaves = std::move(own);
  };
  if (part.outputs) keep(*part.outputs);
  for (auto& set : part.repeatOutputs) keep(set);
  return part;
}

std::string_view toString(BatchJudgement judgement) {
  switch (judgement) {
    case BatchJudgement::InBatch: return "in-batch";
    case BatchJudgement::Alone: return "alone";
    case BatchJudgement::NotAlone: return "not-alone";
    case BatchJudgement::BatchOnly: return "batch-only";
  }
  return "";
}

ProgramTestResult batchMemberResult(const ProgramTestResult& whole, const gen::BatchProgram& batch, int member,
                                    const oracles::Comparator& comparator) {
  ProgramTestResult r = whole;
  r.runs.eager = memberRun(batch, whole.runs.eager, member);
  r.runs.compiled = memberRun(batch, whole.runs.compiled, member);
  r.runs.fp64 = memberRun(batch, whole.runs.fp64, member);
  if (auto refused = oracles::sandboxRefusal(r.runs))
    r.verdict = *refused;
  else if (!whole.documentedRefusal.empty())  // the batch's compiled run was refused as documented: so is each member's
    r.verdict = whole.verdict;
  else
    r.verdict = oracles::judge(r.runs, comparator);
  double share = 1.0 / static_cast<double>(batch.members.size());
  r.torchSeconds = whole.torchSeconds * share;
  return r;
}

int batchMemberOfFailure(const gen::BatchProgram& batch, const std::filesystem::path& file,
                         const oracles::RunResult& run) {
  if (!run.exception) return -1;
  // A job runs a copy of the file in its own folder: a frame of the batch's text is one of a file of its name.
  std::string frame = "/" + file.filename().string() + "\", line ";
  // The user frame of the FX node torch was working on (a failure inside its passes), else the traceback's innermost
  // frame of the batch's text, else the last one the message quotes (Dynamo's "from user code:" and Inductor's
  // stack_traces list the frames it was compiling, which the traceback does not hold).
  for (const std::string* text : {&run.exception->nodeStackTrace, &run.exception->traceback, &run.exception->message}) {
    size_t at = text->rfind(frame);
    if (at == std::string::npos) continue;
    try {
      if (int member = batch.memberOfLine(std::stoi(text->substr(at + frame.size()))); member >= 0) return member;
    } catch (const std::exception&) {
    }
  }
  // Else the one member whose inputs the message names (the batch's forward names member k's input x2 "mk_x2": an
  // exported program's input guard, a symbolic shape's source); none, or several, names no member.
  static const std::regex kInput(R"(\bm(\d+)_[A-Za-z])");
  std::set<std::string> named;
  const std::string& message = run.exception->message;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), kInput); it != std::sregex_iterator(); ++it)
    named.insert(fmt::format("m{}", (*it)[1].str()));
  if (named.size() != 1) return -1;
  for (size_t k = 0; k < batch.members.size(); ++k)
    if (batch.members[k].module == *named.begin()) return static_cast<int>(k);
  return -1;
}

std::vector<BatchMemberResult> BatchTester::test(const std::filesystem::path& batchFile, const gen::BatchProgram& batch,
                                                 const std::vector<std::filesystem::path>& memberFiles,
                                                 const TestSettings& settings, const Rebatch& rebatch) {
  size_t k = batch.members.size();
  if (memberFiles.size() != k) throw std::invalid_argument("a batch needs one program file per member");
  std::vector<BatchMemberResult> out(k);
  std::vector<int> live(k);  // the members of the batch under test, by their position in the first
  for (size_t m = 0; m < k; ++m) live[m] = static_cast<int>(m);
  std::filesystem::path file = batchFile;
  gen::BatchProgram layout = batch;
  double spent = 0;  // batch jobs whose eager run failed: charged to the members still live
  auto chargeSpent = [&](ProgramTestResult& r) { r.torchSeconds += spent / static_cast<double>(live.size()); };
  TestSettings together = settings;
  ProgramTestResult whole;
  // The batch jobs' folders: each is removed at the end unless a member's result keeps it (the campaign removes those).
  std::vector<std::filesystem::path> screened;
  auto keepScreen = [&](const ProgramTestResult& r) {
    for (const auto* run : {&r.runs.eager, &r.runs.compiled, &r.runs.fp64})
      if (!run->jobDir.empty()) screened.push_back(run->jobDir);
  };
  auto finish = [&]() -> std::vector<BatchMemberResult> {
    std::set<std::filesystem::path> kept;
    for (const auto& m : out)
      for (const auto* run : {&m.result.runs.eager, &m.result.runs.compiled, &m.result.runs.fp64}) kept.insert(run->jobDir);
    std::error_code ignored;
    for (const auto& dir : screened)
      if (!kept.count(dir)) std::filesystem::remove_all(dir, ignored);
    return std::move(out);
  };
  // Alone, as a maintainer's first run: a fresh process, a cold cache; the fresh cold run is the confirmation.
  TestSettings alone = settings;
  alone.coldCache = true;
  alone.persistent = false;
  alone.confirmFindings = false;
  std::map<int, ProgramTestResult> ranAlone;  // members already judged alone, by position in the first batch
  for (;;) {
    if (live.size() == 1) {
      out[live[0]] = {tester_.test(memberFiles[live[0]], settings), BatchJudgement::Alone};
      chargeSpent(out[live[0]].result);
      return finish();
    }
    together.limits.timeoutSeconds = settings.limits.timeoutSeconds * static_cast<double>(live.size());
    whole = tester_.screen(file, together);
    keepScreen(whole);
    // A compiled run refused as documented where a member's text is the frame refused (a graph break in a
    // higher-order op's body, say): that member is judged alone (refused there the same way) and the others are
    // batched again. A refusal that names no member's text refuses every member alike (batchMemberResult).
    int refused = whole.compileSkipped || whole.documentedRefusal.empty() || !rebatch
                      ? -1
                      : batchMemberOfFailure(layout, file, whole.runs.compiled);
    if (refused >= 0) {
      spent += whole.torchSeconds;
      out[live[refused]] = {tester_.test(memberFiles[live[refused]], settings), BatchJudgement::Alone};
      live.erase(live.begin() + refused);
      if (live.size() > 1) std::tie(file, layout) = rebatch(live);
      continue;
    }
    // A compiled job that failed at a member's own text: that member alone, fresh and cold. When its failure holds
    // there, it is that member's finding and the others are batched again, rather than each judged alone for a
    // failure that is not theirs; when it does not, the batch is judged below (its alone run kept).
    int crashed = whole.compileSkipped || !whole.documentedRefusal.empty() || whole.runs.compiled.ok() || !rebatch
                      ? -1
                      : batchMemberOfFailure(layout, file, whole.runs.compiled);
    if (crashed >= 0 && !ranAlone.count(live[crashed])) {
      ProgramTestResult single = tester_.test(memberFiles[live[crashed]], alone);
      if (oracles::isFinding(single.verdict.verdict) && !single.runs.compiled.ok()) {
        spent += whole.torchSeconds;
        single.confirmation = Confirmation::Confirmed;
        out[live[crashed]] = {std::move(single), BatchJudgement::Alone};
        live.erase(live.begin() + crashed);
        if (live.size() > 1) std::tie(file, layout) = rebatch(live);
        continue;
      }
      ranAlone.emplace(live[crashed], std::move(single));
    }
    if (!whole.compileSkipped) break;
    int failed = batchMemberOfFailure(layout, file, whole.runs.eager);
    spent += whole.torchSeconds;
    if (failed < 0 && rebatch) {
      // No frame of a member's text (a failure in backward, say): each member's eager run alone finds the invalid
      // ones, judged alone (they stop at eager), and the rest are batched again.
      std::vector<ProgramTester::PendingRun> eager;
      for (int m : live) eager.push_back(tester_.submitOne(memberFiles[m], RunMode::Eager, settings));
      std::vector<int> valid;
      for (size_t pos = 0; pos < live.size(); ++pos) {
        oracles::RunResult r = eager[pos].result.get();
        spent += r.times.childWall;
        std::error_code ignored;
        std::filesystem::remove_all(eager[pos].jobDir, ignored);
        if (r.ok()) {
          valid.push_back(live[pos]);
        } else {
          out[live[pos]] = {tester_.test(memberFiles[live[pos]], settings), BatchJudgement::Alone};
        }
      }
      if (valid.size() < live.size()) {
        live = valid;
        if (live.empty()) return finish();
        if (live.size() > 1) std::tie(file, layout) = rebatch(live);
        continue;
      }
    }
    if (failed < 0 || !rebatch) {
      // The failure names no member's program: each is judged alone as it would be unbatched.
      for (int m : live) {
        out[m] = {tester_.test(memberFiles[m], settings), BatchJudgement::Alone};
        chargeSpent(out[m].result);
      }
      return finish();
    }
    // Eager computes the member as it does alone: its program is invalid, and the others are batched again.
    ProgramTestResult invalid = whole;
    invalid.program = memberFiles[live[failed]];
    invalid.torchSeconds = whole.torchSeconds / static_cast<double>(live.size());
    spent -= invalid.torchSeconds;
    out[live[failed]] = {std::move(invalid), BatchJudgement::InBatch};
    live.erase(live.begin() + failed);
    if (live.size() > 1) std::tie(file, layout) = rebatch(live);
  }
  k = live.size();
  double share = whole.torchSeconds / static_cast<double>(k);
  // First each member's own leaves; a finding there is judged again alone.
  struct Pending {
    size_t pos;
    ProgramTestResult alone;
    oracles::Verdict inBatch;
  };
  std::vector<Pending> pending;
  bool heldAlone = false;
  // A compiled job that failed as a whole at no member's text says nothing of any member's own leaves: each member
  // is judged as it would be unbatched (a warm run, a finding confirmed fresh and cold by the tester), at a lone
  // program's cost rather than a cold run's for every member.
  bool wholeFailed = !whole.runs.compiled.ok();
  bool unattributed = wholeFailed && settings.confirmFindings;
  for (size_t pos = 0; pos < k; ++pos) {
    int m = live[pos];
    ProgramTestResult inBatch = judgeMember(whole, layout, static_cast<int>(pos));
    inBatch.program = memberFiles[m];
    chargeSpent(inBatch);
    if (!oracles::isFinding(inBatch.verdict.verdict)) {
      out[m] = {std::move(inBatch), BatchJudgement::InBatch};
      continue;
    }
    auto ran = ranAlone.find(m);
    bool warm = ran == ranAlone.end() && unattributed;
    ProgramTestResult single = ran != ranAlone.end() ? std::move(ran->second)
                               : warm                ? tester_.test(memberFiles[m], settings)
                                                     : tester_.test(memberFiles[m], alone);
    single.torchSeconds += share;
    chargeSpent(single);
    if (oracles::isFinding(single.verdict.verdict)) {
      if (!warm) single.confirmation = Confirmation::Confirmed;  // the fresh cold run was its confirmation
      // its compiled job fails alone too, fresh and cold
      heldAlone = heldAlone || (single.confirmation == Confirmation::Confirmed && !single.runs.compiled.ok());
      out[m] = {std::move(single), BatchJudgement::Alone};
      continue;
    }
    if (!single.documentedRefusal.empty()) {
      // Alone, its compiled run was refused as documented (an exported program's input guard, say), so it was
      // never judged there: what the batch saw is not batch-only, and nothing confirmed it alone.
      single.verdict.reason = fmt::format("{} (its batch's {} is not batch-only: alone it was refused, not judged)",
                                          single.verdict.reason, oracles::toString(inBatch.verdict.verdict));
      out[m] = {std::move(single), BatchJudgement::NotAlone};
      continue;
    }
    pending.push_back({pos, std::move(single), inBatch.verdict.verdict});
  }
  // A compiled job that failed as a whole names no member: a member whose failure holds alone explains it, and
  // what holds only in the batch is kept once, with the first member; a member's own leaves are its own.
  bool keptOnce = false;
  std::optional<ProgramTestResult> again;  // the batch once more, fresh and cold: made when a finding fails alone
  for (Pending& p : pending) {
    int m = live[p.pos];
    ProgramTestResult& single = p.alone;
    bool explained = wholeFailed && (heldAlone || keptOnce);
    std::optional<ProgramTestResult> repeated;
    if (!explained) {
      if (!again) {
        TestSettings cold = together;
        cold.coldCache = true;
        cold.persistent = false;
        again = tester_.screen(file, cold);
        keepScreen(*again);
        single.torchSeconds += again->torchSeconds;  // charged to the member that asked for it
      }
      repeated = judgeMember(*again, layout, static_cast<int>(p.pos));
      if (oracles::isFinding(repeated->verdict.verdict) && settings.conditioningRuns > 0 &&
          oracles::isWrongResult(repeated->verdict.verdict)) {
        repeated->torchSeconds = 0;
        tester_.checkConditioning(file, together, *repeated, [&](const oracles::RunResult& r) {
          return memberRun(layout, r, static_cast<int>(p.pos));
        });
        single.torchSeconds += repeated->torchSeconds;
      }
    }
    if (repeated && oracles::isFinding(repeated->verdict.verdict)) {
      keptOnce = true;
      repeated->program = memberFiles[m];
      repeated->torchSeconds = single.torchSeconds;
      repeated->confirmation = Confirmation::Confirmed;
      repeated->verdict.reason = fmt::format("batch-only (member {} alone agrees: {}): {}", m, single.verdict.reason,
                                             repeated->verdict.reason);
      out[m] = {std::move(*repeated), BatchJudgement::BatchOnly, live};
    } else {
      single.verdict.reason = fmt::format("{} (its batch's {} {})", single.verdict.reason, oracles::toString(p.inBatch),
                                          explained ? "is another member's, or kept with one"
                                                    : "did not hold alone nor in a fresh batch");
      out[m] = {std::move(single), BatchJudgement::NotAlone};
    }
  }
  return finish();
}

}  // namespace tcfuzz
