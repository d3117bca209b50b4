# Where the files read by systemd, dbus-daemon, polkitd and bash-completion are
# installed. They are not "our" files under CMAKE_INSTALL_PREFIX: each of those
# programs reads a fixed list of directories, so the defaults come from the
# programs' own pkg-config variables (or, where a .pc file is not installed, the
# fixed FHS path Debian uses), and are absolute: `cmake --install --prefix X`
# never moves them where nobody reads them.
#
# Each is a cache variable (absolute, or relative to the prefix for staged
# installs into a scratch tree). After the defaults are set, every directory is
# checked against the list its reader searches; one outside that list warns at
# configure time, naming the reader, since the install would silently do nothing.
#
#   EPBROKER_SYSTEMD_UNITDIR     systemd   systemdsystemunitdir  (bookworm: /lib/systemd/system)
#   EPBROKER_SYSUSERSDIR         systemd   sysusersdir           (/usr/lib/sysusers.d)
#   EPBROKER_TMPFILESDIR         systemd   tmpfilesdir           (/usr/lib/tmpfiles.d)
#   EPBROKER_CATALOGDIR          systemd   catalogdir            (/usr/lib/systemd/catalog)
#   EPBROKER_DBUS_SYSTEM_SERVICESDIR dbus-1 system_bus_services_dir (/usr/share/dbus-1/system-services)
#   EPBROKER_DBUS_SYSTEM_CONFDIR dbus-1    datadir/dbus-1/system.d (/usr/share/dbus-1/system.d)
#   EPBROKER_DBUS_INTERFACESDIR  dbus-1    interfaces_dir        (/usr/share/dbus-1/interfaces)
#   EPBROKER_POLKIT_ACTIONDIR    polkit-gobject-1 policydir      (/usr/share/polkit-1/actions)
#   EPBROKER_BASH_COMPLETIONSDIR bash-completion completionsdir  (/usr/share/bash-completion/completions)
include_guard(GLOBAL)
find_package(PkgConfig REQUIRED)

# _epbroker_pc_dir(VAR MODULE PCVAR FALLBACK DOC [OLD_DEFAULT]): VAR's default
# from `pkg-config --variable=PCVAR MODULE`, else FALLBACK. A build directory
# configured before these defaults (its cache still has EPBROKER_DBUS_DATADIR,
# a variable of that time) has OLD_DEFAULT, relative to the prefix: that value
# is replaced, any other one the user set is kept.
function(_epbroker_pc_dir var module pcvar fallback doc)
  set(_value "${fallback}")
  pkg_get_variable(_pc ${module} ${pcvar})
  if(_pc)
    set(_value "${_pc}")
  endif()
  set(_force)
  if(ARGC GREATER 5 AND DEFINED CACHE{EPBROKER_DBUS_DATADIR} AND "$CACHE{${var}}" STREQUAL "${ARGV5}")
    set(_force FORCE)
  endif()
  set(${var} "${_value}" CACHE STRING "${doc} (absolute, or relative to the prefix)" ${_force})
endfunction()

_epbroker_pc_dir(EPBROKER_SYSTEMD_UNITDIR systemd systemdsystemunitdir /usr/lib/systemd/system
                 "Where systemd units are installed" lib/systemd/system)
_epbroker_pc_dir(EPBROKER_SYSUSERSDIR systemd sysusersdir /usr/lib/sysusers.d
                 "Where the sysusers.d file is installed" lib/sysusers.d)
_epbroker_pc_dir(EPBROKER_TMPFILESDIR systemd tmpfilesdir /usr/lib/tmpfiles.d
                 "Where the tmpfiles.d file is installed" lib/tmpfiles.d)
_epbroker_pc_dir(EPBROKER_CATALOGDIR systemd catalogdir /usr/lib/systemd/catalog
                 "Where the journal message catalog is installed")
_epbroker_pc_dir(EPBROKER_DBUS_SYSTEM_SERVICESDIR dbus-1 system_bus_services_dir
                 /usr/share/dbus-1/system-services "Where the D-Bus activation file is installed")
pkg_get_variable(_epbroker_dbus_datadir dbus-1 datadir)
if(_epbroker_dbus_datadir)
  set(_epbroker_dbus_confdir "${_epbroker_dbus_datadir}/dbus-1/system.d")
else()
  set(_epbroker_dbus_confdir /usr/share/dbus-1/system.d)
endif()
set(EPBROKER_DBUS_SYSTEM_CONFDIR "${_epbroker_dbus_confdir}" CACHE STRING
    "Where the system bus policy is installed (absolute, or relative to the prefix)")
_epbroker_pc_dir(EPBROKER_DBUS_INTERFACESDIR dbus-1 interfaces_dir /usr/share/dbus-1/interfaces
                 "Where the introspection XML is installed")
_epbroker_pc_dir(EPBROKER_POLKIT_ACTIONDIR polkit-gobject-1 policydir /usr/share/polkit-1/actions
                 "Where the polkit actions are installed" share/polkit-1/actions)
_epbroker_pc_dir(EPBROKER_BASH_COMPLETIONSDIR bash-completion completionsdir
                 /usr/share/bash-completion/completions "Where bash completions are installed")
unset(EPBROKER_DBUS_DATADIR CACHE)

# _epbroker_check_read(VAR READER DIR...): warns when VAR (made absolute against the
# prefix) is none of the DIRs READER searches. Relative values are staged
# installs by design (a packager's DESTDIR-like tree), so they are checked too:
# with the default prefix they land under /usr/local, which most readers ignore.
function(_epbroker_check_read var reader)
  set(_dir "${${var}}")
  if(NOT IS_ABSOLUTE "${_dir}")
    set(_dir "${CMAKE_INSTALL_PREFIX}/${_dir}")
  endif()
  cmake_path(NORMAL_PATH _dir)
  string(REGEX REPLACE "/$" "" _dir "${_dir}")
  foreach(_read IN LISTS ARGN)
    if(_dir STREQUAL _read)
      return()
    endif()
  endforeach()
  string(REPLACE ";" ", " _list "${ARGN}")
  message(WARNING "${var} is ${_dir}, where ${reader} does not look (it reads ${_list}): "
                  "installed there, the file has no effect. Leave ${var} at its default, or "
                  "set it to one of those.")
endfunction()

# The readers' search paths (systemd.unit(5), sysusers.d(5), tmpfiles.d(5),
# dbus-daemon(1) for the system bus, polkit(8)). /lib and /usr/lib are both read
# by systemd on Debian (merged /usr or the compatibility paths).
_epbroker_check_read(EPBROKER_SYSTEMD_UNITDIR systemd /etc/systemd/system /run/systemd/system
                     /usr/local/lib/systemd/system /lib/systemd/system /usr/lib/systemd/system)
_epbroker_check_read(EPBROKER_SYSUSERSDIR systemd-sysusers /etc/sysusers.d /run/sysusers.d
                     /usr/local/lib/sysusers.d /usr/lib/sysusers.d)
_epbroker_check_read(EPBROKER_TMPFILESDIR systemd-tmpfiles /etc/tmpfiles.d /run/tmpfiles.d
                     /usr/local/lib/tmpfiles.d /usr/lib/tmpfiles.d)
_epbroker_check_read(EPBROKER_CATALOGDIR journalctl /usr/lib/systemd/catalog)
_epbroker_check_read(EPBROKER_DBUS_SYSTEM_SERVICESDIR "the system dbus-daemon"
                     /usr/local/share/dbus-1/system-services /usr/share/dbus-1/system-services
                     /lib/dbus-1/system-services)
_epbroker_check_read(EPBROKER_DBUS_SYSTEM_CONFDIR "the system dbus-daemon"
                     /usr/share/dbus-1/system.d /etc/dbus-1/system.d)
_epbroker_check_read(EPBROKER_POLKIT_ACTIONDIR polkitd /usr/share/polkit-1/actions)
_epbroker_check_read(EPBROKER_BASH_COMPLETIONSDIR bash-completion
                     /usr/share/bash-completion/completions /usr/local/share/bash-completion/completions
                     /etc/bash_completion.d)
