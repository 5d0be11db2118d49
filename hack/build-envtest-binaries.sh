#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver, etcd, kubectl) from the Go
# modules pinned in hack/tools/kubernetes and hack/tools/etcd, into
#   $BIN_DIR/k8s/<kubernetes-version>/
# and prints that directory (the value for KUBEBUILDER_ASSETS) on stdout.
#
# Nothing is downloaded except through the Go module proxy. A binary that is
# already built from the same pinned go.mod/go.sum is reused. Any build failure
# stops the script with a non-zero exit and the compiler's output.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$ROOT/bin}
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export GOFLAGS=${GOFLAGS:--mod=readonly}

log() { printf 'build-envtest-binaries: %s\n' "$*" >&2; }

module_version() { # <tools dir> <module path>
	go -C "$1" list -m -f '{{.Version}}' "$2"
}

K8S_DIR=$ROOT/hack/tools/kubernetes
ETCD_DIR=$ROOT/hack/tools/etcd
K8S_VERSION=$(module_version "$K8S_DIR" k8s.io/kubernetes)
ETCD_VERSION=$(module_version "$ETCD_DIR" go.etcd.io/etcd/server/v3)
OUT=$BIN_DIR/k8s/$K8S_VERSION
mkdir -p "$OUT"

# stamp_of names the inputs a binary was built from, so a change of pins rebuilds it.
stamp_of() { cat "$1/go.mod" "$1/go.sum" | sha256sum | cut -c1-16; }

build() { # <name> <tools dir> <package> <ldflags>
	local name=$1 dir=$2 pkg=$3 ldflags=$4
	local stamp
	stamp="$(stamp_of "$dir")-$(go env GOVERSION)"
	if [[ -x $OUT/$name && -f $OUT/.$name.stamp && $(cat "$OUT/.$name.stamp") == "$stamp" ]]; then
		log "$name is current ($OUT/$name)"
		return 0
	fi
	log "building $name from $pkg (the first build takes several minutes)"
	rm -f "$OUT/.$name.stamp"
	if ! go -C "$dir" build -trimpath -ldflags "-s -w $ldflags" -o "$OUT/$name.tmp" "$pkg"; then
		log "FAILED to build $name from $pkg"
		rm -f "$OUT/$name.tmp"
		exit 1
	fi
	mv "$OUT/$name.tmp" "$OUT/$name"
	echo "$stamp" >"$OUT/.$name.stamp"
	log "built $OUT/$name"
}

minor=${K8S_VERSION#v1.}
minor=${minor%%.*}
K8S_LDFLAGS="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION \
 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

build kube-apiserver "$K8S_DIR" k8s.io/kubernetes/cmd/kube-apiserver "$K8S_LDFLAGS"
build kubectl "$K8S_DIR" k8s.io/kubernetes/cmd/kubectl "$K8S_LDFLAGS"
build etcd "$ETCD_DIR" go.etcd.io/etcd/server/v3 ""

for b in kube-apiserver etcd kubectl; do
	[[ -x $OUT/$b ]] || { log "missing $OUT/$b after build"; exit 1; }
done
log "kubernetes $K8S_VERSION, etcd $ETCD_VERSION ready"
echo "$OUT"
