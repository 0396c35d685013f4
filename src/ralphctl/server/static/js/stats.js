// The strip of totals shown above the overview and the metrics page.

import { api } from "./api.js";
import { count, h, usd } from "./dom.js";

export function statsStrip() {
  const element = h("section", { class: "stats", "aria-label": "totals" });
  async function refresh() {
    const { active, all_time: all } = await api("/api/stats");
    const tile = (label, value, name, title) =>
      h("div", { class: "tile", "data-stat": name, title }, h("span", { class: "value" }, value), h("span", { class: "label" }, label));
    element.replaceChildren(
      tile("active", String(active.loops), "active", "pending, running, paused or rate limited"),
      tile("running", String(active.running), "running"),
      tile("paused", String(active.paused), "paused"),
      tile("cost of active", usd(active.cost_usd), "active-cost", "what the active loops have spent so far"),
      tile("cost, all time", usd(all.cost_usd), "cost", "every loop, ended or not"),
      tile("iterations, all time", String(all.iterations), "iterations", "every loop, ended or not"),
      tile("tokens, all time", count(all.tokens), "tokens", "every loop, ended or not"),
    );
  }
  return { element, refresh };
}
