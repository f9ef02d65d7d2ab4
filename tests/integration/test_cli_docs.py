#!/usr/bin/env python3
"""Every flag of every installed program is in its --help and in the OPTIONS section of its man
page, and neither documents a flag the program does not have.

The flags a program has are read from its source (the getopt_long option table, the getopt
optstring's short flags, and the strcmp(argv[i], "--flag") or "-x" of a hand-written parser),
so a flag missing from --help is caught too. A flag counts as documented only where an entry
starts with it: an indented --help line that begins with it, or the tag line after a .TP in
OPTIONS; naming it in prose does not count, and a self-test removes each entry from a copy and
expects the check to fail. The installed programs are those meson installs into bindir
(meson-info's intro-installed.json): each must be listed here with its source, have
docs/man/NAME.1, and answer --version with the project's version, which the man page's .TH
line must show too.

To add a flag: put it in the option table, as an entry line in usage() (--help), and as a .TP
entry in the OPTIONS section of docs/man/PROGRAM.1 (flags written \\-\\-name in roff).

usage: test_cli_docs.py --build DIR --source DIR --version V NAME=BINARY=SOURCE.c...
"""
import argparse
import json
import os
import re
import subprocess
import sys

FAILURES = []
PASSED = [0]
# a long flag anywhere in a text (prose included): only for "documents a flag it lacks"
LONG_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
# the flags that start an entry: "-v, --verbose", "--simulate FILE"
ENTRY_FLAG = re.compile(r"(?<![\w-])(--?[a-zA-Z][a-zA-Z0-9]*(?:-[a-zA-Z0-9]+)*)")


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def source_flags(path):
    """A program's flags, written as on the command line ("--help", "-v"): the getopt_long
    table's long options, the getopt optstring's letters, and strcmp against "--x" or "-x"."""
    with open(path) as f:
        text = f.read()
    table = re.findall(r'\{\s*"([a-z][a-z0-9-]*)"\s*,\s*(?:no|required|optional)_argument', text)
    compared = re.findall(r'strn?cmp\s*\([^;]*?"(--?[a-zA-Z][a-zA-Z0-9-]*)"', text)
    flags = {"--" + name for name in table} | set(compared)
    for optstring in re.findall(r'getopt(?:_long)?\s*\(\s*\w+\s*,\s*\w+\s*,\s*"([^"]*)"', text):
        flags |= {"-" + letter for letter in re.sub(r"[^a-zA-Z0-9]", "", optstring)}
    return flags


def help_entry_flags(text):
    """Flags that start an entry of --help: an indented line that begins with '-', its flags up
    to the first gap of two spaces (where the description starts). Prose does not count."""
    flags = set()
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped != line and stripped.startswith("-"):
            flags |= set(ENTRY_FLAG.findall(re.split(r"\s{2,}", stripped)[0]))
    return flags


def roff_text(path):
    """The man page as plain text: roff escapes for '-' and fonts taken out."""
    with open(path) as f:
        text = f.read()
    text = re.sub(r"\\f[BIRP]|\\f\(..|\\&", "", text)
    return text.replace("\\-", "-")


def options_section(text):
    """The lines between .SH OPTIONS and the next .SH; None when there is no such section."""
    match = re.search(r"^\.SH OPTIONS\s*$(.*?)(?=^\.SH )", text, re.M | re.S)
    return match.group(1) if match else None


def man_entry_flags(options):
    """Flags of the OPTIONS section's entries: the tag line right after each .TP
    (".BR -v , --verbose", ".BI --simulate FILE"); flags named in a description do not count."""
    lines = options.splitlines()
    flags = set()
    for i, line in enumerate(lines[:-1]):
        if line.strip() == ".TP":
            tag = re.sub(r"^\.[A-Z]+\s*", "", lines[i + 1])
            flags |= set(ENTRY_FLAG.findall(tag.replace('"', " ")))
    return flags


def undocumented(flags, documented):
    """The program's flags without an entry."""
    return sorted(flags - documented)


def without_entry(text, flag, man):
    """text with the entry of flag taken out (the --help line, or the .TP and its tag line): the
    self-test's copy, whose check must then fail."""
    lines, out, skip = text.splitlines(), [], 0
    for i, line in enumerate(lines):
        if skip:
            skip -= 1
            continue
        if man and line.strip() == ".TP" and i + 1 < len(lines) and \
                flag in man_entry_flags(".TP\n" + lines[i + 1]):
            skip = 1
            continue
        if not man and flag in help_entry_flags(line):
            continue
        out.append(line)
    return "\n".join(out)


def self_test(name, flags, help_text, options):
    """For every flag, a copy of --help and of OPTIONS without its entry must fail the check,
    even where the flag is still named in prose (usage lines, other entries' descriptions)."""
    missed = []
    for flag in sorted(flags):
        if flag not in undocumented(flags, help_entry_flags(without_entry(help_text, flag, False))):
            missed.append("--help " + flag)
        if options is not None and flag not in undocumented(
                flags, man_entry_flags(without_entry(options, flag, True))):
            missed.append(".TP " + flag)
    check(not missed, f"{name}: self-test: removing an entry is caught ({missed})")


def installed_programs(build):
    with open(os.path.join(build, "meson-info", "intro-installed.json")) as f:
        installed = json.load(f)
    return {os.path.basename(dest) for dest in installed.values()
            if os.path.basename(os.path.dirname(dest)) == "bin"}


def check_program(name, binary, source, man_dir, version):
    flags = source_flags(source)
    check(len(flags) >= 3, f"{name}: flags found in {source}: {sorted(flags)}")
    for must in ("--help", "--version", "-h"):
        check(must in flags, f"{name}: has {must}")
    run = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    check(run.returncode == 0 and run.stdout, f"{name} --help: exit 0 with the usage on stdout")
    help_text = run.stdout
    help_flags = help_entry_flags(help_text)
    for flag in undocumented(flags, help_flags):
        check(False, f"{name}: {flag} has no entry in --help")
    for flag in sorted(help_flags - flags):
        check(False, f"{name}: --help has an entry for {flag}, which the program does not have")
    for flag in sorted({"--" + f for f in LONG_FLAG.findall(help_text)} - flags):
        check(False, f"{name}: --help names {flag}, which the program does not have")
    run = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    check(run.returncode == 0 and run.stdout.startswith(f"{name} {version}"),
          f"{name} --version: '{name} {version}...', got '{run.stdout.strip()}'")
    man = os.path.join(man_dir, name + ".1")
    if not os.path.exists(man):
        check(False, f"{name}: no man page {man}")
        return
    text = roff_text(man)
    check(re.search(r"^\.TH " + re.escape(name.upper()) + r" 1 ", text, re.M) is not None,
          f"{name}.1: .TH {name.upper()} 1")
    # the page's version is the program's (in full, or its major.minor)
    shown = run.stdout.split()[1] if len(run.stdout.split()) > 1 else ""
    th = re.search(r'^\.TH \S+ 1 "[^"]*" "kcycle ([^"]+)"', text, re.M)
    check(th is not None and shown and th.group(1) in (shown, ".".join(shown.split(".")[:2])),
          f"{name}.1: .TH says 'kcycle {th.group(1) if th else '?'}', --version says {shown}")
    options = options_section(text)
    self_test(name, flags, help_text, options)
    if options is None:
        check(False, f"{name}.1: no OPTIONS section")
        return
    man_flags = man_entry_flags(options)
    for flag in undocumented(flags, man_flags):
        check(False, f"{name}: {flag} has no .TP entry in the OPTIONS of {name}.1")
    for flag in sorted(man_flags - flags):
        check(False, f"{name}.1 has an entry for {flag}, which the program does not have")
    for flag in sorted({"--" + f for f in LONG_FLAG.findall(options)} - flags):
        check(False, f"{name}.1 names {flag}, which the program does not have")
    check(flags <= help_flags and flags <= man_flags,
          f"{name}: all {len(flags)} flags have an entry in --help and {name}.1")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("programs", nargs="+", help="NAME=BINARY=SOURCE")
    args = parser.parse_args()
    man_dir = os.path.join(args.source, "docs", "man")
    programs = {}
    for spec in args.programs:
        name, binary, source = spec.split("=", 2)
        programs[name] = (binary, source)
    installed = installed_programs(args.build)
    check(installed == set(programs),
          f"the programs tested {sorted(programs)} are those installed {sorted(installed)}")
    pages = {f[:-2] for f in os.listdir(man_dir) if f.endswith(".1")}
    check(pages == installed, f"a man page per installed program: {sorted(pages)}")
    for name, (binary, source) in sorted(programs.items()):
        check_program(name, binary, source, man_dir, args.version)
    print(f"{PASSED[0]} checks passed, {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
