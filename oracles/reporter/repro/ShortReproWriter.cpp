#include "oracles/reporter/repro/ShortReproWriter.h"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "oracles/judge/Comparator.h"
#include "oracles/reporter/DesugaredHops.inc"  // kDesugaredHopsTemplate: fuzzer/worker/python/reference/desugared_hops.py

namespace tcfuzz::oracles {

std::string pythonLiteral(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  return v.dump();
}

namespace {

using nlohmann::json;

// What short_repro.py prints or raises, and what verification looks for.
constexpr const char* kNumericMessage = "compiled is further from the float64 reference than eager";
constexpr const char* kMutationMessage =
    "compiled forward leaves this input, buffer or parameter further from the float64 reference than eager";
constexpr const char* kMutationAfterBackwardMessage =
    "compiled forward and backward leave this input, buffer or parameter further from the float64 reference than "
    "eager (read after backward)";
constexpr const char* kLaterCallMessage = "a later compiled call is further from the float64 reference than eager";
constexpr const char* kAliasMessage = "compiled outputs share storage with other tensors than eager's";
constexpr const char* kReferencePassed = "tcfuzz: the reference run passed";

/// The program without its comment-only lines and blank lines; `import torch.nn.functional as F` goes
/// when nothing uses `F.`.
std::vector<std::string> compactProgram(const std::string& programPy) {
  static const std::regex kUsesF(R"((^|[^\w.])F\.)");
  bool usesF = false;
  std::vector<std::string> code;
  std::istringstream in(programPy);
  for (std::string line; std::getline(in, line);) {
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (!line.starts_with("import ") && std::regex_search(line, kUsesF)) usesF = true;
    code.push_back(line);
  }
  std::vector<std::string> out;
  for (const std::string& line : code)
    if (usesF || line != "import torch.nn.functional as F") out.push_back(line);
  return out;
}

/// The program's source from `def forward` up to `def make_inputs` ("" without a forward).
std::string forwardSource(const std::string& programPy) {
  auto forward = programPy.find("def forward");
  if (forward == std::string::npos) return "";
  auto inputs = programPy.find("def make_inputs", forward);
  return programPy.substr(forward, inputs == std::string::npos ? std::string::npos : inputs - forward);
}

/// Whether the program draws random numbers in forward (dropout, rand*, bernoulli, ...): the run then
/// seeds right before the call, and Inductor must draw what eager draws (fallback_random).
bool drawsRandomNumbers(const std::string& programPy) {
  static const std::regex kRandom(R"(dropout|\brand|bernoulli|multinomial|\bnormal\(|normal_|uniform_|exponential_|poisson)");
  return std::regex_search(forwardSource(programPy), kRandom);
}

/// Whether the program uses Python's own random module (`import random` at module level).
bool programPyImportsRandom(const std::string& programPy) {
  static const std::regex kImport(R"((^|\n)import random\s*(\n|$))");
  return std::regex_search(programPy, kImport);
}

/// Whether forward casts explicitly (.float(), .to(dtype), dtype=...): the float64 reference then
/// keeps those casts in float64, as the worker's fp64 run does.
bool castsExplicitly(const std::string& programPy) {
  static const std::regex kCast(R"(\.(float|half|bfloat16|to|type)\(|dtype=)");
  return std::regex_search(forwardSource(programPy), kCast);
}

/// The program's higher-order-op globals (`cond = torch.cond`, ..., or a def) that tcfuzz's references rebind to their
/// Python meaning, each with its function in desugared_hops.py (its DESUGARED_HOPS table), in the program's order.
std::vector<std::pair<std::string, std::string>> desugaredGlobals(const std::string& programPy) {
  static const std::regex kEntry(R"re("(\w+)": (_desugared_\w+))re");
  static const std::regex kBinding(R"((^|\n)(?:def\s+)?(\w+)\s*(?:=\s*torch\.|\())");  // `cond = torch.cond`, `def cond(`
  std::string table(kDesugaredHopsTemplate);
  table = table.substr(std::min(table.size(), table.find("DESUGARED_HOPS = {")));
  std::map<std::string, std::string> meaning;
  for (std::sregex_iterator it(table.begin(), table.end(), kEntry), end; it != end; ++it) meaning[(*it)[1]] = (*it)[2];
  std::vector<std::pair<std::string, std::string>> out;
  for (std::sregex_iterator it(programPy.begin(), programPy.end(), kBinding), end; it != end; ++it)
    if (auto m = meaning.find((*it)[2]); m != meaning.end()) out.emplace_back(m->first, m->second);
  return out;
}

/// The Python meaning of the program's higher-order ops, as short_repro.py defines it: each function as
/// desugared_hops.py writes it, the two tables run() switches between, and nothing for a program without one.
void addDesugaredHops(std::vector<std::string>& lines, const std::string& programPy) {
  auto globals = desugaredGlobals(programPy);
  if (globals.empty()) return;
  std::string source(kDesugaredHopsTemplate);
  std::set<std::string> written;
  lines.push_back("# Each higher-order op's Python meaning, which eager and float64 run (tcfuzz's references do the same)");
  for (const auto& [name, function] : globals) {
    size_t at = source.find("def " + function + "(");
    if (at == std::string::npos || !written.insert(function).second) continue;
    std::istringstream def(source.substr(at, source.find("\n\n\n", at) - at));
    for (std::string line; std::getline(def, line);) lines.push_back(line);
  }
  std::vector<std::string> own, meaning;
  for (const auto& [name, function] : globals) {
    own.push_back(fmt::format("\"{0}\": {0}", name));
    meaning.push_back(fmt::format("\"{}\": {}", name, function));
  }
  lines.push_back(fmt::format("OWN_HOPS = {{{}}}", fmt::join(own, ", ")));
  lines.push_back(fmt::format("PYTHON_MEANING = {{{}}}", fmt::join(meaning, ", ")));
}

/// The torch.compile call on `model` as the case configures it.
std::string compileCall(const CompileConfig& c) {
  if (c.exports()) return "exported(model, inputs)";  // the entry point's function, written before run()
  if (!c.compiles()) return "model";  // no torch.compile: eager's own higher-order ops against their Python meaning
  std::string call = fmt::format("torch.compile(model, backend=\"{}\"", c.backend);
  if (!c.defaultMode()) call += fmt::format(", mode=\"{}\"", c.mode);
  if (c.dynamic) call += fmt::format(", dynamic={}", *c.dynamic ? "True" : "False");
  if (c.fullgraph) call += ", fullgraph=True";
  return c.markDynamic ? "marking_dynamic(" + call + "))" : call + ")";
}

/// The flattened output leaf the check looks at (outputs, then gradients): the first diverging one.
int checkedLeaf(const ReproCase& repro) {
  if (!repro.divergingLeaves.empty()) return repro.divergingLeaves.front();
  if (const auto it = repro.observed.find("outputs"); it != repro.observed.end() && it->is_array())
    for (const json& leaf : *it)
      if (leaf.is_object() && leaf.value("passed", true) == false && leaf.contains("leaf") &&
          leaf["leaf"].is_number_integer())
        return leaf["leaf"].get<int>();
  return 0;
}

/// A string field tcfuzz recorded for output leaf `index` ("dtype", "role"), or `fallback` when it recorded none.
std::string leafField(const ReproCase& repro, int index, const char* field, const std::string& fallback) {
  if (const auto it = repro.observed.find("outputs"); it != repro.observed.end() && it->is_array())
    for (const json& leaf : *it)
      if (leaf.is_object() && leaf.value("leaf", -1) == index && leaf.contains(field) && leaf[field].is_string())
        return leaf[field].get<std::string>();
  return fallback;
}

/// Helpers of a short repro whose diverging leaf is Python state or a schedule's call: the state tcfuzz
/// compares (attributes, class attributes, the globals of STATE_GLOBALS, as reprs), and the state as
/// built, which the worker restores before the schedule (and each run() restores before it starts).
void addPythonStateHelpers(std::vector<std::string>& lines) {
  lines.push_back("import copy");
  lines.push_back("PUBLIC = lambda items, keep: {k: v for k, v in items if not k.startswith(\"_\") and keep(k, v)}");
  lines.push_back("def python_state(model):  # what tcfuzz compares beside tensors: attributes, class attributes, globals");
  lines.push_back("    return ([repr(v) for _, v in sorted(PUBLIC(vars(model).items(), lambda k, v: k != \"training\").items())]");
  lines.push_back("            + [repr(v) for _, v in sorted(PUBLIC(vars(Model).items(), lambda k, v: not callable(v)).items())]");
  lines.push_back("            + [repr(globals()[k]) for k in globals().get(\"STATE_GLOBALS\", ())])");
  lines.push_back("AS_BUILT = copy.deepcopy((PUBLIC(vars(Model).items(), lambda k, v: not callable(v)),");
  lines.push_back("                          {k: globals()[k] for k in globals().get(\"STATE_GLOBALS\", ())}))");
  lines.push_back("def state_as_built(model, attrs):  # class attributes, globals and the model's attributes as built");
  lines.push_back("    for k, v in copy.deepcopy(AS_BUILT[0]).items():");
  lines.push_back("        setattr(Model, k, v)");
  lines.push_back("    globals().update(copy.deepcopy(AS_BUILT[1]))");
  lines.push_back("    for k in list(PUBLIC(vars(model).items(), lambda k, v: k != \"training\")):");
  lines.push_back("        delattr(model, k)");
  lines.push_back("    vars(model).update(copy.deepcopy(attrs))");
}

/// The inputs of call 4 or of the moved call, read back from the name of their output leaf ("resized (dim 0
/// of inputs 0, 2: 8 -> 7): output 0", "moved (input 0 at storage offset 0, not 8): output 0").
struct LaterCallInputs {
  bool moved = false;       ///< the moved call: the inputs at storage offset 0, sizes and strides kept
  int dim = 0;              ///< 0, or -1 for the last dim
  std::string inputs;       ///< the input positions, as a Python tuple body: "0, 2,"
  int64_t from = 0, to = 0;
};

/// The inputs of the later call behind the first diverging leaf, when that leaf is an output of call 4 or of the
/// moved call; else nullopt.
std::optional<LaterCallInputs> laterCallOfDivergingLeaf(const ReproCase& repro) {
  static const std::regex kResized(R"(^resized \((dim 0|the last dim) of inputs? ([0-9, ]+): ([0-9]+) -> ([0-9]+)\): output [0-9]+$)");
  static const std::regex kMoved(R"(^moved \(inputs? ([0-9, ]+) at storage offset 0, not [0-9, ]+\): output [0-9]+$)");
  int index = checkedLeaf(repro);
  if (const auto it = repro.observed.find("outputs"); it != repro.observed.end() && it->is_array())
    for (const json& leaf : *it) {
      std::smatch m;
      std::string name = leaf.is_object() ? leaf.value("name", "") : "";
      if (leaf.value("leaf", -1) != index) continue;
      if (std::regex_match(name, m, kMoved)) return LaterCallInputs{true, 0, m[1].str() + ",", 0, 0};
      if (std::regex_match(name, m, kResized))
        return LaterCallInputs{false, m[1] == "dim 0" ? 0 : -1, m[2].str() + ",", std::stoll(m[3].str()), std::stoll(m[4].str())};
    }
  return std::nullopt;
}

/// The exception names a signature's type holds: "BackendCompilerFailed(RuntimeError)" gives the
/// wrapper and its cause, each without a module; "" gives none.
std::vector<std::string> exceptionNames(const std::string& type) {
  std::vector<std::string> names;
  auto bare = [](std::string name) {
    auto dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
  };
  auto open = type.find('(');
  if (!type.empty()) names.push_back(bare(type.substr(0, open)));
  if (open != std::string::npos && type.back() == ')') names.push_back(bare(type.substr(open + 1, type.size() - open - 2)));
  return names;
}

/// The assertion message short_repro.py fails with for a wrong-result verdict ("" for any other).
std::string_view wrongResultMessage(const ReproCase& repro) {
  const std::string& verdict = repro.verdict;
  if (verdict == "numeric-divergence") return kNumericMessage;
  if (verdict == "mutation-divergence") return repro.backward ? kMutationAfterBackwardMessage : kMutationMessage;
  if (verdict == "second-call-divergence") return kLaterCallMessage;
  if (verdict == "aliasing-divergence") return kAliasMessage;
  return "";
}

/// The lines after run() for a mutation or second-call divergence: every leaf run() returns (the
/// state after forward, or the later calls' outputs) judged by same() against the float64 run.
/// backend="eager" runs eager's own kernels: its leaves must equal eager's bit for bit (NaN equal to NaN).
constexpr const char* kBitForBit = "e.isnan().equal(c.isnan()) and e.nan_to_num(0.0).equal(c.nan_to_num(0.0))";

/// same() with fp64_ref excuses a NaN or an infinity that compiled turns finite when the float64 run holds it
/// too, which the oracle never does (NaN/Inf placement, oracles/judge/Comparator.cpp). placed() is that check:
/// a leaf fails when eager and float64 put NaN and +-inf in the same places and compiled does not.
constexpr const char* kPlacedHelper =
    "placed = lambda a, b: all(f(x).equal(f(y)) for x, y in [[torch.view_as_real(t) if t.is_complex() else t "
    "for t in (a, b)]] for f in (torch.isnan, torch.isposinf, torch.isneginf))  # NaN and +-inf in the same places";

void addLeafByLeafCheck(std::vector<std::string>& lines, const ComparatorOptions& tolerances, std::string_view message,
                        bool exact) {
  json table = tolerances.toleranceTable();
  lines.push_back("eager, compiled, fp64 = run(), run(compiled=True), run(fp64=True)");
  lines.push_back(fmt::format("TOL = {{torch.float16: {}, torch.bfloat16: {}}}", table["float16"].get<double>(),
                              table["bfloat16"].get<double>()));
  lines.push_back("assert len(eager) == len(compiled), \"eager and compiled give different numbers of leaves\"");
  if (!exact) lines.push_back(kPlacedHelper);
  lines.push_back("for i, (e, c, r) in enumerate(zip(eager, compiled, fp64)):");
  lines.push_back(exact ? fmt::format("    ok = ({}  # backend=\"eager\": bit for bit", kBitForBit)
                        : fmt::format("    ok = (torch._dynamo.utils.same(e, c, fp64_ref=r, tol=TOL.get(e.dtype, {}), equal_nan=True)"
                                      " and (placed(e, c) or not placed(e, r))",
                                      table["float32"].get<double>()));
  lines.push_back("          if isinstance(e, torch.Tensor) and e.is_floating_point()");
  lines.push_back("          else torch.equal(e, c) if isinstance(e, torch.Tensor) else e == c)");
  lines.push_back(fmt::format("    assert ok, f\"leaf {{i}}: {}\"", message));
}

}  // namespace

std::vector<std::string> shortReproCompanions(const ReproCase& repro) {
  std::vector<std::string> names;
  for (const std::string& plugin : repro.plugins) {
    auto slash = plugin.rfind('/');
    names.push_back(slash == std::string::npos ? plugin : plugin.substr(slash + 1));
  }
  return names;
}

/// run()'s body for the "train" entry: the worker's training steps (reference/training_steps.py), returning their
/// leaves in the worker's order (each step's outputs and loss; then per parameter its value and optimizer state;
/// then the buffers), so the checked leaf's index is the worker's. `fn` is the (compiled or not) model.
void addTrainingSteps(std::vector<std::string>& lines, const CompileConfig& c, const std::string& fn, bool aliased,
                      bool arbitrated) {
  auto add = [&](std::string line) { lines.push_back(std::move(line)); };
  const TrainingLoop& t = c.training;
  std::string foreach = t.foreach ? "True" : "False";
  add("    params = [p for _, p in sorted(model.named_parameters()) if p.requires_grad and p.is_floating_point()]");
  if (t.optimizer == "sgd") add(fmt::format("    opt = torch.optim.SGD(params, lr={}, momentum=0.9, foreach={})", t.lr, foreach));
  if (t.optimizer == "adam") add(fmt::format("    opt = torch.optim.Adam(params, lr={}, foreach={})", t.lr, foreach));
  if (t.optimizer == "adamw")
    add(fmt::format("    opt = torch.optim.AdamW(params, lr={}, weight_decay=0.01, foreach={})", t.lr, foreach));
  if (t.scheduler == "step") add("    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)");
  if (t.scheduler == "exponential") add("    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)");
  add("    def step():");
  if (t.clipNorm > 0) add(fmt::format("        torch.nn.utils.clip_grad_norm_(params, {})", t.clipNorm));
  add("        opt.step()");
  bool model = t.compiled != "step", stepCompiled = t.compiled != "model";
  std::string stepCall = fmt::format("torch.compile(step, backend=\"{}\"{})", c.backend,
                                     c.defaultMode() ? "" : fmt::format(", mode=\"{}\"", c.mode));
  add(fmt::format("    fn = {}  # training steps compile the {}", model ? fn : "model",
                  model && stepCompiled ? "model and the optimizer step" : model ? "model" : "optimizer step"));
  add(fmt::format("    step_fn = {} if compiled else step", stepCompiled ? stepCall : "step"));
  if (!aliased) add("    copies = lambda xs: [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]");
  add("    out = []");
  add(fmt::format("    for _ in range({}):", t.steps));
  add("        opt.zero_grad(set_to_none=True)");
  add("        torch.manual_seed(SEED)");
  add(arbitrated ? "        with torch.enable_grad(), (Fp64Casts() if fp64 else contextlib.nullcontext()):"
                 : "        with torch.enable_grad():");
  add("            y = torch.utils._pytree.tree_leaves(fn(*copies(inputs)))");
  add("        targets = [torch.randn(t.shape, generator=torch.Generator().manual_seed(SEED + k), dtype=torch.float32)");
  add("                   for k, t in enumerate(y) if isinstance(t, torch.Tensor)]");
  add("        loss = sum(((t - g.to(t.dtype)) ** 2).mean() for t, g in zip([t for t in y if isinstance(t, torch.Tensor)], targets)");
  add("                   if t.requires_grad and t.is_floating_point())");
  add("        out += [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in y] + [loss.detach()]");
  add("        loss.backward()");
  add("        step_fn()");
  if (!t.scheduler.empty()) add("        sched.step()");
  add("    for p in params:");
  add("        out += [p.detach()] + [v for _, v in sorted(opt.state[p].items()) if isinstance(v, torch.Tensor)]");
  add("    return out + [b.detach() for _, b in sorted(model.named_buffers())]");
}

std::string renderShortRepro(const ReproCase& repro, const std::string& title, const ComparatorOptions& tolerances) {
  const std::string& verdict = repro.verdict;
  bool numeric = verdict == "numeric-divergence";
  bool mutation = verdict == "mutation-divergence", later = verdict == "second-call-divergence";
  bool aliasing = verdict == "aliasing-divergence";
  bool storm = verdict == "recompile-storm";  // call 2, a repeat of call 1, recompiles
  std::optional<LaterCallInputs> laterCall = later ? laterCallOfDivergingLeaf(repro) : std::nullopt;
  std::string failingRole = (mutation || later) ? leafField(repro, checkedLeaf(repro), "role", "") : "";
  bool scheduled = later && failingRole == "schedule";                      // a call of the program's schedule
  // Python state is compared, or put back as built before a call
  bool pythonState = scheduled || storm || (mutation && failingRole == "python-state");
  bool arbitrated = numeric || mutation || later;  // judged against a float64 run
  if (!arbitrated && !aliasing && !storm && verdict != "crash-mismatch" && verdict != "status-mismatch")
    throw std::invalid_argument("short_repro.py cannot express the verdict '" + verdict + "'");
  // A mutation finding of a backward job reads the state after backward, as the worker does: the
  // compiled backward may be what writes into an input. Later calls and aliasing look at forwards only.
  bool backward = repro.backward && !later && !aliasing && !storm;
  bool random = drawsRandomNumbers(repro.programPy);
  bool casts = arbitrated && (castsExplicitly(repro.programPy) || repro.compile.trains());
  std::string oneLineTitle = title;
  for (char& c : oneLineTitle)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';

  std::vector<std::string> lines;
  auto add = [&](std::string line) { lines.push_back(std::move(line)); };
  add("# tcfuzz short repro (fails while the bug reproduces; full driver: repro.py): " + oneLineTitle);
  for (const std::string& line : compactProgram(repro.programPy)) add(line);
  add("");
  if (!repro.plugins.empty()) add("import pathlib, runpy");
  for (const std::string& name : shortReproCompanions(repro))  // a trusted plugin: registers the backend used
    add(fmt::format("runpy.run_path(str(pathlib.Path(__file__).with_name(\"{}\")))", name));
  if (random) add("torch._inductor.config.fallback_random = True");
  if (repro.compile.inductorConfig.is_object())
    for (const auto& [key, value] : repro.compile.inductorConfig.items())
      add(key.starts_with("dynamo.") ? fmt::format("torch._dynamo.config.{} = {}", key.substr(7), pythonLiteral(value))
                                     : fmt::format("torch._inductor.config.{} = {}", key, pythonLiteral(value)));
  if (repro.threads > 0) add(fmt::format("torch.set_num_threads({})", repro.threads));
  add(fmt::format("SEED = {}", repro.seed));
  if (pythonState) addPythonStateHelpers(lines);
  if (casts) {
    add("class Fp64Casts(torch.overrides.TorchFunctionMode):  # explicit casts stay float64 in the reference");
    add("    def __torch_function__(self, func, types, args=(), kwargs=None):");
    add("        wide = lambda d: torch.float64 if isinstance(d, torch.dtype) and d.is_floating_point else d");
    add("        if func in (torch.Tensor.half, torch.Tensor.float, torch.Tensor.bfloat16): return args[0].double()");
    add("        args = [wide(a) for a in args] if func in (torch.Tensor.to, torch.Tensor.type) else args");
    add("        return func(*args, **{k: wide(v) if k == \"dtype\" else v for k, v in (kwargs or {}).items()})");
  }
  // A program whose inputs alias (ALIASED_INPUTS) keeps that in every copy and in the float64 reference;
  // elsewhere the plain expressions stay, as short as they are.
  bool aliased = repro.programPy.find("ALIASED_INPUTS") != std::string::npos;
  std::string widened = aliased ? "copies(inputs, wide=True)" : "[x.double() if x.is_floating_point() else x for x in inputs]";
  if (aliased) {
    add("def copies(xs, wide=False):  # clones (float64 when wide) that share storage, and view each other, as xs do");
    add("    wholes, made = {}, {}");
    add("    def copy(x):");
    add("        if not isinstance(x, torch.Tensor): return x");
    add("        if id(x) not in made:");
    add("            base = x._base if x._is_view() and any(x._base is y for y in xs) else None");
    add("            if base is not None:");
    add("                made[id(x)] = copy(base).as_strided(x.size(), x.stride(), x.storage_offset())");
    add("            else:");
    add("                key = x.untyped_storage().data_ptr()");
    add("                if key not in wholes:");
    add("                    whole = torch.empty(0, dtype=x.dtype, device=x.device).set_(x.untyped_storage()).clone()");
    add("                    wholes[key] = whole.double() if wide and x.is_floating_point() else whole");
    add("                w = wholes[key]");
    add("                made[id(x)] = (w.as_strided(x.size(), x.stride(), x.storage_offset()) if x._is_view() else");
    add("                               torch.empty(0, dtype=w.dtype, device=w.device).set_(w.untyped_storage(), x.storage_offset(), x.size(), x.stride()))");
    add("        return made[id(x)]");
    add("    return [copy(x) for x in xs]");
  }
  addDesugaredHops(lines, repro.programPy);
  if (repro.compile.markDynamic) {  // the compile configuration mark_dynamic: the marks are outside the compiled code
    add("def marking_dynamic(fn):  # each call's tensor dimensions of size >= 2 marked maybe-dynamic first");
    add("    def call(*args):");
    add("        for x in args:");
    add("            for dim, size in enumerate(x.shape if isinstance(x, torch.Tensor) else ()):");
    add("                if size >= 2:");
    add("                    torch._dynamo.maybe_mark_dynamic(x, dim)");
    add("        return fn(*args)");
    add("    return call");
  }
  if (repro.compile.exports()) {  // the entry point the finding was made through, instead of torch.compile
    add(fmt::format("def exported(model, inputs):  # entry point: {}", repro.compile.entry));
    std::string strict = repro.compile.exportStrict ? "True" : "False";
    if (repro.compile.dynamic.value_or(false)) {  // Dim ranges [2, n + 1] on every dimension of size n >= 2
      add("    ranges = tuple({d: torch.export.Dim.AUTO(min=2, max=n + 1) for d, n in enumerate(x.shape) if n >= 2}");
      add("                   if isinstance(x, torch.Tensor) else None for x in inputs)");
      add(fmt::format("    ep = torch.export.export(model, tuple(inputs), strict={}, dynamic_shapes=ranges)", strict));
    } else {
      add(fmt::format("    ep = torch.export.export(model, tuple(inputs), strict={})", strict));
    }
    if (repro.compile.entry == "export") add("    return ep.module()");
    if (repro.compile.entry == "export+decompose") add("    return ep.run_decompositions().module()");
    if (repro.compile.entry == "export+saveload") {
      add("    torch.export.save(ep, \"exported_program.pt2\")");
      add("    return torch.export.load(\"exported_program.pt2\").module()");
    }
    if (repro.compile.entry == "aoti")
      add("    return torch._inductor.aoti_load_package(torch._inductor.aoti_compile_and_package(ep, package_path=\"aoti_package.pt2\"))");
  }
  add(arbitrated ? "def run(compiled=False, fp64=False):" : "def run(compiled=False):");
  if (!desugaredGlobals(repro.programPy).empty())
    add(repro.compile.compiles() ? "    globals().update(OWN_HOPS if compiled else PYTHON_MEANING)"
                                 : "    globals().update(OWN_HOPS if compiled else PYTHON_MEANING)  # compiled: eager's own HOPs");
  add("    torch.manual_seed(SEED)");
  bool pythonRandom = programPyImportsRandom(repro.programPy);
  if (pythonRandom) add("    random.seed(SEED)");  // the program draws from Python's generator too
  add("    model, inputs = Model().eval(), make_inputs(SEED)");
  if (pythonState) {
    add("    attrs = copy.deepcopy(PUBLIC(vars(model).items(), lambda k, v: k != \"training\"))");
    add("    state_as_built(model, attrs)  # an earlier run() changed class attributes and globals");
  }
  if (later && !laterCall && !scheduled) add("    fresh = make_inputs(SEED + 1)  # call 3's inputs, made before any float64 default");
  if (arbitrated) {
    add("    if fp64:  # the float64 reference");
    add("        model, inputs = model.double(), " + widened);
    add("        torch.set_default_dtype(torch.float64)");
  }
  if (!repro.device.empty() && repro.device != "cpu")
    add(fmt::format("    model, inputs = model.to(\"{0}\"), [x.to(\"{0}\") for x in inputs]", repro.device));
  if (random) add(pythonRandom ? "    torch.manual_seed(SEED); random.seed(SEED)" : "    torch.manual_seed(SEED)");
  std::string fn = fmt::format("({} if compiled else model)", compileCall(repro.compile));
  std::string call = fn + "(*inputs)";
  std::string leaves = numeric || backward ? "torch.utils._pytree.tree_leaves(" + call + ")" : call;
  std::string castsScope = "(Fp64Casts() if fp64 else contextlib.nullcontext())";
  std::string noGrad = std::string("    with torch.no_grad()") + (casts ? ", " + castsScope : "") + ":";
  if (repro.compile.trains()) {
    addTrainingSteps(lines, repro.compile, fn, aliased, arbitrated);
  } else if (backward) {  // the worker's gradients: seeded float32 grad_outputs, one per differentiable output leaf
    if (repro.programPy.find("WRITTEN_INPUTS") != std::string::npos)  // forward writes into these: no grad leaves
      add("    inputs = [x if i in WRITTEN_INPUTS else x.requires_grad_() if x.is_floating_point() or x.is_complex() else x "
          "for i, x in enumerate(inputs)]");
    else
      add("    inputs = [x.requires_grad_() if x.is_floating_point() or x.is_complex() else x for x in inputs]");
    add("    wrt = [x for x in inputs if x.requires_grad] + [p for _, p in sorted(model.named_parameters())]");
    if (casts) {
      add("    with " + castsScope + ":");
      add("        out = " + leaves);
    } else {
      add("    out = " + leaves);
    }
    add("    diff = [(t, torch.randn(t.shape, generator=torch.Generator().manual_seed(SEED + k), dtype=torch.float32).to(t.dtype))");
    add("            for k, t in enumerate(out) if getattr(t, \"requires_grad\", False)]");
    add("    grads = list(torch.autograd.grad([t for t, _ in diff], wrt, [g for _, g in diff], allow_unused=True)) if diff else []");
    if (mutation) {  // the state forward and backward leave: the inputs, then buffers and parameters
      add("    return ([x.detach() for x in inputs if isinstance(x, torch.Tensor)]  # read after backward");
      add("            + [t.detach() for _, t in sorted(model.named_buffers())] + [p.detach() for _, p in sorted(model.named_parameters())])");
    } else {
      add("    return out + grads");
    }
  } else if (mutation) {  // the state the forward leaves: the inputs, then buffers and parameters
    add(noGrad);
    add("        " + call);
    add("    return ([x for x in inputs if isinstance(x, torch.Tensor)] + [t for _, t in sorted(model.named_buffers())]");
    add(std::string("            + [p for _, p in sorted(model.named_parameters())]") + (pythonState ? " + python_state(model))" : ")"));
  } else if (scheduled) {  // the program's schedule: from the state as built, each change, then a call
    if (!aliased) add("    copies = lambda xs: [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]");
    add(noGrad);
    add("        fn = " + fn);
    add("        fn(*copies(inputs))  # call 1");
    add("        state_as_built(model, attrs)");
    add("        out = []");
    add("        changes = []  # what the steps so far do to the inputs: each holds for every call after it");
    add("        for change in SCHEDULE:");
    add("            changed = change(model)");
    add("            changes += [changed] if callable(changed) else []");
    add("            args = copies(inputs)");
    add("            for changed in changes:");
    add("                args = changed(args)");
    add("            out += torch.utils._pytree.tree_leaves(fn(*args)) + python_state(model)");
    add("        return out");
  } else if (laterCall) {  // call 4 (inputs of another size) or the moved call, after a call on the first inputs
    std::string remade = laterCall->moved ? "x.new_zeros(x.numel() and 1 + sum((n - 1) * s for n, s in zip(x.shape, x.stride())))"
                                            ".as_strided(x.size(), x.stride()).copy_(x)"
                          : laterCall->to < laterCall->from
                              ? fmt::format("x.narrow({0}, 1, {1})", laterCall->dim, laterCall->to)
                              : fmt::format("torch.cat([x, x.narrow({0}, 0, {1})], {0})", laterCall->dim, laterCall->to - laterCall->from);
    add(fmt::format("    resized = [{} if i in ({}) else x for i, x in enumerate(inputs)]  # {}", remade, laterCall->inputs,
                    laterCall->moved ? "at storage offset 0" : fmt::format("size {} -> {}", laterCall->from, laterCall->to)));
    add(noGrad);
    add("        fn = " + fn);
    add(laterCall->moved ? "        fn(*inputs)  # as make_inputs made them: at their storage offset"
                      : aliased ? "        fn(*copies(inputs))"
                                : "        fn(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])");
    add("        return torch.utils._pytree.tree_leaves(fn(*resized))");
  } else if (later) {  // call 2 (the same inputs again) and call 3 (the inputs of seed + 1)
    add("    if fp64:");
    add(aliased ? "        fresh = copies(fresh, wide=True)" : "        fresh = [x.double() if x.is_floating_point() else x for x in fresh]");
    if (!aliased) add("    copies = lambda xs: [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]");
    add(noGrad);
    add("        fn = " + fn);
    add("        fn(*copies(inputs))");
    add("        again = torch.utils._pytree.tree_leaves(fn(*copies(inputs)))");
    add("        return again + torch.utils._pytree.tree_leaves(fn(*fresh))");
  } else if (storm) {  // call 2 repeats call 1 (the same inputs, the state as built): Dynamo must not recompile
    if (!aliased) add("    copies = lambda xs: [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]");
    add(noGrad);
    add("        fn = " + fn);
    add("        fn(*copies(inputs))  # call 1 compiles");
    add("        state_as_built(model, attrs)");
    add("        torch._dynamo.config.error_on_recompile = compiled  # nothing changed, so nothing may recompile");
    add("        return torch.utils._pytree.tree_leaves(fn(*copies(inputs)))  # call 2: RecompileError");
  } else if (aliasing) {  // per output: the input, buffer, parameter or earlier output it shares storage with
    add(noGrad);
    add("        out = torch.utils._pytree.tree_leaves(" + call + ")");
    add("    key = lambda t: t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes() else None");
    add("    shared = []");
    add("    for i, t in enumerate(out):");
    add("        named = ([(f\"input {j}\", x) for j, x in enumerate(inputs)] + list(model.state_dict(keep_vars=True).items())");
    add("                 + [(f\"output {j}\", o) for j, o in enumerate(out[:i])])");
    add("        shared.append(next((n for n, s in named if key(t) is not None and key(s) == key(t)), \"nothing\"))");
    add("    return shared");
  } else {
    add(noGrad);
    add("        return " + leaves);
  }
  if (casts) lines.insert(lines.begin() + 1, "import contextlib");
  if (mutation || later) {
    addLeafByLeafCheck(lines, tolerances, wrongResultMessage(repro), repro.exactBackend);
  } else if (aliasing) {
    add("eager, compiled = run(), run(compiled=True)");
    add(fmt::format("assert eager == compiled, f\"{}: eager {{eager}}, compiled {{compiled}}\"", kAliasMessage));
  } else if (numeric) {
    int leaf = checkedLeaf(repro);
    std::string dtype = leafField(repro, leaf, "dtype", "float32");
    json table = tolerances.toleranceTable();
    double tol = table.contains(dtype) ? table[dtype].get<double>() : table["float32"].get<double>();
    if (repro.compile.trains()) tol *= repro.compile.training.steps;  // accumulated over the steps (ComparatorOptions)
    add("eager, compiled, fp64 = run(), run(compiled=True), run(fp64=True)");
    if (repro.exactBackend && dtype.find("float") != std::string::npos)  // the exact rung of the ladder
      add(fmt::format("e, c = eager[{0}], compiled[{0}]\nassert {1}, \"leaf {0}: {2} (backend=eager must be bit for bit)\"",
                      leaf, kBitForBit, kNumericMessage));
    else if (dtype.find("float") != std::string::npos || dtype.find("complex") != std::string::npos)
      add(fmt::format("{3}\nassert torch._dynamo.utils.same(eager[{0}], compiled[{0}], fp64_ref=fp64[{0}], tol={1}, "
                      "equal_nan=True) and (placed(eager[{0}], compiled[{0}]) or not placed(eager[{0}], fp64[{0}])), "
                      "\"leaf {0}: {2}\"",
                      leaf, tol, kNumericMessage, kPlacedHelper));
    else
      add(fmt::format("assert torch.equal(eager[{0}], compiled[{0}]), \"leaf {0}: {1}\"", leaf, kNumericMessage));
  } else if (verdict == "crash-mismatch" || storm) {
    add("run()");
    add(fmt::format("print(\"{} (eager); now the compiled run:\", flush=True)", kReferencePassed));
    add("run(compiled=True)");
  } else {
    add("run(compiled=True)");
    add(fmt::format("print(\"{} (compiled, no error); now eager, which raises:\", flush=True)", kReferencePassed));
    add("run()");
  }
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

bool shortReproReproduces(const ReproCase& repro, const Signature& signature, const RunResult& run) {
  if (repro.verdict == "recompile-storm")
    return run.stdoutTail.find(kReferencePassed) != std::string::npos && run.status == RunStatus::Ok &&
           run.exitCode.value_or(0) != 0 && run.stderrTail.find("RecompileError") != std::string::npos;
  if (isWrongResultSymptom(repro.verdict)) {
    std::string_view message = wrongResultMessage(repro);
    return !message.empty() && run.status == RunStatus::Ok && run.exitCode.value_or(0) != 0 &&
           run.stderrTail.find("AssertionError") != std::string::npos && run.stderrTail.find(message) != std::string::npos;
  }
  if (run.stdoutTail.find(kReferencePassed) == std::string::npos) return false;  // it failed before the bug
  if (signature.kind.rfind("signal", 0) == 0) return run.status == RunStatus::Signal;
  if (signature.kind == "timeout") return run.status == RunStatus::Timeout;
  if (run.status != RunStatus::Ok || run.exitCode.value_or(0) == 0) return false;
  std::vector<std::string> names = exceptionNames(signature.exceptionType);
  return names.empty() || std::any_of(names.begin(), names.end(), [&](const std::string& name) {
           return !name.empty() && run.stderrTail.find(name) != std::string::npos;
         });
}

}  // namespace tcfuzz::oracles
