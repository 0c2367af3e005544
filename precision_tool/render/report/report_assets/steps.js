// The step × op-position heat map of a `vc --step all` report (docs/steps.md): one row per step, one
// column per op along the network, coloured by the op's output cosine; hover names the step, op and value.
// Its data in <script id="steps-data">; drawn on a <canvas> with chart.js's parts (loaded before it).
(function () {
  "use strict";
  var holder = document.getElementById("steps-heatmap");
  var source = document.getElementById("steps-data");
  if (!holder || !source) { return; }
  var data = JSON.parse(source.textContent);
  var ROW = 22, LEFT = 96, TOP = 6, BOTTOM = 28;

  // green at 1, pale near the threshold; red at or below it, darker the lower; grey: not compared
  function colour(value) {
    if (value === null || value === undefined) { return "#d9dce1"; }
    if (value > data.threshold) {
      var t = Math.max(0, Math.min(1, (value - data.threshold) / Math.max(1e-9, 1 - data.threshold)));
      return "rgb(" + Math.round(200 - 170 * t) + "," + Math.round(230 - 80 * t) + "," + Math.round(200 - 150 * t) + ")";
    }
    var u = Math.max(0, Math.min(1, (data.threshold - value) / (data.threshold + 1)));
    return "rgb(" + Math.round(240 - 90 * u) + "," + Math.round(120 - 110 * u) + "," + Math.round(110 - 100 * u) + ")";
  }

  var canvas = document.createElement("canvas");
  canvas.className = "steps-heatmap";
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", "output cosine of " + data.ops.length + " ops at steps " + data.steps.join(", ")
    + (data.first_step === null ? "" : "; step " + data.first_step + " diverges first"));
  var tip = document.createElement("div");
  tip.className = "steps-tip";
  tip.style.cssText = "position:absolute;display:none;background:#fff;border:1px solid #999;padding:2px 6px;"
    + "font:12px system-ui,sans-serif;pointer-events:none;white-space:nowrap";
  holder.style.position = "relative";
  holder.appendChild(canvas);
  holder.appendChild(tip);
  var plot = { w: 1, cell: 1 };

  function draw() {
    var width = Math.max(200, holder.clientWidth || 800), height = TOP + ROW * data.rows.length + BOTTOM;
    var ctx = window.PrecisionChart.parts.fit(canvas, width, height);  // chart.js's: screen density, font
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, width, height);
    plot.w = width - LEFT - 8;
    plot.cell = plot.w / Math.max(1, data.ops.length);
    data.cosines.forEach(function (row, r) {
      var y = TOP + r * ROW;
      ctx.fillStyle = data.steps[r] === data.first_step ? "#b00020" : "#1d2430";
      ctx.textBaseline = "middle";
      ctx.fillText(data.rows[r], 4, y + ROW / 2);
      row.forEach(function (value, k) {
        ctx.fillStyle = colour(value);
        ctx.fillRect(LEFT + k * plot.cell, y + 1, Math.max(1, plot.cell - (plot.cell > 3 ? 1 : 0)), ROW - 2);
      });
    });
    var first = data.first_step === null ? -1 : data.steps.indexOf(data.first_step);
    var column = data.first_column === null ? -1 : data.first_column;
    if (first >= 0 && column >= 0) {  // the first divergent op of the first diverging step
      ctx.strokeStyle = "#1d2430";
      ctx.lineWidth = 2;
      ctx.strokeRect(LEFT + column * plot.cell, TOP + first * ROW + 1, Math.max(2, plot.cell), ROW - 2);
    }
    ctx.fillStyle = "#5d6775";
    ctx.textBaseline = "top";
    ctx.fillText("op position along the network (" + data.ops.length + " columns)", LEFT, TOP + data.rows.length * ROW + 8);
  }

  canvas.addEventListener("pointermove", function (event) {
    var box = canvas.getBoundingClientRect(), x = event.clientX - box.left, y = event.clientY - box.top;
    var k = Math.floor((x - LEFT) / plot.cell), r = Math.floor((y - TOP) / ROW);
    if (k < 0 || k >= data.ops.length || r < 0 || r >= data.rows.length) { tip.style.display = "none"; return; }
    var value = data.cosines[r][k];
    tip.textContent = data.rows[r] + " \u00b7 " + data.ops[k] + " \u00b7 "
      + (value === null ? "not compared" : "cosine " + value.toFixed(6));
    tip.style.left = Math.min(x + 12, box.width - 260) + "px";
    tip.style.top = (y + 14) + "px";
    tip.style.display = "block";
  });
  canvas.addEventListener("pointerleave", function () { tip.style.display = "none"; });
  draw();
  window.PrecisionChart.parts.watchSize(holder, draw);
}());
