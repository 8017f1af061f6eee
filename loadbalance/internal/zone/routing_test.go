package zone

import (
	"testing"
	"time"

	"github.com/dubbogo-lb/lb/internal/urlparam"
)

func TestParseZoneRouting(t *testing.T) {
	params := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	z, problems := ParseRouting(params(), "")
	if z.Local != "" || len(problems) != 0 {
		t.Errorf("unset: %+v %v, want off, no problem", z, problems)
	}
	z, _ = ParseRouting(params(), " az-env ")
	if z.Local != "az-env" {
		t.Errorf("from the environment: %q", z.Local)
	}
	z, problems = ParseRouting(params(LocalKey, "az-1", CallersKey, "az-1:60, az-2:40,bad,:3,az-3:-1,az-4:NaN",
		MinClusterSizeKey, "0", OverprovisioningKey, "2"), "az-env")
	if z.Local != "az-1" || z.Callers["az-1"] != 60 || z.Callers["az-2"] != 40 || len(z.Callers) != 2 ||
		z.MinClusterSize != -1 || z.Overprovisioning != 2 || len(problems) != 4 {
		t.Errorf("configured: %+v, problems %q", z, problems)
	}
	z, problems = ParseRouting(params(LocalKey, "a", CallersKey, "a:0", MinClusterSizeKey, "-2", OverprovisioningKey, "0.5"), "")
	if z.Callers != nil || z.MinClusterSize != 0 || z.Overprovisioning != 0 || len(problems) != 3 {
		t.Errorf("bad values: %+v, problems %q; want defaults and three problems", z, problems)
	}
	for raw, want := range map[string]time.Duration{"": 0, "0": -1, "90s": 90 * time.Second, "600000": 10 * time.Minute} {
		if z, problems = ParseRouting(params(MemoryKey, raw), ""); z.Memory != want || len(problems) != 0 {
			t.Errorf("%s %q: %v, problems %q; want %v", MemoryKey, raw, z.Memory, problems, want)
		}
	}
	if z, problems = ParseRouting(params(MemoryKey, "-5m"), ""); z.Memory != 0 || len(problems) != 1 {
		t.Errorf("%s -5m: %v, problems %q; want the default and a problem", MemoryKey, z.Memory, problems)
	}
}

func FuzzParseZoneRouting(f *testing.F) {
	f.Add("az-1", "az-1:60,az-2:40", "6", "1.4", "10m")
	f.Fuzz(func(t *testing.T, local, callers, size, over, memory string) {
		m := map[string]string{LocalKey: local, CallersKey: callers, MinClusterSizeKey: size, OverprovisioningKey: over, MemoryKey: memory}
		z, _ := ParseRouting(func(k string) string { return m[k] }, "")
		for name, share := range z.Callers {
			if !(share >= 0) || name == "" {
				t.Fatalf("callers %v", z.Callers)
			}
		}
		if z.Overprovisioning != 0 && !(z.Overprovisioning >= 1) {
			t.Fatalf("overprovisioning %v", z.Overprovisioning)
		}
		if z.Memory < -1 || z.Memory > 365*24*time.Hour {
			t.Fatalf("memory %v", z.Memory)
		}
	})
}

// Subsetting reads the consumer's zone with urlparam's spellings of the
// key and the variable: they must stay this package's.
func TestLocalZoneSpellingsAreUrlparams(t *testing.T) {
	if LocalKey != urlparam.LocalZoneKey || Env != urlparam.LocalZoneEnv {
		t.Errorf("zone reads %q and $%s, urlparam names %q and $%s", LocalKey, Env, urlparam.LocalZoneKey, urlparam.LocalZoneEnv)
	}
}
