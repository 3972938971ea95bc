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

{{- define "lockstep.image" -}}
{{- if .Values.image.digest -}}{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}{{ .Values.image.repository }}:{{ .Values.image.tag }}{{- end -}}
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
