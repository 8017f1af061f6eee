#!/usr/bin/env bash
# Runs every test of the module with the race detector against real Nacos
# servers: starts two Nacos at once, one with authentication off and one
# with it on (both stopped again on exit, pass or fail), and lints while
# they start; then go test -race ./..., then the fuzz targets (below). A
# Nacos that cannot start fails the run.
# It prints when each phase ended ("it/test.sh: ... (at N s)").
#
# Environment (besides it/nacos.sh's, which apply to both servers):
#   NACOS_PORT           HTTP port of the Nacos without authentication (8848)
#   NACOS_RUN_DIR        its run directory (/tmp/dubbogo-lb-nacos)
#   NACOS_AUTH_PORT      HTTP port of the Nacos with authentication (8858);
#                        each server also uses its port -1000, +1000, +1001
#   NACOS_AUTH_RUN_DIR   its run directory ($NACOS_RUN_DIR-auth)
#   NACOS_AUTH_PASSWORD  the password of its user nacos (random by default)
#   FUZZ_INPUTS          inputs per fuzz target (30000x)
#   NACOS_CLUSTER_PORTS  the three-node cluster the TestNacosCluster… tests start
#                        and stop themselves (it/nacos.sh cluster; 8868 8878 8888)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

t_start=$(date +%s)
phase() { echo "it/test.sh: $* (at $(($(date +%s) - t_start)) s)" >&2; }

# A busy machine starts Nacos slowly (seen: 4 minutes at a load average of
# 60 on 2 cores); an idle one in 10 to 40 s.
export NACOS_START_TIMEOUT=${NACOS_START_TIMEOUT:-600}
port=${NACOS_PORT:-8848}
run_dir=${NACOS_RUN_DIR:-/tmp/dubbogo-lb-nacos}
auth_port=${NACOS_AUTH_PORT:-8858}
auth_run_dir=${NACOS_AUTH_RUN_DIR:-$run_dir-auth}
auth_password=${NACOS_AUTH_PASSWORD:-$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')}

plain() { NACOS_AUTH=false NACOS_PORT=$port NACOS_RUN_DIR=$run_dir bash it/nacos.sh "$@"; }
authn() {
  NACOS_AUTH=true NACOS_AUTH_PASSWORD=$auth_password NACOS_PORT=$auth_port \
    NACOS_RUN_DIR=$auth_run_dir bash it/nacos.sh "$@"
}
trap 'plain stop; authn stop' EXIT
trap 'exit 130' INT # a signal runs the EXIT trap too
trap 'exit 143' TERM
# Both at once, and beside the lint: the wait for one hides in the others.
bash it/nacos.sh install # once, before two starts need it
bash it/javaprovider.sh install # the Java provider of TestJava…, before any test waits for it
plain start &
plain_pid=$!
authn start &
auth_pid=$!

# Compile everything with the race detector first, while the two Nacos
# start: on a fresh machine (an empty build cache) go test would otherwise
# compile dubbo-go and every test binary beside the integration tests that
# run first, alone, and that load once made a 5 ms provider answer in 280 ms
# (the latency test's contrast fell to 2.2x). On a warm cache this takes
# seconds.
go build -race ./...
make lint

# The alert rules (files with alert: entries) and their promtool unit tests
# (files that start with rule_files:), with Debian's prometheus package's
# promtool, which .ci/run installs; outside CI a missing promtool only warns.
if command -v promtool >/dev/null; then
  git ls-files '*.yml' '*.yaml' | xargs grep -l '^ *- alert:' | xargs -r promtool check rules
  git ls-files '*.yml' '*.yaml' | xargs grep -l '^rule_files:' | xargs -r promtool test rules
elif [ "${CI:-}" = true ]; then
  echo "it/test.sh: no promtool but CI=true: .ci/run installs Debian's prometheus" >&2; exit 1
else
  echo "it/test.sh: no promtool (apt-get install prometheus): alert rules not checked" >&2
fi

failed=0
wait "$plain_pid" || failed=1
wait "$auth_pid" || failed=1
[ "$failed" = 0 ] || { echo "it/test.sh: a Nacos did not start" >&2; exit 1; }
phase "lint, promtool and both Nacos done"

export DUBBOGO_LB_NACOS=127.0.0.1:$port
export DUBBOGO_LB_NACOS_AUTH=127.0.0.1:$auth_port
export DUBBOGO_LB_NACOS_AUTH_USERNAME=nacos
export DUBBOGO_LB_NACOS_AUTH_PASSWORD=$auth_password

# Every fuzz target of a parser of network or configuration input, for a
# number of inputs rather than a time (a few seconds each on an idle
# machine): with a time limit, a busy machine now and then ends the run with
# "context deadline exceeded" while a worker is still busy, which is a
# failure of the fuzzing driver, not of the target.
#
# The loop runs after go test, at normal priority. It ran beside go test at
# the lowest priority (nice 19, and its session's autogroup at nice 19), in
# the CPU the tests left idle; but on a saturated machine a worker then got
# no CPU for seconds, and Go's fuzzing driver reported it as hung ("fuzzing
# process hung or terminated unexpectedly", FuzzAppendJava, whose input ran
# clean alone). Before that the loop had a session of its own at nice 0,
# where Linux's autogroups gave it as much CPU as all of go test's
# processes together (each worker at a third of a core for the whole run).
fuzz() {
  local target
  for target in warmup:FuzzParseWeight warmup:FuzzParseAge warmup:FuzzParseFactor \
	internal/urlparam:FuzzParseTimeout internal/urlparam:FuzzParseActives internal/urlparam:FuzzParseSubset \
	loadbalance/internal/outlier:FuzzParseConfig loadbalance/internal/zone:FuzzParseZoneRouting internal/subset:FuzzSelect \
	loadbalance/ringhash:FuzzParseArguments loadbalance/ringhash:FuzzParseNodes \
	loadbalance/ringhash:FuzzAppendJava loadbalance/ringhash:FuzzRebuildIsBuild \
	extension/internal/nacosdiscovery:FuzzInstanceList \
	extension/internal/nacosweight:FuzzFactor extension/internal/nacosdiscovery:FuzzAppInstanceURL \
	samples/internal/greeter:FuzzParseWhen samples/internal/greeter:FuzzParseCode \
	rpcstatus/loadreport:FuzzParse loadbalance/loadaware:FuzzParseConfig \
	loadbalance/lbmetrics:FuzzCollectorLabels:10000x \
	loadbalance/internal/zone:FuzzCompute extension/internal/lbname:FuzzBalancerNames \
	extension/internal/nacosconf:FuzzParseRetry extension/internal/nacosconf:FuzzParseTLS; do
	local pkg=${target%%:*} name=${target#*:} inputs=$fuzz_inputs
	if [[ $name == *:* ]]; then [ -n "${FUZZ_INPUTS:-}" ] || inputs=${name#*:}; name=${name%%:*}; fi
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$inputs" "./$pkg" || return 1
  done
}
# 30 000 inputs a target (FUZZ_INPUTS): new coverage still turns up near
# 100 000 in several targets, but what the loop takes is the run's time,
# and the inputs that found coverage stay in the build cache's fuzz corpus,
# from which the next run starts. A target may name its own count
# (package:Target:count): FuzzCollectorLabels gathers a pedantic Prometheus
# registry per input, 1.7 ms each, 50 s for 30 000. FUZZ_INPUTS, when set,
# is every target's count.
fuzz_inputs=${FUZZ_INPUTS:-30000x}

go_rc=0
go test -race -count=1 -timeout 40m ./... || go_rc=$?
phase "go test done (exit $go_rc)"
fuzz_rc=0
fuzz || fuzz_rc=$?
phase "fuzzing done (exit $fuzz_rc)"
[ "$go_rc" = 0 ] && [ "$fuzz_rc" = 0 ]
