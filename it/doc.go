// Package it holds the end-to-end tests of the module: the sample provider
// and consumer binaries (samples/provider, samples/consumer), built once per
// run (with -race when the tests are), against the real Nacos server that
// it/nacos.sh starts.
//
// Run them with bash it/test.sh (or make test), which starts Nacos and sets
// DUBBOGO_LB_NACOS=127.0.0.1:8848. Without DUBBOGO_LB_NACOS the tests skip,
// unless CI=true: in CI a missing or unreachable Nacos fails them. The
// TestNacosAuth… tests need a second Nacos, with authentication on, in
// DUBBOGO_LB_NACOS_AUTH, and its admin's credentials in
// DUBBOGO_LB_NACOS_AUTH_USERNAME (default nacos) and
// DUBBOGO_LB_NACOS_AUTH_PASSWORD; it/test.sh starts that one too (on
// 127.0.0.1:8858) and sets them. Each of those tests works in a Nacos
// namespace of its own, which it creates.
//
// TestNacosCluster (cluster_test.go) starts a three-node Nacos cluster of
// its own (it/nacos.sh cluster), whose subtests kill and restart nodes
// under load, and stops it when they are done.
//
// The TestJava… tests run Dubbo Java providers (it/javaprovider, built
// and run by it/javaprovider.sh; providerSpec.java) beside dubbo-go ones.
// Without a JDK and Maven (or a cached build) they skip, unless CI=true.
//
// Every provider and consumer is a separate process: dubbo-go's
// configuration and its table of exported services are process-global, and
// killing a provider or restarting Nacos must hit real connections. Each
// test registers its providers in a Nacos group of its own (the binaries'
// -group flag), so tests never see each other's providers, nor the instance
// metadata that an earlier test edited (Nacos keeps metadata edited through
// its API for a while after the instance is gone, and applies it to the
// next instance at the same address).
//
// Every process a test starts is watched (watch in harness_test.go): the
// test fails if the process panics, reports a data race in this module's
// code, or exits with a status other than the expected one, even when
// failover hid the failure from the callers.
//
// Every wait is bounded and polls for its condition; shares are measured
// from the consumers' own per-second reports.
//
// Tests whose assertions are shares of calls by weight, stickiness, states
// or counts run in parallel, one more at once than -parallel (GOMAXPROCS
// by default; the harness counts them, schedule_test.go): another test's load
// slows their calls down but does not change how the calls split. The
// others run alone, and first (go test runs every test that does not call
// t.Parallel before the parallel ones start): those that compare latencies
// (TestLatencyAware…, TestJavaSlowProvider…,
// TestJavaProviderNamesTheBalancerLatencyAware, whose two subtests run at
// once), that burn CPU or read the machine's load
// (TestProviderLoadMoves…, TestProviderLoadJavaProviderIsRead…), and the
// one that restarts Nacos under everybody's feet.
//
// TestNacosCluster runs beside the parallel tests without taking one of
// their places: its time is mostly waiting for its nodes to start. The
// parallel tests that start a JVM (a Dubbo Java provider or consumer) wait
// until its last node start, and then take the next free place before
// the tests that start none (schedule_test.go): beside a cluster's JVM
// starts, a Java provider was seen to register 20 s into its warmup, and
// beside parallel tests
// TestLatencyAware…'s measured contrast came down to 2.6 (its bound needs
// 2.5). Parallel tests share one thing, the greeter's
// interface-to-application mapping in Nacos, and startProvider lets one
// provider at a time write it.
package it
