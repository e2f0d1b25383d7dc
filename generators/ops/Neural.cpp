// Neural-network families: linear algebra, convolutions and pooling, normalizations, losses and
// distances, random ops, and nn.Module layers with parameters.
#include "generators/ops/Common.h"

namespace tcfuzz::gen {

void addNeuralOps(OpCatalog& c) {
  using namespace ops;
  {
    // Example of an nn.Module layer: `init` builds it in __init__, `params` gives its weights' types.
    OpSpec s;
    s.name = "nn_linear";
    s.family = "layer";
    s.init = "nn.Linear({in_features}, {out_features}, bias={bias}{?dtype})";
    s.python = "{self}({0})";
    s.aten = "aten::linear({0}, {p:weight}, {p:bias})";
    s.accepts = {kFloats};
    s.minRank = 1;
    s.attrs = {intAttr("in_features", 1, 4096), intAttr("out_features", 1, 64), boolAttr("bias"),
               optional(dtypeAttr("dtype", {"float16", "bfloat16", "float64"}))};
    s.sample = [](OpContext& ctx, Rng& rng) {
      ctx.attrs["in_features"] = ctx.x().shape.back();
      ctx.attrs["out_features"] = rng.uniform(1, 16);
      ctx.attrs["dtype"] = ctx.x().dtype == DType::Float32 ? nlohmann::json() : nlohmann::json(dtypeName(ctx.x().dtype));
    };
    s.infer = [](const OpContext& ctx) {
      require(ctx.x().shape.back() == ctx.attrInt("in_features"), "Linear in_features must equal the last dim");
      DType layer = ctx.hasAttr("dtype") ? ctx.attrDType("dtype") : DType::Float32;
      require(layer == ctx.x().dtype, "Linear weights and input must share a dtype");
      TensorType t = ctx.x();
      t.shape.back() = ctx.attrInt("out_features");
      return std::vector<TensorType>{t};
    };
    s.params = [](const OpContext& ctx) {
      std::vector<std::pair<std::string, TensorType>> p;
      TensorType w{{ctx.attrInt("out_features"), ctx.attrInt("in_features")}, ctx.x().dtype};
      p.emplace_back("weight", w);
      if (ctx.attrBool("bias")) p.emplace_back("bias", TensorType{{ctx.attrInt("out_features")}, ctx.x().dtype});
      return p;
    };
    s.range = [](const OpContext& ctx) {
      // Default init draws weights and bias in +-1/sqrt(in_features).
      double in = static_cast<double>(ctx.attrInt("in_features"));
      double bound = 1 / std::sqrt(in);
      return std::vector<Interval>{symmetric(ctx.ranges[0].magnitude() * bound * in + bound)};
    };
    c.add(std::move(s));
  }
}

}  // namespace tcfuzz::gen
