package nacosdiscovery

import (
	"net/url"
	"regexp"
)

// redactedMark stands for a secret in a log line or an error.
const redactedMark = "REDACTED"

// secretParams matches the value of a secret in a query string or a form
// (accessToken=…, password=…, any case) and in JSON ("accessToken":"…").
var secretParams = regexp.MustCompile(`(?i)((?:accessToken|password)=)[^&\s"',;]*|("(?:accessToken|password)"\s*:\s*")(?:[^"\\]|\\.)*`)

// redact returns s with the value of every accessToken and password
// parameter replaced by redactedMark.
func redact(s string) string {
	return secretParams.ReplaceAllString(s, "${1}${2}"+redactedMark)
}

// redactedError is an error whose message had a secret removed; it does
// not unwrap to the error that carried the secret.
type redactedError struct{ msg string }

func (e *redactedError) Error() string { return e.msg }

// redactErr returns err with no secret in its message, nor in any error
// errors.As finds through it when err is a *url.Error (what a failed HTTP
// request returns, its URL in its message): the URL is redacted in a copy.
// Any other error whose message holds a secret becomes a redactedError.
// nil stays nil.
func redactErr(err error) error {
	if err == nil {
		return nil
	}
	if ue, ok := err.(*url.Error); ok {
		return &url.Error{Op: ue.Op, URL: redact(ue.URL), Err: redactErr(ue.Err)}
	}
	if msg := err.Error(); redact(msg) != msg {
		return &redactedError{msg: redact(msg)}
	}
	return err
}
