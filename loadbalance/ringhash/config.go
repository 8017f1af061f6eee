package ringhash

import (
	"strconv"
	"strings"

	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
)

// URL parameters read from the first provider's URL, method level
// ("methods.<method>.hash.nodes", or Dubbo Java's "<method>.hash.nodes")
// before service level, as Dubbo does; see skeleton.Params.
const (
	// nodesKey is the number of virtual nodes per provider (default 160).
	nodesKey = "hash.nodes"
	// argumentsKey lists the argument indexes that form the key (default "0").
	argumentsKey = "hash.arguments"
	// attachmentKey names an invocation attachment whose value is the key,
	// instead of the arguments (gRPC's request_hash_header, gRFC A76; asked
	// of Dubbo in apache/dubbo#3468). A call without the attachment, or
	// with an empty one, gets a random key, as in A76: it goes to a
	// provider at random rather than all such calls to one. Java consumers
	// do not read it: set it only where every consumer of the key is Go.
	attachmentKey = "hash.attachment"
)

// defaultArguments is Dubbo's default "hash.arguments": only the first
// invocation argument forms the key.
const defaultArguments = "0"

// config is what one (service, method) runs with, parsed from its URL
// parameters once per snapshot by [parseConfig].
type config struct {
	// nodesRaw and argsRaw are hash.nodes and hash.arguments as
	// configured: a snapshot keeps its predecessor's ring and key spec
	// while they are unchanged.
	nodesRaw, argsRaw string
	// nodes is the number of virtual nodes asked for, within
	// [minNodes, maxNodes].
	nodes int
	// spec is argsRaw, or defaultArguments when blank; indexes are its
	// argument indexes in order, never empty (see [parseArguments]).
	spec    string
	indexes []int
	// attachment is the attachment whose value is the key
	// (hash.attachment), "" for the arguments.
	attachment string
}

// parseConfig reads the parameters that param returns (by key, "" when
// absent), with one problem per value it could not use as it is: a bad
// value is replaced by a safe one rather than failing every call, as
// Dubbo's exception and dubbo-go's panic would.
func parseConfig(param func(key string) string) (config, []string) {
	c := config{nodesRaw: param(nodesKey), argsRaw: param(argumentsKey)}
	c.attachment = strings.TrimSpace(param(attachmentKey))
	var problems []string
	var p string
	if c.nodes, p = parseNodes(c.nodesRaw); p != "" {
		problems = append(problems, p)
	}
	c.spec = c.argsRaw
	if strings.TrimSpace(c.spec) == "" {
		c.spec = defaultArguments
	}
	c.indexes = parseArguments(c.spec)
	if p := argumentsProblem(c.spec, c.indexes); p != "" {
		problems = append(problems, argumentsKey+" "+strconv.Quote(c.argsRaw)+": "+p)
	}
	if len(c.indexes) > maxArguments {
		c.indexes = c.indexes[:maxArguments]
		problems = append(problems, skeleton.Problem(argumentsKey, c.argsRaw,
			"lists more than "+strconv.Itoa(maxArguments)+" argument indexes", formatIndexes(c.indexes)))
	}
	return c, problems
}

// maxArguments is the most argument indexes hash.arguments may list: each
// is hashed on every call, and any provider may set it. Beyond, the first
// maxArguments are kept, with a problem. Dubbo has no cap; keys of more
// than a few arguments are unheard of.
const maxArguments = 8

// cappedProblem says, when members providers × the nodes of c would exceed
// maxPoints, that the ring has fewer nodes per provider than asked (see
// [effectiveNodes]): one problem while it holds, whatever the number of
// providers, so that it is reported once, not at every change.
func cappedProblem(c *config, members int) string {
	n := normalizeNodes(c.nodes)
	if effectiveNodes(members, n) == n {
		return ""
	}
	return nodesKey + " " + strconv.Itoa(n) + ": more than " + strconv.Itoa(maxPoints/n) +
		" providers make a ring of fewer virtual nodes each (at most " + strconv.Itoa(maxPoints) +
		" points), which Java consumers do not match"
}

// parseNodes parses hash.nodes; a problem explains a replaced value.
func parseNodes(raw string) (nodes int, problem string) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return defaultNodes, ""
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && !isRange(err):
		return defaultNodes, skeleton.Problem(nodesKey, raw, "is not an integer", strconv.Itoa(defaultNodes))
	case n <= 0:
		return defaultNodes, skeleton.Problem(nodesKey, raw, "is not positive", strconv.Itoa(defaultNodes))
	case n < minNodes:
		return minNodes, skeleton.Problem(nodesKey, raw, "is below "+strconv.Itoa(minNodes)+" (Dubbo would build an empty ring)", strconv.Itoa(minNodes))
	case n > maxNodes || err != nil:
		return maxNodes, skeleton.Problem(nodesKey, raw, "is above "+strconv.Itoa(maxNodes), strconv.Itoa(maxNodes))
	}
	return int(n), ""
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
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

// argumentsProblem describes what [parseArguments] had to skip in spec or
// what makes every key empty, given the indexes it parsed; "" if nothing.
func argumentsProblem(spec string, indexes []int) string {
	var bad, negative []string
	entries := 0
	for field := range strings.SplitSeq(spec, ",") {
		f := strings.TrimSpace(field)
		if f == "" {
			continue
		}
		entries++
		n, err := strconv.ParseInt(f, 10, 32)
		switch {
		case err != nil:
			bad = append(bad, strconv.Quote(f))
		case n < 0:
			negative = append(negative, f)
		}
	}
	var msg []string
	if entries == 0 {
		msg = append(msg, "lists no argument index")
	}
	if len(bad) > 0 {
		msg = append(msg, "skipped "+strings.Join(bad, ", ")+" (not an argument index)")
	}
	if len(negative) > 0 {
		msg = append(msg, "negative index "+strings.Join(negative, ", ")+" selects no argument")
	}
	if len(msg) == 0 {
		return ""
	}
	if used := formatIndexes(indexes); used == "" {
		msg = append(msg, "every key is empty, so all calls go to one provider")
	} else {
		msg = append(msg, "the key is made of arguments "+used)
	}
	return strings.Join(msg, "; ")
}

// formatIndexes lists the non-negative indexes of idx, "" if none.
func formatIndexes(idx []int) string {
	var b []byte
	for _, i := range idx {
		if i < 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return string(b)
}
