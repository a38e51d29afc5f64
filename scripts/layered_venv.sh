# Sourced by scripts/check_timm_parity.sh and scripts/check_text_parity.sh: a venv layered on a torch venv (its
# site-packages on the new venv's path through a .pth file), so pip sees that torch as installed and adds only the
# packages asked for beside it; installing them into the torch venv itself could let pip replace its torch.
#   layered_venv NAME TORCH_VENV VENV PIP_REQUIREMENT...     (NAME prefixes the messages; exit 2 on a missing piece)
layered_venv() {
  local name=$1 torch_venv=$2 venv=$3 base site own
  shift 3
  if [[ ! -x "$torch_venv/bin/python" ]]; then
    echo "$name: no $torch_venv: make it with bash scripts/setup.sh --torch pip" >&2
    exit 2
  fi
  base=$("$torch_venv/bin/python" -c 'import sys; print(sys._base_executable)')
  if [[ ! -x "$venv/bin/python" ]] && ! "$base" -m venv "$venv"; then
    echo "$name: cannot make a venv with $base (apt install python3-venv)" >&2
    exit 2
  fi
  site=$("$torch_venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  own=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$site" > "$own/_kgtrain_torch_venv.pth"
  echo "$name: pip install $* into $venv (torch from $torch_venv)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@"
}
