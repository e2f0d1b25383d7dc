# The layering check (ctest LayersRejectUpwardIncludes): for each pair of adjacent layers, a header of
# the higher layer must NOT be found in the lower layer's include view (build/layers/<library>), and
# a header of the lower layer MUST compile in the higher one's. Run by CTest as
#   cmake -DCOMPILER=... -DLAYER_ROOT=... -DWORK_DIR=... -P check_layers.cmake
# Each layer is "library|a light header of that layer" (standard and nlohmann includes only).
set(LAYERS
  "tcfuzz_generators|generators/ir/Rng.h"
  "tcfuzz_infra|oracles/infra/AtomicFile.h"
  "tcfuzz_judge|oracles/judge/RunResult.h"
  "tcfuzz_reporter|oracles/reporter/MarkdownText.h"
  "tcfuzz_worker|fuzzer/worker/Sandbox.h"
  "tcfuzz_llm|fuzzer/llm/LlmClient.h"
  "tcfuzz_campaign|fuzzer/campaign/output/StatusView.h"
  "tcfuzz_triage|fuzzer/triage/Triage.h"
  "tcfuzz_cli|fuzzer/cli/Options.h")

file(MAKE_DIRECTORY "${WORK_DIR}")
# Compiles a one-line source that includes `header` against the view of `library`; sets `rc` and `out`.
function(compile_include library header)
  set(source "${WORK_DIR}/${library}_includes.cpp")
  file(WRITE "${source}" "#include \"${header}\"\n")
  execute_process(COMMAND "${COMPILER}" -std=c++20 -fsyntax-only -I "${LAYER_ROOT}/${library}" "${source}"
                  RESULT_VARIABLE result ERROR_VARIABLE errors OUTPUT_QUIET)
  set(rc "${result}" PARENT_SCOPE)
  set(out "${errors}" PARENT_SCOPE)
endfunction()

list(LENGTH LAYERS count)
math(EXPR last "${count} - 2")
set(failures 0)
foreach(i RANGE 0 ${last})
  math(EXPR j "${i} + 1")
  list(GET LAYERS ${i} lower)
  list(GET LAYERS ${j} higher)
  string(REPLACE "|" ";" lower "${lower}")
  string(REPLACE "|" ";" higher "${higher}")
  list(GET lower 0 lowerLib)
  list(GET lower 1 lowerHeader)
  list(GET higher 0 higherLib)
  list(GET higher 1 higherHeader)
  compile_include(${lowerLib} ${higherHeader})
  if(rc EQUAL 0 OR NOT out MATCHES "${higherHeader}: No such file or directory")
    message(SEVERE_ERROR "${lowerLib} can include ${higherHeader} of the layer above it (rc ${rc}): ${out}")
    math(EXPR failures "${failures} + 1")
  else()
    message(STATUS "ok: ${lowerLib} cannot include ${higherHeader}")
  endif()
  if(NOT lowerHeader MATCHES "Triage.h$")  # the lower header must still compile one layer up (Triage.h needs torch)
    compile_include(${higherLib} ${lowerHeader})
    if(NOT rc EQUAL 0)
      message(SEVERE_ERROR "${higherLib} cannot include ${lowerHeader} of the layer below it: ${out}")
      math(EXPR failures "${failures} + 1")
    else()
      message(STATUS "ok: ${higherLib} includes ${lowerHeader}")
    endif()
  endif()
endforeach()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} layering check(s) failed")
endif()
