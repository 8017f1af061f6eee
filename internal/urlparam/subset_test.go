package urlparam

import (
	"strconv"
	"strings"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSubset(t *testing.T) {
	for _, c := range []struct {
		size, mode string
		want       Subset
		problems   int
	}{
		{"", "", Subset{0, SubsetAuto}, 0},
		{"3", "", Subset{3, SubsetAuto}, 0},
		{" 12 ", "Rendezvous", Subset{12, SubsetRendezvous}, 0},
		{"0", "auto", Subset{0, SubsetAuto}, 0},
		{"-1", "", Subset{0, SubsetAuto}, 1},
		{"two", "", Subset{0, SubsetAuto}, 1},
		{strconv.Itoa(MaxSubsetSize + 1), "", Subset{0, SubsetAuto}, 1},
		{"4", "aperture-please", Subset{4, SubsetAuto}, 1},
	} {
		values := map[string]string{SubsetSizeKey: c.size, SubsetModeKey: c.mode}
		got, problems := ParseSubset(func(k string) string { return values[k] })
		assert.Equal(t, c.want, got, "size %q mode %q", c.size, c.mode)
		assert.Len(t, problems, c.problems, "size %q mode %q: %v", c.size, c.mode, problems)
	}
}

// A provider cannot turn subsetting on, off or change its mode: the keys
// are read from the consumer's URL alone.
func TestSubsetKeysComeFromTheConsumerAlone(t *testing.T) {
	u, _ := merged(t, map[string]string{SubsetSizeKey: "1", SubsetModeKey: "bogus"}, map[string]string{SubsetSizeKey: "5"})
	s, problems := ReadSubset(u)
	assert.Empty(t, problems)
	assert.Equal(t, Subset{5, SubsetAuto}, s)

	u, _ = merged(t, map[string]string{SubsetSizeKey: "1"}, nil)
	s, _ = ReadSubset(u)
	assert.Zero(t, s.Size, "the provider's size")

	p, err := common.NewURL("tri://10.0.0.1:20000/org.Greeter?lb.subset.size=2")
	require.NoError(t, err)
	s, _ = ReadSubset(p)
	assert.Zero(t, s.Size, "a URL without its consumer")
}

// FuzzParseSubset: whatever the values, a size in [0, MaxSubsetSize], a
// known mode, a problem for every value replaced, never a panic.
func FuzzParseSubset(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"3", "auto"}, {"-1", "x"}, {"99999999999999999999", "RENDEZVOUS"}, {" 7 ", " "}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, size, mode string) {
		values := map[string]string{SubsetSizeKey: size, SubsetModeKey: mode}
		s, problems := ParseSubset(func(k string) string { return values[k] })
		if s.Size < 0 || s.Size > MaxSubsetSize || s.Mode != SubsetAuto && s.Mode != SubsetRendezvous {
			t.Fatalf("ParseSubset(%q, %q) = %+v", size, mode, s)
		}
		n, err := strconv.Atoi(strings.TrimSpace(size))
		if strings.TrimSpace(size) != "" && (err != nil || n < 0 || n > MaxSubsetSize) && len(problems) == 0 {
			t.Fatalf("ParseSubset(%q, %q): size replaced without a problem", size, mode)
		}
	})
}
