#!/usr/bin/env python3
"""The installed SDK is enough to build a third-party plugin out of tree, and the installed
scheduler loads it: `meson install --destdir` into a temporary directory, build
examples/hello-plugin against that staging tree with pkg-config only, then simulate a cluster
with the staged kcycle-scheduler, its staged plugins and hello.so, and check the report.

usage: test_install.py --build DIR --source DIR [--meson EXE]
Exit status 77 (skipped) when meson or pkg-config cannot be found.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

TIMEOUT_S = 30
BUILD_TIMEOUT_S = 120
SKIP = 77
FAILURES = []
PASSED = [0]

# hello's args in the config use a label other than its default, so the test also proves
# the args reached the plugin.
LABEL, VALUE = "example.com/fast-disk", "yes"
PREFERRED_NODES, PREFERRED_CAPACITY = 2, 4  # pods of 250m on 1-CPU nodes
OTHER_NODES = 2
POD_COUNT = 10


class Failed(Exception):
    pass


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def run(cmd, env=None, timeout=BUILD_TIMEOUT_S, cwd=None):
    """Run a step that must succeed; its output is shown only when it fails."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                              cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Failed(f"{' '.join(cmd)}: no result within {timeout} s")
    if done.returncode != 0:
        raise Failed(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def only_one(pattern, what):
    found = glob.glob(pattern, recursive=True)
    if len(found) != 1:
        raise Failed(f"expected one {what} ({pattern}), found {found}")
    return found[0]


def clean_env():
    """The caller's environment without anything that could point the build at another SDK
    or plugin directory, or make a nested meson think it runs inside this project."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PKG_CONFIG", "MESON", "KCYCLE_"))}
    for name in ("CPATH", "C_INCLUDE_PATH", "LD_LIBRARY_PATH"):
        env.pop(name, None)
    return env


def install(args, stage):
    run([args.meson, "install", "--no-rebuild", "--destdir", stage, "-C", args.build],
        env=clean_env())
    pc = only_one(os.path.join(stage, "**", "pkgconfig", "kcycle-sdk.pc"), "kcycle-sdk.pc")
    scheduler = only_one(os.path.join(stage, "**", "bin", "kcycle-scheduler"),
                         "installed kcycle-scheduler")
    return pc, scheduler


def sdk_env(stage, pc):
    """pkg-config sees only the staged .pc; the sysroot maps its un-prefixed paths (the .pc
    names the final prefix, not the destdir) into the staging tree."""
    env = clean_env()
    env["PKG_CONFIG_PATH"] = os.path.dirname(pc)
    env["PKG_CONFIG_LIBDIR"] = os.path.dirname(pc)
    env["PKG_CONFIG_SYSROOT_DIR"] = stage
    return env


def build_hello(args, tmp, stage, pc):
    env = sdk_env(stage, pc)
    include = run(["pkg-config", "--cflags-only-I", "kcycle-sdk"], env=env).stdout.split()
    check(any(flag.startswith("-I" + stage) for flag in include),
          f"pkg-config --cflags points into the staging tree, got {include}")
    builddir = os.path.join(tmp, "hello-build")
    run([args.meson, "setup", builddir, os.path.join(args.source, "examples", "hello-plugin"),
         "-Dwerror=true"], env=env)
    run([args.meson, "compile", "-C", builddir], env=env)
    hello = os.path.join(builddir, "hello.so")
    if not os.path.exists(hello):
        raise Failed(f"the hello plugin build produced no {hello}")
    with open(os.path.join(builddir, "compile_commands.json")) as f:
        commands = " ".join(entry["command"] for entry in json.load(f))
    check("-I" + os.path.join(stage, "") in commands,
          "hello.c was compiled against the staged headers")
    check(os.path.join(args.source, "sdk", "include") not in commands,
          "hello.c did not see the source tree's sdk/include")
    nm = shutil.which("nm")
    if nm is not None:
        symbols = run([nm, "-D", "--defined-only", hello], env=env).stdout.split()
        exported = sorted(s for s in symbols if s.startswith("kc_"))
        check(exported == ["kc_plugin_query"],
              f"hello.so exports only kc_plugin_query, got {exported}")
    return hello


def write_cluster(tmp):
    sim = os.path.join(tmp, "cluster.yaml")
    with open(sim, "w") as f:
        f.write("nodes:\n"
                f"  - name: fast\n    count: {PREFERRED_NODES}\n"
                "    allocatable: {cpu: 1, memory: 4Gi}\n"
                f"    labels: {{{LABEL}: \"{VALUE}\"}}\n"
                f"  - name: big\n    count: {OTHER_NODES}\n"
                "    allocatable: {cpu: 8, memory: 32Gi}\n"
                "    labels: {example.com/fast-disk: \"no\"}\n"
                "workload:\n"
                f"  - name: web\n    count: {POD_COUNT}\n    interval: 100ms\n"
                "    requests: {cpu: 250m, memory: 128Mi}\n")
    return sim


def write_config(tmp, hello):
    config = os.path.join(tmp, "config.yaml")
    text = ("plugins:\n"
            "  - name: prioritysort\n"
            "  - name: noderesources\n"
            "  - name: defaultbinder\n")
    if hello is not None:
        text += ("  - name: hello\n"
                 f"    path: {json.dumps(hello)}\n"
                 "    weight: 10\n"
                 f"    args: {{label: {json.dumps(LABEL)}, value: {json.dumps(VALUE)}}}\n")
    with open(config, "w") as f:
        f.write(text)
    return config


def simulate(scheduler, plugin_dir, config, sim, tmp, label):
    report = os.path.join(tmp, f"report-{label}.json")
    try:
        done = subprocess.run([scheduler, "--config", config, "--simulate", sim,
                               "--plugin-dir", plugin_dir, "--report", report, "--quiet"],
                              capture_output=True, text=True, timeout=TIMEOUT_S, cwd=tmp,
                              env=clean_env())
    except subprocess.TimeoutExpired:
        raise Failed(f"{label}: the scheduler did not finish within {TIMEOUT_S} s")
    if done.returncode != 0:
        raise Failed(f"{label}: kcycle-scheduler exit {done.returncode}: {done.stderr}")
    with open(report) as f:
        return json.load(f)


def placements(report):
    fast = sum(1 for p in report["pods"] if p["node"] and p["node"].startswith("fast-"))
    bound = sum(1 for p in report["pods"] if p["node"])
    return fast, bound


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--meson", default=None)
    args = parser.parse_args()
    args.build, args.source = os.path.abspath(args.build), os.path.abspath(args.source)
    args.meson = args.meson or shutil.which("meson")
    if args.meson is None or shutil.which("pkg-config") is None:
        print("meson or pkg-config not found: skipped")
        return SKIP

    tmp = tempfile.mkdtemp(prefix="kcycle-install-")
    try:
        stage = os.path.join(tmp, "stage")
        pc, scheduler = install(args, stage)
        plugindir = run(["pkg-config", "--variable=plugindir", "kcycle-sdk"],
                        env=sdk_env(stage, pc)).stdout.strip()
        # pkg-config leaves variables other than the standard paths un-sysrooted
        staged_plugins = plugindir if plugindir.startswith(stage) else stage + plugindir
        for name in ("prioritysort", "nodeports", "noderesources", "defaultbinder"):
            check(os.path.exists(os.path.join(staged_plugins, name + ".so")),
                  f"{name}.so installed into the plugindir the .pc names ({plugindir})")
        # every installed program comes with its man page (docs/man, install_man)
        programs = glob.glob(os.path.join(stage, "**", "bin", "*"), recursive=True)
        check(len(programs) >= 4, f"the four kcycle programs installed ({programs})")
        for program in programs:
            name = os.path.basename(program)
            pages = glob.glob(os.path.join(stage, "**", "man1", name + ".1"), recursive=True)
            check(len(pages) == 1, f"{name}: its man page installed in man1 ({pages})")
        hello = build_hello(args, tmp, stage, pc)
        print(f"staged {scheduler}; built {hello} against {pc}")

        sim = write_cluster(tmp)
        with_hello = simulate(scheduler, staged_plugins, write_config(tmp, hello), sim, tmp,
                              "with-hello")
        fast, bound = placements(with_hello)
        check(bound == POD_COUNT and with_hello["summary"]["unschedulable"] == 0,
              f"with hello: every pod bound, got {bound} of {POD_COUNT}")
        check(fast == PREFERRED_NODES * PREFERRED_CAPACITY,
              f"with hello: labelled nodes filled first ({PREFERRED_NODES * PREFERRED_CAPACITY} "
              f"pods), got {fast}")

        # The control run: without hello, LeastAllocated spreads onto the big nodes, so the
        # placement above is hello's doing.
        without = simulate(scheduler, staged_plugins, write_config(tmp, None), sim, tmp,
                           "without-hello")
        fast_without, bound_without = placements(without)
        print(f"pods on labelled nodes: {fast} of {bound} bound with hello, "
              f"{fast_without} of {bound_without} without")
        check(bound_without == POD_COUNT, f"without hello: every pod bound, got {bound_without}")
        check(fast_without < fast,
              f"without hello fewer pods go to labelled nodes ({fast_without} < {fast})")
    except Failed as failure:
        FAILURES.append(str(failure))
        print("FAIL: " + str(failure))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{PASSED[0]} passed, {len(FAILURES)} failed")
    return 1 if FAILURES or PASSED[0] == 0 else 0  # a run that checked nothing fails


if __name__ == "__main__":
    sys.exit(main())
