// The report's behaviour: the chart along the network, the op panel, sortable and filterable tables.
// Every number shown comes from the page's JSON (written by render/report/report_page.py); nothing is computed here
// but where to draw it. Text from the data is set with textContent, never parsed as HTML.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var GL_ABOVE = 3000; // points: above this, WebGL keeps pan, zoom and hover smooth
  var COLORS = ["#2463b0", "#8e44ad", "#16a085", "#d35400", "#7f8c8d"];
  var metric = "cosine";

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "text") { node.textContent = attrs[key]; } else { node.setAttribute(key, attrs[key]); }
    });
    (children || []).forEach(function (child) { node.appendChild(child); });
    return node;
  }

  function hasWebGL() {
    try { return !!document.createElement("canvas").getContext("webgl"); } catch (e) { return false; }
  }

  var total = data.runs.reduce(function (n, run) { return n + run.x.length; }, 0);
  var traceType = total > GL_ABOVE && hasWebGL() ? "scattergl" : "scatter";

  // An output's op: its tensor's name without ':output:N' (the page holds each name once)
  function opName(run, i) {
    var tensor = run.tensor[i];
    var cut = tensor.lastIndexOf(":output:");
    return cut >= 0 ? tensor.slice(0, cut) : tensor;
  }

  function opLabel(run, i) {
    var op = data.ops[run.op[i]];
    return (op && op.id !== null ? "[" + op.id + "] " : "") + opName(run, i) + (op ? " (" + op.type + ")" : "");
  }

  function traces() {
    return data.runs.filter(function (run) { return run.x.length; }).map(function (run, k) {
      var color = COLORS[k % COLORS.length];
      var custom = run.x.map(function (_, i) {
        return [opLabel(run, i), run.tensor[i], run.metrics[i][0], run.metrics[i][1]];
      });
      return {
        type: traceType, mode: "markers", name: run.label, meta: { run: run.number },
        x: run.x, y: metric === "cosine" ? run.cosine : run.error, customdata: custom,
        // NPU-vs-NPU points are open diamonds, so both runs stay visible where they overlap
        marker: {
          size: run.x.length > GL_ABOVE ? 5 : 8,
          color: run.abnormal.map(function (a) { return a ? (run.npu_vs_npu ? "#e67e22" : "#c0392b") : color; }),
          symbol: run.nan_data.map(function (n) {
            return n ? (run.npu_vs_npu ? "x-open" : "x") : (run.npu_vs_npu ? "diamond-open" : "circle");
          }),
          line: { width: run.npu_vs_npu ? 1.5 : 0 }
        },
        hovertemplate: "%{customdata[0]}<br>%{customdata[1]}<br>cosine %{customdata[2]}" +
          "<br>max abs error %{customdata[3]}<extra>%{fullData.name}</extra>"
      };
    });
  }

  function layout() {
    var cosine = metric === "cosine";
    return {
      margin: { l: 64, r: 16, t: 36, b: 48 }, hovermode: "closest", showlegend: true,
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
      xaxis: { title: { text: "execution order (op id)" }, zeroline: false },
      yaxis: cosine ? { title: { text: "cosine similarity" } }
        : { title: { text: "max absolute error" }, type: "log", exponentformat: "power" },
      shapes: cosine ? [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: data.threshold, y1: data.threshold,
        line: { color: "#c0392b", width: 1, dash: "dash" } }] : [],
      annotations: cosine ? [{ xref: "paper", x: 1, y: data.threshold, yanchor: "bottom", xanchor: "right",
        showarrow: false, text: "threshold " + data.threshold, font: { color: "#c0392b", size: 11 } }] : []
    };
  }

  var chart = document.getElementById("chart");
  var config = { displaylogo: false, responsive: true };

  function draw() {
    return Plotly.react(chart, traces(), layout(), config);
  }

  function setMetric(name) {
    metric = name;
    document.getElementById("show-cosine").classList.toggle("on", name === "cosine");
    document.getElementById("show-error").classList.toggle("on", name === "error");
    return draw();
  }

  // --- the op panel -------------------------------------------------------------------------------
  function rows(pairs) {
    return el("table", {}, [el("tbody", {}, pairs.map(function (pair) {
      return el("tr", {}, pair.map(function (cell) { return el("td", { text: cell }); }));
    }))]);
  }

  function headed(headers, body, id) {
    var attrs = id ? { id: id } : {};
    return el("table", attrs, [
      el("thead", {}, [el("tr", {}, headers.map(function (h) { return el("th", { text: h }); }))]),
      el("tbody", {}, body.map(function (r) {
        return el("tr", {}, r.map(function (cell) { return el("td", { text: cell }); }));
      }))]);
  }

  function block(title, child) {
    return el("div", {}, [el("h3", { text: title }), child]);
  }

  function openPanel(runNumber, i) {
    var run = data.runs[runNumber];
    if (!run || i === "" || i === null || i === undefined || !run.tensor[i]) { return; }
    i = Number(i);
    var op = data.ops[run.op[i]];
    var panel = document.getElementById("op-panel");
    var body = document.getElementById("panel-body");
    document.getElementById("panel-title").textContent = opLabel(run, i);
    body.textContent = "";
    var grid = el("div", { "class": "panel-grid" });
    var facts = [["run", run.label], ["tensor", run.tensor[i]], ["shape", run.shape[i]]];
    if (op) {
      facts.push(["type", op.type], ["fusion pass", op.pass || "—"],
        ["original TF ops", op.original.length ? op.original.join(", ") : "—"]);
    }
    var verdict = data.verdicts[opName(run, i)];
    if (verdict) { facts.push(["replay", verdict.line]); }
    grid.appendChild(block("Op", rows(facts)));
    if (op) {
      var ports = op.inputs.map(function (d, k) { return ["input " + k].concat(d); })
        .concat(op.outputs.map(function (d, k) { return ["output " + k].concat(d); }));
      grid.appendChild(block("Inputs and outputs (Build graph)", headed(["", "dtype", "layout", "shape"], ports)));
    }
    grid.appendChild(block("The ten metrics", headed(["metric", "value"], data.metric_names.map(function (name, k) {
      return [name, run.metrics[i][k]];
    }), "panel-metrics")));
    var stats = run.stats[run.tensor[i]];
    var sides = run.npu_vs_npu ? ["NPU (left)", "NPU (right)"] : ["NPU", "golden"];
    if (stats) {
      var keys = ["count", "max", "min", "mean", "std", "nan", "inf", "zero"];
      grid.appendChild(block("Statistics", headed([""].concat(sides), keys.map(function (key) {
        return [key, stats.npu[key], stats.golden[key]];
      }), "panel-stats")));
      var hist = el("div", { id: "histogram" });
      var note = el("p", { "class": "hint", id: "histogram-note",
        text: "|" + sides[0] + " − " + sides[1] + "| per element: " + stats.hist.zero + " equal (below 1e-12), " +
          stats.hist.nonfinite + " with NaN/Inf on either side." });
      grid.appendChild(el("div", {}, [el("h3", { text: "Error histogram" }), hist, note]));
      body.appendChild(grid);
      var labels = stats.hist.counts.map(function (_, k) { return stats.hist.labels[k] + "–" + stats.hist.labels[k + 1]; });
      Plotly.newPlot(hist, [{ type: "bar", x: labels, y: stats.hist.counts, marker: { color: "#2463b0" },
        hovertemplate: "%{x}: %{y} elements<extra></extra>" }],
        { margin: { l: 56, r: 8, t: 8, b: 80 }, xaxis: { title: { text: "absolute error" }, tickangle: -45 },
          yaxis: { title: { text: "elements" } } }, config);
    } else {
      grid.appendChild(block("Statistics", el("p", { "class": "hint",
        text: run.stats_note || "no statistics for this output" })));
      body.appendChild(grid);
    }
    var siblings = [];
    var name = opName(run, i);
    run.tensor.forEach(function (_, k) { if (k !== i && run.op[k] === run.op[i] && opName(run, k) === name) { siblings.push(k); } });
    if (siblings.length) {
      var list = el("p", { "class": "hint", text: "Other outputs of this op: " });
      siblings.forEach(function (k) {
        var link = el("a", { href: "#op-panel", "class": "op-link", "data-run": runNumber, "data-point": k,
          text: run.tensor[k] + " " });
        list.appendChild(link);
      });
      body.appendChild(list);
    }
    panel.hidden = false;
    panel.setAttribute("data-run", runNumber);
    panel.setAttribute("data-point", i);
  }

  // --- tables ------------------------------------------------------------------------------------
  function sortKey(cell, type) {
    var text = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
    if (type === "number") { var n = parseFloat(text); return isNaN(n) ? Infinity : n; }
    return text.toLowerCase();
  }

  function sortTable(table, column) {
    var th = table.tHead.rows[0].cells[column];
    var type = th.getAttribute("data-type") || "text";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var sorted = Array.prototype.slice.call(body.rows).map(function (row, k) {
      return { row: row, key: sortKey(row.cells[column], type), k: k };
    }).sort(function (a, b) {
      if (a.key < b.key) { return ascending ? -1 : 1; }
      if (a.key > b.key) { return ascending ? 1 : -1; }
      return a.k - b.k; // stable
    });
    var fragment = document.createDocumentFragment();
    sorted.forEach(function (item) { fragment.appendChild(item.row); });
    body.appendChild(fragment);
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.addEventListener("click", function () { sortTable(table, column); });
    });
  });
  document.querySelectorAll("input.filter").forEach(function (input) {
    input.addEventListener("input", function () {
      var query = input.value.trim().toLowerCase();
      var table = document.getElementById(input.getAttribute("data-table"));
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        row.hidden = query !== "" && row.textContent.toLowerCase().indexOf(query) < 0;
      });
    });
  });
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.op-link") : null;
    if (!link) { return; }
    event.preventDefault();
    openPanel(Number(link.getAttribute("data-run")), link.getAttribute("data-point"));
    document.getElementById("op-panel").scrollIntoView();
  });
  document.getElementById("show-cosine").addEventListener("click", function () { setMetric("cosine"); });
  document.getElementById("show-error").addEventListener("click", function () { setMetric("error"); });

  draw().then(function () {
    chart.on("plotly_click", function (event) {
      var point = event.points[0];
      openPanel(point.data.meta.run, point.pointIndex);
    });
    window.precisionReport = { data: data, traceType: traceType, openPanel: openPanel, setMetric: setMetric,
      ready: true };
    document.body.setAttribute("data-ready", "yes");
  });
})();
