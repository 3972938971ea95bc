# The integration tests' schedule (lockstep_binary_test in CMakeLists.txt):
# LOCKSTEP_COST_<binary> is the seconds the whole binary took, so that ctest
# starts the longest first; LOCKSTEP_SHARDS_<binary> splits a binary longer
# than a fair share of the run into that many ctest tests. A binary not listed
# has COST 0 (it starts last) and one shard: add it here with its time
# (docs/testing.md "Test commands").
#
# Seconds are wall time of the whole binary on the shared 2-core machine
# (2 Dec 2026, load average 20-28): only their order matters to ctest.
set(LOCKSTEP_COST_admission_cluster_test 464)  # 10 cases; 1,000 s for 5 of them one per process
