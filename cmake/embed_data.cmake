# kvsim_embed_files(OUT_CC NAMESPACE_VAR FILES...): generates a .cc that defines
#   const std::vector<kvsim::EmbeddedFile>& kvsim::EmbeddedDataFiles();
# holding each file's repository-relative path and contents, so the binaries work from any
# directory. The files stay the source of truth; the generated file is rebuilt when they change.
function(kvsim_embed_files out_cc)
  set(files ${ARGN})
  add_custom_command(
    OUTPUT ${out_cc}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_cc} -DROOT=${PROJECT_SOURCE_DIR}
            "-DFILES=${files}" -P ${PROJECT_SOURCE_DIR}/cmake/embed_data_gen.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/embed_data_gen.cmake
    COMMENT "Embedding ${CMAKE_CURRENT_LIST_DIR} data files"
    VERBATIM)
endfunction()
