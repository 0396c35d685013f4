// One loop: budgets, controls, messages to its agent, charts, iteration timeline, event log,
// errors, checkpoints.

import { api, follow } from "./api.js";
import { barChart, lineChart, timeline } from "./charts.js";
import { badge, batcher, count, dateTime, drawIn, duration, elapsed, h, meter, short, time, usd } from "./dom.js";
import { transcriptView } from "./transcript.js";

const LOG_SIZE = 300;
// hookWhen: where a hook-mode loop differs (one Claude Code session, continued only if paused).
const CONTROLS = [
  { action: "pause", label: "Pause", when: ["running", "rate_limited"] },
  { action: "pause?now=true", label: "Pause now", when: ["running"] },
  { action: "resume", label: "Resume", when: ["paused", "stopped", "failed", "blocked"], hookWhen: ["paused"] },
  { action: "stop", label: "Stop", when: ["pending", "running", "paused", "rate_limited"] },
];

export function mount(root, { id, onStatus, onError }) {
  const header = h("section", { class: "loop-header" });
  const controls = h("div", { class: "controls" });
  const boxes = [0, 1, 2].map(() => h("figure", { class: "chart-box" }));
  const charts = h("section", { class: "charts" }, ...boxes);
  const strip = h("figure", { class: "chart-box timeline" });
  const iterations = h("tbody");
  const log = h("ol", { class: "log", reversed: true });
  const errors = h("tbody");
  const checkpoints = h("tbody");
  const messages = h("ol", { class: "messages" });
  const messageText = h("textarea", { name: "text", rows: 2, required: true, maxlength: 8000, placeholder: "Tell the agent something: it reads it in its next iteration (or takes it as the answer to its question)." });
  const messageForm = h("form", { class: "tell", "data-form": "tell", onsubmit: (event) => { event.preventDefault(); tell(); } },
    messageText, h("button", { type: "submit" }, "Send"));
  const table = (heads, body) => h("table", {}, h("thead", {}, h("tr", {}, ...heads.map((c) => h("th", {}, c)))), body);
  let running = new Set(); // the iterations running, as last listed
  const transcript = transcriptView({ loopId: id, isRunning: (n) => running.has(n), onError });
  root.replaceChildren(
    header,
    controls,
    h("section", { class: "steering" }, h("h2", {}, "Messages"), messageForm, messages),
    charts,
    h("h2", {}, "Iterations"),
    strip,
    h("div", { class: "scroll" }, table(["#", "status", "started", "duration", "tokens", "cost", "summary", "output"], iterations)),
    transcript.element,
    h("div", { class: "columns" },
      h("section", {}, h("h2", {}, "Events"), log),
      h("section", {},
        h("h2", {}, "Errors"), table(["#", "type", "message", "when"], errors),
        h("h2", {}, "Checkpoints"), table(["#", "commit", "when"], checkpoints))),
  );

  let loop = null;

  function showLoop(fresh) {
    loop = fresh;
    document.title = `${loop.name} · ralphctl`;
    const iterationBudget = loop.max_iterations ?? loop.iteration;
    header.replaceChildren(
      h("h1", {}, loop.name, " ", badge(loop.status)),
      h("div", { class: "id" }, loop.id),
      h("dl", { class: "facts" },
        h("dt", {}, "iteration"), h("dd", { "data-fact": "iteration" }, meter(loop.iteration, iterationBudget, `${loop.iteration} / ${iterationBudget}`)),
        h("dt", {}, "cost"), h("dd", {}, meter(loop.cost_usd, loop.max_cost_usd, `${usd(loop.cost_usd)} / ${usd(loop.max_cost_usd)}`)),
        h("dt", {}, "tokens"), h("dd", {}, count(loop.tokens_input + loop.tokens_output)),
        h("dt", {}, "elapsed"), h("dd", {}, elapsed(loop)),
        h("dt", {}, "agent"), h("dd", {}, `${loop.agent} (${loop.mode})`),
        h("dt", {}, "work dir"), h("dd", { class: "path" }, loop.workdir),
        loop.fleet ? [
          h("dt", {}, "worker"), h("dd", { "data-fact": "worker" }, loop.fleet.worker ?? loop.fleet.waiting_for ?? "none holds it"),
          h("dt", {}, "repository"), h("dd", { class: "path" }, `${loop.fleet.repo} @ ${loop.fleet.branch} → ${loop.fleet.loop_branch}`),
        ] : null,
        loop.stop_reason ? [h("dt", {}, "stopped by"), h("dd", {}, loop.stop_reason, loop.stop_detail ? ` — ${loop.stop_detail}` : "")] : null,
        !loop.stop_reason && loop.stop_detail ? [h("dt", {}, "waiting"), h("dd", { "data-fact": "waiting" }, loop.stop_detail)] : null),
      h("details", {}, h("summary", {}, "task"), h("pre", { class: "task" }, loop.task)),
    );
    for (const field of messageForm.elements) field.disabled = loop.status === "completed";
    controls.replaceChildren(
      ...CONTROLS.map(({ action, label, when, hookWhen }) => {
        const allowed = loop.mode === "hook" && hookWhen ? hookWhen : when;
        const disabled = !allowed.includes(loop.status);
        return h("button", { type: "button", "data-action": action, disabled, onclick: () => control(action) }, label);
      }),
    );
  }

  async function tell() {
    const text = messageText.value.trim();
    if (!text) return;
    try {
      await api(`/api/loops/${loop.id}/messages`, { method: "POST", body: { text, sender: "dashboard" } });
      messageText.value = "";
      reload("messages");
    } catch (error) {
      onError(error);
    }
  }

  function showMessages(list) {
    messages.replaceChildren(
      ...list.map((m) =>
        h("li", { "data-message": m.seq, "data-delivered": String(m.delivered) },
          h("time", {}, time(m.at)), " ", h("b", {}, m.sender), " ",
          h("span", { class: "muted" }, m.delivered ? `→ iteration ${m.iteration}` : "pending"), " ",
          h("span", { class: "text" }, m.text))),
    );
  }

  async function control(action) {
    try {
      showLoop(await api(`/api/loops/${loop.id}/${action}`, { method: "POST" }));
    } catch (error) {
      onError(error);
    }
  }

  function showIterations(list) {
    running = new Set(list.filter((it) => it.status === "running").map((it) => it.n));
    iterations.replaceChildren(
      ...[...list].reverse().map((it) =>
        h("tr", { "data-iteration": it.n },
          h("td", {}, String(it.n)),
          h("td", {}, badge(it.status)),
          h("td", {}, time(it.started_at)),
          h("td", {}, it.duration_ms === null ? "—" : duration(it.duration_ms / 1000)),
          h("td", {}, count(it.tokens_input + it.tokens_output)),
          h("td", {}, usd(it.cost_usd)),
          h("td", { class: "summary" }, it.error_message || it.output_summary),
          h("td", {}, h("button", { type: "button", "data-transcript-of": it.n, onclick: () => transcript.show(it.n) }, "transcript")))),
    );
    const done = list.filter((it) => it.status !== "running");
    let total = 0;
    const cumulative = done.map((it) => ({ label: `#${it.n}`, value: (total += it.cost_usd || 0) }));
    const [costs, tokens, cumulativeCost] = boxes;
    drawIn(costs, "Cost per iteration", (width) =>
      barChart(done.map((it) => ({ label: `#${it.n}`, value: it.cost_usd || 0, cls: it.status })), { label: "cost per iteration", width, format: usd }));
    drawIn(tokens, "Tokens per iteration", (width) =>
      barChart(done.map((it) => ({ label: `#${it.n}`, value: it.tokens_input + it.tokens_output, cls: "tokens" })), { label: "tokens per iteration", width, format: count }));
    drawIn(cumulativeCost, "Cumulative cost", (width) =>
      lineChart(cumulative, { label: "cumulative cost", width, format: usd, limit: loop && loop.max_cost_usd }));
    const now = Date.now();
    const spans = list.map((it) => {
      const start = new Date(it.started_at).getTime();
      const end = it.completed_at ? new Date(it.completed_at).getTime() : now;
      return { start, end, cls: it.status, title: `#${it.n} ${it.status} ${duration((end - start) / 1000)}` };
    });
    drawIn(strip, "Iteration timeline", (width) =>
      timeline(spans, { label: "iteration timeline", width, format: (t) => new Date(t).toLocaleTimeString() }));
  }

  const showTable = (body, rows) =>
    body.replaceChildren(...(rows.length ? rows : [h("tr", {}, h("td", { class: "muted", colspan: 4 }, "none"))]));
  const loaders = {
    loop: async () => showLoop(await api(`/api/loops/${id}`)),
    messages: async () => showMessages(await api(`/api/loops/${id}/messages`)),
    iterations: async () => showIterations(await api(`/api/loops/${id}/iterations`)),
    errors: async () =>
      showTable(errors, (await api(`/api/loops/${id}/errors`)).reverse().map((e) =>
        h("tr", {}, h("td", {}, e.iteration ?? "—"), h("td", {}, e.error_type), h("td", { class: "summary" }, e.message), h("td", {}, dateTime(e.created_at))))),
    checkpoints: async () =>
      showTable(checkpoints, (await api(`/api/loops/${id}/checkpoints`)).reverse().map((c) =>
        h("tr", {}, h("td", {}, String(c.iteration)), h("td", {}, h("code", {}, c.commit_sha.slice(0, 10))), h("td", {}, dateTime(c.created_at))))),
  };
  const reload = batcher(async (parts) => {
    try {
      await Promise.all(parts.map((part) => loaders[part]()));
    } catch (error) {
      onError(error);
    }
  });

  function logEvent(event) {
    const details = Object.entries(event.data)
      .filter(([, v]) => v !== null && typeof v !== "object")
      .map(([k, v]) => `${k}=${short(v)}`)
      .join(" ");
    log.prepend(h("li", { "data-type": event.event_type }, h("time", {}, time(event.timestamp)), " ", h("b", {}, event.event_type), " ", details));
    while (log.childElementCount > LOG_SIZE) log.lastElementChild.remove();
    reload("loop");
    if (event.event_type.startsWith("iteration")) reload("iterations");
    if (event.event_type === "message" || event.event_type === "iteration_started") reload("messages");
    if (event.event_type === "error") reload("errors");
    if (event.event_type === "checkpoint_created") reload("checkpoints");
  }

  let stream = null;
  loaders.loop()
    .then(() => {
      for (const part of ["iterations", "messages", "errors", "checkpoints"]) reload(part);
      stream = follow({
        loopId: loop.id,
        since: 0,
        onStatus,
        onSnapshot: ([fresh]) => fresh && showLoop(fresh),
        onEvent: logEvent,
      });
    })
    .catch(onError);

  return () => {
    transcript.stop();
    if (stream) stream.close();
  };
}
