#pragma once
// Integer constraints of an op written once, as a generic lambda over an environment, and
// instantiated twice: with int64_t to check a node, with z3::expr to solve for a valid one.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <z3++.h>

#include "generators/ir/Graph.h"

namespace tcfuzz::gen {

/// Concrete values: attributes from the node, dims from the input types.
class ConcreteEnv {
 public:
  ConcreteEnv(const std::vector<TensorType>& in, const nlohmann::json& attrs) : in_(in), attrs_(attrs) {}
  /// Integer attribute `name` (element `i` of a list attribute when i >= 0).
  int64_t attr(const std::string& name, int i = -1) const;
  /// Dim `axis` (negative counts from the end) of input `input`.
  int64_t dim(int input, int axis) const;
  /// An integer attribute the solver keeps as it is (a dim index, a flag): same in both envs.
  int64_t fixed(const std::string& name, int i = -1) const { return attr(name, i); }
  int rank(int input) const { return in_.at(input).rank(); }
  /// Length of list attribute `name`.
  int length(const std::string& name) const;

 private:
  const std::vector<TensorType>& in_;
  const nlohmann::json& attrs_;
};

/// Symbolic values: every integer attribute is an unknown; dims are constants except those of
/// inputs marked resizable (a fresh program input only this node reads).
class SymbolicEnv {
 public:
  SymbolicEnv(z3::context& z3, const std::vector<TensorType>& in, const nlohmann::json& attrs,
              std::vector<bool> resizable);
  z3::expr attr(const std::string& name, int i = -1) const;
  z3::expr dim(int input, int axis) const;
  int64_t fixed(const std::string& name, int i = -1) const;
  int rank(int input) const { return in_.at(input).rank(); }
  int length(const std::string& name) const;
  /// Every unknown created so far, keyed "name" / "name.i" / "in.k.axis", with its current value.
  const std::map<std::string, std::pair<z3::expr, int64_t>>& unknowns() const { return unknowns_; }

 private:
  z3::expr unknown(const std::string& key, int64_t current) const;
  z3::context& z3_;
  const std::vector<TensorType>& in_;
  const nlohmann::json& attrs_;
  std::vector<bool> resizable_;
  mutable std::map<std::string, std::pair<z3::expr, int64_t>> unknowns_;
};

/// An op's integer constraints in both instantiations.
struct IntConstraintSet {
  std::function<std::vector<bool>(const ConcreteEnv&)> check;
  std::function<std::vector<z3::expr>(const SymbolicEnv&)> symbolic;
};

/// Builds both instantiations from one generic lambda `f(const auto& env) -> std::vector<...>`.
template <class F>
IntConstraintSet intConstraints(F f) {
  return {[f](const ConcreteEnv& e) {
            auto r = f(e);
            return std::vector<bool>(r.begin(), r.end());
          },
          [f](const SymbolicEnv& e) {
            auto r = f(e);
            return std::vector<z3::expr>(r.begin(), r.end());
          }};
}

/// Bounds Z3 may pick from for an attribute ([lo, hi]) when solving.
struct UnknownBounds {
  int64_t lo = 0, hi = 0;
};

/// Solves an op's integer constraints with Z3, staying as close as it can to the current values:
/// each current value is a retractable assumption, dropped only when it is in an unsat core.
class IntSolver {
 public:
  explicit IntSolver(uint64_t seed);
  /// On success rewrites the integer attributes in `attrs` and the resizable dims in `in`, and
  /// returns true; false when no assignment satisfies the constraints within `bounds`.
  bool solve(const IntConstraintSet& constraints, std::vector<TensorType>& in, nlohmann::json& attrs,
             const std::vector<bool>& resizable, const std::map<std::string, UnknownBounds>& bounds,
             int64_t maxDim);
  /// Number of solver calls made so far.
  int64_t calls() const { return calls_; }

 private:
  z3::context z3_;
  uint64_t seed_;
  int64_t calls_ = 0;
};

}  // namespace tcfuzz::gen
