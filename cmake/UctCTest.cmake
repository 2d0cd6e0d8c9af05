# Helpers for c-tests/: each test folder's CMakeLists.txt registers its
# programs with one call, e.g.
#
#   uct_add_c_test(rc_put SOURCES put.c LABELS rc ARGS --size 4096)
#
# builds `rc_put` from put.c against our headers and the build-tree library
# (uct::uct) and registers it with CTest under the label `rc`.

set(UCT_TEST_DEFAULT_TIMEOUT 300 CACHE STRING "CTest timeout (s) of a C test that sets none")

# Warnings every C test is built with; tests built against foreign headers
# (Debian's UCX) use them without -Werror.
set(UCT_C_TEST_WARNINGS -Wall -Wextra)

# uct_add_c_test(<name> SOURCES <file>...
#                [LABELS <label>...] [ARGS <arg>...] [ENVIRONMENT <VAR=value>...]
#                [LINK <library>...] [FIXTURES <fixture>...] [TIMEOUT <seconds>]
#                [NO_UCT_LINK])
# NO_UCT_LINK builds the program without our headers and library (the caller
# adds its own, e.g. Debian's UCX); the test still runs it like the others.
function(uct_add_c_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_UCT_LINK" "TIMEOUT"
                        "SOURCES;LABELS;ARGS;ENVIRONMENT;LINK;FIXTURES")
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "uct_add_c_test(${name}): SOURCES is required")
  endif()
  add_executable(${name} ${arg_SOURCES})
  target_compile_options(${name} PRIVATE ${UCT_C_TEST_WARNINGS})
  set_target_properties(${name} PROPERTIES C_STANDARD 99 C_EXTENSIONS ON)
  if(NOT arg_NO_UCT_LINK)
    target_compile_options(${name} PRIVATE -Werror)
    target_link_libraries(${name} PRIVATE uct::uct)
  endif()
  target_link_libraries(${name} PRIVATE ${arg_LINK})
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
