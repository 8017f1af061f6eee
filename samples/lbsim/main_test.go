package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The command end to end on a shortened scenario: tables on stdout, the
// text and a readable PNG in the output directory.
func TestRunWritesTablesAndPlot(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := run([]string{"-scenario", "capacity", "-duration", "1s", "-balancers", "random,warmrandom", "-out", dir}, &out)
	require.NoError(t, err)
	text := out.String()
	assert.Contains(t, text, "== capacity")
	assert.Contains(t, text, "-- capacity / warmrandom: share of calls per provider, per second")
	assert.Contains(t, text, "-- capacity: summary")

	f, err := os.Open(filepath.Join(dir, "capacity.png"))
	require.NoError(t, err)
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err)
	assert.Greater(t, cfg.Width, 1000)
	assert.Greater(t, cfg.Height, 500)

	saved, err := os.ReadFile(filepath.Join(dir, "capacity.txt"))
	require.NoError(t, err)
	assert.Equal(t, text, string(saved))
}

func TestRunSVGQuiet(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := run([]string{"-scenario", "brpc", "-duration", "500ms", "-balancers", "warmrandom", "-format", "svg", "-quiet", "-out", dir}, &out)
	require.NoError(t, err)
	assert.NotContains(t, out.String(), "per second", "quiet prints summaries only")
	svg, err := os.ReadFile(filepath.Join(dir, "brpc.svg"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(svg), "<svg"), "an SVG document")
}

func TestRunRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-scenario", "nope"},
		{"-format", "gif"},
		{"-duration", "-1s"},
		{"-bucket", "0s"},
		{"-balancers", "no-such-balancer", "-scenario", "capacity", "-duration", "100ms"},
		{"stray"},
	} {
		err := run(append(args, "-out", dir), &bytes.Buffer{})
		assert.Error(t, err, "%q", args)
	}
}

// A failure scenario runs each of this module's balancers with ejection
// off and on and adds the failed first attempts table.
func TestRunFailureScenario(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := run([]string{"-scenario", "failfast", "-duration", "5s", "-balancers", "random,warmrandom", "-format", "svg", "-quiet", "-out", dir}, &out)
	require.NoError(t, err)
	text := out.String()
	for _, want := range []string{"warmrandom (no ejection)", "failed first attempts while p0 (fails fast) fails", "ejection  failed"} {
		assert.Contains(t, text, want)
	}
	var rows []string
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) > 2 && (f[0] == "random" || f[0] == "warmrandom") && (f[1] == "-" || f[1] == "on" || f[1] == "off") {
			rows = append(rows, f[0]+" "+f[1])
		}
	}
	assert.Equal(t, []string{"random -", "warmrandom off", "warmrandom on"}, rows)
	_, err = os.Stat(filepath.Join(dir, "failfast.svg"))
	assert.NoError(t, err)
}

// -scenario subsets runs the wide deployments over the full set and over
// both kinds of subsets, and writes the table that compares them.
func TestRunSubsetsComparesTheSets(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := run([]string{"-scenario", "subsets", "-duration", "20ms", "-bucket", "5ms", "-balancers", "warmrandom", "-format", "svg", "-quiet", "-out", dir}, &out)
	require.NoError(t, err)
	text := out.String()
	for _, name := range []string{"brpc-wide", "capacity-wide"} {
		assert.Contains(t, text, "== "+name+": the balancers over the full set and over subsets")
		table, err := os.ReadFile(filepath.Join(dir, name+"-subsets.txt"))
		require.NoError(t, err)
		for _, want := range []string{"full set", "subsets of 4, aperture", "subsets of 4, rendezvous", "max/mean of alike"} {
			assert.Contains(t, string(table), want, name)
		}
	}
	assert.Contains(t, text, "follows", "brpc's reversal")
	assert.Contains(t, text, "of bound", "capacity's bound")
}
