package controller

import (
	"context"
	"fmt"
	"time"
)

// outcome is what a handler returns. A handler never calls another phase's handler: it
// names the handler that goes on in the same step (then, with its arguments), or ends the
// step. A step that ends is persisted; next asks for the next step to start at once from
// what was persisted, and after says when to look again otherwise (0: on the next event).
type outcome struct {
	then  phaseHandler
	next  bool
	after time.Duration

	// The arguments of the handler named by then.
	cause   draftCause
	done    *rendering
	drift   driftFindings
	drifted []string
	lock    bool
	reason  string
	message string
}

// phaseHandler names a handler a step can go on with.
type phaseHandler int

const (
	endStep phaseHandler = iota
	// draft drafts a plan (outcome.cause, and outcome.done when the rendering was done).
	draftHandler
	// review decides what a plan drafted in this step needs (outcome.cause).
	reviewHandler
	// decide acts on the approval of the plan shown (outcome.reason, outcome.message).
	decideHandler
	// start enters InProgress (outcome.lock: the targets are checked against the plan).
	startHandler
	// execute takes the next step of the execution.
	executeHandler
	// finish ends an execution whose items are all done.
	finishHandler
	// judge puts an applied plan in the phase drift findings call for (outcome.drift).
	judgeHandler
	// settle puts an applied plan in the phase its drifted targets call for (outcome.drifted).
	settleHandler
	// watch looks after an applied plan.
	watchHandler
)

// nextStep ends the step; the next one starts at once from the persisted status.
var nextStep = outcome{next: true}

// waitFor ends the step; the config is looked at again after d, or on an event before.
func waitFor(d time.Duration) outcome { return outcome{after: d} }

// goOn names the handler that goes on in this step.
func goOn(h phaseHandler) outcome { return outcome{then: h} }

// redraft goes on with a draft for cause, reusing a rendering done in this step.
func redraft(cause draftCause, done *rendering) outcome {
	return outcome{then: draftHandler, cause: cause, done: done}
}

// run runs the handlers of one step in the order they name, starting from the one of the
// config's phase (step), until one ends the step.
func (r *VirtPlatformConfigReconciler) run(ctx context.Context, s *scope) (outcome, error) {
	o, err := r.step(ctx, s)
	for handlers := 0; err == nil && o.then != endStep; handlers++ {
		if handlers == maxHandlersPerStep {
			return outcome{}, fmt.Errorf("the step of VirtPlatformConfig %s did not end after %d handlers", s.vpc.Name, handlers)
		}
		switch h := o.then; h {
		case draftHandler:
			o, err = r.draft(ctx, s, o.cause, o.done)
		case reviewHandler:
			o, err = r.review(ctx, s, o.cause)
		case decideHandler:
			o = r.decide(s, o.reason, o.message)
		case startHandler:
			o, err = r.startExecution(ctx, s, o.lock)
		case executeHandler:
			o, err = r.execute(ctx, s)
		case finishHandler:
			o, err = r.finishExecution(ctx, s)
		case judgeHandler:
			o, err = r.judgeApplied(ctx, s, o.drift)
		case settleHandler:
			o, err = r.settle(ctx, s, o.drifted)
		case watchHandler:
			o, err = r.watchApplied(ctx, s)
		default:
			return outcome{}, fmt.Errorf("unknown handler %d", h)
		}
	}
	return wakeForLapse(s, o), err
}

// maxHandlersPerStep bounds the handlers one step runs: an execution of many items that
// need no wait runs them all in one step.
const maxHandlersPerStep = 1000
