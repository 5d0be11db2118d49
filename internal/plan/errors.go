package plan

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// ErrInvalidPlan marks a plan a profile rendered wrongly (for example two items for one
// target); drafting it again gives the same result.
var ErrInvalidPlan = errors.New("invalid plan")

// IsPermanent tells API errors that will not go away by retrying (the request itself is
// refused) from passing ones (timeouts, throttling, unavailable servers).
func IsPermanent(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrInvalidPlan), meta.IsNoMatchError(err):
		return true
	case schemaMismatch(err):
		return true
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err),
		apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsRequestEntityTooLargeError(err):
		return true
	}
	return false
}

// schemaMismatch tells the internal error by which server-side apply reports an applied
// object that does not fit the served schema (a field it does not declare, a value of the
// wrong type): it fails the same way every time.
func schemaMismatch(err error) bool {
	if !apierrors.IsInternalError(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "failed to create typed patch object") || strings.Contains(msg, "field not declared in schema")
}

// refusesObject tells the API server's answer that the object sent is itself invalid: it
// breaks the schema, a validation rule or the request format. A passing failure, a
// missing permission or an unserved kind is not the object's fault.
func refusesObject(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || schemaMismatch(err)
}

// NotServedAsUnavailable turns the 404 of a resource the API server does not serve into
// a passing error, and leaves every other error as it is. apierrors.IsNotFound cannot tell
// that 404 from an object that does not exist, and taking it for one would draft a plan
// that creates an existing object, or judge a target deleted, or fail an apply. The API
// server answers so for some milliseconds after a CRD starts serving a version (the
// handler is not ready yet while discovery and the CRD already say served), and while a
// client still maps a kind whose version was just switched off. Whether a kind is served
// is decided from its CRD (rule 9), never from this answer: retried, it is gone, or the
// CRD says the kind is not served.
func NotServedAsUnavailable(err error) error {
	if !resourceNotServed(err) {
		return err
	}
	return apierrors.NewServiceUnavailable("the API server does not serve the resource right now " +
		"(it answered 404 for the resource, not for an object): " + err.Error())
}

// resourceNotServed: a 404 that names no object, or whose body was not an API status
// (the API server's "404 page not found"). The 404 of a missing object names it.
func resourceNotServed(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Reason != metav1.StatusReasonNotFound {
		return false
	}
	d := status.Status().Details
	if d == nil || d.Name == "" {
		return true
	}
	for _, c := range d.Causes {
		if c.Type == metav1.CauseTypeUnexpectedServerResponse {
			return true
		}
	}
	return false
}

// asRejection turns a permanent error into an item message that names the target.
func asRejection(desired *unstructured.Unstructured, verb string, err error) (bool, string) {
	if !IsPermanent(err) {
		return false, ""
	}
	if meta.IsNoMatchError(err) {
		return true, fmt.Sprintf("the cluster does not serve %s (%s): install %s",
			desired.GetKind(), desired.GetAPIVersion(), targets.OperatorOf(desired.GroupVersionKind().GroupKind()))
	}
	return true, fmt.Sprintf("the API server refused the %s of %s: %s", verb, describe(desired), serverMessage(err))
}

// serverMessage is what the API server said, without the client's wrapping.
func serverMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// FailureMessage is the item message for a failed apply.
func FailureMessage(item advisorv1alpha1.PlanItem, err error) string {
	desired, derr := DesiredObject(item)
	if derr != nil {
		if item.Action == advisorv1alpha1.ItemActionRelease {
			return fmt.Sprintf("releasing %s failed: %v", describeRef(item.TargetRef), err)
		}
		return derr.Error()
	}
	_, msg := asRejection(desired, "apply", err)
	if msg == "" {
		msg = err.Error()
	}
	return msg
}
