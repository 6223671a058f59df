# Shared by scripts/demo and scripts/test: create .venv with Python 3.11+ and install ToolHub.
# Usage: source scripts/_venv.sh [extras]

pick_python() {
    for candidate in python3.11 python3.12 python3.13 python3; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 14) else 1)'; then
            echo "$candidate"
            return 0
        fi
    done
    echo "ToolHub needs Python 3.11 to 3.13 on the PATH." >&2
    return 1
}

ensure_venv() {
    local extras="${1:-}"
    if [ ! -x .venv/bin/python ]; then
        "$(pick_python)" -m venv .venv
    fi
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    local spec="."
    if [ -n "$extras" ]; then spec=".[$extras]"; fi
    mkdir -p var
    if ! .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$spec" >var/pip-install.log 2>&1; then
        cat var/pip-install.log >&2
        echo "Installing ToolHub failed (log above, also in var/pip-install.log)." >&2
        return 1
    fi
}
