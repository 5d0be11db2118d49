# Image URL to use for building and pushing the operator image.
IMG ?= quay.io/kubevirt/virt-advisor-operator:latest
# Version reported by the operator (--version, status.operatorVersion); injected with -ldflags.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS := -X github.com/kubevirt/virt-advisor-operator/internal/version.Version=$(VERSION)

# Tools run with the local toolchain only: nothing is fetched except through the Go module proxy.
export GOTOOLCHAIN := local

# CONTAINER_TOOL builds the image (docker or podman).
CONTAINER_TOOL ?= docker

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show every target with its description.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate the CRD and RBAC manifests under config/ from the Go markers.
	"$(CONTROLLER_GEN)" rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate the DeepCopy methods of the API types.
	"$(CONTROLLER_GEN)" object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -w $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: verify
verify: manifests generate build-installer ## Fail if generated files (CRD, RBAC, DeepCopy, dist/install.yaml) are stale or code is not gofmt-clean.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@changed=$$(git status --porcelain -- api config dist); if [ -n "$$changed" ]; then \
		echo "'make manifests generate' changed committed files; run it and commit the result:"; echo "$$changed"; \
		git --no-pager diff --stat -- api config dist; exit 1; fi

.PHONY: test
test: verify vet envtest test-unit test-e2e demo-check ## Run everything CI runs: verify, vet, unit + envtest suites, e2e, and the demo.

.PHONY: test-unit
test-unit: envtest ## Run the unit and envtest suites (real kube-apiserver + etcd).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test $$(go list ./... | grep -v /test/e2e) -count=1 -timeout 20m

.PHONY: test-e2e
test-e2e: envtest build ## Run the end-to-end test: the manager binary against a local control plane, driven by kubectl.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BINARY="$(CURDIR)/bin/manager" \
		go test ./test/e2e/ -count=1 -timeout 15m -v -ginkgo.v

.PHONY: demo-check
demo-check: ## Run the demo walkthrough non-interactively (DEMO_EXIT=1).
	DEMO_EXIT=1 $(MAKE) --no-print-directory demo

.PHONY: bench
bench: envtest ## Run the benchmarks and print their figures.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test ./... -run '^$$' -bench . -benchmem -count=1

##@ Build

.PHONY: build
build: ## Build the manager binary into bin/manager.
	go build -ldflags "$(LDFLAGS)" -o bin/manager ./cmd

.PHONY: run
run: manifests generate ## Run the manager against the cluster of the current kubeconfig.
	go run -ldflags "$(LDFLAGS)" ./cmd --leader-elect=false

.PHONY: demo
demo: envtest build controlplane ## Walk through plan → review → approve → rollout → drift on a local control plane (DEMO_EXIT=1 exits at the end).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BINARY="$(CURDIR)/bin/manager" hack/demo.sh

.PHONY: controlplane
controlplane: ## Build bin/controlplane: a local kube-apiserver + etcd with the CRDs installed.
	go build -o bin/controlplane ./hack/controlplane

.PHONY: docker-build
docker-build: ## Build the operator image.
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image.
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: build-installer
build-installer: manifests generate envtest ## Write dist/install.yaml (CRD, RBAC, Deployment running IMG).
	rm -rf bin/installer && mkdir -p bin/installer dist && cp -r config bin/installer/
	sed -i 's|image: controller:latest|image: $(IMG)|' bin/installer/config/manager/manager.yaml
	"$(KUBECTL)" kustomize bin/installer/config/default > dist/install.yaml

##@ Deployment

.PHONY: install
install: manifests envtest ## Install the CRD into the cluster of the current kubeconfig.
	"$(KUBECTL)" kustomize config/crd | "$(KUBECTL)" apply --server-side -f -

.PHONY: uninstall
uninstall: manifests envtest ## Remove the CRD (and every VirtPlatformConfig) from the cluster.
	"$(KUBECTL)" kustomize config/crd | "$(KUBECTL)" delete --ignore-not-found -f -

.PHONY: deploy
deploy: build-installer ## Deploy the operator with image IMG to the cluster of the current kubeconfig.
	"$(KUBECTL)" apply --server-side -f dist/install.yaml

.PHONY: undeploy
undeploy: envtest ## Remove the operator from the cluster.
	"$(KUBECTL)" delete --ignore-not-found -f dist/install.yaml

##@ Tools

LOCALBIN ?= $(CURDIR)/bin
$(LOCALBIN):
	mkdir -p "$(LOCALBIN)"

CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Build controller-gen into bin/.
$(CONTROLLER_GEN): | $(LOCALBIN)
	GOBIN="$(LOCALBIN)/.controller-gen" go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv "$(LOCALBIN)/.controller-gen/controller-gen" "$(CONTROLLER_GEN)" && rm -rf "$(LOCALBIN)/.controller-gen"

# The envtest control plane (kube-apiserver, etcd, kubectl) built from pinned Go modules.
ENVTEST_K8S_VERSION := $(shell cd hack/tools/kubernetes && grep -E '^require k8s.io/kubernetes ' go.mod | awk '{print $$3}')
ENVTEST_ASSETS := $(LOCALBIN)/k8s/$(ENVTEST_K8S_VERSION)
KUBECTL := $(ENVTEST_ASSETS)/kubectl

.PHONY: envtest
envtest: | $(LOCALBIN) ## Build kube-apiserver, etcd and kubectl for envtest and print their directory (KUBEBUILDER_ASSETS).
	@hack/build-envtest-binaries.sh
