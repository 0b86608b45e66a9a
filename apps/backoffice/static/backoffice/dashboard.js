// The dashboard's charts (Apache ECharts, served locally). Data: the json_script "bo-chart-data";
// "revenue" is there only for staff who may see money (the line is then orders only).
// Sizing: a chart initialised before the theme's CSS grid has laid its box out would keep
// ECharts' 100 px default; each chart is resized after layout (load, the next frames), whenever
// its box changes size (ResizeObserver: sidebar toggles, grid reflow) and on window resize.
(function () {
  var el = document.getElementById("bo-chart-data");
  if (!el || !window.echarts) { return; }
  var data = JSON.parse(el.textContent);
  var charts = [];
  function make(id, option) {
    var box = document.getElementById(id);
    if (!box) { return; }
    var chart = echarts.init(box, null, {width: box.clientWidth || undefined, height: box.clientHeight || undefined});
    chart.setOption(option);
    charts.push(chart);
    if (window.ResizeObserver) {
      new ResizeObserver(function () { chart.resize(); }).observe(box);
    }
  }
  function resizeAll() { charts.forEach(function (chart) { chart.resize(); }); }
  var money = Object.prototype.hasOwnProperty.call(data, "revenue");
  var series = [], legend = [], axes = [];
  if (money) {
    legend.push("销售额（元）");
    axes.push({type: "value", name: "元"});
    series.push({name: "销售额（元）", type: "line", smooth: true, areaStyle: {opacity: 0.15}, data: data.revenue});
  }
  legend.push("支付订单");
  axes.push({type: "value", name: "单", minInterval: 1});
  series.push({name: "支付订单", type: "line", yAxisIndex: money ? 1 : 0, data: data.orders});
  make("bo-revenue-chart", {
    tooltip: {trigger: "axis"},
    // ECharts 6 puts the legend at the bottom by default, over the axis labels: keep it on top.
    legend: {data: legend, top: 0},
    grid: {left: 60, right: 50, top: 56, bottom: 30},
    xAxis: {type: "category", data: data.days},
    yAxis: axes,
    series: series
  });
  make("bo-slot-chart", {
    tooltip: {trigger: "axis"},
    legend: {data: ["未来7天", "近30天"], top: 0},
    grid: {left: 50, right: 20, top: 56, bottom: 30},
    xAxis: {type: "category", data: data.teachers},
    yAxis: {type: "value", max: 100, name: "%"},
    series: [
      {name: "未来7天", type: "bar", data: data.occupancy_next},
      {name: "近30天", type: "bar", data: data.occupancy_past}
    ]
  });
  window.addEventListener("resize", resizeAll);
  window.addEventListener("load", resizeAll);
  if (window.requestAnimationFrame) {
    requestAnimationFrame(function () { requestAnimationFrame(resizeAll); });
  }
  setTimeout(resizeAll, 300);  // fonts and the theme's late layout
})();
