// One iteration's transcript: what the agent printed, as text or raw. Shown with textContent
// only (an agent's output is never HTML), and at most LIMIT characters of it: the rest is a
// `ralphctl logs` away, so a 100 MB transcript never lands in the page, even while followed.

import { ApiError, token } from "./api.js";
import { h } from "./dom.js";

const LIMIT = 1_000_000;
const FOLLOW_MS = 1_000;

// The first LIMIT characters of iteration n's transcript, and whether there was more.
async function fetchTranscript(loopId, n, format) {
  const response = await fetch(`/api/loops/${loopId}/iterations/${n}/transcript?format=${format}`, {
    headers: { Authorization: `Bearer ${token()}` },
  });
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    throw new ApiError(response.status, (data && data.detail) || response.statusText);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: text + decoder.decode(), more: false };
    text += decoder.decode(value, { stream: true });
    if (text.length > LIMIT) {
      await reader.cancel();
      return { text: text.slice(0, LIMIT), more: true };
    }
  }
}

// A section that shows the transcript of the iteration it is asked for. While that iteration
// runs (isRunning(n), from the iterations table the page keeps live) the view follows it: it
// reads the transcript again every FOLLOW_MS, and once more after the iteration ended, so its
// closing lines are shown too. At most one read is under way at a time.
export function transcriptView({ loopId, isRunning, onError }) {
  const title = h("h2", {}, "Transcript");
  const note = h("p", { class: "muted" }, "Choose an iteration above to see what the agent printed.");
  const text = h("pre", { class: "transcript", "data-transcript": "" });
  let shown = null;
  let timer = null;
  const formats = ["text", "raw"].map((format) =>
    h("button", { type: "button", "data-format": format, onclick: () => shown && show(shown.n, format) }, format));
  const element = h("section", { class: "transcript-view" }, title, h("div", { class: "controls" }, ...formats), note, text);

  function stop() {
    clearTimeout(timer);
    timer = null;
    shown = null;
  }

  async function read(current, first) {
    const running = isRunning(current.n);
    try {
      const { text: body, more } = await fetchTranscript(loopId, current.n, current.format);
      if (shown !== current) return; // another iteration or format was chosen meanwhile
      const atBottom = text.scrollTop + text.clientHeight >= text.scrollHeight - 4;
      text.textContent = body;
      if (running && atBottom && !first) text.scrollTop = text.scrollHeight;
      note.textContent = more
        ? `Only the first ${LIMIT.toLocaleString()} characters are shown: ralphctl logs ${loopId} --iteration ${current.n} has all of it.`
        : running ? "following: the iteration is running…" : body ? "" : "No output was recorded for this iteration.";
      if (running && !more) timer = setTimeout(() => read(current, false), FOLLOW_MS);
    } catch (error) {
      if (shown !== current) return;
      note.textContent = "";
      onError(error);
    }
  }

  function show(n, format = "text") {
    stop();
    shown = { n, format };
    title.textContent = `Transcript of iteration ${n} (${format})`;
    for (const button of formats) button.disabled = button.dataset.format === format;
    note.textContent = "loading…";
    return read(shown, true);
  }

  return { element, show, stop };
}
