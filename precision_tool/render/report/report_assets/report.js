// The report's behaviour: the chart along the network, the op panel, sortable and filterable tables.
// Every number shown comes from the page's JSON (written by render/report/report_page.py, packed by
// page_columns.py and unpacked here); nothing is computed here but where to draw it. Text from the data is
// set with textContent (or drawn on a canvas), never parsed as HTML. The charts are chart.js, beside this.
(function () {
  "use strict";
  var started = window.performance ? performance.now() : 0; // the script's own time, for bench_report.py
  var BIG = 3000; // points in a run: above this, smaller markers
  var COLORS = ["#2463b0", "#8e44ad", "#16a085", "#d35400", "#7f8c8d"];
  var metric = "cosine";

  // --- the JSON, unpacked (page_columns.py packs it) ---------------------------------------------
  function unFrontCode(flat) {
    var names = [], previous = "";
    for (var k = 0; k < flat.length; k += 2) {
      previous = previous.slice(0, flat[k]) + flat[k + 1];
      names.push(previous);
    }
    return names;
  }

  // A number held as an integer of 10^-places back to its text: decimals(21420, 6) → "0.021420"
  function decimals(units, places) {
    var digits = String(Math.abs(units));
    while (digits.length < places + 1) { digits = "0" + digits; }
    return (units < 0 ? "-" : "") + digits.slice(0, -places) + "." + digits.slice(-places);
  }

  // A metric cell back to the CSV's text: millionths, StandardDeviation's four thousandths, or text as is
  function metricText(cell) {
    if (typeof cell === "number") { return decimals(cell, 6); }
    if (Array.isArray(cell)) {
      var v = cell.map(function (n) { return decimals(n, 3); });
      return "(" + v[0] + ";" + v[1] + "),(" + v[2] + ";" + v[3] + ")";
    }
    return cell;
  }

  function flags(indexes, length) {
    var out = new Uint8Array(length);
    indexes.forEach(function (i) { out[i] = 1; });
    return out;
  }

  function unpack(packed) {
    var o = packed.ops, names = unFrontCode(o.names), originals = unFrontCode(o.original_names), next = 0;
    var port = function (k) { return o.ports[k]; };
    var ops = names.map(function (name, i) {
      var count = o.original[i], original = count < 0 ? [name] : originals.slice(next, next + count);
      next += Math.max(count, 0);
      return { name: name, type: o.types[o.type[i]], id: o.id[i], pass: o.passes[o.pass[i]], original: original,
        inputs: o.inputs[i].map(port), outputs: o.outputs[i].map(port) };
    });
    var runs = packed.runs.map(function (run) {
      var n = run.x.length;
      return { label: run.label, npu_vs_npu: run.npu_vs_npu, number: run.number, x: run.x, cosine: run.cosine,
        error: run.error, op: run.op, stats_note: run.stats_note, metricColumns: run.metrics, packedStats: run.stats,
        tensor: run.tensor.map(function (t, i) { return typeof t === "number" ? ops[run.op[i]].name + ":output:" + t : t; }),
        abnormal: flags(run.abnormal, n), nan_data: flags(run.nan_data, n),
        shape: run.shape.map(function (k) { return run.shapes[k]; }) };
    });
    return { threshold: packed.threshold, metric_names: packed.metric_names, stat_keys: packed.stat_keys,
      hist_labels: packed.hist_labels, ops: ops, runs: runs, verdicts: packed.verdicts, sources: packed.sources,
      ranking: packed.ranking };
  }

  var data = unpack(JSON.parse(document.getElementById("report-data").textContent));

  // The ten metrics of a point as the CSV writes them
  function metricTexts(run, i) {
    return run.metricColumns.map(function (column) { return metricText(column[i]); });
  }

  // A point's statistics for its panel, or null: both sides by name, the histogram's bars and labels
  function statsOf(run, i) {
    var packed = run.packedStats[String(i)];
    if (!packed) { return null; }
    var side = function (values) {
      var out = {};
      data.stat_keys.forEach(function (key, k) { out[key] = values[k]; });
      return out;
    };
    var first = packed[2], counts = packed[3];
    return { npu: side(packed[0]), golden: side(packed[1]), hist: { counts: counts, zero: packed[4], nonfinite: packed[5],
      labels: data.hist_labels.slice(first, first + counts.length + 1) } };
  }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "text") { node.textContent = attrs[key]; } else { node.setAttribute(key, attrs[key]); }
    });
    (children || []).forEach(function (child) { node.appendChild(child); });
    return node;
  }

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

  var charted = data.runs.filter(function (run) { return run.x.length; });

  function traces() {
    return charted.map(function (run, k) {
      var color = COLORS[k % COLORS.length], bad = run.npu_vs_npu ? "#e67e22" : "#c0392b";
      // NPU-vs-NPU points are open diamonds, so both runs stay visible where they overlap; NaN/Inf crosses
      var symbol = run.npu_vs_npu ? "diamond-open" : "circle", cross = run.npu_vs_npu ? "x-open" : "x";
      return {
        name: run.label, run: run.number, x: run.x, y: metric === "cosine" ? run.cosine : run.error,
        size: run.x.length > BIG ? 5 : 8,
        styles: [{ symbol: symbol, color: color }, { symbol: symbol, color: bad },
          { symbol: cross, color: color }, { symbol: cross, color: bad }],
        style: function (i) { return (run.nan_data[i] ? 2 : 0) + (run.abnormal[i] ? 1 : 0); },
        hover: function (i) {
          var texts = metricTexts(run, i);
          return [opLabel(run, i), run.tensor[i], "cosine " + texts[0], "max abs error " + texts[1]];
        }
      };
    });
  }

  function axes() {
    var cosine = metric === "cosine";
    return { xTitle: "execution order (op id)", yTitle: cosine ? "cosine similarity" : "max absolute error",
      yLog: !cosine, threshold: cosine ? { y: data.threshold, text: "threshold " + data.threshold, color: "#c0392b" } : null };
  }

  var chart = new window.PrecisionChart.Scatter(document.getElementById("chart"), function (trace, i) {
    openPanel(charted[trace].number, i);
  });

  function draw() {
    chart.setData(traces(), axes());
  }

  function setMetric(name) {
    metric = name;
    document.getElementById("show-cosine").classList.toggle("on", name === "cosine");
    document.getElementById("show-error").classList.toggle("on", name === "error");
    draw();
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

  var histogram = null;

  // [place, line, first kept line, kept lines]: the place, then the code around the line, the line marked
  function codeAround(place) {
    var code = el("pre", { "class": "source-code" });
    place[3].forEach(function (text, k) {
      var number = place[2] + k;
      code.appendChild(el("span", { "class": number === place[1] ? "source-line here" : "source-line",
        text: String(number).padStart(5) + "  " + text }));
    });
    return el("div", { "class": "source" }, [el("p", { "class": "source-place", text: place[0] }), code]);
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
    histogram = null;
    panel.hidden = false; // shown first: the histogram is drawn at the size its box has
    var grid = el("div", { "class": "panel-grid" });
    var facts = [["run", run.label], ["tensor", run.tensor[i]], ["shape", run.shape[i]]];
    if (op) {
      facts.push(["type", op.type], ["fusion pass", op.pass || "—"],
        ["original TF ops", op.original.length ? op.original.join(", ") : "—"]);
    }
    var verdict = data.verdicts[opName(run, i)];
    if (verdict) { facts.push(["replay", verdict.line]); }
    grid.appendChild(block("Op", rows(facts)));
    var made = data.sources && run.op[i] >= 0 ? data.sources.op[run.op[i]] : [];
    if (made && made.length) {
      grid.appendChild(block("Made at (the training script)", el("div", {}, made.map(function (k) {
        return codeAround(data.sources.places[k]);
      }))));
    }
    if (op) {
      var ports = op.inputs.map(function (d, k) { return ["input " + k].concat(d); })
        .concat(op.outputs.map(function (d, k) { return ["output " + k].concat(d); }));
      grid.appendChild(block("Inputs and outputs (Build graph)", headed(["", "dtype", "layout", "shape"], ports)));
    }
    var texts = metricTexts(run, i);
    grid.appendChild(block("The ten metrics", headed(["metric", "value"], data.metric_names.map(function (name, k) {
      return [name, texts[k]];
    }), "panel-metrics")));
    var stats = statsOf(run, i);
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
      histogram = new window.PrecisionChart.Bars(hist, labels, stats.hist.counts, { x: "absolute error", y: "elements" });
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

  draw();
  window.precisionReport = { data: data, chart: chart, traceType: "canvas", openPanel: openPanel, setMetric: setMetric,
    metricTexts: metricTexts, histogram: function () { return histogram; },
    codec: { unFrontCode: unFrontCode, metricText: metricText },
    scriptMs: window.performance ? performance.now() - started : null, ready: true };
  document.body.setAttribute("data-ready", "yes");
})();
