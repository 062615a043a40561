{{/*
The name of every object: the release name when it holds "ingestor"
(`helm install ingestor ...` gives the names of deploy/kubernetes/, so
its pods keep their WAL claims), else <release>-ingestor.
*/}}
{{- define "ingestor.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ingestor.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ingestor.labels" -}}
{{ include "ingestor.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "ingestor.secretName" -}}
{{- required "secret.name is required: the Secret of credentials" .Values.secret.name -}}
{{- end -}}

{{/*
The configuration as the processes read it: .Values.config with
metrics.address and metrics.roles set from .Values.metricsPorts.
*/}}
{{- define "ingestor.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $p := .Values.metricsPorts -}}
{{- $metrics := get $cfg "metrics" | default dict -}}
{{- $_ := set $metrics "address" (printf ":%d" (int $p.supervisor)) -}}
{{- $roles := dict "consumer" (printf ":%d" (int $p.consumer)) "uploader" (printf ":%d" (int $p.uploader)) "committer" (printf ":%d" (int $p.committer)) "maintainer" (printf ":%d" (int $p.maintainer)) -}}
{{- $_ := set $metrics "roles" $roles -}}
{{- $_ := set $cfg "metrics" $metrics -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* The WAL directory: the mount path of the volume claim "wal". */}}
{{- define "ingestor.walDir" -}}
{{- required "config.ingestion.wal.dir is required: the WAL volume is mounted there" .Values.config.ingestion.wal.dir -}}
{{- end -}}

{{/* Whether the maintainer runs: unless config.maintenance.enabled is false. */}}
{{- define "ingestor.maintainer" -}}
{{- $m := get .Values.config "maintenance" | default dict -}}
{{- if or (not (hasKey $m "enabled")) $m.enabled -}}true{{- end -}}
{{- end -}}

{{/* The environment of every ingestor container: one variable per key of the Secret. */}}
{{- define "ingestor.env" -}}
{{- $name := include "ingestor.secretName" . -}}
{{- range .Values.secret.keys }}
- name: {{ . }}
  valueFrom:
    secretKeyRef: {name: {{ $name }}, key: {{ . }}}
{{- end }}
{{- end -}}

{{/*
One ingestor container. Arguments (a dict): root (the chart's context),
name, args (the subcommand), ports (list of metricsPorts names),
liveness and readiness (the port name each probe asks for /healthz),
resources, sidecar (true for a native sidecar).
*/}}
{{- define "ingestor.container" -}}
{{- $root := .root -}}
- name: {{ .name }}
  image: "{{ $root.Values.image.repository }}:{{ $root.Values.image.tag | default $root.Chart.AppVersion }}"
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  {{- if .sidecar }}
  restartPolicy: Always
  {{- end }}
  args: ["{{ .args }}", "--config", "/etc/ingestor/ingestor.yaml"]
  ports:
    {{- range .ports }}
    - {name: {{ . }}, containerPort: {{ index $root.Values.metricsPorts . | int }}, protocol: TCP}
    {{- end }}
  {{- with include "ingestor.env" $root }}
  env:
    {{- . | trim | nindent 4 }}
  {{- end }}
  resources:
    {{- toYaml .resources | nindent 4 }}
  livenessProbe:
    httpGet: {path: /healthz, port: {{ .liveness }}}
    periodSeconds: 10
    timeoutSeconds: 3
    failureThreshold: 6
  readinessProbe:
    httpGet: {path: /healthz, port: {{ .readiness }}}
    periodSeconds: 10
    timeoutSeconds: 3
    failureThreshold: 3
  securityContext:
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: ["ALL"]
  volumeMounts:
    - name: wal
      mountPath: {{ include "ingestor.walDir" $root }}
    - name: config
      mountPath: /etc/ingestor
      readOnly: true
    # The supervisor and its children talk over Unix sockets in $TMPDIR.
    - name: tmp
      mountPath: /tmp
{{- end -}}
