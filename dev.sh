#!/usr/bin/env bash
# kcycle developer entry point: deps, demo, test, sanitize, bench, fuzz, soak.
# Run as root on a fresh Debian machine: missing packages are installed with apt-get.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(
    meson ninja-build pkg-config cmake gcc libc6-dev
    libprotobuf-c-dev protobuf-c-compiler libnng-dev libjansson-dev libhwloc-dev
    libcmocka-dev libcurl4-openssl-dev libyaml-dev libmicrohttpd-dev
    python3 python3-grpcio clang libclang-rt-14-dev valgrind
    chromium # test report-html opens the simulator's HTML report in it, headless
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
    meson test -C "$BUILD" --print-errorlogs --no-suite perf --no-suite realkube \
        --no-suite soak "$@"
}

# The long runs of suite soak, minutes, so not part of `test`: 100,000 pods under churn
# (tests/soak/README.md) and plugin hosts killed at random points of 20,000-pod runs under ten
# seeds (tests/integration/test_host_kill.py).
soak() {
    build
    meson test -C "$BUILD" --print-errorlogs --verbose --suite soak "$@"
}

# The real-cluster suite: builds (or reuses) the control plane of `kube`, then runs the tests
# of suite realkube against it. Without Go or the module proxy it says so and skips.
realkube() {
    build
    local bin rc=0
    bin=$(kube) || rc=$?
    if [ "$rc" -eq 3 ]; then
        log "realkube: skipped: the real control plane cannot be built here"
        return 0
    fi
    [ "$rc" -eq 0 ] || exit "$rc"
    KCYCLE_KUBE_BIN=$bin meson test -C "$BUILD" --print-errorlogs --suite realkube "$@"
}

sanitize() {
    deps
    configure build-asan -Db_sanitize=address,undefined -Db_lundef=false
    meson compile -C build-asan
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" \
        meson test -C build-asan --print-errorlogs --suite unit --suite integration --suite fuzz "$@"
}

bench() {
    build
    "$BUILD/tests/perf/kcycle-bench" --shape scheduling-basic --json "$@"
}

FUZZ_TARGETS=(quantity tree config simfile proto splitter kube sched host reply)

# libFuzzer runs of tests/fuzz/ targets, for `seconds` each. build-fuzz is a clang build with
# the whole core instrumented for coverage and ASan/UBSan, so the fuzzer sees into the parsers.
# Each run grows a temporary copy of the seed corpus; crash, leak, timeout and OOM inputs are
# kept in build-fuzz/fuzz-artifacts/<target>/ and make the command fail.
fuzz() {
    local seconds=${1:-30}
    if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
        log "fuzz: seconds must be a positive integer, not '$seconds'"
        exit 2
    fi
    build
    CC=clang configure build-fuzz -Db_sanitize=address,undefined -Db_lundef=false \
        -Dc_args=-fsanitize=fuzzer-no-link
    # the fuzzers and the plugins, which the sched, host and reply targets load (not the whole
    # tree: clang warns about some unit tests that gcc builds cleanly)
    local name targets=()
    for name in "${FUZZ_TARGETS[@]}"; do targets+=("tests/fuzz/$name-fuzzer"); done
    mapfile -t -O "${#targets[@]}" targets < <(ninja -C build-fuzz -t targets all |
        sed -n 's#^\(plugins/[^:]*\.so\): .*#\1#p')
    ninja -C build-fuzz "${targets[@]}"

    local work failed=()
    work=$(mktemp -d "${TMPDIR:-/tmp}/kcycle-fuzz.XXXXXX")
    for name in "${FUZZ_TARGETS[@]}"; do
        local artifacts=build-fuzz/fuzz-artifacts/$name corpus=$work/$name
        rm -rf "$artifacts"
        mkdir -p "$artifacts" "$corpus"
        cp tests/fuzz/corpus/"$name"/* "$corpus"/
        local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
                    -artifact_prefix="$artifacts/" -print_final_stats=1)
        [ -f tests/fuzz/dict/"$name".dict ] && args+=(-dict=tests/fuzz/dict/"$name".dict)
        log "fuzz: $name for ${seconds}s (log: $artifacts.log)"
        local rc=0 plugins=
        # host and reply unload plugins after each input, which libFuzzer cannot follow in
        # instrumented code: they load those of the ordinary build
        case $name in host | reply) plugins=$PWD/$BUILD/plugins ;; esac
        KCYCLE_PLUGIN_DIR=$plugins \
        ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" \
            "build-fuzz/tests/fuzz/$name-fuzzer" "${args[@]}" "$corpus" >"$artifacts.log" 2>&1 \
            || rc=$?
        grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done )' \
            "$artifacts.log" >&2 || true
        if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$artifacts")" ]; then
            tail -n 40 "$artifacts.log" >&2
            log "fuzz: $name FAILED (exit $rc); reproduce with:"
            log "  build-fuzz/tests/fuzz/$name-fuzzer $artifacts/<file>"
            failed+=("$name")
        fi
    done
    rm -rf "$work"
    if [ ${#failed[@]} -ne 0 ]; then
        log "fuzz: findings in: ${failed[*]}"
        exit 1
    fi
}

# The real control plane for tests/realkube (a test tool, never part of kcycle): kube-apiserver,
# kube-scheduler and kubectl from k8s.io/kubernetes and etcd from go.etcd.io/etcd/server/v3,
# built once with the machine's Go into a cache outside the tree and reused. The Go compiles
# run niced on one package at a time so that a shared machine keeps moving. Prints the folder.
KUBE_VERSION=$(sed -n 's#^[[:space:]]*k8s.io/kubernetes \(v[0-9.]*\)$#\1#p' tests/realkube/go.mod)
KUBE_BINARIES=(etcd kube-apiserver kube-scheduler kubectl)

kube() {
    local dir=${KCYCLE_KUBE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kcycle/kube-$KUBE_VERSION}
    local name missing=()
    for name in "${KUBE_BINARIES[@]}"; do
        [ -x "$dir/bin/$name" ] || missing+=("$name")
    done
    if [ ${#missing[@]} -ne 0 ]; then
        if ! command -v go >/dev/null; then
            log "kube: no Go toolchain on PATH; real-cluster tests skip"
            exit 3
        fi
        log "kube: building ${missing[*]} $KUBE_VERSION into $dir/bin (once; takes long)"
        mkdir -p "$dir/bin"
        local started=$SECONDS pkg pkgs=()
        for name in "${missing[@]}"; do
            case $name in
                etcd) pkg=./cmd/etcd ;;
                *) pkg=k8s.io/kubernetes/cmd/$name ;;
            esac
            pkgs+=("$pkg")
        done
        # Fetching the modules is what needs the proxy; a failure after that is a real one.
        if ! (cd tests/realkube && go list -deps "${pkgs[@]}" >/dev/null); then
            log "kube: cannot fetch the Go modules (GOPROXY=$(go env GOPROXY)); real-cluster tests skip"
            exit 3
        fi
        # go build -o DIR takes several main packages at once and shares the compile work.
        # KCYCLE_GO_PROCS=1 keeps a shared machine responsive; by default the build uses
        # every core (on a fresh CI machine this is most of the real-cluster suite's time)
        local procs=${KCYCLE_GO_PROCS:-$(nproc)}
        (cd tests/realkube && GOMAXPROCS=$procs nice -n 10 \
            go build -p "$procs" -trimpath -ldflags='-s -w' -o "$dir/bin/" "${pkgs[@]}")
        log "kube: built in $((SECONDS - started))s"
    fi
    echo "$dir/bin"
}

# SchedulingBasic side by side (docs/benchmarks.md): kube-scheduler's own scheduler_perf,
# built here as a test binary beside the control plane, then kube-scheduler and kcycle
# through a real API server on the same objects. Prints one JSON object.
kube_perf() {
    build
    local bin
    bin=$(kube)
    local test=$bin/scheduler_perf_misc.test
    if [ ! -x "$test" ]; then
        log "kube-perf: building scheduler_perf into $test (once)"
        (cd tests/realkube && GOMAXPROCS=${KCYCLE_GO_PROCS:-2} nice -n 19 \
            go test -c -vet=off -p 1 -trimpath -ldflags='-s -w' -o "$test" \
            k8s.io/kubernetes/test/integration/scheduler_perf/misc)
    fi
    KCYCLE_KUBE_BIN=$bin python3 tests/realkube/perf_side_by_side.py \
        --scheduler "$BUILD/runtime/scheduler/kcycle-scheduler" \
        --bridge "$BUILD/runtime/kube-bridge/kcycle-kube-bridge" \
        --source . --perf-test "$test" "$@"
}

case "${1:-}" in
    deps) deps ;;
    build) build ;;
    demo) demo ;;
    test) shift; run_tests "$@" ;;
    sanitize) shift; sanitize "$@" ;;
    bench) shift; bench "$@" ;;
    fuzz) shift; fuzz "$@" ;;
    soak) shift; soak "$@" ;;
    kube) kube ;;
    realkube) shift; realkube "$@" ;;
    kube-perf) shift; kube_perf "$@" ;;
    *)
        echo "usage: ./dev.sh deps|build|demo|test|sanitize|bench|fuzz [seconds]|soak|kube|realkube|kube-perf" >&2
        exit 2
        ;;
esac
