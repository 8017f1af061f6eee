#!/usr/bin/env bash
# Runs every test of the module with the race detector against a real Nacos
# server: lint first, then start Nacos (stopped again on exit, pass or fail),
# then go test -race ./... . A Nacos that cannot start fails the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

make lint

# A busy machine starts Nacos slowly (seen: 4 minutes at a load average of
# 60 on 2 cores); an idle one in 10 to 40 s.
export NACOS_START_TIMEOUT=${NACOS_START_TIMEOUT:-600}
bash it/nacos.sh start
trap 'bash it/nacos.sh stop' EXIT
export DUBBOGO_LB_NACOS=127.0.0.1:${NACOS_PORT:-8848}

go test -race -count=1 -timeout 40m ./...

# Every fuzz target of a parser of network or configuration input, for a
# number of inputs rather than a time (a few seconds each on an idle
# machine): with a time limit, a busy machine now and then ends the run with
# "context deadline exceeded" while a worker is still busy, which is a
# failure of the fuzzing driver, not of the target.
for target in warmup:FuzzParseWeight warmup:FuzzParseAge \
	warmup/urlparam:FuzzParseTimeout warmup/urlparam:FuzzParseActives warmup/urlparam:FuzzParseOutlier \
	loadbalance/chash:FuzzParseArguments loadbalance/chash:FuzzParseNodes \
	loadbalance/chash:FuzzAppendJava \
	samples/internal/greeter:FuzzParseWhen samples/internal/greeter:FuzzParseCode; do
	go test -run '^$' -fuzz "^${target#*:}\$" -fuzztime 100000x "./${target%%:*}"
done
