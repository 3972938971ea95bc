#include "controllers/modelrelease/package_mount_probe.h"

#include "operator/kube/resource.h"

namespace lockstep::controllers {

using nlohmann::json;

StatusOr<PackageMount> probePackageMount(kube::Client& client, const std::string& ns) {
  json job = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", {{"name", "lockstep-image-volume-probe"}, {"namespace", ns}}},
      {"spec",
       {{"template",
         {{"spec",
           {{"restartPolicy", "Never"},
            {"containers",
             json::array(
                 {{{"name", "probe"},
                   {"image", "registry.example/probe:1"},
                   {"volumeMounts", json::array({{{"name", "pkg"}, {"mountPath", "/model"}}})}}})},
            {"volumes",
             json::array({{{"name", "pkg"},
                           {"image", {{"reference", "registry.example/probe:1"}}}}})}}}}}}}};
  auto created = client.create(kube::resources::kJobs, job, ns, /*dryRun=*/true);
  if (!created.isOk()) return created.status().withContext("image volume probe (dry run)");
  const json::json_pointer p("/spec/template/spec/volumes/0/image/reference");
  return created->contains(p) ? PackageMount::kImageVolume : PackageMount::kInitContainer;
}

}  // namespace lockstep::controllers
