// Package lblog is the one logger of the module: dubbo-go's own (gost's
// logger), one prefix, and one line per message. Configuration hints (a
// missing filter, a bad weight, a bad hash argument) are WARN lines, logged
// once per service, method or provider by their callers, never with a
// stack trace.
package lblog

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/dubbogo/gost/log/logger"
)

// Prefix starts every line the module logs.
const Prefix = "[dubbogo-lb] "

// oneLine folds line breaks into spaces.
var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// sink receives the finished lines; tests capture them with Capture.
var sink atomic.Pointer[func(line string)]

// Warnf logs one WARN line: Prefix, then the message with any line breaks
// folded into spaces.
func Warnf(format string, args ...any) {
	line := Prefix + oneLine.Replace(fmt.Sprintf(format, args...))
	if f := sink.Load(); f != nil {
		(*f)(line)
		return
	}
	logger.Warn(line)
}

// Capture sends every line to f instead of dubbo-go's logger until the
// returned function is called. For tests.
func Capture(f func(line string)) (restore func()) {
	old := sink.Swap(&f)
	return func() { sink.Store(old) }
}
