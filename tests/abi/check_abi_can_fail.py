#!/usr/bin/env python3
"""The ABI layout check can fail (docs/ABI.md): scratch builds of tests/abi/layout.c against
copies of the current headers with a deliberate layout change to a public struct must make
`check_abi.py layout` fail against each frozen release, and the unchanged copy must pass (so a
failure comes from the change, not from the scratch build).

  check_abi_can_fail.py CC... -- CHECK_ABI LAYOUT_C INCLUDE_DIR FROZEN_LAYOUT_EXE...

CC... is the build's whole compiler command (meson's cmd_array(): a wrapper, flags).
"""
import os
import shutil
import subprocess
import sys
import tempfile

# Each breakage: (what, header, text to find, its replacement). Every one is a change that
# docs/ABI.md forbids within a major.
BREAKAGES = [
    ('a member inserted in the middle of kc_host_api', 'host.h',
     '    /* Resources: id of a name',
     '    void *inserted;\n    /* Resources: id of a name'),
    ('a kc_taint member that changes size', 'host.h',
     '    kc_taint_effect effect;\n    const char *key;',
     '    uint64_t effect;\n    const char *key;'),
    ('two kc_plugin_ops members swapped', 'plugin.h',
     '    kc_status (*pre_filter)(void *self, kc_cycle *cycle, const kc_pod *pod);\n'
     '    kc_status (*filter)(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node);',
     '    kc_status (*filter)(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node);\n'
     '    kc_status (*pre_filter)(void *self, kc_cycle *cycle, const kc_pod *pod);'),
    ('an enum value renumbered', 'status.h',
     '    KC_UNRESOLVABLE = 2,', '    KC_UNRESOLVABLE = 7,'),
]


def scratch_layout(cc, layout_c, include_dir, scratch, breakage):
    headers = os.path.join(scratch, 'include')
    shutil.copytree(include_dir, headers)
    if breakage is not None:
        _, header, find, replace = breakage
        path = os.path.join(headers, 'kcycle', header)
        text = open(path).read()
        if find not in text:
            raise SystemExit('%s: the text to change is gone from %s; update this test' % (
                breakage[0], header))
        open(path, 'w').write(text.replace(find, replace, 1))
    exe = os.path.join(scratch, 'layout')
    subprocess.run(cc + ['-std=c11', '-I', headers, '-o', exe, layout_c], check=True)
    return exe


def layout_check(check_abi, frozen, exe):
    run = subprocess.run([sys.executable, check_abi, 'layout', frozen, exe],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return run.returncode, run.stdout.strip().splitlines()


def main(argv):
    if '--' not in argv[1:]:
        raise SystemExit(__doc__)
    split = argv.index('--')
    cc = argv[1:split]
    check_abi, layout_c, include_dir = argv[split + 1:split + 4]
    frozen_exes = argv[split + 4:]
    failures = 0
    for breakage in [None] + BREAKAGES:
        with tempfile.TemporaryDirectory() as scratch:
            exe = scratch_layout(cc, layout_c, include_dir, scratch, breakage)
            for frozen in frozen_exes:
                rc, out = layout_check(check_abi, frozen, exe)
                what = breakage[0] if breakage else 'the unchanged headers'
                first = out[0] if out else ''
                print('%s vs %s: exit %d %s' % (what, os.path.basename(frozen), rc, first))
                if (breakage is None) != (rc == 0):
                    print('  WRONG: want %s' % ('a pass' if breakage is None else 'a failure'))
                    failures += 1
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
