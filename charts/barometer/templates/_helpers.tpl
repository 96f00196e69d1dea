{{/*
Expand the name of the chart.
*/}}
{{- define "barometer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name, used for the Deployment and the gRPC Service (the name in
scalerAddress). Truncated to 58 characters so that "<fullname>-http" still
fits the 63 characters of a DNS label.
*/}}
{{- define "barometer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 58 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 58 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 58 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart name and version, as used by the chart label.
*/}}
{{- define "barometer.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Common labels.
*/}}
{{- define "barometer.labels" -}}
helm.sh/chart: {{ include "barometer.chart" . }}
{{ include "barometer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: scaler
{{- end }}

{{/*
Selector labels.
*/}}
{{- define "barometer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "barometer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The ServiceAccount's name.
*/}}
{{- define "barometer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "barometer.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image reference: a digest wins over a tag; the tag defaults to appVersion.
*/}}
{{- define "barometer.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
The address a ScaledObject's scalerAddress names.
*/}}
{{- define "barometer.scalerAddress" -}}
{{- printf "%s.%s.svc.cluster.local:%d" (include "barometer.fullname" .) .Release.Namespace (int .Values.ports.grpc) }}
{{- end }}

{{/*
Where the TLS Secrets are mounted.
*/}}
{{- define "barometer.tlsDir" -}}/etc/barometer/tls{{- end }}
{{- define "barometer.clientCADir" -}}/etc/barometer/client-ca{{- end }}
{{- define "barometer.otlpTLSDir" -}}/etc/barometer/otlp-tls{{- end }}
{{- define "barometer.otlpClientCADir" -}}/etc/barometer/otlp-client-ca{{- end }}
{{- define "barometer.peerTokenDir" -}}/etc/barometer/peer{{- end }}

{{/*
"true" when the replicas share their OTLP pushes (docs/operations.md, "HA").
*/}}
{{- define "barometer.peers" -}}
{{- if and .Values.otlp.enabled .Values.otlp.peers.enabled }}true{{ end }}
{{- end }}

{{/*
The Secret holding the peer token: the one named, or the chart's own.
*/}}
{{- define "barometer.peerTokenSecret" -}}
{{- .Values.otlp.peers.tokenSecretName | default (printf "%s-peer-token" (include "barometer.fullname" .)) }}
{{- end }}

{{/*
Settings that the schema cannot express, failed with a message that names
the value to change.
*/}}
{{- define "barometer.validate" -}}
{{- if and .Values.tls.clientCASecretName (not .Values.tls.secretName) }}
{{- fail "tls.clientCASecretName requires tls.secretName: the scaler verifies client certificates only when it serves TLS" }}
{{- end }}
{{- if and .Values.otlp.enabled (not .Values.otlp.credentials.secretName) }}
{{- fail "otlp.enabled requires otlp.credentials.secretName: every push is authenticated by a credential of that Secret" }}
{{- end }}
{{- if and .Values.otlp.tls.clientCASecretName (not .Values.otlp.tls.secretName) }}
{{- fail "otlp.tls.clientCASecretName requires otlp.tls.secretName: the receiver verifies client certificates only when it serves TLS" }}
{{- end }}
{{- if include "barometer.peers" . }}
{{- $p := int .Values.otlp.peers.port }}
{{- if has $p (list (int .Values.ports.grpc) (int .Values.ports.http) (int .Values.otlp.ports.grpc) (int .Values.otlp.ports.http)) }}
{{- fail (printf "otlp.peers.port %d: the pod's other ports use it (ports.grpc, ports.http, otlp.ports); choose another" $p) }}
{{- end }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled .Values.podMonitor.enabled }}
{{- fail "serviceMonitor.enabled and podMonitor.enabled: enable one, not both; both would scrape every pod twice and double every alert" }}
{{- end }}
{{- range $k := list "alertname" "severity" }}
{{- if hasKey $.Values.prometheusRule.additionalAlertLabels $k }}
{{- fail (printf "prometheusRule.additionalAlertLabels.%s: the chart sets this label on every alert itself" $k) }}
{{- end }}
{{- end }}
{{- range $k, $v := .Values.config.defaultTarget }}
{{- if contains ";" (toString $v) }}
{{- fail (printf "config.defaultTarget.%s: a value cannot hold ';' (BAROMETER_DEFAULT_TARGET separates pairs with it)" $k) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
BAROMETER_DEFAULT_TARGET: the map as key=value pairs joined by ';', in key
order so the rendered value (and so the pod template) is stable.
*/}}
{{- define "barometer.defaultTarget" -}}
{{- $pairs := list }}
{{- range $k := keys .Values.config.defaultTarget | sortAlpha }}
{{- $pairs = append $pairs (printf "%s=%v" $k (index $.Values.config.defaultTarget $k)) }}
{{- end }}
{{- join ";" $pairs }}
{{- end }}

