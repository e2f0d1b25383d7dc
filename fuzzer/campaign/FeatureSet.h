#pragma once
// Novelty feedback (docs/architecture.md, "Data flow": novelty/feedback): the features of one run are its ops x
// dtypes, its compile configuration and the compile facts the worker reported; a program that
// adds a feature the campaign has not seen joins the queue.
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "fuzzer/campaign/CompileMatrix.h"
#include "fuzzer/worker/ProgramTester.h"
#include "generators/ir/Graph.h"

namespace tcfuzz {

/// AFL's hit-count buckets: 0, 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+ (as the bucket's low end).
int64_t countBucket(double count);

/// Longest feature string runFeatures makes from a compile fact (longer ones are cut).
inline constexpr size_t kMaxFeatureChars = 120;

/// The features of one tested program, sorted and unique: its ops x input dtypes ("op:add(float16,float32)"),
/// its compile configuration ("cfg:backend=inductor", "cfg:tpl=cpp_wrapper"), the compiled run's compile facts
/// as counts in countBucket's buckets ("fact:graphs=2", "fact:breaks=1", "fact:inductor.pattern_matcher_count=4",
/// "fact:metric.generated_kernel_count=4", "fact:aot.ok=1", "fact:dynamo.frames.total=1", "fact:recompiles=1",
/// "fact:kernel=reduction=2", "fact:fusion=pointwise+reduction=1") and as names, what Inductor did
/// ("fact:post_grad_op=aten.mm.default:float32", "fact:lowering=aten.relu.default",
/// "fact:fallback=aten.cumsum.default", "fact:pattern=addmm", "fact:extern=extern_kernels.mm",
/// "fact:break=<reason>", "fact:recompile=<guard failure>"; at most kMaxFeatureChars), each run's failure
/// ("status:compiled=exception@compile") and the verdict ("verdict:numeric-divergence").
std::vector<std::string> runFeatures(const gen::Graph& program, const SampledCompile& compile,
                                     const ProgramTestResult& result);

/// Whether `feature` is one the program's graph alone decides ("op:..."), whatever its compile configuration.
bool isGraphFeature(const std::string& feature);

/// The features seen so far in a campaign. Not thread-safe.
class FeatureSet {
 public:
  /// The features of `features` not seen yet (without adding them).
  std::vector<std::string> novel(const std::vector<std::string>& features) const;
  void add(const std::vector<std::string>& features);
  size_t size() const { return seen_.size(); }

 private:
  std::unordered_set<std::string> seen_;
};

}  // namespace tcfuzz
