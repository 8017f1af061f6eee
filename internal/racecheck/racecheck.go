// Package racecheck tells the data races that the race detector reports in
// a process's output apart: those in this module's code, which fail a test,
// from those inside dependencies (nacos-sdk-go's reconnect, among others),
// which a test only logs.
package racecheck

import "strings"

// Split splits the race detector's reports in out into ours (whole
// reports) and theirs (one-line summaries). A
// report is ours when, in one of its two access stacks ("Read at", "Write
// at", "Previous ..."; not the goroutine creation stacks), the innermost
// frame outside the standard library is code of this module (or a sample's
// main): that code made the racing access. A race inside a dependency
// called from our code is theirs.
func Split(out string) (ours, theirs []string) {
	const begin, end = "WARNING: DATA RACE", "=================="
	for {
		i := strings.Index(out, begin)
		if i < 0 {
			return ours, theirs
		}
		out = out[i:]
		j := strings.Index(out, end)
		if j < 0 {
			j = len(out)
		}
		report := out[:j]
		out = out[j:]
		inAccess, decided, mine := false, false, false
		var summary []string
		for _, line := range strings.Split(report, "\n") {
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "Read at"), strings.HasPrefix(line, "Write at"),
				strings.HasPrefix(line, "Previous read at"), strings.HasPrefix(line, "Previous write at"):
				inAccess, decided = true, false
				summary = append(summary, trimmed)
			case strings.HasPrefix(line, "Goroutine "), trimmed == "":
				inAccess = false
			case inAccess && !decided && !strings.HasPrefix(trimmed, "/") && !strings.HasPrefix(trimmed, "<"):
				if standardLibrary(trimmed) {
					continue
				}
				decided = true
				if strings.HasPrefix(trimmed, "github.com/dubbogo-lb/lb/") || strings.HasPrefix(trimmed, "main.") {
					mine = true
				}
				summary[len(summary)-1] += " in " + trimmed
			}
		}
		if mine {
			ours = append(ours, report)
		} else {
			theirs = append(theirs, strings.Join(summary, "; "))
		}
	}
}

// standardLibrary reports whether the stack frame fn (such as
// "sort.insertionSort()" or "encoding/json.Marshal()") is in the standard
// library: its import path has no dot in its first element. A sample's
// "main." is not.
func standardLibrary(fn string) bool {
	first, _, _ := strings.Cut(fn, "/")
	if !strings.Contains(fn, "/") {
		first, _, _ = strings.Cut(fn, ".")
	}
	return !strings.Contains(first, ".") && first != "main"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
