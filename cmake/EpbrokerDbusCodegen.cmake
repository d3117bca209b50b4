# Generates sdbus-c++ adaptor and proxy headers from dbus/org.epbroker.*.xml (and
# the daemon's adaptor of dbus/org.freedesktop.LogControl1.xml) at
# build time (never edited by hand, never committed). Consumers link the
# INTERFACE target epbroker_dbus_generated and include
#   "generated/dbus/<Interface>_adaptor.h" or "generated/dbus/<Interface>_proxy.h".
find_package(sdbus-c++ 1.2 REQUIRED)
find_package(sdbus-c++-tools REQUIRED)

set(_gen_dir ${CMAKE_BINARY_DIR}/generated/dbus)
set(_gen_headers)
foreach(iface Broker1 Job1 Session1)
  set(_xml ${PROJECT_SOURCE_DIR}/dbus/org.epbroker.${iface}.xml)
  set(_adaptor ${_gen_dir}/${iface}_adaptor.h)
  set(_proxy ${_gen_dir}/${iface}_proxy.h)
  add_custom_command(
    OUTPUT ${_adaptor} ${_proxy}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_gen_dir}
    COMMAND SDBusCpp::sdbus-c++-xml2cpp --adaptor=${_adaptor} --proxy=${_proxy} ${_xml}
    DEPENDS ${_xml}
    COMMENT "sdbus-c++-xml2cpp org.epbroker.${iface}.xml"
    VERBATIM)
  list(APPEND _gen_headers ${_adaptor} ${_proxy})
endforeach()
# systemd's org.freedesktop.LogControl1, served by the daemon (adaptor only).
set(_xml ${PROJECT_SOURCE_DIR}/dbus/org.freedesktop.LogControl1.xml)
set(_adaptor ${_gen_dir}/LogControl1_adaptor.h)
add_custom_command(
  OUTPUT ${_adaptor}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${_gen_dir}
  COMMAND SDBusCpp::sdbus-c++-xml2cpp --adaptor=${_adaptor} ${_xml}
  DEPENDS ${_xml}
  COMMENT "sdbus-c++-xml2cpp org.freedesktop.LogControl1.xml"
  VERBATIM)
list(APPEND _gen_headers ${_adaptor})
add_custom_target(epbroker_dbus_codegen DEPENDS ${_gen_headers})

add_library(epbroker_dbus_generated INTERFACE)
add_dependencies(epbroker_dbus_generated epbroker_dbus_codegen)
# SYSTEM: generated code is not held to our warning flags.
target_include_directories(epbroker_dbus_generated SYSTEM INTERFACE ${CMAKE_BINARY_DIR})
target_link_libraries(epbroker_dbus_generated INTERFACE SDBusCpp::sdbus-c++)
unset(_gen_dir)
unset(_gen_headers)
