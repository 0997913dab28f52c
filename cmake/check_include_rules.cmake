# Fails when a file includes across a forbidden edge of the dependency graph:
#   core     -> nothing but the standard library, xxhash and core itself
#   kernels  -> core's header-only set (host_device.h, dtype.h, kv_layout.h, int_math.h,
#               kv_cache_spec.h, check.h, status.h) and kernels itself
#   sim      -> core and sim (never viz or kernels)
#   viz      -> core, sim and viz (never kernels)
# and inside sim/, the layers (sim/run/ and sim/sweep/ headers say why):
#   components (workload scheduler instance cluster replay trace config calibrate report)
#            -> never scenario/, run/ or sweep/: the scenario parses into their config
#               structs, run/ drives them, sweep/ drives run/
#   scenario -> of cluster/, scheduler/ and instance/, only their config headers (*_config.h):
#               it fills their config structs and never needs their implementations
#   run      -> never sweep/ (a sweep is points run one by one)
#   sweep    -> never a simulation (cluster/, the engine, instance/, scheduler/, workload/):
#               it sees points and rows (sim/run/point.h)
# and nlohmann/json.hpp in no header (<nlohmann/json_fwd.hpp> declares what they need).
set(failures "")
function(check_dir dir pattern why)
  file(GLOB_RECURSE files ${ROOT}/${dir}/*.h ${ROOT}/${dir}/*.cc ${ROOT}/${dir}/*.cu ${ROOT}/${dir}/*.cuh)
  foreach(f ${files})
    file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include")
    foreach(l ${lines})
      if(l MATCHES "${pattern}")
        file(RELATIVE_PATH rel ${ROOT} ${f})
        set(failures "${failures}\n  ${rel}: ${l}  (${why})" PARENT_SCOPE)
      endif()
    endforeach()
  endforeach()
endfunction()
# As check_dir, for the includes matching `pattern` that do not also match `allowed`: an
# allow-list where a plain regex would need a negative lookahead.
function(check_dir_except dir pattern allowed why)
  file(GLOB_RECURSE files ${ROOT}/${dir}/*.h ${ROOT}/${dir}/*.cc)
  foreach(f ${files})
    file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include")
    foreach(l ${lines})
      if(l MATCHES "${pattern}" AND NOT l MATCHES "${allowed}")
        file(RELATIVE_PATH rel ${ROOT} ${f})
        set(failures "${failures}\n  ${rel}: ${l}  (${why})" PARENT_SCOPE)
      endif()
    endforeach()
  endforeach()
endfunction()
check_dir(core "[<\"](sim|viz|kernels|apps)/|yaml-cpp|imgui|GLFW|cuda_runtime|spdlog|CLI/|nlohmann|fmt/" "core is the standard library only")
check_dir(sim "[<\"](viz|kernels)/|imgui|GLFW" "sim may use core only")
check_dir(viz "[<\"]kernels/" "viz never depends on kernels")
check_dir(kernels "[<\"](sim|viz|apps)/|yaml-cpp|imgui" "kernels see core's header-only set only")
check_dir(kernels "[<\"]core/(page_planner|model_spec|block_pool|kv_cache_manager|block_hash|cost_model|large_array|free_block_queue|block_eviction_policy|kv_group)" "kernels see core's header-only set only")
foreach(comp workload scheduler instance cluster replay trace config calibrate report)
  check_dir(sim/${comp} "[<\"]sim/(scenario|run|sweep)/"
            "a component never includes the layers that parse, run or sweep it")
endforeach()
check_dir_except(sim/scenario "[<\"]sim/(cluster|scheduler|instance)/" "[<\"]sim/[a-z_]+/[a-z_]*_config\\.h"
                 "the parser fills the components' config structs and includes their config headers only")
check_dir(sim/run "[<\"]sim/sweep/" "run is below sweep")
check_dir(sim/sweep "[<\"]sim/(cluster|instance|scheduler|workload)/|[<\"]sim/engine"
          "the sweep sees points and rows (sim/run/point.h), never a simulation")
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
