# Fails when a file includes across a forbidden edge of the dependency graph:
#   core     -> nothing but the standard library, xxhash and core itself
#   kernels  -> core's header-only set (host_device.h, dtype.h, kv_layout.h, int_math.h,
#               kv_cache_spec.h, check.h, status.h) and kernels itself
#   sim      -> core and sim (never viz or kernels)
#   viz      -> core, sim and viz (never kernels)
# and inside sim/, the layers (sim/run/ and sim/sweep/ headers say why):
#   components (workload scheduler instance pool cluster replay trace config calibrate report)
#            -> never scenario/, run/ or sweep/: the scenario parses into their config
#               structs, run/ drives them, sweep/ drives run/
#            -> never the drivers' headers (sim/engine.h, sim/metrics_output.h), nor, but for
#               cluster/ (whose cluster_sim.cc is the P/D driver), sim/instance_builder.h
#            -> but for cluster/ and report/, never the aggregate sim/scenario_config.h: a
#               component reads its own config struct, not the whole Scenario
#   component config headers (sim/<component>/*_config.h)
#            -> of sim/, only other config headers: the aggregate includes them, so they
#               stay leaves that pull no implementation in with them
#   scenario -> of cluster/, scheduler/ and instance/, only their config headers (*_config.h):
#               it fills their config structs and never needs their implementations
#   run      -> never sweep/ (a sweep is points run one by one)
#   sweep    -> never a simulation (cluster/, the engine, instance/, scheduler/, workload/):
#               it sees points and rows (sim/run/point.h)
# and the files directly in sim/, by role:
#   leaf utilities (event, event_queue, csv, labels, strong_id_format, output_file, file_pin,
#            embedded_data, json_text, metrics, trace_export)
#            -> of sim/, only each other: every layer uses them, so they use no layer
#   kv_adapter.h (core's KV manager behind the scheduler's allocator interface)
#            -> of sim/, only the scheduler's interfaces (sim/scheduler/i_*.h) and the leaves
#   scenario_config (the aggregate config)
#            -> of sim/, only sim/config/ and the components' config headers: it sits above
#               the components' configs and below everything that reads a Scenario
#   engine_common (step helpers the instance shares, included by sim/instance/)
#            -> never the aggregate config, scenario/, run/, sweep/ or the drivers: it is
#               part of the instance's floor, which never sees a Scenario
#   drivers and builders (engine, instance_builder, metrics_output)
#            -> never scenario/, run/ or sweep/: run/ drives them with a parsed Scenario
# and nlohmann/json.hpp in no header (<nlohmann/json_fwd.hpp> declares what they need).
#
# Usage: cmake -DROOT=<source tree> -P check_include_rules.cmake. Any ROOT works, a fixture
# tree included (tests/include_rules/ shows that a violation fails and is named).
cmake_minimum_required(VERSION 3.25)  # the project's policies (IN_LIST among them)
set(failures "")
# Adds a failure for each include of a file in `files` that matches `pattern` and, when
# `allowed` is not empty, does not match `allowed` (an allow-list where a plain regex would
# need a negative lookahead).
function(check_files files pattern allowed why)
  foreach(f ${files})
    file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include")
    foreach(l ${lines})
      if(l MATCHES "${pattern}" AND (allowed STREQUAL "" OR NOT l MATCHES "${allowed}"))
        file(RELATIVE_PATH rel ${ROOT} ${f})
        set(failures "${failures}\n  ${rel}: ${l}  (${why})")
      endif()
    endforeach()
  endforeach()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()
# The sources under `dir`, recursively.
function(check_dir dir pattern why)
  file(GLOB_RECURSE files ${ROOT}/${dir}/*.h ${ROOT}/${dir}/*.cc ${ROOT}/${dir}/*.cu ${ROOT}/${dir}/*.cuh)
  check_files("${files}" "${pattern}" "" "${why}")
  set(failures "${failures}" PARENT_SCOPE)
endfunction()
function(check_dir_except dir pattern allowed why)
  file(GLOB_RECURSE files ${ROOT}/${dir}/*.h ${ROOT}/${dir}/*.cc)
  check_files("${files}" "${pattern}" "${allowed}" "${why}")
  set(failures "${failures}" PARENT_SCOPE)
endfunction()
# The files directly in sim/ whose stem (name without .h/.cc) is one of ARGN.
function(top_level_sim out)
  set(files "")
  foreach(stem ${ARGN})
    file(GLOB found ${ROOT}/sim/${stem}.h ${ROOT}/sim/${stem}.cc)
    list(APPEND files ${found})
  endforeach()
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

check_dir(core "[<\"](sim|viz|kernels|apps)/|yaml-cpp|imgui|GLFW|cuda_runtime|spdlog|CLI/|nlohmann|fmt/" "core is the standard library only")
check_dir(sim "[<\"](viz|kernels)/|imgui|GLFW" "sim may use core only")
check_dir(viz "[<\"]kernels/" "viz never depends on kernels")
check_dir(kernels "[<\"](sim|viz|apps)/|yaml-cpp|imgui" "kernels see core's header-only set only")
check_dir(kernels "[<\"]core/(page_planner|model_spec|block_pool|kv_cache_manager|block_hash|cost_model|large_array|free_block_queue|block_eviction_policy|kv_group)" "kernels see core's header-only set only")

# sim/'s component folders.
set(components workload scheduler instance pool cluster replay trace config calibrate report)
foreach(comp ${components})
  check_dir(sim/${comp} "[<\"]sim/(scenario|run|sweep)/"
            "a component never includes the layers that parse, run or sweep it")
  check_dir(sim/${comp} "[<\"]sim/(engine|metrics_output)\\.h"
            "a component never includes a driver: the drivers stand above the components")
  if(NOT comp STREQUAL "cluster")
    check_dir(sim/${comp} "[<\"]sim/instance_builder\\.h"
              "a component never includes the builder: drivers build instances from a Scenario")
  endif()
  if(NOT comp MATCHES "^(cluster|report)$")
    check_dir(sim/${comp} "[<\"]sim/scenario_config\\.h"
              "a component reads its own config struct, never the whole Scenario")
  endif()
endforeach()
string(REPLACE ";" "|" component_names "${components}")
set(config_header_include "[<\"]sim/(${component_names})/[a-z_]*_config\\.h")
set(component_configs "")
foreach(comp ${components})
  file(GLOB found ${ROOT}/sim/${comp}/*_config.h)
  list(APPEND component_configs ${found})
endforeach()
check_files("${component_configs}" "[<\"]sim/" "${config_header_include}"
            "a component's config header is a leaf: of sim/, it includes only other config headers")
check_dir_except(sim/scenario "[<\"]sim/(cluster|scheduler|instance)/" "${config_header_include}"
                 "the parser fills the components' config structs and includes their config headers only")
check_dir(sim/run "[<\"]sim/sweep/" "run is below sweep")
check_dir(sim/sweep "[<\"]sim/(cluster|instance|scheduler|workload)/|[<\"]sim/engine"
          "the sweep sees points and rows (sim/run/point.h), never a simulation")

# The files directly in sim/, by role. A file directly in sim/ that is in none of these
# lists is reported too, so that a new one is given a role.
set(leaf_utilities event event_queue csv labels strong_id_format output_file file_pin
    embedded_data json_text metrics trace_export)
set(adapters kv_adapter)
set(aggregate_config scenario_config)
set(instance_helpers engine_common)
set(drivers engine instance_builder metrics_output)
string(REPLACE ";" "|" leaf_names "${leaf_utilities}")
set(leaf_include "[<\"]sim/(${leaf_names})\\.h")
top_level_sim(files ${leaf_utilities})
check_files("${files}" "[<\"]sim/" "${leaf_include}"
            "a leaf utility includes only other leaf utilities of sim/: every layer uses it")
top_level_sim(files ${adapters})
check_files("${files}" "[<\"]sim/" "${leaf_include}|[<\"]sim/scheduler/i_[a-z_]+\\.h"
            "the adapter sees only the scheduler's interfaces and the leaf utilities")
top_level_sim(files ${aggregate_config})
check_files("${files}" "[<\"]sim/"
            "[<\"]sim/scenario_config\\.h|[<\"]sim/config/|${config_header_include}"
            "the aggregate config includes the components' config headers only")
top_level_sim(files ${instance_helpers})
check_files("${files}"
            "[<\"]sim/(scenario|run|sweep)/|[<\"]sim/(scenario_config|engine|instance_builder|metrics_output)\\.h"
            "" "the instance's helpers never see the Scenario, its parser or a driver")
top_level_sim(files ${drivers})
check_files("${files}" "[<\"]sim/(scenario|run|sweep)/" ""
            "a driver runs a parsed Scenario: it never includes the parser, run/ or sweep/")
file(GLOB top_level ${ROOT}/sim/*.h ${ROOT}/sim/*.cc)
foreach(f ${top_level})
  get_filename_component(stem ${f} NAME_WE)
  if(NOT stem IN_LIST leaf_utilities AND NOT stem IN_LIST adapters
     AND NOT stem IN_LIST aggregate_config AND NOT stem IN_LIST instance_helpers
     AND NOT stem IN_LIST drivers)
    file(RELATIVE_PATH rel ${ROOT} ${f})
    set(failures "${failures}\n  ${rel}: has no role in cmake/check_include_rules.cmake (give it one)")
  endif()
endforeach()

file(GLOB_RECURSE headers ${ROOT}/core/*.h ${ROOT}/sim/*.h ${ROOT}/viz/*.h ${ROOT}/apps/*.h
     ${ROOT}/kernels/*.h)
foreach(f ${headers})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]nlohmann/json.hpp")
  if(lines)
    file(RELATIVE_PATH rel ${ROOT} ${f})
    set(failures "${failures}\n  ${rel}: includes nlohmann/json.hpp (a header takes <nlohmann/json_fwd.hpp>)")
  endif()
endforeach()
# yaml-cpp stays inside the scenario loader
file(GLOB_RECURSE simfiles ${ROOT}/sim/*.h ${ROOT}/sim/*.cc)
foreach(f ${simfiles})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]yaml-cpp")
  if(lines AND NOT f MATCHES "config_yaml.cc$")
    file(RELATIVE_PATH rel ${ROOT} ${f})
    set(failures "${failures}\n  ${rel}: includes yaml-cpp (only sim/config/config_yaml.cc may)")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "forbidden includes:${failures}")
endif()
message(STATUS "include rules hold")
