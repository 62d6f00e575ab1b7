#!/usr/bin/python3
"""The PyTorch peer's private virtual environment: current PyTorch from PyPI, never a product dependency
(docs/torch_reference.md, "Which PyTorch").

  scripts/torch_venv.py [VERSION]     creates build/torch-venv-VERSION if needed, prints its python
  environment: SF_TORCH_VERSION (default 2.15.0), SF_TORCH_VENV_ROOT (default <repo>/build)

ensure(version) is what scripts/torch_reference.py and scripts/bench-train call: when the venv exists
and holds that torch it returns at once (idempotent, no network); otherwise it creates the venv with
Debian's /usr/bin/python3 (python3-venv, scripts/install-deps), asks pip whether the index offers that
version (a clear error when pip cannot reach it) and runs `pip install torch==VERSION`, printing what it
installs (torch and numpy, which torch warns about at import when missing). The Linux wheel on PyPI is the CUDA build: it pulls the nvidia-* CUDA wheels (several GB)
and cannot be imported without them (libtorch_cuda.so links libcufile, libcusparseLt, libnvshmem, ...),
so the full dependency set is installed; on a CPU-only machine torch then runs on the CPU.
Exit status (command line): 0 ready, 1 when creating or installing failed, 2 for a bad version.
"""
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_VERSION = "2.15.0"
MARKER = ".sf-torch-version"  # in the venv: the requested version, written once torch imports


class VenvError(Exception):
    pass


def default_version():
    return os.environ.get("SF_TORCH_VERSION") or DEFAULT_VERSION


def venv_dir(version):
    base = os.environ.get("SF_TORCH_VENV_ROOT") or os.path.join(ROOT, "build")
    return os.path.join(base, "torch-venv-" + version)


def venv_python(version):
    return os.path.join(venv_dir(version), "bin", "python")


def is_ready(version):
    d = venv_dir(version)
    try:
        with open(os.path.join(d, MARKER)) as f:
            return f.read().strip() == version and os.access(venv_python(version), os.X_OK)
    except OSError:
        return False


def du_mib(path):
    total = 0
    for dp, _, files in os.walk(path):
        for n in files:
            p = os.path.join(dp, n)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total / 2 ** 20


def say(msg):
    print("torch_venv: " + msg, file=sys.stderr, flush=True)


def offered(pip, version):
    """Asks the index (pip's own configuration) which torch versions exist; VenvError when unreachable."""
    r = subprocess.run([pip, "index", "versions", "torch"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=300)
    m = re.search(r"Available versions:\s*(.*)", r.stdout)
    if r.returncode or not m:
        raise VenvError("pip cannot reach the package index to list torch versions (`pip index versions torch` "
                        "exited %d):\n%s\nThe PyTorch peer needs PyPI (or PIP_INDEX_URL, a mirror) once, to create %s;"
                        " without it, use Debian's torch (--torch system, python3-torch)."
                        % (r.returncode, r.stdout.strip()[-1500:], venv_dir(version)))
    versions = [v.strip() for v in m.group(1).split(",")]
    want = [v for v in versions if v == version or v.startswith(version + ".")]
    if not want:
        raise VenvError("torch %s is not on the index (it offers %s)" % (version, ", ".join(versions[:12])))
    return want[0]


def ensure(version=None):
    """Path of the venv's python holding torch==version, creating the venv when needed."""
    version = version or default_version()
    if not re.fullmatch(r"[0-9]+(\.[0-9]+){1,2}", version):
        raise VenvError("torch version '%s': expected e.g. 2.15.0 or 2.10" % version)
    if is_ready(version):
        return venv_python(version)
    d = venv_dir(version)
    t0 = time.time()
    if not os.access(os.path.join(d, "bin", "pip"), os.X_OK):
        say("creating %s (/usr/bin/python3 -m venv) ..." % d)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        r = subprocess.run(["/usr/bin/python3", "-m", "venv", d], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        if r.returncode:
            raise VenvError("`/usr/bin/python3 -m venv %s` failed (status %d): %s\n(Debian: apt-get install "
                            "python3-venv; scripts/install-deps installs it)" % (d, r.returncode, r.stdout.strip()))
    pip = os.path.join(d, "bin", "pip")
    exact = offered(pip, version)
    say("installing torch==%s (PyPI's Linux wheel, with its nvidia-* CUDA wheels: several GB; it cannot be "
        "imported without them) and numpy (torch warns at every import without it) into %s ..." % (exact, d))
    r = subprocess.run([pip, "install", "--progress-bar", "off", "torch==" + version, "numpy"], stdout=sys.stderr)
    if r.returncode:
        raise VenvError("`%s install torch==%s` failed (status %d; its output is above)" % (pip, version, r.returncode))
    r = subprocess.run([venv_python(version), "-c", "import torch; print(torch.__version__)"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode or not r.stdout.strip().startswith(exact.split("+")[0]):
        raise VenvError("torch installed in %s but `import torch` gives: %s" % (d, r.stdout.strip()[-1500:]))
    with open(os.path.join(d, MARKER), "w") as f:
        f.write(version + "\n")
    say("ready: torch %s in %s (%.0f MiB, %.0f s)" % (r.stdout.strip(), d, du_mib(d), time.time() - t0))
    return venv_python(version)


def main(argv):
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        print(ensure(argv[0] if argv else None))
    except VenvError as e:
        say("error: %s" % e)
        return 2 if "expected e.g." in str(e) or "not on the index" in str(e) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
