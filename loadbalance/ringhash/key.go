package ringhash

import (
	"crypto/md5"
	"encoding/binary"
	"strconv"
	"strings"
	"unsafe"
)

// DefaultArguments is Dubbo's default "hash.arguments": only the first
// invocation argument forms the key.
const DefaultArguments = "0"

// hashKey returns the ring point of a key: the first four bytes of md5(key)
// read as a little-endian uint32, as Dubbo's ConsistentHashSelector does with
// hash(md5(key), 0). It does not allocate.
func hashKey(key []byte) uint32 {
	d := md5.Sum(key)
	return binary.LittleEndian.Uint32(d[0:4])
}

// hashString is [hashKey] for a key held in a string. It does not allocate.
func hashString(key string) uint32 {
	// md5.Sum only reads its argument and keeps no reference to it, so the
	// string's bytes can be viewed in place instead of copied.
	d := md5.Sum(unsafe.Slice(unsafe.StringData(key), len(key)))
	return binary.LittleEndian.Uint32(d[0:4])
}

// appendKey appends the concatenation of parts to dst and returns the
// extended buffer, the way Dubbo's toKey appends String.valueOf of each
// selected argument to a StringBuilder with no separator. Each part must
// already be the Java string form of its argument ("null" for a null
// argument). With a dst of sufficient capacity it does not allocate.
func appendKey(dst []byte, parts []string) []byte {
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return dst
}

// parseArguments parses a "hash.arguments" value, a comma-separated list of
// argument indexes such as "0" or "0,2", into the list of indexes in order.
//
// It is more forgiving than Dubbo, which throws on anything but integers
// separated by commas: blanks around entries are ignored, entries that are
// not integers (or do not fit an int32, as with Java's Integer.parseInt) are
// skipped, and a value with no valid entry at all yields the default [0].
// Negative indexes are kept, as Dubbo keeps them; like out-of-range indexes
// they select no argument, so callers must bounds-check every index against
// the actual argument count. It never panics.
func parseArguments(spec string) []int {
	var out []int
	for field := range strings.SplitSeq(spec, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		n, err := strconv.ParseInt(field, 10, 32)
		if err != nil {
			continue
		}
		out = append(out, int(n))
	}
	if len(out) == 0 {
		return []int{0}
	}
	return out
}
