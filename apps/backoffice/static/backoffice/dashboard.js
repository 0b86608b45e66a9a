// The dashboard's two charts (Apache ECharts, served locally). Data: the json_script "bo-chart-data".
(function () {
  var el = document.getElementById("bo-chart-data");
  if (!el || !window.echarts) { return; }
  var data = JSON.parse(el.textContent);
  var revenue = echarts.init(document.getElementById("bo-revenue-chart"));
  revenue.setOption({
    tooltip: {trigger: "axis"},
    // ECharts 6 puts the legend at the bottom by default, over the axis labels: keep it on top.
    legend: {data: ["销售额（元）", "支付订单"], top: 0},
    grid: {left: 60, right: 50, top: 56, bottom: 30},
    xAxis: {type: "category", data: data.days},
    yAxis: [{type: "value", name: "元"}, {type: "value", name: "单"}],
    series: [
      {name: "销售额（元）", type: "line", smooth: true, areaStyle: {opacity: 0.15}, data: data.revenue},
      {name: "支付订单", type: "line", yAxisIndex: 1, data: data.orders}
    ]
  });
  var slots = echarts.init(document.getElementById("bo-slot-chart"));
  slots.setOption({
    tooltip: {trigger: "axis"},
    legend: {data: ["未来7天", "近30天"], top: 0},
    grid: {left: 50, right: 20, top: 56, bottom: 30},
    xAxis: {type: "category", data: data.teachers},
    yAxis: {type: "value", max: 100, name: "%"},
    series: [
      {name: "未来7天", type: "bar", data: data.slots_next},
      {name: "近30天", type: "bar", data: data.slots_past}
    ]
  });
  window.addEventListener("resize", function () { revenue.resize(); slots.resize(); });
})();
