package urlparam

import (
	"strconv"
	"strings"

	"dubbo.apache.org/dubbo-go/v3/common"
)

// The consumer's subsetting parameters: reference params, read from the
// consumer's own URL at service level (consumer-only: Whose).
const (
	// SubsetSizeKey is the number of serving providers of the service the
	// consumer holds (refers to and connects to); unset or 0: every
	// provider (subsetting off, the default).
	SubsetSizeKey = "lb.subset.size"
	// SubsetModeKey chooses how the subset is drawn: "auto" (the
	// default) places the consumer on a ring among the consumers that
	// the registry lists (deterministic aperture) when it finds itself
	// among them, else ranks the providers by a hash seeded with the
	// consumer's own ID (rendezvous hashing); "rendezvous" always ranks.
	SubsetModeKey = "lb.subset.mode"
)

// Subset modes (SubsetModeKey).
const (
	SubsetAuto       = "auto"
	SubsetRendezvous = "rendezvous"
)

// MaxSubsetSize bounds SubsetSizeKey.
const MaxSubsetSize = 1 << 20

// Subset is a consumer's subsetting configuration.
type Subset struct {
	// Size is the number of serving providers held; 0: subsetting off.
	Size int
	// Mode is SubsetAuto or SubsetRendezvous.
	Mode string
}

// ReadSubset reads the subsetting configuration of the consumer whose
// reference URL is ref (or of the consumer a provider URL carries: see
// Consumer). A malformed value is replaced by its default (off, auto) and
// problems says so, one entry per value. It never panics.
func ReadSubset(ref *common.URL) (Subset, []string) {
	return ParseSubset(func(key string) string { return ServiceParam(ref, key) })
}

// ParseSubset reads the configuration from param (the value of a key, ""
// when unset).
func ParseSubset(param func(key string) string) (s Subset, problems []string) {
	s.Mode = SubsetAuto
	if raw := strings.TrimSpace(param(SubsetSizeKey)); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 || n > MaxSubsetSize {
			problems = append(problems, SubsetSizeKey+" "+strconv.Quote(raw)+" is not a whole number from 0 to "+strconv.Itoa(MaxSubsetSize)+"; subsetting off")
		} else {
			s.Size = n
		}
	}
	switch raw := strings.TrimSpace(param(SubsetModeKey)); strings.ToLower(raw) {
	case "", SubsetAuto:
	case SubsetRendezvous:
		s.Mode = SubsetRendezvous
	default:
		problems = append(problems, SubsetModeKey+" "+strconv.Quote(raw)+" is neither auto nor rendezvous; using auto")
	}
	return s, problems
}
