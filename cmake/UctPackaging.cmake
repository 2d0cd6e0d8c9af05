# Install rules for what UCX users look up: pkg-config files and the CMake
# package (find_package(UCX)). Both work from any install prefix, including
# one chosen at install time with `cmake --install --prefix`.

# "${prefix}/<dir>" for a relative GNUInstallDirs value, else the absolute dir.
function(_uct_prefixed_dir out_var prefix_ref dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out_var} "${dir}" PARENT_SCOPE)
  else()
    set(${out_var} "${prefix_ref}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

# ucx-uct.pc and ucx-ucs.pc are written at install time, when the real prefix
# is known, then installed like any other file.
function(uct_install_pkgconfig_files)
  set(generated_dir "${CMAKE_BINARY_DIR}/pkgconfig-install")
  _uct_prefixed_dir(pc_libdir "\${prefix}" "${CMAKE_INSTALL_LIBDIR}")
  _uct_prefixed_dir(pc_bindir "\${prefix}" "${CMAKE_INSTALL_BINDIR}")
  _uct_prefixed_dir(pc_includedir "\${prefix}" "${CMAKE_INSTALL_INCLUDEDIR}")
  foreach(module IN ITEMS ucx-uct ucx-ucs)
    set(template "${PROJECT_SOURCE_DIR}/pkgconfig/${module}.pc.in")
    set(generated "${generated_dir}/${module}.pc")
    install(CODE "
      set(UCX_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
      set(UCX_PC_LIBDIR [[${pc_libdir}]])
      set(UCX_PC_BINDIR [[${pc_bindir}]])
      set(UCX_PC_INCLUDEDIR [[${pc_includedir}]])
      set(UCX_COMPAT_VERSION [[${UCX_COMPAT_VERSION}]])
      configure_file([[${template}]] [[${generated}]] @ONLY)
    ")
    install(FILES "${generated}" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  endforeach()
endfunction()

# <libdir>/cmake/ucx/ucx-config.cmake (+ version file), where UCX puts its own.
function(uct_install_cmake_package)
  set(config_install_dir "${CMAKE_INSTALL_LIBDIR}/cmake/ucx")
  if(IS_ABSOLUTE "${config_install_dir}")
    file(RELATIVE_PATH UCX_CMAKE_PREFIX_FROM_CONFIG "${config_install_dir}" "${CMAKE_INSTALL_PREFIX}")
  else()
    # How many levels up the prefix is from the installed config file.
    file(RELATIVE_PATH UCX_CMAKE_PREFIX_FROM_CONFIG "/prefix/${config_install_dir}" "/prefix")
  endif()
  _uct_prefixed_dir(UCX_CMAKE_LIBDIR "\${_ucx_prefix}" "${CMAKE_INSTALL_LIBDIR}")
  _uct_prefixed_dir(UCX_CMAKE_INCLUDEDIR "\${_ucx_prefix}" "${CMAKE_INSTALL_INCLUDEDIR}")

  set(generated_dir "${CMAKE_BINARY_DIR}/cmake-package")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/ucx-config.cmake.in"
                 "${generated_dir}/ucx-config.cmake" @ONLY)
  write_basic_package_version_file("${generated_dir}/ucx-config-version.cmake"
                                   VERSION "${UCX_COMPAT_VERSION}"
                                   COMPATIBILITY SameMajorVersion)
  install(FILES "${generated_dir}/ucx-config.cmake"
                "${generated_dir}/ucx-config-version.cmake"
          DESTINATION "${config_install_dir}")
endfunction()

# uct_install_program(<target>): installs a program into bin/ with an RPATH
# that finds the library in the same installed tree, wherever it is moved.
function(uct_install_program target)
  file(RELATIVE_PATH lib_from_bin "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN/${lib_from_bin}")
  install(TARGETS ${target} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endfunction()
