// Batched compiles in the campaign: a lane's program judged alone or with others under one compile
// (fuzzer/worker/BatchTester.h); each member recorded as a program of its own.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "fuzzer/campaign/Campaign.h"
#include "generators/python/BatchProgram.h"
#include "generators/python/PythonConstructs.h"

namespace tcfuzz {

namespace fs = std::filesystem;

namespace {

// Distinct stream of one campaign seed: the batch size drawn for a program.
constexpr uint64_t kBatchStream = 0x6261746368657321ULL;

}  // namespace

std::optional<int64_t> Campaign::claimIndex() {
  std::lock_guard lock(mutex_);
  if (settings_.maxPrograms > 0 && started_ >= settings_.maxPrograms) return std::nullopt;
  started_++;
  return nextIndex_++;
}

int Campaign::batchSizeFor(const Candidate& first, const SampledCompile& compile, ArmPulls& pulls) {
  const PinnedCompile& pinned = settings_.pinned;
  if (pinned.batchSize == 1 || compile.config.trains() || pinned.training) return 1;
  if (pinned.batchSize) return *pinned.batchSize;
  gen::Rng rng = gen::Rng::forProgram(settings_.seed ^ kBatchStream, static_cast<uint64_t>(first.index));
  std::lock_guard lock(mutex_);
  return scheduler_.sampleBatch(rng, CostAwareScheduler::batchContext(compile), pulls, secondsToStop());
}

bool Campaign::batchKeepsConstructs(const oracles::CompileConfig& config) {
  return !config.exports() && !config.fullgraph;
}

void Campaign::prepareMember(Candidate& c, const fs::path& scratch, Trial& t, const Candidate& first,
                             const Trial& firstTrial) const {
  // The compile arms are first's (the batch drew them once); the program's own size arm stays its own.
  for (const auto& arm : first.pulls.arms)
    if (arm.first != ScheduleDimension::Size) c.pulls.arms.push_back(arm);
  t.compile = firstTrial.compile;
  t.test = firstTrial.test;
  c.graph = gen::batchMemberProgram(c.graph, batchKeepsConstructs(t.compile.config));
  if (t.compile.config.exports()) c.graph = gen::singleTraceProgram(c.graph);  // as first's (prepareTrial)
  t.py = emitter_.emit(c.graph);
  t.file = scratch / fmt::format("{:06d}.py", c.index);
  writeFileAtomically(t.file, t.py);
}

std::optional<Campaign::Candidate> Campaign::testFromLane(Candidate& first, gen::Generator& generator,
                                                           const fs::path& scratch) {
  // The first program's configuration is drawn before the batch size, whose arms are that configuration's.
  Trial firstTrial;
  drawCompile(first, firstTrial);
  ArmPulls batchArm;
  int size = batchSizeFor(first, firstTrial.compile, batchArm);
  if (size <= 1) {
    first.pulls.arms.insert(first.pulls.arms.end(), batchArm.arms.begin(), batchArm.arms.end());
    testDrawn(first, scratch, firstTrial);
    return std::nullopt;
  }
  std::vector<Candidate> members;
  std::vector<Trial> trials;
  gen::BatchRoom room(static_cast<size_t>(policy_.schedule.batchMaxNodes));
  std::optional<Candidate> next = std::move(first);
  std::optional<Candidate> carried;
  for (int drawn = 1;; ++drawn) {
    if (next) {
      // A seed-corpus program is judged as given: it joins a batch only when it is plain already.
      bool asGiven = next->origin == "seed" && gen::plainProgram(next->graph).origin.plain;
      gen::BatchPlace place = room.place(next->graph, !asGiven);
      if (place == gen::BatchPlace::NextBatch) {
        carried = std::move(next);
        break;
      }
      if (place == gen::BatchPlace::Alone) {
        if (drawn == 1) testDrawn(*next, scratch, firstTrial);
        else testCandidate(*next, scratch);  // as drawn
      } else {
        room.add(next->graph);
        Trial t;
        if (members.empty()) {
          next->pulls.arms.insert(next->pulls.arms.end(), batchArm.arms.begin(), batchArm.arms.end());
          if (drawn == 1) {  // the first program, its configuration drawn (a training step's never reaches here)
            t = std::move(firstTrial);
            writeTrial(*next, scratch, t, true);
          } else {
            prepareTrial(*next, scratch, t, true);
          }
        } else {
          prepareMember(*next, scratch, t, members.front(), trials.front());
        }
        members.push_back(std::move(*next));
        trials.push_back(std::move(t));
      }
      next.reset();
    }
    if (static_cast<int>(members.size()) >= size || drawn >= 2 * size || stopping_) break;
    std::optional<int64_t> index = claimIndex();
    if (!index) break;
    next = makeCandidate(*index, generator);
    if (!next) {
      std::lock_guard lock(mutex_);
      started_--;  // a duplicate does not count against the budget
    }
  }
  if (!members.empty()) testBatch(members, trials, scratch);
  return carried;
}

void Campaign::testBatch(std::vector<Candidate>& members, std::vector<Trial>& trials, const fs::path& scratch) {
  int size = static_cast<int>(members.size());
  if (size == 1) {  // no second member came: the first alone, as drawn (its batch arm credited with a batch of one)
    if (runTrial(members[0], trials[0])) finishTrial(members[0], trials[0]);
    return;
  }
  // The members that share the batch's first graph come first; then those whose state changes between calls, each
  // in a frame of its own; last those whose frame Dynamo breaks. Drawn order within each.
  std::vector<int> order(size), places(size);
  std::iota(order.begin(), order.end(), 0);
  for (int m = 0; m < size; ++m) places[m] = static_cast<int>(gen::batchFrame(members[m].graph, emitter_.catalog()));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return places[a] < places[b]; });
  if (!std::is_sorted(order.begin(), order.end())) {
    std::vector<Candidate> drawnMembers = std::move(members);
    std::vector<Trial> drawnTrials = std::move(trials);
    members.clear();
    trials.clear();
    for (int m : order) {
      members.push_back(std::move(drawnMembers[m]));
      trials.push_back(std::move(drawnTrials[m]));
    }
  }
  std::vector<gen::Graph> graphs;
  std::vector<std::string> labels;
  std::vector<fs::path> files;
  for (int m = 0; m < size; ++m) {
    graphs.push_back(members[m].graph);
    labels.push_back(fmt::format("program {:06d} ({})", members[m].index, members[m].origin));
    files.push_back(trials[m].file);
  }
  gen::BatchProgram batch = gen::emitBatch(emitter_, graphs, labels);
  fs::path file = scratch / fmt::format("{:06d}-batch.py", members[0].index);
  writeFileAtomically(file, batch.py);
  // The batch of some members (positions in this one): a batch again without an invalid member, or where a
  // batch-only finding held.
  auto batchOf = [&](const std::vector<int>& keep) {
    std::vector<gen::Graph> g;
    std::vector<std::string> l;
    for (int m : keep) {
      g.push_back(graphs[m]);
      l.push_back(labels[m]);
    }
    return gen::emitBatch(emitter_, g, l);
  };
  std::vector<fs::path> written{file};
  BatchTester::Rebatch rebatch = [&](const std::vector<int>& keep) {
    written.push_back(scratch / fmt::format("{:06d}-batch-{}.py", members[0].index, written.size()));
    gen::BatchProgram again = batchOf(keep);
    writeFileAtomically(written.back(), again.py);
    return std::make_pair(written.back(), again);
  };
  std::vector<BatchMemberResult> results;
  bool judged = runTrial(members[0], trials[0],
                         [&] { results = batchTester_.test(file, batch, files, trials[0].test, rebatch); });
  std::error_code ignored;
  for (const auto& w : written) fs::remove(w, ignored);
  if (!judged) {
    std::lock_guard lock(mutex_);
    for (int m = 1; m < size; ++m) {
      fs::remove(trials[m].file, ignored);
      abandoned_ += stopping_ ? 1 : 0;
    }
    return;
  }
  for (int m = 0; m < size; ++m) {
    Trial& t = trials[m];
    t.result = std::move(results[m].result);
    t.batchSize = size;
    t.batchMember = m;
    t.judgement = results[m].judgement;
    if (t.judgement == BatchJudgement::BatchOnly) {
      // The batch it held in (after an invalid member left, a smaller one): its programs, their IR, its place.
      const std::vector<int>& heldIn = results[m].batch;
      t.batchMembers = {{"programs", nlohmann::json::array()}, {"members", nlohmann::json::array()}};
      for (size_t at = 0; at < heldIn.size(); ++at) {
        if (heldIn[at] == m) t.batchMembers["member"] = at;
        t.batchMembers["programs"].push_back(labels[heldIn[at]]);
        t.batchMembers["members"].push_back(graphs[heldIn[at]].toJson());
      }
      t.batchPy = batchOf(heldIn).py;
    }
    finishTrial(members[m], t);
  }
}

}  // namespace tcfuzz
