# Helpers for c-tests/: each test folder's CMakeLists.txt registers its
# programs with one call, e.g.
#
#   uct_add_c_test(rc_put SOURCES put.c LABELS rc ARGS --size 4096)
#
# builds `rc_put` from put.c against our headers and the build-tree library
# (uct::uct) and registers it with CTest under the label `rc`.

set(UCT_TEST_DEFAULT_TIMEOUT 300 CACHE STRING "CTest timeout (s) of a C test that sets none")

# Warnings every C test is built with; programs built against the system's
# UCX headers use them without -Werror (those headers are not ours to fix).
set(UCT_C_TEST_WARNINGS -Wall -Wextra)

# uct_add_c_program(<name> SOURCES <file>... [LINK <library>...] [AGAINST_SYSTEM_UCX])
# Builds a C program against our headers and the build-tree library
# (uct::uct, with -Werror), or with AGAINST_SYSTEM_UCX against the system's
# UCX headers and its libuct/libucs (UCX_SYSTEM_* from c-tests/CMakeLists.txt),
# the way existing UCX binaries were built.
function(uct_add_c_program name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "AGAINST_SYSTEM_UCX" "" "SOURCES;LINK")
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "uct_add_c_program(${name}): SOURCES is required")
  endif()
  add_executable(${name} ${arg_SOURCES})
  target_compile_options(${name} PRIVATE ${UCT_C_TEST_WARNINGS})
  set_target_properties(${name} PROPERTIES C_STANDARD 99 C_EXTENSIONS ON)
  if(arg_AGAINST_SYSTEM_UCX)
    if(NOT UCX_SYSTEM_FOUND)
      message(FATAL_ERROR "uct_add_c_program(${name}): the system's UCX was not found")
    endif()
    target_include_directories(${name} PRIVATE "${UCX_SYSTEM_INCLUDE_DIR}")
    target_link_libraries(${name} PRIVATE "${UCX_SYSTEM_UCT_LIBRARY}" "${UCX_SYSTEM_UCS_LIBRARY}")
  else()
    target_compile_options(${name} PRIVATE -Werror)
    target_link_libraries(${name} PRIVATE uct::uct)
  endif()
  target_link_libraries(${name} PRIVATE ${arg_LINK})
endfunction()

# uct_add_c_test(<name> SOURCES <file>...
#                [LABELS <label>...] [ARGS <arg>...] [ENVIRONMENT <VAR=value>...]
#                [LINK <library>...] [FIXTURES <fixture>...] [TIMEOUT <seconds>]
#                [AGAINST_SYSTEM_UCX])
# uct_add_c_program() plus one test running it.
function(uct_add_c_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "AGAINST_SYSTEM_UCX" "TIMEOUT"
                        "SOURCES;LABELS;ARGS;ENVIRONMENT;LINK;FIXTURES")
  set(system_flag)
  if(arg_AGAINST_SYSTEM_UCX)
    set(system_flag AGAINST_SYSTEM_UCX)
  endif()
  uct_add_c_program(${name} SOURCES ${arg_SOURCES} LINK ${arg_LINK} ${system_flag})
  uct_register_test(${name} COMMAND $<TARGET_FILE:${name}> ${arg_ARGS}
                    LABELS ${arg_LABELS} ENVIRONMENT ${arg_ENVIRONMENT}
                    FIXTURES ${arg_FIXTURES} TIMEOUT ${arg_TIMEOUT})
endfunction()

# uct_register_test(<name> COMMAND <cmd> <arg>... [LABELS ...] [ENVIRONMENT ...]
#                   [FIXTURES <required fixture>...] [TIMEOUT <seconds>])
# add_test() plus the properties every test here sets.
function(uct_register_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TIMEOUT" "COMMAND;LABELS;ENVIRONMENT;FIXTURES")
  add_test(NAME ${name} COMMAND ${arg_COMMAND})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT ${UCT_TEST_DEFAULT_TIMEOUT})
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${arg_TIMEOUT})
  if(arg_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${arg_LABELS}")
  endif()
  if(arg_ENVIRONMENT)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${arg_ENVIRONMENT}")
  endif()
  if(arg_FIXTURES)
    set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED "${arg_FIXTURES}")
  endif()
endfunction()
