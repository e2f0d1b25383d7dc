// Input layouts: each layout's geometry checked against LibTorch (sizes, contiguity,
// storage offset), the emitted make_inputs run in the real torch, the JSON form strict, and layouts
// that stop fitting after a shape change dropped; then the generator's program shape: no dead nodes,
// and at least the shares of views, in-place ops and non-contiguous inputs asserted below.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <ATen/ATen.h>
#include <unistd.h>

#include "generators/Generator.h"
#include "generators/repair/GraphRepair.h"
#include "generators/features/InputAliases.h"
#include "generators/features/InputLayout.h"
#include "generators/Mutator.h"
#include "generators/ir/ProgramFigures.h"
#include "generators/python/PythonEmitter.h"

namespace tcfuzz::gen {
namespace {

using nlohmann::json;

/// The input LibTorch builds for `layout`, the way make_inputs does: storage drawn, then viewed.
at::Tensor build(const Layout& l, const TensorType& t) {
  at::Tensor s = at::rand(storageShape(l, t));
  if (l.kind == "transposed") return s.transpose(l.dims[0], l.dims[1]);
  if (l.kind == "strided") return s.slice(l.dims[0], l.offset, c10::nullopt, l.step);
  if (l.kind == "expanded") return s.expand(t.shape);
  if (l.kind == "channels_last")
    return s.contiguous(t.rank() == 5 ? c10::MemoryFormat::ChannelsLast3d : c10::MemoryFormat::ChannelsLast);
  return s;
}

TEST(InputLayout, GeometryMatchesLibTorch) {
  Rng rng(11);
  std::map<std::string, double> weights{{"transposed", 1}, {"strided", 1}, {"expanded", 1}, {"channels_last", 1}};
  std::map<std::string, int> seen;
  for (int i = 0; i < 400; ++i) {
    TensorType t;
    int rank = static_cast<int>(rng.uniform(1, 5));
    for (int d = 0; d < rank; ++d) t.shape.push_back(rng.uniform(1, 5));
    Layout l = randomLayout(t, Distribution{}, weights, rng);
    ASSERT_EQ(layoutProblem(l, t, Distribution{}), "") << describeLayout(l);
    at::Tensor x = build(l, t);
    ++seen[l.kind];
    std::string what = fmt::format("{} of {}", describeLayout(l), t.str());
    EXPECT_EQ(x.sizes().vec(), t.shape) << what;
    EXPECT_EQ(!x.is_contiguous(), isNonContiguous(l, t)) << what;
    EXPECT_EQ(x.storage_offset() != 0, hasStorageOffset(l, t)) << what;
    // randomLayout only returns layouts that change something.
    if (!l.contiguous()) EXPECT_TRUE(isNonContiguous(l, t) || hasStorageOffset(l, t)) << what;
  }
  for (const auto& kind : layoutKinds()) EXPECT_GT(seen[kind], 20) << kind;
}

TEST(InputLayout, ProblemsAreNamed) {
  TensorType t{{2, 3}, DType::Float32};
  Distribution uniform, perm{"randperm", 0, 100};
  EXPECT_EQ(layoutProblem(Layout{"transposed", {0, 1}}, t, uniform), "");
  EXPECT_NE(layoutProblem(Layout{"transposed", {0, 2}}, t, uniform).find("out of range"), std::string::npos);
  EXPECT_NE(layoutProblem(Layout{"transposed", {1, 1}}, t, uniform).find("different dims"), std::string::npos);
  EXPECT_NE(layoutProblem(Layout{"strided", {0}, 1, 0}, t, uniform).find("contiguous"), std::string::npos);
  EXPECT_NE(layoutProblem(Layout{"strided", {0}, 9, 0}, t, uniform).find("step 9"), std::string::npos);
  EXPECT_NE(layoutProblem(Layout{"strided", {0}, 2, 0}, t, perm).find("randperm"), std::string::npos);
  EXPECT_NE(layoutProblem(Layout{"expanded", {1}}, t, perm).find("randperm"), std::string::npos);
  EXPECT_EQ(layoutProblem(Layout{"transposed", {0, 1}}, t, perm), "");  // same storage size: still distinct
  EXPECT_NE(layoutProblem(Layout{"channels_last", {}}, t, uniform).find("rank 4 or 5"), std::string::npos);
  EXPECT_NE(layoutProblem(Layout{"diagonal", {}}, t, uniform).find("unknown layout"), std::string::npos);
  EXPECT_EQ(layoutPython(Layout{"strided", {1}, 2, 1}, t), "[:, 1::2]");
  EXPECT_EQ(layoutPython(Layout{"strided", {0}, 1, 2}, t), "[2:]");
  EXPECT_EQ(storageShape(Layout{"strided", {1}, 2, 1}, t), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(layoutPython(Layout{"expanded", {0}}, t), ".expand(2, 3)");
}

Graph oneInputProgram(Layout layout, std::vector<int64_t> shape) {
  Graph g;
  int x = g.addValue({std::move(shape), DType::Float32});
  g.inputs.push_back({x, "x0", Distribution{}, std::move(layout)});
  int y = g.addValue(g.typeOf(x));
  g.nodes.push_back({"sin", {x}, {y}, json::object()});
  g.outputs = {y};
  return g;
}

TEST(InputLayout, JsonFormIsStrictAndKeepsOldHashes) {
  Graph laid = oneInputProgram(Layout{"strided", {1}, 3, 2}, {2, 4});
  Graph plain = oneInputProgram(Layout{}, {2, 4});
  json doc = laid.toJson();
  EXPECT_EQ(doc["inputs"][0]["layout"], (json{{"kind", "strided"}, {"dim", 1}, {"step", 3}, {"offset", 2}}));
  EXPECT_FALSE(plain.toJson()["inputs"][0].contains("layout"));
  Graph back = Graph::fromJson(doc);
  EXPECT_TRUE(back.inputs[0].layout == laid.inputs[0].layout);
  EXPECT_EQ(back.contentHash(), laid.contentHash());
  EXPECT_NE(laid.contentHash(), plain.contentHash());

  auto rejects = [&](json bad, const std::string& words) {
    try {
      Graph::fromJson(bad, "prog.json");
      ADD_FAILURE() << "accepted " << bad["inputs"].dump();
    } catch (const GraphFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("/inputs/0/layout"), std::string::npos) << e.what();
    }
  };
  json bad = doc;
  bad["inputs"][0]["layout"]["dim"] = 5;
  rejects(bad, "out of range");
  bad = doc;
  bad["inputs"][0]["layout"] = {{"kind", "transposed"}};
  rejects(bad, "dims");
  bad = doc;
  bad["inputs"][0]["layout"]["colour"] = "red";
  rejects(bad, "no field 'colour'");
  // Parameters have no layout.
  Graph withParam = plain;
  int p = withParam.addValue({{4}, DType::Float32});
  withParam.params.push_back({p, "p0", Distribution{}});
  withParam.nodes.push_back({"add", {withParam.nodes[0].outputs[0], p}, {withParam.addValue({{2, 4}, DType::Float32})}, {{"alpha", 1}}});
  json paramDoc = withParam.toJson();
  paramDoc["params"][0]["layout"] = {{"kind", "expanded"}, {"dim", 0}};
  EXPECT_THROW(Graph::fromJson(paramDoc), GraphFormatError);
}

TEST(BoundaryValues, ProblemsAndJsonForm) {
  TensorType f{{4}, DType::Float32}, i{{4}, DType::Int64};
  Distribution plain{"uniform", -2, 2}, narrowed{"uniform", 0.05, 2};
  BoundaryValues b{{"nonfinite", "ties"}, 0.25};
  EXPECT_EQ(boundaryProblem(b, f, plain), "");
  EXPECT_EQ(boundaryProblem(b, TensorType{{4}, DType::Complex64}, plain), "");  // parts of a complex input
  EXPECT_NE(boundaryProblem(b, i, plain).find("floating"), std::string::npos);
  EXPECT_NE(boundaryProblem(b, f, narrowed).find("value domain"), std::string::npos);
  EXPECT_NE(boundaryProblem(BoundaryValues{{"huge"}, 0.1}, f, plain).find("unknown boundary"), std::string::npos);
  EXPECT_NE(boundaryProblem(BoundaryValues{{"ties"}, 0}, f, plain).find("share"), std::string::npos);
  Graph g = oneInputProgram(Layout{}, {4});
  g.inputs[0].boundary = b;
  json doc = g.toJson();
  EXPECT_EQ(doc["inputs"][0]["boundary"], (json{{"kinds", {"nonfinite", "ties"}}, {"share", 0.25}}));
  EXPECT_TRUE(Graph::fromJson(doc).inputs[0].boundary == b);
  doc["inputs"][0]["boundary"]["kinds"] = json::array();
  EXPECT_THROW(Graph::fromJson(doc), GraphFormatError);
  // Repair narrowing the distribution (a reader needs positive values) takes the boundary values away.
  g.inputs[0].dist = narrowed;
  EXPECT_EQ(dropInvalidLayouts(g), 1);
  EXPECT_TRUE(g.inputs[0].boundary.empty());
}

// Eager refuses some ops on some layouts (take_along_dim without a dim views its input flat): an
// input such an op reads stays contiguous, in generation and after repair.
TEST(InputLayout, DenseInputOpsKeepTheirInputContiguous) {
  OpCatalog catalog = makeDefaultCatalog();
  EXPECT_TRUE(catalog.at("take_along_dim").denseInput);
  Graph g;
  int x = g.addValue({{3, 4}, DType::Float32});
  int idx = g.addValue({{3, 4}, DType::Int64});
  g.inputs.push_back({x, "x0", Distribution{}, Layout{"transposed", {0, 1}}});
  g.inputs.push_back({idx, "x1", Distribution{"randint", 0, 12}});
  int y = g.addValue({{12}, DType::Float32});
  g.nodes.push_back({"take_along_dim", {x, idx}, {y}, {{"dim", nullptr}}});
  g.outputs = {y};
  EXPECT_TRUE(readByDenseInputOp(g, catalog, x));
  EXPECT_FALSE(readByDenseInputOp(g, catalog, idx));
  Rng rng(1);
  IntSolver solver(1);
  GraphRepairer repairer(catalog, ShapeCaps{}, rng, solver);
  Graph repaired = repairer.repair(g);
  ASSERT_EQ(repaired.nodes.size(), 1u);
  EXPECT_TRUE(repaired.inputs[0].layout.contiguous());

  // Through ops that keep their input's strides (x0.clone().copy_(x2) kept x0 transposed, and
  // take_along_dim refused it): the input stays contiguous too.
  Graph through;
  int a = through.addValue({{3, 4}, DType::Float32});
  int index = through.addValue({{3, 4}, DType::Int64});
  through.inputs.push_back({a, "x0", Distribution{}, Layout{"transposed", {0, 1}}});
  through.inputs.push_back({index, "x1", Distribution{"randint", 0, 12}});
  int s = through.addValue({{3, 4}, DType::Float32});
  through.nodes.push_back({"sin", {a}, {s}, json::object()});
  int taken = through.addValue({{12}, DType::Float32});
  through.nodes.push_back({"take_along_dim", {s, index}, {taken}, {{"dim", nullptr}}});
  through.outputs = {taken};
  EXPECT_TRUE(readByDenseInputOp(through, catalog, a));
  EXPECT_TRUE(repairer.repair(through).inputs[0].layout.contiguous());
}

// A value knows its base: views chain back to the value that owns the storage. A `view` of a value
// eager may not hold contiguous becomes `reshape`; one of a provably contiguous value stays a view.
TEST(InputLayout, ViewBasesAndIllegalViewsRepairedToReshape) {
  OpCatalog catalog = makeDefaultCatalog();
  auto program = [](Layout layout, bool transposeFirst, bool contiguousFirst) {
    Graph g;
    int x = g.addValue({{3, 4}, DType::Float32});
    g.inputs.push_back({x, "x0", Distribution{}, std::move(layout)});
    int v = g.addValue({{3, 4}, DType::Float32});
    g.nodes.push_back({"sin", {x}, {v}, json::object()});
    if (transposeFirst) {
      int t = g.addValue({{4, 3}, DType::Float32});
      g.nodes.push_back({"transpose", {v}, {t}, {{"dim0", 0}, {"dim1", 1}}});
      v = t;
    }
    if (contiguousFirst) {
      int c = g.addValue(g.typeOf(v));
      g.nodes.push_back({"contiguous", {v}, {c}, json::object()});
      v = c;
    }
    int y = g.addValue({{12}, DType::Float32});
    g.nodes.push_back({"view", {v}, {y}, {{"shape", {12}}}});
    g.outputs = {y};
    return g;
  };
  Graph plain = program(Layout{}, false, false);
  EXPECT_TRUE(provablyContiguous(plain, catalog, 1));
  EXPECT_EQ(viewBaseOf(plain, catalog, 2), 1);  // the view's storage is sin's output
  EXPECT_EQ(viewBaseOf(plain, catalog, 1), 1);
  EXPECT_EQ(repairIllegalViews(plain, catalog), 0);
  EXPECT_EQ(plain.nodes.back().op, "view");

  Graph transposedInput = program(Layout{"transposed", {0, 1}}, false, false);  // sin keeps the layout
  EXPECT_FALSE(provablyContiguous(transposedInput, catalog, 1));
  EXPECT_EQ(repairIllegalViews(transposedInput, catalog), 1);
  EXPECT_EQ(transposedInput.nodes.back().op, "reshape");

  Graph transposedValue = program(Layout{}, true, false);
  EXPECT_EQ(viewBaseOf(transposedValue, catalog, 3), 1);  // view -> transpose -> sin's output
  EXPECT_EQ(repairIllegalViews(transposedValue, catalog), 1);

  Graph madeContiguous = program(Layout{}, true, true);
  EXPECT_EQ(repairIllegalViews(madeContiguous, catalog), 0);
  EXPECT_EQ(madeContiguous.nodes.back().op, "view");

  // Repair applies the rule, and eager accepts what it leaves: the emitted programs run.
  Rng rng(3);
  IntSolver solver(1);
  GraphRepairer repairer(catalog, ShapeCaps{}, rng, solver);
  EXPECT_EQ(repairer.repair(program(Layout{}, true, false)).nodes.back().op, "reshape");
  EXPECT_EQ(repairer.repair(program(Layout{}, true, true)).nodes.back().op, "view");
}

// An in-place write lands in its target only when nothing can observe it: not another reader, not a
// view's base, and not autograd, which saves the output of exp (among others) for backward.
TEST(InputLayout, InPlaceWriteIntoAnOutputSavedForBackwardGoesToAClone) {
  OpCatalog catalog = makeDefaultCatalog();
  PythonEmitter emitter(catalog);
  auto program = [](const std::string& producer) {
    Graph g;
    int x = g.addValue({{3, 4}, DType::Float32});
    g.inputs.push_back({x, "x0", Distribution{}});
    int v = g.addValue({{3, 4}, DType::Float32});
    g.nodes.push_back({producer, {x}, {v}, json::object()});
    int y = g.addValue({{3, 4}, DType::Float32});
    g.nodes.push_back({"sigmoid_", {v}, {y}, json::object()});
    g.outputs = {y};
    return g;
  };
  EXPECT_NE(emitter.emit(program("exp")).find("v1.clone().sigmoid_()"), std::string::npos) << emitter.emit(program("exp"));
  EXPECT_NE(emitter.emit(program("sin")).find("= v1.sigmoid_()"), std::string::npos) << emitter.emit(program("sin"));
}

// Ops that need distinct indices (index_assign, scatter without accumulation) are generated: their
// fresh index operand is drawn as a permutation even when its range already fits.
TEST(InputLayout, DistinctIndexOpsAreGeneratedWithPermutationIndices) {
  OpCatalog catalog = makeDefaultCatalog();
  GenPolicy policy;
  policy.opWeights = {{"index_assign", 200}, {"index_add_assign", 200}};
  Generator generator(catalog, policy, 1);
  int found = 0;
  for (uint64_t i = 0; i < 20; ++i) {
    Graph g = generator.generate(i);
    for (const Node& n : g.nodes) {
      if (n.op != "index_assign" && n.op != "index_add_assign") continue;
      ++found;
      const Source* index = g.sourceOf(n.inputs[1]);
      if (index) EXPECT_EQ(index->dist.kind, "randperm") << "program " << i;
    }
  }
  EXPECT_GE(found, 20);  // none was generated before the fix
}

TEST(InputLayout, ShapeChangesDropLayoutsThatNoLongerFit) {
  Graph g = oneInputProgram(Layout{"transposed", {0, 2}}, {2, 3, 4});
  EXPECT_EQ(dropInvalidLayouts(g), 0);
  g.typeOf(g.inputs[0].value).shape = {2, 3};  // a shrink-ranks candidate
  EXPECT_EQ(dropInvalidLayouts(g), 1);
  EXPECT_TRUE(g.inputs[0].layout.contiguous());
}

// The emitted make_inputs, run in the real torch, gives every input the shape, dtype, contiguity and
// storage offset the IR says (200 generated programs, every input laid out).
TEST(InputLayout, EmittedInputsHaveTheirLayoutInTorch) {
  OpCatalog catalog = makeDefaultCatalog();
  GenPolicy policy;
  policy.inputLayoutChance = 1;
  policy.boundaryChance = policy.complexBoundaryChance = 1;
  for (const std::string& kind : boundaryKinds()) policy.boundaryWeights[kind] = 1;  // the off-by-default ones too
  Generator generator(catalog, policy, 17);
  PythonEmitter emitter(catalog);
  auto dir = std::filesystem::temp_directory_path() / fmt::format("tcfuzz-layout-{}", ::getpid());
  std::filesystem::create_directories(dir);
  // And 100 programs whose inputs alias: each alias shares its base's storage with the strides and storage
  // offset sourceGeometry gives, and the worker's copies (layout_copies) keep the sharing.
  GenPolicy aliasing;
  aliasing.inputAliasChance = aliasing.aliasReadAfterWriteChance = 1;
  Generator aliasGenerator(catalog, aliasing, 17);
  json cases = json::array();
  int laidOut = 0, withBoundary = 0, complexWithBoundary = 0, aliases = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    Graph g = i < 200 ? generator.generate(i) : aliasGenerator.generate(i);
    json expect = json::array();
    for (const Source& s : g.inputs) {
      const TensorType& t = g.typeOf(s.value);
      laidOut += !s.layout.contiguous();
      withBoundary += !s.boundary.empty();
      complexWithBoundary += !s.boundary.empty() && isComplex(t.dtype);
      Geometry geometry = sourceGeometry(g, s);
      bool contiguous = s.alias.none() ? !isNonContiguous(s.layout, t) : isContiguous(t.shape, geometry.strides);
      expect.push_back({{"shape", t.shape},
                        {"dtype", dtypeName(t.dtype)},
                        {"contiguous", contiguous},
                        {"offset", geometry.offset != 0},
                        {"layout", s.alias.none() ? describeLayout(s.layout) : describeAlias(s.alias)},
                        {"boundary", s.boundary.kinds}});
      if (const Source* base = s.alias.none() ? nullptr : aliasBase(g, s)) {
        ++aliases;
        expect.back()["alias_of"] = std::find_if(g.inputs.begin(), g.inputs.end(), [&](const Source& o) { return &o == base; }) - g.inputs.begin();
        expect.back()["strides"] = geometry.strides;
        expect.back()["storage_offset"] = geometry.offset;
      }
    }
    std::string file = (dir / fmt::format("p{}.py", i)).string();
    std::ofstream(file) << emitter.emit(g);
    cases.push_back({{"file", file}, {"inputs", expect}});
  }
  EXPECT_GT(laidOut, 150);
  EXPECT_GT(withBoundary, 50);
  EXPECT_GT(complexWithBoundary, 0);  // the values land in the real part, the imaginary part or both
  EXPECT_GT(aliases, 70);
  std::ofstream(dir / "cases.json") << cases.dump();
  std::ofstream(dir / "check.py") << R"PY(
import json, runpy, sys
import torch
sys.path.insert(0, sys.argv[2])
from reference.repro_shared import layout_copies, widen_inputs
problems = 0
seen = set()  # the boundary kinds some input shows, and "complex <kind>" for those a complex input shows
shows = {
    "signed_zero": lambda x: bool(((x == 0) & torch.signbit(x)).any()),
    "denormal": lambda x: bool(((x != 0) & (x.abs() < torch.finfo(x.dtype).tiny)).any()),
    "tiny": lambda x: bool((x.abs() == torch.finfo(x.dtype).tiny).any()),
    "ties": lambda x: bool((((x * 4) == (x * 4).round()) | ~x.isfinite()).all()),
    "extremes": lambda x: bool((x.abs() == torch.finfo(x.dtype).max).any()),
    "nonfinite": lambda x: bool((~x.isfinite()).any()),
    "int_limits": lambda x: bool(((x == torch.iinfo(x.dtype).max) | (x == torch.iinfo(x.dtype).min)).any()),
}
parts = lambda x: torch.view_as_real(x) if x.is_complex() else x  # a complex input's values are its parts
for case in json.load(open(sys.argv[1])):
    ns = runpy.run_path(case["file"])
    inputs = ns["make_inputs"](0)
    for copies in (inputs, layout_copies(inputs), widen_inputs(inputs)):
        for x, want in zip(copies, case["inputs"]):
            got = (list(x.shape), x.is_contiguous(), x.storage_offset() != 0)
            if got != (want["shape"], want["contiguous"], want["offset"]):
                problems += 1
                print(case["file"], want["layout"], "got", got, "want", want)
            if "alias_of" in want:
                base = copies[want["alias_of"]]
                got = (x.untyped_storage().data_ptr() == base.untyped_storage().data_ptr(), list(x.stride()),
                       x.storage_offset())
                if got != (True, want["strides"], want["storage_offset"]):
                    problems += 1
                    print(case["file"], want["layout"], "got", got, "want", want)
    for x, want in zip(inputs, case["inputs"]):
        if str(x.dtype).replace("torch.", "") != want["dtype"]:
            problems += 1
            print(case["file"], "dtype", x.dtype, "want", want["dtype"])
        seen.update(kind for kind in want["boundary"] if shows[kind](parts(x)))
        seen.update("complex " + kind for kind in want["boundary"] if x.is_complex() and shows[kind](parts(x)))
print("problems", problems)
print("boundary kinds seen:", " ".join(sorted(seen)))
if not set(shows) <= seen or not any(kind.startswith("complex ") for kind in seen):
    print("boundary kinds never seen:", " ".join(sorted(set(shows) - seen)), "(or none on a complex input)")
    problems += 1
sys.exit(1 if problems else 0)
)PY";
  std::string out = (dir / "out.txt").string();
  int rc = std::system(fmt::format("'{}' '{}' '{}' '{}' > '{}' 2>&1", TCFUZZ_DEFAULT_PYTHON, (dir / "check.py").string(),
                                   (dir / "cases.json").string(), TCFUZZ_SOURCE_DIR "/fuzzer/worker/python", out)
                           .c_str());
  std::stringstream text;
  text << std::ifstream(out).rdbuf();
  EXPECT_EQ(rc, 0) << text.str().substr(0, 3000);
  EXPECT_NE(text.str().find("problems 0"), std::string::npos) << text.str().substr(0, 3000);
  std::filesystem::remove_all(dir);
}

// The program shape of `tcfuzz gen --seed 5`'s programs: no dead nodes, at least 30% with a
// view or an in-place op, at least 20% with a non-contiguous input, some writes through views.
TEST(ProgramShape, GeneratedProgramsHaveNoDeadNodesAndTheAskedShares) {
  OpCatalog catalog = makeDefaultCatalog();
  Generator generator(catalog, GenPolicy{}, 5);
  ProgramFigures figures;
  for (uint64_t i = 0; i < 300; ++i) {
    Graph g = generator.generate(i);
    ASSERT_EQ(deadNodeCount(g), 0) << "program " << i;
    figures.add(g, catalog);
  }
  json f = figures.toJson();
  EXPECT_EQ(f["dead_node_share"].get<double>(), 0.0);
  EXPECT_GE(f["programs_with_view_or_inplace"].get<double>(), 0.30) << f.dump();
  EXPECT_GE(f["programs_with_noncontiguous_input"].get<double>(), 0.20) << f.dump();
  EXPECT_GT(f["programs_with_inplace_on_view"].get<double>(), 0.05) << f.dump();
  EXPECT_GT(f["programs_with_view_read_after_its_base_is_written"].get<double>(), 0.02) << f.dump();
  EXPECT_GT(f["programs_with_storage_offset_input"].get<double>(), 0.02) << f.dump();
  EXPECT_GT(f["shared_value_share"].get<double>(), 0.0) << f.dump();
}

TEST(ProgramShape, DeadNodeEliminationKeepsWhatOutputsNeed) {
  Graph g = oneInputProgram(Layout{}, {3});
  int dead = g.addValue({{3}, DType::Float32});
  g.nodes.push_back({"cos", {g.inputs[0].value}, {dead}, json::object()});
  EXPECT_EQ(deadNodeCount(g), 1);
  Graph live = eliminateDeadNodes(g);
  ASSERT_EQ(live.nodes.size(), 1u);
  EXPECT_EQ(live.nodes[0].op, "sin");
}

TEST(ProgramShape, PolicyRejectsUnknownLayoutsAndNonBinaryMergeOps) {
  EXPECT_THROW(GenPolicy::fromJson(json{{"layout_weights", {{"diagonal", 1}}}}), std::invalid_argument);
  EXPECT_THROW(GenPolicy::fromJson(json{{"input_layout_chance", 2}}), std::invalid_argument);
  GenPolicy p = GenPolicy::fromJson(json{{"merge_ops", {"sin"}}});
  OpCatalog catalog = makeDefaultCatalog();
  EXPECT_THROW(Generator(catalog, p, 1), std::invalid_argument);
  GenPolicy q = GenPolicy::fromJson(json{{"layout_weights", {{"expanded", 1}}}, {"input_layout_chance", 1}});
  EXPECT_EQ(q.layoutWeights.size(), 1u);
}

// The layout mutators: change_layout gives an input a layout (or takes it away), insert_inplace
// puts an in-place op on a value that every later reader then reads.
TEST(LayoutMutators, ChangeLayoutAndInsertInplace) {
  OpCatalog catalog = makeDefaultCatalog();
  GenPolicy policy;
  policy.inputLayoutChance = 0;
  Generator generator(catalog, policy, 3);
  Mutator mutator(catalog, policy);
  int layouts = 0, inplace = 0;
  for (uint64_t i = 0; i < 30; ++i) {
    Graph parent = generator.generate(i);
    if (auto m = mutator.mutate(parent, nullptr, i, "change_layout")) {
      EXPECT_EQ(firstInvalidNode(catalog, m->graph), "");
      for (const Source& s : m->graph.inputs) layouts += !s.layout.contiguous();
    }
    if (auto m = mutator.mutate(parent, nullptr, i, "insert_inplace")) {
      EXPECT_EQ(firstInvalidNode(catalog, m->graph), "");
      for (const Node& n : m->graph.nodes) inplace += catalog.at(n.op).inplace;
    }
  }
  EXPECT_GT(layouts, 10);
  EXPECT_GT(inplace, 10);
}

}  // namespace
}  // namespace tcfuzz::gen

namespace tcfuzz::gen {
namespace {

/// A graph of two float32 inputs, x0 of `base` (laid out as `layout`) and x1 of `shape`, x1 aliasing x0
/// as `alias`; tanh reads each.
Graph aliasedPair(std::vector<int64_t> base, std::vector<int64_t> shape, InputAlias alias, Layout layout = {}) {
  Graph g;
  int x0 = g.addValue({base, DType::Float32}), x1 = g.addValue({shape, DType::Float32});
  g.inputs.push_back({x0, "x0", {}, layout});
  g.inputs.push_back({x1, "x1", {}, {}, {}, alias});
  for (int v : {x0, x1}) {
    int out = g.addValue(g.typeOf(v));
    g.nodes.push_back({"tanh", {v}, {out}});
    g.outputs.push_back(out);
  }
  return g;
}

TEST(InputAliases, GeometryMatchesLibTorchAndSharesTheBasesStorage) {
  struct Case {
    std::vector<int64_t> base, shape;
    InputAlias alias;
    Layout layout;
  };
  std::vector<Case> cases{
      {{3, 4}, {3, 4}, {"x0", "same"}},
      {{3, 4}, {3, 4}, {"x0", "full-slice"}},
      {{3, 4}, {4, 3}, {"x0", "transpose", {0, 1}}},
      {{3, 4}, {2, 4}, {"x0", "narrow", {0}, 1}},
      {{3, 4}, {3, 2}, {"x0", "narrow", {1}, 2}, {"strided", {0}, 2, 1}},
      {{1, 4}, {2, 3, 4}, {"x0", "expand"}},
      {{3, 4}, {2, 5}, {"x0", "as-strided", {}, 1}},
      {{3, 4}, {3, 4}, {"x0", "as-strided", {}, 2}, {"transposed", {0, 1}}},  // the storage is 12 long; 2 + 12 > 12
  };
  for (const Case& c : cases) {
    Graph g = aliasedPair(c.base, c.shape, c.alias, c.layout);
    const Source& s = g.inputs[1];
    std::string problem = aliasProblem(g, s);
    std::string what = fmt::format("{} of {}", describeAlias(c.alias), g.typeOf(g.inputs[0].value).str());
    if (c.alias.start == 2 && c.alias.kind == "as-strided") {
      EXPECT_EQ(problem, "the view runs past the base's storage") << what;
      continue;
    }
    ASSERT_EQ(problem, "") << what;
    at::Tensor x0 = build(c.layout, g.typeOf(g.inputs[0].value));
    const InputAlias& a = c.alias;
    at::Tensor x1 = a.kind == "same"        ? x0
                    : a.kind == "full-slice" ? x0.slice(0)
                    : a.kind == "transpose"  ? x0.transpose(a.dims[0], a.dims[1])
                    : a.kind == "narrow"     ? x0.narrow(a.dims[0], a.start, c.shape[a.dims[0]])
                    : a.kind == "expand"     ? x0.expand(c.shape)
                                             : x0.as_strided(c.shape, contiguousStrides(c.shape), x0.storage_offset() + a.start);
    Geometry want = sourceGeometry(g, s);
    EXPECT_EQ(x1.sizes().vec(), c.shape) << what;
    EXPECT_EQ(x1.strides().vec(), want.strides) << what;
    EXPECT_EQ(x1.storage_offset(), want.offset) << what;
    EXPECT_TRUE(x1.is_alias_of(x0)) << what;
    // The JSON form round-trips, and a graph that holds it reads back with the same hash.
    EXPECT_EQ(aliasFromJson(aliasToJson(a)), a) << what;
    EXPECT_EQ(Graph::fromJson(g.toJson(), "t").contentHash(), g.contentHash()) << what;
  }
}

TEST(InputAliases, ProblemsAreNamedAndCandidatesKeepEagerValid) {
  EXPECT_EQ(aliasProblem(aliasedPair({3, 4}, {4, 3}, {"x9", "same"}), aliasedPair({3, 4}, {4, 3}, {"x9", "same"}).inputs[1]),
            "no input named 'x9' to alias");
  Graph g = aliasedPair({3, 4}, {4, 3}, {"x0", "same"});
  EXPECT_EQ(aliasProblem(g, g.inputs[1]), "the same tensor needs the same shape");
  g = aliasedPair({3, 4}, {3, 4}, {"x0", "same"});
  g.values[g.inputs[1].value].type.dtype = DType::Float64;
  EXPECT_EQ(aliasProblem(g, g.inputs[1]), "only floating inputs of one dtype alias");
  g = aliasedPair({3, 4}, {3, 4}, {"x0", "same"});
  g.inputs[1].dist = {"uniform", 0, 1};
  EXPECT_EQ(aliasProblem(g, g.inputs[1]), "an alias and its base need one distribution");
  EXPECT_THROW(aliasFromJson({{"base", "x0"}, {"kind", "mirror"}}), std::invalid_argument);
  EXPECT_THROW(aliasFromJson({{"base", "x0"}, {"kind", "same"}, {"start", 1}}), std::invalid_argument);
  // A JSON graph whose alias does not fit is refused with the reason.
  json doc = aliasedPair({3, 4}, {3, 4}, {"x0", "same"}).toJson();
  doc["inputs"][1]["alias"]["kind"] = "transpose";
  doc["inputs"][1]["alias"]["dims"] = {0, 0};
  try {
    Graph::fromJson(doc, "bad.json");
    ADD_FAILURE() << "an alias that does not fit was read";
  } catch (const GraphFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("a transpose needs two different dims in range"), std::string::npos) << e.what();
  }

  // Candidates: each kind that yields the shape (a [1, 4] base holds 4 elements: too few for a row-major [3, 4]).
  OpCatalog catalog = makeDefaultCatalog();
  auto kindsOf = [&](const Graph& h) {
    std::vector<std::string> kinds;
    for (const InputAlias& a : aliasCandidates(h, catalog, h.inputs[1])) kinds.push_back(a.kind);
    return kinds;
  };
  EXPECT_EQ(kindsOf(aliasedPair({1, 4}, {3, 4}, {})), (std::vector<std::string>{"expand"}));
  g = aliasedPair({3, 4}, {3, 4}, {});
  EXPECT_EQ(kindsOf(g), (std::vector<std::string>{"same", "full-slice", "expand", "narrow", "as-strided"}));
  // x1.mul_(x0), written into x1: an expanded alias is never written, and the write may not read its own storage.
  g.nodes[1] = {"mul_", {g.inputs[1].value, g.inputs[0].value}, {g.nodes[1].outputs[0]}};
  g.nodes[1].writesInput = true;
  g.nodes.erase(g.nodes.begin());  // x0 is read only as mul_'s source
  g.outputs.erase(g.outputs.begin());
  EXPECT_TRUE(kindsOf(g).empty());
  // x1.mul_(x2) reads a third input: every kind but expand stays.
  int x2 = g.addValue({{3, 4}, DType::Float32});
  g.inputs.push_back({x2, "x2"});
  g.nodes[0].inputs[1] = x2;
  int read = g.addValue({{3, 4}, DType::Float32});
  g.nodes.push_back({"tanh", {g.inputs[0].value}, {read}});
  g.outputs.push_back(read);
  EXPECT_EQ(kindsOf(g), (std::vector<std::string>{"same", "full-slice", "narrow", "as-strided"}));
}

TEST(InputAliases, GeneratedShareAndMutatorsAddAndDropThem) {
  OpCatalog catalog = makeDefaultCatalog();
  Generator generator(catalog, GenPolicy{}, 11);
  ProgramFigures figures;
  int aliased = 0, writtenPairs = 0;
  Graph withAlias;
  for (uint64_t i = 0; i < 300; ++i) {
    Graph g = generator.generate(i);
    figures.add(g, catalog);
    for (const Source& s : g.inputs) ASSERT_EQ(aliasProblem(g, s), "") << i;
    if (aliasedInputCount(g) && withAlias.nodes.empty()) withAlias = g;
    aliased += aliasedInputCount(g) > 0;
  }
  json f = figures.toJson();
  writtenPairs = static_cast<int>(f["programs_writing_through_an_aliased_input"].get<double>() * 300 + 0.5);
  EXPECT_GE(aliased, 15);  // the issue's floor: 5% of programs
  EXPECT_GT(writtenPairs, 0);
  EXPECT_DOUBLE_EQ(f["programs_passing_aliased_inputs"].get<double>(), aliased / 300.0);
  // change_layout drops an alias (an input draws its own values again) and makes new ones.
  Mutator mutator(catalog, GenPolicy{});
  bool dropped = false, made = false;
  for (uint64_t i = 0; i < 200 && !(dropped && made); ++i) {
    auto m = mutator.mutate(withAlias, nullptr, i, "change_layout");
    if (!m) continue;
    dropped = dropped || aliasedInputCount(m->graph) < aliasedInputCount(withAlias);
    for (const Source& s : m->graph.inputs) ASSERT_EQ(aliasProblem(m->graph, s), "");
    for (const Source& s : m->graph.inputs)
      made = made || (!s.alias.none() && std::none_of(withAlias.inputs.begin(), withAlias.inputs.end(),
                                                    [&](const Source& o) { return o.name == s.name && o.alias == s.alias; }));
  }
  EXPECT_TRUE(dropped);
  EXPECT_TRUE(made);
}

}  // namespace
}  // namespace tcfuzz::gen
