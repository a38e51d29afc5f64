# kgtrain, CPU build on Debian 12 (LibTorch 1.13 from Debian, OpenBLAS).
#   docker build -t kgtrain .
#   mkdir -p data runs
#   docker run --rm -v "$PWD/data:/work/data" kgtrain import-idx \
#       --train-images /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz \
#       --train-labels /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz \
#       --test-images /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz \
#       --test-labels /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz --out data/fashion_mnist
#   docker run --rm -v "$PWD/data:/work/data" -v "$PWD/runs:/work/runs" kgtrain fit /opt/kgtrain/share/kgtrain/recipes/fashion_mnist.toml
# No Docker engine runs where kgtrain is developed: scripts/check_docker_runtime.sh installs the runtime stage's
# RUNTIME_PACKAGES into a Debian 12 root (mmdebstrap), copies in a kgtrain built as the build stage builds it, and
# runs --version, import-idx and fit --smoke there (CI runs it).
#
# CUDA variant: start from an image that already has PyTorch with CUDA (for example NVIDIA's NGC
# PyTorch container, nvcr.io/nvidia/pytorch:<tag>-py3) and use scripts/build_cuda.sh (docs/devices.md: Building with CUDA).
FROM debian:bookworm-slim AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build libtorch-dev libgloo-dev libopencv-dev libjpeg62-turbo-dev libpng-dev \
      libwebp-dev libtiff-dev libzstd-dev \
      libtomlplusplus-dev libcli11-dev nlohmann-json3-dev catch2 zlib1g-dev && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /src/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKGTRAIN_BUILD_TESTS=OFF \
      -DCMAKE_INSTALL_PREFIX=/opt/kgtrain && cmake --build /src/build --target kgtrain && cmake --install /src/build

FROM debian:bookworm-slim
# libopenblas0-openmp: without it LibTorch calls the reference BLAS (matrix products 10-25x slower).
ARG RUNTIME_PACKAGES="libtorch1.13 libopenblas0-openmp libopencv-core406 libopencv-imgproc406 libjpeg62-turbo libpng16-16 libwebp7 libtiff6 zlib1g libzstd1 dataset-fashion-mnist"
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $RUNTIME_PACKAGES \
      && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/kgtrain /opt/kgtrain
ENV PATH=/opt/kgtrain/bin:$PATH KGTRAIN_RECIPES=/opt/kgtrain/share/kgtrain/recipes
WORKDIR /work
ENTRYPOINT ["kgtrain"]
