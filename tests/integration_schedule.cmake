# The integration tests' schedule (lockstep_binary_test in CMakeLists.txt):
# LOCKSTEP_COST_<binary> is the seconds the whole binary took, so that ctest
# starts the longest first; LOCKSTEP_SHARDS_<binary> splits a binary longer
# than a fair share of the run into that many ctest tests. A binary not listed
# has COST 0 (it starts last) and one shard: add it here with its time
# (docs/testing.md "Test commands").
