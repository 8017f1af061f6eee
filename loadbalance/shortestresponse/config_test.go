package shortestresponse

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseConfig(t *testing.T) {
	const notDuration = " is not a duration (30s, or Java's milliseconds); using "
	tests := []struct {
		name         string
		opts         Options // as New completed them
		input        map[string]string
		want         config
		wantProblems []string
	}{
		{name: "defaults", want: config{period: defaultSlidePeriod}},
		{name: "the option when the key is unset", opts: Options{SlidePeriod: time.Minute}, want: config{period: time.Minute}},
		{name: "a duration", input: map[string]string{slidePeriodKey: "10s"}, want: config{period: 10 * time.Second}},
		{name: "Java's milliseconds", input: map[string]string{slidePeriodKey: "2000"}, want: config{period: 2 * time.Second}},
		{name: "blanks around", input: map[string]string{slidePeriodKey: " 5s "}, want: config{period: 5 * time.Second}},
		{name: "not a duration", input: map[string]string{slidePeriodKey: "soon"}, want: config{period: defaultSlidePeriod},
			wantProblems: []string{`shortestresponse.slidePeriod "soon"` + notDuration + "30s"}},
		{name: "zero", input: map[string]string{slidePeriodKey: "0"}, want: config{period: defaultSlidePeriod},
			wantProblems: []string{`shortestresponse.slidePeriod "0"` + notDuration + "30s"}},
		{name: "negative", input: map[string]string{slidePeriodKey: "-1s"}, want: config{period: defaultSlidePeriod},
			wantProblems: []string{`shortestresponse.slidePeriod "-1s"` + notDuration + "30s"}},
		{name: "above a year", input: map[string]string{slidePeriodKey: "8761h"}, want: config{period: defaultSlidePeriod},
			wantProblems: []string{`shortestresponse.slidePeriod "8761h"` + notDuration + "30s"}},
		{name: "a bad value keeps the option", opts: Options{SlidePeriod: time.Minute}, input: map[string]string{slidePeriodKey: "1e3"},
			want: config{period: time.Minute}, wantProblems: []string{`shortestresponse.slidePeriod "1e3"` + notDuration + "1m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if opts.SlidePeriod == 0 {
				opts = New(Options{}).opts
			}
			got, problems := parseConfig(opts, func(k string) string { return tt.input[k] })
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantProblems, problems)
		})
	}
}
