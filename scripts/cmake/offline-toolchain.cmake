# Used through CMAKE_TOOLCHAIN_FILE (see .cargo/config.toml) while the QuickJS backend builds.
# WAMR asks FetchContent for simde; Debian's libsimde-dev installs the same headers under /usr/include.
set(FETCHCONTENT_SOURCE_DIR_SIMDE "/usr/include" CACHE PATH "simde from libsimde-dev" FORCE)
set(FETCHCONTENT_FULLY_DISCONNECTED ON CACHE BOOL "no network during the build" FORCE)
