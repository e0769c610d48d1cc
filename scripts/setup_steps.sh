# Sourced by scripts/setup.sh (and its tests): how a setup step runs and reports.
#
# Each step prints one line, its name and how long it took; what the step's commands
# print (pip's and npm's chatter) goes to a log under build/setup/, which is named,
# with its last lines, when the step fails.

SETUP_LOGS="${SETUP_LOGS:-build/setup}"

_setup_now_us() {
    # EPOCHREALTIME is seconds with microseconds, its separator the locale's.
    local now=$EPOCHREALTIME
    echo "${now//[.,]/}"
}

_setup_line() {
    # _setup_line NAME TENTHS [NOTE]
    local tenths=$2
    printf 'setup: %-30s %5d.%d s%s\n' "$1" $((tenths / 10)) $((tenths % 10)) "${3:+  ($3)}"
}

# step NAME COMMAND...: run COMMAND (a function or a program) with `set -e`, its output
# in $SETUP_LOGS/NAME.log; one line when it succeeds, the log's tail and exit when not.
step() {
    local name=$1
    shift
    mkdir -p "$SETUP_LOGS"
    local log="$SETUP_LOGS/${name//[^A-Za-z0-9._-]/-}.log"
    local start status
    start=$(_setup_now_us)
    # Not `if (...)`: in a condition bash ignores `set -e`, so a failing command in
    # the middle of a step would go unnoticed.
    set +e
    (
        set -e
        "$@"
    ) >"$log" 2>&1 </dev/null
    status=$?
    set -e
    local tenths=$((($(_setup_now_us) - start + 50000) / 100000))
    if ((status == 0)); then
        _setup_line "$name" "$tenths"
        return 0
    fi
    {
        _setup_line "$name" "$tenths" "failed, exit $status; the end of $log follows"
        tail -n 30 "$log" | sed 's/^/    /'
    } >&2
    exit "$status"
}

# done_before NAME: the line of a step that had nothing to do.
done_before() {
    _setup_line "$1" 0 "already there"
}

# BFCL's data and official checkers come from the bfcl-eval wheel, of which only the
# bfcl_eval package is unpacked into the virtualenv, with no record of it for pip.
# Installed by pip, even without its dependencies, it would make pip check its pins
# (numpy==1.26.4, cohere==5.18.0, filelock==3.20.0, writer-sdk, every provider SDK,
# torch) on each later install and warn that they are not met; what tooluse runs of
# it needs only numpy and mpmath, which the package step installs.

_bfcl_site() {
    "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))'
}

# bfcl_data_current VENV VERSION: whether that version's package is in place.
bfcl_data_current() {
    [[ -f "$1/.bfcl-eval-$2" && -f "$(_bfcl_site "$1")/bfcl_eval/__init__.py" ]]
}

# install_bfcl_data VENV VERSION WHEELS: unpack bfcl_eval from the wheel (downloaded
# into WHEELS unless it is there) into VENV's site-packages.
install_bfcl_data() {
    local venv=$1 version=$2 wheels=$3 site
    site=$(_bfcl_site "$venv")
    rm -f "$venv/.bfcl-eval-$version"
    # An earlier setup installed it with pip: that copy goes, and its record with it.
    if "$venv/bin/python" -c 'import importlib.metadata as m; m.distribution("bfcl-eval")' 2>/dev/null; then
        "$venv/bin/python" -m pip uninstall -y bfcl-eval
    fi
    "$venv/bin/python" -m pip download --no-deps --only-binary=:all: -d "$wheels" "bfcl-eval==$version"
    "$venv/bin/python" - "$wheels/bfcl_eval-$version-py3-none-any.whl" "$site" <<'UNPACK'
import shutil
import sys
import zipfile
from pathlib import Path

wheel, site = Path(sys.argv[1]), Path(sys.argv[2])
partial = site / ".bfcl_eval.partial"
shutil.rmtree(partial, ignore_errors=True)
with zipfile.ZipFile(wheel) as archive:
    archive.extractall(partial, [n for n in archive.namelist() if n.startswith("bfcl_eval/")])
# Moved into place only once whole, so an interrupted setup leaves no half package.
shutil.rmtree(site / "bfcl_eval", ignore_errors=True)
(partial / "bfcl_eval").rename(site / "bfcl_eval")
partial.rmdir()
UNPACK
    touch "$venv/.bfcl-eval-$version"
}
