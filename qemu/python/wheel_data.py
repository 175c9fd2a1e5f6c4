"""Adds a wheel's data to the wheel maturin built: ``python3 wheel_data.py BUILT STAGE OUT``.

``STAGE`` holds the wheel's data folders as the wheel format names them: ``scripts/``
(installed on ``PATH``: ``ncop``) and ``data/`` (installed under the prefix:
``share/neuroncustomop/``, the tools' data). They go into ``OUT``, a copy of ``BUILT``,
as ``<name>-<version>.data/<folder>/...``, each with its line in ``RECORD`` (its
SHA-256 and size), files executable for their owner keeping that bit. ``cargo sim
dist`` runs it (qemu/src/cli/dist.rs); the standard library is all it needs.
"""

import base64
import hashlib
import os
import sys
import zipfile


def record_line(name: str, data: bytes) -> str:
    """The RECORD line of a file: its name, ``sha256=`` and its urlsafe base64 digest
    without padding, and its size."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def add_data(built: str, stage: str, out: str) -> None:
    """Writes ``out``: ``built`` with the files of ``stage`` as its data."""
    with zipfile.ZipFile(built) as source:
        names = source.namelist()
        record = next(name for name in names if name.endswith(".dist-info/RECORD"))
        data_dir = record[: -len(".dist-info/RECORD")] + ".data"
        partial = out + ".partial"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as wheel:
            lines = []
            for name in names:
                if name != record:
                    wheel.writestr(source.getinfo(name), source.read(name))
            for root, _dirs, files in sorted(os.walk(stage)):
                for file in sorted(files):
                    path = os.path.join(root, file)
                    name = f"{data_dir}/{os.path.relpath(path, stage)}"
                    with open(path, "rb") as f:
                        data = f.read()
                    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    executable = os.stat(path).st_mode & 0o100
                    info.external_attr = (0o100755 if executable else 0o100644) << 16
                    wheel.writestr(info, data)
                    lines.append(record_line(name, data))
            kept = source.read(record).decode().splitlines()
            wheel.writestr(source.getinfo(record), "\n".join(kept + lines) + "\n")
    os.replace(partial, out)


if __name__ == "__main__":
    add_data(*sys.argv[1:4])
