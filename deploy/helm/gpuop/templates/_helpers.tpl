{{/*
Names are fixed ("gpuop", "gpuop-operand", "gpuop-metrics"): gpuop names its
operands' ServiceAccount itself, its GpuPolicy is cluster-scoped and one gpuop
serves a cluster, so a second release fails on the cluster-scoped RBAC
instead of running two operators.
*/}}

{{- define "gpuop.labels" -}}
app.kubernetes.io/name: gpuop
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gpuop
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The controller's pods; never matches an operand pod (those carry
app.kubernetes.io/name=<operand>). */}}
{{- define "gpuop.selectorLabels" -}}
app.kubernetes.io/name: gpuop
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{/* gpuop's own image. */}}
{{- define "gpuop.image" -}}
{{- if .Values.image.reference -}}
{{ .Values.image.reference }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/*
An operand's image keys as the GPU Operator's ClusterPolicy has them,
passed through to the GpuPolicy (gpuop joins them as NVIDIA does, and adds
the node's OS to the driver's tag): repository, image and version, each
only when given (an empty one takes gpuop's default for that key).
Argument: the operand's values.
*/}}
{{- define "gpuop.operandImage" -}}
{{- $v := . | default dict -}}
{{- range $k := list "repository" "image" "version" -}}
{{- with toString (get $v $k | default "") }}
{{ $k }}: {{ . | quote }}
{{- end -}}
{{- end -}}
{{- end }}

{{/* enabled: default true; false (or "false") turns it off. */}}
{{- define "gpuop.enabled" -}}
{{- if and (hasKey . "enabled") (eq (toString .enabled) "false") -}}false{{- else -}}true{{- end -}}
{{- end }}

{{/*
One operand's GpuPolicy spec, from its values. Only what is given is
written: an empty args list would replace the operand's default arguments
with none, so [] means "keep them", as in the GPU Operator's chart.
*/}}
{{- define "gpuop.operandSpec" -}}
{{- $v := .v | default dict -}}
{{- /* the GPU Operator's chart has no draDriver.enabled (its GPUCluster
       comes with gpuCluster.deployCR): on only when set true */ -}}
enabled: {{ if eq .key "draDriver" }}{{ eq (toString $v.enabled) "true" }}{{ else }}{{ include "gpuop.enabled" $v }}{{ end }}
{{- include "gpuop.operandImage" $v }}
{{- with $v.imagePullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- with $v.args }}
args:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.env }}
env:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if eq .key "toolkit" }}
{{- with $v.installDir }}
installDir: {{ . | quote }}
{{- end }}
{{- end }}
{{- if eq .key "validator" }}
{{- range $c := list "driver" "toolkit" "plugin" }}
{{- with (get $v $c | default dict).env }}
{{ $c }}:
  env:
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq .key "draDriver" }}
{{- range $k := list "featureGates" "gpus" "computeDomains" }}
{{- with get $v $k }}
{{ $k }}:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq .key "dcgm" }}
{{- with $v.hostPort }}
hostPort: {{ . }}
{{- end }}
{{- if eq (toString $v.hostNetwork) "true" }}
hostNetwork: true
{{- end }}
{{- end }}
{{- if eq .key "dcgmExporter" }}
{{- with $v.serviceMonitor }}
serviceMonitor:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- if eq .key "driver" }}
{{- with $v.upgradePolicy }}
upgradePolicy:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- include "gpuop.driverOptions" $v }}
{{- with $v.manager }}
manager:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- if has .key (splitList " " (include "gpuop.configKeys" .)) }}
{{- with ($v.config | default dict).name }}
config:
  name: {{ . | quote }}
{{- if eq $.key "devicePlugin" }}
  default: {{ ($v.config.default | default "") | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq .key "devicePlugin" }}
{{- with ($v.mps | default dict).root }}
mps:
  root: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The driver's options (the GPU Operator's driver.* keys, issue 38), each
only when it names something or is on (usePrecompiled only when true): an empty name, rdma.enabled false
and licensingConfig without a Secret or ConfigMap write nothing, so the
GPU Operator chart's defaults leave the driver as it is.
*/}}
{{- define "gpuop.driverOptions" -}}
{{- $v := . | default dict -}}
{{- if eq (toString $v.usePrecompiled) "true" }}
usePrecompiled: true
{{- end }}
{{- with $v.kernelModuleType }}
kernelModuleType: {{ . | quote }}
{{- end }}
{{- range $k, $sub := dict "kernelModuleConfig" "name" "repoConfig" "configMapName" "certConfig" "name" }}
{{- with get (get $v $k | default dict) $sub }}
{{ $k }}:
  {{ $sub }}: {{ . | quote }}
{{- end }}
{{- end }}
{{- $lic := $v.licensingConfig | default dict }}
{{- if or $lic.secretName $lic.configMapName }}
licensingConfig:
  {{- with $lic.secretName }}
  secretName: {{ . | quote }}
  {{- end }}
  {{- with $lic.configMapName }}
  configMapName: {{ . | quote }}
  {{- end }}
  nlsEnabled: {{ eq (toString $lic.nlsEnabled) "true" }}
{{- end }}
{{- with $v.secretEnv }}
secretEnv: {{ . | quote }}
{{- end }}
{{- $rdma := $v.rdma | default dict }}
{{- if eq (toString $rdma.enabled) "true" }}
rdma:
  enabled: true
  useHostMofed: {{ eq (toString $rdma.useHostMofed) "true" }}
{{- end }}
{{- end }}

{{/*
spec.gds or spec.gdrcopy from its values (the GPU Operator's keys), when
enabled: the sidecar's image keys, pull policy and env.
*/}}
{{- define "gpuop.sidecarSpec" -}}
{{- $v := . | default dict -}}
{{- if eq (toString $v.enabled) "true" -}}
enabled: true
{{- include "gpuop.operandImage" $v }}
{{- with $v.imagePullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- with $v.env }}
env:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
{{- end }}

{{/* The operands' keys, in gpuop's order (src/model/operand.c): the same
in the values and in the GpuPolicy's spec. */}}
{{- define "gpuop.operandKeys" -}}
driver toolkit devicePlugin gfd dcgm dcgmExporter validator migManager draDriver
{{- end }}

{{/* The operands whose GpuPolicy spec takes config.name (a ConfigMap):
those whose operand-table row names a default ConfigMap, or "" (the
exporter reads one only when named). The GPU Operator's chart has
config.name for others too, which gpuop does not read: not written. */}}
{{- define "gpuop.configKeys" -}}
devicePlugin dcgmExporter migManager
{{- end }}

{{/* daemonsets.imagePullSecrets and every operand's, deduplicated, in
order; entries may be names or {name: ...}. A JSON list. */}}
{{- define "gpuop.pullSecrets" -}}
{{- $all := list -}}
{{- $lists := list ((.Values.daemonsets | default dict).imagePullSecrets | default list) -}}
{{- range $k := concat (splitList " " (include "gpuop.operandKeys" .)) (list "gds" "gdrcopy") -}}
{{- $lists = append $lists ((get $.Values $k | default dict).imagePullSecrets | default list) -}}
{{- end -}}
{{- range $l := $lists -}}
{{- range $s := $l -}}
{{- $n := $s -}}
{{- if kindIs "map" $s -}}{{- $n = $s.name -}}{{- end -}}
{{- if and $n (not (has (toString $n) $all)) -}}{{- $all = append $all (toString $n) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $all -}}
{{- end }}

{{/* maxUnavailable: "1" or 1 -> 1 (the CRD takes a percentage as a string
and a number as an integer); "25%" stays a string. */}}
{{- define "gpuop.maxUnavailable" -}}
{{- $s := toString . -}}
{{- if regexMatch "^[0-9]+$" $s -}}{{ atoi $s }}{{- else -}}{{ quote $s }}{{- end -}}
{{- end }}

{{/* The GpuPolicy's spec.daemonsets from daemonsets.* (and every operand's
imagePullSecrets); only what is given. */}}
{{- define "gpuop.daemonsetsSpec" -}}
{{- $ds := .Values.daemonsets | default dict }}
{{- if hasKey $ds "tolerations" }}
tolerations:
  {{- if $ds.tolerations }}
  {{- toYaml $ds.tolerations | nindent 2 }}
  {{- else }} []
  {{- end }}
{{- end }}
{{- if hasKey $ds "priorityClassName" }}
priorityClassName: {{ $ds.priorityClassName | default "" | quote }}
{{- end }}
{{- with $ds.updateStrategy }}
updateStrategy: {{ . }}
{{- end }}
{{- if ne (toString $ds.updateStrategy) "OnDelete" }}
{{- with $ds.rollingUpdate }}
{{- if hasKey . "maxUnavailable" }}
rollingUpdate:
  maxUnavailable: {{ include "gpuop.maxUnavailable" .maxUnavailable }}
{{- end }}
{{- end }}
{{- end }}
{{- with $ds.labels }}
labels:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $ds.annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $secrets := include "gpuop.pullSecrets" . | fromJsonArray }}
{{- with $secrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The CRD upgrade hook (templates/upgrade-crd.yaml): on with upgradeCRD, off
when it is false or when a GPU Operator values file says
operator.upgradeCRD: false. "true" or "".
*/}}
{{- define "gpuop.upgradeCRD" -}}
{{- $op := .Values.operator | default dict -}}
{{- $nvidiaOff := and (hasKey $op "upgradeCRD") (eq (toString $op.upgradeCRD) "false") -}}
{{- if and (eq (toString .Values.upgradeCRD) "true") (not $nvidiaOff) -}}true{{- end -}}
{{- end }}

{{/* A hook object's annotations; argument: its weight (the Job runs after
the rest). */}}
{{- define "gpuop.upgradeCRDHook" -}}
helm.sh/hook: pre-install,pre-upgrade
helm.sh/hook-weight: {{ . | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}

{{/* The release hook's annotations (templates/release-policy.yaml);
argument: its weight (the Job runs after its RBAC). */}}
{{- define "gpuop.releaseHook" -}}
helm.sh/hook: pre-delete
helm.sh/hook-weight: {{ . | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}

{{/* The RuntimeClass names gpuop may patch and delete: nvidia,
nvidia-cdi, nvidia-legacy (CDI mode's) and operator.runtimeClass, once
each; a JSON list. */}}
{{- define "gpuop.runtimeClassNames" -}}
{{- $names := list "nvidia" "nvidia-cdi" "nvidia-legacy" -}}
{{- with (.Values.operator | default dict).runtimeClass -}}
{{- $names = append $names (toString .) | uniq -}}
{{- end -}}
{{- toJson $names -}}
{{- end }}
