#!/usr/bin/env bash
# Builds fusebench on an air-gapped node (no package registry) from Debian 12 packages
# fetched elsewhere. docs/gpu.md says how to use it on a GPU node.
#
#   scripts/offline_deps.sh download DIR        # on a connected Debian 12 amd64 machine
#   scripts/offline_deps.sh build DIR [TARGET...]   # on the node: every target, or those named
#   scripts/offline_deps.sh test DIR [CTEST_ARG...] # on the node, after build
#   scripts/offline_deps.sh env DIR             # prints the exports for running by hand
#
# download: `apt-get download` (no root needed) of the packages that
#   scripts/debian_packages.txt marks `offline`, into DIR, with DIR/MANIFEST (one line a
#   package: package=version sha256 file). It fails when a package depends on one that the
#   list marks neither `offline` nor `node`, so that the list cannot drift from what the
#   packages need.
# build: checks every .deb against DIR/MANIFEST and the manifest against the list, unpacks
#   them with `dpkg -x` into DIR/prefix (again only when the manifest changed), points
#   absolute symbolic links and pkg-config files into the prefix, writes DIR/env.sh
#   (LD_LIBRARY_PATH and PATH for running), configures with every package named by its
#   own file in the prefix (so that nothing is taken from /usr even where it is installed
#   there), builds, and checks with ldd that the built binary resolves the prefix's
#   libraries.
# test: ctest in the build folder with DIR/env.sh's environment; exports the PyTorch models
#   first (scripts/export_models.py) when python3 has torch and torchvision and
#   FUSEBENCH_TORCH_MODELS is unset (SKIP_TORCH_EXPORT=1 skips that).
#
# Settings (environment):
#   CXX          the C++ compiler (default g++-12; g++-13 works too)
#   BUILD_DIR    the build folder, relative to the project root or absolute (default build-offline)
#   CUDA_HOME    the CUDA toolkit (default /usr/local/cuda); used when it has bin/nvcc
#   JOBS         parallel compile jobs (default: nproc)
#   CMAKE_ARGS   more arguments for the cmake configure step (word-split)
#   BUILD_TYPE   CMAKE_BUILD_TYPE (default Release)
set -euo pipefail

project=$(cd "$(dirname "$0")/.." && pwd)
list=$project/scripts/debian_packages.txt
arch=x86_64-linux-gnu

die() { echo "offline_deps: $*" >&2; exit 1; }
say() { echo "offline_deps: $*"; }

# The names the list marks with a tag (offline or node), in the list's order.
marked() { sed 's/#.*//' "$list" | awk -v tag="$1" '{for (i = 2; i <= NF; ++i) if ($i == tag) {print $1; break}}'; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }

[ $# -ge 2 ] || usage
command=$1
dir=$2
shift 2
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac

build_dir=${BUILD_DIR:-build-offline}
case $build_dir in /*) ;; *) build_dir=$project/$build_dir ;; esac
prefix=$dir/prefix
usr=$prefix/usr

download() {
  command -v apt-get >/dev/null || die "download needs apt-get: run it on a connected Debian 12 machine"
  local machine_arch
  machine_arch=$(dpkg --print-architecture)
  [ "$machine_arch" = amd64 ] || die "this machine is $machine_arch; the packages must be amd64 (run download on an amd64 Debian 12 machine)"
  # shellcheck disable=SC1091
  local release
  release=$(. /etc/os-release && echo "${ID:-?} ${VERSION_ID:-?}")
  if [ "$release" != "debian 12" ] && [ -z "${OFFLINE_DEPS_ANY_RELEASE:-}" ]; then
    die "this machine is '$release', not Debian 12: its package names and versions differ from the list's (OFFLINE_DEPS_ANY_RELEASE=1 to try anyway)"
  fi
  mapfile -t packages < <(marked offline)
  [ ${#packages[@]} -gt 0 ] || die "no package marked offline in $list"
  mkdir -p "$dir"
  tmp=$(mktemp -d "$dir/.download.XXXXXX")  # global: the EXIT trap reads it
  trap 'rm -rf "$tmp"' EXIT
  say "downloading ${#packages[@]} packages into $dir"
  if ! (cd "$tmp" && apt-get download -q "${packages[@]}" > "$tmp/apt.log" 2>&1); then
    cat "$tmp/apt.log" >&2
    die "apt-get download failed; if a package or version was not found, run 'apt-get update' (as root) and try again"
  fi
  # Every dependency of every package must be one the list marks offline or node.
  local known missing=() f deps group alt name ok
  known=" $(marked offline | tr '\n' ' ') $(marked node | tr '\n' ' ') "
  for f in "$tmp"/*.deb; do
    deps="$(dpkg-deb -f "$f" Depends),$(dpkg-deb -f "$f" Pre-Depends)"
    IFS=',' read -ra groups <<< "$deps"
    for group in "${groups[@]}"; do
      [ -n "${group// /}" ] || continue
      ok=
      IFS='|' read -ra alts <<< "$group"
      for alt in "${alts[@]}"; do
        name=$(echo "$alt" | sed 's/(.*//; s/:.*//' | tr -d ' ')
        case $known in *" $name "*) ok=1; break ;; esac
      done
      [ -n "$ok" ] || missing+=("$(dpkg-deb -f "$f" Package) depends on$(echo "$group" | tr -s ' ')")
    done
  done
  if [ ${#missing[@]} -gt 0 ]; then
    printf '  %s\n' "${missing[@]}" >&2
    die "add each to $list, marked offline (to download it) or node (the node has it, or nothing needs it)"
  fi
  # Replace the last download's packages (the MANIFEST names them) with these.
  if [ -f "$dir/MANIFEST" ]; then
    awk '!/^#/ && NF == 3 {print $3}' "$dir/MANIFEST" | while read -r old; do rm -f "$dir/$old"; done
  fi
  {
    echo "# fusebench offline packages: written by scripts/offline_deps.sh download on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# from $(. /etc/os-release && echo "$PRETTY_NAME") $machine_arch; package=version sha256 file"
    for f in "$tmp"/*.deb; do
      echo "$(dpkg-deb -f "$f" Package)=$(dpkg-deb -f "$f" Version) $(sha256sum "$f" | cut -d' ' -f1) $(basename "$f")"
      mv "$f" "$dir/"
    done
  } > "$dir/MANIFEST.new"
  mv "$dir/MANIFEST.new" "$dir/MANIFEST"
  say "$(grep -vc '^#' "$dir/MANIFEST") packages, $(du -ch "$dir"/*.deb | tail -1 | cut -f1) in all; MANIFEST written"
  say "copy $dir to the node and run there: scripts/offline_deps.sh build DIR"
}

# The manifest matches the files and the list.
verify() {
  [ -f "$dir/MANIFEST" ] || die "$dir/MANIFEST not found: run 'scripts/offline_deps.sh download DIR' on a connected Debian 12 machine and copy DIR here"
  local bad=0 pkg sum file
  while read -r pkg sum file; do
    if [ ! -f "$dir/$file" ]; then
      echo "  $file ($pkg): missing" >&2; bad=1
    elif [ "$(sha256sum "$dir/$file" | cut -d' ' -f1)" != "$sum" ]; then
      echo "  $file ($pkg): sha256 differs from MANIFEST" >&2; bad=1
    fi
  done < <(grep -v '^#' "$dir/MANIFEST")
  [ $bad -eq 0 ] || die "$dir does not match its MANIFEST: copy it again"
  local names p
  names=" $(grep -v '^#' "$dir/MANIFEST" | cut -d= -f1 | tr '\n' ' ') "
  for p in $(marked offline); do
    case $names in *" $p "*) ;; *) echo "  $p" >&2; bad=1 ;; esac
  done
  [ $bad -eq 0 ] || die "scripts/debian_packages.txt marks the packages above offline but $dir has none of them: download again"
  say "$(grep -vc '^#' "$dir/MANIFEST") packages match MANIFEST"
}

unpack_one() {  # DEB DEST
  if command -v dpkg >/dev/null; then
    dpkg -x "$1" "$2"
  else  # no dpkg: a .deb is an ar archive holding data.tar.*
    local t
    t=$(mktemp -d)
    (cd "$t" && ar x "$1")
    tar -C "$2" -xf "$t"/data.tar.*
    rm -rf "$t"
  fi
}

unpack() {
  local stamp=$prefix/.manifest.sha256 want
  want=$(sha256sum "$dir/MANIFEST" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "$prefix already holds this MANIFEST's packages"
    return
  fi
  rm -rf "$prefix"
  mkdir -p "$prefix"
  local file
  for file in $(grep -v '^#' "$dir/MANIFEST" | cut -d' ' -f3); do unpack_one "$dir/$file" "$prefix"; done
  # Absolute links (a package's own point at /usr/...) made relative links into the prefix.
  local link target
  while IFS= read -r link; do
    target=$(readlink "$link")
    case $target in /*) ln -sfnr "$prefix$target" "$link" ;; esac
  done < <(find "$prefix" -type l)
  # pkg-config files name /usr: nothing in the build reads them, but a user's tools may.
  find "$prefix" -name '*.pc' -exec sed -i -E "s#^(prefix|exec_prefix|libdir|includedir)=/usr#\\1=$usr#; s#-I/usr/include#-I$usr/include#g" {} +
  echo "$want" > "$stamp"
  say "unpacked into $prefix"
}

write_env() {
  {
    echo "# Written by scripts/offline_deps.sh build: the environment to run fusebench built against $prefix."
    echo "export LD_LIBRARY_PATH=\"$usr/lib/$arch:$usr/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
    echo "export PATH=\"$usr/bin\${PATH:+:\$PATH}\""
  } > "$dir/env.sh"
}

cuda_home() { echo "${CUDA_HOME:-/usr/local/cuda}"; }

configure_and_build() {
  local cxx=${CXX:-g++-12}
  command -v "$cxx" >/dev/null || die "compiler '$cxx' not found (set CXX, e.g. CXX=g++-13)"
  command -v cmake >/dev/null || die "cmake not found"
  local cfg=$usr/lib/$arch/cmake
  local args=(
    -S "$project" -B "$build_dir"
    -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}"
    -DCMAKE_CXX_COMPILER="$(command -v "$cxx")"
    -DCMAKE_PREFIX_PATH="$usr"
    # Config packages, each by its folder in the prefix.
    -DONNX_DIR="$cfg/ONNX" -Ddnnl_DIR="$cfg/dnnl" -DTBB_DIR="$cfg/TBB" -DGTest_DIR="$cfg/GTest"
    -Dnlohmann_json_DIR="$usr/share/cmake/nlohmann_json" -Dcxxopts_DIR="$usr/lib/cmake/cxxopts"
    # Module-found packages, each by its files, so that a copy under /usr is never taken.
    -DProtobuf_INCLUDE_DIR="$usr/include" -DProtobuf_LIBRARY="$usr/lib/$arch/libprotobuf.so"
    -DProtobuf_LITE_LIBRARY="$usr/lib/$arch/libprotobuf-lite.so" -DProtobuf_PROTOC_LIBRARY="$usr/lib/$arch/libprotoc.so"
    -DProtobuf_PROTOC_EXECUTABLE="$usr/bin/protoc"
    -DSQLite3_INCLUDE_DIR="$usr/include" -DSQLite3_LIBRARY="$usr/lib/$arch/libsqlite3.so"
    -DOpenCL_INCLUDE_DIR="$usr/include" -DOpenCL_LIBRARY="$usr/lib/$arch/libOpenCL.so"
  )
  if [ -f "$build_dir/CMakeCache.txt" ]; then
    local had
    had=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
    [ "$(readlink -f "$had")" = "$(readlink -f "$(command -v "$cxx")")" ] || die "$build_dir was configured with $had, not $cxx: set BUILD_DIR to another folder, or remove $build_dir"
  elif command -v ninja >/dev/null; then
    args+=(-G Ninja)
  fi
  if command -v ccache >/dev/null; then args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache); fi
  local cuda
  cuda=$(cuda_home)
  if [ -x "$cuda/bin/nvcc" ]; then
    args+=(-DCUDAToolkit_ROOT="$cuda" -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCMAKE_CUDA_HOST_COMPILER="$(command -v "$cxx")")
    export PATH="$cuda/bin:$PATH"
  else
    say "no CUDA toolkit at $cuda (set CUDA_HOME): configuring without it"
  fi
  # shellcheck disable=SC2206
  if [ -n "${CMAKE_ARGS:-}" ]; then args+=(${CMAKE_ARGS}); fi
  # shellcheck disable=SC1091
  . "$dir/env.sh"  # protoc runs at configure time and needs the prefix's libprotoc
  say "configuring $build_dir with $cxx"
  cmake "${args[@]}" > "$build_dir.configure.log" 2>&1 || { cat "$build_dir.configure.log"; die "configure failed (log: $build_dir.configure.log)"; }
  grep -h "fusebench: CUDA backend" "$build_dir.configure.log" | sed 's/^-- fusebench: /offline_deps: /' || true
  local targets=() t
  for t in "$@"; do targets+=(--target "$t"); done
  say "building ${*:-every target} with ${JOBS:-$(nproc)} jobs"
  local start=$SECONDS
  cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"
  say "built in $((SECONDS - start)) s"
}

# Every library the prefix ships resolves to the prefix, none is missing.
check_binary() {
  local bin=$build_dir/fusebench
  [ -x "$bin" ] || return 0
  # shellcheck disable=SC1091
  . "$dir/env.sh"
  local out bad
  out=$(ldd "$bin")
  bad=$(echo "$out" | grep 'not found' || true)
  [ -z "$bad" ] || { echo "$out" >&2; die "$bin: libraries not found"; }
  local lib ours=0
  for lib in libonnx.so libonnx_proto.so libprotobuf.so libdnnl.so libtbb.so libsqlite3.so; do
    local line
    line=$(echo "$out" | grep -F "$lib" || true)
    [ -n "$line" ] || continue
    case $line in *"$prefix"*) ours=$((ours + 1)) ;; *) echo "$out" >&2; die "$bin: $line is not the prefix's" ;; esac
  done
  say "ldd: $bin resolves $ours of the prefix's libraries there, none missing"
  "$bin" --version > /dev/null || die "$bin does not start"
}

build() {
  verify
  unpack
  write_env
  configure_and_build "$@"
  check_binary
  say "to run: . $dir/env.sh; $build_dir/fusebench ...   tests: scripts/offline_deps.sh test $dir"
}

run_tests() {
  [ -f "$build_dir/CTestTestfile.cmake" ] || die "$build_dir has no tests: run 'scripts/offline_deps.sh build $dir' first"
  # shellcheck disable=SC1091
  . "$dir/env.sh"
  if [ -z "${FUSEBENCH_TORCH_MODELS:-}" ] && [ -z "${SKIP_TORCH_EXPORT:-}" ]; then
    if python3 -c 'import torch, torchvision, numpy' 2>/dev/null; then
      say "exporting the PyTorch models into $build_dir/torch-models (SKIP_TORCH_EXPORT=1 skips)"
      python3 "$project/scripts/export_models.py" --out "$build_dir/torch-models"
      export FUSEBENCH_TORCH_MODELS=$build_dir/torch-models
    else
      say "python3 cannot import torch and torchvision: the PyTorch agreement tests will skip"
    fi
  fi
  local cmd=(ctest --test-dir "$build_dir" --output-on-failure -j "${JOBS:-$(nproc)}" "$@")
  say "${cmd[*]}"
  "${cmd[@]}"
}

case $command in
  download) download ;;
  build) build "$@" ;;
  test) run_tests "$@" ;;
  env) [ -f "$dir/env.sh" ] || die "$dir/env.sh not found: run build first"; cat "$dir/env.sh" ;;
  *) usage ;;
esac
