// The JSON-lines codec between tcfuzz and the worker harness.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fuzzer/worker/Protocol.h"

using namespace tcfuzz;

TEST(Protocol, EncodesEveryJobField) {
  Job job;
  job.id = "000007-compiled";
  job.program = "/p/model.py";
  job.mode = RunMode::Compiled;
  job.seed = 42;
  job.device = "cuda:1";
  job.compile.backend = "aot_eager";
  job.compile.mode = "max-autotune";
  job.compile.dynamic = true;
  job.compile.fullgraph = true;
  job.compile.addInductorOverride("cpp_wrapper=true");
  job.compile.addInductorOverride("triton.cudagraphs=false");
  job.limits = Limits{12.5, 1024};
  job.jobDir = "/w/jobs/000007-compiled";
  job.repeat = 2;
  job.plugins = {"/p/plugin.py"};
  job.threads = 3;
  job.backward = true;

  std::string line = encodeJob(job);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["type"], "job");
  EXPECT_EQ(j["id"], "000007-compiled");
  EXPECT_EQ(j["program"], "/p/model.py");
  EXPECT_EQ(j["mode"], "compiled");
  EXPECT_EQ(j["seed"], 42);
  EXPECT_EQ(j["device"], "cuda:1");
  EXPECT_EQ(j["limits"]["timeout_s"], 12.5);
  EXPECT_EQ(j["limits"]["memory_mb"], 1024);
  EXPECT_EQ(j["job_dir"], "/w/jobs/000007-compiled");
  EXPECT_EQ(j["repeat"], 2);
  EXPECT_EQ(j["threads"], 3);
  EXPECT_EQ(j["backward"], true);
  EXPECT_EQ(j["plugins"][0], "/p/plugin.py");
  EXPECT_EQ(j["compile"]["backend"], "aot_eager");
  EXPECT_EQ(j["compile"]["mode"], "max-autotune");
  EXPECT_EQ(j["compile"]["dynamic"], true);
  EXPECT_EQ(j["compile"]["fullgraph"], true);
  EXPECT_EQ(j["compile"]["inductor_config"]["cpp_wrapper"], true);
  EXPECT_EQ(j["compile"]["inductor_config"]["triton.cudagraphs"], false);
}

TEST(Protocol, EagerJobCarriesNoCompileConfig) {
  Job job;
  job.id = "e";
  auto j = nlohmann::json::parse(encodeJob(job));
  EXPECT_FALSE(j.contains("compile"));
  EXPECT_EQ(j["mode"], "eager");
  EXPECT_EQ(j["backward"], false);  // forward only unless asked
}

TEST(Protocol, CompileConfigRecordsOnlyNonDefaults) {
  oracles::CompileConfig c;
  EXPECT_TRUE(c.nonDefault().empty());
  EXPECT_EQ(c.describe(), "backend=inductor");
  c.mode = "reduce-overhead";
  c.addInductorOverride("max_autotune_gemm_backends=ATEN");  // not JSON: kept as a string
  auto nd = c.nonDefault();
  EXPECT_FALSE(nd.contains("backend"));
  EXPECT_EQ(nd["mode"], "reduce-overhead");
  EXPECT_EQ(nd["inductor_config"]["max_autotune_gemm_backends"], "ATEN");
  EXPECT_THROW(c.addInductorOverride("no_equals_sign"), std::invalid_argument);
}

TEST(Protocol, DecodesHello) {
  auto msg = decodeMessage(
      R"({"type":"hello","torch":"2.11.0+cu130","torch_git":"abc","torch_dir":"/t","python":"3.11.7",)"
      R"("cuda_version":"13.0","triton":"3.6.0","devices":["AMD EPYC"],)"
      R"("inductor_options":["cpp_wrapper","triton.cudagraphs"],"features":["compiler_bisector"],)"
      R"("pid":9,"device":"cuda","import_s":2.5,"cuda":{"available":true,"count":2,"names":["H100","H100"],"capability":[9,0]}})");
  ASSERT_TRUE(std::holds_alternative<Hello>(msg));
  const auto& h = std::get<Hello>(msg);
  EXPECT_EQ(h.cudaCapability, 90);
  EXPECT_EQ(h.torch.version, "2.11.0+cu130");
  EXPECT_EQ(h.torch.git, "abc");
  EXPECT_EQ(h.torch.cuda, "13.0");
  EXPECT_EQ(h.torch.triton, "3.6.0");
  EXPECT_EQ(h.torch.python, "3.11.7");
  EXPECT_EQ(h.torch.devices, (std::vector<std::string>{"AMD EPYC", "H100", "H100"}));
  EXPECT_TRUE(h.hasInductorOption("triton.cudagraphs"));
  EXPECT_FALSE(h.hasInductorOption("cpp.simdlen"));
  EXPECT_TRUE(h.has("compiler_bisector"));
  EXPECT_FALSE(h.has("structured_trace"));
  EXPECT_EQ(h.pid, 9);
  EXPECT_DOUBLE_EQ(h.importSeconds, 2.5);
  EXPECT_TRUE(h.cudaAvailable);
  EXPECT_EQ(h.cudaDevices, 2);
}

TEST(Protocol, AnOlderHelloWithoutTheNewFieldsStillDecodes) {
  const auto h = std::get<Hello>(decodeMessage(R"({"type":"hello","torch":"2.4.1+cu121","pid":3})"));
  EXPECT_EQ(h.torch.version, "2.4.1+cu121");
  EXPECT_TRUE(h.torch.cuda.empty());
  EXPECT_TRUE(h.hasInductorOption("anything"));  // not reported: nothing is assumed missing
  EXPECT_FALSE(h.has("compiler_bisector"));
}

TEST(Protocol, ARefusalCarriesItsReason) {
  try {
    decodeMessage(R"({"type":"refuse","message":"python3 cannot import torch: No module named 'torch'"})");
    FAIL() << "expected WorkerRefused";
  } catch (const WorkerRefused& e) {
    EXPECT_EQ(std::string(e.what()), "python3 cannot import torch: No module named 'torch'");
  }
}

TEST(Protocol, TorchVersionsOrderAsReleasesDo) {
  using oracles::versionKey;
  EXPECT_LT(versionKey("2.4.1"), versionKey("2.11.0+cu130"));
  EXPECT_LT(versionKey("2.9.1"), versionKey("2.11.0"));
  EXPECT_LT(versionKey("2.15.0+cu132"), versionKey("2.16.0.dev20261101+cpu"));
  EXPECT_LT(versionKey("2.16.0.dev20261101+cpu"), versionKey("2.16.0"));
  EXPECT_LT(versionKey("2.16.0rc1"), versionKey("2.16.0"));
  EXPECT_EQ(versionKey("2.11.0+cu130"), versionKey("2.11.0+cpu"));
  EXPECT_EQ(oracles::releaseOf("2.15.0+cu132"), "2.15.0");
}

TEST(Protocol, TorchOlderThan2_4IsRefusedAndNewerIsNot) {
  EXPECT_FALSE(oracles::unsupportedTorch("2.4.0"));
  EXPECT_FALSE(oracles::unsupportedTorch("2.15.0+cu132"));
  EXPECT_FALSE(oracles::unsupportedTorch("2.16.0.dev20261101+cpu"));
  EXPECT_FALSE(oracles::unsupportedTorch("3.0.0"));
  ASSERT_TRUE(oracles::unsupportedTorch("2.3.1"));
  EXPECT_NE(oracles::unsupportedTorch("2.3.1")->find("older than 2.4"), std::string::npos);
  EXPECT_TRUE(oracles::unsupportedTorch("1.13.1"));
  EXPECT_TRUE(oracles::unsupportedTorch(""));
  EXPECT_TRUE(oracles::unsupportedTorch("nightly"));
}

TEST(Protocol, DecodesFullResult) {
  auto msg = decodeMessage(R"({"type":"result","id":"j1","status":"ok","phase":"done",
    "outputs":{"file":"outputs.pt","leaves":[{"kind":"tensor","index":0,"dtype":"float32","shape":[4,1]},
                                             {"kind":"scalar","index":1,"dtype":"int","value":3},
                                             {"kind":"other","repr":"'abc'"}]},
    "repeat_outputs":[{"file":"outputs_1.pt","leaves":[]}],
    "times":{"fork_s":0.01,"setup_s":0.2,"compile_s":3.0,"run_s":3.5,"save_s":0.02,"child_wall_s":3.8},
    "compile_facts":{"graph_count":2,"graph_breaks":1,"break_reasons":{"print call":1},
                     "inductor_counters":{"pattern_matcher_count":4}}})");
  ASSERT_TRUE(std::holds_alternative<oracles::RunResult>(msg));
  const auto& r = std::get<oracles::RunResult>(msg);
  EXPECT_EQ(r.jobId, "j1");
  EXPECT_EQ(r.status, oracles::RunStatus::Ok);
  ASSERT_TRUE(r.outputs);
  ASSERT_EQ(r.outputs->leaves.size(), 3u);
  EXPECT_EQ(r.outputs->leaves[0].shape, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(r.outputs->leaves[1].kind, oracles::OutputLeaf::Kind::Scalar);
  EXPECT_EQ(r.outputs->leaves[2].repr, "'abc'");
  ASSERT_EQ(r.repeatOutputs.size(), 1u);
  EXPECT_EQ(r.repeatOutputs[0].file, "outputs_1.pt");
  EXPECT_DOUBLE_EQ(r.times.compile, 3.0);
  EXPECT_DOUBLE_EQ(r.times.childWall, 3.8);
  ASSERT_TRUE(r.compileFacts);
  EXPECT_EQ(r.compileFacts->graphCount, 2);
  EXPECT_EQ(r.compileFacts->breakReasons.at("print call"), 1);
  EXPECT_DOUBLE_EQ(r.compileFacts->inductorCounters.at("pattern_matcher_count"), 4);
  // A result from before backward jobs and the extra compile facts: defaults, nothing invented.
  EXPECT_EQ(r.outputs->leaves[0].role, "output");
  EXPECT_EQ(r.outputs->leaves[0].name, "");
  EXPECT_TRUE(r.backwardNote.empty());
  EXPECT_DOUBLE_EQ(r.times.backward, 0.0);
  EXPECT_TRUE(r.compileFacts->inductorMetrics.empty());
  EXPECT_TRUE(r.compileFacts->aotAutogradCounters.empty());
  // ... and from before the compile hooks (or from a torch they could not hook): no Inductor figures.
  EXPECT_TRUE(r.compileFacts->postGradOps.empty());
  EXPECT_TRUE(r.compileFacts->fallbacks.empty());
  EXPECT_TRUE(r.compileFacts->kernelKinds.empty());
  EXPECT_EQ(r.compileFacts->recompiles, 0);
  EXPECT_TRUE(r.compileFacts->dynamoCounters.empty());
  nlohmann::json report = oracles::toJson(r);
  EXPECT_FALSE(report["compile_facts"].contains("post_grad_ops"));
  EXPECT_FALSE(report["compile_facts"].contains("recompiles"));
}

TEST(Protocol, DecodesWhatInductorDid) {
  auto r = std::get<oracles::RunResult>(decodeMessage(R"json({"type":"result","id":"j4","status":"ok","phase":"done",
    "compile_facts":{"graph_count":2,"graph_breaks":0,"break_reasons":{},
      "post_grad_ops":{"aten.addmm.default:float32":1,"aten.max.dim:float32,int64":2},
      "lowerings":{"aten.relu.default":1,"aten.sum.dim_IntList":1},"fallbacks":{"aten.cumsum.default":1},
      "patterns":{"addmm":1},"fusions":{"pointwise+reduction":3},"kernel_kinds":{"extern":2,"reduction":1},
      "extern_kernels":{"extern_kernels.addmm":1},"recompiles":1,
      "recompile_reasons":{"tensor 'x' size mismatch at index N. expected N, actual N":1},
      "dynamo_counters":{"frames.total":2,"frames.ok":2,"calls_captured":12},
      "notes":["a note"]}})json"));
  ASSERT_TRUE(r.compileFacts);
  const oracles::CompileFacts& f = *r.compileFacts;
  EXPECT_EQ(f.postGradOps, (std::map<std::string, int>{{"aten.addmm.default:float32", 1}, {"aten.max.dim:float32,int64", 2}}));
  EXPECT_EQ(f.lowerings, (std::map<std::string, int>{{"aten.relu.default", 1}, {"aten.sum.dim_IntList", 1}}));
  EXPECT_EQ(f.fallbacks, (std::map<std::string, int>{{"aten.cumsum.default", 1}}));
  EXPECT_EQ(f.patterns, (std::map<std::string, int>{{"addmm", 1}}));
  EXPECT_EQ(f.fusions, (std::map<std::string, int>{{"pointwise+reduction", 3}}));
  EXPECT_EQ(f.kernelKinds, (std::map<std::string, int>{{"extern", 2}, {"reduction", 1}}));
  EXPECT_EQ(f.externKernels, (std::map<std::string, int>{{"extern_kernels.addmm", 1}}));
  EXPECT_EQ(f.recompiles, 1);
  EXPECT_EQ(f.recompileReasons.at("tensor 'x' size mismatch at index N. expected N, actual N"), 1);
  EXPECT_EQ(f.dynamoCounters, (std::map<std::string, double>{{"calls_captured", 12}, {"frames.ok", 2}, {"frames.total", 2}}));

  nlohmann::json facts = oracles::toJson(r)["compile_facts"];  // the report view carries them on
  EXPECT_EQ(facts["fallbacks"]["aten.cumsum.default"], 1);
  EXPECT_EQ(facts["fusions"]["pointwise+reduction"], 3);
  EXPECT_EQ(facts["recompiles"], 1);
  EXPECT_EQ(facts["dynamo_counters"]["frames.total"], 2);
  EXPECT_EQ(oracles::runResultFromJson(nlohmann::json{{"id", "j4"}, {"status", "ok"}, {"phase", "done"}, {"compile_facts", facts}})
                .compileFacts->kernelKinds,
            f.kernelKinds);  // and decodes back to the same figures
}

TEST(Protocol, DecodesBackwardLeavesAndTheExtraCompileFacts) {
  auto r = std::get<oracles::RunResult>(decodeMessage(R"json({"type":"result","id":"j2","status":"ok","phase":"done",
    "backward":"ok",
    "outputs":{"file":"outputs.pt","leaves":[
        {"kind":"tensor","index":0,"dtype":"float32","shape":[3],"role":"output"},
        {"kind":"tensor","index":1,"dtype":"float32","shape":[3,8],"role":"grad","name":"grad(input 0)"},
        {"kind":"other","repr":"None","role":"grad","name":"grad(param linear.bias)"},
        {"kind":"tensor","index":2,"dtype":"float32","shape":[4,8],"role":"grad","name":"grad(param linear.weight)"}]},
    "times":{"run_s":2.0,"backward_s":0.75},
    "compile_facts":{"graph_count":1,"graph_breaks":0,"break_reasons":{},"inductor_counters":{},
                     "inductor_metrics":{"generated_kernel_count":3,"num_bytes_accessed":1024,"ir_nodes_pre_fusion":6},
                     "aot_autograd_counters":{"total":1,"ok":1,"autograd_cache_miss":1}}})json"));
  ASSERT_TRUE(r.outputs);
  ASSERT_EQ(r.outputs->leaves.size(), 4u);
  EXPECT_EQ(r.outputs->leaves[0].role, "output");
  EXPECT_EQ(r.outputs->leaves[0].name, "");
  EXPECT_EQ(r.outputs->leaves[1].role, "grad");
  EXPECT_EQ(r.outputs->leaves[1].name, "grad(input 0)");
  EXPECT_EQ(r.outputs->leaves[1].shape, (std::vector<int64_t>{3, 8}));
  EXPECT_EQ(r.outputs->leaves[2].kind, oracles::OutputLeaf::Kind::Other);
  EXPECT_EQ(r.outputs->leaves[2].repr, "None");
  EXPECT_EQ(r.outputs->leaves[2].name, "grad(param linear.bias)");
  EXPECT_EQ(r.outputs->leaves[3].name, "grad(param linear.weight)");
  EXPECT_EQ(r.outputs->leaves[3].index, 2);
  EXPECT_EQ(r.backwardNote, "ok");
  EXPECT_DOUBLE_EQ(r.times.backward, 0.75);
  ASSERT_TRUE(r.compileFacts);
  EXPECT_DOUBLE_EQ(r.compileFacts->inductorMetrics.at("generated_kernel_count"), 3);
  EXPECT_DOUBLE_EQ(r.compileFacts->inductorMetrics.at("num_bytes_accessed"), 1024);
  EXPECT_EQ(r.compileFacts->inductorMetrics.size(), 3u);
  EXPECT_DOUBLE_EQ(r.compileFacts->aotAutogradCounters.at("total"), 1);
  EXPECT_EQ(r.compileFacts->aotAutogradCounters.size(), 3u);

  nlohmann::json report = oracles::toJson(r);  // the report view carries them on
  EXPECT_EQ(report["backward"], "ok");
  EXPECT_EQ(report["times"]["backward_s"], 0.75);
  EXPECT_EQ(report["compile_facts"]["inductor_metrics"]["generated_kernel_count"], 3);
  EXPECT_EQ(report["compile_facts"]["aot_autograd_counters"]["autograd_cache_miss"], 1);
}

TEST(Protocol, DecodesASkippedBackward) {
  auto r = std::get<oracles::RunResult>(decodeMessage(
      R"({"type":"result","id":"j3","status":"ok","phase":"done","backward":"skipped: no differentiable output",
          "outputs":{"file":"outputs.pt","leaves":[{"kind":"tensor","index":0,"dtype":"int64","shape":[4],"role":"output"}]}})"));
  EXPECT_EQ(r.backwardNote, "skipped: no differentiable output");
  EXPECT_EQ(oracles::toJson(r)["backward"], "skipped: no differentiable output");
  EXPECT_FALSE(oracles::toJson(r).contains("compile_facts"));
}

TEST(Protocol, DecodesEachFailureStatus) {
  auto exc = std::get<oracles::RunResult>(decodeMessage(
      R"({"type":"result","id":"a","status":"exception","phase":"compile",
          "exception":{"type":"BackendCompilerFailed","qualified_type":"torch._dynamo.exc.BackendCompilerFailed",
                       "message":"line one\nline two","traceback":"Traceback..."}})"));
  EXPECT_EQ(exc.status, oracles::RunStatus::Exception);
  EXPECT_EQ(exc.summary(), "exception BackendCompilerFailed: line one line two (phase compile)");
  auto sig = std::get<oracles::RunResult>(decodeMessage(
      R"({"type":"result","id":"b","status":"signal","phase":"run","signal":11,"signal_name":"SIGSEGV"})"));
  EXPECT_EQ(sig.summary(), "killed by SIGSEGV (phase run)");
  auto timeout = std::get<oracles::RunResult>(decodeMessage(R"({"type":"result","id":"c","status":"timeout","phase":"compile"})"));
  EXPECT_EQ(timeout.status, oracles::RunStatus::Timeout);
  auto oom = std::get<oracles::RunResult>(decodeMessage(R"({"type":"result","id":"d","status":"oom","phase":"run"})"));
  EXPECT_EQ(oom.status, oracles::RunStatus::OutOfMemory);
}

TEST(Protocol, EncodesTheJobKindAndTheBisectSpec) {
  Job program;
  program.id = "p";
  auto pj = nlohmann::json::parse(encodeJob(program));
  EXPECT_EQ(pj["kind"], "program");  // the default
  EXPECT_FALSE(pj.contains("bisect"));

  Job script;
  script.id = "000003-script";
  script.kind = "script";
  script.program = "/w/crashes/abc/repro.py";
  auto sj = nlohmann::json::parse(encodeJob(script));
  EXPECT_EQ(sj["kind"], "script");
  EXPECT_EQ(sj["program"], "/w/crashes/abc/repro.py");
  EXPECT_FALSE(sj.contains("bisect"));

  Job bisect;
  bisect.id = "000004-bisect";
  bisect.kind = "bisect";
  bisect.mode = RunMode::Eager;  // a bisect job carries its compile configuration whatever the mode
  bisect.compile.addInductorOverride("cpp_wrapper=true");
  bisect.bisect = {{"check", "numeric"}, {"leaves", {0, 2}}, {"tolerances", {{"float16", 1e-3}}}};
  auto bj = nlohmann::json::parse(encodeJob(bisect));
  EXPECT_EQ(bj["kind"], "bisect");
  EXPECT_EQ(bj["bisect"]["check"], "numeric");
  EXPECT_EQ(bj["bisect"]["leaves"], nlohmann::json({0, 2}));
  EXPECT_EQ(bj["bisect"]["tolerances"]["float16"], 1e-3);
  EXPECT_EQ(bj["compile"]["inductor_config"]["cpp_wrapper"], true);
}

TEST(Protocol, DecodesScriptAndBisectResults) {
  auto script = std::get<oracles::RunResult>(decodeMessage(
      R"({"type":"result","id":"s","status":"ok","phase":"done","exit_code":1,
          "stdout_tail":"leaf 0: fail\ntcfuzz-verdict: numeric-divergence\n","stderr_tail":"E1122 RMSE"})"));
  EXPECT_TRUE(script.ok());
  ASSERT_TRUE(script.exitCode);
  EXPECT_EQ(*script.exitCode, 1);
  EXPECT_EQ(script.stdoutTail, "leaf 0: fail\ntcfuzz-verdict: numeric-divergence\n");
  EXPECT_EQ(script.stderrTail, "E1122 RMSE");
  EXPECT_TRUE(script.bisect.is_null());
  nlohmann::json sv = oracles::toJson(script);
  EXPECT_EQ(sv["exit_code"], 1);
  EXPECT_EQ(sv["stdout_tail"], script.stdoutTail);
  EXPECT_FALSE(sv.contains("bisect"));

  auto bisect = std::get<oracles::RunResult>(decodeMessage(
      R"({"type":"result","id":"b","status":"ok","phase":"done","stdout_tail":"Moving to the next system: inductor",
          "bisect":{"available":true,"found":true,"backend":"inductor","subsystem":"lowerings",
                    "bisect_number":7,"debug_info":"relu"}})"));
  EXPECT_EQ(bisect.bisect["found"], true);
  EXPECT_EQ(bisect.bisect["subsystem"], "lowerings");
  EXPECT_EQ(bisect.bisect["bisect_number"], 7);
  EXPECT_EQ(bisect.stdoutTail, "Moving to the next system: inductor");
  EXPECT_EQ(oracles::toJson(bisect)["bisect"]["backend"], "inductor");

  auto plain = std::get<oracles::RunResult>(decodeMessage(R"({"type":"result","id":"p","status":"ok","phase":"done"})"));
  EXPECT_TRUE(plain.stdoutTail.empty());
  EXPECT_TRUE(plain.bisect.is_null());
  EXPECT_FALSE(oracles::toJson(plain).contains("stdout_tail"));
}

TEST(Protocol, CarriesTheLiftTableAndTheLiftedProposal) {
  Job job;
  job.id = "000005-lift";
  job.kind = "lift";
  job.program = "/w/llm/p.py";
  job.lift = {{"table", nlohmann::json::array({{{"op", "relu"}, {"callee", "F.relu"}, {"args", nlohmann::json::array({{{"input", 0}}})},
                                      {"kwargs", nlohmann::json::object()}}})},
              {"dtypes", {"float32", "int64"}},
              {"max_rank", 6},
              {"max_elements", 1 << 20}};
  auto j = nlohmann::json::parse(encodeJob(job));
  EXPECT_EQ(j["kind"], "lift");
  EXPECT_EQ(j["lift"], job.lift);
  EXPECT_FALSE(j.contains("compile"));  // an eager run
  Job plain;
  EXPECT_FALSE(nlohmann::json::parse(encodeJob(plain)).contains("lift"));

  auto lifted = std::get<oracles::RunResult>(decodeMessage(
      R"({"type":"result","id":"l","status":"ok","phase":"done",
          "lift":{"proposal":{"inputs":[{"name":"x0","shape":[4,8],"dtype":"float32","parameter":false}],
                              "nodes":[{"out":"v0","op":"relu","args":["x0"],"attrs":{}}],"outputs":["v0"]},
                  "calls":2,"mapped":1,"unmapped":{"torch.Tensor.__getitem__":1}}})"));
  EXPECT_EQ(lifted.lift["proposal"]["nodes"][0]["op"], "relu");
  EXPECT_EQ(lifted.lift["unmapped"]["torch.Tensor.__getitem__"], 1);
  EXPECT_EQ(oracles::toJson(lifted)["lift"], lifted.lift);

  auto rejected = std::get<oracles::RunResult>(decodeMessage(
      R"({"type":"result","id":"r","status":"ok","phase":"done","lift":{"rejected":"import of os"}})"));
  EXPECT_EQ(rejected.lift, nlohmann::json::parse(R"({"rejected":"import of os"})"));
  auto plainResult = std::get<oracles::RunResult>(decodeMessage(R"({"type":"result","id":"p","status":"ok"})"));
  EXPECT_TRUE(plainResult.lift.is_null());
  EXPECT_FALSE(oracles::toJson(plainResult).contains("lift"));
}

TEST(Protocol, RejectsMalformedLines) {
  EXPECT_THROW(decodeMessage("not json"), ProtocolError);
  EXPECT_THROW(decodeMessage("[1,2]"), ProtocolError);
  EXPECT_THROW(decodeMessage(R"({"type":"result","id":"x","status":"exploded"})"), ProtocolError);
  EXPECT_THROW(decodeMessage(R"({"type":"result","id":"x","status":"ok","outputs":{"leaves":[{"kind":"weird"}]}})"),
               ProtocolError);
  EXPECT_THROW(decodeMessage(R"({"type":"hello"})"), ProtocolError);  // no torch version
  EXPECT_THROW(decodeMessage(R"({"type":"gossip"})"), ProtocolError);
  EXPECT_THROW(decodeMessage(R"({"type":"error","message":"malformed job line"})"), ProtocolError);
  // Found by tests/fuzz/fuzz_worker_protocol: fields of another type threw json's type_error.
  EXPECT_THROW(decodeMessage(R"({"type":19.5})"), ProtocolError);
  EXPECT_THROW(decodeMessage("{\"type\":[\"\xff\"]}"), ProtocolError);
  EXPECT_THROW(decodeMessage(R"({"type":"error","message":[1]})"), ProtocolError);
}

TEST(Protocol, AHelloSaysWhyCudaIsNotUsable) {
  auto msg = decodeMessage(
      R"({"type":"hello","torch":"2.11.0+cu130","device":"cuda","cuda":{"available":false,"count":0,"names":[],)"
      R"("error":"RuntimeError: Cannot re-initialize CUDA in forked subprocess"}})");
  ASSERT_TRUE(std::holds_alternative<Hello>(msg));
  const auto& h = std::get<Hello>(msg);
  EXPECT_FALSE(h.cudaAvailable);
  EXPECT_EQ(h.cudaError, "RuntimeError: Cannot re-initialize CUDA in forked subprocess");
  EXPECT_EQ(h.cudaCapability, 0);
}

TEST(Protocol, HelloNumbersPastAnIntAreIgnoredNotConverted) {
  // Found by tests/fuzz/fuzz_worker_protocol: 2.2e27 converted to int was undefined behaviour.
  auto msg = decodeMessage(R"({"type":"hello","torch":"2.4.1+cu121","pid":2222222222222222222222222223,)"
                           R"("child_jobs":99999999999,"cuda":{"available":true,"count":-5e40,"capability":[9e99,0]}})");
  ASSERT_TRUE(std::holds_alternative<Hello>(msg));
  const auto& h = std::get<Hello>(msg);
  EXPECT_EQ(h.pid, 0);
  EXPECT_EQ(h.childJobs, 1);
  EXPECT_EQ(h.cudaDevices, 0);
  EXPECT_EQ(h.cudaCapability, 0);
}
