#!/usr/bin/env bash
# A Dubbo Java 3.3.6 provider of the greeter service, for the integration tests and the
# demo: a Java provider beside the dubbo-go ones (see it/javaprovider/README.md).
#
#   it/javaprovider.sh install     resolve + compile it (first use only; cached after)
#   it/javaprovider.sh ready       exit 0 if installed and up to date (never builds)
#   it/javaprovider.sh run FLAGS   install if needed, then exec the provider with FLAGS
#                                  (-port, -weight, -warmup, -latency, -registry, -group,
#                                  -namespace, -username, -password, -name, -register-mode,
#                                  -metadata-type; see JavaProvider.java)
#   it/javaprovider.sh consume FLAGS
#                                  install if needed, then exec a Dubbo Java consumer of
#                                  the greeter (Dubbo's adaptive balancer by default) with
#                                  FLAGS (-registry, -group, -callers, -calls, -duration,
#                                  -providers, ...; see JavaConsumer.java); it prints a JSON
#                                  summary line at the end
#
# The provider runs in the foreground as this process (exec), so a signal to the
# script's pid reaches the JVM: SIGTERM or SIGINT unregisters it and exits.
#
# Environment:
#   JAVAPROVIDER_CACHE      build cache (default $HOME/.cache/dubbogo-lb/javaprovider); jars stay in ~/.m2
#   JAVAPROVIDER_JAVA_OPTS  extra JVM options
#   JAVAPROVIDER_LOG_LEVEL  level of Dubbo's and Nacos's logs on stderr (default WARNING;
#                           INFO, FINE, ... as java.util.logging names them)
#   JAVA_HOME               JDK 17+ to use (else `java` on PATH)
#
# As it/nacos.sh: a missing JDK or Maven is installed with apt-get when running as root
# (install and run only; `ready` installs nothing).
set -euo pipefail

# shellcheck source=it/mavenbuild.sh
source "$(dirname "${BASH_SOURCE[0]}")/mavenbuild.sh" # log, die and the Maven build
maven_project javaprovider "${JAVAPROVIDER_CACHE:-}"
MAIN_CLASS="io.github.dubbogolb.javaprovider.JavaProvider"
CONSUMER_CLASS="io.github.dubbogolb.javaprovider.JavaConsumer"

cmd_install() {
  find_java
  install_once "the Java provider" javaprovider.build.dir
}

# cmd_run CLASS FLAGS: exec the JVM on CLASS (the provider or the consumer) with FLAGS.
cmd_run() {
  local main="$1"
  shift
  cmd_install
  local -a jvm=(
    # Small and light: a test runs several beside Nacos and the Go processes on 2 cores.
    -Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k
    -Djava.net.preferIPv4Stack=true
    -Dfile.encoding=UTF-8
    # Dubbo and Nacos's client reflect into these on JDK 17.
    --add-opens=java.base/java.lang=ALL-UNNAMED
    --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens=java.base/java.util=ALL-UNNAMED
    --add-opens=java.base/java.math=ALL-UNNAMED
    --add-opens=java.base/java.net=ALL-UNNAMED
    # Nacos's client writes its logs and cache under user.home; keep them out of it.
    -DJM.LOG.PATH="${TMPDIR:-/tmp}/dubbogo-lb-javaprovider/logs"
    -DJM.SNAPSHOT.PATH="${TMPDIR:-/tmp}/dubbogo-lb-javaprovider"
    -Dnacos.logging.default.config.enabled=false
    # Nacos's client gives its connection 3 s to answer the server check, and each
    # request 3 s: not enough on a busy machine (the tests set the same for dubbo-go).
    -Dnacos.remote.client.grpc.server.check.timeout=30000
    -Dnacos.remote.client.grpc.timeout=30000
  )
  # shellcheck disable=SC2206 # word splitting of user-supplied options is intended
  local -a extra=(${JAVAPROVIDER_JAVA_OPTS:-})
  local cp="$BUILD/classes:$(cat "$BUILD/classpath.txt")"
  local level="${JAVAPROVIDER_LOG_LEVEL:-WARNING}"
  if [ "$level" != WARNING ]; then
    # Dubbo loads the first logging.properties of the classpath: put one with this level first.
    case "$level" in *[!A-Z]*) die "JAVAPROVIDER_LOG_LEVEL=$level: want a level such as INFO" ;; esac
    mkdir -p "$CACHE/log-$level"
    sed "s/^\.level=.*/.level=$level/" "$BUILD/classes/logging.properties" >"$CACHE/log-$level/logging.properties"
    cp="$CACHE/log-$level:$cp"
  fi
  exec "$JAVA" "${jvm[@]}" "${extra[@]}" -cp "$cp" "$main" "$@"
}

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

case "${1:-}" in
  install) cmd_install; log "installed: $BUILD" ;;
  ready) find_java noinstall && is_installed ;;
  run) shift; cmd_run "$MAIN_CLASS" "$@" ;;
  consume) shift; cmd_run "$CONSUMER_CLASS" "$@" ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
