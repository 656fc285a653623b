"""Where the SDK finds its server and API key: the same places as primectl.

The URL: the ``base_url`` argument, else ``PRIMER_URL``, else ``url:`` in the
config file, else ``http://127.0.0.1:8080``. The key: the ``token``
argument, else ``PRIMER_TOKEN``, else ``token:`` in the config file, else,
for a server on this machine only, the admin key a local ``primer serve``
wrote into its data directory (``PRIMER_DATA_DIR``, a ``.data`` directory
in the working directory or one above it, or ``~/.local/share/primer``). A
key found on disk is never sent to another machine.

The config file is ``PRIMER_CONFIG``, else
``$XDG_CONFIG_HOME/primer/config.yaml``, else ``~/.config/primer/config.yaml``::

    url: https://primer.example.com
    token: pmr.key-....
"""

from __future__ import annotations

import ipaddress
import os
import warnings
from pathlib import Path
from typing import Dict, List, Optional
from urllib.parse import urlsplit

DEFAULT_URL = "http://127.0.0.1:8080"
ADMIN_KEY_FILE = "admin.key"


def config_path() -> Optional[Path]:
    """The config file's path (it need not exist)."""
    p = os.environ.get("PRIMER_CONFIG")
    if p:
        return Path(p)
    x = os.environ.get("XDG_CONFIG_HOME")
    if x:
        return Path(x) / "primer" / "config.yaml"
    try:
        return Path.home() / ".config" / "primer" / "config.yaml"
    except RuntimeError:
        return None


def read_config(path: Optional[Path] = None) -> Dict[str, str]:
    """Reads the config file's ``url`` and ``token``. A missing file is an
    empty config; a malformed one is a warning and ignored, as primectl
    does."""
    p = path or config_path()
    if p is None:
        return {}
    try:
        text = p.read_text()
    except FileNotFoundError:
        return {}
    except OSError as e:
        warnings.warn(f"config file {p}: {e}; ignoring it", stacklevel=3)
        return {}
    try:
        if p.stat().st_mode & 0o077:
            warnings.warn(
                f"config file {p}: mode {p.stat().st_mode & 0o777:04o} lets others read the API key in it; run chmod 600 {p}",
                stacklevel=3,
            )
    except OSError:
        pass
    out: Dict[str, str] = {}
    # The file is two `key: value` lines of YAML; a tiny reader keeps the
    # SDK free of a YAML dependency.
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#") or s == "---":
            continue
        key, sep, value = s.partition(":")
        key = key.strip()
        if not sep or key not in ("url", "token"):
            warnings.warn(f"config file {p}: line {n}: want url: or token:; ignoring the file", stacklevel=3)
            return {}
        value = value.split(" #", 1)[0].strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key] = value
    return out


def is_loopback(url: str) -> bool:
    """Reports whether ``url`` names a server on this machine."""
    if "://" not in url:
        url = "http://" + url
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def admin_key_paths() -> List[Path]:
    """Where a local ``primer serve`` may have written its admin key, most
    specific first."""
    paths: List[Path] = []
    d = os.environ.get("PRIMER_DATA_DIR")
    if d:
        paths.append(Path(d) / ADMIN_KEY_FILE)
    try:
        wd = Path.cwd()
        for dir in (wd, *wd.parents):
            paths.append(dir / ".data" / ADMIN_KEY_FILE)
    except OSError:
        pass
    x = os.environ.get("XDG_DATA_HOME")
    if x:
        paths.append(Path(x) / "primer" / ADMIN_KEY_FILE)
    else:
        try:
            paths.append(Path.home() / ".local" / "share" / "primer" / ADMIN_KEY_FILE)
        except RuntimeError:
            pass
    return paths


def resolve(base_url: Optional[str] = None, token: Optional[str] = None) -> "tuple[str, Optional[str]]":
    """Returns the server URL and API key the client uses."""
    cfg: Optional[Dict[str, str]] = None

    def conf() -> Dict[str, str]:
        nonlocal cfg
        if cfg is None:
            cfg = read_config()
        return cfg

    url = (base_url or "").strip() or os.environ.get("PRIMER_URL", "").strip() or conf().get("url", "") or DEFAULT_URL
    url = url.rstrip("/")
    if "://" not in url:
        url = "http://" + url
    key = (token or "").strip() or os.environ.get("PRIMER_TOKEN", "").strip() or conf().get("token", "")
    if not key and is_loopback(url):
        for p in admin_key_paths():
            try:
                k = p.read_text().strip()
            except OSError:
                continue
            if k:
                key = k
                break
    return url, key or None
