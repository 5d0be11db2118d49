package baseline

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// Where the components' operators keep their objects on OpenShift; an object that already
// exists elsewhere is used where it is.
const (
	MTVNamespace               = "openshift-mtv"
	ForkliftControllerName     = "forklift-controller"
	MetalLBNamespace           = "metallb-system"
	MetalLBName                = "metallb"
	SelfNodeRemediationDefault = "self-node-remediation-automatic-strategy-template"
)

// Instance names an object.
type Instance struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Placement is where a component's object goes, or why it cannot be placed.
type Placement struct {
	Instance
	// Exists tells whether the object exists already.
	Exists bool `json:"exists,omitempty"`
	// Problem says why the object cannot be written ("" when it can).
	Problem string `json:"problem,omitempty"`
}

// HyperConverged is the cluster's one HyperConverged.
type HyperConverged struct {
	Instance
	// Version is the API version the cluster serves (v1, else v1beta1).
	Version string `json:"version"`
}

// Inputs is everything the profile reads from the cluster, typed; RenderItems depends on
// nothing else.
type Inputs struct {
	// Served names, by CRD name, the components' kinds the cluster serves at a version the
	// operator uses (see targets.Kind.ServedVersion).
	Served map[string]bool `json:"served"`
	// Facts are the worker nodes' hardware facts.
	Facts Facts `json:"facts"`
	// HyperConverged is the cluster's HyperConverged; nil with HyperConvergedProblem when
	// there is none, or several.
	HyperConverged        *HyperConverged `json:"hyperConverged,omitempty"`
	HyperConvergedProblem string          `json:"hyperConvergedProblem,omitempty"`
	// RemediationTemplate is the Self Node Remediation template a NodeHealthCheck uses; nil
	// when there is none yet.
	RemediationTemplate *Instance `json:"remediationTemplate,omitempty"`
	// MTV and MetalLB are where the ForkliftController and the MetalLB go.
	MTV     Placement `json:"mtv"`
	MetalLB Placement `json:"metalLB"`
}

// served reports whether the cluster has the CRD of kind k.
func (in Inputs) served(k targets.Kind) bool { return in.Served[k.CRD] }

// componentKinds are the kinds whose CRDs decide which components can be planned.
var componentKinds = []targets.Kind{
	targets.MachineConfig, targets.KubeletConfig, targets.HyperConverged, targets.NodeHealthCheck,
	targets.SelfNodeRemediationTemplate, targets.ForkliftController, targets.MetalLB,
}

// ReadInputs reads what the plan for the defaulted options o depends on: which CRDs exist,
// the worker nodes' labels (metadata only), the HyperConverged, the Self Node Remediation
// template, and where the ForkliftController and the MetalLB go. Only what enabled
// components need is read (see NeedsOf).
func ReadInputs(ctx context.Context, reader client.Reader, o *advisorv1alpha1.PlatformBaselineOptions) (Inputs, error) {
	need := NeedsOf(o)
	in := Inputs{Served: map[string]bool{}}
	for _, k := range componentKinds {
		if !need.kind(k) {
			continue
		}
		version, err := k.ReadServedVersion(ctx, reader)
		if err != nil {
			return Inputs{}, err
		}
		if version != "" {
			in.Served[k.CRD] = true
		}
	}
	var err error
	if need.Nodes {
		if in.Facts, err = readFacts(ctx, reader); err != nil {
			return Inputs{}, err
		}
	}
	if need.HyperConverged && in.served(targets.HyperConverged) {
		hco, err := targets.RequireHyperConverged(ctx, reader)
		switch {
		case targets.IsPrerequisiteError(err):
			in.HyperConvergedProblem = err.Error()
		case err != nil:
			return Inputs{}, err
		default:
			in.HyperConverged = &HyperConverged{Instance: Instance{Namespace: hco.Namespace(), Name: hco.Name()}, Version: hco.Fields.Version}
		}
	}
	if need.kind(targets.NodeHealthCheck) && in.served(targets.NodeHealthCheck) && in.served(targets.SelfNodeRemediationTemplate) {
		if in.RemediationTemplate, err = findTemplate(ctx, reader); err != nil {
			return Inputs{}, err
		}
	}
	if need.kind(targets.ForkliftController) && in.served(targets.ForkliftController) {
		if in.MTV, err = place(ctx, reader, targets.ForkliftController, Instance{Namespace: MTVNamespace, Name: ForkliftControllerName}); err != nil {
			return Inputs{}, err
		}
	}
	if need.kind(targets.MetalLB) && in.served(targets.MetalLB) {
		if in.MetalLB, err = place(ctx, reader, targets.MetalLB, Instance{Namespace: MetalLBNamespace, Name: MetalLBName}); err != nil {
			return Inputs{}, err
		}
	}
	return in, nil
}

// readFacts lists the worker nodes metadata-only: labels are all the profile needs, and a
// cluster with thousands of nodes must not bring their status into the operator. The
// nodes are counted one at a time: only the counts are kept.
func readFacts(ctx context.Context, reader client.Reader) (Facts, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	var f Facts
	err := plan.ListEach(ctx, reader, list, func(n client.Object) error {
		f.Add(n.GetLabels())
		return nil
	}, client.HasLabels{nodeconfig.WorkerNodeLabel})
	if err != nil {
		return Facts{}, fmt.Errorf("list worker nodes: %w", err)
	}
	return f, nil
}

// findTemplate finds the Self Node Remediation template: the operator's default
// automatic-strategy template, else the first one by namespace and name.
func findTemplate(ctx context.Context, reader client.Reader) (*Instance, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(targets.SelfNodeRemediationTemplate.ListGVK(targets.SelfNodeRemediationTemplate.GVK.Version))
	if err := reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list SelfNodeRemediationTemplates: %w", err)
	}
	var found []Instance
	for _, t := range list.Items {
		found = append(found, Instance{Namespace: t.GetNamespace(), Name: t.GetName()})
	}
	if len(found) == 0 {
		return nil, nil
	}
	sort.Slice(found, func(i, j int) bool {
		if (found[i].Name == SelfNodeRemediationDefault) != (found[j].Name == SelfNodeRemediationDefault) {
			return found[i].Name == SelfNodeRemediationDefault
		}
		return found[i].Namespace+"/"+found[i].Name < found[j].Namespace+"/"+found[j].Name
	})
	return &found[0], nil
}

// place finds where the one object of kind k goes: where it already is (its operator
// reconciles one), else at def, whose namespace must exist (the operator's install
// creates it).
func place(ctx context.Context, reader client.Reader, k targets.Kind, def Instance) (Placement, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(k.ListGVK(k.GVK.Version))
	if err := reader.List(ctx, list); err != nil {
		return Placement{}, fmt.Errorf("list %s: %w", k.GVK.Kind, err)
	}
	var found []Instance
	for _, it := range list.Items {
		found = append(found, Instance{Namespace: it.GetNamespace(), Name: it.GetName()})
	}
	sort.Slice(found, func(i, j int) bool {
		if (found[i] == def) != (found[j] == def) {
			return found[i] == def
		}
		return found[i].Namespace+"/"+found[i].Name < found[j].Namespace+"/"+found[j].Name
	})
	if len(found) > 0 {
		return Placement{Instance: found[0], Exists: true}, nil
	}
	ns := &corev1.Namespace{}
	switch err := reader.Get(ctx, types.NamespacedName{Name: def.Namespace}, ns); {
	case apierrors.IsNotFound(err):
		return Placement{Instance: def, Problem: fmt.Sprintf("namespace %s does not exist: install %s, which creates it",
			def.Namespace, k.Operator)}, nil
	case err != nil:
		return Placement{}, fmt.Errorf("read namespace %s: %w", def.Namespace, err)
	}
	return Placement{Instance: def}, nil
}
