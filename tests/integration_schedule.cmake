# The integration tests' schedule (lockstep_binary_test in CMakeLists.txt):
# LOCKSTEP_COST_<binary> is the seconds the whole binary took, so that ctest
# starts the longest first; LOCKSTEP_SHARDS_<binary> splits a binary longer
# than a fair share of the run into that many ctest tests. A binary not listed
# has COST 0 (it starts last) and one shard: add it here with its time
# (docs/testing.md "Test commands").
#
# Seconds are wall time of the whole binary (only their order matters to ctest).
# List a binary once it has passed whole on a cluster at the commit that lists it.
# admission_cluster_test passed whole at 379c601's version (10 cases, 464 s against
# 1,000 s for 5 of them one per process, load 20-28), and again with
# admission.mode=policy's set-up, as did its policy build (2 Dec 2026, one private
# cluster, load about 20: `./build/tests/webhooks/admission_cluster_test`, 183 s;
# `admission_policy_cluster_test`, 194 s).
set(LOCKSTEP_COST_admission_cluster_test 464)
set(LOCKSTEP_COST_admission_policy_cluster_test 470)
# modelrollout_cluster_test passed whole (5 cases, 102 s, 3 Dec 2026, one private
# cluster, load about 5: `./build/tests/controllers/modelrollout_cluster_test`).
set(LOCKSTEP_COST_modelrollout_cluster_test 102)
# drift_cluster_test passed whole (2 cases, 59 s, 3 Dec 2026, one private cluster, load
# about 6: `./build/tests/drift/drift_cluster_test`).
set(LOCKSTEP_COST_drift_cluster_test 59)
# stage_tags_cluster_test passed whole with its ModelPack case (3 cases, 255 s, 3 Dec 2026,
# one private cluster, load about 13: `./build/tests/controllers/stage_tags_cluster_test`;
# the ModelPack case alone 26-30 s).
set(LOCKSTEP_COST_stage_tags_cluster_test 255)
