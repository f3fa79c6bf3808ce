# ctest capi.cmake_consumer: installs the build into WORK/prefix, then configures, builds and
# runs the consumer project against it with find_package(fp4jit).
#   cmake -DBUILD=<fp4jit build> -DSOURCE=<this folder> -DWORK=<scratch> -DGENERATOR=<gen> -P ...
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix)
foreach(f lib/libfp4jit.so include/fp4jit/fp4jit.h bin/fp4jit lib/cmake/fp4jit/fp4jitConfig.cmake
          lib/cmake/fp4jit/fp4jitConfigVersion.cmake)
  if(NOT EXISTS ${WORK}/prefix/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
run(${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK}/prefix
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/consumer)
