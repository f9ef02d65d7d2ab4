#!/usr/bin/env python3
"""Every flag of every installed program is in its --help and in the OPTIONS section of its man
page, and neither documents a flag the program does not have.

The flags a program has are read from its source (the getopt_long option table, and the
strcmp(argv[i], "--flag") of a hand-written parser), so a flag missing from --help is caught
too. The installed programs are those meson installs into bindir (meson-info's
intro-installed.json): each must be listed here with its source, have docs/man/NAME.1, and
answer --version with the project's version.

To add a flag: put it in the option table, in usage() (--help), and as a .TP entry in the
OPTIONS section of docs/man/PROGRAM.1 (flags written \\-\\-name in roff).

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
FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def source_flags(path):
    """Long options of a program's source: getopt_long tables and strcmp against "--x"."""
    with open(path) as f:
        text = f.read()
    table = re.findall(r'\{\s*"([a-z][a-z0-9-]*)"\s*,\s*(?:no|required|optional)_argument', text)
    compared = re.findall(r'strn?cmp\s*\([^;]*?"--([a-z][a-z0-9-]*)"', text)
    return set(table) | set(compared)


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


def installed_programs(build):
    with open(os.path.join(build, "meson-info", "intro-installed.json")) as f:
        installed = json.load(f)
    return {os.path.basename(dest) for dest in installed.values()
            if os.path.basename(os.path.dirname(dest)) == "bin"}


def check_program(name, binary, source, man_dir, version):
    flags = source_flags(source)
    check(len(flags) >= 3, f"{name}: flags found in {source}: {sorted(flags)}")
    for must in ("help", "version"):
        check(must in flags, f"{name}: has --{must}")
    run = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    check(run.returncode == 0 and run.stdout, f"{name} --help: exit 0 with the usage on stdout")
    help_flags = set(FLAG.findall(run.stdout))
    for flag in sorted(flags - help_flags):
        check(False, f"{name}: --{flag} is not in --help")
    for flag in sorted(help_flags - flags):
        check(False, f"{name}: --help documents --{flag}, which the program does not have")
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
    options = options_section(text)
    if options is None:
        check(False, f"{name}.1: no OPTIONS section")
        return
    man_flags = set(FLAG.findall(options))
    for flag in sorted(flags - man_flags):
        check(False, f"{name}: --{flag} is not in the OPTIONS of {name}.1")
    for flag in sorted(man_flags - flags):
        check(False, f"{name}.1 documents --{flag}, which the program does not have")
    check(flags <= help_flags and flags <= man_flags,
          f"{name}: all {len(flags)} flags in --help and {name}.1")


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
