package redact

import (
	"context"
	"errors"
)

// maskedError is an error whose text has been cleared of secrets. It
// unwraps only to sentinels, whose texts are fixed, never to the error it
// was made from: that error's text, and whatever errors.As could find in
// its chain, may hold the secrets.
type maskedError struct {
	msg   string
	kinds []error
}

func (e *maskedError) Error() string   { return e.msg }
func (e *maskedError) Unwrap() []error { return e.kinds }

// contextErrors are the sentinels every masked error keeps when its cause
// matches them, so that callers still tell a cancellation from a failure.
var contextErrors = []error{context.Canceled, context.DeadlineExceeded}

// Error returns err with its text masked. The result unwraps to each of
// sentinels that err matches (errors.Is) and to context.Canceled and
// context.DeadlineExceeded when err matches them, never to err itself.
func (r *Redactor) Error(err error, sentinels ...error) error {
	if err == nil {
		return nil
	}
	var kinds []error
	for _, k := range sentinels {
		if errors.Is(err, k) {
			kinds = append(kinds, k)
		}
	}
	return r.Wrap(err, err.Error(), kinds...)
}

// Wrap returns an error whose text is msg, masked, for a cause whose own
// text is too long or too raw to show (an HTTP response dump). It unwraps
// to kinds, which the caller found in cause its own way, and to the
// context errors cause matches; never to cause.
func (r *Redactor) Wrap(cause error, msg string, kinds ...error) error {
	ks := append([]error(nil), kinds...)
	for _, k := range contextErrors {
		if cause != nil && errors.Is(cause, k) && !contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return &maskedError{msg: r.String(msg), kinds: ks}
}

func contains(errs []error, e error) bool {
	for _, x := range errs {
		if x == e {
			return true
		}
	}
	return false
}
