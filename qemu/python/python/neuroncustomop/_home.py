"""Where the tools' data is: the folder the wheel installs beside the package,
``<prefix>/share/neuroncustomop`` (the runtime's headers and prebuilt archive, the
firmware, the QEMU plugin), named to the native half when the package is imported.

``NEURONCUSTOMOP_HOME`` comes first, and the native half reads it itself: a source
checkout, or another installed folder. A package installed from a checkout's sources
(``pip install qemu/python``) has no data folder of its own, and works only with
``NEURONCUSTOMOP_HOME`` naming the checkout.
"""

from __future__ import annotations

import importlib.metadata
import os
import sysconfig
from typing import Optional

from . import _native

INSTALLED_DIR = ("share", "neuroncustomop")
"""The data folder's path below the installation's prefix (the wheel's ``data``)."""

VERSION_FILE = "VERSION"
"""The file that marks the data folder: the version it was built as."""


def installed_home() -> Optional[str]:
    """The data folder installed with this package, or ``None``: first under the
    prefix of the interpreter's installation scheme, then wherever the
    distribution's record put it (a ``--user`` or ``--prefix`` install)."""
    beside = os.path.join(sysconfig.get_path("data"), *INSTALLED_DIR)
    if os.path.isfile(os.path.join(beside, VERSION_FILE)):
        return beside
    try:
        files = importlib.metadata.distribution("neuroncustomop").files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if tuple(file.parts[-3:]) == (*INSTALLED_DIR, VERSION_FILE):
            return os.path.dirname(os.path.abspath(str(file.locate())))
    return None


def name_installed_home() -> None:
    """Names the installed data folder, when there is one, to the native half."""
    home = installed_home()
    if home is not None:
        _native.name_installed(home)
