package ringhash

import (
	"errors"
	"strconv"
	"strings"

	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
)

// URL parameters, method level before service level as in Dubbo (see
// skeleton.Params).
const (
	nodesKey     = "hash.nodes"     // virtual nodes per provider, default 160
	argumentsKey = "hash.arguments" // the argument indexes of the key, default "0"
	// attachmentKey names an attachment whose value is the key in place of
	// the arguments (gRFC A76's request_hash_header); a call without it
	// gets a random key. Dubbo Java does not read it.
	attachmentKey = "hash.attachment"
)

// defaultArguments is Dubbo's default hash.arguments.
const defaultArguments = "0"

// maxArguments is the most indexes hash.arguments may list (each is hashed
// on every call); beyond, the first ones are kept, with a problem.
const maxArguments = 8

// config is what one (service, method) runs with (see parseConfig).
type config struct {
	nodesRaw, argsRaw string // as configured: a new snapshot keeps the ring and key while they hold
	nodes             int    // within [minNodes, maxNodes]
	spec              string // argsRaw, or defaultArguments when blank
	indexes           []int  // the argument indexes of spec, never empty
	attachment        string // hash.attachment, "" for the arguments
}

// parseConfig reads the parameters param returns ("" when absent); each
// value it cannot use as it is is replaced by a safe one, with a problem,
// instead of failing every call as Dubbo's exception and dubbo-go's panic
// would.
func parseConfig(param func(key string) string) (config, []string) {
	c := config{nodesRaw: param(nodesKey), argsRaw: param(argumentsKey), spec: defaultArguments}
	c.attachment = strings.TrimSpace(param(attachmentKey))
	var problems []string
	var p string
	if c.nodes, p = parseNodes(c.nodesRaw); p != "" {
		problems = append(problems, p)
	}
	if strings.TrimSpace(c.argsRaw) != "" {
		c.spec = c.argsRaw
	}
	if c.indexes, p = parseArguments(c.spec); p != "" {
		problems = append(problems, argumentsKey+" "+strconv.Quote(c.argsRaw)+": "+p)
	}
	if len(c.indexes) > maxArguments {
		c.indexes = c.indexes[:maxArguments]
		problems = append(problems, skeleton.Problem(argumentsKey, c.argsRaw,
			"lists more than "+strconv.Itoa(maxArguments)+" argument indexes", formatIndexes(c.indexes)))
	}
	return c, problems
}

// cappedProblem says, when members providers × c's nodes would exceed
// maxPoints, that the ring has fewer nodes per provider than asked: one
// problem whatever the number of providers, so that it is reported once.
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
	case err != nil && !errors.Is(err, strconv.ErrRange):
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

// parseArguments parses hash.arguments, argument indexes separated by
// commas, such as "0,2", more forgivingly than Dubbo, which throws: blanks
// are ignored, entries that are not int32 integers are skipped, and a list
// with no valid entry is [0]. Negative indexes are kept, as Dubbo keeps
// them, and select no argument. problem says what was skipped or makes
// every key empty, "" if nothing.
func parseArguments(spec string) (indexes []int, problem string) {
	var msg, bad, negative []string
	entries := 0
	for f := range strings.SplitSeq(spec, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		entries++
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			bad = append(bad, strconv.Quote(f))
			continue
		}
		if n < 0 {
			negative = append(negative, f)
		}
		indexes = append(indexes, int(n))
	}
	if len(indexes) == 0 {
		indexes = []int{0}
	}
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
		return indexes, ""
	}
	if used := formatIndexes(indexes); used == "" {
		msg = append(msg, "every key is empty, so all calls go to one provider")
	} else {
		msg = append(msg, "the key is made of arguments "+used)
	}
	return indexes, strings.Join(msg, "; ")
}

// formatIndexes lists the non-negative indexes of idx, "" if none.
func formatIndexes(idx []int) string {
	var b []byte
	for _, i := range idx {
		if i >= 0 {
			if len(b) > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(i), 10)
		}
	}
	return string(b)
}
