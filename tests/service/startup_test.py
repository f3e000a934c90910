#!/usr/bin/python3
"""favor-server refuses a gRPC port it cannot own, with one clear line and
exit code 1, instead of serving beside another process.

gRPC sets SO_REUSEPORT on its listeners by default, so a second server on a
port already in use (by a process that set it too, as another favor-server
does) started and took a share of the connections, with its own models.
Here a Python socket with SO_REUSEPORT holds the port; then a port outside
[0, 65535], which gRPC took modulo 65536, and other flags out of range.

Usage: startup_test.py SERVER_BINARY MODEL_REPOSITORY PROTO_ROOT
"""
import re
import socket
import subprocess
import sys


def start(binary, repository, port, *flags):
    """Runs the server until it exits (60 s at most); its code and stderr."""
    server = subprocess.Popen(
        [binary, f"--model_repository={repository}", f"--port={port}",
         "--http_port=0", "--metrics_port=0", "--bind_address=127.0.0.1", *flags],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, err = server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        _, err = server.communicate()
        raise AssertionError(f"--port={port} {flags}: still serving after 60 s\n{err}")
    return server.returncode, err


def check_help_and_version(binary):
    """--help lists the flags of every file that defines them; --version
    names the release and the commit, not how abseil was built."""
    run = subprocess.run([binary, "--help"], capture_output=True, text=True)
    for flag in ("--port", "--http_port", "--max_batch_tokens",
                 "--tokenizer_threads", "--http_cors_allow_origins"):
        assert f"{flag} " in run.stdout, (flag, run.stdout[-2000:])
    run = subprocess.run([binary, "--version"], capture_output=True, text=True)
    assert run.returncode == 0 and re.fullmatch(
        r"favor-server \d+\.\d+\.\d+ \(([0-9a-f]{40}|unknown)\)\n",
        run.stdout), run
    print(f"ok --help lists the flags, --version says {run.stdout.strip()}")


def main():
    binary, repository = sys.argv[1:3]
    check_help_and_version(binary)
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    code, err = start(binary, repository, port)
    assert code == 1 and "is the port in use?" in err, (code, err)
    print(f"ok port {port} in use (SO_REUSEPORT holder): exit 1")
    holder.close()
    for port in (70000, -1):
        code, err = start(binary, repository, port)
        assert code == 1 and f"--port is {port}; must be in [0, 65535]" in err, (code, err)
        print(f"ok --port={port}: exit 1 naming the flag")
    # Values no Options struct checks, which were taken as a default or 0.
    for flag, value, bounds in (("threads", -1, "[0, 4096]"),
                                ("drain_timeout_seconds", -1, "[0, 2^63 - 1]"),
                                ("max_memory_bytes", -5, "[-1, 2^63 - 1]"),
                                ("metrics_port", 70000, "[0, 65535]"),
                                ("http_port", 70000, "[0, 65535]"),
                                ("http_threads", 0, "[1, 1024]"),
                                # Checked by the Options structs too, which
                                # named their struct (Batcher::Options,
                                # ModelOptions), not the flag.
                                ("cpu_block_tokens", 0, "[1, 2^63 - 1]"),
                                ("cpu_sub_batch_tokens", -1, "[0, 2^63 - 1]"),
                                ("max_batch_tokens", 0, "[1, 2^63 - 1]"),
                                ("max_queue_delay_micros", -1, "[0, 2^63 - 1]"),
                                ("max_enqueue_group_wait_micros", -1,
                                 "[0, 2^63 - 1]"),
                                ("max_inputs_per_call", 0, "[1, 2^63 - 1]"),
                                ("tokenizer_threads", 0, "[1, 1024]"),
                                ("max_attend_tensor_elements", 0,
                                 "[1, 2^63 - 1]")):
        code, err = start(binary, repository, 0, f"--{flag}={value}")
        assert code == 1 and f"--{flag} is {value}; must be in {bounds}" in err, (code, err)
        print(f"ok --{flag}={value}: exit 1 naming the flag")
    # An origin with a path would never match what browsers send.
    code, err = start(binary, repository, 0,
                      "--http_cors_allow_origins=https://app.example.com/")
    assert code == 1 and "--http_cors_allow_origins: CORS origin " \
        "'https://app.example.com/' is not scheme://host[:port]" in err, (code, err)
    print("ok --http_cors_allow_origins with a path: exit 1 naming the flag")


if __name__ == "__main__":
    main()
