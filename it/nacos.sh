#!/usr/bin/env bash
# A real, local Nacos server for the integration tests, the demo and CI: standalone, or a
# cluster of three nodes (`cluster`, below).
#
#   it/nacos.sh install   resolve + compile the launcher (first use only; cached after)
#   it/nacos.sh start     install if needed, start with a fresh data dir, wait until ready
#   it/nacos.sh stop      SIGTERM, then SIGKILL after NACOS_STOP_TIMEOUT s; ok if not running
#   it/nacos.sh status    exit 0 if running and healthy
#   it/nacos.sh logs      last lines of the server logs
#
# Cluster mode, three nodes on loopback (see "Cluster" below):
#   it/nacos.sh cluster start [N]   start every node (fresh data), or node N (1-3, keeping its
#                                   data, as after a crash); wait until every running node
#                                   sees the others UP
#   it/nacos.sh cluster stop [N]    stop every node, or node N (SIGTERM, then SIGKILL)
#   it/nacos.sh cluster kill N      SIGKILL node N (a crash)
#   it/nacos.sh cluster status [N]  exit 0 if every node (or node N) runs, is healthy, and
#                                   sees the members UP; prints one line per node
#   it/nacos.sh cluster addresses   the clients' address list: 127.0.0.1:8868,127.0.0.1:8878,...
#   it/nacos.sh cluster logs N      last lines of node N's logs
#
# What runs: Alibaba Nacos 3.1.0 (the Maven Central republication of the Nacos reactor
# under io.github.pig-mesh.nacos, version 3.1.0-bugfix), "server" deployment type
# (naming + config, no console UI), standalone (or a cluster, below), embedded Derby storage, auth off
# unless NACOS_AUTH=true. It speaks the 2.x gRPC client protocol (nacos-sdk-go v2)
# and the v1 HTTP Open API. See it/nacos/pom.xml.
#
# Every listener is on 127.0.0.1:
#   NACOS_PORT (8848)       HTTP, context path /nacos
#   NACOS_PORT+1000 (9848)  SDK gRPC (clients derive it from the HTTP port)
#   NACOS_PORT+1001 (9849)  cluster gRPC
#   NACOS_PORT-1000 (7848)  JRaft (Nacos starts it even standalone)
#   one ephemeral UDP port  naming's push socket for old v1 UDP clients
#
# Environment:
#   NACOS_PORT           HTTP port (default 8848)
#   NACOS_CACHE          build cache (default $HOME/.cache/dubbogo-lb/nacos); jars stay in ~/.m2
#   NACOS_RUN_DIR        pid file, logs and data (default /tmp/dubbogo-lb-nacos); wiped on start
#   NACOS_START_TIMEOUT  seconds to wait for readiness (default 180; 600 for `cluster`)
#   NACOS_STOP_TIMEOUT   seconds between SIGTERM and SIGKILL (default 20)
#   NACOS_JAVA_OPTS      extra JVM options
#   NACOS_NICE           the niceness of the JVM when run as root (-5)
#   NACOS_CDS_PORT       HTTP port of the server `install` starts once to make the class
#                        data sharing archive every start uses (default 8838; see below)
#   JAVA_HOME            JDK 17+ to use (else `java` on PATH)
#   NACOS_AUTH           true: authentication on (default false, off)
#   NACOS_AUTH_PASSWORD  with NACOS_AUTH=true: the password of the user `nacos`, the
#                        admin (default dubbogo-lb-secret; 1 to 72 characters)
#   NACOS_HEAP           JVM heap (default 512m; 256m for a cluster node)
#   NACOS_CLUSTER_PORTS  cluster mode: the nodes' HTTP ports (default "8868 8878 8888"; each
#                        node uses P, P+1000, P+1001 and P-1000 as above, so the defaults
#                        stay clear of the standalone servers of it/test.sh on 8848 and 8858)
#   NACOS_CLUSTER_RUN_DIR  cluster mode: run directory (default /tmp/dubbogo-lb-nacos-cluster),
#                        node N in its nodeN/
#
# Cluster: every node is the standalone server above with -Dnacos.standalone=false, the
# member list (cluster.conf and -Dnacos.member.list), embedded storage (JRaft-replicated
# Derby, -DembeddedStorage=true: no external MySQL), and the same server identity
# key/value on every node (Nacos 3 checks it on the calls between nodes even with auth
# off; without it the nodes mark each other DOWN). Clients take every address
# (`cluster addresses`); each gRPC client connects to one node and moves to another when
# that one goes. A node that exits during start-up, or logs "Nacos failed to start", is
# started again until NACOS_START_TIMEOUT (node_start_retried; each try's messages in
# $NACOS_CLUSTER_RUN_DIR/nodeN-start.log, and their end printed when the node does not come
# up in time). Auth is not supported in cluster mode.
# Notes and figures: docs/nacos-cluster.md.
#
# With NACOS_AUTH=true the server runs with nacos.core.auth.enabled=true and
# nacos.core.auth.admin.enabled=true, auth system `nacos`, a fresh random token secret
# key and server identity value per start, and user caching off (a user works the
# moment it exists). Nacos 3 has no user at first: once the server is up, the script
# creates the admin user `nacos` with NACOS_AUTH_PASSWORD (POST /v3/auth/user/admin),
# logs in (POST /v3/auth/user/login) and does its naming round trip with the token.
# Clients then need username `nacos` and that password; anything without a valid
# token gets 403. The readiness probe (/v3/admin/core/state/readiness) needs none.
set -euo pipefail

# shellcheck source=it/mavenbuild.sh
source "$(dirname "${BASH_SOURCE[0]}")/mavenbuild.sh" # log, die and the Maven build
maven_project nacos "${NACOS_CACHE:-}"
RUN_DIR="${NACOS_RUN_DIR:-/tmp/dubbogo-lb-nacos}"
PID_FILE="$RUN_DIR/nacos.pid"
OUT_FILE="$RUN_DIR/start.out"
NACOS_HOME_DIR="$RUN_DIR/home"
MARKER=".dubbogo-lb-nacos"

HOST=127.0.0.1 # never anything but loopback
HTTP_PORT="${NACOS_PORT:-8848}"
GRPC_PORT=$((HTTP_PORT + 1000))
CLUSTER_GRPC_PORT=$((HTTP_PORT + 1001))
RAFT_PORT=$((HTTP_PORT - 1000))
START_TIMEOUT="${NACOS_START_TIMEOUT:-180}"
if [ -z "${NACOS_START_TIMEOUT:-}" ] && [ "${1:-}" = cluster ]; then
  # Three JVMs starting at once on two cores, with retries: 10 minutes, as
  # it/test.sh gives the standalone servers (seen: 4 minutes for one server at
  # a load average of 60).
  START_TIMEOUT=600
fi
STOP_TIMEOUT="${NACOS_STOP_TIMEOUT:-20}"
NICE="${NACOS_NICE:--5}"
case "$NICE" in
  -[0-9] | -1[0-9] | -20 | [0-9] | 1[0-9]) ;;
  *) echo "nacos.sh: NACOS_NICE=$NICE is not a niceness from -20 to 19" >&2; exit 2 ;;
esac
BASE_URL="http://$HOST:$HTTP_PORT/nacos"
HEALTH_PATH="/v3/admin/core/state/readiness"
AUTH_USER=nacos # the admin user Nacos 3 creates on first use; the only one here
AUTH_PASSWORD="${NACOS_AUTH_PASSWORD:-dubbogo-lb-secret}"
MAIN_CLASS="io.github.dubbogolb.nacosserver.NacosTestServer"
# Internal, set by the cluster commands for each node they start: the member list
# (host:port,...), and 1 to keep the node's data on a restart.
MEMBERS="${NACOS_MEMBERS:-}"
STANDALONE=true
HEAP="${NACOS_HEAP:-512m}"
if [ -n "$MEMBERS" ]; then
  STANDALONE=false
  HEAP="${NACOS_HEAP:-256m}"
fi

case "${NACOS_AUTH:-false}" in
  true | 1) AUTH=1 ;;
  false | 0 | "") AUTH=0 ;;
  *) die "NACOS_AUTH=${NACOS_AUTH}: want true or false" ;;
esac
if [ "$AUTH" = 1 ] && { [ -z "$AUTH_PASSWORD" ] || [ "${#AUTH_PASSWORD}" -gt 72 ]; }; then
  # Nacos would make up a random password for an empty one, and refuses longer ones.
  die "NACOS_AUTH_PASSWORD must have 1 to 72 characters"
fi

# ---------------------------------------------------------------- prerequisites

need_tools() {
  command -v curl >/dev/null 2>&1 || apt_install curl ca-certificates
  find_java
}

# ---------------------------------------------------------------- install

cmd_install() {
  need_tools
  install_once "the Nacos launcher" nacos.build.dir
  cds_once
}

# ---------------------------------------------------------------- class data sharing

# Most of a Nacos start is loading and verifying its classes: 34 CPU-seconds
# here for a standalone server, 15 with a cluster node's C1 and serial GC, and
# 20 and 11 with a dynamic CDS archive of the classes it loaded (JDK 13+,
# -XX:SharedArchiveFile). Starts under load take minutes for want of CPU, so
# the install makes the archive once, from a server it starts on CDS_PORT and
# stops (the JVM writes the archive when it exits), and every start uses it.
# The archive is moved into place only once a JVM has mapped it (-Xshare:on):
# a truncated one crashes the JVM (SIGBUS), one of another JDK it ignores.
# A failed attempt is recorded and tried again a day later; without an
# archive Nacos starts as before. CDS reads jars only: the launcher's classes
# go in launcher.jar.
CDS_PORT="${NACOS_CDS_PORT:-8838}"

cds_archive() { # the archive's path for this JDK
  echo "$BUILD/cds-$("$JAVA" -version 2>&1 | cksum | cut -d' ' -f1).jsa"
}

launcher_jar() { # make $BUILD/launcher.jar unless it exists; false without a jar tool
  [ -f "$BUILD/launcher.jar" ] && return 0
  local jar
  jar="$(dirname "$(readlink -f "$JAVA")")/jar"
  [ -x "$jar" ] || return 1
  "$jar" cf "$BUILD/launcher.jar.$$" -C "$BUILD/classes" . && mv "$BUILD/launcher.jar.$$" "$BUILD/launcher.jar"
}

# class_path: the server's class path, the launcher as a jar when there is one.
class_path() {
  if [ -f "$BUILD/launcher.jar" ]; then
    echo "$BUILD/launcher.jar:$(cat "$BUILD/classpath.txt")"
  else
    echo "$BUILD/classes:$(cat "$BUILD/classpath.txt")"
  fi
}

cds_once() {
  [ -z "${NACOS_CDS_TRAINING:-}" ] || return 0
  local archive
  archive="$(cds_archive)"
  # A failed attempt is tried again a day later.
  [ -f "$archive" ] || [ -n "$(find "$archive.failed" -mmin -1440 2>/dev/null)" ] && return 0
  (
    if command -v flock >/dev/null 2>&1; then flock 9; fi
    [ -f "$archive" ] || [ -n "$(find "$archive.failed" -mmin -1440 2>/dev/null)" ] || cds_train "$archive"
  ) 9>"$CACHE/.cds.lock"
  return 0
}

cds_train() { # cds_train ARCHIVE: start a server that writes it, and stop it
  local dir=/tmp/dubbogo-lb-nacos-cds why="" t0
  t0=$(date +%s)
  launcher_jar || why="no jar tool next to $JAVA"
  if [ -z "$why" ]; then
    log "making the class data sharing archive (once per JDK; a server on port $CDS_PORT starts and stops)"
    # A standalone server with the defaults, whatever asked for the install.
    if ! env -u NACOS_MEMBERS -u NACOS_KEEP_DATA -u NACOS_HEAP -u NACOS_JAVA_OPTS \
      NACOS_PORT="$CDS_PORT" NACOS_RUN_DIR="$dir" NACOS_AUTH=false NACOS_CDS_TRAINING="$dir/nacos.jsa" \
      NACOS_START_TIMEOUT=600 NACOS_STOP_TIMEOUT=120 bash "${BASH_SOURCE[0]}" start >"$CACHE/cds.log" 2>&1; then
      why="the server did not start (see $CACHE/cds.log)"
    fi
    env NACOS_PORT="$CDS_PORT" NACOS_RUN_DIR="$dir" NACOS_STOP_TIMEOUT=120 bash "${BASH_SOURCE[0]}" stop >>"$CACHE/cds.log" 2>&1 || true
  fi
  if [ -z "$why" ] && [ -s "$dir/nacos.jsa" ] &&
    "$JAVA" -XX:SharedArchiveFile="$dir/nacos.jsa" -Xshare:on -cp "$(class_path)" -version >/dev/null 2>&1; then
    cp "$dir/nacos.jsa" "$1.$$" && mv "$1.$$" "$1"
    log "class data sharing archive made in $(($(date +%s) - t0)) s: $1"
  else
    log "no class data sharing archive: ${why:-the JVM wrote none it can map (see $CACHE/cds.log)}; Nacos starts without one"
    : >"$1.failed"
  fi
  rm -rf "$dir"
}

# ---------------------------------------------------------------- process helpers

saved_pid() {
  [ -f "$PID_FILE" ] || return 1
  local pid
  pid="$(tr -dc '0-9' <"$PID_FILE")"
  [ -n "$pid" ] || return 1
  echo "$pid"
}

# True if PID is alive and is our server (guards against a recycled pid).
is_our_process() {
  local pid="$1"
  kill -0 "$pid" 2>/dev/null || return 1
  if [ -r "/proc/$pid/cmdline" ]; then
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$MAIN_CLASS" || return 1
  fi
  return 0
}

running_pid() {
  local pid
  pid="$(saved_pid)" || return 1
  is_our_process "$pid" || return 1
  echo "$pid"
}

http_code() { # http_code [curl args...] URL
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" 2>/dev/null || true
}

tcp_open() { # tcp_open PORT
  timeout 3 bash -c "exec 3<>/dev/tcp/$HOST/$1" 2>/dev/null
}

healthy() {
  [ "$(http_code "$BASE_URL$HEALTH_PATH")" = 200 ]
}

# Register, read back and deregister an instance through the naming v1 Open API,
# under a group of its own so that it never shows up in DEFAULT_GROUP listings.
# With auth on, as the user TOKEN logs in as.
naming_round_trip() {
  local q="serviceName=nacos-sh-probe&groupName=NACOS_SH_PROBE&ip=127.0.0.1&port=1&ephemeral=true"
  if [ "$AUTH" = 1 ]; then
    q="$q&accessToken=$TOKEN"
  fi
  [ "$(http_code -X POST "$BASE_URL/v1/ns/instance?$q&weight=2.5")" = 200 ] || return 1
  curl -s --max-time 5 "$BASE_URL/v1/ns/instance/list?serviceName=nacos-sh-probe&groupName=NACOS_SH_PROBE${TOKEN:+&accessToken=$TOKEN}" 2>/dev/null |
    grep -q '"weight":2.5' || return 1
  [ "$(http_code -X DELETE "$BASE_URL/v1/ns/instance?$q")" = 200 ] || return 1
}

TOKEN=""

# Log in as the user and keep the access token in TOKEN; false until Nacos takes the
# credentials.
login() {
  local out
  out="$(curl -s --max-time 5 -X POST "$BASE_URL/v3/auth/user/login" \
    --data-urlencode "username=$AUTH_USER" --data-urlencode "password=$AUTH_PASSWORD" 2>/dev/null)" || return 1
  TOKEN="$(printf '%s' "$out" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
  [ -n "$TOKEN" ]
}

# Nacos 3 starts without users: create the admin with our password (once; the
# run dir, and so the user store, is fresh on every start), then log in.
auth_ready() {
  if [ "$ADMIN_MADE" = 0 ]; then
    local code
    code="$(http_code -X POST "$BASE_URL/v3/auth/user/admin" --data-urlencode "password=$AUTH_PASSWORD")"
    case "$code" in
      200) ADMIN_MADE=1 ;;
      409) return 2 ;; # an admin already: not the fresh store it should be
      *) return 1 ;;   # not up yet
    esac
  fi
  login
}

show_logs() { # show_logs [LINES]
  local n="${1:-50}" f
  for f in "$OUT_FILE" "$NACOS_HOME_DIR/logs/nacos.log"; do
    if [ -s "$f" ]; then
      printf -- '----- last %s lines of %s -----\n' "$n" "$f" >&2
      tail -n "$n" "$f" >&2
    fi
  done
}

# Wipe the run dir, refusing to touch a directory that is not ours.
fresh_run_dir() {
  case "$RUN_DIR" in
    /*) ;;
    *) die "NACOS_RUN_DIR must be an absolute path: $RUN_DIR" ;;
  esac
  [ "$RUN_DIR" != / ] || die "NACOS_RUN_DIR must not be /"
  if [ -d "$RUN_DIR" ] && [ -n "$(ls -A "$RUN_DIR")" ] && [ ! -f "$RUN_DIR/$MARKER" ]; then
    die "$RUN_DIR is not empty and was not made by nacos.sh; not wiping it (set NACOS_RUN_DIR)"
  fi
  rm -rf "$RUN_DIR"
  mkdir -p "$RUN_DIR/tmp" "$NACOS_HOME_DIR/logs"
  : >"$RUN_DIR/$MARKER"
}

# ---------------------------------------------------------------- commands

cmd_start() {
  cmd_install
  if running_pid >/dev/null; then
    log "a server from an earlier start is still running; stopping it first"
    cmd_stop
  fi
  local port
  for port in "$HTTP_PORT" "$GRPC_PORT" "$CLUSTER_GRPC_PORT" "$RAFT_PORT"; do
    if tcp_open "$port"; then
      die "port $HOST:$port is already in use by another process"
    fi
  done
  if [ -n "$MEMBERS" ] && [ "${NACOS_KEEP_DATA:-}" = 1 ] && [ -f "$RUN_DIR/$MARKER" ]; then
    # A cluster node started again after a crash or a stop: its data (the JRaft log,
    # Derby) stays, as a restarted pod keeps its volume.
    mkdir -p "$RUN_DIR/tmp" "$NACOS_HOME_DIR/logs"
  else
    fresh_run_dir
  fi
  if [ -n "$MEMBERS" ]; then
    mkdir -p "$NACOS_HOME_DIR/conf"
    tr ',' '\n' <<<"$MEMBERS" >"$NACOS_HOME_DIR/conf/cluster.conf"
  fi

  local cp archive
  cp="$(class_path)"
  archive="$(cds_archive)"
  local -a jvm=(
    -Xms"$HEAP" -Xmx"$HEAP"
    -XX:+HeapDumpOnOutOfMemoryError -XX:HeapDumpPath="$RUN_DIR"
    -Djava.net.preferIPv4Stack=true
    -Djava.io.tmpdir="$RUN_DIR/tmp"
    -Dfile.encoding=UTF-8
    # Nacos (hessian, JRaft, protobuf) reflects into these on JDK 17.
    --add-opens=java.base/java.lang=ALL-UNNAMED
    --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens=java.base/java.util=ALL-UNNAMED
    --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
    --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
    --add-opens=java.base/java.math=ALL-UNNAMED
    --add-opens=java.base/java.net=ALL-UNNAMED
    --add-opens=java.base/java.nio=ALL-UNNAMED
    --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
    # Nacos settings (system properties, read before Spring starts).
    -Dnacos.standalone="$STANDALONE"
    -Dnacos.home="$NACOS_HOME_DIR"
    -Dnacos.logs.path="$NACOS_HOME_DIR/logs"
    -Dlogging.config=classpath:META-INF/logback/nacos.xml
    -DJM.LOG.PATH="$NACOS_HOME_DIR/logs"
    -DJM.SNAPSHOT.PATH="$NACOS_HOME_DIR"
    -Dnacos.server.ip="$HOST"
    -Dnacos.remote.grpc.listen.ip="$HOST"
    -Dnacos.test.bind.ip="$HOST"
    -Dnacos.server.main.port="$HTTP_PORT"
    -Dserver.port="$HTTP_PORT"
    -Dserver.address="$HOST"
    # The embedded Derby store must boot within the datasource pool's
    # connection timeout, 3 s by default in Nacos (DataSourcePoolProperties);
    # on a busy machine it takes longer and Nacos exits with "load
    # derby-schema.sql error ... Login timeout exceeded".
    -Ddb.pool.config.connectionTimeout=120000
    # No second copy of every configuration of the public namespace under
    # the empty namespace ID (Nacos 3's compatibility with 2.x servers in
    # the same cluster, on by default; clients' "" already means public).
    # The copy is written in its own transaction before the real one: when
    # the real one failed (seen once in CI: Derby "A lock could not be
    # obtained" on a busy machine), the copy stayed, every later
    # compare-and-set publish of that data ID compared against it and
    # failed, and Dubbo Java never wrote its interface-to-application
    # mapping.
    -Dnacos.config.namespace.compatible.mode=false
    # No metrics pushed to an Influx or an Elastic that is not there: their
    # registries are on the class path and, by Spring Boot's defaults, each
    # tried to connect every minute ("failed to send metrics to influx").
    -Dmanagement.influx.metrics.export.enabled=false
    -Dmanagement.elastic.metrics.export.enabled=false
  )
  if [ -n "$MEMBERS" ]; then
    jvm+=(
      -Dnacos.member.list="$MEMBERS"
      -DembeddedStorage=true
      # Nacos 3 checks the identity on the calls between nodes even with auth off
      # ("enabled inner api auth identity check"): the same on every node, or they
      # mark each other DOWN. A throw-away cluster on loopback: a fixed value.
      -Dnacos.core.auth.server.identity.key=dubbogo-lb-cluster
      -Dnacos.core.auth.server.identity.value=dubbogo-lb-cluster-identity
      # Three JVMs beside the tests on two cores: one GC thread, C1 only (starts
      # sooner, compiles less).
      -XX:+UseSerialGC -XX:TieredStopAtLevel=1
      # JRaft (config and persistent instances; not the ephemeral ones, which
      # Distro replicates) elects a leader after 5 s without heartbeats by
      # default: on a busy machine the leader missed them, a new election
      # started while a starting node read its config through the old one,
      # and that node exited ("The Raft Group [nacos_config] did not find the
      # Leader node"). Longer timeouts keep the first leader.
      -Dnacos.core.protocol.raft.data.election_timeout_ms=15000
      -Dnacos.core.protocol.raft.data.rpc_request_timeout_ms=15000
    )
  fi
  if [ -n "${NACOS_CDS_TRAINING:-}" ]; then
    jvm+=(-XX:ArchiveClassesAtExit="$NACOS_CDS_TRAINING")
  elif [ -f "$archive" ] && [ -f "$BUILD/launcher.jar" ]; then
    jvm+=(-XX:SharedArchiveFile="$archive")
  fi
  if [ "$AUTH" = 1 ]; then
    # The keys Nacos 3.1.0 checks at start when auth is on (NacosServerAuthConfig,
    # NacosServerAdminAuthConfig, JwtTokenManager): an auth system, a server identity
    # key and value, and a Base64 token secret key of at least 32 bytes.
    local secret identity
    secret="$(head -c 48 /dev/urandom | base64 | tr -d '\n')"
    identity="$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
    jvm+=(
      -Dnacos.core.auth.enabled=true
      -Dnacos.core.auth.admin.enabled=true
      -Dnacos.core.auth.system.type=nacos
      -Dnacos.core.auth.plugin.nacos.token.secret.key="$secret"
      -Dnacos.core.auth.server.identity.key=dubbogo-lb-identity
      -Dnacos.core.auth.server.identity.value="$identity"
      # Users and roles read from the store on every check, not from a copy
      # reloaded every 15 s: the admin made below can log in at once.
      -Dnacos.core.auth.caching.enabled=false
    )
  fi
  # shellcheck disable=SC2206 # word splitting of user-supplied options is intended
  local -a extra=(${NACOS_JAVA_OPTS:-})

  local t0
  t0=$(date +%s.%N)
  # The registry is infrastructure; the processes under test are the load.
  # Nacos runs in the session of whoever starts it, and as root at nice
  # NACOS_NICE (-5): in one session the CPU is shared thread by thread, and
  # nice weighs. It ran in a session of its own (setsid) before, for Linux's
  # autogroups, which share the CPU between sessions first: but on the
  # 2-core test machine (kernel 6.18) a standalone server's autogroup, 50 to
  # 60 runnable threads, got no CPU at all for 75 s to 2 min at a load
  # average of 40 to 60 (its CPU time stood still, the clients' reads timed
  # out), where the same test with autogroups off passed (docs/testing.md).
  # exec keeps $! the JVM's pid (nice and nohup exec it too).
  local -a prio=()
  if [ "$(id -u)" = 0 ] && [ "$NICE" != "$(nice)" ]; then
    prio=(nice -n "$((NICE - $(nice)))")
  fi
  (cd "$RUN_DIR" && exec "${prio[@]}" nohup "$JAVA" "${jvm[@]}" "${extra[@]}" -cp "$cp" "$MAIN_CLASS" \
    </dev/null >"$OUT_FILE" 2>&1) &
  local pid=$!
  echo "$pid" >"$PID_FILE"
  log "starting Nacos (pid $pid, logs in $RUN_DIR)"

  local deadline=$(($(date +%s) + START_TIMEOUT))
  local http_ok=0 grpc_ok=0 auth_ok=0 naming_ok=0
  ADMIN_MADE=0
  [ "$AUTH" = 1 ] || auth_ok=1
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "Nacos exited during start-up"
      show_logs 50
      rm -f "$PID_FILE"
      exit 1
    fi
    # A start that failed does not always end the JVM: when the web context
    # fails (e.g. its port taken, or the JRaft leader lost meanwhile), the core
    # context's threads keep it alive, and it would only be seen at the
    # deadline (seen: a cluster node idle for minutes after "Nacos failed to
    # start"). The same for a heap too small for what it loaded.
    if grep -q -e 'Nacos failed to start' -e 'java.lang.OutOfMemoryError' "$OUT_FILE" 2>/dev/null; then
      if grep -q 'java.lang.OutOfMemoryError' "$OUT_FILE"; then
        log "Nacos ran out of its ${HEAP} heap during start-up (NACOS_HEAP)"
      else
        log "Nacos failed to start (its process did not exit; stopping it)"
      fi
      show_logs 50
      STOP_TIMEOUT=5 cmd_stop || true
      exit 1
    fi
    if [ "$http_ok" = 0 ] && healthy; then http_ok=1; fi
    if [ "$grpc_ok" = 0 ] && tcp_open "$GRPC_PORT"; then grpc_ok=1; fi
    if [ "$auth_ok" = 0 ] && [ "$http_ok" = 1 ]; then
      local rc=0
      auth_ready || rc=$?
      case "$rc" in
        0) auth_ok=1 ;;
        2)
          log "Nacos already has an admin user, though its data directory is fresh"
          cmd_stop || true
          exit 1
          ;;
      esac
    fi
    if [ "$http_ok" = 1 ] && [ "$grpc_ok" = 1 ] && [ "$auth_ok" = 1 ] && naming_round_trip; then
      naming_ok=1
      break
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "Nacos not ready after ${START_TIMEOUT}s (health=$http_ok grpc=$grpc_ok auth=$auth_ok naming=$naming_ok)"
      show_logs 50
      cmd_stop || true
      exit 1
    fi
    sleep 0.5
  done
  local secs
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  log "Nacos ready in ${secs}s: http $BASE_URL, grpc $HOST:$GRPC_PORT (pid $pid)"
  if [ "$AUTH" = 1 ]; then
    log "authentication on: user $AUTH_USER, password from NACOS_AUTH_PASSWORD"
  fi
  echo "started in ${secs}s"
}

cmd_stop() {
  local pid
  if ! pid="$(saved_pid)"; then
    log "not running (no pid file)"
    return 0
  fi
  if ! is_our_process "$pid"; then
    log "not running (stale pid $pid)"
    rm -f "$PID_FILE"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  local waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt $((STOP_TIMEOUT * 2)) ]; do
    sleep 0.5
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "pid $pid still alive after ${STOP_TIMEOUT}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    waited=0
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 50 ]; do
      sleep 0.2
      waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then die "pid $pid survived SIGKILL"; fi
  fi
  rm -f "$PID_FILE"
  log "stopped (pid $pid)"
}

cmd_status() {
  local pid
  if ! pid="$(running_pid)"; then
    echo "not running"
    return 1
  fi
  if healthy; then
    echo "running (pid $pid, $BASE_URL, grpc $HOST:$GRPC_PORT)"
    return 0
  fi
  echo "running but not healthy (pid $pid)"
  return 1
}

# ---------------------------------------------------------------- cluster

# shellcheck disable=SC2206 # a list of ports
CLUSTER_PORTS=(${NACOS_CLUSTER_PORTS:-8868 8878 8888})
CLUSTER_RUN_DIR="${NACOS_CLUSTER_RUN_DIR:-/tmp/dubbogo-lb-nacos-cluster}"

cluster_members() {
  local p out=""
  for p in "${CLUSTER_PORTS[@]}"; do out="${out:+$out,}$HOST:$p"; done
  echo "$out"
}

check_node() { # check_node N: die unless N is a node number
  case "$1" in
    '' | *[!0-9]*) die "node number wanted (1 to ${#CLUSTER_PORTS[@]}), got '$1'" ;;
  esac
  [ "$1" -ge 1 ] && [ "$1" -le "${#CLUSTER_PORTS[@]}" ] || die "no node $1: the cluster has nodes 1 to ${#CLUSTER_PORTS[@]}"
}

node_cmd() { # node_cmd N CMD [ENV=VALUE...]: this script's standalone CMD, for node N
  local n="$1" cmd="$2"
  shift 2
  env NACOS_PORT="${CLUSTER_PORTS[n - 1]}" NACOS_RUN_DIR="$CLUSTER_RUN_DIR/node$n" \
    NACOS_MEMBERS="$(cluster_members)" NACOS_AUTH=false "$@" bash "${BASH_SOURCE[0]}" "$cmd"
}

node_running() { # node_running N: its process is alive
  local pid f="$CLUSTER_RUN_DIR/node$1/nacos.pid"
  [ -f "$f" ] || return 1
  pid="$(tr -dc '0-9' <"$f")"
  [ -n "$pid" ] && is_our_process "$pid"
}

# members_up N PORT...: node N lists every one of PORTs as an UP member.
members_up() {
  local n="$1" out p
  shift
  out="$(curl -s --max-time 5 "http://$HOST:${CLUSTER_PORTS[n - 1]}/nacos/v3/admin/core/cluster/node/list" 2>/dev/null)" || return 1
  out="$(printf '%s' "$out" | grep -o '"ip":"[^"]*","port":[0-9]*,"state":"[A-Z]*"')" || return 1
  for p in "$@"; do
    grep -qF "\"ip\":\"$HOST\",\"port\":$p,\"state\":\"UP\"" <<<"$out" || return 1
  done
}

running_ports() { # the HTTP ports of the nodes whose process is alive
  local i
  for i in "${!CLUSTER_PORTS[@]}"; do
    if node_running $((i + 1)); then echo "${CLUSTER_PORTS[i]}"; fi
  done
}

# Wait until every running node is healthy and lists every running node UP.
cluster_wait_up() {
  local deadline=$(($(date +%s) + START_TIMEOUT)) i ok
  local -a up
  while :; do
    mapfile -t up < <(running_ports)
    ok=1
    [ "${#up[@]}" -gt 0 ] || ok=0
    for i in "${!CLUSTER_PORTS[@]}"; do
      node_running $((i + 1)) || continue
      members_up $((i + 1)) "${up[@]}" || { ok=0; break; }
    done
    [ "$ok" = 0 ] || return 0
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "cluster: the running nodes (${up[*]}) do not all see each other UP after ${START_TIMEOUT}s; what each lists:"
      for i in "${!CLUSTER_PORTS[@]}"; do
        node_running $((i + 1)) || { log "node $((i + 1)): not running"; continue; }
        log "node $((i + 1)): $(curl -s --max-time 5 "http://$HOST:${CLUSTER_PORTS[i]}/nacos/v3/admin/core/cluster/node/list" 2>/dev/null |
          grep -o '"address":"[^"]*"\|"state":"[A-Z]*"' | tr '\n' ' ')"
        node_cmd $((i + 1)) logs 2>&1 | tail -n 15 >&2
      done
      return 1
    fi
    sleep 0.5
  done
}

# node_start_retried N [ENV=VALUE...]: start node N, and start it again each
# time it exits during start-up, until START_TIMEOUT. Seen on a busy machine
# (load average 15 and up on 2 cores), with nodes starting together or one
# joining: a starting node reads its configuration through JRaft, the
# leader changes meanwhile, and the node exits ("The Raft Group
# [nacos_config] did not find the Leader node"). The next try usually
# comes up, as a crashed pod does when its orchestrator restarts it.
#
# A try may also hang: seen under two hogs, a restarted node's read of its
# configuration through JRaft timed out ("read-index request timeout, go to
# Leader read") and the start sat there for 7 minutes, its web server never
# up, until the deadline. So a try gets half the time left, at least 240 s
# (the slowest start seen under two hogs took 192 s, the three nodes' first
# start 140 s), and the next try the rest.
#
# Each try's messages (with the log tail of a failed one) go to
# $CLUSTER_RUN_DIR/nodeN-start.log, not to the terminal where three nodes'
# would interleave; when the node does not come up in time, that file's tail
# is printed with a one-line verdict.
node_start_retried() {
  local n="$1" try=0 left rc per_try
  shift
  local deadline=$(($(date +%s) + START_TIMEOUT)) out="$CLUSTER_RUN_DIR/node$n-start.log"
  mkdir -p "$CLUSTER_RUN_DIR"
  : >"$out"
  while :; do
    left=$((deadline - $(date +%s)))
    if [ "$left" -le 0 ]; then
      node_failed "$n" "did not start within ${START_TIMEOUT}s ($try tries)"
      return 1
    fi
    try=$((try + 1))
    printf -- '----- try %s (%ss left) -----\n' "$try" "$left" >>"$out"
    per_try=$((left / 2 > 240 ? left / 2 : 240))
    [ "$per_try" -le "$left" ] || per_try=$left
    rc=0
    node_cmd "$n" start NACOS_START_TIMEOUT="$per_try" "$@" >>"$out" 2>&1 || rc=$?
    [ "$rc" != 0 ] || return 0
    log "cluster: node $n did not start (try $try): $(grep '^nacos.sh: ' "$out" | grep -v 'starting Nacos\|stopped\|not running' | tail -n 1 | cut -c11-)"
    sleep 2 # not a spin when it fails at once (a port taken)
  done
}

# node_failed N WHY: a clear error for node N, with the tail of its tries.
node_failed() {
  local f="$CLUSTER_RUN_DIR/node$1-start.log"
  log "cluster: node $1 (127.0.0.1:${CLUSTER_PORTS[$1 - 1]}) $2; all its tries in $f; the end of the last:"
  grep -v '^[[:space:]]*$' "$f" | tail -n 25 >&2
  log "cluster: node $1 $2; why each try ended:"
  grep '^nacos.sh: ' "$f" | grep -v 'starting Nacos\|stopped\|not running' | tail -n 10 >&2
}

cluster_start() {
  local t0 n rc=0
  t0=$(date +%s.%N)
  if [ -n "${1:-}" ]; then
    check_node "$1"
    node_start_retried "$1" NACOS_KEEP_DATA=1 || return 1
  else
    cluster_stop
    mkdir -p "$CLUSTER_RUN_DIR"
    local -a pids=()
    for n in $(seq "${#CLUSTER_PORTS[@]}"); do
      node_start_retried "$n" &
      pids+=($!)
    done
    for n in "${pids[@]}"; do wait "$n" || rc=1; done
    if [ "$rc" != 0 ]; then
      cluster_stop
      return 1
    fi
  fi
  cluster_wait_up || return 1
  local secs
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  log "cluster ${1:+node $1 }ready in ${secs}s: $(cluster_members)"
  echo "started in ${secs}s"
}

cluster_stop() {
  local n
  if [ -n "${1:-}" ]; then
    check_node "$1"
    node_cmd "$1" stop
    return
  fi
  for n in $(seq "${#CLUSTER_PORTS[@]}"); do node_cmd "$n" stop & done
  wait
}

cluster_kill() {
  check_node "${1:-}"
  local f="$CLUSTER_RUN_DIR/node$1/nacos.pid" pid
  if ! node_running "$1"; then
    log "node $1 is not running"
    return 0
  fi
  pid="$(tr -dc '0-9' <"$f")"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$f"
  log "node $1 killed (SIGKILL, pid $pid)"
}

cluster_status() {
  local n rc=0 ports
  local -a all=("${CLUSTER_PORTS[@]}")
  ports="${1:-$(seq "${#CLUSTER_PORTS[@]}")}"
  [ -z "${1:-}" ] || check_node "$1"
  for n in $ports; do
    local line ok=1
    line="$(node_cmd "$n" status)" || ok=0
    if [ "$ok" = 1 ] && ! members_up "$n" "${all[@]}"; then
      line="$line; does not see every member UP"
      ok=0
    fi
    [ "$ok" = 1 ] || rc=1
    echo "node $n ($HOST:${CLUSTER_PORTS[n - 1]}): $line"
  done
  return "$rc"
}

cmd_cluster() {
  [ "$AUTH" = 0 ] || die "cluster mode runs without authentication (NACOS_AUTH=true is not supported)"
  [ "${#CLUSTER_PORTS[@]}" -ge 1 ] || die "NACOS_CLUSTER_PORTS is empty"
  local p
  for p in "${CLUSTER_PORTS[@]}"; do
    # Each node also takes P-1000 and P+1001.
    case "$p" in
      '' | *[!0-9]* | 0*) die "NACOS_CLUSTER_PORTS: '$p' is not a port number" ;;
    esac
    [ "$p" -gt 1000 ] && [ "$p" -lt 64535 ] || die "NACOS_CLUSTER_PORTS: $p is out of range (1001 to 64534: P-1000 and P+1001 are ports too)"
  done
  local sub="${1:-}"
  shift || true
  case "$sub" in
    start) cluster_start "${1:-}" ;;
    stop) cluster_stop "${1:-}" ;;
    kill) cluster_kill "${1:-}" ;;
    status) cluster_status "${1:-}" ;;
    addresses) cluster_members ;;
    logs)
      check_node "${1:-}"
      node_cmd "$1" logs
      ;;
    *) usage >&2; exit 2 ;;
  esac
}

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

case "${1:-}" in
  install) cmd_install; log "installed: $BUILD" ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  logs) show_logs "${2:-50}" ;;
  cluster) shift; cmd_cluster "$@" ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
