package subset

// hashString is 64-bit FNV-1a, finished by mix64 so that keys differing in
// their last byte land far apart on the ring.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix64(h)
}

// mix64 is SplitMix64's finaliser: a bijection on uint64 that spreads every
// input bit over every output bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// seedOf is a consumer's rendezvous seed.
func seedOf(id string) uint64 { return mix64(hashString(id) ^ 0x9e3779b97f4a7c15) }

// unit maps a provider's key hash under a consumer's seed to (0, 1).
func unit(hash, seed uint64) float64 {
	return (float64(mix64(hash^seed)>>11) + 0.5) / (1 << 53)
}
