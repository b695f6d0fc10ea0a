// Draws the dashboard's charts (Chart.js, served from static/vendor) from the data the page
// embeds; clicking a bar or a point opens the filtered list behind it.
(function () {
  const data = JSON.parse(document.getElementById("dashboard-charts").textContent);
  const palette = {ok: "#2f9e6a", empty: "#7aa6d6", error: "#d64545", accepted: "#e0a526", pending_approval: "#9b6bd6"};
  const opener = (links) => (event, elements) => {
    if (elements.length) window.location = links(elements[0]);
  };
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;

  new Chart(document.getElementById("chart-calls"), {
    type: "bar",
    data: {labels: data.calls.labels, datasets: data.calls.series.map((s) => ({
      label: s.label, data: s.data, backgroundColor: palette[s.label] || "#888"}))},
    options: {scales: {x: {stacked: true}, y: {stacked: true, beginAtZero: true}},
              onClick: opener((e) => data.calls.series[e.datasetIndex].link)},
  });
  const kinds = document.getElementById("chart-error-kinds");
  if (kinds) new Chart(kinds, {
    type: "bar",
    data: {labels: data.error_kinds.labels, datasets: [{label: "errors", data: data.error_kinds.data, backgroundColor: "#d64545"}]},
    options: {indexAxis: "y", plugins: {legend: {display: false}}, onClick: opener((e) => data.error_kinds.links[e.index])},
  });
  const latency = document.getElementById("chart-latency");
  if (latency) new Chart(latency, {
    type: "bar",
    data: {labels: data.latency.labels, datasets: [
      {label: "p50", data: data.latency.p50, backgroundColor: "#2b5c8a"},
      {label: "p95", data: data.latency.p95, backgroundColor: "#f5b841"}]},
    options: {scales: {y: {beginAtZero: true, title: {display: true, text: "ms"}}},
      onClick: opener((e) => data.latency.links[e.index])},
  });
  new Chart(document.getElementById("chart-unknown"), {
    type: "bar",
    data: {labels: data.unknown.labels, datasets: [{label: "unknown entries", data: data.unknown.data, backgroundColor: "#e0a526"}]},
    options: {plugins: {legend: {display: false}}, scales: {y: {beginAtZero: true, ticks: {precision: 0}}},
              onClick: opener((e) => data.unknown.links[e.index])},
  });
})();
