#!/usr/bin/env bash
# kcycle developer entry point: deps, demo, test, sanitize, bench.
# Run as root on a fresh Debian machine: missing packages are installed with apt-get.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(
    meson ninja-build pkg-config gcc libc6-dev
    libprotobuf-c-dev protobuf-c-compiler libnng-dev libjansson-dev libhwloc-dev
    libcmocka-dev libcurl4-openssl-dev libyaml-dev
    python3 clang libclang-rt-14-dev valgrind
)
BUILD=${KCYCLE_BUILD:-build}

log() { printf 'dev.sh: %s\n' "$*" >&2; }

deps() {
    local missing=() pkg
    for pkg in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        log "missing packages: ${missing[*]}"
        log "install them (apt-get install ${missing[*]}) or run ./dev.sh as root"
        exit 1
    fi
    log "installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

configure() {
    local dir=$1; shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" -Dwerror=true "$@"
    fi
}

build() {
    deps
    configure "$BUILD"
    meson compile -C "$BUILD"
}

demo() {
    build
    "$BUILD/runtime/scheduler/kcycle-scheduler" --simulate examples/sim/small.yaml \
        --report "$BUILD/demo-report.json"
    log "JSON report written to $BUILD/demo-report.json"
}

run_tests() {
    build
    meson test -C "$BUILD" --print-errorlogs --no-suite perf "$@"
}

sanitize() {
    deps
    configure build-asan -Db_sanitize=address,undefined -Db_lundef=false
    meson compile -C build-asan
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C build-asan --print-errorlogs --suite unit --suite integration "$@"
}

bench() {
    build
    "$BUILD/tests/perf/kcycle-bench" --shape scheduling-basic --json "$@"
}

case "${1:-}" in
    deps) deps ;;
    build) build ;;
    demo) demo ;;
    test) shift; run_tests "$@" ;;
    sanitize) shift; sanitize "$@" ;;
    bench) shift; bench "$@" ;;
    *)
        echo "usage: ./dev.sh deps|build|demo|test|sanitize|bench" >&2
        exit 2
        ;;
esac
