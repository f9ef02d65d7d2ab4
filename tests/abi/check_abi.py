#!/usr/bin/env python3
"""ABI checks run by meson test (suite 'abi').

  check_abi.py layout FROZEN_EXE CURRENT_EXE
      Runs tests/abi/layout.c built against a frozen copy of released headers (SDK 1.0,
      1.1) and against the current ones, and checks the current SDK kept every promise of
      that release: each member at the same offset with the same size, each struct the same
      size or larger, each ABI constant unchanged (or only raised, for the few that may grow).

  check_abi.py frozen DIR
      Checks DIR/kcycle/*.h still match DIR/SHA256SUMS: the frozen copy is only useful while
      nobody edits it.
"""

import hashlib
import pathlib
import subprocess
import sys


def facts(exe):
    """Map of (kind, name) -> list of numbers or text, from one run of the layout program."""
    out = subprocess.run([exe], check=True, capture_output=True, text=True, timeout=30).stdout
    result = {}
    for line in out.splitlines():
        kind, name, *values = line.split(' ', 2) if line.startswith('string ') else line.split()
        result[(kind, name)] = values if kind == 'string' else [int(v) for v in values]
    return result


def check_layout(frozen_exe, current_exe):
    frozen, current = facts(frozen_exe), facts(current_exe)
    problems = []
    for key, old in sorted(frozen.items()):
        kind, name = key
        new = current.get(key)
        if new is None:
            problems.append(f'{kind} {name}: present in the frozen SDK, missing now')
        elif kind == 'struct' and new[0] < old[0]:
            problems.append(f'struct {name} shrank from {old[0]} to {new[0]} bytes: structs may '
                            'only grow at the end')
        elif kind == 'member' and new != old:
            problems.append(f'member {name}: the frozen SDK has offset {old[0]} size {old[1]}, now '
                            f'offset {new[0]} size {new[1]}: released members must not move or '
                            'change type; '
                            'append new members at the end instead')
        elif kind == 'growing' and new[0] < old[0]:
            problems.append(f'{name} went down from {old[0]} to {new[0]}: it may only grow')
        elif kind in ('constant', 'type', 'string') and new != old:
            problems.append(f'{kind} {name}: the frozen SDK has {old}, now {new}: a value '
                            'plugins compile in must never change')
    checked = len(frozen)
    if problems:
        print(f'ABI check failed ({len(problems)} of {checked} facts):')
        for problem in problems:
            print('  ' + problem)
        return 1
    print(f'ABI layout: all {checked} facts of the frozen SDK hold in the current headers')
    return 0


def check_frozen(directory):
    root = pathlib.Path(directory)
    sums = {}
    for line in (root / 'SHA256SUMS').read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.strip()] = digest
    present = {str(p.relative_to(root)) for p in (root / 'kcycle').glob('*.h')}
    problems = []
    for name in sorted(set(sums) | present):
        if name not in present:
            problems.append(f'{name}: listed in SHA256SUMS but missing')
        elif name not in sums:
            problems.append(f'{name}: not part of the frozen SDK (not in SHA256SUMS)')
        elif hashlib.sha256((root / name).read_bytes()).hexdigest() != sums[name]:
            problems.append(f'{name}: edited; frozen headers must stay byte-for-byte '
                            'as released (change sdk/include/kcycle instead)')
    if problems:
        print(f'frozen SDK copy {directory} changed:')
        for problem in problems:
            print('  ' + problem)
        return 1
    print(f'frozen SDK copy {root.name} intact ({len(sums)} headers)')
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == 'layout':
        return check_layout(argv[2], argv[3])
    if len(argv) == 3 and argv[1] == 'frozen':
        return check_frozen(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
