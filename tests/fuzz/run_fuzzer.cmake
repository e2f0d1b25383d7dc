# Runs one parser fuzz target for a bounded time on a fresh copy of its corpus (the source tree is
# never written): cmake -DFUZZER=bin -DCORPUS=tests/fuzz/corpus/<name> -DWORK_DIR=dir -DSECONDS=n -P this.
# Every seed (CORPUS/seeds) and regression input (CORPUS/regressions) runs first; the test fails when
# libFuzzer finds a crash, a sanitizer report or a timeout (it exits non-zero), and names the input.
foreach(var FUZZER CORPUS WORK_DIR SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzzer.cmake: -D${var}= is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/corpus" "${WORK_DIR}/artifacts")
foreach(part seeds regressions)
  if(IS_DIRECTORY "${CORPUS}/${part}")
    file(GLOB inputs "${CORPUS}/${part}/*")
    list(FILTER inputs EXCLUDE REGEX "/README[^/]*$")
    if(inputs)
      file(COPY ${inputs} DESTINATION "${WORK_DIR}/corpus")
    endif()
  endif()
endforeach()
set(ENV{UBSAN_OPTIONS} "print_stacktrace=1")
execute_process(
  COMMAND "${FUZZER}" -max_total_time=${SECONDS} -timeout=10 -print_final_stats=1
          "-artifact_prefix=${WORK_DIR}/artifacts/" "${WORK_DIR}/corpus"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} found a failure (exit ${rc}); the input is in ${WORK_DIR}/artifacts/. "
                      "Fix the parser, then add the input to ${CORPUS}/regressions/ (tests/fuzz/README.md).")
endif()
