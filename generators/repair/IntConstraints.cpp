#include "generators/repair/IntConstraints.h"

#include <fmt/format.h>

namespace tcfuzz::gen {
namespace {

int64_t jsonInt(const nlohmann::json& attrs, const std::string& name, int i) {
  auto it = attrs.find(name);
  if (it == attrs.end()) throw std::out_of_range("missing integer attribute " + name);
  const auto& v = i >= 0 ? it->at(i) : *it;
  if (v.is_boolean()) return v.get<bool>();
  if (!v.is_number_integer()) throw std::out_of_range("attribute " + name + " is not an integer");
  return v.get<int64_t>();
}

int axisOf(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

}  // namespace

int64_t ConcreteEnv::attr(const std::string& name, int i) const { return jsonInt(attrs_, name, i); }
int64_t ConcreteEnv::dim(int input, int axis) const {
  const auto& s = in_.at(input).shape;
  return s.at(axisOf(axis, static_cast<int>(s.size())));
}
int ConcreteEnv::length(const std::string& name) const {
  auto it = attrs_.find(name);
  return it != attrs_.end() && it->is_array() ? static_cast<int>(it->size()) : 0;
}

SymbolicEnv::SymbolicEnv(z3::context& z3, const std::vector<TensorType>& in, const nlohmann::json& attrs,
                         std::vector<bool> resizable)
    : z3_(z3), in_(in), attrs_(attrs), resizable_(std::move(resizable)) {}

z3::expr SymbolicEnv::unknown(const std::string& key, int64_t current) const {
  auto it = unknowns_.find(key);
  if (it != unknowns_.end()) return it->second.first;
  z3::expr e = z3_.int_const(key.c_str());
  unknowns_.emplace(key, std::make_pair(e, current));
  return e;
}

z3::expr SymbolicEnv::attr(const std::string& name, int i) const {
  int64_t current = 0;
  try {
    current = jsonInt(attrs_, name, i);
  } catch (const std::exception&) {
  }
  return unknown(i >= 0 ? fmt::format("{}.{}", name, i) : name, current);
}

z3::expr SymbolicEnv::dim(int input, int axis) const {
  const auto& s = in_.at(input).shape;
  int a = axisOf(axis, static_cast<int>(s.size()));
  int64_t current = s.at(a);
  if (input < static_cast<int>(resizable_.size()) && resizable_[input])
    return unknown(fmt::format("in.{}.{}", input, a), current);
  return z3_.int_val(current);
}

int64_t SymbolicEnv::fixed(const std::string& name, int i) const { return jsonInt(attrs_, name, i); }

int SymbolicEnv::length(const std::string& name) const {
  auto it = attrs_.find(name);
  return it != attrs_.end() && it->is_array() ? static_cast<int>(it->size()) : 0;
}

IntSolver::IntSolver(uint64_t seed) : seed_(seed) {}

bool IntSolver::solve(const IntConstraintSet& constraints, std::vector<TensorType>& in, nlohmann::json& attrs,
                      const std::vector<bool>& resizable, const std::map<std::string, UnknownBounds>& bounds,
                      int64_t maxDim) {
  ++calls_;
  SymbolicEnv env(z3_, in, attrs, resizable);
  std::vector<z3::expr> rules;
  try {
    rules = constraints.symbolic(env);
  } catch (const std::exception&) {
    return false;  // the constraint refers to an input or attribute the node does not have
  }
  z3::solver solver(z3_);
  z3::params p(z3_);
  p.set("random_seed", static_cast<unsigned>(seed_ + calls_));
  solver.set(p);
  for (auto& r : rules) solver.add(r);

  z3::expr_vector assumptions(z3_);
  std::vector<std::string> keys;
  for (const auto& [key, entry] : env.unknowns()) {
    const auto& [var, current] = entry;
    if (key.rfind("in.", 0) == 0) {
      solver.add(var >= 1 && var <= z3_.int_val(maxDim));
    } else {
      std::string base = key.substr(0, key.find('.'));
      auto b = bounds.find(base);
      if (b != bounds.end()) solver.add(var >= z3_.int_val(b->second.lo) && var <= z3_.int_val(b->second.hi));
    }
    z3::expr keep = z3_.bool_const(("keep." + key).c_str());
    solver.add(z3::implies(keep, var == z3_.int_val(current)));
    assumptions.push_back(keep);
    keys.push_back(key);
  }
  // Drop the assumptions of each unsat core until the rest is satisfiable.
  for (int round = 0; round <= static_cast<int>(keys.size()); ++round) {
    z3::check_result r = solver.check(assumptions);
    if (r == z3::sat) {
      z3::model m = solver.get_model();
      for (const auto& [key, entry] : env.unknowns()) {
        int64_t v = m.eval(entry.first, true).get_numeral_int64();
        if (key.rfind("in.", 0) == 0) {
          int input = 0, axis = 0;
          std::sscanf(key.c_str(), "in.%d.%d", &input, &axis);
          in.at(input).shape.at(axis) = v;
        } else if (auto dot = key.find('.'); dot != std::string::npos) {
          attrs[key.substr(0, dot)][std::stoi(key.substr(dot + 1))] = v;
        } else {
          attrs[key] = v;
        }
      }
      return true;
    }
    if (r != z3::unsat) return false;
    z3::expr_vector core = solver.unsat_core();
    if (core.size() == 0) return false;
    z3::expr_vector rest(z3_);
    for (unsigned i = 0; i < assumptions.size(); ++i) {
      bool inCore = false;
      for (unsigned j = 0; j < core.size(); ++j) inCore = inCore || z3::eq(assumptions[i], core[j]);
      if (!inCore) rest.push_back(assumptions[i]);
    }
    assumptions = rest;
  }
  return false;
}

}  // namespace tcfuzz::gen
