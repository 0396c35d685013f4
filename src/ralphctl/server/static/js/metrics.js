// Metrics: cost by hour, average iterations to completion, the most expensive loops.

import { api } from "./api.js";
import { barChart } from "./charts.js";
import { drawIn, h, usd } from "./dom.js";
import { statsStrip } from "./stats.js";

const RANGES = [24, 72, 168];

export function mount(root, { onError }) {
  const stats = statsStrip();
  const completion = h("section", { class: "tile big", "data-metric": "completion" });
  const byHour = h("figure", { class: "chart-box" });
  const perLoop = h("tbody");
  let hours = 24;
  const picker = h("div", { class: "range" });

  function showPicker() {
    picker.replaceChildren(
      ...RANGES.map((r) =>
        h("button", { type: "button", class: r === hours ? "active" : null, onclick: () => { hours = r; load(); } }, r < 48 ? `${r} h` : `${r / 24} days`)),
    );
  }

  async function load() {
    showPicker();
    try {
      const [avg, hourly, loops] = await Promise.all([
        api("/api/metrics/iterations-to-completion"),
        api(`/api/metrics/cost-by-hour?hours=${hours}`),
        api("/api/metrics/cost-per-loop?limit=20"),
        stats.refresh(),
      ]);
      completion.replaceChildren(
        h("span", { class: "value" }, avg.average_iterations === null ? "—" : avg.average_iterations.toFixed(1)),
        h("span", { class: "label" }, `average iterations to completion (${avg.completed_loops} completed loops)`),
      );
      drawIn(byHour, `Cost by hour (UTC), last ${hours} h`, (width) =>
        barChart(fillHours(hourly, hours), { label: "cost by hour", width, format: usd }));
      const top = Math.max(...loops.map((l) => l.cost_usd), 0);
      perLoop.replaceChildren(
        ...loops.map((l) => {
          const bar = h("span", { class: "fill" });
          bar.style.width = `${top ? (100 * l.cost_usd) / top : 0}%`;
          return h("tr", {},
            h("td", {}, h("a", { href: `#/loops/${l.loop_id}` }, l.name)),
            h("td", {}, l.status),
            h("td", {}, String(l.iterations)),
            h("td", {}, h("span", { class: "meter" }, h("span", { class: "track" }, bar), usd(l.cost_usd))));
        }),
      );
    } catch (error) {
      onError(error);
    }
  }

  root.replaceChildren(
    h("h1", {}, "Metrics"),
    stats.element,
    completion,
    h("div", { class: "chart-head" }, h("h2", {}, "Cost by hour"), picker),
    byHour,
    h("h2", {}, "Cost per loop"),
    h("table", {}, h("thead", {}, h("tr", {}, ...["loop", "status", "iterations", "cost"].map((c) => h("th", {}, c)))), perLoop),
  );
  load();
  const timer = setInterval(load, 30000);
  return () => clearInterval(timer);
}

// Every hour of the range, with zero for hours without iterations.
function fillHours(rows, hours) {
  const cost = new Map(rows.map((r) => [r.hour, r]));
  const now = new Date();
  now.setUTCMinutes(0, 0, 0);
  const bars = [];
  for (let i = hours - 1; i >= 0; i--) {
    const hour = new Date(now.getTime() - i * 3600e3).toISOString().replace(".000Z", "Z");
    const row = cost.get(hour);
    bars.push({
      label: hour.slice(5, 13).replace("T", " ") + "h",
      value: row ? row.cost_usd : 0,
      title: `${hour}: ${usd(row ? row.cost_usd : 0)} over ${row ? row.iterations : 0} iterations`,
    });
  }
  return bars;
}
