// Complex dtypes (family "complex"): complex64 and complex128 values enter a program as
// inputs (real and imaginary parts drawn apart), through torch.view_as_complex, torch.complex,
// torch.polar and the FFTs of real values, flow through arithmetic, FFTs and the shape family's
// views, and leave through view_as_real, .real, .imag, abs and irfft (an output may stay complex:
// the worker compares complex leaves as real pairs). A complex value's Interval bounds its real and
// its imaginary part alike. Ops that take real values never take complex ones: the real families
// accept kAllDTypes, which holds no complex dtype.
#include <cmath>

#include "generators/ops/Common.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;

const DTypeSet kComplexSources = only(DType::Float32) | only(DType::Float64);

/// The bound on either part of a complex value whose parts lie in `r`, as a magnitude.
double partBound(Interval r) { return r.magnitude(); }

/// An op on complex values of input 0's dtype and shape (binary ops: input 1 has input 0's type).
OpSpec complexOp(std::string name, std::string python, std::string aten, int inputs = 1) {
  OpSpec s = entry(std::move(name), "complex", std::move(python), std::move(aten), kComplex);
  s.minInputs = s.maxInputs = inputs;
  s.accepts = std::vector<DTypeSet>(static_cast<size_t>(inputs), kComplex);
  s.infer = [](const OpContext& ctx) {
    for (size_t k = 1; k < ctx.in.size(); ++k) {
      require(ctx.x(static_cast<int>(k)).dtype == ctx.x().dtype, "complex operands must share a dtype");
      require(ctx.x(static_cast<int>(k)).shape == ctx.x().shape, "complex operands must share a shape");
    }
    return like(ctx.x(), ctx.x().dtype);
  };
  return s;
}

/// The last dim's size (1 for a 0-d tensor).
int64_t lastDim(const TensorType& t) { return t.rank() == 0 ? 1 : t.shape.back(); }

void addEntries(OpCatalog& c) {
  {
    // A real [..., 2] tensor read as complex pairs. View_as_complex needs the last dim dense and every
    // other stride and the storage offset even: a contiguous copy has them.
    OpSpec s = entry("view_as_complex", "complex", "torch.view_as_complex({0}.clone(memory_format=torch.contiguous_format))",
                     "aten::view_as_complex({0})", kComplexSources);
    s.minRank = 1;
    s.infer = [](const OpContext& ctx) {
      require(ctx.x().rank() >= 1 && ctx.x().shape.back() == 2, "view_as_complex needs a last dim of size 2");
      TensorType t = ctx.x();
      t.shape.pop_back();
      t.dtype = complexOf(ctx.x().dtype);
      return std::vector<TensorType>{t};
    };
    c.add(std::move(s));
  }
  {
    OpSpec s = entry("view_as_real", "complex", "torch.view_as_real({0})", "aten::view_as_real({0})", kComplex);
    s.view = true;
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      t.shape.push_back(2);
      t.dtype = realOf(ctx.x().dtype);
      return std::vector<TensorType>{t};
    };
    c.add(std::move(s));
  }
  for (auto [name, python, aten] : {std::tuple{"complex_real", "{0}.real", "aten::real({0})"},
                                    std::tuple{"complex_imag", "{0}.imag", "aten::imag({0})"}}) {
    OpSpec s = entry(name, "complex", python, aten, kComplex);
    s.view = true;
    s.infer = [](const OpContext& ctx) { return like(ctx.x(), realOf(ctx.x().dtype)); };
    c.add(std::move(s));
  }
  {
    OpSpec s = entry("complex_abs", "complex", "torch.abs({0})", "aten::abs({0})", kComplex);
    s.infer = [](const OpContext& ctx) { return like(ctx.x(), realOf(ctx.x().dtype)); };
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{{0, std::sqrt(2.0) * partBound(ctx.ranges[0])}}; };
    c.add(std::move(s));
  }
  {
    OpSpec s = entry("complex_from_parts", "complex", "torch.complex({0}, {1})", "aten::complex({0}, {1})", kComplexSources);
    s.minInputs = s.maxInputs = 2;
    s.accepts = {kComplexSources, kComplexSources};
    s.infer = [](const OpContext& ctx) {
      require(ctx.x(1).dtype == ctx.x().dtype, "torch.complex takes two tensors of one dtype");
      require(ctx.x(1).shape == ctx.x().shape, "the real and imaginary parts must share a shape");
      return like(ctx.x(), complexOf(ctx.x().dtype));
    };
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{unionI(ctx.ranges[0], ctx.ranges[1])}; };
    c.add(std::move(s));
  }
  {
    // abs * (cos(angle) + i sin(angle)); torch.polar needs abs >= 0.
    OpSpec s = entry("polar", "complex", "torch.polar({0}, {1})", "aten::polar({0}, {1})", kComplexSources);
    s.minInputs = s.maxInputs = 2;
    s.accepts = {kComplexSources, kComplexSources};
    s.needs = {Interval{0, 1e6}, kAnything};
    s.infer = [](const OpContext& ctx) {
      require(ctx.x(1).dtype == ctx.x().dtype, "torch.polar takes two tensors of one dtype");
      require(ctx.x(1).shape == ctx.x().shape, "abs and angle must share a shape");
      return like(ctx.x(), complexOf(ctx.x().dtype));
    };
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{symmetric(ctx.ranges[0].magnitude())}; };
    c.add(std::move(s));
  }
  for (auto [name, python, aten] : {std::tuple{"complex_add", "{0} + {1}", "aten::add.Tensor({0}, {1})"},
                                    std::tuple{"complex_sub", "{0} - {1}", "aten::sub.Tensor({0}, {1})"}}) {
    OpSpec s = complexOp(name, python, aten, 2);
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{symmetric(partBound(ctx.ranges[0]) + partBound(ctx.ranges[1]))}; };
    c.add(std::move(s));
  }
  {
    OpSpec s = complexOp("complex_mul", "{0} * {1}", "aten::mul.Tensor({0}, {1})", 2);
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{symmetric(2 * partBound(ctx.ranges[0]) * partBound(ctx.ranges[1]))}; };
    c.add(std::move(s));
  }
  {
    // A Python complex constant in the graph: compiled code must carry both of its parts.
    OpSpec s = complexOp("complex_scale", "{0} * complex({re}, {im})", "aten::mul.Tensor({0}, {0})");
    s.attrs = {floatAttr("re", -2, 2), floatAttr("im", -2, 2)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      ctx.attrs["re"] = rng.pick(std::vector<double>{0.5, -1.0, 0.0, 1.5});
      ctx.attrs["im"] = rng.pick(std::vector<double>{1.0, -0.5, 2.0, 0.25});
    };
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{symmetric(4 * partBound(ctx.ranges[0]))}; };
    c.add(std::move(s));
  }
  {
    OpSpec s = complexOp("conj_physical", "torch.conj_physical({0})", "aten::conj_physical({0})");
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{symmetric(partBound(ctx.ranges[0]))}; };
    c.add(std::move(s));
  }
  {
    // |exp(z)| = exp(Re z): the real part is kept small so the parts stay finite.
    OpSpec s = complexOp("complex_exp", "torch.exp({0})", "aten::exp({0})");
    s.needs = {Interval{-8, 8}};
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{symmetric(std::exp(std::min(ctx.ranges[0].hi, 8.0)))}; };
    c.add(std::move(s));
  }
  {
    OpSpec s = complexOp("complex_sum", "torch.sum({0}, {dim}, keepdim={keepdim})",
                         "aten::sum.dim_IntList({0}, {dim}, {keepdim}, None)");
    s.minRank = 1;
    s.attrs = {intListAttr("dim", -8, 7), boolAttr("keepdim")};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = std::vector<int64_t>{drawDim(rng, ctx.x().rank())}; };
    auto summedDim = [](const OpContext& ctx) {
      auto dims = ctx.attrInts("dim");
      require(dims.size() == 1, "complex_sum sums one dim");
      return wrapDim(dims[0], ctx.x().rank());
    };
    s.infer = [summedDim](const OpContext& ctx) {
      int d = summedDim(ctx);
      TensorType t = ctx.x();
      if (ctx.attrBool("keepdim")) t.shape[d] = 1;
      else t.shape.erase(t.shape.begin() + d);
      return std::vector<TensorType>{t};
    };
    s.range = [summedDim](const OpContext& ctx) {
      int d = summedDim(ctx);
      return std::vector<Interval>{symmetric(partBound(ctx.ranges[0]) * static_cast<double>(std::max<int64_t>(ctx.x().shape[d], 1)))};
    };
    c.add(std::move(s));
  }
  {
    OpSpec s = complexOp("complex_matmul", "torch.matmul({0}, {1})", "aten::matmul({0}, {1})", 2);
    s.minRank = s.maxRank = 2;
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      return TensorType{{ctx.x().shape[1], rng.uniform(1, 6)}, ctx.x().dtype, ctx.x().device};
    };
    s.infer = [](const OpContext& ctx) {
      require(ctx.x(1).rank() == 2 && ctx.x().rank() == 2, "complex_matmul multiplies two matrices");
      require(ctx.x(1).dtype == ctx.x().dtype, "complex operands must share a dtype");
      require(ctx.x(1).shape[0] == ctx.x().shape[1], "the inner dims must agree");
      return std::vector<TensorType>{TensorType{{ctx.x().shape[0], ctx.x(1).shape[1]}, ctx.x().dtype, ctx.x().device}};
    };
    s.range = [](const OpContext& ctx) {
      double k = static_cast<double>(std::max<int64_t>(ctx.x().shape[1], 1));
      return std::vector<Interval>{symmetric(2 * k * partBound(ctx.ranges[0]) * partBound(ctx.ranges[1]))};
    };
    c.add(std::move(s));
  }
}

/// The FFTs along the last dim, norm drawn from torch's three: rfft (real n -> complex n/2+1), fft and
/// ifft (complex n -> complex n), irfft (complex m -> real 2(m-1), the DC and Nyquist imaginary parts
/// ignored, as torch defines it).
void addFfts(OpCatalog& c) {
  const std::vector<std::string> norms{"backward", "ortho", "forward"};
  auto fftOp = [&](std::string name, std::string fn, DTypeSet accepts) {
    OpSpec s = entry(std::move(name), "complex", "torch.fft." + fn + "({0}, dim=-1, norm={norm})",
                     "aten::fft_" + fn + "({0}, None, -1, {norm})", accepts);
    s.minRank = 1;
    s.attrs = {choiceAttr("norm", norms)};
    return s;
  };
  // |each part of an output| <= (sum of |parts| of the inputs) * scale, scale 1, 1/sqrt(n) or 1/n.
  auto bound = [](const OpContext& ctx, double n, double parts) {
    std::string norm = ctx.attrStr("norm");
    double scale = norm == "backward" ? 1.0 : norm == "ortho" ? 1 / std::sqrt(n) : 1 / n;
    return symmetric(parts * n * ctx.ranges[0].magnitude() * scale);
  };
  {
    OpSpec s = fftOp("fft_rfft", "rfft", kComplexSources);
    s.infer = [](const OpContext& ctx) {
      require(ctx.x().rank() >= 1 && lastDim(ctx.x()) >= 1, "rfft needs a non-empty last dim");
      TensorType t = ctx.x();
      t.shape.back() = t.shape.back() / 2 + 1;
      t.dtype = complexOf(ctx.x().dtype);
      return std::vector<TensorType>{t};
    };
    s.range = [bound](const OpContext& ctx) {
      return std::vector<Interval>{bound(ctx, static_cast<double>(lastDim(ctx.x())), 1)};
    };
    c.add(std::move(s));
  }
  for (auto [name, fn] : {std::pair{"fft_fft", "fft"}, std::pair{"fft_ifft", "ifft"}}) {
    OpSpec s = fftOp(name, fn, kComplex);
    bool inverse = std::string(fn) == "ifft";
    s.infer = [](const OpContext& ctx) {
      require(ctx.x().rank() >= 1 && lastDim(ctx.x()) >= 1, "fft needs a non-empty last dim");
      return like(ctx.x(), ctx.x().dtype);
    };
    s.range = [bound, inverse](const OpContext& ctx) {
      double n = static_cast<double>(lastDim(ctx.x()));
      Interval r = bound(ctx, n, 2);
      if (inverse) {  // ifft's "backward" scales by 1/n, its "forward" by 1
        std::string norm = ctx.attrStr("norm");
        double scale = norm == "backward" ? 1 / n : norm == "ortho" ? 1 / std::sqrt(n) : 1.0;
        r = symmetric(2 * n * ctx.ranges[0].magnitude() * scale);
      }
      return std::vector<Interval>{r};
    };
    c.add(std::move(s));
  }
  {
    OpSpec s = fftOp("fft_irfft", "irfft", kComplex);
    s.infer = [](const OpContext& ctx) {
      require(ctx.x().rank() >= 1 && lastDim(ctx.x()) >= 2, "irfft needs a last dim of at least 2");
      TensorType t = ctx.x();
      t.shape.back() = 2 * (t.shape.back() - 1);
      t.dtype = realOf(ctx.x().dtype);
      return std::vector<TensorType>{t};
    };
    s.range = [](const OpContext& ctx) {
      double m = static_cast<double>(lastDim(ctx.x())), n = 2 * (m - 1);
      std::string norm = ctx.attrStr("norm");
      double scale = norm == "backward" ? 1 / n : norm == "ortho" ? 1 / std::sqrt(n) : 1.0;
      return std::vector<Interval>{symmetric(2 * 2 * m * ctx.ranges[0].magnitude() * scale)};
    };
    c.add(std::move(s));
  }
}

}  // namespace

void addComplexOps(OpCatalog& c) {
  addEntries(c);
  addFfts(c);
}

}  // namespace tcfuzz::gen
