# Fails when a pure library's resolved link interface names the HTTP library.
# Run by ctest: cmake -DFILE=<generated list> -DFORBIDDEN=cpprest -P check_link_interface.cmake
file(READ "${FILE}" libs)
string(TOLOWER "${libs}" lower)
if(lower MATCHES "${FORBIDDEN}")
  message(FATAL_ERROR "${FILE}: link interface contains ${FORBIDDEN}: ${libs}")
endif()
message(STATUS "link interface free of ${FORBIDDEN}: ${libs}")
