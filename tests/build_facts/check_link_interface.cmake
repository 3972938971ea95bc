# Fails when a library's resolved link list names a forbidden library.
# Run by ctest: cmake -DFILE=<list> -DFORBIDDEN=<regex, lowercase> -P check_link_interface.cmake
file(READ "${FILE}" libs)
string(TOLOWER "${libs}" lower)
if(lower MATCHES "${FORBIDDEN}")
  message(FATAL_ERROR "${FILE}: links ${CMAKE_MATCH_0}: ${libs}")
endif()
message(STATUS "free of ${FORBIDDEN}: ${libs}")
