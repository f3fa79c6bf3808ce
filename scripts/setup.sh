#!/usr/bin/env bash
# Installs what fp4jit needs to build and test on Debian 12 (bookworm). Idempotent: packages
# already present are not touched, and apt is skipped entirely when nothing is missing.
#   - Debian packages (apt-get, through sudo when not root)
#   - numpy and ml_dtypes for the Python tests, setuptools and wheel to build the Python package
#     without fetching anything (pip; a warning if that fails: the tests are then skipped)
#   - with --torch: PyTorch (pip, about 5 GB with its CUDA libraries; used on the CPU where no
#     GPU is), which the tests of fp4jit.torch and the training example need (they skip without
#     it). Not part of the test command's setup: it would add minutes to every CI run.
#   - cuobjdump and the nvdisasm it runs, where the CUDA toolkit lacks them: NVIDIA's wheels
#     (pip), for the tests that read the compiled GEMM kernels' SASS (a warning if that fails:
#     those checks are then skipped, the kernels still compiled)
#   - a warning (not an error) when the CUDA toolkit is absent from /usr/local/cuda
set -euo pipefail

PACKAGES=(build-essential cmake g++ libfmt-dev libsqlite3-dev llvm-14-dev libgtest-dev
  libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev clang-format python3 python3-pip
  # what LLVM 14's CMake package links the host backend against
  zlib1g-dev libffi-dev libncurses-dev libxml2-dev)

say() { echo "setup: $*"; }
warn() { echo "setup: warning: $*" >&2; }

installed() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }

install_packages() {
  if ! command -v dpkg >/dev/null 2>&1; then
    warn "dpkg not found: not a Debian system; install the equivalents of: ${PACKAGES[*]}"
    return
  fi
  local missing=()
  for p in "${PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
  if [[ ${#missing[@]} -eq 0 ]]; then
    say "all ${#PACKAGES[@]} Debian packages present"
    return
  fi
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: error: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  say "installing: ${missing[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# pip install "$@" for python3: into the active virtual environment if there is one, else the
# user site (Debian's Python refuses installs outside a virtual environment, PEP 668, unless told).
pip_install() {
  if python3 -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)' 2>/dev/null; then
    python3 -m pip install --quiet "$@"
    return
  fi
  python3 -m pip install --user --quiet "$@" 2>/dev/null ||
    python3 -m pip install --user --quiet --break-system-packages "$@"
}

install_python_modules() {
  local python=python3
  if ! command -v "$python" >/dev/null 2>&1; then
    warn "python3 not found: the Python interop test will be skipped"
    return
  fi
  local modules=(numpy ml_dtypes setuptools wheel) import
  import="import $(IFS=,; echo "${modules[*]}")"
  if "$python" -c "$import" 2>/dev/null; then
    say "python3 has ${modules[*]}"
    return
  fi
  say "installing ${modules[*]} for $python (pip)"
  if pip_install "${modules[@]}"; then
    "$python" -c "$import" 2>/dev/null && return
  fi
  warn "could not install ${modules[*]}: the Python tests will be skipped"
}

install_torch() {
  local python=python3
  command -v "$python" >/dev/null 2>&1 || return 0
  if "$python" -c "import torch" 2>/dev/null; then
    say "python3 has torch"
    return
  fi
  say "installing torch for $python (pip; about 5 GB)"
  if pip_install torch; then
    "$python" -c "import torch" 2>/dev/null && return
  fi
  warn "could not install torch: the tests of fp4jit.torch and the training example will be skipped"
}

# Whether python3's site folders hold NVIDIA's wheel binary $1 (nvidia/cu*/bin/$1).
wheel_has() {
  python3 - "$1" <<'PY' 2>/dev/null
import glob, os, site, sys
dirs = [site.getusersitepackages()] + site.getsitepackages()
sys.exit(0 if any(glob.glob(os.path.join(d, "nvidia", "cu*", "bin", sys.argv[1])) for d in dirs) else 1)
PY
}

install_sass_tools() {
  if [[ -x /usr/local/cuda/bin/cuobjdump && -x /usr/local/cuda/bin/nvdisasm ]] ||
    { command -v cuobjdump >/dev/null 2>&1 && command -v nvdisasm >/dev/null 2>&1; }; then
    say "cuobjdump and nvdisasm found"
    return
  fi
  command -v python3 >/dev/null 2>&1 || { warn "no python3: the SASS checks will be skipped"; return; }
  if wheel_has cuobjdump && wheel_has nvdisasm; then
    say "python3's site has NVIDIA's cuobjdump and nvdisasm"
    return
  fi
  say "installing nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (pip)"
  if pip_install "nvidia-cuda-cuobjdump>=13,<14" "nvidia-cuda-nvdisasm>=13,<14"; then
    wheel_has cuobjdump && wheel_has nvdisasm && return
  fi
  warn "could not install cuobjdump and nvdisasm: the GEMM kernels' SASS will not be read"
}

check_cuda() {
  if [[ -x /usr/local/cuda/bin/nvcc || -d /usr/local/cuda/include ]]; then
    say "CUDA toolkit found at /usr/local/cuda"
  else
    warn "no CUDA toolkit at /usr/local/cuda: fine for the CPU reference backend; the CUDA" \
      "backend needs it (NVRTC headers and libraries)"
  fi
}

with_torch=0
for arg in "$@"; do
  case $arg in
    --torch) with_torch=1 ;;
    *) echo "setup: error: unknown argument $arg (valid: --torch)" >&2; exit 2 ;;
  esac
done

install_packages
install_python_modules
install_sass_tools
if [[ $with_torch == 1 ]]; then install_torch; fi
check_cuda
