# Shared by it/nacos.sh and it/javaprovider.sh (sourced, not run): find a JDK 17+,
# and build a small Maven project once into a cache, rebuilding only when its sources
# change or a jar of its classpath is gone.
#
# The sourcing script calls maven_project (PROJECT, CACHE and BUILD) and sets MAIN_CLASS
# before it calls the other functions. log and die (below) print in the name of the
# script that was run.

JAVA=""

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { log "$*"; exit 1; }

# maven_project NAME [CACHE]: the Maven project it/NAME, built into CACHE/build (default
# CACHE: ~/.cache/dubbogo-lb/NAME).
maven_project() {
  PROJECT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$1"
  CACHE="${2:-${HOME:-/root}/.cache/dubbogo-lb/$1}"
  BUILD="$CACHE/build"
}

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing $* with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  else
    die "missing $*; install it (needs root and apt-get to do it here)"
  fi
}

java_major() { # java_major BIN -> major version number
  "$1" -XshowSettings:properties -version 2>&1 |
    sed -n 's/^ *java\.specification\.version = \([0-9.]*\).*/\1/p' | sed 's/^1\.//; s/\..*//'
}

# find_java [noinstall]: set JAVA to a JDK 17+ ($JAVA_HOME's, else the one on PATH),
# installing Debian's when there is none, unless noinstall (then fail).
find_java() {
  [ -n "$JAVA" ] && return 0
  local cand
  for cand in ${JAVA_HOME:+"$JAVA_HOME/bin/java"} "$(command -v java || true)"; do
    if [ -n "$cand" ] && [ -x "$cand" ] && [ "$(java_major "$cand")" -ge 17 ] 2>/dev/null; then
      JAVA="$cand"; return 0
    fi
  done
  [ "${1:-}" != noinstall ] || return 1
  apt_install default-jdk-headless # 17 on Debian 12, 21 on Debian 13
  cand="$(command -v java)"
  [ "$(java_major "$cand")" -ge 17 ] 2>/dev/null || die "need JDK 17+, found $("$cand" -version 2>&1 | head -1)"
  JAVA="$cand"
}

# Fingerprint of everything the build depends on: when it changes, rebuild.
source_stamp() {
  (cd "$PROJECT" && find pom.xml src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

is_installed() {
  [ -f "$BUILD/classpath.txt" ] && [ -f "$BUILD/stamp" ] &&
    [ -f "$BUILD/classes/${MAIN_CLASS//.//}.class" ] || return 1
  [ "$(cat "$BUILD/stamp")" = "$(source_stamp)" ] || return 1
  local -a jars
  local jar
  IFS=: read -r -a jars <"$BUILD/classpath.txt" || true # no trailing newline
  [ "${#jars[@]}" -gt 0 ] || return 1
  for jar in "${jars[@]}"; do
    [ -f "$jar" ] || return 1 # e.g. ~/.m2 was cleaned
  done
  return 0
}

# maven_build WHAT BUILD_DIR_PROPERTY: compile PROJECT into BUILD; the pom writes
# the classes and classpath.txt under the directory its BUILD_DIR_PROPERTY names.
maven_build() {
  command -v mvn >/dev/null 2>&1 || apt_install maven
  log "building $1 into $BUILD (first use; downloads its jars into ~/.m2)"
  local t0 t1
  t0=$(date +%s)
  rm -rf "$BUILD"
  mkdir -p "$BUILD"
  if ! JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$JAVA")")")" \
    mvn -B -q -Dstyle.color=never -f "$PROJECT/pom.xml" -D"$2"="$BUILD" compile \
    </dev/null >"$BUILD/maven.log" 2>&1; then
    tail -n 50 "$BUILD/maven.log" >&2
    rm -f "$BUILD/stamp"
    die "maven build of $PROJECT failed (full log: $BUILD/maven.log)"
  fi
  [ -s "$BUILD/classpath.txt" ] || die "maven did not write $BUILD/classpath.txt"
  source_stamp >"$BUILD/stamp"
  t1=$(date +%s)
  log "installed in $((t1 - t0)) s"
}

# install_once WHAT BUILD_DIR_PROPERTY: maven_build unless installed, one build at a
# time (parallel tests and CI steps share the cache). The lock lives in a subshell
# so that its file descriptor is never inherited by a process started later.
install_once() {
  mkdir -p "$CACHE"
  is_installed && return 0
  (
    if command -v flock >/dev/null 2>&1; then flock 9; fi
    is_installed || maven_build "$@"
  ) 9>"$CACHE/.install.lock" || exit 1
}
