package plan_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

func TestManagedPaths(t *testing.T) {
	managed := func(doc string) []string {
		return plan.PathStrings(plan.ManagedPaths(object(doc)))
	}

	t.Run("lists the leaf paths the desired object sets, sorted", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(managed(`
			apiVersion: operator.openshift.io/v1
			kind: KubeDescheduler
			metadata: {name: cluster, namespace: openshift-kube-descheduler-operator}
			spec:
			  mode: Automatic
			  deschedulingIntervalSeconds: 60
			  evictionLimits: {total: 5, node: 2}
			  profileCustomizations:
			    devEnableEvictionsInBackground: true
			    namespaces: {excluded: [kube-system]}
		`)).To(Equal([]string{
			"spec.deschedulingIntervalSeconds",
			"spec.evictionLimits.node",
			"spec.evictionLimits.total",
			"spec.mode",
			"spec.profileCustomizations.devEnableEvictionsInBackground",
			"spec.profileCustomizations.namespaces.excluded",
		}))
	})

	t.Run("treats a list as one leaf, whatever its items are", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(managed(`
			apiVersion: v1
			kind: Widget
			metadata: {name: w}
			spec:
			  profiles: [AffinityAndTaints, KubeVirtRelieveAndMigrate]
			  source: [{name: a, kind: MachineConfig}, {name: b}]
			  empty: []
		`)).To(Equal([]string{"spec.empty", "spec.profiles", "spec.source"}))
	})

	t.Run("treats an empty map as a leaf of its own", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(managed(`
			apiVersion: v1
			kind: Widget
			metadata: {name: w}
			spec:
			  profileCustomizations: {}
			  mode: Automatic
		`)).To(Equal([]string{"spec.mode", "spec.profileCustomizations"}))
	})

	t.Run("leaves out the identity paths apiVersion, kind, metadata.name and metadata.namespace", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(managed(`
			apiVersion: operator.openshift.io/v1
			kind: KubeDescheduler
			metadata: {name: cluster, namespace: openshift-kube-descheduler-operator}
		`)).To(BeEmpty())
		g.Expect(managed(`
			apiVersion: operator.openshift.io/v1
			kind: KubeDescheduler
			metadata: {name: cluster, namespace: ns, labels: {team: virt}}
			spec: {mode: Automatic}
		`)).To(Equal([]string{"metadata.labels.team", "spec.mode"}))
	})

	t.Run("renders label and annotation keys with dots or slashes in quoted brackets, leaving out a profile's ownership annotation", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(managed(`
			apiVersion: machineconfiguration.openshift.io/v1
			kind: MachineConfig
			metadata:
			  name: 99-worker-psi-karg
			  labels:
			    advisor.kubevirt.io/managed-by: virt-advisor-operator
			    machineconfiguration.openshift.io/role: worker
			  annotations:
			    advisor.kubevirt.io/profile.load-aware-rebalancing: managed
			    example.com/owner: team-virt
			spec:
			  kernelArguments: [psi=1]
		`)).To(Equal([]string{
			`metadata.annotations["example.com/owner"]`,
			`metadata.labels["advisor.kubevirt.io/managed-by"]`,
			`metadata.labels["machineconfiguration.openshift.io/role"]`,
			"spec.kernelArguments",
		}))
	})
}

func TestFieldPathString(t *testing.T) {
	for _, tc := range []struct {
		name string
		path plan.FieldPath
		want string
	}{
		{"joins plain keys with dots", plan.FieldPath{"spec", "profileCustomizations", "devEnableSoftTainter"}, "spec.profileCustomizations.devEnableSoftTainter"},
		{"keeps dashes and underscores in plain keys", plan.FieldPath{"spec", "max-unavailable", "a_b"}, "spec.max-unavailable.a_b"},
		{"quotes a key with dots and slashes", plan.FieldPath{"metadata", "labels", "advisor.kubevirt.io/managed-by"}, `metadata.labels["advisor.kubevirt.io/managed-by"]`},
		{"continues with dots after a quoted key", plan.FieldPath{"data", "a.b", "c"}, `data["a.b"].c`},
		{"quotes a key that starts with a digit", plan.FieldPath{"spec", "0day"}, `spec["0day"]`},
		{"escapes a double quote inside a quoted key", plan.FieldPath{"metadata", "annotations", `say "hi"`}, `metadata.annotations["say \"hi\""]`},
		{"escapes a backslash inside a quoted key", plan.FieldPath{"data", `C:\`}, `data["C:\\"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(tc.path.String()).To(Equal(tc.want))
		})
	}
}

func TestFieldPathReadsBackAsRendered(t *testing.T) {
	for _, path := range []plan.FieldPath{
		{"spec", "profileCustomizations", "devEnableSoftTainter"},
		{"metadata", "labels", "advisor.kubevirt.io/managed-by"},
		{"data", "a.b", "c"},
		{"metadata", "annotations", `say "hi"`},
		{"data", `ends with a backslash\`},
		{"data", `\"`, `a\\b`, `"]`, `["`},
	} {
		t.Run(path.String(), func(t *testing.T) {
			g := NewWithT(t)
			got, err := plan.ParseFieldPath(path.String())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(path))
		})
	}
}
