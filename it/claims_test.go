package it

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/claims.md names, in backquotes, the tests and benchmarks that prove
// the README's claims; every one of them must exist in the module's tests.
// It needs no Nacos.
func TestClaimsNameExistingTests(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "claims.md"))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	eachTestFile(t, func(_ string, b []byte) {
		for _, m := range testFuncRe.FindAllSubmatch(b, -1) {
			have[string(m[1])] = true
		}
	})
	named, missing := claimedMissing(string(doc), have)
	if len(named) < 50 {
		t.Errorf("docs/claims.md names only %d tests: the table is gone or its names are no longer in backquotes", len(named))
	}
	for _, n := range missing {
		t.Errorf("docs/claims.md names %s, which no test of the module defines: it was renamed or removed; update the table", n)
	}
	t.Logf("docs/claims.md names %d tests and benchmarks, all defined", len(named))
}

// The check itself fails on a name that no test defines.
func TestClaimsCheckCatchesAMissingName(t *testing.T) {
	have := map[string]bool{"TestA": true, "BenchmarkB": true}
	named, missing := claimedMissing("| a | `TestA`, `BenchmarkB`, `TestGone`, `FuzzGone`; not `testX` nor Test outside quotes |", have)
	if !slices.Equal(named, []string{"BenchmarkB", "FuzzGone", "TestA", "TestGone"}) || !slices.Equal(missing, []string{"FuzzGone", "TestGone"}) {
		t.Errorf("named %v, missing %v; want 4 names, FuzzGone and TestGone missing", named, missing)
	}
}

var (
	// testFuncRe matches the declaration of a test, benchmark or fuzz test.
	testFuncRe = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Z0-9_]\w*)\(`)
	// claimRe matches a test, benchmark or fuzz test named in backquotes.
	claimRe = regexp.MustCompile("`((?:Test|Benchmark|Fuzz)[A-Z0-9_]\\w*)`")
)

// claimedMissing returns the names doc gives in backquotes, sorted and
// unique, and those of them that have lacks.
func claimedMissing(doc string, have map[string]bool) (named, missing []string) {
	for _, m := range claimRe.FindAllStringSubmatch(doc, -1) {
		named = append(named, m[1])
	}
	slices.Sort(named)
	named = slices.Compact(named)
	for _, n := range named {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	return named, missing
}

// it/test.sh fuzzes every fuzz target of the module, each in the package
// that defines it: a target moved or added without the script is caught
// here, not by a fuzz run that names a package without it. No Nacos.
func TestTestShFuzzesEveryTarget(t *testing.T) {
	script, err := os.ReadFile("test.sh")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`([a-z][a-z0-9/]*):(Fuzz\w+)`).FindAllStringSubmatch(string(script), -1) {
		listed[m[1]+":"+m[2]] = true
	}
	defined := map[string]bool{}
	fuzzRe := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	eachTestFile(t, func(path string, b []byte) {
		for _, m := range fuzzRe.FindAllSubmatch(b, -1) {
			defined[filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../")))+":"+string(m[1])] = true
		}
	})
	if len(defined) < 10 {
		t.Fatalf("found only %d fuzz targets: the walk is broken", len(defined))
	}
	for target := range defined {
		if !listed[target] {
			t.Errorf("it/test.sh does not fuzz %s", target)
		}
	}
	for target := range listed {
		if !defined[target] {
			t.Errorf("it/test.sh fuzzes %s, which no package defines", target)
		}
	}
}

// eachTestFile calls f with the path (from it/) and contents of every
// _test.go file of the module, testdata and .git left out.
func eachTestFile(t *testing.T, f func(path string, b []byte)) {
	t.Helper()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules"):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, "_test.go"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			f(path, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
