package health

import (
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/cel/library"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// reading is what each engine makes of one live config.
type reading struct {
	// kstatus is what sigs.k8s.io/cli-utils status.Compute says (Flux's health checks).
	kstatus status.Status
	// kstatusMessage is the message it gives.
	kstatusMessage string
	// argo is hs.status of the Argo CD health check.
	argo string
	// argoMessage is hs.message.
	argoMessage string
	// completed and degraded are the conditions the OCM work agent reports.
	completed, degraded metav1.ConditionStatus
	// ocmMessage is the message of the Degraded condition.
	ocmMessage string
}

func (r reading) String() string {
	return fmt.Sprintf("kstatus %s (%s), Argo CD %s (%s), OCM Completed=%s Degraded=%s (%s)",
		r.kstatus, r.kstatusMessage, r.argo, r.argoMessage, r.completed, r.degraded, r.ocmMessage)
}

// read evaluates every engine's rules on obj.
func read(obj map[string]any) reading {
	GinkgoHelper()
	res, err := status.Compute(&unstructured.Unstructured{Object: obj})
	Expect(err).NotTo(HaveOccurred())
	r := reading{kstatus: res.Status, kstatusMessage: res.Message}
	r.argo, r.argoMessage = argoHealth(obj)
	completed, _ := ocmCondition(obj, "Completed")
	degraded, msg := ocmCondition(obj, "Degraded")
	// A Progressive rollout counts a cluster done when Progressing is False, failed when
	// Progressing and Degraded are True: Progressing is the opposite of Completed.
	progressing, _ := ocmCondition(obj, "Progressing")
	Expect(progressing).NotTo(Equal(completed), "OCM Progressing and Completed on %v", obj["status"])
	r.completed, r.degraded, r.ocmMessage = completed, degraded, msg
	return r
}

// argoHealth runs config/health/argocd/health.lua as Argo CD runs a resource health check:
// the object as the global obj, the libraries Argo CD opens, and hs.status and hs.message
// of the table it returns.
func argoHealth(obj map[string]any) (string, string) {
	script, err := os.ReadFile(testenv.Path("config", "health", "argocd", "health.lua"))
	Expect(err).NotTo(HaveOccurred())
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath},
	} {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	l.SetGlobal("obj", toLua(l, obj))
	Expect(l.DoString(string(script))).To(Succeed())
	hs, ok := l.Get(-1).(*lua.LTable)
	Expect(ok).To(BeTrue(), "the health check returns a table")
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message"))
}

// toLua converts a JSON value to Lua as Argo CD does: objects and arrays become tables,
// numbers Lua numbers.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := l.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(l, e))
		}
		return t
	case []any:
		t := l.NewTable()
		for i, e := range v {
			t.RawSetInt(i+1, toLua(l, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	Fail(fmt.Sprintf("no Lua value for %T", v))
	return lua.LNil
}

// conditionRule is open-cluster-management.io/api work/v1 ConditionRule.
type conditionRule struct {
	Condition         string   `json:"condition"`
	Type              string   `json:"type"`
	CelExpressions    []string `json:"celExpressions"`
	Message           string   `json:"message"`
	MessageExpression string   `json:"messageExpression"`
}

// manifestConfig is the part of work/v1 ManifestConfigOption the rules file fills.
type manifestConfig struct {
	ResourceIdentifier struct {
		Group    string `json:"group"`
		Resource string `json:"resource"`
		Name     string `json:"name"`
	} `json:"resourceIdentifier"`
	ConditionRules []conditionRule `json:"conditionRules"`
}

func ocmRules() []conditionRule {
	raw, err := os.ReadFile(testenv.Path("config", "health", "ocm-condition-rules.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var configs []manifestConfig
	Expect(yaml.UnmarshalStrict(raw, &configs)).To(Succeed())
	Expect(configs).To(HaveLen(1))
	id := configs[0].ResourceIdentifier
	Expect([]string{id.Group, id.Resource}).To(Equal([]string{"advisor.kubevirt.io", "virtplatformconfigs"}))
	return configs[0].ConditionRules
}

// ocmCondition evaluates the rule for condition as the OCM work agent does
// (pkg/work/spoke/conditions): every CEL expression must be true for True; a false one
// makes it False; the message comes from messageExpression, with result bound.
func ocmCondition(obj map[string]any, condition string) (metav1.ConditionStatus, string) {
	for _, rule := range ocmRules() {
		if rule.Condition != condition {
			continue
		}
		Expect(rule.Type).To(Equal("CEL"))
		result := metav1.ConditionTrue
		for _, expr := range rule.CelExpressions {
			out := celEval(expr, map[string]any{"object": obj})
			b, ok := out.(bool)
			Expect(ok).To(BeTrue(), "%q gives %v, not a bool", expr, reflect.TypeOf(out))
			if !b {
				result = metav1.ConditionFalse
				break
			}
		}
		msg := rule.Message
		if rule.MessageExpression != "" {
			out := celEval(rule.MessageExpression, map[string]any{"object": obj, "result": result == metav1.ConditionTrue})
			s, ok := out.(string)
			Expect(ok).To(BeTrue(), "the message expression gives %v", reflect.TypeOf(out))
			msg = s
		}
		return result, msg
	}
	Fail("no condition rule for " + condition)
	return "", ""
}

// celEval compiles and runs expr in the environment the OCM work agent declares: object
// (and result, for messages) as dyn, the base options of open-cluster-management.io/sdk-go
// pkg/cel/common, and hasConditions.
func celEval(expr string, vars map[string]any) any {
	opts := []cel.EnvOption{
		cel.Variable("object", cel.DynType),
		cel.OptionalTypes(), ext.Strings(), library.Lists(), library.Regex(), library.URLs(),
		library.Quantity(), library.IP(), library.CIDR(), library.Format(),
		cel.Function("hasConditions", cel.Overload("status_has_conditions",
			[]*cel.Type{cel.DynType}, cel.BoolType, cel.FunctionBinding(hasConditions))),
	}
	if _, ok := vars["result"]; ok {
		opts = append(opts, cel.Variable("result", cel.BoolType))
	}
	env, err := cel.NewEnv(opts...)
	Expect(err).NotTo(HaveOccurred())
	ast, iss := env.Compile(expr)
	Expect(iss.Err()).NotTo(HaveOccurred(), "compile %q", expr)
	prg, err := env.Program(ast)
	Expect(err).NotTo(HaveOccurred())
	out, _, err := prg.Eval(vars)
	Expect(err).NotTo(HaveOccurred(), "evaluate %q", expr)
	return out.Value()
}

// hasConditions is the work agent's function: the value has a non-empty conditions list.
func hasConditions(values ...ref.Val) ref.Val {
	if len(values) == 0 {
		return types.Bool(false)
	}
	m, ok := values[0].(traits.Mapper)
	if !ok {
		return types.Bool(false)
	}
	conditions, found := m.Find(types.String("conditions"))
	if !found {
		return types.Bool(false)
	}
	l, ok := conditions.(traits.Lister)
	return types.Bool(ok && l.Size() != types.Int(0))
}

// create creates every object of a multi-document YAML.
func create(docs string) {
	for _, doc := range strings.Split(docs, "\n---\n") {
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		Expect(k8s.Create(ctx, obj)).To(Succeed(), "create %s %s", obj.GetKind(), obj.GetName())
	}
}
