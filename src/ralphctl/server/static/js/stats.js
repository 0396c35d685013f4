// The strip of totals shown above the overview and the metrics page.

import { api } from "./api.js";
import { count, h, usd } from "./dom.js";

export function statsStrip() {
  const element = h("section", { class: "stats", "aria-label": "totals" });
  async function refresh() {
    const s = await api("/api/stats");
    const tile = (label, value, name) =>
      h("div", { class: "tile", "data-stat": name }, h("span", { class: "value" }, value), h("span", { class: "label" }, label));
    element.replaceChildren(
      tile("active", String(s.total_active), "active"),
      tile("running", String(s.running), "running"),
      tile("paused", String(s.paused), "paused"),
      tile("cost", usd(s.total_cost), "cost"),
      tile("iterations", String(s.total_iterations), "iterations"),
      tile("tokens", count(s.total_tokens), "tokens"),
    );
  }
  return { element, refresh };
}
