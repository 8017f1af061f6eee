package app

import (
	"fmt"
	"strings"
)

// Params collects repeatable -param key=value flags: the URL parameters a
// sample adds to its reference (consumer) or its service (provider).
type Params map[string]string

// String implements flag.Value.
func (p *Params) String() string { return fmt.Sprint(map[string]string(*p)) }

// Set implements flag.Value: one key=value.
func (p *Params) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q: want key=value", s)
	}
	if *p == nil {
		*p = Params{}
	}
	(*p)[strings.TrimSpace(k)] = v
	return nil
}
