// The report's loss-curves panel, drawn on a <canvas> with the parts of chart.js (loaded before it): both runs'
// loss by step on top, NPU - golden below, a dashed line at the first step where they part; hover names the
// step. Written for PrecisionTool, no library.
(function () {
  "use strict";
  var node = document.getElementById("loss-data"), box = document.getElementById("loss-chart");
  if (!node || !box || !window.PrecisionChart) { return; }
  var parts = window.PrecisionChart.parts, el = parts.el, fit = parts.fit, linearTicks = parts.linearTicks;
  var INK = parts.INK, DIM = parts.DIM, GRID = parts.GRID;
  var data = JSON.parse(node.textContent);
  var GOLDEN = "#2463b0", NPU = "#d9622b", DIFF = "#5d6775", PART = "#c0392b";
  var series = [
    { name: "golden", color: GOLDEN, points: data.golden || [] },
    { name: "NPU", color: NPU, points: data.npu || [] }
  ];
  var difference = data.difference || [];

  box.style.position = "relative";
  box.style.height = difference.length ? "440px" : "300px";
  var legend = el("div", "chart-legend");
  series.forEach(function (s) {
    var item = el("span", "chart-legend-item", "\u2014 " + s.name + (s.points.length ? " (" + s.points.length + " steps)" : " (none)"));
    item.style.color = s.color;
    legend.appendChild(item);
  });
  if (data.first_parting !== null) {
    var mark = el("span", "chart-legend-item", "\u2506 first parting: step " + data.first_parting);
    mark.style.color = PART;
    legend.appendChild(mark);
  }
  box.parentNode.insertBefore(legend, box);
  var canvas = el("canvas", "loss-canvas");
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", "loss by step, golden and NPU, and their difference");
  canvas.style.position = "absolute";
  canvas.style.left = "0";
  canvas.style.top = "0";
  box.appendChild(canvas);
  var tooltip = new parts.Tooltip(box);
  var panels = [];

  function range(lists) {
    var lo = Infinity, hi = -Infinity;
    lists.forEach(function (list) {
      list.forEach(function (p) { if (p[1] !== null && isFinite(p[1])) { lo = Math.min(lo, p[1]); hi = Math.max(hi, p[1]); } });
    });
    if (!isFinite(lo)) { return [0, 1]; }
    var pad = (hi - lo) * 0.06 || Math.abs(hi) * 0.05 || 1;
    return [lo - pad, hi + pad];
  }

  function stepRange() {
    var lo = Infinity, hi = -Infinity;
    series.concat([{ points: difference }]).forEach(function (s) {
      if (s.points.length) { lo = Math.min(lo, s.points[0][0]); hi = Math.max(hi, s.points[s.points.length - 1][0]); }
    });
    if (!isFinite(lo)) { return [0, 1]; }
    return hi > lo ? [lo, hi] : [lo - 1, hi + 1];
  }

  // One panel: axes, grid, the lines of `lists` ({points, color}), the parting marker
  function panel(ctx, p, xs, ys, lists, title, zero) {
    var x = function (v) { return p.l + (v - xs[0]) / (xs[1] - xs[0]) * p.w; };
    var y = function (v) { return p.t + p.h - (v - ys[0]) / (ys[1] - ys[0]) * p.h; };
    ctx.strokeStyle = GRID;
    ctx.fillStyle = DIM;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.lineWidth = 1;
    linearTicks(ys[0], ys[1], p.h / 40).forEach(function (tick) {
      var at = Math.round(y(tick.at)) + 0.5;
      ctx.beginPath(); ctx.moveTo(p.l, at); ctx.lineTo(p.l + p.w, at); ctx.stroke();
      ctx.fillText(tick.text, p.l - 6, at);
    });
    if (zero && ys[0] < 0 && ys[1] > 0) {
      ctx.strokeStyle = DIM;
      ctx.beginPath(); ctx.moveTo(p.l, Math.round(y(0)) + 0.5); ctx.lineTo(p.l + p.w, Math.round(y(0)) + 0.5); ctx.stroke();
    }
    lists.forEach(function (s) {
      ctx.strokeStyle = s.color;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      var open = false;
      s.points.forEach(function (pt) {
        if (pt[1] === null || !isFinite(pt[1])) { open = false; return; } // a non-finite loss breaks the line
        if (open) { ctx.lineTo(x(pt[0]), y(pt[1])); } else { ctx.moveTo(x(pt[0]), y(pt[1])); open = true; }
      });
      ctx.stroke();
      if (s.points.length < 60) { // few steps: each one shows
        ctx.fillStyle = s.color;
        s.points.forEach(function (pt) {
          if (pt[1] !== null) { ctx.beginPath(); ctx.arc(x(pt[0]), y(pt[1]), 2.5, 0, 2 * Math.PI); ctx.fill(); }
        });
      }
    });
    if (data.first_parting !== null) {
      var at = Math.round(x(data.first_parting)) + 0.5;
      ctx.strokeStyle = PART;
      ctx.lineWidth = 1.5;
      ctx.setLineDash([5, 4]);
      ctx.beginPath(); ctx.moveTo(at, p.t); ctx.lineTo(at, p.t + p.h); ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.fillStyle = INK;
    ctx.save();
    ctx.translate(12, p.t + p.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.fillText(title, 0, 0);
    ctx.restore();
    return { p: p, x: x };
  }

  function draw() {
    var width = box.clientWidth, height = box.clientHeight, ctx = fit(canvas, width, height);
    var xs = stepRange(), l = 86, w = Math.max(10, width - l - 16);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, width, height);
    var lower = difference.length ? 130 : 0, top = { l: l, t: 10, w: w, h: Math.max(40, height - 56 - lower - (lower ? 24 : 0)) };
    panels = [panel(ctx, top, xs, range(series.map(function (s) { return s.points; })), series, "loss", false)];
    if (lower) {
      var bottom = { l: l, t: top.t + top.h + 24, w: w, h: lower };
      panels.push(panel(ctx, bottom, xs, range([difference]), [{ points: difference, color: DIFF }], "NPU \u2212 golden", true));
    }
    var last = panels[panels.length - 1].p;
    ctx.fillStyle = DIM;
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    linearTicks(xs[0], xs[1], w / 90).forEach(function (tick) {
      if (Number(tick.text) % 1 === 0) { ctx.fillText(tick.text, panels[0].x(tick.at), last.t + last.h + 4); }
    });
    ctx.fillStyle = INK;
    ctx.textBaseline = "bottom";
    ctx.fillText("step", l + w / 2, height - 2);
  }

  function nearest(list, step) {
    var best = null;
    list.forEach(function (pt) { if (best === null || Math.abs(pt[0] - step) < Math.abs(best[0] - step)) { best = pt; } });
    return best;
  }

  function text(v) { return v === null ? "not finite" : Number(v).toPrecision(6); }

  canvas.addEventListener("pointermove", function (event) {
    var rect = canvas.getBoundingClientRect(), px = event.clientX - rect.left, py = event.clientY - rect.top;
    var p = panels.length ? panels[0].p : null;
    if (!p || px < p.l || px > p.l + p.w) { tooltip.hide(); return; }
    var xs = stepRange(), step = Math.round(xs[0] + (px - p.l) / p.w * (xs[1] - xs[0]));
    var lines = [], shown = null;
    series.forEach(function (s) {
      var pt = nearest(s.points, step);
      if (pt) { shown = shown === null ? pt[0] : shown; lines.push(s.name + ": " + text(pt[1])); }
    });
    var d = nearest(difference, shown === null ? step : shown);
    if (d) { lines.push("NPU \u2212 golden: " + text(d[1])); }
    if (shown === null) { tooltip.hide(); return; }
    lines.unshift("step " + shown + (shown === data.first_parting ? " (first parting)" : ""));
    tooltip.show(lines, "", INK, px, py, box.clientWidth);
  });
  canvas.addEventListener("pointerleave", function () { tooltip.hide(); });
  draw();
  parts.watchSize(box, draw);
})();
