# kgtrain, CPU build on Debian 12 (LibTorch 1.13 from Debian).
#   docker build -t kgtrain .
#   docker run --rm -v "$PWD/data:/work/data" -v "$PWD/runs:/work/runs" kgtrain fit /opt/kgtrain/share/kgtrain/recipes/fashion_mnist.toml
#
# CUDA variant: start from an image that already has PyTorch with CUDA (for example NVIDIA's NGC
# PyTorch container, nvcr.io/nvidia/pytorch:<tag>-py3) and build against its LibTorch:
#   FROM nvcr.io/nvidia/pytorch:<tag>-py3
#   RUN apt-get update && apt-get install -y libopencv-dev libcli11-dev nlohmann-json3-dev catch2 ninja-build \
#       && (apt-get install -y libtomlplusplus-dev || true)
#   COPY . /src
#   RUN cmake -S /src -B /src/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
#         -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
#       && cmake --build /src/build && cmake --install /src/build
FROM debian:bookworm-slim AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build libtorch-dev libgloo-dev libopencv-dev libtomlplusplus-dev libcli11-dev \
      nlohmann-json3-dev catch2 zlib1g-dev && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /src/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKGTRAIN_BUILD_TESTS=OFF \
      -DCMAKE_INSTALL_PREFIX=/opt/kgtrain && cmake --build /src/build && cmake --install /src/build

FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libtorch1.13 libopencv-core406 libopencv-imgproc406 libopencv-imgcodecs406 zlib1g dataset-fashion-mnist \
      && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/kgtrain /opt/kgtrain
ENV PATH=/opt/kgtrain/bin:$PATH KGTRAIN_RECIPES=/opt/kgtrain/share/kgtrain/recipes
WORKDIR /work
ENTRYPOINT ["kgtrain"]
