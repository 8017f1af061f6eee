// Package nacosweight is the one rule that combines a Nacos instance weight,
// the weight an operator edits in the Nacos console, with the provider's own
// weight parameter, for providers found at interface level and at
// application level alike.
//
//	effective weight = the provider's weight parameter × Factor
//	Factor           = Nacos instance weight / R
//
// R is the instance weight the provider's registrant writes when nobody
// edited it, so that an unedited instance has factor 1 whatever its
// registrant, and "double this instance's weight" in the console doubles
// its share:
//
//   - Dubbo Java (release is a plain version, e.g. 3.3.6): 1.0, at either
//     level, whatever its weight parameter.
//   - dubbo-go (release dubbo-golang-*) at interface level: its weight
//     parameter, as dubbo-go v3.3.2's Nacos registry turns it into the
//     instance weight (not a number, or ≤ 0: 1.0; above 10000: 10000).
//   - dubbo-go at application level: 1.0 (dubbo-go v3.3.2 writes its
//     registry's weight, 0 unless configured, and 0 becomes 1.0; this
//     module's registration writes the same).
//   - any other registrant: the factor is 1, the instance weight is not
//     read, except 0.
//
// An instance weight of 0 is a drain, whoever registered it: factor 0. A
// disabled or unhealthy instance is not a weight matter: discovery drops
// it. An instance weight that is not a number, negative or infinite (no
// Nacos writes one) gives factor 1: the provider keeps its own weight.
//
// The package knows nothing of dubbo-go or Nacos clients: plain values in,
// a number out.
package nacosweight

import (
	"math"
	"strconv"
	"strings"
)

// Level is how the provider was found in Nacos.
type Level int

const (
	// Interface is interface-level registration (a Nacos service per
	// interface, providers:<interface>:<version>:<group>).
	Interface Level = iota
	// Application is application-level service discovery (a Nacos service
	// per application).
	Application
)

// Instance is what the rule reads of one provider instance.
type Instance struct {
	// Weight is the Nacos instance weight.
	Weight float64
	// Level is how the instance was found.
	Level Level
	// Release is the provider's release parameter: dubbo-golang-<version>
	// from dubbo-go, a plain version from Dubbo Java.
	Release string
	// WeightParam is the provider's service-level weight parameter as
	// registered (dubbo-go at interface level derives R from it).
	WeightParam string
}

// Registrant is who wrote an instance, as its release parameter tells.
type Registrant int

const (
	// Unknown is any registrant the rule does not know.
	Unknown Registrant = iota
	// DubboGo is dubbo-go (release dubbo-golang-*).
	DubboGo
	// Java is Dubbo Java (release a plain version: digits and dots, with
	// an optional suffix such as -SNAPSHOT).
	Java
)

// dubboGoRelease prefixes the release parameter of dubbo-go providers.
const dubboGoRelease = "dubbo-golang-"

// RegistrantOf tells who registered an instance from its release
// parameter.
func RegistrantOf(release string) Registrant {
	release = strings.TrimSpace(release)
	switch {
	case strings.HasPrefix(release, dubboGoRelease):
		return DubboGo
	case release != "" && release[0] >= '0' && release[0] <= '9':
		return Java
	}
	return Unknown
}

// Nacos v3.3.2 dubbo-go limits, for R of dubbo-go at interface level.
const (
	defaultNacosWeight = 1.0
	maxNacosWeight     = 10000.0
)

// Base returns R, the instance weight the registrant of in writes when
// nobody edited it, and false when the rule does not know it.
func Base(in Instance) (float64, bool) {
	switch RegistrantOf(in.Release) {
	case Java:
		return 1, true
	case DubboGo:
		if in.Level == Application {
			return 1, true
		}
		return dubboGoInterfaceWeight(in.WeightParam), true
	}
	return 0, false
}

// dubboGoInterfaceWeight is the instance weight dubbo-go v3.3.2's Nacos
// registry writes for a provider whose weight parameter is raw
// (registry/nacos createRegisterParam).
func dubboGoInterfaceWeight(raw string) float64 {
	w, err := strconv.ParseFloat(raw, 64)
	switch {
	case raw == "":
		return defaultNacosWeight // dubbo-go reads "1.0" for a missing weight
	case err != nil || math.IsNaN(w) || w <= 0:
		return defaultNacosWeight
	case w > maxNacosWeight:
		return maxNacosWeight
	}
	return w
}

// Factor returns the factor that multiplies the provider's own weight
// parameter: 0 for a drained instance (instance weight 0), 1 when nothing
// is known or the instance weight is not a valid one, else the instance
// weight over R. It is finite and never negative.
func Factor(in Instance) float64 {
	w := in.Weight
	switch {
	case w == 0:
		return 0
	case math.IsNaN(w) || math.IsInf(w, 0) || w < 0:
		return 1
	}
	r, ok := Base(in)
	if !ok || !(r > 0) {
		return 1
	}
	f := w / r
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return 1
	case f == 0: // underflow: a weight, however small, is no drain
		return math.SmallestNonzeroFloat64
	}
	return f
}

// Format writes a factor as the URL parameter carries it: the shortest
// decimal that reads back as the same float64.
func Format(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
