// The token, REST calls and the live event stream. The token arrives once in the URL
// fragment (#token=…, never sent to the server), is kept in sessionStorage (this tab only,
// gone when it closes) and is sent as a bearer header; the WebSocket takes it as ?token=.

const KEY = "ralphctl.token";

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

export function takeTokenFromFragment() {
  const match = location.hash.match(/^#token=([^&]+)/);
  if (!match) return;
  sessionStorage.setItem(KEY, decodeURIComponent(match[1]));
  history.replaceState(null, "", location.pathname + location.search + "#/");
}

export const token = () => sessionStorage.getItem(KEY);
export const setToken = (value) => sessionStorage.setItem(KEY, value.trim());
export const forgetToken = () => sessionStorage.removeItem(KEY);

export async function api(path, { method = "GET", body } = {}) {
  const headers = { Authorization: `Bearer ${token()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    throw new ApiError(response.status, (data && data.detail) || response.statusText);
  }
  return data;
}

// Follows /ws/events and reconnects with ?since=<last seq seen>, so that nothing is missed
// or seen twice. onSnapshot(loops) comes first on every connection, then onEvent(event).
export function follow({ loopId = null, since = null, onSnapshot, onEvent, onStatus }) {
  let socket = null;
  let last = since;
  let closed = false;
  let delay = 500;

  function connect() {
    const query = new URLSearchParams({ token: token() });
    if (last !== null) query.set("since", String(last));
    if (loopId) query.set("loop_id", loopId);
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/events?${query}`);
    socket.onopen = () => {
      delay = 500;
      onStatus("live");
    };
    socket.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (event.event_type === "snapshot") {
        if (last === null) last = event.data.last_seq;
        onSnapshot(event.data.loops);
        return;
      }
      last = event.seq;
      onEvent(event);
    };
    socket.onclose = () => {
      if (closed) return;
      onStatus("reconnecting");
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 5000);
    };
  }

  connect();
  return {
    close() {
      closed = true;
      socket.close();
    },
  };
}
