#!/usr/bin/env bash
# `make demo`: the load-aware-rebalancing workflow on a local control plane, driven with
# kubectl exactly as on a cluster: plan -> review the diffs -> approve -> rollout ->
# Completed -> drift. The pool simulator (bin/poolsim) plays the Machine Config Operator for
# the whole walkthrough, with three worker Nodes. With DEMO_EXIT=1 it exits after the
# walkthrough; otherwise it keeps the control plane, the simulator and the operator running
# for your own kubectl until Ctrl-C.
#
# Needs KUBEBUILDER_ASSETS (kube-apiserver, etcd, kubectl) and MANAGER_BINARY; the
# Makefile provides both, and builds bin/controlplane and bin/poolsim.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${KUBEBUILDER_ASSETS:?run this through make demo}"
: "${MANAGER_BINARY:?run this through make demo}"
CONTROLPLANE_BINARY=${CONTROLPLANE_BINARY:-$ROOT/bin/controlplane}
POOLSIM_BINARY=${POOLSIM_BINARY:-$ROOT/bin/poolsim}
export PATH=$KUBEBUILDER_ASSETS:$PATH

WORK=$(mktemp -d "${TMPDIR:-/tmp}/virt-advisor-demo.XXXXXX")
export KUBECONFIG=$WORK/kubeconfig
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bold=$'\033[1m' dim=$'\033[2m' reset=$'\033[0m'
[[ -t 1 ]] || { bold="" dim="" reset=""; }
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$reset"; }
run() { printf '%s$ %s%s\n' "$dim" "$*" "$reset"; "$@"; }
fail() {
	echo "demo: $*" >&2
	echo "--- operator log (last 40 lines) ---" >&2
	tail -n 40 "$WORK/manager.log" >&2 || true
	echo "--- pool simulator log (last 20 lines) ---" >&2
	tail -n 20 "$WORK/poolsim.log" >&2 || true
	exit 1
}

step "Starting a local control plane (kube-apiserver + etcd) with the CRDs installed"
"$CONTROLPLANE_BINARY" --write-kubeconfig "$KUBECONFIG" >"$WORK/controlplane.log" 2>&1 &
pids+=($!)
for _ in $(seq 120); do
	grep -q '^ready$' "$WORK/controlplane.log" 2>/dev/null && break
	kill -0 "${pids[0]}" 2>/dev/null || { cat "$WORK/controlplane.log" >&2; fail "the control plane did not start"; }
	sleep 0.5
done
grep -q '^ready$' "$WORK/controlplane.log" || fail "the control plane did not become ready"
run kubectl get crd

step "Starting the pool simulator: three worker Nodes, and the Machine Config Operator's part"
"$POOLSIM_BINARY" --workers 3 --reboot-time 2s >"$WORK/poolsim.log" 2>&1 &
pids+=($!)
echo "pool simulator log: $WORK/poolsim.log"
for _ in $(seq 60); do
	[[ $(kubectl get nodes -o name 2>/dev/null | wc -l) -ge 3 ]] && break
	kill -0 "${pids[1]}" 2>/dev/null || fail "the pool simulator stopped"
	sleep 0.5
done
run kubectl get nodes

step "Creating stand-ins for OpenShift Virtualization, the descheduler and the worker pool"
run kubectl apply -f "$ROOT/config/samples/mock_baseline_resources.yaml"
echo "The simulator renders the pool's first configuration, and the workers join the pool on it:"
run kubectl wait mcp/worker --for=condition=Updated --timeout=60s || fail "the worker pool did not roll out"
run kubectl get mcp worker
run kubectl create namespace virt-advisor-operator-system

step "Starting the operator"
"$MANAGER_BINARY" --namespace=virt-advisor-operator-system --metrics-bind-address=0 \
	--health-probe-bind-address=0 --health-poll-interval=1s >"$WORK/manager.log" 2>&1 &
pids+=($!)
echo "operator $("$MANAGER_BINARY" --version), log: $WORK/manager.log"
for _ in $(seq 60); do
	kubectl get vpc load-aware-rebalancing >/dev/null 2>&1 && break
	sleep 0.5
done
echo "Every profile is advertised as an ignored config:"
run kubectl get vpc

step "Asking for a plan (action DryRun)"
run cat "$ROOT/config/samples/loadaware_sample.yaml"
run kubectl apply -f "$ROOT/config/samples/loadaware_sample.yaml"
run kubectl wait vpc/load-aware-rebalancing --for=condition=ReviewRequired --timeout=60s || fail "no plan to review"
run kubectl get vpc load-aware-rebalancing

step "Reviewing the plan: one server-side-apply dry-run diff per item"
kubectl get vpc load-aware-rebalancing -o jsonpath='{range .status.items[*]}{"\n# "}{.name}{" (impact "}{.impactSeverity}{"): "}{.message}{"\n"}{.diff}{end}'
echo
echo "Nothing has been changed yet; the descheduler still has its old profiles:"
run kubectl get kubedescheduler cluster -n openshift-kube-descheduler-operator -o jsonpath='{.spec.profiles}{"\n"}'

step "Approving exactly the plan shown: the command the status gives (action Apply, pinned to the plan hash)"
run kubectl get vpc load-aware-rebalancing -o jsonpath='{.status.approval.command}{"\n"}'
approve=$(kubectl get vpc load-aware-rebalancing -o jsonpath='{.status.approval.command}')
[[ $approve == "kubectl patch vpc load-aware-rebalancing "* ]] || fail "the status gives no approval command"
simulated=$(wc -l <"$WORK/poolsim.log")
run bash -c "$approve"
run kubectl wait vpc/load-aware-rebalancing --for=jsonpath='{.status.items[1].state}'=InProgress --timeout=60s ||
	fail "the PSI MachineConfig was not applied"
run kubectl get vpc load-aware-rebalancing -o jsonpath='{range .status.items[*]}{.name}{": "}{.state}{" - "}{.message}{"\n"}{end}'

step "The Machine Config Operator renders the new configuration and reboots the workers into psi=1, one at a time (the pool simulator here)"
run kubectl wait vpc/load-aware-rebalancing --for=condition=Completed --timeout=2m || fail "the plan did not complete"
run kubectl get vpc load-aware-rebalancing
echo "What the pool simulator did meanwhile:"
tail -n +$((simulated + 1)) "$WORK/poolsim.log"
run kubectl get mcp worker

step "The result"
run kubectl get kubedescheduler cluster -n openshift-kube-descheduler-operator -o jsonpath='{.spec}{"\n"}'
run kubectl get machineconfig 99-worker-psi-karg -o jsonpath='{.spec.kernelArguments}{"\n"}'

step "Drift: someone edits the descheduler by hand"
run kubectl patch kubedescheduler cluster -n openshift-kube-descheduler-operator --type=merge -p '{"spec":{"deschedulingIntervalSeconds":3600}}'
run kubectl wait vpc/load-aware-rebalancing --for=condition=Drifted --timeout=60s || fail "the drift was not detected"
kubectl get vpc load-aware-rebalancing -o jsonpath='{.status.items[0].diff}'
echo "Reverting the edit brings the config back to Completed:"
run kubectl patch kubedescheduler cluster -n openshift-kube-descheduler-operator --type=merge -p '{"spec":{"deschedulingIntervalSeconds":60}}'
run kubectl wait vpc/load-aware-rebalancing --for=condition=Ready --timeout=60s || fail "the config did not return to Completed"
run kubectl get vpc

step "Leaving a field to someone else: the advisor.kubevirt.io/ignore-fields annotation"
run kubectl annotate kubedescheduler cluster -n openshift-kube-descheduler-operator advisor.kubevirt.io/ignore-fields=/spec/deschedulingIntervalSeconds
echo "An annotation is an input of the plan: it is drafted again, without the interval among its managed fields."
run kubectl wait vpc/load-aware-rebalancing --for=jsonpath='{.status.items[0].ignoredFields[0]}'=/spec/deschedulingIntervalSeconds --timeout=60s ||
	fail "the annotation was not honoured"
run kubectl wait vpc/load-aware-rebalancing --for=condition=Ready --timeout=60s || fail "the config did not settle"
run kubectl get vpc load-aware-rebalancing -o jsonpath='{.status.items[0].managedFields}{"\n"}'
echo "Changing the interval now is no drift: the config stays Completed."
run kubectl patch kubedescheduler cluster -n openshift-kube-descheduler-operator --type=merge -p '{"spec":{"deschedulingIntervalSeconds":1800}}'
run kubectl get vpc
run kubectl get events --field-selector involvedObject.name=load-aware-rebalancing --sort-by=.metadata.creationTimestamp

if [[ ${DEMO_EXIT:-} == 1 ]]; then
	step "Demo complete"
	exit 0
fi
step "The control plane, the pool simulator and the operator keep running. In another terminal:"
echo "  export KUBECONFIG=$KUBECONFIG PATH=$KUBEBUILDER_ASSETS:\$PATH"
echo "  kubectl get vpc"
echo "Press Ctrl-C to stop."
wait "${pids[0]}"
