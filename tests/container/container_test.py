#!/usr/bin/python3
"""The container image, built and run for real (ctest label `container`).

Builds the repository's Dockerfile with podman (chroot isolation, cgroupfs,
never pulling: docs/container.md), on a local debian:trixie-slim (or --release's) made with
debootstrap when podman has none. Then, from the image's own configuration
(Config.User, Env, Entrypoint, Healthcheck, ExposedPorts), runs its entry
point by chroot as the image's user, the way a container engine would but
without one (`podman run` cannot work in this sandbox), and checks:
  - the HEALTHCHECK command, run in the image as its user, fails while no
    server runs and succeeds once the server is SERVING;
  - favor-cli from the build tree (outside the image) sees SERVING and gets
    an Embed answer from the default model to text (its tokenizer in the image);
  - the server process runs as the unprivileged user of the image, listens
    on 0.0.0.0 (gRPC and /metrics) on the ports given as FLAGS_port (the
    environment) and --metrics_port (an argument, which must win over
    FLAGS_metrics_port), and has OpenBLAS's pthread build mapped as the BLAS
    of LibTorch (not the reference BLAS);
  - /metrics answers; SIGTERM ends it with exit code 0.
It reports the image's size and the build time (cold or warm ccache).

Exit 77 (ctest SKIP) only when podman itself cannot work here (no podman,
not root, `podman info` fails, it cannot import and mount an image, or it
cannot run `RUN true` on the base image), or when its storage lacks the
room that --needs-free-gb names for a first build of the image; a
Dockerfile that fails to build, a missing debootstrap, or any failed check
is a failure.

Usage: container_test.py SOURCE_DIR FAVOR_CLI WORK_DIR [IMAGE_TAG]
           [--release trixie|bookworm] [--dockerfile Dockerfile]
           [--build-arg NAME=VALUE]... [--cuda] [--needs-free-gb GB]
           [--seed-from-trixie cpu|cuda --apt-cache-id ID --ccache-id ID]

--seed-from-trixie fills the Dockerfile's apt and ccache cache mounts from
the trixie test's root of that kind before the build (seed_build_caches).

--release picks the base image, debian:RELEASE-slim (debootstrapped when
podman has none): trixie, the Dockerfile's default, unless told otherwise. --cuda is for Dockerfile.gpu built here: it is built and
checked (favor-server links Debian's CUDA LibTorch, every library it needs
is in the image but cuDNN's, which the build was allowed to leave out), not
run, since nothing here has a GPU or cuDNN.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77
PODMAN = ["podman", "--cgroup-manager=cgroupfs"]


def log(message):
    print(f"container_test: {message}", flush=True)


def fail(message):
    log(f"FAILED: {message}")
    sys.exit(1)


def skip(message):
    log(f"SKIPPED: {message}")
    sys.exit(SKIP)


def probe_podman():
    if shutil.which("podman") is None:
        skip("podman is not installed (scripts/install-deps.sh installs it)")
    if os.geteuid() != 0:
        skip("needs root: the image is run with `podman image mount` and chroot")
    info = subprocess.run(PODMAN + ["info", "--format", "{{.Store.GraphDriverName}}"],
                          capture_output=True, text=True)
    if info.returncode != 0:
        skip("`podman info` fails here, podman cannot work: " +
             (info.stderr.strip() or info.stdout.strip()))
    # Its storage: an image made from a one-file tar, mounted, removed.
    probe_tag = f"localhost/favor-probe:{os.getpid()}"
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "probe"), "w") as f:
            f.write("probe\n")
        tar = subprocess.run(["tar", "-C", tmp, "-c", "probe"], capture_output=True)
        imported = subprocess.run(PODMAN + ["import", "-", probe_tag], input=tar.stdout,
                                  capture_output=True)
        if imported.returncode != 0:
            skip("podman cannot store an image here (`podman import` fails): " +
                 imported.stderr.decode(errors="replace").strip())
        mounted = subprocess.run(PODMAN + ["image", "mount", probe_tag],
                                 capture_output=True, text=True)
        ok = mounted.returncode == 0 and os.path.isfile(
            os.path.join(mounted.stdout.strip(), "probe"))
        subprocess.run(PODMAN + ["image", "unmount", probe_tag], capture_output=True)
        subprocess.run(PODMAN + ["rmi", probe_tag], capture_output=True)
        if not ok:
            skip("podman cannot mount an image here (`podman image mount` fails): " +
                 mounted.stderr.strip())
    log(f"podman works (storage driver {info.stdout.strip()}, import and image mount)")


def base_image(release):
    return f"docker.io/library/debian:{release}-slim"


def probe_build_steps(release):
    """A RUN step on the base image, with the Dockerfile's isolation: when
    even that fails, podman cannot build here, whatever the Dockerfile."""
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "Dockerfile"), "w") as f:
            f.write(f"FROM {base_image(release)}\nRUN true\n")
        run = subprocess.run(PODMAN + ["build", "--pull=never", "--isolation=chroot",
                                       "--layers=false", "-q", tmp],
                             capture_output=True, text=True)
    if run.returncode != 0:
        skip("podman cannot run a build step here (`RUN true` on the base image "
             "fails): " + (run.stderr.strip() or run.stdout.strip())[-2000:])
    subprocess.run(PODMAN + ["rmi", run.stdout.strip().splitlines()[-1]], capture_output=True)


def ensure_base_image(release):
    image = base_image(release)
    if subprocess.run(PODMAN + ["image", "exists", image]).returncode == 0:
        log(f"base image {image} present")
        return
    if shutil.which("debootstrap") is None:
        fail(f"podman has no {image} and debootstrap, which makes it, is "
             "not installed (scripts/install-deps.sh installs it)")
    log(f"making {image} with debootstrap (minbase, {release})")
    start = time.monotonic()
    rootfs = tempfile.mkdtemp(prefix="favor-rootfs-", dir="/var/tmp")
    try:
        run = subprocess.run(["debootstrap", "--variant=minbase", release, rootfs],
                             capture_output=True, text=True)
        if run.returncode != 0:
            fail("debootstrap failed:\n" + run.stdout[-3000:] + run.stderr[-3000:])
        # What debian:*-slim leaves out, so that sizes compare.
        for path in ("usr/share/doc", "usr/share/man", "usr/share/info",
                     "usr/share/locale", "var/lib/apt/lists", "var/cache/apt"):
            shutil.rmtree(os.path.join(rootfs, path), ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(PODMAN + ["import", "-", image],
                                  stdin=tar.stdout, capture_output=True, text=True)
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            fail("podman import of the debootstrapped base failed: " + imported.stderr)
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
    log(f"base image made in {time.monotonic() - start:.0f} s")


def buildah_cache_dir(cache_id):
    """Where podman 4 (buildah) keeps a Dockerfile's cache mount
    `RUN --mount=type=cache,id=ID` when run as root."""
    return os.path.join(os.environ.get("TMPDIR") or "/var/tmp", "buildah-cache", cache_id)


def trixie_root(kind):
    """The newest complete root that tests/platform/trixie_test.py keeps, or None."""
    base = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                        "favor")
    roots = [path for path in glob.glob(os.path.join(base, f"trixie-{kind}-*"))
             if os.path.isdir(path) and not path.endswith(".partial")]
    return max(roots, key=os.path.getmtime) if roots else None


def seed_build_caches(kind, apt_cache_id, ccache_id):
    """Seeds the Dockerfile's cache mounts from what the trixie test already
    holds: the Debian 13 packages its `kind` root downloaded (hard links where
    the file system allows), and its ccache objects, compiled from the same
    sources at the same paths (/favor/src, /favor/build) with the same
    compiler and headers. A cold run then downloads and compiles once for
    both tests. Nothing is trusted blindly: apt checks each archive's hash
    against the index and fetches any that differ, and ccache hashes the
    compiler and every input, so a stale object is only a miss."""
    root = trixie_root(kind)
    if root is None:
        log(f"no trixie {kind} root to seed the build's caches from: building from scratch")
        return
    # Beside the roots, as trixie_test.py's Roots keeps it.
    ccache = os.path.join(os.path.dirname(root), "ccache-trixie")
    start = time.monotonic()
    debs = glob.glob(os.path.join(root, "var/cache/apt/archives/*.deb"))
    apt_dir = buildah_cache_dir(apt_cache_id)
    os.makedirs(apt_dir, exist_ok=True)
    seeded = 0
    for deb in debs:
        target = os.path.join(apt_dir, os.path.basename(deb))
        if os.path.exists(target):
            continue
        try:
            os.link(deb, target)
        except OSError:
            shutil.copy2(deb, target)
        seeded += 1
    objects = 0
    if os.path.isdir(ccache):
        ccache_dir = buildah_cache_dir(ccache_id)
        for folder, _, files in os.walk(ccache):
            inner = os.path.join(ccache_dir, os.path.relpath(folder, ccache))
            os.makedirs(inner, exist_ok=True)
            for name in files:
                target = os.path.join(inner, name)
                # Statistics and configuration stay the build's own.
                if name in ("stats", "ccache.conf") or os.path.exists(target):
                    continue
                shutil.copy2(os.path.join(folder, name), target)
                objects += 1
    log(f"seeded the build's caches from {root} in {time.monotonic() - start:.0f} s: "
        f"its {len(debs)} packages into {apt_dir} ({seeded} not there yet), its "
        f"ccache objects into {buildah_cache_dir(ccache_id)} ({objects} not there yet)")


def check_storage_room(tag, needed_gb):
    """A first build of an image this large needs room in podman's storage for
    every layer twice at once (podman copies a step's container into the new
    layer before it frees the container): measured for Dockerfile.gpu, free
    space fell by 39 GB during the build and ended 14 GB lower. Where that
    room is missing the build cannot work here, which is a SKIP saying so,
    as for a podman that cannot work; once the image is there, a rebuild
    reuses its layers and needs little."""
    if needed_gb <= 0 or image_id(tag):
        return
    root = subprocess.run(PODMAN + ["info", "--format", "{{.Store.GraphRoot}}"],
                          capture_output=True, text=True).stdout.strip() or "/var/lib/containers"
    stat = os.statvfs(root if os.path.isdir(root) else "/")
    free_gb = stat.f_bavail * stat.f_frsize / 1e9
    if free_gb < needed_gb:
        skip(f"a first build of {tag} needs about {needed_gb} GB free in podman's "
             f"storage ({root}); {free_gb:.0f} GB are")
    log(f"{free_gb:.0f} GB free in podman's storage for a first build (about {needed_gb} GB needed)")


def image_id(tag):
    run = subprocess.run(PODMAN + ["image", "inspect", "--format", "{{.Id}}", tag],
                         capture_output=True, text=True)
    return run.stdout.strip() if run.returncode == 0 else None


def build_image(source_dir, work_dir, tag, dockerfile, build_args):
    previous = image_id(tag)
    build_log = os.path.join(work_dir, "image-build.log")
    log(f"building {tag} from {source_dir}/{dockerfile} {' '.join(build_args)} "
        f"(log: {build_log})")
    start = time.monotonic()
    with open(build_log, "w") as out:
        run = subprocess.run(
            PODMAN + ["build", "--pull=never", "--isolation=chroot", "--format", "docker",
                      "-t", tag, "-f", os.path.join(source_dir, dockerfile)]
            + [f"--build-arg={arg}" for arg in build_args] + [source_dir],
            stdout=out, stderr=subprocess.STDOUT)
    seconds = time.monotonic() - start
    with open(build_log) as f:
        text = f.read()
    if run.returncode != 0:
        fail(f"podman build failed (exit {run.returncode}) after {seconds:.0f} s; "
             f"the end of {build_log}:\n{text[-6000:]}")
    current = image_id(tag)
    # ccache's statistics (the build stage prints them) tell a cold build from
    # a warm one; a build step taken from podman's layer cache prints none.
    stats = "; ".join(line.strip() for line in re.findall(
        r"^\s*(?:Cacheable calls|Hits|Misses):.*$", text, re.M)) or "compile step cached"
    log(f"image built in {seconds:.0f} s (ccache: {stats})")
    if previous and previous != current:
        # The image this tag named before; its build-stage layers stay cached.
        subprocess.run(PODMAN + ["rmi", previous], capture_output=True)
    return current


def inspect(tag):
    run = subprocess.run(PODMAN + ["image", "inspect", tag], capture_output=True, text=True)
    if run.returncode != 0:
        fail("podman image inspect failed: " + run.stderr)
    return json.loads(run.stdout)[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def passwd_entry(mnt, user):
    with open(os.path.join(mnt, "etc/passwd")) as f:
        for line in f:
            fields = line.strip().split(":")
            if fields[0] == user or fields[2] == user:
                return fields[0], int(fields[2]), int(fields[3])
    fail(f"user {user!r} of the image is not in its /etc/passwd")


def in_image(mnt, uid, gid, env, argv):
    """argv run in the image's filesystem as uid:gid with exactly env, with
    /dev, /proc and /sys as a container has them (mounted in a private
    mount namespace, so nothing is left mounted when it ends)."""
    script = ('set -e; m="$1"; shift; mount --rbind /dev "$m/dev"; '
              'mount --rbind /proc "$m/proc"; mount --rbind /sys "$m/sys"; '
              'exec chroot "--userspec=$0" "$m" "$@"')
    return (["unshare", "--mount", "--propagation", "private", "--",
             "/bin/sh", "-c", script, f"{uid}:{gid}", mnt, "/usr/bin/env", "-i"] +
            [f"{k}={v}" for k, v in env.items()] + argv)


def healthcheck_argv(image):
    # podman's inspect puts it beside Config; docker's inside it.
    check = image.get("Healthcheck") or image["Config"].get("Healthcheck") or {}
    test = check.get("Test") or []
    if not test or test[0] not in ("CMD", "CMD-SHELL"):
        fail(f"the image has no HEALTHCHECK command (Healthcheck: {check}); "
             "was it built with --format docker?")
    if test[0] == "CMD-SHELL":
        return ["/bin/sh", "-c", test[1]]
    return test[1:]


def listening_on_any(pid, port):
    """True when the process's network namespace has a LISTEN socket on the
    wildcard address at port: 0.0.0.0 (tcp), or :: (tcp6, where gRPC puts
    its dual-stack socket for 0.0.0.0)."""
    for table, wildcard in (("tcp", "0" * 8), ("tcp6", "0" * 32)):
        with open(f"/proc/{pid}/net/{table}") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[1] == f"{wildcard}:{port:04X}" and fields[3] == "0A":
                    return True
    return False


def check_cuda_image(tag, size_mb):
    """The CUDA image built where cuDNN cannot be downloaded: favor-server
    links the CUDA LibTorch, and every library it needs is in the image but
    cuDNN's, which nvidia-cudnn downloads where NVIDIA's site is reachable."""
    mnt = subprocess.run(PODMAN + ["image", "mount", tag], capture_output=True,
                         text=True)
    if mnt.returncode != 0:
        fail("podman image mount failed: " + mnt.stderr)
    mnt = mnt.stdout.strip()
    try:
        server = os.path.join(mnt, "usr/local/bin/favor-server")
        needed = subprocess.run(["readelf", "-d", server], capture_output=True,
                                text=True, check=True).stdout
        if not re.search(r"\[libtorch_cuda\.so[0-9.]*\]", needed):
            fail("favor-server in the image does not need libtorch_cuda.so: "
                 "the CPU LibTorch was linked")
        ldd = subprocess.run(["chroot", mnt, "ldd", "/usr/local/bin/favor-server"],
                             capture_output=True, text=True)
        missing = sorted(set(re.findall(r"^\s*(\S+) => not found$", ldd.stdout, re.M)))
        if any(not name.startswith("libcudnn") for name in missing):
            fail(f"favor-server's libraries missing in the image: {missing}")
        cuda = sorted({m for m in re.findall(r"=> (\S*lib(?:cudart|cublas)\S*)",
                                             ldd.stdout)})
        if not cuda:
            fail("favor-server in the image loads no CUDA runtime library")
        log(f"favor-server needs libtorch_cuda.so; the CUDA runtime from Debian: "
            f"{[os.path.basename(c) for c in cuda]}")
        log(f"NOT DONE HERE: libraries left out, which nvidia-cudnn downloads "
            f"from NVIDIA's site: {missing or 'none'}; favor-server cannot start "
            f"without them, and nothing runs on a GPU here")
    finally:
        subprocess.run(PODMAN + ["image", "unmount", tag], capture_output=True)
    log(f"PASSED (image {tag}, {size_mb:.0f} MB, built; not run)")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source_dir")
    parser.add_argument("favor_cli")
    parser.add_argument("work_dir")
    parser.add_argument("tag", nargs="?", default="localhost/favor:ctest")
    parser.add_argument("--dockerfile", default="Dockerfile")
    parser.add_argument("--release", default="trixie",
                        help="Debian release of the base image, debian:RELEASE-slim")
    parser.add_argument("--build-arg", action="append", default=[])
    parser.add_argument("--cuda", action="store_true",
                        help="the CUDA image: built and checked, not run")
    parser.add_argument("--seed-from-trixie", choices=("cpu", "cuda"),
                        help="seed the build's apt and ccache cache mounts from "
                             "the trixie test's root of this kind")
    parser.add_argument("--apt-cache-id", default="favor-apt-archives",
                        help="the Dockerfile's cache mount id for apt's archives")
    parser.add_argument("--ccache-id", default="favor-ccache",
                        help="the Dockerfile's cache mount id for ccache")
    parser.add_argument("--needs-free-gb", type=int, default=0,
                        help="skip, saying so, when a first build would not fit")
    return parser.parse_args()


def main():
    args = parse_args()
    source_dir, favor_cli, work_dir, tag = (args.source_dir, args.favor_cli,
                                            args.work_dir, args.tag)
    os.makedirs(work_dir, exist_ok=True)
    probe_podman()
    ensure_base_image(args.release)
    probe_build_steps(args.release)
    build_args = [f"DEBIAN_IMAGE={base_image(args.release)}"] + args.build_arg
    check_storage_room(tag, args.needs_free_gb)
    if args.seed_from_trixie:
        seed_build_caches(args.seed_from_trixie, args.apt_cache_id, args.ccache_id)
    build_image(source_dir, work_dir, tag, args.dockerfile, build_args)

    image = inspect(tag)
    config = image["Config"]
    size_mb = image["Size"] / 1e6
    base_mb = inspect(base_image(args.release))["Size"] / 1e6
    log(f"image size: {size_mb:.0f} MB ({base_mb:.0f} MB of it the base image "
        f"debian:{args.release}-slim)")
    if args.cuda:
        check_cuda_image(tag, size_mb)
        return
    user = config.get("User") or ""
    if user in ("", "root", "0") or user.startswith("0:"):
        fail(f"the image runs as {user or 'root'}: it must name an unprivileged user")
    ports = set((config.get("ExposedPorts") or {}).keys())
    if not {"50051/tcp", "9464/tcp"} <= ports:
        fail(f"the image exposes {sorted(ports)}, not 50051/tcp and 9464/tcp")
    entrypoint = (config.get("Entrypoint") or []) + (config.get("Cmd") or [])
    if not entrypoint:
        fail("the image has no Entrypoint or Cmd")
    health = healthcheck_argv(image)
    env = dict(item.split("=", 1) for item in config.get("Env") or [])
    log(f"user {user}, entrypoint {entrypoint}, healthcheck {health}, env {env}")

    mnt = subprocess.run(PODMAN + ["image", "mount", tag], capture_output=True,
                         text=True)
    if mnt.returncode != 0:
        fail("podman image mount failed: " + mnt.stderr)
    mnt = mnt.stdout.strip()
    server = None
    try:
        name, uid, gid = passwd_entry(mnt, user.split(":")[0])
        if ":" in user:
            gid = int(user.split(":")[1])
        if uid == 0:
            fail(f"the image's user {name} has uid 0")
        port, metrics_port, decoy_port = free_port(), free_port(), free_port()
        # Ports through the environment, as `podman run -e` would give them
        # (the entry point's FLAGS_* -> --fromenv), and one flag both ways:
        # the argument must win over the environment.
        env.update(FLAGS_port=str(port), FLAGS_metrics_port=str(decoy_port))
        entrypoint = entrypoint + [f"--metrics_port={metrics_port}"]

        probe = subprocess.run(in_image(mnt, uid, gid, env, health),
                               capture_output=True, text=True, timeout=60)
        if probe.returncode == 0:
            fail(f"the HEALTHCHECK passes with no server on port {port}: it checks nothing")
        log(f"HEALTHCHECK with no server: exit {probe.returncode} "
            f"({(probe.stderr or probe.stdout).strip()[:200]})")

        server_log = os.path.join(work_dir, "server.log")
        log(f"starting the image's entry point as {name} (uid {uid}); log: {server_log}")
        with open(server_log, "w") as out:
            server = subprocess.Popen(in_image(mnt, uid, gid, env, entrypoint),
                                      stdout=out, stderr=subprocess.STDOUT)
        start = time.monotonic()
        target = f"127.0.0.1:{port}"
        while True:
            if server.poll() is not None:
                with open(server_log) as f:
                    fail(f"the server exited with {server.returncode} during start-up:\n"
                         + f.read()[-4000:])
            if time.monotonic() - start > 240:
                fail("not SERVING after 240 s")
            check = subprocess.run([favor_cli, f"--endpoint={target}", "health"],
                                   capture_output=True, text=True, timeout=60)
            if check.returncode == 0:
                break
            time.sleep(1)
        log(f"SERVING after {time.monotonic() - start:.1f} s "
            f"(favor-cli health: {check.stdout.strip()[:200]})")

        pid = server.pid
        exe = os.readlink(f"/proc/{pid}/exe")
        if not exe.endswith("/usr/local/bin/favor-server"):
            fail(f"the process on the entry point is {exe}, not favor-server")
        with open(f"/proc/{pid}/status") as f:
            uids = re.search(r"^Uid:\s+(\d+)\s+(\d+)", f.read(), re.M)
        if (int(uids.group(1)), int(uids.group(2))) != (uid, uid):
            fail(f"favor-server runs as uid {uids.group(1)}/{uids.group(2)}, not {uid}")
        log(f"favor-server (pid {pid}) runs as uid {uid} ({name}), not root")
        with open(f"/proc/{pid}/maps") as f:
            maps = {line.split()[-1] for line in f if "/" in line}
        blas = sorted(os.path.relpath(p, mnt) for p in maps
                      if "blas" in p.lower() or "lapack" in p.lower())
        if not any("openblas-pthread/" in p for p in blas) or \
                any(re.search(r"/blas/libblas\.so", p) for p in blas):
            fail(f"LibTorch's BLAS in the image is not OpenBLAS pthread: {blas}")
        if not any(p.startswith(mnt) for p in maps if "libtorch_cpu" in p):
            fail("libtorch_cpu is not loaded from the image")
        log(f"BLAS mapped in favor-server: {blas}")
        for p, what in ((port, "gRPC (FLAGS_port)"),
                        (metrics_port, "/metrics (--metrics_port argument)")):
            if not listening_on_any(pid, p):
                fail(f"{what} does not listen on 0.0.0.0:{p}")
        if listening_on_any(pid, decoy_port):
            fail("/metrics listens on FLAGS_metrics_port: the argument "
                 "--metrics_port should have won over the environment")
        log(f"gRPC on 0.0.0.0:{port} (FLAGS_port), /metrics on 0.0.0.0:{metrics_port} "
            f"(argument, over FLAGS_metrics_port={decoy_port})")

        check = subprocess.run(in_image(mnt, uid, gid, env, health),
                               capture_output=True, text=True, timeout=60)
        if check.returncode != 0:
            fail(f"the HEALTHCHECK fails against the SERVING server (exit "
                 f"{check.returncode}): {check.stdout}{check.stderr}")
        log(f"HEALTHCHECK in the image as {name}: exit 0 ({check.stdout.strip()[:200]})")

        # Text: the image's default model tokenises it with its tokenizer.
        embed = subprocess.run([favor_cli, f"--endpoint={target}", "embed",
                                "hello world", "this is a test"],
                               capture_output=True, text=True, timeout=120)
        if embed.returncode != 0:
            fail(f"favor-cli embed failed (exit {embed.returncode}): {embed.stderr}")
        check_embed_output(embed.stdout)

        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                    timeout=10) as response:
            body = response.read().decode()
        if "favor_" not in body:
            fail("/metrics has no favor_ metric")
        log(f"/metrics: {len(body)} bytes")

        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=90)
        except subprocess.TimeoutExpired:
            fail("favor-server did not exit within 90 s of SIGTERM")
        if code != 0:
            fail(f"favor-server exited with {code} after SIGTERM")
        server = None
        log("SIGTERM: favor-server exited 0")
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait()
        subprocess.run(PODMAN + ["image", "unmount", tag], capture_output=True)
    log(f"PASSED (image {tag}, {size_mb:.0f} MB)")


def check_embed_output(text):
    """Two embeddings of the default model (256 floats each, L2-normalised)."""
    try:
        embeddings = json.loads(text)["embeddings"]
        vectors = [e["values"] for e in embeddings]
    except (ValueError, KeyError, TypeError) as e:
        fail(f"favor-cli embed printed no embeddings ({e}):\n{text[:2000]}")
    if len(vectors) != 2 or any(len(v) != 256 for v in vectors):
        fail(f"favor-cli embed did not print two 256-float embeddings:\n{text[:2000]}")
    for v in vectors:
        norm = sum(x * x for x in v) ** 0.5
        if abs(norm - 1.0) > 1e-3:
            fail(f"an embedding has norm {norm}, not 1 (the default model L2-normalises)")
    if vectors[0] == vectors[1]:
        fail("two different inputs got the same embedding")
    log("Embed of two texts from favor-cli outside the image: 2 embeddings of "
        "256 floats, norm 1")


if __name__ == "__main__":
    main()
