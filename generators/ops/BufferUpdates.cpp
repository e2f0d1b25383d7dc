// Module buffers written in forward (family "buffer-update"): a buffer registered in
// __init__ with input 0's shape and dtype, updated in place from input 0 the way running statistics
// are (`self.buf.lerp_(x.detach(), 0.1)`, `self.buf += x.detach()`), then read by the output. The
// oracle's state leaves compare the buffer after forward; the update reads x detached, so no grad
// flows into module state. The ATen spelling is a shape proxy (the output has input 0's type).
// Family "param-data" does the same to an nn.Parameter through `.data` and `.detach()`, which
// bypass autograd: eager defines the result (the write lands before the read, and nothing saved
// for backward is overwritten), and the parameter's gradient is taken at its new value.
#include "generators/ops/Common.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;

/// The buffer's initial values, in [-1, 1].
const Interval kBufferInit{-1, 1};

/// `parameter`: an nn.Parameter written through .data or .detach(), else a registered buffer.
OpSpec bufferOp(std::string name, std::string python, bool parameter = false) {
  OpSpec s = entry(std::move(name), parameter ? "param-data" : "buffer-update", std::move(python),
                   "aten::mul.Tensor({0}, {p:buffer})", kFloats);
  // "buffer:" makes the emitter register the expression as a buffer named after {self}.
  s.init = parameter ? "nn.Parameter((torch.rand({shape}) * 2 - 1).to({dtype}))" : "buffer:(torch.rand({shape}) * 2 - 1).to({dtype})";
  s.attrs = {intListAttr("shape", 0, 64), dtypeAttr("dtype", {"float32", "float16", "bfloat16", "float64"})};
  auto sampleShape = [](OpContext& ctx) {
    ctx.attrs["shape"] = ctx.x().shape;
    ctx.attrs["dtype"] = std::string(dtypeName(ctx.x().dtype));
  };
  s.sample = [sampleShape](OpContext& ctx, Rng&) { sampleShape(ctx); };
  s.infer = [](const OpContext& ctx) {
    require(ctx.attrInts("shape") == ctx.x().shape, "the buffer must have input 0's shape");
    require(ctx.attrDType("dtype") == ctx.x().dtype, "the buffer must have input 0's dtype");
    return like(ctx.x(), ctx.x().dtype);
  };
  s.params = [](const OpContext& ctx) { return std::vector<std::pair<std::string, TensorType>>{{"buffer", ctx.x()}}; };
  return s;
}

}  // namespace

void addBufferUpdateOps(OpCatalog& c) {
  {
    // A running average (BatchNorm's running_mean): the buffer moves toward x by `weight`.
    OpSpec s = bufferOp("buffer_lerp_", "stmt:{self}.lerp_({0}.detach(), {weight})\n{out0} = {0} + {self}");
    s.attrs.push_back(floatAttr("weight", 0.01, 1.0));
    auto shapeSample = s.sample;
    s.sample = [shapeSample](OpContext& ctx, Rng& rng) {
      shapeSample(ctx, rng);
      ctx.attrs["weight"] = rng.pick(std::vector<double>{0.1, 0.01, 0.5, 0.9});
    };
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{addI(ctx.ranges[0], unionI(kBufferInit, ctx.ranges[0]))}; };
    c.add(std::move(s));
  }
  {
    // `self.buf += x`: an accumulator.
    OpSpec s = bufferOp("buffer_add_", "stmt:{self}.add_({0}.detach())\n{out0} = {0} * {self}");
    s.range = [](const OpContext& ctx) {
      return std::vector<Interval>{mulI(ctx.ranges[0], addI(kBufferInit, ctx.ranges[0]))};
    };
    c.add(std::move(s));
  }
  {
    // `self.w.data.add_(x)`: a parameter moved outside autograd (a hand-written optimizer step).
    OpSpec s = bufferOp("param_data_add_", "stmt:{self}.data.add_({0}.detach(), alpha={alpha})\n{out0} = {0} * {self}", true);
    s.attrs.push_back(floatAttr("alpha", -1.0, 1.0));
    auto shapeSample = s.sample;
    s.sample = [shapeSample](OpContext& ctx, Rng& rng) {
      shapeSample(ctx, rng);
      ctx.attrs["alpha"] = rng.pick(std::vector<double>{0.1, -0.5, 1.0, 0.01});
    };
    s.range = [](const OpContext& ctx) {
      Interval step = mulI(ctx.ranges[0], Interval{-4, 4});  // up to 4 calls of |alpha| <= 1
      return std::vector<Interval>{mulI(ctx.ranges[0], addI(kBufferInit, step))};
    };
    c.add(std::move(s));
  }
  {
    // `self.w.detach().lerp_(x, 0.5)`: the detached alias shares the parameter's storage.
    OpSpec s = bufferOp("param_detach_lerp_", "stmt:{self}.detach().lerp_({0}.detach(), 0.5)\n{out0} = {0} + {self}", true);
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{addI(ctx.ranges[0], unionI(kBufferInit, ctx.ranges[0]))}; };
    c.add(std::move(s));
  }
}

}  // namespace tcfuzz::gen
