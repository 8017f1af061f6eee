package nacosweight

import (
	"math"
	"strconv"
	"testing"
)

const goRelease = "dubbo-golang-3.3.2"

func TestFactorTable(t *testing.T) {
	for _, c := range []struct {
		name string
		in   Instance
		want float64
	}{
		// Unedited instances: factor 1 whoever registered them.
		{"java interface, unedited", Instance{Weight: 1, Level: Interface, Release: "3.3.6", WeightParam: "300"}, 1},
		{"java application, unedited", Instance{Weight: 1, Level: Application, Release: "3.3.6"}, 1},
		{"go interface weight 100, unedited", Instance{Weight: 100, Level: Interface, Release: goRelease, WeightParam: "100"}, 1},
		{"go interface weight 3, unedited", Instance{Weight: 3, Level: Interface, Release: goRelease, WeightParam: "3"}, 1},
		{"go interface fractional weight, unedited", Instance{Weight: 2.5, Level: Interface, Release: goRelease, WeightParam: "2.5"}, 1},
		{"go interface no weight (1.0 written)", Instance{Weight: 1, Level: Interface, Release: goRelease}, 1},
		{"go interface weight 0 (1.0 written)", Instance{Weight: 1, Level: Interface, Release: goRelease, WeightParam: "0"}, 1},
		{"go interface weight not a number", Instance{Weight: 1, Level: Interface, Release: goRelease, WeightParam: "x"}, 1},
		{"go interface weight above Nacos's max", Instance{Weight: 10000, Level: Interface, Release: goRelease, WeightParam: "50000"}, 1},
		{"go application, unedited", Instance{Weight: 1, Level: Application, Release: goRelease, WeightParam: "300"}, 1},
		// Console edits.
		{"java doubled", Instance{Weight: 2, Level: Interface, Release: "3.3.6"}, 2},
		{"go interface doubled", Instance{Weight: 200, Level: Interface, Release: goRelease, WeightParam: "100"}, 2},
		{"go interface fractional", Instance{Weight: 50.5, Level: Interface, Release: goRelease, WeightParam: "100"}, 0.505},
		{"go application fractional", Instance{Weight: 0.25, Level: Application, Release: goRelease}, 0.25},
		{"java snapshot release", Instance{Weight: 3, Level: Application, Release: "3.3.7-SNAPSHOT"}, 3},
		// Drain.
		{"go drained", Instance{Weight: 0, Level: Interface, Release: goRelease, WeightParam: "100"}, 0},
		{"java drained", Instance{Weight: 0, Level: Application, Release: "3.3.6"}, 0},
		{"unknown drained", Instance{Weight: 0, Level: Interface}, 0},
		// Unknown registrant: the instance weight is not read.
		{"unknown", Instance{Weight: 7, Level: Interface, Release: "", WeightParam: "100"}, 1},
		{"unknown release", Instance{Weight: 7, Level: Application, Release: "grpc-1.0"}, 1},
		// Weights no Nacos writes: the provider keeps its own weight.
		{"negative", Instance{Weight: -1, Level: Interface, Release: "3.3.6"}, 1},
		{"NaN", Instance{Weight: math.NaN(), Level: Interface, Release: "3.3.6"}, 1},
		{"Inf", Instance{Weight: math.Inf(1), Level: Interface, Release: "3.3.6"}, 1},
	} {
		if got := Factor(c.in); got != c.want {
			t.Errorf("%s: Factor(%+v) = %v, want %v", c.name, c.in, got, c.want)
		}
	}
}

func TestRegistrantOf(t *testing.T) {
	for release, want := range map[string]Registrant{
		"dubbo-golang-3.3.2": DubboGo, " dubbo-golang-3.0.0": DubboGo, "3.3.6": Java, "2.7.23": Java,
		"": Unknown, "dubbo-golang": Unknown, "v3.3.6": Unknown, "java": Unknown,
	} {
		if got := RegistrantOf(release); got != want {
			t.Errorf("RegistrantOf(%q) = %v, want %v", release, got, want)
		}
	}
}

func TestFormatReadsBack(t *testing.T) {
	for _, f := range []float64{0, 1, 0.505, 1.0 / 3, 2, 10000, 1e-9} {
		got, err := strconv.ParseFloat(Format(f), 64)
		if err != nil || got != f {
			t.Errorf("Format(%v) = %q, reads back as %v, %v", f, Format(f), got, err)
		}
	}
}

// FuzzFactor checks the rule on any input: a finite factor ≥ 0, 0 exactly
// for an instance weight of 0, 1 for an unknown registrant otherwise, and
// never a panic.
func FuzzFactor(f *testing.F) {
	f.Add(100.0, false, goRelease, "100")
	f.Add(50.5, false, goRelease, "100")
	f.Add(0.0, true, "3.3.6", "")
	f.Add(2.0, true, "", "x")
	f.Add(1e308, false, goRelease, "1e-300")
	f.Add(1.0, false, goRelease, "NaN")
	f.Fuzz(func(t *testing.T, w float64, app bool, release, weightParam string) {
		in := Instance{Weight: w, Release: release, WeightParam: weightParam}
		if app {
			in.Level = Application
		}
		got := Factor(in)
		if math.IsNaN(got) || math.IsInf(got, 0) || got < 0 {
			t.Fatalf("Factor(%+v) = %v", in, got)
		}
		if (w == 0) != (got == 0) {
			t.Fatalf("Factor(%+v) = %v: 0 exactly when the instance weight is 0", in, got)
		}
		if RegistrantOf(release) == Unknown && w != 0 && got != 1 {
			t.Fatalf("Factor(%+v) = %v for an unknown registrant, want 1", in, got)
		}
		if r, ok := Base(in); ok && !(r > 0 && r <= maxNacosWeight) {
			t.Fatalf("Base(%+v) = %v, outside (0, %v]", in, r, maxNacosWeight)
		}
	})
}
