"""The web server `explore` runs: Model Explorer's own web app (the installed package's `web_app/`,
unchanged) and the files of one explore folder, from this machine only.

Model Explorer's own server (model_explorer.visualize_from_config) is not used, for four reasons:
it asks PyPI and GitHub for a newer version on every start (from a thread with no timeout, which keeps
the process alive on a machine without internet), its page preconnects to fonts.gstatic.com and loads
fonts from there, its file API reads any file of the machine for anyone who reaches the port, and it has
no way to load a node mapping for the synchronised two-pane view. Here: the version answer is local,
the fonts the package ships are served and the others left to the fallback font, files are served from
the explore folder only, and a small script (explore_boot.js) hands the mapping and the first divergent
op to the app once both panes are drawn.
"""

from __future__ import annotations

import json
import mimetypes
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlparse

PACKAGE = "ai-edge-model-explorer"
BOOT_SCRIPT = Path(__file__).with_name("explore_boot.js")
_FONT_URL = re.compile(r"url\(https://fonts\.gstatic\.com/s/[^)]*/([^/)]+\.woff2)\)")
_FONT_FACE = re.compile(r"@font-face\{[^}]*\}")


def missing_package() -> str | None:
    """One line saying how to install Model Explorer when it is not installed, else None."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("model_explorer")
    except (ImportError, ValueError):  # a finder that refuses it, or a half-removed package
        spec = None
    if spec is None:
        return (f"explore needs Model Explorer, which is not installed: `pip install {PACKAGE}` "
                "(or `pip install precision-tool[explore]`)")
    return None


def web_app_dir() -> Path:
    """The installed package's web app (found without importing the package: it imports Flask and more)."""
    import importlib.util

    spec = importlib.util.find_spec("model_explorer")
    assert spec is not None and spec.submodule_search_locations
    return Path(list(spec.submodule_search_locations)[0]) / "web_app"


def installed_version() -> str:
    from importlib import metadata

    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return ""


def offline_index(web_app: Path) -> str:
    """The app's index.html with nothing off the machine: no preconnect, fonts the package ships served
    from static_files/, @font-face rules for fonts it does not ship dropped (the fallback font is used),
    and the boot script added."""
    text = (web_app / "index.html").read_text(encoding="utf-8")
    text = re.sub(r'<link rel="preconnect"[^>]*>', "", text)
    local = {p.name for p in (web_app / "static_files").glob("*.woff2")}

    def face(match: re.Match[str]) -> str:
        rule = match.group(0)
        font = _FONT_URL.search(rule)
        if font is None:
            return rule
        if font.group(1) not in local:
            return ""
        return _FONT_URL.sub(lambda m: f"url(/static_files/{m.group(1)})", rule)

    text = _FONT_FACE.sub(face, text)
    return text.replace("</body>", '<script src="/precision_tool/explore_boot.js"></script></body>', 1)


def page_query(folder: Path, info: dict[str, Any]) -> str:
    """The query that opens both graphs, their node data, and the first divergent op selected (the server
    sends `/` there: the address printed stays short enough to copy)."""
    npu = str(folder / info["npu_graph"])
    tf = str(folder / info["tf_graph"])
    node_data = [str(folder / n) for n in info["npu_node_data"]] + [str(folder / n) for n in info["tf_node_data"]]
    # node data goes to the graph collection of that label (our files' label is their graph's id)
    targets = [info["npu_graph_id"]] * len(info["npu_node_data"]) + [info["tf_graph_id"]] * len(info["tf_node_data"])
    panes = [{"deepestExpandedGroupNodeIds": [], "selectedNodeId": info.get("first_divergent") or "",
              "selectedGraphId": info["npu_graph_id"], "selectedCollectionLabel": "", "widthFraction": 0.5},
             {"deepestExpandedGroupNodeIds": [], "selectedNodeId": (info.get("first_tf_ops") or [""])[0],
              "selectedGraphId": info["tf_graph_id"], "selectedCollectionLabel": "", "widthFraction": 0.5}]
    data = {"models": [{"url": npu, "adapterId": "builtin_json"}, {"url": tf, "adapterId": "builtin_json"}],
            "nodeData": node_data, "nodeDataTargets": targets, "uiState": {"paneStates": panes}}
    return f"?data={quote(json.dumps(data))}&renderer=webgl"


class ExploreServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, folder: Path) -> None:
        self.folder = folder.resolve()
        self.web_app = web_app_dir()
        self.index = offline_index(self.web_app).encode("utf-8")
        self.info = json.loads((folder / "explore.json").read_text(encoding="utf-8"))
        self.start = "/" + page_query(self.folder, self.info)
        super().__init__((host, port), _Handler)

    def serve_in_background(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="explore-server", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: ExploreServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # the shell stays quiet while the page loads

    def _send(self, body: bytes, content_type: str, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, value: Any) -> None:
        self._send(json.dumps(value).encode("utf-8"), "application/json")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        url = urlparse(self.path)
        query = parse_qs(url.query)
        route = url.path
        if route in ("/", "/index.html"):
            if "data" not in query:  # the short address: on to the page with both graphs
                self.send_response(302)
                self.send_header("Location", self.server.start)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            return self._send(self.server.index, "text/html; charset=utf-8")
        if route == "/precision_tool/explore_boot.js":
            return self._send(BOOT_SCRIPT.read_bytes(), "text/javascript")
        if route == "/precision_tool/explore.json":
            info = dict(self.server.info)
            info["mapping_entries"] = json.loads((self.server.folder / info["mapping"]).read_text(encoding="utf-8"))
            return self._json(info)
        if route == "/api/v1/check_new_version":
            # answered here: the package's own server asks PyPI and GitHub
            return self._json({"version": "", "runningVersion": installed_version(), "releaseUrl": "",
                               "desktopAppUrl": ""})
        if route == "/api/v1/get_extensions":
            return self._json([{"fileExts": ["json"], "type": "adapter", "id": "builtin_json",
                                "name": "JSON adapter", "description": "Model Explorer graph JSON"}])
        if route == "/api/v1/read_text_file":
            return self._read_text_file((query.get("path") or [""])[0])
        if route == "/api/v1/notify_user_provided_model_path":
            return self._json({"status": "ok"})
        if route == "/apistream/server_director":
            # nothing to direct: 204 tells the page's EventSource not to reconnect
            self.send_response(204)
            self.end_headers()
            return None
        return self._static(route)

    def _read_text_file(self, path: str) -> None:
        target = Path(path).resolve()
        if target.parent != self.server.folder or not target.is_file():
            return self._json({"error": f"{path}: not a file of this explore folder"})
        return self._json({"content": target.read_text(encoding="utf-8")})

    def _static(self, route: str) -> None:
        relative = route.lstrip("/")
        target = (self.server.web_app / relative).resolve()
        if not relative or self.server.web_app.resolve() not in target.parents or not target.is_file():
            return self._send(b"not found", "text/plain", 404)
        content_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if target.suffix == ".js":
            content_type = "text/javascript"
        return self._send(target.read_bytes(), content_type)
