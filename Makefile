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
verify: manifests generate build-installer ## Fail if generated files (CRD, RBAC, DeepCopy, dist/install.yaml) are stale, code is not gofmt-clean, the controller's calls form a cycle, or a production file is over 450 lines.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@changed=$$(git status --porcelain -- api config dist); if [ -n "$$changed" ]; then \
		echo "'make manifests generate' changed committed files; run it and commit the result:"; echo "$$changed"; \
		git --no-pager diff --stat -- api config dist; exit 1; fi
	@go run ./hack/callgraph ./internal/controller
	@long=$$(git ls-files 'internal/*.go' 'cmd/*.go' | grep -v '_test.go$$' | grep -v zz_generated | xargs wc -l | awk '$$2 != "total" && $$1 > 450'); \
		if [ -n "$$long" ]; then echo "production files over 450 lines (split them along what the code is about):"; echo "$$long"; exit 1; fi

.PHONY: test
test: verify vet lint test-alerts envtest test-unit test-suites demo-check ## Run everything CI runs: verify, vet, lint, alert rules, unit + envtest suites, e2e, the console plugin (Jest, tsc, Chromium), install, the fault tests, the fleet test, the user guide, and the demo.

# The suites that run the manager binary mostly wait for it and for the pool simulator: they
# run in three lanes side by side, each on control planes of its own: e2e in one, the console
# plugin's tests (npm ci when needed, Jest, tsc, the build, the browser test), then the fault
# suite, then the fleet suite in another, install, then the guide in the third. The output
# of the first two follows the third's.
.PHONY: test-suites
test-suites: envtest helm build build-installer chromium ## Run three lanes side by side: the e2e suite; the console plugin's tests, then the fault suite, then the fleet suite; the install suite, then the guide.
	@mkdir -p bin/suite-logs; \
	( $(E2E_TEST) ) > bin/suite-logs/e2e.log 2>&1 & e2e=$$!; \
	( $(MAKE) --no-print-directory console-deps && $(CONSOLE_TEST) && $(FAULTS_TEST) && $(FLEET_TEST) ) > bin/suite-logs/console.log 2>&1 & console=$$!; \
	rest=0; ( $(INSTALL_TEST) ) && ( $(GUIDE_TEST) ) || rest=$$?; \
	e2e_rc=0; wait $$e2e || e2e_rc=$$?; \
	console_rc=0; wait $$console || console_rc=$$?; \
	echo "=== test-e2e (ran beside the other suites) ==="; cat bin/suite-logs/e2e.log; \
	echo "=== test-console, then test-faults, then test-fleet (ran beside the other suites) ==="; cat bin/suite-logs/console.log; \
	if [ $$e2e_rc -ne 0 ]; then echo "test-e2e failed (exit $$e2e_rc)"; fi; \
	if [ $$console_rc -ne 0 ]; then echo "test-console, test-faults or test-fleet failed (exit $$console_rc)"; fi; \
	if [ $$rest -ne 0 ]; then echo "test-install or test-guide failed (exit $$rest)"; fi; \
	[ $$e2e_rc -eq 0 ] && [ $$console_rc -eq 0 ] && [ $$rest -eq 0 ]

# The controller suite mostly waits for its control plane: Ginkgo runs its specs in two
# processes, each with a control plane of its own, beside the other packages.
.PHONY: test-unit
test-unit: envtest ginkgo ## Run the unit and envtest suites (real kube-apiserver + etcd); the controller suite in two processes, beside the other packages.
	@mkdir -p bin/suite-logs; \
	( $(CONTROLLER_TEST) ) > bin/suite-logs/controller.log 2>&1 & ctrl=$$!; \
	rest=0; $(PACKAGES_TEST) || rest=$$?; \
	ctrl_rc=0; wait $$ctrl || ctrl_rc=$$?; \
	echo "=== internal/controller (ran beside the other packages) ==="; cat bin/suite-logs/controller.log; \
	if [ $$ctrl_rc -ne 0 ]; then echo "the controller suite failed (exit $$ctrl_rc)"; fi; \
	[ $$ctrl_rc -eq 0 ] && [ $$rest -eq 0 ]

.PHONY: test-controller
test-controller: envtest ginkgo ## Run the controller suite (envtest) in two Ginkgo processes.
	$(CONTROLLER_TEST)
CONTROLLER_TEST = KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" "$(GINKGO)" -p --procs=2 --timeout=20m ./internal/controller

.PHONY: test-packages
test-packages: envtest ## Run the unit and envtest suites of every package but the controller's and those of the suites of test-suites.
	$(PACKAGES_TEST)
PACKAGES_TEST = KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test $$(go list ./... | grep -v -e /test/e2e -e /test/install \
	-e /test/faults -e /test/guide -e /test/console -e '/test/fleet$$' -e '/internal/controller$$') -count=1 -timeout 20m

.PHONY: test-e2e
test-e2e: envtest build build-installer ## Run the end-to-end test: the manager binary against a local control plane, driven by kubectl.
	$(E2E_TEST)
E2E_TEST = KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BINARY="$(CURDIR)/bin/manager" PLUGIN_BINARY="$(CURDIR)/bin/kubectl-virt_advisor" \
	go test ./test/e2e/ -count=1 -timeout 15m -v -ginkgo.v

.PHONY: test-guide
test-guide: envtest build ## Run every command of the user guide (docs/guide) against the manager binary on a local control plane.
	$(GUIDE_TEST)
GUIDE_TEST = KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BINARY="$(CURDIR)/bin/manager" \
	go test ./test/guide/ -count=1 -timeout 10m -v

.PHONY: test-faults
test-faults: envtest build ## Run the fault tests: the manager binary killed, the API server restarted, 409s, a lost leader, deletions.
	$(FAULTS_TEST)
FAULTS_TEST = KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BINARY="$(CURDIR)/bin/manager" \
	go test ./test/faults/ -count=1 -timeout 10m -v -ginkgo.v

.PHONY: test-fleet
test-fleet: envtest build ## Run the fleet test: three control planes, each with its own manager, in one kubeconfig; a content approval and the plugin's fleet commands across them.
	$(FLEET_TEST)
FLEET_TEST = KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BINARY="$(CURDIR)/bin/manager" PLUGIN_BINARY="$(CURDIR)/bin/kubectl-virt_advisor" \
	go test ./test/fleet/ -count=1 -timeout 10m -v

.PHONY: test-install
test-install: envtest helm build-installer build ## Install the chart and dist/install.yaml on a local control plane with the real helm and kubectl; scrape the metrics with tokens.
	$(INSTALL_TEST)
INSTALL_TEST = KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" HELM="$(HELM)" MANAGER_BINARY="$(CURDIR)/bin/manager" \
	go test ./test/install/ -count=1 -timeout 10m -v -ginkgo.v

.PHONY: demo-check
demo-check: ## Run the demo walkthrough non-interactively (DEMO_EXIT=1).
	DEMO_EXIT=1 $(MAKE) --no-print-directory demo

# RUNS is how many times `make bench` runs each profile case end to end, each on a fresh control
# plane; IDLE_SECONDS is the idle window measured after each Completed (shorter for a quick run);
# BENCH_FLAGS are further flags of hack/benche2e (go run ./hack/benche2e -h lists them).
RUNS ?= 3
IDLE_SECONDS ?= 60
BENCH_FLAGS ?=

.PHONY: bench
bench: envtest build ## Run the Go benchmarks, then the end-to-end figures: each profile (RUNS runs, IDLE_SECONDS idle), reboots and waves, memory as worker Nodes grow, VM forecast against actual and memory per VMI.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test ./... -run '^$$' -bench . -benchmem -count=1
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BINARY="$(CURDIR)/bin/manager" \
		go run ./hack/benche2e -runs=$(RUNS) -idle-seconds=$(IDLE_SECONDS) $(BENCH_FLAGS)

# FUZZTIME is how long `make fuzz` runs each fuzz target. FUZZMINIMIZETIME caps the time spent
# shrinking each input that finds new code (go's default, a minute, would take most of FUZZTIME).
FUZZTIME ?= 60s
FUZZMINIMIZETIME ?= 10s
FUZZ = go test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (60s), one after the other; a failing input lands in the package's testdata/fuzz/<target>/.
	$(FUZZ) -fuzz '^FuzzDiff$$' ./internal/plan/
	$(FUZZ) -fuzz '^FuzzHashCanonical$$' ./internal/plan/
	$(FUZZ) -fuzz '^FuzzReadControls$$' ./internal/plan/
	$(FUZZ) -fuzz '^FuzzParsePointer$$' ./internal/plan/
	$(FUZZ) -fuzz '^FuzzLoadAwareDefaults$$' ./internal/profiles/
	$(FUZZ) -fuzz '^FuzzHigherDensityDefaults$$' ./internal/profiles/
	$(FUZZ) -fuzz '^FuzzPlatformBaselineDefaults$$' ./internal/profiles/
	$(FUZZ) -fuzz '^FuzzWindow$$' ./internal/schedule/

.PHONY: lint
lint: golangci-lint ## Run golangci-lint with .golangci.yml.
	"$(GOLANGCI_LINT)" run ./...

# The rule file promtool reads: the spec of config/prometheus/prometheus_rule.yaml
# (test/alerts/prometheus_rule*_test.yaml load it from here).
ALERT_RULES := $(CURDIR)/bin/alerts/rules.yaml

.PHONY: test-alerts
test-alerts: promtool ## Check the alerting rules with promtool, run their unit tests, and check every alert has its runbook.
	go run ./hack/rulespec config/prometheus/prometheus_rule.yaml "$(ALERT_RULES)"
	"$(PROMTOOL)" check rules "$(ALERT_RULES)"
	"$(PROMTOOL)" test rules test/alerts/prometheus_rule*_test.yaml
	go test ./test/alerts/ -count=1

##@ Build

.PHONY: build
build: ## Build the manager binary into bin/manager and the kubectl plugin into bin/kubectl-virt_advisor.
	go build -ldflags "$(LDFLAGS)" -o bin/manager ./cmd
	go build -ldflags "$(LDFLAGS)" -o bin/kubectl-virt_advisor ./cmd/kubectl-virt_advisor

# The platforms of the kubectl plugin's release archives (dist/krew/virt-advisor.yaml lists them).
KREW_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: krew-manifest
krew-manifest: ## Build the kubectl plugin's release archives into bin/krew/ and write bin/krew/virt-advisor.yaml for VERSION.
	rm -rf bin/krew && mkdir -p bin/krew
	sed '/^#/d' dist/krew/virt-advisor.yaml > bin/krew/virt-advisor.yaml
	sed -i 's|$${VERSION}|$(VERSION)|g' bin/krew/virt-advisor.yaml
	for platform in $(KREW_PLATFORMS); do \
		os=$${platform%/*}; arch=$${platform#*/}; dir=bin/krew/$$os-$$arch; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $$dir/kubectl-virt_advisor ./cmd/kubectl-virt_advisor; \
		archive=bin/krew/kubectl-virt_advisor_$(VERSION)_$${os}_$${arch}.tar.gz; \
		tar -C $$dir -czf $$archive kubectl-virt_advisor; \
		sum=$$(sha256sum $$archive | cut -d' ' -f1); \
		sed -i "s|\$${SHA256_$${os^^}_$${arch^^}}|$$sum|" bin/krew/virt-advisor.yaml; \
	done
	@echo "bin/krew/virt-advisor.yaml and its archives are ready to publish"

.PHONY: run
run: manifests generate ## Run the manager against the cluster of the current kubeconfig.
	go run -ldflags "$(LDFLAGS)" ./cmd --leader-elect=false

.PHONY: demo
demo: envtest build controlplane poolsim ## Walk through plan → review → approve → rollout → drift on a local control plane (DEMO_EXIT=1 exits at the end).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BINARY="$(CURDIR)/bin/manager" hack/demo.sh

.PHONY: controlplane
controlplane: ## Build bin/controlplane: a local kube-apiserver + etcd with the CRDs installed.
	go build -o bin/controlplane ./hack/controlplane

.PHONY: poolsim
poolsim: ## Build bin/poolsim: the pool simulator, which plays the Machine Config Operator on a control plane without machines.
	go build -o bin/poolsim ./hack/poolsim

.PHONY: docker-build
docker-build: ## Build the operator image.
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image.
	$(CONTAINER_TOOL) push $(IMG)

# dist/chart is written by kubebuilder's helm/v2-alpha plugin from config/helm, run in copies of
# the project (PROJECT, dist/chart) under CHART_PROJECT, so that it writes nothing but the chart
# (run in the project it also adds a GitHub workflow). Its first run, on config/helm/main, writes
# CHART_GENERATED, which are emptied first so that the template of an object removed from config/
# goes too; its second run, on config/helm/roles, writes the Roles and RoleBindings, which the
# first cannot (see config/helm/main), into templates/rbac/namespaced. The plugin keeps the files
# it does not generate: those of dist/chart written by hand. With no ServiceMonitor in its input
# it adds a generic one (templates/monitoring), which is removed: the chart's own is in
# templates/prometheus. files/prometheus_rule.yaml is read by templates/prometheus/alerts.yaml,
# files/policies/ (the admission policies of config/policies) by templates/policies/policies.yaml.
CHART_PROJECT := bin/chart
CHART_GENERATED := crd rbac
CHART_PLUGIN = "$(KUBEBUILDER)" edit --plugins=helm/v2-alpha --manifests=bin/chart/manifests.yaml --output-dir=dist

.PHONY: build-installer
build-installer: manifests generate envtest kubebuilder ## Write dist/install.yaml (CRD, RBAC, Deployment running IMG; with CONSOLE_PLUGIN=true the console plugin running CONSOLE_IMG too) and the generated templates of dist/chart.
	rm -rf bin/installer && mkdir -p bin/installer dist && cp -r config bin/installer/
	sed -i 's|image: controller:latest|image: $(IMG)|' bin/installer/config/manager/manager.yaml
	"$(KUBECTL)" kustomize bin/installer/config/default > dist/install.yaml
	if [ "$(CONSOLE_PLUGIN)" = true ]; then \
		sed -i 's|image: console-plugin:latest|image: $(CONSOLE_IMG)|' bin/installer/config/console-plugin/deployment.yaml && \
		{ echo "---"; "$(KUBECTL)" kustomize bin/installer/config/console-plugin; } >> dist/install.yaml; fi
	rm -rf "$(CHART_PROJECT)"
	for run in main roles; do \
		mkdir -p "$(CHART_PROJECT)/$$run/bin/chart" "$(CHART_PROJECT)/$$run/dist" && cp PROJECT "$(CHART_PROJECT)/$$run/" && \
		"$(KUBECTL)" kustomize "config/helm/$$run" > "$(CHART_PROJECT)/$$run/bin/chart/manifests.yaml"; done
	cp -r dist/chart "$(CHART_PROJECT)/main/dist/"
	for dir in $(CHART_GENERATED); do rm -rf "$(CHART_PROJECT)/main/dist/chart/templates/$$dir"; done
	cd "$(CHART_PROJECT)/main" && $(CHART_PLUGIN)
	cd "$(CHART_PROJECT)/roles" && $(CHART_PLUGIN)
	@cmp -s PROJECT "$(CHART_PROJECT)/main/PROJECT" || { echo "PROJECT does not record the helm/v2-alpha plugin as build-installer runs it:"; \
		diff PROJECT "$(CHART_PROJECT)/main/PROJECT"; exit 1; }
	mkdir -p "$(CHART_PROJECT)/main/dist/chart/templates/rbac/namespaced"
	grep -lE '^kind: (Role|RoleBinding)$$' "$(CHART_PROJECT)/roles/dist/chart/templates/rbac/"*.yaml | \
		xargs -r cp -t "$(CHART_PROJECT)/main/dist/chart/templates/rbac/namespaced/"
	rm -rf "$(CHART_PROJECT)/main/dist/chart/templates/monitoring"
	mkdir -p "$(CHART_PROJECT)/main/dist/chart/files" && cp config/prometheus/prometheus_rule.yaml "$(CHART_PROJECT)/main/dist/chart/files/"
	rm -rf "$(CHART_PROJECT)/main/dist/chart/files/policies" && mkdir -p "$(CHART_PROJECT)/main/dist/chart/files/policies" && \
		cp config/policies/identity.yaml config/policies/approve_verb.yaml config/policies/four_eyes.yaml "$(CHART_PROJECT)/main/dist/chart/files/policies/"
	rm -rf dist/chart && cp -r "$(CHART_PROJECT)/main/dist/chart" dist/chart

##@ Console plugin

# The OpenShift console plugin (console/): its files are built with npm from the exact
# versions of console/package-lock.json; its image serves them (console/Dockerfile).
CONSOLE_IMG ?= quay.io/kubevirt/virt-advisor-console-plugin:latest
# CONSOLE_PLUGIN=true makes build-installer append the console plugin (config/console-plugin,
# OpenShift only) to dist/install.yaml; the committed dist/install.yaml leaves it out.
CONSOLE_PLUGIN ?= false

# console-deps installs console/node_modules with npm ci when it is missing or older than
# console/package-lock.json.
.PHONY: console-deps
console-deps:
	cd console && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund; }

.PHONY: console-build
console-build: console-deps ## Build the console plugin's files (plugin-manifest.json, the entry script, its chunks and locales) into console/dist.
	cd console && npm run build

.PHONY: console-docker-build
console-docker-build: ## Build the console plugin's image CONSOLE_IMG: its files and the server that serves them (console/Dockerfile).
	$(CONTAINER_TOOL) build -f console/Dockerfile -t $(CONSOLE_IMG) .

.PHONY: console-docker-push
console-docker-push: ## Push the console plugin's image CONSOLE_IMG.
	$(CONTAINER_TOOL) push $(CONSOLE_IMG)

# CONSOLE_MANAGER is the manager binary test-console builds and runs; CONSOLE_SCREENSHOTS,
# when set, is where the browser test writes its screenshots (docs/guide/images refreshes the
# guide's); CHROMIUM is the browser (Debian's chromium package).
CONSOLE_MANAGER ?= $(LOCALBIN)/manager
CONSOLE_SCREENSHOTS ?=
CHROMIUM ?= /usr/bin/chromium

# chromium installs Debian's chromium package, which the console plugin's browser test drives,
# when CHROMIUM is missing (as root, or through sudo).
.PHONY: chromium
chromium:
	@[ -x "$(CHROMIUM)" ] || { sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
	@[ -x "$(CHROMIUM)" ] || { echo "$(CHROMIUM) is missing: apt-get install -y chromium"; exit 1; }

.PHONY: test-console
test-console: envtest console-deps chromium ## Test the console plugin: unit tests (Jest), the type check against the SDK (tsc), and the browser test (Chromium, playwright-core) of the built plugin against the manager on a local control plane.
	go build -ldflags "$(LDFLAGS)" -o "$(CONSOLE_MANAGER)" ./cmd
	$(CONSOLE_TEST)
CONSOLE_TEST = ( cd console && npm test -- --ci && npm run typecheck && npm run build && npm run build-harness ) && \
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BINARY="$(CONSOLE_MANAGER)" CHROMIUM="$(CHROMIUM)" \
		CONSOLE_SCREENSHOTS="$(CONSOLE_SCREENSHOTS)" go test ./test/console/ -count=1 -timeout 20m -v -ginkgo.v

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

# Helm, built from its pinned Go module (the version is stamped in as `make` of helm does).
HELM_VERSION ?= v4.3.1
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)

.PHONY: helm
helm: $(HELM) ## Build helm into bin/.
$(HELM): | $(LOCALBIN)
	GOBIN="$(LOCALBIN)/.helm" go install -ldflags "-X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)" helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	mv "$(LOCALBIN)/.helm/helm" "$(HELM)" && rm -rf "$(LOCALBIN)/.helm"

# kubebuilder, built from its pinned Go module, for its helm/v2-alpha plugin (make build-installer
# writes dist/chart with it). The version is stamped in as kubebuilder's release builds do.
KUBEBUILDER_VERSION ?= v4.10.1
KUBEBUILDER ?= $(LOCALBIN)/kubebuilder-$(KUBEBUILDER_VERSION)

.PHONY: kubebuilder
kubebuilder: $(KUBEBUILDER) ## Build kubebuilder into bin/.
$(KUBEBUILDER): | $(LOCALBIN)
	GOBIN="$(LOCALBIN)/.kubebuilder" go install -ldflags "-X sigs.k8s.io/kubebuilder/v4/cmd.kubeBuilderVersion=$(KUBEBUILDER_VERSION:v%=%)" sigs.k8s.io/kubebuilder/v4@$(KUBEBUILDER_VERSION)
	mv "$(LOCALBIN)/.kubebuilder/kubebuilder" "$(KUBEBUILDER)" && rm -rf "$(LOCALBIN)/.kubebuilder"

# The envtest control plane (kube-apiserver, etcd, kubectl) built from pinned Go modules.
ENVTEST_K8S_VERSION := $(shell cd hack/tools/kubernetes && grep -E '^require k8s.io/kubernetes ' go.mod | awk '{print $$3}')
ENVTEST_ASSETS := $(LOCALBIN)/k8s/$(ENVTEST_K8S_VERSION)
KUBECTL := $(ENVTEST_ASSETS)/kubectl

.PHONY: envtest
envtest: | $(LOCALBIN) ## Build kube-apiserver, etcd and kubectl for envtest and print their directory (KUBEBUILDER_ASSETS).
	@hack/build-envtest-binaries.sh

# The Ginkgo CLI, built from the Ginkgo module go.mod requires (the suites' own version), to
# run a suite's specs in parallel processes.
GINKGO_VERSION := $(shell awk '$$1 == "github.com/onsi/ginkgo/v2" {print $$2}' go.mod)
GINKGO ?= $(LOCALBIN)/ginkgo-$(GINKGO_VERSION)

.PHONY: ginkgo
ginkgo: $(GINKGO) ## Build the Ginkgo CLI into bin/.
$(GINKGO): | $(LOCALBIN)
	go build -o "$(GINKGO).tmp" github.com/onsi/ginkgo/v2/ginkgo
	mv "$(GINKGO).tmp" "$(GINKGO)"

# golangci-lint, built from its pinned Go module.
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint into bin/.
$(GOLANGCI_LINT): | $(LOCALBIN)
	GOBIN="$(LOCALBIN)/.golangci-lint" go install -ldflags "-X main.version=$(GOLANGCI_LINT_VERSION:v%=%)" github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv "$(LOCALBIN)/.golangci-lint/golangci-lint" "$(GOLANGCI_LINT)" && rm -rf "$(LOCALBIN)/.golangci-lint"

# promtool, built from the Prometheus release pinned in hack/tools/promtool: a wrapper module,
# since `go install` refuses Prometheus for the replace directive in its go.mod. remove_all_sd
# leaves out the cloud service discoveries: rule checks and tests do not use them, and they
# are about half of the build time.
PROMTOOL_VERSION := $(shell awk '$$1 == "require" && $$2 == "github.com/prometheus/prometheus" {print $$3}' hack/tools/promtool/go.mod)
PROMTOOL ?= $(LOCALBIN)/promtool-$(PROMTOOL_VERSION)

.PHONY: promtool
promtool: $(PROMTOOL) ## Build promtool into bin/.
$(PROMTOOL): | $(LOCALBIN)
	go -C hack/tools/promtool build -mod=readonly -tags remove_all_sd -trimpath -ldflags "-s -w" \
		-o "$(PROMTOOL).tmp" github.com/prometheus/prometheus/cmd/promtool
	mv "$(PROMTOOL).tmp" "$(PROMTOOL)"
