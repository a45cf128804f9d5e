{{/* Labels of every object: the name the manifests under config/ select
by, and Helm's own. */}}
{{- define "proxmox-network.labels" -}}
app.kubernetes.io/name: proxmox-network-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The image; the render fails without one. */}}
{{- define "proxmox-network.image" -}}
{{- required "proxmoxNetworkController.image is required: the controller's image, e.g. registry.example.com/proxmox-network-controller:v0.1.0 (make image builds it)" .Values.proxmoxNetworkController.image -}}
{{- end }}

{{/* ovn.tlsSecret split into namespace and name; empty when unset or
gateway management is off. */}}
{{- define "proxmox-network.tlsSecretNamespace" -}}
{{- if and .Values.ovn.manageGatewayChassis .Values.ovn.tlsSecret }}{{ index (splitList "/" .Values.ovn.tlsSecret) 0 }}{{- end }}
{{- end }}
{{- define "proxmox-network.tlsSecretName" -}}
{{- if and .Values.ovn.manageGatewayChassis .Values.ovn.tlsSecret }}{{ index (splitList "/" .Values.ovn.tlsSecret) 1 }}{{- end }}
{{- end }}

{{/* The lists the admission policies read, as JSON, in the order and
without the duplicates of the admission package (admission.Config). */}}
{{- define "proxmox-network.zoneBridges" -}}
{{- $out := list -}}
{{- range .Values.zones }}{{- if and .bridge (not (has .bridge $out)) }}{{- $out = append $out .bridge }}{{- end }}{{- end -}}
{{- $out | toJson -}}
{{- end }}

{{- define "proxmox-network.uplinkBridges" -}}
{{- $out := list -}}
{{- range .Values.zones }}{{- range (.uplinkBridges | default list) }}{{- if and . (not (has . $out)) }}{{- $out = append $out . }}{{- end }}{{- end }}{{- end -}}
{{- $out | toJson -}}
{{- end }}

{{/* The VNet prefixes of the zones in sdn.mode VNets: sdn.vnetPrefix, or
the first four characters of sdn.zone (pvesdn/vnetid.Prefix). */}}
{{- define "proxmox-network.vnetPrefixes" -}}
{{- $out := list -}}
{{- range .Values.zones }}{{- if and .sdn (eq (.sdn.mode | default "") "VNets") }}{{- $p := .sdn.vnetPrefix | default (trunc 4 (.sdn.zone | default "")) }}{{- if and $p (not (has $p $out)) }}{{- $out = append $out $p }}{{- end }}{{- end }}{{- end -}}
{{- $out | toJson -}}
{{- end }}

{{- define "proxmox-network.uplinkVLANs" -}}
{{- $out := list -}}
{{- range .Values.zones }}{{- if .uplinkVLAN }}{{- $v := int .uplinkVLAN }}{{- if not (has $v $out) }}{{- $out = append $out $v }}{{- end }}{{- end }}{{- end -}}
{{- $out | toJson -}}
{{- end }}

{{- define "proxmox-network.exemptNamespaces" -}}
{{- $in := list "kube-system" .Release.Namespace -}}
{{- range .Values.zones }}{{- if and .egress .egress.gatewayNamespace }}{{- $in = append $in .egress.gatewayNamespace }}{{- end }}{{- end -}}
{{- $in = concat $in (.Values.admission.exemptNamespaces | default list) -}}
{{- $out := list -}}
{{- range $in }}{{- if and . (not (has . $out)) }}{{- $out = append $out . }}{{- end }}{{- end -}}
{{- $out | toJson -}}
{{- end }}

{{/* The values the webhook judges by (--admission-config): the same
shape as the package values. */}}
{{- define "proxmox-network.admissionConfig" -}}
{{- dict "releaseNamespace" .Release.Namespace "zones" .Values.zones "admission" (omit .Values.admission "webhook") | toYaml -}}
{{- end }}
