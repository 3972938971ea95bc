{{- define "lockstep.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "lockstep.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "lockstep.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The operator image, pinned by digest: an empty or malformed value is an error at
render time, not an ImagePullBackOff later. */}}
{{- define "lockstep.image" -}}
{{- $help := "build and push the image (tools/image.sh build; tools/image.sh push REGISTRY prints the --set flags; docs/install.md)" -}}
{{- $repo := required (printf "image.repository is required: %s" $help) .Values.image.repository -}}
{{- $digest := required (printf "image.digest is required: %s" $help) .Values.image.digest -}}
{{- if contains "@" $repo -}}{{ fail (printf "image.repository %q names a digest: give it in image.digest" $repo) }}{{- end -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" $digest) -}}{{ fail (printf "image.digest %q is not sha256:<64 lowercase hex>" $digest) }}{{- end -}}
{{ $repo }}@{{ $digest }}
{{- end -}}

{{/* Namespaces admission never applies to, so the webhook cannot lock the cluster. */}}
{{- define "lockstep.namespaceSelector" -}}
namespaceSelector:
  matchExpressions:
  {{- with .Values.watchNamespaces }}
  # Namespaced install: the operator sees RuntimeEnvs in these namespaces only.
  - key: kubernetes.io/metadata.name
    operator: In
    values: {{- toYaml . | nindent 4 }}
  {{- end }}
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
    - kube-system
    - {{ .Release.Namespace }}
    {{- range .Values.webhook.excludeNamespaces }}
    - {{ . }}
    {{- end }}
{{- end -}}

{{/*
The ModelRelease webhook covers every namespace the ModelRelease controller
reconciles (all of them, or watchNamespaces): approvals, aborts and promotions
are annotations the controller acts on only because this webhook checked them.
None of the pod webhook's exclusions apply: a ModelRelease write never has to
pass this webhook to keep the cluster or the operator running.
*/}}
{{- define "lockstep.releaseNamespaceSelector" -}}
{{- with .Values.watchNamespaces -}}
namespaceSelector:
  matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: In
    values: {{- toYaml . | nindent 4 }}
{{- end }}
{{- end -}}

{{/*
The ModelRelease webhooks' matchConditions (validating and mutating: the same
scope). An UPDATE that changes nothing but metadata.finalizers (and what the API
server keeps: managedFields, resourceVersion) never calls the webhook: it checks
nothing there, and removing the finalizer lockstep.dev/release-cleanup must never
wait on the operator (the operator down, a namespace being deleted, helm
uninstall: docs/modelrelease.md "Deleting a release"). Every read is guarded (an
expression that errors applies Fail); deletes and the status subresource are
outside the rules and outside these conditions too.
tests/helm/match_conditions_test.cc evaluates them in a real API server.
*/}}
{{- define "lockstep.releaseMatchConditions" -}}
matchConditions:
- name: not-finalizers-only
  expression: >-
    (request.operation == 'CREATE' && !has(request.subResource))
    || (request.operation == 'UPDATE' && !has(request.subResource) && (
      object.exists(k, k != 'metadata' && (!(k in oldObject) || object[k] != oldObject[k]))
      || oldObject.exists(k, k != 'metadata' && !(k in object))
      || object.metadata.exists(k, !(k in ['finalizers', 'managedFields', 'resourceVersion'])
           && (!(k in oldObject.metadata) || object.metadata[k] != oldObject.metadata[k]))
      || oldObject.metadata.exists(k, !(k in ['finalizers', 'managedFields', 'resourceVersion'])
           && !(k in object.metadata))))
{{- end -}}

{{/*
How pods are admitted: "policy" (the pod ValidatingAdmissionPolicy, templates/pod-policy.yaml,
inside the API server) or "webhook" (the pods webhook in templates/webhooks.yaml).
admission.mode auto picks policy where the API server serves ValidatingAdmissionPolicy v1
(Kubernetes >= 1.30; helm install/upgrade ask the server, an offline `helm template` knows
only what --api-versions tells it).
*/}}
{{- define "lockstep.admissionMode" -}}
{{- $mode := (.Values.admission).mode | default "auto" -}}
{{- if eq $mode "auto" -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" -}}policy{{- else -}}webhook{{- end -}}
{{- else if or (eq $mode "policy") (eq $mode "webhook") -}}
{{- $mode -}}
{{- else -}}
{{- fail (printf "admission.mode must be auto, policy or webhook, got %q" $mode) -}}
{{- end -}}
{{- end -}}

{{- /* The OSV endpoint's CA ConfigMap (advisories.caBundleConfigMap), when an endpoint is set; "" otherwise. */ -}}
{{- define "lockstep.osvCa" -}}
{{- if and (.Values.advisories).osvUrl (.Values.advisories).caBundleConfigMap -}}
{{- .Values.advisories.caBundleConfigMap -}}
{{- end -}}
{{- end -}}
