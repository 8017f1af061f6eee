package it

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// exitedProc runs script with sh to its end and returns it as a proc
// that the harness signalled with sent (nothing is delivered: the mask is
// what exitProblem reads).
func exitedProc(t *testing.T, script string, sent ...syscall.Signal) *proc {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	_ = cmd.Run() // a non-zero status is the point
	if cmd.ProcessState == nil {
		t.Fatalf("sh -c %q did not run", script)
	}
	p := &proc{name: "sh", cmd: cmd}
	for _, sig := range sent {
		p.sent.Or(1 << uint(sig))
	}
	return p
}

// TestExitProblemJudgesEveryExitAgainstEverySignalSent pins how watch
// judges an exit: the JVM that exits 143 for a SIGTERM just as stop's
// SIGKILL goes out ended as asked; a 143 the harness never asked for, a
// 137 (128 + SIGKILL, no process exits with it by itself) and any other
// status did not.
func TestExitProblemJudgesEveryExitAgainstEverySignalSent(t *testing.T) {
	cases := []struct {
		name, script string
		sent         []syscall.Signal
		ok           bool
	}{
		{"clean exit unasked", "exit 0", nil, true},
		{"status 3 unasked", "exit 3", nil, false},
		{"JVM's 143 after SIGTERM", "exit 143", []syscall.Signal{syscall.SIGTERM}, true},
		{"JVM's 143 after SIGTERM then SIGKILL", "exit 143", []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, true},
		{"143 after SIGKILL only", "exit 143", []syscall.Signal{syscall.SIGKILL}, false},
		{"137 after SIGKILL", "exit 137", []syscall.Signal{syscall.SIGKILL}, false},
		{"143 unasked", "exit 143", nil, false},
		{"graceful exit after SIGTERM", "exit 0", []syscall.Signal{syscall.SIGTERM}, true},
		{"status 1 after SIGTERM", "exit 1", []syscall.Signal{syscall.SIGTERM}, false},
		{"killed by SIGTERM after SIGTERM then SIGKILL", "kill -TERM $$", []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, true},
		{"killed by SIGKILL after SIGKILL", "kill -KILL $$", []syscall.Signal{syscall.SIGKILL}, true},
		{"killed by SIGTERM after SIGKILL only", "kill -TERM $$", []syscall.Signal{syscall.SIGKILL}, false},
		{"killed by SIGTERM unasked", "kill -TERM $$", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			problem := exitedProc(t, c.script, c.sent...).exitProblem()
			if (problem == "") != c.ok {
				t.Errorf("sh -c %q after %v: exitProblem %q, want ok=%v", c.script, c.sent, problem, c.ok)
			}
			if !c.ok && c.sent != nil && !strings.Contains(problem, c.sent[len(c.sent)-1].String()) {
				t.Errorf("problem %q does not name the signal sent", problem)
			}
		})
	}
}
