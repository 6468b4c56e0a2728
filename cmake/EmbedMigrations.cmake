# Generates a C++ source holding every migrations/NNNN_name.sql, in order, so the binary
# carries its schema with it. Run as: cmake -DSOURCE_DIR=... -DOUTPUT=... -P EmbedMigrations.cmake
file(GLOB migration_files "${SOURCE_DIR}/migrations/[0-9][0-9][0-9][0-9]_*.sql")
list(SORT migration_files)
set(body "")
foreach(file IN LISTS migration_files)
  get_filename_component(name "${file}" NAME_WE)
  string(SUBSTRING "${name}" 0 4 number)
  math(EXPR version "${number}")
  file(READ "${file}" sql)
  string(APPEND body "    {${version}, \"${name}\", R\"venvtx_sql(${sql})venvtx_sql\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp"
"// Generated from migrations/*.sql by cmake/EmbedMigrations.cmake. Do not edit.\n"
"#include \"venvtx/store/migrations.hpp\"\n\n"
"namespace venvtx {\n\n"
"namespace {\nconst Migration k_all[] = {\n${body}};\n}\n\n"
"const std::span<const Migration> k_migrations(k_all);\n\n"
"} // namespace venvtx\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${OUTPUT}.tmp")
