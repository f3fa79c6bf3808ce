#!/usr/bin/env bash
# ctest python.pip_install: `pip install ./python` into a scratch folder, then the library is
# found through FP4JIT_LIBRARY, next to the package once copied there, and in the lib/ folder of
# the prefix the package was installed into (as `cmake --install --prefix P` puts it).
#   pip_install.sh PYTHON PACKAGE_DIR LIBRARY WORK
set -euo pipefail
python=$1 package=$2 library=$3 work=$4
"$python" -c 'import numpy' 2>/dev/null || { echo "numpy missing: skipped"; exit 77; }
"$python" -m pip --version >/dev/null 2>&1 || { echo "pip missing: skipped"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
cp -r "$package" "$work/src"  # a clean copy: no build/ or egg-info left in the source tree
# With setuptools and wheel at hand (scripts/setup.sh), nothing is fetched from an index.
pip=("$python" -m pip install --quiet --no-deps)
if "$python" -c 'import setuptools, wheel' 2>/dev/null; then pip+=(--no-build-isolation --no-index); fi
"${pip[@]}" --target "$work/site" "$work/src"
cd "$work"
check='import fp4jit, sys; print(fp4jit.library_path); assert fp4jit.__file__.startswith(sys.argv[1]), fp4jit.__file__; r = fp4jit.Recipe("nvfp4"); print(r.hash)'
PYTHONPATH="$work/site" FP4JIT_LIBRARY="$library" "$python" -c "$check" "$work/site"
cp "$library" "$work/site/fp4jit/libfp4jit.so"
out=$(env -u FP4JIT_LIBRARY PYTHONPATH="$work/site" "$python" -c "$check" "$work/site")
echo "$out"
[[ $(head -1 <<<"$out") == "$work/site/fp4jit/libfp4jit.so" ]] || { echo "library not found next to the package"; exit 1; }
"${pip[@]}" --prefix "$work/prefix" "$work/src"
mkdir -p "$work/prefix/lib"
cp "$library" "$work/prefix/lib/libfp4jit.so"
site=$(echo "$work"/prefix/lib/python3*/site-packages)
out=$(env -u FP4JIT_LIBRARY PYTHONPATH="$site" "$python" -c "$check" "$site")
echo "$out"
[[ $(head -1 <<<"$out") == "$work/prefix/lib/libfp4jit.so" ]] || { echo "library not found in the prefix"; exit 1; }
echo "ok"
