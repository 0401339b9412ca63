# syntax=docker/dockerfile:1
# gpu-doctor's container image, for manifests/k8s/ (the DaemonSet and the fleet Job).
#
#   docker build -t REGISTRY/gpu-doctor:VERSION .
#   # The node it runs on, as the DaemonSet sees it (every GPU, none requested, / read-only):
#   docker run --rm --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=all \
#     -e NVIDIA_DRIVER_CAPABILITIES=utility,compute -v /:/host:ro REGISTRY/gpu-doctor:VERSION
#
# The binary links only glibc and libgcc_s (`ldd` shows nothing else; the tests check it), and
# loads libnvidia-ml and libcuda at run time from what the NVIDIA container toolkit mounts in,
# so the base is a minimal glibc system. It keeps /bin/sh because the manifests' pods run
# gpu-doctor from a small shell loop; distroless/cc would do for `gpu-doctor` alone. A musl
# build would need the musl target and still a glibc to dlopen the driver's libraries.

FROM rust:1.95-bookworm AS build
WORKDIR /src
# Only what the release binary is built from: manifests/*.toml and the smoke kernels are
# embedded in it. (.dockerignore keeps target/ and .git out of the context.)
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY manifests ./manifests
RUN cargo build --release --locked && ./target/release/gpu-doctor --version

FROM debian:bookworm-slim
COPY --from=build /src/target/release/gpu-doctor /usr/local/bin/gpu-doctor
# Nobody by default; the DaemonSet runs as root (without capabilities) to write node_exporter's
# textfile folder. See the manifests for what each user can read of the node.
USER 65534:65534
ENTRYPOINT ["/usr/local/bin/gpu-doctor"]
# The node whose / is mounted at /host. The manifests run their own command instead.
CMD ["--host-root", "/host", "doctor"]
