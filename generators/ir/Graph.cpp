#include "generators/ir/Graph.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <openssl/evp.h>

#include "generators/features/InputAliases.h"
#include "generators/features/InputLayout.h"

namespace tcfuzz::gen {
namespace {

using nlohmann::json;

constexpr int kMaxRank = 8;
constexpr int64_t kMaxDim = int64_t{1} << 31;
constexpr size_t kMaxEntries = 100000;  // values, nodes, ... per document

/// Walks a JSON document and raises GraphFormatError naming the source and the pointer.
class Reader {
 public:
  Reader(const json& node, const std::string& source, std::string pointer)
      : node_(node), source_(source), pointer_(std::move(pointer)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw GraphFormatError(fmt::format("{}: at {}: {}", source_, pointer_.empty() ? "/" : pointer_, what));
  }
  const json& raw() const { return node_; }
  Reader at(const std::string& key) const {
    if (!node_.is_object()) fail("expected an object");
    auto it = node_.find(key);
    if (it == node_.end()) Reader(node_, source_, pointer_ + "/" + key).fail("missing field");
    return Reader(*it, source_, pointer_ + "/" + key);
  }
  bool has(const std::string& key) const { return node_.is_object() && node_.contains(key); }
  Reader at(size_t i) const { return Reader(node_[i], source_, fmt::format("{}/{}", pointer_, i)); }
  size_t size() const {
    if (!node_.is_array()) fail("expected an array");
    if (node_.size() > kMaxEntries) fail(fmt::format("more than {} entries", kMaxEntries));
    return node_.size();
  }
  void onlyKeys(std::initializer_list<std::string_view> keys) const {
    if (!node_.is_object()) fail("expected an object");
    for (const auto& [k, _] : node_.items()) {
      bool known = false;
      for (auto key : keys) known = known || key == k;
      if (!known) fail(fmt::format("unknown field '{}'", k));
    }
  }
  std::string str() const {
    if (!node_.is_string()) fail("expected a string");
    return node_.get<std::string>();
  }
  int64_t integer(int64_t lo, int64_t hi) const {
    if (!node_.is_number_integer()) fail("expected an integer");
    int64_t v = node_.is_number_unsigned() && node_.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())
                    ? std::numeric_limits<int64_t>::max()
                    : node_.get<int64_t>();
    if (v < lo || v > hi) fail(fmt::format("{} is outside [{}, {}]", v, lo, hi));
    return v;
  }
  uint64_t unsignedInteger() const {
    if (!node_.is_number_unsigned() && !(node_.is_number_integer() && node_.get<int64_t>() >= 0))
      fail("expected a non-negative integer");
    return node_.get<uint64_t>();
  }
  double number() const {
    if (!node_.is_number()) fail("expected a number");
    double v = node_.get<double>();
    if (!std::isfinite(v)) fail("expected a finite number");
    return v;
  }

 private:
  const json& node_;
  const std::string& source_;
  std::string pointer_;
};

const std::set<std::string> kBranchKinds{"item", "tensor", "any", "flag", "training", "calls"};
const std::set<std::string> kOutputStates{"scale", "offset"};
const std::set<std::string> kHooks{"forward", "forward-pre", "global-forward", "global-pre"};

}  // namespace

const std::vector<std::string>& scheduleChangeNames() {
  static const std::vector<std::string> kNames{"class-attr", "instance-attr", "global",        "flag",
                                               "train-mode", "remove-hook",   "clear-cache",   "requires-grad",
                                               "dtype"};
  return kNames;
}

const std::vector<std::string>& pythonFormNames() {
  static const std::vector<std::string> kNames{"enumerate",  "while",     "zip",       "generator", "grow-while-iterating",
                                               "closure",    "dict",      "set",       "namedtuple", "dataclass",
                                               "local-class", "no-grad",  "tensor-hook", "closure-state", "dict-state",
                                               "module-list", "module-dict", "sequential", "print", "tolist",
                                               "autocast", "nonzero", "masked-select", "bool-mask", "item-size",
                                               "repeat-interleave", "unique", "bincount", "searchsorted", "tolist-size"};
  return kNames;
}

const std::vector<std::string>& hopKindNames() {
  static const std::vector<std::string> kNames{"cond", "map", "while_loop", "scan", "checkpoint", "nested_compile_region",
                                               "vmap", "grad", "autograd_function", "associative_scan", "jvp", "vjp",
                                               "jacrev", "jacfwd", "flex_attention", "functional_call"};
  return kNames;
}

bool isPythonForm(const std::string& name) {
  const auto& names = pythonFormNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

namespace {

json pythonToJson(const NodePython& p) {
  json doc = json::object();
  if (p.graphBreakBefore) doc["graph_break_before"] = true;
  if (p.branch) doc["branch"] = {{"kind", p.branch->kind}, {"operand", p.branch->operand}, {"threshold", p.branch->threshold}};
  if (!p.outputState.empty()) doc["output_state"] = p.outputState;
  if (p.counter) doc["counter"] = true;
  // The first loop form keeps the key it had before forms had names, so older programs hash the same.
  if (p.form == "enumerate") doc["loop"] = true;
  else if (!p.form.empty()) doc["form"] = p.form;
  if (p.hop) doc["hop"] = {{"kind", p.hop->kind}, {"input", p.hop->input}, {"threshold", p.hop->threshold}};
  return doc;
}

NodePython pythonFromJson(const Reader& r) {
  r.onlyKeys({"graph_break_before", "branch", "output_state", "counter", "loop", "form", "hop"});
  NodePython p;
  bool loop = false;
  for (auto [key, field] : {std::pair{"graph_break_before", &p.graphBreakBefore}, std::pair{"counter", &p.counter},
                            std::pair{"loop", &loop}})
    if (r.has(key)) {
      if (!r.at(key).raw().is_boolean()) r.at(key).fail("expected true or false");
      *field = r.at(key).raw().get<bool>();
    }
  if (loop) p.form = "enumerate";
  if (r.has("form")) {
    if (loop) r.at("form").fail("a node has one form: 'loop' already names 'enumerate'");
    p.form = r.at("form").str();
    if (!isPythonForm(p.form))
      r.at("form").fail(fmt::format("unknown Python form '{}' ({})", p.form, fmt::join(pythonFormNames(), ", ")));
  }
  if (r.has("branch")) {
    Reader b = r.at("branch");
    b.onlyKeys({"kind", "operand", "threshold"});
    BranchTest t;
    t.kind = b.at("kind").str();
    if (!kBranchKinds.contains(t.kind)) b.at("kind").fail(fmt::format("unknown branch test '{}' (item, tensor, any, flag, training or calls)", t.kind));
    t.operand = static_cast<int>(b.at("operand").integer(0, 64));
    t.threshold = b.at("threshold").number();
    p.branch = t;
  }
  if (r.has("hop")) {
    Reader h = r.at("hop");
    h.onlyKeys({"kind", "input", "threshold"});
    HopConstruct c;
    c.kind = h.at("kind").str();
    const auto& kinds = hopKindNames();
    if (std::find(kinds.begin(), kinds.end(), c.kind) == kinds.end())
      h.at("kind").fail(fmt::format("unknown higher-order op '{}' ({})", c.kind, fmt::join(kinds, ", ")));
    if (h.has("input")) c.input = static_cast<int>(h.at("input").integer(0, 64));
    if (h.has("threshold")) c.threshold = h.at("threshold").number();
    p.hop = c;
  }
  if (r.has("output_state")) {
    p.outputState = r.at("output_state").str();
    if (!kOutputStates.contains(p.outputState)) r.at("output_state").fail(fmt::format("unknown output state '{}' (scale or offset)", p.outputState));
  }
  return p;
}

/// A program's schedule and hook (the keys "schedule" and "hook" of `root`) into `g`.
void programPythonFromJson(const Reader& root, Graph& g) {
  if (root.has("schedule")) {
    Reader steps = root.at("schedule");
    for (size_t i = 0; i < steps.size(); ++i) {
      Reader s = steps.at(i);
      s.onlyKeys({"change", "value"});
      ScheduleStep step{s.at("change").str(), s.has("value") ? s.at("value").number() : 0.0};
      const auto& changes = scheduleChangeNames();
      if (std::find(changes.begin(), changes.end(), step.change) == changes.end())
        s.at("change").fail(fmt::format("unknown change '{}' ({})", step.change, fmt::join(changes, ", ")));
      g.schedule.push_back(step);
    }
  }
  if (root.has("hook")) {
    g.hook = root.at("hook").str();
    if (!kHooks.contains(g.hook)) root.at("hook").fail(fmt::format("unknown hook '{}' (forward, forward-pre, global-forward or global-pre)", g.hook));
  }
}

json distToJson(const Distribution& d) {
  if (d.kind == "bernoulli") return {{"kind", d.kind}, {"p", d.p}};
  return {{"kind", d.kind}, {"low", d.low}, {"high", d.high}};
}

Distribution distFromJson(const Reader& r) {
  Distribution d;
  d.kind = r.at("kind").str();
  if (d.kind == "bernoulli") {
    r.onlyKeys({"kind", "p"});
    d.p = r.at("p").number();
    if (d.p < 0 || d.p > 1) r.at("p").fail("probability outside [0, 1]");
  } else if (d.kind == "uniform" || d.kind == "randint" || d.kind == "randperm") {
    r.onlyKeys({"kind", "low", "high"});
    d.low = r.at("low").number();
    d.high = r.at("high").number();
    if (!(d.low < d.high)) r.fail("low must be below high");
    if (std::abs(d.low) > 1e15 || std::abs(d.high) > 1e15) r.fail("bounds beyond 1e15");
    if (d.kind != "uniform" && (d.low != std::floor(d.low) || d.high != std::floor(d.high)))
      r.fail("randint bounds must be integers");
  } else {
    r.at("kind").fail(fmt::format("unknown distribution '{}' (uniform, randint, randperm or bernoulli)", d.kind));
  }
  return d;
}

/// Only the fields a kind of origin uses are written, so older readers and files stay as they were.
json originToJson(const Origin& o) {
  json doc{{"generator", o.generator}, {"seed", o.seed}, {"index", o.index}};
  if (o.minNodes > 0) doc["min_nodes"] = o.minNodes;
  if (o.maxNodes > 0) doc["max_nodes"] = o.maxNodes;
  for (auto [key, field] : {std::pair{"parent", &o.parent}, {"donor", &o.donor}, {"mutator", &o.mutator},
                            {"strategy", &o.strategy}, {"target", &o.target}, {"model", &o.model}, {"stored", &o.stored}})
    if (!field->empty()) doc[key] = *field;
  if (o.replyId >= 0) doc["reply_id"] = o.replyId;
  if (o.minimized) doc["minimized"] = true;
  if (o.plain) doc["plain"] = true;
  if (o.singleTrace) doc["single_trace"] = true;
  return doc;
}

json typeToJson(const TensorType& t) { return {{"shape", t.shape}, {"dtype", dtypeName(t.dtype)}, {"device", t.device}}; }

void sha256Hex(const std::string& text, std::string& out) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL SHA-256 failed");
  out.clear();
  for (unsigned i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
}

}  // namespace

json nodePythonToJson(const NodePython& p) { return pythonToJson(p); }

NodePython nodePythonFromJson(const json& doc, const std::string& source) {
  return pythonFromJson(Reader(doc, source, ""));
}

json programPythonToJson(const Graph& g) {
  json doc = json::object();
  if (!g.schedule.empty()) {
    json steps = json::array();
    for (const auto& s : g.schedule) steps.push_back({{"change", s.change}, {"value", s.value}});
    doc["schedule"] = std::move(steps);
  }
  if (!g.hook.empty()) doc["hook"] = g.hook;
  return doc;
}

void programPythonFromJson(const json& doc, Graph& g, const std::string& source) {
  programPythonFromJson(Reader(doc, source, ""), g);
}

int64_t TensorType::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string TensorType::str() const { return fmt::format("[{}] {}", fmt::join(shape, ", "), dtypeName(dtype)); }

double Interval::magnitude() const { return std::max(std::abs(lo), std::abs(hi)); }

Interval Distribution::range() const {
  if (kind == "bernoulli") return {0, 1};
  if (kind == "randint" || kind == "randperm") return {low, high - 1};
  return {low, high};
}

int Graph::addValue(TensorType type) {
  int id = static_cast<int>(values.size());
  values.push_back({id, std::move(type)});
  return id;
}

const TensorType& Graph::typeOf(int value) const { return values.at(value).type; }
TensorType& Graph::typeOf(int value) { return values.at(value).type; }

const Source* Graph::sourceOf(int value) const {
  for (const auto& s : inputs)
    if (s.value == value) return &s;
  for (const auto& s : params)
    if (s.value == value) return &s;
  return nullptr;
}
Source* Graph::sourceOf(int value) { return const_cast<Source*>(std::as_const(*this).sourceOf(value)); }

int Graph::producerOf(int value) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int out : nodes[i].outputs)
      if (out == value) return static_cast<int>(i);
  return -1;
}

int Graph::useCount(int value) const {
  int n = 0;
  for (const auto& node : nodes)
    for (int in : node.inputs) n += in == value;
  return n;
}

json Graph::toJson() const {
  json doc;
  doc["format"] = "tcfuzz-graph";
  doc["version"] = kGraphFormatVersion;
  doc["origin"] = originToJson(origin);
  json vals = json::array();
  for (const auto& v : values) vals.push_back(typeToJson(v.type));
  doc["values"] = std::move(vals);
  auto sources = [](const std::vector<Source>& list) {
    json out = json::array();
    for (const auto& s : list) {
      json doc{{"value", s.value}, {"name", s.name}, {"dist", distToJson(s.dist)}};
      // Only a non-contiguous layout is written, so a program without one keeps its content hash.
      if (!s.layout.contiguous()) doc["layout"] = layoutToJson(s.layout);
      if (!s.boundary.empty()) doc["boundary"] = boundaryToJson(s.boundary);
      if (!s.alias.none()) doc["alias"] = aliasToJson(s.alias);
      out.push_back(std::move(doc));
    }
    return out;
  };
  doc["inputs"] = sources(inputs);
  doc["params"] = sources(params);
  json ns = json::array();
  for (const auto& n : nodes) {
    json node{{"op", n.op}, {"inputs", n.inputs}, {"outputs", n.outputs}, {"attrs", n.attrs}};
    if (n.core) node["core"] = true;
    if (n.writesInput) node["writes_input"] = true;  // only when set: older programs keep their hash
    if (!n.python.empty()) node["python"] = pythonToJson(n.python);
    ns.push_back(std::move(node));
  }
  doc["nodes"] = std::move(ns);
  doc["outputs"] = outputs;
  doc.update(programPythonToJson(*this));  // only when set: older programs keep their hash
  return doc;
}

Graph Graph::fromJson(const json& doc, const std::string& source) {
  Reader root(doc, source, "");
  root.onlyKeys({"format", "version", "origin", "values", "inputs", "params", "nodes", "outputs", "schedule", "hook"});
  if (root.at("format").str() != "tcfuzz-graph") root.at("format").fail("expected \"tcfuzz-graph\"");
  int64_t version = root.at("version").integer(1, 1 << 20);
  if (version != kGraphFormatVersion)
    root.at("version").fail(fmt::format("version {} is not supported (this tcfuzz reads {})", version, kGraphFormatVersion));

  Graph g;
  if (root.has("origin")) {
    Reader o = root.at("origin");
    o.onlyKeys({"generator", "seed", "index", "min_nodes", "max_nodes", "parent", "donor", "mutator", "strategy",
                "target", "model", "reply_id", "stored", "minimized", "plain", "single_trace"});
    g.origin.generator = o.at("generator").str();
    g.origin.seed = o.at("seed").unsignedInteger();
    g.origin.index = o.at("index").unsignedInteger();
    if (o.has("min_nodes")) g.origin.minNodes = static_cast<int>(o.at("min_nodes").integer(0, 1000));
    if (o.has("max_nodes")) g.origin.maxNodes = static_cast<int>(o.at("max_nodes").integer(0, 1000));
    for (auto [key, field] : {std::pair{"parent", &g.origin.parent}, {"donor", &g.origin.donor},
                              {"mutator", &g.origin.mutator}, {"strategy", &g.origin.strategy},
                              {"target", &g.origin.target}, {"model", &g.origin.model}, {"stored", &g.origin.stored}})
      if (o.has(key)) *field = o.at(key).str();
    if (o.has("reply_id")) g.origin.replyId = o.at("reply_id").integer(-1, int64_t{1} << 50);
    if (o.has("minimized")) {
      if (!o.at("minimized").raw().is_boolean()) o.at("minimized").fail("expected true or false");
      g.origin.minimized = o.at("minimized").raw().get<bool>();
    }
    for (auto [key, flag] : {std::pair{"plain", &g.origin.plain}, {"single_trace", &g.origin.singleTrace}}) {
      if (!o.has(key)) continue;
      if (!o.at(key).raw().is_boolean()) o.at(key).fail("expected true or false");
      *flag = o.at(key).raw().get<bool>();
    }
  }

  Reader vals = root.at("values");
  for (size_t i = 0; i < vals.size(); ++i) {
    Reader v = vals.at(i);
    v.onlyKeys({"shape", "dtype", "device"});
    TensorType t;
    Reader shape = v.at("shape");
    if (shape.size() > kMaxRank) shape.fail(fmt::format("rank {} exceeds {}", shape.size(), kMaxRank));
    for (size_t d = 0; d < shape.size(); ++d) t.shape.push_back(shape.at(d).integer(0, kMaxDim));
    std::string dt = v.at("dtype").str();
    auto parsed = parseDType(dt);
    if (!parsed) v.at("dtype").fail(fmt::format("unknown dtype '{}'", dt));
    t.dtype = *parsed;
    t.device = v.at("device").str();
    g.addValue(std::move(t));
  }

  // Each value is defined exactly once, before it is read.
  std::vector<bool> defined(g.values.size(), false);
  auto valueRef = [&](const Reader& r) {
    return static_cast<int>(r.integer(0, static_cast<int64_t>(g.values.size()) - 1));
  };
  auto define = [&](const Reader& r) {
    int id = valueRef(r);
    if (defined[id]) r.fail(fmt::format("value {} is defined twice", id));
    defined[id] = true;
    return id;
  };
  auto use = [&](const Reader& r) {
    int id = valueRef(r);
    if (!defined[id]) r.fail(fmt::format("value {} is read before it is defined", id));
    return id;
  };

  std::set<std::string> names;
  auto readSources = [&](const char* key, std::vector<Source>& out) {
    if (!root.has(key)) return;
    Reader list = root.at(key);
    for (size_t i = 0; i < list.size(); ++i) {
      Reader s = list.at(i);
      bool inputs = std::string(key) == "inputs";
      if (inputs) s.onlyKeys({"value", "name", "dist", "layout", "boundary", "alias"});
      else s.onlyKeys({"value", "name", "dist"});
      Source src;
      src.value = define(s.at("value"));
      src.name = s.at("name").str();
      bool identifier = !src.name.empty() && !std::isdigit(static_cast<unsigned char>(src.name[0]));
      for (char c : src.name) identifier = identifier && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (!identifier) s.at("name").fail(fmt::format("'{}' is not a Python identifier", src.name));
      if (!names.insert(src.name).second) s.at("name").fail(fmt::format("name '{}' is used twice", src.name));
      src.dist = distFromJson(s.at("dist"));
      // An input's layout and boundary values: parsed, then checked against its type and distribution.
      auto readInputStyle = [&](const char* field, auto parse, auto problemOf, auto& into) {
        if (!inputs || !s.has(field)) return;
        try {
          into = parse(s.at(field).raw());
        } catch (const std::invalid_argument& e) {
          s.at(field).fail(e.what());
        }
        if (auto problem = problemOf(into, g.typeOf(src.value), src.dist); !problem.empty()) s.at(field).fail(problem);
      };
      readInputStyle("layout", layoutFromJson, layoutProblem, src.layout);
      readInputStyle("boundary", boundaryFromJson, boundaryProblem, src.boundary);
      if (inputs && s.has("alias")) {
        try {
          src.alias = aliasFromJson(s.at("alias").raw());
        } catch (const std::invalid_argument& e) {
          s.at("alias").fail(e.what());
        }
      }
      out.push_back(std::move(src));
    }
  };
  readSources("inputs", g.inputs);
  readSources("params", g.params);
  // An alias names another input, which may come later in the list: checked once all are read.
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (auto problem = aliasProblem(g, g.inputs[i]); !problem.empty())
      root.at("inputs").at(i).at("alias").fail(problem);

  Reader nodes = root.at("nodes");
  for (size_t i = 0; i < nodes.size(); ++i) {
    Reader n = nodes.at(i);
    n.onlyKeys({"op", "inputs", "outputs", "attrs", "core", "writes_input", "python"});
    Node node;
    for (auto [key, field] : {std::pair{"core", &node.core}, std::pair{"writes_input", &node.writesInput}})
      if (n.has(key)) {
        if (!n.at(key).raw().is_boolean()) n.at(key).fail("expected true or false");
        *field = n.at(key).raw().get<bool>();
      }
    node.op = n.at("op").str();
    Reader ins = n.at("inputs");
    for (size_t k = 0; k < ins.size(); ++k) node.inputs.push_back(use(ins.at(k)));
    Reader outs = n.at("outputs");
    if (outs.size() == 0) outs.fail("a node defines at least one value");
    for (size_t k = 0; k < outs.size(); ++k) node.outputs.push_back(define(outs.at(k)));
    if (n.has("attrs")) {
      if (!n.at("attrs").raw().is_object()) n.at("attrs").fail("expected an object");
      node.attrs = n.at("attrs").raw();
    }
    if (n.has("python")) node.python = pythonFromJson(n.at("python"));
    g.nodes.push_back(std::move(node));
  }
  for (size_t i = 0; i < defined.size(); ++i)
    if (!defined[i]) vals.at(i).fail(fmt::format("value {} is never defined", i));

  Reader outs = root.at("outputs");
  if (outs.size() == 0) outs.fail("a program returns at least one value");
  for (size_t k = 0; k < outs.size(); ++k) g.outputs.push_back(use(outs.at(k)));
  programPythonFromJson(root, g);
  return g;
}

Graph Graph::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw GraphFormatError(path + ": cannot read the file");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw GraphFormatError(fmt::format("{}: not JSON: {}", path, e.what()));
  }
  return fromJson(doc, path);
}

namespace {

/// A copy whose values are `order` (old ids, in their new order), renumbered densely; sources whose
/// value is not in `order` are left out. Every value a kept node or output reads must be in it.
Graph renumbered(const Graph& g, const std::vector<int>& order) {
  std::vector<int> remap(g.values.size(), -1);
  Graph out;
  out.origin = g.origin;
  out.schedule = g.schedule;
  out.hook = g.hook;
  for (int v : order) remap[v] = out.addValue(g.typeOf(v));
  auto sources = [&](const std::vector<Source>& in, std::vector<Source>& dst) {
    for (auto s : in)
      if (remap[s.value] >= 0) {
        s.value = remap[s.value];
        dst.push_back(s);
      }
  };
  sources(g.inputs, out.inputs);
  sources(g.params, out.params);
  for (auto n : g.nodes) {
    for (int& v : n.inputs) v = remap[v];
    for (int& v : n.outputs) v = remap[v];
    out.nodes.push_back(std::move(n));
  }
  for (int v : g.outputs) out.outputs.push_back(remap[v]);
  return out;
}

}  // namespace

Graph compactGraph(const Graph& g) {
  std::vector<bool> live(g.values.size(), false);
  for (const auto& n : g.nodes) {
    for (int v : n.inputs) live[v] = true;
    for (int v : n.outputs) live[v] = true;
  }
  for (int v : g.outputs) live[v] = true;
  for (const Source& s : g.inputs)
    if (live[s.value] && !s.alias.none())
      for (const Source& base : g.inputs)
        if (base.name == s.alias.base) live[base.value] = true;
  // Keep the original definition order: sources first in their order, then node outputs.
  std::vector<int> order;
  for (const auto& v : g.values)
    if (live[v.id]) order.push_back(v.id);
  return renumbered(g, order);
}

Graph sourcesFirst(const Graph& g) {
  std::vector<int> order;
  for (const auto& s : g.inputs) order.push_back(s.value);
  for (const auto& s : g.params) order.push_back(s.value);
  for (const auto& n : g.nodes) order.insert(order.end(), n.outputs.begin(), n.outputs.end());
  return renumbered(g, order);
}

std::string Graph::contentHash() const {
  json doc = toJson();
  doc.erase("origin");
  for (auto& n : doc["nodes"]) n.erase("core");
  std::string hex;
  sha256Hex(doc.dump(), hex);
  return hex;
}

Graph eliminateDeadNodes(const Graph& g) {
  Graph out = g;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = out.nodes.size(); i-- > 0;) {
      const Node& n = out.nodes[i];
      bool used = false;
      for (int v : n.outputs)
        if (out.useCount(v) > 0 || std::find(out.outputs.begin(), out.outputs.end(), v) != out.outputs.end()) used = true;
      if (!used) {
        out.nodes.erase(out.nodes.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
      }
    }
  }
  return compactGraph(out);
}

int deadNodeCount(const Graph& g) {
  return static_cast<int>(g.nodes.size()) - static_cast<int>(eliminateDeadNodes(g).nodes.size());
}

bool writesIntoProgramInput(const Graph& g, const Node& n) {
  if (!n.writesInput || n.inputs.empty()) return false;
  int target = n.inputs[0];
  bool isInput = std::any_of(g.inputs.begin(), g.inputs.end(), [&](const Source& s) { return s.value == target; });
  return isInput && g.useCount(target) == 1 && std::find(g.outputs.begin(), g.outputs.end(), target) == g.outputs.end();
}

std::vector<int> writtenInputPositions(const Graph& g) {
  // An input's storage group is named by its alias base, else by its own name.
  auto group = [&](const Source& s) { return s.alias.none() ? s.name : s.alias.base; };
  std::set<std::string> written;
  for (const Source& s : g.inputs)
    for (const Node& n : g.nodes)
      if (!n.inputs.empty() && n.inputs[0] == s.value && writesIntoProgramInput(g, n)) written.insert(group(s));
  std::vector<int> positions;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (written.count(group(g.inputs[i]))) positions.push_back(static_cast<int>(i));
  return positions;
}

}  // namespace tcfuzz::gen
