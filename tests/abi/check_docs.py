#!/usr/bin/env python3
"""Every public symbol of the SDK has its reference page (docs/sdk/), and every function's page
says which phases may call it, in agreement with docs/sdk/phases.md (docs/ABI.md).

  check_docs.py SOURCE_ROOT             check the tree
  check_docs.py SOURCE_ROOT --can-fail  prove the check fails: run it on scratch copies of the
                                        docs with one page removed, one PHASES section removed
                                        and one table row changed; each must fail
"""
import glob
import os
import re
import shutil
import sys
import tempfile

PHASES = ['init', 'fini', 'on_event', 'PreEnqueue', 'QueueSort', 'group_of', 'PreFilter',
          'Filter', 'PostFilter', 'PreScore', 'Score', 'NormalizeScore', 'Reserve', 'Unreserve',
          'Permit', 'PreBind', 'Bind', 'PostBind']
SECTIONS = ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'PHASES', 'RETURN VALUE', 'ERRORS', 'EXAMPLE',
            'ADDED IN']


def public_symbols(include_dir):
    functions, types, macros = set(), set(), set()
    for path in sorted(glob.glob(os.path.join(include_dir, 'kcycle', '*.h'))):
        text = open(path).read()
        functions |= set(re.findall(r'^(?:static inline|KC_API)[^;{]*?\b(kc_\w+)\s*\(', text,
                                    re.M))
        types |= set(re.findall(r'^typedef\b[^;]*?\b(kc_\w+)\s*;', text, re.M | re.S))
        types |= set(re.findall(r'^}\s*(kc_\w+)\s*;', text, re.M))
        macros |= set(re.findall(r'^#define\s+(KC_\w+)', text, re.M))
    return functions, types, macros


def sections(text):
    found = {}
    for m in re.finditer(r'^## (.+?)\n(.*?)(?=^## |\Z)', text, re.M | re.S):
        found[m.group(1).strip()] = m.group(2).strip()
    return found


def page_phases(text):
    """The phases a PHASES section allows: 'Any: ...' is all, 'None: ...' is none."""
    if text.startswith('Any:'):
        return set(PHASES)
    if text.startswith('None:'):
        return set()
    first = text.split('.')[0]
    names = [n.strip() for n in first.split(',')]
    unknown = [n for n in names if n not in PHASES]
    if unknown:
        raise ValueError('unknown phase(s) %s' % unknown)
    return set(names)


def table(docs_dir):
    rows = {}
    path = os.path.join(docs_dir, 'phases.md')
    if not os.path.exists(path):
        return None
    header = None
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if cells and cells[0] == 'function':
            header = cells[1:]
            continue
        m = re.match(r'\[(kc_\w+)\]', cells[0]) if cells else None
        if m and header:
            rows[m.group(1)] = {header[i] for i, c in enumerate(cells[1:]) if c == 'x'}
    if header != PHASES:
        raise ValueError('phases.md: the columns are %s, want %s' % (header, PHASES))
    return rows


def check(root, docs_dir):
    errors = []
    functions, types, macros = public_symbols(os.path.join(root, 'sdk', 'include'))
    if len(functions) < 50:
        errors.append('only %d public functions found: is %s the source root?' % (
            len(functions), root))
    pages = {os.path.basename(p)[:-3]: open(p).read()
             for p in glob.glob(os.path.join(docs_dir, '*.md'))}
    everything = '\n'.join(pages.values())
    try:
        rows = table(docs_dir)
    except ValueError as e:
        errors.append(str(e))
        rows = {}
    if rows is None:
        errors.append('docs/sdk/phases.md is missing')
        rows = {}
    for fn in sorted(functions):
        if fn not in pages:
            errors.append('%s: no page docs/sdk/%s.md' % (fn, fn))
            continue
        found = sections(pages[fn])
        missing = [s for s in SECTIONS if s not in found]
        if missing:
            errors.append('%s.md: no section(s) %s' % (fn, ', '.join(missing)))
        if fn not in found.get('SYNOPSIS', ''):
            errors.append('%s.md: the SYNOPSIS does not declare %s' % (fn, fn))
        if 'PHASES' not in found or not found['PHASES']:
            continue
        try:
            allowed = page_phases(found['PHASES'])
        except ValueError as e:
            errors.append('%s.md: PHASES: %s' % (fn, e))
            continue
        if not allowed:
            if fn in rows:
                errors.append('%s: PHASES says None but phases.md has a row' % fn)
        elif fn not in rows:
            errors.append('%s: no row in docs/sdk/phases.md' % fn)
        elif rows[fn] != allowed:
            errors.append('%s: the page allows %s, phases.md %s' % (
                fn, sorted(allowed), sorted(rows[fn])))
    for fn in sorted(set(rows) - functions):
        errors.append('phases.md: a row for %s, which no header declares' % fn)
    # A type has its page, or its declaration is in the SYNOPSIS of another page.
    synopses = '\n'.join(sections(t).get('SYNOPSIS', '') for t in pages.values())
    for ty in sorted(types):
        if ty not in pages and not re.search(r'\b%s\b' % ty, synopses):
            errors.append('%s: no page and no SYNOPSIS declares it' % ty)
    for macro in sorted(macros):
        if not re.search(r'\b%s\b' % macro, everything):
            errors.append('%s: no page mentions it' % macro)
    return errors, len(functions), len(types), len(macros)


def can_fail(root, docs_dir):
    """Each breakage of a scratch copy must be caught."""
    def drop_page(d):
        os.remove(os.path.join(d, 'kc_cycle_delete.md'))

    def drop_phases(d):
        p = os.path.join(d, 'kc_logf.md')
        text = re.sub(r'^## PHASES\n.*?(?=^## )', '', open(p).read(), flags=re.M | re.S)
        open(p, 'w').write(text)

    def change_row(d):
        p = os.path.join(d, 'phases.md')
        lines = open(p).read().split('\n')
        for i, line in enumerate(lines):
            if line.startswith('| [kc_cycle_set]'):
                cells = line.split('|')
                cells[9] = ' x '  # Filter: not allowed for kc_cycle_set
                lines[i] = '|'.join(cells)
        open(p, 'w').write('\n'.join(lines))

    ok = True
    for breakage in (drop_page, drop_phases, change_row):
        with tempfile.TemporaryDirectory() as scratch:
            copy = os.path.join(scratch, 'sdk')
            shutil.copytree(docs_dir, copy)
            breakage(copy)
            errors = check(root, copy)[0]
            print('%s: %d error(s)%s' % (breakage.__name__, len(errors),
                                         ': ' + errors[0] if errors else ''))
            ok &= len(errors) > 0
    return ok


def main():
    root = sys.argv[1]
    docs_dir = os.path.join(root, 'docs', 'sdk')
    if len(sys.argv) > 2 and sys.argv[2] == '--can-fail':
        if not can_fail(root, docs_dir):
            print('a broken copy of the docs passed the check')
            return 1
        return 0
    errors, functions, types, macros = check(root, docs_dir)
    for e in errors:
        print(e)
    print('%d functions, %d types, %d macros: %d problem(s)' % (functions, types, macros,
                                                                 len(errors)))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
