#include "fuzzer/cli/commands/Commands.h"

#include <iostream>

#include <set>

#include <ATen/core/dispatch/Dispatcher.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace tcfuzz {

using nlohmann::json;

namespace {

std::vector<std::string> dtypeNames(gen::DTypeSet set) {
  std::vector<std::string> names;
  for (int i = 0; i < gen::kDTypeCount; ++i)
    if (set.has(static_cast<gen::DType>(i))) names.emplace_back(gen::dtypeName(static_cast<gen::DType>(i)));
  return names;
}

/// "int [lo, hi]", "choice {a, b}", ... with "?" when the attribute may be None.
std::string attrDomain(const gen::AttrSpec& a) {
  std::string d;
  switch (a.kind) {
    case gen::AttrKind::Int: d = fmt::format("int [{}, {}]", a.lo, a.hi); break;
    case gen::AttrKind::IntList: d = fmt::format("int[] of [{}, {}]", a.lo, a.hi); break;
    case gen::AttrKind::Float: d = fmt::format("float [{}, {}]", a.flo, a.fhi); break;
    case gen::AttrKind::Bool: d = "bool"; break;
    case gen::AttrKind::Choice: d = fmt::format("choice {{{}}}", fmt::join(a.choices, ", ")); break;
    case gen::AttrKind::DType: d = fmt::format("dtype {{{}}}", fmt::join(a.choices, ", ")); break;
  }
  return a.optional ? d + " or None" : d;
}

/// The operator name ("aten::add") of a spelling, or "" when it does not parse.
std::string atenName(const std::string& spelling) {
  try {
    return gen::parseAtenCall(spelling).op;
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

std::string catalogReport(const gen::OpCatalog& catalog, bool asJson) {
  json ops = json::array();
  std::set<std::string> referenced;
  for (const auto& op : catalog.ops()) {
    json accepts = json::array();
    for (const auto& set : op->accepts) accepts.push_back(dtypeNames(set));
    json attrs = json::object();
    for (const auto& a : op->attrs) attrs[a.name] = attrDomain(a);
    ops.push_back({{"name", op->name},
                   {"family", op->family},
                   {"inputs", {op->minInputs, op->maxInputs}},
                   {"rank", {op->minRank, op->maxRank}},
                   {"accepts", accepts},
                   {"attrs", attrs},
                   {"python", op->init.empty() ? op->python : op->init + " ; " + op->python},
                   {"aten", op->aten}});
    if (auto name = atenName(op->aten); !name.empty()) referenced.insert(name);
  }
  std::set<std::string> atenOps;
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames())
    if (name.name.rfind("aten::", 0) == 0) atenOps.insert(name.name);
  std::vector<std::string> covered;
  for (const auto& name : referenced)
    if (atenOps.count(name)) covered.push_back(name);
  double percent = atenOps.empty() ? 0 : 100.0 * static_cast<double>(covered.size()) / static_cast<double>(atenOps.size());

  if (asJson) {
    json doc{{"ops", ops},
             {"coverage",
              {{"aten_ops", atenOps.size()}, {"covered", covered.size()}, {"percent", percent}, {"referenced", covered}}}};
    return doc.dump(2) + "\n";
  }
  std::string out;
  for (const auto& op : ops) {
    out += fmt::format("{} ({}): {}..{} inputs, rank {}..{}\n", op["name"].get<std::string>(),
                       op["family"].get<std::string>(), op["inputs"][0].get<int>(), op["inputs"][1].get<int>(),
                       op["rank"][0].get<int>(), op["rank"][1].get<int>());
    std::vector<std::string> accepts;
    for (const auto& set : op["accepts"]) accepts.push_back(fmt::format("{}", fmt::join(set.get<std::vector<std::string>>(), "|")));
    out += fmt::format("  dtypes  {}\n", fmt::join(accepts, " ; "));
    for (const auto& [name, domain] : op["attrs"].items()) out += fmt::format("  attr    {}: {}\n", name, domain.get<std::string>());
    out += fmt::format("  python  {}\n  aten    {}\n", op["python"].get<std::string>(), op["aten"].get<std::string>());
  }
  out += fmt::format("{} ops; they reference {} of the {} aten:: operators the dispatcher knows ({:.1f}%)\n", ops.size(),
                     covered.size(), atenOps.size(), percent);
  return out;
}

int opsCommand(bool json) {
  std::cout << catalogReport(gen::makeDefaultCatalog(), json);
  return 0;
}

}  // namespace tcfuzz
