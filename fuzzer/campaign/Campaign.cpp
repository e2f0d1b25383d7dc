#include "fuzzer/campaign/Campaign.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generators/python/BatchProgram.h"
#include "generators/python/PythonConstructs.h"
#include "oracles/judge/OutputLoader.h"
#include "oracles/judge/Signature.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Distinct streams of one campaign seed: the program's choice of generate/mutate, its compile config.
constexpr uint64_t kScheduleStream = 0x7363686564756c65ULL;
constexpr uint64_t kCompileStream = 0x636f6d70696c6573ULL;

/// The queue index in an AFL-style name "id:000012,src:...", or -1.
int64_t indexFromName(const std::string& name) {
  if (!name.starts_with("id:")) return -1;
  try {
    return std::stoll(name.substr(3));
  } catch (const std::exception&) {
    return -1;
  }
}

void removeQuietly(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

/// Where a program's time went, for programs.phases in findings.sqlite (ProgramRecord::phases).
json phaseRecord(const ProgramTestResult& r, const gen::Graph& g, int batchSize, BatchJudgement judgement) {
  const oracles::RunResult& c = r.runs.compiled;
  json j{{"eager_s", r.runs.eager.times.childWall},
         {"fp64_s", r.runs.fp64.times.childWall},
         {"compiled_s", c.times.childWall},
         {"compile_s", c.times.compile},
         {"run_s", c.times.run},
         {"backward_s", c.times.backward},
         {"compile_phases", c.times.compilePhases},
         {"persistent", c.child.persistent},
         {"jobs_before", c.child.jobsBefore},
         // The oracle's checks beyond call 1 (calls 2 and 3 in every job) and the ill-conditioning reruns.
         {"extra_calls_s", r.runs.eager.times.extraCalls + c.times.extraCalls + r.runs.fp64.times.extraCalls},
         {"wall_s", r.wallSeconds},
         {"nodes", g.nodes.size()}};  // the graph nodes judged (the bench's nodes per CPU-minute)
  if (r.conditioning) j["conditioning_s"] = r.conditioningSeconds;
  if (batchSize > 1) {
    j["batch"] = batchSize;
    j["batch_judged"] = toString(judgement);
  }
  if (r.compileSkipped) j["compile_skipped"] = true;
  if (r.fp64Skipped) j["fp64_skipped"] = true;
  if (r.confirmation != Confirmation::NotChecked) {
    j["confirmation"] = toString(r.confirmation);
    j["confirm_s"] = r.confirmSeconds;
  }
  return j;
}

}  // namespace

std::string statsKey(const std::string& verdict) {
  std::string key = "verdict_" + verdict;
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

// --- The campaign's inputs: its policy and seed corpus ----------------------------------------------

json CampaignPolicy::toJson() const {
  return {{"mutation_share", mutationShare},
          {"mutation_attempts", mutationAttempts},
          {"generation", generation.toJson()},
          {"compile", compile.toJson()},
          {"schedule", schedule.toJson()}};
}

CampaignPolicy CampaignPolicy::fromJson(const json& doc) {
  if (!doc.is_object()) throw std::invalid_argument("campaign policy must be a JSON object");
  CampaignPolicy p;
  for (auto& [key, v] : doc.items()) {
    if (key == "mutation_share") {
      if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1)
        throw std::invalid_argument("campaign policy: 'mutation_share' must be a share in [0, 1]");
      p.mutationShare = v.get<double>();
    } else if (key == "mutation_attempts") {
      if (!v.is_number_integer() || v.get<int>() < 1)
        throw std::invalid_argument("campaign policy: 'mutation_attempts' must be an integer >= 1");
      p.mutationAttempts = v.get<int>();
    } else if (key == "generation") {
      p.generation = gen::GenPolicy::fromJson(v);
    } else if (key == "compile") {
      p.compile = CompileMatrix::fromJson(v);
    } else if (key == "schedule") {
      p.schedule = SchedulePolicy::fromJson(v);
    } else {
      throw std::invalid_argument(fmt::format("campaign policy: unknown key '{}'", key));
    }
  }
  return p;
}

std::vector<gen::Graph> loadSeedCorpus(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw std::invalid_argument("--seed-corpus " + dir.string() + " is not a directory");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<gen::Graph> programs;
  for (const auto& f : files) {
    try {
      programs.push_back(gen::Graph::load(f));
    } catch (const gen::GraphFormatError& e) {
      throw std::invalid_argument(fmt::format("--seed-corpus: {}", e.what()));
    }
  }
  if (programs.empty()) throw std::invalid_argument("--seed-corpus " + dir.string() + " holds no IR program (.json)");
  return programs;
}

// --- Campaign ----------------------------------------------------------------------------------------

Campaign::Campaign(const gen::OpCatalog& catalog, CampaignPolicy policy, CampaignSettings settings,
                   CampaignOutput& output, FindingStore& store, WorkerPool& pool, ProgramTester& tester,
                   StatusView& view)
    : catalog_(catalog),
      policy_(std::move(policy)),
      settings_(std::move(settings)),
      output_(output),
      store_(store),
      pool_(pool),
      tester_(tester),
      batchTester_(tester),
      view_(view),
      emitter_(catalog),
      mutator_(catalog, policy_.generation),
      queueSampler_(settings_.seed ^ 0x71756575652d6c6cULL),
      scheduler_(policy_.schedule) {
  totals_ = store_.totals();
  nextIndex_ = totals_.maxProgramIndex + 1;
}

std::vector<std::string> Campaign::restore() {
  std::vector<std::string> problems;
  output_.checkStats(problems);
  std::lock_guard lock(mutex_);
  totals_ = store_.totals();
  nextIndex_ = totals_.maxProgramIndex + 1;
  lastNewSignatureAt_ = totals_.lastNewSignatureAt;
  features_.add(store_.features());
  if (fs::exists(output_.schedulePath())) {
    try {
      std::ifstream in(output_.schedulePath());
      scheduler_.restore(json::parse(in));
    } catch (const std::exception& e) {  // only the schedule's learning is lost: it starts afresh
      problems.push_back(fmt::format("{} cannot be read ({}); the arm statistics start afresh",
                                     output_.schedulePath().string(), e.what()));
    }
  }
  for (const auto& id : store_.signatureIds()) signatures_.insert(id);

  // The queue files are the queue: a row whose file is missing is re-written from the store, a
  // file without a row (placed by hand) is adopted, a file that does not parse is quarantined.
  auto files = output_.loadQueue(problems);
  std::set<std::string> onDisk;
  for (auto& f : files) {
    onDisk.insert(f.name);
    testedHashes_.insert(f.graph.contentHash());
    queue_.push_back({f.name, std::move(f.graph), indexFromName(f.name), 0});
  }
  for (const auto& row : store_.queue()) {
    if (onDisk.count(row.name)) continue;
    if (std::filesystem::exists(output_.quarantineDir())) {
      bool quarantined = false;
      for (const auto& q : fs::directory_iterator(output_.quarantineDir()))
        if (q.path().filename().string().starts_with(row.name + ".json")) quarantined = true;
      if (quarantined) {
        store_.removeQueueRecord(row.name);
        continue;
      }
    }
    try {
      gen::Graph g = gen::Graph::fromJson(json::parse(row.programJson), "findings.sqlite queue/" + row.name);
      output_.writeQueueEntry(row.name, g, emitter_.emit(g));
      problems.push_back(fmt::format("queue entry {} had no file (the run stopped before writing it); re-written",
                                     row.name));
      queue_.push_back({row.name, std::move(g), row.programIndex, 0});
    } catch (const std::exception& e) {
      problems.push_back(fmt::format("queue entry {} cannot be restored: {}", row.name, e.what()));
    }
  }
  std::set<std::string> known;
  for (const auto& row : store_.queue()) known.insert(row.name);
  for (const auto& entry : queue_)
    if (!known.count(entry.name))
      store_.addQueueRecord({entry.name, entry.index, entry.graph.contentHash(), "", 0, unixNow(),
                             entry.graph.toJson().dump()});
  // A finding committed just before a kill may lack its crashes/ folder: write it now (unless triage
  // has already reported its signature, possibly under another bug's folder).
  std::set<std::string> triaged;
  for (const auto& row : store_.triageRecords()) triaged.insert(row.signatureId);
  for (const auto& f : store_.findings())
    if (!triaged.count(f.signatureId) && !output_.hasFindingFolder(f.signatureId)) {
      output_.writeFindingFolder(f);
      problems.push_back(fmt::format("crashes/{} was missing; re-written from findings.sqlite", f.signatureId));
    }
  return problems;
}

std::optional<gen::Graph> Campaign::sampleQueueProgram() {
  std::lock_guard lock(mutex_);
  if (queue_.empty()) return std::nullopt;
  return queue_[static_cast<size_t>(queueSampler_.uniform(0, static_cast<int64_t>(queue_.size()) - 1))].graph;
}

std::vector<gen::Graph> Campaign::fewShotPrograms(size_t count, size_t maxNodes) {
  std::lock_guard lock(mutex_);
  std::vector<const QueueEntry*> small;
  for (const auto& e : queue_)
    if (!e.graph.nodes.empty() && e.graph.nodes.size() <= maxNodes) small.push_back(&e);
  std::stable_sort(small.begin(), small.end(),
                   [](const QueueEntry* a, const QueueEntry* b) { return a->graph.nodes.size() < b->graph.nodes.size(); });
  small.resize(std::min(small.size(), 3 * count));  // the smallest few, so that examples vary between prompts
  std::vector<gen::Graph> out;
  while (out.size() < count && !small.empty()) {
    size_t i = static_cast<size_t>(queueSampler_.uniform(0, static_cast<int64_t>(small.size()) - 1));
    out.push_back(small[i]->graph);
    small.erase(small.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return out;
}

void Campaign::stop() {
  if (stopping_.exchange(true)) return;
  pool_.cancel();
}

void Campaign::fail(CampaignEnd end, const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    if (!end_) {
      end_ = end;
      endMessage_ = message;
    }
  }
  stop();
}

std::string Campaign::queueName(const Candidate& c) const {
  std::string op = c.origin == "grammar" ? "grammar" : c.origin.substr(c.origin.find(':') + 1);
  std::string src = c.parentIndex >= 0 ? fmt::format("{:06d}", c.parentIndex) : c.llm ? "llm" : "gen";
  if (!c.donor.empty() && indexFromName(c.donor) >= 0) src += fmt::format("+{:06d}", indexFromName(c.donor));
  return fmt::format("id:{:06d},src:{},op:{}", c.index, src, op);
}

std::optional<Campaign::Candidate> Campaign::makeCandidate(int64_t index, gen::Generator& generator) {
  gen::Rng rng = gen::Rng::forProgram(settings_.seed ^ kScheduleStream, static_cast<uint64_t>(index));
  Candidate c;
  c.index = index;
  bool made = false;
  {
    std::lock_guard lock(mutex_);
    if (nextSeedProgram_ < settings_.seedPrograms.size()) {  // the seed corpus first, as given
      c.graph = settings_.seedPrograms[nextSeedProgram_++];
      c.origin = "seed";
      made = true;
    }
  }
  if (llm_ && !made) {
    if (auto proposal = llm_->take()) {
      // The proposal is the core; the generator grows a program of the sampled size around it.
      gen::NodeRange size;
      {
        std::lock_guard lock(mutex_);
        size = scheduler_.sampleSize(policy_.generation, rng, c.pulls);
      }
      c.graph = generator.grow(proposal->graph, static_cast<uint64_t>(index), size);
      c.graph.origin.stored = CampaignOutput::llmProgramPath(index);
      c.origin = "llm:" + proposal->strategy;
      c.llm = std::move(proposal);
    }
  }
  {
    std::lock_guard lock(mutex_);
    if (!made && !c.llm && !queue_.empty() && rng.chance(policy_.mutationShare)) {
      std::vector<double> weights;
      for (const auto& e : queue_) weights.push_back(1.0 / (1.0 + e.picked));
      QueueEntry& parent = queue_[rng.weighted(weights)];
      parent.picked++;
      const QueueEntry& donor = queue_[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(queue_.size()) - 1))];
      for (int attempt = 0; attempt < policy_.mutationAttempts && !made; ++attempt) {
        auto mutant = mutator_.mutate(parent.graph, &donor.graph,
                                      static_cast<uint64_t>(index) * 16 + static_cast<uint64_t>(attempt));
        if (!mutant) continue;
        c.graph = std::move(mutant->graph);
        c.origin = "mutation:" + mutant->mutator;
        c.parent = parent.name;
        c.parentIndex = parent.index;
        if (mutant->mutator == "splice") c.donor = donor.name;
        c.graph.origin.parent = c.parent;
        c.graph.origin.donor = c.donor;
        made = true;
      }
    }
  }
  if (!made && !c.llm) {
    gen::NodeRange size;
    {
      std::lock_guard lock(mutex_);  // bandit off: the policy's range, no draw
      size = scheduler_.sampleSize(policy_.generation, rng, c.pulls);
    }
    c.graph = generator.generate(static_cast<uint64_t>(index), size);
  }
  std::string hash = c.graph.contentHash();
  {
    std::lock_guard lock(mutex_);
    if (!testedHashes_.insert(hash).second) {
      duplicates_++;
      if (c.llm) llm_->feedback(*c.llm, false, 0, 0, false);
      return std::nullopt;
    }
    (c.llm ? llmProposed_ : made && c.origin != "seed" ? mutated_ : generated_)++;
  }
  if (c.llm) output_.writeLlmProgram(index, c.graph);  // the IR its header's replay line names
  return c;
}

std::optional<std::vector<std::string>> Campaign::testCandidate(Candidate& c, const fs::path& scratch) {
  Trial trial;
  drawCompile(c, trial);
  return testDrawn(c, scratch, trial);
}

std::optional<std::vector<std::string>> Campaign::testDrawn(Candidate& c, const fs::path& scratch, Trial& trial) {
  writeTrial(c, scratch, trial);
  if (!runTrial(c, trial)) return std::nullopt;
  finishTrial(c, trial);
  return std::move(trial.features);
}

void Campaign::finishTrial(const Candidate& c, Trial& trial) {
  measureTrial(c, trial);
  recordFindings(c, trial);
  keepStateLeakSuspect(c, trial);
  commitTrial(c, trial);
  creditTrial(c, trial);
  publishTrial(c, trial);
}

bool Campaign::trainable(const gen::Graph& g) {
  return std::any_of(g.params.begin(), g.params.end(),
                     [&](const gen::Source& p) { return gen::isFloat(g.typeOf(p.value).dtype); });
}

void Campaign::trainingProgram(Candidate& c, Trial& t) const {
  if (!trainable(c.graph)) {  // --entry train: nothing for an optimizer to step, judged through torch.compile instead
    t.compile.config.setEntry(oracles::kCompileEntry);
    for (auto& [dimension, arm] : c.pulls.arms)
      if (dimension == ScheduleDimension::Entry) arm = oracles::kCompileEntry;
    return;
  }
  c.graph.schedule.clear();  // the steps call forward themselves: a call schedule would not run
}

void Campaign::prepareTrial(Candidate& c, const fs::path& scratch, Trial& t, bool batched) {
  drawCompile(c, t, !batched);
  writeTrial(c, scratch, t, batched);
}

void Campaign::drawCompile(Candidate& c, Trial& t, bool trainingAllowed) {
  std::lock_guard lock(mutex_);  // the matrix may lose a template another lane found unusable
  gen::Rng rng = gen::Rng::forProgram(settings_.seed ^ kCompileStream, static_cast<uint64_t>(c.index));
  // Training steps are a program kind: a share of the programs an optimizer can step, drawn first.
  PinnedCompile pinned = settings_.pinned;
  if (trainingAllowed && !pinned.entryPinned() && trainable(c.graph) && rng.chance(policy_.compile.trainingShare))
    pinned.entry = oracles::kTrainEntry;
  t.compile = scheduler_.sampleCompile(policy_.compile, rng, settings_.device, pinned, c.pulls);
}

void Campaign::writeTrial(Candidate& c, const fs::path& scratch, Trial& t, bool batched) {
  // A batch's first member: judged with its Python where the drawn configuration allows (batchKeepsConstructs).
  if (batched) c.graph = gen::batchMemberProgram(c.graph, batchKeepsConstructs(t.compile.config));
  // Export traces forward once: the program it judges is the one a single trace captures whole.
  if (t.compile.config.exports()) c.graph = gen::singleTraceProgram(c.graph);
  if (t.compile.config.trains()) trainingProgram(c, t);
  t.py = emitter_.emit(c.graph);
  t.file = scratch / fmt::format("{:06d}.py", c.index);
  writeFileAtomically(t.file, t.py);
  t.test = settings_.test;
  t.test.compile = t.compile.config;
  t.test.backward = t.compile.backward;
}

bool Campaign::runTrial(const Candidate& c, Trial& t, const std::function<void()>& test) {
  const SampledCompile& sc = t.compile;
  try {
    if (test) test();
    else t.result = tester_.test(t.file, t.test);
    return true;
  } catch (const JobCancelled&) {
    removeQuietly(t.file);
    std::lock_guard lock(mutex_);
    abandoned_++;  // redone by no one: its index is never recorded, a resume draws the next one
  } catch (const WorkerStartError& e) {
    removeQuietly(t.file);
    if (!stopping_) fail(CampaignEnd::Failed, fmt::format("a worker cannot be restarted: {}", e.what()));
  } catch (const oracles::ConfigurationError& e) {
    removeQuietly(t.file);
    std::lock_guard lock(mutex_);
    errors_++;
    if (sc.templates.empty()) {
      // A pinned option or backend the installed torch rejects: every program would fail the same way.
      end_ = CampaignEnd::Failed;
      endMessage_ = fmt::format("the compile configuration {} is rejected: {}", sc.config.describe(), e.what());
      stopping_ = true;
      pool_.cancel();
      return false;
    }
    for (const auto& name : sc.templates) policy_.compile.disableTemplate(name);
    view_.event(fmt::format("template(s) {} rejected by this torch, no longer sampled: {}",
                            fmt::format("{}", fmt::join(sc.templates, ",")), e.what()));
  } catch (const oracles::OutputLoadError& e) {
    removeQuietly(t.file);
    std::lock_guard lock(mutex_);
    errors_++;
    view_.event(fmt::format("program {:06d}: outputs unreadable, skipped: {}", c.index, e.what()));
  }
  return false;
}

void Campaign::measureTrial(const Candidate& c, Trial& t) {
  const ProgramTestResult& r = t.result;
  // A program Dynamo compiled nothing of, or one whose eager run failed so that it was never compiled, tested no
  // compiler: its features are no coverage and its arms are charged its cost with no yield, so the bandit learns
  // to avoid the choices that cause it.
  bool compilerRan = r.verdict.verdict != oracles::Verdict::NothingCompiled && !r.compileSkipped;
  t.features = compilerRan ? runFeatures(c.graph, t.compile, r) : std::vector<std::string>{};
  {
    std::lock_guard lock(mutex_);
    for (const auto& f : features_.novel(t.features)) t.yield.newOpFeatures += isGraphFeature(f);
  }
  // Confirming a finding (fresh processes, cold cache), the conditioning runs and eager's own HOPs are part of what
  // the program cost.
  t.torchSeconds = r.torchSeconds;
  if (settings_.gpuStats) settings_.gpuStats->record(r.runs.compiled);
  t.verdict = std::string(oracles::toString(r.verdict.verdict));
  // A finding of eager's own higher-order ops is recorded under the no-compile backend it was made with.
  t.config = r.judgedUnder ? oracles::findingConfig(*r.judgedUnder, t.test.backward) : t.compile.nonDefault();
  t.now = unixNow();
}

void Campaign::recordFindings(const Candidate& c, Trial& t) const {
  const ProgramTestResult& r = t.result;
  if (!oracles::isFinding(r.verdict.verdict)) return;
  std::vector<std::string> ops;
  for (const auto& n : c.graph.nodes) ops.push_back(n.op);
  oracles::Signature sig = oracles::signatureOf(r.runs, r.verdict, ops);
  if (r.confirmation == Confirmation::CacheOnly) sig.kind = "cache-only " + sig.kind;  // a cache bug: its own signature
  if (r.judgedUnder) sig.kind = "eager-hop " + sig.kind;  // eager's own higher-order op: never a compiler's signature
  if (t.judgement == BatchJudgement::BatchOnly) sig.kind = "batch-only " + sig.kind;  // needs the other members
  json result = toJson(r);
  result["config"] = t.config;
  result["seed"] = t.test.seed;
  result["threads"] = t.test.threads;
  result["program_index"] = c.index;
  result["origin"] = c.origin;
  result["torch"] = settings_.torch.toJson();
  if (t.batchSize > 1)
    result["batch"] = {{"size", t.batchSize}, {"member", t.batchMember}, {"judged", toString(t.judgement)}};
  if (!t.batchMembers.is_null()) result["batch"]["held_in"] = t.batchMembers;  // batch-only: the batch it needs
  FindingRecord f;
  f.programIndex = c.index;
  f.foundAt = t.now;
  f.verdict = t.verdict;
  f.reason = r.verdict.reason;
  f.signatureId = sig.id();
  f.signature = oracles::toJson(sig).dump();
  f.config = t.config.dump();
  f.programJson = c.graph.toJson().dump(1);
  f.programPy = t.batchPy.empty() ? t.py : t.batchPy;
  f.result = result.dump();
  f.torch = settings_.torch.version;
  oracles::BugReport raw;  // what is known of the bug before triage: its raw signature and verdict
  raw.signature = sig;
  raw.repro.verdict = t.verdict;
  raw.repro.backward = t.compile.backward;
  // A closed issue found again is a regression, and earns its credit.
  if (const oracles::KnownIssue* k = oracles::matchKnownIssue(settings_.knownIssues, raw); k && k->issue.state != "closed")
    t.knownSignatures.insert(f.signatureId);
  t.findings.push_back(std::move(f));
}

void Campaign::keepStateLeakSuspect(const Candidate& c, const Trial& t) {
  const ProgramTestResult& r = t.result;
  if (r.verdict.verdict != oracles::Verdict::StateLeakSuspect) return;
  json leak = toJson(r);
  leak["config"] = t.config;
  leak["seed"] = t.test.seed;
  output_.writeStateLeakSuspect(c.index, t.py, leak);
  view_.event(fmt::format("program {:06d}: a finding only in a persistent worker (state-leak suspect), kept in "
                          "state-leaks/: {}", c.index, r.verdict.reason.substr(0, 160)));
}

void Campaign::commitTrial(const Candidate& c, Trial& t) {
  const ProgramTestResult& r = t.result;
  ProgramRecord& pr = t.record;
  pr = ProgramRecord{c.index, c.graph.contentHash(), c.origin, c.parent, t.config.dump(), t.verdict, r.verdict.reason,
                     0, r.wallSeconds, t.torchSeconds, t.now, phaseRecord(r, c.graph, t.batchSize, t.judgement).dump()};
  bool queueable = r.verdict.verdict == oracles::Verdict::Agree || oracles::isWrongResult(r.verdict.verdict);
  std::lock_guard lock(mutex_);
  std::vector<std::string> novel = features_.novel(t.features);
  pr.newFeatures = static_cast<int>(novel.size());
  if (queueable && !novel.empty())
    t.queued = QueueRecord{queueName(c), c.index, pr.hash, c.parent, pr.newFeatures, t.now, c.graph.toJson().dump()};
  // The finding is committed before anything else happens to it.
  store_.recordProgram(pr, t.findings, novel, t.queued);
  features_.add(novel);
  totals_.programs++;
  if (firstProgramSeconds_ < 0)
    firstProgramSeconds_ = std::chrono::duration<double>(Clock::now() - settings_.startedAt.value_or(began_)).count();
  totals_.maxProgramIndex = std::max(totals_.maxProgramIndex, c.index);
  totals_.verdicts[t.verdict]++;
  totals_.origins[c.origin]++;
  if (!r.compileSkipped) dynamo_.add(r.runs.compiled.compileFacts ? &*r.runs.compiled.compileFacts : nullptr);
  totals_.torchSeconds += t.torchSeconds;
  batchPrograms_[t.batchSize]++;
  splitBack_ += t.judgement != BatchJudgement::InBatch && t.batchSize > 1;
  batchPython_ += t.batchSize > 1 && gen::planPythonConstructs(c.graph, catalog_).anyConstruct();
  batchOnly_ += t.judgement == BatchJudgement::BatchOnly;
  sessionDone_++;
  sessionTorchSeconds_ += t.torchSeconds;
  for (const auto& f : t.findings) {
    totals_.findings++;
    totals_.lastFindingAt = t.now;
    if (signatures_.insert(f.signatureId).second) {
      totals_.uniqueSignatures++;
      lastNewSignatureAt_ = t.now;
      t.newSignatures.push_back(f.signatureId);
      if (t.knownSignatures.count(f.signatureId)) {
        t.rediscoveries++;
        rediscoveries_++;
      }
    }
  }
  if (t.queued) queue_.push_back({t.queued->name, c.graph, c.index, 0});
}

void Campaign::creditTrial(const Candidate& c, const Trial& t) {
  int newFeatures = t.record.newFeatures;
  int newSignatures = static_cast<int>(t.newSignatures.size());
  int credited = newSignatures - t.rediscoveries;  // a known open issue found again earns nothing
  double referenceRate;
  {
    std::lock_guard lock(mutex_);
    ProgramYield yield = t.yield;
    yield.newFeatures = newFeatures;
    yield.newSignatures = credited;
    scheduler_.credit(c.pulls, t.torchSeconds, yield);
    ledger_.record(c.origin, t.torchSeconds, newFeatures, newSignatures, static_cast<int>(c.graph.nodes.size()),
                   gen::deadNodeCount(c.graph));
    entries_.record(t.compile.config.entry, t.torchSeconds, newFeatures, newSignatures,
                    static_cast<int>(c.graph.nodes.size()), gen::deadNodeCount(c.graph));
    referenceRate = ledger_.rate();
  }
  if (c.llm)
    llm_->feedback(*c.llm, true, newFeatures, static_cast<int>(t.findings.size()), credited > 0, t.torchSeconds,
                   referenceRate);
}

void Campaign::publishTrial(const Candidate& c, const Trial& t) {
  if (t.queued) output_.writeQueueEntry(t.queued->name, c.graph, t.py);
  for (const auto& f : t.findings) {
    if (std::find(t.newSignatures.begin(), t.newSignatures.end(), f.signatureId) == t.newSignatures.end()) continue;
    output_.writeFindingFolder(f);
    view_.event(fmt::format("new {} (signature {}) from program {:06d} [{}]: {}", f.verdict, f.signatureId, c.index,
                            t.config.dump(), f.reason.substr(0, 160)));
  }
  removeQuietly(t.file);
  for (const auto* run : {&t.result.runs.eager, &t.result.runs.compiled, &t.result.runs.fp64})
    if (!run->jobDir.empty()) removeQuietly(run->jobDir);
}

}  // namespace tcfuzz
