"""The style and the one script of a report page, inline so that the page stays one file that
works offline: no CDN, no library.

The script does two things and nothing else:
- sorts a table marked `data-sortable` when its header is clicked (numbers by their exact value,
  kept in the cell's `data-v`; text with numeric collation, so M128 sorts after M64; an empty
  cell last either way);
- opens a trace link marked `data-perfetto` in the Perfetto UI with one click, by the UI's
  documented postMessage protocol (docs/visualization/deep-linking-to-perfetto-ui.md in
  google/perfetto): open the UI's window inside the click (a popup blocker allows only that),
  fetch the trace, send 'PING' until the UI answers 'PONG', then post
  {perfetto: {buffer, title, fileName, url}}. The UI unpacks a gzipped trace itself.
  That protocol does not work from a page opened as a file: the UI answers PING to the page's
  origin, and a file page's origin is opaque ('null'), so no PONG can come back; and fetch()
  of a file URL is blocked. There the link is left alone: it downloads the .json.gz, and the
  note under the table says how to serve the folder to get the one-click path.
"""
from __future__ import annotations

# Borders on the cells' right and bottom only, with the collapse off: a sticky header cell keeps
# its borders while the rows scroll under it (a collapsed border belongs to the table).
TABLE_CSS = """
.tw{overflow:auto;max-height:80vh;margin:.5em 0;max-width:100%}
table{border-collapse:separate;border-spacing:0;font-size:.8em}
th,td{border:solid #ddd;border-width:0 1px 1px 0;padding:.2em .3em;text-align:right;
vertical-align:top}
tr>:first-child{border-left-width:1px}thead th{border-top-width:1px}
th{background:#f4f4f4;font-weight:600}td.l,th.l{text-align:left}
thead.sticky th{position:sticky;top:0;z-index:1}
td.n,.nw{white-space:nowrap}
th small,td small{display:block;font-weight:400;color:#666;font-size:.9em;white-space:nowrap}
table[data-sortable] th{cursor:pointer;user-select:none}
table[data-sortable] th:hover{background:#e8e8e8}
th[aria-sort=ascending]::after{content:" \\25B2";font-size:.8em}
th[aria-sort=descending]::after{content:" \\25BC";font-size:.8em}
.trace-note{color:#555;font-size:.85em;margin:.2em 0 1em}
"""

PERFETTO_ORIGIN = "https://ui.perfetto.dev"

SCRIPT = """
(function () {
  "use strict";
  var PERFETTO = "%(origin)s";

  // --- sorting -------------------------------------------------------------------------
  function key(cell) {
    if (!cell) return null;
    if (cell.dataset.v !== undefined) return Number(cell.dataset.v);
    var text = cell.textContent.trim();
    return text === "" || text === "-" ? null : text;
  }
  function compare(a, b) {
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b), undefined, {numeric: true});
  }
  function sortBy(th) {
    var body = th.closest("table").tBodies[0], col = th.cellIndex;
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    Array.prototype.forEach.call(th.parentNode.cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r, s) {  // an empty cell goes last in both directions
      var a = key(r.cells[col]), b = key(s.cells[col]);
      if (a === null || b === null) return (a === null) - (b === null);
      return dir * compare(a, b);
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  // --- traces to Perfetto --------------------------------------------------------------
  var served = location.protocol === "http:" || location.protocol === "https:";
  function say(text) {
    document.querySelectorAll(".trace-note").forEach(function (p) { p.textContent = text; });
  }
  function download(link) {  // the plain link's own action, once the one-click path failed
    var a = document.createElement("a");
    a.href = link.href;
    a.download = "";
    document.body.appendChild(a);
    a.click();
    a.remove();
  }
  function post(win, buffer, link) {
    var name = link.getAttribute("href").split("/").pop();
    var tries = 0, timer = setInterval(function () {
      if (win.closed || ++tries > 600) {  // 30 s: the UI never answered
        clearInterval(timer);
        removeEventListener("message", answer);
        say("Perfetto did not answer (offline?); " + name + " is downloaded instead.");
        if (!win.closed) win.close();
        download(link);
        return;
      }
      win.postMessage("PING", PERFETTO);
    }, 50);
    function answer(event) {
      if (event.source !== win || event.origin !== PERFETTO || event.data !== "PONG") return;
      clearInterval(timer);
      removeEventListener("message", answer);
      win.postMessage({perfetto: {buffer: buffer, title: "fusebench " + name.split(".")[0],
                                  fileName: name, url: location.href}}, PERFETTO);
    }
    addEventListener("message", answer);
  }
  function openTrace(link, event) {
    if (!served) return;  // a file page: the link downloads (see the note)
    event.preventDefault();
    var win = window.open(PERFETTO);  // now, inside the click, or the popup blocker stops it
    if (!win) {
      say("The browser blocked the Perfetto window: allow pop-ups for this page, or use the "
          + "downloaded file.");
      download(link);
      return;
    }
    fetch(link.getAttribute("href")).then(function (response) {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.arrayBuffer();
    }).then(function (buffer) { post(win, buffer, link); }, function (error) {
      win.close();
      say("Could not read " + link.getAttribute("href") + " (" + error.message + ").");
    });
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest("a[data-perfetto]");
    if (link) return openTrace(link, event);
    var th = event.target.closest("table[data-sortable] thead th");
    if (th) sortBy(th);
  });
  document.addEventListener("keydown", function (event) {
    var th = event.target.closest && event.target.closest("table[data-sortable] thead th");
    if (th && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); sortBy(th); }
  });
  if (served) {
    say("A trace link opens the trace in Perfetto (" + PERFETTO + ", a new tab; the trace "
        + "is handed to it in the browser, not uploaded). Allow pop-ups for this page.");
  } else if (document.querySelector("a[data-perfetto]")) {
    var path = decodeURIComponent(location.pathname), cut = path.lastIndexOf("/");
    say("Opened as a file, so a trace link downloads its .json.gz (open it in Perfetto by "
        + "dropping it on " + PERFETTO + "). For one click into Perfetto, serve this folder: "
        + "python3 -m http.server -b 127.0.0.1 -d '" + path.slice(0, cut) + "' 8000, then "
        + "open http://127.0.0.1:8000/" + path.slice(cut + 1));
  }
})();
""" % {"origin": PERFETTO_ORIGIN}
