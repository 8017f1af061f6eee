package ringhash

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// vectorCase is one "case" block of testdata/vectors.txt.
type vectorCase struct {
	name      string
	nodes     int    // 0 when unset (buildRing then uses defaultNodes)
	arguments string // hash.arguments, defaultArguments when unset
	providers []string
	// instance: Java built the provider URLs from a registry instance's ip
	// and port (source instance), not by parsing URL text.
	instance bool
	rows     []vectorRow
}

type vectorRow struct {
	want string   // address chosen by Dubbo Java
	args []string // String.valueOf of each invocation argument
	raw  string
}

func loadVectors(t *testing.T) []*vectorCase {
	t.Helper()
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []*vectorCase
	var cur *vectorCase
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case text == "" || strings.HasPrefix(text, "#"):
		case strings.HasPrefix(text, "case "):
			cur = &vectorCase{name: strings.TrimPrefix(text, "case "), arguments: defaultArguments}
			cases = append(cases, cur)
		case cur == nil:
			t.Fatalf("line %d: row before any case", line)
		case strings.HasPrefix(text, "nodes "):
			if v := strings.TrimPrefix(text, "nodes "); v != "-" {
				if cur.nodes, err = strconv.Atoi(v); err != nil {
					t.Fatalf("line %d: %v", line, err)
				}
			}
		case strings.HasPrefix(text, "arguments "):
			if v := strings.TrimPrefix(text, "arguments "); v != "-" {
				cur.arguments = v
			}
		case strings.HasPrefix(text, "source "):
			switch v := strings.TrimPrefix(text, "source "); v {
			case "url":
			case "instance":
				cur.instance = true
			default:
				t.Fatalf("line %d: unknown source %q", line, v)
			}
		case strings.HasPrefix(text, "providers "):
			cur.providers = strings.Split(strings.TrimPrefix(text, "providers "), ",")
		default:
			fields := strings.Split(text, "\t")
			row := vectorRow{want: fields[0], raw: text}
			for _, a := range fields[1:] {
				_, val, ok := strings.Cut(a, "=")
				if !ok {
					t.Fatalf("line %d: bad argument %q", line, a)
				}
				row.args = append(row.args, val)
			}
			cur.rows = append(cur.rows, row)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestDubboJavaVectors replays the selections recorded from the real Dubbo
// jar (see testdata/README.md).
func TestDubboJavaVectors(t *testing.T) {
	cases := loadVectors(t)
	total := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := buildRing(c.providers, c.nodes)
			indexes, _ := parseArguments(c.arguments)
			var buf []byte
			var parts []string
			for _, row := range c.rows {
				// Dubbo's toKey: selected arguments that exist, in the listed order.
				parts = parts[:0]
				for _, i := range indexes {
					if i >= 0 && i < len(row.args) {
						parts = append(parts, row.args[i])
					}
				}
				buf = []byte(strings.Join(parts, ""))
				got := r.Lookup(hashKey(buf))
				if got < 0 || c.providers[got] != row.want {
					t.Errorf("%q: key %q -> member %d, Dubbo chose %s", row.raw, buf, got, row.want)
				}
				if hashString(string(buf)) != hashKey(buf) {
					t.Errorf("hashString and hashKey disagree on %q", buf)
				}
			}
			total += len(c.rows)
		})
	}
	if len(cases) < 12 || total < 360 {
		t.Fatalf("only %d cases / %d vectors parsed", len(cases), total)
	}
}
