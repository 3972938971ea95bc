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
# runtimeenv_advisories_cluster_test passed whole (1 case, 43-60 s, 3 Dec 2026, one private
# cluster, load about 9: `./build/tests/controllers/runtimeenv_advisories_cluster_test`).
set(LOCKSTEP_COST_runtimeenv_advisories_cluster_test 60)
# helm_uninstall_cluster_test passed whole (1 case, 37-45 s, 5 Dec 2026, once on a cluster
# an approvals run had used and twice on private clusters, load about 4, since the test
# ends the hook pod itself: `./build/tests/helm/helm_uninstall_cluster_test`).
set(LOCKSTEP_COST_helm_uninstall_cluster_test 45)
# Passed whole on 3 Dec 2026 at 2dc3777, each binary on a private cluster of its own, two
# at a time beside three engineers' builds (load average 4-13, so these are slow by about
# half against CI's): `./build/tests/<dir>/<binary>`. canary_cluster_test (17 cases) is the
# longest by far: two shards, so that neither cluster waits on it alone at the end.
set(LOCKSTEP_COST_canary_cluster_test 1473)
set(LOCKSTEP_SHARDS_canary_cluster_test 2)
set(LOCKSTEP_COST_canary_faults_cluster_test 634)
# prod_ownership_cluster_test failed whole once in a fresh-clone CI run at load average 18-25
# (AReleaseReAppliedWithProdsContentIsProdWithNoJobOrPod: its eval gate ran again after the
# re-applied release was recognised as prod): a reconcile on a cache a moment behind the
# release started a gate Job (fixed at 996e1d5: the first gate Job starts only from the
# release as the API server has it). It passed whole since (3 December 2026, on one
# private cluster: 11 cases, about 60 s each), and runs whole in the long suite since 4 December.
set(LOCKSTEP_COST_prod_ownership_cluster_test 660)
set(LOCKSTEP_COST_analysis_provider_cluster_test 290)
set(LOCKSTEP_COST_workloads_cluster_test 171)
set(LOCKSTEP_COST_modelrelease_controller_test 147)
set(LOCKSTEP_COST_approvals_cluster_test 86)
set(LOCKSTEP_COST_kube_integration_test 61)
set(LOCKSTEP_COST_helm_rbac_cluster_test 52)
set(LOCKSTEP_COST_runtimeenv_revisions_cluster_test 44)
set(LOCKSTEP_COST_cluster_smoke_test 41)
set(LOCKSTEP_COST_helm_match_conditions_test 134)
set(LOCKSTEP_COST_invariant_monitor_cluster_test 90)
set(LOCKSTEP_COST_runtimeenv_controller_test 39)
set(LOCKSTEP_COST_helm_chart_test 35)
set(LOCKSTEP_COST_evidence_cluster_test 481)
# stage_tags_cluster_test with its ModelPack case: 3 cases, 255 s whole (3 Dec 2026, one
# private cluster, load about 13; the ModelPack case alone 26-30 s).
set(LOCKSTEP_COST_stage_tags_cluster_test 255)
set(LOCKSTEP_COST_runtimeenv_verification_cluster_test 178)
set(LOCKSTEP_COST_prometheus_integration_test 86)
set(LOCKSTEP_COST_kwok_stages_test 56)
set(LOCKSTEP_COST_metrics_cluster_test 44)
set(LOCKSTEP_COST_runtime_integration_test 42)
set(LOCKSTEP_COST_fleet_cli_registry_test 11)
set(LOCKSTEP_COST_registry_integration_test 9)
set(LOCKSTEP_COST_certs_cluster_test 68)
# release_cli_cluster_test: 190 s of cases (556 s with its private cluster's start at load
# average 19-23; a CI cluster is up before the tests start).
set(LOCKSTEP_COST_release_cli_cluster_test 200)
# runtimeenv_mirror_cluster_test passed whole (2 cases, 3 Dec 2026, one private cluster:
# 82 s at load about 8, 118 s at load about 12 beside another engineer's cluster tests):
# `./build/tests/controllers/runtimeenv_mirror_cluster_test`.
set(LOCKSTEP_COST_runtimeenv_mirror_cluster_test 118)

# The long suites (label long: tools/test.sh long, out of CI since 4 December 2026, when CI's
# integration step took 46 minutes of its 90): each whole binary above runs there; in CI,
# their SMOKE cases (tests/controllers/CMakeLists.txt), one ctest test each, with these
# costs (the smoke tests' seconds on one private cluster, 4 December 2026, load average about 8).
set(LOCKSTEP_SMOKE_COST_canary_cluster_test 300)
set(LOCKSTEP_SMOKE_COST_canary_faults_cluster_test 110)
set(LOCKSTEP_SMOKE_COST_evidence_cluster_test 110)
set(LOCKSTEP_SMOKE_COST_stage_tags_cluster_test 180)
set(LOCKSTEP_SMOKE_COST_prod_ownership_cluster_test 165)
