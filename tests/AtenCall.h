#pragma once
// Calling a catalog op's ATen spelling through the dispatcher, for the tests that hold the catalog's
// rules against ATen (test_OpCatalog: shapes, dtypes and value domains; test_Strides: strides).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "generators/NodeSampler.h"
#include "generators/OpCatalog.h"

namespace tcfuzz::atencall {

using namespace tcfuzz::gen;
using nlohmann::json;

/// A seed fixed per op (FNV-1a of the name), so a failure replays.
inline uint64_t seedFor(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

inline c10::ScalarType scalarType(DType d) {
  constexpr c10::ScalarType kByDType[kDTypeCount] = {c10::kFloat, c10::kHalf, c10::kBFloat16, c10::kDouble,
                                                     c10::kLong,  c10::kInt,  c10::kBool,     c10::kComplexFloat, c10::kComplexDouble};
  return kByDType[static_cast<int>(d)];
}

inline std::string describe(const at::Tensor& t) {
  return fmt::format("[{}] {}", fmt::join(t.sizes(), ", "), c10::toString(t.scalar_type()));
}

/// Where the tensors of one call live: empty meta tensors, or real CPU tensors with values.
enum class Mode { Meta, Cpu };

/// A tensor of `type` for `mode`; on CPU its values lie in `range` (distinct when `unique`).
inline at::Tensor makeTensor(const TensorType& type, Interval range, Mode mode, bool unique) {
  auto options = at::TensorOptions().dtype(scalarType(type.dtype));
  if (mode == Mode::Meta) return at::empty(type.shape, options.device(c10::kMeta));
  if (type.dtype == DType::Bool) {
    if (range.lo > 0) return at::ones(type.shape, options);
    if (range.hi < 1) return at::zeros(type.shape, options);
    return at::randint(0, 2, type.shape, at::TensorOptions().dtype(c10::kLong)).to(c10::kBool);
  }
  if (isInt(type.dtype)) {
    auto lo = static_cast<int64_t>(std::ceil(range.lo)), hi = static_cast<int64_t>(std::floor(range.hi));
    if (hi < lo) hi = lo;
    int64_t numel = type.numel();
    if (unique && hi - lo + 1 >= numel)
      return (at::randperm(hi - lo + 1, at::TensorOptions().dtype(c10::kLong)).slice(0, 0, numel) + lo)
          .reshape(type.shape)
          .to(options.dtype());
    return at::randint(lo, hi + 1, type.shape, at::TensorOptions().dtype(c10::kLong)).to(options.dtype());
  }
  auto u = at::rand(type.shape, at::TensorOptions().dtype(c10::kDouble));
  if (isComplex(type.dtype)) {  // both parts in range
    auto v = at::rand(type.shape, at::TensorOptions().dtype(c10::kDouble));
    return at::complex(u * (range.hi - range.lo) + range.lo, v * (range.hi - range.lo) + range.lo).to(options.dtype());
  }
  return (u * (range.hi - range.lo) + range.lo).to(options.dtype());
}

/// Thrown for a spelling or attribute that cannot be turned into the schema's argument.
struct SpellingError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A JSON attribute or literal as the IValue the schema argument of type `type` (`real` is the
/// declared type: ScalarType where `type` says int) expects.
inline c10::IValue toIValue(const json& v, const c10::TypePtr& type, const c10::TypePtr& real, std::optional<int32_t> n) {
  using K = c10::TypeKind;
  auto fail = [&](const char* what) {
    return SpellingError(fmt::format("cannot pass {} as {} ({})", v.dump(), real->str(), what));
  };
  switch (type->kind()) {
    case K::OptionalType: {
      if (v.is_null()) return c10::IValue();
      auto elem = type->expectRef<c10::OptionalType>().getElementType();
      auto realElem = real->kind() == K::OptionalType ? real->expectRef<c10::OptionalType>().getElementType() : elem;
      return toIValue(v, elem, realElem, n);
    }
    case K::IntType:
    case K::SymIntType:
      if (real->kind() == K::ScalarTypeType && v.is_string()) {
        auto d = parseDType(v.get<std::string>());
        if (!d) throw fail("unknown dtype");
        return c10::IValue(scalarType(*d));
      }
      if (v.is_number_integer()) return c10::IValue(v.get<int64_t>());
      if (v.is_boolean()) return c10::IValue(static_cast<int64_t>(v.get<bool>()));
      throw fail("not an integer");
    case K::FloatType:
    case K::SymFloatType:
      if (v.is_number()) return c10::IValue(v.get<double>());
      throw fail("not a number");
    case K::BoolType:
    case K::SymBoolType:
      if (v.is_boolean()) return c10::IValue(v.get<bool>());
      if (v.is_number_integer()) return c10::IValue(v.get<int64_t>() != 0);
      throw fail("not a boolean");
    case K::StringType:
      if (v.is_string()) return c10::IValue(v.get<std::string>());
      throw fail("not a string");
    case K::NumberType:
      if (v.is_boolean()) return c10::IValue(v.get<bool>());
      if (v.is_number_integer()) return c10::IValue(v.get<int64_t>());
      if (v.is_number()) return c10::IValue(v.get<double>());
      throw fail("not a scalar");
    case K::DeviceObjType:
      if (v.is_string()) return c10::IValue(c10::Device(v.get<std::string>()));
      throw fail("not a device");
    case K::ListType: {
      auto elem = type->expectRef<c10::ListType>().getElementType();
      json items = v;
      if (!v.is_array()) items = json::array();
      if (!v.is_array()) {
        if (v.is_null()) throw fail("None for a list");
        for (int i = 0; i < n.value_or(1); ++i) items.push_back(v);  // int for int[2]: repeated
      }
      // The items as a c10::List<T>, each accepted by `is` (else `what`).
      auto list = [&]<class T>(bool (json::*is)() const noexcept, const char* what) {
        c10::List<T> out;
        for (const auto& e : items) {
          if (!(e.*is)()) throw fail(what);
          out.push_back(e.get<T>());
        }
        return c10::IValue(out);
      };
      switch (elem->kind()) {
        case K::IntType:
        case K::SymIntType: return list.operator()<int64_t>(&json::is_number_integer, "not a list of integers");
        case K::FloatType: return list.operator()<double>(&json::is_number, "not a list of numbers");
        case K::BoolType: return list.operator()<bool>(&json::is_boolean, "not a list of booleans");
        default: throw fail("unsupported list element type");
      }
    }
    default:
      if (v.is_null()) return c10::IValue();
      throw fail("unsupported argument type");
  }
}

/// A list of tensors as the schema's Tensor[] or Tensor?[] argument.
inline c10::IValue tensorList(const std::vector<at::Tensor>& tensors, const c10::TypePtr& type) {
  auto elem = type->expectRef<c10::ListType>().getElementType();
  if (elem->kind() == c10::TypeKind::OptionalType) {
    c10::List<std::optional<at::Tensor>> out;
    for (const auto& t : tensors) out.push_back(t);
    return c10::IValue(out);
  }
  return c10::IValue(c10::List<at::Tensor>(tensors));
}

inline bool expectsTensorList(const c10::TypePtr& type) {
  if (type->kind() != c10::TypeKind::ListType) return false;
  auto elem = type->expectRef<c10::ListType>().getElementType();
  if (elem->kind() == c10::TypeKind::OptionalType) elem = elem->expectRef<c10::OptionalType>().getElementType();
  return elem->kind() == c10::TypeKind::TensorType;
}

/// An op's parsed ATen spelling and its dispatcher handle (unset, with `error`, when it does not resolve).
struct ResolvedAten {
  AtenCall call;
  std::optional<c10::OperatorHandle> handle;
  std::string error;
};
inline ResolvedAten resolveAten(const OpSpec& op) {
  ResolvedAten r;
  try {
    r.call = parseAtenCall(op.aten);
    r.handle = c10::Dispatcher::singleton().findSchemaOrThrow(r.call.op.c_str(), r.call.overload.c_str());
  } catch (const c10::Error& e) {
    r.error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

/// The argument stack of `call` for one node (inputs and parameters as tensors of `mode`; the
/// leading inputs are `given` where it holds them).
inline torch::jit::Stack buildStack(const OpSpec& op, const AtenCall& call, const c10::FunctionSchema& schema,
                                    const SampledNode& node, Mode mode, const std::vector<at::Tensor>& given = {}) {
  const auto& args = schema.arguments();
  if (call.args.size() > args.size())
    throw SpellingError(fmt::format("spelling has {} arguments, schema {} has {}", call.args.size(), schema.name(),
                                    args.size()));
  std::vector<at::Tensor> inputs;
  for (size_t k = 0; k < node.inputs.size(); ++k)
    inputs.push_back(k < given.size() ? given[k] : makeTensor(node.inputs[k], node.ranges[k], mode, op.uniqueIndex && isInt(node.inputs[k].dtype)));
  std::map<std::string, at::Tensor> params;
  if (op.params)
    for (const auto& [name, type] : op.params(node.context())) params[name] = makeTensor(type, {0.1, 1}, mode, false);
  torch::jit::Stack stack;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& schemaArg = args[i];
    const auto& type = schemaArg.type();
    if (i >= call.args.size()) {
      if (!schemaArg.default_value())
        throw SpellingError(fmt::format("spelling lacks required argument '{}' of {}", schemaArg.name(), schema.name()));
      stack.push_back(*schemaArg.default_value());
      continue;
    }
    const AtenArg& a = call.args[i];
    switch (a.kind) {
      case AtenArg::Input: {
        if (a.input >= static_cast<int>(inputs.size()))
          throw SpellingError(fmt::format("spelling reads input {} of a {}-input node", a.input, inputs.size()));
        if (expectsTensorList(type))
          stack.push_back(tensorList({inputs[a.input]}, type));
        else
          stack.push_back(inputs[a.input]);
        break;
      }
      case AtenArg::AllInputs:
        if (!expectsTensorList(type)) throw SpellingError("{*} passed where " + type->str() + " is expected");
        stack.push_back(tensorList(inputs, type));
        break;
      case AtenArg::Param: {
        auto it = params.find(a.name);
        if (it == params.end())
          stack.push_back(c10::IValue());
        else
          stack.push_back(it->second);
        break;
      }
      case AtenArg::Attr: {
        json v = node.attrs.contains(a.name) ? node.attrs[a.name] : json();
        stack.push_back(toIValue(v, type, schemaArg.real_type(), schemaArg.N()));
        break;
      }
      case AtenArg::Literal: stack.push_back(toIValue(a.literal, type, schemaArg.real_type(), schemaArg.N())); break;
    }
  }
  return stack;
}

/// The tensors an op returned, TensorList returns flattened, None skipped.
inline std::vector<at::Tensor> returnedTensors(const torch::jit::Stack& stack) {
  std::vector<at::Tensor> out;
  for (const auto& v : stack) {
    if (v.isTensor()) out.push_back(v.toTensor());
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
  }
  return out;
}

}  // namespace tcfuzz::atencall
