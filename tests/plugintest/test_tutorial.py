#!/usr/bin/env python3
"""docs/plugin-tutorial.md runs as written: every ```sh block, in order, as one bash script
from an empty temporary folder, using only the SDK that `meson install --destdir` staged
(pkg-config kcycle-sdk kcycle-plugintest, the staged programs on PATH). The script's own
checks (the simulator's placements, the harness test in both modes) decide; this test then
checks that both modes of the harness test ran and that the report exists. It also checks that
the install put every reference page in doc/kcycle/sdk/ and every symbol's man page in man3/.

usage: test_tutorial.py --build DIR --source DIR [--meson EXE]
Exit status 77 (skipped) when meson, pkg-config, cc or cmocka's pkg-config file are missing.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
SCRIPT_TIMEOUT_S = 300


# The staging helpers of the install test: the same clean environment and file lookups.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from test_install import Failed, clean_env, only_one  # noqa: E402


def one(pattern, what):
    try:
        return only_one(pattern, what)
    except Failed as failure:
        raise SystemExit(str(failure))


def installed_docs_missing(build, stage):
    """Every documentation file the build plans to install (its reference pages, listed when
    meson configured, as Markdown and man pages, and the guides) is in the stage. The plan,
    not a glob of docs/sdk/ now, is the reference: a page added since configure is not in the
    build until it reconfigures, and the test judges the install, not the checkout."""
    plan = json.load(open(os.path.join(build, "meson-info", "intro-installed.json")))
    docs = [path for path in plan.values()
            if "/doc/kcycle/" in path or re.search(r"/man3/(kc|KC)_\w+\.3$", path)]
    missing = [path for path in sorted(docs)
               if not os.path.exists(os.path.join(stage, path.lstrip(os.sep)))]
    pages = {os.path.basename(p)[:-3] for p in docs if "/doc/kcycle/sdk/" in p}
    mans = {os.path.basename(p)[:-2] for p in docs if "/man3/" in p}
    if not pages:
        missing.append("doc/kcycle/sdk/*.md (none in the build's install plan)")
    missing += ["man3/%s.3 (not in the build's install plan)" % name
                for name in sorted(pages - mans) if name.startswith(("kc_", "KC_"))]
    for guide in ("plugin-tutorial.md", "plugin-testing.md", "ABI.md"):
        if not any(p.endswith("/doc/kcycle/" + guide) for p in docs):
            missing.append("doc/kcycle/%s (not in the build's install plan)" % guide)
    return missing


def script_of(page):
    blocks = re.findall(r'^```sh\n(.*?)^```$', open(page).read(), re.M | re.S)
    if len(blocks) < 5:
        raise SystemExit(f"{page}: only {len(blocks)} sh blocks; is it the tutorial?")
    return "set -euo pipefail\n" + "\n".join(blocks)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--meson", default=None)
    args = parser.parse_args()
    meson = args.meson or shutil.which("meson")
    if meson is None or shutil.which("pkg-config") is None or shutil.which("cc") is None:
        print("meson, pkg-config or cc not found: skipped")
        return SKIP
    if subprocess.run(["pkg-config", "--exists", "cmocka"]).returncode != 0:
        print("cmocka's pkg-config file not found: skipped")
        return SKIP
    script = script_of(os.path.join(args.source, "docs", "plugin-tutorial.md"))
    tmp = tempfile.mkdtemp(prefix="kcycle-tutorial-")
    try:
        stage = os.path.join(tmp, "stage")
        done = subprocess.run([meson, "install", "--no-rebuild", "--destdir", stage, "-C",
                               os.path.abspath(args.build)], capture_output=True, text=True,
                              env=clean_env(), timeout=SCRIPT_TIMEOUT_S)
        if done.returncode != 0:
            print(done.stdout, done.stderr)
            return 1
        pc = one(os.path.join(stage, "**", "pkgconfig", "kcycle-plugintest.pc"),
                 "kcycle-plugintest.pc")
        bindir = os.path.dirname(one(os.path.join(stage, "**", "bin", "kcycle-scheduler"),
                                     "kcycle-scheduler"))
        libdir = os.path.dirname(one(os.path.join(stage, "**", "libkcycle-plugintest.so"),
                                     "libkcycle-plugintest.so"))
        plugins = os.path.dirname(one(os.path.join(stage, "**", "plugins", "defaultbinder.so"),
                                      "defaultbinder.so"))
        missing = installed_docs_missing(os.path.abspath(args.build), stage)
        if missing:
            print("FAIL: meson install did not install: " + ", ".join(missing[:10]))
            return 1
        env = clean_env()
        # A staged install stands where a real one would: its .pc files name the final prefix,
        # the sysroot maps them into the stage; the loader and the scheduler find the staged
        # library and plugins through the variables a real install does not need.
        env["PKG_CONFIG_PATH"] = os.path.dirname(pc)
        env["PKG_CONFIG_SYSROOT_DIR"] = stage
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
        env["LD_LIBRARY_PATH"] = libdir
        env["KCYCLE_PLUGIN_DIR"] = plugins
        # The harness's process mode prefers the host installed at the configured prefix over
        # the PATH's: a kcycle-plugin-host from an older install there would stand in for the
        # staged one. Name the staged one, as the harness's documented override allows.
        host = os.path.join(bindir, "kcycle-plugin-host")
        if not os.access(host, os.X_OK):
            print("FAIL: meson install did not stage kcycle-plugin-host next to kcycle-scheduler")
            return 1
        env["KCYCLE_PLUGIN_HOST"] = host
        work = os.path.join(tmp, "empty")
        os.mkdir(work)
        done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True,
                              text=True, timeout=SCRIPT_TIMEOUT_S)
        print(done.stdout)
        print(done.stderr, file=sys.stderr)
        if done.returncode != 0:
            print(f"FAIL: the tutorial's script exited {done.returncode}")
            return 1
        failures = []
        output = done.stdout + done.stderr
        # cmocka prints one summary per group: in-process, then process
        if output.count("[  PASSED  ] 4 test(s).") != 2:
            failures.append("the harness test did not pass its 4 tests in both modes")
        if not os.path.exists(os.path.join(work, "gpulabel", "report.json")):
            failures.append("no simulation report")
        for f in failures:
            print("FAIL: " + f)
        print(f"tutorial: {len(failures)} failure(s)")
        return 1 if failures else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
