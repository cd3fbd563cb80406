{{/* Names */}}
{{- define "s2s.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "s2s.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "<fullname>-<component>"; call with (dict "root" $ "component" "relay") */}}
{{- define "s2s.componentName" -}}
{{- printf "%s-%s" (include "s2s.fullname" .root | trunc 48 | trimSuffix "-") .component -}}
{{- end -}}

{{- define "s2s.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "s2s.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: s2s-gateway
{{- end -}}

{{/* Selector labels of one component; call with (dict "root" $ "component" "relay") */}}
{{- define "s2s.selectorLabels" -}}
app.kubernetes.io/name: {{ include "s2s.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "s2s.componentLabels" -}}
{{ include "s2s.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "s2s.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "s2s.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "s2s.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "s2s.secretName" -}}
{{- default (printf "%s-secrets" (include "s2s.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* Base of realtime.url: explicit, else derived from the ingress host. */}}
{{- define "s2s.realtimePublicUrl" -}}
{{- if .Values.config.realtimePublicUrl -}}
{{- .Values.config.realtimePublicUrl -}}
{{- else if and .Values.ingress.enabled .Values.ingress.host -}}
{{- printf "%s://%s%s" (ternary "wss" "ws" (gt (len .Values.ingress.tls) 0)) .Values.ingress.host .Values.ingress.realtime.path -}}
{{- else -}}
{{- required "config.realtimePublicUrl is required when ingress.host is not set" .Values.config.realtimePublicUrl -}}
{{- end -}}
{{- end -}}

{{/* Command of a service process (compiled JavaScript, run from /app/services/<name>); the --import
registers the OpenTelemetry ESM loader hook before main.js and its static imports load. */}}
{{- define "s2s.serviceCommand" -}}
command: ["node", "--import", "@s2s/telemetry/register", "dist/main.js"]
{{- end -}}

{{/* OpenTelemetry environment of one component, with its Kubernetes resource attributes from the
downward API (dependent variables must come after the ones they reference); call with the ctx dict. */}}
{{- define "s2s.otelEnv" -}}
{{- $o := .root.Values.otel -}}
- name: K8S_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: K8S_POD_UID
  valueFrom:
    fieldRef:
      fieldPath: metadata.uid
- name: K8S_NAMESPACE_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: K8S_NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
{{- $attrs := list "k8s.pod.name=$(K8S_POD_NAME)" "k8s.pod.uid=$(K8S_POD_UID)" "k8s.namespace.name=$(K8S_NAMESPACE_NAME)" "k8s.node.name=$(K8S_NODE_NAME)" }}
{{- $attrs = append $attrs (printf "k8s.deployment.name=%s" (include "s2s.componentName" .)) }}
{{- $attrs = append $attrs (printf "k8s.container.name=%s" .component) }}
{{- $attrs = append $attrs (printf "service.namespace=%s" (include "s2s.name" .root)) }}
{{- $attrs = append $attrs (printf "service.version=%s" (default .root.Chart.AppVersion .root.Values.image.tag)) }}
{{- range $k, $v := $o.resourceAttributes }}
{{- /* Values are percent-encoded (the SDK decodes them); urlquery writes a space as "+". */}}
{{- $attrs = append $attrs (printf "%s=%s" $k (urlquery (toString $v) | replace "+" "%20")) }}
{{- end }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ join "," $attrs | quote }}
- name: OTEL_METRICS_EXPORTER
  value: {{ $o.metricsExporter | quote }}
{{- with $o.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $o.protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ $o.tracesSampler | quote }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ $o.tracesSamplerArg | quote }}
{{- end }}
{{- if $o.headersSecret.name }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ $o.headersSecret.name }}
      key: {{ required "otel.headersSecret.key is required with otel.headersSecret.name" $o.headersSecret.key }}
{{- end }}
{{- end -}}

{{/* NATS_URL: config.natsUrl, or with nats.enabled and no natsUrl the bundled NATS chart's Service. */}}
{{- define "s2s.natsUrl" -}}
{{- if and .Values.nats.enabled (not .Values.config.natsUrl) -}}
{{- $name := .Values.nats.fullnameOverride | default (ternary .Release.Name (printf "%s-nats" .Release.Name) (contains "nats" .Release.Name)) -}}
nats://{{ $name }}:4222
{{- else -}}
{{ required "config.natsUrl is required unless nats.enabled" .Values.config.natsUrl }}
{{- end -}}
{{- end -}}

{{/* BUS_STREAM_REPLICAS: config.busStreamReplicas, or 3 with the bundled cluster and 1 without. */}}
{{- define "s2s.busStreamReplicas" -}}
{{- if kindIs "invalid" .Values.config.busStreamReplicas -}}
{{ ternary 3 1 .Values.nats.enabled }}
{{- else -}}
{{ .Values.config.busStreamReplicas }}
{{- end -}}
{{- end -}}

{{/* Environment every service shares; call with the ctx dict (dict "root" $ "component" "relay"). */}}
{{- define "s2s.commonEnv" -}}
{{- with .root -}}
- name: NODE_ENV
  value: {{ .Values.config.nodeEnv | quote }}
- name: HOST
  value: "0.0.0.0"
- name: LOG_LEVEL
  value: {{ .Values.config.logLevel | quote }}
- name: NATS_URL
  value: {{ include "s2s.natsUrl" . | quote }}
- name: BUS_PREFIX
  value: {{ .Values.config.busPrefix | quote }}
- name: BUS_STREAM_REPLICAS
  value: {{ include "s2s.busStreamReplicas" . | quote }}
- name: DATABASE_PREPARED_STATEMENTS
  value: {{ .Values.config.databasePreparedStatements | quote }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "s2s.secretName" . }}
      key: DATABASE_URL
- name: SESSION_IDLE_TIMEOUT_SECONDS
  value: {{ .Values.config.sessionIdleTimeoutSeconds | quote }}
- name: SESSION_MAX_SECONDS
  value: {{ .Values.config.sessionMaxSeconds | quote }}
- name: SESSION_PREAUTH_MINUTES
  value: {{ .Values.config.sessionPreauthMinutes | quote }}
{{- end }}
{{ include "s2s.otelEnv" . }}
{{- with .root.Values.config.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* A map of NAME: value as EnvVars; call with the map. */}}
{{- define "s2s.envMap" -}}
{{- range $name, $value := . }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/* Pod annotations: the Secret's checksum, so pods roll when it changes (for an existing Secret, its
data as found at install/upgrade time), Prometheus scrape hints, and the component's own. Call with
(dict "root" $ "values" .Values.relay "port" 8081 "secret" true). */}}
{{- define "s2s.podAnnotations" -}}
{{- $root := .root -}}
{{- if .secret }}
{{- if $root.Values.secrets.existingSecret }}
{{- $found := lookup "v1" "Secret" $root.Release.Namespace $root.Values.secrets.existingSecret }}
checksum/secret: {{ dig "data" (dict) ($found | default (dict)) | toJson | sha256sum }}
{{- else }}
checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
{{- end }}
{{- end }}
{{- if $root.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- with .values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod-level fields shared by every component; call with (dict "root" $ "values" .Values.relay). */}}
{{- define "s2s.podCommon" -}}
serviceAccountName: {{ include "s2s.serviceAccountName" .root }}
automountServiceAccountToken: false
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
terminationGracePeriodSeconds: {{ .values.terminationGracePeriodSeconds }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: {{ .root.Values.tmpSizeLimit }}
{{- end -}}

{{/* Container-level fields shared by every process. */}}
{{- define "s2s.containerCommon" -}}
image: {{ include "s2s.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - name: tmp
    mountPath: /tmp
{{- end -}}

{{/* liveness /healthz, readiness /readyz (or readinessPath), and a startup probe covering start-up
(database and bus connections); call with (dict "readinessPath" "/healthz") or an empty dict. */}}
{{- define "s2s.httpProbes" -}}
startupProbe:
  httpGet:
    path: /healthz
    port: http
  periodSeconds: 2
  failureThreshold: 30
livenessProbe:
  httpGet:
    path: /healthz
    port: http
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: {{ .readinessPath | default "/readyz" }}
    port: http
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
{{- end -}}

{{/* HorizontalPodAutoscaler; call with (dict "root" $ "component" "billing" "values" .Values.billing). */}}
{{- define "s2s.hpa" -}}
{{- $a := .values.autoscaling -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "s2s.componentName" . }}
  labels:
    {{- include "s2s.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "s2s.componentName" . }}
  minReplicas: {{ $a.minReplicas }}
  maxReplicas: {{ $a.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $a.targetCPUUtilizationPercentage }}
    {{- range $key := list "requestsPerSecond" "activeSessions" }}
    {{- $m := index $a $key }}
    {{- if and $m $m.enabled }}
    - type: Pods
      pods:
        metric:
          name: {{ $m.metricName }}
        target:
          type: AverageValue
          averageValue: {{ $m.averageValue | quote }}
    {{- end }}
    {{- end }}
  {{- with $a.scaleDownStabilizationSeconds }}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: {{ . }}
      policies:
        - type: Pods
          value: 1
          periodSeconds: 120
  {{- end }}
{{- end -}}

{{/* Egress every pod keeps when networkPolicy.egress restricts it: DNS, and the release's own pods. */}}
{{- define "s2s.baseEgress" -}}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
- to:
    - podSelector:
        matchLabels:
          app.kubernetes.io/instance: {{ .Release.Name }}
          app.kubernetes.io/name: {{ include "s2s.name" . }}
{{- end -}}
