#!/usr/bin/env bash
# Plays the Machine Config Operator for one MachineConfigPool on a cluster that has none
# (the demo and the tests): renders the MachineConfigs the pool selects into
# rendered-<pool>-<hash>, points the pool at it and reports the pool Updated on it, as the
# real operator does once every node has rebooted into the new configuration.
#
# The rendered MachineConfig holds what the pool's MachineConfigs put on a node, merged in
# the order of their names as the operator merges them (MergeMachineConfigs): a file or a
# systemd unit of a later MachineConfig replaces one of the same path or name (Ignition's
# merge would combine a unit's drop-ins: not modelled), kernel arguments are concatenated
# without repeats, extensions concatenated, FIPS on if any asks, the last kernel type and OS
# image set win (kernel type "default" when none is). Its Ignition version is 3.5.0.
#
# KubeletConfigs come first, as the operator's kubelet config controller handles them: each
# KubeletConfig whose machineConfigPoolSelector selects the pool becomes the MachineConfig
# 99-<pool>-generated-kubelet, with "-<suffix>" when its mc-name-suffix annotation is not
# empty, controlled by the KubeletConfig (an owner reference), whose kubelet configuration
# file holds the KubeletConfig's spec (so a changed KubeletConfig renders a new
# configuration); each is reported Success at its generation. A generated MachineConfig no
# KubeletConfig of the pool names any more is deleted. A cluster without the KubeletConfig
# kind has none. As the operator does, a KubeletConfig's annotations are replaced with its
# mc-name-suffix annotation the first time it is handled: "" for the pool's first
# KubeletConfig, the highest suffix plus one for the next ones.
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

# json_string quotes its argument as a JSON string.
json_string() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "$s"
}
join() { local IFS=,; echo "$*"; }

# Each KubeletConfig as "<name><TAB><its machineConfigPoolSelector as a label selector>".
selectors='{{range .items}}{{.metadata.name}}{{"\t"}}{{with .spec.machineConfigPoolSelector}}
{{- range $k, $v := .matchLabels}}{{$k}}={{$v}},{{end}}
{{- range .matchExpressions}}
{{- if eq .operator "In" "NotIn"}}{{.key}} {{if eq .operator "NotIn"}}not{{end}}in ({{range $i, $v := .values}}{{if $i}},{{end}}{{$v}}{{end}}),
{{- else if eq .operator "Exists"}}{{.key}},
{{- else if eq .operator "DoesNotExist"}}!{{.key}},
{{- end}}{{end}}{{end}}{{"\n"}}{{end}}'
kubelet_lines=$(k get kubeletconfig -o go-template="$selectors" 2>/dev/null) || kubelet_lines=""
kubelet_prefix="99-$pool-generated-kubelet"
suffix_key='machineconfiguration\.openshift\.io/mc-name-suffix'
kubelet_configs=()
declare -A kubelet_suffix=()
while IFS=$'\t' read -r kc selector; do
	selector=${selector%,}
	# An empty selector selects no pool.
	[[ -n $kc && -n $selector ]] || continue
	selected=$(k get mcp -l "$selector" -o name 2>/dev/null) || selected=""
	if grep -qx "machineconfigpool.machineconfiguration.openshift.io/$pool" <<<"$selected"; then
		kubelet_configs+=("$kc")
		if k get kubeletconfig "$kc" -o jsonpath='{.metadata.annotations}' | grep -q 'mc-name-suffix'; then
			kubelet_suffix[$kc]=$(k get kubeletconfig "$kc" -o jsonpath="{.metadata.annotations.$suffix_key}")
		fi
	fi
done <<<"$kubelet_lines"
# The suffix of a KubeletConfig handled for the first time (getManagedKubeletConfigKey).
for kc in "${kubelet_configs[@]}"; do
	[[ -v kubelet_suffix[$kc] ]] && continue
	suffix=""
	if ((${#kubelet_configs[@]} > 1)); then
		highest=0 claimed=""
		for other in "${!kubelet_suffix[@]}"; do
			value=${kubelet_suffix[$other]}
			if [[ -z $value ]]; then
				claimed=yes
			elif ((value > highest)); then
				highest=$value
			fi
		done
		[[ -z $claimed ]] || suffix=$((highest + 1))
	fi
	kubelet_suffix[$kc]=$suffix
	# The first time the operator's kubelet config controller handles a KubeletConfig
	# without its mc-name-suffix annotation, it replaces all of its annotations with that
	# one (addAnnotation in pkg/controller/kubelet-config).
	k patch kubeletconfig "$kc" --type=json \
		-p "[{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"machineconfiguration.openshift.io/mc-name-suffix\":\"$suffix\"}}]" >/dev/null
done
generated=()
for kc in "${kubelet_configs[@]}"; do
	name=$kubelet_prefix
	[[ -z ${kubelet_suffix[$kc]} ]] || name+="-${kubelet_suffix[$kc]}"
	generated+=("$name")
	uid=$(k get kubeletconfig "$kc" -o jsonpath='{.metadata.uid}')
	spec=$(k get kubeletconfig "$kc" -o jsonpath='{.spec}')
	k apply -f - >/dev/null <<YAML
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: $name
  labels: {machineconfiguration.openshift.io/role: $role}
  ownerReferences:
  - {apiVersion: machineconfiguration.openshift.io/v1, kind: KubeletConfig, name: $kc, uid: $uid, controller: true, blockOwnerDeletion: true}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - path: /etc/kubernetes/kubelet.conf
        mode: 420
        overwrite: true
        contents: {source: "data:text/plain;charset=utf-8;base64,$(printf '%s %s\n' "$kc" "$spec" | base64 | tr -d '\n')"}
YAML
	kgen=$(k get kubeletconfig "$kc" -o jsonpath='{.metadata.generation}')
	k patch kubeletconfig "$kc" --subresource=status --type=merge -p "{\"status\":{\"observedGeneration\":$kgen,
		\"conditions\":[{\"type\":\"Success\",\"status\":\"True\",\"reason\":\"\",\"message\":\"Success\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
done
# Generated MachineConfigs no KubeletConfig of the pool names any more.
while read -r mc; do
	[[ -n $mc ]] || continue
	[[ $mc == "$kubelet_prefix" || $mc == "$kubelet_prefix"-* ]] || continue
	printf '%s\n' "${generated[@]}" | grep -qx -- "$mc" || k delete mc "$mc" --ignore-not-found >/dev/null
done < <(k get mc -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')

# The MachineConfigs of the role, by name, each as lines: "M <name> <spec>", then "F <path>
# <file>" and "U <name> <unit>" (JSON), and "K", "E", "S" lines with its kernel arguments,
# extensions, and "fips|kernelType|osImageURL" (fields separated by tabs).
lines='{range .items[*]}M{"\t"}{.metadata.name}{"\t"}{.spec}{"\n"}'
lines+='{range .spec.config.storage.files[*]}F{"\t"}{.path}{"\t"}{@}{"\n"}{end}'
lines+='{range .spec.config.systemd.units[*]}U{"\t"}{.name}{"\t"}{@}{"\n"}{end}'
lines+='K{"\t"}{.spec.kernelArguments[*]}{"\n"}E{"\t"}{.spec.extensions[*]}{"\n"}'
lines+='S{"\t"}{.spec.fips}|{.spec.kernelType}|{.spec.osImageURL}{"\n"}{end}'
listing=$(k get mc -l "machineconfiguration.openshift.io/role=$role" -o jsonpath="$lines")

configs=() fingerprint="" skip=""
declare -A files=() units=() seen_karg=()
file_order=() unit_order=() kargs=() extensions=()
fips=false kernel_type="" os_image=""
while IFS=$'\t' read -r tag a b c; do
	if [[ $tag == M ]]; then
		skip=""
		if [[ $a == rendered-* ]]; then
			skip=yes
			continue
		fi
		configs+=("$a")
		fingerprint+="$a $b"$'\n'
		continue
	fi
	[[ -z $skip ]] || continue
	case $tag in
	F)
		[[ -v files[$a] ]] || file_order+=("$a")
		files[$a]=$b
		;;
	U)
		[[ -v units[$a] ]] || unit_order+=("$a")
		units[$a]=$b
		;;
	K)
		for arg in $a; do
			[[ -v seen_karg[$arg] ]] && continue
			seen_karg[$arg]=1
			kargs+=("$(json_string "$arg")")
		done
		;;
	E)
		for ext in $a; do extensions+=("$(json_string "$ext")"); done
		;;
	S)
		IFS='|' read -r mc_fips mc_kernel_type mc_os_image <<<"$a"
		[[ $mc_fips != true ]] || fips=true
		[[ -z $mc_kernel_type ]] || kernel_type=$mc_kernel_type
		[[ -z $mc_os_image ]] || os_image=$mc_os_image
		;;
	esac
done <<<"$listing"
rendered="rendered-$pool-$(printf '%s' "$fingerprint" | sha256sum | cut -c1-12)"
file_json=() unit_json=() source_refs=()
for path in "${file_order[@]}"; do file_json+=("${files[$path]}"); done
for unit in "${unit_order[@]}"; do unit_json+=("${units[$unit]}"); done
for mc in "${configs[@]}"; do
	source_refs+=("{\"apiVersion\":\"machineconfiguration.openshift.io/v1\",\"kind\":\"MachineConfig\",\"name\":\"$mc\"}")
done
os_image_field=""
[[ -z $os_image ]] || os_image_field=",\"osImageURL\":$(json_string "$os_image")"

k apply -f - >/dev/null <<JSON
{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
 "metadata": {"name": "$rendered", "labels": {"machineconfiguration.openshift.io/role": "$role"}},
 "spec": {"config": {"ignition": {"version": "3.5.0"},
                     "storage": {"files": [$(join "${file_json[@]}")]},
                     "systemd": {"units": [$(join "${unit_json[@]}")]}},
          "kernelArguments": [$(join "${kargs[@]}")], "extensions": [$(join "${extensions[@]}")],
          "fips": $fips, "kernelType": "${kernel_type:-default}"$os_image_field}}
JSON

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
