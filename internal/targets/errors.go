package targets

import "errors"

// PrerequisiteError says what the cluster lacks and what the administrator has to install
// or change; a plan cannot be drafted until then.
type PrerequisiteError struct {
	Message string
}

func (e *PrerequisiteError) Error() string { return e.Message }

// IsPrerequisiteError tells whether err is, or wraps, a *PrerequisiteError.
func IsPrerequisiteError(err error) bool {
	var pe *PrerequisiteError
	return errors.As(err, &pe)
}
