#!/usr/bin/env bash
# Install the load tools benchlab drives, besides wrk: h2load (apt), vegeta (go install) and a real
# Apache JMeter 5.6.x home assembled from Maven Central artifacts; and async-profiler, for profile=True.
# Idempotent: a second run only checks.
#
#   bash .ci/install-drivers.sh          # everything, into <repo>/.tools (gitignored) and apt
#
# Debian's own jmeter package (2.13) fails every plan on Java 17 and still exits 0: it is never used.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
JMETER_VERSION="${JMETER_VERSION:-5.6.3}"
VEGETA_VERSION="${VEGETA_VERSION:-v12.13.0}"
ASYNC_PROFILER_VERSION="${ASYNC_PROFILER_VERSION:-4.2}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
mkdir -p "$TOOLS/bin"

say() { echo "install-drivers: $*"; }

# --- h2load (nghttp2-client) ------------------------------------------------------------------------
if ! command -v h2load >/dev/null; then
    say "apt-get install nghttp2-client"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq nghttp2-client >/dev/null
fi
say "h2load: $(h2load --version | head -1)"

# --- vegeta (go install, into .tools/bin) -----------------------------------------------------------
if [ ! -x "$TOOLS/bin/vegeta" ] || ! "$TOOLS/bin/vegeta" -version 2>/dev/null | grep -q "${VEGETA_VERSION#v}"; then
    say "go install github.com/tsenart/vegeta/v12@$VEGETA_VERSION"
    GOBIN="$TOOLS/bin" GOFLAGS=-buildvcs=false CGO_ENABLED=0 \
        "$GO" install -ldflags "-X main.Version=${VEGETA_VERSION}" "github.com/tsenart/vegeta/v12@$VEGETA_VERSION"
fi
say "vegeta: $("$TOOLS/bin/vegeta" -version | head -1)"

# --- Apache JMeter (Maven Central artifacts -> a runnable JMeter home) -------------------------------
# JMeter's launcher (bin/ApacheJMeter.jar) takes its home from its own location and puts lib/*.jar and
# lib/ext/*.jar on the class path; lib/ext is where it looks for samplers and listeners; bin/ holds the
# properties files, which ship in the ApacheJMeter_config artifact.
JM="$TOOLS/jmeter"
if [ ! -f "$JM/bin/ApacheJMeter.jar" ] || [ "$(cat "$JM/VERSION" 2>/dev/null)" != "$JMETER_VERSION" ]; then
    say "assembling Apache JMeter $JMETER_VERSION under $JM with mvn"
    command -v mvn >/dev/null || { echo "install-drivers: mvn is missing: apt-get install maven" >&2; exit 1; }
    BUILD="$TOOLS/jmeter-build"
    rm -rf "$JM" "$BUILD"
    mkdir -p "$BUILD" "$JM/bin" "$JM/lib/ext"
    cat >"$BUILD/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>benchlab</groupId>
  <artifactId>jmeter-home</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.jmeter</groupId><artifactId>ApacheJMeter_http</artifactId><version>$JMETER_VERSION</version></dependency>
    <dependency><groupId>org.apache.jmeter</groupId><artifactId>ApacheJMeter_components</artifactId><version>$JMETER_VERSION</version></dependency>
    <dependency><groupId>org.apache.jmeter</groupId><artifactId>ApacheJMeter_functions</artifactId><version>$JMETER_VERSION</version></dependency>
  </dependencies>
</project>
EOF
    mvn -B -q -Dstyle.color=never -f "$BUILD/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$BUILD/lib"
    # dependency:copy takes one artifact a call.
    mvn -B -q -Dstyle.color=never -f "$BUILD/pom.xml" dependency:copy -DoutputDirectory="$BUILD/top" \
        -Dartifact="org.apache.jmeter:ApacheJMeter:$JMETER_VERSION"
    mvn -B -q -Dstyle.color=never -f "$BUILD/pom.xml" dependency:copy -DoutputDirectory="$BUILD/top" \
        -Dartifact="org.apache.jmeter:ApacheJMeter_config:$JMETER_VERSION"
    for jar in "$BUILD"/lib/*.jar; do
        case "$(basename "$jar")" in
            ApacheJMeter_*) cp "$jar" "$JM/lib/ext/" ;;
            *) cp "$jar" "$JM/lib/" ;;
        esac
    done
    cp "$BUILD/top/ApacheJMeter-$JMETER_VERSION.jar" "$JM/bin/ApacheJMeter.jar"
    (cd "$JM" && unzip -q -o "$BUILD/top/ApacheJMeter_config-$JMETER_VERSION.jar" 'bin/*')
    echo "$JMETER_VERSION" >"$JM/VERSION"
    rm -rf "$BUILD"
fi
mkdir -p "$JM/lib/junit"  # the launcher prints a stack trace when lib/junit is missing
say "jmeter: $(cat "$JM/VERSION") at $JM"

# --- async-profiler (Maven Central's jar carries the native libraries) -> .tools/async-profiler/<arch>/ ----------
# benchlab loads it into a server JVM through the attach mechanism for compare(profile=True) (docs/why.md).
AP="$TOOLS/async-profiler"
if [ ! -f "$AP/linux-x64/libasyncProfiler.so" ] || [ "$(cat "$AP/VERSION" 2>/dev/null)" != "$ASYNC_PROFILER_VERSION" ]; then
    say "async-profiler $ASYNC_PROFILER_VERSION from Maven Central under $AP"
    rm -rf "$AP" && mkdir -p "$AP/jar"
    mvn -B -q -Dstyle.color=never dependency:copy -DoutputDirectory="$AP/jar" \
        -Dartifact="tools.profiler:async-profiler:$ASYNC_PROFILER_VERSION"
    (cd "$AP" && unzip -q -o "jar/async-profiler-$ASYNC_PROFILER_VERSION.jar" 'linux-x64/*' 'linux-arm64/*')
    rm -rf "$AP/jar"
    echo "$ASYNC_PROFILER_VERSION" >"$AP/VERSION"
fi
say "async-profiler: $(cat "$AP/VERSION") at $AP"
