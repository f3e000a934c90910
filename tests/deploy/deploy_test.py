#!/usr/bin/python3
"""Checks of deploy/ (ctest label `deploy`), one sub-test per ctest test.

  deploy_test.py promtool   REPO          promtool check config / check rules / test rules
  deploy_test.py compose    REPO [SERVER] docker-compose config of the base file and the GPU
                                          override, their structure, and the flags they pass
                                          accepted by the real favor-server
  deploy_test.py k8s        REPO          the Kubernetes manifests (base and GPU overlay)
                                          against a schema of our own, which must also reject
                                          broken copies of them
  deploy_test.py kubectl    REPO          `kubectl kustomize` renders both, as our check does
  deploy_test.py dashboard  REPO          the Grafana dashboard and provisioning files
  deploy_test.py live       REPO SERVER MODELS PROTO_ROOT
                                          favor-server (flags from the ConfigMap) and a real
                                          Prometheus (config derived from deploy/prometheus),
                                          grpcio calls, then the query API, the rules and every
                                          dashboard query against what was scraped

Exit status: 0 passed, 1 failed, 77 skipped (a tool is missing; the reason is printed, and
every check that does not need the tool has run and passed first).
Run with /usr/bin/python3: it needs Debian's python3-yaml (and python3-grpcio,
python3-protobuf for `live`).
"""
import copy
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
import urllib.error
import urllib.parse
import urllib.request

import yaml

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def skip(reason):
    print("SKIPPED: " + reason)
    sys.exit(SKIP)


def run(command, quiet=False, **kwargs):
    """Runs a command; its output is printed (only on failure when quiet), a
    failure raises Failure."""
    print("$ " + " ".join(command), flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=60, **kwargs)
    if not quiet or result.returncode != 0:
        print(result.stdout, end="", flush=True)
    check(result.returncode == 0, "%s exited %d" % (command[0], result.returncode))
    return result.stdout


def load_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def server_flags(text):
    """{flag: value} of a flagfile's text or of a list of arguments."""
    lines = text.splitlines() if isinstance(text, str) else text
    flags = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"--([a-z_]+)=(.*)", line)
        check(match, "not a --flag=value line: %r" % line)
        flags[match.group(1)] = match.group(2)
    return flags


# ---------------------------------------------------------------- promtool

def test_promtool(repo):
    promtool = shutil.which("promtool")
    # Without promtool, at least every file must parse.
    prometheus_dir = os.path.join(repo, "deploy", "prometheus")
    config = load_yaml(os.path.join(prometheus_dir, "prometheus.yml"))
    check([job for job in config["scrape_configs"] if job["job_name"] == "favor"],
          "prometheus.yml has no job 'favor'")
    for rule_file in config["rule_files"]:
        load_yaml(os.path.join(prometheus_dir, rule_file))
    if promtool is None:
        skip("promtool not found (Debian package prometheus): the Prometheus files parse, "
             "promtool check config/rules and test rules not run")
    run([promtool, "check", "config", "prometheus.yml"], cwd=prometheus_dir)
    for rule_file in config["rule_files"]:
        run([promtool, "check", "rules", rule_file], cwd=prometheus_dir)
    run([promtool, "test", "rules", "favor.rules_test.yml"],
        cwd=os.path.join(prometheus_dir, "rules"))


# ---------------------------------------------------------------- compose

# What the image (Dockerfile) and the probes, Services and scrape configs count on.
SERVER_BINARY = "/usr/local/bin/favor-server"
IMAGE_MODELS = "/opt/favor/models"
IMAGE_UID = 10001
REQUIRED_SERVER_FLAGS = {"bind_address": "0.0.0.0", "port": "50051", "metrics_port": "9464",
                         "model_repository": IMAGE_MODELS}


def check_image_names(repo, run_as_user=None):
    """The names deploy/ shares with the Dockerfiles: the server's path, the model
    repository and the user id."""
    for name in ("Dockerfile", "Dockerfile.gpu"):
        path = os.path.join(repo, name)
        if not os.path.exists(path):
            print("note: no %s in %s: the image's paths are not cross-checked" % (name, repo))
            continue
        check_dockerfile(path, run_as_user)


def check_dockerfile(path, run_as_user):
    text = open(path).read()
    check(re.search(r"^COPY\b.*\s/usr/local/bin/?$", text, re.M) and
          re.search(r"favor-server", text), "%s does not put favor-server in "
          "/usr/local/bin" % path)
    check(re.search(r"^COPY\b.*\s%s/?$" % re.escape(IMAGE_MODELS), text, re.M),
          "%s does not copy the models to %s (--model_repository)" % (path, IMAGE_MODELS))
    if run_as_user is not None:
        check(re.search(r"--uid %d\b" % run_as_user, text),
              "runAsUser %d is not the user id of %s" % (run_as_user, path))


def compose_config(compose, files, env=None):
    command = [compose]
    for f in files:
        command += ["-f", f]
    return yaml.safe_load(run(command + ["config"], quiet=True, env=env))


def seconds(text):
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", str(text))
    check(match and text, "not a duration: %r" % text)
    return int(match.group(1) or 0) * 60 + float(match.group(2) or 0)


def check_compose_structure(config, deploy_dir):
    services = config["services"]
    check(set(services) == {"favor-server", "prometheus", "grafana"},
          "services: %s" % sorted(services))
    for name, service in services.items():
        check("healthcheck" in service and service["healthcheck"].get("test"),
              "%s has no health check" % name)
        check(service.get("restart") in ("always", "unless-stopped", "on-failure"),
              "%s has no restart policy" % name)
    named = set(config.get("volumes") or {})
    for name, service in services.items():
        for volume in service.get("volumes", []):
            if isinstance(volume, str):
                parts = volume.split(":")
                volume = {"source": parts[0], "target": parts[1],
                          "type": "bind" if parts[0].startswith((".", "/")) else "volume"}
            if volume["type"] == "volume":
                check(volume["source"] in named, "%s: volume %s is not declared" %
                      (name, volume["source"]))
            else:
                source = os.path.join(deploy_dir, volume["source"])
                check(os.path.exists(source), "%s mounts %s, which does not exist" %
                      (name, source))
    check({"prometheus-data", "grafana-data"} <= named, "named volumes: %s" % sorted(named))
    server = services["favor-server"]
    check(server.get("entrypoint") == [SERVER_BINARY],
          "favor-server's entrypoint must be %s: %s" % (SERVER_BINARY, server.get("entrypoint")))
    command = server["command"]
    flags = server_flags(command)
    for flag, value in REQUIRED_SERVER_FLAGS.items():
        check(flags.get(flag) == value, "favor-server needs --%s=%s: %s" % (flag, value, command))
    drain = float(flags.get("drain_timeout_seconds", 30))
    check(seconds(server.get("stop_grace_period", "10s")) > drain + 1,
          "stop_grace_period must exceed --drain_timeout_seconds + 1 s")
    check(re.fullmatch(r".*favor:(latest|gpu)", server["image"]),
          "favor-server's image: %s" % server["image"])
    return command


# Broken copies of the resolved compose configuration that the check must reject.
COMPOSE_MUTATIONS = [
    ("no health check", lambda c: c["services"]["prometheus"].pop("healthcheck")),
    ("no restart policy", lambda c: c["services"]["grafana"].pop("restart")),
    ("grace period shorter than the drain",
     lambda c: c["services"]["favor-server"].update(stop_grace_period="10s")),
    ("server bound to loopback", lambda c: c["services"]["favor-server"]["command"].append(
        "--bind_address=127.0.0.1")),
    ("the image's entry point", lambda c: c["services"]["favor-server"].pop("entrypoint")),
    ("an undeclared named volume", lambda c: c.update(volumes={"grafana-data": None})),
]


def check_compose_mutations(config, deploy_dir):
    for what, mutate in COMPOSE_MUTATIONS:
        broken = copy.deepcopy(config)
        mutate(broken)
        try:
            check_compose_structure(broken, deploy_dir)
        except Failure as error:
            print("rejected as it should be (%s): %s" % (what, error))
            continue
        raise Failure("the compose check accepted a broken file: " + what)


def flags_accepted(server, command):
    """favor-server parses `command`'s flags: it gets as far as the model repository."""
    args = [server] + command + ["--model_repository=/nonexistent/favor-models",
                                     "--port=0", "--metrics_port=0", "--http_port=0"]
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=60)
    print("$ %s\n%s" % (" ".join(args), result.stdout[-1500:]))
    check("/nonexistent/favor-models" in result.stdout and result.returncode == 1,
          "favor-server did not accept the flags %s" % command)


def test_compose(repo, server=None):
    deploy_dir = os.path.join(repo, "deploy")
    base = os.path.join(deploy_dir, "docker-compose.yml")
    gpu = os.path.join(deploy_dir, "docker-compose.gpu.yml")
    for path in (base, gpu):
        load_yaml(path)
    compose = shutil.which("docker-compose")
    if compose is None:
        # Without the tool: the base file with its ${NAME:-default}s at their defaults.
        with open(base) as f:
            text = re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", f.read())
        check_compose_structure(yaml.safe_load(text), deploy_dir)
        skip("docker-compose not found (Debian package docker-compose): the compose files "
             "parse and the base file's structure is right; `docker-compose config` not run")
    env = dict(os.environ)
    for variable in ("FAVOR_IMAGE", "FAVOR_PUBLISH_ADDRESS", "FAVOR_GRPC_PORT",
                     "PROMETHEUS_IMAGE", "GRAFANA_IMAGE", "GRAFANA_ADMIN_PASSWORD"):
        env.pop(variable, None)
    config = compose_config(compose, [base], env)
    base_command = check_compose_structure(config, deploy_dir)
    check_compose_mutations(config, deploy_dir)
    check(config["services"]["favor-server"]["image"] == "favor:latest",
          "default image: %s" % config["services"]["favor-server"]["image"])
    gpu_config = compose_config(compose, [base, gpu], env)
    gpu_command = check_compose_structure(gpu_config, deploy_dir)
    check(gpu_config["services"]["favor-server"]["image"] == "favor:gpu",
          "the GPU override's image: %s" % gpu_config["services"]["favor-server"]["image"])
    check(gpu_command == base_command + ["--device=cuda"],
          "the GPU override's command must be the base one plus --device=cuda: %s" % gpu_command)
    reservations = gpu_config["services"]["favor-server"]["deploy"]["resources"]["reservations"]
    devices = reservations["devices"]
    check(any("gpu" in d.get("capabilities", []) for d in devices), "no GPU reservation")
    env["FAVOR_IMAGE"] = "registry.example/favor:1.2.3"
    overridden = compose_config(compose, [base], env)
    check(overridden["services"]["favor-server"]["image"] == env["FAVOR_IMAGE"],
          "FAVOR_IMAGE does not override the image")
    if server:
        flags_accepted(server, base_command)
        flags_accepted(server, gpu_command)
    check_image_names(repo)


# ---------------------------------------------------------------- kubernetes

K8S_DIR = ("deploy", "k8s")
NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
HEALTH_SERVICES = {"", "favor.v1.Favor"}

# Keys each object may have, so that a misspelt field is an error rather than ignored.
ALLOWED = {
    "Deployment.spec": {"replicas", "selector", "template", "strategy", "revisionHistoryLimit",
                        "minReadySeconds", "progressDeadlineSeconds", "paused"},
    "PodSpec": {"containers", "initContainers", "volumes", "terminationGracePeriodSeconds",
                "securityContext", "topologySpreadConstraints", "affinity", "nodeSelector",
                "tolerations", "serviceAccountName", "priorityClassName",
                "imagePullSecrets", "automountServiceAccountToken", "restartPolicy"},
    "Container": {"name", "image", "imagePullPolicy", "command", "args", "ports", "env",
                  "envFrom", "resources", "volumeMounts", "startupProbe", "readinessProbe",
                  "livenessProbe", "lifecycle", "securityContext", "workingDir"},
    "Probe": {"grpc", "httpGet", "tcpSocket", "exec", "initialDelaySeconds", "periodSeconds",
              "timeoutSeconds", "successThreshold", "failureThreshold",
              "terminationGracePeriodSeconds"},
    "Service.spec": {"type", "selector", "ports", "clusterIP", "publishNotReadyAddresses",
                     "sessionAffinity", "internalTrafficPolicy", "ipFamilyPolicy"},
    "ServicePort": {"name", "port", "targetPort", "protocol", "appProtocol", "nodePort"},
    "HorizontalPodAutoscaler.spec": {"scaleTargetRef", "minReplicas", "maxReplicas",
                                     "metrics", "behavior"},
    "PodDisruptionBudget.spec": {"selector", "minAvailable", "maxUnavailable",
                                 "unhealthyPodEvictionPolicy"},
}

API_VERSIONS = {"ConfigMap": "v1", "Service": "v1", "Deployment": "apps/v1",
                "HorizontalPodAutoscaler": "autoscaling/v2", "PodDisruptionBudget": "policy/v1"}


def only_keys(obj, allowed_key, where):
    extra = set(obj) - ALLOWED[allowed_key]
    check(not extra, "%s: unknown field(s) %s" % (where, sorted(extra)))


def quantity(text):
    """A Kubernetes CPU or memory quantity as a number (cores, bytes)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G)?", str(text))
    check(match, "not a quantity: %r" % text)
    scale = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 2 ** 10, "Mi": 2 ** 20,
             "Gi": 2 ** 30, "Ti": 2 ** 40}[match.group(2)]
    return float(match.group(1)) * scale


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def load_kustomization(folder):
    """The objects a kustomization lists, with its strategic-merge patches applied."""
    kustomization = load_yaml(os.path.join(folder, "kustomization.yaml"))
    objects = []
    for resource in kustomization.get("resources", []):
        path = os.path.normpath(os.path.join(folder, resource))
        check(os.path.exists(path), "%s lists %s, which does not exist" % (folder, resource))
        if os.path.isdir(path):
            objects += load_kustomization(path)
        else:
            with open(path) as f:
                objects += [o for o in yaml.safe_load_all(f) if o is not None]
    for patch in kustomization.get("patches", []):
        patch_object = load_yaml(os.path.join(folder, patch["path"]))
        targets = [o for o in objects if o["kind"] == patch_object["kind"] and
                   o["metadata"]["name"] == patch_object["metadata"]["name"]]
        check(len(targets) == 1, "patch %s matches %d objects" % (patch["path"], len(targets)))
        merged = strategic_merge(targets[0], patch_object)
        objects[objects.index(targets[0])] = merged
    for image in kustomization.get("images", []):
        for obj in objects:
            for container in pod_containers(obj):
                name = container["image"].rsplit(":", 1)[0]
                if name == image["name"]:
                    container["image"] = "%s:%s" % (image.get("newName", name),
                                                    image.get("newTag", "latest"))
    return objects


def strategic_merge(base, patch):
    """Kubernetes' strategic merge for what our patches use: maps merge, lists of
    named maps (containers, volumes, ports) merge by name, other lists are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = strategic_merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if (isinstance(base, list) and isinstance(patch, list) and base and patch and
            all(isinstance(i, dict) and "name" in i for i in base + patch)):
        out = [copy.deepcopy(i) for i in base]
        names = [i["name"] for i in out]
        for item in patch:
            if item["name"] in names:
                out[names.index(item["name"])] = strategic_merge(out[names.index(item["name"])],
                                                                 item)
            else:
                out.append(copy.deepcopy(item))
        return out
    return copy.deepcopy(patch)


def pod_containers(obj):
    if obj.get("kind") != "Deployment":
        return []
    return obj["spec"]["template"]["spec"]["containers"]


def check_metadata(obj):
    for field in ("apiVersion", "kind", "metadata"):
        check(field in obj, "an object lacks %s: %s" % (field, str(obj)[:200]))
    kind = obj["kind"]
    check(kind in API_VERSIONS, "unexpected kind %s" % kind)
    check(obj["apiVersion"] == API_VERSIONS[kind],
          "%s must be %s, not %s" % (kind, API_VERSIONS[kind], obj["apiVersion"]))
    name = obj["metadata"].get("name", "")
    check(NAME_RE.fullmatch(name) and len(name) <= 63, "%s: bad name %r" % (kind, name))
    check(obj["metadata"].get("labels"), "%s/%s has no labels" % (kind, name))
    check("spec" in obj or kind == "ConfigMap", "%s/%s has no spec" % (kind, name))
    return "%s/%s" % (kind, name)


def check_probe(probe, where, container_ports):
    only_keys(probe, "Probe", where)
    handlers = [h for h in ("grpc", "httpGet", "tcpSocket", "exec") if h in probe]
    check(handlers == ["grpc"], "%s: must be a native grpc probe, has %s" % (where, handlers))
    port = probe["grpc"].get("port")
    check(isinstance(port, int), "%s: grpc.port must be a number (named ports are not "
          "allowed in grpc probes): %r" % (where, port))
    check(port in container_ports.values(), "%s: port %s is not a container port %s" %
          (where, port, container_ports))
    check(set(probe["grpc"]) <= {"port", "service"}, "%s: grpc has %s" % (where, probe["grpc"]))
    service = probe["grpc"].get("service", "")
    check(service in HEALTH_SERVICES,
          "%s: health service %r is not one the server reports" % (where, service))
    for field in ("periodSeconds", "timeoutSeconds", "failureThreshold"):
        check(isinstance(probe.get(field, 1), int) and probe.get(field, 1) >= 1,
              "%s.%s must be a positive number" % (where, field))
    return port


def check_container(container, where, volumes, configmaps, flagfiles):
    only_keys(container, "Container", where)
    for field in ("name", "image"):
        check(container.get(field), "%s lacks %s" % (where, field))
    ports = {}
    for port in container.get("ports", []):
        check(isinstance(port.get("containerPort"), int), "%s: containerPort %r" % (where, port))
        check(len(port.get("name", "")) <= 15, "%s: port name over 15 characters" % where)
        ports[port.get("name")] = port["containerPort"]
    grpc_ports = set()
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        check(probe in container, "%s has no %s" % (where, probe))
        grpc_ports.add(check_probe(container[probe], "%s.%s" % (where, probe), ports))
    mounts = {}
    for mount in container.get("volumeMounts", []):
        check(mount["name"] in volumes, "%s mounts volume %s, which the pod lacks" %
              (where, mount["name"]))
        mounts[mount["mountPath"]] = volumes[mount["name"]]
    args = (container.get("command") or []) + (container.get("args") or [])
    flags = {}
    for arg in args:
        match = re.fullmatch(r"--flagfile=(.*)", arg)
        if match:
            folder, key = os.path.split(match.group(1))
            volume = mounts.get(folder)
            check(volume and "configMap" in volume, "%s: %s is not a mounted ConfigMap" %
                  (where, match.group(1)))
            configmap = configmaps.get(volume["configMap"]["name"])
            check(configmap is not None, "%s: ConfigMap %s is not in the manifests" %
                  (where, volume["configMap"]["name"]))
            check(key in configmap.get("data", {}), "%s: ConfigMap %s has no key %s" %
                  (where, volume["configMap"]["name"], key))
            flags.update(server_flags(configmap["data"][key]))
            flagfiles.append(configmap["data"][key])
        elif arg.startswith("--"):
            flags.update(server_flags([arg]))
    for flag, value in REQUIRED_SERVER_FLAGS.items():
        check(flags.get(flag) == value, "%s: needs --%s=%s, has %r" %
              (where, flag, value, flags.get(flag)))
    check(ports.get("grpc") == int(flags["port"]) and grpc_ports == {int(flags["port"])},
          "%s: --port, the grpc containerPort and the probes disagree" % where)
    check(ports.get("metrics") == int(flags["metrics_port"]),
          "%s: --metrics_port and the metrics containerPort disagree" % where)
    resources = container.get("resources", {})
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    for resource in ("cpu", "memory"):
        check(resource in requests and resource in limits, "%s: no %s request and limit" %
              (where, resource))
        check(quantity(requests[resource]) <= quantity(limits[resource]),
              "%s: %s request above its limit" % (where, resource))
    threads = int(flags.get("threads", 0))
    check(0 < threads <= quantity(limits["cpu"]),
          "%s: --threads=%d must be between 1 and the CPU limit %s" %
          (where, threads, limits["cpu"]))
    return flags, ports


def pre_stop_seconds(container):
    command = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command")
    if command and command[0] == "sleep":
        return float(command[1])
    return 0.0


def check_deployment(obj, where, configmaps, flagfiles):
    spec = obj["spec"]
    only_keys(spec, "Deployment.spec", where + ".spec")
    template = spec["template"]
    labels = template["metadata"]["labels"]
    check(matches(spec["selector"]["matchLabels"], labels),
          "%s: selector does not match the pod labels" % where)
    pod = template["spec"]
    only_keys(pod, "PodSpec", where + ".pod")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    check(pod.get("containers"), "%s has no containers" % where)
    for container in pod["containers"]:
        cwhere = "%s/%s" % (where, container.get("name"))
        flags, ports = check_container(container, cwhere, volumes, configmaps, flagfiles)
        drain = float(flags.get("drain_timeout_seconds", 30))
        grace = pod.get("terminationGracePeriodSeconds", 30)
        needed = pre_stop_seconds(container) + drain + 1
        check(grace > needed, "%s: terminationGracePeriodSeconds %s must exceed the preStop "
              "pause + --drain_timeout_seconds + 1 s = %s" % (where, grace, needed))
        annotations = template["metadata"].get("annotations", {})
        if "prometheus.io/port" in annotations:
            check(int(annotations["prometheus.io/port"]) == ports["metrics"],
                  "%s: prometheus.io/port is not the metrics port" % where)
    return labels, {p["name"]: p["containerPort"] for c in pod["containers"]
                    for p in c.get("ports", [])}


def check_objects(objects):
    """Every object's required fields and the references between them."""
    names = [check_metadata(o) for o in objects]
    check(len(set(names)) == len(names), "duplicate objects: %s" % names)
    kinds = [o["kind"] for o in objects]
    for kind in API_VERSIONS:
        check(kind in kinds, "no %s" % kind)
    configmaps = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ConfigMap"}
    for name, configmap in configmaps.items():
        data = configmap.get("data")
        check(isinstance(data, dict) and data and all(isinstance(v, str) for v in data.values()),
              "ConfigMap/%s: data must map keys to strings" % name)
    deployments = {}
    flagfiles = []
    for obj, where in zip(objects, names):
        if obj["kind"] == "Deployment":
            deployments[obj["metadata"]["name"]] = check_deployment(obj, where, configmaps,
                                                                    flagfiles)
    check(flagfiles, "no Deployment reads its flags from a ConfigMap")
    pods = list(deployments.values())
    hpa_min = {}
    for obj, where in zip(objects, names):
        spec = obj.get("spec", {})
        if obj["kind"] == "Service":
            only_keys(spec, "Service.spec", where + ".spec")
            selected = [p for p in pods if matches(spec.get("selector"), p[0])]
            check(selected, "%s selects no pods" % where)
            check(spec.get("ports"), "%s has no ports" % where)
            for port in spec["ports"]:
                only_keys(port, "ServicePort", where + ".port")
                check(isinstance(port.get("port"), int), "%s: port %r" % (where, port))
                target = port.get("targetPort", port["port"])
                known = selected[0][1]
                check(target in known or target in known.values(),
                      "%s: targetPort %s is not a container port %s" % (where, target, known))
        elif obj["kind"] == "HorizontalPodAutoscaler":
            only_keys(spec, "HorizontalPodAutoscaler.spec", where + ".spec")
            ref = spec["scaleTargetRef"]
            check(ref.get("kind") == "Deployment" and ref.get("name") in deployments,
                  "%s scales %s, which is not in the manifests" % (where, ref))
            check(1 <= spec.get("minReplicas", 1) <= spec["maxReplicas"],
                  "%s: minReplicas/maxReplicas" % where)
            check(spec.get("metrics"), "%s has no metrics" % where)
            for metric in spec["metrics"]:
                check(metric.get("type") in ("Resource", "Pods", "Object", "External",
                                             "ContainerResource") and
                      metric["type"][0].lower() + metric["type"][1:] in metric,
                      "%s: metric %s" % (where, metric))
            hpa_min[ref["name"]] = spec.get("minReplicas", 1)
        elif obj["kind"] == "PodDisruptionBudget":
            only_keys(spec, "PodDisruptionBudget.spec", where + ".spec")
            check(("minAvailable" in spec) != ("maxUnavailable" in spec),
                  "%s needs exactly one of minAvailable and maxUnavailable" % where)
            check([p for p in pods if matches(spec["selector"].get("matchLabels"), p[0])],
                  "%s selects no pods" % where)
    headless = [o for o in objects if o["kind"] == "Service" and
                o["spec"].get("clusterIP") == "None"]
    regular = [o for o in objects if o["kind"] == "Service" and
               o["spec"].get("clusterIP") != "None"]
    check(headless and regular, "need a headless and a regular Service")
    check(all(not o["spec"].get("publishNotReadyAddresses") for o in headless),
          "the headless Service must list only ready pods")
    for name, deployment in ((o["metadata"]["name"], o) for o in objects
                             if o["kind"] == "Deployment"):
        check(name in hpa_min, "Deployment/%s has no HorizontalPodAutoscaler" % name)
        for pdb in (o for o in objects if o["kind"] == "PodDisruptionBudget"):
            minimum = pdb["spec"].get("minAvailable")
            if isinstance(minimum, int):
                check(minimum < hpa_min[name], "%s: minAvailable %d leaves no pod to evict "
                      "at %d replicas" % (pdb["metadata"]["name"], minimum, hpa_min[name]))
    return flagfiles


# Broken copies that the check must reject: (what is broken, how).
def _container(objects):
    return [o for o in objects if o["kind"] == "Deployment"][0]["spec"]["template"]["spec"]


def _flags(objects, old, new):
    configmap = [o for o in objects if o["kind"] == "ConfigMap"][0]
    key = list(configmap["data"])[0]
    check(old in configmap["data"][key], "mutation: %s not in the flagfile" % old)
    configmap["data"][key] = configmap["data"][key].replace(old, new)


MUTATIONS = [
    ("grace period below the drain timeout",
     lambda o: _container(o).update(terminationGracePeriodSeconds=10)),
    ("drain timeout above the grace period",
     lambda o: _flags(o, "--drain_timeout_seconds=20", "--drain_timeout_seconds=60")),
    ("readiness probe on another port",
     lambda o: _container(o)["containers"][0]["readinessProbe"]["grpc"].update(port=50052)),
    ("an HTTP liveness probe",
     lambda o: _container(o)["containers"][0].update(livenessProbe={"httpGet": {"port": 9464}})),
    ("--port not the containerPort", lambda o: _flags(o, "--port=50051", "--port=50061")),
    ("misspelt container field",
     lambda o: _container(o)["containers"][0].update(readinesProbe={})),
    ("selector not matching the pods",
     lambda o: [x for x in o if x["kind"] == "Deployment"][0]["spec"]["selector"]
     ["matchLabels"].update({"app.kubernetes.io/name": "other"})),
    ("Service selecting no pods",
     lambda o: [x for x in o if x["kind"] == "Service"][0]["spec"]["selector"]
     .update({"app.kubernetes.io/component": "other"})),
    ("missing container image",
     lambda o: _container(o)["containers"][0].pop("image")),
    ("threads above the CPU limit", lambda o: _flags(o, "--threads=2", "--threads=64")),
    ("flagfile key absent",
     lambda o: _container(o)["containers"][0].update(args=["--flagfile=/etc/favor/other"])),
    ("HPA on a missing Deployment",
     lambda o: [x for x in o if x["kind"] == "HorizontalPodAutoscaler"][0]["spec"]
     ["scaleTargetRef"].update(name="nothing")),
    ("PDB with both bounds",
     lambda o: [x for x in o if x["kind"] == "PodDisruptionBudget"][0]["spec"]
     .update(minAvailable=1)),
    ("no headless Service",
     lambda o: [x for x in o if x["kind"] == "Service" and
                x["spec"].get("clusterIP") == "None"][0]["spec"].pop("clusterIP")),
]


def k8s_variants(repo):
    root = os.path.join(repo, *K8S_DIR)
    return {"base": load_kustomization(os.path.join(root, "base")),
            "gpu": load_kustomization(os.path.join(root, "gpu"))}


def test_k8s(repo):
    variants = k8s_variants(repo)
    for name, objects in variants.items():
        print("%s: %d objects: %s" % (name, len(objects),
                                      ", ".join("%s/%s" % (o["kind"], o["metadata"]["name"])
                                                for o in objects)))
        check_objects(objects)
    gpu = [o for o in variants["gpu"] if o["kind"] == "Deployment"][0]
    container = gpu["spec"]["template"]["spec"]["containers"][0]
    check("--device=cuda" in container["args"], "the GPU variant does not pass --device=cuda")
    base = [o for o in variants["base"] if o["kind"] == "Deployment"][0]
    pod = base["spec"]["template"]["spec"]
    check(pod["containers"][0]["command"] == [SERVER_BINARY],
          "the container's command must be %s" % SERVER_BINARY)
    check_image_names(repo, pod["securityContext"]["runAsUser"])
    check(container["resources"]["limits"].get("nvidia.com/gpu") == 1,
          "the GPU variant does not ask for a GPU")
    check(container["image"] == "localhost/favor:gpu", "the GPU image: %s" % container["image"])
    # The documented way to set the CPU image (kustomize edit set image in
    # base) must not reach the GPU variant, which has its own image: GPU pods
    # would run the CPU image.
    with tempfile.TemporaryDirectory() as scratch:
        copy_root = os.path.join(scratch, "k8s")
        shutil.copytree(os.path.join(repo, *K8S_DIR), copy_root)
        base_kustomization = os.path.join(copy_root, "base", "kustomization.yaml")
        edited = load_yaml(base_kustomization)
        edited["images"] = [{"name": "localhost/favor", "newName": "registry.example/favor",
                             "newTag": "1.0"}]
        with open(base_kustomization, "w") as f:
            yaml.safe_dump(edited, f)
        images = {o["kind"]: pod_containers(o)[0]["image"]
                  for o in load_kustomization(os.path.join(copy_root, "gpu"))
                  if o["kind"] == "Deployment"}
        check(images == {"Deployment": "localhost/favor:gpu"},
              "the base's image setting reaches the GPU variant: %s" % images)
    for what, mutate in MUTATIONS:
        broken = copy.deepcopy(variants["base"])
        mutate(broken)
        try:
            check_objects(broken)
        except Failure as error:
            print("rejected as it should be (%s): %s" % (what, error))
            continue
        raise Failure("the check accepted a broken manifest: " + what)


def test_kubectl(repo):
    kubectl = shutil.which("kubectl")
    variants = k8s_variants(repo)
    if kubectl is None:
        skip("kubectl not found: `kubectl kustomize` not run (the schema check, ctest "
             "deploy.KubernetesSchema, covers the manifests without it)")
    root = os.path.join(repo, *K8S_DIR)
    for name, ours in variants.items():
        rendered = list(yaml.safe_load_all(run([kubectl, "kustomize",
                                                os.path.join(root, name)], quiet=True)))
        key = lambda o: (o["kind"], o["metadata"]["name"])
        check(sorted(map(key, rendered)) == sorted(map(key, ours)),
              "%s: kubectl renders %s" % (name, sorted(map(key, rendered))))
        ours_by_key = {key(o): o for o in ours}
        for obj in rendered:
            check(obj == ours_by_key[key(obj)],
                  "%s: kubectl's %s/%s differs from the schema check's reading:\n%s\n%s" %
                  (name, obj["kind"], obj["metadata"]["name"], obj, ours_by_key[key(obj)]))
        check_objects(rendered)
    # `kubectl apply --dry-run=client` needs an API server even so (it asks the server
    # which kinds exist), so it cannot run here: say so rather than pretend.
    print("note: kubectl apply/create --dry-run=client need an API server for discovery "
          "and are not run; `kubectl kustomize` rendered both variants offline")


# ---------------------------------------------------------------- grafana

DASHBOARD = ("deploy", "grafana", "dashboards", "favor.json")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def dashboard_queries(dashboard):
    """(panel title, expr) of every panel target and query variable."""
    queries = []

    def walk(panels):
        for panel in panels:
            for target in panel.get("targets", []):
                queries.append((panel["title"], target["expr"]))
            walk(panel.get("panels", []))
    walk(dashboard["panels"])
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            queries.append(("variable " + variable["name"],
                            query["query"] if isinstance(query, dict) else query))
    return queries


def metric_names(expr):
    """The series names an expression reads (histogram suffixes kept)."""
    return set(re.findall(r"\b(favor_[a-z_]+)\b", expr))


def exported_families(repo):
    text = open(os.path.join(repo, "server", "metrics", "metric_names.h")).read()
    return set(re.findall(r'"(favor_[a-z_]+)"', text))


def family_of(name, families):
    for suffix in ("",) + HISTOGRAM_SUFFIXES:
        if suffix and name.endswith(suffix) and name[:-len(suffix)] in families:
            return name[:-len(suffix)]
    return name if name in families else None


def load_dashboard(repo):
    with open(os.path.join(repo, *DASHBOARD)) as f:
        return json.load(f)


def check_dashboard(dashboard, families):
    check(len(families) >= 10, "metric_names.h: %s" % families)
    ids = []
    for panel in dashboard["panels"]:
        ids.append(panel["id"])
        check(set(panel["gridPos"]) == {"h", "w", "x", "y"} and
              panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24,
              "panel %s: gridPos %s" % (panel["title"], panel["gridPos"]))
        if panel["type"] != "row":
            check(panel["datasource"]["uid"] == "${datasource}",
                  "panel %s does not use the data source variable" % panel["title"])
            check(panel.get("targets"), "panel %s has no query" % panel["title"])
    check(len(set(ids)) == len(ids), "duplicate panel ids")
    queries = dashboard_queries(dashboard)
    used = set()
    for title, expr in queries:
        names = metric_names(expr)
        check(names, "%s: %r reads no favor_ metric" % (title, expr))
        for name in names:
            check(family_of(name, families), "%s: %s is not exported (server/metrics/"
                  "metric_names.h)" % (title, name))
            used.add(family_of(name, families))
        # Every bare word followed by '{' or '[' is a metric name: none but ours.
        for word in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{\[]", expr):
            check(word.startswith("favor_"), "%s: %r reads %s" % (title, expr, word))
    required = {"favor_requests_total", "favor_request_duration_seconds",
                "favor_queue_duration_seconds", "favor_compute_duration_seconds",
                "favor_batch_size_requests", "favor_batch_size_tokens",
                "favor_tokens_processed_total", "favor_queue_depth", "favor_requests_in_flight"}
    check(required <= used, "the dashboard does not show %s" % sorted(required - used))
    exprs = " ".join(e for _, e in queries)
    for q in ("0.5", "0.95", "0.99"):
        check("histogram_quantile(%s, sum by (le) (rate(favor_request_duration_seconds_bucket"
              % q in exprs, "no histogram_quantile(%s) of the request duration" % q)
    return "%d panels, %d queries over %s" % (len(ids), len(queries), sorted(used))


def _panel(dashboard, title):
    return [p for p in dashboard["panels"] if p["title"] == title][0]


# Broken copies of the dashboard that check_dashboard must reject.
DASHBOARD_MUTATIONS = [
    ("a metric the server does not export",
     lambda d: _panel(d, "Queue depth")["targets"][0].update(expr="sum(favor_queue_length)")),
    ("a metric of another exporter",
     lambda d: _panel(d, "Queue depth")["targets"][0].update(
         expr="sum(favor_queue_depth) / sum(node_load1{job=\"x\"})")),
    ("no tokens/s panel", lambda d: d["panels"].remove(_panel(d, "Tokens per second"))),
    ("no p99 of the request duration",
     lambda d: _panel(d, "Request latency")["targets"].pop()),
    ("a fixed data source", lambda d: _panel(d, "Queue depth").update(
        datasource={"type": "prometheus", "uid": "abc"})),
    ("duplicate panel ids", lambda d: _panel(d, "Queue depth").update(
        id=_panel(d, "Tokens per second")["id"])),
]


def test_dashboard(repo):
    dashboard = load_dashboard(repo)
    families = exported_families(repo)
    print("dashboard: " + check_dashboard(dashboard, families))
    for what, mutate in DASHBOARD_MUTATIONS:
        broken = copy.deepcopy(dashboard)
        mutate(broken)
        try:
            check_dashboard(broken, families)
        except Failure as error:
            print("rejected as it should be (%s): %s" % (what, error))
            continue
        raise Failure("the dashboard check accepted a broken dashboard: " + what)
    provisioning = os.path.join(repo, "deploy", "grafana", "provisioning")
    datasources = load_yaml(os.path.join(provisioning, "datasources", "prometheus.yml"))
    check(datasources["apiVersion"] == 1, "datasources: apiVersion")
    source = datasources["datasources"][0]
    check(source["type"] == "prometheus" and source["url"] == "http://prometheus:9090",
          "the data source is not the compose project's Prometheus: %s" % source)
    datasource_variable = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    check(datasource_variable and datasource_variable[0]["query"] == source["type"],
          "the dashboard's data source variable does not select Prometheus sources")
    providers = load_yaml(os.path.join(provisioning, "dashboards", "favor.yml"))
    check(providers["apiVersion"] == 1, "dashboards: apiVersion")
    path = providers["providers"][0]["options"]["path"]
    compose = load_yaml(os.path.join(repo, "deploy", "docker-compose.yml"))
    mounts = dict(v.split(":")[1::-1] for v in compose["services"]["grafana"]["volumes"])
    check(path in mounts and os.path.normpath(os.path.join(repo, "deploy", mounts[path])) ==
          os.path.normpath(os.path.dirname(os.path.join(repo, *DASHBOARD))),
          "the provider's path %s is not where compose mounts deploy/grafana/dashboards" % path)


# ---------------------------------------------------------------- live

def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def prometheus_query(base, query):
    url = "%s/api/v1/query?%s" % (base, urllib.parse.urlencode({"query": query}))
    try:
        answer = json.loads(http_get(url))
    except urllib.error.HTTPError as error:
        raise Failure("Prometheus rejected %r: %s" % (query, error.read().decode()))
    check(answer["status"] == "success", "query %r: %s" % (query, answer))
    return answer["data"]["result"]


def wait_for(what, condition, seconds_total, process=None):
    deadline = time.time() + seconds_total
    last = None
    while time.time() < deadline:
        if process is not None:
            check(process.poll() is None, "%s: the process exited" % what)
        try:
            result = condition()
            if result:
                return result
        except (OSError, ValueError, KeyError, Failure) as error:
            last = error
        time.sleep(0.5)
    raise Failure("timed out waiting for %s (last error: %s)" % (what, last))


def start(command, log_path):
    print("$ " + " ".join(command), flush=True)
    with open(log_path, "w") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)


def stop(process, log_path, name):
    if process is None:
        return
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    with open(log_path) as f:
        tail = f.read()[-3000:]
    print("---- %s log (end) ----\n%s" % (name, tail))


def derived_prometheus_config(repo, metrics_port, out):
    """deploy/prometheus/prometheus.yml with the favor job aimed at the test server."""
    source_dir = os.path.join(repo, "deploy", "prometheus")
    config = load_yaml(os.path.join(source_dir, "prometheus.yml"))
    config["global"].update(scrape_interval="1s", scrape_timeout="1s", evaluation_interval="1s")
    config["rule_files"] = [os.path.join(source_dir, r) for r in config["rule_files"]]
    favor_jobs = [j for j in config["scrape_configs"] if j["job_name"] == "favor"]
    check(len(favor_jobs) == 1, "prometheus.yml: one job 'favor' expected")
    job = favor_jobs[0]
    for discovery in [k for k in job if k.endswith("_sd_configs") or k == "static_configs"]:
        del job[discovery]
    job["static_configs"] = [{"targets": ["127.0.0.1:%d" % metrics_port]}]
    config["scrape_configs"] = [job]
    path = os.path.join(out, "prometheus.yml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    return path


def grpc_client(proto_root, out, port, server):
    """A Favor stub on the test server, once its health says SERVING."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "service"))
    import grpc
    import python_peer_test as peer
    peer.generate_stubs(proto_root, out)
    from favor.v1 import favor_pb2 as pb, favor_pb2_grpc as rpc
    import health_pb2
    import health_pb2_grpc
    channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    peer.wait_serving(grpc, health_pb2, health_pb2_grpc, channel, server)
    return grpc, pb, rpc.FavorStub(channel)


def make_calls(client):
    """Three Embed calls (OK) and one empty input (INVALID_ARGUMENT)."""
    grpc, pb, stub = client
    stub.ListModels(pb.ListModelsRequest(), timeout=10)
    for n in (3, 20, 100):
        response = stub.Embed(pb.EmbedRequest(inputs=[pb.EmbedInput(token_ids=[5] * n),
                                                       pb.EmbedInput(token_ids=[7] * 4)]),
                              timeout=60)
        check(response.num_tokens == n + 4, "Embed: %s" % response.num_tokens)
    try:
        stub.Embed(pb.EmbedRequest(inputs=[pb.EmbedInput(token_ids=[])]), timeout=10)
        raise Failure("an empty input was accepted")
    except grpc.RpcError as error:
        check(error.code() == grpc.StatusCode.INVALID_ARGUMENT, str(error))


def configmap_flagfile(repo, out):
    objects = k8s_variants(repo)["base"]
    configmap = [o for o in objects if o["kind"] == "ConfigMap"][0]
    key = list(configmap["data"])[0]
    path = os.path.join(out, key)
    with open(path, "w") as f:
        f.write(configmap["data"][key])
    return path


def scraped_embed_count(base):
    result = prometheus_query(base, 'sum(favor_request_duration_seconds_count{job="favor",'
                              'method="Embed",code="OK"})')
    return float(result[0]["value"][1]) if result else 0.0


def check_histogram(base):
    """The query API returns the request-duration histogram with the server's bounds."""
    histogram = prometheus_query(base, 'favor_request_duration_seconds_bucket{job="favor",'
                                 'method="Embed",code="OK"}')
    bounds = {s["metric"]["le"] for s in histogram}
    check({"0.0001", "1", "120", "+Inf"} <= bounds, "le bounds: %s" % sorted(bounds))
    invalid = prometheus_query(base, 'sum(favor_requests_total{code="INVALID_ARGUMENT"})')
    check(invalid and float(invalid[0]["value"][1]) == 2, "INVALID_ARGUMENT: %s" % invalid)
    p50 = prometheus_query(base, 'histogram_quantile(0.5, sum by (le) (rate('
                           'favor_request_duration_seconds_bucket{method="Embed"}[1m])))')
    value = float(p50[0]["value"][1])
    check(0 < value <= 120, "p50 of Embed from the scraped histogram: %s" % value)
    print("Prometheus: %d buckets of favor_request_duration_seconds; Embed p50 %.4f s" %
          (len(histogram), value))


def check_rules(base):
    """The recording rules of deploy/prometheus/rules, evaluated by this Prometheus."""
    rules = json.loads(http_get(base + "/api/v1/rules"))["data"]["groups"]
    health = {r["name"]: r["health"] for g in rules for r in g["rules"]}
    check(len(health) >= 5, "Prometheus loaded no rules from deploy/prometheus: %s" % health)
    for record in ("favor:requests:rate5m", "favor:request_duration_seconds:p99_5m",
                   "favor:tokens_processed:rate5m"):
        wait_for(record, lambda: prometheus_query(base, record), 20)
    rules = json.loads(http_get(base + "/api/v1/rules"))["data"]["groups"]
    health = {r["name"]: r["health"] for g in rules for r in g["rules"]}
    check(all(h == "ok" for h in health.values()), "rule health: %s" % health)


def check_dashboard_queries(base, dashboard):
    """Every dashboard query runs in Prometheus and returns series."""
    # Grafana's variables, as a 1 s scrape interval would make them.
    substitutions = {"$__rate_interval": "1m", "$model": ".*", "$method": ".*",
                     "$instance": ".*"}
    for title, expr in dashboard_queries(dashboard):
        match = re.fullmatch(r"label_values\((?:(.+), )?(\w+)\)", expr)
        if match:
            check(match.group(1), "label_values without a metric: %s" % expr)
            expr = "group by (%s) (%s)" % (match.group(2), match.group(1))
        for variable, value in substitutions.items():
            expr = expr.replace(variable, value)
        check("$" not in expr, "%s: unknown variable in %r" % (title, expr))
        result = wait_for("%s: %s" % (title, expr), lambda: prometheus_query(base, expr), 20)
        print("dashboard query OK (%d series): %s: %s" % (len(result), title, expr))


def check_compose_healthcheck(repo, cli_binary, port):
    """deploy/docker-compose.yml's health check of favor-server, run with the
    build's favor-cli against the test server."""
    compose = load_yaml(os.path.join(repo, "deploy", "docker-compose.yml"))
    test = compose["services"]["favor-server"]["healthcheck"]["test"]
    check(test[0] == "CMD" and test[1] == "favor-cli", "health check: %s" % test)
    command = [cli_binary] + [a.replace(":50051", ":%d" % port) for a in test[2:]]
    output = run(command)
    check("SERVING" in output, "the health check printed %r" % output)


def test_live(repo, server_binary, models, proto_root, cli_binary=None):
    dashboard = load_dashboard(repo)
    prometheus_binary = shutil.which("prometheus", path="/usr/bin:" + os.environ.get("PATH", ""))
    with tempfile.TemporaryDirectory(prefix="favor-deploy-") as out:
        port, metrics_port, web = free_port(), free_port(), free_port()
        http_port = free_port()
        # The Kubernetes ConfigMap's flags, with the addresses made local.
        server_log = os.path.join(out, "server.log")
        server = start([server_binary, "--flagfile=" + configmap_flagfile(repo, out),
                        "--bind_address=127.0.0.1", "--port=%d" % port,
                        "--metrics_port=%d" % metrics_port, "--http_port=%d" % http_port,
                        "--model_repository=" + models,
                        "--drain_timeout_seconds=5"], server_log)
        prometheus = None
        prometheus_log = os.path.join(out, "prometheus.log")
        try:
            if prometheus_binary is not None:
                prometheus = start([prometheus_binary, "--config.file=" +
                                    derived_prometheus_config(repo, metrics_port, out),
                                    "--storage.tsdb.path=" + os.path.join(out, "tsdb"),
                                    "--web.listen-address=127.0.0.1:%d" % web], prometheus_log)
            client = grpc_client(proto_root, out, port, server)
            make_calls(client)
            scrape = http_get("http://127.0.0.1:%d/metrics" % metrics_port)
            exported = set(re.findall(r"^(favor_[a-z_]+)(?:\{| )", scrape, re.M))
            for title, expr in dashboard_queries(dashboard):
                for name in metric_names(expr):
                    check(name in exported, "dashboard panel %r reads %s, which the server's "
                          "/metrics does not have after calls" % (title, name))
            print("every dashboard metric is in a live scrape (%d series names)" % len(exported))
            if cli_binary:
                check_compose_healthcheck(repo, cli_binary, port)
            else:
                print("note: no favor-cli given: the compose health check is not run")
            if prometheus is None:
                skip("prometheus not found (Debian package prometheus): favor-server served "
                     "every dashboard metric; the Prometheus scrape and queries not run")
            base = "http://127.0.0.1:%d" % web
            wait_for("Prometheus ready", lambda: http_get(base + "/-/ready"), 30, prometheus)
            targets = wait_for(
                "the favor target up",
                lambda: [t for t in json.loads(http_get(base + "/api/v1/targets"))["data"]
                         ["activeTargets"] if t["health"] == "up"], 20, prometheus)
            print("Prometheus scrapes %s" % targets[0]["scrapeUrl"])
            # A series appears with its first call; calls after a scrape has seen it
            # are what rate() counts.
            wait_for("the first calls scraped", lambda: scraped_embed_count(base) == 3, 20)
            # Slow clients must not blind the monitoring: 64 idle connections
            # held open to the metrics port and 64 to the HTTP port while
            # Prometheus (1 s interval, 1 s timeout) keeps scraping.
            idle = [socket.create_connection(("127.0.0.1", p), timeout=5)
                    for p in [metrics_port] * 64 + [http_port] * 64]
            try:
                make_calls(client)
                wait_for("the second calls scraped beside 128 idle connections",
                         lambda: scraped_embed_count(base) == 6, 20)
                target = json.loads(http_get(base + "/api/v1/targets"))["data"]["activeTargets"][0]
                check(target["health"] == "up" and not target["lastError"],
                      "a scrape failed beside idle connections: %s" % target["lastError"])
                print("Prometheus scraped beside 128 idle connections (last scrape %.3f s)"
                      % target["lastScrapeDuration"])
            finally:
                for connection in idle:
                    connection.close()
            check_histogram(base)
            check_rules(base)
            check_dashboard_queries(base, dashboard)
            server.send_signal(signal.SIGTERM)
            check(server.wait(timeout=30) == 0, "favor-server did not exit 0 on SIGTERM")
        finally:
            stop(prometheus, prometheus_log, "prometheus")
            stop(server, server_log, "favor-server")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- main

TESTS = {"promtool": test_promtool, "compose": test_compose, "k8s": test_k8s,
         "kubectl": test_kubectl, "dashboard": test_dashboard, "live": test_live}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in TESTS:
        print(__doc__)
        return 2
    start_time = time.time()
    try:
        TESTS[sys.argv[1]](os.path.abspath(sys.argv[2]), *sys.argv[3:])
    except Failure as error:
        print("FAILED: %s" % error)
        return 1
    print("%s: OK (%.1f s)" % (sys.argv[1], time.time() - start_time))
    return 0


if __name__ == "__main__":
    sys.exit(main())
