// The report's "own error" chart: every op replayed on its own NPU inputs (`replay --all`, `ac -c --precheck`),
// its ErrorRatio along execution order, one series per verdict. Drawn with chart.js's Scatter after
// report.js has unpacked the page's JSON (window.precisionReport); clicking a point opens the op's panel.
(function () {
  "use strict";
  var report = window.precisionReport, container = document.getElementById("ranking-chart");
  if (!report || !container || !report.data.ranking) { return; }
  var ranking = report.data.ranking;
  var COLORS = { kernel: "#c0392b", precision: "#e67e22", inherited: "#2463b0", ok: "#16a085" };
  var order = ["kernel", "precision", "inherited", "ok"];
  var byVerdict = {};
  ranking.verdict.forEach(function (v, i) {
    var name = ranking.verdicts[v];
    (byVerdict[name] = byVerdict[name] || []).push(i);
  });
  var names = order.filter(function (n) { return byVerdict[n]; })
    .concat(Object.keys(byVerdict).filter(function (n) { return order.indexOf(n) < 0; }));
  var traces = names.map(function (name) {
    var rows = byVerdict[name];
    return {
      name: name + " (" + rows.length + ")", rows: rows,
      x: rows.map(function (i) { return ranking.x[i]; }), y: rows.map(function (i) { return ranking.ratio[i]; }),
      size: rows.length > 3000 ? 5 : 8,
      styles: [{ symbol: "circle", color: COLORS[name] || "#7f8c8d" }],
      style: function () { return 0; },
      hover: function (k) { var i = rows[k]; return [ranking.op[i], name, ranking.text[i]]; }
    };
  });

  // the op's point in the comparison's runs (the first run that has it), for its panel
  function openOp(id) {
    var runs = report.data.runs, ops = report.data.ops;
    for (var r = 0; r < runs.length; r += 1) {
      for (var i = 0; i < runs[r].op.length; i += 1) {
        var op = ops[runs[r].op[i]];
        if (op && op.id === id) {
          report.openPanel(runs[r].number, i);
          document.getElementById("op-panel").scrollIntoView();
          return;
        }
      }
    }
  }

  var chart = new window.PrecisionChart.Scatter(container, function (trace, k) {
    openOp(traces[trace].x[k]);
  });
  chart.setData(traces, { xTitle: "execution order (op id)", yTitle: "own error ratio (log)", yLog: true,
    threshold: { y: 1, text: "as its dtype does", color: "#7f8c8d" } });
  report.rankingChart = chart;
})();
