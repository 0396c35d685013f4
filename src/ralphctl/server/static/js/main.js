// The router: #/ (loops), #/loops/<id>, #/metrics. Asks for the token when it has none.

import { ApiError, forgetToken, setToken, takeTokenFromFragment, token } from "./api.js";
import { h } from "./dom.js";
import * as loop from "./loop.js";
import * as metrics from "./metrics.js";
import * as overview from "./overview.js";

const view = document.getElementById("view");
const notice = document.getElementById("notice");
const connection = document.getElementById("connection");
let unmount = () => {};

function onStatus(state) {
  connection.dataset.state = state;
  connection.textContent = state;
}

function onError(error) {
  if (error instanceof ApiError && error.status === 401) {
    forgetToken();
    route();
    return;
  }
  notice.textContent = error.message;
  notice.hidden = false;
  setTimeout(() => (notice.hidden = true), 6000);
}

function askForToken() {
  const input = h("input", { type: "password", name: "token", autocomplete: "off", placeholder: "token", required: true });
  const form = h(
    "form",
    { class: "login", onsubmit: (e) => { e.preventDefault(); setToken(input.value); route(); } },
    h("h1", {}, "Token needed"),
    h("p", {}, "Open the URL that ", h("code", {}, "ralphctl serve"), " printed, or paste its token here."),
    input,
    h("button", { type: "submit" }, "Open the dashboard"),
  );
  view.replaceChildren(form);
  onStatus("offline");
}

function route() {
  unmount();
  unmount = () => {};
  if (!token()) return askForToken();
  const path = location.hash.replace(/^#/, "") || "/";
  const loopMatch = path.match(/^\/loops\/([^/]+)$/);
  const page = loopMatch ? "loop" : path === "/metrics" ? "metrics" : "overview";
  for (const link of document.querySelectorAll("[data-nav]")) {
    link.classList.toggle("active", link.dataset.nav === page);
  }
  document.title = "ralphctl";
  onStatus(page === "metrics" ? "polling" : "connecting");
  const context = { onStatus, onError };
  if (page === "loop") unmount = loop.mount(view, { ...context, id: decodeURIComponent(loopMatch[1]) });
  else if (page === "metrics") unmount = metrics.mount(view, context);
  else unmount = overview.mount(view, context);
}

takeTokenFromFragment();
window.addEventListener("hashchange", route);
route();
