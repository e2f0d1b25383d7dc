#include "generators/llm/LlmProgram.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generators/features/InputAliases.h"
#include "generators/features/InputLayout.h"
#include "generators/ir/Rng.h"

namespace tcfuzz::gen {

using nlohmann::json;

namespace {

/// A schema violation: becomes the "schema" (or "too-large") rejection with this detail.
struct SchemaError {
  std::string reason;
  std::string detail;
};

[[noreturn]] void schema(const std::string& detail) { throw SchemaError{"schema", detail}; }
[[noreturn]] void tooLarge(const std::string& detail) { throw SchemaError{"too-large", detail}; }

const std::regex& nameSyntax() {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_]{0,31}");
  return re;
}

void checkKeys(const json& obj, const std::string& where, const std::set<std::string>& required,
               const std::set<std::string>& optional) {
  if (!obj.is_object()) schema(where + " must be an object");
  for (const auto& [k, v] : obj.items())
    if (!required.count(k) && !optional.count(k)) schema(fmt::format("{} has unknown key '{}'", where, k));
  for (const auto& k : required)
    if (!obj.contains(k)) schema(fmt::format("{} lacks '{}'", where, k));
}

std::string nameAt(const json& v, const std::string& where) {
  if (!v.is_string()) schema(where + " must be a string");
  return v.get<std::string>();
}

/// Scales a shape down (halving its largest dim) until it fits the caps.
std::vector<int64_t> fitShape(std::vector<int64_t> shape, const ShapeCaps& caps, bool& changed) {
  for (auto& d : shape)
    if (d > caps.maxDim) {
      d = caps.maxDim;
      changed = true;
    }
  auto numel = [&] {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  };
  while (numel() > caps.maxElements) {
    auto it = std::max_element(shape.begin(), shape.end());
    *it = (*it + 1) / 2;
    changed = true;
  }
  return shape;
}

}  // namespace

std::optional<json> extractJsonObject(const std::string& text, std::string* why, std::string* detail) {
  auto fail = [&](const char* reason, std::string d) -> std::optional<json> {
    if (why) *why = reason;
    if (detail) *detail = std::move(d);
    return std::nullopt;
  };
  size_t start = text.find('{');
  if (start == std::string::npos) return fail("no-json", "the reply holds no '{'");
  std::string lastError;
  for (int tries = 0; start != std::string::npos && tries < 8; ++tries) {
    int depth = 0;
    bool inString = false, escaped = false;
    size_t end = std::string::npos;
    for (size_t i = start; i < text.size(); ++i) {
      char c = text[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') inString = false;
        continue;
      }
      if (c == '"') inString = true;
      else if (c == '{' || c == '[') depth++;
      else if (c == '}' || c == ']') {
        if (--depth == 0) {
          end = i;
          break;
        }
      }
    }
    if (end == std::string::npos)
      return fail(lastError.empty() ? "truncated" : "json-syntax",
                  lastError.empty() ? fmt::format("the object opened at offset {} never closes", start) : lastError);
    try {
      return json::parse(text.begin() + static_cast<std::ptrdiff_t>(start),
                         text.begin() + static_cast<std::ptrdiff_t>(end) + 1);
    } catch (const json::parse_error& e) {
      lastError = e.what();
    }
    start = text.find('{', end + 1);
  }
  return fail("json-syntax", lastError);
}

ProposalOutcome buildProposal(const json& doc, const OpCatalog& catalog, const ShapeCaps& caps, uint64_t seed,
                              IntSolver& solver, const ProposalLimits& limits) {
  ProposalOutcome out;
  try {
    checkKeys(doc, "the program", {"inputs", "nodes"}, {"outputs", "schedule", "hook"});
    const json& inputs = doc["inputs"];
    const json& nodes = doc["nodes"];
    if (!inputs.is_array()) schema("'inputs' must be an array");
    if (!nodes.is_array()) schema("'nodes' must be an array");
    if (nodes.empty()) schema("'nodes' is empty");
    if (static_cast<int>(inputs.size()) > limits.maxInputs)
      tooLarge(fmt::format("{} inputs (at most {})", inputs.size(), limits.maxInputs));
    if (static_cast<int>(nodes.size()) > limits.maxNodes)
      tooLarge(fmt::format("{} nodes (at most {})", nodes.size(), limits.maxNodes));
    if (doc.contains("outputs") && !doc["outputs"].is_array()) schema("'outputs' must be an array");

    // Schema pass first: nothing is built from a document that breaks the form.
    std::set<std::string> names;
    // A name defined again rebinds it, as in Python (small models write x = relu(x)): reads before see
    // the earlier value, reads after the new one. A repair, noted in the detail.
    std::vector<std::string> rebound;
    auto declare = [&](const std::string& name, const std::string& where) {
      if (!std::regex_match(name, nameSyntax())) schema(fmt::format("{}: '{}' is not a name", where, name));
      if (!names.insert(name).second) rebound.push_back(fmt::format("{}: '{}' defined again rebinds the name", where, name));
    };
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::string where = fmt::format("inputs[{}]", i);
      const json& in = inputs[i];
      checkKeys(in, where, {"name", "shape", "dtype"}, {"parameter", "layout", "boundary"});
      declare(nameAt(in["name"], where + ".name"), where);
      if (!in["shape"].is_array()) schema(where + ".shape must be an array");
      if (static_cast<int>(in["shape"].size()) > limits.maxRank)
        tooLarge(fmt::format("{} has rank {} (at most {})", where, in["shape"].size(), limits.maxRank));
      for (const auto& d : in["shape"])
        if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > (1 << 20))
          schema(fmt::format("{}.shape holds {} (dims are integers in [1, 2^20])", where, d.dump()));
      if (!in["dtype"].is_string() || !parseDType(in["dtype"].get<std::string>()))
        schema(fmt::format("{}.dtype {} is not a supported dtype", where, in["dtype"].dump()));
      if (in.contains("parameter") && !in["parameter"].is_boolean()) schema(where + ".parameter must be a boolean");
      if (in.contains("layout")) try {
          layoutFromJson(in["layout"]);
        } catch (const std::invalid_argument& e) {
          schema(fmt::format("{}.layout: {}", where, e.what()));
        }
      if (in.contains("boundary")) try {
          boundaryFromJson(in["boundary"]);
        } catch (const std::invalid_argument& e) {
          schema(fmt::format("{}.boundary: {}", where, e.what()));
        }
    }
    std::vector<NodePython> nodePython(nodes.size());  // each node's Python constructs, as the schema pass read them
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::string where = fmt::format("nodes[{}]", i);
      const json& n = nodes[i];
      checkKeys(n, where, {"out", "op", "args"}, {"attrs", "python"});
      declare(nameAt(n["out"], where + ".out"), where);
      nameAt(n["op"], where + ".op");
      if (!n["args"].is_array()) schema(where + ".args must be an array");
      for (const auto& a : n["args"]) nameAt(a, where + ".args[]");
      if (n.contains("attrs") && !n["attrs"].is_object()) schema(where + ".attrs must be an object");
      if (n.contains("python")) try {
          nodePython[i] = nodePythonFromJson(n["python"], where + ".python");
        } catch (const GraphFormatError& e) {
          schema(e.what());
        }
    }
    Graph constructs;  // the program's schedule and hook, checked before anything is built
    try {
      programPythonFromJson(doc, constructs, "the program");
    } catch (const GraphFormatError& e) {
      schema(e.what());
    }
    if (doc.contains("outputs"))
      for (const auto& o : doc["outputs"]) nameAt(o, "outputs[]");

    // Build: replay through repair.
    Graph g;
    g.origin = {"llm", seed, 0};
    Rng rng(seed);
    GraphRepairer repairer(catalog, caps, rng, solver);
    repairer.attach(g);
    std::map<std::string, int> values;
    for (const auto& in : inputs) {
      TensorType t;
      std::vector<int64_t> shape = in["shape"].get<std::vector<int64_t>>();
      t.shape = fitShape(shape, caps, out.repaired);
      t.dtype = *parseDType(in["dtype"].get<std::string>());
      int id = repairer.addSource(t, std::nullopt, in.value("parameter", false));
      values[in["name"].get<std::string>()] = id;
      if (!g.inputs.empty() && g.inputs.back().value == id) {
        if (in.contains("layout")) g.inputs.back().layout = layoutFromJson(in["layout"]);
        if (in.contains("boundary")) g.inputs.back().boundary = boundaryFromJson(in["boundary"]);
      }
    }
    std::vector<std::string> problems;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const json& n = nodes[i];
      std::string op = n["op"].get<std::string>();
      if (!catalog.find(op)) {
        out.unknownOps++;
        out.dropped.push_back(fmt::format("node {} ({}): unknown op", i, op));
        continue;
      }
      Node node;
      node.op = op;
      for (const auto& a : n["args"]) {
        std::string name = a.get<std::string>();
        // "v3.1" names output 1 of node v3; "v3.0" is "v3".
        if (name.size() > 2 && name.ends_with(".0")) name.resize(name.size() - 2);
        auto it = values.find(name);
        if (it == values.end()) {
          out.undefinedArgs++;
          continue;
        }
        node.inputs.push_back(it->second);
      }
      node.attrs = n.value("attrs", json::object());
      // Python constructs the program cannot hold are dropped where the program is written (planPythonConstructs).
      node.python = nodePython[i];
      size_t before = g.nodes.size();
      std::string why;
      if (!repairer.append(node, &why)) {
        out.dropped.push_back(fmt::format("node {} ({}): {}", i, op, why));
        continue;
      }
      const Node& added = g.nodes.back();
      if (g.nodes.size() - before > 1 || added.attrs != n.value("attrs", json::object())) out.repaired = true;
      std::string base = n["out"].get<std::string>();
      for (size_t k = 0; k < added.outputs.size(); ++k)
        values[k == 0 ? base : fmt::format("{}.{}", base, k)] = added.outputs[k];
    }
    if (g.nodes.empty()) {
      out.rejection = out.unknownOps == static_cast<int>(nodes.size()) ? "unknown-op" : "no-valid-node";
      out.detail = fmt::format("{}", fmt::join(out.dropped, "; "));
      return out;
    }
    if (doc.contains("outputs"))
      for (const auto& o : doc["outputs"]) {
        auto it = values.find(o.get<std::string>());
        if (it != values.end() && g.producerOf(it->second) >= 0 &&
            std::find(g.outputs.begin(), g.outputs.end(), it->second) == g.outputs.end())
          g.outputs.push_back(it->second);
      }
    if (g.outputs.empty()) g.outputs.push_back(g.nodes.back().outputs.front());
    if (!out.dropped.empty() || out.undefinedArgs > 0 || !rebound.empty()) out.repaired = true;
    Graph compact = compactGraph(g);
    compact.schedule = constructs.schedule;
    compact.hook = constructs.hook;
    if (int reset = dropInvalidLayouts(compact) + dropInvalidAliases(compact, &catalog); reset > 0) {  // a layout that does not fit its input
      out.repaired = true;
      out.dropped.push_back(fmt::format("{} input layout(s), alias(es) or boundary values that did not fit (made plain)", reset));
    }
    if (int views = repairIllegalViews(compact, catalog); views > 0) {
      out.repaired = true;
      out.dropped.push_back(fmt::format("{} view(s) of a tensor that may not be contiguous (made reshape)", views));
    }
    if (std::string problem = firstInvalidNode(catalog, compact); !problem.empty()) {
      out.rejection = "invalid-after-repair";
      out.detail = problem;
      return out;
    }
    std::vector<std::string> notes = out.dropped;
    notes.insert(notes.end(), rebound.begin(), rebound.end());
    out.detail = fmt::format("{}", fmt::join(notes, "; "));
    out.graph = std::move(compact);
  } catch (const SchemaError& e) {
    out.rejection = e.reason;
    out.detail = e.detail;
  } catch (const json::exception& e) {
    out.rejection = "schema";
    out.detail = e.what();
  }
  if (out.rejection.empty() && out.undefinedArgs > 0 && out.detail.empty())
    out.detail = fmt::format("{} undefined argument(s) left out", out.undefinedArgs);
  return out;
}

ProposalOutcome proposalFromText(const std::string& text, const OpCatalog& catalog, const ShapeCaps& caps,
                                 uint64_t seed, IntSolver& solver, const ProposalLimits& limits) {
  std::string why, detail;
  auto doc = extractJsonObject(text, &why, &detail);
  if (!doc) {
    ProposalOutcome out;
    out.rejection = why;
    out.detail = detail;
    return out;
  }
  return buildProposal(*doc, catalog, caps, seed, solver, limits);
}

json proposalOf(const Graph& g) {
  std::map<int, std::string> names;
  json inputs = json::array();
  for (const auto* list : {&g.inputs, &g.params})
    for (const auto& s : *list) {
      names[s.value] = s.name;
      const TensorType& t = g.typeOf(s.value);
      inputs.push_back({{"name", s.name}, {"shape", t.shape}, {"dtype", std::string(dtypeName(t.dtype))},
                        {"parameter", list == &g.params}});
      if (!s.layout.contiguous()) inputs.back()["layout"] = layoutToJson(s.layout);
      if (!s.boundary.empty()) inputs.back()["boundary"] = boundaryToJson(s.boundary);
    }
  json nodes = json::array();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::string base = fmt::format("v{}", i);
    for (size_t k = 0; k < n.outputs.size(); ++k) names[n.outputs[k]] = k == 0 ? base : fmt::format("{}.{}", base, k);
    json args = json::array();
    for (int in : n.inputs) args.push_back(names.count(in) ? names[in] : fmt::format("v?{}", in));
    nodes.push_back({{"out", base}, {"op", n.op}, {"args", args}, {"attrs", n.attrs}});
    if (!n.python.empty()) nodes.back()["python"] = nodePythonToJson(n.python);
  }
  json outputs = json::array();
  for (int o : g.outputs) outputs.push_back(names.count(o) ? names[o] : "");
  json doc{{"inputs", inputs}, {"nodes", nodes}, {"outputs", outputs}};
  doc.update(programPythonToJson(g));
  return doc;
}

std::string proposalGrammar(const OpCatalog& catalog, const std::vector<std::string>& ops, int maxNodes) {
  std::vector<std::string> allowed;
  if (ops.empty())
    for (const auto& op : catalog.ops()) allowed.push_back(op->name);
  else
    for (const auto& op : ops)
      if (catalog.find(op)) allowed.push_back(op);
  if (allowed.empty()) throw std::invalid_argument("proposalGrammar: none of the ops is in the catalog");
  std::string opRule;
  for (size_t i = 0; i < allowed.size(); ++i) opRule += fmt::format("{}\"\\\"{}\\\"\"", i ? " | " : "", allowed[i]);
  std::string dtypes;
  for (int i = 0; i < kDTypeCount; ++i)
    dtypes += fmt::format("{}\"\\\"{}\\\"\"", dtypes.empty() ? "" : " | ", dtypeName(static_cast<DType>(i)));
  std::string forms;
  for (const auto& f : pythonFormNames()) forms += fmt::format("{}\"\\\"{}\\\"\"", forms.empty() ? "" : " | ", f);
  std::string hops;
  for (const auto& h : hopKindNames()) hops += fmt::format("{}\"\\\"{}\\\"\"", hops.empty() ? "" : " | ", h);
  maxNodes = std::max(1, maxNodes);
  return fmt::format(R"(root ::= "{{" ws "\"inputs\":" ws "[" ws input ("," ws input){{0,2}} ws "]," ws "\"nodes\":" ws "[" ws node ("," ws node){{0,{}}} ws "]," ws "\"outputs\":" ws "[" ws name ("," ws name){{0,2}} ws "]" ("," ws "\"hook\":" ws hook)? ws "}}"
input ::= "{{" ws "\"name\":" ws newname "," ws "\"shape\":" ws "[" ws dim ("," ws dim){{0,3}} ws "]," ws "\"dtype\":" ws dtype ("," ws "\"layout\":" ws layout)? ws "}}"
layout ::= "{{" ws "\"kind\":" ws (transposed | strided | expanded | "\"channels_last\"") ws "}}"
transposed ::= "\"transposed\"," ws "\"dims\":" ws "[" [0-3] "," ws [0-3] "]"
strided ::= "\"strided\"," ws "\"dim\":" ws [0-3] "," ws "\"step\":" ws [1-4] "," ws "\"offset\":" ws [0-4]
expanded ::= "\"expanded\"," ws "\"dim\":" ws [0-3]
node ::= "{{" ws "\"out\":" ws newname "," ws "\"op\":" ws op "," ws "\"args\":" ws "[" ws name ("," ws name){{0,2}} ws "]" ("," ws "\"attrs\":" ws attrs)? ("," ws "\"python\":" ws python)? ws "}}"
python ::= "{{" ws pyfield ("," ws pyfield){{0,2}} ws "}}"
pyfield ::= "\"graph_break_before\": true" | "\"counter\": true" | "\"output_state\":" ws ("\"scale\"" | "\"offset\"") | "\"form\":" ws form | "\"branch\":" ws branch | "\"hop\":" ws hop
branch ::= "{{" ws "\"kind\":" ws ("\"item\"" | "\"tensor\"" | "\"any\"" | "\"flag\"" | "\"training\"") "," ws "\"operand\":" ws [0-2] "," ws "\"threshold\":" ws number ws "}}"
form ::= {}
hop ::= "{{" ws "\"kind\":" ws hopkind ("," ws "\"input\":" ws [0-2] "," ws "\"threshold\":" ws number)? ws "}}"
hopkind ::= {}
hook ::= "\"forward\"" | "\"forward-pre\"" | "\"global-forward\"" | "\"global-pre\""
attrs ::= "{{" ws (attr ("," ws attr){{0,4}})? ws "}}"
attr ::= "\"" [a-z_] [a-z0-9_]{{0,23}} "\":" ws value
value ::= number | "true" | "false" | "null" | string | "[" ws (number ("," ws number){{0,5}})? ws "]"
number ::= "-"? [0-9] [0-9]{{0,3}} ("." [0-9]{{1,4}})?
string ::= "\"" [a-z0-9_]{{0,16}} "\""
newname ::= "\"" [a-z] [a-z0-9_]{{0,7}} "\""
name ::= "\"" [a-z] [a-z0-9_]{{0,7}} ("." [1-3])? "\""
dim ::= [1-9] | "1" [0-6]
dtype ::= {}
op ::= {}
ws ::= [ \n]{{0,2}}
)",
                     maxNodes - 1, forms, hops, dtypes, opRule);
}

}  // namespace tcfuzz::gen
