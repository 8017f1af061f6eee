// Package warmup turns what a provider URL says about a provider (weight,
// start timestamp, warmup period) into the weight a balancer should use now.
//
// It is the one place that interprets the weight, timestamp and warmup URL
// parameters (read through package urlparam, which reads every provider-URL
// parameter of the module), and the one warmup function every weight-aware
// balancer uses.
//
// # Weight policy
//
// The weight is read with urlparam.MethodParam: methods.<method>.weight (dubbo-go's
// spelling), then <method>.weight (Dubbo Java's), then weight, exactly as
// the consumer receives the provider URL from the registry (with Nacos
// interface-level registration, the provider's URL parameters travel as
// instance metadata; with application-level discovery they come from the
// provider's metadata, and this module's Nacos discovery keeps them where
// dubbo-go would overwrite weight with the rounded Nacos instance weight).
//
//   - absent or empty: DefaultWeight (100).
//   - a number in [0, 10^6]: used as is; fractions are kept (a Nacos
//     weight of 0.4 stays 0.4, it is never rounded to 0 or to 100).
//   - 0: the provider is drained: it gets traffic only when every provider
//     offered to the balancer has weight 0, and then they share evenly.
//     Exception: a dubbo-go provider (release=dubbo-golang-*) exports
//     weight=0 whenever no weight was configured, so from such a provider 0
//     means "not configured" and DefaultWeight is used; drain a dubbo-go
//     provider through the registry instead (disable the instance).
//   - negative, non-numeric, NaN, ±Inf or above 10^6: DefaultWeight,
//     the reason is kept in Meta.Problem and the InvalidWeights counter goes
//     up, so a typo never silently starves or floods a provider.
//
// The weight so read is then multiplied by the weight factor parameter
// (urlparam.WeightFactorKey, ParseFactor; 1 when absent) that this module's
// Nacos discovery sets from the Nacos instance weight (see docs/discovery.md,
// the Nacos console): an instance weight edited in the console scales
// the provider's weight, and an instance weight of 0 makes it 0, drained
// as above, also for a dubbo-go provider. The product is capped at
// maxWeight.
//
// # Warmup
//
// A provider's start time is its timestamp parameter: dubbo-go providers
// write Unix seconds, Dubbo Java providers milliseconds; values above 10^11
// are taken as milliseconds (10^11 seconds is the year 5138). The warmup
// period is the warmup parameter, in the same unit as the timestamp (seconds
// from dubbo-go, milliseconds from Java), 10 minutes when absent. Both are
// read at service level only, as Dubbo Java's AbstractLoadBalance reads them.
//
// During the period the weight follows Dubbo's linear ramp
// clamp(uptime/period × weight, min(1, weight), weight); Options.Aggression
// and Options.MinPercent shape it as Envoy's slow start does. A timestamp in
// the future (clock skew between hosts) is treated as "started when first
// seen": the provider ramps up from that moment, so it neither gets full
// weight at once nor stays at the minimum until the provider's clock is
// reached.
package warmup
