#!/usr/bin/python3
"""Favor on Debian 13 (trixie): LibTorch 2.6 on the CPU, and the CUDA build.

Two stages, each a ctest test (tests/platform/CMakeLists.txt says which
label runs which):

  cpu   A trixie root (debootstrap, minbase, from this machine's own Debian
        mirror) with the build dependencies installed by
        scripts/install-deps.sh itself; the project configured in it, what
        touches LibTorch built (the attention and model libraries and
        their tests, the Attend runner's test, favor-server and
        favor-model) and the tests labelled `libtorch` run there. The rest
        of the project has no LibTorch in it: the host's suite covers it.
  cuda  A second root, the first one plus trixie's contrib and non-free
        (libtorch-cuda-dev 2.6, nvidia-cuda-toolkit with nvcc); the project
        configured with CUDA, then favor-server, favor-model, the attention
        and model tests and the benchmarks compiled and linked. Neither
        loaded nor run: no cuDNN and no GPU here (it says so in one line).

Both roots live outside the source tree, in $XDG_CACHE_HOME/favor (default
~/.cache/favor), named by a hash of scripts/install-deps.sh and of the
recipe below, so that a change to either makes them anew (older ones are
removed). ccache's cache is there too, bind-mounted into the chroot. Every
step prints its time: a cold run (no root, empty ccache) and a warm one can
be told apart from the output.

Needs root (debootstrap, chroot, mounts): without it the test fails, it
never skips.

Usage: trixie_test.py cpu|cuda SOURCE_DIR WORK_DIR
"""
import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time

SUITE = "trixie"
# What a root is made of besides install-deps.sh: a change here makes the
# roots anew (the hash below covers it).
CPU_RECIPE = "debootstrap --variant=minbase --include=ca-certificates; main"
CUDA_PACKAGES = ["libtorch-cuda-dev", "nvidia-cuda-toolkit"]
CUDA_RECIPE = f"main contrib non-free; {' '.join(CUDA_PACKAGES)}"
# The one package allowed to fail its configuration in the CUDA root: it
# downloads cuDNN from NVIDIA's site, which a sandbox may not reach.
CUDA_DOWNLOADER = "nvidia-cudnn"
# Sandbox only (the link ignores cuDNN's missing symbols; favor-model init
# is not run where it cannot load): given to CMake here, never by the
# project's own CMake files.
CUDA_SANDBOX_CMAKE = "/favor/src/tests/platform/cuda_sandbox.cmake"
# What the CUDA stage compiles and links (Ninja targets; dir/all builds a
# folder's targets).
CUDA_TARGETS = ["favor_server", "favor_model_cli", "tests/attention/all",
                "tests/model/all", "service_attend_runner_test", "bench/all"]
# What the CPU stage builds (Ninja targets) and runs (a ctest label): what
# touches LibTorch.
CPU_TARGETS = ["favor_server", "favor_model_cli", "tests/attention/all",
               "tests/model/all", "service_attend_runner_test"]
CPU_LABEL = "libtorch"


def log(message):
    print(f"trixie_test: {message}", flush=True)


def fail(message):
    log(f"FAILED: {message}")
    sys.exit(1)


class Timer:
    """The times of the named steps, printed last as a table."""

    def __init__(self):
        self.rows = []

    def run(self, name, function, *args):
        start = time.monotonic()
        result = function(*args)
        seconds = time.monotonic() - start
        note = result if isinstance(result, str) else ""
        self.rows.append((name, seconds, note))
        log(f"{name}: {seconds:.0f} s {note}".rstrip())
        return result

    def print(self):
        log("summary:")
        for name, seconds, note in self.rows:
            print(f"  {name:<28} {seconds:7.0f} s  {note}", flush=True)
        total = sum(seconds for _, seconds, _ in self.rows)
        print(f"  {'total':<28} {total:7.0f} s", flush=True)


def mirror_uri():
    """The Debian archive this machine's apt uses: the URI of the source for
    the host's own release (deb822 .sources first, then sources.list)."""
    with open("/etc/os-release") as f:
        codename = re.search(r"^VERSION_CODENAME=\"?(\w+)", f.read(), re.M)
    codename = codename.group(1) if codename else ""
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path) as f:
            for stanza in re.split(r"\n\s*\n", f.read()):
                fields = dict(re.findall(r"^([\w-]+):\s*(.*)$", stanza, re.M))
                if ("deb" in fields.get("Types", "").split() and
                        codename in fields.get("Suites", "").split() and
                        fields.get("Enabled", "yes") != "no"):
                    return fields["URIs"].split()[0]
    lists = ["/etc/apt/sources.list"] + sorted(
        glob.glob("/etc/apt/sources.list.d/*.list"))
    for path in filter(os.path.isfile, lists):
        with open(path) as f:
            for line in f:
                words = re.sub(r"\[[^]]*\]", "", line.split("#")[0]).split()
                if len(words) >= 3 and words[0] == "deb" and words[2] == codename:
                    return words[1]
    fail(f"no apt source for this machine's release ({codename or 'unknown'}) "
         "in /etc/apt: the trixie root is fetched from the same mirror")


class Roots:
    """The cached roots and ccache folder under $XDG_CACHE_HOME/favor."""

    def __init__(self, source_dir):
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        self.dir = os.path.join(base, "favor")
        self.source_dir = source_dir
        self.ccache = os.path.join(self.dir, "ccache-trixie")
        os.makedirs(self.ccache, exist_ok=True)
        with open(os.path.join(source_dir, "scripts/install-deps.sh"), "rb") as f:
            deps = f.read()
        self.cpu_key = hashlib.sha256(deps + CPU_RECIPE.encode()).hexdigest()[:12]
        self.cuda_key = hashlib.sha256(
            (self.cpu_key + CUDA_RECIPE).encode()).hexdigest()[:12]

    def path(self, kind):
        key = self.cpu_key if kind == "cpu" else self.cuda_key
        return os.path.join(self.dir, f"{SUITE}-{kind}-{key}")

    def lock(self):
        """Held for the whole test: two runs at once would build the same
        root twice and share ccache's statistics."""
        self.lock_file = open(os.path.join(self.dir, f"{SUITE}.lock"), "w")
        fcntl.flock(self.lock_file, fcntl.LOCK_EX)

    def remove_stale(self, kind):
        keep = self.path(kind)
        for old in glob.glob(os.path.join(self.dir, f"{SUITE}-{kind}-*")):
            if old != keep:
                log(f"removing the outdated root {old}")
                shutil.rmtree(old, ignore_errors=True)


def run(argv, what, log_path=None, ok_codes=(0,)):
    """argv, its output to the terminal or to log_path; fails on a bad exit."""
    if log_path is None:
        code = subprocess.run(argv).returncode
    else:
        with open(log_path, "w") as out:
            code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT).returncode
    if code not in ok_codes:
        tail = ""
        if log_path:
            with open(log_path, errors="replace") as f:
                tail = f":\n{f.read()[-6000:]}"
        fail(f"{what} failed (exit {code}){tail}")
    return code


class Chroot:
    """Commands in a root through chroot_run.sh (mounts undone by its trap)."""

    def __init__(self, root, binds=(), env=()):
        self.helper = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                   "chroot_run.sh")
        self.prefix = [self.helper, root]
        for bind in binds:
            self.prefix += ["--bind", bind]
        for item in env:
            self.prefix += ["--env", item]

    def argv(self, *command):
        return self.prefix + ["--", *command]

    def sh(self, script, what, log_path=None, ok_codes=(0,)):
        return run(self.argv("/bin/bash", "-euo", "pipefail", "-c", script),
                   what, log_path, ok_codes)


def debootstrap(root, mirror, work_dir):
    if shutil.which("debootstrap") is None:
        fail("debootstrap is not installed (scripts/install-deps.sh installs it)")
    run(["debootstrap", "--variant=minbase", "--include=ca-certificates",
         SUITE, root, mirror], "debootstrap", os.path.join(work_dir, "debootstrap.log"))
    # No service starts in the root (prometheus's postinst would try).
    policy = os.path.join(root, "usr/sbin/policy-rc.d")
    with open(policy, "w") as f:
        f.write("#!/bin/sh\nexit 101\n")
    os.chmod(policy, 0o755)
    return f"({SUITE}, minbase, from {mirror})"


def install_deps(root, source_dir, work_dir):
    chroot = Chroot(root, binds=[f"{source_dir}:/favor/src"])
    chroot.sh("/favor/src/scripts/install-deps.sh", "install-deps.sh in the root",
              os.path.join(work_dir, "install-deps.log"))
    return "(scripts/install-deps.sh)"


def make_root(roots, kind, make_steps):
    """The cached root of `kind`, made by make_steps(partial_root) when
    absent; only a complete root gets its final name."""
    root = roots.path(kind)
    if os.path.isdir(root):
        log(f"{kind} root: cached ({root})")
        return root
    partial = root + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    make_steps(partial)
    os.rename(partial, root)
    roots.remove_stale(kind)
    log(f"{kind} root: made ({root}, {disk_usage(root)})")
    return root


def disk_usage(path):
    out = subprocess.run(["du", "-sh", path], capture_output=True, text=True)
    return (out.stdout.split() or ["?"])[0]


def cpu_root(roots, mirror, work_dir, timer):
    def steps(partial):
        timer.run("debootstrap", debootstrap, partial, mirror, work_dir)
        timer.run("install-deps.sh", install_deps, partial, roots.source_dir,
                  work_dir)
    return make_root(roots, "cpu", steps)


def build_chroot(root, roots, work_dir, build_name):
    build_dir = os.path.join(work_dir, build_name)
    os.makedirs(build_dir, exist_ok=True)
    return Chroot(root,
                  binds=[f"{roots.source_dir}:/favor/src", f"{build_dir}:/favor/build",
                         f"{roots.ccache}:/favor/ccache"],
                  env=["CCACHE_DIR=/favor/ccache"])


def ccache_summary(chroot, work_dir):
    stats = os.path.join(work_dir, "ccache-stats.txt")
    chroot.sh("ccache --print-stats", "ccache --print-stats", stats)
    with open(stats) as f:
        values = dict(line.split("\t", 1) for line in f.read().splitlines()
                      if "\t" in line)
    hits = int(values.get("direct_cache_hit", 0)) + int(
        values.get("preprocessed_cache_hit", 0))
    return f"(ccache: {hits} hits, {values.get('cache_miss', '?')} misses)"


def build(chroot, work_dir, configure_args, targets, name):
    jobs = os.cpu_count() or 2
    chroot.sh("ccache --zero-stats >/dev/null && cmake -S /favor/src -B /favor/build"
              f" -G Ninja {configure_args}", f"{name}: configure",
              os.path.join(work_dir, f"{name}-configure.log"))
    chroot.sh(f"cmake --build /favor/build -j {jobs} -- {' '.join(targets)}",
              f"{name}: build", os.path.join(work_dir, f"{name}-build.log"))
    return ccache_summary(chroot, work_dir)


def failed_tests(log_path):
    with open(log_path, errors="replace") as f:
        text = f.read()
    listed = text[text.find("The following tests FAILED"):]
    return re.findall(r"^\s*\d+ - (\S+)", listed, re.M), text


def suite(chroot, work_dir):
    """ctest in the root. The suite has timing-sensitive tests that a loaded
    2-core machine can fail: a test that fails is run once more, alone, and
    named in the output as flaky if it then passes; a second failure fails."""
    jobs = os.cpu_count() or 2
    log_path = os.path.join(work_dir, "ctest.log")
    log(f"ctest in the root, label {CPU_LABEL} (log: {log_path})")
    code = chroot.sh(f"ctest --test-dir /favor/build --output-on-failure -j {jobs}"
                     f" -L '{CPU_LABEL}'", "ctest", log_path, ok_codes=(0, 8))
    failed, text = failed_tests(log_path)
    summary = re.search(r"^\d+% tests passed.*$", text, re.M)
    summary = summary.group(0) if summary else "no summary"
    if code == 0:
        return f"({summary})"
    rerun_path = os.path.join(work_dir, "ctest-rerun.log")
    log(f"failed: {', '.join(failed)}; running them once more, alone ({rerun_path})")
    code = chroot.sh("ctest --test-dir /favor/build --output-on-failure --rerun-failed",
                     "ctest --rerun-failed", rerun_path, ok_codes=(0, 8))
    if code != 0:
        still, rerun = failed_tests(rerun_path)
        fail(f"the suite failed on {SUITE}, twice: {', '.join(still)}\n"
             f"{rerun[-6000:]}")
    return f"({summary}; flaky here, passed when run again: {', '.join(failed)})"


def cpu_stage(roots, mirror, work_dir, timer):
    root = cpu_root(roots, mirror, work_dir, timer)
    chroot = build_chroot(root, roots, work_dir, "build")
    timer.run("build (LibTorch 2.6, CPU)", build, chroot, work_dir, "",
              CPU_TARGETS, "cpu")
    timer.run("suite", suite, chroot, work_dir)


def install_cuda(root, mirror, work_dir):
    """libtorch-cuda-dev and nvcc over the CPU root's packages (apt replaces
    the CPU LibTorch, which conflicts). nvidia-cudnn's configuration may fail
    (it downloads cuDNN from NVIDIA): dpkg leaves it and what depends on it
    unpacked, which is enough to compile and link. Any other failure fails."""
    with open(os.path.join(root, "etc/apt/sources.list"), "w") as f:
        f.write(f"deb {mirror} {SUITE} main contrib non-free\n")
    log_path = os.path.join(work_dir, "install-cuda.log")
    chroot = Chroot(root)
    code = chroot.sh("apt-get update -qq && apt-get install -y -q --no-install-recommends "
                     + " ".join(CUDA_PACKAGES), "apt-get install of the CUDA packages",
                     log_path, ok_codes=(0, 100))
    with open(log_path, errors="replace") as f:
        text = f.read()
    failed = set(re.findall(r"^dpkg: error processing package (\S+) \(--configure\)",
                            text, re.M))
    dependents = set(re.findall(r"^dpkg: error processing package (\S+) \(--configure\):"
                                r"\n dependency problems", text, re.M))
    if failed - dependents - {CUDA_DOWNLOADER} or (code != 0 and not failed):
        fail(f"apt-get install of {CUDA_PACKAGES} failed other than by "
             f"{CUDA_DOWNLOADER}'s download; see {log_path}")
    status = os.path.join(work_dir, "cuda-packages.txt")
    chroot.sh("dpkg-query -W -f '${Package} ${Status}\\n' " + " ".join(CUDA_PACKAGES),
              "dpkg-query", status)
    with open(status) as f:
        if not all(line.endswith((" installed", " unpacked", " half-configured"))
                   for line in f.read().splitlines()):
            fail(f"the CUDA packages are not unpacked: see {status}")
    unpacked = sorted(failed)
    return f"(left unconfigured: {', '.join(unpacked) or 'none'})"


def cuda_root(roots, mirror, work_dir, timer):
    cpu = cpu_root(roots, mirror, work_dir, timer)

    def steps(partial):
        timer.run("copy of the cpu root", run, ["cp", "-a", cpu, partial], "cp")
        timer.run("CUDA packages", install_cuda, partial, mirror, work_dir)
    return make_root(roots, "cuda", steps)


def check_cuda_link(build_dir):
    """favor-server needs libtorch_cuda: the build linked the CUDA LibTorch."""
    server = os.path.join(build_dir, "server/favor-server")
    needed = subprocess.run(["readelf", "-d", server], capture_output=True,
                            text=True).stdout
    if "libtorch_cuda.so" not in needed:
        fail(f"{server} does not need libtorch_cuda.so: not the CUDA LibTorch")
    with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
        cache = f.read()
    nvcc = re.search(r"^CUDA_NVCC_EXECUTABLE:\w+=(.*)$", cache, re.M)
    version = re.search(r"^CUDAToolkit_VERSION:\w+=(.*)$", cache, re.M) or \
        re.search(r"^CUDA_VERSION:\w+=(.*)$", cache, re.M)
    return (f"(favor-server needs libtorch_cuda.so; CUDA "
            f"{version.group(1) if version else '?'}, nvcc "
            f"{nvcc.group(1) if nvcc else '?'})")


def cuda_stage(roots, mirror, work_dir, timer):
    root = cuda_root(roots, mirror, work_dir, timer)
    chroot = build_chroot(root, roots, work_dir, "build-cuda")
    configure = f"-DCMAKE_PROJECT_INCLUDE={CUDA_SANDBOX_CMAKE}"
    timer.run("build (LibTorch 2.6, CUDA)", build, chroot, work_dir, configure,
              CUDA_TARGETS, "cuda")
    timer.run("link check", check_cuda_link, os.path.join(work_dir, "build-cuda"))
    log("not done here: loading these binaries (libtorch_cuda needs libcudnn.so.9, "
        "which nvidia-cudnn downloads from NVIDIA's site) and running them on a "
        "GPU (there is none); scripts/gpu-bench.sh does both on a GPU machine")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("cpu", "cuda"):
        fail(__doc__)
    stage, source_dir, work_dir = sys.argv[1], *map(os.path.abspath, sys.argv[2:])
    if os.geteuid() != 0:
        fail("needs root (debootstrap, chroot and bind mounts); run ctest as root")
    os.makedirs(work_dir, exist_ok=True)
    roots = Roots(source_dir)
    mirror = mirror_uri()
    timer = Timer()
    roots.lock()
    if stage == "cpu":
        cpu_stage(roots, mirror, work_dir, timer)
    else:
        cuda_stage(roots, mirror, work_dir, timer)
    timer.print()
    log("PASSED")


if __name__ == "__main__":
    main()
