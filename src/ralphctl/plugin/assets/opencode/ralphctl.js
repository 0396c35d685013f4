// ralphctl's OpenCode plugin: keeps a session going while its Ralph loop says so.
// Written by `ralphctl plugin install --agent opencode`, removed by `ralphctl plugin uninstall`.
//
// OpenCode has no Stop hook. At every `session.idle` this plugin asks ralphctl's hook (the
// command below, no shell) for the decision, with one JSON object on stdin: hook_event_name,
// session_id, cwd, last_assistant_message, status and stop_hook_active (the idle follows this
// plugin's own prompt). When the answer is {"decision": "block", "reason": R} it prompts the
// same session with R. It fails open: any error, timeout or other answer does nothing. The
// loop's bound is the hook's (max_iterations); MAX_CONTINUATIONS prompts in a row without a
// user message in between is the plugin's own, should the hook misbehave.
import { spawn } from "node:child_process"

const HOOK = {{hook_argv}}
const TIMEOUT_MS = {{timeout_ms}}
const MAX_CONTINUATIONS = 1000
const MAX_OUTPUT = 1024 * 1024
// Shared by every copy of this plugin in the process: an idle is handled once.
const BUSY = (globalThis[Symbol.for("ralphctl.opencode.busy")] ??= new Set())

export const RalphctlPlugin = async ({ client, directory }) => {
  const sent = new Map() // session id -> { text, count }: the last continuation we sent
  return {
    event: async ({ event }) => {
      if (event?.type !== "session.idle") return
      const id = event.properties?.sessionID
      if (typeof id !== "string" || !id || BUSY.has(id)) return
      BUSY.add(id)
      try {
        await continueIfBlocked(client, directory, id, sent)
      } catch {
        // fail open: the session stays idle
      } finally {
        BUSY.delete(id)
      }
    },
  }
}

async function continueIfBlocked(client, directory, id, sent) {
  const { data } = await client.session.messages({ path: { id } })
  if (!Array.isArray(data)) return
  const assistant = data.filter((m) => m?.info?.role === "assistant").at(-1)
  const user = data.filter((m) => m?.info?.role === "user").at(-1)
  const ours = sent.get(id)
  const followsUs = ours !== undefined && textOf(user) === ours.text
  const count = followsUs ? ours.count : 0
  if (count >= MAX_CONTINUATIONS) return
  const input = {
    hook_event_name: "session.idle",
    session_id: id,
    cwd: assistant?.info?.path?.cwd || directory,
    last_assistant_message: textOf(assistant),
    status: statusOf(assistant),
    stop_hook_active: followsUs,
  }
  const answer = await runHook(JSON.stringify(input), input.cwd)
  if (answer?.decision !== "block" || typeof answer.reason !== "string" || !answer.reason) return
  sent.set(id, { text: answer.reason, count: count + 1 })
  const body = { parts: [{ type: "text", text: answer.reason }] }
  if (typeof user?.info?.agent === "string") body.agent = user.info.agent
  if (user?.info?.model?.providerID && user.info.model.modelID) body.model = user.info.model
  await client.session.promptAsync({ path: { id }, body })
}

function textOf(message) {
  if (!Array.isArray(message?.parts)) return ""
  return message.parts
    .filter((part) => part?.type === "text" && typeof part.text === "string" && !part.synthetic)
    .map((part) => part.text)
    .join("\n")
}

function statusOf(message) {
  const error = message?.info?.error
  if (!error) return "completed"
  return error.name === "MessageAbortedError" ? "aborted" : "error"
}

// The hook's decision (its stdout, one JSON object), or undefined on any trouble.
function runHook(stdin, cwd) {
  return new Promise((resolve) => {
    let out = ""
    let child
    try {
      child = spawn(HOOK[0], HOOK.slice(1), { cwd, stdio: ["pipe", "pipe", "ignore"] })
    } catch {
      return resolve(undefined)
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS)
    child.on("error", () => {
      clearTimeout(timer)
      resolve(undefined)
    })
    child.stdout.on("data", (chunk) => {
      out += chunk
      if (out.length > MAX_OUTPUT) child.kill("SIGKILL")
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      try {
        resolve(code === 0 && out.trim() ? JSON.parse(out) : undefined)
      } catch {
        resolve(undefined)
      }
    })
    child.stdin.on("error", () => {})
    child.stdin.end(stdin)
  })
}
