#!/bin/sh
# The exe_wrapper of `meson test --setup valgrind`: runs a C test program under valgrind's
# memcheck, and a Python test harness (integration tests) as itself, with every C program it
# is given on its command line (kcycle-scheduler, kcycle-kube-bridge, probes) replaced by a
# shim that runs that program under valgrind. Valgrind follows the programs' own children
# (plugin hosts), not the interpreter. Errors and definite leaks exit 99 (see
# docs/security.md); suppressions.supp holds third-party frames only, but for one libnng
# loss it documents.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
VALGRIND="valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
--show-leak-kinds=definite --track-fds=no --trace-children=yes \
--trace-children-skip=*python*,*/sh,*/bash,*/env,*/meson,*/ninja,*/cc,*/gcc,*/pkg-config,*/valgrind* \
--suppressions=$here/suppressions.supp --num-callers=30"
export KCYCLE_TEST_WRAPPER="$VALGRIND"

is_elf() {
    [ -f "$1" ] && [ -x "$1" ] && [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]
}

case "$(basename "$1")" in
python*)
    shims=$(mktemp -d "${TMPDIR:-/tmp}/kcycle-valgrind.XXXXXX")
    chmod 755 "$shims" # integration/hostile runs a program as another uid
    trap 'rm -rf "$shims"' EXIT
    interpreter=$1
    shift
    n=0
    for arg in "$@"; do
        if is_elf "$arg" && case "$arg" in *.so | *.so.*) false ;; *) true ;; esac; then
            n=$((n + 1))
            shim="$shims/$n/$(basename "$arg")"
            mkdir -p "$shims/$n"
            # absolute: harnesses run programs from other folders
            real="$(cd "$(dirname "$arg")" && pwd)/$(basename "$arg")"
            printf '#!/bin/sh\nexec %s %s "$@"\n' "$VALGRIND" "$real" >"$shim"
            chmod +x "$shim"
            arg=$shim
        fi
        set -- "$@" "$arg"
        shift
    done
    # not exec: the trap removes the shims afterwards
    rc=0
    "$interpreter" "$@" || rc=$?
    exit "$rc"
    ;;
*)
    exec $VALGRIND "$@"
    ;;
esac
