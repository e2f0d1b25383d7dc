#pragma once
// The op catalog: one declarative entry per op (NNSmith's dtypes / type_transfer / requires):
// arity, accepted dtypes, attribute domains, shape rule with its constraints, the value domain
// the inputs need, the value range of the output, and the Python and ATen spellings.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"
#include "generators/repair/IntConstraints.h"
#include "generators/ir/Rng.h"
#include "generators/ir/Strides.h"

namespace tcfuzz::gen {

/// Caps a generated tensor must respect (from GenPolicy).
struct ShapeCaps {
  int maxRank = 4;
  int64_t maxDim = 12;
  int64_t maxElements = 1 << 14;
};

/// The kinds of attribute an op can take.
enum class AttrKind { Int, IntList, Float, Bool, Choice, DType };

/// The domain of one attribute. Int/IntList elements lie in [lo, hi]; Float in [flo, fhi].
/// `dependent` attributes are set by the op's sampler from the input shapes (a dim, a size).
struct AttrSpec {
  std::string name;
  AttrKind kind = AttrKind::Int;
  int64_t lo = 0, hi = 0;
  double flo = 0, fhi = 0;
  std::vector<std::string> choices;
  bool optional = false;  // may be null (Python None)
};

/// What an op's rules see: the types and value ranges of the inputs and the node's attributes.
struct OpContext {
  std::vector<TensorType> in;
  std::vector<Interval> ranges;
  nlohmann::json attrs = nlohmann::json::object();
  const ShapeCaps* caps = nullptr;

  const TensorType& x(int i = 0) const { return in.at(i); }
  int64_t attrInt(const std::string& name) const;
  std::vector<int64_t> attrInts(const std::string& name) const;
  double attrFloat(const std::string& name) const;
  bool attrBool(const std::string& name) const;
  std::string attrStr(const std::string& name) const;
  DType attrDType(const std::string& name) const;
  bool hasAttr(const std::string& name) const { return attrs.contains(name) && !attrs[name].is_null(); }
};

/// Raised by a shape rule when the node's inputs and attributes violate the op's constraints.
class ShapeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws ShapeError with `message` unless `condition` holds.
void require(bool condition, const std::string& message);
/// Wraps a possibly negative dim into [0, rank); ShapeError when out of range.
int wrapDim(int64_t dim, int rank);
/// The broadcast of two shapes; ShapeError when they do not broadcast.
std::vector<int64_t> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

/// One catalog entry.
struct OpSpec {
  std::string name;    // catalog key, e.g. "conv2d"
  std::string family;  // e.g. "conv", "elementwise-unary"
  /// forward spelling: an expression with {0} {1} (inputs), {*} (all inputs), {name} (attribute as
  /// a Python literal), {?name} (", name=<value>" unless null), {self} (the module attribute), or
  /// statements starting with "stmt:" that assign {out0}, {out1}, ...
  std::string python;
  /// For nn.Module layers: the constructor expression stored as {self} in __init__ ("" otherwise);
  /// "buffer:<expr>" registers the tensor <expr> as a buffer instead.
  std::string init;
  /// The dispatcher call with the same shape semantics: "aten::name.overload(args)" with {0}, {*},
  /// {name}, {p:param} (a layer's parameter tensor, or None) and JSON literals.
  std::string aten;
  int minInputs = 1, maxInputs = 1;
  /// dtypes accepted per input position (the last entry covers further inputs).
  std::vector<DTypeSet> accepts{kFloats};
  int minRank = 0, maxRank = 8;  // rank range of input 0
  std::vector<AttrSpec> attrs;
  /// Value domain each input must lie in (the last entry covers further inputs; empty: anything).
  std::vector<Interval> needs;
  /// Overrides `needs` where the domain depends on shapes or attributes (an index below a dim).
  std::function<std::optional<Interval>(const OpContext&, int k)> need;
  bool uniqueIndex = false;  // index inputs must hold distinct values (a scatter without accumulation)
  bool view = false;     // output aliases input 0
  bool inplace = false;  // mutates input 0
  bool random = false;   // draws from the RNG (run under fallback_random)
  bool denseInput = false;  // eager refuses input 0 in some strided layouts (a .view inside, a memory-format check)
  bool tupleResult = false;  // the Python spelling returns a sequence even for one output (split)
  /// An op that is no view whose output eager may lay out other than row-major even for contiguous
  /// inputs (rot90's flip of a transpose, einsum's permuted bmm, linalg's column-major results).
  bool stridedOutput = false;

  /// Fills ctx.attrs for the chosen inputs (at least input 0 is set). Default: draws each
  /// attribute from its domain.
  std::function<void(OpContext&, Rng&)> sample;
  /// The type input `k` (k >= 1) should have, given input 0 and the attributes; used to create
  /// fresh operands and as the target when coercing an existing one. Unset: input 0's type.
  std::function<TensorType(const OpContext&, int k, Rng&)> propose;
  /// The shape rule: output types, or ShapeError naming the violated constraint.
  std::function<std::vector<TensorType>(const OpContext&)> infer;
  /// Integer constraints over attributes and input dims, solved with Z3 when infer fails.
  std::optional<IntConstraintSet> constraints;
  /// Types of a layer's parameters (name, type), for the ATen cross-check; empty for functional ops.
  std::function<std::vector<std::pair<std::string, TensorType>>(const OpContext&)> params;
  /// A view op's stride rule (generators/ops/shape/ViewStrides.cpp): the geometry of each output given
  /// input 0's and the output types, exactly as eager reports it; nullopt where the op cannot view
  /// this input (`view` raises, reshape and flatten copy into a fresh row-major tensor).
  std::function<std::optional<std::vector<Geometry>>(const OpContext&, const Geometry& in0,
                                                     const std::vector<TensorType>& outs)>
      strides;
  /// The value range of each output, given the input ranges. Unset: the range of input 0.
  std::function<std::vector<Interval>(const OpContext&)> range;
};

/// One argument of a parsed ATen spelling.
struct AtenArg {
  enum Kind { Input, AllInputs, Param, Attr, Literal } kind = Literal;
  int input = 0;
  std::string name;
  nlohmann::json literal;
};
/// A parsed OpSpec::aten.
struct AtenCall {
  std::string op;        // "aten::conv2d"
  std::string overload;  // "" for the default overload
  std::vector<AtenArg> args;
};
/// Parses an ATen spelling (std::invalid_argument when malformed).
AtenCall parseAtenCall(const std::string& spelling);

/// The set of ops generation draws from. Built once by makeDefaultCatalog and passed around.
class OpCatalog {
 public:
  /// Adds an entry (std::invalid_argument on a duplicate name or a missing shape rule).
  OpSpec& add(OpSpec spec);
  const OpSpec* find(const std::string& name) const;
  /// An entry to complete after its family registered it (std::out_of_range when absent).
  OpSpec& edit(const std::string& name);
  const OpSpec& at(const std::string& name) const;
  const std::vector<std::unique_ptr<OpSpec>>& ops() const { return ops_; }
  size_t size() const { return ops_.size(); }

 private:
  std::vector<std::unique_ptr<OpSpec>> ops_;
  std::map<std::string, const OpSpec*> byName_;
};

/// The full catalog (all families in generators/ops/).
OpCatalog makeDefaultCatalog();

// Family registration, one per file in generators/ops/.
void addElementwiseOps(OpCatalog& catalog);
void addReductionOps(OpCatalog& catalog);
void addShapeOps(OpCatalog& catalog);
void addNeuralOps(OpCatalog& catalog);
void addIndexingOps(OpCatalog& catalog);
void addInplaceViewOps(OpCatalog& catalog);
void addBufferUpdateOps(OpCatalog& catalog);
void addComplexOps(OpCatalog& catalog);
void addBackwardOps(OpCatalog& catalog);
/// Sets the stride rule of every view op (std::logic_error when a view op lacks one).
void addViewStrideRules(OpCatalog& catalog);

/// Runs the op's sampler (or the default one) on ctx.
void sampleAttrs(const OpSpec& op, OpContext& ctx, Rng& rng);
/// Runs the shape rule; ShapeError (never another exception) when the node is invalid.
std::vector<TensorType> inferTypes(const OpSpec& op, const OpContext& ctx);
/// Output ranges (default: input 0's range for each output).
std::vector<Interval> inferRanges(const OpSpec& op, const OpContext& ctx, size_t outputs);
/// The value domain input `k` must lie in (nullopt: anything).
std::optional<Interval> inputNeed(const OpSpec& op, const OpContext& ctx, int k);
/// Checks ctx.attrs against the op's attribute domains; returns the first problem or "".
std::string checkAttrs(const OpSpec& op, const OpContext& ctx);

}  // namespace tcfuzz::gen
