# Shared body of the wheel recipes (ep-packages/*/recipe.sh): each recipe sets its
# pinned inputs (wheel, SHA-256, file lists, license files, allowed system
# libraries), NAME and HERE, then sources this file with its arguments. Fetches
# the wheel (pinned), stages a self-contained lib/ (RPATH $ORIGIN), checks
# every NEEDED library resolves inside the stage or to the base system, and,
# with --pack, packs the stage with epbroker-publish.
# shellcheck shell=bash
# --- Helpers ---------------------------------------------------------------------
log() { printf '==> %s: %s\n' "$NAME" "$*"; }
die() {
  printf '%s recipe: ERROR: %s\n' "$NAME" "$*" >&2
  exit 1
}
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

PACK_TOOL="" PACK_OUTPUT=""
case $# in
  0) ;;
  3) [[ $1 == --pack ]] || die "usage: $0 [--pack PUBLISH_BINARY OUTPUT]"
     PACK_TOOL=$2 PACK_OUTPUT=$3 ;;
  *) die "usage: $0 [--pack PUBLISH_BINARY OUTPUT]" ;;
esac
for tool in unzip patchelf readelf ldd sha256sum flock; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run scripts/bootstrap.sh)"
done

CACHE="${EPBROKER_CACHE:-$HOME/.cache/epbroker}"
mkdir -p "$CACHE/dl" "$CACHE/ep-packages/$NAME"
CACHE="$(cd "$CACHE" && pwd)"
DL="$CACHE/dl"
WORK="$CACHE/ep-packages/$NAME"
STAGE="$WORK/stage"
STAMP="$WORK/stage.stamp" # outside the stage: the stage is packed as it is

exec 8>"$WORK/.lock"
flock 8
SCRATCH="$(mktemp -d "$WORK/.scratch.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT

# pip from the bootstrap venv when there is one, else the system python3.
pick_python() {
  local py
  for py in "${EPBROKER_PYTHON:-}" "$CACHE/venv/bin/python" python3; do
    [[ -n $py ]] || continue
    if "$py" -m pip --version >/dev/null 2>&1; then
      echo "$py"
      return 0
    fi
  done
  die "no python with pip found (set EPBROKER_PYTHON or run scripts/bootstrap.sh)"
}

# --- 1. Fetch ---------------------------------------------------------------------
fetch_wheel() {
  local dest="$DL/$WHEEL"
  if [[ -f $dest ]]; then
    if [[ $(sha256_of "$dest") == "$WHEEL_SHA256" ]]; then
      log "download: $WHEEL present, SHA-256 ok"
      return 0
    fi
    echo "$NAME recipe: WARNING: $dest has a wrong SHA-256; deleting and fetching again" >&2
    rm -f "$dest"
  fi
  local py tmp got
  py="$(pick_python)"
  log "download: pip download $PYPI_NAME==$PYPI_VERSION ($WHEEL_PLATFORM)"
  tmp="$(mktemp -d "$DL/.pip.XXXXXX")"
  # pip checks the hash itself too (--require-hashes), before it saves anything.
  printf '%s==%s --hash=sha256:%s\n' "$PYPI_NAME" "$PYPI_VERSION" "$WHEEL_SHA256" >"$tmp/req.txt"
  if ! PIP_FIND_LINKS="" "$py" -m pip download --quiet --disable-pip-version-check \
    --no-input --no-cache-dir --no-deps --only-binary=:all: --require-hashes \
    --platform "$WHEEL_PLATFORM" --python-version 3.11 \
    -r "$tmp/req.txt" -d "$tmp/out"; then
    rm -rf "$tmp"
    die "pip download $PYPI_NAME==$PYPI_VERSION failed (network? hash mismatch?)"
  fi
  if [[ ! -f $tmp/out/$WHEEL ]]; then
    rm -rf "$tmp"
    die "pip download did not produce $WHEEL"
  fi
  got="$(sha256_of "$tmp/out/$WHEEL")"
  if [[ $got != "$WHEEL_SHA256" ]]; then
    rm -rf "$tmp"
    die "SHA-256 MISMATCH for $WHEEL: expected $WHEEL_SHA256, got $got; file deleted"
  fi
  mv "$tmp/out/$WHEEL" "$dest"
  rm -rf "$tmp"
}

# --- 2. Stage ---------------------------------------------------------------------
is_elf() { [[ $(head -c4 "$1" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]]; }

# check_self_contained DIR: every ELF in DIR/lib has RPATH exactly $ORIGIN (no
# RUNPATH), and with an empty environment each NEEDED resolves inside DIR/lib or to
# a base system library.
check_self_contained() {
  local lib="$1/lib" f base dyn soname path optional bad=0
  for f in "$lib"/*; do
    is_elf "$f" || continue
    base="${f##*/}"
    dyn="$(readelf -d "$f")"
    grep -q '(RUNPATH)' <<<"$dyn" && { echo "  $base: has a RUNPATH" >&2; bad=1; }
    grep -q '(RPATH) *Library rpath: \[\$ORIGIN\]$' <<<"$dyn" ||
      { echo "  $base: RPATH is not \$ORIGIN" >&2; bad=1; }
    optional="${OPTIONAL_SYSTEM[$base]:-}"
    while read -r soname path; do
      if [[ $path == "not found" ]]; then
        if [[ " $optional " == *" $soname "* ]]; then
          log "  note: $base needs $soname from the system (device driver stack)"
        else
          echo "  $base: $soname not found" >&2
          bad=1
        fi
      elif [[ $path == "$lib/"* ]]; then
        :
      elif [[ $BASE_SYSTEM_LIBS == *" $soname "* ]]; then
        :
      else
        echo "  $base: $soname resolves outside the package: $path" >&2
        bad=1
      fi
    done < <(env -i /usr/bin/ldd "$f" | sed -n \
      -e 's/^[[:space:]]*\([^[:space:]]*\) => not found$/\1 not found/p' \
      -e 's/^[[:space:]]*\([^[:space:]]*\) => \([^[:space:]]*\) (0x[0-9a-f]*)$/\1 \2/p' \
      -e 's/^[[:space:]]*\(linux-vdso[^[:space:]]*\) (0x[0-9a-f]*)$/\1 vdso/p' \
      -e 's/^[[:space:]]*\(\/[^[:space:]]*\) (0x[0-9a-f]*)$/ld-linux-x86-64.so.2 \1/p')
  done
  ((bad == 0)) || die "the staged libraries are not self-contained (see above)"
}

build_stage() {
  local x="$SCRATCH/wheel" out="$SCRATCH/stage" f base src soname
  log "stage: unpacking $WHEEL"
  unzip -q "$DL/$WHEEL" -d "$x"
  mkdir -p "$out/lib" "$out/$LICENSE_DIR"

  # Every file of the wheel's package dir must be accounted for, so that a changed
  # upstream layout fails here instead of shipping something half-right.
  local known=" $EP_LIBRARY ${LIBS[*]} ${DATA[*]} ${DROP[*]} "
  for f in "$x/$WHEEL_PKG_DIR"/*; do
    base="${f##*/}"
    [[ $known == *" $base "* ]] || die "unexpected file in the wheel: $WHEEL_PKG_DIR/$base"
  done
  # The dropped plugin copies must really be copies.
  for base in "${DROP[@]}"; do
    [[ $base == "$EP_LIBRARY".* ]] || continue
    cmp -s "$x/$WHEEL_PKG_DIR/$EP_LIBRARY" "$x/$WHEEL_PKG_DIR/$base" ||
      die "$base differs from $EP_LIBRARY; cannot drop it as a duplicate"
  done

  for base in "$EP_LIBRARY" "${LIBS[@]}"; do
    src="$x/$WHEEL_PKG_DIR/$base"
    [[ -f $src && ! -L $src ]] || die "$WHEEL_PKG_DIR/$base missing from the wheel"
    is_elf "$src" || die "$base is not an ELF file"
    soname="$(readelf -d "$src" | sed -n 's/.*(SONAME) *Library soname: \[\(.*\)\]$/\1/p')"
    if [[ $base != "$EP_LIBRARY" && -n $soname && $soname != "$base" ]]; then
      die "$base has SONAME $soname; it must be staged under its SONAME"
    fi
    install -m 0755 "$src" "$out/lib/$base"
    patchelf --force-rpath --set-rpath '$ORIGIN' "$out/lib/$base"
  done
  for base in "${DATA[@]}"; do
    install -m 0644 "$x/$WHEEL_PKG_DIR/$base" "$out/lib/$base"
  done
  for f in "${LICENSE_FILES[@]}"; do
    install -m 0644 "$x/$f" "$out/$LICENSE_DIR/${f##*/}"
  done

  log "stage: checking that lib/ is self-contained (env -i ldd)"
  check_self_contained "$out"
  if [[ -n $(find "$out" ! -type f ! -type d) ]]; then
    die "the stage holds something other than plain files and directories"
  fi

  rm -f "$STAMP" # the stamp goes last: it marks a complete stage
  rm -rf "$STAGE"
  mv "$out" "$STAGE"
  echo "$STAGE_STAMP" >"$STAMP"
}

fetch_wheel
STAGE_STAMP="recipe=$RECIPE_VERSION wheel=$WHEEL_SHA256"
if [[ -f $STAMP && "$(<"$STAMP")" == "$STAGE_STAMP" && -d $STAGE ]]; then
  log "stage: $STAGE up to date"
else
  build_stage
fi
log "stage: $(du -sh "$STAGE" | cut -f1) in $STAGE"

# --- 3. Pack ----------------------------------------------------------------------
if [[ -n $PACK_TOOL ]]; then
  [[ -x $PACK_TOOL ]] || die "$PACK_TOOL is not an executable"
  log "pack: $PACK_OUTPUT"
  mkdir -p "$(dirname "$PACK_OUTPUT")"
  "$PACK_TOOL" pack --dir "$STAGE" --metadata "$HERE/ep.json" --output "$PACK_OUTPUT" ||
    die "$PACK_TOOL pack failed"
fi
log "done in $((SECONDS - START))s"
