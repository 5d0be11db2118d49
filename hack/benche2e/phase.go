package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// failPhases end a wait: the operator will not reach the awaited phase by itself.
var failPhases = map[string]bool{"Failed": true, "PrerequisiteFailed": true, "CompletedWithErrors": true}

// phaseWatcher follows one VirtPlatformConfig through a single watch, opened before the
// object exists and kept across the stages, so that no change of phase is missed between
// them. A watch the server closes is reopened from the last resourceVersion seen.
type phaseWatcher struct {
	ri   dynamic.ResourceInterface
	name string
	rv   string
	w    watch.Interface
	// last is the object as last seen.
	last *unstructured.Unstructured
}

// newPhaseWatcher opens the watch of the VirtPlatformConfig name.
func newPhaseWatcher(ctx context.Context, dyn dynamic.Interface, name string) (*phaseWatcher, error) {
	pw := &phaseWatcher{ri: dyn.Resource(vpcGVR), name: name}
	if err := pw.open(ctx, true); err != nil {
		return nil, err
	}
	return pw, nil
}

func (pw *phaseWatcher) open(ctx context.Context, relist bool) error {
	selector := "metadata.name=" + pw.name
	if relist || pw.rv == "" {
		list, err := pw.ri.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return fmt.Errorf("list VirtPlatformConfig %s: %w", pw.name, err)
		}
		pw.rv = list.GetResourceVersion()
		if len(list.Items) == 1 {
			pw.last = &list.Items[0]
		}
	}
	w, err := pw.ri.Watch(ctx, metav1.ListOptions{
		FieldSelector: selector, ResourceVersion: pw.rv, AllowWatchBookmarks: true,
	})
	if err != nil {
		return fmt.Errorf("watch VirtPlatformConfig %s: %w", pw.name, err)
	}
	pw.w = w
	return nil
}

func (pw *phaseWatcher) stop() {
	if pw.w != nil {
		pw.w.Stop()
	}
}

// phase is .status.phase of the object as last seen.
func (pw *phaseWatcher) phase() string {
	if pw.last == nil {
		return ""
	}
	p, _, _ := unstructured.NestedString(pw.last.Object, "status", "phase")
	return p
}

// until waits for the phase want and returns when the watch delivered it. The phase seen
// before the call does not count: the caller changed the object since.
func (pw *phaseWatcher) until(ctx context.Context, want string, timeout time.Duration) (time.Time, error) {
	at, _, err := pw.untilOneOf(ctx, timeout, want)
	return at, err
}

// untilOneOf waits for one of the phases wants and returns when the watch delivered it,
// with the phase. The phase seen before the call does not count.
func (pw *phaseWatcher) untilOneOf(ctx context.Context, timeout time.Duration,
	wants ...string) (time.Time, string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	wanted := func(phase string) bool { return slices.Contains(wants, phase) }
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, "", ctx.Err()
		case <-deadline.C:
			return time.Time{}, "", fmt.Errorf("no phase %s within %s: %s", strings.Join(wants, " or "), timeout, pw.describe())
		case ev, ok := <-pw.w.ResultChan():
			if !ok {
				if err := pw.open(ctx, false); err != nil {
					return time.Time{}, "", err
				}
				continue
			}
			switch ev.Type {
			case watch.Error:
				// Most likely 410 Gone: start again from a fresh list.
				pw.w.Stop()
				if err := pw.open(ctx, true); err != nil {
					return time.Time{}, "", fmt.Errorf("%w (after the watch error %v)", err, apierrors.FromObject(ev.Object))
				}
				if phase := pw.phase(); wanted(phase) {
					return time.Now(), phase, nil
				}
				continue
			case watch.Bookmark:
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					pw.rv = u.GetResourceVersion()
				}
				continue
			case watch.Deleted:
				return time.Time{}, "", fmt.Errorf("VirtPlatformConfig %s was deleted", pw.name)
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			at := time.Now()
			pw.last, pw.rv = u, u.GetResourceVersion()
			switch phase := pw.phase(); {
			case wanted(phase):
				return at, phase, nil
			case failPhases[phase]:
				return time.Time{}, "", fmt.Errorf("phase %s instead of %s: %s", phase, strings.Join(wants, " or "), pw.describe())
			}
		}
	}
}

// asksForApproval tells whether the object as last seen waits for an approval its spec
// does not give: ReviewRequired, approval required, and spec.approvedPlanHash (which the
// approval commands set) not the hash of the plan in status. The object right after an
// approval is still ReviewRequired until the manager takes the approval: that is no ask.
func (pw *phaseWatcher) asksForApproval() bool {
	if pw.last == nil || pw.phase() != stagePlan {
		return false
	}
	required, _, _ := unstructured.NestedBool(pw.last.Object, "status", "approval", "required")
	approved, _, _ := unstructured.NestedString(pw.last.Object, "spec", "approvedPlanHash")
	plan, _, _ := unstructured.NestedString(pw.last.Object, "status", "planHash")
	return required && approved != plan
}

// describe is the phase and the conditions of the object as last seen.
func (pw *phaseWatcher) describe() string {
	if pw.last == nil {
		return "the object does not exist"
	}
	conditions, _, _ := unstructured.NestedSlice(pw.last.Object, "status", "conditions")
	parts := make([]string, 0, len(conditions))
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v=%v (%v: %v)", m["type"], m["status"], m["reason"], m["message"]))
	}
	items, _, _ := unstructured.NestedSlice(pw.last.Object, "status", "items")
	for _, it := range items {
		m, _ := it.(map[string]any)
		parts = append(parts, fmt.Sprintf("item %v %v: %v", m["name"], m["state"], m["message"]))
	}
	phase := pw.phase()
	if phase == "" {
		phase = "(none)"
	}
	return "phase " + phase + "; " + strings.Join(parts, "; ")
}

// itemStates lists the items of the object as last seen as "name=state".
func (pw *phaseWatcher) itemStates() string {
	if pw.last == nil {
		return ""
	}
	items, _, _ := unstructured.NestedSlice(pw.last.Object, "status", "items")
	parts := make([]string, 0, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v=%v", m["name"], m["state"]))
	}
	return strings.Join(parts, " ")
}
