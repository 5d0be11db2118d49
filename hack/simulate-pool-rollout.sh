#!/usr/bin/env bash
# Plays the Machine Config Operator for one MachineConfigPool on a cluster that has none
# (the demo and the tests): renders the MachineConfigs the pool selects into
# rendered-<pool>-<hash>, points the pool at it and reports the pool Updated on it, as the
# real operator does once every node has rebooted into the new configuration.
#
# KubeletConfigs come first, as the operator's kubelet config controller handles them: the
# KubeletConfigs whose machineConfigPoolSelector selects the pool become one MachineConfig,
# 99-<pool>-generated-kubelet, whose file holds their specs (so a changed KubeletConfig
# renders a new configuration), and each is reported Success; with none, that MachineConfig
# is deleted. A cluster without the KubeletConfig kind has none. As the operator does, a
# KubeletConfig's annotations are replaced with its mc-name-suffix annotation the first time
# it is handled.
#
#   simulate-pool-rollout.sh POOL                     roll out and report Updated
#   simulate-pool-rollout.sh POOL --degrade MESSAGE   report the pool Degraded instead
#
# Uses $KUBECTL (default: kubectl) and the current kubeconfig.
set -euo pipefail

KUBECTL=${KUBECTL:-kubectl}
MACHINES=${MACHINES:-3}
pool=${1:?usage: simulate-pool-rollout.sh POOL [--degrade MESSAGE]}
degrade=""
if [[ ${2:-} == --degrade ]]; then
	degrade=${3:?--degrade needs a message}
fi

k() { "$KUBECTL" "$@"; }
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)

if [[ -n $degrade ]]; then
	gen=$(k get mcp "$pool" -o jsonpath='{.metadata.generation}')
	msg=${degrade//\"/\\\"}
	k patch mcp "$pool" --subresource=status --type=merge -p "{\"status\":{\"observedGeneration\":$gen,
		\"conditions\":[
		{\"type\":\"Updated\",\"status\":\"False\",\"reason\":\"\",\"message\":\"\",\"lastTransitionTime\":\"$now\"},
		{\"type\":\"Updating\",\"status\":\"True\",\"reason\":\"\",\"message\":\"\",\"lastTransitionTime\":\"$now\"},
		{\"type\":\"Degraded\",\"status\":\"True\",\"reason\":\"NodeDegraded\",\"message\":\"$msg\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
	echo "MachineConfigPool $pool reported Degraded: $degrade"
	exit 0
fi

role=$(k get mcp "$pool" -o jsonpath='{.spec.machineConfigSelector.matchLabels.machineconfiguration\.openshift\.io/role}')

# Each KubeletConfig as "<name><TAB><its machineConfigPoolSelector as a label selector>".
selectors='{{range .items}}{{.metadata.name}}{{"\t"}}{{with .spec.machineConfigPoolSelector}}
{{- range $k, $v := .matchLabels}}{{$k}}={{$v}},{{end}}
{{- range .matchExpressions}}
{{- if eq .operator "In" "NotIn"}}{{.key}} {{if eq .operator "NotIn"}}not{{end}}in ({{range $i, $v := .values}}{{if $i}},{{end}}{{$v}}{{end}}),
{{- else if eq .operator "Exists"}}{{.key}},
{{- else if eq .operator "DoesNotExist"}}!{{.key}},
{{- end}}{{end}}{{end}}{{"\n"}}{{end}}'
kubelet_lines=$(k get kubeletconfig -o go-template="$selectors" 2>/dev/null) || kubelet_lines=""
kubelet_mc="99-$pool-generated-kubelet"
kubelet_configs=()
kubelet_specs=""
while IFS=$'\t' read -r kc selector; do
	selector=${selector%,}
	# An empty selector selects no pool.
	[[ -n $kc && -n $selector ]] || continue
	selected=$(k get mcp -l "$selector" -o name 2>/dev/null) || selected=""
	if grep -qx "machineconfigpool.machineconfiguration.openshift.io/$pool" <<<"$selected"; then
		# The first time the operator's kubelet config controller handles a KubeletConfig
		# without its mc-name-suffix annotation, it replaces all of its annotations with
		# that one (addAnnotation in pkg/controller/kubelet-config).
		suffix=$(k get kubeletconfig "$kc" -o jsonpath='{.metadata.annotations.machineconfiguration\.openshift\.io/mc-name-suffix}')
		if [[ -z $suffix ]] && ! k get kubeletconfig "$kc" -o jsonpath='{.metadata.annotations}' | grep -q 'mc-name-suffix'; then
			k patch kubeletconfig "$kc" --type=json \
				-p '[{"op":"add","path":"/metadata/annotations","value":{"machineconfiguration.openshift.io/mc-name-suffix":""}}]' >/dev/null
		fi
		kubelet_configs+=("$kc")
		kubelet_specs+="$kc $(k get kubeletconfig "$kc" -o jsonpath='{.spec}')"$'\n'
	fi
done <<<"$kubelet_lines"
if ((${#kubelet_configs[@]} > 0)); then
	k apply -f - >/dev/null <<YAML
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: $kubelet_mc
  labels: {machineconfiguration.openshift.io/role: $role}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - path: /etc/kubernetes/kubelet.conf
        mode: 420
        overwrite: true
        contents: {source: "data:text/plain;charset=utf-8;base64,$(printf '%s' "$kubelet_specs" | base64 | tr -d '\n')"}
YAML
	for kc in "${kubelet_configs[@]}"; do
		kgen=$(k get kubeletconfig "$kc" -o jsonpath='{.metadata.generation}')
		k patch kubeletconfig "$kc" --subresource=status --type=merge -p "{\"status\":{\"observedGeneration\":$kgen,
			\"conditions\":[{\"type\":\"Success\",\"status\":\"True\",\"reason\":\"\",\"message\":\"Success\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
	done
else
	k delete mc "$kubelet_mc" --ignore-not-found >/dev/null
fi

mapfile -t configs < <(k get mc -l "machineconfiguration.openshift.io/role=$role" \
	-o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | grep -v '^rendered-' | sort)

fingerprint=""
kargs=()
source_refs=()
for mc in "${configs[@]}"; do
	fingerprint+="$(k get mc "$mc" -o jsonpath='{.metadata.name}{" "}{.spec}')"$'\n'
	read -r -a args <<<"$(k get mc "$mc" -o jsonpath='{.spec.kernelArguments[*]}')"
	kargs+=("${args[@]}")
	source_refs+=("{\"apiVersion\":\"machineconfiguration.openshift.io/v1\",\"kind\":\"MachineConfig\",\"name\":\"$mc\"}")
done
rendered="rendered-$pool-$(printf '%s' "$fingerprint" | sha256sum | cut -c1-12)"
join() { local IFS=,; echo "$*"; }
karg_json=()
for a in "${kargs[@]}"; do karg_json+=("\"$a\""); done

k apply -f - >/dev/null <<YAML
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: $rendered
  labels: {machineconfiguration.openshift.io/role: $role}
spec:
  config: {ignition: {version: 3.2.0}}
  kernelArguments: [$(join "${karg_json[@]}")]
YAML

configuration="{\"name\":\"$rendered\",\"source\":[$(join "${source_refs[@]}")]}"
k patch mcp "$pool" --type=merge -p "{\"spec\":{\"configuration\":$configuration}}" >/dev/null
gen=$(k get mcp "$pool" -o jsonpath='{.metadata.generation}')
k patch mcp "$pool" --subresource=status --type=merge -p "{\"status\":{\"observedGeneration\":$gen,
	\"configuration\":$configuration,
	\"machineCount\":$MACHINES,\"updatedMachineCount\":$MACHINES,\"readyMachineCount\":$MACHINES,
	\"unavailableMachineCount\":0,\"degradedMachineCount\":0,
	\"conditions\":[
	{\"type\":\"Updated\",\"status\":\"True\",\"reason\":\"\",\"message\":\"All nodes are updated with $rendered\",\"lastTransitionTime\":\"$now\"},
	{\"type\":\"Updating\",\"status\":\"False\",\"reason\":\"\",\"message\":\"\",\"lastTransitionTime\":\"$now\"},
	{\"type\":\"Degraded\",\"status\":\"False\",\"reason\":\"\",\"message\":\"\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
echo "MachineConfigPool $pool rolled out $rendered (${#configs[@]} MachineConfigs: ${configs[*]:-none}; KubeletConfigs: ${kubelet_configs[*]:-none})"
