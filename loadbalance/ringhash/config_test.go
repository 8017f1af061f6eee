package ringhash

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseConfig(t *testing.T) {
	def := config{nodes: defaultNodes, spec: defaultArguments, indexes: []int{0}}
	with := func(f func(*config)) config { c := def; f(&c); return c }
	tests := []struct {
		name         string
		input        map[string]string
		want         config
		wantProblems []string
	}{
		{name: "defaults", want: def},
		{name: "nodes", input: map[string]string{nodesKey: "40"}, want: with(func(c *config) { c.nodesRaw, c.nodes = "40", 40 })},
		{name: "nodes with blanks", input: map[string]string{nodesKey: " 40 "}, want: with(func(c *config) { c.nodesRaw, c.nodes = " 40 ", 40 })},
		{name: "nodes not an integer", input: map[string]string{nodesKey: "abc"}, want: with(func(c *config) { c.nodesRaw = "abc" }),
			wantProblems: []string{`hash.nodes "abc" is not an integer; using 160`}},
		{name: "negative nodes", input: map[string]string{nodesKey: "-5"}, want: with(func(c *config) { c.nodesRaw = "-5" }),
			wantProblems: []string{`hash.nodes "-5" is not positive; using 160`}},
		{name: "zero nodes", input: map[string]string{nodesKey: "0"}, want: with(func(c *config) { c.nodesRaw = "0" }),
			wantProblems: []string{`hash.nodes "0" is not positive; using 160`}},
		{name: "nodes below the minimum", input: map[string]string{nodesKey: "2"}, want: with(func(c *config) { c.nodesRaw, c.nodes = "2", minNodes }),
			wantProblems: []string{`hash.nodes "2" is below 4 (Dubbo would build an empty ring); using 4`}},
		{name: "nodes above the maximum", input: map[string]string{nodesKey: "100000"}, want: with(func(c *config) { c.nodesRaw, c.nodes = "100000", maxNodes }),
			wantProblems: []string{`hash.nodes "100000" is above 1024; using 1024`}},
		{name: "nodes beyond int64", input: map[string]string{nodesKey: "99999999999999999999"},
			want:         with(func(c *config) { c.nodesRaw, c.nodes = "99999999999999999999", maxNodes }),
			wantProblems: []string{`hash.nodes "99999999999999999999" is above 1024; using 1024`}},
		{name: "arguments", input: map[string]string{argumentsKey: "0,2"},
			want: with(func(c *config) { c.argsRaw, c.spec, c.indexes = "0,2", "0,2", []int{0, 2} })},
		{name: "arguments in order, blanks and empty entries ignored", input: map[string]string{argumentsKey: " 1 , 0 ,, 5"},
			want: with(func(c *config) { c.argsRaw, c.spec, c.indexes = " 1 , 0 ,, 5", " 1 , 0 ,, 5", []int{1, 0, 5} })},
		{name: "blank arguments are the default", input: map[string]string{argumentsKey: "   "},
			want: with(func(c *config) { c.argsRaw = "   " })},
		{name: "arguments with a sign", input: map[string]string{argumentsKey: "+3"},
			want: with(func(c *config) { c.argsRaw, c.spec, c.indexes = "+3", "+3", []int{3} })},
		{name: "an argument that is not an index is skipped", input: map[string]string{argumentsKey: "a,1,b"},
			want:         with(func(c *config) { c.argsRaw, c.spec, c.indexes = "a,1,b", "a,1,b", []int{1} }),
			wantProblems: []string{`hash.arguments "a,1,b": skipped "a", "b" (not an argument index); the key is made of arguments 1`}},
		{name: "no index at all", input: map[string]string{argumentsKey: "x,y"},
			want:         with(func(c *config) { c.argsRaw, c.spec = "x,y", "x,y" }),
			wantProblems: []string{`hash.arguments "x,y": skipped "x", "y" (not an argument index); the key is made of arguments 0`}},
		{name: "an index beyond Java's int", input: map[string]string{argumentsKey: "99999999999"},
			want:         with(func(c *config) { c.argsRaw, c.spec = "99999999999", "99999999999" }),
			wantProblems: []string{`hash.arguments "99999999999": skipped "99999999999" (not an argument index); the key is made of arguments 0`}},
		{name: "only commas", input: map[string]string{argumentsKey: ","},
			want:         with(func(c *config) { c.argsRaw, c.spec = ",", "," }),
			wantProblems: []string{`hash.arguments ",": lists no argument index; the key is made of arguments 0`}},
		{name: "a negative index is kept and selects nothing", input: map[string]string{argumentsKey: "-1"},
			want:         with(func(c *config) { c.argsRaw, c.spec, c.indexes = "-1", "-1", []int{-1} }),
			wantProblems: []string{`hash.arguments "-1": negative index -1 selects no argument; every key is empty, so all calls go to one provider`}},
		{name: "more indexes than the cap", input: map[string]string{argumentsKey: "0,1,2,3,4,5,6,7,8,9"},
			want: with(func(c *config) {
				c.argsRaw, c.spec, c.indexes = "0,1,2,3,4,5,6,7,8,9", "0,1,2,3,4,5,6,7,8,9", []int{0, 1, 2, 3, 4, 5, 6, 7}
			}),
			wantProblems: []string{`hash.arguments "0,1,2,3,4,5,6,7,8,9" lists more than 8 argument indexes; using 0,1,2,3,4,5,6,7`}},
		{name: "attachment", input: map[string]string{attachmentKey: " user "}, want: with(func(c *config) { c.attachment = "user" })},
		{name: "every key, two bad", input: map[string]string{nodesKey: "abc", argumentsKey: "x,0,5", attachmentKey: "tenant"},
			want: config{nodesRaw: "abc", argsRaw: "x,0,5", nodes: defaultNodes, spec: "x,0,5", indexes: []int{0, 5}, attachment: "tenant"},
			wantProblems: []string{`hash.nodes "abc" is not an integer; using 160`,
				`hash.arguments "x,0,5": skipped "x" (not an argument index); the key is made of arguments 0,5`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := parseConfig(func(k string) string { return tt.input[k] })
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantProblems, problems)
		})
	}
}
