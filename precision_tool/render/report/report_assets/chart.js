// The report's chart along the network, drawn on a <canvas> by this file alone (written for PrecisionTool,
// no library): a scatter of many points (20,000 draw in a few milliseconds) with axes, a threshold line, a
// legend that hides a run, hover, click, box zoom, pan, reset and PNG export. chart_bars.js adds the error
// histogram. Together they replaced plotly.js, whose 4.8 MB took longer to load than the whole page does now.
(function () {
  "use strict";
  var FONT = "12px system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif";
  var INK = "#1d2430", DIM = "#5d6775", GRID = "#e6e9ee", HIT = 10; // px: how near hover finds a point
  var SUP = { "-": "\u207b", "0": "\u2070", "1": "\u00b9", "2": "\u00b2", "3": "\u00b3", "4": "\u2074",
    "5": "\u2075", "6": "\u2076", "7": "\u2077", "8": "\u2078", "9": "\u2079" };

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function power(k) { return "10" + String(k).split("").map(function (c) { return SUP[c]; }).join(""); }

  // Ticks at 1, 2 or 5 times a power of ten, about `count` of them, labelled with the step's decimals
  function linearTicks(lo, hi, count) {
    var raw = (hi - lo) / Math.max(count, 1), mag = Math.pow(10, Math.floor(Math.log10(raw))), norm = raw / mag;
    var step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
    var decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    var ticks = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
      ticks.push({ at: v, text: (Math.abs(v) < step / 2 ? 0 : v).toFixed(Math.min(decimals, 20)) });
    }
    return ticks;
  }

  // Log axis (lo, hi in decades): a tick per decade as 10ⁿ, or 1-2-5 steps when less than two decades show
  function logTicks(lo, hi, count) {
    var ticks = [], k;
    if (hi - lo >= 2) {
      var stride = Math.max(1, Math.ceil((Math.floor(hi) - Math.ceil(lo) + 1) / Math.max(count, 2)));
      for (k = Math.ceil(lo); k <= hi; k += 1) { if (k % stride === 0) { ticks.push({ at: k, text: power(k) }); } }
      return ticks;
    }
    for (k = Math.floor(lo); k <= Math.ceil(hi); k += 1) {
      [1, 2, 5].forEach(function (m) {
        var at = k + Math.log10(m);
        if (at >= lo && at <= hi) { ticks.push({ at: at, text: m === 1 ? power(k) : m + "\u00d7" + power(k) }); }
      });
    }
    return ticks;
  }

  // A canvas that fills its box at the screen's pixel density; returns its 2D context in CSS pixels
  function fit(canvas, width, height) {
    var ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    var ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.font = FONT;
    return ctx;
  }

  function marker(ctx, symbol, x, y, r) {
    if (symbol === "circle") { ctx.moveTo(x + r, y); ctx.arc(x, y, r, 0, 2 * Math.PI); return; }
    if (symbol === "diamond-open") {
      ctx.moveTo(x, y - r * 1.3); ctx.lineTo(x + r * 1.3, y); ctx.lineTo(x, y + r * 1.3); ctx.lineTo(x - r * 1.3, y);
      ctx.closePath(); return;
    }
    ctx.moveTo(x - r, y - r); ctx.lineTo(x + r, y + r); ctx.moveTo(x + r, y - r); ctx.lineTo(x - r, y + r); // x, x-open
  }

  function paint(ctx, symbol, color) {
    if (symbol === "circle") { ctx.fillStyle = color; ctx.fill(); return; }
    ctx.strokeStyle = color;
    ctx.lineWidth = symbol === "x" ? 2.5 : 1.5; // a filled x is thick, an open one thin
    ctx.stroke();
  }

  function autoRange(values, log, extra) {
    var lo = Infinity, hi = -Infinity;
    values.concat(extra || []).forEach(function (list) {
      for (var i = 0; i < list.length; i += 1) {
        var v = log ? (list[i] > 0 ? Math.log10(list[i]) : NaN) : list[i];
        if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      }
    });
    if (!isFinite(lo)) { return [0, 1]; }
    var pad = (hi - lo) * 0.05 || (log ? 0.5 : Math.abs(hi) * 0.05 || 1);
    return [lo - pad, hi + pad];
  }

  // Redraw when the box changes size (a wider window, a panel shown)
  function watchSize(node, redraw) {
    if (window.ResizeObserver) { new ResizeObserver(redraw).observe(node); }
    else { window.addEventListener("resize", redraw); }
  }

  function Tooltip(parent) {
    this.node = el("div", "chart-hover");
    this.node.hidden = true;
    parent.appendChild(this.node);
  }
  Tooltip.prototype.show = function (lines, name, color, x, y, width) {
    var node = this.node;
    node.textContent = "";
    lines.forEach(function (line) { node.appendChild(el("div", "", line)); });
    if (name) { var tag = el("div", "chart-hover-name", name); tag.style.color = color; node.appendChild(tag); }
    node.style.borderColor = color;
    node.hidden = false;
    var left = x + 12 + node.offsetWidth > width ? x - 12 - node.offsetWidth : x + 12;
    node.style.left = Math.max(0, left) + "px";
    node.style.top = Math.max(0, y - node.offsetHeight / 2) + "px";
  };
  Tooltip.prototype.hide = function () { this.node.hidden = true; };

  // --- the scatter ------------------------------------------------------------------------------
  // traces: [{name, x, y, color, styles: [{symbol, color}], style(i) → index into styles, size, hover(i) →
  // [lines]}]; axes: {xTitle, yTitle, yLog, threshold: {y, text, color} or null}
  function Scatter(container, onClick) {
    var self = this;
    this.container = container;
    this.onClick = onClick;
    this.margin = { l: 64, r: 16, t: 14, b: 46 };
    this.mode = "zoom";
    this.bar = el("div", "chart-bar");
    this.legend = el("div", "chart-legend");
    var tools = el("div", "chart-tools");
    this.buttons = {};
    [["zoom", "drag: zoom to a box"], ["pan", "drag: pan"], ["reset", "reset axes (or double-click the chart)"],
      ["png", "save the chart as a PNG"]].forEach(function (tool) {
      var button = el("button", "chart-tool", tool[0] === "png" ? "save PNG" : tool[0]);
      button.type = "button";
      button.title = tool[1];
      button.addEventListener("click", function () { self.tool(tool[0]); });
      self.buttons[tool[0]] = button;
      tools.appendChild(button);
    });
    this.bar.appendChild(this.legend);
    this.bar.appendChild(tools);
    this.area = el("div", "chart-area");
    this.canvas = el("canvas", "chart-points");
    this.canvas.setAttribute("role", "img");
    this.overlay = el("canvas", "chart-overlay");
    this.area.appendChild(this.canvas);
    this.area.appendChild(this.overlay);
    container.appendChild(this.bar);
    container.appendChild(this.area);
    this.tooltip = new Tooltip(this.area);
    this.tool("zoom");
    this.listen();
    watchSize(this.area, function () { if (self.traces) { self.draw(); } });
  }

  Scatter.prototype.tool = function (name) {
    if (name === "reset") { this.reset(); return; }
    if (name === "png") { this.savePng(); return; }
    this.mode = name;
    this.buttons.zoom.classList.toggle("on", name === "zoom");
    this.buttons.pan.classList.toggle("on", name === "pan");
  };

  Scatter.prototype.setData = function (traces, axes) {
    var self = this;
    this.traces = traces;
    this.axes = axes;
    this.hidden = this.hidden && this.hidden.length === traces.length ? this.hidden : traces.map(function () { return false; });
    // each trace's points by style, so one path per style is stroked or filled: 20,000 points in a few ms
    traces.forEach(function (trace) {
      trace.groups = trace.styles.map(function () { return []; });
      for (var i = 0; i < trace.x.length; i += 1) { trace.groups[trace.style(i)].push(i); }
    });
    this.legend.textContent = "";
    traces.forEach(function (trace, k) {
      var item = el("button", "chart-legend-item");
      item.type = "button";
      var swatch = el("canvas", "chart-swatch");
      var ctx = fit(swatch, 16, 16);
      ctx.beginPath();
      marker(ctx, trace.styles[0].symbol, 8, 8, 4);
      paint(ctx, trace.styles[0].symbol, trace.styles[0].color);
      item.appendChild(swatch);
      item.appendChild(el("span", "", trace.name));
      item.title = "click: hide or show this run";
      item.classList.toggle("off", self.hidden[k]);
      item.addEventListener("click", function () {
        self.hidden[k] = !self.hidden[k];
        item.classList.toggle("off", self.hidden[k]);
        if (self.zoomed) { self.draw(); } else { self.reset(); } // unzoomed axes fit the runs shown
      });
      self.legend.appendChild(item);
    });
    this.canvas.setAttribute("aria-label", axes.yTitle + " along " + axes.xTitle);
    this.reset();
  };

  Scatter.prototype.autoRanges = function () {
    var shown = this.traces.filter(function (_, k) { return !this.hidden[k]; }, this);
    var threshold = this.axes.threshold ? [[this.axes.threshold.y]] : [];
    return { x: autoRange(shown.map(function (t) { return t.x; }), false),
      y: autoRange(shown.map(function (t) { return t.y; }), this.axes.yLog, threshold) };
  };

  Scatter.prototype.reset = function () {
    var auto = this.autoRanges();
    this.xRange = auto.x;
    this.yRange = auto.y;
    this.zoomed = false;
    this.draw();
  };

  // Show [x0, x1] along x (and [y0, y1] in the axis's units when given): what a box zoom does
  Scatter.prototype.setRange = function (x, y) {
    if (x) { this.xRange = [x[0], x[1]]; }
    if (y) { this.yRange = this.axes.yLog ? [Math.log10(y[0]), Math.log10(y[1])] : [y[0], y[1]]; }
    this.zoomed = true;
    this.draw();
  };

  Scatter.prototype.plot = function () {
    var m = this.margin;
    return { l: m.l, t: m.t, w: Math.max(10, this.width - m.l - m.r), h: Math.max(10, this.height - m.t - m.b) };
  };

  Scatter.prototype.px = function (v) {
    var p = this.plot();
    return p.l + (v - this.xRange[0]) / (this.xRange[1] - this.xRange[0]) * p.w;
  };

  Scatter.prototype.py = function (v) {
    var p = this.plot(), at = this.axes.yLog ? (v > 0 ? Math.log10(v) : NaN) : v;
    return p.t + p.h - (at - this.yRange[0]) / (this.yRange[1] - this.yRange[0]) * p.h;
  };

  // Where a point is drawn, in the page's client coordinates (tests move the mouse there)
  Scatter.prototype.pixel = function (trace, i) {
    var box = this.canvas.getBoundingClientRect(), t = this.traces[trace];
    return [box.left + this.px(t.x[i]), box.top + this.py(t.y[i])];
  };

  Scatter.prototype.draw = function () {
    var self = this;
    this.width = this.area.clientWidth;
    this.height = this.area.clientHeight;
    var ctx = fit(this.canvas, this.width, this.height);
    fit(this.overlay, this.width, this.height);
    this.hover = null;
    this.tooltip.hide();
    var p = this.plot(), axes = this.axes;
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, this.width, this.height);
    // grid and tick labels
    var xTicks = linearTicks(this.xRange[0], this.xRange[1], p.w / 90);
    var yTicks = axes.yLog ? logTicks(this.yRange[0], this.yRange[1], p.h / 40)
      : linearTicks(this.yRange[0], this.yRange[1], p.h / 45);
    ctx.strokeStyle = GRID;
    ctx.lineWidth = 1;
    ctx.fillStyle = DIM;
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    xTicks.forEach(function (tick) {
      var x = Math.round(self.px(tick.at)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, p.t); ctx.lineTo(x, p.t + p.h); ctx.stroke();
      ctx.fillText(tick.text, x, p.t + p.h + 5);
    });
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    yTicks.forEach(function (tick) {
      var y = Math.round(p.t + p.h - (tick.at - self.yRange[0]) / (self.yRange[1] - self.yRange[0]) * p.h) + 0.5;
      ctx.beginPath(); ctx.moveTo(p.l, y); ctx.lineTo(p.l + p.w, y); ctx.stroke();
      ctx.fillText(tick.text, p.l - 6, y);
    });
    ctx.fillStyle = INK;
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    ctx.fillText(axes.xTitle, p.l + p.w / 2, this.height - 4);
    ctx.save();
    ctx.translate(14, p.t + p.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = "middle";
    ctx.fillText(axes.yTitle, 0, 0);
    ctx.restore();
    ctx.strokeStyle = "#b8bfca";
    ctx.strokeRect(p.l + 0.5, p.t + 0.5, p.w - 1, p.h - 1);
    // the points, clipped to the plot; `drawn` counts what landed inside it, per trace
    ctx.save();
    ctx.beginPath();
    ctx.rect(p.l, p.t, p.w, p.h);
    ctx.clip();
    this.drawn = this.traces.map(function (trace, k) {
      if (self.hidden[k]) { return 0; }
      var count = 0, r = trace.size / 2;
      trace.styles.forEach(function (style, s) {
        ctx.beginPath();
        trace.groups[s].forEach(function (i) {
          var x = self.px(trace.x[i]), y = self.py(trace.y[i]);
          if (x >= p.l - r && x <= p.l + p.w + r && y >= p.t - r && y <= p.t + p.h + r) {
            marker(ctx, style.symbol, x, y, r);
            count += 1;
          }
        });
        paint(ctx, style.symbol, style.color);
      });
      return count;
    });
    if (axes.threshold) {
      var ty = Math.round(this.py(axes.threshold.y)) + 0.5;
      ctx.setLineDash([6, 4]);
      ctx.strokeStyle = axes.threshold.color;
      ctx.beginPath(); ctx.moveTo(p.l, ty); ctx.lineTo(p.l + p.w, ty); ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = axes.threshold.color;
      ctx.textAlign = "right";
      ctx.textBaseline = "bottom";
      ctx.fillText(axes.threshold.text, p.l + p.w - 4, ty - 2);
    }
    ctx.restore();
  };

  // The nearest shown point within HIT pixels of (x, y) in the canvas, or null
  Scatter.prototype.nearest = function (x, y) {
    var best = null, bestDistance = HIT * HIT, self = this;
    this.traces.forEach(function (trace, k) {
      if (self.hidden[k]) { return; }
      for (var i = 0; i < trace.x.length; i += 1) {
        var dx = self.px(trace.x[i]) - x, dy = self.py(trace.y[i]) - y, d = dx * dx + dy * dy;
        if (d <= bestDistance) { bestDistance = d; best = { trace: k, point: i }; }
      }
    });
    return best;
  };

  Scatter.prototype.showHover = function (x, y) {
    var found = this.nearest(x, y), ctx = this.overlay.getContext("2d");
    this.hover = found;
    ctx.clearRect(0, 0, this.width, this.height);
    if (!found) { this.tooltip.hide(); return; }
    var trace = this.traces[found.trace], px = this.px(trace.x[found.point]), py = this.py(trace.y[found.point]);
    var color = trace.styles[trace.style(found.point)].color;
    ctx.beginPath();
    ctx.arc(px, py, trace.size / 2 + 4, 0, 2 * Math.PI);
    ctx.strokeStyle = color;
    ctx.lineWidth = 2;
    ctx.stroke();
    this.tooltip.show(trace.hover(found.point), trace.name, color, px, py, this.width);
  };

  Scatter.prototype.listen = function () {
    var self = this, drag = null, area = this.overlay;
    function at(event) {
      var box = area.getBoundingClientRect();
      return [event.clientX - box.left, event.clientY - box.top];
    }
    area.addEventListener("pointerdown", function (event) {
      if (event.button !== 0) { return; }
      var xy = at(event);
      drag = { x: xy[0], y: xy[1], xRange: self.xRange.slice(), yRange: self.yRange.slice(),
        pan: self.mode === "pan" || event.shiftKey, moved: false };
      area.setPointerCapture(event.pointerId);
    });
    area.addEventListener("pointermove", function (event) {
      var xy = at(event);
      if (!drag) { self.showHover(xy[0], xy[1]); return; }
      var dx = xy[0] - drag.x, dy = xy[1] - drag.y, p = self.plot();
      drag.moved = drag.moved || Math.abs(dx) > 3 || Math.abs(dy) > 3;
      if (!drag.moved) { return; }
      self.tooltip.hide();
      if (drag.pan) {
        var sx = (drag.xRange[1] - drag.xRange[0]) / p.w, sy = (drag.yRange[1] - drag.yRange[0]) / p.h;
        self.xRange = [drag.xRange[0] - dx * sx, drag.xRange[1] - dx * sx];
        self.yRange = [drag.yRange[0] + dy * sy, drag.yRange[1] + dy * sy];
        self.zoomed = true;
        if (!self.frame) {
          self.frame = window.requestAnimationFrame(function () { self.frame = null; self.draw(); });
        }
        return;
      }
      var box = self.zoomBox(drag, xy), ctx = self.overlay.getContext("2d");
      ctx.clearRect(0, 0, self.width, self.height);
      ctx.fillStyle = "rgba(36, 99, 176, 0.12)";
      ctx.strokeStyle = "#2463b0";
      ctx.lineWidth = 1;
      ctx.fillRect(box.x0, box.y0, box.x1 - box.x0, box.y1 - box.y0);
      ctx.strokeRect(box.x0 + 0.5, box.y0 + 0.5, box.x1 - box.x0, box.y1 - box.y0);
    });
    area.addEventListener("pointerup", function (event) {
      var started = drag;
      drag = null;
      if (!started) { return; }
      var xy = at(event);
      if (!started.moved) {
        var found = self.nearest(xy[0], xy[1]);
        if (found && self.onClick) { self.onClick(found.trace, found.point); }
        return;
      }
      if (started.pan) { return; }
      var box = self.zoomBox(started, xy), p = self.plot();
      var x = function (px) { return self.xRange[0] + (px - p.l) / p.w * (self.xRange[1] - self.xRange[0]); };
      var y = function (py) { return self.yRange[0] + (p.t + p.h - py) / p.h * (self.yRange[1] - self.yRange[0]); };
      self.xRange = [x(box.x0), x(box.x1)];
      self.yRange = [y(box.y1), y(box.y0)];
      self.zoomed = true;
      self.draw();
    });
    area.addEventListener("pointerleave", function () {
      if (!drag) { self.tooltip.hide(); self.overlay.getContext("2d").clearRect(0, 0, self.width, self.height); }
    });
    area.addEventListener("dblclick", function () { self.reset(); });
  };

  // A drag's box within the plot; a flat drag zooms along x only and a narrow one along y only, as plotly did
  Scatter.prototype.zoomBox = function (drag, xy) {
    var p = this.plot(), clampX = function (v) { return Math.min(Math.max(v, p.l), p.l + p.w); };
    var clampY = function (v) { return Math.min(Math.max(v, p.t), p.t + p.h); };
    var box = { x0: clampX(Math.min(drag.x, xy[0])), x1: clampX(Math.max(drag.x, xy[0])),
      y0: clampY(Math.min(drag.y, xy[1])), y1: clampY(Math.max(drag.y, xy[1])) };
    if (box.y1 - box.y0 < 12) { box.y0 = p.t; box.y1 = p.t + p.h; }
    else if (box.x1 - box.x0 < 12) { box.x0 = p.l; box.x1 = p.l + p.w; }
    return box;
  };

  // The chart with its legend as one PNG, downloaded
  Scatter.prototype.savePng = function () {
    var ratio = window.devicePixelRatio || 1, band = 26, out = document.createElement("canvas");
    out.width = this.canvas.width;
    out.height = this.canvas.height + band * ratio;
    var ctx = out.getContext("2d");
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, out.width, out.height);
    ctx.drawImage(this.canvas, 0, band * ratio);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    var x = this.margin.l, self = this;
    this.traces.forEach(function (trace, k) {
      if (self.hidden[k]) { return; }
      ctx.beginPath();
      marker(ctx, trace.styles[0].symbol, x + 6, band / 2, 4);
      paint(ctx, trace.styles[0].symbol, trace.styles[0].color);
      ctx.fillStyle = INK;
      ctx.fillText(trace.name, x + 16, band / 2);
      x += 32 + ctx.measureText(trace.name).width;
    });
    var link = document.createElement("a");
    link.download = "precision-report-chart.png";
    link.href = out.toDataURL("image/png");
    link.click();
  };

  // chart_bars.js (the error histogram) draws with the same parts
  window.PrecisionChart = { Scatter: Scatter, parts: { el: el, fit: fit, linearTicks: linearTicks, watchSize: watchSize,
    Tooltip: Tooltip, INK: INK, DIM: DIM, GRID: GRID } };
})();
