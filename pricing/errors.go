package pricing

import (
	"errors"
	"fmt"
)

// Code classifies an error so that callers (the CLI, the HTTP API) can map it to an
// exit code or status without parsing messages.
type Code string

const (
	// Invalid: the user's input is wrong (flag, config, model, price file). CLI exit 2, HTTP 400.
	Invalid Code = "invalid"
	// NotFound: a named thing does not exist (model, offer, provider). CLI exit 2, HTTP 404.
	NotFound Code = "not_found"
	// Unavailable: a remote service or resource could not be reached. CLI exit 1, HTTP 503.
	Unavailable Code = "unavailable"
	// Internal: a bug or an unexpected runtime failure. CLI exit 1, HTTP 500.
	Internal Code = "internal"
)

// Error is picker's one error type: a code plus a message meant for the user.
// Err, when set, is the underlying cause and is reachable with errors.Unwrap; Message
// already contains its text when the error was made with Errorf and %w.
type Error struct {
	Code    Code
	Message string
	// Param names the input parameter the error is about (a job or filter flag without
	// its dashes, "batch"; the same name as a query parameter or form field), "" when it
	// is about none in particular. The HTTP API returns it as data, so no caller ever
	// reads it out of Message.
	Param string
	Err   error
}

func (e *Error) Error() string {
	if e.Message == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message. A %w verb
// wraps its argument as usual.
func Errorf(code Code, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// ParamErrorf is Errorf for an error about one named input parameter (Error.Param).
func ParamErrorf(code Code, param, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Param: param, Err: errors.Unwrap(err)}
}

// WithParam returns err naming param when it is a *Error that names none yet; other
// errors are made Invalid errors about param (a value that failed to parse is bad input).
func WithParam(err error, param string) error {
	if err == nil || ErrorParam(err) != "" {
		return err
	}
	var e *Error
	if errors.As(err, &e) {
		cp := *e
		cp.Param = param
		return &cp
	}
	return &Error{Code: Invalid, Message: err.Error(), Param: param, Err: err}
}

// ErrorParam returns the Param of the first *Error in err's chain that names one, "" when
// none does.
func ErrorParam(err error) string {
	for ; err != nil; err = errors.Unwrap(err) {
		if e, ok := err.(*Error); ok && e.Param != "" {
			return e.Param
		}
	}
	return ""
}

// ErrorCode returns the code of the first *Error in err's chain, Internal for any other
// non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}
