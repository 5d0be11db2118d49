{{/*
The chart's name, truncated to 63 characters.
*/}}
{{- define "chart.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels Helm adds to every object of the release. The objects' own labels (control-plane,
app.kubernetes.io/name, app.kubernetes.io/part-of) are those of dist/install.yaml.
*/}}
{{- define "chart.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
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
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}
