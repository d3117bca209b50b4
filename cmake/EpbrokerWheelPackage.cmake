# epbroker_wheel_package(NAME LABEL VERSION): packs the stage a vendor wheel
# recipe (ep-packages/NAME/recipe.sh, run by scripts/bootstrap.sh) made in the
# cache into ${CMAKE_BINARY_DIR}/ep-packages/NAME/NAME-VERSION.tar.zst with
# epbroker-publish, as target NAME-package; its path goes to the cache variable
# EPBROKER_<NAME>_PACKAGE for the tests (empty when there is nothing to pack).
# Call it from ep-packages/NAME (ep.json is read from there). Re-run cmake after
# the first bootstrap: the stage must exist at configure time.
function(epbroker_wheel_package name label version)
  string(TOUPPER "${name}" upper)
  if(DEFINED ENV{EPBROKER_CACHE} AND NOT "$ENV{EPBROKER_CACHE}" STREQUAL "")
    set(_ep_cache "$ENV{EPBROKER_CACHE}")
  else()
    set(_ep_cache "$ENV{HOME}/.cache/epbroker")
  endif()
  set(EPBROKER_${upper}_STAGE "${_ep_cache}/ep-packages/${name}/stage"
      CACHE PATH "${label} EP package stage made by ep-packages/${name}/recipe.sh")
  unset(_ep_cache)

  # recipe.sh writes <stage>.stamp once the stage is complete, and rewrites it (only)
  # when it rebuilds the stage: that is what a repack depends on.
  set(_ep_stamp "${EPBROKER_${upper}_STAGE}.stamp")
  set(_ep_output "${CMAKE_BINARY_DIR}/ep-packages/${name}/${name}-${version}.tar.zst")
  if(TARGET epbroker-publish AND IS_DIRECTORY "${EPBROKER_${upper}_STAGE}" AND EXISTS "${_ep_stamp}")
    add_custom_command(
      OUTPUT "${_ep_output}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${CMAKE_CURRENT_BINARY_DIR}"
      COMMAND $<TARGET_FILE:epbroker-publish> pack --dir "${EPBROKER_${upper}_STAGE}"
              --metadata "${CMAKE_CURRENT_SOURCE_DIR}/ep.json" --output "${_ep_output}"
      DEPENDS epbroker-publish "${CMAKE_CURRENT_SOURCE_DIR}/ep.json" "${_ep_stamp}"
      COMMENT "Packing the ${label} EP package ${name}-${version}.tar.zst"
      VERBATIM)
    add_custom_target(${name}-package ALL DEPENDS "${_ep_output}")
    set(EPBROKER_${upper}_PACKAGE "${_ep_output}" CACHE INTERNAL "${label} EP package (.tar.zst)")
  else()
    if(NOT TARGET epbroker-publish)
      message(STATUS "${label} EP package: not packed (no epbroker-publish target)")
    else()
      message(STATUS "${label} EP package: not packed (no stage at ${EPBROKER_${upper}_STAGE}; "
                     "run scripts/bootstrap.sh, then cmake again)")
    endif()
    set(EPBROKER_${upper}_PACKAGE "" CACHE INTERNAL "${label} EP package (.tar.zst)")
  endif()
  unset(_ep_stamp)
  unset(_ep_output)
endfunction()
