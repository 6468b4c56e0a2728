# `cmake --install` and `cpack -G DEB`: the binary, its man page and its shell completions, all
# generated from the built binary itself (help2man, `venvtx completion SHELL`), so they never
# drift from the CLI. The generated files install where they were built (OPTIONAL): right after
# a build of the binary alone, `cmake --install` installs the binary.
include(GNUInstallDirs)

set(generated "${CMAKE_BINARY_DIR}/share")
set(completions bash "${generated}/venvtx.bash" zsh "${generated}/_venvtx" fish "${generated}/venvtx.fish")
set(generated_files)
while(completions)
  list(POP_FRONT completions shell file)
  add_custom_command(OUTPUT "${file}"
                     COMMAND ${CMAKE_COMMAND} -E make_directory "${generated}"
                     COMMAND venvtx completion ${shell} > "${file}"
                     DEPENDS venvtx COMMENT "Generating the ${shell} completion")
  list(APPEND generated_files "${file}")
endwhile()

find_program(HELP2MAN help2man)
if(HELP2MAN)
  add_custom_command(OUTPUT "${generated}/venvtx.1"
                     COMMAND ${CMAKE_COMMAND} -E make_directory "${generated}"
                     COMMAND bash "${CMAKE_SOURCE_DIR}/scripts/manpage.sh" $<TARGET_FILE:venvtx> "${generated}/venvtx.1"
                     COMMAND gzip -9n -c "${generated}/venvtx.1" > "${generated}/venvtx.1.gz"
                     BYPRODUCTS "${generated}/venvtx.1.gz"
                     DEPENDS venvtx "${CMAKE_SOURCE_DIR}/scripts/manpage.sh" COMMENT "Generating the man page")
  list(APPEND generated_files "${generated}/venvtx.1")
  install(FILES "${generated}/venvtx.1.gz" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1" OPTIONAL)
else()
  message(STATUS "help2man not found: no man page (scripts/setup.sh installs it)")
endif()

# Debian's copyright and a compressed changelog, where lintian looks for them.
add_custom_command(OUTPUT "${generated}/changelog.gz"
                   COMMAND ${CMAKE_COMMAND} -E make_directory "${generated}"
                   COMMAND gzip -9n -c "${CMAKE_SOURCE_DIR}/cmake/debian/changelog" > "${generated}/changelog.gz"
                   DEPENDS "${CMAKE_SOURCE_DIR}/cmake/debian/changelog")
list(APPEND generated_files "${generated}/changelog.gz")
add_custom_target(venvtx_docs ALL DEPENDS ${generated_files})

install(TARGETS venvtx RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(FILES "${generated}/venvtx.bash" DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions"
        RENAME venvtx OPTIONAL)
install(FILES "${generated}/_venvtx" DESTINATION "${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions" OPTIONAL)
install(FILES "${generated}/venvtx.fish" DESTINATION "${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d"
        RENAME venvtx.fish OPTIONAL)
install(FILES "${CMAKE_SOURCE_DIR}/cmake/debian/copyright" "${generated}/changelog.gz"
        DESTINATION "${CMAKE_INSTALL_DOCDIR}" OPTIONAL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME venvtx)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "venvtx maintainers <maintainers@venvtx.dev>")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "Python venv changes as probed transactions with exact restore
 venvtx makes every change to a Python virtual environment (remove, install,
 any command) a transaction: it keeps the files the change touches, makes the
 change, probes the result (such as `import torch` on every GPU) and, when the
 probe fails, puts back the exact prior bytes. It says before a removal which
 shared libraries would lose their last provider, keeps a history of the
 venv's states, and rolls back any transaction.")
set(CPACK_PACKAGE_FILE_NAME "venvtx_${PROJECT_VERSION}_amd64")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the linked libraries (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-venv")
include(CPack)
