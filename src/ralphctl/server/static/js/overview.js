// The loops overview: one row per loop, updated live from the event stream.

import { api, follow } from "./api.js";
import { badge, batcher, elapsed, h, meter, usd } from "./dom.js";
import { statsStrip } from "./stats.js";

const MANY = 10;

export function mount(root, { onStatus, onError }) {
  const stats = statsStrip();
  const body = h("tbody");
  const table = h(
    "table",
    { class: "loops" },
    h("thead", {}, h("tr", {}, ...["loop", "status", "iteration", "cost / budget", "elapsed", "agent", "work dir"].map((c) => h("th", {}, c)))),
    body,
  );
  const empty = h("p", { class: "muted" }, "No loops yet. Start one with ", h("code", {}, "ralphctl loops start"), " or POST /api/loops.");
  root.replaceChildren(h("h1", {}, "Loops"), stats.element, table, empty);

  const loops = new Map();

  function row(loop) {
    const budget = loop.max_iterations ? `${loop.iteration} / ${loop.max_iterations}` : String(loop.iteration);
    return h(
      "tr",
      { "data-loop": loop.id, "data-status": loop.status },
      h("td", {}, h("a", { href: `#/loops/${loop.id}` }, loop.name), h("div", { class: "id" }, loop.id)),
      h("td", {}, badge(loop.status)),
      h("td", { class: "iteration" }, budget),
      h("td", {}, meter(loop.cost_usd, loop.max_cost_usd, `${usd(loop.cost_usd)} / ${usd(loop.max_cost_usd)}`)),
      h("td", { class: "elapsed" }, elapsed(loop)),
      h("td", {}, loop.agent),
      loop.fleet ? fleetCell(loop.fleet) : h("td", { class: "path", title: loop.workdir }, loop.workdir),
    );
  }

  // A fleet loop: the worker holding it (or why none does yet), and its repository and base branch.
  function fleetCell(fleet) {
    const where = `${fleet.repo} @ ${fleet.branch}`;
    const who = fleet.worker ?? fleet.waiting_for ?? "no worker";
    return h("td", { class: "path", title: where, "data-worker": fleet.worker ?? "" }, `${who} · ${where}`);
  }

  function render() {
    const sorted = [...loops.values()].sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id));
    body.replaceChildren(...sorted.map(row));
    empty.hidden = sorted.length > 0;
  }

  // The loops that had events, re-read; when many did, one call reads them all.
  const refresh = batcher(async (ids) => {
    try {
      const fresh = ids.length > MANY ? await api("/api/loops") : await Promise.all(ids.map((id) => api(`/api/loops/${id}`)));
      for (const loop of fresh) loops.set(loop.id, loop);
      render();
      await stats.refresh();
    } catch (error) {
      onError(error);
    }
  });

  const stream = follow({
    onStatus,
    onSnapshot(list) {
      loops.clear();
      for (const loop of list) loops.set(loop.id, loop);
      render();
      stats.refresh().catch(onError);
    },
    onEvent: (event) => refresh(event.loop_id),
  });
  const ticker = setInterval(() => {
    for (const tr of body.querySelectorAll('tr[data-status="running"]')) {
      tr.querySelector(".elapsed").textContent = elapsed(loops.get(tr.dataset.loop));
    }
  }, 1000);

  return () => {
    stream.close();
    clearInterval(ticker);
  };
}
