#include "fuzzer/cli/commands/Commands.h"

#include <chrono>
#include <deque>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ATen/ATen.h>

#include "fuzzer/worker/ProgramTester.h"
#include "fuzzer/cli/Settings.h"
#include "generators/Generator.h"
#include "generators/Mutator.h"
#include "generators/ir/ProgramFigures.h"
#include "generators/python/BatchProgram.h"
#include "generators/python/PythonConstructs.h"
#include "generators/python/PythonEmitter.h"
#include "oracles/judge/OutputLoader.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// Distinct ops, operand dtype combinations and producer->consumer op edges seen.
struct Diversity {
  std::set<std::string> ops;
  std::set<std::string> dtypeCombos;
  std::set<std::pair<std::string, std::string>> edges;
  void add(const gen::Graph& g) {
    for (const auto& n : g.nodes) {
      ops.insert(n.op);
      if (n.inputs.size() > 1) {
        std::string combo = n.op + ":";
        for (int in : n.inputs) combo += std::string(gen::dtypeName(g.typeOf(in).dtype)) + ",";
        dtypeCombos.insert(combo);
      }
      for (int in : n.inputs)
        if (int p = g.producerOf(in); p >= 0) edges.insert({g.nodes[p].op, n.op});
    }
  }
};

/// A generated program on disk, with the line each node's code ends on.
struct WrittenProgram {
  fs::path py;
  gen::Graph graph;
  std::vector<int> nodeLines;
};

void writeFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string() + " (disk full or not writable?)");
}

/// The op whose line raised, from the traceback's last frame in the program file.
std::string failingOp(const WrittenProgram& p, const std::string& traceback) {
  std::regex frame("File \"" + std::regex_replace(p.py.string(), std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                   "\", line ([0-9]+)");
  int line = -1;
  for (std::sregex_iterator it(traceback.begin(), traceback.end(), frame), end; it != end; ++it)
    line = std::stoi((*it)[1]);
  if (line < 0) return "(outside forward)";
  for (size_t i = 0; i < p.nodeLines.size(); ++i)
    if (line <= p.nodeLines[i] && (i == 0 || line > p.nodeLines[i - 1])) return p.graph.nodes[i].op;
  return "(outside forward)";
}

struct ValidationReport {
  int64_t programs = 0, ran = 0, finite = 0;
  int64_t nonFiniteInputs = 0;  // ran with +-inf, NaN or +-max in an input on purpose: finiteness not judged
  std::map<std::string, int64_t> failuresByOp, nonFiniteByOp, failureTypes;
  std::vector<std::string> examples;
  json toJson() const {
    return {{"programs", programs},
            {"ran_without_exception", ran},
            {"valid_rate", programs ? double(ran) / programs : 0},
            {"finite_outputs", finite},
            {"nonfinite_inputs_by_design", nonFiniteInputs},
            {"finite_rate", ran - nonFiniteInputs ? double(finite) / double(ran - nonFiniteInputs) : 0},
            {"failures_by_op", failuresByOp},
            {"failure_types", failureTypes},
            {"nonfinite_by_last_op", nonFiniteByOp},
            {"examples", examples}};
  }
};

/// Whether an input holds +-inf, NaN or +-max on purpose (boundary values): its outputs may be non-finite.
bool nonFiniteByDesign(const gen::Graph& g) {
  for (const gen::Source& s : g.inputs)
    for (const std::string& kind : s.boundary.kinds)
      if (kind == "nonfinite" || kind == "extremes") return true;
  return false;
}

bool outputsFinite(const oracles::RunResult& r, const fs::path& jobDir) {
  if (!r.outputs) return true;
  auto loaded = oracles::loadOutputs(*r.outputs, jobDir);
  for (const auto& t : loaded.tensors)
    if (t.defined() && t.is_floating_point() && !at::isfinite(t).all().item<bool>()) return false;
  return true;
}

ValidationReport validate(const Options& o, const std::vector<WrittenProgram>& programs, const SecretRedactor& secrets) {
  ScratchDir work(o.workDir, o.keep);
  WorkerSpec spec = workerSpecFrom(o, work.path(), secrets);
  WorkerPool pool(spec, static_cast<size_t>(workerCount(o)));
  ProgramTester tester(pool, oracles::Comparator{}, work.path() / "jobs");
  TestSettings settings;
  settings.persistent = spec.childJobs > 1;
  settings.limits = Limits{o.timeout, o.memoryMb};
  settings.seed = static_cast<uint64_t>(o.seed);
  settings.device = o.device;
  settings.threads = o.threads;

  ValidationReport report;
  std::deque<std::pair<size_t, ProgramTester::PendingRun>> inflight;
  size_t next = 0;
  auto collect = [&] {
    auto [index, pending] = std::move(inflight.front());
    inflight.pop_front();
    const WrittenProgram& p = programs[index];
    oracles::RunResult r = pending.result.get();
    ++report.programs;
    if (r.status == oracles::RunStatus::Ok) {
      ++report.ran;
      if (nonFiniteByDesign(p.graph)) ++report.nonFiniteInputs;
      else if (outputsFinite(r, pending.jobDir)) ++report.finite;
      else ++report.nonFiniteByOp[p.graph.nodes.empty() ? "(none)" : p.graph.nodes.back().op];
    } else {
      std::string op = r.exception ? failingOp(p, r.exception->traceback) : "(" + std::string(oracles::toString(r.status)) + ")";
      ++report.failuresByOp[op];
      ++report.failureTypes[r.exception ? r.exception->type : std::string(oracles::toString(r.status))];
      if (report.examples.size() < 20)
        report.examples.push_back(fmt::format("{}: {} {}", p.py.filename().string(), op,
                                              r.exception ? r.exception->message.substr(0, 300) : r.summary()));
    }
    std::error_code ec;
    fs::remove_all(pending.jobDir, ec);
  };
  while (next < programs.size() || !inflight.empty()) {
    while (next < programs.size() && inflight.size() < pool.size() * 3) {
      inflight.emplace_back(next, tester.submitOne(programs[next].py, RunMode::Eager, settings));
      ++next;
    }
    collect();
  }
  return report;
}

/// `gen --from FILE`: repairs a foreign IR file and writes (or prints) the program.
int repairCommand(const Options& o, const gen::OpCatalog& catalog) {
  gen::Graph foreign;
  try {
    foreign = gen::Graph::load(o.from);
  } catch (const gen::GraphFormatError& e) {
    throw std::invalid_argument(e.what());
  }
  gen::Rng rng(static_cast<uint64_t>(o.seed));
  gen::IntSolver solver(static_cast<uint64_t>(o.seed));
  gen::GraphRepairer repairer(catalog, gen::GenPolicy{}.caps, rng, solver);
  std::vector<std::string> dropped;
  gen::Graph fixed = repairer.repair(foreign, &dropped);
  if (o.plain) fixed = gen::plainProgram(fixed);
  if (o.singleTrace) fixed = gen::singleTraceProgram(fixed);
  for (const auto& d : dropped) std::cerr << "tcfuzz: dropped " << d << "\n";
  const auto& r = repairer.stats();
  std::cerr << fmt::format("tcfuzz: {} of {} nodes kept; repair inserted {} casts, {} clamps, {} coercions; {} Z3 fixes, "
                           "{} redraws, {} inputs resized\n",
                           foreign.nodes.size() - dropped.size(), foreign.nodes.size(), r.casts, r.clamps, r.coercions,
                           r.solved, r.resampled, r.resized);
  std::string text = gen::PythonEmitter(catalog).emit(fixed);
  if (o.out.empty()) {
    std::cout << text;
    return 0;
  }
  fs::create_directories(o.out);
  std::string stem = fs::path(o.from).stem().string() + "_repaired";
  writeFile(fs::path(o.out) / (stem + ".py"), text);
  writeFile(fs::path(o.out) / (stem + ".json"), fixed.toJson().dump(2) + "\n");
  std::cout << "wrote " << (fs::absolute(o.out) / (stem + ".py")).string() << "\n";
  return 0;
}

/// --nodes MIN-MAX, or the policy's own range when empty.
gen::NodeRange nodeRangeFrom(const std::string& text, const gen::GenPolicy& policy) {
  if (text.empty()) return {policy.minNodes, policy.maxNodes};
  std::smatch m;
  if (!std::regex_match(text, m, std::regex(R"(([0-9]{1,4})-([0-9]{1,4}))")))
    throw std::invalid_argument("--nodes takes MIN-MAX, like 6-14 (got '" + text + "')");
  gen::NodeRange range{std::stoi(m[1]), std::stoi(m[2])};
  if (range.minNodes < 1 || range.minNodes > range.maxNodes)
    throw std::invalid_argument("--nodes: MIN must be at least 1 and at most MAX (got '" + text + "')");
  return range;
}

gen::Graph loadIr(const std::string& path) {
  try {
    return gen::Graph::load(path);
  } catch (const gen::GraphFormatError& e) {
    throw std::invalid_argument(e.what());
  }
}

}  // namespace

int genCommand(const Options& o, const SecretRedactor& secrets) {
  if (o.count < 0) throw std::invalid_argument("--count must be >= 0");
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  if (!o.from.empty()) return repairCommand(o, catalog);
  gen::GenPolicy policy;
  if (!o.policy.empty()) {
    std::ifstream in(o.policy);
    if (!in) throw std::invalid_argument("cannot read the policy file " + o.policy);
    try {
      policy = gen::GenPolicy::fromJson(json::parse(in));
    } catch (const json::exception& e) {
      throw std::invalid_argument(o.policy + ": " + e.what());
    }
  }
  gen::Generator generator(catalog, policy, static_cast<uint64_t>(o.seed));
  gen::PythonEmitter emitter(catalog);
  gen::NodeRange range = nodeRangeFrom(o.nodes, policy);
  if (o.mutate.empty() && (!o.donor.empty() || !o.mutator.empty()))
    throw std::invalid_argument("--donor and --mutator go with --mutate FILE");
  // --mutate: the campaign's mutation of a queue entry, made again (the queue entry names parent and donor).
  std::optional<gen::Graph> parent, donor;
  gen::Mutator mutator(catalog, policy);
  if (!o.mutate.empty()) {
    parent = loadIr(o.mutate);
    if (!o.donor.empty()) donor = loadIr(o.donor);
  }
  auto program = [&](uint64_t index) {
    if (!parent) return generator.generate(index, range);
    auto mutant = mutator.mutate(*parent, donor ? &*donor : nullptr, index, o.mutator);
    if (!mutant)
      throw std::invalid_argument(fmt::format("mutation {} of {}{} does not apply (it leaves nothing new)", index,
                                              o.mutate, o.mutator.empty() ? "" : " with mutator " + o.mutator));
    mutant->graph.origin.parent = fs::path(o.mutate).stem().string();
    if (mutant->mutator == "splice" && donor) mutant->graph.origin.donor = fs::path(o.donor).stem().string();
    return std::move(mutant->graph);
  };

  std::unique_ptr<ScratchDir> scratch;
  fs::path outDir = o.out;
  if (outDir.empty() && o.validate) {
    scratch = std::make_unique<ScratchDir>("", o.keep);
    outDir = scratch->path() / "programs";
  }
  if (!outDir.empty()) fs::create_directories(outDir);

  Diversity diversity;
  gen::ProgramFigures figures;
  std::vector<WrittenProgram> written;
  double genSeconds = 0, emitSeconds = 0;
  int64_t nodes = 0;
  auto began = Clock::now();
  for (int64_t i = 0; i < o.count; ++i) {
    uint64_t index = static_cast<uint64_t>(o.start + i);
    auto t0 = Clock::now();
    gen::Graph g = program(index);
    if (o.plain) g = gen::plainProgram(g);
    if (o.singleTrace) g = gen::singleTraceProgram(g);
    genSeconds += since(t0);
    nodes += static_cast<int64_t>(g.nodes.size());
    diversity.add(g);
    figures.add(g, catalog);
    auto t1 = Clock::now();
    std::vector<int> lines;
    std::string text = emitter.emit(g, &lines);
    emitSeconds += since(t1);
    if (outDir.empty()) continue;
    std::string stem = parent ? fmt::format("{}_m{:06d}", fs::path(o.mutate).stem().string(), index)
                              : fmt::format("g{}_{:06d}", o.seed, index);
    writeFile(outDir / (stem + ".py"), text);
    writeFile(outDir / (stem + ".json"), g.toJson().dump(2) + "\n");
    if (o.validate) written.push_back({outDir / (stem + ".py"), std::move(g), std::move(lines)});
  }
  double wall = since(began);

  double perK = o.count ? 1000.0 / static_cast<double>(o.count) : 0;
  json stats{{"programs", o.count},
             {"seed", o.seed},
             {"catalog_ops", catalog.size()},
             {"mean_nodes", o.count ? double(nodes) / o.count : 0},
             {"generation_seconds", genSeconds},
             {"programs_per_second", genSeconds > 0 ? o.count / genSeconds : 0},
             {"emit_seconds", emitSeconds},
             {"wall_seconds", wall},
             {"distinct_ops", diversity.ops.size()},
             {"distinct_operand_dtype_combos", diversity.dtypeCombos.size()},
             {"distinct_op_edges", diversity.edges.size()},
             {"per_1000_programs_scale", perK},
             {"z3_calls", generator.solverCalls()},
             {"repair", generator.stats().toJson()},
             {"program_shape", figures.toJson()}};
  if (o.validate) stats["eager_validation"] = validate(o, written, secrets).toJson();

  if (o.json) {
    std::cout << stats.dump(2) << "\n";
  } else {
    std::cout << fmt::format("generated {} programs (seed {}, indexes {}..{}), {:.1f} nodes on average\n", o.count, o.seed,
                             o.start, o.start + std::max<int64_t>(o.count, 1) - 1, stats["mean_nodes"].get<double>());
    std::cout << fmt::format("generation {:.0f} programs/s ({} Z3 calls); {} distinct ops, {} operand dtype combos, {} op edges\n",
                             stats["programs_per_second"].get<double>(), generator.solverCalls(), diversity.ops.size(),
                             diversity.dtypeCombos.size(), diversity.edges.size());
    const auto& r = generator.stats();
    std::cout << fmt::format("repair: {} nodes accepted ({} valid as drawn), {} Z3 fixes, {} casts, {} clamps, {} coercions, "
                             "{} inputs resized, {} rejected\n",
                             r.accepted, r.validAsIs, r.solved, r.casts, r.clamps, r.coercions, r.resized, r.rejected);
    const json& f = stats["program_shape"];
    std::cout << fmt::format("shape: {:.1f}% dead nodes, depth {:.1f}, fan-out {:.2f}; programs with a view {:.0f}%, an in-place op "
                             "{:.0f}% (through a view {:.0f}%, a view read after its base is written {:.0f}%), a non-contiguous input {:.0f}% (a storage offset {:.0f}%), a mutated buffer "
                             "{:.0f}%, a parameter written through .data {:.0f}%, boundary values {:.0f}%, a write into an input "
                             "{:.0f}%, through an expanded view {:.0f}%, aliased inputs {:.0f}% (written through {:.0f}%), an aten backward op {:.0f}%, "
                             "a low-precision round trip {:.0f}%, int64 values past int32 {:.0f}%\n",
                             100 * f["dead_node_share"].get<double>(), f["mean_depth"].get<double>(), f["mean_fan_out"].get<double>(),
                             100 * f["programs_with_view"].get<double>(), 100 * f["programs_with_inplace"].get<double>(),
                             100 * f["programs_with_inplace_on_view"].get<double>(),
                             100 * f["programs_with_view_read_after_its_base_is_written"].get<double>(),
                             100 * f["programs_with_noncontiguous_input"].get<double>(),
                             100 * f["programs_with_storage_offset_input"].get<double>(),
                             100 * f["programs_with_mutated_buffer"].get<double>(),
                             100 * f["programs_with_parameter_written_through_data"].get<double>(),
                             100 * f["programs_with_boundary_values"].get<double>(),
                             100 * f["programs_writing_into_an_input"].get<double>(),
                             100 * f["programs_writing_through_an_expanded_view"].get<double>(),
                             100 * f["programs_passing_aliased_inputs"].get<double>(),
                             100 * f["programs_writing_through_an_aliased_input"].get<double>(),
                             100 * f["programs_calling_an_aten_backward_op"].get<double>(),
                             100 * f["programs_with_a_low_precision_round_trip"].get<double>(),
                             100 * f["programs_with_int64_values_past_int32"].get<double>());
    std::cout << fmt::format("python: programs with a Python-level construct {:.0f}%, a graph break {:.0f}%, a branch {:.0f}%, "
                             "a loop {:.0f}%, a hook {:.0f}%, a write into Python state {:.0f}%, a call schedule with state "
                             "changes {:.0f}%\n",
                             100 * f["programs_with_a_python_construct"].get<double>(),
                             100 * f["programs_with_a_graph_break"].get<double>(), 100 * f["programs_with_a_branch"].get<double>(),
                             100 * f["programs_with_a_loop"].get<double>(), 100 * f["programs_with_a_hook"].get<double>(),
                             100 * f["programs_writing_python_state"].get<double>(),
                             100 * f["programs_with_a_call_schedule"].get<double>());
    if (o.validate) {
      const json& v = stats["eager_validation"];
      std::cout << fmt::format("eager: {}/{} ran without exception ({:.1f}%), {}/{} with finite outputs ({:.1f}%; "
                               "{} with non-finite inputs by design not judged)\n",
                               v["ran_without_exception"].get<int64_t>(), v["programs"].get<int64_t>(),
                               100 * v["valid_rate"].get<double>(), v["finite_outputs"].get<int64_t>(),
                               v["ran_without_exception"].get<int64_t>() - v["nonfinite_inputs_by_design"].get<int64_t>(),
                               100 * v["finite_rate"].get<double>(), v["nonfinite_inputs_by_design"].get<int64_t>());
      for (const auto& [op, n] : v["failures_by_op"].items()) std::cout << fmt::format("  failures in {}: {}\n", op, n.get<int64_t>());
      for (const auto& [op, n] : v["nonfinite_by_last_op"].items())
        std::cout << fmt::format("  non-finite output (last op {}): {}\n", op, n.get<int64_t>());
      for (const auto& e : v["examples"]) std::cout << "  e.g. " << e.get<std::string>() << "\n";
    }
    if (!o.out.empty()) std::cout << "programs written to " << fs::absolute(o.out).string() << "\n";
  }
  return 0;
}

}  // namespace tcfuzz
