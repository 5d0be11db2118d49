{{/*
Kept by hand: kubebuilder's helm/v2-alpha plugin writes this file only when it is missing.
*/}}

{{/*
The chart's name, truncated to 63 characters.
*/}}
{{- define "chart.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The value of the label helm.sh/chart: the chart's name and version.
*/}}
{{- define "chart.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels Helm adds to every object of the release. The templates the plugin generates get them
from config/helm/base; the objects' own labels (control-plane, app.kubernetes.io/name,
app.kubernetes.io/part-of) are those of dist/install.yaml.
*/}}
{{- define "chart.labels" -}}
helm.sh/chart: {{ include "chart.chart" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/*
Labels that select the manager's pods, as in dist/install.yaml (a Deployment's selector
cannot change, so they never include the release).
*/}}
{{- define "chart.selectorLabels" -}}
control-plane: controller-manager
app.kubernetes.io/name: virt-advisor-operator
{{- end }}

{{/*
The manager's image: repository:tag, the tag defaulting to the chart's appVersion.
*/}}
{{- define "chart.image" -}}
{{- printf "%s:%s" .Values.manager.image.repository (.Values.manager.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{/*
The DNS name of the metrics Service, which the serving certificate names and the
ServiceMonitor verifies.
*/}}
{{- define "chart.metricsServiceDNSName" -}}
{{- printf "virt-advisor-operator-controller-manager-metrics-service.%s.svc" .Release.Namespace }}
{{- end }}
