"""backend.py - the PEP 517 build backend of the Python client.

Builds the wheel (and sdist) of the one package perceptrond_client with the
standard library alone, so that `pip install ./clients/python` works with no
network: pip's isolated build environment has nothing to fetch.  What it
writes is a plain pure-Python wheel (PEP 427): the package files, then
METADATA, WHEEL and RECORD with their sha256 digests.  The name, version and
dependencies are read from pyproject.toml, the one place they are written.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "perceptrond_client"


def _project():
    """name, version, summary, requires-python and dependencies from
    pyproject.toml's [project] (tomllib is 3.11+: a small reader of the
    few lines that are there)."""
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]

    def get(key):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(key), section, re.M)
        return m.group(1) if m else None

    deps = re.search(r"^dependencies\s*=\s*\[([^\]]*)\]", section, re.M)
    return {
        "name": get("name"),
        "version": get("version"),
        "summary": get("description"),
        "requires_python": get("requires-python"),
        "deps": re.findall(r'"([^"]+)"', deps.group(1)) if deps else [],
    }


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"],
             "Summary: " + p["summary"]]
    if p["requires_python"]:
        lines.append("Requires-Python: " + p["requires_python"])
    lines += ["Requires-Dist: " + d for d in p["deps"]]
    return "\n".join(lines) + "\n"


def _files():
    base = os.path.join(ROOT, PACKAGE)
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        if os.path.isfile(path) and (name.endswith(".py") or name == "py.typed"):
            yield PACKAGE + "/" + name, open(path, "rb").read()


def _dist_info(p):
    return "%s-%s.dist-info" % (p["name"].replace("-", "_"), p["version"])


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    d = os.path.join(metadata_directory, _dist_info(p))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(p))
    return _dist_info(p)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    name = "%s-%s-py3-none-any.whl" % (p["name"].replace("-", "_"), p["version"])
    info = _dist_info(p)
    entries = list(_files())
    entries.append((info + "/METADATA", _metadata(p).encode()))
    entries.append((info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: perceptrond-backend\n"
                                     b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append("%s,sha256=%s,%d" % (path, digest.decode(), len(data)))
        record.append(info + "/RECORD,,")
        z.writestr(info + "/RECORD", "\n".join(record) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"].replace("-", "_"), p["version"])
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "_build/backend.py"] + [f for f, _ in _files()]:
            t.add(os.path.join(ROOT, rel), arcname=base + "/" + rel)
        pkg = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (p["name"], p["version"]))
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg)
        t.addfile(ti, io.BytesIO(pkg.encode()))
    return name
