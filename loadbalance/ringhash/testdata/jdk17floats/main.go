// Command jdk17floats compares the Double.toString / Float.toString lines
// that FloatStrings.java prints ("d|f <hex bits> <string>", one a line, on
// stdin) with ringhash.AppendJava, and prints how many differ, with DECADES=1
// also per decade of the value. See ../README.md.
package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dubbogo-lb/lb/loadbalance/ringhash"
)

func main() {
	sc := bufio.NewScanner(os.Stdin)
	n, diff := 0, 0
	var ex []string
	bn, bd := map[int]int{}, map[int]int{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		b, _ := strconv.ParseUint(f[1], 16, 64)
		var ours string
		var v float64
		if f[0] == "d" {
			v = math.Float64frombits(b)
			ours = string(ringhash.AppendJava(nil, v))
		} else {
			v = float64(math.Float32frombits(uint32(b)))
			ours = string(ringhash.AppendJava(nil, math.Float32frombits(uint32(b))))
		}
		n++
		dec := int(math.Floor(math.Log10(v)))
		bn[dec]++
		if ours != f[2] {
			bd[dec]++
			diff++
			if len(ex) < 3 {
				ex = append(ex, f[2]+" vs ours "+ours)
			}
		}
	}
	if os.Getenv("DECADES") != "" {
		for d := -330; d < 320; d++ {
			if bn[d] > 0 {
				fmt.Printf("1e%d: %.1f%%  ", d, 100*float64(bd[d])/float64(bn[d]))
			}
		}
		fmt.Println()
	}
	fmt.Printf("%d of %d differ (%.2f %%) e.g. %v\n", diff, n, 100*float64(diff)/float64(n), ex)
}
