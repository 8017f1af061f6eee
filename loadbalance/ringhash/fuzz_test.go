package ringhash

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseArguments checks hash.arguments parsing: at least one index,
// each an int32, the problem report never panicking, and a key built from
// any argument list never indexing out of range.
func FuzzParseArguments(f *testing.F) {
	for _, s := range []string{"", "0", "0,1", " 1 , 2 ", "a", "-1", "0,,2", ",", "2147483648", "1,x,-3", "\u00a0", "0,1,2,3,4,5,6,7,8,9"} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, spec string, nargs uint8) {
		idx, _ := parseArguments(spec)
		if len(idx) == 0 {
			t.Fatalf("parseArguments(%q) is empty", spec)
		}
		for _, i := range idx {
			if i < math.MinInt32 || i > math.MaxInt32 {
				t.Fatalf("parseArguments(%q) gave %d", spec, i)
			}
		}
		c, problems := parseConfig(func(key string) string {
			if key == argumentsKey {
				return spec
			}
			return ""
		})
		if len(c.indexes) > maxArguments {
			t.Fatalf("parseConfig(%q) keeps %d indexes, above %d", spec, len(c.indexes), maxArguments)
		}
		if len(idx) > maxArguments {
			if !slices.Equal(c.indexes, idx[:maxArguments]) || !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "more than") }) {
				t.Fatalf("parseConfig(%q): indexes %v, problems %q; want the first %d with a problem", spec, c.indexes, problems, maxArguments)
			}
		} else if !slices.Equal(c.indexes, idx) && strings.TrimSpace(spec) != "" {
			t.Fatalf("parseConfig(%q) indexes %v, parseArguments %v", spec, c.indexes, idx)
		}
		k := newKeySpec(&c, "fuzz")
		args := make([]any, nargs%8)
		for i := range args {
			args[i] = strconv.Itoa(i)
		}
		k.warned.Store(true) // keep the log quiet
		if got, want := k.point(args), hashKey(k.appendAny(nil, args)); got != want {
			t.Fatalf("spec %q, %d args: point %d, want %d", spec, len(args), got, want)
		}
	})
}

// FuzzParseNodes checks hash.nodes parsing: the value used is always one
// buildRing accepts, and a value is replaced only with a reason.
func FuzzParseNodes(f *testing.F) {
	for _, s := range []string{"", "160", " 8 ", "0", "-4", "3", "161", "99999999999999999999", "1e3", "abc", "+16"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, problem := parseNodes(raw)
		if n < minNodes || n > maxNodes {
			t.Fatalf("parseNodes(%q) = %d, outside [%d, %d]", raw, n, minNodes, maxNodes)
		}
		for _, members := range []int{1, 1000, 100_000, math.MaxInt32} {
			if e := effectiveNodes(members, n); int64(e)*int64(members) > maxPoints && e > minNodes {
				t.Fatalf("hash.nodes %q: %d providers × %d nodes exceed %d points", raw, members, e, maxPoints)
			}
		}
		if strings.TrimSpace(raw) == "" && (n != defaultNodes || problem != "") {
			t.Fatalf("parseNodes(%q) = %d, %q; want the default, silently", raw, n, problem)
		}
		if problem == "" && strings.TrimSpace(raw) != "" {
			if v, err := strconv.Atoi(strings.TrimSpace(raw)); err != nil || v != n {
				t.Fatalf("parseNodes(%q) = %d without a problem", raw, n)
			}
		}
	})
}

// FuzzAppendJava checks the Java string forms of numbers: floats read back
// as the same value (Java's Double.parseDouble/Float.parseFloat accept
// them, as Go's ParseFloat does), in Java's notation; integers as decimal;
// and the stack-buffer path agreeing with the general one.
func FuzzAppendJava(f *testing.F) {
	for _, v := range []float64{0, 1, 0.001, 1e7, 1e-4, 123.456, 5e-324, math.MaxFloat64, 1e-3, 9999999.999, math.Inf(1), math.NaN()} {
		f.Add(v, int64(v), "s")
	}
	f.Add(-0.0, int64(-1), "")
	f.Fuzz(func(t *testing.T, x float64, i int64, s string) {
		for _, c := range []struct {
			v    any
			bits int
			f    float64
		}{{x, 64, x}, {float32(x), 32, float64(float32(x))}} {
			got := string(AppendJava(nil, c.v))
			checkJavaFloat(t, got, c.f, c.bits)
		}
		if got := string(AppendJava(nil, i)); got != strconv.FormatInt(i, 10) {
			t.Fatalf("AppendJava(%d) = %q", i, got)
		}
		k := &keySpec{indexes: []int{0, 1, 2}, single: -1, maxIndex: 2}
		args := []any{s, x, i}
		var stack [keyStack]byte
		want := k.appendAny(nil, args)
		if got, ok := k.appendStack(stack[:0], args); ok && string(got) != string(want) {
			t.Fatalf("stack key %q, general key %q", got, want)
		}
	})
}

func checkJavaFloat(t *testing.T, got string, f float64, bits int) {
	t.Helper()
	switch {
	case math.IsNaN(f):
		if got != "NaN" {
			t.Fatalf("NaN formatted as %q", got)
		}
		return
	case math.IsInf(f, 0):
		if got != "Infinity" && got != "-Infinity" {
			t.Fatalf("%v formatted as %q", f, got)
		}
		return
	}
	back, err := strconv.ParseFloat(got, bits)
	if err != nil || back != f || math.Signbit(back) != math.Signbit(f) {
		t.Fatalf("%v (%d bits) formatted as %q, which reads back as %v (%v)", f, bits, got, back, err)
	}
	mant, exp, sci := strings.Cut(strings.TrimPrefix(got, "-"), "E")
	whole, frac, ok := strings.Cut(mant, ".")
	if !ok || whole == "" || frac == "" {
		t.Fatalf("%v formatted as %q: no digit on each side of the point", f, got)
	}
	abs := math.Abs(f)
	plain := abs == 0 || (abs >= 1e-3 && abs < 1e7)
	if sci == plain {
		t.Fatalf("%v formatted as %q: wrong notation", f, got)
	}
	if sci && (len(whole) != 1 || whole == "0" || strings.HasPrefix(exp, "+") || strings.HasPrefix(strings.TrimPrefix(exp, "-"), "0")) {
		t.Fatalf("%v formatted as %q: not Java's d.dddE±n", f, got)
	}
}

// FuzzRebuildIsBuild checks Rebuild against buildRing over changes of
// membership the fuzzer picks: after two bytes that choose the virtual
// nodes and how few addresses the members share (so that points collide),
// each pair of bytes adds, removes or replaces a member at a place, moves
// the members round, or adds or removes many. Rings stay small (at most 64 members, 16 changes) for fast inputs.
func FuzzRebuildIsBuild(f *testing.F) {
	f.Add([]byte{0, 5, 0, 3, 1, 9, 2, 4, 3, 1, 4, 40, 5, 30})
	f.Add([]byte{1, 60, 4, 63, 4, 63, 5, 62, 0, 0, 1, 0, 3, 2})
	f.Add([]byte{2, 1, 2, 0, 2, 1, 2, 2, 4, 20, 5, 19})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		const most = 64
		nodes := []int{4, 8, 16}[data[0]%3]
		addresses := 2 + int(data[1])%62
		id := 0
		member := func(b int) testMember {
			id++
			return testMember{"10.0.0." + strconv.Itoa(b%addresses) + ":20880", id}
		}
		var cur []testMember
		for i := range 8 {
			cur = append(cur, member(i*7))
		}
		ring := buildRing(addrsOf(cur), nodes)
		for step, op := range slices.Collect(slices.Chunk(data[2:], 2)) {
			if len(op) < 2 || step == 16 {
				break
			}
			kind, arg := int(op[0]), int(op[1])
			next := slices.Clone(cur)
			at := arg % (len(next) + 1)
			switch kind % 6 {
			case 0:
				if len(next) < most {
					next = slices.Insert(next, at, member(kind+arg))
				}
			case 1:
				next = slices.Delete(next, min(at, len(next)-1), min(at, len(next)-1)+1)
			case 2:
				next[min(at, len(next)-1)] = member(kind ^ arg)
			case 3:
				next = append(next[at%len(next):], next[:at%len(next)]...)
				if arg&1 == 1 {
					slices.Reverse(next)
				}
			case 4:
				for k := range 1 + arg%32 {
					if len(next) < most {
						next = slices.Insert(next, (arg*k+kind)%(len(next)+1), member(arg+k))
					}
				}
			case 5:
				for k := range 1 + arg%32 {
					if len(next) > 1 {
						next = slices.Delete(next, (arg+k*kind)%len(next), (arg+k*kind)%len(next)+1)
					}
				}
			}
			if len(next) == 0 {
				next = append(next, member(arg))
			}
			ring, _ = rebuildIsBuild(t, ring, cur, next, nodes, "step %d: op %d %d", step, kind, arg)
			cur = next
		}
	})
}
