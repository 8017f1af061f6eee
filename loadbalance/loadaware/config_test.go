package loadaware

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseConfig(t *testing.T) {
	base := New(Options{}).opts
	def := base.config()
	with := func(f func(*config)) config { c := def; f(&c); return c }
	const notDuration = " is not a positive duration (10s, or milliseconds) of at most a year; using "
	tests := []struct {
		name         string
		input        map[string]string
		want         config
		wantProblems []string
	}{
		{name: "defaults", want: def},
		{name: "blank values are unset", input: map[string]string{costKey: " ", blackoutKey: "", errorPenaltyKey: "  "}, want: def},
		{name: "cost wrr, any case", input: map[string]string{costKey: " WRR "}, want: with(func(c *config) { c.cost = CostWRR })},
		{name: "cost java", input: map[string]string{costKey: "java"}, want: with(func(c *config) { c.cost = CostJava })},
		{name: "cost capacity", input: map[string]string{costKey: "capacity"}, want: def},
		{name: "bad cost", input: map[string]string{costKey: "fastest"}, want: def,
			wantProblems: []string{`loadaware.cost "fastest" is not capacity, wrr or java; using capacity`}},
		{name: "blackout in Java's milliseconds", input: map[string]string{blackoutKey: "2500"},
			want: with(func(c *config) { c.blackout = int64(2500 * time.Millisecond) })},
		{name: "blackout 0 turns it off", input: map[string]string{blackoutKey: "0"}, want: with(func(c *config) { c.blackout = 0 })},
		{name: "blackout 0s turns it off", input: map[string]string{blackoutKey: "0s"}, want: with(func(c *config) { c.blackout = 0 })},
		{name: "negative blackout", input: map[string]string{blackoutKey: "-1s"}, want: def,
			wantProblems: []string{`loadaware.blackout "-1s"` + notDuration + "3s"}},
		{name: "expiration", input: map[string]string{expirationKey: "1m"}, want: with(func(c *config) { c.expiration = int64(time.Minute) })},
		{name: "expiration 0 is refused", input: map[string]string{expirationKey: "0"}, want: def,
			wantProblems: []string{`loadaware.expiration "0"` + notDuration + "3m0s"}},
		{name: "update period", input: map[string]string{updateKey: "500ms"}, want: with(func(c *config) { c.update = int64(500 * time.Millisecond) })},
		{name: "negative update period", input: map[string]string{updateKey: "-1s"}, want: def,
			wantProblems: []string{`loadaware.update-period "-1s"` + notDuration + "1s"}},
		{name: "update period above a year", input: map[string]string{updateKey: "8761h"}, want: def,
			wantProblems: []string{`loadaware.update-period "8761h"` + notDuration + "1s"}},
		{name: "error penalty", input: map[string]string{errorPenaltyKey: "0.5"}, want: with(func(c *config) { c.penalty = 0.5 })},
		{name: "error penalty 0", input: map[string]string{errorPenaltyKey: "0"}, want: with(func(c *config) { c.penalty = 0 })},
		{name: "error penalty above 100", input: map[string]string{errorPenaltyKey: "101"}, want: def,
			wantProblems: []string{`loadaware.error-penalty "101" is not a number from 0 to 100; using 1`}},
		{name: "error penalty NaN", input: map[string]string{errorPenaltyKey: "NaN"}, want: def,
			wantProblems: []string{`loadaware.error-penalty "NaN" is not a number from 0 to 100; using 1`}},
		{name: "probe after", input: map[string]string{probeAfterKey: "2s"}, want: with(func(c *config) { c.probe = int64(2 * time.Second) })},
		{name: "probe after 0 turns the probe off", input: map[string]string{probeAfterKey: "0"}, want: with(func(c *config) { c.probe = 0 })},
		{name: "bad probe after", input: map[string]string{probeAfterKey: "soon"}, want: def,
			wantProblems: []string{`loadaware.probe-after "soon"` + notDuration + "5s"}},
		{name: "every key, one bad", input: map[string]string{costKey: "WRR", blackoutKey: "2500", expirationKey: "1m", updateKey: "-1s",
			errorPenaltyKey: "0.5", probeAfterKey: "0"},
			want:         config{cost: CostWRR, blackout: int64(2500 * time.Millisecond), expiration: int64(time.Minute), update: def.update, penalty: 0.5},
			wantProblems: []string{`loadaware.update-period "-1s"` + notDuration + "1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, problems := parseConfig(base, func(k string) string { return tt.input[k] })
			assert.Equal(t, tt.want, o.config())
			assert.Equal(t, tt.wantProblems, problems)
		})
	}
	assert.Equal(t, defaultProbeAfter, base.ProbeAfter, "parsing leaves the base options alone")
}

func FuzzParseConfig(f *testing.F) {
	f.Add("wrr", "10s", "3m", "1s", "1", "5s")
	f.Add("java", "0", "180000", "500", "0", "0")
	f.Add("x", "-1", "1e99s", "", "NaN", "-5s")
	base := New(Options{}).opts
	f.Fuzz(func(t *testing.T, cost, blackout, expiration, update, penalty, probe string) {
		vals := map[string]string{costKey: cost, blackoutKey: blackout, expirationKey: expiration, updateKey: update, errorPenaltyKey: penalty, probeAfterKey: probe}
		o, _ := parseConfig(base, func(k string) string { return vals[k] })
		if o.Cost != CostCapacity && o.Cost != CostWRR && o.Cost != CostJava {
			t.Fatalf("cost %q", o.Cost)
		}
		if o.Blackout < 0 || o.Expiration <= 0 || o.UpdatePeriod <= 0 || o.ProbeAfter < 0 || !(o.ErrorPenalty >= 0 && o.ErrorPenalty <= 100) {
			t.Fatalf("out of range: %+v", o)
		}
	})
}
