// Building elements (text always goes in as text, never as HTML) and formatting numbers.

export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  element.append(...children.flat().filter((c) => c !== null && c !== undefined));
  return element;
}

// Money as the CLI shows it (domain/money.py): dollars and cents, an amount under a cent with
// two significant digits ($0.0042), "—" when unknown.
export function usd(value) {
  if (value === null || value === undefined) return "—";
  if (!Number.isFinite(value)) return `$${value}`;
  if (value < 0) return `-${usd(-value)}`;
  if (value === 0 || value >= 0.01) {
    const [whole, cents] = value.toFixed(2).split(".");
    return `$${whole.replace(/\B(?=(\d{3})+$)/g, ",")}.${cents}`;
  }
  if (value < 1e-6) return "<$0.000001";
  const decimals = Math.min(6, 1 - Math.floor(Math.log10(value)));
  const text = value.toFixed(decimals).replace(/0+$/, "");
  return text.split(".")[1].length >= 2 ? `$${text}` : `$${value.toFixed(2)}`;
}

export function count(value) {
  if (value === null || value === undefined) return "—";
  if (value >= 1e6) return `${(value / 1e6).toFixed(1)}M`;
  if (value >= 1e3) return `${(value / 1e3).toFixed(1)}k`;
  return String(value);
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

export const time = (iso) => (iso ? new Date(iso).toLocaleTimeString() : "—");
export const dateTime = (iso) => (iso ? new Date(iso).toLocaleString() : "—");

export const badge = (status) => h("span", { class: `badge status-${status}` }, status);

// A number as short text: floats lose their binary noise (0.38999999999999996 -> 0.39).
export const short = (value) => (typeof value === "number" && !Number.isInteger(value) ? String(+value.toPrecision(6)) : String(value));

// A box whose content is drawn for its width: draw(width) returns the content.
export function drawIn(box, caption, draw) {
  const width = box.clientWidth - 16;
  box.replaceChildren(h("figcaption", {}, caption), draw(width));
}

// A bar showing `value` of `limit`, e.g. cost of budget.
export function meter(value, limit, label) {
  const fraction = limit ? Math.min(1, value / limit) : 0;
  const fill = h("span", { class: "fill" });
  fill.style.width = `${(fraction * 100).toFixed(1)}%`;
  if (fraction >= 0.9) fill.classList.add("high");
  return h("span", { class: "meter", title: label }, h("span", { class: "track" }, fill), label);
}

// Elapsed active time: the stored runtime, plus the time since the last save while running.
export function elapsed(loop) {
  let seconds = loop.runtime_s;
  if (loop.status === "running" && loop.updated_at) {
    seconds += (Date.now() - new Date(loop.updated_at).getTime()) / 1000;
  }
  return duration(seconds);
}

// Calls `fn` at most once per `ms`, with everything asked for since the last call.
export function batcher(fn, ms = 250) {
  const pending = new Set();
  let timer = null;
  return (key) => {
    pending.add(key);
    if (timer) return;
    timer = setTimeout(() => {
      timer = null;
      const keys = [...pending];
      pending.clear();
      fn(keys);
    }, ms);
  };
}
