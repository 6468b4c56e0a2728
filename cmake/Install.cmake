# `cmake --install` and `cpack -G DEB`: the binary, its man page and its shell completions, all
# generated from the built binary itself (help2man, `venvtx completion SHELL`), so they never
# drift from the CLI.
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
                     DEPENDS venvtx "${CMAKE_SOURCE_DIR}/scripts/manpage.sh" COMMENT "Generating the man page")
  list(APPEND generated_files "${generated}/venvtx.1")
  install(FILES "${generated}/venvtx.1" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
else()
  message(STATUS "help2man not found: no man page (scripts/setup.sh installs it)")
endif()
add_custom_target(venvtx_docs ALL DEPENDS ${generated_files})

install(TARGETS venvtx RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(FILES "${generated}/venvtx.bash" DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions"
        RENAME venvtx)
install(FILES "${generated}/_venvtx" DESTINATION "${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions")
install(FILES "${generated}/venvtx.fish" DESTINATION "${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d"
        RENAME venvtx.fish)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME venvtx)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "venvtx maintainers <venvtx@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "every change to a Python venv as a transaction, with a probe and an exact restore")
set(CPACK_PACKAGE_FILE_NAME "venvtx_${PROJECT_VERSION}_amd64")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the linked libraries (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-venv")
include(CPack)
