// Small SVG charts drawn by hand: bars, a line, and a timeline. Each is drawn for the pixel
// width it is given (so text keeps its size), and scales with its container afterwards.

const NS = "http://www.w3.org/2000/svg";
const H = 180;
const PAD = { left: 60, right: 12, top: 12, bottom: 28 };
const MIN_WIDTH = 240;

function svg(tag, attrs = {}, ...children) {
  const element = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

function frame(label, width, height = H) {
  return svg("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "chart",
    role: "img",
    "aria-label": label,
    preserveAspectRatio: "xMidYMid meet",
  });
}

function empty(root, width, height = H) {
  root.append(svg("text", { x: width / 2, y: height / 2, class: "empty", "text-anchor": "middle" }, "no data yet"));
  return root;
}

function axes(root, W, max, format, firstLabel, lastLabel) {
  const bottom = H - PAD.bottom;
  root.append(
    svg("line", { x1: PAD.left, y1: bottom, x2: W - PAD.right, y2: bottom, class: "axis" }),
    svg("line", { x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: bottom, class: "axis" }),
    svg("text", { x: PAD.left - 6, y: PAD.top + 4, class: "tick", "text-anchor": "end" }, format(max)),
    svg("text", { x: PAD.left - 6, y: bottom, class: "tick", "text-anchor": "end" }, format(0)),
    svg("text", { x: PAD.left, y: H - 8, class: "tick" }, firstLabel),
    svg("text", { x: W - PAD.right, y: H - 8, class: "tick", "text-anchor": "end" }, lastLabel),
  );
}

const niceMax = (values) => {
  const max = Math.max(0, ...values);
  if (max === 0) return 1;
  const step = 10 ** Math.floor(Math.log10(max));
  return Math.ceil(max / step) * step;
};

// bars: [{label, value, title, cls}]
export function barChart(bars, { label, width, format = String }) {
  const W = Math.max(MIN_WIDTH, width);
  const root = frame(label, W);
  if (!bars.length) return empty(root, W);
  const max = niceMax(bars.map((b) => b.value));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / bars.length;
  const barWidth = Math.max(1, Math.min(40, slot * 0.8));
  bars.forEach((bar, i) => {
    const height = (bar.value / max) * plotH;
    const rect = svg("rect", {
      x: PAD.left + i * slot + (slot - barWidth) / 2,
      y: H - PAD.bottom - height,
      width: barWidth,
      height: Math.max(height, bar.value > 0 ? 1 : 0),
      class: `bar ${bar.cls || ""}`,
    });
    rect.append(svg("title", {}, bar.title || `${bar.label}: ${format(bar.value)}`));
    root.append(rect);
  });
  axes(root, W, max, format, bars[0].label, bars[bars.length - 1].label);
  return root;
}

// points: [{label, value}], with an optional dashed limit line (e.g. the budget).
export function lineChart(points, { label, width, format = String, limit = null }) {
  const W = Math.max(MIN_WIDTH, width);
  const root = frame(label, W);
  if (!points.length) return empty(root, W);
  const values = points.map((p) => p.value);
  const showLimit = limit !== null && limit <= Math.max(...values) * 4;
  const max = niceMax(showLimit ? [...values, limit] : values);
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const x = (i) => PAD.left + (points.length === 1 ? plotW / 2 : (i / (points.length - 1)) * plotW);
  const y = (v) => H - PAD.bottom - (v / max) * plotH;
  const path = points.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(p.value).toFixed(1)}`);
  const area = `${path.join(" ")} L${x(points.length - 1).toFixed(1)},${y(0)} L${x(0).toFixed(1)},${y(0)} Z`;
  root.append(svg("path", { d: area, class: "area" }), svg("path", { d: path.join(" "), class: "line" }));
  points.forEach((p, i) => {
    const dot = svg("circle", { cx: x(i), cy: y(p.value), r: 3, class: "dot" });
    dot.append(svg("title", {}, `${p.label}: ${format(p.value)}`));
    root.append(dot);
  });
  if (showLimit) {
    root.append(
      svg("line", { x1: PAD.left, y1: y(limit), x2: W - PAD.right, y2: y(limit), class: "limit" }),
      svg("text", { x: W - PAD.right, y: y(limit) - 4, class: "tick", "text-anchor": "end" }, `budget ${format(limit)}`),
    );
  }
  axes(root, W, max, format, points[0].label, points[points.length - 1].label);
  return root;
}

// spans: [{label, start, end, cls, title}] with times in ms; one row, on a time axis.
export function timeline(spans, { label, width, format }) {
  const W = Math.max(MIN_WIDTH, width);
  const height = 64;
  const root = frame(label, W, height);
  if (!spans.length) return empty(root, W, height);
  const start = Math.min(...spans.map((s) => s.start));
  const end = Math.max(...spans.map((s) => s.end), start + 1);
  const plotW = W - 24;
  const x = (t) => 12 + ((t - start) / (end - start)) * plotW;
  for (const span of spans) {
    const rect = svg("rect", {
      x: x(span.start),
      y: 10,
      width: Math.max(2, x(span.end) - x(span.start)),
      height: 28,
      rx: 2,
      class: `span ${span.cls}`,
    });
    rect.append(svg("title", {}, span.title));
    root.append(rect);
  }
  root.append(
    svg("text", { x: 12, y: height - 8, class: "tick" }, format(start)),
    svg("text", { x: W - 12, y: height - 8, class: "tick", "text-anchor": "end" }, format(end)),
  );
  return root;
}
