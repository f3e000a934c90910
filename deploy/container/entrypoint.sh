#!/bin/sh
# Entry point of the Favor image: favor-server configured by environment and
# flags (docs/container.md).
#
# Every environment variable FLAGS_<name> becomes --<name> through abseil's
# --fromenv, and the container's arguments follow it, so that a flag given as
# an argument wins over the same flag from the environment (abseil: the last
# value wins). The image sets FLAGS_bind_address=0.0.0.0 and
# FLAGS_model_repository=/opt/favor/models. An unknown FLAGS_<name> is an
# error at start-up, never silently ignored. `--flagfile=FILE` works as an
# argument.
set -eu

names=$(env | sed -n 's/^FLAGS_\([A-Za-z0-9_]*\)=.*/\1/p' | sort -u | paste -sd, -)
if [ -n "$names" ]; then
  exec /usr/local/bin/favor-server "--fromenv=$names" "$@"
fi
exec /usr/local/bin/favor-server "$@"
