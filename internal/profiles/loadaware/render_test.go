package loadaware_test

// The render tests need no cluster: RenderItems is a pure function of the options and the
// typed Inputs. They are plain Go tests (with Gomega matchers) beside the envtest suite,
// so `go test -run TestRenderItems` runs them without KUBEBUILDER_ASSETS. Each case's
// rendered items are compared with testdata/render/<case>.yaml; run with -update to
// rewrite those files, then review every change.

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// hcoSource is how ReadInputs names the HyperConverged the migration limits come from.
const hcoSource = "HyperConverged openshift-cnv/kubevirt-hyperconverged"

// schemaOf reads the KubeDescheduler CRD of one generation of test/crds/kubedescheduler
// (4.16, 4.17, 4.18 for 4.18/4.19, 4.20 for 4.20+) the way the profile reads the served one.
func schemaOf(t *testing.T, gen string) targets.DeschedulerSchema {
	t.Helper()
	path := filepath.Join(testenv.DeschedulerCRDs(gen), "kubedeschedulers.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the %s KubeDescheduler CRD: %v", gen, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	s, err := targets.DeschedulerSchemaOf(crd)
	if err != nil {
		t.Fatalf("schema of %s: %v", path, err)
	}
	return s
}

// options are the profile's defaults around the fields set.
func options(set advisorv1alpha1.LoadAwareOptions) *advisorv1alpha1.LoadAwareOptions {
	return loadaware.New().Defaults(&advisorv1alpha1.ProfileOptions{LoadAware: &set}).LoadAware
}

// live is a live KubeDescheduler running the given descheduler profiles.
func live(running ...string) *loadaware.LiveDescheduler {
	return &loadaware.LiveDescheduler{Profiles: running}
}

// hco is the cluster's one HyperConverged, with the given live-migration limits (nil: unset).
func hco(perCluster, perNode *int64) *loadaware.MigrationLimits {
	return &loadaware.MigrationLimits{HyperConvergeds: 1, Source: hcoSource, PerCluster: perCluster, PerNode: perNode}
}

// hyperConvergeds is a cluster with n HyperConverged objects, n not 1: no limits are read.
func hyperConvergeds(n int) *loadaware.MigrationLimits {
	return &loadaware.MigrationLimits{HyperConvergeds: n}
}

// withCustomizations is s with only the given profileCustomizations keys.
func withCustomizations(s targets.DeschedulerSchema, keys ...string) targets.DeschedulerSchema {
	s.Customizations = keys
	return s
}

// TestRenderItemsSchemas checks that the CRD fixtures the render cases use read as the
// generations they stand for.
func TestRenderItemsSchemas(t *testing.T) {
	g := NewWithT(t)
	s420, s418, s417, s416 := schemaOf(t, "4.20"), schemaOf(t, "4.18"), schemaOf(t, "4.17"), schemaOf(t, "4.16")
	custom := []string{"devEnableEvictionsInBackground", "devEnableSoftTainter", "devDeviationThresholds"}

	g.Expect(s420.Profiles).To(ContainElements("KubeVirtRelieveAndMigrate", "DevKubeVirtRelieveAndMigrate", "LongLifecycle", "DevPreviewLongLifecycle"))
	g.Expect(s420.Customizations).To(ContainElements(custom))
	g.Expect([]bool{s420.EvictionLimitTotal, s420.EvictionLimitNode}).To(Equal([]bool{true, true}))

	g.Expect(s418.Profiles).To(ContainElements("DevKubeVirtRelieveAndMigrate", "LongLifecycle"))
	g.Expect(s418.Profiles).NotTo(ContainElement("KubeVirtRelieveAndMigrate"))
	g.Expect(s418.Customizations).To(ContainElements(custom))
	g.Expect([]bool{s418.EvictionLimitTotal, s418.EvictionLimitNode}).To(Equal([]bool{true, false}))

	g.Expect(s417.Profiles).To(ContainElements("LongLifecycle", "DevPreviewLongLifecycle"))
	g.Expect(s417.Profiles).NotTo(ContainElement(BeElementOf("KubeVirtRelieveAndMigrate", "DevKubeVirtRelieveAndMigrate")))
	g.Expect([]bool{s417.EvictionLimitTotal, s417.EvictionLimitNode}).To(Equal([]bool{true, false}))

	g.Expect(s416.Profiles).To(ContainElement("DevPreviewLongLifecycle"))
	g.Expect(s416.Profiles).NotTo(ContainElement("LongLifecycle"))
	g.Expect(s416.Customizations).NotTo(ContainElement(BeElementOf(custom)))
	g.Expect([]bool{s416.EvictionLimitTotal, s416.EvictionLimitNode}).To(Equal([]bool{false, false}))
}

func TestRenderItems(t *testing.T) {
	s420, s418, s417, s416 := schemaOf(t, "4.20"), schemaOf(t, "4.18"), schemaOf(t, "4.17"), schemaOf(t, "4.16")
	// conflicting is the live set most cases start from: two profiles that run beside any
	// KubeVirt-aware one, and LifecycleAndUtilization, which conflicts with all of them.
	// The live sets on 4.20 are ones its (4.21+) CEL rules accept: no duplicates, no
	// mutually exclusive pair; the older generations accept both.
	conflicting := []string{"AffinityAndTaints", "SoftTopologyAndDuplicates", "LifecycleAndUtilization"}
	noPSI := advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: ptr.To(false)}

	cases := []struct {
		name string
		opts *advisorv1alpha1.LoadAwareOptions
		in   loadaware.Inputs
		// wantErr, when set, is a fragment of the *profiles.PrerequisiteError expected
		// instead of items; such a case has no golden file.
		wantErr string
	}{
		// Profile selection and merging, per CRD generation.
		{
			name: "when 4.20 has no KubeDescheduler, it should create one with KubeVirtRelieveAndMigrate, customizations, default limits and PSI",
			opts: options(advisorv1alpha1.LoadAwareOptions{}),
			in:   loadaware.Inputs{Schema: s420},
		},
		{
			name: "when 4.20 runs LifecycleAndUtilization, it should keep the others, drop it and append KubeVirtRelieveAndMigrate",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, Descheduler: live(conflicting...)},
		},
		{
			name: "when 4.20 runs CompactAndScale, it should replace it with KubeVirtRelieveAndMigrate",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, Descheduler: live("CompactAndScale", "EvictPodsWithPVC")},
		},
		{
			name: "when 4.20 runs DevKubeVirtRelieveAndMigrate, it should replace it with its GA successor KubeVirtRelieveAndMigrate",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, Descheduler: live("DevKubeVirtRelieveAndMigrate", "AffinityAndTaints")},
		},
		{
			name: "when 4.20 runs the long-lifecycle profiles, it should replace them with KubeVirtRelieveAndMigrate",
			opts: options(noPSI),
			in: loadaware.Inputs{Schema: s420, Descheduler: live(
				"SoftTopologyAndDuplicates", "LongLifecycle", "DevPreviewLongLifecycle", "EvictPodsWithLocalStorage")},
		},
		{
			name: "when the schema declares only devEnableEvictionsInBackground, it should set only that customization",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: withCustomizations(s420, "devEnableEvictionsInBackground", "namespaces")},
		},
		{
			name: "when the schema declares none of the customizations, it should set no profileCustomizations",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: withCustomizations(s420, "namespaces")},
		},
		{
			name: "when 4.20 has a KubeDescheduler without profiles, it should configure it with only KubeVirtRelieveAndMigrate",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, Descheduler: live()},
		},
		{
			name: "when 4.18 runs LifecycleAndUtilization and a profile it does not offer, it should drop both and choose DevKubeVirtRelieveAndMigrate",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s418, Descheduler: live(slices.Concat([]string{"RetiredProfile"}, conflicting)...)},
		},
		{
			name: "when 4.18 runs the long-lifecycle profiles and CompactAndScale, it should replace them with DevKubeVirtRelieveAndMigrate",
			opts: options(noPSI),
			in: loadaware.Inputs{Schema: s418, Descheduler: live(
				"LongLifecycle", "AffinityAndTaints", "DevPreviewLongLifecycle", "CompactAndScale", "SoftTopologyAndDuplicates")},
		},
		{
			name: "when 4.18 has HyperConverged limits, it should set only the total eviction limit",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s418, Descheduler: live("AffinityAndTaints", "DevKubeVirtRelieveAndMigrate", "AffinityAndTaints"), MigrationLimits: hco(ptr.To[int64](7), ptr.To[int64](3))},
		},
		{
			name: "when 4.17 runs conflicting profiles, it should choose LongLifecycle without customizations and with a total limit",
			opts: options(noPSI),
			in: loadaware.Inputs{Schema: s417, Descheduler: live(slices.Concat(conflicting, []string{"DevPreviewLongLifecycle", "CompactAndScale"})...),
				MigrationLimits: hco(ptr.To[int64](7), ptr.To[int64](3))},
		},
		{
			name: "when 4.17 lists profiles twice, it should list each once with LongLifecycle last",
			opts: options(noPSI),
			in: loadaware.Inputs{Schema: s417, Descheduler: live(
				"LongLifecycle", "AffinityAndTaints", "LongLifecycle", "AffinityAndTaints")},
		},
		{
			name: "when 4.16 runs LifecycleAndUtilization, it should choose DevPreviewLongLifecycle without customizations nor eviction limits",
			opts: options(advisorv1alpha1.LoadAwareOptions{
				EnablePSIMetrics: ptr.To(false), DevDeviationThresholds: "High",
				EvictionLimitTotal: ptr.To[int32](20), EvictionLimitNode: ptr.To[int32](4),
			}),
			in: loadaware.Inputs{Schema: s416, Descheduler: live("LifecycleAndUtilization", "TopologyAndDuplicates")},
		},
		{
			name: "when 4.16 runs AffinityAndTaints, SoftTopologyAndDuplicates and LifecycleAndUtilization, it should keep the first two and append DevPreviewLongLifecycle",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s416, Descheduler: live(conflicting...)},
		},
		{
			name: "when 4.16 has no KubeDescheduler, it should create one with DevPreviewLongLifecycle and PSI",
			opts: options(advisorv1alpha1.LoadAwareOptions{}),
			in:   loadaware.Inputs{Schema: s416},
		},
		{
			name:    "when the schema offers none of the candidates, it should ask to upgrade the Kube Descheduler Operator",
			opts:    options(advisorv1alpha1.LoadAwareOptions{}),
			in:      loadaware.Inputs{Schema: targets.DeschedulerSchema{Profiles: []string{"AffinityAndTaints", "LifecycleAndUtilization"}, EvictionLimitTotal: true}},
			wantErr: "upgrade the Kube Descheduler Operator",
		},

		// Eviction limits, on 4.20 (total and node).
		{
			name: "when the HyperConverged sets both migration limits, it should follow them and name it",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hco(ptr.To[int64](7), ptr.To[int64](3))},
		},
		{
			name: "when the HyperConverged sets only the cluster limit, it should take the total from it and the node default",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hco(ptr.To[int64](10), nil)},
		},
		{
			name: "when the HyperConverged sets only the node limit, it should take the node limit from it and the total default",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hco(nil, ptr.To[int64](3))},
		},
		{
			name: "when the HyperConverged sets no or zero migration limits, it should use the defaults",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hco(ptr.To[int64](0), nil)},
		},
		{
			name: "when the options set both limits, they should override the HyperConverged",
			opts: options(advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: ptr.To(false), EvictionLimitTotal: ptr.To[int32](20), EvictionLimitNode: ptr.To[int32](4)}),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hco(ptr.To[int64](7), ptr.To[int64](3))},
		},
		{
			name: "when the options set both limits and the HyperConverged was not read, it should take both from the options",
			opts: options(advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: ptr.To(false), EvictionLimitTotal: ptr.To[int32](20), EvictionLimitNode: ptr.To[int32](4)}),
			in:   loadaware.Inputs{Schema: s420},
		},
		{
			name: "when the options set only the total, it should take the node limit from the HyperConverged",
			opts: options(advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: ptr.To(false), EvictionLimitTotal: ptr.To[int32](20)}),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hco(ptr.To[int64](7), ptr.To[int64](3))},
		},
		{
			name: "when the HyperConverged node limit exceeds its cluster limit, it should cap the node limit at the total",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hco(ptr.To[int64](2), ptr.To[int64](5))},
		},
		{
			name: "when the HyperConverged limits exceed what evictionLimits hold, it should cap them instead of wrapping around",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hco(ptr.To[int64](4294967295), ptr.To[int64](4294967295))},
		},
		{
			name: "when the cluster has two HyperConverged objects, it should use the default limits and say why and which options avoid it",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hyperConvergeds(2)},
		},
		{
			name: "when the cluster has no HyperConverged, it should use the default limits and say why and which options avoid it",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hyperConvergeds(0)},
		},
		{
			name: "when the cluster has three HyperConverged objects and the options set the total, it should default only the node limit and name only its option",
			opts: options(advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: ptr.To(false), EvictionLimitTotal: ptr.To[int32](20)}),
			in:   loadaware.Inputs{Schema: s420, MigrationLimits: hyperConvergeds(3)},
		},
		{
			name: "when 4.18 has two HyperConverged objects, it should default the total limit and name only its option",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s418, Descheduler: live("AffinityAndTaints"), MigrationLimits: hyperConvergeds(2)},
		},
		{
			name: "when the options set a node limit above the total, it should cap it at the total",
			opts: options(advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: ptr.To(false), EvictionLimitTotal: ptr.To[int32](3), EvictionLimitNode: ptr.To[int32](8)}),
			in:   loadaware.Inputs{Schema: s420},
		},

		// Options and PSI.
		{
			name: "when the mode is Predictive with a custom interval and deviation thresholds, it should set them",
			opts: options(advisorv1alpha1.LoadAwareOptions{
				EnablePSIMetrics: ptr.To(false), Mode: advisorv1alpha1.DeschedulerModePredictive,
				DeschedulingIntervalSeconds: ptr.To[int32](3600), DevDeviationThresholds: "High",
			}),
			in: loadaware.Inputs{Schema: s420, Descheduler: live(conflicting...)},
		},
		{
			name: "when psi=1 is not yet effective, it should plan the MachineConfig with High impact",
			opts: options(advisorv1alpha1.LoadAwareOptions{}),
			in:   loadaware.Inputs{Schema: s420, Descheduler: live("AffinityAndTaints", "KubeVirtRelieveAndMigrate")},
		},
		{
			name: "when psi=1 is already effective, it should plan the MachineConfig with Low impact",
			opts: options(advisorv1alpha1.LoadAwareOptions{}),
			in:   loadaware.Inputs{Schema: s420, Descheduler: live("AffinityAndTaints", "KubeVirtRelieveAndMigrate"), PSIEffective: true},
		},
		{
			name: "when the control plane nodes run workloads, it should plan psi=1 for the master pool too",
			opts: options(advisorv1alpha1.LoadAwareOptions{}),
			in:   loadaware.Inputs{Schema: s420, Descheduler: live("AffinityAndTaints", "KubeVirtRelieveAndMigrate"), MastersSchedulable: true},
		},
		{
			name: "when PSI metrics are off, it should plan only the KubeDescheduler even if psi=1 is effective",
			opts: options(noPSI),
			in:   loadaware.Inputs{Schema: s420, Descheduler: live("AffinityAndTaints", "KubeVirtRelieveAndMigrate"), PSIEffective: true},
		},
	}

	golden := testenv.NewGolden("testdata/render")
	for _, tc := range cases {
		path := golden.Path(t, tc.name)

		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			optsBefore := tc.opts.DeepCopy()
			inBefore, err := json.Marshal(tc.in)
			g.Expect(err).NotTo(HaveOccurred())

			items, err := loadaware.RenderItems(tc.opts, tc.in)

			g.Expect(tc.opts).To(Equal(optsBefore), "RenderItems modified its options")
			inAfter, _ := json.Marshal(tc.in)
			g.Expect(string(inAfter)).To(Equal(string(inBefore)), "RenderItems modified its inputs")

			if tc.wantErr != "" {
				var pe *profiles.PrerequisiteError
				g.Expect(errors.As(err, &pe)).To(BeTrue(), "want a *profiles.PrerequisiteError, got %v", err)
				g.Expect(err.Error()).To(ContainSubstring(tc.wantErr))
				g.Expect(items).To(BeEmpty())
				g.Expect(path).NotTo(BeAnExistingFile(), "an error case has no golden file")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			golden.Expect(t, path, testenv.RenderedYAML(t, items))
		})
	}

	golden.CheckLeftovers(t)
}
