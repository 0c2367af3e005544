// The error histogram of an op panel: a bar chart on a <canvas>, with the parts of chart.js (loaded first,
// in the same <script> element). Written for PrecisionTool.
(function () {
  "use strict";
  var parts = window.PrecisionChart.parts, el = parts.el, fit = parts.fit, linearTicks = parts.linearTicks;
  var Tooltip = parts.Tooltip, watchSize = parts.watchSize, INK = parts.INK, DIM = parts.DIM, GRID = parts.GRID;

  // One bar per label (counts[k] between labels[k] and labels[k + 1]); hover says the bin and its count
  function Bars(container, labels, counts, titles) {
    var self = this;
    this.container = container;
    this.labels = labels;
    this.counts = counts;
    this.titles = titles;
    this.canvas = el("canvas", "chart-points");
    this.canvas.setAttribute("role", "img");
    this.canvas.setAttribute("aria-label", titles.y + " per " + titles.x);
    container.appendChild(this.canvas);
    this.tooltip = new Tooltip(container);
    this.draw();
    watchSize(container, function () { self.draw(); });
    this.canvas.addEventListener("pointermove", function (event) {
      var box = self.canvas.getBoundingClientRect(), x = event.clientX - box.left, y = event.clientY - box.top;
      var k = Math.floor((x - self.plot.l) / self.plot.w * counts.length);
      if (k < 0 || k >= counts.length || y < self.plot.t || y > self.plot.t + self.plot.h) { self.tooltip.hide(); return; }
      self.tooltip.show([labels[k] + ": " + counts[k] + " elements"], "", "#2463b0", x, y, self.width);
    });
    this.canvas.addEventListener("pointerleave", function () { self.tooltip.hide(); });
  }

  Bars.prototype.draw = function () {
    this.width = this.container.clientWidth;
    this.height = this.container.clientHeight;
    var ctx = fit(this.canvas, this.width, this.height), counts = this.counts, labels = this.labels;
    var p = this.plot = { l: 56, t: 8, w: Math.max(10, this.width - 64), h: Math.max(10, this.height - 96) };
    var top = Math.max(1, Math.max.apply(null, counts.concat([0])));
    var ticks = linearTicks(0, top * 1.05, p.h / 40).filter(function (t) { return Number(t.text) % 1 === 0; });
    var y = function (v) { return p.t + p.h - v / (top * 1.05) * p.h; };
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, this.width, this.height);
    ctx.strokeStyle = GRID;
    ctx.fillStyle = DIM;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ticks.forEach(function (tick) {
      var at = Math.round(y(tick.at)) + 0.5;
      ctx.beginPath(); ctx.moveTo(p.l, at); ctx.lineTo(p.l + p.w, at); ctx.stroke();
      ctx.fillText(tick.text, p.l - 6, at);
    });
    var width = p.w / Math.max(counts.length, 1);
    ctx.fillStyle = "#2463b0";
    counts.forEach(function (count, k) { ctx.fillRect(p.l + k * width + 1, y(count), Math.max(1, width - 2), p.t + p.h - y(count)); });
    ctx.fillStyle = DIM;
    counts.forEach(function (_, k) {
      ctx.save();
      ctx.translate(p.l + (k + 0.5) * width, p.t + p.h + 6);
      ctx.rotate(-Math.PI / 4);
      ctx.textAlign = "right";
      ctx.fillText(labels[k], 0, 0);
      ctx.restore();
    });
    ctx.fillStyle = INK;
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    ctx.fillText(this.titles.x, p.l + p.w / 2, this.height - 2);
    ctx.save();
    ctx.translate(12, p.t + p.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText(this.titles.y, 0, 0);
    ctx.restore();
  };

  window.PrecisionChart.Bars = Bars;
})();
