#include "fuzzer/campaign/LibFuzzerEngine.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "generators/repair/GraphRepair.h"
#include "generators/python/PythonEmitter.h"

// libFuzzer's driver, from Debian's clang runtime (libclang_rt.fuzzer_no_main): runs the loop over
// `callback` with libFuzzer's flags in argv. It ends the process itself (exit(0)) when its loop ends.
extern "C" int LLVMFuzzerRunDriver(int* argc, char*** argv, int (*callback)(const uint8_t* data, size_t size));

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// libFuzzer reads extra coverage from this section (its __start_/__stop_ bounds) after every input
// and clears it before the next: the compiler features of the program just judged, hashed.
__attribute__((section("__libfuzzer_extra_counters"), used)) uint8_t extraCounters[kLibFuzzerCounters];

// libFuzzer's entry points are C functions without a context argument: they reach the engine that
// is running through this pointer, set by run() (one engine per process).
std::atomic<LibFuzzerEngine*> runningEngine{nullptr};
std::atomic<bool> endingSession{false};

int testOneInputEntry(const uint8_t* data, size_t size) { return runningEngine.load()->testOneInput(data, size); }

/// libFuzzer's counter buckets (its CounterToFeature): 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+.
uint32_t counterBucket(uint8_t v) {
  if (v >= 128) return 7;
  if (v >= 32) return 6;
  if (v >= 16) return 5;
  if (v >= 8) return 4;
  if (v >= 4) return 3;
  return static_cast<uint32_t>(v) - 1;
}

/// Index passed to the generator for a program made when libFuzzer's input is not one: apart from
/// the seed programs' indices.
constexpr uint64_t kFallbackIndexBase = 1ULL << 40;

}  // namespace

}  // namespace tcfuzz

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  tcfuzz::LibFuzzerEngine* engine = tcfuzz::runningEngine.load();
  return engine ? engine->mutate(data, size, maxSize, seed) : 0;
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* a, size_t sizeA, const uint8_t* b, size_t sizeB,
                                            uint8_t* out, size_t maxOut, unsigned int seed) {
  tcfuzz::LibFuzzerEngine* engine = tcfuzz::runningEngine.load();
  return engine ? engine->crossOver(a, sizeA, b, sizeB, out, maxOut, seed) : 0;
}

namespace tcfuzz {

size_t counterIndex(const std::string& feature) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char ch : feature) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  // FNV's low bits barely change between features that differ in one late character: mix them in.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return static_cast<size_t>(h % kLibFuzzerCounters);
}

bool isCoverageFeature(const std::string& feature) { return !feature.starts_with("cfg:"); }

LibFuzzerEngine::LibFuzzerEngine(const gen::OpCatalog& catalog, const gen::GenPolicy& generation, Campaign& campaign,
                                 LibFuzzerSettings settings, std::function<int(CampaignEnd)> finish)
    : catalog_(catalog),
      generation_(generation),
      campaign_(campaign),
      settings_(std::move(settings)),
      finish_(std::move(finish)),
      generator_(catalog, generation, settings_.seed),
      mutator_(catalog, generation) {}

std::vector<std::string> LibFuzzerEngine::libFuzzerArgs() const {
  std::vector<std::string> args{
      "tcfuzz-libfuzzer",
      fmt::format("-max_len={}", settings_.maxLen),
      "-len_control=0",       // a program is whole or nothing: no growing length limit
      "-timeout=0",           // each job has tcfuzz's own --timeout
      "-rss_limit_mb=0",      // the workers' memory is bounded by --memory-mb; this process holds LibTorch
      "-malloc_limit_mb=0",
      "-handle_int=0",        // SIGINT and SIGTERM stop the campaign as in the native loop
      "-handle_term=0",
      "-reload=0",            // the corpus is this process's alone
      "-print_final_stats=1",
      "-report_slow_units=1000000",  // a compile of 10 s or more is ordinary, not an artifact
      fmt::format("-seed={}", settings_.seed % 2147483647ULL + 1),
      "-artifact_prefix=" + (settings_.dir / "artifacts").string() + "/",
  };
  for (const auto& a : settings_.extraArgs) args.push_back(a);
  args.push_back((settings_.dir / "corpus").string());
  args.push_back((settings_.dir / "seeds").string());
  return args;
}

size_t LibFuzzerEngine::serialize(const gen::Graph& g, uint8_t* out, size_t maxSize) {
  std::string text = g.toJson().dump();
  if (text.size() > maxSize) return 0;
  std::memcpy(out, text.data(), text.size());
  return text.size();
}

std::optional<gen::Graph> LibFuzzerEngine::programOf(const uint8_t* data, size_t size) {
  json doc = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  try {
    gen::Graph foreign = gen::Graph::fromJson(doc, "libFuzzer input");
    // Repair replays a program tcfuzz made unchanged, and makes a foreign one (a file put in the
    // corpus by hand) valid; what it cannot keep is dropped.
    gen::Rng rng(settings_.seed ^ 0x6c6962667a7a7270ULL);
    gen::IntSolver solver(settings_.seed);
    gen::GraphRepairer repairer(catalog_, generation_.caps, rng, solver);
    gen::Graph program = repairer.repair(foreign);
    program.origin = foreign.origin;
    if (program.nodes.empty()) return std::nullopt;
    return program;
  } catch (const std::exception&) {  // GraphFormatError, or a repair that cannot start on it
    return std::nullopt;
  }
}

void LibFuzzerEngine::setCounters(const std::vector<std::string>& features) {
  std::vector<size_t> touched;
  for (const auto& f : features) {
    if (!isCoverageFeature(f)) continue;
    size_t i = counterIndex(f);
    if (extraCounters[i] < 255) extraCounters[i]++;
    touched.push_back(i);
  }
  std::lock_guard lock(mutex_);
  for (size_t i : touched) counterFeatures_.insert(static_cast<uint32_t>(i * 8 + counterBucket(extraCounters[i])));
}

int LibFuzzerEngine::testOneInput(const uint8_t* data, size_t size) {
  if (campaign_.stopping()) end();
  {
    std::lock_guard lock(mutex_);
    executions_++;
  }
  std::optional<gen::Graph> program = programOf(data, size);
  if (!program) {
    std::lock_guard lock(mutex_);
    rejected_++;
    return -1;  // not a program: never kept in the corpus
  }
  std::string hash = program->contentHash();
  // The mutator writes its name into the program's origin, so the input carries it.
  std::string origin = program->origin.kind() == "libfuzzer" ? "libfuzzer:" + program->origin.mutator : "libfuzzer:seed";
  std::optional<std::vector<std::string>> recorded;
  {
    std::lock_guard lock(mutex_);
    if (auto it = judged_.find(hash); it != judged_.end()) {
      recorded = it->second;
      replayed_++;
    }
  }
  if (recorded) {  // judged before (a corpus input read again at start or on --resume): its record, not a new run
    setCounters(*recorded);
    return 0;
  }
  // One judgement per worker, each under its own sampled compile configuration, at once: libFuzzer
  // tests one input at a time, and the program's coverage is what all of them reached.
  std::vector<std::future<std::optional<std::vector<std::string>>>> judgements;
  for (int i = 0; i < std::max(1, settings_.configsPerInput); ++i)
    judgements.push_back(std::async(std::launch::async, [this, &program, &origin] { return campaign_.judge(*program, origin); }));
  std::optional<std::vector<std::string>> features;
  for (auto& j : judgements)
    if (auto f = j.get()) {
      if (!features) features.emplace();
      features->insert(features->end(), f->begin(), f->end());
    }
  if (campaign_.stopping()) end();  // the session ends here: the programs in flight were abandoned
  if (!features) {
    std::lock_guard lock(mutex_);
    notJudged_++;
    return 0;
  }
  std::sort(features->begin(), features->end());
  features->erase(std::unique(features->begin(), features->end()), features->end());
  recordFeatures(hash, *features);
  setCounters(*features);
  return 0;
}

size_t LibFuzzerEngine::mutate(uint8_t* data, size_t size, size_t maxSize, unsigned seed) {
  std::optional<gen::Graph> parent = programOf(data, size);
  std::optional<gen::Graph> donor = campaign_.sampleQueueProgram();
  std::lock_guard lock(mutex_);
  mutations_++;
  std::optional<gen::Graph> child;
  std::string name;
  for (int attempt = 0; parent && attempt < 4 && !child; ++attempt) {
    auto m = mutator_.mutate(*parent, donor ? &*donor : nullptr, static_cast<uint64_t>(seed) * 4 + attempt);
    if (!m) continue;
    child = std::move(m->graph);
    name = m->mutator;
  }
  if (!child) {  // libFuzzer's input is not a program, or no mutator applies: a fresh one
    child = generator_.generate(kFallbackIndexBase + seed);
    name = "generate";
    mutationFallbacks_++;
  }
  child->origin.generator = "libfuzzer";
  child->origin.mutator = name;
  child->origin.index = seed;
  size_t n = serialize(*child, data, maxSize);
  if (n == 0) return size;  // too long for -max_len: the input stays as it was
  return n;
}

size_t LibFuzzerEngine::crossOver(const uint8_t* a, size_t sizeA, const uint8_t* b, size_t sizeB, uint8_t* out,
                                  size_t maxOut, unsigned seed) {
  std::optional<gen::Graph> first = programOf(a, sizeA), second = programOf(b, sizeB);
  if (!first || !second) return 0;
  std::lock_guard lock(mutex_);
  auto m = mutator_.mutate(*first, &*second, seed, "splice");
  if (!m) return 0;
  m->graph.origin.generator = "libfuzzer";
  m->graph.origin.mutator = "splice";
  m->graph.origin.index = seed;
  size_t n = serialize(m->graph, out, maxOut);
  if (n == 0) return 0;
  return n;
}

void LibFuzzerEngine::recordFeatures(const std::string& hash, const std::vector<std::string>& features) {
  std::lock_guard lock(mutex_);
  judged_[hash] = features;
  std::ofstream out(settings_.dir / "features.jsonl", std::ios::app);
  out << json{{"hash", hash}, {"features", features}}.dump() << "\n";
  out.flush();
  if (!out) throw DiskFullError((settings_.dir / "features.jsonl").string() + ": cannot append");
}

void LibFuzzerEngine::loadFeatureRecord() {
  std::ifstream in(settings_.dir / "features.jsonl");
  std::string line;
  int64_t bad = 0;
  while (std::getline(in, line)) {
    json doc = json::parse(line, nullptr, false);
    if (doc.is_discarded() || !doc.contains("hash") || !doc.contains("features")) {
      bad++;  // a line cut by a kill: that program is judged again
      continue;
    }
    try {
      judged_[doc["hash"].get<std::string>()] = doc["features"].get<std::vector<std::string>>();
    } catch (const json::exception&) {
      bad++;
    }
  }
  if (!judged_.empty() || bad)
    std::cerr << fmt::format("tcfuzz: libFuzzer engine: {} judged programs recorded in {}{}\n", judged_.size(),
                             (settings_.dir / "features.jsonl").string(),
                             bad ? fmt::format(" ({} unreadable lines skipped: those programs are judged again)", bad)
                                 : "");
}

void LibFuzzerEngine::seedCorpus() {
  fs::path seeds = settings_.dir / "seeds", corpus = settings_.dir / "corpus";
  if (!fs::is_empty(seeds) || !fs::is_empty(corpus)) return;
  // Grammar programs of the campaign's seed, and the queue of a campaign that ran natively before.
  int written = 0;
  for (const auto& g : settings_.seedCorpus) {
    writeFileAtomically(seeds / fmt::format("seed-{:04d}.json", written), g.toJson().dump());
    written++;
  }
  for (int i = 0; settings_.seedCorpus.empty() && i < settings_.seedPrograms; ++i) {
    gen::Graph g = generator_.generate(static_cast<uint64_t>(i));
    writeFileAtomically(seeds / fmt::format("seed-{:04d}.json", i), g.toJson().dump());
    written++;
  }
  for (int i = 0;; ++i) {
    auto q = campaign_.sampleQueueProgram();
    if (!q || i >= 64) break;
    writeFileAtomically(seeds / fmt::format("queue-{}.json", q->contentHash().substr(0, 16)), q->toJson().dump());
    written++;
  }
  std::cerr << fmt::format("tcfuzz: libFuzzer engine: {} seed programs in {}\n", written, seeds.string());
}

std::vector<std::pair<std::string, std::string>> LibFuzzerEngine::statsLines() const {
  std::vector<std::pair<std::string, std::string>> kv;
  auto files = [](const fs::path& dir) {
    size_t n = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) n++;
    return n;
  };
  size_t corpus = files(settings_.dir / "corpus"), seeds = files(settings_.dir / "seeds");
  std::lock_guard lock(mutex_);
  kv.emplace_back("engine", "libfuzzer");
  kv.emplace_back("libfuzzer_corpus", std::to_string(corpus));
  kv.emplace_back("libfuzzer_seeds", std::to_string(seeds));
  kv.emplace_back("libfuzzer_counter_features", std::to_string(counterFeatures_.size()));
  kv.emplace_back("libfuzzer_executions", std::to_string(executions_));
  kv.emplace_back("libfuzzer_replayed_from_record", std::to_string(replayed_));
  kv.emplace_back("libfuzzer_rejected_inputs", std::to_string(rejected_));
  kv.emplace_back("libfuzzer_not_judged", std::to_string(notJudged_));
  kv.emplace_back("libfuzzer_mutations", std::to_string(mutations_));
  kv.emplace_back("libfuzzer_mutation_fallbacks", std::to_string(mutationFallbacks_));
  for (const auto& [name, st] : mutator_.stats())
    kv.emplace_back("libfuzzer_mutator_" + name, fmt::format("{} applied, {} produced", st.applied, st.produced));
  return kv;
}

void LibFuzzerEngine::end() {
  if (endingSession.exchange(true)) std::_Exit(0);  // a second way out while the first finishes: cannot happen
  campaign_.stop();
  CampaignEnd why = campaign_.finishSupervisor();
  int code = finish_(why);
  std::fflush(nullptr);
  std::cout.flush();
  std::cerr.flush();
  // libFuzzer's loop never returns and its objects must not be destroyed under it (it says so
  // itself): the process ends here, with every finding and the corpus already on disk.
  std::_Exit(code);
}

void LibFuzzerEngine::run() {
  for (const char* sub : {"corpus", "seeds", "artifacts"}) fs::create_directories(settings_.dir / sub);
  loadFeatureRecord();
  seedCorpus();
  campaign_.addExtraStats([this] { return statsLines(); });
  runningEngine = this;
  // libFuzzer ends with exit(0) on its own bounds (-runs, -max_total_time given through
  // --libfuzzer-arg): the session then ends as if the campaign had stopped.
  std::atexit([] {
    if (LibFuzzerEngine* engine = runningEngine.load(); engine && !endingSession) engine->end();
  });
  std::vector<std::string> args = libFuzzerArgs();
  std::cerr << fmt::format("tcfuzz: libFuzzer engine: {}\n", fmt::join(args, " "));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  char** argvp = argv.data();
  campaign_.startSupervisor();
  int rc = LLVMFuzzerRunDriver(&argc, &argvp, &testOneInputEntry);
  std::cerr << fmt::format("tcfuzz: libFuzzer's driver returned {}\n", rc);
  end();
}

}  // namespace tcfuzz
