"""The wrk client: its Lua script, starting a run, and reading the result it writes.

Each run gets a paths file (one URL path a line, used in turn) and, for ``POST``, a folder
of ``<n>.body`` files (see ``pastes.write_bodies``) sent in turn with the paste form's
``multipart/form-data`` content type, the CSRF header and cookie, and ``HX-Request: true``.
A clients file gives the ``X-Forwarded-For`` address of each request in turn, as the
reverse proxy in front of the app would append it (the server trusts one proxy hop): one
wrk connection pool can stand for many people, or for one. The Lua ``done`` hook writes
the summary, with the count of 429 answers, as JSON to ``$WRK_OUT``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:  # run as a script or imported from elsewhere
    sys.path.insert(0, HERE)

from pastes import CONTENT_TYPE  # noqa: E402

WRK_LUA = r"""
local bodies, paths, clients, method = {}, {}, {}, "GET"
local requests = {}
local i = 0
local headers = {}
local threads = {}
refused = 0  -- global: read from each thread's Lua state in done()
function setup(thread)
  table.insert(threads, thread)
end
function init(args)
  method = args[1]
  local f = io.open(args[2], "r")
  for line in f:lines() do table.insert(paths, line) end
  f:close()
  local cf = io.open(args[6], "r")
  for line in cf:lines() do table.insert(clients, line) end
  cf:close()
  if method == "POST" then
    local n = 0
    while true do
      local bf = io.open(args[3] .. "/" .. n .. ".body", "rb")
      if not bf then break end
      table.insert(bodies, bf:read("*a"))
      bf:close()
      n = n + 1
    end
    headers["Content-Type"] = args[5]
    headers["X-CSRFToken"] = args[4]
    headers["Cookie"] = "csrftoken=" .. args[4]
    headers["HX-Request"] = "true"
  end
  -- every request formatted once, here: formatting an 8 KiB body per request would
  -- spend the client's CPU, which shares the machine with the server it measures
  local n = #paths
  if method == "POST" and #bodies > n then n = #bodies end
  if #clients > n then n = #clients end
  for k = 1, n do
    local path = paths[(k % #paths) + 1]
    headers["X-Forwarded-For"] = clients[(k % #clients) + 1]
    if method == "POST" then
      requests[k] = wrk.format("POST", path, headers, bodies[(k % #bodies) + 1])
    else
      requests[k] = wrk.format("GET", path, headers)
    end
  end
end
function request()
  i = i + 1
  return requests[(i % #requests) + 1]
end
function response(status, headers, body)
  if status == 429 then refused = refused + 1 end
end
function done(summary, latency, requests)
  local refused = 0
  for _, thread in ipairs(threads) do refused = refused + (thread:get("refused") or 0) end
  local out = io.open(os.getenv("WRK_OUT"), "w")
  out:write(string.format(
    '{"requests": %d, "duration_us": %d, "bytes": %d, "connect_errors": %d, ' ..
    '"read_errors": %d, "write_errors": %d, "non_2xx_3xx": %d, "timeouts": %d, ' ..
    '"refused_429": %d, ' ..
    '"latency_ms": {"mean": %.3f, "p50": %.3f, "p90": %.3f, "p99": %.3f, "max": %.3f}}',
    summary.requests, summary.duration, summary.bytes, summary.errors.connect,
    summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout,
    refused,
    latency.mean / 1000, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000))
  out:close()
end
"""


def wrk(
    base: str,
    work: Path,
    name: str,
    method: str,
    paths: list[str],
    bodies: Path | None,
    token: str,
    seconds: int,
    connections: int,
    clients: list[str],
    content_type: str = CONTENT_TYPE,
) -> subprocess.Popen[str]:
    """Start wrk; ``clients``: the X-Forwarded-For address of each request, in turn;
    ``content_type``: the bodies' (the paste form's unless said otherwise)."""
    script = work / "load.lua"
    if not script.exists():  # written once: two clients may start at the same moment
        script.write_text(WRK_LUA)
    paths_file = work / f"{name}.paths"
    paths_file.write_text("\n".join(paths) + "\n")
    clients_file = work / f"{name}.clients"
    clients_file.write_text("\n".join(clients) + "\n")
    env = {**os.environ, "WRK_OUT": str(work / f"{name}.json")}
    cmd = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "10s",
        "-s",
        str(script),
        base,
        "--",
        method,
        str(paths_file),
        str(bodies or ""),
        token,
        content_type,
        str(clients_file),
    ]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)


def wrk_result(work: Path, name: str, proc: subprocess.Popen[str]) -> dict[str, Any]:
    proc.communicate(timeout=600)
    data = json.loads((work / f"{name}.json").read_text())
    seconds = data["duration_us"] / 1e6
    data["rps"] = round(data["requests"] / seconds, 1) if seconds else 0.0
    # a 429 is the server defending itself, not an error; every other non-2xx is one
    data["errors"] = (
        sum(data[k] for k in ("connect_errors", "read_errors", "write_errors", "non_2xx_3xx"))
        - data["refused_429"]
        + data["timeouts"]
    )
    data["served"] = data["requests"] - data["refused_429"]
    data["served_rps"] = round(data["served"] / seconds, 1) if seconds else 0.0
    return data
